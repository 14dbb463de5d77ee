"""Maintenance under traffic: what do applications see while ``memsub maintain`` runs every task, again and again?

A private embedded server (or ``MEMSUB_BENCH_DSN``) gets a freshly migrated 384-d database. ``--apps``
application threads, each an ordinary login of memsub_app acting for one of ``--tenants`` tenants (two or more
threads share a tenant, so their writes meet), make a random mix of calls, each in a short transaction of its
own: packets with a thread and a content vector, packets that expire a second after they are written, thread
reads and cursor replays, semantic and hybrid searches, memory writes of a few shared keys and reads,
tiered memories, session events, graph entity and relationship upserts, and document ingests. Meanwhile one
maintenance thread runs each task of ``memsub maintain`` alone (``run_round(dsn, [task])``, so each has its own
time window), then ``CALL memsub.refresh_memory_views()`` and ``memsub vector-index rebuild`` of the content
index (REINDEX CONCURRENTLY), with ``--gap`` seconds of quiet between two of them, for ``--seconds``.

Reported: every application error by type (ConflictError is the documented, retryable one; anything else is a
finding), the application calls' latency while each maintenance task ran (count, p50, p99, max) against the
calls that overlapped no maintenance at all, each task's runs and failures, and the invariants afterwards:
``memsub verify`` clean, no invalid index left by a concurrent rebuild, every thread replayed completely by
cursor and in order, no expired packet served, memory versions contiguous per key, and per-tenant counts equal
to what the applications were told they wrote.

    python bench/maintain_under_traffic.py [--apps 6] [--tenants 3] [--seconds 60] [--gap 0.3] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from memsub.client import Substrate, TenantSession
from memsub.errors import ConflictError, NotFound
from memsub.maintain import TASKS, run_round
from memsub.migrator import Migrator
from memsub.models import PacketEnvelopeIn
from memsub.vector_index import rebuild_index

WORDS = [f"w{i:03d}" for i in range(200)]
KEYS = [f"k{i}" for i in range(4)]  # few keys, shared by a tenant's threads: their writes meet
EXTRA_STEPS = ("refresh_memory_views()", "vector_index_rebuild")


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass
class Ledger:
    """What the applications were told they wrote, per tenant, and what they saw."""

    threads: dict[UUID, list[UUID]] = field(default_factory=lambda: defaultdict(list))  # thread -> packets, in order
    thread_tenant: dict[UUID, UUID] = field(default_factory=dict)
    expiring: dict[UUID, list[UUID]] = field(default_factory=lambda: defaultdict(list))  # tenant -> packet ids
    packets: Counter[UUID] = field(default_factory=Counter)  # tenant -> lasting packets written
    sessions: dict[tuple[UUID, UUID], dict[str, int]] = field(
        default_factory=lambda: defaultdict(dict))  # (tenant, user) -> session -> events appended
    calls: list[tuple[str, float, float]] = field(default_factory=list)  # (call, started, ended)
    conflicts: Counter[str] = field(default_factory=Counter)  # call and SQLSTATE -> how many
    conflict_samples: list[str] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)  # anything but ConflictError: findings
    wrong: list[str] = field(default_factory=list)  # a call that answered wrongly
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Window:
    step: str
    started: float
    ended: float
    status: str
    error: str | None


def _vector(rng: random.Random, dimension: int) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(dimension)]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=10))


class App:
    """One application thread: a login of memsub_app acting for one tenant, a call at a time."""

    def __init__(self, dsn: str, tenant: UUID, ledger: Ledger, seed: int, dimension: int) -> None:
        self.dsn, self.tenant, self.ledger, self.dimension = dsn, tenant, ledger, dimension
        self.rng = random.Random(seed)
        self.index = seed
        self.user = uuid.UUID(int=tenant.int + 7)  # every thread of a tenant acts for one user: their writes meet
        self.own_threads = [uuid.uuid4() for _ in range(2)]
        for thread in self.own_threads:
            ledger.thread_tenant[thread] = tenant
        self.session_ids: list[str] = []
        self.calls: dict[str, Callable[[TenantSession], None]] = {
            "write_packet": self.write_packet, "write_expiring": self.write_expiring,
            "get_thread": self.get_thread, "semantic_search": self.semantic_search,
            "hybrid_search": self.hybrid_search, "memory_write": self.memory_write, "memory_get": self.memory_get,
            "memory_remember": self.memory_remember, "memory_touch": self.memory_touch,
            "session_event": self.session_event, "search_feedback": self.search_feedback, "block": self.block,
            "graph_upsert": self.graph_upsert, "document_ingest": self.document_ingest,
        }
        self.weights = [6, 2, 3, 3, 2, 4, 3, 2, 2, 3, 2, 1, 2, 1]
        self.substrate: Substrate | None = None
        self.remembered: set[str] = set()

    def write_packet(self, session: TenantSession) -> None:
        thread = self.rng.choice(self.own_threads)
        text = _text(self.rng)
        envelope = PacketEnvelopeIn(packet_type="soak", thread_id=thread, payload={"text": text},
                                    memory={"embeddings": [{"embedding_type": "content",
                                                            "vector": _vector(self.rng, self.dimension),
                                                            "chunk_text": text}]})
        written = session.packets.write(envelope)
        with self.ledger.lock:
            self.ledger.threads[thread].append(written.packet_id)
            self.ledger.packets[self.tenant] += 1

    def write_expiring(self, session: TenantSession) -> None:
        now = datetime.now(UTC)
        envelope = PacketEnvelopeIn(packet_type="note", timestamp=now, ttl=now + timedelta(seconds=1),
                                    payload={"text": _text(self.rng)})
        written = session.packets.write(envelope)
        with self.ledger.lock:
            self.ledger.expiring[self.tenant].append(written.packet_id)

    def get_thread(self, session: TenantSession) -> None:
        thread = self.rng.choice(self.own_threads)
        with self.ledger.lock:
            known = list(self.ledger.threads[thread])
        read = [row.packet_id for row in session.packets.get_thread(thread, with_vectors=False)]
        if read[:len(known)] != known:  # this thread is the only writer of its threads
            self.wrong(f"get_thread {thread}: {len(read)} rows, {len(known)} written, order or content differs")

    def semantic_search(self, session: TenantSession) -> None:
        session.search.semantic(_vector(self.rng, self.dimension), k=5)

    def hybrid_search(self, session: TenantSession) -> None:
        session.search.hybrid(" ".join(self.rng.choices(WORDS, k=2)), _vector(self.rng, self.dimension), k=5)

    def memory_write(self, session: TenantSession) -> None:
        key, namespace = self.rng.choice(KEYS), f"user:{self.user}:soak"
        read = session.memory.get(namespace, key)  # read, then write the next version: optimistic, may conflict
        entry = session.memory.write(namespace, key, {"by": str(self.user), "n": self.rng.randrange(1000)},
                                     expected_version=read.version if read else None)
        if entry.version < 1:
            self.wrong(f"memory_write {key}: version {entry.version}")

    def memory_get(self, session: TenantSession) -> None:
        session.memory.get(f"user:{self.user}:soak", self.rng.choice(KEYS))

    def memory_remember(self, session: TenantSession) -> None:
        namespace, key = f"user:{self.user}:t{self.index}", f"fact{self.rng.randrange(20)}"
        read = session.memory.get(namespace, key)  # this thread alone writes its user's facts
        session.memory.remember(namespace, key, {"text": _text(self.rng)}, tier="STM",
                                importance=self.rng.uniform(0.1, 0.9), expected_version=read.version if read else None)
        self.remembered.add(key)

    def search_feedback(self, session: TenantSession) -> None:
        hits = session.search.semantic(_vector(self.rng, self.dimension), k=3, record_access=True)
        if hits and hits[0].access_id is not None:
            session.search.record_feedback(hits[0].access_id, was_useful=self.rng.random() < 0.5)

    def block(self, session: TenantSession) -> None:
        """Several calls in one transaction held open a moment (an agent's turn): an access recorded, a touch."""
        assert self.substrate is not None
        with self.substrate.tenant(self.tenant, user_id=self.user) as block:
            block.search.semantic(_vector(self.rng, self.dimension), k=3, record_access=True)
            if self.remembered:  # a key this thread remembered: the touch finds it
                block.memory.touch(f"user:{self.user}:t{self.index}", self.rng.choice(sorted(self.remembered)))
            time.sleep(0.2)

    def memory_touch(self, session: TenantSession) -> None:
        try:  # an access of one of this thread's facts: what memory_maintenance promotes by
            session.memory.touch(f"user:{self.user}:t{self.index}", f"fact{self.rng.randrange(20)}")
        except NotFound:
            pass  # not remembered yet

    def session_event(self, session: TenantSession) -> None:
        if not self.session_ids or self.rng.random() < 0.1:
            created = session.sessions.create(app_name="soak")
            self.session_ids.append(created.id)
            with self.ledger.lock:
                self.ledger.sessions[self.tenant, self.user][created.id] = 0
        sid = self.rng.choice(self.session_ids)
        session.sessions.append_event(sid, {"author": "user", "text": _text(self.rng)})
        with self.ledger.lock:
            self.ledger.sessions[self.tenant, self.user][sid] += 1

    def graph_upsert(self, session: TenantSession) -> None:
        a, b = (f"entity {self.rng.randrange(15)}" for _ in range(2))
        session.graph.upsert_entity(a, "Concept")
        session.graph.upsert_relationship(a, "RELATES_TO", b, confidence=0.6)

    def document_ingest(self, session: TenantSession) -> None:
        text = "\n\n".join(_text(self.rng) for _ in range(5))
        session.documents.ingest(f"docs/{self.rng.randrange(5)}.md", text,
                                 file_hash=hashlib.sha256(text.encode()).hexdigest(), mime="md")

    def wrong(self, what: str) -> None:
        with self.ledger.lock:
            self.ledger.wrong.append(what)

    def run(self, until: threading.Event) -> None:
        names = list(self.calls)
        with Substrate(self.dsn, min_size=1, max_size=2) as substrate:
            self.substrate = substrate
            with substrate.tenant(self.tenant, user_id=self.user, per_call=True) as session:
                while not until.is_set():
                    name = self.rng.choices(names, self.weights)[0]
                    started = time.monotonic()
                    try:
                        self.calls[name](session)
                    except ConflictError as error:
                        with self.ledger.lock:
                            self.ledger.conflicts[f"{name}: {getattr(error, 'sqlstate', None)}"] += 1
                            if len(self.ledger.conflict_samples) < 10:
                                self.ledger.conflict_samples.append(f"{name}: {error}")
                    except Exception as error:  # every other error is a finding, reported
                        with self.ledger.lock:
                            self.ledger.errors[f"{name}: {type(error).__name__}: {error}"] += 1
                    ended = time.monotonic()
                    with self.ledger.lock:
                        self.ledger.calls.append((name, started, ended))


def maintain_loop(owner_dsn: str, platform_dsn: str, until: threading.Event, gap: float,
                  windows: list[Window], steps: tuple[str, ...] = TASKS + EXTRA_STEPS) -> None:
    """Each maintenance step alone, one after another, ``gap`` seconds apart, until told to stop."""
    while not until.is_set():
        for step in steps:
            if until.is_set():
                return
            started = time.monotonic()
            status, error = "ok", None
            try:
                if step == "refresh_memory_views()":
                    with psycopg.connect(platform_dsn, autocommit=True) as conn:
                        conn.execute("call memsub.refresh_memory_views(null)")
                elif step == "vector_index_rebuild":
                    with psycopg.connect(owner_dsn, autocommit=True) as conn:
                        rebuild_index(conn, "content", 16, 64)
                else:
                    task = run_round(platform_dsn, [step]).tasks[0]
                    status, error = task.status, task.error
            except Exception as failure:  # reported as the step's failure
                status, error = "failed", f"{type(failure).__name__}: {failure}"
            windows.append(Window(step, started, time.monotonic(), status, error))
            until.wait(gap)


def platform_login(owner_dsn: str, role: str = "memsub_bench_platform_admin") -> str:
    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        if not conn.execute("select 1 from pg_roles where rolname = %s", [role]).fetchone():
            conn.execute(sql.SQL("create role {} login").format(sql.Identifier(role)))
        conn.execute(sql.SQL("grant memsub_platform_admin to {}").format(sql.Identifier(role)))
    return make_conninfo(owner_dsn, user=role)


def soak(owner_dsn: str, app_dsn: str, platform_dsn: str, *, apps: int, tenants: int, seconds: float,
         gap: float, seed: int = 1, steps: tuple[str, ...] = TASKS + EXTRA_STEPS) -> dict[str, Any]:
    """Run the applications and maintenance for ``seconds``, then check the invariants; the report."""
    ledger, windows = Ledger(), list[Window]()
    tenant_ids = [uuid.UUID(int=seed * 1000 + i + 1) for i in range(tenants)]
    with Substrate(app_dsn, min_size=1, max_size=1) as substrate:
        with substrate.tenant(tenant_ids[0]) as session:
            dimension = session.vector_dimension()
    workers = [App(app_dsn, tenant_ids[i % tenants], ledger, seed * 100 + i, dimension) for i in range(apps)]
    until, stop_maintenance = threading.Event(), threading.Event()
    threads = [threading.Thread(target=w.run, args=(until,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    time.sleep(min(2.0, seconds / 5))  # some data before the first task
    maintainer = threading.Thread(target=maintain_loop, args=(owner_dsn, platform_dsn, stop_maintenance, gap,
                                                              windows, steps), daemon=True)
    started = time.monotonic()
    maintainer.start()
    stop_maintenance.wait(seconds)
    stop_maintenance.set()
    maintainer.join(120)
    until.set()
    for thread in threads:
        thread.join(60)
    hung = [f"app {i}" for i, thread in enumerate(threads) if thread.is_alive()]
    hung += ["maintenance"] if maintainer.is_alive() else []
    elapsed = time.monotonic() - started
    time.sleep(1.1)  # every expiring packet has expired
    report: dict[str, Any] = {
        "apps": apps, "tenants": tenants, "seconds": round(elapsed, 1), "calls": len(ledger.calls),
        "hung": hung, "conflicts": dict(ledger.conflicts), "conflict_samples": ledger.conflict_samples,
        "errors": dict(ledger.errors.most_common(30)),
        "error_count": sum(ledger.errors.values()), "wrong": ledger.wrong[:50],
        "stalls": stalls(ledger.calls, windows), "maintenance": maintenance_figures(windows),
        "invariants": invariants(owner_dsn, app_dsn, ledger, tenant_ids),
    }
    return report


def stalls(calls: list[tuple[str, float, float]], windows: list[Window]) -> dict[str, dict[str, float]]:
    """Application call latency (ms) per maintenance step, for the calls that overlapped one of its runs, and
    for the calls that overlapped none (``none``); blocks, which sleep on purpose, are left out."""
    by_step: dict[str, list[float]] = defaultdict(list)
    for name, started, ended in calls:
        if name == "block":
            continue  # holds its transaction open on purpose: not a call's latency
        overlapping = {w.step for w in windows if w.started < ended and started < w.ended}
        for step in overlapping or {"none"}:
            by_step[step].append((ended - started) * 1000)
    return {step: {"calls": len(v), "p50_ms": round(_percentile(v, 0.5), 1),
                   "p99_ms": round(_percentile(v, 0.99), 1), "max_ms": round(max(v), 1)}
            for step, v in sorted(by_step.items())}


def maintenance_figures(windows: list[Window]) -> dict[str, dict[str, Any]]:
    figures: dict[str, dict[str, Any]] = {}
    for w in windows:
        entry = figures.setdefault(w.step, {"runs": 0, "not_ok": 0, "max_s": 0.0, "errors": []})
        entry["runs"] += 1
        entry["max_s"] = round(max(entry["max_s"], w.ended - w.started), 3)
        if w.status != "ok":
            entry["not_ok"] += 1
            if len(entry["errors"]) < 3:
                entry["errors"].append(f"{w.status}: {w.error}")
    return figures


def invariants(owner_dsn: str, app_dsn: str, ledger: Ledger, tenant_ids: list[UUID]) -> list[str]:
    """What must hold after the soak; each problem found, as a line (empty: all hold)."""
    problems = [f"verify: {p}" for p in Migrator(owner_dsn).verify()]
    with psycopg.connect(owner_dsn) as conn:
        invalid = conn.execute("select indexrelid::regclass::text from pg_index i join pg_class c on "
                               "c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace "
                               "where n.nspname = 'memsub' and not i.indisvalid").fetchall()
        problems += [f"invalid index left behind: {row[0]}" for row in invalid]
    with Substrate(app_dsn, min_size=1, max_size=1) as substrate:
        for tenant in tenant_ids:
            with substrate.tenant(tenant, per_call=True) as session:
                for thread, written in ledger.threads.items():
                    if ledger.thread_tenant[thread] != tenant:
                        continue
                    replayed = [row.packet_id for row in session.packets.replay(thread, page_size=7)]
                    if replayed != written:
                        problems.append(f"thread {thread}: replay gives {len(replayed)} packets, "
                                        f"{len(written)} written (or another order)")
                served = [p for p in ledger.expiring[tenant] if session.packets.get(p) is not None]
                if served:
                    problems.append(f"tenant {tenant}: {len(served)} expired packet(s) still served")
                lasting = session.fetch("select count(*)::int as n from memsub.packet_store where packet_type = 'soak'")
                if lasting[0]["n"] != ledger.packets[tenant]:
                    problems.append(f"tenant {tenant}: {lasting[0]['n']} lasting packets stored, "
                                    f"{ledger.packets[tenant]} written")
                gaps = session.fetch(
                    "select namespace, key, count(*)::int as n, max(version) as top, count(distinct version)::int "
                    "as d from memsub.memory_entries group by namespace, key "
                    "having count(*) <> max(version) or count(distinct version) <> count(*)")
                problems += [f"tenant {tenant}: memory {g['namespace']}/{g['key']}: {g['n']} versions up to "
                             f"{g['top']}" for g in gaps]
        for (tenant, user), appended in ledger.sessions.items():
            with substrate.tenant(tenant, user_id=user, per_call=True) as session:
                for sid, events in appended.items():
                    stored = len(session.sessions.get_events(sid))
                    if stored != events:
                        problems.append(f"tenant {tenant}: session {sid}: {stored} events, {events} appended")
    return problems


def main() -> None:
    from _database import bench_database, environment, environment_line

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=6)
    parser.add_argument("--tenants", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--gap", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with bench_database(384) as (owner_dsn, app_dsn):
        load_before = os.getloadavg()
        report = soak(owner_dsn, app_dsn, platform_login(owner_dsn), apps=args.apps, tenants=args.tenants,
                      seconds=args.seconds, gap=args.gap, seed=args.seed)
        env = environment(owner_dsn)
        report["load_average"] = {"before": [round(x, 2) for x in load_before],
                                  "after": [round(x, 2) for x in os.getloadavg()]}
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return
    print(environment_line(env))
    print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
