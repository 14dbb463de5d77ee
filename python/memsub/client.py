"""The Substrate client: typed methods over memsub's stored functions.

Every call runs inside a tenant context, which memsub keeps transaction-local::

    substrate = Substrate("postgresql://...")
    with substrate.tenant(tenant_id, user_id=user_id) as memory:
        result = memory.write_packet(PacketEnvelopeIn(packet_type="event", payload={"text": "hi"}))

One ``with`` block is one transaction: it commits on success and rolls back on any exception.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from memsub.errors import ConnectionFailed, from_database_error
from memsub.layers import LayersMixin
from memsub.models import LineageRow, PacketEnvelope, PacketStoreRow, PacketWriteResult
from memsub.retrieval import RetrievalMixin, register_vector_type

EnvelopeLike = PacketEnvelope | dict[str, Any]
Row = dict[str, Any]


def envelope_json(envelope: EnvelopeLike) -> str:
    """JSON text of an envelope given as a model or a plain dict."""
    if isinstance(envelope, PacketEnvelope):
        return envelope.to_json()
    return json.dumps(envelope, default=str)


class TenantSession(LayersMixin, RetrievalMixin):
    """Stored-function calls within one transaction and one tenant context."""

    def __init__(self, connection: psycopg.Connection[Row]) -> None:
        self.connection = connection

    def _rows(self, query: str, params: Sequence[Any]) -> list[Row]:
        try:
            return self.connection.execute(query.encode(), params).fetchall()
        except psycopg.Error as error:
            raise from_database_error(error) from error

    def fetch(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        """Rows of one parameterized statement, by column name; database errors become memsub errors."""
        return self._rows(query, params)

    def write_packet(self, envelope: EnvelopeLike) -> PacketWriteResult:
        rows = self._rows("select * from memsub.write_packet(%s::jsonb)", [envelope_json(envelope)])
        return PacketWriteResult.model_validate(rows[0])

    def write_packets(self, envelopes: Iterable[EnvelopeLike], batch_size: int = 500) -> list[PacketWriteResult]:
        """Write many envelopes, ``batch_size`` per call to memsub.write_packets, all in this transaction."""
        results: list[PacketWriteResult] = []
        batch: list[str] = []

        def flush() -> None:
            if batch:
                rows = self._rows("select * from memsub.write_packets(%s::jsonb)", ["[" + ",".join(batch) + "]"])
                offset = len(results)
                for row in rows:
                    row["position"] += offset
                    results.append(PacketWriteResult.model_validate(row))
                batch.clear()

        for envelope in envelopes:
            batch.append(envelope_json(envelope))
            if len(batch) >= batch_size:
                flush()
        flush()
        return results

    def get_packet(self, packet_id: UUID | str) -> PacketStoreRow | None:
        rows = self._rows("select * from memsub.get_packet(%s)", [str(packet_id)])
        return PacketStoreRow.model_validate(rows[0]) if rows else None

    def get_packets(self, packet_ids: Iterable[UUID | str]) -> list[PacketStoreRow]:
        """The visible packets among ``packet_ids``, each once, in the order asked (memsub.get_packets): one call
        and one index search per id, however many tenants share the store."""
        rows = self._rows("select * from memsub.get_packets(%s::uuid[])", [[str(p) for p in packet_ids]])
        return [PacketStoreRow.model_validate(row) for row in rows]

    def thread(self, thread_id: UUID | str, limit: int = 1000, after_cursor: int | None = None) -> list[PacketStoreRow]:
        """One page of a thread in write order: at most ``limit`` packets after ``after_cursor`` (the
        ``write_seq`` of the last packet already read; None: from the start)."""
        rows = self._rows("select * from memsub.get_thread(%s, %s, %s)", [str(thread_id), limit, after_cursor])
        return [PacketStoreRow.model_validate(row) for row in rows]

    def replay(self, thread_id: UUID | str, page_size: int = 1000,
               after_cursor: int | None = None) -> Iterator[PacketStoreRow]:
        """Every packet of a thread in write order, read ``page_size`` at a time with the keyset cursor."""
        cursor = after_cursor
        while True:
            page = self.thread(thread_id, limit=page_size, after_cursor=cursor)
            yield from page
            if len(page) < page_size:
                return
            cursor = page[-1].write_seq

    def lineage(self, packet_id: UUID | str, direction: Literal["ancestors", "descendants"] = "ancestors",
                max_depth: int = 16) -> list[LineageRow]:
        rows = self._rows("select * from memsub.get_lineage(%s, %s, %s)", [str(packet_id), direction, max_depth])
        return [LineageRow.model_validate(row) for row in rows]

    def purge_expired(self, tenant_id: UUID | str | None = None) -> dict[UUID, int]:
        """Remove the expired packets the context covers (of one tenant when given), keeping tombstones for
        lineage; the number purged per tenant."""
        rows = self._rows("select tenant_id, purged from memsub.purge_expired(%s)",
                          [str(tenant_id) if tenant_id is not None else None])
        return {row["tenant_id"]: int(row["purged"]) for row in rows}


class Substrate:
    """A pool of connections to a memsub database. It never changes the schema: run ``memsub migrate``."""

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 4, timeout: float = 30.0) -> None:
        """``timeout``: seconds a call waits for a connection before ConnectionFailed. The connection string gets
        a ``connect_timeout`` (5 s) unless it sets one, so an unreachable server fails fast."""
        from memsub.connection import with_timeout

        self.pool: ConnectionPool[psycopg.Connection[Row]] = ConnectionPool(
            with_timeout(dsn), min_size=min_size, max_size=max_size, open=True, timeout=timeout,
            kwargs={"row_factory": dict_row}, connection_class=psycopg.Connection, configure=_configure,
        )

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Substrate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def tenant(self, tenant_id: UUID | str | None, *, org_id: UUID | str | None = None,
               user_id: UUID | str | None = None, roles: Sequence[str] = (),
               session_id: str | None = None) -> Iterator[TenantSession]:
        """A transaction whose memsub context is this tenant, org, user, context roles and session.

        BEGIN and ``set_context`` are sent in pipeline mode together with the first call, so a call costs one
        round trip plus the COMMIT's; an error of ``set_context`` is raised by that first call."""
        with self._session(b"select memsub.set_context(%s, %s, %s, %s, %s)",
                           [_text(tenant_id), _text(org_id), _text(user_id), list(roles), session_id]) as session:
            yield session

    @contextmanager
    def _session(self, context_query: bytes, params: Sequence[Any]) -> Iterator[TenantSession]:
        """A pipelined transaction that starts with the context statement; database errors become memsub errors."""
        with self._connection() as connection:
            try:
                with connection.pipeline(), connection.transaction():
                    connection.execute(context_query, params, prepare=True)
                    yield TenantSession(connection)
            except psycopg.Error as error:
                raise from_database_error(error) from error

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Row]]:
        """A pooled connection; a pool that cannot reach the server raises ConnectionFailed, not PoolTimeout."""
        try:
            connection = self.pool.getconn()
        except PoolTimeout as error:
            raise ConnectionFailed(f"cannot connect: no connection to the server within {self.pool.timeout:g} s "
                                   f"({error})") from error
        try:
            yield connection
        finally:
            self.pool.putconn(connection)

    @contextmanager
    def signed(self, token: str) -> Iterator[TenantSession]:
        """A transaction whose memsub context is the one a gateway signed (``memsub.set_context_signed``; tokens
        from ``memsub.context_tokens.mint_context_token``)."""
        with self._session(b"select memsub.set_context_signed(%s)", [token]) as session:
            yield session


def _configure(connection: psycopg.Connection[Row]) -> None:
    """New pool connections learn pgvector's ``vector`` type, so vectors and NumPy arrays bind as parameters.

    A database without the extension (not migrated yet) is left as it is: the retrieval methods register the
    type when they first need it.
    """
    try:
        register_vector_type(connection)
    except psycopg.Error:
        pass  # e.g. no permission to read the catalog: registered lazily instead, or the call reports the error
    finally:
        connection.rollback()  # the pool wants an idle connection back


def _text(value: UUID | str | None) -> str | None:
    return None if value is None else str(value)
