"""Ports: what a lower floor asks of a higher one, provided by the higher app's `ready()`.

The floors (pyproject.toml, [tool.importlinter]) let an app import only the
floors below it. Where a lower floor needs a rule a higher app owns (the audit
call of every store, whether a run exists or is claimed, whether an approval
id names a row), it calls the port here; the owning app provides it when
Django starts (`AppConfig.ready()`), so the rule is written once, in its app.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from django.db.models import Model

    from stateroom.actor import Actor
    from stateroom.errors import Conflict

T = TypeVar("T")


class Port(Generic[T]):
    """One implementation, provided once by the app that owns the rule."""

    def __init__(self, name: str, provider: str) -> None:
        self.name = name
        self.provider = provider
        self._impl: T | None = None

    def provide(self, impl: T) -> None:
        self._impl = impl

    def __call__(self) -> T:
        if self._impl is None:
            raise ImproperlyConfigured(
                f"The {self.name} port has no implementation: is {self.provider} installed?"
            )
        return self._impl


class AuditLog(Protocol):
    """The tenant's append-only audit log (audit_app.services)."""

    def record_event(
        self,
        *,
        tenant: Model,
        actor: Actor,
        action: str,
        target_type: str,
        target_id: str,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
        reason: str = "",
        content: Mapping[str, Any] | None = None,
    ) -> Any: ...

    def record_access_denied(
        self, *, tenant: Model, actor: Actor, method: str, path: str, status: int, code: str
    ) -> bool: ...

    def log_not_a_member(self, *, actor: Actor, method: str, path: str) -> None: ...


class SessionRuns(Protocol):
    """What the session store reads of runs (runs_app.claims): existence, owner, claim."""

    table: str

    def exists(self, tenant: Model, run_id: str) -> bool: ...

    def session_pk(self, tenant: Model, run_id: str) -> Any: ...

    def of_session(self, tenant: Model, run_id: str, session: Model) -> bool: ...

    def claim_free_sql(self, worker: str | None, now: Any, alias: str) -> tuple[str, list[Any]]: ...

    def refuse_claimed(
        self, tenant: Model, run_id: str, worker: str | None, now: datetime
    ) -> Conflict | None: ...


class ApprovalNotices(Protocol):
    """Who hears of an approval's notice, how, and sending it (notifications_app)."""

    def __call__(self, tenant_id: int, approval_id: str, kind: str, ref: str) -> Any: ...


audit: Port[AuditLog] = Port("audit", "audit_app")
approval_notices: Port[ApprovalNotices] = Port("approval notices", "notifications_app")
session_runs: Port[SessionRuns] = Port("session runs", "runs_app")

# Which of `ids` name rows of the tenant, by kind ("approval", "effect"): the
# ids a task's state names must exist; the owning app provides each lookup.
_found: dict[str, Callable[[Model, set[str]], set[str]]] = {}


def provide_lookup(kind: str, found: Callable[[Model, set[str]], set[str]]) -> None:
    _found[kind] = found


def found_ids(kind: str, tenant: Model, ids: Iterable[str]) -> set[str]:
    try:
        found = _found[kind]
    except KeyError:
        raise ImproperlyConfigured(f"No app provides the {kind!r} lookup.") from None
    return found(tenant, set(ids))
