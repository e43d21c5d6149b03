"""OpenAI Agents SDK adapter: sessions, approval gate, effect ledger, scripted model.

Needs the SDK: ``pip install "stateroom-client[agents]"`` (openai-agents).

- `StateroomSession`: the SDK `Session` protocol on a Stateroom session's items.
- `ApprovalGate`: tool approvals become Stateroom approval requests; the run is
  checkpointed and resumes after the decision, in this process or another.
- `idempotent_tool`: a `function_tool` whose side effect goes through the effect ledger.
- `ScriptModel`: a local `Model` that plays a script (tests, demos; no API key).
"""

try:
    import agents as _sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "stateroom_client.agents needs the OpenAI Agents SDK: pip install 'stateroom-client[agents]'"
    ) from exc

from .gate import ApprovalGate, GateOutcome, ResumeError, default_risk
from .model import Reply, ScriptModel, ScriptView, ToolCall
from .session import StateroomSession
from .tools import (
    ClaimLost,
    EffectFailed,
    EffectOutcomeUnknown,
    EffectUnrecorded,
    idempotent_tool,
)

__all__ = [
    "ApprovalGate",
    "ClaimLost",
    "EffectFailed",
    "EffectOutcomeUnknown",
    "EffectUnrecorded",
    "GateOutcome",
    "Reply",
    "ResumeError",
    "ScriptModel",
    "ScriptView",
    "StateroomSession",
    "ToolCall",
    "default_risk",
    "idempotent_tool",
]
