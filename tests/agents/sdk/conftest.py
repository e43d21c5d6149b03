"""The OpenAI Agents SDK's own session tests, run against `StateroomSession` on the live server.

The tests in v<version>/ are the SDK's (scripts/vendor_sdk_tests.py copies
them from its source distribution, with its LICENSE). They build their
sessions as ``SQLiteSession(session_id, db_path, session_settings=...)`` or
``SQLAlchemySession.from_url(session_id, url=..., ...)``; here those names
build a `StateroomSession` on a Stateroom session of the live server instead,
one per (store, session_id) the test names: the same path and id give the
same history, an in-memory store is new each time, as with SQLite.

Only the tree of the newest vendored release not newer than the installed SDK
is collected (each release's tests use that release's helpers). Tests of the
SQLite/SQLAlchemy machinery itself (connections, locks, engines, rows written
behind the session's back) do not apply and are deselected; NOT_APPLICABLE
gives each one's reason, and the README lists them. Of the Runner's own test
files (RUNNER_FILES) only the tests that build a session are collected.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import uuid
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from agents import set_tracing_disabled
from agents.memory import SessionSettings

from stateroom_client import AsyncStateroomClient, StateroomClient
from stateroom_client.agents import StateroomSession
from stateroom_client.agents.session import coerce_settings

HERE = Path(__file__).parent
USER = "sdk-tests"


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])


INSTALLED = _release(version("openai-agents"))
VENDORED = {_release((d / "VERSION").read_text().strip()): d.name for d in HERE.glob("v*_*_*")}
USABLE = [release for release in VENDORED if release <= INSTALLED]
# The newest vendored release not newer than the installed SDK; none when the SDK
# is older than every vendored release (then nothing is collected and the
# conformance test below fails).
CHOSEN = VENDORED[max(USABLE)] if USABLE else None
collect_ignore = [name for name in VENDORED.values() if name != CHOSEN]

_SQLITE = "it tests SQLiteSession's own SQLite machinery"
_ALCHEMY = "it tests SQLAlchemySession's own engine and tables"
_CORRUPT = (
    "it writes a corrupt row into the SQL table behind the session; Stateroom items are"
    " validated JSON written through the API, so there is no such row to skip"
)
NOT_APPLICABLE: dict[str, str] = {
    # tests/memory/test_session.py
    "test_await_mutation_cancellation_hides_later_failure_without_loop_error": (
        "it tests agents.memory.sqlite_session._await_mutation, an SQLite helper"
    ),
    "test_sqlite_session_close_closes_worker_thread_connections": _SQLITE,
    "test_sqlite_session_reaps_connections_from_exited_worker_threads": _SQLITE,
    "test_sqlite_session_closes_retired_connections_before_the_next_allocation": _SQLITE,
    "test_sqlite_session_keeps_connections_of_live_worker_threads": _SQLITE,
    "test_sqlite_session_closed_rejects_empty_add_items": (
        "it tests SQLiteSession.close(); a StateroomSession holds no connection to close"
    ),
    "test_sqlite_session_pop_item_skips_corrupt_most_recent": _CORRUPT,
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _CORRUPT,
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _CORRUPT,
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _CORRUPT,
    "test_sqlite_session_file_lock_is_shared_across_instances": _SQLITE,
    "test_sqlite_session_failed_add_items_releases_write_lock": _SQLITE,
    "test_sqlite_session_failed_clear_session_rolls_back": _SQLITE,
    "test_sqlite_session_failed_pop_item_releases_write_lock": _SQLITE,
    "test_sqlite_session_rollback_failure_evicts_connection": _SQLITE,
    "test_sqlite_session_close_retries_quarantined_connection": _SQLITE,
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": _SQLITE,
    # tests/extensions/memory/test_sqlalchemy_session.py
    "test_sqlalchemy_session_defaults_to_escaped_non_ascii_storage": _ALCHEMY,
    "test_sqlalchemy_session_can_store_non_ascii_without_escaping": _ALCHEMY,
    "test_sqlite_fallback_reserves_writer_before_tail_claim": _ALCHEMY,
    "test_pop_item_supports_unknown_delete_rowcount": _ALCHEMY,
    "test_pop_item_retries_returning_claim_lost_to_concurrent_delete": _ALCHEMY,
    "test_mutation_cancellation_waits_for_transaction_exit": _ALCHEMY,
    "test_pop_item_skips_corrupt_most_recent": _CORRUPT,
    "test_get_items_limit_skips_corrupt_newest_rows": _CORRUPT,
    "test_get_items_limit_returns_fewer_when_history_exhausted": _CORRUPT,
    "test_pop_item_returns_none_after_dropping_only_corrupt_rows": _CORRUPT,
    "test_add_items_concurrent_first_access_with_create_tables": _ALCHEMY,
    "test_add_items_concurrent_first_write_after_tables_exist": _ALCHEMY,
    "test_add_items_waits_for_transient_sqlite_write_lock": _ALCHEMY,
    "test_add_items_concurrent_first_access_across_sessions_with_shared_engine": _ALCHEMY,
    "test_add_items_concurrent_first_access_across_from_url_sessions": _ALCHEMY,
    "test_add_items_concurrent_first_access_across_from_url_sessions_cross_loop": _ALCHEMY,
    "test_add_items_concurrent_first_access_with_shared_session_cross_loop": _ALCHEMY,
    "test_add_items_cancelled_waiter_does_not_strand_table_init_lock": _ALCHEMY,
    "test_create_tables_false_does_not_allocate_shared_init_lock": _ALCHEMY,
    "test_get_items_same_timestamp_consistent_order": (
        "it writes rows with equal timestamps into the SQL table; Stateroom orders items"
        " by their gap-free seq, never by time"
    ),
    "test_pop_item_same_timestamp_returns_latest": (
        "it writes rows with equal timestamps into the SQL table; Stateroom orders items"
        " by their gap-free seq, never by time"
    ),
    "test_get_items_orders_by_id_for_ties": (
        "it writes rows with equal timestamps into the SQL table; Stateroom orders items"
        " by their gap-free seq, never by time"
    ),
    "test_engine_property_from_url": _ALCHEMY,
    "test_engine_property_from_external_engine": _ALCHEMY,
    "test_engine_property_is_read_only": _ALCHEMY,
    "test_sqlite_configuration_registry_releases_collected_engines": _ALCHEMY,
    "test_sqlite_configuration_registry_does_not_grow_unbounded": _ALCHEMY,
}


# The Runner's own test files: only their tests that build a session are conformance
# tests of a session (the others test the Runner, with no session, and are not collected).
RUNNER_FILES = frozenset(
    {"test_agent_runner.py", "test_agent_runner_streamed.py", "test_soft_cancel.py"}
)
BUILDS_A_SESSION = ("SQLiteSession(", "SQLAlchemySession(", "SQLAlchemySession.from_url(")


def builds_no_session(item: pytest.Item) -> bool:
    if Path(str(item.path)).name not in RUNNER_FILES:
        return False
    source = inspect.getsource(getattr(item, "function", None) or item.obj)
    return not any(call in source for call in BUILDS_A_SESSION)


def pytest_configure(config: pytest.Config) -> None:
    # A marker the SDK's own pytest configuration declares; its Runner test files use it.
    config.addinivalue_line(
        "markers", "allow_call_model_methods: the SDK's marker for tests calling real models"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [i for i in items if HERE in Path(str(i.path)).parents]
    dropped = [
        i
        for i in mine
        if getattr(i, "originalname", i.name) in NOT_APPLICABLE or builds_no_session(i)
    ]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if i not in dropped]


@dataclass
class Target:
    """Where the stand-ins put their sessions: the live server, as the test's tenant."""

    url: str
    token: str
    client: AsyncStateroomClient
    ids: dict[tuple[str, str], str] = field(default_factory=dict)
    numbers: itertools.count[int] = field(default_factory=itertools.count)

    def session_for(self, store: str, session_id: str) -> str:
        key = (store, session_id)
        if key not in self.ids:
            stateroom_id = f"sdk-{next(self.numbers)}"
            # Synchronous on purpose: the SDK's sessions are built in sync code too.
            with StateroomClient(self.url, self.token) as sync:
                sync.create_session(user_id=USER, session_id=stateroom_id)
            self.ids[key] = stateroom_id
        return self.ids[key]


_TARGET: list[Target] = []


def _target() -> Target:
    if not _TARGET:
        raise RuntimeError("a ported SDK test built a session outside the stateroom fixture")
    return _TARGET[-1]


class PortedSQLiteSession(StateroomSession):
    """`SQLiteSession(session_id, db_path=":memory:", ..., session_settings=None)`, in Stateroom."""

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        *args: Any,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        settings = coerce_settings(session_settings)  # refused first, as SQLiteSession does
        store = str(db_path) if str(db_path) != ":memory:" else f"memory-{uuid.uuid4()}"
        target = _target()
        stateroom_id = target.session_for(store, session_id)
        super().__init__(target.client, stateroom_id, user_id=USER, session_settings=settings)

    def close(self) -> None:
        """Nothing to release: the session holds no connection of its own."""


class PortedSQLAlchemySession(StateroomSession):
    """`SQLAlchemySession(session_id, engine=...)` and `.from_url(session_id, url=...)`."""

    def __init__(
        self,
        session_id: str,
        *,
        engine: Any = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        _store: str | None = None,
        **kwargs: Any,
    ) -> None:
        settings = coerce_settings(session_settings)
        store = _store or f"engine-{id(engine)}"
        target = _target()
        stateroom_id = target.session_for(store, session_id)
        super().__init__(target.client, stateroom_id, user_id=USER, session_settings=settings)

    @classmethod
    def from_url(
        cls,
        session_id: str,
        *,
        url: str,
        engine_kwargs: dict[str, Any] | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> PortedSQLAlchemySession:
        store = url if ":memory:" not in url else f"memory-{uuid.uuid4()}"
        return cls(session_id, session_settings=session_settings, _store=store)

    async def close(self) -> None:
        """Nothing to release (SQLAlchemySession disposes of its engine here)."""


@pytest.fixture(scope="session", autouse=True)
def no_tracing() -> None:
    # The SDK's tests install a no-op trace processor; no trace leaves this machine here.
    set_tracing_disabled(True)


@pytest.fixture(autouse=True)
def stateroom_sessions(request: pytest.FixtureRequest, server, monkeypatch):
    client = AsyncStateroomClient(server.url, server.token)
    _TARGET.append(Target(server.url, server.token, client))
    for name, stand_in in (
        ("SQLiteSession", PortedSQLiteSession),
        ("SQLAlchemySession", PortedSQLAlchemySession),
    ):
        if hasattr(request.module, name):
            monkeypatch.setattr(request.module, name, stand_in)
    yield
    _TARGET.pop()
    asyncio.run(client.close())  # loops the test used have shut down (their clients closed)
