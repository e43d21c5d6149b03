"""The demo's agent runtime: simulated agents that use Stateroom over HTTP, as real ones would.

`run_demo` starts it beside the console (``python -m demo_app.runtime``, with
the server URL and one runtime token per tenant in ``STATEROOM_DEMO_TOKENS``).
It imports nothing from Django: everything goes through `stateroom_client`.
Per tenant it keeps three kinds of work going:

- a support assistant (OpenAI Agents SDK agent, scripted local model) chatting
  with customers: a session per conversation, a run per turn, the items are the
  SDK's conversation history (`StateroomSession`);
- a payments agent whose refunds need approval (`ApprovalGate`): each refund
  request lands in the console's inbox; approving lets the run issue the refund
  (through the effect ledger) and finish, rejecting sends the operator's reason
  back to the agent, which tells the customer and ends;
- a code migration over several simulated days: a durable task with one run
  and one checkpoint per day, effects for pushed branches and pull requests;
- a shipping-claims agent written with LangGraph (`demo_app/claims.py`, a
  scripted model): its checkpoints go to Stateroom through `StateroomSaver`,
  its voucher proposal interrupts the graph and waits in the inbox as an
  approval (approve, edit the amount, reject, or answer in words), and the
  voucher is issued through the effect ledger once the graph resumes.

It stays bounded: at most `cap` pending approvals per tenant (at the cap, the
customer of the oldest request this runtime made withdraws it, so the inbox
keeps moving), a few conversations and migrations at a time. On start it
resumes the payments runs an earlier runtime left waiting, from their
checkpoints.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import random
import re
import secrets
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from agents import Agent, RunConfig, Runner, function_tool

from demo_app.claims import AGENT as CLAIMS_AGENT
from demo_app.claims import build_claims_graph
from stateroom_client import AsyncStateroomClient, StateroomClient, StateroomError, TransportError
from stateroom_client.agents import (
    ApprovalGate,
    Reply,
    ResumeError,
    ScriptModel,
    ScriptView,
    StateroomSession,
    ToolCall,
    idempotent_tool,
)
from stateroom_client.langgraph import GraphOutcome, GraphRunner

log = logging.getLogger("stateroom.demo.runtime")
NO_TRACE = RunConfig(tracing_disabled=True)
TOKENS_ENV = "STATEROOM_DEMO_TOKENS"
WITHDRAWN = "The customer withdrew the request."

CUSTOMERS = ["ana", "bo", "chen", "dara", "eli", "femi", "gus", "hana", "ivo", "jun", "kai", "lea"]


@dataclass
class Pace:
    """Seconds between starts and inside scenarios (tests run at pace zero)."""

    support_every: tuple[float, float] = (6.0, 12.0)
    payments_every: tuple[float, float] = (15.0, 30.0)
    migration_every: tuple[float, float] = (40.0, 80.0)
    between_turns: tuple[float, float] = (3.0, 8.0)
    migration_day: tuple[float, float] = (8.0, 15.0)
    # Requests nobody decides expire (the demo's beat runs the sweep), which also
    # clears requests a previous runtime process made and this one cannot withdraw.
    approval_ttl: timedelta = timedelta(minutes=10)
    # At the cap, a request is withdrawn only once it has waited this long, so an
    # operator has time to look at it.
    withdraw_after: float = 180.0
    claims_every: tuple[float, float] = (20.0, 40.0)

    @classmethod
    def instant(cls) -> Pace:
        return cls((0, 0), (0, 0), (0, 0), (0, 0), (0, 0), withdraw_after=0.0, claims_every=(0, 0))


# --- the agents ---------------------------------------------------------------
def _orders(rng: random.Random) -> str:
    return f"A-{rng.randint(1000, 9999)}"


@function_tool
def lookup_order(order_id: str) -> str:
    """Look an order up in the shop system.

    Args:
        order_id: The order number, e.g. A-1042.
    """
    digits = sum(ord(c) for c in order_id)
    status = ["shipped", "in transit", "delivered", "being packed"][digits % 4]
    return f"Order {order_id}: {status}, paid by card ending {digits % 9000 + 1000}."


@idempotent_tool(needs_approval=True)
def issue_refund(order_id: str, amount_cents: int, currency: str, reason: str) -> str:
    """Refund part of an order to the customer's card. Needs an operator's approval.

    Args:
        order_id: The order to refund.
        amount_cents: How much to refund, in cents.
        currency: ISO currency code.
        reason: Why the customer is owed the money.
    """
    refund_id = "rf_" + secrets.token_hex(5)
    return f"Refunded {amount_cents / 100:.2f} {currency} on order {order_id} ({refund_id})."


def refund_script(view: ScriptView) -> list[Any]:
    text = view.user_message
    order = re.search(r"order (A-\d+)", text)
    amount = re.search(r"(\d+)\.(\d\d) (EUR|USD|GBP)", text)
    order_id = order.group(1) if order else "A-0000"
    cents = int(amount.group(1)) * 100 + int(amount.group(2)) if amount else 1000
    currency = amount.group(3) if amount else "EUR"

    def answer(v: ScriptView) -> str:
        if v.last_output.startswith("Refunded"):
            return f"Done: {v.last_output} It shows on your statement in 3-5 days."
        return f"I'm sorry, I could not refund this: {v.last_output}"

    return [
        ToolCall("lookup_order", {"order_id": order_id}),
        ToolCall(
            "issue_refund",
            {
                "order_id": order_id,
                "amount_cents": cents,
                "currency": currency,
                "reason": "duplicate charge" if "twice" in text else "damaged item",
            },
        ),
        Reply(answer),
    ]


def refund_risk(tool_name: str, arguments: dict[str, Any]) -> str:
    cents = int(arguments.get("amount_cents", 0))
    if cents < 5_000:
        return "low"
    if cents < 25_000:
        return "medium"
    if cents < 100_000:
        return "high"
    return "critical"


def payments_agent() -> Agent[Any]:
    return Agent(
        name="payments-agent",
        instructions="Help customers with charges; refunds need an operator's approval.",
        model=ScriptModel(refund_script, tokens_per_turn=180),
        tools=[lookup_order, issue_refund],
    )


SUPPORT_TOPICS = [
    ("Where is my order {order}?", None),
    ("Can I change the delivery address for {order}?", "Yes, until it ships; send me the new one."),
    ("My invoice for {order} shows VAT twice.", "I see the duplicated line; billing will fix it."),
    ("How do I reset my password?", "Use 'Forgot password' on the login page; the link lasts 1h."),
    ("Do you ship to Norway?", "We do: 3-6 working days, duties paid at delivery."),
    ("Thanks, that's all!", "You're welcome, have a good day!"),
]


def support_script(view: ScriptView) -> list[Any]:
    order = re.search(r"(A-\d+)", view.user_message)
    if order and view.user_message.startswith("Where is"):
        return [
            ToolCall("lookup_order", {"order_id": order.group(1)}),
            Reply(lambda v: f"{v.last_output} Anything else I can do?"),
        ]
    for question, answer in SUPPORT_TOPICS:
        if answer and view.user_message.startswith(question.split("{")[0][:12]):
            return [Reply(answer)]
    return [Reply("Let me check that for you... done. Anything else?")]


def support_agent() -> Agent[Any]:
    return Agent(
        name="support-assistant",
        instructions="Answer customers politely and look orders up.",
        model=ScriptModel(support_script, tokens_per_turn=120),
        tools=[lookup_order],
    )


MIGRATIONS = [
    ("billing-service", "Django 3.2", "Django 5.2"),
    ("search-indexer", "Python 3.9", "Python 3.12"),
    ("mobile-api", "DRF 3.12", "DRF 3.15"),
    ("reports", "Celery 4", "Celery 5"),
    ("storefront", "React 17", "React 18"),
]
MIGRATION_STEPS = ["scan", "plan", "upgrade-deps", "fix-imports", "run-tests", "open-pr"]


@dataclass
class _Migration:
    """What one migration's days share: the task, the steps and what is done so far."""

    task_id: str
    repo: str
    old: str
    new: str
    steps: list[str]
    start: Any
    done: list[str] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)


# --- one tenant's runtime -----------------------------------------------------
@dataclass
class TenantRuntime:
    """One tenant's agents. `client` does the work; `poller` holds the approval long-polls."""

    client: AsyncStateroomClient
    tenant: str
    poller: AsyncStateroomClient | None = None
    pace: Pace = field(default_factory=Pace)
    cap: int = 12
    rng: random.Random = field(default_factory=random.Random)
    waiting: dict[str, float] = field(default_factory=dict)  # our pending approvals: asked at
    # The claims' pending approvals: approval id -> run id. A customer who withdraws a
    # claim withdraws the whole run (it ends cancelled), not just its question: the
    # graph runner reads a withdrawn question as a failure of its run.
    claim_runs: dict[str, str] = field(default_factory=dict)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    conversations: int = 0
    migrations: int = 0
    # The LangGraph agent runs synchronously (graph.invoke) in worker threads,
    # with a sync client of its own; without one it does not run.
    graph_client: StateroomClient | None = None

    def __post_init__(self) -> None:
        self.poller = self.poller or self.client
        self.asking = asyncio.Lock()
        self.payments = ApprovalGate(
            self.client,
            payments_agent(),
            risk_policy=refund_risk,
            explain=lambda tool, args: (
                f"Refund {args.get('amount_cents', 0) / 100:.2f} {args.get('currency', 'EUR')}"
                f" on order {args.get('order_id')}: {args.get('reason')}"
            ),
            run_config=NO_TRACE,
            approval_ttl=self.pace.approval_ttl,
        )
        self.support = support_agent()
        self.claims = (
            GraphRunner(self.graph_client, build_claims_graph(self.graph_client), name=CLAIMS_AGENT)
            if self.graph_client is not None
            else None
        )

    def _pause(self, bounds: tuple[float, float]) -> Awaitable[None]:
        return asyncio.sleep(self.rng.uniform(*bounds))

    def spawn(self, name: str, work: Callable[[], Awaitable[Any]]) -> asyncio.Task[Any]:
        async def guarded() -> None:
            try:
                await work()
            except asyncio.CancelledError:
                raise
            except TransportError as exc:
                log.warning("%s: %s: server unreachable (%s)", self.tenant, name, exc.message)
            except (StateroomError, ResumeError) as exc:
                log.warning("%s: %s stopped: %s", self.tenant, name, exc)
            except Exception:
                log.exception("%s: %s crashed", self.tenant, name)

        task = asyncio.create_task(guarded(), name=f"{self.tenant}:{name}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    # --- payments ---------------------------------------------------------------
    async def pending_approvals(self) -> int:
        page = await self.client.list_approvals(status="pending", limit=100)
        return len(page)

    async def make_room(self) -> bool:
        """Keep under the cap: withdraw our oldest request if the inbox is full."""
        if await self.pending_approvals() < self.cap:
            return True
        oldest_allowed = time.monotonic() - self.pace.withdraw_after
        for approval_id, asked_at in list(self.waiting.items()):
            if asked_at > oldest_allowed:
                break
            with contextlib.suppress(StateroomError):
                await self._withdraw(approval_id)
                self.waiting.pop(approval_id, None)
                log.info("%s: customer withdrew %s (inbox at cap)", self.tenant, approval_id)
                return True
        return False

    async def _withdraw(self, approval_id: str) -> None:
        run_id = self.claim_runs.pop(approval_id, None)
        if run_id is None:
            await self.client.cancel_approval(approval_id, reason=WITHDRAWN)
            return
        # Run control, audited with the customer's reason; ending the run withdraws its
        # pending approval in the same transaction.
        await self.client.cancel_run(run_id, reason=WITHDRAWN)

    async def refund_once(self) -> None:
        started = await self.request_refund()
        if started is not None:
            await self._follow(*started)

    async def request_refund(self) -> tuple[Any, StateroomSession] | None:
        """A customer asks for a refund; returns when it waits for approval (or is done)."""
        # One request at a time per tenant, so the count checked against the cap
        # is not stale by the time the approval exists.
        async with self.asking:
            if not await self.make_room():
                return None
            return await self._ask_refund()

    async def _ask_refund(self) -> tuple[Any, StateroomSession]:
        customer = self.rng.choice(CUSTOMERS)
        order = _orders(self.rng)
        amount = self.rng.choice([12.5, 19.99, 42.0, 84.0, 129.0, 240.0, 480.0, 990.0, 2300.0])
        currency = self.rng.choice(["EUR", "EUR", "USD", "GBP"])
        problem = self.rng.choice(["I was charged twice", "The item arrived broken"])
        message = f"{problem} for order {order}. Please refund {amount:.2f} {currency}."
        session = await StateroomSession.create(
            self.client,
            user_id=f"cust-{customer}",
            metadata={"channel": "chat", "agent": "payments-agent", "customer": customer},
        )
        log.info(
            "%s: %s asks for a refund on %s (%.2f %s)",
            self.tenant,
            customer,
            order,
            amount,
            currency,
        )
        outcome = await self.payments.run(
            message,
            run_id=f"pay-{secrets.token_hex(5)}",
            session=session,
            objective=f"Refund for order {order}",
            wait=False,
        )
        for approval in outcome.approvals:
            if approval.is_pending:
                self.waiting[approval.approval_id] = time.monotonic()
        return outcome, session

    async def _follow(self, outcome: Any, session: StateroomSession | None) -> None:
        """Wait for the decisions on a payments run and let it finish."""
        while outcome.status == "waiting_approval":
            approval = outcome.approvals[-1]
            self.waiting.setdefault(approval.approval_id, time.monotonic())
            decided = await self.poller.wait_for_decision(approval.approval_id)
            self.waiting.pop(approval.approval_id, None)
            log.info(
                "%s: %s %s by %s",
                self.tenant,
                approval.approval_id,
                decided.status,
                decided.decided_by or "-",
            )
            outcome = await self.payments.resume(outcome.run_id, wait=False)
        if outcome.finished:
            log.info("%s: %s %s", self.tenant, outcome.run_id, outcome.status)
            if session is not None and outcome.status == "succeeded":
                with contextlib.suppress(StateroomError):
                    await self.client.close_session(session.session_id, reason="resolved")

    async def resume_waiting(self) -> None:
        """Pick up the payments runs and claims an earlier runtime process left unfinished."""
        for status in ("waiting_approval", "running", "suspended"):
            async for run in self.client.iter_runs(status=status):
                if run.active_agent == CLAIMS_AGENT and self.claims is not None:
                    self.spawn(
                        f"resume {run.run_id}", lambda rid=run.run_id: self._resume_claim(rid)
                    )
                if run.active_agent != "payments-agent" or not run.task_id.endswith(".task"):
                    continue
                self.spawn(f"resume {run.run_id}", lambda rid=run.run_id: self._resume(rid))

    async def _resume(self, run_id: str) -> None:
        try:
            outcome = await self.payments.resume(run_id, wait=False)
        except ResumeError:
            return  # not one of ours (demo data written by load_demo)
        log.info("%s: resumed %s (%s)", self.tenant, run_id, outcome.status)
        await self._follow(outcome, None)

    # --- shipping claims (LangGraph) ---------------------------------------------
    async def claim_once(self) -> None:
        outcome = await self.file_claim()
        if outcome is not None:
            await self._follow_claim(outcome)

    async def file_claim(self) -> GraphOutcome | None:
        """A customer files a claim; returns when its voucher waits for approval (or is done)."""
        if self.claims is None:
            return None
        async with self.asking:
            if not await self.make_room():
                return None
            customer = self.rng.choice(CUSTOMERS)
            order = _orders(self.rng)
            paid = self.rng.choice([18.5, 34.0, 59.9, 120.0, 249.0])
            problem = self.rng.choice(["never arrived", "arrived a week late"])
            claim_id = f"claim-{secrets.token_hex(4)}"
            log.info("%s: %s files a claim on %s (LangGraph)", self.tenant, customer, order)
            outcome = await asyncio.to_thread(
                self.claims.start,
                {
                    "customer": customer,
                    "message": f"My parcel for order {order} {problem}. I paid {paid:.2f} EUR.",
                },
                thread_id=claim_id,
                run_id=f"{claim_id}.run",
            )
        for approval in outcome.approvals:
            if approval.is_pending:
                self.waiting[approval.approval_id] = time.monotonic()
                self.claim_runs[approval.approval_id] = outcome.run_id
        return outcome

    async def _follow_claim(self, outcome: GraphOutcome) -> None:
        assert self.claims is not None
        while outcome.status == "waiting_approval":
            approval = outcome.approvals[-1]
            self.waiting.setdefault(approval.approval_id, time.monotonic())
            self.claim_runs.setdefault(approval.approval_id, outcome.run_id)
            await self.poller.wait_for_decision(approval.approval_id)
            self.waiting.pop(approval.approval_id, None)
            self.claim_runs.pop(approval.approval_id, None)
            outcome = await asyncio.to_thread(self.claims.resume, outcome.run_id, wait=False)
        log.info("%s: claim %s %s", self.tenant, outcome.thread_id, outcome.status)

    async def _resume_claim(self, run_id: str) -> None:
        assert self.claims is not None
        outcome = await asyncio.to_thread(self.claims.resume, run_id, wait=False)
        log.info("%s: resumed claim %s (%s)", self.tenant, run_id, outcome.status)
        await self._follow_claim(outcome)

    # --- support ----------------------------------------------------------------
    async def conversation_once(self, turns: int | None = None) -> str:
        self.conversations += 1
        try:
            customer = self.rng.choice(CUSTOMERS)
            session = await StateroomSession.create(
                self.client,
                user_id=f"cust-{customer}",
                metadata={
                    "channel": self.rng.choice(["chat", "email", "app"]),
                    "customer": customer,
                },
                lease_seconds=1800,
            )
            order = _orders(self.rng)
            topics = self.rng.sample(SUPPORT_TOPICS[:5], k=turns or self.rng.randint(1, 3))
            messages = [q.format(order=order) for q, _ in topics] + [SUPPORT_TOPICS[5][0]]
            log.info("%s: %s starts a chat (%s)", self.tenant, customer, session.session_id)
            for message in messages:
                await self.turn(session, message)
                await self._pause(self.pace.between_turns)
            if self.rng.random() < 0.7:
                await self.client.close_session(session.session_id, reason="resolved")
            log.info("%s: chat %s done (%d turns)", self.tenant, session.session_id, len(messages))
            return session.session_id
        finally:
            self.conversations -= 1

    async def turn(self, session: StateroomSession, message: str) -> None:
        """One customer turn as one Stateroom run attached to the session."""
        run = await self.client.create_run(
            run_id=f"chat-{secrets.token_hex(5)}",
            session_id=session.session_id,
            active_agent=self.support.name,
        )
        record = await self.client.get_session(session.session_id)
        record = await self.client.attach_session(
            session.session_id,
            run_id=run.run_id,
            user_id=session.user_id,
            expected_revision=record.revision,
        )
        run = await self.client.transition_run(
            run.run_id, expected_version=run.version, status="running"
        )
        session.run_id = run.run_id
        try:
            result = await Runner.run(self.support, message, session=session, run_config=NO_TRACE)
        except Exception as exc:
            await self.client.transition_run(
                run.run_id,
                expected_version=run.version,
                status="failed",
                error={"code": "agent_error", "message": str(exc)},
            )
            raise
        finally:
            fresh = await self.client.get_session(session.session_id)
            await self.client.detach_session(
                session.session_id,
                run_id=run.run_id,
                user_id=session.user_id,
                expected_revision=fresh.revision,
            )
        await self.client.transition_run(
            run.run_id,
            expected_version=run.version,
            status="succeeded",
            turn_index=len(result.raw_responses),
            token_used=result.context_wrapper.usage.total_tokens,
        )

    # --- code migration -----------------------------------------------------------
    async def migration_once(self, days: int | None = None) -> str:
        self.migrations += 1
        try:
            return await self._migrate(days)
        finally:
            self.migrations -= 1

    async def _migrate(self, days: int | None) -> str:
        repo, old, new = self.rng.choice(MIGRATIONS)
        task_id = f"mig-{repo}-{secrets.token_hex(3)}"
        steps = MIGRATION_STEPS[: days or len(MIGRATION_STEPS)]
        task = await self.client.create_task(
            task_id=task_id,
            objective=f"Migrate {repo} from {old} to {new}",
            constraints=["no downtime", "keep the public API", "green test suite before merging"],
        )
        task = await self.client.save_task_state(
            task_id, expected_version=task.version, plan_version="plan-v1", pending_nodes=steps
        )
        log.info("%s: migration %s started (%s -> %s)", self.tenant, task_id, old, new)
        mig = _Migration(task_id, repo, old, new, steps, datetime.now(UTC).date())
        day = 0
        tests_failed_once = False
        while len(mig.done) < len(steps):
            day += 1
            failed = await self._migrate_day(mig, day, tests_failed_once)
            tests_failed_once = tests_failed_once or failed
        task = await self.client.get_task(task_id)
        await self.client.save_task_state(
            task_id, expected_version=task.version, status="completed"
        )
        log.info("%s: migration %s completed in %d days", self.tenant, task_id, day)
        return task_id

    async def _migrate_day(self, mig: _Migration, day: int, tests_failed_once: bool) -> bool:
        """One day of a migration: one run on the next step; True if its tests failed."""
        task_id, step = mig.task_id, mig.steps[len(mig.done)]
        run = await self.client.create_run(
            run_id=f"{task_id}.day{day}", task_id=task_id, active_agent="migration-agent"
        )
        run = await self.client.transition_run(
            run.run_id, expected_version=run.version, status="running", current_node_id=step
        )
        await self.client.append_events(
            run.run_id, [{"type": "node.started", "node_id": step, "payload": {"day": day}}]
        )
        await self._pause(self.pace.migration_day)
        failed = step == "run-tests" and not tests_failed_once and self.rng.random() < 0.4
        files = self.rng.randint(3, 40)
        if failed:
            error = {
                "code": "tests_failed",
                "message": f"{self.rng.randint(1, 9)} tests failed",
            }
            await self.client.append_events(
                run.run_id, [{"type": "node.failed", "node_id": step, "payload": error}]
            )
            await self.client.transition_run(
                run.run_id, expected_version=run.version, status="failed", error=error
            )
        else:
            if step in ("upgrade-deps", "open-pr"):
                await self._migrate_effect(mig, run.run_id, step)
            mig.done.append(step)
            await self.client.append_events(
                run.run_id,
                [{"type": "node.finished", "node_id": step, "payload": {"files": files}}],
            )
        await self._migrate_checkpoint(mig, run.run_id, step, day, files, failed)
        return failed

    async def _migrate_effect(self, mig: _Migration, run_id: str, step: str) -> None:
        """The step's external effect: push the branch or open the pull request."""
        name = "push_branch" if step == "upgrade-deps" else "open_pull_request"
        effect = await self.client.record_effect(
            run_id,
            idempotency_key=f"{mig.task_id}:{name}",
            tool_name=name,
            request={
                "repo": mig.repo,
                "branch": f"migrate/{mig.new.replace(' ', '-').lower()}",
            },
        )
        if effect.status == "started":
            ref = f"https://git.example.com/{mig.repo}/pull/{self.rng.randint(100, 999)}"
            await self.client.commit_effect(effect.effect_id, result={"url": ref})
            mig.artifacts.append(ref)
        mig.effects.append(effect.effect_id)

    async def _migrate_checkpoint(
        self, mig: _Migration, run_id: str, step: str, day: int, files: int, failed: bool
    ) -> None:
        """The day's checkpoint and task state; a day without failure ends its run."""
        task_id, done = mig.task_id, mig.done
        checkpoint = await self.client.append_checkpoint(
            task_id,
            node_id=step,
            state={
                "day": day,
                "date": (mig.start + timedelta(days=day - 1)).isoformat(),
                "repo": mig.repo,
                "from": mig.old,
                "to": mig.new,
                "completed_nodes": list(done),
                "pending_nodes": mig.steps[len(done) :],
                "files_changed": files,
                "tests": {"passed": self.rng.randint(300, 900), "failed": 3 if failed else 0},
                "notes": f"Day {day}: {'retrying ' if failed else ''}{step}",
            },
        )
        task = await self.client.get_task(task_id)
        await self.client.save_task_state(
            task_id,
            expected_version=task.version,
            completed_nodes=list(done),
            pending_nodes=mig.steps[len(done) :],
            artifact_refs=mig.artifacts,
            external_effect_records=mig.effects,
            status="active",
        )
        if not failed:
            run = await self.client.get_run(run_id)
            await self.client.transition_run(
                run.run_id,
                expected_version=run.version,
                status="succeeded",
                last_checkpoint_id=checkpoint.checkpoint_id,
                token_used=self.rng.randint(2_000, 20_000),
            )

    # --- the loop -------------------------------------------------------------------
    async def run_forever(self, stop: asyncio.Event) -> None:
        await self.resume_waiting()
        start = time.monotonic()  # staggered, so the first minute is not one burst
        next_at = {
            "payments": start + self.rng.uniform(0, 3),
            "support": start + self.rng.uniform(1, 5),
            "migration": start + self.rng.uniform(3, 8),
            "claims": start + self.rng.uniform(5, 10),
        }
        while not stop.is_set():
            now = time.monotonic()
            if now >= next_at["payments"]:
                self.spawn("refund", self.refund_once)
                next_at["payments"] = now + self.rng.uniform(*self.pace.payments_every)
            if now >= next_at["support"] and self.conversations < 4:
                self.spawn("conversation", self.conversation_once)
                next_at["support"] = now + self.rng.uniform(*self.pace.support_every)
            if now >= next_at["migration"] and self.migrations < 2:
                self.spawn("migration", self.migration_once)
                next_at["migration"] = now + self.rng.uniform(*self.pace.migration_every)
            if now >= next_at["claims"] and self.claims is not None:
                self.spawn("claim", self.claim_once)
                next_at["claims"] = now + self.rng.uniform(*self.pace.claims_every)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=1.0)
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# --- process entry point ---------------------------------------------------------
def parse_tokens(raw: str) -> dict[str, str]:
    """`acme=sr_...,globex=sr_...` -> {"acme": "sr_...", ...}."""
    pairs = (part.split("=", 1) for part in raw.split(",") if "=" in part)
    return {slug.strip(): token.strip() for slug, token in pairs}


async def wait_for_server(client: AsyncStateroomClient, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            await client.me()
            return
        except TransportError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def main(url: str, tokens: dict[str, str], *, cap: int = 12) -> None:
    stop = asyncio.Event()
    parent = os.getppid()

    async def watch_parent() -> None:
        # The console's process started us: when it goes away, so do we.
        while os.getppid() == parent:
            await asyncio.sleep(1)
        stop.set()

    # Few concurrent work requests per tenant (the demo serves them with one
    # development server); the long-polls, which mostly sleep on the server,
    # get their own pool.
    workers = {
        slug: AsyncStateroomClient(
            url,
            token,
            timeout=30,
            transport=httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=2)),
        )
        for slug, token in tokens.items()
    }
    pollers = {slug: AsyncStateroomClient(url, token) for slug, token in tokens.items()}
    graph_clients = {
        slug: StateroomClient(url, token, timeout=30) for slug, token in tokens.items()
    }
    clients = [*workers.values(), *pollers.values()]
    try:
        await wait_for_server(clients[0])
        runtimes = [
            TenantRuntime(
                workers[slug],
                slug,
                poller=pollers[slug],
                cap=cap,
                graph_client=graph_clients[slug],
            )
            for slug in tokens
        ]
        log.info("demo runtime: agents at work for %s", ", ".join(tokens))
        watcher = asyncio.create_task(watch_parent())
        await asyncio.gather(*(runtime.run_forever(stop) for runtime in runtimes))
        watcher.cancel()
    finally:
        for client in clients:
            await client.close()
        for graph_client in graph_clients.values():
            graph_client.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--cap", type=int, default=12, help="pending approvals per tenant")
    args = parser.parse_args()
    tokens = parse_tokens(os.environ.get(TOKENS_ENV, ""))
    if not tokens:
        sys.exit(f"Set {TOKENS_ENV}=slug=token,... (run_demo does it for you).")
    logging.basicConfig(level=logging.INFO, format="[runtime] %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(args.url, tokens, cap=args.cap))
