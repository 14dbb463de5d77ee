"""Knowledge-graph UPSERT throughput under contention.

Several workers reinforce edges chosen from a Zipf distribution (a few hot edges take most observations), each
observation its own transaction, for a fixed time. Two runs on the same database and keys:

- memsub: ``memsub.upsert_relationship(...)`` as the application role (tenant context, row-level security,
  input checks, SECURITY DEFINER);
- baseline: a raw ``INSERT ... ON CONFLICT DO UPDATE`` on a plain table with the same unique key, as superuser.

Usage: python bench/upserts.py [--workers 4] [--seconds 5] [--edges 1000] [--zipf 1.1]
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).parent))
from _database import bench_database, describe

TENANT = uuid.UUID("aaaaaaaa-0000-0000-0000-0000000000be")

BASELINE_DDL = """
create table public.bench_edges (
    tenant_id uuid not null, source_entity text not null, relationship_type text not null,
    target_entity text not null, confidence double precision not null, mention_count integer not null,
    first_seen timestamptz not null, last_seen timestamptz not null)
"""
BASELINE_KEY = ("create unique index on public.bench_edges "
                "(tenant_id, source_entity, relationship_type, target_entity)")
BASELINE_UPSERT = """
insert into public.bench_edges as r values (%s, %s, 'uses', %s, 0.5, 1, now(), now())
on conflict (tenant_id, source_entity, relationship_type, target_entity) do update
   set mention_count = r.mention_count + 1, confidence = 1 - (1 - r.confidence) * (1 - excluded.confidence),
       last_seen = greatest(r.last_seen, excluded.last_seen)
"""


def zipf_keys(edges: int, s: float, count: int, seed: int) -> list[int]:
    weights = [1.0 / (k ** s) for k in range(1, edges + 1)]
    cumulative = list(itertools.accumulate(weights))
    return random.Random(seed).choices(range(edges), cum_weights=cumulative, k=count)


def run(dsn: str, mode: str, workers: int, seconds: float, edges: int, s: float) -> tuple[int, float, int]:
    counts = [0] * workers
    errors: list[BaseException] = []
    barrier = threading.Barrier(workers + 1)
    deadline = [0.0]

    def worker(index: int) -> None:
        keys = zipf_keys(edges, s, 200_000, seed=index)
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                barrier.wait()
                for key in keys:
                    if time.monotonic() >= deadline[0]:
                        break
                    source, target = f"entity-{key}", f"entity-{key * 7 % edges}"
                    if mode == "memsub":
                        with conn.transaction():
                            conn.execute("select memsub.set_context(%s)", [TENANT])
                            conn.execute("select memsub.upsert_relationship(%s, 'uses', %s, 0.5)", [source, target])
                    else:
                        conn.execute(BASELINE_UPSERT, [TENANT, source, target])
                    counts[index] += 1
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    deadline[0] = time.monotonic() + seconds
    started = time.monotonic()
    barrier.wait()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    if errors:
        raise errors[0]
    return sum(counts), elapsed, len(errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--edges", type=int, default=1000)
    parser.add_argument("--zipf", type=float, default=1.1)
    args = parser.parse_args()
    with bench_database() as (superuser, app):
        with psycopg.connect(superuser, autocommit=True) as conn:
            conn.execute(BASELINE_DDL)
            conn.execute(BASELINE_KEY)
        print(describe(superuser))
        print(f"workers={args.workers} seconds={args.seconds} edges={args.edges} zipf_s={args.zipf} "
              "(one observation per transaction)")
        results = {}
        for mode, dsn in (("baseline", superuser), ("memsub", app)):
            done, elapsed, _ = run(dsn, mode, args.workers, args.seconds, args.edges, args.zipf)
            results[mode] = done / elapsed
            print(f"{mode:9s} {done:7d} upserts in {elapsed:5.2f}s = {done / elapsed:8.0f}/s")
        with psycopg.connect(superuser) as conn:
            memsub_total = conn.execute("select sum(mention_count) from memsub.entity_relationships").fetchone()
            top = conn.execute("select max(mention_count) from memsub.entity_relationships").fetchone()
        print(f"memsub edges hold {memsub_total[0] if memsub_total else 0} mentions (hottest edge: "
              f"{top[0] if top else 0})")
        print(f"ratio memsub/baseline = {results['memsub'] / results['baseline']:.2f}")


if __name__ == "__main__":
    main()
