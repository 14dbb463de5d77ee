"""Row-level security of seed 001's tables: tenant isolation, shown to depend on the policies."""

from __future__ import annotations

import json
import uuid

import pytest

from helpers import TENANT_A, TENANT_B, as_tenant_admin, set_context
from session_helpers import ALICE, BOB, as_user, expect_error, ground_truth, new_session, one, remember_short_term, rows

TABLES = ["sessions", "tasks", "agents", "memory_entries", "audit", "checkpoints", "document_index"]


def populate(db) -> None:
    """One row or more in every table, for tenant A (alice, session s1)."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE, state={"session:s1:phase": 1})
        as_user(conn, ALICE, "s1")
        task = one(conn, "select * from memsub.task_create('job', '{}', 's1')")
        one(conn, "select memsub.agent_spawn('worker', %s)", [task["id"]])
        one(conn, "select memsub.checkpoint_save(%s, %s::jsonb)", [task["id"], json.dumps({"at": 1})])
        one(conn, "select memsub.memory_write('session:s1:progress', 'step', '1')")
        one(conn, "select memsub.document_index_put('docs/a.md', "
                  "array_fill(1.0::float8, array[memsub.vector_dimension()]))")
        conn.commit()


def visible(db, table: str, tenant) -> int:
    with db.connect("app") as conn:
        as_user(conn, ALICE, "s1", tenant=tenant)
        return int(one(conn, f"select count(*) as n from memsub.{table}")["n"])  # noqa: S608


@pytest.mark.parametrize("table", TABLES)
def test_tenant_isolation_and_its_dependence_on_row_security(db, table):
    populate(db)
    stored = ground_truth(db, f"select count(*) as n from memsub.{table}")[0]["n"]  # noqa: S608
    assert stored > 0
    assert visible(db, table, TENANT_A) == stored
    assert visible(db, table, TENANT_B) == 0
    # Same user and session ids in another tenant see nothing; without row-level security they would.
    with db.connect() as superuser:
        superuser.execute(f"alter table memsub.{table} disable row level security")
        superuser.commit()
    assert visible(db, table, TENANT_B) == stored


@pytest.mark.parametrize("table", TABLES)
def test_tenant_isolation_policy_is_what_grants_access(db, table):
    populate(db)
    with db.connect() as superuser:
        superuser.execute(f"drop policy tenant_isolation on memsub.{table}")
        superuser.commit()
    assert visible(db, table, TENANT_A) == 0


@pytest.mark.parametrize("table", TABLES)
def test_the_application_cannot_write_tables_directly(db, table):
    populate(db)
    with db.connect("app") as conn:
        as_user(conn, ALICE, "s1")
        expect_error(conn, "42501", None, f"update memsub.{table} set tenant_id = tenant_id")  # noqa: S608
        as_user(conn, ALICE, "s1")
        expect_error(conn, "42501", None, f"delete from memsub.{table}")  # noqa: S608


def test_audit_rows_of_one_user_are_hidden_from_another(db):
    populate(db)
    other = "c0ffee00-0000-0000-0000-000000000001"
    with db.connect("app") as conn:
        as_user(conn, other, "s1")
        assert one(conn, "select count(*) as n from memsub.audit")["n"] == 0
    with db.connect() as superuser:
        superuser.execute("drop policy audit_actor_visibility on memsub.audit")
        superuser.commit()
    with db.connect("app") as conn:
        as_user(conn, other, "s1")
        assert one(conn, "select count(*) as n from memsub.audit")["n"] > 0


def test_audit_rows_naming_a_user_or_session_namespace_are_visible_where_its_memory_is(db):
    """Tenant maintenance (promotion, consolidation) runs in an admin context without a user, and so did a
    session's own writes without one: their audit rows, which name the key and the user: or session: namespace
    of the memory they changed, were visible to every context without a user, another organization's service
    included, and another session's. They are visible where the memory itself is: its user, its session, admins.
    The policy audit_namespace_visibility guards it; dropped, the service reads them again."""
    notes = f"user:{ALICE}:plans"
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        remember_short_term(conn, notes, "merger", "draft", "merger with acme")
        conn.commit()
        as_user(conn, None, "s1")
        one(conn, "select memsub.memory_write('session:s1:scratch', 'idea', '1')")
        conn.commit()
    as_tenant_admin(db, "select * from memsub.consolidate_memories()",
                    "select * from memsub.memory_maintenance(p_threshold => 0.5)")
    named = ("select operation, namespace from memsub.audit where namespace like 'user:%%' "
             "or namespace like 'session:%%' order by id")

    def seen(login: str, user: object, session: str | None, roles: tuple[str, ...] = ()) -> list[tuple[str, str]]:
        with db.connect(login) as conn:
            set_context(conn, TENANT_A, uuid.uuid4() if login == "app" and user is None else None, user,
                        roles=roles, session=session)
            return [(r["operation"], r["namespace"]) for r in rows(conn, named)]

    admins = seen("tenant_admin", None, None, ("tenant_admin",))
    assert {(op, ns) for op, ns in admins} >= {("memory_consolidate", notes), ("memory_promote", notes),
                                               ("memory_write", "session:s1:scratch")}
    assert seen("app", None, None) == []  # another organization's service
    assert seen("app", None, "s2") == []  # another session
    assert seen("app", None, "s1") == [("memory_write", "session:s1:scratch")]
    assert set(seen("app", ALICE, None)) == {("memory_write", notes)}
    with db.connect() as superuser:
        superuser.execute("drop policy audit_namespace_visibility on memsub.audit")
        superuser.commit()
    assert ("memory_promote", notes) in seen("app", None, None)


def test_a_checkpoint_holding_a_session_state_is_visible_where_the_session_is(db):
    """A checkpoint copies its session's state, and a session is visible to its user, to the context naming it and
    to admins (policy session_access): the copy must not show that state to another user of the tenant, by reading
    the table or by restoring it. The policy checkpoint_session_access guards it; dropped, Bob reads Alice's state."""
    other = "c0ffee00-0000-0000-0000-000000000001"
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE, state={f"user:{ALICE}:secret": "alice-private"})
        as_user(conn, ALICE, "s1")
        task = one(conn, "select id from memsub.task_create('job', '{}', 's1')")["id"]
        checkpoint = one(conn, "select id from memsub.checkpoint_save(%s, '{\"at\": 1}')", [task])["id"]
        conn.commit()
        seen = {}
        for name, user, session in [("alice", ALICE, None), ("context", other, "s1"), ("other", other, None)]:
            as_user(conn, user, session)
            seen[name] = rows_of(conn)
            conn.rollback()
        as_user(conn, other)
        expect_error(conn, "P0002", "checkpoint_id", "select memsub.checkpoint_restore(%s)", [checkpoint])
    secret = {f"user:{ALICE}:secret": "alice-private"}
    assert seen == {"alice": [secret], "context": [secret], "other": []}
    with db.connect("tenant_admin") as conn:
        as_user(conn, other, roles=["tenant_admin"])
        assert rows_of(conn) == [secret]


def rows_of(conn) -> list[object]:
    return [r[0] for r in conn.execute("select session_state from memsub.checkpoints").fetchall()]


def test_a_context_of_another_user_does_not_terminate_a_session_holding_its_users_keys(db):
    """Termination writes the session's user: keys into its user's memory, which only that user's context (or an
    admin one) writes. A context of another user, or of none, that names the session was refused by the memory
    write inside the termination, naming ``namespace``, which is no argument of session_terminate; it is refused
    up front (42501, field session_id), and the session, its state and its open task are left as they were."""
    mine = f"user:{ALICE}:prefs:tone"
    with db.connect("app") as alice:
        new_session(alice, "s1", ALICE, state={mine: "formal"})
        as_user(alice, ALICE, "s1")
        one(alice, "select memsub.task_create('job', '{}', 's1')")
        alice.commit()
    for user in (BOB, None):
        with db.connect("app") as other:
            as_user(other, user, "s1")
            error = expect_error(other, "42501", "session_id",
                                 "select * from memsub.session_terminate('s1', p_cancel_open_tasks => true)")
            assert "s1" in str(error) and "user:" in str(error), error
    stored = ground_truth(db, "select status, state from memsub.sessions where id = 's1'")[0]
    assert stored == {"status": "active", "state": {mine: "formal"}}
    assert ground_truth(db, "select status from memsub.tasks where session_id = 's1'") == [{"status": "pending"}]
    assert ground_truth(db, "select count(*) as n from memsub.memory_entries") == [{"n": 0}]
    # Without user: keys in its state the session is the context's to end; its own user ends one that has them.
    with db.connect("app") as alice:
        as_user(alice, ALICE, "s1")
        ended = one(alice, "select * from memsub.session_terminate('s1', p_cancel_open_tasks => true)")
        assert (ended["status"], ended["migrated_keys"]) == ("terminated", 1)
        alice.commit()
    with db.connect("app") as alice:
        new_session(alice, "s2", ALICE)
    with db.connect("app") as other:
        as_user(other, BOB, "s2")
        assert one(other, "select * from memsub.session_terminate('s2')")["status"] == "terminated"


def test_a_context_naming_another_users_session_writes_none_of_that_users_state(db):
    """A context whose session_id names a session sees it (policy session_access) and may act in it, but the
    session's user: keys are that user's memory (session_terminate writes them into user:<id> memory entries).
    A context of another user, or of no user, that named Alice's session wrote her user: keys; the write is
    refused (42501, field state_delta) and Alice's state is left as it was. The session's own keys stay
    writable from the context naming it."""
    mine = f"user:{ALICE}:prefs:tone"
    with db.connect("app") as alice:
        new_session(alice, "s1", ALICE, state={mine: "formal"})
    for user in (BOB, None):
        with db.connect("app") as other:
            for call in ("select memsub.session_merge_state('s1', %s::jsonb)",
                         "select memsub.session_append_event('s1', '{}'::jsonb, %s::jsonb)"):
                as_user(other, user, "s1")
                error = expect_error(other, "42501", "state_delta", call, [json.dumps({mine: "rude"})])
                assert "s1" in str(error), error
                as_user(other, user, "s1")
                expect_error(other, "42501", "state_delta", call, [json.dumps({mine: None})])
            as_user(other, user, "s1")
            one(other, "select memsub.session_merge_state('s1', %s::jsonb)", [json.dumps({"session:s1:step": 2})])
            other.commit()
    stored = ground_truth(db, "select state, event_count from memsub.sessions where id = 's1'")[0]
    assert stored["state"] == {mine: "formal", "session:s1:step": 2}
    assert stored["event_count"] == 0
    # Alice herself still writes her user: keys in her session, and her state reads as she left it.
    with db.connect("app") as alice:
        as_user(alice, ALICE, "s1")
        one(alice, "select memsub.session_merge_state('s1', %s::jsonb)", [json.dumps({mine: "casual"})])
        alice.commit()
        as_user(alice, ALICE)
        assert one(alice, "select state from memsub.sessions where id = 's1'")["state"][mine] == "casual"


def test_the_tasks_and_agents_of_a_session_are_visible_where_the_session_is(db):
    """A task or agent created in a session carries that session's work (its payload, result, error, an agent's
    metadata), and a session is visible to its user, to the context naming it and to admins: another user of the
    organization reads none of them, nor acts on them. A task or agent outside any session stays the
    organization's. The policies task_session_access and agent_session_access guard it; dropped, Bob reads them."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        task = one(conn, "select id from memsub.task_create('diagnose', %s::jsonb, 's1')",
                   [json.dumps({"symptom": "alice-private"})])["id"]
        one(conn, "select memsub.agent_spawn('nurse', %s, 's1', '{\"about\": \"alice-private\"}')", [task])
        one(conn, "select memsub.task_set_status(%s, 'running')", [task])
        one(conn, "select memsub.task_set_status(%s, 'completed', '{\"finding\": \"alice-private\"}')", [task])
        loose = one(conn, "select id from memsub.task_create('index', '{}')")["id"]
        one(conn, "select memsub.agent_spawn('indexer', %s)", [loose])
        conn.commit()
        seen = {}
        for name, user, session in [("alice", ALICE, None), ("context", BOB, "s1"), ("bob", BOB, "s2")]:
            as_user(conn, user, session)
            seen[name] = (sorted(r[0] for r in conn.execute("select id from memsub.tasks")),
                          sorted(r[0] for r in conn.execute("select name from memsub.agents")))
            conn.rollback()
        as_user(conn, BOB, "s2")
        expect_error(conn, "P0002", "task_id", "select memsub.task_set_status(%s, 'failed')", [task])
    assert seen == {"alice": ([task, loose], ["indexer", "nurse"]), "context": ([task, loose], ["indexer", "nurse"]),
                    "bob": ([loose], ["indexer"])}
    with db.connect("tenant_admin") as conn:
        as_user(conn, BOB, roles=["tenant_admin"])
        assert conn.execute("select count(*) from memsub.tasks").fetchone() == (2,)
        assert conn.execute("select count(*) from memsub.agents").fetchone() == (2,)
    for table, policy in [("tasks", "task_session_access"), ("agents", "agent_session_access")]:
        with db.connect() as superuser:
            superuser.execute(f"drop policy {policy} on memsub.{table}")
            superuser.commit()
        with db.connect("app") as conn:
            as_user(conn, BOB, "s2")
            assert conn.execute(f"select count(*) from memsub.{table}").fetchone() == (2,)  # noqa: S608
