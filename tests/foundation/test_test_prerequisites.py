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
    bin_dir.mkdir()
    os.symlink(shutil.which("id"), bin_dir / "id")
    done = subprocess.run(
        ["/bin/bash", str(SCRIPT)],
        env={"PATH": str(bin_dir), "CELERY_BROKER_URL": "redis://127.0.0.1:6379/15", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def test_without_chromium_one_line_says_what_is_missing_and_how_to_get_it(tmp_path):
    [line] = run(tmp_path, STATEROOM_INSTALL_MISSING="0")
    assert line.startswith("make test: Chromium is missing, so the browser tests will skip:")
    assert "apt-get install chromium" in line and "STATEROOM_CHROMIUM=" in line


def test_with_chromium_it_says_nothing(tmp_path):
    assert run(tmp_path, STATEROOM_INSTALL_MISSING="0", STATEROOM_CHROMIUM=sys.executable) == []


def test_make_test_runs_it_before_pytest():
    dry = subprocess.run(
        ["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    steps = [line for line in dry if "test_prerequisites.sh" in line or "-m pytest" in line]
    assert [("prerequisites" in s, "pytest" in s) for s in steps] == [(True, False), (False, True)]
