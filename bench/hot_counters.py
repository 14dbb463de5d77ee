"""Does a frequently updated counter on a row that carries an HNSW-indexed vector slow updates down?

Three layouts, measured side by side in one run on a private embedded server:
  wide-100   counter on the vector row, fillfactor 100 (PostgreSQL's default)
  wide-80    counter on the vector row, fillfactor 80 (room for heap-only-tuple updates)
  narrow     counter in its own narrow table keyed like the vector row

Each layout takes the same random sequence of single-row `access_count + 1` updates, one per transaction.
Reported: updates/s, the share of heap-only-tuple (HOT) updates, and how much the HNSW index grew.

    python bench/hot_counters.py [--rows 20000] [--updates 5000] [--dimension 384] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

import psycopg

from _database import cpu_model, memory_bytes, private_cluster

LAYOUTS = {
    "wide-100": "create table bench_rows (id integer primary key, vector vector({dim}) not null, "
                "access_count integer not null default 0, last_accessed timestamptz) with (fillfactor = 100)",
    "wide-80": "create table bench_rows (id integer primary key, vector vector({dim}) not null, "
               "access_count integer not null default 0, last_accessed timestamptz) with (fillfactor = 80)",
    "narrow": "create table bench_rows (id integer primary key, vector vector({dim}) not null)",
}


def machine() -> dict[str, object]:
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "memory_gib": round(memory_bytes() / 2**30, 1)}


def run_layout(dsn: str, layout: str, rows: int, updates: int, dimension: int, seed: int) -> dict[str, float]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("drop table if exists bench_rows, bench_counters")
        conn.execute(LAYOUTS[layout].format(dim=dimension))
        conn.execute(f"insert into bench_rows (id, vector) select i, (select array_agg(random())::vector({dimension}) "  # noqa: S608 - integer option
                     f"from generate_series(1, {dimension}) where i > 0) from generate_series(1, %s) as i", [rows])
        if layout == "narrow":
            conn.execute("create table bench_counters (id integer primary key references bench_rows (id), "
                         "access_count integer not null default 0, last_accessed timestamptz)")
            conn.execute("insert into bench_counters (id) select id from bench_rows")
        conn.execute("create index bench_rows_hnsw on bench_rows using hnsw (vector vector_cosine_ops)")
        conn.execute("vacuum analyze")
        index_before = conn.execute("select pg_relation_size('bench_rows_hnsw')").fetchone()[0]
        table = "bench_counters" if layout == "narrow" else "bench_rows"
        statement = f"update {table} set access_count = access_count + 1, last_accessed = now() where id = %s"  # noqa: S608
        ids = random.Random(seed).choices(range(1, rows + 1), k=updates)
        started = time.perf_counter()
        for row_id in ids:
            conn.execute(statement, [row_id])
        seconds = time.perf_counter() - started
        conn.execute("select pg_stat_force_next_flush()")
        stats = conn.execute("select n_tup_upd, n_tup_hot_upd from pg_stat_user_tables where relname = %s",
                             [table]).fetchone()
        index_after = conn.execute("select pg_relation_size('bench_rows_hnsw')").fetchone()[0]
    return {"updates_per_second": updates / seconds, "hot_share": stats[1] / max(stats[0], 1),
            "hnsw_growth_kib": (index_after - index_before) / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--updates", type=int, default=5000)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with private_cluster() as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("create extension if not exists vector")
            version = conn.execute("show server_version").fetchone()[0]
            settings = {name: conn.execute(f"show {name}").fetchone()[0]
                        for name in ("shared_buffers", "synchronous_commit", "fsync")}
        results = {layout: run_layout(dsn, layout, args.rows, args.updates, args.dimension, args.seed)
                   for layout in LAYOUTS}
    baseline = results["narrow"]["updates_per_second"]
    report = {"machine": machine(), "postgresql": version, "settings": settings, "rows": args.rows,
              "updates": args.updates, "dimension": args.dimension, "results": results,
              "ratio_to_narrow": {k: v["updates_per_second"] / baseline for k, v in results.items()}}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"machine: {report['machine']}  PostgreSQL {version}  {settings}")
    print(f"{args.rows} rows x vector({args.dimension}), {args.updates} single-row counter updates, 1 per transaction")
    print(f"{'layout':<10} {'updates/s':>10} {'vs narrow':>10} {'HOT share':>10} {'HNSW growth':>12}")
    for layout, result in results.items():
        print(f"{layout:<10} {result['updates_per_second']:>10.0f} {report['ratio_to_narrow'][layout]:>10.2f} "
              f"{result['hot_share']:>10.2f} {result['hnsw_growth_kib']:>9.0f} KiB")


if __name__ == "__main__":
    main()
