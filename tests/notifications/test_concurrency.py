"""Two workers handle the same notice at once (the outbox delivers at least once): each
message is written, enqueued and sent exactly once. Real PostgreSQL connections."""

import pytest
from django.core import mail

from notifications_app.fanout import Fanout
from tenancy_app.models import Role

from ..runs.conftest import in_threads
from .conftest import add_channel, asked, delivery_jobs, notifications, route_to, with_email

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_a_notice_handled_by_two_workers_at_once_is_sent_once(tenant_a, make_user):
    people = [with_email(make_user(f"op{n}", tenant_a, Role.OPERATOR)) for n in range(3)]
    add_channel(tenant_a, "email", "Mail")
    route_to(tenant_a, user_ids=[p.pk for p in people])
    rounds = 5
    for n in range(rounds):
        asked(tenant_a, f"apr-{n}", run_id=f"run-{n}", risk="high")
    mail.outbox = []  # the asks' own notices were handled when they committed
    before = (len(notifications(tenant_a)), len(delivery_jobs(tenant_a)))
    assert before == (rounds * 6, rounds * 3)

    for n in range(rounds):

        def handle(i, barrier, approval_id=f"apr-{n}"):
            fanout = Fanout(tenant_a)
            barrier.wait()
            return fanout.handle(approval_id, "reassigned", "r1")

        outcomes = in_threads(2, handle)
        assert sorted(outcomes) == ["0 queued", "3 queued"]
    assert len(notifications(tenant_a, kind="reassigned")) == rounds * 6
    assert len(delivery_jobs(tenant_a)) == rounds * 3 * 2
    sent = [(m.to[0], m.body) for m in mail.outbox]  # the body links to its approval
    assert len(sent) == len(set(sent)) == rounds * 3
    assert {n.status for n in notifications(tenant_a, kind="reassigned")} == {"sent"}
