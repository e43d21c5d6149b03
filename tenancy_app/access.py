"""Console access helpers: the role matrix (`tenancy_app.permissions`) enforced on views."""

from functools import wraps

from django.core.exceptions import PermissionDenied

from stateroom.sql import columns, hot_cursor, model_from_row

from .models import Membership, Role, Tenant
from .permissions import ROLE_MATRIX, Permission


def require_permission(permission: Permission | str):
    """403 unless the current membership's role has `permission` in this tenant.

    Another tenant's objects never get this far: the tenant comes from the
    member's own `/t/<slug>/` and lookups are scoped to it (404).
    """
    permission = Permission(permission)
    role = ROLE_MATRIX[permission]

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            membership = getattr(request, "membership", None)
            if membership is None or not membership.can(permission):
                raise PermissionDenied(
                    f"This needs the {role.label.lower()} role ({permission.label.lower()})."
                )
            return view(request, *args, **kwargs)

        wrapper.required_role = role
        wrapper.required_permission = permission
        return wrapper

    return decorator


def require_role(role: Role | str):
    """403 unless the current membership has at least `role` in this tenant.

    Prefer `require_permission`: the matrix says why a role is needed.
    """

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


_MEMBERSHIPS_OF = (
    f"SELECT {columns(Membership, 'm')}, {columns(Tenant, 'n')}"
    f" FROM tenancy_memberships_of(%s) m JOIN {Tenant._meta.db_table} n ON n.id = m.tenant_id"
)
_MEMBERSHIP_WIDTH = len(Membership._meta.concrete_fields)


def memberships_of(user_id: int, *, tenant_slug: str | None = None) -> list[Membership]:
    """A user's memberships with their tenants, by tenant name (or the one in `tenant_slug`).

    Memberships have row-level security and these reads come before a tenant
    is chosen: one narrow SECURITY DEFINER function answers them (migration
    tenancy_app 0002).
    """
    sql, params = _MEMBERSHIPS_OF, [user_id]
    if tenant_slug is not None:
        sql, params = sql + " WHERE n.slug = %s", [user_id, tenant_slug]
    with hot_cursor(tenant_owned=False) as cursor:
        cursor.execute(sql + " ORDER BY n.name, n.id", params)
        rows = cursor.fetchall()
    found = []
    for row in rows:
        membership = model_from_row(Membership, row[:_MEMBERSHIP_WIDTH])
        membership.tenant = model_from_row(Tenant, row[_MEMBERSHIP_WIDTH:])
        found.append(membership)
    return found
