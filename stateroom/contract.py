"""The strict request contract of the runtime API: every app's serializers build on this.

- A body field the endpoint does not know is refused (422 `unknown_field`),
  and so is a query parameter a list does not know (422 `unknown_parameter`,
  as Stripe does): a typo never passes silently.
- Types are exact: no string becomes a number, no number becomes a string, a
  boolean is `true` or `false`; an integral JSON number is an integer, `1.0`
  is not.
- Datetimes carry an offset (`Z` or `+02:00`); a naive one is refused rather
  than read as UTC. Whether a time may lie in the past is the store's rule
  (it owns the clock).
- Error details use one format, field paths: `items[3].role`, `error.message`,
  `constraints[0]` (`stateroom.errors.field_path`): DRF's nested detail is
  flattened to it (`flatten`), and the stores name their fields with it.

The OpenAPI schema says the same: request bodies have `additionalProperties:
false` (`strict_request_bodies`, a drf-spectacular postprocessing hook),
except the objects declared open (`OpenObject`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from .errors import Unprocessable, field_path
from .ids import (
    MAX_PUBLIC_ID_LENGTH,
    MAX_WORKER_LENGTH,
    PUBLIC_ID_RE,
    PUBLIC_ID_RULE,
    is_valid_public_id,
)

UNKNOWN_FIELD = "unknown_field"


class LeanFields:
    """A serializer's fields, copied per instance without re-running every field's `__init__`.

    DRF deep-copies the declared fields for each serializer it builds, and a
    field's deep copy is a new field made from its original arguments: a third
    of a LangGraph put's validation went there. A leaf field keeps no state of a
    request (its validation reads only its own settings and, once bound, its
    parent), so a shallow copy, which `Serializer.fields` then binds to this
    serializer, is as good. A nested serializer is deep-copied as DRF does (it
    keeps the state of its own validation); a list or dict field's item field is
    copied with it.
    """

    def get_fields(self):
        return {name: _copied(field) for name, field in self._declared_fields.items()}


def _copied(field: serializers.Field) -> serializers.Field:
    if isinstance(field, serializers.BaseSerializer):
        return copy.deepcopy(field)
    copied = copy.copy(field)
    child = getattr(field, "child", None)  # a list or dict field's item field
    if isinstance(child, serializers.Field):
        # Bound as the original's child was (same name, label and source), to the copy.
        copied.child = _copied(child)
        copied.child.parent = copied
    return copied


class GatedJSONField(serializers.JSONField):
    """Any JSON value of a request body, taken as parsed.

    DRF's JSONField serializes the value again to prove it is JSON; a body's
    value has passed the JSON gate (`stateroom.jsongate`), which proves more.
    """

    def to_internal_value(self, data):
        return data


class StrictSerializer(LeanFields, serializers.Serializer):
    """A request body (or a nested object of one) that refuses keys it does not declare."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = [key for key in data if key not in self.fields]
            if unknown:
                raise serializers.ValidationError(
                    {
                        str(key): [ErrorDetail("unknown field", code=UNKNOWN_FIELD)]
                        for key in unknown
                    }
                )
        return super().to_internal_value(data)


class OpenObject(LeanFields, serializers.Serializer):
    """A nested object that keeps keys beyond the declared ones (its schema says so)."""

    def to_internal_value(self, data):
        super().to_internal_value(data)
        return dict(data)


class StrictCharField(serializers.CharField):
    """Text only (a number is not text), kept as sent (ids and keys compare exactly)."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer: not `"10"`, not `10.0`, not `true`."""

    default_error_messages = {"invalid": "A JSON integer is required (not a string or a float)."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "A JSON boolean is required (true or false)."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictChoiceField(serializers.ChoiceField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)


class DecimalStringField(serializers.DecimalField):
    """Money: a decimal string (`"0.25"`) or a JSON integer; a float is refused (inexact)."""

    default_error_messages = {
        "invalid": 'A decimal string (e.g. "0.25") or an integer is required.',
    }

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, str | int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictDateTimeField(serializers.DateTimeField):
    """ISO 8601 with an offset; returned in UTC."""

    default_error_messages = {
        "naive": "The time needs an offset (Z or +hh:mm): a time without one is ambiguous.",
    }

    def to_internal_value(self, value):
        if not isinstance(value, str):
            self.fail("invalid", format="ISO 8601 with an offset")
        parsed: datetime | None
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is None:
            self.fail("invalid", format="ISO 8601 with an offset")
        if parsed.tzinfo is None or parsed.utcoffset() is None:
            self.fail("naive")
        return parsed.astimezone(UTC)


class StrictDictField(serializers.DictField):
    """A JSON object (any keys; the JSON gate has checked its text and shape)."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("not_a_dict", input_type=type(data).__name__)
        return super().to_internal_value(data)


class PublicIdField(StrictCharField):
    """A public id (`stateroom.ids`): refused with the stores' own detail, `PUBLIC_ID_RULE`.

    `max_length` and the pattern are there for the schema; the check itself is
    `is_valid_public_id`, the one the stores make.
    """

    default_error_messages = {"public_id": PUBLIC_ID_RULE}

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault(
            "help_text", f"1-{MAX_PUBLIC_ID_LENGTH} characters of A-Z a-z 0-9 . _ : -"
        )
        super().__init__(max_length=MAX_PUBLIC_ID_LENGTH, **kwargs)
        self.validators.append(RegexValidator(PUBLIC_ID_RE, PUBLIC_ID_RULE))

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not is_valid_public_id(value):
            self.fail("public_id")
        return value


def worker_field(**kwargs) -> StrictCharField:
    """`worker` of a runtime write: the name the worker claimed the run with.

    One definition for every write a run's claim fences (transition, events,
    session items, approval requests, cancellations and voids, effects); its
    limit is the claim's
    (`stateroom.ids.MAX_WORKER_LENGTH`).
    """
    kwargs.setdefault("required", False)
    kwargs.setdefault(
        "help_text",
        "The worker that claimed the run (POST /runs/{run_id}/claim). While a claim "
        "is live, a write without it, or with another worker, is 409 run_claimed.",
    )
    return StrictCharField(min_length=1, max_length=MAX_WORKER_LENGTH, **kwargs)


def strings(max_length: int, **kwargs) -> serializers.ListField:
    return serializers.ListField(child=StrictCharField(max_length=max_length), **kwargs)


# --- query parameters ---------------------------------------------------------
class QuerySerializer(LeanFields, serializers.Serializer):
    """The query parameters an endpoint takes (their values are text, so numbers parse)."""


# A list page's size (API.md: `?limit=`, default 50, 1-500): every list of the API.
DEFAULT_LIMIT = 50
MAX_LIMIT = 500


def limit_field(*, default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> serializers.Field:
    """`?limit=`: 1 to `maximum` (422 outside), `default` when omitted (the view applies it)."""
    return serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=maximum,
        help_text=f"Page size, 1-{maximum} (default {default})",
    )


class PageQuery(QuerySerializer):
    limit = limit_field()
    cursor = serializers.IntegerField(
        required=False, min_value=0, help_text="From the `next` URL of the previous page"
    )


class NoQuery(QuerySerializer):
    pass


def query(request, serializer_class: type[QuerySerializer]) -> dict[str, Any]:
    """The request's validated query parameters; unknown ones are 422 `unknown_parameter`.

    A parameter given twice is refused too: which value would count is not the
    caller's to guess.
    """
    params = request.query_params
    values = {key: params[key] for key in params if params[key] != ""}
    # One serializer: each instance copies the declared fields (`LeanFields`).
    serializer = serializer_class(data=values)
    unknown = sorted(key for key in params if key not in serializer.fields)
    if unknown:
        raise Unprocessable(
            "Unknown query parameter: " + ", ".join(unknown) + ".",
            code="unknown_parameter",
            details={key: ["unknown parameter"] for key in unknown},
        )
    repeated = sorted(key for key in params if len(params.getlist(key)) > 1)
    if repeated:
        raise Unprocessable(
            "A query parameter is given more than once.",
            details={key: ["given more than once"] for key in repeated},
        )
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


# --- error details --------------------------------------------------------------
def flatten(detail: Any, path: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail as `{field path: [messages]}`: `items[3].role`, `error.message`."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            if key in ("non_field_errors", serializers.api_settings.NON_FIELD_ERRORS_KEY):
                sub = path
            else:
                sub = field_path(path, key)
            out.update(_merge(out, flatten(value, sub)))
    elif isinstance(detail, list) and detail and all(isinstance(d, str) for d in detail):
        out[path or "body"] = [str(d) for d in detail]
    elif isinstance(detail, list):
        for index, value in enumerate(detail):
            if value:
                out.update(_merge(out, flatten(value, field_path(path, index))))
    elif detail:
        out[path or "body"] = [str(detail)]
    return out


def _merge(into: dict[str, list[str]], more: dict[str, list[str]]) -> dict[str, list[str]]:
    return {key: into.get(key, []) + messages for key, messages in more.items()}


def has_code(detail: Any, code: str) -> bool:
    if isinstance(detail, Mapping):
        return any(has_code(value, code) for value in detail.values())
    if isinstance(detail, list):
        return any(has_code(value, code) for value in detail)
    return getattr(detail, "code", None) == code


# --- the schema -------------------------------------------------------------------
def strict_request_bodies(result, generator, request, public):
    """drf-spectacular hook: request bodies allow no property they do not declare."""
    open_names = {_component_name(cls) + "Request" for cls in _subclasses(OpenObject)}
    for name, schema in result.get("components", {}).get("schemas", {}).items():
        if (
            name.endswith("Request")
            and schema.get("type") == "object"
            and name not in open_names
            and "additionalProperties" not in schema
        ):
            schema["additionalProperties"] = False
    return result


def _component_name(cls: type) -> str:
    name = cls.__name__
    return name[: -len("Serializer")] if name.endswith("Serializer") else name


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "DecimalStringField",
    "NoQuery",
    "OpenObject",
    "PageQuery",
    "PublicIdField",
    "QuerySerializer",
    "StrictBooleanField",
    "StrictCharField",
    "StrictChoiceField",
    "StrictDateTimeField",
    "StrictDictField",
    "StrictIntegerField",
    "StrictSerializer",
    "flatten",
    "has_code",
    "limit_field",
    "query",
    "strict_request_bodies",
    "strings",
    "worker_field",
]
