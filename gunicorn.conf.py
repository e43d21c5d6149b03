"""gunicorn's configuration hooks for the metrics (README: Running in production, Metrics).

gunicorn reads `./gunicorn.conf.py` by default when started from the checkout
(else pass `-c /path/to/gunicorn.conf.py`). With `PROMETHEUS_MULTIPROC_DIR` set,
every worker writes its metric values to files in that directory and /metrics adds
them up; these hooks keep that directory honest:

- at start, the files of an earlier run are removed (only prometheus_client's
  `*.db` files), so counters start from zero with the server;
- when a worker exits, its live gauges (open database connections) are dropped.

Without PROMETHEUS_MULTIPROC_DIR both hooks do nothing.
"""

import os
from pathlib import Path


def on_starting(server):
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        return
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink(missing_ok=True)


def child_exit(server, worker):
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
