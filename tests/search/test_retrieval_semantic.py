"""Semantic search quality as the application role: exactly k rows and recall@10 >= 0.95 against exact search
(enable_indexscan = off), for a small tenant (0.5 % of the rows) and a big one (50 %), per embedding type, on
graphs built with ef_construction 128 (the retrieval_db fixture in tests/conftest.py says why)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from helpers import set_context
from layer_helpers import graph_order
from retrieval_data import BIG, RETRIEVAL_SPEC, SMALL, TYPES, query_vector

QUERIES = 60
K = 10


def exact(conn: Any, tenant: Any, vector: str, embedding_type: str, extra: str = "", k: int = K) -> list[Any]:
    """Ground truth as the application role: a sequential or bitmap scan, never an index order."""
    with conn.transaction():
        set_context(conn, tenant)
        conn.execute("set local enable_indexscan = off")
        rows = conn.execute(
            "select e.embedding_id from memsub.memory_embeddings e join memsub.packet_store p "
            " on p.tenant_id = e.tenant_id and p.packet_id = e.packet_id "
            f"where e.embedding_type = %s {extra} order by e.vector <=> %s::vector, e.embedding_id limit %s",
            [embedding_type, vector, k]).fetchall()
    return [r[0] for r in rows]


def search(conn: Any, tenant: Any, vector: str, embedding_type: str, **options: Any) -> list[tuple[Any, ...]]:
    named = "".join(f", p_{name} => %s" for name in options)
    with conn.transaction():
        set_context(conn, tenant)
        return conn.execute(
            f"select embedding_id, method, distance from memsub.semantic_search(%s::vector, %s, %s{named})",
            [vector, K, embedding_type, *options.values()]).fetchall()


@pytest.mark.parametrize("embedding_type", TYPES)
def test_k_rows_and_recall_for_small_and_big_tenants(retrieval_db, embedding_type):
    with retrieval_db.connect() as su, retrieval_db.connect("app", autocommit=True) as app:
        builds = su.execute("select m, ef_construction from memsub.vector_index_builds()").fetchall()
        assert set(builds) == {(16, 128)}, builds
        for tenant, method in ((SMALL, "exact"), (BIG, "approximate")):
            recalls = []
            for number in range(QUERIES):
                vector = query_vector(su, RETRIEVAL_SPEC, number, embedding_type)
                truth = exact(app, tenant, vector, embedding_type)
                got = search(app, tenant, vector, embedding_type)
                assert len(truth) == K
                assert len(got) == K, f"{tenant} {embedding_type}: {len(got)} rows"
                assert {row[1] for row in got} == {method}
                distances = [row[2] for row in got]
                assert distances == sorted(distances)
                recalls.append(len(set(truth) & {row[0] for row in got}) / K)
            recall = sum(recalls) / len(recalls)
            assert recall >= 0.95, f"{tenant} {embedding_type}: recall@10 {recall:.3f}"


def test_small_tenant_through_the_hnsw_index_needs_the_iterative_scan(retrieval_db):
    """The pitfall the function avoids: a plain HNSW scan post-filters the tenant and returns too few rows."""
    with retrieval_db.connect() as su, retrieval_db.connect("app", autocommit=True) as app:
        vector = query_vector(su, RETRIEVAL_SPEC, 3)
        with app.transaction():
            set_context(app, SMALL)
            plain = app.execute("select count(*) from (select 1 from memsub.memory_embeddings "
                                f"where embedding_type = 'content' order by {graph_order(app)} limit %s) s",
                                [vector, K]).fetchone()
        assert plain is not None and plain[0] < K
        got = search(app, SMALL, vector, "content", mode="approximate")
        assert len(got) == K and {row[1] for row in got} == {"approximate"}
        truth = exact(app, SMALL, vector, "content")
        assert len(set(truth) & {row[0] for row in got}) >= 9


def test_settings_stay_inside_the_call(retrieval_db):
    with retrieval_db.connect() as su, retrieval_db.connect("app") as app:
        vector = query_vector(su, RETRIEVAL_SPEC, 1)
        set_context(app, BIG)
        app.execute("select %s::vector <=> %s::vector", [vector, vector])  # loads pgvector and its settings
        names = ["hnsw.iterative_scan", "hnsw.ef_search", "hnsw.max_scan_tuples"]
        settings = "select " + ", ".join(f"current_setting('{name}')" for name in names)
        before = app.execute(settings).fetchone()
        rows = app.execute("select * from memsub.semantic_search(%s::vector, 200, 'content')", [vector]).fetchall()
        assert len(rows) == 200
        assert app.execute(settings).fetchone() == before == ("off", "40", "20000")


@pytest.mark.parametrize(("options", "extra"), [
    ({"tags": ["rare"]}, "and p.tags @> array['rare']"),
    ({"packet_type": "memory_write"}, "and p.packet_type = 'memory_write'"),
    ({"min_importance": 0.8}, "and p.importance_score >= 0.8"),
    ({"thread_id": "10000000-0000-4000-8000-000000000007"},
     "and p.thread_id = '10000000-0000-4000-8000-000000000007'"),
    ({"thread_id": "10000000-0000-4000-8000-000000000007", "min_importance": 0.5},
     "and p.thread_id = '10000000-0000-4000-8000-000000000007' and p.importance_score >= 0.5"),
])
def test_filters_keep_k_rows_and_match_exact_search(retrieval_db, options, extra):
    with retrieval_db.connect() as su, retrieval_db.connect("app", autocommit=True) as app:
        for number in range(4):
            vector = query_vector(su, RETRIEVAL_SPEC, number)
            truth = exact(app, BIG, vector, "content", extra)
            got = search(app, BIG, vector, "content", **options)
            assert len(truth) == K
            assert len(got) == K
            assert len(set(truth) & {row[0] for row in got}) >= 9


def test_time_window(retrieval_db):
    with retrieval_db.connect() as su, retrieval_db.connect("app", autocommit=True) as app:
        vector = query_vector(su, RETRIEVAL_SPEC, 6)
        window = "and p.\"timestamp\" >= now() - interval '40 days' and p.\"timestamp\" < now() - interval '29 days'"
        truth = exact(app, BIG, vector, "content", window)
        with app.transaction():
            set_context(app, BIG)
            rows = app.execute(
                "select embedding_id from memsub.semantic_search(%s::vector, %s, 'content', "
                "p_since => now() - interval '40 days', p_until => now() - interval '29 days')", [vector, K]).fetchall()
        assert len(truth) == K
        assert len(set(truth) & {r[0] for r in rows}) >= 9 and len(rows) == K


def test_plans_as_the_application_role_use_the_intended_indexes(retrieval_db):
    """EXPLAIN of the two queries semantic_search builds, run as the application role."""
    with retrieval_db.connect() as su, retrieval_db.connect("app") as app:
        vector = query_vector(su, RETRIEVAL_SPEC, 2)
        set_context(app, BIG)
        app.execute("set local hnsw.iterative_scan = relaxed_order")
        base = ("select e.embedding_id from memsub.memory_embeddings e join memsub.packet_store p "
                "on p.tenant_id = e.tenant_id and p.packet_id = e.packet_id "
                f"where e.embedding_type = 'entity' and e.tenant_id = '{BIG}'::uuid ")
        hnsw = "\n".join(r[0] for r in app.execute(
            f"explain {base} order by {graph_order(app, 'e.vector')} limit 10", [vector]).fetchall())
        assert "idx_embeddings_vector_entity" in hnsw
        exact_plan = "\n".join(r[0] for r in app.execute(
            f"explain {base.replace(str(BIG), str(SMALL))} order by (e.vector <=> %s::vector) + 0 limit 10",
            [vector]).fetchall())
        assert "hnsw" not in exact_plan and "idx_embeddings_vector" not in exact_plan
        assert "idx_memory_embeddings_tenant_type" in exact_plan or "memory_embeddings_chunk_key" in exact_plan
        # With the tenant as a literal the planner sees the big tenant's real share (~50 % of the type).
        # A parameter (a generic plan) is estimated as the average tenant.
        probe = "select 1 from memsub.memory_embeddings e where e.embedding_type = 'entity' and e.tenant_id = "
        literal = app.execute(f"explain (format json) {probe} '{BIG}'::uuid").fetchone()
        generic = app.execute(f"explain (format json, generic_plan) {probe} $1").fetchone()
        assert literal is not None and generic is not None
        # memory_embeddings is partitioned by tenant: the literal also lets the planner read one partition only,
        # the one holding the tenant; the generic plan keeps every partition, to be pruned when it runs.
        partition = app.execute("select memsub._embedding_partition(%s)", [BIG]).fetchone()
        assert partition is not None
        assert relations(literal[0][0]["Plan"]) == {f"memory_embeddings_p{partition[0]:02d}"}
        assert relations(generic[0][0]["Plan"]) == {f"memory_embeddings_p{n:02d}" for n in range(16)}
        # Its estimate is the big tenant's real share of its partition (about 95 % of it), not an average.
        rows = literal[0][0]["Plan"]["Plan Rows"]
        held = su.execute("select count(*) from memsub.memory_embeddings where tenant_id = %s "
                          "and embedding_type = 'entity'", [BIG]).fetchone()
        assert held is not None and 0.5 * held[0] < rows < 2 * held[0], (rows, held)


def relations(plan: Any) -> set[str]:
    """The tables a JSON plan reads."""
    found = {plan["Relation Name"]} if "Relation Name" in plan else set()
    for child in plan.get("Plans", []):
        found |= relations(child)
    return found


def index_searches(conn: Any) -> dict[str, int]:
    """Index searches of each type's partial HNSW index (its graph on every partition) in this transaction."""
    return {t: int(conn.execute("select coalesce(sum(pg_stat_get_xact_numscans(h.inhrelid)), 0) "
                                "from pg_inherits h where h.inhparent = %s::regclass",
                                [f"memsub.idx_embeddings_vector_{t}"]).fetchone()[0]) for t in TYPES}


@pytest.mark.parametrize("embedding_type", ["content", "entity"])
def test_the_walk_inside_semantic_search_uses_its_types_partial_index(retrieval_db, embedding_type):
    """The statement semantic_search runs, with the tenant and type as values, as the application role: the
    approximate walk searches its own type's partial HNSW index (and no other), the exact scan none."""
    with retrieval_db.connect() as su, retrieval_db.connect("app") as app:
        vector = query_vector(su, RETRIEVAL_SPEC, 4)
        for mode, walks in (("approximate", 1), ("exact", 0)):
            with app.transaction():
                set_context(app, BIG)
                before = index_searches(app)
                rows = app.execute("select method from memsub.semantic_search(%s::vector, %s, %s, p_mode => %s)",
                                   [vector, K, embedding_type, mode]).fetchall()
                after = index_searches(app)
            assert rows == [(mode,)] * K
            assert {t: after[t] - before[t] for t in TYPES} == {
                t: walks if t == embedding_type else 0 for t in TYPES}


def test_short_hnsw_walk_falls_back_to_the_exact_scan(db384):
    """The third step of semantic_search. A tenant holds half of the rows, so its query walks the HNSW
    index, but all its rows lie far from the query, in a region of the graph held by another tenant. Bounded by
    a small ef_search and max_scan_tuples, the walk stops among the other tenant's rows and comes back with fewer
    than k rows; the function then scans exactly and still returns the tenant's k nearest rows (method exact).
    With the default bound the iterative scan goes on until it reaches the tenant's rows (method approximate)."""
    # Two tenants of one partition of memory_embeddings (the same hash of tenant_id): one HNSW graph.
    far, near = uuid.UUID("fa000000-0000-0000-0000-000000000001"), uuid.UUID("0e000000-0000-0000-0000-000000000032")
    with db384.connect() as su:
        su.execute("select setseed(0.17)")
        su.execute(f"""
            insert into memsub.packet_store (packet_id, packet_type, envelope, tenant_id, scope, content_hash)
            select ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid, 'event', '{{}}',
                   case when i % 2 = 0 then '{far}'::uuid else '{near}'::uuid end, 'shared', md5(i::text)
              from generate_series(1, 4000) i""")
        # The far tenant's vectors point along the first axis, the near tenant's along the second.
        su.execute("""
            insert into memsub.memory_embeddings (packet_id, embedding_type, vector, tenant_id, scope)
            select p.packet_id, 'content',
                   array(select case when d = (case when p.tenant_id = %s then 1 else 2 end) then 1.0 else 0.0 end
                                + 0.3 * (random() * 2 - 1) + 0 * length(p.content_hash)
                           from generate_series(1, 384) d)::vector,
                   p.tenant_id, 'shared'
              from memsub.packet_store p""", [far])
        su.execute("analyze memsub.packet_store")
        su.execute("analyze memsub.memory_embeddings")
        su.commit()
    query = "[" + ",".join("1.0" if d == 2 else "0.01" for d in range(1, 385)) + "]"
    with db384.connect("app", autocommit=True) as app:
        truth = exact(app, far, query, "content")
        assert len(truth) == K
        short = search(app, far, query, "content", mode="approximate", ef_search=K, max_scan_tuples=1)
        assert [row[0] for row in short] == truth
        assert {row[1] for row in short} == {"exact"}
        walked = search(app, far, query, "content", mode="approximate")
        # (Here every row of the tenant is about as far from the query as the next, so recall says little; the
        # recall tests above use realistic, clustered data.)
        assert {row[1] for row in walked} == {"approximate"} and len(walked) == K
        # What the fallback spares the caller: the same bounded walk outside the function returns too few rows.
        with app.transaction():
            set_context(app, far)
            for setting in ("hnsw.iterative_scan = relaxed_order", "hnsw.max_scan_tuples = 1"):
                app.execute(f"set local {setting}")
            plan = "\n".join(r[0] for r in app.execute(
                f"explain select 1 from memsub.memory_embeddings e where e.embedding_type = 'content' "
                f"and e.tenant_id = '{far}'::uuid order by {graph_order(app, 'e.vector')} limit {K}",
                [query]).fetchall())
            walk = app.execute(
                f"select count(*) from (select 1 from memsub.memory_embeddings e where e.embedding_type = 'content' "
                f"and e.tenant_id = '{far}'::uuid order by {graph_order(app, 'e.vector')} limit {K}) s",
                [query]).fetchone()
        assert "idx_embeddings_vector_content" in plan
        assert walk is not None and walk[0] < K
