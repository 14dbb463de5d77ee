"""The maintenance job's tune_search task raises the HNSW walk's ef_search until the walk reaches its recall goal.

One tenant holds the whole index of 4,000 clustered rows of one space, about 100 vectors a cluster: a walk
whose candidate list (ef_search) is not longer than a cluster tends to stay in the cluster it entered, so at the
ef_search derived for a tenant holding the whole index (100 for k = 10) the walk misses part of the nearest rows
of a query lying between clusters, and at 250 it finds them (tests/search/test_search_recall.py checks that a
tenant on uniform random vectors, which no affordable ef_search serves, is scanned exactly). The test measures
the walk's recall first (the index is rebuilt, a few times at most, until it misses the goal at 100 and reaches
it at 250: an HNSW build is random), then runs tune_search and checks the choice and the recall of
semantic_search at its default settings, as the application role.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from helpers import set_context
from retrieval_data import BIG, Spec, build

K = 10
QUERIES = 100
DERIVED_EF = 100  # clamp(10 * k / share, max(40, k), 1000) for k = 10 and a share of 1
SPEC = Spec(packets=4000, types=("content",), big_share=1.0, small_share=0.0)
BUILDS = 8


@dataclass
class Tuned:
    database: Any
    queries: list[str]
    walk_recall: dict[int, float]  # content: recall@10 of the walk at an ef_search, measured before tuning


def queries(conn: Any, embedding_type: str) -> list[str]:
    """Midpoints of pairs of the tenant's vectors: queries from the tenant's own distribution."""
    rows = conn.execute(
        "select (l2_normalize(a.vector + b.vector))::text from"
        " (select vector, row_number() over (order by embedding_id) r from memsub.memory_embeddings"
        "   where embedding_type = %s order by embedding_id limit %s) a"
        " join (select vector, row_number() over (order by embedding_id desc) r from memsub.memory_embeddings"
        "   where embedding_type = %s order by embedding_id desc limit %s) b on a.r = b.r",
        [embedding_type, QUERIES, embedding_type, QUERIES]).fetchall()
    return [r[0] for r in rows]


def search(app: Any, vector: str, embedding_type: str, mode: str = "auto",
           ef_search: int | None = None) -> list[tuple[Any, str]]:
    """semantic_search as the application role: (embedding_id, method) of each row."""
    with app.transaction():
        set_context(app, BIG)
        rows = app.execute("select embedding_id, method from memsub.semantic_search(%s::vector, %s, %s,"
                           " p_mode => %s, p_ef_search => %s)",
                           [vector, K, embedding_type, mode, ef_search]).fetchall()
    return [(r[0], r[1]) for r in rows]


def recall(app: Any, vectors: list[str], embedding_type: str, **options: Any) -> tuple[float, set[str]]:
    """Mean recall@k of semantic_search with these options against the exact scan, and the methods seen."""
    total, methods = 0.0, set()
    for vector in vectors:
        expected = {r[0] for r in search(app, vector, embedding_type, mode="exact")}
        got = search(app, vector, embedding_type, **options)
        assert len(expected) == K and len(got) == K
        methods |= {r[1] for r in got}
        total += len(expected & {r[0] for r in got}) / K
    return total / len(vectors), methods


def walk_recall(app: Any, vectors: list[str]) -> dict[int, float]:
    return {ef: recall(app, vectors, "content", mode="approximate", ef_search=ef)[0] for ef in (DERIVED_EF, 250, 1000)}


@pytest.fixture(scope="module")
def tuned(server: Any, template_db_384: str) -> Iterator[Tuned]:
    from conftest import Database

    name = f"memsub_tuning_{uuid.uuid4().hex[:12]}"
    with server.janitor(name, template=template_db_384):
        database = Database(server, name)
        with database.connect(autocommit=True) as su, database.connect("app", autocommit=True) as app:
            build(su, SPEC)
            vectors = queries(su, "content")
            measured = walk_recall(app, vectors)
            for _ in range(BUILDS - 1):
                if measured[DERIVED_EF] < 0.95 and measured[250] >= 0.98:
                    break
                su.execute("reindex index memsub.idx_embeddings_vector_content")
                measured = walk_recall(app, vectors)
        with database.connect("platform_admin") as conn:
            set_context(conn, BIG, roles=["platform_admin"])
            conn.execute("select count(*) from memsub.tune_search(p_samples => 200)")
            conn.commit()
        yield Tuned(database, vectors, measured)


def test_the_walk_misses_the_goal_at_the_derived_ef_search_and_reaches_it_at_a_larger_one(tuned):
    recalls = tuned.walk_recall
    assert recalls[DERIVED_EF] < 0.95, recalls
    assert recalls[250] >= 0.98 and recalls[1000] >= 0.97, recalls


def test_tune_search_walks_the_tenant_at_the_ef_search_that_reaches_the_goal(tuned):
    with tuned.database.connect() as su:
        row = su.execute("select ef_search, recall, samples from memsub.search_stats"
                         " where tenant_id = %s and embedding_type = 'content'", [BIG]).fetchone()
    assert row is not None
    ef_search, measured, samples = row
    assert ef_search > DERIVED_EF and measured >= 0.97 and samples == 200, row
    with tuned.database.connect("app", autocommit=True) as app:
        with app.transaction():
            set_context(app, BIG)
            strategy = app.execute("select method, ef_search, share from memsub._search_strategy(%s, 'content', %s)",
                                   [BIG, K]).fetchone()
        assert strategy == ("approximate", ef_search, 1.0)
        got, methods = recall(app, tuned.queries, "content")
    assert methods == {"approximate"}
    assert got >= 0.95, f"recall@10 {got:.3f} at ef_search {ef_search}"


def test_an_ef_search_the_caller_passes_is_kept(tuned):
    with tuned.database.connect("app") as app:
        set_context(app, BIG)
        row = app.execute("select method, ef_search from memsub._search_strategy(%s, 'content', %s, 'auto', 40)",
                          [BIG, K]).fetchone()
    assert row == ("approximate", 40)
