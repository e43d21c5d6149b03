def tenancy(request):
    """The tenant and membership of the page, and the user's tenants for the switcher."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "current_tenant": getattr(request, "tenant", None),
        "current_membership": getattr(request, "membership", None),
        "user_memberships": user.memberships.select_related("tenant").order_by("tenant__name"),
    }
