"""Sessions, tasks, agents, checkpoints, the document index and the audit trail (seed 001).

Each call is declared once here; the sync and async tenant sessions expose it as a method of the same name::

    with substrate.tenant(tenant_id, user_id=alice, session_id="s1") as memory:
        memory.create_session("s1", project_id="schema_redesign", app_name="abathur")
        memory.write_memory(f"user:{alice}:preferences", "style", {"tone": "concise"})
        context = memory.memory_context()

The database enforces every rule (namespaces, versions, states); errors arrive as ``memsub.errors``
exceptions, e.g. ``ConflictError`` for a stale write. Arguments left as None take the function's SQL default.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel

from memsub._calls import Call, Json, Shape, function, json_or_none, one, optional, query, rows, scalar
from memsub.memory import MemoryType

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


# Sessions -------------------------------------------------------------------------------------------------


def create_session(session_id: str | None = None, *, project_id: str | None = None, app_name: str | None = None,
                   state: dict[str, Any] | None = None) -> Call[Session]:
    """Create an active session (memsub.session_create); without ``session_id`` the context's session id."""
    return function("session_create", {"session_id": session_id, "project_id": project_id, "app_name": app_name,
                                       "state": json_or_none(state)}, one(Session))


def get_session(session_id: str) -> Call[Session | None]:
    """The session with this id in the context's tenant, or None."""
    return query("select * from memsub.sessions where tenant_id = memsub.current_tenant_id() and id = %s",
                 [session_id], optional(Session))


def append_event(session_id: str, event: dict[str, Any], state_delta: dict[str, Any] | None = None) -> Call[Session]:
    """Append an event and merge its state delta (a value of None removes the key) (memsub.session_append_event)."""
    return function("session_append_event", {"session_id": session_id, "event": Json(event),
                                             "state_delta": json_or_none(state_delta)}, one(Session))


def merge_state(session_id: str, state_delta: dict[str, Any]) -> Call[Session]:
    """Merge a state delta into the session's state (memsub.session_merge_state)."""
    return function("session_merge_state", {"session_id": session_id, "state_delta": Json(state_delta)},
                    one(Session))


def end_turn(session_id: str) -> Call[Session]:
    """Drop the session's temp: keys (memsub.session_end_turn)."""
    return function("session_end_turn", {"session_id": session_id}, one(Session))


def terminate_session(session_id: str, memory_type: MemoryType | None = None, *,
                      cancel_open_tasks: bool | None = None) -> Call[Termination]:
    """Move the session's user: keys into memory (as ``memory_type``, default semantic), clear its state and mark
    it terminated, atomically (memsub.session_terminate).

    Refused (``StateError``, SQLSTATE 55000) while the session has pending or running tasks, unless
    ``cancel_open_tasks``, which cancels them.
    """
    return function("session_terminate", {"session_id": session_id, "memory_type": memory_type,
                                          "cancel_open_tasks": cancel_open_tasks}, one(Termination))


def delete_session(session_id: str) -> Call[bool]:
    """Delete a session (tenant_admin context); what referenced it stays, with session_id NULL."""
    return function("session_delete", {"session_id": session_id}, scalar(bool))


def memory_context(session_id: str | None = None) -> Call[list[ContextEntry]]:
    """A session's context resolved by precedence temp: > session: > user: > app: > project: (default: the
    context's session) (memsub.memory_context)."""
    return function("memory_context", {"session_id": session_id}, rows(ContextEntry))


def consolidate(strategy: str | None = None, namespace_prefix: str | None = None) -> Call[list[Consolidation]]:
    """Run the consolidation job (tenant_admin context; default strategy last_write_wins)
    (memsub.consolidate_memories)."""
    return function("consolidate_memories", {"strategy": strategy, "namespace_prefix": namespace_prefix},
                    rows(Consolidation))


# Tasks, agents, checkpoints ---------------------------------------------------------------------------------


def create_task(type: str, payload: Any = None, *, session_id: str | None = None,
                parent_task_id: int | None = None) -> Call[Task]:
    """Create a pending task (memsub.task_create); the payload defaults to ``{}``."""
    return function("task_create", {"type": type, "payload": json_or_none(payload), "session_id": session_id,
                                    "parent_task_id": parent_task_id}, one(Task))


def link_task(task_id: int, session_id: str) -> Call[Task]:
    """Link an orphan task (no session) to an active session (memsub.task_link_session)."""
    return function("task_link_session", {"task_id": task_id, "session_id": session_id}, one(Task))


def set_task_status(task_id: int, status: TaskStatus, *, result: Any = None, error: str | None = None) -> Call[Task]:
    """Move a task to ``status``, with its result or error (memsub.task_set_status)."""
    return function("task_set_status", {"task_id": task_id, "status": status, "result": json_or_none(result),
                                        "error": error}, one(Task))


def spawn_agent(name: str, task_id: int, *, session_id: str | None = None,
                metadata: dict[str, Any] | None = None) -> Call[Agent]:
    """Register an agent working on a task (memsub.agent_spawn)."""
    return function("agent_spawn", {"name": name, "task_id": task_id, "session_id": session_id,
                                    "metadata": json_or_none(metadata)}, one(Agent))


def set_actor(agent_id: UUID | str, task_id: int | None = None) -> Call[None]:
    """Name the agent (and task) acting in this transaction; audit rows record them (memsub.set_actor). In
    per-call mode the transaction is the call's own, so this names nobody for later calls."""
    return function("set_actor", {"agent_id": agent_id, "task_id": task_id}, Shape(("value",), lambda _: None))


def save_checkpoint(task_id: int, state: Any, label: str | None = None) -> Call[Checkpoint]:
    """Save a task's state, with its session's state (memsub.checkpoint_save)."""
    return function("checkpoint_save", {"task_id": task_id, "state": Json(state), "label": label}, one(Checkpoint))


def restore_checkpoint(checkpoint_id: UUID | str) -> Call[Checkpoint]:
    """Restore a checkpoint: its saved session state goes back into an active session; returns it."""
    return function("checkpoint_restore", {"checkpoint_id": checkpoint_id}, one(Checkpoint))


# Document index and audit -----------------------------------------------------------------------------------


def put_document(file_path: str, embedding: Sequence[float] | None = None,
                 metadata: dict[str, Any] | None = None) -> Call[DocumentIndexEntry]:
    """Create or update a document index entry (memsub.document_index_put)."""
    return function("document_index_put", {
        "file_path": file_path, "embedding": None if embedding is None else [float(x) for x in embedding],
        "metadata": json_or_none(metadata)}, one(DocumentIndexEntry))


def get_document(file_path: str) -> Call[DocumentIndexEntry | None]:
    """The document index entry of a path, or None (memsub.document_index_get)."""
    return function("document_index_get", {"file_path": file_path}, optional(DocumentIndexEntry))


def audit_trail(*, session_id: str | None = None, namespace: str | None = None, key: str | None = None,
                limit: int = 1000) -> Call[list[AuditEntry]]:
    """Visible audit rows, oldest first, optionally of one session or one memory key."""
    return query(
        "select * from memsub.audit where tenant_id = memsub.current_tenant_id()"
        " and (%s::text is null or session_id = %s) and (%s::text is null or namespace = %s)"
        " and (%s::text is null or key = %s) order by id limit %s",
        [session_id, session_id, namespace, namespace, key, key, limit], rows(AuditEntry))
