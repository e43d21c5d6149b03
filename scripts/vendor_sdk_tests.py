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

import ast
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "tests" / "agents" / "sdk"

# The SDK's test files that build a session (a file missing from a release is
# skipped). Of all but SESSION_FILES only the tests that build a session are
# collected (tests/agents/sdk/conftest.py); the files come whole, unchanged.
FILES = [
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/extensions/memory/test_sqlalchemy_session.py",
    # The Runner's tests.
    "tests/test_agent_runner.py",
    "tests/test_agent_runner_streamed.py",
    "tests/test_soft_cancel.py",
    "tests/test_max_turns.py",
    "tests/test_run_impl_resume_paths.py",
    "tests/test_programmatic_tool_calling.py",
    # Tool failures and the history the session keeps of them.
    "tests/test_native_tool_failure_history.py",
    "tests/test_tool_batch_failure_history.py",
    "tests/test_tool_failure_boundaries.py",
    # Compaction on top of a session.
    "tests/memory/test_compaction_model_visibility.py",
    "tests/memory/test_compaction_suffix.py",
    "tests/memory/test_openai_responses_compaction_session.py",
    "tests/memory/test_sqlalchemy_compaction.py",
    # EncryptedSession wraps any session.
    "tests/extensions/memory/test_encrypt_session.py",
    # Sandbox memory runs an agent with a chat session.
    "tests/sandbox/test_memory.py",
]
# Helpers found by following those files' imports of the SDK's `tests` package
# (absolute or relative) are copied too, unchanged but for those imports; the
# conftest collects no test of theirs. These are always copied where they exist.
HELPERS = [
    "tests/test_responses.py",
    "tests/fake_model.py",  # the fake model of releases before agents.testing
    "tests/model_test_helpers.py",
    "tests/utils/factories.py",
    "tests/utils/hitl.py",
    "tests/utils/simple_session.py",
]


def imported_helpers(source: Path, relative: str) -> list[str]:
    """The `tests/...` files that `relative` imports (absolutely or relatively), where they exist."""
    tree = ast.parse((source / relative).read_text())
    package = relative.rsplit("/", 1)[0].split("/")
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - node.level + 1]
            parts = base + (node.module.split(".") if node.module else [])
        elif node.module and node.module.split(".")[0] == "tests":
            parts = node.module.split(".")
        else:
            continue
        candidates = ["/".join(parts) + ".py", "/".join(parts) + "/__init__.py"]
        candidates += ["/".join([*parts, alias.name]) + ".py" for alias in node.names]
        found += [c for c in candidates if (source / c).is_file()]
    return found


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
        copied: set[str] = set()
        wanted = [f for f in [*FILES, *HELPERS] if (source / f).is_file()]
        while wanted:
            relative = wanted.pop()
            if relative in copied:
                continue
            copied.add(relative)
            wanted += imported_helpers(source, relative)
            original = source / relative
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
    # The test files proper (the rest are helpers): tests/agents/sdk/conftest.py collects these.
    tests = sorted(f.removeprefix("tests/") for f in FILES if f in copied)
    (dest / "TESTS").write_text("".join(f"{f}\n" for f in tests))
    return dest


if __name__ == "__main__":
    for version in sys.argv[1:] or ["0.24.0"]:
        print(vendor(version).relative_to(ROOT))
