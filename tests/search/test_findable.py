"""Everything written can be found: document chunks by text, late chunk embedding, packet chunk counts, and
vectors plus full text for namespaced memory and graph entities, as ordinary application logins."""

from __future__ import annotations

import json
import unicodedata

import pytest
from click.testing import CliRunner

from memsub import documents
from memsub.cli import main
from memsub.embedding import HashingEmbedder
from memsub.errors import MemsubError

from doc_helpers import DIMENSION, WordEmbedder, tenant_session
from helpers import TENANT_A, TENANT_B
from session_helpers import ALICE, BOB, as_user, expect_error, ground_truth

TEXT = ("# Field notes\n\nThe zanzibar quokka is a fictional animal.\n\n"
        + "Filler paragraph about logistics and shipping routes. " * 30
        + "\n\nAnother section about pellet suppliers in Stockton. " * 20)


def _ingest(session, embedder=None, path="notes/field.md"):
    return session.documents.ingest(path, TEXT, file_hash=documents.sha256_hex(TEXT.encode()), mime="md",
                                    embedder=embedder, max_chars=600)


def test_hybrid_search_finds_a_chunk_stored_without_a_vector_by_its_words(db):
    with tenant_session(db.dsn("app")) as session:
        result = _ingest(session)
    assert result.chunk_count >= 3 and result.embedded_count == 0
    with tenant_session(db.dsn("app")) as session:
        hits = session.search.hybrid("zanzibar quokka", None, k=5)
    assert len(hits) == 1
    assert hits[0].embedding_id is None and hits[0].packet_id == result.packet_id
    assert "zanzibar quokka" in (hits[0].chunk_text or "") and hits[0].text_rank == 1
    with tenant_session(db.dsn("app"), TENANT_B) as session:
        assert session.search.hybrid("zanzibar quokka", None, k=5) == []  # another tenant finds nothing

    out = CliRunner().invoke(main, ["search", "zanzibar quokka", "--dsn", db.dsn("app"), "--tenant", str(TENANT_A),
                                    "--mode", "hybrid", "--embedder", "hashing", "--json"])
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 1 and "zanzibar quokka" in rows[0]["chunk_text"]


def test_ingest_with_an_embedder_embeds_the_chunks_stored_without_vectors(db):
    with tenant_session(db.dsn("app")) as session:
        first = _ingest(session)
    embedder = WordEmbedder()
    with tenant_session(db.dsn("app")) as session:
        again = _ingest(session, embedder)
    assert again.status == "unchanged" and again.document_id == first.document_id
    assert again.embedded_count == first.chunk_count and embedder.calls == 1
    with tenant_session(db.dsn("app")) as session:
        third = _ingest(session, embedder)  # nothing left to embed: no embedding call
        hits = session.search.hybrid("zanzibar quokka", embedder.vector("zanzibar quokka"), k=3)
    assert third.embedded_count == first.chunk_count and embedder.calls == 1
    assert hits[0].embedding_id is not None and "zanzibar quokka" in (hits[0].chunk_text or "")
    assert hits[0].vector_rank == 1 and hits[0].text_rank == 1
    assert ground_truth(db, "select count(*) as n from memsub.memory_embeddings where packet_id = %s "
                            "and chunk_index >= 1", [first.packet_id]) == [{"n": first.chunk_count}]


def test_words_match_whichever_unicode_composition_the_text_or_the_query_was_typed_in(db):
    """An accented letter typed as one character (NFC) or as a letter and a combining accent (NFD, as macOS file
    names and some text extractors give it) is the same word for every text leg: document chunks with and
    without vectors, and memory entries, whichever form the text was stored in and the query typed in."""
    composed, decomposed = (lambda text: unicodedata.normalize("NFC", text),
                            lambda text: unicodedata.normalize("NFD", text))
    embedder = WordEmbedder()
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        plain = session.documents.ingest("notes/brulee.md", decomposed("Crème brûlée at the Café Zoë."),
                                         file_hash=documents.sha256_hex(b"1"), mime="md")
        embedded = session.documents.ingest("notes/smorgas.md", composed("Smörgåsbord in Malmö."),
                                            file_hash=documents.sha256_hex(b"2"), mime="md", embedder=embedder)
        session.memory.write(f"user:{ALICE}:notes", "dessert", {"text": decomposed("crème brûlée, twice")})
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        chunk = session.search.hybrid(composed("crème brûlée"), None, k=5)
        vectored = session.search.hybrid(decomposed("smörgåsbord malmö"), None, k=5)
        memory = session.memory.search(composed("Crème"), k=5)
    assert [(h.packet_id, h.text_rank) for h in chunk] == [(plain.packet_id, 1)]
    assert [(h.packet_id, h.text_rank) for h in vectored] == [(embedded.packet_id, 1)]
    assert [vectored[0].embedding_id is not None, [h.key for h in memory]] == [True, ["dessert"]]


def test_packet_chunk_count_and_is_chunked_follow_the_document(db):
    with tenant_session(db.dsn("app")) as session:
        result = _ingest(session, WordEmbedder())
        plain = session.packets.write({"packet_type": "event", "payload": {"text": "one piece"}})
    packet = ground_truth(db, "select chunk_count, is_chunked from memsub.packet_store where packet_id = %s",
                          [result.packet_id])
    assert packet == [{"chunk_count": result.chunk_count, "is_chunked": True}] and result.chunk_count >= 3
    other = ground_truth(db, "select chunk_count, is_chunked from memsub.packet_store where packet_id = %s",
                         [plain.packet_id])
    assert other == [{"chunk_count": 0, "is_chunked": False}]


def test_memory_entries_carry_vectors_and_are_found_by_meaning_and_words_under_row_security(db):
    embedder = WordEmbedder()
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        session.memory.write(f"user:{ALICE}:preferences", "drink",
                             {"text": "prefers green tea in the morning"}, embedder=embedder)
        session.memory.write(f"user:{ALICE}:preferences", "style", {"text": "concise technical answers"},
                             embedder=embedder)
        session.memory.write(f"user:{ALICE}:notes", "plain", {"text": "no vector here, about tea"})
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        by_meaning = session.memory.search(None, embedder.vector("green tea"), k=2)
        by_words = session.memory.search("tea", k=5)
        both = session.memory.search("morning tea", embedder=embedder, k=1)
        scoped = session.memory.search("tea", k=5, namespace_prefix=f"user:{ALICE}:notes")
    assert by_meaning[0].key == "drink" and by_meaning[0].vector_rank == 1
    assert sorted(h.key for h in by_words) == ["drink", "plain"]
    assert [h.key for h in both] == ["drink"]
    assert [h.key for h in scoped] == ["plain"]
    stored = ground_truth(db, "select key, embedding is not null as has_vector from memsub.memory_entries order by key")
    assert stored == [{"key": "drink", "has_vector": True}, {"key": "plain", "has_vector": False},
                      {"key": "style", "has_vector": True}]
    # Another user of the tenant does not see Alice's user: namespace; another tenant sees nothing.
    other_user = BOB
    with tenant_session(db.dsn("app"), user=other_user) as session:
        assert session.memory.search("tea", embedder.vector("green tea"), k=5) == []
    with tenant_session(db.dsn("app"), TENANT_B, user=ALICE) as session:
        assert session.memory.search("tea", embedder.vector("green tea"), k=5) == []


def test_a_newer_version_replaces_the_older_in_memory_search(db):
    embedder = WordEmbedder()
    namespace = f"user:{ALICE}:preferences"
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        first = session.memory.write(namespace, "drink", {"text": "coffee"}, embedder=embedder)
        session.memory.write(namespace, "drink", {"text": "tea"}, expected_version=first.version,
                             embedder=embedder)
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        by_old_words = session.memory.search("coffee", k=5)
        by_vector = session.memory.search(None, embedder.vector("coffee"), k=5)
        by_new_words = session.memory.search("tea", k=5)
    assert by_old_words == []
    assert [(h.key, h.version) for h in by_vector] == [("drink", 2)]
    assert [(h.key, h.version) for h in by_new_words] == [("drink", 2)]


def test_graph_entities_carry_vectors_and_are_found_by_meaning_and_name(db):
    embedder = HashingEmbedder(DIMENSION)
    with tenant_session(db.dsn("app")) as session:
        session.graph.upsert_entity("Alice Smith", "Person", aliases=["Al"], embedder=embedder)
        session.graph.upsert_entity("Acme Corporation", "Organization", embedder=embedder)
        session.graph.upsert_entity("Berlin", "Location")
    with tenant_session(db.dsn("app")) as session:
        by_alias = session.graph.entity_search("al", k=3)
        by_meaning = session.graph.entity_search(None, embedder.embed(["Acme Corporation"])[0], k=1)
        by_name = session.graph.entity_search("berlin", k=3)
    assert [e.entity_id for e in by_alias] == ["Alice Smith"]
    assert [e.entity_id for e in by_meaning] == ["Acme Corporation"] and by_meaning[0].vector_rank == 1
    assert [e.entity_id for e in by_name] == ["Berlin"]
    with tenant_session(db.dsn("app"), TENANT_B) as session:
        assert session.graph.entity_search("berlin", embedder.embed(["Berlin"])[0], k=3) == []


def test_vectors_of_the_wrong_shape_are_refused_naming_the_field(db):
    with tenant_session(db.dsn("app")) as session:
        document = _ingest(session)
    with db.connect("app") as conn:
        for query, params, column in [
                ("select memsub.document_embed_chunks(%s, '[{\"chunk_index\": 1, \"embedding\": [1, 2]}]')",
                 [document.document_id], "embeddings[0].embedding"),
                ("select memsub.document_embed_chunks(%s, jsonb_build_array(jsonb_build_object("
                 "'chunk_index', 99, 'embedding', array_fill(0.1, array[%s]))))",
                 [document.document_id, DIMENSION], "embeddings[0].chunk_index"),
                ("select memsub.document_embed_chunks(%s, '[{\"embedding\": [1]}]')", [document.document_id],
                 "embeddings[0]"),
                ("select memsub.memory_write(%s, 'k', '1', p_embedding => '[1,2,3]')", [f"user:{ALICE}:notes"],
                 "embedding")]:
            as_user(conn, ALICE, None)
            expect_error(conn, "22023", column, query, params)
    assert ground_truth(db, "select count(*) as n from memsub.memory_entries") == [{"n": 0}]
    assert ground_truth(db, "select count(*) as n from memsub.memory_embeddings") == [{"n": 0}]


def test_memory_search_takes_a_namespace_prefix_by_whole_segments_as_memory_list_does(db):
    """project:foo covers project:foo and project:foo:sub, never project:foobar; a prefix that is no namespace is
    refused as memory_list refuses it (22023 naming namespace)."""
    with tenant_session(db.dsn("tenant_admin"), roles=["tenant_admin"]) as session:
        for namespace in ("project:foo", "project:foo:sub", "project:foobar"):
            session.memory.write(namespace, "fruit", {"text": "apple"})
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        found = sorted(h.namespace for h in session.memory.search("apple", k=10, namespace_prefix="project:foo"))
        listed = sorted(e.namespace for e in session.memory.list("project:foo"))
    assert found == listed == ["project:foo", "project:foo:sub"]
    for prefix in ("", "project:%", "project:foo:"):
        with pytest.raises(MemsubError) as refused, tenant_session(db.dsn("app"), user=ALICE) as session:
            session.memory.search("apple", k=10, namespace_prefix=prefix)
        assert (refused.value.sqlstate, refused.value.field) == ("22023", "namespace"), prefix
