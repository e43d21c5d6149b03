"""What an operator reads in the inbox's key-arguments column, at 1280, 1920 and 320 px:
a value never breaks inside a token, and an amount the runtime marks as money reads as money.
"""

import pytest
from playwright.sync_api import expect

from tests.console.fixtures import make_pending
from tests.console.widths import WIDTHS, at_width

INBOX = "/t/acme/approvals/"
IBAN = "DE89 3704 0044 0532 0130 00"

# The lines each whitespace-separated token of an element's text is laid out on.
TOKEN_LINES = """el => {
    const node = el.firstChild, text = node.textContent, out = [];
    for (const m of text.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        out.push([m[0], tops.size]);
    }
    const all = document.createRange();
    all.selectNodeContents(el);
    const lines = new Set([...all.getClientRects()].map(r => Math.round(r.top))).size;
    return {tokens: out, lines: lines};
}"""


@pytest.fixture
def busy_inbox(tenant_a):
    """Rows whose other columns want room: long summaries, long ids, a critical call."""
    make_pending(
        tenant_a,
        run_id="run-2026-12-05-refunds-batch-0042",
        session_id="sess-support-chat-7f3a9c2e",
        approval_id="apr-transfer",
        risk="high",
        tool_name="transfer_funds_to_external_account",
        arguments={"amount_cents": 230000, "iban": IBAN, "reference": "INV-2026-00042", "x": 1},
        key_arguments=["amount_cents", "iban", "reference"],
        summary="Transfer the refund for order 42 to the customer's new bank account "
        "(changed yesterday by the customer in the self-service portal)",
        display={"amounts": [{"argument": "amount_cents", "currency": "EUR", "minor_units": 2}]},
    )
    make_pending(
        tenant_a,
        run_id="r-2",
        session_id="s-2",
        approval_id="apr-plain",
        risk="low",
        arguments={"count": 230000, "to": "acct-9"},
        summary="Send the quarterly statement to every customer of the Northern region",
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_key_values_never_break_inside_a_token_and_money_reads_as_money(
    page, live_server, console_login, operator_a, busy_inbox, width
):
    at_width(page, width)
    console_login(page, live_server, "otto")
    page.goto(live_server.url + INBOX)
    transfer = page.locator("#inbox-row-apr-transfer [data-testid=inbox-args] dd")
    expect(transfer).to_have_text(["EUR 2,300.00", IBAN, "INV-2026-00042"])
    expect(page.locator("#inbox-row-apr-plain [data-testid=inbox-args] dd").first).to_have_text(
        "230000"  # no hint: a count is not money
    )
    for value in page.locator("[data-testid=inbox-args] dd").all():
        layout = value.evaluate(TOKEN_LINES)
        broken = [token for token, lines in layout["tokens"] if lines > 1]
        assert not broken, f"at {width} px, broken inside a token: {broken}"
        assert value.evaluate("el => el.scrollWidth <= el.clientWidth"), (
            f"at {width} px, {value.inner_text()!r} runs out of its box into the next column"
        )
        if width != "320":  # a desktop row shows each value on one line (an IBAN whole)
            assert layout["lines"] == 1, f"at {width} px, {value.inner_text()!r} wraps"
    wrap = page.locator(".table-wrap")  # the table fits: no sideways scrolling in it either
    assert wrap.evaluate("el => el.scrollWidth <= el.clientWidth"), f"at {width} px"
    # 320 px reflows: the page itself never scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width][0]
