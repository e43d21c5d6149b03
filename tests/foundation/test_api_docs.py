def test_schema_is_served_without_auth(client, db):
    response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["info"]["title"] == "Stateroom runtime API"
    assert schema["components"]["securitySchemes"]["runtimeToken"]["scheme"] == "bearer"
    assert "/api/v1/me" in schema["paths"]


def test_docs_page_loads_swagger_from_our_static_files_without_inline_script(client, db):
    response = client.get("/api/v1/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page
    assert "cdn" not in page.lower()
    assert "<script>" not in page.replace(" ", "")
    init = client.get("/api/v1/docs/?script=")
    assert init.status_code == 200
    assert b"SwaggerUIBundle" in init.content
