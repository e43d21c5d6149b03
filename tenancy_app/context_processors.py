from django.utils.functional import SimpleLazyObject

from .access import memberships_of


def tenancy(request):
    """The tenant and membership of the page, and the user's tenants for the switcher."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "current_tenant": getattr(request, "tenant", None),
        "current_membership": getattr(request, "membership", None),
        # Read only where a template shows the tenant switcher.
        "user_memberships": SimpleLazyObject(lambda: memberships_of(user.pk)),
    }
