"""What keeps the demo alive beside the console: the agent runtime process and a small beat.

- `runtime_tokens()` gives the runtime one fresh runtime token per demo tenant
  (through `TenancyStore`, audited), revoking the ones an earlier demo run made.
- `start_runtime()` starts `python -m demo_app.runtime` with those tokens in its
  environment (never on its command line); it stops when the console stops.
- `start_worker()` runs a real Celery worker on Redis (127.0.0.1:6379 unless
  `CELERY_BROKER_URL` names another), so content deletion runs in the
  background and its progress can be watched; when no Redis answers, jobs run
  inline in the web process (eager) and the demo says so.
- `start_beat()` runs the periodic sweeps of `CELERY_BEAT_SCHEDULE` (lease and
  approval expiry, overdue runs) in a thread, as idempotent task calls in the
  web process (the demo has no beat process).
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection
from django.utils.module_loading import import_string

from stateroom.actor import Actor
from tenancy_app.models import RuntimeToken, Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore

from .data import DEMO_TENANTS

log = logging.getLogger(__name__)
# Read by demo_app.runtime, which does not import Django (nor this module).
TOKENS_ENV = "STATEROOM_DEMO_TOKENS"
RUNTIME_TOKEN_NAME = "demo-runtime"
BEAT_EVERY = 30.0
# Sweeps worth running while someone watches; retention runs daily in production.
BEAT_MAX_SCHEDULE = 3600.0


def runtime_tokens() -> dict[str, str]:
    """{tenant slug: raw runtime token} for the demo tenants that exist; older ones revoked."""
    tokens = {}
    for slug, _ in DEMO_TENANTS:
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:  # load_demo has not run
            continue
        with in_tenant(tenant):
            store = TenancyStore(tenant, Actor.system("demo"))
            stale = RuntimeToken.objects.filter(
                tenant=tenant, name=RUNTIME_TOKEN_NAME, revoked_at__isnull=True
            ).values_list("pk", flat=True)
            for token_id in list(stale):
                store.revoke_token(token_id=token_id, reason="A new demo runtime started.")
            _, raw = store.create_token(name=RUNTIME_TOKEN_NAME)
        tokens[slug] = raw
    return tokens


def local_url(addr: str) -> str:
    """The URL the runtime uses to reach `runserver addr`."""
    host, _, port = addr.rpartition(":")
    if not host or host in ("0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"
    return f"http://{host}:{port or addr}"


def start_runtime(url: str, tokens: dict[str, str], *, cap: int = 12) -> subprocess.Popen:
    env = {**os.environ, TOKENS_ENV: ",".join(f"{slug}={raw}" for slug, raw in tokens.items())}
    process = subprocess.Popen(
        [sys.executable, "-m", "demo_app.runtime", "--url", url, "--cap", str(cap)],
        cwd=Path(settings.BASE_DIR),
        env=env,
    )

    def stop() -> None:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()

    atexit.register(stop)
    return process


DEMO_BROKER = "redis://127.0.0.1:6379/0"


def demo_broker() -> str:
    """The broker the demo's worker uses: `CELERY_BROKER_URL` if it names Redis, else local Redis."""
    configured = os.environ.get("CELERY_BROKER_URL", "")
    return configured if configured.startswith("redis://") else DEMO_BROKER


def broker_reachable(url: str, timeout: float = 1.0) -> bool:
    """True if a Redis server answers PING at `url` (loopback or wherever it points)."""
    parts = urlsplit(url)
    try:
        with socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or 6379), timeout=timeout
        ) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def start_worker(broker_url: str) -> subprocess.Popen:
    """A Celery worker process on `broker_url`; this process sends its jobs there from now on.

    It stops when the demo stops.
    """
    from stateroom.celery import app

    app.conf.update(broker_url=broker_url, task_always_eager=False)
    env = {
        **os.environ,
        "CELERY_BROKER_URL": broker_url,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "STATEROOM_DEMO": "1",
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "stateroom",
            "worker",
            "--loglevel",
            "warning",
            "--concurrency",
            "1",
            "--without-gossip",
            "--without-mingle",
            "--hostname",
            f"demo-{os.getpid()}@%h",
        ],
        cwd=Path(settings.BASE_DIR),
        env=env,
    )
    atexit.register(_stop, process)
    return process


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def run_sweeps() -> None:
    """One round of the periodic sweeps (each is an idempotent Celery task, run inline)."""
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        if float(entry["schedule"]) > BEAT_MAX_SCHEDULE:
            continue
        try:
            import_string(entry["task"])()
        except Exception:
            log.exception("demo beat: %s failed", entry["task"])
        finally:
            connection.close()


def start_beat(every: float = BEAT_EVERY) -> threading.Thread:
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            run_sweeps()

    def indexer() -> None:
        # Search keeps up with the agents as beat's 0.5 s `index-items` would.
        from sessions_app.tasks import index_items

        while not stop.wait(settings.STATEROOM_SEARCH_INDEX_INTERVAL):
            try:
                index_items()
            except Exception:
                log.exception("demo beat: index_items failed")
            finally:
                connection.close()

    thread = threading.Thread(target=beat, name="demo-beat", daemon=True)
    thread.start()
    threading.Thread(target=indexer, name="demo-indexer", daemon=True).start()
    atexit.register(stop.set)
    return thread
