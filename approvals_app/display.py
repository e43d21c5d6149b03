"""The runtime's display hint on an approval request: which arguments are amounts of money.

`{"amounts": [{"argument": "amount_cents", "currency": "EUR", "minor_units": 2}]}` says
that `arguments["amount_cents"]` is an integer count of the currency's minor units, so
the console shows `230000` as `EUR 2,300.00` instead of a bare number. The hint only
changes how the call is shown: the arguments, the call digest and the decision are the
same with or without it.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from stateroom.errors import Unprocessable

MAX_AMOUNTS = 3
MAX_MINOR_UNITS = 4
DEFAULT_MINOR_UNITS = 2
CURRENCY = re.compile(r"[A-Z]{3}")  # an ISO 4217 alphabetic code
_AMOUNT_KEYS = {"argument", "currency", "minor_units"}


def _amount_errors(index: int, hint: Any, arguments: dict[str, Any]) -> list[str]:
    where = f"amounts[{index}]"
    if not isinstance(hint, dict):
        return [f"{where}: must be an object"]
    unknown = sorted(set(hint) - _AMOUNT_KEYS)
    if unknown:
        return [f"{where}: unknown keys {', '.join(map(str, unknown))}"]
    errors = []
    name = hint.get("argument")
    value = arguments.get(name) if isinstance(name, str) else None
    if not isinstance(name, str) or name not in arguments:
        errors.append(f"{where}.argument: must name one of the call's arguments")
    elif isinstance(value, bool) or not isinstance(value, int):
        errors.append(f"{where}.argument: {name} must be an integer (the amount in minor units)")
    if not isinstance(hint.get("currency"), str) or not CURRENCY.fullmatch(hint["currency"]):
        errors.append(f"{where}.currency: an ISO 4217 code such as EUR")
    units = hint.get("minor_units", DEFAULT_MINOR_UNITS)
    if isinstance(units, bool) or not isinstance(units, int) or not 0 <= units <= MAX_MINOR_UNITS:
        errors.append(f"{where}.minor_units: an integer from 0 to {MAX_MINOR_UNITS}")
    return errors


def checked_display(display: Any, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The hint as stored (minor_units filled in), or None; 422 `display` when malformed or
    when it names an argument the call does not have as an integer."""
    if display is None:
        return None
    errors: list[str] = []
    amounts = display.get("amounts", []) if isinstance(display, dict) else None
    if not isinstance(display, dict) or set(display) - {"amounts"}:
        errors.append('must be an object with only "amounts"')
    elif not isinstance(amounts, list) or len(amounts) > MAX_AMOUNTS:
        errors.append(f"amounts: a list of at most {MAX_AMOUNTS} amounts")
    else:
        for index, hint in enumerate(amounts):
            errors += _amount_errors(index, hint, arguments)
        names = [h.get("argument") for h in amounts if isinstance(h, dict)]
        if len(set(map(str, names))) != len(names):
            errors.append("amounts: each argument at most once")
    if errors:
        raise Unprocessable("The display hint is invalid.", details={"display": errors})
    return {
        "amounts": [
            {**hint, "minor_units": hint.get("minor_units", DEFAULT_MINOR_UNITS)}
            for hint in amounts
        ]
    }


def money(minor: int, currency: str, minor_units: int) -> str:
    """`230000`, EUR, 2 -> `EUR 2,300.00`: the code, not a symbol ($ is several currencies)."""
    amount = Decimal(minor).scaleb(-minor_units)
    return f"{currency} {amount:,.{minor_units}f}"


def money_values(display: Any, arguments: Any) -> dict[str, str]:
    """The arguments the hint names, each shown as money; others are not in the dict.

    A stored hint was checked against the asked arguments; a value that is no longer an
    integer (e.g. the content was redacted) is simply shown as it is.
    """
    if not isinstance(display, dict) or not isinstance(arguments, dict):
        return {}
    shown = {}
    for hint in display.get("amounts", []):
        value = arguments.get(hint["argument"])
        if isinstance(value, int) and not isinstance(value, bool):
            shown[hint["argument"]] = money(value, hint["currency"], hint["minor_units"])
    return shown
