"""Public ids: `[A-Za-z0-9._:-]{1,128}`, unique per tenant, generated when the caller gives none."""

import re
import secrets

PUBLIC_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def new_public_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


def is_valid_public_id(value: str) -> bool:
    return bool(PUBLIC_ID_RE.match(value or ""))


class PublicIdConverter:
    """URL converter `<pid:name>`: a path segment that can be a public id, else no match (404).

    An id with a NUL, a lone surrogate or any other character an id cannot
    have never reaches a view or the database.
    """

    regex = r"[A-Za-z0-9._:-]{1,128}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value
