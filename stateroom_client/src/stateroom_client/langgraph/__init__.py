"""LangGraph on Stateroom (install the `langgraph` extra).

- `StateroomSaver`: LangGraph's checkpointer on the Stateroom API (sync and async);
- `stateroom_interrupt`: ask a person from a node, as an approval in the inbox,
  with the request and answer shapes of LangGraph's Agent Inbox;
- `idempotent_effect`: a side effect in a node goes through the effect ledger;
- `GraphRunner`: runs a graph as a Stateroom run and resumes it with the
  decisions (`Command(resume=...)`), in this process or another one.
"""

from .runtime import (
    EffectFailed,
    EffectOutcomeUnknown,
    GraphOutcome,
    GraphRunner,
    LedgerHalt,
    idempotent_effect,
    inbox_request,
    stateroom_interrupt,
)
from .saver import StateroomSaver

__all__ = [
    "EffectFailed",
    "EffectOutcomeUnknown",
    "GraphOutcome",
    "GraphRunner",
    "LedgerHalt",
    "StateroomSaver",
    "idempotent_effect",
    "inbox_request",
    "stateroom_interrupt",
]
