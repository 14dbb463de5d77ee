"""The Substrate client: typed methods over memsub's stored functions.

Every call runs inside a tenant context, which memsub keeps transaction-local::

    substrate = Substrate("postgresql://...")
    with substrate.tenant(tenant_id, user_id=user_id) as memory:
        result = memory.write_packet(PacketEnvelopeIn(packet_type="event", payload={"text": "hi"}))

One ``with`` block is one transaction: it commits on success and rolls back on any exception. With
``per_call=True`` the block holds no connection: each call is a short transaction of its own that sets the
context in the same round trip (for loops that wait on something slow, such as a model, between calls).
A session used after its block ended raises :class:`memsub.errors.SessionClosed`.

The methods are declared once, as calls (:mod:`memsub.packets`, :mod:`memsub.layers`, :mod:`memsub.retrieval`);
:mod:`memsub.async_client` exposes the same ones with ``await``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from memsub import _calls, documents, layers, memory, memory_decay, packets, retrieval, sessions, temporal_graph
from memsub._calls import Call, SyncSession, raw, sync_method, sync_steps
from memsub.errors import ConflictError, from_database_error
from memsub.memory import MemoryEntry, MemoryType
from memsub.models import PacketStoreRow, PacketWriteResult
from memsub.packets import EnvelopeLike

Row = dict[str, Any]
T = TypeVar("T")


class TenantSession(SyncSession):
    """Stored-function calls within one tenant context: in the transaction of the ``with`` block, or (per-call
    mode) each in a short transaction of its own."""

    def fetch(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        """Rows of one parameterized statement, by column name; database errors become memsub errors."""
        return self._run(_calls.query(query, params, raw()))

    def run(self, call: Call[T]) -> T:
        """Run a declared call (:mod:`memsub._calls`) in this session."""
        return self._run(call)

    # packets
    write_packet = sync_method(packets.write_packet)
    get_packet = sync_method(packets.get_packet)
    get_packets = sync_method(packets.get_packets)
    thread = sync_method(packets.thread)
    lineage = sync_method(packets.lineage)
    purge_expired = sync_method(packets.purge_expired)

    def write_packets(self, envelopes: Iterable[EnvelopeLike], batch_size: int = 500) -> list[PacketWriteResult]:
        """Write many envelopes, ``batch_size`` per call to memsub.write_packets (in per-call mode each batch is
        a transaction of its own)."""
        results: list[PacketWriteResult] = []
        for batch in packets.batches(envelopes, batch_size):
            written = self._run(packets.write_packet_batch(batch, offset=len(results)))
            results.extend(written)
        return results

    def replay(self, thread_id: UUID | str, page_size: int = 1000,
               after_cursor: int | None = None) -> Iterator[PacketStoreRow]:
        """Every packet of a thread in write order, read ``page_size`` at a time with the keyset cursor."""
        cursor = after_cursor
        while True:
            page = self._run(packets.thread(thread_id, limit=page_size, after_cursor=cursor))
            yield from page
            if len(page) < page_size:
                return
            cursor = page[-1].write_seq

    # namespaced memory
    write_memory = sync_method(memory.write_memory)
    get_memory = sync_method(memory.get_memory)
    delete_memory = sync_method(memory.delete_memory)
    memory_history = sync_method(memory.memory_history)
    list_memory = sync_method(memory.list_memory)
    search_memory = sync_method(memory.search_memory)

    def update_memory(self, namespace: str, key: str, change: Callable[[Any], Any], *,
                      memory_type: MemoryType = "semantic", attempts: int = 10) -> MemoryEntry:
        """Read-modify-write with retry: ``change`` gets the live value (None if none) and returns the new one; on a
        version conflict the attempt is undone (to a savepoint, or with its own transaction in per-call mode),
        re-read and retried, at most ``attempts`` times."""
        for attempt in range(attempts):
            try:
                with nullcontext() if self.per_call else self.connection.transaction():
                    current = self._run(memory.get_memory(namespace, key))
                    return self._run(memory.write_memory(
                        namespace, key, change(current.value if current else None),
                        expected_version=current.version if current else None, memory_type=memory_type))
            except ConflictError:
                if attempt == attempts - 1:
                    raise
        raise ValueError("attempts must be at least 1")

    # sessions
    create_session = sync_method(sessions.create_session)
    get_session = sync_method(sessions.get_session)
    append_event = sync_method(sessions.append_event)
    merge_state = sync_method(sessions.merge_state)
    end_turn = sync_method(sessions.end_turn)
    terminate_session = sync_method(sessions.terminate_session)
    delete_session = sync_method(sessions.delete_session)
    memory_context = sync_method(sessions.memory_context)
    consolidate = sync_method(sessions.consolidate)

    # tasks, agents and checkpoints
    create_task = sync_method(sessions.create_task)
    link_task = sync_method(sessions.link_task)
    set_task_status = sync_method(sessions.set_task_status)
    spawn_agent = sync_method(sessions.spawn_agent)
    set_actor = sync_method(sessions.set_actor)
    save_checkpoint = sync_method(sessions.save_checkpoint)
    restore_checkpoint = sync_method(sessions.restore_checkpoint)

    # document index and audit
    put_document = sync_method(sessions.put_document)
    get_document = sync_method(sessions.get_document)
    audit_trail = sync_method(sessions.audit_trail)

    # documents
    ingest_text = sync_steps(documents.ingest_text)
    ingest_file = sync_steps(documents.ingest_file)
    embed_missing_chunks = sync_steps(documents.embed_missing_chunks)
    document_versions = sync_method(documents.document_versions)
    document_chunks = sync_method(documents.document_chunks)
    vector_dimension = sync_method(documents.vector_dimension)

    # temporal graph
    add_edge = sync_method(temporal_graph.add_edge)
    close_edge = sync_method(temporal_graph.close_edge)
    supersede_edge = sync_method(temporal_graph.supersede_edge)
    edges_as_of = sync_method(temporal_graph.edges_as_of)
    neighbors_as_of = sync_method(temporal_graph.neighbors_as_of)
    upsert_entity = sync_method(temporal_graph.upsert_entity)
    search_entities = sync_method(temporal_graph.search_entities)
    graph_nodes = sync_method(temporal_graph.graph_nodes)

    # memory types and decay
    remember = sync_method(memory_decay.remember)
    touch_memory = sync_method(memory_decay.touch_memory)
    memory_maintenance = sync_method(memory_decay.memory_maintenance)
    # layers
    record_event = sync_method(layers.record_event)
    record_reasoning_trace = sync_method(layers.record_reasoning_trace)
    assert_fact = sync_method(layers.assert_fact)
    store_embedding = sync_method(layers.store_embedding)
    store_semantic_memory = sync_method(layers.store_semantic_memory)
    search_semantic_memory = sync_method(layers.search_semantic_memory)
    upsert_relationship = sync_method(layers.upsert_relationship)
    graph_neighbors = sync_method(layers.graph_neighbors)
    apply_world_model_update = sync_method(layers.apply_world_model_update)
    take_world_model_snapshot = sync_method(layers.take_world_model_snapshot)
    world_model_state_at = sync_method(layers.world_model_state_at)
    world_model_state_version = sync_method(layers.world_model_state_version)
    record_reflection = sync_method(layers.record_reflection)
    record_task_reflection = sync_method(layers.record_task_reflection)
    record_summary = sync_method(layers.record_summary)
    summaries_due = sync_method(layers.summaries_due)
    record_access = sync_method(layers.record_access)
    entity_graph = sync_method(layers.entity_graph)

    # retrieval
    search = sync_method(retrieval.search)
    hybrid_search = sync_method(retrieval.hybrid_search)
    traverse = sync_method(retrieval.traverse)
    neighbourhood = sync_method(retrieval.neighbourhood)
    feedback = sync_method(retrieval.feedback)
    reflections = sync_method(retrieval.reflections)
    learn_importance = sync_method(retrieval.learn_importance)


class Substrate:
    """A pool of connections to a memsub database. It never changes the schema: run ``memsub migrate``."""

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 4, timeout: float = 30.0) -> None:
        """``timeout``: seconds a call waits for a connection before ConnectionFailed. The connection string gets
        a ``connect_timeout`` (5 s) unless it sets one, so an unreachable server fails fast."""
        from memsub.connection import with_timeout

        self.pool: ConnectionPool[psycopg.Connection[Row]] = ConnectionPool(
            with_timeout(dsn), min_size=min_size, max_size=max_size, open=True, timeout=timeout,
            kwargs={"row_factory": dict_row}, connection_class=psycopg.Connection, configure=_calls.configure,
        )

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Substrate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def tenant(self, tenant_id: UUID | str | None, *, org_id: UUID | str | None = None,
               user_id: UUID | str | None = None, roles: Sequence[str] = (), session_id: str | None = None,
               per_call: bool = False) -> AbstractContextManager[TenantSession]:
        """A transaction whose memsub context is this tenant, org, user, context roles and session; with
        ``per_call``, a block in which every call is a short transaction of its own in that context."""
        return self._session(_calls.set_context(tenant_id, org_id, user_id, roles, session_id), per_call)

    def signed(self, token: str, *, per_call: bool = False) -> AbstractContextManager[TenantSession]:
        """A transaction whose memsub context is the one a gateway signed (``memsub.set_context_signed``; tokens
        from ``memsub.context_tokens.mint_context_token``)."""
        return self._session(_calls.set_context_signed(token), per_call)

    @contextmanager
    def _session(self, context: Call[None], per_call: bool) -> Iterator[TenantSession]:
        if per_call:
            session = TenantSession(pool=self.pool, context=context)
            try:
                yield session
            finally:
                session._close()
            return
        # BEGIN and the context travel in pipeline mode with the block's first call: one round trip plus the
        # COMMIT's for a one-call block. An error of the context statement is raised by that first call.
        with _calls.pooled(self.pool) as connection:
            try:
                with connection.pipeline(), connection.transaction():
                    connection.execute(context.statement, context.params)
                    session = TenantSession(connection)
                    try:
                        yield session
                    finally:
                        session._close()
            except psycopg.Error as error:
                raise from_database_error(error) from error

