"""Runtime API for durable task state (API.md "Tasks").

Each view looks the task up first (an unknown or other tenant's id is 404
whatever the body), then validates the body, then makes one store call.
"""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.response import Response

from stateroom.actor import Actor
from stateroom.api import not_found_first, validated
from stateroom.api_schema import ERRORS_LIST, ERRORS_READ, ERRORS_STATEFUL, ERRORS_WRITE, error
from stateroom.contract import (
    NoQuery,
    PublicIdField,
    QuerySerializer,
    StrictCharField,
    StrictChoiceField,
    StrictDictField,
    StrictIntegerField,
    StrictSerializer,
    limit_field,
    query,
    strings,
)
from tenancy_app.middleware import non_atomic_tenant_view

from .models import Task, TaskCheckpoint, TaskStatus
from .store import (
    CHECKPOINT_PAGE_SIZE,
    MAX_CHECKPOINT_PAGE_SIZE,
    MAX_CONSTRAINT_LENGTH,
    MAX_LIST_ITEM_LENGTH,
    NODE_ID_MAX,
    PLAN_VERSION_MAX,
    TaskStateStore,
)


def _store(request) -> TaskStateStore:
    return TaskStateStore(request.tenant, Actor.from_request(request))


def _strings(max_length: int = MAX_LIST_ITEM_LENGTH, **kw) -> serializers.ListField:
    return strings(max_length, **kw)


# --- serializers ------------------------------------------------------------
class TaskCreateIn(StrictSerializer):
    task_id = PublicIdField(required=False, help_text="Generated if omitted")
    objective = StrictCharField()
    constraints = _strings(max_length=MAX_CONSTRAINT_LENGTH, required=False)


class TaskStateIn(StrictSerializer):
    expected_version = StrictIntegerField(
        help_text="The version the caller read; 409 version_conflict if the task moved on"
    )
    plan_version = StrictCharField(
        max_length=PLAN_VERSION_MAX, required=False, allow_null=True, allow_blank=True
    )
    completed_nodes = _strings(required=False, help_text="A set: stored sorted, once each")
    pending_nodes = _strings(required=False, help_text="A set: stored sorted, once each")
    pending_approvals = _strings(required=False)
    artifact_refs = _strings(required=False)
    external_effect_records = _strings(required=False)
    status = StrictChoiceField(choices=TaskStatus.choices, required=False)


class TaskOut(serializers.Serializer):
    task_id = serializers.CharField()
    objective = serializers.CharField()
    constraints = serializers.ListField(child=serializers.CharField())
    plan_version = serializers.CharField(allow_null=True)
    completed_nodes = serializers.ListField(child=serializers.CharField())
    pending_nodes = serializers.ListField(child=serializers.CharField())
    pending_approvals = serializers.ListField(child=serializers.CharField())
    artifact_refs = serializers.ListField(child=serializers.CharField())
    external_effect_records = serializers.ListField(child=serializers.CharField())
    latest_checkpoint_id = serializers.CharField(allow_null=True)
    schema_version = serializers.IntegerField()
    status = serializers.ChoiceField(choices=TaskStatus.choices)
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class CheckpointIn(StrictSerializer):
    schema_version = StrictIntegerField(min_value=1)
    state = StrictDictField(help_text="JSON domain data and resource identifiers only")
    node_id = StrictCharField(max_length=NODE_ID_MAX, required=False, allow_blank=True)


class CheckpointCreatedOut(serializers.Serializer):
    checkpoint_id = serializers.CharField()
    seq = serializers.IntegerField()


class CheckpointOut(serializers.Serializer):
    checkpoint_id = serializers.CharField()
    task_id = serializers.CharField()
    seq = serializers.IntegerField()
    schema_version = serializers.IntegerField()
    node_id = serializers.CharField()
    state = serializers.DictField(allow_null=True, help_text="null once the body was deleted")
    size_bytes = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    body_deleted_at = serializers.DateTimeField(allow_null=True)


def task_data(task: Task) -> dict:
    state = TaskStateStore.to_state(task).to_json()
    return TaskOut(
        {
            **state,
            "status": task.status,
            "version": task.version,
            "created_at": task.created_at,
            "updated_at": task.updated_at,
        }
    ).data


def checkpoint_data(checkpoint: TaskCheckpoint) -> dict:
    return CheckpointOut(
        {
            "checkpoint_id": checkpoint.checkpoint_id,
            "task_id": checkpoint.task.task_id,
            "seq": checkpoint.seq,
            "schema_version": checkpoint.schema_version,
            "node_id": checkpoint.node_id,
            "state": None if checkpoint.body_deleted_at else checkpoint.state,
            "size_bytes": checkpoint.size_bytes,
            "created_at": checkpoint.created_at,
            "body_deleted_at": checkpoint.body_deleted_at,
        }
    ).data


# --- views --------------------------------------------------------------------
@extend_schema(
    operation_id="tasks_create",
    summary="Create a durable task",
    request=TaskCreateIn,
    responses={
        201: TaskOut,
        **{status: response for status, response in ERRORS_WRITE.items() if status != 404},
        409: error("task_exists: a task with this id already exists"),
    },
)
@api_view(["POST"])
def task_create(request):
    data = validated(TaskCreateIn, request, lookup=lambda: None)
    task = _store(request).create(**data)
    return Response(task_data(task), status=201)


@extend_schema(
    operation_id="tasks_retrieve",
    summary="The DurableTaskState of a task, with status and version",
    responses={200: TaskOut, **ERRORS_READ},
)
@api_view(["GET"])
def task_detail(request, task_id: str):
    store = _store(request)
    not_found_first(lambda: query(request, NoQuery), lambda: store.load(task_id))
    return Response(task_data(store.load(task_id)))


@extend_schema(
    operation_id="tasks_state_update",
    summary="Save task state if still at expected_version (version + 1)",
    request=TaskStateIn,
    responses={
        200: TaskOut,
        **ERRORS_STATEFUL,
        409: error(
            "version_conflict (details.current_version), or invalid_transition "
            "(status change not allowed, or the task is terminal)"
        ),
        422: error("Field validation failed, or not_serializable; details lists the fields"),
    },
)
@api_view(["PUT"])
def task_state(request, task_id: str):
    store = _store(request)
    fields = validated(TaskStateIn, request, lookup=lambda: store.load(task_id))
    task = store.save(task_id=task_id, expected_version=fields.pop("expected_version"), **fields)
    return Response(task_data(task))


class CheckpointHistoryQuery(QuerySerializer):
    limit = limit_field(default=CHECKPOINT_PAGE_SIZE, maximum=MAX_CHECKPOINT_PAGE_SIZE)
    before_seq = serializers.IntegerField(
        required=False, min_value=1, help_text="Only checkpoints before this seq (next page)"
    )


TaskCheckpointPage = inline_serializer(
    "TaskCheckpointPage",
    {"results": CheckpointOut(many=True), "next": serializers.URLField(allow_null=True)},
)


@extend_schema(
    methods=["GET"],
    operation_id="tasks_checkpoints_list",
    summary="The task's checkpoints, newest first (keyset-paged by seq)",
    parameters=[CheckpointHistoryQuery],
    responses={
        200: TaskCheckpointPage,
        **ERRORS_LIST,
        404: error("Unknown task, or another tenant's"),
    },
)
@extend_schema(
    methods=["POST"],
    operation_id="tasks_checkpoints_create",
    summary="Append a numbered checkpoint; it becomes the task's latest_checkpoint_id",
    request=CheckpointIn,
    responses={
        201: CheckpointCreatedOut,
        **ERRORS_STATEFUL,
        409: error("invalid_transition: the task is terminal"),
        422: error("Field validation failed, or not_serializable; details lists the fields"),
    },
)
@non_atomic_tenant_view
@api_view(["GET", "POST"])
def checkpoint_create(request, task_id: str):
    # No request transaction (non_atomic_tenant_view): a save and a history page are
    # each one message to PostgreSQL, the tenant setting with the statement.
    store = _store(request)
    if request.method == "GET":
        params = not_found_first(
            lambda: query(request, CheckpointHistoryQuery),
            lambda: store.checkpoint_history(task_id, limit=1),
        )
        limit = params.get("limit") or CHECKPOINT_PAGE_SIZE
        rows = store.checkpoint_history(
            task_id, limit=limit + 1, before_seq=params.get("before_seq")
        )
        next_url = None
        if len(rows) > limit:
            rows = rows[:limit]
            page = request.query_params.copy()
            page["before_seq"] = str(rows[-1]["seq"])
            next_url = request.build_absolute_uri(f"{request.path}?{page.urlencode()}")
        return Response({"results": CheckpointOut(rows, many=True).data, "next": next_url})
    data = validated(CheckpointIn, request, lookup=lambda: store.load(task_id))
    checkpoint = store.append_checkpoint(task_id=task_id, **data)
    return Response(CheckpointCreatedOut(checkpoint).data, status=201)


@extend_schema(
    operation_id="tasks_checkpoints_latest",
    summary="The task's latest checkpoint",
    responses={
        200: CheckpointOut,
        **ERRORS_READ,
        404: error("Unknown task, another tenant's task, or the task has no checkpoint yet"),
    },
)
@non_atomic_tenant_view
@api_view(["GET"])
def checkpoint_latest(request, task_id: str):
    store = _store(request)
    not_found_first(lambda: query(request, NoQuery), lambda: store.load(task_id))
    return Response(CheckpointOut(store.latest_checkpoint(task_id)).data)


@extend_schema(
    operation_id="tasks_checkpoints_retrieve",
    summary="One checkpoint of a task",
    responses={200: CheckpointOut, **ERRORS_READ},
)
@api_view(["GET"])
def checkpoint_detail(request, task_id: str, checkpoint_id: str):
    store = _store(request)
    not_found_first(
        lambda: query(request, NoQuery),
        lambda: store.get_checkpoint(task_id=task_id, checkpoint_id=checkpoint_id),
    )
    checkpoint = store.get_checkpoint(task_id=task_id, checkpoint_id=checkpoint_id)
    return Response(checkpoint_data(checkpoint))
