import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from audit_app.actor import Actor
from audit_app.models import AuditEvent
from console_app.views import audit as audit_views
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console_ops.conftest import queries

LOG = "/t/acme/audit/"


def seqs(response) -> list[int]:
    return [int(seq) for seq in re.findall(r'data-seq="(\d+)"', response.content.decode())]


def test_audit_log_lists_events_newest_first_with_diff_and_target_link(
    support_a, record_audit, tenant_a
):
    record_audit(tenant_a, 2, reason="lease <b>passed</b>")
    response = login(support_a).get(LOG)
    assert response.status_code == 200
    assert seqs(response) == [2, 1]
    page = response.content.decode()
    assert '<a href="/t/acme/sessions/s-1/">s-1</a>' in page
    assert "<del>&quot;active&quot;</del> → <ins>&quot;closed&quot;</ins>" in page
    assert "lease &lt;b&gt;passed&lt;/b&gt;" in page
    assert "<title>Audit log · Acme</title>" in page


def test_audit_log_of_another_tenant_is_404(admin_b, record_audit, tenant_a):
    record_audit(tenant_a, 1)
    client = login(admin_b)
    assert client.get(LOG).status_code == 404
    assert client.get(LOG + "export.csv").status_code == 404
    assert client.post(LOG + "verify").status_code == 404


def test_audit_log_filters(support_a, record_audit, tenant_a):
    otto = Actor("user", "7", "otto")
    record_audit(
        tenant_a,
        1,
        actor=otto,
        action="approval.approved",
        target_type="approval",
        target_id="ap-1",
    )
    record_audit(
        tenant_a,
        1,
        actor=otto,
        action="approval.rejected",
        target_type="approval",
        target_id="ap-2",
    )
    record_audit(tenant_a, 1, action="session.expired", target_id="s-9")
    client = login(support_a)
    assert seqs(client.get(LOG, {"actor": "OTT"})) == [2, 1]
    assert seqs(client.get(LOG, {"action": "approval."})) == [2, 1]
    assert seqs(client.get(LOG, {"action": "approval.rejected"})) == [2]
    assert seqs(client.get(LOG, {"target_type": "session"})) == [3]
    assert seqs(client.get(LOG, {"target_type": "approval", "target_id": "ap-1"})) == [1]
    today = timezone.now().date()
    assert seqs(client.get(LOG, {"date_from": today, "date_to": today})) == [3, 2, 1]
    assert seqs(client.get(LOG, {"date_to": today - timedelta(days=1)})) == []
    assert seqs(client.get(LOG, {"date_from": today + timedelta(days=1)})) == []
    response = client.get(LOG, {"date_from": today, "date_to": today - timedelta(days=2)})
    assert seqs(response) == []
    assert "To: must not be before From" in response.content.decode()


def test_audit_log_pages_by_keyset(support_a, record_audit, tenant_a):
    record_audit(tenant_a, 60)
    client = login(support_a)
    first = client.get(LOG, {"action": "session."})
    assert seqs(first) == list(range(60, 10, -1))
    assert first.context["next_cursor"] == 11
    assert 'href="?action=session.&amp;cursor=11"' in first.content.decode()
    older = client.get(LOG, {"action": "session.", "cursor": "11"}, headers={"HX-Request": "true"})
    assert seqs(older) == list(range(10, 0, -1))
    body = older.content.decode()
    # The htmx answer is just the rows, appended in place of the "older" link.
    assert body.lstrip().startswith("<tr")
    assert "<table" not in body and "audit-more" not in body  # the last page


def test_audit_log_filter_via_htmx_returns_results_fragment(admin_a, record_audit, tenant_a):
    record_audit(tenant_a, 1)
    response = login(admin_a).get(LOG, {"actor": "sweep"}, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert "<html" not in body
    assert 'href="/t/acme/audit/export.csv?actor=sweep"' in body
    assert body.count('data-testid="audit-row"') == 1


@pytest.mark.parametrize("rows", [1, 20])
def test_audit_log_query_count_does_not_grow_with_rows(
    support_a, record_audit, tenant_a, django_assert_num_queries, rows
):
    record_audit(tenant_a, rows)
    client = login(support_a)
    with django_assert_num_queries(queries(8)):
        response = client.get(LOG)
    assert len(response.context["events"]) == rows


def test_audit_export_csv_is_streamed_and_filtered(admin_a, record_audit, tenant_a, monkeypatch):
    # Small chunks: the export must page through the keyset, each chunk in its own scope.
    monkeypatch.setattr(audit_views, "EXPORT_CHUNK", 2)
    record_audit(tenant_a, 5, after={"status": "closed", "note": "a,b"})
    record_audit(tenant_a, 1, action="approval.approved", target_type="approval")
    response = login(admin_a).get(LOG + "export.csv", {"action": "session."})
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="audit-acme.csv"'
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert lines[0] == ",".join(audit_views.EXPORT_FIELDS)
    assert len(lines) == 6
    with in_tenant(tenant_a):
        first = AuditEvent.objects.get(seq=1)
    assert lines[1].startswith(
        f"1,{first.created_at.isoformat()},system,system,sweep,session.closed,session,s-0,"
    )
    assert '"{""note"": ""a,b"", ""status"": ""closed""}",lease passed' in lines[1]
    assert lines[1].endswith(f",{first.prev_hash},{first.hash}")
    assert [line.split(",")[0] for line in lines[1:]] == ["1", "2", "3", "4", "5"]


def test_audit_export_jsonl(admin_a, record_audit, tenant_a, monkeypatch):
    monkeypatch.setattr(audit_views, "EXPORT_CHUNK", 2)
    record_audit(tenant_a, 3)
    response = login(admin_a).get(LOG + "export.jsonl", {"target_id": "s-1"})
    assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert len(rows) == 1
    with in_tenant(tenant_a):
        event = AuditEvent.objects.get(seq=2)
    assert rows[0] == {
        "seq": 2,
        "created_at": event.created_at.isoformat(),
        "actor_type": "system",
        "actor_id": "system",
        "actor_label": "sweep",
        "action": "session.closed",
        "target_type": "session",
        "target_id": "s-1",
        "before": {"status": "active"},
        "after": {"status": "closed"},
        "reason": "lease passed",
        "request_id": event.request_id,
        "ip": None,
        "prev_hash": event.prev_hash,
        "hash": event.hash,
    }


def test_audit_export_of_nothing_is_just_the_header(admin_a, tenant_a):
    response = login(admin_a).get(LOG + "export.csv")
    assert (
        b"".join(response.streaming_content).decode()
        == ",".join(audit_views.EXPORT_FIELDS) + "\r\n"
    )
    assert login(admin_a).get(LOG + "export.jsonl").getvalue() == b""


def test_audit_export_refuses_bad_format_and_filters(admin_a, tenant_a):
    client = login(admin_a)
    assert client.get(LOG + "export.xml").status_code == 400
    response = client.get(LOG + "export.csv", {"date_from": "yesterday"})
    assert response.status_code == 400
    assert b"Enter a valid date" in response.content


def test_verify_chain_reports_intact_chain(admin_a, record_audit, tenant_a):
    record_audit(tenant_a, 3)
    client = login(admin_a)
    response = client.post(LOG + "verify", headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert "Chain intact: 3 events verified" in response.content.decode()
    response = client.post(LOG + "verify", follow=True)
    assert response.redirect_chain == [(LOG, 302)]
    assert "Audit chain intact: 3 events verified." in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_verify_chain_reports_a_tampered_chain(admin_a, record_audit, tenant_a, tamper_audit):
    record_audit(tenant_a, 3)
    tamper_audit(tenant_a, 2, "nothing to see")
    response = login(admin_a).post(LOG + "verify", headers={"HX-Request": "true"})
    body = response.content.decode()
    assert 'data-testid="verify-broken"' in body
    assert "Chain broken at event <strong>#2</strong> (session.closed," in body


def test_verify_chain_needs_admin_post_and_csrf(support_a, operator_a, admin_a, csrf_client):
    for user in (support_a, operator_a):
        assert login(user).post(LOG + "verify").status_code == 403
    assert login(admin_a).get(LOG + "verify").status_code == 405
    assert csrf_client(admin_a).post(LOG + "verify").status_code == 403
    # Only admins see the button.
    assert b"verify-chain" not in login(operator_a).get(LOG).content
    assert b"verify-chain" in login(admin_a).get(LOG).content


def test_reading_the_audit_log_changes_nothing(admin_a, record_audit, tenant_a):
    record_audit(tenant_a, 2)
    client = login(admin_a)
    client.get(LOG)
    b"".join(client.get(LOG + "export.csv").streaming_content)
    with in_tenant(tenant_a):
        assert AuditEvent.objects.count() == 2


def test_audit_export_is_for_admins_only(support_a, operator_a, admin_a, record_audit, tenant_a):
    """The role matrix: the whole log names every person of the tenant (admins export it)."""
    record_audit(tenant_a, 1)
    for user in (support_a, operator_a):
        client = login(user)
        assert client.get(LOG + "export.csv").status_code == 403
        assert client.get(LOG + "export.jsonl").status_code == 403
        page = client.get(LOG).content.decode()
        assert 'data-testid="export-csv"' not in page
    assert 'data-testid="export-csv"' in login(admin_a).get(LOG).content.decode()
    assert login(admin_a).get(LOG + "export.csv").status_code == 200
