"""A document over the server's size limits is refused before its chunks are embedded.

The limits of document_ingest (max_document_chars, max_document_bytes, max_document_chunks: sql/015_limits.sql)
were applied by the server only, after the client had embedded every chunk: a 12.5 MB file spent 28 s computing
vectors and was then refused on max_document_bytes. The client reads the limits first and refuses what the
server would refuse, with its SQLSTATE (54000), exception (LimitExceeded) and field, without an embedding call.
Small configured limits keep these tests fast.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from memsub import documents, exit_codes
from memsub.cli import main
from memsub.errors import LimitExceeded

from doc_helpers import WordEmbedder, tenant_session
from helpers import TENANT_A, set_context
from session_helpers import ground_truth

WORDS = " ".join(f"word{i}" for i in range(400)) + "\n"  # 3,490 characters
MAX_CHARS = 200  # about 18 chunks


def _limit(db: Any, name: str, value: int) -> None:
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values (%s, %s)", [name, value])


def _documents(db: Any) -> int:
    return ground_truth(db, "select count(*) as n from memsub.document_index")[0]["n"]


def _server_refusal(db: Any, path: Path, embedder: WordEmbedder) -> psycopg.Error:
    """What the server answers to the same document sent with its vectors (no client check in between)."""
    data = path.read_bytes()
    text = documents.extract_text(data, "md", path)
    spans = documents.chunk_spans(text, MAX_CHARS)
    vectors = embedder.embed([text[s.start:s.end] for s in spans])
    chunks = [{"start_char": s.start, "end_char": s.end, "embedding": v} for s, v in zip(spans, vectors, strict=True)]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.Error) as refused:
            conn.execute("select * from memsub.document_ingest(%s, %s, 'md', %s, %s::jsonb)",
                         [path.as_posix(), documents.sha256_hex(data), text, json.dumps(chunks)])
    return refused.value


@pytest.mark.parametrize(("limit", "value", "field"), [
    ("max_document_bytes", 200_000, "chunks"),  # 18 vectors of 1,536 numbers are over 300 kB as jsonb
    ("max_document_chunks", 10, "chunks"),
    ("max_document_chars", 3_000, "text"),
])
def test_a_document_over_a_limit_is_refused_before_any_embedding(db, tmp_path, limit, value, field):
    path = tmp_path / "big.md"
    path.write_text(WORDS, encoding="utf-8")
    _limit(db, limit, value)
    embedder = WordEmbedder()
    with pytest.raises(LimitExceeded) as refused, tenant_session(db.dsn("app")) as session:
        session.documents.ingest_file(path, embedder=embedder, max_chars=MAX_CHARS)
    assert embedder.calls == 0
    assert (refused.value.sqlstate, refused.value.field) == ("54000", field)
    assert f"({limit})" in str(refused.value), refused.value
    assert _documents(db) == 0
    # The server gives the same answer to the same document with its vectors.
    server = _server_refusal(db, path, WordEmbedder())
    assert (server.sqlstate, server.diag.column_name) == ("54000", field)
    assert server.diag.message_detail.startswith(f"limit={limit} value={value} "), server.diag.message_detail
    if limit == "max_document_bytes":  # the client's count is a floor of the server's (vectors mostly zeros here)
        floor = int(re.search(r"at least (\d+) >", str(refused.value)).group(1))  # type: ignore[union-attr]
        actual = int(server.diag.message_detail.rsplit("actual=", 1)[1])
        assert floor <= actual < 1.1 * floor, (floor, actual)


def test_a_document_within_the_limits_is_embedded_once(db, tmp_path):
    """The limits read, a document within them is embedded and stored as before: one embedding call."""
    path = tmp_path / "fits.md"
    path.write_text(WORDS, encoding="utf-8")
    _limit(db, "max_document_chunks", 100)
    embedder = WordEmbedder()
    with tenant_session(db.dsn("app")) as session:
        result = session.documents.ingest_file(path, embedder=embedder, max_chars=MAX_CHARS)
    assert embedder.calls == 1
    assert result.status == "created" and result.embedded_count == result.chunk_count > 10


def test_the_cli_reports_the_refusal_as_that_files_failure_without_embedding(db, tmp_path):
    """OutageEmbedder says on stderr each text it is asked to embed: it is asked none."""
    path = tmp_path / "big.md"
    path.write_text(WORDS, encoding="utf-8")
    _limit(db, "max_document_bytes", 200_000)
    result = CliRunner().invoke(main, ["ingest", str(path), "--dsn", db.dsn("app"), "--tenant", str(TENANT_A),
                                       "--embedder", "doc_helpers:OutageEmbedder", "--max-chars", str(MAX_CHARS)])
    assert result.exit_code == exit_codes.CHECK_FAILED, result.output
    assert "embedding:" not in result.stderr
    line = next(line for line in result.stdout.splitlines() if ": failed: " in line)
    assert line.startswith(f'{path}: failed: field "chunks" is bytes over the limit: at least '), line
    assert line.endswith(" > 200000 (max_document_bytes); refused before embedding [field chunks]"), line
