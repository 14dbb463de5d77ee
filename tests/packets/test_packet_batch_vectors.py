"""A batch's vectors given as vector values: memsub.write_packets(envelopes, vectors).

``p_vectors`` holds the vectors of every envelope's ``memory.embeddings``, envelope by envelope, each envelope's
in the order of its elements, the envelopes holding JSON null (or nothing) in their place: what write_packet's
``p_vectors`` is for one envelope. The set-based path (eight envelopes or more) and the envelope-by-envelope path
store the same packets as with the vectors inside the envelopes; a count that does not match is refused naming
``vectors``, and an envelope's own error names the envelope, with nothing written. The Python client sends a
batch so when every vector in it is a list of numbers.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector import Vector
from pgvector.psycopg import register_vector

from memsub import packets
from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate

from helpers import TENANT_A, set_context, superuser_count
from layer_helpers import DIMENSION
from packet_vector_helpers import apart, envelope, float32_vector, read_back, refused

SET_PATH_CALLS = ("select coalesce(pg_stat_get_xact_function_calls("
                  "'memsub._store_packet_envelope(jsonb, integer, vector[])'::regprocedure), 0)")


def plain(seed: int) -> dict[str, Any]:
    """An envelope without embeddings: no vectors of its own in the batch's."""
    return {"packet_type": "note", "payload": {"text": f"note {seed}"}, "timestamp": f"2026-01-02T00:00:{seed:02d}Z"}


def batch_apart(seeds: list[int]) -> tuple[list[dict[str, Any]], list[Vector]]:
    lean: list[dict[str, Any]] = []
    vectors: list[Vector] = []
    for seed in seeds:
        if seed < 0:
            lean.append(plain(-seed))
            continue
        value, given = apart(envelope(seed))
        lean.append(value)
        vectors += given
    return lean, vectors


def write_batch(conn: psycopg.Connection[Any], lean: list[dict[str, Any]], vectors: Any) -> list[dict[str, Any]]:
    register_vector(conn)
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    return cur.execute("select * from memsub.write_packets(%s::jsonb, p_vectors => %s)",
                       [json.dumps(lean), vectors]).fetchall()


@pytest.mark.parametrize("size", [3, 12])  # the envelope-by-envelope path, the set-based path
def test_a_batch_with_its_vectors_apart_stores_what_its_vectors_in_json_store(db: Any, size: int) -> None:
    seeds = [seed if seed % 4 else -seed for seed in range(1, size + 1)]  # every fourth without embeddings
    lean, vectors = batch_apart(seeds)
    with db.connect(autocommit=True) as admin:  # count function calls, to see which path wrote the batch
        admin.execute(f"alter database {db.name} set track_functions = 'pl'")
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        before = conn.execute(SET_PATH_CALLS).fetchone()
        written = write_batch(conn, lean, vectors)
        after = conn.execute(SET_PATH_CALLS).fetchone()
        conn.commit()
    assert before is not None and after is not None
    assert after[0] - before[0] == (size if size < 8 else 0)  # one by one, or all at once
    assert [r["written"].get("memory_embeddings", 0) for r in written] == [2 if s > 0 else 0 for s in seeds]
    for seed, row in zip(seeds, written, strict=True):
        if seed < 0:
            continue
        stored_envelope, rows = read_back(db, row["packet_id"])
        assert stored_envelope == {**envelope(seed), "packet_id": str(row["packet_id"]), "scope": "shared",
                                   "timestamp": f"2026-01-01T00:00:{seed:02d}.000000Z"}
        assert [(t, c, np.array(json.loads(v), dtype=np.float32).tolist(), text) for t, c, v, text in rows] == [
            ("content", 0, float32_vector(seed), f"item {seed}"), ("entity", 3, float32_vector(seed + 100), None)]


@pytest.mark.parametrize("size", [3, 12])
@pytest.mark.parametrize(("change", "column", "message"), [
    (lambda lean, vectors: vectors.pop(), "vectors", "in the batch"),
    (lambda lean, vectors: vectors.append(vectors[0]), "vectors", "in the batch"),
    (lambda lean, vectors: lean[1]["memory"]["embeddings"][1].update(vector=float32_vector(9)),
     "memory.embeddings[1].vector", "envelope 2 of the batch"),
    (lambda lean, vectors: vectors.__setitem__(3, None), "memory.embeddings[1].vector", "envelope 2 of the batch"),
    (lambda lean, vectors: vectors.__setitem__(2, Vector([1.0, 2.0])), "memory.embeddings[0].vector",
     "envelope 2 of the batch"),
    (lambda lean, vectors: vectors.__setitem__(0, Vector([0.0] * DIMENSION)), "memory.embeddings[0].vector",
     "envelope 1 of the batch"),
])
def test_a_bad_vector_of_a_batch_is_refused_naming_its_envelope_and_nothing_is_written(
        db: Any, size: int, change: Any, column: str, message: str) -> None:
    lean, vectors = batch_apart(list(range(1, size + 1)))
    change(lean, vectors)
    refused(db, lambda conn: write_batch(conn, lean, vectors), column, message)


def test_the_client_sends_a_batch_s_vectors_apart_only_when_all_can_go(db: Any) -> None:
    batch = [envelope(1), plain(2), envelope(3)]
    call = packets.write_packet_batch(batch)
    assert b'"p_vectors" => %b' in bytes(call.statement)
    assert [v.to_list() for v in call.params[1]] == [float32_vector(s) for s in (1, 101, 3, 103)]
    odd = [envelope(1), envelope(3)]
    odd[1]["memory"]["embeddings"][0]["vector"] = [1.0, "2"]
    call = packets.write_packet_batch(odd)
    assert b"p_vectors" not in bytes(call.statement)
    assert json.loads(call.params[0])[0]["memory"]["embeddings"][0]["vector"] == float32_vector(1)
    assert b"p_vectors" not in bytes(packets.write_packet_batch([plain(1), plain(2)]).statement)
    with Substrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        results = session.packets.write_packets([envelope(seed) for seed in range(1, 10)])
    for seed, result in zip(range(1, 10), results, strict=True):
        stored_envelope, _ = read_back(db, result.packet_id)
        assert stored_envelope["memory"] == envelope(seed)["memory"]


def test_vectors_given_apart_count_toward_the_batch_s_bytes(db: Any) -> None:
    lean, vectors = batch_apart([1, 2, 3])
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        register_vector(conn)
        sizes = conn.execute("select pg_column_size(%s::jsonb), pg_column_size(%s::vector[])",
                             [json.dumps(lean), vectors]).fetchone()
    assert sizes is not None
    envelope_bytes, vector_bytes = sizes
    with db.connect() as admin:  # room for the envelopes, not for their vectors as well
        admin.execute("insert into memsub.limits (name, value) values ('max_batch_bytes', %s)",
                      [envelope_bytes + vector_bytes // 2])
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as caught:
            write_batch(conn, lean, vectors)
        conn.rollback()
    assert caught.value.diag.column_name == "envelopes"
    assert superuser_count(db) == 0


@pytest.mark.asyncio
async def test_the_async_client_sends_a_batch_s_vectors_apart_too(db: Any) -> None:
    async with AsyncSubstrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        results = await session.packets.write_packets([envelope(seed) for seed in range(1, 10)] + [plain(10)])
    assert [r.written.get("memory_embeddings", 0) for r in results] == [2] * 9 + [0]
    for seed, result in zip(range(1, 10), results[:9], strict=True):
        stored_envelope, _ = read_back(db, result.packet_id)
        assert stored_envelope["memory"] == envelope(seed)["memory"]
