"""The HTTP API under the web server: per-call latency through the Python client, and a load test.

The bench starts the web server itself (README.md's production command line
with 2 workers, production settings, on 127.0.0.1 and a free port), times the
store operations end to end through `stateroom_client.StateroomClient` (one
keep-alive httpx client, sequential calls), then drives `GET
/api/v1/sessions/<id>/items?limit=50` with `wrk` when it is installed, or
with a bounded pool of Python threads otherwise. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from .generate import Catalogue
from .scale import Scale
from .store_ops import checkpoint_state, item
from .timing import Sample, measure

ROOT = Path(__file__).resolve().parent.parent
WORKERS = 2
LOAD_TARGET = 1200.0  # req/s reading 50 items, 2 workers (issue 37; 800 in issue 17)
LOAD_P99_TARGET_MS = 25.0  # issue 37
LOAD_CONNECTIONS = 8


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_command(port: int, args: list[str]) -> list[str]:
    """A web server's command line (a `CONFIGS` entry's) bound to 127.0.0.1:`port`."""
    if args[:1] == ["gunicorn"]:
        return [sys.executable, "-m", *args, "--bind", f"127.0.0.1:{port}"]
    return [sys.executable, "-m", *args, "--host", "127.0.0.1", "--port", str(port)]


@contextmanager
def web_server(log, args: list[str] | None = None, **env: str) -> Iterator[str]:
    """A web server (`args`: a `CONFIGS` entry's; default the production one) on 127.0.0.1,
    with `env` over this process's; stopped on exit."""
    port = free_port()
    cmd = server_command(port, args or CONFIGS[0][1])
    log("  starting " + " ".join(cmd[2:]))
    errors = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-server-{port}.log"
    with errors.open("w") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, stdout=err, stderr=err)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the web server exited: {errors.read_text()[-2000:]}")
            try:
                httpx.get(f"{base}/api/v1/me", timeout=2)  # any answer (401) means ready
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the web server did not answer within 30 s") from None
                time.sleep(0.2)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        text = errors.read_text() if errors.exists() else ""
        if "Traceback" in text or "ERROR" in text:
            log(f"  web server log {errors}:\n{text[-3000:]}")


def runtime_token(cat: Catalogue) -> str:
    from stateroom.actor import Actor
    from tenancy_app.models import Tenant
    from tenancy_app.scoping import in_tenant
    from tenancy_app.store import TenancyStore

    tenant = Tenant.objects.get(pk=cat.tenant_pk)
    with in_tenant(tenant):
        _, raw = TenancyStore(tenant, Actor.system("bench")).create_token(
            name=f"bench-{uuid.uuid4().hex[:6]}"
        )
    return raw


def client_ops(client, cat: Catalogue, tag: str) -> list[tuple[str, object]]:
    sess = cat.active_sessions
    task_ids = cat.active_tasks
    run_ids = cat.running_runs
    states = [checkpoint_state(i) for i in range(16)]
    versions: dict[str, int] = {}

    def append(count: int):
        def op(i: int):
            return client.append_items(
                sess[i % len(sess)],
                [item(i, n) for n in range(count)],
                idempotency_key=f"{tag}-api-{count}-{i}-{uuid.uuid4().hex[:8]}",
            )

        return op

    def read(i: int):
        return client.get_items(sess[i % len(sess)], before_seq=2**62, limit=50)

    def cas(i: int):
        run_id = run_ids[i % len(run_ids)]
        if run_id not in versions:
            versions[run_id] = client.get_run(run_id).version
        v = versions[run_id]
        run = client.transition_run(
            run_id,
            expected_version=v,
            turn_index=v % 1000,
            token_used=v * 10,
            current_node_id=f"node-{v % 7}",
        )
        versions[run_id] = run.version
        return run

    def save(i: int):
        return client.append_checkpoint(
            task_ids[i % len(task_ids)], state=states[i % 16], schema_version=1
        )

    def load(i: int):
        return client.latest_checkpoint(task_ids[i % len(task_ids)])

    return [
        ("append 1 item", append(1)),
        ("append 10 items", append(10)),
        ("read last 50 items", read),
        ("run compare-and-set", cas),
        ("save checkpoint (~10 KB)", save),
        ("load latest checkpoint", load),
        ("record-or-return effect", _effect_op(client, run_ids, tag)),
    ]


def _effect_op(client, run_ids: list[str], tag: str):
    """Record-or-return an effect: even calls record a new key, odd calls repeat the previous
    one (half "record", half "return the existing record")."""
    keys: dict[int, str] = {}

    def effect(i: int):
        slot = i - (i % 2)
        if slot not in keys:
            keys[slot] = f"{tag}-api-{uuid.uuid4().hex}"
        return client.record_effect(
            run_ids[(i // 2) % len(run_ids)],
            idempotency_key=keys[slot],
            tool_name="send_email",
            request={"to": f"customer{i // 2}@example.com", "subject": "Your invoice"},
        )

    return effect


# --- load test -----------------------------------------------------------------

_WRK_RPS = re.compile(r"Requests/sec:\s+([\d.]+)")
_WRK_PCT = re.compile(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s)\s*$", re.M)
_WRK_TOTAL = re.compile(r"(\d+) requests in ([\d.]+)(ms|s|m)")
_WRK_NON2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")
_WRK_ERRORS = re.compile(r"Socket errors: (.*)")
_UNIT = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def load_with_wrk(url: str, token: str, seconds: int) -> dict:
    cmd = [
        "wrk",
        f"-t{min(2, LOAD_CONNECTIONS)}",
        f"-c{LOAD_CONNECTIONS}",
        f"-d{seconds}s",
        "--timeout",
        "5s",
        "--latency",
        "-H",
        f"Authorization: Bearer {token}",
        url,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30, check=True)
    text = out.stdout
    pct = {m.group(1): float(m.group(2)) * _UNIT[m.group(3)] for m in _WRK_PCT.finditer(text)}
    total = _WRK_TOTAL.search(text)
    non2xx = _WRK_NON2XX.search(text)
    errors = _WRK_ERRORS.search(text)
    return {
        "tool": f"wrk -t2 -c{LOAD_CONNECTIONS} -d{seconds}s",
        "requests": int(total.group(1)) if total else None,
        "req_per_s": float(_WRK_RPS.search(text).group(1)),
        "p50_ms": pct.get("50"),
        "p95_ms": None,  # wrk reports 50/75/90/99
        "p90_ms": pct.get("90"),
        "p99_ms": pct.get("99"),
        "non_2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": errors.group(1).strip() if errors else "",
        "raw_output": text,
    }


def load_with_threads(url: str, token: str, seconds: int, max_requests: int = 100_000) -> dict:
    """Fallback: LOAD_CONNECTIONS threads, each with its own keep-alive client, bounded."""
    durations: list[float] = []
    failures = [0]
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def worker() -> None:
        local: list[float] = []
        bad = 0
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=5) as http:
            while time.perf_counter() < stop_at and len(local) < max_requests // LOAD_CONNECTIONS:
                t0 = time.perf_counter()
                response = http.get(url)
                local.append(time.perf_counter() - t0)
                bad += response.status_code != 200
        with lock:
            durations.extend(local)
            failures[0] += bad

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(LOAD_CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    sample = Sample(durations, elapsed)
    return {
        "tool": f"python threads x{LOAD_CONNECTIONS} (wrk not installed), {seconds}s",
        "requests": sample.count,
        "req_per_s": round(sample.ops_per_s, 1),
        "p50_ms": round(sample.p50_ms, 2),
        "p95_ms": round(sample.p95_ms, 2),
        "non_2xx": failures[0],
        "socket_errors": "",
    }


def load_test(base: str, token: str, cat: Catalogue, seconds: int) -> dict:
    path = (
        f"/api/v1/sessions/{cat.timeline_session}/items"
        f"?limit=50&before_seq={cat.timeline_items + 1}"
    )
    check = httpx.get(base + path, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    if check.status_code != 200 or len(check.json().get("results", [])) != 50:
        raise RuntimeError(f"GET {path} answered {check.status_code}: {check.text[:300]}")
    if shutil.which("wrk"):
        result = load_with_wrk(base + path, token, seconds)
    else:
        result = load_with_threads(base + path, token, seconds)
    result["path"] = path
    result["target_req_per_s"] = LOAD_TARGET
    result["target_p99_ms"] = LOAD_P99_TARGET_MS
    p99 = result.get("p99_ms")
    result["met"] = (
        result["req_per_s"] >= LOAD_TARGET
        and not result["non_2xx"]
        and (p99 is None or p99 < LOAD_P99_TARGET_MS)
    )
    return result


def request_anatomy(cat: Catalogue, token: str, iterations: int = 200) -> dict:
    """Where one `GET …/items?limit=50` goes, timed in process (median ms of each piece).

    The pieces are what the request does in order: resolve the bearer token (read,
    or known to the process: what every request after a token's first does),
    open the tenant transaction, read the items through the store, serialize
    them, render JSON; `whole request` is the same GET through Django's test
    Client (all middleware, DRF, no network), then through Django's WSGI
    handler as the web server calls it (with the request signals: the connection's
    health check, no test-client work). With the database on the same 2
    cores, this CPU time is what bounds req/s.
    """
    from django.core.handlers.wsgi import WSGIHandler
    from django.test import Client

    from sessions_app.serializers import session_items_out
    from sessions_app.store import SessionStore
    from stateroom.actor import Actor
    from stateroom.renderers import ORJSONRenderer
    from tenancy_app.auth import bearer, resolve_bearer
    from tenancy_app.models import Tenant
    from tenancy_app.scoping import in_tenant

    tenant = Tenant.objects.get(pk=cat.tenant_pk)
    store = SessionStore(tenant, Actor("token", "1", "token:bench"))
    before = cat.timeline_items + 1

    def read():
        with in_tenant(tenant):
            # As the API reads them: payloads as PostgreSQL's JSON text, written as they are.
            return store.get_items(
                session_id=cat.timeline_session, limit=50, before_seq=before, raw_payload=True
            )

    def empty_transaction():
        with in_tenant(tenant):
            pass

    items = read()
    data = session_items_out(items)
    client = Client(headers={"Authorization": f"Bearer {token}"})
    path = f"/api/v1/sessions/{cat.timeline_session}/items?limit=50&before_seq={before}"
    handler = WSGIHandler()

    pieces = {
        "read a bearer token (1 query)": lambda: resolve_bearer(f"Bearer {token}"),
        # No query: its check rides on the first tenant statement (tenancy_app.auth).
        "a bearer token the process knows": lambda: bearer(f"Bearer {token}"),
        "tenant transaction (BEGIN, set_config, COMMIT)": empty_transaction,
        "store.get_items, 50 items (transaction included)": read,
        "serialize 50 items (session_items_out)": lambda: session_items_out(items),
        "render JSON": lambda: ORJSONRenderer().render({"results": data, "next": None}),
        "whole request through middleware and DRF (test Client)": lambda: client.get(path),
        "whole request through Django's WSGI handler": lambda: _wsgi_get(handler, path, token),
    }
    out = {}
    for name, fn in pieces.items():
        sample = measure(lambda _i, fn=fn: fn(), iterations=iterations, warmup=20)
        out[name] = round(sample.p50_ms, 3)
    return out


def _wsgi_get(handler, path: str, token: str) -> None:
    """GET `path` as the web server calls Django's WSGI handler; raises unless it answers 200."""
    import io

    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path.partition("?")[0],
        "QUERY_STRING": path.partition("?")[2],
        "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": io.StringIO(),
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    statuses: list[str] = []
    response = handler(environ, lambda status, headers, exc_info=None: statuses.append(status))
    b"".join(response)
    response.close()
    if not statuses[0].startswith("200"):
        raise RuntimeError(f"GET {path} through WSGI answered {statuses[0]}")


# The production command line of README.md ("Running in production") first: per-call
# latencies and the load test run against it (Granian through `stateroom.serve`: keep-alive,
# one request at a time per worker); then, load-tested for comparison, the pool README.md
# gives for deployments without a long-poll route (four threads a worker), and the
# servers it replaced: gunicorn's gthread workers with keep-alive (the production command
# before Granian) and its sync workers (every connection closed after its answer). Keep
# them in step with README.md.
_GUNICORN = ["gunicorn", "stateroom.wsgi:application", "--workers", str(WORKERS)]
CONFIGS = (
    ("Granian keep-alive", ["stateroom.serve", "--workers", str(WORKERS)]),
    (
        "Granian x4 threads",
        ["stateroom.serve", "--workers", str(WORKERS), "--blocking-threads", "4"],
    ),
    (
        "gunicorn gthread keep-alive",
        [*_GUNICORN, "--worker-class", "gthread", "--threads", "1", "--keep-alive", "15"],
    ),
    ("gunicorn sync", [*_GUNICORN, "--worker-class", "sync", "--timeout", "300"]),
)


def _load_through_pooler(log, token: str, cat: Catalogue, seconds: int) -> dict:
    """The production row's load with PgBouncer (transaction mode) between the web server and
    PostgreSQL, as README's production section sets it up (`DB_POOLER=transaction`)."""
    from . import pooler

    name, extra = CONFIGS[0]
    row = {"worker_class": name, "via": "through PgBouncer (pool_mode=transaction, DB_POOLER)"}
    try:
        with (
            pooler.pgbouncer(os.environ["DATABASE_URL"]) as pooled,
            web_server(log, extra, DATABASE_URL=pooled, DB_POOLER="transaction") as base,
        ):
            return {**row, **load_test(base, token, cat, seconds)}
    except Exception as exc:  # no pgbouncer here: the row says so, the others stand
        return {**row, "error": f"{type(exc).__name__}: {exc}"[:500]}


def run(url: str, scale: Scale, cat: Catalogue, log) -> dict:
    from stateroom_client import StateroomClient

    token = runtime_token(cat)
    tag = uuid.uuid4().hex[:6]
    name, extra = CONFIGS[0]
    result: dict = {
        "workers": WORKERS,
        "worker_class": name,
        "command": " ".join(server_command(0, extra)[2:]).replace(" 0", " <port>"),
        "client": "stateroom_client.StateroomClient (httpx, keep-alive), sequential calls",
        "operations": [],
        "loads": [],
    }
    with web_server(log, extra) as base:
        with StateroomClient(base, token, retries=0) as client:
            for op_name, op in client_ops(client, cat, tag):
                try:
                    sample = measure(
                        op, iterations=max(50, scale.op_iterations // 2), warmup=10, max_seconds=30
                    )
                    row = {"operation": op_name, **sample.summary()}
                except Exception as exc:
                    row = {"operation": op_name, "error": f"{type(exc).__name__}: {exc}"[:500]}
                log(f"  API {op_name}: {row}")
                result["operations"].append(row)
        result["loads"].append(
            {"worker_class": name, **load_test(base, token, cat, scale.load_seconds)}
        )
    for name, extra in CONFIGS[1:]:
        with web_server(log, extra) as base:
            result["loads"].append(
                {"worker_class": name, **load_test(base, token, cat, scale.load_seconds)}
            )
    result["loads"].append(_load_through_pooler(log, token, cat, scale.load_seconds))
    for load in result["loads"]:
        if "error" in load:
            log(f"  load ({load['worker_class']}): not measured: {load['error']}")
            continue
        log(
            f"  load ({load['worker_class']}): {load['req_per_s']} req/s, p50 {load['p50_ms']} ms"
            f" ({load['tool']}, non-2xx {load['non_2xx']})"
        )
    result["load"] = result["loads"][0]
    result["request_anatomy_ms"] = request_anatomy(cat, token)
    log(f"  anatomy of one GET of 50 items (p50 ms, in process): {result['request_anatomy_ms']}")
    return result
