"""What a stored packet costs: each value once, each index entry as narrow as its key (migration 2.28.0).

- The envelope's header fields (packet_id, packet_type, timestamp, scope) are columns of every packet: the stored
  envelope leaves them out, and every reader puts them back, so callers read the envelope they wrote (normalized)
  whether or not they ask for the vectors. An envelope stored with them (written before 2.28.0) reads the same.
- The deduplication key holds the content hash's 32 bytes, not its 64 hexadecimal characters; a retry of the same
  content is still found by that key, and one the writer may not see (expired) is still refused.
- The keyword index holds only embeddings with chunk_text (no other can match a keyword query).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from helpers import TENANT_A, expect_error, set_context, wait_until, write

HEADER = ("packet_id", "packet_type", "timestamp", "scope")
THREAD = uuid.UUID("7ec70000-0000-4000-8000-0000000000a1")


def stored(db: Any, packet_id: uuid.UUID) -> dict[str, Any]:
    with db.connect() as conn:
        row = conn.execute("select envelope from memsub.packet_store where packet_id = %s", [packet_id]).fetchone()
    assert row is not None
    return dict(row[0])


def read(conn: psycopg.Connection[Any], packet_id: uuid.UUID, with_vectors: bool) -> dict[str, Any]:
    row = conn.execute("select envelope from memsub.get_packet(%s, %s)", [packet_id, with_vectors]).fetchone()
    assert row is not None
    return dict(row[0])


def test_header_fields_are_stored_once_and_read_back_in_the_envelope(db):
    named = uuid.uuid4()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        first = write(conn, {"packet_id": str(named), "packet_type": "memory_write", "scope": "shared",
                             "timestamp": "2026-03-04T03:06:07Z", "payload": {"text": "kept once"},
                             "tags": ["a"]})
        second = write(conn, {"packet_type": "event", "payload": {"n": 2}, "thread_id": str(THREAD)})
        conn.commit()
        assert first["packet_id"] == named
        set_context(conn, TENANT_A)
        for packet_id in (named, second["packet_id"]):
            envelope = stored(db, packet_id)
            assert not set(HEADER) & set(envelope), envelope
            assert envelope["payload"]
        expected = {"packet_id": str(named), "packet_type": "memory_write", "scope": "shared",
                    "timestamp": "2026-03-04T03:06:07.000000Z", "payload": {"text": "kept once"}, "tags": ["a"]}
        assert read(conn, named, True) == expected
        assert read(conn, named, False) == expected
        generated = read(conn, second["packet_id"], True)
        assert generated["packet_id"] == str(second["packet_id"]) and generated["scope"] == "shared"
        assert generated["packet_type"] == "event"
        assert generated["timestamp"] == second["timestamp"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        thread = conn.execute("select envelope from memsub.get_thread(%s)", [THREAD]).fetchall()
        assert [r[0] for r in thread] == [generated]


def test_an_envelope_stored_with_its_header_fields_reads_the_same(db):
    legacy = uuid.uuid4()
    envelope = {"packet_id": str(legacy), "packet_type": "event", "timestamp": "2025-01-01T00:00:00Z",
                "scope": "shared", "payload": {"old": True}}
    with db.connect() as conn:
        conn.execute("insert into memsub.packet_store (packet_id, packet_type, envelope, \"timestamp\", tenant_id, "
                     "scope, content_hash) values (%s, 'event', %s::jsonb, '2025-01-01T00:00:00Z', %s, 'shared', "
                     "md5('legacy') || md5('legacy'))", [legacy, json.dumps(envelope), TENANT_A])
        conn.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        # The envelope's own fields win over the columns': the stored one is returned unchanged.
        assert read(conn, legacy, True) == envelope
        assert read(conn, legacy, False) == envelope


def test_a_retry_of_the_same_content_is_found_by_the_narrow_key(db):
    same = {"packet_type": "event", "timestamp": "2026-01-01T00:00:00Z", "payload": {"text": "again"}}
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        first = write(conn, same)
        conn.commit()
        set_context(conn, TENANT_A)
        again = write(conn, same)
        conn.commit()
        assert again["deduplicated"] and again["packet_id"] == first["packet_id"]
        assert again["content_hash"] == first["content_hash"] and len(first["content_hash"]) == 64
        # The id lookup behind it reads across row-level security: only memsub_owner may call it.
        set_context(conn, TENANT_A)
        expect_error(conn, "42501", None, "select memsub._packet_id_by_content_hash(%s)", [first["content_hash"]])


def test_a_retry_of_content_the_writer_cannot_see_is_refused(db):
    same = {"packet_type": "event", "timestamp": "2026-01-01T00:00:00Z", "payload": {"text": "expiring"}}
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ttl = datetime.now(UTC) + timedelta(seconds=1)
        write(conn, {**same, "ttl": ttl.isoformat()})
        conn.commit()
        wait_until(conn, ttl)
        set_context(conn, TENANT_A)
        error = expect_error(conn, "23505", "payload", "select memsub.write_packet(%s::jsonb)", [json.dumps(same)])
        assert "not visible" in str(error)


def test_the_storage_indexes(db):
    """The deduplication key on the hash's bytes, the keyword index on rows with text, time ascending; the
    deduplication lookup and the keyword leg (as their owner, which applies the tenant predicate itself) use them."""
    with db.connect() as conn:
        definitions = dict(conn.execute(
            "select indexname, indexdef from pg_indexes where schemaname = 'memsub' and indexname = any(%s)",
            [["packet_store_content_hash_key", "idx_memory_embeddings_search", "idx_packet_store_timestamp"]]))
        assert "(tenant_id, decode(content_hash, 'hex'::text)) WHERE (content_hash IS NOT NULL)" in \
            definitions["packet_store_content_hash_key"]
        assert "WHERE (chunk_text IS NOT NULL)" in definitions["idx_memory_embeddings_search"]
        assert definitions["idx_packet_store_timestamp"].endswith('(tenant_id, "timestamp")')
        conn.execute("set local role memsub_retrieval_owner")
        conn.execute("set local enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute(
            "explain select s.packet_id from memsub.packet_store s where s.tenant_id = %s "
            "and decode(s.content_hash, 'hex') = decode(md5('a') || md5('b'), 'hex')", [TENANT_A]))
        assert "packet_store_content_hash_key" in plan
        assert any("Index Cond" in line and "decode(content_hash" in line for line in plan.splitlines())
