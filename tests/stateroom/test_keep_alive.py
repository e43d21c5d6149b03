"""The production server keeps connections open (`python -m stateroom.serve`: Granian, keep-alive)."""

import http.client
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from tests.infra import subprocess_env, web_server


def _answer(conn: socket.socket) -> tuple[str, dict[str, str]]:
    """One HTTP/1.1 response read off `conn`: its status line and headers (body consumed)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    left = int(headers.get("content-length", "0")) - len(body)
    while left > 0:
        chunk = conn.recv(left)
        assert chunk
        left -= len(chunk)
    return status, headers


def test_one_connection_carries_call_after_call(transactional_db):
    with web_server(subprocess_env()) as base:
        address = urlsplit(base)
        with socket.create_connection((address.hostname, address.port), timeout=10) as conn:
            for _ in range(3):
                conn.sendall(
                    b"GET /api/v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n"
                )
                status, headers = _answer(conn)
                assert status.startswith("HTTP/1.1 401"), status
                assert headers.get("connection", "").lower() != "close"


def test_a_refused_chunked_body_leaves_the_connection_usable(transactional_db):
    """411 for a body sent chunked: the refused body is read and dropped
    (`stateroom.edge.LengthRequiredMiddleware`), so the next call on the same
    connection is answered, not cut off."""

    def chunks():
        yield b'{"user_id":'
        yield b' "u-1"}'

    with web_server(subprocess_env()) as base:
        address = urlsplit(base)
        conn = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
        try:
            conn.request(
                "POST",
                "/api/v1/sessions",
                body=chunks(),
                headers={"Content-Type": "application/json"},
                encode_chunked=True,
            )
            refused = conn.getresponse()
            assert refused.status == 411
            assert json.loads(refused.read())["error"]["code"] == "length_required"
            used = conn.sock
            conn.request("GET", "/api/v1/me")
            after = conn.getresponse()
            after.read()
            assert after.status == 401
            assert conn.sock is used  # the same connection, not a new one
        finally:
            conn.close()


def test_a_worker_that_dies_is_replaced(transactional_db):
    """`stateroom.serve` runs Granian with `--respawn-failed-workers`: a worker killed
    under the server is started again, and the server answers on."""
    with web_server(subprocess_env()) as base:
        port = urlsplit(base).port
        found = subprocess.run(
            ["pgrep", "-f", f"[-]-port {port} "], capture_output=True, text=True, check=True
        ).stdout.split()
        parents = {
            pid: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1] for pid in found
        }
        [worker] = [pid for pid, parent in parents.items() if parent in parents]
        os.kill(int(worker), signal.SIGKILL)
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                    again = subprocess.run(
                        ["pgrep", "-f", f"[-]-port {port} "], capture_output=True, text=True
                    ).stdout.split()
                    if worker not in again and len(again) == len(found):
                        break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "no worker took the dead one's place"
            time.sleep(0.2)
