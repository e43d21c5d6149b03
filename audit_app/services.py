"""The audit recorder: one function every store calls inside its transaction."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from tenancy_app.models import Tenant

from .actor import Actor
from .models import AuditEvent

GENESIS_HASH = "0" * 64
_MASKED_KEYS = ("secret", "token", "password")
# Advisory lock class for "append to tenant N's audit chain" (any constant works).
_AUDIT_LOCK_CLASS = 7_215_001


def _mask(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            str(k): "***" if any(m in str(k).lower() for m in _MASKED_KEYS) else _mask(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_mask(v) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    """Round-trip through JSON so the hash sees exactly what the database stores."""
    if value is None:
        return None
    return json.loads(json.dumps(_mask(value), default=str))


def compute_hash(event: AuditEvent) -> str:
    body = {
        "tenant": event.tenant_id,
        "seq": event.seq,
        "created_at": event.created_at.isoformat(),
        "actor": [event.actor_type, event.actor_id, event.actor_label],
        "action": event.action,
        "target": [event.target_type, event.target_id],
        "before": event.before,
        "after": event.after,
        "reason": event.reason,
        "request_id": event.request_id,
        "ip": event.ip,
        "prev_hash": event.prev_hash,
    }
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def record_event(
    *,
    tenant: Tenant,
    actor: Actor,
    action: str,
    target_type: str,
    target_id: str,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    reason: str = "",
) -> AuditEvent:
    """Append one event to the tenant's chain, in the caller's transaction."""
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        raise RuntimeError("audit events are recorded inside the transaction of the change")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_AUDIT_LOCK_CLASS, tenant.pk])
    last = AuditEvent.objects.filter(tenant=tenant).order_by("-seq").values("seq", "hash").first()
    event = AuditEvent(
        tenant=tenant,
        seq=(last["seq"] + 1) if last else 1,
        created_at=timezone.now(),
        actor_type=actor.kind,
        actor_id=actor.id,
        actor_label=actor.label,
        action=action,
        target_type=target_type,
        target_id=str(target_id),
        before=_jsonable(before),
        after=_jsonable(after),
        reason=reason or "",
        request_id=actor.request_id,
        ip=actor.ip,
        prev_hash=last["hash"] if last else GENESIS_HASH,
    )
    event.hash = compute_hash(event)
    event.save(force_insert=True)
    return event


def verify_chain(tenant: Tenant) -> AuditEvent | None:
    """Return the first event whose link or content does not check out, else None."""
    expected_prev, expected_seq = GENESIS_HASH, 1
    for event in AuditEvent.objects.filter(tenant=tenant).order_by("seq").iterator(chunk_size=2000):
        if (
            event.seq != expected_seq
            or event.prev_hash != expected_prev
            or compute_hash(event) != event.hash
        ):
            return event
        expected_prev, expected_seq = event.hash, event.seq + 1
    return None
