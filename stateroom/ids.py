"""Public ids: `[A-Za-z0-9._:-]{1,128}`, unique per tenant, generated when the caller gives none.

The rule's one definition: the stores check it (`is_valid_public_id`, refusing
with `PUBLIC_ID_RULE`), the API's id fields (`stateroom.contract.PublicIdField`)
and the URL converter take it from here. So does the worker name a run is
claimed with (`MAX_WORKER_LENGTH`), which every app's writes carry.
"""

import re
import secrets

MAX_PUBLIC_ID_LENGTH = 128
_PUBLIC_ID_CHARS = r"[A-Za-z0-9._:-]"
PUBLIC_ID_RE = re.compile(rf"^{_PUBLIC_ID_CHARS}{{1,{MAX_PUBLIC_ID_LENGTH}}}$")
# The 422 detail of an id that breaks the rule, from a store and from the API alike.
PUBLIC_ID_RULE = f"must be 1-{MAX_PUBLIC_ID_LENGTH} characters of A-Z a-z 0-9 . _ : -"

# `worker` of a run's claim (runs_app.store.claim) and of every write the claim
# fences (Run.claimed_by holds it).
MAX_WORKER_LENGTH = 200


def new_public_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


def is_valid_public_id(value: str) -> bool:
    return bool(PUBLIC_ID_RE.match(value or ""))


class PublicIdConverter:
    """URL converter `<pid:name>`: a path segment that can be a public id, else no match (404).

    An id with a NUL, a lone surrogate or any other character an id cannot
    have never reaches a view or the database.
    """

    regex = rf"{_PUBLIC_ID_CHARS}{{1,{MAX_PUBLIC_ID_LENGTH}}}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value
