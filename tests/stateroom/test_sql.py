"""stateroom.sql: the hot-path cursor and the helpers that read and write model rows with it."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_scopes import scopes_disabled
from django_scopes.exceptions import ScopeError

from effects_app.models import ExternalEffect
from runs_app.models import Run
from stateroom.sql import columns, hot_cursor, insert_from, known, model_from_row
from tenancy_app.scoping import in_tenant

pytestmark = pytest.mark.django_db


def test_hot_statements_are_captured_with_their_values():
    with CaptureQueriesContext(connection) as ctx, hot_cursor(tenant_owned=False) as cursor:
        cursor.execute("SELECT %s, %s", ["a'b", 7])
        assert cursor.fetchone() == ("a'b", 7)
    [query] = ctx.captured_queries
    assert "'a''b'" in query["sql"] and "7" in query["sql"]
    assert "$1" not in query["sql"] and "%s" not in query["sql"]


def test_tenant_owned_statements_need_a_tenant_scope(tenant_a):
    with pytest.raises(ScopeError), hot_cursor():
        pass
    with in_tenant(tenant_a), hot_cursor() as cursor:
        cursor.execute("SELECT 1")
    with scopes_disabled(), hot_cursor() as cursor:
        cursor.execute("SELECT 1")


def test_a_row_becomes_the_model_the_orm_would_build(tenant_a):
    with in_tenant(tenant_a):
        Run.objects.create(
            tenant=tenant_a,
            run_id="r-1",
            status="running",
            version=3,
            cost_used=Decimal("1.25"),
            error={"code": "x"},
            created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
            updated_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        )
        with hot_cursor() as cursor:
            cursor.execute(f"SELECT {columns(Run)} FROM {Run._meta.db_table}")
            run = model_from_row(Run, cursor.fetchone())
        orm = Run.objects.get(run_id="r-1")
    assert {f.attname: getattr(run, f.attname) for f in Run._meta.concrete_fields} == {
        f.attname: getattr(orm, f.attname) for f in Run._meta.concrete_fields
    }
    assert run.error == {"code": "x"} and run.cost_used == Decimal("1.25")
    assert run.created_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert not run._state.adding


def test_insert_from_fills_defaults_and_always_encodes_json(tenant_a):
    with in_tenant(tenant_a):
        run = Run.objects.create(
            tenant=tenant_a, run_id="r-1", created_at=db_now(), updated_at=db_now()
        )
        now = db_now()
        # A JSON string value must be stored as a JSON string, not parsed as JSON text.
        names, selects, params = insert_from(
            ExternalEffect,
            {
                "tenant_id": tenant_a.pk,
                "effect_id": "eff_1",
                "run_id": run.pk,
                "idempotency_key": "k",
                "tool_name": "t",
                "request": "[1, 2]",
                "request_digest": "d",
                "created_at": now,
                "updated_at": now,
            },
        )
        with hot_cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {ExternalEffect._meta.db_table} ({names}) SELECT {selects}", params
            )
        effect = ExternalEffect.objects.get()
    assert effect.request == "[1, 2]"
    assert (effect.status, effect.node_id, effect.result, effect.approval_id) == (
        "started",
        "",
        None,
        None,
    )


def db_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def test_hot_statements_read_timestamptz_as_aware_utc_datetimes(db):
    moment = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    with hot_cursor(tenant_owned=False) as cursor:
        cursor.execute("SELECT %s::timestamptz, now()", [moment])
        value, now = cursor.fetchone()
    assert value == moment and value.utcoffset().total_seconds() == 0
    assert now.tzinfo is not None


@pytest.mark.django_db(transaction=True)
def test_each_statement_gets_a_cursor_on_the_current_connection():
    with hot_cursor(tenant_owned=False) as first:
        first.execute("SELECT 1")
    assert first.cursor.closed
    connection.close()
    with hot_cursor(tenant_owned=False) as second:
        second.execute("SELECT now()")
        (now,) = second.fetchone()
    assert second.cursor.connection is connection.connection
    assert now.tzinfo is not None and now.utcoffset().total_seconds() == 0


def test_hot_statements_are_prepared_after_a_few_runs():
    for _ in range(6):
        with hot_cursor(tenant_owned=False) as cursor:
            cursor.execute("SELECT %s::int + 1", [1])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'SELECT $1::int + 1'"
        )
        assert cursor.fetchone() == (1,)


def test_a_known_instance_loads_the_rest_on_use(tenant_a):
    with in_tenant(tenant_a):
        run = Run.objects.create(
            tenant=tenant_a, run_id="r-1", turn_index=4, created_at=db_now(), updated_at=db_now()
        )
        stub = known(Run, run.pk, turn_index=4, run_id="r-1")
        with CaptureQueriesContext(connection) as ctx:
            assert (stub.pk, stub.run_id, stub.turn_index) == (run.pk, "r-1", 4)
        assert ctx.captured_queries == []
        assert stub.status == "created"  # deferred: read on first use
