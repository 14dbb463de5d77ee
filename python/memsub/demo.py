"""A guided tour of memsub: two tenants' agent conversations written as PacketEnvelopes, then read back.

Run it with ``make demo`` or ``python -m memsub.demo [--dsn DSN] [--database NAME [--reuse]] [--keep]``. The
connection is resolved like every memsub command (``--dsn`` > ``MEMSUB_DSN`` > ``DATABASE_URL`` > libpq's
environment > the embedded cluster) and must be a role that may create databases and roles. The demo says which
server it uses, creates its own database (a name unique to the run, or ``--database``; an existing database is
refused, never dropped, unless ``--reuse`` runs the story in it), migrates it, and creates two login roles with
names and random passwords unique to the run. Everything the story shows then runs as those roles, under
row-level security, never as the superuser:

- ``memsubdemo_app_<run>``   member of ``memsub_app`` (the application);
- ``memsubdemo_admin_<run>`` member of ``memsub_tenant_admin`` (a tenant's administrator).

They are named outside the ``memsub_`` prefix, which belongs to memsub's own NOLOGIN group roles. At the end the
run drops its roles and, unless ``--keep``, its database; an embedded cluster it had to start is stopped again.
Nothing the run did not create is dropped.

Every packet is written with its text's content embedding in the same write (the envelope's memory.embeddings),
so the story can search the conversation by meaning (memsub.semantic_search) and by meaning and words
(memsub.hybrid_search). The embedder is MiniLM
(all-MiniLM-L6-v2, bundled by the ``embed`` extra) when it is installed, else the hashing embedder; the demo
says which. A recreated demo database is migrated with the embedder's dimension.
"""

from __future__ import annotations

import secrets
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import click
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memsub import embedded
from memsub.client import Substrate, TenantSession
from memsub.config import resolve_dsn
from memsub.connection import describe, masked, with_timeout
from memsub.embedding import (
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    describe_embedder,
    embed_envelopes,
    minilm_available,
)
from memsub.errors import ConnectionFailed, InvalidInput, MemsubError
from memsub.exit_codes import fail
from memsub.graph import GraphPath
from memsub.migrator import Migrator
from memsub.models import PacketEnvelopeIn, PacketLineage, PacketStoreRow, PacketWriteResult

DEMO_DATABASE = "memsub_demo"
APP_ROLE = "memsubdemo_app"
ADMIN_ROLE = "memsubdemo_admin"
DEMO_ROLES = {APP_ROLE: "memsub_app", ADMIN_ROLE: "memsub_tenant_admin"}

# Stable identities, so the same people and companies appear on every run (threads are new each run).
_NAMESPACE = uuid.UUID("5f0c1d1e-6d65-6d73-7562-64656d6f0000")


def _stable_id(name: str) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, name)


@dataclass(frozen=True)
class Tenant:
    name: str
    tenant_id: uuid.UUID
    org_id: uuid.UUID


@dataclass(frozen=True)
class Person:
    name: str
    tenant: Tenant
    user_id: uuid.UUID
    session_id: str


ACME = Tenant("Acme Plastics", _stable_id("tenant:acme-plastics"), _stable_id("org:acme-brokerage-desk"))
BOREALIS = Tenant("Borealis Freight", _stable_id("tenant:borealis-freight"),
                  _stable_id("org:borealis-dispatch"))
ALICE = Person("alice", ACME, _stable_id("user:alice"), "alice-web-1")
BOB = Person("bob", ACME, _stable_id("user:bob"), "bob-web-7")
CAROL = Person("carol", BOREALIS, _stable_id("user:carol"), "carol-mobile-3")


def short(value: uuid.UUID | str | None) -> str:
    """First 8 hex digits of a UUID: enough to tell the demo's packets apart."""
    return "-" if value is None else str(value)[:8]


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class Story:
    """Plain-text output: numbered sections, indented lines and aligned tables."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.sections = 0

    def title(self, text: str) -> None:
        self.out.write(f"{text}\n{'=' * len(text)}\n")

    def section(self, text: str) -> None:
        self.sections += 1
        heading = f"{self.sections}. {text}"
        self.out.write(f"\n{heading}\n{'-' * len(heading)}\n")

    def line(self, text: str = "") -> None:
        self.out.write(f"   {text}\n" if text else "\n")

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
        for n, row in enumerate(cells):
            self.line("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
            if n == 0:
                self.line("  ".join("-" * w for w in widths))


# -- database preparation (the only part that runs as the connecting, privileged role) -------------------


class DemoRefused(MemsubError):
    """The demo would have to change something it did not create in this run."""


@dataclass(repr=False)
class DemoResources:
    """What this run created, and so may remove: nothing else is ever dropped. Its repr masks the server's
    password."""

    server_dsn: str
    database: str
    created_database: bool = False
    roles: dict[str, str] = field(default_factory=dict)  # login role -> memsub group role
    started_cluster: Path | None = None

    def __repr__(self) -> str:
        return (f"DemoResources(server_dsn={masked(self.server_dsn)!r}, database={self.database!r}, "
                f"created_database={self.created_database!r}, roles={self.roles!r}, "
                f"started_cluster={self.started_cluster!r})")

    def cleanup(self, keep: bool) -> list[str]:
        """Drop the roles (always) and, unless ``keep``, the database and the cluster this run created."""
        done: list[str] = []
        maintenance = make_conninfo(self.server_dsn, dbname=_maintenance_db(self.server_dsn, self.database))
        with psycopg.connect(maintenance, autocommit=True) as conn:
            if self.created_database and not keep:
                conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(self.database)))
                done.append(f"dropped database {self.database}")
            for role in self.roles:
                conn.execute(sql.SQL("drop role if exists {}").format(sql.Identifier(role)))
                done.append(f"dropped role {role}")
        if self.started_cluster is not None:
            if keep:
                done.append(f"the embedded cluster in {self.started_cluster} keeps running; stop it with: "
                            f"memsub db stop --data-dir {self.started_cluster}")
            else:
                embedded.stop(self.started_cluster)
                done.append(f"stopped the embedded cluster this run started in {self.started_cluster}")
        return done


def _maintenance_db(dsn: str, database: str) -> str:
    named = conninfo_to_dict(dsn).get("dbname")
    return "postgres" if not named or named == database else str(named)


def prepare_database(resources: DemoResources, create: bool, vector_dimension: int | None = None) -> str:
    """Create the demo database (refusing one that exists) or reuse an existing one, and migrate it; returns its
    connection string. ``vector_dimension`` applies to a database created here only."""
    dsn, database = resources.server_dsn, resources.database
    target = make_conninfo(dsn, dbname=database)
    with psycopg.connect(make_conninfo(dsn, dbname=_maintenance_db(dsn, database)), autocommit=True) as conn:
        exists = conn.execute("select from pg_catalog.pg_database where datname = %s", [database]).fetchone()
        if create:
            if exists is not None:
                raise DemoRefused(
                    f"database {database} already exists and the demo never drops what it did not create in this "
                    "run: pass --reuse to run the story in it, or another --database")
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(database)))
            resources.created_database = True
        elif exists is None:
            raise DemoRefused(f"--reuse: database {database} does not exist")
    options = f"-c memsub.vector_dimension={vector_dimension}" if vector_dimension and create else None
    Migrator(make_conninfo(target, options=options) if options else target).migrate()
    return target


def create_demo_roles(resources: DemoResources, dsn: str) -> dict[str, str]:
    """Create this run's two login roles (names unique to the run, so no other run's or user's role is touched),
    each with a random password; returns their passwords by role. They are dropped when the run ends.

    A fresh password per run means no default password exists, and the roles work both with trust
    authentication (the embedded cluster) and with password authentication (a server given by DSN). Only its
    SCRAM-SHA-256 verifier is sent to the server.
    """
    suffix = secrets.token_hex(3)
    passwords: dict[str, str] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for base, member_of in DEMO_ROLES.items():
            role = f"{base}_{suffix}"
            password = secrets.token_urlsafe(24)
            # The server gets the SCRAM verifier, computed here as psql's \password does, never the password:
            # the statement's text may be logged (log_statement, or when it fails) or read in pg_stat_activity.
            verifier = conn.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256")
            conn.execute(sql.SQL("create role {} login nobypassrls password {}").format(
                sql.Identifier(role), sql.Literal(verifier.decode("ascii"))))
            resources.roles[role] = member_of
            conn.execute(sql.SQL("grant {} to {}").format(sql.Identifier(member_of), sql.Identifier(role)))
            for tenant in (ACME, BOREALIS):  # the tenants the demo's logins may act for, and no others
                conn.execute("select memsub.bind_login(%s, %s)", [role, tenant.tenant_id])
            passwords[role] = password
    return passwords


# -- the conversations ---------------------------------------------------------------------------------


@dataclass
class Written:
    """What the story wrote, by label, for the sections that read it back."""

    packets: dict[str, PacketWriteResult]
    threads: dict[str, uuid.UUID]
    tenants: dict[str, str]
    derivations: dict[str, str]
    scopes: dict[str, str] = field(default_factory=dict)
    envelopes: dict[str, PacketEnvelopeIn] = field(default_factory=dict)

    def record(self, label: str, person: Person, envelope: PacketEnvelopeIn,
               result: PacketWriteResult) -> None:
        self.packets[label] = result
        self.envelopes[label] = envelope
        self.tenants[label] = "A" if person.tenant is ACME else "B"
        self.scopes[label] = str(envelope.scope)
        if envelope.lineage and envelope.lineage.derivation_type:
            self.derivations[label] = envelope.lineage.derivation_type

    def label_of(self, packet_id: uuid.UUID) -> str:
        for label, result in self.packets.items():
            if result.packet_id == packet_id:
                return label
        return "?"


class Scene:
    """Writes envelopes for one person and remembers each result under a short label."""

    def __init__(self, substrate: Substrate, written: Written, person: Person, thread: str,
                 started: datetime, embedder: Embedder | None = None) -> None:
        self.substrate = substrate
        self.written = written
        self.person = person
        self.thread_id = written.threads.setdefault(thread, uuid.uuid4())
        self.started = started
        self.embedder = embedder

    @contextmanager
    def session(self) -> Iterator[TenantSession]:
        with person_context(self.substrate, self.person) as session:
            yield session

    def envelope(self, label: str, packet_type: str, speaker: str, text: str, *, seconds: int,
                 parents: Sequence[str] = (), derivation: str | None = None, tags: Sequence[str] = (),
                 scope: str = "shared", ttl: datetime | None = None, confidence: float | None = None,
                 **payload: Any) -> PacketEnvelopeIn:
        lineage = None
        if parents:
            lineage = PacketLineage.model_validate({
                "parent_ids": [self.written.packets[p].packet_id for p in parents],
                "derivation_type": derivation})
        fields: dict[str, Any] = {
            "packet_type": packet_type,
            "timestamp": self.started + timedelta(seconds=seconds),
            "payload": {"speaker": speaker, "text": text, **payload},
            "metadata": {"schema_version": "1.1.0", "agent": "plasticos_agent", "label": label},
            "thread_id": self.thread_id,
            "lineage": lineage,
            "tags": list(tags),
            "scope": scope,
            "ttl": ttl,
            "confidence": None if confidence is None else {"score": confidence},
        }
        # The text's content embedding travels in the envelope (memory.embeddings): the packet and its vector
        # are one write. A packet whose ttl has passed is never read, so it gets none (and could fan out none).
        if self.embedder is not None and (ttl is None or ttl > datetime.now(UTC)):
            embed_envelopes([fields], self.embedder)
        return PacketEnvelopeIn.model_validate(fields)

    def write(self, label: str, packet_type: str, speaker: str, text: str,
              **options: Any) -> PacketWriteResult:
        envelope = self.envelope(label, packet_type, speaker, text, **options)
        with self.session() as session:
            result = session.packets.write(envelope)
        self.written.record(label, self.person, envelope, result)
        return result


@contextmanager
def person_context(substrate: Substrate, person: Person,
                   roles: Sequence[str] = ()) -> Iterator[TenantSession]:
    with substrate.tenant(person.tenant.tenant_id, org_id=person.tenant.org_id, user_id=person.user_id,
                          roles=roles, session_id=person.session_id) as session:
        yield session


def write_acme(app: Substrate, written: Written, now: datetime, embedder: Embedder | None = None) -> None:
    """Alice asks the brokerage agent for HDPE suppliers; Bob later picks the thread up."""
    started = now - timedelta(hours=2)
    soon = now + timedelta(days=7)
    scene = Scene(app, written, ALICE, "acme-suppliers", started, embedder)
    scene.write("query", "event", "alice",
                "Find HDPE suppliers in California that can ship 20 t/month of recycled pellets.",
                seconds=0, tags=["hdpe", "supplier_search", "california"], action="user_query")
    scene.write("rules", "memory_write", "memory",
                "Alice's buying rules: ISO 14001 certified, at most $0.45/lb delivered.",
                seconds=2, tags=["preference"], scope="l-private")
    scene.write("plan", "reasoning_trace", "agent",
                "Plan: search the supplier directory, keep capacity >= 20 t, check certification and price.",
                seconds=4, parents=["query"], derivation="transform", tags=["plan"])
    scene.write("search", "event", "search_tool",
                "3 candidates: Pacific Polymers (Stockton), Golden State Resin (Fresno), BayCycle (Oakland).",
                seconds=9, parents=["plan"], derivation="transform", tags=["supplier_search"], ttl=soon,
                action="tool_result")
    scene.write("scratch", "event", "search_tool",
                "Raw directory page (41 kB of HTML), kept one hour for debugging.",
                seconds=10, parents=["plan"], derivation="transform", tags=["raw"],
                ttl=started + timedelta(hours=1), action="tool_output")
    for label, text, seconds in (
        ("pacific", "Pacific Polymers: rHDPE pellets, 35 t/month, $0.41/lb delivered, ISO 14001.", 12),
        ("golden", "Golden State Resin: rHDPE pellets, 18 t/month, $0.38/lb delivered, no ISO 14001.", 13),
        ("baycycle", "BayCycle: rHDPE pellets, 25 t/month, $0.47/lb delivered, ISO 14001.", 14),
    ):
        scene.write(label, "memory_write", "agent", text, seconds=seconds, parents=["search"],
                    derivation="split", tags=["hdpe", "supplier"])
    scene.write("shortlist", "insight", "agent",
                "Pacific Polymers and BayCycle meet capacity and certification; "
                "Golden State Resin is too small.",
                seconds=16, parents=["pacific", "golden", "baycycle"], derivation="merge",
                tags=["hdpe", "shortlist"], confidence=0.9)
    scene.write("recommendation", "insight", "agent",
                "Recommend Pacific Polymers: the only shortlisted supplier within Alice's $0.45/lb budget.",
                seconds=18, parents=["shortlist", "rules"], derivation="inference",
                tags=["hdpe", "recommendation"], scope="l-private", confidence=0.85)
    scene.write("reply", "event", "agent",
                "I recommend Pacific Polymers (Stockton), $0.41/lb; shall I request a 5 t trial load?",
                seconds=20, parents=["recommendation"], derivation="transform", scope="cursor",
                action="agent_response")

    bob = Scene(app, written, BOB, "acme-suppliers", started, embedder)
    bob.write("bob_question", "event", "bob", "Did we find an HDPE supplier for the Sacramento plant?",
              seconds=3600, tags=["hdpe"], action="user_query")
    bob.write("bob_draft", "memory_write", "agent",
              "Draft e-mail to Pacific Polymers asking for a 5 t trial.",
              seconds=3605, parents=["bob_question", "shortlist"], derivation="inference", scope="cursor")

    # Market ticks are working memory: each lives one hour. The first two have already expired.
    ticks = Scene(app, written, ALICE, "acme-price-watch", started, embedder)
    envelopes = [
        ticks.envelope(label, "event", "price_feed", text, seconds=seconds, tags=["hdpe", "market_tick"],
                       ttl=started + timedelta(seconds=seconds, hours=1), action="market_tick")
        for label, text, seconds in (
            ("tick1", "HDPE spot, US Gulf: $0.52/lb", 0),
            ("tick2", "HDPE spot, US Gulf: $0.53/lb", 1800),
            ("tick3", "HDPE spot, US Gulf: $0.51/lb", 7140),
        )]
    with ticks.session() as session:
        results = session.packets.write_packets(envelopes)
    for label, envelope, result in zip(("tick1", "tick2", "tick3"), envelopes, results, strict=True):
        written.record(label, ALICE, envelope, result)


def write_borealis(app: Substrate, written: Written, now: datetime, embedder: Embedder | None = None) -> None:
    """Carol asks Borealis' dispatch agent to route a load; written as one batch with in-batch lineage."""
    started = now - timedelta(minutes=90)
    scene = Scene(app, written, CAROL, "borealis-route", started, embedder)
    labels = ("route_ask", "road_report", "route_plan", "route_decision", "diesel")
    ids = {label: uuid.uuid4() for label in labels}

    def envelope(label: str, packet_type: str, speaker: str, text: str, **options: Any) -> PacketEnvelopeIn:
        made = scene.envelope(label, packet_type, speaker, text, **options)
        made.packet_id = ids[label]
        return made

    def lineage(parents: Sequence[str], derivation: str) -> PacketLineage:
        return PacketLineage.model_validate({"parent_ids": [ids[p] for p in parents],
                                             "derivation_type": derivation})

    batch = [
        envelope("route_ask", "event", "carol",
                 "Route 18 t of HDPE pellets from Stockton to Reno, arriving Friday.",
                 seconds=0, tags=["routing", "hdpe"], action="user_query"),
        envelope("road_report", "event", "road_conditions",
                 "Chain controls on I-80 over Donner Pass until Thursday.",
                 seconds=5, tags=["routing", "weather"], action="tool_result"),
        envelope("route_plan", "reasoning_trace", "agent",
                 "Compare I-80 with chains against US-50 via Echo Summit.", seconds=7, tags=["routing"]),
        envelope("route_decision", "insight", "agent",
                 "Book a flatbed with chains, depart Wednesday 06:00 via I-80.",
                 seconds=9, tags=["routing", "decision"], confidence=0.8),
        envelope("diesel", "event", "price_feed", "Diesel, Northern California: $4.89/gal", seconds=1,
                 tags=["market_tick"], ttl=started + timedelta(hours=1), action="market_tick"),
    ]
    batch[2].lineage = lineage(["route_ask", "road_report"], "merge")
    batch[3].lineage = lineage(["route_plan"], "inference")
    # Children are listed before their parents on purpose: write_packets orders the batch itself.
    order = [3, 2, 0, 1, 4]
    with scene.session() as session:
        results = session.packets.write_packets([batch[i] for i in order])
    for i, result in zip(order, results, strict=True):
        written.record(list(ids)[i], CAROL, batch[i], result)


# -- the story -------------------------------------------------------------------------------------------


def text_of(row: PacketStoreRow) -> str:
    payload = row.payload
    return str(payload.get("text", "")) if isinstance(payload, dict) else str(payload)


def replay(story: Story, written: Written, rows: Sequence[PacketStoreRow], started: datetime) -> None:
    table = []
    for n, row in enumerate(rows, 1):
        offset = int((row.timestamp - started).total_seconds())
        speaker = row.payload.get("speaker", "") if isinstance(row.payload, dict) else ""
        table.append([n, f"+{offset // 60:02d}:{offset % 60:02d}", written.label_of(row.packet_id),
                      row.packet_type, row.scope, speaker, ",".join(row.tags), clip(text_of(row), 56)])
    story.table(["#", "mm:ss", "label", "type", "scope", "by", "tags", "text"], table)


def refused(call: Callable[[], object], what: str) -> MemsubError:
    """Run a call the substrate must refuse and return its error; a call that succeeds is a defect."""
    try:
        call()
    except MemsubError as error:
        return error
    raise RuntimeError(f"memsub accepted {what}")


def search_section(story: Story, app: Substrate, admin: Substrate, written: Written, embedder: Embedder) -> None:
    story.section("Searching the conversation: semantic and hybrid retrieval")
    story.line(f"embedder: {describe_embedder(embedder)}")
    story.line("each packet was written with its text's content embedding (the envelope's memory.embeddings: "
               "one write)")

    question = "Which vendor should we buy recycled plastic from within budget?"
    with person_context(app, ALICE) as session:
        hits = session.search.semantic(embedder.embed([question])[0], k=5, record_access=True, query_text=question)
    story.line()
    story.line(f'alice, semantic_search: "{question}"')
    story.line()
    story.table(["#", "distance", "label", "scope", "text"],
                [[n, f"{h.distance:.3f}", written.label_of(h.packet_id), written.scopes[written.label_of(h.packet_id)],
                  clip(h.chunk_text or "", 60)] for n, h in enumerate(hits, 1)])

    words = "ISO 14001"
    with person_context(app, ALICE) as session:
        fused = session.search.hybrid(words, embedder.embed([words])[0], k=5)
    story.line()
    story.line(f'alice, hybrid_search: "{words}" (reciprocal rank fusion: 1/(60 + vector rank) '
               "+ 1/(60 + text rank))")
    story.line()
    story.table(["#", "score", "vector rank", "text rank", "label", "text"],
                [[n, f"{h.score:.5f}", h.vector_rank or "-", h.text_rank or "-", written.label_of(h.packet_id),
                  clip(h.chunk_text or "", 56)] for n, h in enumerate(fused, 1)])

    story.line()
    for name, person in (("bob", BOB), ("carol", CAROL)):
        with person_context(app, person) as session:
            seen = session.search.hybrid(words, embedder.embed([words])[0], k=20)
        labels = [written.label_of(h.packet_id) for h in seen]
        story.line(f"{name} runs the same hybrid search: {len(labels)} results "
                   f"({', '.join(labels) if labels else 'none'})")
    story.line("bob gets no l-private or cursor packet of alice's; carol gets only Borealis packets.")

    first = hits[0]
    with person_context(app, ALICE) as session:
        before = session.packets.get(first.packet_id)
        if first.access_id is not None:
            session.search.record_feedback(first.access_id, True, "answered the question")

    def alice_learns() -> None:
        with person_context(app, ALICE) as session:
            session.search.learn_importance()

    error = refused(alice_learns, "learning importance in an application context")
    # Learning changes importance across the whole tenant, so it is maintenance: a tenant_admin context runs it,
    # as `memsub maintain` does on its schedule (in a platform_admin context, tenant by tenant).
    with person_context(admin, BOB, ("tenant_admin",)) as session:
        run = session.search.learn_importance()
    with person_context(app, ALICE) as session:
        after = session.packets.get(first.packet_id)
    story.line()
    story.line(f"alice marks hit 1 ({written.label_of(first.packet_id)}) useful; her own learn_importance -> "
               f"SQLSTATE {error.sqlstate} (it changes the whole tenant: tenant maintenance)")
    story.line(f"acme admin   learn_importance() (what `memsub maintain` runs) counted {run.accesses_counted} "
               f"accesses and {run.feedback_learned} feedback:")
    story.line(f"importance of {written.label_of(first.packet_id)}: "
               f"{before.importance_score if before else float('nan'):.3f} -> "
               f"{after.importance_score if after else float('nan'):.3f}")


def run_story(app: Substrate, admin: Substrate, story: Story, embedder: Embedder | None = None) -> Written:
    now = datetime.now(UTC)
    written = Written({}, {}, {}, {})
    write_acme(app, written, now, embedder)
    write_borealis(app, written, now, embedder)
    packets = written.packets
    acme_thread = written.threads["acme-suppliers"]

    story.section("Writing two tenants' agent conversations as PacketEnvelopes")
    story.line(f"Acme Plastics     tenant {short(ACME.tenant_id)}  users alice, bob  "
               f"threads {short(acme_thread)} (suppliers), {short(written.threads['acme-price-watch'])} "
               "(price watch)")
    story.line(f"Borealis Freight  tenant {short(BOREALIS.tenant_id)}  user carol        "
               f"thread  {short(written.threads['borealis-route'])} (routing, one write_packets batch)")
    story.line()
    story.table(
        ["label", "packet", "tenant", "type", "derivation", "parents", "gen", "root", "new thread"],
        [[label, short(r.packet_id), written.tenants[label], r.packet_type,
          written.derivations.get(label, "-"), ",".join(written.label_of(p) for p in r.parent_ids) or "-",
          r.generation, written.label_of(r.root_packet_id), "yes" if "packet_threads" in r.written else ""]
         for label, r in packets.items()])
    story.line()
    story.line("The Borealis batch listed route_decision before its ancestors: "
               "write_packets stored the parents first.")

    story.section("Thread replay: alice's supplier thread, in write order")
    with person_context(app, ALICE) as session:
        alice_rows = session.packets.get_thread(acme_thread)
    started = alice_rows[0].timestamp
    replay(story, written, alice_rows, started)
    story.line()
    story.line(f"alice sees {len(alice_rows)} packets of thread {short(acme_thread)}.")

    story.section("Lineage of alice's recommendation (ancestors, breadth first)")
    recommendation = packets["recommendation"]
    with person_context(app, ALICE) as session:
        ancestors = session.packets.get_lineage(recommendation.packet_id)
    story.line(f"insight {short(recommendation.packet_id)} 'recommendation': generation "
               f"{recommendation.generation}, root {short(recommendation.root_packet_id)} "
               f"({written.label_of(recommendation.root_packet_id)})")
    story.line()
    story.table(["depth", "packet", "label", "type", "derivation", "gen", "parents"],
                [[a.depth, short(a.packet_id), written.label_of(a.packet_id), a.packet_type,
                  written.derivations.get(written.label_of(a.packet_id), "-"),
                  packets[written.label_of(a.packet_id)].generation,
                  ",".join(written.label_of(p) for p in a.parent_ids) or "-"] for a in ancestors])

    story.section("Deduplication: a retried envelope is one packet, a repeated turn is two")
    retry = written.envelopes["query"]
    with person_context(app, ALICE) as session:
        again = session.packets.write(retry)
        after = len(session.packets.get_thread(acme_thread))
    story.line(f"the client sends alice's first message again (packet_id {short(retry.packet_id)}, "
               f"{retry.timestamp:%H:%M:%S}) after a lost reply")
    story.line(f"deduplicated: {'yes' if again.deduplicated else 'no'}; "
               f"returned packet {short(again.packet_id)} ({written.label_of(again.packet_id)}), "
               f"content_hash {again.content_hash[:12]}…")
    story.line(f"thread {short(acme_thread)} still holds {after} packets for alice (was {len(alice_rows)}).")
    repeated = Scene(app, written, ALICE, "acme-suppliers", alice_rows[0].timestamp)
    for label, seconds in (("yes1", 22), ("yes2", 300)):
        repeated.write(label, "user_message", "alice", "yes", seconds=seconds, action="user_reply")
    with person_context(app, ALICE) as session:
        replies = [r for r in session.packets.get_thread(acme_thread) if text_of(r) == "yes"]
    story.line(f"alice answers \"yes\" to the trial load and \"yes\" again five minutes later: "
               f"packets {short(packets['yes1'].packet_id)} and {short(packets['yes2'].packet_id)}, "
               f"deduplicated: {'yes' if packets['yes2'].deduplicated else 'no'}")
    story.line(f"repeated turn kept: the thread replays {len(replies)} \"yes\" turns")

    story.section("Validation: bad envelopes are rejected whole, naming the field")
    cyclic = uuid.uuid4()
    bad_envelopes: list[tuple[str, dict[str, Any]]] = [
        ("confidence above 1", {"packet_type": "insight", "payload": {"text": "x"},
                                "confidence": {"score": 1.5}}),
        ("unknown derivation type", {"packet_type": "insight", "payload": {"text": "x"},
                                     "lineage": {"parent_ids": [str(packets["query"].packet_id)],
                                                 "derivation_type": "guess"}}),
        ("malformed thread_id", {"packet_type": "event", "payload": {"text": "x"}, "thread_id": "thread-42"}),
        ("missing packet_type", {"payload": {"text": "x"}}),
        ("ttl before timestamp", {"packet_type": "event", "payload": {"text": "x"},
                                  "timestamp": "2025-12-07T12:00:00Z", "ttl": "2025-12-07T11:00:00Z"}),
        ("itself as parent", {"packet_id": str(cyclic), "packet_type": "event", "payload": {"text": "x"},
                              "lineage": {"parent_ids": [str(cyclic)]}}),
    ]
    rejected = []
    for what, bad in bad_envelopes:

        def write_bad(envelope: dict[str, Any] = bad) -> None:
            with person_context(app, ALICE) as session:
                session.packets.write(envelope)

        error = refused(write_bad, f"an envelope with {what}")
        rejected.append([what, error.sqlstate, error.field, type(error).__name__, clip(str(error), 62)])
    story.table(["envelope with", "SQLSTATE", "field", "exception", "message"], rejected)
    with person_context(app, ALICE) as session:
        unchanged = len(session.packets.get_thread(acme_thread))
    story.line()
    story.line(f"thread {short(acme_thread)} after the rejections: {unchanged} packets (unchanged).")

    story.section("Tenant isolation: carol (Borealis) against Acme's packets")
    shortlist = packets["shortlist"]
    with person_context(app, CAROL) as session:
        seen = session.packets.get(shortlist.packet_id)
        thread_rows = session.packets.get_thread(acme_thread)
    reply = packets["reply"].packet_id

    def lineage_of_reply() -> None:
        with person_context(app, CAROL) as session:
            session.packets.get_lineage(reply)

    lineage_error = refused(lineage_of_reply, "a lineage walk from another tenant's packet")
    checks: list[list[object]] = [
        [f"get_packet({short(shortlist.packet_id)})", "alice's shortlist", "a row" if seen else "no row"],
        [f"get_thread({short(acme_thread)})", "alice's supplier thread", f"{len(thread_rows)} packets"],
        [f"get_lineage({short(reply)})", "ancestors of alice's reply",
         f"refused: {type(lineage_error).__name__}, SQLSTATE {lineage_error.sqlstate}, field {lineage_error.field}"],
    ]

    def reference_foreign_parent() -> None:
        with person_context(app, CAROL) as session:
            session.packets.write(PacketEnvelopeIn.model_validate({
                 "packet_type": "insight", "payload": {"text": "Borrowing Acme's shortlist."},
                 "lineage": {"parent_ids": [shortlist.packet_id], "derivation_type": "inference"}}))

    error = refused(reference_foreign_parent, "a parent packet from another tenant")
    checks.append([f"write_packet(parent {short(shortlist.packet_id)})", "an insight citing the shortlist",
                   f"refused: {type(error).__name__}, SQLSTATE {error.sqlstate}, field {error.field}"])
    with person_context(app, CAROL) as session:
        same_thread = session.packets.write(PacketEnvelopeIn.model_validate({
            "packet_type": "event", "payload": {"text": "Carol reuses a thread id by accident."},
            "thread_id": acme_thread}))
    with person_context(app, ALICE) as session:
        alice_after = len(session.packets.get_thread(acme_thread))
    checks.append([f"write_packet(thread {short(acme_thread)})", "a packet in alice's thread id",
                   f"stored as carol's own packet {short(same_thread.packet_id)}"])
    story.table(["carol calls", "aiming at", "result"], checks)
    story.line()
    story.line(f"the refusal: {error}")
    story.line(f"alice still sees {alice_after} packets in thread {short(acme_thread)}: "
               "thread ids are per tenant, so carol's packet is not among them.")

    story.section("Scopes: shared, l-private and cursor between alice and bob")
    probes = [(label, packets[label].packet_id) for label in
              ("shortlist", "rules", "recommendation", "reply", "bob_draft")]
    viewers: list[tuple[str, Person, Sequence[str], Substrate]] = [
        ("alice", ALICE, (), app), ("bob", BOB, (), app), ("acme admin", BOB, ("tenant_admin",), admin),
        ("carol", CAROL, (), app)]
    matrix = []
    for label, packet_id in probes:
        row: list[object] = [label, short(packet_id), _scope(alice_rows, packet_id, written, label)]
        for _name, person, roles, substrate in viewers:
            with person_context(substrate, person, roles) as session:
                row.append("sees" if session.packets.get(packet_id) else "-")
        matrix.append(row)
    story.table(["packet", "id", "scope", *[v[0] for v in viewers]], matrix)
    with person_context(app, BOB) as session:
        bob_rows = session.packets.get_thread(acme_thread)
    story.line()
    story.line(f"thread {short(acme_thread)}: alice sees {alice_after}, bob sees {len(bob_rows)} packets "
               "(alice's l-private and cursor packets are hidden from him).")

    def bob_builds_on_private() -> None:
        with person_context(app, BOB) as session:
            session.packets.write(PacketEnvelopeIn.model_validate({
                 "packet_type": "insight", "payload": {"text": "Following alice's recommendation."},
                 "thread_id": acme_thread,
                 "lineage": {"parent_ids": [packets["recommendation"].packet_id],
                              "derivation_type": "inference"}}))

    error = refused(bob_builds_on_private, "a parent that is another user's l-private packet")
    story.line(f"bob writes a child of alice's l-private recommendation -> SQLSTATE {error.sqlstate}, "
               f"field {error.field}")

    if embedder is not None:
        search_section(story, app, admin, written, embedder)

    story.section("Expiry: a packet whose ttl has passed is never read; purge_expired() keeps its lineage")
    watch = written.threads["acme-price-watch"]
    scratch = packets["scratch"].packet_id
    with person_context(app, ALICE) as session:
        before = len(session.packets.get_thread(watch))
        scratch_row = session.packets.get(scratch)
        in_thread = any(r.packet_id == scratch for r in session.packets.get_thread(acme_thread))
        plan_children = session.packets.get_lineage(packets["plan"].packet_id, "descendants", 1)
    story.line(f"scratch {short(scratch)} (the raw directory page, ttl passed an hour ago, not yet purged):")
    story.line(f"  get_packet -> {'the packet' if scratch_row else 'no row'}; "
               f"get_thread -> {'listed' if in_thread else 'not listed'}; searches and embeddings skip it too")
    story.line("  children of plan before purging: "
               + ", ".join(f"{written.label_of(c.packet_id)} ({c.state})" for c in plan_children))
    with person_context(admin, BOB, ("tenant_admin",)) as session:
        acme_purged = session.packets.purge_expired()
    with person_context(app, CAROL) as session:
        borealis_purged = session.packets.purge_expired()
    with person_context(app, ALICE) as session:
        watch_after = session.packets.get_thread(watch)
        supplier_after = len(session.packets.get_thread(acme_thread))
    story.line(f"acme admin   purge_expired() -> {_purge_report(acme_purged)}")
    story.line(f"carol        purge_expired() -> {_purge_report(borealis_purged)}")
    story.line(f"price watch thread {short(watch)}: {before} of 3 ticks readable before the purge (two had "
               f"expired), {len(watch_after)} after ({', '.join(text_of(r) for r in watch_after)})")
    story.line(f"supplier thread {short(acme_thread)}: {supplier_after} packets for alice "
               f"(the raw directory page had expired)")
    with person_context(app, ALICE) as session:
        plan_children = session.packets.get_lineage(packets["plan"].packet_id, "descendants", 1)
    story.line("children of plan after purging: "
               + ", ".join(f"{written.label_of(c.packet_id)} ({c.state})" for c in plan_children)
               + "; a purged packet leaves a tombstone (id, type, generation, thread, parents)")

    current_facts_section(story, app, now)
    return written


def _path_text(path: GraphPath) -> str:
    return path.path[0] + "".join(f" -{relation}-> {node}"
                                  for relation, node in zip(path.relationship_path, path.path[1:], strict=True))


def current_facts_section(story: Story, app: Substrate, now: datetime) -> None:
    """The knowledge graph answers with what holds now; history is read by asking for an earlier time."""
    story.section("Current facts: a superseded supplier is not returned")
    then = now - timedelta(days=30)
    with person_context(app, ALICE) as session:
        if not session.graph.edges_as_of(entity="Acme Plastics", relationship_type="buys_from"):
            session.graph.temporal_edge_add("Acme Plastics", "buys_from", "Pacific Polymers",
                                            valid_from=now - timedelta(days=60), confidence=0.9)
            session.graph.temporal_edge_add("Pacific Polymers", "located_in", "Stockton",
                                            valid_from=now - timedelta(days=60))
            session.graph.supersede_relationship("Acme Plastics", "buys_from", "Golden Resin",
                                                 valid_from=now - timedelta(days=1), confidence=0.8)
    story.line("alice records: Acme Plastics buys_from Pacific Polymers (60 days ago), Pacific Polymers "
               "located_in Stockton;")
    story.line("since yesterday Acme Plastics buys_from Golden Resin (supersede_relationship closes the old edge)")
    with person_context(app, ALICE) as session:
        current = session.graph.traverse("Acme Plastics", max_depth=2)
        earlier = session.graph.traverse("Acme Plastics", max_depth=2, as_of=then)
        around = [i.other_entity for i in session.graph.entity_neighbourhood("acme plastics")
                  if i.kind == "relationship"]
    story.line()
    story.line(f"traverse_graph('Acme Plastics') now: {'; '.join(_path_text(p) for p in current) or 'nothing'}")
    story.line(f"entity_neighbourhood('acme plastics') now: {', '.join(o or '-' for o in around) or 'nothing'}")
    story.line(f"traverse_graph as of 30 days ago: {'; '.join(_path_text(p) for p in earlier) or 'nothing'}")


def _scope(rows: Sequence[PacketStoreRow], packet_id: uuid.UUID, written: Written, label: str) -> str:
    for row in rows:
        if row.packet_id == packet_id:
            return row.scope
    return "cursor" if label == "bob_draft" else "?"


def _purge_report(purged: dict[uuid.UUID, int]) -> str:
    names = {ACME.tenant_id: "Acme Plastics", BOREALIS.tenant_id: "Borealis Freight"}
    if not purged:
        return "nothing expired"
    return ", ".join(f"{names.get(t, short(t))}: {n} expired packet(s) removed" for t, n in purged.items())


def choose_embedder(dimension: int) -> tuple[Embedder, str]:
    """MiniLM when the embed extra is installed and the database holds 384-d vectors, else hashing; and why."""
    if not minilm_available():
        return HashingEmbedder(dimension), "the embed extra is not installed (pip install 'memsub[embed]')"
    if dimension != MiniLMEmbedder().dimension:
        return HashingEmbedder(dimension), f"this demo database stores {dimension}-d vectors, MiniLM makes 384-d"
    return MiniLMEmbedder(), "the embed extra is installed"


def _server(dsn: str | None) -> tuple[str, str, Path | None]:
    """The privileged connection string, where it came from, and the embedded data directory when this run had
    to start the embedded cluster (so it stops it again)."""
    resolved = resolve_dsn(dsn, start_embedded=False) if dsn else None
    if resolved is not None:
        return resolved.dsn, resolved.source, None
    try:
        resolved = resolve_dsn(None, start_embedded=False)
        return resolved.dsn, resolved.source, None
    except ConnectionFailed:
        directory = embedded.default_data_dir()
        url = embedded.start(directory)
        return with_timeout(url), f"embedded cluster in {directory}, started by this run", directory


def main(dsn: str | None = None, database: str | None = None, *, recreate: bool = True, keep: bool = False,
         out: TextIO | None = None, embedder: Embedder | None = None) -> int:
    """Run the demo; ``dsn`` is a privileged connection (default: resolved like every memsub command).

    ``database``: None creates a database with a name unique to this run; a name is created (``recreate``, the
    default; refused when it exists) or reused (``recreate=False``; never dropped). The run's login roles are
    always dropped at the end; the database and an embedded cluster it started are removed too unless ``keep``.
    Nothing this run did not create is ever dropped.

    ``embedder`` embeds the conversation (default: MiniLM when installed, else hashing; a created database is
    migrated with its dimension, an existing one must match it)."""
    out = out or sys.stdout
    story = Story(out)
    server_dsn, source, started = _server(dsn)
    resources = DemoResources(server_dsn, database or f"{DEMO_DATABASE}_{secrets.token_hex(4)}",
                              started_cluster=started)
    story.line(f"memsub demo: server {describe(server_dsn)} ({source})")
    try:
        _run(story, resources, recreate, embedder, source)
    finally:
        for line in resources.cleanup(keep):
            story.line(f"cleanup: {line}")
        if keep and resources.created_database:
            story.line(f"kept database {resources.database}; drop it with: "
                       f"psql -c 'drop database {resources.database}' (on the server above)")
    return 0


def _run(story: Story, resources: DemoResources, create: bool, embedder: Embedder | None, source: str) -> None:
    wanted = embedder.dimension if embedder else (384 if minilm_available() else None)
    target = prepare_database(resources, create, wanted)
    passwords = create_demo_roles(resources, target)
    app_role, admin_role = list(passwords)
    with psycopg.connect(target) as conn:
        version_row = conn.execute("select current_setting('server_version') as v").fetchone()
        schema_row = conn.execute(
            "select version from memsub.schema_history order by version_order desc limit 1").fetchone()
        dimension_row = conn.execute("select memsub.vector_dimension()").fetchone()
    dimension = int(dimension_row[0]) if dimension_row else 0
    if embedder is None:
        embedder, why = choose_embedder(dimension)
    elif embedder.dimension != dimension:
        raise ValueError(f"the embedder makes {embedder.dimension}-d vectors; {resources.database} stores "
                         f"{dimension}-d")
    else:
        why = "chosen by the caller"
    story.title("memsub demo: memory for AI agents, inside PostgreSQL")
    story.line(f"server    PostgreSQL {version_row[0] if version_row else '?'} ({source})")
    schema = schema_row[0] if schema_row else "?"
    story.line(f"database  {resources.database} ({'created by this run' if create else 'reused'}), schema {schema}")
    story.line(f"roles     {app_role} (member of memsub_app), {admin_role} (member of memsub_tenant_admin), "
               "created for this run")
    story.line(f"embedder  {describe_embedder(embedder)}: {why}")
    story.line("every step below runs as these roles, under row-level security")
    with Substrate(make_conninfo(target, user=app_role, password=passwords[app_role])) as app, \
            Substrate(make_conninfo(target, user=admin_role, password=passwords[admin_role])) as admin:
        run_story(app, admin, story, embedder)
    story.line()
    story.line("done.")


@click.command()
@click.option("--dsn", help="Privileged connection string (default: MEMSUB_DSN, DATABASE_URL, libpq's PG* "
                            "environment, then the embedded cluster).")
@click.option("--database", default=None,
              help="Demo database name (default: a new name per run). Created, and refused if it exists.")
@click.option("--reuse", is_flag=True, help="Run in the existing --database (never dropped).")
@click.option("--keep", is_flag=True, help="Keep the database (and an embedded cluster) this run created.")
def cli(dsn: str | None, database: str | None, reuse: bool, keep: bool) -> None:
    """Write two tenants' agent conversations into memsub and show what the substrate holds.

    The run creates its own database and two login roles and removes them at the end (--keep keeps the
    database); it never drops anything it did not create. Without a configured server it starts the embedded
    cluster and stops it again."""
    if reuse and not database:
        fail(InvalidInput("--reuse needs --database", field="database"))
    try:
        sys.exit(main(dsn, database, recreate=not reuse, keep=keep))
    except (MemsubError, psycopg.Error) as error:
        fail(error)


if __name__ == "__main__":
    cli()
