"""The legacy vector store (``semantic_memory``) searched for tenants of several sizes: recall@10 and latency of
``memsub.search_semantic_memory`` in each mode, side by side with the walk the function made before it chose a
method, on one server in one run.

Usage: python bench/semantic_memory.py [--rows 20000] [--kinds clustered,uniform] [--queries 30] [--json]

semantic_memory keeps one HNSW graph for every tenant; row-level security drops what a walk finds in other
tenants' rows. The rows (384-d) are split between tenants holding 1 %, 5 %, 20 % and 50 % of them and 40 small
tenants sharing the rest; ``clustered`` rows are drawn around 200 centres (bench/_vectors.py), ``uniform`` ones
are random directions (the worst case of a graph index). Every search runs as a login in ``memsub_app`` with
the tenant's context, and is timed by the client:

- ``walk before``: the statement search_semantic_memory ran before it chose a method, ``order by vector <=>
  query limit 10`` with iterative scan (strict order) at pgvector's default ef_search 40;
- ``auto``, ``exact`` and ``approximate``: ``search_semantic_memory(query, 10, mode => ...)``.

Recall@10 is measured against the exact neighbours of the tenant's rows (numpy). About two minutes at the
default 20,000 rows of each kind.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from _database import bench_database, environment, environment_line
from _vectors import VectorSource, exact_neighbours, recall

DIMENSION = 384
SHARES = (0.01, 0.05, 0.2, 0.5)
SMALL_TENANTS = 40
K = 10
WALK_BEFORE = ("select embedding_id from memsub.semantic_memory order by vector <=> %s limit 10")
MODES = ("auto", "exact", "approximate")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def draw(kind: str, count: int, source: VectorSource, rng: np.random.Generator) -> np.ndarray:
    if kind == "clustered":
        return source.draw(count)
    rows = rng.standard_normal((count, DIMENSION)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return np.round(rows, 6).astype(np.float32)


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"rows": args.rows, "queries": args.queries, "kinds": {}}
    rng = np.random.default_rng(5)
    for kind in args.kinds.split(","):
        source = VectorSource(DIMENSION)
        tenants = [uuid.uuid4() for _ in SHARES]
        owners = [t for t, share in zip(tenants, SHARES, strict=True) for _ in range(int(args.rows * share))]
        others = [uuid.uuid4() for _ in range(SMALL_TENANTS)]
        owners += [others[n % SMALL_TENANTS] for n in range(args.rows - len(owners))]
        data = draw(kind, args.rows, source, rng)
        with bench_database(DIMENSION) as (superuser, app):
            results["environment"] = environment(superuser)
            log(f"{kind}: loading {args.rows:,} rows")
            with psycopg.connect(superuser) as conn:
                register_vector(conn)
                with conn.cursor() as cur, cur.copy(
                        "copy memsub.semantic_memory (agent_id, vector, tenant_id) from stdin") as copy:
                    for owner, vector in zip(owners, data, strict=True):
                        copy.write_row(("agent", vector, owner))
                conn.execute("analyze memsub.semantic_memory")
                conn.commit()
            kind_result = []
            with psycopg.connect(app, autocommit=True) as conn, psycopg.connect(superuser) as owner:
                register_vector(conn)
                for tenant, share in zip(tenants, SHARES, strict=True):
                    rows = [(r[0], r[1]) for r in owner.execute(
                        "select embedding_id, vector::text from memsub.semantic_memory where tenant_id = %s"
                        " order by embedding_id", [tenant])]
                    matrix = np.array([json.loads(v) for _, v in rows], dtype=np.float32)
                    queries = draw(kind, args.queries, source, rng)
                    truth = [[rows[i][0] for i in near] for near in exact_neighbours(matrix, queries, K)]
                    legs: dict[str, Any] = {}
                    for leg in ("walk before", *MODES):
                        found, times, methods = [], [], set()
                        for query in queries:
                            with conn.transaction():
                                conn.execute("select memsub.set_context(%s)", [tenant])
                                start = time.perf_counter()
                                if leg == "walk before":
                                    conn.execute("set local hnsw.iterative_scan = strict_order")
                                    got = [(r[0], leg) for r in conn.execute(WALK_BEFORE, [query])]
                                else:
                                    got = list(conn.execute(
                                        "select embedding_id, method from memsub.search_semantic_memory("
                                        "%s, 10, p_mode => %s)", [query, leg]))
                                times.append(time.perf_counter() - start)
                            found.append([g[0] for g in got])
                            methods |= {g[1] for g in got}
                        legs[leg] = {"recall": recall(found, truth), "p50_ms": statistics.median(times) * 1000,
                                     "rows_min": min(len(f) for f in found), "methods": sorted(methods)}
                    kind_result.append({"share": share, "tenant_rows": len(rows), "legs": legs})
                    log(f"{kind} {share:.0%}: " + "; ".join(
                        f"{leg} recall {v['recall']:.3f} p50 {v['p50_ms']:.2f} ms" for leg, v in legs.items()))
            results["kinds"][kind] = kind_result
    return results


def report(results: dict[str, Any]) -> str:
    lines = [f"search_semantic_memory by tenant share, {results['rows']:,} rows of 384 dimensions per kind, "
             f"{results['queries']} queries per tenant, k 10 (recall@10 against the exact neighbours; p50 ms as "
             "the client sees it)", environment_line(results["environment"]), ""]
    lines.append("| kind | share (rows) | walk before: recall, p50 | auto: recall, p50, method | exact: recall, p50 "
                 "| approximate: recall, p50 |")
    lines.append("|---|---|---|---|---|---|")
    for kind, rows in results["kinds"].items():
        for row in rows:
            legs = row["legs"]
            cell = {leg: f"{v['recall']:.3f}, {v['p50_ms']:.2f}" for leg, v in legs.items()}
            short = [leg for leg, v in legs.items() if v["rows_min"] < K]
            lines.append(f"| {kind} | {row['share']:.0%} ({row['tenant_rows']:,}) | {cell['walk before']} | "
                         f"{cell['auto']}, {'/'.join(legs['auto']['methods'])} | {cell['exact']} | "
                         f"{cell['approximate']} |" + (f" fewer than 10 rows: {', '.join(short)}" if short else ""))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--kinds", default="clustered,uniform")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    results = run(args)
    print(json.dumps(results, indent=2, default=str) if args.json else report(results))


if __name__ == "__main__":
    main()
