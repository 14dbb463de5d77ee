"""The async Substrate client: the sync client's methods, models, errors and context rules, awaited.

::

    async with AsyncSubstrate("postgresql://...") as substrate:
        async with substrate.tenant(tenant_id, user_id=user_id) as session:
            result = await session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"text": "hi"}))

One ``async with`` block is one transaction (commit on success, rollback on any exception). With
``per_call=True`` the block holds no connection and each call is a short transaction of its own that sets the
context in the same round trip: an agent can search, await a model for as long as it takes, then write, without
pinning a pooled connection or an open transaction across the wait. A session used after its block ended raises
:class:`memsub.errors.SessionClosed`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool

from memsub import _calls
from memsub._calls import AsyncSession, Call, raw
from memsub.client import Namespaces, Opens
from memsub.connection import DEFAULT_PREPARE_THRESHOLD, pool_arguments
from memsub.errors import from_database_error

Row = dict[str, Any]
T = TypeVar("T")


class AsyncTenantSession(AsyncSession, Namespaces[AsyncSession]):
    """The async twin of :class:`memsub.client.TenantSession`: the same namespaces and methods, each awaited."""

    async def fetch(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        """Rows of one parameterized statement, by column name; database errors become memsub errors."""
        return await self._run(_calls.query(query, params, raw()))

    async def run(self, call: Call[T]) -> T:
        """Run a declared call (:mod:`memsub._calls`) in this session."""
        return await self._run(call)


class AsyncSubstrate(Opens[AbstractAsyncContextManager[AsyncTenantSession]]):
    """An async pool of connections to a memsub database (psycopg's AsyncConnectionPool).

    Open it with ``async with AsyncSubstrate(dsn) as substrate`` (or ``await substrate.open()``)."""

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 4, timeout: float = 30.0,
                 prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> None:
        """The options, and the ConfigurationError a pool cannot work with, are :class:`memsub.client.Substrate`'s."""
        self.pool: AsyncConnectionPool[psycopg.AsyncConnection[Row]] = AsyncConnectionPool(
            **pool_arguments(dsn, min_size=min_size, max_size=max_size, timeout=timeout,
                             prepare_threshold=prepare_threshold),
            open=False, connection_class=psycopg.AsyncConnection, configure=_calls.configure_async,
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

    @asynccontextmanager
    async def _session(self, context: Call[None], per_call: bool) -> AsyncIterator[AsyncTenantSession]:
        if per_call:
            with _calls.ending(AsyncTenantSession(pool=self.pool, context=context)) as session:
                yield session
            return
        # As in the sync client: BEGIN and the context travel in pipeline mode with the block's first call.
        async with _calls.pooled_async(self.pool) as connection:
            try:
                async with _calls.transaction_in_pipeline_async(connection) as pipeline:
                    await connection.execute(context.statement, context.params)
                    with _calls.ending(AsyncTenantSession(connection, pipeline=pipeline)) as session:
                        yield session
            except psycopg.Error as error:
                raise from_database_error(error) from error
