"""One process walking every tenant `calls` times, as the sweeps do (`for_each_tenant`).

Run by tests/pooler/test_pooler.py, several at once, through PgBouncer in
transaction mode. Prints `<calls> <failed> <tenants seen per call>`.
"""

import sys

import django

django.setup()

from django.db import connection  # noqa: E402

from tenancy_app.jobs import for_each_tenant  # noqa: E402


def step(tenant) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('app.tenant_id')")
        assert cursor.fetchone()[0] == str(tenant.pk)
    return 0


calls, failed, seen = int(sys.argv[1]), 0, set()
for _ in range(calls):
    try:
        result = for_each_tenant(step, limit=1)
    except Exception as exc:  # what the sweep's beat task would die of
        failed += 1
        print(f"failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        continue
    failed += bool(result.errors)
    seen.add(len(result.done))
print(calls, failed, ",".join(map(str, sorted(seen))))
