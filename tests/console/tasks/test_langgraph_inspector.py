"""The task inspector on a LangGraph thread: checkpoints with parents, one checkpoint, a diff."""

from __future__ import annotations

import re

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Interrupt

from tasks_app.langgraph_store import Blob, GraphThreadStore, Value, Write
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, layout_queries

SERDE = JsonPlusSerializer()
REQUEST = [
    {
        "action_request": {
            "action": "issue_refund",
            "args": {"order_id": "A-1", "amount_cents": 1200},
        },
        "config": {
            "allow_accept": True,
            "allow_edit": True,
            "allow_respond": False,
            "allow_ignore": True,
        },
        "description": "Refund 1200 cents on order A-1?",
    }
]


def _checkpoint(checkpoint_id: str, versions: dict) -> dict:
    return {
        "v": 4,
        "id": checkpoint_id,
        "ts": "2026-11-30T10:00:00+00:00",
        "channel_versions": versions,
        "versions_seen": {"review": dict(versions)},
        "updated_channels": sorted(versions),
    }


def msgpack(value) -> Value:
    kind, data = SERDE.dumps_typed(value)
    return Value(kind, data=data)


def make_thread(tenant, thread_id: str = "order-A-1", extra: int = 0) -> list[str]:
    """Three root checkpoints (the last one interrupted), one subgraph checkpoint, and `extra` more."""
    with in_tenant(tenant):
        TaskStateStore(tenant, RUNTIME).create(task_id=thread_id, objective="LangGraph thread")
        store = GraphThreadStore(tenant, RUNTIME)
        ids, parent = [], ""
        states = [{"amount_cents": 1200}, {"amount_cents": 1200, "decision": None}]
        states += [{"amount_cents": 800, "decision": "approved"}] * (1 + extra)
        for n, state in enumerate(states, start=1):
            checkpoint_id = f"1f0-{n:04d}"
            store.put(
                thread_id=thread_id,
                checkpoint_ns="",
                checkpoint=_checkpoint(checkpoint_id, {"state": n, "__start__": 1}),
                metadata={
                    "source": "input" if n == 1 else "loop",
                    "step": n - 2,
                    "stateroom_run_id": "refund-1",
                },
                parent_checkpoint_id=parent,
                blobs=[
                    Blob("state", n, Value("json", value=state)),
                    Blob("__start__", 1, msgpack({"order_id": "A-1"})),
                ],
            )
            ids.append(checkpoint_id)
            parent = checkpoint_id
        store.put_writes(
            thread_id=thread_id,
            checkpoint_ns="",
            checkpoint_id=ids[1],
            graph_task_id="task-review",
            writes=[Write(-3, "__interrupt__", msgpack([Interrupt(value=REQUEST, id="int-1")]))],
        )
        store.put(
            thread_id=thread_id,
            checkpoint_ns="review:task-review",
            checkpoint=_checkpoint("1f0-9000", {}),
            metadata={"source": "loop", "step": 0},
        )
    return ids


def graph_rows(body: str) -> list[tuple[str, str]]:
    """(checkpoint id, parent id or —) of each row of the LangGraph section."""
    return re.findall(
        r'data-testid="graph-row" id="lg-([^"]+)">.*?data-testid="graph-parent">(?:<a [^>]+>)?([^<]+)',
        body,
        re.S,
    )


def test_inspector_lists_the_threads_checkpoints_with_their_parents(tenant_a, support_a):
    ids = make_thread(tenant_a)
    body = login(support_a).get("/t/acme/tasks/order-A-1/").content.decode()
    assert 'data-testid="langgraph-thread"' in body
    assert graph_rows(body) == [
        ("1f0-9000", "—"),
        (ids[2], ids[1]),
        (ids[1], ids[0]),
        (ids[0], "—"),
    ]
    assert body.count('data-testid="graph-interrupt"') == 1
    assert f"?ns=&amp;a={ids[1]}&amp;b={ids[2]}" in body  # diff with parent
    # The diff form offers the root namespace's checkpoints only.
    form = body.split('data-testid="graph-diff-form"')[1].split("</form>")[0]
    assert re.findall(r'<option value="([^"]+)"', form) == [*reversed(ids)] * 2


def test_a_plain_task_has_no_langgraph_section(world, support_a):
    body = login(support_a).get(f"/t/acme/tasks/{world.task_id}/").content.decode()
    assert "langgraph-thread" not in body


def test_checkpoint_page_shows_values_parent_and_the_interrupt_request(tenant_a, support_a):
    ids = make_thread(tenant_a)
    client = login(support_a)
    body = client.get(f"/t/acme/tasks/order-A-1/langgraph/{ids[1]}/?ns=").content.decode()
    assert (
        f'data-testid="graph-parent"><a href="/t/acme/tasks/order-A-1/langgraph/{ids[0]}/?ns=">'
        in body
    )
    interrupts = body.split('data-testid="graph-interrupts"')[1].split("</section>")[0]
    # The msgpack write, unpacked as data: the Agent Inbox request the graph asked.
    for text in ("langgraph.types.Interrupt", "issue_refund", "Refund 1200 cents on order A-1?"):
        assert text in re.sub(r"<[^>]+>", "", interrupts).replace("&quot;", '"')
    values = re.sub(
        r"<[^>]+>", "", body.split('data-testid="graph-values"')[1].split("</table>")[0]
    )
    assert '"amount_cents": 1200' in values and '"order_id": "A-1"' in values
    assert 'href="/t/acme/runs/refund-1/"' in body


def test_diff_between_two_checkpoints(tenant_a, support_a):
    ids = make_thread(tenant_a)
    body = (
        login(support_a)
        .get(f"/t/acme/tasks/order-A-1/langgraph/diff?ns=&a={ids[2]}&b={ids[1]}")
        .content.decode()
    )
    changes = re.findall(
        r'<tr class="c-(\w+)"><td class="mono">([^<]+)</td>',
        body.split('data-testid="diff-changes"')[1],
    )
    assert ("changed", "channel_values.state.amount_cents") in changes
    assert ("added", "channel_values.state.decision") not in changes  # None -> "approved" changed
    assert ("changed", "channel_values.state.decision") in changes
    assert ("changed", "channel_versions.state") in changes
    assert ("changed", "metadata.step") in changes
    assert ("changed", "channel_values.__start__") not in [(k, p[:25]) for k, p in changes]


@pytest.mark.parametrize("extra", [0, 60])
def test_inspector_query_count(tenant_a, support_a, extra, django_assert_num_queries):
    make_thread(tenant_a, extra=extra)
    client = login(support_a)
    # Task, checkpoints, effects, runs, node finish order (as a plain task) + the
    # LangGraph history.
    with django_assert_num_queries(layout_queries(client, tenant_a) + 7):
        body = client.get("/t/acme/tasks/order-A-1/").content.decode()
    assert len(graph_rows(body)) == min(4 + extra, 50)
    assert ('data-testid="older-graph-checkpoints"' in body) == (extra > 0)


def test_checkpoint_and_diff_page_query_counts(tenant_a, support_a, django_assert_num_queries):
    ids = make_thread(tenant_a)
    client = login(support_a)
    with django_assert_num_queries(layout_queries(client, tenant_a) + 2):  # task, checkpoint
        assert client.get(f"/t/acme/tasks/order-A-1/langgraph/{ids[1]}/?ns=").status_code == 200
    with django_assert_num_queries(layout_queries(client, tenant_a) + 3):  # task, two checkpoints
        url = f"/t/acme/tasks/order-A-1/langgraph/diff?ns=&a={ids[0]}&b={ids[1]}"
        assert client.get(url).status_code == 200


def test_older_checkpoints_page_in_with_htmx(tenant_a, support_a):
    make_thread(tenant_a, extra=60)
    client = login(support_a)
    body = client.get("/t/acme/tasks/order-A-1/").content.decode()
    older = re.search(r'hx-get="[^"]*\?graph_before=(\d+)"', body).group(1)
    fragment = client.get(
        f"/t/acme/tasks/order-A-1/?graph_before={older}", headers={"HX-Request": "true"}
    ).content.decode()
    assert "<html" not in fragment
    assert len(graph_rows(fragment)) == 64 - 50


def test_other_tenants_and_unknown_checkpoints_are_404(tenant_a, admin_b, support_a):
    ids = make_thread(tenant_a)
    other = login(admin_b)
    for url in (
        "/t/acme/tasks/order-A-1/",
        f"/t/acme/tasks/order-A-1/langgraph/{ids[0]}/?ns=",
        f"/t/acme/tasks/order-A-1/langgraph/diff?ns=&a={ids[0]}&b={ids[1]}",
        f"/t/globex/tasks/order-A-1/langgraph/{ids[0]}/?ns=",
        f"/t/globex/tasks/order-A-1/langgraph/diff?ns=&a={ids[0]}&b={ids[1]}",
    ):
        assert other.get(url).status_code == 404, url
    own = login(support_a)
    assert own.get("/t/acme/tasks/order-A-1/langgraph/nope/?ns=").status_code == 404
    assert own.get(f"/t/acme/tasks/order-A-1/langgraph/{ids[0]}/?ns=child").status_code == 404
    assert own.get(f"/t/acme/tasks/order-A-1/langgraph/diff?ns=&a={ids[0]}&b=x").status_code == 404


def test_a_thread_whose_id_is_no_public_id_shows_it_as_given(tenant_a, support_a):
    thread_id = "user@example.com/chat <1>"
    with in_tenant(tenant_a):
        store = GraphThreadStore(tenant_a, RUNTIME)
        task = store.ensure_thread(thread_id)
        store.put(
            thread_id=thread_id,
            checkpoint_ns="",
            checkpoint=_checkpoint("1f0-0001", {}),
            metadata={"step": -1},
        )
    assert task.task_id.startswith("lg_")
    body = login(support_a).get(f"/t/acme/tasks/{task.task_id}/").content.decode()
    assert 'data-testid="thread-id">user@example.com/chat &lt;1&gt;</span>' in body
    assert "Checkpoints LangGraph saved for thread" in body
    assert "user@example.com/chat &lt;1&gt;</span>, newest first" in body
