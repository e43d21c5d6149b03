"""NotificationStore: the only writer of the notifications app's tables.

Channels (admins configure them; a secret is write-only: saved, never shown),
chat links (an admin links a chat user id to a member), each member's
preferences, and the notifications themselves (written by the fan-out,
their status by delivery). Every configuration change is audited, secrets
never in the audit log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import time
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib.auth import get_user_model
from django.db import connection

from stateroom.errors import NotFound, Unprocessable
from stateroom.ids import new_public_id
from stateroom.store import BaseStore
from tenancy_app.models import Membership

from .models import Channel, ChannelKind, ChatLink, Notification, NotificationStatus, Preference

CONFIGURABLE_KINDS = (ChannelKind.EMAIL, ChannelKind.SLACK, ChannelKind.WEBHOOK)
MAX_CHANNELS = 20
RISKS = ("low", "medium", "high", "critical")
MAX_DETAIL = Notification._meta.get_field("detail").max_length
DONE = (NotificationStatus.SENT, NotificationStatus.SKIPPED, NotificationStatus.FAILED)


@dataclass(frozen=True)
class Draft:
    """A notification the fan-out decided on (`NotificationStore.record`)."""

    approval_id: str
    kind: str
    ref: str
    recipient_id: int | None
    channel_id: int | None
    channel_kind: str
    address: str = ""
    status: str = NotificationStatus.QUEUED
    detail: str = ""


@dataclass(frozen=True)
class Outcome:
    """What became of one notification (`NotificationStore.settle`); `attempted`: a send
    was tried (it counts in `attempts`)."""

    notification_id: int
    status: str
    detail: str = ""
    external_ref: dict[str, Any] | None = None
    attempted: bool = True


class NotificationStore(BaseStore):
    # --- channels ----------------------------------------------------------
    def channels(self):
        return Channel.objects.filter(tenant=self.tenant).order_by("kind", "name")

    def channel(self, channel_id: str) -> Channel:
        found = Channel.objects.filter(tenant=self.tenant, channel_id=channel_id).first()
        if found is None:
            raise NotFound("No such channel.")
        return found

    def save_channel(
        self,
        *,
        kind: str,
        name: str,
        config: dict[str, Any] | None = None,
        enabled: bool = True,
        secret: str | None = None,
        signing_secret: str | None = None,
        channel_id: str | None = None,
    ) -> Channel:
        """Create a channel or change `channel_id`; a secret left None keeps the saved one."""
        with self.atomic():
            now = self.now()
            if channel_id is None:
                if Channel.objects.filter(tenant=self.tenant).count() >= MAX_CHANNELS:
                    raise Unprocessable(f"A tenant has at most {MAX_CHANNELS} channels.")
                channel = Channel(
                    tenant=self.tenant,
                    channel_id=new_public_id("chn"),
                    kind=kind,
                    created_at=now,
                )
                before = None
            else:
                channel = (
                    Channel.objects.select_for_update()
                    .filter(tenant=self.tenant, channel_id=channel_id)
                    .first()
                )
                if channel is None:
                    raise NotFound("No such channel.")
                before = _described(channel)
            channel.name = (name or "").strip()
            channel.config = dict(config or {})
            channel.enabled = enabled
            if secret is not None:
                channel.secret = secret
            if signing_secret is not None:
                channel.signing_secret = signing_secret
            channel.updated_at = now
            self._check_channel(channel)
            channel.save()
            self.audit(
                "channel.saved",
                target_type="channel",
                target_id=channel.channel_id,
                before=before,
                after=_described(channel),
            )
        return channel

    def delete_channel(self, *, channel_id: str) -> None:
        with self.atomic():
            channel = self.channel(channel_id)
            before = _described(channel)
            channel.delete()
            self.audit(
                "channel.deleted", target_type="channel", target_id=channel_id, before=before
            )

    def _check_channel(self, channel: Channel) -> None:
        problems: dict[str, list[str]] = {}
        if channel.kind not in CONFIGURABLE_KINDS:
            problems["kind"] = [f"one of {[k.value for k in CONFIGURABLE_KINDS]}"]
        if not channel.name or len(channel.name) > 100:
            problems["name"] = ["a name of 1 to 100 characters"]
        elif (
            Channel.objects.filter(tenant=self.tenant, name=channel.name)
            .exclude(pk=channel.pk)
            .exists()
        ):
            problems["name"] = ["another channel has this name"]
        if channel.kind == ChannelKind.SLACK and not channel.secret:
            problems["secret"] = ["the bot token (xoxb-…)"]
        if channel.kind == ChannelKind.SLACK and not channel.signing_secret:
            problems["signing_secret"] = ["the app's signing secret"]
        if channel.kind == ChannelKind.WEBHOOK:
            url = str(channel.config.get("url", ""))
            if not url.startswith(("https://", "http://")):
                problems["config"] = ["config.url: the http(s) URL messages are POSTed to"]
            if not channel.secret:
                problems["secret"] = ["the signing secret"]
        if problems:
            raise Unprocessable("The channel is not valid.", details=problems)

    # --- chat links ---------------------------------------------------------
    def links(self, channel: Channel):
        return ChatLink.objects.filter(tenant=self.tenant, channel=channel).select_related("user")

    def link(self, *, channel_id: str, external_user_id: str, user_id: int) -> ChatLink:
        """Link chat user `external_user_id` of the channel to member `user_id` (replacing
        either's previous link)."""
        external_user_id = (external_user_id or "").strip()
        if not external_user_id or len(external_user_id) > 64:
            raise Unprocessable(
                "The chat user id is not valid.",
                details={"external_user_id": ["the chat's user id, e.g. U024BE7LH"]},
            )
        if not Membership.objects.filter(tenant=self.tenant, user_id=user_id).exists():
            raise Unprocessable(
                "Not a member of this tenant.", details={"user_id": ["not a member"]}
            )
        with self.atomic():
            channel = self.channel(channel_id)
            ChatLink.objects.filter(tenant=self.tenant, channel=channel).filter(
                external_user_id=external_user_id
            ).delete()
            ChatLink.objects.filter(tenant=self.tenant, channel=channel, user_id=user_id).delete()
            link = ChatLink.objects.create(
                tenant=self.tenant,
                channel=channel,
                external_user_id=external_user_id,
                user_id=user_id,
                created_at=self.now(),
            )
            self.audit(
                "chat_link.saved",
                target_type="channel",
                target_id=channel_id,
                after={"external_user_id": external_user_id, "user_id": user_id},
            )
        return link

    def unlink(self, *, channel_id: str, user_id: int) -> None:
        with self.atomic():
            channel = self.channel(channel_id)
            gone, _ = ChatLink.objects.filter(
                tenant=self.tenant, channel=channel, user_id=user_id
            ).delete()
            if not gone:
                raise NotFound("No such link.")
            self.audit(
                "chat_link.removed",
                target_type="channel",
                target_id=channel_id,
                before={"user_id": user_id},
            )

    def linked_user(self, channel: Channel, external_user_id: str) -> int | None:
        return (
            ChatLink.objects.filter(
                tenant=self.tenant, channel=channel, external_user_id=external_user_id
            )
            .values_list("user_id", flat=True)
            .first()
        )

    # --- preferences ----------------------------------------------------------
    def preference(self, user_id: int) -> Preference | None:
        return Preference.objects.filter(tenant=self.tenant, user_id=user_id).first()

    def people(self, user_ids) -> tuple[dict[int, Preference], dict[int, str]]:
        """Each person's preference (if they saved one) and email address, one statement
        (the fan-out's: no statement per recipient)."""
        ids = [int(pk) for pk in user_ids]
        if not ids:
            return {}, {}
        fields = _concrete(Preference)
        users = get_user_model()._meta.db_table
        sql = (
            f"SELECT u.id, u.email, {', '.join(f'p.{f.column}' for f in fields)} FROM {users} u"
            f" LEFT JOIN {Preference._meta.db_table} p ON p.user_id = u.id AND p.tenant_id = %s"
            " WHERE u.id = ANY(%s)"
        )
        with self.reading(), connection.cursor() as cursor:
            cursor.execute(sql, [self.tenant.pk, ids])
            rows = cursor.fetchall()
        preferences = {
            row[0]: _from_row(Preference, fields, row[2:]) for row in rows if row[2] is not None
        }
        return preferences, {row[0]: row[1] for row in rows}

    def save_preference(
        self,
        *,
        user_id: int,
        by_risk: dict[str, list[str]],
        quiet_start: time | None,
        quiet_end: time | None,
        time_zone: str = "UTC",
    ) -> Preference:
        problems: dict[str, list[str]] = {}
        kinds = set(ChannelKind.values)
        if not isinstance(by_risk, dict) or any(
            risk not in RISKS or not isinstance(chosen, list) or set(chosen) - kinds
            for risk, chosen in by_risk.items()
        ):
            problems["by_risk"] = [f"risks {list(RISKS)} to channel kinds {sorted(kinds)}"]
        if (quiet_start is None) != (quiet_end is None):
            problems["quiet_end"] = ["quiet hours need a start and an end"]
        try:
            ZoneInfo(time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            problems["time_zone"] = ["an IANA time zone, e.g. Europe/Berlin"]
        if problems:
            raise Unprocessable("The preferences are not valid.", details=problems)
        with self.atomic():
            preference, _ = Preference.objects.update_or_create(
                tenant=self.tenant,
                user_id=user_id,
                defaults={
                    "by_risk": by_risk,
                    "quiet_start": quiet_start,
                    "quiet_end": quiet_end,
                    "time_zone": time_zone,
                    "updated_at": self.now(),
                },
            )
            self.audit(
                "preference.saved",
                target_type="user",
                target_id=str(user_id),
                after={
                    "by_risk": by_risk,
                    "quiet_start": quiet_start.isoformat() if quiet_start else None,
                    "quiet_end": quiet_end.isoformat() if quiet_end else None,
                    "time_zone": time_zone,
                },
            )
        return preference

    # --- the trail ------------------------------------------------------------
    def of_approval(self, approval_id: str):
        """Every notification of one approval, oldest first (its page's trail)."""
        return (
            Notification.objects.filter(tenant=self.tenant, approval_id=approval_id)
            .select_related("recipient", "channel")
            .order_by("id")
        )

    def notification(self, notification_id: int) -> Notification:
        found = (
            Notification.objects.filter(tenant=self.tenant, pk=notification_id)
            .select_related("channel", "recipient")
            .first()
        )
        if found is None:
            raise NotFound("No such notification.")
        return found

    def sent_with_ref(self, approval_id: str):
        """The sent messages of an approval that can be updated (chat: where they are)."""
        return Notification.objects.filter(
            tenant=self.tenant,
            approval_id=approval_id,
            status=NotificationStatus.SENT,
            external_ref__isnull=False,
        ).order_by("id")

    def record(self, drafts: list[Draft]) -> list[int]:
        """Write each draft unless its notification exists (`notification_once`); the ids
        of the rows written now that wait for delivery (queued), so a notice handled
        twice (or by two workers at once) sends each message once. A console
        notification is sent when written."""
        if not drafts:
            return []
        now = self.now()
        columns = (
            "tenant_id, approval_id, kind, ref, recipient_id, channel_id, channel_kind, address,"
            " status, detail, attempts, created_at, sent_at, acted_by, action"
        )
        rows, params = [], []
        for draft in drafts:
            status = draft.status
            if draft.channel_kind == ChannelKind.CONSOLE and status == NotificationStatus.QUEUED:
                status = NotificationStatus.SENT
            rows.append("(" + ", ".join(["%s"] * 15) + ")")
            params += [
                self.tenant.pk,
                draft.approval_id,
                draft.kind,
                draft.ref,
                draft.recipient_id,
                draft.channel_id,
                draft.channel_kind,
                draft.address,
                status,
                draft.detail[:MAX_DETAIL],
                0,
                now,
                now if status == NotificationStatus.SENT else None,
                "",
                "",
            ]
        sql = (
            f"INSERT INTO {Notification._meta.db_table} ({columns}) VALUES {', '.join(rows)}"
            " ON CONFLICT DO NOTHING RETURNING id, status"
        )
        with self.atomic(savepoint=False), connection.cursor() as cursor:  # one statement
            cursor.execute(sql, params)
            written = cursor.fetchall()
        return sorted(pk for pk, status in written if status == NotificationStatus.QUEUED)

    def for_delivery(self, notification_ids) -> list[Notification]:
        """A delivery job's notifications with their channel (`channel`, loaded) and the
        recipient's role in the tenant (`role`: None for a channel post, or when they
        left): one statement, hand-written (the drain's hot read: no ORM compiling)."""
        ids = [int(pk) for pk in notification_ids]
        if not ids:
            return []
        n_fields, c_fields = _concrete(Notification), _concrete(Channel)
        columns = [f"n.{f.column}" for f in n_fields] + [f"c.{f.column}" for f in c_fields]
        sql = (
            f"SELECT {', '.join(columns)}, (SELECT m.role FROM {Membership._meta.db_table} m"
            " WHERE m.tenant_id = n.tenant_id AND m.user_id = n.recipient_id LIMIT 1)"
            f" FROM {Notification._meta.db_table} n"
            f" LEFT JOIN {Channel._meta.db_table} c ON c.tenant_id = n.tenant_id AND c.id = n.channel_id"
            " WHERE n.tenant_id = %s AND n.id = ANY(%s) ORDER BY n.id"
        )
        with self.reading(), connection.cursor() as cursor:
            cursor.execute(sql, [self.tenant.pk, ids])
            rows = cursor.fetchall()
        found = []
        for row in rows:
            notification = _from_row(Notification, n_fields, row[: len(n_fields)])
            channel_row = row[len(n_fields) : len(n_fields) + len(c_fields)]
            notification.channel = (
                _from_row(Channel, c_fields, channel_row) if channel_row[0] is not None else None
            )
            notification.role = row[-1]
            found.append(notification)
        return found

    def settle(self, outcomes: list[Outcome]) -> set[int]:
        """Record what became of notifications, in one UPDATE: sent (when, where:
        `external_ref`), failed, queued again for the next attempt, or skipped. A
        notification already done stays as it is (once); the ids changed."""
        if not outcomes:
            return set()
        rows, params = [], []
        for outcome in outcomes:
            rows.append("(%s::bigint, %s::varchar, %s::varchar, %s::jsonb, %s::int)")
            ref = outcome.external_ref
            params += [
                outcome.notification_id,
                outcome.status,
                outcome.detail[:MAX_DETAIL],
                None if ref is None else json.dumps(ref),
                1 if outcome.attempted else 0,
            ]
        sent = NotificationStatus.SENT
        sql = (
            f"UPDATE {Notification._meta.db_table} AS n SET status = v.status,"
            " detail = v.detail, attempts = n.attempts + v.attempted,"
            f" sent_at = CASE WHEN v.status = '{sent}' THEN %s ELSE n.sent_at END,"
            f" external_ref = CASE WHEN v.status = '{sent}' THEN v.external_ref"
            " ELSE n.external_ref END"
            f" FROM (VALUES {', '.join(rows)}) AS v(id, status, detail, external_ref, attempted)"
            " WHERE n.tenant_id = %s AND n.id = v.id AND NOT (n.status = ANY(%s))"
            " RETURNING n.id"
        )
        params = [self.now(), *params, self.tenant.pk, [str(s) for s in DONE]]
        with self.atomic(savepoint=False), connection.cursor() as cursor:
            cursor.execute(sql, params)
            return {row[0] for row in cursor.fetchall()}

    def recent_tests(self, channel: Channel, *, limit: int = 5):
        """The channel's latest test messages, newest first (its page shows how they went)."""
        return list(
            Notification.objects.filter(tenant=self.tenant, channel=channel, kind="test")
            .select_related("recipient")
            .order_by("-id")[:limit]
        )

    # --- answers given from chat (notifications_app.chat_actions) -------------
    def action_refused(
        self,
        *,
        channel: Channel,
        why: str,
        approval_id: str = "",
        decision: str = "",
        external_user_id: str = "",
    ) -> None:
        """Audit a click (or a chat tool's action) that decided nothing, and why."""
        with self.atomic():
            self.audit(
                "chat.action_refused",
                target_type="approval" if approval_id else "channel",
                target_id=approval_id or channel.channel_id,
                after={
                    "why": why,
                    "channel_id": channel.channel_id,
                    "channel_kind": channel.kind,
                    "decision": decision,
                    "external_user_id": external_user_id,
                },
            )

    def acted(
        self,
        *,
        channel: Channel,
        approval_id: str,
        action: str,
        acted_by: str,
        recipient_id: int | None = None,
        message_ts: str | None = None,
    ) -> int:
        """Record an answer given from a message on its notification(s): the one at
        `message_ts` (Slack), else the recipient's. Returns how many rows."""
        rows = Notification.objects.filter(
            tenant=self.tenant, channel=channel, approval_id=approval_id
        )
        if message_ts:
            rows = rows.filter(external_ref__ts=message_ts)
        elif recipient_id is not None:
            rows = rows.filter(recipient_id=recipient_id)
        with self.atomic():
            return rows.update(acted_at=self.now(), acted_by=acted_by[:200], action=action)


def _described(channel: Channel) -> dict[str, Any]:
    """What the audit log keeps of a channel: never its secrets, only whether they are set."""
    return {
        "kind": channel.kind,
        "name": channel.name,
        "enabled": channel.enabled,
        "config": channel.config,
        "secret_set": bool(channel.secret),
        "signing_secret_set": bool(channel.signing_secret),
    }


def _concrete(model) -> list:
    return list(model._meta.concrete_fields)


def _from_row(model, fields: list, values):
    """A model instance from a hand-written SELECT's columns (`fields`, in order), with
    the fields' conversions from the database (JSON) as the ORM applies them."""
    converted = [
        field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value
        for field, value in zip(fields, values, strict=True)
    ]
    return model.from_db(connection.alias, [f.attname for f in fields], converted)
