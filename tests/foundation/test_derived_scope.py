"""What rows derived from a packet or a session show to the other users and organizations of a tenant, as
docs/security.md ("Derived rows") states it: the private content stays private, and what is tenant- or
organization-wide by design shows only ids or what its writer asserted for everyone."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, set_context, write
from layer_helpers import vec

ORG_1 = uuid.UUID("00000000-0000-0000-0001-000000000031")
ORG_2 = uuid.UUID("00000000-0000-0000-0001-000000000032")
ALICE = uuid.UUID("00000000-0000-0000-0002-000000000031")
BOB = uuid.UUID("00000000-0000-0000-0002-000000000032")
CAROL = uuid.UUID("00000000-0000-0000-0002-000000000033")
SECRET = "quinoaplatypus"


def _alice_writes(conn: Any) -> dict[str, Any]:
    set_context(conn, TENANT_A, ORG_1, ALICE, session="alice-s")
    thread = uuid.uuid4()
    private = write(conn, {"packet_type": "diary", "scope": "l-private", "thread_id": str(thread),
                           "payload": {"text": SECRET}, "tags": [SECRET],
                           "memory": {"embeddings": [{"embedding_type": "content", "vector": json.loads(vec(0.3)),
                                                      "chunk_text": f"{SECRET} notes"}],
                                      "reasoning_trace": {"steps": [SECRET]}}})["packet_id"]
    child = write(conn, {"packet_type": "note", "payload": {"text": "a summary for the team"},
                         "lineage": {"parent_ids": [private]},
                         "memory": {"facts": [{"subject": "team", "predicate": "meets", "object": "mondays"}]}}
                  )["packet_id"]
    conn.execute("select memsub.record_task_reflection('task-9', 'success', 'lesson for the organization')")
    conn.commit()
    return {"thread": thread, "private": private, "child": child}


def _reads(conn: Any, made: dict[str, Any]) -> dict[str, Any]:
    found = {}
    for table in ("packet_store", "memory_embeddings", "reasoning_traces", "memory_access_log"):
        found[table] = conn.execute(f"select count(*) from memsub.{table} t "  # noqa: S608
                                    "where to_jsonb(t)::text like %s", [f"%{SECRET}%"]).fetchone()[0]
    found["search"] = conn.execute("select count(*) from memsub.hybrid_search(%s, %s::vector, 10)",
                                   [SECRET, vec(0.3)]).fetchone()[0]
    found["thread"] = conn.execute("select first_packet_id from memsub.packet_threads where thread_id = %s",
                                   [made["thread"]]).fetchall()
    found["get_thread"] = conn.execute("select count(*) from memsub.get_thread(%s)", [made["thread"]]).fetchone()[0]
    found["parents"] = conn.execute("select parent_ids from memsub.packet_store where packet_id = %s",
                                    [made["child"]]).fetchall()
    found["fact"] = conn.execute("select count(*) from memsub.knowledge_facts where subject = 'team'").fetchone()[0]
    found["task_reflection"] = conn.execute("select count(*) from memsub.task_reflections").fetchone()[0]
    return found


def test_derived_rows_keep_the_scope_docs_security_states(db: Any) -> None:
    with db.connect("app") as conn:
        made = _alice_writes(conn)
        set_context(conn, TENANT_A, ORG_1, ALICE, session="alice-s")
        conn.execute("select memsub.hybrid_search(%s, %s::vector, 10, p_record_access => true)", [SECRET, vec(0.3)])
        conn.commit()
        seen = {}
        for name, org, user in [("alice", ORG_1, ALICE), ("bob", ORG_1, BOB), ("carol", ORG_2, CAROL)]:
            set_context(conn, TENANT_A, org, user, session=f"{name}-s")
            seen[name] = _reads(conn, made)
            conn.rollback()
        set_context(conn, TENANT_A, ORG_1, BOB)  # the lineage walk never reaches a packet the reader cannot see
        assert conn.execute("select packet_id from memsub.get_lineage(%s)", [made["child"]]).fetchall() == []
    private = made["private"]
    assert seen["alice"] == {"packet_store": 1, "memory_embeddings": 1, "reasoning_traces": 1,
                             "memory_access_log": 1, "search": 1, "thread": [(private,)], "get_thread": 1,
                             "parents": [([private],)], "fact": 1, "task_reflection": 1}
    # Another user of the organization: no private content. By design it reads the thread's first packet id and
    # the child's parent ids (ids, never content), the tenant-wide fact and the organization's task reflection.
    assert seen["bob"] == {"packet_store": 0, "memory_embeddings": 0, "reasoning_traces": 0,
                           "memory_access_log": 0, "search": 0, "thread": [(private,)], "get_thread": 0,
                           "parents": [([private],)], "fact": 1, "task_reflection": 1}
    # Another organization: the thread's ids and the tenant-wide fact only.
    assert seen["carol"] == {"packet_store": 0, "memory_embeddings": 0, "reasoning_traces": 0,
                             "memory_access_log": 0, "search": 0, "thread": [(private,)], "get_thread": 0,
                             "parents": [], "fact": 1, "task_reflection": 0}


def _session_work_seen(conn: Any) -> dict[str, int]:
    """How many of the session's task, agent and checkpoint rows (each carries SECRET) the context reads."""
    return {table: conn.execute(f"select count(*) from memsub.{table} t "  # noqa: S608
                                "where to_jsonb(t)::text like %s", [f"%{SECRET}%"]).fetchone()[0]
            for table in ("tasks", "agents", "checkpoints")}


def _admin_deletes_alices_session(db: Any, org: uuid.UUID) -> None:
    """A tenant admin (in ``org``'s context) deletes Alice's session alice-s and commits."""
    with db.connect("tenant_admin") as admin:
        set_context(admin, TENANT_A, org, roles=["tenant_admin"])
        assert admin.execute("select memsub.session_delete('alice-s')").fetchone()[0] is True
        admin.commit()


def _creating_alices_session_id_is_refused(conn: Any, org: uuid.UUID, user: uuid.UUID) -> None:
    """A user other than Alice cannot create a session with the id of her deleted session: 23505 naming
    session_id; the transaction is then rolled back."""
    set_context(conn, TENANT_A, org, user, session="alice-s")
    with pytest.raises(psycopg.errors.UniqueViolation) as refused:
        conn.execute("select memsub.session_create('alice-s')")
    assert refused.value.diag.column_name == "session_id"
    conn.rollback()


def test_a_deleted_sessions_tasks_agents_and_checkpoints_stay_its_users(db: Any) -> None:
    """A task, agent and checkpoint made in Alice's session are read where the session is; once an admin deletes
    the session they stay Alice's (and admins'): Bob, another user of her organization, reads none of them, with
    no session in his context or naming the deleted session, and he cannot create a new session with its id
    (23505 naming session_id, 2.52.0). Before 2.50.0 the foreign key set their session_id to NULL and Bob read all
    three (1 each, not 0)."""
    nothing = {"tasks": 0, "agents": 0, "checkpoints": 0}
    everything = {"tasks": 1, "agents": 1, "checkpoints": 1}
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, ALICE, session="alice-s")
        conn.execute("select memsub.session_create('alice-s')")
        task = conn.execute("select id from memsub.task_create('plan', %s::jsonb, 'alice-s')",
                            [json.dumps({"text": SECRET})]).fetchone()[0]
        conn.execute("select memsub.agent_spawn('planner', %s, p_metadata => %s::jsonb)",
                     [task, json.dumps({"text": SECRET})])
        conn.execute("select memsub.checkpoint_save(%s, %s::jsonb)", [task, json.dumps({"text": SECRET})])
        conn.commit()
        set_context(conn, TENANT_A, ORG_1, BOB)
        assert _session_work_seen(conn) == nothing
        conn.rollback()
    _admin_deletes_alices_session(db, ORG_1)
    with db.connect("app") as conn:
        for session in (None, "alice-s"):
            set_context(conn, TENANT_A, ORG_1, BOB, session=session)
            assert _session_work_seen(conn) == nothing, session
            conn.rollback()
        _creating_alices_session_id_is_refused(conn, ORG_1, BOB)  # the id stays the deleted session's
        set_context(conn, TENANT_A, ORG_1, CAROL)
        assert _session_work_seen(conn) == nothing
        conn.rollback()
        set_context(conn, TENANT_A, ORG_1, ALICE)
        assert _session_work_seen(conn) == everything
        conn.rollback()
    with db.connect("tenant_admin") as admin:
        set_context(admin, TENANT_A, ORG_1, roles=["tenant_admin"])
        assert _session_work_seen(admin) == everything


def _alices_session_with_a_note(conn: psycopg.Connection[Any]) -> None:
    """Alice (organization 1) creates session alice-s and writes an entry into its session: namespace."""
    set_context(conn, TENANT_A, ORG_1, ALICE, session="alice-s")
    conn.execute("select memsub.session_create('alice-s')")
    conn.execute("select memsub.memory_write('session:alice-s:notes', 'plan', %s::jsonb)", [json.dumps(SECRET)])
    conn.commit()


def _session_memory_seen(conn: Any, session: str) -> dict[str, int]:
    """What the context reads of a session's session:<id> memory (every entry carries SECRET) and of the session."""
    namespace = f"session:{session}:notes"
    return {
        "sessions": conn.execute("select count(*) from memsub.sessions where id = %s", [session]).fetchone()[0],
        "memory_entries": conn.execute("select count(*) from memsub.memory_entries where namespace = %s",
                                       [namespace]).fetchone()[0],
        "memory_get": conn.execute("select count(*) from memsub.memory_get(%s, 'plan')", [namespace]).fetchone()[0],
        "memory_list": conn.execute("select count(*) from memsub.memory_list(%s)", [namespace]).fetchone()[0],
        "memory_search": conn.execute("select count(*) from memsub.memory_search(%s, p_namespace_prefix => %s)",
                                      [SECRET, namespace]).fetchone()[0],
    }


def _alices_session_memory_write_is_refused(conn: Any, org: uuid.UUID, user: uuid.UUID | None) -> None:
    """A context of ``org`` and ``user`` naming Alice's session writes none of its session: memory: 42501 naming
    namespace, with a message that says why the context's own session id is refused (before, it said the namespace
    "belongs to another session than the context's", which names the context's session); the transaction is then
    rolled back."""
    set_context(conn, TENANT_A, org, user, session="alice-s")
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
        conn.execute("select memsub.memory_write('session:alice-s:notes', 'more', '1')")
    assert refused.value.diag.column_name == "namespace"
    assert "the context's session alice-s is another organization's or was another user's deleted session" \
        in str(refused.value.diag.message_primary), refused.value.diag.message_primary
    conn.rollback()


def test_session_memory_is_read_and_written_only_where_its_session_is_visible(db: Any) -> None:
    """session:<id> memory is read and written by a context naming the session, but only where that session is
    visible: a user of another organization of the tenant who names Alice's session (which he cannot see) reads
    none of its memory and writes none (42501 naming namespace), as he neither reads nor writes the session's
    state. Before 2.50.0 the memory policies compared the namespace with the context's session id alone, and
    Carol read Alice's entry (1 row in each read, not 0) and wrote into her namespace. Another user of Alice's
    organization naming the session acts in it, as in its state; a session id that no session has still names a
    namespace of the contexts naming it."""
    every = {"sessions": 1, "memory_entries": 1, "memory_get": 1, "memory_list": 1, "memory_search": 1}
    with db.connect("app") as conn:
        _alices_session_with_a_note(conn)
        set_context(conn, TENANT_A, ORG_2, CAROL, session="alice-s")
        assert _session_memory_seen(conn, "alice-s") == dict.fromkeys(every, 0)
        conn.rollback()
        _alices_session_memory_write_is_refused(conn, ORG_2, CAROL)
        set_context(conn, TENANT_A, ORG_1, BOB, session="alice-s")
        assert _session_memory_seen(conn, "alice-s") == every
        conn.rollback()
        set_context(conn, TENANT_A, ORG_2, CAROL, session="no-such-session")
        conn.execute("select memsub.memory_write('session:no-such-session:notes', 'plan', %s::jsonb)",
                     [json.dumps(SECRET)])
        assert _session_memory_seen(conn, "no-such-session") == {**every, "sessions": 0}
        conn.rollback()
    with db.connect() as superuser:
        written = superuser.execute("select namespace, key from memsub.memory_entries").fetchall()
    assert written == [("session:alice-s:notes", "plan")]


def test_a_deleted_sessions_memory_stays_its_users(db: Any) -> None:
    """Once an admin deletes Alice's session, its session:<id> memory entries stay (the seed keeps a deleted
    session's data) and stay Alice's and admins': no other context naming the deleted id reads or writes them (Bob
    of her organization, Carol of another, a context without a user), and no other user can create a session with
    that id to reach them (23505 naming session_id); Alice may. The record of the deletion
    (memsub.deleted_sessions) is read by Alice and admins alone. Before 2.52.0 no session had the id any more, so
    the id named the namespace of every context naming it: Bob and Carol read the entry (1 row in each read, not
    0) and wrote into the namespace."""
    every = {"sessions": 0, "memory_entries": 1, "memory_get": 1, "memory_list": 1, "memory_search": 1}
    with db.connect("app") as conn:
        _alices_session_with_a_note(conn)
    _admin_deletes_alices_session(db, ORG_2)
    with db.connect("app") as conn:
        for org, user in ((ORG_1, BOB), (ORG_2, CAROL), (ORG_1, None)):
            set_context(conn, TENANT_A, org, user, session="alice-s")
            assert _session_memory_seen(conn, "alice-s") == dict.fromkeys(every, 0), user
            assert conn.execute("select count(*) from memsub.deleted_sessions").fetchone()[0] == 0, user
            conn.rollback()
            _alices_session_memory_write_is_refused(conn, org, user)
        for org, user in ((ORG_1, BOB), (ORG_2, CAROL)):
            _creating_alices_session_id_is_refused(conn, org, user)
        set_context(conn, TENANT_A, ORG_1, ALICE, session="alice-s")
        assert _session_memory_seen(conn, "alice-s") == every
        assert conn.execute("select session_id, user_id, org_id from memsub.deleted_sessions").fetchall() \
            == [("alice-s", ALICE, ORG_1)]
        conn.execute("select memsub.memory_write('session:alice-s:notes', 'more', '1')")
        conn.rollback()
        set_context(conn, TENANT_A, ORG_1, ALICE, session="alice-s")  # her own id she may use again
        conn.execute("select memsub.session_create('alice-s')")
        assert _session_memory_seen(conn, "alice-s") == {**every, "sessions": 1}
        conn.rollback()
    with db.connect("tenant_admin") as admin:
        set_context(admin, TENANT_A, ORG_2, roles=["tenant_admin"], session="alice-s")
        assert _session_memory_seen(admin, "alice-s") == every
    with db.connect() as superuser:
        written = superuser.execute("select namespace, key from memsub.memory_entries").fetchall()
    assert written == [("session:alice-s:notes", "plan")]


def test_audit_rows_naming_a_session_namespace_are_read_where_its_memory_is(db: Any) -> None:
    """An audit row naming a session:<id> namespace (its key, the operation) is read where that memory is
    (memsub._context_session_namespace): an admin context without a user or organization writes into Alice's
    session's namespace, and its audit row, of no user and no organization, passes the actor and organization
    rules for every context without a user. A service of another organization naming the session reads none of
    it, one of Alice's organization reads it while the session lives, and none once it is deleted. Before, the
    policy audit_namespace_visibility compared the namespace with the context's session id alone: the other
    organization's service, and after the deletion Alice's organization's, read the row (1, not 0)."""
    named = "select count(*) from memsub.audit where namespace like 'session:alice-s%'"
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, ALICE, session="alice-s")
        conn.execute("select memsub.session_create('alice-s')")
        conn.commit()
    with db.connect("tenant_admin") as admin:
        set_context(admin, TENANT_A, roles=["tenant_admin"], session="alice-s")
        admin.execute("select memsub.memory_write('session:alice-s:notes', 'plan', %s::jsonb)", [json.dumps(SECRET)])
        admin.commit()

    def seen(org: uuid.UUID) -> int:
        with db.connect("app") as conn:
            set_context(conn, TENANT_A, org, session="alice-s")
            return int(conn.execute(named).fetchone()[0])

    assert (seen(ORG_1), seen(ORG_2)) == (1, 0)
    with db.connect("tenant_admin") as admin:
        set_context(admin, TENANT_A, roles=["tenant_admin"])
        admin.execute("select memsub.session_delete('alice-s')")
        admin.commit()
        set_context(admin, TENANT_A, roles=["tenant_admin"])
        assert admin.execute(named).fetchone()[0] == 1
    assert (seen(ORG_1), seen(ORG_2)) == (0, 0)


def test_an_event_or_trace_is_as_private_as_the_packet_it_is_recorded_with(db: Any) -> None:
    """An agent event or reasoning trace takes the scope of the packet it is recorded with; recorded without one it
    is shared, read by the writer's organization as a packet written without a scope is, whatever session the
    context is in (record_event and record_reasoning_trace have no scope argument of their own). A private event
    is recorded with a private packet."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, ALICE, session="alice-s")
        private = write(conn, {"packet_type": "diary", "scope": "l-private", "payload": {"text": "x"}})["packet_id"]
        for label, packet in (("with-private-packet", private), ("without-packet", None)):
            conn.execute("select memsub.record_event('planner', %s, %s::jsonb, %s)",
                         [label, json.dumps({"text": SECRET}), packet])
            conn.execute("select memsub.record_reasoning_trace('planner', %s, %s::jsonb)",
                         [packet, json.dumps([label, SECRET])])
        conn.commit()
        seen = {}
        for name, org, user in [("alice", ORG_1, ALICE), ("bob", ORG_1, BOB), ("carol", ORG_2, CAROL)]:
            set_context(conn, TENANT_A, org, user, session=f"{name}-s")
            seen[name] = (
                sorted(r[0] for r in conn.execute("select event_type from memsub.agent_memory_events")),
                sorted(r[0] for r in conn.execute("select steps ->> 0 from memsub.reasoning_traces")),
            )
            conn.rollback()
    both = ["with-private-packet", "without-packet"]
    assert seen == {"alice": (both, both), "bob": (["without-packet"], ["without-packet"]), "carol": ([], [])}
