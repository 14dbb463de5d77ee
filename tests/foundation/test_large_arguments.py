"""A call of a tenant block whose arguments are larger than the socket's buffers (an envelope of megabytes, which an
MCP tool's ``data`` or an HTTP body can carry) is sent whole and answered: refused by name when it is over a limit,
and the block goes on. A block's calls travel in a pipeline, and a pipeline that stopped sending at the first write
the socket could not take whole waited for an answer to a message the server had not finished reading: the call
hung, and its connection with it, while the server waited for the rest."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate
from memsub.errors import ConnectionFailed, LimitExceeded
from memsub.models import PacketEnvelopeIn

from helpers import TENANT_A, terminate_backend

# Over max_envelope_bytes (1 MiB), and larger than a socket's buffers (a few hundred KiB to a few MiB).
LARGE = 8 * 1024 * 1024
DEADLINE = 30.0


def large_envelope() -> PacketEnvelopeIn:
    return PacketEnvelopeIn.model_validate({"packet_type": "note", "payload": {"data": "y" * LARGE}})


@contextmanager
def ended_after(db: Any, pid: int, seconds: float = DEADLINE) -> Iterator[None]:
    """Ends the backend ``pid`` if the block is still in it after ``seconds``: a call that hangs then fails (the
    connection is lost) instead of hanging the test."""
    done = threading.Event()

    def watch() -> None:
        if not done.wait(seconds):
            terminate_backend(db, pid)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def test_a_call_larger_than_the_socket_buffers_is_answered(db: Any) -> None:
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with pytest.raises(LimitExceeded) as refused:
            with substrate.tenant(TENANT_A) as session:
                pid = session.fetch("select pg_backend_pid() as pid")[0]["pid"]
                with ended_after(db, pid):
                    session.packets.write(large_envelope())
        assert refused.value.field == "envelope"
        with substrate.tenant(TENANT_A) as session:  # the connection went back usable, and nothing was written
            assert session.fetch("select count(*) as n from memsub.packet_store")[0]["n"] == 0


def test_a_call_larger_than_the_socket_buffers_never_hangs_a_block(db: Any) -> None:
    """The block's later calls run on the same connection, in the same transaction."""
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with substrate.tenant(TENANT_A) as session:
            pid = session.fetch("select pg_backend_pid() as pid")[0]["pid"]
            with ended_after(db, pid):
                try:
                    rows = session.fetch("select octet_length(%s::text) as n", ["y" * LARGE])
                except ConnectionFailed:
                    pytest.fail("the call hung until its connection was ended")
            assert rows == [{"n": LARGE}]
            assert session.fetch("select 1 as one") == [{"one": 1}]


@pytest.mark.asyncio
async def test_an_async_call_larger_than_the_socket_buffers_is_answered(db: Any) -> None:
    async with AsyncSubstrate(db.dsn("app"), max_size=1) as substrate:
        with pytest.raises(LimitExceeded) as refused:
            async with substrate.tenant(TENANT_A) as session:
                pid = (await session.fetch("select pg_backend_pid() as pid"))[0]["pid"]
                with ended_after(db, pid):
                    await session.packets.write(large_envelope())
        assert refused.value.field == "envelope"
        async with substrate.tenant(TENANT_A) as session:
            assert (await session.fetch("select octet_length(%s::text) as n", ["y" * LARGE])) == [{"n": LARGE}]
