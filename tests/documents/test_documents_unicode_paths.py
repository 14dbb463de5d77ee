"""Document paths in either Unicode composition: a file named on macOS (NFD, a letter and a combining accent) and
the same file named on Linux (NFC, one character) are one document, stored under the composed (NFC) path."""

from __future__ import annotations

import hashlib
import unicodedata
from pathlib import Path

from click.testing import CliRunner

from memsub.cli import main

from doc_helpers import WordEmbedder, tenant_session, vector_text
from helpers import TENANT_A, set_context
from session_helpers import ground_truth, rows

COMPOSED = unicodedata.normalize("NFC", "notes/café.md")
DECOMPOSED = unicodedata.normalize("NFD", "notes/café.md")
assert COMPOSED != DECOMPOSED


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _stored_paths(db) -> dict[str, list[str]]:
    """Every stored spelling of a document path: the index, the chunk vectors' metadata, the document packets."""
    return {
        "index": [r["p"] for r in ground_truth(db, "select distinct file_path as p from memsub.document_index "
                                                   "order by 1")],
        "vectors": [r["p"] for r in ground_truth(db, "select distinct metadata ->> 'file_path' as p "
                                                     "from memsub.memory_embeddings order by 1")],
        "packets": [r["p"] for r in ground_truth(db, "select distinct envelope -> 'payload' ->> 'file_path' as p "
                                                     "from memsub.packet_store where packet_type = 'document' "
                                                     "order by 1")],
    }


def test_a_path_in_either_unicode_composition_is_one_document(db):
    embedder = WordEmbedder()
    with tenant_session(db.dsn("app")) as session:
        other = session.documents.ingest("notes/other.md", "pgvector hnsw index cosine distance\n",
                                         file_hash=_sha("other"), mime="md", embedder=embedder)
        first = session.documents.ingest(DECOMPOSED, "pgvector hnsw index cosine distance, first\n",
                                         file_hash=_sha("first"), mime="md", embedder=embedder)
    assert first.file_path == COMPOSED
    with tenant_session(db.dsn("app")) as session:
        second = session.documents.ingest(COMPOSED, "pgvector hnsw index cosine distance, second\n",
                                          file_hash=_sha("second"), mime="md", embedder=embedder)
        calls = embedder.calls
        again = session.documents.ingest(DECOMPOSED, "pgvector hnsw index cosine distance, second\n",
                                         file_hash=_sha("second"), mime="md", embedder=embedder)
        by_decomposed = session.documents.versions(DECOMPOSED)
        by_composed = session.documents.versions(COMPOSED)
        neighbours = session.documents.chunks_of(other.document_id)[0].neighbors
        first_chunks = {c.id for c in session.documents.chunks_of(first.document_id)}
        second_chunks = {c.id for c in session.documents.chunks_of(second.document_id)}
    # The second spelling supersedes the first: one version chain, one latest version.
    assert (second.status, second.version, second.previous_id) == ("new_version", 2, first.document_id)
    assert (again.status, again.document_id) == ("unchanged", second.document_id)
    assert embedder.calls == calls, "the same bytes under the other spelling are not embedded again"
    assert [(d.id, d.is_latest) for d in by_decomposed] == [(second.document_id, True), (first.document_id, False)]
    assert by_composed == by_decomposed
    assert {d.file_path for d in by_composed} == {COMPOSED}
    # The superseded version left the neighbour lists and the vector index: search finds the latest version only.
    assert neighbours == sorted(second_chunks) and not first_chunks & set(neighbours)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        hits = rows(conn, "select packet_id from memsub.hybrid_search('cosine distance', %s::vector, 10)",
                    [vector_text(embedder.vector("pgvector hnsw index cosine distance"))])
    assert {h["packet_id"] for h in hits} == {other.packet_id, second.packet_id}
    assert _stored_paths(db) == {"index": sorted([COMPOSED, "notes/other.md"]),
                                 "vectors": sorted([COMPOSED, "notes/other.md"]),
                                 "packets": sorted([COMPOSED, "notes/other.md"])}


def test_the_document_index_reads_and_writes_either_spelling_as_one_path(db):
    with db.connect("app") as conn:
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
        unit = [1.0] + [0.0] * (dimension - 1)
        set_context(conn, TENANT_A)
        put = rows(conn, "select id, file_path from memsub.document_index_put(%s, %s::float8[], '{\"v\": 1}')",
                   [DECOMPOSED, unit])
        set_context(conn, TENANT_A)
        again = rows(conn, "select id, file_path from memsub.document_index_put(%s, null, '{\"v\": 2}')",
                     [COMPOSED])
        set_context(conn, TENANT_A)
        got = rows(conn, "select id, file_path, metadata from memsub.document_index_get(%s)", [DECOMPOSED])
        conn.commit()
    assert put[0]["file_path"] == COMPOSED and again == put
    assert got == [{"id": put[0]["id"], "file_path": COMPOSED, "metadata": {"v": 2}}]
    with tenant_session(db.dsn("app")) as session:
        ingested = session.documents.ingest(DECOMPOSED, "café notes", file_hash=_sha("notes"), mime="md")
    assert (ingested.status, ingested.version, ingested.previous_id) == ("new_version", 2, put[0]["id"])
    assert _stored_paths(db)["index"] == [COMPOSED]


def test_ingest_command_stores_a_file_named_in_either_composition_under_one_path(db, tmp_path):
    """A Linux file system keeps names as bytes: café.md named both ways are two files there, and one document."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / unicodedata.normalize("NFD", "café.md")).write_text("written on macOS\n", encoding="utf-8")
    (folder / unicodedata.normalize("NFC", "café.md")).write_text("written on Linux\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["ingest", str(folder), "--dsn", db.dsn("app"), "--tenant", str(TENANT_A)])
    assert result.exit_code == 0, result.output
    assert "1 created, 1 new version(s), 0 unchanged, 0 failed" in result.stdout
    stored = ground_truth(db, "select file_path, version, is_latest from memsub.document_index order by version")
    path = unicodedata.normalize("NFC", Path(folder / "café.md").as_posix())
    assert [(r["file_path"], r["version"], r["is_latest"]) for r in stored] == [(path, 1, False), (path, 2, True)]
