"""Member groups: named sets of the tenant's members that approval routing asks.

A group is plain (everyone in it is asked) or an on-call list (members take
turns, `rotation_days` each; a notice reaches the one on call). Only members
of the tenant can be in a group; removing a member from the tenant leaves
their group rows unused (`recipients` reads members only).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.utils.text import slugify

from stateroom.errors import Conflict, NotFound, Unprocessable
from stateroom.store import BaseStore

from .models import GroupMember, MemberGroup, Membership

MAX_GROUP_NAME_LENGTH = MemberGroup._meta.get_field("name").max_length
MAX_GROUP_MEMBERS = 200
MAX_ROTATION_DAYS = 365


class GroupStore(BaseStore):
    """The tenant's member groups: the only writer of their tables."""

    def groups(self):
        return (
            MemberGroup.objects.filter(tenant=self.tenant)
            .prefetch_related("memberships__user")
            .order_by("slug")
        )

    def get(self, slug: str) -> MemberGroup:
        group = MemberGroup.objects.filter(tenant=self.tenant, slug=slug).first()
        if group is None:
            raise NotFound("No such group.")
        return group

    def save_group(
        self,
        *,
        name: str,
        user_ids: Iterable[int],
        slug: str = "",
        rotation_days: int | None = None,
        rotation_start: datetime | None = None,
    ) -> MemberGroup:
        """Create the group `slug` (from `name` if empty) or replace its name, members
        (in the order given: the on-call order) and rotation. Audited."""
        name = (name or "").strip()
        slug = slugify(slug or name)[:64]
        user_ids = list(dict.fromkeys(int(u) for u in user_ids))
        problems = self._problems(name, slug, user_ids, rotation_days)
        if problems:
            raise Unprocessable("The group is not valid.", details=problems)
        with self.atomic():
            group = (
                MemberGroup.objects.select_for_update()
                .filter(tenant=self.tenant, slug=slug)
                .first()
            )
            before = None
            if group is None:
                group = MemberGroup(tenant=self.tenant, slug=slug, created_at=self.now())
            else:
                before = self._described(group)
            group.name = name
            group.rotation_days = rotation_days
            # A changed group keeps its rotation's start unless given a new one: saving
            # the list again does not hand the turn back to its first member.
            start = rotation_start or group.rotation_start or self.now()
            group.rotation_start = start if rotation_days else None
            group.save()
            GroupMember.objects.filter(tenant=self.tenant, group=group).delete()
            GroupMember.objects.bulk_create(
                GroupMember(tenant=self.tenant, group=group, user_id=user_id, position=position)
                for position, user_id in enumerate(user_ids)
            )
            self.audit(
                "group.saved",
                target_type="group",
                target_id=slug,
                before=before,
                after={"name": name, "user_ids": user_ids, "rotation_days": rotation_days},
            )
        return group

    def delete_group(self, *, slug: str) -> None:
        with self.atomic():
            group = self.get(slug)
            before = self._described(group)
            group.delete()
            self.audit("group.deleted", target_type="group", target_id=slug, before=before)

    def _problems(
        self, name: str, slug: str, user_ids: list[int], rotation_days: int | None
    ) -> dict[str, list[str]]:
        problems: dict[str, list[str]] = {}
        if not name or len(name) > MAX_GROUP_NAME_LENGTH:
            problems["name"] = [f"a name of 1 to {MAX_GROUP_NAME_LENGTH} characters"]
        if not slug:
            problems["slug"] = ["letters, digits, hyphens or underscores"]
        if len(user_ids) > MAX_GROUP_MEMBERS:
            problems["user_ids"] = [f"at most {MAX_GROUP_MEMBERS} members"]
        members = set(
            Membership.objects.filter(tenant=self.tenant, user_id__in=user_ids).values_list(
                "user_id", flat=True
            )
        )
        if strangers := [u for u in user_ids if u not in members]:
            problems["user_ids"] = [f"not members of this tenant: {strangers}"]
        if rotation_days is not None and not 1 <= rotation_days <= MAX_ROTATION_DAYS:
            problems["rotation_days"] = [f"1 to {MAX_ROTATION_DAYS} days"]
        if rotation_days and len(user_ids) < 1:
            problems.setdefault("user_ids", []).append("an on-call list needs members")
        return problems

    @staticmethod
    def _described(group: MemberGroup) -> dict:
        return {
            "name": group.name,
            "user_ids": list(
                group.memberships.order_by("position").values_list("user_id", flat=True)
            ),
            "rotation_days": group.rotation_days,
        }

    # --- reads for routing and notices -----------------------------------
    def group_ids_of(self, user_id: int) -> list[int]:
        """The groups `user_id` is in (the inbox's "my groups")."""
        return list(
            GroupMember.objects.filter(tenant=self.tenant, user_id=user_id).values_list(
                "group_id", flat=True
            )
        )

    def recipients(self, *, user_ids: Iterable[int], group_ids: Iterable[int]) -> list[int]:
        """Who a notice to these users and groups reaches now: tenant members only, the
        on-call member of an on-call list, each once, in the order named."""
        group_ids = list(dict.fromkeys(int(g) for g in group_ids))
        user_ids = [int(u) for u in user_ids]
        found: list[int] = []
        if user_ids:
            members = set(
                Membership.objects.filter(tenant=self.tenant, user_id__in=user_ids).values_list(
                    "user_id", flat=True
                )
            )
            found = [u for u in user_ids if u in members]
        if group_ids:
            # One query: the groups' members who are still members of the tenant (the
            # on-call turn passes among those), with their group, in position order.
            rows = (
                GroupMember.objects.filter(
                    tenant=self.tenant,
                    group_id__in=group_ids,
                    user_id__in=Membership.objects.filter(tenant=self.tenant).values("user_id"),
                )
                .select_related("group")
                .order_by("group_id", "position")
            )
            groups: dict[int, MemberGroup] = {}
            by_group: dict[int, list[int]] = {}
            for row in rows:
                groups[row.group_id] = row.group
                by_group.setdefault(row.group_id, []).append(row.user_id)
            now = self.now()
            for group_id in group_ids:
                if group_id in groups:
                    found += groups[group_id].on_call(by_group[group_id], now)
        return list(dict.fromkeys(found))


def check_slug_free(tenant, slug: str) -> None:
    """409 when `slug` names a group already (the console's create form)."""
    if MemberGroup.objects.filter(tenant=tenant, slug=slug).exists():
        raise Conflict("A group with this name exists.", code="group_exists")
