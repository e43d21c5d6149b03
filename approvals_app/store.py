"""ApprovalStore: risky tool calls waiting for a person, decided exactly once.

An approval is bound to the exact call it was asked for: `call_digest`
(see `call_digest()`) and `run_version`, the run's version right after the
request moved it to `waiting_approval` (the request's `expected_version` + 1),
i.e. the version at which the run waits for this decision. A decision given
`expected_run_version` is refused (409 `call_changed`) if the run has moved
since then.

Lock order, everywhere: the run row first, then the approval row. Decisions,
cancellations and expiries all lock both; the sweep only takes rows nobody
holds (`skip_locked`), so nothing here can deadlock with itself.

An approval shown pending can still happen. Time: an approval whose
`expires_at` has passed reads as `expired` at once, whether or not the sweep
has run (`_read`: every read of this store, its lists and counts, in SQL at
the store's clock); the sweep (`expire_overdue`), a late decision or
cancellation, or the run's end only make it durable, audited once. Place: the
lifecycle cancels a session's pending approvals in the transaction that ends
it (`lifecycle_app.endings`); should one still be pending (a session row
changed outside its store), the inbox does not list it and a decision on it
is 409 `session_ended`. A run whose
session's content deletion was requested takes no new approval (409
`content_deleted`). The content of approvals (`CONTENT`: arguments, approved
arguments, the reasons and response the model hears) is removed through
`redact_content`; the audit log holds the runtime's reason, a decision's
reason and response and argument diffs only in detached, redactable payloads.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import rfc8785
from django.contrib.postgres.search import SearchHeadline, SearchQuery
from django.db import IntegrityError
from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet, TextField, Value
from django.db.models.functions import Coalesce, Concat
from django.db.models.query import ModelIterable

from outbox_app.relay import enqueue
from runs_app.claims import claimed_elsewhere
from runs_app.models import Run, RunStatus
from runs_app.store import RunStateStore
from sessions_app.models import TERMINAL_SESSION_STATUSES
from stateroom.canonical import canonical_json, digest
from stateroom.content import RUN, Batch, ContentClass, content_class, redact_in_key_order
from stateroom.errors import Conflict, ContentDeleted, Forbidden, NotFound, Unprocessable
from stateroom.ids import PUBLIC_ID_RULE, is_valid_public_id, new_public_id
from stateroom.sql import hot_cursor
from stateroom.store import BaseStore
from tenancy_app.models import RuntimeToken, Tenant

from .display import checked_display
from .models import (
    DEFAULT_ALLOWED_DECISIONS,
    RISK_RANK,
    ApprovalRequest,
    ApprovalStatus,
    Decision,
    Risk,
    ToolOutcome,
    VoidReason,
)
from .schemas import argument_errors, check_schema
from .urgency import order_by_urgency
from .webhooks import notify_decision

logger = logging.getLogger(__name__)

DECISIONS = tuple(Decision.values)
# Decisions that let the call run (and so count for four-eyes and take its reason rule).
RUNS_THE_CALL = frozenset({Decision.APPROVE, Decision.EDIT})
REASON_REQUIRED_RISKS = frozenset({Risk.HIGH, Risk.CRITICAL})
# The limits of a request and a decision, for every caller (the API's serializers import them).
MAX_TOOL_NAME_LENGTH = 200
MAX_SUMMARY_LENGTH = 300
MAX_KEY_ARGUMENTS = 3
MAX_ARGUMENT_NAME_LENGTH = 200
MAX_RESPONSE_LENGTH = 20_000
# Why a person decided (audited; shown to the runtime): the console's form takes it too.
MAX_DECISION_REASON_LENGTH = 4_000
# What a runtime may void: an approval still waiting, or approved but its call not run.
VOIDABLE = frozenset({ApprovalStatus.PENDING, ApprovalStatus.APPROVED})
MAX_VOID_REASON_LENGTH = 2_000
# The void's evidence (e.g. a tool's old and new JSON schema), as canonical JSON.
MAX_VOID_DETAILS_BYTES = 64 * 1024
# What a runtime says of a failed call: the tool's error (message and type), as canonical JSON.
MAX_OUTCOME_ERROR_MESSAGE_LENGTH = 4_000
MAX_OUTCOME_ERROR_BYTES = 16 * 1024
# The status each decision ends in: only approve and edit run the call.
DECIDED_STATUS = {
    Decision.APPROVE: ApprovalStatus.APPROVED,
    Decision.EDIT: ApprovalStatus.APPROVED,
    Decision.REJECT: ApprovalStatus.REJECTED,
    Decision.RESPOND: ApprovalStatus.RESPONDED,
}

APPROVAL_PAYLOADS = "approval_payloads"
CONTENT: tuple[ContentClass, ...] = (
    ContentClass(
        name=APPROVAL_PAYLOADS,
        label="Approval arguments, summaries, reasons and responses",
        table=ApprovalRequest._meta.db_table,
        fields=(
            "arguments",
            "approved_arguments",
            "usual_arguments",
            "display",
            "argument_order",
            "key_arguments",
            "summary",
            "reason",
            "decision_reason",
            "first_approval_reason",
            "response",
            "void_reason",
            "void_details",
            "outcome_error",
        ),
        container=RUN,
        removal="fields cleared",
        retention="run_events_days",
        kept=(
            "Each approval's id, tool name, risk, call digest, run version, allowed "
            "decisions, status, decision, who decided and when: the record that a person "
            "decided this exact call."
        ),
    ),
)


def call_digest(tool_name: str, arguments: dict[str, Any]) -> str:
    """sha256 hex of the RFC 8785 canonical JSON of `[tool_name, arguments]` (stateroom.canonical)."""
    return digest([tool_name, arguments])


def arguments_diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Top-level difference between the asked and the approved arguments."""
    return {
        "added": {k: after[k] for k in sorted(after.keys() - before.keys())},
        "removed": sorted(before.keys() - after.keys()),
        "changed": {
            k: {"old": before[k], "new": after[k]}
            for k in sorted(before.keys() & after.keys())
            if not _same_json(before[k], after[k])
        },
    }


def _same_json(one: Any, other: Any) -> bool:
    try:
        return canonical_json(one) == canonical_json(other)
    except rfc8785.CanonicalizationError:  # a number stored before the gate refused it
        return one == other


def overdue(now: datetime) -> Q:
    """Pending in the table, but past `expires_at`: expired, whether or not swept yet."""
    return Q(status=ApprovalStatus.PENDING, expires_at__lte=now)


def has_status(status: str, now: datetime) -> Q:
    """Approvals whose effective status at `now` is `status` (what `_read` rows show)."""
    if status == ApprovalStatus.PENDING:
        return Q(status=status) & ~overdue(now)
    if status == ApprovalStatus.EXPIRED:
        return Q(status=status) | overdue(now)
    return Q(status=status)


class _EffectiveIterable(ModelIterable):
    """Rows as they read at the store's clock: an overdue approval (`is_overdue`, annotated
    in the same query) is `expired`, decided at its `expires_at`, as the sweep will record."""

    def __iter__(self):
        for approval in super().__iter__():
            if approval.__dict__.pop("is_overdue", False):
                approval.status = ApprovalStatus.EXPIRED
                approval.decided_at = approval.expires_at
            yield approval


_APPROVALS = ApprovalRequest._meta.db_table
_RUNS = Run._meta.db_table
_PENDING_COLUMNS = (
    "a.id, a.approval_id, r.run_id, a.tool_name, a.arguments, a.risk, a.reason, a.summary,"
    " a.key_arguments, a.usual_arguments, a.display, a.allowed_decisions, a.arguments_schema,"
    " a.call_digest, a.run_version,"
    " a.first_approved_by, a.first_approval_reason, a.expires_at, a.created_at,"
    f" (SELECT p.approval_id FROM {_APPROVALS} p WHERE p.id = a.replaces_id)"
)


_PENDING = ApprovalStatus.PENDING.value
_raw_decode = json.JSONDecoder().raw_decode


def _loads(text: str) -> Any:
    """`json.loads` of a jsonb column's text (PostgreSQL writes it with no surrounding
    whitespace), without its Python wrappers: 50 of them a page."""
    try:
        value, end = _raw_decode(text)
    except ValueError:
        end = -1
    if end != len(text):  # never for jsonb: json.loads says what is wrong
        return json.loads(text)
    return value


def _pending_out(row: tuple) -> dict[str, Any]:
    """A pending approval's row as `approvals_app.api.ApprovalSerializer` renders it."""
    (
        _id,
        approval_id,
        run_id,
        tool_name,
        arguments,
        risk,
        reason,
        summary,
        key_arguments,
        usual_arguments,
        display,
        allowed_decisions,
        arguments_schema,
        call_digest,
        run_version,
        first_approved_by,
        first_approval_reason,
        expires_at,
        created_at,
        replaces_approval_id,
    ) = row
    loads = _loads
    return {
        "approval_id": approval_id,
        "run_id": run_id,
        "status": _PENDING,
        "tool_name": tool_name,
        "arguments": loads(arguments),
        "risk": risk,
        "reason": reason,
        "summary": summary,
        "key_arguments": key_arguments,
        "usual_arguments": None if usual_arguments is None else loads(usual_arguments),
        "display": None if display is None else loads(display),
        "allowed_decisions": allowed_decisions,
        "arguments_schema": None if arguments_schema is None else loads(arguments_schema),
        "call_digest": call_digest,
        "run_version": run_version,
        "decided_by": None,
        "decided_at": None,
        "decision_reason": None,
        "decision": None,
        "approved_arguments": None,
        "response": None,
        "first_approved_by": first_approved_by or None,
        "first_approval_reason": first_approval_reason or None,
        "expires_at": expires_at,
        "created_at": created_at,
        "voided_by": None,
        "voided_at": None,
        "void_reason_code": None,
        "void_reason": None,
        "void_details": None,
        "replaces_approval_id": replaces_approval_id,
        "outcome": None,
        "outcome_error": None,
        "outcome_at": None,
    }


class ApprovalStore(BaseStore):
    # --- reads ------------------------------------------------------------
    def _approvals(self) -> QuerySet[ApprovalRequest]:
        """The stored rows, as written (what locks and state changes work on)."""
        return ApprovalRequest.objects.filter(tenant=self.tenant)

    def _read(self) -> QuerySet[ApprovalRequest]:
        """The rows as they read now: each with its effective status (`_EffectiveIterable`).

        Reading writes nothing: making an expiry durable (and audited) is the
        sweep's, or that of the first write that meets it.
        """
        approvals = self._approvals().annotate(
            is_overdue=ExpressionWrapper(overdue(self.now()), output_field=BooleanField())
        )
        # What `.values()` does to change the rows a queryset yields; clones keep it.
        approvals._iterable_class = _EffectiveIterable
        return approvals

    def get(self, approval_id: str) -> ApprovalRequest:
        approval = (
            self._read()
            .select_related("run", "replaces", "replaced_by")
            .filter(approval_id=approval_id)
            .first()
        )
        if approval is None:
            raise NotFound("No such approval.", details={"approval_id": approval_id})
        return approval

    def list_approvals(
        self, *, status: str | None = None, run_id: str | None = None
    ) -> QuerySet[ApprovalRequest]:
        """Unordered; callers keyset by id. `status` is the effective status (`_read`)."""
        now = self.now()
        approvals = self._read().select_related("run", "replaces")
        if status:
            if status not in ApprovalStatus.values:
                raise Unprocessable(
                    "Unknown approval status.",
                    details={"status": [f"must be one of {', '.join(ApprovalStatus.values)}"]},
                )
            approvals = approvals.filter(has_status(status, now))
        if run_id:
            approvals = approvals.filter(run__run_id=run_id)
        return approvals

    def pending_page(
        self, *, limit: int = 50, cursor: int | None = None
    ) -> tuple[list[dict[str, Any]], int | None]:
        """The newest approvals that are pending at the store's clock, as the API shows them.

        The runtime's hot list (`GET /approvals?status=pending`): one statement,
        rows straight to the API's dicts (no model, no serializer), keyset-paged
        on the id (`cursor`: the last id of the previous page). Returns the page
        and the cursor of the next one (None: no more). An approval past its
        `expires_at` is not pending, swept or not.
        """
        bound = " AND id < %s" if cursor is not None else ""
        # The page first, then its runs: a run is looked up for each row shown, not for
        # each pending row of the tenant (the cost would grow with the backlog).
        sql = (
            f"SELECT {_PENDING_COLUMNS} FROM (SELECT * FROM {_APPROVALS}"
            " WHERE tenant_id = %s AND status = %s"
            f" AND (expires_at IS NULL OR expires_at > %s){bound}"
            f" ORDER BY id DESC LIMIT %s) a JOIN {_RUNS} r ON r.id = a.run_id ORDER BY a.id DESC"
        )
        params: list[Any] = [self.tenant.pk, ApprovalStatus.PENDING.value, self.now()]
        params += [*([cursor] if cursor is not None else []), limit + 1]
        with hot_cursor(alone=True) as cursor_:
            cursor_.execute(sql, params)
            rows = cursor_.fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        page = [_pending_out(row) for row in rows]
        return page, (rows[-1][0] if more else None)

    HISTORY_TABS = {
        "pending": (ApprovalStatus.PENDING,),
        "decided": (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED, ApprovalStatus.RESPONDED),
        "expired": (ApprovalStatus.EXPIRED,),
        "cancelled": (ApprovalStatus.CANCELLED,),
        "voided": (ApprovalStatus.VOIDED,),
    }

    def history(
        self,
        *,
        tab: str = "decided",
        risk: str | None = None,
        tool: str | None = None,
        agent: str | None = None,
        decider: str | None = None,
        decision: str | None = None,
        outcome: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> QuerySet[ApprovalRequest]:
        """Approvals of one history tab, filtered; unordered (callers keyset by id).

        Dates bound when the approval got its status: asked (pending), voided
        (voided) or closed (decided, expired, cancelled; an expiry not yet swept
        closed at its `expires_at`). `tool` and `decider` are case-insensitive
        prefixes (an operator types "otto" or "operator" for "Operator.Jane"),
        `agent` exact. Tabs go by the effective status (`_read`).
        """
        if tab not in self.HISTORY_TABS:
            raise Unprocessable(
                "Unknown tab.", details={"tab": [f"one of {', '.join(self.HISTORY_TABS)}"]}
            )
        now = self.now()
        in_tab = Q()
        for status in self.HISTORY_TABS[tab]:
            in_tab |= has_status(status, now)
        approvals = (
            self._read()
            .filter(in_tab)
            .alias(closed_at=Coalesce("decided_at", "expires_at"))
            .select_related("run", "replaces")
            .defer("search")
        )
        if risk:
            approvals = approvals.filter(risk=risk)
        if tool:
            approvals = approvals.filter(tool_name__istartswith=tool)
        if agent:
            approvals = approvals.filter(run__active_agent=agent)
        if decider:
            approvals = approvals.filter(decided_by__istartswith=decider)
        if decision:
            approvals = approvals.filter(decision=decision)
        if outcome:  # approved, rejected or responded, within the decided tab
            approvals = approvals.filter(status=outcome)
        stamp = {"pending": "created_at", "voided": "voided_at"}.get(tab, "closed_at")
        if since is not None:
            approvals = approvals.filter(**{f"{stamp}__gte": since})
        if until is not None:
            approvals = approvals.filter(**{f"{stamp}__lt": until})
        return approvals

    def search(
        self, *, query: str, before_id: int | None = None, limit: int = 20
    ) -> tuple[list[ApprovalRequest], bool]:
        """Approvals whose summary or reasons match `query` (web-search syntax), newest first,
        keyset-paged on id; each with `snippet` (matches between ⟦ and ⟧, unescaped)."""
        if not query.strip():
            return [], False
        tsquery = SearchQuery(query, config="english", search_type="websearch")
        found = self._approvals().filter(search=tsquery)
        if before_id is not None:
            found = found.filter(id__lt=before_id)
        ids = list(found.order_by("-id").values_list("id", flat=True)[: limit + 1])
        more, ids = len(ids) > limit, ids[:limit]
        if not ids:
            return [], False
        text = Concat(
            "summary",
            Value(" · "),
            "reason",
            Value(" · "),
            "decision_reason",
            output_field=TextField(),
        )
        rows = (
            self._read()
            .filter(id__in=ids)
            .select_related("run")
            .defer("search")
            .annotate(
                snippet=SearchHeadline(
                    text,
                    tsquery,
                    config="english",
                    start_sel="\u27e6",
                    stop_sel="\u27e7",
                    max_words=24,
                    min_words=8,
                    max_fragments=2,
                    fragment_delimiter=" … ",
                )
            )
            .order_by("-id")
        )
        return list(rows), more

    def get_run(self, run_id: str) -> Run:
        """The run an approval is asked for (404 if unknown): approvals build on runs."""
        return RunStateStore(self.tenant, self.actor, clock=self.now).get(run_id)

    def inbox(self) -> QuerySet[ApprovalRequest]:
        """Pending, most urgent first: time left weighted by risk (`approvals_app.urgency`).

        Never one that can no longer happen: past its `expires_at` (swept or
        not), or whose run's session has ended.
        """
        now = self.now()
        pending = (
            self._read()
            .filter(has_status(ApprovalStatus.PENDING, now))
            .exclude(run__session__status__in=TERMINAL_SESSION_STATUSES)
            .select_related("run", "run__session", "replaces")
            .defer("search")
        )
        return order_by_urgency(pending, now)

    def can_still_happen(self, approval: ApprovalRequest) -> bool:
        """Pending and not past `expires_at`, and its run's session (if any) neither ended
        nor being deleted."""
        session = approval.run.session if approval.run.session_id else None
        return (
            approval.status == ApprovalStatus.PENDING
            and not self._is_due(approval)
            and approval.run.content_fenced_at is None
            and (session is None or session.status not in TERMINAL_SESSION_STATUSES)
        )

    @staticmethod
    def asked_argument_errors(approval: ApprovalRequest) -> dict[str, list[str]]:
        """Where the asked arguments break the tool's schema ({}: they fit, or no schema).
        With any, the call cannot run as asked: only an edit that fits, or a rejection."""
        return argument_errors(approval.arguments_schema, approval.arguments, field="arguments")

    def digest(self, approval: ApprovalRequest) -> str:
        """What a console embeds to bind a decision to the call it showed.

        The digest of the arguments as stored. Arguments stored before the JSON
        gate refused numbers beyond ±(2**53 - 1) (jsonb kept `1e16` as the integer
        10000000000000000) have no RFC 8785 form: the digest taken when the call
        was asked stands for them (it is the one the runtime holds), and it is
        logged, so that such a row never makes a page or a decision fail.
        """
        try:
            return call_digest(approval.tool_name, approval.arguments)
        except rfc8785.CanonicalizationError as exc:
            logger.warning(
                "Approval %s: its stored arguments have no RFC 8785 form (%s); "
                "its call_digest as asked stands for them.",
                approval.approval_id,
                exc,
            )
            return approval.call_digest

    # --- the runtime asks -------------------------------------------------
    def request(
        self,
        *,
        run_id: str,
        expected_version: int,
        tool_name: str,
        arguments: dict[str, Any],
        risk: str,
        reason: str = "",
        expires_at: datetime | None = None,
        approval_id: str | None = None,
        worker: str | None = None,
        allowed_decisions: list[str] | None = None,
        summary: str = "",
        key_arguments: list[str] | None = None,
        usual_arguments: dict[str, Any] | None = None,
        display: dict[str, Any] | None = None,
        replaces_approval_id: str | None = None,
        arguments_schema: dict[str, Any] | None = None,
    ) -> ApprovalRequest:
        """Ask for a decision; the run moves to `waiting_approval` in the same transaction.

        `arguments_schema` is the tool's JSON Schema for its arguments (422 if
        it is not one, is over `MAX_SCHEMA_BYTES` or has a `$ref` that cannot
        be resolved): `decide` then refuses an edit that does not fit it, and a
        plain approve of asked arguments that do not (`approvals_app.schemas`).

        `replaces_approval_id` names the voided approval of the same run this
        one asks again (the console links them and shows why the first was
        voided); it must be `voided` and not asked again already (422
        otherwise).

        `summary` (one line) and `key_arguments` (up to three argument keys
        that matter) are what the inbox row shows; `usual_arguments` is the
        tool's usual call, against which the approval page marks what differs.
        `display` is the optional display hint (`approvals_app.display`: which
        arguments are amounts in minor units, and their currency); 422 when it
        names an argument the call lacks or that is not an integer.

        `allowed_decisions` (default approve, reject) is what the runtime can
        honour: the console offers only those and `decide` refuses the others.

        The run must be at `expected_version` (409 `version_conflict`), may go
        to `waiting_approval` (409 `invalid_transition`) and waits on no other
        approval (409 `approval_pending`). `run_version` is recorded as the
        run's version after that move (`expected_version` + 1). While a
        worker's claim on the run is live, only that `worker` may ask (409
        `run_claimed`, tested in the run's compare-and-set); the run then
        waits for a person and is held by nobody.
        """
        now = self.now()
        with self.atomic():
            run = self.get_run(run_id)
            if run.content_fenced_at is not None:
                raise ContentDeleted("run", run_id=run_id)
            self._validate_request(
                tool_name=tool_name,
                arguments=arguments,
                risk=risk,
                reason=reason,
                expires_at=expires_at,
                approval_id=approval_id,
                now=now,
            )
            allowed = _allowed_decisions(allowed_decisions)
            summary, key_arguments = _presentation(summary, key_arguments, usual_arguments)
            if arguments_schema is not None:
                check_schema(arguments_schema, arguments)
            display = checked_display(display, arguments)
            if run.version == expected_version and not run.is_terminal and run.pending_approval_id:
                raise Conflict(
                    "The run already waits on an approval.",
                    code="approval_pending",
                    details={"pending_approval_id": run.pending_approval_id},
                )
            replaces = self._replaced(run, replaces_approval_id)
            approval_id = approval_id or new_public_id("apr")
            if self._approvals().filter(approval_id=approval_id).exists():
                raise Conflict("An approval with this id exists.", code="approval_exists")
            moved = RunStateStore(self.tenant, self.actor, clock=self.now).compare_and_set(
                run_id=run_id,
                expected_version=expected_version,
                changes={"status": RunStatus.WAITING_APPROVAL, "pending_approval_id": approval_id},
                worker=worker,
            )
            token_id = int(self.actor.id) if self.actor.kind == "token" else None
            try:
                with self.atomic():
                    approval = ApprovalRequest.objects.create(
                        tenant=self.tenant,
                        approval_id=approval_id,
                        run=moved,
                        tool_name=tool_name,
                        arguments=arguments,
                        call_digest=call_digest(tool_name, arguments),
                        run_version=moved.version,
                        risk=risk,
                        risk_rank=RISK_RANK[Risk(risk)],
                        reason=reason or "",
                        allowed_decisions=allowed,
                        summary=summary,
                        key_arguments=key_arguments,
                        argument_order=[str(key)[:200] for key in arguments],
                        usual_arguments=usual_arguments,
                        arguments_schema=arguments_schema,
                        display=display,
                        status=ApprovalStatus.PENDING,
                        expires_at=expires_at,
                        created_at=now,
                        requested_by_token_id=token_id,
                        replaces=replaces,
                    )
            except IntegrityError as exc:
                raise Conflict("An approval with this id exists.", code="approval_exists") from exc
            self.audit(
                "approval.requested",
                target_type="approval",
                target_id=approval.approval_id,
                after={
                    "run_id": moved.run_id,
                    "tool_name": tool_name,
                    "risk": risk,
                    "call_digest": approval.call_digest,
                    "run_version": moved.version,
                    "allowed_decisions": allowed,
                    **({"replaces": replaces.approval_id} if replaces else {}),
                    **(
                        {"arguments_schema_digest": digest(arguments_schema)}
                        if arguments_schema is not None
                        else {}
                    ),
                },
                # The runtime's reason is its own text: a detached payload, not the log.
                content={"reason": reason},
            )
        return approval

    # --- people decide ----------------------------------------------------
    def decide(
        self,
        *,
        approval_id: str,
        decision: str,
        reason: str = "",
        approved_arguments: dict[str, Any] | None = None,
        response: str | None = None,
        expected_digest: str | None = None,
        expected_run_version: int | None = None,
    ) -> ApprovalRequest:
        """Decide exactly once; the run goes back to `running`.

        approve and edit (with `approved_arguments`) end `approved` (the call
        runs; its runtime reports how it went, `report_outcome`); reject ends
        `rejected`; respond (with `response`, the tool result the model gets)
        ends `responded`: the call does not run. `decision` records which.

        Refusals, in this order (nothing written): 404; 422 bad decision,
        arguments or response; 409 `already_decided` (details decided_by,
        decided_at, status); 422 `decision_not_allowed` when the runtime did
        not declare it can honour this decision; with the tool's schema, 422
        when an edit's arguments do not fit it (details name each failing path,
        `approved_arguments.amount_cents`) and 422 `arguments_invalid` for a
        plain approve of asked arguments that do not (`arguments.<path>`):
        those can only be edited to fit, or rejected; 409 `approval_expired` when
        `expires_at` has passed (this one records the expiry, `keep_changes`);
        409 `call_changed` when `expected_digest` or `expected_run_version` no
        longer match; 422 a reason is required (reject; any decision on high
        or critical risk); 409 `second_approver_required` when four-eyes
        applies and the first approver approves again.

        Four-eyes (tenant.four_eyes_critical, risk critical): the first approval
        only records `first_approved_by` (audited `approval.first_approval`)
        and the approval stays pending; a second, different person decides.
        One rejection is enough.
        """
        _check_decision(decision, reason, approved_arguments, response)
        expired: Conflict | None = None
        with self.atomic():
            run, approval = self._lock(approval_id)
            if approval.status != ApprovalStatus.PENDING:
                raise self._already_decided(approval)
            self._refuse_if_over(run)
            if decision not in approval.allowed_decisions:
                raise Unprocessable(
                    f"The runtime cannot honour '{decision}' for this call.",
                    code="decision_not_allowed",
                    details={
                        "decision": [f"must be one of {', '.join(approval.allowed_decisions)}"],
                        "allowed_decisions": approval.allowed_decisions,
                    },
                )
            _check_fits_schema(approval, decision, approved_arguments)
            if self._is_due(approval):
                self._expire_locked(approval, run)
                expired = Conflict(
                    "The approval expired before the decision.",
                    code="approval_expired",
                    details={
                        "status": approval.status,
                        "expires_at": approval.expires_at.isoformat(),
                    },
                )
                expired.keep_changes = True
            else:
                self._check_binding(approval, run, expected_digest, expected_run_version)
                if not (reason or "").strip() and (
                    decision == Decision.REJECT or approval.risk in REASON_REQUIRED_RISKS
                ):
                    raise Unprocessable(
                        "A reason is required to reject, and to decide high or critical risk.",
                        details={"reason": ["required"]},
                    )
                if decision in RUNS_THE_CALL and self._needs_second_approver(approval):
                    return self._first_approval(approval, reason, approved_arguments)
                self._decide_locked(
                    approval, run, decision, reason, approved_arguments, response or ""
                )
        if expired is not None:
            raise expired
        return approval

    # --- the runtime withdraws; time runs out ------------------------------
    def cancel(
        self, *, approval_id: str, reason: str = "", worker: str | None = None
    ) -> ApprovalRequest:
        """The runtime that asked withdraws its request; the run goes back to `running`.

        Another runtime token of the tenant gets 403; while another worker's
        claim on the run is live, a runtime that does not name it (`worker`)
        409 `run_claimed`; a decided approval 409 `already_decided`; so does
        one past its `expires_at`, whose expiry this records (`keep_changes`),
        as a late decision does.
        """
        expired: Conflict | None = None
        with self.atomic():
            run, approval = self._lock_as_requester(approval_id, worker, "cancel")
            if approval.status != ApprovalStatus.PENDING:
                raise self._already_decided(approval)
            if self._is_due(approval):
                self._expire_locked(approval, run)
                expired = self._already_decided(approval)
                expired.keep_changes = True
            else:
                self._close(approval, ApprovalStatus.CANCELLED, reason)
                self._release_run(run, approval, to_status=RunStatus.RUNNING)
                self.audit(
                    "approval.cancelled",
                    target_type="approval",
                    target_id=approval.approval_id,
                    before={"status": ApprovalStatus.PENDING},
                    after={"status": approval.status, "run_status": run.status},
                    reason=reason,
                )
        if expired is not None:
            raise expired
        return approval

    def void(
        self,
        *,
        approval_id: str,
        reason_code: str,
        reason: str,
        details: dict[str, Any] | None = None,
        refuse: Callable[[ApprovalRequest], None] | None = None,
        worker: str | None = None,
    ) -> ApprovalRequest:
        """The runtime that asked can no longer honour this approval: it ends `voided`.

        Allowed on a `pending` approval (the run stops waiting and goes back to
        `running`, as for a cancellation: the runtime is about to ask again)
        and on an `approved` one whose call has not run. This store cannot see
        the effect ledger: `refuse(approval)`, called under the run's and the
        approval's row locks, is how the layer above (`actions_app`) refuses
        one whose call ran or may have run. The decision fields stay as they
        were (an approved approval still says who approved it); `voided_by`,
        `voided_at`, `void_code`, `void_reason` and `void_details` say who
        voided it, when and why. Audited `approval.voided` (the runtime's
        reason and details in the detached, redactable payload); the
        requesting runtime's webhook hears of it.

        Refusals, in this order (nothing written): 422 bad reason_code, reason
        or details; 403 `not_requester` (another runtime token); 409
        `run_claimed` (another worker's claim on the run is live and `worker`
        does not name it); 409 `already_decided` for rejected, expired,
        cancelled or voided (and for
        a pending one past `expires_at`, whose expiry this records,
        `keep_changes`); 409 `content_deleted`; whatever `refuse` raises.
        """
        _check_void(reason_code, reason, details)
        expired: Conflict | None = None
        with self.atomic():
            run, approval = self._lock_as_requester(approval_id, worker, "void")
            if approval.status not in VOIDABLE:
                raise self._already_decided(approval)
            if approval.status == ApprovalStatus.PENDING and self._is_due(approval):
                self._expire_locked(approval, run)
                expired = self._already_decided(approval)
                expired.keep_changes = True
            else:
                if run.content_fenced_at is not None:
                    raise ContentDeleted("run", run_id=run.run_id)
                if refuse is not None:
                    refuse(approval)
                before = approval.status
                approval.status = ApprovalStatus.VOIDED
                approval.voided_by = self.actor.label[:200]
                approval.voided_at = self.now()
                approval.void_code = reason_code
                approval.void_reason = reason
                approval.void_details = details
                approval.save(
                    update_fields=[
                        "status",
                        "voided_by",
                        "voided_at",
                        "void_code",
                        "void_reason",
                        "void_details",
                    ]
                )
                self._release_run(run, approval, to_status=RunStatus.RUNNING)
                self.audit(
                    "approval.voided",
                    target_type="approval",
                    target_id=approval.approval_id,
                    before={"status": before},
                    after={
                        "status": approval.status,
                        "void_code": reason_code,
                        "run_status": run.status,
                    },
                    # The runtime's words and its evidence (a tool's schemas) are its content.
                    content={"reason": reason, "details": details},
                )
                self._notify(approval)
        if expired is not None:
            raise expired
        return approval

    def report_outcome(
        self,
        *,
        approval_id: str,
        outcome: str,
        error: dict[str, Any] | None = None,
        worker: str | None = None,
    ) -> ApprovalRequest:
        """The runtime that ran an approved call says how it went: `succeeded`, or `failed`
        with the tool's `error` (`{message, type?}`), which the approval's page shows.

        Once per approval: the same report again changes nothing (a retry after a lost
        answer); another one is 409 `outcome_reported`. Audited `approval.tool_<outcome>`
        (the error in the detached, redactable payload). The run is the runtime's to end:
        it ends it `failed` on a failed call (the gate does).

        Refusals, in this order (nothing written): 422 bad outcome or error; 404; 403
        `not_requester` (another runtime token); 409 `run_claimed`; 409 `not_approved`
        (details.status) unless it is approved; 409 `outcome_reported` (details.outcome).
        """
        _check_outcome(outcome, error)
        with self.atomic():
            run, approval = self._lock_as_requester(approval_id, worker, "report")
            if approval.status != ApprovalStatus.APPROVED:
                raise Conflict(
                    f"Only an approved call runs; this approval is {approval.status}.",
                    code="not_approved",
                    details={"status": approval.status},
                )
            if approval.outcome:
                if approval.outcome == outcome and approval.outcome_error == error:
                    return approval  # the same report again: nothing to change
                raise Conflict(
                    f"The runtime already reported that the call {approval.outcome}.",
                    code="outcome_reported",
                    details={"outcome": approval.outcome},
                )
            approval.outcome, approval.outcome_error = outcome, error
            approval.outcome_at = self.now()
            approval.save(update_fields=["outcome", "outcome_error", "outcome_at"])
            self.audit(
                f"approval.tool_{outcome}",
                target_type="approval",
                target_id=approval.approval_id,
                before={"status": approval.status},
                after={"status": approval.status, "outcome": outcome, "run_id": run.run_id},
                # The tool's error may quote the call's arguments: content.
                content={"error": error} if error is not None else None,
            )
        return approval

    def expire(self, *, approval_id: str) -> ApprovalRequest:
        """Expire a pending approval now (409 `already_decided` if it is not pending).

        The run waiting on it is `suspended` (checkpointed, resumable: the
        runtime sees the expiry and asks again or gives up) and its
        `pending_approval_id` cleared. Audited `approval.expired` with the
        store's actor (the system, for the sweep); the requesting runtime's
        webhook hears of it.
        """
        with self.atomic():
            run, approval = self._lock(approval_id)
            if approval.status != ApprovalStatus.PENDING:
                raise self._already_decided(approval)
            self._expire_locked(approval, run)
        return approval

    def expire_overdue(self, *, limit: int = 500) -> int:
        """Sweep: make durable the expiry of approvals past `expires_at`, as `expire` does.

        They already read as expired (`_read`); the sweep records it (audited
        once), suspends their runs and tells the runtimes. Bounded to `limit`.
        Each expiry locks its run and approval with `skip_locked` and re-checks
        `pending` and the deadline under the lock, so two sweeps at once (or a
        sweep racing a decision) expire each approval at most once and never
        wait on each other.
        """
        now = self.now()
        due = list(
            self.unswept(now=now).order_by("expires_at", "id").values_list("pk", "run_id")[:limit]
        )
        expired = 0
        for approval_pk, run_pk in due:
            with self.atomic():
                run = (
                    Run.objects.select_for_update(skip_locked=True)
                    .filter(tenant=self.tenant, pk=run_pk)
                    .first()
                )
                approval = (
                    self.unswept(now=now)
                    .select_for_update(skip_locked=True)
                    .filter(pk=approval_pk)
                    .first()
                    if run is not None
                    else None
                )
                if approval is None:
                    continue
                self._expire_locked(approval, run)
                expired += 1
        return expired

    def unswept(self, *, now: datetime) -> QuerySet[ApprovalRequest]:
        """Approvals past `expires_at` at `now` whose expiry is not recorded yet (the sweep's)."""
        return self._approvals().filter(overdue(now))

    def withdraw_for_run(self, *, run: Run, reason: str) -> int:
        """A run that ended waits on nothing: cancel its pending approval (audited).

        Called by `actions_app.runs.RunActions` in the transaction that ends
        the run, which holds the run's row lock (lock order: run, then approval).
        The requesting runtime's webhook hears of it, as of a decision.
        """
        withdrawn = 0
        for approval in (
            self._approvals().select_for_update().filter(run=run, status=ApprovalStatus.PENDING)
        ):
            if self._is_due(approval):
                # It already reads expired: it stays so (recorded now), not cancelled.
                self._expire_locked(approval, run)
                withdrawn += 1
                continue
            self._close(approval, ApprovalStatus.CANCELLED, reason)
            self.audit(
                "approval.cancelled",
                target_type="approval",
                target_id=approval.approval_id,
                before={"status": ApprovalStatus.PENDING},
                after={"status": approval.status, "run_status": run.status},
                reason=reason,
            )
            self._notify(approval)
            withdrawn += 1
        return withdrawn

    # --- lifecycle: content -------------------------------------------------
    CONTENT = CONTENT

    def approval_ids_of_runs(self, run_pks: Iterable[int]) -> list[str]:
        return list(
            self._approvals()
            .filter(run__in=list(run_pks))
            .order_by("pk")
            .values_list("approval_id", flat=True)
        )

    def pending(self, *, limit: int) -> list[ApprovalRequest]:
        """Pending approvals, oldest first, with their runs (for the lifecycle's reconciler)."""
        return list(
            self._approvals()
            .filter(status=ApprovalStatus.PENDING)
            .select_related("run", "run__session")
            .order_by("id")[:limit]
        )

    def _content_rows(self, name: str, runs: Iterable[int]) -> QuerySet[ApprovalRequest]:
        content_class(CONTENT, name)
        return self._approvals().filter(run__in=list(runs), redacted_at__isnull=True)

    def content_left(self, name: str, containers: Iterable[int]) -> int:
        return self._content_rows(name, containers).count()

    def redact_content(
        self, name: str, container: int, *, after: Any, limit: int, now: datetime
    ) -> Batch:
        """Clear the content of up to `limit` approvals of one run (in the caller's transaction)."""
        return redact_in_key_order(
            self._content_rows(name, [container]),
            "pk",
            after=after,
            limit=limit,
            remove=lambda qs: qs.update(
                arguments={},
                approved_arguments=None,
                usual_arguments=None,
                display=None,
                argument_order=[],
                key_arguments=[],
                summary="",
                reason="",
                decision_reason="",
                first_approval_reason="",
                response="",
                void_reason="",
                void_details=None,
                outcome_error=None,
                redacted_at=now,
            ),
        )

    # --- internals --------------------------------------------------------
    def _validate_request(
        self,
        *,
        tool_name: str,
        arguments: Any,
        risk: str,
        reason: str,
        expires_at: datetime | None,
        approval_id: str | None,
        now: datetime,
    ) -> None:
        errors: dict[str, list[str]] = {}
        if not isinstance(tool_name, str) or not 1 <= len(tool_name) <= MAX_TOOL_NAME_LENGTH:
            errors["tool_name"] = [f"1-{MAX_TOOL_NAME_LENGTH} characters"]
        if not isinstance(arguments, dict):
            errors["arguments"] = ["must be an object"]
        else:
            try:
                canonical_json(arguments)
            except (TypeError, ValueError):
                errors["arguments"] = ["must be JSON"]
        if risk not in Risk.values:
            errors["risk"] = [f"must be one of {', '.join(Risk.values)}"]
        if not isinstance(reason, str):
            errors["reason"] = ["must be a string"]
        if expires_at is not None and (expires_at.tzinfo is None or expires_at <= now):
            errors["expires_at"] = ["must be a time in the future, with a time zone"]
        if approval_id is not None and not is_valid_public_id(approval_id):
            errors["approval_id"] = [PUBLIC_ID_RULE]
        if errors:
            raise Unprocessable("Some fields are invalid.", details=errors)

    def _replaced(self, run: Run, replaces_approval_id: str | None) -> ApprovalRequest | None:
        """The voided approval of `run` a new request asks again; 422 if it cannot be."""
        if replaces_approval_id is None:
            return None
        old = (
            self._approvals()
            .filter(approval_id=replaces_approval_id, run=run)
            .select_related("replaced_by")
            .first()
        )
        problem = ""
        if old is None:
            problem = "no such approval of this run"
        elif old.status != ApprovalStatus.VOIDED:
            problem = f"is {old.status}: only a voided approval is asked again"
        elif getattr(old, "replaced_by", None) is not None:
            problem = f"was already asked again as {old.replaced_by.approval_id}"
        if problem:
            raise Unprocessable(
                "replaces_approval_id: " + problem,
                details={"replaces_approval_id": [problem]},
            )
        return old

    def _lock_as_requester(
        self, approval_id: str, worker: str | None, verb: str
    ) -> tuple[Run, ApprovalRequest]:
        """`_lock`, for what only the runtime that asked may do (cancel, void, report):
        403 `not_requester` for another runtime token, 409 `run_claimed` for another worker."""
        run, approval = self._lock(approval_id)
        if (
            self.actor.kind == "token"
            and approval.requested_by_token_id is not None
            and self.actor.id != str(approval.requested_by_token_id)
        ):
            raise Forbidden(f"Only the runtime that asked may {verb}.", code="not_requester")
        self._refuse_if_claimed_elsewhere(run, worker)
        return run, approval

    def _lock(self, approval_id: str) -> tuple[Run, ApprovalRequest]:
        """Lock the run, then the approval (the one lock order of this module).

        The approval as stored: a pending one past its deadline is for the
        caller to expire (`_is_due`), audited once."""
        head = self._approvals().filter(approval_id=approval_id).only("pk", "run_id").first()
        if head is None:
            raise NotFound("No such approval.", details={"approval_id": approval_id})
        run = (
            Run.objects.select_for_update(of=("self",))
            .select_related("session")
            .get(tenant=self.tenant, pk=head.run_id)
        )
        approval = self._approvals().select_for_update().get(pk=head.pk)
        approval.run = run
        if head.replaces_id is not None and head.replaces_id == approval.replaces_id:
            approval.replaces = head.replaces
        return run, approval

    def _refuse_if_claimed_elsewhere(self, run: Run, worker: str | None) -> None:
        """A runtime's write to a run another worker holds (its claim live) is fenced: 409
        `run_claimed`, as for the run's own writes. People and the system are not held back."""
        if self.actor.kind != "token":
            return
        conflict = claimed_elsewhere(
            claimed_by=run.claimed_by,
            claim_until=run.claim_until,
            worker=worker,
            now=self.now(),
            version=run.version,
        )
        if conflict is not None:
            raise conflict

    @staticmethod
    def _refuse_if_over(run: Run) -> None:
        """A decision needs a live session: one that ended (or is being deleted) takes none."""
        if run.content_fenced_at is not None:
            raise ContentDeleted("run", run_id=run.run_id)
        session = run.session if run.session_id else None
        if session is not None and session.status in TERMINAL_SESSION_STATUSES:
            raise Conflict(
                f"The run's session is {session.status}; this approval can no longer happen.",
                code="session_ended",
                details={"session_id": session.session_id, "session_status": session.status},
            )

    def _is_due(self, approval: ApprovalRequest) -> bool:
        return approval.expires_at is not None and approval.expires_at <= self.now()

    def _actor_key(self) -> str:
        return f"{self.actor.kind}:{self.actor.id}"

    @staticmethod
    def _already_decided(approval: ApprovalRequest) -> Conflict:
        # A voided approval was last closed by the runtime that voided it.
        voided = approval.status == ApprovalStatus.VOIDED
        by = approval.voided_by if voided else approval.decided_by
        at = approval.voided_at if voided else approval.decided_at
        return Conflict(
            f"The approval is already {approval.status}.",
            code="already_decided",
            details={
                "status": approval.status,
                "decided_by": by,
                "decided_at": at.isoformat() if at else None,
            },
        )

    def _check_binding(
        self,
        approval: ApprovalRequest,
        run: Run,
        expected_digest: str | None,
        expected_run_version: int | None,
    ) -> None:
        changed: dict[str, Any] = {}
        current_digest = self.digest(approval)
        # The stored digest is the call as it was asked; an approval asked before RFC 8785
        # digests stored the older spelling's, which a runtime may still hold.
        if expected_digest is not None and expected_digest not in (
            current_digest,
            approval.call_digest,
        ):
            changed["call_digest"] = {"expected": expected_digest, "current": current_digest}
        if expected_run_version is not None and expected_run_version != run.version:
            changed["run_version"] = {"expected": expected_run_version, "current": run.version}
        if changed:
            raise Conflict(
                "The call or the run changed since it was shown; look again.",
                code="call_changed",
                details=changed,
            )

    def _needs_second_approver(self, approval: ApprovalRequest) -> bool:
        if approval.risk != Risk.CRITICAL:
            return False
        four_eyes = (
            Tenant.objects.filter(pk=self.tenant.pk)
            .values_list("four_eyes_critical", flat=True)
            .first()
        )
        if not four_eyes:
            return False
        if not approval.first_approved_by_id:
            return True
        if approval.first_approved_by_id == self._actor_key():
            raise Conflict(
                "Critical calls need a second, different approver.",
                code="second_approver_required",
                details={
                    "first_approved_by": approval.first_approved_by,
                    "first_approved_at": approval.first_approved_at.isoformat(),
                },
            )
        return False

    def _first_approval(
        self,
        approval: ApprovalRequest,
        reason: str,
        approved_arguments: dict[str, Any] | None,
    ) -> ApprovalRequest:
        approval.first_approved_by = self.actor.label[:200]
        approval.first_approved_by_id = self._actor_key()[:64]
        approval.first_approved_at = self.now()
        approval.first_approval_reason = reason or ""
        approval.save(
            update_fields=[
                "first_approved_by",
                "first_approved_by_id",
                "first_approved_at",
                "first_approval_reason",
            ]
        )
        after: dict[str, Any] = {"status": approval.status, "first_approved_by": self.actor.label}
        self.audit(
            "approval.first_approval",
            target_type="approval",
            target_id=approval.approval_id,
            before={"status": ApprovalStatus.PENDING},
            after=after,
            # What the model hears is content: the reason goes with the session's content.
            content=_decision_content(approval.arguments, approved_arguments, reason, ""),
        )
        return approval

    def _decide_locked(
        self,
        approval: ApprovalRequest,
        run: Run,
        decision: str,
        reason: str,
        approved_arguments: dict[str, Any] | None,
        response: str,
    ) -> None:
        status = DECIDED_STATUS[Decision(decision)]
        approval.approved_arguments = approved_arguments
        approval.decision = decision
        approval.response = response
        self._close(approval, status, reason, extra_fields=("decision", "response"))
        self._release_run(run, approval, to_status=RunStatus.RUNNING)
        after: dict[str, Any] = {"status": status, "decision": decision, "run_status": run.status}
        if approval.first_approved_by:
            after["first_approved_by"] = approval.first_approved_by
        if approved_arguments is not None:
            after["approved_arguments_digest"] = call_digest(approval.tool_name, approved_arguments)
        self.audit(
            f"approval.{status}",
            target_type="approval",
            target_id=approval.approval_id,
            before={"status": ApprovalStatus.PENDING},
            after=after,
            # What the model hears is content: the reason goes with the session's content.
            content=_decision_content(approval.arguments, approved_arguments, reason, response),
        )
        self._notify(approval)

    def _expire_locked(self, approval: ApprovalRequest, run: Run) -> None:
        # Past its deadline, it expired then (as reads showed it), not when this records it.
        at = self.now()
        if approval.expires_at is not None:
            at = min(at, approval.expires_at)
        self._close(approval, ApprovalStatus.EXPIRED, "", at=at)
        self._release_run(run, approval, to_status=RunStatus.SUSPENDED)
        self.audit(
            "approval.expired",
            target_type="approval",
            target_id=approval.approval_id,
            before={"status": ApprovalStatus.PENDING},
            after={
                "status": approval.status,
                "expires_at": approval.expires_at,
                "run_status": run.status,
            },
        )
        self._notify(approval)

    def _close(
        self,
        approval: ApprovalRequest,
        status: str,
        reason: str,
        *,
        extra_fields: tuple[str, ...] = (),
        at: datetime | None = None,
    ) -> None:
        approval.status = status
        approval.decided_by = self.actor.label[:200]
        approval.decided_by_id = self._actor_key()[:64]
        approval.decided_at = at or self.now()
        approval.decision_reason = reason or ""
        approval.save(
            update_fields=[
                "status",
                "decided_by",
                "decided_by_id",
                "decided_at",
                "decision_reason",
                "approved_arguments",
                *extra_fields,
            ]
        )

    def _release_run(self, run: Run, approval: ApprovalRequest, *, to_status: str) -> None:
        """The run stops waiting on this approval (a CAS on the locked run's version).

        Only a run still pointing at this approval is touched; one in
        `waiting_approval` moves to `to_status`, any other keeps its status.
        """
        if run.is_terminal or run.pending_approval_id != approval.approval_id:
            return
        changes: dict[str, Any] = {"pending_approval_id": ""}
        if run.status == RunStatus.WAITING_APPROVAL:
            changes["status"] = to_status
        # A decision, an expiry, a withdrawal: no worker's claim holds them back.
        moved = RunStateStore(self.tenant, self.actor, clock=self.now).compare_and_set(
            run_id=run.run_id, expected_version=run.version, changes=changes, as_runtime=False
        )
        for field in ("status", "pending_approval_id", "version", "updated_at"):
            setattr(run, field, getattr(moved, field))

    def _notify(self, approval: ApprovalRequest) -> None:
        """Tell the requesting runtime's webhook, once the decision is committed."""
        if approval.requested_by_token_id is None:
            return
        has_webhook = (
            RuntimeToken.objects.filter(
                pk=approval.requested_by_token_id, tenant=self.tenant, revoked_at__isnull=True
            )
            .exclude(webhook_url="")
            .exists()
        )
        if not has_webhook:
            return
        enqueue(
            tenant=self.tenant,
            task=notify_decision.name,
            args=[self.tenant.pk, approval.approval_id],
        )


def _decision_content(
    arguments: dict[str, Any],
    approved_arguments: dict[str, Any] | None,
    reason: str,
    response: str,
) -> dict[str, Any]:
    """What a decision's audit event shows that the model hears or that holds argument values:
    the reason (the model is told it), the response, what an edit changed. Content: a
    detached payload, deleted with the session's content; the event keeps who decided what."""
    content: dict[str, Any] = {"reason": reason, "response": response}
    if approved_arguments is not None:
        content["approved_arguments_diff"] = arguments_diff(arguments, approved_arguments)
    return content


def _check_fits_schema(
    approval: ApprovalRequest, decision: str, approved_arguments: dict[str, Any] | None
) -> None:
    """A call that runs must fit the tool's schema: the edited arguments, or the asked ones."""
    if approval.arguments_schema is None:
        return
    if decision == Decision.EDIT:
        errors = argument_errors(
            approval.arguments_schema, approved_arguments, field="approved_arguments"
        )
        if errors:
            raise Unprocessable(
                "The edited arguments do not fit the tool's schema.", details=errors
            )
    elif decision == Decision.APPROVE:
        errors = ApprovalStore.asked_argument_errors(approval)
        if errors:
            raise Unprocessable(
                "The arguments asked do not fit the tool's schema: edit them to fit, or reject.",
                code="arguments_invalid",
                details={
                    "decision": ["approve as asked is not possible: edit or reject"],
                    **errors,
                },
            )


def _check_void(reason_code: Any, reason: Any, details: Any) -> None:
    """A void's own shape: a known reason code, the runtime's reason, JSON details within bounds."""
    errors: dict[str, list[str]] = {}
    if reason_code not in VoidReason.values:
        errors["reason_code"] = [f"must be one of {', '.join(VoidReason.values)}"]
    if not isinstance(reason, str) or not reason.strip():
        errors["reason"] = ["required: why the runtime can no longer honour it"]
    elif len(reason) > MAX_VOID_REASON_LENGTH:
        errors["reason"] = [f"at most {MAX_VOID_REASON_LENGTH} characters"]
    if details is not None:
        if not isinstance(details, dict):
            errors["details"] = ["must be an object"]
        else:
            try:
                size = len(canonical_json(details).encode())
            except (TypeError, ValueError):
                errors["details"] = ["must be JSON"]
            else:
                if size > MAX_VOID_DETAILS_BYTES:
                    errors["details"] = [f"at most {MAX_VOID_DETAILS_BYTES} bytes of JSON"]
    if errors:
        raise Unprocessable("The void is invalid.", details=errors)


def _check_outcome(outcome: Any, error: Any) -> None:
    """A reported outcome's shape: failed carries the tool's error `{message, type?}`."""
    errors: dict[str, list[str]] = {}
    if outcome not in ToolOutcome.values:
        errors["outcome"] = [f"must be one of {', '.join(ToolOutcome.values)}"]
    elif outcome == ToolOutcome.FAILED:
        message = error.get("message") if isinstance(error, dict) else None
        if not isinstance(message, str) or not message.strip():
            errors["error"] = ["required with failed: an object with the tool's error message"]
        elif len(message) > MAX_OUTCOME_ERROR_MESSAGE_LENGTH:
            errors["error"] = [f"message: at most {MAX_OUTCOME_ERROR_MESSAGE_LENGTH} characters"]
        elif len(canonical_json(error).encode()) > MAX_OUTCOME_ERROR_BYTES:
            errors["error"] = [f"at most {MAX_OUTCOME_ERROR_BYTES} bytes of JSON"]
    elif error is not None:
        errors["error"] = ["only with failed"]
    if errors:
        raise Unprocessable("The outcome is invalid.", details=errors)


def _allowed_decisions(allowed: Any) -> list[str]:
    """The declared decisions in their canonical order; 422 for an empty or unknown set."""
    if allowed is None:
        return list(DEFAULT_ALLOWED_DECISIONS)
    if (
        not isinstance(allowed, list | tuple)
        or not allowed
        or not all(isinstance(d, str) and d in DECISIONS for d in allowed)
    ):
        raise Unprocessable(
            "allowed_decisions must be a non-empty list of decisions.",
            details={"allowed_decisions": [f"a non-empty subset of {', '.join(DECISIONS)}"]},
        )
    return [d for d in DECISIONS if d in allowed]


def _presentation(summary: Any, key_arguments: Any, usual_arguments: Any) -> tuple[str, list[str]]:
    """The inbox's summary and key arguments, checked; 422 when malformed."""
    errors: dict[str, list[str]] = {}
    summary = "" if summary is None else summary
    if not isinstance(summary, str) or len(summary) > MAX_SUMMARY_LENGTH or "\n" in summary:
        errors["summary"] = [f"one line of at most {MAX_SUMMARY_LENGTH} characters"]
    keys = [] if key_arguments is None else key_arguments
    if (
        not isinstance(keys, list | tuple)
        or len(keys) > MAX_KEY_ARGUMENTS
        or not all(isinstance(k, str) and 0 < len(k) <= MAX_ARGUMENT_NAME_LENGTH for k in keys)
    ):
        errors["key_arguments"] = [
            f"at most {MAX_KEY_ARGUMENTS} argument names of 1-{MAX_ARGUMENT_NAME_LENGTH} characters"
        ]
    if usual_arguments is not None and not isinstance(usual_arguments, dict):
        errors["usual_arguments"] = ["must be an object"]
    if errors:
        raise Unprocessable("Some fields are invalid.", details=errors)
    return summary, list(keys)


def _check_decision(decision: Any, reason: Any, approved_arguments: Any, response: Any) -> None:
    """The decision's own shape: edit carries arguments, respond a response, nothing else does."""
    errors: dict[str, list[str]] = {}
    if decision not in DECISIONS:
        errors["decision"] = [f"must be one of {', '.join(DECISIONS)}"]
    if reason is not None and not isinstance(reason, str):
        errors["reason"] = ["must be a string"]
    elif len(reason or "") > MAX_DECISION_REASON_LENGTH:
        errors["reason"] = [f"at most {MAX_DECISION_REASON_LENGTH} characters"]
    if decision == Decision.EDIT:
        if not isinstance(approved_arguments, dict):
            errors["approved_arguments"] = ["required with edit: the arguments to run (an object)"]
    elif approved_arguments is not None:
        errors["approved_arguments"] = ["only with edit"]
    if decision == Decision.RESPOND:
        if not isinstance(response, str) or not response.strip():
            errors["response"] = ["required with respond: the text the model gets"]
        elif len(response) > MAX_RESPONSE_LENGTH:
            errors["response"] = [f"at most {MAX_RESPONSE_LENGTH} characters"]
    elif response not in (None, ""):
        errors["response"] = ["only with respond"]
    if errors:
        raise Unprocessable("The decision is invalid.", details=errors)
