"""Realistic data, loaded fast and through row-level security.

Rows are made by PostgreSQL itself (`INSERT ... SELECT ... generate_series`),
one transaction per tenant with `app.tenant_id` set, because the bench
connects as the application role and FORCE ROW LEVEL SECURITY applies to it
(PostgreSQL refuses `COPY FROM` into a table with row-level security, so the
audit chain, which Python must hash, is COPYed into a temporary table first
and moved with one `INSERT ... SELECT`). Two connections load tenants in
parallel.

Audit events form a valid hash chain per tenant (`compute_hash` of
audit_app.services), so `manage.py verify_audit` passes on the bench
database.

Public ids are predictable (`sess_000042`, `run_000007`, `task_000003`,
`apr_000001`) so the measurements can pick objects of a known kind: see
`Catalogue`.

The modules, by what they make: `sql` (the tables, `insert_select`), `names`
(tenants, the bench user, the ids), `sessions` (and their items), `tasks` (and
checkpoints), `runs` (and their attachments, history, refused deletions),
`approvals` (and effects), `audit` (the hash chains), `load` (the whole data
set, phase by phase), `deletion` (the session a deletion measurement
deletes), `inventory` (what the measurements find in it, row counts).
"""

from .audit import audit_rows
from .deletion import create_deletion_session
from .inventory import Catalogue, catalogue, row_counts
from .load import CHUNKS, PHASES, generate, load_tenant_rows
from .names import (
    BENCH_USER,
    INSPECT_RUN,
    INSPECT_TASK,
    TENANT_PREFIX,
    TIMELINE_SESSION,
    pid,
    tenant_slug,
)
from .sql import insert_select, tables

__all__ = [
    "BENCH_USER",
    "CHUNKS",
    "INSPECT_RUN",
    "INSPECT_TASK",
    "PHASES",
    "TENANT_PREFIX",
    "TIMELINE_SESSION",
    "Catalogue",
    "audit_rows",
    "catalogue",
    "create_deletion_session",
    "generate",
    "insert_select",
    "load_tenant_rows",
    "pid",
    "row_counts",
    "tables",
    "tenant_slug",
]
