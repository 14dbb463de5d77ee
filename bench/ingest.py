"""Ingest throughput of memsub, side by side in one run, as ratios to a raw COPY of the same rows.

Usage: python bench/ingest.py [--packets N (10000)] [--batch 500] [--per-transaction 100] [--json]

The benchmark starts its own embedded PostgreSQL in a temporary directory (deleted afterwards), migrates a
template database, and gives every method a fresh clone of it, so each starts from an empty packet_store.
Every method writes the same envelopes as a login role that is a member of memsub_app (row-level security
applies, as in production):

- write_packet, one envelope per transaction (BEGIN, set_context, write_packet, COMMIT);
- write_packet, many envelopes per transaction;
- write_packets, a JSON array of --batch envelopes per call, one call per transaction;
- write_packets of envelopes already stored (every one deduplicated): the retry path;
- COPY of the rows write_packets stored into ``bench.bare`` (``like memsub.packet_store``: no indexes,
  triggers, policies or defaults) in one transaction: the ceiling any ingest path is measured against;
- COPY of the same rows into ``bench.indexed`` (packet_store's indexes, constraints and defaults): the
  bulk-ingest ratio (write_packets against a COPY into a table with the same indexes).

JSON is serialized before the clock starts, so the figures are the database path (validation, lineage
lookups, dedup, indexes, RLS, WAL) plus the client round trips, not Python's json module. Each method's
result is checked (row count) before it is reported.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from _database import TABLE_AND_INDEX_BYTES, cpu_model, memory_bytes, private_cluster
from memsub.migrator import Migrator

APP_ROLE = "memsub_bench_app"
TEMPLATE = "bench_template"
TENANT = uuid.UUID("b0000000-0000-4000-8000-00000000be7c")
ORG = uuid.UUID("b0000000-0000-4000-8000-0000000000a1")
SETTINGS = ("shared_buffers", "synchronous_commit", "fsync", "full_page_writes", "wal_level", "wal_buffers",
            "max_wal_size", "checkpoint_timeout", "work_mem", "data_checksums", "jit")
WORDS = ("hdpe", "pellet", "supplier", "price", "freight", "lane", "invoice", "quote", "resin", "grade", "melt",
         "index", "capacity", "tonnage", "contract", "delivery", "warehouse", "certified", "recycled", "virgin",
         "customer", "margin", "spot", "forecast", "buyer", "seller", "broker", "sample", "trial", "load")
TAGS = ("hdpe", "ldpe", "pp", "pet", "supplier_search", "pricing", "logistics", "quality", "california", "texas")
TYPES = ("event", "event", "memory_write", "reasoning_trace", "insight")
DERIVATIONS = ("split", "merge", "transform", "inference")


# -- data ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    envelopes: list[str]  # JSON text, in write order (parents before children)
    threads: int
    with_lineage: int
    with_ttl: int
    json_bytes: int


def make_dataset(count: int, per_thread: int = 50, seed: int = 7) -> Dataset:
    """Realistic agent traffic: threads of turns, a third of them derived from 1-2 earlier turns."""
    rng = random.Random(seed)
    base = datetime.now(UTC) - timedelta(days=1)
    envelopes: list[str] = []
    threads: dict[int, list[str]] = {}
    with_lineage = with_ttl = 0
    thread_ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(max(1, count // per_thread))]
    for n in range(count):
        thread = n % len(thread_ids)
        earlier = threads.setdefault(thread, [])
        packet_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        packet_type = rng.choice(TYPES)
        envelope: dict[str, Any] = {
            "packet_id": packet_id,
            "packet_type": packet_type,
            "timestamp": (base + timedelta(milliseconds=n)).isoformat(),
            "payload": {"turn": n, "speaker": rng.choice(("user", "agent", "tool")),
                        "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 80)))},
            "metadata": {"schema_version": "1.1.0", "agent": "bench_agent", "domain": "plastic_brokerage"},
            "thread_id": thread_ids[thread],
            "tags": rng.sample(TAGS, rng.randint(1, 3)),
        }
        if earlier and rng.random() < 0.35:
            parents = rng.sample(earlier[-10:], min(len(earlier[-10:]), rng.randint(1, 2)))
            envelope["lineage"] = {"parent_ids": parents, "derivation_type": rng.choice(DERIVATIONS)}
            with_lineage += 1
        if packet_type == "insight":
            envelope["confidence"] = {"score": round(rng.random(), 2), "rationale": "bench"}
        if rng.random() < 0.2:
            envelope["ttl"] = (base + timedelta(days=30, milliseconds=n)).isoformat()
            with_ttl += 1
        earlier.append(packet_id)
        envelopes.append(json.dumps(envelope))
    return Dataset(envelopes, len(thread_ids), with_lineage, with_ttl, sum(len(e) for e in envelopes))


# -- server and databases ----------------------------------------------------------------------------------


@dataclass
class Bench:
    superuser: str  # conninfo of the maintenance database as the superuser

    def dsn(self, database: str, user: str | None = None) -> str:
        extra = {"dbname": database}
        if user:
            extra["user"] = user
        return make_conninfo(self.superuser, **extra)

    def admin(self, database: str = "postgres") -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn(database), autocommit=True)

    def prepare_template(self) -> None:
        with self.admin() as conn:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(TEMPLATE)))
        Migrator(self.dsn(TEMPLATE)).migrate()
        with self.admin(TEMPLATE) as conn:
            role = sql.Identifier(APP_ROLE)
            # Private throwaway server with local trust authentication: the role needs no password.
            conn.execute(sql.SQL("create role {} login nobypassrls in role memsub_app").format(role))
            conn.execute("select memsub.trust_login(%s)", [APP_ROLE])  # writes for many tenants
            conn.execute("create schema bench")
            conn.execute("create table bench.bare (like memsub.packet_store)")
            # The same rows into a table with packet_store's indexes, constraints and defaults (no policies,
            # triggers or foreign keys): what a write path with those indexes is measured against.
            conn.execute("create table bench.indexed (like memsub.packet_store including defaults "
                         "including constraints including indexes)")
            conn.execute(sql.SQL("grant usage on schema bench to {}").format(role))
            conn.execute(sql.SQL("grant insert, select on bench.bare, bench.indexed to {}").format(role))

    def clone(self, name: str) -> str:
        with self.admin() as conn:
            conn.execute(sql.SQL("create database {} template {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE)))
            conn.execute("checkpoint")
        return name

    def count(self, database: str, table: str) -> int:
        with self.admin(database) as conn:
            row = conn.execute(sql.SQL("select count(*) from {}").format(sql.SQL(table))).fetchone()
        return int(row[0]) if row else 0

    def size(self, database: str, table: str) -> dict[str, int]:
        with self.admin(database) as conn:
            row = conn.execute(TABLE_AND_INDEX_BYTES, {"table": table}).fetchone()
        assert row is not None
        return {"table_bytes": int(row[0]), "index_bytes": int(row[1])}


def app_connection(bench: Bench, database: str) -> psycopg.Connection[Any]:
    return psycopg.connect(bench.dsn(database, APP_ROLE), autocommit=True)


def set_context(conn: psycopg.Connection[Any]) -> None:
    conn.execute("select memsub.set_context(%s, %s)", [TENANT, ORG])


# -- methods -----------------------------------------------------------------------------------------------


@dataclass
class Result:
    method: str
    packets: int
    seconds: float
    transactions: int
    stored: int
    marks: list[tuple[int, float]] = field(default_factory=list, repr=False)
    packets_per_second: float = 0.0
    ratio_to_copy: float = 0.0
    ratio_to_indexed_copy: float = 0.0
    first_tenth_per_second: float | None = None
    last_tenth_per_second: float | None = None
    note: str = ""

    def __post_init__(self) -> None:
        self.packets_per_second = self.packets / self.seconds if self.seconds > 0 else float("inf")
        # Rates over the first and the last tenth of the packets: a write path whose cost grows with the
        # table shows it here.
        if len(self.marks) >= 10:
            start = self.marks[0][1]
            head = next(m for m in self.marks[1:] if m[0] >= self.packets / 10)
            tail = next(m for m in self.marks if m[0] >= self.packets * 9 / 10)
            end = self.marks[-1]
            self.first_tenth_per_second = head[0] / (head[1] - start)
            self.last_tenth_per_second = (end[0] - tail[0]) / (end[1] - tail[1])
        self.marks = []


def chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


Marks = list[tuple[int, float]]


def single_writes(conn: psycopg.Connection[Any], envelopes: list[str], per_transaction: int,
                  marks: Marks) -> int:
    transactions = done = 0
    query = b"select * from memsub.write_packet(%s::jsonb)"
    marks.append((0, time.perf_counter()))
    for group in chunks(envelopes, per_transaction):
        with conn.transaction():
            set_context(conn)
            for envelope in group:
                conn.execute(query, [envelope], prepare=True)
        transactions += 1
        done += len(group)
        marks.append((done, time.perf_counter()))
    return transactions


def batched_writes(conn: psycopg.Connection[Any], envelopes: list[str], batch: int,
                   marks: Marks) -> tuple[int, int]:
    transactions = deduplicated = done = 0
    query = b"select deduplicated from memsub.write_packets(%s::jsonb)"
    marks.append((0, time.perf_counter()))
    for group in chunks(envelopes, batch):
        with conn.transaction():
            set_context(conn)
            rows = conn.execute(query, ["[" + ",".join(group) + "]"], prepare=True).fetchall()
        deduplicated += sum(1 for (flag,) in rows if flag)
        transactions += 1
        done += len(group)
        marks.append((done, time.perf_counter()))
    return transactions, deduplicated


def export_rows(bench: Bench, database: str) -> bytes:
    """The rows write_packets stored, in COPY text format (read as the superuser: setup, not measured)."""
    buffer = io.BytesIO()
    with bench.admin(database) as conn, conn.cursor() as cur:
        with cur.copy("copy (select * from memsub.packet_store order by \"timestamp\") to stdout") as copy:
            for data in copy:
                buffer.write(data)
    return buffer.getvalue()


def copy_rows(conn: psycopg.Connection[Any], data: bytes, table: str = "bare", block: int = 1 << 20) -> None:
    with conn.transaction(), conn.cursor() as cur, \
            cur.copy(sql.SQL("copy bench.{} from stdin").format(sql.Identifier(table))) as copy:
        view = memoryview(data)
        for start in range(0, len(view), block):
            copy.write(view[start:start + block])


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    outcome = action()
    return time.perf_counter() - started, outcome


# -- environment -------------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "ram_bytes": memory_bytes(),
            "load_average_1m": round(os.getloadavg()[0], 2), "os": f"{platform.system()} {platform.release()}",
            "python": platform.python_version()}


def server_settings(bench: Bench) -> dict[str, str]:
    with bench.admin() as conn:
        version = conn.execute("select current_setting('server_version')").fetchone()
        values = {"server_version": str(version[0]) if version else "?"}
        for name in SETTINGS:
            row = conn.execute("select current_setting(%s)", [name]).fetchone()
            values[name] = str(row[0]) if row else "?"
    return values


def human_bytes(value: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


# -- the run -----------------------------------------------------------------------------------------------


@dataclass
class Report:
    machine: dict[str, Any]
    server: dict[str, str]
    data: dict[str, Any]
    results: list[Result] = field(default_factory=list)
    sizes: dict[str, dict[str, int]] = field(default_factory=dict)


def run(bench: Bench, packets: int, batch: int, per_transaction: int, log: Callable[[str], None]) -> Report:
    dataset = make_dataset(packets)
    report = Report(machine(), server_settings(bench), {
        "packets": packets, "threads": dataset.threads, "with_lineage": dataset.with_lineage,
        "with_ttl": dataset.with_ttl, "envelope_json_bytes_total": dataset.json_bytes,
        "envelope_json_bytes_avg": round(dataset.json_bytes / max(1, packets)), "batch": batch,
        "per_transaction": per_transaction})
    envelopes = dataset.envelopes

    def measure(method: str, database: str, table: str,
                action: Callable[[psycopg.Connection[Any], Marks], Any], note: str = "") -> Any:
        log(f"  {method} ...")
        marks: Marks = []
        with app_connection(bench, database) as conn:
            seconds, outcome = timed(lambda: action(conn, marks))
        transactions = outcome[0] if isinstance(outcome, tuple) else int(outcome or 1)
        stored = bench.count(database, table)
        if stored != packets:
            raise RuntimeError(f"{method}: {stored} rows stored, expected {packets}")
        result = Result(method, packets, seconds, transactions, stored, marks, note=note)
        report.results.append(result)
        log(f"    {seconds:.2f} s, {result.packets_per_second:,.0f} packets/s")
        return outcome

    one = bench.clone("m_single")
    measure("write_packet, 1 per transaction", one, "memsub.packet_store",
            lambda conn, marks: single_writes(conn, envelopes, 1, marks))
    many = bench.clone("m_single_many")
    measure(f"write_packet, {per_transaction} per transaction", many, "memsub.packet_store",
            lambda conn, marks: single_writes(conn, envelopes, per_transaction, marks))
    batched = bench.clone("m_batched")
    measure(f"write_packets, {batch} per call", batched, "memsub.packet_store",
            lambda conn, marks: batched_writes(conn, envelopes, batch, marks))
    report.sizes["packet_store"] = bench.size(batched, "memsub.packet_store")
    with bench.admin() as conn:
        conn.execute("checkpoint")
    outcome = measure(f"write_packets, {batch} per call, all duplicates", batched, "memsub.packet_store",
                      lambda conn, marks: batched_writes(conn, envelopes, batch, marks),
                      note="retry of stored envelopes: every one deduplicated")
    if outcome[1] != packets:
        raise RuntimeError(f"retry: {outcome[1]} of {packets} envelopes deduplicated")

    data = export_rows(bench, batched)
    report.data["copy_text_bytes"] = len(data)
    bare = bench.clone("m_copy")
    measure("COPY into bare table", bare, "bench.bare", lambda conn, marks: copy_rows(conn, data),
            note="same rows, no indexes, triggers or policies")
    report.sizes["bare"] = bench.size(bare, "bench.bare")
    copy_rate = report.results[-1].packets_per_second
    indexed = bench.clone("m_copy_indexed")
    measure("COPY into same-indexed table", indexed, "bench.indexed",
            lambda conn, marks: copy_rows(conn, data, "indexed"),
            note="same rows, packet_store's indexes, no triggers or policies")
    indexed_rate = report.results[-1].packets_per_second
    for result in report.results:
        result.ratio_to_copy = result.packets_per_second / copy_rate
        result.ratio_to_indexed_copy = result.packets_per_second / indexed_rate
    return report


def render(report: Report) -> str:
    m, s, d = report.machine, report.server, report.data
    lines = [
        f"memsub ingest benchmark: {d['packets']:,} PacketEnvelopes, every method side by side in one run",
        "",
        f"machine   {m['cpu']}, {m['cores']} cores, {human_bytes(m['ram_bytes'])} RAM, "
        f"load {m['load_average_1m']} at start, {m['os']}",
        f"postgres  {s['server_version']} (embedded, fresh cluster in a temp dir); "
        + ", ".join(f"{k} {s[k]}" for k in SETTINGS),
        f"data      {d['packets']:,} envelopes in {d['threads']} threads, {d['with_lineage']:,} with 1-2 parents, "
        f"{d['with_ttl']:,} with ttl; {d['envelope_json_bytes_avg']} B of JSON each on average, "
        f"{human_bytes(d['envelope_json_bytes_total'])} in all",
        f"role      {APP_ROLE} (member of memsub_app): row-level security applies",
        "",
    ]
    headers = ["method", "packets/s", "vs COPY", "vs indexed COPY", "COPY is", "first 10%/s", "last 10%/s",
               "seconds", "transactions"]
    rows = [[r.method, f"{r.packets_per_second:,.0f}", f"{r.ratio_to_copy:.3f}", f"{r.ratio_to_indexed_copy:.3f}",
             f"{1 / r.ratio_to_copy:.1f}x faster" if r.ratio_to_copy < 1 else "-",
             f"{r.first_tenth_per_second:,.0f}" if r.first_tenth_per_second else "-",
             f"{r.last_tenth_per_second:,.0f}" if r.last_tenth_per_second else "-",
             f"{r.seconds:.2f}", f"{r.transactions:,}"] for r in report.results]
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    for n, row in enumerate([headers, *rows]):
        cells = [str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths,
                                                                                                  strict=True))]
        lines.append("  ".join(cells))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    store, bare = report.sizes["packet_store"], report.sizes["bare"]
    lines += [
        "",
        f"stored    packet_store {human_bytes(store['table_bytes'])} + {human_bytes(store['index_bytes'])} indexes; "
        f"bare copy {human_bytes(bare['table_bytes'])}, no indexes "
        f"(COPY stream {human_bytes(d['copy_text_bytes'])})",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--packets", type=int, default=10000, help="envelopes per method (default 10000)")
    parser.add_argument("--batch", type=int, default=500, help="envelopes per write_packets call (default 500)")
    parser.add_argument("--per-transaction", type=int, default=100,
                        help="write_packet calls per transaction in the 'many' method (default 100)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    if args.packets < 1 or args.batch < 1 or args.per_transaction < 1:
        parser.error("--packets, --batch and --per-transaction must be positive")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log("starting a private PostgreSQL")
    with private_cluster() as url:
        bench = Bench(url)
        bench.prepare_template()
        log(f"writing {args.packets:,} envelopes per method")
        report = run(bench, args.packets, args.batch, args.per_transaction, log)
    if args.json:
        results = [{k: v for k, v in asdict(r).items() if k != "marks"} for r in report.results]
        print(json.dumps({"machine": report.machine, "server": report.server, "data": report.data,
                          "sizes": report.sizes, "results": results}, indent=2))
    else:
        print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
