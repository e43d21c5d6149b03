import pytest
from django.test import Client
from django.utils import timezone

from stateroom.errors import NotFound
from tasks_app.models import Task, TaskCheckpoint
from tenancy_app.scoping import in_tenant

from .conftest import iso

JSON = "application/json"


def task_rows(tenant) -> list[tuple]:
    with in_tenant(tenant):
        return list(
            Task.objects.order_by("id").values_list(
                "task_id", "version", "status", "completed_nodes", "pending_nodes", "updated_at"
            )
        )


def checkpoint_rows(tenant) -> list[tuple]:
    with in_tenant(tenant):
        return list(TaskCheckpoint.objects.order_by("id").values_list("checkpoint_id", "seq"))


def expected_task(task: Task, **changes) -> dict:
    body = {
        "task_id": task.task_id,
        "objective": task.objective,
        "constraints": task.constraints,
        "plan_version": None,
        "completed_nodes": [],
        "pending_nodes": [],
        "pending_approvals": [],
        "artifact_refs": [],
        "external_effect_records": [],
        "latest_checkpoint_id": None,
        "schema_version": 1,
        "status": "active",
        "version": 1,
        "created_at": iso(task.created_at),
        "updated_at": iso(task.updated_at),
    }
    body.update(changes)
    return body


def load(tenant, task_id: str = "T-7") -> Task:
    with in_tenant(tenant):
        return Task.objects.get(task_id=task_id)


# --- POST /api/v1/tasks -------------------------------------------------------
def test_create_task(api_a, tenant_a):
    response = api_a.post(
        "/api/v1/tasks",
        {"task_id": "T-7", "objective": "Migrate the repo", "constraints": ["keep tests green"]},
        content_type=JSON,
    )
    assert response.status_code == 201
    assert response.json() == expected_task(load(tenant_a))
    assert response.json()["constraints"] == ["keep tests green"]


def test_create_task_generates_an_id(api_a, tenant_a):
    response = api_a.post("/api/v1/tasks", {"objective": "x"}, content_type=JSON)
    assert response.status_code == 201
    task_id = response.json()["task_id"]
    assert task_id.startswith("task_")
    assert task_rows(tenant_a)[0][:3] == (task_id, 1, "active")


def test_create_duplicate_task_is_409(api_a, make_task, tenant_a):
    make_task(tenant_a)
    before = task_rows(tenant_a)
    response = api_a.post("/api/v1/tasks", {"task_id": "T-7", "objective": "x"}, content_type=JSON)
    assert response.status_code == 409
    assert response.json()["error"] == {
        "code": "task_exists",
        "message": "A task with this id already exists.",
        "details": {"task_id": "T-7"},
    }
    assert task_rows(tenant_a) == before


def test_same_task_id_in_another_tenant_is_independent(api_b, make_task, tenant_a, tenant_b):
    make_task(tenant_a)
    response = api_b.post("/api/v1/tasks", {"task_id": "T-7", "objective": "x"}, content_type=JSON)
    assert response.status_code == 201
    assert [r[0] for r in task_rows(tenant_b)] == ["T-7"]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["objective"]),
        ({"objective": ""}, ["objective"]),
        ({"objective": "x", "task_id": "bad id"}, ["task_id"]),
        ({"objective": "x", "constraints": "no"}, ["constraints"]),
        ({"objective": "x", "constraints": [1, {"a": 1}]}, ["constraints[0]", "constraints[1]"]),
    ],
)
def test_create_task_validation_is_422(api_a, tenant_a, body, fields):
    response = api_a.post("/api/v1/tasks", body, content_type=JSON)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert sorted(error["details"]) == fields
    assert task_rows(tenant_a) == []


@pytest.mark.parametrize(
    ("raw", "code"), [("{not json", "malformed_json"), ("[1, 2]", "body_not_object")]
)
def test_create_task_bad_json_is_400(api_a, tenant_a, raw, code):
    response = api_a.post("/api/v1/tasks", raw, content_type=JSON)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert task_rows(tenant_a) == []


def test_every_task_endpoint_needs_a_token(make_task, tenant_a):
    make_task(tenant_a)
    anonymous = Client()
    bad = Client(headers={"Authorization": "Bearer sr_not_a_token"})
    for client in (anonymous, bad):
        calls = [
            client.post("/api/v1/tasks", {"objective": "x"}, content_type=JSON),
            client.get("/api/v1/tasks/T-7"),
            client.put(
                "/api/v1/tasks/T-7/state",
                {"expected_version": 1, "status": "cancelled"},
                content_type=JSON,
            ),
            client.post(
                "/api/v1/tasks/T-7/checkpoints",
                {"schema_version": 1, "state": {}},
                content_type=JSON,
            ),
            client.get("/api/v1/tasks/T-7/checkpoints/latest"),
            client.get("/api/v1/tasks/T-7/checkpoints/ckpt_x"),
        ]
        assert [r.status_code for r in calls] == [401] * 6
        assert {r.json()["error"]["code"] for r in calls} == {"unauthenticated"}
    assert [r[:3] for r in task_rows(tenant_a)] == [("T-7", 1, "active")]
    assert checkpoint_rows(tenant_a) == []


# --- GET /api/v1/tasks/{task_id} -------------------------------------------------
def test_get_task_returns_durable_state_with_status_and_version(api_a, make_task, tenant_a):
    make_task(tenant_a, constraints=["c1"])
    api_a.put(
        "/api/v1/tasks/T-7/state",
        {
            "expected_version": 1,
            "plan_version": "p3",
            "completed_nodes": ["patch-2", "analyze"],
            "pending_nodes": ["approve-6"],
            "pending_approvals": ["apr_1"],
            "artifact_refs": ["s3://b/report.md"],
            "external_effect_records": ["eff_1"],
            "status": "waiting",
        },
        content_type=JSON,
    )
    checkpoint = api_a.post(
        "/api/v1/tasks/T-7/checkpoints", {"schema_version": 3, "state": {}}, content_type=JSON
    ).json()
    response = api_a.get("/api/v1/tasks/T-7")
    assert response.status_code == 200
    assert response.json() == expected_task(
        load(tenant_a),
        constraints=["c1"],
        plan_version="p3",
        completed_nodes=["analyze", "patch-2"],
        pending_nodes=["approve-6"],
        pending_approvals=["apr_1"],
        artifact_refs=["s3://b/report.md"],
        external_effect_records=["eff_1"],
        latest_checkpoint_id=checkpoint["checkpoint_id"],
        schema_version=3,
        status="waiting",
        version=2,
    )


def test_get_unknown_or_other_tenants_task_is_404(api_a, api_b, make_task, tenant_a):
    make_task(tenant_a)
    for client, task_id in ((api_a, "T-nope"), (api_b, "T-7")):
        response = client.get(f"/api/v1/tasks/{task_id}")
        assert response.status_code == 404
        assert response.json()["error"] == {
            "code": "not_found",
            "message": "No such task.",
            "details": {"task_id": task_id},
        }


# --- PUT /api/v1/tasks/{task_id}/state ---------------------------------------------
def test_put_state_saves_and_bumps_version(api_a, make_task, tenant_a):
    make_task(tenant_a)
    response = api_a.put(
        "/api/v1/tasks/T-7/state",
        {"expected_version": 1, "completed_nodes": ["b", "a", "b"], "plan_version": None},
        content_type=JSON,
    )
    assert response.status_code == 200
    assert response.json() == expected_task(load(tenant_a), version=2, completed_nodes=["a", "b"])


def test_put_state_with_stale_version_is_409(api_a, make_task, tenant_a):
    make_task(tenant_a)
    api_a.put("/api/v1/tasks/T-7/state", {"expected_version": 1}, content_type=JSON)
    before = task_rows(tenant_a)
    response = api_a.put(
        "/api/v1/tasks/T-7/state",
        {"expected_version": 1, "completed_nodes": ["x"]},
        content_type=JSON,
    )
    assert response.status_code == 409
    assert response.json()["error"] == {
        "code": "version_conflict",
        "message": "The task is at version 2, not 1.",
        "details": {"current_version": 2, "expected_version": 1},
    }
    assert task_rows(tenant_a) == before


def test_put_state_on_terminal_task_is_409_invalid_transition(api_a, make_task, tenant_a):
    make_task(tenant_a)
    api_a.put(
        "/api/v1/tasks/T-7/state", {"expected_version": 1, "status": "failed"}, content_type=JSON
    )
    before = task_rows(tenant_a)
    response = api_a.put(
        "/api/v1/tasks/T-7/state", {"expected_version": 2, "status": "active"}, content_type=JSON
    )
    assert response.status_code == 409
    assert response.json()["error"] == {
        "code": "invalid_transition",
        "message": "A task cannot go from failed to active.",
        "details": {"status": "failed", "requested": "active"},
    }
    assert task_rows(tenant_a) == before


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["expected_version"]),
        ({"expected_version": "one"}, ["expected_version"]),
        ({"expected_version": 1, "status": "bogus"}, ["status"]),
        ({"expected_version": 1, "completed_nodes": "a"}, ["completed_nodes"]),
        ({"expected_version": 1, "pending_approvals": [{"id": 1}]}, ["pending_approvals[0]"]),
        ({"expected_version": 1, "plan_version": "p" * 65}, ["plan_version"]),
        ({"expected_version": 1.0}, ["expected_version"]),
        ({"expected_version": 1, "complete_nodes": ["typo"]}, ["complete_nodes"]),
        ({"expected_version": 1, "version": 5}, ["version"]),
    ],
)
def test_put_state_validation_is_422(api_a, make_task, tenant_a, body, fields):
    make_task(tenant_a)
    before = task_rows(tenant_a)
    response = api_a.put("/api/v1/tasks/T-7/state", body, content_type=JSON)
    assert response.status_code == 422
    error = response.json()["error"]
    code = "unknown_field" if fields[0] in ("complete_nodes", "version") else "validation_error"
    assert (error["code"], sorted(error["details"])) == (code, fields)
    assert task_rows(tenant_a) == before


def test_put_state_bad_json_is_400(api_a, make_task, tenant_a):
    make_task(tenant_a)
    response = api_a.put("/api/v1/tasks/T-7/state", "{", content_type=JSON)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_json"


def test_put_state_of_unknown_or_other_tenants_task_is_404_whatever_the_body(
    api_a, api_b, make_task, tenant_a
):
    make_task(tenant_a)
    before = task_rows(tenant_a)
    for client, task_id in ((api_a, "T-nope"), (api_b, "T-7")):
        for body in ({"expected_version": 1, "status": "cancelled"}, {"status": "bogus"}, "{"):
            response = client.put(f"/api/v1/tasks/{task_id}/state", body, content_type=JSON)
            assert response.status_code == 404
            assert response.json()["error"]["code"] == "not_found"
    assert task_rows(tenant_a) == before


# --- checkpoints ---------------------------------------------------------------------
def test_post_checkpoint_then_read_latest_and_by_id(api_a, make_task, tenant_a):
    make_task(tenant_a)
    first = api_a.post(
        "/api/v1/tasks/T-7/checkpoints",
        {"schema_version": 1, "state": {"files_analyzed": 80}, "node_id": "analyze"},
        content_type=JSON,
    )
    second = api_a.post(
        "/api/v1/tasks/T-7/checkpoints",
        {"schema_version": 2, "state": {"patches": ["p1", "p2"]}},
        content_type=JSON,
    )
    assert (first.status_code, second.status_code) == (201, 201)
    with in_tenant(tenant_a):
        one, two = TaskCheckpoint.objects.order_by("seq")
    assert first.json() == {"checkpoint_id": one.checkpoint_id, "seq": 1}
    assert second.json() == {"checkpoint_id": two.checkpoint_id, "seq": 2}
    assert load(tenant_a).latest_checkpoint_id == two.checkpoint_id

    latest = api_a.get("/api/v1/tasks/T-7/checkpoints/latest")
    assert latest.status_code == 200
    assert latest.json() == {
        "checkpoint_id": two.checkpoint_id,
        "task_id": "T-7",
        "seq": 2,
        "schema_version": 2,
        "node_id": "",
        "state": {"patches": ["p1", "p2"]},
        "size_bytes": len('{"patches":["p1","p2"]}'),
        "created_at": iso(two.created_at),
        "body_deleted_at": None,
    }
    by_id = api_a.get(f"/api/v1/tasks/T-7/checkpoints/{one.checkpoint_id}")
    assert by_id.status_code == 200
    assert by_id.json() == {
        "checkpoint_id": one.checkpoint_id,
        "task_id": "T-7",
        "seq": 1,
        "schema_version": 1,
        "node_id": "analyze",
        "state": {"files_analyzed": 80},
        "size_bytes": len('{"files_analyzed":80}'),
        "created_at": iso(one.created_at),
        "body_deleted_at": None,
    }


def test_checkpoint_whose_body_was_deleted_reads_as_null_state(api_a, make_task, tenant_a):
    make_task(tenant_a)
    created = api_a.post(
        "/api/v1/tasks/T-7/checkpoints", {"schema_version": 1, "state": {"a": 1}}, content_type=JSON
    ).json()
    with in_tenant(tenant_a):
        TaskCheckpoint.objects.update(body_deleted_at=timezone.now())
        deleted_at = TaskCheckpoint.objects.get().body_deleted_at
    body = api_a.get(f"/api/v1/tasks/T-7/checkpoints/{created['checkpoint_id']}").json()
    assert (body["state"], body["body_deleted_at"]) == (None, iso(deleted_at))


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"state": {}}, ["schema_version"]),
        ({"schema_version": 0, "state": {}}, ["schema_version"]),
        ({"schema_version": 1}, ["state"]),
        ({"schema_version": 1, "state": [1]}, ["state"]),
        ({"schema_version": 1, "state": "x"}, ["state"]),
        ({"schema_version": 1, "state": {}, "node_id": "n" * 201}, ["node_id"]),
    ],
)
def test_post_checkpoint_validation_is_422_and_writes_nothing(
    api_a, make_task, tenant_a, body, fields
):
    make_task(tenant_a)
    before = task_rows(tenant_a)
    response = api_a.post("/api/v1/tasks/T-7/checkpoints", body, content_type=JSON)
    assert response.status_code == 422
    error = response.json()["error"]
    assert (error["code"], sorted(error["details"])) == ("validation_error", fields)
    assert checkpoint_rows(tenant_a) == []
    assert task_rows(tenant_a) == before
    assert load(tenant_a).last_checkpoint_seq == 0


def test_post_checkpoint_with_non_finite_number_is_refused(api_a, make_task, tenant_a):
    make_task(tenant_a)
    response = api_a.post(
        "/api/v1/tasks/T-7/checkpoints",
        '{"schema_version": 1, "state": {"ratio": NaN}}',
        content_type=JSON,
    )
    assert response.status_code == 400  # NaN is not JSON: the JSON gate refuses it
    assert response.json()["error"]["code"] == "malformed_json"
    assert checkpoint_rows(tenant_a) == []


def test_post_checkpoint_on_terminal_task_is_409(api_a, make_task, tenant_a):
    make_task(tenant_a)
    api_a.put(
        "/api/v1/tasks/T-7/state",
        {"expected_version": 1, "status": "completed"},
        content_type=JSON,
    )
    response = api_a.post(
        "/api/v1/tasks/T-7/checkpoints", {"schema_version": 1, "state": {}}, content_type=JSON
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "invalid_transition"
    assert checkpoint_rows(tenant_a) == []


def test_checkpoints_of_unknown_or_other_tenants_task_are_404(api_a, api_b, make_task, tenant_a):
    make_task(tenant_a)
    make_task(tenant_a, task_id="T-8")
    ckpt = api_a.post(
        "/api/v1/tasks/T-7/checkpoints", {"schema_version": 1, "state": {}}, content_type=JSON
    ).json()["checkpoint_id"]
    before = checkpoint_rows(tenant_a)
    for client, task_id in ((api_a, "T-nope"), (api_b, "T-7")):
        for body in ({"schema_version": 1, "state": {}}, {"schema_version": 0}, "{"):
            response = client.post(f"/api/v1/tasks/{task_id}/checkpoints", body, content_type=JSON)
            assert response.status_code == 404
        assert client.get(f"/api/v1/tasks/{task_id}/checkpoints/latest").status_code == 404
        assert client.get(f"/api/v1/tasks/{task_id}/checkpoints/{ckpt}").status_code == 404
    # Same tenant, wrong task; and a task without any checkpoint.
    response = api_a.get(f"/api/v1/tasks/T-8/checkpoints/{ckpt}")
    assert (response.status_code, response.json()["error"]["message"]) == (
        404,
        "No such checkpoint.",
    )
    response = api_a.get("/api/v1/tasks/T-8/checkpoints/latest")
    assert (response.status_code, response.json()["error"]["message"]) == (
        404,
        "This task has no checkpoint yet.",
    )
    assert api_a.get("/api/v1/tasks/T-7/checkpoints/ckpt_nope").status_code == 404
    assert checkpoint_rows(tenant_a) == before


def test_schema_documents_every_task_endpoint(client, db):
    schema = client.get("/api/v1/schema/?format=json").json()
    paths = schema["paths"]
    read = {"200", "401", "404", "422", "429", "503"}
    documented = {
        ("post", "/api/v1/tasks"): {"201", "400", "401", "409", "411", "413", "422", "429", "503"},
        ("get", "/api/v1/tasks/{task_id}"): {"200", "401", "404", "422", "429", "503"},
        ("put", "/api/v1/tasks/{task_id}/state"): {
            "200",
            "400",
            "401",
            "404",
            "409",
            "411",
            "413",
            "422",
            "429",
            "503",
        },
        ("post", "/api/v1/tasks/{task_id}/checkpoints"): {
            "201",
            "400",
            "401",
            "404",
            "409",
            "411",
            "413",
            "422",
            "429",
            "503",
        },
        ("get", "/api/v1/tasks/{task_id}/checkpoints/latest"): read,
        ("get", "/api/v1/tasks/{task_id}/checkpoints/{checkpoint_id}"): read,
    }
    for (method, path), statuses in documented.items():
        assert set(paths[path][method]["responses"]) == statuses, (method, path)
    task = schema["components"]["schemas"]["TaskOut"]
    assert sorted(task["properties"]) == sorted(
        [
            "task_id",
            "objective",
            "constraints",
            "plan_version",
            "completed_nodes",
            "pending_nodes",
            "pending_approvals",
            "artifact_refs",
            "external_effect_records",
            "latest_checkpoint_id",
            "schema_version",
            "status",
            "version",
            "created_at",
            "updated_at",
        ]
    )


def test_checkpoint_history_pages_newest_first(api_a, api_b, make_task, tenant_a):
    make_task(tenant_a)
    make_task(tenant_a, task_id="T-empty")
    for n in range(5):
        api_a.post(
            "/api/v1/tasks/T-7/checkpoints",
            {"schema_version": 1, "state": {"n": n}, "node_id": f"node-{n}"},
            content_type=JSON,
        )
    with in_tenant(tenant_a):
        rows = {c.seq: c for c in TaskCheckpoint.objects.all()}
    first = api_a.get("/api/v1/tasks/T-7/checkpoints?limit=3")
    assert first.status_code == 200
    page = first.json()
    assert [c["seq"] for c in page["results"]] == [5, 4, 3]
    assert page["results"][0] == {
        "checkpoint_id": rows[5].checkpoint_id,
        "task_id": "T-7",
        "seq": 5,
        "schema_version": 1,
        "node_id": "node-4",
        "state": {"n": 4},
        "size_bytes": len('{"n":4}'),
        "created_at": iso(rows[5].created_at),
        "body_deleted_at": None,
    }
    assert "before_seq=3" in page["next"] and "limit=3" in page["next"]
    second = api_a.get(page["next"]).json()
    assert ([c["seq"] for c in second["results"]], second["next"]) == ([2, 1], None)
    # A task with no checkpoint is an empty page, not a 404.
    assert api_a.get("/api/v1/tasks/T-empty/checkpoints").json() == {"results": [], "next": None}
    # Unknown task, another tenant's task: 404, whatever the query; bad filters: 422.
    for client, task_id in ((api_a, "T-nope"), (api_b, "T-7")):
        for suffix in ("", "?limit=0", "?colour=red"):
            response = client.get(f"/api/v1/tasks/{task_id}/checkpoints{suffix}")
            assert response.status_code == 404, suffix
    for suffix in ("?limit=0", "?limit=101", "?before_seq=x", "?colour=red"):
        response = api_a.get(f"/api/v1/tasks/T-7/checkpoints{suffix}")
        assert response.status_code == 422, suffix


def test_checkpoint_history_store_call_is_one_statement_without_models(
    make_task, task_store, tenant_a, django_assert_num_queries
):
    make_task(tenant_a)
    store = task_store(tenant_a)
    with in_tenant(tenant_a):
        for n in range(3):
            store.append_checkpoint(task_id="T-7", schema_version=1, state={"n": n})
        with django_assert_num_queries(1):
            history = store.checkpoint_history("T-7", limit=2)
        assert [(h["seq"], h["state"]) for h in history] == [(3, {"n": 2}), (2, {"n": 1})]
        with django_assert_num_queries(1), pytest.raises(NotFound):
            store.checkpoint_history("T-nope")
