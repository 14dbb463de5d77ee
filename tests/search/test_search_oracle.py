"""memsub's searches against an exact oracle: random searches with random filters over small data sets written by
ordinary logins (memsub_app, and a tenant_admin login for app: and project: memory) in two tenants, several
organizations, users and sessions, each answer compared with what the documentation says it is, computed here by
brute force. The searches run as memsub_app, memsub_analyst or a tenant_admin context (which passes the
organization and scope rules, never expiry), in session time zones from UTC-12 to UTC+14.

- ``semantic_search`` (docs/retrieval.md, "Semantic search"): the k visible, unexpired embeddings of the type
  nearest to the query by cosine distance, ties by embedding id, after the packet filters (thread, all tags,
  packet type, [since, until), min importance); ``rank_by combined`` re-ranks the 4k nearest by
  ``combined_score``. ``mode exact`` is recall 1, and at these sizes ``auto`` scans exactly too; ``approximate``
  returns k allowed rows when k exist, in order.
- ``hybrid_search`` ("Hybrid search"): the vector leg is the search above, the text leg the visible, unexpired
  rows whose words match, by ts_rank_cd (ties by id), each leg cut to its candidates; score = the weights over
  rrf_k + rank, times the importance boost. In the content space the text leg also holds the chunks of latest
  document versions without a vector; a superseded version's chunks and vectors are never served.
- ``memory_search`` (sql/610, docs/mcp.md): the latest version of each key the caller may see (app: and project:
  for the tenant, user:<id> for that user, session:<id> for that session), under the prefix of whole segments,
  when it is live; never a superseded or deleted version.
- ``search_semantic_memory``, ``retrieve_reflections``: their documented filters and scores, exactly.
- ``langgraph_store_search``, ``langgraph_store_list_namespaces`` and ``get_thread``: every page, read by limit
  and offset (or cursor), is the slice of the whole answer: no gaps, no repeats, nothing expired.
- ``adk_memory_search`` by words: the memories sharing a word with the query, by the share of its words, newest
  first; a word in either Unicode composition is one word.
- ``edges_as_of``: the edges whose validity window holds the time, not expired, by source, type and target.

The vectors are 384-d with four small integer coordinates and zeros elsewhere: every sum pgvector takes is exact
in single precision, so the cosine distance computed here is the server's to the bit, and equal vectors (there
are many) tie exactly. Tags hold the characters an array literal quotes (a comma, a quote, braces, a backslash,
the word NULL), since a kept search plan takes its values as text.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import time
import unicodedata
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.rows import dict_row

from helpers import TENANT_A, TENANT_B, set_context, soak_factor

DIMENSION = 384
ORG_1 = uuid.UUID("00000000-0000-0000-0001-0000000000a1")
ORG_2 = uuid.UUID("00000000-0000-0000-0001-0000000000a2")
USER_1 = uuid.UUID("00000000-0000-0000-0002-0000000000b1")
USER_2 = uuid.UUID("00000000-0000-0000-0002-0000000000b2")
TENANTS = (TENANT_A, TENANT_B)
ORGS = (None, ORG_1, ORG_2)
USERS = (None, USER_1, USER_2)
SESSIONS = (None, "s1", "s2")
TAGS = ("red", "a,b", "NULL", "q\"t {x}", "back\\slash")
PACKET_TYPES = ("note", "event", "insight")
WORDS = ("harbor", "crane", "ledger", "quartz", "falcon", "meadow")
IMPORTANCES = (0.1, 0.3, 0.5, 0.7, 0.9)
EPOCH = datetime(1900, 1, 1, tzinfo=UTC)  # every packet is last active over 1000 half-lives ago: recency 0
EXAMPLES = 60 * soak_factor()
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def head_vector(head: tuple[int, ...]) -> list[float]:
    return [float(x) for x in head] + [0.0] * (DIMENSION - len(head))


def literal(head: tuple[int, ...]) -> str:
    return "[" + ",".join(str(x) for x in head_vector(head)) + "]"


def cosine_distance(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """pgvector's cosine distance: single-precision sums (exact here), the quotient in double precision."""
    dot = float(sum(x * y for x, y in zip(a, b, strict=True)))
    norms = float(sum(x * x for x in a)) * float(sum(y * y for y in b))
    similarity = max(-1.0, min(1.0, dot / math.sqrt(norms)))
    return 1.0 - similarity


ZONES = ("UTC", "Asia/Tokyo", "America/Los_Angeles", "Pacific/Kiritimati", "Etc/GMT+12")
"""Session time zones the writes and searches run in: no answer may depend on them."""


def in_zone(conn: psycopg.Connection[Any], zone: str) -> None:
    conn.execute("select pg_catalog.set_config('timezone', %s, true)", [zone])


heads = st.tuples(*[st.integers(-2, 2)] * 4).filter(any)


@dataclass(frozen=True)
class Reader:
    tenant: uuid.UUID
    org: uuid.UUID | None
    user: uuid.UUID | None
    session: str | None
    zone: str = "UTC"
    # app, analyst, tenant_admin (a tenant_admin context) or plain (the tenant admin's login in a context without
    # the role, on the same connection: a plan it kept must not carry the admin's pass over)
    login: str = "app"

    @property
    def admin(self) -> bool:
        return self.login == "tenant_admin"

    @property
    def roles(self) -> list[str]:
        return ["tenant_admin"] if self.admin else []


@dataclass
class Embedding:
    embedding_id: uuid.UUID
    packet_id: uuid.UUID
    embedding_type: str
    chunk_index: int
    head: tuple[int, ...]
    words: str


@dataclass
class Packet:
    packet_id: uuid.UUID
    tenant: uuid.UUID
    org: uuid.UUID | None
    user: uuid.UUID | None
    session: str | None
    scope: str
    packet_type: str
    thread_id: uuid.UUID
    tags: list[str]
    timestamp: datetime
    ttl: datetime | None
    importance: float
    embeddings: list[Embedding] = field(default_factory=list)

    def visible_to(self, reader: Reader, now: datetime) -> bool:
        if self.tenant != reader.tenant or (self.ttl is not None and self.ttl <= now):
            return False
        if reader.admin:
            return True
        if self.org is not None and self.org != reader.org:
            return False
        return (self.scope == "shared"
                or (self.scope == "l-private" and self.user == reader.user)
                or (self.scope == "cursor" and (self.user == reader.user
                                                or (self.session is not None and self.session == reader.session))))


def wait_until_expired(expiring: datetime) -> None:
    """Returns once rows written to expire at ``expiring`` have expired: a second past it, so that the server's
    clock has passed it too and the searches that follow find none of them."""
    while datetime.now(UTC) <= expiring + timedelta(seconds=1):
        time.sleep(0.2)


def thread_of(tenant: uuid.UUID, org: uuid.UUID | None, n: int) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_OID, f"{tenant}/{org}/{n}")


def build_packets(db: Any, seed: int = 56) -> list[Packet]:
    """About 160 packets of random writers (tenant, org, user, session), scopes, types, threads, tags, times,
    expiries and importances, each with one to three embeddings of random small vectors (content, some summary)
    and chunk texts of a few words; written by memsub_app logins."""
    rng = random.Random(seed)
    packets: list[Packet] = []
    # A packet cannot be written already expired with embeddings (there would be nothing to fan out): the
    # expiring ones live for a few seconds, and the searches run once they have passed.
    expiring = datetime.now(UTC) + timedelta(seconds=4)
    with db.connect("app") as conn:
        for n in range(160):
            tenant, org = rng.choice(TENANTS), rng.choice(ORGS)
            user, session = rng.choice(USERS), rng.choice(SESSIONS)
            scope = "shared" if user is None else rng.choice(["shared", "shared", "l-private", "cursor"])
            timestamp = EPOCH + timedelta(days=rng.randrange(20), hours=rng.randrange(24),
                                          microseconds=rng.choice([0, 0, 1, 999_999]))
            ttl = rng.choice([None, None, None, expiring, datetime(2200, 1, 1, tzinfo=UTC)])
            packet = Packet(uuid.uuid4(), tenant, org, user, session, scope, rng.choice(PACKET_TYPES),
                            thread_of(tenant, org, rng.randrange(2)), sorted(rng.sample(TAGS, rng.randrange(3))),
                            timestamp, ttl, rng.choice(IMPORTANCES))
            elements = []
            for chunk in range(rng.randint(1, 2)):
                head = tuple(rng.randint(-2, 2) for _ in range(4))
                if not any(head):
                    head = (1, 0, 0, 0)
                words = " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))
                elements.append({"embedding_type": "content", "vector": head_vector(head), "chunk_index": chunk,
                                 "chunk_text": words})
                packet.embeddings.append(Embedding(uuid.UUID(int=0), packet.packet_id, "content", chunk, head, words))
            if rng.random() < 0.4:
                head = (rng.randint(-2, 2), rng.randint(1, 2), 0, rng.randint(-2, 2))
                elements.append({"embedding_type": "summary", "vector": head_vector(head), "chunk_text": "summary"})
                packet.embeddings.append(Embedding(uuid.UUID(int=0), packet.packet_id, "summary", 0, head, "summary"))
            envelope = {"packet_id": str(packet.packet_id), "packet_type": packet.packet_type,
                        "payload": {"n": n}, "timestamp": timestamp.isoformat(), "scope": scope,
                        "thread_id": str(packet.thread_id), "tags": packet.tags, "importance_score": packet.importance,
                        "memory": {"embeddings": elements}}
            if ttl is not None:
                envelope["ttl"] = ttl.isoformat()
            if session is not None:
                envelope["session_id"] = session
            with conn.transaction():
                set_context(conn, tenant, org, user, session=session)
                in_zone(conn, rng.choice(ZONES))
                conn.execute("select memsub.write_packet(%s::jsonb)", [json.dumps(envelope)])
            packets.append(packet)
    # The embeddings' ids, as the superuser reads them (ground truth of what was stored).
    with db.connect() as su:
        stored = {(p, t, c): e for e, p, t, c in su.execute(
            "select embedding_id, packet_id, embedding_type, chunk_index from memsub.memory_embeddings").fetchall()}
    for packet in packets:
        for embedding in packet.embeddings:
            embedding.embedding_id = stored[(packet.packet_id, embedding.embedding_type, embedding.chunk_index)]
    wait_until_expired(expiring)
    return packets


@pytest.fixture(scope="module")
def world(server: Any, template_db_384: str) -> Iterator[tuple[Any, list[Packet]]]:
    from conftest import cloned_database

    with cloned_database(server, template_db_384, "memsub_oracle") as database:
        packets = build_packets(database)
        with database.connect() as su:
            su.execute("analyze")
            su.commit()
        yield database, packets


@pytest.fixture(scope="module")
def logins(world: tuple[Any, list[Packet]]) -> Iterator[dict[str, psycopg.Connection[Any]]]:
    """One connection of each reading login, kept for the module (so the searches' kept plans are used too)."""
    connections = {login: world[0].connect(login) for login in ("app", "analyst", "tenant_admin")}
    try:
        for conn in connections.values():
            conn.row_factory = dict_row  # type: ignore[assignment]
        yield connections | {"plain": connections["tenant_admin"]}
    finally:
        for conn in connections.values():
            conn.close()


@pytest.fixture(scope="module")
def app(logins: dict[str, psycopg.Connection[Any]]) -> psycopg.Connection[Any]:
    return logins["app"]


readers = st.builds(Reader, st.sampled_from(TENANTS), st.sampled_from(ORGS), st.sampled_from(USERS),
                    st.sampled_from(SESSIONS), st.sampled_from(ZONES),
                    st.sampled_from(["app", "app", "analyst", "tenant_admin", "plain"]))
times = st.builds(lambda days, hours, micro: EPOCH + timedelta(days=days, hours=hours, microseconds=micro),
                  st.integers(-1, 21), st.integers(0, 23), st.sampled_from([0, 1, 999_999]))


@st.composite
def semantic_filters(draw: st.DrawFn) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if draw(st.booleans()):
        found["thread_id"] = thread_of(draw(st.sampled_from(TENANTS)), draw(st.sampled_from(ORGS)),
                                       draw(st.integers(0, 1)))
    if draw(st.integers(0, 3)) == 0:
        found["tags"] = draw(st.lists(st.sampled_from(TAGS), min_size=1, max_size=2, unique=True))
    if draw(st.integers(0, 2)) == 0:
        found["packet_type"] = draw(st.sampled_from(PACKET_TYPES))
    if draw(st.integers(0, 2)) == 0:
        found["since"] = draw(times)
    if draw(st.integers(0, 2)) == 0:
        until = draw(times)
        if "since" in found and until <= found["since"]:
            until = found["since"] + timedelta(hours=1)
        found["until"] = until
    if draw(st.integers(0, 2)) == 0:
        found["min_importance"] = draw(st.sampled_from((0.0, *IMPORTANCES, 1.0)))
    return found


def passes(packet: Packet, filters: dict[str, Any]) -> bool:
    return ((filters.get("thread_id") is None or packet.thread_id == filters["thread_id"])
            and set(filters.get("tags") or ()) <= set(packet.tags)
            and filters.get("packet_type") in (None, packet.packet_type)
            and (filters.get("since") is None or packet.timestamp >= filters["since"])
            and (filters.get("until") is None or packet.timestamp < filters["until"])
            and (filters.get("min_importance") is None or packet.importance >= filters["min_importance"]))


def server_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("select now() as now").fetchone()
    assert row is not None
    return row["now"]  # type: ignore[call-overload,no-any-return]


def visible_embeddings(packets: list[Packet], reader: Reader, embedding_type: str, now: datetime,
                       filters: dict[str, Any]) -> list[tuple[Embedding, Packet]]:
    return [(e, p) for p in packets if p.visible_to(reader, now) and passes(p, filters)
            for e in p.embeddings if e.embedding_type == embedding_type]


def combined(distance: float, importance: float) -> float:
    return 0.7 * (1 - distance / 2) + 0.2 * importance  # recency 0: last active in 1900


def assert_ranked(got: list[tuple[uuid.UUID, float]], expected: list[tuple[uuid.UUID, float]], what: str) -> None:
    """The same ids in the same order; where the oracle's scores tie within rounding (1e-12), any order of the
    tied rows, and at the cut any of them; rows of the same score as returned come by id."""
    assert len(got) == len(expected), f"{what}: {len(got)} rows, expected {len(expected)}"
    for (_, got_score), (_, want_score) in zip(got, expected, strict=True):
        assert abs(got_score - want_score) <= 1e-12, f"{what}: score {got_score} where {want_score} was due"
    groups: dict[float, tuple[set[uuid.UUID], set[uuid.UUID]]] = {}
    for (got_id, _), (want_id, want_score) in zip(got, expected, strict=True):
        key = round(want_score, 11)
        groups.setdefault(key, (set(), set()))
        groups[key][0].add(got_id)
        groups[key][1].add(want_id)
    # Rows of one score (to the bit) come by id.
    for (first_id, first_score), (second_id, second_score) in itertools.pairwise(got):
        assert first_score != second_score or first_id < second_id, f"{what}: a tie at {first_score} not by id"
    last = round(expected[-1][1], 11) if expected else None
    for key, (got_ids, want_ids) in groups.items():
        if key != last:
            assert got_ids == want_ids, f"{what}: at score {key} got {got_ids}, expected {want_ids}"


@FUZZ
@given(reader=readers, query=heads, k=st.integers(1, 30), filters=semantic_filters(),
       embedding_type=st.sampled_from(["content", "summary"]), rank_by=st.sampled_from(["distance", "combined"]),
       mode=st.sampled_from(["exact", "auto", "approximate"]))
def test_semantic_search_is_the_exact_answer(world, logins, reader, query, k, filters, embedding_type, rank_by, mode):
    app = logins[reader.login]
    _, packets = world
    named = "".join(f", p_{name} => %({name})s" for name in filters)
    # The named arguments are the filters' fixed names; every value is a parameter.
    statement = ("select embedding_id, packet_id, distance, importance_score, combined_score, method"  # noqa: S608
                 " from memsub.semantic_search(%(q)s::vector, %(k)s, %(t)s, p_rank_by => %(r)s, p_mode => %(m)s"
                 f"{named})")
    with app.transaction():
        set_context(app, reader.tenant, reader.org, reader.user, reader.roles, reader.session)
        in_zone(app, reader.zone)
        now = server_now(app)
        found = app.execute(statement, {"q": literal(query), "k": k, "t": embedding_type, "r": rank_by, "m": mode,
                                        **filters}).fetchall()
    candidates = sorted(((cosine_distance(query, e.head), e.embedding_id, p) for e, p in
                         visible_embeddings(packets, reader, embedding_type, now, filters)),
                        key=lambda c: (c[0], c[1]))
    if mode == "approximate":
        # The walk (or the exact scan after a short walk): k rows when k are allowed, each of them allowed, in
        # the order asked for.
        allowed = {i: (d, p) for d, i, p in candidates}
        assert len(found) == min(k, len(candidates))
        assert {r["embedding_id"] for r in found} <= set(allowed)
        for r in found:
            assert r["distance"] == allowed[r["embedding_id"]][0]
        keys = [(r["distance"], r["embedding_id"]) if rank_by == "distance" else (-r["combined_score"],
                                                                                  r["embedding_id"]) for r in found]
        assert keys == sorted(keys)
        return
    assert {r["method"] for r in found} <= {"exact"}, "a data set this small is scanned exactly"
    if rank_by == "distance":
        expected = [(i, d) for d, i, _ in candidates[:k]]
        assert [(r["embedding_id"], r["distance"]) for r in found] == expected
    else:
        pool = sorted(candidates[:min(1000, 4 * k)], key=lambda c: (-combined(c[0], c[2].importance), c[1]))
        expected = [(i, combined(d, p.importance)) for d, i, p in pool[:k]]
        assert_ranked([(r["embedding_id"], r["combined_score"]) for r in found], expected, "combined")
    by_id = {e.embedding_id: p for p in packets for e in p.embeddings}
    for row in found:
        assert row["packet_id"] == by_id[row["embedding_id"]].packet_id
        assert row["importance_score"] == by_id[row["embedding_id"]].importance


@st.composite
def word_queries(draw: st.DrawFn) -> tuple[str, Any]:
    """A websearch query and the predicate on a chunk's words it stands for."""
    a, b = draw(st.lists(st.sampled_from(WORDS), min_size=2, max_size=2, unique=True))
    kind = draw(st.sampled_from(["one", "and", "or", "not"]))
    if kind == "one":
        return a, lambda words: a in words
    if kind == "and":
        return f"{a} {b}", lambda words: a in words and b in words
    if kind == "or":
        return f"{a} or {b}", lambda words: a in words or b in words
    return f"{a} -{b}", lambda words: a in words and b not in words


@FUZZ
@given(reader=readers, query=heads, words=word_queries(), k=st.integers(1, 30),
       leg=st.sampled_from(["vector", "text"]), rrf_k=st.integers(0, 100))
def test_hybrid_search_with_one_leg_is_the_exact_answer(world, logins, reader, query, words, k, leg, rrf_k):
    app = logins[reader.login]
    _, packets = world
    text, matches = words
    with app.transaction():
        set_context(app, reader.tenant, reader.org, reader.user, reader.roles, reader.session)
        in_zone(app, reader.zone)
        now = server_now(app)
        found = app.execute(
            "select embedding_id, packet_id, score, vector_rank, text_rank, distance, text_score"
            " from memsub.hybrid_search(%s, %s::vector, %s, p_rrf_k => %s)",
            [text if leg == "text" else None, literal(query) if leg == "vector" else None, k, rrf_k]).fetchall()
    visible = visible_embeddings(packets, reader, "content", now, {})
    if leg == "vector":
        ranked = sorted((cosine_distance(query, e.head), e.embedding_id) for e, _ in visible)[:k]
        assert [(r["embedding_id"], r["distance"], r["vector_rank"], r["text_rank"]) for r in found] == [
            (i, d, n, None) for n, (d, i) in enumerate(ranked, 1)]
        assert [r["score"] for r in found] == [1.0 / (rrf_k + n) for n in range(1, len(ranked) + 1)]
        return
    matching = {e.embedding_id for e, _ in visible if matches(e.words.split())}
    assert len(found) == min(k, len(matching)), f"{text!r}: {len(found)} rows of {len(matching)}"
    assert {r["embedding_id"] for r in found} <= matching
    # Best by ts_rank_cd first, ties by id; the rank is the position, the score 1 / (rrf_k + rank).
    order = [(-r["text_score"], r["embedding_id"]) for r in found]
    assert order == sorted(order)
    assert [(r["text_rank"], r["vector_rank"], r["score"]) for r in found] == [
        (n, None, 1.0 / (rrf_k + n)) for n in range(1, len(found) + 1)]
    # The rows left out rank no better than the last one returned.
    if found and len(matching) > len(found):
        rest = matching - {r["embedding_id"] for r in found}
        with app.transaction():
            set_context(app, reader.tenant, reader.org, reader.user, reader.roles, reader.session)
            in_zone(app, reader.zone)
            scores = app.execute(
                "select embedding_id, ts_rank_cd(search_tsv, memsub._words_query('english', %s)) as s"
                " from memsub.memory_embeddings where embedding_id = any(%s)", [text, list(rest)]).fetchall()
        assert len(scores) == len(rest)
        assert all((-r["s"], r["embedding_id"]) > order[-1] for r in scores)


@dataclass
class MemoryVersion:
    id: uuid.UUID
    version: int
    head: tuple[int, ...] | None
    words: str
    deleted: bool = False


MEMORY_KEYS = ("k1", "k2", "k3")


def writable_namespaces(user: uuid.UUID | None, session: str | None) -> list[str]:
    if user is None and session is None:  # the tenant's administrator
        return ["app:demo", "app:demo:sub", "app:demox", "project:p1"]
    found = []
    if user is not None:
        found += [f"user:{user}", f"user:{user}:notes"]
    if session is not None:
        found += [f"session:{session}", f"session:{session}:scratch"]
    return found


def build_memory(db: Any, seed: int = 57) -> dict[tuple[uuid.UUID, str, str], list[MemoryVersion]]:
    """Random writes (a quarter without a vector), overwrites and deletes of keys in user:, session:, app: and
    project: namespaces of both tenants, by users and sessions (memsub_app) and the tenant's administrator."""
    rng = random.Random(seed)
    model: dict[tuple[uuid.UUID, str, str], list[MemoryVersion]] = {}
    with db.connect("app") as app, db.connect("tenant_admin") as admin:
        for _ in range(260):
            tenant = rng.choice(TENANTS)
            user, session = rng.choice(USERS), rng.choice(SESSIONS)
            admin_writes = user is None and session is None
            conn = admin if admin_writes else app
            namespace = rng.choice(writable_namespaces(user, session))
            key = rng.choice(MEMORY_KEYS)
            versions = model.setdefault((tenant, namespace, key), [])
            live = bool(versions) and not versions[-1].deleted
            with conn.transaction():
                set_context(conn, tenant, None, user, ["tenant_admin"] if admin_writes else [], session)
                in_zone(conn, rng.choice(ZONES))
                if live and rng.random() < 0.2:
                    row = conn.execute("select id, version from memsub.memory_delete(%s, %s, %s)",
                                       [namespace, key, versions[-1].version]).fetchone()
                    assert row is not None
                    for version in versions:
                        version.deleted = True
                    versions.append(MemoryVersion(row[0], row[1], None, "", True))
                    continue
                head = None if rng.random() < 0.25 else tuple(rng.randint(-2, 2) for _ in range(4))
                if head is not None and not any(head):
                    head = (0, 0, 1, 0)
                words = " ".join(rng.choices(WORDS, k=rng.randint(1, 3)))
                row = conn.execute(
                    "select id, version from memsub.memory_write(%s, %s, %s::jsonb, %s, p_embedding => %s::vector)",
                    [namespace, key, json.dumps({"text": words}), versions[-1].version if versions else None,
                     None if head is None else literal(head)]).fetchone()
                assert row is not None
                versions.append(MemoryVersion(row[0], row[1], head, words))
    return model


@pytest.fixture(scope="module")
def memory(world: tuple[Any, list[Packet]]) -> dict[tuple[uuid.UUID, str, str], list[MemoryVersion]]:
    return build_memory(world[0])


def memory_visible(namespace: str, reader: Reader) -> bool:
    kind, owner = namespace.split(":")[:2]
    return (reader.admin or kind in ("app", "project")
            or (kind == "user" and reader.user is not None and owner == str(reader.user))
            or (kind == "session" and owner == reader.session))


def under(namespace: str, prefix: str | None) -> bool:
    return prefix is None or namespace == prefix or namespace.startswith(prefix + ":")


memory_prefixes = st.sampled_from([None, "user", f"user:{USER_1}", f"user:{USER_2}:notes", "session", "session:s1",
                                   "session:s2:scratch", "app", "app:demo", "app:dem", "app:demo:sub", "project",
                                   "project:p1"])


@FUZZ
@given(reader=readers, query=heads, words=word_queries(), k=st.integers(1, 20), prefix=memory_prefixes,
       leg=st.sampled_from(["vector", "text"]), rrf_k=st.integers(0, 100))
def test_memory_search_with_one_leg_is_the_exact_answer(logins, memory, reader, query, words, k, prefix, leg, rrf_k):
    app = logins[reader.login]
    text, matches = words
    with app.transaction():
        set_context(app, reader.tenant, reader.org, reader.user, reader.roles, reader.session)
        in_zone(app, reader.zone)
        found = app.execute(
            "select id, namespace, key, version, score, vector_rank, text_rank, distance, text_score"
            " from memsub.memory_search(%s, %s::vector, %s, %s, %s)",
            [text if leg == "text" else None, literal(query) if leg == "vector" else None, k, prefix,
             rrf_k]).fetchall()
    # The latest version of each key, when it is live, visible and under the prefix: never a superseded or
    # deleted one.
    current = {(namespace, key): versions[-1] for (tenant, namespace, key), versions in memory.items()
               if tenant == reader.tenant and not versions[-1].deleted and memory_visible(namespace, reader)
               and under(namespace, prefix)}
    if leg == "vector":
        ranked = sorted((cosine_distance(query, v.head), v.id) for v in current.values() if v.head is not None)[:k]
        assert [(r["id"], r["distance"], r["vector_rank"], r["text_rank"], r["score"]) for r in found] == [
            (i, d, n, None, 1.0 / (rrf_k + n)) for n, (d, i) in enumerate(ranked, 1)]
    else:
        matching = {v.id for (_, key), v in current.items() if matches(v.words.split())}
        assert len(found) == min(k, len(matching)), f"{text!r} under {prefix}: {len(found)} of {len(matching)}"
        assert {r["id"] for r in found} <= matching
        order = [(-r["text_score"], r["id"]) for r in found]
        assert order == sorted(order)
        assert [(r["text_rank"], r["vector_rank"], r["score"]) for r in found] == [
            (n, None, 1.0 / (rrf_k + n)) for n in range(1, len(found) + 1)]
    versions = {v.id: v for (tenant, _, _), vs in memory.items() if tenant == reader.tenant for v in vs}
    for row in found:
        assert memory_visible(row["namespace"], reader) and under(row["namespace"], prefix)
        assert current[(row["namespace"], row["key"])].version == row["version"] == versions[row["id"]].version


@dataclass
class StoreItem:
    tenant: uuid.UUID
    org: uuid.UUID | None
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    vectors: list[tuple[int, ...]]
    expiring: bool
    updated_at: datetime | None = None


STORE_NAMESPACES = [("docs",), ("docs", "alpha"), ("docs", "beta"), ("docs", "alpha", "deep"), ("users", "alpha"),
                    ("usersx",)]


def build_store(db: Any, seed: int = 58) -> list[StoreItem]:
    """Random puts, overwrites and deletes of LangGraph store items of both tenants and three contexts (the
    tenant-wide one and two organizations), some with vectors of one or two fields (a few of another
    dimension), some expiring within seconds; the live ones with their updated_at as stored."""
    rng = random.Random(seed)
    items: dict[tuple[uuid.UUID, tuple[str, ...], str], StoreItem] = {}
    expiring = datetime.now(UTC) + timedelta(seconds=3)
    with db.connect("app") as app:
        for _n in range(150):
            tenant, namespace, key = rng.choice(TENANTS), rng.choice(STORE_NAMESPACES), f"k{rng.randrange(12)}"
            old = items.get((tenant, namespace, key))
            org = old.org if old is not None else rng.choice(ORGS)
            with app.transaction():
                set_context(app, tenant, org, rng.choice(USERS))
                in_zone(app, rng.choice(ZONES))
                if old is not None and rng.random() < 0.15:
                    app.execute("select memsub.langgraph_store_put(%s, %s, null)", [list(namespace), key])
                    del items[(tenant, namespace, key)]
                    continue
                value: dict[str, Any] = {"color": rng.choice(TAGS), "word": rng.choice(WORDS)}
                if rng.random() < 0.8:
                    value["n"] = rng.randrange(10)
                vectors = [tuple(rng.randint(-2, 2) for _ in range(rng.choice([4, 4, 4, 3])))
                           for _ in range(rng.choice([0, 1, 1, 2]))]
                vectors = [v if any(v) else (1, *v[1:]) for v in vectors]
                item = StoreItem(tenant, org, namespace, key, value, vectors, rng.random() < 0.15)
                app.execute("select memsub.langgraph_store_put(%s, %s, %s::jsonb, %s, %s, %s::vector[])",
                            [list(namespace), key, json.dumps(value), 0.05 if item.expiring else None,
                             [f"f{i}" for i in range(len(vectors))],
                             ["[" + ",".join(map(str, v)) + "]" for v in vectors]])
                items[(tenant, namespace, key)] = item
    wait_until_expired(expiring)
    with db.connect() as su:
        for tenant, namespace, key, updated_at in su.execute(
                "select tenant_id, namespace, key, updated_at from memsub.langgraph_store_items").fetchall():
            items[(tenant, tuple(namespace), key)].updated_at = updated_at
    return [item for item in items.values() if not item.expiring]


@pytest.fixture(scope="module")
def store(world: tuple[Any, list[Packet]]) -> list[StoreItem]:
    return build_store(world[0])


def store_matches(value: dict[str, Any], conditions: dict[str, Any]) -> bool:
    for name, condition in conditions.items():
        actual = value.get(name)
        if not isinstance(condition, dict):
            if actual != condition:
                return False
            continue
        for operator, operand in condition.items():
            if operator == "$eq":
                ok = actual == operand
            elif operator == "$ne":
                ok = actual is not None and actual != operand
            else:
                ok = (actual is not None and type(actual) is type(operand)
                      and {"$gt": actual > operand, "$gte": actual >= operand, "$lt": actual < operand,
                           "$lte": actual <= operand}[operator])
            if not ok:
                return False
    return True


store_filters = st.one_of(
    st.none(), st.just({}),
    st.fixed_dictionaries({"color": st.sampled_from(TAGS)}),
    st.fixed_dictionaries({"color": st.sampled_from(TAGS), "word": st.sampled_from(WORDS)}),
    st.fixed_dictionaries({"n": st.integers(0, 9)}),
    st.fixed_dictionaries({"n": st.dictionaries(st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$eq", "$ne"]),
                                                st.integers(-1, 10), min_size=1, max_size=2)}),
    st.fixed_dictionaries({"color": st.fixed_dictionaries({"$ne": st.sampled_from(TAGS)}),
                           "n": st.fixed_dictionaries({"$gte": st.integers(0, 9)})}),
    st.fixed_dictionaries({"word": st.fixed_dictionaries({"$lt": st.sampled_from(WORDS)})}),
    st.just({"missing": {"$ne": 1}}))
store_prefixes = st.sampled_from([(), ("docs",), ("docs", "alpha"), ("docs", "alpha", "deep"), ("users",),
                                  ("user",), ("docs", "gamma")])


store_readers = readers.filter(lambda r: r.login != "analyst")  # the application's functions (docs/security.md)


def store_score(item: StoreItem, query: tuple[int, ...], distance: str) -> float | None:
    scores = []
    for vector in item.vectors:
        if len(vector) != len(query):
            continue
        if distance == "cosine":
            scores.append(1 - cosine_distance(vector, query))
        elif distance == "l2":
            scores.append(-math.sqrt(float(sum((a - b) ** 2 for a, b in zip(vector, query, strict=True)))))
        else:
            scores.append(float(sum(a * b for a, b in zip(vector, query, strict=True))))
    return max(scores) if scores else None


@FUZZ
@given(reader=store_readers, prefix=store_prefixes, conditions=store_filters, query=st.none() | heads,
       distance=st.sampled_from(["cosine", "l2", "inner_product"]), limit=st.integers(1, 12),
       refresh=st.booleans())
def test_langgraph_store_search_pages_are_the_exact_answer(logins, store, reader, prefix, conditions, query, distance,
                                                          limit, refresh):
    app = logins[reader.login]
    live = [item for item in store if item.tenant == reader.tenant and (reader.admin or item.org in (None, reader.org))
            and item.namespace[:len(prefix)] == prefix and store_matches(item.value, conditions or {})]

    def newest(item: StoreItem) -> tuple[Any, ...]:
        assert item.updated_at is not None
        return (-item.updated_at.timestamp(), item.namespace, item.key)

    if query is None:
        expected = [(item.namespace, item.key, None) for item in sorted(live, key=newest)]
    else:
        scored = [(store_score(item, query, distance), item) for item in live]
        expected = [(item.namespace, item.key, score) for score, item in sorted(
            scored, key=lambda s: (s[0] is None, -(s[0] or 0.0), *newest(s[1])))]
    pages: list[tuple[tuple[str, ...], str, float | None]] = []
    with app.transaction():
        set_context(app, reader.tenant, reader.org, reader.user, reader.roles)
        in_zone(app, reader.zone)
        for offset in range(0, len(expected) + limit, limit):
            page = app.execute(
                "select namespace, key, score from memsub.langgraph_store_search(%s, %s::jsonb, %s::vector, %s, %s,"
                " %s, %s)", [list(prefix), None if conditions is None else json.dumps(conditions),
                             None if query is None else "[" + ",".join(map(str, query)) + "]", limit, offset,
                             refresh, distance]).fetchall()
            assert len(page) == len(expected[offset:offset + limit]), f"offset {offset}: {len(page)} rows"
            pages += [(tuple(r["namespace"]), r["key"], r["score"]) for r in page]
    assert pages == expected


TENANT_C = uuid.UUID("cccccccc-0000-0000-0000-000000000003")
TENANT_D = uuid.UUID("dddddddd-0000-0000-0000-000000000004")


@dataclass
class Chunk:
    index: int
    words: str
    head: tuple[int, ...] | None


@dataclass
class DocumentVersion:
    tenant: uuid.UUID
    org: uuid.UUID | None
    path: str
    document_id: uuid.UUID
    packet_id: uuid.UUID
    chunks: list[Chunk]


def build_documents(db: Any, seed: int = 59) -> tuple[list[DocumentVersion], list[DocumentVersion]]:
    """Random ingests of a few paths in two tenants (of their own: the packets above are not among them) from
    three contexts, each a new version of its path, its chunks some with a vector given at ingest, some given
    afterwards (document_embed_chunks), some with none. Returns the latest versions and the superseded ones."""
    rng = random.Random(seed)
    latest: dict[tuple[uuid.UUID, str], DocumentVersion] = {}
    superseded: list[DocumentVersion] = []
    owners: dict[tuple[uuid.UUID, str], uuid.UUID | None] = {}
    with db.connect("app") as app:
        for _n in range(40):
            tenant, path = rng.choice((TENANT_C, TENANT_D)), f"notes/{rng.randrange(6)}.md"
            org = owners.setdefault((tenant, path), rng.choice(ORGS))
            chunks = [Chunk(i, " ".join(rng.choices(WORDS, k=rng.randint(1, 3))), None)
                      for i in range(1, rng.randint(1, 4) + 1)]
            text, elements = "", []
            for chunk in chunks:
                piece = chunk.words + "\n"
                element: dict[str, Any] = {"start_char": len(text), "end_char": len(text) + len(piece)}
                if rng.random() < 0.4:
                    chunk.head = tuple(rng.randint(-2, 2) for _ in range(4))
                    chunk.head = chunk.head if any(chunk.head) else (0, 1, 0, 0)
                    element["embedding"] = head_vector(chunk.head)
                chunk.words = piece  # the chunk's text as stored
                text += piece
                elements.append(element)
            with app.transaction():
                set_context(app, tenant, org, rng.choice(USERS))
                in_zone(app, rng.choice(ZONES))
                row = app.execute(
                    "select document_id, packet_id, status from memsub.document_ingest(%s, %s, 'md', %s, %s::jsonb)",
                    [path, f"{rng.getrandbits(256):064x}", text, json.dumps(elements)]).fetchone()
                assert row is not None and row[2] in ("created", "new_version")
                later = [c for c in chunks if c.head is None and rng.random() < 0.3]
                for chunk in later:
                    chunk.head = (rng.randint(-2, 2), 1, rng.randint(-2, 2), 0)
                if later:
                    app.execute("select memsub.document_embed_chunks(%s, %s::jsonb)",
                                [row[0], json.dumps([{"chunk_index": c.index, "embedding": head_vector(c.head)}
                                                     for c in later if c.head is not None])])
            if (tenant, path) in latest:
                superseded.append(latest[(tenant, path)])
            latest[(tenant, path)] = DocumentVersion(tenant, org, path, row[0], row[1], chunks)
    return list(latest.values()), superseded


@pytest.fixture(scope="module")
def documents(world: tuple[Any, list[Packet]]) -> tuple[list[DocumentVersion], list[DocumentVersion]]:
    return build_documents(world[0])


@FUZZ
@given(tenant=st.sampled_from((TENANT_C, TENANT_D)), org=st.sampled_from(ORGS), query=heads, words=word_queries(),
       k=st.integers(1, 20), leg=st.sampled_from(["vector", "text"]), zone=st.sampled_from(ZONES),
       login=st.sampled_from(["app", "analyst", "tenant_admin"]))
def test_document_chunk_search_is_the_exact_answer(logins, documents, tenant, org, query, words, k, leg, zone, login):
    app = logins[login]
    latest, superseded = documents
    text, matches = words
    with app.transaction():
        set_context(app, tenant, org, roles=["tenant_admin"] if login == "tenant_admin" else [])
        in_zone(app, zone)
        found = app.execute(
            "select embedding_id, packet_id, chunk_index, chunk_text, distance, text_score, vector_rank, text_rank"
            " from memsub.hybrid_search(%s, %s::vector, %s)",
            [text if leg == "text" else None, literal(query) if leg == "vector" else None, k]).fetchall()
        ids = {(r["packet_id"], r["chunk_index"]): r["embedding_id"] for r in app.execute(
            "select packet_id, chunk_index, embedding_id from memsub.memory_embeddings").fetchall()}
    visible = [(d, c) for d in latest if d.tenant == tenant and (login == "tenant_admin" or d.org in (None, org))
               for c in d.chunks]
    old = {d.packet_id for d in superseded}
    assert not {r["packet_id"] for r in found} & old, "a superseded version's chunk was served"
    if leg == "vector":
        ranked = sorted((cosine_distance(query, c.head), ids[(d.packet_id, c.index)], d.packet_id, c.index)
                        for d, c in visible if c.head is not None)[:k]
        assert [(r["embedding_id"], r["distance"], r["packet_id"], r["chunk_index"]) for r in found] == [
            (i, dist, p, n) for dist, i, p, n in ranked]
        return
    matching = {(d.packet_id, c.index): c for d, c in visible if matches(c.words.split())}
    assert len(found) == min(k, len(matching)), f"{text!r}: {len(found)} rows of {len(matching)}"
    for row in found:
        chunk = matching[(row["packet_id"], row["chunk_index"])]
        assert row["chunk_text"] == chunk.words
        assert (row["embedding_id"] is None) == (chunk.head is None)
    assert [r["text_rank"] for r in found] == list(range(1, len(found) + 1))
    scores = [r["text_score"] for r in found]
    assert scores == sorted(scores, reverse=True)


@dataclass
class LegacyMemory:
    embedding_id: uuid.UUID
    tenant: uuid.UUID
    org: uuid.UUID | None
    user: uuid.UUID | None
    session: str | None
    scope: str
    agent: str
    head: tuple[int, ...]

    def visible_to(self, reader: Reader) -> bool:
        if reader.admin:
            return self.tenant == reader.tenant
        return (self.tenant == reader.tenant and (self.org is None or self.org == reader.org)
                and (self.scope == "shared" or (self.scope == "l-private" and self.user == reader.user)
                     or (self.scope == "cursor" and (self.user == reader.user
                                                     or (self.session is not None
                                                         and self.session == reader.session)))))


AGENTS = ("planner", " planner ", "plan  ner", "Planner", "critic\t")


def build_legacy(db: Any, seed: int = 60) -> list[LegacyMemory]:
    """Legacy semantic memories (store_semantic_memory) of random writers, scopes and agent ids (spelt with extra
    whitespace, which is stored trimmed and with each run of whitespace one space)."""
    rng = random.Random(seed)
    found = []
    with db.connect("app") as app:
        for _ in range(120):
            tenant, org, user, session = (rng.choice(TENANTS), rng.choice(ORGS), rng.choice(USERS),
                                          rng.choice(SESSIONS))
            scope = "shared" if user is None else rng.choice(["shared", "l-private", "cursor"])
            head = tuple(rng.randint(-2, 2) for _ in range(4))
            head = head if any(head) else (0, 0, 0, 1)
            agent = rng.choice(AGENTS)
            with app.transaction():
                set_context(app, tenant, org, user, session=session)
                in_zone(app, rng.choice(ZONES))
                row = app.execute("select embedding_id from memsub.store_semantic_memory(%s, %s::vector, '{}', %s,"
                                  " %s)", [agent, literal(head), rng.choice(["content", "summary"]), scope]).fetchone()
            assert row is not None
            found.append(LegacyMemory(row[0], tenant, org, user, session, scope, " ".join(agent.split()), head))
    return found


@pytest.fixture(scope="module")
def legacy(world: tuple[Any, list[Packet]]) -> list[LegacyMemory]:
    return build_legacy(world[0])


@FUZZ
@given(reader=readers, query=heads, limit=st.integers(1, 40), agent=st.sampled_from((None, "", "  ", *AGENTS)),
       mode=st.sampled_from(["exact", "auto", "approximate"]))
def test_legacy_semantic_memory_search_is_the_exact_answer(logins, legacy, reader, query, limit, agent, mode):
    app = logins[reader.login]
    with app.transaction():
        set_context(app, reader.tenant, reader.org, reader.user, reader.roles, reader.session)
        in_zone(app, reader.zone)
        found = app.execute("select embedding_id, distance, method from memsub.search_semantic_memory(%s::vector,"
                            " %s, %s, %s)", [literal(query), limit, agent, mode]).fetchall()
    wanted = None if agent is None or not agent.strip() else " ".join(agent.split())
    ranked = sorted((cosine_distance(query, m.head), m.embedding_id) for m in legacy
                    if m.visible_to(reader) and (wanted is None or m.agent == wanted))
    got = [(r["distance"], r["embedding_id"]) for r in found]
    if mode != "approximate":
        assert got == ranked[:limit]
    else:  # the walk: as many rows, every one of them allowed, in order
        assert len(got) == min(limit, len(ranked)) and set(got) <= set(ranked) and got == sorted(got)


def text_scores(conn: psycopg.Connection[Any], texts: list[str], query: str) -> dict[str, float | None]:
    """ts_rank_cd of each text for the query (english, websearch syntax), None where the text does not match:
    PostgreSQL's ranking function applied to the texts, read from no table."""
    rows = conn.execute(
        "select t, case when to_tsvector('english', t) @@ q then ts_rank_cd(to_tsvector('english', t), q) end as s"
        " from unnest(%s::text[]) t, websearch_to_tsquery('english', %s) q", [texts, query]).fetchall()
    return {r["t"]: r["s"] for r in rows}


@FUZZ
@given(reader=readers, query=heads, words=word_queries(), k=st.integers(1, 25), rrf_k=st.integers(0, 80),
       weights=st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.sampled_from([0.0, 0.5, 1.0, 3.0])).filter(any),
       importance_weight=st.sampled_from([0.0, 0.0, 0.5, 2.0]), candidates=st.none() | st.integers(25, 60))
def test_hybrid_search_fuses_the_exact_legs(world, logins, reader, query, words, k, rrf_k, weights, importance_weight,
                                            candidates):
    app = logins[reader.login]
    _, packets = world
    text, _ = words
    candidates = None if candidates is None else max(candidates, k)
    with app.transaction():
        set_context(app, reader.tenant, reader.org, reader.user, reader.roles, reader.session)
        in_zone(app, reader.zone)
        now = server_now(app)
        found = app.execute(
            "select embedding_id, score, vector_rank, text_rank, distance, text_score"
            " from memsub.hybrid_search(%s, %s::vector, %s, p_vector_weight => %s, p_text_weight => %s,"
            " p_rrf_k => %s, p_candidates => %s, p_importance_weight => %s)",
            [text, literal(query), k, weights[0], weights[1], rrf_k, candidates, importance_weight]).fetchall()
        visible = visible_embeddings(packets, reader, "content", now, {})
        scores = text_scores(app, sorted({e.words for e, _ in visible}), text)
    pool = candidates if candidates is not None else min(max(50, 4 * k), 1000)
    vector_ranks = {i: n for n, (_, i) in enumerate(sorted(
        (cosine_distance(query, e.head), e.embedding_id) for e, _ in visible)[:pool], 1)} if weights[0] else {}
    matched = sorted((-score, e.embedding_id) for e, _ in visible if (score := scores[e.words]) is not None)
    text_ranks = {i: n for n, (_, i) in enumerate(matched[:pool], 1)} if weights[1] else {}
    importance = {e.embedding_id: p.importance for e, p in visible}
    fused = []
    for i in vector_ranks.keys() | text_ranks.keys():
        rrf = ((weights[0] / (rrf_k + vector_ranks[i]) if i in vector_ranks else 0.0)
               + (weights[1] / (rrf_k + text_ranks[i]) if i in text_ranks else 0.0))
        fused.append((-(rrf * (1.0 + importance_weight * importance[i])), i))
    expected = [(i, -s) for s, i in sorted(fused)[:k]]
    assert_ranked([(r["embedding_id"], r["score"]) for r in found], expected, "fused")
    for r in found:
        assert r["vector_rank"] == vector_ranks.get(r["embedding_id"])
        assert r["text_rank"] == text_ranks.get(r["embedding_id"])


REFLECTION_TYPES = ("lesson", "pattern", "failure", "insight")
PRIORITIES = ("critical", "high", "medium", "low")
TASKS = ("t1", " t1 ", "t  2", "t 2")


@dataclass
class Reflection:
    reflection_id: uuid.UUID
    tenant: uuid.UUID
    org: uuid.UUID | None
    reflection_type: str
    priority: str
    tags: list[str]
    task: str | None
    head: tuple[int, ...] | None
    expiring: bool


def build_reflections(db: Any, seed: int = 61) -> list[Reflection]:
    """Reflections of random types, priorities, tags, tasks (spelt with extra whitespace), vectors (or none) and
    organizations in both tenants; some expire within seconds, and the searches run once they have."""
    rng = random.Random(seed)
    found = []
    expiring = datetime.now(UTC) + timedelta(seconds=3)
    with db.connect("app") as app:
        for _ in range(90):
            head = None if rng.random() < 0.2 else tuple(rng.randint(-2, 2) for _ in range(4))
            head = head if head is None or any(head) else (1, 1, 0, 0)
            reflection = Reflection(uuid.UUID(int=0), rng.choice(TENANTS), rng.choice(ORGS),
                                    rng.choice(REFLECTION_TYPES), rng.choice(PRIORITIES),
                                    sorted(set(rng.choices(TAGS, k=rng.randrange(3)))),
                                    rng.choice((None, *TASKS)), head, rng.random() < 0.15)
            with app.transaction():
                set_context(app, reflection.tenant, reflection.org, rng.choice(USERS))
                in_zone(app, rng.choice(ZONES))
                row = app.execute(
                    "select reflection_id from memsub.record_reflection(%s, 'a lesson', p_tags => %s,"
                    " p_priority => %s, p_task_id => %s, p_vector => %s::vector, p_expires_at => %s)",
                    [reflection.reflection_type, reflection.tags, reflection.priority, reflection.task,
                     None if head is None else literal(head), expiring if reflection.expiring else None]).fetchone()
            assert row is not None
            reflection.reflection_id = row[0]
            reflection.task = None if reflection.task is None else " ".join(reflection.task.split())
            found.append(reflection)
    wait_until_expired(expiring)
    return found


@pytest.fixture(scope="module")
def reflections(world: tuple[Any, list[Packet]]) -> list[Reflection]:
    return build_reflections(world[0])


@FUZZ
@given(tenant=st.sampled_from(TENANTS), org=st.sampled_from(ORGS), query=st.none() | heads,
       tags=st.none() | st.lists(st.sampled_from(TAGS), min_size=1, max_size=3),
       types=st.none() | st.lists(st.sampled_from(REFLECTION_TYPES), min_size=1, max_size=2, unique=True),
       min_priority=st.sampled_from(PRIORITIES), task=st.sampled_from((None, "", *TASKS)),
       require_tags=st.booleans(), k=st.integers(1, 30), zone=st.sampled_from(ZONES),
       login=st.sampled_from(["app", "analyst", "tenant_admin"]))
def test_retrieve_reflections_is_the_exact_answer(logins, reflections, tenant, org, query, tags, types, min_priority,
                                                  task, require_tags, k, zone, login):
    app = logins[login]
    with app.transaction():
        set_context(app, tenant, org, roles=["tenant_admin"] if login == "tenant_admin" else [])
        in_zone(app, zone)
        found = app.execute(
            "select reflection_id, distance, tag_overlap, score from memsub.retrieve_reflections(%s::vector, %s, %s,"
            " %s, %s, %s, %s)", [None if query is None else literal(query), tags, k, types, min_priority, task,
                                 require_tags]).fetchall()
    wanted_task = None if task is None or not task.strip() else " ".join(task.split())
    weights = {"critical": 1.0, "high": 0.75, "medium": 0.5, "low": 0.25}
    expected = []
    for r in reflections:
        if (r.tenant != tenant or (login != "tenant_admin" and r.org not in (None, org)) or r.expiring
                or (types is not None and r.reflection_type not in types)
                or weights[r.priority] < weights[min_priority]
                or (wanted_task is not None and r.task != wanted_task)
                or (require_tags and tags is not None and not set(r.tags) & set(tags))):
            continue
        similarity = 0.5 if query is None or r.head is None else max(0.0, 1.0 - cosine_distance(r.head, query) / 2)
        overlap = len(set(r.tags) & set(tags)) / len(set(tags)) if tags else 0.0
        expected.append((-(0.6 * similarity + 0.2 * overlap + 0.2 * weights[r.priority]), r.reflection_id))
    assert_ranked([(r["reflection_id"], r["score"]) for r in found], [(i, -s) for s, i in sorted(expected)[:k]],
                  "reflections")


@FUZZ
@given(reader=readers, thread=st.builds(thread_of, st.sampled_from(TENANTS), st.sampled_from(ORGS),
                                        st.integers(0, 1)), limit=st.integers(1, 12))
def test_thread_pages_are_the_visible_packets_in_write_order(world, logins, reader, thread, limit):
    app = logins[reader.login]
    _, packets = world
    pages: list[uuid.UUID] = []
    cursor = None
    with app.transaction():
        set_context(app, reader.tenant, reader.org, reader.user, reader.roles, reader.session)
        in_zone(app, reader.zone)
        now = server_now(app)
        for _ in range(len(packets) + 1):
            page = app.execute("select packet_id, write_seq from memsub.get_thread(%s, %s, %s, false)",
                               [thread, limit, cursor]).fetchall()
            assert len(page) <= limit
            pages += [r["packet_id"] for r in page]
            if len(page) < limit:
                break
            cursor = page[-1]["write_seq"]
    assert pages == [p.packet_id for p in packets if p.thread_id == thread and p.visible_to(reader, now)]


def labels_match(labels: tuple[str, ...], pattern: tuple[str, ...] | None, at_end: bool) -> bool:
    if pattern is None:
        return True
    if len(labels) < len(pattern):
        return False
    part = labels[len(labels) - len(pattern):] if at_end else labels[:len(pattern)]
    return all(p in ("*", label) for p, label in zip(pattern, part, strict=True))


namespace_patterns = st.none() | st.lists(st.sampled_from(["docs", "alpha", "beta", "deep", "*", "users"]),
                                          max_size=3).map(tuple)


@FUZZ
@given(reader=store_readers, prefix=namespace_patterns, suffix=namespace_patterns,
       max_depth=st.none() | st.integers(1, 3), limit=st.integers(1, 5))
def test_langgraph_store_namespace_pages_are_the_exact_answer(logins, store, reader, prefix, suffix, max_depth,
                                                              limit):
    app = logins[reader.login]
    namespaces = {item.namespace for item in store
                  if item.tenant == reader.tenant and (reader.admin or item.org in (None, reader.org))}
    expected = sorted({ns if max_depth is None else ns[:max_depth] for ns in namespaces
                       if labels_match(ns, prefix, False) and labels_match(ns, suffix, True)},
                      key=lambda ns: ".".join(ns).encode())
    pages: list[tuple[str, ...]] = []
    with app.transaction():
        set_context(app, reader.tenant, reader.org, reader.user, reader.roles)
        in_zone(app, reader.zone)
        for offset in range(0, len(expected) + limit, limit):
            page = app.execute("select namespace from memsub.langgraph_store_list_namespaces(%s, %s, %s, %s, %s)",
                               [None if prefix is None else list(prefix), None if suffix is None else list(suffix),
                                max_depth, limit, offset]).fetchall()
            assert len(page) == len(expected[offset:offset + limit])
            pages += [tuple(r["namespace"]) for r in page]
    assert pages == expected


# ADK memory (sql/940_adk.sql, docs/integrations.md): a user's memories in an app, of the context tenant and
# organization, sharing a word with the query, those holding more of its words first, then newest first. A word
# is a run of letters and digits, in lower case, and an accented letter is one letter whichever way it was typed
# (docs/decisions.md, "One Unicode composition"): "café" with one é or with e and a combining accent.
ADK_WORDS = ("harbor", "Crane", "café", unicodedata.normalize("NFD", "café"), "cafe", "zoë",
             unicodedata.normalize("NFD", "Zoë"))


def adk_words(text: str) -> set[str]:
    return {word.lower() for word in unicodedata.normalize("NFC", text).split()}


@dataclass
class AdkMemory:
    tenant: uuid.UUID
    org: uuid.UUID | None
    app_name: str
    user_id: str
    session_id: str
    event_id: str
    text: str
    timestamp: float | None


def build_adk(db: Any, seed: int = 62) -> list[AdkMemory]:
    """The memories of a few ADK sessions (memsub.adk_memory_add), of two apps and two users in both tenants and
    three contexts, each text a few words of ADK_WORDS, some of them without a time."""
    rng = random.Random(seed)
    found: list[AdkMemory] = []
    with db.connect("app") as app:
        for n in range(30):
            tenant, org = rng.choice(TENANTS), rng.choice(ORGS)
            app_name, user_id = rng.choice(("helpdesk", "tutor")), rng.choice(("alice", "bob"))
            memories = [AdkMemory(tenant, org, app_name, user_id, f"s{n}", f"e{i}",
                                  " ".join(rng.choices(ADK_WORDS, k=rng.randint(1, 3))),
                                  None if rng.random() < 0.2 else float(rng.randrange(100)))
                        for i in range(rng.randint(1, 4))]
            with app.transaction():
                set_context(app, tenant, org)
                app.execute("select memsub.adk_memory_add(%s, %s, %s, %s::jsonb)", [
                    app_name, user_id, f"s{n}", json.dumps([
                        {"event_id": m.event_id, "author": "user", "timestamp": m.timestamp,
                         "content": {"parts": [{"text": m.text}]}, "text": m.text} for m in memories])])
            found += memories
    return found


@pytest.fixture(scope="module")
def adk(world: tuple[Any, list[Packet]]) -> list[AdkMemory]:
    return build_adk(world[0])


@FUZZ
@given(tenant=st.sampled_from(TENANTS), org=st.sampled_from(ORGS), app_name=st.sampled_from(("helpdesk", "tutor")),
       user_id=st.sampled_from(("alice", "bob")), query=st.lists(st.sampled_from(ADK_WORDS), min_size=1, max_size=3),
       limit=st.integers(1, 12))
def test_adk_memory_search_by_words_is_the_exact_answer(app, adk, tenant, org, app_name, user_id, query, limit):
    text = " ".join(query)
    with app.transaction():
        set_context(app, tenant, org)
        found = app.execute("select session_id, event_id, score from memsub.adk_memory_search(%s, %s, %s, null, %s)",
                            [app_name, user_id, text, limit]).fetchall()
    asked = adk_words(text)
    mine = [m for m in adk if (m.tenant, m.org, m.app_name, m.user_id) == (tenant, org, app_name, user_id)
            and adk_words(m.text) & asked]
    ranked = sorted((-len(adk_words(m.text) & asked) / len(asked), m.timestamp is None, -(m.timestamp or 0.0),
                     m.session_id, m.event_id) for m in mine)[:limit]
    assert [(r["session_id"], r["event_id"], r["score"]) for r in found] == [
        (session, event, -share) for share, _, _, session, event in ranked]


def test_adk_memory_words_are_one_word_whichever_way_an_accent_was_typed(db384):
    """A memory holding "café" typed with one é is found by the query "café" typed with e and a combining accent,
    and the other way round, and neither finds a memory that says "cafe". Before the fix a word was cut at the
    combining accent, so the decomposed "café" was the word "cafe": each spelling missed the other's memories
    (the search returned nothing) and found the unaccented ones instead."""
    composed, decomposed = "café", unicodedata.normalize("NFD", "café")
    with db384.connect("app") as app:
        set_context(app, TENANT_A)
        app.execute("select memsub.adk_memory_add('helpdesk', 'alice', 's1', %s::jsonb)", [json.dumps([
            {"event_id": "e1", "content": {}, "text": f"a {composed} au lait"},
            {"event_id": "e2", "content": {}, "text": f"the {decomposed} was closed"},
            {"event_id": "e3", "content": {}, "text": "cafe racer"}])])
        for query in (composed, decomposed, composed.upper(), decomposed.upper()):
            found = app.execute("select event_id, score from memsub.adk_memory_search('helpdesk', 'alice', %s)"
                                " order by event_id", [query]).fetchall()
            assert found == [("e1", 1.0), ("e2", 1.0)], f"{query!r}: {found}"
        app.rollback()


# The temporal graph (docs/retrieval.md, sql/420_temporal_graph.sql): edges_as_of(t) is the edges whose validity
# window [valid_from, valid_until) holds t, of the context tenant, not expired, optionally touching an entity or of
# one relationship type, by source, type and target.
GRAPH_ENTITIES = ("acme", "globex", "initech", "umbrella")
GRAPH_TYPES = ("supplies", "owns")
GRAPH_EPOCH = datetime(2020, 1, 1, tzinfo=UTC)


@dataclass
class Edge:
    tenant: uuid.UUID
    source: str
    relationship_type: str
    target: str
    valid_from: datetime
    valid_until: datetime | None
    expiring: bool


def build_graph(db: Any, seed: int = 63) -> list[Edge]:
    """Edges of both tenants, each key with one to three validity windows one after the other (the last one open
    at times), some drawn from a packet that expires within seconds (an edge expires with its packet)."""
    rng = random.Random(seed)
    edges: list[Edge] = []
    expiring = datetime.now(UTC) + timedelta(seconds=3)
    with db.connect("app") as app:
        for tenant in TENANTS:
            with app.transaction():
                set_context(app, tenant)
                row = app.execute("select packet_id from memsub.write_packet(%s::jsonb)", [json.dumps(
                    {"packet_type": "note", "payload": {"text": "source"}, "ttl": expiring.isoformat()})]).fetchone()
            assert row is not None
            packet = row[0]
            for source, relationship_type, target in itertools.product(GRAPH_ENTITIES, GRAPH_TYPES, GRAPH_ENTITIES):
                if source == target or rng.random() < 0.5:
                    continue
                day = rng.randrange(5)
                for window in range(rng.randint(1, 3)):
                    start = GRAPH_EPOCH + timedelta(days=day, hours=rng.randrange(24))
                    day += rng.randint(1, 6)
                    end = None if window == 2 or rng.random() < 0.2 else GRAPH_EPOCH + timedelta(days=day)
                    edge = Edge(tenant, source, relationship_type, target, start, end, rng.random() < 0.15)
                    with app.transaction():
                        set_context(app, tenant)
                        in_zone(app, rng.choice(ZONES))
                        app.execute("select memsub.temporal_edge_add(%s, %s, %s, %s, %s, p_source_packet => %s)",
                                    [source, relationship_type, target, start, end,
                                     packet if edge.expiring else None])
                    edges.append(edge)
                    if end is None:
                        break
                    day += rng.randrange(3)
    wait_until_expired(expiring)
    return edges


@pytest.fixture(scope="module")
def graph(world: tuple[Any, list[Packet]]) -> list[Edge]:
    return build_graph(world[0])


@FUZZ
@given(reader=readers, day=st.integers(-1, 30), hour=st.integers(0, 23),
       entity=st.none() | st.sampled_from(GRAPH_ENTITIES), relationship_type=st.none() | st.sampled_from(GRAPH_TYPES))
def test_edges_as_of_are_the_exact_answer(logins, graph, reader, day, hour, entity, relationship_type):
    app = logins[reader.login]
    as_of = GRAPH_EPOCH + timedelta(days=day, hours=hour)
    with app.transaction():
        set_context(app, reader.tenant, reader.org, reader.user, reader.roles, reader.session)
        in_zone(app, reader.zone)
        found = app.execute("select source_entity, relationship_type, target_entity, lower(valid_period) as f"
                            " from memsub.edges_as_of(%s, %s, %s)", [as_of, entity, relationship_type]).fetchall()
    expected = sorted((e.source, e.relationship_type, e.target, e.valid_from) for e in graph
                      if e.tenant == reader.tenant and not e.expiring and e.valid_from <= as_of
                      and (e.valid_until is None or as_of < e.valid_until)
                      and entity in (None, e.source, e.target) and relationship_type in (None, e.relationship_type))
    assert [(r["source_entity"], r["relationship_type"], r["target_entity"], r["f"]) for r in found] == expected
