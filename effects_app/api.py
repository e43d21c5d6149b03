"""Runtime API for the external-effect ledger (API.md "External effects").

Each view looks its run or effect up first (an unknown or other tenant's id is
404 whatever the body), then validates the body, then makes one store call.
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
from stateroom.api import keyset_page, not_found_first, validated
from stateroom.api_schema import ERRORS_LIST, ERRORS_STATEFUL, ERRORS_WRITE, error
from stateroom.contract import (
    OpenObject,
    PageQuery,
    StrictCharField,
    StrictDictField,
    StrictSerializer,
    query,
    worker_field,
)
from stateroom.ids import MAX_PUBLIC_ID_LENGTH

from .models import EffectStatus, ExternalEffect
from .store import KEY_MAX, NODE_MAX, TOOL_MAX, EffectStore


def _store(request) -> EffectStore:
    return EffectStore(request.tenant, Actor.from_request(request))


# --- serializers ------------------------------------------------------------
class EffectRecordIn(StrictSerializer):
    idempotency_key = StrictCharField(max_length=KEY_MAX, help_text="A string, compared exactly")
    tool_name = StrictCharField(max_length=TOOL_MAX)
    request = StrictDictField(help_text="The call about to be made (JSON object)")
    node_id = StrictCharField(max_length=NODE_MAX, required=False, allow_blank=True)
    # Checked here only: the store finds no approval with an id no row can hold (404).
    approval_id = StrictCharField(
        max_length=MAX_PUBLIC_ID_LENGTH,
        required=False,
        help_text="The approval this call was allowed by",
    )
    worker = worker_field()


class EffectCommitIn(StrictSerializer):
    result = StrictDictField()
    worker = worker_field()


class EffectErrorIn(OpenObject):
    """The runtime's error: `message`, and any other keys it sends (kept as sent)."""

    message = StrictCharField()


class EffectFailIn(StrictSerializer):
    error = EffectErrorIn()
    worker = worker_field()


class RunEffectsQuery(PageQuery):
    status = serializers.ChoiceField(choices=EffectStatus.choices, required=False)


class EffectListQuery(RunEffectsQuery):
    idempotency_key = serializers.CharField(
        max_length=KEY_MAX, required=False, trim_whitespace=False
    )
    # Checked here only: the store finds nothing for an id no run can have (empty list).
    run_id = serializers.CharField(max_length=MAX_PUBLIC_ID_LENGTH, required=False)


class EffectOut(serializers.Serializer):
    effect_id = serializers.CharField()
    run_id = serializers.CharField()
    idempotency_key = serializers.CharField()
    tool_name = serializers.CharField()
    node_id = serializers.CharField()
    approval_id = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=EffectStatus.choices)
    request = serializers.DictField(allow_null=True, help_text="null once redacted")
    request_digest = serializers.CharField()
    result = serializers.DictField(allow_null=True, help_text="null until committed, or redacted")
    error = serializers.DictField(allow_null=True, help_text="null unless failed, or redacted")
    settled_by = serializers.CharField()
    settle_reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    redacted_at = serializers.DateTimeField(allow_null=True)


EffectPage = inline_serializer(
    "EffectPage",
    {"results": EffectOut(many=True), "next": serializers.URLField(allow_null=True)},
)


def effect_data(effect: ExternalEffect) -> dict:
    redacted = effect.redacted_at is not None
    return EffectOut(
        {
            "effect_id": effect.effect_id,
            "run_id": effect.run.run_id,
            "idempotency_key": effect.idempotency_key,
            "tool_name": effect.tool_name,
            "node_id": effect.node_id,
            "approval_id": effect.approval.approval_id if effect.approval_id else None,
            "status": effect.status,
            "request": None if redacted else effect.request,
            "request_digest": effect.request_digest,
            "result": None if redacted else effect.result,
            "error": None if redacted else effect.error,
            "settled_by": effect.settled_by,
            "settle_reason": effect.settle_reason,
            "created_at": effect.created_at,
            "updated_at": effect.updated_at,
            "redacted_at": effect.redacted_at,
        }
    ).data


# --- views --------------------------------------------------------------------
@extend_schema(
    methods=["POST"],
    operation_id="runs_effects_create",
    summary="Record an effect before making it, or get the one already under this key",
    request=EffectRecordIn,
    responses={
        201: OpenApiResponse(EffectOut, description="A new record, in `started`"),
        200: OpenApiResponse(EffectOut, description="The existing record under this key"),
        **ERRORS_WRITE,
        409: error(
            "run_claimed (details.claimed_by): another worker's claim on the run is live; "
            "content_deleted"
        ),
        422: error(
            "Field validation failed, or idempotency_key_reused: the key was used for a "
            "different request"
        ),
    },
    description=(
        "201 with a new record in `started`; the same key again returns 200 with the "
        "existing record (any status), never a second record. While a worker's claim on "
        "the run is live, only that worker (`worker`) may record, commit or fail."
    ),
)
@extend_schema(
    methods=["GET"],
    operation_id="runs_effects_list",
    summary="The effects a run recorded, newest first",
    parameters=[RunEffectsQuery],
    responses={200: EffectPage, **ERRORS_LIST, 404: error("Unknown run, or another tenant's")},
)
@api_view(["GET", "POST"])
def run_effects(request, run_id: str):
    store = _store(request)
    if request.method == "GET":
        params = not_found_first(
            lambda: query(request, RunEffectsQuery), lambda: store.get_run(run_id)
        )
        queryset = store.list_effects(run_id=run_id, status=params.get("status"))
        return keyset_page(request, queryset, effect_data, page=params)
    data = validated(EffectRecordIn, request, lookup=lambda: store.get_run(run_id))
    effect, created = store.record(run_id=run_id, **data)
    return Response(effect_data(effect), status=201 if created else 200)


@extend_schema(
    operation_id="effects_list",
    summary="Look effects up, e.g. by idempotency key",
    parameters=[EffectListQuery],
    responses={200: EffectPage, **ERRORS_LIST, 404: error("run_id is unknown or another tenant's")},
)
@api_view(["GET"])
def effect_list(request):
    params = query(request, EffectListQuery)
    queryset = _store(request).list_effects(
        run_id=params.get("run_id"),
        idempotency_key=params.get("idempotency_key"),
        status=params.get("status"),
    )
    return keyset_page(request, queryset, effect_data, page=params)


@extend_schema(
    operation_id="effects_commit",
    summary="The effect happened: record its result",
    request=EffectCommitIn,
    responses={
        200: EffectOut,
        **ERRORS_STATEFUL,
        409: error(
            "effect_conflict: already committed with a different result; "
            "invalid_transition: the effect is failed or unknown; run_claimed: another "
            "worker's claim on the run is live; content_deleted"
        ),
    },
    description="Committing again with the same result returns 200 unchanged.",
)
@api_view(["POST"])
def effect_commit(request, effect_id: str):
    store = _store(request)
    data = validated(EffectCommitIn, request, lookup=lambda: store.get(effect_id))
    return Response(effect_data(store.commit(effect_id=effect_id, **data)))


@extend_schema(
    operation_id="effects_fail",
    summary="The effect did not happen: record the error",
    request=EffectFailIn,
    responses={
        200: EffectOut,
        **ERRORS_STATEFUL,
        409: error(
            "effect_conflict: already failed with a different error; "
            "invalid_transition: the effect is committed or unknown; run_claimed: another "
            "worker's claim on the run is live; content_deleted"
        ),
    },
)
@api_view(["POST"])
def effect_fail(request, effect_id: str):
    store = _store(request)
    data = validated(EffectFailIn, request, lookup=lambda: store.get(effect_id))
    return Response(effect_data(store.fail(effect_id=effect_id, **data)))
