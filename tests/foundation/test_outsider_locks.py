"""Locks an outsider can hold: a login with no memsub grant takes the lock keys memsub once used.

Any login can take any advisory-lock key. memsub's maintenance must neither stall nor report a skipped run as
done because an outsider (memsub_test_nobody) holds one: every run either does its work, or says plainly that it
did not and who held it, within a bounded wait. Waits in these tests are bounded (lock_timeout, thread joins) so
that a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from memsub.cli import main as cli
from memsub.cli_views import refresh_views_command
from memsub.errors import MigrationError
from memsub.migrator import Migrator

from helpers import TENANT_A, set_context, write

# The keys memsub used before its locks became rows of memsub.maintenance_lock.
VIEWS_KEY = 7881706079466359
MIGRATION_KEY = 0x6D656D737562
TENANT_KEYS = [
    f"memsub.learn_importance/{TENANT_A}",
    f"memsub.consolidate_memories:{TENANT_A}",
    f"memsub.memory_maintenance:{TENANT_A}",
    f"memsub.document:{TENANT_A}:a.txt",
    f"memsub.knowledge_facts/{TENANT_A}/alice/likes",
    f"memsub.supersede:{TENANT_A}:alice:knows",
]


@contextmanager
def outsider_holding(db: Any, keys: list[int] | None = None, texts: list[str] | None = None) -> Iterator[int]:
    """A memsub_test_nobody session holding session advisory locks on the keys; yields its pid."""
    with db.connect("nobody", autocommit=True) as conn:
        for key in keys or []:
            conn.execute("select pg_advisory_lock(%s)", [key])
        for text in texts or []:
            conn.execute("select pg_advisory_lock(hashtextextended(%s, 0))", [text])
        pid = conn.execute("select pg_backend_pid()").fetchone()
        assert pid is not None
        yield int(pid[0])


def in_thread(work: Any, seconds: float) -> tuple[bool, list[Any], list[BaseException]]:
    """Runs work() in a thread for at most `seconds`: (finished, [result], [error])."""
    result: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as error:  # reported to the caller
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive(), result, errors


def terminate_waiters(db: Any) -> None:
    """Ends the sessions of this database that wait for an advisory lock (a hung run under old code)."""
    with db.connect(autocommit=True) as conn:
        conn.execute("select pg_terminate_backend(pid) from pg_locks "
                     "where locktype = 'advisory' and not granted and database = "
                     "(select oid from pg_database where datname = current_database())")


def test_refresh_views_runs_while_an_outsider_holds_the_old_key(db):
    with outsider_holding(db, keys=[VIEWS_KEY]):
        result = CliRunner().invoke(refresh_views_command, ["--dsn", db.dsn("platform_admin")])
    lines = result.stdout.splitlines()  # stderr names the server
    assert result.exit_code == 0, result.output
    assert len(lines) == 4 and all(": ok (" in line for line in lines), result.output
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.memory_view_refresh_log where status = 'ok'").fetchone() \
            == (4,)


def test_a_view_another_refresh_holds_is_reported_skipped_with_its_holder(db):
    holder = db.connect("platform_admin")
    try:
        holder.execute("select memsub._refresh_memory_view('mv_entity_graph')")  # transaction left open
        holder_pid = holder.execute("select pg_backend_pid()").fetchone()
        assert holder_pid is not None
        finished, results, errors = in_thread(
            lambda: CliRunner().invoke(refresh_views_command, ["--dsn", db.dsn("platform_admin")]), 30)
    finally:
        holder.rollback()
        holder.close()
    assert finished and not errors
    result = results[0]
    assert result.exit_code == 1, result.output
    assert "mv_entity_graph: skipped (none, " in result.output
    assert f"pid {holder_pid[0]} (role memsub_test_platform_admin" in result.output
    assert "1 view(s) skipped" in result.output
    assert result.output.count(": ok (") == 3


def _call_as(db: Any, kind: str, statement: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with db.connect(kind) as conn:
        conn.execute("set lock_timeout = '3s'")
        set_context(conn, TENANT_A, roles=["tenant_admin"] if kind == "tenant_admin" else [])
        rows = conn.execute(statement, params).fetchall()
        conn.commit()
        return rows


TENANT_CALLS = {
    "learn_importance": ("tenant_admin", "select accesses_counted from memsub.learn_importance()"),
    "consolidate_memories": ("tenant_admin", "select * from memsub.consolidate_memories()"),
    "memory_maintenance": ("tenant_admin", "select * from memsub.memory_maintenance()"),
    "document_ingest": ("app", "select status from memsub.document_ingest('a.txt', repeat('b', 64), 'txt', "
                               "'0123456789', '[{\"start_char\": 0, \"end_char\": 10}]'::jsonb)"),
    "assert_fact": ("app", "select fact_id from memsub.assert_fact('alice', 'likes', '\"tea\"'::jsonb)"),
    "supersede_relationship": ("app", "select relationship_id from memsub.supersede_relationship("
                                      "'alice', 'knows', 'bob')"),
}


@pytest.mark.parametrize("function", sorted(TENANT_CALLS))
def test_tenant_work_is_not_blocked_by_an_outsider_holding_the_old_keys(db, function):
    kind, statement = TENANT_CALLS[function]
    with outsider_holding(db, texts=TENANT_KEYS):
        rows = _call_as(db, kind, statement)  # lock_timeout 3 s: a wait for the outsider fails with 55P03
    assert rows is not None


def test_concurrent_learn_importance_runs_wait_for_each_other_within_lock_timeout(db):
    with db.connect("tenant_admin") as first:
        set_context(first, TENANT_A, roles=["tenant_admin"])
        write(first, {"packet_type": "event", "payload": "x"})
        first.execute("select memsub.learn_importance()")  # holds the tenant's lock until commit
        with pytest.raises(psycopg.errors.LockNotAvailable):
            _call_as(db, "tenant_admin", "select memsub.learn_importance()")
        first.commit()
    assert _call_as(db, "tenant_admin", "select accesses_counted from memsub.learn_importance()") == [(0,)]


def test_outsiders_cannot_take_memsub_locks(db):
    with db.connect("nobody") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select memsub._take_maintenance_lock('learn_importance', %s)", [str(TENANT_A)])
    for kind in ("app", "analyst", "platform_admin"):
        with db.connect(kind) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("select 1 from memsub.maintenance_lock for update")


def test_migrate_of_an_installed_database_ignores_an_outsider_holding_the_old_key(db):
    with outsider_holding(db, keys=[MIGRATION_KEY]):
        finished, results, errors = in_thread(
            lambda: CliRunner().invoke(cli, ["migrate", "--dsn", db.dsn(), "--lock-wait", "5"]), 60)
        if not finished:
            terminate_waiters(db)
    assert finished, "memsub migrate hung on a lock an outsider holds"
    assert not errors and results[0].exit_code == 0, results[0].output
    assert "nothing to do" in results[0].output


def test_first_install_names_the_outsider_holding_the_bootstrap_lock(empty_db, template_db):
    with outsider_holding(empty_db, keys=[MIGRATION_KEY]) as pid:
        finished, _, errors = in_thread(lambda: Migrator(empty_db.dsn(), lock_wait=1).migrate(), 60)
        if not finished:
            terminate_waiters(empty_db)
    assert finished, "memsub migrate hung on a lock an outsider holds"
    assert len(errors) == 1 and isinstance(errors[0], MigrationError), errors
    assert f"pid {pid}" in str(errors[0]) and "memsub_test_nobody" in str(errors[0])
    # Once the outsider is gone, the same database installs.
    assert Migrator(empty_db.dsn(), lock_wait=5).migrate().applied
    assert Migrator(empty_db.dsn()).verify() == []


def test_a_second_migrator_waits_a_bounded_time_and_names_the_first(db):
    """The migration lock (on memsub.schema_history) is held by a migrator mid-run: a second one gives up after
    its lock wait and says who holds it."""
    with db.connect() as first:
        first.execute("lock table memsub.schema_history in share update exclusive mode")
        pid = first.execute("select pg_backend_pid()").fetchone()
        assert pid is not None
        finished, _, errors = in_thread(lambda: Migrator(db.dsn(), lock_wait=1).migrate(), 60)
        first.rollback()
    assert finished
    assert len(errors) == 1 and isinstance(errors[0], MigrationError), errors
    assert f"pid {pid[0]}" in str(errors[0])


def test_sessions_reading_stats_of_memsub_tables_do_not_block_the_migration_lock(db):
    """An outsider can hold ACCESS SHARE on any table through pg_relation_size(oid); the migration lock mode does
    not conflict with it."""
    with db.connect("nobody") as outsider:
        outsider.execute("select pg_relation_size(oid) from pg_class "
                         "where relname = 'schema_history' and relnamespace = 'memsub'::regnamespace")
        finished, results, errors = in_thread(lambda: Migrator(db.dsn(), lock_wait=2).migrate(), 60)
        outsider.rollback()
    assert finished and not errors, errors
    assert results[0].applied == []

