"""Prometheus metrics: every definition lives here, on the bottom floor, so any app may count.

Through `prometheus_client` (pyproject.toml says why not django-prometheus). With
`PROMETHEUS_MULTIPROC_DIR` set (stateroom.serve empties it at start), each worker
writes its values to files there and `/metrics` (`stateroom.metrics_view`) adds them
up across the workers; without it, the process's own registry is served.

Labels are bounded: a route is the URL pattern's name (never the path), a status
an HTTP code, a risk one of four, an outcome one of five, a task a task's name. No
id ever; a tenant's slug only with `STATEROOM_METRICS_TENANT_LABELS=1` (else the
`tenant` label is empty, which Prometheus drops).

What only the database knows (the pending backlog, the outbox) is read at scrape
time: apps register a source (`register_source`) in their AppConfig.ready(), each a
narrow SECURITY DEFINER function of theirs that answers across tenants.
"""

from __future__ import annotations

import os
import re
import threading
import weakref
from collections.abc import Callable, Iterable
from datetime import datetime

from django.conf import settings
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

# A metric below without labels writes its file at once: the shared directory must exist
# (whatever started this process, the first one to get here makes it).
if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)

METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
UNMATCHED = "unmatched"  # no URL pattern matched (a 404 on an unknown path)

HTTP_REQUESTS = Counter(
    "stateroom_http_requests_total",
    "HTTP requests answered, by route (URL pattern name), method and status.",
    ["route", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "stateroom_http_request_duration_seconds",
    "Time from the first middleware to the response, by route and method.",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
APPROVALS_ENDED = Counter(
    "stateroom_approvals_ended_total",
    "Approvals that ended (committed), by outcome and risk.",
    ["outcome", "risk", "tenant"],
)
DECISION_LATENCY = Histogram(
    "stateroom_approval_decision_seconds",
    "From an approval's request to a person's decision (approved or rejected), by risk.",
    ["risk", "tenant"],
    buckets=(5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400),
)
CELERY_TASKS = Counter(
    "stateroom_celery_tasks_total",
    "Celery task results, by task name and state (success, failure, retry).",
    ["task", "state"],
)
DB_CONNECTIONS = Gauge(
    "stateroom_db_connections_open",
    "PostgreSQL connections this process holds open (one per serving thread at most).",
    multiprocess_mode="livesum",
)

# What a source returns: metric families, read from the database at scrape time.
Source = Callable[[], Iterable[Metric]]
_sources: dict[str, Source] = {}


def register_source(name: str, source: Source) -> None:
    """An app's scrape-time reader (its AppConfig.ready()); one per name."""
    _sources[name] = source


def sources() -> dict[str, Source]:
    return dict(_sources)


def tenant_label(slug: str) -> str:
    """The tenant's slug as a label value, only when configured; else empty (no label)."""
    return slug if settings.STATEROOM_METRICS_TENANT_LABELS else ""


def depth_gauges(
    name: str,
    doc: str,
    rows: Iterable[tuple],
    *,
    labels: tuple[str, ...] = (),
    keys: Iterable[tuple[str, ...]] = ((),),
    now: datetime,
) -> list[Metric]:
    """`name` (how many wait) and `name_oldest_age_seconds` (how long the oldest has),
    from rows `(tenant_slug, *label values, count, oldest)`. Tenants are added up unless
    tenant labels are on; every key of `keys` is there, at 0 when nothing waits."""
    totals: dict[tuple[str, ...], list] = {}
    if not settings.STATEROOM_METRICS_TENANT_LABELS:
        totals = {(*key, ""): [0, None] for key in keys}
    for slug, *values, count, oldest in rows:
        entry = totals.setdefault((*values, tenant_label(slug)), [0, None])
        entry[0] += count
        entry[1] = oldest if entry[1] is None else min(entry[1], oldest)
    count_family = GaugeMetricFamily(name, doc, labels=[*labels, "tenant"])
    age_family = GaugeMetricFamily(
        f"{name}_oldest_age_seconds",
        f"Age of the oldest of them (0 when none). {doc}",
        labels=[*labels, "tenant"],
    )
    for key, (count, oldest) in sorted(totals.items()):
        count_family.add_metric(list(key), count)
        age = max((now - oldest).total_seconds(), 0.0) if oldest is not None else 0.0
        age_family.add_metric(list(key), age)
    return [count_family, age_family]


def count_request(route: str, method: str, status: int, seconds: float) -> None:
    method = method if method in METHODS else "other"
    HTTP_REQUESTS.labels(route=route, method=method, status=str(status)).inc()
    HTTP_LATENCY.labels(route=route, method=method).observe(seconds)


def approval_ended(
    *,
    outcome: str,
    risk: str,
    tenant_slug: str,
    created_at: datetime | None,
    decided_at: datetime | None,
) -> None:
    """An approval's end, once committed (the store calls it from `transaction.on_commit`)."""
    tenant = tenant_label(tenant_slug)
    APPROVALS_ENDED.labels(outcome=outcome, risk=risk, tenant=tenant).inc()
    if outcome in {"approved", "rejected"} and created_at and decided_at:
        waited = max((decided_at - created_at).total_seconds(), 0.0)
        DECISION_LATENCY.labels(risk=risk, tenant=tenant).observe(waited)


def celery_task_done(task_name: str, state: str) -> None:
    CELERY_TASKS.labels(task=task_name or "unknown", state=state).inc()


# --- Database connections -------------------------------------------------------------
# Django opens one connection per thread (DB_CONN_MAX_AGE keeps it between requests);
# each wrapper that ever connected is watched here, so any thread can count them.
_wrappers: weakref.WeakSet = weakref.WeakSet()
_wrappers_lock = threading.Lock()


def connection_created(connection) -> None:
    with _wrappers_lock:
        _wrappers.add(connection)
    update_connections()


def update_connections() -> None:
    with _wrappers_lock:
        open_now = sum(1 for wrapper in _wrappers if wrapper.connection is not None)
    DB_CONNECTIONS.set(open_now)


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


# A live gauge's file: `gauge_livesum_<pid>.db` (prometheus_client's naming).
_LIVE_GAUGE = re.compile(r"gauge_live[a-z]+_(\d+)\.db")


def drop_dead_processes(directory: str) -> list[int]:
    """Forget the live gauges (open connections) of processes that are gone; the pids dropped.

    A worker that exits leaves its files: its counters and histograms still count (a
    counter never goes back), but its live gauges must not. Done here, at scrape time,
    whoever started the worker and however it ended (a crash, a respawn, a server
    killed before it could run an exit hook).
    """
    from prometheus_client import multiprocess

    dropped = []
    for name in os.listdir(directory):
        found = _LIVE_GAUGE.fullmatch(name)
        if found is None:
            continue
        pid = int(found.group(1))
        if not _alive(pid):
            multiprocess.mark_process_dead(pid, directory)
            dropped.append(pid)
    return dropped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def registry() -> CollectorRegistry:
    """What `/metrics` serves: every worker's values (multiprocess) or this process's,
    and the database's numbers read now."""
    from prometheus_client import REGISTRY, multiprocess

    update_connections()
    directory = multiprocess_dir()
    if directory:
        drop_dead_processes(directory)
        served = CollectorRegistry()
        multiprocess.MultiProcessCollector(served)
    else:
        served = CollectorRegistry()
        served.register(_Forward(REGISTRY))
    served.register(_DatabaseCollector())
    return served


class _Forward:
    """The process's own registry, served beside the database collector."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        return self._registry.collect()


class _DatabaseCollector:
    """Calls each registered source at scrape time (a few bounded queries in all)."""

    def collect(self) -> Iterable[Metric]:
        for source in sources().values():
            yield from source()


def connect_celery_signals() -> None:
    """Count each task's result (in the worker, or inline in the web process when eager)."""
    from celery.signals import task_failure, task_retry, task_success

    def name_of(sender) -> str:
        return getattr(sender, "name", None) or str(sender or "")

    def on_success(sender=None, **kwargs) -> None:
        celery_task_done(name_of(sender), "success")

    def on_failure(sender=None, **kwargs) -> None:
        celery_task_done(name_of(sender), "failure")

    def on_retry(sender=None, request=None, **kwargs) -> None:
        # task_retry's sender is the task's request; the task name is on it.
        celery_task_done(getattr(request, "task", None) or name_of(sender), "retry")

    task_success.connect(on_success, weak=False, dispatch_uid="stateroom.metrics.success")
    task_failure.connect(on_failure, weak=False, dispatch_uid="stateroom.metrics.failure")
    task_retry.connect(on_retry, weak=False, dispatch_uid="stateroom.metrics.retry")
