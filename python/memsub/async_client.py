"""The async Substrate client: the sync client's methods, models, errors and context rules, awaited.

::

    async with AsyncSubstrate("postgresql://...") as substrate:
        async with substrate.tenant(tenant_id, user_id=user_id) as memory:
            result = await memory.write_packet(PacketEnvelopeIn(packet_type="event", payload={"text": "hi"}))

One ``async with`` block is one transaction (commit on success, rollback on any exception). With
``per_call=True`` the block holds no connection and each call is a short transaction of its own that sets the
context in the same round trip: an agent can search, await a model for as long as it takes, then write, without
pinning a pooled connection or an open transaction across the wait. A session used after its block ended raises
:class:`memsub.errors.SessionClosed`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any, TypeVar
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from memsub import _calls, documents, layers, memory, memory_decay, packets, retrieval, sessions, temporal_graph
from memsub._calls import AsyncSession, Call, async_method, async_steps, raw
from memsub.errors import ConflictError, from_database_error
from memsub.memory import MemoryEntry, MemoryType
from memsub.models import PacketStoreRow, PacketWriteResult
from memsub.packets import EnvelopeLike

Row = dict[str, Any]
T = TypeVar("T")


class AsyncTenantSession(AsyncSession):
    """The async twin of :class:`memsub.client.TenantSession`: the same methods, each awaited."""

    async def fetch(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        """Rows of one parameterized statement, by column name; database errors become memsub errors."""
        return await self._run(_calls.query(query, params, raw()))

    async def run(self, call: Call[T]) -> T:
        """Run a declared call (:mod:`memsub._calls`) in this session."""
        return await self._run(call)

    # packets
    write_packet = async_method(packets.write_packet)
    get_packet = async_method(packets.get_packet)
    get_packets = async_method(packets.get_packets)
    thread = async_method(packets.thread)
    lineage = async_method(packets.lineage)
    purge_expired = async_method(packets.purge_expired)

    async def write_packets(self, envelopes: Iterable[EnvelopeLike],
                            batch_size: int = 500) -> list[PacketWriteResult]:
        """Write many envelopes, ``batch_size`` per call to memsub.write_packets (in per-call mode each batch is
        a transaction of its own)."""
        results: list[PacketWriteResult] = []
        for batch in packets.batches(envelopes, batch_size):
            written = await self._run(packets.write_packet_batch(batch, offset=len(results)))
            results.extend(written)
        return results

    async def replay(self, thread_id: UUID | str, page_size: int = 1000,
                     after_cursor: int | None = None) -> AsyncIterator[PacketStoreRow]:
        """Every packet of a thread in write order, read ``page_size`` at a time with the keyset cursor."""
        cursor = after_cursor
        while True:
            page = await self._run(packets.thread(thread_id, limit=page_size, after_cursor=cursor))
            for row in page:
                yield row
            if len(page) < page_size:
                return
            cursor = page[-1].write_seq

    # namespaced memory
    write_memory = async_method(memory.write_memory)
    get_memory = async_method(memory.get_memory)
    delete_memory = async_method(memory.delete_memory)
    memory_history = async_method(memory.memory_history)
    list_memory = async_method(memory.list_memory)
    search_memory = async_method(memory.search_memory)

    async def update_memory(self, namespace: str, key: str, change: Callable[[Any], Any], *,
                            memory_type: MemoryType = "semantic", attempts: int = 10) -> MemoryEntry:
        """Read-modify-write with retry: ``change`` gets the live value (None if none) and returns the new one; on a
        version conflict the attempt is undone (to a savepoint, or with its own transaction in per-call mode),
        re-read and retried, at most ``attempts`` times."""
        for attempt in range(attempts):
            try:
                async with nullcontext() if self.per_call else self.connection.transaction():
                    current = await self._run(memory.get_memory(namespace, key))
                    return await self._run(memory.write_memory(
                        namespace, key, change(current.value if current else None),
                        expected_version=current.version if current else None, memory_type=memory_type))
            except ConflictError:
                if attempt == attempts - 1:
                    raise
        raise ValueError("attempts must be at least 1")

    # sessions
    create_session = async_method(sessions.create_session)
    get_session = async_method(sessions.get_session)
    append_event = async_method(sessions.append_event)
    merge_state = async_method(sessions.merge_state)
    end_turn = async_method(sessions.end_turn)
    terminate_session = async_method(sessions.terminate_session)
    delete_session = async_method(sessions.delete_session)
    memory_context = async_method(sessions.memory_context)
    consolidate = async_method(sessions.consolidate)

    # tasks, agents and checkpoints
    create_task = async_method(sessions.create_task)
    link_task = async_method(sessions.link_task)
    set_task_status = async_method(sessions.set_task_status)
    spawn_agent = async_method(sessions.spawn_agent)
    set_actor = async_method(sessions.set_actor)
    save_checkpoint = async_method(sessions.save_checkpoint)
    restore_checkpoint = async_method(sessions.restore_checkpoint)

    # document index and audit
    put_document = async_method(sessions.put_document)
    get_document = async_method(sessions.get_document)
    audit_trail = async_method(sessions.audit_trail)

    # documents
    ingest_text = async_steps(documents.ingest_text)
    ingest_file = async_steps(documents.ingest_file)
    embed_missing_chunks = async_steps(documents.embed_missing_chunks)
    document_versions = async_method(documents.document_versions)
    document_chunks = async_method(documents.document_chunks)
    vector_dimension = async_method(documents.vector_dimension)

    # temporal graph
    add_edge = async_method(temporal_graph.add_edge)
    close_edge = async_method(temporal_graph.close_edge)
    supersede_edge = async_method(temporal_graph.supersede_edge)
    edges_as_of = async_method(temporal_graph.edges_as_of)
    neighbors_as_of = async_method(temporal_graph.neighbors_as_of)
    upsert_entity = async_method(temporal_graph.upsert_entity)
    search_entities = async_method(temporal_graph.search_entities)
    graph_nodes = async_method(temporal_graph.graph_nodes)

    # memory types and decay
    remember = async_method(memory_decay.remember)
    touch_memory = async_method(memory_decay.touch_memory)
    memory_maintenance = async_method(memory_decay.memory_maintenance)
    # layers
    record_event = async_method(layers.record_event)
    record_reasoning_trace = async_method(layers.record_reasoning_trace)
    assert_fact = async_method(layers.assert_fact)
    store_embedding = async_method(layers.store_embedding)
    store_semantic_memory = async_method(layers.store_semantic_memory)
    search_semantic_memory = async_method(layers.search_semantic_memory)
    upsert_relationship = async_method(layers.upsert_relationship)
    graph_neighbors = async_method(layers.graph_neighbors)
    apply_world_model_update = async_method(layers.apply_world_model_update)
    take_world_model_snapshot = async_method(layers.take_world_model_snapshot)
    world_model_state_at = async_method(layers.world_model_state_at)
    world_model_state_version = async_method(layers.world_model_state_version)
    record_reflection = async_method(layers.record_reflection)
    record_task_reflection = async_method(layers.record_task_reflection)
    record_summary = async_method(layers.record_summary)
    summaries_due = async_method(layers.summaries_due)
    record_access = async_method(layers.record_access)
    entity_graph = async_method(layers.entity_graph)

    # retrieval
    search = async_method(retrieval.search)
    hybrid_search = async_method(retrieval.hybrid_search)
    traverse = async_method(retrieval.traverse)
    neighbourhood = async_method(retrieval.neighbourhood)
    feedback = async_method(retrieval.feedback)
    reflections = async_method(retrieval.reflections)
    learn_importance = async_method(retrieval.learn_importance)


class AsyncSubstrate:
    """An async pool of connections to a memsub database (psycopg's AsyncConnectionPool).

    Open it with ``async with AsyncSubstrate(dsn) as substrate`` (or ``await substrate.open()``)."""

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 4, timeout: float = 30.0) -> None:
        """``timeout``: seconds a call waits for a connection before ConnectionFailed. The connection string gets
        a ``connect_timeout`` (5 s) unless it sets one, so an unreachable server fails fast."""
        from memsub.connection import with_timeout

        self.pool: AsyncConnectionPool[psycopg.AsyncConnection[Row]] = AsyncConnectionPool(
            with_timeout(dsn), min_size=min_size, max_size=max_size, open=False, timeout=timeout,
            kwargs={"row_factory": dict_row}, connection_class=psycopg.AsyncConnection,
            configure=_calls.configure_async,
        )

    async def open(self) -> None:
        await self.pool.open()

    async def close(self) -> None:
        await self.pool.close()

    async def __aenter__(self) -> AsyncSubstrate:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def tenant(self, tenant_id: UUID | str | None, *, org_id: UUID | str | None = None,
               user_id: UUID | str | None = None, roles: Sequence[str] = (), session_id: str | None = None,
               per_call: bool = False) -> AbstractAsyncContextManager[AsyncTenantSession]:
        """A transaction whose memsub context is this tenant, org, user, context roles and session; with
        ``per_call``, a block in which every call is a short transaction of its own in that context."""
        return self._session(_calls.set_context(tenant_id, org_id, user_id, roles, session_id), per_call)

    def signed(self, token: str, *, per_call: bool = False) -> AbstractAsyncContextManager[AsyncTenantSession]:
        """A transaction whose memsub context is the one a gateway signed (``memsub.set_context_signed``)."""
        return self._session(_calls.set_context_signed(token), per_call)

    @asynccontextmanager
    async def _session(self, context: Call[None], per_call: bool) -> AsyncIterator[AsyncTenantSession]:
        if per_call:
            session = AsyncTenantSession(pool=self.pool, context=context)
            try:
                yield session
            finally:
                session._close()
            return
        # As in the sync client: BEGIN and the context travel in pipeline mode with the block's first call.
        async with _calls.pooled_async(self.pool) as connection:
            try:
                async with connection.pipeline(), connection.transaction():
                    await connection.execute(context.statement, context.params)
                    session = AsyncTenantSession(connection)
                    try:
                        yield session
                    finally:
                        session._close()
            except psycopg.Error as error:
                raise from_database_error(error) from error
