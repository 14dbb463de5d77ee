"""The tenant context an adapter acts for, and the transaction each adapter call runs in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar
from uuid import UUID

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from memsub import _calls
from memsub.connection import DEFAULT_PREPARE_THRESHOLD, pool_arguments
from memsub.errors import from_database_error

Row = dict[str, Any]
V = TypeVar("V")


@dataclass(frozen=True)
class TenantContext:
    """Who an adapter acts for: the arguments of ``memsub.set_context``."""

    tenant_id: UUID | str
    org_id: UUID | str | None = None
    user_id: UUID | str | None = None
    roles: Sequence[str] = field(default_factory=tuple)
    session_id: str | None = None

    def statement(self) -> _calls.Call[None]:
        """The ``memsub.set_context`` call that opens each of the adapter's transactions (built once: the context
        does not change)."""
        return self._statement

    @cached_property
    def _statement(self) -> _calls.Call[None]:
        return _calls.set_context(self.tenant_id, self.org_id, self.user_id, self.roles, self.session_id)


POOL_TIMEOUT = 30.0
"""Seconds an adapter call waits for a pooled connection (psycopg_pool's default, and the client's)."""


def pool_options(dsn: str, max_size: int = 4,
                 prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> dict[str, Any]:
    """The arguments of an adapter's own pool, judged now (``memsub.connection.pool_arguments``: a bad
    ``prepare_threshold`` raises ConfigurationError naming it) though the pool may open later: autocommit
    connections returning dict rows, as each adapter call is one pipeline closed by one Sync
    (``_calls.rows_in_context``), which needs autocommit mode."""
    return pool_arguments(dsn, min_size=1, max_size=max_size, timeout=POOL_TIMEOUT,
                          prepare_threshold=prepare_threshold, autocommit=True)


def sync_pool(dsn: str, max_size: int = 4, *,
              prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> ConnectionPool[psycopg.Connection[Row]]:
    """An open pool of :func:`pool_options`. ``prepare_threshold`` is the client's: None prepares nothing, as a
    transaction-mode connection pooler needs."""
    return ConnectionPool(**pool_options(dsn, max_size, prepare_threshold), open=True,
                          connection_class=psycopg.Connection)


def async_pool(dsn: str, max_size: int = 4, *, prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD
               ) -> AsyncConnectionPool[psycopg.AsyncConnection[Row]]:
    """The async twin of :func:`sync_pool` (opened by its first user)."""
    return async_pool_of(pool_options(dsn, max_size, prepare_threshold))


def async_pool_of(options: dict[str, Any]) -> AsyncConnectionPool[psycopg.AsyncConnection[Row]]:
    """An async pool of ``options`` (:func:`pool_options`), not opened yet."""
    return AsyncConnectionPool(**options, open=False, connection_class=psycopg.AsyncConnection)


Statement = tuple[str, Sequence[Any]]


def row_count(value: V, field: str = "limit") -> V:
    """A limit or offset for a stored function's ``integer`` parameter, refused before anything is sent when no
    integer holds it (``_calls.checked``: 22003 or 22023 naming ``field``), as the client refuses one; the function
    judges the rest (22023 below 0, and a limit over ``max_rows`` 54000, naming it)."""
    return _calls.checked(value, "integer", field)


def call(pool: ConnectionPool[psycopg.Connection[Row]], context: TenantContext, query: str,
         args: Sequence[Any]) -> list[Row]:
    """Rows of one stored-function call in its own transaction of the tenant context."""
    return call_many(pool, context, [(query, args)])[0]


def _calls_of(statements: Sequence[Statement]) -> list[_calls.Call[list[Row]]]:
    return [_calls.query(query, args, _calls.raw()) for query, args in statements]


def call_many(pool: ConnectionPool[psycopg.Connection[Row]], context: TenantContext,
              statements: Sequence[Statement]) -> list[list[Row]]:
    """The rows of each stored-function call, all in one transaction of the tenant context
    (``_calls.rows_in_context``: one round trip, commit included); database errors become memsub errors."""
    try:
        return _calls.rows_in_context(pool, context.statement(), _calls_of(statements))
    except psycopg.Error as error:
        raise from_database_error(error) from error


async def async_call(pool: AsyncConnectionPool[psycopg.AsyncConnection[Row]], context: TenantContext, query: str,
                     args: Sequence[Any]) -> list[Row]:
    """The async twin of :func:`call`."""
    return (await async_call_many(pool, context, [(query, args)]))[0]


async def async_call_many(pool: AsyncConnectionPool[psycopg.AsyncConnection[Row]], context: TenantContext,
                          statements: Sequence[Statement]) -> list[list[Row]]:
    """The async twin of :func:`call_many`."""
    try:
        return await _calls.rows_in_context_async(pool, context.statement(), _calls_of(statements))
    except psycopg.Error as error:
        raise from_database_error(error) from error
