"""LangGraph checkpointers: StateroomSaver (over the API) beside PostgresSaver, same PostgreSQL.

Both savers get the same work: threads whose state is a ~10 KB `messages`
channel (plain JSON, as a chat graph's history), and, per call:

- `put`: a new checkpoint whose `messages` changed (a new ~10 KB version)
  on top of the thread's latest one;
- `get_tuple`: the latest checkpoint of a thread, values and pending writes;
- `list`: the thread's newest 10 checkpoints (`limit=10`), each ~10 KB.

StateroomSaver goes through the HTTP API (`StateroomClient`, keep-alive, no
retries) to gunicorn with the production command line of the `api` section,
so each call is a request through auth, the tenant transaction and RLS.
PostgresSaver (langgraph-checkpoint-postgres) talks to the bench database
directly, in a schema of its own (`langgraph_bench`, created by the owner
role, which also runs it: PostgresSaver's `setup()` creates tables). The
ratio is Stateroom's p50 over PostgresSaver's.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from .api import CONFIGS, gunicorn, runtime_token
from .generate import Catalogue
from .scale import Scale
from .timing import measure

SCHEMA = "langgraph_bench"
THREADS = 20
HISTORY = 12  # checkpoints per thread before timing starts (list reads 10)
MESSAGE = "x" * 190  # with its keys, ~200 bytes of JSON per message
MESSAGES = 42  # ~10 KB of messages per checkpoint


def state(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 else "assistant", "id": f"m-{n}-{i}", "content": MESSAGE}
        for i in range(MESSAGES)
    ]


class Threads:
    """The checkpoints one saver gets: a chain per thread, `messages` at a new version each time."""

    def __init__(self, saver: Any, tag: str) -> None:
        from langgraph.checkpoint.base import empty_checkpoint

        self.saver = saver
        self.empty = empty_checkpoint
        self.ids = [f"bench-{tag}-{n}" for n in range(THREADS)]
        self.heads: dict[str, dict] = {}
        self.versions: dict[str, int] = {}

    def config(self, thread_id: str) -> dict:
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}

    def put(self, i: int) -> dict:
        thread_id = self.ids[i % THREADS]
        version = self.versions.get(thread_id, 0) + 1
        checkpoint = self.empty()
        checkpoint["channel_values"] = {"messages": state(version)}
        checkpoint["channel_versions"] = {"messages": version}
        checkpoint["versions_seen"] = {"agent": {"messages": version - 1}}
        parent = self.heads.get(thread_id, self.config(thread_id))
        head = self.saver.put(
            parent, checkpoint, {"source": "loop", "step": version}, {"messages": version}
        )
        self.heads[thread_id], self.versions[thread_id] = head, version
        return head

    def get_tuple(self, i: int) -> Any:
        found = self.saver.get_tuple(self.config(self.ids[i % THREADS]))
        assert found is not None and len(found.checkpoint["channel_values"]["messages"]) == MESSAGES
        return found

    def list(self, i: int) -> list:
        found = list(self.saver.list(self.config(self.ids[i % THREADS]), limit=10))
        assert len(found) == 10
        return found


def _timed(threads: Threads, iterations: int, log, label: str) -> dict:
    for n in range(THREADS * HISTORY):
        threads.put(n)
    out = {}
    for name in ("put", "get_tuple", "list"):
        sample = measure(getattr(threads, name), iterations=iterations, warmup=10, max_seconds=30)
        out[name] = sample.summary()
        log(f"  {label} {name}: {out[name]}")
    return out


def postgres_url(owner_url: str) -> str:
    from .database import libpq_url

    url = libpq_url(owner_url)
    return url + ("&" if "?" in url else "?") + f"options=-csearch_path%3D{SCHEMA}"


def run(url: str, scale: Scale, cat: Catalogue, log) -> dict:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    from stateroom_client import StateroomClient
    from stateroom_client.langgraph import StateroomSaver

    from .database import libpq_url

    owner = os.environ["DATABASE_OWNER_URL"]
    with psycopg.connect(libpq_url(owner), autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
    iterations = max(50, scale.op_iterations // 4)
    tag = uuid.uuid4().hex[:6]
    token = runtime_token(cat)
    name, extra = CONFIGS[0]
    result: dict = {
        "checkpoint_bytes": len(json.dumps(state(1))),
        "threads": THREADS,
        "history": HISTORY,
        "iterations": iterations,
        "stateroom": {},
        "postgres": {},
        "stateroom_setup": (
            f"StateroomSaver → StateroomClient (httpx keep-alive) → gunicorn {name} workers"
        ),
        "postgres_setup": f"PostgresSaver (psycopg, autocommit) on schema {SCHEMA}, same database",
    }
    try:
        with gunicorn(log, extra) as base, StateroomClient(base, token, retries=0) as client:
            result["stateroom"] = _timed(
                Threads(StateroomSaver(client), tag), iterations, log, "StateroomSaver"
            )
        with PostgresSaver.from_conn_string(postgres_url(owner)) as saver:
            saver.setup()
            result["postgres"] = _timed(Threads(saver, tag), iterations, log, "PostgresSaver")
    finally:
        with psycopg.connect(libpq_url(owner), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    result["ratios"] = {
        op: round(result["stateroom"][op]["p50_ms"] / result["postgres"][op]["p50_ms"], 2)
        for op in ("put", "get_tuple", "list")
    }
    log(f"  Stateroom / PostgresSaver p50: {result['ratios']}")
    return result
