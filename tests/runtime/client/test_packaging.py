"""stateroom-client is a distribution of its own: its wheel carries the client and nothing of the server.

An agent runtime installs the client, not Stateroom: the wheel built from
stateroom_client/pyproject.toml must depend on httpx alone (the SDK adapters
behind extras), hold only the `stateroom_client` package with its `py.typed`,
and install into an empty environment without Django, Celery, psycopg or
a web server.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[3] / "stateroom_client"
SERVER_ONLY = {"django", "celery", "psycopg", "psycopg-binary", "granian", "gunicorn", "stateroom"}


def _pip(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _name(requirement: str) -> str:
    head = requirement.split(";")[0].strip()
    for stop in "<>=!~[ (":
        head = head.split(stop)[0]
    return head.strip().lower().replace("_", "-")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy: pip builds a local project in its own tree (build/).
    project = out / "stateroom_client"
    shutil.copytree(
        CLIENT,
        project,
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"),
    )
    _pip("wheel", "--quiet", "--no-deps", str(project), "-w", str(out), cwd=out)
    [built] = out.glob("stateroom_client-*.whl")
    return built


def test_the_wheel_depends_on_httpx_alone_and_the_sdks_only_through_extras(wheel):
    with zipfile.ZipFile(wheel) as archive:
        [metadata_name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    assert metadata["Name"] == "stateroom-client"
    requires = metadata.get_all("Requires-Dist") or []
    unconditional = [r for r in requires if "extra ==" not in r]
    assert [_name(r) for r in unconditional] == ["httpx"]
    by_extra: dict[str, set[str]] = {}
    for requirement in requires:
        if "extra ==" in requirement:
            extra = requirement.split("extra ==")[1].strip().strip("'\"")
            by_extra.setdefault(extra, set()).add(_name(requirement))
    assert by_extra == {
        "agents": {"openai-agents"},
        "langgraph": {"langgraph", "langgraph-checkpoint"},
        "otel": {"opentelemetry-api"},
    }
    assert not {_name(r) for r in requires} & SERVER_ONLY
    # The adapter's tested SDK range, exactly as declared.
    assert [r for r in requires if _name(r) == "openai-agents"] == [
        'openai-agents<0.25,>=0.18.1; extra == "agents"'
    ]


def test_the_wheel_holds_the_client_package_and_its_py_typed_only(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top_level = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top_level == {"stateroom_client"}
    assert "stateroom_client/py.typed" in names
    assert "stateroom_client/agents/session.py" in names


def test_installing_the_wheel_into_an_empty_venv_brings_no_server(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    _pip("--python", str(python), "install", "--quiet", str(wheel), cwd=tmp_path)
    listed = _pip("--python", str(python), "list", "--format=freeze", cwd=tmp_path)
    installed = {_name(line) for line in listed.splitlines() if line.strip()}
    assert {"stateroom-client", "httpx"} <= installed
    assert not installed & SERVER_ONLY, installed
    assert not installed & {"openai-agents", "langgraph"}, installed
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util, stateroom_client\n"
            "assert importlib.util.find_spec('django') is None\n"
            "print(stateroom_client.StateroomClient.__module__)\n"
            "try:\n"
            "    import stateroom_client.agents\n"
            "except ImportError as exc:\n"
            "    print(exc)\n",
        ],
        cwd=tmp_path,  # not the repository: nothing of it on the path
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.splitlines() == [
        "stateroom_client.client",
        "stateroom_client.agents needs the OpenAI Agents SDK:"
        " pip install 'stateroom-client[agents]'",
    ]
