"""W3C trace context on every call: the `traceparent` header.

With OpenTelemetry installed (`pip install stateroom-client[otel]`, or any
`opentelemetry-api` the runtime already has), each call is a CLIENT span,
`stateroom <METHOD>`, a child of whatever span is current (an agent's turn, a
graph's node), and its context is injected by the propagators the runtime
configured (W3C trace context and baggage unless told otherwise). Without a
configured SDK that span is a no-op and costs next to nothing.

When there is no span to continue (OpenTelemetry not installed, or nothing
traced in this context) the call still carries a `traceparent`: a fresh
random trace id, flagged sampled. That is a choice: the server's own spans of
the call (when its tracing is on) then form a trace of their own rather than
nothing, its logs of the call can be found by that id, and the run created by
the call keeps it (`Run.trace_id`), so a run always has a trace to link. It is
one trace per call, never one for the client's lifetime (which would join
unrelated runs into one trace).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator

try:  # an optional dependency: the `otel` extra
    from opentelemetry import propagate, trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # pragma: no cover - exercised by the test without opentelemetry
    propagate = trace = None  # type: ignore[assignment]
    TraceContextTextMapPropagator = None  # type: ignore[assignment,misc]

TRACEPARENT = "traceparent"


def new_traceparent() -> str:
    """A root trace context: version 00, a random trace id and parent id, sampled."""
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


def _injected() -> dict[str, str]:
    carrier: dict[str, str] = {}
    if propagate is not None:
        propagate.inject(carrier)
        if TRACEPARENT not in carrier:  # propagators configured without W3C trace context
            TraceContextTextMapPropagator().inject(carrier)
    if TRACEPARENT not in carrier:  # no valid span: nothing to continue
        carrier[TRACEPARENT] = new_traceparent()
    return carrier


@contextlib.contextmanager
def traced(method: str, url: str) -> Iterator[dict[str, str]]:
    """The span of one call (with OpenTelemetry); yields the headers that carry its context."""
    if trace is None:
        yield _injected()
        return
    tracer = trace.get_tracer("stateroom_client")
    with tracer.start_as_current_span(
        f"stateroom {method}",
        kind=trace.SpanKind.CLIENT,
        attributes={"http.request.method": method, "url.full": url},
    ):
        yield _injected()
