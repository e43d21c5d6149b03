"""Request and response shapes of the sessions API (API.md "Sessions").

Input serializers only check types and ranges (422 with per-field details);
every rule about state lives in `SessionStore`.
"""

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.settings import ISO_8601, api_settings

from stateroom.contract import (
    PageQuery,
    PublicIdField,
    QuerySerializer,
    StrictCharField,
    StrictDictField,
    StrictIntegerField,
    StrictSerializer,
    limit_field,
    worker_field,
)
from stateroom.leases import DEFAULT_SESSION_LEASE_SECONDS, MAX_SESSION_LEASE_SECONDS

from .models import SessionStatus
from .store import (
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_ITEM_TYPE_LENGTH,
    MAX_ITEMS_PER_APPEND,
    MAX_REASON_LENGTH,
    MAX_ROLE_LENGTH,
    MAX_USER_ID_LENGTH,
)


def lease_seconds_field(**kwargs) -> serializers.IntegerField:
    return StrictIntegerField(
        min_value=1,
        max_value=MAX_SESSION_LEASE_SECONDS,
        help_text=(
            f"The lease's length, 1-{MAX_SESSION_LEASE_SECONDS} s; every activity (append, attach, "
            "detach, heartbeat) renews it for this long. Default: the tenant's "
            f"(30 days, {DEFAULT_SESSION_LEASE_SECONDS} s, unless set)"
        ),
        **kwargs,
    )


# --- requests ---------------------------------------------------------------
class SessionCreateIn(StrictSerializer):
    session_id = PublicIdField(required=False, allow_null=True, help_text="Generated if omitted")
    user_id = StrictCharField(max_length=MAX_USER_ID_LENGTH)
    metadata = StrictDictField(required=False, allow_null=True)
    lease_seconds = lease_seconds_field(required=False, allow_null=True, default=None)


class SessionFilterIn(PageQuery):
    status = serializers.ChoiceField(choices=SessionStatus.choices, required=False)
    user_id = serializers.CharField(max_length=MAX_USER_ID_LENGTH, required=False)


class SessionItemsQuery(QuerySerializer):
    after_seq = serializers.IntegerField(
        required=False, min_value=0, help_text="Only items with a larger seq"
    )
    before_seq = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="The `limit` items just before this seq (the previous page)",
    )
    limit = limit_field()


class SessionAttachIn(StrictSerializer):
    run_id = PublicIdField()
    user_id = StrictCharField(max_length=MAX_USER_ID_LENGTH)
    expected_revision = StrictIntegerField(
        min_value=0, help_text="The revision you read; 409 revision_conflict if it moved"
    )


class SessionDetachIn(SessionAttachIn):
    pass


class SessionHeartbeatIn(StrictSerializer):
    lease_seconds = lease_seconds_field(required=False, allow_null=True)


class SessionCloseIn(StrictSerializer):  # the endpoint is lifecycle_app.api.close
    reason = StrictCharField(
        required=False, allow_blank=True, max_length=MAX_REASON_LENGTH, default=""
    )


class SessionItemIn(StrictSerializer):
    role = StrictCharField(max_length=MAX_ROLE_LENGTH)
    item_type = StrictCharField(max_length=MAX_ITEM_TYPE_LENGTH)
    payload = StrictDictField()


class SessionAppendIn(StrictSerializer):
    items = SessionItemIn(many=True, allow_empty=False, max_length=MAX_ITEMS_PER_APPEND)
    run_id = PublicIdField(
        required=False,
        allow_blank=True,
        default="",
        help_text="The writing run; it must be attached to the session (or created in it)",
    )
    idempotency_key = StrictCharField(
        required=False,
        allow_null=True,
        min_length=1,
        max_length=MAX_IDEMPOTENCY_KEY_LENGTH,
        help_text="Same key again returns the original seqs and appends nothing",
    )
    worker = worker_field(
        allow_null=True,
        help_text="With run_id: the worker writing for the run (required while a claim is live)",
    )


# --- responses --------------------------------------------------------------
class SessionOut(serializers.Serializer):
    """A session; `context["store"]` answers `attached_run_ids` (prefetched in lists)."""

    session_id = serializers.CharField()
    user_id = serializers.CharField()
    status = serializers.ChoiceField(choices=SessionStatus.choices)
    lease_until = serializers.DateTimeField()
    revision = serializers.IntegerField()
    attached_run_ids = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    last_active_at = serializers.DateTimeField()
    metadata = serializers.DictField()
    legal_hold = serializers.BooleanField()
    content_deleted_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_attached_run_ids(self, session) -> list[str]:
        return self.context["store"].attached_run_ids(session)


class SessionItemOut(serializers.Serializer):
    seq = serializers.IntegerField()
    role = serializers.CharField()
    item_type = serializers.CharField()
    payload = serializers.DictField()
    run_id = serializers.CharField()
    created_at = serializers.DateTimeField()


def session_items_out(rows) -> list[dict]:
    """`SessionItemOut(rows, many=True).data`, built directly: the hot read path.

    Same keys and values (timestamps in ISO 8601 in the current time zone,
    UTC as `Z`, as DRF's DateTimeField gives them) for model instances and
    the store's item rows alike, at a fraction of the serializer's cost.
    `payload` is passed as read (a JSON object; its keys are strings).
    """
    if api_settings.DATETIME_FORMAT is None or api_settings.DATETIME_FORMAT.lower() != ISO_8601:
        return SessionItemOut(rows, many=True).data
    tz = timezone.get_current_timezone()
    out = []
    for row in rows:
        created_at = row.created_at
        if created_at.tzinfo is None:
            stamp = _created_at_field.to_representation(created_at)
        else:
            stamp = created_at.astimezone(tz).isoformat()
            if stamp.endswith("+00:00"):
                stamp = stamp[:-6] + "Z"
        out.append(
            {
                "seq": int(row.seq),
                "role": str(row.role),
                "item_type": str(row.item_type),
                "payload": row.payload,
                "run_id": str(row.run_id),
                "created_at": stamp,
            }
        )
    return out


_created_at_field = serializers.DateTimeField()


class SessionAppendOut(serializers.Serializer):
    first_seq = serializers.IntegerField()
    last_seq = serializers.IntegerField()


SessionPage = inline_serializer(
    "SessionPage",
    {"results": SessionOut(many=True), "next": serializers.URLField(allow_null=True)},
)
SessionItemPage = inline_serializer(
    "SessionItemPage",
    {"results": SessionItemOut(many=True), "next": serializers.URLField(allow_null=True)},
)
