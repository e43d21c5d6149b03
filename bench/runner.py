"""Runs the measurement sections in one process and collects their results."""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime

from .database import connect
from .scale import Scale

MARKER_TABLE = "bench_dataset"


def dataset_marker(url: str) -> dict | None:
    """What data set the bench database holds (a bench-only table, not an app table)."""
    with connect(url) as conn:
        exists = conn.execute("SELECT to_regclass(%s)", [MARKER_TABLE]).fetchone()[0]
        if exists is None:
            return None
        row = conn.execute(
            f"SELECT info FROM {MARKER_TABLE} ORDER BY created_at DESC LIMIT 1"
        ).fetchone()
    return row[0] if row else None


def write_marker(url: str, scale: Scale, info: dict) -> None:
    from psycopg.types.json import Jsonb

    payload = {
        "scale": scale.name,
        "factor": scale.factor,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **info,
    }
    # The app role may not create tables: the owner keeps the bench's marker
    # (the app role reads it through the owner's default grants).
    with connect(os.environ.get("DATABASE_OWNER_URL") or url) as conn:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (created_at timestamptz NOT NULL DEFAULT now(), info jsonb NOT NULL)"
        )
        conn.execute(f"INSERT INTO {MARKER_TABLE} (info) VALUES (%s)", [Jsonb(payload)])


def _section(name: str, fn: Callable[[], dict], log: Callable[[str], None]) -> dict:
    log(f"section {name} ...")
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        result = fn()
    except Exception as exc:  # a broken section must not hide the others' numbers
        log(f"section {name} FAILED: {exc!r}")
        result = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    result["seconds"] = round(time.perf_counter() - started, 1)
    # Other work on the machine skews every number: say how busy it was.
    result["load_average_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    log(f"section {name} done in {result['seconds']} s")
    return result


def run(url: str, scale: Scale, dataset: dict, sections: list[str], log, workers=None) -> dict:
    from . import generate, report

    cat = generate.catalogue(url, scale)
    results: dict = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "scale": scale.as_dict(),
        "dataset": dataset,
        "machine": report.machine(url),
        "sections": {},
    }
    if "store" in sections:
        from . import store_ops

        results["sections"]["store"] = _section(
            "store", lambda: store_ops.run(url, scale, cat, log), log
        )
    if "binding" in sections:
        from . import binding

        results["sections"]["binding"] = _section(
            "binding", lambda: binding.run(url, scale, cat, log), log
        )
    if "api" in sections:
        from . import api

        results["sections"]["api"] = _section("api", lambda: api.run(url, scale, cat, log), log)
    if "console" in sections:
        from . import console

        results["sections"]["console"] = _section(
            "console", lambda: console.run(url, scale, cat, log), log
        )
    if "deletion" in sections:
        from . import deletion

        results["sections"]["deletion"] = _section(
            "deletion", lambda: deletion.run(url, scale, cat, log), log
        )
    if "langgraph" in sections:
        from . import langgraph

        results["sections"]["langgraph"] = _section(
            "langgraph", lambda: langgraph.run(url, scale, cat, log), log
        )
    if "freshness" in sections:
        from . import freshness

        results["sections"]["freshness"] = _section(
            "freshness", lambda: freshness.run(url, scale, cat, log), log
        )
    if "routing" in sections:
        from . import routing

        results["sections"]["routing"] = _section(
            "routing", lambda: routing.run(url, scale, cat, log), log
        )
    if "notifications" in sections:
        from . import notifications

        results["sections"]["notifications"] = _section(
            "notifications", lambda: notifications.run(url, scale, cat, log, workers), log
        )
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    json.dumps(results, default=str)  # fail here, not after the run, if something is not JSON
    return results
