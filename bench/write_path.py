"""The write path with vectors, side by side in one run: memsub against plain SQL and against LangGraph's store.

Usage: python bench/write_path.py [--items 2000] [--batch 100] [--singles 400] [--client-items 1000] [--dimension 384]
                                  [--json]

One private embedded PostgreSQL (or ``MEMSUB_BENCH_DSN``) holds memsub (migrated at ``--dimension``, written by a
login in ``memsub_app``: row-level security applies), LangGraph's ``PostgresStore`` (its own schema and login)
and ``bench.packets`` / ``bench.embeddings``: tables made ``like`` packet_store and memory_embeddings with the
same indexes (HNSW included), constraints, defaults and partitions (memory_embeddings is partitioned by tenant),
but no row-level security, triggers or foreign keys,
writable by the same login. Every item is a short text value and its vector: memsub writes it as a
PacketEnvelope whose ``memory.embeddings`` carries the vector; LangGraph puts the value with the text indexed
(its embed function returns the same vector).

- batch: ``write_packets`` of ``--batch`` envelopes per call, sent as the client sends them (the envelopes as JSON,
  their vectors apart in binary: ``p_vectors``), made before the clock starts as the COPY's rows are, against
  ``store.batch`` of the same number of ``PutOp`` (rounds alternate which side goes first); then the rows memsub
  stored are copied (``COPY``, one transaction, the same login) into the same-indexed tables: batch rate / COPY
  rate is the bulk-ingest ratio;
- single: one envelope per call (``set_context`` + ``write_packet`` in one pipelined transaction), as the client
  sends it (the vectors apart, in binary: ``p_vectors``) and with the vectors inside the envelope as JSON numbers
  (other items), against ``store.put`` of one item and against a plain ``INSERT`` of the same two rows (packet
  and embedding, one pipelined transaction) into the same-indexed tables;
- size: bytes of packet_store + memory_embeddings (tables, TOAST, indexes) per item against LangGraph's
  ``store`` + ``store_vectors``, after the batch load;
- client batch: ``--client-items`` more items, ``--batch`` per call, written as the Python client writes a batch
  (``memsub.packets.write_packet_batch``, the call built inside the timed section): its vectors apart, in binary
  (``p_vectors``), against the same call with the vectors inside the envelopes as JSON numbers, batches of the
  two forms alternating (each form its own items); items/s and the server's CPU per batch.

The figures are ratios of one run; the machine's load average is printed with them. On a shared machine the
latencies follow the load more than the code, so for the single writes the server's CPU time per call is also
reported for each side (the backend's ``/proc/<pid>/schedstat``, read before and after each call; only when the
server runs on this machine): it does not count time spent waiting for a core or for the disk.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import sql

from _database import APP_ROLE, backend_cpu, bench_database, create_like, environment, environment_line
from _vectors import VectorSource, latency_summary
from memsub import packets
from memsub._calls import Json, function, raw, register_vector_type
from peer_langgraph import ORG, TENANT, LangGraph, alternate, prepare_langgraph, relation_bytes, sentence

TABLES = {"packets": "memsub.packet_store", "embeddings": "memsub.memory_embeddings"}


def envelope(packet_id: uuid.UUID, number: int, text: str, vector: list[float]) -> str:
    return json.dumps(envelope_value(packet_id, number, text, vector))


# --thread: every memsub item in this thread (one writer per thread, which locks it: docs/decisions.md).
THREAD: list[str] = []


def envelope_value(packet_id: uuid.UUID, number: int, text: str, vector: list[float]) -> dict[str, Any]:
    return {
        **({"thread_id": THREAD[0]} if THREAD else {}),
        "packet_id": str(packet_id), "packet_type": "memory_write",
        "timestamp": f"2026-01-01T00:00:{number // 1000000 % 60:02d}.{number % 1000000:06d}Z",
        "metadata": {"agent": "bench_agent"},
        "payload": {"text": text, "kind": "fact"},
        "memory": {"embeddings": [{"embedding_type": "content", "vector": vector}]},
    }


def prepare_plain(superuser: str) -> dict[str, list[tuple[str, str]]]:
    """bench.packets and bench.embeddings with memsub's indexes; returns each table's (column, type) list."""
    columns: dict[str, list[tuple[str, str]]] = {}
    with psycopg.connect(superuser, autocommit=True) as conn:
        conn.execute("create schema bench")
        for name, source in TABLES.items():
            create_like(conn, f"bench.{name}", source,
                        "including defaults including constraints including indexes including generated")
            conn.execute(sql.SQL("grant insert, select on bench.{} to {}").format(
                sql.Identifier(name), sql.Identifier(APP_ROLE)))
            columns[name] = [(str(c), str(t)) for c, t in conn.execute(
                "select a.attname, format_type(a.atttypid, a.atttypmod) from pg_attribute a "
                "where a.attrelid = %s::regclass and a.attnum > 0 and not a.attisdropped and a.attgenerated = '' "
                "order by a.attnum", [source]).fetchall()]
        conn.execute(sql.SQL("grant usage on schema bench to {}").format(sql.Identifier(APP_ROLE)))
    return columns


def stored_rows(superuser: str, columns: dict[str, list[tuple[str, str]]],
                packet_ids: Sequence[uuid.UUID]) -> dict[str, list[tuple[str | None, ...]]]:
    """The rows memsub stored for these packets, each column as text (read as the superuser: not timed)."""
    rows: dict[str, list[tuple[str | None, ...]]] = {}
    with psycopg.connect(superuser) as conn:
        for name, source in TABLES.items():
            select = sql.SQL("select {} from {} where packet_id = any(%s) order by packet_id").format(
                sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c, _ in columns[name]),
                sql.SQL(source))
            rows[name] = [tuple(r) for r in conn.execute(select, [list(packet_ids)]).fetchall()]
    return rows


def insert_statement(name: str, columns: list[tuple[str, str]]) -> sql.Composed:
    return sql.SQL("insert into bench.{} ({}) values ({})").format(
        sql.Identifier(name), sql.SQL(", ").join(sql.Identifier(c) for c, _ in columns),
        sql.SQL(", ").join(sql.SQL("%s::{}").format(sql.SQL(t)) for _, t in columns))


class Items:
    """The benchmark's items: a short text, its id and its vector each (the same seed every run), and the embed
    function LangGraph's store is given, which returns each text's precomputed vector."""

    def __init__(self, dimension: int, count: int) -> None:
        rng = random.Random(5)
        self.vectors = [v.tolist() for v in VectorSource(dimension).draw(count)]
        self.texts = [f"item {i}: {sentence(rng, 8, 30)}" for i in range(count)]
        self.ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(count)]
        self._lookup = dict(zip(self.texts, self.vectors, strict=True))

    def embed(self, batch: list[str]) -> list[list[float]]:
        return [self._lookup[t] for t in batch]


def run(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    # The single writes of memsub's two forms are different items, and so are the client batches' two forms.
    total = args.items + 2 * args.singles + 2 * args.client_items
    items = Items(args.dimension, total)
    vectors, texts, ids, embed = items.vectors, items.texts, items.ids, items.embed

    results: dict[str, Any] = {}
    with bench_database(vector_dimension=args.dimension) as (superuser, app):
        results["environment"] = environment(superuser)
        log(environment_line(results["environment"]))
        columns = prepare_plain(superuser)
        lg = LangGraph(prepare_langgraph(superuser), {"dims": args.dimension, "embed": embed, "fields": ["text"]})
        lg.store.setup()
        ms = psycopg.connect(app, autocommit=True)
        register_vector_type(ms)
        plain = psycopg.connect(app, autocommit=True)

        def memsub_call(query: bytes, params: Sequence[Any]) -> None:
            with ms.pipeline():
                ms.execute(b"select memsub.set_context(%s, %s)", [TENANT, ORG], prepare=True)
                ms.execute(query, params, prepare=True)

        from langgraph.store.base import PutOp

        log(f"batch: {args.items:,} items, {args.batch} per call")
        batches = []
        for start in range(0, args.items, args.batch):
            span = range(start, min(args.items, start + args.batch))
            # As the client sends a batch (memsub.packets.write_packet_batch), made before the clock starts as
            # the COPY's rows are: the envelopes as JSON text, their vectors apart in binary.
            sent = packets.write_packet_batch([envelope_value(ids[i], i, texts[i], vectors[i]) for i in span])
            batches.append(([PutOp(("docs",), f"d{i}", {"text": texts[i], "kind": "fact"}) for i in span],
                            sent.params))
        timings = alternate(batches, {
            "langgraph": lambda b: lg.store.batch(b[0]),
            "memsub": lambda b: memsub_call(b"select count(*) from memsub.write_packets(%s::jsonb, p_vectors => %b)",
                                            b[1]),
        })
        batch_seconds = {side: sum(t) for side, t in timings.items()}
        results["bytes_per_item"] = {
            "langgraph": relation_bytes(superuser, ["langgraph.store", "langgraph.store_vectors"]) / args.items,
            "memsub": relation_bytes(superuser, list(TABLES.values())) / args.items,
        }
        with psycopg.connect(superuser) as conn:
            envelope_bytes = conn.execute("select avg(pg_column_size(envelope)) from memsub.packet_store").fetchone()
        results["envelope_bytes"] = float(envelope_bytes[0]) if envelope_bytes and envelope_bytes[0] else 0.0

        log("COPY of the same rows into the same-indexed tables")
        rows = stored_rows(superuser, columns, ids[:args.items])
        if len(rows["packets"]) != args.items or len(rows["embeddings"]) != args.items:
            raise RuntimeError(f"memsub stored {len(rows['packets'])} packets and {len(rows['embeddings'])} "
                               f"embeddings, expected {args.items} of each")
        started = time.perf_counter()
        with plain.transaction(), plain.cursor() as cur:
            for name in TABLES:
                target = sql.SQL("copy bench.{} ({}) from stdin").format(
                    sql.Identifier(name), sql.SQL(", ").join(sql.Identifier(c) for c, _ in columns[name]))
                with cur.copy(target) as copy:
                    for row in rows[name]:
                        copy.write_row(row)
        copy_seconds = time.perf_counter() - started

        log(f"single: {args.singles:,} items, one per call")
        statements = {name: insert_statement(name, columns[name]) for name in TABLES}
        singles = list(range(args.items, args.items + args.singles))
        single_times: dict[str, list[float]] = {"langgraph": [], "memsub": [], "memsub_json": [], "insert": []}
        readers = {"langgraph": backend_cpu(lg.conn), "memsub": backend_cpu(ms), "memsub_json": backend_cpu(ms),
                   "insert": backend_cpu(plain)}

        def memsub_write(i: int) -> None:
            """As the client writes: the envelope's vectors apart, in binary (memsub.packets.write_packet)."""
            call = packets.write_packet(envelope_value(ids[i], i, texts[i], vectors[i]))
            memsub_call(call.statement, call.params)

        cpu_seconds = dict.fromkeys(single_times, 0.0)

        def timed(name: str, action: Callable[[], object]) -> None:
            reader = readers[name]
            cpu_before = reader() if reader else 0.0
            began = time.perf_counter()
            action()
            single_times[name].append(time.perf_counter() - began)
            if reader:
                cpu_seconds[name] += reader() - cpu_before
        size = max(1, -(-len(singles) // 4))
        for number, start in enumerate(range(0, len(singles), size)):
            chunk = singles[start:start + size]
            sides: list[tuple[str, Callable[[int], None]]] = [
                ("langgraph", lambda i: lg.store.put(("docs",), f"d{i}", {"text": texts[i], "kind": "fact"})),
                ("memsub", memsub_write),
                ("memsub_json", lambda i: memsub_call(  # the vectors inside the envelope, as JSON numbers
                    b"select packet_id from memsub.write_packet(%s::jsonb)",
                    [envelope(ids[i + args.singles], i + args.singles, texts[i + args.singles],
                              vectors[i + args.singles])])),
            ]
            for name, action in (sides if number % 2 == 0 else sides[::-1]):
                for i in chunk:
                    timed(name, lambda: action(i))  # noqa: B023 - called at once, in this iteration
            chunk_rows = stored_rows(superuser, columns, [ids[i] for i in chunk])
            for packet, embedding in zip(chunk_rows["packets"], chunk_rows["embeddings"], strict=True):

                def insert(packet: tuple[str | None, ...] = packet,
                           embedding: tuple[str | None, ...] = embedding) -> None:
                    with plain.pipeline():
                        plain.execute(statements["packets"], packet, prepare=True)
                        plain.execute(statements["embeddings"], embedding, prepare=True)
                timed("insert", insert)
        log(f"client batch: {args.client_items:,} items each way, {args.batch} per call")
        first = args.items + 2 * args.singles
        pairs = [(range(start, min(start + args.batch, first + args.client_items)),
                  range(start + args.client_items, min(start + args.batch, first + args.client_items)
                        + args.client_items))
                 for start in range(first, first + args.client_items, args.batch)]
        batch_cpu = {"apart": 0.0, "json": 0.0}

        def client_batch(form: str, span: range) -> None:
            values = [envelope_value(ids[i], i, texts[i], vectors[i]) for i in span]
            if form == "apart":
                call = packets.write_packet_batch(values)
            else:  # the same call with the vectors left inside the envelopes
                call = function("write_packets", {"envelopes": Json(values)}, raw())
            reader = readers["memsub"]
            before = reader() if reader else 0.0
            memsub_call(call.statement, call.params)
            if reader:
                batch_cpu[form] += reader() - before
        client_times = alternate(pairs, {"apart": lambda p: client_batch("apart", p[0]),
                                         "json": lambda p: client_batch("json", p[1])})
        lg.close()
        ms.close()
        plain.close()

    batch_rate = {side: args.items / seconds for side, seconds in batch_seconds.items()}
    copy_rate = args.items / copy_seconds
    single = {side: latency_summary(t) for side, t in single_times.items()}
    results["batch"] = {"items_per_s": {**batch_rate, "copy": copy_rate},
                        "memsub_vs_copy": batch_rate["memsub"] / copy_rate,
                        "memsub_vs_langgraph": batch_rate["memsub"] / batch_rate["langgraph"]}
    results["single"] = {**single,
                         "memsub_vs_insert_p50": single["memsub"]["p50_ms"] / single["insert"]["p50_ms"],
                         "memsub_vs_langgraph_ops": single["memsub"]["ops_per_s"] / single["langgraph"]["ops_per_s"],
                         "memsub_json_vs_insert_p50": single["memsub_json"]["p50_ms"] / single["insert"]["p50_ms"],
                         "memsub_json_vs_langgraph_ops":
                             single["memsub_json"]["ops_per_s"] / single["langgraph"]["ops_per_s"]}
    if all(readers.values()):
        cpu_ms = {side: cpu_seconds[side] * 1000 / len(single_times[side]) for side in single_times}
        results["single"]["server_cpu_ms_per_call"] = cpu_ms
        results["single"]["memsub_vs_insert_cpu"] = cpu_ms["memsub"] / cpu_ms["insert"]
        results["single"]["memsub_vs_langgraph_cpu"] = cpu_ms["memsub"] / cpu_ms["langgraph"]
        results["single"]["memsub_json_vs_insert_cpu"] = cpu_ms["memsub_json"] / cpu_ms["insert"]
    client_rate = {form: args.client_items / sum(times) for form, times in client_times.items()}
    results["client_batch"] = {"items_per_s": client_rate, "apart_vs_json": client_rate["apart"] / client_rate["json"],
                               "server_cpu_ms_per_batch": {form: seconds * 1000 / len(pairs)
                                                           for form, seconds in batch_cpu.items()}}
    results["size_vs_langgraph"] = results["bytes_per_item"]["memsub"] / results["bytes_per_item"]["langgraph"]
    results["data"] = {"items": args.items, "batch": args.batch, "singles": args.singles,
                       "client_items": args.client_items, "dimension": args.dimension}
    return results


def render(results: dict[str, Any]) -> str:
    b, s, d, c = results["batch"], results["single"], results["data"], results["client_batch"]
    rate = b["items_per_s"]
    bytes_ = results["bytes_per_item"]
    return "\n".join([
        f"memsub write path with {d['dimension']}-d vectors: {d['items']:,} items in batches of {d['batch']}, "
        f"{d['singles']:,} single writes; one run", "",
        environment_line(results["environment"]), "",
        f"{'measure':<52} {'memsub':>10} {'other':>10} {'ratio':>7}",
        "-" * 82,
        f"{'batch write items/s vs COPY into same-indexed tables':<52} {rate['memsub']:>10,.0f} "
        f"{rate['copy']:>10,.0f} {b['memsub_vs_copy']:>7.3f}",
        f"{'batch write items/s vs LangGraph store.batch':<52} {rate['memsub']:>10,.0f} "
        f"{rate['langgraph']:>10,.0f} {b['memsub_vs_langgraph']:>7.2f}",
        f"{'single write p50 ms vs plain INSERT (lower is better)':<52} {s['memsub']['p50_ms']:>10.2f} "
        f"{s['insert']['p50_ms']:>10.2f} {s['memsub_vs_insert_p50']:>7.2f}",
        f"{'single write ops/s vs LangGraph store.put':<52} {s['memsub']['ops_per_s']:>10,.0f} "
        f"{s['langgraph']['ops_per_s']:>10,.0f} {s['memsub_vs_langgraph_ops']:>7.2f}",
        f"{'  vectors in the envelope as JSON: p50 vs INSERT':<52} {s['memsub_json']['p50_ms']:>10.2f} "
        f"{s['insert']['p50_ms']:>10.2f} {s['memsub_json_vs_insert_p50']:>7.2f}",
        f"{'  vectors in the envelope as JSON: ops/s vs LangGraph':<52} {s['memsub_json']['ops_per_s']:>10,.0f} "
        f"{s['langgraph']['ops_per_s']:>10,.0f} {s['memsub_json_vs_langgraph_ops']:>7.2f}",
        f"{'bytes per embedded item vs LangGraph (lower is better)':<52} {bytes_['memsub']:>10,.0f} "
        f"{bytes_['langgraph']:>10,.0f} {results['size_vs_langgraph']:>7.2f}",
        f"{'client batch items/s, vectors apart vs as JSON':<52} {c['items_per_s']['apart']:>10,.0f} "
        f"{c['items_per_s']['json']:>10,.0f} {c['apart_vs_json']:>7.2f}",
        "",
        f"single write p50/p95 ms: memsub {s['memsub']['p50_ms']:.2f}/{s['memsub']['p95_ms']:.2f}, plain INSERT "
        f"{s['insert']['p50_ms']:.2f}/{s['insert']['p95_ms']:.2f}, LangGraph {s['langgraph']['p50_ms']:.2f}/"
        f"{s['langgraph']['p95_ms']:.2f}; stored envelope {results['envelope_bytes']:,.0f} B on average",
        *([f"single write server CPU ms per call: memsub {cpu['memsub']:.2f}, plain INSERT {cpu['insert']:.2f} "
           f"({s['memsub_vs_insert_cpu']:.2f}x), LangGraph {cpu['langgraph']:.2f} "
           f"({s['memsub_vs_langgraph_cpu']:.2f}x); vectors in the envelope as JSON {cpu['memsub_json']:.2f} "
           f"({s['memsub_json_vs_insert_cpu']:.2f}x the INSERT)"] if (cpu := s.get("server_cpu_ms_per_call")) else []),
        f"client batch of {d['batch']}: server CPU ms per batch, vectors apart "
        f"{c['server_cpu_ms_per_batch']['apart']:.1f}, as JSON {c['server_cpu_ms_per_batch']['json']:.1f} "
        f"({d['client_items']:,} items each way)",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=2000, help="items of the batch load (default 2000)")
    parser.add_argument("--batch", type=int, default=100, help="items per batch call (default 100)")
    parser.add_argument("--singles", type=int, default=400, help="single writes per side (default 400)")
    parser.add_argument("--client-items", type=int, default=1000,
                        help="items per form of the client batch (default 1000)")
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--thread", action="store_true",
                        help="write every memsub item in one thread (default: no thread)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if min(args.items, args.batch, args.singles, args.client_items, args.dimension) < 1:
        parser.error("--items, --batch, --singles, --client-items and --dimension must be positive")
    if args.thread:
        THREAD.append(str(uuid.uuid4()))

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    results = run(args, log)
    print(json.dumps(results, indent=2) if args.json else render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
