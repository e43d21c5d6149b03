"""No module over 800 lines, no function over 60 in the product code (scripts/code_size.py)."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "code_size.py"


def test_no_module_or_function_is_over_the_limit():
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_script_lists_an_offender_and_fails():
    """Limits low enough that this very script is over them: listed, exit status 1."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--max-function", "5", "--max-module", "10"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "OVER THE LIMIT" in done.stdout
    assert "scripts/code_size.py" in done.stdout
