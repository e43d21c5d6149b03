"""`python -m stateroom.serve [granian options]`: the production web server (README: Running
in production).

Granian serves `stateroom.wsgi:application` over WSGI. Its HTTP/1.1 connections stay
open between calls (a runtime makes a call per step on one pooled connection), and
their reading, parsing and writing happen in Granian's own (Rust) threads, outside the
GIL: each worker process runs the application in one Python thread, one request at a
time, while its other connections wait in Granian's I/O loop. Measured against
gunicorn's workers on the bench's 2 cores (bench/README.md, "Issue 37, fifth
round"): more requests a second, a shorter tail, and less server CPU per call.

The options below are the project's defaults; any option given after the module
(`--workers`, `--host`, `--port`, `--blocking-threads`, ...) is Granian's own and wins.
Before Granian starts, the metrics directory (`PROMETHEUS_MULTIPROC_DIR`) is made and
emptied of an earlier run's files, so the counters start from zero with the server (a
worker that exits later is dropped from the live gauges at scrape time:
`stateroom.metrics.drop_dead_processes`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APPLICATION = "stateroom.wsgi:application"
DEFAULTS = (
    "--interface",
    "wsgi",
    "--http",
    "1",  # behind a proxy that speaks HTTP/1.1
    "--blocking-threads",
    "1",  # one request at a time per worker: more threads add only the GIL's waits
    "--respawn-failed-workers",  # a worker that dies is replaced, not the server stopped
    "--workers-kill-timeout",
    "30",  # on SIGTERM, requests under way get this long to finish
    "--no-ws",
)


def command(options: list[str]) -> list[str]:
    """Granian's command line: the defaults, then `options` (the later option wins)."""
    return [sys.executable, "-m", "granian", *DEFAULTS, *options, APPLICATION]


def empty_metrics_dir() -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        return
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):  # prometheus_client's files only
        stale.unlink(missing_ok=True)


def main(options: list[str]) -> None:
    empty_metrics_dir()
    argv = command(options)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
