"""The vectors of envelopes read as vector values: memsub.get_packets_with_vector_values, and the client's reads
built on it.

get_packets puts each stored vector back into the envelope as JSON numbers (17 significant digits each, turned
into text by the server and parsed again by the caller). get_packets_with_vector_values returns the rows of
get_packets(ids, false) and, beside each, the same vectors as ``vector`` values in the order of the envelope's
``memory.embeddings`` elements, so a driver reads them in pgvector's binary form. The Python client reads a
packet with its vectors as that one statement in binary and puts the vectors back: what it returns must be the
envelope get_packets returns, number for number, for any single-precision vector.
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
        found = conn.execute("select packet_id, vectors::text[] from memsub.get_packets_with_vector_values(%s)",
                             [[ids[2], other, uuid.uuid4(), ids[1], ids[0]]]).fetchall()
        lean = conn.execute("select * from memsub.get_packets(%s, false)", [[ids[2], ids[1], ids[0]]]).fetchall()
        rows = conn.execute("select * from memsub.get_packets_with_vector_values(%s)",
                            [[ids[2], ids[1], ids[0]]]).fetchall()
    # The visible packets, in the order asked (as get_packets); vectors NULL without an embeddings array.
    assert [row[0] for row in found] == [ids[2], ids[1], ids[0]]
    assert found[1][1] is None
    # Every other column is the row get_packets(ids, false) returns.
    assert [row[:-1] for row in rows] == lean
    for (_, vectors), seed in zip((found[0], found[2]), (2, 1), strict=True):
        # vector's text is the shortest decimal of each single-precision number: read back as single precision.
        assert [np.array(json.loads(v), dtype=np.float32).tolist() for v in vectors] == [
            float32_vector(seed), float32_vector(seed + 100)]


def test_another_tenant_gets_no_vectors(db: Any) -> None:
    ids, other = written(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        assert [r[0] for r in conn.execute("select packet_id from memsub.get_packets_with_vector_values(%s)",
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
                           "from memsub.get_packets_with_vector_values(%s)", [[ids[0]]]).fetchone()
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


def test_a_read_with_vectors_is_one_statement_read_in_binary() -> None:
    ids = [uuid.uuid4()]
    for call in (packets.get_packets(ids), packets.get_packet(ids[0])):
        assert b'"memsub"."get_packets_with_vector_values"' in bytes(call.statement) and call.binary and call.vectors
    for call in (packets.get_packets(ids, with_vectors=False), packets.get_packet(ids[0], with_vectors=False)):
        assert b"p_with_vectors" in bytes(call.statement) and not call.binary


def test_a_platform_admin_reads_several_tenants_in_the_order_asked(db: Any) -> None:
    """A platform_admin may read packets of several tenants in one call. The vectors are read tenant by tenant
    (each tenant's partition stated as a value), so get_packets_with_vector_values returns the rows grouped by
    tenant; get_packets and the client give them in the order asked."""
    ids, other = written(db)
    asked = [ids[2], other, ids[0]]
    with db.connect("platform_admin") as conn:
        set_context(conn, TENANT_A, roles=["platform_admin"])
        typed = conn.execute("select packet_id, cardinality(vectors) from memsub.get_packets_with_vector_values(%s)",
                             [asked]).fetchall()
        as_json_rows = conn.execute("select packet_id, envelope from memsub.get_packets(%s)", [asked]).fetchall()
    assert sorted(typed) == sorted((packet_id, 2) for packet_id in asked)
    assert [row[0] for row in as_json_rows] == asked
    with Substrate(db.dsn("platform_admin")) as substrate, \
            substrate.tenant(TENANT_A, roles=["platform_admin"]) as session:
        read = session.packets.get_packets(asked)
    assert [row.packet_id for row in read] == asked
    assert [row.envelope for row in read] == [envelope for _, envelope in as_json_rows]
