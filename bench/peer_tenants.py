"""memsub against LangGraph's PostgresStore with many tenants: get by id (one and 100), filtered vector search
per tenant size, and recall per tenant share, on clustered, uniform random and real text embeddings; one run, one
server.

Usage: python bench/peer_tenants.py [--vectors 6000] [--kinds clustered,uniform,real] [--queries 40] [--gets 400]
                                    [--gets-only] [--json] [--out DIR] [--cache DIR]

The data: ``--vectors`` 384-d unit vectors per kind spread over 100 tenants; one tenant holds 50 %, others 20, 10, 5,
2, 1 and 0.5 %, the remaining 11.5 % is shared by 93 small tenants (at least 200 vectors; a tenant holding k rows
or fewer must return all of them). For each kind of vector (``clustered``: a Gaussian mixture like text embeddings;
``uniform``: no neighbourhood structure; ``real``: paragraphs of the docstrings and descriptions of the installed
packages, bench/_corpus.py, embedded by memsub's MiniLM embedder offline, queried by held-out paragraphs of the
same corpus; ``--cache DIR`` keeps those vectors between runs) both sides load
the same rows: memsub through ``memsub.write_packets`` in each tenant's context (as a login in ``memsub_app``),
LangGraph through ``store.batch`` of ``PutOp`` into namespace ``("docs", tenant)`` with the text indexed by the
same vector. Then ``vacuum analyze`` and memsub's maintenance task ``tune_search`` (as run by ``memsub maintain``).

Timed side by side (rounds alternate which side goes first, as in peer_langgraph.py; one round trip per memsub
call: ``set_context`` and the call in one pipeline on an autocommit connection, whose Sync commits both, as
the client's per-call mode sends them):

- get one item: memsub's packet with its vectors against ``store.get(("docs", tenant), key)``; memsub reads it
  as the Python client does: ``get_packets_with_vector_values(ids)`` in binary, the vectors put back into the
  envelope (``memsub.packets.envelope_with_vectors``); on an older installation that has ``get_packet_vectors``
  instead, ``get_packets(ids, false)`` and ``get_packet_vectors(ids)`` in one pipeline, as the client then did;
- get 100 items of a tenant: the same for 100 ids against ``store.batch`` of 100 ``GetOp``;
- in the same rounds, the envelope with its vectors as JSON (``memsub.get_packets(ids)``, what a SQL caller
  reads) and without the vectors (``p_with_vectors => false``: each ``memory.embeddings[]`` vector null), when
  the installation has them (LangGraph's get never returns its vectors, which live in ``store_vectors``);
- vector search k = 10 in one tenant: ``memsub.semantic_search`` at its defaults (``mode => 'auto'``) and with
  ``mode => 'exact'`` against ``store.search(("docs", tenant), query=..., limit=10)`` at pgvector's default
  ``hnsw.ef_search`` (40); recall@10 of each against the exact neighbours within the tenant (numpy), and the
  number of rows returned, and (from 2.30.0, memory_embeddings partitioned by tenant) the partition each named
  tenant hashes to and its share of that partition's rows ("graph (share)"), the graph its walk reads, and the
  ef_search ``tune_search`` reached for it with the lower bound of the recall it measured there ("tuned ef
  (bound)"; blank where the cost model scans the tenant exactly without measuring its walk).

On a database migrated by an older memsub without ``get_packets``, ``tune_search`` or ``p_mode`` (to measure
"before"), the 100-item get is 100 ``get_packet`` calls in one pipeline, tuning is skipped and the exact variant
passes ``p_exact_below => 100000`` (above the row count).
The kinds use the embedding types content, context and summary, so each is its own vector space.
Time: about 15 minutes at the default 6,000 vectors per kind on two cores shared with other work (load 11),
most of it loading (100 tenants, a transaction each per batch); ``--vectors 100000`` is opt-in and takes hours
there.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from _corpus import PACKAGE_SHARE, embed_passages, passages, site_packages
from _database import bench_database, environment, environment_line
from _vectors import VectorSource, exact_neighbours, latency_summary, recall, vector_text
from memsub import _calls, packets
from memsub.embedding import MINILM_DIMENSION
from peer_langgraph import LangGraph, alternate, compare, prepare_langgraph

K = 10
SHARES = (0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005)
SMALL_TENANTS = 93


def tenant_layout(count: int) -> list[int]:
    """Tenant number of each row: the named shares first, then the small tenants round robin; shuffled."""
    owners: list[int] = []
    for number, share in enumerate(SHARES):
        owners += [number] * round(share * count)
    rest = count - len(owners)
    owners += [len(SHARES) + (i % SMALL_TENANTS) for i in range(rest)]
    random.Random(5).shuffle(owners)
    return owners[:count]


class Memsub:
    """One application-role connection; each call is one pipelined transaction in a tenant's context."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.typed = False

    def call(self, tenant: uuid.UUID, query: bytes, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self.conn.pipeline():
            self.conn.execute(b"select memsub.set_context(%s)", [tenant], prepare=True)
            cursor = self.conn.execute(query, params, prepare=True)
            return cursor.fetchall()

    def calls(self, tenant: uuid.UUID, statements: Sequence[tuple[Any, ...]]) -> list[Any]:
        """Each (statement, parameters[, binary]) in one pipeline after the context; binary results for those
        that ask (pgvector's adapters registered on first use)."""
        if any(len(s) > 2 and s[2] for s in statements) and not self.typed:
            _calls.register_vector_type(self.conn)
            self.typed = True
        with self.conn.pipeline():
            self.conn.execute(b"select memsub.set_context(%s)", [tenant], prepare=True)
            cursors = [self.conn.execute(s[0], s[1], prepare=True, binary=len(s) > 2 and s[2]) for s in statements]
            return [c.fetchall() for c in cursors]

    def close(self) -> None:
        self.conn.close()


KINDS = ("clustered", "uniform", "real")
EMBEDDING_TYPE = {"clustered": "content", "uniform": "context", "real": "summary"}


def draw(kind: str, count: int, dimension: int, seed: int) -> np.ndarray:
    if kind == "clustered":
        return VectorSource(dimension, seed=seed).draw(count)
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((count, dimension)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return np.round(rows, 6).astype(np.float32)


def real_texts(count: int, package_share: float) -> list[str]:
    """``count`` distinct passages of the installed packages' documentation (bench/_corpus.py), in a fixed order,
    at most ``count`` x ``package_share`` from one top-level package."""
    found = passages(count, package_share=package_share)
    if len(found) < count:
        raise SystemExit(f"real: {len(found):,} distinct passages under {site_packages()}, {count:,} needed "
                         f"(--vectors plus {len(SHARES)} x --queries); a larger --package-share finds more")
    return found[:count]


def run_kind(kind: str, args: argparse.Namespace, superuser: str, app: str, langgraph_dsn: str,
             log: Callable[[str], None]) -> dict[str, Any]:
    rng = random.Random(13)
    total = args.vectors + args.queries * len(SHARES)
    if kind == "real":
        corpus = real_texts(total, args.package_share)
        log(f"real: embedding {total:,} passages with MiniLM")
        started = time.perf_counter()
        both = embed_passages(corpus, args.cache, log)
        embed_seconds = time.perf_counter() - started
    else:
        both = draw(kind, total, args.dimension, 21)
        embed_seconds = float("nan")
    data, pool = both[:args.vectors], both[args.vectors:]  # real: the queries are held-out passages
    owners = tenant_layout(args.vectors)
    tenants = [uuid.UUID(int=(0xE0 << 120) + KINDS.index(kind) * 1000 + n, version=4)
               for n in range(len(SHARES) + SMALL_TENANTS)]
    texts = corpus[:args.vectors] if kind == "real" else [f"{kind} doc {i}" for i in range(args.vectors)]
    lookup = {t: v.tolist() for t, v in zip(texts, data, strict=True)}
    query_text = {f"{kind} query {i}": v.tolist() for i, v in enumerate(pool)}
    lookup.update(query_text)
    packet_ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(args.vectors)]
    space = f"docs_{kind}"

    def embed(values: list[str]) -> list[list[float]]:
        return [lookup[t] for t in values]

    lg = LangGraph(langgraph_dsn, {"dims": args.dimension, "embed": embed, "fields": ["text"]})
    lg.store.setup()
    ms = Memsub(app)
    from langgraph.store.base import GetOp, PutOp

    log(f"{kind}: loading {args.vectors:,} vectors over {len(tenants)} tenants on both sides")
    rows_of: dict[int, list[int]] = {}
    for row, owner in enumerate(owners):
        rows_of.setdefault(owner, []).append(row)
    for owner, rows in rows_of.items():
        for start in range(0, len(rows), 500):
            chunk = rows[start:start + 500]
            lg.store.batch([PutOp((space, str(tenants[owner])), f"d{i}", {"text": texts[i]}) for i in chunk])
            envelopes = "[" + ",".join(json.dumps({
                "packet_id": str(packet_ids[i]), "packet_type": "memory_write",
                "timestamp": "2026-01-01T00:00:00Z",
                "metadata": {"schema_version": "1.1.0", "agent": "bench_agent", "domain": "peer"},
                "payload": {"text": texts[i]}, "memory": {"embeddings": [
                    {"embedding_type": EMBEDDING_TYPE[kind],
                     "vector": data[i].tolist(), "chunk_text": texts[i]}]},
            }) for i in chunk) + "]"
            ms.call(tenants[owner], b"select count(*) from memsub.write_packets(%s::jsonb)", [envelopes])
    with psycopg.connect(superuser, autocommit=True) as conn:
        conn.execute("vacuum analyze langgraph.store, langgraph.store_vectors, memsub.packet_store, "
                     "memsub.memory_embeddings")
        tuned = conn.execute("select to_regprocedure('memsub.tune_search(integer, integer)') is not null"
                             ).fetchone()
        if tuned and tuned[0]:
            log(f"{kind}: tune_search")
            started = time.perf_counter()
            with conn.transaction():
                conn.execute("select memsub.set_context(%s, null, null, array['platform_admin'], null)",
                             [tenants[0]])
                conn.execute("select count(*) from memsub.tune_search()")
            tune_seconds = time.perf_counter() - started
        else:
            tune_seconds = float("nan")
        multi = conn.execute("select to_regprocedure('memsub.get_packets(uuid[])') is not null "
                             "or to_regprocedure('memsub.get_packets(uuid[], boolean)') is not null").fetchone()
        has_multi = bool(multi and multi[0])
        lean = conn.execute("select to_regprocedure('memsub.get_packets(uuid[], boolean)') is not null").fetchone()
        has_lean = bool(lean and lean[0])
        typed = conn.execute("select to_regprocedure('memsub.get_packets_with_vector_values(uuid[])') is not null, "
                             "to_regprocedure('memsub.get_packet_vectors(uuid[])') is not null").fetchone()
        one_statement = bool(typed and typed[0])
        has_typed = bool(typed and (typed[0] or typed[1]))
        mode = conn.execute("select exists (select from pg_proc where proname = 'semantic_search' "
                            "and 'p_mode' = any(proargnames))").fetchone()
        exact_option = b", p_mode => 'exact'" if mode and mode[0] else b", p_exact_below => 100000"
        # Where each named tenant's vectors lie: memory_embeddings partitioned by tenant (2.30.0) gives each
        # partition its own graph, which a tenant shares with the tenants hashed there. With it, what tune_search
        # left for the tenant: the ef_search it reached and the lower bound of the recall it measured there (none
        # where the cost model scans the tenant exactly without measuring its walk).
        placement: dict[uuid.UUID, dict[str, Any]] = {}
        if conn.execute("select to_regprocedure('memsub._embedding_partition(uuid)') is not null").fetchone()[0]:
            for tenant in tenants[:len(SHARES)]:
                row = conn.execute(
                    "select memsub._embedding_partition(%s), st.row_count::float8 / st.type_rows, st.ef_search, "
                    "st.recall_bound from memsub.search_stats st where st.tenant_id = %s and st.embedding_type = %s",
                    [tenant, tenant, EMBEDDING_TYPE[kind]]).fetchone()
                if row is not None and row[1] is not None:
                    placement[tenant] = {"partition": int(row[0]), "graph_share": float(row[1]),
                                         "tuned_ef_search": row[2], "tuned_recall_bound": row[3]}

    result: dict[str, Any] = {"kind": kind, "operations": [], "search": [], "tune_seconds": tune_seconds,
                              "embed_seconds": embed_seconds}
    embedding_type = EMBEDDING_TYPE[kind]

    def ms_read(tenant: uuid.UUID, ids: list[uuid.UUID], shape: str) -> list[tuple[Any, ...]]:
        if shape == "memsub" and one_statement:
            [rows] = ms.calls(tenant, [(b"select packet_id, envelope, vectors "
                                        b"from memsub.get_packets_with_vector_values(%s)", [ids], True)])
            return [(packet_id, packets.envelope_with_vectors(envelope, vectors))
                    for packet_id, envelope, vectors in rows]
        if shape == "memsub" and has_typed:
            found, vectors = ms.calls(tenant, [
                (b"select packet_id, envelope from memsub.get_packets(%s, p_with_vectors => false)", [ids]),
                (b"select packet_id, vectors from memsub.get_packet_vectors(%s)", [ids], True)])
            slots = dict(vectors)
            return [(packet_id, packets.envelope_with_vectors(envelope, slots.get(packet_id)))
                    for packet_id, envelope in found]
        lean = b", p_with_vectors => false" if shape == "lean" else b""
        return ms.call(tenant, b"select packet_id, envelope from memsub.get_packets(%s" + lean + b")", [ids])

    if kind == "clustered":
        log("get one item / 100 items")
        probes = [rng.randrange(args.vectors) for _ in range(args.gets)]
        # Each side reads the packet id and the envelope. memsub: as the Python client reads (with
        # get_packet_vectors): the envelope without its vectors and, in the same round trip, the vectors in
        # binary, put back into it; "json": the envelope with its vectors as JSON numbers (get_packets' own
        # put-back, what a SQL caller reads by default); "lean": the envelope without its vectors.
        def ms_get(i: int, shape: str) -> None:
            found = ms_read(tenants[owners[i]], [packet_ids[i]], shape)
            if len(found) != 1:
                raise RuntimeError("get one found nothing")

        sides: dict[str, Callable[[Any], Any]] = {
            "langgraph": lambda i: lg.store.get((space, str(tenants[owners[i]])), f"d{i}"),
            "memsub": lambda i: ms_get(i, "memsub"),
        }
        if has_typed:
            sides["json"] = lambda i: ms_get(i, "json")
        if has_lean:  # the envelope as stored: memory.embeddings[].vector is null, memory_embeddings not read
            sides["lean"] = lambda i: ms_get(i, "lean")
        timings = alternate(probes, sides)
        result["operations"].append(compare("get one item", timings,
                                            "vectors in binary" if has_typed else "vectors as JSON"))
        for variant, label in VARIANTS:
            if variant in timings:
                result["operations"].append(compare(f"get one item, {label}", variant_timings(timings, variant)))
        big = rows_of[0]
        batches = [rng.sample(big, 100) for _ in range(max(4, args.gets // 20))]

        def ms_many(batch: list[int], shape: str) -> None:
            ids = [packet_ids[i] for i in batch]
            if has_multi:
                found = ms_read(tenants[0], ids, shape)
            else:
                found = [r for rows in ms.calls(tenants[0], [
                    (b"select packet_id, envelope from memsub.get_packet(%s)", [i]) for i in ids]) for r in rows]
            if len(found) != len(batch):
                raise RuntimeError(f"get 100 found {len(found)}")

        many_sides: dict[str, Callable[[Any], Any]] = {
            "langgraph": lambda b: lg.store.batch([GetOp((space, str(tenants[0])), f"d{i}") for i in b]),
            "memsub": lambda b: ms_many(b, "memsub"),
        }
        if has_typed:
            many_sides["json"] = lambda b: ms_many(b, "json")
        if has_lean:
            many_sides["lean"] = lambda b: ms_many(b, "lean")
        timings = alternate(batches, many_sides)
        result["operations"].append(compare("get 100 items", timings,
                                            ("vectors in binary" if has_typed else "vectors as JSON")
                                            if has_multi else "100 get_packet calls in one pipeline"))
        for variant, label in VARIANTS:
            if variant in timings:
                result["operations"].append(compare(f"get 100 items, {label}", variant_timings(timings, variant)))
    if args.gets_only:
        lg.close()
        ms.close()
        with psycopg.connect(superuser, autocommit=True) as conn:
            conn.execute("truncate langgraph.store, langgraph.store_vectors")
        return result

    for number, share in enumerate(SHARES):
        tenant = tenants[number]
        rows = rows_of[number]
        queries = list(range(number * args.queries, (number + 1) * args.queries))
        truth_local = exact_neighbours(data[rows], pool[queries], K)
        truth = [[rows[j] for j in t] for t in truth_local]
        found: dict[str, list[list[int]]] = {"langgraph": [], "memsub": [], "exact": []}
        methods: list[str] = []
        row_of_packet = {packet_ids[i]: i for i in rows}

        def lg_search(q: int, found: dict[str, list[list[int]]] = found, tenant: uuid.UUID = tenant) -> None:
            hits = lg.store.search((space, str(tenant)), query=f"{kind} query {q}", limit=K)
            found["langgraph"].append([int(h.key[1:]) for h in hits])

        def ms_search(q: int, mode: str, found: dict[str, list[list[int]]] = found, tenant: uuid.UUID = tenant,
                      row_of_packet: dict[uuid.UUID, int] = row_of_packet, methods: list[str] = methods) -> None:
            extra = b"" if mode == "memsub" else exact_option
            got = ms.call(tenant, b"select packet_id, method from memsub.semantic_search(%s::vector, %s, %s"
                          + extra + b")", [vector_text(pool[q]), K, embedding_type])
            found[mode].append([row_of_packet[r[0]] for r in got])
            if mode == "memsub":
                methods.extend(str(r[1]) for r in got)

        log(f"{kind}: search in the {share:.1%} tenant ({len(rows):,} rows)")
        timings = alternate(queries, {"langgraph": lg_search, "memsub": lambda q: ms_search(q, "memsub"),
                                      "exact": lambda q: ms_search(q, "exact")})
        entry = compare(f"search k=10, {share:.1%} tenant", timings)
        entry["exact"] = latency_summary(timings["exact"])
        entry["share"] = share
        entry["rows"] = len(rows)
        entry.update(placement.get(tenant, {}))
        for side in ("langgraph", "memsub", "exact"):
            entry[side]["recall"] = recall(found[side], truth)
            entry[side]["short"] = sum(1 for f in found[side] if len(f) < min(K, len(rows)))
        entry["memsub"]["approximate_share"] = methods.count("approximate") / max(1, len(methods))
        entry["memsub_vs_exact_p50"] = entry["memsub"]["p50_ms"] / entry["exact"]["p50_ms"]
        result["search"].append(entry)
    lg.close()
    ms.close()
    with psycopg.connect(superuser, autocommit=True) as conn:  # the next kind starts with an empty peer store
        conn.execute("truncate langgraph.store, langgraph.store_vectors")
    return result


VARIANTS = (("json", "vectors as JSON"), ("lean", "without vectors"))
"""memsub's other ways to read, timed in the same rounds: the envelope's own JSON vectors, and no vectors."""


def variant_timings(timings: dict[str, list[float]], variant: str) -> dict[str, list[float]]:
    """The timings of one run with one of memsub's other ways to read in memsub's place, for ``compare``."""
    return {"langgraph": timings["langgraph"], "memsub": timings[variant]}


def render(results: dict[str, Any]) -> str:
    lines = ["memsub vs LangGraph PostgresStore, many tenants: same server and vectors, one run", "",
             environment_line(results["environment"]), ""]
    for part in results["kinds"]:
        embedded = part.get("embed_seconds", float("nan"))
        lines.append(f"{part['kind']} vectors ({results['data']['vectors']:,}), tune_search "
                     f"{part['tune_seconds']:.1f} s" + ("" if embedded != embedded else f", MiniLM {embedded:.0f} s"))
        for op in part["operations"]:
            lines.append(f"  {op['operation']:<36} ratio (ops/s memsub / LangGraph) {op['ratio_ops']:.2f}   p50 ms "
                         f"LG {op['langgraph']['p50_ms']:.2f} / memsub {op['memsub']['p50_ms']:.2f}  {op['note']}")
        lines.append(f"  {'search k=10':<22} {'rows':>7} {'LG p50':>7} {'ms p50':>7} {'exact':>7} {'ratio':>6} "
                     f"{'ms/exact':>8} {'recall LG':>9} {'memsub':>7} {'short LG/ms':>11} {'walked':>6} "
                     f"{'graph (share)':>13} {'tuned ef (bound)':>16}")
        for s in part["search"]:
            lines.append(f"  {s['share']:>6.1%} tenant{'':<9} {s['rows']:>7,} {s['langgraph']['p50_ms']:>7.2f} "
                         f"{s['memsub']['p50_ms']:>7.2f} {s['exact']['p50_ms']:>7.2f} {s['ratio_ops']:>6.2f} "
                         f"{s['memsub_vs_exact_p50']:>8.2f} {s['langgraph']['recall']:>9.3f} "
                         f"{s['memsub']['recall']:>7.3f} {s['langgraph']['short']:>5}/{s['memsub']['short']:<5} "
                         f"{s['memsub']['approximate_share']:>6.0%} "
                         + (f"{'p' + format(s['partition'], '02d'):>6} ({s['graph_share']:.0%})"
                            if "partition" in s else "")
                         + (f" {s['tuned_ef_search']:>8} ({s['tuned_recall_bound']:.3f})"
                            if s.get("tuned_recall_bound") is not None else ""))
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--vectors", type=int, default=6000, help="vectors per kind (default 6000)")
    parser.add_argument("--kinds", default="clustered,uniform")
    parser.add_argument("--queries", type=int, default=40, help="queries per tenant (default 40)")
    parser.add_argument("--gets", type=int, default=400)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--out", type=Path, help="write peer_tenants.json into this directory")
    parser.add_argument("--cache", type=Path, help="keep the real kind's MiniLM vectors in this directory (.npy)")
    parser.add_argument("--package-share", type=float, default=PACKAGE_SHARE,
                        help="real kind: the share of the passages one installed package may give (default 1/40; "
                             "1/15 reaches 100,000 passages)")
    parser.add_argument("--gets-only", action="store_true",
                        help="time only the gets (clustered kind): no searches, no other kinds")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    kinds = ["clustered"] if args.gets_only else [k for k in args.kinds.split(",") if k]
    if not kinds or not set(kinds) <= set(KINDS) or args.vectors < 200:
        parser.error(f"kinds: {', '.join(KINDS)}; at least 200 vectors (the 50 % tenant serves the 100-item get)")
    if "real" in kinds and args.dimension != MINILM_DIMENSION:
        parser.error(f"the real kind is embedded by MiniLM: --dimension {MINILM_DIMENSION}")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    started = time.time()
    results: dict[str, Any] = {"kinds": []}
    with bench_database(vector_dimension=args.dimension) as (superuser, app):
        results["environment"] = environment(superuser)
        log(environment_line(results["environment"]))
        langgraph_dsn = prepare_langgraph(superuser)
        for kind in kinds:
            results["kinds"].append(run_kind(kind, args, superuser, app, langgraph_dsn, log))
    results["data"] = {"vectors": args.vectors, "queries": args.queries, "gets": args.gets,
                       "dimension": args.dimension, "shares": SHARES, "tenants": len(SHARES) + SMALL_TENANTS}
    results["seconds"] = round(time.time() - started, 1)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "peer_tenants.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2) if args.json else render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
