"""The sessions area (seed 001): sessions and their state, tasks, agents and checkpoints. Both sessions expose
it as ``session.sessions``::

    with substrate.tenant(tenant_id, user_id=alice, session_id="s1") as session:
        session.sessions.create("s1", project_id="schema_redesign", app_name="abathur")
        task = session.sessions.task_create("plan", {"goal": "schema"})
        session.sessions.checkpoint_save(task.id, {"step": 1})

The database enforces every rule (namespaces, versions, states); errors arrive as ``memsub.errors``
exceptions, e.g. ``ConflictError`` for a stale write. Arguments left as None take the function's SQL default.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel

from memsub._calls import (
    Area,
    Call,
    Json,
    SessionT,
    checked,
    columns_of,
    function,
    json_or_none,
    method,
    one,
    optional,
    query,
    rows,
    scalar,
)
from memsub.memory import MemoryType

SessionStatus = Literal["active", "terminated"]
"""The states of a session (the database's session_statuses())."""
AgentStatus = Literal["active", "finished"]
"""The states of an agent (the database's agent_statuses())."""
TaskStatus = Literal["pending", "running", "completed", "failed", "cancelled"]
"""The states of a task (the database's task_statuses())."""
TASK_FINAL_STATUSES: tuple[TaskStatus, ...] = ("completed", "failed", "cancelled")
"""The statuses a task cannot leave (the database's task_final_statuses())."""


class Session(BaseModel):
    """One row of memsub.sessions."""

    tenant_id: UUID
    id: str
    org_id: UUID | None
    user_id: UUID | None
    project_id: str | None
    app_name: str | None
    status: SessionStatus
    state: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    terminated_at: datetime | None
    event_count: int
    """Events appended so far; they are read with ``session_get_events``."""


class SessionEvent(BaseModel):
    """One row of memsub.session_events: an event of a session, at its place in the session's history."""

    tenant_id: UUID
    session_id: str
    position: int
    org_id: UUID | None
    user_id: UUID | None
    event: dict[str, Any]
    created_at: datetime


class Termination(BaseModel):
    """What memsub.session_terminate did."""

    session_id: str
    status: SessionStatus
    terminated_at: datetime
    migrated_keys: int


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
    deleted_session_user_id: UUID | None = None
    """User of the session deleted under it (memsub.session_delete): the row stays that user's and admins'."""


class Agent(BaseModel):
    """One row of memsub.agents."""

    tenant_id: UUID
    id: UUID
    org_id: UUID | None
    user_id: UUID | None
    name: str
    status: AgentStatus
    session_id: str | None
    task_id: int | None
    metadata: dict[str, Any]
    created_at: datetime
    deleted_session_user_id: UUID | None = None
    """User of the session deleted under it (memsub.session_delete): the row stays that user's and admins'."""


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
    deleted_session_user_id: UUID | None = None
    """User of the session deleted under it (memsub.session_delete): the row stays that user's and admins'."""


# Sessions -------------------------------------------------------------------------------------------------


def session_create(session_id: str | None = None, *, project_id: str | None = None, app_name: str | None = None,
                   state: dict[str, Any] | None = None) -> Call[Session]:
    """Create an active session of the context user (memsub.session_create); without ``session_id`` a new id is
    generated (a UUID), not taken from the context. An id the tenant has, or that a deleted session of another
    user had, is refused (``IntegrityError``, 23505 naming session_id)."""
    return function("session_create", {"session_id": session_id, "project_id": project_id, "app_name": app_name,
                                       "state": json_or_none(state)}, one(Session))


_SESSION_BY_ID = (f"select {columns_of(Session)} from memsub.sessions "  # noqa: S608 - the model's field names
                  "where tenant_id = memsub.current_tenant_id() and id = %(session_id)s")


def get_session(session_id: str) -> Call[Session | None]:
    """The session with this id in the context's tenant, or None (the table memsub.sessions)."""
    return query(_SESSION_BY_ID, {"session_id": checked(session_id, "text", "session_id")}, optional(Session))


def session_append_event(session_id: str, event: dict[str, Any],
                         state_delta: dict[str, Any] | None = None) -> Call[Session]:
    """Append an event and merge its state delta (a value of None removes the key) (memsub.session_append_event)."""
    return function("session_append_event", {"session_id": session_id, "event": Json(event),
                                             "state_delta": json_or_none(state_delta)}, one(Session))


def session_get_events(session_id: str, after_position: int | None = None,
                       limit: int | None = None) -> Call[list[SessionEvent]]:
    """The session's events in the order they were appended, at most ``limit`` (SQL default 1000) after
    ``after_position``, the position of the last event already read (memsub.session_get_events)."""
    return function("session_get_events", {"session_id": session_id, "after_position": after_position,
                                           "limit": limit}, rows(SessionEvent))


def session_merge_state(session_id: str, state_delta: dict[str, Any]) -> Call[Session]:
    """Merge a state delta into the session's state (memsub.session_merge_state)."""
    return function("session_merge_state", {"session_id": session_id, "state_delta": Json(state_delta)},
                    one(Session))


def session_end_turn(session_id: str) -> Call[Session]:
    """Drop the session's temp: keys (memsub.session_end_turn)."""
    return function("session_end_turn", {"session_id": session_id}, one(Session))


def session_terminate(session_id: str, memory_type: MemoryType | None = None, *,
                      cancel_open_tasks: bool | None = None) -> Call[Termination]:
    """Move the session's user: keys into memory (as ``memory_type``, default semantic), clear its state and mark
    it terminated, atomically (memsub.session_terminate).

    Refused (``StateError``, SQLSTATE 55000) while the session has pending or running tasks, unless
    ``cancel_open_tasks``, which cancels them.
    """
    return function("session_terminate", {"session_id": session_id, "memory_type": memory_type,
                                          "cancel_open_tasks": cancel_open_tasks}, one(Termination))


def session_delete(session_id: str) -> Call[bool]:
    """Delete a session (tenant_admin context); what referenced it stays, with session_id NULL, and stays the
    session's user's (its tasks, agents, checkpoints and session:<id> memory)."""
    return function("session_delete", {"session_id": session_id}, scalar(bool))


# Tasks, agents, checkpoints ---------------------------------------------------------------------------------


def task_create(type: str, payload: Any = None, *, session_id: str | None = None,
                parent_task_id: int | None = None) -> Call[Task]:
    """Create a pending task (memsub.task_create); the payload defaults to ``{}``."""
    return function("task_create", {"type": type, "payload": json_or_none(payload), "session_id": session_id,
                                    "parent_task_id": parent_task_id}, one(Task))


def task_link_session(task_id: int, session_id: str) -> Call[Task]:
    """Link an orphan task (no session) to an active session (memsub.task_link_session)."""
    return function("task_link_session", {"task_id": task_id, "session_id": session_id}, one(Task))


def task_set_status(task_id: int, status: TaskStatus, *, result: Any = None, error: str | None = None) -> Call[Task]:
    """Move a task forward to ``status``, with its result or error (memsub.task_set_status): pending to running or
    to a final status, running to a final status; any other move raises StateError."""
    return function("task_set_status", {"task_id": task_id, "status": status, "result": json_or_none(result),
                                        "error": error}, one(Task))


def agent_spawn(name: str, task_id: int, *, session_id: str | None = None,
                metadata: dict[str, Any] | None = None) -> Call[Agent]:
    """Register an agent working on a task (memsub.agent_spawn)."""
    return function("agent_spawn", {"name": name, "task_id": task_id, "session_id": session_id,
                                    "metadata": json_or_none(metadata)}, one(Agent))


def checkpoint_save(task_id: int, state: Any, label: str | None = None) -> Call[Checkpoint]:
    """Save a task's state (any JSON but null: None raises InvalidInput naming ``state``), with its session's state
    (memsub.checkpoint_save)."""
    return function("checkpoint_save", {"task_id": task_id, "state": Json(state), "label": label}, one(Checkpoint))


def checkpoint_restore(checkpoint_id: UUID | str) -> Call[Checkpoint]:
    """Restore a checkpoint: its saved session state goes back into an active session; returns it
    (memsub.checkpoint_restore)."""
    return function("checkpoint_restore", {"checkpoint_id": checkpoint_id}, one(Checkpoint))


class SessionsArea(Area[SessionT]):
    """``session.sessions``: sessions, tasks, agents and checkpoints."""

    create = method(session_create)
    get = method(get_session)
    append_event = method(session_append_event)
    get_events = method(session_get_events)
    merge_state = method(session_merge_state)
    end_turn = method(session_end_turn)
    terminate = method(session_terminate)
    delete = method(session_delete)
    task_create = method(task_create)
    task_link = method(task_link_session)
    task_set_status = method(task_set_status)
    agent_spawn = method(agent_spawn)
    checkpoint_save = method(checkpoint_save)
    checkpoint_restore = method(checkpoint_restore)
