"""Reading one LangGraph store namespace must not cost a scan of the tenant's whole store.

Equality of ``text[]`` is not LEAKPROOF: under row-level security (forced on the store's owner too) a condition
on the ``namespace`` array is never an index condition, so a get probed its key in every namespace of the
tenant and a search read every item of the tenant, and both slowed down as the tenant's store grew. The tests
count the tuples (fetched and returned) and pages a read touches in the items and vectors tables
(``pg_stat_get_xact_*``), not time, in a tenant holding thousands of items in other namespaces.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, TENANT_B, set_context

NAMESPACES = 150
KEYS_EACH = 20
TABLES = ("memsub.langgraph_store_items", "memsub.langgraph_store_vectors")


def touched(conn: psycopg.Connection[Any]) -> int:
    total = 0
    for table in TABLES:
        row = conn.execute(
            "select pg_stat_get_xact_tuples_fetched(%s::regclass) + pg_stat_get_xact_tuples_returned(%s::regclass)"
            " + pg_stat_get_xact_blocks_hit(%s::regclass) + pg_stat_get_xact_blocks_fetched(%s::regclass)",
            [table] * 4).fetchone()
        assert row is not None
        total += int(row[0])
    return total


@pytest.fixture
def store(db: Any) -> Any:
    """NAMESPACES x KEYS_EACH items with one 4-d vector each under ("users", <n>, "memories"), and namespaces
    that sort right next to user 7's ("users", "7x", ...; "users", "70", ...) which no read of user 7 may return."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute(
            "select count(memsub.langgraph_store_put(array['users', u::text, 'memories'], 'm' || k,"
            "  jsonb_build_object('text', 'note ' || k, 'day', k), null, '{text}',"
            "  array[format('[1, %%s, %%s, 1]', u %% 7, k)::vector]))"
            "  from generate_series(1, %s) u, generate_series(1, %s) k", [NAMESPACES, KEYS_EACH])
        conn.execute("select memsub.langgraph_store_put(array['users', '7x', 'memories'], 'm3', '{\"day\": 3}')")
        conn.execute("select memsub.langgraph_store_put(array['users', '7'], 'm3', '{\"day\": 3}')")
        conn.commit()
    with db.connect() as conn:
        conn.execute("analyze memsub.langgraph_store_items, memsub.langgraph_store_vectors")
        conn.commit()
    return db


def cost_of(db: Any, statement: str, args: list[Any]) -> tuple[int, list[Any]]:
    """What the seventh call of ``statement`` touched (the first ones plan and cache), and its rows."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for _ in range(7):
            before = touched(conn)
            found = conn.execute(statement, args).fetchall()
            cost = touched(conn) - before
        conn.rollback()
    return cost, found


def test_a_get_reads_only_its_item(store: Any) -> None:
    cost, found = cost_of(store, "select namespace, key, value from memsub.langgraph_store_get(%s, %s, false)",
                          [["users", "7", "memories"], "m3"])
    assert found == [(["users", "7", "memories"], "m3", {"text": "note 3", "day": 3})]
    assert cost < 20, f"langgraph_store_get touched {cost} tuples and pages"


@pytest.mark.parametrize("prefix", [["users", "7"], ["users", "7", "memories"]])
def test_a_search_reads_only_its_namespaces(store: Any, prefix: list[str]) -> None:
    cost, found = cost_of(store, "select namespace, key from memsub.langgraph_store_search(%s, %s::jsonb, null,"
                                 " 100, 0, false)", [prefix, json.dumps({"day": 3})])
    expected = [(["users", "7", "memories"], "m3")] + ([(["users", "7"], "m3")] if len(prefix) == 2 else [])
    assert sorted(found) == sorted(expected)
    assert cost < 200, f"langgraph_store_search touched {cost} tuples and pages"


def test_a_search_of_every_namespace_finds_them_all(store: Any, db: Any) -> None:
    """The empty prefix reads the whole tenant (its range ends after the tenant's greatest namespace), and a
    tenant with no items finds nothing."""
    _, found = cost_of(store, "select namespace, key from memsub.langgraph_store_search('{}', %s::jsonb, null,"
                              " 1000, 0, false)", [json.dumps({"day": 3})])
    assert len(found) == NAMESPACES + 2
    assert (["users", "7x", "memories"], "m3") in found and (["users", "7"], "m3") in found
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        assert conn.execute("select * from memsub.langgraph_store_search('{}')").fetchall() == []


def test_a_search_by_a_query_reads_only_its_namespaces_vectors(store: Any) -> None:
    cost, found = cost_of(store, "select key, score from memsub.langgraph_store_search(%s, null, %s::vector,"
                                 " 3, 0, false)", [["users", "7", "memories"], json.dumps([1, 0, 5, 1])])
    assert [key for key, _ in found] == ["m5", "m6", "m4"]
    assert cost < 300, f"langgraph_store_search with a query touched {cost} tuples and pages"


def test_list_namespaces_with_a_prefix_reads_only_its_namespaces(store: Any) -> None:
    cost, found = cost_of(store, "select namespace from memsub.langgraph_store_list_namespaces(%s, null, null,"
                                 " 10, 0)", [["users", "7"]])
    assert found == [(["users", "7"],), (["users", "7", "memories"],)]
    assert cost < 100, f"langgraph_store_list_namespaces touched {cost} tuples and pages"


def test_list_namespaces_matches_wildcards_suffixes_and_depths_in_a_large_tenant(store: Any) -> None:
    with store.connect("app") as conn:
        set_context(conn, TENANT_A)

        def listed(prefix: Any, suffix: Any, depth: Any, limit: int = 1000) -> list[Any]:
            return [row[0] for row in conn.execute(
                "select namespace from memsub.langgraph_store_list_namespaces(%s, %s, %s, %s, 0)",
                [prefix, suffix, depth, limit])]

        assert listed(["*", "7"], None, None) == [["users", "7"], ["users", "7", "memories"]]
        assert listed(None, ["7"], None) == [["users", "7"]]
        assert listed(["users", "*", "memories"], ["7x", "memories"], None) == [["users", "7x", "memories"]]
        assert listed(["users"], None, 1) == [["users"]]
        assert len(listed(None, ["memories"], 2)) == NAMESPACES + 1
        # In the order of the labels (C collation), not of their text joined by periods: 70 after 7.
        assert listed(["users"], None, 2, 4) == [["users", "1"], ["users", "10"], ["users", "100"], ["users", "101"]]
        assert listed(["users", "7"], None, None)[:1] == [["users", "7"]]


@pytest.mark.parametrize("prefix, suffix", [(["users", "*"], None), (["users"], ["*", "memories"])])
def test_a_listing_tests_its_patterns_once_a_namespace_not_once_an_item(store: Any, prefix: Any,
                                                                        suffix: Any) -> None:
    """The prefix and suffix are tested over the tenant's distinct namespaces, not over every item below them:
    the calls of the wildcard test in the seventh listing (the first ones plan and cache) are counted, as the
    superuser, who alone may turn function counting on."""
    with store.connect() as conn:
        conn.execute("set track_functions = 'all'")
        set_context(conn, TENANT_A)
        count = "select pg_stat_get_xact_function_calls(%s::regprocedure)"
        matcher = ["memsub._langgraph_store_labels_match(text[], text[], boolean)"]
        for _ in range(7):
            before = conn.execute(count, matcher).fetchone()
            found = conn.execute("select namespace from memsub.langgraph_store_list_namespaces(%s, %s, null, 1000,"
                                 " 0)", [prefix, suffix]).fetchall()
            after = conn.execute(count, matcher).fetchone()
        conn.rollback()
    assert before is not None and after is not None
    calls = (after[0] or 0) - (before[0] or 0)
    assert len(found) == NAMESPACES + (2 if suffix is None else 1)
    assert 0 < calls <= NAMESPACES + 2, f"the wildcard test ran {calls} times for {NAMESPACES + 2} namespaces"
