"""Seed 000, "how to verify": a DurableTaskState saved by one process is continued by
another that shares nothing with it but the database (no old process objects).

The subprocess reaches the test database as the app role, through its own connection.
"""

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.db import connection

from stateroom.actor import Actor
from stateroom.database import url_of
from stateroom.errors import Unprocessable
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant

ROOT = Path(__file__).resolve().parents[2]

# The new worker: it knows only ids, loads state and the latest checkpoint,
# re-creates its own resources from the identifiers, completes one node,
# saves with the version it read and appends a checkpoint.
CONTINUE = r"""
import json, os, sys, threading
import django
django.setup()
from stateroom.actor import Actor
from tasks_app.store import TaskStateStore
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

task_id, slug = sys.argv[1:3]
tenant = Tenant.objects.get(slug=slug)
store = TaskStateStore(tenant, Actor.system("worker-2"))
with in_tenant(tenant):
    task = store.load(task_id)
    state = store.to_state(task)
    checkpoint = store.latest_checkpoint(task_id)
body = checkpoint["state"]
lock = threading.Lock()  # this process's own, not the old one's
node = sorted(state.pending_nodes)[0]
with lock:
    state.completed_nodes.add(node)
    state.pending_nodes.discard(node)
with in_tenant(tenant):
    saved = store.save(
        task_id=task_id,
        expected_version=task.version,
        completed_nodes=state.completed_nodes,
        pending_nodes=state.pending_nodes,
        artifact_refs=[*state.artifact_refs, body["repo"] + "#" + node],
    )
    new = store.append_checkpoint(
        task_id=task_id,
        schema_version=checkpoint["schema_version"],
        state={**body, "files_patched": body["files_patched"] + 1},
        node_id=node,
    )
print(json.dumps({
    "pid": os.getpid(),
    "resumed_from": checkpoint["checkpoint_id"],
    "node": node,
    "version": saved.version,
    "checkpoint_id": new.checkpoint_id,
    "seq": new.seq,
}))
"""


def database_url_of_test_db() -> str:
    return url_of(connection.settings_dict)


@pytest.mark.django_db(transaction=True)
def test_saved_task_state_is_continued_by_a_new_process(tenant_a):
    store = TaskStateStore(tenant_a, Actor.system("worker-1"))
    # The old worker holds live resources; only their identifiers are durable.
    with socket.socket() as conn:
        lock = threading.Lock()
        with in_tenant(tenant_a):
            store.create(task_id="T-7", objective="Migrate 80 files")
            store.save(
                task_id="T-7",
                expected_version=1,
                plan_version="p1",
                completed_nodes={"analyze", "patch-1"},
                pending_nodes={"patch-2", "patch-3"},
            )
            with pytest.raises(Unprocessable):
                store.append_checkpoint(
                    task_id="T-7", schema_version=1, state={"conn": conn, "lock": lock}
                )
            first = store.append_checkpoint(
                task_id="T-7",
                schema_version=1,
                state={"repo": "git@example.com:acme/app.git", "files_patched": 1},
                node_id="patch-1",
            )

    env = {**os.environ, "DATABASE_URL": database_url_of_test_db()}
    env.pop("DATABASE_OWNER_URL", None)
    env["DJANGO_SETTINGS_MODULE"] = "stateroom.test_settings"
    env.pop("STATEROOM_TEST_DB_SUFFIX", None)
    done = subprocess.run(
        [sys.executable, "-c", CONTINUE, "T-7", tenant_a.slug],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["pid"] != os.getpid()
    assert (report["resumed_from"], report["node"], report["version"], report["seq"]) == (
        first.checkpoint_id,
        "patch-2",
        3,
        2,
    )

    with in_tenant(tenant_a):
        task = store.load("T-7")
        state = store.to_state(task)
        latest = store.latest_checkpoint("T-7")
    assert (task.version, task.status) == (3, "active")
    assert state.completed_nodes == {"analyze", "patch-1", "patch-2"}
    assert state.pending_nodes == {"patch-3"}
    assert state.artifact_refs == ["git@example.com:acme/app.git#patch-2"]
    assert state.plan_version == "p1"
    assert state.latest_checkpoint_id == report["checkpoint_id"] == latest["checkpoint_id"]
    assert (latest["seq"], latest["node_id"], latest["state"]) == (
        2,
        "patch-2",
        {"repo": "git@example.com:acme/app.git", "files_patched": 2},
    )
