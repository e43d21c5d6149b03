"""StateroomSaver's sync methods (what graph.invoke calls); the conformance suite runs the async ones."""

from __future__ import annotations

from datetime import date

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from stateroom_client.langgraph import StateroomSaver
from tasks_app.models import GraphBlob
from tenancy_app.scoping import in_tenant


def cfg(thread: str, checkpoint_id: str | None = None, ns: str = "") -> dict:
    configurable = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def checkpoint(values: dict, versions: dict) -> dict:
    cp = empty_checkpoint()
    cp["channel_values"] = values
    cp["channel_versions"] = versions
    return cp


@pytest.fixture
def saver(client):
    return StateroomSaver(client)


def test_sync_round_trip_of_values_writes_and_lists(server, saver):
    # Not plain JSON, or JSON the server would not give back exactly (2.0 would read as 2).
    odd = {
        "when": date(2026, 11, 30),
        "tags": {"a", "b"},
        "raw": b"\x00\x01",
        "big": 2**62,
        "whole": 2.0,
        "nul": "a\x00b",
    }
    first = saver.put(
        cfg("th-s"),
        checkpoint({"msgs": ["hi"], "odd": odd}, {"msgs": 1, "odd": 1}),
        {"source": "input", "step": -1, "run_id": "run-1"},
        {"msgs": 1, "odd": 1},
    )
    second = saver.put(
        first,
        checkpoint({"msgs": ["hi", "yo"], "odd": odd}, {"msgs": 2, "odd": 1}),
        {"source": "loop", "step": 0, "run_id": "run-2"},
        {"msgs": 2},
    )
    saver.put_writes(second, [("msgs", "again"), ("__interrupt__", {"q": set()})], "task-1")
    got = saver.get_tuple(cfg("th-s"))
    assert got.config == second
    assert got.parent_config == first
    assert got.checkpoint["channel_values"] == {"msgs": ["hi", "yo"], "odd": odd}
    assert got.metadata == {"source": "loop", "step": 0, "run_id": "run-2"}
    assert got.pending_writes == [
        ("task-1", "__interrupt__", {"q": set()}),
        ("task-1", "msgs", "again"),
    ]
    with in_tenant(server.tenant):  # `odd` is stored once though both checkpoints see it
        assert sorted(GraphBlob.objects.values_list("channel", "version", "type")) == [
            ("msgs", "1", "json"),
            ("msgs", "2", "json"),
            ("odd", "1", "msgpack"),
        ]
    assert [t.metadata["step"] for t in saver.list(cfg("th-s"))] == [0, -1]
    assert [t.metadata["step"] for t in saver.list(cfg("th-s"), filter={"source": "input"})] == [-1]
    assert [t.metadata["step"] for t in saver.list(cfg("th-s"), before=second)] == [-1]
    assert [t.metadata["step"] for t in saver.list(cfg("th-s"), limit=1)] == [0]
    assert saver.get_tuple(cfg("nope")) is None
    assert list(saver.list(cfg("nope"))) == []

    saver.copy_thread("th-s", "th-copy")
    assert [t.checkpoint["id"] for t in saver.list(cfg("th-copy"))] == [
        t.checkpoint["id"] for t in saver.list(cfg("th-s"))
    ]
    saver.prune(["th-copy"], strategy="keep_latest")
    assert [t.metadata["step"] for t in saver.list(cfg("th-copy"))] == [0]
    saver.delete_for_runs(["run-2"])  # in every thread
    assert [t.metadata["run_id"] for t in saver.list(cfg("th-s"))] == ["run-1"]
    assert list(saver.list(cfg("th-copy"))) == []
    saver.delete_thread("th-s")
    assert saver.get_tuple(cfg("th-s")) is None
    saver.delete_thread("never-was")  # a no-op, as LangGraph expects


def test_plain_text_is_any_valid_unicode_without_nul():
    from stateroom_client.langgraph.saver import _plain

    assert _plain({"ascii": "x" * 200, "accents": "café ☕ 🧭", "empty": ""})
    assert not _plain("lone \ud800 surrogate")  # jsonb holds no lone surrogate
    assert not _plain(["a\x00b"])  # nor NUL
