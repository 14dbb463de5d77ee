"""Graph reads around hub entities and the edge writes beside them, two versions of memsub on one server, called
alternately: latency and server CPU per call.

Usage: python bench/graph_hubs.py --before DIR [--after DIR] [--hub 300000] [--rounds 3] [--json]

``--before`` and ``--after`` are checkouts of memsub (``--after`` defaults to this one). On one private embedded
server (or ``MEMSUB_BENCH_DSN``) a database is migrated by ``--before``'s own migrator (a subprocess with that
checkout's ``python/`` first on the path) and gets the graph, written in one random order (so a hub's rows are
spread over the table, as edges observed over time are): in one tenant a hub with ``--hub`` edges out (confidences
in 100 steps, mention counts 1 to 7, three types) and a tenth as many in, 'mid' with 30,000 edges out (below the
default max_walk_edges of 100,000), 100,000 edges among 20,000 other entities, 100,000 facts about the hub and
100,000 about the others, and another tenant's hub of 50,000 edges. A copy of it is upgraded by ``--after``'s
migrator, as an installation is (out-of-order migrations allowed, so a branch's migration numbered below the newest
of ``--before`` applies too); both are vacuumed and analyzed.

Then, in ``--rounds`` rounds whose order of the two versions is swapped every round, the same calls go to each as
a login in ``memsub_app`` (``set_context`` and the call in one pipeline on an autocommit connection):

- reads refused over max_walk_edges, set to 1,000 for them: traverse_graph, graph_neighbors_as_of and
  entity_neighbourhood from the hub with ``limit`` 10,000;
- reads with a small ``limit`` (10) from the hub and from 'mid', and at the functions' default limits from 'mid',
  with max_walk_edges at its default (a version that reads every edge of a level refuses the hub's);
- edge and fact writes: upsert_relationship of a new edge from a background entity and of an existing one (a
  reinforcement, which changes its confidence and mentions), assert_fact of a new fact and of an existing one.

Reported per call: p50 latency of each version, server CPU (the backend's ``/proc/<pid>/schedstat``, median of the
rounds' per-call means), the ratio after / before, and whether a version refused the call (54000); then the bytes
of each version's indexes on entity_relationships and knowledge_facts. About five minutes at the defaults.
"""

from __future__ import annotations

import argparse
import json
import os
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
from psycopg.conninfo import make_conninfo

from _database import APP_ROLE, backend_cpu, environment, environment_line, private_cluster, trusted_app_login

TENANT = uuid.UUID("c0de0000-0000-4000-8000-0000000000a1")
OTHER = uuid.UUID("c0de0000-0000-4000-8000-0000000000b1")
# Out of order allowed: a branch's migration may be numbered below the newest one of the version it is compared with.
MIGRATE = ("import sys; from memsub.migrator import Migrator; "
           "Migrator(sys.argv[1]).migrate(allow_out_of_order=True)")

# (name, statement, calls per round): reads with max_walk_edges at 1,000.
REFUSED = [
    ("traverse_graph(hub, 1, limit 10000), max_walk_edges 1000",
     "select * from memsub.traverse_graph('hub', 1, p_limit => 10000)", 3),
    ("graph_neighbors_as_of(hub, 1, limit 10000), max_walk_edges 1000",
     "select * from memsub.graph_neighbors_as_of('hub', null, 1, 10000)", 3),
    ("entity_neighbourhood(hub, limit 10000), max_walk_edges 1000",
     "select * from memsub.entity_neighbourhood('hub', p_limit => 10000)", 3),
]
# Reads with max_walk_edges at its default.
READS = [
    ("traverse_graph(hub, 2, limit 10)", "select * from memsub.traverse_graph('hub', 2, p_limit => 10)", 3),
    ("graph_neighbors(hub, 2, limit 10)", "select * from memsub.graph_neighbors('hub', 2, 10)", 3),
    ("entity_neighbourhood(hub, limit 10)", "select * from memsub.entity_neighbourhood('hub', p_limit => 10)", 3),
    ("traverse_graph(mid, 2, limit 10)", "select * from memsub.traverse_graph('mid', 2, p_limit => 10)", 5),
    ("graph_neighbors(mid, 2, limit 10)", "select * from memsub.graph_neighbors('mid', 2, 10)", 5),
    ("entity_neighbourhood(mid, limit 10)", "select * from memsub.entity_neighbourhood('mid', p_limit => 10)", 5),
    ("traverse_graph(mid), limit 1000", "select * from memsub.traverse_graph('mid')", 3),
    ("graph_neighbors(mid), limit 100", "select * from memsub.graph_neighbors('mid')", 3),
    ("entity_neighbourhood(mid), limit 100", "select * from memsub.entity_neighbourhood('mid')", 3),
]
WRITES_PER_ROUND = 100


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def migrate(checkout: Path, superuser: str, name: str, template: str | None = None) -> str:
    """A new database (a copy of ``template`` when given) migrated by the checkout's own migrator; its superuser
    conninfo."""
    with psycopg.connect(superuser, autocommit=True) as conn:
        conn.execute(f'create database "{name}"' + (f' template "{template}"' if template else ""))
    dsn = make_conninfo(superuser, dbname=name)
    environ = dict(os.environ, PYTHONPATH=str(checkout / "python"))
    subprocess.run([sys.executable, "-c", MIGRATE, dsn], check=True, env=environ)
    trusted_app_login(dsn)
    return dsn


def load(dsn: str, hub: int) -> None:
    """The graph of the module's docstring, the same rows in the same order in every database."""
    edges = [(TENANT, "'hub'", "'n' || i", "(i % 100) / 100.0", "1 + i % 7", hub),
             (TENANT, "'m' || i", "'hub'", "0.5", "1", hub // 10),
             (TENANT, "'mid'", "'p' || i", "(i % 100) / 100.0", "1 + i % 7", 30_000),
             (TENANT, "'x' || i % 20000", "'y' || i", "0.5", "1", 100_000),
             (OTHER, "'hub'", "'n' || i", "0.5", "1", 50_000)]
    facts = [(TENANT, "'hub'", 100_000), (TENANT, "'x' || i % 20000", 100_000)]
    # Fixed fragments of this module, no outside input: every row in one statement, in one random order.
    edge_rows = " union all ".join(
        f"select '{tenant}'::uuid as tenant_id, {source} as source_entity, "  # noqa: S608
        f"(array['links', 'knows', 'cites'])[1 + i % 3] as relationship_type, {target} as target_entity, "
        f"{confidence}::double precision as confidence, {mentions} as mention_count "
        f"from generate_series(1, {count}) i"
        for tenant, source, target, confidence, mentions, count in edges)
    fact_rows = " union all ".join(
        f"select '{tenant}'::uuid as tenant_id, {subject} as subject, 'p' || i % 7 as predicate, "  # noqa: S608
        f"to_jsonb(i) as object, (i % 50) / 50.0 as confidence, i::text as object_normalized "
        f"from generate_series(1, {count}) i" for tenant, subject, count in facts)
    with psycopg.connect(dsn, autocommit=True) as conn:
        # Written without the tables' secondary indexes and constraints, which are built again afterwards: one
        # sorted build each instead of a random insertion per row (the GiST index of the exclusion constraint
        # above all).
        again = [*aside(conn, "memsub.entity_relationships"), *aside(conn, "memsub.knowledge_facts")]
        conn.execute("select setseed(0.5)")
        conn.execute("insert into memsub.entity_relationships (tenant_id, source_entity, "  # noqa: S608
                     "relationship_type, target_entity, confidence, mention_count, valid_period) "
                     "select e.*, tstzrange(now() - interval '1 day', null, '[)') "
                     f"from ({edge_rows}) e order by random()")
        conn.execute("insert into memsub.knowledge_facts (tenant_id, subject, predicate, object, "  # noqa: S608
                     "confidence, subject_normalized, object_normalized) "
                     "select f.tenant_id, f.subject, f.predicate, f.object, f.confidence, f.subject, "
                     f"f.object_normalized from ({fact_rows}) f order by random()")
        for statement in again:
            conn.execute(statement)


def aside(conn: psycopg.Connection[Any], table: str) -> list[str]:
    """Drops the table's indexes and constraints other than its primary key; the statements that make them again."""
    constraints = conn.execute("select conname, pg_get_constraintdef(oid) from pg_constraint "
                               "where conrelid = %s::regclass and contype in ('u', 'x')", [table]).fetchall()
    indexes = conn.execute("select indexrelid::regclass::text, pg_get_indexdef(indexrelid) from pg_index i "
                           "where indrelid = %s::regclass and not indisprimary "
                           "and not exists (select from pg_constraint c where c.conindid = i.indexrelid)",
                           [table]).fetchall()
    for name, _ in constraints:
        conn.execute(f"alter table {table} drop constraint {name}")
    for name, _ in indexes:
        conn.execute(f"drop index {name}")
    return ([f"alter table {table} add constraint {name} {definition}" for name, definition in constraints]
            + [definition for _, definition in indexes])


def vacuum(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("vacuum analyze memsub.entity_relationships")
        conn.execute("vacuum analyze memsub.knowledge_facts")


class Version:
    """One version's application connection and the CPU reader of its server process."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn = psycopg.connect(make_conninfo(dsn, user=APP_ROLE), autocommit=True)
        cpu = backend_cpu(self.conn)
        if cpu is None:
            raise SystemExit("graph_hubs.py needs the server on this machine (it reads /proc/<pid>/schedstat)")
        self.cpu: Callable[[], float] = cpu

    def call(self, query: str, params: Sequence[Any] = ()) -> str:
        """Run the call; 'refused' when it raised 54000, 'ok' otherwise."""
        try:
            with self.conn.pipeline():
                self.conn.execute("select memsub.set_context(%s, null, null)", [TENANT], prepare=True)
                self.conn.execute(query.encode(), list(params), prepare=True).fetchall()
        except psycopg.errors.ProgramLimitExceeded:
            return "refused"
        return "ok"

    def walk_edges(self, value: int | None) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("delete from memsub.limits where name = 'max_walk_edges'")
            if value is not None:
                conn.execute("insert into memsub.limits (name, value) values ('max_walk_edges', %s)", [value])

    def index_bytes(self) -> dict[str, int]:
        sizes = {}
        with psycopg.connect(self.dsn) as conn:
            for table in ("entity_relationships", "knowledge_facts"):
                row = conn.execute("select sum(pg_relation_size(indexrelid)) from pg_index "
                                   "where indrelid = %s::regclass", [f"memsub.{table}"]).fetchone()
                sizes[table] = int(row[0]) if row else 0
        return sizes


def timed(version: Version, calls: Sequence[tuple[str, Sequence[Any]]]) -> tuple[list[float], float, set[str]]:
    """Latency of each call (ms), the server CPU per call (ms), and the outcomes."""
    latencies, outcomes = [], set()
    cpu = version.cpu()
    for query, params in calls:
        started = time.perf_counter()
        outcomes.add(version.call(query, params))
        latencies.append((time.perf_counter() - started) * 1e3)
    return latencies, (version.cpu() - cpu) * 1e3 / len(calls), outcomes


def measure(versions: dict[str, Version], rounds: int) -> dict[str, dict[str, Any]]:
    samples: dict[str, dict[str, dict[str, Any]]] = {}

    def record(name: str, label: str, result: tuple[list[float], float, set[str]]) -> None:
        entry = samples.setdefault(name, {}).setdefault(label, {"latency": [], "cpu": [], "outcomes": set()})
        entry["latency"] += result[0]
        entry["cpu"].append(result[1])
        entry["outcomes"] |= result[2]

    for round_number in range(rounds):
        order = list(versions.items())
        if round_number % 2:
            order.reverse()
        for label, version in order:
            log(f"round {round_number + 1}: {label}")
            version.walk_edges(1000)
            for name, query, count in REFUSED:
                version.call(query)  # once unmeasured: the call's plans are made
                record(name, label, timed(version, [(query, ())] * count))
            version.walk_edges(None)
            for name, query, count in READS:
                version.call(query)
                record(name, label, timed(version, [(query, ())] * count))
            tag = f"{label}{round_number}"
            record("upsert_relationship, a new edge", label, timed(version, [
                ("select memsub.upsert_relationship(%s, 'links', %s, 0.5)", [f"x{n * 7 % 20000}", f"new {tag} {n}"])
                for n in range(WRITES_PER_ROUND)]))
            record("upsert_relationship, a known edge", label, timed(version, [
                ("select memsub.upsert_relationship(%s, 'links', %s, 0.5)", [f"x{n * 13 % 20000}", f"y{n * 13}"])
                for n in range(1, WRITES_PER_ROUND + 1)]))
            record("assert_fact, a new fact", label, timed(version, [
                ("select memsub.assert_fact(%s, 'q', to_jsonb(%s::text), 0.5)", [f"x{n * 7 % 20000}", f"{tag} {n}"])
                for n in range(WRITES_PER_ROUND)]))
            record("assert_fact, a known fact", label, timed(version, [
                ("select memsub.assert_fact(%s, 'q', to_jsonb(%s::text), 0.5)", [f"x{n * 7 % 20000}", f"{tag} {n}"])
                for n in range(WRITES_PER_ROUND)]))
    return {name: {label: {"p50_ms": statistics.median(entry["latency"]), "cpu_ms": statistics.median(entry["cpu"]),
                           "refused": "refused" in entry["outcomes"]}
                   for label, entry in by_version.items()}
            for name, by_version in samples.items()}


def run(args: argparse.Namespace) -> dict[str, Any]:
    checkouts = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    with ExitStack() as stack:
        superuser = os.environ.get("MEMSUB_BENCH_DSN") or stack.enter_context(private_cluster())
        suffix = uuid.uuid4().hex[:8]
        names = {label: f"memsub_bench_hubs_{label}_{suffix}" for label in checkouts}
        try:
            log(f"migrating before ({checkouts['before']}) and writing the graph")
            dsns = {"before": migrate(checkouts["before"], superuser, names["before"])}
            load(dsns["before"], args.hub)
            log(f"upgrading a copy of it by after ({checkouts['after']})")
            dsns["after"] = migrate(checkouts["after"], superuser, names["after"], template=names["before"])
            versions = {}
            for label, dsn in dsns.items():
                vacuum(dsn)
                versions[label] = Version(dsn)
            started = os.getloadavg()[0]
            results = {"environment": environment(superuser), "hub": args.hub, "rounds": args.rounds,
                       "checkouts": {label: str(path) for label, path in checkouts.items()},
                       "calls": measure(versions, args.rounds),
                       "index_bytes": {label: version.index_bytes() for label, version in versions.items()},
                       "load_average_1m": {"start": round(started, 2), "end": round(os.getloadavg()[0], 2)}}
            for version in versions.values():
                version.conn.close()
            return results
        finally:
            with psycopg.connect(superuser, autocommit=True) as conn:
                for name in names.values():
                    conn.execute(f'drop database if exists "{name}" with (force)')


def report(results: dict[str, Any]) -> str:
    lines = [environment_line(results["environment"]),
             f"load average (1 min): {results['load_average_1m']['start']} at start, "
             f"{results['load_average_1m']['end']} at end; hub of {results['hub']:,} edges; "
             f"{results['rounds']} rounds", "",
             f"{'call':66s} {'p50 before':>11s} {'p50 after':>10s} {'ratio':>6s} {'cpu before':>11s} "
             f"{'cpu after':>10s} {'ratio':>6s}"]
    for name, by_version in results["calls"].items():
        before, after = by_version["before"], by_version["after"]
        marks = " ".join(f"({label} refused)" for label, entry in by_version.items() if entry["refused"])
        lines.append(f"{name:66s} {before['p50_ms']:9.2f}ms {after['p50_ms']:8.2f}ms "
                     f"{after['p50_ms'] / before['p50_ms']:6.2f} {before['cpu_ms']:9.2f}ms {after['cpu_ms']:8.2f}ms "
                     f"{after['cpu_ms'] / max(before['cpu_ms'], 1e-9):6.2f} {marks}".rstrip())
    lines.append("")
    for table in ("entity_relationships", "knowledge_facts"):
        before, after = (results["index_bytes"][label][table] for label in ("before", "after"))
        lines.append(f"indexes of {table}: {before / 2**20:,.0f} MiB before, {after / 2**20:,.0f} MiB after")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--before", required=True, help="checkout of the version to compare with")
    parser.add_argument("--after", default=str(Path(__file__).resolve().parent.parent),
                        help="checkout of the version measured (default: this one)")
    parser.add_argument("--hub", type=int, default=300_000, help="edges out of the hub")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, the versions' order swapped each round")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    results = run(args)
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
