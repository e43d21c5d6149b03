"""The session timeline as the README shows it (docs/screenshots/session-timeline.png).

The page is rendered and captured on every run; the file is written only with
STATEROOM_SCREENSHOTS=1, so ordinary test runs leave the working tree alone.
"""

import os
import struct
from pathlib import Path

from playwright.sync_api import expect

from approvals_app.store import ApprovalStore
from audit_app.actor import Actor
from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.console_data.conftest import RUNTIME

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "session-timeline.png"

CONVERSATION = [
    ("user", "message", {"text": "Hi, I was charged twice for order #4512. Can you refund one?"}),
    ("assistant", "message", {"text": "Let me look that order up."}),
    ("assistant", "tool_call", {"name": "lookup_order", "arguments": {"order_id": 4512}}),
    (
        "tool",
        "tool_result",
        {
            "order_id": 4512,
            "charges": [{"id": "ch_1", "amount": "49.00"}, {"id": "ch_2", "amount": "49.00"}],
        },
    ),
    (
        "assistant",
        "message",
        {
            "text": "I can see two charges of $49.00. I'm asking an operator to approve a refund of ch_2."
        },
    ),
]


def build_demo_session(tenant, operator) -> str:
    sid, rid = "sess_support_4512", "run_refund_4512"
    with in_tenant(tenant):
        sessions, runs = SessionStore(tenant, RUNTIME), RunStateStore(tenant, RUNTIME)
        sessions.create(
            session_id=sid,
            user_id="customer-981",
            metadata={"channel": "web chat", "locale": "en-GB"},
        )
        runs.create(run_id=rid, session_id=sid, active_agent="billing-agent")
        sessions.attach(session_id=sid, run_id=rid, user_id="customer-981", expected_revision=0)
        run = runs.compare_and_set(
            run_id=rid, expected_version=1, changes={"status": "running", "token_used": 1840}
        )
        for role, item_type, payload in CONVERSATION:
            sessions.append_items(
                session_id=sid,
                run_id=rid,
                items=[{"role": role, "item_type": item_type, "payload": payload}],
            )
        lookup, _ = EffectStore(tenant, RUNTIME).record(
            run_id=rid,
            idempotency_key="4512-lookup",
            tool_name="lookup_order",
            request={"order_id": 4512},
        )
        EffectStore(tenant, RUNTIME).commit(effect_id=lookup.effect_id, result={"charges": 2})
        approval = ApprovalStore(tenant, RUNTIME).request(
            run_id=rid,
            expected_version=run.version,
            tool_name="refund_charge",
            arguments={"charge_id": "ch_2", "amount": "49.00"},
            risk="high",
            reason="Money leaves the account",
        )
        ApprovalStore(tenant, Actor.for_user(operator)).decide(
            approval_id=approval.approval_id,
            decision="approve",
            reason="Duplicate charge confirmed in Stripe",
        )
        refund, _ = EffectStore(tenant, RUNTIME).record(
            run_id=rid,
            idempotency_key="4512-refund-ch_2",
            tool_name="refund_charge",
            request={"charge_id": "ch_2"},
        )
        EffectStore(tenant, RUNTIME).commit(
            effect_id=refund.effect_id, result={"refund_id": "re_77"}
        )
        sessions.append_items(
            session_id=sid,
            run_id=rid,
            items=[
                {
                    "role": "assistant",
                    "item_type": "message",
                    "payload": {
                        "text": "Done: $49.00 is on its way back to your card (refund re_77)."
                    },
                }
            ],
        )
    return sid


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_session_timeline_screenshot(
    page, live_server, console_login, tenant_a, support_a, operator_a
):
    sid = build_demo_session(tenant_a, operator_a)
    console_login(page, live_server, "sue")
    page.goto(f"{live_server.url}/t/acme/sessions/{sid}/")
    expect(page.locator('[data-testid="timeline"] li[data-kind="item"]')).to_have_count(6)
    for kind in ("attach", "run", "approval", "decision", "effect"):
        expect(
            page.locator(f'[data-testid="timeline"] li[data-kind="{kind}"]').first
        ).to_be_visible()
    image = page.screenshot()
    assert png_size(image) == (1280, 800)
    if os.environ.get("STATEROOM_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        SCREENSHOT.write_bytes(image)
