"""Documentary memory: idempotent ingest, version chains, chunk positions, chunk vectors and neighbours, the CLI."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from memsub import documents, exit_codes
from memsub.cli import main
from memsub.errors import InvalidInput

from doc_helpers import WordEmbedder, tenant_session, vector_text
from helpers import TENANT_A, function_calls, set_context, track_function_calls
from layer_helpers import vec
from session_helpers import expect_error, ground_truth, rows

ROOT = Path(__file__).resolve().parents[2]

DESIGN = """# Memory substrate

PostgreSQL keeps the packets, the layers and the documents of every tenant.

## Vectors

pgvector stores the embeddings of chunks in memory_embeddings; HNSW indexes them per embedding type.

## Full text

Chunks carry a tsvector so keyword search finds them too.
"""


def _stored(db, file_path: str) -> dict[str, int]:
    """Ground truth counts for one path: versions, chunks, chunk vectors, document packets, ingest audit rows."""
    return ground_truth(db, """
        select (select count(*) from memsub.document_index where file_path = %s) as versions,
               (select count(*) from memsub.document_chunks c join memsub.document_index d on d.id = c.document_id
                 where d.file_path = %s) as chunks,
               (select count(*) from memsub.memory_embeddings e
                  join memsub.document_index d on d.packet_id = e.packet_id
                 where d.file_path = %s and e.chunk_index >= 1) as vectors,
               (select count(*) from memsub.packet_store where packet_type = 'document'
                 and envelope -> 'payload' ->> 'file_path' = %s) as packets,
               (select count(*) from memsub.audit where operation = 'document_ingest'
                 and details ->> 'file_path' = %s) as audits""", [file_path] * 5)[0]


def test_reingesting_the_same_file_changes_nothing(db, tmp_path):
    path = tmp_path / "design.md"
    path.write_text(DESIGN, encoding="utf-8")
    embedder = WordEmbedder()
    with tenant_session(db.dsn("app")) as session:
        first = session.documents.ingest_file(path, file_path="docs/design.md", embedder=embedder, max_chars=120)
    assert first.status == "created" and first.version == 1 and first.previous_id is None
    assert first.chunk_count > 1 and first.embedded_count == first.chunk_count
    before = _stored(db, "docs/design.md")
    assert before == {"versions": 1, "chunks": first.chunk_count, "vectors": first.chunk_count, "packets": 1,
                      "audits": 1}

    calls = embedder.calls
    with tenant_session(db.dsn("app")) as session:  # the path as a string, as it is often given
        again = session.documents.ingest_file(str(path), file_path="docs/design.md", embedder=embedder,
                                              max_chars=120)
    assert again.status == "unchanged"
    assert (again.document_id, again.version, again.chunk_count) == (first.document_id, 1, first.chunk_count)
    assert _stored(db, "docs/design.md") == before
    assert embedder.calls == calls, "an unchanged file is not embedded again"


def test_a_changed_file_is_a_new_version_chained_by_hash_and_rechunked(db, tmp_path):
    path = tmp_path / "design.md"
    path.write_text(DESIGN, encoding="utf-8")
    with tenant_session(db.dsn("app")) as session:
        v1 = session.documents.ingest_file(path, file_path="design.md", embedder=WordEmbedder(), max_chars=120)
    path.write_text(DESIGN + "\n## Temporal graph\n\nEdges carry validity windows that never overlap.\n",
                    encoding="utf-8")
    with tenant_session(db.dsn("app")) as session:
        v2 = session.documents.ingest_file(path, file_path="design.md", embedder=WordEmbedder(), max_chars=120)
        chain = session.documents.versions("design.md")
        old_chunks = session.documents.chunks_of(v1.document_id)
        new_chunks = session.documents.chunks_of(v2.document_id)
    assert v2.status == "new_version" and v2.version == 2 and v2.previous_id == v1.document_id
    assert v2.hash != v1.hash and v2.packet_id != v1.packet_id
    assert [(d.version, d.is_latest) for d in chain] == [(2, True), (1, False)]
    assert chain[1].superseded_at is not None and chain[0].superseded_at is None
    assert chain[0].key_concepts == ["Memory substrate", "Vectors", "Full text", "Temporal graph"]
    assert chain[0].summary and chain[0].summary.startswith("PostgreSQL keeps the packets")
    # The old version keeps its chunks (evidence may point at them) but its vectors left the index.
    assert len(old_chunks) == v1.chunk_count and len(new_chunks) == v2.chunk_count
    assert any("Temporal graph" in c.content for c in new_chunks)
    vectors = ground_truth(db, "select packet_id, count(*) as n from memsub.memory_embeddings "
                               "where chunk_index >= 1 group by packet_id")
    assert {(r["packet_id"], r["n"]) for r in vectors} == {(v2.packet_id, v2.chunk_count)}

    # Going back to the first content is a third version (the chain is by hash, never rewritten).
    path.write_text(DESIGN, encoding="utf-8")
    with tenant_session(db.dsn("app")) as session:
        v3 = session.documents.ingest_file(path, file_path="design.md", max_chars=120)
        latest = session.documents.versions("design.md")[0]
    assert (v3.status, v3.version, v3.previous_id, v3.hash) == ("new_version", 3, v2.document_id, v1.hash)
    assert latest.id == v3.document_id and v3.embedded_count == 0
    unique_latest = ground_truth(db, "select count(*) as n from memsub.document_index "
                                     "where file_path = 'design.md' and is_latest")
    assert unique_latest == [{"n": 1}]


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab \n\n\t.é"), max_size=400), max_chars=st.integers(2, 60))
def test_chunk_spans_are_contiguous_bounded_and_cover_the_text(text, max_chars):
    spans = documents.chunk_spans(text, max_chars)
    assert "".join(text[s.start:s.end] for s in spans) == text
    assert all(0 < s.end - s.start <= max_chars for s in spans)
    assert all(a.end == b.start for a, b in itertools.pairwise(spans))


def test_stored_chunk_positions_cover_the_extracted_text(db):
    text = DESIGN * 3
    spans = documents.chunk_spans(text, 90)
    with tenant_session(db.dsn("app")) as session:
        result = session.documents.ingest("notes.txt", text, file_hash="a" * 64, mime="txt", spans=spans)
        chunks = session.documents.chunks_of(result.document_id)
    assert [c.chunk_index for c in chunks] == list(range(1, len(spans) + 1))
    assert chunks[0].start_char == 0 and chunks[-1].end_char == len(text)
    assert all(a.end_char == b.start_char for a, b in itertools.pairwise(chunks))
    assert all(c.content == text[c.start_char:c.end_char] for c in chunks)
    stored = ground_truth(db, "select extracted_text from memsub.document_index where id = %s", [result.document_id])
    assert stored == [{"extracted_text": text}]


def test_ingest_rejects_chunks_that_do_not_cover_the_text(db):
    good_vector = json.dumps(WordEmbedder().vector("x"))
    cases = [
        ('[{"start_char": 0, "end_char": 4}, {"start_char": 5, "end_char": 10}]', "chunks[1].start_char"),
        ('[{"start_char": 0, "end_char": 4}, {"start_char": 4, "end_char": 11}]', "chunks[1].end_char"),
        ('[{"start_char": 0, "end_char": 4}]', "chunks"),
        ('[{"start_char": 0, "end_char": 10, "size": 1}]', "chunks[0].size"),
        ('[{"start_char": 0, "end_char": 10, "page": 0}]', "chunks[0].page"),
        ('[{"start_char": 0, "end_char": 10, "embedding": [1, 2, 3]}]', "chunks[0].embedding"),
    ]
    with db.connect("app") as conn:
        for chunks, column in cases:
            set_context(conn, TENANT_A)
            expect_error(conn, "22023", column, "select * from memsub.document_ingest("
                         "'a.txt', repeat('b', 64), 'txt', '0123456789', %s::jsonb)", [chunks])
        set_context(conn, TENANT_A)
        expect_error(conn, "22023", "hash",
                     "select * from memsub.document_ingest('a.txt', 'not-a-hash', 'txt', 'x', '[]'::jsonb)")
        set_context(conn, TENANT_A)
        expect_error(conn, "22023", "mime",
                     "select * from memsub.document_ingest('a.txt', repeat('b', 64), 'docx', 'x', '[]'::jsonb)")
        set_context(conn, TENANT_A)
        good = f'[{{"start_char": 0, "end_char": 10, "embedding": {good_vector}}}]'
        row = rows(conn, "select status, embedded_count from memsub.document_ingest("
                         "'a.txt', repeat('b', 64), 'txt', '0123456789', %s::jsonb)", [good])
        assert row == [{"status": "created", "embedded_count": 1}]
    assert ground_truth(db, "select count(*) as n from memsub.document_index") == [{"n": 1}]


def test_unsupported_files_are_refused_before_the_database(tmp_path):
    with pytest.raises(InvalidInput):
        documents.mime_of(tmp_path / "slides.pptx")
    with pytest.raises(InvalidInput, match="PDF"):
        documents.extract_text(b"%PDF-1.7", "pdf", "a.pdf")


def test_hybrid_search_finds_chunks_by_full_text_and_by_vector(db):
    """memsub.hybrid_search fuses a full-text and a vector ranking over the chunks' embedding rows."""
    embedder = WordEmbedder()
    other = "Gardening notes.\n\nTomatoes need sun, water and patience in the greenhouse.\n"
    with tenant_session(db.dsn("app")) as session:
        target = session.documents.ingest("design.md", DESIGN, file_hash="1" * 64, mime="md",
                                          spans=documents.chunk_spans(DESIGN, 120), embedder=embedder)
        garden = session.documents.ingest("garden.txt", other, file_hash="2" * 64, mime="txt",
                                          embedder=embedder)
        chunks = session.documents.chunks_of(target.document_id)
    wanted = next(c for c in chunks if "tsvector" in c.content)

    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        query = vector_text(embedder.vector("a tsvector lets keyword search find chunks"))
        hits = rows(conn, "select packet_id, chunk_index, chunk_text, vector_rank, text_rank "
                          "from memsub.hybrid_search('keyword search', %s::vector, 3)", [query])
        assert hits[0]["chunk_index"] == wanted.chunk_index and hits[0]["chunk_text"] == wanted.content
        assert hits[0]["vector_rank"] == 1 and hits[0]["text_rank"] == 1  # found by both legs
        by_words_only = rows(conn, "select packet_id, chunk_text, text_rank from memsub.hybrid_search("
                                   "'tomatoes greenhouse', %s::vector, 1)", [query])
        assert "Tomatoes" in by_words_only[0]["chunk_text"] and by_words_only[0]["text_rank"] == 1
        assert by_words_only[0]["packet_id"] == garden.packet_id


def test_chunks_are_linked_to_their_nearest_chunks_in_other_documents(db):
    embedder = WordEmbedder()
    with tenant_session(db.dsn("app")) as session:
        first = session.documents.ingest("a.md", "pgvector hnsw index cosine distance\n\nunrelated words here\n",
                                         file_hash="a" * 64, mime="md", spans=None, embedder=embedder, max_chars=40)
        second = session.documents.ingest("b.md", "hnsw index with cosine distance in pgvector\n",
                                          file_hash="b" * 64, mime="md", embedder=embedder)
        a_chunks = session.documents.chunks_of(first.document_id)
        b_chunks = session.documents.chunks_of(second.document_id)
    assert len(a_chunks) == 2 and len(b_chunks) == 1
    assert b_chunks[0].neighbors == [a_chunks[0].id]
    assert a_chunks[0].neighbors == [b_chunks[0].id], "links go both ways"
    assert a_chunks[1].neighbors == [], "chunks without common words stay unlinked"



def test_a_superseded_version_leaves_the_neighbours_of_other_documents(db):
    """Neighbours are chunks of other documents' latest versions: when a path gets a new version, its old chunks
    leave the neighbour lists that named them (they kept them before)."""
    embedder = WordEmbedder()
    with tenant_session(db.dsn("app")) as session:
        old = session.documents.ingest("a.md", "pgvector hnsw index cosine distance\n", file_hash="a" * 64,
                                       mime="md", embedder=embedder)
        other = session.documents.ingest("b.md", "hnsw index with cosine distance in pgvector\n",
                                         file_hash="b" * 64, mime="md", embedder=embedder)
        old_ids = {c.id for c in session.documents.chunks_of(old.document_id)}
        assert old_ids <= set(session.documents.chunks_of(other.document_id)[0].neighbors)
        new = session.documents.ingest("a.md", "pgvector hnsw index, cosine distance\n", file_hash="c" * 64,
                                       mime="md", embedder=embedder)
        neighbours = set(session.documents.chunks_of(other.document_id)[0].neighbors)
        new_ids = {c.id for c in session.documents.chunks_of(new.document_id)}
    assert neighbours & old_ids == set()
    assert new_ids <= neighbours  # the new version's chunks take their place

def test_linking_a_documents_chunks_walks_the_content_graph(db):
    """The nearest chunks of other documents are found through the content embeddings' HNSW graph (ordered by
    the graph's key, memsub._vector_graph_order), not by sorting every chunk vector of the tenant once per
    chunk. With sorts and sequential scans priced out, the statement that links the chunks must walk the
    tenant's graph; an ORDER BY the graph cannot serve leaves it no plan but the sort."""
    def chunks(*heads: float) -> str:
        return json.dumps([{"start_char": 10 * n, "end_char": 10 * (n + 1),
                            "embedding": json.loads(vec(1.0, head, 0.05 * n))} for n, head in enumerate(heads)])

    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("set local enable_seqscan = off")
        conn.execute("set local enable_sort = off")
        partition = conn.execute("select memsub._embedding_partition(%s)", [TENANT_A]).fetchone()
        assert partition is not None
        graph = f"memsub.idx_embeddings_vector_content_p{partition[0]:02d}"
        for number, heads in enumerate([(0.1, 0.2, 0.3), (0.11, 0.21, 0.31)]):
            conn.execute("select * from memsub.document_ingest(%s, %s, 'txt', %s, %s::jsonb)",
                         [f"doc{number}.txt", str(number) * 64, "x" * 30, chunks(*heads)]).fetchall()
        walks = conn.execute("select pg_stat_get_xact_numscans(%s::regclass)", [graph]).fetchone()
        linked = conn.execute("select count(*) from memsub.document_chunks where cardinality(neighbors) > 0"
                              ).fetchone()
    assert walks is not None and walks[0] >= 3, "one walk per chunk of the second document"
    assert linked == (6,)


def test_seed_001_document_index_put_works_on_the_latest_version(db):
    with db.connect("app") as conn:
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]

        def unit(axis: int) -> list[float]:
            return [1.0 if i == axis else 0.0 for i in range(dimension)]

        put = "select * from memsub.document_index_put('spec.md', %s::float8[], %s::jsonb)"
        set_context(conn, TENANT_A)
        conn.execute(put, [unit(0), '{"v": 1}'])
        set_context(conn, TENANT_A)
        conn.execute(put, [unit(1), '{"v": 2}'])
        conn.commit()
    with tenant_session(db.dsn("app")) as session:
        ingested = session.documents.ingest("spec.md", "the spec", file_hash="c" * 64, mime="md")
    assert (ingested.status, ingested.version) == ("new_version", 2)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute(put, [unit(2), '{"v": 3}'])
        set_context(conn, TENANT_A)
        entry = rows(conn, "select id, metadata, embedding from memsub.document_index_get('spec.md')")
    assert entry == [{"id": ingested.document_id, "metadata": {"v": 3}, "embedding": unit(2)}]
    assert ground_truth(db, "select version, hash is null as put, metadata from memsub.document_index "
                            "order by version") == [{"version": 1, "put": True, "metadata": {"v": 2}},
                                                    {"version": 2, "put": False, "metadata": {"v": 3}}]


def test_ingest_command_shows_progress_and_is_idempotent(db, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "design.md").write_text(DESIGN, encoding="utf-8")
    (folder / "notes.txt").write_text("short notes\n", encoding="utf-8")
    (folder / "image.png").write_bytes(b"\x89PNG")
    args = ["ingest", str(folder), "--dsn", db.dsn("app"), "--tenant", str(TENANT_A),
            "--embedder", "doc_helpers:WordEmbedder", "--max-chars", "100"]
    runner = CliRunner()
    first = runner.invoke(main, args)
    assert first.exit_code == 0, first.output
    assert "2 created, 0 new version(s), 0 unchanged, 0 failed" in first.stdout
    assert "ingesting" in first.stderr
    again = runner.invoke(main, args)
    assert again.exit_code == 0 and "0 created, 0 new version(s), 2 unchanged" in again.stdout
    (folder / "notes.txt").write_text("longer notes now\n", encoding="utf-8")
    changed = runner.invoke(main, args)
    assert "0 created, 1 new version(s), 1 unchanged" in changed.stdout
    stored = ground_truth(db, "select file_path, version, chunk_count, is_latest from memsub.document_index "
                              "order by file_path, version")
    design = Path(folder / "design.md").as_posix()
    notes = Path(folder / "notes.txt").as_posix()
    assert [(r["file_path"], r["version"], r["is_latest"]) for r in stored] == [
        (design, 1, True), (notes, 1, False), (notes, 2, True)]
    vectors = ground_truth(db, "select count(*) as n from memsub.memory_embeddings")
    assert vectors == [{"n": stored[0]["chunk_count"] + stored[2]["chunk_count"]}]


def test_ingest_command_fails_for_a_wrong_embedder_dimension(db, tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("text", encoding="utf-8")
    result = CliRunner().invoke(main, ["ingest", str(path), "--dsn", db.dsn("app"), "--tenant", str(TENANT_A),
                                       "--embedder", "tests_embedder_missing:Nothing"])
    assert result.exit_code != 0 and "--embedder" in result.output
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        with db.connect("app") as conn:
            set_context(conn, TENANT_A)
            conn.execute("select * from memsub.document_ingest('a.txt', repeat('d', 64), 'txt', 'text', %s::jsonb)",
                         [json.dumps([{"start_char": 0, "end_char": 4, "embedding": [1.0] * 384}])])


def _ingest(db, *args: str, role: str = "app"):
    return CliRunner().invoke(main, ["ingest", *args, "--dsn", db.dsn(role), "--tenant", str(TENANT_A)])


def _stored_paths(db) -> list[str]:
    return [r["file_path"] for r in ground_truth(db, "select file_path from memsub.document_index order by 1")]


def test_ingest_command_reports_a_file_that_fails_and_goes_on_with_the_next(db, tmp_path):
    """A file that cannot be read, embedded or stored is that file's failure, whatever the exception: the files
    before and after it are stored and reported, and the run ends with exit 1."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a_first.md").write_text("first file\n", encoding="utf-8")
    (folder / "b_outage.md").write_text("outage of the embedding service\n", encoding="utf-8")
    (folder / "c_unreadable.txt").symlink_to("/proc/self/mem")  # a regular file whose read() fails (EIO)
    (folder / "d_last.md").write_text("last file\n", encoding="utf-8")
    result = _ingest(db, str(folder), "--embedder", "doc_helpers:OutageEmbedder", "--json")
    assert result.exit_code == 1, result.output
    assert _stored_paths(db) == [(folder / "a_first.md").as_posix(), (folder / "d_last.md").as_posix()]
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(Path(item["path"]).name, item["status"]) for item in lines] == [
        ("a_first.md", "created"), ("b_outage.md", "failed"), ("c_unreadable.txt", "failed"), ("d_last.md", "created")]
    assert "embedding service unavailable" in lines[1]["error"]
    assert "Input/output error" in lines[2]["error"]
    assert "2 created, 0 new version(s), 0 unchanged, 2 failed" in result.stderr


def test_ingest_command_prints_each_file_when_it_is_done(db, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a_first.md").write_text("first file\n", encoding="utf-8")
    (folder / "b_second.md").write_text("second file\n", encoding="utf-8")
    result = _ingest(db, str(folder), "--embedder", "doc_helpers:OutageEmbedder")
    assert result.exit_code == 0, result.output
    first_done = result.output.index("a_first.md: created")
    assert first_done < result.output.index("embedding: second"), result.output


def test_ingest_command_shows_file_names_that_are_not_utf8(db, tmp_path):
    """A file name that is not UTF-8 cannot be a document path (stored paths are text): that file fails, its name
    printed with the odd bytes escaped, and the other files are stored and printed as usual."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("good\n", encoding="utf-8")
    Path(os.fsdecode(os.fsencode(folder) + b"/bad\xff.md")).write_text("bad name\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python"), "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
    for json_lines in (False, True):
        run = subprocess.run([sys.executable, "-m", "memsub", "ingest", str(folder), "--dsn", db.dsn("app"),
                              "--tenant", str(TENANT_A), *(["--json"] if json_lines else [])],
                             capture_output=True, env=env, timeout=120, check=False)
        stdout, stderr = run.stdout.decode("utf-8"), run.stderr.decode("utf-8")
        assert run.returncode == 1 and "Traceback" not in stderr, (stdout, stderr)
        assert _stored_paths(db) == [(folder / "good.md").as_posix()]
        if json_lines:
            lines = {Path(item["path"]).name: item for item in map(json.loads, stdout.splitlines())}
            assert lines["bad\\xff.md"]["status"] == "failed" and lines["good.md"]["status"] == "unchanged"
        else:
            assert "bad\\xff.md: failed: " in stdout and "good.md: created" in stdout, (stdout, stderr)
        assert "1 failed" in stdout + stderr


@pytest.mark.parametrize("max_chars", ["0", "1", "-5"])
def test_ingest_command_refuses_a_chunk_size_the_chunker_cannot_use(db, tmp_path, max_chars):
    path = tmp_path / "a.txt"
    path.write_text("text", encoding="utf-8")
    result = _ingest(db, str(path), "--max-chars", max_chars)
    assert result.exit_code == 2 and "--max-chars" in result.output, result.output
    assert "a.txt" not in result.output and _stored_paths(db) == []


@pytest.mark.parametrize("as_json", [False, True])
def test_ingest_command_without_privilege_stops_with_the_privilege_code(db, tmp_path, as_json):
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("text", encoding="utf-8")
    result = _ingest(db, str(tmp_path), *(["--json"] if as_json else []), role="nobody")
    assert result.exit_code == exit_codes.NO_PRIVILEGE, result.output
    assert "a.txt" not in result.output and "permission denied" in result.stderr
    if as_json:
        assert json.loads(result.stdout)["exit_code"] == exit_codes.NO_PRIVILEGE



def test_ingest_command_reports_a_path_of_another_context_as_that_files_failure(db, tmp_path):
    """A path written from another context is refused with 42501 naming file_path: that file's failure, not one
    that ends the run as a missing privilege does."""
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("tenant-wide text", encoding="utf-8")
    assert _ingest(db, str(first)).exit_code == 0
    first.write_text("an organization's text", encoding="utf-8")
    second.write_text("the organization's own file", encoding="utf-8")
    result = _ingest(db, str(tmp_path), "--org", "00000000-0000-0000-0001-000000000001")
    assert result.exit_code == exit_codes.CHECK_FAILED, result.output
    assert "a.txt: failed: " in result.output and "[field file_path]" in result.output
    assert "b.txt: created" in result.output
    assert _stored_paths(db) == sorted([first.as_posix(), second.as_posix()])

def test_ingest_command_that_cannot_connect_stops_with_the_connection_code(db, tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("text", encoding="utf-8")
    result = CliRunner().invoke(main, ["ingest", str(path), "--dsn", db.dsn("app").replace(db.name, "no_such_db"),
                                       "--tenant", str(TENANT_A)])
    assert result.exit_code == exit_codes.CANNOT_CONNECT and "a.txt" not in result.output, result.output


def test_ingest_command_scans_directories_for_the_text_kinds_only(db, tmp_path):
    """memsub extracts no PDF text: a directory's PDF files are not taken, a PDF named on the command line is
    refused as that file's failure."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("notes\n", encoding="utf-8")
    (folder / "paper.pdf").write_bytes(b"%PDF-1.7\n")
    scanned = _ingest(db, str(folder), "--json")
    assert scanned.exit_code == 0, scanned.output
    assert [Path(json.loads(line)["path"]).name for line in scanned.stdout.splitlines()] == ["notes.md"]
    named = _ingest(db, str(folder / "paper.pdf"), "--json")
    assert named.exit_code == 1 and json.loads(named.stdout)["status"] == "failed", named.output
    assert "PDF" in json.loads(named.stdout)["error"] and _stored_paths(db) == [(folder / "notes.md").as_posix()]
    help_text = " ".join(CliRunner().invoke(main, ["ingest", "--help"]).stdout.split())
    assert set(re.findall(r"\.[a-z]+", help_text.split("directories:")[1].split(")")[0])) == set(
        documents.TEXT_SUFFIXES)


CONTEXT_FUNCTIONS = ("current_tenant_id", "current_org_id", "current_user_id", "current_session_id")


def test_an_ingest_reads_the_context_a_fixed_number_of_times_however_many_chunks(db):
    """The context functions in document_ingest's statements were evaluated per chunk: in the neighbour links'
    join conditions once per inner scan of every chunk (thousands of seal checks for two documents of 50 chunks),
    and the writer's identity once per chunk row."""
    track_function_calls(db)
    calls = {}
    with db.connect("app") as conn:
        for count in (2, 12):
            text = "".join(f"chunk {n:03d}. " for n in range(count))
            width = len(text) // count

            def chunks(shift: float, count: int = count, width: int = width) -> str:
                return json.dumps([{"start_char": n * width, "end_char": (n + 1) * width,
                                    "embedding": [1.0] + [shift + n / 100.0] * 1535} for n in range(count)])

            for number, shift in enumerate((0.0, 0.001)):
                set_context(conn, TENANT_A)
                before = function_calls(conn, CONTEXT_FUNCTIONS)
                row = conn.execute("select status, chunk_count from memsub.document_ingest(%s, %s, 'txt', %s,"
                                   " %s::jsonb)", [f"docs/{count}-{number}.txt",
                                                   hashlib.sha256(f"{count}-{number}".encode()).hexdigest(), text,
                                                   chunks(shift)]).fetchone()
                after = function_calls(conn, CONTEXT_FUNCTIONS)
                conn.commit()
                assert row == ("created", count)
            set_context(conn, TENANT_A)
            linked = conn.execute("select count(*) from memsub.document_chunks c join memsub.document_index d"
                                  " on d.id = c.document_id where d.file_path = %s and cardinality(c.neighbors) > 0",
                                  [f"docs/{count}-1.txt"]).fetchone()
            conn.commit()
            assert linked == (count,)  # the second document's chunks found the first one's
            calls[count] = {name: after.get(name, 0) - before.get(name, 0) for name in after}
    assert calls[12] == calls[2], calls


def test_a_directory_the_run_cannot_list_is_reported_failed_and_the_rest_ingested(db, tmp_path, monkeypatch):
    """A directory below a named one that cannot be listed (no permission: the tests run as root, whom chmod does
    not stop, so the listing itself is made to fail) is one failed line naming it, and the exit is 1; the files
    that can be read are ingested."""
    (tmp_path / "open").mkdir()
    (tmp_path / "open" / "a.md").write_text("# A\n\nreadable\n", encoding="utf-8")
    (tmp_path / "closed").mkdir()
    (tmp_path / "closed" / "b.md").write_text("# B\n\nunreadable\n", encoding="utf-8")
    listing = os.scandir

    def refusing(path=".", *args, **kwargs):
        if Path(path) == tmp_path / "closed":
            raise PermissionError(13, "Permission denied", str(path))
        return listing(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", refusing)
    result = CliRunner().invoke(main, ["ingest", str(tmp_path), "--dsn", db.dsn("app"), "--tenant", str(TENANT_A)])
    assert result.exit_code == exit_codes.CHECK_FAILED, result.output
    failed = [line for line in result.stdout.splitlines() if ": failed: " in line]
    assert failed == [f"{tmp_path / 'closed'}: failed: cannot list the directory: Permission denied"], result.output
    assert "1 created, 0 new version(s), 0 unchanged, 1 failed" in result.output
    stored = ground_truth(db, "select file_path from memsub.document_index")
    assert [row["file_path"] for row in stored] == [str(tmp_path / "open" / "a.md")]


@pytest.mark.parametrize("as_json", [False, True])
def test_ingest_command_names_a_failed_file_once(db, tmp_path, as_json):
    """The reasons the client gives name the file (``a.txt: not UTF-8 text``, for a caller of ingest_file), and the
    command prefixed its own ``a.txt: failed:``, so the line named the file twice. The line names it once, at its
    start, and the JSON result in ``path`` only."""
    latin, pdf = tmp_path / "latin.txt", tmp_path / "scan.pdf"
    latin.write_bytes("caf\u00e9\n".encode("latin-1"))
    pdf.write_bytes(b"%PDF-1.4\n")
    result = _ingest(db, str(latin), str(pdf), *(["--json"] if as_json else []))
    assert result.exit_code == exit_codes.CHECK_FAILED, result.output
    if as_json:
        failed = [json.loads(line) for line in result.stdout.splitlines()]
        assert [(item["path"], item["field"]) for item in failed] == [(str(latin), "text"), (str(pdf), "mime")]
        assert failed[0]["error"].startswith("not UTF-8 text ("), failed[0]
        assert failed[1]["error"] == "PDF text extraction needs a PDF library, which is not installed"
    else:
        lines = [line for line in result.stdout.splitlines() if ": failed: " in line]
        assert len(lines) == 2, result.output
        assert re.fullmatch(re.escape(f"{latin}: failed: not UTF-8 text (") + r"[^\n]+\) \[field text\]", lines[0])
        assert lines[1] == (f"{pdf}: failed: PDF text extraction needs a PDF library, which is not installed "
                            "[field mime]")
        assert all(line.count(str(tmp_path)) == 1 for line in lines), lines
