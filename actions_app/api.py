"""Runtime API calls that span domains: the run transition, which may end a run, and the
void of an approval, which asks the effect ledger whether its call ran.

The run is looked up first (an unknown or other tenant's id is 404 whatever
the body), then the body is validated (runs_app.api's serializer), then one
action runs.
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.response import Response

from approvals_app.api import ApprovalSerializer, ApprovalVoidIn, approval_data
from runs_app.api import RunEventIn, RunOut, RunTransitionIn, run_data
from runs_app.models import Run
from runs_app.store import MAX_EVENTS_PER_APPEND
from stateroom.actor import Actor
from stateroom.api import validated
from stateroom.api_schema import ERRORS_STATEFUL, error
from stateroom.contract import (
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    worker_field,
)
from stateroom.errors import Forbidden
from stateroom.leases import DEFAULT_CLAIM_LEASE_SECONDS, MAX_CLAIM_LEASE_SECONDS
from stateroom.reasons import MAX_REASON_LENGTH
from stateroom.tracing import request_trace_id
from tenancy_app.auth import token_has_role
from tenancy_app.models import TokenRole

from .approvals import ApprovalActions
from .runs import RunActions


@extend_schema(
    operation_id="runs_transition",
    summary="Compare-and-set: change the run if it is still at expected_version",
    request=RunTransitionIn,
    responses={
        200: OpenApiResponse(RunOut, description="The run at version + 1"),
        **ERRORS_STATEFUL,
        409: error(
            "version_conflict (details.current_version): the run changed since it was read; "
            "invalid_transition (details.from, details.to): the status change is not allowed "
            "or the run has finished; run_claimed (details.claimed_by): another worker's claim "
            "is live; content_deleted"
        ),
    },
    description=(
        "Exactly one of several writers with the same expected_version wins; the others get "
        "409 version_conflict with the current version. Fields left out stay as they are. "
        "A run that ends (succeeded, failed, cancelled) waits on nothing: its pending "
        "approval is cancelled in the same transaction. While a worker's claim is live, "
        "only that worker may write (worker). A run that goes to waiting_approval, suspended "
        "or an end is held by nobody; one that succeeds without an error carries none."
    ),
)
@api_view(["POST"])
def run_transition(request, run_id: str):
    actions = RunActions(request.tenant, Actor.from_request(request))
    changes = validated(RunTransitionIn, request, lookup=lambda: actions.runs.get(run_id))
    expected_version = changes.pop("expected_version")
    worker = changes.pop("worker", None)
    run = actions.compare_and_set(
        run_id=run_id,
        expected_version=expected_version,
        changes=changes,
        worker=worker,
        trace_id=request_trace_id(request),
    )
    return Response(run_data(run))


class RunStepClaimIn(StrictSerializer):
    lease_seconds = StrictIntegerField(
        min_value=1,
        max_value=MAX_CLAIM_LEASE_SECONDS,
        required=False,
        help_text=f"How long the claim lasts unless renewed (default {DEFAULT_CLAIM_LEASE_SECONDS})",
    )


class RunStepTransitionIn(RunTransitionIn):
    """The transition's changes; its version and worker are the step's."""

    expected_version = None
    worker = None


class RunStepIn(StrictSerializer):
    expected_version = StrictIntegerField(
        min_value=1, help_text="The run's version before the step"
    )
    worker = worker_field(help_text="The claiming worker; required with `claim`")
    claim = RunStepClaimIn(required=False, help_text="Claim (or renew) first")
    events = RunEventIn(
        many=True,
        required=False,
        allow_empty=False,
        max_length=MAX_EVENTS_PER_APPEND,
        help_text="Appended after the claim, before the transition",
    )
    transition = RunStepTransitionIn(
        required=False, help_text="Compare-and-set last, at the version the claim left"
    )

    def validate(self, attrs):
        if "claim" not in attrs and "transition" not in attrs:
            raise serializers.ValidationError(
                {"transition": ["A step claims the run, transitions it, or both."]}
            )
        if "claim" in attrs and not attrs.get("worker"):
            raise serializers.ValidationError({"worker": ["Required with claim."]})
        return attrs


RunStepOut = inline_serializer(
    "RunStepOut",
    {
        "run": RunOut(),
        "events": inline_serializer(
            "RunStepEvents",
            {"first_seq": serializers.IntegerField(), "last_seq": serializers.IntegerField()},
            allow_null=True,
        ),
    },
)


@extend_schema(
    operation_id="runs_step",
    summary="Claim, append events and transition the run in one transaction",
    request=RunStepIn,
    responses={
        200: OpenApiResponse(RunStepOut, description="The run after the step, and its events"),
        **ERRORS_STATEFUL,
        409: error(
            "As the separate calls: run_claimed (details.claimed_by), version_conflict "
            "(details.current_version), invalid_transition, run_terminal, content_deleted"
        ),
    },
    description=(
        "What a runtime otherwise sends as two to three calls in a row (`claim`, `events`, "
        "`transition`), as one request and one transaction, in that order: the claim at "
        "expected_version (version + 1), the events (which leave the version as it is), "
        "then the compare-and-set at the version the claim left. Each part keeps the rules "
        "and audit of its own endpoint; a refusal of any part writes nothing at all and is "
        "answered as that part's endpoint answers it. `claim`, `transition` or both."
    ),
)
@api_view(["POST"])
def run_step(request, run_id: str):
    actions = RunActions(request.tenant, Actor.from_request(request))
    data = validated(RunStepIn, request, lookup=lambda: actions.runs.get(run_id))
    claim = data.get("claim")
    changes = data.get("transition")
    run, events = actions.step(
        run_id=run_id,
        expected_version=data["expected_version"],
        worker=data.get("worker"),
        claim_lease=None
        if claim is None
        else claim.get("lease_seconds") or DEFAULT_CLAIM_LEASE_SECONDS,
        events=data.get("events"),
        changes=None if changes is None else dict(changes),
    )
    appended = {"first_seq": events[0].seq, "last_seq": events[-1].seq} if events else None
    return Response({"run": run_data(run), "events": appended})


@extend_schema(
    operation_id="approvals_void",
    summary="The runtime that asked voids an approval it can no longer honour",
    request=ApprovalVoidIn,
    responses={
        200: OpenApiResponse(ApprovalSerializer, description="The approval, now voided"),
        **ERRORS_STATEFUL,
        403: error("not_requester: another runtime token asked for this approval"),
        409: error(
            "already_decided (details.status, decided_by, decided_at): rejected, expired, "
            "cancelled or voided; effect_recorded (details.effect_id, effect_status): an "
            "effect is recorded under the approval, so its call ran or may have; "
            "run_claimed (details.claimed_by, claim_until): another worker's claim on the "
            "run is live; content_deleted"
        ),
        422: error(
            "validation_error: unknown reason_code, no reason, details not a JSON "
            "object or too large"
        ),
    },
    description=(
        "For an approval that is `pending`, or `approved` but whose call has not run (no "
        "effect recorded under it): it ends `voided` with `voided_by`, `voided_at`, "
        "`void_reason_code`, `void_reason` and `void_details`; the decision fields stay as "
        "they were. A pending one's run stops waiting and goes back to `running`, as for a "
        "cancellation: the runtime asks again, naming the voided approval in "
        "`replaces_approval_id`. Audited `approval.voided`; the requesting token's webhook "
        "hears of it."
    ),
)
@api_view(["POST"])
def approval_void(request, approval_id: str):
    actions = ApprovalActions(request.tenant, Actor.from_request(request))
    data = validated(ApprovalVoidIn, request, lookup=lambda: actions.approvals.get(approval_id))
    approval = actions.void(approval_id=approval_id, **data)
    return Response(approval_data(approval))


# --- run control: cancel, suspend, resume (README "Run control"), as the console's ------


class RunControlIn(StrictSerializer):
    reason = StrictCharField(
        max_length=MAX_REASON_LENGTH,
        help_text="Why (audited; shown on the run's page and in its history)",
    )
    expected_version = StrictIntegerField(
        min_value=1,
        required=False,
        help_text="The version the caller saw: if the run moved since, 409 version_conflict "
        "and nothing changes",
    )


_CONTROL_ERRORS = {
    **ERRORS_STATEFUL,
    422: error(
        "validation_error: no reason, a reason over the limit or with text PostgreSQL cannot "
        "keep (NUL, a lone surrogate), expected_version not a positive integer; unknown_field"
    ),
}


def _may_control(request, run: Run, action: str) -> None:
    """403 `operator_required` unless the token is an operator's or an admin's, or, for a
    cancel, the runtime token that created the run (as a runtime may end its own work)."""
    if token_has_role(request, TokenRole.OPERATOR):
        return
    token = getattr(request, "runtime_token", None)
    if action == "cancel" and token is not None and run.created_by_token_id == token.pk:
        return
    raise Forbidden(
        "This call needs a token with the operator (or admin) role"
        + (", or the runtime token that created the run." if action == "cancel" else "."),
        code="operator_required",
    )


def _control(request, run_id: str, action: str) -> Response:
    """Look the run up (404), check the role (403), validate the body (422), then the same
    `RunActions` call as the console's run control: audited, the runtime told."""
    actions = RunActions(request.tenant, Actor.from_request(request))
    run = actions.runs.get(run_id)
    _may_control(request, run, action)
    data = validated(RunControlIn, request, lookup=lambda: None)
    changed = actions.control(action=action, run_id=run_id, **data)
    return Response(run_data(changed))


def _control_schema(
    action: str, audited: str, *, summary: str, roles: str, result: str, conflict: str
):
    return extend_schema(
        operation_id=f"runs_{action}",
        summary=summary,
        request=RunControlIn,
        responses={
            200: OpenApiResponse(RunOut, description=result),
            **_CONTROL_ERRORS,
            403: error(f"operator_required: {roles}"),
            409: error(
                f"invalid_transition (details.from, details.to, current_version): {conflict}; "
                "version_conflict (details.current_version, expected_version, status): the run "
                "moved since expected_version"
            ),
        },
        description=(
            "The console's run control, by API: one audited compare-and-set "
            f"(`{audited}`, with the reason), whatever worker holds the run "
            "(its claim is dropped). The runtime that created the run hears of it by webhook. "
            "The reason shows on the run's page and in its history."
        ),
    )


@_control_schema(
    "cancel",
    "run.cancelled",
    summary="Cancel a run for good; an approval it waits on is withdrawn",
    roles="the token is neither an operator's or an admin's nor the runtime token that "
    "created the run",
    result="The run, now cancelled, at version + 1",
    conflict="the run has finished",
)
@api_view(["POST"])
def run_cancel(request, run_id: str):
    return _control(request, run_id, "cancel")


@_control_schema(
    "suspend",
    "run.suspended",
    summary="Pause a running or waiting run; an approval it waits on is withdrawn",
    roles="the token is not an operator's or an admin's",
    result="The run, now suspended, at version + 1",
    conflict="the run is not running or waiting_approval, or has finished",
)
@api_view(["POST"])
def run_suspend(request, run_id: str):
    return _control(request, run_id, "suspend")


@_control_schema(
    "resume",
    "run.resumed",
    summary="Hand a suspended run back to its runtime (running, claimed by nobody)",
    roles="the token is not an operator's or an admin's",
    result="The run, now resumed (running), at version + 1",
    conflict="the run is not suspended, or has finished",
)
@api_view(["POST"])
def run_resume(request, run_id: str):
    return _control(request, run_id, "resume")
