"""Runtime API for runs (API.md "Runs").

Each view looks its run up first (an unknown or other tenant's id is 404
whatever the body), then validates the body, then makes one store call.
The transition (compare-and-set) can end a run, which withdraws its pending
approval: it is actions_app.api, above runs and approvals.
"""

from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.response import Response

from stateroom.actor import Actor
from stateroom.api import (
    DEFAULT_LIMIT,
    EmptyAsNullCharField,
    keyset_page,
    not_found_first,
    validated,
)
from stateroom.api_schema import ERRORS_LIST, ERRORS_READ, ERRORS_STATEFUL, ERRORS_WRITE, error
from stateroom.contract import (
    DecimalStringField,
    GatedJSONField,
    NoQuery,
    PageQuery,
    PublicIdField,
    QuerySerializer,
    StrictCharField,
    StrictChoiceField,
    StrictDateTimeField,
    StrictDictField,
    StrictIntegerField,
    StrictSerializer,
    limit_field,
    query,
    worker_field,
)
from stateroom.ids import MAX_PUBLIC_ID_LENGTH
from stateroom.leases import DEFAULT_CLAIM_LEASE_SECONDS, MAX_CLAIM_LEASE_SECONDS
from stateroom.tracing import request_trace_id

from .models import RunEvent, RunStatus
from .serializers import RunOut, run_data
from .store import (
    COST_DECIMAL_PLACES,
    COST_MAX_DIGITS,
    MAX_COUNTER,
    MAX_EVENT_TYPE_LENGTH,
    MAX_EVENTS_PER_APPEND,
    STRING_LIMITS,
    RunStateStore,
    cost_value,
)


def _store(request) -> RunStateStore:
    return RunStateStore(request.tenant, Actor.from_request(request))


# --- serializers ------------------------------------------------------------
class CostField(DecimalStringField):
    """`cost_used`: a decimal string or an integer, refused by the run store's own rule.

    Digits and places are declared for the schema; the check is `cost_value`,
    the one `compare_and_set` makes, so both refuse a 7th decimal place alike.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(
            max_digits=COST_MAX_DIGITS, decimal_places=COST_DECIMAL_PLACES, min_value=0, **kwargs
        )

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, str | int):
            self.fail("invalid")
        try:
            return cost_value(data)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from exc


def _text(name: str, **kwargs) -> StrictCharField:
    """An optional text field of a run, limited as the store limits it (one definition)."""
    return StrictCharField(
        max_length=STRING_LIMITS[name], required=False, allow_blank=True, allow_null=True, **kwargs
    )


class RunCreateIn(StrictSerializer):
    run_id = PublicIdField(required=False, help_text="Generated if omitted")
    session_id = PublicIdField(required=False, allow_null=True)
    task_id = PublicIdField(required=False, allow_null=True)
    active_agent = _text("active_agent")
    deadline_at = StrictDateTimeField(
        required=False, allow_null=True, help_text="With an offset; must lie in the future"
    )


class RunTransitionIn(StrictSerializer):
    expected_version = StrictIntegerField(min_value=1)
    status = StrictChoiceField(choices=RunStatus.choices, required=False)
    turn_index = StrictIntegerField(min_value=0, max_value=MAX_COUNTER, required=False)
    active_agent = _text("active_agent")
    current_node_id = _text("current_node_id")
    token_used = StrictIntegerField(
        min_value=0,
        max_value=MAX_COUNTER,
        required=False,
        help_text="The run's total so far, not an increment: a report sent twice counts once",
    )
    cost_used = CostField(
        required=False,
        help_text="The run's total cost so far (not an increment), a decimal string",
    )
    model = _text("model", help_text="The model the run uses (its latest report)")
    last_checkpoint_id = _text("last_checkpoint_id")
    error = StrictDictField(
        required=False,
        allow_null=True,
        help_text="null clears it; a move to succeeded without it clears it too",
    )
    worker = worker_field()


class RunEventIn(StrictSerializer):
    type = StrictCharField(max_length=MAX_EVENT_TYPE_LENGTH)
    node_id = _text("current_node_id")
    payload = GatedJSONField(allow_null=True)


class RunEventsIn(StrictSerializer):
    events = RunEventIn(many=True, allow_empty=False, max_length=MAX_EVENTS_PER_APPEND)
    worker = worker_field()


class RunClaimIn(StrictSerializer):
    worker = worker_field(required=True, help_text="A name unique to this worker process")
    expected_version = StrictIntegerField(min_value=1)
    lease_seconds = StrictIntegerField(
        min_value=1,
        max_value=MAX_CLAIM_LEASE_SECONDS,
        required=False,
        help_text=f"How long the claim lasts unless renewed (default {DEFAULT_CLAIM_LEASE_SECONDS})",
    )


class RunListQuery(PageQuery):
    # Ids are checked here only: the store finds no run for an id no row can hold (empty list).
    status = serializers.ChoiceField(choices=RunStatus.choices, required=False)
    session_id = serializers.CharField(max_length=MAX_PUBLIC_ID_LENGTH, required=False)
    task_id = serializers.CharField(max_length=MAX_PUBLIC_ID_LENGTH, required=False)
    unclaimed = serializers.BooleanField(
        required=False,
        help_text="true: only the runs with unclaimed_since set (waiting for a worker)",
    )


class RunEventsQuery(QuerySerializer):
    after = serializers.IntegerField(
        required=False, min_value=0, help_text="Only events with a larger seq"
    )
    limit = limit_field()


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


def event_data(event: RunEvent) -> dict:
    return RunEventOut(event).data


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
    parameters=[RunListQuery],
    responses={200: RunPage, **ERRORS_LIST},
)
@api_view(["GET", "POST"])
def run_collection(request):
    store = _store(request)
    if request.method == "GET":
        params = query(request, RunListQuery)
        queryset = store.list_runs(
            status=params.get("status"),
            session_id=params.get("session_id"),
            task_id=params.get("task_id"),
            unclaimed=params.get("unclaimed") or False,
        )
        return keyset_page(request, queryset, RunOut, page=params)
    data = validated(RunCreateIn, request, lookup=lambda: None)
    run = store.create(
        run_id=data.get("run_id"),
        session_id=data.get("session_id") or None,
        task_id=data.get("task_id") or None,
        active_agent=data.get("active_agent") or "",
        deadline_at=data.get("deadline_at"),
        trace_id=request_trace_id(request),
    )
    return Response(run_data(run), status=201)


@extend_schema(
    operation_id="runs_retrieve",
    summary="The current RunState",
    responses={200: RunOut, **ERRORS_READ},
)
@api_view(["GET"])
def run_detail(request, run_id: str):
    store = _store(request)
    not_found_first(lambda: query(request, NoQuery), lambda: store.get(run_id))
    return Response(run_data(store.get(run_id)))


@extend_schema(
    methods=["POST"],
    operation_id="runs_events_append",
    summary="Append events to the run, numbered gap-free per run",
    request=RunEventsIn,
    responses={
        201: AppendedEvents,
        **ERRORS_STATEFUL,
        409: error(
            "run_terminal: the run has finished and takes no more events; run_claimed "
            "(details.claimed_by): another worker's claim is live; content_deleted"
        ),
    },
)
@extend_schema(
    methods=["GET"],
    operation_id="runs_events_list",
    summary="Events of the run in seq order, after `after`",
    parameters=[RunEventsQuery],
    responses={200: RunEventPage, **ERRORS_LIST, 404: error("Unknown run, or another tenant's")},
)
@api_view(["GET", "POST"])
def run_events(request, run_id: str):
    store = _store(request)
    store.get(run_id)
    if request.method == "GET":
        params = query(request, RunEventsQuery)
        limit, after = params.get("limit") or DEFAULT_LIMIT, params.get("after")
        rows = store.get_events(run_id=run_id, after=after, limit=limit + 1)
        next_url = None
        if len(rows) > limit:
            rows = rows[:limit]
            params = request.query_params.copy()
            params["after"] = str(rows[-1].seq)
            next_url = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
        return Response({"results": [event_data(e) for e in rows], "next": next_url})
    data = validated(RunEventsIn, request, lookup=lambda: None)
    events = store.append_events(run_id=run_id, events=data["events"], worker=data.get("worker"))
    return Response({"first_seq": events[0].seq, "last_seq": events[-1].seq}, status=201)


@extend_schema(
    operation_id="runs_claim",
    summary="Become the run's only runtime writer until the lease ends (or renew)",
    request=RunClaimIn,
    responses={
        200: OpenApiResponse(RunOut, description="The run, claimed, at version + 1"),
        **ERRORS_STATEFUL,
        409: error(
            "run_claimed (details.claimed_by, claim_until): another worker's claim is live; "
            "version_conflict (details.current_version): the run changed since it was read; "
            "invalid_transition: the run has finished; content_deleted"
        ),
    },
    description=(
        "A compare-and-set at expected_version: of several workers claiming the same version "
        "one wins. The same worker renews its claim. While the claim is live, every runtime "
        "write to the run (transition, events, approval requests, effects) must carry this "
        "worker; without it, or with another, it is 409 run_claimed and nothing is written. "
        "A run that goes to waiting_approval, suspended or an end is held by nobody."
    ),
)
@api_view(["POST"])
def run_claim(request, run_id: str):
    store = _store(request)
    data = validated(RunClaimIn, request, lookup=lambda: store.get(run_id))
    run = store.claim(
        run_id=run_id,
        worker=data["worker"],
        expected_version=data["expected_version"],
        lease_seconds=data.get("lease_seconds") or DEFAULT_CLAIM_LEASE_SECONDS,
    )
    return Response(run_data(run))
