"""Connecting the way PostgreSQL tools do: libpq's environment, one-line errors, exit codes, --json."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from psycopg.conninfo import conninfo_to_dict

from memsub import ContextError, MemsubError, PacketEnvelopeIn, Substrate, errors
from memsub.cli import main as cli
from memsub.config import resolve_dsn

from helpers import TENANT_A, refused_dsn

ALL_CONNECTION_VARIABLES = ("MEMSUB_DSN", "DATABASE_URL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGUSER",
                            "PGDATABASE", "PGSERVICE", "PGPASSWORD", "PGCONNECT_TIMEOUT")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> pytest.MonkeyPatch:
    """No connection configured at all, and an empty embedded data directory that must stay empty."""
    for variable in ALL_CONNECTION_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("MEMSUB_DATA_DIR", str(tmp_path / "must-stay-unused"))
    return monkeypatch


@pytest.fixture
def empty_db(server) -> Iterator[str]:
    """A database without memsub."""
    name = f"memsub_test_empty_{uuid.uuid4().hex[:8]}"
    with server.janitor(name):
        yield name


def libpq_env(monkeypatch: pytest.MonkeyPatch, dsn: str) -> None:
    params = conninfo_to_dict(dsn)
    monkeypatch.setenv("PGHOST", str(params["host"]))
    monkeypatch.setenv("PGPORT", str(params.get("port", 5432)))
    monkeypatch.setenv("PGUSER", str(params.get("user", "postgres")))
    monkeypatch.setenv("PGDATABASE", str(params["dbname"]))


def one_line(output: str) -> None:
    lines = [line for line in output.splitlines() if line.strip() and not line.startswith("memsub: server ")]
    assert len(lines) == 1, output
    assert "Traceback" not in output and "WARNING" not in output


def test_libpq_environment_is_honoured_before_the_embedded_cluster(clean_env, db, tmp_path):
    libpq_env(clean_env, db.dsn())
    resolved = resolve_dsn(start_embedded=False)
    assert resolved.source.startswith("libpq environment")
    result = CliRunner().invoke(cli, ["status", "--json"])
    assert result.exit_code == 0, result.output
    assert f"memsub: server postgres@{conninfo_to_dict(db.dsn())['host']}" in result.stderr
    assert db.name in result.stderr
    states = json.loads(result.stdout)["counts"]
    assert states.get("pending", 0) == 0 and states["applied"] > 0
    assert not (tmp_path / "must-stay-unused").exists()


def test_each_connection_problem_is_one_line_with_its_exit_code(clean_env, db):
    runner = CliRunner()
    cases = [
        (["status", "--dsn", "host=x port"], 2, "malformed connection string"),
        (["verify", "--dsn", "postgresql://%zz@x/y"], 2, "malformed connection string"),
        (["status", "--dsn", refused_dsn()], 3, "Connection refused"),
        (["migrate", "--dsn", db.server.dsn("memsub_no_such_database")], 3, "does not exist"),
        (["migrate", "--dsn", db.dsn("nobody")], 4, "insufficient privilege"),
        (["packet", "get", str(uuid.uuid4()), "--tenant", str(TENANT_A), "--dsn", refused_dsn()], 3,
         "Connection refused"),
    ]
    for arguments, code, text in cases:
        result = runner.invoke(cli, arguments)
        assert result.exit_code == code, (arguments, result.output)
        assert text in result.stderr, (arguments, result.output)
        one_line(result.stderr)


def test_json_error_object_names_the_exit_code(clean_env):
    result = CliRunner().invoke(cli, ["verify", "--json", "--dsn", refused_dsn()])
    assert result.exit_code == 3
    payload = json.loads(result.stdout)
    assert payload["ok"] is False and payload["exit_code"] == 3 and payload["error"] == "ConnectionFailed"


def test_every_dsn_gets_a_connect_timeout_unless_it_sets_one(clean_env):
    assert conninfo_to_dict(resolve_dsn("host=h dbname=d").dsn)["connect_timeout"] == "5"
    assert conninfo_to_dict(resolve_dsn("host=h connect_timeout=1").dsn)["connect_timeout"] == "1"
    clean_env.setenv("PGCONNECT_TIMEOUT", "2")
    assert "connect_timeout" not in conninfo_to_dict(resolve_dsn("host=h").dsn)


def test_status_verify_migrate_speak_json(clean_env, empty_db, server):
    dsn = server.dsn(empty_db)
    runner = CliRunner()
    verify = runner.invoke(cli, ["verify", "--json", "--dsn", dsn])
    assert verify.exit_code == 1, verify.output
    report = json.loads(verify.stdout)
    problems = [d["object"] for d in report["differences"]]
    assert report["ok"] is False and problems
    assert all(p.startswith("pending: ") for p in problems)
    assert any("migrations/1.0.0__packet_store.sql" in p for p in problems)
    plan = json.loads(runner.invoke(cli, ["migrate", "--dry-run", "--json", "--dsn", dsn]).stdout)
    assert plan["dry_run"] and plan["planned"][0] == "1.0.0__packet_store.sql" and not plan["applied"]
    status = json.loads(runner.invoke(cli, ["status", "--json", "--dsn", dsn]).stdout)
    assert {e["state"] for e in status["entries"]} == {"pending"}
    applied = runner.invoke(cli, ["migrate", "--json", "--dsn", dsn])
    assert applied.exit_code == 0, applied.output
    assert json.loads(applied.stdout)["applied"][0] == "1.0.0__packet_store.sql"
    verify = runner.invoke(cli, ["verify", "--json", "--dsn", dsn])
    assert verify.exit_code == 0, verify.output
    assert json.loads(verify.stdout)["ok"] is True and json.loads(verify.stdout)["differences"] == []


def test_verify_without_memsub_lists_what_is_pending(clean_env, empty_db, server):
    result = CliRunner().invoke(cli, ["verify", "--dsn", server.dsn(empty_db)])
    assert result.exit_code == 1, result.output
    assert "pending: migrations/1.0.0__packet_store.sql is not applied" in result.stdout
    assert "Traceback" not in result.output


def test_pool_and_connection_errors_are_memsub_errors(clean_env):
    with Substrate(refused_dsn(), timeout=1.0) as substrate:
        with pytest.raises(errors.ConnectionFailed) as caught, substrate.tenant(TENANT_A):
            pass
    assert isinstance(caught.value, MemsubError)


@pytest.mark.parametrize("dsn", [
    "postgresql://someone:s3cr%et@db.internal/agents",  # a bad percent escape inside the password
    "postgresql://someone:s3cr3t@[::1/agents",  # an unclosed IPv6 bracket: libpq quotes the whole URI
    "host=db.internal password=s3cr3t user",  # a keyword without a value
])
def test_a_malformed_connection_string_never_shows_its_password(clean_env, dsn):
    for arguments in (["status", "--dsn", dsn], ["status", "--json", "--dsn", dsn]):
        result = CliRunner().invoke(cli, arguments)
        assert result.exit_code == 2, result.output
        assert "malformed connection string" in result.output
        assert "s3cr" not in result.output + result.stderr, result.output
    with pytest.raises(errors.ConfigurationError) as caught:
        Substrate(dsn)
    assert "s3cr" not in str(caught.value)


def test_an_unencoded_at_sign_in_a_password_is_refused_without_showing_it(clean_env):
    """libpq ends the user information at the first "@", so the rest of such a password becomes the host name."""
    dsn = "postgresql://someone:first@s3cr3t@127.0.0.1:1/agents"
    result = CliRunner().invoke(cli, ["status", "--dsn", dsn])
    assert result.exit_code == 2, result.output
    assert "%40" in result.stderr and "s3cr3t" not in result.output + result.stderr, result.output
    one_line(result.stderr)


def test_the_server_line_names_the_operating_system_user_when_user_is_unset(clean_env, monkeypatch):
    import getpass

    from memsub.connection import describe

    for variable in ("USER", "LOGNAME", "USERNAME", "LNAME"):
        monkeypatch.delenv(variable, raising=False)
    name = getpass.getuser()
    assert describe("host=db.internal port=5433") == f"{name}@db.internal:5433/{name}"


@pytest.mark.parametrize(("options", "field"), [
    ({"min_size": -1}, "min_size"), ({"max_size": 0}, "max_size"), ({"min_size": 3, "max_size": 2}, "max_size"),
    ({"timeout": 0}, "timeout"), ({"timeout": -1.0}, "timeout"),
    ({"prepare_threshold": -1}, "prepare_threshold"), ({"prepare_threshold": 1.5}, "prepare_threshold"),
    ({"prepare_threshold": "5"}, "prepare_threshold"), ({"prepare_threshold": True}, "prepare_threshold"),
])
def test_pool_options_out_of_range_are_configuration_errors(clean_env, options, field):
    from memsub.async_client import AsyncSubstrate

    for client in (Substrate, AsyncSubstrate):
        with pytest.raises(errors.ConfigurationError) as caught:
            client(refused_dsn(), **options)
        assert caught.value.field == field and field in str(caught.value)


def test_a_closed_substrate_refuses_calls_with_a_memsub_error(db):
    import asyncio

    from memsub.async_client import AsyncSubstrate

    substrate = Substrate(db.dsn("app"))
    substrate.close()
    for per_call in (False, True):
        with pytest.raises(errors.StateError, match="closed"), substrate.tenant(TENANT_A, per_call=per_call) as s:
            s.vector_dimension()

    async def unopened() -> None:
        never_opened = AsyncSubstrate(db.dsn("app"))
        for per_call in (False, True):
            with pytest.raises(errors.StateError, match="not open"):
                async with never_opened.tenant(TENANT_A, per_call=per_call) as session:
                    await session.vector_dimension()

    asyncio.run(unopened())


def test_local_validation_errors_are_memsub_errors():
    with pytest.raises(errors.InvalidInput) as caught:
        PacketEnvelopeIn(packet_type="", payload=1)
    assert isinstance(caught.value, MemsubError) and isinstance(caught.value, ValueError)
    assert caught.value.field == "packet_type"


def test_ttl_is_timezone_aware_like_timestamp(db):
    ttl = datetime.now(UTC) + timedelta(days=1)
    with Substrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        written = session.packets.write(PacketEnvelopeIn(packet_type="event", payload=1, ttl=ttl))
        row = session.packets.get(written.packet_id)
    assert row is not None and row.ttl is not None
    assert row.ttl.tzinfo is not None and row.timestamp.tzinfo is not None
    assert row.ttl > row.timestamp
    assert abs((row.ttl - ttl).total_seconds()) < 1


def test_no_runtime_dir_warning_without_xdg_runtime_dir(tmp_path):
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": ":".join(sys.path)}
    run = subprocess.run(
        [sys.executable, "-W", "default", "-c",
         "from memsub import embedded; embedded.server_class()"],
        env=environment, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert "RuntimeDirWarning" not in run.stderr and "XDG_RUNTIME_DIR" not in run.stderr


def test_privilege_error_is_a_context_error():
    from memsub.errors import PrivilegeError

    assert issubclass(PrivilegeError, ContextError)


def test_db_start_refuses_a_non_empty_directory_that_is_not_a_cluster(tmp_path):
    directory = tmp_path / "photos"
    directory.mkdir()
    (directory / "holiday.jpg").write_bytes(b"not a cluster")
    before = directory.stat()
    result = CliRunner().invoke(cli, ["db", "start", "--data-dir", str(directory)])
    assert result.exit_code == 2, result.output
    assert "not empty and holds no PostgreSQL cluster" in result.stderr
    one_line(result.stderr)
    after = directory.stat()
    assert (after.st_uid, after.st_gid, after.st_mode) == (before.st_uid, before.st_gid, before.st_mode)
    assert sorted(p.name for p in directory.iterdir()) == ["holiday.jpg"]


def test_scratch_directories_of_the_test_servers_are_removed_even_on_error():
    from helpers import scratch_dir

    with pytest.raises(RuntimeError), scratch_dir("memsub-test-") as directory:
        (directory / "pgdata").mkdir()
        assert directory.stat().st_mode & 0o777 == 0o755
        raise RuntimeError("test failed midway")
    assert not directory.exists()


def test_a_wrong_password_is_one_line_and_cannot_connect(clean_env):
    """On a private cluster that asks every login but its superuser for a password (the shared test server
    trusts local logins, so it cannot show this)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from memsub import embedded

    from helpers import scratch_dir

    with scratch_dir("memsub-password-") as workdir:
        data_dir = workdir / "pgdata"
        url = embedded.start(data_dir)
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("create role memsub_password_login login password 'the-right-one'")
                hba_row = conn.execute("show hba_file").fetchone()
                superuser_row = conn.execute("select current_user").fetchone()
                assert hba_row is not None and superuser_row is not None
                superuser = superuser_row[0]
                with open(hba_row[0], "w") as hba:
                    hba.write(f"local all {superuser} trust\nlocal all all scram-sha-256\n"
                              f"host all {superuser} 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n")
                conn.execute("select pg_reload_conf()")
            right = make_conninfo(url, user="memsub_password_login", password="the-right-one")
            with psycopg.connect(right) as conn:  # the login works with its password
                assert conn.execute("select current_user").fetchone() == ("memsub_password_login",)
            wrong = make_conninfo(url, user="memsub_password_login", password="a-wrong-one")
            result = CliRunner().invoke(cli, ["status", "--dsn", wrong])
            assert result.exit_code == 3, result.output
            assert "password authentication failed" in result.stderr, result.output
            assert "a-wrong-one" not in result.output + result.stderr  # never echo the password
            one_line(result.stderr)
        finally:
            embedded.stop(data_dir)
