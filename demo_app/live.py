"""What keeps the demo alive beside the console: the agent runtime process and a small beat.

- `runtime_tokens()` gives the runtime one fresh runtime token per demo tenant
  (through `TenancyStore`, audited), revoking the ones an earlier demo run made.
- `start_runtime()` starts `python -m demo_app.runtime` with those tokens in its
  environment (never on its command line); it stops when the console stops.
- `start_beat()` runs the periodic sweeps of `CELERY_BEAT_SCHEDULE` (lease and
  approval expiry, overdue runs) in a thread, since the demo runs Celery tasks
  eagerly and has no beat process.
"""

from __future__ import annotations

import atexit
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.utils.module_loading import import_string

from audit_app.actor import Actor
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

    thread = threading.Thread(target=beat, name="demo-beat", daemon=True)
    thread.start()
    atexit.register(stop.set)
    return thread
