"""What the notifications app owns: the tenant's channels, chat identities linked to
members, each member's preferences, and every notification (the trail)."""

from django.conf import settings
from django.db import models

from stateroom.fields import TenantForeignKey
from tenancy_app.models import TenantOwned


class ChannelKind(models.TextChoices):
    EMAIL = "email", "Email"
    SLACK = "slack", "Slack"
    WEBHOOK = "webhook", "Signed webhook"
    # The console itself (badge and browser notifications): always on, no row.
    CONSOLE = "console", "Console"


class Channel(TenantOwned):
    """A way the tenant's people are reached, configured by an admin.

    `config` holds what may be shown (Slack: the default `channel`; webhook: its
    `url`); `secret` what may not (Slack: the bot token; webhook: the signing
    secret) and `signing_secret` Slack's request-signing secret. The console
    never shows a secret again after it was saved.
    """

    channel_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=ChannelKind.choices)
    name = models.CharField(max_length=100)
    enabled = models.BooleanField(default=True)
    config = models.JSONField(default=dict, blank=True)
    secret = models.CharField(max_length=500, blank=True, default="")
    signing_secret = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "channel_id"], name="channel_public_id_uniq"),
            models.UniqueConstraint(fields=["tenant", "name"], name="channel_name_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


class ChatLink(TenantOwned):
    """A chat user (Slack's `U…` id) an admin linked to a member: only a linked user's
    clicks are taken, as that member."""

    channel = TenantForeignKey(
        Channel, on_delete=models.CASCADE, related_name="links", db_constraint=False
    )
    external_user_id = models.CharField(max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "channel", "external_user_id"],
                name="chat_link_tenant_external_uniq",
            ),
            models.UniqueConstraint(
                fields=["tenant", "channel", "user"], name="chat_link_tenant_user_uniq"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.external_user_id} -> {self.user_id}"


class Preference(TenantOwned):
    """A member's choice: channel kinds per risk, and quiet hours (in their time zone).

    `by_risk` maps a risk to channel kinds, e.g. `{"critical": ["email", "slack"],
    "low": ["console"]}`; a risk it does not name uses the default
    (notifications_app.preferences). Quiet hours hold back everything but the
    console, except an escalation of a critical call.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    by_risk = models.JSONField(default=dict, blank=True)
    quiet_start = models.TimeField(null=True, blank=True)
    quiet_end = models.TimeField(null=True, blank=True)
    time_zone = models.CharField(max_length=64, default="UTC")
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user"], name="preference_user_uniq")
        ]

    def __str__(self) -> str:
        return f"preferences of {self.user_id}"


class NotificationStatus(models.TextChoices):
    QUEUED = "queued"
    SENT = "sent"
    FAILED = "failed"
    # Not sent by choice: quiet hours, no address, the channel disabled.
    SKIPPED = "skipped"


class Notification(TenantOwned):
    """One message to one person on one channel about one notice of an approval.

    Unique per (approval, notice kind, ref, recipient, channel kind): a notice
    handled twice (the outbox delivers at least once) sends each message once.
    `external_ref` is where the message is (Slack: channel and ts) so it can be
    updated with the outcome; `acted_*` records an answer given from it.
    """

    approval_id = models.CharField(max_length=128, blank=True, default="")
    kind = models.CharField(max_length=32)
    ref = models.CharField(max_length=64, blank=True, default="")
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    channel = TenantForeignKey(
        Channel,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="notifications",
        db_constraint=False,
    )
    channel_kind = models.CharField(max_length=16, choices=ChannelKind.choices)
    address = models.CharField(max_length=320, blank=True, default="")
    status = models.CharField(
        max_length=16, choices=NotificationStatus.choices, default=NotificationStatus.QUEUED
    )
    detail = models.CharField(max_length=500, blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    external_ref = models.JSONField(null=True, blank=True)
    acted_at = models.DateTimeField(null=True, blank=True)
    acted_by = models.CharField(max_length=200, blank=True, default="")
    action = models.CharField(max_length=32, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "approval_id", "kind", "ref", "recipient", "channel_kind"],
                name="notification_once",
                nulls_distinct=False,
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "approval_id", "id"], name="notification_approval_idx"),
            models.Index(
                fields=["tenant", "recipient", "-id"],
                condition=models.Q(channel_kind="console"),
                name="notification_console_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.approval_id} to {self.recipient_id} by {self.channel_kind}"
