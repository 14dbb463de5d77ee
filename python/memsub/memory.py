"""Namespaced memory (seed 001): versioned entries per (namespace, key) with optimistic concurrency, soft
deletes, history, prefix listing and fused search by meaning and words. The sync and async tenant sessions expose
each call as a method of the same name; :mod:`memsub.sessions` keeps the session-first functions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel

from memsub._calls import NULL, Call, Json, function, json_or_none, one, optional, rows, vector
from memsub.embedding import TextEmbedder, embed_one

MemoryType = Literal["semantic", "episodic", "procedural"]


class MemoryEntry(BaseModel):
    """One version of a namespaced memory entry (memsub.memory_entries)."""

    tenant_id: UUID
    id: UUID
    org_id: UUID | None
    user_id: UUID | None
    namespace: str
    key: str
    value: Any
    memory_type: MemoryType
    version: int
    is_deleted: bool
    metadata: dict[str, Any]
    session_id: str | None
    created_at: datetime
    namespace_kind: str
    namespace_owner: str


class MemoryHit(BaseModel):
    """One row of memsub.memory_search: the latest live version of a key, with its fused score and ranks."""

    id: UUID
    namespace: str
    key: str
    version: int
    value: Any
    memory_type: MemoryType
    score: float
    vector_rank: int | None
    text_rank: int | None
    distance: float | None
    text_score: float | None


def memory_text(key: str, value: Any) -> str:
    """The text a memory entry is embedded from: its key and the strings of its value (or the value as JSON)."""
    strings: list[str] = []

    def collect(item: Any) -> None:
        if isinstance(item, str):
            strings.append(item)
        elif isinstance(item, dict):
            for inner in item.values():
                collect(inner)
        elif isinstance(item, list):
            for inner in item:
                collect(inner)

    collect(value)
    return f"{key}: " + (" ".join(strings) if strings else json.dumps(value, sort_keys=True))


def write_memory(namespace: str, key: str, value: Any, *, expected_version: int | None = None,
                 memory_type: MemoryType = "semantic", metadata: dict[str, Any] | None = None,
                 embedding: Sequence[float] | None = None, embedder: TextEmbedder | None = None) -> Call[MemoryEntry]:
    """Write the next version of (namespace, key); ``expected_version`` is the version read (None: none live).

    The version carries ``embedding``, or, given an ``embedder``, the vector of :func:`memory_text` (so
    :func:`search_memory` finds it by meaning as well as by words). Raises ``ConflictError`` when another writer
    got there first (memsub.memory_write).
    """
    if embedding is None and embedder is not None:
        embedding = embed_one(embedder, memory_text(key, value))
    return function("memory_write", {
        "namespace": namespace, "key": key, "value": Json(value), "expected_version": expected_version,
        "memory_type": memory_type, "metadata": json_or_none(metadata),
        "embedding": vector(embedding)}, one(MemoryEntry))


def get_memory(namespace: str, key: str) -> Call[MemoryEntry | None]:
    """The live version of (namespace, key), or None (memsub.memory_get)."""
    return function("memory_get", {"namespace": namespace, "key": key}, optional(MemoryEntry))


def delete_memory(namespace: str, key: str, expected_version: int) -> Call[MemoryEntry]:
    """Soft-delete (namespace, key) at the version read; returns the tombstone version (memsub.memory_delete)."""
    return function("memory_delete", {"namespace": namespace, "key": key,
                                      "expected_version": NULL if expected_version is None else expected_version},
                    one(MemoryEntry))


def memory_history(namespace: str, key: str) -> Call[list[MemoryEntry]]:
    """Every version of (namespace, key), oldest first (memsub.memory_history)."""
    return function("memory_history", {"namespace": namespace, "key": key}, rows(MemoryEntry))


def list_memory(namespace_prefix: str) -> Call[list[MemoryEntry]]:
    """The live entries of the namespaces under a prefix (memsub.memory_list)."""
    return function("memory_list", {"namespace_prefix": namespace_prefix}, rows(MemoryEntry))


def search_memory(query_text: str | None, query: Sequence[float] | None = None, *,
                  embedder: TextEmbedder | None = None, k: int = 10,
                  namespace_prefix: str | None = None) -> Call[list[MemoryHit]]:
    """Namespaced memory the caller may see, by meaning (``query``, or ``query_text`` embedded by ``embedder``) and
    by words (``query_text``), fused by reciprocal rank fusion (memsub.memory_search)."""
    if query is None and embedder is not None and query_text is not None:
        query = embed_one(embedder, query_text)
    return function("memory_search", {"query_text": NULL if query_text is None else query_text,
                                      "query": vector(query), "k": k, "namespace_prefix": namespace_prefix},
                    rows(MemoryHit))
