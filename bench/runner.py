"""Runs the measurement sections in one process and collects their results."""

from __future__ import annotations

import importlib
import json
import os
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime

from .database import connect
from .scale import Scale

MARKER_TABLE = "bench_dataset"
# The sections in the order they run, and the module of each whose name differs.
SECTION_ORDER = (
    "store", "freshness", "binding", "api", "console", "deletion", "langgraph", "agents",
    "routing", "notifications",
)  # fmt: skip
SECTION_MODULES = {"store": "store_ops"}


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
    for name in SECTION_ORDER:
        if name not in sections:
            continue
        module = importlib.import_module(f".{SECTION_MODULES.get(name, name)}", __package__)
        extra = (workers,) if name == "notifications" else ()
        results["sections"][name] = _section(
            name, lambda m=module, extra=extra: m.run(url, scale, cat, log, *extra), log
        )
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    json.dumps(results, default=str)  # fail here, not after the run, if something is not JSON
    return results
