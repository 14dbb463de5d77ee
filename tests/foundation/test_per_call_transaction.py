"""A per-call run (``_calls.rows_in_context``: per-call sessions, HTTP, MCP, the framework adapters) is one
transaction: the context and every call commit together or not at all, and the connection goes back to the pool
idle, with no context and as it was configured.

It travels as one pipeline closed by one Sync, with no BEGIN or COMMIT of its own: the statements of a pipeline
form one transaction up to its Sync, which commits it (or, after an error, rolls it back).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from typing import Any

import psycopg
import pytest
from psycopg.pq import TransactionStatus

from memsub import _calls
from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate
from memsub.errors import ContextError, InvalidInput
from memsub.integrations._context import async_pool, sync_pool

from helpers import TENANT_A, Background, wait_until_blocked

CONTEXT = _calls.set_context(TENANT_A, None, None, [], None)
TRANSACTION = _calls.query("select pg_current_xact_id()::text as xid, memsub.current_tenant_id() as tenant",
                           [], _calls.raw())
ADD_EDGE = _calls.query("select relationship_id from memsub.temporal_edge_add(%s, 'works_at', 'Acme')", ["Kept"],
                        _calls.raw())
FAILS = _calls.query("select 1 / 0 as never", [], _calls.raw())
EDGES = _calls.query("select count(*) as n from memsub.entity_relationships where source_entity = %s", ["Kept"],
                     _calls.raw())


def idle_and_clean(connection: Any, autocommit: bool) -> None:
    assert connection.info.transaction_status == TransactionStatus.IDLE
    assert connection.autocommit is autocommit
    row = connection.execute("select coalesce(current_setting('memsub.tenant_id', true), '') as tenant").fetchone()
    connection.rollback()
    assert row == {"tenant": ""}


def test_the_context_and_the_calls_run_in_one_transaction(db: Any) -> None:
    with Substrate(db.dsn("app")) as substrate:
        first, second = _calls.rows_in_context(substrate.pool, CONTEXT, [TRANSACTION, TRANSACTION])
        assert first == second and first[0]["tenant"] == TENANT_A, (first, second)
        with substrate.pool.connection() as connection:
            idle_and_clean(connection, autocommit=False)


def test_a_failing_call_keeps_nothing_and_the_connection_goes_back_clean(db: Any) -> None:
    with Substrate(db.dsn("app")) as substrate:
        with pytest.raises(psycopg.errors.DivisionByZero):
            _calls.rows_in_context(substrate.pool, CONTEXT, [ADD_EDGE, FAILS])
        assert _calls.rows_in_context(substrate.pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
        with substrate.pool.connection() as connection:
            idle_and_clean(connection, autocommit=False)
        _calls.rows_in_context(substrate.pool, CONTEXT, [ADD_EDGE])
        assert _calls.rows_in_context(substrate.pool, CONTEXT, [EDGES]) == [[{"n": 1}]]


@pytest.mark.asyncio
async def test_async_runs_are_one_transaction_too(db: Any) -> None:
    async with AsyncSubstrate(db.dsn("app")) as substrate:
        first, second = await _calls.rows_in_context_async(substrate.pool, CONTEXT, [TRANSACTION, TRANSACTION])
        assert first == second and first[0]["tenant"] == TENANT_A
        with pytest.raises(psycopg.errors.DivisionByZero):
            await _calls.rows_in_context_async(substrate.pool, CONTEXT, [ADD_EDGE, FAILS])
        assert await _calls.rows_in_context_async(substrate.pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
        async with substrate.pool.connection() as connection:
            assert connection.info.transaction_status == TransactionStatus.IDLE and connection.autocommit is False


def test_on_the_adapters_autocommit_pool_a_run_is_one_transaction_too(db: Any) -> None:
    """The adapters' pools hand out connections already in autocommit mode, which a run then leaves alone: the
    context and the calls still commit together or not at all, and the connection comes back as it went."""
    pool = sync_pool(db.dsn("app"), max_size=1)
    try:
        first, second = _calls.rows_in_context(pool, CONTEXT, [TRANSACTION, TRANSACTION])
        assert first == second and first[0]["tenant"] == TENANT_A, (first, second)
        with pytest.raises(psycopg.errors.DivisionByZero):
            _calls.rows_in_context(pool, CONTEXT, [ADD_EDGE, FAILS])
        assert _calls.rows_in_context(pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
        with pool.connection() as connection:
            idle_and_clean(connection, autocommit=True)
    finally:
        pool.close()


@pytest.mark.asyncio
async def test_on_the_adapters_async_autocommit_pool_a_run_is_one_transaction_too(db: Any) -> None:
    pool = async_pool(db.dsn("app"), max_size=1)
    await pool.open()
    try:
        first, second = await _calls.rows_in_context_async(pool, CONTEXT, [TRANSACTION, TRANSACTION])
        assert first == second and first[0]["tenant"] == TENANT_A
        with pytest.raises(psycopg.errors.DivisionByZero):
            await _calls.rows_in_context_async(pool, CONTEXT, [ADD_EDGE, FAILS])
        assert await _calls.rows_in_context_async(pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
        async with pool.connection() as connection:
            assert connection.info.transaction_status == TransactionStatus.IDLE and connection.autocommit is True
    finally:
        await pool.close()


# A context the server refuses (22P02): the client's own call refuses a tenant that is no UUID before sending it.
REFUSED_CONTEXT = _calls.query("select memsub.set_context(%s::text::uuid)", ["not-a-tenant"], _calls.nothing())
ROUNDS = 10


def warnings_of_psycopg(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name.startswith("psycopg") and record.levelno >= logging.WARNING]


def test_an_error_is_raised_once_and_nothing_is_logged(db: Any, caplog: pytest.LogCaptureFixture) -> None:
    """An error of the context or of a call is what the run raises, and all it reports: psycopg logs a warning
    ("error ignored terminating ...") when a pipeline is closed while an error is on its way out, which an
    application (the CLI, the HTTP server) would print next to its own report of the error."""
    caplog.set_level(logging.WARNING)
    with Substrate(db.dsn("app")) as substrate:
        for _ in range(ROUNDS):  # whether psycopg reads an error inside the block or at its end varies with timing
            with pytest.raises(psycopg.errors.InvalidTextRepresentation):
                _calls.rows_in_context(substrate.pool, REFUSED_CONTEXT, [EDGES])
            with pytest.raises(psycopg.errors.DivisionByZero):
                _calls.rows_in_context(substrate.pool, CONTEXT, [ADD_EDGE, FAILS, EDGES])
            with pytest.raises(ContextError), substrate.tenant(TENANT_A, roles=["platform_admin"]) as session:
                session.packets.get("00000000-0000-4000-8000-000000000000")
            with pytest.raises(InvalidInput), substrate.tenant(TENANT_A) as session:
                session.packets.get("not-a-packet")
        assert _calls.rows_in_context(substrate.pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
    assert warnings_of_psycopg(caplog) == []


@pytest.mark.asyncio
async def test_an_async_error_is_raised_once_and_nothing_is_logged(db: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with AsyncSubstrate(db.dsn("app")) as substrate:
        for _ in range(ROUNDS):
            with pytest.raises(psycopg.errors.InvalidTextRepresentation):
                await _calls.rows_in_context_async(substrate.pool, REFUSED_CONTEXT, [EDGES])
            with pytest.raises(psycopg.errors.DivisionByZero):
                await _calls.rows_in_context_async(substrate.pool, CONTEXT, [ADD_EDGE, FAILS, EDGES])
            with pytest.raises(ContextError):
                async with substrate.tenant(TENANT_A, roles=["platform_admin"]) as session:
                    await session.packets.get("00000000-0000-4000-8000-000000000000")
            with pytest.raises(InvalidInput):
                async with substrate.tenant(TENANT_A) as session:
                    await session.packets.get("not-a-packet")
        async with substrate.tenant(TENANT_A) as session:  # the pool's connections came back idle
            assert await session.packets.get("00000000-0000-4000-8000-000000000000") is None
    assert warnings_of_psycopg(caplog) == []


# psycopg prepares a statement the sixth time it runs it (prepare_threshold 5) and takes it for prepared once sent.
# In a pipeline whose context fails first, the server skips that Parse: a connection that went back to the pool so
# would fail every later run of the statement with "prepared statement does not exist".
SEEN_BEFORE_PREPARED = 5


def test_a_run_whose_context_fails_as_a_call_is_prepared_leaves_no_broken_connection(db: Any) -> None:
    pool = sync_pool(db.dsn("app"), max_size=1)
    try:
        for _ in range(SEEN_BEFORE_PREPARED):
            assert _calls.rows_in_context(pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            _calls.rows_in_context(pool, REFUSED_CONTEXT, [EDGES])
        for _ in range(3):
            assert _calls.rows_in_context(pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
    finally:
        pool.close()


@pytest.mark.asyncio
async def test_an_async_run_whose_context_fails_as_a_call_is_prepared_leaves_no_broken_connection(db: Any) -> None:
    async with AsyncSubstrate(db.dsn("app"), max_size=1) as substrate:
        for _ in range(SEEN_BEFORE_PREPARED):
            assert await _calls.rows_in_context_async(substrate.pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            await _calls.rows_in_context_async(substrate.pool, REFUSED_CONTEXT, [EDGES])
        for _ in range(3):
            assert await _calls.rows_in_context_async(substrate.pool, CONTEXT, [EDGES]) == [[{"n": 0}]]


# A run interrupted while its context waits (a lock another transaction holds) leaves the call behind it unparsed,
# as a failed context does: cancelling a task, a timeout around it (asyncio.wait_for) or Ctrl-C in a sync program
# must not hand the next user of the connection "prepared statement does not exist" either.
LOCKED_BY_CONTEXT = "lock table memsub.context_keys in access exclusive mode"  # memsub.set_context reads it


def test_an_interrupted_run_as_a_call_is_prepared_leaves_no_broken_connection(db: Any) -> None:
    pool = sync_pool(db.dsn("app"), max_size=1)
    try:
        for _ in range(SEEN_BEFORE_PREPARED):
            assert _calls.rows_in_context(pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
        with pool.connection() as connection:
            pid = connection.info.backend_pid
        main = threading.get_ident()
        with db.connect() as holder:
            holder.execute(LOCKED_BY_CONTEXT)
            interrupter = Background(lambda: (wait_until_blocked(db, pid), signal.pthread_kill(main, signal.SIGINT)))
            with pytest.raises(KeyboardInterrupt):
                _calls.rows_in_context(pool, CONTEXT, [EDGES])
            interrupter.join()
        for _ in range(3):
            assert _calls.rows_in_context(pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
    finally:
        pool.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("interrupt", ["cancel", "wait_for"])
async def test_an_interrupted_async_run_as_a_call_is_prepared_leaves_no_broken_connection(db: Any,
                                                                                          interrupt: str) -> None:
    async with AsyncSubstrate(db.dsn("app"), max_size=1) as substrate:
        for _ in range(SEEN_BEFORE_PREPARED):
            assert await _calls.rows_in_context_async(substrate.pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
        async with substrate.pool.connection() as connection:
            pid = connection.info.backend_pid
        with db.connect() as holder:
            holder.execute(LOCKED_BY_CONTEXT)
            if interrupt == "cancel":
                run = asyncio.create_task(_calls.rows_in_context_async(substrate.pool, CONTEXT, [EDGES]))
                await asyncio.to_thread(wait_until_blocked, db, pid)
                run.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await run
            else:
                async def waited() -> None:
                    waiting = asyncio.create_task(asyncio.to_thread(wait_until_blocked, db, pid))
                    with pytest.raises(TimeoutError):
                        await asyncio.wait_for(_calls.rows_in_context_async(substrate.pool, CONTEXT, [EDGES]), 2)
                    await waiting  # the run did wait for the lock before it timed out
                await waited()
        for _ in range(3):
            assert await _calls.rows_in_context_async(substrate.pool, CONTEXT, [EDGES]) == [[{"n": 0}]]
