"""A pooled connection the server ends (a restart, ``pg_terminate_backend``, a login timeout) while a block or a
call uses it: the call raises ConnectionFailed, one line, as when the server cannot be reached; nothing of the
block is committed; and the pool replaces the connection, so the next block works."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import uuid4

import pytest

from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate
from memsub.errors import ConnectionFailed

from helpers import TENANT_A, Background, terminate_backend, wait_until_blocked

LOCKED = "lock table memsub.memory_entries in access exclusive mode"  # memory writes and reads wait for it


def one_line(error: ConnectionFailed) -> None:
    assert "\n" not in str(error) and str(error).startswith("connection to the server lost"), str(error)


@contextmanager
def ending_of(per_call: bool) -> Iterator[pytest.ExceptionInfo[ConnectionFailed] | None]:
    """What ending a session's block raises once its connection is lost: a block (one transaction) cannot commit
    and raises ConnectionFailed too; a per-call session held nothing and ends quietly."""
    if per_call:
        yield None
        return
    with pytest.raises(ConnectionFailed) as raised:
        yield raised


def test_a_block_whose_connection_the_server_ended_raises_connection_failed(db: Any) -> None:
    user = uuid4()
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with pytest.raises(ConnectionFailed) as raised:
            with substrate.tenant(TENANT_A, user_id=user) as session:
                session.memory.write(f"user:{user}", "before", 1)
                terminate_backend(db, session.fetch("select pg_backend_pid() as pid")[0]["pid"])
                session.memory.write(f"user:{user}", "after", 2)
        one_line(raised.value)
        with substrate.tenant(TENANT_A, user_id=user) as session:
            assert session.memory.list(f"user:{user}") == []


@pytest.mark.parametrize("per_call", [False, True])
def test_a_call_waiting_when_the_server_ends_its_connection_raises_connection_failed(db: Any,
                                                                                     per_call: bool) -> None:
    user = uuid4()
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with substrate.pool.connection() as connection:
            pid = connection.info.backend_pid
        with db.connect() as holder, ending_of(per_call) as block_end:
            holder.execute(LOCKED)
            with substrate.tenant(TENANT_A, user_id=user, per_call=per_call) as session:
                call = Background(lambda: session.memory.write(f"user:{user}", "k", 1))
                wait_until_blocked(db, pid, call)
                terminate_backend(db, pid)
                assert isinstance(call.join().error, ConnectionFailed), call.error
                one_line(call.error)
        if block_end is not None:
            one_line(block_end.value)
        with substrate.tenant(TENANT_A, user_id=user) as session:
            assert session.memory.list(f"user:{user}") == []


@pytest.mark.asyncio
@pytest.mark.parametrize("per_call", [False, True])
async def test_an_async_call_waiting_when_the_server_ends_its_connection_raises_connection_failed(
        db: Any, per_call: bool) -> None:
    user = uuid4()
    async with AsyncSubstrate(db.dsn("app"), max_size=1) as substrate:
        async with substrate.pool.connection() as connection:
            pid = connection.info.backend_pid
        with db.connect() as holder, ending_of(per_call) as block_end:
            holder.execute(LOCKED)
            async with substrate.tenant(TENANT_A, user_id=user, per_call=per_call) as session:
                call = asyncio.create_task(session.memory.write(f"user:{user}", "k", 1))
                await asyncio.to_thread(wait_until_blocked, db, pid)
                await asyncio.to_thread(terminate_backend, db, pid)
                with pytest.raises(ConnectionFailed) as raised:
                    await call
                one_line(raised.value)
        if block_end is not None:
            one_line(block_end.value)
        async with substrate.tenant(TENANT_A, user_id=user) as session:
            assert await session.memory.list(f"user:{user}") == []


# A server restart, or an administrator, ends the pool's idle connections too. The pool keeps them until they are
# asked for; handing one out would fail the next block or call of every connection the pool holds.
POOL_SIZE = 2


def test_a_connection_the_server_ended_in_the_pool_is_not_handed_out(db: Any) -> None:
    with Substrate(db.dsn("app"), min_size=POOL_SIZE, max_size=POOL_SIZE) as substrate:
        for per_call in (False, True):
            substrate.pool.wait()
            held = [substrate.pool.getconn() for _ in range(POOL_SIZE)]
            pids = {connection.info.backend_pid for connection in held}
            for connection in held:
                substrate.pool.putconn(connection)
            for pid in pids:
                terminate_backend(db, pid)
            for _ in range(POOL_SIZE):
                with substrate.tenant(TENANT_A, per_call=per_call) as session:
                    rows = session.fetch("select memsub.current_tenant_id() as tenant, pg_backend_pid() as pid")
                assert rows[0]["tenant"] == TENANT_A and rows[0]["pid"] not in pids


@pytest.mark.asyncio
async def test_a_connection_the_server_ended_in_the_async_pool_is_not_handed_out(db: Any) -> None:
    async with AsyncSubstrate(db.dsn("app"), min_size=POOL_SIZE, max_size=POOL_SIZE) as substrate:
        for per_call in (False, True):
            await substrate.pool.wait()
            held = [await substrate.pool.getconn() for _ in range(POOL_SIZE)]
            pids = {connection.info.backend_pid for connection in held}
            for connection in held:
                await substrate.pool.putconn(connection)
            for pid in pids:
                await asyncio.to_thread(terminate_backend, db, pid)
            for _ in range(POOL_SIZE):
                async with substrate.tenant(TENANT_A, per_call=per_call) as session:
                    rows = await session.fetch("select memsub.current_tenant_id() as tenant, pg_backend_pid() as pid")
                assert rows[0]["tenant"] == TENANT_A and rows[0]["pid"] not in pids
