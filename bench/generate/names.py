"""Names of the generated data: tenants, the bench user, predictable public ids."""

from __future__ import annotations

TIMELINE_SESSION = "sess_timeline"
INSPECT_RUN = "run_inspect"
INSPECT_TASK = "task_inspect"
BENCH_USER = "bench-admin"
TENANT_PREFIX = "bench-t"


def tenant_slug(index: int) -> str:
    return f"{TENANT_PREFIX}{index:03d}"


def pid(prefix: str, n: int) -> str:
    return f"{prefix}_{n:06d}"
