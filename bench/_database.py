"""Servers and scratch databases for the benchmarks: a private embedded cluster, or ``MEMSUB_BENCH_DSN``."""

from __future__ import annotations

import os
import platform
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import tuple_row

from memsub import embedded
from memsub.migrator import Migrator

APP_ROLE = "memsub_bench_app"


@contextmanager
def private_cluster() -> Iterator[str]:
    """A new embedded cluster in a temporary directory, removed afterwards; yields its superuser URL.

    ``MEMSUB_BENCH_SETTINGS`` (``name=value,name=value``) applies server settings with ALTER SYSTEM and restarts
    the cluster, for settings such as shared_buffers; every benchmark prints what it ran with."""
    settings = server_settings(os.environ.get("MEMSUB_BENCH_SETTINGS", ""))
    data_dir = Path(tempfile.mkdtemp(prefix="memsub-bench-")) / "pgdata"
    data_dir.parent.chmod(0o755)  # the server runs as an unprivileged system user when we are root
    try:
        url = embedded.start(data_dir)
        if settings:
            with psycopg.connect(url, autocommit=True) as conn:
                for setting, value in settings:
                    conn.execute(sql.SQL("alter system set {} = {}").format(sql.Identifier(setting),
                                                                            sql.Literal(value)))
            embedded.stop(data_dir)
            url = embedded.start(data_dir)
        yield url
    finally:
        embedded.stop(data_dir)
        shutil.rmtree(data_dir.parent, ignore_errors=True)


@contextmanager
def bench_database(vector_dimension: int | None = None) -> Iterator[tuple[str, str]]:
    """Yield (superuser DSN, application-role DSN) of a freshly migrated database on ``MEMSUB_BENCH_DSN``
    (a superuser connection string) or on a private cluster; the database is dropped afterwards.

    ``vector_dimension`` migrates a database of that embedding dimension (``memsub.vector_dimension``), e.g. 384.
    """
    with ExitStack() as stack:
        base = os.environ.get("MEMSUB_BENCH_DSN") or stack.enter_context(private_cluster())
        name = f"memsub_bench_{uuid.uuid4().hex[:8]}"
        try:
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f'create database "{name}"')
            dsn = make_conninfo(base, dbname=name)
            Migrator(make_conninfo(dsn, options=f"-c memsub.vector_dimension={vector_dimension}")
                     if vector_dimension else dsn).migrate()
            yield dsn, trusted_app_login(dsn)
        finally:
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f'drop database if exists "{name}" with (force)')


CPU_SECONDS = 1e-9  # /proc/<pid>/schedstat counts nanoseconds


def backend_cpu(conn: psycopg.Connection[Any]) -> Callable[[], float] | None:
    """A reader of the CPU seconds the connection's server process has used, or None when that process is
    not on this machine (or /proc is not there)."""
    with conn.cursor(row_factory=tuple_row) as cursor:
        row = cursor.execute("select pg_backend_pid()").fetchone()
    path = f"/proc/{row[0]}/schedstat" if row else ""
    try:
        with open(path) as stat:
            stat.read()
    except OSError:
        return None

    def read() -> float:
        with open(path) as stat:
            return int(stat.read().split()[0]) * CPU_SECONDS
    return read


def leaves(relation: str) -> str:
    """SQL of the tables holding the rows of ``relation`` (an SQL expression of a regclass): its partitions when
    it is partitioned (its parent holds none: memsub.memory_embeddings is partitioned by tenant), else itself
    (pg_partition_tree lists nothing for a table that is not partitioned)."""
    return (f"(select t.relid from pg_partition_tree({relation}) t where t.isleaf"  # noqa: S608 - SQL, no values
            f" union all select ({relation})::regclass where not exists (select from pg_partition_tree({relation})))")


TABLE_AND_INDEX_BYTES = (
    "select coalesce(sum(pg_table_size(l.relid)), 0), coalesce(sum(pg_indexes_size(l.relid)), 0) "  # noqa: S608
    f"from {leaves('%(table)s::regclass')} l(relid)")
"""Bytes of a table (heap, TOAST, maps) and of its indexes, summed over its partitions when it is partitioned;
the parameter is ``{"table": name}``."""


def create_like(conn: psycopg.Connection[Any], target: str, source: str, including: str) -> None:
    """``create table target (like source including ...)``, partitioned as ``source`` is (the same key and the
    same partition bounds, partitions named ``<target>_<suffix of the source's>``), so a baseline table has
    memsub's layout as well as its indexes."""
    key = conn.execute("select pg_get_partkeydef(%s::regclass)", [source]).fetchone()
    partition_by = sql.SQL(" partition by {}").format(sql.SQL(key[0])) if key and key[0] else sql.SQL("")
    conn.execute(sql.SQL("create table {} (like {} {}){}").format(
        sql.SQL(target), sql.SQL(source), sql.SQL(including), partition_by))
    parts = conn.execute(
        "select c.relname, pg_get_expr(c.relpartbound, c.oid) from pg_inherits h join pg_class c on c.oid = h.inhrelid "
        "where h.inhparent = %s::regclass order by c.relname", [source]).fetchall()
    stem = source.split(".")[-1]
    for name, bound in parts:
        conn.execute(sql.SQL("create table {} partition of {} {}").format(
            sql.SQL(target + str(name)[len(stem):]), sql.SQL(target), sql.SQL(bound)))


def trusted_app_login(dsn: str) -> str:
    """The benchmarks' application login (a member of memsub_app, created once per server), trusted for every
    tenant of the database at ``dsn`` (a superuser conninfo), as a single trusted application is; its conninfo."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not conn.execute("select 1 from pg_roles where rolname = %s", [APP_ROLE]).fetchone():
            conn.execute(sql.SQL("create role {} login").format(sql.Identifier(APP_ROLE)))
        conn.execute(sql.SQL("grant memsub_app to {}").format(sql.Identifier(APP_ROLE)))
        conn.execute("select memsub.trust_login(%s)", [APP_ROLE])
    return make_conninfo(dsn, user=APP_ROLE)


def peer_login(superuser: str, role: str, schema: str, search_path: Sequence[str]) -> str:
    """A login role owning a schema of its own, for a peer library's tables; the conninfo of that login."""
    with psycopg.connect(superuser, autocommit=True) as conn:
        login = sql.Identifier(role)
        # Private throwaway server with local trust authentication: the role needs no password. On a server
        # given by MEMSUB_BENCH_DSN it may be left from an earlier run (roles outlive the dropped database).
        if not conn.execute("select 1 from pg_roles where rolname = %s", [role]).fetchone():
            conn.execute(sql.SQL("create role {} login").format(login))
        conn.execute(sql.SQL("create schema {} authorization {}").format(sql.Identifier(schema), login))
        conn.execute(sql.SQL("alter role {} set search_path = {}").format(
            login, sql.SQL(", ").join(map(sql.Identifier, search_path))))
    return make_conninfo(superuser, user=role)


def server_settings(text: str) -> list[tuple[str, str]]:
    """``name=value,name=value`` as pairs; a malformed item is refused before any server starts."""
    pairs = [tuple(part.strip() for part in item.split("=", 1)) for item in text.split(",") if item.strip()]
    if any(len(pair) != 2 or not pair[0] or not pair[1] for pair in pairs):
        raise ValueError(f"MEMSUB_BENCH_SETTINGS must be name=value,name=value, not {text!r}")
    return [(pair[0], pair[1]) for pair in pairs]


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


SETTINGS = ("server_version", "shared_buffers", "work_mem", "maintenance_work_mem", "effective_cache_size",
            "synchronous_commit", "fsync", "full_page_writes", "wal_level", "max_wal_size", "checkpoint_timeout",
            "max_parallel_workers_per_gather", "jit", "data_checksums")


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or what the platform module knows."""
    try:
        found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
    except OSError:
        found = None
    return found.group(1).strip() if found else (platform.processor() or platform.machine())


def memory_bytes() -> int:
    """Total RAM from /proc/meminfo (0 where there is none)."""
    try:
        found = re.search(r"^MemTotal:\s*(\d+)", Path("/proc/meminfo").read_text(), re.MULTILINE)
    except OSError:
        found = None
    return int(found.group(1)) * 1024 if found else 0


def environment(dsn: str) -> dict[str, object]:
    """Machine (cpu, cores, RAM, load) and server settings as a dict, recorded with every result."""
    cpu, memory = cpu_model(), memory_bytes()
    with psycopg.connect(dsn) as conn:
        settings = {name: str(value) for name, value in conn.execute(
            "select name, current_setting(name) from pg_settings where name = any(%s)", [list(SETTINGS)])}
        vector = conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()
    settings["pgvector"] = str(vector[0]) if vector else "?"
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gib": round(memory / 2**30, 1),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "os": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "postgres": settings}


def environment_line(env: dict[str, object]) -> str:
    """One printable paragraph of environment()."""
    pg = env["postgres"]
    assert isinstance(pg, dict)
    return (f"machine: {env['cpu']}, {env['cores']} cores, {env['ram_gib']} GiB RAM, load {env['load_average_1m']}"
            f" at start, {env['os']}\nserver:  PostgreSQL {pg.get('server_version')}, pgvector {pg.get('pgvector')}; "
            + ", ".join(f"{k} {v}" for k, v in pg.items() if k not in ("server_version", "pgvector")))
