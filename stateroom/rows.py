"""Model instances for the hot path, built without `Model.__init__`.

A store's hot statement returns a row of `stateroom.sql.columns(model)`; the
caller (an API view, a worker) wants the model instance the ORM would give.
`Model.from_db` builds it through `Model.__init__`, which sends `pre_init`
and `post_init` and sets each field through its descriptor: for a run (22
columns) that is most of the Python a compare-and-set costs beyond its one
round trip. `from_row` makes the same instance — the values converted by the
same converters (a JSON column decoded as the ORM decodes it), `_state` saved
in the database, the fields left out deferred (they load on first use) —
by setting the instance's attributes at once.

The shortcut is taken only where it makes the same object: a model that keeps
Django's own `__init__` and `from_db` and has no `pre_init` / `post_init`
receiver (checked on every call: a receiver may be connected later);
otherwise `Model.from_db` builds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import JSONField, Model
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

__all__ = ["from_row", "from_values"]

M = TypeVar("M", bound=Model)

_FROM_DB = Model.from_db.__func__  # type: ignore[attr-defined]
_JSON_FROM_DB = JSONField.from_db_value


def from_row(model: type[M], row: Sequence[Any], using: str = DEFAULT_DB_ALIAS) -> M:
    """The instance of `model` from a row of `columns(model)` (what `model_from_row` gives)."""
    attnames, converters = _layout(model, using)
    if converters:
        values = list(row)
        connection = None
        for index, pairs, none_is_none in converters:
            value = values[index]
            if value is None and none_is_none:
                continue  # JSON null and SQL NULL both read None: nothing to convert
            if connection is None:
                connection = connections[using]
            for converter, expression in pairs:
                value = converter(value, expression, connection)
            values[index] = value
        row = values
    return from_values(model, dict(zip(attnames, row, strict=True)), using)


def from_values(model: type[M], values: dict[str, Any], using: str = DEFAULT_DB_ALIAS) -> M:
    """A saved instance of `model` with these attname values (already Python values);
    any field left out is deferred, as in `Model.from_db`."""
    if not _plain(model) or pre_init.has_listeners(model) or post_init.has_listeners(model):
        names = [f.attname for f in model._meta.concrete_fields if f.attname in values]
        return model.from_db(using, names, [values[name] for name in names])
    instance = model.__new__(model)
    state = ModelState()
    state.adding = False
    state.db = using
    instance._state = state
    instance.__dict__.update(values)
    return instance


@cache
def _plain(model: type[Model]) -> bool:
    """Whether `Model.from_db` would only set attributes (no own `__init__` or `from_db`)."""
    return model.__init__ is Model.__init__ and model.from_db.__func__ is _FROM_DB


@cache
def _layout(model: type[Model], using: str) -> tuple[tuple[str, ...], tuple]:
    """The attnames of `columns(model)` and, by position, the ORM's converters of each."""
    connection = connections[using]
    fields = model._meta.concrete_fields
    found = []
    for index, field in enumerate(fields):
        col = field.get_col(model._meta.db_table)
        pairs = tuple(
            (converter, col)
            for converter in connection.ops.get_db_converters(col)
            + col.get_db_converters(connection)
        )
        if pairs:
            # Only JSONField's converter: it gives None for None (no call needed).
            none_is_none = all(getattr(c, "__func__", None) is _JSON_FROM_DB for c, _ in pairs)
            found.append((index, pairs, none_is_none))
    return tuple(field.attname for field in fields), tuple(found)
