"""write_packets stores a batch exactly as write_packet stores its envelopes one by one, and all or nothing.

A batch is written set-based when it can be; what that path declines or fails on goes envelope by envelope. Either
way the stored rows, the results and the errors are those of write_packet.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from helpers import TENANT_A, TENANT_B, calls_during, count, set_context, track_function_calls
from layer_helpers import DIMENSION

ORG = uuid.UUID("0a000000-0000-4000-8000-000000000001")


def batch(size: int = 60, seed: int = 3) -> list[dict[str, Any]]:
    """Envelopes of three threads; parents in the batch and before their children; tags, ttl, embeddings,
    confidence, unknown fields and envelopes without packet_id or timestamp."""
    rng = random.Random(seed)
    threads = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(3)]
    envelopes: list[dict[str, Any]] = []
    for n in range(size):
        envelope: dict[str, Any] = {"packet_type": rng.choice(["event", "insight"]),
                                    "payload": {"turn": n, "text": f"turn {n}"}, "thread_id": threads[n % 3],
                                    "tags": rng.sample(["a", "b", "c", "a"], rng.randint(0, 4))}
        if n % 5:
            envelope["packet_id"] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            envelope["timestamp"] = f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.{n:06d}+02:00"
        named = [e["packet_id"] for e in envelopes if "packet_id" in e]
        if named and n % 3 == 0:
            envelope["lineage"] = {"parent_ids": rng.sample(named, min(2, len(named))),
                                   "derivation_type": "inference", "note": "kept"}
        if n % 4 == 0:
            envelope["memory"] = {"embeddings": [
                {"embedding_type": "content", "vector": [rng.randint(-512, 512) / 512 or 1.0 for _ in range(DIMENSION)],
                 "chunk_text": f"turn {n}", "metadata": {"n": n}}]}
        if n % 7 == 0:
            envelope["ttl"] = "2099-01-01T00:00:00Z"
            envelope["confidence"] = {"score": 0.25}
            envelope["future_field"] = {"x": n}
        envelopes.append(envelope)
    return envelopes


ROWS = {
    "memsub.packet_store": "select to_jsonb(s) - 'tenant_id' - 'write_seq' - 'packet_id' - 'envelope' "
                           "- 'content_hash' - 'timestamp' - 'parent_ids' - 'last_accessed' "
                           "from memsub.packet_store s order by s.write_seq",
    "memsub.memory_embeddings": "select to_jsonb(e) - 'tenant_id' - 'embedding_id' - 'created_at' - 'packet_id' "
                                "from memsub.memory_embeddings e order by e.chunk_text",
    "memsub.packet_threads": "select t.thread_id from memsub.packet_threads t order by 1",
}


def stored(conn: psycopg.Connection[Any]) -> dict[str, list[Any]]:
    return {table: [row[0] for row in conn.execute(query)] for table, query in ROWS.items()}


CALLS = ("select coalesce(pg_stat_get_xact_function_calls("
         "'memsub._write_packets_set(jsonb, vector[], integer[])'::regprocedure), 0), "
         "coalesce(pg_stat_get_xact_function_calls("
         "'memsub._store_packet_envelope(jsonb, integer, vector[])'::regprocedure), 0)")


def test_a_batch_is_stored_as_its_envelopes_one_by_one(db):
    envelopes = batch()
    with db.connect(autocommit=True) as admin:  # count function calls, to see which path wrote the batch
        admin.execute(f"alter database {db.name} set track_functions = 'pl'")
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG)
        cur = conn.cursor(row_factory=dict_row)
        one_by_one = [cur.execute("select * from memsub.write_packet(%s::jsonb)", [json.dumps(e)]).fetchone()
                      for e in envelopes]
        rows_one = stored(conn)
        envelopes_one = [r[0] for r in conn.execute("select envelope - 'packet_id' - 'timestamp' - 'lineage' "
                                                    "from memsub.packet_store order by write_seq")]
        conn.commit()
        set_context(conn, TENANT_B, ORG)
        before = conn.execute(CALLS).fetchone()
        batched = cur.execute("select * from memsub.write_packets(%s::jsonb)", [json.dumps(envelopes)]).fetchall()
        after = conn.execute(CALLS).fetchone()
        assert before is not None and after is not None
        assert (after[0] - before[0], after[1] - before[1]) == (1, 0)  # set-based, in one go
        rows_batch = stored(conn)
        envelopes_batch = [r[0] for r in conn.execute("select envelope - 'packet_id' - 'timestamp' - 'lineage' "
                                                      "from memsub.packet_store order by write_seq")]
    assert len(batched) == len(one_by_one) == len(envelopes)
    # Generated ids and the database's clock differ between the two writes; everything else is the same.
    def comparable(row: dict[str, Any], generated: bool) -> dict[str, Any]:
        kept = {k: v for k, v in row.items() if k != "position"}
        if generated:
            for name in ("packet_id", "timestamp", "root_packet_id", "content_hash"):
                kept.pop(name)
        return kept
    for envelope, a, b in zip(envelopes, one_by_one, batched, strict=True):
        generated = "packet_id" not in envelope
        assert a is not None and comparable(a, generated) == comparable(b, generated)
    assert rows_one == rows_batch
    assert envelopes_one == envelopes_batch
    assert rows_one["memsub.memory_embeddings"] and rows_one["memsub.packet_threads"]


@pytest.mark.parametrize(("field", "value", "sqlstate", "column"), [
    ("timestamp", "2026-02-30T00:00:00Z", "22007", "timestamp"),
    ("tags", ["ok", " "], "22023", "tags"),
    ("tags", ["ok", "\t"], "22023", "tags"),
    ("packet_type", "\t\n", "22023", "packet_type"),
    ("timestamp", "9999-12-31T23:59:59-14:00", "22008", "timestamp"),
    ("ttl", "9999-12-31T20:00:00-05:00", "22008", "ttl"),
    # Offsets of 16 hours or more: ISO 8601 spells them, PostgreSQL holds none.
    ("timestamp", "2026-01-01T00:00:00+16:00", "22008", "timestamp"),
    ("ttl", "2099-01-01T00:00:00-23", "22008", "ttl"),
    ("packet_type", "\u00a0", "22023", "packet_type"),
    ("tags", ["ok", "\u202f"], "22023", "tags"),
    ("lineage", {"parent_ids": [str(uuid.UUID(int=7))]}, "23503", "lineage.parent_ids"),
    ("memory", {"embeddings": [{"embedding_type": "content", "vector": [1.0, 2.0]}]},
     "22023", "memory.embeddings[0].vector"),
    ("tenant_id", str(TENANT_B), "22023", "tenant_id"),
    # What the set-based path reads with plain expressions, refused as the envelope-by-envelope readers refuse it.
    *[("memory", {"embeddings": [{"embedding_type": "content", "vector": [0.5] * DIMENSION, **element}]},
       sqlstate, column) for element, sqlstate, column in [
        ({"vector": [0.0] * DIMENSION}, "22023", "memory.embeddings[0].vector"),
        ({"vector": ["0.5"] * DIMENSION}, "22023", "memory.embeddings[0].vector"),
        ({"vector": None}, "22023", "memory.embeddings[0].vector"),
        ({"vector": []}, "22023", "memory.embeddings[0].vector"),
        ({"chunk_index": -1}, "22023", "memory.embeddings[0].chunk_index"),
        ({"chunk_index": "first"}, "22P02", "memory.embeddings[0]"),
        ({"embedding_type": "colour"}, "22023", "memory.embeddings[0].embedding_type"),
        ({"embedding_type": None}, "23502", "memory.embeddings[0].embedding_type"),
        ({"metadata": None}, "22023", "memory.embeddings[0].metadata"),
        ({"metadata": ["a"]}, "22023", "memory.embeddings[0].metadata"),
    ]],
])
def test_one_bad_envelope_fails_the_batch_naming_it_and_writes_nothing(db, field, value, sqlstate, column):
    envelopes = batch(40)
    envelopes[36][field] = value
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG)
        with pytest.raises(psycopg.Error) as caught:
            conn.execute("select * from memsub.write_packets(%s::jsonb)", [json.dumps(envelopes)])
        assert caught.value.sqlstate == sqlstate
        assert caught.value.diag.column_name == column
        assert "envelope 37 of the batch" in str(caught.value)
        conn.rollback()
        set_context(conn, TENANT_A, ORG)
        for table in ROWS:
            assert count(conn, table) == 0, table


@pytest.mark.parametrize("size", [7, 8])
def test_an_expired_parent_in_the_batch_is_refused_as_one_by_one(db, size):
    """An expired packet cannot become a parent: neither a stored one nor one written earlier in the same batch,
    whichever path writes the batch (from 8 envelopes the set-based one)."""
    parent = str(uuid.uuid4())
    envelopes = [{"packet_id": parent, "packet_type": "event", "payload": {"p": 1},
                  "timestamp": "2020-01-01T00:00:00Z", "ttl": "2020-01-02T00:00:00Z"},
                 {"packet_type": "event", "payload": {"c": 1}, "lineage": {"parent_ids": [parent]}},
                 *[{"packet_type": "event", "payload": {"n": n}} for n in range(size - 2)]]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG)
        with pytest.raises(psycopg.errors.ForeignKeyViolation) as caught:
            conn.execute("select * from memsub.write_packets(%s::jsonb)", [json.dumps(envelopes)])
        assert caught.value.diag.column_name == "lineage.parent_ids"
        assert "envelope 2 of the batch" in str(caught.value)
        conn.rollback()
        set_context(conn, TENANT_A, ORG)
        # A batch whose parent expires in the future is written.
        envelopes[0]["ttl"] = "2099-01-01T00:00:00Z"
        rows = conn.execute("select generation from memsub.write_packets(%s::jsonb)", [json.dumps(envelopes)])
        assert [r[0] for r in rows][:2] == [0, 1]


def test_a_tiny_importance_is_stored_as_one_by_one(db):
    """JSON numbers below double precision's range are 0 on both paths; those within it are kept on both."""
    scores = [1e-305, 1e-307, 1e-308, 5e-324, 1e-400, 0.5]
    envelopes = [{"packet_type": "event", "payload": {"n": n}, "importance_score": score}
                 for n, score in enumerate(scores)]
    envelopes += [{"packet_type": "event", "payload": {"n": n}} for n in range(len(scores), 8)]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG)
        for envelope in envelopes:
            conn.execute("select memsub.write_packet(%s::jsonb)", [json.dumps(envelope)])
        one = [r[0] for r in conn.execute("select importance_score from memsub.packet_store order by write_seq")]
        conn.commit()
        set_context(conn, TENANT_B, ORG)
        conn.execute("select memsub.write_packets(%s::jsonb)", [json.dumps(envelopes)])
        batched = [r[0] for r in conn.execute("select importance_score from memsub.packet_store order by write_seq")]
    assert batched == one
    assert batched[0] == 1e-305


def embedded_batch(size: int, seed: int = 5) -> list[dict[str, Any]]:
    """Envelopes of one thread, each with two chunk embeddings (chunk text, metadata, chunk_index 1 and 2)."""
    rng = random.Random(seed)
    thread = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return [{"packet_type": "event", "payload": {"turn": n}, "thread_id": thread,
             "memory": {"embeddings": [
                 {"embedding_type": "content", "chunk_index": chunk, "chunk_text": f"turn {n} part {chunk}",
                  "metadata": {"part": chunk},
                  "vector": [rng.randint(-512, 512) / 512 or 1.0 for _ in range(DIMENSION)]}
                 for chunk in (1, 2)]}} for n in range(size)]


def test_the_set_based_path_calls_no_function_per_embedding(db):
    """The set-based path read each embedding through the field readers of the envelope-by-envelope path: about
    ten function calls per element (the vector's reader with its subtransaction, its dimension read again, the
    limits read again, the chunk number twice). It now reads them with plain expressions: what the readers would
    refuse fails a cast or a constraint, and the batch goes envelope by envelope, which names it."""
    track_function_calls(db)
    calls = {}
    with db.connect("app") as conn:
        for size in (10, 40):
            set_context(conn, TENANT_A, ORG)
            batch = json.dumps(embedded_batch(size, seed=size))
            written, calls[size] = calls_during(conn, lambda batch=batch: conn.execute(
                "select count(*) from memsub.write_packets(%s::jsonb)", [batch]).fetchone())
            assert written == (size,)
            # set-based, in one go: not declined, nor failed and written envelope by envelope
            assert calls[size]["_write_packets_set"] == 1 and "_store_packet_envelope" not in calls[size], calls
            conn.commit()
        set_context(conn, TENANT_A, ORG)
        assert count(conn, "memsub.memory_embeddings") == 2 * (10 + 40)
    # 30 more envelopes, 60 more embeddings: what grows, grows with the envelopes (their content hash, ...).
    grown = {name: calls[40].get(name, 0) - calls[10].get(name, 0) for name in calls[40]}
    assert {name: more for name, more in grown.items() if more > 30} == {}, grown
