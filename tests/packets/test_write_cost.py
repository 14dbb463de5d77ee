"""The cost of one write must not grow with the size of the tenant.

PL/pgSQL caches a generic plan for each statement of memsub._store_packet_envelope after a few calls. A
pooled connection that starts while packet_store is empty keeps that plan for its lifetime, so every
lookup the write path makes must be an index probe whatever the statistics said at planning time. The
tests count the packet_store tuples a write fetches (``pg_stat_get_xact_tuples_fetched``), not time.
"""

from __future__ import annotations

import functools
import json
import uuid
from typing import Any

import psycopg

from helpers import TENANT_A, calls_during, set_context, table_reads, track_function_calls, write


def fetched(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "select pg_stat_get_xact_tuples_fetched('memsub.packet_store'::regclass)"
        " + pg_stat_get_xact_blocks_hit('memsub.packet_store'::regclass)").fetchone()
    assert row is not None
    return int(row[0])


def grow_tenant(db: Any, packets: int) -> None:
    """Add packets to the tenant from another session (the first session's cached plans stay)."""
    envelopes = [{"packet_type": "event", "payload": {"n": n}, "thread_id": str(uuid.uuid4())}
                 for n in range(packets)]
    with db.connect("app") as other:
        set_context(other, TENANT_A)
        for start in range(0, len(envelopes), 500):  # within the max_batch_envelopes limit
            other.execute("select count(*) from memsub.write_packets(%s::jsonb)",
                          [json.dumps(envelopes[start:start + 500])])


def test_lookups_of_a_write_stay_index_probes_as_the_tenant_grows(db):
    def child(n: object) -> dict[str, Any]:
        # A named id makes a later write of the same envelope a retry (deduplicated by the primary key); the
        # odd ones state their time instead, so their retry is found by content_hash.
        identity: dict[str, Any] = {"packet_id": str(uuid.uuid5(root, str(n)))}
        if isinstance(n, int) and n % 2:
            identity = {"timestamp": f"2025-12-07T12:00:{n:02d}Z"}
        return {"packet_type": "insight", "payload": {"n": n}, **identity,
                "lineage": {"parent_ids": [str(root)], "derivation_type": "inference"}}

    with db.connect("app", autocommit=True) as conn:
        with conn.transaction():
            set_context(conn, TENANT_A)
            root = write(conn, {"packet_type": "event", "payload": {"text": "root"}})["packet_id"]
        # Enough writes (new and duplicate) while the table is nearly empty for plans to be cached.
        for n in range(12):
            with conn.transaction():
                set_context(conn, TENANT_A)
                write(conn, child(n))
                assert write(conn, child(n))["deduplicated"]
        grow_tenant(db, 3000)
        with conn.transaction():
            set_context(conn, TENANT_A)
            before = fetched(conn)
            result = write(conn, child("after growth"))
            new_cost = fetched(conn) - before
            before = fetched(conn)
            retry = write(conn, child(3))
            retry_cost = fetched(conn) - before
            before = fetched(conn)
            retry_by_id = write(conn, child(4))
            retry_by_id_cost = fetched(conn) - before
    assert result["generation"] == 1 and result["root_packet_id"] == root
    assert retry["deduplicated"] and retry["generation"] == 1
    assert retry_by_id["deduplicated"] and retry_by_id["generation"] == 1
    assert retry_by_id_cost < 100, f"a retry by packet_id touched {retry_by_id_cost} packet_store tuples and pages"
    # An index probe touches a handful of tuples and pages; a scan of the tenant touches thousands.
    assert new_cost < 100, f"a new packet with one parent touched {new_cost} packet_store tuples and pages"
    assert retry_cost < 100, f"a deduplicated write touched {retry_cost} packet_store tuples and pages"


def test_a_write_with_an_embedding_stays_index_probes_as_the_tenant_grows(db):
    """An embedding's foreign key checks its packet with a statement PostgreSQL also plans once and keeps: before
    packet_store's first ANALYZE it found the packet by its tenant alone (sql/980_planner_statistics.sql,
    tests/operations/test_plans_before_analyze.py)."""

    def embedded(n: int) -> dict[str, Any]:
        return {"packet_type": "note", "payload": {"n": n},
                "memory": {"embeddings": [{"embedding_type": "content", "vector": [1.0, float(n)] + [0.0] * 1534,
                                           "chunk_text": f"note {n}"}]}}

    with db.connect("app") as conn:
        # Enough writes while the table is nearly empty for the key check's plan to be kept.
        for n in range(10):
            set_context(conn, TENANT_A)
            write(conn, embedded(n))
            conn.commit()
        grow_tenant(db, 1000)
        costs = []
        for n in range(10, 15):
            set_context(conn, TENANT_A)
            before = table_reads(conn, "memsub.packet_store")
            write(conn, embedded(n))
            costs.append(table_reads(conn, "memsub.packet_store") - before)
            conn.commit()
    # A write reads a handful of packet_store tuples and pages; a scan of the tenant reads its 1,010 packets.
    assert max(costs) < 20, f"write_packet touched {costs} packet_store tuples and pages"


def test_unknown_parent_is_still_reported_first_in_order(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        known = write(conn, {"packet_type": "event", "payload": {"text": "known"}})["packet_id"]
        missing_first, missing_second = uuid.uuid4(), uuid.uuid4()
        try:
            write(conn, {"packet_type": "insight", "payload": {"text": "x"},
                         "lineage": {"parent_ids": [str(known), str(missing_first), str(missing_second)]}})
        except psycopg.errors.ForeignKeyViolation as error:
            assert str(missing_first) in str(error)
            assert error.diag.column_name == "lineage.parent_ids"
        else:
            raise AssertionError("a write with unknown parents was accepted")


def test_an_envelopes_embeddings_are_one_insert_whatever_their_number(db):
    # Each statement that adds chunk vectors runs the chunk-count trigger, and its update of the packet writes a
    # new packet row (with every index entry) whenever the chunk count rises: chunks written one statement each
    # rewrote the packet once per chunk. The packet's chunk count must come out the same.
    track_function_calls(db)

    def envelope(chunks: int) -> dict[str, Any]:
        embeddings = [{"embedding_type": "content", "vector": [1.0, float(n)] + [0.0] * 1534, "chunk_index": n,
                       "chunk_text": f"chunk {n}"} for n in range(chunks + 1)]
        return {"packet_type": "note", "payload": {"chunks": chunks, "n": str(uuid.uuid4())},
                "memory": {"embeddings": embeddings}}

    cost: dict[int, tuple[int, int]] = {}
    with db.connect("app") as conn:
        for chunks in (1, 6):
            set_context(conn, TENANT_A)
            before = conn.execute("select pg_stat_get_xact_tuples_updated('memsub.packet_store'::regclass)"
                                  ).fetchone()
            result, calls = calls_during(conn, functools.partial(write, conn, envelope(chunks)),
                                         ["_count_packet_chunks"])
            after = conn.execute("select pg_stat_get_xact_tuples_updated('memsub.packet_store'::regclass)"
                                 ).fetchone()
            assert before is not None and after is not None
            assert result["written"]["memory_embeddings"] == chunks + 1
            assert conn.execute("select chunk_count, is_chunked from memsub.packet_store where packet_id = %s",
                                [result["packet_id"]]).fetchone() == (chunks, True)
            conn.commit()
            cost[chunks] = (calls.get("_count_packet_chunks", 0), after[0] - before[0])
    assert cost == {1: (1, 1), 6: (1, 1)}, cost
