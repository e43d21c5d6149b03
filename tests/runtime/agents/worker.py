"""An agent runtime process for the end-to-end tests (no Django: it only speaks HTTP).

    python -m tests.runtime.agents.worker start  --url U --token T --run-id R "Refund 1200 cents on order A-1"
    python -m tests.runtime.agents.worker resume --url U --token T --run-id R [--crash-after-commit]
    python -m tests.runtime.agents.worker race   --url U --token T --run-id R1 --run-id R2 ... [--resumers 3]

Prints the gate's outcome as JSON on the last line of stdout. With
`--crash-after-commit` the process kills itself (SIGKILL) right after the
refund's effect is committed, before the run state is updated; with
`--crash-in-tool` right after it is recorded, before the refund runs.
A process that finds the run claimed by another worker prints "claimed by
another worker" and exits with status 3 (`CLAIMED_EXIT`).

`race` imports once, then for each run forks `--resumers` processes that
resume it at the same moment (released together through a pipe), each exactly
as `resume` would; it prints, per run, each process's exit status and output.
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

CLAIMED_EXIT = 3


class CrashAfterCommit(AsyncStateroomClient):
    async def commit_effect(self, effect_id: str, *, result: Any, worker: str | None = None):
        committed = await super().commit_effect(effect_id, result=result, worker=worker)
        os.kill(os.getpid(), signal.SIGKILL)
        return committed


class CrashInTool(AsyncStateroomClient):
    async def record_effect(self, run_id: str, **kwargs: Any):
        recorded = await super().record_effect(run_id, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)
        return recorded


async def main(args: argparse.Namespace) -> dict[str, Any]:
    client_class: type[AsyncStateroomClient] = AsyncStateroomClient
    if args.crash_after_commit:
        client_class = CrashAfterCommit
    elif args.crash_in_tool:
        client_class = CrashInTool
    async with client_class(args.url, args.token) as client:
        gate = ApprovalGate(
            client,
            build_agent(),
            risk_policy=risk,
            on_rejection=args.on_rejection,
            lease_seconds=args.lease_seconds,
        )
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
        "claimed_by": outcome.claimed_by,
        "worker": gate.worker,
    }


def once(args: argparse.Namespace) -> int:
    """One start or resume: the outcome on the last line; the exit status says if claimed."""
    result = asyncio.run(main(args))
    if result["status"] == "claimed":
        sys.stdout.write(f"claimed by another worker: {result['claimed_by']}\n")
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return CLAIMED_EXIT if result["status"] == "claimed" else 0


def race(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    for run_id in args.run_id:
        go_read, go_write = os.pipe()
        children = []
        for _ in range(args.resumers):
            out_read, out_write = os.pipe()
            pid = os.fork()
            if pid == 0:  # a resumer: wait for the start, then resume like `resume`
                os.close(go_write)
                os.close(out_read)
                os.read(go_read, 1)  # EOF once the parent lets all of them go
                os.dup2(out_write, sys.stdout.fileno())
                code = 1
                try:
                    code = once(argparse.Namespace(**{**vars(args), "run_id": run_id}))
                finally:
                    sys.stdout.flush()
                    os._exit(code)
            os.close(out_write)
            children.append((pid, out_read))
        os.close(go_read)
        os.close(go_write)  # all of them start now
        for pid, out_read in children:
            with os.fdopen(out_read) as out:
                output = out.read()
            _, status = os.waitpid(pid, 0)
            results.append(
                {"run_id": run_id, "exit": os.waitstatus_to_exitcode(status), "stdout": output}
            )
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["start", "resume", "race"])
    parser.add_argument("message", nargs="?", default="")
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--run-id", required=True, action="append")
    parser.add_argument("--resumers", type=int, default=3)
    parser.add_argument("--lease-seconds", type=int, default=60)
    parser.add_argument("--crash-in-tool", action="store_true")
    parser.add_argument("--session-id", default="")
    parser.add_argument("--user-id", default="customer-1")
    parser.add_argument("--wait", action="store_true")
    parser.add_argument("--on-rejection", default="continue")
    parser.add_argument("--crash-after-commit", action="store_true")
    arguments = parser.parse_args()
    if arguments.command == "race":
        sys.stdout.write(json.dumps(race(arguments)) + "\n")
    else:
        arguments.run_id = arguments.run_id[-1]
        sys.exit(once(arguments))
