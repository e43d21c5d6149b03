"""Keys between two tenant tables that join on the tenant too.

In the database such a key is `(tenant_id, x_id) REFERENCES parent (tenant_id, id)`
(stateroom/postgres/tenant_keys.py); Django's field keeps the one column `x_id`, so
its joins (`select_related`, a filter across the key, a reverse lookup) would read
`ON child.x_id = parent.id` alone. Citus sends a join to one node only when both
tables meet on the distribution column (docs/scaling.md), so these fields add
`parent.tenant_id = child.tenant_id` to every join they make: the ON clause is the
whole foreign key, and the planner may use the parent's `(tenant_id, id)` key.

The schema does not change: each field deconstructs as Django's own, so migrations
see a plain `ForeignKey` / `OneToOneField`.
"""

from __future__ import annotations

from django.db import models
from django.db.models.lookups import Exact


class _JoinsOnTenant:
    def get_extra_restriction(self, alias, related_alias):
        """`alias` is the referenced table's, `related_alias` this model's (Django passes
        them so for forward and reverse joins alike); no alias when Django moves the join
        into a subquery (its `trim_start`), where the key's own column is all it compares."""
        if alias is None or related_alias is None:
            return None
        theirs = self.remote_field.model._meta.get_field("tenant")
        ours = self.model._meta.get_field("tenant")
        return Exact(theirs.get_col(alias), ours.get_col(related_alias))

    def get_extra_descriptor_filter(self, instance):
        """A key followed from a row (`approval.run`) finds its row in the row's tenant."""
        return {"tenant_id": instance.tenant_id}


class TenantForeignKey(_JoinsOnTenant, models.ForeignKey):
    def deconstruct(self):
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.ForeignKey", args, kwargs


class TenantOneToOneField(_JoinsOnTenant, models.OneToOneField):
    def deconstruct(self):
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.OneToOneField", args, kwargs
