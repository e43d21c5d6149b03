"""The suite-wide check that each app writes only its own tables (tests/ownership.py)."""

import pytest

from runs_app.models import Run
from stateroom.sql import hot_cursor
from tenancy_app.scoping import in_tenant
from tests.ownership import ForeignWrite

from ..runs.conftest import in_threads, make_run, reload

RUNS = Run._meta.db_table


def code_of(module: str, source: str):
    """`write(run_id)` defined as if in `module`: its frame names that module."""
    namespace = {"__name__": module, "Run": Run, "RUNS": RUNS, "hot_cursor": hot_cursor}
    exec(compile(source, f"<{module}>", "exec"), namespace)
    return namespace["write"]


ORM_WRITE = """
def write(run_id):
    return Run.objects.filter(run_id=run_id).update(turn_index=7)
"""
HOT_WRITE = """
def write(run_id):
    with hot_cursor() as cursor:
        cursor.execute(f'UPDATE "{RUNS}" SET turn_index = 7 WHERE run_id = %s', [run_id])
        return cursor.rowcount
"""


@pytest.mark.parametrize("source", [ORM_WRITE, HOT_WRITE])
@pytest.mark.parametrize(
    "module",
    [
        "approvals_app.store",
        "sessions_app.api",  # the sessions HTTP layer: through the runs store only
        "sessions_app.store.content",  # a store's content removal: its own tables only
        "lifecycle_app.deletion",  # the orchestrator asks the owners; it writes none of theirs
        "console_app.views.runs",
        "audit_app",
    ],
)
def test_a_write_to_another_apps_table_is_refused(tenant_a, module, source):
    make_run(tenant_a, "running", run_id="r-1")
    before = reload(tenant_a, "r-1")
    with pytest.raises(ForeignWrite, match=f"{module} wrote {RUNS} of runs_app"):
        with in_tenant(tenant_a):
            code_of(module, source)("r-1")
    assert reload(tenant_a, "r-1") == before


@pytest.mark.parametrize("source", [ORM_WRITE, HOT_WRITE])
@pytest.mark.parametrize(
    "module",
    [
        "runs_app.store",  # its own table
        "demo_app.scenarios",  # not checked
    ],
)
def test_own_tables_and_unchecked_writers_pass(tenant_a, module, source):
    make_run(tenant_a, "running", run_id="r-1")
    with in_tenant(tenant_a):
        assert code_of(module, source)("r-1") == 1
    assert reload(tenant_a, "r-1")["turn_index"] == 7


@pytest.mark.django_db(transaction=True)
def test_connections_opened_in_other_threads_are_checked_too(tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    write = code_of("effects_app.store", ORM_WRITE)

    def work(i, barrier):
        barrier.wait()
        try:
            with in_tenant(tenant_a):
                write("r-1")
        except ForeignWrite as exc:
            return str(exc)
        return "written"

    assert (
        in_threads(2, work)
        == [
            f"effects_app.store wrote {RUNS} of runs_app: "
            + ("change another app's state through its store")
        ]
        * 2
    )
    assert reload(tenant_a, "r-1")["turn_index"] == 0


PIPELINED_WRITE = """
def write(run_id):
    with hot_cursor(alone=True) as cursor:
        cursor.execute(f'UPDATE "{RUNS}" SET turn_index = 7 WHERE run_id = %s', [run_id])
        return cursor.rowcount
"""


@pytest.mark.django_db(transaction=True)
def test_a_pipelined_statement_is_checked_too(tenant_a):
    """Outside a transaction `hot_cursor(alone=True)` pipelines the tenant setting and the
    statement (stateroom.sql's `_TenantMessage`), past Django's execute wrappers: the check
    sees it through `PIPELINED_STATEMENT_CHECKS`, before it is sent."""
    from stateroom.sql import _TenantMessage

    make_run(tenant_a, "running", run_id="r-1")
    sent = []
    with in_tenant(tenant_a, atomic=False):
        with hot_cursor(alone=True) as cursor:
            sent.append(type(cursor))
        with pytest.raises(ForeignWrite, match=f"effects_app.store wrote {RUNS} of runs_app"):
            code_of("effects_app.store", PIPELINED_WRITE)("r-1")
        assert code_of("runs_app.store", PIPELINED_WRITE)("r-1") == 1  # the owner's own write
    assert sent == [_TenantMessage]
    assert reload(tenant_a, "r-1")["turn_index"] == 7
