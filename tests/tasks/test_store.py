import socket
import threading

import pytest

from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, Unprocessable
from stateroom.jsondata import ensure_domain_data
from tasks_app.models import Task, TaskCheckpoint
from tasks_app.state import DurableTaskState
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant


def test_durable_task_state_round_trips_through_json_with_sets_sorted():
    state = DurableTaskState(
        task_id="T-7",
        objective="Migrate the repo",
        constraints=["no force push"],
        plan_version="p2",
        completed_nodes={"patch-5", "analyze", "patch-1"},
        pending_nodes={"approve-6"},
        pending_approvals=["apr_1"],
        artifact_refs=["s3://bucket/report.md"],
        external_effect_records=["eff_1"],
        latest_checkpoint_id="ckpt_1",
        schema_version=2,
    )
    data = state.to_json()
    assert data == {
        "task_id": "T-7",
        "objective": "Migrate the repo",
        "constraints": ["no force push"],
        "plan_version": "p2",
        "completed_nodes": ["analyze", "patch-1", "patch-5"],
        "pending_nodes": ["approve-6"],
        "pending_approvals": ["apr_1"],
        "artifact_refs": ["s3://bucket/report.md"],
        "external_effect_records": ["eff_1"],
        "latest_checkpoint_id": "ckpt_1",
        "schema_version": 2,
    }
    ensure_domain_data(data)
    assert DurableTaskState.from_json(data) == state


def test_create_load_and_to_state(tenant_a, task_store, make_task):
    task = make_task(tenant_a, constraints=["keep tests green"])
    with in_tenant(tenant_a):
        store = task_store(tenant_a)
        loaded = store.load("T-7")
        state = store.to_state(loaded)
    assert (loaded.pk, loaded.version, loaded.status) == (task.pk, 1, "active")
    assert state == DurableTaskState(
        task_id="T-7",
        objective="Migrate the repo",
        constraints=["keep tests green"],
        plan_version=None,
        completed_nodes=set(),
        pending_nodes=set(),
        pending_approvals=[],
        artifact_refs=[],
        external_effect_records=[],
        latest_checkpoint_id=None,
        schema_version=1,
    )


def test_create_generates_an_id_and_refuses_a_duplicate(tenant_a, task_store, make_task):
    with in_tenant(tenant_a):
        generated = task_store(tenant_a).create(objective="x")
    assert generated.task_id.startswith("task_") and len(generated.task_id) == 25
    make_task(tenant_a)
    with pytest.raises(Conflict) as exc:
        make_task(tenant_a)
    assert (exc.value.code, exc.value.details) == ("task_exists", {"task_id": "T-7"})


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"objective": "  "}, "objective"),
        ({"objective": "x", "task_id": "has space"}, "task_id"),
        ({"objective": "x", "task_id": "a" * 129}, "task_id"),
        ({"objective": "x", "constraints": "not a list"}, "constraints"),
    ],
)
def test_create_validates_fields(tenant_a, task_store, kwargs, field):
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
        task_store(tenant_a).create(**kwargs)
    assert list(exc.value.details) == [field]
    with in_tenant(tenant_a):
        assert Task.objects.count() == 0


def test_other_tenants_task_is_not_found(tenant_a, tenant_b, task_store, make_task):
    make_task(tenant_a)
    with in_tenant(tenant_b):
        store = task_store(tenant_b)
        with pytest.raises(NotFound):
            store.load("T-7")
        with pytest.raises(NotFound):
            store.save(task_id="T-7", expected_version=1, status="completed")
        with pytest.raises(NotFound):
            store.append_checkpoint(task_id="T-7", schema_version=1, state={})
        assert list(store.list_tasks()) == []


def test_save_writes_fields_and_bumps_version(tenant_a, task_store, make_task):
    make_task(tenant_a)
    with in_tenant(tenant_a):
        task = task_store(tenant_a).save(
            task_id="T-7",
            expected_version=1,
            plan_version="p1",
            completed_nodes={"b", "a"},
            pending_nodes=["c", "c", "d"],
            pending_approvals=["apr_1"],
            artifact_refs=["s3://x"],
            external_effect_records=["eff_1"],
            status="waiting",
        )
    with in_tenant(tenant_a):
        stored = Task.objects.get(pk=task.pk)
    assert task.version == stored.version == 2
    assert (stored.status, stored.plan_version) == ("waiting", "p1")
    assert (stored.completed_nodes, stored.pending_nodes) == (["a", "b"], ["c", "d"])
    assert (stored.pending_approvals, stored.artifact_refs, stored.external_effect_records) == (
        ["apr_1"],
        ["s3://x"],
        ["eff_1"],
    )


def test_stale_save_is_a_version_conflict_and_changes_nothing(tenant_a, task_store, make_task):
    make_task(tenant_a)
    with in_tenant(tenant_a):
        task_store(tenant_a).save(task_id="T-7", expected_version=1, pending_nodes=["a"])
    with in_tenant(tenant_a), pytest.raises(Conflict) as exc:
        task_store(tenant_a).save(task_id="T-7", expected_version=1, pending_nodes=["b"])
    assert exc.value.code == "version_conflict"
    assert exc.value.details == {"current_version": 2, "expected_version": 1}
    with in_tenant(tenant_a):
        assert Task.objects.values_list("version", "pending_nodes").get() == (2, ["a"])


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        (["waiting", "active", "completed"], True),
        (["waiting", "failed"], True),
        (["cancelled"], True),
        (["active", "active"], True),
        (["completed", "active"], False),
        (["failed", "waiting"], False),
        (["cancelled", "cancelled"], False),
    ],
)
def test_task_status_machine(tenant_a, task_store, make_task, path, allowed):
    make_task(tenant_a)
    store = task_store(tenant_a)
    *steps, last = path
    with in_tenant(tenant_a):
        for version, status in enumerate(steps, start=1):
            store.save(task_id="T-7", expected_version=version, status=status)
    version = len(steps) + 1
    if allowed:
        with in_tenant(tenant_a):
            assert store.save(task_id="T-7", expected_version=version, status=last).status == last
        return
    with in_tenant(tenant_a), pytest.raises(Conflict) as exc:
        store.save(task_id="T-7", expected_version=version, status=last)
    assert exc.value.code == "invalid_transition"
    assert exc.value.details == {"status": steps[-1], "requested": last}
    with in_tenant(tenant_a):
        assert Task.objects.values_list("status", "version").get() == (steps[-1], version)


def test_terminal_task_refuses_any_save_and_checkpoints(tenant_a, task_store, make_task):
    make_task(tenant_a)
    store = task_store(tenant_a)
    with in_tenant(tenant_a):
        store.save(task_id="T-7", expected_version=1, status="completed")
    with in_tenant(tenant_a), pytest.raises(Conflict) as exc:
        store.save(task_id="T-7", expected_version=2, pending_nodes=["x"])
    assert exc.value.code == "invalid_transition"
    with in_tenant(tenant_a), pytest.raises(Conflict) as exc:
        store.append_checkpoint(task_id="T-7", schema_version=1, state={"a": 1})
    assert exc.value.code == "invalid_transition"
    with in_tenant(tenant_a):
        assert TaskCheckpoint.objects.count() == 0
        assert Task.objects.values_list("version", "last_checkpoint_seq").get() == (2, 0)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"status": "bogus"}, "status"),
        ({"completed_nodes": "abc"}, "completed_nodes"),
        ({"pending_approvals": [1]}, "pending_approvals"),
        ({"artifact_refs": {"s3://x"}}, "artifact_refs"),
        ({"plan_version": "p" * 65}, "plan_version"),
        ({"latest_checkpoint_id": "x"}, "latest_checkpoint_id"),
        ({"version": 9}, "version"),
    ],
)
def test_save_validates_fields(tenant_a, task_store, make_task, fields, field):
    make_task(tenant_a)
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
        task_store(tenant_a).save(task_id="T-7", expected_version=1, **fields)
    assert exc.value.details.get(field) or exc.value.details.get("path") == field
    with in_tenant(tenant_a):
        assert Task.objects.values_list("version", "status").get() == (1, "active")


def test_checkpoints_are_numbered_per_task_and_become_latest(tenant_a, task_store, make_task):
    make_task(tenant_a)
    make_task(tenant_a, task_id="T-8")
    store = task_store(tenant_a)
    with in_tenant(tenant_a):
        first = store.append_checkpoint(
            task_id="T-7", schema_version=1, state={"files": 80}, node_id="analyze"
        )
        other = store.append_checkpoint(task_id="T-8", schema_version=1, state={})
        second = store.append_checkpoint(task_id="T-7", schema_version=2, state={"é": [1, 2.5]})
    assert (first.seq, second.seq, other.seq) == (1, 2, 1)
    assert first.checkpoint_id.startswith("ckpt_")
    assert (first.size_bytes, second.size_bytes) == (len('{"files":80}'), len('{"é":[1,2.5]}') + 1)
    with in_tenant(tenant_a):
        task = store.load("T-7")
        latest = store.latest_checkpoint("T-7")
        assert [c.seq for c in store.list_checkpoints("T-7").order_by("seq")] == [1, 2]
        assert store.get_checkpoint(task_id="T-7", checkpoint_id=first.checkpoint_id).state == {
            "files": 80
        }
        with pytest.raises(NotFound):
            store.get_checkpoint(task_id="T-8", checkpoint_id=first.checkpoint_id)
    # A checkpoint is not a state save: the version is untouched.
    assert (task.latest_checkpoint_id, task.last_checkpoint_seq, task.version) == (
        second.checkpoint_id,
        2,
        1,
    )
    assert task.schema_version == 2
    assert (latest["checkpoint_id"], latest["state"], latest["node_id"]) == (
        second.checkpoint_id,
        {"é": [1, 2.5]},
        "",
    )


def test_latest_checkpoint_of_a_task_without_one_is_not_found(tenant_a, task_store, make_task):
    make_task(tenant_a)
    with in_tenant(tenant_a), pytest.raises(NotFound) as exc:
        task_store(tenant_a).latest_checkpoint("T-7")
    assert exc.value.message == "This task has no checkpoint yet."


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"schema_version": 0, "state": {}}, "schema_version"),
        ({"schema_version": True, "state": {}}, "schema_version"),
        ({"schema_version": "1", "state": {}}, "schema_version"),
        ({"schema_version": 1, "state": []}, "state"),
        ({"schema_version": 1, "state": {}, "node_id": "n" * 201}, "node_id"),
    ],
)
def test_append_checkpoint_validates(tenant_a, task_store, make_task, kwargs, field):
    make_task(tenant_a)
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
        task_store(tenant_a).append_checkpoint(task_id="T-7", **kwargs)
    assert list(exc.value.details) == [field]


class _Client:
    """Stands for an HTTP/database client object a worker holds in memory."""


async def _coroutine():
    return None


def _process_objects():
    """(label, factory, expected type name) of things that live only in one process."""
    return [
        ("socket", lambda: socket.socket(), "socket.socket"),
        ("lock", lambda: threading.Lock(), "_thread.lock"),
        ("coroutine", lambda: _coroutine(), "coroutine"),
        ("file", lambda: open(__file__), "_io.TextIOWrapper"),
        ("thread", lambda: threading.Thread(target=print), "threading.Thread"),
        ("client", lambda: _Client(), f"{__name__}._Client"),
        ("set", lambda: {"a"}, "set"),
        ("bytes", lambda: b"raw", "bytes"),
    ]


def _close(obj) -> None:
    if hasattr(obj, "close"):
        obj.close()


@pytest.mark.parametrize(("label", "factory", "type_name"), _process_objects())
def test_checkpoint_with_a_process_object_is_refused_and_nothing_written(
    tenant_a, task_store, make_task, label, factory, type_name
):
    make_task(tenant_a)
    obj = factory()
    try:
        with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
            task_store(tenant_a).append_checkpoint(
                task_id="T-7",
                schema_version=1,
                state={"files": 80, "worker": {"handles": ["ok", obj]}},
            )
    finally:
        _close(obj)
    assert exc.value.code == "not_serializable"
    assert exc.value.details == {"path": "state.worker.handles[1]", "type": type_name}
    assert exc.value.message.startswith(f"state.worker.handles[1] is a {type_name}, not JSON data")
    with in_tenant(tenant_a):
        assert TaskCheckpoint.objects.count() == 0
        assert Task.objects.values_list("last_checkpoint_seq", "latest_checkpoint_id").get() == (
            0,
            "",
        )


@pytest.mark.parametrize(
    ("state", "path", "type_name"),
    [
        ({"ratio": float("nan")}, "state.ratio", "float"),
        ({"pair": (1, 2)}, "state.pair", "tuple"),
        ({1: "int key"}, "state[1]", "int"),
    ],
)
def test_checkpoint_refuses_values_json_would_not_read_back(
    tenant_a, task_store, make_task, state, path, type_name
):
    make_task(tenant_a)
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
        task_store(tenant_a).append_checkpoint(task_id="T-7", schema_version=1, state=state)
    assert exc.value.details == {"path": path, "type": type_name}


def test_cyclic_state_is_refused(tenant_a, task_store, make_task):
    make_task(tenant_a)
    loop: list = []
    loop.append(loop)
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
        task_store(tenant_a).append_checkpoint(task_id="T-7", schema_version=1, state={"l": loop})
    assert exc.value.code == "not_serializable"
    assert exc.value.details["path"].startswith("state.l[0][0]")


@pytest.mark.parametrize(
    ("fields", "path", "type_name"),
    [
        ({"completed_nodes": ["analyze", "SOCKET"]}, "completed_nodes[1]", "socket.socket"),
        ({"pending_approvals": ["apr_1", "LOCK"]}, "pending_approvals[1]", "_thread.lock"),
        ({"artifact_refs": "FILE"}, "artifact_refs", "_io.TextIOWrapper"),
        ({"plan_version": "CORO"}, "plan_version", "coroutine"),
        ({"status": "SOCKET"}, "status", "socket.socket"),
    ],
)
def test_saving_task_fields_holding_process_objects_is_refused(
    tenant_a, task_store, make_task, fields, path, type_name
):
    make_task(tenant_a)
    made = {
        "LOCK": threading.Lock(),
        "FILE": open(__file__),  # noqa: SIM115
        "CORO": _coroutine(),
        "SOCKET": socket.socket(),
    }

    def swap(value):
        if isinstance(value, list):
            return [made.get(v, v) for v in value]
        return made.get(value, value) if isinstance(value, str) else value

    try:
        with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
            task_store(tenant_a).save(
                task_id="T-7", expected_version=1, **{k: swap(v) for k, v in fields.items()}
            )
    finally:
        for obj in made.values():
            _close(obj)
    assert exc.value.code == "not_serializable"
    assert exc.value.details == {"path": path, "type": type_name}
    with in_tenant(tenant_a):
        task = Task.objects.get()
    assert (task.version, task.completed_nodes, task.pending_approvals, task.status) == (
        1,
        [],
        [],
        "active",
    )


def test_list_tasks_filters_by_status(tenant_a, task_store, make_task):
    make_task(tenant_a)
    make_task(tenant_a, task_id="T-8")
    with in_tenant(tenant_a):
        store = task_store(tenant_a)
        store.save(task_id="T-8", expected_version=1, status="waiting")
        assert sorted(store.list_tasks().values_list("task_id", flat=True)) == ["T-7", "T-8"]
        assert list(store.list_tasks(status="waiting").values_list("task_id", flat=True)) == ["T-8"]
        with pytest.raises(Unprocessable):
            store.list_tasks(status="bogus")


def test_checkpoint_on_a_finished_task_is_refused_with_its_status(tenant_a):
    with in_tenant(tenant_a):
        store = TaskStateStore(tenant_a, Actor.system("test"))
        task = store.create(task_id="done", objective="o")
        store.save(task_id="done", expected_version=task.version, status="completed")
        with pytest.raises(Conflict) as refusal:
            store.append_checkpoint(task_id="done", schema_version=1, state={"k": 1})
        assert (refusal.value.code, refusal.value.details) == (
            "invalid_transition",
            {"status": "completed"},
        )
        assert not TaskCheckpoint.objects.filter(task__task_id="done").exists()
        assert Task.objects.get(task_id="done").last_checkpoint_seq == 0


def test_checkpoint_with_text_jsonb_cannot_store_is_refused(tenant_a):
    with in_tenant(tenant_a):
        store = TaskStateStore(tenant_a, Actor.system("test"))
        store.create(task_id="t", objective="o")
        with pytest.raises(Unprocessable) as refusal:
            store.append_checkpoint(
                task_id="t", schema_version=1, state={"notes": ["fine", "nul\x00here"]}
            )
        assert (refusal.value.code, refusal.value.details) == (
            "not_serializable",
            {"path": "state.notes[1]", "type": "str"},
        )
        assert not TaskCheckpoint.objects.exists()
        assert Task.objects.get(task_id="t").last_checkpoint_seq == 0
