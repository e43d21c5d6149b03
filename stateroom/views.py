"""Error pages: JSON under /api/, HTML elsewhere."""

from django.http import JsonResponse
from django.shortcuts import render

from .api import error_body

API_PREFIX = "/api/"


def handler404(request, exception=None):
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body("not_found", "Not found."), status=404)
    return render(request, "errors/404.html", status=404)


def handler403(request, exception=None):
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body("forbidden", "Forbidden."), status=403)
    return render(request, "errors/403.html", {"message": str(exception or "")}, status=403)


def handler500(request):
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body("server_error", "Internal server error."), status=500)
    return render(request, "errors/500.html", status=500)
