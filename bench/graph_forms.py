"""Three forms of HNSW graph over the same rows, side by side on one server: build time, bytes per row, server CPU
per insert, and walk latency and recall@10 at three ef_search values.

Usage: python bench/graph_forms.py [--rows 100000] [--forms vector_cosine,half_cosine,unit_half_ip]
                                   [--inserts 600] [--queries 200] [--pools 10] [--json]

The forms, each a plain table ``(id int primary key, vector vector(384))`` holding the same clustered 384-d rows
(bench/_vectors.py) with one HNSW index at pgvector's default build parameters (m 16, ef_construction 64):

- ``vector_cosine``: ``vector vector_cosine_ops``, what LangGraph's store and memsub before 2.35.0 build;
- ``half_cosine``: ``(vector::halfvec(384)) halfvec_cosine_ops``;
- ``unit_half_ip``: ``(l2_normalize(vector)::halfvec(384)) halfvec_ip_ops``, what memsub's graphs hold from 2.35.0
  (docs/decisions.md, "The graphs hold unit vectors in half precision").

Each index is built after its table is loaded, with 2GB of maintenance_work_mem and one parallel worker. Then
``--inserts`` new rows go into every table one statement each, the tables taking turns in 12 rounds (server CPU
from the backend's ``/proc/<pid>/schedstat``, median of the rounds' per-insert means), and ``--queries`` new
queries walk each graph for the ten nearest, twice at each ef_search: the walk returns ``--pools`` candidates in
the graph's own order (10, or more to re-rank a wider pool), and the ten nearest of them by the cosine distance of
the full vectors are the answer; recall@10 against the exact neighbours (numpy). At 100,000 rows it
takes about two minutes; ``--rows 1000000`` about 25 minutes and 8 GB of memory.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from typing import Any

import numpy as np
import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector

from _database import backend_cpu, environment, environment_line, private_cluster
from _vectors import VectorSource, exact_neighbours

DIMENSION = 384
FORMS = {
    "vector_cosine": ("vector vector_cosine_ops", "vector <=> %s"),
    "half_cosine": (f"(vector::halfvec({DIMENSION})) halfvec_cosine_ops",
                    f"vector::halfvec({DIMENSION}) <=> %s::halfvec({DIMENSION})"),
    "unit_half_ip": (f"(l2_normalize(vector)::halfvec({DIMENSION})) halfvec_ip_ops",
                     f"l2_normalize(vector)::halfvec({DIMENSION}) <#> l2_normalize(%s)::halfvec({DIMENSION})"),
}
EF_SEARCH = (40, 100, 250)
ROUNDS = 12


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    source = VectorSource(DIMENSION)
    data = np.concatenate([source.draw(min(100_000, args.rows - start)) for start in range(0, args.rows, 100_000)]
                          + [source.draw(args.inserts)])
    queries = source.draw(args.queries)
    truth = exact_neighbours(data[:args.rows], queries, 10)
    results: dict[str, Any] = {"rows": args.rows, "forms": {}}
    with private_cluster() as superuser, psycopg.connect(superuser, autocommit=True) as conn:
        conn.execute("create extension if not exists vector")
        results["environment"] = environment(superuser)
        log(environment_line(results["environment"]))
        register_vector(conn)
        conn.execute("set maintenance_work_mem = '2GB'")
        conn.execute("set max_parallel_maintenance_workers = 1")
        for form in args.forms:
            key, _ = FORMS[form]
            conn.execute(f"create table {form} (id int primary key, vector vector({DIMENSION}) not null)")
            with conn.cursor().copy(f"copy {form} (id, vector) from stdin with (format binary)") as copy:
                copy.set_types(["int4", "vector"])
                for number in range(args.rows):
                    copy.write_row([number, Vector(data[number])])
            started = time.perf_counter()
            conn.execute(f"create index {form}_graph on {form} using hnsw ({key})")
            built = time.perf_counter() - started
            conn.execute(f"vacuum analyze {form}")
            size = conn.execute(f"select pg_relation_size('{form}_graph')").fetchone()
            results["forms"][form] = {"build_s": built, "graph_bytes_per_row": (size[0] if size else 0) / args.rows}
            log(f"{form}: built in {built:.0f} s")
        cpu = backend_cpu(conn)
        per_insert: dict[str, list[float]] = {form: [] for form in args.forms}
        each = max(1, args.inserts // ROUNDS)
        for round_number in range(ROUNDS):
            for form in (args.forms if round_number % 2 == 0 else args.forms[::-1]):
                before = cpu() if cpu else 0.0
                for k in range(each):
                    number = args.rows + round_number * each + k
                    conn.execute(f"insert into {form} values (%s, %s)",  # noqa: S608 - a name of FORMS
                                 [number, Vector(data[number])], prepare=True)
                per_insert[form].append(((cpu() if cpu else 0.0) - before) / each * 1000)
        for form in args.forms:
            results["forms"][form]["insert_cpu_ms"] = statistics.median(per_insert[form]) if cpu else None
        for ef_search, form, pool in itertools.product(EF_SEARCH, args.forms, args.pools):
            conn.execute(f"set hnsw.ef_search = {ef_search}")
            _, order = FORMS[form]
            statement = (f"select id from (select id, vector from {form} order by {order} limit {pool}) s "  # noqa: S608
                         "order by vector <=> %s limit 10")  # the table and its ORDER BY come from FORMS
            latencies, hits = [], 0
            for _ in range(2):  # the second pass is the one reported: the graph's pages are then cached
                latencies, hits = [], 0
                for number, query in enumerate(queries):
                    started = time.perf_counter()
                    found = conn.execute(statement, [Vector(query)] * 2, prepare=True).fetchall()
                    latencies.append(time.perf_counter() - started)
                    hits += len({row[0] for row in found} & set(truth[number]))
            results["forms"][form][walk_key(ef_search, pool)] = {
                "p50_ms": statistics.median(latencies) * 1000, "recall": hits / (10 * len(queries))}
    return results


def walk_key(ef_search: int, pool: int) -> str:
    return f"ef_{ef_search}" + (f"_pool_{pool}" if pool != 10 else "")


def report(results: dict[str, Any], forms: list[str], pools: list[int]) -> str:
    first = results["forms"][forms[0]]
    lines = [f"HNSW graph forms over the same {results['rows']:,} clustered {DIMENSION}-d rows (m 16, "
             "ef_construction 64), one server", environment_line(results["environment"]), "",
             f"{'form':<14} {'build s':>8} {'B/row':>7} {'insert CPU ms':>14} {'vs first':>9}"]
    for form in forms:
        row = results["forms"][form]
        cpu = row["insert_cpu_ms"]
        ratio = f"{cpu / first['insert_cpu_ms']:.2f}" if cpu and first["insert_cpu_ms"] else "-"
        lines.append(f"{form:<14} {row['build_s']:>8.0f} {row['graph_bytes_per_row']:>7.0f} "
                     f"{cpu if cpu is not None else float('nan'):>14.3f} {ratio:>9}")
    for pool in pools:
        lines += ["", f"walks returning {pool} candidates, the ten nearest of them by the full vectors",
                  f"{'form':<14} " + " ".join(f"{'ef ' + str(ef) + ' p50 ms':>14} {'recall':>7} {'vs first':>9}"
                                              for ef in EF_SEARCH)]
        for form in forms:
            row = results["forms"][form]
            lines.append(f"{form:<14} " + " ".join(
                f"{row[walk_key(ef, pool)]['p50_ms']:>14.2f} {row[walk_key(ef, pool)]['recall']:>7.3f} "
                f"{row[walk_key(ef, pool)]['p50_ms'] / first[walk_key(ef, pools[0])]['p50_ms']:>9.2f}"
                for ef in EF_SEARCH))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--forms", default=",".join(FORMS),
                        help=f"comma-separated, the first is the baseline of the ratios ({', '.join(FORMS)})")
    parser.add_argument("--inserts", type=int, default=600)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pools", default="10",
                        help="comma-separated candidate counts each walk returns (10 or more; the first is the "
                             "baseline of the ratios)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.forms = [form.strip() for form in args.forms.split(",") if form.strip()]
    try:
        args.pools = [int(pool) for pool in args.pools.split(",") if pool.strip()]
    except ValueError:
        parser.error(f"--pools takes whole numbers, not {args.pools!r}")
    if not args.pools or min(args.pools) < 10:
        parser.error("--pools takes numbers of 10 or more")
    unknown = [form for form in args.forms if form not in FORMS]
    if unknown or not args.forms:
        parser.error(f"--forms takes {', '.join(FORMS)}, not {', '.join(unknown) or 'nothing'}")
    if args.rows < 1000 or args.inserts < ROUNDS or args.queries < 1:
        parser.error("--rows must be at least 1000, --inserts at least 12 and --queries at least 1")
    results = run(args)
    print(json.dumps(results, indent=2) if args.json else report(results, args.forms, args.pools))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
