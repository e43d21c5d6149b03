"""Runtime API for approvals (API.md "Approvals").

Each view looks its run or approval up first (an unknown or other tenant's id
is 404 whatever the body), then validates the body, then makes one store call.
`GET /approvals/{id}?wait=N` is a long-poll that holds no transaction and no
database connection while it waits.
"""

import time

from django.conf import settings
from django.db import connection
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.decorators import api_view, permission_classes
from rest_framework.response import Response

from audit_app.actor import Actor
from stateroom.api import EmptyAsNullCharField, keyset_page
from stateroom.api_schema import ERRORS_LIST, ERRORS_READ, ERRORS_STATEFUL, error
from stateroom.errors import Unprocessable
from tenancy_app.auth import IsOperatorToken
from tenancy_app.middleware import non_atomic_tenant_view
from tenancy_app.scoping import tenant_transaction

from .models import ApprovalRequest, ApprovalStatus, Decision, Risk
from .store import ApprovalStore

# Long-poll re-check interval: starts short so a decision shows up fast, grows to 1 s.
POLL_FIRST_DELAY = 0.1
POLL_MAX_DELAY = 1.0


def _store(request) -> ApprovalStore:
    return ApprovalStore(request.tenant, Actor.from_request(request))


# --- serializers ------------------------------------------------------------
class ApprovalSerializer(serializers.Serializer):
    """An approval as the runtime sees it (GET, lists, decisions, webhooks)."""

    approval_id = serializers.CharField()
    run_id = serializers.CharField(source="run.run_id")
    status = serializers.ChoiceField(choices=ApprovalStatus.choices)
    tool_name = serializers.CharField()
    arguments = serializers.DictField()
    risk = serializers.ChoiceField(choices=Risk.choices)
    reason = serializers.CharField(help_text="Why the runtime asked")
    allowed_decisions = serializers.ListField(
        child=serializers.ChoiceField(choices=Decision.choices),
        help_text="The decisions the runtime declared it can honour",
    )
    call_digest = serializers.CharField(
        help_text='sha256 hex of canonical JSON `[tool_name, arguments]` (sorted keys, ",", ":")'
    )
    run_version = serializers.IntegerField(
        help_text="The run's version when it started waiting on this approval"
    )
    decided_by = EmptyAsNullCharField()
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_reason = EmptyAsNullCharField(help_text="Why it was approved, rejected or cancelled")
    decision = serializers.ChoiceField(
        choices=Decision.choices,
        allow_null=True,
        source="decision_or_none",
        help_text="approve or edit (status approved), reject or respond (status rejected)",
    )
    approved_arguments = serializers.DictField(
        allow_null=True, help_text="edit: the arguments to run instead; null otherwise"
    )
    response = EmptyAsNullCharField(
        help_text="respond: the operator's text, to give the model as the tool's result"
    )
    first_approved_by = EmptyAsNullCharField(
        help_text="Four-eyes: the first of two approvers of a critical call"
    )
    expires_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()


class ApprovalRequestIn(serializers.Serializer):
    expected_version = serializers.IntegerField(min_value=1)
    tool_name = serializers.CharField(max_length=200)
    arguments = serializers.DictField()
    risk = serializers.ChoiceField(choices=Risk.choices)
    reason = serializers.CharField(required=False, allow_blank=True, default="")
    expires_at = serializers.DateTimeField(required=False, allow_null=True)
    approval_id = serializers.RegexField(r"^[A-Za-z0-9._:-]{1,128}$", required=False)
    allowed_decisions = serializers.ListField(
        child=serializers.ChoiceField(choices=Decision.choices),
        required=False,
        allow_empty=False,
        help_text="What the runtime can honour (default approve, reject)",
    )


class ApprovalCancelIn(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class ApprovalDecisionIn(serializers.Serializer):
    decision = serializers.ChoiceField(
        choices=Decision.choices, help_text="Only one of the approval's allowed_decisions"
    )
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="Required to reject, and for any decision on high or critical risk",
    )
    approved_arguments = serializers.DictField(
        required=False, allow_null=True, help_text="edit: run these arguments instead"
    )
    response = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=20_000,
        help_text="respond: the text the model gets as the tool's result",
    )
    expected_digest = serializers.CharField(
        required=False, help_text="Decide only if the call still has this call_digest"
    )
    expected_run_version = serializers.IntegerField(
        required=False, help_text="Decide only if the run is still at this version"
    )


ApprovalPage = inline_serializer(
    "ApprovalPage",
    {"results": ApprovalSerializer(many=True), "next": serializers.URLField(allow_null=True)},
)


def approval_data(approval: ApprovalRequest) -> dict:
    return ApprovalSerializer(approval).data


# --- views --------------------------------------------------------------------
@extend_schema(
    operation_id="runs_approvals_create",
    summary="Ask a person to approve a tool call; the run waits",
    request=ApprovalRequestIn,
    responses={
        201: OpenApiResponse(
            ApprovalSerializer,
            description="The approval, pending; the run is now waiting_approval at version + 1",
        ),
        **ERRORS_STATEFUL,
        409: error(
            "version_conflict (details.current_version); invalid_transition: the run cannot "
            "wait from its status; approval_pending: it already waits on an approval; "
            "approval_exists: duplicate approval_id"
        ),
    },
    description=(
        "The run moves to `waiting_approval` with `pending_approval_id` set in the same "
        "transaction as the approval is created."
    ),
)
@api_view(["POST"])
def run_approvals(request, run_id: str):
    _store(request).get_run(run_id)
    body = ApprovalRequestIn(data=request.data)
    body.is_valid(raise_exception=True)
    approval = _store(request).request(run_id=run_id, **body.validated_data)
    return Response(approval_data(approval), status=201)


@extend_schema(
    operation_id="approvals_list",
    summary="Approvals of this tenant, newest first",
    parameters=[
        OpenApiParameter("status", str, enum=ApprovalStatus.values),
        OpenApiParameter("run_id", str),
        OpenApiParameter("limit", int, description="Page size, 1-500 (default 50)"),
        OpenApiParameter("cursor", int, description="From the `next` URL of the previous page"),
    ],
    responses={200: ApprovalPage, **ERRORS_LIST},
)
@api_view(["GET"])
def approval_list(request):
    params = request.query_params
    queryset = _store(request).list_approvals(
        status=params.get("status") or None, run_id=params.get("run_id") or None
    )
    return keyset_page(request, queryset, approval_data)


def _parse_wait(request) -> float:
    raw = request.query_params.get("wait")
    if raw is None or raw == "":
        return 0
    limit = settings.STATEROOM_LONG_POLL_MAX_SECONDS
    try:
        wait = int(raw)
    except ValueError:
        wait = -1
    if not 0 <= wait <= limit:
        raise Unprocessable(
            f"wait must be an integer from 0 to {limit}.",
            details={"wait": [f"must be an integer from 0 to {limit}"]},
        )
    return wait


@extend_schema(
    operation_id="approvals_retrieve",
    summary="An approval; with wait=N, long-poll until it is no longer pending",
    parameters=[
        OpenApiParameter(
            "wait",
            int,
            description=(
                "Seconds (0-30) to wait for a decision: returns as soon as the approval is no "
                "longer pending, or at the timeout with it still pending"
            ),
        )
    ],
    responses={
        200: ApprovalSerializer,
        **ERRORS_READ,
        422: error("wait is not an integer from 0 to 30"),
    },
)
@non_atomic_tenant_view
@api_view(["GET"])
def approval_detail(request, approval_id: str):
    # No request transaction here (non_atomic_tenant_view): each check is a
    # short tenant transaction, and the connection is given back between checks.
    store = _store(request)
    tenant_id = request.tenant.pk
    with tenant_transaction(tenant_id):
        data = approval_data(store.get(approval_id))
    deadline = time.monotonic() + _parse_wait(request)
    delay = POLL_FIRST_DELAY
    while data["status"] == ApprovalStatus.PENDING:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        if not connection.in_atomic_block:
            connection.close()
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, POLL_MAX_DELAY)
        with tenant_transaction(tenant_id):
            data = approval_data(store.get(approval_id))
    return Response(data)


@extend_schema(
    operation_id="approvals_cancel",
    summary="The runtime that asked withdraws its request; the run goes back to running",
    request=ApprovalCancelIn,
    responses={
        200: ApprovalSerializer,
        **ERRORS_STATEFUL,
        403: error("not_requester: another runtime token asked for this approval"),
        409: error("already_decided (details.decided_by, decided_at, status)"),
    },
)
@api_view(["POST"])
def approval_cancel(request, approval_id: str):
    store = _store(request)
    store.get(approval_id)
    body = ApprovalCancelIn(data=request.data)
    body.is_valid(raise_exception=True)
    return Response(approval_data(store.cancel(approval_id=approval_id, **body.validated_data)))


@extend_schema(
    operation_id="approvals_decide",
    summary="Approve, edit, reject or respond (operator tokens only); decided exactly once",
    request=ApprovalDecisionIn,
    responses={
        200: OpenApiResponse(
            ApprovalSerializer,
            description=(
                "The decided approval; for a critical call under the four-eyes rule, the "
                "first approval returns it still pending with first_approved_by set"
            ),
        ),
        **ERRORS_STATEFUL,
        403: error("The token does not have the operator role"),
        409: error(
            "already_decided (details.decided_by, decided_at, status); approval_expired; "
            "call_changed (details of what changed); second_approver_required"
        ),
        422: error(
            "decision_not_allowed: the runtime did not declare it can honour this decision; "
            "validation_error, e.g. a reason is required to reject"
        ),
    },
)
@api_view(["POST"])
@permission_classes([IsOperatorToken])
def approval_decision(request, approval_id: str):
    store = _store(request)
    store.get(approval_id)
    body = ApprovalDecisionIn(data=request.data)
    body.is_valid(raise_exception=True)
    approval = store.decide(approval_id=approval_id, **body.validated_data)
    return Response(approval_data(approval))
