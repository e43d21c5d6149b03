"""Query counts of the pages not pinned elsewhere (lists and inspectors pin theirs in their files)."""

import pytest

from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, layout_queries, populate_session, request_queries


@pytest.mark.parametrize("rows", [1, 20])
def test_delete_preview(make_session, tenant_a, admin_a, rows, django_assert_num_queries):
    make_session("s-1")
    populate_session(tenant_a, "s-1", rows)
    with in_tenant(tenant_a):
        SessionStore(tenant_a, RUNTIME).close(session_id="s-1", reason="done")
    client = login(admin_a)
    # The session, then DeletionStore.preview: the session; its scope (attachments,
    # runs, held sessions' tasks, approval ids, effect ids; no task here); each content
    # class counted by its owner (9: the two task classes of no task cost nothing); the
    # audit events about it; an open deletion; two holds. The same for 1 run or 20.
    with django_assert_num_queries(layout_queries(client, tenant_a) + 20):
        body = client.get("/t/acme/sessions/s-1/delete").content.decode()
    assert f'data-testid="delete-session_items"><td>Conversation items</td><td>{rows}</td>' in body


@pytest.mark.parametrize("rows", [1, 20])
def test_bulk_confirm(make_session, tenant_a, admin_a, rows, django_assert_num_queries):
    for n in range(rows):
        make_session(f"s-{n}")
    client = login(admin_a)
    with django_assert_num_queries(layout_queries(client, tenant_a) + 1):  # one COUNT
        body = client.get("/t/acme/sessions/bulk?action=expire").content.decode()
    assert f'data-testid="bulk-count">{rows}<' in body


@pytest.mark.parametrize(("page", "own"), [("close", 1), ("expire", 1), ("hold?on=1", 1)])
def test_action_confirmation(make_session, tenant_a, admin_a, page, own, django_assert_num_queries):
    make_session("s-1")
    client = login(admin_a)
    with django_assert_num_queries(layout_queries(client, tenant_a) + own):
        assert client.get(f"/t/acme/sessions/s-1/{page}").status_code == 200
    # The htmx panel has no layout around it.
    with django_assert_num_queries(request_queries() + own):
        client.get(f"/t/acme/sessions/s-1/{page}", headers={"HX-Request": "true"})


def test_deletion_progress(
    world, tenant_a, admin_a, django_assert_num_queries, django_capture_on_commit_callbacks
):
    client = login(admin_a)
    client.post(f"/t/acme/sessions/{world.session_id}/close", {"reason": "done"})
    with django_capture_on_commit_callbacks(execute=True):
        url = client.post(f"/t/acme/sessions/{world.session_id}/delete", {"reason": "x"})[
            "Location"
        ]
    with django_assert_num_queries(
        layout_queries(client, tenant_a) + 1
    ):  # the job with its session
        client.get(url)
    with django_assert_num_queries(request_queries() + 1):
        assert client.get(url, headers={"HX-Request": "true"}).status_code == 286


def test_settle_form(world, tenant_a, operator_a, django_assert_num_queries):
    client = login(operator_a)
    with django_assert_num_queries(layout_queries(client, tenant_a) + 1):  # the effect with its run
        client.get(f"/t/acme/effects/{world.unknown_effect_id}/settle")


def test_checkpoint_and_diff(world, tenant_a, support_a, django_assert_num_queries):
    client = login(support_a)
    a, b = world.checkpoint_ids
    layout = layout_queries(client, tenant_a)
    # Checkpoint: the task and checkpoint; the task and its predecessor's id.
    with django_assert_num_queries(layout + 4):
        client.get(f"/t/acme/tasks/{world.task_id}/checkpoints/{b}/")
    # Diff: the task and checkpoint, twice.
    with django_assert_num_queries(layout + 4):
        client.get(f"/t/acme/tasks/{world.task_id}/diff?a={a}&b={b}")
