"""A thread's cursor never skips a packet: writes to one thread commit in write_seq order. A packet's write_seq is
drawn when it is written; a second writer of the thread waits for the first to commit before it draws one, so a
reader that has read past a packet has read every packet of the thread with a smaller write_seq
(docs/decisions.md, "Thread replay follows write order"). Interleaved deterministically on three connections of the
application login: a slow writer, a fast writer and a reader paging through the thread."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, set_context, started_call, write
from session_helpers import ground_truth, rows

FILLERS = 7  # with the packet, a batch of 8: the set-based path of write_packets


def _write_packet(conn: psycopg.Connection[Any], envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [write(conn, envelope) for envelope in envelopes]


def _write_packets(conn: psycopg.Connection[Any], envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return rows(conn, "select * from memsub.write_packets(%s::jsonb)", [json.dumps(envelopes)])


def _write_packets_set(conn: psycopg.Connection[Any], envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    fillers = [{"packet_type": "filler", "payload": f"{envelopes[0]['payload']} {n}"} for n in range(FILLERS)]
    return rows(conn, "select * from memsub.write_packets(%s::jsonb)", [json.dumps([*envelopes, *fillers])])


STORED = "select envelope ->> 'payload' as payload from memsub.packet_store where thread_id = %s order by write_seq"


def _opened(db: Any, *threads: uuid.UUID) -> None:
    """Each thread with a committed first packet: the writers below add to threads that exist."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for thread in threads:
            write(conn, _turn(thread, "opening"))
        conn.commit()


WRITERS: dict[str, Callable[[psycopg.Connection[Any], list[dict[str, Any]]], list[dict[str, Any]]]] = {
    "write_packet": _write_packet, "write_packets": _write_packets, "write_packets_set": _write_packets_set}


def _turn(thread: uuid.UUID | None, payload: str) -> dict[str, Any]:
    envelope: dict[str, Any] = {"packet_type": "event", "payload": payload}
    if thread is not None:
        envelope["thread_id"] = str(thread)
    return envelope


def _page(reader: psycopg.Connection[Any], thread: uuid.UUID, cursor: int | None) -> list[dict[str, Any]]:
    """One page of the thread after the cursor, read in a transaction of its own (as the HTTP API reads it)."""
    set_context(reader, TENANT_A)
    page = rows(reader, "select write_seq, envelope ->> 'payload' as payload from memsub.get_thread(%s, 100, %s)",
                [thread, cursor])
    reader.commit()
    return page


def _committed(db: Any, conn: psycopg.Connection[Any], path: str,
               envelopes: list[dict[str, Any]]) -> Callable[[], object]:
    def work() -> object:
        set_context(conn, TENANT_A)
        written = WRITERS[path](conn, envelopes)
        conn.commit()
        return written
    return work


@pytest.mark.parametrize("path", list(WRITERS))
def test_a_packet_committed_after_a_later_one_was_read_is_not_behind_the_cursor(db, path):
    """S is written first and stays uncommitted; F, written to the same thread after it, commits; a reader pages
    through the thread, then S commits and the reader reads the next page from its cursor. S was written first, so
    its write_seq is the smaller: were F committed and read first, S would lie behind the cursor and no page would
    ever return it. F's writer waits for S's instead, and the two pages hold S then F."""
    thread = uuid.uuid4()
    _opened(db, thread)
    with db.connect("app") as slow, db.connect("app") as fast, db.connect("app") as reader:
        set_context(slow, TENANT_A)
        WRITERS[path](slow, [_turn(thread, "slow")])
        call = started_call(db, fast, _committed(db, fast, path, [_turn(thread, "fast")]))
        try:
            first = _page(reader, thread, None)
            slow.commit()
        finally:
            slow.rollback()
            call.join()
        assert call.error is None, call.error
        second = _page(reader, thread, first[-1]["write_seq"])
    read = [r["payload"] for r in first + second]
    assert read == ["opening", "slow", "fast"], (first, second)
    assert ground_truth(db, STORED, [thread]) == [{"payload": p} for p in ("opening", "slow", "fast")]


@pytest.mark.parametrize("path", ["write_packets", "write_packets_set"])
def test_batches_spanning_two_threads_in_opposite_orders_wait_without_deadlock(db, path):
    """A batch writing threads A and B locks them in one fixed order whatever the order of its envelopes: a second
    batch writing B then A waits for the first to commit, neither deadlocks, and each thread replays in commit
    order."""
    a, b = uuid.uuid4(), uuid.uuid4()
    _opened(db, a, b)
    with db.connect("app") as first, db.connect("app") as second:
        set_context(first, TENANT_A)
        WRITERS[path](first, [_turn(a, "first a"), _turn(b, "first b")])
        call = started_call(db, second, _committed(db, second, path, [_turn(b, "second b"), _turn(a, "second a")]))
        try:
            waited = not call.done()
            first.commit()
        finally:
            first.rollback()
            call.join()
    assert call.error is None, call.error
    assert waited
    for thread, name in ((a, "a"), (b, "b")):
        assert ground_truth(db, STORED, [thread]) == [{"payload": p} for p in ("opening", f"first {name}",
                                                                                f"second {name}")]


@pytest.mark.parametrize("other", ["another thread", "no thread"])
@pytest.mark.parametrize("path", list(WRITERS))
def test_a_writer_of_another_thread_or_of_none_does_not_wait(db, path, other):
    """The lock is the thread's: a packet of another thread, or of none (no cursor pages through it), is written
    and committed while the first writer's transaction is still open."""
    mine, theirs = uuid.uuid4(), uuid.uuid4()
    _opened(db, mine, theirs)
    with db.connect("app") as slow, db.connect("app") as fast:
        set_context(slow, TENANT_A)
        WRITERS[path](slow, [_turn(mine, "slow")])
        thread = theirs if other == "another thread" else None
        call = started_call(db, fast, _committed(db, fast, path, [_turn(thread, "fast")]))
        try:
            done = call.done()
        finally:
            slow.rollback()
            call.join()
    assert call.error is None, call.error
    assert done


def test_the_write_order_sequence_hands_out_values_in_call_order(db):
    """The cursor's guarantee rests on write_seq's sequence having no per-session cache: with one, a session would
    draw a value from a block it took earlier, below values other sessions drew since, under the thread's lock."""
    with db.connect() as conn:
        cache = conn.execute("select seqcache from pg_catalog.pg_sequence where seqrelid = "
                             "pg_catalog.pg_get_serial_sequence('memsub.packet_store', 'write_seq')::regclass"
                             ).fetchone()
    assert cache == (1,)
