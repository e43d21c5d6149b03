"""A type checker accepts the client as users write it: mypy --strict on the README's example.

The example (the README's "Keep an OpenAI Agents SDK agent's state in
Stateroom") is checked outside the repository, as a user's file that imports
the installed `stateroom_client` (found through its `py.typed`): an
`idempotent_tool`, a `StateroomSession` given to `Runner.run`, session
settings as a dict, the gate. The package itself is also checked strictly.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_example() -> str:
    text = README.read_text()
    section = text[text.index("## Keep an OpenAI Agents SDK agent's state in Stateroom") :]
    [example, *_] = re.findall(r"```python\n(.*?)```", section, re.S)
    return example


def mypy(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cwd / ".cache"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_mypy_strict_passes_on_the_readme_example_and_the_package(tmp_path):
    example = readme_example()
    assert "Runner.run(support" in example and "session=session" in example
    (tmp_path / "example.py").write_text(example)
    checked = mypy("example.py", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.strip() == "Success: no issues found in 1 source file"
    package = mypy("-p", "stateroom_client", cwd=tmp_path)  # the same cache: seconds
    assert package.returncode == 0, package.stdout + package.stderr

    # The check has teeth: a wrong type given to the client's API is an error.
    (tmp_path / "wrong.py").write_text(
        "from stateroom_client import AsyncStateroomClient\n"
        "from stateroom_client.agents import StateroomSession\n\n"
        "async def go(client: AsyncStateroomClient) -> None:\n"
        "    StateroomSession(client, 42)\n"
    )
    wrong = mypy("wrong.py", cwd=tmp_path)
    assert wrong.returncode == 1
    assert 'Argument 2 to "StateroomSession" has incompatible type "int"' in wrong.stdout
