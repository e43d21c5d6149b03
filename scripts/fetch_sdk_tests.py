"""Fetch the OpenAI Agents SDK's own session tests from its source distribution.

    python scripts/fetch_sdk_tests.py            # every release in RELEASES
    python scripts/fetch_sdk_tests.py 0.24.0     # one release

For each release, downloads the sdist of openai-agents==VERSION from the package
index and unpacks its session tests (and the helpers they import) with its
LICENSE into the installing environment, not the checkout:
<sys.prefix>/stateroom-sdk-tests/agents_sdk_tests_v<VERSION>/ (for `make install`,
.venv/stateroom-sdk-tests/agents_sdk_tests_v0_24_0/), keeping the SDK's layout.
The SDK's tests are not committed, nor written into the project's tree. The only
change made to a file is its absolute imports of the SDK's `tests` package
(``from tests.x import y`` -> ``from agents_sdk_tests_v0_24_0.x import y``), plus
empty ``__init__.py`` files so the tree imports as a package. The test bodies are
the SDK's, assertion for assertion; tests/runtime/agents/sdk/conftest.py makes them build a StateroomSession
against the live server instead of the SDK's own sessions
(tests/runtime/agents/sdk/conformance.toml names them; docs/sdk-conformance.md).

`make install` runs it, and scripts/test_sdk_range.sh in each of its venvs. A
release whose tree is complete (its VERSION, written last, and a FETCHED record
made by this same script) is left alone, so a second run downloads nothing.
It fails (exit 1, with the reason) when it cannot fetch a release: the
conformance suite never runs on a missing tree.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

# Where the trees go: the environment that runs the tests (each venv of
# scripts/test_sdk_range.sh has its own); tests/runtime/agents/sdk/conftest.py reads the same.
TARGET = Path(sys.prefix) / "stateroom-sdk-tests"
# Where an earlier version of this script put them, inside the checkout: removed.
OLD_TARGET = Path(__file__).resolve().parent.parent / "tests" / "agents" / "sdk"

# The SDK releases whose tests are the conformance suite: the lowest and the newest
# end of stateroom_client's openai-agents range (scripts/test_sdk_range.sh). The
# suite runs the newest of them not newer than the installed SDK.
RELEASES = ["0.18.1", "0.24.0"]

# The SDK's test files that build a session (a file missing from a release is
# skipped). Of all but the conftest's SESSION_FILES only the tests that build a
# session are collected (tests/runtime/agents/sdk/conftest.py); the files come whole, unchanged.
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
# Every release must have these (the SDK's session tests proper): a release without
# them is a fetch that went wrong, not a smaller suite.
REQUIRED = FILES[:3]
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


class FetchError(Exception):
    """A release's tests could not be fetched."""


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
    return "agents_sdk_tests_v" + version.replace(".", "_")


def recipe() -> str:
    """What a tree is made by: this script, so a changed file list or rewrite fetches again."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def complete(dest: Path, version: str) -> bool:
    """Whether `dest` is a whole tree of `version` made by this script as it is now."""
    try:
        fetched = (dest / "FETCHED").read_text().splitlines()
        return (dest / "VERSION").read_text().strip() == version and f"recipe {recipe()}" in fetched
    except OSError:
        return False


def download(version: str, tmp: Path) -> Path:
    """The sdist of openai-agents==`version`, downloaded into `tmp`."""
    command = [
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
        str(tmp),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise FetchError(
            f"`{' '.join(command[2:])}` failed (exit {result.returncode}):\n"
            f"{(result.stderr or result.stdout).strip()}"
        )
    sdists = list(tmp.glob("openai_agents-*.tar.gz"))
    if len(sdists) != 1:
        found = sorted(p.name for p in tmp.iterdir())
        raise FetchError(f"pip downloaded no single openai_agents-*.tar.gz sdist (got {found})")
    return sdists[0]


def fetch(version: str) -> Path:
    name = package_name(version)
    dest = TARGET / name
    if complete(dest, version):
        return dest
    # Built beside the tree under a name neither pytest nor the conftest reads (a
    # dot folder), then renamed into place: a tree is there whole or not at all.
    partial = TARGET / f".{name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    TARGET.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        sdist = download(version, Path(tmp))
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        with tarfile.open(sdist) as archive:
            archive.extractall(tmp, filter="data")
        source = Path(tmp) / sdist.name.removesuffix(".tar.gz")
        missing = [f for f in ["LICENSE", *REQUIRED] if not (source / f).is_file()]
        if missing:
            raise FetchError(f"{sdist.name} has no {', '.join(missing)}")
        partial.mkdir(parents=True)
        shutil.copy(source / "LICENSE", partial / "LICENSE")
        copied: set[str] = set()
        wanted = [f for f in [*FILES, *HELPERS] if (source / f).is_file()]
        while wanted:
            relative = wanted.pop()
            if relative in copied:
                continue
            copied.add(relative)
            wanted += imported_helpers(source, relative)
            text = (source / relative).read_text()
            text = re.sub(
                r"^(\s*)(from|import) tests\.",
                rf"\1\2 {name}.",
                text,
                flags=re.M,
            )
            target = partial / relative.removeprefix("tests/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    for folder in [partial, *(p for p in partial.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    # The test files proper (the rest are helpers): tests/runtime/agents/sdk/conftest.py collects these.
    tests = sorted(f.removeprefix("tests/") for f in FILES if f in copied)
    (partial / "TESTS").write_text("".join(f"{f}\n" for f in tests))
    (partial / "FETCHED").write_text(f"sdist {sdist.name} sha256 {digest}\nrecipe {recipe()}\n")
    (partial / "VERSION").write_text(version + "\n")  # last: the tree is complete
    if dest.exists():
        shutil.rmtree(dest)
    os.replace(partial, dest)
    return dest


def main(versions: list[str]) -> int:
    for old in [*OLD_TARGET.glob("v*_*_*"), *OLD_TARGET.glob(".v*_*_*.partial")]:
        shutil.rmtree(old)
    for version in versions or RELEASES:
        name = package_name(version)
        try:
            already = complete(TARGET / name, version)
            dest = fetch(version)
        except (FetchError, OSError, tarfile.TarError) as error:
            print(
                f"fetch-sdk-tests: cannot fetch the tests of openai-agents {version}"
                f" (the SDK conformance suite, {TARGET / name}/): {error}",
                file=sys.stderr,
            )
            return 1
        state = "already fetched" if already else "fetched"
        print(f"fetch-sdk-tests: {dest} ({state})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
