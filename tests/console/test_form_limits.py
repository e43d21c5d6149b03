"""One place for each rule (issue 12), on the console: a form's `maxlength` is its owner's.

Every `maxlength` a console page renders is the constant of the store that
refuses longer (or of the field a filter matches); the form itself does not
check the length: the store refuses limit + 1, and the page shows the store's
words next to the field. If a template, a form and a store drift apart, these
fail.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from approvals_app.models import ApprovalRequest
from approvals_app.store import (
    MAX_DECISION_REASON_LENGTH,
    MAX_RESPONSE_LENGTH,
    MAX_TOOL_NAME_LENGTH,
)
from console_app.context_processors import LIMITS
from console_app.views.search import MAX_QUERY
from effects_app.models import ExternalEffect
from effects_app.store import MAX_SETTLE_REASON_LENGTH, EffectStore
from lifecycle_app import deletion
from runs_app.models import Run
from runs_app.store import MAX_REASON_LENGTH as RUN_REASON
from runs_app.store import STRING_LIMITS, RunStateStore
from sessions_app.models import Session
from sessions_app.store import MAX_REASON_LENGTH as SESSION_REASON
from sessions_app.store import MAX_USER_ID_LENGTH, SessionStore
from stateroom.actor import Actor
from stateroom.errors import Unprocessable
from stateroom.ids import MAX_PUBLIC_ID_LENGTH
from tenancy_app.login import CODE_DIGITS
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.store import (
    MAX_HOLD_REASON_LENGTH,
    MAX_TOKEN_NAME_LENGTH,
    MAX_WEBHOOK_URL_LENGTH,
    TenancyStore,
)
from tests.actions.test_run_control import make_run
from tests.conftest import login
from tests.console.conftest import message_texts
from tests.console.fixtures import make_pending

PERSON = Actor.system("test")


def maxlengths(html: str, name: str) -> set[int]:
    """The maxlength of every visible input or textarea called `name` on the page."""
    tags = re.findall(rf'<(?:input|textarea)\b[^>]*\bname="{name}"[^>]*>', html)
    tags = [tag for tag in tags if 'type="hidden"' not in tag]
    assert tags, f"no field {name}"
    found = set()
    for tag in tags:
        value = re.search(r'\bmaxlength="([^"]*)"', tag)
        assert value is not None, tag
        found.add(int(value.group(1)))
    return found


def refused(response, limit: int, field: str = "reason") -> None:
    """422, the form shown again with the store's words under the field."""
    assert response.status_code == 422, response.status_code
    page = response.content.decode()
    assert f"at most {limit} characters" in page, page
    assert maxlengths(page, field) == {limit}


def test_every_console_limit_is_its_owners():
    user_model = get_user_model()
    assert dict(LIMITS) == {
        "public_id": MAX_PUBLIC_ID_LENGTH,
        "user_id": MAX_USER_ID_LENGTH,
        "session_reason": SESSION_REASON,
        "run_reason": RUN_REASON,
        "settle_reason": MAX_SETTLE_REASON_LENGTH,
        "decision_reason": MAX_DECISION_REASON_LENGTH,
        "response": MAX_RESPONSE_LENGTH,
        "tool_name": MAX_TOOL_NAME_LENGTH,
        "agent": STRING_LIMITS["active_agent"],
        "decider": ApprovalRequest._meta.get_field("decided_by").max_length,
        "search_query": MAX_QUERY,
        "token_name": MAX_TOKEN_NAME_LENGTH,
        "webhook_url": MAX_WEBHOOK_URL_LENGTH,
        "tenant_hold_reason": MAX_HOLD_REASON_LENGTH,
        "username": user_model._meta.get_field("username").max_length,
        "code_digits": CODE_DIGITS,
    }
    # What a filter matches can hold no more than the limit its input has.
    assert STRING_LIMITS["active_agent"] == Run._meta.get_field("active_agent").max_length
    assert ApprovalRequest._meta.get_field("tool_name").max_length == MAX_TOOL_NAME_LENGTH


# --- reasons of run control: runs_app.store.MAX_REASON_LENGTH --------------------------
def test_run_control_reason_is_the_run_stores(tenant_a, admin_a):
    run = make_run(tenant_a)
    client = login(admin_a)
    assert maxlengths(client.get("/t/acme/runs/r-1/cancel").content.decode(), "reason") == {
        RUN_REASON
    }
    too_long = {"reason": "r" * (RUN_REASON + 1), "expected_version": run.version}
    refused(client.post("/t/acme/runs/r-1/cancel", too_long), RUN_REASON)
    with in_tenant(tenant_a):
        with pytest.raises(Unprocessable) as store:
            RunStateStore(tenant_a, PERSON).cancel(run_id="r-1", reason="r" * (RUN_REASON + 1))
        assert store.value.details == {"reason": [f"at most {RUN_REASON} characters"]}
        assert Run.objects.get(run_id="r-1").status == "running"
    longest = {"reason": "r" * RUN_REASON, "expected_version": run.version}
    assert client.post("/t/acme/runs/r-1/cancel", longest).status_code == 302
    with in_tenant(tenant_a):
        assert Run.objects.get(run_id="r-1").status == "cancelled"


def test_bulk_run_control_reason_is_the_run_stores(tenant_a, admin_a):
    make_run(tenant_a)
    client = login(admin_a)
    page = client.get("/t/acme/runs/bulk", {"action": "cancel"}).content.decode()
    assert maxlengths(page, "reason") == {RUN_REASON}
    body = {"action": "cancel", "expected_count": 1, "reason": "r" * (RUN_REASON + 1)}
    refused(client.post("/t/acme/runs/bulk", body), RUN_REASON)  # not "1 skipped"
    with in_tenant(tenant_a):
        assert Run.objects.get(run_id="r-1").status == "running"


# --- reasons given for a session: sessions_app.store.MAX_REASON_LENGTH -------------------
def test_deletion_reason_is_the_sessions_rule():
    assert deletion.MAX_REASON_LENGTH is SESSION_REASON


@pytest.mark.parametrize("action", ["close", "expire", "hold?on=1"])
def test_session_action_reason_is_the_session_stores(tenant_a, admin_a, make_session, action):
    make_session("s-1")
    client = login(admin_a)
    url = f"/t/acme/sessions/s-1/{action}"
    assert maxlengths(client.get(url).content.decode(), "reason") == {SESSION_REASON}
    post_url, _, on = url.partition("?")
    extra = {"on": "1"} if on else {}
    refused(client.post(post_url, {"reason": "r" * (SESSION_REASON + 1), **extra}), SESSION_REASON)
    with in_tenant(tenant_a):
        session = Session.objects.get(session_id="s-1")
        assert (session.status, session.legal_hold) == ("active", False)
    assert client.post(post_url, {"reason": "r" * SESSION_REASON, **extra}).status_code == 302


def test_deletion_reason_on_the_page_is_the_session_stores(tenant_a, admin_a, make_session):
    make_session("s-1")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, PERSON).close(session_id="s-1")
    client = login(admin_a)
    page = client.get("/t/acme/sessions/s-1/delete").content.decode()
    assert maxlengths(page, "reason") == {SESSION_REASON}
    response = client.post("/t/acme/sessions/s-1/delete", {"reason": "r" * (SESSION_REASON + 1)})
    refused(response, SESSION_REASON)
    with in_tenant(tenant_a):
        with pytest.raises(Unprocessable) as store:
            deletion.DeletionStore(tenant_a, PERSON).request(
                session_id="s-1", reason="r" * (SESSION_REASON + 1)
            )
        assert list(store.value.details) == ["reason"]
        assert not deletion.Deletion.objects.exists()


def test_bulk_session_reason_is_the_session_stores(tenant_a, admin_a, make_session):
    make_session("s-1")
    client = login(admin_a)
    page = client.get("/t/acme/sessions/bulk", {"action": "close"}).content.decode()
    assert maxlengths(page, "reason") == {SESSION_REASON}
    body = {"action": "close", "expected_count": 1, "reason": "r" * (SESSION_REASON + 1)}
    refused(client.post("/t/acme/sessions/bulk", body), SESSION_REASON)
    with in_tenant(tenant_a):
        assert Session.objects.get(session_id="s-1").status == "active"


def test_erasure_form_takes_the_session_stores_limits(tenant_a, admin_a, make_session):
    make_session("s-1", user_id="u-1")
    client = login(admin_a)
    page = client.get("/t/acme/erasures/", {"user_id": "u-1"}).content.decode()
    assert maxlengths(page, "user_id") == {MAX_USER_ID_LENGTH}
    assert maxlengths(page, "confirm") == {MAX_USER_ID_LENGTH}
    assert maxlengths(page, "reason") == {SESSION_REASON}
    body = {"user_id": "u-1", "confirm": "u-1", "reason": "r" * (SESSION_REASON + 1)}
    refused(client.post("/t/acme/erasures/", body), SESSION_REASON)
    with in_tenant(tenant_a):
        assert Session.objects.get(session_id="s-1").status == "active"


# --- settling an effect: effects_app.store.MAX_SETTLE_REASON_LENGTH ----------------------
def test_settle_reason_is_the_effect_stores(tenant_a, admin_a, world):
    url = f"/t/acme/effects/{world.unknown_effect_id}/settle"
    client = login(admin_a)
    assert maxlengths(client.get(url).content.decode(), "reason") == {MAX_SETTLE_REASON_LENGTH}
    body = {"outcome": "committed", "reason": "r" * (MAX_SETTLE_REASON_LENGTH + 1)}
    refused(client.post(url, body), MAX_SETTLE_REASON_LENGTH)
    with in_tenant(tenant_a):
        effect = ExternalEffect.objects.get(effect_id=world.unknown_effect_id)
        assert effect.status == "unknown"
    with in_tenant(tenant_a), pytest.raises(Unprocessable) as store:
        EffectStore(tenant_a, Actor.for_user(admin_a)).settle(
            effect_id=world.unknown_effect_id,
            outcome="committed",
            reason="r" * (MAX_SETTLE_REASON_LENGTH + 1),
        )
    assert store.value.details == {"reason": [f"at most {MAX_SETTLE_REASON_LENGTH} characters"]}
    body["reason"] = "r" * MAX_SETTLE_REASON_LENGTH
    assert client.post(url, body).status_code == 302
    with in_tenant(tenant_a):
        assert ExternalEffect.objects.get(effect_id=world.unknown_effect_id).status == "committed"


# --- deciding an approval: approvals_app.store -----------------------------------------
def test_decision_limits_are_the_approval_stores(tenant_a, admin_a):
    from tests.console.approvals.test_approvals import form_data

    make_pending(tenant_a, approval_id="a-1", allowed_decisions=["approve", "reject", "respond"])
    client = login(admin_a)
    page = client.get("/t/acme/approvals/a-1/").content.decode()
    assert maxlengths(page, "reason") == {MAX_DECISION_REASON_LENGTH}
    assert maxlengths(page, "response") == {MAX_RESPONSE_LENGTH}
    url = "/t/acme/approvals/a-1/decide"
    long_reason = "r" * (MAX_DECISION_REASON_LENGTH + 1)
    response = client.post(url, form_data(tenant_a, "a-1", decision="reject", reason=long_reason))
    refused(response, MAX_DECISION_REASON_LENGTH)
    long_response = "r" * (MAX_RESPONSE_LENGTH + 1)
    response = client.post(
        url, form_data(tenant_a, "a-1", decision="respond", reason="no", response=long_response)
    )
    refused(response, MAX_RESPONSE_LENGTH, field="response")
    with in_tenant(tenant_a):
        assert ApprovalRequest.objects.get(approval_id="a-1").status == "pending"
    longest = "r" * MAX_DECISION_REASON_LENGTH
    response = client.post(url, form_data(tenant_a, "a-1", decision="reject", reason=longest))
    assert response.status_code == 302
    with in_tenant(tenant_a):
        assert ApprovalRequest.objects.get(approval_id="a-1").status == "rejected"


# --- filters: the field they match is the one definition ------------------------------
@pytest.mark.parametrize(
    ("url", "field", "limit"),
    [
        ("/t/acme/sessions/", "user_id", MAX_USER_ID_LENGTH),
        ("/t/acme/sessions/", "q", MAX_PUBLIC_ID_LENGTH),
        ("/t/acme/runs/", "session_id", MAX_PUBLIC_ID_LENGTH),
        ("/t/acme/approvals/history/", "tool", MAX_TOOL_NAME_LENGTH),
        ("/t/acme/approvals/history/", "agent", STRING_LIMITS["active_agent"]),
        (
            "/t/acme/approvals/history/",
            "decider",
            ApprovalRequest._meta.get_field("decided_by").max_length,
        ),
        ("/t/acme/search/", "q", MAX_QUERY),
    ],
)
def test_filter_inputs_take_their_fields_limits(admin_a, url, field, limit):
    client = login(admin_a)
    assert maxlengths(client.get(url).content.decode(), field) == {limit}
    # Longer than any stored value can be: it matches nothing, the page still answers.
    assert client.get(url, {field: "x" * (limit + 1)}).status_code == 200


# --- tenancy: tenancy_app.store ----------------------------------------------------------
def test_token_form_limits_are_the_tenancy_stores(tenant_a, admin_a):
    client = login(admin_a)
    page = client.get("/t/acme/settings/tokens/").content.decode()
    assert maxlengths(page, "name") == {MAX_TOKEN_NAME_LENGTH}
    assert maxlengths(page, "webhook_url") == {MAX_WEBHOOK_URL_LENGTH}
    client.post("/t/acme/settings/tokens/", {"name": "n" * (MAX_TOKEN_NAME_LENGTH + 1)})
    assert message_texts(client.get("/t/acme/settings/tokens/")) == [
        f"A token name has at most {MAX_TOKEN_NAME_LENGTH} characters."
    ]
    url = "https://rt.example/" + "h" * (MAX_WEBHOOK_URL_LENGTH - 18)
    assert len(url) == MAX_WEBHOOK_URL_LENGTH + 1
    client.post("/t/acme/settings/tokens/", {"name": "n", "webhook_url": url})
    assert message_texts(client.get("/t/acme/settings/tokens/")) == [
        "The webhook URL must be an http or https URL of at most "
        f"{MAX_WEBHOOK_URL_LENGTH} characters."
    ]
    with in_tenant(tenant_a):
        assert not TenancyStore(tenant_a, PERSON).tokens().exists()
        TenancyStore(tenant_a, PERSON).create_token(
            name="n" * MAX_TOKEN_NAME_LENGTH, webhook_url=url[:-1]
        )


def test_tenant_hold_reason_is_the_tenancy_stores(tenant_a, admin_a):
    client = login(admin_a)
    page = client.get("/t/acme/settings/").content.decode()
    assert maxlengths(page, "reason") == {MAX_HOLD_REASON_LENGTH}
    body = {"on": "on", "confirm": "1", "reason": "r" * (MAX_HOLD_REASON_LENGTH + 1)}
    response = client.post("/t/acme/settings/legal-hold", body)
    assert response.status_code == 422
    assert f"at most {MAX_HOLD_REASON_LENGTH} characters" in response.content.decode()
    assert not Tenant.objects.get(pk=tenant_a.pk).legal_hold
    body["reason"] = "r" * MAX_HOLD_REASON_LENGTH
    assert client.post("/t/acme/settings/legal-hold", body).status_code == 302
    assert Tenant.objects.get(pk=tenant_a.pk).legal_hold


def test_member_username_is_the_user_models(admin_a):
    limit = get_user_model()._meta.get_field("username").max_length
    client = login(admin_a)
    page = client.get("/t/acme/settings/members/").content.decode()
    assert maxlengths(page, "username") == {limit}
    # Longer than a username can be: nobody has it (the store finds no user).
    response = client.post(
        "/t/acme/settings/members/", {"username": "u" * (limit + 1), "role": "support"}
    )
    assert response.status_code == 422
    assert "No user with this username" in response.content.decode()


def test_two_factor_code_is_the_devices(admin_a):
    page = login(admin_a).get("/2fa/setup/").content.decode()
    assert maxlengths(page, "token") == {CODE_DIGITS}
    assert f'pattern="[0-9]{{{CODE_DIGITS}}}"' in page
