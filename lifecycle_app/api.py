"""Runtime API of the data lifecycle (API.md "Data lifecycle", and closing a session).

Closing a session is any token's call (it settles the session's waiting
runs); deletions and erasures need a token with the admin role
(`create_token --role admin`). Each view looks its path id up first (an
unknown or another tenant's id is 404 whatever the token or the body), then
checks the role (403 `admin_required`), then validates the body, then makes
one store call.
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.response import Response

from sessions_app.serializers import SessionCloseIn, SessionOut
from stateroom.actor import Actor
from stateroom.api import not_found_first, validated
from stateroom.api_schema import ERRORS_READ, ERRORS_WRITE, error
from stateroom.contract import NoQuery, StrictCharField, StrictSerializer, query
from stateroom.errors import Forbidden
from tenancy_app.auth import token_has_role
from tenancy_app.models import TokenRole

from .deletion import DeletionStore, progress, receipt
from .endings import SessionEndings
from .erasure import MAX_REASON_LENGTH, MAX_USER_ID_LENGTH, ErasureStore
from .models import Deletion, DeletionStatus

_ADMIN_ONLY = error("admin_required: the token does not have the admin role")


def _actor(request) -> Actor:
    return Actor.from_request(request)


def _require_admin(request) -> None:
    if not token_has_role(request, TokenRole.ADMIN):
        raise Forbidden("This call needs a token with the admin role.", code="admin_required")


# --- serializers ------------------------------------------------------------
Progress = inline_serializer(
    "DeletionProgress", {"done": serializers.IntegerField(), "total": serializers.IntegerField()}
)


class ReceiptOut(serializers.Serializer):
    """Tables touched, rows per class, what was kept and why (only once the job is done)."""

    deleted = serializers.DictField(
        child=serializers.IntegerField(), help_text="Rows whose content went, per class"
    )
    tables = serializers.ListField(
        child=serializers.DictField(), help_text="Each table touched, with its rows"
    )
    kept = serializers.ListField(child=serializers.DictField(), help_text="What stays, and why")
    finished_at = serializers.DateTimeField(allow_null=True, required=False)


class DeletionIn(StrictSerializer):
    reason = StrictCharField(
        max_length=MAX_REASON_LENGTH, help_text="Why the content is deleted (audited)"
    )


class DeletionOut(serializers.Serializer):
    deletion_id = serializers.CharField()
    session_id = serializers.CharField()
    status = serializers.ChoiceField(
        choices=DeletionStatus.choices,
        help_text="running only while a live worker holds the job (its heartbeat); queued "
        "while it waits for one, also after a worker died",
    )
    requested_by = serializers.CharField()
    requested_at = serializers.DateTimeField()
    reason = serializers.CharField()
    policy = serializers.CharField(help_text="manual, retention:…, or erasure:<erasure_id>")
    progress = Progress
    error = serializers.CharField(allow_null=True)
    receipt = ReceiptOut(allow_null=True, help_text="Only when status is done")


class ErasureIn(StrictSerializer):
    user_id = StrictCharField(max_length=MAX_USER_ID_LENGTH, help_text="The data subject")
    reason = StrictCharField(max_length=MAX_REASON_LENGTH, help_text="Why (audited)")


ErasureSession = inline_serializer(
    "ErasureSession",
    {
        "session_id": serializers.CharField(),
        "deletion_id": serializers.CharField(allow_null=True),
        "status": serializers.CharField(help_text="The deletion's status, or held"),
    },
    many=True,
)


class ErasureOut(serializers.Serializer):
    erasure_id = serializers.CharField()
    user_id = serializers.CharField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    requested_by = serializers.CharField()
    requested_at = serializers.DateTimeField()
    reason = serializers.CharField()
    sessions = ErasureSession
    held = serializers.ListField(
        child=serializers.CharField(), help_text="Sessions on legal hold: skipped, kept"
    )
    progress = Progress
    receipt = ReceiptOut(allow_null=True, help_text="Only when status is done")


def deletion_data(store: DeletionStore, deletion: Deletion) -> dict:
    state = progress(deletion, store.now())
    return DeletionOut(
        {
            "deletion_id": deletion.deletion_id,
            "session_id": deletion.session.session_id,
            "status": state["status"],
            "requested_by": deletion.requested_by,
            "requested_at": deletion.created_at,
            "reason": deletion.reason,
            "policy": deletion.policy,
            "progress": {"done": state["deleted_total"], "total": state["planned_total"]},
            "error": deletion.error or None,
            "receipt": receipt(deletion),
        }
    ).data


# --- views --------------------------------------------------------------------
@extend_schema(
    tags=["sessions"],
    operation_id="sessions_close_create",
    summary="Close the session (audited; data stays readable); its waiting runs are cancelled",
    request=SessionCloseIn,
    responses={
        200: SessionOut,
        **ERRORS_WRITE,
        409: error("session_terminal: the session is closed or expired"),
    },
    description=(
        "A run of the session that waits on an approval is cancelled with its approval "
        "(system actor, audited; the requesting runtime's webhook hears of it)."
    ),
)
@api_view(["POST"])
def close(request, session_id: str):
    endings = SessionEndings(request.tenant, _actor(request))
    data = validated(SessionCloseIn, request, lookup=lambda: endings.sessions.get(session_id))
    session = endings.close(session_id=session_id, reason=data["reason"])
    return Response(SessionOut(session, context={"store": endings.sessions}).data)


@extend_schema(
    tags=["lifecycle"],
    operation_id="sessions_deletions_create",
    summary="Delete the content of a closed or expired session (admin tokens)",
    request=DeletionIn,
    responses={
        202: OpenApiResponse(DeletionOut, description="The deletion job, queued"),
        **ERRORS_WRITE,
        403: _ADMIN_ONLY,
        409: error(
            "session_not_ended: close or expire it first; legal_hold: the session or the "
            "tenant is on legal hold (a refused receipt is kept); deletion_running "
            "(details.deletion_id)"
        ),
    },
    description=(
        "From this request on, content-bearing writes to the session and to its runs, "
        "tasks, approvals and effects are 409 content_deleted."
    ),
)
@api_view(["POST"])
def session_deletions(request, session_id: str):
    store = DeletionStore(request.tenant, _actor(request))
    store.owners.sessions.get(session_id)
    _require_admin(request)
    data = validated(DeletionIn, request, lookup=lambda: None)
    deletion = store.request(session_id=session_id, reason=data["reason"])
    return Response(deletion_data(store, store.get(deletion.deletion_id)), status=202)


@extend_schema(
    tags=["lifecycle"],
    operation_id="deletions_retrieve",
    summary="A deletion job: its progress, and its receipt once done (admin tokens)",
    responses={200: DeletionOut, **ERRORS_READ, 403: _ADMIN_ONLY},
)
@api_view(["GET"])
def deletion_detail(request, deletion_id: str):
    store = DeletionStore(request.tenant, _actor(request))
    not_found_first(lambda: query(request, NoQuery), lambda: store.get(deletion_id))
    deletion = store.get(deletion_id)
    _require_admin(request)
    return Response(deletion_data(store, deletion))


@extend_schema(
    tags=["lifecycle"],
    operation_id="erasures_create",
    summary="Erase a data subject: close and delete every session of the user (admin tokens)",
    request=ErasureIn,
    responses={
        202: OpenApiResponse(ErasureOut, description="The erasure, with a deletion per session"),
        **{code: response for code, response in ERRORS_WRITE.items() if code != 404},
        403: _ADMIN_ONLY,
    },
    description=(
        "Every session of the user in the tenant is closed (if live) and its content "
        "deleted, with one receipt for all; a session on legal hold is skipped and listed "
        "under held."
    ),
)
@api_view(["POST"])
def erasures(request):
    _require_admin(request)
    store = ErasureStore(request.tenant, _actor(request))
    data = validated(ErasureIn, request, lookup=lambda: None)
    erasure = store.request(user_id=data["user_id"], reason=data["reason"])
    return Response(ErasureOut(store.state(erasure)).data, status=202)


@extend_schema(
    tags=["lifecycle"],
    operation_id="erasures_retrieve",
    summary="An erasure: its sessions' deletions, status, and receipt once done (admin tokens)",
    responses={200: ErasureOut, **ERRORS_READ, 403: _ADMIN_ONLY},
)
@api_view(["GET"])
def erasure_detail(request, erasure_id: str):
    store = ErasureStore(request.tenant, _actor(request))
    not_found_first(lambda: query(request, NoQuery), lambda: store.get(erasure_id))
    erasure = store.get(erasure_id)
    _require_admin(request)
    return Response(ErasureOut(store.state(erasure)).data)
