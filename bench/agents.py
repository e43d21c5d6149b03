"""Agents SDK sessions: StateroomSession (over the API) beside SQLAlchemySession, same PostgreSQL.

Both sessions get the same work, per call, on sessions that already hold a
history of SDK messages (~200 bytes each, as a chat's turns):

- `add 1`: `add_items` with one message;
- `add 10`: `add_items` with ten messages;
- `read 50`: `get_items(limit=50)`, the newest 50 items in order.

StateroomSession goes through the HTTP API (`AsyncStateroomClient`, keep-alive,
no retries) to the web server with the production command line of the `api`
section. SQLAlchemySession (the SDK's `agents.extensions.memory`) runs on the
bench database through SQLAlchemy's async engine on psycopg 3, in a schema of
its own (`agents_bench`, created by the owner role, which also runs it: the
session creates its tables). Both are driven from one event loop and timed
call by call in turn (`measure_interleaved`); the ratio is Stateroom's p50
over SQLAlchemySession's, with the targets of issue 37 (`TARGETS`).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

from .api import CONFIGS, runtime_token, web_server
from .generate import Catalogue
from .langgraph import load_average
from .scale import Scale
from .timing import measure_interleaved

SCHEMA = "agents_bench"
SESSIONS = 10
HISTORY = 120  # messages per session before timing starts (read 50 reads the newest 50)
TEXT = "x" * 150  # with its keys, ~200 bytes of JSON per message
OPS = ("add 1", "add 10", "read 50")
# Stateroom's p50 at most this many times SQLAlchemySession's (issue 37).
TARGETS = {"add 1": 2.0, "add 10": 2.0, "read 50": 2.0}


def message(i: int, n: int) -> dict[str, Any]:
    return {"role": "user" if n % 2 else "assistant", "content": f"{TEXT} {i}-{n}"}


class Sessions:
    """One kind of session, `SESSIONS` of them, each op a coroutine run on `loop`."""

    def __init__(self, sessions: list[Any], loop: asyncio.AbstractEventLoop) -> None:
        self.sessions = sessions
        self.loop = loop

    def add(self, count: int):
        def op(i: int) -> None:
            session = self.sessions[i % SESSIONS]
            self.loop.run_until_complete(session.add_items([message(i, n) for n in range(count)]))

        return op

    def read(self, i: int) -> list:
        items = self.loop.run_until_complete(self.sessions[i % SESSIONS].get_items(limit=50))
        assert len(items) == 50, len(items)
        return items

    def fill(self) -> None:
        for session in self.sessions:
            self.loop.run_until_complete(
                session.add_items([message(-1, n) for n in range(HISTORY)])
            )


def sqlalchemy_url(owner_url: str) -> str:
    """SQLAlchemy's URL for the same server: a socket directory (the embedded server) goes
    as the `host` query parameter, where SQLAlchemy passes it to libpq."""
    import dj_database_url
    from sqlalchemy.engine import URL

    parsed = dj_database_url.parse(owner_url)
    host = parsed["HOST"] or None
    socket_dir = host is not None and host.startswith("/")
    return URL.create(
        "postgresql+psycopg",
        username=parsed["USER"] or None,
        password=parsed["PASSWORD"] or None,
        host=None if socket_dir else host,
        port=(parsed["PORT"] or None) if not socket_dir else None,
        database=parsed["NAME"],
        query={"host": host} if socket_dir else {},
    ).render_as_string(hide_password=False)


def run(url: str, scale: Scale, cat: Catalogue, log) -> dict:
    import psycopg
    from sqlalchemy.ext.asyncio import create_async_engine

    from stateroom_client import AsyncStateroomClient

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
        "sessions": SESSIONS,
        "history": HISTORY,
        "iterations": iterations,
        "stateroom_setup": (
            f"StateroomSession → AsyncStateroomClient (httpx keep-alive) → {name}, 2 workers"
        ),
        "sqlalchemy_setup": (
            f"SQLAlchemySession (SQLAlchemy async, psycopg 3) on schema {SCHEMA}, same database"
        ),
    }
    loop = asyncio.new_event_loop()
    engine = create_async_engine(
        sqlalchemy_url(owner), connect_args={"options": f"-csearch_path={SCHEMA}"}
    )
    try:
        with web_server(log, extra) as base:
            client = AsyncStateroomClient(base, token, retries=0)
            result.update(_timed(_sides(client, engine, loop, tag), iterations, log))
            loop.run_until_complete(client.close())
    finally:
        loop.run_until_complete(engine.dispose())
        loop.close()
        with psycopg.connect(libpq_url(owner), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    result["ratios"] = {
        op: round(result["stateroom"][op]["p50_ms"] / result["sqlalchemy"][op]["p50_ms"], 2)
        for op in OPS
    }
    result["targets"] = TARGETS
    result["met"] = {op: result["ratios"][op] <= TARGETS[op] for op in OPS}
    result["load_average"] = load_average()
    log(f"  Stateroom / SQLAlchemySession p50: {result['ratios']} (load {result['load_average']})")
    return result


def _sides(client, engine, loop: asyncio.AbstractEventLoop, tag: str) -> dict[str, Sessions]:
    """`SESSIONS` sessions of each kind, with `HISTORY` messages each."""
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

    from stateroom_client.agents import StateroomSession

    ours = [
        loop.run_until_complete(
            StateroomSession.create(client, user_id="bench", session_id=f"ag-{tag}-{n}")
        )
        for n in range(SESSIONS)
    ]
    theirs = [
        SQLAlchemySession(f"ag-{tag}-{n}", engine=engine, create_tables=True)
        for n in range(SESSIONS)
    ]
    sides = {"stateroom": Sessions(ours, loop), "sqlalchemy": Sessions(theirs, loop)}
    for side in sides.values():
        side.fill()
    return sides


def _timed(sides: dict[str, Sessions], iterations: int, log) -> dict:
    out: dict[str, dict] = {who: {} for who in sides}
    for op in OPS:
        samples = measure_interleaved(
            {who: _op(side, op) for who, side in sides.items()},
            iterations=iterations,
            warmup=10,
            max_seconds=60,
        )
        for who, sample in samples.items():
            out[who][op] = sample.summary()
            log(f"  {who} {op}: {out[who][op]}")
    return out


def _op(side: Sessions, op: str):
    return {"add 1": side.add(1), "add 10": side.add(10), "read 50": side.read}[op]
