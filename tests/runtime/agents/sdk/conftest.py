"""The OpenAI Agents SDK's own session tests, run against `StateroomSession` on the live server.

The SDK's tests are not in this checkout: scripts/fetch_sdk_tests.py (`make install`
runs it) fetches them from the SDK's source distribution, with its LICENSE, into
the environment that runs the tests, <sys.prefix>/stateroom-sdk-tests/ (for
`make install`, .venv/stateroom-sdk-tests/agents_sdk_tests_v<release>/). This
folder's manifest, conformance.toml, is where pytest collects them: its test ids
read ``tests/runtime/agents/sdk/conformance.toml::memory/test_session.py::test_...``, and
this conftest's fixtures and the fixtures above it apply to them.

Where they build one of the SDK's own sessions, the session classes that the
manifest names under `swapped`, they build a stand-in here instead: a
`StateroomSession` on a Stateroom session of the live server, one per (store,
session_id) the test names: the same path (or engine, or URL) and id give the same
history, an in-memory store is new each time, as with the SDK's sessions.

Only the tree of the newest fetched release not newer than the installed SDK is
collected (each release's tests use that release's helpers). Tests of the SDK
sessions' own machinery (connections, locks, engines, rows written behind the
session's back) do not apply and are deselected: the manifest's `not_applicable`
names each one with its reason (docs/sdk-conformance.md sums them up). Of the
Runner's own test files only the tests that build a session are collected.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import itertools
import re
import sys
import tomllib
import types
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
MANIFEST_PATH = HERE / "conformance.toml"
# Where scripts/fetch_sdk_tests.py puts the trees (its TARGET), one per release.
FETCHED_ROOT = Path(sys.prefix) / "stateroom-sdk-tests"
USER = "sdk-tests"
PUBLIC_ID = re.compile(r"^[A-Za-z0-9._:-]{1,120}$")  # stateroom/ids.py


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])


def _fetched(tree: Path) -> tuple[int, ...]:
    """The release of a fetched tree (scripts/fetch_sdk_tests.py writes its VERSION last)."""
    if not (tree / "VERSION").is_file():
        raise RuntimeError(
            f"{tree} is not a whole fetched tree (no VERSION):"
            " run `python scripts/fetch_sdk_tests.py` (`make install` does)"
        )
    return _release((tree / "VERSION").read_text().strip())


INSTALLED = _release(version("openai-agents"))
FETCHED = {_fetched(d): d for d in FETCHED_ROOT.glob("agents_sdk_tests_v*_*_*")}
USABLE = [release for release in FETCHED if release <= INSTALLED]
# The tree of the newest fetched release not newer than the installed SDK; none
# when the SDK is older than every fetched release, or none is fetched (then
# nothing is collected and test_selection.py fails).
CHOSEN: Path | None = FETCHED[max(USABLE)] if USABLE else None

# What is swapped and what does not apply: the manifest, data rather than code.
MANIFEST = tomllib.loads(MANIFEST_PATH.read_text())


def _not_applicable(groups: list[dict[str, Any]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for group in groups:
        for name in group["tests"]:
            if name in found:
                raise ValueError(f"conformance.toml: {name} is not applicable twice")
            found[name] = group["reason"]
    return found


# Test name (or name[parameters]) -> why it does not apply; deselected.
NOT_APPLICABLE: dict[str, str] = _not_applicable(MANIFEST["not_applicable"])
# Parameters of a collected test that build another session class: not applicable.
NOT_APPLICABLE_PARAMS: dict[str, str] = dict(MANIFEST["not_applicable_params"])
# The SDK's session classes that a stand-in replaces (SWAPPED, below, maps each to it).
SESSION_CLASSES = tuple(MANIFEST["swapped"])

# The test files of the chosen tree (its TESTS file; the other files are helpers, none
# of whose tests is collected). The SDK's session test files are collected whole; of
# the others, only the tests that build a session (in their body, a fixture they use or
# a function of their module they call) are conformance tests of a session.
TESTS = sorted((CHOSEN / "TESTS").read_text().split()) if CHOSEN is not None else []
SESSION_FILES = frozenset(
    {
        "memory/test_session.py",
        "memory/test_session_limit.py",
        "extensions/memory/test_sqlalchemy_session.py",
    }
)
# A call of a session class, or the choice of one (``factory = A if x else B``).
BUILDS_A_SESSION = re.compile(
    rf"(?<![\w.])({'|'.join(map(re.escape, SESSION_CLASSES))})"
    r"(\(|\.from_url\(|\s+if\b|[ \t]*$)",
    re.M,
)


class ConformanceSuite(pytest.File):
    """The manifest, collected as the chosen tree's test files (each a module of its own)."""

    def collect(self):
        if CHOSEN is None:
            return
        for relative in TESTS:
            # Named by its path in the tree, so `conformance.toml::memory/test_session.py`
            # selects one file; a child of this node, so the fixtures here apply.
            yield pytest.Module.from_parent(
                self, path=CHOSEN / relative, name=relative, nodeid=f"{self.nodeid}::{relative}"
            )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path == MANIFEST_PATH:
        return ConformanceSuite.from_parent(parent, path=file_path)
    return None


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
            if CHOSEN in Path(inspect.getfile(fixturedef.func)).parents:
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
    relative = Path(str(item.path)).relative_to(CHOSEN).as_posix()
    return relative in SESSION_FILES or builds_a_session(item)


def pytest_configure(config: pytest.Config) -> None:
    # A marker the SDK's own pytest configuration declares; its Runner test files use it.
    config.addinivalue_line(
        "markers", "allow_call_model_methods: the SDK's marker for tests calling real models"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if CHOSEN is None:
        return
    mine = [i for i in items if CHOSEN in Path(str(i.path)).parents]
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


class PortedFileSession(StateroomSession):
    """An SDK session on a database file, in Stateroom.

    Built as the SDK builds it, ``Cls(session_id, db_path=":memory:", ...,
    session_settings=None)``; the path (or a new in-memory store) is the store.
    """

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        *args: Any,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        settings = coerce_settings(session_settings)  # refused first, as the SDK's session does
        store = str(db_path) if str(db_path) != ":memory:" else f"memory-{uuid.uuid4()}"
        target = _target()
        stateroom_id = target.session_for(store, session_id)
        super().__init__(target.client, stateroom_id, user_id=USER, session_settings=settings)

    def close(self) -> None:
        """Nothing to release: the session holds no connection of its own."""


class PortedEngineSession(StateroomSession):
    """An SDK session on an SQLAlchemy engine, in Stateroom.

    Built as ``Cls(session_id, engine=...)`` (the engine's identity is the store) or
    ``Cls.from_url(session_id, url=...)`` (the URL is, or a new in-memory store).
    """

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
    ) -> PortedEngineSession:
        store = url if ":memory:" not in url else f"memory-{uuid.uuid4()}"
        return cls(session_id, session_settings=session_settings, _store=store)

    async def close(self) -> None:
        """Nothing to release (the SDK's session disposes of its engine here)."""

    @property
    def engine(self) -> _NoEngine:
        """What a test disposes of when it is done with the session: nothing here."""
        return _NoEngine()


class _NoEngine:
    async def dispose(self) -> None:
        """A StateroomSession has no engine to dispose of."""


_STAND_INS = {cls.__name__: cls for cls in (PortedFileSession, PortedEngineSession)}
# SDK session class name -> the stand-in built in its place (the manifest's `swapped`).
SWAPPED: dict[str, type[StateroomSession]] = {
    name: _STAND_INS[spec["stand_in"]] for name, spec in MANIFEST["swapped"].items()
}
# The SDK modules whose session class is replaced too, for a test that imports the
# class in its body: (module, class name).
SWAPPED_IN_SDK = [
    (importlib.import_module(spec["module"]), name)
    for name, spec in MANIFEST["swapped"].items()
    if "module" in spec
]


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
    for name, stand_in in SWAPPED.items():
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
    # A test that imports a session class in its body gets the stand-in too.
    for sdk_module, name in SWAPPED_IN_SDK:
        monkeypatch.setattr(sdk_module, name, SWAPPED[name])
    yield
    _TARGET.pop()
    asyncio.run(client.close())  # loops the test used have shut down (their clients closed)
