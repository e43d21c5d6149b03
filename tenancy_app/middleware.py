import logging
import re
import uuid

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.http import Http404, JsonResponse
from django.shortcuts import redirect

from stateroom import ports
from stateroom.actor import Actor
from stateroom.edge import DRAIN_LIMIT, declared_length, drain
from stateroom.sql import GuardRefused, check_pending_guard, guard_tenant_statements

from .access import memberships_of
from .auth import bearer, forget
from .login import needs_second_factor
from .models import Tenant
from .scoping import in_tenant
from .sso.session import gate as sso_gate

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"


def non_atomic_tenant_view(view):
    """Mark a view that runs with no request transaction: a long-poll, which must not hold
    one open, or a hot route whose store call is one message (`hot_cursor(alone=True)`:
    the tenant setting and the statement, one round trip instead of BEGIN, the setting,
    the statement and COMMIT).

    It still runs inside the tenant scope; its store calls open short tenant
    transactions themselves (`BaseStore.atomic`, `reading`), and any other
    query is refused (`in_tenant(atomic=False)`).
    """
    view.stateroom_non_atomic = True
    return view


# The LangGraph checkpointer's routes: a checkpoint is a graph's whole state.
LANGGRAPH_PATH = re.compile(r"^/api/v1/(?:langgraph/|tasks/[^/]+/langgraph(?:/|$))")


def body_limit(path: str) -> int:
    """The body limit of a request to `path` (settings: STATEROOM_*MAX_BODY_BYTES)."""
    if LANGGRAPH_PATH.match(path):
        return settings.STATEROOM_LANGGRAPH_MAX_BODY_BYTES
    return settings.STATEROOM_MAX_BODY_BYTES


class RequestSizeLimitMiddleware:
    """413 before anything parses a body over the configured limit.

    The refused body is read and dropped first: left unread on a keep-alive
    connection, its bytes would be taken for the client's next request and the
    server would drop the connection under that call. (WSGI does not let an
    application answer `Connection: close`: it is a hop-by-hop header, which
    wsgiref refuses and servers need not honour.)
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        length = declared_length(request)
        limit = body_limit(request.path_info)
        if length > limit:
            drain(request, min(length, DRAIN_LIMIT))
            return JsonResponse(
                {
                    "error": {
                        "code": "payload_too_large",
                        "message": "Request body is over the size limit.",
                        "details": {"limit_bytes": limit},
                    }
                },
                status=413,
            )
        return self.get_response(request)


class TenantMiddleware:
    """Resolves the tenant of each request and runs the view inside it.

    Console URLs carry the tenant slug (`/t/<tenant_slug>/…`): a user who is
    not a member gets 404, exactly as for a missing page. API requests get
    their tenant from the bearer token. The view then runs inside the
    django-scopes scope and a transaction carrying the RLS tenant setting.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = request.META.get("HTTP_X_REQUEST_ID", "")[:64] or uuid.uuid4().hex
        request.tenant = None
        request.membership = None
        request.runtime_token = None
        request.bearer_invalid = False
        request.tenant_atomic = False
        response = self.get_response(request)
        response["X-Request-ID"] = request.request_id
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        check = None
        if "tenant_slug" in view_kwargs:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            slug = view_kwargs.pop("tenant_slug")
            found = memberships_of(request.user.pk, tenant_slug=slug)
            if not found:
                _denied_elsewhere(request)
                raise Http404("No such tenant")
            membership = found[0]
            ended = sso_gate(request, membership)
            if ended is not None:
                return ended
            second_factor = needs_second_factor(request, membership)
            if second_factor is not None:
                return redirect(second_factor)
            request.membership = membership
            request.tenant = membership.tenant
        elif request.path.startswith(API_PREFIX) and "HTTP_AUTHORIZATION" in request.META:
            found = bearer(request.META["HTTP_AUTHORIZATION"])
            if found is None:
                request.bearer_invalid = True
                return None
            request.runtime_token = found.token
            request.tenant = found.token.tenant
            check = found.check
        if request.tenant is None:
            return None
        return self._run(request, view_func, view_args, view_kwargs, check)

    def _run(self, request, view_func, view_args, view_kwargs, check):
        if check is not None:
            # Read now: if the check refuses, the view runs again and reads the body again.
            request.body  # noqa: B018
        try:
            response = _checked(check, lambda: _call(request, view_func, view_args, view_kwargs))
        except GuardRefused:
            return self._afresh(request, view_func, view_args, view_kwargs)
        except Http404:
            _denied(request, request.tenant, 404, "not_found")
            raise
        except PermissionDenied:
            _denied(request, request.tenant, 403, "forbidden")
            raise
        # Set by the API's exception handler for a 403/404 it answered.
        denied = getattr(request, "access_denied", None)
        if denied is not None:
            _denied(request, request.tenant, *denied)
        return response

    def _afresh(self, request, view_func, view_args, view_kwargs):
        """The process's copy of the token was refused (revoked, or its tenant changed): the
        view ran with no effect. Read the token again: gone, 401 (Django calls the view,
        DRF refuses); else the view runs again, once, on the rows read now."""
        header = request.META["HTTP_AUTHORIZATION"]
        forget(header)
        found = bearer(header, fresh=True)
        request.access_denied = None
        if found is None:
            request.runtime_token = request.tenant = None
            request.bearer_invalid = True
            return None
        request.runtime_token = found.token
        request.tenant = found.token.tenant
        return self._run(request, view_func, view_args, view_kwargs, None)


def _call(request, view_func, view_args, view_kwargs):
    """The view in the request's tenant: in one transaction, or (`non_atomic_tenant_view`)
    with none, a query outside the view's own tenant blocks refused, not answered empty."""
    if getattr(view_func, "stateroom_non_atomic", False):
        with in_tenant(request.tenant, atomic=False):
            return view_func(request, *view_args, **view_kwargs)
    with in_tenant(request.tenant):
        request.tenant_atomic = True
        return view_func(request, *view_args, **view_kwargs)


def _checked(check, call):
    """`call()` with the cached token's check riding on its first tenant statement; checked
    on its own when it sent none (`GuardRefused`: the token or its tenant changed)."""
    if check is None:
        return call()
    with guard_tenant_statements(*check):
        try:
            response = call()
        except GuardRefused:
            raise
        except BaseException:
            check_pending_guard()  # a refused token's request fails as one, whatever went wrong
            raise
        check_pending_guard()
        return response


def _denied_elsewhere(request) -> None:
    """A console of a tenant the user is not in (or that does not exist).

    Recorded in the user's own tenants' logs, never the one they tried: else
    anyone could write rows, with paths of their choosing, into any tenant's
    append-only log. A user with no tenant is in the security log only.
    """
    own = memberships_of(request.user.pk)
    for membership in own:
        _denied(request, membership.tenant, 404, "not_a_member")
    if not own:
        ports.audit().log_not_a_member(
            actor=Actor.from_request(request), method=request.method, path=request.path
        )


def _denied(request, tenant: Tenant, status: int, code: str) -> None:
    """Record a refused attempt (`access.denied`, rate-limited) after its rollback."""
    try:
        ports.audit().record_access_denied(
            tenant=tenant,
            actor=Actor.from_request(request),
            method=request.method,
            path=request.path,
            status=status,
            code=code,
        )
    except DatabaseError:  # the refusal stands; losing its record must not turn it into a 500
        logger.exception("could not record access.denied for %s", request.path)
