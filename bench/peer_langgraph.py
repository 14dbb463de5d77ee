"""memsub against LangGraph's PostgresStore: the same server, data and embeddings, side by side in one run.

Usage: python bench/peer_langgraph.py [--users 500] [--keys 20] [--vectors 20000] [--queries 200]
                                      [--clients 1,2,4] [--ef-search 10,20,40,100,200] [--out DIR] [--json]

One private embedded PostgreSQL (or ``MEMSUB_BENCH_DSN``) holds both: memsub migrated at 384 dimensions and used
as a login role in ``memsub_app`` (row-level security applies), and LangGraph's ``store`` / ``store_vectors``
tables created by ``PostgresStore.setup()`` in a schema owned by a second login role. LangGraph's embed function
returns the precomputed vector of each text, so both sides index exactly the same vectors (cosine HNSW with
pgvector's default m = 16, ef_construction = 64 on both).

Operations, each timed per call on one connection per side:

- put: ``store.put(("user", id, "memories"), key, value, index=False)`` against ``memsub.memory_write`` into
  ``user:<id>:memories`` under that user's tenant context; then a second put of every key (LangGraph upserts;
  memsub writes version 2 stating version 1);
- get: ``store.get`` against ``memsub.memory_get``;
- namespace listing: ``store.search(namespace, limit=keys)`` against ``memsub.memory_list(namespace)`` (both
  return the namespace's ``keys`` live entries);
- vector load: ``store.batch`` of 500 ``PutOp`` with the text indexed against ``memsub.write_packets`` of 500
  envelopes whose ``memory`` field carries the same vector under ``embeddings``;
- vector search: ``store.search(("docs",), query=text, limit=10)`` against ``memsub.semantic_search`` (k = 10),
  with the same ``hnsw.ef_search`` on both sides; recall@10 of each against the exact neighbours;
- put throughput with 1, 2 and 4 clients (a connection each) for both.

Each memsub call is one transaction (``set_context`` + the function) sent in pipeline mode, which is how
PostgresStore sends its statements too: one round trip per call on both sides. The work is split into rounds
and the order of the two sides alternates between rounds, so a change of load on the shared machine falls on
both. Results are checked (every get finds its entry, every listing returns all keys) before they are reported.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from _adapter_report import rounds
from _database import bench_database, environment, environment_line, leaves, peer_login
from _vectors import VectorSource, exact_neighbours, latency_summary, recall, vector_text

TENANT = uuid.UUID("b0000000-0000-4000-8000-0000000000f1")
ORG = uuid.UUID("b0000000-0000-4000-8000-0000000000f2")
LANGGRAPH_ROLE = "langgraph_bench"
WORDS = ("hdpe", "pellet", "supplier", "price", "freight", "lane", "invoice", "quote", "resin", "grade", "melt",
         "capacity", "contract", "delivery", "warehouse", "recycled", "customer", "margin", "forecast", "broker")
K = 10


# -- the two sides ------------------------------------------------------------------------------------------


def prepare_langgraph(superuser: str) -> str:
    """A login role owning a schema for LangGraph's tables (the vector type stays in public)."""
    return peer_login(superuser, LANGGRAPH_ROLE, "langgraph", ("langgraph", "public"))


class LangGraph:
    """PostgresStore on its own connection, set up the way from_conn_string sets it up."""

    def __init__(self, dsn: str, index: dict[str, Any] | None) -> None:
        from langgraph.store.postgres import PostgresStore

        self.conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        self.store = PostgresStore(self.conn, index=index)  # type: ignore[arg-type]

    def set_ef_search(self, value: int) -> None:
        self.conn.execute("select set_config('hnsw.ef_search', %s, false)", [str(value)])

    def close(self) -> None:
        self.conn.close()


class Memsub:
    """One application-role connection; every call is one transaction: set_context, then the function."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)

    def call(self, user: uuid.UUID | None, query: bytes, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self.conn.pipeline():
            self.conn.execute(b"select memsub.set_context(%s, %s, %s)", [TENANT, ORG, user], prepare=True)
            cursor = self.conn.execute(query, params, prepare=True)
            return cursor.fetchall()

    def close(self) -> None:
        self.conn.close()


# -- data --------------------------------------------------------------------------------------------------


def sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


Entry = tuple[int, str, dict[str, Any]]  # (user number, key, value)


def make_entries(users: int, keys: int, rng: random.Random) -> tuple[list[uuid.UUID], list[Entry]]:
    ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(users)]
    entries = [(u, f"fact_{k:03d}", {"text": sentence(rng, 10, 40), "kind": rng.choice(("preference", "fact")),
                                      "confidence": round(rng.random(), 2)})
               for u in range(users) for k in range(keys)]
    rng.shuffle(entries)
    return ids, entries


# -- measuring ---------------------------------------------------------------------------------------------


def timed_each(items: Sequence[Any], action: Callable[[Any], Any]) -> list[float]:
    seconds = []
    for item in items:
        started = time.perf_counter()
        action(item)
        seconds.append(time.perf_counter() - started)
    return seconds


def alternate(items: Sequence[Any], sides: dict[str, Callable[[Any], Any]]) -> dict[str, list[float]]:
    """Each side performs every item once, in the adapter benchmarks' alternating rounds (_adapter_report.rounds)."""
    timings: dict[str, list[float]] = {name: [] for name in sides}
    for name, chunk in rounds(items, list(sides)):
        timings[name] += timed_each(chunk, sides[name])
    return timings


def compare(operation: str, timings: dict[str, list[float]], note: str = "") -> dict[str, Any]:
    lg, ms = latency_summary(timings["langgraph"]), latency_summary(timings["memsub"])
    return {"operation": operation, "langgraph": lg, "memsub": ms, "note": note,
            "ratio_ops": ms["ops_per_s"] / lg["ops_per_s"], "ratio_p50": ms["p50_ms"] / lg["p50_ms"],
            "ratio_p95": ms["p95_ms"] / lg["p95_ms"]}


def put_throughput(langgraph_dsn: str, memsub_dsn: str, clients: int, per_client: int, tag: str,
                   user_ids: list[uuid.UUID]) -> dict[str, float]:
    """Wall-clock puts/s of `clients` threads, each with its own connection, each writing its own keys."""
    rates: dict[str, float] = {}
    value = json.dumps({"text": "throughput probe " * 8, "kind": "fact"})

    def langgraph_worker(number: int, barrier: threading.Barrier) -> None:
        side = LangGraph(langgraph_dsn, None)
        namespace = ("user", str(user_ids[number]), "memories")
        barrier.wait()
        for j in range(per_client):
            side.store.put(namespace, f"{tag}_{number}_{j}", {"text": "throughput probe " * 8, "kind": "fact"},
                           index=False)
        side.close()

    def memsub_worker(number: int, barrier: threading.Barrier) -> None:
        side = Memsub(memsub_dsn)
        user = user_ids[number]
        namespace = f"user:{user}:memories"
        barrier.wait()
        for j in range(per_client):
            side.call(user, b"select version from memsub.memory_write(%s, %s, %s::jsonb)",
                      [namespace, f"{tag}_{number}_{j}", value])
        side.close()

    order = [("langgraph", langgraph_worker), ("memsub", memsub_worker)]
    if clients % 2 == 0:
        order.reverse()
    for name, worker in order:
        barrier = threading.Barrier(clients + 1)
        threads = [threading.Thread(target=worker, args=(n, barrier)) for n in range(clients)]
        for thread in threads:
            thread.start()
        barrier.wait()
        started = time.perf_counter()
        for thread in threads:
            thread.join()
        rates[name] = clients * per_client / (time.perf_counter() - started)
    return rates


def relation_bytes(superuser: str, tables: Sequence[str]) -> int:
    with psycopg.connect(superuser) as conn:
        # A partitioned table (memsub.memory_embeddings) holds its bytes in its partitions.
        query = ("select sum(pg_total_relation_size(p.relid)) from unnest(%s::text[]) t "  # noqa: S608 - no values
                 f"cross join lateral {leaves('t::regclass')} p(relid)")
        row = conn.execute(query, [list(tables)]).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


# -- the run -----------------------------------------------------------------------------------------------


def run(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    rng = random.Random(7)
    source = VectorSource(args.dimension)
    user_ids, entries = make_entries(args.users, args.keys, rng)
    doc_vectors = source.draw(args.vectors)
    query_vectors = source.draw(args.queries)
    doc_texts = [f"doc {i}: {sentence(rng, 8, 30)}" for i in range(args.vectors)]
    query_texts = [f"query {i}: {sentence(rng, 4, 12)}" for i in range(args.queries)]
    lookup: dict[str, list[float]] = {t: v.tolist() for t, v in zip(doc_texts, doc_vectors, strict=True)}
    lookup.update({t: v.tolist() for t, v in zip(query_texts, query_vectors, strict=True)})
    log("computing exact neighbours")
    truth = exact_neighbours(doc_vectors, query_vectors, K)

    def embed(texts: list[str]) -> list[list[float]]:
        return [lookup[t] for t in texts]

    results: dict[str, Any] = {"operations": [], "vector_search": [], "clients": []}
    with bench_database(vector_dimension=args.dimension) as (superuser, app):
        results["environment"] = environment(superuser)
        log(environment_line(results["environment"]))
        langgraph_dsn = prepare_langgraph(superuser)
        index = {"dims": args.dimension, "embed": embed, "fields": ["text"]}
        lg = LangGraph(langgraph_dsn, index)
        lg.store.setup()
        ms = Memsub(app)

        def ns(user: int) -> tuple[str, ...]:
            return ("user", str(user_ids[user]), "memories")

        def ms_ns(user: int) -> str:
            return f"user:{user_ids[user]}:memories"

        serialized = [json.dumps(value) for _, _, value in entries]
        items = list(zip(entries, serialized, strict=True))

        log(f"put: {len(entries):,} new keys in {args.users} namespaces")
        timings = alternate(items, {
            "langgraph": lambda it: lg.store.put(ns(it[0][0]), it[0][1], it[0][2], index=False),
            "memsub": lambda it: ms.call(user_ids[it[0][0]],
                                         b"select version from memsub.memory_write(%s, %s, %s::jsonb)",
                                         [ms_ns(it[0][0]), it[0][1], it[1]]),
        })
        results["operations"].append(compare("put (new key)", timings))

        log("put: every key again")
        rng.shuffle(items)
        updated = [((u, k, {**v, "confidence": 1.0}), json.dumps({**v, "confidence": 1.0})) for (u, k, v), _ in items]
        timings = alternate(updated, {
            "langgraph": lambda it: lg.store.put(ns(it[0][0]), it[0][1], it[0][2], index=False),
            "memsub": lambda it: ms.call(user_ids[it[0][0]],
                                         b"select version from memsub.memory_write(%s, %s, %s::jsonb, 1)",
                                         [ms_ns(it[0][0]), it[0][1], it[1]]),
        })
        results["operations"].append(compare("put (overwrite)", timings,
                                             "LangGraph updates the row; memsub inserts version 2"))

        log(f"get: {args.gets:,} random keys")
        probes = [entries[rng.randrange(len(entries))] for _ in range(args.gets)]
        misses = {"langgraph": 0, "memsub": 0}

        def lg_get(it: Entry) -> None:
            if lg.store.get(ns(it[0]), it[1]) is None:
                misses["langgraph"] += 1

        def ms_get(it: Entry) -> None:
            if not ms.call(user_ids[it[0]], b"select version, value from memsub.memory_get(%s, %s)",
                           [ms_ns(it[0]), it[1]]):
                misses["memsub"] += 1

        timings = alternate(probes, {"langgraph": lg_get, "memsub": ms_get})
        if any(misses.values()):
            raise RuntimeError(f"get missed entries: {misses}")
        results["operations"].append(compare("get", timings))

        log(f"namespace listing: {args.lists:,} namespaces of {args.keys} keys")
        namespaces = [rng.randrange(args.users) for _ in range(args.lists)]
        short = {"langgraph": 0, "memsub": 0}

        def lg_list(user: int) -> None:
            if len(lg.store.search(ns(user), limit=args.keys)) != args.keys:
                short["langgraph"] += 1

        def ms_list(user: int) -> None:
            if len(ms.call(user_ids[user], b"select key, version, value from memsub.memory_list(%s)",
                           [ms_ns(user)])) != args.keys:
                short["memsub"] += 1

        timings = alternate(namespaces, {"langgraph": lg_list, "memsub": ms_list})
        if any(short.values()):
            raise RuntimeError(f"listings returned too few entries: {short}")
        results["operations"].append(compare(f"namespace listing ({args.keys} entries)", timings,
                                             "LangGraph: newest first, limit; memsub: all live keys, by key"))

        log(f"vector load: {args.vectors:,} texts with their vectors, batches of {args.batch}")
        from langgraph.store.base import PutOp

        packet_ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(args.vectors)]
        row_of_packet = {p: i for i, p in enumerate(packet_ids)}
        batches = []
        for start in range(0, args.vectors, args.batch):
            rows = range(start, min(args.vectors, start + args.batch))
            ops = [PutOp(("docs",), f"d{i}", {"text": doc_texts[i]}) for i in rows]
            envelopes = "[" + ",".join(json.dumps({
                "packet_id": str(packet_ids[i]), "packet_type": "memory_write",
                "timestamp": f"2026-01-01T00:00:00.{i % 1000000:06d}Z",
                "metadata": {"schema_version": "1.1.0", "agent": "bench_agent", "domain": "peer"},
                "payload": {"text": doc_texts[i]}, "memory": {"embeddings": [
                    {"embedding_type": "content", "vector": doc_vectors[i].tolist(), "chunk_text": doc_texts[i]}]},
            }) for i in rows) + "]"
            batches.append((ops, envelopes, len(rows)))
        timings = alternate(batches, {
            "langgraph": lambda b: lg.store.batch(b[0]),
            "memsub": lambda b: ms.call(None, b"select count(*) from memsub.write_packets(%s::jsonb)", [b[1]]),
        })
        load = compare(f"vector load ({args.batch} per call)", timings)
        for side in ("langgraph", "memsub"):
            load[side]["items_per_s"] = args.vectors / sum(timings[side])
        load["ratio_items"] = load["memsub"]["items_per_s"] / load["langgraph"]["items_per_s"]
        results["operations"].append(load)
        with psycopg.connect(superuser, autocommit=True) as conn:
            stored = conn.execute("select (select count(*) from langgraph.store_vectors), "
                                  "(select count(*) from memsub.memory_embeddings)").fetchone()
            assert stored is not None
            if stored != (args.vectors, args.vectors):
                raise RuntimeError(f"vectors stored: {stored}, expected {args.vectors} on each side")
            conn.execute("vacuum analyze langgraph.store, langgraph.store_vectors, memsub.packet_store, "
                         "memsub.memory_embeddings, memsub.memory_entries")

        for ef in args.ef_search:
            log(f"vector search: {args.queries} queries, ef_search {ef}")
            lg.set_ef_search(ef)
            found: dict[str, list[list[int]]] = {"langgraph": [], "memsub": []}
            methods: list[str] = []

            def lg_search(q: int, found: dict[str, list[list[int]]] = found) -> None:
                hits = lg.store.search(("docs",), query=query_texts[q], limit=K)
                found["langgraph"].append([int(h.key[1:]) for h in hits])

            def ms_search(q: int, ef: int = ef, found: dict[str, list[list[int]]] = found,
                          methods: list[str] = methods) -> None:
                rows = ms.call(None, b"select packet_id, method from memsub.semantic_search("
                                     b"%s::vector, %s, p_ef_search => %s)",
                               [vector_text(query_vectors[q]), K, ef])
                found["memsub"].append([row_of_packet[r[0]] for r in rows])
                methods.extend(r[1] for r in rows)

            queries = list(range(args.queries))
            timings = alternate(queries, {"langgraph": lg_search, "memsub": ms_search})
            # Rounds reorder nothing within a side: results line up with the query order.
            entry = compare(f"vector search k={K}, ef_search {ef}", timings)
            entry["ef_search"] = ef
            entry["langgraph"]["recall"] = recall(found["langgraph"], truth)
            entry["memsub"]["recall"] = recall(found["memsub"], truth)
            entry["memsub"]["approximate_share"] = methods.count("approximate") / max(1, len(methods))
            results["vector_search"].append(entry)

        lg.close()
        ms.close()

        for clients in args.clients:
            log(f"put throughput: {clients} client(s) x {args.per_client} puts")
            rates = put_throughput(langgraph_dsn, app, clients, args.per_client, f"c{clients}", user_ids)
            results["clients"].append({"clients": clients, **rates, "ratio": rates["memsub"] / rates["langgraph"]})

        results["bytes"] = {
            "langgraph": relation_bytes(superuser, ["langgraph.store", "langgraph.store_vectors"]),
            "memsub_memory": relation_bytes(superuser, ["memsub.memory_entries", "memsub.audit"]),
            "memsub_packets": relation_bytes(superuser, ["memsub.packet_store", "memsub.memory_embeddings"]),
        }
    results["data"] = {"users": args.users, "keys_per_namespace": args.keys, "entries": len(entries),
                       "vectors": args.vectors, "queries": args.queries, "dimension": args.dimension,
                       "batch": args.batch, "gets": args.gets, "lists": args.lists, "per_client": args.per_client}
    return results


# -- report ------------------------------------------------------------------------------------------------


def render(results: dict[str, Any]) -> str:
    from _database import environment_line

    lines = ["memsub vs LangGraph PostgresStore: same server, data and embeddings, one run", "",
             environment_line(results["environment"]), ""]
    head = f"{'operation (vector load: items/s)':<42} {'LangGraph ops/s':>15} {'memsub ops/s':>13} {'ratio':>6}   " \
           f"{'p50 ms LG / ms':>15} {'p95 ms LG / ms':>15}"
    lines += [head, "-" * len(head)]
    for op in results["operations"] + results["vector_search"]:
        lg, ms = op["langgraph"], op["memsub"]
        rate, ratio = ("items_per_s", "ratio_items") if "items_per_s" in lg else ("ops_per_s", "ratio_ops")
        lines.append(f"{op['operation']:<42} {lg[rate]:>15,.0f} {ms[rate]:>13,.0f} "
                     f"{op[ratio]:>6.2f}   {lg['p50_ms']:>7.2f} / {ms['p50_ms']:<6.2f} "
                     f"{lg['p95_ms']:>7.2f} / {ms['p95_ms']:<6.2f}"
                     + (f"  recall LG {lg['recall']:.3f} / memsub {ms['recall']:.3f}" if "recall" in lg else ""))
    lines += ["", f"{'put throughput':<20} {'LangGraph/s':>12} {'memsub/s':>10} {'ratio':>6}"]
    for row in results["clients"]:
        lines.append(f"{row['clients']:>2} client(s){'':<8} {row['langgraph']:>12,.0f} {row['memsub']:>10,.0f} "
                     f"{row['ratio']:>6.2f}")
    b = results["bytes"]
    lines += ["", f"on disk: LangGraph {b['langgraph'] / 2**20:.1f} MiB; memsub memory_entries + audit "
                  f"{b['memsub_memory'] / 2**20:.1f} MiB, packet_store + memory_embeddings "
                  f"{b['memsub_packets'] / 2**20:.1f} MiB"]
    return "\n".join(lines)


def charts(results: dict[str, Any], out: Path) -> list[Path]:
    from _charts import plot_clients, plot_recall_latency

    sweep = results["vector_search"]
    series = {name: ([e[side]["p50_ms"] for e in sweep], [e[side]["recall"] for e in sweep],
                     [e["ef_search"] for e in sweep])
              for name, side in (("LangGraph PostgresStore", "langgraph"), ("memsub.semantic_search", "memsub"))}
    d = results["data"]
    return [
        plot_recall_latency(series, out / "peer_recall_latency.png",
                            f"Vector search, {d['vectors']:,} x {d['dimension']}-d, k=10 (labels: ef_search)"),
        plot_clients({"LangGraph store.put": [(r["clients"], r["langgraph"]) for r in results["clients"]],
                      "memsub.memory_write": [(r["clients"], r["memsub"]) for r in results["clients"]]},
                     out / "peer_put_clients.png", "Put throughput vs clients (one connection each)"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--users", type=int, default=500, help="namespaces (one per user, default 500)")
    parser.add_argument("--keys", type=int, default=20, help="keys per namespace (default 20)")
    parser.add_argument("--vectors", type=int, default=20000, help="indexed texts (default 20000)")
    parser.add_argument("--queries", type=int, default=200, help="vector queries per ef_search (default 200)")
    parser.add_argument("--gets", type=int, default=4000)
    parser.add_argument("--lists", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=500, help="vectors per load call (default 500)")
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--clients", default="1,2,4", help="client counts for put throughput (default 1,2,4)")
    parser.add_argument("--per-client", type=int, default=500, help="puts per client (default 500)")
    parser.add_argument("--ef-search", default="10,20,40,100,200", help="hnsw.ef_search values")
    parser.add_argument("--out", type=Path, help="write peer_langgraph.json and the PNG charts into this directory")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    args.clients = [int(c) for c in args.clients.split(",")]
    args.ef_search = [int(e) for e in args.ef_search.split(",")]
    if min(args.users, args.keys, args.vectors, args.queries, args.batch, *args.clients) < 1:
        parser.error("counts must be positive")
    if max(args.clients) > args.users:
        parser.error("need at least as many users as clients")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    started = time.time()
    results = run(args, log)
    results["seconds"] = round(time.time() - started, 1)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "peer_langgraph.json").write_text(json.dumps(results, indent=2) + "\n")
        for path in charts(results, args.out):
            log(f"wrote {path}")
    print(json.dumps(results, indent=2) if args.json else render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
