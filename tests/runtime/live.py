"""Helpers for tests that talk HTTP to pytest-django's `live_server`.

`FlakyProxy` is a real HTTP server in front of the live server that fails the
requests a test chooses, the way networks and load balancers do: it answers an
error without forwarding, or forwards (so the server does the work) and then
loses the answer. Everything else passes through untouched.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from tenancy_app.models import Tenant


@dataclass
class Server:
    url: str
    tenant: Tenant
    token: str  # runtime token of `tenant`
    operator_token: str  # operator token of `tenant` (decides approvals)
    other_token: str  # runtime token of another tenant


@dataclass
class Fault:
    """Fail the next `times` requests that match with `status` (after forwarding if `forward`)."""

    times: int
    status: int
    match: Callable[[str, str], bool]
    forward: bool = False
    headers: dict[str, str] = field(default_factory=dict)


class FlakyProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.faults: list[Fault] = []
        self.log: list[tuple[str, str, int]] = []  # (method, path, status the client got)
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = proxy._take(self.command, self.path)
                if fault is None or fault.forward:
                    upstream = httpx.request(
                        self.command,
                        proxy.upstream + self.path,
                        content=body,
                        headers={
                            k: v
                            for k, v in self.headers.items()
                            if k.lower() not in ("host", "content-length", "connection")
                        },
                        timeout=60,
                    )
                if fault is None:
                    status, payload = upstream.status_code, upstream.content
                    content_type = upstream.headers.get("Content-Type", "application/json")
                    headers: dict[str, str] = {}
                else:
                    status, content_type, headers = fault.status, "text/plain", fault.headers
                    payload = b"upstream trouble"
                proxy.log.append((self.command, self.path, status))
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def fail(
        self,
        times: int,
        status: int,
        *,
        method: str | None = None,
        path: str = "",
        forward: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        def match(m: str, p: str) -> bool:
            return (method is None or m == method) and path in p

        self.faults.append(Fault(times, status, match, forward, headers or {}))

    def _take(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.match(method, path):
                    fault.times -= 1
                    return fault
        return None

    def requests(self, method: str, path: str) -> list[int]:
        """Statuses the client got for requests whose path contains `path`."""
        return [status for m, p, status in self.log if m == method and path in p]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class CountingTransport(httpx.HTTPTransport):
    """The real transport, counting the attempts the client makes."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.attempts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts += 1
        return super().handle_request(request)


class AsyncCountingTransport(httpx.AsyncHTTPTransport):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.attempts = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts += 1
        return await super().handle_async_request(request)
