"""The run page links the run's trace (STATEROOM_TRACE_URL) and shows the model it reported."""

from runs_app.store import RunStateStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME, layout_queries

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def traced_run(tenant, run_id: str = "r-1", trace_id: str | None = TRACE):
    with in_tenant(tenant):
        store = RunStateStore(tenant, RUNTIME)
        store.create(run_id=run_id, trace_id=trace_id)
        return store.compare_and_set(
            run_id=run_id,
            expected_version=1,
            changes={"status": "running", "token_used": 5120, "model": "gpt-5-mini"},
        )


def field(body: str, testid: str) -> str:
    return body.split(f'data-testid="{testid}">', 1)[1].split("</dd>", 1)[0]


def test_the_run_page_links_its_trace_through_the_template(
    tenant_a, support_a, settings, django_assert_num_queries
):
    settings.STATEROOM_TRACE_URL = "https://jaeger.example/trace/{trace_id}?uiEmbed=v0"
    traced_run(tenant_a)
    client = login(support_a)
    # The link costs no query: the trace id is a column of the run the page reads anyway.
    with django_assert_num_queries(layout_queries(client, tenant_a) + 11):
        body = client.get("/t/acme/runs/r-1/").content.decode()
    assert field(body, "run-trace") == (
        f'<a href="https://jaeger.example/trace/{TRACE}?uiEmbed=v0" target="_blank" '
        f'rel="noopener noreferrer">{TRACE}</a>'
    )
    assert field(body, "run-model") == "gpt-5-mini"


def test_without_a_template_the_trace_id_is_shown_unlinked(tenant_a, support_a, settings):
    settings.STATEROOM_TRACE_URL = ""
    traced_run(tenant_a)
    body = login(support_a).get("/t/acme/runs/r-1/").content.decode()
    assert field(body, "run-trace") == TRACE
    assert "jaeger" not in body


def test_a_run_without_a_trace_has_no_link(tenant_a, support_a, settings):
    settings.STATEROOM_TRACE_URL = "https://jaeger.example/trace/{trace_id}"
    traced_run(tenant_a, trace_id=None)
    body = login(support_a).get("/t/acme/runs/r-1/").content.decode()
    assert field(body, "run-trace") == "—"
    assert "jaeger.example" not in body


def test_another_tenants_run_page_is_404(tenant_a, tenant_b, admin_b, settings):
    settings.STATEROOM_TRACE_URL = "https://jaeger.example/trace/{trace_id}"
    traced_run(tenant_a)
    client = login(admin_b)
    assert client.get(f"/t/{tenant_b.slug}/runs/r-1/").status_code == 404
