"""client.py is what scripts/generate_sync_client.py makes of aio.py."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "stateroom_client/scripts/generate_sync_client.py"


def test_the_sync_client_is_generated_from_the_async_one():
    spec = importlib.util.spec_from_file_location("generate_sync_client", SCRIPT)
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert generator.TARGET.read_text() == generator.generate(), (
        "stateroom_client/src/stateroom_client/client.py differs from what aio.py generates:"
        " edit aio.py and run python stateroom_client/scripts/generate_sync_client.py"
    )
