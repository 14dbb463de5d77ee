"""The Substrate client: typed methods over memsub's stored functions, one namespace per memory area.

Every call runs inside a tenant context, which memsub keeps transaction-local::

    substrate = Substrate("postgresql://...")
    with substrate.tenant(tenant_id, user_id=user_id) as session:
        result = session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"text": "hi"}))
        hits = session.search.semantic(query_vector, k=5)

One ``with`` block is one transaction: it commits on success and rolls back on any exception. With
``per_call=True`` the block holds no connection: each call is a short transaction of its own that sets the
context in the same round trip (for loops that wait on something slow, such as a model, between calls).
A session used after its block ended raises :class:`memsub.errors.SessionClosed`, and so do its namespaces.

Each area's calls are declared once, in its module (:mod:`memsub.packets`, :mod:`memsub.memory` ...), and
attached once, in :class:`Namespaces`; :mod:`memsub.async_client` exposes the same namespaces with ``await``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Generic, TypeVar
from uuid import UUID

import psycopg
from psycopg_pool import ConnectionPool

from memsub import _calls
from memsub._calls import Call, SessionT, SyncSession, method, namespace, raw
from memsub.connection import DEFAULT_PREPARE_THRESHOLD, pool_arguments
from memsub.documents import DocumentsArea
from memsub.errors import from_database_error
from memsub.events import EventsArea
from memsub.graph import GraphArea
from memsub.memory import MemoryArea
from memsub.packets import PacketsArea
from memsub.reflection import ReflectionArea
from memsub.search import SearchArea
from memsub.sessions import SessionsArea
from memsub.world_model import WorldModelArea

Row = dict[str, Any]
T = TypeVar("T")


class Namespaces(Generic[SessionT]):
    """What both sessions share: one namespace per memory area (``session.memory.write(...)``; awaited on the async
    session) and the installation's vector dimension. A new area is one line here."""

    packets: PacketsArea[SessionT] = namespace(PacketsArea)
    events: EventsArea[SessionT] = namespace(EventsArea)
    search: SearchArea[SessionT] = namespace(SearchArea)
    graph: GraphArea[SessionT] = namespace(GraphArea)
    world_model: WorldModelArea[SessionT] = namespace(WorldModelArea)
    reflection: ReflectionArea[SessionT] = namespace(ReflectionArea)
    memory: MemoryArea[SessionT] = namespace(MemoryArea)
    sessions: SessionsArea[SessionT] = namespace(SessionsArea)
    documents: DocumentsArea[SessionT] = namespace(DocumentsArea)

    vector_dimension = method(_calls.vector_dimension)


AREAS: tuple[str, ...] = tuple(name for name, value in vars(Namespaces).items() if isinstance(value, _calls._Namespace))
"""The session namespaces, in declaration order."""


class TenantSession(SyncSession, Namespaces[SyncSession]):
    """Stored-function calls within one tenant context: in the transaction of the ``with`` block, or (per-call
    mode) each in a short transaction of its own."""

    def fetch(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        """Rows of one parameterized statement, by column name; database errors become memsub errors."""
        return self._run(_calls.query(query, params, raw()))

    def run(self, call: Call[T]) -> T:
        """Run a declared call (:mod:`memsub._calls`) in this session."""
        return self._run(call)


OpenedT = TypeVar("OpenedT")


class Opens(Generic[OpenedT]):
    """How a substrate (sync or async) opens a session: in a tenant's context or in a signed one."""

    def _session(self, context: Call[None], per_call: bool) -> OpenedT:
        raise NotImplementedError

    def tenant(self, tenant_id: UUID | str | None, *, org_id: UUID | str | None = None,
               user_id: UUID | str | None = None, roles: Sequence[str] = (), session_id: str | None = None,
               per_call: bool = False) -> OpenedT:
        """A transaction whose memsub context is this tenant, org, user, context roles and session; with
        ``per_call``, a block in which every call is a short transaction of its own in that context."""
        return self._session(_calls.set_context(tenant_id, org_id, user_id, roles, session_id), per_call)

    def signed(self, token: str, *, per_call: bool = False) -> OpenedT:
        """A transaction whose memsub context is the one a gateway signed (``memsub.set_context_signed``; tokens
        from ``memsub.context_tokens.mint_context_token``)."""
        return self._session(_calls.set_context_signed(token), per_call)


class Substrate(Opens[AbstractContextManager[TenantSession]]):
    """A pool of connections to a memsub database. It never changes the schema: run ``memsub migrate``."""

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 4, timeout: float = 30.0,
                 prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> None:
        """``timeout``: seconds a call waits for a connection before ConnectionFailed. The connection string gets
        a ``connect_timeout`` (5 s) unless it sets one, so an unreachable server fails fast. Sizes and a
        ``timeout`` a pool cannot work with (``min_size`` < 0, ``max_size`` < 1 or < ``min_size``, ``timeout`` <= 0)
        raise ConfigurationError naming the option.

        ``prepare_threshold`` is psycopg's, set on every pooled connection: the runs of one statement on a
        connection after which it is prepared there (default 5: prepared the sixth time; 0: at once). ``None``
        prepares nothing, which a transaction-mode connection pooler needs (docs/client.md, "Behind a
        connection pooler"); anything but None or an integer 0 or more raises ConfigurationError."""
        self.pool: ConnectionPool[psycopg.Connection[Row]] = ConnectionPool(
            **pool_arguments(dsn, min_size=min_size, max_size=max_size, timeout=timeout,
                             prepare_threshold=prepare_threshold),
            open=True, connection_class=psycopg.Connection, configure=_calls.configure,
        )

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Substrate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _session(self, context: Call[None], per_call: bool) -> Iterator[TenantSession]:
        if per_call:
            with _calls.ending(TenantSession(pool=self.pool, context=context)) as session:
                yield session
            return
        # BEGIN and the context travel in pipeline mode with the block's first call: one round trip plus the
        # COMMIT's for a one-call block. An error of the context statement is raised by that first call.
        with _calls.pooled(self.pool) as connection:
            try:
                with _calls.transaction_in_pipeline(connection) as pipeline:
                    connection.execute(context.statement, context.params)
                    with _calls.ending(TenantSession(connection, pipeline=pipeline)) as session:
                        yield session
            except psycopg.Error as error:
                raise from_database_error(error) from error

