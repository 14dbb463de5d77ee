"""The vectors of envelopes read as vector values: memsub.get_packet_vectors, and the client's reads built on it.

get_packets puts each stored vector back into the envelope as JSON numbers (17 significant digits each, turned
into text by the server and parsed again by the caller). get_packet_vectors returns the same vectors as
``vector`` values, by packet and in the order of the envelope's ``memory.embeddings`` elements, so a driver reads
them in pgvector's binary form. The Python client reads a packet with its vectors as get_packets without
vectors followed by get_packet_vectors in binary, in the same round trip and transaction, and puts them back:
what it returns must be the envelope get_packets returns, number for number, for any single-precision vector.
"""

from __future__ import annotations

import json
import struct
import uuid
from typing import Any

import numpy as np
import pytest

from memsub import packets
from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate

from helpers import TENANT_A, TENANT_B, set_context, write
from layer_helpers import DIMENSION


def float32_vector(seed: int) -> list[float]:
    """Single-precision numbers with full mantissas (not short decimals): the doubles they are exactly."""
    values = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return [float(x) for x in values]


def envelope(seed: int) -> dict[str, Any]:
    return {"packet_type": "memory_write", "payload": {"text": f"item {seed}"},
            "memory": {"embeddings": [
                {"embedding_type": "content", "vector": float32_vector(seed), "chunk_text": f"item {seed}"},
                {"embedding_type": "entity", "vector": float32_vector(seed + 100), "chunk_index": 3}]}}


def written(db: Any) -> tuple[list[uuid.UUID], uuid.UUID]:
    """Two packets with vectors and one without in tenant A; one with vectors in tenant B."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ids = [write(conn, e)["packet_id"] for e in (
            envelope(1), {"packet_type": "memory_write", "payload": {"text": "none"}}, envelope(2))]
        conn.commit()
        set_context(conn, TENANT_B)
        other = write(conn, envelope(3))["packet_id"]
        conn.commit()
    return ids, other


def as_json(db: Any, ids: list[uuid.UUID]) -> list[dict[str, Any]]:
    """The envelopes memsub.get_packets returns with their vectors (as JSON), read in tenant A."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        return [row[0] for row in conn.execute("select envelope from memsub.get_packets(%s)", [ids])]


def test_the_vectors_come_by_packet_in_the_order_of_the_elements(db: Any) -> None:
    ids, other = written(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        found = conn.execute("select packet_id, vectors::text[] from memsub.get_packet_vectors(%s)",
                             [[ids[2], other, uuid.uuid4(), ids[1], ids[0]]]).fetchall()
    # Only visible packets that carry an embeddings array; in the order asked (as get_packets).
    assert [row[0] for row in found] == [ids[2], ids[0]]
    for (_, vectors), seed in zip(found, (2, 1), strict=True):
        # vector's text is the shortest decimal of each single-precision number: read back as single precision.
        assert [np.array(json.loads(v), dtype=np.float32).tolist() for v in vectors] == [
            float32_vector(seed), float32_vector(seed + 100)]


def test_another_tenant_gets_no_vectors(db: Any) -> None:
    ids, other = written(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        assert [r[0] for r in conn.execute("select packet_id from memsub.get_packet_vectors(%s)",
                                           [[*ids, other]])] == [other]


def test_a_slot_without_a_stored_vector_is_null(db: Any) -> None:
    ids, _ = written(db)
    with db.connect() as conn:  # the superuser: remove one stored vector behind the reader's back
        conn.execute("delete from memsub.memory_embeddings where packet_id = %s and embedding_type = 'entity'",
                     [ids[0]])
        conn.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        row = conn.execute("select vectors[1] is not null, vectors[2] is null, cardinality(vectors) "
                           "from memsub.get_packet_vectors(%s)", [[ids[0]]]).fetchone()
    assert row == (True, True, 2)
    assert as_json(db, [ids[0]])[0]["memory"]["embeddings"][1]["vector"] is None


@pytest.mark.parametrize("per_call", [False, True])
def test_the_client_returns_what_get_packets_returns(db: Any, per_call: bool) -> None:
    ids, _ = written(db)
    expected = as_json(db, ids)
    with Substrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A, per_call=per_call) as session:
        many = session.packets.get_packets([*ids, uuid.uuid4()])
        one = session.packets.get(ids[2])
        missing = session.packets.get(uuid.uuid4())
    assert [row.envelope for row in many] == expected
    assert one is not None and one.envelope == expected[2]
    assert missing is None
    # Number for number, not merely close: the doubles that the stored single-precision numbers are.
    vector = many[0].envelope["memory"]["embeddings"][0]["vector"]
    assert struct.pack(f"{DIMENSION}f", *vector) == struct.pack(f"{DIMENSION}f", *float32_vector(1))
    assert vector == [float(np.float32(x)) for x in float32_vector(1)]


@pytest.mark.asyncio
@pytest.mark.parametrize("per_call", [False, True])
async def test_the_async_client_returns_what_get_packets_returns(db: Any, per_call: bool) -> None:
    ids, _ = written(db)
    expected = as_json(db, ids)
    async with AsyncSubstrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A, per_call=per_call) as session:
        many = await session.packets.get_packets(ids)
        one = await session.packets.get(ids[0])
    assert [row.envelope for row in many] == expected
    assert one is not None and one.envelope == expected[0]


def test_a_read_with_vectors_is_two_statements_sent_together() -> None:
    ids = [uuid.uuid4()]
    for call in (packets.get_packets(ids), packets.get_packet(ids[0])):
        first, second = call.statements()
        assert b"p_with_vectors" in bytes(first.statement) and not first.binary
        assert b'"memsub"."get_packet_vectors"' in bytes(second.statement) and second.binary and second.vectors
    lean = packets.get_packets(ids, with_vectors=False)
    assert lean.statements() == [lean] and lean.then is None
