def test_login_form_leads_to_the_tenant_console(page, live_server, console_login, support_a):
    console_login(page, live_server, "sue")
    assert page.url == f"{live_server.url}/t/acme/"
    assert page.locator("h1").inner_text() == "Acme"
    assert page.locator(".username").inner_text() == "sue"
