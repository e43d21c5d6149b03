"""The production server keeps connections open (gunicorn.conf.py: gthread, keep-alive)."""

import socket
from urllib.parse import urlsplit

from tests.infra import gunicorn, subprocess_env


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
    with gunicorn(subprocess_env()) as base:
        address = urlsplit(base)
        with socket.create_connection((address.hostname, address.port), timeout=10) as conn:
            for _ in range(3):
                conn.sendall(
                    b"GET /api/v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n"
                )
                status, headers = _answer(conn)
                assert status.startswith("HTTP/1.1 401"), status
                assert headers.get("connection", "").lower() != "close"
