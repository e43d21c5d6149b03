"""Tasks list, task inspector, checkpoint viewer and checkpoint diff."""

import re

import pytest

from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, layout_queries


def task_ids(response) -> list[str]:
    return re.findall(
        r'data-testid="task-row"[^>]*>\s*<td class="mono"><a href="[^"]+">([^<]+)</a>',
        response.content.decode(),
    )


@pytest.fixture
def make_task(tenant_a):
    def make(task_id: str, **kw):
        with in_tenant(tenant_a):
            return TaskStateStore(tenant_a, RUNTIME).create(
                task_id=task_id, objective=kw.pop("objective", "Do it"), **kw
            )

    return make


def test_list_filters_by_status(make_task, tenant_a, support_a):
    make_task("t-1")
    make_task("t-2")
    with in_tenant(tenant_a):
        TaskStateStore(tenant_a, RUNTIME).save(
            task_id="t-2", expected_version=1, status="completed"
        )
    client = login(support_a)
    assert task_ids(client.get("/t/acme/tasks/")) == ["t-2", "t-1"]
    assert task_ids(client.get("/t/acme/tasks/?status=completed")) == ["t-2"]
    assert (
        "No task matches this filter."
        in client.get("/t/acme/tasks/?status=failed").content.decode()
    )


@pytest.mark.parametrize("rows", [1, 20])
def test_list_query_count(make_task, tenant_a, support_a, rows, django_assert_num_queries):
    for n in range(rows):
        make_task(f"t-{n}")
    client = login(support_a)
    with django_assert_num_queries(layout_queries(client, tenant_a) + 1):
        response = client.get("/t/acme/tasks/")
    assert len(task_ids(response)) == rows


def test_inspector_shows_objective_progress_checkpoints_and_effects(world, tenant_a, support_a):
    with in_tenant(tenant_a):
        TaskStateStore(tenant_a, RUNTIME).save(
            task_id=world.task_id,
            expected_version=1,
            completed_nodes=["lookup", "verify"],
            pending_nodes=["refund"],
            artifact_refs=["s3://bucket/receipt-42.pdf"],
            pending_approvals=[world.approval_id],
        )
    body = login(support_a).get(f"/t/acme/tasks/{world.task_id}/").content.decode()
    assert 'data-testid="objective">Refund order 42</p>' in body
    assert "<li>no more than $50</li>" in body
    assert "2 of 3 nodes completed" in body
    assert '<progress id="nodes-bar" max="3" value="2" data-testid="nodes-bar">' in body
    assert re.findall(r'data-testid="checkpoint-row">\s*<td>(\d+)</td>', body) == ["2", "1"]
    assert body.count('data-testid="diff-previous"') == 1
    assert f"?a={world.checkpoint_ids[0]}&amp;b={world.checkpoint_ids[1]}" in body
    assert "<li>s3://bucket/receipt-42.pdf</li>" in body
    assert (
        f'<li><a href="/t/acme/approvals/{world.approval_id}/">{world.approval_id}</a></li>' in body
    )
    assert body.count('data-testid="task-effect"') == 2
    assert body.count('data-testid="task-run"') == 1


@pytest.mark.parametrize("rows", [1, 20])
def test_inspector_query_count(make_task, tenant_a, support_a, rows, django_assert_num_queries):
    from effects_app.store import EffectStore
    from runs_app.store import RunStateStore

    make_task("t-1")
    with in_tenant(tenant_a):
        for n in range(rows):
            TaskStateStore(tenant_a, RUNTIME).append_checkpoint(
                task_id="t-1", schema_version=1, state={"n": n}
            )
            RunStateStore(tenant_a, RUNTIME).create(run_id=f"r-{n}", task_id="t-1")
            EffectStore(tenant_a, RUNTIME).record(
                run_id=f"r-{n}", idempotency_key=f"k-{n}", tool_name="t", request={}
            )
    client = login(support_a)
    # The task, checkpoints (task + rows), effects, runs, the runs' node finish order,
    # LangGraph checkpoints (none here).
    with django_assert_num_queries(layout_queries(client, tenant_a) + 7):
        body = client.get("/t/acme/tasks/t-1/").content.decode()
    assert body.count('data-testid="checkpoint-row"') == rows
    assert body.count('data-testid="task-effect"') == rows
    assert body.count('data-testid="task-run"') == rows


def test_checkpoint_list_pages_with_htmx(make_task, tenant_a, support_a):
    make_task("t-1")
    with in_tenant(tenant_a):
        for n in range(55):
            TaskStateStore(tenant_a, RUNTIME).append_checkpoint(
                task_id="t-1", schema_version=1, state={"n": n}
            )
    client = login(support_a)
    body = client.get("/t/acme/tasks/t-1/").content.decode()
    assert re.findall(r'data-testid="checkpoint-row">\s*<td>(\d+)</td>', body) == [
        str(n) for n in range(55, 5, -1)
    ]
    assert (
        body.count('data-testid="diff-previous"') == 50
    )  # the 50th row's predecessor was read too
    older = client.get(
        "/t/acme/tasks/t-1/?before_seq=6", headers={"HX-Request": "true"}
    ).content.decode()
    assert "<html" not in older
    assert re.findall(r'data-testid="checkpoint-row">\s*<td>(\d+)</td>', older) == [
        "5",
        "4",
        "3",
        "2",
        "1",
    ]


def test_checkpoint_viewer_highlights_escaped_json(make_task, tenant_a, support_a):
    make_task("t-1")
    with in_tenant(tenant_a):
        cp = TaskStateStore(tenant_a, RUNTIME).append_checkpoint(
            task_id="t-1",
            schema_version=2,
            state={"note": "<script>x</script>", "n": 1},
            node_id="n1",
        )
    body = (
        login(support_a).get(f"/t/acme/tasks/t-1/checkpoints/{cp.checkpoint_id}/").content.decode()
    )
    state = body[body.index('data-testid="checkpoint-state"') :].split("</pre>")[0]
    assert '<span class="nt">"note"</span>' in state
    assert "&lt;script&gt;x&lt;/script&gt;" in state and "<script>x" not in state
    assert "<dt>Schema version</dt><dd>v2</dd>" in body
    assert 'data-testid="diff-previous"' not in body


def test_diff_between_two_checkpoints(world, support_a):
    a, b = world.checkpoint_ids
    body = login(support_a).get(f"/t/acme/tasks/{world.task_id}/diff?a={b}&b={a}").content.decode()
    assert "<h1>Checkpoint #1 → #2</h1>" in body  # ordered oldest first whatever the query says
    rows = re.findall(r'<tr class="c-(\w+)"><td class="mono">([^<]+)</td>', body)
    assert rows == [("added", "done[0]"), ("changed", "step")]
    lines = re.findall(r'<span class="d-(\w+)">([^<]*)</span>', body)
    assert ("del", "-  &quot;done&quot;: [],") in lines
    assert ("add", "+  &quot;done&quot;: [") in lines
    assert ("add", "+    &quot;lookup&quot;") in lines
    assert ("del", "-  &quot;step&quot;: 1") in lines
    assert ("add", "+  &quot;step&quot;: 2") in lines


def test_diff_of_identical_states(make_task, tenant_a, support_a):
    make_task("t-1")
    with in_tenant(tenant_a):
        store = TaskStateStore(tenant_a, RUNTIME)
        a = store.append_checkpoint(task_id="t-1", schema_version=1, state={"x": 1})
        b = store.append_checkpoint(task_id="t-1", schema_version=1, state={"x": 1})
    body = (
        login(support_a)
        .get(f"/t/acme/tasks/t-1/diff?a={a.checkpoint_id}&b={b.checkpoint_id}")
        .content.decode()
    )
    assert 'data-testid="diff-same"' in body
    assert 'data-testid="diff-lines"' not in body


def test_unknown_checkpoint_or_task_is_404(world, support_a):
    client = login(support_a)
    assert client.get("/t/acme/tasks/nope/").status_code == 404
    assert client.get(f"/t/acme/tasks/{world.task_id}/checkpoints/nope/").status_code == 404
    assert (
        client.get(
            f"/t/acme/tasks/{world.task_id}/diff?a=nope&b={world.checkpoint_ids[0]}"
        ).status_code
        == 404
    )
    assert client.get(f"/t/acme/tasks/{world.task_id}/diff").status_code == 404


def test_other_tenants_task_pages_are_404(world, admin_b):
    client = login(admin_b)
    a, b = world.checkpoint_ids
    for path in (
        f"tasks/{world.task_id}/",
        f"tasks/{world.task_id}/checkpoints/{a}/",
        f"tasks/{world.task_id}/diff?a={a}&b={b}",
    ):
        assert client.get(f"/t/globex/{path}").status_code == 404
        assert client.get(f"/t/acme/{path}").status_code == 404


def _task_with_runs(tenant, task_id: str, *, status: str, nodes: list[str], run_error=None):
    """A task whose run did `nodes` in that order (not alphabetical), then ended `status`."""
    from runs_app.store import RunStateStore
    from tasks_app.store import TaskStateStore

    with in_tenant(tenant):
        tasks, runs = TaskStateStore(tenant, RUNTIME), RunStateStore(tenant, RUNTIME)
        tasks.create(task_id=task_id, objective="Migrate")
        run = runs.create(run_id=f"{task_id}-run", task_id=task_id)
        run = runs.compare_and_set(
            run_id=run.run_id, expected_version=1, changes={"status": "running"}
        )
        for node in nodes:
            runs.start_node(run_id=run.run_id, node_id=node)
            runs.finish_node(run_id=run.run_id, node_id=node, status="succeeded")
        if run_error is not None:
            runs.compare_and_set(
                run_id=run.run_id,
                expected_version=run.version,
                changes={"status": "failed", "error": run_error},
            )
        task = tasks.load(task_id)
        tasks.save(
            task_id=task_id, expected_version=task.version, completed_nodes=nodes, status=status
        )


def test_failed_task_says_why_and_lists_nodes_in_the_order_done(tenant_a, support_a):
    _task_with_runs(
        tenant_a,
        "t-f",
        status="failed",
        nodes=["zeta", "alpha", "mid"],
        run_error={"code": "tests_failed", "message": "3 tests failed after the patch"},
    )
    body = login(support_a).get("/t/acme/tasks/t-f/").content.decode()
    assert 'data-testid="nodes-bar"' not in body  # no full bar for a failure
    assert "<strong>Failed</strong> after 3 of 3 nodes: 3 tests failed after the patch" in body
    nodes = body.split('data-testid="completed-nodes">', 1)[1].split("</ol>", 1)[0]
    assert re.findall(r"<li>([^<]+)</li>", nodes) == ["zeta", "alpha", "mid"]


def test_waiting_task_says_what_it_waits_for(tenant_a, support_a):
    from actions_app.runs import RunActions
    from stateroom.actor import Actor

    _task_with_runs(tenant_a, "t-w", status="waiting", nodes=["a"])
    with in_tenant(tenant_a):
        RunActions(tenant_a, Actor.system("ops")).suspend(run_id="t-w-run", reason="pause")
    body = login(support_a).get("/t/acme/tasks/t-w/").content.decode()
    waits = body.split('data-testid="task-waits-for">', 1)[1].split("</div>", 1)[0]
    assert "a person to resume run" in waits and ">t-w-run</a>" in waits


def test_a_waiting_task_does_not_offer_an_approval_that_can_no_longer_be_decided(
    tenant_a, support_a, tenant_b, admin_b, django_assert_num_queries
):
    """The runtime's state still lists an approval that expired (no sweep yet): the page
    says it can no longer be decided, read at the approvals store's clock."""
    from datetime import timedelta

    from django.utils import timezone

    from approvals_app.store import ApprovalStore
    from runs_app.store import RunStateStore

    asked = timezone.now() - timedelta(hours=1)
    with in_tenant(tenant_a):
        runs = RunStateStore(tenant_a, RUNTIME)
        for run_id, approval_id, clock, ttl in (
            ("r-live", "apr-live", timezone.now, timedelta(hours=1)),
            ("r-late", "apr-late", lambda: asked, timedelta(minutes=1)),
        ):
            run = runs.create(run_id=run_id)
            run = runs.compare_and_set(
                run_id=run_id, expected_version=run.version, changes={"status": "running"}
            )
            ApprovalStore(tenant_a, RUNTIME, clock=clock).request(
                run_id=run_id,
                expected_version=run.version,
                approval_id=approval_id,
                tool_name="send_refund",
                arguments={"amount": 5},
                risk="high",
                expires_at=clock() + ttl,
            )
        tasks = TaskStateStore(tenant_a, RUNTIME)
        task = tasks.create(task_id="t-a", objective="Refund")
        tasks.save(
            task_id="t-a",
            expected_version=task.version,
            status="waiting",
            pending_approvals=["apr-live", "apr-late"],
        )
    client = login(support_a)
    # As for any task (test_inspector_query_count: 7), and the named approvals' statuses.
    with django_assert_num_queries(layout_queries(client, tenant_a) + 8):
        body = client.get("/t/acme/tasks/t-a/").content.decode()
    waits = body.split('data-testid="task-waits-for">', 1)[1].split("</div>", 1)[0]
    live, late = waits.split("</li>")[:2]
    assert "a decision on approval" in live and ">apr-live</a>" in live
    assert "a decision" not in late and ">apr-late</a>" in late
    assert 'data-testid="waits-approval-status">expired<' in late
    assert login(admin_b).get("/t/acme/tasks/t-a/").status_code == 404
