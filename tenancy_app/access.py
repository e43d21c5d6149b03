"""Console access helpers: role checks for views."""

from functools import wraps

from django.core.exceptions import PermissionDenied

from .models import Role


def require_role(role: Role | str):
    """403 unless the current membership has at least `role` in this tenant."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            membership = getattr(request, "membership", None)
            if membership is None or not membership.has_role(role):
                raise PermissionDenied(f"This needs the {Role(role).label.lower()} role.")
            return view(request, *args, **kwargs)

        wrapper.required_role = Role(role)
        return wrapper

    return decorator
