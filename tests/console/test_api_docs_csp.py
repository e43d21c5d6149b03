"""The API docs page runs under the console's CSP without a single violation."""

from playwright.sync_api import expect


def test_api_docs_render_with_no_csp_violation(page, live_server, transactional_db):
    problems = []
    page.on(
        "console",
        lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None,
    )
    response = page.goto(f"{live_server.url}/api/v1/docs/")
    assert "style-src 'self'" in response.headers["content-security-policy"]
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Stateroom runtime API")
    page.wait_for_timeout(300)
    assert problems == []
