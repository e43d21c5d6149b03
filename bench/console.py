"""Console pages at scale: server time and SQL query count per page.

Django's test Client, in process, logged in as an admin of the first tenant,
with production settings (DEBUG off, templates cached): the time is what the
server spends on the request (middleware, view, queries, template), without
a network. Queries are counted with CaptureQueriesContext on every timed
request; a page whose count changes between requests, or between the newest
and the deepest timeline page, is flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

from .generate import Catalogue
from .scale import Scale
from .timing import Sample

P95_TARGET_MS = 150.0


@dataclass(frozen=True)
class Page:
    name: str
    path: str
    expect: str  # text the page must contain, so we time a real page and not an error


def pages(cat: Catalogue) -> list[Page]:
    base = f"/t/{cat.tenant_slug}"
    deep = 51  # items 1-50: the far end of a long timeline
    return [
        Page("approvals inbox", f"{base}/approvals/", "apr_"),
        Page("sessions list ?status=active", f"{base}/sessions/?status=active", "sess_"),
        Page(
            f"session timeline, newest page ({cat.timeline_items:,} items)",
            f"{base}/sessions/{cat.timeline_session}/",
            cat.timeline_session,
        ),
        Page(
            "session timeline, deepest page (items 1-50)",
            f"{base}/sessions/{cat.timeline_session}/?before_seq={deep}",
            cat.timeline_session,
        ),
        Page(
            "run inspector (200 events, 50 versions)",
            f"{base}/runs/{cat.inspect_run}/",
            cat.inspect_run,
        ),
        Page(
            "audit log ?action=approval.approved",
            f"{base}/audit/?action=approval.approved",
            "approval.approved",
        ),
        # Full-text search over every item of the tenant: a word in every item (the
        # newest 20 of ~all), and a phrase said in a few items only.
        Page("search, a word every item says (turn)", f"{base}/search/?q=turn", "<mark>"),
        Page(
            'search, a rare phrase ("turn 500")',
            f"{base}/search/?q=%22turn+500%22",
            "#500<",
        ),
        Page("effects queue", f"{base}/effects/", "Effects to settle"),
        Page(
            "approval history, decided",
            f"{base}/approvals/history/?tab=decided",
            "history-row",
        ),
        # Aggregates over the window (console_app.selectors.dashboard): 10 queries each (an admin).
        Page("dashboard ?range=24h", f"{base}/dashboard/?range=24h", "chart-decision-time"),
        Page("dashboard ?range=7d", f"{base}/dashboard/?range=7d", "chart-decision-time"),
        Page(
            "dashboard ?range=30d (Europe/Paris days)",
            f"{base}/dashboard/?range=30d&tz=Europe/Paris",
            "chart-decision-time",
        ),
    ]


def run(url: str, scale: Scale, cat: Catalogue, log) -> dict:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from approvals_app.tasks import refresh_rollup as refresh_approvals_rollup
    from runs_app.tasks import refresh_rollup as refresh_runs_rollup
    from sessions_app.tasks import index_items

    # Production storage needs the manifest that collectstatic writes.
    call_command("collectstatic", interactive=False, verbosity=0)
    # What the store section appended is indexed, as beat's indexer would have done within
    # a second of each append (bench/freshness.py measures that): search meets the data
    # a deployment's search meets, not a backlog of the bench's own making.
    while index_items()["total"]:
        pass
    # And the dashboard's rollups are as beat's minute jobs keep them (stateroom.rollup):
    # the generated history's quarters closed, the last minutes read from the rows.
    refresh_approvals_rollup()
    refresh_runs_rollup()
    client = Client()
    client.force_login(get_user_model().objects.get(pk=cat.user_pk))
    results = []
    for page in pages(cat):
        row: dict = {"page": page.name, "path": page.path, "target_p95_ms": P95_TARGET_MS}
        _measure(client, page, row, scale)
        log(
            f"  {page.name}: p50 {row.get('p50_ms')} ms (SQL {row.get('db_p50_ms')} ms),"
            f" p95 {row.get('p95_ms')} ms,"
            f" {row.get('queries')} queries{' ERROR ' + row['error'] if 'error' in row else ''}"
            + (f" (varying: {row['queries_varying']})" if "queries_varying" in row else "")
        )
        results.append(row)
    results += _busy(client, scale, log)
    newest, deepest = results[2], results[3]
    keyset = {
        "newest_p50_ms": newest.get("p50_ms"),
        "deepest_p50_ms": deepest.get("p50_ms"),
        "newest_queries": newest.get("queries"),
        "deepest_queries": deepest.get("queries"),
    }
    if newest.get("p50_ms") and deepest.get("p50_ms"):
        keyset["deep_over_newest"] = round(deepest["p50_ms"] / newest["p50_ms"], 2)
        # "Costs the same": same query count and within 1.5x (timer noise on a shared machine).
        keyset["met"] = (
            newest.get("queries") == deepest.get("queries") and keyset["deep_over_newest"] <= 1.5
        )
    return {"pages": results, "timeline_keyset": keyset}


def _busy(client, scale: Scale, log) -> list[dict]:
    """The busy tenant's rows (bench/busy.py); a failure is its row's error, and the other
    pages' numbers stand."""
    from .busy import measure

    try:
        return measure(client, scale, log, _measure, Page)
    except Exception as exc:
        log(f"  busy tenant: {type(exc).__name__}: {exc}")
        error = f"{type(exc).__name__}: {exc}"[:500]
        return [
            {
                "page": "dashboard, busy tenant",
                "path": "/t/bench-busy/dashboard/",
                "error": error,
                "met": False,
            }
        ]


def _measure(client, page, row: dict, scale: Scale) -> None:
    """Time `page` (after a warm-up) into `row`: latencies, SQL time and queries, bytes,
    whether it met the target; an error instead when it does not answer as expected."""
    import time
    from collections import Counter

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    try:
        for _ in range(3):  # warm-up: template loading, first connection use
            response = client.get(page.path)
        if response.status_code != 200:
            raise RuntimeError(f"answered {response.status_code}")
        if page.expect not in response.content.decode():
            raise RuntimeError(f"page does not show {page.expect!r}")
        sample = Sample()
        counts: list[int] = []
        shapes: list[list[str]] = []  # each request's statements, by their first words
        db_times: list[float] = []
        started = time.perf_counter()
        for _ in range(scale.page_iterations):
            with CaptureQueriesContext(connection) as ctx:
                t0 = time.perf_counter()
                response = client.get(page.path)
                sample.durations.append(time.perf_counter() - t0)
            counted = _page_queries([q["sql"] for q in ctx.captured_queries])
            counts.append(len(counted))
            shapes.append([" ".join(sql.split()[:3]) for sql in counted])
            db_times.append(sum(float(q["time"]) for q in ctx.captured_queries))
            if response.status_code != 200:
                raise RuntimeError(f"answered {response.status_code} while timing")
        sample.elapsed = time.perf_counter() - started
        row.update(sample.summary())
        row["db_p50_ms"] = round(Sample(db_times).p50_ms, 2)
        row["queries"] = counts[0]
        row["queries_constant"] = len(set(counts)) == 1
        if not row["queries_constant"]:  # what the odd request sent beside the first one's
            odd = next(shape for shape in shapes if len(shape) != counts[0])
            more, fewer = Counter(odd) - Counter(shapes[0]), Counter(shapes[0]) - Counter(odd)
            row["queries_varying"] = {"more": dict(more), "fewer": dict(fewer)}
        row["bytes"] = len(response.content)
        row["met"] = sample.p95_ms < P95_TARGET_MS and row["queries_constant"]
        row["sql"] = [
            {"ms": round(float(q["time"]) * 1000, 2), "sql": q["sql"][:600]}
            for q in ctx.captured_queries
        ]
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"[:500]
        row["met"] = False


def _page_queries(sqls: list[str]) -> list[str]:
    """The request's statements less the idle clock's write and the transaction it is in."""
    skip: set[int] = set()
    for i, sql in enumerate(sqls):
        if _idle_clock(sql):
            skip.add(i)
            before, after = sqls[i - 1 : i], sqls[i + 1 : i + 2]
            if before and after and before[0].startswith("BEGIN") and after[0] == "COMMIT":
                skip |= {i - 1, i + 1}
    return [sql for i, sql in enumerate(sqls) if i not in skip]


def _idle_clock(sql: str) -> bool:
    """The session's idle clock written back, at most once a minute (`SessionTimeoutMiddleware`):
    timed with the request it lands in, but not the page's own query, so not counted where
    the page's query count is held constant (it would land in whichever page is timed then)."""
    return sql.startswith("UPDATE") and '"django_session"' in sql
