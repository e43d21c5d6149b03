"""Seed 000, "how to verify": a tool succeeded, then the process crashed before the
next state write; the resumed run must not execute the tool again.

`run_node` is a minimal runtime step that consults the effect ledger before
calling out. `Mailer` is the outside world: it counts real executions.
"""

import pytest

from effects_app.models import ExternalEffect
from effects_app.store import EffectStore
from stateroom.actor import Actor
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant


class Crash(Exception):
    """The worker process dies at this point."""


class Mailer:
    def __init__(self) -> None:
        self.sent: list[dict] = []

    def send(self, request: dict) -> dict:
        self.sent.append(request)
        return {"message_id": f"m-{len(self.sent)}"}


def run_node(tenant, *, run_id: str, task_id: str, node_id: str, mailer: Mailer, crash_at=None):
    actor = Actor.system("worker")
    tasks, effects = TaskStateStore(tenant, actor), EffectStore(tenant, actor)
    with in_tenant(tenant):
        task = tasks.load(task_id)
        state = tasks.to_state(task)
    if node_id in state.completed_nodes:
        return "already_done"
    request = {"to": "ops@example.com", "subject": f"{task_id}: {node_id} done"}
    # Derived from the task and node, never from the attempt: stable across retries and runs.
    key = f"{task_id}:{node_id}:send_email"
    with in_tenant(tenant):
        effect, created = effects.record(
            run_id=run_id, idempotency_key=key, tool_name="send_email", request=request
        )
    if effect.status == "committed":
        outcome = "skipped"
    elif not created:
        # Started or unknown: an earlier attempt called out and lost the outcome.
        # Retrying could send twice; a person settles it first.
        with in_tenant(tenant):
            effects.mark_unknown(effect_id=effect.effect_id, reason="found started on resume")
        return "needs_settlement"
    else:
        result = mailer.send(request)
        if crash_at == "before_commit":
            raise Crash
        with in_tenant(tenant):
            effects.commit(effect_id=effect.effect_id, result=result)
        outcome = "executed"
    if crash_at == "before_state_write":
        raise Crash
    with in_tenant(tenant):
        tasks.save(
            task_id=task_id,
            expected_version=task.version,
            completed_nodes=state.completed_nodes | {node_id},
            pending_nodes=state.pending_nodes - {node_id},
            external_effect_records=[*state.external_effect_records, effect.effect_id],
        )
    return outcome


@pytest.fixture
def task_with_a_pending_node(tenant_a, make_run):
    make_run(tenant_a, run_id="R-101")
    make_run(tenant_a, run_id="R-102")
    with in_tenant(tenant_a):
        store = TaskStateStore(tenant_a, Actor.system("worker"))
        store.create(task_id="T-7", objective="Patch and notify")
        store.save(task_id="T-7", expected_version=1, pending_nodes=["notify"])


def ledger(tenant) -> list[tuple]:
    with in_tenant(tenant):
        return list(ExternalEffect.objects.values_list("idempotency_key", "status", "result"))


def task_facts(tenant) -> tuple:
    with in_tenant(tenant):
        store = TaskStateStore(tenant, Actor.system("test"))
        state = store.to_state(store.load("T-7"))
    return state.completed_nodes, state.pending_nodes, len(state.external_effect_records)


def test_committed_effect_is_not_executed_again_after_a_crash_before_the_state_write(
    tenant_a, task_with_a_pending_node
):
    mailer = Mailer()
    with pytest.raises(Crash):
        run_node(
            tenant_a,
            run_id="R-101",
            task_id="T-7",
            node_id="notify",
            mailer=mailer,
            crash_at="before_state_write",
        )
    assert len(mailer.sent) == 1
    # The crash lost the state write: the task still thinks the node is pending.
    assert task_facts(tenant_a) == (set(), {"notify"}, 0)

    # A new run resumes the task: the ledger answers "it already happened".
    outcome = run_node(tenant_a, run_id="R-102", task_id="T-7", node_id="notify", mailer=mailer)
    assert outcome == "skipped"
    assert len(mailer.sent) == 1
    assert ledger(tenant_a) == [("T-7:notify:send_email", "committed", {"message_id": "m-1"})]
    assert task_facts(tenant_a) == ({"notify"}, set(), 1)

    assert run_node(tenant_a, run_id="R-102", task_id="T-7", node_id="notify", mailer=mailer) == (
        "already_done"
    )
    assert len(mailer.sent) == 1


def test_an_effect_with_a_lost_outcome_is_settled_not_retried(
    tenant_a, task_with_a_pending_node, admin_a
):
    mailer = Mailer()
    with pytest.raises(Crash):
        run_node(
            tenant_a,
            run_id="R-101",
            task_id="T-7",
            node_id="notify",
            mailer=mailer,
            crash_at="before_commit",
        )
    assert ledger(tenant_a) == [("T-7:notify:send_email", "started", None)]

    for _ in range(2):
        outcome = run_node(tenant_a, run_id="R-102", task_id="T-7", node_id="notify", mailer=mailer)
        assert outcome == "needs_settlement"
    assert len(mailer.sent) == 1
    assert ledger(tenant_a) == [("T-7:notify:send_email", "unknown", None)]

    # An operator checks the mail provider's log and settles it.
    with in_tenant(tenant_a):
        store = EffectStore(tenant_a, Actor.for_user(admin_a))
        effect = store.find("T-7:notify:send_email")
        assert [e.effect_id for e in store.resume_preview(run_id="R-101")["settle"]] == [
            effect.effect_id
        ]
        store.settle(effect_id=effect.effect_id, outcome="committed", reason="in provider log")

    assert run_node(tenant_a, run_id="R-102", task_id="T-7", node_id="notify", mailer=mailer) == (
        "skipped"
    )
    assert len(mailer.sent) == 1
    assert task_facts(tenant_a) == ({"notify"}, set(), 1)
