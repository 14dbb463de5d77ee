"""The async client: the sync client's methods, results, errors and context rules on psycopg's async pool, and the
per-call mode that holds no connection between calls. Every substrate logs in as the application role."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from typing import Any
from uuid import uuid4

import pytest

from memsub import _calls
from memsub._calls import Method
from memsub.async_client import AsyncSubstrate, AsyncTenantSession
from memsub.client import AREAS, Substrate, TenantSession
from memsub.embedding import HashingEmbedder
from memsub.errors import (
    ConflictError,
    ContextError,
    InvalidInput,
    MemsubError,
    SessionClosed,
    TransactionAborted,
)
from memsub.models import PacketEnvelopeIn
from memsub.search import SemanticHit

from helpers import TENANT_A, TENANT_B, Background, superuser_count

NOTES = [
    "recycled HDPE pellets ship from Stockton on Tuesdays",
    "BayCycle sells rHDPE pellets in Oakland at 47 cents a pound",
    "the Reno route closes at Donner Pass when it snows",
]


def checked_out(pool: Any) -> int:
    """Connections the pool has handed out and not had back."""
    stats = pool.get_stats()
    return int(stats["pool_size"] - stats["pool_available"])


def comparable(result: Any) -> Any:
    """A result without the scores that age with the clock (semantic_search's combined score has a recency
    term), so two reads a moment apart compare equal."""
    if isinstance(result, list):
        return [comparable(item) for item in result]
    if isinstance(result, SemanticHit):
        return result.model_copy(update={"combined_score": None})
    return result


def called(session: Any, path: str) -> Any:
    """The method at ``area.method`` of a session's namespace."""
    area, name = path.split(".")
    return getattr(getattr(session, area), name)


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    """The session-level methods of a session class (its namespaces are area classes, left out)."""
    found = {}
    for name in dir(cls):
        value = getattr(cls, name)
        if isinstance(value, Method):
            found[name] = inspect.signature(value.builder)
        elif not name.startswith("_") and callable(value) and not isinstance(value, type):
            found[name] = inspect.signature(value)
    return found


def test_the_async_session_has_the_sync_session_namespaces_and_methods() -> None:
    sync, aio = public_methods(TenantSession), public_methods(AsyncTenantSession)
    assert sync.keys() == aio.keys() == {"fetch", "run", "vector_dimension"}
    for name, signature in sync.items():
        assert list(signature.parameters) == list(aio[name].parameters), name
    assert {"packets", "events", "search", "graph", "world_model", "reflection", "memory", "sessions",
            "documents"} <= set(AREAS)
    for area in AREAS:
        assert getattr(TenantSession, area) is getattr(AsyncTenantSession, area), "one area class serves both"


@pytest.mark.asyncio
async def test_each_namespace_method_is_a_method_on_the_sync_session_and_a_coroutine_on_the_async_one(
        db384: Any) -> None:
    with Substrate(db384.dsn("app")) as substrate, substrate.tenant(TENANT_A) as sync_session:
        async with AsyncSubstrate(db384.dsn("app")) as async_substrate, \
                async_substrate.tenant(TENANT_A) as async_session:
            for area in AREAS:
                declared = getattr(TenantSession, area).methods()
                assert declared, area
                for name, declaration in declared.items():
                    sync_method, async_method = called(sync_session, f"{area}.{name}"), called(
                        async_session, f"{area}.{name}")
                    assert not inspect.iscoroutinefunction(sync_method), name
                    assert inspect.iscoroutinefunction(async_method), name
                    assert inspect.signature(sync_method) == inspect.signature(async_method) == inspect.signature(
                        declaration.builder), name
            assert sync_session.vector_dimension() == await async_session.vector_dimension() == 384


@pytest.mark.asyncio
async def test_async_calls_return_what_sync_calls_return(db384: Any) -> None:
    embedder = HashingEmbedder(384)
    vectors = embedder.embed(NOTES)
    thread_id = uuid4()
    async with AsyncSubstrate(db384.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        written = await session.packets.write_packets(
            [PacketEnvelopeIn(packet_type="event", payload={"text": text}, thread_id=thread_id) for text in NOTES],
            batch_size=2)
        assert [result.position for result in written] == [1, 2, 3]
        child = await session.packets.write(PacketEnvelopeIn(
            packet_type="insight", payload={"text": "pellets"}, thread_id=thread_id,
            lineage={"parent_ids": [written[0].packet_id], "derivation_type": "inference"}))
        for result, vector, text in zip(written, vectors, NOTES, strict=True):
            await session.search.store_embedding(result.packet_id, "content", vector, chunk_text=text)
        await session.graph.upsert_relationship("BayCycle", "sells", "rHDPE", confidence=0.9)
        await session.graph.upsert_relationship("rHDPE", "made_from", "HDPE")
        await session.graph.assert_fact("BayCycle", "located_in", "Oakland", confidence=0.8)
        await session.reflection.record("lesson", "check the pass before routing to Reno", tags=["routing"],
                                        vector=vectors[2])
        await session.world_model.apply_update("insight", [{"entity_id": "BayCycle", "entity_type": "Supplier"}])

    query = embedder.embed(["HDPE pellets from Stockton"])[0]
    reads: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("packets.get", (child.packet_id,), {}),
        ("packets.get_thread", (thread_id,), {"limit": 2}),
        ("packets.get_lineage", (child.packet_id,), {}),
        ("search.semantic", (query,), {"k": 2}),
        ("search.hybrid", ("HDPE pellets", query), {"k": 3}),
        ("search.hybrid", ("Donner Pass", None), {}),
        ("graph.traverse", ("BayCycle",), {}),
        ("graph.entity_neighbourhood", ("BayCycle",), {}),
        ("graph.neighbors", ("BayCycle",), {}),
        ("search.semantic", (query, 2), {"with_packets": True}),
        ("reflection.retrieve", (vectors[2],), {"tags": ["routing"]}),
        ("world_model.state_version", (), {}),
        ("reflection.summaries_due", (), {}),
    ]
    with Substrate(db384.dsn("app")) as sync_substrate, sync_substrate.tenant(TENANT_A) as sync_memory:
        expected = [called(sync_memory, name)(*args, **kwargs) for name, args, kwargs in reads]
        expected_replay = list(sync_memory.packets.replay(thread_id, page_size=2))
    async with AsyncSubstrate(db384.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        got = [await called(session, name)(*args, **kwargs) for name, args, kwargs in reads]
        replayed = [packet async for packet in session.packets.replay(thread_id, page_size=2)]
    for (name, _, _), want, have in zip(reads, expected, got, strict=True):
        assert comparable(have) == comparable(want), name
    assert expected[3] and expected[6], "the scenario finds something to compare"
    assert replayed == expected_replay and len(replayed) == 4


@pytest.mark.asyncio
async def test_async_namespaced_memory_matches_sync(db384: Any) -> None:
    embedder = HashingEmbedder(384)
    user = uuid4()
    namespace = f"user:{user}:preferences"
    async with AsyncSubstrate(db384.dsn("app")) as substrate, substrate.tenant(TENANT_A, user_id=user) as session:
        first = await session.memory.write(namespace, "suppliers", {"prefer": "BayCycle"}, embedder=embedder)
        await session.memory.write(namespace, "suppliers", {"prefer": "BayCycle in Oakland"},
                                   expected_version=first.version, embedder=embedder)
        await session.memory.write(namespace, "tone", "concise", metadata={"source": "chat"})
    async with AsyncSubstrate(db384.dsn("app")) as substrate, \
            substrate.tenant(TENANT_A, user_id=user, per_call=True) as session:
        with pytest.raises(ConflictError) as conflict:
            await session.memory.write(namespace, "tone", "verbose", expected_version=7)
        assert conflict.value.field == "expected_version"
        tone = await session.memory.get(namespace, "tone")
        assert tone is not None and tone.metadata == {"source": "chat"}
        await session.memory.delete(namespace, "tone", tone.version)
    reads: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("memory.get", (namespace, "suppliers"), {}),
        ("memory.get", (namespace, "tone"), {}),
        ("memory.history", (namespace, "suppliers"), {}),
        ("memory.list", (f"user:{user}",), {}),
        ("memory.search", ("BayCycle Oakland",), {"embedder": embedder, "k": 2}),
    ]
    with Substrate(db384.dsn("app")) as sync_substrate, \
            sync_substrate.tenant(TENANT_A, user_id=user) as sync_memory:
        expected = [called(sync_memory, name)(*args, **kwargs) for name, args, kwargs in reads]
    async with AsyncSubstrate(db384.dsn("app")) as substrate, substrate.tenant(TENANT_A, user_id=user) as session:
        got = [await called(session, name)(*args, **kwargs) for name, args, kwargs in reads]
    assert got == expected
    assert expected[1] is None and [entry.version for entry in expected[2]] == [1, 2]
    assert expected[4][0].key == "suppliers" and expected[4][0].vector_rank == 1


@pytest.mark.asyncio
async def test_errors_map_to_the_same_exceptions_and_write_nothing(db384: Any) -> None:
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any], type[MemsubError], str | None]] = [
        ("world_model.apply_update", ("insight", [{"entity_id": "x"}]), {"expected_version": 7},
         ConflictError, "expected_version"),
        ("packets.write", ({"packet_id": str(uuid4()), "packet_type": "event", "timestamp": "not a time",
                           "payload": {}},), {}, InvalidInput, "timestamp"),
        ("search.semantic", ([1.0, 0.0],), {}, InvalidInput, None),
    ]
    for name, args, kwargs, error, field in calls:
        with Substrate(db384.dsn("app")) as substrate:
            with pytest.raises(error) as sync_error, substrate.tenant(TENANT_A) as session:
                called(session, name)(*args, **kwargs)
        async with AsyncSubstrate(db384.dsn("app")) as async_substrate:
            with pytest.raises(error) as async_error:
                async with async_substrate.tenant(TENANT_A) as async_memory:
                    await called(async_memory, name)(*args, **kwargs)
        assert type(async_error.value) is type(sync_error.value), name
        assert async_error.value.sqlstate == sync_error.value.sqlstate, name
        assert async_error.value.field == sync_error.value.field, name
        if field is not None:
            assert async_error.value.field == field
    async with AsyncSubstrate(db384.dsn("nobody")) as outsider:
        with pytest.raises(ContextError):
            async with outsider.tenant(TENANT_A) as session:
                await session.packets.write(PacketEnvelopeIn(packet_type="event", payload={}))
    assert superuser_count(db384) == 0


@pytest.mark.asyncio
async def test_a_value_that_is_not_json_is_refused_naming_its_field(db384: Any) -> None:
    async with AsyncSubstrate(db384.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        with pytest.raises(TypeError, match=r"envelope\.payload\.materials: a set is not JSON"):
            await session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"materials": {"hdpe"}}))
        with pytest.raises(TypeError, match=r"envelopes\[1\]\.payload\.raw: a bytes is not JSON"):
            await session.packets.write_packets([{"packet_type": "event", "payload": {}},
                                                 {"packet_type": "event", "payload": {"raw": b"\x00"}}])
        with pytest.raises(TypeError, match=r"content\.when: a set"):
            await session.events.record("planner", "tool_call", {"when": {1}})
    with Substrate(db384.dsn("app")) as sync_substrate, sync_substrate.tenant(TENANT_A) as sync_memory:
        with pytest.raises(TypeError, match=r"envelope\.payload\.materials: a set is not JSON"):
            sync_memory.packets.write({"packet_type": "event", "payload": {"materials": {"hdpe"}}})
    assert superuser_count(db384) == 0


@pytest.mark.asyncio
async def test_a_session_used_after_its_block_raises(db384: Any) -> None:
    async with AsyncSubstrate(db384.dsn("app")) as substrate:
        for per_call in (False, True):
            async with substrate.tenant(TENANT_A, per_call=per_call) as session:
                await session.world_model.state_version()
                graph = session.graph
            with pytest.raises(SessionClosed, match="block has ended"):
                await session.packets.write(PacketEnvelopeIn(packet_type="event", payload={}))
            with pytest.raises(SessionClosed, match="block has ended"):
                await session.world_model.state_version()  # a namespace made inside the block
            with pytest.raises(SessionClosed, match="block has ended"):
                await graph.traverse("BayCycle")  # a namespace held past the block
            with pytest.raises(SessionClosed):
                await session.fetch("select 1")
    with Substrate(db384.dsn("app")) as sync_substrate:
        for per_call in (False, True):
            with sync_substrate.tenant(TENANT_A, per_call=per_call) as sync_memory:
                sync_memory.world_model.state_version()
                memory_area = sync_memory.memory
            with pytest.raises(SessionClosed):
                sync_memory.packets.write(PacketEnvelopeIn(packet_type="event", payload={}))
            with pytest.raises(SessionClosed):
                sync_memory.world_model.state_version()
            with pytest.raises(SessionClosed):
                memory_area.update("user:x:notes", "k", lambda value: value)
            with pytest.raises(SessionClosed):
                list(sync_memory.packets.replay(uuid4()))
        with sync_substrate.tenant(TENANT_A) as sync_memory:
            connection = sync_memory.connection
        with pytest.raises(SessionClosed):
            sync_memory.connection  # noqa: B018
        assert not connection.closed  # back in the pool, serving the next block
    assert superuser_count(db384) == 0


@pytest.mark.asyncio
async def test_a_block_that_ends_after_a_failed_call_raises_instead_of_committing_nothing(db384: Any) -> None:
    """PostgreSQL aborts a transaction at its first failed statement, and answers its COMMIT with a rollback that
    psycopg does not report: a block that caught a refused call and ended normally lost its earlier writes without
    a word. Its end now raises TransactionAborted; a block of calls in their own transactions keeps them."""
    user = uuid4()
    namespace = f"user:{user}"

    async def kept(substrate: AsyncSubstrate, key: str) -> Any:
        async with substrate.tenant(TENANT_A, user_id=user) as session:
            return await session.memory.get(namespace, key)

    async with AsyncSubstrate(db384.dsn("app")) as substrate:
        with pytest.raises(TransactionAborted, match="nothing of this block was committed"):
            async with substrate.tenant(TENANT_A, user_id=user) as session:
                await session.memory.write(namespace, "async", 1)
                with pytest.raises(InvalidInput):
                    await session.memory.write("bogus", "k", 1)
        assert await kept(substrate, "async") is None
        async with substrate.tenant(TENANT_A, user_id=user, per_call=True) as session:
            await session.memory.write(namespace, "async per call", 1)
            with pytest.raises(InvalidInput):
                await session.memory.write("bogus", "k", 1)
        assert (await kept(substrate, "async per call")) is not None
    with Substrate(db384.dsn("app")) as sync_substrate:
        with pytest.raises(TransactionAborted, match="nothing of this block was committed"):
            with sync_substrate.tenant(TENANT_A, user_id=user) as sync_session:
                sync_session.memory.write(namespace, "sync", 1)
                with pytest.raises(InvalidInput):
                    sync_session.memory.write("bogus", "k", 1)
        with sync_substrate.tenant(TENANT_A, user_id=user) as sync_session:
            assert sync_session.memory.get(namespace, "sync") is None
            sync_session.memory.write(namespace, "after", 1)  # the pooled connection serves the next block
        with sync_substrate.tenant(TENANT_A, user_id=user) as sync_session:
            assert sync_session.memory.get(namespace, "after") is not None


@pytest.mark.asyncio
async def test_two_tenants_on_one_pool_never_see_each_others_rows(db384: Any) -> None:
    async with AsyncSubstrate(db384.dsn("app"), max_size=2) as substrate:
        started = asyncio.Event()
        ready = 0

        async def work(tenant: Any, label: str) -> set[str]:
            nonlocal ready
            async with substrate.tenant(tenant) as session:
                for index in range(5):
                    await session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"who": label},
                                                                 tags=[f"{label}-{index}"]))
                    await asyncio.sleep(0)
                ready += 1
                if ready == 2:
                    started.set()
                await started.wait()  # both transactions open at once
                rows = await session.fetch("select envelope->'payload'->>'who' as who from memsub.packet_store")
                return {row["who"] for row in rows}

        seen_a, seen_b = await asyncio.gather(work(TENANT_A, "a"), work(TENANT_B, "b"))
        assert (seen_a, seen_b) == ({"a"}, {"b"})
        async with substrate.tenant(TENANT_B) as session:
            assert len(await session.fetch("select packet_id from memsub.packet_store")) == 5


@pytest.mark.asyncio
async def test_per_call_mode_holds_no_connection_between_calls(db384: Any) -> None:
    embedder = HashingEmbedder(384)
    async with AsyncSubstrate(db384.dsn("app"), min_size=1, max_size=1) as substrate:
        await substrate.pool.wait()
        async with substrate.tenant(TENANT_A, per_call=True) as memory_a, \
                substrate.tenant(TENANT_B, per_call=True) as memory_b:
            assert checked_out(substrate.pool) == 0
            packet = await memory_a.packets.write(PacketEnvelopeIn(packet_type="event", payload={"text": NOTES[0]}))
            await memory_a.search.store_embedding(packet.packet_id, "content", embedder.embed([NOTES[0]])[0])
            assert checked_out(substrate.pool) == 0
            hits = await memory_a.search.semantic(embedder.embed(["HDPE pellets"])[0], k=1)
            # Between the search and the write an agent awaits its model; the only pooled connection is free,
            # so the other tenant's calls run meanwhile on it.
            assert checked_out(substrate.pool) == 0
            other = await memory_b.packets.write(PacketEnvelopeIn(packet_type="event", payload={"text": "b"}))
            assert await memory_b.packets.get(packet.packet_id) is None
            assert await memory_a.packets.get(other.packet_id) is None
            child = await memory_a.packets.write(PacketEnvelopeIn(
                packet_type="insight", payload={"answer": "Stockton"},
                lineage={"parent_ids": [hits[0].packet_id], "derivation_type": "inference"}))
            assert checked_out(substrate.pool) == 0
            for session, tenant in ((memory_a, TENANT_A), (memory_b, TENANT_B), (memory_a, TENANT_A)):
                rows = await session.fetch("select memsub.current_tenant_id() as tenant")
                assert rows == [{"tenant": tenant}]
            assert [row.packet_id for row in await memory_a.packets.get_lineage(child.packet_id)] == [packet.packet_id]
            with pytest.raises(ConflictError):  # a failed call rolls back its own transaction only
                await memory_a.world_model.apply_update("insight", [{"entity_id": "x"}], expected_version=3)
            assert checked_out(substrate.pool) == 0
            assert await memory_a.packets.get(child.packet_id) is not None
        async with substrate.pool.connection() as connection:
            cursor = await connection.execute("select memsub.current_tenant_id() as tenant")
            assert await cursor.fetchone() == {"tenant": None}  # no context is left on the pooled connection
    assert superuser_count(db384) == 3


def test_sync_per_call_mode_holds_no_connection_between_calls(db384: Any) -> None:
    with Substrate(db384.dsn("app"), max_size=1) as substrate:
        substrate.pool.wait()
        with substrate.tenant(TENANT_A, per_call=True) as memory_a, \
                substrate.tenant(TENANT_B, per_call=True) as memory_b:
            written = memory_a.packets.write_packets([PacketEnvelopeIn(packet_type="event", payload={"n": n})
                                                      for n in range(3)])
            assert checked_out(substrate.pool) == 0
            assert memory_b.packets.get(written[0].packet_id) is None
            assert memory_a.packets.get(written[0].packet_id) is not None
            assert checked_out(substrate.pool) == 0
            with pytest.raises(SessionClosed, match="per-call"):
                memory_a.connection  # noqa: B018
        with substrate.pool.connection() as connection:
            assert connection.execute("select memsub.current_tenant_id() as tenant").fetchone() == {"tenant": None}



TENANT_OF = "select memsub.current_tenant_id() as tenant"


def test_a_call_from_another_thread_runs_in_its_block_never_after_it(db384: Any, monkeypatch: Any) -> None:
    """A sync session shared with a worker thread whose call is under way (past the session's check) when the block
    ends: the block's end waits for that call, which runs in the block's transaction. It never runs on the
    connection once that is back in the pool, where the next block, another tenant's, may be using it."""
    inside, resume = threading.Event(), threading.Event()
    with_times = _calls._with_times

    def paused(connection: Any) -> None:  # the worker's call stops here, once past the session's check
        if threading.current_thread() is not threading.main_thread():
            inside.set()
            resume.wait(10)
        with_times(connection)

    monkeypatch.setattr(_calls, "_with_times", paused)
    with Substrate(db384.dsn("app"), max_size=1) as substrate:
        block = substrate.tenant(TENANT_A)
        session = block.__enter__()
        worker = Background(lambda: session.fetch(TENANT_OF))
        assert inside.wait(10)
        block_end = Background(lambda: block.__exit__(None, None, None))
        deadline = time.monotonic() + 0.5  # how long an end that does not wait for the call takes, at most
        while not block_end.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        if block_end.done():  # the block did not wait: its connection went on to the next block, tenant B's
            with substrate.tenant(TENANT_B) as other:
                assert other.fetch(TENANT_OF) == [{"tenant": TENANT_B}]
                resume.set()
                worker.join()
        resume.set()
        assert worker.join().result == [{"tenant": TENANT_A}], worker.error or worker.result
        assert block_end.join().error is None
