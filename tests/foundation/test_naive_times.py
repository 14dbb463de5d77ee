"""A datetime without an offset given to the Python client is UTC (memsub.models.as_utc), whatever the TimeZone
of the server's session: the client sends the instant, never a wall-clock time for the server to place.

Every substrate logs in as the application role with its session TimeZone set far from UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from psycopg.conninfo import make_conninfo

from memsub import _calls
from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate
from memsub.integrations import _context

from helpers import TENANT_A

FAR_FROM_UTC = "America/Los_Angeles"
NAIVE = datetime(2024, 3, 1, 12, 0, 0)
AWARE = NAIVE.replace(tzinfo=UTC)


def far_dsn(db: Any) -> str:
    """The app login's connection string, its sessions in a time zone eight hours behind UTC."""
    return make_conninfo(db.dsn("app"), options=f"-c TimeZone={FAR_FROM_UTC}")


def timestamptz(value: Any) -> _calls.Call[datetime]:
    return _calls.query("select %s::timestamptz as value", [value], _calls.scalar(lambda found: found))


@pytest.mark.parametrize("per_call", [False, True], ids=["block", "per_call"])
def test_sync_session_reads_a_naive_time_as_utc(db: Any, per_call: bool) -> None:
    with Substrate(far_dsn(db)) as substrate, substrate.tenant(TENANT_A, per_call=per_call) as session:
        assert session.run(_calls.query("show timezone", [], _calls.raw()))[0]["TimeZone"] == FAR_FROM_UTC
        edge = session.graph.temporal_edge_add("Alice", "works_at", "Acme", valid_from=NAIVE)
        assert edge.valid_from == AWARE
        # a moment before the edge starts, given both ways: the same instant, so the same (empty) answer
        earlier = datetime(2024, 3, 1, 11, 0, 0)
        assert session.graph.edges_as_of(earlier) == session.graph.edges_as_of(earlier.replace(tzinfo=UTC)) == []
        assert session.graph.edges_as_of(NAIVE) == session.graph.edges_as_of(AWARE) == [edge]
        event = session.events.record("agent-1", "observation", {"n": 1}, timestamp=NAIVE)
        assert event.timestamp == AWARE


@pytest.mark.asyncio
@pytest.mark.parametrize("per_call", [False, True], ids=["block", "per_call"])
async def test_async_session_reads_a_naive_time_as_utc(db: Any, per_call: bool) -> None:
    async with AsyncSubstrate(far_dsn(db)) as substrate, substrate.tenant(TENANT_A, per_call=per_call) as session:
        edge = await session.graph.temporal_edge_add("Alice", "works_at", "Acme", valid_from=NAIVE)
        assert edge.valid_from == AWARE
        assert await session.graph.edges_as_of(NAIVE) == await session.graph.edges_as_of(AWARE) == [edge]
        event = await session.events.record("agent-1", "observation", {"n": 1}, timestamp=NAIVE)
        assert event.timestamp == AWARE


def test_aware_times_keep_their_offset(db: Any) -> None:
    with Substrate(far_dsn(db)) as substrate, substrate.tenant(TENANT_A) as session:
        paris = datetime.fromisoformat("2024-03-01T13:00:00+01:00")
        assert session.run(timestamptz(paris)) == AWARE
        assert session.run(timestamptz(AWARE)) == AWARE


def test_naive_times_inside_arrays_are_utc(db: Any) -> None:
    with Substrate(far_dsn(db)) as substrate, substrate.tenant(TENANT_A) as session:
        stamps = session.run(_calls.query("select %s::timestamptz[] as value", [[NAIVE, None, AWARE]],
                                          _calls.scalar(list)))
        assert stamps == [AWARE, None, AWARE]


def test_integration_pools_read_a_naive_time_as_utc(db: Any) -> None:
    """The framework adapters' pools (memsub.integrations) run their statements through the same executors."""
    context = _context.TenantContext(TENANT_A)
    pool = _context.sync_pool(far_dsn(db), max_size=1)
    try:
        found = _calls.rows_in_context(pool, context.statement(), [timestamptz(NAIVE)])
    finally:
        pool.close()
    assert found[0][0]["value"] == AWARE


@pytest.mark.asyncio
async def test_async_integration_pools_read_a_naive_time_as_utc(db: Any) -> None:
    context = _context.TenantContext(TENANT_A)
    pool = _context.async_pool(far_dsn(db), max_size=1)
    await pool.open()
    try:
        found = await _calls.rows_in_context_async(pool, context.statement(), [timestamptz(NAIVE)])
    finally:
        await pool.close()
    assert found[0][0]["value"] == AWARE
