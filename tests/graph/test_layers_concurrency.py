"""Concurrent reinforcement: parallel callers on one edge or one fact lose no update."""

from __future__ import annotations

import json

import pytest

from helpers import in_parallel

WORKERS = 12


def test_parallel_upserts_of_one_edge_count_every_mention(db):
    in_parallel(db, lambda conn, i: conn.execute(
        "select memsub.upsert_relationship('L9', 'uses', 'Neo4j', 0.5)"), WORKERS)
    with db.connect() as conn:
        rows = conn.execute("select mention_count, confidence from memsub.entity_relationships").fetchall()
    assert len(rows) == 1
    mention_count, confidence = rows[0]
    assert mention_count == WORKERS
    assert abs(confidence - (1 - 0.5 ** WORKERS)) < 1e-9


def test_parallel_assertions_of_one_fact_make_one_row_with_every_support(db):
    in_parallel(db, lambda conn, i: conn.execute(
        "select memsub.assert_fact(%s, 'Uses', %s::jsonb, 0.5)",
        ["  l9 " if i % 2 else "L9", json.dumps("NEO4J" if i % 3 else "neo4j")]), WORKERS)
    with db.connect() as conn:
        rows = conn.execute("select supporting_packet_count, contradiction_count, subject_normalized, "
                            "object_normalized, predicate from memsub.knowledge_facts").fetchall()
    assert rows == [(WORKERS, 0, "l9", "neo4j", "uses")]


def test_parallel_contradicting_assertions_are_all_counted(db):
    # K different objects for one subject and predicate: whatever the order, each fact is contradicted by the
    # K - 1 others exactly once.
    in_parallel(db, lambda conn, i: conn.execute(
        "select memsub.assert_fact('L9', 'version', %s::jsonb, 0.7)", [json.dumps(i)]), WORKERS)
    with db.connect() as conn:
        counts = [r[0] for r in conn.execute("select contradiction_count from memsub.knowledge_facts")]
    assert sorted(counts) == [WORKERS - 1] * WORKERS


@pytest.mark.parametrize("constraint", ["immediate", "deferred"])
def test_an_observation_waiting_on_a_close_opens_a_window_after_it(db, constraint):
    """An upsert whose transaction began before another transaction closed the edge's window, and which waits on
    that close, opens a new window once the close commits, starting where the closed one ends, instead of failing
    with the exclusion constraint's raw 23P01 (its observation time is earlier than the close). In a transaction
    that deferred the constraint the overlapping window was accepted and the COMMIT failed with that raw 23P01,
    naming no field and losing the transaction's writes: the upsert looks for the overlap itself."""
    import threading
    import time

    from helpers import TENANT_A, set_context

    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.upsert_relationship('A', 'r', 'B')")
        conn.commit()
    outcome: dict[str, object] = {}
    began, closed = threading.Event(), threading.Event()

    def observe() -> None:
        with db.connect("app") as conn:
            set_context(conn, TENANT_A)  # its transaction, and its now(), begin here
            conn.execute(f"set constraints all {constraint}")
            began.set()
            closed.wait(10)
            try:
                outcome["edge"] = conn.execute("select lower(valid_period) from memsub.upsert_relationship("
                                               "'A', 'r', 'B')").fetchone()
                conn.commit()
            except Exception as error:  # any failure, reported by the assertion below
                outcome["error"] = error

    worker = threading.Thread(target=observe)
    worker.start()
    began.wait(10)
    time.sleep(0.05)
    with db.connect("app") as closer:
        set_context(closer, TENANT_A)
        closer.execute("select memsub.close_relationship('A', 'r', 'B')")
        closed.set()
        time.sleep(0.5)  # the upsert waits on the open window's index entry
        closed_at = closer.execute("select upper(valid_period) from memsub.entity_relationships").fetchone()
        closer.commit()
    worker.join()
    assert "error" not in outcome, outcome
    with db.connect() as conn:
        windows = [tuple(r) for r in conn.execute(
            "select lower(valid_period), upper(valid_period) from memsub.entity_relationships order by 1")]
    assert len(windows) == 2 and windows[1][1] is None
    assert closed_at is not None and windows[1][0] >= closed_at[0]
