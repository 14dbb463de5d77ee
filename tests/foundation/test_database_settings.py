"""memsub in a database whose defaults a DBA set (``alter database ... set``, ``alter role ... set``, or
postgresql.conf): each test sets one default for a product login in its own database, as the test's administrator,
then acts as that login, never as the superuser (docs/operations.md, "Server and login settings")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import anyio
import httpx
import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from conftest import login_role
from http_helpers import create_key
from memsub.async_client import AsyncSubstrate
from memsub.catalog_check import fingerprint_dsn, repair, verify_catalog
from memsub.cli import main as cli
from memsub.client import Substrate
from memsub.errors import ConflictError, ContextError, ReadOnlyError, contract_of_error, from_database_error
from memsub.http_api import create_app, problem_from_database
from memsub.migrator import Migrator
from memsub.models import parse_time
from memsub.preflight import ROW_SECURITY_CHECK, run_checks

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


AT = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)  # day 4 of month 3: DMY and MDY read it differently
TTL = datetime(2099, 7, 8, 9, 10, 11, 121314, tzinfo=UTC)
PRECISE = 0.1234567890123457  # 16 significant digits: an extra_float_digits of 0 or less rounds it


def check_round_trip(written: Any, read: Any) -> None:
    assert read is not None and read.packet_id == written.packet_id
    assert read.timestamp == AT and read.ttl == TTL
    assert read.importance_score == PRECISE


def test_the_client_reads_times_and_floats_whatever_the_logins_output_formats(db: Any) -> None:
    for name, value in FORMATS.items():
        set_for_login(db, "app", name, value)
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with substrate.tenant(TENANT_A) as session:
            assert session.fetch("select current_setting('TimeZone') as zone")[0]["zone"] == "Pacific/Chatham"
            written = session.packets.write({"packet_type": "event", "payload": {"at": "04/03"}, "timestamp": AT,
                                             "ttl": TTL, "importance_score": PRECISE})
            check_round_trip(written, session.packets.get(written.packet_id))  # read in binary
            check_round_trip(written, session.packets.get(written.packet_id, with_vectors=False))  # as text
        with substrate.tenant(TENANT_A, per_call=True) as session:
            check_round_trip(written, session.packets.get(written.packet_id, with_vectors=False))
    # The content hash does not depend on the session's formats: the same envelope written by a login with the
    # server's defaults is the same packet.
    with Substrate(db.dsn("tenant_admin"), max_size=1) as substrate, substrate.tenant(TENANT_A) as session:
        again = session.packets.write({"packet_type": "event", "payload": {"at": "04/03"}, "timestamp": AT,
                                       "ttl": TTL, "importance_score": PRECISE})
        assert again.deduplicated and again.packet_id == written.packet_id


@pytest.mark.asyncio
async def test_the_async_client_reads_times_and_floats_whatever_the_logins_output_formats(db: Any) -> None:
    for name, value in FORMATS.items():
        set_for_login(db, "app", name, value)
    async with AsyncSubstrate(db.dsn("app"), max_size=1) as substrate:
        async with substrate.tenant(TENANT_A) as session:
            written = await session.packets.write({"packet_type": "event", "payload": 1, "timestamp": AT,
                                                   "ttl": TTL, "importance_score": PRECISE})
            check_round_trip(written, await session.packets.get(written.packet_id, with_vectors=False))


def test_the_http_api_answers_times_and_floats_whatever_the_logins_output_formats(db: Any) -> None:
    with db.connect(autocommit=True) as conn:
        conn.execute("select memsub.unbind_login(%s)", [login_role("app")])  # the key names the tenant
    key = str(create_key(db.dsn("platform_admin"), TENANT_A)["api_key"])
    for name, value in FORMATS.items():
        set_for_login(db, "app", name, value)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        app = create_app(db.dsn("app"), min_size=1, max_size=1)
        await app.state.pool.open(wait=True)
        try:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://memsub.test",
                                         headers={"Authorization": f"Bearer {key}"}) as client:
                written = await client.post("/api/v1/memory/packet", json={
                    "packet_type": "event", "payload": 1, "timestamp": AT.isoformat(), "ttl": TTL.isoformat(),
                    "importance_score": PRECISE})
                assert written.status_code == 201, written.text
                read = await client.get(f"/api/v1/memory/packet/{written.json()['packet_id']}")
                assert read.status_code == 200, read.text
                return written.json(), read.json()
        finally:
            await app.state.pool.close()

    written, read = anyio.run(scenario)
    assert parse_time(written["timestamp"]) == AT
    assert parse_time(read["timestamp"]) == AT and read["importance_score"] == PRECISE


@pytest.mark.parametrize("kind", ["app", "analyst"])
def test_a_login_without_row_security_is_refused_by_name_before_any_read(db: Any, kind: str) -> None:
    """With row_security off, PostgreSQL raises instead of filtering a table under row-level security, at the
    first one a call reads, naming the table (with a hint to take FORCE ROW LEVEL SECURITY off). memsub filters
    every tenant's rows that way, so the context is refused, naming the setting."""
    set_for_login(db, kind, "row_security", "off")
    with Substrate(db.dsn(kind), max_size=1) as substrate:
        with pytest.raises(ContextError) as raised, substrate.tenant(TENANT_A) as session:
            session.fetch("select count(*) as n from memsub.packet_store")
    error = raised.value
    assert (error.sqlstate, error.field) == ("42501", "row_security")
    assert "row_security" in str(error) and "policy" not in str(error)
    with db.connect(kind) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
        conn.execute("select * from memsub.authenticate_api_key(%s)", ["msk_" + "0" * 16 + "_" + "0" * 64])
    assert refused.value.diag.column_name == "row_security"  # the HTTP API's way in, before any key is read


@pytest.mark.parametrize("isolation", ["repeatable read", "serializable"])
def test_update_in_a_block_at_a_snapshot_level_stops_at_the_first_conflict(db: Any, isolation: str) -> None:
    """memory.update retries a lost race inside the block, to a savepoint: under READ COMMITTED the retry reads
    the version that won. At REPEATABLE READ or SERIALIZABLE the block's transaction keeps the snapshot it began
    with, so every retry would read the same old version and lose again: the first conflict is raised at once,
    saying to run the block again. In per-call mode each attempt is a transaction of its own and retries."""
    set_for_login(db, "app", "default_transaction_isolation", isolation)
    user = uuid4()
    namespace = f"user:{user}:counters"
    seen: list[Any] = []

    def bump(value: Any) -> Any:
        seen.append(value)
        return value + 1

    with Substrate(db.dsn("app"), max_size=2) as substrate:
        with substrate.tenant(TENANT_A, user_id=user) as session:
            session.memory.write(namespace, "hits", 1)
        with pytest.raises(ConflictError) as raised, substrate.tenant(TENANT_A, user_id=user) as stale:
            assert stale.memory.get(namespace, "hits").value == 1  # the block's snapshot
            with substrate.tenant(TENANT_A, user_id=user, per_call=True) as other:
                assert other.memory.update(namespace, "hits", bump).value == 2
            stale.memory.update(namespace, "hits", bump, attempts=5)
        assert seen == [1, 1]  # the other writer's attempt, then this block's only one
        assert "snapshot" in str(raised.value) and isolation in str(raised.value)
        with substrate.tenant(TENANT_A, user_id=user, per_call=True) as session:
            assert session.memory.update(namespace, "hits", bump).value == 3


def test_a_read_only_analyst_reads_and_a_read_only_writer_is_refused_by_contract(db: Any) -> None:
    """A DBA makes a login read-only (default_transaction_read_only, or a hot standby): an analyst's reads write
    nothing and go on; a write is refused with SQLSTATE 25006, a ReadOnlyError and HTTP 503 ``read-only``, not a
    server error."""
    with Substrate(db.dsn("app"), max_size=1) as substrate, substrate.tenant(TENANT_A) as session:
        session.packets.write({"packet_type": "event", "payload": {"text": "boiler"}, "memory": {"relationships": [
            {"source_entity": "Ada", "relationship_type": "uses", "target_entity": "Boiler"}]}})
    for kind in ("analyst", "app"):
        set_for_login(db, kind, "default_transaction_read_only", "on")
    with Substrate(db.dsn("analyst"), max_size=1) as substrate, substrate.tenant(TENANT_A) as session:
        assert session.search.hybrid("boiler", None, k=3) == []  # searched, recording nothing
        assert [path.entity for path in session.graph.traverse("Ada")] == ["Boiler"]
        assert session.fetch("select count(*) as n from memsub.tenant_entity_graph") == [{"n": 0}]  # not refreshed
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with pytest.raises(ReadOnlyError) as raised, substrate.tenant(TENANT_A) as session:
            session.packets.write({"packet_type": "event", "payload": 2})
    assert raised.value.sqlstate == "25006"
    with db.connect("app") as conn, pytest.raises(psycopg.errors.ReadOnlySqlTransaction) as refused:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.write_packet(%s::jsonb)", ['{"packet_type": "event", "payload": 3}'])
    problem = problem_from_database(refused.value)
    assert (problem.status, problem.kind) == (503, "read-only")


@pytest.mark.parametrize(("path", "shown"), [("''", '""'), ('"$user"', '"$user"'), ("pg_catalog", "pg_catalog")])
def test_the_client_and_the_http_api_work_under_a_logins_search_path_without_the_extensions_schema(
        db: Any, path: str, shown: str) -> None:
    """memsub's own functions pin their search_path; what the client and the HTTP server send must not depend on
    the login's: pgvector's type is found in whichever schema holds it, and named by nobody's search_path."""
    with db.connect(autocommit=True) as conn:
        dimension = int(conn.execute("select memsub.vector_dimension()").fetchone()[0])  # type: ignore[index]
        conn.execute(sql.SQL("alter role {} in database {} set search_path = {}").format(
            sql.Identifier(login_role("app")), sql.Identifier(db.name), sql.SQL(path)))
    vector = [0.0] * dimension
    vector[3] = 1.0
    user = uuid4()
    with Substrate(db.dsn("app"), max_size=1) as substrate, substrate.tenant(TENANT_A, user_id=user) as session:
        assert session.fetch("select current_setting('search_path') as path") == [{"path": shown}]
        session.memory.write(f"user:{user}:notes", "first", "v", embedding=vector)
        assert [hit.key for hit in session.memory.search("v", vector)] == ["first"]
    with db.connect(autocommit=True) as conn:
        conn.execute("select memsub.unbind_login(%s)", [login_role("app")])  # the HTTP API's key names the tenant
    key = str(create_key(db.dsn("platform_admin"), TENANT_A, user=user)["api_key"])

    async def scenario() -> list[httpx.Response]:
        app = create_app(db.dsn("app"), min_size=1, max_size=1)
        await app.state.pool.open(wait=True)
        try:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://memsub.test",
                                         headers={"Authorization": f"Bearer {key}"}) as client:
                return [await client.put(f"/api/v1/memory/namespace/user:{user}:notes/keys/second",
                                         json={"value": "w", "embedding": vector}),
                        await client.post("/api/v1/search/semantic", json={"query": vector, "k": 3}),
                        await client.post("/api/v1/search/hybrid", json={"query_text": "v", "k": 3})]
        finally:
            await app.state.pool.close()

    for response in anyio.run(scenario):
        assert response.status_code == 200, (response.request.url, response.text)


def test_the_migrator_installs_under_a_databases_short_session_timeouts(empty_db: Any) -> None:
    """A DBA's timeouts for the applications' sessions, set on the database: the migrator's session turns off
    those that would end a migration partway (between its statements a migration is idle in its transaction)."""
    set_for_database(empty_db, {"statement_timeout": "20ms", "idle_in_transaction_session_timeout": "10ms"})
    report = Migrator(empty_db.dsn()).migrate()
    assert report.applied and not Migrator(empty_db.dsn()).migrate().applied


def test_maintain_and_verify_run_under_a_databases_short_session_timeouts(db: Any) -> None:
    """memsub maintain, refresh-views and verify turn off the applications' run timeouts for their own session, as
    the migrator does: a maintenance task and the catalog read verify compares are long by nature."""
    set_for_database(db, {"statement_timeout": "20ms", "idle_in_transaction_session_timeout": "10ms"})
    for command in ("maintain", "refresh-views"):
        result = CliRunner().invoke(cli, [command, "--dsn", db.dsn()])
        assert result.exit_code == 0, result.output
    assert fingerprint_dsn(db.dsn())  # what memsub verify reads of the installed catalog


def test_repair_runs_under_a_databases_short_session_timeouts(db: Any) -> None:
    """memsub repair reads the whole catalog and re-applies sql/ in one transaction, as migrate does: it turns off
    the applications' run timeouts for its own session too (its lock waits stay bounded by its attempts)."""
    set_for_database(db, {"statement_timeout": "20ms", "idle_in_transaction_session_timeout": "10ms"})
    report = repair(db.dsn())
    assert report.failures == [] and report.remaining == [], (report.failures, report.remaining)


def test_preflight_names_the_database_and_the_memsub_logins_that_turn_row_security_off(db: Any) -> None:
    """A setting memsub cannot run under is found before installing (and before every upgrade), naming where it is
    set: the database for every login, or a login in a memsub role. A login outside memsub's roles (a backup
    tool's) may keep it."""
    with db.connect(autocommit=True) as admin:
        admin.execute("create role memsub_test_backup login")
        try:
            set_for_login(db, "analyst", "row_security", "off")
            admin.execute(sql.SQL("alter role memsub_test_backup in database {} set row_security = off").format(
                sql.Identifier(db.name)))
            failed = [c for c in run_checks(admin, []) if not c.ok]
            assert [c.what for c in failed] == [ROW_SECURITY_CHECK]
            assert login_role("analyst") in failed[0].detail and "memsub_test_backup" not in failed[0].detail
            set_for_login(db, "analyst", "row_security", "on")
            assert [c for c in run_checks(admin, []) if not c.ok] == []
            set_for_database(db, {"row_security": "off"})
            failed = [c for c in run_checks(admin, []) if not c.ok]
            assert [c.what for c in failed] == [ROW_SECURITY_CHECK] and f"database {db.name}" in failed[0].detail
        finally:
            admin.execute(sql.SQL("drop owned by memsub_test_backup"))
            admin.execute("drop role memsub_test_backup")


def test_a_serialization_failure_of_other_rows_is_not_reported_as_a_stale_version_of_the_key(db: Any) -> None:
    """Under SERIALIZABLE, two transactions that each read a key the other writes (write skew) cannot both commit.
    memory_write turns PostgreSQL's 40001 into its own stale version only when a version of the key itself
    was written after the snapshot; here none was, and the failure stays PostgreSQL's, naming nothing: a
    busy conflict to retry, not a key with a version it does not have."""
    set_for_login(db, "app", "default_transaction_isolation", "serializable")
    user = uuid4()
    namespace = f"user:{user}:skew"

    def read(conn: psycopg.Connection[Any], key: str) -> None:
        set_context(conn, TENANT_A, user=user)
        conn.execute("select * from memsub.memory_get(%s, %s)", [namespace, key])

    def write(conn: psycopg.Connection[Any], key: str) -> None:
        conn.execute("select * from memsub.memory_write(%s, %s, '1'::jsonb)", [namespace, key])

    with db.connect("app") as first, db.connect("app") as second:
        read(first, "a")
        read(second, "b")
        write(first, "b")
        first.commit()
        with pytest.raises(psycopg.errors.SerializationFailure) as raised:
            write(second, "a")
        second.rollback()
    error = raised.value
    assert error.diag.column_name is None, error.diag.message_primary
    problem = problem_from_database(error)
    assert problem.status == 503
    # ``conflict`` carries memsub's current_version=N; PostgreSQL's detail (its "Reason code") is no such thing.
    assert (error.diag.message_detail or "").startswith("Reason code") and "conflict" not in problem.extra
