"""Google ADK session and memory services kept in memsub, isolated per tenant by row-level security.

::

    from memsub.integrations.adk import MemsubMemoryService, MemsubSessionService

    sessions = MemsubSessionService.from_dsn(dsn, tenant_id=tenant)
    session = await sessions.create_session(app_name="helpdesk", user_id="alice", state={"user:tier": "gold"})
    memory = MemsubMemoryService.from_dsn(dsn, tenant_id=tenant, embedder=HashingEmbedder(64))
    await memory.add_session_to_memory(session)

``MemsubSessionService`` implements ADK's ``BaseSessionService``: create, get (``GetSessionConfig``:
``num_recent_events``, ``after_timestamp``), list and delete sessions, and ``append_event``, whose state delta
goes by prefix: ``app:`` keys to the app's state, ``user:`` keys to the user's state in the app, ``temp:`` keys
nowhere, other keys to the session. ``MemsubMemoryService`` implements ``BaseMemoryService``: sessions added to
memory are searched by keyword, and by similarity when the service has an embedder.

Each call is one transaction of the service's tenant context running one stored function
(``sql/940_adk.sql``; tables in ``migrations/2.18.0__adk_sessions.sql``). Everything lives in the context's
tenant and organization: two tenants (or two organizations) may use the same app, user and session names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from google.adk.events import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse
from google.genai import types

from memsub._calls import strict_jsonb
from memsub.connection import DEFAULT_PREPARE_THRESHOLD
from memsub.errors import InvalidInput
from memsub.integrations._context import TenantContext, async_call, async_pool_of, pool_options, row_count

# Each statement names the columns it reads: a prepared `select *` fails once on each pooled connection after an
# upgrade that changes the function's result (docs/operations.md, "Upgrading while applications run").
CREATE = ("select id, state, last_update_time from memsub.adk_session_create(p_app_name => %s, p_user_id => %s, "
          "p_session_id => %s, p_state => %s)")
GET = ("select state, last_update_time, events from memsub.adk_session_get(p_app_name => %s, p_user_id => %s, "
       "p_session_id => %s, p_num_recent_events => %s, p_after_timestamp => %s)")
LIST = "select id, last_update_time from memsub.adk_session_list(p_app_name => %s, p_user_id => %s)"
DELETE = "select memsub.adk_session_delete(p_app_name => %s, p_user_id => %s, p_session_id => %s) as deleted"
APPEND = ("select memsub.adk_session_append_event(p_app_name => %s, p_user_id => %s, p_session_id => %s, "
          "p_event => %s, p_last_update_time => %s) as last_update_time")
MEMORY_ADD = ("select memsub.adk_memory_add(p_app_name => %s, p_user_id => %s, p_session_id => %s, "
              "p_memories => %s) as added")
MEMORY_SEARCH = ("select session_id, event_id, author, \"timestamp\", content, score from memsub.adk_memory_search("
                 "p_app_name => %s, p_user_id => %s, p_query => %s, p_query_embedding => %s, p_limit => %s)")

Embed = Callable[[Sequence[str]], list[list[float]]]


def _names(**names: Any) -> list[Any]:
    """The names as given, or InvalidInput naming the first that is not a string (the database checks the rest)."""
    for field, value in names.items():
        if not isinstance(value, str):
            raise InvalidInput(f"memsub: {field} must be a string, not {type(value).__name__}", sqlstate="22023",
                               field=field)
    return list(names.values())


class _Pooled:
    """An async pool for one tenant context, opened on first use when built from a DSN; its options (the client's
    ``prepare_threshold``) are judged when the service is built, before any connection."""

    def __init__(self, pool: Any, context: TenantContext, dsn: str | None = None,
                 prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> None:
        self.pool = pool
        self.context = context
        self._options = None if dsn is None else pool_options(dsn, prepare_threshold=prepare_threshold)

    async def _pool(self) -> Any:
        if self.pool is None:
            if self._options is None:
                raise RuntimeError(f"{type(self).__name__}: give a pool or use from_dsn")
            pool = async_pool_of(self._options)
            await pool.open()
            self.pool = pool
        return self.pool

    async def _call(self, query: str, args: Sequence[Any]) -> list[dict[str, Any]]:
        return await async_call(await self._pool(), self.context, query, args)

    async def close(self) -> None:
        """Close the pool (only one this service opened from a DSN)."""
        if self.pool is not None and self._options is not None:
            await self.pool.close()
            self.pool = None


class MemsubSessionService(_Pooled, BaseSessionService):
    """ADK ``BaseSessionService`` over memsub; ``pool`` is a psycopg ``AsyncConnectionPool`` of an app login."""

    def __init__(self, pool: Any, context: TenantContext, *, dsn: str | None = None,
                 prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> None:
        _Pooled.__init__(self, pool, context, dsn, prepare_threshold)

    @classmethod
    def from_dsn(cls, dsn: str, *, tenant_id: Any, org_id: Any = None, user_id: Any = None,
                 prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> MemsubSessionService:
        """A service with its own async pool, opened on first use; ``await service.close()`` closes it.
        ``prepare_threshold`` is the client's (None: prepare nothing, behind a transaction-mode connection pooler);
        a bad one raises ConfigurationError here."""
        return cls(None, TenantContext(tenant_id, org_id, user_id), dsn=dsn, prepare_threshold=prepare_threshold)

    async def create_session(self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None,
                             session_id: str | None = None) -> Session:
        if session_id is not None:
            _names(session_id=session_id)
            # As ADK's in-memory service: the spaces around an id go, and a blank one is no id (one is made).
            session_id = session_id.strip() or None
        if state is not None and not isinstance(state, dict):
            raise InvalidInput("memsub: state must be a dict", sqlstate="22023", field="state")
        rows = await self._call(CREATE, [*_names(app_name=app_name, user_id=user_id), session_id,
                                         None if state is None else strict_jsonb(state, "state")])
        row = rows[0]
        return Session(id=row["id"], app_name=app_name, user_id=user_id, state=row["state"],
                       last_update_time=row["last_update_time"])

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: GetSessionConfig | None = None) -> Session | None:
        # As ADK's own services: 0 or None means "no limit" for both settings.
        # A count is held to max_rows by the stored function (54000); one no integer holds is refused here (22003).
        recent = row_count(config.num_recent_events if config and config.num_recent_events else None,
                           "num_recent_events")
        after = config.after_timestamp if config and config.after_timestamp else None
        rows = await self._call(GET, [*_names(app_name=app_name, user_id=user_id, session_id=session_id), recent,
                                      after])
        if not rows:
            return None
        row = rows[0]
        return Session(id=session_id, app_name=app_name, user_id=user_id, state=row["state"],
                       events=[Event.model_validate(event) for event in row["events"]],
                       last_update_time=row["last_update_time"])

    async def list_sessions(self, *, app_name: str, user_id: str) -> ListSessionsResponse:
        rows = await self._call(LIST, _names(app_name=app_name, user_id=user_id))
        return ListSessionsResponse(sessions=[
            Session(id=row["id"], app_name=app_name, user_id=user_id, state={},
                    last_update_time=row["last_update_time"]) for row in rows])

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self._call(DELETE, _names(app_name=app_name, user_id=user_id, session_id=session_id))

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:  # partial (streaming) events are never stored, as in ADK's own services
            return event
        stored = event.model_dump(mode="json", exclude_none=True)
        rows = await self._call(APPEND, [session.app_name, session.user_id, session.id, strict_jsonb(stored, "event"),
                                         session.last_update_time])
        session.last_update_time = rows[0]["last_update_time"]
        return await super().append_event(session=session, event=event)


def _text(content: types.Content | None) -> str:
    return "\n".join(part.text for part in (content.parts or []) if part.text) if content else ""


class MemsubMemoryService(_Pooled, BaseMemoryService):
    """ADK ``BaseMemoryService`` over memsub: the text events of sessions, searched by keyword, and by cosine
    similarity when ``embedder`` (a :class:`memsub.embedding.Embedder` or a function of a list of texts) is given."""

    def __init__(self, pool: Any, context: TenantContext, *, embedder: Any = None, limit: int = 10,
                 dsn: str | None = None, prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> None:
        _Pooled.__init__(self, pool, context, dsn, prepare_threshold)
        self._embed: Embed | None = None if embedder is None else getattr(embedder, "embed", embedder)
        self.limit = limit

    @classmethod
    def from_dsn(cls, dsn: str, *, tenant_id: Any, org_id: Any = None, user_id: Any = None, embedder: Any = None,
                 limit: int = 10, prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> MemsubMemoryService:
        """As :meth:`MemsubSessionService.from_dsn`."""
        return cls(None, TenantContext(tenant_id, org_id, user_id), embedder=embedder, limit=limit, dsn=dsn,
                   prepare_threshold=prepare_threshold)

    async def _vectors(self, texts: list[str]) -> list[list[float]] | None:
        if self._embed is None or not texts:
            return None
        return await asyncio.to_thread(self._embed, texts)

    async def add_session_to_memory(self, session: Session) -> None:
        """Store (again) the session's events that carry text; a session added twice is replaced, not doubled."""
        events = [event for event in session.events if _text(event.content)]
        texts = [_text(event.content) for event in events]
        vectors = await self._vectors(texts)
        memories = []
        for i, (event, text) in enumerate(zip(events, texts, strict=True)):
            assert event.content is not None
            memory: dict[str, Any] = {"event_id": event.id, "author": event.author, "timestamp": event.timestamp,
                                      "content": event.content.model_dump(mode="json", exclude_none=True),
                                      "text": text}
            if vectors is not None:
                memory["embedding"] = [float(x) for x in vectors[i]]
            memories.append(memory)
        await self._call(MEMORY_ADD, [session.app_name, session.user_id, session.id,
                                      strict_jsonb(memories, "memories")])

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        _names(query=query)
        vectors = await self._vectors([query]) if query else None
        embedding = None if vectors is None else strict_jsonb([float(x) for x in vectors[0]], "query_embedding")
        rows = await self._call(MEMORY_SEARCH, [*_names(app_name=app_name, user_id=user_id, query=query), embedding,
                                                self.limit])
        return SearchMemoryResponse(memories=[
            MemoryEntry(content=types.Content.model_validate(row["content"]), author=row["author"],
                        timestamp=None if row["timestamp"] is None
                        else datetime.fromtimestamp(row["timestamp"]).isoformat())
            for row in rows])
