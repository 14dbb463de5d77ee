"""Small helpers shared by the tests: tenant context, packet writes, row counts."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import psycopg

TENANT_A = uuid.UUID("aaaaaaaa-0000-0000-0000-000000000001")
TENANT_B = uuid.UUID("bbbbbbbb-0000-0000-0000-000000000002")
T = TypeVar("T")


def set_context(conn: psycopg.Connection[Any], tenant: uuid.UUID | None, org: uuid.UUID | None = None,
                user: uuid.UUID | None = None, roles: Sequence[str] = (), session: str | None = None) -> None:
    conn.execute("select memsub.set_context(%s, %s, %s, %s, %s)",
                 [tenant, org, user, list(roles), session])


def write(conn: psycopg.Connection[Any], envelope: dict[str, Any]) -> dict[str, Any]:
    """Call memsub.write_packet and return its result as a dict (decoded by column name)."""
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    row = cur.execute("select * from memsub.write_packet(%s::jsonb)", [json.dumps(envelope, default=str)]).fetchone()
    assert row is not None
    return row


def count(conn: psycopg.Connection[Any], table: str = "memsub.packet_store") -> int:
    row = conn.execute(f"select count(*) from {table}").fetchone()  # noqa: S608 - fixed table names
    assert row is not None
    return int(row[0])


def superuser_count(db: Any, table: str = "memsub.packet_store") -> int:
    """Row count as the superuser (bypasses row-level security): the ground truth of what is stored."""
    with db.connect() as conn:
        return count(conn, table)


def soak_factor() -> int:
    """``MEMSUB_SOAK_FACTOR`` (default 1): how many times longer the load, crash and fuzz tests run (``make soak``)."""
    value = os.environ.get("MEMSUB_SOAK_FACTOR", "1")
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"MEMSUB_SOAK_FACTOR must be a positive integer, not {value!r}")
    return int(value)


def in_parallel(db: Any, work: Callable[[psycopg.Connection[Any], int], T], workers: int,
                tenant: uuid.UUID = TENANT_A) -> list[T]:
    """Run work(conn, i) for i in range(workers), each in its own thread on its own application connection in
    `tenant`'s context, all released at once by a barrier; each commits. Returns the results in order of i and
    fails the test with every error raised."""
    barrier = threading.Barrier(workers)
    results: dict[int, T] = {}
    errors: list[str] = []

    def run(i: int) -> None:
        try:
            with db.connect("app") as conn:
                set_context(conn, tenant)
                barrier.wait(timeout=30)
                results[i] = work(conn, i)
                conn.commit()
        except BaseException as error:  # reported below
            errors.append(f"worker {i}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    return [results[i] for i in range(workers)]


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A temporary directory the embedded server's user can enter (mode 755), removed with everything in it on
    the way out, error or not: test runs leave no directories behind in the temp dir."""
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        directory.chmod(0o755)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
