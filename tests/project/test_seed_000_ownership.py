"""Seed 000, "how to verify": state ownership across Session, Run and Task."""

from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant


def test_two_runs_in_one_session_are_independent_and_items_keep_one_order(tenant_a):
    actor = Actor.system("runtime")
    with in_tenant(tenant_a):
        sessions, runs = SessionStore(tenant_a, actor), RunStateStore(tenant_a, actor)
        session = sessions.create(session_id="S-42", user_id="alice")
        first = runs.create(run_id="R-100", session_id="S-42")
        second = runs.create(run_id="R-101", session_id="S-42")
        assert first.run_id != session.session_id

        session = sessions.attach(
            session_id="S-42", run_id="R-100", user_id="alice", expected_revision=0
        )
        runs.compare_and_set(run_id="R-100", expected_version=1, changes={"status": "running"})
        sessions.append_items(
            session_id="S-42",
            run_id="R-100",
            items=[{"role": "user", "item_type": "message", "payload": {"text": "analyse repo"}}],
        )
        runs.compare_and_set(
            run_id="R-100",
            expected_version=2,
            changes={"status": "suspended", "current_node_id": "analyse"},
        )
        session = sessions.detach(
            session_id="S-42", run_id="R-100", user_id="alice", expected_revision=1
        )

        session = sessions.attach(
            session_id="S-42", run_id="R-101", user_id="alice", expected_revision=2
        )
        runs.compare_and_set(run_id="R-101", expected_version=1, changes={"status": "running"})
        sessions.append_items(
            session_id="S-42",
            run_id="R-101",
            items=[
                {"role": "user", "item_type": "message", "payload": {"text": "fix the bug"}},
                {"role": "assistant", "item_type": "message", "payload": {"text": "done"}},
            ],
        )
        runs.compare_and_set(run_id="R-101", expected_version=2, changes={"status": "succeeded"})
        sessions.detach(session_id="S-42", run_id="R-101", user_id="alice", expected_revision=3)

        first, second = runs.get("R-100"), runs.get("R-101")
        assert (first.status, first.version, first.current_node_id) == ("suspended", 3, "analyse")
        assert (second.status, second.version, second.current_node_id) == ("succeeded", 3, "")
        items = sessions.get_items(session_id="S-42", limit=10)
        assert [(i.seq, i.run_id) for i in items] == [(1, "R-100"), (2, "R-101"), (3, "R-101")]
        assert sessions.get("S-42").status == "active"


def test_a_new_run_inherits_conversation_but_not_the_previous_runs_transient_state(tenant_a):
    actor = Actor.system("runtime")
    with in_tenant(tenant_a):
        sessions, runs = SessionStore(tenant_a, actor), RunStateStore(tenant_a, actor)
        sessions.create(session_id="S-1", user_id="u")
        runs.create(run_id="R-1", session_id="S-1")
        sessions.attach(session_id="S-1", run_id="R-1", user_id="u", expected_revision=0)
        runs.compare_and_set(
            run_id="R-1",
            expected_version=1,
            changes={"status": "running", "current_node_id": "tool:deploy", "token_used": 900},
        )
        sessions.append_items(
            session_id="S-1",
            run_id="R-1",
            items=[{"role": "user", "item_type": "message", "payload": {"text": "hi"}}],
        )
        # The process dies here; a new process starts a new run in the same session.
        sessions.detach(session_id="S-1", run_id="R-1", user_id="u", expected_revision=1)
        new = runs.create(run_id="R-2", session_id="S-1")
        assert (new.status, new.current_node_id, new.token_used, new.pending_approval_id) == (
            "created",
            "",
            0,
            "",
        )
        assert [i.payload for i in sessions.get_items(session_id="S-1")] == [{"text": "hi"}]
