"""A body over the server's limit fails clean and leaves the client usable.

The server answers 413 before reading the body; the connection must not be
reused as if the body had been read (the leftover bytes would be parsed as
the next request and the server would drop the connection under the next
call: "Server disconnected").
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import pytest

from stateroom_client import AsyncStateroomClient, PayloadTooLarge, StateroomClient
from tests.infra import subprocess_env, web_server

LIMIT = 1024 * 1024  # the default STATEROOM_MAX_BODY_BYTES


def big_items(size: int) -> list[dict]:
    return [{"role": "tool", "item_type": "message", "payload": {"text": "x" * size}}]


def test_a_2mb_append_is_a_clean_payload_too_large_and_the_next_calls_succeed(server):
    with StateroomClient(server.url, server.token) as client:
        client.create_session(user_id="u-1", session_id="s-1")
        for attempt in range(3):
            with pytest.raises(PayloadTooLarge) as refused:
                client.append_items(
                    "s-1", big_items(2 * 1024 * 1024), idempotency_key=f"k{attempt}"
                )
            assert (refused.value.status, refused.value.code) == (413, "payload_too_large")
            assert refused.value.limit == LIMIT
            # Any call right after, on the same client: no "Server disconnected".
            assert client.get_session("s-1").status == "active"
            small = client.append_items("s-1", big_items(10), idempotency_key=f"small{attempt}")
            assert small.first_seq == attempt + 1
        assert [i.seq for i in client.get_items("s-1")] == [1, 2, 3]


def test_under_the_production_server_too(server):
    """The production server (`python -m stateroom.serve`: keep-alive), on the test database."""
    with web_server(subprocess_env(CELERY_TASK_ALWAYS_EAGER="1")) as base:
        with StateroomClient(base, server.token) as client:
            client.create_session(user_id="u-1", session_id="s-1")
            with pytest.raises(PayloadTooLarge) as refused:
                client.append_items("s-1", big_items(2 * 1024 * 1024), idempotency_key="k")
            assert refused.value.limit == LIMIT
            assert client.append_items("s-1", big_items(10)).first_seq == 1


def test_the_async_client_too(server):
    async def scenario() -> list[int]:
        async with AsyncStateroomClient(server.url, server.token) as client:
            await client.create_session(user_id="u-1", session_id="s-1")
            with pytest.raises(PayloadTooLarge) as refused:
                await client.append_items("s-1", big_items(2 * 1024 * 1024))
            assert refused.value.limit == LIMIT
            await client.append_items("s-1", big_items(10))
            return [i.seq for i in await client.get_items("s-1")]

    assert asyncio.run(scenario()) == [1]


class CarelessServer:
    """Answers 413 to a body over 1 KiB without reading it, keeping the connection open.

    Then, like any HTTP/1.1 server, it reads the next request from that
    connection: the unread body, which is no request, so it hangs up. Small
    requests get `{"tenant": "acme"}` (a `me()` answer).
    """

    LIMIT = 1024

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        with conn, reader:
            while True:
                request_line = reader.readline(65536)
                if not request_line.startswith((b"GET ", b"POST ")):
                    return  # not a request: hang up
                headers = {}
                while (line := reader.readline(65536)) not in (b"\r\n", b""):
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", 0))
                if length > self.LIMIT:
                    error = {"code": "payload_too_large", "message": "too large"}
                    body = json.dumps({"error": {**error, "details": {"limit_bytes": self.LIMIT}}})
                    status = "413 Payload Too Large"
                else:
                    reader.read(length)
                    body, status = json.dumps({"tenant": "acme"}), "200 OK"
                conn.sendall(
                    f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
                )
                if headers.get("connection", "").lower() == "close":
                    return
                if length > self.LIMIT:
                    # Busy elsewhere for a moment: the client sends its next
                    # request on this connection before it is dropped.
                    time.sleep(0.3)

    def close(self) -> None:
        self.sock.close()


def test_a_large_body_goes_on_its_own_connection_so_a_careless_413_cannot_poison_the_next_call():
    server = CarelessServer()
    try:
        with StateroomClient(server.url, "sr_test", retries=0) as client:
            assert client.me().tenant == "acme"
            with pytest.raises(PayloadTooLarge) as refused:
                client.append_items("s-1", big_items(300 * 1024))  # not retryable: no key
            assert refused.value.limit == CarelessServer.LIMIT
            assert client.me().tenant == "acme"  # a fresh connection, not the poisoned one
            # The limit is learned: bodies over it go on their own connection from now on.
            with pytest.raises(PayloadTooLarge):
                client.append_items("s-1", big_items(2 * 1024))
            assert client.me().tenant == "acme"
            assert server.connections == 3
    finally:
        server.close()
