"""The senders, one module per channel kind: `notifications_app.channels.<kind>`.

`sender(kind)` imports the module named after the kind (`email`, `console`,
`slack`, `webhook`); each provides `send` and, when its messages can be
rewritten later, `update` (channels.base). A new kind is a new module here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..models import ChannelKind


def sender(kind: str) -> ModuleType:
    """The sender module of channel `kind` (LookupError for a kind that has none)."""
    if kind not in ChannelKind.values:
        raise LookupError(f"no channel kind {kind!r}")
    try:
        return importlib.import_module(f"{__name__}.{kind}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{kind}":
            raise
        raise LookupError(f"no sender for channel kind {kind!r}") from exc


def can_update(kind: str) -> bool:
    """Whether the channel's sent messages can be rewritten with the outcome."""
    try:
        return callable(getattr(sender(kind), "update", None))
    except LookupError:
        return False
