"""Text encodings of ingested files: UTF-8, and UTF-16 with or without a byte order mark.

A file without a byte order mark was decoded as UTF-8 with its NUL bytes dropped, so UTF-16 read right only when
it was ASCII (each character then one byte and a NUL): Cyrillic UTF-16LE (``П`` is ``1F 04``) became control
characters and digits, stored without a word. The encoding is now measured: NUL bytes at the odd positions of a
file and almost none at the even ones are UTF-16LE, the other way round UTF-16BE.
"""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from memsub import documents
from memsub.errors import InvalidInput

from doc_helpers import tenant_session
from session_helpers import ground_truth

TEXT = ("# Grüße aus Köln\n\nПривет, мир! Это заметка о выпуске.\n\n"  # noqa: RUF001 (Cyrillic)
        "Καλημέρα κόσμε. 日本語のテキスト、English words too.\n\nemoji 🙂 and ñ, ø, ß, ł.\n")
ENCODINGS = {"utf-16-le": b"", "utf-16-be": b"", "utf-16-le-bom": codecs.BOM_UTF16_LE,
             "utf-16-be-bom": codecs.BOM_UTF16_BE, "utf-32-le-bom": codecs.BOM_UTF32_LE,
             "utf-32-be-bom": codecs.BOM_UTF32_BE}


def _bytes(name: str, text: str = TEXT) -> bytes:
    codec = name.removesuffix("-bom")
    return ENCODINGS[name] + text.encode(codec)


@pytest.mark.parametrize("name", list(ENCODINGS))
def test_utf16_text_is_read_as_written(name):
    assert documents.extract_text(_bytes(name), "md", "note.md") == TEXT


@pytest.mark.parametrize("name", ["utf-16-le", "utf-16-be"])
def test_cyrillic_utf16_without_a_byte_order_mark_is_stored_as_written(db, tmp_path, name):
    """Ingested and stored: the document's text, summary and key concepts are the words written."""
    path = tmp_path / f"{name}.md"
    path.write_bytes(_bytes(name))
    with tenant_session(db.dsn("app")) as session:
        result = session.documents.ingest_file(path)
    assert result.status == "created"
    stored = ground_truth(db, "select extracted_text, summary, key_concepts, hash from memsub.document_index"
                              " where id = %s", [result.document_id])[0]
    assert stored["extracted_text"] == TEXT
    assert stored["summary"] == TEXT.split("\n\n")[1]
    assert stored["key_concepts"] == ["Grüße aus Köln"]
    assert stored["hash"] == documents.sha256_hex(path.read_bytes())  # the version is still the file's bytes'


@pytest.mark.parametrize("name", ["utf-16-le", "utf-16-be"])
def test_ascii_utf16_without_a_byte_order_mark_is_still_read(name):
    text = "plain ASCII notes\nsecond line\n"
    assert documents.extract_text(text.encode(name), "txt", "a.txt") == text


@pytest.mark.parametrize(("name", "data"), [
    ("UTF-16LE", "odd length".encode("utf-16-le") + b"x"),
    ("UTF-16LE", "lone surrogate ".encode("utf-16-le") + b"\x00\xd8" + "after".encode("utf-16-le")),
    ("UTF-16BE", "lone surrogate ".encode("utf-16-be") + b"\xdc\x00" + "after".encode("utf-16-be")),
    ("UTF-32LE", codecs.BOM_UTF32_LE + "beyond Unicode".encode("utf-32-le") + b"\x00\x00\x11\x00"),
])
def test_utf16_that_does_not_decode_is_refused_naming_the_file_and_the_encoding(name, data):
    with pytest.raises(InvalidInput) as refused:
        documents.extract_text(data, "txt", Path("notes/broken.txt"))
    assert refused.value.field == "text"
    assert str(refused.value).startswith(f"notes/broken.txt: not {name} text"), refused.value


def test_utf8_with_a_few_nul_bytes_stays_utf8():
    """A stray NUL in UTF-8 text is no UTF-16: the text is read as UTF-8 and the NUL dropped, as before."""
    text = "Grüße\x00 from a UTF-8 file with one NUL byte, and a longer line of ordinary words.\n"
    assert documents.extract_text(text.encode("utf-8"), "txt", "a.txt") == text.replace("\x00", "")
    # UTF-8 without NUL bytes is never measured.
    assert documents.extract_text(TEXT.encode("utf-8"), "md", "a.md") == TEXT
