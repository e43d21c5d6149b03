"""SECURITY DEFINER functions in migrations: narrow doors through row-level security.

Some reads come before a tenant is known (the bearer token of a request, a
user's memberships at login, which tenants have jobs waiting). Those tables
have RLS without FORCE: the app role, which owns no table, sees nothing there
outside a tenant; a function owned by the tables' owner (the role that runs
migrations) answers one narrow question for it. Each function pins its
`search_path` (the schema of the tables, then `pg_temp`), as PostgreSQL
advises for SECURITY DEFINER.
"""

from __future__ import annotations

from django.db import migrations


class DefinerFunction(migrations.operations.base.Operation):
    reversible = True
    reduces_to_sql = False

    def __init__(self, name: str, signature: str, returns: str, body: str, *, volatile=False):
        self.name = name
        self.signature = signature
        self.returns = returns
        self.body = body
        self.volatile = volatile

    def state_forwards(self, app_label, state) -> None:
        pass

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT current_schema()")
            schema = cursor.fetchone()[0]
        quoted = schema_editor.quote_name(schema)
        volatility = "VOLATILE" if self.volatile else "STABLE"
        schema_editor.execute(
            f"CREATE OR REPLACE FUNCTION {self.name}({self.signature}) RETURNS {self.returns}"
            f" LANGUAGE sql {volatility} SECURITY DEFINER SET search_path = {quoted}, pg_temp"
            f" AS $fn$ {self.body} $fn$",
            params=None,
        )

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        types = ", ".join(part.split()[-1] for part in self.signature.split(",") if part.strip())
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {self.name}({types})")

    def describe(self) -> str:
        return f"SECURITY DEFINER function {self.name}"

    def deconstruct(self):
        kwargs = {"volatile": True} if self.volatile else {}
        return (
            self.__class__.__qualname__,
            [self.name, self.signature, self.returns, self.body],
            kwargs,
        )
