from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from django.http import HttpRequest

ActorKind = Literal["user", "token", "system"]


@dataclass(frozen=True)
class Actor:
    """Who performs a state change; every store is built with one."""

    kind: ActorKind
    id: str
    label: str
    request_id: str = field(default="", compare=False)
    ip: str | None = field(default=None, compare=False)
    user_agent: str = field(default="", compare=False)
    # A token's role: a runtime writes agent text; operator and admin tokens are
    # people's scripts, whose reasons are their own words.
    role: str = field(default="", compare=False)

    @classmethod
    def system(cls, label: str = "system") -> Actor:
        return cls(kind="system", id="system", label=label, request_id=uuid.uuid4().hex)

    @classmethod
    def from_request(cls, request: HttpRequest) -> Actor:
        request_id = getattr(request, "request_id", "") or uuid.uuid4().hex
        from stateroom.edge import client_ip

        ip = client_ip(request) or None
        agent = request.META.get("HTTP_USER_AGENT", "")[:256]
        token = getattr(request, "runtime_token", None)
        if token is not None:
            return cls(
                "token", str(token.pk), f"token:{token.name}", request_id, ip, agent, token.role
            )
        user = request.user
        return cls("user", str(user.pk), user.get_username(), request_id, ip, agent)

    @classmethod
    def for_user(cls, user) -> Actor:
        return cls("user", str(user.pk), user.get_username(), uuid.uuid4().hex)

    @property
    def is_person(self) -> bool:
        return self.kind == "user"

    @property
    def writes_content(self) -> bool:
        """A runtime (not a person, not the system): what it writes is agent text."""
        return self.kind == "token" and self.role not in ("operator", "admin")
