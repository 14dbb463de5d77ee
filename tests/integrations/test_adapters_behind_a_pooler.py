"""The framework adapters behind a transaction-mode connection pooler (docs/integrations.md, "Behind a
connection pooler"): each adapter that opens its own pool from a connection string takes ``prepare_threshold``
as the client does. With ``None`` it prepares no statement on any of its connections, and none of its calls
leaves a setting, a lock, a LISTEN, a cursor or a temporary table on a session (tests/helpers.py, SESSION_STATE,
read on every connection of its pools after the calls). A bad value is refused, naming ``prepare_threshold``,
before any connection is attempted. Every adapter acts as the ordinary app login.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from google.adk.events import Event, EventActions
from google.genai import types

from langgraph_helpers import thinking_graph
from memsub.embedding import HashingEmbedder
from memsub.errors import ConfigurationError
from memsub.integrations.adk import MemsubMemoryService, MemsubSessionService
from memsub.integrations.langgraph_checkpoint import AsyncMemsubSaver, MemsubSaver
from memsub.integrations.langgraph_store import MemsubStore
from memsub.integrations.openai_agents import MemsubSession

from helpers import NOTHING_HELD, SESSION_STATE, held, refused_dsn, session_state

RUNS = 8  # psycopg prepares a statement the sixth time it runs on a connection
DIMS = 16


def states(pool: Any) -> list[dict[str, Any]]:
    """SESSION_STATE of every connection of a sync pool."""
    connections = [pool.getconn() for _ in range(pool.get_stats()["pool_size"])]
    try:
        return [session_state(conn.execute(SESSION_STATE).fetchone()) for conn in connections]
    finally:
        for conn in connections:
            pool.putconn(conn)


async def async_states(pool: Any) -> list[dict[str, Any]]:
    """SESSION_STATE of every connection of an async pool."""
    connections = [await pool.getconn() for _ in range(pool.get_stats()["pool_size"])]
    try:
        return [session_state(await (await conn.execute(SESSION_STATE)).fetchone()) for conn in connections]
    finally:
        for conn in connections:
            await pool.putconn(conn)


def nothing_held(found: list[dict[str, Any]]) -> bool:
    return bool(found) and all(held(state) == NOTHING_HELD for state in found)


def embed(texts: list[str]) -> list[list[float]]:
    return HashingEmbedder(DIMS).embed(texts)


def saver_states(dsn: str, **options: Any) -> list[dict[str, Any]]:
    with MemsubSaver.from_dsn(dsn, tenant_id=uuid.uuid4(), **options) as saver:
        compiled = thinking_graph(saver)
        config = {"configurable": {"thread_id": "t-1"}}
        for _ in range(RUNS):
            compiled.invoke({"steps": []}, config)
        assert len(compiled.get_state(config).values["steps"]) == RUNS
        return states(saver.pool)


def test_the_checkpoint_saver_with_prepare_threshold_none_prepares_nothing(db: Any) -> None:
    assert nothing_held(saver_states(db.dsn("app"), prepare_threshold=None))
    assert saver_states(db.dsn("app"))[0]["protocol_prepared"] > 0  # by default psycopg's: the test sees preparing


def test_the_async_checkpoint_saver_with_prepare_threshold_none_prepares_nothing(db: Any) -> None:
    async def scenario() -> list[dict[str, Any]]:
        saver = await AsyncMemsubSaver.from_dsn(db.dsn("app"), tenant_id=uuid.uuid4(), prepare_threshold=None)
        try:
            compiled = thinking_graph(saver)
            for _ in range(RUNS):
                await compiled.ainvoke({"steps": []}, {"configurable": {"thread_id": "t-1"}})
            return await async_states(saver.pool)
        finally:
            await saver.close()

    assert nothing_held(asyncio.run(scenario()))


def test_the_store_with_prepare_threshold_none_prepares_nothing_in_either_pool(db: Any) -> None:
    async def scenario() -> list[dict[str, Any]]:
        store = MemsubStore.from_dsn(db.dsn("app"), tenant_id=uuid.uuid4(), prepare_threshold=None,
                                     index={"dims": DIMS, "embed": embed, "fields": ["text"]})
        try:
            for i in range(RUNS):
                store.put(("notes",), f"n{i}", {"text": f"note {i}"})
                assert store.get(("notes",), f"n{i}") is not None
                assert store.search(("notes",), query="note", limit=2)
                await store.aput(("notes",), f"a{i}", {"text": f"async note {i}"})
                assert await store.aget(("notes",), f"a{i}") is not None
                assert await store.alist_namespaces(prefix=("notes",))
            return states(store.pool) + await async_states(store.async_pool)
        finally:
            await store.aclose()

    found = asyncio.run(scenario())
    assert len(found) >= 2 and nothing_held(found)


def test_the_agents_session_with_prepare_threshold_none_prepares_nothing(db: Any) -> None:
    async def scenario() -> list[dict[str, Any]]:
        with MemsubSession("s-1", db.dsn("app"), tenant_id=uuid.uuid4(), prepare_threshold=None) as session:
            for i in range(RUNS):
                await session.add_items([{"role": "user", "content": f"message {i}"}])
                assert len(await session.get_items()) == i + 1
            return states(session.pool)

    assert nothing_held(asyncio.run(scenario()))


def said(text: str, delta: dict[str, Any]) -> Event:
    return Event(author="user", invocation_id="inv-1",
                 content=types.Content(role="user", parts=[types.Part(text=text)]),
                 actions=EventActions(state_delta=delta))


def test_the_adk_services_with_prepare_threshold_none_prepare_nothing(db: Any) -> None:
    async def scenario() -> list[dict[str, Any]]:
        tenant = uuid.uuid4()
        sessions = MemsubSessionService.from_dsn(db.dsn("app"), tenant_id=tenant, prepare_threshold=None)
        memory = MemsubMemoryService.from_dsn(db.dsn("app"), tenant_id=tenant, embedder=HashingEmbedder(DIMS),
                                              prepare_threshold=None)
        try:
            session = await sessions.create_session(app_name="app", user_id="alice")
            for i in range(RUNS):
                await sessions.append_event(session, said(f"refund {i}", {"turn": i}))
                session = await sessions.get_session(app_name="app", user_id="alice", session_id=session.id)
                assert session is not None
                await memory.add_session_to_memory(session)
                assert (await memory.search_memory(app_name="app", user_id="alice", query="refund")).memories
            return await async_states(sessions.pool) + await async_states(memory.pool)
        finally:
            await sessions.close()
            await memory.close()

    assert nothing_held(asyncio.run(scenario()))


async def _adk_services(dsn: str, **options: Any) -> None:
    for service in (MemsubSessionService, MemsubMemoryService):
        service.from_dsn(dsn, tenant_id=uuid.uuid4(), **options)  # opens nothing: the pool opens on first use


def _build_async_saver(dsn: str, **options: Any) -> None:
    asyncio.run(AsyncMemsubSaver.from_dsn(dsn, tenant_id=uuid.uuid4(), **options))


BUILDERS: dict[str, Callable[..., Any]] = {
    "MemsubSaver": lambda dsn, **o: MemsubSaver.from_dsn(dsn, tenant_id=uuid.uuid4(), **o),
    "AsyncMemsubSaver": _build_async_saver,
    "MemsubStore": lambda dsn, **o: MemsubStore.from_dsn(dsn, tenant_id=uuid.uuid4(), **o),
    "MemsubSession": lambda dsn, **o: MemsubSession("s-1", dsn, tenant_id=uuid.uuid4(), **o),
    "adk": lambda dsn, **o: asyncio.run(_adk_services(dsn, **o)),
}


@pytest.mark.parametrize("adapter", list(BUILDERS))
@pytest.mark.parametrize("value", [-1, 1.5, "5", True, "none"])
def test_a_bad_prepare_threshold_is_refused_by_name_before_connecting(adapter: str, value: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        BUILDERS[adapter](refused_dsn(), prepare_threshold=value)  # a connection attempt would be refused
    assert caught.value.field == "prepare_threshold" and "prepare_threshold" in str(caught.value)
