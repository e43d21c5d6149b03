"""An agent runtime process for the end-to-end tests (no Django: it only speaks HTTP).

    python -m tests.agents.worker start  --url U --token T --run-id R "Refund 1200 cents on order A-1"
    python -m tests.agents.worker resume --url U --token T --run-id R [--crash-after-commit]

Prints the gate's outcome as JSON on the last line of stdout. With
`--crash-after-commit` the process kills itself (SIGKILL) right after the
refund's effect is committed, before the run state is updated.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from typing import Any

from stateroom_client import AsyncStateroomClient
from stateroom_client.agents import ApprovalGate, StateroomSession

from .payments import build_agent, risk


class CrashAfterCommit(AsyncStateroomClient):
    async def commit_effect(self, effect_id: str, *, result: Any):
        committed = await super().commit_effect(effect_id, result=result)
        os.kill(os.getpid(), signal.SIGKILL)
        return committed


async def main(args: argparse.Namespace) -> dict[str, Any]:
    client_class = CrashAfterCommit if args.crash_after_commit else AsyncStateroomClient
    async with client_class(args.url, args.token) as client:
        gate = ApprovalGate(client, build_agent(), risk_policy=risk, on_rejection=args.on_rejection)
        if args.command == "start":
            session = None
            if args.session_id:
                session = await StateroomSession.open(client, args.session_id, user_id=args.user_id)
            outcome = await gate.run(
                args.message, run_id=args.run_id, session=session, wait=args.wait
            )
        else:
            outcome = await gate.resume(args.run_id, wait=args.wait)
    return {
        "run_id": outcome.run_id,
        "status": outcome.status,
        "final_output": outcome.final_output,
        "error": outcome.error,
        "approvals": [a.approval_id for a in outcome.approvals],
        "executed": outcome.executed,
        "replayed": outcome.replayed,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["start", "resume"])
    parser.add_argument("message", nargs="?", default="")
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--session-id", default="")
    parser.add_argument("--user-id", default="customer-1")
    parser.add_argument("--wait", action="store_true")
    parser.add_argument("--on-rejection", default="continue")
    parser.add_argument("--crash-after-commit", action="store_true")
    result = asyncio.run(main(parser.parse_args()))
    sys.stdout.write(json.dumps(result) + "\n")
