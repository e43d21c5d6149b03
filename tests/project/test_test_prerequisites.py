"""`make test` on a machine without Chromium: it installs it where it can, else says how in one line."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "test_prerequisites.sh"


def run(tmp_path: Path, **env: str) -> list[str]:
    bin_dir = tmp_path / "bin"  # a PATH with `id` and no chromium
    bin_dir.mkdir(exist_ok=True)
    os.symlink(shutil.which("id"), bin_dir / "id")
    done = subprocess.run(
        ["/bin/bash", str(SCRIPT)],
        env={"PATH": str(bin_dir), "CELERY_BROKER_URL": "redis://127.0.0.1:6379/15", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def test_without_chromium_pgbouncer_or_prometheus_one_line_each_says_what_is_missing_and_how(
    tmp_path,
):
    chromium, pgbouncer, prometheus = run(
        tmp_path,
        STATEROOM_INSTALL_MISSING="0",
        STATEROOM_PGBOUNCER=str(tmp_path / "none"),
        STATEROOM_PROMETHEUS=str(tmp_path / "none"),
    )
    assert chromium.startswith("make test: Chromium is missing, so the browser tests will skip:")
    assert "apt-get install chromium" in chromium and "STATEROOM_CHROMIUM=" in chromium
    assert pgbouncer.startswith("make test: PgBouncer is missing, so the pooler tests will skip:")
    assert "apt-get install pgbouncer" in pgbouncer
    assert prometheus.startswith(
        "make test: Prometheus is missing, so the metrics scrape test will skip:"
    )
    assert "apt-get install prometheus" in prometheus and "STATEROOM_PROMETHEUS=" in prometheus


def test_with_both_it_says_nothing(tmp_path):
    lines = run(
        tmp_path,
        STATEROOM_INSTALL_MISSING="0",
        STATEROOM_CHROMIUM=sys.executable,
        STATEROOM_PGBOUNCER=shutil.which("true"),
        STATEROOM_PROMETHEUS=shutil.which("true"),
    )
    assert lines == []


def test_make_test_runs_it_before_pytest():
    dry = subprocess.run(
        ["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    steps = [line for line in dry if "test_prerequisites.sh" in line or "-m pytest" in line]
    assert [("prerequisites" in s, "pytest" in s) for s in steps] == [(True, False), (False, True)]
