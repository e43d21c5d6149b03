"""The LangGraph thread endpoints: storage shape, errors, isolation, deletion rules."""

from __future__ import annotations

import base64
import json

import pytest
from django.test import Client

from audit_app.models import AuditEvent
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from tasks_app.models import GraphBlob, GraphCheckpoint, GraphWrite
from tenancy_app.scoping import in_tenant

from .conftest import iso

JSON = "application/json"
URL = "/api/v1/tasks/{}/langgraph"


def checkpoint(checkpoint_id: str, versions: dict, **extra) -> dict:
    return {
        "v": 1,
        "id": checkpoint_id,
        "ts": "2026-11-30T10:00:00+00:00",
        "channel_versions": versions,
        "versions_seen": {"review": dict(versions)},
        "updated_channels": sorted(versions),
        **extra,
    }


def put(client: Client, thread: str, body: dict):
    return client.post(f"{URL.format(thread)}/checkpoints", body, content_type=JSON)


def rows(tenant) -> tuple[list, list, list]:
    with in_tenant(tenant):
        return (
            list(
                GraphCheckpoint.objects.order_by("id").values_list("checkpoint_ns", "checkpoint_id")
            ),
            list(GraphBlob.objects.order_by("id").values_list("channel", "version", "type")),
            list(GraphWrite.objects.order_by("id").values_list("checkpoint_id", "idx", "channel")),
        )


@pytest.fixture
def thread(make_task, tenant_a):
    return make_task(tenant_a, task_id="th-1", objective="LangGraph thread th-1")


def test_put_stores_each_channel_version_once_and_reads_back_the_tuple(api_a, thread, tenant_a):
    first = put(
        api_a,
        "th-1",
        {
            "checkpoint": checkpoint("c1", {"messages": 1, "blob": 1}),
            "metadata": {"source": "input", "step": -1, "run_id": "r-1"},
            "blobs": [
                {"channel": "messages", "version": 1, "type": "json", "value": ["hi"]},
                {
                    "channel": "blob",
                    "version": 1,
                    "type": "msgpack",
                    "data": base64.b64encode(b"\x81\xa1a\x01").decode(),
                },
            ],
        },
    )
    assert (first.status_code, first.json()) == (
        201,
        {"thread_id": "th-1", "checkpoint_ns": "", "checkpoint_id": "c1"},
    )
    # The second checkpoint changes one channel: one new blob, the other is shared.
    second = put(
        api_a,
        "th-1",
        {
            "checkpoint": checkpoint("c2", {"messages": 2, "blob": 1}),
            "metadata": {"source": "loop", "step": 0, "run_id": "r-1"},
            "parent_checkpoint_id": "c1",
            "blobs": [{"channel": "messages", "version": 2, "type": "json", "value": ["hi", "yo"]}],
        },
    )
    assert second.status_code == 201
    assert rows(tenant_a)[1] == [
        ("messages", "1", "json"),
        ("blob", "1", "msgpack"),
        ("messages", "2", "json"),
    ]
    writes = api_a.post(
        f"{URL.format('th-1')}/writes",
        {
            "checkpoint_id": "c2",
            "graph_task_id": "task-9",
            "graph_task_path": "~__pregel_pull, review",
            "writes": [
                {"idx": 0, "channel": "messages", "type": "json", "value": "again"},
                {"idx": -3, "channel": "__interrupt__", "type": "json", "value": {"q": 1}},
            ],
        },
        content_type=JSON,
    )
    assert (writes.status_code, writes.json()) == (201, {"written": 2})

    page = api_a.get(f"{URL.format('th-1')}/checkpoints").json()
    with in_tenant(tenant_a):
        created = GraphCheckpoint.objects.get(checkpoint_id="c2").created_at
    assert page["next"] is None
    assert [r["checkpoint_id"] for r in page["results"]] == ["c2", "c1"]
    assert page["results"][0] == {
        "thread_id": "th-1",
        "checkpoint_ns": "",
        "checkpoint_id": "c2",
        "parent_checkpoint_id": "c1",
        "checkpoint": checkpoint("c2", {"messages": 2, "blob": 1}),
        "metadata": {"source": "loop", "step": 0, "run_id": "r-1"},
        "created_at": iso(created),
        "channel_values": [
            {
                "channel": "blob",
                "version": "1",
                "type": "msgpack",
                "value": None,
                "data": "gaFhAQ==",
            },
            {
                "channel": "messages",
                "version": "2",
                "type": "json",
                "value": ["hi", "yo"],
                "data": None,
            },
        ],
        "pending_writes": [
            {
                "task_id": "task-9",
                "task_path": "~__pregel_pull, review",
                "idx": -3,
                "channel": "__interrupt__",
                "type": "json",
                "value": {"q": 1},
                "data": None,
            },
            {
                "task_id": "task-9",
                "task_path": "~__pregel_pull, review",
                "idx": 0,
                "channel": "messages",
                "type": "json",
                "value": "again",
                "data": None,
            },
        ],
    }
    assert page["results"][1]["channel_values"][1]["value"] == ["hi"]


def test_a_repeated_write_is_kept_once_and_a_special_one_is_replaced(api_a, thread, tenant_a):
    put(api_a, "th-1", {"checkpoint": checkpoint("c1", {}), "metadata": {}})

    def write(idx: int, value: str):
        return api_a.post(
            f"{URL.format('th-1')}/writes",
            {
                "checkpoint_id": "c1",
                "graph_task_id": "t",
                "writes": [{"idx": idx, "channel": "ch", "type": "json", "value": value}],
            },
            content_type=JSON,
        ).json()

    assert [write(0, "a"), write(0, "b"), write(-1, "x"), write(-1, "y")] == [
        {"written": 1},
        {"written": 0},
        {"written": 1},
        {"written": 1},
    ]
    values = api_a.get(f"{URL.format('th-1')}/checkpoints").json()["results"][0]["pending_writes"]
    assert [(w["idx"], w["value"]) for w in values] == [(-1, "y"), (0, "a")]


def test_list_filters_pages_and_namespaces(api_a, thread):
    for n in range(5):
        put(
            api_a,
            "th-1",
            {
                "checkpoint": checkpoint(f"c{n}", {}),
                "metadata": {"source": "loop" if n % 2 else "input", "step": n},
            },
        )
    put(api_a, "th-1", {"checkpoint_ns": "child:1", "checkpoint": checkpoint("k0", {})})
    url = f"{URL.format('th-1')}/checkpoints"

    def ids(query: str) -> list[str]:
        return [r["checkpoint_id"] for r in api_a.get(url + query).json()["results"]]

    assert ids("") == ["k0", "c4", "c3", "c2", "c1", "c0"]
    assert ids("?checkpoint_ns=") == ["c4", "c3", "c2", "c1", "c0"]
    assert ids("?checkpoint_ns=child:1") == ["k0"]
    assert ids("?checkpoint_ns=&before=c3") == ["c2", "c1", "c0"]
    assert ids("?checkpoint_ns=&checkpoint_id=c2") == ["c2"]
    assert ids('?metadata={"source": "loop"}') == ["c3", "c1"]
    assert ids('?metadata={"source": "input", "step": 2}') == ["c2"]
    first = api_a.get(url + "?checkpoint_ns=&limit=2").json()
    assert [r["checkpoint_id"] for r in first["results"]] == ["c4", "c3"]
    second = api_a.get(first["next"])
    assert [r["checkpoint_id"] for r in second.json()["results"]] == ["c2", "c1"]


def test_every_page_of_one_carries_its_values_and_writes(api_a, thread):
    """The row read past a page (to know a next page exists) comes without its values;
    the page that shows it reads them."""
    for n in range(3):
        put(
            api_a,
            "th-1",
            {
                "checkpoint": checkpoint(f"c{n}", {"m": n + 1}),
                "blobs": [{"channel": "m", "version": n + 1, "type": "json", "value": [n]}],
            },
        )
        api_a.post(
            f"{URL.format('th-1')}/writes",
            {
                "checkpoint_id": f"c{n}",
                "graph_task_id": "t",
                "writes": [{"idx": 0, "channel": "m", "type": "json", "value": f"w{n}"}],
            },
            content_type=JSON,
        )
    url, seen = f"{URL.format('th-1')}/checkpoints?limit=1", []
    while url:
        page = api_a.get(url).json()
        (row,) = page["results"]
        seen.append(
            (
                row["checkpoint_id"],
                [v["value"] for v in row["channel_values"]],
                [w["value"] for w in row["pending_writes"]],
            )
        )
        url = page["next"]
    assert seen == [("c2", [[2]], ["w2"]), ("c1", [[1]], ["w1"]), ("c0", [[0]], ["w0"])]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?metadata=[1]", "metadata"),
        ("?metadata={bad", "metadata"),
        ("?limit=0", "limit"),
        ("?cursor=nonsense", "cursor"),
        ("?bogus=1", "bogus"),
    ],
)
def test_list_refuses_bad_queries(api_a, thread, query, field):
    response = api_a.get(f"{URL.format('th-1')}/checkpoints{query}")
    assert response.status_code == 422
    assert list(response.json()["error"]["details"]) == [field]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "checkpoint"),
        ({"checkpoint": {"id": "c1"}}, "checkpoint"),
        ({"checkpoint": checkpoint("c1", {}, channel_values={})}, "checkpoint"),
        ({"checkpoint": checkpoint("c1", {}), "extra": 1}, "extra"),
        (
            {
                "checkpoint": checkpoint("c1", {"a": 1}),
                "blobs": [{"channel": "a", "version": 1, "type": "msgpack", "data": "%%%"}],
            },
            "blobs[0].data",
        ),
        (
            {
                "checkpoint": checkpoint("c1", {"a": 1}),
                "blobs": [{"channel": "a", "version": True, "type": "json", "value": 1}],
            },
            "blobs[0].version",
        ),
        ({"checkpoint": checkpoint("c1", {}), "metadata": {"x": "nul\x00"}}, "metadata.x"),
        (
            {
                "checkpoint": checkpoint("c1", {"a": 1}),
                "blobs": [{"channel": "a", "version": 1, "type": "json", "value": 2**62}],
            },
            "blobs[0].value",  # beyond what JSON keeps exactly: the saver sends it as bytes
        ),
    ],
)
def test_put_refuses_bad_bodies_and_stores_nothing(api_a, thread, tenant_a, body, field):
    response = put(api_a, "th-1", body)
    assert response.status_code == 422
    assert field in response.json()["error"]["details"]
    assert rows(tenant_a) == ([], [], [])


def test_a_finished_task_takes_no_more_checkpoints(api_a, thread, tenant_a):
    api_a.put(
        "/api/v1/tasks/th-1/state",
        {"expected_version": 1, "status": "completed"},
        content_type=JSON,
    )
    response = put(api_a, "th-1", {"checkpoint": checkpoint("c1", {})})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "invalid_transition"
    assert rows(tenant_a) == ([], [], [])


def test_another_tenant_gets_404_and_changes_nothing(api_a, api_b, thread, tenant_a):
    put(
        api_a,
        "th-1",
        {
            "checkpoint": checkpoint("c1", {"a": 1}),
            "blobs": [{"channel": "a", "version": 1, "type": "json", "value": 1}],
        },
    )
    before = rows(tenant_a)
    calls = [
        api_b.get(f"{URL.format('th-1')}/checkpoints"),
        put(api_b, "th-1", {"checkpoint": checkpoint("c9", {})}),
        api_b.post(
            f"{URL.format('th-1')}/writes",
            {"checkpoint_id": "c1", "graph_task_id": "t", "writes": []},
            content_type=JSON,
        ),
        api_b.delete(URL.format("th-1")),
        api_b.post(f"{URL.format('th-1')}/copy", {"target_thread_id": "x"}, content_type=JSON),
        api_b.post(f"{URL.format('th-1')}/prune", {}, content_type=JSON),
    ]
    assert [c.status_code for c in calls] == [404] * 6
    assert {c.json()["error"]["code"] for c in calls} == {"not_found"}
    assert rows(tenant_a) == before
    # Deleting "their" runs touches nothing here either.
    assert api_b.post(
        "/api/v1/langgraph/runs/delete", {"run_ids": ["r-1"]}, content_type=JSON
    ).json() == {"checkpoints": 0, "writes": 0, "blobs": 0}
    assert rows(tenant_a) == before


def _thread_with_history(api, thread_id: str, runs: list[str]) -> None:
    """One checkpoint per run id, each with a new value of `a` and a write."""
    parent = ""
    for n, run_id in enumerate(runs, start=1):
        put(
            api,
            thread_id,
            {
                "checkpoint": checkpoint(f"c{n}", {"a": n}),
                "metadata": {"run_id": run_id, "step": n},
                "parent_checkpoint_id": parent,
                "blobs": [{"channel": "a", "version": n, "type": "json", "value": f"v{n}"}],
            },
        )
        api.post(
            f"{URL.format(thread_id)}/writes",
            {
                "checkpoint_id": f"c{n}",
                "graph_task_id": "t",
                "writes": [{"idx": 0, "channel": "a", "type": "json", "value": n}],
            },
            content_type=JSON,
        )
        parent = f"c{n}"


def test_prune_keeps_the_latest_and_collects_unused_blobs_audited(api_a, thread, tenant_a):
    _thread_with_history(api_a, "th-1", ["r-1", "r-1", "r-2"])
    response = api_a.post(f"{URL.format('th-1')}/prune", {}, content_type=JSON)
    assert response.json() == {"checkpoints": 2, "writes": 2, "blobs": 2}
    assert rows(tenant_a) == ([("", "c3")], [("a", "3", "json")], [("c3", 0, "a")])
    with in_tenant(tenant_a):
        event = AuditEvent.objects.order_by("-seq").first()
    assert (event.action, event.target_id, event.after) == (
        "langgraph.thread_pruned",
        "th-1",
        {"blobs": 2, "checkpoints": 2, "writes": 2},
    )


def test_delete_for_runs_and_delete_thread(api_a, thread, tenant_a):
    _thread_with_history(api_a, "th-1", ["r-1", "r-2", "r-2"])
    response = api_a.post("/api/v1/langgraph/runs/delete", {"run_ids": ["r-2"]}, content_type=JSON)
    assert response.json() == {"checkpoints": 2, "writes": 2, "blobs": 2}
    assert rows(tenant_a) == ([("", "c1")], [("a", "1", "json")], [("c1", 0, "a")])
    response = api_a.delete(URL.format("th-1"))
    assert response.json() == {"checkpoints": 1, "writes": 1, "blobs": 1}
    assert rows(tenant_a) == ([], [], [])
    with in_tenant(tenant_a):
        actions = list(AuditEvent.objects.order_by("seq").values_list("action", flat=True))
    assert actions[-2:] == ["langgraph.runs_deleted", "langgraph.thread_deleted"]


def test_copy_thread_copies_everything_to_an_existing_task(api_a, thread, make_task, tenant_a):
    _thread_with_history(api_a, "th-1", ["r-1", "r-2"])
    missing = api_a.post(
        f"{URL.format('th-1')}/copy", {"target_thread_id": "th-2"}, content_type=JSON
    )
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "target_not_found")
    make_task(tenant_a, task_id="th-2")
    copied = api_a.post(
        f"{URL.format('th-1')}/copy", {"target_thread_id": "th-2"}, content_type=JSON
    )
    assert copied.json() == {"checkpoints": 2, "writes": 2, "blobs": 2}
    source = api_a.get(f"{URL.format('th-1')}/checkpoints").json()["results"]
    target = api_a.get(f"{URL.format('th-2')}/checkpoints").json()["results"]
    strip = [("thread_id", "created_at")]
    assert [{k: v for k, v in r.items() if k not in strip[0]} for r in target] == [
        {k: v for k, v in r.items() if k not in strip[0]} for r in source
    ]


def test_deletions_are_refused_while_a_session_of_the_thread_is_held(
    api_a, thread, tenant_a, make_session_for_hold
):
    _thread_with_history(api_a, "th-1", ["r-1"])
    make_session_for_hold("th-1")
    before = rows(tenant_a)
    calls = [
        api_a.delete(URL.format("th-1")),
        api_a.post(f"{URL.format('th-1')}/prune", {"strategy": "delete"}, content_type=JSON),
        api_a.post("/api/v1/langgraph/runs/delete", {"run_ids": ["r-1"]}, content_type=JSON),
    ]
    assert [(c.status_code, c.json()["error"]["code"]) for c in calls] == [(409, "legal_hold")] * 3
    assert rows(tenant_a) == before


@pytest.fixture
def make_session_for_hold(tenant_a):
    from stateroom.actor import Actor

    def make(task_id: str) -> None:
        actor = Actor.system("test")
        with in_tenant(tenant_a):
            SessionStore(tenant_a, actor).create(session_id="s-held", user_id="u")
            RunStateStore(tenant_a, actor).create(
                run_id="run-held", session_id="s-held", task_id=task_id
            )
            SessionStore(tenant_a, actor).set_legal_hold(
                session_id="s-held", on=True, reason="case"
            )

    return make


def test_json_values_survive_the_round_trip_exactly(api_a, thread):
    value = {"n": 1, "f": 2.5, "big": 2**53 - 1, "s": "é\u2028", "l": [None, True, 0.1]}
    put(
        api_a,
        "th-1",
        {
            "checkpoint": checkpoint("c1", {"v": "1.5"}),
            "blobs": [{"channel": "v", "version": "1.5", "type": "json", "value": value}],
        },
    )
    got = api_a.get(f"{URL.format('th-1')}/checkpoints").json()["results"][0]
    assert json.dumps(got["channel_values"][0]["value"], sort_keys=True) == json.dumps(
        value, sort_keys=True
    )


def test_a_write_index_beyond_a_postgres_integer_is_refused_and_nothing_written(
    api_a, thread, tenant_a
):
    put(api_a, "th-1", {"checkpoint": checkpoint("c1", {}), "metadata": {}})
    refused = api_a.post(
        f"{URL.format('th-1')}/writes",
        {
            "checkpoint_id": "c1",
            "graph_task_id": "t",
            "writes": [
                {"idx": 0, "channel": "ch", "type": "json", "value": "kept out too"},
                {"idx": 2**31, "channel": "ch", "type": "json", "value": "x"},
            ],
        },
        content_type=JSON,
    )
    assert refused.status_code == 422
    assert refused.json()["error"]["details"] == {"writes[1].idx": ["out of range"]}
    with in_tenant(tenant_a):
        assert not GraphWrite.objects.exists()


def test_values_with_quotes_backslashes_and_bytes_read_back_as_written(api_a, thread):
    """The rows go to PostgreSQL as one JSON document: text that JSON escapes, and bytes."""
    tricky = {"q": 'say "hi"', "b": "back\\slash", "u": "é\u2028", "n": [1, 2.5, None]}
    data = base64.b64encode(bytes(range(256))).decode()
    put(
        api_a,
        "th-1",
        {
            "checkpoint": checkpoint("c1", {"messages": 1, "raw": 1}),
            "metadata": {},
            "blobs": [
                {"channel": "messages", "version": 1, "type": "json", "value": tricky},
                {"channel": "raw", "version": 1, "type": "msgpack", "data": data},
            ],
        },
    )
    api_a.post(
        f"{URL.format('th-1')}/writes",
        {
            "checkpoint_id": "c1",
            "graph_task_id": "t",
            "writes": [
                {"idx": 0, "channel": "w", "type": "json", "value": tricky},
                {"idx": 1, "channel": "w", "type": "msgpack", "data": data},
            ],
        },
        content_type=JSON,
    )
    found = api_a.get(f"{URL.format('th-1')}/checkpoints").json()["results"][0]
    values = {v["channel"]: v for v in found["channel_values"]}
    assert values["messages"]["value"] == tricky
    assert (values["raw"]["type"], values["raw"]["data"]) == ("msgpack", data)
    writes = {w["idx"]: w for w in found["pending_writes"]}
    assert writes[0]["value"] == tricky
    assert writes[1]["data"] == data
