"""Noisy neighbour: how much does one tenant calling with the worst inputs it may send slow another tenant down?

A private embedded server (or ``MEMSUB_BENCH_DSN``) gets a freshly migrated 384-d database and two tenants,
both acting through the application role:

- the victim holds ``--packets`` packets in 20 threads, each with a content embedding and a chunk text, and
  makes typical calls one after the other: write_packet (a small packet, committed), get_thread (50 rows),
  semantic_search (k 10) and hybrid_search (two words and a vector, k 10);
- the attacker holds the same amount of data plus a complete graph of ``--graph-nodes`` entities, a thread of
  3,000 packets and a packet with 3,000 children, and runs ``--attackers`` connections, each cycling through
  the worst calls the limits still allow: traverse_graph over the complete graph in both directions (depth 10,
  limit 10,000), hybrid_search with a 4,096-character query of 128 matching words (k and candidates 1,000),
  write_packet of an envelope just under 1 MiB with 256 tags and 256 parents, write_packets of 1,000 envelopes
  given child first, get_thread of 10,000 rows, get_lineage of 3,000 descendants, and a 4 MiB envelope that is
  refused. Writes are rolled back, so the attack does not grow the database.

The victim is measured in three phases of the same run: quiet (alone), noisy (attackers running) and quiet
again; the baseline is both quiet phases together, so drift on a shared machine shows as a difference between
them. Each victim call is its own transaction after ``memsub.set_context`` (untimed); latency is the wall time
of the statement as seen by the client. The attack is bounded by ``--max-attack-calls`` per connection and by
the noisy phase's duration, and talks to the local server only.

    python bench/noisy_neighbour.py [--packets 2000] [--quiet-seconds 20] [--noisy-seconds 50] [--attackers 2]
                                    [--graph-nodes 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg

from _database import bench_database, environment, environment_line

VICTIM = "bbbbbbbb-0000-0000-0000-00000000000b"
ATTACKER = "aaaaaaaa-0000-0000-0000-00000000000a"
DIMENSION = 384
WORDS = [f"w{i:03d}" for i in range(500)]
VICTIM_CALLS = ("write_packet", "get_thread", "semantic_search", "hybrid_search")


def numbers(rng: random.Random) -> list[float]:
    return [round(rng.uniform(-1, 1), 4) for _ in range(DIMENSION)]


def vector(rng: random.Random) -> str:
    return json.dumps(numbers(rng))


def packet(rng: random.Random, thread: str, **extra: Any) -> dict[str, Any]:
    text = " ".join(rng.choices(WORDS, k=12))
    return {"packet_type": "note", "thread_id": thread, **extra,
            "payload": {"text": text, "embeddings": [{"embedding_type": "content", "vector": numbers(rng),
                                                      "chunk_text": text}]}}


def load(app_dsn: str, tenant: str, packets: int, rng: random.Random) -> list[str]:
    """``packets`` packets with embeddings in 20 threads; returns the thread ids."""
    threads = [str(uuid.uuid4()) for _ in range(20)]
    with psycopg.connect(app_dsn) as conn:
        for start in range(0, packets, 250):
            conn.execute("select memsub.set_context(%s)", [tenant])
            batch = [packet(rng, threads[i % 20]) for i in range(start, min(packets, start + 250))]
            conn.execute("select count(*) from memsub.write_packets(%s::jsonb)", [json.dumps(batch)])
            conn.commit()
    return threads


def load_attacker_extras(app_dsn: str, graph_nodes: int) -> dict[str, Any]:
    """The complete graph, a thread of 3,000 packets and a packet with 3,000 children."""
    thread = str(uuid.uuid4())
    root = str(uuid.uuid4())
    with psycopg.connect(app_dsn) as conn:
        conn.execute("select memsub.set_context(%s)", [ATTACKER])
        for source in range(graph_nodes):
            for target in range(graph_nodes):
                if source != target:
                    conn.execute("select memsub.upsert_relationship(%s, 'links', %s, 0.9)",
                                 [f"n{source}", f"n{target}"])
        conn.execute("select * from memsub.write_packet(%s::jsonb)",
                     [json.dumps({"packet_id": root, "packet_type": "note", "payload": {"root": True}})])
        for start in range(0, 3000, 1000):
            conn.execute("select count(*) from memsub.write_packets(%s::jsonb)", [json.dumps(
                [{"packet_type": "note", "thread_id": thread, "payload": {"n": i},
                  "lineage": {"parent_ids": [root]}} for i in range(start, start + 1000)])])
        parents = [str(row[0]) for row in conn.execute(
            "select packet_id from memsub.packet_store where thread_id = %s limit 256", [thread])]
        conn.commit()
    return {"thread": thread, "root": root, "parents": parents}


def attacks(extras: dict[str, Any]) -> dict[str, tuple[str, Callable[[], list[Any]], bool]]:
    """name -> (statement, parameters, rolled back)."""
    rng = random.Random(99)
    query = " ".join(WORDS[:128])
    query = query + " " * (4096 - len(query))
    big = {"packet_type": "note", "payload": {"text": os.urandom(480_000).hex()},
           "tags": [f"tag{i}" for i in range(256)], "lineage": {"parent_ids": extras["parents"]}}
    ids = [str(uuid.uuid4()) for _ in range(1000)]
    chain = [{"packet_id": ids[i], "packet_type": "note", "payload": {"i": i},
              "lineage": {"parent_ids": [ids[i + 1]]} if i + 1 < len(ids) else {}} for i in range(len(ids))]
    refused = {"packet_type": "note", "payload": {"text": os.urandom(2 * 2**20).hex()}}
    return {
        "traverse_complete_graph": ("select count(*) from memsub.traverse_graph('n0', 10, p_direction => 'both', "
                                    "p_limit => 10000)", lambda: [], False),
        "hybrid_4096_chars": ("select count(*) from memsub.hybrid_search(%s, %s::vector, 1000, p_candidates => 1000)",
                              lambda: [query, vector(rng)], False),
        "write_1mib_256_tags_parents": ("select count(*) from memsub.write_packet(%s::jsonb)",
                                        lambda: [json.dumps({**big, "payload": {"text": big["payload"]["text"],
                                                                                "n": rng.random()}})], True),
        "write_packets_1000_chain": ("select count(*) from memsub.write_packets(%s::jsonb)",
                                     lambda: [json.dumps(chain)], True),
        "get_thread_10000": ("select count(*) from memsub.get_thread(%s, 10000)", lambda: [extras["thread"]], False),
        "lineage_3000": ("select count(*) from memsub.get_lineage(%s, 'descendants')", lambda: [extras["root"]],
                         False),
        "refused_4mib_envelope": ("select count(*) from memsub.write_packet(%s::jsonb)",
                                  lambda: [json.dumps(refused)], True),
    }


def attacker(app_dsn: str, extras: dict[str, Any], stop: threading.Event, max_calls: int, offset: int,
             results: dict[str, list[float]], refusals: dict[str, int], lock: threading.Lock) -> None:
    plan = attacks(extras)
    names = list(plan)
    with psycopg.connect(app_dsn) as conn:
        for call in range(max_calls):
            if stop.is_set():
                break
            name = names[(call + offset) % len(names)]
            statement, params, rollback = plan[name]
            conn.execute("select memsub.set_context(%s)", [ATTACKER])
            arguments = params()
            start = time.perf_counter()
            try:
                conn.execute(statement.encode(), arguments).fetchall()
                refused = False
            except psycopg.errors.ProgramLimitExceeded:
                refused = True
            elapsed = (time.perf_counter() - start) * 1000.0
            if rollback or refused:
                conn.rollback()
            else:
                conn.commit()
            with lock:
                results.setdefault(name, []).append(elapsed)
                refusals[name] = refusals.get(name, 0) + int(refused)


def victim(app_dsn: str, threads: list[str], seconds: float, rng: random.Random) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {name: [] for name in VICTIM_CALLS}
    deadline = time.monotonic() + seconds
    call = 0
    with psycopg.connect(app_dsn) as conn:
        while time.monotonic() < deadline:
            name = VICTIM_CALLS[call % len(VICTIM_CALLS)]
            call += 1
            if name == "write_packet":
                statement, params = ("select count(*) from memsub.write_packet(%s::jsonb)",
                                     [json.dumps(packet(rng, rng.choice(threads)))])
            elif name == "get_thread":
                statement, params = "select count(*) from memsub.get_thread(%s, 50)", [rng.choice(threads)]
            elif name == "semantic_search":
                statement, params = "select count(*) from memsub.semantic_search(%s::vector, 10)", [vector(rng)]
            else:
                statement, params = ("select count(*) from memsub.hybrid_search(%s, %s::vector, 10)",
                                     [" ".join(rng.choices(WORDS, k=2)), vector(rng)])
            conn.execute("select memsub.set_context(%s)", [VICTIM])
            start = time.perf_counter()
            conn.execute(statement.encode(), params).fetchall()
            timings[name].append((time.perf_counter() - start) * 1000.0)
            conn.commit()
    return timings


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--packets", type=int, default=2000, help="packets of each tenant")
    parser.add_argument("--quiet-seconds", type=float, default=20.0, help="each quiet phase (before and after)")
    parser.add_argument("--noisy-seconds", type=float, default=50.0)
    parser.add_argument("--attackers", type=int, default=2, help="attacking connections")
    parser.add_argument("--graph-nodes", type=int, default=30, help="entities of the attacker's complete graph")
    parser.add_argument("--max-attack-calls", type=int, default=500, help="per attacking connection")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rng = random.Random(7)
    with bench_database(DIMENSION) as (admin_dsn, app_dsn):
        env = environment(admin_dsn)
        started = time.monotonic()
        threads = load(app_dsn, VICTIM, args.packets, rng)
        load(app_dsn, ATTACKER, args.packets, rng)
        extras = load_attacker_extras(app_dsn, args.graph_nodes)
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute("vacuum analyze")
        load_seconds = time.monotonic() - started

        before = victim(app_dsn, threads, args.quiet_seconds, rng)
        stop = threading.Event()
        lock = threading.Lock()
        attack_times: dict[str, list[float]] = {}
        refusals: dict[str, int] = {}
        workers = [threading.Thread(target=attacker, args=(app_dsn, extras, stop, args.max_attack_calls, i,
                                                           attack_times, refusals, lock))
                   for i in range(args.attackers)]
        for worker in workers:
            worker.start()
        noisy = victim(app_dsn, threads, args.noisy_seconds, rng)
        stop.set()
        for worker in workers:
            worker.join()
        after = victim(app_dsn, threads, args.quiet_seconds, rng)

    rows = []
    for name in VICTIM_CALLS:
        quiet = before[name] + after[name]
        rows.append({"call": name, "quiet_n": len(quiet), "noisy_n": len(noisy[name]),
                     "quiet_p50": percentile(quiet, 0.5), "quiet_p95": percentile(quiet, 0.95),
                     "before_p50": percentile(before[name], 0.5), "after_p50": percentile(after[name], 0.5),
                     "noisy_p50": percentile(noisy[name], 0.5), "noisy_p95": percentile(noisy[name], 0.95)})
    attack_rows = [{"attack": name, "calls": len(times), "refused": refusals.get(name, 0),
                    "p50_ms": percentile(times, 0.5), "max_ms": max(times)} for name, times in attack_times.items()]
    result = {"environment": env, "settings": vars(args), "load_seconds": load_seconds,
              "victim": rows, "attacks": attack_rows}
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return
    print(f"noisy neighbour: {args.packets} packets per tenant, {args.attackers} attacking connection(s), "
          f"complete graph of {args.graph_nodes} entities; quiet {args.quiet_seconds:.0f} s before and after, "
          f"noisy {args.noisy_seconds:.0f} s (load {load_seconds:.0f} s)")
    print(environment_line(env))
    print()
    print("victim call       quiet n  noisy n  quiet p50  quiet p95  noisy p50  noisy p95  p50 x  p95 x  "
          "p50 before/after")
    for row in rows:
        print(f"{row['call']:<16} {row['quiet_n']:>8} {row['noisy_n']:>8} {row['quiet_p50']:>9.2f}  "
              f"{row['quiet_p95']:>9.2f}  {row['noisy_p50']:>9.2f}  {row['noisy_p95']:>9.2f}  "
              f"{row['noisy_p50'] / row['quiet_p50']:>5.2f}  {row['noisy_p95'] / row['quiet_p95']:>5.2f}  "
              f"{row['before_p50']:.2f}/{row['after_p50']:.2f}")
    print()
    print("attack                        calls  refused  p50 ms   max ms")
    for row in attack_rows:
        print(f"{row['attack']:<28} {row['calls']:>6} {row['refused']:>8} {row['p50_ms']:>7.1f} {row['max_ms']:>8.1f}")
    print("\n(milliseconds, nearest-rank percentiles; x = noisy / quiet)")


if __name__ == "__main__":
    main()
