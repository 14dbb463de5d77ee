"""Sessions, tasks, agents, namespaced memory, checkpoints and the document index (seed 001).

Thin typed wrappers over memsub's stored functions, used inside a tenant context::

    with substrate.tenant(tenant_id, user_id=alice, session_id="s1") as memory:
        sessions.create_session(memory, "s1", project_id="schema_redesign", app_name="abathur")
        sessions.write_memory(memory, f"user:{alice}:preferences", "style", {"tone": "concise"})
        context = sessions.memory_context(memory)

The database enforces every rule (namespaces, versions, states); errors arrive as ``memsub.errors``
exceptions, e.g. ``ConflictError`` for a stale write. Rows are decoded by column name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from psycopg.types.json import Jsonb
from pydantic import BaseModel

from memsub import memory
from memsub.client import TenantSession
from memsub.embedding import TextEmbedder
from memsub.errors import ConflictError
from memsub.memory import MemoryEntry, MemoryHit, MemoryType

SessionStatus = Literal["active", "terminated"]
TaskStatus = Literal["pending", "running", "completed", "failed", "cancelled"]


class Session(BaseModel):
    """One row of memsub.sessions."""

    tenant_id: UUID
    id: str
    org_id: UUID | None
    user_id: UUID | None
    project_id: str | None
    app_name: str | None
    status: SessionStatus
    events: list[dict[str, Any]]
    state: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    terminated_at: datetime | None


class Termination(BaseModel):
    """What memsub.session_terminate did."""

    session_id: str
    status: SessionStatus
    terminated_at: datetime
    migrated_keys: int


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
    outcome: Literal["consolidated", "skipped"]


class Task(BaseModel):
    """One row of memsub.tasks."""

    tenant_id: UUID
    id: int
    org_id: UUID | None
    user_id: UUID | None
    type: str
    status: TaskStatus
    payload: Any
    result: Any
    error: str | None
    created_at: datetime
    completed_at: datetime | None
    session_id: str | None
    parent_task_id: int | None


class Agent(BaseModel):
    """One row of memsub.agents."""

    tenant_id: UUID
    id: UUID
    org_id: UUID | None
    user_id: UUID | None
    name: str
    status: str
    session_id: str | None
    task_id: int | None
    metadata: dict[str, Any]
    created_at: datetime


class Checkpoint(BaseModel):
    """One row of memsub.checkpoints."""

    tenant_id: UUID
    id: UUID
    org_id: UUID | None
    user_id: UUID | None
    task_id: int
    session_id: str | None
    sequence: int
    label: str | None
    state: Any
    session_state: dict[str, Any] | None
    created_at: datetime


class DocumentIndexEntry(BaseModel):
    """One entry of memsub.document_index, its embedding as a list of floats."""

    id: UUID
    file_path: str
    embedding: list[float] | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class AuditEntry(BaseModel):
    """One row of memsub.audit."""

    tenant_id: UUID
    id: int
    org_id: UUID | None
    user_id: UUID | None
    operation: str
    session_id: str | None
    agent_id: UUID | None
    task_id: int | None
    memory_entry_id: UUID | None
    namespace: str | None
    key: str | None
    version: int | None
    details: dict[str, Any]
    created_at: datetime


def _json(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


def _one(session: TenantSession, query: str, params: Sequence[Any]) -> dict[str, Any]:
    rows = session.fetch(query, params)
    if len(rows) != 1:
        raise RuntimeError(f"expected one row from {query.split('(')[0]}, got {len(rows)}")
    return rows[0]


# Sessions -------------------------------------------------------------------------------------------------


def create_session(
    session: TenantSession,
    session_id: str | None = None,
    *,
    project_id: str | None = None,
    app_name: str | None = None,
    state: dict[str, Any] | None = None,
) -> Session:
    row = _one(
        session,
        "select * from memsub.session_create(%s, %s, %s, %s)",
        [session_id, project_id, app_name, Jsonb(state or {})],
    )
    return Session.model_validate(row)


def get_session(session: TenantSession, session_id: str) -> Session | None:
    rows = session.fetch(
        "select * from memsub.sessions where tenant_id = memsub.current_tenant_id() and id = %s", [session_id]
    )
    return Session.model_validate(rows[0]) if rows else None


def append_event(
    session: TenantSession, session_id: str, event: dict[str, Any], state_delta: dict[str, Any] | None = None
) -> Session:
    """Append an event and merge its state delta (a value of None removes the key)."""
    row = _one(
        session,
        "select * from memsub.session_append_event(%s, %s, %s)",
        [session_id, Jsonb(event), _json(state_delta)],
    )
    return Session.model_validate(row)


def merge_state(session: TenantSession, session_id: str, state_delta: dict[str, Any]) -> Session:
    row = _one(session, "select * from memsub.session_merge_state(%s, %s)", [session_id, Jsonb(state_delta)])
    return Session.model_validate(row)


def end_turn(session: TenantSession, session_id: str) -> Session:
    """Drop the session's temp: keys."""
    return Session.model_validate(_one(session, "select * from memsub.session_end_turn(%s)", [session_id]))


def terminate_session(
    session: TenantSession, session_id: str, memory_type: MemoryType = "semantic", *,
    cancel_open_tasks: bool = False,
) -> Termination:
    """Move the session's user: keys into memory, clear its state and mark it terminated (atomically).

    Refused (``StateError``, SQLSTATE 55000) while the session has pending or running tasks, unless
    ``cancel_open_tasks``, which cancels them.
    """
    row = _one(session, "select * from memsub.session_terminate(%s, %s, %s)",
               [session_id, memory_type, cancel_open_tasks])
    return Termination.model_validate(row)


def delete_session(session: TenantSession, session_id: str) -> bool:
    """Delete a session (tenant_admin context); what referenced it stays, with session_id NULL."""
    return bool(_one(session, "select memsub.session_delete(%s) as deleted", [session_id])["deleted"])


# Memory ---------------------------------------------------------------------------------------------------


def write_memory(
    session: TenantSession,
    namespace: str,
    key: str,
    value: Any,
    *,
    expected_version: int | None = None,
    memory_type: MemoryType = "semantic",
    metadata: dict[str, Any] | None = None,
    embedding: Sequence[float] | None = None,
    embedder: TextEmbedder | None = None,
) -> MemoryEntry:
    """Write the next version of (namespace, key) (:func:`memsub.memory.write_memory`)."""
    return session.run(memory.write_memory(namespace, key, value, expected_version=expected_version,
                                           memory_type=memory_type, metadata=metadata, embedding=embedding,
                                           embedder=embedder))


def search_memory(
    session: TenantSession,
    query_text: str | None,
    query: Sequence[float] | None = None,
    *,
    embedder: TextEmbedder | None = None,
    k: int = 10,
    namespace_prefix: str | None = None,
) -> list[MemoryHit]:
    """Namespaced memory by meaning and by words (:func:`memsub.memory.search_memory`)."""
    return session.run(memory.search_memory(query_text, query, embedder=embedder, k=k,
                                            namespace_prefix=namespace_prefix))


def vector_text(values: Sequence[float]) -> str:
    """A vector in pgvector's text form, ``[x,y,...]``."""
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def delete_memory(session: TenantSession, namespace: str, key: str, expected_version: int) -> MemoryEntry:
    """Soft-delete (namespace, key); returns the tombstone version."""
    return session.run(memory.delete_memory(namespace, key, expected_version))


def get_memory(session: TenantSession, namespace: str, key: str) -> MemoryEntry | None:
    return session.run(memory.get_memory(namespace, key))


def memory_history(session: TenantSession, namespace: str, key: str) -> list[MemoryEntry]:
    return session.run(memory.memory_history(namespace, key))


def list_memory(session: TenantSession, namespace_prefix: str) -> list[MemoryEntry]:
    return session.run(memory.list_memory(namespace_prefix))


def update_memory(
    session: TenantSession,
    namespace: str,
    key: str,
    change: Callable[[Any], Any],
    *,
    memory_type: MemoryType = "semantic",
    attempts: int = 10,
) -> MemoryEntry:
    """Read-modify-write with the seed's retry: ``change`` gets the live value (None if none) and returns the
    new one; on a version conflict the attempt is rolled back to a savepoint, re-read and retried."""
    for attempt in range(attempts):
        try:
            with session.connection.transaction():
                current = get_memory(session, namespace, key)
                return write_memory(
                    session,
                    namespace,
                    key,
                    change(current.value if current else None),
                    expected_version=current.version if current else None,
                    memory_type=memory_type,
                )
        except ConflictError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def memory_context(session: TenantSession, session_id: str | None = None) -> list[ContextEntry]:
    """A session's context resolved by precedence temp: > session: > user: > app: > project:."""
    rows = session.fetch("select * from memsub.memory_context(%s)", [session_id])
    return [ContextEntry.model_validate(row) for row in rows]


def consolidate(
    session: TenantSession, strategy: str = "last_write_wins", namespace_prefix: str | None = None
) -> list[Consolidation]:
    """Run the consolidation job (tenant_admin context)."""
    rows = session.fetch("select * from memsub.consolidate_memories(%s, %s)", [strategy, namespace_prefix])
    return [Consolidation.model_validate(row) for row in rows]


# Tasks, agents, checkpoints ---------------------------------------------------------------------------------


def create_task(
    session: TenantSession,
    type: str,
    payload: Any = None,
    *,
    session_id: str | None = None,
    parent_task_id: int | None = None,
) -> Task:
    row = _one(
        session,
        "select * from memsub.task_create(%s, %s, %s, %s)",
        [type, Jsonb(payload if payload is not None else {}), session_id, parent_task_id],
    )
    return Task.model_validate(row)


def link_task(session: TenantSession, task_id: int, session_id: str) -> Task:
    """Link an orphan task (no session) to an active session (memsub.task_link_session)."""
    return Task.model_validate(_one(session, "select * from memsub.task_link_session(%s, %s)", [task_id, session_id]))


def set_task_status(
    session: TenantSession, task_id: int, status: TaskStatus, *, result: Any = None, error: str | None = None
) -> Task:
    row = _one(
        session,
        "select * from memsub.task_set_status(%s, %s, %s, %s)",
        [task_id, status, _json(result), error],
    )
    return Task.model_validate(row)


def spawn_agent(
    session: TenantSession,
    name: str,
    task_id: int,
    *,
    session_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Agent:
    row = _one(
        session,
        "select * from memsub.agent_spawn(%s, %s, %s, %s)",
        [name, task_id, session_id, Jsonb(metadata or {})],
    )
    return Agent.model_validate(row)


def set_actor(session: TenantSession, agent_id: UUID | str, task_id: int | None = None) -> None:
    """Name the agent (and task) acting in this transaction; audit rows record them."""
    session.fetch("select memsub.set_actor(%s, %s)", [str(agent_id), task_id])


def save_checkpoint(session: TenantSession, task_id: int, state: Any, label: str | None = None) -> Checkpoint:
    row = _one(session, "select * from memsub.checkpoint_save(%s, %s, %s)", [task_id, Jsonb(state), label])
    return Checkpoint.model_validate(row)


def restore_checkpoint(session: TenantSession, checkpoint_id: UUID | str) -> Checkpoint:
    """Restore a checkpoint: its saved session state goes back into an active session; returns it."""
    row = _one(session, "select * from memsub.checkpoint_restore(%s)", [str(checkpoint_id)])
    return Checkpoint.model_validate(row)


# Document index and audit -----------------------------------------------------------------------------------


def put_document(
    session: TenantSession,
    file_path: str,
    embedding: Sequence[float] | None = None,
    metadata: dict[str, Any] | None = None,
) -> DocumentIndexEntry:
    row = _one(
        session,
        "select * from memsub.document_index_put(%s, %s, %s)",
        [file_path, None if embedding is None else [float(x) for x in embedding], Jsonb(metadata or {})],
    )
    return DocumentIndexEntry.model_validate(row)


def get_document(session: TenantSession, file_path: str) -> DocumentIndexEntry | None:
    rows = session.fetch("select * from memsub.document_index_get(%s)", [file_path])
    return DocumentIndexEntry.model_validate(rows[0]) if rows else None


def audit_trail(
    session: TenantSession,
    *,
    session_id: str | None = None,
    namespace: str | None = None,
    key: str | None = None,
    limit: int = 1000,
) -> list[AuditEntry]:
    """Visible audit rows, oldest first, optionally of one session or one memory key."""
    rows = session.fetch(
        "select * from memsub.audit where tenant_id = memsub.current_tenant_id()"
        " and (%s::text is null or session_id = %s) and (%s::text is null or namespace = %s)"
        " and (%s::text is null or key = %s) order by id limit %s",
        [session_id, session_id, namespace, namespace, key, key, limit],
    )
    return [AuditEntry.model_validate(row) for row in rows]
