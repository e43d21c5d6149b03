"""Runtime API for runs (API.md "Runs").

Each view looks its run up first (an unknown or other tenant's id is 404
whatever the body), then validates the body, then makes one store call.
The transition (compare-and-set) can end a run, which withdraws its pending
approval: it is actions_app.api, above runs and approvals.
"""

from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.response import Response

from audit_app.actor import Actor
from stateroom.api import (
    EmptyAsNullCharField,
    keyset_page,
    parse_int_param,
    parse_limit,
)
from stateroom.api_schema import ERRORS_LIST, ERRORS_READ, ERRORS_STATEFUL, ERRORS_WRITE, error

from .models import Run, RunEvent, RunStatus
from .store import RunStateStore


def _store(request) -> RunStateStore:
    return RunStateStore(request.tenant, Actor.from_request(request))


# --- serializers ------------------------------------------------------------
class RunOut(serializers.Serializer):
    run_id = serializers.CharField()
    session_id = serializers.CharField(source="session_public_id", allow_null=True)
    task_id = serializers.CharField(source="task_public_id", allow_null=True)
    status = serializers.ChoiceField(choices=RunStatus.choices)
    turn_index = serializers.IntegerField()
    active_agent = EmptyAsNullCharField()
    current_node_id = EmptyAsNullCharField()
    deadline_at = serializers.DateTimeField(allow_null=True)
    token_used = serializers.IntegerField()
    cost_used = serializers.DecimalField(
        max_digits=18, decimal_places=6, coerce_to_string=True, help_text="Decimal string"
    )
    pending_approval_id = EmptyAsNullCharField()
    last_checkpoint_id = EmptyAsNullCharField()
    error = serializers.JSONField(allow_null=True)
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class RunCreateIn(serializers.Serializer):
    run_id = serializers.RegexField(r"^[A-Za-z0-9._:-]{1,128}$", required=False)
    session_id = serializers.CharField(max_length=128, required=False, allow_null=True)
    task_id = serializers.CharField(max_length=128, required=False, allow_null=True)
    active_agent = serializers.CharField(
        max_length=200, required=False, allow_blank=True, allow_null=True
    )
    deadline_at = serializers.DateTimeField(required=False, allow_null=True)


class RunTransitionIn(serializers.Serializer):
    expected_version = serializers.IntegerField(min_value=1)
    status = serializers.ChoiceField(choices=RunStatus.choices, required=False)
    turn_index = serializers.IntegerField(min_value=0, max_value=2**62, required=False)
    active_agent = serializers.CharField(
        max_length=200, required=False, allow_blank=True, allow_null=True
    )
    current_node_id = serializers.CharField(
        max_length=200, required=False, allow_blank=True, allow_null=True
    )
    token_used = serializers.IntegerField(min_value=0, max_value=2**62, required=False)
    cost_used = serializers.DecimalField(
        max_digits=18, decimal_places=6, min_value=0, required=False
    )
    last_checkpoint_id = serializers.CharField(
        max_length=128, required=False, allow_blank=True, allow_null=True
    )
    error = serializers.DictField(required=False, allow_null=True)

    def validate(self, attrs):
        # A field this endpoint does not change is refused, not silently ignored.
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {key: ["not a field of a transition"] for key in unknown}
            )
        return attrs


class RunEventIn(serializers.Serializer):
    type = serializers.CharField(max_length=64)
    node_id = serializers.CharField(
        max_length=200, required=False, allow_blank=True, allow_null=True
    )
    payload = serializers.JSONField(allow_null=True)


class RunEventsIn(serializers.Serializer):
    events = RunEventIn(many=True, allow_empty=False, max_length=1000)


class RunEventOut(serializers.Serializer):
    seq = serializers.IntegerField()
    type = serializers.CharField()
    node_id = EmptyAsNullCharField()
    payload = serializers.JSONField(allow_null=True, help_text="null once content is deleted")
    created_at = serializers.DateTimeField()


RunPage = inline_serializer(
    "RunPage", {"results": RunOut(many=True), "next": serializers.URLField(allow_null=True)}
)
RunEventPage = inline_serializer(
    "RunEventPage",
    {"results": RunEventOut(many=True), "next": serializers.URLField(allow_null=True)},
)
AppendedEvents = inline_serializer(
    "AppendedEvents",
    {"first_seq": serializers.IntegerField(), "last_seq": serializers.IntegerField()},
)


def run_data(run: Run) -> dict:
    return RunOut(run).data


def event_data(event: RunEvent) -> dict:
    return RunEventOut(event).data


LIMIT = OpenApiParameter("limit", int, description="Page size, 1-500 (default 50)")
CURSOR = OpenApiParameter("cursor", int, description="From the `next` URL of the previous page")


# --- views --------------------------------------------------------------------
@extend_schema(
    methods=["POST"],
    operation_id="runs_create",
    summary="Start a run record, in `created` at version 1",
    request=RunCreateIn,
    responses={
        201: RunOut,
        **ERRORS_WRITE,
        404: error("session_id or task_id is unknown, or another tenant's"),
        409: error("run_exists: a run with this run_id exists"),
    },
)
@extend_schema(
    methods=["GET"],
    operation_id="runs_list",
    summary="Runs of this tenant, newest first",
    parameters=[
        OpenApiParameter("status", str, enum=RunStatus.values),
        OpenApiParameter("session_id", str),
        OpenApiParameter("task_id", str),
        LIMIT,
        CURSOR,
    ],
    responses={200: RunPage, **ERRORS_LIST},
)
@api_view(["GET", "POST"])
def run_collection(request):
    store = _store(request)
    if request.method == "GET":
        params = request.query_params
        queryset = store.list_runs(
            status=params.get("status") or None,
            session_id=params.get("session_id") or None,
            task_id=params.get("task_id") or None,
        )
        return keyset_page(request, queryset, run_data)
    body = RunCreateIn(data=request.data)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    run = store.create(
        run_id=data.get("run_id"),
        session_id=data.get("session_id") or None,
        task_id=data.get("task_id") or None,
        active_agent=data.get("active_agent") or "",
        deadline_at=data.get("deadline_at"),
    )
    return Response(run_data(run), status=201)


@extend_schema(
    operation_id="runs_retrieve",
    summary="The current RunState",
    responses={200: RunOut, **ERRORS_READ},
)
@api_view(["GET"])
def run_detail(request, run_id: str):
    return Response(run_data(_store(request).get(run_id)))


@extend_schema(
    methods=["POST"],
    operation_id="runs_events_append",
    summary="Append events to the run, numbered gap-free per run",
    request=RunEventsIn,
    responses={
        201: AppendedEvents,
        **ERRORS_STATEFUL,
        409: error("run_terminal: the run has finished and takes no more events"),
    },
)
@extend_schema(
    methods=["GET"],
    operation_id="runs_events_list",
    summary="Events of the run in seq order, after `after`",
    parameters=[
        OpenApiParameter("after", int, description="Only events with a larger seq"),
        LIMIT,
    ],
    responses={200: RunEventPage, **ERRORS_LIST, 404: error("Unknown run, or another tenant's")},
)
@api_view(["GET", "POST"])
def run_events(request, run_id: str):
    store = _store(request)
    store.get(run_id)
    if request.method == "GET":
        limit = parse_limit(request)
        after = parse_int_param(request, "after")
        rows = store.get_events(run_id=run_id, after=after, limit=limit + 1)
        next_url = None
        if len(rows) > limit:
            rows = rows[:limit]
            params = request.query_params.copy()
            params["after"] = str(rows[-1].seq)
            next_url = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
        return Response({"results": [event_data(e) for e in rows], "next": next_url})
    body = RunEventsIn(data=request.data)
    body.is_valid(raise_exception=True)
    events = store.append_events(run_id=run_id, events=body.validated_data["events"])
    return Response({"first_seq": events[0].seq, "last_seq": events[-1].seq}, status=201)
