"""Runtime API for LangGraph threads: what `stateroom_client.langgraph.StateroomSaver` calls.

A thread is a task; these endpoints keep its checkpoints, channel values and
pending writes (docs/architecture.md, "LangGraph threads"). The saver
addresses a thread by its id in the query or the body (`/langgraph/...`):
LangGraph takes any string as a thread id, and a put or a write makes the
thread's task on a thread's first call. The older `/tasks/{task_id}/langgraph/...`
routes address a thread whose id is a public id, and make no task. Values travel as
`{"type": "json", "value": ...}` (plain JSON, readable in the console) or
`{"type": "<serializer type>", "data": "<base64>"}` (LangGraph's serializer
output, kept as bytes).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.response import Response

from stateroom.actor import Actor
from stateroom.api import DEFAULT_LIMIT, not_found_first, validated
from stateroom.api_schema import ERRORS_READ, ERRORS_STATEFUL, ERRORS_WRITE, error
from stateroom.contract import (
    GatedJSONField,
    NoQuery,
    QuerySerializer,
    StrictCharField,
    StrictChoiceField,
    StrictDictField,
    StrictIntegerField,
    StrictSerializer,
    limit_field,
    query,
)
from stateroom.errors import NotFound, Unprocessable, UnusedName
from tenancy_app.middleware import non_atomic_tenant_view

from .langgraph_store import (
    CHANNEL_MAX,
    ID_MAX,
    JSON_TYPE,
    NS_MAX,
    STRATEGIES,
    TASK_PATH_MAX,
    THREAD_ID_MAX,
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


class ValueIn(StrictSerializer):
    type = StrictCharField(
        max_length=TYPE_MAX,
        help_text="`json` (the value is in `value`) or the serializer's type (bytes in `data`)",
    )
    value = GatedJSONField(required=False, allow_null=True)
    data = StrictCharField(required=False, allow_blank=True)

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
    channel = StrictCharField(max_length=CHANNEL_MAX)
    version = GatedJSONField(help_text="The channel's version: a string or a number")


class WriteIn(ValueIn):
    idx = StrictIntegerField(help_text="Index in the task's writes; < 0 for special channels")
    channel = StrictCharField(max_length=CHANNEL_MAX)


class PutIn(StrictSerializer):
    checkpoint_ns = StrictCharField(max_length=NS_MAX, allow_blank=True, default="")
    checkpoint = StrictDictField(
        help_text="LangGraph's checkpoint without channel_values (v, id, ts, channel_versions,"
        " versions_seen, ...)"
    )
    metadata = StrictDictField(required=False, default=dict)
    parent_checkpoint_id = StrictCharField(
        max_length=ID_MAX, required=False, allow_blank=True, allow_null=True, default=""
    )
    blobs = BlobIn(
        many=True,
        required=False,
        default=list,
        help_text="Values of the channels new in this checkpoint (stored once per version)",
    )


def thread_id_field(**kwargs: Any) -> StrictCharField:
    return StrictCharField(
        max_length=THREAD_ID_MAX,
        help_text=f"LangGraph's thread id, as given: any text of 1-{THREAD_ID_MAX} characters",
        **kwargs,
    )


class ThreadPutIn(PutIn):
    thread_id = thread_id_field()


class PutOut(serializers.Serializer):
    thread_id = serializers.CharField()
    checkpoint_ns = serializers.CharField()
    checkpoint_id = serializers.CharField()


class WritesIn(StrictSerializer):
    checkpoint_ns = StrictCharField(max_length=NS_MAX, allow_blank=True, default="")
    checkpoint_id = StrictCharField(max_length=ID_MAX)
    graph_task_id = StrictCharField(max_length=ID_MAX, help_text="LangGraph's task id")
    graph_task_path = StrictCharField(
        max_length=TASK_PATH_MAX, allow_blank=True, required=False, default=""
    )
    writes = WriteIn(many=True)


class ThreadWritesIn(WritesIn):
    thread_id = thread_id_field()


class WritesOut(serializers.Serializer):
    written = serializers.IntegerField(help_text="Rows written; a repeated write is not counted")


class CopyIn(StrictSerializer):
    target_thread_id = StrictCharField(max_length=128)


class PruneIn(StrictSerializer):
    strategy = StrictChoiceField(choices=STRATEGIES, default="keep_latest")


class ThreadIn(StrictSerializer):
    thread_id = thread_id_field()


class ThreadCopyIn(ThreadIn):
    target_thread_id = thread_id_field()


class ThreadPruneIn(ThreadIn, PruneIn):
    pass


class DeleteRunsIn(StrictSerializer):
    run_ids = serializers.ListField(child=StrictCharField(max_length=128), max_length=1000)


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


class ListQuery(QuerySerializer):
    checkpoint_ns = serializers.CharField(
        required=False, allow_blank=True, help_text="Only this namespace ('' is the root graph)"
    )
    checkpoint_id = serializers.CharField(required=False, help_text="Only this checkpoint")
    before = serializers.CharField(required=False, help_text="Only checkpoints older than this id")
    metadata = serializers.CharField(
        required=False, help_text="A JSON object the checkpoint's metadata must contain"
    )
    limit = limit_field()
    cursor = serializers.CharField(
        required=False, help_text="From the `next` URL of the previous page"
    )


class ThreadListQuery(ListQuery):
    thread_id = serializers.CharField(
        required=False,
        max_length=THREAD_ID_MAX,
        trim_whitespace=False,
        help_text="Only this thread; absent: search every thread of the tenant",
    )


def _list_query(request, serializer=ListQuery) -> dict[str, Any]:
    """The list's filters; `checkpoint_ns=` (empty) is the root namespace, absent is every one."""
    params = query(request, serializer)
    if "thread_id" in request.query_params and serializer is ThreadListQuery:
        if not request.query_params["thread_id"]:  # `thread_id=` is no thread, not every one
            raise Unprocessable(
                "thread_id must not be blank.",
                details={"thread_id": ["may not be blank; leave it out to search every thread"]},
            )
        params["thread_id"] = request.query_params["thread_id"]
    if "checkpoint_ns" in request.query_params:
        params["checkpoint_ns"] = request.query_params["checkpoint_ns"]
    out: dict[str, Any] = {"limit": params.pop("limit", DEFAULT_LIMIT)}
    for name in ("thread_id", "checkpoint_ns", "checkpoint_id", "before"):
        if name in params:
            out[name] = params[name]
    if "metadata" in params:
        try:
            metadata = json.loads(params["metadata"])
        except ValueError:
            metadata = None
        if not isinstance(metadata, dict):
            raise Unprocessable(
                "metadata must be a JSON object.",
                details={"metadata": ["a JSON object the checkpoints' metadata contains"]},
            )
        out["metadata"] = metadata
    if "cursor" in params:
        checkpoint_id, _, pk = params["cursor"].rpartition("~")
        if not checkpoint_id or not pk.isdigit():
            raise Unprocessable(
                "cursor is not one this API gave.", details={"cursor": ["from a `next` URL only"]}
            )
        out["after_key"] = (checkpoint_id, int(pk))
    return out


# --- views --------------------------------------------------------------------
@extend_schema(
    methods=["GET"],
    tags=TAGS,
    operation_id="langgraph_checkpoints_list",
    summary="A thread's checkpoints, newest first, with channel values and pending writes",
    parameters=[ListQuery],
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
@non_atomic_tenant_view
@api_view(["GET", "POST"])
def checkpoints(request, task_id: str):
    store = _store(request)
    if request.method == "POST":
        data = validated(PutIn, request, lookup=lambda: store.thread(task_id))
        return _put(store, task_id, data, lookup=lambda: store.thread(task_id))
    query = not_found_first(lambda: _list_query(request), lambda: store.thread(task_id))
    return _page(request, store, {**query, "thread_id": task_id})


def _put(store: GraphThreadStore, thread_id: str, data: dict, *, lookup) -> Response:
    created = not_found_first(
        lambda: store.put(
            thread_id=thread_id,
            checkpoint_ns=data["checkpoint_ns"],
            checkpoint=data["checkpoint"],
            metadata=data["metadata"],
            parent_checkpoint_id=data["parent_checkpoint_id"] or "",
            blobs=[
                Blob(channel=b["channel"], version=b["version"], value=b["parsed"])
                for b in data["blobs"]
            ],
        ),
        lookup,
    )
    body = {
        "thread_id": thread_id,
        "checkpoint_ns": data["checkpoint_ns"],
        "checkpoint_id": data["checkpoint"]["id"],
    }
    return Response(body, status=201 if created else 200)


def _page(request, store: GraphThreadStore, query: dict[str, Any]) -> Response:
    rows, more = store.list_checkpoints(**query, raw=True)
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
@non_atomic_tenant_view
@api_view(["POST"])
def writes(request, task_id: str):
    store = _store(request)
    data = validated(WritesIn, request, lookup=lambda: store.thread(task_id))
    return _put_writes(store, task_id, data, lookup=lambda: store.thread(task_id))


def _put_writes(store: GraphThreadStore, thread_id: str, data: dict, *, lookup) -> Response:
    written = not_found_first(
        lambda: store.put_writes(
            thread_id=thread_id,
            checkpoint_ns=data["checkpoint_ns"],
            checkpoint_id=data["checkpoint_id"],
            graph_task_id=data["graph_task_id"],
            graph_task_path=data["graph_task_path"],
            writes=[
                Write(idx=w["idx"], channel=w["channel"], value=w["parsed"]) for w in data["writes"]
            ],
        ),
        lookup,
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
    store = _store(request)
    not_found_first(lambda: query(request, NoQuery), lambda: store.thread(task_id))
    return Response(store.delete_thread(thread_id=task_id))


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
    data = validated(DeleteRunsIn, request, lookup=lambda: None)
    return Response(_store(request).delete_for_runs(run_ids=data["run_ids"]))


# --- threads addressed by id in the query or body (what the saver calls) -----------
def _none() -> None:
    return None


def _by_name(call: Callable[[], Response]) -> Response:
    """`call()` on a thread named by LangGraph's id: an unknown one is a name this tenant
    has not used (`UnusedName`: 404, and no `access.denied` event; the saver's first
    look at every new thread is one)."""
    try:
        return call()
    except NotFound as exc:
        raise UnusedName(exc.message, code=exc.code, details=exc.details) from exc


def _new_thread_too(store: GraphThreadStore, thread_id: str, write: Callable[[], Response]):
    """`write()`; on an unknown thread, make its task and write again.

    LangGraph's first call on a new thread may be a put or a write (with
    durability "exit", writes come first): either makes the thread. The
    known thread's path stays the one statement of the store.
    """
    try:
        return write()
    except NotFound:
        store.ensure_thread(thread_id)
        return write()


@extend_schema(
    methods=["GET"],
    tags=TAGS,
    operation_id="langgraph_search",
    summary="Checkpoints of one thread (`thread_id`) or of every thread, newest first",
    parameters=[ThreadListQuery],
    responses={200: CheckpointPage, **ERRORS_READ, 422: error("Invalid filter, limit or cursor")},
)
@extend_schema(
    methods=["POST"],
    tags=TAGS,
    operation_id="langgraph_put",
    summary="Store a checkpoint of `thread_id`; a new thread's task is made",
    request=ThreadPutIn,
    responses={
        201: PutOut,
        200: PutOut,
        **ERRORS_STATEFUL,
        409: error("invalid_transition: the thread's task is finished"),
        422: error("Field validation failed, or not_serializable; details lists the fields"),
    },
)
@non_atomic_tenant_view
@api_view(["GET", "POST"])
def thread_checkpoints(request):
    store = _store(request)
    if request.method == "POST":
        data = validated(ThreadPutIn, request, lookup=lambda: None)
        return _new_thread_too(
            store, data["thread_id"], lambda: _put(store, data["thread_id"], data, lookup=_none)
        )
    return _by_name(lambda: _page(request, store, _list_query(request, ThreadListQuery)))


@extend_schema(
    tags=TAGS,
    operation_id="langgraph_put_writes",
    summary="Store pending writes of `thread_id`; a new thread's task is made",
    request=ThreadWritesIn,
    responses={
        201: WritesOut,
        **ERRORS_STATEFUL,
        409: error("invalid_transition: the thread's task is finished"),
        422: error("Field validation failed, or not_serializable; details lists the fields"),
    },
)
@non_atomic_tenant_view
@api_view(["POST"])
def thread_writes(request):
    store = _store(request)
    data = validated(ThreadWritesIn, request, lookup=lambda: None)
    return _new_thread_too(
        store, data["thread_id"], lambda: _put_writes(store, data["thread_id"], data, lookup=_none)
    )


@extend_schema(
    tags=TAGS,
    operation_id="langgraph_delete",
    summary="Delete a thread's checkpoints, values and writes (delete_thread); the task stays",
    request=ThreadIn,
    responses={
        200: Counts,
        **ERRORS_STATEFUL,
        409: error("legal_hold: the tenant or a session the thread served is on legal hold"),
    },
)
@api_view(["POST"])
def thread_delete(request):
    data = validated(ThreadIn, request, lookup=lambda: None)
    return _by_name(lambda: Response(_store(request).delete_thread(thread_id=data["thread_id"])))


@extend_schema(
    tags=TAGS,
    operation_id="langgraph_copy",
    summary="Copy a thread to `target_thread_id` (copy_thread); a new target's task is made",
    request=ThreadCopyIn,
    responses={
        200: Counts,
        **ERRORS_STATEFUL,
        409: error("invalid_transition: the target's task is finished"),
    },
)
@api_view(["POST"])
def thread_copy(request):
    data = validated(ThreadCopyIn, request, lookup=lambda: None)
    return _by_name(
        lambda: Response(
            _store(request).copy_thread(
                thread_id=data["thread_id"],
                target_thread_id=data["target_thread_id"],
                create_target=True,
            )
        )
    )


@extend_schema(
    tags=TAGS,
    operation_id="langgraph_prune",
    summary="Prune a thread: keep each namespace's latest checkpoint, or delete all (prune)",
    request=ThreadPruneIn,
    responses={
        200: Counts,
        **ERRORS_STATEFUL,
        409: error("legal_hold: the tenant or a session the thread served is on legal hold"),
    },
)
@api_view(["POST"])
def thread_prune(request):
    data = validated(ThreadPruneIn, request, lookup=lambda: None)
    store = _store(request)
    return _by_name(
        lambda: Response(store.prune(thread_id=data["thread_id"], strategy=data["strategy"]))
    )
