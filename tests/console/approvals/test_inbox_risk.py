"""The inbox shows the risk: summary and key arguments per row, the urgency order, quick
approval only as far as the tenant allows, refreshes that swap nothing when nothing changed;
the approval page shows arguments as an ordered, wrapped tree with the usual call marked."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from approvals_app.store import ApprovalStore
from approvals_app.urgency import urgency
from stateroom.actor import Actor
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.approvals.test_approvals import (
    HX,
    INBOX,
    decide_url,
    detail_url,
    form_data,
    inbox_ids,
    messages_of,
    reload,
)
from tests.console.conftest import csrf_client
from tests.console.fixtures import make_pending, queries


def key_args(page: str, approval_id: str) -> list[tuple[str, str]]:
    row = page.split(f'id="inbox-row-{approval_id}"', 1)[1].split("</tr>", 1)[0]
    cell = row.split('data-testid="inbox-args">', 1)[1].split("</dl>", 1)[0]
    return re.findall(r'<dt class="mono">([^<]*)</dt><dd class="mono">([^<]*)</dd>', cell)


def test_rows_show_the_summary_and_the_arguments_that_matter(operator_a, tenant_a):
    recipients = [f"user{n}@example.com" for n in range(200)]
    make_pending(
        tenant_a,
        run_id="r1",
        approval_id="named",
        summary="Zero every balance <b>now</b>",
        arguments={
            "recipients": recipients,
            "sql": "UPDATE accounts SET balance = 0",
            "dry": False,
        },
        key_arguments=["sql", "dry"],
    )
    make_pending(
        tenant_a,
        run_id="r2",
        approval_id="first-scalars",
        arguments={"z_list": [1, 2], "to": "acct-9", "amount": 1200, "note": "x" * 100, "e": 1},
    )
    page = login(operator_a).get(INBOX).content.decode()
    assert 'data-testid="inbox-summary">Zero every balance &lt;b&gt;now&lt;/b&gt;</div>' in page
    assert key_args(page, "named") == [("sql", "UPDATE accounts SET balance = 0"), ("dry", "false")]
    # Without names: the first three scalars in the order the runtime sent them.
    assert key_args(page, "first-scalars") == [
        ("to", "acct-9"),
        ("amount", "1200"),
        ("note", "x" * 59 + "…"),
    ]


def test_urgency_weighs_time_left_by_risk(tenant_a, operator_a):
    now = timezone.now()
    make_pending(
        tenant_a,
        run_id="r1",
        approval_id="crit-3h",
        risk="critical",
        expires_at=now + timedelta(hours=3),
    )
    make_pending(
        tenant_a,
        run_id="r2",
        approval_id="high-8m",
        risk="high",
        expires_at=now + timedelta(minutes=8),
    )
    make_pending(
        tenant_a, run_id="r3", approval_id="low-1h", risk="low", expires_at=now + timedelta(hours=1)
    )
    make_pending(tenant_a, run_id="r4", approval_id="med-none", risk="medium")
    assert inbox_ids(login(operator_a).get(INBOX)) == ["high-8m", "crit-3h", "low-1h", "med-none"]
    with in_tenant(tenant_a):
        approvals = {a.approval_id: a for a in ApprovalStore(tenant_a, Actor.system("t")).inbox()}
    # The SQL order is the Python formula's order.
    scores = {k: urgency(a, now) for k, a in approvals.items()}
    assert sorted(scores, key=scores.get) == ["high-8m", "crit-3h", "low-1h", "med-none"]
    assert scores["high-8m"] == pytest.approx(120, abs=2)  # 8 min / 4
    assert scores["med-none"] == pytest.approx(43200, abs=2)  # 24 h / 2


@pytest.mark.parametrize(
    ("setting", "quick"),
    [("none", []), ("low", ["low-1"]), ("medium", ["low-1", "med-1"])],
)
def test_quick_approve_only_as_far_as_the_tenant_allows(tenant_a, operator_a, setting, quick):
    Tenant.objects.filter(pk=tenant_a.pk).update(quick_approve_max_risk=setting)
    make_pending(tenant_a, run_id="r1", approval_id="low-1", risk="low")
    make_pending(tenant_a, run_id="r2", approval_id="med-1", risk="medium")
    make_pending(tenant_a, run_id="r3", approval_id="high-1", risk="high")
    page = login(operator_a).get(INBOX).content.decode()
    forms = re.findall(r'action="/t/acme/approvals/([^/]+)/decide"', page)
    assert forms == [a for a in ("med-1", "low-1") if a in quick]  # in urgency order


def test_a_forged_quick_approval_above_the_setting_is_refused(tenant_a, operator_a):
    make_pending(tenant_a, approval_id="med-1", risk="medium")  # the default allows low only
    response = login(operator_a).post(
        decide_url("med-1"), form_data(tenant_a, "med-1", decision="approve", source="inbox")
    )
    assert response["Location"] == detail_url("med-1")
    assert messages_of(response) == [
        "Not decided: medium risk is not approved from the inbox here; "
        "open the call and decide there."
    ]
    assert reload(tenant_a, "med-1").status == "pending"


def test_admin_sets_quick_approve_audited(tenant_a, admin_a, operator_a):
    assert (
        login(operator_a).post("/t/acme/settings/quick-approve", {"max_risk": "medium"}).status_code
        == 403
    )
    response = csrf_client(admin_a).post("/t/acme/settings/quick-approve", {"max_risk": "medium"})
    assert response.status_code == 403  # no CSRF token
    login(admin_a).post("/t/acme/settings/quick-approve", {"max_risk": "medium"})
    tenant_a.refresh_from_db()
    assert tenant_a.quick_approve_max_risk == "medium"
    with in_tenant(tenant_a):
        from audit_app.models import AuditEvent

        event = AuditEvent.objects.get(action="tenant.settings_changed")
    assert (event.before, event.after) == (
        {"quick_approve_max_risk": "low"},
        {"quick_approve_max_risk": "medium"},
    )
    page = login(admin_a).get("/t/acme/settings/").content.decode()
    assert '<option value="medium" selected>' in page


def test_refresh_with_nothing_changed_swaps_nothing(tenant_a, operator_a):
    make_pending(tenant_a, run_id="r1", approval_id="a-1")
    client = login(operator_a)
    first = client.get(INBOX, headers=HX).content.decode()
    fp = re.search(r'id="inbox-fp" name="fp" value="([^"]+)"', first).group(1)
    seen = re.search(r'id="inbox-seen" name="seen" value="(\d+)"', first).group(1)
    same = client.get(INBOX, {"fp": fp, "seen": seen}, headers=HX)
    assert same.status_code == 204 and same.content == b""
    make_pending(tenant_a, run_id="r2", approval_id="a-2")
    changed = client.get(INBOX, {"fp": fp, "seen": seen}, headers=HX).content.decode()
    assert inbox_ids_of(changed) == ["a-1", "a-2"]
    assert '<span id="inbox-status" hx-swap-oob="true">2 pending, 1 new</span>' in changed
    assert 'id="inbox-row-a-2"' in changed and 'tabindex="-1"' in changed


def inbox_ids_of(body: str) -> list[str]:
    return re.findall(r'data-hotkey-row data-id="([^"]+)"', body)


@pytest.mark.parametrize("rows", [1, 15])
def test_inbox_query_count_with_key_arguments(
    tenant_a, operator_a, rows, django_assert_num_queries
):
    for n in range(rows):
        make_pending(
            tenant_a, run_id=f"r{n}", session_id=f"s{n}", approval_id=f"a-{n}", summary=f"call {n}"
        )
    client = login(operator_a)
    # Layout (badge count, tenant switcher) and the inbox with runs and sessions.
    with django_assert_num_queries(queries(8)):  # as the plain inbox: summaries cost nothing
        client.get(INBOX)


# --- the approval page's arguments -------------------------------------------------


def test_arguments_are_a_tree_in_the_runtimes_order_folded_and_escaped(tenant_a, support_a):
    long_sql = "UPDATE accounts SET balance = 0 WHERE " + " OR ".join(
        f"id = {n}" for n in range(40)
    )
    make_pending(
        tenant_a,
        approval_id="a-1",
        arguments={
            "sql": long_sql,
            "recipients": [f"u{n}@x.io" for n in range(200)],
            "amount": 5,
            "<script>": "<img src=x onerror=alert(1)>",
        },
        usual_arguments={"sql": "SELECT 1", "amount": 5, "limit": 10},
    )
    page = login(support_a).get(detail_url("a-1")).content.decode()
    tree = page.split('data-testid="argument-tree">', 1)[1].split("</section>", 1)[0]
    # Top-level keys (dt right after the tree opens or after a top-level dd closes) in the
    # runtime's order, not jsonb's (which sorts shorter keys first).
    top = re.findall(r'(?:^|</dd>)<dt class="mono">([^<]*)</dt>', tree)
    assert top[0] == "sql" and top[-4:] == ["recipients", "amount", "&lt;script&gt;", "limit"]
    assert "&lt;script&gt;" in tree and "<script>" not in tree
    assert "&lt;img src=x onerror=alert(1)&gt;" in tree
    assert f"({len(long_sql)} characters: show all)" in tree
    assert "200 items (show)" in tree
    hints = re.findall(r'data-testid="usual-hint">([^<]*)</span>', tree)
    assert hints == [
        "usual: SELECT 1",
        "not in the usual call",
        "not in the usual call",
        "usual: 10",
    ]


def test_amounts_the_display_hint_names_read_as_money(tenant_a, support_a):
    make_pending(
        tenant_a,
        approval_id="a-1",
        arguments={"amount_cents": 230000, "fee": -150, "yen": 230000, "count": 230000},
        display={
            "amounts": [
                {"argument": "amount_cents", "currency": "EUR"},
                {"argument": "fee", "currency": "USD", "minor_units": 2},
                {"argument": "yen", "currency": "JPY", "minor_units": 0},
            ]
        },
        key_arguments=["amount_cents", "fee", "count"],
    )
    client = login(support_a)
    assert key_args(client.get(INBOX).content.decode(), "a-1") == [
        ("amount_cents", "EUR 2,300.00"),
        ("fee", "USD -1.50"),
        ("count", "230000"),  # not named by the hint: a count, not money
    ]
    tree = client.get(detail_url("a-1")).content.decode().split('data-testid="argument-tree">')[1]
    money = re.findall(
        r'<span class="money" data-testid="money">([^<]*)</span> <span class="muted">\('
        r'<span class="argval mono">([^<]*)</span>\)',
        tree,
    )
    assert money == [("EUR 2,300.00", "230000"), ("USD -1.50", "-150"), ("JPY 230,000", "230000")]
