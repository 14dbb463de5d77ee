"""What the document functions refuse, each by name and before anything is written, and what they never store."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import psycopg
import pytest

from doc_helpers import WordEmbedder, tenant_session
from helpers import TENANT_A, set_context
from session_helpers import ground_truth

TABLES = ("document_index", "document_chunks", "packet_store", "memory_embeddings", "audit")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _counts(db: Any) -> dict[str, int]:
    return {t: ground_truth(db, f"select count(*) as n from memsub.{t}")[0]["n"] for t in TABLES}  # noqa: S608


def _refused(db: Any, statement: str, params: list[Any]) -> psycopg.Error:
    before = _counts(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(statement, params)
    assert _counts(db) == before
    return raised.value


INGEST = ("select * from memsub.document_ingest(%s, %s, 'md', 'hello', "
          "'[{\"start_char\": 0, \"end_char\": 5}]'::jsonb, p_key_concepts => %s)")


@pytest.mark.parametrize("call", ["ingest", "index_put"])
def test_a_path_longer_than_an_index_entry_holds_is_refused_by_name(db, call):
    """A path of 6,000 characters, well within max_text_chars, failed on PostgreSQL's own "index row size"
    error with no field: file paths are now held to max_key_bytes (2,048 bytes by default)."""
    path = "docs/" + "é" * 1100 + ".md"  # 2,208 bytes
    if call == "ingest":
        error = _refused(db, INGEST, [path, _sha("h"), []])
    else:
        error = _refused(db, "select * from memsub.document_index_put(%s)", [path])
    assert (error.sqlstate, error.diag.column_name) == ("54000", "file_path")
    with db.connect("app") as conn:  # just within the limit is stored
        set_context(conn, TENANT_A)
        conn.execute("select * from memsub.document_index_put(%s)", ["d/" + "é" * 1023])


def test_each_key_concept_is_held_to_the_text_limit(db):
    error = _refused(db, INGEST, ["e.md", _sha("e"), ["fine", "k" * 1_048_577]])
    assert (error.sqlstate, error.diag.column_name) == ("54000", "key_concepts[1]")


@pytest.mark.parametrize("index", ["1.5", "1e10", "99999999999", "-1"])
def test_a_chunk_number_that_is_not_a_chunk_is_refused_by_name(db, index):
    with tenant_session(db.dsn("app")) as session:
        document = session.documents.ingest("a.txt", "alpha beta gamma delta epsilon", file_hash=_sha("a"),
                                            mime="txt", max_chars=20)
    vector = json.dumps(WordEmbedder().vector("alpha"))
    error = _refused(db, "select memsub.document_embed_chunks(%s, %s::jsonb)",
                     [document.document_id, f'[{{"chunk_index": {index}, "embedding": {vector}}}]'])
    assert (error.sqlstate, error.diag.column_name) == ("22023", "embeddings[0].chunk_index")


def test_chunk_vectors_that_cancel_out_leave_the_document_without_a_vector(db):
    """document_ingest stores no document vector when the mean of the chunk vectors is zero (it has no cosine
    distance); document_embed_chunks stored the zero vector."""
    with tenant_session(db.dsn("app")) as session:
        document = session.documents.ingest("b.txt", "x" * 10 + "y" * 10, file_hash=_sha("b"), mime="txt",
                                            max_chars=10)
    vector = WordEmbedder().vector("alpha")
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        added = conn.execute("select memsub.document_embed_chunks(%s, %s::jsonb)", [document.document_id, json.dumps(
            [{"chunk_index": 1, "embedding": vector}, {"chunk_index": 2, "embedding": [-x for x in vector]}])])
        assert added.fetchone() == (2,)
        conn.commit()
    assert ground_truth(db, "select embedding is null as none from memsub.document_index where id = %s",
                        [document.document_id]) == [{"none": True}]
