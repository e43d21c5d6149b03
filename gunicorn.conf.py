"""gunicorn's configuration: the worker class, and hooks for the metrics (README: Running in
production, Metrics).

gunicorn reads `./gunicorn.conf.py` by default when started from the checkout
(else pass `-c /path/to/gunicorn.conf.py`); options on the command line win.

Workers keep connections open (HTTP/1.1 keep-alive): gthread workers with one
thread each, one worker per core. A runtime makes a call per step on one
pooled connection (stateroom_client), so a sync worker, which closes every
connection after its answer, made each call pay a new TCP connection and
accept. With one thread a worker still runs one request at a time (the GIL
gives more threads nothing but a longer tail), while its idle keep-alive
connections wait in the worker's poller, not in a thread. Measured side by
side in bench/README.md ("Keep-alive"). An idle connection is closed after
`keepalive` seconds: longer than the client's pool keeps one (httpx's 5 s), so
the client always gives a connection up before the server does and never sends
a request on one the server is closing.

With `PROMETHEUS_MULTIPROC_DIR` set,
every worker writes its metric values to files in that directory and /metrics adds
them up; these hooks keep that directory honest:

- at start, the files of an earlier run are removed (only prometheus_client's
  `*.db` files), so counters start from zero with the server;
- when a worker exits, its live gauges (open database connections) are dropped.

Without PROMETHEUS_MULTIPROC_DIR both hooks do nothing.
"""

import os
from pathlib import Path

worker_class = "gthread"
threads = 1
keepalive = 15
timeout = 300


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
