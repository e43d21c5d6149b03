"""The tenant's dashboard: approvals, runs, effects, usage and deletions over 24 h, 7 d or
30 d, each chart with its text summary, the table of its numbers and a link to the list
behind it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import urlencode

from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from console_app.charts import Series, bar_chart, data_table, line_chart, table_body
from console_app.forms.dashboard import RANGE_LABELS, DashboardForm
from console_app.selectors import dashboard as figures
from stateroom.htmx import render_page
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

RISK_CSS = {"low": "low", "medium": "medium", "high": "high", "critical": "critical"}


def now() -> datetime:
    """The dashboard's clock (tests replace it)."""
    return timezone.now()


@require_permission(Permission.READ)
@require_GET
def dashboard(request):
    form = DashboardForm(request.GET)
    context = {"nav": "dashboard", "form": form, "ranges": RANGE_LABELS}
    if not form.is_valid():
        return render_page(request, "console/dashboard/dashboard.html", context, status=400)
    at = now()
    win = figures.window(form.cleaned_data["range"], form.cleaned_data["tz"], at)
    with_erasures = request.membership.can(Permission.ERASE)
    data = figures.dashboard(request.tenant, win, at, with_erasures=with_erasures)
    urls = Links(request.tenant.slug, win)
    context.update(
        {
            "win": win,
            "range_key": win.key,
            "tz_name": str(win.tz),
            "range_label": RANGE_LABELS[win.key].lower(),
            "figures": data,
            "charts": [
                _decision_time(win, data["approvals"], urls),
                _approval_flow(win, data["approvals"], urls),
                _backlog(data["approvals"], urls, at),
                _runs(win, data["runs"], urls),
                _effects(win, data["effects"], urls),
                *_usage(win, data["runs"], urls),
                *_deletions(win, data["deletions"], urls),
            ],
            "by_tool": _by_tool(data["approvals"]["by_tool"], urls),
            "reasons": data["runs"]["reasons"],
            "sessions": data["runs"]["sessions"],
            "agents": data["runs"]["agents"],
        }
    )
    return render_page(request, "console/dashboard/dashboard.html", context)


class Links:
    """The lists behind the charts, with their own filters (dates are UTC days there)."""

    def __init__(self, slug: str, win: figures.Window) -> None:
        self.slug, self.win = slug, win
        self._bases: dict[str, str] = {}  # a page links each list many times

    def url(self, name: str, **query) -> str:
        base = self._bases.get(name) or self._bases.setdefault(
            name, reverse(name, kwargs={"tenant_slug": self.slug})
        )
        query = {k: v for k, v in query.items() if v not in (None, "")}
        return f"{base}?{urlencode(query)}" if query else base

    def history(self, tab: str = "decided", **query) -> str:
        start = self.win.start.astimezone(UTC).date()
        return self.url("approvals:history", tab=tab, date_from=start.isoformat(), **query)

    def history_days(self, tab: str) -> list[str | None]:
        """Per bucket: that day's history (days only; an hour has no filter there)."""
        if self.win.unit != "day":
            return [None] * len(self.win.keys)
        return [
            self.url("approvals:history", tab=tab, date_from=d.isoformat(), date_to=d.isoformat())
            for d in self.win.keys
        ]


def _labels(win: figures.Window) -> list[str]:
    return [win.label(i) for i in range(len(win.keys))]


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{pluralize(n)}"


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _chart(key: str, title: str, summary: str, chart: dict, table: dict, links: list) -> dict:
    return {
        "id": key,
        "title": title,
        "summary": summary,
        "chart": chart,
        "table": table,
        "table_rows": table_body(table),
        "links": links,
    }


def _decision_time(win, approvals: dict, urls: Links) -> dict:
    labels = _labels(win)
    latency = approvals["latency"]
    p95 = [
        Series(f"p95 {risk}", [row and row["p95"] for row in rows], RISK_CSS[risk])
        for risk, rows in latency.items()
    ]
    columns = []
    for risk, rows in latency.items():
        columns.append(Series(f"{risk}: decided", [row and row["n"] for row in rows], ""))
        columns.append(Series(f"{risk}: p50", [row and row["p50"] for row in rows], ""))
        columns.append(Series(f"{risk}: p95", [row and row["p95"] for row in rows], ""))
    table = data_table(labels, columns)
    for row in table["rows"]:  # durations, except the counts
        row["cells"] = [
            cell if cell == "—" or ": decided" in head else duration(_plain(cell))
            for cell, head in zip(row["cells"], table["head"], strict=True)
        ]
    decided = sum(approvals["decided"])
    if decided:
        worst = max(
            ((risk, row["p95"]) for risk, rows in latency.items() for row in rows if row),
            key=lambda pair: pair[1],
        )
        summary = (
            f"{_count(decided, 'approval')} decided by a person in the {RANGE_LABELS[win.key].lower()}; "
            f"the slowest {win.unit}'s p95 was {duration(worst[1])} ({worst[0]} risk)."
        )
    else:
        summary = f"No approval was decided by a person in the {RANGE_LABELS[win.key].lower()}."
    return _chart(
        "decision-time",
        f"Time to decision, p95 per {win.unit} and risk",
        summary,
        line_chart(labels, p95, fmt=duration),
        table,
        [("Decided approvals", urls.history("decided"))],
    )


def _plain(cell: str) -> float:
    return float(cell.replace(",", ""))


def _approval_flow(win, approvals: dict, urls: Links) -> dict:
    labels = _labels(win)
    series = [
        Series("asked", approvals["asked"], "asked"),
        Series("decided", approvals["decided"], "ok"),
        Series("expired undecided", approvals["expired"], "bad"),
        Series("voided", approvals["voided"], "muted"),
    ]
    totals = {s.name: sum(s.values) for s in series}
    summary = (
        f"In the {RANGE_LABELS[win.key].lower()}: {totals['asked']} asked, "
        f"{totals['decided']} decided, {totals['expired undecided']} expired undecided, "
        f"{totals['voided']} voided."
    )
    return _chart(
        "approval-flow",
        f"Approvals per {win.unit}",
        summary,
        line_chart(labels, series),
        data_table(labels, series, urls=urls.history_days("decided")),
        [
            ("Decided", urls.history("decided")),
            ("Expired", urls.history("expired")),
            ("Voided", urls.history("voided")),
        ],
    )


def _backlog(approvals: dict, urls: Links, now_at: datetime) -> dict:
    rows = approvals["backlog"]
    labels = [row["risk"] for row in rows]
    counts = Series("pending", [row["n"] for row in rows], "asked")
    age = approvals["oldest_age"]
    if approvals["pending"]:
        summary = (
            f"{_count(approvals['pending'], 'approval')} pending now; the oldest was asked "
            f"{duration(age.total_seconds())} ago."
        )
    else:
        summary = "No approval is pending now."
    ages = Series(
        "oldest (hours)",
        [(now_at - row["oldest"]).total_seconds() / 3600 for row in rows],
        "",
    )
    table = data_table(labels, [counts, ages])
    for row, source in zip(table["rows"], rows, strict=True):
        row["cells"][1] = duration((now_at - source["oldest"]).total_seconds())
        row["url"] = urls.history("pending", risk=source["risk"])
    table["head"][1] = "oldest asked"
    return _chart(
        "backlog",
        "Pending backlog by risk, now",
        summary,
        bar_chart(labels, [counts]),
        table,
        [("Approvals inbox", urls.url("approvals:inbox"))],
    )


def _runs(win, runs: dict, urls: Links) -> dict:
    labels = _labels(win)
    series = [Series(status, values, f"s-{status}") for status, values in runs["by_status"].items()]
    total = sum(sum(values) for values in runs["by_status"].values())
    parts = ", ".join(f"{sum(values)} {status}" for status, values in runs["by_status"].items())
    summary = f"{_count(total, 'run')} started in the {RANGE_LABELS[win.key].lower()}" + (
        f"; by their status now: {parts}." if total else "."
    )
    return _chart(
        "runs",
        f"Runs started per {win.unit}, by status now",
        summary,
        bar_chart(labels, series),
        data_table(labels, series),
        [(status, urls.url("runs:list", status=status)) for status in runs["by_status"]]
        or [("Runs", urls.url("runs:list"))],
    )


def _effects(win, effects: dict, urls: Links) -> dict:
    labels = _labels(win)
    series = [
        Series("unknown", effects["unknown"], "bad"),
        Series("stuck (started, never finished)", effects["stuck"], "medium"),
    ]
    summary = (
        f"{_count(effects['unknown_total'], 'effect')} with an unknown outcome and "
        f"{effects['stuck_total']} stuck wait for a person now; of them "
        f"{effects['unknown_older'] + effects['stuck_older']} were recorded before this range."
    )
    return _chart(
        "effects",
        f"Effects to settle, by the {win.unit} they were recorded",
        summary,
        bar_chart(labels, series),
        data_table(labels, series),
        [("Effects to settle", urls.url("effects:queue"))],
    )


def _money(value: float) -> str:
    return f"{value:,.2f}"


def _usage(win, runs: dict, urls: Links) -> list[dict]:
    labels = _labels(win)
    tokens = Series("tokens", runs["tokens"], "asked")
    cost = Series("cost", runs["cost"], "ok")
    range_label = RANGE_LABELS[win.key].lower()
    total_cost = sum(runs["cost"], Decimal(0))
    return [
        _chart(
            "tokens",
            f"Tokens per {win.unit} (runs started then)",
            f"{sum(runs['tokens']):,} tokens used by the runs started in the {range_label}.",
            bar_chart(labels, [tokens]),
            data_table(labels, [tokens]),
            [("Runs", urls.url("runs:list"))],
        ),
        _chart(
            "cost",
            f"Cost per {win.unit} (runs started then)",
            f"{total_cost:,.2f} spent by the runs started in the {range_label}.",
            bar_chart(labels, [cost], fmt=_money),
            data_table(labels, [cost], fmt=_money),
            [("Runs", urls.url("runs:list"))],
        ),
    ]


def _deletions(win, deletions: dict, urls: Links) -> list[dict]:
    labels = _labels(win)
    css = {"done": "ok", "refused": "medium", "failed": "bad"}
    series = [
        Series(status, values, css[status]) for status, values in deletions["receipts"].items()
    ]
    range_label = RANGE_LABELS[win.key].lower()
    parts = ", ".join(f"{sum(s.values)} {s.name}" for s in series)
    charts = [
        _chart(
            "deletions",
            f"Content deletion receipts per {win.unit}",
            f"Content deletions finished in the {range_label}: {parts}.",
            bar_chart(labels, series),
            data_table(labels, series),
            [
                ("Deleted (audit log)", urls.url("audit:log", action="session.content_deleted")),
                ("Refused", urls.url("audit:log", action="session.content_deletion_refused")),
            ],
        )
    ]
    if deletions["erasures"] is not None:
        erasures = Series("erasures asked", deletions["erasures"], "muted")
        charts.append(
            _chart(
                "erasures",
                f"Erasures of a user per {win.unit}",
                f"{_count(sum(erasures.values), 'erasure')} asked in the {range_label}.",
                bar_chart(labels, [erasures]),
                data_table(labels, [erasures]),
                [("Erase a user", urls.url("lifecycle:erase"))],
            )
        )
    return charts


def _by_tool(rows: list[dict], urls: Links) -> list[dict]:
    return [
        {
            **row,
            "p50_text": duration(row["p50"]),
            "p95_text": duration(row["p95"]),
            "url": urls.history("decided", tool=row["tool_name"], risk=row["risk"]),
        }
        for row in rows
    ]
