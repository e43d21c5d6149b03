"""What a run has used, reported from the SDK's own count (`result.context_wrapper.usage`).

The SDK adds every model response's usage into the run context's `Usage`, and a
`RunState` carries it through `to_json()` / `from_json()`, so after a pause, a
restart in another process or a resumed pass it is still the whole run's
total. The gate reports it as such: `token_used` (and `cost_used`, when the
gate was given a `price`) are totals, set on the run, never added to it. A
report sent twice (a pass replayed after a crash, a retried write) leaves the
same totals: nothing is counted twice.

`model`: the name of the model of the agent that answered last (a handoff
changes it), or of the RunConfig's model that overrides every agent's.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from agents import Agent, RunConfig
from agents.usage import Usage

# The run's cost for its usage so far, by model name (None: the SDK's default model).
Price = Callable[[str | None, Usage], Decimal | str | int]
COST_PLACES = Decimal("0.000001")  # the server keeps 6 decimal places


def model_name(agent: Agent[Any] | None, run_config: RunConfig | None) -> str | None:
    """The model's name: a string as given, a Model object's `model` attribute; None unknown."""
    model = run_config.model if run_config is not None and run_config.model else None
    if model is None and agent is not None:
        model = agent.model
    if model is None or isinstance(model, str):
        return model or None
    name = getattr(model, "model", None)
    return name if isinstance(name, str) and name else None


def usage_report(
    usage: Usage, agent: Agent[Any] | None, run_config: RunConfig | None, price: Price | None
) -> dict[str, Any]:
    """The run's changes that report its usage: totals, and the model when known."""
    report: dict[str, Any] = {"token_used": usage.total_tokens}
    model = model_name(agent, run_config)
    if model:
        report["model"] = model[:200]
    if price is not None:
        cost = Decimal(str(price(model, usage)))
        report["cost_used"] = cost.quantize(COST_PLACES, rounding=ROUND_HALF_UP)
    return report
