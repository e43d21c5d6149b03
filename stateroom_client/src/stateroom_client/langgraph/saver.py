"""`StateroomSaver`: LangGraph's checkpointer on Stateroom, through the REST API only.

    from stateroom_client.langgraph import StateroomSaver

    saver = StateroomSaver.from_url("http://127.0.0.1:8000", token)
    graph = builder.compile(checkpointer=saver)
    graph.invoke(inputs, {"configurable": {"thread_id": "order-42"}})

A drop-in replacement for LangGraph's `PostgresSaver`. A LangGraph thread is a
Stateroom task: its `task_id` is the thread id when that is a public id
(`[A-Za-z0-9._:-]{1,128}`), else one derived from it, and the thread id is
kept as given. A thread id is any text of 1-512 characters (longer: 422
`Unprocessable`); it travels in request bodies and queries, never in a URL
path. The server makes the thread's task on its first put or write, so the
first `invoke` of a new thread works whatever the durability mode. Every
`BaseCheckpointSaver` method is implemented, sync and async: `put`,
`put_writes`, `get_tuple`, `list` (with `before`, `limit` and a metadata
`filter`; `list(None, filter=...)` searches every thread of the tenant),
`delete_thread`, and the extended `delete_for_runs`, `copy_thread` and `prune`.

Values are sent as plain JSON when they are plain JSON (dicts with string
keys, lists, strings, finite numbers, booleans, None), so the console can
show and diff them; anything else goes through the saver's serializer
(`serde`, LangGraph's `JsonPlusSerializer` by default) and travels as
base64 bytes. Only the channels in `new_versions` are sent with a
checkpoint: the server keeps each channel version once.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import math
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ..aio import AsyncStateroomClient
from ..client import StateroomClient
from ..errors import NotFound

JSON_TYPE = "json"
EMPTY_TYPE = "empty"
PAGE_SIZE = 100
MAX_SAFE_INTEGER = 2**53 - 1


def _plain(value: Any) -> bool:
    """True for JSON data that the server stores as JSON and gives back exactly as written.

    Exactly the builtin types; no NUL or lone surrogate (jsonb holds neither);
    integers within ±(2**53 - 1) (what the server's canonical JSON keeps); and
    floats with a fraction (an integral float such as 2.0 would read back as
    the integer 2); containers nested at most 33 deep. Anything else goes
    through the serializer instead. Containers are walked from a stack, their
    scalars checked in place (a checkpoint's state is mostly strings in lists).
    """
    if type(value) is not dict and type(value) is not list:
        return _plain_scalar(value)
    stack = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > 32:
            return False
        if type(node) is dict:
            for key in node:
                if type(key) is not str or not _plain_text(key):
                    return False
            children: Any = node.values()
        else:
            children = node
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                push((child, depth + 1))
            elif not (_plain_text(child) if kind is str else _plain_scalar(child)):
                return False
    return True


def _plain_text(text: str) -> bool:
    # ASCII (a flag CPython keeps) encodes; else look for a lone surrogate.
    return "\x00" not in text and (text.isascii() or _encodes(text))


def _plain_scalar(value: Any) -> bool:
    kind = type(value)
    if kind is str:
        return _plain_text(value)
    if kind is bool or value is None:
        return True
    if kind is int:
        return bool(abs(value) <= MAX_SAFE_INTEGER)
    if kind is float:
        return math.isfinite(value) and not value.is_integer()
    return False


def _encodes(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def thread_of(config: RunnableConfig) -> str:
    """The config's thread id as text, as PostgresSaver reads it (the server bounds its length)."""
    return str(config["configurable"]["thread_id"])


class _Codec:
    """How the saver turns LangGraph's config, checkpoints and values into API bodies and back."""

    serde: SerializerProtocol

    def encode(self, value: Any) -> dict[str, Any]:
        if _plain(value):
            return {"type": JSON_TYPE, "value": value}
        kind, data = self.serde.dumps_typed(value)
        return {"type": kind, "data": base64.b64encode(data or b"").decode()}

    def decode(self, item: dict[str, Any]) -> Any:
        if item["type"] == JSON_TYPE:
            return item["value"]
        return self.serde.loads_typed((item["type"], base64.b64decode(item["data"] or "")))

    def put_body(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> dict[str, Any]:
        body: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = body.pop("channel_values", None) or {}
        blobs = []
        for channel, version in new_versions.items():
            blob: dict[str, Any] = {"channel": channel, "version": version}
            if channel in values:
                blob.update(self.encode(values[channel]))
            else:
                blob.update(type=EMPTY_TYPE, data="")
            blobs.append(blob)
        configurable = config["configurable"]
        return {
            "checkpoint_ns": configurable.get("checkpoint_ns") or "",
            "checkpoint": body,
            "metadata": get_serializable_checkpoint_metadata(config, metadata),
            "parent_checkpoint_id": configurable.get("checkpoint_id") or "",
            "blobs": blobs,
        }

    def writes_body(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> dict[str, Any]:
        configurable = config["configurable"]
        return {
            "checkpoint_ns": configurable.get("checkpoint_ns") or "",
            "checkpoint_id": configurable["checkpoint_id"],
            "graph_task_id": task_id,
            "graph_task_path": task_path,
            "writes": [
                {"idx": WRITES_IDX_MAP.get(channel, idx), "channel": channel, **self.encode(value)}
                for idx, (channel, value) in enumerate(writes)
            ],
        }

    def to_tuple(self, row: dict[str, Any]) -> CheckpointTuple:
        thread_id, ns = row["thread_id"], row["checkpoint_ns"]
        checkpoint = dict(row["checkpoint"])
        checkpoint["channel_values"] = {
            item["channel"]: self.decode(item) for item in row["channel_values"]
        }
        parent = row.get("parent_checkpoint_id")
        return CheckpointTuple(
            config={
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": ns,
                    "checkpoint_id": row["checkpoint_id"],
                }
            },
            checkpoint=checkpoint,  # type: ignore[arg-type]
            metadata=row["metadata"],
            parent_config=(
                {
                    "configurable": {
                        "thread_id": thread_id,
                        "checkpoint_ns": ns,
                        "checkpoint_id": parent,
                    }
                }
                if parent
                else None
            ),
            pending_writes=[
                (item["task_id"], item["channel"], self.decode(item))
                for item in row["pending_writes"]
            ],
        )


def _list_args(
    config: RunnableConfig | None, filter: dict[str, Any] | None, before: RunnableConfig | None
) -> tuple[str | None, dict[str, Any]]:
    """The thread (None: every thread, or a config without one) and the list's filters."""
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    return None if thread_id is None else str(thread_id), {
        "checkpoint_ns": configurable.get("checkpoint_ns"),
        "checkpoint_id": configurable.get("checkpoint_id"),
        "before": get_checkpoint_id(before) if before else None,
        "metadata": json.dumps(filter) if filter else None,
    }


class StateroomSaver(_Codec, BaseCheckpointSaver[int]):
    """A LangGraph checkpointer that keeps threads in Stateroom (sync and async).

    Give it a `StateroomClient` for the sync methods (what `graph.invoke` and
    `graph.stream` call), an `AsyncStateroomClient` for the async ones
    (`graph.ainvoke`), or both; `from_url` makes both. Without an async
    client the async methods run the sync ones in a worker thread.
    """

    def __init__(
        self,
        client: StateroomClient | None = None,
        *,
        aclient: AsyncStateroomClient | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        if client is None and aclient is None:
            raise ValueError(
                "StateroomSaver needs a StateroomClient, an AsyncStateroomClient, or both"
            )
        super().__init__(serde=serde)
        self.client = client
        self.aclient = aclient
        self._owns_clients = False

    @classmethod
    def from_url(cls, base_url: str, token: str, **kwargs: Any) -> StateroomSaver:
        """Both clients for `base_url` and `token` (closed by `close()` / `aclose()`)."""
        serde = kwargs.pop("serde", None)
        saver = cls(
            StateroomClient(base_url, token, **kwargs),
            aclient=AsyncStateroomClient(base_url, token, **kwargs),
            serde=serde,
        )
        saver._owns_clients = True
        return saver

    def close(self) -> None:
        if self._owns_clients and self.client is not None:
            self.client.close()

    async def aclose(self) -> None:
        self.close()
        if self._owns_clients and self.aclient is not None:
            await self.aclient.close()

    @property
    def _sync(self) -> StateroomClient:
        if self.client is None:
            raise RuntimeError("This StateroomSaver has no sync client: use the async methods")
        return self.client

    # --- sync -----------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config["configurable"]
        try:
            page = self._sync.list_graph_checkpoints(
                thread_of(config),
                checkpoint_ns=configurable.get("checkpoint_ns") or "",
                checkpoint_id=get_checkpoint_id(config),
                limit=1,
            )
        except NotFound:
            return None
        return self.to_tuple(page.results[0]) if page.results else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        thread_id, query = _list_args(config, filter, before)
        size = min(limit or PAGE_SIZE, 500)
        try:
            rows = self._sync.iter_graph_checkpoints(thread_id, page_size=size, **query)
            for count, row in enumerate(rows, start=1):
                yield self.to_tuple(row)
                if limit is not None and count >= limit:
                    return
        except NotFound:
            return

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id = thread_of(config)
        body = self.put_body(config, checkpoint, metadata, new_versions)
        self._sync.put_graph_checkpoint(thread_id, body)  # a new thread's task is made
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": body["checkpoint_ns"],
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._sync.put_graph_writes(
            thread_of(config), self.writes_body(config, writes, task_id, task_path)
        )

    def delete_thread(self, thread_id: str) -> None:
        with contextlib.suppress(NotFound):  # no such thread: nothing to delete
            self._sync.delete_graph_thread(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        if run_ids:
            self._sync.delete_graph_runs([str(r) for r in run_ids])

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        with contextlib.suppress(NotFound):  # no such source thread: nothing to copy
            self._sync.copy_graph_thread(
                str(source_thread_id), target_thread_id=str(target_thread_id)
            )

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        for thread_id in thread_ids:
            try:
                self._sync.prune_graph_thread(str(thread_id), strategy=strategy)
            except NotFound:
                continue

    # --- async ----------------------------------------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if self.aclient is None:
            return await asyncio.to_thread(self.get_tuple, config)
        configurable = config["configurable"]
        try:
            page = await self.aclient.list_graph_checkpoints(
                thread_of(config),
                checkpoint_ns=configurable.get("checkpoint_ns") or "",
                checkpoint_id=get_checkpoint_id(config),
                limit=1,
            )
        except NotFound:
            return None
        return self.to_tuple(page.results[0]) if page.results else None

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        if self.aclient is None:
            found = await asyncio.to_thread(
                lambda: list(self.list(config, filter=filter, before=before, limit=limit))
            )
            for item in found:
                yield item
            return
        thread_id, query = _list_args(config, filter, before)
        size = min(limit or PAGE_SIZE, 500)
        count = 0
        try:
            async for row in self.aclient.iter_graph_checkpoints(
                thread_id, page_size=size, **query
            ):
                yield self.to_tuple(row)
                count += 1
                if limit is not None and count >= limit:
                    return
        except NotFound:
            return

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        if self.aclient is None:
            return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)
        thread_id = thread_of(config)
        body = self.put_body(config, checkpoint, metadata, new_versions)
        await self.aclient.put_graph_checkpoint(thread_id, body)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": body["checkpoint_ns"],
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if self.aclient is None:
            return await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)
        await self.aclient.put_graph_writes(
            thread_of(config), self.writes_body(config, writes, task_id, task_path)
        )

    async def adelete_thread(self, thread_id: str) -> None:
        if self.aclient is None:
            return await asyncio.to_thread(self.delete_thread, thread_id)
        with contextlib.suppress(NotFound):
            await self.aclient.delete_graph_thread(str(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        if self.aclient is None:
            return await asyncio.to_thread(self.delete_for_runs, run_ids)
        if run_ids:
            await self.aclient.delete_graph_runs([str(r) for r in run_ids])

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        if self.aclient is None:
            return await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)
        with contextlib.suppress(NotFound):
            await self.aclient.copy_graph_thread(
                str(source_thread_id), target_thread_id=str(target_thread_id)
            )

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if self.aclient is None:
            return await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
        for thread_id in thread_ids:
            try:
                await self.aclient.prune_graph_thread(str(thread_id), strategy=strategy)
            except NotFound:
                continue
