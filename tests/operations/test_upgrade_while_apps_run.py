"""Upgrading memsub while applications keep running: their pooled connections, prepared statements and kept
search plans outlive a ``memsub migrate`` that re-applies sql/ (docs/operations.md, "Upgrading while
applications run")."""

from __future__ import annotations

import re
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from uuid import UUID

import anyio
import pytest
from click.testing import CliRunner
from test_servers_behind_a_pooler import api_key, dimension_of, every_route, served

from memsub import catalog_check, resources
from memsub.cli import main as cli
from memsub.client import Substrate
from memsub.errors import MigrationError
from memsub.http_api import create_app
from memsub.integrations import adk, langgraph_checkpoint, langgraph_store, openai_agents
from memsub.integrations._context import TenantContext, async_pool_of, pool_options
from memsub.integrations.adk import MemsubSessionService
from memsub.migrator import DEFAULT_ATTEMPT_WAIT, Migrator, repeatable_steps
from memsub.models import PacketEnvelopeIn
from memsub.schema_files import load_repeatables

from helpers import TENANT_A

USER = UUID("aaaaaaaa-0000-0000-0000-0000000000a1")


_PACKET_EXPIRY = "           or (select current_user = 'memsub_expiry_owner'::name))"


def _changed_sql(tmp_path: Path) -> Path:
    """The shipped sql/ with two files' comments touched and packet_store's not_expired policy changed (its
    condition gains "or false"): what an upgrade that changes a policy of packet_store looks like to the migrator
    (every sql/ file is re-applied, in one transaction; the policy is created again, which takes ACCESS EXCLUSIVE
    on the table)."""
    repeatables = tmp_path / "sql"
    shutil.copytree(resources.repeatables_dir(), repeatables)
    for name in ("130_packet_read.sql", "310_semantic_search.sql"):
        target = repeatables / name
        target.write_text(target.read_text() + "\n-- touched\n")
    target = repeatables / "150_packet_security.sql"
    text = target.read_text()
    assert text.count(_PACKET_EXPIRY) == 1
    target.write_text(text.replace(_PACKET_EXPIRY, _PACKET_EXPIRY[:-1] + " or false)"))
    return repeatables


def _calls(session: Any, dimension: int, round_: int) -> None:
    vector = [1.0] + [0.0] * (dimension - 1)
    written = session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"text": f"round {round_}"}))
    assert session.packets.get(written.packet_id) is not None
    session.search.store_embedding(written.packet_id, "content", vector, chunk_text=f"round {round_}")
    session.search.semantic(vector, k=3)
    session.search.semantic(vector, k=3)
    session.memory.write(f"user:{USER}:notes", f"k{round_}", {"round": round_})
    created = session.sessions.create(app_name="upgrade")
    session.sessions.append_event(created.id, {"author": "user", "text": "hi"})


def test_prepared_calls_on_pooled_connections_survive_a_sql_reapply(db: Any, tmp_path: Path) -> None:
    with Substrate(db.dsn("app"), min_size=1, max_size=1, prepare_threshold=0) as substrate:
        with substrate.tenant(TENANT_A, user_id=USER) as session:
            dimension = session.vector_dimension()
            _calls(session, dimension, 1)
            prepared = session.fetch("select count(*)::int as n, count(*) filter (where not from_sql)::int as "
                                     "kept from pg_catalog.pg_prepared_statements")
            hits = [(hit.embedding_id, hit.distance)
                    for hit in session.search.semantic([1.0] + [0.0] * (dimension - 1), k=3)]
        assert prepared[0]["n"] > prepared[0]["kept"] > 0  # psycopg's statements and search's kept plan
        report = Migrator(db.dsn(), repeatables_path=_changed_sql(tmp_path)).migrate()
        assert report.repeatables_applied
        with substrate.tenant(TENANT_A, user_id=USER) as session:
            assert [(hit.embedding_id, hit.distance)
                    for hit in session.search.semantic([1.0] + [0.0] * (dimension - 1), k=3)] == hits
            _calls(session, dimension, 2)
        with substrate.tenant(TENANT_A, user_id=USER, per_call=True) as session:
            _calls(session, dimension, 3)


def _with_a_migration(tmp_path: Path, ddl: str) -> Path:
    """The shipped migrations and one more, newer than any: an upgrade's schema change."""
    migrations = tmp_path / "migrations"
    shutil.copytree(resources.migrations_dir(), migrations)
    (migrations / "99.0.0__upgrade_while_apps_run.sql").write_text(ddl)
    return migrations


def test_reads_of_a_table_that_gains_a_column_survive_the_upgrade(db: Any, tmp_path: Path) -> None:
    """A migration adds a column to a table the client reads whole: a statement the connection prepared before
    reads it as before (no "cached plan must not change result type"), per call and in a block."""
    with Substrate(db.dsn("app"), min_size=1, max_size=1, prepare_threshold=0) as substrate:
        with substrate.tenant(TENANT_A, user_id=USER) as session:
            created = session.sessions.create(app_name="upgrade")
            assert session.sessions.get(created.id) is not None
            session.packets.audit_trail()
        migrations = _with_a_migration(tmp_path, "alter table memsub.sessions add column upgrade_note text;\n"
                                                 "alter table memsub.audit add column upgrade_note text;\n")
        assert Migrator(db.dsn(), migrations_path=migrations).migrate().applied
        with substrate.tenant(TENANT_A, user_id=USER, per_call=True) as session:
            assert session.sessions.get(created.id) is not None
            session.packets.audit_trail()
        with substrate.tenant(TENANT_A, user_id=USER) as session:
            assert session.sessions.get(created.id) is not None
            session.packets.audit_trail()



_ADK_LIST = ("create or replace function memsub.adk_session_list(p_app_name text, p_user_id text)\n"
             "returns table (id text, last_update_time double precision)\n")
_ADK_LIST_ROW = "    select s.id::text, extract(epoch from s.updated_at)::double precision\n"


def _sql_where_an_adapter_function_gains_a_column(tmp_path: Path) -> Path:
    """The shipped sql/ where memsub.adk_session_list returns one more column: an upgrade that changes the result
    of a function an adapter reads (dropped and created again, as sql/ does for a changed signature)."""
    repeatables = tmp_path / "sql"
    shutil.copytree(resources.repeatables_dir(), repeatables)
    target = repeatables / "940_adk.sql"
    text = target.read_text()
    assert text.count(_ADK_LIST) == 1 and text.count(_ADK_LIST_ROW) == 1
    text = text.replace(_ADK_LIST, "drop function if exists memsub.adk_session_list(text, text);\n"
                                   + _ADK_LIST.replace("create or replace", "create").replace(
                                       "double precision)", "double precision, upgrade_note text)"))
    target.write_text(text.replace(_ADK_LIST_ROW, _ADK_LIST_ROW.rstrip("\n") + ", null::text\n"))
    return repeatables


def test_an_adapter_reads_a_function_whose_result_gains_a_column_after_the_upgrade(db: Any, tmp_path: Path
                                                                                   ) -> None:
    """An upgrade adds a column to the result of a function a framework adapter reads: the statement its pooled
    connection prepared before reads it as before (no "cached plan must not change result type")."""
    async def scenario() -> list[str]:
        pool = async_pool_of(pool_options(db.dsn("app"), max_size=1, prepare_threshold=0))  # one connection
        await pool.open()
        service = MemsubSessionService(pool, TenantContext(uuid.uuid4()))
        try:
            created = await service.create_session(app_name="upgrade", user_id="alice")
            assert [s.id for s in (await service.list_sessions(app_name="upgrade", user_id="alice")).sessions] \
                == [created.id]
            report = await anyio.to_thread.run_sync(
                lambda: Migrator(db.dsn(), repeatables_path=_sql_where_an_adapter_function_gains_a_column(
                    tmp_path)).migrate())
            assert report.repeatables_applied
            return [s.id for s in (await service.list_sessions(app_name="upgrade", user_id="alice")).sessions]
        finally:
            await pool.close()

    assert len(anyio.run(scenario)) == 1


_SET_CONTEXT = "create or replace function memsub.set_context(\n"
_SET_CONTEXT_END = "\nend\n$$;\ncomment on function memsub.set_context("


def _sql_where_set_context_returns_a_value(tmp_path: Path) -> Path:
    """The shipped sql/ where memsub.set_context returns the tenant instead of nothing: an upgrade that changes
    the result of a function the client calls for its effect (dropped and created again, as sql/ does for a
    changed result)."""
    repeatables = tmp_path / "sql"
    shutil.copytree(resources.repeatables_dir(), repeatables)
    target = repeatables / "015_identity_binding.sql"
    text = target.read_text()
    assert text.count(_SET_CONTEXT) == 1 and text.count(_SET_CONTEXT_END) == 1
    start, end = text.index(_SET_CONTEXT), text.index(_SET_CONTEXT_END)
    body = (text[start:end].replace(") returns void\n", ") returns uuid\n", 1).replace("return;", "return p_tenant_id;")
            + "\n    return p_tenant_id;")
    target.write_text(text[:start] + "drop function if exists memsub.set_context(uuid, uuid, uuid, text[], text);\n"
                      + body + text[end:])
    return repeatables


def test_a_context_is_set_after_an_upgrade_that_changes_what_set_context_returns(db: Any, tmp_path: Path
                                                                                   ) -> None:
    """Every session of the client starts with memsub.set_context, a call for its effect that read ``select *``:
    once an upgrade changed what the function returns, the statement each pooled connection had prepared failed
    there once ("cached plan must not change result type"). It now reads no column of the result."""
    with Substrate(db.dsn("app"), min_size=1, max_size=1, prepare_threshold=0) as substrate:
        with substrate.tenant(TENANT_A, user_id=USER) as session:
            created = session.sessions.create(app_name="upgrade")
        report = Migrator(db.dsn(), repeatables_path=_sql_where_set_context_returns_a_value(tmp_path)).migrate()
        assert report.repeatables_applied
        for per_call in (False, True):
            with substrate.tenant(TENANT_A, user_id=USER, per_call=per_call) as session:
                assert session.sessions.get(created.id) is not None


def _statements_of(module: Any) -> list[str]:
    return [value for name, value in vars(module).items() if name.isupper() and isinstance(value, str)
            and "memsub." in value]


@pytest.mark.parametrize("module", [adk, langgraph_checkpoint, langgraph_store, openai_agents])
def test_no_adapter_statement_reads_select_star(module: Any) -> None:
    """Every statement of the framework adapters names the columns it reads from a memsub function: a prepared
    ``select *`` would fail once on each pooled connection after an upgrade that changes the function's result."""
    statements = _statements_of(module)
    assert statements
    assert [s for s in statements if re.search(r"select\s+\*", s, re.IGNORECASE)] == []



def _timed_writes(dsn: str, until: threading.Event, seconds: list[float], failures: list[BaseException]) -> None:
    """An application writing packets one short call after another, noting how long each call took."""
    with Substrate(dsn, min_size=1, max_size=1) as substrate:
        with substrate.tenant(TENANT_A, user_id=USER, per_call=True) as session:
            while not until.is_set():
                started = time.monotonic()
                try:
                    session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"text": "live"}))
                except Exception as error:
                    failures.append(error)
                seconds.append(time.monotonic() - started)
                time.sleep(0.02)


def test_a_reader_holding_packet_store_stalls_application_writes_one_attempt_at_most(db: Any, tmp_path: Path
                                                                                      ) -> None:
    """Re-applying sql/ takes ACCESS EXCLUSIVE on packet_store (its trigger and policy are dropped and created
    again). While the migrator waits for it behind a long transaction, every other call on the table queues
    behind the migrator: it waits one attempt (DEFAULT_ATTEMPT_WAIT) at most, lets the queue drain, and tries
    again until the holder ends, within --lock-wait in all, instead of stalling the applications for the whole
    of --lock-wait."""
    hold = 3 * DEFAULT_ATTEMPT_WAIT
    changed = _changed_sql(tmp_path)
    report, took, seconds = _stalls_during(
        db, hold, lambda: Migrator(db.dsn(), repeatables_path=changed, lock_wait=60).migrate())
    assert report.repeatables_applied
    assert took >= hold
    assert len(seconds) > 4
    assert max(seconds) < DEFAULT_ATTEMPT_WAIT + 1.5, max(seconds)


def test_a_reader_holding_packet_store_past_the_lock_wait_is_named_and_nothing_changes(db: Any, tmp_path: Path
                                                                                        ) -> None:
    """The holder outlasts --lock-wait: migrate gives up after it, in attempts, names the holder, and leaves
    sql/ as it was (the changed file stays pending)."""
    with db.connect("app") as holder:
        holder.execute("select count(*) from memsub.packet_store")
        pid = holder.execute("select pg_backend_pid()").fetchone()
        assert pid is not None
        started = time.monotonic()
        changed = _changed_sql(tmp_path)
        with pytest.raises(MigrationError) as refused:
            Migrator(db.dsn(), repeatables_path=changed, lock_wait=2 * DEFAULT_ATTEMPT_WAIT).migrate()
        took = time.monotonic() - started
        holder.rollback()
    message = str(refused.value)
    assert message.startswith("re-runnable objects (sql/): a lock was not granted within"), message
    assert "attempts" in message and f"pid {pid[0]} (role memsub_test_app" in message, message
    assert 2 * DEFAULT_ATTEMPT_WAIT - 0.5 <= took < 2 * DEFAULT_ATTEMPT_WAIT + 3, took
    status = {entry.name: entry.state for entry in Migrator(db.dsn(), repeatables_path=changed).status()
              if entry.kind == "repeatable"}
    assert status["130_packet_read.sql"] == "changed", status


def _stalls_during(db: Any, hold: float, work: Any) -> tuple[Any, float, list[float]]:
    """Runs work() while a writer writes packets and an application transaction reads packet_store for ``hold``
    seconds: (work's result, its seconds, the writer's call times)."""
    until, seconds, failures = threading.Event(), [], []
    writer = threading.Thread(target=_timed_writes, args=(db.dsn("app"), until, seconds, failures))
    writer.start()
    try:
        while len(seconds) < 3 and writer.is_alive():
            time.sleep(0.05)
        with db.connect("app") as holder:
            holder.execute("select count(*) from memsub.packet_store")  # ACCESS SHARE until it ends
            release = threading.Timer(hold, holder.rollback)
            release.start()
            started = time.monotonic()
            result = work()
            took = time.monotonic() - started
            release.join()
        time.sleep(0.3)
    finally:
        until.set()
        writer.join()
    assert not failures, failures
    return result, took, seconds


def test_repair_behind_a_reader_of_packet_store_waits_in_attempts_and_reports_no_failure(db: Any) -> None:
    """`memsub repair` re-applies sql/ as migrate does: behind a transaction reading packet_store it waits one
    attempt at most at a time (the writers' calls go on between attempts) instead of reporting each statement
    on the table as a failure after a whole lock wait. It needs that table's lock: a policy of packet_store was
    changed in place (a policy that is as shipped is left alone, and locks nothing)."""
    with db.connect() as conn:
        conn.execute("alter policy not_expired on memsub.packet_store using (true)")
        conn.commit()
    hold = 3 * DEFAULT_ATTEMPT_WAIT
    report, took, seconds = _stalls_during(db, hold, lambda: catalog_check.repair(db.dsn()))
    assert report.failures == [] and report.remaining == [], (report.failures, report.remaining)
    assert took >= hold
    assert max(seconds) < DEFAULT_ATTEMPT_WAIT + 1.5, max(seconds)


def test_verify_while_applications_write_and_hold_transactions_reports_nothing_and_blocks_nobody(db: Any) -> None:
    problems, took, seconds = _stalls_during(db, 2.0, lambda: Migrator(db.dsn()).verify())
    assert problems == []
    assert took < 2.0, took  # it did not wait for the reader
    assert max(seconds) < 1.0, max(seconds)


def test_a_block_open_across_an_upgrade_keeps_its_context_and_the_upgrade_waits_for_it(db: Any, tmp_path: Path
                                                                                       ) -> None:
    """The context is transaction-local: a block that set it and wrote before the upgrade goes on writing in
    it; the re-apply, which needs the tables the block holds, waits (in attempts) until the block commits."""
    changed = _changed_sql(tmp_path)
    with Substrate(db.dsn("app"), min_size=1, max_size=2, prepare_threshold=0) as substrate:
        with substrate.tenant(TENANT_A, user_id=USER) as session:
            first = session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"text": "before"}))
            outcome: list[Any] = []
            migrating = threading.Thread(target=lambda: outcome.append(
                Migrator(db.dsn(), repeatables_path=changed, lock_wait=30).migrate()))
            migrating.start()
            time.sleep(2 * DEFAULT_ATTEMPT_WAIT)
            assert outcome == []  # waiting for the block
            second = session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"text": "during"}))
            tenants = session.fetch("select distinct tenant_id from memsub.packet_store where packet_id = any(%s)",
                                    [[str(first.packet_id), str(second.packet_id)]])
        migrating.join(30)
        assert outcome and outcome[0].repeatables_applied
        assert [row["tenant_id"] for row in tenants] == [TENANT_A]
        with substrate.tenant(TENANT_A, user_id=USER) as session:
            assert session.packets.get(second.packet_id) is not None


def test_the_http_server_answers_on_its_prepared_connections_across_an_upgrade(db: Any, tmp_path: Path) -> None:
    """The HTTP server's one pooled connection prepares every statement at once; after migrate applies a
    migration that adds columns to the tables its routes read and re-applies sql/, every route answers as before
    on the same connection."""
    key, dimension = api_key(db, uuid.uuid4()), dimension_of(db)
    migrations = _with_a_migration(tmp_path, "alter table memsub.memory_entries add column upgrade_note text;\n"
                                             "alter table memsub.sessions add column upgrade_note text;\n")
    changed = _changed_sql(tmp_path)

    async def scenario() -> int:
        app = create_app(db.dsn("app"), min_size=1, max_size=1, prepare_threshold=0)
        async with served(app, key) as client:
            await every_route(client, dimension)
            async with app.state.pool.connection() as conn:
                pid = (await (await conn.execute("select pg_backend_pid()")).fetchone())[0]
            report = await anyio.to_thread.run_sync(
                lambda: Migrator(db.dsn(), migrations_path=migrations, repeatables_path=changed).migrate())
            assert report.applied == ["99.0.0__upgrade_while_apps_run.sql"] and report.repeatables_applied
            await every_route(client, dimension)
            async with app.state.pool.connection() as conn:
                assert (await (await conn.execute("select pg_backend_pid()")).fetchone())[0] == pid
        return int(pid)

    assert anyio.run(scenario) > 0


def test_giving_up_names_the_session_that_blocked_it_not_the_ones_queued_behind(db: Any, tmp_path: Path) -> None:
    """An application transaction that began while migrate waited, and holds a lock on another memsub table,
    did not block it: the error names the holder of packet_store only, with its state."""
    changed = _changed_sql(tmp_path)
    with db.connect("app") as holder, db.connect("app") as bystander:
        holder.execute("select count(*) from memsub.packet_store")
        holder_pid = holder.execute("select pg_backend_pid()").fetchone()
        bystander_pid = bystander.execute("select pg_backend_pid()").fetchone()
        bystander.commit()
        assert holder_pid is not None and bystander_pid is not None
        outcome: list[BaseException] = []

        def migrate() -> None:
            try:
                Migrator(db.dsn(), repeatables_path=changed, lock_wait=3 * DEFAULT_ATTEMPT_WAIT).migrate()
            except MigrationError as error:
                outcome.append(error)

        migrating = threading.Thread(target=migrate)
        migrating.start()
        time.sleep(DEFAULT_ATTEMPT_WAIT / 2)
        bystander.execute("select count(*) from memsub.sessions")  # a table sql/ re-creates policies on, later
        migrating.join(30)
        holder.rollback()
        bystander.rollback()
    assert len(outcome) == 1
    message = str(outcome[0])
    assert f"pid {holder_pid[0]} (role memsub_test_app" in message, message
    assert "idle in transaction" in message, message
    assert f"pid {bystander_pid[0]} " not in message, message


_CHANGED_FUNCTION = "130_packet_read.sql"
# Lock modes that an application's read (ACCESS SHARE) or write (ROW EXCLUSIVE) of a table waits for.
_BLOCKING_MODES = ["ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"]
_POLICIES_AND_TRIGGERS = """\
select 'policy ' || c.relname || '.' || p.polname, p.oid::bigint from pg_policy p join pg_class c on c.oid = p.polrelid
 where c.relnamespace = 'memsub'::regnamespace
union all
select 'trigger ' || c.relname || '.' || t.tgname, t.oid::bigint from pg_trigger t join pg_class c on c.oid = t.tgrelid
 where c.relnamespace = 'memsub'::regnamespace and not t.tgisinternal"""


def _one_function_body_changed(tmp_path: Path) -> Path:
    """The shipped sql/ where the body of one function (the first of 130_packet_read.sql) has a new line: the
    commonest upgrade of sql/."""
    repeatables = tmp_path / "sql_one_function"
    shutil.copytree(resources.repeatables_dir(), repeatables)
    target = repeatables / _CHANGED_FUNCTION
    text = target.read_text()
    assert "as $$\n" in text
    target.write_text(text.replace("as $$\n", "as $$\n-- revised\n", 1))
    return repeatables


def _oids(db: Any) -> dict[str, int]:
    with db.connect() as conn:
        return dict(conn.execute(_POLICIES_AND_TRIGGERS).fetchall())  # type: ignore[arg-type]


def test_a_reapply_that_changes_one_function_keeps_every_policy_and_trigger_and_locks_no_table(
        db: Any, tmp_path: Path) -> None:
    """An upgrade that changes one function's body re-applies every file of sql/. Each policy and trigger it
    would create exactly as it is stays (its OID survives) and no table or view is locked in a mode the
    applications' reads or writes wait for; the end state is the shipped one (memsub verify finds nothing).
    Before, every policy and trigger was dropped and created again (new OIDs), and every view of sql/ replaced,
    holding ACCESS EXCLUSIVE on some 60 tables and views (packet_store among them) until the re-apply committed:
    an application call stalled 0.2-0.8 s."""
    before = _oids(db)
    assert len(before) > 60 and "policy packet_store.tenant_isolation" in before
    changed = _one_function_body_changed(tmp_path)
    with db.connect() as conn:  # the re-apply's statements in a transaction: what does it hold at its end?
        conn.execute("set search_path = public")
        for _, statements in repeatable_steps(load_repeatables(changed)):
            for statement in statements:
                conn.execute(statement.encode())
        held = conn.execute(
            "select c.relname || ' ' || l.mode from pg_locks l join pg_class c on c.oid = l.relation "
            "where l.pid = pg_backend_pid() and c.relnamespace = 'memsub'::regnamespace "
            "and c.relkind in ('r', 'p', 'v', 'm') and l.mode = any(%s) order by 1", [_BLOCKING_MODES]).fetchall()
        conn.rollback()
    assert held == []
    assert Migrator(db.dsn(), repeatables_path=changed).migrate().repeatables_applied
    assert _oids(db) == before
    # The shipped sql/ again (the function changes back): nothing else moves, and the catalog is as shipped.
    assert Migrator(db.dsn()).migrate().repeatables_applied
    assert _oids(db) == before
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn()])
    assert result.exit_code == 0, result.output


def test_a_policy_or_trigger_that_differs_is_created_again_as_shipped(db: Any, tmp_path: Path) -> None:
    """What a re-apply keeps is only what it would create identically: a policy changed in place (ALTER
    POLICY keeps its OID), a trigger disabled, a view without its security barrier and a policy that sql/ now
    defines otherwise are created again from the statement, and a dropped policy or view is created, whatever
    else is kept (memsub verify then finds the shipped catalog)."""
    with db.connect() as conn:
        conn.execute("alter policy tenant_isolation on memsub.sessions using (true)")
        conn.execute("alter table memsub.packet_store disable trigger packet_store_immutable")
        conn.execute("drop policy admin_override on memsub.tasks")
        conn.execute("alter view memsub.tenant_entity_graph reset (security_barrier)")
        conn.execute("drop view memsub.tenant_reflection_patterns")
        conn.commit()
    before = _oids(db)
    changed = _changed_sql(tmp_path)  # 130 and 310 touched, and packet_store's not_expired policy changed
    assert Migrator(db.dsn(), repeatables_path=changed).migrate().repeatables_applied
    with db.connect() as conn:
        assert conn.execute("select c.relname, c.reloptions from pg_class c where c.relnamespace = "
                            "'memsub'::regnamespace and c.relname in ('tenant_entity_graph', "
                            "'tenant_reflection_patterns') order by 1").fetchall() == [
            ("tenant_entity_graph", ["security_barrier=true"]),
            ("tenant_reflection_patterns", ["security_barrier=true"])]
    after = _oids(db)
    moved = sorted(name for name in after if after[name] != before.get(name))
    assert moved == ["policy packet_store.not_expired", "policy sessions.tenant_isolation",
                     "policy tasks.admin_override", "trigger packet_store.packet_store_immutable"], moved
    with db.connect() as conn:
        assert conn.execute("select pg_get_expr(polqual, polrelid) from pg_policy where polname = 'not_expired' "
                            "and polrelid = 'memsub.packet_store'::regclass").fetchone()[0].endswith("OR false)")
    assert Migrator(db.dsn()).migrate().repeatables_applied
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn()])
    assert result.exit_code == 0, result.output


def test_a_policy_is_created_again_when_no_probe_can_be_made(db: Any) -> None:
    """The probe is a temporary table of the table's name: when the installer's session cannot make it (here a
    temporary table of that name is already there; without the TEMP privilege likewise), the policy is dropped
    and created again from the statement, as a re-apply always did, rather than kept unchecked."""
    statement = ("create policy tenant_isolation on memsub.sessions as permissive for all to public "
                 "using (tenant_id = (select memsub.current_tenant_id()))")
    oid = "select oid from pg_policy where polname = 'tenant_isolation' and polrelid = 'memsub.sessions'::regclass"
    with db.connect() as conn:
        before = conn.execute(oid).fetchone()
        conn.execute("call memsub._ensure_policy('memsub.sessions', 'tenant_isolation', %s)", [statement])
        assert conn.execute(oid).fetchone() == before  # probed: identical, kept
        conn.execute("create temporary table sessions (id int)")
        conn.execute("call memsub._ensure_policy('memsub.sessions', 'tenant_isolation', %s)", [statement])
        after = conn.execute(oid).fetchone()
        assert after is not None and after != before
        assert conn.execute("select count(*) from pg_temp.sessions").fetchone() == (0,)  # left as it was
        conn.commit()
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn()])
    assert result.exit_code == 0, result.output


_TEMPORARY = ("select c.relname, c.oid::bigint from pg_class c where c.relnamespace = pg_my_temp_schema() "
              "and c.relkind = 'r' order by 1")


def test_the_reapply_makes_one_probe_table_per_table_and_decides_as_before(db: Any, tmp_path: Path) -> None:
    """In the transaction that applies sql/ (memsub.keep_probes on), memsub._same_as_created makes the temporary
    table of a table's probes once and uses it for every later probe of that table: one kept table per probed
    table, with no policy or trigger left on it, gone at the end of the transaction. It decides as a probe of its
    own would: a policy changed in place in that transaction is created again, a table whose columns changed
    after its probe table was made gets a new one (and its identical policy is kept), and a temporary table of
    the name that the session made itself is no probe (the policy is created again, the table left as it was).
    Before, each of the some 140 probes made its table and dropped it (no table was kept)."""
    ensure = "call memsub._ensure_policy('memsub.sessions', %s, %s)"
    tenant = ("create policy tenant_isolation on memsub.sessions as permissive for all to public "
              "using (tenant_id = (select memsub.current_tenant_id()))")
    admin = ("create policy admin_override on memsub.sessions as permissive for all to public "
             "using ((select memsub.is_platform_admin()))")
    before = _oids(db)
    with db.connect() as conn:
        conn.execute("set search_path = public")
        for _, statements in repeatable_steps(load_repeatables(_one_function_body_changed(tmp_path))):
            for statement in statements:
                conn.execute(statement.encode())
        kept = dict(conn.execute(_TEMPORARY).fetchall())
        assert {"packet_store", "sessions", "tasks", "memory_entries"} <= set(kept), kept
        assert len(kept) < len(before) / 2  # one per probed table, not one per probe
        assert conn.execute("select count(*) from pg_policy p join pg_class c on c.oid = p.polrelid "
                            "where c.relnamespace = pg_my_temp_schema()").fetchone() == (0,)
        assert conn.execute("select count(*) from pg_trigger t join pg_class c on c.oid = t.tgrelid "
                            "where c.relnamespace = pg_my_temp_schema()").fetchone() == (0,)
        assert dict(conn.execute(_POLICIES_AND_TRIGGERS).fetchall()) == before
        # Changed in place in this transaction: created again, though the probe table is a kept one.
        conn.execute("alter policy tenant_isolation on memsub.sessions using (true)")
        conn.execute(ensure, ["tenant_isolation", tenant])
        assert dict(conn.execute(_TEMPORARY).fetchall())["sessions"] == kept["sessions"]
        changed = dict(conn.execute(_POLICIES_AND_TRIGGERS).fetchall())
        assert changed["policy sessions.tenant_isolation"] != before["policy sessions.tenant_isolation"]
        assert changed["policy sessions.admin_override"] == before["policy sessions.admin_override"]
        # The table gains a column after its probe table was made: a new probe table, and the policy is kept.
        conn.execute("alter table memsub.sessions add column probe_extra int")
        conn.execute(ensure, ["admin_override", admin])
        assert dict(conn.execute(_TEMPORARY).fetchall())["sessions"] != kept["sessions"]
        assert dict(conn.execute(_POLICIES_AND_TRIGGERS).fetchall()) == changed
        conn.rollback()
    with db.connect() as conn:
        assert conn.execute(_TEMPORARY).fetchall() == []
        conn.execute("select pg_catalog.set_config('memsub.keep_probes', 'on', true)")
        conn.execute("create temporary table sessions (id int)")
        conn.execute(ensure, ["admin_override", admin])
        assert dict(conn.execute(_POLICIES_AND_TRIGGERS).fetchall())["policy sessions.admin_override"] != \
            before["policy sessions.admin_override"]
        assert conn.execute("select count(*) from pg_temp.sessions").fetchone() == (0,)
        conn.rollback()
    with db.connect() as conn:  # outside the transaction of sql/, nothing stays behind a probe
        conn.execute(ensure, ["admin_override", admin])
        assert conn.execute(_TEMPORARY).fetchall() == []
        conn.rollback()
    assert _oids(db) == before
