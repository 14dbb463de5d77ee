"""Documentary memory: read a file, chunk it, hash it, embed the chunks and store a document version.

The database does the versioning (``memsub.document_ingest``): the same bytes again change nothing, changed bytes
make a new version of the path and the old version's vectors leave the index. This module reads Markdown and
plain text (PDF needs a text extraction library, which memsub does not ship), cuts the text into contiguous
chunks that cover it exactly, and embeds them through any object with ``dimension`` and ``embed(texts)``::

    with substrate.tenant(tenant_id, user_id=user) as session:
        result = session.documents.ingest_file(Path("docs/design.md"), embedder=my_embedder)
        chunks = session.documents.chunks_of(result.document_id)

Both sessions expose the documents area as ``session.documents`` (with the path-keyed document index,
``index_put`` and ``index_get``). Reading, chunking and summarizing a file are plain Python functions of this
module.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel

from memsub._calls import (
    Area,
    Call,
    Json,
    SessionT,
    Steps,
    checked_vector,
    function,
    items,
    json_or_none,
    method,
    one,
    optional,
    query,
    raw,
    rows,
    scalar,
    texts,
)
from memsub.embedding import Embedder
from memsub.errors import InvalidInput, LimitExceeded, LocalValidationError

Mime = Literal["pdf", "md", "txt"]
"""The kinds of document (the database's document_mimes())."""
IngestStatus = Literal["created", "new_version", "unchanged"]

SUFFIX_MIME: dict[str, Mime] = {".md": "md", ".markdown": "md", ".txt": "txt", ".text": "txt", ".pdf": "pdf"}
TEXT_SUFFIXES = tuple(suffix for suffix, mime in SUFFIX_MIME.items() if mime != "pdf")
"""The suffixes whose text :func:`extract_text` reads (PDF needs a library memsub does not ship)."""
DEFAULT_MAX_CHARS = 1200
MIN_MAX_CHARS = 2
"""The shortest ``max_chars`` :func:`chunk_spans` takes."""
SUMMARY_CHARS = 280
MAX_KEY_CONCEPTS = 20


@dataclass(frozen=True)
class Span:
    """A chunk's position: characters ``start`` (inclusive) to ``end`` (exclusive) of the text, page if any."""

    start: int
    end: int
    page: int | None = None


class IngestResult(BaseModel):
    """What memsub.document_ingest did with one file."""

    document_id: UUID
    file_path: str
    version: int
    hash: str
    status: IngestStatus
    previous_id: UUID | None
    packet_id: UUID | None
    chunk_count: int
    embedded_count: int


class Document(BaseModel):
    """One version of a document (memsub.document_index), without its vectors and text."""

    id: UUID
    tenant_id: UUID
    org_id: UUID | None
    user_id: UUID | None
    file_path: str
    version: int
    is_latest: bool
    previous_id: UUID | None
    hash: str | None
    mime: Mime | None
    summary: str | None
    key_concepts: list[str]
    entities: list[dict[str, Any]]
    metadata: dict[str, Any]
    packet_id: UUID | None
    chunk_count: int
    created_at: datetime
    updated_at: datetime
    superseded_at: datetime | None


class Chunk(BaseModel):
    """One chunk of a document version (memsub.document_chunks)."""

    id: UUID
    document_id: UUID
    chunk_index: int
    content: str
    page: int | None
    start_char: int
    end_char: int
    neighbors: list[UUID]


class DocumentIndexEntry(BaseModel):
    """One entry of memsub.document_index, its embedding as a list of floats."""

    id: UUID
    file_path: str
    embedding: list[float] | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime


_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def mime_of(path: Path) -> Mime:
    """The seed's document kind from a file name: md, txt or pdf."""
    mime = SUFFIX_MIME.get(path.suffix.lower())
    if mime is None:
        raise InvalidInput(f"{path}: unsupported document type {path.suffix or '(no suffix)'!r}; "
                           f"memsub ingests {', '.join(sorted(SUFFIX_MIME))}", field="file_path")
    return mime


UTF16_NUL_SHARE = 0.05
"""The share of NUL bytes at one parity of a file's positions (odd: UTF-16LE, even: UTF-16BE) from which a file
without a byte order mark is read as UTF-16, provided the other parity holds a tenth of that at most: in UTF-16
every ASCII character (a space, a line end, a digit, an unaccented Latin letter) is a NUL beside its byte, while
UTF-8 text holds NUL bytes only by accident. Text in a script without spaces (Chinese, Japanese) may stay under
the share: it is then read as UTF-8, which such UTF-16 almost never is, and refused as ``not UTF-8 text``."""


def text_encoding(data: bytes) -> str:
    """The encoding :func:`extract_text` reads ``data`` in: ``utf-8``; ``utf-32-le`` / ``utf-32-be`` for a file that
    starts with that byte order mark; ``utf-16-le`` / ``utf-16-be`` for one that starts with that byte order mark
    or, without one, whose NUL bytes sit at one parity of the positions
    (measured: at least :data:`UTF16_NUL_SHARE` of that parity's bytes, the other parity a tenth of that at most)."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8"
    if data.startswith(codecs.BOM_UTF32_LE):  # before UTF-16LE's, which it starts with
        return "utf-32-le"
    if data.startswith(codecs.BOM_UTF32_BE):
        return "utf-32-be"
    if data.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le"
    if data.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be"
    if b"\x00" not in data:
        return "utf-8"
    even, odd = data[0::2].count(0), data[1::2].count(0)
    pairs = len(data) // 2
    if pairs and odd >= UTF16_NUL_SHARE * pairs and even * 10 <= odd:
        return "utf-16-le"
    if pairs and even >= UTF16_NUL_SHARE * pairs and odd * 10 <= even:
        return "utf-16-be"
    return "utf-8"


def extract_text(data: bytes, mime: Mime, path: Path | str = "") -> str:
    """The text of a Markdown or plain-text file (NUL characters, which PostgreSQL cannot store, dropped).

    UTF-8, UTF-16 (LE or BE) with or without a byte order mark, or UTF-32 with one (:func:`text_encoding` measures
    which); a byte order mark is dropped. A file that does not decode in its encoding is refused naming the file and the
    encoding (InvalidInput, field ``text``).

    Line ends are read as LF, as Python reads text: CRLF (Windows) and CR alone (old Mac tools) are one line end
    for the summary, the headings and the chunker, and the same text written with either is the same text. The
    document's hash stays that of the file's bytes."""
    if mime == "pdf":
        raise InvalidInput(f"{path}: PDF text extraction needs a PDF library, which is not installed", field="mime")
    encoding = text_encoding(data)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        name = encoding.upper().replace("-LE", "LE").replace("-BE", "BE")
        measured = "" if encoding == "utf-8" or data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else (
            ", by its NUL bytes, without a byte order mark")
        raise InvalidInput(f"{path}: not {name} text{measured} ({error})", field="text") from error
    return text.removeprefix("\ufeff").replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")


def chunk_spans(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> list[Span]:
    """Contiguous spans of at most ``max_chars`` characters that cover ``text`` exactly.

    A span ends, by preference, after a blank line, then after a line break, then after a space, provided that
    keeps it at least half as long as ``max_chars``; otherwise it is cut at ``max_chars``.
    """
    if max_chars < MIN_MAX_CHARS:
        raise LocalValidationError(f"field max_chars: at least {MIN_MAX_CHARS} characters, not {max_chars}",
                                   sqlstate="22023", field="max_chars")
    spans: list[Span] = []
    start = 0
    while start < len(text):
        end = min(start + max_chars, len(text))
        if end < len(text):
            window = text[start:end]
            floor = max_chars // 2
            for separator in ("\n\n", "\n", " "):
                cut = window.rfind(separator)
                if cut >= floor:
                    end = start + cut + len(separator)
                    break
        spans.append(Span(start, end))
        start = end
    return spans


def summarize(text: str, mime: Mime) -> tuple[str | None, list[str]]:
    """A short summary (the first paragraph that is not a heading) and the key concepts (Markdown headings)."""
    summary = None
    for paragraph in re.split(r"\n\s*\n", text):
        stripped = " ".join(paragraph.split())
        if stripped and not (mime == "md" and stripped.startswith("#")):
            summary = stripped if len(stripped) <= SUMMARY_CHARS else stripped[: SUMMARY_CHARS - 1].rstrip() + "…"
            break
    concepts: list[str] = []
    if mime == "md":
        for match in _HEADING.finditer(text):
            heading = match.group(1).strip()
            if heading and heading not in concepts:
                concepts.append(heading)
    return summary, concepts[:MAX_KEY_CONCEPTS]


def _spans(spans: Sequence[Span]) -> list[Span]:
    """The chunk spans a caller gives, as a list; one that is not a :class:`Span` (or one string for the list) is
    refused naming its place (LocalValidationError, 22023)."""
    found = items(spans, "spans")
    for index, span in enumerate(found):
        if not isinstance(span, Span):
            raise LocalValidationError(f"field spans[{index}]: a Span, not a {type(span).__name__}",
                                       sqlstate="22023", field=f"spans[{index}]")
    return found


def document_ingest(
    file_path: str,
    text: str,
    *,
    file_hash: str,
    mime: Mime,
    spans: Sequence[Span] | None = None,
    embedder: Embedder | None = None,
    metadata: dict[str, Any] | None = None,
    summary: str | None = None,
    key_concepts: Sequence[str] = (),
    entities: Sequence[dict[str, str]] = (),
    max_chars: int = DEFAULT_MAX_CHARS,
) -> Steps[IngestResult]:
    """Store one version of a document from its extracted text (chunked here unless ``spans`` are given)
    (memsub.document_ingest).

    Chunks are embedded when the content hash differs from the path's latest version. An unchanged file costs
    one lookup and, given an ``embedder``, embeds only the stored chunks that carry no vector yet (for example
    after an ingest without an embedder): none left, no embedding call.
    """
    chunks = _spans(spans) if spans is not None else chunk_spans(text, max_chars)
    latest: list[Document] = yield document_versions(file_path)
    vectors: list[list[float]] | None = None
    if embedder is not None and chunks and not (latest and latest[0].hash == file_hash):
        yield from check_document_limits(text, len(chunks), embedder.dimension)
        vectors = embedder.embed([text[s.start:s.end] for s in chunks])
        if len(vectors) != len(chunks):
            raise InvalidInput(f"the embedder returned {len(vectors)} vectors for {len(chunks)} chunks",
                               field="embedding")
    payload: list[dict[str, Any]] = []
    for position, span in enumerate(chunks):
        item: dict[str, Any] = {"start_char": span.start, "end_char": span.end}
        if span.page is not None:
            item["page"] = span.page
        if vectors is not None:
            item["embedding"] = checked_vector(vectors[position], f"chunks[{position}].embedding").to_list()
        payload.append(item)
    result: IngestResult = yield function("document_ingest", {
        "file_path": file_path, "hash": file_hash, "mime": mime, "text": text, "chunks": Json(payload),
        "metadata": json_or_none(metadata), "summary": summary,
        "key_concepts": texts(key_concepts, "key_concepts") or None,
        "entities": Json(list(entities)) if entities else None}, one(IngestResult))
    if embedder is not None and result.status == "unchanged" and result.embedded_count < result.chunk_count:
        result.embedded_count += yield from embed_missing_chunks(result.document_id, embedder)
    return result


VECTOR_ELEMENT_MIN_BYTES = 12
"""The fewest bytes one number of a chunk's vector takes in the jsonb the server holds to ``max_document_bytes``
(``pg_column_size``): a 4-byte entry and a numeric of at least 6 bytes, padded to 4-byte alignment; 0 and 1
take 12, a number of 17 significant digits about 20. A vector of ``n`` numbers takes at least ``12 n - 2``."""


def check_document_limits(text: str, chunk_count: int, dimension: int) -> Steps[None]:
    """Refuse a document the server would refuse on its size limits (``max_document_chars``, then
    ``max_document_bytes`` and ``max_document_chunks``, the order memsub.document_ingest checks them in), before
    its chunks are embedded: LimitExceeded (54000) naming ``text`` or ``chunks``, as the server does. The bytes of
    the vectors are not known before they are computed: a document whose ``chunk_count`` vectors of ``dimension``
    numbers take more than the limit at their smallest is refused; one that is over it only with the vectors the
    embedder returns is refused by the server after they are computed."""
    found: list[dict[str, Any]] = yield query(
        "select memsub.limit_value('max_document_chars') as chars, "
        "memsub.limit_value('max_document_bytes') as bytes, memsub.limit_value('max_document_chunks') as chunks",
        [], raw())
    limits = found[0]
    least_bytes = chunk_count * (VECTOR_ELEMENT_MIN_BYTES * dimension - 2) if dimension > 0 else 0
    for value, maximum, name, field, unit, bound in (
            (len(text), limits["chars"], "max_document_chars", "text", "characters", ""),
            (least_bytes, limits["bytes"], "max_document_bytes", "chunks", "bytes", "at least "),
            (chunk_count, limits["chunks"], "max_document_chunks", "chunks", "size", "")):
        if value > maximum:
            raise LimitExceeded(f'field "{field}" is {unit} over the limit: {bound}{value} > {maximum} ({name}); '
                                "refused before embedding", sqlstate="54000", field=field)


def embed_missing_chunks(document_id: UUID | str, embedder: Embedder) -> Steps[int]:
    """Embed the chunks of a latest document version stored without a vector (memsub.document_embed_chunks);
    returns how many vectors were added."""
    missing: list[Chunk] = yield function("document_chunks_without_embedding", {"document_id": document_id},
                                          rows(Chunk))
    if not missing:
        return 0
    vectors = embedder.embed([chunk.content for chunk in missing])
    if len(vectors) != len(missing):
        raise InvalidInput(f"the embedder returned {len(vectors)} vectors for {len(missing)} chunks",
                           field="embedding")
    payload = [{"chunk_index": chunk.chunk_index, "embedding": [float(v) for v in vector]}
               for chunk, vector in zip(missing, vectors, strict=True)]
    added: int = yield function("document_embed_chunks", {"document_id": document_id, "embeddings": Json(payload)},
                                scalar(int))
    return added


def ingest_file(
    path: Path | str,
    *,
    file_path: str | None = None,
    embedder: Embedder | None = None,
    metadata: dict[str, Any] | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> Steps[IngestResult]:
    """Read, hash, chunk, embed and store a Markdown or text file; ``file_path`` defaults to the path as given."""
    path = Path(path)
    mime = mime_of(path)
    data = path.read_bytes()
    text = extract_text(data, mime, path)
    summary, concepts = summarize(text, mime)
    return (yield from document_ingest(
        file_path or path.as_posix(), text, file_hash=sha256_hex(data), mime=mime, embedder=embedder,
        metadata={"size_bytes": len(data), **(metadata or {})}, summary=summary, key_concepts=concepts,
        max_chars=max_chars,
    ))


def document_versions(file_path: str) -> Call[list[Document]]:
    """The version chain of a path, newest (the latest pointer) first (memsub.document_versions)."""
    return function("document_versions", {"file_path": file_path}, rows(Document))


def document_chunks_of(document_id: UUID | str) -> Call[list[Chunk]]:
    """The chunks of a document version, in order (memsub.document_chunks_of)."""
    return function("document_chunks_of", {"document_id": document_id}, rows(Chunk))


def document_index_put(file_path: str, embedding: Sequence[float] | None = None,
                       metadata: dict[str, Any] | None = None) -> Call[DocumentIndexEntry]:
    """Create or update a document index entry (memsub.document_index_put)."""
    return function("document_index_put", {
        "file_path": file_path,
        "embedding": None if embedding is None else checked_vector(embedding, "embedding").to_list(),
        "metadata": json_or_none(metadata)}, one(DocumentIndexEntry))


def document_index_get(file_path: str) -> Call[DocumentIndexEntry | None]:
    """The document index entry of a path, or None (memsub.document_index_get)."""
    return function("document_index_get", {"file_path": file_path}, optional(DocumentIndexEntry))


class DocumentsArea(Area[SessionT]):
    """``session.documents``: versioned documents, their chunks and vectors, and the path-keyed document index."""

    ingest = method(document_ingest)
    ingest_file = method(ingest_file)
    embed_missing_chunks = method(embed_missing_chunks)
    versions = method(document_versions)
    chunks_of = method(document_chunks_of)
    index_put = method(document_index_put)
    index_get = method(document_index_get)
