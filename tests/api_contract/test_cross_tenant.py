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


def test_the_same_id_paths_are_found_by_their_own_tenant(schema, objects_a, tenant_a, make_token):
    own = Client(headers={"Authorization": f"Bearer {make_token(tenant_a)}"})
    for method, path in id_operations(schema):
        if method != "get":
            continue
        url = fill(path, objects_a)
        response = own.get(url)
        assert response.status_code == 200, (url, response.status_code, response.content)
