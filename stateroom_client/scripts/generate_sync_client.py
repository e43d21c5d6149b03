"""Generate the synchronous client from the asynchronous one.

`src/stateroom_client/aio.py` is the source; `src/stateroom_client/client.py` is this
script's output (async/await removed, async names mapped to their sync twins
with `unasync`, then ruff-formatted). Edit `aio.py` and run

    python stateroom_client/scripts/generate_sync_client.py            # rewrite client.py
    python stateroom_client/scripts/generate_sync_client.py --check    # exit 1 if out of date

A test (tests/runtime/client/test_generated_client.py) fails when they differ.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tokenize_rt
import unasync

ROOT = Path(__file__).resolve().parent.parent  # the client's project: stateroom_client/
SOURCE = ROOT / "src" / "stateroom_client" / "aio.py"
TARGET = ROOT / "src" / "stateroom_client" / "client.py"

REPLACEMENTS = {
    "AsyncStateroomClient": "StateroomClient",
    "AsyncHttpClients": "HttpClients",  # one httpx client per event loop -> one client
    "AsyncClient": "Client",  # httpx
    "AsyncBaseTransport": "BaseTransport",  # httpx
    "aclose": "close",
    "asend": "send",  # stateroom_client._http
    "asyncio": "time",  # asyncio.sleep -> time.sleep
}

DOCSTRING = '''"""The synchronous Stateroom client.

Generated from `aio.py` by `stateroom_client/scripts/generate_sync_client.py`: edit `aio.py`,
not this file.
"""'''


def generate() -> str:
    rule = unasync.Rule("stateroom_client", "stateroom_client", REPLACEMENTS)
    tokens = list(rule._unasync_tokens(tokenize_rt.src_to_tokens(SOURCE.read_text())))
    first_string = next(i for i, token in enumerate(tokens) if token.name == "STRING")
    tokens[first_string] = tokens[first_string]._replace(src=DOCSTRING)
    source = tokenize_rt.tokens_to_src(tokens)
    # Sorted imports (`time` does not sit where `asyncio` did), `yield from` where an
    # async generator had to loop (UP028), and the project's format.
    fix = ["check", "--fix", "--unsafe-fixes", "--select", "I,UP028", "--quiet"]
    for args in (fix, ["format", "--quiet"]):
        source = subprocess.run(
            [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(TARGET), "-"],
            input=source,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
    return source


def main(argv: list[str]) -> int:
    generated = generate()
    if "--check" in argv:
        if TARGET.read_text() != generated:
            print(
                f"{TARGET.relative_to(ROOT)} is out of date: run python {Path(__file__).relative_to(ROOT.parent)}"
            )
            return 1
        return 0
    TARGET.write_text(generated)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
