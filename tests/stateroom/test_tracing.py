"""OpenTelemetry traces (stateroom.tracing, stateroom_client._tracing).

One trace spans the runtime's span, the client's call, the server's request, its
SQL, the Celery job the request enqueued (published to a real Redis, run by a
real worker consuming it) and the webhook that job posts: the context goes over
HTTP in `traceparent` and through the Celery message's headers, as in production.
The server is a real WSGI server on loopback, in this process, so the spans of
every part reach one in-memory exporter.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from celery.contrib.testing.worker import start_worker
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from opentelemetry.util._once import Once

from runs_app.models import Run
from runs_app.webhooks import NOTIFY_RUN_CONTROL
from stateroom import tracing
from stateroom.celery import app as celery_app
from stateroom_client import StateroomClient
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore
from tests.approvals.test_webhooks import Receiver
from tests.infra import ROOT, producing_to, redis_server, subprocess_env, web_server

LIVE = pytest.mark.django_db(transaction=True)  # servers and workers on their own connections


def _reset_global_provider() -> None:
    """OpenTelemetry sets its global tracer provider once per process; its own tests reset
    it like this (opentelemetry-test-utils' reset_trace_globals), so the next test starts
    untraced."""
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    assert tracing.setup(exporter=exporter)
    try:
        yield exporter
    finally:
        tracing.shutdown()
        _reset_global_provider()


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def wsgi_server(spans):
    """The project's WSGI application (its middleware loaded now, traced) on 127.0.0.1."""
    httpd = ThreadedWSGIServer(("127.0.0.1", 0), _Quiet, allow_reuse_address=False)
    httpd.set_app(get_wsgi_application())
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


@pytest.fixture
def worker():
    """A real Celery worker on a Redis of this test's own, consuming a queue of its own."""
    queue = f"traces-{uuid.uuid4().hex[:12]}"
    with redis_server() as (port, _server):
        broker = f"redis://127.0.0.1:{port}/0"
        with (
            producing_to(broker, queue),
            start_worker(
                celery_app,
                pool="solo",
                queues=[queue],
                perform_ping_check=False,
                shutdown_timeout=20,
            ),
        ):
            yield


def attribute(span, name: str, old_name: str | None = None):
    """A span attribute by its current semantic-convention name, or the older one the
    instrumentations still emit unless OTEL_SEMCONV_STABILITY_OPT_IN says otherwise."""
    value = span.attributes.get(name)
    return span.attributes.get(old_name) if value is None and old_name else value


def wait_for(condition, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


@pytest.mark.celery_worker
@LIVE
def test_one_trace_spans_client_request_sql_and_the_job_it_enqueued(
    spans, wsgi_server, worker, tenant_a, settings
):
    settings.STATEROOM_WEBHOOK_ALLOW = ["127.0.0.1/32"]
    settings.STATEROOM_TRACE_URL = "https://jaeger.example/trace/{trace_id}"
    with Receiver([200]) as receiver:
        with in_tenant(tenant_a):
            _, secret = TenancyStore(tenant_a, _system()).create_token(
                name="hooked", webhook_url=receiver.url
            )
        spans.clear()  # the test's own setup (its SQL) is no part of the runtime's trace
        tracer = trace.get_tracer("the-runtime")
        with (
            StateroomClient(wsgi_server, secret) as client,
            tracer.start_as_current_span("agent turn") as turn,
        ):
            client.create_run(run_id="r-traced")
            client.cancel_run("r-traced", reason="the user left")  # enqueues the webhook job
        trace_id = turn.get_span_context().trace_id
        wait_for(lambda: receiver.requests, "the webhook")
        job = wait_for(
            lambda: [s for s in spans.get_finished_spans() if s.name.startswith("run/")],
            "the job's span",
        )[0]
        webhook_headers = {k.lower(): v for k, v in receiver.requests[0][0].items()}

    finished = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}
    # ONE trace: every span of the call, the request, the SQL and the job has the turn's id.
    assert {s.context.trace_id for s in finished} == {trace_id}

    def ancestors(span):
        while span.parent is not None and span.parent.span_id in by_id:
            span = by_id[span.parent.span_id]
            yield span

    cancel_request = next(s for s in finished if s.kind == SpanKind.SERVER and "cancel" in s.name)
    # Above the request: the client's call (`stateroom POST`; httpx's own span between them
    # here, httpx being instrumented in this process by the server's setup), then the turn.
    above = [(s.name, s.kind) for s in ancestors(cancel_request)]
    assert above[-2:] == [("stateroom POST", SpanKind.CLIENT), ("agent turn", SpanKind.INTERNAL)]
    assert attribute(cancel_request, "http.route") == "api/v1/runs/<pid:run_id>/cancel"
    assert attribute(cancel_request, "http.response.status_code", "http.status_code") == 200
    sql = [s for s in finished if attribute(s, "db.system.name", "db.system") == "postgresql"]
    assert any(cancel_request in ancestors(s) for s in sql), "the request's SQL"
    publish = next(s for s in finished if s.kind == SpanKind.PRODUCER)
    assert publish.name == f"apply_async/{NOTIFY_RUN_CONTROL}"
    assert cancel_request in ancestors(publish)
    # The job ran in the worker, its context taken from the message's headers.
    assert job.name == f"run/{NOTIFY_RUN_CONTROL}"
    assert job.kind == SpanKind.CONSUMER
    assert job.parent.span_id == publish.context.span_id
    assert any(job in ancestors(s) for s in sql), "the job's SQL"
    [webhook] = [s for s in finished if attribute(s, "url.full", "http.url") == receiver.url]
    assert job in ancestors(webhook)
    assert (webhook.kind, attribute(webhook, "http.request.method", "http.method")) == (
        SpanKind.CLIENT,
        "POST",
    )
    # ...and the webhook carries the trace on to the runtime that receives it.
    assert webhook_headers["traceparent"].split("-")[1] == trace.format_trace_id(trace_id)

    # The run keeps the trace id of the call that created it; the console links it.
    with in_tenant(tenant_a):
        assert Run.objects.get(tenant=tenant_a, run_id="r-traced").trace_id == (
            trace.format_trace_id(trace_id)
        )


def _system():
    from stateroom.actor import Actor

    return Actor.system("test")


OFF_PROBE = """
import sys
import stateroom.wsgi
from django.conf import settings
from stateroom import tracing
loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry.sdk", "opentelemetry.instrumentation")))
middleware = [m for m in settings.MIDDLEWARE if "opentelemetry" in m]
print(tracing.setup(), loaded, middleware)
"""


def test_tracing_is_off_without_an_otlp_endpoint():
    """Off by default: loading the WSGI application loads no SDK and no instrumentation, and
    no middleware of theirs runs in a request."""
    env = subprocess_env()
    for name in (*tracing.ENDPOINT_VARIABLES, "OTEL_SDK_DISABLED"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", OFF_PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False [] []"


def test_an_otlp_endpoint_turns_it_on_and_the_sdk_switch_turns_it_off():
    assert not tracing.enabled({})
    assert not tracing.enabled({"OTEL_EXPORTER_OTLP_ENDPOINT": " "})
    assert tracing.enabled({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert tracing.enabled(
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}
    )
    assert not tracing.enabled(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}
    )


class Collector:
    """An OTLP/HTTP trace receiver on loopback: keeps the spans it is sent (protobuf)."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        self.spans: list = []
        self.paths: list[str] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                collector.paths.append(self.path)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        collector.spans.extend(scope.spans)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


@LIVE
def test_an_otlp_endpoint_makes_the_web_server_export_the_requests_trace(tenant_a, make_token):
    """The production path: the web server's worker process exports over OTLP/HTTP, batched, the
    request's span continuing the caller's traceparent, with its SQL beneath it."""
    token = make_token(tenant_a)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    with Collector() as collector:
        env = subprocess_env(
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_BSP_SCHEDULE_DELAY="100"
        )
        with web_server(env, workers=1) as base:
            response = httpx.post(
                base + "/api/v1/runs",
                json={"run_id": "r-otlp"},
                headers={
                    "Authorization": f"Bearer {token}",
                    "traceparent": f"00-{trace_id}-00f067aa0ba902b7-01",
                },
            )
            assert response.status_code == 201
            assert response.json()["trace_id"] == trace_id

            def server_span():
                return [
                    s
                    for s in collector.spans
                    if s.trace_id.hex() == trace_id and s.kind == s.SPAN_KIND_SERVER
                ]

            [request] = wait_for(server_span, "the request's span over OTLP")
    assert collector.paths and set(collector.paths) == {"/v1/traces"}
    assert request.parent_span_id.hex() == "00f067aa0ba902b7"  # the caller's span
    sql = [
        s for s in collector.spans if s.trace_id.hex() == trace_id and s.kind == s.SPAN_KIND_CLIENT
    ]
    assert sql, "the request's SQL"
    # Health checks (the server's start is polled on /healthz) are not traced.
    assert all(
        s.trace_id.hex() == trace_id for s in collector.spans if s.kind == s.SPAN_KIND_SERVER
    )
