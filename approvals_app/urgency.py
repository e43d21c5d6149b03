"""The one urgency order of pending approvals: time left, weighted by risk.

    urgency = max(expires_at - now, 0) / weight(risk)        (seconds; smaller is sooner)
    weight  = low 1, medium 2, high 4, critical 8
    no expires_at: counted as URGENCY_HORIZON (24 h) left

So a high-risk call due in 8 minutes (8 min / 4 = 2) comes before a critical
one due in 3 hours (180 min / 8 = 22.5), while at equal time left the riskier
comes first. Ties go to the oldest request. The inbox sorts by it (in SQL,
`order_by_urgency`); `urgency()` computes the same number in Python.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from .models import RISK_RANK, ApprovalRequest, Risk

URGENCY_HORIZON = timedelta(hours=24)
RISK_WEIGHT = {Risk.LOW: 1, Risk.MEDIUM: 2, Risk.HIGH: 4, Risk.CRITICAL: 8}
# weight = 2 ** (risk_rank - 1), which the SQL uses.
assert all(RISK_WEIGHT[risk] == 2 ** (rank - 1) for risk, rank in RISK_RANK.items())


def urgency(approval: ApprovalRequest, now: datetime) -> float:
    """Seconds of time left divided by the risk's weight (smaller: more urgent)."""
    due = approval.expires_at or now + URGENCY_HORIZON
    return max((due - now).total_seconds(), 0.0) / RISK_WEIGHT[Risk(approval.risk)]


def order_by_urgency(approvals: QuerySet[ApprovalRequest], now: datetime) -> QuerySet:
    table = ApprovalRequest._meta.db_table
    score = RawSQL(
        f'GREATEST(EXTRACT(EPOCH FROM (COALESCE("{table}"."expires_at", %s) - %s)), 0)'
        f' / POWER(2, "{table}"."risk_rank" - 1)',
        [now + URGENCY_HORIZON, now],
    )
    return approvals.annotate(urgency=score).order_by("urgency", "id")
