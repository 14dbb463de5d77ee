"""How semantic_search sizes a tenant that tune_search has not measured yet.

Until the maintenance job's tune_search first counts a tenant, each of its searches counts up to 2,000 of its rows
of the type (memsub._search_strategy) to choose between the walk and the exact scan. Read through row-level
security, that count fetched every one of those rows from the table and ran the policies on it before every
search. It now counts the entries of the tenant's (tenant_id, embedding_type) index, as tune_search counts the
tenant, which a vacuumed table answers without reading the rows.

One 384-d database: the big tenant holds about 2,700 content embeddings, the small one about 30 in the same
partition of memory_embeddings, two other tenants the rest. The table is vacuumed and nothing is tuned. The reads
are the transaction's own statistics (pg_stat_get_xact_tuples_fetched) as the application role.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from helpers import set_context
from retrieval_data import BIG, SMALL, Spec, build

SPEC = Spec(packets=3000, types=("content",), big_share=0.9, small_share=0.01, other_tenants=2)
PROBE_LIMIT = 2000  # the count _search_strategy stops at; a tenant holding more is walked


@pytest.fixture(scope="module")
def untuned(server: Any, template_db_384: str) -> Iterator[Any]:
    from conftest import cloned_database

    with cloned_database(server, template_db_384, "memsub_strategy_count") as database:
        with database.connect() as su:
            build(su, SPEC)
        with database.connect(autocommit=True) as su:
            su.execute("vacuum (analyze) memsub.memory_embeddings")
            assert su.execute("select count(*) from memsub.search_stats").fetchone()[0] == 0
        yield database


def rows_of(database: Any, tenant: Any) -> int:
    with database.connect() as su:
        return su.execute("select count(*) from memsub.memory_embeddings where tenant_id = %s"
                          " and embedding_type = 'content'", [tenant]).fetchone()[0]


def fetched(conn: psycopg.Connection[Any]) -> int:
    """Rows the transaction has fetched from the table's partitions by index scans."""
    return conn.execute("select sum(pg_stat_get_xact_tuples_fetched(h.inhrelid)) from pg_inherits h"
                        " where h.inhparent = 'memsub.memory_embeddings'::regclass").fetchone()[0]


def test_an_unmeasured_tenant_is_sized_without_reading_its_rows(untuned):
    assert rows_of(untuned, BIG) > PROBE_LIMIT
    with untuned.connect("app") as app:
        set_context(app, BIG)
        before = fetched(app)
        row = app.execute("select method, tenant_rows from memsub._search_strategy(%s, 'content', 10)",
                          [BIG]).fetchone()
        read = fetched(app) - before
        app.rollback()
    assert row == ("approximate", PROBE_LIMIT)
    assert read == 0, f"the strategy fetched {read} rows of the tenant to count them"


def test_the_count_is_the_context_tenants_alone(untuned):
    """The count bypasses row-level security, so it states the tenant itself: the small tenant, whose few rows
    share a partition (and its index) with the big tenant's thousands, is counted as it is."""
    small = rows_of(untuned, SMALL)
    assert 0 < small < 100
    with untuned.connect("app") as app:
        set_context(app, SMALL)
        strategy = app.execute("select method, tenant_rows from memsub._search_strategy(%s, 'content', 10)",
                               [SMALL]).fetchone()
        direct = app.execute("select memsub._context_tenant_rows('content', %s)", [PROBE_LIMIT]).fetchone()
        app.rollback()
    assert strategy == ("exact", small)
    assert direct == (small,)


def test_another_tenants_size_is_not_counted_for_the_caller(untuned):
    """Asked for the big tenant from the small tenant's context, the strategy counts what the caller can read of
    it through row-level security: nothing."""
    with untuned.connect("app") as app:
        set_context(app, SMALL)
        row = app.execute("select tenant_rows from memsub._search_strategy(%s, 'content', 10)", [BIG]).fetchone()
        app.rollback()
    assert row == (0,)


def test_the_count_needs_a_context_and_a_limit(untuned):
    with untuned.connect("app") as app:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="no tenant context"):
            app.execute("select memsub._context_tenant_rows('content', 10)")
        app.rollback()
        set_context(app, BIG)
        for limit in (None, 0, -1):
            with pytest.raises(psycopg.errors.InvalidParameterValue, match='"limit"') as raised:
                app.execute("select memsub._context_tenant_rows('content', %s)", [limit])
            assert raised.value.diag.column_name == "limit"
            app.rollback()
            set_context(app, BIG)
        with pytest.raises(psycopg.errors.InvalidParameterValue, match='"embedding_type"'):
            app.execute("select memsub._context_tenant_rows('contents', 10)")
        app.rollback()
