"""The adapters' reads hold to the max_rows limit as the client's do: a limit over it is refused naming ``limit``
(54000, LimitExceeded), one no PostgreSQL integer holds is refused before anything is sent (22003), and a negative
one is refused (22023), each naming ``limit``; a limit at max_rows is answered. The OpenAI Agents session's
``get_items`` is not held to max_rows (its history is read whole without a limit, and the SDK's compaction session
reads it whole as limit 2147483647): it answers any limit an integer holds."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memsub.errors import InvalidInput, LimitExceeded, LocalValidationError
from memsub.integrations._context import TenantContext, async_pool, sync_pool
from memsub.integrations.langgraph_checkpoint import AsyncMemsubSaver, MemsubSaver
from memsub.integrations.langgraph_store import MemsubStore
from memsub.integrations.openai_agents import MemsubSession

MAX_ROWS = 10000  # the default of memsub.limits


@pytest.fixture
def pool(db: Any) -> Iterator[Any]:
    pool = sync_pool(db.dsn("app"))
    yield pool
    pool.close()


def reads(pool: Any, db: Any) -> list[tuple[str, Callable[[int], Any]]]:
    """Each adapter read that takes a limit, as a function of the limit."""
    context = TenantContext(uuid.uuid4())
    store = MemsubStore(pool, context)
    saver = MemsubSaver(pool, context)
    session = MemsubSession("s", pool, context)

    async def async_saver_list(limit: int) -> list[Any]:
        apool = async_pool(db.dsn("app"))
        await apool.open()
        try:
            return [c async for c in AsyncMemsubSaver(apool, context).alist(None, limit=limit)]
        finally:
            await apool.close()

    return [
        ("store.search", lambda limit: store.search(("a",), limit=limit)),
        ("store.list_namespaces", lambda limit: store.list_namespaces(limit=limit)),
        ("saver.list", lambda limit: list(saver.list(None, limit=limit))),
        ("async saver.alist", lambda limit: asyncio.run(async_saver_list(limit))),
        ("session.get_items", lambda limit: asyncio.run(session.get_items(limit=limit))),
    ]


def test_adapter_reads_refuse_a_limit_over_max_rows_naming_it(pool: Any, db: Any) -> None:
    """Every adapter read refuses a limit over max_rows naming it, but the OpenAI Agents session's get_items, which
    answers any integer limit as the SDK's own sessions do (its compaction session reads the whole history with the
    largest integer; without a limit it reads the whole history anyway)."""
    for name, read in reads(pool, db):
        if name == "session.get_items":
            assert read(MAX_ROWS + 1) == [] and read(2**31 - 1) == [], name
            continue
        assert read(MAX_ROWS) == [], name
        with pytest.raises(LimitExceeded) as over:
            read(MAX_ROWS + 1)
        assert (over.value.field, over.value.sqlstate) == ("limit", "54000"), name
        assert "max_rows" in str(over.value), name


def test_adapter_reads_refuse_a_limit_no_integer_holds_before_sending_it(pool: Any, db: Any) -> None:
    for name, read in reads(pool, db):
        for limit in (2**31, 2**63):
            with pytest.raises(LocalValidationError) as refused:
                read(limit)
            assert (refused.value.field, refused.value.sqlstate) == ("limit", "22003"), name


def test_adapter_reads_refuse_a_negative_limit_naming_it(pool: Any, db: Any) -> None:
    for name, read in reads(pool, db):
        for limit in (-1, -(2**40)):
            with pytest.raises(InvalidInput) as refused:
                read(limit)
            assert refused.value.field == "limit", name
