import os
import subprocess
import sys
from pathlib import Path

from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


def test_migrations_are_complete(db):
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_check_deploy_with_production_settings_is_clean():
    env = {
        k: v
        for k, v in os.environ.items()
        # Browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process; production never does.
        if k
        not in {"DEBUG", "STATEROOM_TESTING", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    env.update(
        DJANGO_SETTINGS_MODULE="stateroom.settings",
        SECRET_KEY="x" * 64 + "-production-like-secret-key-for-check",
        ALLOWED_HOSTS="stateroom.example.com",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_settings_refuse_to_start_without_secret_key_in_production():
    env = {
        k: v for k, v in os.environ.items() if k not in {"DEBUG", "STATEROOM_TESTING", "SECRET_KEY"}
    }
    env["DJANGO_SETTINGS_MODULE"] = "stateroom.settings"
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_htmx_is_vendored_at_a_pinned_2x_version():
    vendored = list((ROOT / "static" / "vendor").glob("htmx-*.min.js"))
    assert [p.name for p in vendored] == ["htmx-2.0.11.min.js"]
    assert 'version:"2.0.11"' in vendored[0].read_text()
