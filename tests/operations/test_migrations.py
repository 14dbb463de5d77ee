"""The migrator: fresh install equals a step-by-step upgrade, idempotence, locking, drift, scripts, wheels."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from memsub import embedded, resources
from memsub.catalog_check import verify_catalog
from memsub.cli import main as cli
from memsub.errors import MigrationError
from memsub.migrator import Migrator

from catalog import snapshot

ROOT = Path(__file__).resolve().parents[2]


def _shipped_versions() -> list[str]:
    return [m.version_text for m in Migrator("").migrations]


def test_fresh_install_equals_step_by_step_upgrade_with_data(db, empty_db):
    fresh = snapshot(db.dsn())

    migrator = Migrator(empty_db.dsn())
    migrator.migrate("1.0.0")
    with empty_db.connect() as conn:
        # Packets as a 1.0.0 application wrote them: envelopes already carrying v1.1.0 fields, and a repeat.
        for number, (text, thread) in enumerate([("first", "11111111-2222-3333-4444-555555555555"),
                                                 ("second", "11111111-2222-3333-4444-555555555555"),
                                                 ("first", "11111111-2222-3333-4444-555555555555"),
                                                 ("loose", None)]):
            envelope = {"packet_type": "event", "payload": {"text": text}, "tags": ["b", "a", "a"]}
            if thread:
                envelope["thread_id"] = thread
            conn.execute(
                "insert into memsub.packet_store (packet_type, envelope, timestamp) "
                "values ('event', %s, now() + make_interval(secs => %s))", [json.dumps(envelope), number])
    for version in _shipped_versions()[1:]:
        migrator.migrate(version)
    migrator.migrate()  # re-runnable objects at the head

    assert snapshot(empty_db.dsn()) == fresh
    assert migrator.verify() == []
    differences, _ = verify_catalog(empty_db.dsn(), "snapshot")
    assert [d.describe() for d in differences] == []  # an upgraded database passes the catalog check too
    with empty_db.connect() as conn:
        rows = conn.execute(
            "select envelope -> 'payload' ->> 'text', tenant_id::text, thread_id::text, tags, content_hash is not null "
            "from memsub.packet_store order by timestamp").fetchall()
        threads = conn.execute("select count(*) from memsub.packet_threads").fetchone()
    assert [r[0] for r in rows] == ["first", "second", "first", "loose"]  # nothing lost
    assert {r[1] for r in rows} == {"00000000-0000-0000-0000-000000000000"}  # the documented default tenant
    assert rows[0][2] == "11111111-2222-3333-4444-555555555555" and rows[3][2] is None
    assert rows[0][3] == ["a", "b"]
    assert [r[4] for r in rows] == [True, True, False, True]  # the repeated content keeps no hash
    assert threads == (1,)


def test_second_migrate_is_a_noop(db):
    migrator = Migrator(db.dsn())
    before = snapshot(db.dsn())
    with db.connect() as conn:
        history_before = conn.execute("select version, applied_at from memsub.schema_history order by 1").fetchall()
    report = migrator.migrate()
    assert report.applied == [] and report.repeatables_applied is False
    with db.connect() as conn:
        assert conn.execute("select version, applied_at from memsub.schema_history order by 1").fetchall() \
            == history_before
    assert snapshot(db.dsn()) == before


def test_memsub_notices_reach_the_report_and_postgresql_ones_do_not(db, tmp_path):
    """A NOTICE that memsub's SQL raises for the installer (it begins with "memsub:", like the one of
    sql/980_planner_statistics.sql on a server without pg_restore_attribute_stats) is kept in the report, which
    `memsub migrate` prints; PostgreSQL's own notices are not."""
    repeatables = tmp_path / "sql"
    shutil.copytree(resources.repeatables_dir(), repeatables)
    (repeatables / "985_notices.sql").write_text(
        "do $$ begin raise notice 'memsub: the installer should read this'; end $$;\n"
        "drop function if exists memsub.no_such_function();\n")
    report = Migrator(db.dsn(), repeatables_path=repeatables).migrate()
    assert report.repeatables_applied
    assert report.notices == ["memsub: the installer should read this"]


def test_history_records_version_checksum_duration_and_role(db):
    with db.connect() as conn:
        rows = conn.execute(
            "select version, sha256, duration_ms, applied_by from memsub.schema_history order by version_order"
        ).fetchall()
    shipped = {m.version_text: m.sha256 for m in Migrator("").migrations}
    assert [r[0] for r in rows] == list(shipped)
    for version, sha, duration, applied_by in rows:
        assert sha == shipped[version]
        assert duration is not None and duration >= 0
        assert applied_by == "postgres"


def test_two_concurrent_migrators_are_safe(empty_db):
    errors: list[BaseException] = []
    reports = []
    barrier = threading.Barrier(2)

    def run() -> None:
        try:
            barrier.wait()
            reports.append(Migrator(empty_db.dsn()).migrate())
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    # Each migration once, by one migrator or the other. Usually one applies everything while the other waits for
    # the bootstrap lock and then finds nothing to do; a migrator that connects after the other has created the
    # history takes turns with it instead, one migration per transaction under the history's lock.
    applied = [len(r.applied) for r in reports]
    assert sum(applied) == len(_shipped_versions()), applied
    with empty_db.connect() as conn:
        assert conn.execute("select count(*), count(distinct version) from memsub.schema_history").fetchone() \
            == (len(_shipped_versions()),) * 2
    assert Migrator(empty_db.dsn()).verify() == []


def test_dry_run_changes_nothing(empty_db):
    report = Migrator(empty_db.dsn()).migrate(dry_run=True)
    assert report.planned[0] == "1.0.0__packet_store.sql" and report.planned[-1] == "sql/*"
    with empty_db.connect() as conn:
        assert conn.execute("select to_regnamespace('memsub')").fetchone() == (None,)


def test_edited_applied_migration_is_reported_as_drift(db, tmp_path):
    migrations = tmp_path / "migrations"
    shutil.copytree(resources.migrations_dir(), migrations)
    edited = migrations / "1.1.0__thread_lineage_tags_ttl.sql"
    edited.write_text(edited.read_text() + "\n-- an innocent-looking edit\n")
    migrator = Migrator(db.dsn(), migrations_path=migrations)

    problems = migrator.verify()
    assert any("drift: migrations/1.1.0__thread_lineage_tags_ttl.sql" in p for p in problems)
    with pytest.raises(MigrationError, match=r"1\.1\.0__thread_lineage_tags_ttl\.sql"):
        migrator.migrate()
    states = {e.name: e.state for e in migrator.status()}
    assert states["1.1.0__thread_lineage_tags_ttl.sql"] == "drifted"


def test_verify_names_the_file_of_a_missing_object_and_migrate_restores_it(db):
    with db.connect() as conn:
        conn.execute("drop function memsub.get_lineage(uuid, text, integer)")
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn()])
    assert result.exit_code == 1
    assert "function memsub.get_lineage declared in sql/130_packet_read.sql does not exist" in result.output
    assert Migrator(db.dsn()).migrate().repeatables_applied
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn()])
    assert result.exit_code == 0, result.output


def test_verify_names_the_file_of_a_missing_expiry_policy_and_migrate_restores_it(db):
    with db.connect() as conn:
        conn.execute("drop policy not_expired on memsub.knowledge_facts")
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn()])
    assert result.exit_code == 1
    assert ("policy memsub.not_expired on memsub.knowledge_facts declared in sql/410_knowledge_graph.sql does not exist"
            in result.output)
    assert Migrator(db.dsn()).migrate().repeatables_applied
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn()])
    assert result.exit_code == 0, result.output


def _with_a_slow_file(tmp_path: Path) -> Path:
    """The shipped sql/ with one more file whose one statement takes 0.3 s: as a step that rebuilds data does."""
    repeatables = tmp_path / "sql"
    shutil.copytree(resources.repeatables_dir(), repeatables)
    (repeatables / "985_slow.sql").write_text("select pg_sleep(0.3);\n")
    return repeatables


def test_timeouts_the_database_sets_for_applications_do_not_cancel_a_migration(db, tmp_path):
    """A statement or transaction timeout set on the database or the role (for the applications' sessions, as
    `memsub login-timeouts` does for logins) would cancel a migration that rebuilds data partway: the migrator's
    own bound is on lock waits (--lock-wait)."""
    with db.connect(autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("alter database {} set statement_timeout = '100ms'").format(
            psycopg.sql.Identifier(db.name)))
        if conn.info.server_version >= 170000:  # transaction_timeout is new in PostgreSQL 17
            conn.execute(psycopg.sql.SQL("alter database {} set transaction_timeout = '200ms'").format(
                psycopg.sql.Identifier(db.name)))
    report = Migrator(db.dsn(), repeatables_path=_with_a_slow_file(tmp_path)).migrate()
    assert report.repeatables_applied


def test_a_timeout_given_for_the_migrators_own_connection_still_applies(db, tmp_path):
    options = psycopg.conninfo.make_conninfo(db.dsn(), options="-c statement_timeout=100ms")
    with pytest.raises(psycopg.errors.QueryCanceled):
        Migrator(options, repeatables_path=_with_a_slow_file(tmp_path)).migrate()


def test_a_failed_file_is_named_in_the_one_line_error(db, tmp_path, monkeypatch):
    repeatables = tmp_path / "sql"
    shutil.copytree(resources.repeatables_dir(), repeatables)
    (repeatables / "985_broken.sql").write_text("select memsub.no_such_function();\n")
    monkeypatch.setattr(resources, "repeatables_dir", lambda: repeatables)
    result = CliRunner().invoke(cli, ["migrate", "--dsn", db.dsn()])
    assert result.exit_code == 1, result.output
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("memsub: sql/985_broken.sql: function memsub.no_such_function() does not exist"), line
    assert "SQLSTATE 42883" in line


@pytest.mark.parametrize("role", ["app", "nobody"])
def test_migrate_as_a_login_that_may_not_is_one_line_naming_who_may(db, role):
    result = CliRunner().invoke(cli, ["migrate", "--dsn", db.dsn(role)])
    assert result.exit_code == 4, result.output
    line = result.stderr.strip().splitlines()[-1]
    assert f"memsub_test_{role} may not take memsub's migration lock" in line
    assert "runs as a superuser or a member of memsub_owner, the owner of memsub.schema_history" in line


def test_refuses_a_database_newer_than_the_code(db):
    with db.connect() as conn:
        conn.execute("insert into memsub.schema_history (version, name, sha256) values ('99.0.0', 'future', 'x')")
    with pytest.raises(MigrationError, match="newer than this memsub"):
        Migrator(db.dsn()).migrate()
    assert any("newer" in p for p in Migrator(db.dsn()).verify())


def test_migrate_to_a_version_then_onwards(empty_db):
    migrator = Migrator(empty_db.dsn())
    report = migrator.migrate("1.1.0")
    assert report.applied == ["1.0.0__packet_store.sql", "1.1.0__thread_lineage_tags_ttl.sql"]
    assert not report.repeatables_applied
    states = {e.name: e.state for e in migrator.status()}
    assert states["2.0.0__ten_x_columns.sql"] == "pending"
    with pytest.raises(MigrationError, match="does not migrate down"):
        migrator.migrate("1.0.0")
    with pytest.raises(MigrationError, match="no such migration"):
        migrator.migrate("1.5.0")
    migrator.migrate()
    assert migrator.verify() == []


def test_sql_script_through_psql_reaches_the_same_state(db, empty_db, tmp_path):
    result = CliRunner().invoke(cli, ["sql"])
    assert result.exit_code == 0
    script = tmp_path / "install.sql"
    script.write_text(result.output)
    psql = embedded.bin_dir() / "psql"
    run = subprocess.run([str(psql), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(script), empty_db.dsn()],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert snapshot(empty_db.dsn()) == snapshot(db.dsn())
    assert Migrator(empty_db.dsn()).verify() == []


def test_sql_script_from_a_version_and_its_guard(empty_db, tmp_path):
    Migrator(empty_db.dsn()).migrate("1.1.0")
    psql = str(embedded.bin_dir() / "psql")
    wrong = tmp_path / "wrong.sql"
    wrong.write_text(Migrator("").script("2.0.0"))
    run = subprocess.run([psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(wrong), empty_db.dsn()],
                         capture_output=True, text=True, check=False)
    assert run.returncode != 0 and "expects the database at version 2.0.0, it is at 1.1.0" in run.stderr
    right = tmp_path / "right.sql"
    right.write_text(Migrator("").script("1.1.0"))
    run = subprocess.run([psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(right), empty_db.dsn()],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert Migrator(empty_db.dsn()).verify() == []


def test_cli_migrate_status_and_dry_run(empty_db):
    runner = CliRunner()
    result = runner.invoke(cli, ["migrate", "--dsn", empty_db.dsn(), "--dry-run"])
    assert result.exit_code == 0 and "would apply: 1.0.0__packet_store.sql" in result.output
    result = runner.invoke(cli, ["migrate", "--dsn", empty_db.dsn()])
    assert result.exit_code == 0 and "applied 2.1.0__multi_tenant.sql" in result.output
    assert "applied re-runnable objects" in result.output
    result = runner.invoke(cli, ["migrate", "--dsn", empty_db.dsn()])
    assert "nothing to do" in result.output
    result = runner.invoke(cli, ["status", "--dsn", empty_db.dsn()])
    assert result.exit_code == 0
    assert "pending" not in result.output and "120_packet_write.sql" in result.output


def test_dsn_resolution_order(monkeypatch):
    from memsub.config import resolve_dsn
    from memsub.errors import ConnectionFailed

    for variable in ("PGHOST", "PGHOSTADDR", "PGPORT", "PGUSER", "PGDATABASE", "PGSERVICE", "PGCONNECT_TIMEOUT"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("MEMSUB_DSN", "dbname=from_memsub_dsn")
    monkeypatch.setenv("DATABASE_URL", "dbname=from_database_url")
    monkeypatch.setenv("PGDATABASE", "from_libpq")
    assert resolve_dsn("dbname=from_option").source == "--dsn"
    assert resolve_dsn(None).dsn == "dbname=from_memsub_dsn connect_timeout=5"
    monkeypatch.delenv("MEMSUB_DSN")
    assert resolve_dsn(None).source == "DATABASE_URL"
    monkeypatch.delenv("DATABASE_URL")
    assert resolve_dsn(None).source == "libpq environment: PGDATABASE"
    monkeypatch.delenv("PGDATABASE")
    monkeypatch.setenv("MEMSUB_DATA_DIR", "/nonexistent/memsub-cluster")
    with pytest.raises(ConnectionFailed, match="embedded cluster is stopped"):
        resolve_dsn(None, start_embedded=False)


@pytest.mark.slow
def test_installed_wheel_carries_the_sql_and_migrates_a_fresh_database(empty_db, tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
                   check=True, capture_output=True)
    wheel = next(dist.glob("memsub-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "memsub/migrations/2.1.0__multi_tenant.sql" in names
    assert "memsub/sql/120_packet_write.sql" in names
    assert "memsub/py.typed" in names
    assert "memsub/catalog_snapshot.json" in names  # what memsub verify compares with
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)],
                             capture_output=True, text=True, check=False)
    assert install.returncode == 0, install.stderr[-2000:]
    env_cwd = tmp_path  # run away from the source tree: the wheel's own copy of the SQL must be used
    migrate = subprocess.run([str(venv / "bin" / "memsub"), "migrate", "--dsn", empty_db.dsn()],
                             capture_output=True, text=True, cwd=env_cwd, check=False)
    assert migrate.returncode == 0, migrate.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import memsub.resources as r; print(r.migrations_dir())"],
                           capture_output=True, text=True, cwd=env_cwd, check=True)
    assert str(venv) in where.stdout
    verify = subprocess.run([str(venv / "bin" / "memsub"), "verify", "--dsn", empty_db.dsn()],
                            capture_output=True, text=True, cwd=env_cwd, check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    with psycopg.connect(empty_db.dsn()) as conn:
        assert conn.execute("select count(*) from memsub.schema_history").fetchone() == (len(_shipped_versions()),)
