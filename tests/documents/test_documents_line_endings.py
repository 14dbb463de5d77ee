"""Line endings: the same Markdown written on Linux (LF), Windows (CRLF) or by an old Mac tool (CR only)."""

from __future__ import annotations

from pathlib import Path

from doc_helpers import tenant_session
from session_helpers import ground_truth

NOTE = ("# Release plan\n\nShip the ingest fixes first.\n\n## Risks\n\n"
        + "A paragraph long enough to be cut into several chunks by the chunker. " * 12 + "\n\n## Owners\n\nOps.\n")


def _stored(db, path: Path) -> dict:
    return ground_truth(db, """
        select d.extracted_text, d.summary, d.key_concepts,
               array_agg(c.content order by c.chunk_index) as chunks
          from memsub.document_index d join memsub.document_chunks c on c.document_id = d.id
         where d.file_path = %s and d.is_latest
         group by d.id, d.extracted_text, d.summary, d.key_concepts""", [path.as_posix()])[0]


def test_a_file_is_one_text_whatever_its_line_endings(db, tmp_path):
    """A file read with its CR line ends kept had no paragraphs and no lines for the summary, the headings and
    the chunker: CR-only Markdown got no summary and one key concept running over the whole file. Line ends are
    read as LF, as Python reads text; the hash stays the file's bytes'."""
    endings = {"lf.md": "\n", "crlf.md": "\r\n", "cr.md": "\r"}
    for name, ending in endings.items():
        (tmp_path / name).write_bytes(NOTE.replace("\n", ending).encode("utf-8"))
    with tenant_session(db.dsn("app")) as session:
        results = {name: session.documents.ingest_file(tmp_path / name, max_chars=200) for name in endings}
    expected = _stored(db, tmp_path / "lf.md")
    assert expected["summary"] == "Ship the ingest fixes first."
    assert expected["key_concepts"] == ["Release plan", "Risks", "Owners"]
    assert len(expected["chunks"]) > 3 and expected["extracted_text"] == NOTE
    for name in ("crlf.md", "cr.md"):
        assert _stored(db, tmp_path / name) == expected, name
    assert len({result.hash for result in results.values()}) == 3


def test_a_file_whose_line_endings_alone_change_is_a_new_version_of_the_same_text(db, tmp_path):
    path = tmp_path / "note.md"
    path.write_bytes(NOTE.encode("utf-8"))
    with tenant_session(db.dsn("app")) as session:
        first = session.documents.ingest_file(path)
    path.write_bytes(NOTE.replace("\n", "\r\n").encode("utf-8"))
    with tenant_session(db.dsn("app")) as session:
        second = session.documents.ingest_file(path)
        versions = session.documents.versions(path.as_posix())
    assert (first.status, second.status) == ("created", "new_version")
    assert [v.version for v in versions] == [2, 1] and versions[0].hash != versions[1].hash
    texts = ground_truth(db, "select extracted_text from memsub.document_index order by version")
    assert [row["extracted_text"] for row in texts] == [NOTE, NOTE]
