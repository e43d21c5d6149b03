"""The run inspector at 1440 px: every column of the history and the effects ledger shows,
long ids and JSON wrap instead of pushing BY and RESULT out of view."""

from playwright.sync_api import expect

from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from tenancy_app.scoping import in_tenant
from tests.actions.test_run_control import make_run
from tests.console.conftest import RUNTIME


def test_by_and_result_columns_fit_at_1440(
    browser, live_server, console_login, support_a, tenant_a
):
    run = make_run(tenant_a, run_id="run-" + "x" * 60)
    with in_tenant(tenant_a):
        runs = RunStateStore(tenant_a, RUNTIME)
        runs.compare_and_set(
            run_id=run.run_id,
            expected_version=run.version,
            changes={"current_node_id": "node-" + "y" * 80, "token_used": 123456789},
        )
        effects = EffectStore(tenant_a, RUNTIME)
        effect, _ = effects.record(
            run_id=run.run_id,
            idempotency_key="key-" + "z" * 120,
            tool_name="refund",
            request={"n": 1},
        )
        effects.commit(effect_id=effect.effect_id, result={"receipt": "r" * 200})
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        console_login(page, live_server, "sue")
        page.goto(f"{live_server.url}/t/acme/runs/{run.run_id}/")
        for table, header in (("history-title", "By"), ("effects-title", "Result / error")):
            wrap = page.locator(f"section[aria-labelledby={table}] .table-wrap")
            cell = wrap.locator("th", has_text=header)
            expect(cell).to_be_visible()
            box, frame = cell.bounding_box(), wrap.bounding_box()
            assert box["x"] + box["width"] <= frame["x"] + frame["width"] + 1, (table, box, frame)
            assert wrap.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), table
    finally:
        context.close()
