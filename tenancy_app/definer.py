"""SECURITY DEFINER functions in migrations: narrow doors through row-level security.

Some reads come before a tenant is known (the bearer token of a request, a
user's memberships at login, which tenants have jobs waiting). Those tables
have forced RLS like every tenant table (`force_with_definer_lookup`): the
app role sees nothing there outside a tenant; a function owned by the
tables' owner (the role that runs migrations) answers one narrow question
for it across tenants. Each function pins its
`search_path` (the schema of the tables, then `pg_temp`), as PostgreSQL
advises for SECURITY DEFINER.
"""

from __future__ import annotations

from django.db import migrations


def force_with_definer_lookup(table: str) -> tuple[str, str]:
    """SQL (forward, backward): FORCE RLS on `table`; other tenants' rows only in a definer.

    The `definer_lookup` policy applies to the owner role only (`TO
    CURRENT_USER`, the role running the migration) and only while it is not
    the session's own role: inside a SECURITY DEFINER function the app role
    called (`current_user` the owner, `session_user` the app role). The owner
    connected itself (migrations, a shell) sees one tenant at a time, and the
    app role, which is not the owner, never gets the policy.
    """
    crossing = "session_user <> current_user"
    forward = (
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY;"
        f" CREATE POLICY definer_lookup ON {table} TO CURRENT_USER"
        f" USING ({crossing}) WITH CHECK ({crossing});"
    )
    backward = (
        f"DROP POLICY IF EXISTS definer_lookup ON {table};"
        f" ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY;"
    )
    return forward, backward


class DefinerFunction(migrations.operations.base.Operation):
    reversible = True
    reduces_to_sql = False

    def __init__(
        self,
        name: str,
        signature: str,
        returns: str,
        body: str,
        *,
        volatile=False,
        language: str = "sql",
        replaces: str | None = None,
    ):
        """`replaces`: the body of the function this one replaces (same name and signature),
        which a reverse migration puts back; without it, reversing drops the function."""
        self.name = name
        self.signature = signature
        self.returns = returns
        self.body = body
        self.volatile = volatile
        self.language = language
        self.replaces = replaces

    def state_forwards(self, app_label, state) -> None:
        pass

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        self._create(schema_editor, self.body)

    def _create(self, schema_editor, body: str) -> None:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT current_schema()")
            schema = cursor.fetchone()[0]
        quoted = schema_editor.quote_name(schema)
        volatility = "VOLATILE" if self.volatile else "STABLE"
        schema_editor.execute(
            f"CREATE OR REPLACE FUNCTION {self.name}({self.signature}) RETURNS {self.returns}"
            f" LANGUAGE {self.language} {volatility} SECURITY DEFINER"
            f" SET search_path = {quoted}, pg_temp"
            f" AS $fn$ {body} $fn$",
            params=None,
        )

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if self.replaces is not None:
            self._create(schema_editor, self.replaces)
            return
        types = ", ".join(part.split()[-1] for part in self.signature.split(",") if part.strip())
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {self.name}({types})")

    def describe(self) -> str:
        return f"SECURITY DEFINER function {self.name}"

    def deconstruct(self):
        kwargs: dict = {"volatile": True} if self.volatile else {}
        if self.language != "sql":
            kwargs["language"] = self.language
        if self.replaces is not None:
            kwargs["replaces"] = self.replaces
        return (
            self.__class__.__qualname__,
            [self.name, self.signature, self.returns, self.body],
            kwargs,
        )
