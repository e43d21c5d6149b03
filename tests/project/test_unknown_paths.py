"""Every path under /api/ that names no endpoint answers 404 in the API's error shape, never
an HTML page: with DEBUG on too (where Django would show its debug page), any method, any
token or none."""

import pytest
from django.test import Client

PATHS = [
    "/api/v1/nope",
    "/api/v1/runs/r-1/nope",
    "/api/v1/runs/r-1/cancel/extra",
    "/api/v1/runs/",
    "/api/v1",
    "/api/v2/runs",
    "/api/",
]


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("path", PATHS)
def test_an_unknown_api_path_is_a_json_404(api_a, settings, debug, path):
    settings.DEBUG = debug
    for api in (api_a, Client()):
        for method in ("get", "post", "put", "delete"):
            response = (
                api.get(path)
                if method == "get"
                else getattr(api, method)(path, "{}", content_type="application/json")
            )
            assert response.status_code == 404, (method, path, response.content[:200])
            assert response["Content-Type"] == "application/json", (method, path)
            assert response.json() == {
                "error": {
                    "code": "not_found",
                    "message": "No such API path.",
                    "details": {"path": path},
                }
            }


def test_the_console_keeps_its_html_404(admin_a, settings):
    from tests.conftest import login

    response = login(admin_a).get("/t/acme/nope/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
