"""The runtime asks: `request` records an approval and the run moves to `waiting_approval`
in the same transaction.

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

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError

from runs_app.models import Run, RunStatus
from runs_app.store import RunStateStore
from stateroom.canonical import digest
from stateroom.errors import Conflict, ContentDeleted, Unprocessable
from stateroom.ids import new_public_id

from ..display import checked_display
from ..models import RISK_RANK, ApprovalRequest, ApprovalStatus, Risk
from ..notices import NOTICE_ASKED
from ..routing import Route, route
from ..schemas import check_schema
from .base import ApprovalBase, call_digest
from .validation import check_request, checked_decisions, clipped, presentation


@dataclass(frozen=True)
class Ask:
    """What a runtime asks, as it sent it (checked by `ApprovalRequests._checked`)."""

    tool_name: str
    arguments: dict[str, Any]
    risk: str
    reason: str
    expires_at: datetime | None
    approval_id: str | None
    allowed_decisions: list[str] | None
    summary: str
    key_arguments: list[str] | None
    usual_arguments: dict[str, Any] | None
    display: dict[str, Any] | None
    arguments_schema: dict[str, Any] | None


class ApprovalRequests(ApprovalBase):
    """`request`: validate, move the run, write the approval, audit it."""

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
        What is checked and refused: this module's docstring."""
        ask = Ask(
            tool_name=tool_name,
            arguments=arguments,
            risk=risk,
            reason=reason,
            expires_at=expires_at,
            approval_id=approval_id,
            allowed_decisions=allowed_decisions,
            summary=summary,
            key_arguments=key_arguments,
            usual_arguments=usual_arguments,
            display=display,
            arguments_schema=arguments_schema,
        )
        now = self.now()
        with self.atomic():
            run = self.get_run(run_id)
            fields = self._checked(run, expected_version, ask, now)
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
            routed = self._route(run, fields, now)
            approval = self._write_request(
                approval_id, moved, replaces, fields | routed.fields, now
            )
            self._audit_request(approval, moved, replaces, ask)
            if routed.asks_someone:
                self._notice(approval, NOTICE_ASKED)
        return approval

    def _route(self, run: Run, fields: dict[str, Any], now: datetime) -> Route:
        """Who is asked (approvals_app.routing): the first rule that matches, or the default."""
        return route(
            self.tenant,
            tool_name=fields["tool_name"],
            risk=fields["risk"],
            session_metadata=run.session.metadata if run.session is not None else None,
            asked_at=now,
            expires_at=fields["expires_at"],
        )

    def _checked(self, run: Run, expected_version: int, ask: Ask, now: datetime) -> dict[str, Any]:
        """The approval's fields from what was asked; 409 or 422 (nothing written) if it cannot be."""
        if run.content_fenced_at is not None:
            raise ContentDeleted("run", run_id=run.run_id)
        check_request(
            tool_name=ask.tool_name,
            arguments=ask.arguments,
            risk=ask.risk,
            reason=ask.reason,
            expires_at=ask.expires_at,
            approval_id=ask.approval_id,
            now=now,
        )
        allowed = checked_decisions(ask.allowed_decisions)
        summary, key_arguments = presentation(ask.summary, ask.key_arguments, ask.usual_arguments)
        if ask.arguments_schema is not None:
            check_schema(ask.arguments_schema, ask.arguments)
        display = checked_display(ask.display, ask.arguments)
        if run.version == expected_version and not run.is_terminal and run.pending_approval_id:
            raise Conflict(
                "The run already waits on an approval.",
                code="approval_pending",
                details={"pending_approval_id": run.pending_approval_id},
            )
        return {
            "tool_name": ask.tool_name,
            "arguments": ask.arguments,
            "risk": ask.risk,
            "reason": ask.reason or "",
            "allowed_decisions": allowed,
            "summary": summary,
            "key_arguments": key_arguments,
            "usual_arguments": ask.usual_arguments,
            "arguments_schema": ask.arguments_schema,
            "display": display,
            "expires_at": ask.expires_at,
        }

    def _write_request(
        self,
        approval_id: str,
        moved: Run,
        replaces: ApprovalRequest | None,
        fields: dict[str, Any],
        now: datetime,
    ) -> ApprovalRequest:
        """The approval's row, pending on the run's version after its move (409 `approval_exists`)."""
        token_id = int(self.actor.id) if self.actor.kind == "token" else None
        arguments = fields["arguments"]
        try:
            with self.atomic():
                return ApprovalRequest.objects.create(
                    tenant=self.tenant,
                    approval_id=approval_id,
                    run=moved,
                    call_digest=call_digest(fields["tool_name"], arguments),
                    run_version=moved.version,
                    risk_rank=RISK_RANK[Risk(fields["risk"])],
                    argument_order=[clipped("argument_order", str(key)) for key in arguments],
                    status=ApprovalStatus.PENDING,
                    created_at=now,
                    requested_by_token_id=token_id,
                    replaces=replaces,
                    **fields,
                )
        except IntegrityError as exc:
            raise Conflict("An approval with this id exists.", code="approval_exists") from exc

    def _audit_request(
        self, approval: ApprovalRequest, moved: Run, replaces: ApprovalRequest | None, ask: Ask
    ) -> None:
        self.audit(
            "approval.requested",
            target_type="approval",
            target_id=approval.approval_id,
            after={
                "run_id": moved.run_id,
                "tool_name": ask.tool_name,
                "risk": ask.risk,
                "call_digest": approval.call_digest,
                "run_version": moved.version,
                "allowed_decisions": approval.allowed_decisions,
                **(
                    {
                        "assigned_user_ids": approval.assigned_user_ids,
                        "assigned_group_ids": approval.assigned_group_ids,
                        "route_rule": approval.route_rule.name,
                    }
                    if approval.route_rule is not None
                    else {}
                ),
                **({"replaces": replaces.approval_id} if replaces else {}),
                **(
                    {"arguments_schema_digest": digest(ask.arguments_schema)}
                    if ask.arguments_schema is not None
                    else {}
                ),
            },
            # The runtime's reason is its own text: a detached payload, not the log.
            content={"reason": ask.reason},
        )

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
