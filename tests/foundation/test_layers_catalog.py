"""Catalog contract: seed 000, table by table: every table and column with its type, the named indexes of the
right kind, the four materialized views with their columns, and the refresh procedure."""

from __future__ import annotations

from typing import Any, get_args

from memsub.search import EmbeddingType

T, TZ, TS, U, J = "text", "timestamp with time zone", "timestamp without time zone", "uuid", "jsonb"
F, N, B = "double precision", "integer", "boolean"
V = "vector(1536)"
TENANT_COLS = {"tenant_id": U, "org_id": U, "user_id": U}
MULTI_TENANT = {**TENANT_COLS, "correlation_id": U, "session_id": T, "trace_id": T}

SEED_TABLES: dict[str, dict[str, str]] = {
    "packet_store": {
        "packet_id": U, "packet_type": T, "envelope": J, "timestamp": TZ, "routing": J, "provenance": J,
        "thread_id": U, "parent_ids": "uuid[]", "tags": "text[]", "ttl": TS,
        "scope": T, "importance_score": F, "access_count": N, "last_accessed": TZ, "contradiction_count": N,
        "content_hash": T, "chunk_count": N, "is_chunked": B, **MULTI_TENANT},
    "agent_memory_events": {
        "event_id": U, "agent_id": T, "timestamp": TZ, "packet_id": U, "event_type": T, "content": J,
        **MULTI_TENANT},
    "reasoning_traces": {
        "trace_id": U, "agent_id": T, "packet_id": U, "steps": J, "extracted_features": J, "inference_steps": J,
        "reasoning_tokens": N, "decision_tokens": N, "confidence_scores": J,
        # trace_id is the key here; the tracing column is distributed_trace_id (docs/decisions.md)
        **TENANT_COLS, "correlation_id": U, "session_id": T, "distributed_trace_id": T},
    "knowledge_facts": {
        "fact_id": U, "subject": T, "predicate": T, "object": J, "confidence": F, "source_packet": U,
        "subject_normalized": T, "object_normalized": T, "supporting_packet_count": N, "contradiction_count": N,
        "access_count": N, **MULTI_TENANT},
    "semantic_memory": {
        "embedding_id": U, "agent_id": T, "vector": V, "payload": J, "importance_score": F, "access_count": N,
        "embedding_type": T, "scope": T, **MULTI_TENANT},
    "memory_embeddings": {
        "embedding_id": U, "packet_id": U, "embedding_type": T, "vector": V, "chunk_index": N, "chunk_text": T,
        "metadata": J, **MULTI_TENANT},
    "entity_relationships": {
        "relationship_id": U, "source_entity": T, "relationship_type": T, "target_entity": T, "confidence": F,
        "source_packet": U, "mention_count": N, "first_seen": TZ, "last_seen": TZ, **MULTI_TENANT},
    "world_model_entities": {
        "entity_id": T, "entity_type": T, "attributes": J, "confidence": F, "version": N, "created_at": TS,
        "updated_at": TS, **TENANT_COLS},
    "world_model_updates": {
        "update_id": U, "insight_id": U, "insight_type": T, "entities": J, "content": J, "confidence": F,
        "applied_at": TS, "state_version_before": N, "state_version_after": N, **TENANT_COLS},
    "world_model_snapshots": {
        "snapshot_id": U, "snapshot": J, "state_version": N, "entity_count": N, "relation_count": N,
        "description": T, "created_by": T, "created_at": TS, **TENANT_COLS},
    "reflection_store": {
        "reflection_id": U, "task_id": T, "reflection_type": T, "content": T, "context": T, "entities": "text[]",
        "tags": "text[]", "confidence": F, "priority": T, "source_agent": T, "source_packet": U,
        "access_count": N, "vector": V, "expires_at": TZ, **MULTI_TENANT},
    "task_reflections": {
        "id": U, "task_id": T, "task_description": T, "outcome": T, "what_worked": "text[]",
        "what_failed": "text[]", "false_constraints": "text[]", "helpful_patterns": "text[]", "lessons": "text[]",
        "recommendations": "text[]", "related_decisions": "uuid[]", "execution_time_ms": F,
        "metrics_improved": J, "metrics_degraded": J, **MULTI_TENANT},
    "memory_summaries": {
        "summary_id": U, "scope_type": T, "scope_value": T, "summary_text": T, "key_facts": J,
        "key_entities": "text[]", "key_decisions": "text[]", "source_packet_ids": "uuid[]", "packet_count": N,
        "vector": V, "confidence": F, "coverage_start": TZ, "coverage_end": TZ, "valid_until": TZ,
        **MULTI_TENANT},
    "memory_access_log": {
        "access_id": U, "target_type": T, "target_id": U, "agent_id": T, "access_context": T, "query_text": T,
        "relevance_score": F, "was_useful": B, "feedback_reason": T, "accessed_at": TZ, **MULTI_TENANT},
}

# The seed's primary keys, each led by tenant_id.
PRIMARY_KEYS = {
    "agent_memory_events": "event_id", "reasoning_traces": "trace_id", "knowledge_facts": "fact_id",
    "semantic_memory": "embedding_id", "memory_embeddings": "embedding_id", "entity_relationships": "relationship_id",
    "world_model_entities": "entity_id", "world_model_updates": "update_id", "world_model_snapshots": "snapshot_id",
    "reflection_store": "reflection_id", "task_reflections": "id", "memory_summaries": "summary_id",
    "memory_access_log": "access_id",
}
PACKET_FOREIGN_KEYS = {
    "agent_memory_events": "packet_id", "reasoning_traces": "packet_id", "knowledge_facts": "source_packet",
    "memory_embeddings": "packet_id", "entity_relationships": "source_packet", "reflection_store": "source_packet",
}

SEED_VIEWS = {
    "mv_agent_recent_important": ["agent_id", "packet_id", "packet_type", "timestamp", "importance_score",
                                  "access_count", "tags", "scope", "combined_score"],
    "mv_entity_graph": ["source_entity", "relationship_type", "target_entity", "total_mentions", "max_confidence",
                        "avg_confidence", "last_seen", "relationship_count"],
    "mv_high_confidence_facts": ["fact_id", "subject", "subject_normalized", "predicate", "object", "confidence",
                                 "supporting_packet_count", "access_count", "combined_score"],
    "mv_reflection_patterns": ["reflection_type", "count", "avg_confidence", "all_tags", "latest"],
}


def _columns(conn: Any, relation: str) -> dict[str, str]:
    return dict(conn.execute(
        "select attname, format_type(atttypid, atttypmod) from pg_attribute "
        "where attrelid = %s::regclass and attnum > 0 and not attisdropped", [f"memsub.{relation}"]).fetchall())


def test_every_seed_table_has_every_column_with_its_type(db):
    with db.connect() as conn:
        for table, expected in SEED_TABLES.items():
            actual = _columns(conn, table)
            wrong = {c: (t, actual.get(c)) for c, t in expected.items() if actual.get(c) != t}
            assert wrong == {}, f"memsub.{table}: column -> (seed type, actual type)"


def test_keys_lead_with_tenant_and_packets_are_referenced_by_composite_keys(db):
    with db.connect() as conn:
        for table, key in PRIMARY_KEYS.items():
            definition = conn.execute(
                "select pg_get_constraintdef(oid) from pg_constraint where conrelid = %s::regclass and contype = 'p'",
                [f"memsub.{table}"]).fetchone()
            assert definition == (f"PRIMARY KEY (tenant_id, {key})",), table
        for table, column in PACKET_FOREIGN_KEYS.items():
            definitions = [r[0] for r in conn.execute(
                "select pg_get_constraintdef(oid) from pg_constraint where conrelid = %s::regclass and contype = 'f'",
                [f"memsub.{table}"])]
            assert any(d.startswith(f"FOREIGN KEY (tenant_id, {column}) REFERENCES memsub.packet_store"
                                    "(tenant_id, packet_id)") for d in definitions), (table, definitions)
        unique = conn.execute(
            "select pg_get_constraintdef(oid) from pg_constraint "
            "where conrelid = 'memsub.task_reflections'::regclass and contype = 'u'").fetchall()
        assert unique == [("UNIQUE (tenant_id, task_id)",)]


def test_named_indexes_have_the_seed_kind(db):
    with db.connect() as conn:
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()
        assert dimension is not None
        # Each vector scaled to length 1, in half precision, compared by inner product (2.35.0).
        key = f"((l2_normalize(vector))::halfvec({dimension[0]})) halfvec_ip_ops"
        for space in get_args(EmbeddingType):
            definition = conn.execute(
                "select replace(pg_get_indexdef(%s::regclass), 'public.', '')",
                [f"memsub.idx_embeddings_vector_{space}"]).fetchone()
            # Partitioned (memory_embeddings is partitioned by tenant): one graph per partition, attached to it.
            assert definition == (
                f"CREATE INDEX idx_embeddings_vector_{space} ON ONLY memsub.memory_embeddings USING hnsw "
                f"({key}) WHERE (embedding_type = '{space}'::text)",)
            parts = conn.execute(
                "select replace(pg_get_indexdef(h.inhrelid), 'public.', '') from pg_inherits h "
                "where h.inhparent = %s::regclass "
                "order by 1", [f"memsub.idx_embeddings_vector_{space}"]).fetchall()
            assert [p[0] for p in parts] == [
                f"CREATE INDEX idx_embeddings_vector_{space}_p{n:02d} ON memsub.memory_embeddings_p{n:02d} "
                f"USING hnsw ({key}) WHERE (embedding_type = '{space}'::text)" for n in range(16)]
        edge = conn.execute("select pg_get_indexdef('memsub.idx_entity_relationships_edge'::regclass)").fetchone()
        # The seed's unique edge key, held by the current (open) validity window of each edge since 2.5.0, on
        # the normalized entity names since 2.13.0 (one name rule for functions and views).
        assert edge == ("CREATE UNIQUE INDEX idx_entity_relationships_edge ON memsub.entity_relationships "
                        "USING btree (tenant_id, source_key, relationship_type, target_key) "
                        "WHERE upper_inf(valid_period)",)
        semantic = conn.execute("select pg_get_indexdef('memsub.idx_semantic_memory_vector'::regclass)").fetchone()
        assert semantic is not None and "USING hnsw (vector vector_cosine_ops)" in semantic[0]


def test_views_and_the_refresh_procedure_exist(db):
    with db.connect() as conn:
        for view, seed_columns in SEED_VIEWS.items():
            kind = conn.execute("select relkind from pg_class where oid = %s::regclass", [f"memsub.{view}"]).fetchone()
            assert kind == ("m",)
            columns = list(_columns(conn, view))
            assert columns[-len(seed_columns):] == seed_columns, view
            assert columns[0] == "tenant_id"
            # a unique index without predicate or expressions, so the view refreshes CONCURRENTLY
            unique = conn.execute(
                "select count(*) from pg_index where indrelid = %s::regclass and indisunique "
                "and indpred is null and indexprs is null", [f"memsub.{view}"]).fetchone()
            assert unique == (1,), view
            tenant_view = conn.execute("select reloptions from pg_class where oid = %s::regclass",
                                       [f"memsub.tenant_{view.removeprefix('mv_')}"]).fetchone()
            assert tenant_view == (["security_barrier=true"],)
        procedure = conn.execute("select prokind from pg_proc where oid = 'memsub.refresh_memory_views'::regproc")
        assert procedure.fetchone() == ("p",)


def test_every_layer_object_is_commented(db):
    with db.connect() as conn:
        missing = conn.execute(
            "select c.relname from pg_class c where c.relnamespace = 'memsub'::regnamespace "
            "and c.relkind in ('r', 'p', 'v', 'm') and obj_description(c.oid, 'pg_class') is null "
            "union all "
            # A partition's columns are its table's, described there (\\d+ memsub.memory_embeddings).
            "select c.relname || '.' || a.attname from pg_class c join pg_attribute a on a.attrelid = c.oid "
            "where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p', 'v', 'm') "
            "and not c.relispartition and a.attnum > 0 "
            "and not a.attisdropped and col_description(c.oid, a.attnum) is null "
            "union all "
            "select p.proname from pg_proc p where p.pronamespace = 'memsub'::regnamespace "
            "and obj_description(p.oid, 'pg_proc') is null").fetchall()
        assert missing == []
