import socket

import pytest
from django.utils import timezone

from audit_app.models import AuditEvent
from effects_app.models import ExternalEffect
from effects_app.store import request_digest
from stateroom.actor import Actor
from stateroom.errors import Conflict, Forbidden, NotFound, Unprocessable
from tenancy_app.scoping import in_tenant

REQUEST = {"to": "ops@example.com", "subject": "patched"}
RESULT = {"message_id": "m-1"}
ERROR = {"message": "SMTP 550", "code": "rejected"}


def snapshot(tenant) -> list[tuple]:
    with in_tenant(tenant):
        return list(
            ExternalEffect.objects.order_by("id").values_list(
                "effect_id",
                "status",
                "request",
                "result",
                "error",
                "settled_by",
                "settle_reason",
                "updated_at",
            )
        )


def test_request_digest_is_canonical():
    assert request_digest("send", {"a": 1, "b": [1, 2]}) == request_digest(
        "send", {"b": [1, 2], "a": 1}
    )
    assert request_digest("send", {"a": 1}) != request_digest("send2", {"a": 1})
    assert request_digest("send", {"a": 1}) != request_digest("send", {"a": 1.5})


def test_record_creates_once_and_returns_the_existing_record(tenant_a, make_run, effect_store):
    run = make_run(tenant_a)
    with in_tenant(tenant_a):
        store = effect_store(tenant_a)
        effect, created = store.record(
            run_id="R-101",
            idempotency_key="T-7:n1:send",
            tool_name="send_email",
            request=REQUEST,
            node_id="n1",
        )
        again, created_again = store.record(
            run_id="R-101",
            idempotency_key="T-7:n1:send",
            tool_name="send_email",
            request={"subject": "patched", "to": "ops@example.com"},
        )
    assert (created, created_again) == (True, False)
    assert again.pk == effect.pk
    assert effect.effect_id.startswith("eff_")
    assert (effect.run_id, effect.status, effect.node_id, effect.request) == (
        run.pk,
        "started",
        "n1",
        REQUEST,
    )
    assert effect.request_digest == request_digest("send_email", REQUEST)
    with in_tenant(tenant_a):
        assert ExternalEffect.objects.count() == 1


def test_same_key_from_a_later_run_finds_the_earlier_record(
    tenant_a, make_run, make_effect, effect_store
):
    make_run(tenant_a)
    make_run(tenant_a, run_id="R-102")
    first = make_effect(tenant_a)
    with in_tenant(tenant_a):
        again, created = effect_store(tenant_a).record(
            run_id="R-102", idempotency_key="T-7:n1:send", tool_name="send_email", request=REQUEST
        )
    assert (again.effect_id, again.run.run_id, created) == (first.effect_id, "R-101", False)


@pytest.mark.parametrize(
    "change", [{"request": {**REQUEST, "subject": "other"}}, {"tool_name": "send_sms"}]
)
def test_same_key_with_a_different_request_is_refused(
    tenant_a, make_run, make_effect, effect_store, change
):
    make_run(tenant_a)
    effect = make_effect(tenant_a)
    before = snapshot(tenant_a)
    kwargs = {"tool_name": "send_email", "request": REQUEST, **change}
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
        effect_store(tenant_a).record(run_id="R-101", idempotency_key="T-7:n1:send", **kwargs)
    assert exc.value.code == "idempotency_key_reused"
    assert exc.value.details == {"idempotency_key": "T-7:n1:send", "effect_id": effect.effect_id}
    assert snapshot(tenant_a) == before


def test_record_on_unknown_or_other_tenants_run_is_not_found(
    tenant_a, tenant_b, make_run, effect_store
):
    make_run(tenant_a)
    for tenant, run_id in ((tenant_a, "R-nope"), (tenant_b, "R-101")):
        with in_tenant(tenant), pytest.raises(NotFound) as exc:
            effect_store(tenant).record(
                run_id=run_id, idempotency_key="k", tool_name="t", request={}
            )
        assert exc.value.details == {"run_id": run_id}
    assert snapshot(tenant_a) == snapshot(tenant_b) == []


def test_keys_are_per_tenant(tenant_a, tenant_b, make_run, make_effect):
    make_run(tenant_a)
    make_run(tenant_b)
    a = make_effect(tenant_a)
    b = make_effect(tenant_b, request={"different": True})
    assert a.effect_id != b.effect_id
    assert len(snapshot(tenant_a)) == len(snapshot(tenant_b)) == 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"idempotency_key": ""}, "idempotency_key"),
        ({"idempotency_key": "k" * 256}, "idempotency_key"),
        ({"tool_name": " "}, "tool_name"),
        ({"request": ["not", "an", "object"]}, "request"),
        ({"node_id": "n" * 201}, "node_id"),
        ({"approval_id": "apr_missing"}, None),
    ],
)
def test_record_validates(tenant_a, make_run, effect_store, kwargs, field):
    make_run(tenant_a)
    args = {"idempotency_key": "k", "tool_name": "t", "request": {}, **kwargs}
    with in_tenant(tenant_a), pytest.raises((Unprocessable, NotFound)) as exc:
        effect_store(tenant_a).record(run_id="R-101", **args)
    if field:
        assert list(exc.value.details) == [field]
    else:
        assert exc.value.status == 404
    assert snapshot(tenant_a) == []


def test_record_refuses_a_request_holding_a_process_object(tenant_a, make_run, effect_store):
    make_run(tenant_a)
    with socket.socket() as sock:
        with in_tenant(tenant_a), pytest.raises(Unprocessable) as exc:
            effect_store(tenant_a).record(
                run_id="R-101", idempotency_key="k", tool_name="t", request={"conn": sock}
            )
    assert (exc.value.code, exc.value.details) == (
        "not_serializable",
        {"path": "request.conn", "type": "socket.socket"},
    )
    assert snapshot(tenant_a) == []


def test_commit_is_idempotent_for_the_same_result(tenant_a, make_run, make_effect, effect_store):
    make_run(tenant_a)
    effect = make_effect(tenant_a)
    store = effect_store(tenant_a)
    with in_tenant(tenant_a):
        committed = store.commit(effect_id=effect.effect_id, result=RESULT)
    after_first = snapshot(tenant_a)
    with in_tenant(tenant_a):
        again = store.commit(effect_id=effect.effect_id, result={"message_id": "m-1"})
    assert (committed.status, committed.result, again.status) == ("committed", RESULT, "committed")
    assert snapshot(tenant_a) == after_first
    with in_tenant(tenant_a), pytest.raises(Conflict) as exc:
        store.commit(effect_id=effect.effect_id, result={"message_id": "m-2"})
    assert exc.value.code == "effect_conflict"
    assert exc.value.details == {"effect_id": effect.effect_id, "status": "committed"}
    assert snapshot(tenant_a) == after_first


def test_fail_is_idempotent_for_the_same_error(tenant_a, make_run, make_effect, effect_store):
    make_run(tenant_a)
    effect = make_effect(tenant_a)
    store = effect_store(tenant_a)
    with in_tenant(tenant_a):
        failed = store.fail(effect_id=effect.effect_id, error=ERROR)
        store.fail(effect_id=effect.effect_id, error=dict(ERROR))
    assert (failed.status, failed.error) == ("failed", ERROR)
    before = snapshot(tenant_a)
    with in_tenant(tenant_a), pytest.raises(Conflict) as exc:
        store.fail(effect_id=effect.effect_id, error={"message": "timeout"})
    assert exc.value.code == "effect_conflict"
    with in_tenant(tenant_a), pytest.raises(Unprocessable):
        store.fail(effect_id=effect.effect_id, error={"code": "no message"})
    assert snapshot(tenant_a) == before


def _bring_to(store, effect_id: str, status: str) -> None:
    person = type(store)(store.tenant, Actor("user", "1", "ada"))
    if status == "committed":
        store.commit(effect_id=effect_id, result=RESULT)
    elif status == "failed":
        store.fail(effect_id=effect_id, error=ERROR)
    elif status == "unknown":
        store.mark_unknown(effect_id=effect_id, reason="worker crashed mid-call")
    elif status == "settled_committed":
        store.mark_unknown(effect_id=effect_id)
        person.settle(effect_id=effect_id, outcome="committed", reason="seen in provider log")


def _apply(store, effect_id: str, operation: str):
    person = type(store)(store.tenant, Actor("user", "1", "ada"))
    return {
        "commit": lambda: store.commit(effect_id=effect_id, result={"other": 1}),
        "fail": lambda: store.fail(effect_id=effect_id, error={"message": "other"}),
        "mark_unknown": lambda: store.mark_unknown(effect_id=effect_id),
        "settle": lambda: person.settle(effect_id=effect_id, outcome="failed", reason="checked"),
    }[operation]()


@pytest.mark.parametrize(
    ("start", "operation", "outcome"),
    [
        ("started", "commit", "committed"),
        ("started", "fail", "failed"),
        ("started", "mark_unknown", "unknown"),
        ("started", "settle", "failed"),
        ("committed", "commit", "effect_conflict"),
        ("committed", "fail", "invalid_transition"),
        ("committed", "mark_unknown", "invalid_transition"),
        ("committed", "settle", "invalid_transition"),
        ("failed", "commit", "invalid_transition"),
        ("failed", "fail", "effect_conflict"),
        ("failed", "mark_unknown", "invalid_transition"),
        ("failed", "settle", "invalid_transition"),
        ("unknown", "commit", "invalid_transition"),
        ("unknown", "fail", "invalid_transition"),
        ("unknown", "mark_unknown", "unknown"),
        ("unknown", "settle", "failed"),
        ("settled_committed", "settle", "invalid_transition"),
        ("settled_committed", "mark_unknown", "invalid_transition"),
    ],
)
def test_effect_state_machine(
    tenant_a, make_run, make_effect, effect_store, start, operation, outcome
):
    make_run(tenant_a)
    effect = make_effect(tenant_a)
    store = effect_store(tenant_a)
    with in_tenant(tenant_a):
        _bring_to(store, effect.effect_id, start)
    before = snapshot(tenant_a)
    if outcome in {"effect_conflict", "invalid_transition"}:
        with in_tenant(tenant_a), pytest.raises(Conflict) as exc:
            _apply(store, effect.effect_id, operation)
        assert exc.value.code == outcome
        assert snapshot(tenant_a) == before
        return
    with in_tenant(tenant_a):
        assert _apply(store, effect.effect_id, operation).status == outcome
    assert snapshot(tenant_a)[0][1] == outcome


def audit_events(tenant, action: str) -> list[AuditEvent]:
    with in_tenant(tenant):
        return list(AuditEvent.objects.filter(action=action).order_by("seq"))


def test_settle_by_a_person_writes_one_audit_event(
    tenant_a, admin_a, make_run, make_effect, effect_store
):
    make_run(tenant_a)
    effect = make_effect(tenant_a)
    with in_tenant(tenant_a):
        effect_store(tenant_a).mark_unknown(effect_id=effect.effect_id, reason="worker crashed")
        settled = effect_store(tenant_a, Actor.for_user(admin_a)).settle(
            effect_id=effect.effect_id, outcome="committed", reason="  Seen in the provider log "
        )
    assert (settled.status, settled.settled_by, settled.settle_reason) == (
        "committed",
        "ada",
        "Seen in the provider log",
    )
    [event] = audit_events(tenant_a, "effect.settled")
    assert (event.actor_type, event.actor_id, event.actor_label) == ("user", str(admin_a.pk), "ada")
    assert (event.target_type, event.target_id) == ("effect", effect.effect_id)
    assert (event.before, event.after, event.reason) == (
        {"status": "unknown"},
        {"status": "committed"},
        "Seen in the provider log",
    )
    [marked] = audit_events(tenant_a, "effect.marked_unknown")
    assert (marked.actor_type, marked.before, marked.after, marked.reason) == (
        "system",
        {"status": "started"},
        {"status": "unknown"},
        "worker crashed",
    )


@pytest.mark.parametrize(
    ("actor", "kwargs", "error", "code"),
    [
        (
            Actor.system("sweep"),
            {"outcome": "committed", "reason": "x"},
            Forbidden,
            "person_required",
        ),
        (Actor("user", "1", "ada"), {"outcome": "committed", "reason": " "}, Unprocessable, None),
        (Actor("user", "1", "ada"), {"outcome": "unknown", "reason": "x"}, Unprocessable, None),
    ],
)
def test_refused_settle_changes_nothing_and_audits_nothing(
    tenant_a, make_run, make_effect, effect_store, actor, kwargs, error, code
):
    make_run(tenant_a)
    effect = make_effect(tenant_a)
    with in_tenant(tenant_a):
        effect_store(tenant_a).mark_unknown(effect_id=effect.effect_id)
    before = snapshot(tenant_a)
    with in_tenant(tenant_a), pytest.raises(error) as exc:
        effect_store(tenant_a, actor).settle(effect_id=effect.effect_id, **kwargs)
    if code:
        assert exc.value.code == code
    assert snapshot(tenant_a) == before
    assert audit_events(tenant_a, "effect.settled") == []


def test_other_tenants_effect_is_not_found(tenant_a, tenant_b, make_run, make_effect, effect_store):
    make_run(tenant_a)
    effect = make_effect(tenant_a)
    before = snapshot(tenant_a)
    store = effect_store(tenant_b, Actor("user", "9", "bob"))
    calls = [
        lambda: store.get(effect.effect_id),
        lambda: store.commit(effect_id=effect.effect_id, result={}),
        lambda: store.fail(effect_id=effect.effect_id, error={"message": "x"}),
        lambda: store.mark_unknown(effect_id=effect.effect_id),
        lambda: store.settle(effect_id=effect.effect_id, outcome="failed", reason="x"),
        lambda: store.resume_preview(run_id="R-101"),
        lambda: store.list_effects(run_id="R-101"),
    ]
    for call in calls:
        with in_tenant(tenant_b), pytest.raises(NotFound):
            call()
    with in_tenant(tenant_b):
        assert store.find("T-7:n1:send") is None
        assert list(store.list_effects()) == []
    assert snapshot(tenant_a) == before


def test_resume_preview_sorts_effects_by_what_a_resume_must_do(
    tenant_a, make_run, make_effect, effect_store
):
    make_run(tenant_a)
    make_run(tenant_a, run_id="R-other")
    store = effect_store(tenant_a)
    done, bad, lost, open_ = (make_effect(tenant_a, key=k) for k in ("k1", "k2", "k3", "k4"))
    make_effect(tenant_a, run_id="R-other", key="k5")
    with in_tenant(tenant_a):
        store.commit(effect_id=done.effect_id, result=RESULT)
        store.fail(effect_id=bad.effect_id, error=ERROR)
        store.mark_unknown(effect_id=lost.effect_id)
        preview = store.resume_preview(run_id="R-101")
    assert {k: [e.effect_id for e in v] for k, v in preview.items()} == {
        "skip": [done.effect_id],
        "rerun": [bad.effect_id],
        "settle": [lost.effect_id, open_.effect_id],
    }


def test_list_effects_filters(tenant_a, make_run, make_effect, effect_store):
    make_run(tenant_a)
    make_run(tenant_a, run_id="R-102")
    a = make_effect(tenant_a, key="k1")
    b = make_effect(tenant_a, run_id="R-102", key="k2")
    store = effect_store(tenant_a)
    with in_tenant(tenant_a):
        store.commit(effect_id=b.effect_id, result={})

        def ids(**kw):
            return list(store.list_effects(**kw).order_by("id").values_list("effect_id", flat=True))

        assert ids() == [a.effect_id, b.effect_id]
        assert ids(run_id="R-102") == [b.effect_id]
        assert ids(idempotency_key="k1") == [a.effect_id]
        assert ids(status="committed") == [b.effect_id]
        assert store.find("k2").effect_id == b.effect_id
        with pytest.raises(Unprocessable):
            store.list_effects(status="bogus")


def test_redacted_record_still_answers_for_its_key(tenant_a, make_run, make_effect, effect_store):
    make_run(tenant_a)
    effect = make_effect(tenant_a)
    store = effect_store(tenant_a)
    with in_tenant(tenant_a):
        store.commit(effect_id=effect.effect_id, result=RESULT)
        # What content deletion does to the ledger: payloads go, key/status/digest stay.
        ExternalEffect.objects.filter(pk=effect.pk).update(
            request=None, result=None, redacted_at=timezone.now()
        )
        again, created = store.record(
            run_id="R-101", idempotency_key="T-7:n1:send", tool_name="send_email", request=REQUEST
        )
        assert (again.effect_id, again.status, again.request, created) == (
            effect.effect_id,
            "committed",
            None,
            False,
        )
        assert store.commit(effect_id=effect.effect_id, result=RESULT).status == "committed"
        with pytest.raises(Unprocessable) as exc:
            store.record(
                run_id="R-101", idempotency_key="T-7:n1:send", tool_name="send_email", request={}
            )
    assert exc.value.code == "idempotency_key_reused"


@pytest.mark.parametrize(
    ("request_body", "path"),
    [
        ({"to": "ops\x00@example.com"}, "request.to"),
        ({"lines": ["ok", "\ud800"]}, "request.lines[1]"),
    ],
)
def test_text_jsonb_cannot_store_is_refused_not_a_server_error(
    tenant_a, make_run, effect_store, request_body, path
):
    make_run(tenant_a)
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as refusal:
        effect_store(tenant_a).record(
            run_id="R-101", idempotency_key="k", tool_name="send", request=request_body
        )
    assert (refusal.value.code, refusal.value.details["path"]) == ("not_serializable", path)
    assert snapshot(tenant_a) == []


def test_the_text_backslash_u0000_is_an_ordinary_string(tenant_a, make_run, effect_store):
    make_run(tenant_a)
    with in_tenant(tenant_a):
        _, created = effect_store(tenant_a).record(
            run_id="R-101", idempotency_key="k", tool_name="send", request={"raw": "\\u0000"}
        )
    assert created
    assert snapshot(tenant_a)[0][2] == {"raw": "\\u0000"}
