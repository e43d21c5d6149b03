"""RunStateStore: the current facts of one execution (seed 000).

Every change of a run is a compare-and-set on its `version`: one conditional
`UPDATE … WHERE tenant AND run_id AND version = expected AND <status, claim>
RETURNING *`. Exactly one of N racing writers matches the row; the others
update 0 rows and only then is the row read, to say why (404, stale version,
illegal transition, live claim of another worker). Each successful CAS writes
one `RunTransition` row, so the transitions of a run are its version history.

Runtime writes (create, CAS, events, node executions) are not audited; the
actions of people and of the system (`run.cancelled`, `run.deadline_exceeded`)
are, in the same transaction.

Claims: a worker that claims a run (`claim`) is its only runtime writer until
the lease ends. While the claim is live, every runtime write to the run (its
compare-and-set, events, and what builds on it: approval requests, effects)
must name that worker; another worker or none is 409 `run_claimed` and
nothing is written. The check is part of the write's own statement (or made
under the run's row lock), so a claim taken concurrently either comes first
and refuses the write, or waits for it. People's and the system's changes
(decisions, cancel, suspend, resume, expiry, the deadline sweep) are not held
back by claims. A run that waits for a person (`waiting_approval`,
`suspended`) or has ended is held by nobody: the change that puts it there
drops the claim, so whoever continues the run claims it afresh.

Once a deletion of its session's content is requested the run is fenced
(`content_fenced_at`): every runtime write to it (compare-and-set, claim,
events, node executions, and what builds on it: approval requests, effects)
is 409 `content_deleted`, before any other 409 (`run_claimed` included).
A person's or the system's cancel still ends it. Its content (`CONTENT`:
event payloads, errors) is removed through `redact_content` by the lifecycle
orchestrator.

Runs know nothing of approvals (approvals build on runs). A run that ends
waits on nothing: this store clears its `pending_approval_id`, and whatever
ends a run for the runtime, a person or a sweep goes through
`actions_app.runs.RunActions`, which also withdraws the run's pending
approval in the same transaction.

One store, built for one tenant and one actor like every store, written in
parts by what they do (as `sessions_app.store`):

- `reads`: one run, pages of runs, transitions, node executions, events;
- `create`: a new run, in `created` at version 1;
- `transitions`: the runtime's compare-and-set and its claims (leases);
- `control`: cancel, suspend and resume by people, the deadline sweep;
- `events`: events with gap-free seqs, node executions;
- `content`: the content it declares, the fence and its removal;
- `base`: what they share: the row lock, the conditional update, why it was refused;
- `sql`: the statements; `state`: the status machine as the store applies it;
- `validation`: the input checks and the limits of a run's fields (the API's too).
"""

from stateroom.reasons import MAX_REASON_LENGTH, check_reason

from .content import (
    CONTENT,
    NODE_ERRORS,
    RUN_ERRORS,
    RUN_EVENT_PAYLOADS,
    RUN_TRANSITION_ERRORS,
    RunContent,
)
from .control import RunControl
from .create import RunCreate
from .events import RunEvents
from .reads import RunReads
from .state import NON_TERMINAL_STATUSES, UNCLAIMED_STATUSES, allowed_from
from .transitions import RunTransitions
from .validation import (
    COST_DECIMAL_PLACES,
    COST_MAX_DIGITS,
    MAX_COUNTER,
    MAX_EVENT_TYPE_LENGTH,
    MAX_EVENTS_PER_APPEND,
    RUN_CHANGE_FIELDS,
    STRING_LIMITS,
    cost_value,
)


class RunStateStore(RunReads, RunCreate, RunTransitions, RunControl, RunEvents, RunContent):
    """The run domain's store: its reads, its writes by the runtime, people and sweeps, its content."""


__all__ = [
    "CONTENT",
    "COST_DECIMAL_PLACES",
    "COST_MAX_DIGITS",
    "MAX_COUNTER",
    "MAX_EVENTS_PER_APPEND",
    "MAX_EVENT_TYPE_LENGTH",
    "MAX_REASON_LENGTH",
    "NODE_ERRORS",
    "NON_TERMINAL_STATUSES",
    "RUN_CHANGE_FIELDS",
    "RUN_ERRORS",
    "RUN_EVENT_PAYLOADS",
    "RUN_TRANSITION_ERRORS",
    "STRING_LIMITS",
    "UNCLAIMED_STATUSES",
    "RunStateStore",
    "allowed_from",
    "check_reason",
    "cost_value",
]
