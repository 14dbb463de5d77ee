"""A LangGraph store (long-term memory) kept in memsub, isolated per tenant by row-level security.

::

    from memsub.integrations.langgraph_store import MemsubStore

    with MemsubStore.from_dsn(dsn, tenant_id=tenant, index={"dims": 384, "embed": embed, "fields": ["text"]},
                              ttl={"default_ttl": 60 * 24}) as store:
        store.put(("users", "42", "memories"), "m1", {"text": "prefers tea"})
        store.search(("users", "42"), query="what does the user drink?", limit=3)

``MemsubStore`` implements LangGraph's ``BaseStore`` (sync and async): put/get/delete, ``search`` with filters and a
natural-language query over the indexed fields (scored by the index's ``distance_type``, ``cosine`` by default,
``l2`` or ``inner_product``, as LangGraph's PostgresStore scores them), ``list_namespaces`` with
prefix/suffix/depth, and time to live with refresh on read. Items live in ``memsub.langgraph_store_items``
(vectors in ``langgraph_store_vectors``); each ``batch`` of operations is one transaction of the store's tenant
context, one stored function per operation (``sql/920_langgraph_store.sql``). Texts are embedded in Python by
the configured embedder, as LangGraph does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path
from psycopg_pool import AsyncConnectionPool

from memsub._calls import checked_vector, strict_jsonb
from memsub.connection import DEFAULT_PREPARE_THRESHOLD
from memsub.errors import LocalValidationError
from memsub.integrations._context import (
    Row,
    Statement,
    TenantContext,
    async_call_many,
    async_pool_of,
    call_many,
    pool_options,
    row_count,
    sync_pool,
)

# The vectors travel as vector values in pgvector's binary form (%b), not as JSON numbers the server would parse.
PUT = ("select memsub.langgraph_store_put(p_namespace => %s, p_key => %s, p_value => %s, p_ttl_minutes => %s, "
       "p_fields => %s, p_embeddings => %b)")
PUT_UNINDEXED = ("select memsub.langgraph_store_put(p_namespace => %s, p_key => %s, p_value => %s, "
                 "p_ttl_minutes => %s)")
# The reads name the columns of memsub.langgraph_store_item: a prepared `select *` fails once on each pooled
# connection after an upgrade that changes the result (docs/operations.md, "Upgrading while applications run").
GET = ("select namespace, key, value, created_at, updated_at, score from memsub.langgraph_store_get("
       "p_namespace => %s, p_key => %s, p_refresh_ttl => %s)")
SEARCH = ("select namespace, key, value, created_at, updated_at, score from memsub.langgraph_store_search("
          "p_namespace_prefix => %s, p_filter => %s, "
          "p_query_embedding => %b, p_limit => %s, p_offset => %s, p_refresh_ttl => %s, p_distance => %s)")
LIST_NAMESPACES = ("select namespace from memsub.langgraph_store_list_namespaces(p_prefix => %s, p_suffix => %s, "
                   "p_max_depth => %s, p_limit => %s, p_offset => %s)")
SWEEP = "select memsub.langgraph_store_sweep() as deleted"
DISTANCES = ("cosine", "l2", "inner_product")
"""The index distance_type values LangGraph's PostgresStore takes for float vectors, scored as it scores them."""


class MemsubStore(BaseStore):
    """LangGraph ``BaseStore`` over memsub's stored functions. ``pool`` is a psycopg ``ConnectionPool`` for the sync
    methods or an ``AsyncConnectionPool`` for the async ones; ``async_pool`` adds an async pool to a sync one."""

    supports_ttl = True

    def __init__(self, pool: Any, context: TenantContext, *, index: IndexConfig | None = None,
                 ttl: TTLConfig | None = None, async_pool: Any = None) -> None:
        if isinstance(pool, AsyncConnectionPool) and async_pool is None:
            pool, async_pool = None, pool
        self.pool = pool
        self.async_pool = async_pool
        self.context = context
        self.ttl_config = ttl
        self.index_config = index
        distance = (index or {}).get("distance_type", "cosine")
        if distance not in DISTANCES:
            raise LocalValidationError(
                f"MemsubStore: index distance_type {distance!r} is not supported: use one of "
                f"{', '.join(map(repr, DISTANCES))}", field="distance_type")
        self._distance: str = distance
        self.embeddings = ensure_embeddings(index["embed"]) if index else None
        fields = (index or {}).get("fields") or ["$"]
        self._fields = [(field, _path(field)) for field in ([fields] if isinstance(fields, str) else fields)]

    @classmethod
    def from_dsn(cls, dsn: str, *, tenant_id: Any, org_id: Any = None, user_id: Any = None,
                 index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 prepare_threshold: int | None = DEFAULT_PREPARE_THRESHOLD) -> MemsubStore:
        """A store with its own connection pools (a sync one now, an async one when first used).
        ``prepare_threshold`` is the client's, for both (None: prepare nothing, behind a transaction-mode connection
        pooler); a bad one raises ConfigurationError before any connection."""
        options = pool_options(dsn, prepare_threshold=prepare_threshold)
        store = cls(sync_pool(dsn, prepare_threshold=prepare_threshold), TenantContext(tenant_id, org_id, user_id),
                    index=index, ttl=ttl)
        store._async_options = options
        return store

    _async_options: dict[str, Any] | None = None
    """The arguments of the async pool a store built by from_dsn opens when first used."""

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()

    async def aclose(self) -> None:
        if self.async_pool is not None:
            await self.async_pool.close()
        self.close()

    def __enter__(self) -> MemsubStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one batch: statements, embeddings, results ----------------------------------------------------------

    def _plan(self, ops: Sequence[Op]) -> tuple[list[tuple[int, Op]], list[str], list[tuple[int, int]]]:
        """Ops to run, in order, the texts to embed for each, and where each op's texts start and end in that list.
        A put is left out when a later put of its key follows with no read between that could see it (a get of
        the key, a search under a prefix of its namespace, a namespace listing), unless it is a delete and the
        later put writes a value: the reads see each put before them, and the item its creation time, as they
        would with every put run. Every operation's namespace labels are checked first
        (InvalidNamespaceError for a label that is empty, not text or holds a period, before anything is sent), as
        LangGraph asks of a store that keys namespaces as labels joined by periods, and as its methods check them:
        unchecked, a get, search or listing with such a label returned nothing instead."""
        for op in ops:
            validate_op_namespace(op)
        unread: dict[tuple[tuple[str, ...], str], int] = {}  # a key's last put that no read has seen yet
        dropped: set[int] = set()
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                earlier = unread.get((op.namespace, op.key))
                # a delete before a put is kept: the put then creates the item anew (its created_at), as in order
                if earlier is not None and not (cast(PutOp, ops[earlier]).value is None and op.value is not None):
                    dropped.add(earlier)
                unread[(op.namespace, op.key)] = i
            elif isinstance(op, GetOp):
                unread.pop((op.namespace, op.key), None)
            elif isinstance(op, SearchOp):
                prefix = op.namespace_prefix
                unread = {k: v for k, v in unread.items() if k[0][:len(prefix)] != prefix}
            elif isinstance(op, ListNamespacesOp):
                unread = {}
        # A value may be any mapping (PutOp.value: Mapping[str, Any]): it is stored, and embedded, as its dict.
        planned = [(i, op._replace(value=dict(op.value)) if isinstance(op, PutOp) and isinstance(op.value, Mapping)
                    and not isinstance(op.value, dict) else op) for i, op in enumerate(ops) if i not in dropped]
        texts: list[str] = []
        spans: list[tuple[int, int]] = []
        for _, op in planned:
            start = len(texts)
            if isinstance(op, PutOp) and op.value is not None and self.embeddings and op.index is not False:
                texts += [text for _, text in self._field_texts(op)]
            elif isinstance(op, SearchOp) and op.query and self.embeddings:
                texts.append(op.query)
            spans.append((start, len(texts)))
        return planned, texts, spans

    def _field_texts(self, op: PutOp) -> list[tuple[str, str]]:
        paths = self._fields if op.index is None else [(field, _path(field)) for field in op.index or []]
        named: list[tuple[str, str]] = []
        for path, tokens in paths:
            texts = get_text_at_path(op.value, tokens)
            named += [(f"{path}.{i}" if len(texts) > 1 else path, text) for i, text in enumerate(texts)]
        return named

    def _statements(self, planned: list[tuple[int, Op]], vectors: list[list[float]],
                    spans: list[tuple[int, int]]) -> list[Statement]:
        statements: list[Statement] = []
        for (_, op), (start, end) in zip(planned, spans, strict=True):
            if isinstance(op, PutOp):
                ttl = None if op.ttl is None else float(op.ttl)
                value = None if op.value is None else strict_jsonb(op.value, "value")
                arguments = [list(op.namespace), op.key, value, ttl]
                if end > start:  # its fields' vectors replace the item's; without them it keeps none
                    names = [name for name, _ in self._field_texts(op)]
                    embeddings = [checked_vector(v, "embeddings") for v in vectors[start:end]]
                    statements.append((PUT, [*arguments, names, embeddings]))
                else:
                    statements.append((PUT_UNINDEXED, arguments))
            elif isinstance(op, GetOp):
                statements.append((GET, [list(op.namespace), op.key, op.refresh_ttl]))
            elif isinstance(op, SearchOp):
                query = checked_vector(vectors[start], "embeddings") if end > start else None
                filter_value = strict_jsonb(op.filter, "filter") if op.filter else None
                statements.append((SEARCH, [list(op.namespace_prefix), filter_value, query, row_count(op.limit),
                                            row_count(op.offset, "offset"), op.refresh_ttl, self._distance]))
            elif isinstance(op, ListNamespacesOp):
                prefix = suffix = None
                for condition in op.match_conditions or ():
                    if condition.match_type == "prefix" and condition.path:
                        prefix = list(condition.path)
                    elif condition.match_type == "suffix" and condition.path:
                        suffix = list(condition.path)
                statements.append((LIST_NAMESPACES, [prefix, suffix, op.max_depth, row_count(op.limit),
                                                    row_count(op.offset, "offset")]))
            else:
                raise TypeError(f"memsub store: unknown operation {type(op).__name__}")
        return statements

    @staticmethod
    def _results(ops: Sequence[Op], planned: list[tuple[int, Op]], rows: list[list[Row]]) -> list[Result]:
        results: list[Result] = [None] * len(ops)
        for (position, op), found in zip(planned, rows, strict=True):
            if isinstance(op, GetOp):
                results[position] = _item(found[0]) if found else None
            elif isinstance(op, SearchOp):
                results[position] = [_search_item(row) for row in found]
            elif isinstance(op, ListNamespacesOp):
                results[position] = [tuple(row["namespace"]) for row in found]
        return results

    def _sync_pool(self) -> Any:
        if self.pool is None:
            raise RuntimeError("MemsubStore: give a sync pool (pool=) to use the sync methods")
        return self.pool

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        pool = self._sync_pool()
        ops = list(ops)
        planned, texts, spans = self._plan(ops)
        vectors = self._embed(texts, spans, planned)
        rows = call_many(pool, self.context, self._statements(planned, vectors, spans))
        return self._results(ops, planned, rows)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        planned, texts, spans = self._plan(ops)
        vectors = await self._aembed(texts, spans, planned)
        if self.async_pool is None:
            if self._async_options is None:
                raise RuntimeError("MemsubStore: give async_pool= to use the async methods")
            self.async_pool = async_pool_of(self._async_options)
            await self.async_pool.open()
        rows = await async_call_many(self.async_pool, self.context, self._statements(planned, vectors, spans))
        return self._results(ops, planned, rows)

    def _embed(self, texts: list[str], spans: list[tuple[int, int]], planned: list[tuple[int, Op]]) -> list[Any]:
        if not texts or self.embeddings is None:
            return []
        return [vector for kind, vector in self._vector_kinds(texts, spans, planned, self.embeddings.embed_documents,
                                                              self.embeddings.embed_query)]

    async def _aembed(self, texts: list[str], spans: list[tuple[int, int]],
                      planned: list[tuple[int, Op]]) -> list[Any]:
        if not texts or self.embeddings is None:
            return []
        documents = [t for (_, op), (s, e) in zip(planned, spans, strict=True) if isinstance(op, PutOp)
                     for t in texts[s:e]]
        embedded = iter(await self.embeddings.aembed_documents(documents) if documents else [])
        vectors: list[Any] = []
        for (_, op), (start, end) in zip(planned, spans, strict=True):
            if isinstance(op, PutOp):
                vectors += [next(embedded) for _ in range(start, end)]
            elif end > start:
                vectors.append(await self.embeddings.aembed_query(texts[start]))
        return vectors

    @staticmethod
    def _vector_kinds(texts: list[str], spans: list[tuple[int, int]], planned: list[tuple[int, Op]],
                      documents: Any, query: Any) -> list[tuple[str, Any]]:
        """Documents (fields being written) are embedded in one call; each search query on its own."""
        to_embed = [t for (_, op), (s, e) in zip(planned, spans, strict=True) if isinstance(op, PutOp)
                    for t in texts[s:e]]
        embedded = iter(documents(to_embed) if to_embed else [])
        vectors: list[tuple[str, Any]] = []
        for (_, op), (start, end) in zip(planned, spans, strict=True):
            if isinstance(op, PutOp):
                vectors += [("document", next(embedded)) for _ in range(start, end)]
            elif end > start:
                vectors.append(("query", query(texts[start])))
        return vectors

    def sweep_ttl(self) -> int:
        """Delete the tenant's expired items now (reads never return them in any case); returns how many."""
        return int(call_many(self._sync_pool(), self.context, [(SWEEP, [])])[0][0]["deleted"])


def _path(field: str) -> str | list[str]:
    """A field path as LangGraph's get_text_at_path takes it: "$" (the whole value, serialized) stays as it is."""
    return "$" if field == "$" else tokenize_path(field)


def _item(row: Row) -> Item:
    return Item(value=row["value"], key=row["key"], namespace=tuple(row["namespace"]),
                created_at=row["created_at"], updated_at=row["updated_at"])


def _search_item(row: Row) -> SearchItem:
    return SearchItem(namespace=tuple(row["namespace"]), key=row["key"], value=row["value"],
                      created_at=row["created_at"], updated_at=row["updated_at"], score=row["score"])
