"""An OpenAI Agents SDK session that keeps conversation history in memsub, isolated per tenant by row-level security.

::

    from agents import Agent, Runner
    from memsub.integrations.openai_agents import MemsubSession

    session = MemsubSession("conversation-1", dsn, tenant_id=tenant)
    result = await Runner.run(agent, "Hello", session=session)
    session.close()

``MemsubSession`` implements the SDK's ``Session`` protocol (``get_items``, ``add_items``, ``pop_item``,
``clear_session``). Items live in ``memsub.agent_session_items``; every method is one stored function
(``sql/930_agent_sessions.sql``) in one transaction of the session's tenant context. Like the SDK's own
``SQLiteSession``, the database calls run in a worker thread over a synchronous pool, so one session can be used
from any event loop (``Runner.run``, ``Runner.run_sync``, ``Runner.run_streamed``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any, TypeVar, cast

from agents.items import TResponseInputItem
from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit
from psycopg.types.json import Json
from psycopg_pool import ConnectionPool

from memsub._calls import NotJson, checked_text
from memsub.connection import DEFAULT_PREPARE_THRESHOLD
from memsub.errors import LocalValidationError
from memsub.integrations._context import TenantContext, call, row_count, sync_pool

ADD = "select memsub.agent_session_add_items(p_session_id => %s, p_items => %s) as added"
GET = ("select item::text as item from memsub.agent_session_get_items(p_session_id => %s, p_limit => %s) "
       "order by item_id")
POP = "select memsub.agent_session_pop_item(p_session_id => %s)::text as item"
CLEAR = "select memsub.agent_session_clear(p_session_id => %s) as deleted"

__all__ = ["MemsubSession", "TenantContext"]

_T = TypeVar("_T")


class MemsubSession(SessionABC):
    """OpenAI Agents SDK session over memsub's stored functions.

    ``pool`` is a psycopg ``ConnectionPool`` (shared, left open by :meth:`close`) or a connection string (the
    session opens its own pool and :meth:`close` closes it, with the client's ``prepare_threshold``: None prepares
    nothing, behind a transaction-mode connection pooler). ``context`` is the tenant context every call acts in;
    ``tenant_id``, ``org_id`` and ``user_id`` build one when it is not given. The login must be a member of
    ``memsub_app``.
    """

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str, pool: ConnectionPool[Any] | str, context: TenantContext | None = None, *,
                 tenant_id: Any = None, org_id: Any = None, user_id: Any = None,
                 session_settings: SessionSettings | dict[str, Any] | None = None,
                 prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValueError("session_id must be a non-empty string")
        if context is None:
            if tenant_id is None:
                raise ValueError("tenant_id (or a TenantContext) is required")
            context = TenantContext(tenant_id, org_id, user_id)
        self.session_id = session_id
        self.context = context
        self.session_settings = (coerce_session_settings(session_settings) if session_settings is not None
                                 else SessionSettings())
        self._owns_pool = isinstance(pool, str)
        self.pool: ConnectionPool[Any] = (sync_pool(pool, prepare_threshold=prepare_threshold)
                                          if isinstance(pool, str) else pool)
        self._closed = False

    def close(self) -> None:
        """Closes the pool when the session opened it; the session cannot be used afterwards."""
        self._closed = True
        if self._owns_pool:
            self.pool.close()

    def __enter__(self) -> MemsubSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, query: str, args: list[Any]) -> list[Any]:
        if self._closed:
            raise RuntimeError("MemsubSession is closed")
        return call(self.pool, self.context, query, args)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first: all of them, or the newest ``limit`` (default:
        ``session_settings.limit``). 0 returns none; a limit is not held to ``max_rows`` (no limit is not either:
        the SDK's compaction session reads a whole history as limit 2147483647); a negative limit, which the SDK's
        sessions read differently, is refused (22023), and so is one no PostgreSQL integer holds (22003), each naming
        ``limit``."""
        session_limit = resolve_session_limit(limit, self.session_settings)
        rows = await asyncio.to_thread(self._rows, GET, [self.session_id, row_count(session_limit)])
        return [cast(TResponseInputItem, json.loads(_first(row))) for row in rows]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Appends ``items`` in order. Each must be a JSON object; the whole batch is written or none of it."""
        if self._closed:
            raise RuntimeError("MemsubSession is closed")
        if not items:
            return
        payload = Json(list(items), dumps=_dumps)
        await _settled(asyncio.to_thread(self._rows, ADD, [self.session_id, payload]))

    async def pop_item(self) -> TResponseInputItem | None:
        """Removes the newest item and returns it; None when the session is empty."""
        rows = await _settled(asyncio.to_thread(self._rows, POP, [self.session_id]))
        text = _first(rows[0])
        return None if text is None else cast(TResponseInputItem, json.loads(text))

    async def clear_session(self) -> None:
        """Deletes every item of the session."""
        await _settled(asyncio.to_thread(self._rows, CLEAR, [self.session_id]))


def _first(row: Any) -> Any:
    """The one column of a row, whether the pool makes dict rows (``sync_pool``) or tuples."""
    return next(iter(row.values())) if isinstance(row, dict) else row[0]


def _dumps(value: Any) -> str:
    """The items as JSON text. The column is ``json``, which keeps a ``\\u0000`` escape, so only text with no
    UTF-8 form (an unpaired surrogate) is refused, naming items (LocalValidationError, 22021), and a number JSON
    has no form for (NaN, an infinity: 22P02, as the server would answer). A value JSON has no type for (a set,
    bytes, any other object) raises TypeError, as the SDK's SQLiteSession does, naming the item that holds it
    (:class:`memsub._calls.NotJson`, ``items[i]``)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError as error:
        raise LocalValidationError(f"field items: {error} (NaN and infinities have no JSON form)",
                                   sqlstate="22P02", field="items") from None
    except TypeError as error:
        raise NotJson(f"items[{_first_not_json(value)}]", str(error)) from None
    return checked_text(text, "items")


def _first_not_json(items: list[Any]) -> int:
    """The index of the first item json.dumps cannot write (after it failed on the batch)."""
    for index, item in enumerate(items):
        try:
            json.dumps(item)
        except TypeError:
            return index
    return 0


async def _settled(awaitable: Awaitable[_T]) -> _T:
    """The outcome of a database write, even when the caller is cancelled meanwhile.

    The write runs in a worker thread and commits or not whatever the caller does; returning at the cancellation
    would leave the caller unsure whether it happened. So the cancellation is held until the write has finished,
    then raised."""
    task = asyncio.ensure_future(awaitable)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as error:
            if cancelled is None:
                cancelled = error
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved, so the event loop does not report a failure nobody awaited
        raise cancelled
    return task.result()
