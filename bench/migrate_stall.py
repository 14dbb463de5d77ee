"""Upgrading while applications run: how long does an application call stall while ``memsub migrate`` re-applies
sql/ after an upgrade that changed one function's body?

A private embedded server (or ``MEMSUB_BENCH_DSN``) gets a freshly migrated database. ``--apps`` application
threads, each an ordinary login of memsub_app, call in a loop (one short transaction per call): a packet write,
a read of it, and a memory write. Meanwhile the main thread runs ``--rounds`` migrations, each of a copy of sql/
whose ``130_packet_read.sql`` has one function body changed (alternating between two bodies, so every round has
a change to apply), with ``--gap`` seconds of quiet between two.

Reported: each round's migrate time, the longest application call that overlapped a migrate against the longest
and the p99 of the calls that overlapped none, and the locks the re-apply transaction holds at its end on memsub
relations that the applications' writes (ROW EXCLUSIVE) or reads (ACCESS SHARE) would wait for: relations and
lock modes, counted from pg_locks in a transaction that applies sql/ and is rolled back.

    python bench/migrate_stall.py [--apps 2] [--rounds 6] [--gap 0.5] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _database import bench_database
from memsub import resources
from memsub.client import Substrate
from memsub.migrator import Migrator, repeatable_steps
from memsub.models import PacketEnvelopeIn
from memsub.schema_files import load_repeatables

CHANGED_FILE = "130_packet_read.sql"
# Modes that conflict with what the applications take: ROW EXCLUSIVE (writes) and ACCESS SHARE (reads).
BLOCKS_WRITES = ("ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock")


def sql_versions(root: Path, source: Path | None = None) -> list[Path]:
    """Two copies of sql/ (or of ``source``), each with a different body of the first function of CHANGED_FILE."""
    versions = []
    for version in ("a", "b"):
        copy = root / f"sql_{version}"
        shutil.copytree(source or resources.repeatables_dir(), copy)
        target = copy / CHANGED_FILE
        text = target.read_text()
        assert "as $$\n" in text
        target.write_text(text.replace("as $$\n", f"as $$\n-- revision {version}\n", 1))
        versions.append(copy)
    return versions


def strong_locks(dsn: str, repeatables: Path) -> Counter[str]:
    """The locks on memsub relations that a re-apply of ``repeatables`` holds at its end, as ``relation mode``:
    applied in one transaction with the migrator's own statements, then rolled back."""
    held: Counter[str] = Counter()
    with psycopg.connect(dsn) as conn:
        conn.execute("set search_path = public")
        for _, statements in repeatable_steps(load_repeatables(repeatables)):
            for statement in statements:
                conn.execute(statement.encode())
        for relation, mode in conn.execute(
                "select c.relname, l.mode from pg_locks l join pg_class c on c.oid = l.relation "
                "where l.pid = pg_backend_pid() and c.relnamespace = 'memsub'::regnamespace "
                "and c.relkind in ('r', 'p', 'v', 'm') and l.mode = any(%s)", [list(BLOCKS_WRITES)]).fetchall():
            held[mode] += 1
            held[f"{mode} {relation}"] += 1
        conn.rollback()
    return held


def app_loop(dsn: str, until: threading.Event, calls: list[tuple[float, float]], failures: list[str]) -> None:
    user = uuid.uuid4()
    with Substrate(dsn, min_size=1, max_size=1) as substrate:
        tenant = uuid.uuid4()
        with substrate.tenant(tenant, user_id=user, per_call=True) as session:
            n = 0
            while not until.is_set():
                n += 1
                started = time.monotonic()
                try:
                    written = session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"n": n}))
                    session.packets.get(written.packet_id)
                    session.memory.write(f"user:{user}:notes", f"k{n}", {"n": n})
                except Exception as error:
                    failures.append(f"{type(error).__name__}: {error}")
                calls.append((started, time.monotonic()))
                time.sleep(0.01)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--gap", type=float, default=0.5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, bench_database() as (dsn, app_dsn):
        versions = sql_versions(Path(scratch))
        Migrator(dsn, repeatables_path=versions[1]).migrate()
        locks = strong_locks(dsn, versions[0])
        until = threading.Event()
        calls: list[list[tuple[float, float]]] = [[] for _ in range(args.apps)]
        failures: list[str] = []
        apps = [threading.Thread(target=app_loop, args=(app_dsn, until, calls[i], failures))
                for i in range(args.apps)]
        for app in apps:
            app.start()
        time.sleep(1.0)
        windows: list[tuple[float, float]] = []
        try:
            for round_ in range(args.rounds):
                started = time.monotonic()
                report = Migrator(dsn, repeatables_path=versions[round_ % 2]).migrate()
                windows.append((started, time.monotonic()))
                assert report.repeatables_applied
                time.sleep(args.gap)
        finally:
            until.set()
            for app in apps:
                app.join()
    every = [call for per_app in calls for call in per_app]

    def overlaps(call: tuple[float, float]) -> bool:
        return any(call[0] < end and call[1] > start for start, end in windows)

    during = [end - start for start, end in every if overlaps((start, end))]
    quiet = [end - start for start, end in every if not overlaps((start, end))]
    result: dict[str, Any] = {
        "rounds": args.rounds, "apps": args.apps,
        "migrate_seconds": [round(end - start, 3) for start, end in windows],
        "calls_during": len(during), "calls_quiet": len(quiet),
        "longest_call_during_migrate": round(max(during, default=0.0), 3),
        "p99_quiet": round(percentile(quiet, 0.99), 3), "longest_quiet": round(max(quiet, default=0.0), 3),
        "strong_locks": {mode: locks[mode] for mode in BLOCKS_WRITES if locks[mode]},
        "strong_locked_relations": sorted(key for key in locks if " " in key),
        "failures": Counter(failures).most_common(5),
    }
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
