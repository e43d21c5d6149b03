"""Runtime API for sessions and their items (API.md "Sessions").

Thin views: input serializer -> one `SessionStore` call -> output. Closing a
session also settles its runs' pending approvals: that endpoint is
lifecycle_app.api. An unknown
or another tenant's session id is 404 whatever the body or query: when the
input is invalid, the session is looked up before the 400/422 is reported;
when it is valid, the store's own (locked) read answers 404, so the append hot
path does not pay a separate lookup.
"""

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.decorators import api_view
from rest_framework.response import Response

from stateroom.actor import Actor
from stateroom.api import DEFAULT_LIMIT, keyset_page, not_found_first, validated
from stateroom.api_schema import ERRORS_LIST, ERRORS_READ, ERRORS_WRITE, error
from stateroom.contract import NoQuery, query
from tenancy_app.middleware import non_atomic_tenant_view

from .models import Session
from .serializers import (
    SessionAppendIn,
    SessionAppendOut,
    SessionAttachIn,
    SessionCreateIn,
    SessionDetachIn,
    SessionFilterIn,
    SessionHeartbeatIn,
    SessionItemPage,
    SessionItemsQuery,
    SessionOut,
    SessionPage,
    session_items_out,
)
from .store import SessionStore

TAGS = ["sessions"]
_SCOPE_MISMATCH = error("session_scope_mismatch: user_id is not the session's user")
_TERMINAL = error("session_terminal: the session is closed or expired")


def _store(request) -> SessionStore:
    return SessionStore(request.tenant, Actor.from_request(request))


def _out(store: SessionStore, session: Session) -> dict:
    return SessionOut(session, context={"store": store}).data


def _after_lookup(store: SessionStore, session_id: str, parse: Callable[[], Any]) -> Any:
    """Run `parse`; if it refuses the input, an unknown session is still 404 first."""
    return not_found_first(parse, lambda: store.get(session_id))


def _body(request, serializer_class, store: SessionStore, session_id: str) -> dict:
    return validated(serializer_class, request, lookup=lambda: store.get(session_id))


@extend_schema(
    methods=["GET"],
    tags=TAGS,
    operation_id="sessions_list",
    summary="List sessions (keyset-paginated, newest first)",
    parameters=[SessionFilterIn],
    responses={200: SessionPage, **ERRORS_LIST},
)
@extend_schema(
    methods=["POST"],
    tags=TAGS,
    summary="Create a session (status active, revision 0)",
    request=SessionCreateIn,
    responses={
        201: SessionOut,
        **{code: response for code, response in ERRORS_WRITE.items() if code != 404},
        409: error("session_exists: a session with this id exists"),
    },
)
@api_view(["GET", "POST"])
def sessions(request):
    store = _store(request)
    if request.method == "POST":
        serializer = SessionCreateIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        session = store.create(
            session_id=data.get("session_id"),
            user_id=data["user_id"],
            metadata=data.get("metadata"),
            lease_seconds=data["lease_seconds"],
        )
        return Response(_out(store, session), status=201)
    filters = query(request, SessionFilterIn)
    queryset = store.list_sessions(status=filters.get("status"), user_id=filters.get("user_id"))
    return keyset_page(request, queryset, SessionOut, page=filters, context={"store": store})


@extend_schema(
    tags=TAGS,
    summary="Get a session",
    responses={200: SessionOut, **ERRORS_READ},
)
@api_view(["GET"])
def session_detail(request, session_id: str):
    store = _store(request)
    _after_lookup(store, session_id, lambda: query(request, NoQuery))
    return Response(_out(store, store.get(session_id)))


@extend_schema(
    tags=TAGS,
    summary="Attach a run to the session (revision + 1, lease renewed)",
    request=SessionAttachIn,
    responses={
        200: SessionOut,
        **ERRORS_WRITE,
        403: _SCOPE_MISMATCH,
        409: error(
            "revision_conflict (details.current_revision), session_not_attachable "
            "(closed, expired or lease passed), session_busy (serial policy), "
            "run_already_attached, run_not_attachable (the run belongs to another session)"
        ),
    },
)
@api_view(["POST"])
def attach(request, session_id: str):
    store = _store(request)
    data = _body(request, SessionAttachIn, store, session_id)
    return Response(_out(store, store.attach(session_id=session_id, **data)))


@extend_schema(
    tags=TAGS,
    summary="Detach a run from the session (revision + 1; the session stays active)",
    request=SessionDetachIn,
    responses={
        200: SessionOut,
        **ERRORS_WRITE,
        403: _SCOPE_MISMATCH,
        409: error(
            "revision_conflict (details.current_revision), run_not_attached, "
            "session_terminal (closed, expired or lease passed)"
        ),
    },
)
@api_view(["POST"])
def detach(request, session_id: str):
    store = _store(request)
    data = _body(request, SessionDetachIn, store, session_id)
    return Response(_out(store, store.detach(session_id=session_id, **data)))


@extend_schema(
    tags=TAGS,
    summary="Renew the session's lease",
    request=SessionHeartbeatIn,
    responses={200: SessionOut, **ERRORS_WRITE, 409: _TERMINAL},
)
@api_view(["POST"])
def heartbeat(request, session_id: str):
    store = _store(request)
    data = _body(request, SessionHeartbeatIn, store, session_id)
    session = store.heartbeat(session_id=session_id, lease_seconds=data.get("lease_seconds"))
    return Response(_out(store, session))


@extend_schema(
    methods=["GET"],
    tags=TAGS,
    operation_id="sessions_items_list",
    summary="Session items in seq order",
    parameters=[SessionItemsQuery],
    responses={
        200: SessionItemPage,
        **ERRORS_READ,
        422: error("limit, after_seq or before_seq invalid"),
    },
)
@extend_schema(
    methods=["POST"],
    tags=TAGS,
    summary="Append items (gap-free seqs; idempotent with idempotency_key)",
    request=SessionAppendIn,
    responses={
        201: SessionAppendOut,
        200: OpenApiResponse(
            SessionAppendOut, description="Same idempotency_key again: the original seqs"
        ),
        **ERRORS_WRITE,
        409: error(
            "session_terminal, run_not_attached, content_deleted; run_claimed: the run's "
            "live claim is another worker's (details.claimed_by)"
        ),
        422: error(
            "Field validation failed (details lists the fields), or "
            "idempotency_key_reused with different items"
        ),
    },
)
@non_atomic_tenant_view
@api_view(["GET", "POST"])
def items(request, session_id: str):
    # No request transaction (non_atomic_tenant_view): the append and the page read
    # are each one message to PostgreSQL, the tenant setting with the statement.
    store = _store(request)
    if request.method == "POST":
        return _append(request, store, session_id)
    return _items_page(request, store, session_id)


def _append(request, store, session_id: str) -> Response:
    data = _body(request, SessionAppendIn, store, session_id)
    # The store checks payloads further (what the database can hold): an
    # unknown session is still 404 first.
    result = _after_lookup(
        store,
        session_id,
        lambda: store.append_items(
            session_id=session_id,
            items=[dict(item) for item in data["items"]],
            run_id=data["run_id"],
            idempotency_key=data.get("idempotency_key"),
            worker=data.get("worker"),
        ),
    )
    return Response(
        {"first_seq": result.first_seq, "last_seq": result.last_seq},
        status=201 if result.created else 200,
    )


def _items_page(request, store, session_id: str) -> Response:
    params = _after_lookup(store, session_id, lambda: query(request, SessionItemsQuery))
    limit = params.get("limit") or DEFAULT_LIMIT
    after_seq, before_seq = params.get("after_seq"), params.get("before_seq")
    # Forward pages ask one item more to know whether a next page exists; a
    # `before_seq` page ends right before that seq, so it has no next.
    rows = store.get_items(
        session_id=session_id,
        limit=limit if before_seq is not None else limit + 1,
        after_seq=after_seq,
        before_seq=before_seq,
        raw_payload=True,  # written into the response as PostgreSQL sent it
    )
    next_url = None
    if before_seq is None and len(rows) > limit:
        rows = rows[:limit]
        params = request.query_params.copy()
        params["after_seq"] = str(rows[-1].seq)
        next_url = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
    return Response(
        {"results": session_items_out(rows), "next": next_url},
    )


__all__ = ["attach", "detach", "heartbeat", "items", "session_detail", "sessions"]
