"""How an approval's call is shown on the approval pages: its key arguments, and its arguments as
a tree.

Arguments are agent-written: every value goes through `format_html`/`escape`.
"""

from __future__ import annotations

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from approvals_app.display import money_values
from approvals_app.models import ApprovalRequest
from stateroom import jsongate
from stateroom.errors import Unprocessable
from stateroom.jsonview import Change, diff
from stateroom.jsonview import json_tree as _value
from stateroom.jsonview import short as _short

KEY_VALUE_CHARS = 60
_MISSING = object()


def ordered_keys(approval: ApprovalRequest) -> list[str]:
    """Top-level argument keys in the order the runtime sent them (jsonb keeps none)."""
    arguments = approval.arguments if isinstance(approval.arguments, dict) else {}
    order = [k for k in approval.argument_order if k in arguments]
    return order + [k for k in arguments if k not in order]


def key_values(approval: ApprovalRequest, count: int = 3) -> list[tuple[str, str]]:
    """The arguments that matter, as (name, short value): the runtime's `key_arguments`,
    else the first scalar arguments in the runtime's order. An amount the display hint
    names shows as money (`EUR 2,300.00`), not as its count of cents."""
    arguments = approval.arguments if isinstance(approval.arguments, dict) else {}
    if approval.key_arguments:
        names = [k for k in approval.key_arguments if k in arguments]
    else:
        names = [k for k in ordered_keys(approval) if not isinstance(arguments[k], dict | list)]
    money = money_values(approval.display, arguments)
    return [
        (name, money.get(name) or _short(arguments[name], KEY_VALUE_CHARS))
        for name in names[:count]
    ]


def argument_tree(approval: ApprovalRequest) -> SafeString:
    """The arguments as a wrapped key/value tree in the runtime's order; long values folded;
    each top-level value that differs from the tool's usual call marked."""
    arguments = approval.arguments if isinstance(approval.arguments, dict) else {}
    usual = approval.usual_arguments if isinstance(approval.usual_arguments, dict) else None
    money = money_values(approval.display, arguments)
    rows = []
    for key in ordered_keys(approval):
        hint = mark_safe("")
        if usual is not None:
            before = usual.get(key, _MISSING)
            if before is _MISSING:
                hint = mark_safe(
                    ' <span class="badge changed" data-testid="usual-hint">not in the usual call</span>'
                )
            elif before != arguments[key]:
                hint = format_html(
                    ' <span class="badge changed" data-testid="usual-hint">usual: {}</span>',
                    _short(before, KEY_VALUE_CHARS),
                )
        value = _value(arguments[key])
        if key in money:  # the display hint: an amount in minor units, shown as money first
            value = format_html(
                '<span class="money" data-testid="money">{}</span> <span class="muted">({})</span>',
                money[key],
                value,
            )
        rows.append(format_html('<dt class="mono">{}</dt><dd>{}{}</dd>', key, value, hint))
    if usual is not None:
        for key in usual:
            if key not in arguments:
                rows.append(
                    format_html(
                        '<dt class="mono">{}</dt><dd><span class="muted">absent</span> '
                        '<span class="badge changed" data-testid="usual-hint">usual: {}</span></dd>',
                        key,
                        _short(usual[key], KEY_VALUE_CHARS),
                    )
                )
    if not rows:
        return mark_safe('<p class="muted">No arguments.</p>')
    return format_html(
        '<dl class="argtree" data-testid="argument-tree">{}</dl>', mark_safe("".join(rows))
    )


def schema_changes(details: object) -> list[Change]:
    """A void's evidence `{tool, old, new}` (a tool's JSON schemas) as changes by key path
    (`properties.currency` added, `required[2]` added); [] when there is none."""
    if not isinstance(details, dict) or not ("old" in details or "new" in details):
        return []
    old, new = details.get("old"), details.get("new")
    return diff(old if old is not None else {}, new if new is not None else {})


def arguments_problem(approval: ApprovalRequest) -> str:
    """Why the stored arguments break the API's JSON rules, or "": only a row written before
    the gate refused it can (e.g. jsonb kept `1e16` as an integer RFC 8785 cannot spell)."""
    if not isinstance(approval.arguments, dict | list):
        return ""
    try:
        jsongate.check(approval.arguments)
    except Unprocessable as exc:
        return exc.message
    return ""
