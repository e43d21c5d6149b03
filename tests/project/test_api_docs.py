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
    assert "<style" not in page  # the CSP allows style-src 'self' only
    assert "/static/css/api-docs.css" in page
    init = client.get("/api/v1/docs/?script=")
    assert init.status_code == 200
    assert b"SwaggerUIBundle" in init.content


def test_schema_is_generated_by_one_thread_at_a_time(monkeypatch, db):
    """Concurrent schema requests of a threaded worker do not generate it at once."""
    import threading
    import time

    from django.test import Client
    from drf_spectacular.generators import SchemaGenerator

    inside, most = [0], [0]
    counting = threading.Lock()
    real = SchemaGenerator.get_schema

    def get_schema(self, *args, **kwargs):
        with counting:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.05)  # hold the generator long enough for the others to arrive
        try:
            return real(self, *args, **kwargs)
        finally:
            with counting:
                inside[0] -= 1

    monkeypatch.setattr(SchemaGenerator, "get_schema", get_schema)
    codes = []

    def fetch() -> None:
        codes.append(Client().get("/api/v1/schema/?format=json").status_code)

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert codes == [200] * 4
    assert most[0] == 1
