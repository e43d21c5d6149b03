"""Racing writers on the effect ledger, on PostgreSQL with real threads and connections."""

import threading

import pytest
from django.db import connection

from effects_app.models import ExternalEffect
from effects_app.store import EffectStore
from stateroom.actor import Actor
from stateroom.errors import StateroomError
from tenancy_app.scoping import in_tenant

WORKERS = 8


def race(tenant, requests: list[dict]) -> tuple[list, list[StateroomError]]:
    barrier = threading.Barrier(len(requests))
    results: list = []
    errors: list[StateroomError] = []

    def worker(request: dict) -> None:
        try:
            barrier.wait()
            with in_tenant(tenant):
                results.append(
                    EffectStore(tenant, Actor.system("worker")).record(
                        run_id="R-101",
                        idempotency_key="T-7:n1:charge",
                        tool_name="charge_card",
                        request=request,
                    )
                )
        except StateroomError as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(r,)) for r in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results, errors


@pytest.mark.django_db(transaction=True)
def test_concurrent_record_with_the_same_key_makes_one_record(tenant_a, make_run):
    make_run(tenant_a)
    results, errors = race(tenant_a, [{"amount": 500, "currency": "EUR"}] * WORKERS)
    assert errors == []
    assert sorted(created for _, created in results) == [False] * (WORKERS - 1) + [True]
    assert len({effect.effect_id for effect, _ in results}) == 1
    with in_tenant(tenant_a):
        assert ExternalEffect.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_record_of_different_requests_under_one_key(tenant_a, make_run):
    make_run(tenant_a)
    results, errors = race(tenant_a, [{"amount": i} for i in range(WORKERS)])
    assert [created for _, created in results] == [True]
    assert [e.code for e in errors] == ["idempotency_key_reused"] * (WORKERS - 1)
    assert {e.details["effect_id"] for e in errors} == {results[0][0].effect_id}
    with in_tenant(tenant_a):
        assert ExternalEffect.objects.count() == 1
