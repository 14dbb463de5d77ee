"""Times within a day of year 1 or year 9999 read back whatever the server session's TimeZone.

Stored times are held to years 1 to 9999 in UTC (memsub._check_stored_time), the range of Python's datetime.
The server renders a timestamptz in its session's TimeZone, up to 14 hours ahead of UTC (Pacific/Kiritimati) or
12 behind (Etc/GMT+12): 9999-12-31 23:00 UTC is 10000-01-01 13:00 in Kiritimati, 0001-01-01 01:00 UTC is 1 BC in
Etc/GMT+12, and psycopg's loaders, which place a time in the session's TimeZone, failed the whole read
("timestamp too large (after year 10K)", "BC date"). Such a time is read as the instant it is, in UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from memsub import _calls
from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate

from helpers import TENANT_A

FIRST = datetime(1, 1, 1, 1, 0, tzinfo=UTC)
LAST = datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
ZONES = ["Pacific/Kiritimati", "Etc/GMT+12", "UTC"]


def _dsn(db: Any, zone: str) -> str:
    return make_conninfo(db.dsn("app"), options=f"-c TimeZone={zone}")


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("per_call", [False, True], ids=["block", "per_call"])
def test_the_sync_client_reads_times_at_the_edges_of_its_range(db: Any, zone: str, per_call: bool) -> None:
    with Substrate(_dsn(db, zone)) as substrate, substrate.tenant(TENANT_A, per_call=per_call) as session:
        edge = session.graph.temporal_edge_add("Alice", "lasts", "Acme", valid_from=FIRST, valid_until=LAST)
        assert (edge.valid_from, edge.valid_until) == (FIRST, LAST)
        assert [(e.valid_from, e.valid_until) for e in session.graph.edges_as_of(LAST.replace(hour=22))] == [
            (FIRST, LAST)]
        for moment in (FIRST, LAST):
            event = session.events.record("agent-1", "edge", {"n": 1}, timestamp=moment)
            assert event.timestamp == moment
            assert event.timestamp.utcoffset() is not None
        # binary results too (the client asks for them where a result holds vectors)
        found = session.run(_calls.query("select %s::timestamptz as a, %s::timestamptz as b", [FIRST, LAST],
                                         _calls.raw()))
        assert found == [{"a": FIRST, "b": LAST}]


@pytest.mark.asyncio
@pytest.mark.parametrize("zone", ZONES)
async def test_the_async_client_reads_times_at_the_edges_of_its_range(db: Any, zone: str) -> None:
    async with AsyncSubstrate(_dsn(db, zone)) as substrate, substrate.tenant(TENANT_A) as session:
        edge = await session.graph.temporal_edge_add("Alice", "lasts", "Acme", valid_from=FIRST, valid_until=LAST)
        assert (edge.valid_from, edge.valid_until) == (FIRST, LAST)
        event = await session.events.record("agent-1", "edge", {"n": 1}, timestamp=LAST)
        assert event.timestamp == LAST


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_the_time_adapter_reads_the_edges_in_text_and_binary(db: Any, zone: str, binary: bool) -> None:
    """On any connection the client's time adapter is registered on (memsub._calls.register_time_type); a time
    inside the range reads as before, whatever its zone."""
    middle = datetime(2024, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)
    with psycopg.connect(_dsn(db, zone)) as conn:
        _calls.register_time_type(conn.adapters)
        rows = conn.cursor(binary=binary).execute(
            "select %s::timestamptz, %s::timestamptz, %s::timestamptz", [FIRST, LAST, middle]).fetchall()
    assert rows == [(FIRST, LAST, middle)]
