"""What one call reads as its tenant grows, and beside another tenant's rows: the writes and reads of every memory
area and adapter, before the tables' first ANALYZE and after it; one run, one server.

Usage: python bench/read_growth.py [--small 100] [--large 1000] [--calls 3] [--only temporal,memory] [--json]

For each memory area, one `memsub_app` login (row-level security applies) grows one tenant's rows of the area
through the Python client, one call per transaction on one pooled connection (as an application does), to
``--small`` rows, and measures each of the area's calls. Then another tenant of the same organization writes
``--large`` rows of the area, and the calls are measured again: what they read of the other tenant's rows shows
there. Then the first tenant's rows grow to ``--large``, and the calls are measured a third time. A measured call
runs ``--calls`` times in a transaction of its own, after six unmeasured runs of it: from the sixth run
PostgreSQL may keep one plan for every value of a statement inside a function (a generic plan), and that plan
is the one a long-lived connection uses. What it reads is the sum over every memsub table and index of the
transaction's tuples fetched and returned and blocks fetched (``pg_stat_get_xact_*``): a count of the work, not
a time, so it does not follow the load of the machine.

Two databases on one server, migrated the same way:

- ``before ANALYZE``: autovacuum is off for memsub's tables, so the planner has only what the installation gives
  it (``sql/980_planner_statistics.sql``) and each table's size: a new installation until autovacuum first
  analyzes a table, a minute or more after its first rows (and any installation whose autovacuum is off);
- ``analyzed``: ANALYZE after each growth, as autovacuum does once enough rows changed.

A call whose reads grow by more than 50 and by at least one for every four rows added, with its own tenant's
rows or with the other's, is marked and named at the end of the report. Some calls read every row of their kind
in the tenant by design (a snapshot of the world model, a scored retrieval of every reflection, a thread's
checkpoints listed across its namespaces): the report says so.
About two minutes at the defaults on two cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from _database import APP_ROLE, bench_database, environment, environment_line
from memsub import documents, events, graph, memory, packets, reflection, search, sessions, world_model
from memsub.client import Substrate, TenantSession

TENANT = uuid.UUID("c0000000-0000-4000-8000-0000000000a1")
ORG = uuid.UUID("c0000000-0000-4000-8000-0000000000a2")
USER = uuid.UUID("c0000000-0000-4000-8000-0000000000a3")
NEIGHBOUR = uuid.UUID("c0000000-0000-4000-8000-0000000000b1")  # another tenant of the same organization
NEIGHBOUR_USER = uuid.UUID("c0000000-0000-4000-8000-0000000000b3")
SESSION = "s1"
WARM_UP = 6  # runs before the measured ones: PostgreSQL chooses a kept plan at the sixth
DIMENSION = 384
# By design these read every row of their kind in the tenant (see the module's docstring).
READS_EVERY_ROW = {
    "reflection.retrieve": "scores every live reflection of the tenant",
    "world_model.snapshot": "copies every entity of the world model",
    "langgraph_checkpoint_list (five, every namespace)":
        "orders the thread's checkpoints of every namespace by id, as LangGraph's own PostgresSaver does",
}

READS = """
select coalesce(sum(pg_catalog.pg_stat_get_xact_tuples_fetched(c.oid)
                    + pg_catalog.pg_stat_get_xact_tuples_returned(c.oid)
                    + pg_catalog.pg_stat_get_xact_blocks_fetched(c.oid)), 0)::bigint
  from pg_catalog.pg_class c
 where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'i', 't')
"""

Action = Callable[[TenantSession, int], object]


@dataclass
class Area:
    """One memory area: how its rows grow (one call per row) and the calls measured at each size."""
    name: str
    grow: Action
    calls: dict[str, Action] = field(default_factory=dict)


def unit_vector(seed: int) -> list[float]:
    values = [math.sin(seed * 0.37 + d * 1.3) for d in range(DIMENSION)]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def envelope(number: int, thread: uuid.UUID, parent: str | None = None, vector: bool = False) -> dict[str, Any]:
    value: dict[str, Any] = {"packet_id": str(uuid.uuid4()), "packet_type": "event", "thread_id": str(thread),
                             "payload": {"text": f"packet {number}"}}
    if parent:
        value["lineage"] = {"parent_ids": [parent]}
    if vector:
        value["memory"] = {"embeddings": [{"embedding_type": "content", "vector": unit_vector(number)}]}
    return value


def areas(user: uuid.UUID) -> list[Area]:
    """The areas and their calls, for a context whose user is ``user``. A call's number is new at every run, so
    writes add rows rather than repeat one; reads name rows the growth wrote."""
    thread, embedded_thread = uuid.uuid4(), uuid.uuid4()
    last: dict[str, str] = {}

    def write_in_thread(s: TenantSession, n: int) -> None:
        last["packet"] = str(s.run(packets.write_packet(envelope(n, thread, last.get("packet")))).packet_id)

    def write_child(s: TenantSession, n: int) -> None:
        s.run(packets.write_packet(envelope(n, uuid.uuid4(), last["packet"])))

    def task(s: TenantSession) -> int:
        return s.run(sessions.task_create("bench", session_id=SESSION)).id

    namespace = f"user:{user}:notes"

    def remembered(s: TenantSession, n: int) -> str:
        s.run(memory.memory_remember(namespace, f"m{n}", {"n": n}))
        return f"m{n}"

    def ingest(s: TenantSession, path: str, n: int) -> None:
        s.documents.ingest(path, f"paragraph {n}. " * 20, file_hash=hashlib.sha256(path.encode()).hexdigest(),
                           mime="txt")

    def checkpoint(s: TenantSession, thread: str, n: int) -> None:
        s.fetch("select memsub.langgraph_checkpoint_put(%s, '', %s, %s, 'json', %s)",
                [thread, f"c{n:012d}", f"c{n - 1:012d}" if n else None, f'{{"n": {n}}}'.encode()])

    def store_put(s: TenantSession, namespace_label: str, n: int) -> None:
        s.fetch("select memsub.langgraph_store_put(array['docs', %s], %s, %s::jsonb)",
                [namespace_label, f"k{n}", json.dumps({"n": n})])
        if n < 10:
            s.fetch("select memsub.langgraph_store_put(array['docs', 'small'], %s, '{}'::jsonb)", [f"k{n}"])

    def agent_item(s: TenantSession, session: str, n: int) -> None:
        s.fetch("select memsub.agent_session_add_items(%s, %s::json)", [session, json.dumps([{"n": n}] * 2)])

    def adk_event(s: TenantSession, n: int) -> None:
        if n == 0:  # every tenant's growth starts at 0, in the session its first event creates
            s.fetch("select * from memsub.adk_session_create('bench', 'user', 'grown')")
        s.fetch("select memsub.adk_session_append_event('bench', 'user', 'grown', %s::jsonb)",
                [json.dumps({"id": f"e{n}", "author": "agent", "timestamp": float(n)})])

    def entity(n: int) -> dict[str, Any]:
        return {"entity_id": f"w{n}", "entity_type": "thing", "attributes": {"n": n}, "confidence": 0.5}

    return [
        Area("packets", write_in_thread, {
            "write_packet with a parent": write_child,
            "get_thread (one packet)": lambda s, n: s.run(packets.get_thread(uuid.uuid4())),
            "get_lineage (ancestors, depth 2)": lambda s, n: s.run(packets.get_lineage(last["packet"], "ancestors", 2)),
        }),
        Area("packets with an embedding",
             lambda s, n: s.run(packets.write_packet(envelope(n, embedded_thread, vector=True))), {
                 "write_packet with a 384-d vector":
                     lambda s, n: s.run(packets.write_packet(envelope(n, embedded_thread, vector=True))),
             }),
        Area("sessions", lambda s, n: s.run(sessions.session_create(f"grown{n}")), {
            "session_create": lambda s, n: s.run(sessions.session_create(f"new{n}")),
            "get_session": lambda s, n: s.run(sessions.get_session(f"grown{n % 50}")),
            "session_merge_state": lambda s, n: s.run(sessions.session_merge_state(SESSION, {"temp:n": n})),
        }),
        Area("tasks", lambda s, n: task(s), {
            "task_create": lambda s, n: task(s),
            "task_set_status": lambda s, n: s.run(sessions.task_set_status(task(s), "running")),
            "agent_spawn": lambda s, n: s.run(sessions.agent_spawn(f"agent{n}", task(s))),
            "checkpoint_save": lambda s, n: s.run(sessions.checkpoint_save(task(s), {"n": n})),
        }),
        Area("entities", lambda s, n: s.run(graph.graph_upsert_entity(f"Org {n}", "Organization")), {
            "graph_upsert_entity (new)": lambda s, n: s.run(graph.graph_upsert_entity(f"New {n}", "Organization")),
            "graph_upsert_entity (existing)":
                lambda s, n: s.run(graph.graph_upsert_entity("Org 3", "Organization", aliases=[f"alias{n}"])),
        }),
        Area("relationships", lambda s, n: s.run(graph.upsert_relationship(f"R{n}", "knows", f"R{n + 1}")), {
            "upsert_relationship": lambda s, n: s.run(graph.upsert_relationship(f"NR{n}", "knows", f"NR{n + 1}")),
            "graph_neighbors": lambda s, n: s.run(graph.graph_neighbors(f"R{n % 50}", 2)),
        }),
        Area("temporal edges", lambda s, n: s.run(graph.temporal_edge_add(f"A{n}", "buys_from", f"B{n}")), {
            "temporal_edge_add": lambda s, n: s.run(graph.temporal_edge_add(f"NA{n}", "buys_from", f"NB{n}")),
            "supersede_relationship":
                lambda s, n: s.run(graph.supersede_relationship(f"A{n % 50}", "buys_from", f"C{n}")),
            "edges_as_of (one entity)": lambda s, n: s.run(graph.edges_as_of(entity=f"A{n % 50 + 50}")),
            "graph_neighbors_as_of": lambda s, n: s.run(graph.graph_neighbors_as_of(f"A{n % 50 + 50}")),
            "traverse_graph (depth 2)": lambda s, n: s.run(graph.traverse_graph(f"A{n % 50 + 50}", 2)),
            "entity_neighbourhood": lambda s, n: s.run(graph.entity_neighbourhood(f"A{n % 50 + 50}")),
        }),
        Area("facts", lambda s, n: s.run(graph.assert_fact(f"S{n}", "is", {"n": n})), {
            "assert_fact": lambda s, n: s.run(graph.assert_fact(f"NS{n}", "is", {"n": n})),
        }),
        Area("reflections", lambda s, n: s.run(reflection.record_reflection("lesson", f"lesson {n}", tags=["a"])), {
            "record_reflection": lambda s, n: s.run(reflection.record_reflection("lesson", f"new {n}", tags=["b"])),
            "reflection.retrieve": lambda s, n: s.run(reflection.retrieve_reflections(tags=["b"], k=3)),
        }),
        Area("events", lambda s, n: s.run(events.record_event("agent", "ran", {"n": n})), {
            "record_event": lambda s, n: s.run(events.record_event("agent", "ran", {"n": n})),
            "record_reasoning_trace": lambda s, n: s.run(events.record_reasoning_trace("agent", steps=[n])),
        }),
        Area("document index", lambda s, n: s.run(documents.document_index_put(f"/d/{n}.md", unit_vector(n))), {
            "document_index_put (new)":
                lambda s, n: s.run(documents.document_index_put(f"/new/{n}.md", unit_vector(n))),
            "document_index_put (existing)":
                lambda s, n: s.run(documents.document_index_put(f"/d/{n % 50}.md", unit_vector(n))),
            "document_index_get": lambda s, n: s.run(documents.document_index_get(f"/d/{n % 50}.md")),
        }),
        Area("documents", lambda s, n: ingest(s, f"/doc/{n}.txt", n), {
            "document_ingest (new)": lambda s, n: ingest(s, f"/new/{n}.txt", n),
            "document_versions": lambda s, n: s.run(documents.document_versions(f"/doc/{n % 50}.txt")),
        }),
        Area("memory entries", remembered, {
            "memory_remember": remembered,
            "memory_touch": lambda s, n: s.run(memory.memory_touch(namespace, f"m{n % 50}")),
            "memory_history": lambda s, n: s.run(memory.memory_history(namespace, f"m{n % 50}")),
            "memory_delete": lambda s, n: s.run(memory.memory_delete(namespace, remembered(s, n), 1)),
            "memory_list (another namespace)": lambda s, n: s.run(memory.memory_list(f"user:{user}:other")),
        }),
        Area("world model", lambda s, n: s.run(world_model.apply_world_model_update("fact", [entity(n)])), {
            "apply_world_model_update":
                lambda s, n: s.run(world_model.apply_world_model_update("fact", [entity(n + 10**6), entity(n % 50)])),
            "world_model.snapshot": lambda s, n: s.run(world_model.take_world_model_snapshot()),
        }),
        Area("session events", lambda s, n: s.run(sessions.session_append_event(SESSION, {"n": n})), {
            "session_append_event": lambda s, n: s.run(sessions.session_append_event(SESSION, {"n": n})),
            "session_get_events (the first ten)":
                lambda s, n: s.run(sessions.session_get_events(SESSION, after_position=None, limit=10)),
        }),
        Area("LangGraph checkpoints", lambda s, n: checkpoint(s, "grown", n), {
            "langgraph_checkpoint_put": lambda s, n: checkpoint(s, "grown", n),
            "langgraph_checkpoint_get (latest)":
                lambda s, n: s.fetch("select * from memsub.langgraph_checkpoint_get('grown')"),
            "langgraph_checkpoint_list (five, one namespace)": lambda s, n: s.fetch(
                "select * from memsub.langgraph_checkpoint_list('grown', '', p_limit => 5)"),
            "langgraph_checkpoint_list (five, every namespace)": lambda s, n: s.fetch(
                "select * from memsub.langgraph_checkpoint_list('grown', p_limit => 5)"),
        }),
        Area("LangGraph store", lambda s, n: store_put(s, "grown", n), {
            "langgraph_store_put": lambda s, n: store_put(s, "new", n),
            "langgraph_store_get": lambda s, n: s.fetch(
                "select * from memsub.langgraph_store_get(array['docs', 'grown'], %s)", [f"k{n % 50}"]),
            "langgraph_store_search (a namespace of ten)": lambda s, n: s.fetch(
                "select * from memsub.langgraph_store_search(array['docs', 'small'], p_limit => 10)"),
        }),
        Area("agent sessions", lambda s, n: agent_item(s, "grown", n), {
            "agent_session_add_items": lambda s, n: agent_item(s, "grown", n),
            "agent_session_get_items (twenty)":
                lambda s, n: s.fetch("select * from memsub.agent_session_get_items('grown', 20)"),
            "agent_session_pop_item": lambda s, n: s.fetch("select memsub.agent_session_pop_item('grown')"),
        }),
        Area("ADK events", lambda s, n: adk_event(s, n), {
            "adk_session_append_event": lambda s, n: adk_event(s, n),
            "adk_session_get (ten recent)": lambda s, n: s.fetch(
                "select * from memsub.adk_session_get('bench', 'user', 'grown', 10)"),
        }),
        Area("semantic memory", lambda s, n: s.run(search.store_semantic_memory("agent", unit_vector(n), {"n": n})), {
            "store_semantic_memory":
                lambda s, n: s.run(search.store_semantic_memory("agent", unit_vector(n), {"n": n})),
        }),
    ]


def reads(s: TenantSession) -> int:
    return int(s.fetch(READS)[0]["coalesce"])


Where = tuple[uuid.UUID, dict[str, Any]]  # a tenant and the rest of its context


def context(tenant: uuid.UUID, user: uuid.UUID) -> Where:
    return tenant, {"org_id": ORG, "user_id": user, "roles": ["tenant_admin"], "session_id": SESSION}


def grow(substrate: Substrate, where: Where, area: Area, numbers: range) -> None:
    with substrate.tenant(where[0], **where[1], per_call=True) as s:
        for n in numbers:
            area.grow(s, n)


def measure(substrate: Substrate, superuser: str, analyzed: bool, small: int, large: int, calls: int,
            only: list[str]) -> dict[str, dict[str, list[float]]]:
    """{area: {call: [reads per call with small rows, small rows and the neighbour's large, large rows]}} for one
    database: the measured tenant's own rows, then another tenant's rows of the area, then more of its own."""
    own, other = context(TENANT, USER), context(NEIGHBOUR, NEIGHBOUR_USER)
    for tenant, rest in (own, other):
        with substrate.tenant(tenant, **rest, per_call=True) as s:
            s.run(sessions.session_create(SESSION))
    found: dict[str, dict[str, list[float]]] = {}
    number = 10**7  # the measured calls' numbers: apart from the grown rows'
    for area, neighbour in zip(areas(USER), areas(NEIGHBOUR_USER), strict=True):
        if only and not any(word in area.name for word in only):
            continue
        steps = [(area, own, range(small)), (neighbour, other, range(large)), (area, own, range(small, large))]
        for grown_area, where, numbers in steps:
            grow(substrate, where, grown_area, numbers)
            if analyzed:
                with psycopg.connect(superuser, autocommit=True) as conn:
                    conn.execute("analyze")
            for name, call in area.calls.items():
                total = 0
                for run in range(WARM_UP + calls):
                    number += 1
                    with substrate.tenant(own[0], **own[1]) as s:
                        before = reads(s)
                        call(s, number)
                        if run >= WARM_UP:
                            total += reads(s) - before
                found.setdefault(area.name, {}).setdefault(name, []).append(total / calls)
        print(f"  {'analyzed' if analyzed else 'before ANALYZE'}: {area.name}", file=sys.stderr, flush=True)
    return found


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"small": args.small, "large": args.large, "calls": args.calls}
    for mode in ("before ANALYZE", "analyzed"):
        with bench_database(DIMENSION) as (superuser, app):
            results.setdefault("environment", environment(superuser))
            with psycopg.connect(superuser, autocommit=True) as conn:
                conn.execute(sql.SQL("grant memsub_tenant_admin to {}").format(sql.Identifier(APP_ROLE)))
                if mode == "before ANALYZE":
                    for (table,) in conn.execute(
                            "select c.relname from pg_catalog.pg_class c "
                            "where c.relnamespace = 'memsub'::regnamespace and c.relkind = 'r'").fetchall():
                        conn.execute(sql.SQL("alter table {} set (autovacuum_enabled = false)").format(
                            sql.Identifier("memsub", table)))
            substrate = Substrate(app, min_size=1, max_size=1)
            try:
                results[mode] = measure(substrate, superuser, mode == "analyzed", args.small, args.large,
                                        args.calls, args.only.split(",") if args.only else [])
            finally:
                substrate.close()
    return results


def grows(before: float, after: float, rows_added: int) -> bool:
    """More than 50 reads more, and at least one more for every four rows added: a B-tree one level deeper or a
    larger HNSW graph adds a few reads, a scan adds one or more a row."""
    return after - before > max(50, rows_added / 4)


def report(results: dict[str, Any]) -> str:
    small, large = results["small"], results["large"]
    sizes = f"{small:>7,} {'+' + format(large, ','):>7s} {large:>7,}"
    lines = [f"reads per call (tuples and blocks of memsub's tables and indexes) with {small:,} rows of the area in "
             f"the tenant, then with another tenant's {large:,} (+{large:,}), then with {large:,} of its own; "
             f"{results['calls']} calls each after {WARM_UP} unmeasured", "",
             environment_line(results["environment"]), "",
             f"{'area / call':72s} {'before ANALYZE':>23s}   {'analyzed':>23s}",
             f"{'':72s} {sizes}   {sizes}"]
    flagged = []
    for area, calls in results["analyzed"].items():
        for name, analyzed in calls.items():
            before = results["before ANALYZE"][area][name]
            marks = []
            for mode, (alone, beside, grown) in (("before ANALYZE", before), ("analyzed", analyzed)):
                if grows(alone, grown, large - small):
                    marks.append(f"grows with its tenant {mode}")
                if grows(alone, beside, large):
                    marks.append(f"grows with the other tenant {mode}")
            if marks:
                flagged.append(f"{area}: {name}: {'; '.join(marks)}"
                               + (f" (by design: {READS_EVERY_ROW[name]})" if name in READS_EVERY_ROW else ""))
            lines.append(f"{area + ': ' + name:72s} " + "   ".join(
                " ".join(f"{value:7,.0f}" for value in values) for values in (before, analyzed))
                + ("  *" if marks else ""))
    lines += ["", *(flagged or ["no call grows with its tenant or with another"])]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--small", type=int, default=100, help="rows of each area at the first measurement")
    parser.add_argument("--large", type=int, default=1000, help="rows of each area at the second")
    parser.add_argument("--calls", type=int, default=3, help="measured calls of each kind at each size")
    parser.add_argument("--only", help="comma-separated words: only the areas whose names hold one")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if not 0 < args.small < args.large:
        parser.error("--small must be positive and below --large")
    results = run(args)
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
