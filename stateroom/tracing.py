"""OpenTelemetry traces: off by default, on when an OTLP endpoint is configured.

`setup()` is the one place the server's tracing is made: a `TracerProvider`
exporting over OTLP/HTTP, and the official instrumentations of what the server
does: Django (a span per request, continuing the caller's W3C `traceparent`),
psycopg (a span per SQL statement), Celery (a span per publish and per task
run, the context carried in the message's headers), httpx (webhooks to
runtimes, `stateroom.egress`) and urllib (the Slack channel's `slack_sdk`).
It is called by `stateroom.wsgi`, `stateroom.asgi` and the Celery worker's
start (`stateroom.celery`); a test passes its own exporter.

It is on when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
is set (the standard variables; the exporter reads them, and the other
`OTEL_*` ones: headers, sampler, service name) and `OTEL_SDK_DISABLED` is not
`true`. Off, nothing of the SDK or the instrumentations is imported and no
code of theirs runs in a request: the only trace work left is reading a
request's `traceparent` to keep a run's trace id (`trace_id_from_header`).

A run keeps the trace id of the call that created it, or of the first call
that carried one (`Run.trace_id`); the console links it through
`STATEROOM_TRACE_URL` (`trace_url`).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from django.conf import settings

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
# Never traced: the health check and the Prometheus scrape (every few seconds, no news).
EXCLUDED_URLS = "healthz,metrics"

_lock = threading.Lock()
_provider: Any = None


def enabled(environ: dict[str, str] | None = None) -> bool:
    """Whether the environment asks for traces: an OTLP endpoint, and the SDK not disabled."""
    environ = os.environ if environ is None else environ
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def setup(*, service_name: str = "stateroom", exporter: Any = None) -> bool:
    """Instrument this process once, if tracing is on (or an `exporter` is given); whether it is.

    `exporter` (tests): spans go to it as each ends, instead of batched to OTLP.
    """
    global _provider
    with _lock:
        if _provider is not None:
            return True
        if exporter is None and not enabled():
            return False
        _provider = _instrument(service_name, exporter)
        return True


def _instrument(service_name: str, exporter: Any) -> Any:
    from opentelemetry import trace
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.urllib import URLLibInstrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES, when set, win over the default name.
    resource = Resource.create({SERVICE_NAME: service_name}).merge(Resource.create())
    provider = TracerProvider(resource=resource)
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # Batched in a thread of its own; the SDK restarts it in a forked child
        # (Celery's prefork workers; the web server's workers start their own).
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument(tracer_provider=provider, excluded_urls=EXCLUDED_URLS)
    PsycopgInstrumentor().instrument(tracer_provider=provider)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
    URLLibInstrumentor().instrument(tracer_provider=provider)
    return provider


def shutdown() -> None:
    """Undo `setup`: the instrumentations removed, the provider's spans exported and closed
    (a test that traced leaves the process as it found it)."""
    global _provider
    with _lock:
        if _provider is None:
            return
        from opentelemetry.instrumentation.celery import CeleryInstrumentor
        from opentelemetry.instrumentation.django import DjangoInstrumentor
        from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
        from opentelemetry.instrumentation.urllib import URLLibInstrumentor

        for instrumentor in (
            DjangoInstrumentor,
            PsycopgInstrumentor,
            CeleryInstrumentor,
            HTTPXClientInstrumentor,
            URLLibInstrumentor,
        ):
            instrumentor().uninstrument()
        _provider.shutdown()
        _provider = None


def flush(timeout_millis: int = 5000) -> None:
    """Export what is buffered (a worker that ends, a test that reads its spans)."""
    if _provider is not None:
        _provider.force_flush(timeout_millis)


def trace_id_from_header(value: str | None) -> str | None:
    """The trace id (32 lowercase hex digits) of a W3C `traceparent` value; None if it has none.

    Parsed by OpenTelemetry's own W3C propagator (opentelemetry-api, a server
    dependency whether tracing is on or off), so what it refuses is what
    every traced service refuses: a wrong length, an all-zero id, version ff.
    """
    if not value:
        return None
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    context = TraceContextTextMapPropagator().extract({"traceparent": value})
    span_context = trace.get_current_span(context).get_span_context()
    if not span_context.is_valid:
        return None
    return trace.format_trace_id(span_context.trace_id)


def request_trace_id(request) -> str | None:
    """The trace id of the `traceparent` header a request carried, if any."""
    return trace_id_from_header(request.headers.get("traceparent"))


def trace_url(trace_id: str | None) -> str | None:
    """Where the console links a trace: `STATEROOM_TRACE_URL` with `{trace_id}` filled; None
    without a template or a trace id."""
    template = getattr(settings, "STATEROOM_TRACE_URL", "")
    if not template or not trace_id:
        return None
    return template.replace("{trace_id}", trace_id)
