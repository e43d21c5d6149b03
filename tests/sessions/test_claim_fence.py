"""Items written for a run are the run's writes: a live claim of another worker fences them."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from runs_app.models import Run
from runs_app.store import RunStateStore
from sessions_app.models import SessionItem
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant

from .conftest import make_session

pytestmark = pytest.mark.django_db


def post_items(api: Client, body: dict):
    return api.post("/api/v1/sessions/s-1/items", json.dumps(body), content_type="application/json")


def item(text: str) -> dict:
    return {"role": "assistant", "item_type": "message", "payload": {"text": text}}


def items_of(tenant) -> list[str]:
    with in_tenant(tenant):
        return list(
            SessionItem.objects.filter(tenant=tenant)
            .order_by("seq")
            .values_list("payload__text", flat=True)
        )


@pytest.fixture
def claimed(tenant_a):
    """Session s-1 with run r-1 in it, running, claimed by worker w-1."""
    session = make_session(tenant_a, "s-1")
    with in_tenant(tenant_a):
        runs = RunStateStore(tenant_a, Actor.system("test"))
        run = runs.create(run_id="r-1", session_id=session.session_id)
        run = runs.compare_and_set(
            run_id="r-1", expected_version=run.version, changes={"status": "running"}
        )
        runs.claim(run_id="r-1", worker="w-1", expected_version=run.version)
    return session


def test_only_the_claiming_worker_writes_items_for_the_run(api_a, tenant_a, claimed):
    for body in (
        {"items": [item("stale")], "run_id": "r-1"},
        {"items": [item("stale")], "run_id": "r-1", "worker": "w-2"},
    ):
        response = post_items(api_a, body)
        assert response.status_code == 409
        error = response.json()["error"]
        assert (error["code"], error["details"]["claimed_by"]) == ("run_claimed", "w-1")
    assert items_of(tenant_a) == []  # nothing written
    ok = post_items(
        api_a, {"items": [item("mine")], "run_id": "r-1", "worker": "w-1", "idempotency_key": "k"}
    )
    assert ok.status_code == 201
    # Items that are not the run's (no run_id) are the session's own: not fenced.
    assert post_items(api_a, {"items": [item("user")]}).status_code == 201
    # A replay of what the holder wrote answers the same seqs, whoever asks again.
    again = post_items(
        api_a, {"items": [item("mine")], "run_id": "r-1", "worker": "w-1", "idempotency_key": "k"}
    )
    assert (again.status_code, again.json()) == (200, ok.json())
    assert items_of(tenant_a) == ["mine", "user"]
    bad = post_items(api_a, {"items": [item("x")], "run_id": "r-1", "worker": ""})
    assert bad.status_code == 422 and "worker" in bad.json()["error"]["details"]


def test_an_expired_claim_fences_nothing(api_a, tenant_a, claimed):
    with in_tenant(tenant_a):  # the claim's lease ran out (w-1 died)
        Run.objects.filter(run_id="r-1").update(claim_until=timezone.now() - timedelta(seconds=1))
    response = post_items(api_a, {"items": [item("after")], "run_id": "r-1", "worker": "w-2"})
    assert response.status_code == 201
    assert items_of(tenant_a) == ["after"]
