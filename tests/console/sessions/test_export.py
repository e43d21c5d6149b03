"""Transcript export: JSON Lines and Markdown, streamed, with the audit events."""

import json

from console_app import export
from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, add_items


def body(response) -> str:
    assert response.streaming
    return b"".join(response.streaming_content).decode()


def test_jsonl_export_has_session_items_and_audit_events(world, tenant_a, admin_a):
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).set_legal_hold(
            session_id=world.session_id, on=True, reason="case 9"
        )
    response = login(admin_a).get(f"/t/acme/sessions/{world.session_id}/export.jsonl")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="session-')
    rows = [json.loads(line) for line in body(response).splitlines()]
    assert [row["type"] for row in rows] == [
        "session",
        "item",
        "item",
        "item",
        "audit",
        "audit",
        "audit",
    ]
    assert rows[0]["session_id"] == world.session_id
    assert rows[0]["legal_hold"] is True
    assert rows[0]["metadata"] == {"channel": "web"}
    assert [(r["seq"], r["role"], r["payload"], r["run_id"]) for r in rows[1:4]] == [
        (1, "user", {"text": "message 1"}, world.run_id),
        (2, "assistant", {"text": "message 2"}, world.run_id),
        (3, "user", {"text": "message 3"}, world.run_id),
    ]
    assert [
        (r["action"], r["target_type"], r["target_id"], r["reason"], r["content"]) for r in rows[4:]
    ] == [
        # The runtime's reason is in the event's detached payload (`content`)...
        ("approval.requested", "approval", world.approval_id, "", {"reason": "money leaves"}),
        ("effect.marked_unknown", "effect", world.unknown_effect_id, "worker crashed", None),
        # ...a person's stays on the event.
        ("session.legal_hold_on", "session", world.session_id, "case 9", None),
    ]
    assert [r["seq"] for r in rows[4:]] == sorted(r["seq"] for r in rows[4:])


def test_markdown_export_fences_agent_text(make_session, tenant_a, admin_a):
    make_session("s-1")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).append_items(
            session_id="s-1",
            items=[
                {
                    "role": "assistant",
                    "item_type": "message",
                    "payload": {"text": "```\n# not a heading\n```"},
                },
                {
                    "role": "assistant",
                    "item_type": "call",
                    "payload": {"name": "lookup", "args": {"n": 1}},  # no known shape: JSON
                },
            ],
        )
    response = login(admin_a).get("/t/acme/sessions/s-1/export.md")
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    text = body(response)
    assert text.startswith("# Session s-1\n\n- **user_id**: u-1\n- **status**: active\n")
    assert "## Transcript\n\n### #1 assistant · message · " in text
    # A longer fence than the one inside the text, so the text cannot close it.
    assert "\n\n````text\n```\n# not a heading\n```\n````\n\n" in text
    assert '```json\n{\n  "args": {\n    "n": 1\n  },\n  "name": "lookup"\n}\n```' in text
    assert text.endswith("## Audit events\n\n_None._\n")


def test_export_streams_long_sessions_in_chunks(make_session, tenant_a, admin_a, monkeypatch):
    monkeypatch.setattr(export, "CHUNK", 7)
    make_session("s-1")
    add_items(tenant_a, "s-1", 30)
    rows = [
        json.loads(line)
        for line in body(login(admin_a).get("/t/acme/sessions/s-1/export.jsonl")).splitlines()
    ]
    assert [r["seq"] for r in rows if r["type"] == "item"] == list(range(1, 31))


def test_export_of_deleted_content_keeps_only_the_tombstone_and_audit(
    world, tenant_a, admin_a, django_capture_on_commit_callbacks
):
    client = login(admin_a)
    client.post(f"/t/acme/sessions/{world.session_id}/close", {"reason": "done"})
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/t/acme/sessions/{world.session_id}/delete", {"reason": "gdpr"})
    rows = [
        json.loads(line)
        for line in body(
            client.get(f"/t/acme/sessions/{world.session_id}/export.jsonl")
        ).splitlines()
    ]
    assert [r["type"] for r in rows if r["type"] != "audit"] == ["session"]
    assert rows[0]["content_deleted_at"] is not None
    # Closing settled the run that waited on an approval, as the system.
    assert [r["action"] for r in rows if r["type"] == "audit"][-5:] == [
        "session.closed",
        "run.cancelled",
        "approval.cancelled",
        "session.content_deletion_requested",
        "session.content_deleted",
    ]
    # What runtimes wrote into audit events went with the content.
    assert [r["content"] for r in rows if r["type"] == "audit"] == [None] * (len(rows) - 1)


def test_support_and_up_export_transcripts(world, operator_a, support_a, admin_a):
    """The role matrix: auditing sessions is support's job, so support exports transcripts."""
    for user in (support_a, operator_a, admin_a):
        client = login(user)
        response = client.get(f"/t/acme/sessions/{world.session_id}/export.md")
        assert response.status_code == 200
        assert response["Content-Disposition"] == 'attachment; filename="session-sess-1.md"'
        assert (
            'data-testid="export-md"'
            in client.get(f"/t/acme/sessions/{world.session_id}/").content.decode()
        )


def test_transcript_filename_is_the_public_id_made_safe(make_session, admin_a):
    make_session("we.ird:id")
    response = login(admin_a).get("/t/acme/sessions/we.ird:id/export.jsonl")
    assert response["Content-Disposition"] == 'attachment; filename="session-we.ird_id.jsonl"'


def test_export_of_another_tenants_session_is_404(world, admin_b):
    client = login(admin_b)
    assert client.get(f"/t/globex/sessions/{world.session_id}/export.jsonl").status_code == 404
    assert client.get(f"/t/acme/sessions/{world.session_id}/export.md").status_code == 404


def test_export_unknown_format_is_400(world, admin_a):
    response = login(admin_a).get(f"/t/acme/sessions/{world.session_id}/export.csv")
    assert response.status_code == 400


def test_markdown_export_escapes_agent_text_outside_the_fences(make_session, tenant_a, admin_a):
    """User ids, item roles and types, run ids are a runtime's: never raw HTML or Markdown."""
    make_session("s-2", user_id="<img src=x onerror=alert(1)>")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).append_items(
            session_id="s-2",
            items=[
                {
                    "role": "<script>alert(2)</script>",
                    "item_type": "[click](https://evil.example)",
                    "payload": {"text": "hello"},
                }
            ],
        )
    text = body(login(admin_a).get("/t/acme/sessions/s-2/export.md"))
    assert "<img" not in text and "<script" not in text
    assert "- **user_id**: &lt;img src=x onerror=alert(1)&gt;\n" in text
    assert (
        "### #1 &lt;script&gt;alert(2)&lt;/script&gt; · \\[click\\](https://evil.example) · "
    ) in text


def test_markdown_inline_values_fold_lines_and_escape_markup():
    assert export._inline("a\n# b") == "a # b"
    assert export._inline("**x** & `y` <b>") == "\\*\\*x\\*\\* &amp; \\`y\\` &lt;b&gt;"
