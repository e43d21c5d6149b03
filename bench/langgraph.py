"""LangGraph checkpointers: StateroomSaver (over the API) beside PostgresSaver, same PostgreSQL.

Both savers get the same work: threads whose state is a ~10 KB `messages`
channel (plain JSON, as a chat graph's history), and, per call:

- `put`: a new checkpoint whose `messages` changed (a new ~10 KB version)
  on top of the thread's latest one;
- `get_tuple`: the latest checkpoint of a thread, values and pending writes;
- `list`: the thread's newest 10 checkpoints (`limit=10`), each ~10 KB;
- `graph`: a whole 3-node `graph.invoke` on a new thread (a checkpoint per
  node, with its writes: what LangGraph itself calls on the saver).

StateroomSaver goes through the HTTP API (`StateroomClient`, keep-alive, no
retries) to the web server with the production command line of the `api` section,
so each call is a request through auth, the tenant transaction and RLS.
PostgresSaver (langgraph-checkpoint-postgres) talks to the bench database
directly, in a schema of its own (`langgraph_bench`, created by the owner
role, which also runs it: PostgresSaver's `setup()` creates tables). The two
are timed call by call in turn (`measure_interleaved`), so a busy neighbour
lands on both alike; the ratio is Stateroom's p50 over PostgresSaver's, with
the targets of issue 37 (`TARGETS`).
"""

from __future__ import annotations

import json
import operator
import os
import uuid
from typing import Annotated, Any, TypedDict

from .api import CONFIGS, runtime_token, web_server
from .generate import Catalogue
from .scale import Scale
from .timing import measure_interleaved

SCHEMA = "langgraph_bench"
THREADS = 20
HISTORY = 12  # checkpoints per thread before timing starts (list reads 10)
MESSAGE = "x" * 190  # with its keys, ~200 bytes of JSON per message
MESSAGES = 42  # ~10 KB of messages per checkpoint
OPS = ("put", "get_tuple", "list", "graph")
# Stateroom's p50 at most this many times PostgresSaver's (issue 37).
TARGETS = {"put": 3.0, "get_tuple": 3.0, "list": 3.0, "graph": 2.5}


class State(TypedDict):
    """The 3-node graph's state: each node adds a message."""

    messages: Annotated[list, operator.add]


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

    def graph(self, i: int) -> dict:
        """A 3-node graph on a new thread: a checkpoint per node, as LangGraph writes them."""
        out = self.compiled.invoke(
            {"messages": [f"start {i}"]}, self.config(f"{self.ids[0]}-graph-{i}")
        )
        assert out["messages"][-1] == "c"
        return out

    def compile(self) -> None:
        from langgraph.graph import END, START, StateGraph

        builder = StateGraph(State)
        for name in ("a", "b", "c"):
            builder.add_node(name, lambda _state, name=name: {"messages": [name]})
        builder.add_edge(START, "a")
        builder.add_edge("a", "b")
        builder.add_edge("b", "c")
        builder.add_edge("c", END)
        self.compiled = builder.compile(checkpointer=self.saver)


def _timed(sides: dict[str, Threads], iterations: int, log) -> dict:
    for threads in sides.values():
        threads.compile()
        for n in range(THREADS * HISTORY):
            threads.put(n)
    out: dict[str, dict] = {who: {} for who in sides}
    for op in OPS:
        samples = measure_interleaved(
            {who: getattr(threads, op) for who, threads in sides.items()},
            iterations=iterations,
            warmup=10,
            max_seconds=60,
        )
        for who, sample in samples.items():
            out[who][op] = sample.summary()
            log(f"  {who} {op}: {out[who][op]}")
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
            f"StateroomSaver → StateroomClient (httpx keep-alive) → {name}, 2 workers"
        ),
        "postgres_setup": f"PostgresSaver (psycopg, autocommit) on schema {SCHEMA}, same database",
    }
    try:
        with (
            web_server(log, extra) as base,
            StateroomClient(base, token, retries=0) as client,
            PostgresSaver.from_conn_string(postgres_url(owner)) as saver,
        ):
            saver.setup()
            sides = {
                "stateroom": Threads(StateroomSaver(client), tag),
                "postgres": Threads(saver, tag),
            }
            result.update(_timed(sides, iterations, log))
    finally:
        with psycopg.connect(libpq_url(owner), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    result["ratios"] = {
        op: round(result["stateroom"][op]["p50_ms"] / result["postgres"][op]["p50_ms"], 2)
        for op in OPS
    }
    result["targets"] = TARGETS
    result["met"] = {op: result["ratios"][op] <= TARGETS[op] for op in OPS}
    result["load_average"] = load_average()
    log(f"  Stateroom / PostgresSaver p50: {result['ratios']} (load {result['load_average']})")
    return result


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages (the bench shares its cores)."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])
