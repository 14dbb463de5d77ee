"""Retrieval on a 384-d installation, as the application role: semantic search against the exact scan, the cost
of row-level security per retrieval leg, hybrid search against its legs, and graph traversal by depth.

A private embedded server (or ``MEMSUB_BENCH_DSN``) gets a freshly migrated database with
``memsub.vector_dimension = 384``. The data is tests/retrieval_data.py's generator with a fixed seed: packets
spread over one big tenant (50 % of the rows), one small tenant (0.5 %) and 20 others, each packet with one
embedding per type (``--types``). Vectors are clustered: 40 random centres in an 8-dimensional latent space plus
spread, projected to 384 dimensions by a fixed random matrix, plus a little isotropic noise (real embeddings lie
near a low-dimensional manifold; uniform noise would leave no neighbours to find). Each chunk text is
``clusterC topicT wordA wordB itemN`` with random words, for the full-text leg. A knowledge graph of
``--entities`` entities with ``--fan-out`` random outgoing edges each is written for the big tenant and, as
distractors, for another tenant.

Every figure is a ratio of two variants timed side by side: each repetition runs every variant once, in turn
(rotating which goes first), each in its own transaction after ``memsub.set_context`` (not timed). Latencies
are wall time of the statement as seen by the client (execute and fetch all rows).

    python bench/retrieval.py [--packets 50000] [--types content,summary] [--queries 40] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _database import bench_database, describe, leaves

from retrieval_data import BIG, SMALL, Spec, build, query_vector

K = 10
HNSW = ("set local hnsw.iterative_scan = relaxed_order", "set local hnsw.ef_search = 100")
OTHER = "00000000-0000-0000-0000-000000000001"

EMBEDDING_TABLES = leaves("'memsub.memory_embeddings'")


def timed(conn: psycopg.Connection[Any], tenant: str | None, query: str, params: Sequence[Any],
          settings: Sequence[str] = ()) -> tuple[float, list[Any]]:
    """Milliseconds of one statement in its own transaction (context and settings applied first, untimed)."""
    with conn.transaction():
        if tenant is not None:
            conn.execute("select memsub.set_context(%s)", [tenant])
        for setting in settings:
            conn.execute(setting)
        start = time.perf_counter()
        rows = conn.execute(query.encode(), params).fetchall()
        return (time.perf_counter() - start) * 1000.0, rows


def side_by_side(repetitions: int, variants: dict[str, Callable[[int], tuple[float, list[Any]]]]
                 ) -> dict[str, dict[str, float]]:
    """Run every variant once per repetition, in turn, starting one further along each time (so no variant is
    always the first to touch the data); p50/p95 latency and mean row count per variant."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    counts: dict[str, list[int]] = {name: [] for name in variants}
    names = list(variants)
    for number in range(repetitions):
        for name in names[number % len(names):] + names[:number % len(names)]:
            elapsed, rows = variants[name](number)
            times[name].append(elapsed)
            counts[name].append(len(rows))
    return {name: {"p50_ms": statistics.median(values), "p95_ms": percentile(values, 0.95),
                   "rows": statistics.mean(counts[name])} for name, values in times.items()}


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def exact_sql(tenant: Any) -> str:
    """Ground truth as the application role: no index order (the test suite's definition of exact)."""
    return ("select e.embedding_id from memsub.memory_embeddings e join memsub.packet_store p "
            "on p.tenant_id = e.tenant_id and p.packet_id = e.packet_id "
            f"where e.embedding_type = 'content' and e.tenant_id = '{tenant}'::uuid "
            "order by e.vector <=> %s::vector, e.embedding_id limit %s")


def semantic(su: psycopg.Connection[Any], app: psycopg.Connection[Any], spec: Spec, queries: int
             ) -> list[dict[str, Any]]:
    vectors = [query_vector(su, spec, n) for n in range(queries)]
    results = []
    for label, tenant, options in (("small tenant (0.5 %)", SMALL, ""),
                                   ("small tenant, walk forced (mode approximate)", SMALL, ", p_mode => 'approximate'"),
                                   ("big tenant (50 %)", BIG, "")):
        hits: dict[int, set[Any]] = {}
        methods: set[str] = set()

        truth: dict[int, set[Any]] = {}

        def search(n: int, tenant: Any = tenant, options: str = options, hits: dict[int, set[Any]] = hits,
                   methods: set[str] = methods) -> tuple[float, list[Any]]:
            elapsed, rows = timed(app, str(tenant), "select embedding_id, method from memsub.semantic_search("
                                  f"%s::vector, %s, 'content'{options})", [vectors[n], K])
            hits[n] = {r[0] for r in rows}
            methods.update(r[1] for r in rows)
            return elapsed, rows

        def exact(n: int, tenant: Any = tenant, truth: dict[int, set[Any]] = truth) -> tuple[float, list[Any]]:
            elapsed, rows = timed(app, str(tenant), exact_sql(tenant), [vectors[n], K],
                                  ("set local enable_indexscan = off",))
            truth[n] = {r[0] for r in rows}
            return elapsed, rows

        figures = side_by_side(queries, {"semantic_search": search, "exact scan": exact})
        recall = statistics.mean(len(hits[n] & truth[n]) / K for n in range(queries))
        results.append({"case": label, "method": ",".join(sorted(methods)), "recall_at_10": recall,
                        "semantic_p50_ms": figures["semantic_search"]["p50_ms"],
                        "semantic_p95_ms": figures["semantic_search"]["p95_ms"],
                        "exact_p50_ms": figures["exact scan"]["p50_ms"],
                        "exact_p95_ms": figures["exact scan"]["p95_ms"],
                        "rows": figures["semantic_search"]["rows"],
                        "speedup_p50": figures["exact scan"]["p50_ms"] / figures["semantic_search"]["p50_ms"]})
    return results


def rls_tax(su: psycopg.Connection[Any], app: psycopg.Connection[Any], spec: Spec, queries: int
            ) -> list[dict[str, Any]]:
    """Each leg three ways: the application role with the policies alone, the application role with the tenant
    written into the query (as memsub's functions do), and the superuser (no row-level security) with the same
    explicit tenant predicate -- the baseline of every ratio."""
    vectors = [query_vector(su, spec, n) for n in range(queries)]
    # The walk orders by the graph's own key (unit vectors in half precision, memsub._vector_graph_order).
    graph = su.execute("select memsub._vector_graph_order('e.vector', '%s::vector')").fetchone()
    assert graph is not None
    results = []
    for tenant_label, tenant in (("big", BIG), ("small", SMALL)):
        vector_sql = ("select e.embedding_id from memsub.memory_embeddings e "
                      "where {tenant}e.embedding_type = 'content' order by " + str(graph[0]) + " limit 10")
        text_sql = ("select e.embedding_id from memsub.memory_embeddings e "
                    "where {tenant}e.embedding_type = 'content' "
                    "and e.search_tsv @@ websearch_to_tsquery('english', %s) "
                    "order by ts_rank_cd(e.search_tsv, websearch_to_tsquery('english', %s)) desc, e.embedding_id "
                    "limit 50")
        tag_sql = ("select p.packet_id from memsub.packet_store p where {tenant}p.tags @> %s::text[]")
        legs: list[tuple[str, str, str, Callable[[int], list[Any]], Sequence[str]]] = [
            ("vector (HNSW, k=10)", vector_sql, "e", lambda n: [vectors[n]], HNSW),
            ("full text (selective word)", text_sql, "e", lambda n: [f"word{n * 7 % 300}"] * 2, ()),
            ("full text (common word, 1 row in 7)", text_sql, "e", lambda n: [f"topic{n % 7}"] * 2, ()),
            ("tags @> (1 packet in 10)", tag_sql, "p", lambda n: [["rare"]], ()),
        ]
        for leg, template, alias, params, settings in legs:
            plain = template.format(tenant="")
            explicit = template.format(tenant=f"{alias}.tenant_id = '{tenant}'::uuid and ")
            variants: dict[str, Callable[[int], tuple[float, list[Any]]]] = {
                "superuser, explicit tenant": lambda n, q=explicit, p=params, s=settings: timed(su, None, q, p(n), s),
                "app role, policies only": lambda n, q=plain, p=params, s=settings, t=tenant: timed(
                    app, str(t), q, p(n), s),
                "app role, explicit tenant": lambda n, q=explicit, p=params, s=settings, t=tenant: timed(
                    app, str(t), q, p(n), s),
            }
            if leg.startswith("full text"):
                variants["app role, memsub._keyword_candidates"] = lambda n, p=params, t=tenant: timed(
                    app, str(t), "select embedding_id from memsub._keyword_candidates(%s, 'content', 50)", p(n)[:1])
            figures = side_by_side(queries, variants)
            base = figures["superuser, explicit tenant"]["p50_ms"]
            for variant, figure in figures.items():
                results.append({"tenant": tenant_label, "leg": leg, "variant": variant, **figure,
                                "vs_superuser_p50": figure["p50_ms"] / base})
    return results


def hybrid(su: psycopg.Connection[Any], app: psycopg.Connection[Any], spec: Spec, queries: int
           ) -> list[dict[str, Any]]:
    vectors = [query_vector(su, spec, n) for n in range(queries)]
    words = [f"word{n * 11 % 300}" for n in range(queries)]
    results = []
    for label, tenant in (("big", BIG), ("small", SMALL)):
        figures = side_by_side(queries, {
            "hybrid_search (k=10)": lambda n, t=tenant: timed(
                app, str(t), "select embedding_id from memsub.hybrid_search(%s, %s::vector, 10)",
                [words[n], vectors[n]]),
            "vector leg: semantic_search (50)": lambda n, t=tenant: timed(
                app, str(t), "select embedding_id from memsub.semantic_search(%s::vector, 50, 'content')",
                [vectors[n]]),
            "text leg: keyword_candidates (50)": lambda n, t=tenant: timed(
                app, str(t), "select embedding_id from memsub._keyword_candidates(%s, 'content', 50)", [words[n]]),
        })
        slower = max(figures["vector leg: semantic_search (50)"]["p50_ms"],
                     figures["text leg: keyword_candidates (50)"]["p50_ms"])
        for variant, figure in figures.items():
            results.append({"tenant": label, "variant": variant, **figure,
                            "vs_slower_leg_p50": figure["p50_ms"] / slower})
    return results


def build_graph(su: psycopg.Connection[Any], entities: int, fan_out: int) -> int:
    su.execute("select setseed(0.5)")
    for tenant in (BIG, OTHER):
        su.execute(
            "insert into memsub.entity_relationships (source_entity, relationship_type, target_entity, confidence,"
            " tenant_id) "
            "select 'entity' || s, (array['uses', 'supplies', 'owns', 'depends_on'])[1 + (random() * 3)::int],"
            "       'entity' || (1 + (random() * (%s - 1))::int), 0.5 + random() / 2, %s::uuid "
            "  from generate_series(1, %s) s cross join generate_series(1, %s) f "
            "on conflict (tenant_id, source_key, relationship_type, target_key) where upper_inf(valid_period) "
            "do nothing", [entities, str(tenant), entities, fan_out])
    su.execute("analyze memsub.entity_relationships")
    su.commit()
    row = su.execute("select count(*) from memsub.entity_relationships").fetchone()
    return int(row[0]) if row else 0


def traversal(app: psycopg.Connection[Any], entities: int, queries: int) -> list[dict[str, Any]]:
    # Every path up to the depth: as many rows as a call may ask for (max_rows); depth 5 reaches a few hundred.
    with app.transaction():
        row = app.execute("select memsub.limit_value('max_rows')").fetchone()
    assert row is not None
    most = int(row[0])
    variants: dict[str, Callable[[int], tuple[float, list[Any]]]] = {
        f"depth {depth}": lambda n, d=depth: timed(
            app, str(BIG), "select entity from memsub.traverse_graph(%s, %s, p_limit => %s)",
            [f"entity{1 + n * 97 % entities}", d, most])
        for depth in range(1, 6)}
    figures = side_by_side(queries, variants)
    base = figures["depth 1"]["p50_ms"]
    return [{"depth": name, **figure, "vs_depth_1_p50": figure["p50_ms"] / base} for name, figure in figures.items()]


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[f"{v:,.2f}" if isinstance(v, float) else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packets", type=int, default=50000)
    parser.add_argument("--types", default="content,summary", help="Embedding types per packet (content first).")
    parser.add_argument("--queries", type=int, default=40, help="Repetitions per figure.")
    parser.add_argument("--entities", type=int, default=20000)
    parser.add_argument("--fan-out", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="Print the results as one JSON object.")
    args = parser.parse_args()
    types = tuple(args.types.split(","))
    if types[0] != "content":
        parser.error("--types must start with content (the type every measurement searches)")
    spec = Spec(packets=args.packets, types=types)
    started = time.perf_counter()
    with bench_database(vector_dimension=384) as (superuser, app_dsn):
        with psycopg.connect(superuser) as su:
            load_start = time.perf_counter()
            build(su, spec)
            load_seconds = time.perf_counter() - load_start
            edges = build_graph(su, args.entities, args.fan_out)
            sizes = su.execute(
                "select count(*), count(*) filter (where embedding_type = 'content'),"
                " count(*) filter (where embedding_type = 'content' and tenant_id = %s),"
                " count(*) filter (where embedding_type = 'content' and tenant_id = %s),"
                " pg_size_pretty((select sum(pg_total_relation_size(t.relid))"
                f"                 from {EMBEDDING_TABLES} t(relid)))"
                " from memsub.memory_embeddings", [BIG, SMALL]).fetchone()
            su.commit()
            assert sizes is not None
            setup = {"embeddings": sizes[0], "content_embeddings": sizes[1], "big_tenant_rows": sizes[2],
                     "small_tenant_rows": sizes[3], "table_size": sizes[4], "edges": edges,
                     "load_seconds": round(load_seconds, 1), "dimension": 384, "types": list(types),
                     "server": describe(superuser)}
            if not args.json:
                print(f"setup: {json.dumps(setup)}", flush=True)
            with psycopg.connect(app_dsn, autocommit=True) as app:
                results = {
                    "setup": setup,
                    "semantic": semantic(su, app, spec, args.queries),
                    "rls_tax": rls_tax(su, app, spec, args.queries),
                    "hybrid": hybrid(su, app, spec, args.queries),
                    "traversal": traversal(app, args.entities, args.queries),
                }
    results["setup"]["total_seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
        return
    print("\nsemantic search (k=10, 'content') vs the exact scan, as the application role")
    print(table(["case", "method", "recall@10", "p50 ms", "p95 ms", "exact p50", "exact p95", "exact/semantic"],
                [[r["case"], r["method"], r["recall_at_10"], r["semantic_p50_ms"], r["semantic_p95_ms"],
                  r["exact_p50_ms"], r["exact_p95_ms"], r["speedup_p50"]] for r in results["semantic"]]))
    print("\nrow-level security tax per leg (baseline: superuser with an explicit tenant predicate)")
    print(table(["tenant", "leg", "variant", "p50 ms", "p95 ms", "rows", "vs baseline"],
                [[r["tenant"], r["leg"], r["variant"], r["p50_ms"], r["p95_ms"], r["rows"], r["vs_superuser_p50"]]
                 for r in results["rls_tax"]]))
    print("\nhybrid search vs its slower single leg (application role)")
    print(table(["tenant", "variant", "p50 ms", "p95 ms", "rows", "vs slower leg"],
                [[r["tenant"], r["variant"], r["p50_ms"], r["p95_ms"], r["rows"], r["vs_slower_leg_p50"]]
                 for r in results["hybrid"]]))
    print(f"\ngraph traversal by depth (big tenant, {args.entities} entities, fan-out {args.fan_out}, "
          f"{edges} edges in all)")
    print(table(["depth", "p50 ms", "p95 ms", "paths", "vs depth 1"],
                [[r["depth"], r["p50_ms"], r["p95_ms"], r["rows"], r["vs_depth_1_p50"]] for r in results["traversal"]]))
    print(f"\ntotal {results['setup']['total_seconds']} s")


if __name__ == "__main__":
    main()
