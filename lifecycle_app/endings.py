"""A session that ends settles what waits on it: close, expire, the lease sweep, a refused write.

The rule for the session's runs (one rule, whoever ends the session: an
admin, a runtime's close, the lease sweep, a runtime's write that found the
lease passed):

- a run waiting on an approval (`waiting_approval`, or any live run with a
  pending approval) is **cancelled**: it waited on a decision that can no
  longer be made, and its session takes no more work. Its pending approval
  is cancelled with it (`approval.cancelled`), and the requesting runtime's
  webhook hears of it; both are audited as the system (`lifecycle`), with the
  reason `session closed` or `session expired`, in the transaction that ends
  the session.
- every other run keeps its status; it can no longer attach to or append to
  the session.

The session store knows no approvals: it sends `session_ended` from inside
that transaction (`sessions_app.signals`), and `settle_on_end` here settles.
So no approval reads pending once its session has ended, in the API or the
console. The reconciler (`settle_ended`, run by the lease sweep every
minute) settles what ended without the signal: a session whose row was
changed outside the store.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from datetime import datetime

from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone

from actions_app.runs import RunActions
from approvals_app.store import ApprovalStore
from runs_app.store import RunStateStore
from sessions_app.models import TERMINAL_SESSION_STATUSES, Session
from sessions_app.signals import session_ended
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.models import Tenant

WAITING = "waiting_approval"
SETTLE_LIMIT = 500


class SessionEndings:
    """Ending sessions of one tenant, as one actor, with what waits on them."""

    def __init__(
        self, tenant: Tenant, actor: Actor, *, clock: Callable[[], datetime] = timezone.now
    ) -> None:
        self.tenant = tenant
        self.actor = actor
        self.now = clock
        self.sessions = SessionStore(tenant, actor, clock=clock)
        self.runs = RunStateStore(tenant, actor, clock=clock)
        self.approvals = ApprovalStore(tenant, actor, clock=clock)
        self.system = RunActions(tenant, _system(actor), clock=clock)

    def close(self, *, session_id: str, reason: str = "") -> Session:
        """Close the session (audited as the caller); `settle_on_end` settles its waiting runs."""
        return self.sessions.close(session_id=session_id, reason=reason)

    def expire(self, *, session_id: str, reason: str = "") -> Session:
        """Expire the session now (audited as the caller); its waiting runs are settled."""
        return self.sessions.expire(session_id=session_id, reason=reason)

    def expire_overdue(self, *, limit: int = 500) -> int:
        """The lease sweep: expire sessions past their lease (each settled), and reconcile."""
        with transaction.atomic():
            expired = self.sessions.expire_overdue(limit=limit)
            self.settle_ended(limit=SETTLE_LIMIT)
        return len(expired)

    def settle(self, session: Session) -> int:
        """Cancel the session's runs that wait on an approval (and the approvals). How many.

        Idempotent: a session whose runs are settled has nothing to cancel.
        """
        attached = self.sessions.attachments(session).values_list("run_id", flat=True)
        cancelled = 0
        for run in self.runs.session_runs(session_pk=session.pk, attached_run_ids=attached):
            if run.is_terminal:
                continue
            if run.status == WAITING or run.pending_approval_id:
                cancelled += self._cancel(run.run_id, f"session {session.status}")
        return cancelled

    def settle_ended(self, *, limit: int = SETTLE_LIMIT) -> int:
        """Reconcile: a pending approval whose run's session has ended is cancelled with its run.

        Covers sessions whose row was changed outside the session store (which
        sends `session_ended`). Reads at most `limit` pending approvals, oldest
        first.
        """
        cancelled = 0
        for approval in self.approvals.pending(limit=limit):
            run = approval.run
            session = run.session if run.session_id else self._attached_session(run.run_id)
            if session is None or session.status not in TERMINAL_SESSION_STATUSES:
                continue
            cancelled += self._cancel(run.run_id, f"session {session.status}")
        return cancelled

    def _cancel(self, run_id: str, reason: str) -> int:
        try:
            self.system.cancel(run_id=run_id, reason=reason)
        except Conflict as exc:
            if exc.code != "invalid_transition":  # it ended meanwhile: nothing waits on it
                raise
            return 0
        return 1

    def _attached_session(self, run_id: str) -> Session | None:
        """The session a run is (or was last) attached to, for a run not created in one."""
        return self.sessions.session_of_attached_run(run_id)


@receiver(session_ended, dispatch_uid="lifecycle_app.endings.settle_on_end")
def settle_on_end(sender, *, tenant: Tenant, session: Session, actor: Actor, clock, **kwargs):
    """In the transaction that ends `session`: cancel its runs that wait on an approval."""
    SessionEndings(tenant, actor, clock=clock).settle(session)


def _system(actor: Actor) -> Actor:
    """What the system does because a person or a runtime ended a session, traced to its request."""
    return dataclasses.replace(
        Actor.system("lifecycle"), request_id=actor.request_id or uuid.uuid4().hex
    )
