"""Every statement a store sends names the tenant of each tenant table it touches.

Citus sends a statement to one node only when it filters each distributed
table on the distribution column (ours: `tenant_id`); row-level security
filters on it too, but Citus routes on the statement's text, not on the
policy. So a store statement that reads or writes a tenant table (a table
with a `tenant_id` column that is not an identity table, `REFERENCE_TABLES`)
must say which tenant:

- SELECT, UPDATE, DELETE: for each tenant table in a FROM, JOIN, UPDATE or
  DELETE of a query level, an `=`, `IN` or `= ANY` condition on its
  `tenant_id`, ANDed into that level's WHERE or its joins' ON (a join
  `b.tenant_id = a.tenant_id` counts for both); every subquery is a level of
  its own;
- INSERT: a `tenant_id` among the inserted columns.

The statements are parsed by PostgreSQL's own parser (pglast, libpg_query),
never by a regular expression. Statements are attributed to the innermost
frame of project code, as tests/ownership.py does: only the stores'
(`<app>.store…` modules) are checked.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator

from pglast import ast, parse_sql
from pglast.enums import A_Expr_Kind, BoolExprType

# Identity tables: read before a tenant is known (a bearer token by its hash, a user's
# tenants), so Citus keeps them whole on every node: reference tables (docs/scaling.md).
REFERENCE_TABLES = frozenset(
    {"tenancy_app_tenant", "tenancy_app_runtimetoken", "tenancy_app_membership"}
)

_EQUALITY = (A_Expr_Kind.AEXPR_OP, A_Expr_Kind.AEXPR_OP_ANY, A_Expr_Kind.AEXPR_IN)


def tenant_tables(cursor) -> frozenset[str]:
    """The tables with a `tenant_id` column, less the reference tables."""
    cursor.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id'"
        " AND NOT a.attisdropped WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')"
    )
    return frozenset(row[0] for row in cursor.fetchall()) - REFERENCE_TABLES


def unfiltered(sql: str, tables: Iterable[str]) -> list[str]:
    """The tenant tables `sql` touches without a tenant condition (sorted, each once)."""
    tables = frozenset(tables)
    missing: set[str] = set()
    for raw in parse_sql(sql):
        for node in _walk(raw.stmt):
            missing |= _level(node, tables)
    return sorted(missing)


def _walk(node) -> Iterator[ast.Node]:
    if isinstance(node, ast.Node):
        yield node
        for name in node:
            yield from _walk(getattr(node, name))
    elif isinstance(node, tuple):
        for child in node:
            yield from _walk(child)


def _level(node: ast.Node, tables: frozenset[str]) -> set[str]:
    if isinstance(node, ast.InsertStmt):
        if node.relation.relname in tables:
            columns = {target.name for target in node.cols or ()}
            if "tenant_id" not in columns:
                return {node.relation.relname}
        return set()
    if isinstance(node, ast.SelectStmt):
        ranges, quals = _from(node.fromClause), [node.whereClause]
    elif isinstance(node, ast.UpdateStmt):
        ranges, quals = [node.relation, *_from(node.fromClause)], [node.whereClause]
    elif isinstance(node, ast.DeleteStmt):
        ranges, quals = [node.relation, *_from(node.usingClause)], [node.whereClause]
    else:
        return set()
    quals += [join.quals for join in _joins(node)]
    named = set()
    for qual in quals:
        named |= _tenant_conditions(qual)
    missing = set()
    for rv in ranges:
        if rv.relname in tables:
            alias = rv.alias.aliasname if rv.alias else rv.relname
            if alias not in named and None not in named:
                missing.add(rv.relname)
    return missing


def _from(items) -> list[ast.RangeVar]:
    """The tables of one FROM list, through its joins (not into subqueries: their own level)."""
    found = []
    for item in items or ():
        if isinstance(item, ast.RangeVar):
            found.append(item)
        elif isinstance(item, ast.JoinExpr):
            found += _from((item.larg, item.rarg))
    return found


def _joins(node) -> list[ast.JoinExpr]:
    found = []
    stack = list(getattr(node, "fromClause", None) or ()) + list(
        getattr(node, "usingClause", None) or ()
    )
    while stack:
        item = stack.pop()
        if isinstance(item, ast.JoinExpr):
            found.append(item)
            stack += [item.larg, item.rarg]
    return found


def _tenant_conditions(qual) -> set[str | None]:
    """The qualifiers (alias, or None unqualified) of `tenant_id` in the ANDed equalities."""
    named: set[str | None] = set()
    if isinstance(qual, ast.BoolExpr) and qual.boolop == BoolExprType.AND_EXPR:
        for arg in qual.args:
            named |= _tenant_conditions(arg)
    elif isinstance(qual, ast.A_Expr) and qual.kind in _EQUALITY and qual.name[-1].sval == "=":
        for side in (qual.lexpr, qual.rexpr):
            if isinstance(side, ast.ColumnRef):
                fields = [getattr(f, "sval", None) for f in side.fields]
                if fields[-1] == "tenant_id":
                    named.add(fields[-2] if len(fields) > 1 else None)
    return named


def _store_frame() -> str | None:
    """The module of the innermost project frame if it is a store's, else None."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__") or ""
        top = name.partition(".")[0]
        if name in (__name__, "tests.ownership"):  # this check, and the one it may run inside
            frame = frame.f_back
            continue
        if top.endswith("_app") and name != "tenancy_app.scoping":
            parts = name.split(".")
            writes = "store" in parts or parts[-1] == "rollup"  # a store, or a rollup's refresh
            return name if writes and "migrations" not in parts else None
        if top in ("tests", "demo_app", "bench"):
            return None
        frame = frame.f_back
    return None


def placeholders(sql: str, params) -> str:
    """Django's `%s` (or `%(name)s`) placeholders as `$n` (and `%%` as `%`), for the parser."""
    if params is None:
        return sql
    if isinstance(params, dict):
        numbers = {name: f"${n}" for n, name in enumerate(params, start=1)}
        return re.sub(r"%\((\w+)\)s", lambda m: numbers[m.group(1)], sql).replace("%%", "%")
    pieces = sql.split("%%")
    n = 0
    out = []
    for piece in pieces:
        chunks = piece.split("%s")
        rendered = chunks[0]
        for chunk in chunks[1:]:
            n += 1
            rendered += f"${n}" + chunk
        out.append(rendered)
    return "%".join(out)


class TenantConditions:
    """Records each store statement (with `every`, each statement) that touches a tenant
    table without its tenant.

    Installed as a Django execute wrapper and in `stateroom.sql.PIPELINED_STATEMENT_CHECKS`
    (the hot statements that bypass Django's wrappers)."""

    def __init__(self, tables: frozenset[str], *, every: bool = False) -> None:
        self.tables = tables
        self.every = every  # every statement, not only the stores' (a console page's)
        self.seen: list[tuple[str, str]] = []  # (store module, statement)
        self.missing: list[tuple[str, str, list[str]]] = []

    def __call__(self, execute, sql, params, many, context):
        self.check(sql, params)
        return execute(sql, params, many, context)

    def check(self, sql: str, params=()) -> None:
        store = "(any)" if self.every else _store_frame()
        if store is None:
            return
        text = placeholders(sql, params)
        self.seen.append((store, text))
        tables = unfiltered(text, self.tables)
        if tables:
            self.missing.append((store, text, tables))
