"""The bench's SMTP server: aiosmtpd on 127.0.0.1 in a process of its own.

A deployment's mail server is another program, so the bench's is not a
thread of the process that measures: it is a child process (forked before
the drain opens any database connection) that runs aiosmtpd and counts, in
shared memory the bench reads, the messages it accepted, their recipients
and how many distinct messages they were (recipient, subject and the parts'
text: a message sent twice counts once there).
"""

from __future__ import annotations

import email
import hashlib
import multiprocessing
import socket
from contextlib import contextmanager
from dataclasses import dataclass


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _digest(rcpt_tos: list[str], content: bytes) -> str:
    """What makes a message this message: not its Date, Message-ID or MIME boundary."""
    message = email.message_from_bytes(content)
    digest = hashlib.sha256("\n".join([*sorted(rcpt_tos), message["Subject"] or ""]).encode())
    for part in message.walk():
        if not part.is_multipart():
            digest.update(part.get_payload(decode=True) or b"")
    return digest.hexdigest()


class Counting:
    """An aiosmtpd handler counting into shared values (it runs in the server process)."""

    def __init__(self, messages, recipients, distinct) -> None:
        self.counters = messages, recipients, distinct
        self.seen: set[str] = set()

    async def handle_DATA(self, server, session, envelope):
        messages, recipients, distinct = self.counters
        self.seen.add(_digest(envelope.rcpt_tos, envelope.original_content or envelope.content))
        with messages.get_lock():
            messages.value += 1
            recipients.value += len(envelope.rcpt_tos)
            distinct.value = len(self.seen)
        return "250 Message accepted"


def _serve(port: int, counters: tuple, ready, stop) -> None:
    from aiosmtpd.controller import Controller

    controller = Controller(Counting(*counters), hostname="127.0.0.1", port=port)
    controller.start()
    ready.set()
    try:
        stop.wait()
    finally:
        controller.stop()


@dataclass
class Received:
    """The server's counters, read from the bench's process."""

    port: int
    _counters: tuple

    @property
    def messages(self) -> int:
        return self._counters[0].value

    @property
    def recipients(self) -> int:
        return self._counters[1].value

    @property
    def distinct(self) -> int:
        return self._counters[2].value


@contextmanager
def smtp_server():
    """aiosmtpd on 127.0.0.1, a free port, in a forked process: its `Received` counters.

    Fork it before any drain worker and with Django's connections closed
    (it touches no database)."""
    from django.db import connections

    context = multiprocessing.get_context("fork")
    counters = tuple(context.Value("q", 0) for _ in range(3))
    ready, stop = context.Event(), context.Event()
    port = free_port()
    connections.close_all()
    process = context.Process(
        target=_serve, args=(port, counters, ready, stop), name="bench-smtp", daemon=True
    )
    process.start()
    try:
        if not ready.wait(30):
            raise RuntimeError("the bench's SMTP server did not start")
        yield Received(port, counters)
    finally:
        stop.set()
        process.join(10)
        if process.is_alive():
            process.kill()
            process.join()
