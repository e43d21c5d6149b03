"""`ApprovalGate`: run an SDK agent whose risky tools wait for a person in Stateroom.

    gate = ApprovalGate(client, agent, risk_policy=lambda tool, args: "high")
    outcome = await gate.run("Refund order A-1", session=session)   # waits for decisions
    # ...or, in another process after a restart:
    outcome = await ApprovalGate(client, agent).resume(run_id)

What it keeps in Stateroom, per agent run:

- a run (`created -> running -> waiting_approval -> running -> succeeded|failed`,
  every change a compare-and-set) and a task `<run_id>.task` whose checkpoints
  hold the SDK's serialized `RunState` (`RunState.to_json()`, schema below);
- when `Runner.run` stops on tool approvals (`result.interruptions`), one
  approval request per interrupted call (tool name, arguments, risk from
  `risk_policy`), with the id `<run_id>:<tool_call_id>` so that a process
  asking again after a crash finds it instead of asking twice. They are asked
  one after the other: a run waits on one approval at a time, so each request
  moves it to `waiting_approval` and each decision moves it back;
- run events `agent.*` / `approval.*` for the run inspector.

Decisions are applied with `RunState.approve(item)` / `RunState.reject(item,
rejection_message=<operator's reason>)` and the run resumes with
`Runner.run(agent, state)`, in this process or, after a restart, in another
one: `resume(run_id)` rebuilds everything from the latest checkpoint and the
approvals on the server. Tools made with `idempotent_tool` record their effect
under `<run_id>:<tool_call_id>` and commit it, so a call that already happened
is answered from the ledger on resume instead of running twice.

Every approval request declares the decisions the gate honours
(`allowed_decisions`, all four by default): *approve* runs the call; *edit*
runs it once with the operator's `approved_arguments` instead of the model's
(the pending call is rewritten in the RunState before it is approved, see
`_with_arguments`), so the tool, the effect ledger's request and the model's
next turn all see the approved call; *respond* does not run the tool and gives
the model the operator's `response` as its result; *reject* does not run it and
gives the model the reason. The run event `approval.decided` records the
decision, and for an edit both the asked and the approved call. The session
(append-only; the call as asked was stored when the run paused) gets an
`sdk.edit` tombstone that takes the asked call out of the history and keeps
its arguments, then the call with the approved arguments
(`StateroomSession.replace_call`): later turns read the call that ran next to
its output. Each request carries the tool's `params_json_schema` (`arguments_schema`): the
server refuses an edit that does not fit it, so the SDK never gets approved
arguments it would refuse (it would tell the model to retry, and the run could
end succeeded without the call), and refuses a plain approval of asked
arguments that no longer fit (a call asked again after its tool changed can
only be edited to the new schema, or rejected).

Endings: a rejection (not a response) is sent to the model as the tool's output and the run
goes on (`on_rejection="continue"`, the SDK's own behaviour), or the run ends
`failed` with `error.code == "approval_rejected"` and the reason
(`on_rejection="stop"`). An expired approval ends the run `failed` with
`error.code == "approval_expired"`. An effect whose outcome is unknown (a
crash between recording and committing it) suspends the run with
`error.code == "effect_outcome_unknown"` until a person settles it; a tool
that ran but could not be committed suspends it with `effect_unrecorded`.
An approved call whose tool fails (it raises, or the SDK refuses the arguments,
e.g. an operator's edit of the wrong type) is told to the model as the SDK's
error string, but the run ends `failed` with `error.code == "tool_failed"` and
the approval reads `outcome: failed` with the tool's error (run event
`approval.tool_failed`); an approved call that ran is reported `succeeded`
(`report_approval_outcome`). This needs the tool made with `idempotent_tool`,
whose failure function notes the failure on the ledger. A response reads
`responded` (servers before it said `rejected` with `decision: respond`).

One resumer at a time: the gate claims the run (`claim_run`, as `worker`,
default ``host:pid:random``) when it starts it and before it resumes it, renews
the claim in the background every third of `lease_seconds` while it works,
and names its worker on every run write (transition, events, approval
requests, effects). A process that finds the run claimed by another worker,
or loses the claim, stops at once: it returns `GateOutcome(status="claimed",
claimed_by=..., claim_until=...)` (`.claimed_elsewhere`; `claim_until`: until
when the holder's lease holds the run, also a killed holder's) without failing
the task, appending to the session or running a tool. One that finds the run
ended by another worker as it claims it (it lost the race) reports `claimed`
too, never the winner's `succeeded`. A run that waits for a person is held by
nobody (the server drops the claim when the run goes to `waiting_approval`),
so whoever continues it after the decision claims it afresh; a gate that
leaves a run waiting while it holds the claim lets it go.

Checkpoint state (schema_version 2)::

    {"kind": "openai-agents.run_state", "sdk_version": "0.24.0", "agent": "payments",
     "session": {"session_id": ..., "user_id": ...} | null,
     "calls": [{"call_id", "tool_name", "arguments", "risk", "approval_id"}],
     "run_state": <RunState.to_json(), its "original_input" emptied when referenced>,
     "conversation": {"session_id": ..., "items": n,
                      "pieces": [[first_seq, last_seq] | {"item": <a copy>}, ...],
                      "digest": <sha256 of the items' sorted-key JSON>} | null}

The conversation is referenced, not copied: the RunState's `original_input`
(the session's history the run started from, plus its new input) is rebuilt
from `pieces`, runs of session items by seq (and copies of the few items the
SDK rewrote when it read them, e.g. an assistant message given as text), so a checkpoint stays small however long the
conversation is (a copy of 1 MB of history would be over the server's body
limit, and the run could not pause). `resume` reads those items back, checks
`digest`, and puts them back into the RunState; items whose content was
deleted, or that differ, make the resume fail (`ResumeError`,
`conversation_missing` / `conversation_changed`) rather than run on another
conversation. Without a session, or when no item of the input is known to be
stored in it, `conversation` is null and the RunState is kept whole.
Schema 1 checkpoints (always a whole RunState) are still resumed.

`fingerprint` (schema 2) records what the run's facts depend on: each tool's
name and JSON schema, a digest of the model settings and the approval policy
(risk policy, allowed decisions, on_rejection, approval TTL). `resume`
compares it with the gate it runs in and records any drift as the run event
`agent.drift`. A call whose tool's schema changed is not run on the approval
given for the old tool: that approval, pending or approved but not yet run (no
effect recorded for the call), is voided on the server (`void_approval`,
`tool_changed`, the schema diff as details; run event `approval.voided`) and
the call is asked again under a new approval id that names it
(`replaces_approval_id`), whose summary says the tool changed and whose reason
carries the old and new schema.
"""

from .approval import ApprovalGate
from .outcome import GateOutcome, ResumeError
from .policy import default_risk

__all__ = ["ApprovalGate", "GateOutcome", "ResumeError", "default_risk"]
