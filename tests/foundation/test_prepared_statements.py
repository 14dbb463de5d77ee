"""``prepare_threshold``: behind a transaction-mode connection pooler consecutive transactions may run on different
server connections, where a statement psycopg prepared on another one does not exist. ``prepare_threshold=None``
turns preparing off on every pooled connection of a substrate; by default psycopg prepares a statement the sixth
time it runs it on a connection (docs/client.md, "Behind a connection pooler").

The same call runs more than five times as the application login, on a pool of one connection, in one block and
per call; the count of the server session's prepared statements tells whether any was prepared.
"""

from __future__ import annotations

from typing import Any

import pytest

from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate

from helpers import TENANT_A

RUNS = 8
PREPARED = "select count(*)::int as n from pg_catalog.pg_prepared_statements"


def prepared_after_runs(dsn: str, per_call: bool, **options: Any) -> int:
    with Substrate(dsn, max_size=1, **options) as substrate:
        with substrate.tenant(TENANT_A, per_call=per_call) as session:
            for _ in range(RUNS):
                session.vector_dimension()
            rows = session.fetch(PREPARED)
    return int(rows[0]["n"])


async def prepared_after_runs_async(dsn: str, per_call: bool, **options: Any) -> int:
    async with AsyncSubstrate(dsn, max_size=1, **options) as substrate:
        async with substrate.tenant(TENANT_A, per_call=per_call) as session:
            for _ in range(RUNS):
                await session.vector_dimension()
            rows = await session.fetch(PREPARED)
    return int(rows[0]["n"])


@pytest.mark.parametrize("per_call", [False, True], ids=["block", "per_call"])
def test_prepare_threshold_none_prepares_nothing(db: Any, per_call: bool) -> None:
    assert prepared_after_runs(db.dsn("app"), per_call, prepare_threshold=None) == 0
    assert prepared_after_runs(db.dsn("app"), per_call) > 0


@pytest.mark.asyncio
@pytest.mark.parametrize("per_call", [False, True], ids=["block", "per_call"])
async def test_prepare_threshold_none_prepares_nothing_async(db: Any, per_call: bool) -> None:
    assert await prepared_after_runs_async(db.dsn("app"), per_call, prepare_threshold=None) == 0
    assert await prepared_after_runs_async(db.dsn("app"), per_call) > 0


def test_prepare_threshold_zero_prepares_from_the_first_run(db: Any) -> None:
    with Substrate(db.dsn("app"), max_size=1, prepare_threshold=0) as substrate:
        with substrate.tenant(TENANT_A) as session:
            session.vector_dimension()
            assert session.fetch(PREPARED)[0]["n"] > 0
