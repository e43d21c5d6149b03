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
gives each one's reason, and tests/agents/sdk/README.md lists them. Of the Runner's own test
files (RUNNER_FILES) only the tests that build a session are collected.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import re
import types
import uuid
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from agents import set_tracing_disabled
from agents.extensions.memory import sqlalchemy_session
from agents.memory import SessionSettings

from stateroom_client import AsyncStateroomClient, StateroomClient
from stateroom_client.agents import StateroomSession
from stateroom_client.agents.session import coerce_settings

HERE = Path(__file__).parent
USER = "sdk-tests"
PUBLIC_ID = re.compile(r"^[A-Za-z0-9._:-]{1,120}$")  # stateroom/ids.py


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
_NATIVE_COMPACTION = (
    "it tests OpenAIResponsesCompactionSession's native path for SQLiteSession and"
    " SQLAlchemySession (their private _get_compaction_snapshot, _atomic_replace_items and"
    " _read_compaction_items: a snapshot past the session's read limit, a replacement in"
    " their SQL transaction); a StateroomSession, like any other Session, gets the"
    " compaction session's generic path"
)
_COMPACTION_HOOKS = (
    "it drives or breaks the SQL internals under that native compaction path (the"
    " session's private _insert_items, db_path, connection or engine, SQL constraints)"
)
_ENCRYPTED_POP = (
    "it tests EncryptedSession's native pop for SQLiteSession (the row authenticated"
    " inside SQLite's transaction); on any other Session it pops through the protocol"
)
_SQLITE_ROWS = "it reads or writes the SQLite table behind the session with sqlite3"
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
    # tests/extensions/memory/test_encrypt_session.py
    "test_encrypted_session_scan_budget_rejects_negative_limit_before_read": (
        "it pins SQLiteSession's historical reading of a negative limit as no limit (SQL's"
        " LIMIT -1); other sessions read no items then (RedisSession's test next to it"
        " expects [], and so does StateroomSession)"
    ),
    "test_encrypted_pop_wrong_key_preserves_recoverable_history": _ENCRYPTED_POP,
    "test_encrypted_pop_rechecks_authentication_after_expired_tail": _ENCRYPTED_POP,
    "test_encrypted_pop_cancellation_waits_for_authentication_rollback": _ENCRYPTED_POP,
    "test_encrypted_pop_authentication_is_atomic_with_concurrent_mutations": _SQLITE_ROWS,
    "test_encrypted_pop_wrong_key_preserves_row_identity": _SQLITE_ROWS,
    "test_encrypted_compaction_skips_unencrypted_stored_history": _NATIVE_COMPACTION,
    # tests/memory/test_compaction_model_visibility.py
    "test_automatic_compaction_does_not_reload_unbounded_hidden_history": _COMPACTION_HOOKS,
    "test_backend_read_limit_cannot_hide_retained_history_from_compaction": _NATIVE_COMPACTION,
    "test_expired_read_overhead_does_not_authorize_hidden_history": _NATIVE_COMPACTION,
    # tests/memory/test_compaction_suffix.py
    "test_expired_prefix_does_not_block_full_live_window": _NATIVE_COMPACTION,
    "test_suffix_transaction_rolls_back_failed_insert": _COMPACTION_HOOKS,
    "test_new_backend_write_invalidates_snapshot": _NATIVE_COMPACTION,
    "test_cancelled_suffix_transaction_settles_before_newer_append": _COMPACTION_HOOKS,
    "test_failed_encrypted_suffix_transaction_preserves_original_tokens": _COMPACTION_HOOKS,
    "test_repeated_ttl_bursts_do_not_accumulate_expired_rows": _NATIVE_COMPACTION,
    "test_prefix_cleanup_stops_before_retained_history": _NATIVE_COMPACTION,
    "test_partial_compaction_does_not_split_tool_call_and_output": _NATIVE_COMPACTION,
    "test_unverifiable_rows_inside_snapshot_are_retained": _NATIVE_COMPACTION,
    "test_partial_compaction_preserves_reasoning_and_its_follower": _NATIVE_COMPACTION,
    # tests/memory/test_openai_responses_compaction_session.py (the "native" parameter:
    # the other one runs the same test on a plain Session and is collected)
    "test_automatic_compaction_rollback_budget[True]": _NATIVE_COMPACTION,
    "test_settled_pop_failure_invalidates_response_chain": _COMPACTION_HOOKS,
    "test_settled_clear_failure_invalidates_response_chain": _COMPACTION_HOOKS,
    # tests/memory/test_sqlalchemy_compaction.py
    "test_cancelled_replacement_settles_before_other_instance_append": _COMPACTION_HOOKS,
    "test_failed_replacement_preserves_history_during_other_instance_access": _COMPACTION_HOOKS,
    "test_compaction_with_engine_managed_sqlite_begin": _COMPACTION_HOOKS,
    "test_encrypted_prefix_cleanup_is_atomic": _COMPACTION_HOOKS,
    "test_parent_constraint_rejection_propagates": _COMPACTION_HOOKS,
    "test_replacement_uses_timestamp_order_not_id_order": _COMPACTION_HOOKS,
    "test_encrypted_unknown_row_is_retained": _NATIVE_COMPACTION,
    "test_limited_sqlalchemy_compacts_visible_suffix": _NATIVE_COMPACTION,
    "test_other_instance_mutation_invalidates_suffix": _NATIVE_COMPACTION,
    # tests/test_run_impl_resume_paths.py
    "test_handoff_resume_after_cancelled_compaction_commits": _COMPACTION_HOOKS,
}


# The test files of the chosen tree (its TESTS file; the other files are helpers, none
# of whose tests is collected). The SDK's session test files are collected whole; of
# the others, only the tests that build a session (in their body, a fixture they use or
# a function of their module they call) are conformance tests of a session.
TESTS = (
    frozenset((HERE / CHOSEN / "TESTS").read_text().split()) if CHOSEN is not None else frozenset()
)
SESSION_FILES = frozenset(
    {
        "memory/test_session.py",
        "memory/test_session_limit.py",
        "extensions/memory/test_sqlalchemy_session.py",
    }
)
SESSION_CLASSES = ("SQLiteSession", "SQLAlchemySession")
# A call of a session class, or the choice of one (``factory = A if x else SQLiteSession``).
BUILDS_A_SESSION = re.compile(
    r"(?<![\w.])(SQLiteSession|SQLAlchemySession)(\(|\.from_url\(|\s+if\b|[ \t]*$)", re.M
)
# Parameters of a collected test that build another session class: not applicable.
NOT_APPLICABLE_PARAMS: dict[str, str] = {
    "async-sqlite": (
        "this parameter builds an AsyncSQLiteSession, another session class (its other"
        " parameter builds the SQLiteSession, which runs here on Stateroom)"
    ),
}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if CHOSEN is None or collection_path.suffix != ".py":
        return None
    tree = HERE / CHOSEN
    if tree not in collection_path.parents:
        return None
    return collection_path.relative_to(tree).as_posix() not in TESTS


def _source(obj: Any) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


def _builders(module: Any) -> frozenset[str]:
    """Names of the module's own functions and classes that build a session, directly or not."""
    cached: frozenset[str] | None = getattr(module, "__sdk_session_builders__", None)
    if cached is not None:
        return cached
    sources = {
        name: _source(obj)
        for name, obj in vars(module).items()
        if (inspect.isfunction(obj) or inspect.isclass(obj))
        and getattr(obj, "__module__", None) == module.__name__
    }
    found = {name for name, text in sources.items() if BUILDS_A_SESSION.search(text)}
    while True:
        more = {
            name
            for name, text in sources.items()
            if name not in found and any(re.search(rf"\b{b}\(", text) for b in found)
        }
        if not more:
            break
        found |= more
    module.__sdk_session_builders__ = frozenset(found)
    return module.__sdk_session_builders__


def builds_a_session(item: pytest.Item) -> bool:
    function = getattr(item, "function", None) or item.obj
    texts = [_source(function)]
    fixtures = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in fixtures.get(name, ()):
            if HERE in Path(inspect.getfile(fixturedef.func)).parents:
                texts.append(_source(fixturedef.func))
    builders = _builders(item.module)
    return any(
        BUILDS_A_SESSION.search(text) or any(re.search(rf"\b{b}\(", text) for b in builders)
        for text in texts
    )


def collected(item: pytest.Item) -> bool:
    if getattr(item, "originalname", item.name) in NOT_APPLICABLE or item.name in NOT_APPLICABLE:
        return False
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(p in callspec.id for p in NOT_APPLICABLE_PARAMS):
        return False
    relative = Path(str(item.path)).relative_to(HERE / str(CHOSEN)).as_posix()
    return relative in SESSION_FILES or builds_a_session(item)


def pytest_configure(config: pytest.Config) -> None:
    # A marker the SDK's own pytest configuration declares; its Runner test files use it.
    config.addinivalue_line(
        "markers", "allow_call_model_methods: the SDK's marker for tests calling real models"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tree = HERE / str(CHOSEN)
    mine = [i for i in items if tree in Path(str(i.path)).parents]
    dropped = [i for i in mine if not collected(i)]
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
            # The test's own id where Stateroom takes it and this test has not used it
            # yet (the SDK reads `session.session_id`); another store's session of the
            # same id gets a suffix.
            taken = set(self.ids.values())
            stateroom_id = session_id
            if not PUBLIC_ID.match(stateroom_id) or stateroom_id in taken:
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

    @property
    def engine(self) -> _NoEngine:
        """What a test disposes of when it is done with the session: nothing here."""
        return _NoEngine()


class _NoEngine:
    async def dispose(self) -> None:
        """A StateroomSession has no engine to dispose of."""


@pytest.fixture(scope="session", autouse=True)
def no_tracing() -> None:
    # The SDK's tests install a no-op trace processor; no trace leaves this machine here.
    set_tracing_disabled(True)


def rebased(cls: type, real: type, stand_in: type) -> type:
    """`cls`, a test module's own subclass of `real`, deriving from `stand_in` instead.

    Its methods are copied with their zero-argument ``super()`` bound to the new class.
    """
    namespace: dict[str, Any] = {}
    new_cell = types.CellType()
    for key, value in vars(cls).items():
        if key in ("__dict__", "__weakref__"):
            continue
        if inspect.isfunction(value) and "__class__" in value.__code__.co_freevars:
            closure = tuple(
                new_cell if name == "__class__" else cell
                for name, cell in zip(
                    value.__code__.co_freevars, value.__closure__ or (), strict=True
                )
            )
            copy = types.FunctionType(
                value.__code__, value.__globals__, value.__name__, value.__defaults__, closure
            )
            copy.__kwdefaults__ = value.__kwdefaults__
            copy.__qualname__ = value.__qualname__
            value = copy
        namespace[key] = value
    bases = tuple(stand_in if base is real else base for base in cls.__bases__)
    new = type(cls.__name__, bases, namespace)
    new_cell.cell_contents = new
    return new


@pytest.fixture(autouse=True)
def stateroom_sessions(request: pytest.FixtureRequest, server, monkeypatch):
    client = AsyncStateroomClient(server.url, server.token)
    _TARGET.append(Target(server.url, server.token, client))
    module = request.module
    for name, stand_in in (
        ("SQLiteSession", PortedSQLiteSession),
        ("SQLAlchemySession", PortedSQLAlchemySession),
    ):
        real = getattr(module, name, None)
        if real is None:
            continue
        monkeypatch.setattr(module, name, stand_in)
        # The module's own subclasses of the session class (made when it was imported).
        for attr, value in list(vars(module).items()):
            if (
                inspect.isclass(value)
                and value.__module__ == module.__name__
                and real in value.__bases__
            ):
                monkeypatch.setattr(module, attr, rebased(value, real, stand_in))
    # A test that imports SQLAlchemySession in its body gets the stand-in too.
    monkeypatch.setattr(sqlalchemy_session, "SQLAlchemySession", PortedSQLAlchemySession)
    yield
    _TARGET.pop()
    asyncio.run(client.close())  # loops the test used have shut down (their clients closed)
