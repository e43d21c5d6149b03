"""What the people an approval asks hear of it, and when: notices through the outbox.

The store writes one outbox job per notice, in the transaction of the change
(so a committed change always has its notice, and a rolled-back one none):

- `asked`: the approval was asked of someone (a routing rule matched);
- `reminder`: its rule's reminder came due, undecided (once: `reminded_at`);
- `escalated`: its rule's escalation came due, undecided (once: `escalated_at`);
  the next tier joined the assignees;
- `reassigned`: an operator reassigned or took it;
- `expired`: it expired undecided (the rule's `notify_admins_on_expiry`: its admins);
- `ended`: it was decided, cancelled or voided (chat messages show the outcome).

The job is `APPROVAL_NOTICE_TASK` (`approvals_app.tasks.approval_notice`); it
hands the notice to the `ports.approval_notices` port, which the
notifications app provides (who is told, on which channels, and sending).
`ref` tells two notices of one kind apart (each reassignment), so the
notifications app can send each exactly once.
"""

from __future__ import annotations

NOTICE_ASKED = "asked"
NOTICE_REMINDER = "reminder"
NOTICE_ESCALATED = "escalated"
NOTICE_REASSIGNED = "reassigned"
NOTICE_EXPIRED = "expired"
NOTICE_ENDED = "ended"
NOTICE_KINDS = (
    NOTICE_ASKED,
    NOTICE_REMINDER,
    NOTICE_ESCALATED,
    NOTICE_REASSIGNED,
    NOTICE_EXPIRED,
    NOTICE_ENDED,
)

APPROVAL_NOTICE_TASK = "approvals_app.tasks.approval_notice"
