from types import MappingProxyType

from django.contrib.auth import get_user_model
from django_scopes import get_scope

from approvals_app.models import ApprovalRequest
from approvals_app.store import (
    MAX_DECISION_REASON_LENGTH,
    MAX_RESPONSE_LENGTH,
    MAX_TOOL_NAME_LENGTH,
)
from effects_app.store import MAX_SETTLE_REASON_LENGTH
from runs_app.store import MAX_REASON_LENGTH as MAX_RUN_REASON_LENGTH
from runs_app.store import STRING_LIMITS as RUN_STRING_LIMITS
from sessions_app.store import MAX_REASON_LENGTH as MAX_SESSION_REASON_LENGTH
from sessions_app.store import MAX_USER_ID_LENGTH
from stateroom.ids import MAX_PUBLIC_ID_LENGTH
from tenancy_app.login import CODE_DIGITS
from tenancy_app.store import MAX_HOLD_REASON_LENGTH, MAX_TOKEN_NAME_LENGTH, MAX_WEBHOOK_URL_LENGTH

from .selectors.assignment import Badge, request_badge
from .views.search import MAX_QUERY

# Every `maxlength` of a console form, from the one definition of its rule (the store that
# refuses longer, or the field a filter matches): `maxlength="{{ limits.session_reason }}"`.
LIMITS = MappingProxyType(
    {
        "public_id": MAX_PUBLIC_ID_LENGTH,
        "user_id": MAX_USER_ID_LENGTH,
        # close, expire, legal hold of a session; content deletion; erasure of a user
        "session_reason": MAX_SESSION_REASON_LENGTH,
        "run_reason": MAX_RUN_REASON_LENGTH,  # cancel, suspend, resume
        "settle_reason": MAX_SETTLE_REASON_LENGTH,
        "decision_reason": MAX_DECISION_REASON_LENGTH,
        "response": MAX_RESPONSE_LENGTH,
        "tool_name": MAX_TOOL_NAME_LENGTH,
        "agent": RUN_STRING_LIMITS["active_agent"],
        "decider": ApprovalRequest._meta.get_field("decided_by").max_length,
        "search_query": MAX_QUERY,
        "token_name": MAX_TOKEN_NAME_LENGTH,
        "webhook_url": MAX_WEBHOOK_URL_LENGTH,
        "tenant_hold_reason": MAX_HOLD_REASON_LENGTH,
        "username": get_user_model()._meta.get_field("username").max_length,
        "code_digits": CODE_DIGITS,
    }
)


def limits(request):
    """The forms' limits (constants: no query)."""
    return {"limits": LIMITS}


def pending_approvals(request):
    """The inbox badge of the navigation: how many approvals wait in this tenant."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    tenant = getattr(request, "tenant", None)
    return {
        "pending_approvals_count": _pending_approvals_count(request, tenant),
        "assigned": _Assigned(request, tenant),
    }


class _Assigned:
    """The nav's "Mine" badge: pending approvals asked of me (by name or through my
    groups) and the newest one's pk, read with the pending count (one query)."""

    def __init__(self, request, tenant):
        self.request, self.tenant = request, tenant

    def _badge(self) -> Badge | None:
        if self.tenant is None or get_scope().get("tenant") != self.tenant:
            return None
        return request_badge(self.request)

    @property
    def count(self) -> int:
        found = self._badge()
        return found.mine if found else 0

    @property
    def newest(self) -> int:
        found = self._badge()
        return found.newest if found else 0


def _pending_approvals_count(request, tenant):
    """A callable the template evaluates where it shows the count: one COUNT query at most.

    It counts only inside the request's tenant scope: error pages (404/403
    raised by a view) render after the middleware has left it, and show no
    badge rather than query outside it.
    """
    cache: list[int | None] = []

    def count() -> int | None:
        if not cache:
            cache.append(_count(request, tenant))
        return cache[0]

    return count


def _count(request, tenant) -> int | None:
    if tenant is None or get_scope().get("tenant") != tenant:
        return None
    # What the inbox lists: pending approvals that can still happen (with the "Mine" badge).
    return request_badge(request).pending
