"""A tenant block is one transaction on one pooled connection, and between its calls (an agent awaiting its model)
the server sees it as what it is: idle in a transaction. So the login's ``idle_in_transaction_session_timeout``
(``memsub login-timeouts``, docs/security.md "Timeouts") ends a block left waiting too long, as it would any
other transaction, and the pool replaces the connection it closed."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

import pytest
from psycopg import sql

from conftest import login_role
from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate
from memsub.errors import ConnectionFailed

from helpers import TENANT_A, backend_state, until_ended


def idle_timeout_for_the_app_login(db: Any, timeout: str) -> None:
    """``idle_in_transaction_session_timeout`` for the application login's new sessions in this database only."""
    with db.connect(autocommit=True) as admin:
        admin.execute(sql.SQL("alter role {} in database {} set idle_in_transaction_session_timeout = {}").format(
            sql.Identifier(login_role("app")), sql.Identifier(db.name), sql.Literal(timeout)))


def test_a_block_between_its_calls_is_idle_in_transaction(db: Any) -> None:
    user = uuid4()
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with substrate.tenant(TENANT_A, user_id=user) as session:
            session.memory.write(f"user:{user}", "first", 1)
            pid = session.fetch("select pg_backend_pid() as pid")[0]["pid"]
            assert backend_state(db, pid) == "idle in transaction"
            session.memory.write(f"user:{user}", "second", 2)
            assert backend_state(db, pid) == "idle in transaction"
        assert backend_state(db, pid) == "idle"
        with substrate.tenant(TENANT_A, user_id=user) as session:
            assert [entry.key for entry in session.memory.list(f"user:{user}")] == ["first", "second"]


def test_the_idle_in_transaction_timeout_ends_a_block_left_waiting(db: Any) -> None:
    idle_timeout_for_the_app_login(db, "100ms")
    user = uuid4()
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with pytest.raises(ConnectionFailed):
            with substrate.tenant(TENANT_A, user_id=user) as session:
                session.memory.write(f"user:{user}", "before", 1)
                pid = session.fetch("select pg_backend_pid() as pid")[0]["pid"]
                until_ended(db, pid)  # the block waits on something slow, longer than the login allows
                session.memory.write(f"user:{user}", "after", 2)
        with substrate.tenant(TENANT_A, user_id=user) as session:  # a new connection, nothing of the block kept
            assert session.fetch("select pg_backend_pid() as pid")[0]["pid"] != pid
            assert session.memory.list(f"user:{user}") == []


@pytest.mark.asyncio
async def test_the_idle_in_transaction_timeout_ends_an_async_block_left_waiting(db: Any) -> None:
    idle_timeout_for_the_app_login(db, "100ms")
    user = uuid4()
    async with AsyncSubstrate(db.dsn("app"), max_size=1) as substrate:
        with pytest.raises(ConnectionFailed):
            async with substrate.tenant(TENANT_A, user_id=user) as session:
                await session.memory.write(f"user:{user}", "before", 1)
                pid = (await session.fetch("select pg_backend_pid() as pid"))[0]["pid"]
                assert await asyncio.to_thread(backend_state, db, pid) in ("idle in transaction", None)
                await asyncio.to_thread(until_ended, db, pid)
                await session.memory.write(f"user:{user}", "after", 2)
        async with substrate.tenant(TENANT_A, user_id=user) as session:
            assert (await session.fetch("select pg_backend_pid() as pid"))[0]["pid"] != pid
            assert await session.memory.list(f"user:{user}") == []
