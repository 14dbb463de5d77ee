"""The data flow of seed 000: one write_packet fans the envelope's memory field out into the layer tables, in one
transaction. The payload stays free."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest

from helpers import TENANT_A, count, set_context, superuser_count, write
from layer_helpers import vec

PAYLOAD = {"text": "L9 uses Neo4j"}
MEMORY = {
    "facts": [{"subject": "L9", "predicate": "uses", "object": "Neo4j", "confidence": 0.8},
              {"subject": "L9", "predicate": "written_in", "object": "Python"}],
    "relationships": [{"source_entity": "L9", "relationship_type": "uses", "target_entity": "Neo4j"}],
    "embeddings": [{"embedding_type": "content", "vector": [1.0] + [0.0] * 1535},
                   {"embedding_type": "entity", "vector": [0.0, 1.0] + [0.0] * 1534, "chunk_index": 1,
                    "chunk_text": "L9"}],
    "reasoning_trace": {"steps": ["read", "extract"], "reasoning_tokens": 120, "decision_tokens": 8,
                        "confidence_scores": {"extract": 0.9}},
}


def test_one_write_fills_every_layer_and_reports_it(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        result = write(conn, {"packet_type": "memory_write", "payload": PAYLOAD, "memory": MEMORY,
                              "confidence": {"score": 0.6}, "metadata": {"agent": "extractor"}})
        assert result["written"] == {"packet_store": 1, "knowledge_facts": 2, "entity_relationships": 1,
                                     "memory_embeddings": 2, "reasoning_traces": 1}
        fact = conn.execute("select confidence, source_packet from memsub.knowledge_facts "
                            "where predicate = 'written_in'").fetchone()
        assert fact == (0.6, result["packet_id"])  # the envelope's confidence is the default
        trace = conn.execute("select agent_id, reasoning_tokens, packet_id from memsub.reasoning_traces").fetchone()
        assert trace == ("extractor", 120, result["packet_id"])
        # The same envelope again is deduplicated: nothing fans out twice.
        again = write(conn, {"packet_type": "memory_write", "payload": PAYLOAD, "memory": MEMORY,
                             "confidence": {"score": 0.6}, "metadata": {"agent": "extractor"}})
        assert again["deduplicated"] is True and again["written"] == {}
        assert count(conn, "memsub.knowledge_facts") == 2


@pytest.mark.parametrize(("memory", "sqlstate", "column"), [
    ({"facts": [{"subject": "L9", "predicate": "uses", "object": "x"}, {"predicate": "uses", "object": "x"}]},
     "23502", "memory.facts[1].subject"),
    ({"facts": {"subject": "L9"}}, "22023", "memory.facts"),
    ({"relationships": [{"source_entity": "L9", "relationship_type": "uses", "target_entity": " "}]},
     "22023", "memory.relationships[0].target_entity"),
    ({"embeddings": [{"embedding_type": "content", "vector": [1.0, 2.0]}]}, "22023", "memory.embeddings[0].vector"),
    ({"embeddings": [{"embedding_type": "colour", "vector": [1.0] * 1536}]},
     "22023", "memory.embeddings[0].embedding_type"),
    ({"reasoning_trace": {"steps": {"not": "an array"}}}, "22023", "memory.reasoning_trace.steps"),
])
def test_a_bad_element_fails_the_whole_write(db, memory, sqlstate, column):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.Error) as caught:
            write(conn, {"packet_type": "memory_write", "payload": {"text": "t"},
                         "memory": {**memory, "relationships": memory.get("relationships", [
                             {"source_entity": "a", "relationship_type": "b", "target_entity": "c"}])}})
        assert caught.value.sqlstate == sqlstate
        assert caught.value.diag.column_name == column
    for table in ("packet_store", "knowledge_facts", "entity_relationships", "memory_embeddings",
                  "reasoning_traces"):
        assert superuser_count(db, f"memsub.{table}") == 0


def test_private_packets_cannot_publish_tenant_wide_knowledge(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, user=TENANT_A)
        with pytest.raises(psycopg.Error) as caught:
            write(conn, {"packet_type": "note", "scope": "l-private",
                         "payload": {},
                         "memory": {"facts": [{"subject": "me", "predicate": "likes", "object": "tea"}]}})
        assert caught.value.sqlstate == "22023"
        assert caught.value.diag.column_name == "memory.facts"
        conn.rollback()
        # Embeddings of a private packet are fine: they keep the packet's scope.
        set_context(conn, TENANT_A, user=TENANT_A)
        embedding = {"embedding_type": "content", "vector": json.loads(vec(1.0))}
        result = write(conn, {"packet_type": "note", "scope": "l-private", "payload": {},
                              "memory": {"embeddings": [embedding]}})
        assert result["written"]["memory_embeddings"] == 1
        scope = conn.execute("select scope, user_id from memsub.memory_embeddings").fetchone()
        assert scope == ("l-private", TENANT_A)


CORRELATION = uuid.UUID("aaaaaaaa-0000-4000-8000-00000000c0de")


def test_an_envelope_embedding_takes_the_packets_identity_scope_and_expiry(db):
    # The fan-out writes the embedding rows from the packet's own fields: each row carries what the stored
    # packet carries (organization, user, scope, expiry, correlation, session, trace).
    org = TENANT_A
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, org=org, user=TENANT_A)
        embedding = {"embedding_type": "content", "vector": json.loads(vec(1.0)), "chunk_index": 2,
                     "chunk_text": "second chunk", "metadata": {"source": "page 2"}}
        result = write(conn, {"packet_type": "note", "scope": "cursor", "payload": {},
                              "ttl": "2999-01-01T00:00:00Z", "session_id": "s-1", "trace_id": "t-1",
                              "correlation_id": str(CORRELATION),
                              "memory": {"embeddings": [embedding]}})
        packet = conn.execute("select org_id, user_id, scope, ttl, correlation_id, session_id, trace_id "
                              "from memsub.packet_store where packet_id = %s", [result["packet_id"]]).fetchone()
        row = conn.execute("select org_id, user_id, scope, ttl, correlation_id, session_id, trace_id, "
                           "embedding_type, chunk_index, chunk_text, metadata "
                           "from memsub.memory_embeddings where packet_id = %s", [result["packet_id"]]).fetchone()
        assert packet is not None and row is not None
        assert row[:7] == packet
        assert packet[:3] == (org, TENANT_A, "cursor") and packet[4:] == (CORRELATION, "s-1", "t-1")
        assert row[7:] == ("content", 2, "second chunk", {"source": "page 2"})
        assert conn.execute("select chunk_count, is_chunked from memsub.packet_store where packet_id = %s",
                            [result["packet_id"]]).fetchone() == (2, True)


@pytest.mark.parametrize(("element", "sqlstate", "column"), [
    ({"chunk_index": -1}, "22023", "memory.embeddings[0].chunk_index"),
    ({"chunk_index": "x"}, "22P02", "memory.embeddings[0]"),
    ({"metadata": ["not", "an", "object"]}, "22023", "memory.embeddings[0].metadata"),
    ({"embedding_type": None}, "23502", "memory.embeddings[0].embedding_type"),
    ({"vector": [1.0, "2"] + [0.0] * 1534}, "22023", "memory.embeddings[0].vector"),
    ({"vector": [0.0] * 1536}, "22023", "memory.embeddings[0].vector"),
    ({"vector": [1.0, 3.5e38] + [0.0] * 1534}, "22023", "memory.embeddings[0].vector"),
])
def test_a_bad_embedding_element_is_named_and_nothing_is_written(db, element, sqlstate, column):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        embedding = {"embedding_type": "content", "vector": json.loads(vec(1.0)), **element}
        with pytest.raises(psycopg.Error) as caught:
            write(conn, {"packet_type": "note", "payload": {}, "memory": {"embeddings": [embedding]}})
        assert (caught.value.sqlstate, caught.value.diag.column_name) == (sqlstate, column)
    assert superuser_count(db, "memsub.packet_store") == 0
    assert superuser_count(db, "memsub.memory_embeddings") == 0


def test_a_confidence_too_small_for_double_precision_fans_out_as_zero(db):
    """confidence.score 1e-400 is a number between 0 and 1, accepted as 0 by the envelope check; the facts it
    fans out to take 0 too, instead of failing with an unnamed 22003 (underflow) on the way."""
    envelope = json.dumps({"packet_type": "memory_write", "payload": PAYLOAD, "memory": MEMORY}
                          ).replace('"memory"', '"confidence": {"score": 1e-400}, "memory"', 1)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select * from memsub.write_packet(%s::jsonb)", [envelope])
        confidences = {row[0] for row in conn.execute("select confidence from memsub.knowledge_facts")}
    assert confidences == {0.0, 0.8}  # the envelope's 0 as the default, and one fact's own 0.8
