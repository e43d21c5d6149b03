"""PostgreSQL row-level security for tenant-owned tables.

The migration that creates a tenant-owned table adds
`EnableRowLevelSecurity("model")` right after `CreateModel`, so the policy
exists from the first row on. Migrations run as the owner role, which FORCE
subjects to the policy too; the app role owns no table.
"""

from django.db import migrations

from stateroom.sql import TENANT_SETTING

_TENANT_EXPR = f"NULLIF(current_setting('{TENANT_SETTING}', true), '')::bigint"


class EnableRowLevelSecurity(migrations.operations.base.Operation):
    reversible = True
    reduces_to_sql = True

    def __init__(self, model_name: str, *, force: bool = True) -> None:
        self.model_name = model_name
        # Without FORCE the tables' owner is not bound by the policy: for tables
        # that narrow SECURITY DEFINER functions (owned by the owner) must read
        # before a tenant is known. The app role owns no table and is bound.
        self.force = force

    def state_forwards(self, app_label, state) -> None:
        pass

    def _table(self, app_label, state) -> str:
        return state.apps.get_model(app_label, self.model_name)._meta.db_table

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        table = schema_editor.quote_name(self._table(app_label, to_state))
        schema_editor.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        if self.force:
            schema_editor.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        schema_editor.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (tenant_id = {_TENANT_EXPR}) WITH CHECK (tenant_id = {_TENANT_EXPR})"
        )

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        table = schema_editor.quote_name(self._table(app_label, from_state))
        schema_editor.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {table}")
        schema_editor.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        schema_editor.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")

    def describe(self) -> str:
        return f"Enable {'forced ' if self.force else ''}row-level security on {self.model_name}"

    def deconstruct(self):
        return (
            self.__class__.__qualname__,
            [self.model_name],
            {} if self.force else {"force": False},
        )
