"""Row-level security of every layer table: a context sees exactly the rows its policies allow.

Each test first checks the isolation, then drops each of the table's policies in turn (as the superuser, inside
the test's own database) and checks that the same comparison now fails: the test guards every policy.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, TENANT_B, set_context, write
from layer_helpers import LAYER_TABLES, call, populate, vec

ORG_1 = uuid.UUID("00000000-0000-0000-0001-000000000001")
ORG_2 = uuid.UUID("00000000-0000-0000-0001-000000000002")
USER_1 = uuid.UUID("00000000-0000-0000-0002-000000000001")
USER_2 = uuid.UUID("00000000-0000-0000-0002-000000000002")
USER_3 = uuid.UUID("00000000-0000-0000-0002-000000000003")

LAYERS = {
    "agent_memory_events": ["org", "user"], "reasoning_traces": ["org", "user"], "knowledge_facts": [],
    "semantic_memory": ["org", "user"], "memory_embeddings": ["org", "user"], "entity_relationships": [],
    "world_model_state": [], "world_model_entities": [], "world_model_updates": [], "world_model_snapshots": [],
    "reflection_store": ["org"], "task_reflections": ["org"], "memory_summaries": ["org"],
    "memory_access_log": ["org", "user"],
}
POLICY_OF_LAYER = {"org": "org_isolation", "user": "user_visibility"}


def _populate_everyone(db: Any) -> None:
    with db.connect("app") as conn:
        populate(conn, TENANT_A, ORG_1, USER_1, tag="a1")
        conn.commit()
        other_org = populate(conn, TENANT_A, ORG_2, USER_2, tag="a2")
        conn.commit()
        # A service of the other organization, without a user: its access record of a shared target is shared.
        set_context(conn, TENANT_A, ORG_2)
        call(conn, "select * from memsub.record_access('fact', %s, 'service')", [other_org["fact"]["fact_id"]])
        conn.commit()
        populate(conn, TENANT_B, None, None, tag="b")
        conn.commit()
        # Private rows of another user of the same tenant and organization.
        set_context(conn, TENANT_A, ORG_1, USER_3)
        packet = write(conn, {"packet_type": "note", "payload": {"secret": 1}, "scope": "l-private"})["packet_id"]
        call(conn, "select * from memsub.record_event('agent-3', 'private', '{}'::jsonb, %s)", [packet])
        call(conn, "select * from memsub.record_reasoning_trace('agent-3', %s)", [packet])
        embedding = call(conn, "select * from memsub.store_embedding(%s, 'content', %s::vector)", [packet, vec(0.3)])
        call(conn, "select * from memsub.record_access('packet', %s, 'agent-3', p_query_text => 'my secret')", [packet])
        call(conn, "select * from memsub.record_access('embedding', %s, 'agent-3')", [embedding["embedding_id"]])
        call(conn, "select * from memsub.store_semantic_memory('agent-3', %s::vector, p_scope => 'l-private')",
             [vec(0.2)])
        conn.commit()


def _expected(row: dict[str, Any], layers: list[str]) -> bool:
    """What the policies promise to the context (TENANT_A, ORG_1, USER_1), computed from ground truth."""
    if row["tenant_id"] != str(TENANT_A):
        return False
    if "org" in layers and row.get("org_id") not in (None, str(ORG_1)):
        return False
    if "user" in layers and row["scope"] != "shared" and row.get("user_id") != str(USER_1):
        return False
    return True


def _rows(conn: Any, table: str) -> set[str]:
    return {json.dumps(r[0], sort_keys=True)
            for r in conn.execute(f"select to_jsonb(t) from memsub.{table} t").fetchall()}  # noqa: S608


def isolation_problems(db: Any, table: str) -> list[str]:
    with db.connect() as conn:
        everything = _rows(conn, table)
    expected = {r for r in everything if _expected(json.loads(r), LAYERS[table])}
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, USER_1)
        visible = _rows(conn, table)
    problems = []
    if not expected or expected == everything:
        problems.append(f"{table}: the fixture gives nothing to see or nothing to hide")
    if visible - expected:
        problems.append(f"{table}: {len(visible - expected)} row(s) visible that the policies forbid")
    if expected - visible:
        problems.append(f"{table}: {len(expected - visible)} row(s) of the context hidden")
    return problems


@pytest.mark.parametrize("table", LAYER_TABLES)
def test_context_sees_exactly_its_rows_and_each_policy_is_needed(db, table):
    _populate_everyone(db)
    assert isolation_problems(db, table) == []

    policies = ["tenant_isolation"] + [POLICY_OF_LAYER[layer] for layer in LAYERS[table]]
    with db.connect() as conn:
        installed = {r[0] for r in conn.execute(
            "select policyname from pg_policies where schemaname = 'memsub' and tablename = %s", [table])}
        assert set(policies) <= installed
        forced = conn.execute("select relrowsecurity and relforcerowsecurity from pg_class "
                              "where oid = %s::regclass", [f"memsub.{table}"]).fetchone()
        assert forced == (True,)
    for policy in policies:
        with db.connect() as conn:
            conn.execute(f"drop policy {policy} on memsub.{table}")
        assert isolation_problems(db, table) != [], f"dropping {policy} on {table} went unnoticed"
        with db.connect() as conn:
            conn.execute("call memsub._install_row_security(%s, %s)", [f"memsub.{table}", LAYERS[table]])
        assert isolation_problems(db, table) == []


def test_tenant_wide_knowledge_is_shared_across_organizations_but_not_tenants(db):
    _populate_everyone(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_2, USER_2)
        subjects = {r[0] for r in conn.execute("select subject from memsub.knowledge_facts")}
        assert subjects == {"L9-a1", "L9-a2"}
        edges = {r[0] for r in conn.execute("select source_entity from memsub.entity_relationships")}
        assert edges == {"L9-a1", "L9-a2"}


@pytest.mark.parametrize("scope", ["l-private", "cursor"])
def test_a_reflection_comes_only_from_a_shared_packet(db, scope):
    """A reflection is read by its whole organization: drawn from a private or cursor packet it would show the
    packet's id and routing agent to every other user of it."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, USER_1)
        packet = write(conn, {"packet_type": "diary", "payload": {"secret": 1}, "scope": scope,
                              "routing": {"agent": "private-agent"}})["packet_id"]
        conn.commit()
    with pytest.raises(psycopg.errors.InvalidParameterValue) as caught, db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, USER_1)
        conn.execute("select memsub.record_reflection('lesson', 'be careful', p_source_packet => %s)", [packet])
    assert caught.value.diag.column_name == "source_packet"
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.reflection_store").fetchone() == (0,)



@pytest.mark.parametrize("scope", ["l-private", "cursor"])
def test_a_summary_comes_only_from_shared_packets(db, scope):
    """A summary is read by its whole organization, with the ids of the packets it summarizes: drawn from a
    private or cursor packet it would show that packet's id, and what its text says of it, to every other user."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, USER_1)
        shared = write(conn, {"packet_type": "note", "payload": {"n": 1}})["packet_id"]
        private = write(conn, {"packet_type": "diary", "payload": {"secret": 1}, "scope": scope})["packet_id"]
        conn.commit()
    with pytest.raises(psycopg.errors.InvalidParameterValue) as caught, db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, USER_1)
        conn.execute("select memsub.record_summary('agent', 'planner', 'the diary says', %s::uuid[])",
                     [[shared, private]])
    assert caught.value.diag.column_name == "source_packet_ids"
    assert str(private) in caught.value.diag.message_primary
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.memory_summaries").fetchone() == (0,)

def test_the_accesses_to_a_private_packet_are_as_private_as_the_packet(db):
    """An access record names its target and the query that found it: for a cursor or l-private target it is read
    by its accessor alone, however it was recorded (record_access, a search asked to record)."""
    text = "salary negotiation"
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, USER_1)
        shared = write(conn, {"packet_type": "note", "payload": {"n": 1}})["packet_id"]
        private = write(conn, {"packet_type": "diary", "payload": {"secret": 1}, "scope": "l-private",
                               "memory": {"embeddings": [{"embedding_type": "content", "vector": json.loads(vec(0.7)),
                                                          "chunk_text": text}]}})["packet_id"]
        for target in (shared, private):
            conn.execute("select memsub.record_access('packet', %s, 'agent-1', p_query_text => %s)", [target, text])
        hits = conn.execute("select packet_id from memsub.hybrid_search(%s, %s::vector, 5, p_record_access => true)",
                            [text, vec(0.7)]).fetchall()
        assert (private,) in hits
        mine = conn.execute("select target_type, scope from memsub.memory_access_log").fetchall()
        conn.commit()
    assert sorted(mine) == [("embedding", "l-private"), ("packet", "l-private"), ("packet", "l-private")]
    with db.connect("app") as conn:  # another user of the organization: none of them
        set_context(conn, TENANT_A, ORG_1, USER_2)
        seen = conn.execute("select target_id, query_text from memsub.memory_access_log").fetchall()
    assert seen == []


def test_a_users_accesses_to_shared_targets_are_read_by_that_user_alone(db):
    """The query of a search is the searcher's own words, and who read what when is the searcher's activity: a
    user's access records are read by that user (and admins), not by the other users of the organization, even
    when the target is shared. A context without a user has no one to keep them for: its records of shared
    targets stay shared."""
    query = "symptoms of burnout"
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, USER_1)
        shared = write(conn, {"packet_type": "note", "payload": {"n": 2},
                              "memory": {"embeddings": [{"embedding_type": "content", "vector": json.loads(vec(0.4)),
                                                         "chunk_text": "burnout policy of the company"}]}}
                       )["packet_id"]
        conn.execute("select memsub.record_access('packet', %s, 'agent-1', p_query_text => %s)", [shared, query])
        hits = conn.execute("select packet_id from memsub.hybrid_search(%s, %s::vector, 5, p_record_access => true)",
                            [query, vec(0.4)]).fetchall()
        assert hits == [(shared,)]
        conn.execute("select memsub.semantic_search(%s::vector, 5, p_record_access => true, p_query_text => %s)",
                     [vec(0.4), query])
        mine = conn.execute("select query_text, scope from memsub.memory_access_log").fetchall()
        conn.commit()
        set_context(conn, TENANT_A, ORG_1)  # a service context of the organization, without a user
        conn.execute("select memsub.record_access('packet', %s, 'service', p_query_text => 'nightly digest')",
                     [shared])
        conn.commit()
    assert mine == [(query, "l-private")] * 3
    with db.connect("app") as conn:  # another user of the organization reads the service's record only
        set_context(conn, TENANT_A, ORG_1, USER_2)
        assert conn.execute("select query_text, user_id from memsub.memory_access_log").fetchall() == [
            ("nightly digest", None)]
        with pytest.raises(psycopg.errors.ForeignKeyViolation) as caught:  # nor gives feedback on the user's
            conn.execute("select memsub.record_feedback(%s, false)", [_first_access(db, query)])
    assert caught.value.diag.column_name == "access_id"
    with db.connect("tenant_admin") as conn:  # maintenance of the tenant reads them all
        set_context(conn, TENANT_A, roles=["tenant_admin"])
        assert conn.execute("select count(*) from memsub.memory_access_log").fetchone() == (4,)


def _first_access(db: Any, query: str) -> uuid.UUID:
    with db.connect() as conn:
        row = conn.execute("select access_id from memsub.memory_access_log where query_text = %s limit 1",
                           [query]).fetchone()
    assert row is not None
    return row[0]
