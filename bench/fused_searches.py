"""entity_search and memory_search for a large tenant: latency by words, by a vector and by both, as a login in
``memsub_app``. Run it against two checkouts to compare code versions (PYTHONPATH=<checkout>/python).

Usage: python bench/fused_searches.py [--rows 10000] [--queries 200] [--json]

Two tenants hold ``--rows`` entities and ``--rows`` namespaced memory entries each (384-d random directions; each
name or text carries one word of 300, so a word matches one row in 300). The first tenant's searches run with
k 10: by one word, by a query vector, and by both; p50 and p95 in ms as the client sees them, the queries of each
kind taking turns. About a minute at the default sizes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from typing import Any

import psycopg

from _database import bench_database, environment, environment_line

SEARCHES = {
    "entity_search": "select count(*) from memsub.entity_search(%s, %s::vector, 10)",
    "memory_search": "select count(*) from memsub.memory_search(%s, %s::vector, 10)",
}
KINDS = ("words", "vector", "both")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load(superuser: str, tenants: list[uuid.UUID], rows: int) -> None:
    with psycopg.connect(superuser) as conn:
        conn.execute("select setseed(0.23)")
        conn.execute("""
            create function pg_temp.direction(n integer) returns vector language sql volatile as $$
                select array_agg(random_normal() + 0 * n)::vector from generate_series(1, 384)
            $$""")
        for tenant in tenants:
            conn.execute(
                "insert into memsub.world_model_entities (tenant_id, entity_id, entity_type, state_version, aliases,"
                " embedding) select %s, 'entity ' || g, 'Concept', 1, array['word' || (g %% 300)],"
                " pg_temp.direction(g) from generate_series(1, %s) g", [tenant, rows])
            conn.execute(
                "insert into memsub.memory_entries (tenant_id, namespace, key, version, value, embedding)"
                " select %s, 'app:notes', 'key ' || g, 1, jsonb_build_object('text', 'note word' || (g %% 300)),"
                " pg_temp.direction(g) from generate_series(1, %s) g", [tenant, rows])
        conn.commit()
        conn.autocommit = True
        conn.execute("vacuum analyze memsub.world_model_entities, memsub.memory_entries")


def run(args: argparse.Namespace) -> dict[str, Any]:
    tenants = [uuid.uuid4(), uuid.uuid4()]
    results: dict[str, Any] = {"rows": args.rows, "queries": args.queries, "searches": {}}
    with bench_database(384) as (superuser, app):
        results["environment"] = environment(superuser)
        log(f"loading {args.rows:,} entities and entries for each of two tenants")
        load(superuser, tenants, args.rows)
        with psycopg.connect(app, autocommit=True) as conn:
            vectors = [r[0] for r in conn.execute(
                "select (select array_agg(random_normal() + 0 * g + 0 * i)::vector::text"
                " from generate_series(1, 384) i) from generate_series(1, %s) g", [args.queries])]
            timings: dict[str, dict[str, list[float]]] = {s: {k: [] for k in KINDS} for s in SEARCHES}
            for number, vector in enumerate(vectors):
                word = f"word{number % 300}"
                for search, statement in SEARCHES.items():
                    for kind in KINDS:
                        arguments = [None if kind == "vector" else word, None if kind == "words" else vector]
                        with conn.transaction():
                            conn.execute("select memsub.set_context(%s)", [tenants[0]])
                            start = time.perf_counter()
                            found = conn.execute(statement, arguments).fetchone()
                            timings[search][kind].append(time.perf_counter() - start)
                        if not found or found[0] != 10:
                            raise RuntimeError(f"{search} by {kind} found {found}")
        for search, kinds in timings.items():
            results["searches"][search] = {
                kind: {"p50_ms": statistics.median(t) * 1000,
                       "p95_ms": statistics.quantiles(t, n=20)[-1] * 1000} for kind, t in kinds.items()}
    return results


def report(results: dict[str, Any]) -> str:
    lines = [f"entity_search and memory_search of a tenant holding {results['rows']:,} rows (of two such tenants), "
             f"{results['queries']} queries of each kind, k 10: p50 / p95 ms", environment_line(results["environment"]),
             "", "| search | by words | by a vector | by both |", "|---|---|---|---|"]
    for search, kinds in results["searches"].items():
        lines.append(f"| {search} | " + " | ".join(
            f"{kinds[k]['p50_ms']:.2f} / {kinds[k]['p95_ms']:.2f}" for k in KINDS) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    results = run(args)
    print(json.dumps(results, indent=2, default=str) if args.json else report(results))


if __name__ == "__main__":
    main()
