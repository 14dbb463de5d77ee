"""MemsubStore against LangGraph's own PostgresStore: the same random operations on both, results compared.

Both stores run on the same embedded server: MemsubStore as an ordinary app login in a fresh tenant's context,
PostgresStore (langgraph-checkpoint-postgres) in a schema of its own, owned by a login role of its own, with
``omit_expired`` on (memsub never returns an expired item). Seeded random sequences of put (overwrite, ``None``
to delete, a time to live, any mapping as the value), get, delete, search (namespace prefix, filters of plain
values and of ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte`` on one or two fields, field names holding
periods, limit and offset), list_namespaces (prefix, suffix, ``*``, max_depth, limit, offset), expiries (the
stored expiry moved into the past in both) and batches mixing them run through the public methods (the sync ones,
or the async ones in the odd-numbered seeds) and through ``batch``.

Each result is compared three ways: memsub's with PostgresStore's; memsub's with a model of LangGraph's documented
BaseStore contract kept beside them (the items, their values, their time to live, and for each store which call
created and last updated each item, so that ``updated_at`` order and ``created_at == updated_at`` are predicted
too); and PostgresStore's with the same model changed by exactly the differences docs/integrations.md documents
("Side by side with PostgresStore"):

- a range operator (``$gt`` ...) compares, in PostgresStore, the field's text with the operand's Python ``str()``
  as text (10 < 9, ``true`` > ``"s"``); memsub compares numbers as numbers and strings as text, and a field of
  another type than the operand matches none;
- a filter value that is an object without ``$`` operators is, in PostgresStore, a set of operators (refused as
  unknown ones, or, when empty, no condition at all); memsub, as the contract's "exact matches", compares it
  for equality; a plain filter value holding an integer beyond 64 bits PostgresStore refuses (orjson);
- PostgresStore runs a batch's reads before its writes, and writes only the last put of each key (so a delete and
  a put of an existing key keep its created_at); memsub runs a batch in order;
- PostgresStore writes over an expired, unswept item's row, keeping its created_at; memsub creates it anew.

Search without a query is ordered newest first (``updated_at`` descending) by both; items updated by one call
share their ``updated_at`` (PostgresStore breaks such ties arbitrarily), so a page is checked as a page of the
model's order in which tied items may stand for each other. Namespace listings are compared as lists: memsub's
in byte order, PostgresStore's in the database's collation (the same in a ``C`` database, as the tests' is).
Before some reads, every live expiry is set to a mark in both stores, and the items whose mark the read moved
must be exactly those it returned with a time to live when asked to refresh, and none otherwise. A failure names
the seed and the last operations before it.

Searches with a query, over stores with an index, are compared by a test of their own (at the end), and invalid
input by another: memsub refuses at least what the contract and PostgresStore refuse, and writes nothing.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import itertools
import json
import math
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from types import MappingProxyType
from typing import Any

import psycopg
import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)
from langgraph.store.postgres import PostgresStore
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memsub.embedding import HashingEmbedder
from memsub.errors import InvalidInput
from memsub.integrations._context import TenantContext, async_pool, sync_pool
from memsub.integrations.langgraph_store import MemsubStore

PEER_ROLE = "langgraph_peer"  # no memsub_ prefix: the role tests that list memsub's roles never meet it
LABELS = ("a", "b", "c", "a-c", "a0", "x_y", "p%", "q\\", "é", "*")
KEYS = ("k1", "k2", "k3", "", "k.4")
FIELDS = ("n", "s", "f", "a.b", "")
STRINGS = ("", "a", "ab", "b", "9", "10")
NUMBERS = (-2, 0, 1, 9, 10, 100, 2.5, 9.5, 10.0, -0.0, 1e-07, 10**20)
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
RANGES = {"$gt": lambda c: c > 0, "$gte": lambda c: c >= 0, "$lt": lambda c: c < 0, "$lte": lambda c: c <= 0}
SEQUENCE_LENGTH = 100
MISSING = object()


# -- the two stores -------------------------------------------------------------------------------------------


def peer_dsn(db: Any, search_path: str = "langgraph") -> str:
    """A login role owning schema langgraph in the test database, for PostgresStore's tables."""
    with db.connect(autocommit=True) as conn:
        conn.execute(sql.SQL("do $$ begin create role {} login; exception when duplicate_object then null; end $$")
                     .format(sql.Identifier(PEER_ROLE)))
        conn.execute(sql.SQL("create schema langgraph authorization {}").format(sql.Identifier(PEER_ROLE)))
    return db.server.dsn(db.name, PEER_ROLE) + f" options='-c search_path={search_path}'"


@pytest.fixture
def peer(db: Any) -> Iterator[Any]:
    """PostgresStore on its own connection, set up as from_conn_string sets it up, with omit_expired."""
    conn = psycopg.connect(peer_dsn(db), autocommit=True, prepare_threshold=0, row_factory=dict_row)
    store = PostgresStore(conn, ttl={"omit_expired": True, "refresh_on_read": True})  # type: ignore[arg-type]
    store.setup()
    yield store
    conn.close()


DIMS = 32
EMBEDDER = HashingEmbedder(DIMS)


def embed(texts: list[str]) -> list[list[float]]:
    return EMBEDDER.embed(texts)


@pytest.fixture
def indexed_peer(db: Any) -> Iterator[Any]:
    """PostgresStore with an index over field "s" (the vector type from schema public)."""
    conn = psycopg.connect(peer_dsn(db, "langgraph,public"), autocommit=True, prepare_threshold=0,
                           row_factory=dict_row)
    store = PostgresStore(conn, index={"dims": DIMS, "embed": embed, "fields": ["s"]},  # type: ignore[arg-type]
                          ttl={"omit_expired": True})
    store.setup()
    yield store
    conn.close()


def clear(peer: Any) -> None:
    peer.conn.execute("truncate store")


class Texts:
    """Text comparisons and jsonb's text of a value, as the test database computes them (its collation)."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.cache: dict[Any, Any] = {}

    @cached_property
    def byte_order(self) -> bool:
        """Whether the database's collation orders text byte by byte."""
        row = self.conn.execute("select datcollate from pg_database where datname = current_database()").fetchone()
        return row is not None and row[0] in ("C", "POSIX", "C.UTF-8", "C.utf8", "ucs_basic")

    def sort_key(self, text: str) -> Any:
        return functools.cmp_to_key(self.compare)(text)

    def compare(self, a: str, b: str) -> int:
        """-1, 0 or 1: a against b as PostgreSQL compares two text values here."""
        if (a, b) not in self.cache:
            row = self.conn.execute("select %s::text < %s::text, %s::text > %s::text", [a, b, a, b]).fetchone()
            assert row is not None
            self.cache[(a, b)] = -1 if row[0] else 1 if row[1] else 0
        return int(self.cache[(a, b)])

    def as_text(self, value: Any) -> str | None:
        """value ->> of a field holding value (None for JSON null)."""
        key = ("text", json.dumps(value, sort_keys=True))
        if key not in self.cache:
            row = self.conn.execute("select %s::jsonb ->> 'f'", [Jsonb({"f": value})]).fetchone()
            assert row is not None
            self.cache[key] = row[0]
        return self.cache[key]  # type: ignore[no-any-return]


# -- the model ------------------------------------------------------------------------------------------------


def canonical(value: Any) -> Any:
    """A JSON value as jsonb compares it: numbers by value (10 == 10.0), a boolean never equal to a number."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", Decimal(str(value)))
    if isinstance(value, str):
        return ("string", value)
    if value is None:
        return ("null",)
    if isinstance(value, list):
        return ("array", tuple(canonical(v) for v in value))
    return ("object", frozenset((k, canonical(v)) for k, v in value.items()))


def beyond_64_bits(value: Any) -> bool:
    if isinstance(value, list):
        return any(beyond_64_bits(v) for v in value)
    if isinstance(value, dict):
        return any(beyond_64_bits(v) for v in value.values())
    return isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**64


def kind(value: Any) -> str:
    return str(canonical(value)[0])


@dataclass
class State:
    """The items, the time to live each was last put with, and for each store the call that created and that last
    updated each item; for PostgresStore also the creating call of each expired item it has not swept."""

    items: dict[tuple[tuple[str, ...], str], dict[str, Any]] = field(default_factory=dict)
    ttls: dict[tuple[tuple[str, ...], str], float | None] = field(default_factory=dict)
    stamps: dict[str, dict[tuple[tuple[str, ...], str], tuple[int, int]]] = field(
        default_factory=lambda: {"memsub": {}, "peer": {}})
    expired: dict[tuple[tuple[str, ...], str], int] = field(default_factory=dict)

    def put(self, op: PutOp, stamp: int, stores: tuple[str, ...] = ("memsub", "peer")) -> None:
        where = (op.namespace, op.key)
        for store in stores:
            if op.value is None:
                self.stamps[store].pop(where, None)
            else:
                created = self.stamps[store].get(where, (stamp, stamp))[0]
                if store == "peer" and where in self.expired:
                    # PostgresStore's upsert finds the expired row and keeps its created_at
                    created = self.expired[where]
                self.stamps[store][where] = (created, stamp)
            if store == "peer":
                self.expired.pop(where, None)  # written over or deleted
        if op.value is None:
            self.items.pop(where, None)
            self.ttls.pop(where, None)
        else:
            self.items[where] = copy.deepcopy(dict(op.value))
            self.ttls[where] = op.ttl

    def expire(self, where: tuple[tuple[str, ...], str]) -> None:
        """The item's time to live has run out: gone for every reader of both stores, not yet swept."""
        self.expired[where] = self.stamps["peer"][where][0]
        del self.items[where], self.ttls[where], self.stamps["memsub"][where], self.stamps["peer"][where]


class Model:
    """LangGraph's documented contract (``contract`` flavour) and PostgresStore's reading of it (``peer``)."""

    def __init__(self, texts: Texts) -> None:
        self.texts = texts

    def condition(self, actual: Any, operator: str, operand: Any, flavour: str) -> bool:
        if actual is MISSING:
            return False  # no condition matches a missing field, $ne included (both stores)
        if operator == "$eq":
            return bool(canonical(actual) == canonical(operand))
        if operator == "$ne":
            return bool(canonical(actual) != canonical(operand))
        if operator not in RANGES:
            raise ValueError(operator)
        if flavour == "peer":  # value->>field compared as text with str(operand)
            text = self.texts.as_text(actual)
            return text is not None and RANGES[operator](self.texts.compare(text, str(operand)))
        if kind(actual) != kind(operand) or kind(actual) not in ("number", "string"):
            return False
        if kind(actual) == "number":
            a, b = Decimal(str(actual)), Decimal(str(operand))
            return RANGES[operator]((a > b) - (a < b))
        return RANGES[operator](self.texts.compare(actual, operand))

    def matches(self, value: dict[str, Any], filter: dict[str, Any] | None, flavour: str) -> bool:
        for name, wanted in (filter or {}).items():
            actual = value.get(name, MISSING)
            operators = isinstance(wanted, dict) and (flavour == "peer" or any(k.startswith("$") for k in wanted))
            if operators:
                if not all(self.condition(actual, op, operand, flavour) for op, operand in wanted.items()):
                    return False
            elif actual is MISSING or canonical(actual) != canonical(wanted):
                return False
        return True

    def refused(self, filter: dict[str, Any] | None, flavour: str) -> bool:
        """Whether a search with this filter is refused: an unknown operator, and in PostgresStore an object
        without operators (read as unknown ones) or an integer beyond 64 bits in a plain value (orjson's
        limit)."""
        for wanted in (filter or {}).values():
            if isinstance(wanted, dict) and (flavour == "peer" or any(k.startswith("$") for k in wanted)):
                if any(op not in OPERATORS for op in wanted):
                    return True
            elif flavour == "peer" and beyond_64_bits(wanted):
                return True
        return False

    def search(self, state: State, op: SearchOp, flavour: str) -> list[tuple[tuple[str, ...], str]]:
        """The matching items, newest first (ties in any order)."""
        store = "memsub" if flavour == "contract" else "peer"
        found = [where for where, value in state.items.items()
                 if where[0][:len(op.namespace_prefix)] == op.namespace_prefix
                 and self.matches(value, op.filter, flavour)]
        return sorted(found, key=lambda where: -state.stamps[store][where][1])

    @staticmethod
    def list_namespaces(state: State, op: ListNamespacesOp, order: Callable[[str], Any]) -> list[tuple[str, ...]]:
        def fits(ns: tuple[str, ...], condition: MatchCondition) -> bool:
            path = tuple(condition.path)
            if len(path) > len(ns):
                return False
            labels = ns[len(ns) - len(path):] if condition.match_type == "suffix" else ns[:len(path)]
            return all(want in ("*", have) for want, have in zip(path, labels, strict=True))

        found = {ns[:op.max_depth] if op.max_depth else ns for ns, _ in state.items
                 if all(fits(ns, c) for c in op.match_conditions or ())}
        ordered = sorted(found, key=lambda ns: order(".".join(ns)))
        return ordered[op.offset:op.offset + op.limit]


# -- random operations ----------------------------------------------------------------------------------------


class Generator:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.namespaces = [tuple(rng.choice(LABELS) for _ in range(rng.randint(1, 3))) for _ in range(7)]
        self.recent: list[tuple[tuple[str, ...], str]] = []

    def namespace(self) -> tuple[str, ...]:
        return self.rng.choice(self.namespaces)

    def scalar(self) -> Any:
        return self.rng.choice([*STRINGS, *NUMBERS, True, False, None])

    def value(self) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for name in [name for name in FIELDS if self.rng.random() < 0.7]:
            roll = self.rng.random()
            value[name] = (self.scalar() if roll < 0.8 else [self.scalar()] if roll < 0.9
                           else {"x": self.scalar()})
        return value

    def put(self) -> PutOp:
        value = None if self.rng.random() < 0.15 else self.value()
        ttl = self.rng.choice([None, None, None, 5.0, 60]) if value is not None else None
        if value is not None and self.rng.random() < 0.1:
            value = MappingProxyType(value)  # type: ignore[assignment]  # any mapping, as PutOp.value
        # no index is configured: an index argument changes nothing in either store
        index = self.rng.choice([None, None, None, False, ["n"]])
        return PutOp(self.namespace(), self.rng.choice(KEYS), value, index=index, ttl=ttl)

    def filter(self) -> dict[str, Any] | None:
        if self.rng.random() < 0.3:
            return None
        filter: dict[str, Any] = {}
        for name in self.rng.sample(FIELDS, self.rng.randint(1, 2)):
            roll = self.rng.random()
            if roll < 0.3:
                filter[name] = self.scalar()
            elif roll < 0.35:
                filter[name] = self.rng.choice([[self.scalar()], {"x": self.scalar()}, {}])
            else:
                operators = self.rng.sample(OPERATORS, self.rng.randint(1, 2))
                filter[name] = {op: self.rng.choice([*STRINGS, *NUMBERS]) if self.rng.random() < 0.85 else
                                self.rng.choice([True, None, [self.scalar()], {"x": self.scalar()}])
                                for op in operators}
        return filter

    def search(self) -> SearchOp:
        ns = self.namespace()
        prefix = ns[:self.rng.randint(0, len(ns))]
        # no index is configured: a query changes nothing in either store (newest first all the same)
        return SearchOp(prefix, self.filter(), self.rng.choice([0, 1, 2, 3, 10, 50]), self.rng.choice([0, 0, 1, 2, 5]),
                        query=self.rng.choice([None, None, "tea"]), refresh_ttl=self.rng.random() < 0.5)

    def pattern(self) -> tuple[str, ...]:
        ns = self.namespace()
        if self.rng.random() < 0.5:
            ns = ns[:self.rng.randint(1, len(ns))]
        else:
            ns = ns[-self.rng.randint(1, len(ns)):]
        return tuple("*" if self.rng.random() < 0.25 else label for label in ns)

    def list_namespaces(self) -> ListNamespacesOp:
        conditions = [MatchCondition(kind, self.pattern()) for kind in ("prefix", "suffix")
                      if self.rng.random() < 0.4]
        return ListNamespacesOp(tuple(conditions), self.rng.choice([None, None, 1, 2, 3]),
                                self.rng.choice([0, 1, 3, 100]), self.rng.choice([0, 0, 1, 3]))

    def op(self) -> Op:
        roll = self.rng.random()
        if roll < 0.45:
            put = self.put()
            if self.recent and self.rng.random() < 0.4:  # the same item again: overwritten, deleted, recreated
                put = put._replace(namespace=self.recent[-1][0], key=self.recent[-1][1])
            self.recent = [*self.recent[-3:], (put.namespace, put.key)]
            return put
        if roll < 0.6:
            return GetOp(self.namespace(), self.rng.choice(KEYS), refresh_ttl=self.rng.random() < 0.5)
        if roll < 0.85:
            return self.search()
        return self.list_namespaces()


# -- the comparison -------------------------------------------------------------------------------------------


class Mismatch(AssertionError):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Mismatch(message)


def check_page(page: list[Any], expected: list[tuple[tuple[str, ...], str]], op: SearchOp, state: State,
               store: str) -> None:
    """page is the window [offset, offset + limit) of expected, where items of one update stamp may stand for
    each other, with the model's values, newest first, created_at equal to updated_at exactly where the model's
    creating call is the updating one."""
    stamps = state.stamps[store]
    window = expected[op.offset:op.offset + op.limit]
    got = [(item.namespace, item.key) for item in page]
    check(len(set(got)) == len(got), f"{store}: an item returned twice: {got}")
    check([stamps.get(w, (0, 0))[1] for w in got] == [stamps[w][1] for w in window],
          f"{store}: page {got} is not a page of {expected} (expected {window})")
    check(all(w in stamps and state.items[w] == item.value for w, item in zip(got, page, strict=True)),
          f"{store}: values differ from the model: {[(w, item.value) for w, item in zip(got, page, strict=True)]}")
    check(all(a.updated_at >= b.updated_at for a, b in itertools.pairwise(page)),
          f"{store}: page not newest first")
    check_times(page, state, store)


def check_times(items: list[Any], state: State, store: str) -> None:
    for item in items:
        created, updated = state.stamps[store][(item.namespace, item.key)]
        check((item.created_at == item.updated_at) == (created == updated) and item.created_at <= item.updated_at,
              f"{store}: {item.namespace}/{item.key}: created_at {item.created_at} updated_at {item.updated_at}, "
              f"but created by call {created} and last updated by call {updated}")


@dataclass
class Run:
    memsub: MemsubStore
    peer: Any
    model: Model
    use_async: bool
    rng: random.Random
    state: State = field(default_factory=State)
    stamp: int = 0
    log: list[str] = field(default_factory=list)

    def expire(self, where: tuple[tuple[str, ...], str]) -> None:
        """Moves the item's expiry into the past in both stores (as the superuser), as its time running out
        would."""
        self.log.append(f"expire {where}")
        with self.model.texts.conn.transaction():
            memsub = self.model.texts.conn.execute(
                "update memsub.langgraph_store_items set expires_at = now() - interval '1 minute' "
                "where tenant_id = %s and namespace = %s and key = %s",
                [self.memsub.context.tenant_id, list(where[0]), where[1]])
            peer = self.model.texts.conn.execute(
                "update langgraph.store set expires_at = now() - interval '1 minute' where prefix = %s and key = %s",
                [".".join(where[0]), where[1]])
            check(memsub.rowcount == 1 and peer.rowcount == 1, f"expire {where}: {memsub.rowcount}, {peer.rowcount}")
        self.state.expire(where)

    MARK = "2999-01-01 00:00:00+00"

    def mark_expiries(self) -> None:
        """Sets the expiry of every live item with a time to live, in both stores, to a mark a read that restarts
        it changes."""
        conn = self.model.texts.conn
        with conn.transaction():
            conn.execute("update memsub.langgraph_store_items set expires_at = %s where tenant_id = %s "
                         "and ttl_minutes is not null and expires_at > now()",
                         [self.MARK, self.memsub.context.tenant_id])
            conn.execute("update langgraph.store set expires_at = %s where ttl_minutes is not null "
                         "and expires_at > now()", [self.MARK])

    def refreshed(self) -> dict[str, set[tuple[tuple[str, ...], str]]]:
        """The items of each store whose expiry a read moved off the mark."""
        conn = self.model.texts.conn
        mine = conn.execute("select namespace, key from memsub.langgraph_store_items where tenant_id = %s "
                            "and expires_at > now() and expires_at <> %s",
                            [self.memsub.context.tenant_id, self.MARK]).fetchall()
        theirs = conn.execute("select prefix, key from langgraph.store where expires_at > now() "
                              "and expires_at <> %s", [self.MARK]).fetchall()
        return {"memsub": {(tuple(ns), key) for ns, key in mine},
                "peer": {(tuple(prefix.split(".")), key) for prefix, key in theirs}}

    async def memsub_call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self.use_async:
            return await getattr(self.memsub, "a" + method)(*args, **kwargs)
        return getattr(self.memsub, method)(*args, **kwargs)

    async def single(self, op: Op) -> None:
        """One operation through the stores' public methods."""
        if isinstance(op, PutOp):
            method, args, kwargs = (("delete", (op.namespace, op.key), {}) if op.value is None else
                                    ("put", (op.namespace, op.key, op.value), {"index": op.index, "ttl": op.ttl}))
        elif isinstance(op, GetOp):
            method, args, kwargs = "get", (op.namespace, op.key), {"refresh_ttl": op.refresh_ttl}
        elif isinstance(op, SearchOp):
            method, args, kwargs = "search", (op.namespace_prefix,), {
                "query": op.query, "filter": op.filter, "limit": op.limit, "offset": op.offset,
                "refresh_ttl": op.refresh_ttl}
        else:
            conditions = {c.match_type: c.path for c in op.match_conditions or ()}
            method, args, kwargs = "list_namespaces", (), {
                "prefix": conditions.get("prefix"), "suffix": conditions.get("suffix"), "max_depth": op.max_depth,
                "limit": op.limit, "offset": op.offset}
        self.log.append(f"{method}{args} {kwargs}")
        refused = isinstance(op, SearchOp) and (self.model.refused(op.filter, "contract"),
                                                self.model.refused(op.filter, "peer"))
        watch_refresh = not isinstance(op, PutOp) and self.rng.random() < 0.3
        if watch_refresh:
            self.mark_expiries()
        results = []
        for name, call in (("memsub", lambda: self.memsub_call(method, *args, **kwargs)),
                           ("peer", lambda: asyncio.sleep(0, getattr(self.peer, method)(*args, **kwargs)))):
            try:
                results.append(await call())
            except (InvalidInput, ValueError, TypeError) as error:
                results.append(error)
            if refused and refused[len(results) - 1]:
                check(isinstance(results[-1], Exception), f"{name}: filter {op.filter} not refused")
        self.stamp += 1
        self.compare([op], [results[0]], [results[1]], self.state, self.state)
        if watch_refresh:
            for name, result in zip(("memsub", "peer"), results, strict=True):
                returned = ([result] if isinstance(result, Item) else
                            result if isinstance(op, SearchOp) and isinstance(result, list) else [])
                wanted = {(i.namespace, i.key) for i in returned or () if self.state.ttls[(i.namespace, i.key)]}
                refreshed = self.refreshed()[name]
                check(refreshed == (wanted if getattr(op, "refresh_ttl", False) else set()),
                      f"{name}: the read restarted the time to live of {refreshed}, expected "
                      f"{wanted if getattr(op, 'refresh_ttl', False) else set()}")
        if isinstance(op, PutOp):
            self.state.put(op, self.stamp)

    async def batch(self, ops: list[Op]) -> None:
        """Several operations in one batch of each store."""
        self.log.append(f"batch{ops}")
        try:
            memsub_results: Any = await self.memsub_call("batch", ops)
        except (InvalidInput, ValueError) as error:
            memsub_results = error
        try:
            peer_results: Any = self.peer.batch(ops)
        except (ValueError, TypeError) as error:
            peer_results = error
        self.stamp += 1
        before = copy.deepcopy(self.state)
        refused = [any(self.model.refused(op.filter, flavour) for op in ops if isinstance(op, SearchOp))
                   for flavour in ("contract", "peer")]
        check(isinstance(memsub_results, Exception) == refused[0], f"memsub: batch refused: {memsub_results}")
        check(isinstance(peer_results, Exception) == refused[1], f"peer: batch refused: {peer_results}")
        if refused[0]:
            return  # refused by both (memsub refuses no filter PostgresStore takes): nothing written by either
        peer_only = refused[1]
        if peer_only:
            # refused by PostgresStore alone, for a documented difference: its writes are made without the reads
            self.peer.batch([op for op in ops if isinstance(op, PutOp)])
        # memsub runs the batch in order; PostgresStore runs its reads on the state before the batch
        during = copy.deepcopy(self.state)
        expected_memsub: list[State] = []
        for op in ops:
            expected_memsub.append(copy.deepcopy(during))
            if isinstance(op, PutOp):
                during.put(op, self.stamp)
        # PostgresStore writes only the last put of each key, so a delete followed by a put of the same key
        # leaves the item's created_at as it was; memsub, in order, creates the item anew
        last = {(op.namespace, op.key): op for op in ops if isinstance(op, PutOp)}
        for op in ops:
            if isinstance(op, PutOp):
                self.state.put(op, self.stamp, ("memsub",))
        for op in last.values():
            self.state.put(op, self.stamp, ("peer",))
        written = False
        for i, op in enumerate(ops):
            self.compare([op], [memsub_results[i]], [None if peer_only else peer_results[i]], expected_memsub[i],
                         before, direct=not written and not peer_only, with_peer=not peer_only)
            written = written or isinstance(op, PutOp)
        check(self.state.items == during.items, "the batch's final state")

    def compare(self, ops: list[Op], memsub: list[Any], peer: list[Any], memsub_state: State, peer_state: State,
                direct: bool = True, with_peer: bool = True) -> None:
        for op, mine, theirs in zip(ops, memsub, peer, strict=True):
            if isinstance(op, PutOp):
                check(mine is None and theirs is None, f"put returned {mine!r} / {theirs!r}")
            elif isinstance(op, GetOp):
                for name, item, state in (("memsub", mine, memsub_state), ("peer", theirs, peer_state))[:1 + with_peer]:
                    wanted = state.items.get((op.namespace, op.key))
                    check((item is None) == (wanted is None) and (item is None or (
                        item.value == wanted and item.namespace == op.namespace and item.key == op.key)),
                        f"{name}: get {op.namespace}/{op.key!r}: {item!r}, expected {wanted!r}")
                    if item is not None:
                        check_times([item], state, name)
                if direct:
                    check((mine and (mine.namespace, mine.key, mine.value)) ==
                          (theirs and (theirs.namespace, theirs.key, theirs.value)), "get differs")
            elif isinstance(op, SearchOp):
                if isinstance(mine, Exception) or isinstance(theirs, Exception):
                    check(isinstance(mine, Exception) == self.model.refused(op.filter, "contract"),
                          f"memsub search {op.filter}: {mine!r}")
                    check(not with_peer or isinstance(theirs, Exception) == self.model.refused(op.filter, "peer"),
                          f"peer search {op.filter}: {theirs!r}")
                    continue
                contract = self.model.search(memsub_state, op, "contract")
                check_page(mine, contract, op, memsub_state, "memsub")
                if not with_peer:
                    continue
                peers = self.model.search(peer_state, op, "peer")
                check_page(theirs, peers, op, peer_state, "peer")
                if direct and self.model.search(peer_state, op, "contract") == peers:
                    # no documented difference applies: the same items (ties aside), the same values
                    check(sorted((i.namespace, i.key) for i in mine) == sorted((i.namespace, i.key) for i in theirs)
                          or self.tied(peers, op, peer_state), "search pages differ")
            else:
                # memsub sorts byte by byte; PostgresStore in the database's collation (the same in a C database)
                check(mine == self.model.list_namespaces(memsub_state, op, lambda t: t.encode()),
                      f"memsub: list_namespaces {op}: {mine}")
                if with_peer:
                    check(theirs == self.model.list_namespaces(peer_state, op, self.model.texts.sort_key),
                          f"peer: list_namespaces {op}: {theirs}")
                if direct and self.model.texts.byte_order:
                    check(mine == theirs, f"list_namespaces differ: {mine} / {theirs}")

    @staticmethod
    def tied(expected: list[tuple[tuple[str, ...], str]], op: SearchOp, state: State) -> bool:
        """Whether an update stamp straddles an edge of the page (then either store may return either item)."""
        stamps = [state.stamps["peer"][w][1] for w in expected]
        edges = [op.offset, op.offset + op.limit]
        return any(0 < e < len(stamps) and stamps[e - 1] == stamps[e] for e in edges)


async def run_sequence(run: Run, generator: Generator, length: int) -> None:
    for _ in range(length):
        expiring = [where for where, ttl in run.state.ttls.items() if ttl is not None]
        if expiring and run.rng.random() < 0.05:
            run.expire(run.rng.choice(sorted(expiring)))
        elif run.rng.random() < 0.2:
            await run.batch([generator.op() for _ in range(run.rng.randint(2, 6))])
        else:
            await run.single(generator.op())
    # the end state, all of it, in both
    everything = SearchOp((), None, 1000, 0, refresh_ttl=False)
    await run.single(everything)
    await run.single(ListNamespacesOp(None, None, 1000, 0))


@pytest.mark.parametrize("seed", range(16))
def test_random_sequences_agree_with_postgres_store(db: Any, peer: Any, seed: int) -> None:
    use_async = seed % 2 == 1
    texts = Texts(db.dsn())
    rng = random.Random(seed)

    async def main() -> None:
        pool: Any = async_pool(db.dsn("app")) if use_async else sync_pool(db.dsn("app"))
        if use_async:
            await pool.open()
        try:
            for sequence in range(2):
                clear(peer)
                store = MemsubStore(pool, TenantContext(uuid.uuid4()),
                                    ttl={"refresh_on_read": True})
                run = Run(store, peer, Model(texts), use_async, rng)
                try:
                    await run_sequence(run, Generator(rng), SEQUENCE_LENGTH)
                except Mismatch as mismatch:
                    raise AssertionError(f"seed {seed}, sequence {sequence}: {mismatch}\nafter:\n" +
                                         "\n".join(run.log[-12:])) from None
        finally:
            if use_async:
                await pool.close()
            else:
                pool.close()

    try:
        asyncio.run(main())
    finally:
        texts.conn.close()


# -- invalid input --------------------------------------------------------------------------------------------

OK = PutOp(("ok",), "w", {"v": 1})
# (what, call on a store, who refuses it besides memsub: "both", LangGraph's contract and PostgresStore; "contract",
# the contract though PostgresStore takes it; "peer", PostgresStore (the contract says nothing); "memsub", memsub
# alone, as docs/integrations.md says)
INVALID: list[tuple[str, Callable[[Any], Any], str]] = [
    ("put, empty namespace", lambda s: s.put((), "k", {"v": 1}), "both"),
    ("batch put, empty namespace", lambda s: s.batch([OK, PutOp((), "k", {"v": 1})]), "contract"),
    ("put, label with a period", lambda s: s.put(("a.b",), "k", {"v": 1}), "both"),
    ("batch put, label with a period", lambda s: s.batch([OK, PutOp(("a", "b.c"), "k", {"v": 1})]), "both"),
    ("batch put, empty label", lambda s: s.batch([OK, PutOp(("a", ""), "k", {"v": 1})]), "both"),
    ("batch put, label not a string", lambda s: s.batch([OK, PutOp(("a", 1), "k", {"v": 1})]), "both"),  # type: ignore[arg-type]
    ("put, root label langgraph", lambda s: s.put(("langgraph", "x"), "k", {"v": 1}), "both"),
    ("batch get, label with a period", lambda s: s.batch([OK, GetOp(("a.b",), "k")]), "both"),
    ("batch get, empty label", lambda s: s.batch([OK, GetOp(("a", ""), "k")]), "both"),
    ("batch search, label with a period", lambda s: s.batch([OK, SearchOp(("ok.w",))]), "both"),
    ("batch search, label not a string", lambda s: s.batch([OK, SearchOp((1,))]), "both"),  # type: ignore[arg-type]
    ("batch delete, label with a period", lambda s: s.batch([OK, PutOp(("a.b",), "k", None)]), "both"),
    ("batch list, prefix label with a period",
     lambda s: s.batch([OK, ListNamespacesOp((MatchCondition("prefix", ("ok.w",)),))]), "both"),
    ("batch list, empty suffix label",
     lambda s: s.batch([OK, ListNamespacesOp((MatchCondition("suffix", ("",)),))]), "both"),
    ("get, label with a period", lambda s: s.get(("a.b",), "k"), "both"),
    ("search, empty label", lambda s: s.search(("a", "")), "both"),
    ("list_namespaces, prefix label with a period", lambda s: s.list_namespaces(prefix=("a.b",)), "both"),
    ("delete, empty label", lambda s: s.delete(("",), "k"), "both"),
    ("value a list", lambda s: s.batch([OK, PutOp(("a",), "k", [1, 2])]), "peer"),  # type: ignore[arg-type]
    ("value a string", lambda s: s.put(("a",), "k", "abc"), "peer"),  # type: ignore[arg-type]
    ("value a number", lambda s: s.put(("a",), "k", 5), "peer"),  # type: ignore[arg-type]
    ("value with a key not a string", lambda s: s.batch([OK, PutOp(("a",), "k", {1: "a"})]), "contract"),
    ("value holding NaN", lambda s: s.batch([OK, PutOp(("a",), "k", {"x": float("nan")})]), "both"),
    ("value holding a mapping not JSON", lambda s: s.put(("a",), "k", {"x": MappingProxyType({"y": 1})}), "both"),
    ("unknown operator", lambda s: s.batch([OK, SearchOp(("a",), {"f": {"$in": [1]}})]), "peer"),
    ("unknown operator beside a known one", lambda s: s.search(("a",), filter={"f": {"$gt": 1, "$near": 2}}),
     "peer"),
    ("operator without $ beside one with", lambda s: s.search(("a",), filter={"f": {"$gt": 1, "gt": 2}}), "peer"),
    ("filter not an object", lambda s: s.batch([OK, SearchOp(("a",), ["f"])]), "peer"),  # type: ignore[arg-type]
    ("negative limit", lambda s: s.batch([OK, SearchOp(("a",), None, -1)]), "peer"),
    ("negative offset", lambda s: s.batch([OK, SearchOp(("a",), None, 10, -1)]), "peer"),
    ("list, negative limit", lambda s: s.batch([OK, ListNamespacesOp(None, None, -1)]), "peer"),
    ("list, negative max_depth", lambda s: s.batch([OK, ListNamespacesOp(None, -1)]), "memsub"),
    ("list, max_depth 0", lambda s: s.batch([OK, ListNamespacesOp(None, 0)]), "memsub"),
    ("negative time to live", lambda s: s.batch([OK, PutOp(("a",), "k", {"v": 1}, ttl=-1)]), "memsub"),
]


@pytest.mark.parametrize("what,call,refused_by", INVALID, ids=[case[0] for case in INVALID])
def test_invalid_input_is_refused_at_least_as_strictly_and_writes_nothing(db: Any, peer: Any, what: str,
                                                                         call: Callable[[Any], Any],
                                                                         refused_by: str) -> None:
    """memsub refuses what the contract refuses (a namespace label that is empty, not text or holds a period,
    through the methods and through batch alike, as ``validate_op_namespace`` asks of every store that keys
    namespaces as text) and whatever PostgresStore refuses, with InvalidInput or LangGraph's
    InvalidNamespaceError, and writes nothing, not even the batch's valid put."""
    clear(peer)
    try:
        call(peer)
        peer_refused = False
    except Exception:
        peer_refused = True
    assert peer_refused == (refused_by in ("both", "peer")), f"PostgresStore refused {what}: {peer_refused}"
    pool = sync_pool(db.dsn("app"))
    try:
        store = MemsubStore(pool, TenantContext(uuid.uuid4()))
        with pytest.raises((InvalidInput, InvalidNamespaceError, TypeError)) as refused:
            call(store)
        assert str(refused.value)
        assert store.search((), limit=100) == [] and store.list_namespaces() == []
    finally:
        pool.close()


# -- natural-language search ----------------------------------------------------------------------------------

WORDS = ("green", "tea", "black", "coffee", "morning", "bicycle", "work", "rain")


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def check_ranked(name: str, page: list[Any], window: list[tuple[Any, float | None]], where: str) -> None:
    """page holds the window's items with their scores, in its order, where items of one score may stand for each
    other."""
    wanted = dict(window)
    assert [i.score for i in page] == pytest.approx([score for _, score in window], abs=1e-5), f"{name}: {where}"
    assert len({(i.namespace, i.key) for i in page}) == len(page), f"{name}: {where}"
    for item in page:
        found = (item.namespace, item.key)
        assert found in wanted or item.score is not None, f"{name}: {found} not expected: {where}"
        if item.score is not None:
            assert any(key == found for key, _ in window) or any(
                score is not None and abs(score - item.score) < 1e-5 for _, score in window), f"{name}: {where}"


@pytest.mark.parametrize("seed", range(4))
def test_natural_language_searches_agree_with_postgres_store(db: Any, indexed_peer: Any, seed: int) -> None:
    """Both stores index field "s" with one embedder (cosine); random puts (overwrites, some with index=False,
    some without text at "s") and then searches with a query, a namespace prefix, an equality or $ne filter,
    limit and offset. Each store's page is compared with the scores computed here, and the two pages with each
    other where no documented difference (docs/integrations.md, "Side by side with PostgresStore") applies:

    - PostgresStore keeps an item's vectors when it is written over without text at the indexed field or with
      index=False, and scores it by its old text; memsub replaces an item's vectors with those of the value written
      (none then);
    - PostgresStore leaves an item without vectors out of a query search; memsub lists it after the scored items,
      newest first;
    - PostgresStore reads only the nearest ``2 * limit + 1`` vectors before it skips ``offset``, so a page far
      enough down comes back short or empty; memsub skips ``offset`` of all the matching items.
    """
    rng = random.Random(1000 + seed)
    generator = Generator(rng)
    pool = sync_pool(db.dsn("app"))
    mine_text: dict[tuple[tuple[str, ...], str], str | None] = {}  # the text memsub's vectors are of (None: none)
    peer_text: dict[tuple[tuple[str, ...], str], str | None] = {}  # the text PostgresStore's vectors are of
    values: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
    written: dict[tuple[tuple[str, ...], str], int] = {}
    try:
        store = MemsubStore(pool, TenantContext(uuid.uuid4()), index={"dims": DIMS, "embed": embed, "fields": ["s"]})
        log: list[str] = []
        for step in range(40):
            where = (generator.namespace(), rng.choice(KEYS))
            value: dict[str, Any] = {"n": rng.choice([1, 2, 3])}
            if rng.random() < 0.85:
                value["s"] = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
            index = False if rng.random() < 0.15 else None
            log.append(f"put {where} {value} index={index}")
            for side in (store, indexed_peer):
                side.put(*where, value, index=index)
            text = value.get("s") if index is None else None
            values[where], written[where], mine_text[where] = value, step, text
            peer_text[where] = text or peer_text.get(where)
        for _ in range(40):
            ns = generator.namespace()
            prefix = ns[:rng.randint(0, len(ns))]
            wanted_n = rng.choice([1, 2])
            filter = rng.choice([None, None, {"n": wanted_n}, {"n": {"$ne": wanted_n}}])
            query = " ".join(rng.sample(WORDS, rng.randint(1, 2)))
            limit, offset = rng.choice([1, 2, 3, 10]), rng.choice([0, 0, 1, 3, 5])
            mine = store.search(prefix, query=query, filter=filter, limit=limit, offset=offset)
            theirs = indexed_peer.search(prefix, query=query, filter=filter, limit=limit, offset=offset)
            vector = embed([query])[0]

            def score(text: str | None, vector: list[float] = vector) -> float | None:
                return None if text is None else cosine(embed([text])[0], vector)

            equal = filter is not None and filter["n"] == wanted_n  # {"n": wanted_n}, else {"n": {"$ne": ...}}
            matching = [w for w, v in values.items() if w[0][:len(prefix)] == prefix and (
                filter is None or (v["n"] == wanted_n) == equal)]
            scored = sorted(((w, score(mine_text[w])) for w in matching if mine_text[w] is not None),
                            key=lambda pair: -pair[1])  # type: ignore[operator]
            unscored = sorted(((w, None) for w in matching if mine_text[w] is None), key=lambda pair: -written[pair[0]])
            expected_mine = [*scored, *unscored][offset:offset + limit]
            peers = sorted(((w, score(peer_text[w])) for w in matching if peer_text[w] is not None),
                           key=lambda pair: -pair[1])  # type: ignore[operator]
            expected_peer = peers[:2 * limit + 1][offset:offset + limit]
            where = f"seed {seed}: search {prefix} {query!r} {filter} {limit} {offset}\n" + "\n".join(log)
            check_ranked("memsub", mine, expected_mine, where)
            check_ranked("peer", theirs, expected_peer, where)
            assert [(i.namespace, i.key) for i in mine if i.score is None] == \
                [w for w, score in expected_mine if score is None], where
            if expected_mine == expected_peer:  # no documented difference in this page: the same page
                assert [i.score for i in mine] == pytest.approx([i.score for i in theirs], abs=1e-5), where
                assert {(i.namespace, i.key) for i in mine} == {(i.namespace, i.key) for i in theirs} or \
                    len({round(s, 5) for _, s in scored if s is not None}) < len(scored), where
    finally:
        pool.close()
