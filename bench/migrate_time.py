"""How long ``memsub migrate`` takes with no application running: a fresh install into an empty database, and a
re-apply of sql/ after an upgrade that changed one function's body (what an upgrade without a new migration
does; memsub._same_as_created's probes decide there which policies, triggers and views are left alone).

A private embedded server (or ``MEMSUB_BENCH_DSN``). ``--rounds`` of each, alternated: a fresh install into a new
database (dropped afterwards), then a re-apply, into a database kept for them, of a copy of sql/ whose
``130_packet_read.sql`` has one function body changed (two bodies in turn, so every round has a change). Each
figure is the migrator's own time (MigrationReport.seconds). The test suite's template databases are made by
fresh installs, so that figure is also what migrating costs ``make test``.

``--before DIR`` (a checkout of memsub, or its sql/ folder) also measures that sql/ in the same rounds,
alternating with this one's, with this checkout's migrations and migrator: what a change of sql/ alone costs or
saves, on a machine whose load varies.

    python bench/migrate_time.py [--rounds 5] [--before DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _database import private_cluster
from memsub import resources
from memsub.migrator import Migrator
from migrate_stall import CHANGED_FILE, sql_versions


@contextmanager
def scratch_database(base: str) -> Iterator[str]:
    name = f"memsub_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(base, dbname=name)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def sql_folder(path: Path) -> Path:
    return path / "sql" if (path / "sql" / CHANGED_FILE).exists() else path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", type=Path, default=None, help="a checkout of memsub (or its sql/) to compare")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    variants = {"this": resources.repeatables_dir()}
    if args.before:
        variants["before"] = sql_folder(args.before)
    times: dict[str, dict[str, list[float]]] = {name: {"fresh": [], "reapply": []} for name in variants}
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        base = os.environ.get("MEMSUB_BENCH_DSN") or stack.enter_context(private_cluster())
        changed = {}
        kept = {}
        for name, folder in variants.items():
            changed[name] = sql_versions(Path(scratch) / name, folder)
            kept[name] = stack.enter_context(scratch_database(base))
            Migrator(kept[name], repeatables_path=changed[name][1]).migrate()
        for round_ in range(args.rounds):
            for name, folder in variants.items():
                with scratch_database(base) as fresh:
                    times[name]["fresh"].append(Migrator(fresh, repeatables_path=folder).migrate().seconds)
                report = Migrator(kept[name], repeatables_path=changed[name][round_ % 2]).migrate()
                assert report.repeatables_applied and not report.applied
                times[name]["reapply"].append(report.seconds)
    result: dict[str, Any] = {"rounds": args.rounds}
    for name, measured in times.items():
        for kind, seconds in measured.items():
            result[f"{name}_{kind}_seconds"] = [round(s, 3) for s in seconds]
            result[f"{name}_{kind}_median"] = round(statistics.median(seconds), 3)
    if args.json:
        print(json.dumps(result))
        return
    for name in variants:
        for kind, what in (("fresh", "fresh install"), ("reapply", "re-apply of sql/, one function body changed")):
            print(f"{name}: {what}: median {result[f'{name}_{kind}_median']:.3f} s "
                  f"{result[f'{name}_{kind}_seconds']}")


if __name__ == "__main__":
    main()
