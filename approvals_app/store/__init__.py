"""ApprovalStore: risky tool calls waiting for a person, decided exactly once.

An approval is bound to the exact call it was asked for: `call_digest`
(see `call_digest()`) and `run_version`, the run's version right after the
request moved it to `waiting_approval` (the request's `expected_version` + 1),
i.e. the version at which the run waits for this decision. A decision given
`expected_run_version` is refused (409 `call_changed`) if the run has moved
since then.

Lock order, everywhere: the run row first, then the approval row. Decisions,
cancellations and expiries all lock both; the sweep only takes rows nobody
holds (`skip_locked`), so nothing here can deadlock with itself.

An approval shown pending can still happen. Time: an approval whose
`expires_at` has passed reads as `expired` at once, whether or not the sweep
has run (`_read`: every read of this store, its lists and counts, in SQL at
the store's clock); the sweep (`expire_overdue`), a late decision or
cancellation, or the run's end only make it durable, audited once. Place: the
lifecycle cancels a session's pending approvals in the transaction that ends
it (`lifecycle_app.endings`); should one still be pending (a session row
changed outside its store), the inbox does not list it and a decision on it
is 409 `session_ended`. A run whose
session's content deletion was requested takes no new approval (409
`content_deleted`). The content of approvals (`CONTENT`: arguments, approved
arguments, the reasons and response the model hears) is removed through
`redact_content`; the audit log holds the runtime's reason, a decision's
reason and response and argument diffs only in detached, redactable payloads.

Written in parts by what they do:

- `reads`: one approval, lists, history tabs, search, the inbox;
- `pending`: the runtime's hot pending list (`pending_page`);
- `request`: the runtime asks;
- `decide`: people decide (four-eyes, the call's binding);
- `endings`: cancel, void, outcome, expiry and the sweep, a run's end;
- `content`: the content it declares and its redaction;
- `assignment`: who it asks after it was asked: reassign, take, reminders, escalation;
- `base`: what they share: digests, the effective status, locks, closing, releasing the run;
- `validation`: the input checks and limits (the API's limits too).
"""

from .assignment import ApprovalAssignment
from .base import arguments_diff, call_digest, has_status, overdue
from .content import APPROVAL_PAYLOADS, CONTENT, ApprovalContent
from .decide import DECIDED_STATUS, ApprovalDecisions
from .endings import ApprovalEndings
from .pending import ApprovalPending
from .reads import ApprovalReads
from .request import ApprovalRequests
from .validation import (
    DECISIONS,
    MAX_ARGUMENT_NAME_LENGTH,
    MAX_DECISION_REASON_LENGTH,
    MAX_KEY_ARGUMENTS,
    MAX_OUTCOME_ERROR_BYTES,
    MAX_OUTCOME_ERROR_MESSAGE_LENGTH,
    MAX_RESPONSE_LENGTH,
    MAX_SUMMARY_LENGTH,
    MAX_TOOL_NAME_LENGTH,
    MAX_VOID_DETAILS_BYTES,
    MAX_VOID_REASON_LENGTH,
    REASON_REQUIRED_RISKS,
    RUNS_THE_CALL,
    VOIDABLE,
)


class ApprovalStore(
    ApprovalReads,
    ApprovalPending,
    ApprovalRequests,
    ApprovalDecisions,
    ApprovalEndings,
    ApprovalContent,
    ApprovalAssignment,
):
    """The approval domain's store: its reads, requests, decisions, endings, content and
    assignment."""


__all__ = [
    "APPROVAL_PAYLOADS",
    "CONTENT",
    "DECIDED_STATUS",
    "DECISIONS",
    "MAX_ARGUMENT_NAME_LENGTH",
    "MAX_DECISION_REASON_LENGTH",
    "MAX_KEY_ARGUMENTS",
    "MAX_OUTCOME_ERROR_BYTES",
    "MAX_OUTCOME_ERROR_MESSAGE_LENGTH",
    "MAX_RESPONSE_LENGTH",
    "MAX_SUMMARY_LENGTH",
    "MAX_TOOL_NAME_LENGTH",
    "MAX_VOID_DETAILS_BYTES",
    "MAX_VOID_REASON_LENGTH",
    "REASON_REQUIRED_RISKS",
    "RUNS_THE_CALL",
    "VOIDABLE",
    "ApprovalStore",
    "arguments_diff",
    "call_digest",
    "has_status",
    "overdue",
]
