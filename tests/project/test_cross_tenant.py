"""Every `{id}` path of the schema, called with another tenant's token, answers 404."""

import re

from django.test import Client

from audit_app.models import AuditEvent
from runs_app.models import Run
from sessions_app.models import Session
from tasks_app.models import GraphBlob, GraphCheckpoint
from tenancy_app.scoping import in_tenant

PARAM = re.compile(r"{(\w+)}")
METHODS = ("get", "post", "put", "patch", "delete")


def id_operations(schema: dict) -> list[tuple[str, str]]:
    return [
        (method, path)
        for path, operations in schema["paths"].items()
        if PARAM.search(path)
        for method in METHODS
        if method in operations
    ]


def fill(path: str, ids: dict[str, str]) -> str:
    return PARAM.sub(lambda m: ids[m.group(1)], path)


def call(client: Client, method: str, url: str):
    if method == "get":
        return client.get(url)
    return getattr(client, method)(url, data="{}", content_type="application/json")


def snapshot(tenant) -> tuple:
    with in_tenant(tenant):
        return (
            list(Session.objects.values_list("session_id", "revision", "status", "last_seq")),
            list(Run.objects.values_list("run_id", "version", "status")),
            AuditEvent.objects.count(),
            list(GraphCheckpoint.objects.values_list("checkpoint_id", flat=True)),
            GraphBlob.objects.count(),
        )


def test_every_id_path_is_404_for_another_tenant(schema, objects_a, tenant_a, tenant_b, make_token):
    operations = id_operations(schema)
    assert len(operations) >= 20  # the contract's id paths are all in the schema
    other = Client(headers={"Authorization": f"Bearer {make_token(tenant_b, role='operator')}"})
    before = snapshot(tenant_a)
    for method, path in operations:
        url = fill(path, objects_a)
        response = call(other, method, url)
        assert response.status_code == 404, (method, url, response.status_code, response.content)
        assert response.json()["error"]["code"] == "not_found", (method, url)
    assert snapshot(tenant_a) == before


ADMIN_PATHS = {"/api/v1/deletions/{deletion_id}", "/api/v1/erasures/{erasure_id}"}


def test_the_same_id_paths_are_found_by_their_own_tenant(schema, objects_a, tenant_a, make_token):
    own = Client(headers={"Authorization": f"Bearer {make_token(tenant_a)}"})
    admin = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, role='admin')}"})
    gets = [path for method, path in id_operations(schema) if method == "get"]
    assert set(gets) >= ADMIN_PATHS
    for path in gets:
        url = fill(path, objects_a)
        response = admin.get(url)
        assert response.status_code == 200, (url, response.status_code, response.content)
        if path in ADMIN_PATHS:  # found, but the data lifecycle is for admin tokens
            denied = own.get(url)
            assert (denied.status_code, denied.json()["error"]["code"]) == (403, "admin_required")
        else:
            assert own.get(url).status_code == 200, url
