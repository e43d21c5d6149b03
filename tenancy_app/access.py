"""Console access helpers: role checks for views."""

from functools import wraps

from django.core.exceptions import PermissionDenied

from stateroom.sql import columns, hot_cursor, model_from_row

from .models import Membership, Role, Tenant


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
