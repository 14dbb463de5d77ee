"""Catalog contract of seed 003: every field maps onto a column documented in docs/decisions.md, with its type;
the exclusion constraint, the latest pointer, row-level security and the functions' declarations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from doc_helpers import column_types
from session_helpers import ground_truth

DECISIONS = Path(__file__).resolve().parents[2] / "docs" / "decisions.md"
ROW = re.compile(r"^\| `([A-Za-z_.]+)` \| `(\w+)\.(\w+)` \| `([^`]+)` \|$")

# Every field of seed 003's schemas (nodes, edges, DocRefs, documents, chunks, vector and full-text items, the
# versioning rules). The storage tiers are not fields: docs/decisions.md says how PostgreSQL provides them.
SEED_003_FIELDS = {
    "Node.id", "Node.type", "Node.content", "Node.embedding", "Node.properties", "Node.created_at",
    "Node.updated_at", "Node.doc_refs", "Entity.entity_type", "Entity.aliases", "Episode.session_id",
    "Episode.timeline", "DocumentNode.mime", "DocumentNode.path", "DocumentNode.hash", "Memory.memory_type",
    "Memory.importance", "Memory.decay_state.last_access_ts", "Memory.decay_state.weight", "Edge.id", "Edge.src",
    "Edge.dst", "Edge.relation", "Edge.confidence", "Edge.valid_period", "Edge.evidence", "DocRef.doc_id",
    "DocRef.chunk_id", "DocRef.score", "Document.id", "Document.path", "Document.hash", "Document.mime",
    "Document.metadata", "Document.extracted_text", "Document.summary", "Document.key_concepts",
    "Document.entities", "Chunk.id", "Chunk.doc_id", "Chunk.content", "Chunk.position.page",
    "Chunk.position.start_char", "Chunk.position.end_char", "Chunk.embedding", "Chunk.neighbors",
    "VectorIndex.key", "VectorIndex.vector", "VectorIndex.payload", "FullText.id", "FullText.content",
    "FullText.timestamp", "Versioning.latest_pointer", "Versioning.version_chain",
    # Node.embedding of the node kinds that carry their own vector (since 2.13.0).
    "Entity.embedding", "Memory.embedding",
}


def _documented_mapping() -> dict[str, tuple[str, str, str]]:
    text = DECISIONS.read_text(encoding="utf-8")
    section = text.split("## Documentary memory and the temporal graph (seed 003", 1)[1]
    mapping = {}
    for line in section.splitlines():
        match = ROW.match(line.strip())
        if match:
            field, table, column, type_ = match.groups()
            mapping[field] = (table, column, type_)
    return mapping


def test_every_seed_003_field_has_a_documented_column_of_its_type(db):
    mapping = _documented_mapping()
    assert set(mapping) == SEED_003_FIELDS
    with db.connect() as conn:
        wrong = {}
        for field, (table, column, type_) in mapping.items():
            actual = column_types(conn, table).get(column)
            if actual != type_:
                wrong[field] = (f"{table}.{column}", type_, actual)
    assert wrong == {}, "seed field -> (column, documented type, actual type)"


def test_no_overlap_exclusion_constraint_and_latest_pointer(db):
    with db.connect() as conn:
        exclusion = conn.execute(
            "select pg_get_constraintdef(oid), condeferrable, condeferred from pg_constraint "
            "where conname = 'entity_relationships_no_overlapping_windows'").fetchone()
        latest = conn.execute("select pg_get_indexdef('memsub.idx_document_index_latest'::regclass)").fetchone()
        extension = conn.execute("select 1 from pg_extension where extname = 'btree_gist'").fetchone()
    # Entity names are compared in their matching form (source_key, target_key: memsub.normalize_text).
    assert exclusion == ("EXCLUDE USING gist (tenant_id WITH =, source_key WITH =, relationship_type WITH =, "
                         "target_key WITH =, valid_period WITH &&) DEFERRABLE", True, False)
    assert latest == ("CREATE UNIQUE INDEX idx_document_index_latest ON memsub.document_index USING btree "
                      "(tenant_id, file_path) WHERE is_latest",)
    assert extension == (1,)


def test_document_chunks_keys_policies_and_comments(db):
    facts = ground_truth(db, """
        select (select array_agg(pg_get_constraintdef(k.oid) order by k.conname) from pg_constraint k
                 where k.conrelid = 'memsub.document_chunks'::regclass and k.contype in ('p', 'u', 'f')) as keys,
               (select array_agg(policyname::text order by policyname) from pg_policies
                 where schemaname = 'memsub' and tablename = 'document_chunks') as policies,
               (select relrowsecurity and relforcerowsecurity from pg_class
                 where oid = 'memsub.document_chunks'::regclass) as forced,
               (select array_agg(a.attname::text) from pg_attribute a
                 where a.attrelid = 'memsub.document_chunks'::regclass and a.attnum > 0
                   and col_description(a.attrelid, a.attnum) is null) as uncommented""")[0]
    assert facts["keys"] == [
        "FOREIGN KEY (tenant_id, document_id) REFERENCES memsub.document_index(tenant_id, id)",
        "PRIMARY KEY (tenant_id, id)",
        "UNIQUE (tenant_id, document_id, chunk_index)",
    ]
    assert facts["policies"] == ["admin_override", "org_isolation", "tenant_isolation"]
    assert facts["forced"] is True and facts["uncommented"] is None


@pytest.mark.parametrize("prefix", ["document_", "_check_document", "_link_document", "temporal_", "close_rel",
                                    "supersede_rel", "edges_as_of", "graph_", "_check_doc_refs", "_merge_doc_refs",
                                    "_check_graph_node", "memory_remember", "memory_touch", "memory_maintenance",
                                    "memory_strength", "_check_half_life"])
def test_functions_are_documented_pinned_owned_and_not_public(db, prefix):
    functions = ground_truth(db, """
        select p.oid::regprocedure::text as name, obj_description(p.oid, 'pg_proc') as comment, p.proconfig,
               pg_get_userbyid(p.proowner) as owner, has_function_privilege('public', p.oid, 'execute') as public
          from pg_proc p where p.pronamespace = 'memsub'::regnamespace and p.proname like %s""", [prefix + "%"])
    assert functions, prefix
    for function in functions:
        assert function["comment"], function["name"]
        assert any(c.startswith("search_path=") for c in function["proconfig"] or []), function["name"]
        assert function["owner"] == "memsub_owner" and not function["public"], function["name"]
