"""Where tune_search sets a large tenant's ef_search, against what new queries find at every ef_search.

Usage: python bench/tune_at_scale.py [--rows 200000] [--m 24] [--ef-construction 128] [--queries 100]
                                     [--exact-queries 50] [--samples 20,100] [--tunes 3] [--json]

One tenant holds every row: clustered 384-d ``content`` embeddings (the mixture scaling.py writes), one per
packet. The rows are loaded in bulk, not through the write path: 500 envelopes are written by
``memsub.write_packets`` as the application role, then, as the superuser, their packets are cloned to --rows and
the embeddings are copied in with the ``content`` HNSW index dropped, which is then built in one pass with --m and
--ef-construction (as ``memsub vector-index rebuild`` would leave it). This benchmark measures the search and its
tuning on a large graph; scaling.py measures the same search after ingest through the write path, where a
million rows take about two hours to write.

Then, as the application role (row-level security applies):

- ``memsub.semantic_search`` (k = 10, mode approximate) at ef_search 40 to 1000 for --queries new queries drawn
  from the data's mixture: p50 and recall@10 against the exact scan of the first --exact-queries of them;
- side by side at each ef_search, the baseline: the bare walk of the same HNSW index by the same login in the same
  context (``set_context``, then ``select embedding_id from memsub.memory_embeddings ... order by <the index's key>
  limit 10``, a prepared statement planned with sorts disabled, as memsub plans its walk), so that what the graph
  costs is told apart from what memsub adds to it. Both connections first walk every query once at the largest
  ef_search: a server process maps the pages of shared memory it reads on first touch (about 270 page faults per
  search at 1M rows), which a long-lived pooled connection pays once;
- ``memsub.tune_search`` (as the maintenance job runs it, platform_admin context) --tunes times for each sample
  size in --samples: its seconds, the method and ef_search it chose, its sampled recall and that recall's lower
  bound; and after each, ``semantic_search`` at its defaults (mode auto) for the same queries.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from _database import bench_database, environment, environment_line
from _vectors import VectorSource, latency_summary, vector_text
from memsub.vector_index import index_builds
from scaling import TENANT, App, K, Searched, Traffic, search, timed, tune_search

TEMPLATE_PACKETS = 500
EF_SWEEP = (40, 100, 160, 250, 400, 625, 1000)  # with tune_search's steps from 100: 250, 625, 1000
COPY_BLOCK = 10000


def load(superuser: str, app: App, traffic: Traffic, rows: int, m: int, ef_construction: int, build_memory: str,
         log: Callable[[str], None]) -> dict[str, float]:
    """Write TEMPLATE_PACKETS envelopes, clone their packets to `rows`, copy the other embeddings in and build the
    content index with (m, ef_construction); the seconds of the load and of the build."""
    app.call(b"select count(*) from memsub.write_packets(%s::jsonb)", [traffic.batch(TEMPLATE_PACKETS)])
    rest = rows - TEMPLATE_PACKETS
    started = time.perf_counter()
    with psycopg.connect(superuser, autocommit=True) as conn:
        register_vector(conn)
        # The index is dropped for the load and created again from the definition the server gives back, with the
        # build parameters added. A partitioned index reads back as "ON ONLY" the parent; created on the parent,
        # it builds every partition's graph, each recording the parameters (read back below).
        [build] = index_builds(conn, "content")
        found = conn.execute("select pg_get_indexdef(format('memsub.%%I', %s::text)::regclass)",
                             [build.index_name]).fetchone()
        assert found is not None
        head, separator, predicate = found[0].replace(" ON ONLY ", " ON ", 1).partition(" WHERE ")
        if not separator or " WITH (" in head:
            raise RuntimeError(f"unexpected definition of the content index: {found[0]}")
        definition = sql.SQL("{} WITH (m = {}, ef_construction = {}) WHERE {}").format(
            sql.SQL(head), sql.Literal(m), sql.Literal(ef_construction), sql.SQL(predicate))
        conn.execute(sql.SQL("drop index {}").format(sql.Identifier("memsub", build.index_name)))
        conn.execute("create temporary table clone as"
                     " select g as n, gen_random_uuid() as packet_id from generate_series(0, %s - 1) g", [rest])
        conn.execute(
            'insert into memsub.packet_store (packet_id, packet_type, envelope, "timestamp", routing, provenance,'
            "  thread_id, tags, scope, importance_score, content_hash, tenant_id, org_id, user_id, session_id,"
            "  trace_id)"
            ' select c.packet_id, t.packet_type, t.envelope, t."timestamp" + (c.n + 1) * interval \'1 ms\','
            "        t.routing, t.provenance, t.thread_id, t.tags, t.scope, t.importance_score,"
            "        encode(sha256(convert_to(c.packet_id::text, 'UTF8')), 'hex'), t.tenant_id, t.org_id, t.user_id,"
            "        t.session_id, t.trace_id"
            "   from clone c"
            "   join (select row_number() over (order by p.write_seq) - 1 as number, p.* from memsub.packet_store p) t"
            "     on t.number = c.n %% %s", [TEMPLATE_PACKETS])
        owner = conn.execute("select tenant_id, org_id, user_id, scope from memsub.memory_embeddings"
                             " limit 1").fetchone()
        assert owner is not None
        packet_ids = [r[0] for r in conn.execute("select packet_id from clone order by n")]
        with conn.cursor() as cursor, cursor.copy(
                "copy memsub.memory_embeddings (packet_id, embedding_type, vector, chunk_text, tenant_id, org_id,"
                " user_id, scope) from stdin (format binary)") as copy:
            copy.set_types(["uuid", "text", "vector", "text", "uuid", "uuid", "uuid", "text"])
            for start in range(0, rest, COPY_BLOCK):
                for offset, vector in enumerate(traffic.vectors.draw(min(COPY_BLOCK, rest - start))):
                    copy.write_row((packet_ids[start + offset], "content", vector, "bench chunk", *owner))
        conn.execute("analyze memsub.packet_store, memsub.memory_embeddings")
        loaded = time.perf_counter() - started
        log(f"loaded {rows:,} rows in {loaded:.0f} s; building the content index (m {m}, ef_construction "
            f"{ef_construction})")
        conn.execute("select pg_catalog.set_config('maintenance_work_mem', %s, false)", [build_memory])
        started = time.perf_counter()
        conn.execute(definition)
        built = time.perf_counter() - started
        conn.execute("analyze memsub.memory_embeddings")
        [rebuilt] = index_builds(conn, "content")
        if (rebuilt.m, rebuilt.ef_construction, rebuilt.valid) != (m, ef_construction, True):
            raise RuntimeError(f"the content index was built as {rebuilt}, not at m {m} / ef_construction "
                               f"{ef_construction}")
    return {"load_seconds": loaded, "build_seconds": built}


class BareWalk:
    """The baseline walk: the content index's own ORDER BY ... LIMIT k on memory_embeddings, as the application
    login in the benchmark tenant's context (row-level security applies), at a given ef_search."""

    def __init__(self, superuser: str, app_dsn: str) -> None:
        with psycopg.connect(superuser) as conn:
            found = conn.execute("select memsub._vector_graph_order('e.vector', %s)", ["%s::vector"]).fetchone()
        assert found is not None
        self.statement = sql.SQL("select embedding_id from memsub.memory_embeddings e"
                                 " where e.tenant_id = %s and e.embedding_type = 'content'"
                                 " order by {} limit {}").format(sql.SQL(found[0]), sql.Literal(K))
        self.app = App(app_dsn)

    def search(self, queries: list[str], ef: int) -> Searched:
        # Sorts disabled as memsub plans its walk: otherwise the planner may sort a small tenant's rows instead
        # (at 5,000 rows, from ef_search 250 on), and the baseline would be an exact scan.
        settings = {"hnsw.ef_search": str(ef), "hnsw.iterative_scan": "relaxed_order", "enable_sort": "off"}
        searched = Searched()
        for query in queries:
            took, rows = timed(functools.partial(self.app.call, self.statement, [TENANT, query], settings))
            searched.seconds.append(took)
            searched.found.append([r[0] for r in rows])
        return searched

    def close(self) -> None:
        self.app.conn.close()


def run(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    traffic = Traffic(args.dimension)
    query_source = VectorSource(args.dimension, seed=8)
    query_source.centers = traffic.vectors.centers
    queries = [vector_text(v) for v in query_source.draw(args.queries)]
    results: dict[str, Any] = {"settings": {"rows": args.rows, "m": args.m, "ef_construction": args.ef_construction,
                                            "queries": args.queries, "exact_queries": args.exact_queries,
                                            "samples": args.samples, "tunes": args.tunes,
                                            "build_memory": args.build_memory}}
    with bench_database(vector_dimension=args.dimension) as (superuser, app_dsn):
        results["environment"] = environment(superuser)
        log(environment_line(results["environment"]))
        app = App(app_dsn)
        results["load"] = load(superuser, app, traffic, args.rows, args.m, args.ef_construction, args.build_memory,
                               log)
        log(f"built in {results['load']['build_seconds']:.0f} s")
        exact = search(app, queries[:args.exact_queries], None, "exact")
        results["exact"] = latency_summary(exact.seconds)
        log(f"exact scan p50 {results['exact']['p50_ms']:.1f} ms")
        bare = BareWalk(superuser, app_dsn)
        search(app, queries, EF_SWEEP[-1], "approximate")  # warm-up of both server processes, not measured
        bare.search(queries, EF_SWEEP[-1])
        results["sweep"] = []
        for ef in EF_SWEEP:
            walked = search(app, queries, ef, "approximate")
            baseline = bare.search(queries, ef)
            bare_point: dict[str, float] = {"recall": baseline.recall(exact), **latency_summary(baseline.seconds)}
            point: dict[str, Any] = {"ef_search": ef, "recall": walked.recall(exact),
                                     **latency_summary(walked.seconds), "bare": bare_point}
            results["sweep"].append(point)
            log(f"ef_search {ef}: p50 {point['p50_ms']:.1f} ms, recall {point['recall']:.3f}; bare walk p50 "
                f"{bare_point['p50_ms']:.1f} ms, recall {bare_point['recall']:.3f}")
        bare.close()
        results["tunes"] = []
        for samples in args.samples:
            for _ in range(args.tunes):
                chosen = tune_search(superuser, samples)
                searched: Searched = search(app, queries, None, "auto")
                chosen["default"] = {"recall": searched.recall(exact),
                                     "walked": searched.methods.count("approximate") / max(1, len(searched.methods)),
                                     **latency_summary(searched.seconds)}
                results["tunes"].append(chosen)
                log(f"tune_search, {samples} samples: {chosen['method']} at ef_search {chosen['ef_search']} "
                    f"({chosen['seconds']:.0f} s); default search p50 {chosen['default']['p50_ms']:.1f} ms, "
                    f"recall {chosen['default']['recall']:.3f}")
        app.conn.close()
    return results


def render(results: dict[str, Any]) -> str:
    s = results["settings"]
    lines = [f"tune_search on one tenant of {s['rows']:,} clustered 384-d rows, graph built in one pass at m {s['m']} "
             f"/ ef_construction {s['ef_construction']} ({results['load']['build_seconds']:.0f} s, "
             f"maintenance_work_mem {s['build_memory']}); one run", "",
             environment_line(results["environment"]), "",
             f"new queries: {s['queries']}, recall@10 against the exact scan of {s['exact_queries']} "
             f"(exact p50 {results['exact']['p50_ms']:.1f} ms)", "",
             f"{'ef_search':>9} {'p50 ms':>8} {'recall':>7} {'bare p50':>9} {'recall':>7} {'memsub/bare':>11}",
             "-" * 57]
    lines += [f"{p['ef_search']:>9} {p['p50_ms']:>8.1f} {p['recall']:>7.3f} {p['bare']['p50_ms']:>9.1f} "
              f"{p['bare']['recall']:>7.3f} {p['p50_ms'] / p['bare']['p50_ms']:>11.2f}" for p in results["sweep"]]
    lines += ["", f"{'samples':>7} {'seconds':>8} {'method':>12} {'ef_search':>9} {'sampled':>8} {'bound':>6} "
              f"{'default p50':>11} {'recall':>7}", "-" * 76]
    for t in results["tunes"]:
        sampled = f"{t['recall']:.3f}" if t["recall"] is not None else "-"
        bound = f"{t['recall_bound']:.3f}" if t["recall_bound"] is not None else "-"
        lines.append(f"{t['samples']:>7} {t['seconds']:>8.1f} {t['method']:>12} {t['ef_search']:>9} {sampled:>8} "
                     f"{bound:>6} {t['default']['p50_ms']:>11.1f} {t['default']['recall']:>7.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200000)
    parser.add_argument("--m", type=int, default=24)
    parser.add_argument("--ef-construction", type=int, default=128)
    parser.add_argument("--build-memory", default="2GB", help="maintenance_work_mem of the index build")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--exact-queries", type=int, default=50)
    parser.add_argument("--samples", type=lambda text: [int(x) for x in text.split(",")], default=[20, 100])
    parser.add_argument("--tunes", type=int, default=3)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if args.rows <= TEMPLATE_PACKETS:
        parser.error(f"--rows must be more than {TEMPLATE_PACKETS}")
    if not 0 < args.exact_queries <= args.queries:
        parser.error("--exact-queries must be between 1 and --queries")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    results = run(args, log)
    print(json.dumps(results, indent=2, default=str) if args.json else render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
