"""Retention of packet_store: deleting expired rows (memsub.purge_expired) against dropping time partitions.

Usage: python bench/partitioning.py [--packets 30000] [--days 10] [--expired-days 3] [--reads 300] [--json]
       python bench/partitioning.py --large        (300,000 packets over 30 days, 9 of them expired)

One private embedded server, one run, side by side:

- ``purge_expired``: N packets written with ``memsub.write_packets`` (as an application login, row-level
  security on) into the real schema, then the expired share removed by ``memsub.purge_expired()`` in a
  platform_admin context (what ``memsub maintain --task purge_expired`` runs), then ``VACUUM`` of packet_store,
  which a row delete needs before the space is reused (the files do not shrink);
- ``drop partitions``: the same rows copied into ``bench.packet_store_by_time``, a table of packet_store's
  columns and indexes range-partitioned by ``"timestamp"`` into one partition per day (every unique key extended
  by the partition key, as PostgreSQL requires), and the expired days removed by ``DETACH PARTITION`` and
  ``DROP TABLE``;
- ``tombstones + drop``: the same on a second copy, first writing the lineage tombstones purge_expired keeps
  (into a scratch copy of packet_tombstones), so lineage walks would still reach through the removed packets.

The packets are spread evenly over ``--days`` days ending now, in threads of 50 turns (20 threads interleaved
at a time; a third of the live turns derived from the previous turn of their thread, since an already
expired packet cannot be written as a parent). Every packet's ttl is the end of
its day plus a fixed retention, so exactly the oldest ``--expired-days`` days have expired and both methods
remove the same rows. For each method: wall time, WAL written (``pg_current_wal_lsn`` before and after, after a
checkpoint), table + index size afterwards, and the latency of reading one live thread
(``tenant_id, thread_id`` ordered by ``write_seq``, the query get_thread runs) over ``--reads`` random threads.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from _database import bench_database, environment, environment_line

TENANT = uuid.UUID("b0000000-0000-4000-8000-0000000000a7")
ADMIN_ROLE = "memsub_bench_platform_admin"
PER_THREAD = 50
CONCURRENT_THREADS = 20
BATCH = 500
WORDS = ("hdpe", "pellet", "supplier", "price", "freight", "lane", "invoice", "quote", "resin", "grade", "melt",
         "capacity", "tonnage", "contract", "delivery", "warehouse", "recycled", "customer", "margin", "forecast")
THREAD_READ = ('select packet_id, write_seq, envelope from {table} where tenant_id = %s and thread_id = %s '
               'order by write_seq limit 100')

Conn = psycopg.Connection[Any]


# -- data --------------------------------------------------------------------------------------------------


def envelopes(count: int, days: int, expired_days: int, start: datetime, seed: int) -> tuple[list[str], list[str]]:
    """The envelopes in write order, and the ids of the threads that are still live after the purge."""
    rng = random.Random(seed)
    step = timedelta(days=days) / count
    retention = timedelta(days=days - expired_days)
    out: list[str] = []
    last_in_thread: dict[str, str] = {}
    live_threads: set[str] = set()
    block = PER_THREAD * CONCURRENT_THREADS
    for n in range(count):
        thread = str(uuid.uuid5(TENANT, f"thread-{n // block}-{n % CONCURRENT_THREADS}"))
        stamp = start + step * n
        day = int((stamp - start) / timedelta(days=1))
        packet_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        envelope: dict[str, Any] = {
            "packet_id": packet_id, "packet_type": rng.choice(("event", "event", "memory_write", "insight")),
            "timestamp": stamp.isoformat(), "thread_id": thread,
            "ttl": (start + timedelta(days=day + 1) + retention).isoformat(),
            "payload": {"turn": n, "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60)))},
            "tags": rng.sample(("pricing", "logistics", "quality", "supplier_search"), 2),
        }
        if day >= expired_days:
            # Lineage only to live parents: a packet already expired when it is written cannot be a parent.
            if thread in last_in_thread and rng.random() < 0.35:
                envelope["lineage"] = {"parent_ids": [last_in_thread[thread]], "derivation_type": "transform"}
            last_in_thread[thread] = packet_id
            live_threads.add(thread)
        out.append(json.dumps(envelope))
    return out, sorted(live_threads)


def load(app_dsn: str, batch: list[str]) -> None:
    with psycopg.connect(app_dsn) as conn:
        for first in range(0, len(batch), BATCH):
            with conn.transaction():
                conn.execute("select memsub.set_context(%s)", [TENANT])
                conn.execute("select count(*) from memsub.write_packets(%s::jsonb)",
                             ["[" + ",".join(batch[first:first + BATCH]) + "]"], prepare=True)


# -- the partitioned copy ----------------------------------------------------------------------------------


def key_list_end(method_and_rest: str) -> int:
    """Where the key list of "USING method (keys) [WHERE ...]" closes: its parenthesis, not the first one, which
    may close an expression inside it (such as decode(content_hash, 'hex'))."""
    depth = 0
    for position, character in enumerate(method_and_rest):
        if character == "(":
            depth += 1
        elif character == ")":
            depth -= 1
            if depth == 0:
                return position
    raise ValueError(f"no key list in {method_and_rest!r}")


def partitioned_copy(conn: Conn, name: str, start: datetime, days: int) -> None:
    """packet_store's columns and indexes, partitioned by "timestamp" per day, holding the same rows."""
    table = sql.Identifier("bench", name)
    conn.execute(sql.SQL("create table {} (like memsub.packet_store including defaults including constraints) "
                         "partition by range (\"timestamp\")").format(table))
    for day in range(days):
        conn.execute(sql.SQL("create table {} partition of {} for values from ({}) to ({})").format(
            sql.Identifier("bench", f"{name}_d{day:03d}"), table,
            sql.Literal(start + timedelta(days=day)), sql.Literal(start + timedelta(days=day + 1))))
    conn.execute(sql.SQL("alter table {} add primary key (tenant_id, packet_id, \"timestamp\")").format(table))
    definitions = conn.execute(
        "select pg_get_indexdef(i.indexrelid), i.indisunique from pg_index i "
        "where i.indrelid = 'memsub.packet_store'::regclass and not i.indisprimary").fetchall()
    for number, (definition, unique) in enumerate(definitions):
        # "CREATE [UNIQUE] INDEX name ON memsub.packet_store USING method (columns) [WHERE ...]"
        method_and_rest = definition.split(" ON memsub.packet_store ", 1)[1]
        if unique:  # a unique key of a partitioned table must contain the partition key
            end = key_list_end(method_and_rest)
            method_and_rest = method_and_rest[:end] + ', "timestamp"' + method_and_rest[end:]
        conn.execute(sql.SQL("create {} index {} on {} ").format(
            sql.SQL("unique" if unique else ""), sql.Identifier(f"{name}_i{number}"), table)
            + sql.SQL(method_and_rest))  # the server's own index definition text, not a value
    conn.execute(sql.SQL("insert into {} select * from memsub.packet_store").format(table))


def total_size(conn: Conn, relation: str) -> int:
    row = conn.execute("select case when c.relkind = 'p' then (select coalesce(sum(pg_total_relation_size(t.relid)), "
                       "0) from pg_partition_tree(c.oid) t) else pg_total_relation_size(c.oid) end "
                       "from pg_class c where c.oid = %s::regclass", [relation]).fetchone()
    assert row is not None
    return int(row[0])


# -- measuring ---------------------------------------------------------------------------------------------


def measured(conn: Conn, action: Callable[[], Any]) -> dict[str, float]:
    """Wall time and WAL bytes of action(), starting after a checkpoint (both methods pay the same page images)."""
    conn.execute("checkpoint")
    before = conn.execute("select pg_current_wal_lsn()").fetchone()
    started = time.perf_counter()
    action()
    seconds = time.perf_counter() - started
    wal = conn.execute("select pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", [before[0] if before else None]).fetchone()
    return {"seconds": seconds, "wal_bytes": float(wal[0]) if wal else 0.0}


def thread_reads(dsn: str, table: str, threads: list[str]) -> dict[str, float]:
    query = sql.SQL(THREAD_READ).format(table=sql.SQL(table))  # a fixed table name of this script
    timings: list[float] = []
    rows = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        for thread in threads[:5]:
            conn.execute(query, [TENANT, thread], prepare=True).fetchall()  # warm the cache and the plan
        for thread in threads:
            started = time.perf_counter()
            rows += len(conn.execute(query, [TENANT, thread], prepare=True).fetchall())
            timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return {"p50_ms": statistics.median(timings), "p95_ms": timings[int(len(timings) * 0.95) - 1],
            "rows_per_read": rows / len(threads)}


def get_thread_reads(app_dsn: str, threads: list[str]) -> dict[str, float]:
    """The product's own read (memsub.get_thread as an application login, row-level security on)."""
    timings: list[float] = []
    with psycopg.connect(app_dsn, autocommit=True) as conn:
        conn.execute("select memsub.set_context(%s)", [TENANT])
        for thread in [*threads[:5], *threads]:
            started = time.perf_counter()
            conn.execute("select packet_id from memsub.get_thread(%s, 100)", [thread], prepare=True).fetchall()
            timings.append((time.perf_counter() - started) * 1000)
    timings = sorted(timings[5:])
    return {"p50_ms": statistics.median(timings), "p95_ms": timings[int(len(timings) * 0.95) - 1]}


def run(packets: int, days: int, expired_days: int, reads: int, seed: int) -> dict[str, Any]:
    start = (datetime.now(UTC) - timedelta(days=days)).replace(microsecond=0)
    batch, live_threads = envelopes(packets, days, expired_days, start, seed)
    with bench_database() as (dsn, app_dsn), psycopg.connect(dsn, autocommit=True) as conn:
        env = environment(dsn)
        conn.execute(sql.SQL("create role {} login in role memsub_platform_admin").format(
            sql.Identifier(ADMIN_ROLE)))
        conn.execute("select memsub.trust_login(%s)", [ADMIN_ROLE])
        clock = time.perf_counter()
        load(app_dsn, batch)
        load_seconds = time.perf_counter() - clock
        conn.execute("create schema bench")
        partitioned_copy(conn, "packet_store_by_time", start, days)
        partitioned_copy(conn, "packet_store_by_time_t", start, days)
        conn.execute("create table bench.tombstones (like memsub.packet_tombstones including all)")
        conn.execute("vacuum analyze")
        stored = conn.execute("select count(*) from memsub.packet_store").fetchone()
        expected = conn.execute(
            "select count(*) from memsub.packet_store where ttl <= now() at time zone 'UTC'").fetchone()
        sizes_before = {"purge_expired": total_size(conn, "memsub.packet_store"),
                        "drop partitions": total_size(conn, "bench.packet_store_by_time")}

        results: dict[str, dict[str, Any]] = {}

        # (a) row deletes, as memsub maintain runs them, then the vacuum that makes the space reusable
        purged: list[int] = []

        def purge() -> None:
            with psycopg.connect(make_conninfo(dsn, user=ADMIN_ROLE)) as admin:
                admin.execute("select memsub.set_context(null, null, null, array['platform_admin'], null)")
                purged.extend(int(n) for _, n in admin.execute("select * from memsub.purge_expired()").fetchall())

        delete = measured(conn, purge)
        vacuum = measured(conn, lambda: conn.execute("vacuum memsub.packet_store"))
        results["purge_expired"] = {
            "removed": sum(purged), "seconds": delete["seconds"], "wal_bytes": delete["wal_bytes"],
            "vacuum_seconds": vacuum["seconds"], "vacuum_wal_bytes": vacuum["wal_bytes"],
            "size_after": total_size(conn, "memsub.packet_store"),
            "tombstones_size": total_size(conn, "memsub.packet_tombstones")}

        # (b) drop the expired days' partitions
        def drop(name: str, tombstones: bool) -> int:
            removed = 0
            with conn.transaction():
                for day in range(expired_days):
                    partition = sql.Identifier("bench", f"{name}_d{day:03d}")
                    if tombstones:
                        conn.execute(sql.SQL(
                            "insert into bench.tombstones (tenant_id, packet_id, packet_type, thread_id, parent_ids,"
                            " generation, root_packet_id, \"timestamp\", write_seq, expired_at, scope, org_id,"
                            " user_id, session_id) select s.tenant_id, s.packet_id, s.packet_type, s.thread_id,"
                            " s.parent_ids, coalesce((s.envelope -> 'lineage' ->> 'generation')::integer, 0),"
                            " coalesce((s.envelope -> 'lineage' ->> 'root_packet_id')::uuid, s.packet_id),"
                            " s.\"timestamp\", s.write_seq, s.ttl, s.scope, s.org_id, s.user_id, s.session_id"
                            " from {} s on conflict do nothing").format(partition))
                    count = conn.execute(sql.SQL("select count(*) from {}").format(partition)).fetchone()
                    removed += int(count[0]) if count else 0
                    conn.execute(sql.SQL("alter table {} detach partition {}").format(
                        sql.Identifier("bench", name), partition))
                    conn.execute(sql.SQL("drop table {}").format(partition))
            return removed

        for label, name, tombstones in (("drop partitions", "packet_store_by_time", False),
                                        ("tombstones + drop", "packet_store_by_time_t", True)):
            counted: list[int] = []
            outcome = measured(conn, lambda n=name, t=tombstones, c=counted: c.append(drop(n, t)))
            results[label] = {"removed": counted[0], "seconds": outcome["seconds"],
                              "wal_bytes": outcome["wal_bytes"], "vacuum_seconds": 0.0, "vacuum_wal_bytes": 0.0,
                              "size_after": total_size(conn, f"bench.{name}"),
                              "tombstones_size": total_size(conn, "bench.tombstones") if tombstones else 0}
        conn.execute("analyze")

        sample = random.Random(seed).sample(live_threads, min(reads, len(live_threads)))
        results["purge_expired"]["thread_read"] = thread_reads(dsn, "memsub.packet_store", sample)
        results["drop partitions"]["thread_read"] = thread_reads(dsn, "bench.packet_store_by_time", sample)
        results["tombstones + drop"]["thread_read"] = results["drop partitions"]["thread_read"]
        bounded = thread_reads_bounded(dsn, sample)
        get_thread = get_thread_reads(app_dsn, sample)
    return {"environment": env, "packets": packets, "days": days, "expired_days": expired_days,
            "stored": int(stored[0]) if stored else 0, "expired": int(expected[0]) if expected else 0,
            "load_seconds": load_seconds, "reads": len(sample), "size_before": sizes_before, "results": results,
            "partitioned_read_with_day_bound": bounded, "get_thread": get_thread}


def thread_reads_bounded(dsn: str, threads: list[str]) -> dict[str, float]:
    """The partitioned read when the caller also knows the thread's day (the planner prunes to one partition)."""
    timings: list[float] = []
    query = ('select packet_id, write_seq, envelope from bench.packet_store_by_time where tenant_id = %s '
             'and thread_id = %s and "timestamp" >= %s and "timestamp" < %s order by write_seq limit 100')
    with psycopg.connect(dsn, autocommit=True) as conn:
        bounds = {thread: conn.execute(
            "select min(\"timestamp\"), max(\"timestamp\") from bench.packet_store_by_time "
            "where tenant_id = %s and thread_id = %s", [TENANT, thread]).fetchone() for thread in threads}
        for thread in [*threads[:5], *threads]:
            low, high = bounds[thread] or (None, None)
            started = time.perf_counter()
            conn.execute(query, [TENANT, thread, low, high + timedelta(microseconds=1)], prepare=True).fetchall()
            timings.append((time.perf_counter() - started) * 1000)
    timings = sorted(timings[5:])
    return {"p50_ms": statistics.median(timings), "p95_ms": timings[int(len(timings) * 0.95) - 1]}


def mb(value: float) -> str:
    return f"{value / 2**20:,.1f} MB"


def report(result: dict[str, Any]) -> str:
    lines = [environment_line(result["environment"]), "",
             f"{result['stored']:,} packets over {result['days']} days (loaded with write_packets in "
             f"{result['load_seconds']:.0f} s), {result['expired']:,} of them expired "
             f"({result['expired_days']} oldest days); thread reads over {result['reads']} live threads", "",
             f"{'method':<18} {'removed':>8} {'seconds':>8} {'WAL':>10} {'vacuum s':>9} {'vacuum WAL':>11} "
             f"{'size before':>12} {'size after':>11} {'tombstones':>11} {'read p50':>9} {'read p95':>9}"]
    before = result["size_before"]
    for method, row in result["results"].items():
        size_before = before["purge_expired"] if method == "purge_expired" else before["drop partitions"]
        lines.append(
            f"{method:<18} {row['removed']:>8,} {row['seconds']:>8.2f} {mb(row['wal_bytes']):>10} "
            f"{row['vacuum_seconds']:>9.2f} {mb(row['vacuum_wal_bytes']):>11} {mb(size_before):>12} "
            f"{mb(row['size_after']):>11} {mb(row['tombstones_size']):>11} "
            f"{row['thread_read']['p50_ms']:>7.2f}ms {row['thread_read']['p95_ms']:>7.2f}ms")
    bounded, get_thread = result["partitioned_read_with_day_bound"], result["get_thread"]
    lines += ["",
              f"partitioned thread read with the thread's time range as well (pruned to its partitions): "
              f"p50 {bounded['p50_ms']:.2f} ms, p95 {bounded['p95_ms']:.2f} ms",
              f"memsub.get_thread(thread, 100) as an application login (row-level security) on the real table: "
              f"p50 {get_thread['p50_ms']:.2f} ms, p95 {get_thread['p95_ms']:.2f} ms"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--packets", type=int, default=30_000)
    parser.add_argument("--days", type=int, default=10, help="time range of the packets, one partition per day")
    parser.add_argument("--expired-days", type=int, default=3, help="how many of the oldest days have expired")
    parser.add_argument("--reads", type=int, default=300, help="thread reads per method")
    parser.add_argument("--large", action="store_true", help="300,000 packets over 30 days, 9 expired")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.large:
        args.packets, args.days, args.expired_days = 300_000, 30, 9
    if not 0 < args.expired_days < args.days or args.packets < args.days * PER_THREAD or args.reads < 20:
        parser.error("need 0 < --expired-days < --days, at least 50 packets a day and --reads >= 20")
    result = run(args.packets, args.days, args.expired_days, args.reads, args.seed)
    print(json.dumps(result, indent=2, default=str) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
