"""The gate reports the SDK's usage on the run: tokens, cost (with a price) and the model.

Totals from `result.context_wrapper.usage`, which the SDK carries in its RunState
across a pause and a resume in another gate: the run's numbers are the whole run's,
and a report sent again counts once.
"""

from __future__ import annotations

from decimal import Decimal

from agents import Agent, RunConfig
from agents.usage import Usage

from stateroom_client.agents import ScriptModel
from stateroom_client.agents.gate.usage import model_name, usage_report

from .payments import refunds_made
from .test_gate import CALL, _resume, _start

MILLION = Decimal(1_000_000)
SEEN_MODELS: list[str | None] = []


def price(model: str | None, usage: Usage) -> Decimal:
    """$0.25 per million input tokens, $2 per million output tokens."""
    SEEN_MODELS.append(model)
    return (usage.input_tokens * Decimal("0.25") + usage.output_tokens * Decimal(2)) / MILLION


def test_tokens_cost_and_model_are_the_runs_totals_across_a_pause(
    server, client, operator, refund_log
):
    SEEN_MODELS.clear()
    assert _start(server, "use-1", price=price).status == "waiting_approval"
    paused = client.get_run("use-1")
    # One model turn of the scripted model: 40 tokens, 20 in and 20 out.
    assert (paused.token_used, paused.cost_used, paused.model) == (
        40,
        Decimal("0.000045"),
        "script-model",
    )
    operator.decide_approval(f"use-1:{CALL}", decision="approve", reason="ok")
    assert _resume(server, "use-1", price=price).status == "succeeded"
    assert refunds_made(refund_log) == ["A-1 1200"]
    ended = client.get_run("use-1")
    # The resumed gate (a new RunState from the checkpoint) reports the whole run: two
    # turns, not the second turn alone and not the first one twice.
    assert (ended.token_used, ended.cost_used, ended.model) == (
        80,
        Decimal("0.000090"),
        "script-model",
    )
    assert set(SEEN_MODELS) == {"script-model"}


def test_without_a_price_no_cost_is_reported(server, client, operator, refund_log):
    assert _start(server, "use-2").status == "waiting_approval"
    run = client.get_run("use-2")
    assert (run.token_used, run.cost_used, run.model) == (40, Decimal(0), "script-model")


def test_the_same_usage_reported_twice_leaves_the_same_totals(server, client):
    usage = Usage(requests=2, input_tokens=700, output_tokens=500, total_tokens=1200)
    agent = Agent(name="a", model=ScriptModel([], name="gpt-5-mini"))
    report = usage_report(usage, agent, None, price)
    assert report == {"token_used": 1200, "model": "gpt-5-mini", "cost_used": Decimal("0.001175")}
    client.create_run(run_id="use-3")
    run = client.transition_run("use-3", expected_version=1, status="running", **report)
    run = client.transition_run("use-3", expected_version=run.version, **report)
    assert (run.token_used, run.cost_used, run.model) == (1200, Decimal("0.001175"), "gpt-5-mini")


def test_the_model_name_comes_from_the_run_config_or_the_agent():
    scripted = Agent(name="a", model=ScriptModel([], name="scripted"))
    assert model_name(scripted, None) == "scripted"
    assert model_name(Agent(name="b", model="gpt-5-mini"), None) == "gpt-5-mini"
    assert model_name(Agent(name="c"), None) is None  # the SDK's default: unknown here
    assert model_name(scripted, RunConfig(model="o4-mini")) == "o4-mini"  # overrides agents
    assert model_name(None, None) is None
