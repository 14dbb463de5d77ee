"""memsub in a database whose defaults a DBA set (``alter database ... set``, ``alter role ... set``, or
postgresql.conf): each test sets one default for a product login in its own database, as the test's administrator,
then acts as that login, never as the superuser (docs/operations.md, "Server and login settings")."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import sql

from conftest import login_role
from memsub.catalog_check import verify_catalog
from memsub.errors import ConflictError, contract_of_error, from_database_error
from memsub.http_api import problem_from_database
from memsub.migrator import Migrator

from helpers import TENANT_A, set_context

ENTITY = '[{"entity_id": "boiler", "entity_type": "thing", "attributes": {"ok": true}}]'


def set_for_login(db: Any, kind: str, name: str, value: str) -> None:
    """``alter role <login> in database <db> set <name> = <value>``: the login's new sessions start with it."""
    with db.connect(autocommit=True) as admin:
        admin.execute(sql.SQL("alter role {} in database {} set {} = {}").format(
            sql.Identifier(login_role(kind)), sql.Identifier(db.name), sql.Identifier(name), sql.Literal(value)))


def apply_update(conn: psycopg.Connection[Any], expected_version: int | None = None) -> None:
    conn.execute("select memsub.apply_world_model_update(p_insight_type => 'observation', p_entities => %s::jsonb, "
                 "p_expected_version => %s)", [ENTITY, expected_version])


@pytest.mark.parametrize("isolation", ["serializable", "repeatable read"])
def test_a_serialization_failure_is_retryable_busy_not_a_stale_version(db: Any, isolation: str) -> None:
    set_for_login(db, "app", "default_transaction_isolation", isolation)
    with db.connect("app") as first, db.connect("app") as second:
        assert first.execute("show transaction_isolation").fetchone() == (isolation,)
        set_context(first, TENANT_A)
        apply_update(first)
        first.commit()
        set_context(second, TENANT_A)  # the second transaction's snapshot is taken here
        set_context(first, TENANT_A)
        apply_update(first)  # without a stated version: nothing to be stale against
        first.commit()
        with pytest.raises(psycopg.errors.SerializationFailure) as raised:
            apply_update(second)
        second.rollback()
        error = raised.value
        assert error.diag.column_name is None  # PostgreSQL's own, naming nothing
        contract = contract_of_error(error)
        assert contract is not None and (contract.status, contract.kind) == (503, "busy")
        problem = problem_from_database(error)
        assert (problem.status, problem.kind, problem.headers.get("Retry-After")) == (503, "busy", "1")
        assert isinstance(from_database_error(error), ConflictError)

        # memsub's own 40001, a stated version that is not the current one, stays a stale version (409).
        set_context(second, TENANT_A)
        with pytest.raises(psycopg.errors.SerializationFailure) as stale:
            apply_update(second, expected_version=1)
        second.rollback()
        assert stale.value.diag.column_name == "expected_version"
        contract = contract_of_error(stale.value)
        assert contract is not None and (contract.status, contract.kind) == (409, "stale-version")


# Output formats a DBA may choose for the whole database. Each changes how times, intervals or floats read as text.
FORMATS = {"DateStyle": "SQL, DMY", "IntervalStyle": "iso_8601", "extra_float_digits": "-3",
           "TimeZone": "Pacific/Chatham"}


def set_for_database(db: Any, settings: dict[str, str]) -> None:
    with db.connect(autocommit=True) as admin:
        for name, value in settings.items():
            admin.execute(sql.SQL("alter database {} set {} = {}").format(
                sql.Identifier(db.name), sql.Identifier(name), sql.Literal(value)))


def test_the_migrator_and_verify_work_under_any_output_formats(db: Any) -> None:
    set_for_database(db, FORMATS)
    with db.connect() as conn:
        assert conn.execute("show datestyle").fetchone() == ("SQL, DMY",)
    migrator = Migrator(db.dsn())
    assert {entry.state for entry in migrator.status()} == {"applied"}
    assert migrator.migrate().applied == []
    differences, _ = verify_catalog(db.dsn(), mode="snapshot")
    assert [difference.describe() for difference in differences] == []

