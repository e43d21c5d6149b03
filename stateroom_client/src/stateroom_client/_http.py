"""The httpx clients behind `StateroomClient` and `AsyncStateroomClient`.

An `httpx.AsyncClient` keeps pooled connections that belong to the event loop
that opened them. Used from another loop they fail ("Event loop is closed"
after an `asyncio.run()` ended, or hang across threads), and agent code runs
one client in many loops: `asyncio.run()` after `asyncio.run()`,
`Runner.run_sync` with its own loop, a worker thread with another. So the
async client keeps one `httpx.AsyncClient` per running loop, made on first
use in that loop. It is closed when its loop shuts down (`asyncio.run()` and
the SDK's loops finalize async generators before closing, and one is tied to
each client for that), or with `close()`; one left by a loop closed without
that shutdown is dropped. `Runner.run_sync` keeps its loop open and runs that
shutdown after every run, so a loop's client may be closed while the loop
lives on: the next call on that loop makes it a new one (tied to the loop
again: its next shutdown closes that one). The sync client needs only one `httpx.Client`,
which threads may share.

A call's request is built by its httpx client and handed to the transport
that client would pick for its URL (`send`, `asend`): the transport given to
the Stateroom client, httpx's connection pool, or an environment proxy's, as
httpx picks them. What `httpx.Client.send` adds around that — its auth and
redirect flows, event hooks and cookie jar — the Stateroom client uses none
of (the API sets no cookie and answers no redirect), and it cost about
0.25 ms of CPU a call, a third of the client's share (measured for the
wire-speed issue, bench/README.md). The pick is httpx's own
`_transport_for_url`, the one private name the client uses (httpx < 1, as
pyproject pins it; tests/runtime/client/test_transport.py fails without it).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, Callable

import httpx

CLOSED = "The Stateroom client is closed."


def send(client: httpx.Client, request: httpx.Request) -> httpx.Response:
    """`client.send(request)` without the client layer (module docstring); the body read."""
    # httpx's own choice for the URL (mounts, environment proxies, the default pool).
    response = client._transport_for_url(request.url).handle_request(request)
    response.request = request
    try:
        response.read()  # to the end, which gives the connection back to the pool
    except BaseException:
        response.close()
        raise
    return response


async def asend(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    """`send` for the async client."""
    response = await client._transport_for_url(request.url).handle_async_request(request)
    response.request = request
    try:
        await response.aread()
    except BaseException:
        await response.aclose()
        raise
    return response


class HttpClients:
    """One `httpx.Client` for every call."""

    def __init__(self, make: Callable[[], httpx.Client]) -> None:
        self._client = make()
        self._closed = False

    def get(self) -> httpx.Client:
        if self._closed:
            raise RuntimeError(CLOSED)
        return self._client

    def close(self) -> None:
        self._closed = True
        self._client.close()


async def _closed_with_the_loop(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    """Parked at its `yield`: the loop's `shutdown_asyncgens()` runs the `finally`."""
    try:
        yield
    finally:
        await client.aclose()


def _tie_to_loop(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    keeper = _closed_with_the_loop(client)
    # The first step runs to the `yield` at once (nothing in it waits) and makes
    # the running loop track the generator, as a loop tracks each one it starts.
    with contextlib.suppress(StopIteration):
        keeper.asend(None).send(None)
    return keeper


class AsyncHttpClients:
    """One `httpx.AsyncClient` per event loop that calls."""

    def __init__(self, make: Callable[[], httpx.AsyncClient]) -> None:
        self._make = make
        self._by_loop: dict[
            asyncio.AbstractEventLoop, tuple[httpx.AsyncClient, AsyncGenerator[None, None]]
        ] = {}
        self._lock = threading.Lock()  # loops in several threads may call at once
        self._closed = False

    def get(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._closed:
                raise RuntimeError(CLOSED)
            held = self._by_loop.get(loop)
            if held is None or held[0].is_closed:  # new loop, or closed by its shutdown
                for gone in [other for other in self._by_loop if other.is_closed()]:
                    del self._by_loop[gone]
                client = self._make()
                held = self._by_loop[loop] = (client, _tie_to_loop(client))
            return held[0]

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            self._closed = True
            clients, self._by_loop = self._by_loop, {}
        for owner, (client, _keeper) in clients.items():
            if owner is loop:
                await client.aclose()
            elif owner.is_running():
                # Its connections can only be closed from their own loop.
                asyncio.run_coroutine_threadsafe(client.aclose(), owner)
