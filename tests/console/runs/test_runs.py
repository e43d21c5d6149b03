"""Runs list and run inspector."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from runs_app.store import RunStateStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, layout_queries

HX = {"HX-Request": "true"}


def run_ids(response) -> list[str]:
    return re.findall(
        r'data-testid="run-row"[^>]*>\s*<td class="mono"><a href="[^"]+">([^<]+)</a>',
        response.content.decode(),
    )


@pytest.fixture
def make_run(tenant_a):
    def make(run_id: str, *, status: str | None = None, **kw):
        deadline = kw.get("deadline_at")
        # A run created before its deadline (a deadline in the past is refused at creation).
        created = min(timezone.now(), deadline - timedelta(hours=1)) if deadline else None
        with in_tenant(tenant_a):
            store = RunStateStore(tenant_a, RUNTIME, clock=lambda: created or timezone.now())
            run = store.create(run_id=run_id, **kw)
            if status:
                run = store.compare_and_set(
                    run_id=run_id, expected_version=1, changes={"status": status}
                )
        return run

    return make


def test_list_filters_by_status_and_pages(make_run, support_a):
    for n in range(55):
        make_run(f"r-{n:02d}", status="running" if n % 2 else None)
    client = login(support_a)
    first = client.get("/t/acme/runs/?status=running")
    assert run_ids(first) == [f"r-{n:02d}" for n in range(53, 0, -2)]
    assert 'data-testid="next-page"' not in first.content.decode()
    page1 = client.get("/t/acme/runs/")
    assert run_ids(page1) == [f"r-{n:02d}" for n in range(54, 4, -1)]
    next_url = re.search(
        r'href="([^"]+)"[^>]*data-testid="next-page"', page1.content.decode()
    ).group(1)
    assert run_ids(client.get(next_url.replace("&amp;", "&"))) == [
        "r-04",
        "r-03",
        "r-02",
        "r-01",
        "r-00",
    ]


def test_list_empty_state_and_filter_by_session(world, make_run, support_a):
    client = login(support_a)
    assert run_ids(client.get(f"/t/acme/runs/?session_id={world.session_id}")) == [world.run_id]
    body = client.get("/t/acme/runs/?status=cancelled").content.decode()
    assert "No run matches these filters." in body


@pytest.mark.parametrize("rows", [1, 20])
def test_list_query_count(
    make_run, make_session, tenant_a, support_a, rows, django_assert_num_queries
):
    make_session("s-1")
    for n in range(rows):
        make_run(f"r-{n}", session_id="s-1")
    client = login(support_a)
    with django_assert_num_queries(
        layout_queries(client, tenant_a) + 1
    ):  # runs with session and task
        response = client.get("/t/acme/runs/")
    assert len(run_ids(response)) == rows


def test_inspector_shows_state_history_effects_and_resume_preview(world, tenant_a, support_a):
    with in_tenant(tenant_a):
        RunStateStore(tenant_a, RUNTIME).append_events(
            run_id=world.run_id,
            events=[{"type": "tool_call", "node_id": "n1", "payload": {"q": "<b>x</b>"}}],
        )
    body = login(support_a).get(f"/t/acme/runs/{world.run_id}/").content.decode()
    assert 'data-testid="run-status">Waiting Approval<' in body
    history = re.findall(r'data-testid="history-row">\s*<td>v(\d+)</td>', body)
    assert history == ["3", "2", "1"]
    assert body.count('data-testid="event-row"') == 1
    assert "&lt;b&gt;x&lt;/b&gt;" in body and "<b>x</b>" not in body
    assert body.count('data-testid="approval-row"') == 1
    assert body.count('data-testid="effect-row"') == 2
    preview = re.sub(
        r"\s+", " ", body[body.index('data-testid="resume-preview"') :].split("</p>")[0]
    )
    assert "<strong>skip 1</strong> committed effect" in preview
    assert "<strong>run 0 again</strong>" in preview
    assert "wait for 1 to be settled" in preview
    assert 'data-testid="settle-' not in body  # support cannot settle


def test_inspector_offers_settle_to_operators(world, operator_a):
    body = login(operator_a).get(f"/t/acme/runs/{world.run_id}/").content.decode()
    assert f'data-testid="settle-{world.unknown_effect_id}"' in body
    assert f'data-testid="settle-{world.committed_effect_id}"' not in body


def test_inspector_budget_against_deadline(make_run, tenant_a, support_a):
    make_run("r-late", deadline_at=timezone.now() - timedelta(minutes=1))
    make_run("r-soon", deadline_at=timezone.now() + timedelta(hours=1), status="running")
    with in_tenant(tenant_a):
        RunStateStore(tenant_a, RUNTIME).compare_and_set(
            run_id="r-soon",
            expected_version=2,
            changes={"token_used": 1234, "cost_used": "0.420000"},
        )
    client = login(support_a)
    late = client.get("/t/acme/runs/r-late/").content.decode()
    assert 'value="100" data-testid="deadline-meter"' in late
    assert "overdue" in late
    soon = client.get("/t/acme/runs/r-soon/").content.decode()
    budget = soon[soon.index('data-testid="budget"') :]
    assert "<dt>Tokens used</dt><dd>1234</dd>" in budget
    assert "<dt>Cost used</dt><dd>0.420000</dd>" in budget
    assert 'value="0" data-testid="deadline-meter"' in budget


def test_history_and_events_page_with_htmx(make_run, tenant_a, support_a):
    make_run("r-1", status="running")
    with in_tenant(tenant_a):
        store = RunStateStore(tenant_a, RUNTIME)
        for version in range(2, 62):
            store.compare_and_set(
                run_id="r-1", expected_version=version, changes={"turn_index": version}
            )
        store.append_events(
            run_id="r-1", events=[{"type": "step", "payload": {"n": n}} for n in range(60)]
        )
    client = login(support_a)
    body = client.get("/t/acme/runs/r-1/").content.decode()
    assert re.findall(r'data-testid="history-row">\s*<td>v(\d+)</td>', body) == [
        str(v) for v in range(62, 12, -1)
    ]
    assert 'href="/t/acme/runs/r-1/?before_version=13"' in body
    assert 'href="/t/acme/runs/r-1/?events_after=50"' in body
    older = client.get("/t/acme/runs/r-1/?before_version=13", headers=HX).content.decode()
    assert "<html" not in older
    assert re.findall(r'data-testid="history-row">\s*<td>v(\d+)</td>', older) == [
        str(v) for v in range(12, 0, -1)
    ]
    more = client.get("/t/acme/runs/r-1/?events_after=50", headers=HX).content.decode()
    assert re.findall(r'data-testid="event-row">\s*<td class="mono">(\d+)</td>', more) == [
        str(n) for n in range(51, 61)
    ]
    # Without htmx the same links are whole pages.
    assert "<html" in client.get("/t/acme/runs/r-1/?events_after=50").content.decode()


@pytest.mark.parametrize("rows", [1, 20])
def test_inspector_query_count(make_run, tenant_a, operator_a, rows, django_assert_num_queries):
    from approvals_app.store import ApprovalStore
    from effects_app.store import EffectStore

    make_run("r-1", status="running")
    with in_tenant(tenant_a):
        runs, effects = RunStateStore(tenant_a, RUNTIME), EffectStore(tenant_a, RUNTIME)
        version = 2
        for n in range(rows):
            runs.append_events(run_id="r-1", events=[{"type": "step", "payload": {"n": n}}])
            runs.start_node(run_id="r-1", node_id=f"n{n}")
            effects.record(run_id="r-1", idempotency_key=f"k{n}", tool_name="t", request={"n": n})
            run = runs.compare_and_set(
                run_id="r-1", expected_version=version, changes={"turn_index": n + 1}
            )
            version = run.version
            approval = ApprovalStore(tenant_a, RUNTIME).request(
                run_id="r-1",
                expected_version=version,
                tool_name="t",
                arguments={"n": n},
                risk="low",
            )
            ApprovalStore(tenant_a, RUNTIME).cancel(approval_id=approval.approval_id)
            version = runs.get("r-1").version
    client = login(operator_a)
    # The run, then each store read loads the run again before its rows:
    # history, events, effects (resume preview), nodes; and the approvals; and the
    # last run control (its reason).
    with django_assert_num_queries(layout_queries(client, tenant_a) + 11):
        body = client.get("/t/acme/runs/r-1/").content.decode()
    assert body.count('data-testid="effect-row"') == rows
    assert body.count('data-testid="node-row"') == rows
    assert body.count('data-testid="approval-row"') == rows


def test_unknown_or_other_tenants_run_is_404(world, support_a, admin_b):
    assert login(support_a).get("/t/acme/runs/nope/").status_code == 404
    assert login(admin_b).get(f"/t/globex/runs/{world.run_id}/").status_code == 404
    assert login(admin_b).get(f"/t/acme/runs/{world.run_id}/").status_code == 404
    assert login(admin_b).get("/t/acme/runs/").status_code == 404
