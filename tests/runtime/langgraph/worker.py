"""A LangGraph runtime process for the end-to-end tests (no Django: it only speaks HTTP).

    python -m tests.runtime.langgraph.worker start  --url U --token T --run-id R --thread-id TH --order A-1 --amount 1200
    python -m tests.runtime.langgraph.worker resume --url U --token T --run-id R [--crash-after-commit]

Prints the runner's outcome as JSON on the last line of stdout. With
`--crash-after-commit` the process kills itself (SIGKILL) right after the
refund's effect is committed, before the node's result is checkpointed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any

from stateroom_client import StateroomClient
from stateroom_client.langgraph import GraphRunner

from .refunds import build_graph


class CrashAfterCommit(StateroomClient):
    def commit_effect(self, effect_id: str, *, result: Any, worker: str | None = None):
        committed = super().commit_effect(effect_id, result=result, worker=worker)
        os.kill(os.getpid(), signal.SIGKILL)
        return committed


def main(args: argparse.Namespace) -> dict[str, Any]:
    client_class = CrashAfterCommit if args.crash_after_commit else StateroomClient
    with client_class(args.url, args.token) as client:
        runner = GraphRunner(client, build_graph(client), name="refunds")
        if args.command == "start":
            outcome = runner.start(
                {"order_id": args.order, "amount_cents": args.amount},
                thread_id=args.thread_id,
                run_id=args.run_id,
            )
        else:
            outcome = runner.resume(args.run_id, wait=False)
    return {
        "run_id": outcome.run_id,
        "thread_id": outcome.thread_id,
        "status": outcome.status,
        "values": outcome.values,
        "error": outcome.error,
        "approvals": [a.approval_id for a in outcome.approvals],
        "executed": outcome.executed,
        "replayed": outcome.replayed,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["start", "resume"])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--thread-id", default="")
    parser.add_argument("--order", default="A-1")
    parser.add_argument("--amount", type=int, default=1200)
    parser.add_argument("--crash-after-commit", action="store_true")
    result = main(parser.parse_args())
    sys.stdout.write(json.dumps(result) + "\n")
