"""Where a call's request goes: the transport httpx would pick, without httpx's client layer.

The Stateroom clients hand each request to the transport their httpx client
picks for its URL (`stateroom_client._http.send`), so an environment proxy
is used as httpx uses it, and the answer comes back read.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import httpx

from stateroom_client import AsyncStateroomClient, StateroomClient

ME = {"tenant": "acme", "name": "worker", "role": "runtime"}


class Proxy:
    """An HTTP proxy on 127.0.0.1 that answers every request itself and keeps its request lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            while True:
                line = reader.readline()
                if not line:
                    return
                self.lines.append(line.decode().strip())
                while reader.readline() not in (b"\r\n", b""):
                    pass  # headers; the calls here send no body
                body = json.dumps(ME).encode()
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )

    def close(self) -> None:
        self.server.close()


def test_an_environment_proxy_carries_the_calls_as_httpx_would(monkeypatch):
    proxy = Proxy()
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    try:
        with StateroomClient("http://stateroom.invalid", "sr_token", retries=0) as client:
            assert client.me().tenant == "acme"
            assert client.me().role == "runtime"  # the connection to the proxy is used again

        async def twice() -> None:
            async with AsyncStateroomClient("http://stateroom.invalid", "sr_token") as client:
                assert (await client.me()).name == "worker"

        asyncio.run(twice())
    finally:
        proxy.close()
    # Absolute-form request lines: the proxy was asked for the Stateroom URL.
    assert proxy.lines == ["GET http://stateroom.invalid/api/v1/me HTTP/1.1"] * 3


def test_a_given_transport_gets_each_request_with_the_clients_headers():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=ME)

    with StateroomClient(
        "http://stateroom.test", "sr_token", transport=httpx.MockTransport(handler)
    ) as client:
        assert client.me().tenant == "acme"
    (request,) = seen
    assert request.url == "http://stateroom.test/api/v1/me"
    assert request.headers["Authorization"] == "Bearer sr_token"
    assert request.headers["User-Agent"] == "stateroom-client"
    assert "traceparent" in request.headers
    assert request.extensions["timeout"]["read"] == 10.0
