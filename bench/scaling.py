"""How ingest rate and read latency change as memsub's tables grow: the curve, not one point.

Usage: python bench/scaling.py [--max 1000000] [--checkpoints 10000,30000,100000,300000,600000,1000000] [--batch 500]
                               [--queries 100] [--exact-queries 20] [--ef-search 10,20,40,100,200,400,1000]
                               [--dimension 384] [--out DIR] [--json]

One tenant writes agent traffic through ``memsub.write_packets`` (batches of --batch envelopes, one call per
transaction, as a login role in ``memsub_app``: row-level security applies) until the table holds the next
checkpoint's number of packets. Every envelope (every n-th with --embedding-every n) carries one 384-d
``content`` embedding in its ``memory`` field, so ``memory_embeddings`` grows with ``packet_store`` (HNSW maintained on
every write). Threads of 50 turns; a third
of the turns derive from 1-2 earlier turns of their thread.

At every checkpoint, side by side:

- ingest: packets/s of the segment just written (and of its last tenth), against a raw ``COPY`` of the last
  up to 20,000 of those packets and their embedding rows into bare tables (``like`` the memsub tables: no
  indexes, triggers or policies), measured right then;
- ``memsub.semantic_search`` (k = 10) p50/p95: the HNSW path (``mode => 'approximate'`` at the ef_search derived
  from the tenant's share and k) against the exact scan (``mode => 'exact'``), their latency ratio, and recall@10
  of HNSW against the exact results;
- the maintenance task ``memsub.tune_search()`` (its seconds), then ``semantic_search`` at its defaults (mode
  auto: the choice the tuned cost model makes), p50/p95, recall@10 against the exact results and the share of
  rows that came from the walk;
- ``memsub.get_packet`` of random stored packets and ``memsub.get_thread`` (replay of a 50-turn thread), p50/p95;
- table and index sizes.

After the last checkpoint, an ef_search sweep gives recall against latency. Recall counts ids; the distance
ratio (summed distances of the k found over those of the exact k) says how much farther the misses are.
``--rebuild-index M,EF_CONSTRUCTION`` then rebuilds the ``content`` HNSW index with those build parameters (as
``memsub vector-index rebuild`` does: ``memsub.set_vector_index_build``, then ``REINDEX INDEX CONCURRENTLY``,
with ``--rebuild-memory`` of maintenance_work_mem), runs ``tune_search`` again and measures the default search
and the sweep once more on the new graph.
Results are written after every checkpoint (``--out``), so a run stopped early keeps the checkpoints it finished.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from _database import APP_ROLE, TABLE_AND_INDEX_BYTES, bench_database, environment, environment_line
from _vectors import VectorSource, latency_summary, recall, vector_text
from memsub.vector_index import index_builds, rebuild_index

TENANT = uuid.UUID("b0000000-0000-4000-8000-0000000005ca")
ORG = uuid.UUID("b0000000-0000-4000-8000-0000000005cb")
WORDS = ("hdpe", "pellet", "supplier", "price", "freight", "lane", "invoice", "quote", "resin", "grade", "melt",
         "index", "capacity", "tonnage", "contract", "delivery", "warehouse", "certified", "recycled", "virgin",
         "customer", "margin", "spot", "forecast", "buyer", "seller", "broker", "sample", "trial", "load")
TAGS = ("hdpe", "ldpe", "pp", "pet", "supplier_search", "pricing", "logistics", "quality", "california", "texas")
TYPES = ("event", "event", "memory_write", "reasoning_trace", "insight")
PER_THREAD = 50
COPY_SAMPLE = 20000
K = 10


class Traffic:
    """Streams envelopes (JSON text) in write order; keeps a uniform sample of packet and thread ids."""

    def __init__(self, dimension: int, embedding_every: int = 1, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.embedding_every = embedding_every
        self.vectors = VectorSource(dimension, seed=seed + 1)
        self.base = datetime(2026, 1, 1, tzinfo=UTC)
        self.written = 0
        self.thread_id = ""
        self.thread_turns: list[str] = []
        self.sample_packets: list[uuid.UUID] = []
        self.sample_threads: list[uuid.UUID] = []

    def _keep(self, sample: list[uuid.UUID], value: uuid.UUID, seen: int, size: int = 2000) -> None:
        if len(sample) < size:
            sample.append(value)
        elif (slot := self.rng.randrange(seen)) < size:
            sample[slot] = value

    def batch(self, count: int) -> str:
        first = self.written
        with_vector = [n for n in range(first, first + count) if n % self.embedding_every == 0]
        vectors = dict(zip(with_vector, self.vectors.draw(len(with_vector)), strict=True))
        envelopes = []
        for n in range(first, first + count):
            if n % PER_THREAD == 0:
                self.thread_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
                self.thread_turns = []
                self._keep(self.sample_threads, uuid.UUID(self.thread_id), n // PER_THREAD + 1)
            packet_id = uuid.UUID(int=self.rng.getrandbits(128), version=4)
            packet_type = self.rng.choice(TYPES)
            text = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(20, 80)))
            payload: dict[str, Any] = {"turn": n, "speaker": self.rng.choice(("user", "agent", "tool")), "text": text}
            envelope: dict[str, Any] = {
                "packet_id": str(packet_id), "packet_type": packet_type,
                "timestamp": (self.base + timedelta(milliseconds=n)).isoformat(),
                "payload": payload,
                "metadata": {"schema_version": "1.1.0", "agent": "bench_agent", "domain": "plastic_brokerage"},
                "thread_id": self.thread_id,
                "tags": self.rng.sample(TAGS, self.rng.randint(1, 3)),
            }
            if n in vectors:
                envelope["memory"] = {"embeddings": [{"embedding_type": "content", "vector": vectors[n].tolist(),
                                                      "chunk_text": text[:80]}]}
            if self.thread_turns and self.rng.random() < 0.35:
                recent = self.thread_turns[-10:]
                envelope["lineage"] = {"parent_ids": self.rng.sample(recent, min(len(recent), self.rng.randint(1, 2))),
                                       "derivation_type": self.rng.choice(("split", "merge", "transform", "inference"))}
            if packet_type == "insight":
                envelope["confidence"] = {"score": round(self.rng.random(), 2), "rationale": "bench"}
            self.thread_turns.append(str(packet_id))
            self.written += 1
            self._keep(self.sample_packets, packet_id, self.written)
            envelopes.append(json.dumps(envelope))
        return "[" + ",".join(envelopes) + "]"


class App:
    """The application role's connection; each call is one transaction (set_context + the statement)."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)

    def call(self, query: bytes | sql.Composed, params: list[Any],
             settings: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
        """Run `query` in the benchmark tenant's context; `settings` (e.g. hnsw.ef_search) for this call only."""
        with self.conn.pipeline():
            self.conn.execute(b"select memsub.set_context(%s, %s)", [TENANT, ORG], prepare=True)
            if settings:
                self.conn.execute(b"select set_config(s.name, s.value, true)"
                                  b" from unnest(%s::text[], %s::text[]) as s(name, value)",
                                  [list(settings), list(settings.values())], prepare=True)
            cursor = self.conn.execute(query, params, prepare=True)
            return cursor.fetchall()


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    outcome = action()
    return time.perf_counter() - started, outcome


def prepare_bare(superuser: str) -> None:
    with psycopg.connect(superuser, autocommit=True) as conn:
        conn.execute("create schema bench")
        conn.execute("create table bench.bare_packets (like memsub.packet_store)")
        conn.execute("create table bench.bare_embeddings (like memsub.memory_embeddings)")
        role = sql.Identifier(APP_ROLE)
        conn.execute(sql.SQL("grant usage on schema bench to {}").format(role))
        conn.execute(sql.SQL("grant insert, select on bench.bare_packets, bench.bare_embeddings to {}").format(role))


def export_since(superuser: str, since: datetime) -> tuple[bytes, bytes, int]:
    """COPY text of the packets written at or after `since`, and of their embeddings (setup, not timed)."""
    streams = []
    with psycopg.connect(superuser) as conn, conn.cursor() as cur:
        for query in (
            sql.SQL('copy (select * from memsub.packet_store where "timestamp" >= {}) to stdout'),
            sql.SQL('copy (select e.* from memsub.memory_embeddings e join memsub.packet_store p using '
                    '(tenant_id, packet_id) where p."timestamp" >= {}) to stdout'),
        ):
            buffer = io.BytesIO()
            with cur.copy(query.format(sql.Literal(since))) as copy:
                for data in copy:
                    buffer.write(data)
            streams.append(buffer.getvalue())
        row = conn.execute('select count(*) from memsub.packet_store where "timestamp" >= %s', [since]).fetchone()
    return streams[0], streams[1], int(row[0]) if row else 0


def copy_into_bare(app_dsn: str, packets: bytes, embeddings: bytes) -> float:
    with psycopg.connect(app_dsn) as conn:
        started = time.perf_counter()
        with conn.transaction(), conn.cursor() as cur:
            for table, data in (("bench.bare_packets", packets), ("bench.bare_embeddings", embeddings)):
                with cur.copy(sql.SQL("copy {} from stdin").format(sql.SQL(table))) as copy:
                    view = memoryview(data)
                    for start in range(0, len(view), 1 << 20):
                        copy.write(view[start:start + (1 << 20)])
        return time.perf_counter() - started


def sizes(superuser: str) -> dict[str, int]:
    with psycopg.connect(superuser) as conn:
        packets = conn.execute(TABLE_AND_INDEX_BYTES, {"table": "memsub.packet_store"}).fetchone()
        embeddings = conn.execute(TABLE_AND_INDEX_BYTES, {"table": "memsub.memory_embeddings"}).fetchone()
        count = conn.execute("select count(*) from memsub.memory_embeddings").fetchone()
    assert packets is not None and embeddings is not None and count is not None
    return dict(zip(("packet_table", "packet_indexes", "embedding_table", "embedding_indexes", "embeddings"),
                    (int(v) for v in (*packets, *embeddings, count[0])), strict=True))


class Searched:
    """What a series of semantic_search calls returned: per query the seconds, the ids found and the sum of their
    distances; and the method of every row."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.found: list[list[uuid.UUID]] = []
        self.distance_sums: list[float] = []
        self.methods: list[str] = []

    def recall(self, exact: Searched) -> float:
        return recall(self.found[:len(exact.found)], exact.found)

    def distance_ratio(self, exact: Searched) -> float:
        """Mean over the exact queries of (summed distances of the k found) / (those of the exact k); 1.0 means the
        approximate neighbours are as near as the exact ones, even where recall counts them as misses."""
        ratios = [found / truth for found, truth in zip(self.distance_sums, exact.distance_sums, strict=False)
                  if truth > 0]
        return sum(ratios) / len(ratios) if ratios else 1.0


def search(app: App, queries: list[str], ef: int | None, mode: str) -> Searched:
    """semantic_search with p_mode `mode` ('exact', 'approximate' or 'auto') and p_ef_search `ef` (None: derived)."""
    searched = Searched()
    for query in queries:
        took, rows = timed(lambda q=query: app.call(
            b"select embedding_id, distance, method from memsub.semantic_search(%s::vector, %s, "
            b"p_mode => %s, p_ef_search => %s)", [q, K, mode, ef]))
        searched.seconds.append(took)
        searched.found.append([r[0] for r in rows])
        searched.distance_sums.append(sum(r[1] for r in rows))
        searched.methods.extend(r[2] for r in rows)
    return searched


def measure_checkpoint(superuser: str, app_dsn: str, app: App, traffic: Traffic, queries: list[str],
                       exact_queries: int, copy_since: datetime, log: Callable[[str], None]) -> dict[str, Any]:
    with psycopg.connect(superuser, autocommit=True) as conn:
        conn.execute("analyze memsub.packet_store, memsub.memory_embeddings")
    packets, embeddings, sampled = export_since(superuser, copy_since)
    copy_seconds = copy_into_bare(app_dsn, packets, embeddings)
    result: dict[str, Any] = {"copy": {"packets": sampled, "seconds": copy_seconds,
                                       "packets_per_s": sampled / copy_seconds,
                                       "bytes": len(packets) + len(embeddings)}}
    log(f"    COPY of {sampled:,} packets + embeddings: {sampled / copy_seconds:,.0f} packets/s")

    hnsw = search(app, queries, None, "approximate")
    exact = search(app, queries[:exact_queries], None, "exact")
    result["search_hnsw"] = latency_summary(hnsw.seconds)
    result["search_hnsw"]["approximate_share"] = hnsw.methods.count("approximate") / max(1, len(hnsw.methods))
    result["search_exact"] = latency_summary(exact.seconds)
    result["recall_hnsw"] = hnsw.recall(exact)
    result["distance_ratio_hnsw"] = hnsw.distance_ratio(exact)
    result["exact_over_hnsw_p50"] = result["search_exact"]["p50_ms"] / result["search_hnsw"]["p50_ms"]
    result["exact"] = exact  # kept for the ef_search sweep; dropped from the report
    log(f"    search HNSW p50 {result['search_hnsw']['p50_ms']:.1f} ms, exact p50 "
        f"{result['search_exact']['p50_ms']:.1f} ms, recall {result['recall_hnsw']:.3f}, "
        f"distance ratio {result['distance_ratio_hnsw']:.4f}")

    result.update(tuned_default_search(superuser, app, queries, exact))
    log(f"    tune_search {result['tune_search']['seconds']:.1f} s (method {result['tune_search']['method']}, "
        f"ef_search {result['tune_search']['ef_search']}, recall {result['tune_search']['recall']}); "
        f"default search p50 {result['search_default']['p50_ms']:.1f} ms, recall {result['recall_default']:.3f}, "
        f"walked {result['search_default']['approximate_share']:.0%}")

    picks = random.Random(len(traffic.sample_packets)).choices(traffic.sample_packets, k=300)
    seconds = []
    for packet_id in picks:
        took, rows = timed(lambda p=packet_id: app.call(b"select packet_id from memsub.get_packet(%s)", [p]))
        if len(rows) != 1:
            raise RuntimeError(f"get_packet({packet_id}) returned {len(rows)} rows")
        seconds.append(took)
    result["get_packet"] = latency_summary(seconds)
    threads = random.Random(len(traffic.sample_threads)).choices(traffic.sample_threads, k=100)
    seconds, replayed = [], []
    for thread_id in threads:
        took, rows = timed(lambda t=thread_id: app.call(
            b"select packet_id, packet_type, envelope from memsub.get_thread(%s)", [t]))
        seconds.append(took)
        replayed.append(len(rows))
    result["get_thread"] = latency_summary(seconds)
    result["get_thread"]["rows_mean"] = sum(replayed) / len(replayed)
    log(f"    get_packet p50 {result['get_packet']['p50_ms']:.2f} ms, get_thread p50 "
        f"{result['get_thread']['p50_ms']:.2f} ms ({result['get_thread']['rows_mean']:.0f} rows)")
    result["sizes"] = sizes(superuser)
    return result


def tune_search(superuser: str, samples: int | None = None) -> dict[str, Any]:
    """Run the maintenance task tune_search (as `memsub maintain` does, in a platform_admin context; with
    `samples` sample queries, or its default); its seconds and what it chose for the benchmark's tenant's
    content embeddings: method, ef_search, the sampled recall and that recall's lower bound."""
    call = (sql.SQL("memsub.tune_search()") if samples is None
            else sql.SQL("memsub.tune_search(p_samples => {})").format(sql.Literal(samples)))
    with psycopg.connect(superuser, autocommit=True) as conn:
        started = time.perf_counter()
        with conn.transaction():
            conn.execute("select memsub.set_context(%s, null, null, array['platform_admin'], null)", [TENANT])
            rows = conn.execute(sql.SQL("select tenant_id, embedding_type, method, ef_search, recall, recall_bound"
                                        " from {}").format(call)).fetchall()
        seconds = time.perf_counter() - started
    chosen = next((r for r in rows if r[0] == TENANT and r[1] == "content"), None)

    def measured(value: float | None) -> float | None:
        return round(value, 3) if value is not None else None
    return {"samples": samples, "seconds": seconds, "method": chosen[2] if chosen else None,
            "ef_search": chosen[3] if chosen else None, "recall": measured(chosen[4]) if chosen else None,
            "recall_bound": measured(chosen[5]) if chosen else None}


def tuned_default_search(superuser: str, app: App, queries: list[str], exact: Searched) -> dict[str, Any]:
    """tune_search (as the maintenance job runs it), then semantic_search at its defaults: p50/p95, the share of
    rows from the walk and recall@10 against the exact results."""
    chosen = tune_search(superuser)
    tuned = search(app, queries, None, "auto")
    summary = latency_summary(tuned.seconds)
    summary["approximate_share"] = tuned.methods.count("approximate") / max(1, len(tuned.methods))
    return {"tune_search": chosen, "search_default": summary, "recall_default": tuned.recall(exact)}


def sweep_points(app: App, queries: list[str], efs: list[int], exact: Searched,
                 log: Callable[[str], None]) -> list[dict[str, Any]]:
    points = []
    for ef in efs:
        searched = search(app, queries, ef, "approximate")
        summary = latency_summary(searched.seconds)
        summary.update({"ef_search": ef, "recall": searched.recall(exact),
                        "distance_ratio": searched.distance_ratio(exact)})
        points.append(summary)
        log(f"  ef_search {ef}: p50 {summary['p50_ms']:.1f} ms, recall {summary['recall']:.3f}, "
            f"distance ratio {summary['distance_ratio']:.4f}")
    return points


def rebuilt(superuser: str, app: App, queries: list[str], last: dict[str, Any], args: argparse.Namespace,
            log: Callable[[str], None]) -> dict[str, Any]:
    """The content index rebuilt with --rebuild-index's parameters, then tune_search, the default search and the
    ef_search sweep again, against the same exact results."""
    m, ef_construction = args.rebuild_index
    log(f"rebuilding the content index with m {m}, ef_construction {ef_construction}")
    with psycopg.connect(superuser, autocommit=True) as conn:
        [before] = index_builds(conn, "content")
        _, seconds = rebuild_index(conn, "content", m, ef_construction, args.rebuild_memory)
        [built] = index_builds(conn, "content")
    result: dict[str, Any] = {"m": m, "ef_construction": ef_construction, "seconds": seconds,
                              "index_bytes": built.index_bytes, "index_bytes_before": before.index_bytes}
    log(f"  rebuilt in {seconds:.0f} s")
    result.update(tuned_default_search(superuser, app, queries, last["exact"]))
    log(f"  tune_search chose {result['tune_search']['method']} at ef_search {result['tune_search']['ef_search']} "
        f"(recall {result['tune_search']['recall']}); default search p50 {result['search_default']['p50_ms']:.1f} ms, "
        f"recall {result['recall_default']:.3f}")
    result["ef_sweep"] = sweep_points(app, queries, args.ef_search, last["exact"], log)
    return result


def checkpoints(values: list[int], limit: int) -> Iterator[int]:
    yield from (c for c in values if c <= limit)
    if limit not in values and limit > max([0, *[c for c in values if c <= limit]]):
        yield limit


def run(args: argparse.Namespace, log: Callable[[str], None], save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    traffic = Traffic(args.dimension, args.embedding_every)
    # Same mixture as the data (same centres: same seed for the centres, own noise for the queries).
    query_source = VectorSource(args.dimension, seed=8)
    query_source.centers = traffic.vectors.centers
    queries = [vector_text(v) for v in query_source.draw(args.queries)]
    results: dict[str, Any] = {"checkpoints": [], "settings": {
        "max": args.max, "batch": args.batch, "queries": args.queries, "exact_queries": args.exact_queries,
        "dimension": args.dimension, "embedding_every": args.embedding_every, "copy_sample": COPY_SAMPLE,
        "per_thread": PER_THREAD}}
    with bench_database(vector_dimension=args.dimension) as (superuser, app_dsn):
        results["environment"] = environment(superuser)
        log(environment_line(results["environment"]))
        prepare_bare(superuser)
        app = App(app_dsn)
        last: dict[str, Any] | None = None
        for target in checkpoints(args.checkpoints, args.max):
            start = traffic.written
            log(f"writing packets {start:,} .. {target:,}")
            batch_seconds: list[tuple[int, float]] = []
            copy_from = max(start, target - COPY_SAMPLE)
            copy_since = traffic.base + timedelta(milliseconds=copy_from)
            while traffic.written < target:
                count = min(args.batch, target - traffic.written)
                payload = traffic.batch(count)
                took, rows = timed(lambda p=payload: app.call(
                    b"select count(*) from memsub.write_packets(%s::jsonb)", [p]))
                if rows[0][0] != count:
                    raise RuntimeError(f"write_packets stored {rows[0][0]} of {count}")
                batch_seconds.append((count, took))
            written = sum(c for c, _ in batch_seconds)
            tail = batch_seconds[-max(1, len(batch_seconds) // 10):]
            entry: dict[str, Any] = {
                "packets": target, "segment_packets": written,
                "ingest_packets_per_s": written / sum(s for _, s in batch_seconds),
                "ingest_last_tenth_per_s": sum(c for c, _ in tail) / sum(s for _, s in tail),
                "load_average_1m": round(os.getloadavg()[0], 2),
            }
            log(f"  ingest {entry['ingest_packets_per_s']:,.0f} packets/s "
                f"(last tenth {entry['ingest_last_tenth_per_s']:,.0f})")
            entry.update(measure_checkpoint(superuser, app_dsn, app, traffic, queries, args.exact_queries,
                                            copy_since, log))
            entry["ingest_over_copy"] = entry["ingest_last_tenth_per_s"] / entry["copy"]["packets_per_s"]
            last = entry
            results["checkpoints"].append({k: v for k, v in entry.items() if k != "exact"})
            save(results)
        if last is not None:
            log("ef_search sweep at the last checkpoint")
            sweep = sweep_points(app, queries, args.ef_search, last["exact"], log)
            results["ef_sweep"] = {"packets": last["packets"], "points": sweep}
            save(results)
            if args.rebuild_index:
                results["rebuilt"] = rebuilt(superuser, app, queries, last, args, log)
                save(results)
        app.conn.close()
    return results


def render(results: dict[str, Any]) -> str:
    lines = [f"memsub scaling: one tenant, write_packets batches; one 384-d embedding per "
             f"{results['settings']['embedding_every']} packet(s)", "",
             environment_line(results["environment"]), "",
             f"{'packets':>9} {'vectors':>8} {'ingest/s':>9} {'last10%/s':>9} {'COPY/s':>8} {'vs COPY':>7} "
             f"{'HNSW p50/p95 ms':>16} {'exact p50/p95 ms':>17} {'exact/HNSW':>10} {'recall':>6} "
             f"{'get_packet p50/p95':>18} {'get_thread p50/p95':>18} {'load':>5}"]
    tuned_lines = ["", "after tune_search, semantic_search at its defaults (mode auto):",
                   f"{'packets':>9} {'tune s':>7} {'chose':>11} {'ef':>5} {'tuned recall':>12} "
                   f"{'default p50/p95 ms':>19} {'recall':>6} {'walked':>6}"]
    for c in results["checkpoints"]:
        h, e, g, t = c["search_hnsw"], c["search_exact"], c["get_packet"], c["get_thread"]
        lines.append(
            f"{c['packets']:>9,} {c['sizes']['embeddings']:>8,} {c['ingest_packets_per_s']:>9,.0f} "
            f"{c['ingest_last_tenth_per_s']:>9,.0f} "
            f"{c['copy']['packets_per_s']:>8,.0f} {c['ingest_over_copy']:>7.3f} "
            f"{h['p50_ms']:>7.1f} / {h['p95_ms']:<6.1f} {e['p50_ms']:>8.1f} / {e['p95_ms']:<6.1f} "
            f"{c['exact_over_hnsw_p50']:>10.1f} {c['recall_hnsw']:>6.3f} "
            f"{g['p50_ms']:>8.2f} / {g['p95_ms']:<6.2f} {t['p50_ms']:>8.2f} / {t['p95_ms']:<6.2f} "
            f"{c['load_average_1m']:>5.1f}")
        if "search_default" in c:
            tuned, d = c["tune_search"], c["search_default"]
            tuned_recall = "-" if tuned["recall"] is None else f"{tuned['recall']:.3f}"
            tuned_lines.append(
                f"{c['packets']:>9,} {tuned['seconds']:>7.1f} {tuned['method'] or '-':>11} "
                f"{tuned['ef_search'] or '-':>5} {tuned_recall:>12} {d['p50_ms']:>9.1f} / {d['p95_ms']:<7.1f} "
                f"{c['recall_default']:>6.3f} {d['approximate_share']:>6.0%}")
    if len(tuned_lines) > 3:
        lines += tuned_lines
    if "ef_sweep" in results:
        lines += ["", f"ef_search sweep at {results['ef_sweep']['packets']:,} packets:"]
        lines += [f"  ef_search {p['ef_search']:>4}: p50 {p['p50_ms']:.1f} ms, p95 {p['p95_ms']:.1f} ms, "
                  f"recall@10 {p['recall']:.3f}, distance ratio {p['distance_ratio']:.4f}"
                  for p in results["ef_sweep"]["points"]]
    if "rebuilt" in results:
        r, d = results["rebuilt"], results["rebuilt"]["search_default"]
        lines += ["", f"content index rebuilt with m {r['m']}, ef_construction {r['ef_construction']} in "
                      f"{r['seconds']:.0f} s; tune_search chose {r['tune_search']['method']} at ef_search "
                      f"{r['tune_search']['ef_search']} (sampled recall {r['tune_search']['recall']}); default search "
                      f"p50 {d['p50_ms']:.1f} ms, p95 {d['p95_ms']:.1f} ms, recall@10 {r['recall_default']:.3f}, "
                      f"walked {d['approximate_share']:.0%}"]
        lines += [f"  ef_search {p['ef_search']:>4}: p50 {p['p50_ms']:.1f} ms, p95 {p['p95_ms']:.1f} ms, "
                  f"recall@10 {p['recall']:.3f}, distance ratio {p['distance_ratio']:.4f}" for p in r["ef_sweep"]]
    return "\n".join(lines)


def charts(results: dict[str, Any], out: Path) -> list[Path]:
    from _charts import plot_recall_latency, plot_versus_size

    points = results["checkpoints"]
    paths = [
        plot_versus_size({
            "semantic_search HNSW p50": [(c["packets"], c["search_hnsw"]["p50_ms"]) for c in points],
            "semantic_search HNSW p95": [(c["packets"], c["search_hnsw"]["p95_ms"]) for c in points],
            "semantic_search exact p50": [(c["packets"], c["search_exact"]["p50_ms"]) for c in points],
            "get_thread (50 turns) p50": [(c["packets"], c["get_thread"]["p50_ms"]) for c in points],
            "get_packet p50": [(c["packets"], c["get_packet"]["p50_ms"]) for c in points],
        }, out / "scaling_latency.png",
            f"Read latency vs data size (one embedding per {results['settings']['embedding_every']} packet(s))",
            "milliseconds"),
        plot_versus_size({
            "write_packets, 500 per call (last tenth of segment)":
                [(c["packets"], c["ingest_last_tenth_per_s"]) for c in points],
            "COPY into bare tables (same rows)": [(c["packets"], c["copy"]["packets_per_s"]) for c in points],
        }, out / "scaling_ingest.png", "Ingest rate vs data size", "packets per second"),
    ]
    if "ef_sweep" in results:
        sweep = results["ef_sweep"]
        paths.append(plot_recall_latency(
            {"memsub.semantic_search": ([p["p50_ms"] for p in sweep["points"]], [p["recall"] for p in sweep["points"]],
                                        [p["ef_search"] for p in sweep["points"]])},
            out / "scaling_recall_latency.png",
            f"Recall vs latency at {sweep['packets']:,} packets, {points[-1]['sizes']['embeddings']:,} embeddings, "
            "k=10 (labels: ef_search)"))
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--max", type=int, default=1_000_000, help="stop after this many packets (default 1M)")
    parser.add_argument("--checkpoints", default="10000,30000,100000,300000,600000,1000000")
    parser.add_argument("--batch", type=int, default=500, help="envelopes per write_packets call (default 500)")
    parser.add_argument("--queries", type=int, default=100, help="HNSW queries per checkpoint (default 100)")
    parser.add_argument("--exact-queries", type=int, default=20, help="exact-scan queries (default 20)")
    parser.add_argument("--ef-search", default="10,20,40,100,200,400,1000", help="sweep at the last checkpoint")
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--embedding-every", type=int, default=1,
                        help="every n-th packet carries an embedding (default 1: all of them)")
    parser.add_argument("--rebuild-index", default=None, metavar="M,EF_CONSTRUCTION",
                        help="after the last checkpoint, rebuild the content index with these build parameters and "
                             "measure again (e.g. 24,128)")
    parser.add_argument("--rebuild-memory", default="2GB", help="maintenance_work_mem of the rebuild (default 2GB)")
    parser.add_argument("--out", type=Path, help="write scaling.json and the PNG charts into this directory")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if args.rebuild_index:
        try:
            m, ef_construction = (int(v) for v in args.rebuild_index.split(","))
        except ValueError:
            parser.error("--rebuild-index takes M,EF_CONSTRUCTION, e.g. 24,128")
        args.rebuild_index = (m, ef_construction)
    args.checkpoints = sorted(int(c) for c in args.checkpoints.split(","))
    args.ef_search = [int(e) for e in args.ef_search.split(",")]
    if min(args.max, args.batch, args.queries, args.exact_queries, args.embedding_every, *args.checkpoints) < 1:
        parser.error("counts must be positive")
    args.exact_queries = min(args.exact_queries, args.queries)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def save(results: dict[str, Any]) -> None:
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "scaling.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
            if results["checkpoints"]:
                charts(results, args.out)

    started = time.time()
    results = run(args, log, save)
    results["seconds"] = round(time.time() - started, 1)
    save(results)
    print(json.dumps(results, indent=2, default=str) if args.json else render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
