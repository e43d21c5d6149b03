"""Every shell line the README shows works as written.

Each line of a fenced `sh` block is run here, in order, from the checkout
root, against this test's database (as the app does: the app role, with the
owner role for what it needs), or is listed in NOT_RUN_HERE with the reason
and where else it is exercised. A new README line must be one or the other.
"""

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from stateroom.database import url_of

ROOT = Path(__file__).resolve().parents[2]

NOT_RUN_HERE = {
    "make demo": "serves until stopped; tests/demo covers load_demo and run_demo",
    "make test": "is what runs this test",
    'eval "$(scripts/setup_postgres.sh)"': (
        "needs a superuser of the machine's PostgreSQL; .ci/run runs it before `make test`"
    ),
}


def readme_shell_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command and not command.startswith("#"):
                lines.append(command)
    return lines


def test_the_readme_has_shell_lines_and_none_is_unaccounted_for():
    lines = readme_shell_lines()
    assert "make demo" in lines and "make test" in lines
    stale = set(NOT_RUN_HERE) - set(lines)
    assert not stale, f"NOT_RUN_HERE names lines the README no longer has: {stale}"


@pytest.mark.django_db(transaction=True)
def test_every_readme_shell_line_runs_as_written(tenant_a):
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DEBUG"}}
    env["DATABASE_URL"] = url_of(connection.settings_dict)
    env["DATABASE_OWNER_URL"] = url_of(connection.settings_dict, role=settings.DATABASE_OWNER)
    env.pop("STATEROOM_TEST_DB_SUFFIX", None)
    ran = []
    for line in readme_shell_lines():
        if line in NOT_RUN_HERE:
            continue
        result = subprocess.run(
            ["bash", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
        ran.append((shlex.split(line), result.stdout))
    assert ran, "no README line ran"
    token_lines = [out for argv, out in ran if "create_token" in argv]
    assert token_lines and all(re.fullmatch(r"sr_\S+\n", out) for out in token_lines)
