"""Two versions of memsub on one server, called alternately: latency and server CPU per call of the hot calls.

Usage: python bench/code_versions.py --before DIR [--after DIR] [--rounds 12] [--packets 3000] [--json]

``--before`` and ``--after`` are checkouts of memsub (``--after`` defaults to this one). Each is migrated, by its
own migrator (a subprocess with that checkout's ``python/`` first on the path), into a database of its own on one
private embedded server (or ``MEMSUB_BENCH_DSN``); both get the same packets (``--packets`` of one clustered
384-d vector each, one tenant, written by ``write_packets``) and are vacuumed and analyzed. Then, in ``--rounds``
rounds whose order of the two versions is swapped every round, the same calls go to each, as a login in
``memsub_app`` with ``set_context`` and the call in one pipeline on an autocommit connection (one round trip, as
the client's per-call mode sends them):

- ``write_packet`` of a new envelope with one vector (25 per round), and of one with eight (its whole content
  and seven chunks; 5 per round);
- ``get_packet`` of one id, without and with its vector (100 per round each);
- ``get_packets`` of 100 ids, without and with their vectors (5 per round each);
- ``get_packets_with_vector_values`` of one id and of 100, in binary: the read with vectors the Python client sends
  (100 and 5 per round);
- ``semantic_search`` of the ten nearest, by the HNSW walk and by the exact scan (``p_mode``), each for a new query
  vector (50 per round each).

Reported per call: the p50 latency of each version, and the server CPU (the backend's ``/proc/<pid>/schedstat``,
median of the rounds' per-call means), with the ratio after / before. Both versions share the server, the
machine's load and the data, so the ratios show what the code changed; the absolute times follow the machine.
About two minutes at the defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psycopg
from pgvector import Vector
from psycopg.conninfo import make_conninfo

from _database import APP_ROLE, backend_cpu, environment, environment_line, private_cluster, trusted_app_login
from _vectors import VectorSource
from memsub._calls import register_vector_type

TENANT = uuid.UUID("c0de0000-0000-4000-8000-000000000001")
DIMENSION = 384
MIGRATE = ("import sys; from memsub.migrator import Migrator; "
           "from psycopg.conninfo import make_conninfo; "
           "Migrator(make_conninfo(sys.argv[1], options='-c memsub.vector_dimension=384')).migrate()")
PER_ROUND = {"write_packet, one 384-d vector": 25, "write_packet, eight 384-d vectors": 5,
             "get_packet without vectors": 100,
             "get_packet with vectors": 100, "get_packets of 100 without vectors": 5,
             "get_packets of 100 with vectors": 5, "get_packet, vectors in binary": 100,
             "get_packets of 100, vectors in binary": 5, "semantic_search of 10, the walk": 50,
             "semantic_search of 10, the exact scan": 50}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def migrate(checkout: Path, superuser: str, name: str) -> str:
    """A new database migrated by the checkout's own migrator; its superuser conninfo."""
    with psycopg.connect(superuser, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    dsn = make_conninfo(superuser, dbname=name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("create extension if not exists vector")
    environ = dict(os.environ, PYTHONPATH=str(checkout / "python"))
    subprocess.run([sys.executable, "-c", MIGRATE, dsn], check=True, env=environ)
    trusted_app_login(dsn)
    return dsn


class Version:
    """One version's application connection and the CPU reader of its server process."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(make_conninfo(dsn, user=APP_ROLE), autocommit=True)
        cpu = backend_cpu(self.conn)
        if cpu is None:
            raise SystemExit("code_versions.py needs the server on this machine (it reads /proc/<pid>/schedstat)")
        self.cpu: Callable[[], float] = cpu
        register_vector_type(self.conn)

    def call(self, query: bytes, params: Sequence[Any], binary: bool = False) -> list[tuple[Any, ...]]:
        with self.conn.pipeline():
            self.conn.execute(b"select memsub.set_context(%s, null, null)", [TENANT], prepare=True)
            return self.conn.execute(query, params, prepare=True, binary=binary).fetchall()


def envelope(number: int, vector: list[float], packet_id: uuid.UUID | None = None,
             chunks: Sequence[list[float]] = ()) -> dict[str, Any]:
    """A new packet with ``vector`` for its whole content and one chunk embedding per vector of ``chunks``."""
    embeddings: list[dict[str, Any]] = [{"embedding_type": "content", "vector": vector, "chunk_text": f"item {number}"}]
    embeddings += [{"embedding_type": "content", "vector": chunk, "chunk_index": n,
                    "chunk_text": f"item {number}, part {n}"} for n, chunk in enumerate(chunks, start=1)]
    written: dict[str, Any] = {
        "packet_type": "memory_write", "metadata": {"agent": "bench_agent"},
        "payload": {"text": f"item {number}"}, "memory": {"embeddings": embeddings}}
    if packet_id is not None:
        written["packet_id"] = str(packet_id)
    return written


def measure(versions: dict[str, Version], rounds: int, ids: list[uuid.UUID], writes: list[str],
            chunked_writes: list[str], queries: list[Vector]) -> dict[str, dict[str, dict[str, float]]]:
    """Per operation and version: p50 latency (ms) and median server CPU per call (ms)."""
    rng = random.Random(3)
    operations: dict[str, Callable[[Version, int], list[tuple[Any, ...]]]] = {
        "write_packet, one 384-d vector": lambda v, i: v.call(
            b"select * from memsub.write_packet(%s::jsonb)", [writes[i]]),
        "write_packet, eight 384-d vectors": lambda v, i: v.call(
            b"select * from memsub.write_packet(%s::jsonb)", [chunked_writes[i]]),
        "get_packet without vectors": lambda v, i: v.call(
            b"select packet_id, envelope from memsub.get_packet(%s, p_with_vectors => false)", [ids[i % len(ids)]]),
        "get_packet with vectors": lambda v, i: v.call(
            b"select packet_id, envelope from memsub.get_packet(%s)", [ids[i % len(ids)]]),
        "get_packets of 100 without vectors": lambda v, i: v.call(
            b"select packet_id, envelope from memsub.get_packets(%s, p_with_vectors => false)", [batches[i]]),
        "get_packets of 100 with vectors": lambda v, i: v.call(
            b"select packet_id, envelope from memsub.get_packets(%s)", [batches[i]]),
        "get_packet, vectors in binary": lambda v, i: v.call(
            b"select packet_id, envelope, vectors from memsub.get_packets_with_vector_values(%s)",
            [[ids[i % len(ids)]]], binary=True),
        "get_packets of 100, vectors in binary": lambda v, i: v.call(
            b"select packet_id, envelope, vectors from memsub.get_packets_with_vector_values(%s)", [batches[i]],
            binary=True),
        "semantic_search of 10, the walk": lambda v, i: v.call(
            b"select embedding_id, distance from memsub.semantic_search(%s, 10, p_mode => 'approximate')",
            [queries[i % len(queries)]], binary=True),
        "semantic_search of 10, the exact scan": lambda v, i: v.call(
            b"select embedding_id, distance from memsub.semantic_search(%s, 10, p_mode => 'exact')",
            [queries[i % len(queries)]], binary=True),
    }
    batches = [rng.sample(ids, 100) for _ in range(rounds * PER_ROUND["get_packets of 100 with vectors"])]
    order = list(versions)
    latency: dict[tuple[str, str], list[float]] = {(o, n): [] for o in operations for n in order}
    cpu: dict[tuple[str, str], list[float]] = {(o, n): [] for o in operations for n in order}
    for round_number in range(rounds):
        for operation, run in operations.items():
            for name in (order if round_number % 2 == 0 else order[::-1]):
                version, count = versions[name], PER_ROUND[operation]
                started_cpu = version.cpu()
                for k in range(count):
                    started = time.perf_counter()
                    rows = run(version, round_number * count + k)
                    latency[(operation, name)].append(time.perf_counter() - started)
                    if not rows:
                        raise RuntimeError(f"{operation} returned nothing on {name}")
                cpu[(operation, name)].append((version.cpu() - started_cpu) / count)
        log(f"round {round_number + 1}/{rounds}")
    return {o: {n: {"p50_ms": statistics.median(latency[(o, n)]) * 1000,
                    "cpu_ms": statistics.median(cpu[(o, n)]) * 1000} for n in order} for o in operations}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the older version")
    parser.add_argument("--after", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="a checkout of the newer version (default: this one)")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--packets", type=int, default=3000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for checkout in (args.before, args.after):
        if not (checkout / "python" / "memsub" / "migrator.py").is_file():
            parser.error(f"{checkout} is not a checkout of memsub (no python/memsub/migrator.py)")
    with ExitStack() as stack:
        superuser = os.environ.get("MEMSUB_BENCH_DSN") or stack.enter_context(private_cluster())
        suffix = uuid.uuid4().hex[:8]
        names = {"before": f"memsub_before_{suffix}", "after": f"memsub_after_{suffix}"}
        try:
            dsns = {side: migrate(getattr(args, side), superuser, name) for side, name in names.items()}
            env = environment(dsns["after"])
            versions = {side: Version(dsn) for side, dsn in dsns.items()}
            source = VectorSource(DIMENSION)
            ids = [uuid.UUID(int=random.Random(n).getrandbits(128), version=4) for n in range(args.packets)]
            log(f"writing {args.packets:,} packets into each version")
            for start in range(0, args.packets, 500):
                chunk = ids[start:start + 500]
                batch = json.dumps([envelope(start + i, v.tolist(), packet_id)
                                    for i, (v, packet_id) in enumerate(zip(source.draw(len(chunk)), chunk,
                                                                           strict=True))])
                for version in versions.values():
                    version.call(b"select count(*) from memsub.write_packets(%s::jsonb)", [batch])
            for dsn in dsns.values():
                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute("vacuum analyze memsub.packet_store, memsub.memory_embeddings")
            writes = [json.dumps(envelope(10**6 + i, v.tolist()))
                      for i, v in enumerate(source.draw(args.rounds * PER_ROUND["write_packet, one 384-d vector"]))]
            drawn = source.draw(args.rounds * PER_ROUND["write_packet, eight 384-d vectors"] * 8)
            vectors = [v.tolist() for v in drawn]
            chunked_writes = [json.dumps(envelope(2 * 10**6 + i, vectors[8 * i], chunks=vectors[8 * i + 1:8 * i + 8]))
                              for i in range(len(vectors) // 8)]
            queries = [Vector(v) for v in source.draw(args.rounds * PER_ROUND["semantic_search of 10, the walk"])]
            results = measure(versions, args.rounds, ids, writes, chunked_writes, queries)
            for version in versions.values():
                version.conn.close()
        finally:
            with psycopg.connect(superuser, autocommit=True) as conn:
                for name in names.values():
                    conn.execute(f'drop database if exists "{name}" with (force)')
    if args.json:
        print(json.dumps({"environment": env, "rounds": args.rounds, "packets": args.packets,
                          "before": str(args.before), "after": str(args.after), "results": results}, indent=2))
        return 0
    print(f"memsub {args.before} (before) against {args.after} (after): {args.rounds} alternating rounds, "
          f"{args.packets:,} packets of one 384-d vector\n")
    print(environment_line(env) + "\n")
    print(f"{'per call':38s} {'p50 ms before':>14s} {'after':>8s} {'ratio':>6s} "
          f"{'CPU ms before':>14s} {'after':>8s} {'ratio':>6s}")
    for operation, sides in results.items():
        before, after = sides["before"], sides["after"]
        print(f"{operation:38s} {before['p50_ms']:14.3f} {after['p50_ms']:8.3f} "
              f"{after['p50_ms'] / before['p50_ms']:6.2f} {before['cpu_ms']:14.3f} {after['cpu_ms']:8.3f} "
              f"{after['cpu_ms'] / before['cpu_ms']:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
