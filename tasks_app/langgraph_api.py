"""Runtime API for LangGraph threads: what `stateroom_client.langgraph.StateroomSaver` calls.

A thread is a task (`/tasks/{task_id}` with the thread id as task id);
these endpoints keep its checkpoints, channel values and pending writes
(docs/architecture.md, "LangGraph threads"). Values travel as
`{"type": "json", "value": ...}` (plain JSON, readable in the console) or
`{"type": "<serializer type>", "data": "<base64>"}` (LangGraph's serializer
output, kept as bytes).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.response import Response

from audit_app.actor import Actor
from stateroom.api import not_found_first, parse_limit, validated
from stateroom.api_schema import ERRORS_READ, ERRORS_STATEFUL, ERRORS_WRITE, error
from stateroom.errors import Unprocessable

from .langgraph_store import (
    JSON_TYPE,
    STRATEGIES,
    TYPE_MAX,
    Blob,
    CheckpointTuple,
    GraphThreadStore,
    Value,
    Write,
)

TAGS = ["langgraph"]
_DATETIME = serializers.DateTimeField()


def _store(request) -> GraphThreadStore:
    return GraphThreadStore(request.tenant, Actor.from_request(request))


class Strict(serializers.Serializer):
    """Unknown fields are refused (422), not dropped: a misspelt field must not vanish."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["unknown field"] for name in unknown})
        return super().to_internal_value(data)


class ValueIn(Strict):
    type = serializers.CharField(
        max_length=TYPE_MAX,
        help_text="`json` (the value is in `value`) or the serializer's type (bytes in `data`)",
    )
    value = serializers.JSONField(required=False, allow_null=True)
    data = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)

    def validate(self, attrs):
        if attrs["type"] == JSON_TYPE:
            if "data" in attrs:
                raise serializers.ValidationError({"data": ["not with type json"]})
            attrs["parsed"] = Value(JSON_TYPE, value=attrs.get("value"))
            return attrs
        if "value" in attrs:
            raise serializers.ValidationError({"value": ["only with type json; use data"]})
        try:
            raw = base64.b64decode(attrs.get("data", ""), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise serializers.ValidationError({"data": ["must be base64"]}) from exc
        attrs["parsed"] = Value(attrs["type"], data=raw)
        return attrs


class BlobIn(ValueIn):
    channel = serializers.CharField(max_length=255, trim_whitespace=False)
    version = serializers.JSONField(help_text="The channel's version: a string or a number")


class WriteIn(ValueIn):
    idx = serializers.IntegerField(help_text="Index in the task's writes; < 0 for special channels")
    channel = serializers.CharField(max_length=255, trim_whitespace=False)


class PutIn(Strict):
    checkpoint_ns = serializers.CharField(
        max_length=255, allow_blank=True, trim_whitespace=False, default=""
    )
    checkpoint = serializers.DictField(
        help_text="LangGraph's checkpoint without channel_values (v, id, ts, channel_versions,"
        " versions_seen, ...)"
    )
    metadata = serializers.DictField(required=False, default=dict)
    parent_checkpoint_id = serializers.CharField(
        max_length=128, required=False, allow_blank=True, allow_null=True, default=""
    )
    blobs = BlobIn(
        many=True,
        required=False,
        default=list,
        help_text="Values of the channels new in this checkpoint (stored once per version)",
    )


class PutOut(serializers.Serializer):
    thread_id = serializers.CharField()
    checkpoint_ns = serializers.CharField()
    checkpoint_id = serializers.CharField()


class WritesIn(Strict):
    checkpoint_ns = serializers.CharField(
        max_length=255, allow_blank=True, trim_whitespace=False, default=""
    )
    checkpoint_id = serializers.CharField(max_length=128)
    graph_task_id = serializers.CharField(max_length=128, help_text="LangGraph's task id")
    graph_task_path = serializers.CharField(
        max_length=512, allow_blank=True, required=False, default=""
    )
    writes = WriteIn(many=True)


class WritesOut(serializers.Serializer):
    written = serializers.IntegerField(help_text="Rows written; a repeated write is not counted")


class CopyIn(Strict):
    target_thread_id = serializers.CharField(max_length=128)


class PruneIn(Strict):
    strategy = serializers.ChoiceField(choices=STRATEGIES, default="keep_latest")


class DeleteRunsIn(Strict):
    run_ids = serializers.ListField(child=serializers.CharField(max_length=128), max_length=1000)


Counts = inline_serializer(
    "LangGraphCounts",
    {
        "checkpoints": serializers.IntegerField(),
        "writes": serializers.IntegerField(),
        "blobs": serializers.IntegerField(),
    },
)


class ChannelValueOut(serializers.Serializer):
    channel = serializers.CharField()
    version = serializers.CharField(help_text="The version as text")
    type = serializers.CharField()
    value = serializers.JSONField(allow_null=True, help_text="The value when type is json")
    data = serializers.CharField(allow_null=True, help_text="Base64 bytes otherwise")


class PendingWriteOut(serializers.Serializer):
    task_id = serializers.CharField(help_text="LangGraph's task id")
    task_path = serializers.CharField()
    idx = serializers.IntegerField()
    channel = serializers.CharField()
    type = serializers.CharField()
    value = serializers.JSONField(allow_null=True, help_text="The value when type is json")
    data = serializers.CharField(allow_null=True, help_text="Base64 bytes otherwise")


class CheckpointTupleOut(serializers.Serializer):
    thread_id = serializers.CharField()
    checkpoint_ns = serializers.CharField()
    checkpoint_id = serializers.CharField()
    parent_checkpoint_id = serializers.CharField(allow_null=True)
    checkpoint = serializers.DictField()
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()
    channel_values = ChannelValueOut(many=True)
    pending_writes = PendingWriteOut(
        many=True, help_text="In LangGraph's order: task path, task id, index"
    )


class CheckpointPage(serializers.Serializer):
    results = CheckpointTupleOut(many=True)
    next = serializers.URLField(allow_null=True)


def tuple_data(row: CheckpointTuple) -> dict[str, Any]:
    return {
        "thread_id": row.thread_id,
        "checkpoint_ns": row.checkpoint_ns,
        "checkpoint_id": row.checkpoint_id,
        "parent_checkpoint_id": row.parent_checkpoint_id or None,
        "checkpoint": row.checkpoint,
        "metadata": row.metadata,
        "created_at": _DATETIME.to_representation(row.created_at),
        "channel_values": row.channel_values,
        "pending_writes": row.pending_writes,
    }


LIST_PARAMS = frozenset({"checkpoint_ns", "checkpoint_id", "before", "metadata", "limit", "cursor"})


def _list_query(request) -> dict[str, Any]:
    params = request.query_params
    unknown = sorted(set(params) - LIST_PARAMS)
    if unknown:
        raise Unprocessable(
            "Unknown query parameters: " + ", ".join(unknown),
            details={name: ["unknown query parameter"] for name in unknown},
        )
    query: dict[str, Any] = {"limit": parse_limit(request)}
    for name in ("checkpoint_ns", "checkpoint_id", "before"):
        if name in params:
            query[name] = params[name]
    if params.get("metadata"):
        try:
            metadata = json.loads(params["metadata"])
        except ValueError:
            metadata = None
        if not isinstance(metadata, dict):
            raise Unprocessable(
                "metadata must be a JSON object.",
                details={
                    "metadata": ["must be a JSON object (checkpoints whose metadata contains it)"]
                },
            )
        query["metadata"] = metadata
    if params.get("cursor"):
        checkpoint_id, _, pk = params["cursor"].rpartition("~")
        if not checkpoint_id or not pk.isdigit():
            raise Unprocessable(
                "cursor is not one this API gave.", details={"cursor": ["from a `next` URL only"]}
            )
        query["after_key"] = (checkpoint_id, int(pk))
    return query


# --- views --------------------------------------------------------------------
@extend_schema(
    methods=["GET"],
    tags=TAGS,
    operation_id="langgraph_checkpoints_list",
    summary="A thread's checkpoints, newest first, with channel values and pending writes",
    parameters=[
        OpenApiParameter(
            "checkpoint_ns", str, description="Only this namespace ('' is the root graph)"
        ),
        OpenApiParameter("checkpoint_id", str, description="Only this checkpoint"),
        OpenApiParameter("before", str, description="Only checkpoints older than this id"),
        OpenApiParameter(
            "metadata", str, description="A JSON object the checkpoint's metadata must contain"
        ),
        OpenApiParameter("limit", int, description="Page size, 1-500 (default 50)"),
        OpenApiParameter("cursor", str, description="From the `next` URL of the previous page"),
    ],
    responses={200: CheckpointPage, **ERRORS_READ, 422: error("Invalid filter, limit or cursor")},
)
@extend_schema(
    methods=["POST"],
    tags=TAGS,
    operation_id="langgraph_checkpoints_put",
    summary="Store a checkpoint (LangGraph's put): the checkpoint and its new channel values",
    request=PutIn,
    responses={
        201: PutOut,
        200: PutOut,
        **ERRORS_STATEFUL,
        409: error("invalid_transition: the thread's task is finished"),
        422: error("Field validation failed, or not_serializable; details lists the fields"),
    },
)
@api_view(["GET", "POST"])
def checkpoints(request, task_id: str):
    store = _store(request)
    if request.method == "POST":
        data = validated(PutIn, request, lookup=lambda: store.thread(task_id))
        created = not_found_first(
            lambda: store.put(
                thread_id=task_id,
                checkpoint_ns=data["checkpoint_ns"],
                checkpoint=data["checkpoint"],
                metadata=data["metadata"],
                parent_checkpoint_id=data["parent_checkpoint_id"] or "",
                blobs=[
                    Blob(channel=b["channel"], version=b["version"], value=b["parsed"])
                    for b in data["blobs"]
                ],
            ),
            lambda: store.thread(task_id),
        )
        body = {
            "thread_id": task_id,
            "checkpoint_ns": data["checkpoint_ns"],
            "checkpoint_id": data["checkpoint"]["id"],
        }
        return Response(body, status=201 if created else 200)
    query = not_found_first(lambda: _list_query(request), lambda: store.thread(task_id))
    rows, more = store.list_checkpoints(thread_id=task_id, **query)
    next_url = None
    if more:
        params = request.query_params.copy()
        params["cursor"] = f"{rows[-1].checkpoint_id}~{rows[-1].pk}"
        next_url = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
    return Response({"results": [tuple_data(row) for row in rows], "next": next_url})


@extend_schema(
    tags=TAGS,
    operation_id="langgraph_writes_put",
    summary="Store a LangGraph task's pending writes against a checkpoint (put_writes)",
    request=WritesIn,
    responses={
        201: WritesOut,
        **ERRORS_STATEFUL,
        404: error("Unknown thread, another tenant's thread, or no such checkpoint in it"),
        409: error("invalid_transition: the thread's task is finished"),
        422: error("Field validation failed, or not_serializable; details lists the fields"),
    },
)
@api_view(["POST"])
def writes(request, task_id: str):
    store = _store(request)
    data = validated(WritesIn, request, lookup=lambda: store.thread(task_id))
    written = not_found_first(
        lambda: store.put_writes(
            thread_id=task_id,
            checkpoint_ns=data["checkpoint_ns"],
            checkpoint_id=data["checkpoint_id"],
            graph_task_id=data["graph_task_id"],
            graph_task_path=data["graph_task_path"],
            writes=[
                Write(idx=w["idx"], channel=w["channel"], value=w["parsed"]) for w in data["writes"]
            ],
        ),
        lambda: store.thread(task_id),
    )
    return Response({"written": written}, status=201)


@extend_schema(
    tags=TAGS,
    operation_id="langgraph_thread_delete",
    summary="Delete a thread's checkpoints, values and writes (delete_thread); the task stays",
    responses={
        200: Counts,
        **ERRORS_READ,
        409: error("legal_hold: the tenant or a session the thread served is on legal hold"),
    },
)
@api_view(["DELETE"])
def thread(request, task_id: str):
    return Response(_store(request).delete_thread(thread_id=task_id))


@extend_schema(
    tags=TAGS,
    operation_id="langgraph_thread_copy",
    summary="Copy a thread's checkpoints, values and writes to another thread (copy_thread)",
    request=CopyIn,
    responses={
        200: Counts,
        **ERRORS_STATEFUL,
        404: error(
            "Unknown thread or another tenant's thread; target_not_found: no such target task"
        ),
        409: error("invalid_transition: the target's task is finished"),
    },
)
@api_view(["POST"])
def copy(request, task_id: str):
    store = _store(request)
    data = validated(CopyIn, request, lookup=lambda: store.thread(task_id))
    return Response(store.copy_thread(thread_id=task_id, target_thread_id=data["target_thread_id"]))


@extend_schema(
    tags=TAGS,
    operation_id="langgraph_thread_prune",
    summary="Prune a thread: keep each namespace's latest checkpoint, or delete all (prune)",
    request=PruneIn,
    responses={
        200: Counts,
        **ERRORS_STATEFUL,
        409: error("legal_hold: the tenant or a session the thread served is on legal hold"),
    },
)
@api_view(["POST"])
def prune(request, task_id: str):
    store = _store(request)
    data = validated(PruneIn, request, lookup=lambda: store.thread(task_id))
    return Response(store.prune(thread_id=task_id, strategy=data["strategy"]))


@extend_schema(
    tags=TAGS,
    operation_id="langgraph_runs_delete",
    summary="Delete the checkpoints LangGraph runs made, in every thread (delete_for_runs)",
    request=DeleteRunsIn,
    responses={
        200: Counts,
        **{status: response for status, response in ERRORS_WRITE.items() if status != 404},
        409: error("legal_hold: the tenant or a session a thread served is on legal hold"),
    },
)
@api_view(["POST"])
def delete_runs(request):
    body = DeleteRunsIn(data=request.data)
    body.is_valid(raise_exception=True)
    return Response(_store(request).delete_for_runs(run_ids=body.validated_data["run_ids"]))
