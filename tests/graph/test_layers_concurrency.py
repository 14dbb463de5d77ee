"""Concurrent reinforcement: parallel callers on one edge or one fact lose no update."""

from __future__ import annotations

import json

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
