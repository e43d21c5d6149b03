"""The CSP header: django-csp's policy, built once per setting (`stateroom.edge.CSPMiddleware`)."""

from __future__ import annotations

import pytest
from csp.constants import HEADER, HEADER_REPORT_ONLY, NONCE, NONE, SELF
from csp.decorators import csp_update
from csp.exceptions import CSPNonceError
from csp.utils import build_policy
from django.http import HttpResponse
from django.test import RequestFactory

from stateroom.edge import CSPMiddleware


def directives(header: str) -> set[str]:
    """A policy's directives, whatever their order (django-csp's follows a set's)."""
    return {part.strip() for part in header.split(";")}


def respond(view=lambda request: HttpResponse("ok"), path: str = "/t/acme/"):
    request = RequestFactory().get(path)
    middleware = CSPMiddleware(view)
    return request, middleware(request)


def test_every_answer_carries_the_settings_policy(api_a, client):
    expected = directives(build_policy())
    assert "script-src 'self'" in expected
    assert directives(api_a.get("/api/v1/me")[HEADER]) == expected
    page = client.get("/login/")
    assert page.status_code == 200
    assert directives(page[HEADER]) == expected


def test_a_replaced_setting_is_the_next_answers_policy(settings):
    respond()  # built for the settings as they were
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": [NONE]}}
    assert respond()[1][HEADER] == "default-src 'none'"
    settings.CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": {"img-src": [SELF]}}
    response = respond()[1]
    assert response[HEADER] == "default-src 'none'"
    assert directives(response[HEADER_REPORT_ONLY]) == {"img-src 'self'", "default-src 'self'"}


def test_a_view_with_a_policy_of_its_own_keeps_it():
    own = csp_update({"img-src": ["https://images.example.com"]})(lambda r: HttpResponse("ok"))
    header = respond(own)[1][HEADER]
    assert "https://images.example.com" in header
    assert directives(respond()[1][HEADER]) == directives(build_policy())


def test_a_nonce_used_by_the_page_is_in_its_header(settings):
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"script-src": [SELF, NONCE]}}

    def page(request):
        return HttpResponse(f"<script nonce='{request.csp_nonce}'></script>")

    request, response = respond(page)
    assert f"'nonce-{request._csp_nonce}'" in response[HEADER]
    # No nonce asked for, none given.
    assert directives(respond()[1][HEADER]) == {"script-src 'self'", "default-src 'self'"}
    with pytest.raises(CSPNonceError):
        str(respond()[0].csp_nonce)


def test_exempt_and_excluded_answers_go_without(settings):
    def exempt(request):
        response = HttpResponse("ok")
        response._csp_exempt = True
        return response

    assert HEADER not in respond(exempt)[1]
    settings.CONTENT_SECURITY_POLICY = {
        "EXCLUDE_URL_PREFIXES": ["/plain/"],
        "DIRECTIVES": {"default-src": [SELF]},
    }
    assert HEADER not in respond(path="/plain/page")[1]
    assert respond(path="/t/acme/")[1][HEADER] == "default-src 'self'"
