"""`make demo` runs with STATEROOM_DEMO=1: DEBUG off (the product's own error pages), plain
HTTP on localhost, and a real Celery worker when Redis answers."""

import os
import socket
import subprocess
import sys
from pathlib import Path

from demo_app.live import broker_reachable, demo_broker
from tests.conftest import require_infrastructure

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import django, json
django.setup()
from django.conf import settings
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
response = Client(raise_request_exception=False).get("/no-such-page/")
print(json.dumps({
    "debug": settings.DEBUG, "status": response.status_code,
    "product_page": "There is nothing here" in response.content.decode(),
    "technical": "Technical" in response.content.decode() or "DEBUG = True" in response.content.decode(),
    "ssl_redirect": settings.SECURE_SSL_REDIRECT, "cookie_secure": settings.SESSION_COOKIE_SECURE,
    "eager": settings.CELERY_TASK_ALWAYS_EAGER,
}))
"""


def test_demo_settings_serve_the_products_404_not_djangos_debug_page():
    env = {
        k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "STATEROOM_TESTING")
    }
    env.update(STATEROOM_DEMO="1", DJANGO_SETTINGS_MODULE="stateroom.settings")
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts == {
        "debug": False,
        "status": 404,
        "product_page": True,
        "technical": False,
        "ssl_redirect": False,  # plain HTTP on localhost
        "cookie_secure": False,
        "eager": True,  # until run_demo finds Redis and starts a worker
    }


def test_the_demo_finds_redis_or_says_it_runs_jobs_inline():
    assert demo_broker().startswith("redis://")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert broker_reachable(f"redis://127.0.0.1:{port}/0", timeout=0.5) is False
    url = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    reachable = url.startswith("redis://") and broker_reachable(url)
    require_infrastructure(reachable, "needs Redis on 127.0.0.1:6379")
    assert reachable


def make_demo_addr(*args: str, env: dict[str, str] | None = None) -> str:
    """The address `make demo` would serve on (a dry run: nothing is installed or started)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PORT", "DEMO_ADDR", "MAKEFLAGS")}
    done = subprocess.run(
        ["make", "-n", "demo", *args],
        cwd=ROOT,
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        check=True,
    )
    [serve] = [line for line in done.stdout.splitlines() if "run_demo" in line]
    return serve.split("--addr ", 1)[1].strip()


def test_make_demo_takes_its_port_from_port_or_demo_addr():
    assert make_demo_addr() == "127.0.0.1:8000"
    assert make_demo_addr(env={"PORT": "8123"}) == "127.0.0.1:8123"
    assert make_demo_addr("PORT=8124") == "127.0.0.1:8124"
    assert make_demo_addr(env={"DEMO_ADDR": "0.0.0.0:9000", "PORT": "8123"}) == "0.0.0.0:9000"
