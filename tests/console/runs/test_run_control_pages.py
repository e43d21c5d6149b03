"""Run control pages: one run's cancel/suspend/resume, and bulk by filter with a count check."""

import pytest

from audit_app.models import AuditEvent
from runs_app.models import Run
from tenancy_app.scoping import in_tenant
from tests.actions.test_run_control import make_run
from tests.conftest import login
from tests.console.conftest import csrf_client, layout_queries, message_texts, request_queries


def status(tenant, run_id: str) -> str:
    with in_tenant(tenant):
        return Run.objects.get(run_id=run_id).status


def audit_count(tenant) -> int:
    with in_tenant(tenant):
        return AuditEvent.objects.filter(action__startswith="run.").count()


def test_operator_suspends_then_resumes_from_the_run_page(tenant_a, operator_a):
    run = make_run(tenant_a)
    client = login(operator_a)
    page = client.get("/t/acme/runs/r-1/").content.decode()
    assert 'data-testid="control-suspend-open"' in page
    assert 'data-testid="control-resume-open"' not in page
    response = client.post(
        "/t/acme/runs/r-1/suspend", {"reason": "too many refunds", "expected_version": run.version}
    )
    assert response.status_code == 302 and response["Location"] == "/t/acme/runs/r-1/"
    assert status(tenant_a, "r-1") == "suspended"
    page = client.get("/t/acme/runs/r-1/")
    assert message_texts(page) == ["Suspended run r-1."]
    assert 'data-testid="control-resume-open"' in page.content.decode()
    client.post("/t/acme/runs/r-1/resume", {"reason": "ok", "expected_version": run.version + 1})
    assert status(tenant_a, "r-1") == "running"


def test_a_stale_page_changes_nothing_and_says_why(tenant_a, operator_a):
    run = make_run(tenant_a)
    client = login(operator_a)
    client.post("/t/acme/runs/r-1/cancel", {"reason": "x", "expected_version": run.version - 1})
    assert status(tenant_a, "r-1") == "running"
    assert message_texts(client.get("/t/acme/runs/r-1/")) == [
        f"Not done: the run moved from version {run.version - 1} to {run.version} (running) "
        "since the page was shown. Look again."
    ]


def test_reason_is_required(tenant_a, operator_a):
    run = make_run(tenant_a)
    response = login(operator_a).post(
        "/t/acme/runs/r-1/cancel", {"reason": " ", "expected_version": run.version}
    )
    assert response.status_code == 422
    assert status(tenant_a, "r-1") == "running"


def test_support_may_not_control_and_sees_no_controls(tenant_a, support_a):
    run = make_run(tenant_a)
    client = login(support_a)
    assert 'data-testid="run-control"' not in client.get("/t/acme/runs/r-1/").content.decode()
    assert client.get("/t/acme/runs/r-1/cancel").status_code == 403
    response = client.post(
        "/t/acme/runs/r-1/cancel", {"reason": "x", "expected_version": run.version}
    )
    assert response.status_code == 403
    assert client.get("/t/acme/runs/bulk?action=cancel").status_code == 403
    assert status(tenant_a, "r-1") == "running"


def test_another_tenants_run_is_404(tenant_a, admin_b):
    run = make_run(tenant_a)
    client = login(admin_b)
    assert client.get("/t/globex/runs/r-1/cancel").status_code == 404
    response = client.post(
        "/t/globex/runs/r-1/cancel", {"reason": "x", "expected_version": run.version}
    )
    assert response.status_code == 404
    assert status(tenant_a, "r-1") == "running"


def test_control_post_needs_csrf_and_get_changes_nothing(tenant_a, operator_a):
    run = make_run(tenant_a)
    client = csrf_client(operator_a)
    assert client.get("/t/acme/runs/r-1/cancel?reason=x&expected_version=3").status_code == 200
    response = client.post(
        "/t/acme/runs/r-1/cancel", {"reason": "x", "expected_version": run.version}
    )
    assert response.status_code == 403
    assert status(tenant_a, "r-1") == "running"
    assert audit_count(tenant_a) == 0
    assert login(operator_a).get("/t/acme/runs/r-1/nonsense").status_code == 404


def test_control_panel_query_count(tenant_a, operator_a, django_assert_num_queries):
    make_run(tenant_a)
    client = login(operator_a)
    with django_assert_num_queries(layout_queries(client, tenant_a) + 1):  # the run
        client.get("/t/acme/runs/r-1/suspend")
    with django_assert_num_queries(request_queries() + 1):
        body = client.get("/t/acme/runs/r-1/suspend", headers={"HX-Request": "true"})
    assert "<html" not in body.content.decode()


# --- bulk ----------------------------------------------------------------------


def test_bulk_cancel_by_filter_refuses_a_changed_count(tenant_a, operator_a):
    for n in range(3):
        make_run(tenant_a, run_id=f"s-{n}", status="suspended")
    make_run(tenant_a, run_id="keep", status="running")
    client = login(operator_a)
    page = client.get("/t/acme/runs/bulk?action=cancel&status=suspended").content.decode()
    assert 'data-testid="bulk-count">3<' in page
    make_run(tenant_a, run_id="s-late", status="suspended")
    refused = client.post(
        "/t/acme/runs/bulk",
        {"action": "cancel", "status": "suspended", "expected_count": 3, "reason": "cleanup"},
    )
    assert refused.status_code == 409
    assert 'data-testid="bulk-count">4<' in refused.content.decode()
    assert audit_count(tenant_a) == 0
    done = client.post(
        "/t/acme/runs/bulk",
        {"action": "cancel", "status": "suspended", "expected_count": 4, "reason": "cleanup"},
    )
    assert done.status_code == 302
    assert done["Location"] == "/t/acme/runs/?status=suspended"
    assert [status(tenant_a, r) for r in ("s-0", "s-1", "s-2", "s-late", "keep")] == [
        "cancelled",
        "cancelled",
        "cancelled",
        "cancelled",
        "running",
    ]
    assert audit_count(tenant_a) == 4  # one event per run
    assert message_texts(client.get(done["Location"])) == ["Cancelled 4 runs."]


def test_bulk_resume_only_touches_suspended_runs(tenant_a, operator_a):
    make_run(tenant_a, run_id="a", status="suspended")
    make_run(tenant_a, run_id="b", status="running")
    client = login(operator_a)
    client.post("/t/acme/runs/bulk", {"action": "resume", "expected_count": 1, "reason": "go"})
    assert (status(tenant_a, "a"), status(tenant_a, "b")) == ("running", "running")


def test_bulk_is_tenant_scoped(tenant_a, tenant_b, admin_b):
    make_run(tenant_a, run_id="a", status="suspended")
    client = login(admin_b)
    page = client.get("/t/globex/runs/bulk?action=cancel").content.decode()
    assert 'data-testid="bulk-count">0<' in page
    client.post("/t/globex/runs/bulk", {"action": "cancel", "expected_count": 0, "reason": "x"})
    assert status(tenant_a, "a") == "suspended"


def test_bulk_bad_action_is_400(tenant_a, operator_a):
    assert login(operator_a).get("/t/acme/runs/bulk?action=delete").status_code == 400


@pytest.mark.parametrize("rows", [1, 15])
def test_bulk_confirm_query_count(tenant_a, operator_a, rows, django_assert_num_queries):
    for n in range(rows):
        make_run(tenant_a, run_id=f"r-{n}", status="suspended")
    client = login(operator_a)
    with django_assert_num_queries(layout_queries(client, tenant_a) + 1):  # one COUNT
        body = client.get("/t/acme/runs/bulk?action=resume").content.decode()
    assert f'data-testid="bulk-count">{rows}<' in body


def _resumed_long_ago(tenant, run_id="r-1", minutes=15):
    """A run suspended and resumed `minutes` ago by the store's clock, claimed by nobody."""
    from datetime import timedelta

    from django.utils import timezone

    from actions_app.runs import RunActions
    from stateroom.actor import Actor

    make_run(tenant, run_id=run_id)
    then = timezone.now() - timedelta(minutes=minutes)
    with in_tenant(tenant):
        people = RunActions(tenant, Actor("user", "9", "otto"), clock=lambda: then)
        people.suspend(run_id=run_id, reason="card declined")
        return people.resume(run_id=run_id, reason="customer <b>fixed</b> the card")


def test_the_run_page_says_why_and_that_nobody_holds_the_run(tenant_a, support_a):
    resumed = _resumed_long_ago(tenant_a)
    body = login(support_a).get("/t/acme/runs/r-1/").content.decode()
    since = resumed.updated_at.strftime("%Y-%m-%d %H:%M:%S")
    assert 'data-testid="unclaimed-warning"' in body
    assert "waiting for a worker since <time datetime=" in body
    assert f">{since}</time>" in body
    last = body[body.index('data-testid="last-control"') :].split("</dd>")[0]
    assert "Resumed by otto at" in last
    assert "<q>customer &lt;b&gt;fixed&lt;/b&gt; the card</q>" in last  # escaped
    reasons = [
        r.split("</q>")[0] for r in body.split('data-testid="history-reason">Reason: <q>')[1:]
    ]
    assert reasons == ["customer &lt;b&gt;fixed&lt;/b&gt; the card", "card declined"]


def test_a_run_held_by_a_worker_or_just_resumed_shows_no_warning(tenant_a, support_a):
    from runs_app.store import RunStateStore
    from stateroom.actor import Actor

    run = make_run(tenant_a, run_id="r-held")
    with in_tenant(tenant_a):
        RunStateStore(tenant_a, Actor.system("w")).claim(
            run_id="r-held", worker="w1", expected_version=run.version
        )
    make_run(tenant_a, run_id="r-fresh")
    client = login(support_a)
    for run_id in ("r-held", "r-fresh"):
        body = client.get(f"/t/acme/runs/{run_id}/").content.decode()
        assert 'data-testid="unclaimed-warning"' not in body
        assert 'data-testid="last-control"' not in body


def test_the_runs_list_filters_runs_waiting_for_a_worker(tenant_a, support_a):
    from tests.console.runs.test_runs import run_ids

    _resumed_long_ago(tenant_a, "r-idle")
    make_run(tenant_a, run_id="r-fresh")
    make_run(tenant_a, run_id="r-paused", status="suspended")
    client = login(support_a)
    everything = client.get("/t/acme/runs/")
    assert run_ids(everything) == ["r-paused", "r-fresh", "r-idle"]
    assert everything.content.decode().count('data-testid="unclaimed-badge"') == 1
    waiting = client.get("/t/acme/runs/?unclaimed=1")
    assert run_ids(waiting) == ["r-idle"]
    assert 'name="unclaimed" value="1" checked' in waiting.content.decode()
    assert run_ids(client.get("/t/acme/runs/?unclaimed=1&status=suspended")) == []


def test_other_tenants_do_not_see_the_waiting_run(tenant_a, admin_b):
    from tests.console.runs.test_runs import run_ids

    _resumed_long_ago(tenant_a, "r-idle")
    client = login(admin_b)
    assert run_ids(client.get("/t/globex/runs/?unclaimed=1")) == []
    assert client.get("/t/globex/runs/r-idle/").status_code == 404


@pytest.mark.parametrize("rows", [1, 20])
def test_waiting_filter_query_count(tenant_a, support_a, rows, django_assert_num_queries):
    for n in range(rows):
        _resumed_long_ago(tenant_a, f"r-{n}")
    client = login(support_a)
    with django_assert_num_queries(layout_queries(client, tenant_a) + 1):  # the runs
        response = client.get("/t/acme/runs/?unclaimed=1")
    assert response.content.decode().count('data-testid="unclaimed-badge"') == rows


def test_bulk_suspend_of_every_run_nobody_holds(tenant_a, operator_a):
    _resumed_long_ago(tenant_a, "r-idle")
    make_run(tenant_a, run_id="r-fresh")
    client = login(operator_a)
    listed = client.get("/t/acme/runs/?unclaimed=1").content.decode()
    assert 'href="/t/acme/runs/bulk?action=suspend&amp;unclaimed=1"' in listed
    page = client.get("/t/acme/runs/bulk?action=suspend&unclaimed=1").content.decode()
    assert 'data-testid="bulk-count">1<' in page
    done = client.post(
        "/t/acme/runs/bulk",
        {"action": "suspend", "unclaimed": "True", "expected_count": 1, "reason": "no worker"},
    )
    assert done.status_code == 302
    assert (status(tenant_a, "r-idle"), status(tenant_a, "r-fresh")) == ("suspended", "running")
