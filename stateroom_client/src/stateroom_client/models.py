"""Typed resources returned by the Stateroom API.

Each is a frozen dataclass built from the JSON the server sends (`from_json`);
timestamps become aware `datetime`s and money a `Decimal`. The untouched JSON
is kept in `raw`, so fields added to the API later are not lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Generic, TypeVar

T = TypeVar("T")
JSON = dict[str, Any]


def _dt(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _str(value: Any) -> str:
    return "" if value is None else str(value)


@dataclass(frozen=True)
class Me:
    tenant: str
    name: str
    role: str
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: JSON) -> Me:
        return cls(
            tenant=data.get("tenant", ""),
            name=data.get("name", ""),
            role=data.get("role", ""),
            raw=data,
        )


@dataclass(frozen=True)
class Session:
    session_id: str
    user_id: str
    status: str
    revision: int
    lease_until: datetime | None
    attached_run_ids: list[str]
    created_at: datetime | None
    last_active_at: datetime | None
    metadata: JSON
    legal_hold: bool
    content_deleted_at: datetime | None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: JSON) -> Session:
        return cls(
            session_id=data["session_id"],
            user_id=_str(data.get("user_id")),
            status=data.get("status", ""),
            revision=int(data.get("revision") or 0),
            lease_until=_dt(data.get("lease_until")),
            attached_run_ids=list(data.get("attached_run_ids") or []),
            created_at=_dt(data.get("created_at")),
            last_active_at=_dt(data.get("last_active_at")),
            metadata=dict(data.get("metadata") or {}),
            legal_hold=bool(data.get("legal_hold")),
            content_deleted_at=_dt(data.get("content_deleted_at")),
            raw=data,
        )


@dataclass(frozen=True)
class SessionItem:
    seq: int
    role: str
    item_type: str
    payload: Any
    run_id: str
    created_at: datetime | None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: JSON) -> SessionItem:
        return cls(
            seq=int(data["seq"]),
            role=_str(data.get("role")),
            item_type=_str(data.get("item_type")),
            payload=data.get("payload"),
            run_id=_str(data.get("run_id")),
            created_at=_dt(data.get("created_at")),
            raw=data,
        )


@dataclass(frozen=True)
class AppendResult:
    """Seqs given to an append (items or run events); `created` is False on an idempotent replay."""

    first_seq: int
    last_seq: int
    created: bool

    @classmethod
    def from_json(cls, data: JSON, status: int) -> AppendResult:
        return cls(
            first_seq=int(data["first_seq"]), last_seq=int(data["last_seq"]), created=status == 201
        )


@dataclass(frozen=True)
class Run:
    run_id: str
    session_id: str
    task_id: str
    status: str
    turn_index: int
    active_agent: str
    current_node_id: str
    deadline_at: datetime | None
    token_used: int
    cost_used: Decimal
    pending_approval_id: str
    last_checkpoint_id: str
    error: Any
    version: int
    created_at: datetime | None
    updated_at: datetime | None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)
    claimed_by: str = ""  # the worker that claimed the run ("" while nobody has)
    claim_until: datetime | None = None  # its lease
    # Running, and no worker has held it for longer than the tenant's setting: since when.
    unclaimed_since: datetime | None = None
    model: str = ""  # the model the runtime last reported ("" none)
    trace_id: str = ""  # the W3C trace id of the call that created the run ("" none)

    TERMINAL = frozenset({"succeeded", "failed", "cancelled"})

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL

    @classmethod
    def from_json(cls, data: JSON) -> Run:
        return cls(
            run_id=data["run_id"],
            session_id=_str(data.get("session_id")),
            task_id=_str(data.get("task_id")),
            status=data.get("status", ""),
            turn_index=int(data.get("turn_index") or 0),
            active_agent=_str(data.get("active_agent")),
            current_node_id=_str(data.get("current_node_id")),
            deadline_at=_dt(data.get("deadline_at")),
            token_used=int(data.get("token_used") or 0),
            cost_used=Decimal(str(data.get("cost_used") or "0")),
            pending_approval_id=_str(data.get("pending_approval_id")),
            last_checkpoint_id=_str(data.get("last_checkpoint_id")),
            error=data.get("error"),
            version=int(data.get("version") or 0),
            created_at=_dt(data.get("created_at")),
            updated_at=_dt(data.get("updated_at")),
            raw=data,
            claimed_by=_str(data.get("claimed_by")),
            claim_until=_dt(data.get("claim_until")),
            unclaimed_since=_dt(data.get("unclaimed_since")),
            model=_str(data.get("model")),
            trace_id=_str(data.get("trace_id")),
        )


@dataclass(frozen=True)
class RunEvent:
    seq: int
    type: str
    node_id: str
    payload: Any
    created_at: datetime | None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: JSON) -> RunEvent:
        return cls(
            seq=int(data.get("seq") or 0),
            type=_str(data.get("type")),
            node_id=_str(data.get("node_id")),
            payload=data.get("payload"),
            created_at=_dt(data.get("created_at")),
            raw=data,
        )


@dataclass(frozen=True)
class Approval:
    approval_id: str
    run_id: str
    status: str
    tool_name: str
    arguments: Any
    risk: str
    reason: str
    decided_by: str
    decided_at: datetime | None
    decision_reason: str
    approved_arguments: Any
    expires_at: datetime | None
    created_at: datetime | None
    first_approved_by: str = ""
    call_digest: str = ""
    run_version: int = 0
    allowed_decisions: tuple[str, ...] = ("approve", "reject")
    decision: str = ""
    response: str = ""
    # voided: by whom, when, why (reason code and words) and the evidence (e.g. a schema diff)
    voided_by: str = ""
    voided_at: datetime | None = None
    void_reason_code: str = ""
    void_reason: str = ""
    void_details: Any = None
    # The voided approval this one asks again.
    replaces_approval_id: str = ""
    # The tool's JSON Schema the runtime sent: edits (and a plain approve) must fit it.
    arguments_schema: Any = None
    # approved: how the call went when it ran, as its runtime reported it ("" until then)
    outcome: str = ""
    outcome_error: Any = None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_pending(self) -> bool:
        """Still waiting for a person, as the server read it: from its `expires_at` on the
        server says `expired` (whether or not its expiry sweep has run), so a pending
        approval is one that can still be decided."""
        return self.status == "pending"

    @classmethod
    def from_json(cls, data: JSON) -> Approval:
        return cls(
            approval_id=data["approval_id"],
            run_id=_str(data.get("run_id")),
            status=data.get("status", ""),
            tool_name=_str(data.get("tool_name")),
            arguments=data.get("arguments"),
            risk=_str(data.get("risk")),
            reason=_str(data.get("reason")),
            decided_by=_str(data.get("decided_by")),
            decided_at=_dt(data.get("decided_at")),
            decision_reason=_str(data.get("decision_reason")),
            approved_arguments=data.get("approved_arguments"),
            expires_at=_dt(data.get("expires_at")),
            created_at=_dt(data.get("created_at")),
            first_approved_by=_str(data.get("first_approved_by")),
            call_digest=_str(data.get("call_digest")),
            run_version=int(data.get("run_version") or 0),
            allowed_decisions=tuple(data.get("allowed_decisions") or ("approve", "reject")),
            decision=_str(data.get("decision")),
            response=_str(data.get("response")),
            voided_by=_str(data.get("voided_by")),
            voided_at=_dt(data.get("voided_at")),
            void_reason_code=_str(data.get("void_reason_code")),
            void_reason=_str(data.get("void_reason")),
            void_details=data.get("void_details"),
            replaces_approval_id=_str(data.get("replaces_approval_id")),
            arguments_schema=data.get("arguments_schema"),
            outcome=_str(data.get("outcome")),
            outcome_error=data.get("outcome_error"),
            raw=data,
        )


@dataclass(frozen=True)
class Effect:
    """A ledger record. `created` is False when the idempotency key was already recorded."""

    effect_id: str
    run_id: str
    idempotency_key: str
    tool_name: str
    request: Any
    status: str
    result: Any
    error: Any
    created_at: datetime | None
    updated_at: datetime | None
    created: bool = True
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: JSON, status: int = 200) -> Effect:
        return cls(
            effect_id=data["effect_id"],
            run_id=_str(data.get("run_id")),
            idempotency_key=_str(data.get("idempotency_key")),
            tool_name=_str(data.get("tool_name")),
            request=data.get("request"),
            status=data.get("status", ""),
            result=data.get("result"),
            error=data.get("error"),
            created_at=_dt(data.get("created_at")),
            updated_at=_dt(data.get("updated_at")),
            created=status == 201,
            raw=data,
        )


@dataclass(frozen=True)
class Task:
    """DurableTaskState (seed 000) plus `status` and `version`."""

    task_id: str
    objective: str
    constraints: list[str]
    plan_version: str
    completed_nodes: list[str]
    pending_nodes: list[str]
    pending_approvals: list[str]
    artifact_refs: list[str]
    external_effect_records: list[str]
    latest_checkpoint_id: str
    schema_version: int
    status: str
    version: int
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: JSON) -> Task:
        return cls(
            task_id=data["task_id"],
            objective=_str(data.get("objective")),
            constraints=list(data.get("constraints") or []),
            plan_version=_str(data.get("plan_version")),
            completed_nodes=list(data.get("completed_nodes") or []),
            pending_nodes=list(data.get("pending_nodes") or []),
            pending_approvals=list(data.get("pending_approvals") or []),
            artifact_refs=list(data.get("artifact_refs") or []),
            external_effect_records=list(data.get("external_effect_records") or []),
            latest_checkpoint_id=_str(data.get("latest_checkpoint_id")),
            schema_version=int(data.get("schema_version") or 1),
            status=data.get("status", ""),
            version=int(data.get("version") or 0),
            raw=data,
        )


@dataclass(frozen=True)
class CheckpointRef:
    checkpoint_id: str
    seq: int

    @classmethod
    def from_json(cls, data: JSON) -> CheckpointRef:
        return cls(checkpoint_id=data["checkpoint_id"], seq=int(data["seq"]))


@dataclass(frozen=True)
class Checkpoint:
    checkpoint_id: str
    seq: int
    task_id: str
    schema_version: int
    node_id: str
    state: Any
    created_at: datetime | None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: JSON) -> Checkpoint:
        return cls(
            checkpoint_id=data["checkpoint_id"],
            seq=int(data.get("seq") or 0),
            task_id=_str(data.get("task_id")),
            schema_version=int(data.get("schema_version") or 1),
            node_id=_str(data.get("node_id")),
            state=data.get("state"),
            created_at=_dt(data.get("created_at")),
            raw=data,
        )


@dataclass(frozen=True)
class Deletion:
    """A content deletion job (admin tokens): `status` queued, running, done, refused or failed;
    `receipt` (tables touched, rows, what was kept and why) once done."""

    deletion_id: str
    session_id: str
    status: str
    requested_by: str
    requested_at: datetime | None
    reason: str
    policy: str
    done: int
    total: int
    error: str | None
    receipt: JSON | None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: JSON) -> Deletion:
        progress = data.get("progress") or {}
        return cls(
            deletion_id=data["deletion_id"],
            session_id=_str(data.get("session_id")),
            status=data.get("status", ""),
            requested_by=_str(data.get("requested_by")),
            requested_at=_dt(data.get("requested_at")),
            reason=_str(data.get("reason")),
            policy=_str(data.get("policy")),
            done=int(progress.get("done") or 0),
            total=int(progress.get("total") or 0),
            error=data.get("error"),
            receipt=data.get("receipt"),
            raw=data,
        )


@dataclass(frozen=True)
class Erasure:
    """An erasure of a data subject (admin tokens): each session's deletion, the held ones."""

    erasure_id: str
    user_id: str
    status: str
    reason: str
    sessions: list[JSON]
    held: list[str]
    done: int
    total: int
    receipt: JSON | None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: JSON) -> Erasure:
        progress = data.get("progress") or {}
        return cls(
            erasure_id=data["erasure_id"],
            user_id=_str(data.get("user_id")),
            status=data.get("status", ""),
            reason=_str(data.get("reason")),
            sessions=list(data.get("sessions") or []),
            held=list(data.get("held") or []),
            done=int(progress.get("done") or 0),
            total=int(progress.get("total") or 0),
            receipt=data.get("receipt"),
            raw=data,
        )


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a keyset-paginated list; `next` is the absolute URL of the next page."""

    results: list[T]
    next: str | None

    def __iter__(self) -> Iterator[T]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    @classmethod
    def from_json(cls, data: Any, parse: Callable[[JSON], T]) -> Page[T]:
        if isinstance(data, list):  # a bare list is one complete page
            return cls(results=[parse(row) for row in data], next=None)
        return cls(results=[parse(row) for row in data.get("results", [])], next=data.get("next"))
