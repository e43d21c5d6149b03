"""htmx conventions of the console, in one place.

- GET: a normal request gets the whole page; an htmx request gets one named
  fragment of the same template (`{% partialdef name inline %}`), so every
  htmx URL is also a working link.
- POST: a normal request is answered with a redirect (post/redirect/get); an
  htmx request with `HX-Redirect`, or with a fragment where the view says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django_htmx.http import HttpResponseClientRedirect


def wants_fragment(request: HttpRequest) -> bool:
    """True for htmx requests that swap part of a page (not boosted navigations)."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def render_page(
    request: HttpRequest,
    template: str,
    context: Mapping[str, Any],
    *,
    fragment: str | None = None,
    status: int = 200,
) -> HttpResponse:
    """The page, or its `fragment` partial when htmx asks for a part of it."""
    name = f"{template}#{fragment}" if fragment and wants_fragment(request) else template
    return render(request, name, context, status=status)


def redirect_after_post(request: HttpRequest, url: str) -> HttpResponse:
    """Post/redirect/get for plain forms; a client-side redirect for htmx."""
    if wants_fragment(request):
        return HttpResponseClientRedirect(url)
    return redirect(url)
