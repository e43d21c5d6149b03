"""The web edge: caching of authenticated answers, cookie names, session lifetime."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from django.test import Client

from stateroom.edge import AUTH_AT, SEEN_AT
from tests.conftest import login
from tests.infra import ROOT


def test_authenticated_answers_are_no_store_and_anonymous_ones_are_not(api_a, admin_a, tenant_a):
    api = api_a.get("/api/v1/me")
    assert "no-store" in api["Cache-Control"]
    assert "private" in api["Cache-Control"]
    refused = api_a.get("/api/v1/sessions/nope")
    assert refused.status_code == 404 and "no-store" in refused["Cache-Control"]
    page = login(admin_a).get("/t/acme/")
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    assert "Cache-Control" not in Client().get("/healthz")


def production_setting(*names: str) -> list[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DEBUG", "STATEROOM_TESTING", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(
        DJANGO_SETTINGS_MODULE="stateroom.settings",
        SECRET_KEY="x" * 64,
        ALLOWED_HOSTS="stateroom.example.com",
    )
    code = (
        "import django; django.setup(); from django.conf import settings;"
        f" print(*[getattr(settings, n) for n in {list(names)!r}], sep='|')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip().split("|")


def test_production_cookies_are_host_prefixed_secure_and_short_lived():
    assert production_setting(
        "SESSION_COOKIE_NAME",
        "CSRF_COOKIE_NAME",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SESSION_COOKIE_AGE",
        "STATEROOM_SESSION_IDLE_SECONDS",
    ) == ["__Host-sessionid", "__Host-csrftoken", "True", "True", "43200", "1800"]


def test_a_session_idle_too_long_is_logged_out(admin_a, tenant_a, settings):
    client = login(admin_a)
    assert client.get("/t/acme/").status_code == 200
    session = client.session
    assert session[AUTH_AT] == session[SEEN_AT]  # the clock starts at the login
    session[SEEN_AT] = time.time() - settings.STATEROOM_SESSION_IDLE_SECONDS - 1
    session.save()
    response = client.get("/t/acme/")
    assert (response.status_code, response["Location"]) == (302, "/login/?next=/t/acme/")
    assert "_auth_user_id" not in client.session


def test_a_session_ends_after_its_absolute_lifetime_however_active(admin_a, tenant_a, settings):
    client = login(admin_a)
    session = client.session
    session[AUTH_AT] = time.time() - settings.STATEROOM_SESSION_MAX_SECONDS - 1
    session[SEEN_AT] = time.time()  # active a moment ago
    session.save()
    htmx = client.get("/t/acme/", headers={"HX-Request": "true"})
    assert (htmx.status_code, htmx["HX-Redirect"]) == (204, "/login/")
    assert client.get("/t/acme/").status_code == 302


def test_activity_moves_the_idle_clock_at_most_once_a_minute(admin_a, tenant_a):
    client = login(admin_a)
    session = client.session
    seen = time.time() - 30
    session[SEEN_AT] = seen
    session.save()
    client.get("/t/acme/")
    assert client.session[SEEN_AT] == seen  # no session write for 30 s of activity
    session = client.session
    session[SEEN_AT] = time.time() - 90
    session.save()
    client.get("/t/acme/")
    assert time.time() - client.session[SEEN_AT] < 5
