"""Small helpers shared by the tests: tenant context, packet writes, row counts and table states, refused calls,
threads, the documentation's examples."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest
from psycopg import sql

TENANT_A = uuid.UUID("aaaaaaaa-0000-0000-0000-000000000001")
TENANT_B = uuid.UUID("bbbbbbbb-0000-0000-0000-000000000002")
T = TypeVar("T")
ERRORS_DOC = Path(__file__).resolve().parent.parent / "docs" / "errors.md"


def set_context(conn: psycopg.Connection[Any], tenant: uuid.UUID | None, org: uuid.UUID | None = None,
                user: uuid.UUID | None = None, roles: Sequence[str] = (), session: str | None = None) -> None:
    conn.execute("select memsub.set_context(%s, %s, %s, %s, %s)",
                 [tenant, org, user, list(roles), session])


def as_tenant_admin(db: Any, *statements: str, tenant: uuid.UUID = TENANT_A) -> None:
    """Run the statements as the tenant's administrator would (a memsub_tenant_admin login in a tenant_admin
    context: a scheduled maintenance run, say) and commit."""
    with db.connect("tenant_admin") as admin:
        set_context(admin, tenant, roles=["tenant_admin"])
        for statement in statements:
            admin.execute(statement)
        admin.commit()


@contextmanager
def graphs_built_after_load(conn: psycopg.Connection[Any], *tables: str) -> Iterator[None]:
    """Drops the HNSW indexes of the tables while a test loads them, and creates them again afterwards with the
    same definitions and comments: one build costs a fraction of an insert into the graph per row."""
    indexes = conn.execute(
        "select c.oid::regclass::text, pg_get_indexdef(c.oid), obj_description(c.oid, 'pg_class')"
        " from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam"
        " where a.amname = 'hnsw' and i.indrelid = any(%s::regclass[])", [list(tables)]).fetchall()
    for name, _, _ in indexes:
        conn.execute(sql.SQL("drop index {}").format(sql.SQL(name)))
    yield
    for name, definition, comment in indexes:
        conn.execute(sql.SQL(definition))
        conn.execute(sql.SQL("comment on index {} is {}").format(sql.SQL(name), sql.Literal(comment)))


def tenant_recall(app: psycopg.Connection[Any], judge: psycopg.Connection[Any], tenant: uuid.UUID,
                  vectors: Iterable[str], truth: Callable[[str], list[float]], search: str,
                  arguments: Callable[[str], Sequence[Any]], k: int, label: str) -> tuple[float, set[str]]:
    """Mean recall@k of one tenant's searches over the query vectors against the exact neighbours, and the methods
    that answered. ``truth`` returns the distances of the exact k nearest rows, ``search`` (distance, method) rows;
    every answer must hold k rows. A row counts as found when it is as near as the k-th nearest, as tune_search
    counts it (memsub._recall_with_ties, run on ``judge``, a connection that may execute it): of rows at one
    distance, any are right."""
    recalls: list[float] = []
    methods: set[str] = set()
    for vector in vectors:
        expected = truth(vector)
        with app.transaction():
            set_context(app, tenant)
            got = app.execute(search, arguments(vector)).fetchall()
        assert len(expected) == k
        assert len(got) == k, f"{label}: {len(got)} rows"
        methods |= {r[1] for r in got}
        row = judge.execute("select memsub._recall_with_ties(%s::double precision[], %s::double precision[])",
                            [[r[0] for r in got], expected]).fetchone()
        assert row is not None and row[0] is not None
        recalls.append(float(row[0]))
    return sum(recalls) / len(recalls), methods


def write(conn: psycopg.Connection[Any], envelope: dict[str, Any]) -> dict[str, Any]:
    """Call memsub.write_packet and return its result as a dict (decoded by column name)."""
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    row = cur.execute("select * from memsub.write_packet(%s::jsonb)", [json.dumps(envelope, default=str)]).fetchone()
    assert row is not None
    return row


def committed_note(conn: psycopg.Connection[Any], tenant: uuid.UUID, org: uuid.UUID, user: uuid.UUID) -> Any:
    """Writes and commits a note as ``user`` of ``org`` in ``tenant`` (a packet a summary can cite) and sets the
    context again for the next transaction; returns the packet's id."""
    set_context(conn, tenant, org, user)
    packet = write(conn, {"packet_type": "note", "payload": {"text": "the planner chose a seq scan"}})["packet_id"]
    conn.commit()
    set_context(conn, tenant, org, user)
    return packet


def table_reads(conn: psycopg.Connection[Any], table: str) -> int:
    """The tuples and pages of ``table`` the current transaction has read so far (its ``pg_stat_get_xact_*``
    counters: tuples fetched and returned, blocks hit and fetched). A test of what a call costs takes the
    difference before and after it: a count, not a time."""
    row = conn.execute(
        "select pg_stat_get_xact_tuples_fetched(%(t)s::regclass) + pg_stat_get_xact_tuples_returned(%(t)s::regclass)"
        " + pg_stat_get_xact_blocks_hit(%(t)s::regclass) + pg_stat_get_xact_blocks_fetched(%(t)s::regclass)",
        {"t": table}).fetchone()
    assert row is not None
    return int(row[0])


def count(conn: psycopg.Connection[Any], table: str = "memsub.packet_store") -> int:
    row = conn.execute(f"select count(*) from {table}").fetchone()  # noqa: S608 - fixed table names
    assert row is not None
    return int(row[0])


def superuser_count(db: Any, table: str = "memsub.packet_store") -> int:
    """Row count as the superuser (bypasses row-level security): the ground truth of what is stored."""
    with db.connect() as conn:
        return count(conn, table)


def track_function_calls(db: Any) -> None:
    """Count function calls in the test database from its next connection on (track_functions = 'all', which only
    the superuser may set): :func:`function_calls` then reads them as any login."""
    with db.connect() as admin:
        admin.execute(sql.SQL("alter database {} set track_functions = 'all'").format(sql.Identifier(db.name)))
        admin.commit()


def function_calls(conn: psycopg.Connection[Any], names: Iterable[str] | None = None) -> dict[str, int]:
    """The calls of these memsub functions (None: of every one) in the current transaction; one not called is
    absent."""
    found = conn.execute("select funcname, calls from pg_stat_xact_user_functions"
                         " where schemaname = 'memsub' and (%s::text[] is null or funcname = any(%s::text[]))",
                         [None if names is None else list(names)] * 2).fetchall()
    return {str(name): int(calls) for name, calls in found}


def calls_during(conn: psycopg.Connection[Any], operation: Callable[[], T],
                 names: Iterable[str] | None = None) -> tuple[T, dict[str, int]]:
    """What ``operation`` returns, and the calls it makes of these memsub functions (None: of every one), in the
    current transaction; a function it does not call is absent."""
    names = None if names is None else list(names)
    before = function_calls(conn, names)
    result = operation()
    after = function_calls(conn, names)
    return result, {name: after[name] - before.get(name, 0) for name in after if after[name] > before.get(name, 0)}


def soak_factor() -> int:
    """``MEMSUB_SOAK_FACTOR`` (default 1): how many times longer the load, crash and fuzz tests run (``make soak``)."""
    value = os.environ.get("MEMSUB_SOAK_FACTOR", "1")
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"MEMSUB_SOAK_FACTOR must be a positive integer, not {value!r}")
    return int(value)


def in_threads(work: Callable[[int], object], workers: int) -> None:
    """Run work(i) for i in range(workers), each in a thread of its own, and fail the test with every error raised."""
    errors: list[str] = []

    def run(i: int) -> None:
        try:
            work(i)
        except BaseException as error:  # reported below
            errors.append(f"worker {i}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []


def in_parallel(db: Any, work: Callable[[psycopg.Connection[Any], int], T], workers: int,
                tenant: uuid.UUID = TENANT_A) -> list[T]:
    """Run work(conn, i) for i in range(workers), each in its own thread on its own application connection in
    `tenant`'s context, all released at once by a barrier; each commits. Returns the results in order of i and
    fails the test with every error raised."""
    barrier = threading.Barrier(workers)
    results: dict[int, T] = {}

    def run(i: int) -> None:
        with db.connect("app") as conn:
            set_context(conn, tenant)
            barrier.wait(timeout=30)
            results[i] = work(conn, i)
            conn.commit()

    in_threads(run, workers)
    return [results[i] for i in range(workers)]


class Background:
    """One call running in a thread of its own, on a connection the caller opened: what it returned or raised."""

    def __init__(self, work: Callable[[], object]) -> None:
        self.result: object = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._work = work
        self._thread.start()

    def _run(self) -> None:
        try:
            self.result = self._work()
        except BaseException as error:  # kept for the test to inspect
            self.error = error

    def done(self) -> bool:
        return not self._thread.is_alive()

    def join(self, timeout: float = 30.0) -> Background:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the call never finished"
        return self


def wait_until_blocked(db: Any, pid: int, call: Background | None = None, timeout: float = 10.0) -> None:
    """Wait until the backend ``pid`` waits for a lock (another transaction holds what it needs); fail the test when
    it never does, or when ``call`` (what that backend runs) ends first. What makes an interleaving of two
    transactions deterministic: the second statement has reached the lock before the first transaction ends."""
    deadline = time.monotonic() + timeout
    with db.connect(autocommit=True) as observer:  # the superuser sees every backend's wait
        while time.monotonic() < deadline:
            found = observer.execute("select wait_event_type from pg_stat_activity where pid = %s", [pid]).fetchone()
            if found and found[0] == "Lock":
                return
            if call is not None and call.done():
                raise AssertionError(f"the call ended without waiting for a lock: {call.error or call.result!r}")
            time.sleep(0.02)
    raise AssertionError("the call never waited for a lock")


def started_call(db: Any, conn: psycopg.Connection[Any], work: Callable[[], object],
                 timeout: float = 10.0) -> Background:
    """Starts ``work`` (statements on ``conn``) in a thread and returns once it has either finished or waits for a
    lock: the test then ends the other transaction and joins the call, and asserts on the outcome whichever it
    was."""
    call = Background(work)
    deadline = time.monotonic() + timeout
    with db.connect(autocommit=True) as observer:
        while not call.done() and time.monotonic() < deadline:
            found = observer.execute("select wait_event_type from pg_stat_activity where pid = %s",
                                     [conn.info.backend_pid]).fetchone()
            if found and found[0] == "Lock":
                break
            time.sleep(0.02)
    return call


def blocked_call(db: Any, conn: psycopg.Connection[Any], work: Callable[[], object]) -> Background:
    """Starts ``work`` (statements on ``conn``) in a thread and returns once ``conn`` waits for a lock another open
    transaction holds; the test then ends that transaction and joins the call."""
    call = Background(work)
    wait_until_blocked(db, conn.info.backend_pid, call)
    return call


def after_commit(db: Any, holder: psycopg.Connection[Any], conn: psycopg.Connection[Any],
                 work: Callable[[], object]) -> Background:
    """Starts ``work`` (statements on ``conn``) until it waits for a lock ``holder``'s open transaction holds, then
    commits ``holder`` and returns the finished call, its transaction committed (rolled back when it raised)."""
    call = blocked_call(db, conn, work)
    holder.commit()
    call.join()
    (conn.rollback if call.error else conn.commit)()
    return call


def backend_state(db: Any, pid: int) -> str | None:
    """What pg_stat_activity says the backend ``pid`` is doing (None once it has ended)."""
    with db.connect(autocommit=True) as observer:
        row = observer.execute("select state from pg_stat_activity where pid = %s", [pid]).fetchone()
    return None if row is None else str(row[0])


def until_ended(db: Any, pid: int, timeout: float = 10.0) -> None:
    """Wait until the server has ended the backend ``pid``; fail the test when it never does."""
    deadline = time.monotonic() + timeout
    while backend_state(db, pid) is not None:
        assert time.monotonic() < deadline, f"the server never ended backend {pid} ({backend_state(db, pid)})"
        time.sleep(0.02)


def terminate_backend(db: Any, pid: int) -> None:
    """End the backend ``pid`` as a restart or an administrator would (``pg_terminate_backend``), and wait until it
    has ended."""
    with db.connect(autocommit=True) as admin:
        admin.execute("select pg_terminate_backend(%s)", [pid])
    until_ended(db, pid)


def wait_until_one_waits_for_a_lock(db: Any, what: str, timeout: float = 20.0) -> None:
    """Wait until one backend of the test database waits for a lock (a call of a server under test, whose backend
    the test does not know, reached the lock the test holds); fail naming ``what`` when none does in time."""
    deadline = time.monotonic() + timeout
    with db.connect(autocommit=True) as observer:
        while time.monotonic() < deadline:
            if observer.execute("select count(*) from pg_stat_activity where datname = %s "
                                "and wait_event_type = 'Lock'", [db.name]).fetchone() == (1,):
                return
            time.sleep(0.02)
    raise AssertionError(f"{what} never waited for the lock")


def wait_until(conn: psycopg.Connection[Any], moment: datetime) -> None:
    """Wait (outside any transaction) until the server's clock has passed moment (a packet's ttl, say)."""
    conn.commit()
    while conn.execute("select clock_timestamp() <= %s", [moment]).fetchone()[0]:
        conn.rollback()
        time.sleep(0.2)
    conn.rollback()


def table_state(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    """Every memsub table's row count and content hash: equal before and after a call that changed nothing."""
    tables = [r[0] for r in conn.execute("select relname from pg_class where relnamespace = 'memsub'::regnamespace "
                                         "and relkind = 'r' order by 1")]
    parts = [sql.SQL("select {}, count(*), coalesce(sum(hashtext(t::text)), 0) from {} t").format(
        sql.Literal(name), sql.Identifier("memsub", name)) for name in tables]
    return conn.execute(sql.SQL(" union all ").join(parts)).fetchall()


def assert_refused(conn: psycopg.Connection[Any], calls: Iterable[tuple[str, str]],
                   error: type[psycopg.Error] = psycopg.errors.InvalidParameterValue) -> None:
    """Each (SQL call, field): the call, in a savepoint of its own, raises ``error`` naming the field in the column
    diagnostic."""
    for call, field in calls:
        try:
            with conn.transaction():
                conn.execute(call)
        except error as raised:
            assert raised.diag.column_name == field, call
        else:
            raise AssertionError(f"{call} was accepted")


def expect_error(
    conn: psycopg.Connection[Any], sqlstate: str, column: str | None, query: str, params: Sequence[Any] = ()
) -> psycopg.Error:
    """Run a statement that must fail with this SQLSTATE and column diagnostic; roll back; return it."""
    with pytest.raises(psycopg.Error) as info:
        conn.execute(query.encode(), list(params))
    conn.rollback()
    assert info.value.sqlstate == sqlstate, info.value
    assert info.value.diag.column_name == column, info.value
    return info.value


def run_doc_example(heading: str, dsn: str) -> None:
    """Runs the first Python example after ``## heading`` in docs/integrations.md as written, with ``dsn`` bound."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "integrations.md").read_text()
    example = re.search(r"```python\n(.*?)```", doc.split(f"## {heading}", 1)[1], flags=re.S)
    assert example is not None
    exec(compile(example.group(1), "docs/integrations.md", "exec", dont_inherit=True), {"dsn": dsn})


def documented_sqlstates() -> set[str]:
    """Every SQLSTATE in a table row of docs/errors.md: what the fuzz tests accept from a failed call."""
    return set(re.findall(r"^\| `([0-9A-Z]{5})` \|", ERRORS_DOC.read_text(encoding="utf-8"), flags=re.M))


SHARED_MEMORY = Path("/dev/shm")
SHARED_MEMORY_FREE = 4 * 1024**3  # bytes /dev/shm must have free for the test clusters to go there


def scratch_root() -> Path | None:
    """Where the test clusters' directories go: ``MEMSUB_TEST_SCRATCH`` when set (it must be a directory);
    otherwise /dev/shm (memory on Linux) when it is a writable directory with at least 4 GiB free, because every
    test clones the template database, and a clone (the files of 673 relations) took 0.35-0.5 s on an ext4 disk
    against 0.06 s in memory; otherwise None: the system's temp dir. ``pytest`` (without ``-q``) prints the
    choice in its header (docs/development.md, "Tests")."""
    chosen = os.environ.get("MEMSUB_TEST_SCRATCH")
    if chosen:
        if not Path(chosen).is_dir():
            raise RuntimeError(f"MEMSUB_TEST_SCRATCH={chosen!r} is not a directory")
        return Path(chosen)
    if (SHARED_MEMORY.is_dir() and os.access(SHARED_MEMORY, os.W_OK | os.X_OK)
            and shutil.disk_usage(SHARED_MEMORY).free >= SHARED_MEMORY_FREE):
        return SHARED_MEMORY
    return None


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A temporary directory the embedded server's user can enter (mode 755), in :func:`scratch_root`, removed
    with everything in it on the way out, error or not: test runs leave no directories behind."""
    directory = Path(tempfile.mkdtemp(prefix=prefix, dir=scratch_root()))
    try:
        directory.chmod(0o755)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def refused_dsn() -> str:
    """A TCP port on localhost where nothing listens (bound, never listening): whatever connects there fails."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"postgresql://nobody@127.0.0.1:{port}/memsub"


SESSION_STATE = """
select pg_catalog.jsonb_build_object(
  'protocol_prepared', (select count(*) from pg_catalog.pg_prepared_statements where not from_sql),
  'sql_prepared', (select coalesce(pg_catalog.array_agg(name order by name), '{}')
                     from pg_catalog.pg_prepared_statements where from_sql),
  'session_settings', (select coalesce(pg_catalog.array_agg(name order by name), '{}')
                         from pg_catalog.pg_settings where source = 'session'),
  'timezone', pg_catalog.current_setting('TimeZone'),
  'advisory_locks', (select count(*) from pg_catalog.pg_locks
                      where locktype = 'advisory' and pid = pg_catalog.pg_backend_pid()),
  'listening', (select count(*) from pg_catalog.pg_listening_channels()),
  'cursors', (select count(*) from pg_catalog.pg_cursors),
  'temporary_relations', (select count(*) from pg_catalog.pg_class
                           where relnamespace = pg_catalog.pg_my_temp_schema())) as state
"""
"""What a server session holds beyond a transaction, read on that session: the statements psycopg prepared
(``protocol_prepared``) and those prepared by SQL, settings changed for the session, advisory locks, LISTEN
channels, open cursors and temporary relations. A transaction-mode pooler hands the next client's transaction to
the same server session, or the client's next transaction to another one; none of it may matter then."""

NOTHING_HELD = {"protocol_prepared": 0, "session_settings": [], "advisory_locks": 0, "listening": 0, "cursors": 0,
                "temporary_relations": 0}
"""The part of SESSION_STATE a caller behind a transaction-mode pooler must leave empty."""


def session_state(row: Any) -> dict[str, Any]:
    """The state of SESSION_STATE's row (a tuple or a dict row)."""
    state = row["state"] if isinstance(row, dict) else row[0]
    assert isinstance(state, dict)
    return state


def held(state: dict[str, Any]) -> dict[str, Any]:
    """The part of a session_state that NOTHING_HELD describes."""
    return {name: state[name] for name in NOTHING_HELD}
