"""'Deleted' means gone: one marker written into every content field, then found nowhere.

Through the API, as runtimes and operators do, one marker string goes into
every field that carries content: the session's metadata and end reason and
its items; the run's event payloads and error; the task's objective,
constraints and checkpoint; the approvals' arguments, edited arguments,
reasons and response; the effects' requests, results and errors. An admin
token then deletes the session's content. Afterwards every text and JSON
column of every table (the audit table included), read as the database
owner, holds no marker, and neither does any API answer, console page or
export; the audit chain still verifies.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.test import Client

from sessions_app.tasks import index_items
from tests.conftest import login

MARKER = "zqmarker7731"  # one word: full-text search vectors keep it as one lexeme
JSON = "application/json"

# Where the marker is before the deletion: every content field, and nowhere in the audit
# events themselves (what a runtime wrote, and reasons the model hears, are detached payloads).
CONTENT_COLUMNS = {
    ("sessions_app_session", "metadata"),
    ("sessions_app_session", "end_reason"),
    ("sessions_app_sessionitem", "payload"),
    ("runs_app_run", "error"),
    ("runs_app_runtransition", "changes"),
    ("runs_app_runevent", "payload"),
    ("tasks_app_task", "objective"),
    ("tasks_app_task", "constraints"),
    ("tasks_app_taskcheckpoint", "state"),
    ("tasks_app_graphcheckpoint", "metadata"),  # the task as a LangGraph thread
    ("tasks_app_graphblob", "value"),
    ("tasks_app_graphwrite", "value"),
    ("approvals_app_approvalrequest", "arguments"),
    ("approvals_app_approvalrequest", "usual_arguments"),
    ("approvals_app_approvalrequest", "summary"),
    ("approvals_app_approvalrequest", "search"),  # its full-text vector
    ("sessions_app_itemsearch", "search"),  # the items' search index, once indexed
    ("approvals_app_approvalrequest", "approved_arguments"),
    ("approvals_app_approvalrequest", "reason"),
    ("approvals_app_approvalrequest", "decision_reason"),
    ("approvals_app_approvalrequest", "response"),
    ("approvals_app_approvalrequest", "void_reason"),  # the runtime's words on a void
    ("approvals_app_approvalrequest", "void_details"),
    ("approvals_app_approvalrequest", "outcome_error"),  # the tool's error, as reported
    ("effects_app_externaleffect", "request"),
    ("effects_app_externaleffect", "result"),
    ("effects_app_externaleffect", "error"),
    ("audit_app_auditpayload", "content"),
}

TEXT_COLUMNS_SQL = """
SELECT c.table_name, c.column_name
FROM information_schema.columns c
JOIN information_schema.tables t
  ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
  AND (c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'tsvector')
       OR (c.data_type = 'ARRAY' AND c.udt_name IN ('_text', '_varchar')))
ORDER BY 1, 2
"""


def marked_columns(owner_sql, tenant) -> set[tuple[str, str]]:
    """(table, column) of every text or JSON column where any row holds the marker, read as the
    owner (RLS forced on it too: the tenant's setting is made in the same transaction)."""
    columns = owner_sql(TEXT_COLUMNS_SQL)
    assert len(columns) > 60  # every table of the project and of Django, not a few
    union = " UNION ALL ".join(
        f'SELECT %s, %s FROM "{table}" WHERE "{column}"::text LIKE %s' for table, column in columns
    )
    params = [value for table, column in columns for value in (table, column, f"%{MARKER}%")]
    return {tuple(row) for row in owner_sql((union, params), tenant=tenant)}


class Api:
    def __init__(self, token: str) -> None:
        self.client = Client(headers={"Authorization": f"Bearer {token}"})

    def __call__(self, method: str, path: str, body: dict | None = None, status: int = 200):
        call = getattr(self.client, method)
        response = call(path) if method == "get" else call(path, json.dumps(body or {}), JSON)
        assert response.status_code == status, (method, path, response.content)
        return response.json()


def write_the_marker_everywhere(runtime: Api, operator: Api) -> dict[str, list[str]]:
    m = MARKER
    runtime(
        "post",
        "/api/v1/sessions",
        {"session_id": "s1", "user_id": "u1", "metadata": {"note": m}},
        201,
    )
    runtime(
        "post", "/api/v1/tasks", {"task_id": "t1", "objective": f"do {m}", "constraints": [m]}, 201
    )
    runtime("post", "/api/v1/runs", {"run_id": "r1", "session_id": "s1", "task_id": "t1"}, 201)
    runtime(
        "post",
        "/api/v1/sessions/s1/attach",
        {"run_id": "r1", "user_id": "u1", "expected_revision": 0},
    )
    version = runtime(
        "post", "/api/v1/runs/r1/transition", {"expected_version": 1, "status": "running"}
    )["version"]
    item = {"role": "user", "item_type": "message", "payload": {"text": f"hi {m}"}}
    runtime("post", "/api/v1/sessions/s1/items", {"items": [item], "run_id": "r1"}, 201)
    runtime(
        "post", "/api/v1/runs/r1/events", {"events": [{"type": "tool", "payload": {"out": m}}]}, 201
    )
    checkpoint = runtime(
        "post", "/api/v1/tasks/t1/checkpoints", {"schema_version": 1, "state": {"memo": m}}, 201
    )
    # The task is a LangGraph thread too: a checkpoint with a channel value, a pending write.
    graph = {
        "v": 1,
        "id": "g1",
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_versions": {"messages": 1},
        "versions_seen": {},
    }
    blob = {"channel": "messages", "version": 1, "type": "json", "value": [m]}
    runtime(
        "post",
        "/api/v1/tasks/t1/langgraph/checkpoints",
        {"checkpoint": graph, "metadata": {"writes": {"agent": m}}, "blobs": [blob]},
        201,
    )
    write = {"idx": 0, "channel": "messages", "type": "json", "value": m}
    runtime(
        "post",
        "/api/v1/tasks/t1/langgraph/writes",
        {"checkpoint_id": "g1", "graph_task_id": "n1", "writes": [write]},
        201,
    )
    version = runtime(
        "post",
        "/api/v1/runs/r1/transition",
        {
            "expected_version": version,
            "error": {"message": f"boom {m}"},
            "last_checkpoint_id": checkpoint["checkpoint_id"],
        },
    )["version"]
    approvals = []
    for decision in (
        {"decision": "edit", "approved_arguments": {"a": f"{m}!"}},
        {"decision": "respond", "response": f"say {m}"},
        {"decision": "reject"},
    ):
        approval = runtime(
            "post",
            "/api/v1/runs/r1/approvals",
            {
                "expected_version": version,
                "tool_name": "refund",
                "arguments": {"a": m},
                "risk": "high",
                "reason": f"because {m}",
                "summary": f"refund {m}",
                "usual_arguments": {"a": m},
                "allowed_decisions": ["approve", "edit", "reject", "respond"],
            },
            201,
        )
        approvals.append(approval["approval_id"])
        operator(
            "post",
            f"/api/v1/approvals/{approval['approval_id']}/decision",
            {**decision, "reason": f"why {m}"},
        )
        if decision["decision"] == "edit":  # the approved call ran and failed: its error
            runtime(
                "post",
                f"/api/v1/approvals/{approval['approval_id']}/outcome",
                {"outcome": "failed", "error": {"message": f"tool {m}"}},
            )
        version = runtime("get", "/api/v1/runs/r1")["version"]
    # One the runtime voids (its tool changed): its words and evidence are content too.
    voided = runtime(
        "post",
        "/api/v1/runs/r1/approvals",
        {"expected_version": version, "tool_name": "refund", "arguments": {"a": m}, "risk": "low"},
        201,
    )
    approvals.append(voided["approval_id"])
    runtime(
        "post",
        f"/api/v1/approvals/{voided['approval_id']}/void",
        {"reason_code": "tool_changed", "reason": f"schema {m}", "details": {"old": m}},
    )
    effects = []
    for key, outcome in (("k1", "commit"), ("k2", "fail")):
        effect = runtime(
            "post",
            "/api/v1/runs/r1/effects",
            {"idempotency_key": key, "tool_name": "pay", "request": {"q": m}},
            201,
        )
        effects.append(effect["effect_id"])
        body = {"result": {"r": m}} if outcome == "commit" else {"error": {"message": m}}
        runtime("post", f"/api/v1/effects/{effect['effect_id']}/{outcome}", body)
    runtime("post", "/api/v1/sessions/s1/close", {"reason": f"bye {m}"})
    return {
        "approvals": approvals,
        "effects": effects,
        "checkpoints": [checkpoint["checkpoint_id"]],
    }


def everything_readable(
    runtime: Api, admin_client: Client, ids: dict[str, list[str]], deletion_id: str
) -> str:
    """Every API answer and console page about the session, its run, task, approvals, effects."""
    texts = [
        json.dumps(runtime("get", path))
        for path in (
            "/api/v1/sessions/s1",
            "/api/v1/sessions?user_id=u1",
            "/api/v1/sessions/s1/items",
            "/api/v1/runs/r1",
            "/api/v1/runs?session_id=s1",
            "/api/v1/runs/r1/events",
            "/api/v1/runs/r1/effects",
            "/api/v1/effects?run_id=r1",
            "/api/v1/tasks/t1",
            "/api/v1/tasks/t1/checkpoints/latest",
            "/api/v1/tasks/t1/langgraph/checkpoints",
            f"/api/v1/tasks/t1/checkpoints/{ids['checkpoints'][0]}",
            "/api/v1/approvals?run_id=r1",
            *(f"/api/v1/approvals/{approval_id}" for approval_id in ids["approvals"]),
        )
    ]
    pages = [
        "/t/acme/sessions/s1/",
        "/t/acme/sessions/?q=s1",
        "/t/acme/runs/r1/",
        "/t/acme/tasks/t1/",
        "/t/acme/approvals/",
        *(f"/t/acme/approvals/{approval_id}/" for approval_id in ids["approvals"]),
        "/t/acme/audit/",
        "/t/acme/audit/export.jsonl",
        "/t/acme/audit/export.csv",
        "/t/acme/sessions/s1/export.jsonl",
        "/t/acme/sessions/s1/export.md",
        f"/t/acme/sessions/s1/deletions/{deletion_id}/",
    ]
    for page in pages:
        response = admin_client.get(page)
        assert response.status_code == 200, page
        body = b"".join(response.streaming_content) if response.streaming else response.content
        texts.append(body.decode())
    return "\n".join(texts)


@pytest.mark.django_db(transaction=True)
def test_a_marker_in_every_content_field_is_found_nowhere_after_the_deletion(
    tenant_a, make_token, admin_a, owner_sql
):
    runtime = Api(make_token(tenant_a))
    operator = Api(make_token(tenant_a, role="operator", name="ops"))
    admin = Api(make_token(tenant_a, role="admin", name="dpo"))
    ids = write_the_marker_everywhere(runtime, operator)
    index_items(tenant_id=tenant_a.pk)  # what beat runs a second later: the items in the index
    assert marked_columns(owner_sql, tenant_a) == CONTENT_COLUMNS

    # The job runs when the request commits (eager Celery in the tests).
    deletion = admin("post", "/api/v1/sessions/s1/deletions", {"reason": "GDPR Art. 17"}, 202)
    done = admin("get", f"/api/v1/deletions/{deletion['deletion_id']}")
    assert done["status"] == "done"
    assert (
        done["progress"]["done"]
        == done["progress"]["total"]
        == sum(done["receipt"]["deleted"].values())
    )

    assert marked_columns(owner_sql, tenant_a) == set()
    seen = everything_readable(runtime, login(admin_a), ids, deletion["deletion_id"])
    assert MARKER not in seen
    assert "GDPR Art. 17" in seen  # the admin's reason stays, on the receipt and in the log
    out = io.StringIO()
    call_command("verify_audit", tenant="acme", stdout=out)
    assert out.getvalue() == "ok: tenant acme\n"
