"""Settling an effect whose outcome is unknown (operators; audited by EffectStore.settle)."""

import pytest

from audit_app.models import AuditEvent
from effects_app.store import EffectStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, csrf_client


def effect_state(tenant, effect_id: str):
    with in_tenant(tenant):
        effect = EffectStore(tenant, RUNTIME).get(effect_id)
        events = list(
            AuditEvent.objects.filter(tenant=tenant, action="effect.settled").values_list(
                "target_id", "actor_label", "before", "after", "reason"
            )
        )
    return effect, events


@pytest.mark.parametrize("outcome", ["committed", "failed"])
def test_operator_settles_an_unknown_effect(world, tenant_a, operator_a, outcome):
    client = login(operator_a)
    url = f"/t/acme/effects/{world.unknown_effect_id}/settle"
    form = client.get(url).content.decode()
    assert 'data-testid="settle-form"' in form
    assert f'value="{outcome}"' in form
    assert (
        effect_state(tenant_a, world.unknown_effect_id)[0].status == "unknown"
    )  # GET changed nothing

    response = client.post(url, {"outcome": outcome, "reason": "checked the provider"}, follow=True)
    assert response.redirect_chain == [(f"/t/acme/runs/{world.run_id}/#effects", 302)]
    assert [str(m) for m in response.context["messages"]] == [
        f"Effect {world.unknown_effect_id} settled as {outcome}."
    ]
    effect, events = effect_state(tenant_a, world.unknown_effect_id)
    assert (effect.status, effect.settled_by, effect.settle_reason) == (
        outcome,
        "otto",
        "checked the provider",
    )
    assert events == [
        (
            world.unknown_effect_id,
            "otto",
            {"status": "unknown"},
            {"status": outcome},
            "checked the provider",
        )
    ]
    body = response.content.decode()
    assert "settled by otto: checked the provider" in body


def test_settle_needs_outcome_and_reason(world, tenant_a, operator_a):
    url = f"/t/acme/effects/{world.unknown_effect_id}/settle"
    response = login(operator_a).post(url, {"outcome": "maybe", "reason": ""})
    assert response.status_code == 422
    body = response.content.decode()
    assert "Select a valid choice. maybe is not one of the available choices." in body
    assert "This field is required." in body
    effect, events = effect_state(tenant_a, world.unknown_effect_id)
    assert (effect.status, events) == ("unknown", [])


def test_a_committed_effect_cannot_be_settled(world, tenant_a, operator_a):
    url = f"/t/acme/effects/{world.committed_effect_id}/settle"
    client = login(operator_a)
    assert 'data-testid="settle-submit"' not in client.get(url).content.decode()
    response = client.post(url, {"outcome": "failed", "reason": "x"}, follow=True)
    assert [str(m) for m in response.context["messages"]] == [
        "An effect that is committed cannot become failed."
    ]
    effect, events = effect_state(tenant_a, world.committed_effect_id)
    assert (effect.status, events) == ("committed", [])


def test_htmx_get_is_the_panel_and_htmx_post_redirects(world, tenant_a, admin_a):
    url = f"/t/acme/effects/{world.unknown_effect_id}/settle"
    client = login(admin_a)  # admins are operators too
    panel = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in panel and 'data-testid="settle-form"' in panel
    response = client.post(
        url, {"outcome": "failed", "reason": "no trace"}, headers={"HX-Request": "true"}
    )
    assert response["HX-Redirect"] == f"/t/acme/runs/{world.run_id}/#effects"
    assert effect_state(tenant_a, world.unknown_effect_id)[0].status == "failed"


def test_support_gets_403(world, tenant_a, support_a):
    client = login(support_a)
    url = f"/t/acme/effects/{world.unknown_effect_id}/settle"
    assert client.get(url).status_code == 403
    assert client.post(url, {"outcome": "committed", "reason": "x"}).status_code == 403
    assert effect_state(tenant_a, world.unknown_effect_id)[0].status == "unknown"


def test_another_tenant_gets_404(world, tenant_a, admin_b):
    client = login(admin_b)
    for url in (
        f"/t/globex/effects/{world.unknown_effect_id}/settle",
        f"/t/acme/effects/{world.unknown_effect_id}/settle",
    ):
        assert client.get(url).status_code == 404
        assert client.post(url, {"outcome": "committed", "reason": "x"}).status_code == 404
    assert effect_state(tenant_a, world.unknown_effect_id)[0].status == "unknown"


def test_settle_without_csrf_is_403(world, tenant_a, operator_a):
    url = f"/t/acme/effects/{world.unknown_effect_id}/settle"
    response = csrf_client(operator_a).post(url, {"outcome": "committed", "reason": "x"})
    assert response.status_code == 403
    assert effect_state(tenant_a, world.unknown_effect_id)[0].status == "unknown"
