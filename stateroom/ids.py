"""Public ids: `[A-Za-z0-9._:-]{1,128}`, unique per tenant, generated when the caller gives none."""

import re
import secrets

PUBLIC_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def new_public_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


def is_valid_public_id(value: str) -> bool:
    return bool(PUBLIC_ID_RE.match(value or ""))
