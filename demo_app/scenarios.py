"""Realistic demo data, written through the stores, covering every state of every domain.

Three kinds of agent work, as the seeds describe them: a support assistant
(conversation sessions), a code-migration task over several days of
checkpoints, and a payments agent whose refunds need approval.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from actions_app.approvals import ApprovalActions
from actions_app.runs import RunActions
from approvals_app.store import ApprovalStore
from effects_app.store import EffectStore
from lifecycle_app.deletion import DeletionStore
from lifecycle_app.endings import SessionEndings
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tasks_app.store import TaskStateStore
from tenancy_app.models import RuntimeToken, Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore

from .data import demo_username

CUSTOMERS = ["cust-ana", "cust-bo", "cust-chen", "cust-dara", "cust-eli", "cust-femi", "cust-gus"]
QUESTIONS = [
    ("Where is my order #{n}?", "Order #{n} shipped yesterday; it should arrive on Thursday."),
    ("Can I change the delivery address?", "Yes, until it ships. What is the new address?"),
    ("My invoice shows VAT twice.", "I see a duplicated line; I've asked billing to correct it."),
    (
        "How do I reset my password?",
        "Use 'Forgot password' on the login page; the link lasts 1 hour.",
    ),
    ("I was charged for a cancelled plan.", "Sorry about that. I can request a refund for you."),
]


class Clock:
    """A movable clock so demo rows have realistic ages."""

    def __init__(self, start: datetime) -> None:
        self.at = start

    def __call__(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> datetime:
        self.at += timedelta(**delta)
        return self.at


def runtime_actor(tenant: Tenant) -> Actor:
    """The identity of the demo's agent runtime: a real (secretless to us) runtime token."""
    with in_tenant(tenant):  # tokens have row-level security
        token = RuntimeToken.objects.filter(tenant=tenant, name="demo-loader").first()
        if token is None:
            token, _ = TenancyStore(tenant, Actor.system("demo")).create_token(name="demo-loader")
    return Actor("token", str(token.pk), f"token:{token.name}")


def _stores(tenant: Tenant, actor: Actor, clock: Clock):
    return (
        SessionStore(tenant, actor, clock=clock),
        RunStateStore(tenant, actor, clock=clock),
        ApprovalStore(tenant, actor, clock=clock),
        EffectStore(tenant, actor, clock=clock),
        TaskStateStore(tenant, actor, clock=clock),
    )


def _ending(runs: RunStateStore) -> RunActions:
    """The run operations that may end a run (and withdraw its approval), as `runs` acts."""
    return RunActions(runs.tenant, runs.actor, clock=runs.now)


def _advance(runs: RunStateStore, run_id: str, **changes):
    run = runs.get(run_id)
    return _ending(runs).compare_and_set(
        run_id=run_id, expected_version=run.version, changes=changes
    )


def support_conversation(tenant: Tenant, rng: random.Random, index: int, *, age_hours: float):
    runtime = runtime_actor(tenant)
    clock = Clock(timezone.now() - timedelta(hours=age_hours))
    sessions, runs, *_ = _stores(tenant, runtime, clock)
    user = CUSTOMERS[index % len(CUSTOMERS)]
    session = sessions.create(
        session_id=f"support-{tenant.slug}-{index:03d}",
        user_id=user,
        metadata={"channel": rng.choice(["web", "email", "app"]), "agent": "support-assistant"},
        lease_seconds=86400,
    )
    for turn in range(rng.randint(1, 3)):
        run = runs.create(session_id=session.session_id, active_agent="support-assistant")
        session = sessions.attach(
            session_id=session.session_id,
            run_id=run.run_id,
            user_id=user,
            expected_revision=session.revision,
            lease_seconds=86400,
        )
        _advance(runs, run.run_id, status="running", turn_index=turn)
        question, answer = rng.choice(QUESTIONS)
        n = rng.randint(10000, 99999)
        sessions.append_items(
            session_id=session.session_id,
            run_id=run.run_id,
            items=_order_lookup(question, answer, n),
        )
        runs.append_events(
            run_id=run.run_id,
            events=[
                {"type": "model.response", "node_id": "respond", "payload": {"tokens": 412}},
                {"type": "tool.call", "node_id": "lookup_order", "payload": {"order": n}},
            ],
        )
        clock.advance(minutes=rng.randint(1, 4))
        _advance(
            runs,
            run.run_id,
            status="succeeded",
            token_used=rng.randint(800, 4000),
            cost_used="0.0184",
        )
        session = sessions.detach(
            session_id=session.session_id,
            run_id=run.run_id,
            user_id=user,
            expected_revision=session.revision,
        )
        clock.advance(minutes=rng.randint(5, 60))
    return session


def _order_lookup(question: str, answer: str, n: int) -> list[dict]:
    """One support turn's items: the customer asks about order `n`, the assistant looks it
    up (a tool call and its output) and answers."""
    return [
        {"role": "user", "item_type": "message", "payload": {"text": question.format(n=n)}},
        {
            "role": "assistant",
            "item_type": "function_call",
            "payload": {"name": "lookup_order", "arguments": {"order": n}},
        },
        {
            "role": "tool",
            "item_type": "function_call_output",
            "payload": {"output": {"order": n, "status": "shipped"}},
        },
        {
            "role": "assistant",
            "item_type": "message",
            "payload": {"text": answer.format(n=n)},
        },
    ]


# payments.refund's arguments, as the runtime sends them: an edit in the console must fit.
REFUND_SCHEMA = {
    "type": "object",
    "properties": {
        "charge": {"type": "string"},
        "amount_eur": {"type": "number", "exclusiveMinimum": 0, "maximum": 10_000},
        "currency": {"type": "string", "enum": ["EUR", "USD", "GBP"]},
        "customer": {"type": "string"},
    },
    "required": ["charge", "amount_eur", "currency", "customer"],
    "additionalProperties": False,
}


def _refund_conversation(sessions, runs, effects, session, run, *, charge: str, amount: int):
    """The customer asks, the agent finds the duplicate charge (a committed lookup effect)."""
    sessions.append_items(
        session_id=session.session_id,
        run_id=run.run_id,
        items=[
            {
                "role": "user",
                "item_type": "message",
                "payload": {
                    "text": f"I was charged twice for my subscription ({charge}). Refund please."
                },
            },
            {
                "role": "assistant",
                "item_type": "message",
                "payload": {
                    "text": f"I found the duplicate charge of €{amount}. Requesting a refund."
                },
            },
        ],
    )
    runs.append_events(
        run_id=run.run_id,
        events=[{"type": "tool.lookup", "node_id": "find_charge", "payload": {"charge": charge}}],
    )
    lookup, _ = effects.record(
        run_id=run.run_id,
        idempotency_key=f"{run.run_id}:lookup",
        tool_name="payments.lookup_charge",
        request={"charge": charge},
        node_id="find_charge",
    )
    effects.commit(effect_id=lookup.effect_id, result={"amount_eur": amount, "duplicate": True})


def payments_refund(
    tenant: Tenant, rng: random.Random, index: int, *, risk: str, amount: int, age_minutes: float
):
    """A payments agent that asks before issuing a refund; leaves the run waiting."""
    runtime = runtime_actor(tenant)
    clock = Clock(timezone.now() - timedelta(minutes=age_minutes))
    sessions, runs, approvals, effects, _ = _stores(tenant, runtime, clock)
    user = CUSTOMERS[(index + 3) % len(CUSTOMERS)]
    session = sessions.create(
        session_id=f"payments-{tenant.slug}-{index:03d}",
        user_id=user,
        metadata={"agent": "payments-agent", "channel": "app"},
        lease_seconds=86400,
    )
    run = runs.create(
        session_id=session.session_id,
        active_agent="payments-agent",
        deadline_at=timezone.now() + timedelta(hours=6),
    )
    sessions.attach(
        session_id=session.session_id,
        run_id=run.run_id,
        user_id=user,
        expected_revision=session.revision,
        lease_seconds=86400,
    )
    run = _advance(runs, run.run_id, status="running", current_node_id="refund")
    charge = f"ch_{rng.randint(10**9, 10**10)}"
    _refund_conversation(sessions, runs, effects, session, run, charge=charge, amount=amount)
    run = runs.get(run.run_id)
    approval = approvals.request(
        run_id=run.run_id,
        expected_version=run.version,
        tool_name="payments.refund",
        arguments={"charge": charge, "amount_eur": amount, "currency": "EUR", "customer": user},
        risk=risk,
        reason=f"Refund of €{amount} to {user}: duplicate charge {charge}.",
        expires_at=timezone.now() + timedelta(minutes=rng.randint(25, 240)),
        summary=f"Refund €{amount} of charge {charge} to {user}",
        key_arguments=["amount_eur", "customer", "charge"],
        usual_arguments={
            "charge": charge,
            "amount_eur": "49.00",
            "currency": "EUR",
            "customer": user,
        },
        allowed_decisions=["approve", "edit", "respond", "reject"],
        arguments_schema=REFUND_SCHEMA,
    )
    return session, run, approval


def settle_refund(
    tenant, operator, approval, *, decision: str, reason: str, response: str | None = None
) -> None:
    """An operator decides; the runtime continues (refund issued, answer relayed, or run ends)."""
    ApprovalStore(tenant, operator).decide(
        approval_id=approval.approval_id, decision=decision, reason=reason, response=response
    )
    runtime = runtime_actor(tenant)
    runs, effects = RunStateStore(tenant, runtime), EffectStore(tenant, runtime)
    run_id = approval.run.run_id
    if decision == "approve":
        effect, _ = effects.record(
            run_id=run_id,
            idempotency_key=f"{run_id}:refund",
            tool_name="payments.refund",
            request=approval.arguments,
            node_id="refund",
            approval_id=approval.approval_id,
        )
        effects.commit(effect_id=effect.effect_id, result={"refund_id": f"re_{approval.pk:06d}"})
        _advance(runs, run_id, status="succeeded", token_used=2900, cost_used="0.0412")
    elif decision == "respond":  # the operator's answer is the tool's result: no refund
        _advance(runs, run_id, status="succeeded", token_used=2100, cost_used="0.0298")
    else:
        _advance(runs, run_id, status="failed", error={"code": "rejected", "message": reason})


def _migration_day(
    runs, effects, clock, rng, run_id, task_id, day_nodes, done, *, index, final_status
):
    """One day's nodes, a git commit effect per patch; stops before the tests if still open."""
    for node in day_nodes:
        if final_status in {"active", "waiting"} and node == "tests":
            return
        runs.start_node(run_id=run_id, node_id=node)
        clock.advance(minutes=rng.randint(10, 90))
        runs.finish_node(run_id=run_id, node_id=node, status="succeeded")
        done.append(node)
        if node.startswith("patch"):
            effect, _ = effects.record(
                run_id=run_id,
                idempotency_key=f"{task_id}:{node}",
                tool_name="git.commit",
                request={"branch": f"migrate/{index}", "node": node},
                node_id=node,
            )
            effects.commit(
                effect_id=effect.effect_id, result={"sha": f"{rng.getrandbits(40):010x}"}
            )


def _end_migration_run(runs, run_id, version, final_status):
    """The last day's run ends as the task does."""
    status = {"completed": "succeeded", "failed": "failed", "cancelled": "cancelled"}[final_status]
    changes = {"status": status, "token_used": 181_000, "cost_used": "2.7130"}
    if status == "failed":
        changes["error"] = {"code": "tests_failed", "message": "3 tests fail after patch-3"}
    _ending(runs).compare_and_set(run_id=run_id, expected_version=version, changes=changes)


def migration_task(tenant: Tenant, rng: random.Random, index: int, *, final_status: str | None):
    """A code migration over three days of checkpoints (seed 000's long task)."""
    clock = Clock(timezone.now() - timedelta(days=3, hours=index))
    _, runs, _, effects, tasks = _stores(tenant, runtime_actor(tenant), clock)
    nodes = ["clone", "analyze", "plan", "patch-1", "patch-2", "patch-3", "tests", "open-pr"]
    task = tasks.create(
        task_id=f"migrate-{tenant.slug}-{index:02d}",
        objective=f"Migrate service #{index} from Django 4.2 to 5.2 with green tests",
        constraints=["no force-push", "keep public API stable", "one PR per service"],
    )
    done: list[str] = []
    for day, day_nodes in enumerate([nodes[:3], nodes[3:6], nodes[6:]]):
        run = runs.create(task_id=task.task_id, active_agent="migration-agent")
        _advance(runs, run.run_id, status="running")
        _migration_day(
            runs,
            effects,
            clock,
            rng,
            run.run_id,
            task.task_id,
            day_nodes,
            done,
            index=index,
            final_status=final_status,
        )
        task = tasks.load(task.task_id)
        task = tasks.save(
            task_id=task.task_id,
            expected_version=task.version,
            plan_version="v2",
            completed_nodes=done,
            pending_nodes=[n for n in nodes if n not in done],
            artifact_refs=[f"s3://artifacts/{task.task_id}/day{day + 1}.tar.gz"],
        )
        tasks.append_checkpoint(
            task_id=task.task_id,
            schema_version=1,
            node_id=done[-1] if done else "",
            state={
                "completed_nodes": done,
                "files_analyzed": 80 if day else 35,
                "open_questions": [] if day else ["pin psycopg 3?"],
                "day": day + 1,
            },
        )
        last = runs.get(run.run_id)
        if day < 2:
            _advance(
                runs, run.run_id, status="suspended", last_checkpoint_id=task.latest_checkpoint_id
            )
            clock.advance(hours=20)
        elif final_status in {"active", "waiting"}:
            _advance(runs, run.run_id, status="suspended")
        else:
            _end_migration_run(runs, run.run_id, last.version, final_status)
    if final_status and final_status != "active":
        task = tasks.load(task.task_id)
        tasks.save(task_id=task.task_id, expected_version=task.version, status=final_status)
    return task


def _load_support_sessions(tenant: Tenant, rng: random.Random, admin: Actor) -> int:
    """Fourteen support conversations, some idle, closed, expired, on hold or erased."""
    made = 0
    for i in range(14):
        with in_tenant(tenant):
            support_conversation(tenant, rng, i, age_hours=2 + i * 7)
        made += 1
    with in_tenant(tenant):
        sessions = SessionStore(tenant, admin)
        endings = SessionEndings(tenant, admin)
        sessions.mark_idle(session_id=f"support-{tenant.slug}-001")
        endings.close(session_id=f"support-{tenant.slug}-005", reason="Customer confirmed resolved")
        endings.expire(session_id=f"support-{tenant.slug}-006", reason="Abandoned conversation")
        endings.close(session_id=f"support-{tenant.slug}-007", reason="Escalated to legal")
        sessions.set_legal_hold(
            session_id=f"support-{tenant.slug}-007",
            on=True,
            reason="Chargeback dispute, keep records",
        )
        endings.close(session_id=f"support-{tenant.slug}-008", reason="GDPR erasure request")
        deletions = DeletionStore(tenant, admin)
        job = deletions.request(
            session_id=f"support-{tenant.slug}-008",
            reason="GDPR Art. 17 request #4411",
            enqueue=False,
        )
    with in_tenant(tenant):
        DeletionStore(tenant, admin).run(deletion_id=job.deletion_id)

    return made


def _load_pending_refunds(tenant: Tenant, rng: random.Random) -> int:
    """Refunds waiting for a decision, one per risk level in the list."""
    made = 0
    risks = ["critical", "high", "high", "medium", "medium", "low", "low", "medium"]
    for i, risk in enumerate(risks):
        with in_tenant(tenant):
            payments_refund(
                tenant,
                rng,
                i,
                risk=risk,
                amount=rng.choice([19, 49, 120, 480, 2300]),
                age_minutes=3 + i * 9,
            )
        made += 1
    return made


def _load_settled_refunds(tenant: Tenant, rng: random.Random, operator: Actor, admin: Actor):
    """Refunds approved, rejected, answered, expired and cancelled."""
    _, _, approved = payments_refund(tenant, rng, 20, risk="medium", amount=49, age_minutes=300)
    settle_refund(
        tenant, operator, approved, decision="approve", reason="Duplicate confirmed in Stripe"
    )
    _, _, rejected = payments_refund(tenant, rng, 21, risk="high", amount=2300, age_minutes=280)
    settle_refund(
        tenant, operator, rejected, decision="reject", reason="Outside the 30-day refund window"
    )
    _, _, answered = payments_refund(tenant, rng, 26, risk="medium", amount=120, age_minutes=260)
    settle_refund(
        tenant,
        operator,
        answered,
        decision="respond",
        reason="A voucher instead of a refund",
        response="Offer a 120 EUR store voucher; the card refund needs the bank's approval.",
    )
    _, _, expired = payments_refund(tenant, rng, 22, risk="low", amount=19, age_minutes=400)
    ApprovalStore(tenant, Actor.system("approval sweep")).expire(approval_id=expired.approval_id)
    _, run, cancelled = payments_refund(tenant, rng, 23, risk="low", amount=19, age_minutes=390)
    ApprovalStore(tenant, runtime_actor(tenant)).cancel(
        approval_id=cancelled.approval_id, reason="Customer withdrew the request"
    )
    RunActions(tenant, admin).cancel(run_id=run.run_id, reason="Customer withdrew the request")


def _load_stale_refund(tenant: Tenant, rng: random.Random):
    # A refund asked before a deploy changed the tool's schema: the runtime voided it on
    # resume (the old approval cannot be honoured) and asked again with the diff.
    _, run, stale = payments_refund(tenant, rng, 25, risk="high", amount=480, age_minutes=120)
    old = {"type": "object", "properties": {"charge": {"type": "string"}}}
    new = {
        "type": "object",
        "properties": {"charge": {"type": "string"}, "currency": {"type": "string"}},
        "required": ["charge", "currency"],
    }
    ApprovalActions(tenant, runtime_actor(tenant)).void(
        approval_id=stale.approval_id,
        reason_code="tool_changed",
        reason="payments.refund now requires a currency; the call was asked without one",
        details={"tool": stale.tool_name, "old": old, "new": new},
    )
    runs = RunStateStore(tenant, runtime_actor(tenant))
    ApprovalStore(tenant, runtime_actor(tenant)).request(
        run_id=run.run_id,
        expected_version=runs.get(run.run_id).version,
        tool_name=stale.tool_name,
        arguments={**stale.arguments, "currency": "EUR"},
        risk="high",
        reason="The tool changed since this was asked: asked again with the new schema",
        summary=f"{stale.summary} (asked again: the tool changed)",
        key_arguments=list(stale.key_arguments),
        allowed_decisions=list(stale.allowed_decisions),
        replaces_approval_id=stale.approval_id,
        arguments_schema=REFUND_SCHEMA,
    )


def _load_effects(tenant: Tenant, rng: random.Random, operator: Actor):
    # An effect whose outcome is unknown after a crash, and one that failed.
    _, run, unknown_approval = payments_refund(
        tenant, rng, 24, risk="medium", amount=120, age_minutes=200
    )
    ApprovalStore(tenant, operator).decide(
        approval_id=unknown_approval.approval_id, decision="approve", reason="ok"
    )
    effects = EffectStore(tenant, runtime_actor(tenant))
    effect, _ = effects.record(
        run_id=run.run_id,
        idempotency_key=f"{run.run_id}:refund",
        tool_name="payments.refund",
        request=unknown_approval.arguments,
        node_id="refund",
        approval_id=unknown_approval.approval_id,
    )
    effects.mark_unknown(effect_id=effect.effect_id, reason="worker crashed before the response")
    failed, _ = effects.record(
        run_id=run.run_id,
        idempotency_key=f"{run.run_id}:notify",
        tool_name="email.send",
        request={"to": "customer", "template": "refund-pending"},
        node_id="notify",
    )
    effects.fail(effect_id=failed.effect_id, error={"message": "SMTP 451 temporary failure"})
    effects.record(  # left in "started": the worker never reported back
        run_id=run.run_id,
        idempotency_key=f"{run.run_id}:ledger",
        tool_name="ledger.write",
        request={"entry": "refund-pending"},
        node_id="ledger",
    )


def _load_other_runs(tenant: Tenant):
    # Runs in the remaining states: created, and past its deadline (failed by the sweep).
    runs = RunStateStore(tenant, runtime_actor(tenant))
    runs.create(active_agent="support-assistant")
    # Created an hour ago with a deadline that has passed since.
    an_hour_ago = timezone.now() - timedelta(hours=1)
    earlier = RunStateStore(tenant, runtime_actor(tenant), clock=lambda: an_hour_ago)
    overdue = earlier.create(
        active_agent="payments-agent", deadline_at=timezone.now() - timedelta(minutes=5)
    )
    _advance(earlier, overdue.run_id, status="running")
    RunActions(tenant, Actor.system("deadline sweep")).fail_overdue()


def _load_migration_tasks(tenant: Tenant, rng: random.Random) -> int:
    made = 0
    for i, status in enumerate(["active", "waiting", "completed", "failed", "cancelled"]):
        with in_tenant(tenant):
            migration_task(tenant, rng, i, final_status=status)
        made += 1
    return made


def load_scenarios(tenant: Tenant, *, seed: int = 42) -> dict[str, int]:
    """Fill one tenant with demo data (skips a tenant that already has sessions)."""
    rng = random.Random(f"{seed}-{tenant.slug}")
    operator = Actor.for_user(
        get_user_model().objects.get(username=demo_username(tenant.slug, "operator"))
    )
    admin = Actor.for_user(
        get_user_model().objects.get(username=demo_username(tenant.slug, "admin"))
    )
    with in_tenant(tenant):
        # The week of history before the demo (demo_app.history) is no reason to skip.
        sessions = SessionStore(tenant, admin).list_sessions()
        if sessions.exclude(session_id__startswith="hist-").exists():
            return {"skipped": 1}
    made = {"sessions": 0, "approvals": 0, "tasks": 0}
    made["sessions"] += _load_support_sessions(tenant, rng, admin)
    made["approvals"] += _load_pending_refunds(tenant, rng)
    with in_tenant(tenant):
        _load_settled_refunds(tenant, rng, operator, admin)
        _load_stale_refund(tenant, rng)
        made["approvals"] += 1
        _load_effects(tenant, rng, operator)
        _load_other_runs(tenant)
    made["tasks"] += _load_migration_tasks(tenant, rng)
    return made
