"""The sync client against a live server: every endpoint, typed results and typed errors."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from stateroom_client import (
    AlreadyDecided,
    AlreadyExists,
    AppendResult,
    Approval,
    Conflict,
    ContentDeleted,
    Forbidden,
    IdempotencyKeyReused,
    InvalidTransition,
    NotFound,
    Page,
    Run,
    RunClaimed,
    Session,
    StateroomClient,
    StateroomError,
    Unauthorized,
    ValidationError,
    VersionConflict,
)


def test_me_names_the_tokens_tenant_and_role(client, operator):
    me = client.me()
    assert (me.tenant, me.name, me.role) == ("acme", "worker", "runtime")
    assert operator.me().role == "operator"


def test_sessions_create_get_list_and_lifecycle(client):
    session = client.create_session(
        user_id="u-1", session_id="s-1", metadata={"channel": "chat"}, lease_seconds=600
    )
    assert isinstance(session, Session)
    assert (session.session_id, session.user_id, session.status, session.revision) == (
        "s-1",
        "u-1",
        "active",
        0,
    )
    assert session.metadata == {"channel": "chat"}
    assert session.attached_run_ids == []
    assert session.legal_hold is False
    assert session.lease_until is not None and session.lease_until.tzinfo is not None

    assert client.get_session("s-1") == session
    client.create_session(user_id="u-2", session_id="s-2")
    client.create_session(user_id="u-1", session_id="s-3")

    mine = client.list_sessions(user_id="u-1")
    assert isinstance(mine, Page)
    assert sorted(s.session_id for s in mine) == ["s-1", "s-3"]
    first = client.list_sessions(limit=1)
    assert len(first) == 1 and first.next is not None
    assert sorted(s.session_id for s in client.iter_sessions(page_size=1)) == ["s-1", "s-2", "s-3"]

    client.create_run(run_id="r-1")
    attached = client.attach_session("s-1", run_id="r-1", user_id="u-1", expected_revision=0)
    assert (attached.revision, attached.attached_run_ids) == (1, ["r-1"])
    detached = client.detach_session("s-1", run_id="r-1", user_id="u-1", expected_revision=1)
    assert (detached.revision, detached.attached_run_ids, detached.status) == (2, [], "active")

    renewed = client.heartbeat_session("s-1", lease_seconds=3600)
    assert renewed.lease_until > session.lease_until

    generated = client.create_session(user_id="u-9")  # the server picks the id
    assert generated.session_id and client.get_session(generated.session_id) == generated

    closed = client.close_session("s-1", reason="done")
    assert closed.status == "closed"
    with pytest.raises(Conflict) as refused:
        client.close_session("s-1")
    assert refused.value.status == 409


def test_session_errors_are_typed_with_codes(client):
    client.create_session(user_id="u-1", session_id="s-1")
    client.create_run(run_id="r-1")
    client.create_run(run_id="r-2")

    with pytest.raises(AlreadyExists) as exists:
        client.create_session(user_id="u-1", session_id="s-1")
    assert exists.value.code == "session_exists"

    with pytest.raises(VersionConflict) as stale:
        client.attach_session("s-1", run_id="r-1", user_id="u-1", expected_revision=5)
    assert (stale.value.code, stale.value.current_revision) == ("revision_conflict", 0)

    with pytest.raises(Forbidden) as mismatch:
        client.attach_session("s-1", run_id="r-1", user_id="someone-else", expected_revision=0)
    assert mismatch.value.code == "session_scope_mismatch"

    client.attach_session("s-1", run_id="r-1", user_id="u-1", expected_revision=0)
    with pytest.raises(Conflict) as busy:
        client.attach_session("s-1", run_id="r-2", user_id="u-1", expected_revision=1)
    assert busy.value.code == "session_busy"

    with pytest.raises(Conflict) as not_attached:
        client.detach_session("s-1", run_id="r-2", user_id="u-1", expected_revision=1)
    assert not_attached.value.code == "run_not_attached"


def test_items_append_read_and_replay(client):
    client.create_session(user_id="u-1", session_id="s-1")
    rows = [
        {"role": "user", "item_type": "message", "payload": {"text": f"m{i}"}} for i in range(5)
    ]
    appended = client.append_items("s-1", rows[:3])
    assert appended == AppendResult(first_seq=1, last_seq=3, created=True)
    keyed = client.append_items("s-1", rows[3:], idempotency_key="k-1")
    assert keyed == AppendResult(first_seq=4, last_seq=5, created=True)
    again = client.append_items("s-1", rows[3:], idempotency_key="k-1")
    assert again == AppendResult(first_seq=4, last_seq=5, created=False)
    with pytest.raises(IdempotencyKeyReused) as reused:
        client.append_items("s-1", rows[:1], idempotency_key="k-1")
    assert (reused.value.status, reused.value.code) == (422, "idempotency_key_reused")

    page = client.get_items("s-1")
    assert [(i.seq, i.role, i.item_type, i.payload["text"]) for i in page] == [
        (1, "user", "message", "m0"),
        (2, "user", "message", "m1"),
        (3, "user", "message", "m2"),
        (4, "user", "message", "m3"),
        (5, "user", "message", "m4"),
    ]
    assert [i.seq for i in client.get_items("s-1", after_seq=3)] == [4, 5]
    assert [i.seq for i in client.get_items("s-1", before_seq=4, limit=2)] == [2, 3]
    assert [i.seq for i in client.iter_items("s-1", page_size=2)] == [1, 2, 3, 4, 5]
    assert [i.seq for i in client.iter_items("s-1", after_seq=2, page_size=2)] == [3, 4, 5]

    client.close_session("s-1")
    with pytest.raises(Conflict):
        client.append_items("s-1", rows[:1])


def test_runs_create_transition_and_events(client):
    client.create_session(user_id="u-1", session_id="s-1")
    client.create_task(task_id="t-1", objective="migrate")
    deadline = datetime(2030, 1, 1, tzinfo=UTC)
    run = client.create_run(
        run_id="r-1", session_id="s-1", task_id="t-1", active_agent="coder", deadline_at=deadline
    )
    assert isinstance(run, Run)
    assert (run.run_id, run.session_id, run.task_id, run.status, run.version) == (
        "r-1",
        "s-1",
        "t-1",
        "created",
        1,
    )
    assert (run.active_agent, run.deadline_at, run.cost_used) == ("coder", deadline, Decimal("0"))
    assert client.get_run("r-1") == run

    running = client.transition_run(
        "r-1",
        expected_version=1,
        status="running",
        turn_index=2,
        current_node_id="plan",
        token_used=120,
        cost_used=Decimal("0.0125"),
    )
    assert (running.status, running.version, running.turn_index, running.token_used) == (
        "running",
        2,
        2,
        120,
    )
    assert (running.current_node_id, running.cost_used) == ("plan", Decimal("0.0125"))

    with pytest.raises(VersionConflict) as stale:
        client.transition_run("r-1", expected_version=1, status="succeeded")
    assert (stale.value.code, stale.value.current_version) == ("version_conflict", 2)
    assert client.get_run("r-1").version == 2  # the refused write changed nothing

    failed = client.transition_run(
        "r-1", expected_version=2, status="failed", error={"code": "boom", "message": "bad"}
    )
    assert (failed.status, failed.error) == ("failed", {"code": "boom", "message": "bad"})
    with pytest.raises(InvalidTransition) as terminal:
        client.transition_run("r-1", expected_version=3, status="running")
    assert terminal.value.code == "invalid_transition"

    client.create_run(run_id="r-2", session_id="s-1")
    generated = client.create_run()
    assert generated.run_id and client.get_run(generated.run_id).status == "created"
    assert [r.run_id for r in client.list_runs(status="failed")] == ["r-1"]
    assert sorted(r.run_id for r in client.list_runs(session_id="s-1")) == ["r-1", "r-2"]
    assert sorted(r.run_id for r in client.iter_runs(page_size=1)) == sorted(
        ["r-1", "r-2", generated.run_id]
    )

    appended = client.append_events(
        "r-2", [{"type": "step", "node_id": "n1", "payload": {"i": i}} for i in range(3)]
    )
    assert (appended.first_seq, appended.last_seq) == (1, 3)
    events = client.get_events("r-2")
    assert [(e.seq, e.type, e.node_id, e.payload) for e in events] == [
        (1, "step", "n1", {"i": 0}),
        (2, "step", "n1", {"i": 1}),
        (3, "step", "n1", {"i": 2}),
    ]
    assert [e.seq for e in client.get_events("r-2", after=1)] == [2, 3]
    assert [e.seq for e in client.iter_events("r-2", page_size=2)] == [1, 2, 3]


def test_claims_fence_every_runtime_write_of_another_worker(client):
    run = client.create_run(run_id="r-c")
    run = client.transition_run("r-c", expected_version=run.version, status="running")
    claimed = client.claim_run("r-c", worker="w1", expected_version=run.version, lease_seconds=30)
    assert (claimed.claimed_by, claimed.version) == ("w1", run.version + 1)
    assert claimed.claim_until is not None and claimed.claim_until > datetime.now(UTC)
    with pytest.raises(RunClaimed) as taken:
        client.claim_run("r-c", worker="w2", expected_version=claimed.version)
    assert (taken.value.code, taken.value.claimed_by) == ("run_claimed", "w1")
    assert taken.value.claim_until == claimed.claim_until.isoformat()
    effect = client.record_effect(
        "r-c", idempotency_key="k-c", tool_name="t", request={}, worker="w1"
    )
    refused = [
        lambda: client.transition_run("r-c", expected_version=claimed.version, token_used=1),
        lambda: client.append_events("r-c", [{"type": "t", "payload": None}], worker="w2"),
        lambda: client.record_effect("r-c", idempotency_key="k-d", tool_name="t", request={}),
        lambda: client.commit_effect(effect.effect_id, result={}, worker="w2"),
        lambda: client.fail_effect(effect.effect_id, error={"message": "x"}),
        lambda: client.request_approval(
            "r-c", expected_version=claimed.version, tool_name="t", arguments={}, risk="low"
        ),
    ]
    for write in refused:
        with pytest.raises(RunClaimed):
            write()
    assert client.get_run("r-c") == claimed
    client.append_events("r-c", [{"type": "t", "payload": None}], worker="w1")
    assert client.commit_effect(effect.effect_id, result={}, worker="w1").status == "committed"
    renewed = client.claim_run("r-c", worker="w1", expected_version=claimed.version)
    waiting = client.request_approval(
        "r-c",
        expected_version=renewed.version,
        tool_name="t",
        arguments={},
        risk="low",
        worker="w1",
    )
    run = client.get_run(waiting.run_id)
    assert (run.status, run.claimed_by, run.claim_until) == ("waiting_approval", "", None)


def _waiting_run(client: StateroomClient, run_id: str = "r-1") -> Run:
    run = client.create_run(run_id=run_id)
    return client.transition_run(run_id, expected_version=run.version, status="running")


def test_approvals_request_wait_decide_once(client, operator):
    run = _waiting_run(client)
    expires = datetime.now(UTC) + timedelta(hours=1)
    approval = client.request_approval(
        "r-1",
        expected_version=run.version,
        tool_name="issue_refund",
        arguments={"order_id": "A-1", "amount_cents": 1200},
        risk="high",
        reason="customer asked",
        expires_at=expires,
    )
    assert isinstance(approval, Approval)
    assert (approval.run_id, approval.status, approval.tool_name, approval.risk) == (
        "r-1",
        "pending",
        "issue_refund",
        "high",
    )
    assert approval.arguments == {"order_id": "A-1", "amount_cents": 1200}
    assert approval.expires_at == expires
    run = client.get_run("r-1")
    assert (run.status, run.pending_approval_id) == ("waiting_approval", approval.approval_id)

    started = time.monotonic()
    still = client.get_approval(approval.approval_id, wait=1)
    assert still.status == "pending"
    assert time.monotonic() - started >= 0.9
    assert [a.approval_id for a in client.list_approvals(status="pending")] == [
        approval.approval_id
    ]
    assert [a.approval_id for a in client.list_approvals(run_id="r-1")] == [approval.approval_id]

    with pytest.raises(Forbidden):
        client.decide_approval(approval.approval_id, decision="approve", reason="me")
    decided = operator.decide_approval(
        approval.approval_id, decision="approve", reason="within policy"
    )
    assert (decided.status, decided.decision_reason, decided.decided_by) == (
        "approved",
        "within policy",
        "token:ops",
    )
    assert client.get_approval(approval.approval_id, wait=5).status == "approved"
    assert client.wait_for_decision(approval.approval_id, timeout=5).status == "approved"
    with pytest.raises(AlreadyDecided) as twice:
        operator.decide_approval(approval.approval_id, decision="reject", reason="no")
    assert (twice.value.code, twice.value.details["decided_by"]) == (
        "already_decided",
        "token:ops",
    )
    run = client.get_run("r-1")
    assert (run.status, run.pending_approval_id) == ("running", "")

    second = client.request_approval(
        "r-1",
        expected_version=run.version,
        tool_name="send_email",
        arguments={"to": "a@example.com"},
        risk="low",
        approval_id="r-1:call-2",
    )
    assert second.approval_id == "r-1:call-2"
    cancelled = client.cancel_approval("r-1:call-2", reason="not needed")
    assert cancelled.status == "cancelled"
    with pytest.raises(AlreadyDecided):
        client.cancel_approval("r-1:call-2")
    assert client.get_run("r-1").status == "running"
    assert sorted(a.approval_id for a in client.iter_approvals(run_id="r-1", page_size=1)) == [
        approval.approval_id,
        "r-1:call-2",
    ]


def test_effects_record_once_commit_fail_and_find(client):
    _waiting_run(client)
    effect = client.record_effect(
        "r-1", idempotency_key="r-1:c1", tool_name="refund", request={"amount": 5}
    )
    assert (effect.status, effect.created, effect.run_id, effect.idempotency_key) == (
        "started",
        True,
        "r-1",
        "r-1:c1",
    )
    again = client.record_effect(
        "r-1", idempotency_key="r-1:c1", tool_name="refund", request={"amount": 5}
    )
    assert (again.effect_id, again.created) == (effect.effect_id, False)
    with pytest.raises(IdempotencyKeyReused):
        client.record_effect(
            "r-1", idempotency_key="r-1:c1", tool_name="refund", request={"amount": 6}
        )

    committed = client.commit_effect(effect.effect_id, result={"refund_id": "rf_1"})
    assert (committed.status, committed.result) == ("committed", {"refund_id": "rf_1"})
    assert client.commit_effect(effect.effect_id, result={"refund_id": "rf_1"}) == committed
    with pytest.raises(Conflict):
        client.commit_effect(effect.effect_id, result={"refund_id": "other"})

    other = client.record_effect("r-1", idempotency_key="r-1:c2", tool_name="email", request={})
    failed = client.fail_effect(other.effect_id, error={"message": "smtp down"})
    assert (failed.status, failed.error["message"]) == ("failed", "smtp down")

    assert client.find_effect("r-1:c1").effect_id == effect.effect_id
    assert client.find_effect("no-such-key") is None
    assert [e.effect_id for e in client.list_effects(idempotency_key="r-1:c2")] == [other.effect_id]
    assert sorted(e.idempotency_key for e in client.list_run_effects("r-1")) == [
        "r-1:c1",
        "r-1:c2",
    ]
    assert sorted(e.idempotency_key for e in client.iter_run_effects("r-1", page_size=1)) == [
        "r-1:c1",
        "r-1:c2",
    ]


def test_tasks_state_and_checkpoints(client):
    task = client.create_task(task_id="t-1", objective="migrate repo", constraints=["no downtime"])
    assert (task.task_id, task.objective, task.constraints, task.version, task.status) == (
        "t-1",
        "migrate repo",
        ["no downtime"],
        1,
        "active",
    )
    assert client.get_task("t-1") == task
    generated = client.create_task(objective="no id given")
    assert generated.task_id and client.get_task(generated.task_id).objective == "no id given"
    saved = client.save_task_state(
        "t-1",
        expected_version=1,
        plan_version="v2",
        completed_nodes=["scan"],
        pending_nodes=["rewrite"],
        artifact_refs=["s3://bucket/plan.json"],
    )
    assert (saved.version, saved.plan_version, saved.completed_nodes, saved.pending_nodes) == (
        2,
        "v2",
        ["scan"],
        ["rewrite"],
    )
    with pytest.raises(VersionConflict) as stale:
        client.save_task_state("t-1", expected_version=1, status="completed")
    assert stale.value.current_version == 2

    one = client.append_checkpoint("t-1", state={"day": 1}, node_id="scan")
    two = client.append_checkpoint("t-1", state={"day": 2}, schema_version=2)
    assert (one.seq, two.seq) == (1, 2)
    latest = client.latest_checkpoint("t-1")
    assert (latest.checkpoint_id, latest.seq, latest.state, latest.schema_version) == (
        two.checkpoint_id,
        2,
        {"day": 2},
        2,
    )
    first = client.get_checkpoint("t-1", one.checkpoint_id)
    assert (first.seq, first.state, first.node_id) == (1, {"day": 1}, "scan")
    assert client.get_task("t-1").latest_checkpoint_id == two.checkpoint_id


def test_auth_tenant_isolation_and_validation_errors(server, client, other):
    client.create_session(user_id="u-1", session_id="s-1")
    with StateroomClient(server.url, "sr_not_a_token") as stranger:
        with pytest.raises(Unauthorized) as unauthorized:
            stranger.me()
    assert (unauthorized.value.status, unauthorized.value.code) == (401, "unauthenticated")

    # Another tenant's id is the same 404 as a missing one.
    with pytest.raises(NotFound) as hidden:
        other.get_session("s-1")
    with pytest.raises(NotFound) as missing:
        client.get_session("s-404")
    assert (hidden.value.code, missing.value.code) == ("not_found", "not_found")
    with pytest.raises(NotFound):
        other.append_items("s-1", [{"role": "user", "item_type": "message", "payload": {}}])

    with pytest.raises(ValidationError) as invalid:
        client.list_sessions(limit=0)
    assert (invalid.value.status, invalid.value.code) == (422, "validation_error")
    assert "limit" in invalid.value.details
    with pytest.raises(ValidationError) as bad_risk:
        run = _waiting_run(client)
        client.request_approval(
            "r-1", expected_version=run.version, tool_name="t", arguments={}, risk="extreme"
        )
    assert "risk" in bad_risk.value.details
    assert isinstance(bad_risk.value, StateroomError)


def test_data_lifecycle_for_admin_tokens_and_content_deleted_for_late_writes(
    server, client, make_token
):
    with StateroomClient(server.url, make_token(server.tenant, role="admin", name="dpo")) as admin:
        client.create_session(user_id="u-9", session_id="s-9")
        client.append_items("s-9", [{"role": "user", "item_type": "message", "payload": {}}])
        client.close_session("s-9", reason="done")
        with pytest.raises(Forbidden) as denied:
            client.delete_session_content("s-9", reason="gdpr")
        assert denied.value.code == "admin_required"

        deletion = admin.delete_session_content("s-9", reason="gdpr")
        # The item, the session's end reason, and the runtime's close reason in the audit log.
        assert (deletion.session_id, deletion.status, deletion.total) == ("s-9", "queued", 3)
        done = admin.get_deletion(deletion.deletion_id)  # the job ran when the request committed
        assert (done.status, done.done, done.receipt["deleted"]["session_items"]) == ("done", 3, 1)
        with pytest.raises(ContentDeleted) as late:
            client.append_items("s-9", [{"role": "user", "item_type": "message", "payload": {}}])
        assert (late.value.status, late.value.code) == (409, "content_deleted")

        client.create_session(user_id="u-9", session_id="s-10")
        erasure = admin.erase_user("u-9", reason="forget me")
        assert [s["session_id"] for s in erasure.sessions] == ["s-9", "s-10"]
        assert admin.get_erasure(erasure.erasure_id).status == "done"
        with pytest.raises(NotFound):
            admin.get_erasure("era_nope")


def test_run_control_by_an_operator_token_and_the_runtime_that_made_the_run(
    client, operator, other
):
    run = client.create_run(run_id="r-ctl")
    run = client.transition_run("r-ctl", expected_version=run.version, status="running")
    with pytest.raises(Forbidden) as refused:
        client.suspend_run("r-ctl", reason="only operators pause runs")
    assert refused.value.code == "operator_required"
    with pytest.raises(NotFound):
        other.cancel_run("r-ctl", reason="not mine")
    with pytest.raises(VersionConflict):
        operator.suspend_run("r-ctl", reason="hold", expected_version=run.version - 1)
    with pytest.raises(ValidationError):
        operator.suspend_run("r-ctl", reason="")
    suspended = operator.suspend_run("r-ctl", reason="hold", expected_version=run.version)
    assert (suspended.status, suspended.version) == ("suspended", run.version + 1)
    resumed = operator.resume_run("r-ctl", reason="go on")
    assert (resumed.status, resumed.claimed_by, resumed.unclaimed_since) == ("running", "", None)
    with pytest.raises(InvalidTransition):
        operator.resume_run("r-ctl", reason="again")
    cancelled = client.cancel_run("r-ctl", reason="the user left")  # its own run
    assert (cancelled.status, cancelled.version) == ("cancelled", run.version + 3)
    with pytest.raises(InvalidTransition):
        operator.cancel_run("r-ctl", reason="too late")


def test_runs_waiting_for_a_worker_are_listed_with_since_when(server, client):
    from actions_app.runs import RunActions
    from stateroom.actor import Actor
    from tenancy_app.scoping import in_tenant

    run = client.create_run(run_id="r-idle")
    client.transition_run("r-idle", expected_version=run.version, status="running")
    client.create_run(run_id="r-new")
    suspended = datetime.now(UTC) - timedelta(minutes=10)
    with in_tenant(server.tenant):  # paused and resumed ten minutes ago, by the store's clock
        people = RunActions(server.tenant, Actor.system("ops"), clock=lambda: suspended)
        people.suspend(run_id="r-idle", reason="pause")
        resumed = people.resume(run_id="r-idle", reason="go on")
    [idle] = client.list_runs(unclaimed=True)
    assert (idle.run_id, idle.unclaimed_since) == ("r-idle", resumed.updated_at)
    assert [r.run_id for r in client.iter_runs(unclaimed=True)] == ["r-idle"]
    assert client.get_run("r-idle").unclaimed_since == resumed.updated_at
    assert client.get_run("r-new").unclaimed_since is None


def test_request_approval_sends_the_display_hint(client):
    run = _waiting_run(client)
    hint = {"amounts": [{"argument": "amount_cents", "currency": "EUR", "minor_units": 2}]}
    approval = client.request_approval(
        "r-1",
        expected_version=run.version,
        tool_name="issue_refund",
        arguments={"amount_cents": 230000},
        risk="high",
        display=hint,
    )
    assert approval.raw["display"] == hint
    assert client.get_approval(approval.approval_id).raw["display"] == hint


def test_step_run_claims_appends_and_transitions_in_one_call_or_not_at_all(client):
    run = client.create_run(run_id="r-s")
    stepped = client.step_run(
        "r-s",
        expected_version=run.version,
        worker="w1",
        claim=True,
        lease_seconds=30,
        events=[{"type": "agent.started", "payload": {"agent": "a"}}],
        status="running",
        cost_used=Decimal("0.5"),
        error=None,
    )
    assert isinstance(stepped, Run)
    assert (stepped.status, stepped.version, stepped.claimed_by, stepped.cost_used) == (
        "running",
        run.version + 2,
        "w1",
        Decimal("0.5"),
    )
    assert [e.type for e in client.get_events("r-s").results] == ["agent.started"]
    # A refused part (running -> created is not a transition) leaves everything as it was.
    with pytest.raises(InvalidTransition):
        client.step_run(
            "r-s",
            expected_version=stepped.version,
            worker="w1",
            claim=True,
            events=[{"type": "x", "payload": None}],
            status="created",
        )
    assert client.get_run("r-s") == stepped
    assert len(client.get_events("r-s").results) == 1
