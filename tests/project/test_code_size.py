"""No module over 800 lines, no function over 60 in the product code but what DEBT
allows (empty now), which may only shrink (scripts/code_size.py)."""

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


def _script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("code_size", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_debt_entry_may_not_grow(tmp_path, monkeypatch, capsys):
    """DEBT is empty now: a code base of one 70-line function shows the rule."""
    script = _script()
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    body = "\n".join(f"    x{n} = {n}" for n in range(69))
    (tmp_path / "app" / "long.py").write_text(f"def long():\n{body}\n")
    monkeypatch.setattr(script, "ROOT", tmp_path)
    monkeypatch.setitem(script.DEBT, "app/long.py long", 70)
    assert script.main([]) == 0
    monkeypatch.setitem(script.DEBT, "app/long.py long", 69)
    assert script.main([]) == 1
    assert "DEBT allows 69" in capsys.readouterr().out


def test_a_debt_entry_back_under_the_limit_must_leave_the_list(monkeypatch, capsys):
    script = _script()
    monkeypatch.setitem(script.DEBT, "stateroom/settings.py", 900)
    assert script.main([]) == 1
    assert "stale DEBT entry" in capsys.readouterr().out
