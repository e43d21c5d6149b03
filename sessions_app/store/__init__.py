"""SessionStore: every state change of the session domain, and its scoped reads.

One store, built for one tenant and one actor like every store, written in
parts by concern:

- `reads`: one session, pages of sessions, attachments, items by seq;
- `transitions`: create, attach, detach, heartbeat, idle (seed 004), and the
  audited ends: close, expire, the lease sweep, legal hold;
- `appends`: the hot path, items appended with gap-free, commit-ordered seqs;
- `content`: the content it declares, and the fence and redaction the
  lifecycle orchestrator (`lifecycle_app`) drives;
- `base`: what they share: the status machine, the row lock, ending a session;
- `validation`: the input checks and limits (the API's limits too).

Error codes: 409 `session_terminal` for any write other than attach that
reaches a closed/expired session (heartbeat, detach, close, expire, append,
mark_idle); attach says `session_not_attachable` as the API contract demands.
Both carry `details.status`. Once a deletion of its content was requested,
an append is 409 `content_deleted`.

Audited (one event each, in the change's transaction): `session.closed`,
`session.expired` (admin, lease found passed, sweep), `session.legal_hold_on`
and `session.legal_hold_off`. Runtime writes (create, attach, detach,
heartbeat, append) are not audited: the attachment rows and items are their
record.
"""

from ..models import TERMINAL_SESSION_STATUSES
from .appends import AppendResult, SessionAppends
from .base import LIVE_STATUSES, OPEN_ATTACHMENTS_ATTR, SESSION_TRANSITIONS, SessionRefusal
from .content import CONTENT, SESSION_ITEMS, SESSION_METADATA, SessionContent
from .reads import HIGHLIGHT_START, HIGHLIGHT_STOP, ItemHit, SessionReads, StoredItem
from .transitions import SessionTransitions
from .validation import (
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_ITEM_TYPE_LENGTH,
    MAX_ITEMS_PER_APPEND,
    MAX_REASON_LENGTH,
    MAX_ROLE_LENGTH,
    MAX_USER_ID_LENGTH,
    check_reason,
    user_id_errors,
)


class SessionStore(SessionReads, SessionTransitions, SessionAppends, SessionContent):
    """The session domain's store: its reads, its transitions, its appends and its content."""


__all__ = [
    "CONTENT",
    "HIGHLIGHT_START",
    "HIGHLIGHT_STOP",
    "LIVE_STATUSES",
    "MAX_IDEMPOTENCY_KEY_LENGTH",
    "MAX_ITEMS_PER_APPEND",
    "MAX_ITEM_TYPE_LENGTH",
    "MAX_REASON_LENGTH",
    "MAX_ROLE_LENGTH",
    "MAX_USER_ID_LENGTH",
    "OPEN_ATTACHMENTS_ATTR",
    "SESSION_ITEMS",
    "SESSION_METADATA",
    "SESSION_TRANSITIONS",
    "TERMINAL_SESSION_STATUSES",
    "AppendResult",
    "ItemHit",
    "SessionRefusal",
    "SessionStore",
    "StoredItem",
    "check_reason",
    "user_id_errors",
]
