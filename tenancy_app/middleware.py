import uuid

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, JsonResponse
from django_scopes import scope

from .access import memberships_of
from .auth import resolve_bearer
from .scoping import tenant_transaction

API_PREFIX = "/api/"


def non_atomic_tenant_view(view):
    """Mark a view that must not hold a transaction open (long-polls).

    It still runs inside the tenant scope; it opens short tenant transactions
    itself with `tenant_transaction`.
    """
    view.stateroom_non_atomic = True
    return view


class RequestSizeLimitMiddleware:
    """413 before anything reads a body over the configured limit."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > settings.STATEROOM_MAX_BODY_BYTES:
            return JsonResponse(
                {
                    "error": {
                        "code": "payload_too_large",
                        "message": "Request body is over the size limit.",
                        "details": {"limit_bytes": settings.STATEROOM_MAX_BODY_BYTES},
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
        if "tenant_slug" in view_kwargs:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            found = memberships_of(request.user.pk, tenant_slug=view_kwargs.pop("tenant_slug"))
            if not found:
                raise Http404("No such tenant")
            membership = found[0]
            request.membership = membership
            request.tenant = membership.tenant
        elif request.path.startswith(API_PREFIX) and "HTTP_AUTHORIZATION" in request.META:
            token = resolve_bearer(request.META["HTTP_AUTHORIZATION"])
            if token is None:
                request.bearer_invalid = True
                return None
            request.runtime_token = token
            request.tenant = token.tenant
        if request.tenant is None:
            return None
        with scope(tenant=request.tenant):
            if getattr(view_func, "stateroom_non_atomic", False):
                return view_func(request, *view_args, **view_kwargs)
            with tenant_transaction(request.tenant.pk):
                request.tenant_atomic = True
                return view_func(request, *view_args, **view_kwargs)
