from django.utils.functional import SimpleLazyObject

from .access import memberships_of
from .permissions import permissions_of


def tenancy(request):
    """The tenant and membership of the page, and the user's tenants for the switcher."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    membership = getattr(request, "membership", None)
    return {
        "current_tenant": getattr(request, "tenant", None),
        "current_membership": membership,
        # The role matrix for this member: `{% if can.decide %}`.
        "can": permissions_of(membership.role) if membership is not None else {},
        # Read only where a template shows the tenant switcher.
        "user_memberships": SimpleLazyObject(lambda: memberships_of(user.pk)),
    }
