"""Each app writes only its own tables: checked on every statement the test suite runs.

A write (INSERT, UPDATE, DELETE) to a table of this project is attributed to
the innermost frame of project code that issued it. A domain app, tenancy,
audit and the lifecycle orchestrator may write only their own tables (a
change to another domain goes through that domain's store, whose frame is
then the innermost); the console and the cross-domain actions write nothing
themselves. The demo, tests and migrations are not checked. Nothing is
exempt.

It sees every statement: Django's execute wrappers (`OwnTablesOnly` as one)
and the pipelined hot statements that bypass them (`check` registered in
`stateroom.sql.PIPELINED_STATEMENT_CHECKS`; tests/conftest.py installs both).
"""

from __future__ import annotations

import re
import sys

from django.apps import apps

OWNERS = ("tenancy_app", "audit_app", "sessions_app", "runs_app", "tasks_app")
OWNERS += ("approvals_app", "effects_app", "outbox_app", "lifecycle_app", "notifications_app")
ABOVE = ("actions_app", "console_app")  # they change state only through stores

_WRITE = re.compile(r'\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)"?', re.IGNORECASE)


class ForeignWrite(AssertionError):
    """Project code wrote a table another app owns."""


def _writer() -> str | None:
    """The module of the innermost project frame on the stack, if any."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__") or ""
        if name == __name__ or name == "tenancy_app.scoping":  # this check, the scope guard
            frame = frame.f_back
            continue
        if name.startswith("django.db.migrations."):
            return None  # a migration's own statement (RunSQL), whoever runs `migrate`
        top = name.partition(".")[0]
        if top in OWNERS or top in ABOVE:
            return None if ".migrations." in name else name
        if top in ("tests", "demo_app"):
            return None
        frame = frame.f_back
    return None


class OwnTablesOnly:
    """A Django execute wrapper (`connection.execute_wrappers`) that refuses foreign writes."""

    def __init__(self) -> None:
        self.owner = {
            model._meta.db_table: model._meta.app_config.name
            for model in apps.get_models(include_auto_created=True)
            if model._meta.app_config.name in OWNERS
        }

    def __call__(self, execute, sql, params, many, context):
        if "INSERT" in sql or "UPDATE" in sql or "DELETE" in sql:
            self.check(sql)
        return execute(sql, params, many, context)

    def check(self, sql: str) -> None:
        if sql.lstrip()[:7].upper() == "CREATE ":
            return  # DDL (a function's body names tables it does not write now)
        tables = {t for t in _WRITE.findall(sql) if t in self.owner}
        if not tables:
            return
        writer = _writer()
        if writer is None:
            return
        app = writer.partition(".")[0]
        foreign = sorted(t for t in tables if self.owner[t] != app)
        if foreign:
            raise ForeignWrite(
                f"{writer} wrote {', '.join(foreign)} of {self.owner[foreign[0]]}: "
                "change another app's state through its store"
            )
