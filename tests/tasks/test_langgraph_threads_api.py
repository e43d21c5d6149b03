"""The LangGraph endpoints that name a thread in the body or query (`/api/v1/langgraph/...`).

What StateroomSaver calls: a thread id is any text LangGraph takes, a put or
a write makes a new thread's task, a list without a thread searches every
thread of the tenant, and a checkpoint may be larger than the API's usual
body limit.
"""

from __future__ import annotations

import base64

import pytest
from django.test import Client, override_settings

from tasks_app.models import GraphCheckpoint, GraphWrite, Task
from tenancy_app.scoping import in_tenant

from .test_langgraph_api import JSON, checkpoint, rows

ODD_IDS = [
    "user@example.com/chat 1",
    "slack:C123/1712345.678",
    "über-Fäden ✓ 🧵",
    "x" * 200,
    "../..",
    "a?b=c#d&e%2F",
]


def put(client: Client, thread_id: str, checkpoint_id: str, **extra):
    body = {"thread_id": thread_id, "checkpoint": checkpoint(checkpoint_id, {"a": 1}), **extra}
    return client.post("/api/v1/langgraph/checkpoints", body, content_type=JSON)


def write(client: Client, thread_id: str, checkpoint_id: str, writes: list[dict]):
    body = {
        "thread_id": thread_id,
        "checkpoint_id": checkpoint_id,
        "graph_task_id": "task-1",
        "writes": writes,
    }
    return client.post("/api/v1/langgraph/writes", body, content_type=JSON)


def search(client: Client, **params):
    return client.get("/api/v1/langgraph/checkpoints", params)


def tasks(tenant) -> list[tuple[str, str | None]]:
    with in_tenant(tenant):
        return list(Task.objects.order_by("id").values_list("task_id", "thread_id"))


def test_a_write_is_the_first_call_of_a_new_thread_and_makes_it(api_a, tenant_a):
    # LangGraph with durability "exit" (or a put still in flight) writes first.
    response = write(api_a, "new-1", "c1", [{"idx": 0, "channel": "a", "type": "json", "value": 1}])
    assert (response.status_code, response.json()) == (201, {"written": 1})
    assert tasks(tenant_a) == [("new-1", None)]
    assert put(api_a, "new-1", "c1").status_code == 201
    page = search(api_a, thread_id="new-1").json()
    assert [w["value"] for w in page["results"][0]["pending_writes"]] == [1]
    assert tasks(tenant_a) == [("new-1", None)]


def test_two_resumes_of_one_task_in_one_call_keep_the_last(api_a, tenant_a):
    # A node that called interrupt() twice sends its resume values twice, the
    # second with both answers; one statement cannot touch a row twice.
    resumes = [
        {"idx": -4, "channel": "__resume__", "type": "json", "value": ["yes"]},
        {"idx": 0, "channel": "a", "type": "json", "value": "first"},
        {"idx": -4, "channel": "__resume__", "type": "json", "value": ["yes", "no"]},
        {"idx": 0, "channel": "a", "type": "json", "value": "second"},
    ]
    response = write(api_a, "th-r", "c1", resumes)
    assert (response.status_code, response.json()) == (201, {"written": 2})
    with in_tenant(tenant_a):
        stored = sorted(GraphWrite.objects.values_list("idx", "channel", "value"))
    assert stored == [(-4, "__resume__", ["yes", "no"]), (0, "a", "first")]


@pytest.mark.parametrize("thread_id", ODD_IDS)
def test_any_thread_id_is_kept_as_given(api_a, tenant_a, thread_id):
    from tasks_app.langgraph_store import task_id_for

    assert put(api_a, thread_id, "c1", metadata={"step": 1}).status_code == 201
    assert write(api_a, thread_id, "c1", []).status_code == 201
    page = search(api_a, thread_id=thread_id).json()
    assert [(r["thread_id"], r["checkpoint_id"]) for r in page["results"]] == [(thread_id, "c1")]
    assert tasks(tenant_a) == [(task_id_for(thread_id), thread_id)]
    assert task_id_for(thread_id).startswith("lg_")
    # The task's own id is no alias of the thread.
    assert search(api_a, thread_id=task_id_for(thread_id)).status_code == 404
    counts = api_a.post(
        "/api/v1/langgraph/threads/copy",
        {"thread_id": thread_id, "target_thread_id": thread_id + " (copy)"},
        content_type=JSON,
    ).json()
    assert counts == {"checkpoints": 1, "blobs": 0, "writes": 0}
    pruned = api_a.post(
        "/api/v1/langgraph/threads/prune", {"thread_id": thread_id}, content_type=JSON
    )
    assert pruned.json() == {"checkpoints": 0, "writes": 0, "blobs": 0}
    deleted = api_a.post(
        "/api/v1/langgraph/threads/delete", {"thread_id": thread_id}, content_type=JSON
    )
    assert deleted.json() == {"checkpoints": 1, "writes": 0, "blobs": 0}
    assert [r["thread_id"] for r in search(api_a).json()["results"]] == [thread_id + " (copy)"]


@pytest.mark.parametrize(
    ("thread_id", "message"),
    [("x" * 513, "no more than 512"), ("", "blank"), ("a\x00b", "NUL")],
)
def test_a_thread_id_past_the_bound_is_refused_and_changes_nothing(
    api_a, tenant_a, thread_id, message
):
    responses = [
        put(api_a, thread_id, "c1"),
        write(api_a, thread_id, "c1", []),
        search(api_a, thread_id=thread_id) if "\x00" not in thread_id else None,
    ]
    for response in filter(None, responses):
        assert response.status_code == 422
        assert message in str(response.json()["error"]["details"]["thread_id"])
    assert tasks(tenant_a) == []
    assert rows(tenant_a) == ([], [], [])


def test_a_list_without_a_thread_searches_every_thread_of_the_tenant(api_a, api_b, tenant_a):
    put(api_a, "th-1", "c1", metadata={"source": "input", "user": "ann"})
    put(api_a, "th-2", "c2", metadata={"source": "loop", "user": "ann"})
    put(api_a, "mail@example.com", "c3", metadata={"source": "loop", "user": "bob"})
    put(api_b, "th-b", "c4", metadata={"source": "loop", "user": "ann"})
    found = search(api_a, metadata='{"user": "ann"}').json()
    assert [(r["thread_id"], r["checkpoint_id"]) for r in found["results"]] == [
        ("th-2", "c2"),
        ("th-1", "c1"),
    ]
    everything = search(api_a, limit=2).json()
    assert [r["checkpoint_id"] for r in everything["results"]] == ["c3", "c2"]
    rest = api_a.get(everything["next"]).json()
    assert [r["checkpoint_id"] for r in rest["results"]] == ["c1"]
    assert search(api_a, metadata='{"user": "zed"}').json() == {"results": [], "next": None}
    assert [r["checkpoint_id"] for r in search(api_b).json()["results"]] == ["c4"]


def test_another_tenant_cannot_reach_a_thread_and_changes_nothing(api_a, api_b, tenant_a):
    put(api_a, "user@example.com/chat 1", "c1")
    before = (rows(tenant_a), tasks(tenant_a))
    thread_id = "user@example.com/chat 1"
    assert search(api_b, thread_id=thread_id).status_code == 404
    for path, body in [
        ("threads/delete", {"thread_id": thread_id}),
        ("threads/copy", {"thread_id": thread_id, "target_thread_id": "mine"}),
        ("threads/prune", {"thread_id": thread_id}),
    ]:
        response = api_b.post(f"/api/v1/langgraph/{path}", body, content_type=JSON)
        assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    # A put of the same id makes the other tenant's own thread, never touches this one.
    assert put(api_b, thread_id, "c9").status_code == 201
    assert search(api_b).json()["results"][0]["checkpoint_id"] == "c9"
    assert (rows(tenant_a), tasks(tenant_a)) == before
    assert [r["checkpoint_id"] for r in search(api_a).json()["results"]] == ["c1"]


def test_a_finished_threads_task_takes_no_more_puts_or_writes(api_a, tenant_a, make_task):
    make_task(tenant_a, task_id="done-1", objective="x")
    api_a.put(
        "/api/v1/tasks/done-1/state",
        {"expected_version": 1, "status": "completed"},
        content_type=JSON,
    )
    assert put(api_a, "done-1", "c1").status_code == 409
    assert write(api_a, "done-1", "c1", []).status_code == 409
    assert rows(tenant_a) == ([], [], [])


def _big_put(client: Client, thread_id: str, size: int):
    blob = {"channel": "a", "version": 1, "type": "msgpack"}
    blob["data"] = base64.b64encode(b"m" * size).decode()
    return put(client, thread_id, "c1", blobs=[blob])


def test_a_checkpoint_over_the_usual_body_limit_is_taken(api_a, tenant_a, settings):
    size = settings.STATEROOM_MAX_BODY_BYTES  # base64 makes the body 4/3 of it
    assert _big_put(api_a, "big", size).status_code == 201
    page = search(api_a, thread_id="big").json()
    assert len(base64.b64decode(page["results"][0]["channel_values"][0]["data"])) == size
    # Everywhere else the usual limit holds.
    other = api_a.post("/api/v1/tasks", {"objective": "x" * (size + 10)}, content_type=JSON)
    assert other.status_code == 413
    assert tasks(tenant_a) == [("big", None)]


def test_the_langgraph_body_limit_still_holds(api_a, tenant_a):
    with override_settings(STATEROOM_LANGGRAPH_MAX_BODY_BYTES=4096):
        response = _big_put(api_a, "big", 4096)
    assert response.status_code == 413
    assert response.json()["error"]["details"] == {"limit_bytes": 4096}
    with in_tenant(tenant_a):
        assert not GraphCheckpoint.objects.exists()
