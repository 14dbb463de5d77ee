"""get_packet and get_packets without the vectors (p_with_vectors => false): the packet_store row as stored, with
the envelope's header fields (packet_id, packet_type, timestamp, scope: stored only in their columns) put back.

An envelope's memory.embeddings[] vectors are stored once, in memory_embeddings (test_packet_vectors.py), and the
readers put them back by default. A caller that needs the payload, not the vectors, asks for the row as stored:
each vector stored apart reads as JSON null, every other field (and every other column) is the same as with the
vectors, and row-level security decides what is visible exactly as it does by default.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest
from test_packet_vectors import envelope

from memsub._calls import function, rows
from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate
from memsub.models import PacketStoreRow

from helpers import TENANT_A, TENANT_B, set_context, write


def without_vectors(envelope_value: dict[str, Any]) -> dict[str, Any]:
    """The envelope with each memory.embeddings[] vector given as null (what the stored envelope holds)."""
    stripped = json.loads(json.dumps(envelope_value))
    for element in stripped.get("memory", {}).get("embeddings", []):
        if isinstance(element, dict) and isinstance(element.get("vector"), list):
            element["vector"] = None
    return stripped


def written_packets(db: Any) -> tuple[list[uuid.UUID], uuid.UUID]:
    """Two packets with embeddings and one without in tenant A, one with embeddings in tenant B."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ids = [write(conn, e)["packet_id"] for e in (
            envelope(1), envelope(2, tags=["two"]),
            {"packet_type": "memory_write", "payload": {"text": "no embeddings"}})]
        conn.commit()
        set_context(conn, TENANT_B)
        other = write(conn, envelope(3))["packet_id"]
        conn.commit()
    return ids, other


@pytest.mark.parametrize("login, roles", [("app", ()), ("analyst", ()), ("platform_admin", ("platform_admin",))])
def test_without_vectors_the_rows_are_the_stored_rows(db, login, roles):
    ids, other = written_packets(db)
    wanted = [ids[1], other, uuid.uuid4(), ids[0], ids[2], ids[1]]
    visible = [ids[1], other, ids[0], ids[2]] if login == "platform_admin" else [ids[1], ids[0], ids[2]]
    with db.connect(login) as conn:
        set_context(conn, TENANT_A, roles=roles)
        lean = [r[0] for r in conn.execute(
            "select to_jsonb(g) from memsub.get_packets(%s, p_with_vectors => false) g", [wanted])]
        full = [r[0] for r in conn.execute("select to_jsonb(g) from memsub.get_packets(%s) g", [wanted])]
        # The stored row, with the envelope's header fields (kept only in their columns) put back.
        stored = {r[0]["packet_id"]: r[0] for r in conn.execute(
            "select to_jsonb(s) || jsonb_build_object('envelope', jsonb_build_object("
            "'packet_id', s.packet_id, 'packet_type', s.packet_type, 'scope', s.scope, 'timestamp', "
            "to_char(s.\"timestamp\" at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')) || s.envelope) "
            "from memsub.packet_store s where s.packet_id = any(%s)", [wanted])}
        one = [conn.execute("select to_jsonb(g) from memsub.get_packet(%s, p_with_vectors => false) g",
                            [i]).fetchone() for i in wanted]
    assert [uuid.UUID(r["packet_id"]) for r in lean] == visible
    assert lean == [stored[str(i)] for i in visible]
    assert [r[0] for r in one if r is not None] == [stored[str(i)] for i in wanted if i in visible]
    # The same row as with the vectors, but for the vector values: the other fields of each embedding element
    # (type, chunk index, chunk text, metadata) are there.
    assert [{**r, "envelope": without_vectors(r["envelope"])} for r in full] == lean
    by_id = {uuid.UUID(r["packet_id"]): r["envelope"] for r in lean}
    assert by_id[ids[0]]["memory"] == without_vectors(envelope(1))["memory"]
    assert by_id[ids[0]]["memory"]["embeddings"][1] == {
        "embedding_type": "entity", "vector": None, "chunk_index": 2, "metadata": {"source": "test"}}
    assert "memory" not in by_id[ids[2]]


def test_the_default_and_true_put_the_vectors_back(db):
    ids, _ = written_packets(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for statement in ("select envelope from memsub.get_packets(%s)",
                          "select envelope from memsub.get_packets(%s, true)",
                          "select envelope from memsub.get_packets(%s, p_with_vectors => true)"):
            got = [r[0] for r in conn.execute(statement, [ids[:2]])]
            assert [e["memory"] for e in got] == [envelope(1)["memory"], envelope(2)["memory"]], statement
        row = conn.execute("select envelope from memsub.get_packet(%s, true)", [ids[0]]).fetchone()
        assert row is not None and row[0]["memory"] == envelope(1)["memory"]


def test_another_tenant_reads_nothing_without_vectors_either(db):
    ids, other = written_packets(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        assert conn.execute("select * from memsub.get_packets(%s, p_with_vectors => false)", [ids]).fetchall() == []
        assert conn.execute("select * from memsub.get_packet(%s, false)", [ids[0]]).fetchall() == []
        assert [r[0] for r in conn.execute("select packet_id from memsub.get_packets(%s, false)",
                                           [[*ids, other]])] == [other]
    with db.connect("nobody") as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("select * from memsub.get_packets(%s, false)", [ids])


def test_the_client_reads_with_or_without_vectors(db):
    ids, _ = written_packets(db)
    with Substrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        full = session.packets.get(ids[0])
        lean = session.packets.get(ids[0], with_vectors=False)
        assert full is not None and lean is not None
        assert full.envelope["memory"] == envelope(1)["memory"]
        assert lean.envelope == without_vectors(full.envelope)
        assert lean.model_dump(exclude={"envelope"}) == full.model_dump(exclude={"envelope"})
        many = session.packets.get_packets(ids, with_vectors=False)
        assert [r.envelope for r in many] == [without_vectors(r.envelope) for r in session.packets.get_packets(ids)]
        assert session.packets.get(uuid.uuid4(), with_vectors=False) is None


def test_the_client_reads_a_thread_with_or_without_vectors(db):
    """The client reads a thread's vectors in binary (memsub.get_thread_with_vector_values): the same packets as
    memsub.get_thread returns with its vectors as JSON numbers, in write order, page by page."""
    ids, _ = written_packets(db)  # the two packets of envelope() are in its thread, the third is in none
    thread = envelope(1)["thread_id"]
    with Substrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        full = session.packets.get_thread(thread)
        lean = session.packets.get_thread(thread, with_vectors=False)
        assert [r.packet_id for r in full] == ids[:2]
        as_json = session.run(function("get_thread", {"thread_id": thread}, rows(PacketStoreRow)))
        assert full == as_json
        assert full[1].envelope["memory"] == envelope(2)["memory"]
        assert [r.envelope for r in lean] == [without_vectors(r.envelope) for r in full]
        first = session.packets.get_thread(thread, limit=1)
        rest = session.packets.get_thread(thread, limit=5, after_cursor=first[0].write_seq)
        assert [r.packet_id for r in first + rest] == ids[:2]
        assert [p.packet_id for p in session.packets.replay(thread, page_size=1)] == ids[:2]


@pytest.mark.asyncio
async def test_the_async_client_reads_without_vectors(db):
    ids, _ = written_packets(db)
    async with AsyncSubstrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        lean = await session.packets.get(ids[0], with_vectors=False)
        many = await session.packets.get_packets(ids, with_vectors=False)
        full = await session.packets.get_packets(ids)
    assert lean is not None and lean.envelope["memory"] == without_vectors(envelope(1))["memory"]
    assert [r.envelope for r in many] == [without_vectors(r.envelope) for r in full]
