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
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.decorators import api_view, permission_classes
from rest_framework.response import Response

from stateroom.actor import Actor
from stateroom.api import (
    DEFAULT_LIMIT,
    EmptyAsNullCharField,
    keyset_page,
    not_found_first,
    validated,
)
from stateroom.api_schema import ERRORS_LIST, ERRORS_READ, ERRORS_STATEFUL, error
from stateroom.contract import (
    PageQuery,
    PublicIdField,
    QuerySerializer,
    StrictCharField,
    StrictChoiceField,
    StrictDateTimeField,
    StrictDictField,
    StrictIntegerField,
    StrictSerializer,
    query,
    worker_field,
)
from stateroom.ids import MAX_PUBLIC_ID_LENGTH
from tenancy_app.auth import IsOperatorToken
from tenancy_app.middleware import non_atomic_tenant_view
from tenancy_app.scoping import tenant_transaction

from .display import DEFAULT_MINOR_UNITS, MAX_AMOUNTS, MAX_MINOR_UNITS
from .models import ApprovalRequest, ApprovalStatus, Decision, Risk, ToolOutcome, VoidReason
from .schemas import MAX_SCHEMA_BYTES
from .store import (
    MAX_ARGUMENT_NAME_LENGTH,
    MAX_DECISION_REASON_LENGTH,
    MAX_KEY_ARGUMENTS,
    MAX_OUTCOME_ERROR_BYTES,
    MAX_OUTCOME_ERROR_MESSAGE_LENGTH,
    MAX_RESPONSE_LENGTH,
    MAX_SUMMARY_LENGTH,
    MAX_TOOL_NAME_LENGTH,
    MAX_VOID_DETAILS_BYTES,
    MAX_VOID_REASON_LENGTH,
    ApprovalStore,
)

# Long-poll re-check interval: starts short so a decision shows up fast, grows to 1 s.
POLL_FIRST_DELAY = 0.1
POLL_MAX_DELAY = 1.0
# Re-read this long after `expires_at`, so the clock the read compares with has passed it.
EXPIRY_MARGIN = 0.01


def _store(request) -> ApprovalStore:
    return ApprovalStore(request.tenant, Actor.from_request(request))


# --- serializers ------------------------------------------------------------
class AmountHint(StrictSerializer):
    argument = StrictCharField(
        max_length=MAX_ARGUMENT_NAME_LENGTH,
        help_text="The argument holding the amount, an integer count of minor units (cents)",
    )
    currency = StrictCharField(
        min_length=3, max_length=3, help_text="ISO 4217 code, upper case, e.g. EUR"
    )
    minor_units = StrictIntegerField(
        required=False,
        min_value=0,
        max_value=MAX_MINOR_UNITS,
        help_text=f"Digits after the decimal point (default {DEFAULT_MINOR_UNITS}; JPY 0)",
    )


class DisplayHint(StrictSerializer):
    """How the console shows the call; it changes nothing else (not the call digest)."""

    amounts = serializers.ListField(
        child=AmountHint(),
        max_length=MAX_AMOUNTS,
        help_text=f"Up to {MAX_AMOUNTS} arguments that are amounts of money: the console "
        "shows `230000` with EUR and 2 minor units as `EUR 2,300.00`",
    )


class Assignees(serializers.Serializer):
    user_ids = serializers.ListField(child=serializers.IntegerField(), source="assigned_user_ids")
    group_ids = serializers.ListField(child=serializers.IntegerField(), source="assigned_group_ids")


class ApprovalSerializer(serializers.Serializer):
    """An approval as the runtime sees it (GET, lists, decisions, webhooks)."""

    approval_id = serializers.CharField()
    run_id = serializers.CharField(source="run.run_id")
    status = serializers.ChoiceField(
        choices=ApprovalStatus.choices,
        help_text=(
            "approved: the call runs (as asked, or edited); rejected: it does not, the model "
            "gets the reason; responded: it does not, the model gets the operator's response; "
            "expired from expires_at on, whether or not the expiry sweep has run"
        ),
    )
    tool_name = serializers.CharField()
    arguments = serializers.DictField()
    risk = serializers.ChoiceField(choices=Risk.choices)
    reason = serializers.CharField(help_text="Why the runtime asked")
    summary = serializers.CharField(help_text="The runtime's one-line summary of the call")
    key_arguments = serializers.ListField(
        child=serializers.CharField(), help_text="The argument names the inbox shows first"
    )
    usual_arguments = serializers.DictField(
        allow_null=True, help_text="The tool's usual call, if the runtime gave one"
    )
    display = DisplayHint(allow_null=True, help_text="The runtime's display hint, if any")
    allowed_decisions = serializers.ListField(
        child=serializers.ChoiceField(choices=Decision.choices),
        help_text="The decisions the runtime declared it can honour",
    )
    arguments_schema = serializers.DictField(
        allow_null=True,
        help_text="The tool's JSON Schema for its arguments, if the runtime sent one",
    )
    call_digest = serializers.CharField(
        help_text=(
            "sha256 hex of the RFC 8785 canonical JSON (JCS) of `[tool_name, arguments]`: "
            "keys sorted by UTF-16 code units, no whitespace, UTF-8, numbers as ECMAScript "
            "prints them"
        )
    )
    run_version = serializers.IntegerField(
        help_text="The run's version when it started waiting on this approval"
    )
    decided_by = EmptyAsNullCharField()
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_reason = EmptyAsNullCharField(
        help_text="Why it was approved, rejected, responded to or cancelled"
    )
    decision = serializers.ChoiceField(
        choices=Decision.choices,
        allow_null=True,
        source="decision_or_none",
        help_text="approve or edit (status approved), reject (rejected), respond (responded)",
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
    first_approval_reason = EmptyAsNullCharField(help_text="Four-eyes: the first approver's reason")
    expires_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    voided_by = EmptyAsNullCharField(help_text="voided: the runtime token that voided it")
    voided_at = serializers.DateTimeField(allow_null=True)
    void_reason_code = serializers.ChoiceField(
        choices=VoidReason.choices,
        allow_null=True,
        source="void_code_or_none",
        help_text="voided: why (tool_changed: the tool's schema changed since this was asked)",
    )
    void_reason = EmptyAsNullCharField(help_text="voided: the runtime's own words")
    void_details = serializers.DictField(
        allow_null=True, help_text="voided: the runtime's evidence, e.g. {tool, old, new} schemas"
    )
    replaces_approval_id = serializers.CharField(
        allow_null=True,
        source="replaces_public_id",
        help_text="The voided approval this one asks again, if any",
    )
    outcome = serializers.ChoiceField(
        choices=ToolOutcome.choices,
        allow_null=True,
        source="outcome_or_none",
        help_text=(
            "approved: how the call went when it ran, as its runtime reported it "
            "(POST /approvals/{id}/outcome); null until reported"
        ),
    )
    outcome_error = serializers.DictField(
        allow_null=True, help_text="outcome failed: the tool's error {message, type?}"
    )
    outcome_at = serializers.DateTimeField(allow_null=True)
    assignees = Assignees(
        source="*",
        help_text=(
            "Who is asked to decide: the tenant's members and member groups (ids) its routing "
            "rule named when it was asked, or an operator since (reassigned, taken, escalated); "
            "both empty: anyone of the tenant's operators"
        ),
    )
    route_rule = serializers.CharField(
        source="route_rule.name",
        allow_null=True,
        help_text="The name of the routing rule that chose them (null: none matched)",
    )


class ApprovalRequestIn(StrictSerializer):
    expected_version = StrictIntegerField(min_value=1)
    tool_name = StrictCharField(max_length=MAX_TOOL_NAME_LENGTH)
    arguments = StrictDictField()
    risk = StrictChoiceField(choices=Risk.choices)
    reason = StrictCharField(required=False, allow_blank=True, default="")
    expires_at = StrictDateTimeField(
        required=False, allow_null=True, help_text="With an offset; must lie in the future"
    )
    approval_id = PublicIdField(required=False, help_text="Generated if omitted")
    summary = StrictCharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_SUMMARY_LENGTH,
        help_text="One line the inbox shows for the call, e.g. 'Refund $1,200 to acct-9'",
    )
    key_arguments = serializers.ListField(
        child=StrictCharField(max_length=MAX_ARGUMENT_NAME_LENGTH),
        required=False,
        max_length=MAX_KEY_ARGUMENTS,
        help_text=f"Up to {MAX_KEY_ARGUMENTS} argument names that matter; the inbox shows their values "
        "(default: the first scalar arguments)",
    )
    usual_arguments = StrictDictField(
        required=False,
        allow_null=True,
        help_text="The tool's usual call; the console marks the arguments that differ from it",
    )
    display = DisplayHint(
        required=False,
        help_text="How the console shows the call: which arguments are amounts of money. "
        "Each named argument must be an integer of the call (422 otherwise)",
    )
    allowed_decisions = serializers.ListField(
        child=StrictChoiceField(choices=Decision.choices),
        required=False,
        allow_empty=False,
        help_text="What the runtime can honour (default approve, reject)",
    )
    replaces_approval_id = StrictCharField(
        required=False,
        max_length=MAX_PUBLIC_ID_LENGTH,
        help_text="The voided approval of this run that this one asks again",
    )
    arguments_schema = StrictDictField(
        required=False,
        allow_null=True,
        help_text=(
            "The tool's JSON Schema for its arguments (Draft 2020-12 unless `$schema` names "
            f"another; at most {MAX_SCHEMA_BYTES} bytes; no remote `$ref`). An edit must fit "
            "it, and so must the arguments for a plain approve: arguments that do not can "
            "only be edited to fit, or rejected"
        ),
    )
    worker = worker_field()


class ApprovalCancelIn(StrictSerializer):
    reason = StrictCharField(required=False, allow_blank=True, default="")
    worker = worker_field()


class ApprovalVoidIn(StrictSerializer):
    reason_code = StrictChoiceField(
        choices=VoidReason.choices,
        help_text="tool_changed: the tool's schema changed since the approval was asked",
    )
    reason = StrictCharField(
        max_length=MAX_VOID_REASON_LENGTH, help_text="Why the runtime can no longer honour it"
    )
    details = StrictDictField(
        required=False,
        allow_null=True,
        help_text=(
            "Evidence, e.g. the schema diff {tool, old, new}; "
            f"at most {MAX_VOID_DETAILS_BYTES} bytes of JSON"
        ),
    )
    worker = worker_field()


class ApprovalOutcomeIn(StrictSerializer):
    outcome = StrictChoiceField(
        choices=ToolOutcome.choices, help_text="How the approved call went when it ran"
    )
    error = StrictDictField(
        required=False,
        allow_null=True,
        help_text=(
            "failed (required): the tool's error, {message, type?}; message at most "
            f"{MAX_OUTCOME_ERROR_MESSAGE_LENGTH} characters, all at most "
            f"{MAX_OUTCOME_ERROR_BYTES} bytes of JSON"
        ),
    )
    worker = worker_field()


class ApprovalDecisionIn(StrictSerializer):
    decision = StrictChoiceField(
        choices=Decision.choices, help_text="Only one of the approval's allowed_decisions"
    )
    reason = StrictCharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_DECISION_REASON_LENGTH,
        help_text="Required to reject, and for any decision on high or critical risk",
    )
    approved_arguments = StrictDictField(
        required=False, allow_null=True, help_text="edit: run these arguments instead"
    )
    response = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=MAX_RESPONSE_LENGTH,
        help_text="respond: the text the model gets as the tool's result",
    )
    expected_digest = StrictCharField(
        required=False, help_text="Decide only if the call still has this call_digest"
    )
    expected_run_version = StrictIntegerField(
        required=False, help_text="Decide only if the run is still at this version"
    )


class ApprovalListQuery(PageQuery):
    # run_id is checked here only: the store finds nothing for an id no run can have.
    status = serializers.ChoiceField(choices=ApprovalStatus.choices, required=False)
    run_id = serializers.CharField(max_length=MAX_PUBLIC_ID_LENGTH, required=False)


class ApprovalWaitQuery(QuerySerializer):
    wait = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=settings.STATEROOM_LONG_POLL_MAX_SECONDS,
        help_text=(
            "Seconds (0-30) to wait for a decision: returns as soon as the approval is no "
            "longer pending (decided, cancelled, or expired: at its expires_at), or at the "
            "timeout with it still pending"
        ),
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
            "approval_exists: duplicate approval_id; run_claimed (details.claimed_by): "
            "another worker's claim on the run is live; content_deleted"
        ),
    },
    description=(
        "The run moves to `waiting_approval` with `pending_approval_id` set in the same "
        "transaction as the approval is created. While a worker's claim on the run is live, "
        "only that worker (`worker`) may ask; the waiting run is then held by nobody."
    ),
)
@api_view(["POST"])
def run_approvals(request, run_id: str):
    store = _store(request)
    data = validated(ApprovalRequestIn, request, lookup=lambda: store.get_run(run_id))
    approval = store.request(run_id=run_id, **data)
    return Response(approval_data(approval), status=201)


@extend_schema(
    operation_id="approvals_list",
    summary="Approvals of this tenant, newest first",
    parameters=[ApprovalListQuery],
    responses={200: ApprovalPage, **ERRORS_LIST},
)
@api_view(["GET"])
def approval_list(request):
    params = query(request, ApprovalListQuery)
    store = _store(request)
    if params.get("status") == ApprovalStatus.PENDING and not params.get("run_id"):
        # The runtime's hot list: one statement, rows straight to these dicts.
        rows, after = store.pending_page(
            limit=params.get("limit") or DEFAULT_LIMIT, cursor=params.get("cursor")
        )
        next_url = None
        if after is not None:
            page = request.query_params.copy()
            page["cursor"] = str(after)
            next_url = request.build_absolute_uri(f"{request.path}?{page.urlencode()}")
        return Response({"results": rows, "next": next_url})
    queryset = store.list_approvals(status=params.get("status"), run_id=params.get("run_id"))
    return keyset_page(request, queryset, ApprovalSerializer, page=params)


@extend_schema(
    operation_id="approvals_retrieve",
    summary="An approval; with wait=N, long-poll until it is no longer pending",
    parameters=[ApprovalWaitQuery],
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
        wait = not_found_first(
            lambda: query(request, ApprovalWaitQuery), lambda: store.get(approval_id)
        ).get("wait", 0)
        approval = store.get(approval_id)
        data = approval_data(approval)
    started = time.monotonic()
    deadline = started + wait
    # It reads expired from its expires_at on: the wait ends then too, not at the next poll.
    expiry = None
    if approval.expires_at is not None:
        expiry = started + (approval.expires_at - store.now()).total_seconds() + EXPIRY_MARGIN
    delay = POLL_FIRST_DELAY
    while data["status"] == ApprovalStatus.PENDING:
        now = time.monotonic()
        if now >= deadline:
            break
        pause = min(delay, deadline - now)
        if expiry is not None and expiry - now < pause:
            pause, expiry = max(expiry - now, 0), None  # one read at expiry, then the usual pace
        if not connection.in_atomic_block:
            connection.close()
        time.sleep(pause)
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
        409: error(
            "already_decided (details.decided_by, decided_at, status); run_claimed "
            "(details.claimed_by, claim_until): another worker's claim on the run is live"
        ),
    },
)
@api_view(["POST"])
def approval_cancel(request, approval_id: str):
    store = _store(request)
    data = validated(ApprovalCancelIn, request, lookup=lambda: store.get(approval_id))
    return Response(approval_data(store.cancel(approval_id=approval_id, **data)))


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
            "arguments_invalid: approve as asked, but the asked arguments do not fit the tool's "
            "arguments_schema (details name each failing path, `arguments.<path>`); "
            "validation_error, e.g. a reason is required to reject, or edited arguments that "
            "do not fit the tool's arguments_schema (`approved_arguments.<path>`)"
        ),
    },
)
@api_view(["POST"])
@permission_classes([IsOperatorToken])
def approval_decision(request, approval_id: str):
    store = _store(request)
    data = validated(ApprovalDecisionIn, request, lookup=lambda: store.get(approval_id))
    approval = store.decide(approval_id=approval_id, **data)
    return Response(approval_data(approval))


@extend_schema(
    operation_id="approvals_outcome",
    summary="The runtime that ran an approved call reports how it went (once)",
    request=ApprovalOutcomeIn,
    responses={
        200: OpenApiResponse(
            ApprovalSerializer,
            description="The approval with outcome, outcome_error and outcome_at set; the "
            "same report again returns it unchanged",
        ),
        **ERRORS_STATEFUL,
        403: error("not_requester: another runtime token asked for this approval"),
        409: error(
            "not_approved (details.status): only an approved call runs; outcome_reported "
            "(details.outcome): another outcome was reported; run_claimed (details.claimed_by, "
            "claim_until): another worker's claim on the run is live"
        ),
        422: error("validation_error: unknown outcome; failed without error.message"),
    },
    description=(
        'The console\'s approval page shows it ("approved — the tool failed: <error>"). '
        "It does not end the run: the runtime does (a failed approved call ends the "
        "ApprovalGate's run `failed`, error.code `tool_failed`)."
    ),
)
@api_view(["POST"])
def approval_outcome(request, approval_id: str):
    store = _store(request)
    data = validated(ApprovalOutcomeIn, request, lookup=lambda: store.get(approval_id))
    return Response(approval_data(store.report_outcome(approval_id=approval_id, **data)))
