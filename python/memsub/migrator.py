"""Applies memsub's SQL to a database: versioned migrations once each, then the re-runnable objects.

Safety rules:
- one transaction per migration, its history row written first;
- a migration lock that only the owner of memsub.schema_history (or a superuser) can take: each transaction
  locks that table SHARE UPDATE EXCLUSIVE and re-reads the history, so two migrators never apply a migration
  twice or out of order; on a database without memsub yet, the session advisory lock ``MIGRATION_LOCK_KEY``
  guards the whole first install (a second migrator waits, then finds nothing to do);
- every lock wait is bounded (``lock_wait``, default 60 s): a wait that runs out names the sessions holding
  the lock instead of hanging;
- a lock a migration or sql/ needs on a table the applications use is waited for ``attempt_wait`` (2 s) at most
  at a time: the applications' calls that queue behind the waiting request then go on, and the transaction is
  tried again after a pause, until ``lock_wait`` runs out;
- a database migrated by newer code (a version this code does not ship) is refused;
- an applied migration whose file changed is drift: ``migrate`` refuses and ``verify`` names the file.

The same statements drive ``migrate`` and the script printed by ``memsub sql``, so both reach one end state.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row, tuple_row

from memsub import preflight, resources
from memsub.connection import RUN_TIMEOUTS, output_formats, refuse_on_standby
from memsub.errors import MigrationError, PreflightRefused, PrivilegeError
from memsub.schema_files import (
    DeclaredObject,
    Migration,
    Repeatable,
    Version,
    format_version,
    load_migrations,
    load_repeatables,
    parse_version,
)

T = TypeVar("T")

# pg_advisory_lock key with which memsub migrators (and printed scripts) create memsub.schema_history on a
# database without memsub: 'memsub' as bytes. Any login can take an advisory key, so it is only used until that
# table exists, with a bounded wait that names the holder.
MIGRATION_LOCK_KEY = 0x6D656D737562
# Seconds a migrator waits for any lock (its own migration lock, or a lock its DDL needs) before giving up.
DEFAULT_LOCK_WAIT = 60.0
# Seconds one attempt of a migration's (or sql/'s) transaction waits for a lock its DDL needs. While the request
# waits, every application call that needs the same table queues behind it: the migrator gives up the attempt
# (rolled back, the queue drains), pauses half as long, and tries again until lock_wait runs out.
DEFAULT_ATTEMPT_WAIT = 2.0
APPLICATION_NAME = "memsub migrate"
# The migrating session's search_path, whatever the database or the role sets: the migrations create the
# extensions where it points, and memsub's functions look for pgvector's type and operators in public.
SEARCH_PATH = "public"

# Each transaction of a printed script takes the lock a running ``migrate`` holds, so the two never interleave.
SCRIPT_TABLE_LOCK = "lock table memsub.schema_history in share update exclusive mode;"

_ADVISORY_HOLDERS = """\
select l.pid, a.usename, a.application_name
  from pg_catalog.pg_locks l left join pg_catalog.pg_stat_activity a on a.pid = l.pid
 where l.locktype = 'advisory' and l.granted and l.objsubid = 1
   and l.classid = %(classid)s::oid and l.objid = %(objid)s::oid
   and l.database = (select oid from pg_catalog.pg_database where datname = pg_catalog.current_database())
   and l.pid <> pg_catalog.pg_backend_pid()"""
# Timeouts a database, a role or the server's configuration sets for the applications' sessions, which would cancel
# a migration that rebuilds data partway: statement_timeout and transaction_timeout (PostgreSQL 17+), and
# idle_in_transaction_session_timeout, which ends the session between two statements of a migration's transaction,
# while the migrator prepares the next one. The migrator's session turns them off unless its own
# connection sets them (PGOPTIONS, options in the DSN); its waits are bounded by lock_timeout (``lock_wait``)
# instead.
_NO_RUN_TIMEOUTS = ("pg_catalog.set_config(name, '0', false) from pg_catalog.pg_settings "
                    f"where name in ({', '.join(repr(name) for name in RUN_TIMEOUTS)}) and source <> 'client'")
# Whether all the history tables named exist, read from the catalog: to_regclass would need USAGE on schema memsub.
_HISTORY_TABLES = ("select count(*) = cardinality(%(tables)s::text[]) as present from pg_catalog.pg_class c "
                   "where c.relnamespace = (select oid from pg_catalog.pg_namespace where nspname = 'memsub') "
                   "and c.relname = any(%(tables)s::text[])")
# The sessions a backend waits for (pg_blocking_pids), read from a second connection while an attempt runs: once
# the wait has timed out, the lock it was for is no longer known, and a session that merely queued behind the
# migrator meanwhile holds locks on memsub tables too.
_BLOCKERS = """\
select b.pid, a.usename, a.application_name, a.state,
       extract(epoch from pg_catalog.now() - a.xact_start)::integer as seconds
  from unnest(pg_catalog.pg_blocking_pids(%(pid)s)) as b(pid) left join pg_catalog.pg_stat_activity a on a.pid = b.pid
 order by 1"""
# How often that connection looks.
_BLOCKERS_EVERY = 0.2
_RELATION_HOLDERS = """\
select distinct l.pid, a.usename, a.application_name
  from pg_catalog.pg_locks l left join pg_catalog.pg_stat_activity a on a.pid = l.pid
 where l.locktype = 'relation' and l.granted
   and l.relation in (select c.oid from pg_catalog.pg_class c where c.relnamespace::regnamespace::text = 'memsub'
                      and (%(relation)s::text is null or c.relname = %(relation)s::text))
   and l.database = (select oid from pg_catalog.pg_database where datname = pg_catalog.current_database())
   and l.pid <> pg_catalog.pg_backend_pid()
 order by 1"""

HISTORY_DDL = """\
create schema if not exists memsub;
create table if not exists memsub.schema_history (
    version       text             primary key,
    version_order integer[]        generated always as (string_to_array(version, '.')::integer[]) stored,
    name          text             not null,
    sha256        text             not null,
    applied_at    timestamptz      not null default now(),
    duration_ms   double precision,
    applied_by    text             not null default current_user
);
comment on table memsub.schema_history is 'memsub migrations applied to this database, one row per version.';
comment on column memsub.schema_history.version is 'Semantic version of the migration file.';
comment on column memsub.schema_history.version_order is 'The version as an integer array, for ordering.';
comment on column memsub.schema_history.name is 'Description part of the migration file name.';
comment on column memsub.schema_history.sha256 is 'sha256 of the file as applied; a changed file is drift.';
comment on column memsub.schema_history.applied_at is 'When the migration transaction started.';
comment on column memsub.schema_history.duration_ms is 'How long the migration took.';
comment on column memsub.schema_history.applied_by is 'Database role that applied it.';
create table if not exists memsub.schema_repeatable_history (
    file_name   text             primary key,
    sha256      text             not null,
    applied_at  timestamptz      not null default now(),
    duration_ms double precision,
    applied_by  text             not null default current_user
);
comment on table memsub.schema_repeatable_history is 'memsub re-runnable SQL files (sql/) as last applied.';
comment on column memsub.schema_repeatable_history.file_name is 'File name in sql/.';
comment on column memsub.schema_repeatable_history.sha256 is 'sha256 of the file as last applied.';
comment on column memsub.schema_repeatable_history.applied_at is 'When it was last applied.';
comment on column memsub.schema_repeatable_history.duration_ms is 'How long applying it took.';
comment on column memsub.schema_repeatable_history.applied_by is 'Database role that applied it.';
"""


def _literal(value: str) -> str:
    """SQL string literal of a value the migrator writes itself (validated names and hashes, its own messages)."""
    return "'" + value.replace("'", "''") + "'"


def migration_statements(migration: Migration) -> list[str]:
    """Statements of one migration's transaction: history row first, then the file, then its duration."""
    version = _literal(migration.version_text)
    return [
        "insert into memsub.schema_history (version, name, sha256) "  # noqa: S608 - validated file names and hex digests
        f"values ({version}, {_literal(migration.name)}, {_literal(migration.sha256)})",
        migration.sql,
        "update memsub.schema_history "  # noqa: S608 - validated file names and hex digests
        "set duration_ms = extract(epoch from clock_timestamp() - applied_at) * 1000 "
        f"where version = {version}",
    ]


def repeatable_steps(repeatables: Sequence[Repeatable]) -> list[tuple[str, list[str]]]:
    """The statements that (re)apply every re-runnable file, in order, grouped by the file they apply (named
    ``sql/<file>``) and, last, the one that forgets files no longer shipped (named ``schema_repeatable_history``)."""
    steps: list[tuple[str, list[str]]] = []
    for item in repeatables:
        steps.append((f"sql/{item.name}", [
            # memsub.keep_probes: the transaction's probes of memsub._same_as_created keep one table per table
            "select pg_catalog.set_config('memsub.step_started', clock_timestamp()::text, true), "
            "pg_catalog.set_config('memsub.keep_probes', 'on', true)",
            item.sql,
            "insert into memsub.schema_repeatable_history (file_name, sha256, applied_at, duration_ms) "  # noqa: S608 - validated file names and hex digests
            f"values ({_literal(item.name)}, {_literal(item.sha256)}, clock_timestamp(), "
            "extract(epoch from clock_timestamp() "
            "- pg_catalog.current_setting('memsub.step_started')::timestamptz) * 1000) "
            "on conflict (file_name) do update set sha256 = excluded.sha256, applied_at = excluded.applied_at, "
            "duration_ms = excluded.duration_ms, applied_by = current_user",
        ]))
    names = ", ".join(_literal(item.name) for item in repeatables) or "''"
    steps.append(("schema_repeatable_history",
                  [f"delete from memsub.schema_repeatable_history where file_name not in ({names})"]))  # noqa: S608 - validated file names and hex digests
    return steps


def repeatable_statements(repeatables: Sequence[Repeatable]) -> list[str]:
    """Statements of the single transaction that (re)applies every re-runnable file, in order."""
    return [statement for _, statements in repeatable_steps(repeatables) for statement in statements]


@dataclass(frozen=True)
class AppliedMigration:
    version: Version
    name: str
    sha256: str
    applied_at: datetime
    duration_ms: float | None
    applied_by: str


@dataclass(frozen=True)
class StatusEntry:
    """State of one migration or re-runnable file: applied, pending, drifted, unknown, changed, missing."""

    kind: str  # migration | repeatable
    name: str
    state: str
    detail: str = ""
    applied_at: datetime | None = None


@dataclass
class MigrationReport:
    applied: list[str] = field(default_factory=list)
    repeatables_applied: bool = False
    dry_run: bool = False
    planned: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # What memsub's own SQL told the installer while it ran: server notices that begin with "memsub:" (others,
    # such as "does not exist, skipping" from DROP ... IF EXISTS, are PostgreSQL's and left out).
    notices: list[str] = field(default_factory=list)


class Migrator:
    """Migrates one database (given by a libpq connection string) with the SQL shipped in this package."""

    def __init__(self, conninfo: str, migrations_path: Path | None = None,
                 repeatables_path: Path | None = None, lock_wait: float = DEFAULT_LOCK_WAIT,
                 attempt_wait: float = DEFAULT_ATTEMPT_WAIT) -> None:
        if not lock_wait > 0:
            raise MigrationError("lock_wait must be a positive number of seconds")
        if not attempt_wait > 0:
            raise MigrationError("attempt_wait must be a positive number of seconds")
        self.conninfo = conninfo
        self.lock_wait = lock_wait
        self.attempt_wait = min(attempt_wait, lock_wait)
        self.migrations = load_migrations(migrations_path or resources.migrations_dir())
        self.repeatables = load_repeatables(repeatables_path or resources.repeatables_dir())
        if not self.migrations:
            raise MigrationError("no migration files found")

    @property
    def head(self) -> Version:
        return self.migrations[-1].version

    # -- reading the database ---------------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[dict[str, object]]:
        """An autocommit connection reading times, intervals and floats in memsub's formats (``OUTPUT_FORMATS``),
        whatever the database's or login's defaults."""
        conn = psycopg.connect(self.conninfo, autocommit=True, row_factory=dict_row)
        try:
            conn.execute(output_formats(local=False))
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect_bounded(self) -> psycopg.Connection[dict[str, object]]:
        """A connection whose every lock wait gives up after ``lock_wait`` seconds, with memsub's search_path, and
        without the statement and transaction timeouts its connection string did not set (``_NO_RUN_TIMEOUTS``)."""
        conn = self._connect()
        conn.execute("select pg_catalog.set_config('lock_timeout', %s, false), "
                     "pg_catalog.set_config('application_name', %s, false), "
                     "pg_catalog.set_config('search_path', %s, false)",
                     [f"{int(self.lock_wait * 1000)}ms", APPLICATION_NAME, SEARCH_PATH])
        conn.execute(f"select {_NO_RUN_TIMEOUTS}")
        return conn

    @staticmethod
    def _holders(conn: psycopg.Connection[Any], query: str, params: dict[str, object]) -> str:
        rows = conn.cursor(row_factory=dict_row).execute(query.encode(), params).fetchall()
        if not rows:
            return "no session holds it any more"
        return "held by " + ", ".join(
            f"pid {row['pid']} (role {row['usename'] or '?'}, application {row['application_name'] or '-'!r})"
            for row in rows)

    def _bootstrap_lock(self, conn: psycopg.Connection[dict[str, object]]) -> None:
        """The session advisory lock that guards a database without memsub.schema_history, waited for at most
        ``lock_wait``. Any login can take an advisory key, so a timeout names the holder."""
        try:
            conn.execute("select pg_catalog.pg_advisory_lock(%s)", [MIGRATION_LOCK_KEY])
        except psycopg.errors.LockNotAvailable:
            raise MigrationError(
                f"memsub's migration lock (advisory key {MIGRATION_LOCK_KEY}, used while memsub is not installed) "
                f"is not free after {self.lock_wait:g} s: "
                + self._holders(conn, _ADVISORY_HOLDERS, {"classid": MIGRATION_LOCK_KEY >> 32,
                                                          "objid": MIGRATION_LOCK_KEY & 0xFFFFFFFF})
                + "; if that session is not a memsub migrator, end it (pg_terminate_backend)") from None

    def lock_history(self, conn: psycopg.Connection[Any]) -> None:
        """The migration lock, for the rest of the current transaction: SHARE UPDATE EXCLUSIVE on
        memsub.schema_history. It conflicts with itself, not with reads and row writes, and only the table's
        owner or a superuser can take it: a login without privileges on the table can hold at most ACCESS
        SHARE (e.g. through pg_relation_size), which does not conflict."""
        exists = conn.cursor(row_factory=tuple_row).execute(
            _HISTORY_TABLES, {"tables": ["schema_history"]}).fetchone()
        if not (exists and exists[0]):
            return
        try:
            with conn.transaction():  # a savepoint: the holders are read in the same transaction on failure
                conn.execute("lock table memsub.schema_history in share update exclusive mode")
        except psycopg.errors.InsufficientPrivilege:
            row = conn.cursor(row_factory=tuple_row).execute(
                "select current_user, c.relowner::regrole::text from pg_catalog.pg_class c "
                "where c.relnamespace = (select oid from pg_catalog.pg_namespace where nspname = 'memsub') "
                "and c.relname = 'schema_history'").fetchone()
            user, owner = row if row else ("this role", "?")
            raise PrivilegeError(
                f"insufficient privilege: {user} may not take memsub's migration lock: memsub migrate runs as a "
                f"superuser or a member of {owner}, the owner of memsub.schema_history", sqlstate="42501") from None
        except psycopg.errors.LockNotAvailable:
            raise MigrationError(
                f"memsub's migration lock (memsub.schema_history) is not free after {self.lock_wait:g} s: "
                + self._holders(conn, _RELATION_HOLDERS, {"relation": "schema_history"})
                + " (another memsub migrate, or a session that locked the table)") from None

    def _lock_timeout_error(self, conn: psycopg.Connection[Any], what: str,
                            error: psycopg.Error, attempts: int = 1,
                            blockers: list[dict[str, Any]] | None = None) -> MigrationError:
        tries = f" ({attempts} attempts)" if attempts > 1 else ""
        said = f"{what}: a lock was not granted within {self.lock_wait:g} s{tries} ({error.diag.message_primary}); "
        if blockers:
            return MigrationError(said + "it waited for " + ", ".join(
                f"pid {row['pid']} (role {row['usename'] or '?'}, application {row['application_name'] or '-'!r}, "
                f"{row['state'] or '?'}, transaction open {row['seconds'] if row['seconds'] is not None else '?'} s)"
                for row in blockers))
        return MigrationError(said + "sessions holding locks on memsub tables: "
                              + self._holders(conn, _RELATION_HOLDERS, {"relation": None}))

    def _watch_blockers(self, pid: int, done: threading.Event, seen: list[list[dict[str, Any]]]) -> None:
        """Until ``done``, notes in ``seen`` (its one element) the sessions backend ``pid`` last waited for. It
        connects only once the attempt has run for a moment (most never wait)."""
        if done.wait(_BLOCKERS_EVERY):
            return
        try:
            with self._connect() as side:
                side.execute("select pg_catalog.set_config('application_name', %s, false)", [APPLICATION_NAME])
                while not done.wait(_BLOCKERS_EVERY):
                    rows = side.execute(_BLOCKERS, {"pid": pid}).fetchall()
                    if rows:
                        seen[0] = [dict(row) for row in rows]
        except psycopg.Error:
            return  # the error then names the holders of locks on memsub tables instead

    def in_attempts(self, conn: psycopg.Connection[Any], what: str,
                    work: Callable[[Callable[[], None]], T]) -> T:
        """Runs ``work`` until it is not refused a lock (``attempt_wait`` at most per attempt, a pause of half that
        between attempts), or ``lock_wait`` has passed: MigrationError naming the sessions holding locks. ``work``
        opens its transaction and takes the migration lock, then calls the function it is given, which bounds the
        lock waits of the rest of that transaction: ``attempt_wait``, or less when ``lock_wait`` ends sooner
        (transaction-local: the migration lock, taken before, waits ``lock_wait``). Returns what ``work``
        returns."""
        deadline = time.monotonic() + self.lock_wait

        def bound_locks() -> None:
            remaining = max(deadline - time.monotonic(), 0.001)
            conn.execute("select pg_catalog.set_config('lock_timeout', %s, true)",
                         [f"{max(int(min(self.attempt_wait, remaining) * 1000), 1)}ms"])

        attempts = 0
        while True:
            attempts += 1
            seen: list[list[dict[str, Any]]] = [[]]
            done = threading.Event()
            watcher = threading.Thread(target=self._watch_blockers, args=(conn.info.backend_pid, done, seen),
                                       daemon=True)
            watcher.start()
            try:
                return work(bound_locks)
            except psycopg.errors.LockNotAvailable as error:
                done.set()
                watcher.join()
                pause = self.attempt_wait / 2
                if time.monotonic() + pause >= deadline:
                    raise self._lock_timeout_error(conn, what, error, attempts, seen[0]) from None
                time.sleep(pause)
            finally:
                done.set()
                watcher.join()

    @staticmethod
    def _history_ready(conn: psycopg.Connection[dict[str, object]]) -> bool:
        row = conn.execute(_HISTORY_TABLES,
                           {"tables": ["schema_history", "schema_repeatable_history"]}).fetchone()
        return bool(row and row["present"])

    @staticmethod
    def _history_exists(conn: psycopg.Connection[dict[str, object]]) -> bool:
        row = conn.execute(_HISTORY_TABLES, {"tables": ["schema_history"]}).fetchone()
        return bool(row and row["present"])

    def _applied(self, conn: psycopg.Connection[dict[str, object]]) -> dict[Version, AppliedMigration]:
        if not self._history_exists(conn):
            return {}
        rows = conn.execute(
            "select version, name, sha256, applied_at, duration_ms, applied_by "
            "from memsub.schema_history order by version_order").fetchall()
        applied: dict[Version, AppliedMigration] = {}
        for row in rows:
            version = parse_version(str(row["version"]))
            applied[version] = AppliedMigration(
                version, str(row["name"]), str(row["sha256"]), row["applied_at"],  # type: ignore[arg-type]
                row["duration_ms"], str(row["applied_by"]))  # type: ignore[arg-type]
        return applied

    def _repeatable_history(self, conn: psycopg.Connection[dict[str, object]]) -> dict[str, str]:
        if not self._history_exists(conn):
            return {}
        rows = conn.execute("select file_name, sha256 from memsub.schema_repeatable_history").fetchall()
        return {str(row["file_name"]): str(row["sha256"]) for row in rows}

    def current_version(self) -> Version | None:
        with self._connect() as conn:
            applied = self._applied(conn)
        return max(applied) if applied else None

    def _check_history(self, applied: dict[Version, AppliedMigration]) -> list[str]:
        """Problems that make migrating unsafe: drift, unknown versions, a database newer than the code."""
        problems: list[str] = []
        known = {m.version: m for m in self.migrations}
        for version, row in applied.items():
            migration = known.get(version)
            if migration is None:
                if version > self.head:
                    problems.append(
                        f"database is at version {format_version(version)}, newer than this memsub "
                        f"(which ships up to {format_version(self.head)}); upgrade memsub first")
                else:
                    problems.append(f"applied migration {format_version(version)}__{row.name}.sql is not shipped")
            elif migration.sha256 != row.sha256:
                problems.append(
                    f"drift: migrations/{migration.path.name} changed after it was applied "
                    f"(recorded sha256 {row.sha256[:12]}, file {migration.sha256[:12]})")
        return problems

    def _missing_objects(self, conn: psycopg.Connection[dict[str, object]]) -> list[tuple[str, DeclaredObject]]:
        missing: list[tuple[str, DeclaredObject]] = []
        for item in self.repeatables:
            for obj in item.objects:
                if not _object_exists(conn, obj):
                    missing.append((item.name, obj))
        return missing

    def status(self) -> list[StatusEntry]:
        """Every shipped migration and re-runnable file, with its state in the database."""
        with self._connect() as conn:
            applied = self._applied(conn)
            recorded = self._repeatable_history(conn)
            missing = self._missing_objects(conn) if recorded else []
        entries: list[StatusEntry] = []
        for migration in self.migrations:
            row = applied.get(migration.version)
            label = migration.path.name
            if row is None:
                entries.append(StatusEntry("migration", label, "pending"))
            elif row.sha256 != migration.sha256:
                entries.append(StatusEntry("migration", label, "drifted", "file changed after it was applied",
                                           row.applied_at))
            else:
                entries.append(StatusEntry("migration", label, "applied", applied_at=row.applied_at))
        shipped = {m.version for m in self.migrations}
        for version, row in applied.items():
            if version not in shipped:
                entries.append(StatusEntry("migration", f"{format_version(version)}__{row.name}.sql", "unknown",
                                           "applied but not shipped by this memsub", row.applied_at))
        missing_by_file: dict[str, list[str]] = {}
        for file_name, obj in missing:
            missing_by_file.setdefault(file_name, []).append(obj.describe())
        for item in self.repeatables:
            if item.name not in recorded:
                entries.append(StatusEntry("repeatable", item.name, "pending"))
            elif recorded[item.name] != item.sha256:
                entries.append(StatusEntry("repeatable", item.name, "changed", "re-applied by the next migrate"))
            elif item.name in missing_by_file:
                entries.append(StatusEntry("repeatable", item.name, "missing",
                                           "; ".join(missing_by_file[item.name])))
            else:
                entries.append(StatusEntry("repeatable", item.name, "applied"))
        return entries

    def verify(self) -> list[str]:
        """Problems with the installed schema; empty when the database matches the shipped SQL exactly."""
        with self._connect() as conn:
            applied = self._applied(conn)
            problems = self._check_history(applied)
            recorded = self._repeatable_history(conn)
            for migration in self.migrations:
                if migration.version not in applied:
                    problems.append(f"pending: migrations/{migration.path.name} is not applied")
            for item in self.repeatables:
                if item.name not in recorded:
                    problems.append(f"pending: sql/{item.name} is not applied")
                elif recorded[item.name] != item.sha256:
                    problems.append(f"changed: sql/{item.name} differs from what was applied (run memsub migrate)")
            for file_name, obj in self._missing_objects(conn):
                problems.append(f"missing: {obj.describe()} declared in sql/{file_name} does not exist")
            creators = preflight.public_schema_creators(conn)
            if creators:
                names = ", ".join(creators)
                problems.append(
                    f"unsafe: schema public: {names} may create objects in it, and memsub's functions search it "
                    f"(for pgvector): what such a role plants there runs as memsub's owner (revoke create on "
                    f"schema public from {names.lower()})")
        return problems

    # -- changing the database --------------------------------------------------------------------------

    def _plan(self, applied: dict[Version, AppliedMigration], target: Version,
              allow_out_of_order: bool = False) -> list[Migration]:
        top = max(applied) if applied else None
        plan = [m for m in self.migrations if m.version not in applied and m.version <= target]
        late = [m for m in plan if top is not None and m.version < top]
        if late and not allow_out_of_order:
            names = ", ".join(m.path.name for m in late)
            raise MigrationError(
                f"{names}: older than the applied version {format_version(top) if top else ''} but never applied; "
                "out-of-order migrations are refused by default. If the database was created by a memsub whose "
                "history had these files later (their objects are missing), apply them with "
                "memsub migrate --allow-out-of-order (memsub verify then checks the result)")
        return plan

    def migrate(self, target: str | None = None, dry_run: bool = False,
                allow_out_of_order: bool = False) -> MigrationReport:
        """Apply pending migrations up to ``target`` (default: the newest), then the re-runnable objects
        when the database is at the newest version and any of them changed.

        Before the first change, the preflight (memsub.preflight) checks what the plan needs; a failed check
        raises PreflightRefused listing everything missing, and nothing is changed. ``allow_out_of_order``
        applies never-applied migrations older than the newest applied one (reported in ``out_of_order``)."""
        started = time.monotonic()
        target_version = self.shipped_version("--to", target) or self.head
        report = MigrationReport(dry_run=dry_run)
        with self._connect_bounded() as conn:
            refuse_on_standby(conn, "memsub migrate")
            conn.add_notice_handler(lambda notice: _keep_memsub_notice(notice, report.notices))
            _creator_may_set_role(conn)
            # A database without memsub: the bootstrap advisory lock, held for the whole run so that a second
            # migrator started at the same time waits and then finds nothing to do.
            bootstrapping = not self._history_ready(conn)
            if bootstrapping:
                self._bootstrap_lock(conn)
            try:
                if bootstrapping and not self._history_ready(conn):
                    # Nothing installed yet: check what installing needs before the first change.
                    plan = self._plan({}, target_version, allow_out_of_order)
                    missing = preflight.missing(conn, plan)
                    if missing:
                        raise PreflightRefused(missing)
                    if dry_run:
                        report.planned = [m.path.name for m in plan] + (
                            ["sql/*"] if target_version == self.head else [])
                        return report
                    with conn.transaction():
                        conn.execute(HISTORY_DDL)
                self._migrate_locked(conn, report, target_version, allow_out_of_order)
            finally:
                if bootstrapping:
                    conn.execute("select pg_catalog.pg_advisory_unlock(%s)", [MIGRATION_LOCK_KEY])
        report.seconds = time.monotonic() - started
        return report

    def _repeatables_due(self, conn: psycopg.Connection[dict[str, object]], plan: list[Migration],
                         target: Version) -> bool:
        if target != self.head:
            return False
        recorded = self._repeatable_history(conn)
        return (bool(plan)
                or any(recorded.get(r.name) != r.sha256 for r in self.repeatables)
                or set(recorded) != {r.name for r in self.repeatables}
                or bool(self._missing_objects(conn)))

    def _migrate_locked(self, conn: psycopg.Connection[dict[str, object]], report: MigrationReport,
                        target_version: Version, allow_out_of_order: bool) -> None:
        """Plans, then applies one transaction per migration and one for the re-runnable objects. Each
        transaction takes the migration lock (lock_history) and re-reads the history first: a migration a
        concurrent migrator applied meanwhile is skipped, never applied twice or out of order."""
        with conn.transaction():
            self.lock_history(conn)
            applied = self._applied(conn)
            problems = self._check_history(applied)
            if problems:
                raise MigrationError("; ".join(problems))
            if applied and max(applied) > target_version:
                raise MigrationError(
                    f"database is already at {format_version(max(applied))}, past --to "
                    f"{format_version(target_version)}; memsub does not migrate down")
            plan = self._plan(applied, target_version, allow_out_of_order)
            repeatables_due = self._repeatables_due(conn, plan, target_version)
            top = max(applied) if applied else None
            report.out_of_order = [m.path.name for m in plan if top is not None and m.version < top]
            if plan or repeatables_due:
                missing = preflight.missing(conn, plan)
                if missing:
                    raise PreflightRefused(missing)
        report.planned = [m.path.name for m in plan] + (["sql/*"] if repeatables_due else [])
        if report.dry_run:
            return
        grant_create, revoke_create = _owner_grant_statements(conn)
        for migration in plan:
            def apply_migration(bound_locks: Callable[[], None], migration: Migration = migration) -> bool:
                with conn.transaction():
                    self.lock_history(conn)
                    applied = self._applied(conn)
                    if migration.version in applied:
                        return False
                    problems = self._check_history(applied)
                    if problems:
                        raise MigrationError("; ".join(problems))
                    self._plan(applied, migration.version, allow_out_of_order)  # refuses out-of-order
                    bound_locks()
                    _run_naming_the_file(conn, f"migrations/{migration.path.name}",
                                         [grant_create, *migration_statements(migration), revoke_create])
                return True
            if self.in_attempts(conn, f"migrations/{migration.path.name}", apply_migration):
                report.applied.append(migration.path.name)
        if repeatables_due:
            def apply_repeatables(bound_locks: Callable[[], None]) -> bool:
                with conn.transaction():
                    self.lock_history(conn)
                    applied = self._applied(conn)
                    if applied and max(applied) != self.head:
                        raise MigrationError(f"database moved to {format_version(max(applied))} meanwhile")
                    if not self._repeatables_due(conn, [], target_version):
                        return False
                    bound_locks()
                    _run_naming_the_file(conn, "", [grant_create])
                    for name, statements in repeatable_steps(self.repeatables):
                        _run_naming_the_file(conn, name, statements)
                    _run_naming_the_file(conn, "", [revoke_create])
                return True
            if self.in_attempts(conn, "re-runnable objects (sql/)", apply_repeatables):
                report.repeatables_applied = True

    def shipped_version(self, option: str, text: str | None) -> Version | None:
        """The version an option (``--to``, ``--from``) names, None for none; MigrationError when it is no
        MAJOR.MINOR.PATCH or no shipped migration has it."""
        if not text:
            return None
        try:
            version = parse_version(text)
        except ValueError as error:
            raise MigrationError(f"{option} is {error}") from None
        if version not in {m.version for m in self.migrations}:
            raise MigrationError(f"{option} {format_version(version)}: no such migration is shipped")
        return version

    def script(self, from_version: str | None = None, to_version: str | None = None) -> str:
        """One SQL script, for ``psql -v ON_ERROR_STOP=1 -f``, taking a database from ``from_version`` (None:
        a database without memsub) to ``to_version`` (default: the newest) with the same end state as
        ``migrate``."""
        start = self.shipped_version("--from", from_version)
        end = self.shipped_version("--to", to_version) or self.head
        if start is not None and start > end:
            raise MigrationError("--from must not be newer than --to")
        steps = [m for m in self.migrations if (start is None or m.version > start) and m.version <= end]
        expected = _literal(format_version(start)) if start else "null"
        lines = [
            f"-- memsub migration script: {format_version(start) if start else 'empty database'} -> "
            f"{format_version(end)}",
            "-- Run with: psql -v ON_ERROR_STOP=1 -f this_file.sql",
            "\\set ON_ERROR_STOP on",
            # Entity names and document paths are matched in one Unicode composition (normalize()), which
            # PostgreSQL computes only in a UTF8 database: refused before anything changes, as the preflight does.
            "do $memsub_encoding$",
            "begin",
            "    if pg_catalog.current_setting('server_encoding') <> 'UTF8' then",
            "        raise exception 'memsub: the database encoding is %; %',",
            f"            pg_catalog.current_setting('server_encoding'), {_literal(preflight.UTF8_ADVICE)};",
            "    end if;",
            "end",
            "$memsub_encoding$;",
            # Lock waits are bounded; memsub not installed yet: the bootstrap advisory key, as migrate takes it.
            f"set lock_timeout = '{int(self.lock_wait * 1000)}ms';",
            f"set search_path = {SEARCH_PATH};",
            f"do $memsub_timeouts$ begin perform {_NO_RUN_TIMEOUTS}; end $memsub_timeouts$;",
            "do $memsub_lock$",
            "begin",
            "    if to_regclass('memsub.schema_history') is null",
            "       or to_regclass('memsub.schema_repeatable_history') is null then",
            f"        perform pg_advisory_lock({MIGRATION_LOCK_KEY});",
            "    end if;",
            "exception when lock_not_available then",
            "    raise exception 'memsub: the migration lock (advisory key %) is held by %', "
            f"{MIGRATION_LOCK_KEY},",
            "        (select string_agg(format('pid %s (role %s)', l.pid, a.usename), ', ')",
            "           from pg_locks l left join pg_stat_activity a on a.pid = l.pid",
            f"          where l.locktype = 'advisory' and l.granted and l.classid = {MIGRATION_LOCK_KEY >> 32}",
            f"            and l.objid = {MIGRATION_LOCK_KEY & 0xFFFFFFFF} and l.objsubid = 1);",
            "end",
            "$memsub_lock$;",
            HISTORY_DDL,
            "do $memsub_guard$",
            "declare",
            "    current_version text;",
            "begin",
            "    select version into current_version from memsub.schema_history",
            "     order by version_order desc limit 1;",
            f"    if current_version is distinct from {expected} then",
            "        raise exception 'memsub: this script expects the database at version %, it is at %',",
            f"            coalesce({expected}, 'none'), coalesce(current_version, 'none');",
            "    end if;",
            "end",
            "$memsub_guard$;",
        ]
        for migration in steps:
            lines += ["", f"-- migrations/{migration.path.name}", "begin;", SCRIPT_TABLE_LOCK]
            lines += [_terminated(s) for s in migration_statements(migration)]
            lines.append("commit;")
        if end == self.head:
            lines += ["", "-- re-runnable objects (sql/)", "begin;", SCRIPT_TABLE_LOCK]
            lines += [_terminated(s) for s in repeatable_statements(self.repeatables)]
            lines.append("commit;")
        lines += ["", "select pg_advisory_unlock_all();", ""]
        return "\n".join(lines)


def _run_naming_the_file(conn: psycopg.Connection[dict[str, object]], file: str, statements: Sequence[str]) -> None:
    """Runs the statements (an empty one is skipped); a failure other than a lock wait that ran out (which names
    its holders) carries the file it came from as a note, which ``memsub migrate`` puts before its one line."""
    try:
        for statement in statements:
            if statement:
                conn.execute(statement.encode())
    except psycopg.errors.LockNotAvailable:
        raise
    except psycopg.Error as error:
        if file:
            error.add_note(file)
        raise


def _keep_memsub_notice(notice: psycopg.errors.Diagnostic, notices: list[str]) -> None:
    """Keeps a server notice that memsub's SQL raised (its message begins with "memsub:")."""
    message = notice.message_primary or ""
    if message.startswith("memsub:"):
        notices.append(message)


def _creator_may_set_role(conn: psycopg.Connection[dict[str, object]]) -> None:
    """On PostgreSQL 16+, a non-superuser with CREATEROLE gets only ADMIN on a role it creates; memsub's files
    then make that role the owner of objects, which needs SET. This session grants its creator SET (and INHERIT)
    on the roles it creates, as a superuser would have implicitly."""
    row = conn.execute("select current_setting('server_version_num')::integer >= 160000 as modern").fetchone()
    if row and row["modern"]:
        conn.execute("select pg_catalog.set_config('createrole_self_grant', 'set, inherit', false)")


def _owner_grant_statements(conn: psycopg.Connection[dict[str, object]]) -> tuple[str, str]:
    """For a non-superuser installer: statements around each migration's transaction.

    PostgreSQL lets a non-superuser give an object to another role only when that role may CREATE in the
    object's schema; the migrations hand objects to memsub_view_owner and memsub_retrieval_owner, which never get
    CREATE on memsub. The migration transaction therefore grants CREATE on the schema to PUBLIC first and
    revokes it before committing: no other session ever sees the grant (catalog changes are transactional)."""
    row = conn.execute("select rolsuper from pg_catalog.pg_roles where rolname = current_user").fetchone()
    if row and row["rolsuper"]:
        return "", ""
    return ("grant create on schema memsub to public", "revoke create on schema memsub from public")


def _terminated(statement: str) -> str:
    text = statement.rstrip()
    return text if text.endswith(";") else text + ";"


_EXISTS_QUERIES = {
    "function": "select exists (select from pg_proc where pronamespace = 'memsub'::regnamespace "
                "and proname = %s and prokind = 'f') as present",
    "procedure": "select exists (select from pg_proc where pronamespace = 'memsub'::regnamespace "
                 "and proname = %s and prokind = 'p') as present",
    "view": "select exists (select from pg_class where relnamespace = 'memsub'::regnamespace "
            "and relname = %s and relkind = 'v') as present",
    "materialized view": "select exists (select from pg_class where relnamespace = 'memsub'::regnamespace "
                         "and relname = %s and relkind = 'm') as present",
    "trigger": "select exists (select from pg_trigger t join pg_class c on c.oid = t.tgrelid "
               "where c.relnamespace = 'memsub'::regnamespace and t.tgname = %s and c.relname = %s) as present",
    "policy": "select exists (select from pg_policies where schemaname = 'memsub' "
              "and policyname = %s and tablename = %s) as present",
}


def _object_exists(conn: psycopg.Connection[dict[str, object]], obj: DeclaredObject) -> bool:
    params: Iterable[str] = [obj.name] if obj.table is None else [obj.name, obj.table]
    row = conn.execute(_EXISTS_QUERIES[obj.kind], list(params)).fetchone()
    return bool(row and row["present"])
