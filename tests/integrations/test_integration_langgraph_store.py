"""The LangGraph store (memsub.integrations.langgraph_store.MemsubStore) against the embedded server.

One test per behaviour LangGraph documents for its stores: put/get/delete, batches in order, search with
filters and a natural-language query over the indexed fields (per-put index override, index=False),
pagination, namespace listing with prefix, suffix, wildcards and depth, time to live with refresh on read and
sweeping, and the async methods. Every store acts as an ordinary app login; two tenants share namespaces and
keys without seeing each other's items.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import UserDict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

import psycopg
import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from memsub.embedding import HashingEmbedder
from memsub.errors import ContextError, InvalidInput, LimitExceeded
from memsub.integrations._context import TenantContext, async_pool, sync_pool
from memsub.integrations.langgraph_store import MemsubStore

from helpers import assert_refused, blocked_call, run_doc_example, wait_until

DIMS = 64
EMBEDDER = HashingEmbedder(DIMS)


def embed(texts: list[str]) -> list[list[float]]:
    return EMBEDDER.embed(texts)


@pytest.fixture
def pool(db: Any) -> Iterator[Any]:
    pool = sync_pool(db.dsn("app"))
    yield pool
    pool.close()


def store_for(pool: Any, tenant: uuid.UUID | None = None, **options: Any) -> MemsubStore:
    return MemsubStore(pool, TenantContext(tenant or uuid.uuid4()), **options)


def tenant_and_two_organizations(pool: Any, **options: Any) -> tuple[MemsubStore, MemsubStore, MemsubStore]:
    """Stores of one new tenant: its tenant-wide context, and the contexts of two of its organizations."""
    tenant = uuid.uuid4()
    wide, org_a, org_b = (MemsubStore(pool, TenantContext(tenant, org), **options)
                          for org in (None, uuid.uuid4(), uuid.uuid4()))
    return wide, org_a, org_b


def test_put_get_update_delete(pool: Any) -> None:
    store = store_for(pool)
    ns = ("users", "42", "prefs")
    assert store.get(ns, "drink") is None
    store.put(ns, "drink", {"value": "tea"})
    first = store.get(ns, "drink")
    assert first is not None and first.value == {"value": "tea"} and first.namespace == ns and first.key == "drink"
    store.put(ns, "drink", {"value": "coffee"})
    second = store.get(ns, "drink")
    assert second is not None and second.value == {"value": "coffee"}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    store.delete(ns, "drink")
    assert store.get(ns, "drink") is None


def test_batch_returns_results_in_operation_order_and_last_put_wins(pool: Any) -> None:
    store = store_for(pool)
    ns = ("docs",)
    results = store.batch([
        PutOp(ns, "a", {"n": 1}),
        PutOp(ns, "a", {"n": 2}),
        GetOp(ns, "a"),
        SearchOp(ns, None, 10, 0),
        ListNamespacesOp(None, None, 10, 0),
        GetOp(ns, "missing"),
    ])
    assert results[0] is None and results[1] is None
    assert results[2] is not None and results[2].value == {"n": 2}  # each read sees the puts before it
    assert [item.key for item in results[3]] == ["a"]
    assert results[4] == [("docs",)]
    assert results[5] is None


def test_a_batch_runs_in_order_even_between_two_puts_of_one_key(pool: Any) -> None:
    """A read between two puts of a key sees the first (an earlier put is dropped only when no read of its key
    lies between it and the next), and a read after them sees the last."""
    store = store_for(pool)
    ns = ("b",)
    store.put(ns, "x", {"v": 0})
    results = store.batch([PutOp(ns, "x", {"v": 1}), GetOp(ns, "x"), SearchOp(ns, None, 10, 0),
                           ListNamespacesOp(None, None, 10, 0), PutOp(ns, "x", {"v": 2}), GetOp(ns, "x")])
    assert results[1] is not None and results[1].value == {"v": 1}
    assert [item.value for item in results[2]] == [{"v": 1}]
    assert results[5] is not None and results[5].value == {"v": 2}
    results = store.batch([GetOp(ns, "x"), PutOp(ns, "x", {"v": 3}), GetOp(ns, "x"), PutOp(ns, "x", None),
                           GetOp(ns, "x"), ListNamespacesOp(None, None, 10, 0)])
    assert [r and r.value for r in results[:5]] == [{"v": 2}, None, {"v": 3}, None, None]
    assert results[5] == []
    results = store.batch([PutOp(ns, "y", {"v": 1}), ListNamespacesOp(None, None, 10, 0), PutOp(ns, "y", None)])
    assert results[1] == [("b",)]  # the listing lies between the put and the delete
    assert store.get(ns, "y") is None
    # no read of the key between two puts: the first is never written, nor embedded
    embedded: list[str] = []
    indexed = store_for(pool, index={"dims": DIMS, "fields": ["text"],
                                     "embed": lambda texts: embedded.extend(texts) or embed(texts)})
    indexed.batch([PutOp(ns, "z", {"text": "first"}), GetOp(ns, "other"), PutOp(ns, "z", {"text": "second"})])
    assert embedded == ["second"]


def test_a_delete_then_a_put_of_one_key_in_a_batch_creates_the_item_anew(pool: Any) -> None:
    """A batch runs in order: a delete and then a put of an existing key leave a new item, created when it was
    put (created_at equal to updated_at), as the same two calls one after the other do. The delete was skipped as
    a put that the later put overwrites, so the item kept its old created_at (before the fix: created_at of the
    first put, earlier than updated_at)."""
    store = store_for(pool)
    ns = ("b",)
    for ops in ([PutOp(ns, "x", None), PutOp(ns, "x", {"v": 2})],
                [PutOp(ns, "x", {"v": 1}), PutOp(ns, "x", None), PutOp(ns, "x", {"v": 2})],
                [PutOp(ns, "x", None), GetOp(("other",), "x"), PutOp(ns, "x", {"v": 2})]):
        store.put(ns, "x", {"v": 0})
        old = store.get(ns, "x")
        assert old is not None
        store.batch(ops)
        new = store.get(ns, "x")
        assert new is not None and new.value == {"v": 2}
        assert new.created_at == new.updated_at > old.created_at, ops
    # a delete followed by a delete, or a put by a put, is still written once
    store.batch([PutOp(ns, "x", {"v": 3}), PutOp(ns, "x", {"v": 4})])
    item = store.get(ns, "x")
    assert item is not None and item.value == {"v": 4} and item.created_at < item.updated_at
    store.batch([PutOp(ns, "x", None), PutOp(ns, "x", None)])
    assert store.get(ns, "x") is None


def test_a_value_may_be_any_mapping(pool: Any) -> None:
    """LangGraph's put takes a value that is a mapping with string keys (PutOp.value: Mapping[str, Any]), and
    PostgresStore stores any: a mapping other than a dict (a MappingProxyType, a UserDict) was refused as not JSON
    (NotJson, "a mappingproxy is not JSON"). It is stored as the dict it holds; inside it, values must still be
    JSON (a mapping there is refused, as json.dumps refuses it in PostgresStore)."""
    store = store_for(pool)
    ns = ("m",)
    store.put(ns, "proxy", MappingProxyType({"v": 1, "list": [1, "x"]}))
    store.batch([PutOp(ns, "user", UserDict({"v": 2}))])
    assert store.get(ns, "proxy").value == {"v": 1, "list": [1, "x"]}  # type: ignore[union-attr]
    assert [item.value for item in store.search(ns, filter={"v": 2})] == [{"v": 2}]
    with pytest.raises(TypeError):
        store.put(ns, "nested", {"v": MappingProxyType({"w": 1})})
    with pytest.raises(TypeError):
        store.put(ns, "keys", MappingProxyType({1: "a"}))  # type: ignore[dict-item]
    assert sorted(item.key for item in store.search(ns)) == ["proxy", "user"]


def test_two_tenants_share_namespaces_without_seeing_each_other(pool: Any) -> None:
    first, second = store_for(pool), store_for(pool)
    ns = ("users", "1")
    first.put(ns, "k", {"owner": "first"})
    second.put(ns, "k", {"owner": "second"})
    assert first.get(ns, "k").value == {"owner": "first"}  # type: ignore[union-attr]
    assert second.get(ns, "k").value == {"owner": "second"}  # type: ignore[union-attr]
    second.delete(ns, "k")
    assert first.get(ns, "k") is not None
    assert [i.value for i in first.search(("users",))] == [{"owner": "first"}]


def test_search_filters_with_operators(pool: Any) -> None:
    store = store_for(pool)
    ns = ("items",)
    for key, value in {"a": {"color": "red", "size": 9, "tag": "x"}, "b": {"color": "blue", "size": 10},
                       "c": {"color": "red", "size": 100}}.items():
        store.put(ns, key, value)

    def keys(**filter: Any) -> list[str]:
        return sorted(item.key for item in store.search(ns, filter=filter))

    store.put(ns, "d", {"weight": 1})  # no color
    assert keys(color="red") == ["a", "c"]
    assert keys(color={"$ne": "red"}) == ["b"]  # as PostgresStore: an item without the field does not match
    assert keys(size={"$gt": 9}) == ["b", "c"]  # numbers compare as numbers (10 > 9, 100 > 9)
    assert keys(size={"$gte": 10, "$lt": 100}) == ["b"]
    assert keys(size={"$lte": 9}) == ["a"]
    assert keys(color="red", tag="x") == ["a"]
    # an unknown operator is refused whatever the items, before any is compared (as PostgresStore refuses it)
    for search in (lambda: store.search(ns, filter={"size": {"$near": 1}}),
                   lambda: store.search(ns, filter={"c": "blue", "size": {"$near": 1}}),
                   lambda: store.search(("empty",), filter={"size": {"$in": [1]}}),
                   lambda: store.search(ns, filter={"size": {"$gt": 1, "near": 1}})):
        with pytest.raises(InvalidInput) as error:
            search()
        assert error.value.field == "filter"


def test_a_filter_of_plain_values_matches_by_equality(pool: Any) -> None:
    """A filter of plain values matches a field equal to the value (numbers as numbers, JSON null only where the
    field holds null); an object or array value must be equal, not merely contained."""
    store = store_for(pool)
    ns = ("things",)
    store.put(ns, "a", {"size": 10, "tags": ["x", "y"], "meta": {"a": 1, "b": 2}, "gone": None, "flag": True})
    store.put(ns, "b", {"size": 10.0, "tags": ["x"], "meta": {"a": 1}})
    store.put(ns, "c", {"size": 11, "flag": False, "name": "c"})

    def keys(**filter: Any) -> list[str]:
        return sorted(item.key for item in store.search(ns, filter=filter))

    assert keys(size=10) == ["a", "b"]
    assert keys(size=10, flag=True) == ["a"]
    assert keys(gone=None) == ["a"]  # a missing field is not null
    assert keys(name="c", size=11) == ["c"]
    assert keys(tags=["x"]) == ["b"]
    assert keys(tags=["x", "y"]) == ["a"]
    assert keys(meta={"a": 1}) == ["b"]
    assert keys(meta={"a": 1, "b": 2}, size=10) == ["a"]
    assert keys(size=12) == []


def test_search_by_namespace_prefix_respects_label_boundaries_and_paginates(pool: Any) -> None:
    store = store_for(pool)
    store.put(("a", "b"), "1", {"v": 1})
    store.put(("a", "bc"), "2", {"v": 2})
    store.put(("a", "b", "c"), "3", {"v": 3})
    store.put(("x",), "4", {"v": 4})
    assert sorted(i.key for i in store.search(("a", "b"))) == ["1", "3"]
    assert sorted(i.key for i in store.search(())) == ["1", "2", "3", "4"]
    pages = [store.search(("a",), limit=2, offset=0), store.search(("a",), limit=2, offset=2)]
    assert [len(p) for p in pages] == [2, 1]
    assert {i.key for p in pages for i in p} == {"1", "2", "3"}


def test_natural_language_search_ranks_by_the_indexed_fields(pool: Any) -> None:
    store = store_for(pool, index={"dims": DIMS, "embed": embed, "fields": ["text"]})
    ns = ("memories",)
    store.put(ns, "tea", {"text": "the user drinks green tea every morning", "other": "zzz"})
    store.put(ns, "bike", {"text": "the user rides a bicycle to work"})
    store.put(ns, "plain", {"text": "green tea"}, index=False)  # stored, never embedded
    hits = store.search(ns, query="green tea morning", limit=3)
    assert hits[0].key == "tea" and hits[0].score is not None and hits[0].score > hits[1].score  # type: ignore[operator]
    assert {h.key: h.score for h in hits}["plain"] is None  # not indexed: listed after the scored items
    # A per-put index list overrides the configured fields.
    store.put(ns, "other", {"text": "nothing alike", "title": "green tea morning"}, index=["title"])
    assert store.search(ns, query="green tea morning", limit=1)[0].key == "other"
    # Filters apply with a query too.
    assert [h.key for h in store.search(ns, query="tea", filter={"other": "zzz"})] == ["tea"]


# Vectors of unequal length, so that the three distances rank them three different ways.
_SHAPED = {"query": [1.0, 0.0], "long": [10.0, 10.0], "near": [1.0, 0.1], "short": [0.5, 0.0]}


def _shaped(texts: list[str]) -> list[list[float]]:
    return [_SHAPED[text] for text in texts]


@pytest.mark.parametrize("distance_type,ranking,scores", [
    ("cosine", ["short", "near", "long"], [1.0, 1 / 1.01 ** 0.5, 0.5 ** 0.5]),
    ("inner_product", ["long", "near", "short"], [10.0, 1.0, 0.5]),
    ("l2", ["near", "short", "long"], [-0.1, -0.5, -181 ** 0.5]),
])
def test_search_ranks_and_scores_by_the_configured_distance(pool: Any, distance_type: str, ranking: list[str],
                                                           scores: list[float]) -> None:
    """cosine scores 1 - cosine distance, inner_product the inner product, l2 minus the Euclidean distance (as
    LangGraph's PostgresStore does); higher is nearer for all three."""
    store = store_for(pool, index={"dims": 2, "embed": _shaped, "fields": ["text"], "distance_type": distance_type})
    for key in ("long", "near", "short"):
        store.put(("shapes",), key, {"text": key})
    hits = store.search(("shapes",), query="query")
    assert [h.key for h in hits] == ranking
    assert [h.score for h in hits] == pytest.approx(scores, abs=1e-5)


def test_an_unknown_distance_is_refused(pool: Any) -> None:
    with pytest.raises(InvalidInput, match="distance_type") as refused:
        store_for(pool, index={"dims": DIMS, "embed": embed, "distance_type": "hamming"})  # type: ignore[typeddict-item]
    assert refused.value.field == "distance_type"


def test_list_namespaces_prefix_suffix_wildcards_depth_and_pages(pool: Any) -> None:
    store = store_for(pool)
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c"), ("z", "b", "c")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("a", "x", "c"), ("z", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"), ("z", "b", "c")]
    assert store.list_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "x")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "x", "c")]
    # As PostgresStore: sorted by the labels joined by periods, byte by byte, so pages agree with it.
    for ns in [("a-c",), ("a0",)]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces(limit=3) == [("a-c",), ("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(limit=3, offset=3) == [("a", "x", "c"), ("a0",), ("z", "b", "c")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("a-c",), ("a0",), ("z",)]
    assert store.batch([ListNamespacesOp((MatchCondition("prefix", ("a",)), MatchCondition("suffix", ("d",))),
                                         None, 10, 0)])[0] == [("a", "b", "d")]


def _matches(namespace: tuple[str, ...], pattern: tuple[str, ...], at_end: bool) -> bool:
    """LangGraph's rule: the namespace begins (ends) with the pattern, a label '*' matching any one label."""
    if len(pattern) > len(namespace):
        return False
    labels = namespace[len(namespace) - len(pattern):] if at_end else namespace[:len(pattern)]
    return all(want in ("*", have) for want, have in zip(pattern, labels, strict=True))


def test_list_namespaces_matches_prefixes_and_suffixes_with_and_without_wildcards(pool: Any) -> None:
    """Patterns without '*' are compared as array slices, with '*' label by label: both agree with the rule for
    patterns shorter, as long as and longer than the namespaces, at either end."""
    store = store_for(pool)
    namespaces = [("a",), ("a", "b"), ("a", "b", "c"), ("b", "c"), ("a", "x", "c"), ("c", "a", "b", "c")]
    for ns in namespaces:
        store.put(ns, "k", {"v": 1})
    patterns = [("a",), ("a", "b"), ("a", "b", "c"), ("a", "b", "c", "d"), ("b", "c"), ("c",), ("*",), ("*", "c"),
                ("a", "*"), ("a", "*", "c"), ("*", "*", "*", "*"), ("q", "a", "b", "c")]
    for pattern in patterns:
        for at_end in (False, True):
            found = store.list_namespaces(**{"suffix" if at_end else "prefix": pattern})
            assert found == sorted(ns for ns in namespaces if _matches(ns, pattern, at_end)), (pattern, at_end)


def test_time_to_live_expires_refreshes_on_read_and_sweeps(pool: Any, db: Any) -> None:
    tenant = uuid.uuid4()
    store = store_for(pool, tenant, ttl={"default_ttl": 0.02, "refresh_on_read": True})  # 1.2 s
    ns = ("session",)
    store.put(ns, "short", {"v": 1})
    store.put(ns, "long", {"v": 2}, ttl=60)
    store.put(ns, "forever", {"v": 3}, ttl=None)

    def expires(key: str) -> Any:
        with db.connect() as conn:
            row = conn.execute("select expires_at from memsub.langgraph_store_items where tenant_id = %s "
                               "and key = %s", [tenant, key]).fetchone()
            return row[0] if row else "gone"

    before = expires("long")
    time.sleep(0.05)
    assert store.get(ns, "long") is not None and expires("long") > before  # refreshed by the read
    store.get(ns, "long", refresh_ttl=False)
    assert expires("forever") is None
    time.sleep(1.5)
    assert store.get(ns, "short") is None  # expired: never read, even before a sweep
    assert sorted(i.key for i in store.search(ns)) == ["forever", "long"]
    assert expires("short") != "gone"
    assert store.sweep_ttl() == 1
    assert expires("short") == "gone"


def test_a_direct_select_shows_no_expired_item(pool: Any, db: Any) -> None:
    """The store's reads never return an expired item, but an app or analyst login selecting from
    memsub.langgraph_store_items saw the expired rows until a sweep deleted them. Policy not_expired hides them
    (only memsub_expiry_owner, which runs the sweep, sees them); the item's own context still writes over or
    deletes its expired key, and the sweep still deletes them with their vectors."""
    tenant = uuid.uuid4()
    store = store_for(pool, tenant, index={"dims": DIMS, "embed": embed, "fields": ["text"]})
    ns = ("notes",)
    for key in ("live", "old", "rewritten", "deleted"):
        store.put(ns, key, {"text": key}, ttl=60)
    with db.connect() as conn:
        conn.execute("update memsub.langgraph_store_items set expires_at = now() - interval '1 minute' "
                     "where tenant_id = %s and key <> 'live'", [tenant])
        conn.commit()

    def selected(login: str) -> list[str]:
        with db.connect(login) as conn:
            conn.execute("select memsub.set_context(%s)", [str(tenant)])
            return [r[0] for r in conn.execute("select key from memsub.langgraph_store_items order by key")]

    def vectors_selected(login: str) -> list[str]:
        with db.connect(login) as conn:
            conn.execute("select memsub.set_context(%s)", [str(tenant)])
            return [r[0] for r in conn.execute("select key from memsub.langgraph_store_vectors order by key")]

    assert selected("app") == ["live"]
    assert selected("analyst") == ["live"]
    assert vectors_selected("app") == ["live"]  # an expired item's vectors are hidden with it (policy not_expired)
    assert vectors_selected("analyst") == ["live"]
    store.put(ns, "rewritten", {"text": "again"})
    store.delete(ns, "deleted")
    assert store.get(ns, "rewritten").value == {"text": "again"}  # type: ignore[union-attr]
    assert sorted(i.key for i in store.search(ns, query="again")) == ["live", "rewritten"]
    assert selected("app") == ["live", "rewritten"]
    assert vectors_selected("app") == ["live", "rewritten"]
    assert store.sweep_ttl() == 1  # "old": "deleted" went with its delete
    with db.connect() as conn:
        left = conn.execute("select i.key, count(v.key) from memsub.langgraph_store_items i "
                            "left join memsub.langgraph_store_vectors v using (tenant_id, namespace_key, key) "
                            "where i.tenant_id = %s group by 1 order by 1", [tenant]).fetchall()
    assert left == [("live", 1), ("rewritten", 1)]


def test_reads_restart_the_time_to_live_of_what_they_return_only(pool: Any, db: Any) -> None:
    """get and search restart the time to live of the items they return, when asked, and of no other item."""
    tenant = uuid.uuid4()
    store = store_for(pool, tenant, ttl={"default_ttl": 60, "refresh_on_read": True})
    ns = ("session",)
    for key, day in (("a", 1), ("b", 2), ("c", 3)):
        store.put(ns, key, {"day": day})
    store.put(ns, "forever", {"day": 4}, ttl=None)

    def expiry() -> dict[str, Any]:
        with db.connect() as conn:
            return dict(conn.execute("select key, expires_at from memsub.langgraph_store_items "
                                     "where tenant_id = %s", [tenant]).fetchall())

    start = expiry()
    time.sleep(0.05)
    store.get(ns, "a", refresh_ttl=False)
    store.search(ns, filter={"day": 2}, refresh_ttl=False)
    assert expiry() == start
    assert [item.key for item in store.search(ns, filter={"day": 2})] == ["b"]
    after_search = expiry()
    assert after_search["b"] > start["b"] and {k: v for k, v in after_search.items() if k != "b"} == \
        {k: v for k, v in start.items() if k != "b"}
    assert store.get(ns, "c") is not None and expiry()["c"] > start["c"] and expiry()["a"] == start["a"]
    assert store.get(ns, "forever") is not None and expiry()["forever"] is None


def test_a_batch_refuses_every_operation_with_a_bad_namespace_label(pool: Any, db: Any) -> None:
    """LangGraph asks a store that keys namespaces as labels joined by periods (memsub's namespace_key) to check
    the labels of every operation given to batch (``validate_op_namespace``), as its methods do; PostgresStore
    does. memsub checked them for puts only (in the database): a get, search or listing whose label held a period,
    was empty or was not text returned nothing instead of InvalidNamespaceError. Now every operation's labels are
    checked before anything is sent, and the batch writes nothing."""
    store = store_for(pool)
    ok = PutOp(("ok",), "w", {"v": 1})
    for bad in (GetOp(("a.b",), "k"), GetOp(("a", ""), "k"), SearchOp(("ok.w",)), SearchOp((1,)),  # type: ignore[arg-type]
                ListNamespacesOp((MatchCondition("prefix", ("ok.w",)),)),
                ListNamespacesOp((MatchCondition("suffix", ("",)),)), PutOp(("a.b",), "k", None),
                PutOp(("a", "b.c"), "k", {"v": 1})):
        with pytest.raises(InvalidNamespaceError):
            store.batch([ok, bad])
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(_abatch(db, store, [ok, bad]))
    assert store.search(()) == [] and store.list_namespaces() == []


async def _abatch(db: Any, store: MemsubStore, ops: list[Any]) -> Any:
    """abatch of a store in store's context on an async pool of its own, closed afterwards."""
    apool = async_pool(db.dsn("app"))
    await apool.open()
    try:
        return await MemsubStore(apool, store.context).abatch(ops)
    finally:
        await apool.close()


def test_bad_input_names_the_field_and_writes_nothing(pool: Any, db: Any) -> None:
    tenant = uuid.uuid4()
    store = store_for(pool, tenant)
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(tenant)])
        assert_refused(conn, [
            ("select memsub.langgraph_store_put('{}', 'k', '{}')", "namespace"),
            ("select memsub.langgraph_store_put('{a.b}', 'k', '{}')", "namespace"),
            ("select memsub.langgraph_store_put('{a,b.c}', 'k', '{}')", "namespace"),
            ("select memsub.langgraph_store_put('{a,\"\"}', 'k', '{}')", "namespace"),
            ("select memsub.langgraph_store_put('{a,NULL}', 'k', '{}')", "namespace"),
            ("select memsub.langgraph_store_put('{{a},{b}}', 'k', '{}')", "namespace"),
            ("select memsub.langgraph_store_put('{a}', null, '{}')", "key"),
            ("select memsub.langgraph_store_put('{a}', 'k', '[1]')", "value"),
            ("select memsub.langgraph_store_put('{a}', 'k', '{}', -1)", "ttl"),
            ("select memsub.langgraph_store_put('{a}', 'k', '{}', 'NaN')", "ttl"),
            # beyond what an interval holds: was 22008 "interval out of range", naming nothing
            ("select memsub.langgraph_store_put('{a}', 'k', '{}', 1e300)", "ttl"),
            ("select memsub.langgraph_store_put('{a}', 'k', '{}', 100000000001)", "ttl"),
            ("select memsub.langgraph_store_put('{a}', 'k', '{}', null, '{text}', '{}')", "embeddings"),
            ("select memsub.langgraph_store_put('{a}', 'k', '{}', null, '{text}', array[null]::vector[])",
             "embeddings"),
            ("select memsub.langgraph_store_put('{a}', 'k', '{}', null, '{text,topic}', array['[1, 0]']::vector[])",
             "embeddings"),
            ("select memsub.langgraph_store_put('{a}', 'k', '{}', null, '{{text}}', '{{\"[1, 0]\"}}')", "embeddings"),
            ("select * from memsub.langgraph_store_search('{}', null, null, -1)", "limit"),
            ("select * from memsub.langgraph_store_search('{}', null, '[1, 0]', p_distance => 'hamming')",
             "distance_type"),
            ("select * from memsub.langgraph_store_search('{}', null, '[1, 0]', p_distance => null)",
             "distance_type"),
            ("select * from memsub.langgraph_store_list_namespaces(null, null, 0)", "max_depth"),
        ])
    with pytest.raises(TypeError):
        store.put(("a",), "k", {"tags": {"a-set"}})  # not JSON: refused, never stored as its str()
    # namespaces and keys are the items' keys: each at most max_id_bytes (the namespace as its labels joined)
    for namespace, key, field in (((("x" * 513),), "k", "namespace"), (("x" * 300, "y" * 300), "k", "namespace"),
                                  (("a",), "k" * 600, "key"), ((("é" * 300),), "k", "namespace")):
        with pytest.raises(LimitExceeded) as over:
            store.put(namespace, key, {"x": 1})
        assert over.value.field == field and "max_id_bytes" in str(over.value)
    store.put(("x" * 255, "y" * 256), "k" * 512, {"x": 1})  # at the limit: kept
    store.delete(("x" * 255, "y" * 256), "k" * 512)
    store.put(("ttl",), "longest", {"x": 1}, ttl=1e11)  # the longest time to live: about 190,000 years
    assert store.get(("ttl",), "longest") is not None
    store.delete(("ttl",), "longest")
    # text PostgreSQL cannot hold (an unpaired surrogate, NUL) is refused before anything is sent, by name
    for call, field, sqlstate in (
            (lambda: store.put(("a", "b\ud800"), "k", {"x": 1}), "namespace[1]", "22021"),
            (lambda: store.put(("a",), "k\ud800", {"x": 1}), "key", "22021"),
            (lambda: store.put(("a",), "k", {"x": ["ok", "\ud800"]}), "value.x[1]", "22021"),
            (lambda: store.put(("a",), "k", {"x": "\x00"}), "value.x", "22P05"),
            (lambda: store.get(("a",), "k\x00"), "key", "22021"),
            (lambda: store.search(("a",), filter={"x": "\x00"}), "filter.x", "22P05"),
            (lambda: store.list_namespaces(prefix=("\ud800",)), "prefix[0]", "22021")):
        with pytest.raises(InvalidInput) as refused:
            call()
        assert (refused.value.field, refused.value.sqlstate) == (field, sqlstate)
    # Embeddings travel as vector values: one that is not finite numbers is refused before anything is sent.
    for odd in ([float("nan"), 1.0], [], ["x", 1.0]):
        indexed = store_for(pool, tenant, index={"dims": 2, "embed": lambda texts, odd=odd: [odd for _ in texts],
                                                 "fields": ["text"]})
        with pytest.raises(InvalidInput) as caught:
            indexed.put(("a",), "k", {"text": "tea"})
        assert caught.value.field == "embeddings"
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.langgraph_store_items").fetchone() == (0,)


def test_a_vector_without_a_cosine_distance_is_refused_by_name(pool: Any, db: Any) -> None:
    """A zero vector, or one whose squares underflow or overflow single precision, has NaN cosine distances: a
    search scored such an item NaN and ranked it first (PostgreSQL orders NaN above every number), and a query
    like it scored every item NaN. put refuses it naming the embedding, search refuses it naming the query, and
    nothing is written."""
    tenant = uuid.uuid4()
    plain = store_for(pool, tenant, index={"dims": 2, "embed": _shaped, "fields": ["text"]})
    plain.put(("a",), "near", {"text": "near"})
    for odd in ([0.0, 0.0], [3e38, 3e38], [1e-30, 0.0]):
        indexed = store_for(pool, tenant, index={"dims": 2, "embed": lambda texts, odd=odd: [odd for _ in texts],
                                                 "fields": ["text"]})
        with pytest.raises(InvalidInput) as caught:
            indexed.put(("a",), "odd", {"text": "tea"})
        assert (caught.value.field, caught.value.sqlstate) == ("embeddings[0]", "22023")
        with pytest.raises(InvalidInput) as caught:
            indexed.search(("a",), query="tea")
        assert (caught.value.field, caught.value.sqlstate) == ("query_embedding", "22023")
    assert [(h.key, h.score) for h in plain.search(("a",), query="query")] == [("near", pytest.approx(1 / 1.01 ** 0.5))]
    with db.connect("app") as conn:
        conn.execute("select memsub.set_context(%s)", [str(tenant)])
        assert_refused(conn, [
            ("select memsub.langgraph_store_put('{a}', 'k', '{}', null, '{text,topic}', "
             "array['[1, 0]', '[0, 0, 0]']::vector[])", "embeddings[1]"),
            ("select * from memsub.langgraph_store_search('{}', null, '[0, 0]', p_distance => 'l2')",
             "query_embedding"),
        ])
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.langgraph_store_items").fetchone() == (1,)
        assert conn.execute("select count(*) from memsub.langgraph_store_vectors").fetchone() == (1,)


def test_a_stored_vector_without_a_cosine_distance_ranks_last_unscored(pool: Any, db: Any) -> None:
    """A zero vector stored before put refused it has no score (NULL, not NaN), and ranks after the scored items
    as an item without vectors does; another field of the same item still scores it."""
    tenant = uuid.uuid4()
    store = store_for(pool, tenant, index={"dims": 2, "embed": _shaped, "fields": ["text"]})
    for key in ("near", "short"):
        store.put(("a",), key, {"text": key})
    with db.connect() as conn:  # as written before the check: straight into the table
        conn.execute("update memsub.langgraph_store_vectors set embedding = '[0, 0]' "
                     "where tenant_id = %s and key = 'short'", [tenant])
        conn.execute("insert into memsub.langgraph_store_vectors (tenant_id, org_id, namespace, namespace_key, key, "
                     "field_name, embedding) select tenant_id, org_id, namespace, namespace_key, key, 'zero', '[0, 0]'"
                     " from memsub.langgraph_store_vectors where tenant_id = %s and key = 'near'", [tenant])
    for distance in ("cosine", "l2", "inner_product"):
        ranked = store_for(pool, tenant, index={"dims": 2, "embed": _shaped, "fields": ["text"],
                                                "distance_type": distance})  # type: ignore[typeddict-item]
        hits = ranked.search(("a",), query="query")
        assert [h.key for h in hits] == ["near", "short"]
        assert all(h.score is None or h.score == h.score for h in hits)  # never NaN
    cosine = store.search(("a",), query="query")
    assert [(h.key, h.score) for h in cosine] == [("near", pytest.approx(1 / 1.01 ** 0.5)), ("short", None)]


def test_an_empty_key_is_a_key(pool: Any) -> None:
    """As in PostgresStore, the empty string is a key like any other."""
    store = store_for(pool)
    store.put(("a",), "", {"v": 1})
    assert store.get(("a",), "").value == {"v": 1}  # type: ignore[union-attr]
    assert [item.key for item in store.search(("a",))] == [""]
    store.delete(("a",), "")
    assert store.get(("a",), "") is None


def test_an_item_is_changed_only_from_the_context_that_wrote_it(pool: Any) -> None:
    """Organizations see tenant-wide items but do not change them, and a key another organization holds is
    refused by name, never with the row-level security policy's message (which would say the key exists)."""
    wide, org_a, org_b = tenant_and_two_organizations(pool)
    ns = ("shared",)
    wide.put(ns, "k", {"text": "tenant wide"})
    org_a.put(ns, "own", {"owner": "a"})
    for call in (lambda: org_a.put(ns, "k", {"text": "a"}), lambda: org_b.delete(ns, "k"),
                 lambda: org_b.put(ns, "own", {"owner": "b"}), lambda: org_b.delete(ns, "own"),
                 lambda: wide.put(ns, "own", {"owner": "wide"}), lambda: wide.delete(ns, "own"),
                 lambda: org_b.batch([PutOp(("other",), "free", {"v": 1}), PutOp(ns, "k", None)])):
        with pytest.raises(ContextError) as refused:
            call()
        assert refused.value.field == "key" and "row-level security" not in str(refused.value)
        assert "written from another context" in str(refused.value)
    for store in (wide, org_a, org_b):
        assert store.get(ns, "k").value == {"text": "tenant wide"}  # type: ignore[union-attr]
        assert store.get(("other",), "free") is None  # the refused batch wrote nothing
    assert org_a.get(ns, "own").value == {"owner": "a"}  # type: ignore[union-attr]
    assert org_b.get(ns, "own") is None and wide.get(ns, "own") is None
    # each context changes its own items
    wide.put(ns, "k", {"text": "changed"})
    org_a.put(ns, "own", {"owner": "a2"})
    assert org_b.get(ns, "k").value == {"text": "changed"}  # type: ignore[union-attr]
    org_a.delete(ns, "own")
    org_b.put(ns, "own", {"owner": "b"})  # deleted by its writer: the key is free again
    assert org_b.get(ns, "own").value == {"owner": "b"}  # type: ignore[union-attr]
    wide.delete(ns, "k")
    assert org_a.get(ns, "k") is None


def test_an_expired_item_of_another_context_leaves_its_key_free(db: Any, pool: Any) -> None:
    """An expired item is gone for every context before the sweep deletes it: another context that finds no item
    at its key (get, search) writes or deletes there, and is not refused for an item it was told is not there."""
    wide, org_a, org_b = tenant_and_two_organizations(pool)
    ns = ("shared",)
    org_a.put(ns, "k", {"text": "short lived"}, ttl=0.02)  # 1.2 seconds
    org_a.put(ns, "gone", {"text": "short lived too"}, ttl=0.02)
    with db.connect("app") as clock:
        wait_until(clock, datetime.now(UTC) + timedelta(seconds=1.5))
    for store in (wide, org_a, org_b):
        assert store.get(ns, "k") is None and store.search(ns) == []
    wide.put(ns, "k", {"text": "tenant wide"})
    org_b.delete(ns, "gone")
    org_b.put(ns, "gone", {"owner": "b"})
    for store in (wide, org_a, org_b):
        assert store.get(ns, "k").value == {"text": "tenant wide"}  # type: ignore[union-attr]
    assert org_b.get(ns, "gone").value == {"owner": "b"}  # type: ignore[union-attr]
    assert org_a.get(ns, "gone") is None  # org b's item, which org a does not see


@pytest.mark.parametrize("first_org", [True, False], ids=["organization first", "tenant-wide first"])
def test_two_contexts_writing_a_new_key_at_once(db: Any, first_org: bool) -> None:
    """The second of two concurrent first writes of a key, from another context, waits for the first and is then
    refused by name: it neither overwrites the first (an organization sees a tenant-wide row) nor meets the
    row-level security policy (a tenant-wide context does not see an organization's row)."""
    tenant, org = uuid.uuid4(), uuid.uuid4()
    first_context, second_context = ((org, None) if first_org else (None, org))
    with db.connect("app") as first, db.connect("app") as second:
        first.execute("select memsub.set_context(%s, %s)", [tenant, first_context])
        first.execute("select memsub.langgraph_store_put('{shared}', 'k', '{\"by\": \"first\"}')")
        second.execute("select memsub.set_context(%s, %s)", [tenant, second_context])
        second.execute("set local lock_timeout = '10s'")
        writer = blocked_call(db, second, lambda: second.execute(  # waits on the first's uncommitted row
            "select memsub.langgraph_store_put('{shared}', 'k', '{\"by\": \"second\"}')"))
        first.commit()
        writer.join()
        second.rollback()
    refused = writer.error
    assert isinstance(refused, psycopg.errors.InsufficientPrivilege), refused
    assert refused.diag.column_name == "key" and "row-level security" not in str(refused)
    with db.connect() as conn:
        assert conn.execute("select value ->> 'by' from memsub.langgraph_store_items where tenant_id = %s",
                            [tenant]).fetchall() == [("first",)]


def test_an_indexed_item_keeps_its_vectors_in_its_context(db: Any) -> None:
    pool = sync_pool(db.dsn("app"))
    try:
        tenant, index = uuid.uuid4(), {"dims": DIMS, "embed": embed, "fields": ["text"]}
        wide, org_a, org_b = (MemsubStore(pool, TenantContext(tenant, org), index=index)  # type: ignore[arg-type]
                              for org in (None, uuid.uuid4(), uuid.uuid4()))
        ns = ("shared",)
        wide.put(ns, "k", {"text": "tenant wide note"})
        with pytest.raises(ContextError):
            org_a.put(ns, "k", {"text": "org a text"})
        hits = org_b.search(ns, query="tenant wide note")
        assert [h.key for h in hits] == ["k"] and hits[0].score is not None
        wide.put(ns, "k", {"text": "second note"})
        assert org_b.search(ns, query="second note")[0].score == pytest.approx(1.0)
        with db.connect() as conn:
            assert conn.execute("select count(*), count(org_id) from memsub.langgraph_store_vectors "
                                "where tenant_id = %s", [tenant]).fetchone() == (1, 0)
    finally:
        pool.close()


def test_an_async_pool_given_as_pool_serves_the_async_methods(db: Any) -> None:
    async def scenario() -> None:
        apool: Any = AsyncConnectionPool(db.dsn("app"), open=False,
                                         kwargs={"row_factory": dict_row, "autocommit": True})
        await apool.open()
        try:
            store = MemsubStore(apool, TenantContext(uuid.uuid4()))
            await store.aput(("a",), "k", {"v": 1})
            assert (await store.aget(("a",), "k")).value == {"v": 1}  # type: ignore[union-attr]
            with pytest.raises(RuntimeError, match="sync"):
                store.get(("a",), "k")
        finally:
            await apool.close()

    asyncio.run(scenario())


def test_async_methods_share_the_stored_functions(db: Any) -> None:
    async def scenario() -> None:
        store = MemsubStore.from_dsn(db.dsn("app"), tenant_id=uuid.uuid4(),
                                     index={"dims": DIMS, "embed": embed, "fields": ["text"]})
        try:
            await store.aput(("notes",), "n1", {"text": "async put"})
            item = await store.aget(("notes",), "n1")
            assert item is not None and item.value == {"text": "async put"}
            hits = await store.asearch(("notes",), query="async")
            assert [h.key for h in hits] == ["n1"] and hits[0].score is not None
            assert await store.alist_namespaces() == [("notes",)]
            await store.adelete(("notes",), "n1")
            assert await store.aget(("notes",), "n1") is None
        finally:
            await store.aclose()

    asyncio.run(scenario())


def test_integrations_doc_example_runs_as_written(db: Any, capsys: Any) -> None:
    run_doc_example("LangGraph store", db.dsn("app"))
    assert "tea" in capsys.readouterr().out
