"""Packet writes racing each other or the purge of expired packets, interleaved deterministically on two
connections of the application login: a child whose parent is being purged is either refused (its parent is
gone: 23503, lineage.parent_ids) or stored with the parent's tombstone in place; two batches stating one
packet_id store it once and the second is told so (docs/errors.md, docs/decisions.md)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memsub.errors import ConflictError, contract_of, from_database_error

from helpers import TENANT_A, blocked_call, set_context, started_call, superuser_count, wait_until, write
from session_helpers import ground_truth, rows

FILLERS = 7  # with the child, a batch of 8: the set-based path of write_packets


def _write_packet(conn: psycopg.Connection[Any], envelope: dict[str, Any]) -> list[dict[str, Any]]:
    return [write(conn, envelope)]


def _write_packets(conn: psycopg.Connection[Any], envelope: dict[str, Any]) -> list[dict[str, Any]]:
    return rows(conn, "select * from memsub.write_packets(%s::jsonb)", [json.dumps([envelope])])[:1]


def _write_packets_set(conn: psycopg.Connection[Any], envelope: dict[str, Any]) -> list[dict[str, Any]]:
    fillers = [{"packet_type": "filler", "payload": f"{envelope['payload']} {n}"} for n in range(FILLERS)]
    return rows(conn, "select * from memsub.write_packets(%s::jsonb)", [json.dumps([envelope, *fillers])])[:1]


WRITERS: dict[str, Callable[[psycopg.Connection[Any], dict[str, Any]], list[dict[str, Any]]]] = {
    "write_packet": _write_packet, "write_packets": _write_packets, "write_packets_set": _write_packets_set}


# A child written while its parent is purged --------------------------------------------------------------------

def _expiring_parent(db: Any) -> tuple[uuid.UUID, datetime]:
    ttl = datetime.now(UTC) + timedelta(seconds=1.5)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        parent = write(conn, {"packet_type": "observation", "payload": "raw", "ttl": ttl.isoformat()})
        conn.commit()
    return parent["packet_id"], ttl


def _child(parent: uuid.UUID) -> dict[str, Any]:
    return {"packet_type": "insight", "payload": "derived", "lineage": {"parent_ids": [str(parent)]}}


def _stored_child_and_tombstone(db: Any, parent: uuid.UUID) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    children = ground_truth(db, "select parent_ids from memsub.packet_store where packet_type = 'insight'")
    tombstones = ground_truth(db, "select packet_id from memsub.packet_tombstones where packet_id = %s", [parent])
    return children, tombstones


@pytest.mark.parametrize("path", list(WRITERS))
def test_a_child_written_after_its_parent_was_purged_is_refused(db, path):
    """The writer's transaction began while the parent was live (its now() before the ttl), so the parent would
    be visible; the purge commits before the write reads it: the parent is gone, refused as a missing parent."""
    parent, ttl = _expiring_parent(db)
    with db.connect("app") as writer, db.connect("app") as purger:
        set_context(writer, TENANT_A)  # the writer's transaction, begun before the ttl
        wait_until(purger, ttl)
        set_context(purger, TENANT_A)
        assert purger.execute("select * from memsub.purge_expired()").fetchall() == [(TENANT_A, 1)]
        purger.commit()
        with pytest.raises(psycopg.errors.ForeignKeyViolation) as refused:
            WRITERS[path](writer, _child(parent))
        writer.rollback()
    assert refused.value.diag.column_name == "lineage.parent_ids"
    children, tombstones = _stored_child_and_tombstone(db, parent)
    assert children == [] and tombstones == [{"packet_id": parent}]


@pytest.mark.parametrize("path", list(WRITERS))
@pytest.mark.parametrize("child_first", [False, True], ids=["purge_first", "child_first"])
def test_a_child_written_while_its_parent_is_purged_keeps_the_tombstone(db, path, child_first):
    """The purge has deleted the parent but not committed (or the child is written but not committed when the
    purge runs): neither waits for the other, the child is stored with its parent, and the parent's tombstone is
    there once both commit. Its lineage reaches the purged parent."""
    parent, ttl = _expiring_parent(db)
    with db.connect("app") as writer, db.connect("app") as purger:
        set_context(writer, TENANT_A)  # the writer's transaction, begun before the ttl
        wait_until(purger, ttl)
        set_context(purger, TENANT_A)
        purge = "select * from memsub.purge_expired()"
        if child_first:
            WRITERS[path](writer, _child(parent))
            call = started_call(db, purger, lambda: purger.execute(purge).fetchall())
        else:
            assert purger.execute(purge).fetchall() == [(TENANT_A, 1)]
            call = started_call(db, writer, lambda: WRITERS[path](writer, _child(parent)))
        waited = not call.done()
        (writer if child_first else purger).commit()
        call.join()
        assert call.error is None, call.error
        assert not waited
        purger.commit()
        writer.commit()
        set_context(writer, TENANT_A)
        child = writer.execute("select packet_id from memsub.packet_store where packet_type = 'insight'").fetchone()
        assert child is not None
        lineage = writer.execute("select packet_id, state from memsub.get_lineage(%s)", [child[0]]).fetchall()
    assert lineage == [(parent, "purged")]
    children, tombstones = _stored_child_and_tombstone(db, parent)
    assert children == [{"parent_ids": [parent]}] and tombstones == [{"packet_id": parent}]


# Two batches stating one packet_id -------------------------------------------------------------------------------

def _stated(packet_id: uuid.UUID, payload: str) -> dict[str, Any]:
    return {"packet_id": str(packet_id), "packet_type": "event", "payload": payload,
            "timestamp": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize("path", ["write_packets", "write_packets_set", "write_packet"])
def test_two_transactions_stating_one_packet_id_store_it_once(db, path):
    """The second waits for the first; once it commits, the second's packet is the stored one again: a retry,
    reported deduplicated, nothing stored twice."""
    packet_id = uuid.uuid4()
    with db.connect("app") as first, db.connect("app") as second:
        for conn in (first, second):
            set_context(conn, TENANT_A)
        assert WRITERS[path](first, _stated(packet_id, "turn"))[0]["deduplicated"] is False
        call = started_call(db, second, lambda: WRITERS[path](second, _stated(packet_id, "turn")))
        waited = not call.done()
        first.commit()
        call.join()
        second.commit()
    assert call.error is None, call.error
    assert waited
    assert isinstance(call.result, list) and call.result[0]["packet_id"] == packet_id
    assert call.result[0]["deduplicated"] is True
    assert ground_truth(db, "select count(*) from memsub.packet_store where packet_id = %s", [packet_id]) == [
        {"count": 1}]


@pytest.mark.parametrize("path", ["write_packets", "write_packets_set", "write_packet"])
def test_a_concurrent_packet_id_with_other_content_is_refused_by_name(db, path):
    """The same id with other content, written while the first is uncommitted: once the first commits, the
    second is refused as a stated id naming other content (23505, column packet_id), never with the unique
    index's own error, and writes nothing."""
    packet_id = uuid.uuid4()
    with db.connect("app") as first, db.connect("app") as second:
        for conn in (first, second):
            set_context(conn, TENANT_A)
        WRITERS[path](first, _stated(packet_id, "turn"))
        call = started_call(db, second, lambda: WRITERS[path](second, _stated(packet_id, "another turn")))
        first.commit()
        call.join()
        second.rollback()
    error = call.error
    assert isinstance(error, psycopg.errors.UniqueViolation), error
    assert error.diag.column_name == "packet_id" and "other content" in str(error)
    assert ground_truth(db, "select envelope -> 'payload' as payload from memsub.packet_store "
                            "where packet_id = %s", [packet_id]) == [{"payload": "turn"}]
    assert superuser_count(db) == 1 + (FILLERS if path == "write_packets_set" else 0)


def test_two_batches_stating_two_ids_in_opposite_orders_deadlock_into_a_retryable_conflict(db):
    """Batches written envelope by envelope store their packets in batch order: one holding a while it waits for
    b, the other holding b while it waits for a, wait for each other, and PostgreSQL aborts one (40P01). That one
    is a conflict to retry (ConflictError; HTTP 503 with Retry-After), as a lock held past lock_timeout is, not a
    server error; its retry deduplicates, and each packet is stored once. The first batch is held between a and b
    by a third transaction's uncommitted packet x, which makes the interleaving deterministic."""
    a, b, x = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    batch = "select packet_id, deduplicated from memsub.write_packets(%s::jsonb)"
    ab = json.dumps([_stated(a, "a"), _stated(x, "x"), _stated(b, "b")])
    ba = json.dumps([_stated(b, "b"), _stated(a, "a")])
    with db.connect("app") as holder, db.connect("app") as first, db.connect("app") as second:
        for conn in (holder, first, second):
            set_context(conn, TENANT_A)
        rows(holder, batch, [json.dumps([_stated(x, "x")])])
        one = blocked_call(db, first, lambda: rows(first, batch, [ab]))  # a stored, waits for x
        other = blocked_call(db, second, lambda: rows(second, batch, [ba]))  # b stored, waits for a
        holder.commit()  # the first goes on to b: each waits for the other
        one.join()
        other.join()
        failed = [(conn, call, text) for conn, call, text in ((first, one, ab), (second, other, ba)) if call.error]
        assert len(failed) == 1, (one.error, other.error)
        conn, call, text = failed[0]
        error = call.error
        assert isinstance(error, psycopg.errors.DeadlockDetected), error
        assert isinstance(from_database_error(error), ConflictError)
        contract = contract_of(error.sqlstate)
        assert contract is not None and contract.status == 503
        for each in (first, second):
            (each.rollback if each is conn else each.commit)()
        set_context(conn, TENANT_A)
        retried = rows(conn, batch, [text])
        conn.commit()
    assert {r["packet_id"] for r in retried if r["deduplicated"]} >= {a, b}
    assert ground_truth(db, "select count(*) from memsub.packet_store where packet_id = any(%s)", [[a, b, x]]) == [
        {"count": 3}]
