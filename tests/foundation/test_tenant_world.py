"""Every tenant table at once: a small world is written into two tenants through the stored functions, then each
table is read by several viewers and compared with the superuser's ground truth.

- the writer's own context sees exactly its tenant's rows of every table (tenant_isolation);
- a platform admin sees every row of every table (admin_override), a tenant admin every row of its tenant;
- the same user acting in another organization sees none of the first organization's rows (org_isolation);
- another user of the same organization sees none of the first user's private rows (user_visibility).

Every table with row-level security must hold rows of both tenants, so a new table without coverage here fails.
A second test draws the worlds with hypothesis: organization and user ids shared across tenants or not, and the
scope of one note packet and one semantic memory (``MEMSUB_SOAK_FACTOR`` multiplies the examples).
"""

from __future__ import annotations

import json
import uuid
from typing import Any, get_args

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from memsub.models import Scope

from helpers import TENANT_A, TENANT_B, set_context, soak_factor, write

ORG = {TENANT_A: uuid.UUID("0a000000-0000-0000-0000-0000000000a1"),
       TENANT_B: uuid.UUID("0b000000-0000-0000-0000-0000000000b1")}
OTHER_ORG = uuid.UUID("0c000000-0000-0000-0000-0000000000c1")
USER = {TENANT_A: uuid.UUID("00000000-0000-0000-0002-0000000000a1"),
        TENANT_B: uuid.UUID("00000000-0000-0000-0002-0000000000b1")}
OTHER_USER = uuid.UUID("00000000-0000-0000-0002-0000000000ff")
# Tables whose rows are shared by the whole tenant by design (docs/decisions.md): they carry org_id as the
# writer's org, not as a visibility boundary. memory_entries isolates by namespace instead.
TENANT_WIDE = {"entity_relationships", "knowledge_facts", "memory_entries", "packet_threads", "world_model_entities",
               "world_model_snapshots", "world_model_state", "world_model_updates"}
# Reports of tenant maintenance, whose counts span every organization and user of the tenant: read by tenant
# and platform admin contexts and by analysts, never by the application role, nor by a tenant admin login in a
# context without an admin role (docs/security.md).
ADMIN_REPORTS = {"importance_learning_runs"}


def _vector(dimension: int, seed: int) -> str:
    return str([((seed * 7 + i) % 11) / 11 + 0.01 for i in range(dimension)])


def session_of(tenant: uuid.UUID) -> str:
    """The session the world's writer of `tenant` works in."""
    return f"session-{tenant.hex[:8]}"


def build_world(conn: psycopg.Connection[Any], tenant: uuid.UUID, org: uuid.UUID, user: uuid.UUID, dimension: int,
                scope: str = "shared") -> None:
    """One row or more in every tenant table, written as the application role through memsub's functions.
    `scope` is the scope of one more note packet and of the second semantic memory. The event packet is shared
    (tenant-wide facts and edges come only from shared packets); the rest are l-private."""
    session = session_of(tenant)
    set_context(conn, tenant, org, user, session=session)
    packet = write(conn, {
        "packet_type": "event", "thread_id": str(uuid.uuid4()),
        "payload": {"text": "L9 uses Neo4j"},
        "memory": {"facts": [{"subject": "L9", "predicate": "uses", "object": "Neo4j"}],
                    "relationships": [{"source_entity": "L9", "relationship_type": "uses",
                                       "target_entity": "Neo4j"}],
                    "embeddings": [{"embedding_type": "content", "vector": json.loads(_vector(dimension, 1)),
                                    "chunk_text": "L9 uses Neo4j"}],
                    "reasoning_trace": {"agent_id": "planner", "steps": ["look", "decide"]}}})
    private = write(conn, {
        "packet_type": "note", "scope": "l-private",
        "payload": {"text": "private thought"},
        "memory": {"embeddings": [{"embedding_type": "content", "vector": json.loads(_vector(dimension, 2)),
                                    "chunk_text": "private thought"}],
                    "reasoning_trace": {"agent_id": "planner", "steps": ["ponder"]}}})
    write(conn, {"packet_type": "note", "scope": scope,
                 "payload": {"text": f"a {scope} note"},
                 "memory": {"embeddings": [{"embedding_type": "content", "vector": json.loads(_vector(dimension, 6)),
                                             "chunk_text": "note"}]}})
    packet_id = packet["packet_id"]
    conn.execute("select memsub.record_event('planner', 'observation', '{\"seen\": 1}', %s)", [packet_id])
    conn.execute("select memsub.record_event('planner', 'thought', '{}', %s)", [private["packet_id"]])
    conn.execute("select memsub.store_semantic_memory('planner', %s::vector, '{\"note\": 1}', 'content', "
                 "'l-private')", [_vector(dimension, 3)])
    conn.execute("select memsub.store_semantic_memory('planner', %s::vector, '{\"note\": 2}', 'content', %s)",
                 [_vector(dimension, 4), scope])
    conn.execute("select memsub.apply_world_model_update('insight', '[{\"entity_id\": \"L9\", "
                 "\"entity_type\": \"Concept\"}]')")
    conn.execute("select memsub.take_world_model_snapshot('world')")
    conn.execute("select memsub.record_reflection('lesson', 'cache graph lookups', p_vector => %s::vector)",
                 [_vector(dimension, 5)])
    conn.execute("select memsub.record_task_reflection('task-1', 'success')")
    conn.execute("select memsub.record_summary('thread', 'conversation', 'L9 uses Neo4j', array[%s]::uuid[])",
                 [packet_id])
    access = conn.execute("select access_id from memsub.record_access('packet', %s, 'planner')",
                          [packet_id]).fetchone()
    assert access is not None
    conn.execute("select memsub.record_feedback(%s, true, 'useful')", [access[0]])
    conn.execute("select memsub.record_access('packet', %s, 'planner')", [private["packet_id"]])
    conn.execute("select memsub.session_create(%s)", [session])
    conn.execute("select memsub.session_append_event(%s, '{\"author\": \"user\", \"text\": \"hello\"}')", [session])
    conn.execute("select memsub.session_create(%s)", [f"{session}-deleted"])  # deleted by the admin below
    task = conn.execute("select id from memsub.task_create('research', '{}', %s)", [session]).fetchone()
    assert task is not None
    conn.execute("select memsub.agent_spawn('planner', %s, %s)", [task[0], session])
    conn.execute("select memsub.checkpoint_save(%s, '{\"step\": 1}')", [task[0]])
    conn.execute("select memsub.memory_write(%s, 'style', '\"concise\"')", [f"user:{user}:preferences"])
    conn.execute("select memsub.langgraph_checkpoint_put('thread-1', '', 'c1', null, 'json', '\\x7b7d', '{}')")
    conn.execute("select memsub.langgraph_checkpoint_put_writes('thread-1', '', 'c1', 'task-1', '', '{0}', "
                 "'{messages}', '{json}', '{\\x7b7d}')")
    conn.execute("select memsub.langgraph_store_put('{users,prefs}', 'drink', '{\"v\": \"tea\"}', null, "
                 "'{text}', array['[1, 0, 0]']::vector[])")
    conn.execute("select memsub.agent_session_add_items('conversation-1', "
                 "'[{\"role\": \"user\", \"content\": \"hi\"}]')")
    conn.execute("select * from memsub.adk_session_create('helpdesk', 'alice', 's1', "
                 "'{\"app:motd\": \"hi\", \"user:tier\": \"gold\"}')")
    conn.execute("select memsub.adk_session_append_event('helpdesk', 'alice', 's1', "
                 "'{\"id\": \"e1\", \"timestamp\": 1, \"author\": \"user\"}')")
    conn.execute("select memsub.adk_memory_add('helpdesk', 'alice', 's1', '[{\"event_id\": \"e1\", "
                 "\"content\": {\"parts\": [{\"text\": \"hello\"}]}, \"text\": \"hello\", "
                 "\"embedding\": [1, 0, 0]}]')")
    text = "Plan: ship it."
    conn.execute("select memsub.document_ingest('notes/plan.md', repeat('0', 64), 'md', %s, "
                 "'[{\"start_char\": 0, \"end_char\": 14}]')", [text])
    conn.commit()
    # Expired packets, one shared and one private, purged: their tombstones stay.
    set_context(conn, tenant, org, user, session=session)
    for expired_scope in ("shared", "l-private"):
        write(conn, {"packet_type": "event", "payload": f"expired {expired_scope}", "scope": expired_scope,
                     "timestamp": "2020-01-01T00:00:00Z", "ttl": "2020-01-02T00:00:00Z"})
    conn.commit()
    set_context(conn, tenant, org, user, session=session)
    assert conn.execute("select purged from memsub.purge_expired()").fetchall() == [(2,)]
    conn.commit()
    with psycopg.connect(conn.info.dsn.replace("memsub_test_app", "memsub_test_tenant_admin")) as admin:
        set_context(admin, tenant, org, user, ["tenant_admin"], session)
        admin.execute("select * from memsub.learn_importance()")
        admin.execute("select * from memsub.create_api_key(%s, %s, %s, p_label => 'world')", [tenant, org, user])
        admin.execute("select memsub.session_delete(%s)", [f"{session}-deleted"])
        admin.commit()
    # The per-tenant search statistics come from the maintenance task, run by a platform admin.
    with psycopg.connect(conn.info.dsn.replace("memsub_test_app", "memsub_test_platform_admin")) as platform:
        set_context(platform, tenant, org, user, ["platform_admin"], session)
        platform.execute("select * from memsub.tune_search(p_samples => 2)")
        platform.commit()


def rls_tables(conn: psycopg.Connection[Any]) -> dict[str, set[str]]:
    """Every table with row-level security and its columns. Expectations follow the columns, never the
    policies present, so a dropped policy cannot remove its own check. The partitions of memory_embeddings are
    read through their table (tests/foundation/test_row_security.py shows one read directly gives nothing)."""
    rows = conn.execute("""
        select c.relname, array_agg(a.attname::text)
          from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
         where c.relnamespace = 'memsub'::regnamespace and c.relrowsecurity and not c.relispartition
         group by 1 order by 1""").fetchall()
    return {str(name): set(columns) for name, columns in rows}


def counts(conn: psycopg.Connection[Any], tables: list[str], where: str = "true") -> dict[str, int]:
    parts = [sql.SQL("select {}, count(*) from {} where ").format(sql.Literal(t), sql.Identifier("memsub", t))
             + sql.SQL(where) for t in tables]
    return {str(t): int(n) for t, n in conn.execute(sql.SQL(" union all ").join(parts)).fetchall()}


def check_isolation(db: Any, world: dict[uuid.UUID, tuple[uuid.UUID, uuid.UUID]], other_org: uuid.UUID,
                    other_user: uuid.UUID, scopes: tuple[str, str] = ("shared", "shared")) -> None:
    """Write `world` (tenant -> (org, user)), then read every table as each viewer and compare with the truth."""
    with db.connect() as conn:
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
    with db.connect("app") as conn:
        for (tenant, (org, user)), scope in zip(world.items(), scopes, strict=True):
            build_world(conn, tenant, org, user, dimension, scope)
    tenant_a, tenant_b = world
    org_a, user_a = world[tenant_a]
    with db.connect() as conn:
        columns = rls_tables(conn)
        tables = sorted(columns)
        truth_a = counts(conn, tables, f"tenant_id = '{tenant_a}'")
        truth_b = counts(conn, tables, f"tenant_id = '{tenant_b}'")
        truth_all = counts(conn, tables)
    empty = [t for t in tables if truth_a[t] == 0 or truth_b[t] == 0]
    assert empty == [], f"tables the world does not cover in both tenants: {empty}"

    with db.connect("app") as conn:  # the writer's own context: exactly its tenant's rows
        set_context(conn, tenant_a, org_a, user_a, session=session_of(tenant_a))
        app_tables = [t for t in tables if t not in ADMIN_REPORTS]
        assert counts(conn, app_tables) == {t: truth_a[t] for t in app_tables}
        assert [t for t in ADMIN_REPORTS if conn.execute("select has_table_privilege(%s, 'select')",
                                                         [f"memsub.{t}"]).fetchone() != (False,)] == []

    with db.connect("platform_admin") as conn:
        set_context(conn, None, roles=["platform_admin"])
        assert counts(conn, tables) == truth_all

    with db.connect("tenant_admin") as conn:
        set_context(conn, tenant_a, other_org, other_user, ["tenant_admin"])
        assert counts(conn, tables) == truth_a

    reports = sorted(ADMIN_REPORTS)
    with db.connect("tenant_admin") as conn:  # a tenant admin login in a context without the tenant_admin role
        # (an organization-bound one gets no other): the reports count every organization, so it reads none
        set_context(conn, tenant_a, org_a, user_a, session=session_of(tenant_a))
        assert counts(conn, reports) == dict.fromkeys(reports, 0)

    with db.connect("analyst") as conn:  # analysts read the reports of the tenant they name
        set_context(conn, tenant_a)
        assert counts(conn, reports) == {t: truth_a[t] for t in reports}

    with db.connect("app") as conn:  # the same user, acting in another organization of tenant A, sees none of
        # the first organization's rows: user- and session-level rules cannot stand in for the organization's
        set_context(conn, tenant_a, other_org, user_a, session=session_of(tenant_a))
        org_tables = [t for t in tables if "org_id" in columns[t] and t not in TENANT_WIDE]
        assert org_tables
        assert counts(conn, org_tables, f"org_id = '{org_a}'") == dict.fromkeys(org_tables, 0)

    with db.connect("app") as conn:  # another user of the same organization: no private rows of the first user
        set_context(conn, tenant_a, org_a, other_user, session="elsewhere")
        user_tables = [t for t in tables if {"scope", "user_id"} <= columns[t]]
        assert user_tables
        private = counts(conn, user_tables, f"user_id = '{user_a}' and scope <> 'shared'")
        assert private == dict.fromkeys(user_tables, 0)
        with db.connect() as ground:
            assert all(v > 0 for v in counts(ground, user_tables, f"tenant_id = '{tenant_a}' and "
                                                                 f"scope <> 'shared'").values())


def test_every_tenant_table_isolates_tenants_organizations_and_users(db):
    check_isolation(db, {TENANT_A: (ORG[TENANT_A], USER[TENANT_A]), TENANT_B: (ORG[TENANT_B], USER[TENANT_B])},
                    OTHER_ORG, OTHER_USER)


_ids = st.sampled_from([uuid.UUID(int=n, version=4) for n in range(1, 5)])  # a small pool: collisions happen


@settings(max_examples=10 * soak_factor(), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(orgs=st.lists(_ids, min_size=3, max_size=3, unique=True), users=st.lists(_ids, min_size=3, max_size=3,
                                                                                 unique=True),
       same_org=st.booleans(), same_user=st.booleans(),
       scopes=st.tuples(*[st.sampled_from(get_args(Scope))] * 2))
def test_generated_worlds_isolate_every_tenant_table(db, orgs, users, same_org, same_user, scopes):
    # Tenants are new on every example (rows accumulate in the one database); organization and user ids may be
    # the same in both tenants, which must change nothing.
    tenant_a, tenant_b = uuid.uuid4(), uuid.uuid4()
    world = {tenant_a: (orgs[0], users[0]),
             tenant_b: (orgs[0] if same_org else orgs[1], users[0] if same_user else users[1])}
    check_isolation(db, world, orgs[2], users[2], scopes)
