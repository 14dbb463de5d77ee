"""Secrets never reach the server's log as statement text.

PostgreSQL writes the text of every failing statement to its log (``log_min_error_statement = error``), and of
every statement under ``log_statement``/``log_min_duration_statement``, with its bind parameters unless
``log_parameter_max_length = 0``. A secret memsub sends must therefore travel as a bind parameter (never inside
the SQL text), and a password never at all: the client sends the SCRAM verifier it computed, as psql's
``\\password`` does. These tests read the log of the test server (superuser: ``pg_read_file``) and grep it for
each secret after successful and failing calls. docs/security.md, "What stays out of the server log".
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from memsub import demo, embedded
from memsub.context_tokens import mint_context_token
from memsub.http_api import AUTHENTICATE


def _log_size(conn: psycopg.Connection[Any]) -> tuple[str, int]:
    row = conn.execute("select coalesce(pg_catalog.pg_current_logfile(), 'log')").fetchone()
    assert row is not None
    name = str(row[0])
    size = conn.execute("select size from pg_catalog.pg_stat_file(%s, true)", [name]).fetchone()
    assert size is not None and size[0] is not None, (
        f"the test server writes no log file this test can read ({name} in its data directory)")
    return name, int(size[0])


@contextmanager
def server_log(db: Any) -> Iterator[list[str]]:
    """The text the server logs inside the block (appended to the yielded list when the block ends)."""
    written: list[str] = []
    with db.connect(autocommit=True) as conn:
        name, start = _log_size(conn)
        yield written
        conn.execute("select pg_catalog.pg_sleep(0.05)")  # stderr is written at once; let the last line land
        row = conn.execute("select pg_catalog.pg_read_binary_file(%s, %s, %s, true)",
                           [name, start, _log_size(conn)[1] - start]).fetchone()
        assert row is not None
        written.append(bytes(row[0]).decode("utf-8", "replace"))


def _scram_matches(verifier: str, password: str) -> bool:
    """Whether a SCRAM-SHA-256 verifier (pg_authid.rolpassword) accepts ``password`` (RFC 5802/7677)."""
    method, rest = verifier.split("$", 1)
    iterations_salt, keys = rest.split("$", 1)
    iterations, salt = iterations_salt.split(":")
    stored_key = base64.b64decode(keys.split(":")[0])
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(salt), int(iterations))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    return method == "SCRAM-SHA-256" and hashlib.sha256(client_key).digest() == stored_key


def test_demo_login_passwords_reach_the_server_as_scram_verifiers_only(db):
    with db.connect(autocommit=True) as conn:
        conn.execute(sql.SQL("alter database {} set log_statement = 'ddl'").format(sql.Identifier(db.name)))
    resources = demo.DemoResources(db.server.dsn("postgres"), db.name)
    try:
        with server_log(db) as log:
            passwords = demo.create_demo_roles(resources, db.dsn())
        with db.connect() as conn:
            stored = dict(conn.execute("select rolname, rolpassword from pg_catalog.pg_authid "
                                       "where rolname = any(%s)", [list(passwords)]).fetchall())
    finally:
        resources.cleanup(keep=True)
    assert "create role" in log[0].lower()  # the statements were logged ...
    for role, password in passwords.items():
        assert password not in log[0]  # ... without the password
        assert _scram_matches(stored[role], password)


def test_a_failing_role_creation_logs_no_password(db, monkeypatch):
    """The statement that fails (the role exists) is logged whole: it must not hold the password."""
    password = "never-in-the-log-" + uuid.uuid4().hex
    suffix = uuid.uuid4().hex[:6]
    monkeypatch.setattr(secrets, "token_hex", lambda _: suffix)
    monkeypatch.setattr(secrets, "token_urlsafe", lambda _: password)
    taken = sql.Identifier(f"memsubdemo_app_{suffix}")
    resources = demo.DemoResources(db.server.dsn("postgres"), db.name)
    with db.connect(autocommit=True) as conn:
        conn.execute(sql.SQL("create role {} login").format(taken))
    try:
        with server_log(db) as log, pytest.raises(psycopg.errors.DuplicateObject):
            demo.create_demo_roles(resources, db.dsn())
    finally:
        resources.cleanup(keep=True)
        with db.connect(autocommit=True) as conn:
            conn.execute(sql.SQL("drop role if exists {}").format(taken))
    assert f"memsubdemo_app_{suffix}" in log[0] and "already exists" in log[0]
    assert password not in log[0]


def _log_everything_but_parameters(db: Any) -> None:
    """log_statement = 'all' with the setting docs/security.md gives for it: no bind parameter values."""
    with db.connect(autocommit=True) as conn:
        for setting in ("log_statement = 'all'", "log_parameter_max_length = 0"):
            conn.execute(sql.SQL("alter database {} set " + setting).format(sql.Identifier(db.name)))


def _documented_signing_key_statements() -> str:
    """The psql lines docs/security.md gives for registering a context signing key."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text(encoding="utf-8")
    block = re.search(r"```sql\n(.*?)```", doc.split("### Signed contexts", 1)[1], flags=re.S)
    assert block is not None
    return block.group(1)


def test_the_documented_signing_key_registration_logs_no_key(db, tmp_path):
    """Run as docs/security.md says (psql, the key in MEMSUB_SIGNING_KEY): refused for a login without the right
    (the failing statement is logged whole), then done by a platform admin with every statement logged."""
    key = secrets.token_bytes(32)
    script = tmp_path / "register.sql"
    script.write_text(_documented_signing_key_statements().replace("<64 hex digits>", key.hex()))
    psql = str(embedded.bin_dir() / "psql")
    environment = {**os.environ, "MEMSUB_SIGNING_KEY": key.hex()}

    def register(login: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(script), db.dsn(login)],
                              capture_output=True, text=True, check=False, env=environment)

    with server_log(db) as refused_log:
        refused = register("app")
    assert refused.returncode != 0 and "permission denied for function set_context_signing_key" in refused.stderr
    _log_everything_but_parameters(db)
    with server_log(db) as done_log:
        done = register("platform_admin")
    assert done.returncode == 0, done.stderr
    token = mint_context_token(key, "gateway-1", "aaaaaaaa-0000-0000-0000-000000000001", ttl_seconds=60)
    with db.connect("app") as conn:  # the key registered is the one in the environment
        conn.execute("select memsub.set_context_signed(%s)", [token])
    assert "set_context_signing_key" in refused_log[0] and "set_context_signing_key" in done_log[0]
    for log in (refused_log[0], done_log[0]):
        assert key.hex() not in log


def test_no_documented_statement_writes_a_password():
    """``create role ... password '...'`` puts the password in the statement's text, which the server logs (when it
    fails, or under log_statement) and pg_stat_activity shows: the docs set passwords with psql's \\password, which
    sends the SCRAM verifier it computes."""
    root = Path(__file__).resolve().parents[2]
    written = [f"{path.relative_to(root)}:{number}: {line.strip()}"
               for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
               for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"\bpassword\s+'", line, flags=re.I)]
    assert written == []


def test_api_keys_reach_the_server_as_parameters_only(db):
    """The HTTP server's authentication of a good, an unknown and a revoked key: the failing statements are
    logged (log_min_error_statement) and, with log_statement = 'all' and log_parameter_max_length = 0, every
    one, all without the key. A pg_read_all_stats login reads the statement in pg_stat_activity, without the
    key."""
    with db.connect("tenant_admin") as admin:
        admin.execute("select memsub.set_context(%s, p_roles => array['tenant_admin'])",
                      ["aaaaaaaa-0000-0000-0000-000000000001"])
        good, revoked = (admin.execute("select api_key from memsub.create_api_key(%s)",
                                       ["aaaaaaaa-0000-0000-0000-000000000001"]).fetchone()[0] for _ in range(2))
        admin.execute("select memsub.revoke_api_key(substr(%s, 5, 16))", [revoked])
        admin.commit()
    unknown = good[:-8] + "00000000"
    watcher = f"memsub_test_stats_{uuid.uuid4().hex[:8]}"
    with db.connect(autocommit=True) as conn:
        conn.execute(sql.SQL("create role {} login in role pg_read_all_stats").format(sql.Identifier(watcher)))
    try:
        logs = []
        for setting in ("defaults", "everything but parameters", "everything"):
            if setting == "everything but parameters":
                _log_everything_but_parameters(db)
            if setting == "everything":
                with db.connect(autocommit=True) as conn:
                    conn.execute(sql.SQL("alter database {} reset log_parameter_max_length").format(
                        sql.Identifier(db.name)))
            with server_log(db) as log, db.connect("app") as request, \
                    psycopg.connect(db.server.dsn(db.name, watcher)) as stats:
                for key in (good, unknown, revoked):
                    try:
                        request.execute(AUTHENTICATE, [key])
                    except psycopg.errors.InvalidAuthorizationSpecification:
                        pass
                    shown = stats.execute("select query from pg_catalog.pg_stat_activity where pid = %s",
                                          [request.info.backend_pid]).fetchone()
                    assert shown is not None and "authenticate_api_key($1)" in shown[0] and key not in shown[0]
                    request.rollback()
            logs.append(log[0])
    finally:
        with db.connect(autocommit=True) as conn:
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(watcher)))
    quiet, everything_logged, with_parameters = logs
    assert quiet.count("authenticate_api_key($1)") == 2  # the unknown and the revoked key's statements
    assert everything_logged.count("authenticate_api_key($1)") >= 3
    for log in (quiet, everything_logged):
        for key in (good, unknown, revoked):
            assert key not in log
    # Why docs/security.md asks for log_parameter_max_length = 0: statement logging writes parameter values.
    assert all(key in with_parameters for key in (good, unknown, revoked))


def test_auto_explain_logs_no_secret_once_told_to_leave_parameters_out(db):
    """auto_explain with nested statements logs the parameters of memsub's SQL-language helpers too (the
    signing key, passed on to memsub._hmac_pads): auto_explain.log_parameter_max_length = 0 keeps them out, as
    docs/security.md says; PL/pgSQL statements (the API key inside authenticate_api_key) carry no values."""
    with db.connect(autocommit=True) as conn:
        for setting in ("session_preload_libraries = 'auto_explain'", "auto_explain.log_min_duration = 0",
                        "auto_explain.log_nested_statements = on", "auto_explain.log_parameter_max_length = 0"):
            conn.execute(sql.SQL("alter database {} set " + setting).format(sql.Identifier(db.name)))
    signing_key = secrets.token_bytes(32)
    with server_log(db) as log:
        with db.connect("tenant_admin") as admin:
            admin.execute("select memsub.set_context(%s, p_roles => array['tenant_admin'])",
                          ["aaaaaaaa-0000-0000-0000-000000000001"])
            row = admin.execute("select api_key from memsub.create_api_key(%s)",
                                ["aaaaaaaa-0000-0000-0000-000000000001"]).fetchone()
            admin.commit()
        assert row is not None
        with db.connect("app") as request:
            request.execute(AUTHENTICATE, [row[0]])
        with db.connect("platform_admin") as platform:
            platform.execute("select memsub.set_context_signing_key('gateway-1', %s)", [signing_key])
            platform.commit()
    assert "memsub._hmac_pads" in log[0] or "padded.key" in log[0]  # the nested statements were logged ...
    assert row[0] not in log[0] and signing_key.hex() not in log[0]  # ... without the secrets
