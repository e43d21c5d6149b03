from django_scopes import get_scope

from approvals_app.store import ApprovalStore
from audit_app.actor import Actor


def pending_approvals(request):
    """The inbox badge of the navigation: how many approvals wait in this tenant."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    tenant = getattr(request, "tenant", None)
    return {"pending_approvals_count": _pending_approvals_count(request, tenant)}


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
    # What the inbox lists: pending approvals that can still happen.
    return ApprovalStore(tenant, Actor.from_request(request)).inbox().count()
