"""How big the generated data set is.

The default scale is the one the targets in bench/README.md are stated for;
`--scale small` divides every row count by 100 (and the tenant count by 10)
for a quick run. Any factor from 0.001 to 10 works (`--scale 0.1`, `--scale 10`:
10 M items, 1 M runs, 2 M audit events, 500 k checkpoints of ~10 KB — about
15 GB of disk and most of an hour on 2 cores).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

# Row counts at scale 1 (issue 8).
BASE = {
    "tenants": 100,
    "session_items": 1_000_000,
    "runs": 100_000,
    "pending_approvals": 20_000,
    "checkpoints": 50_000,
    "audit_events": 200_000,
    # Not named in the issue, chosen to make the data set look like real use.
    "sessions": 20_000,
    "timeline_items": 100_000,  # one session of the first tenant, part of session_items
    "decided_approvals": 60_000,  # decided ones outnumber pending ones, as they accumulate
    "tasks": 10_000,
    "effects": 100_000,
}

NAMED_SCALES = {"default": 1.0, "small": 0.01}


@dataclass(frozen=True)
class Scale:
    name: str
    factor: float
    tenants: int
    sessions_per_tenant: int
    items_per_session: int
    timeline_items: int
    runs_per_tenant: int
    pending_per_tenant: int
    decided_per_tenant: int
    tasks_per_tenant: int
    checkpoints_per_task: int
    audit_per_tenant: int
    effects_per_tenant: int
    # Measurement effort: timed calls per store/raw operation, per console page.
    op_iterations: int
    page_iterations: int
    load_seconds: int
    # Items in the session the deletion section deletes (default: timeline_items).
    deletion_items: int | None = None

    @classmethod
    def parse(cls, value: str) -> Scale:
        if value in NAMED_SCALES:
            name, factor = value, NAMED_SCALES[value]
        else:
            try:
                factor = float(value)
            except ValueError:
                raise SystemExit(
                    f"--scale must be one of {sorted(NAMED_SCALES)} or a factor, got {value!r}"
                ) from None
            if not 0.001 <= factor <= 10:
                raise SystemExit("--scale must be a factor from 0.001 to 10")
            name = f"{factor:g}"
        return cls.for_factor(name, factor)

    @classmethod
    def for_factor(cls, name: str, factor: float) -> Scale:
        tenants = max(2, round(BASE["tenants"] * math.sqrt(factor)))

        def per_tenant(key: str, minimum: int = 1) -> int:
            return max(minimum, round(BASE[key] * factor / tenants))

        sessions = per_tenant("sessions", 20)
        timeline = max(1000, round(BASE["timeline_items"] * factor))
        spread = max(0, round(BASE["session_items"] * factor) - timeline)
        tasks = per_tenant("tasks", 5)
        runs = max(per_tenant("runs", 50), sessions)
        pending = min(per_tenant("pending_approvals", 5), runs // 4)
        quick = factor < 0.5
        return cls(
            name=name,
            factor=factor,
            tenants=tenants,
            sessions_per_tenant=sessions,
            items_per_session=max(1, round(spread / (sessions * tenants))),
            timeline_items=timeline,
            runs_per_tenant=runs,
            pending_per_tenant=pending,
            decided_per_tenant=per_tenant("decided_approvals", 5),
            tasks_per_tenant=tasks,
            checkpoints_per_task=max(1, round(BASE["checkpoints"] * factor / (tasks * tenants))),
            audit_per_tenant=per_tenant("audit_events", 20),
            effects_per_tenant=min(per_tenant("effects", 10), runs),
            op_iterations=300 if quick else 1000,
            page_iterations=20 if quick else 50,
            load_seconds=5 if quick else 15,
        )

    def totals(self) -> dict[str, int]:
        t = self.tenants
        return {
            "tenants": t,
            "sessions": self.sessions_per_tenant * t + 2,
            "session_items": self.items_per_session * self.sessions_per_tenant * t
            + self.timeline_items,
            "timeline_session_items": self.timeline_items,
            "runs": self.runs_per_tenant * t,
            "pending_approvals": self.pending_per_tenant * t,
            "decided_approvals": self.decided_per_tenant * t,
            "tasks": self.tasks_per_tenant * t,
            "checkpoints": self.tasks_per_tenant * self.checkpoints_per_task * t,
            "audit_events": self.audit_per_tenant * t,
            "effects": self.effects_per_tenant * t,
        }

    def as_dict(self) -> dict:
        return asdict(self)
