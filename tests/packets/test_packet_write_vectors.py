"""An envelope's vectors given as vector values: memsub.write_packet(envelope, vectors).

A vector inside the envelope travels as JSON numbers: the server parses each into a ``numeric``, writes the
array out as text and parses that again as a ``vector``. ``p_vectors`` carries the vectors of
``memory.embeddings`` as ``vector`` values instead (a driver sends them in pgvector's binary form), the envelope
holding JSON null (or nothing) in their place. What is stored and read back is the same packet either way, and
every check of the vector (dimension, norm) names the same field; a vector given twice or a count that does not
match the elements is refused with nothing written. The Python client writes every envelope whose vectors are
all lists of numbers this way.
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

from helpers import TENANT_A, set_context, superuser_count, write
from layer_helpers import DIMENSION
from packet_vector_helpers import apart, envelope, float32_vector, read_back, refused


def write_apart(conn: psycopg.Connection[Any], lean: dict[str, Any], vectors: list[Any]) -> dict[str, Any]:
    register_vector(conn)
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    row = cur.execute("select * from memsub.write_packet(%s::jsonb, p_vectors => %s)",
                      [json.dumps(lean), vectors]).fetchone()
    assert row is not None
    return row


@pytest.mark.parametrize("keep_key", [True, False])
def test_vectors_given_apart_store_the_packet_the_json_vectors_store(db: Any, keep_key: bool) -> None:
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        in_json = write(conn, envelope(1))
        lean, vectors = apart(envelope(2), keep_key)
        given_apart = write_apart(conn, lean, vectors)
        conn.commit()
    assert given_apart["written"] == in_json["written"] == {"packet_store": 1, "memory_embeddings": 2}
    json_envelope, json_rows = read_back(db, in_json["packet_id"])
    apart_envelope, apart_rows = read_back(db, given_apart["packet_id"])
    # The same envelope comes back, each vector in its place, as when the vectors were written as JSON.
    assert json_envelope == {**envelope(1), "packet_id": str(in_json["packet_id"]), "scope": "shared",
                             "timestamp": "2026-01-01T00:00:01.000000Z"}
    assert apart_envelope == {**envelope(2), "packet_id": str(given_apart["packet_id"]), "scope": "shared",
                              "timestamp": "2026-01-01T00:00:02.000000Z"}
    assert [(t, c, np.array(json.loads(v), dtype=np.float32).tolist(), text) for t, c, v, text in apart_rows] == [
        ("content", 0, float32_vector(2), "item 2"), ("entity", 3, float32_vector(102), None)]
    assert [(t, c, text) for t, c, _, text in json_rows] == [("content", 0, "item 1"), ("entity", 3, None)]


@pytest.mark.parametrize(("change", "column", "message"), [
    (lambda lean, vectors: vectors.pop(), "vectors", "2 memory.embeddings"),
    (lambda lean, vectors: vectors.append(vectors[0]), "vectors", "2 memory.embeddings"),
    (lambda lean, vectors: lean["memory"]["embeddings"][1].update(vector=float32_vector(9)),
     "memory.embeddings[1].vector", "given in vectors"),
    (lambda lean, vectors: vectors.__setitem__(0, None), "memory.embeddings[0].vector", "null"),
    (lambda lean, vectors: vectors.__setitem__(1, Vector([1.0, 2.0])), "memory.embeddings[1].vector",
     "dimensions"),
    (lambda lean, vectors: vectors.__setitem__(0, Vector([0.0] * DIMENSION)), "memory.embeddings[0].vector",
     "norm"),
    (lambda lean, vectors: lean.pop("memory"), "vectors", "0 memory.embeddings"),
])
def test_a_bad_vectors_argument_is_refused_naming_the_field_and_nothing_is_written(
        db: Any, change: Any, column: str, message: str) -> None:
    lean, vectors = apart(envelope(3))
    change(lean, vectors)
    refused(db, lambda conn: write_apart(conn, lean, vectors), column, message)


def test_a_two_dimensional_vectors_argument_is_refused(db: Any) -> None:
    lean, vectors = apart(envelope(4))
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        register_vector(conn)
        with pytest.raises(psycopg.errors.InvalidParameterValue) as caught:
            conn.execute("select memsub.write_packet(%s::jsonb, array[%s::vector[]])", [json.dumps(lean), vectors])
    assert caught.value.diag.column_name == "vectors"
    assert superuser_count(db) == 0


def test_a_retry_with_the_vectors_apart_is_the_same_packet(db: Any) -> None:
    """Deduplication does not look at the vectors: the same packet written with its vectors in the envelope and
    then apart is one packet."""
    first = envelope(5)
    first["packet_id"] = "5a5a5a5a-0000-4000-8000-000000000005"
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        stored = write(conn, first)
        again = write_apart(conn, *apart(first))
        conn.commit()
    assert (stored["deduplicated"], again["deduplicated"]) == (False, True)
    assert again["packet_id"] == stored["packet_id"]
    assert superuser_count(db, "memsub.memory_embeddings") == 2


def test_the_client_sends_list_vectors_apart_and_anything_else_in_the_envelope() -> None:
    call = packets.write_packet(envelope(6))
    # In binary: psycopg would send a list of vectors as the text of an array, %b as 4 bytes a number.
    assert b'"p_vectors" => %b' in bytes(call.statement) and call.vectors
    sent = json.loads(call.params[0])
    assert [e["vector"] for e in sent["memory"]["embeddings"]] == [None, None]
    assert [v.to_list() for v in call.params[1]] == [float32_vector(6), float32_vector(106)]
    # Anything that is not a list of finite numbers stays in the envelope, where the server names what is wrong.
    odd_values = ("x", [1.0, "2"], [1e39] * DIMENSION, [10**400] * DIMENSION, [True] * DIMENSION, [], None,
                  [0.5] * (DIMENSION - 1) + [-1e39], [1e39, -1e39] * (DIMENSION // 2),
                  [0.5] * (DIMENSION - 1) + [False])
    for odd in odd_values:
        value = envelope(7)
        value["memory"]["embeddings"][1]["vector"] = odd
        call = packets.write_packet(value)
        assert b"p_vectors" not in bytes(call.statement)
        assert json.loads(call.params[0])["memory"]["embeddings"][1]["vector"] == odd
    # NaN is not JSON: refused before anything is sent, as it always was.
    value = envelope(7)
    value["memory"]["embeddings"][0]["vector"] = [float("nan")] * DIMENSION
    with pytest.raises(TypeError, match="not a JSON number"):
        packets.write_packet(value)
    assert b"p_vectors" not in bytes(packets.write_packet({"packet_type": "t", "payload": {}}).statement)


@pytest.mark.parametrize("per_call", [False, True])
def test_the_client_writes_what_it_reads_back(db: Any, per_call: bool) -> None:
    with Substrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A, per_call=per_call) as session:
        written = session.packets.write(envelope(8))
        read = session.packets.get(written.packet_id)
    assert read is not None
    assert read.envelope["memory"] == envelope(8)["memory"]
    assert superuser_count(db, "memsub.memory_embeddings") == 2


@pytest.mark.asyncio
async def test_the_async_client_writes_what_it_reads_back(db: Any) -> None:
    async with AsyncSubstrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        written = await session.packets.write(envelope(9))
        read = await session.packets.get(written.packet_id)
    assert read is not None
    assert read.envelope["memory"] == envelope(9)["memory"]
