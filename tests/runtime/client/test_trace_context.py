"""The client sends a W3C `traceparent` on every call (stateroom_client._tracing)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import httpx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import format_span_id, format_trace_id

from stateroom_client import StateroomClient
from tests.runtime.conftest import ROOT

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


class RecordingTransport(httpx.HTTPTransport):
    """The real transport, keeping each request's traceparent."""

    def __init__(self) -> None:
        super().__init__()
        self.traceparents: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.traceparents.append(request.headers.get("traceparent"))
        return super().handle_request(request)


def parts(traceparent: str | None) -> tuple[str, str]:
    match = TRACEPARENT.match(traceparent or "")
    assert match, traceparent
    return match.group(1), match.group(2)


def test_with_nothing_traced_each_call_starts_a_trace_of_its_own(server):
    transport = RecordingTransport()
    with StateroomClient(server.url, server.token, transport=transport) as client:
        run = client.create_run(run_id="r-1")
        client.get_run("r-1")
        client.transition_run("r-1", expected_version=1, status="running")
    trace_ids = [parts(header)[0] for header in transport.traceparents]
    assert all(header.endswith("-01") for header in transport.traceparents)  # sampled
    assert len(trace_ids) == 3 and len(set(trace_ids)) == 3  # one per call, never shared
    assert "0" * 32 not in trace_ids
    # The run keeps the trace id of the call that created it.
    assert run.trace_id == trace_ids[0]


def test_a_call_inside_a_span_continues_its_trace(server):
    """The runtime's own provider (not the global one): the call joins the current span's
    trace, its parent being that span (the client's own span, without an SDK behind the
    global provider, is a no-op that passes the context on)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    transport = RecordingTransport()
    with (
        StateroomClient(server.url, server.token, transport=transport) as client,
        provider.get_tracer("runtime").start_as_current_span("agent turn") as turn,
    ):
        run = client.create_run(run_id="r-1")
        client.get_run("r-1")
    context = turn.get_span_context()
    for header in transport.traceparents:
        assert parts(header) == (format_trace_id(context.trace_id), format_span_id(context.span_id))
    assert run.trace_id == format_trace_id(context.trace_id)
    assert [span.name for span in exporter.get_finished_spans()] == ["agent turn"]


WITHOUT_OPENTELEMETRY = """
import importlib.abc
import json
import sys

class NoOpenTelemetry(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError(f"{name} is not installed here")
        return None

sys.meta_path.insert(0, NoOpenTelemetry())
import httpx
from stateroom_client import StateroomClient

seen = []

class Recording(httpx.HTTPTransport):
    def handle_request(self, request):
        seen.append(request.headers.get("traceparent"))
        return super().handle_request(request)

with StateroomClient(sys.argv[1], sys.argv[2], transport=Recording()) as client:
    run = client.create_run(run_id="r-plain")
print(json.dumps({
    "traceparents": seen,
    "trace_id": run.trace_id,
    "otel": sorted(m for m in sys.modules if m.startswith("opentelemetry")),
}))
"""


def test_without_opentelemetry_installed_the_client_still_sends_one(server):
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_OPENTELEMETRY, server.url, server.token],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["otel"] == []
    [header] = outcome["traceparents"]
    assert outcome["trace_id"] == parts(header)[0]
