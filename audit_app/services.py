"""The audit recorder: one function every store calls inside its transaction.

An event keeps references, digests and people's own words. Content a
runtime or an end user wrote goes to a detached `AuditPayload` whose sha256
is chained in the event (`payload_hash`): the caller passes it as `content`,
and the reason given by a runtime token (not a person, nor an operator's or
admin's token) goes there too.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from stateroom.actor import Actor
from stateroom.canonical import MAX_SAFE_INTEGER, canonical_bytes
from tenancy_app.models import Tenant

from .models import AuditEvent, AuditPayload

logger = logging.getLogger(__name__)

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
    """Round-trip through JSON so the hash sees exactly what the database stores.

    Integers beyond what every JSON reader keeps exactly become strings, so the
    canonical JSON of the event (RFC 8785) always exists.
    """
    if value is None:
        return None
    return _safe_numbers(json.loads(json.dumps(_mask(value), default=str)))


def _safe_numbers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _safe_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe_numbers(v) for v in value]
    if type(value) is int and abs(value) > MAX_SAFE_INTEGER:
        return str(value)
    return value


def compute_hash(event: AuditEvent) -> str:
    """sha256 of the event's canonical JSON (RFC 8785), chained through `prev_hash`."""
    if event.canon == 1:
        return _legacy_hash(event)
    body = {
        "canon": 2,
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
        "user_agent": event.user_agent,
        "prev_hash": event.prev_hash,
    }
    if event.payload_hash:  # events without a detached payload keep the hashes they had
        body["payload_hash"] = event.payload_hash
    return hashlib.sha256(canonical_bytes(body)).hexdigest()


def _legacy_hash(event: AuditEvent) -> str:
    """How events written before RFC 8785 were hashed (they keep `canon` 1)."""
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


def payload_digest(content: Any) -> str:
    """sha256 of a detached payload's canonical JSON (RFC 8785), what its event chains."""
    return hashlib.sha256(canonical_bytes(content)).hexdigest()


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
    content: Mapping[str, Any] | None = None,
) -> AuditEvent:
    """Append one event to the tenant's chain, in the caller's transaction.

    `content` is what a runtime or an end user wrote and the event must show:
    it is stored as the event's detached payload. A runtime token's `reason`
    is such content too (people's reasons, and their tokens', stay on the event).
    """
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        raise RuntimeError("audit events are recorded inside the transaction of the change")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_AUDIT_LOCK_CLASS, tenant.pk])
    last = AuditEvent.objects.filter(tenant=tenant).order_by("-seq").values("seq", "hash").first()
    content = dict(content or {})
    if reason and actor.writes_content:
        content.setdefault("reason", reason)
        reason = ""
    content = _jsonable({k: v for k, v in content.items() if v not in (None, "", {}, [])})
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
        user_agent=actor.user_agent,
        prev_hash=last["hash"] if last else GENESIS_HASH,
        payload_hash=payload_digest(content) if content else "",
    )
    event.hash = compute_hash(event)
    event.save(force_insert=True)
    if content:
        AuditPayload.objects.create(
            tenant=tenant,
            event=event,
            target_type=event.target_type,
            target_id=event.target_id,
            content=content,
            created_at=event.created_at,
        )
    return event


def verify_chain(tenant: Tenant) -> AuditEvent | None:
    """Return the first event whose link or content does not check out, else None.

    A detached payload that still exists must match its event's `payload_hash`;
    one that was deleted (with its session's content) leaves the chain intact.
    """
    tampered = {
        event_id
        for event_id, content, digest in AuditPayload.objects.filter(tenant=tenant)
        .values_list("event_id", "content", "event__payload_hash")
        .iterator(chunk_size=2000)
        if payload_digest(content) != digest
    }
    expected_prev, expected_seq = GENESIS_HASH, 1
    for event in AuditEvent.objects.filter(tenant=tenant).order_by("seq").iterator(chunk_size=2000):
        if (
            event.seq != expected_seq
            or event.prev_hash != expected_prev
            or compute_hash(event) != event.hash
            or event.pk in tampered
        ):
            return event
        expected_prev, expected_seq = event.hash, event.seq + 1
    return None


# Where every refusal goes, recorded in a tenant's log or not (outside tenant logs).
security_log = logging.getLogger("stateroom.security")

# The most of a requester-chosen path an `access.denied` event keeps.
DENIED_TARGET_CHARS = 128


def record_access_denied(
    *, tenant: Tenant, actor: Actor, method: str, path: str, status: int, code: str
) -> bool:
    """A security event for a refused attempt (403, or 404 on an id the caller cannot see).

    `tenant` is the requester's own (their token's, or a tenant they are a member
    of), never one they merely tried to reach: a requester cannot write into a
    log that is not theirs. In its own transaction (the refused request's was
    rolled back), at most one event per tenant, actor and
    `STATEROOM_DENIED_AUDIT_SECONDS` window, holding the first refused path
    (capped): probing 50 paths leaves one record, not 50. Every refusal goes to
    the `stateroom.security` log. Returns whether an event was written.
    """
    from django.conf import settings
    from django.core.cache import cache

    from tenancy_app.scoping import in_tenant

    target = path[:DENIED_TARGET_CHARS]
    security_log.warning(
        "access denied: %s %s %s -> %s %s", actor.label, method, target, status, code
    )
    key = (
        "audit-denied:"
        + hashlib.sha256(f"{tenant.pk}|{actor.kind}|{actor.id}".encode()).hexdigest()
    )
    window = settings.STATEROOM_DENIED_AUDIT_SECONDS
    try:
        first = cache.add(key, 1, timeout=window)
    except Exception:  # the shared cache is down: record rather than lose the event
        logger.warning("cache unavailable; recording access.denied without rate limit")
        first = True
    if not first:
        return False
    with in_tenant(tenant):
        record_event(
            tenant=tenant,
            actor=actor,
            action="access.denied",
            target_type="request",
            target_id=target,
            # Refusals by this actor in the next `window_seconds` are only in the security log.
            after={"status": status, "code": code, "method": method, "window_seconds": window},
        )
    return True


def log_not_a_member(*, actor: Actor, method: str, path: str) -> None:
    """A console request of a user in no tenant: the security log only (no tenant's log)."""
    security_log.warning(
        "access denied: %s %s %s -> 404 not_a_member",
        actor.label,
        method,
        path[:DENIED_TARGET_CHARS],
    )
