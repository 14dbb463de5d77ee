"""Appending to a long session: does an append cost more as the session's history grows?

One private embedded PostgreSQL (or ``MEMSUB_BENCH_DSN``), side by side in one run:

- memsub: ``memsub.session_append_event`` as a ``memsub_app`` login (``set_context`` and the call in one
  pipelined transaction per event), all events into one session;
- baseline: the same events, one transaction each, into plain tables written as the same login: a counter row
  per session (``update ... returning``, which gives the event its position) and an event row (``insert``),
  which is what an append has to write at the least.

The events go in segments, the two sides alternating, so that both histories grow together. Reported per segment:
the median latency of an append, the WAL it wrote (``pg_current_wal_insert_lsn`` before and after each append,
read on a second connection: only this benchmark writes to the private cluster), and memsub / baseline. The
growth line compares the last segment with the first: 1.0 is an append whose cost does not depend on the history.

Usage: python bench/session_events.py [--events 2000] [--segment 200] [--event-bytes 300] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import string
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from _database import APP_ROLE, bench_database, environment, environment_line

TENANT = uuid.UUID("b0000000-0000-4000-8000-0000000000e1")
USER = uuid.UUID("b0000000-0000-4000-8000-0000000000e2")
SESSION = "long-session"

BASELINE = ("create table bench.session_counts (id text primary key, event_count integer not null default 0)",
            "create table bench.session_events (session_id text not null, position integer not null, "
            "event jsonb not null, created_at timestamptz not null default now(), "
            "primary key (session_id, position))")


def events(count: int, size: int) -> list[str]:
    """Agent turns of about `size` bytes: random words, so that the history does not compress to nothing."""
    rng = random.Random(11)
    made = []
    for number in range(count):
        words = []
        while sum(len(w) + 1 for w in words) < size:
            words.append("".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))))
        made.append(json.dumps({"n": number, "author": rng.choice(("user", "agent")), "text": " ".join(words)}))
    return made


def prepare_baseline(superuser: str) -> None:
    with psycopg.connect(superuser, autocommit=True) as conn:
        conn.execute("create schema if not exists bench")
        for statement in BASELINE:
            conn.execute(statement)
        conn.execute("insert into bench.session_counts (id) values (%s)", [SESSION])
        conn.execute(sql.SQL("grant usage on schema bench to {}").format(sql.Identifier(APP_ROLE)))
        conn.execute(sql.SQL("grant select, insert, update on all tables in schema bench to {}").format(
            sql.Identifier(APP_ROLE)))


def memsub_append(conn: psycopg.Connection[Any]) -> Callable[[str], None]:
    def append(event: str) -> None:
        with conn.transaction(), conn.pipeline():
            conn.execute("select memsub.set_context(%s, null, %s, '{}', %s)", [TENANT, USER, SESSION],
                         prepare=True)
            conn.execute("select 1 from memsub.session_append_event(%s, %s::jsonb)", [SESSION, event], prepare=True)
    return append


def baseline_append(conn: psycopg.Connection[Any]) -> Callable[[str], None]:
    def append(event: str) -> None:
        with conn.transaction(), conn.pipeline():
            conn.execute("with c as (update bench.session_counts s set event_count = s.event_count + 1 "
                         "where s.id = %s returning s.id, s.event_count) "
                         "insert into bench.session_events (session_id, position, event) "
                         "select c.id, c.event_count - 1, %s::jsonb from c", [SESSION, event], prepare=True)
    return append


def timed(append: Callable[[str], None], wal: psycopg.Connection[Any], chunk: list[str]) -> tuple[list[float],
                                                                                                  list[int]]:
    seconds, wal_bytes = [], []
    for event in chunk:
        before = wal.execute("select pg_current_wal_insert_lsn()").fetchone()[0]  # type: ignore[index]
        started = time.perf_counter()
        append(event)
        seconds.append(time.perf_counter() - started)
        wal_bytes.append(int(wal.execute("select pg_current_wal_insert_lsn() - %s::pg_lsn",
                                         [before]).fetchone()[0]))  # type: ignore[index]
    return seconds, wal_bytes


def run(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    made = events(args.events, args.event_bytes)
    segments = [made[i:i + args.segment] for i in range(0, len(made), args.segment)]
    results: dict[str, Any] = {"segments": [], "events": args.events, "event_bytes": args.event_bytes}
    with bench_database() as (superuser, app):
        results["environment"] = environment(superuser)
        log(environment_line(results["environment"]))
        prepare_baseline(superuser)
        with psycopg.connect(app, autocommit=True) as ms, psycopg.connect(app, autocommit=True) as plain, \
                psycopg.connect(superuser, autocommit=True) as wal:
            with ms.transaction():
                ms.execute("select memsub.set_context(%s, null, %s, '{}', %s)", [TENANT, USER, SESSION])
                ms.execute("select memsub.session_create(%s)", [SESSION])
            sides = {"memsub": memsub_append(ms), "baseline": baseline_append(plain)}
            for number, chunk in enumerate(segments):
                order = list(sides) if number % 2 == 0 else list(sides)[::-1]
                measured: dict[str, tuple[list[float], list[int]]] = {}
                for name in order:
                    measured[name] = timed(sides[name], wal, chunk)
                results["segments"].append({
                    "first_event": number * args.segment,
                    **{f"{name}_p50_ms": statistics.median(measured[name][0]) * 1000 for name in sides},
                    **{f"{name}_wal_bytes": statistics.median(measured[name][1]) for name in sides},
                })
                log(f"events {number * args.segment:,} to {number * args.segment + len(chunk) - 1:,} done")
            size = wal.execute("select pg_column_size(s.*) from memsub.sessions s where s.id = %s",
                               [SESSION]).fetchone()
            results["session_row_bytes"] = int(size[0]) if size else None
    first, last = results["segments"][0], results["segments"][-1]
    results["growth"] = {name: last[f"{name}_p50_ms"] / first[f"{name}_p50_ms"] for name in ("memsub", "baseline")}
    return results


def render(results: dict[str, Any]) -> str:
    lines = ["Appends to one session as its history grows: memsub.session_append_event against a plain insert",
             "", environment_line(results["environment"]),
             f"{results['events']:,} events of about {results['event_bytes']} bytes, one transaction each", "",
             f"{'events before':>14} {'memsub p50 ms':>14} {'baseline p50 ms':>16} {'ratio':>6} "
             f"{'memsub WAL B':>13} {'baseline WAL B':>15}"]
    for segment in results["segments"]:
        lines.append(f"{segment['first_event']:>14,} {segment['memsub_p50_ms']:>14.2f} "
                     f"{segment['baseline_p50_ms']:>16.2f} "
                     f"{segment['memsub_p50_ms'] / segment['baseline_p50_ms']:>6.2f} "
                     f"{segment['memsub_wal_bytes']:>13,.0f} {segment['baseline_wal_bytes']:>15,.0f}")
    growth = results["growth"]
    lines += ["", f"growth, last segment / first (1.0: independent of the history): memsub {growth['memsub']:.2f}, "
                  f"baseline {growth['baseline']:.2f}",
              f"the session's row after the run: {results['session_row_bytes']:,} bytes"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--segment", type=int, default=200)
    parser.add_argument("--event-bytes", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.events < 1 or args.segment < 1 or args.event_bytes < 1:
        parser.error("--events, --segment and --event-bytes must be at least 1")
    results = run(args, lambda message: print(message, file=sys.stderr, flush=True))
    print(json.dumps(results, indent=2, default=str) if args.json else render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
