"""Calls on one path from two connections at once: every writer of a path waits for the one before it, then
decides on what that one committed (a new version, vectors already added), never on a snapshot taken before it."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from doc_helpers import WordEmbedder, tenant_session, vector_text
from helpers import TENANT_A, set_context
from session_helpers import ground_truth, rows

TEXT = "alpha beta gamma delta epsilon zeta eta theta"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _ingest(db: Any, path: str, text: str = TEXT) -> Any:
    with tenant_session(db.dsn("app")) as session:
        return session.documents.ingest(path, text, file_hash=_sha(text), mime="txt", max_chars=20)


def _chunk_vectors(count: int) -> str:
    return json.dumps([{"chunk_index": n, "embedding": WordEmbedder().vector(f"w{n}")} for n in range(1, count + 1)])


def _while_held(db: Any, held: str, params: list[Any], other: Callable[[Any], Any]) -> tuple[list[Any], list[Any]]:
    """Runs `held` in a transaction left open, starts `other` on a second connection, commits the first a moment
    later, and returns what `other` returned and raised."""
    first = db.connect("app")
    set_context(first, TENANT_A)
    first.execute(held, params)
    results: list[Any] = []
    errors: list[Any] = []

    def run() -> None:
        try:
            results.append(other(db))
        except Exception as error:
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(1.0)  # the second call is waiting on the path by now
    first.commit()
    first.close()
    thread.join(30)
    return results, errors


def _embed(document_id: Any, payload: str) -> Callable[[Any], Any]:
    def call(db: Any) -> Any:
        with db.connect("app") as conn:
            set_context(conn, TENANT_A)
            row = conn.execute("select memsub.document_embed_chunks(%s, %s::jsonb)", [document_id, payload]).fetchone()
            conn.commit()
            return row[0] if row else None
    return call


def test_adding_vectors_to_a_version_being_superseded_adds_none(db):
    """The new version's ingest commits while vectors are added to the old one: the old version keeps no vectors
    (a superseded version loses them) and searches never return its chunks."""
    first = _ingest(db, "d.txt")
    text = "completely new content for version two"
    results, errors = _while_held(
        db, "select * from memsub.document_ingest('d.txt', %s, 'txt', %s, %s::jsonb)",
        [_sha(text), text, json.dumps([{"start_char": 0, "end_char": len(text)}])],
        _embed(first.document_id, _chunk_vectors(first.chunk_count)))
    assert results == [] and [e.sqlstate for e in errors] == ["P0002"]  # no longer the latest version
    assert ground_truth(db, "select count(*) as n from memsub.memory_embeddings where packet_id = %s",
                        [first.packet_id]) == [{"n": 0}]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        hits = rows(conn, "select packet_id from memsub.hybrid_search('zzz', %s::vector, 3)",
                    [vector_text(WordEmbedder().vector("w1"))])
    assert all(hit["packet_id"] != first.packet_id for hit in hits)


def test_two_calls_adding_the_same_vectors_add_them_once(db):
    document = _ingest(db, "c.txt")
    payload = _chunk_vectors(document.chunk_count)
    results, errors = _while_held(db, "select memsub.document_embed_chunks(%s, %s::jsonb)",
                                  [document.document_id, payload], _embed(document.document_id, payload))
    assert errors == [] and results == [0]  # chunks that already carry a vector keep it
    assert ground_truth(db, "select count(*) as n from memsub.memory_embeddings where packet_id = %s",
                        [document.packet_id]) == [{"n": document.chunk_count}]


def test_an_ingest_after_a_concurrent_index_entry_of_a_new_path_is_its_next_version(db):
    def ingest(db: Any) -> Any:
        return _ingest(db, "p.md", "the text")

    results, errors = _while_held(db, "select * from memsub.document_index_put('p.md', null, '{}')", [], ingest)
    assert errors == [] and [(r.status, r.version) for r in results] == [("new_version", 2)]
