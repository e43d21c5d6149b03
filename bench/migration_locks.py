"""How long issue 38's key migrations lock a populated database (docs/scaling.md).

    python -m bench.migration_locks [--scale small|default|<fraction>]

Creates `<app database>_keys` (dropped first), migrates it to the schema before
the tenant-key migrations, loads the bench's data set at the scale asked, then
runs those migrations, timing every statement they send. They run with
`atomic = False`: each statement is its own transaction, so a statement's
time is the time it holds its locks. The statements are told apart by the lock
PostgreSQL documents for them:

- blocking (reads or writes of the table wait): `ALTER TABLE … ADD/DROP
  CONSTRAINT` (the foreign keys NOT VALID, Django dropping its one-column
  foreign keys, the primary key and unique swaps `USING INDEX`);
- not blocking: `CREATE UNIQUE INDEX CONCURRENTLY` and `VALIDATE CONSTRAINT`
  (SHARE UPDATE EXCLUSIVE: reads and writes go on while they scan).

Prints each kind's longest statement and the total, and the longest blocking one.
"""

from __future__ import annotations

import argparse
import time

from .database import bench_database, ensure_database
from .scale import Scale

# The last migration of each app before the tenant keys (issue 38).
BEFORE = {
    "tenancy_app": "0009_sso",
    "audit_app": "0004_security_notice",
    "sessions_app": "0008_force_rls_item_search",
    "tasks_app": "0004_task_langgraph_thread_id",
    "runs_app": "0007_run_now",
    "approvals_app": "0012_metrics_backlog",
    "effects_app": "0002_initial",
    "lifecycle_app": "0001_initial",
    "notifications_app": "0001_initial",
    "outbox_app": "0003_metrics_depth",
}


def kind(sql: str) -> str:
    text = " ".join(sql.split()).upper()
    if text.startswith("CREATE UNIQUE INDEX CONCURRENTLY"):
        return "index built concurrently (not blocking)"
    if "VALIDATE CONSTRAINT" in text:
        return "foreign key validated (not blocking)"
    if "ALTER TABLE" in text or text.startswith("DO "):
        return "constraint change (blocking)"
    return "other (catalog reads, Django's bookkeeping)"


class Timer:
    def __init__(self) -> None:
        self.statements: list[tuple[float, str]] = []

    def __call__(self, execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.statements.append((time.perf_counter() - start, sql))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small")
    args = parser.parse_args(argv)
    scale = Scale.parse(args.scale)
    import dataclasses
    import os

    base = bench_database()
    database = dataclasses.replace(
        base,
        url=base.url.rsplit("/", 1)[0] + f"/{base.name}_keys",
        owner_url=base.owner_url.rsplit("/", 1)[0] + f"/{base.name}_keys",
    )
    ensure_database(database, recreate=True)
    from .__main__ import configure_django, log

    configure_django(database)
    from django.core.management import call_command
    from django.db import connections
    from django.db.backends.signals import connection_created

    from . import generate

    for app in ("contenttypes", "auth", "admin", "sessions", "axes", "otp_totp"):
        call_command("migrate", app, verbosity=0, interactive=False)
    for app, name in BEFORE.items():
        call_command("migrate", app, name, verbosity=0, interactive=False)
    log(f"scale {scale.name}: {scale.totals()}")
    info = generate.generate(database.url, scale, log, owner_url=database.owner_url)
    log(f"data set loaded in {info['load_seconds']} s: {generate.row_counts(database.url)}")
    timer = Timer()

    def install(sender, connection, **kwargs):
        if timer not in connection.execute_wrappers:
            connection.execute_wrappers.append(timer)

    connection_created.connect(install, weak=False)
    for connection in connections.all():
        install(None, connection)
    started = time.perf_counter()
    call_command("migrate", verbosity=1, interactive=False)
    total = time.perf_counter() - started
    by_kind: dict[str, list[tuple[float, str]]] = {}
    for seconds, sql in timer.statements:
        by_kind.setdefault(kind(sql), []).append((seconds, sql))
    print(f"\nscale {scale.name} ({os.environ.get('DATABASE_URL', '').rsplit('/', 1)[-1]}):")
    print(f"the migrations took {total:.2f} s, {len(timer.statements)} statements")
    for name, rows in sorted(by_kind.items()):
        seconds, sql = max(rows)
        print(
            f"- {name}: {len(rows)}, {sum(s for s, _ in rows):.3f} s in all,"
            f" longest {seconds * 1000:.1f} ms: {' '.join(sql.split())[:160]}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
