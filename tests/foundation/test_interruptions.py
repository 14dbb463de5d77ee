"""A call interrupted while the server runs it (a cancelled task, an ``asyncio.wait_for`` that timed out, Ctrl-C,
an exception of the caller's own inside a block, the server cancelling or ending the backend) keeps nothing of its
transaction, leaves no statement running on the server, and hands the next user of its pooled connection (here
another tenant, on a pool of one connection) no context, no transaction and nothing half sent."""

from __future__ import annotations

import asyncio
import signal
import threading
from typing import Any

import pytest

from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate
from memsub.errors import ConflictError, InvalidInput, TransactionAborted

from helpers import TENANT_A, TENANT_B, Background, backend_state, wait_until_blocked

ADD_EDGE = "select relationship_id from memsub.temporal_edge_add(%s, 'works_at', 'Acme')"
# A lock another transaction holds.
LOCKED = "select pg_advisory_xact_lock(5401)"
# One statement that writes an edge, then waits for that lock.
WRITES_THEN_WAITS = ("select (select count(*) from memsub.temporal_edge_add('Lost', 'works_at', 'Acme')) "
                     "+ (select count(*) from (select pg_advisory_xact_lock(5401)) as waited) as n")
SEEN = "select coalesce(current_setting('memsub.tenant_id', true), '') as tenant, pg_backend_pid() as pid"


def kept_edges(db: Any) -> list[str]:
    with db.connect() as admin:
        return [row[0] for row in admin.execute(
            "select source_entity from memsub.entity_relationships order by 1").fetchall()]


async def pid_of(substrate: AsyncSubstrate) -> int:
    async with substrate.pool.connection() as connection:
        return int(connection.info.backend_pid)


async def next_user_sees_nothing(db: Any, substrate: AsyncSubstrate, pid: int) -> None:
    """The next call on the pool (of one), as tenant B: done at once although the lock is still held, in its own
    context, on a backend that runs nothing else."""
    async with substrate.tenant(TENANT_B) as session:
        seen = await asyncio.wait_for(session.fetch(SEEN), 5)
    assert seen == [{"tenant": str(TENANT_B), "pid": pid}]  # the same connection, kept
    assert backend_state(db, pid) == "idle"


@pytest.mark.asyncio
@pytest.mark.parametrize("interrupt", ["cancel", "wait_for"])
@pytest.mark.parametrize("per_call", [False, True])
async def test_an_async_call_interrupted_while_it_waits_keeps_nothing_and_leaves_the_connection_clean(
        db: Any, interrupt: str, per_call: bool) -> None:
    async with AsyncSubstrate(db.dsn("app"), min_size=1, max_size=1) as substrate:
        pid = await pid_of(substrate)

        async def block() -> None:
            async with substrate.tenant(TENANT_A, per_call=per_call) as session:
                await session.fetch(ADD_EDGE, ["Kept"])  # committed at once in per-call mode
                await session.fetch(WRITES_THEN_WAITS)

        with db.connect() as holder:
            holder.execute(LOCKED)

            if interrupt == "cancel":
                task = asyncio.create_task(block())
                await asyncio.to_thread(wait_until_blocked, db, pid)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            else:
                waiting = asyncio.create_task(asyncio.to_thread(wait_until_blocked, db, pid))
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(block(), 3)
                await waiting  # the call did wait for the lock before it timed out
            assert backend_state(db, pid) == "idle"
            await next_user_sees_nothing(db, substrate, pid)
        assert kept_edges(db) == (["Kept"] if per_call else [])


def test_a_statement_the_server_cancels_raises_conflict_error_and_the_pool_goes_on(db: Any) -> None:
    """pg_cancel_backend (as the login's statement_timeout does) fails the call with 57014, a ConflictError the
    caller may retry; the block's transaction keeps nothing and its connection serves the next tenant."""
    with Substrate(db.dsn("app"), min_size=1, max_size=1) as substrate:
        with substrate.pool.connection() as connection:
            pid = connection.info.backend_pid
        with db.connect() as holder:
            holder.execute(LOCKED)

            def block() -> None:
                with substrate.tenant(TENANT_A) as session:
                    session.fetch(ADD_EDGE, ["Kept"])
                    session.fetch(WRITES_THEN_WAITS)

            call = Background(block)
            wait_until_blocked(db, pid, call)
            with db.connect(autocommit=True) as admin:
                admin.execute("select pg_cancel_backend(%s)", [pid])
            call.join()
        assert isinstance(call.error, ConflictError), repr(call.error)
        assert call.error.sqlstate == "57014" and "canceling statement" in str(call.error)
        with substrate.tenant(TENANT_B) as session:
            assert session.fetch(SEEN)[0]["tenant"] == str(TENANT_B)
    assert kept_edges(db) == []


@pytest.mark.parametrize("per_call", [False, True])
def test_ctrl_c_while_a_sync_call_waits_keeps_nothing_and_leaves_the_connection_clean(db: Any,
                                                                                      per_call: bool) -> None:
    # Python's own handler, which raises KeyboardInterrupt: another one left behind (a worker's, say) would catch
    # the signal and leave this call waiting for the lock for ever.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with Substrate(db.dsn("app"), min_size=1, max_size=1) as substrate:
        with substrate.pool.connection() as connection:
            pid = connection.info.backend_pid
        main = threading.get_ident()
        with db.connect() as holder:
            holder.execute(LOCKED)

            def interrupt() -> None:
                wait_until_blocked(db, pid)
                signal.pthread_kill(main, signal.SIGINT)

            interrupter = Background(interrupt)
            with pytest.raises(KeyboardInterrupt):
                with substrate.tenant(TENANT_A, per_call=per_call) as session:
                    session.fetch(ADD_EDGE, ["Kept"])
                    session.fetch(WRITES_THEN_WAITS)
            interrupter.join()
            assert backend_state(db, pid) == "idle"
            with substrate.tenant(TENANT_B) as session:  # at once, although the lock is still held
                assert session.fetch(SEEN) == [{"tenant": str(TENANT_B), "pid": pid}]
        assert kept_edges(db) == (["Kept"] if per_call else [])


def test_an_error_of_the_callers_own_between_calls_keeps_nothing_of_the_block(db: Any) -> None:
    with Substrate(db.dsn("app"), min_size=1, max_size=1) as substrate:
        with pytest.raises(LookupError):
            with substrate.tenant(TENANT_A) as session:
                session.fetch(ADD_EDGE, ["Kept"])
                raise LookupError("the application's own failure")
        with substrate.tenant(TENANT_B) as session:
            assert session.fetch(SEEN)[0]["tenant"] == str(TENANT_B)
    assert kept_edges(db) == []


@pytest.mark.asyncio
async def test_a_call_after_an_interrupted_call_of_the_block_raises_transaction_aborted(db: Any) -> None:
    """An interruption caught inside the block leaves its transaction aborted: the block's next call raises
    TransactionAborted before anything is sent (not the server's bare "current transaction is aborted"), as does
    the block's end, and nothing of the block is kept."""
    async with AsyncSubstrate(db.dsn("app"), min_size=1, max_size=1) as substrate:
        with db.connect() as holder:
            holder.execute(LOCKED)
            with pytest.raises(TransactionAborted, match="nothing of this block was committed"):
                async with substrate.tenant(TENANT_A) as session:
                    await session.fetch(ADD_EDGE, ["Kept"])
                    with pytest.raises(TimeoutError):
                        await asyncio.wait_for(session.fetch(WRITES_THEN_WAITS), 0.5)
                    with pytest.raises(TransactionAborted, match="was interrupted"):
                        await session.fetch(SEEN)
            await next_user_sees_nothing(db, substrate, await pid_of(substrate))
    assert kept_edges(db) == []


def test_a_sync_call_after_a_failed_call_of_the_block_raises_transaction_aborted(db: Any) -> None:
    with Substrate(db.dsn("app"), min_size=1, max_size=1) as substrate:
        with pytest.raises(TransactionAborted):
            with substrate.tenant(TENANT_A) as session:
                session.fetch(ADD_EDGE, ["Kept"])
                with pytest.raises(InvalidInput):
                    session.fetch("select 1 / 0 as never")
                with pytest.raises(TransactionAborted, match="nothing of this block was committed"):
                    session.fetch(SEEN)
    assert kept_edges(db) == []
