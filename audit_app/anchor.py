"""The audit chain's head, anchored outside the table.

A hash chain shows a changed or removed row in the middle, but not the newest
rows removed from the end: the shortened chain is still a valid chain. So a
scheduled job appends each tenant's head (last `seq` and its `hash`) to a file
in `STATEROOM_AUDIT_ANCHOR_DIR` (an append-only place: a volume mounted with
`chattr +a`, or object storage with a retention lock), one JSON line per
tenant per run; `verify_audit --anchor` then checks that every anchored head
is still in the table, with the same hash.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

from .models import AuditEvent

ANCHOR_FILE = "audit-anchors.jsonl"


@dataclass(frozen=True)
class Anchor:
    tenant_id: int
    tenant: str
    seq: int
    hash: str
    at: str


def anchor_path(directory: str | os.PathLike | None = None) -> Path | None:
    directory = directory or settings.STATEROOM_AUDIT_ANCHOR_DIR
    return Path(directory) / ANCHOR_FILE if directory else None


def write_anchors(
    directory: str | os.PathLike | None = None, *, now: datetime | None = None
) -> int:
    """Append the head of every tenant's chain; how many lines were written."""
    path = anchor_path(directory)
    if path is None:
        raise RuntimeError("STATEROOM_AUDIT_ANCHOR_DIR is not set")
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = (now or timezone.now()).isoformat()
    lines = []
    for tenant in Tenant.objects.order_by("pk"):
        with in_tenant(tenant):
            head = (
                AuditEvent.objects.filter(tenant=tenant)
                .order_by("-seq")
                .values("seq", "hash")
                .first()
            )
        if head is not None:
            lines.append(
                json.dumps(
                    {
                        "tenant_id": tenant.pk,
                        "tenant": tenant.slug,
                        "seq": head["seq"],
                        "hash": head["hash"],
                        "at": stamp,
                    },
                    sort_keys=True,
                )
            )
    if lines:
        # O_APPEND: each write lands at the end, whatever else appends.
        with path.open("a", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
            out.flush()
            os.fsync(out.fileno())
    return len(lines)


def latest_anchors(directory: str | os.PathLike | None = None) -> dict[int, Anchor]:
    """The highest anchored head of each tenant (by tenant id)."""
    path = anchor_path(directory)
    found: dict[int, Anchor] = {}
    if path is None or not path.exists():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        data = json.loads(line)
        anchor = Anchor(data["tenant_id"], data["tenant"], data["seq"], data["hash"], data["at"])
        if anchor.tenant_id not in found or anchor.seq > found[anchor.tenant_id].seq:
            found[anchor.tenant_id] = anchor
    return found


def check_anchor(tenant: Tenant, anchor: Anchor) -> str | None:
    """Why the tenant's chain no longer holds its anchored head, or None. Call in_tenant."""
    event = AuditEvent.objects.filter(tenant=tenant, seq=anchor.seq).values("hash").first()
    if event is None:
        last = AuditEvent.objects.filter(tenant=tenant).order_by("-seq").values("seq").first()
        newest = last["seq"] if last else 0
        return (
            f"anchored head #{anchor.seq} (at {anchor.at}) is gone; the chain ends at "
            f"#{newest}: its newest events were deleted"
        )
    if event["hash"] != anchor.hash:
        return f"event #{anchor.seq} no longer has the hash anchored at {anchor.at}"
    return None
