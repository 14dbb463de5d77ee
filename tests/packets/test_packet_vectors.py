"""An embedding's vector is stored once: in memory_embeddings.vector, not again as JSON in the envelope.

The readers put it back, so get_packet and get_thread return the envelope as written; the envelope's vectors
stay immutable. A vector is kept at single precision (what the vector column holds): these tests send numbers
that single precision holds exactly, as clients holding float32 embeddings do.
"""

from __future__ import annotations

import json
import random
import struct
import uuid
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, TENANT_B, count, set_context, superuser_count, write
from layer_helpers import DIMENSION

THREAD = uuid.UUID("7ec70000-0000-4000-8000-000000000001")


def vector(seed: int) -> list[float]:
    """A vector of numbers single precision holds exactly (multiples of 1/1024), never the zero vector."""
    return [((seed * 31 + i * 7) % 2049 - 1024) / 1024 or 0.5 for i in range(DIMENSION)]


def envelope(seed: int, **extra: Any) -> dict[str, Any]:
    return {"packet_type": "memory_write", "thread_id": str(THREAD), "payload": {"text": f"item {seed}"},
            "timestamp": f"2026-01-01T00:00:{seed:02d}Z",
            "memory": {"embeddings": [
                {"embedding_type": "content", "vector": vector(seed), "chunk_text": f"item {seed}"},
                {"embedding_type": "entity", "vector": vector(seed + 1), "chunk_index": 2,
                 "metadata": {"source": "test"}}]},
            **extra}


def stored_envelope(db: Any, packet_id: uuid.UUID) -> tuple[dict[str, Any], int]:
    """The envelope column as stored, and its size in bytes (as the superuser)."""
    with db.connect() as conn:
        row = conn.execute("select envelope, pg_column_size(envelope) from memsub.packet_store "
                           "where packet_id = %s", [packet_id]).fetchone()
    assert row is not None
    return row[0], int(row[1])


def test_the_envelope_keeps_no_second_copy_of_its_vectors(db):
    written = envelope(1)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        result = write(conn, written)
        conn.commit()
    stored, size = stored_envelope(db, result["packet_id"])
    assert [e["vector"] for e in stored["memory"]["embeddings"]] == [None, None]
    # Two 1536-d vectors are over 20 kB of JSON; what is stored is the rest of the envelope.
    assert len(json.dumps(written)) > 20000
    assert size < 1000
    assert superuser_count(db, "memsub.memory_embeddings") == 2


@pytest.mark.parametrize("reader", ["get_packet", "get_packets", "get_thread"])
@pytest.mark.parametrize("writer", ["write_packet", "write_packets"])
def test_readers_return_the_envelope_as_written(db, writer, reader):
    written = [envelope(n) for n in (1, 2)]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        if writer == "write_packet":
            ids = [write(conn, e)["packet_id"] for e in written]
        else:
            ids = [r[0] for r in conn.execute("select packet_id from memsub.write_packets(%s::jsonb)",
                                              [json.dumps(written)]).fetchall()]
        if reader == "get_packet":
            got = [conn.execute("select envelope from memsub.get_packet(%s)", [i]).fetchone() for i in ids]
            envelopes = [row[0] for row in got if row is not None]
        elif reader == "get_packets":
            envelopes = [row[0] for row in conn.execute("select envelope from memsub.get_packets(%s)", [ids])]
        else:
            envelopes = [row[0] for row in conn.execute("select envelope from memsub.get_thread(%s)", [THREAD])]
    assert len(envelopes) == 2
    for sent, back in zip(written, envelopes, strict=True):
        assert back["memory"] == sent["memory"]
        assert back["payload"] == sent["payload"]


def embedding_reads(conn: psycopg.Connection[Any]) -> int:
    """Scans of memory_embeddings started in this transaction: its sequential scans and each index's searches."""
    # memory_embeddings is partitioned by tenant: the scans are counted on its partitions and their indexes.
    row = conn.execute(
        "select coalesce(sum(pg_stat_get_xact_numscans(h.inhrelid)), 0)"
        "       + coalesce(sum((select sum(pg_stat_get_xact_numscans(i.indexrelid)) from pg_catalog.pg_index i"
        "                        where i.indrelid = h.inhrelid)), 0)"
        "  from pg_catalog.pg_inherits h where h.inhparent = 'memsub.memory_embeddings'::regclass").fetchone()
    assert row is not None
    return int(row[0])


READS = {"get_packet": ("select envelope from memsub.get_packet(%s, false)",
                        "select envelope from memsub.get_packet(%s)"),
         "get_packets": ("select envelope from memsub.get_packets(%s, false)",
                         "select envelope from memsub.get_packets(%s)")}


@pytest.mark.parametrize("reader", sorted(READS))
def test_a_read_without_vectors_never_reads_memory_embeddings(db, reader):
    """with_vectors false is the cheap read: the vectors' table is not scanned, while the default read puts
    every vector back from it (the same counter, so it can see a read)."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        packet_id = write(conn, envelope(1))["packet_id"]
        argument: Any = packet_id if reader == "get_packet" else [packet_id]
        lean_read, full_read = READS[reader]
        for _ in range(7):  # a few calls: cached plans count too
            before = embedding_reads(conn)
            lean = conn.execute(lean_read, [argument]).fetchone()
            assert embedding_reads(conn) == before
            assert lean is not None
            assert [e["vector"] for e in lean[0]["memory"]["embeddings"]] == [None, None]
            full = conn.execute(full_read, [argument]).fetchone()
            assert embedding_reads(conn) > before
            assert full is not None and full[0]["memory"] == envelope(1)["memory"]


def as_written(stored: dict[str, Any], vectors: dict[tuple[str, str, int], Any]) -> dict[str, Any]:
    """A packet_store row (as JSON) with each null memory.embeddings[] vector taken from its memory_embeddings
    slot (packet_id, embedding_type, chunk_index), or left null when no row holds it."""
    row = json.loads(json.dumps(stored))
    for element in row["envelope"].get("memory", {}).get("embeddings", []):
        if isinstance(element, dict) and "vector" in element and element["vector"] is None:
            slot = (row["packet_id"], element.get("embedding_type"), int(element.get("chunk_index", 0)))
            element["vector"] = vectors.get(slot)
    return row


@pytest.mark.parametrize("login, roles", [("app", ()), ("platform_admin", ("platform_admin",))])
def test_readers_return_each_stored_row_with_its_vectors_put_back(db, login, roles):
    """get_packets and get_thread put the vectors back for all their rows at once: every column is the stored
    row's and the envelope is the stored one with its vectors read from memory_embeddings (and its header fields
from their columns), in the order asked,
    for both ways of searching; get_thread gives the same rows, byte for byte, as get_packets."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ids = [write(conn, e)["packet_id"] for e in (
            envelope(1), envelope(2, tags=["two"]),
            {"packet_type": "memory_write", "payload": {"text": "no embeddings"}, "thread_id": str(THREAD)},
            {"packet_type": "memory_write", "payload": {"text": "empty"}, "memory": {"embeddings": []}})]
        conn.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        other = write(conn, envelope(3))["packet_id"]
        conn.commit()
    with db.connect() as conn:
        # An envelope element whose vector no row holds any longer reads back as null.
        conn.execute("insert into memsub.packet_store (packet_id, packet_type, envelope, tenant_id, scope, "
                     "content_hash) values (%s, 'event', %s::jsonb, %s, 'shared', md5('x'))",
                     [lost := uuid.uuid4(), json.dumps({"memory": {"embeddings": [
                         1, {"embedding_type": "content", "vector": None},
                         {"embedding_type": "entity", "vector": [0.5, 0.25]}]}}), TENANT_A])
        conn.commit()
    wanted = [ids[3], ids[1], other, uuid.uuid4(), ids[0], ids[1], lost, ids[2]]
    visible = [ids[3], ids[1], other, ids[0], lost, ids[2]] if login == "platform_admin" else [
        ids[3], ids[1], ids[0], lost, ids[2]]
    with db.connect(login) as conn:
        set_context(conn, TENANT_A, roles=roles)
        got = [r[0] for r in conn.execute("select to_jsonb(g) from memsub.get_packets(%s) g", [wanted])]
        # The stored row, with the envelope's header fields (kept only in their columns) put back.
        stored = {r[0]["packet_id"]: r[0] for r in conn.execute(
            "select to_jsonb(s) || jsonb_build_object('envelope', jsonb_build_object("
            "'packet_id', s.packet_id, 'packet_type', s.packet_type, 'scope', s.scope, 'timestamp', "
            "to_char(s.\"timestamp\" at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')) || s.envelope) "
            "from memsub.packet_store s where s.packet_id = any(%s)", [wanted])}
        vectors = {(str(r[0]), r[1], r[2]): r[3] for r in conn.execute(
            "select packet_id, embedding_type, chunk_index, vector::real[]::double precision[] "
            "from memsub.memory_embeddings")}
        assert [uuid.UUID(r["packet_id"]) for r in got] == visible
        assert got == [as_written(stored[str(i)], vectors) for i in visible]
        by_id = {uuid.UUID(r["packet_id"]): r["envelope"] for r in got}
        assert by_id[ids[1]]["memory"] == envelope(2)["memory"]
        assert by_id[lost]["memory"]["embeddings"] == [
            1, {"embedding_type": "content", "vector": None}, {"embedding_type": "entity", "vector": [0.5, 0.25]}]
        thread = conn.execute("select g::text from memsub.get_thread(%s) g", [THREAD]).fetchall()
        in_thread = [i for i in (ids[0], ids[1], ids[2], other) if i in visible]  # in write order
        assert thread == conn.execute("select g::text from memsub.get_packets(%s) g", [in_thread]).fetchall()
        # The same page as stored, and with the vectors beside the rows as vector values.
        assert conn.execute("select g::text from memsub.get_thread(%s, p_with_vectors => false) g",
                            [THREAD]).fetchall() == conn.execute(
            "select g::text from memsub.get_packets(%s, false) g", [in_thread]).fetchall()
        assert conn.execute("select g::text from memsub.get_thread_with_vector_values(%s) g",
                            [THREAD]).fetchall() == conn.execute(
            "select g::text from memsub.get_packets_with_vector_values(%s) g", [in_thread]).fetchall()


def test_single_precision_values_come_back_identical(db):
    rng = random.Random(3)
    # What a client holding float32 embeddings sends: each float32 value as a double.
    values = [struct.unpack("f", struct.pack("f", rng.uniform(-1, 1)))[0] for _ in range(DIMENSION)]
    written = {"packet_type": "memory_write", "payload": {"text": "float32"},
               "memory": {"embeddings": [{"embedding_type": "content", "vector": values}]}}
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        packet_id = write(conn, written)["packet_id"]
        row = conn.execute("select envelope from memsub.get_packet(%s)", [packet_id]).fetchone()
    assert row is not None and row[0]["memory"] == written["memory"]


def test_the_analyst_reads_the_vectors_and_other_tenants_read_nothing(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        packet_id = write(conn, envelope(3))["packet_id"]
        conn.commit()
    with db.connect("analyst") as conn:
        set_context(conn, TENANT_A)
        row = conn.execute("select envelope from memsub.get_packet(%s)", [packet_id]).fetchone()
        assert row is not None and row[0]["memory"] == envelope(3)["memory"]
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        assert conn.execute("select envelope from memsub.get_packet(%s)", [packet_id]).fetchall() == []


def test_an_envelope_vector_cannot_be_replaced(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        packet_id = write(conn, envelope(4))["packet_id"]
        conn.commit()
        set_context(conn, TENANT_A)
        replacement = "[" + ",".join(str(v) for v in vector(9)) + "]"
        with pytest.raises(psycopg.Error) as caught:
            conn.execute("select memsub.store_embedding(%s, 'entity', %s::vector, 2)", [packet_id, replacement])
        assert caught.value.sqlstate == "0A000"
        assert caught.value.diag.column_name == "vector"
        conn.rollback()
        set_context(conn, TENANT_A)
        # Another slot of the same packet is not part of the envelope and may be stored and replaced.
        for _ in range(2):
            conn.execute("select memsub.store_embedding(%s, 'entity', %s::vector, 3)", [packet_id, replacement])
        row = conn.execute("select envelope from memsub.get_packet(%s)", [packet_id]).fetchone()
        assert row is not None and row[0]["memory"] == envelope(4)["memory"]


@pytest.mark.parametrize(("chunk_text", "metadata", "column"), [
    ("tampered words", {"source": "test"}, "chunk_text"),
    (None, {"source": "evil"}, "metadata"),
])
def test_an_envelope_slot_keeps_its_text_and_metadata(db, chunk_text, metadata, column):
    """The envelope's embedding is immutable as a whole: its vector given again with other words (which keyword
    search reads) or metadata is refused; given again exactly as written, nothing changes."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        packet_id = write(conn, envelope(4))["packet_id"]
        conn.commit()
    same = "[" + ",".join(str(v) for v in vector(5)) + "]"  # the entity slot's own vector
    call = "select memsub.store_embedding(%s, 'entity', %s::vector, 2, %s, %s::jsonb)"
    with pytest.raises(psycopg.errors.FeatureNotSupported) as caught, db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute(call, [packet_id, same, chunk_text, json.dumps(metadata)])
    assert caught.value.diag.column_name == column
    read = ("select chunk_text, metadata, created_at from memsub.memory_embeddings "
            "where packet_id = %s and embedding_type = 'entity'")
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        before = conn.execute(read, [packet_id]).fetchone()
        assert before is not None and before[:2] == (None, {"source": "test"})
        conn.execute(call, [packet_id, same, None, json.dumps({"source": "test"})])
        assert conn.execute(read, [packet_id]).fetchone() == before


def test_an_embedding_slot_named_twice_is_refused_and_nothing_is_written(db):
    twice = envelope(5)
    twice["memory"]["embeddings"].append({"embedding_type": "entity", "chunk_index": "2", "vector": vector(6)})
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.Error) as caught:
            write(conn, twice)
        assert caught.value.sqlstate == "22023"
        assert caught.value.diag.column_name == "memory.embeddings[2]"
        conn.rollback()
        set_context(conn, TENANT_A)
        assert count(conn) == 0
        assert count(conn, "memsub.memory_embeddings") == 0


def test_a_thread_read_with_its_vector_values_comes_in_write_order_and_pages_by_the_cursor(db):
    """A platform_admin's thread spanning two tenants comes in write order, as get_thread returns it, though
    get_packets_with_vector_values reads tenant by tenant; the cursor and the limit page it alike."""
    written = []
    for seed, tenant in enumerate((TENANT_A, TENANT_B, TENANT_A, TENANT_B, TENANT_A)):
        with db.connect("app") as conn:
            set_context(conn, tenant)
            written.append(write(conn, envelope(seed + 10))["packet_id"])
            conn.commit()
    with db.connect("platform_admin") as conn:
        set_context(conn, TENANT_A, roles=("platform_admin",))
        plain = conn.execute("select packet_id, write_seq from memsub.get_thread(%s)", [THREAD]).fetchall()
        assert [row[0] for row in plain] == written
        with_values = conn.execute("select packet_id, write_seq, cardinality(vectors) "
                                   "from memsub.get_thread_with_vector_values(%s)", [THREAD]).fetchall()
        assert with_values == [(*row, 2) for row in plain]
        page = conn.execute("select packet_id from memsub.get_thread_with_vector_values(%s, 2, %s)",
                            [THREAD, plain[0][1]]).fetchall()
        assert [row[0] for row in page] == written[1:3]
        for limit in (0, None):
            with pytest.raises(psycopg.errors.InvalidParameterValue) as refused:
                conn.execute("select * from memsub.get_thread_with_vector_values(%s, %s)", [THREAD, limit])
            assert refused.value.diag.column_name == "limit"
            conn.rollback()
            set_context(conn, TENANT_A, roles=("platform_admin",))
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        assert [row[0] for row in conn.execute(
            "select packet_id from memsub.get_thread_with_vector_values(%s)", [THREAD])] == written[1::2]
