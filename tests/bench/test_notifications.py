"""bench.notifications: routed approvals' notices drained to a real SMTP server, small N.

Committed data (`transaction=True`): the SMTP server and the drain workers are
forked processes with connections of their own, which see only what is committed.
"""

import pytest

from bench.notifications import measure, render
from notifications_app.models import Notification
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def not_eager(monkeypatch):
    """As the bench runs (`CELERY_TASK_ALWAYS_EAGER=0`): jobs wait in the outbox."""
    from stateroom.celery import app

    monkeypatch.setattr(app.conf, "task_always_eager", False)


def _sent_once_each() -> None:
    tenant = Tenant.objects.get(slug__startswith="bench-notify-")
    with in_tenant(tenant):
        sent = list(Notification.objects.values_list("channel_kind", "address", "recipient_id"))
    assert {kind for kind, _, _ in sent} == {"email"}
    assert len({recipient for _, _, recipient in sent}) == 3
    assert all(address.endswith("@example.test") for _, address, _ in sent)


def test_one_worker_sends_one_email_per_recipient_and_empties_the_outbox():
    result = measure(5, workers=1)
    assert result["workers"] == 1 and result["jobs_per_worker"] == [10]
    assert result["notice_rows_per_request"] == 1  # one outbox row per notice, not per person
    assert result["waiting_before"] == 5  # the request published nothing
    assert result["notices"] == 5 and result["deliveries"] == 15
    assert result["delivery_jobs"] == 5  # one delivery job per notice, its 3 emails in it
    assert result["messages_received"] == result["recipients_received"] == 15
    assert result["distinct_messages_received"] == 15
    assert result["expected_messages"] == 15
    assert result["notifications"] == {"sent": 15}
    assert result["waiting_after"] == 0 and result["jobs_run_twice"] == 0
    assert result["drain_s"] == pytest.approx(result["fanout_s"] + result["delivery_s"], abs=0.02)
    assert result["per_s"] > 0
    _sent_once_each()
    table = "\n".join(render(result))
    assert "15 messages received (of 15)" in table
    assert "15 emails in 5 jobs" in table
    assert "in the bench's process" in table
    assert ("met" in table) or ("MISSED" in table)
    assert render({}) == []


def test_two_worker_processes_share_the_drain_and_send_nothing_twice():
    result = measure(12, workers=2)
    assert result["workers"] == 2
    assert result["notices"] == 12 and result["delivery_jobs"] == 12
    assert result["jobs_run"] == sum(result["jobs_per_worker"]) == 24
    assert len(result["jobs_per_worker"]) == 2
    assert result["jobs_run_twice"] == 0  # SKIP LOCKED: no outbox row claimed by both
    assert result["deliveries"] == result["expected_messages"] == 36
    assert result["messages_received"] == result["recipients_received"] == 36
    assert result["distinct_messages_received"] == 36  # no email sent twice
    assert result["notifications"] == {"sent": 36}
    assert result["waiting_after"] == 0
    assert result["drain_s"] == pytest.approx(result["fanout_s"] + result["delivery_s"], abs=0.02)
    _sent_once_each()
    assert "2 forked worker processes" in "\n".join(render(result))
