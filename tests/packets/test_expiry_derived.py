"""Expiry reaches every row derived from a packet: the layer rows a packet fans out (facts, relationships,
embeddings, reasoning trace) and the rows linked to it (agent events, reflections) are never read once the packet
has expired, by any role, function or view, and purge_expired() deletes them with it. The materialized views'
client-facing reads drop expired rows at once, without waiting for a refresh."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, set_context, wait_until, write
from layer_helpers import vec

DERIVED = {
    "agent_memory_events": "packet_id", "reasoning_traces": "packet_id", "knowledge_facts": "source_packet",
    "entity_relationships": "source_packet", "memory_embeddings": "packet_id", "reflection_store": "source_packet",
}


def write_world(conn: psycopg.Connection[Any], name: str, ttl: datetime | None) -> uuid.UUID:
    """A shared packet (expiring at ttl, or never) that fans out a fact, a relationship, an embedding and a
    reasoning trace, with an agent event and a reflection linked to it. Returns the packet id."""
    envelope: dict[str, Any] = {
        "packet_type": "memory_write", "payload": {"note": name}, "importance_score": 0.9,
        "metadata": {"agent": f"agent-{name}"}, "confidence": {"score": 0.9},
        "memory": {
            "facts": [{"subject": name, "predicate": "likes", "object": "tea", "confidence": 0.9}],
            "relationships": [{"source_entity": name, "relationship_type": "knows", "target_entity": "Bob",
                               "confidence": 0.9}],
            "embeddings": [{"embedding_type": "content", "vector": json.loads(vec(0.3)),
                            "chunk_text": f"{name} drinks tea"}],
            "reasoning_trace": {"steps": ["think"]},
        },
    }
    if ttl is not None:
        envelope["ttl"] = ttl.isoformat()
    packet_id: uuid.UUID = write(conn, envelope)["packet_id"]
    conn.execute("select memsub.record_event(%s, 'tool_call', '{}'::jsonb, %s)", [f"agent-{name}", packet_id])
    conn.execute("select memsub.record_reflection('lesson', %s, p_tags => %s, p_confidence => 0.9, "
                 "p_source_packet => %s)", [f"{name} lesson", [f"tag-{name}"], packet_id])
    return packet_id


def visible(conn: psycopg.Connection[Any], packet_id: uuid.UUID, name: str) -> dict[str, int]:
    """How many rows derived from the packet each table and read function returns to this connection."""
    seen: dict[str, int] = {}
    for table, column in DERIVED.items():
        seen[table] = conn.execute(f"select count(*) from memsub.{table} where {column} = %s",  # noqa: S608
                                   [packet_id]).fetchone()[0]
    reads = {
        "entity_neighbourhood": ("select count(*) from memsub.entity_neighbourhood(%s)", [name]),
        "traverse_graph": ("select count(*) from memsub.traverse_graph(%s)", [name]),
        "edges_as_of": ("select count(*) from memsub.edges_as_of(null, %s)", [name]),
        "graph_neighbors": ("select count(*) from memsub.graph_neighbors(%s)", [name]),
        "retrieve_reflections": ("select count(*) from memsub.retrieve_reflections(p_tags => %s, "
                                 "p_require_tags => true)", [[f"tag-{name}"]]),
        "hybrid_search": ("select count(*) from memsub.hybrid_search(%s, %s::vector, 5) h "
                          "where h.packet_id = %s", [f"{name} drinks tea", vec(0.3), packet_id]),
    }
    for label, (sql, params) in reads.items():
        seen[label] = conn.execute(sql.encode(), params).fetchone()[0]
    return seen


def stored(db: Any, packet_id: uuid.UUID) -> dict[str, int]:
    """Rows derived from the packet that are stored, as the superuser sees them (the ground truth)."""
    with db.connect() as conn:
        return {table: conn.execute(f"select count(*) from memsub.{table} where {column} = %s",  # noqa: S608
                                    [packet_id]).fetchone()[0]
                for table, column in DERIVED.items()}


def test_rows_derived_from_an_expired_packet_are_never_read_and_are_purged_with_it(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ttl = datetime.now(UTC) + timedelta(seconds=3)
        expiring = write_world(conn, "Expiring", ttl)
        kept = write_world(conn, "Kept", None)
        before = visible(conn, expiring, "Expiring")
        assert all(n > 0 for n in before.values()), before
        wait_until(conn, ttl)
        set_context(conn, TENANT_A)
        assert visible(conn, expiring, "Expiring") == dict.fromkeys(before, 0)
        assert visible(conn, kept, "Kept") == before
    with db.connect("tenant_admin") as conn:  # an admin passes the scope policies, never the expiry
        set_context(conn, TENANT_A, roles=["tenant_admin"])
        assert visible(conn, expiring, "Expiring") == dict.fromkeys(before, 0)
    assert all(n == 1 for n in stored(db, expiring).values())  # hidden, still stored until purged
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        assert conn.execute("select * from memsub.purge_expired()").fetchall() == [(TENANT_A, 1)]
        conn.commit()
    with db.connect() as conn:
        leftovers = {table: conn.execute(f"select count(*) from memsub.{table} where {column} is null "  # noqa: S608
                                         "and tenant_id = %s", [TENANT_A]).fetchone()[0]
                     for table, column in DERIVED.items() if table != "memory_embeddings"}
    # Nothing derived from the purged packet is left behind, not even unlinked (the link is set null on purge).
    assert leftovers == dict.fromkeys(leftovers, 0)
    assert stored(db, expiring) == dict.fromkeys(DERIVED, 0)
    assert stored(db, kept) == dict.fromkeys(DERIVED, 1)


def _record_accesses(conn: psycopg.Connection[Any], packet_id: uuid.UUID, query: str) -> None:
    """An access to the packet, its embedding, its fact and its reflection."""
    conn.execute("select memsub.record_access('packet', %s, 'reader', p_query_text => %s)", [packet_id, query])
    for target_type, table, column, key in (("embedding", "memory_embeddings", "embedding_id", "packet_id"),
                                            ("fact", "knowledge_facts", "fact_id", "source_packet"),
                                            ("reflection", "reflection_store", "reflection_id", "source_packet")):
        conn.execute(f"select memsub.record_access(%s, (select {column} from memsub.{table} "  # noqa: S608
                     f"where {key} = %s), 'reader', p_query_text => %s)", [target_type, packet_id, query])
    conn.execute("select * from memsub.hybrid_search(%s, %s::vector, 5, p_record_access => true)", [query, vec(0.3)])


def test_the_accesses_of_what_is_purged_go_with_it_whoever_recorded_them(db):
    """Nothing derived outlives its packet: the access records naming the purged packet, its embedding, fact and
    reflection (with the queries that found them) are deleted too, those of readers the purging context cannot
    see as well; those of live packets stay."""
    other_org, other_user = uuid.uuid4(), uuid.uuid4()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ttl = datetime.now(UTC) + timedelta(seconds=3)
        expiring = write_world(conn, "Expiring", ttl)
        kept = write_world(conn, "Kept", None)
        conn.commit()
        for org, user in ((None, None), (other_org, other_user)):
            set_context(conn, TENANT_A, org, user)
            _record_accesses(conn, expiring, "Expiring drinks tea")
            _record_accesses(conn, kept, "Kept drinks tea")
            conn.commit()
    targets = ("select l.target_id from memsub.memory_access_log l where l.target_id in ("
               "select packet_id from memsub.packet_store where packet_id = %(p)s union all "
               "select embedding_id from memsub.memory_embeddings where packet_id = %(p)s union all "
               "select fact_id from memsub.knowledge_facts where source_packet = %(p)s union all "
               "select reflection_id from memsub.reflection_store where source_packet = %(p)s)")
    with db.connect() as conn:
        recorded = {p: conn.execute(targets, {"p": p}).fetchall() for p in (expiring, kept)}
        everything = conn.execute("select count(*) from memsub.memory_access_log").fetchone()[0]
    assert {p: len({r[0] for r in rows}) for p, rows in recorded.items()} == {expiring: 4, kept: 4}
    with db.connect("app") as conn:
        wait_until(conn, ttl)
        set_context(conn, TENANT_A)
        assert conn.execute("select * from memsub.purge_expired()").fetchall() == [(TENANT_A, 1)]
        conn.commit()
    with db.connect() as conn:
        left = conn.execute("select count(*) from memsub.memory_access_log where target_id = any(%s)",
                            [[r[0] for r in recorded[expiring]]]).fetchone()[0]
        assert left == 0
        assert sorted(conn.execute(targets, {"p": kept}).fetchall()) == sorted(recorded[kept])
        assert conn.execute("select count(*) from memsub.memory_access_log").fetchone()[0] == (
            everything - len(recorded[expiring]))


def test_knowledge_outlives_an_expired_packet_only_when_something_else_supports_it(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ttl = datetime.now(UTC) + timedelta(seconds=2)
        write(conn, {"packet_type": "note", "payload": 1, "ttl": ttl.isoformat(), "memory": {
            "facts": [{"subject": "Tea", "predicate": "colour", "object": "green"},
                      {"subject": "Coffee", "predicate": "colour", "object": "black"}],
            "relationships": [{"source_entity": "Tea", "relationship_type": "grows_in", "target_entity": "Assam"}]}})
        # Asserted again without an expiring packet: the coffee fact no longer depends on the packet.
        conn.execute("select memsub.assert_fact('Coffee', 'colour', '\"black\"'::jsonb)")
        wait_until(conn, ttl)
        set_context(conn, TENANT_A)
        facts = conn.execute("select subject, supporting_packet_count from memsub.knowledge_facts "
                             "order by subject").fetchall()
        assert facts == [("Coffee", 2)]
        assert conn.execute("select count(*) from memsub.entity_relationships").fetchone() == (0,)
        # The expired knowledge asserted anew starts again, as if it had never been known.
        fact = conn.execute("select supporting_packet_count, contradiction_count "
                            "from memsub.assert_fact('Tea', 'colour', '\"green\"'::jsonb)").fetchone()
        assert fact == (1, 0)
        edge = conn.execute("select mention_count from memsub.upsert_relationship('Tea', 'grows_in', 'Assam')")
        assert edge.fetchone() == (1,)
        assert conn.execute("select count(*) from memsub.knowledge_facts").fetchone() == (2,)
        conn.commit()


VIEW_READS = {
    "tenant_agent_recent_important": "select count(*) from memsub.tenant_agent_recent_important where packet_id = %s",
    "tenant_high_confidence_facts": "select count(*) from memsub.tenant_high_confidence_facts "
                                    "where subject = 'ExpiringView'",
    "tenant_entity_graph": "select count(*) from memsub.tenant_entity_graph where source_entity = 'expiringview'",
    "tenant_reflection_patterns": "select coalesce(sum(count), 0) from memsub.tenant_reflection_patterns",
}


def _read_views(db: Any, packet_id: uuid.UUID) -> dict[str, int]:
    """Rows of the expiring world each client-facing view returns to an application and to an analyst."""
    seen: dict[str, int] = {}
    for role in ("app", "analyst"):
        with db.connect(role) as conn:
            if role == "app":
                set_context(conn, TENANT_A)
            for view, sql in VIEW_READS.items():
                seen[f"{role}:{view}"] = int(
                    conn.execute(sql.encode(), [packet_id] if "%s" in sql else []).fetchone()[0])
    return seen


def test_materialized_views_drop_expired_rows_without_a_refresh(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ttl = datetime.now(UTC) + timedelta(seconds=6)
        packet_id = write_world(conn, "ExpiringView", ttl)
        conn.commit()
    with db.connect("platform_admin", autocommit=True) as conn:
        conn.execute("call memsub.refresh_memory_views()")
    before = _read_views(db, packet_id)
    assert all(n > 0 for n in before.values()), before
    with db.connect("app") as conn:
        wait_until(conn, ttl)
    assert _read_views(db, packet_id) == dict.fromkeys(before, 0)
    with db.connect("analyst") as conn:  # the refreshed rows are only ever read through the filtering views
        for view in ("mv_agent_recent_important", "mv_entity_graph", "mv_high_confidence_facts",
                     "mv_reflection_patterns"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"select count(*) from memsub.{view}")  # noqa: S608
            conn.rollback()


def test_a_fact_asserted_again_after_it_expired_leaves_no_access_records_of_the_old_one(db):
    """Asserting again a fact that has expired deletes the expired row first, to start it afresh; the access
    records naming that row, with the queries that found it, went on naming a fact that no longer exists."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ttl = datetime.now(UTC) + timedelta(seconds=2)
        write(conn, {"packet_type": "note", "payload": 1, "ttl": ttl.isoformat(), "memory": {
            "facts": [{"subject": "Ada", "predicate": "likes", "object": "tea"}]}})
        old = conn.execute("select fact_id from memsub.knowledge_facts").fetchone()[0]
        conn.execute("select memsub.record_access('fact', %s, 'reader', p_query_text => 'what Ada likes')", [old])
        conn.commit()
        wait_until(conn, ttl)
        set_context(conn, TENANT_A)
        new = conn.execute("select (memsub.assert_fact('Ada', 'likes', '\"tea\"'::jsonb)).fact_id").fetchone()[0]
        conn.commit()
    assert new != old
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.knowledge_facts where fact_id = %s", [old]).fetchone() == (0,)
        assert conn.execute("select count(*) from memsub.memory_access_log where target_id = %s",
                            [old]).fetchone() == (0,)


def _snapshot_relations(conn: psycopg.Connection[Any], snapshot_id: uuid.UUID) -> tuple[list[str], int]:
    """The relations a snapshot holds (as "source type target"), read directly, and its relation_count."""
    row = conn.execute("select array(select concat_ws(' ', r ->> 'source_entity', r ->> 'relationship_type', "
                       "r ->> 'target_entity') from jsonb_array_elements(s.snapshot -> 'relations') r), "
                       "s.relation_count from memsub.world_model_snapshots s where s.snapshot_id = %s",
                       [snapshot_id]).fetchone()
    assert row is not None
    return row[0], row[1]


def test_a_snapshot_keeps_no_relation_of_a_purged_packet(db):
    """A snapshot is a historical record, but nothing derived from a packet outlives its purge: the relations a
    snapshot copied from an expiring packet's fan-out are removed from it (and from its count) by the purge that
    deletes the packet; the relations of packets that have not expired, and those given directly, stay."""
    def packet(source: str, target: str, ttl: datetime | None) -> uuid.UUID:
        envelope: dict[str, Any] = {"packet_type": "memory_write", "payload": {"note": source},
                                    "memory": {"relationships": [{"source_entity": source,
                                                                  "relationship_type": "knows",
                                                                  "target_entity": target}]}}
        if ttl is not None:
            envelope["ttl"] = ttl.isoformat()
        packet_id: uuid.UUID = write(conn, envelope)["packet_id"]
        return packet_id

    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ttl = datetime.now(UTC) + timedelta(seconds=3)
        expiring = packet("Carol", "Dave", ttl)
        kept = packet("Alice", "Bob", None)
        conn.execute("select memsub.upsert_relationship('Erin', 'knows', 'Frank')")
        snapshot = conn.execute("select snapshot_id from memsub.take_world_model_snapshot('before expiry')"
                                ).fetchone()[0]
        relations = {r["source_entity"]: r for r in conn.execute(
            "select snapshot -> 'relations' from memsub.world_model_snapshots where snapshot_id = %s",
            [snapshot]).fetchone()[0]}
        # Each relation records the packet it came from and its expiry (the edge's).
        assert relations["Carol"]["source_packet"] == str(expiring)
        assert datetime.fromisoformat(relations["Carol"]["ttl"]).replace(tzinfo=UTC) == ttl
        assert (relations["Alice"]["source_packet"], relations["Alice"]["ttl"]) == (str(kept), None)
        assert (relations["Erin"]["source_packet"], relations["Erin"]["ttl"]) == (None, None)
        wait_until(conn, ttl)
        set_context(conn, TENANT_A)
        # Between expiry and purge a direct SELECT still shows the relation (the documented window).
        assert _snapshot_relations(conn, snapshot) == (
            ["Alice knows Bob", "Carol knows Dave", "Erin knows Frank"], 3)
        assert conn.execute("select * from memsub.purge_expired()").fetchall() == [(TENANT_A, 1)]
        conn.commit()
        set_context(conn, TENANT_A)
        assert _snapshot_relations(conn, snapshot) == (["Alice knows Bob", "Erin knows Frank"], 2)
    with db.connect() as conn:  # the ground truth: the stored snapshot holds the relation no more
        assert conn.execute("select snapshot -> 'relations' @? '$[*] ? (@.source_entity == \"Carol\")', "
                            "relations_expire_at from memsub.world_model_snapshots where snapshot_id = %s",
                            [snapshot]).fetchone() == (False, None)
