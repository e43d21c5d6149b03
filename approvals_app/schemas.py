"""A tool's JSON Schema on an approval: checked when asked, and what edits are checked against.

The runtime may send the schema of the tool's arguments (the Agents SDK's
`params_json_schema`, a LangChain tool's args schema). With it, an edit that
the tool would refuse is refused before it is approved, and so is a plain
approval of arguments that no longer fit (a tool changed since the call was
asked). The validation is `jsonschema`'s, in the dialect the schema names
(`$schema`; Draft 2020-12 when it names none); remote `$ref`s are never
fetched (an unresolvable one is an error of the schema, not a network call).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from jsonschema import ValidationError
from jsonschema.exceptions import SchemaError
from jsonschema.validators import Draft202012Validator, validator_for
from referencing.exceptions import Unresolvable

from stateroom.canonical import canonical_json
from stateroom.errors import Unprocessable, field_path

# The schema is stored with every approval and shown on its page: bounded like a void's evidence.
MAX_SCHEMA_BYTES = 64 * 1024
# An edit far off its schema is refused with this many paths at most (the first ones).
MAX_REPORTED_ERRORS = 30
MAX_MESSAGE_CHARS = 200


def check_schema(schema: Any, arguments: Any) -> None:
    """422 (`details.arguments_schema`) unless `schema` is a JSON Schema object within bounds
    that can be applied to the asked `arguments` (whether they fit it is another matter)."""
    problem = _schema_problem(schema)
    if not problem:
        try:
            for _error in _validator(schema).iter_errors(arguments):
                pass
        except Unresolvable as exc:
            problem = f"has a $ref that cannot be resolved (none is fetched): {_short(str(exc))}"
        except RecursionError:
            problem = "has $refs that refer to themselves without end"
    if problem:
        raise Unprocessable(
            "The tool's schema is invalid.", details={"arguments_schema": [problem]}
        )


def _schema_problem(schema: Any) -> str:
    """What makes `schema` no JSON Schema we keep ("" when it is one)."""
    if not isinstance(schema, dict):
        return "must be a JSON Schema object"
    try:
        size = len(canonical_json(schema).encode())
    except (TypeError, ValueError):
        return "must be JSON"
    if size > MAX_SCHEMA_BYTES:
        return f"at most {MAX_SCHEMA_BYTES} bytes of JSON"
    if not isinstance(schema.get("$schema", ""), str):
        return "$schema must be a string (the dialect's URI)"
    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        return f"not a valid JSON Schema{f' at {where}' if where else ''}: {_short(exc.message)}"
    return ""


def argument_errors(
    schema: dict[str, Any] | None, arguments: Any, *, field: str
) -> dict[str, list[str]]:
    """Where `arguments` break `schema`, as 422 details keyed by path under `field`
    (`approved_arguments.amount_cents`); {} when they fit, or when there is no schema.

    An argument the schema does not allow is named by its own path, and so is a
    missing required one: the operator sees each field that is wrong. A schema
    that cannot be applied to these arguments (a `$ref` that resolves nowhere,
    or loops, on a path the asked ones did not take) refuses them too.
    """
    if schema is None:
        return {}
    validator = _validator(schema)
    errors: dict[str, list[str]] = {}
    try:
        for error in validator.iter_errors(arguments):
            for path, message in _named(error):
                key = field_path(field, *path)
                if message not in errors.setdefault(key, []):
                    errors[key].append(message)
            if len(errors) >= MAX_REPORTED_ERRORS:
                break
    except Unresolvable as exc:
        errors.setdefault(field, []).append(
            f"the tool's schema has a $ref that cannot be resolved: {_short(str(exc))}"
        )
    except RecursionError:
        errors.setdefault(field, []).append("the tool's schema has $refs that loop without end")
    return dict(sorted(errors.items()))  # by path, whatever order the schema checks in


def _validator(schema: dict[str, Any]) -> Any:
    return validator_for(schema, default=Draft202012Validator)(schema)


def _named(error: ValidationError) -> Iterator[tuple[list[str | int], str]]:
    """Each (path, message) of one error, the path of the argument it is about."""
    path = list(error.absolute_path)
    instance = error.instance
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        for key in _extras(error.schema, instance):
            yield [*path, key], "not an argument of this tool"
        return
    if error.validator == "required" and isinstance(instance, dict):
        for key in error.validator_value:
            if key not in instance:
                yield [*path, key], "required"
        return
    yield path, _short(error.message)


def _extras(schema: Any, instance: dict[str, Any]) -> list[str]:
    """The keys of `instance` that neither `properties` nor `patternProperties` allow."""
    if not isinstance(schema, dict):
        return list(instance)
    properties = schema.get("properties") or {}
    patterns = list((schema.get("patternProperties") or {}).keys())
    return [
        k for k in instance if k not in properties and not any(re.search(p, k) for p in patterns)
    ]


def _short(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE_CHARS else message[: MAX_MESSAGE_CHARS - 1] + "…"
