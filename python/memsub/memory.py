"""The memory area (seeds 001 and 003): namespaced entries, versioned per (namespace, key) with optimistic
concurrency, soft deletes, history, prefix listing and fused search by meaning and words; a session's context
resolved by namespace precedence; consolidation; memory types (STM, LTM, Procedural), importance and decay.
Both sessions expose it as ``session.memory``::

    with substrate.tenant(tenant_id, user_id=user, session_id="s1") as session:
        entry = session.memory.write(f"user:{user}:preferences", "style", {"tone": "concise"})
        session.memory.remember(f"user:{user}:notes", "topic", "pgvector", tier="STM", importance=0.9)
        context = session.memory.context()
    with substrate.tenant(tenant_id, roles=["tenant_admin"]) as admin:
        report = admin.memory.maintenance()   # promotes STM entries by the documented rule

The decay rule (sql/630_memory_decay.sql): strength halves every half-life without access and each access adds
1; an STM entry is promoted to LTM when importance * strength reaches the threshold.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from datetime import datetime, timedelta
from typing import Any, Literal, overload
from uuid import UUID

from pydantic import BaseModel

from memsub._calls import (
    NULL,
    Area,
    AsyncSession,
    Call,
    Json,
    SessionT,
    Steps,
    SyncSession,
    function,
    json_or_none,
    method,
    one,
    optional,
    query,
    raw,
    rows,
    vector_or_none,
)
from memsub.embedding import Embedder, embed_one
from memsub.errors import ConflictError, LocalValidationError

MemoryType = Literal["semantic", "episodic", "procedural"]
MemoryTier = Literal["STM", "LTM", "Procedural"]


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


class TieredMemory(BaseModel):
    """A memory entry version with its seed 003 memory type and decay state."""

    id: UUID
    namespace: str
    key: str
    value: Any
    version: int
    memory_type: str
    memory_tier: MemoryTier
    importance: float
    decay_weight: float
    last_access_ts: datetime | None
    promoted_at: datetime | None
    created_at: datetime


class MaintenanceOutcome(BaseModel):
    """One short-term entry looked at by memsub.memory_maintenance."""

    memory_entry_id: UUID
    namespace: str
    key: str
    version: int
    importance: float
    strength: float
    score: float
    outcome: Literal["promoted", "kept"]


class ContextEntry(BaseModel):
    """One name of a session's resolved context (memsub.memory_context): the entry of highest precedence."""

    name: str
    namespace: str
    key: str
    value: Any
    version: int | None
    memory_type: MemoryType | None
    source: Literal["state", "memory"]
    precedence: int


class Consolidation(BaseModel):
    """One key handled by memsub.consolidate_memories."""

    namespace: str
    key: str
    version: int | None
    memory_entry_id: UUID | None
    consolidated_versions: list[int]
    strategy: str
    outcome: Literal["consolidated", "skipped", "too_large"]


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


def _entry_value(value: Any) -> Json:
    """A memory entry's value: any JSON but null. None is refused (LocalValidationError, 23502, naming ``value``):
    memsub.memory_write requires a value (memsub.memory_delete deletes), and a version holding null would read as
    no entry at all."""
    if value is None:
        raise LocalValidationError("field value: a memory entry's value is any JSON but null (memory_delete deletes "
                                   "an entry)", sqlstate="23502", field="value")
    return Json(value)


def memory_write(namespace: str, key: str, value: Any, *, expected_version: int | None = None,
                 memory_type: MemoryType = "semantic", metadata: dict[str, Any] | None = None,
                 embedding: Sequence[float] | None = None, embedder: Embedder | None = None) -> Call[MemoryEntry]:
    """Write the next version of (namespace, key); ``expected_version`` is the version read (None: none live).

    ``value`` is any JSON but null (None raises LocalValidationError naming it). The version carries
    ``embedding``, or, given an ``embedder``, the vector of :func:`memory_text` (so :func:`memory_search` finds it
    by meaning as well as by words). Raises ``ConflictError`` when another writer got there first
    (memsub.memory_write).
    """
    entry_value = _entry_value(value)
    if embedding is None and embedder is not None:
        embedding = embed_one(embedder, memory_text(key, value))
    return function("memory_write", {
        "namespace": namespace, "key": key, "value": entry_value, "expected_version": expected_version,
        "memory_type": memory_type, "metadata": json_or_none(metadata),
        "embedding": vector_or_none(embedding)}, one(MemoryEntry))


def memory_get(namespace: str, key: str) -> Call[MemoryEntry | None]:
    """The live version of (namespace, key), or None (memsub.memory_get)."""
    return function("memory_get", {"namespace": namespace, "key": key}, optional(MemoryEntry))


def memory_delete(namespace: str, key: str, expected_version: int) -> Call[MemoryEntry]:
    """Soft-delete (namespace, key) at the version read; returns the tombstone version (memsub.memory_delete)."""
    return function("memory_delete", {"namespace": namespace, "key": key,
                                      "expected_version": NULL if expected_version is None else expected_version},
                    one(MemoryEntry))


def memory_history(namespace: str, key: str) -> Call[list[MemoryEntry]]:
    """Every version of (namespace, key), oldest first (memsub.memory_history)."""
    return function("memory_history", {"namespace": namespace, "key": key}, rows(MemoryEntry))


def memory_list(namespace_prefix: str, limit: int | None = None) -> Call[list[MemoryEntry]]:
    """The live entries of the namespaces under a prefix, by namespace, then key (memsub.memory_list): every one
    up to max_rows without ``limit`` (more raise LimitExceeded naming namespace_prefix), else the first ``limit``
    (at most max_rows)."""
    return function("memory_list", {"namespace_prefix": namespace_prefix,
                                    "limit": limit}, rows(MemoryEntry))


def memory_search(query_text: str | None, query: Sequence[float] | None = None, *,
                  embedder: Embedder | None = None, k: int = 10,
                  namespace_prefix: str | None = None) -> Call[list[MemoryHit]]:
    """Namespaced memory the caller may see, by meaning (``query``, or ``query_text`` embedded by ``embedder``) and
    by words (``query_text``), fused by reciprocal rank fusion (memsub.memory_search)."""
    if query is None and embedder is not None and query_text is not None:
        query = embed_one(embedder, query_text)
    return function("memory_search", {"query_text": NULL if query_text is None else query_text,
                                      "query": vector_or_none(query), "k": k, "namespace_prefix": namespace_prefix},
                    rows(MemoryHit))


def memory_remember(namespace: str, key: str, value: Any, *, tier: MemoryTier | None = None,
                    importance: float | None = None, expected_version: int | None = None,
                    kind: Literal["semantic", "episodic"] | None = None,
                    metadata: dict[str, Any] | None = None) -> Call[TieredMemory]:
    """Write the next version of (namespace, key) as STM (the default), LTM or Procedural memory, importance 0.5
    unless given (memsub.memory_remember); ``value`` is any JSON but null, as for :func:`memory_write`."""
    return function("memory_remember", {
        "namespace": namespace, "key": key, "value": _entry_value(value), "tier": tier, "importance": importance,
        "expected_version": expected_version, "kind": kind, "metadata": json_or_none(metadata)},
        one(TieredMemory))


def memory_touch(namespace: str, key: str, half_life: timedelta | None = None) -> Call[TieredMemory]:
    """Record an access of the live entry of (namespace, key) (half-life 7 days unless given) (memsub.memory_touch)."""
    return function("memory_touch", {"namespace": namespace, "key": key, "half_life": half_life}, one(TieredMemory))


def memory_maintenance(threshold: float | None = None,
                       half_life: timedelta | None = None) -> Call[list[MaintenanceOutcome]]:
    """Promote short-term memories by the rule (tenant_admin context; threshold 1.0 and half-life 7 days unless
    given); returns every STM entry looked at (memsub.memory_maintenance)."""
    return function("memory_maintenance", {"threshold": threshold, "half_life": half_life}, rows(MaintenanceOutcome))


def memory_context(session_id: str | None = None) -> Call[list[ContextEntry]]:
    """A session's context resolved by precedence temp: > session: > user: > app: > project: (default: the
    context's session) (memsub.memory_context)."""
    return function("memory_context", {"session_id": session_id}, rows(ContextEntry))


def consolidate_memories(strategy: str | None = None, namespace_prefix: str | None = None) -> Call[list[Consolidation]]:
    """Run the consolidation job (tenant_admin context; default strategy last_write_wins)
    (memsub.consolidate_memories)."""
    return function("consolidate_memories", {"strategy": strategy, "namespace_prefix": namespace_prefix},
                    rows(Consolidation))


def _read_modify_write(namespace: str, key: str, change: Callable[[Any], Any],
                       memory_type: MemoryType | None) -> Steps[MemoryEntry]:
    """One attempt of :meth:`MemoryArea.update`: read the live entry, write ``change`` of it at its version, with
    its memory type (unless ``memory_type`` is given; semantic for a new entry) and its metadata."""
    current: MemoryEntry | None = yield memory_get(namespace, key)
    written: MemoryEntry = yield memory_write(
        namespace, key, change(current.value if current else None),
        expected_version=current.version if current else None,
        memory_type=memory_type or (current.memory_type if current else "semantic"),
        metadata=current.metadata if current else None)
    return written


_ISOLATION = "select pg_catalog.current_setting('transaction_isolation') as level"


def _in_snapshot(level: str, conflict: ConflictError) -> ConflictError | None:
    """The conflict to raise at once when a block's transaction runs at a snapshot level (REPEATABLE READ,
    SERIALIZABLE: a login's or database's default_transaction_isolation): a retry to a savepoint reads the
    snapshot the transaction began with, and would lose to the same newer version every time."""
    if level == "read committed":
        return None
    return ConflictError(f"{conflict} (the block's transaction runs at {level}: a retry inside it reads the same "
                         "snapshot and loses again; run the block again, or update in per-call mode)",
                         sqlstate=conflict.sqlstate, field=conflict.field)


def _update(session: SyncSession, namespace: str, key: str, change: Callable[[Any], Any],
            memory_type: MemoryType | None, attempts: int) -> MemoryEntry:
    for attempt in range(attempts):
        try:
            with nullcontext() if session.per_call else session.connection.transaction():
                return session._drive(_read_modify_write(namespace, key, change, memory_type))
        except ConflictError as conflict:
            if attempt == attempts - 1:
                raise
            if not session.per_call:
                final = _in_snapshot(str(session._run(query(_ISOLATION, (), raw()))[0]["level"]), conflict)
                if final is not None:
                    raise final from conflict
    raise ValueError("attempts must be at least 1")


async def _update_async(session: AsyncSession, namespace: str, key: str, change: Callable[[Any], Any],
                        memory_type: MemoryType | None, attempts: int) -> MemoryEntry:
    for attempt in range(attempts):
        try:
            async with nullcontext() if session.per_call else session.connection.transaction():
                return await session._drive(_read_modify_write(namespace, key, change, memory_type))
        except ConflictError as conflict:
            if attempt == attempts - 1:
                raise
            if not session.per_call:
                final = _in_snapshot(str((await session._run(query(_ISOLATION, (), raw())))[0]["level"]), conflict)
                if final is not None:
                    raise final from conflict
    raise ValueError("attempts must be at least 1")


class MemoryArea(Area[SessionT]):
    """``session.memory``: namespaced entries, their context, consolidation, types and decay."""

    @overload
    def update(self: MemoryArea[SyncSession], namespace: str, key: str, change: Callable[[Any], Any], *,
               memory_type: MemoryType | None = None, attempts: int = 10) -> MemoryEntry: ...

    @overload
    async def update(self: MemoryArea[AsyncSession], namespace: str, key: str, change: Callable[[Any], Any], *,
                     memory_type: MemoryType | None = None, attempts: int = 10) -> MemoryEntry: ...

    def update(self, namespace: str, key: str, change: Callable[[Any], Any], *,
               memory_type: MemoryType | None = None, attempts: int = 10) -> Any:
        """Read-modify-write with retry: ``change`` gets the live value (None if none) and returns the new one (any
        JSON but null: None is refused, naming ``value``), written with the live entry's memory type (unless
        ``memory_type`` is given; semantic for a new entry) and metadata, as memsub.memory_write writes (a long-term
        version without a vector); on a version conflict the attempt is undone (to a savepoint, or with its own
        transaction in per-call mode), re-read and retried, at most ``attempts`` times (awaited on the async
        session). In a block whose transaction runs at REPEATABLE READ or SERIALIZABLE a retry would read the
        same snapshot: the first conflict is raised, to run the block again."""
        if isinstance(self._session, AsyncSession):
            return _update_async(self._session, namespace, key, change, memory_type, attempts)
        return _update(self._session, namespace, key, change, memory_type, attempts)

    write = method(memory_write)
    get = method(memory_get)
    delete = method(memory_delete)
    history = method(memory_history)
    search = method(memory_search)
    remember = method(memory_remember)
    touch = method(memory_touch)
    maintenance = method(memory_maintenance)
    context = method(memory_context)
    consolidate = method(consolidate_memories)
    list = method(memory_list)
