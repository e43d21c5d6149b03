"""The README's LangGraph example runs as written (server URL and token filled in)."""

from __future__ import annotations

import contextlib
import io
import re
import threading
import time
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def example() -> str:
    section = README.read_text().split("## Keep a LangGraph graph's state in Stateroom", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def test_the_readme_langgraph_example_runs(server, client, operator):
    code = example().replace("http://127.0.0.1:8000", server.url)
    code = code.replace('TOKEN = "sr_..."', f"TOKEN = {server.token!r}")
    out = io.StringIO()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
        except BaseException as exc:  # reported below
            failures.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    # Decide once `start` has returned (its line printed), as the operator would later:
    # decided any earlier, `start` itself would go on and finish the graph.
    while not out.getvalue():
        assert time.monotonic() < deadline and thread.is_alive(), failures
        time.sleep(0.1)
    pending = client.list_approvals(status="pending").results
    operator.decide_approval(
        pending[0].approval_id,
        decision="edit",
        reason="Partial refund",
        approved_arguments={"order_id": "A-1042", "amount_cents": 900},
    )
    thread.join(60)
    assert not failures and not thread.is_alive()
    first, second = out.getvalue().splitlines()
    assert first.startswith("waiting_approval ")
    assert second == (
        "succeeded {'order_id': 'A-1042', 'amount_cents': 900, 'approved': True,"
        " 'outcome': 'Refunded 900 cents on order A-1042.'}"
    )
