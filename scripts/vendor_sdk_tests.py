"""Vendor the OpenAI Agents SDK's own session tests from its source distribution.

    python scripts/vendor_sdk_tests.py 0.24.0

downloads the sdist of openai-agents==VERSION from the package index, and
copies its session tests (and the helpers they import) with its LICENSE into
tests/agents/sdk/v<VERSION>/, keeping the SDK's layout. The only change made
to a file is its absolute imports of the SDK's `tests` package
(``from tests.x import y`` -> ``from tests.agents.sdk.v0_24_0.x import y``),
plus empty ``__init__.py`` files so the tree imports as a package. The test
bodies are the SDK's, assertion for assertion; tests/agents/sdk/conftest.py
makes them build a StateroomSession against the live server instead of an
SQLite/SQLAlchemy session.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "tests" / "agents" / "sdk"

FILES = [
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/extensions/memory/test_sqlalchemy_session.py",
    # The Runner's tests: only those that build an SQLiteSession are collected
    # (tests/agents/sdk/conftest.py, RUNNER_FILES); the files come whole, unchanged.
    "tests/test_agent_runner.py",
    "tests/test_agent_runner_streamed.py",
    "tests/test_soft_cancel.py",
    # Helpers those import.
    "tests/test_responses.py",
    "tests/fake_model.py",  # the fake model of releases before agents.testing
    "tests/model_test_helpers.py",
    "tests/utils/factories.py",
    "tests/utils/hitl.py",
    "tests/utils/simple_session.py",
]


def package_name(version: str) -> str:
    return "v" + version.replace(".", "_")


def vendor(version: str) -> Path:
    name = package_name(version)
    dest = TARGET / name
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-binary",
                ":all:",
                "--no-deps",
                f"openai-agents=={version}",
                "-d",
                tmp,
            ],
            check=True,
        )
        [sdist] = Path(tmp).glob("openai_agents-*.tar.gz")
        with tarfile.open(sdist) as archive:
            archive.extractall(tmp, filter="data")
        source = Path(tmp) / sdist.name.removesuffix(".tar.gz")
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        shutil.copy(source / "LICENSE", dest / "LICENSE")
        for relative in FILES:
            original = source / relative
            if not original.exists():
                continue
            text = original.read_text()
            text = re.sub(
                r"^(\s*)(from|import) tests\.",
                rf"\1\2 tests.agents.sdk.{name}.",
                text,
                flags=re.M,
            )
            target = dest / relative.removeprefix("tests/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    for folder in [dest, *(p for p in dest.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    (dest / "VERSION").write_text(version + "\n")
    return dest


if __name__ == "__main__":
    for version in sys.argv[1:] or ["0.24.0"]:
        print(vendor(version).relative_to(ROOT))
