"""Tasks, agents, checkpoints and the document index (seed 001 sections 1 and 4.1)."""

from __future__ import annotations

import json
import uuid

from helpers import TENANT_A, set_context
from session_helpers import ALICE, BOB, as_user, expect_error, ground_truth, new_session, one


def test_task_flow_with_subtasks_agents_and_actor_audit(db):
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        parent = one(
            conn, "select * from memsub.task_create('design', %s::jsonb, 's1')", [json.dumps({"doc": 1})]
        )
        child = one(conn, "select * from memsub.task_create('validate', '{}', 's1', %s)", [parent["id"]])
        assert (parent["status"], child["parent_task_id"], child["session_id"]) == (
            "pending",
            parent["id"],
            "s1",
        )
        agent = one(conn, "select * from memsub.agent_spawn('validator', %s)", [child["id"]])
        assert (agent["session_id"], agent["task_id"]) == ("s1", child["id"])
        conn.commit()

        as_user(conn, ALICE, "s1")
        one(conn, "select memsub.set_actor(%s)", [agent["id"]])
        one(conn, "select memsub.memory_write('session:s1:progress', 'step', '3')")
        one(conn, "select memsub.task_set_status(%s, 'running')", [child["id"]])
        done = one(
            conn, "select * from memsub.task_set_status(%s, 'completed', '{\"ok\": true}')", [child["id"]]
        )
        conn.commit()
        assert done["status"] == "completed" and done["result"] == {"ok": True} and done["completed_at"]

        as_user(conn, ALICE, "s1")
        expect_error(conn, "55000", "status", "select memsub.task_set_status(%s, 'failed')", [child["id"]])
        for call, column, sqlstate in [
            ("task_create('t', '{}', 'missing')", "session_id", "23503"),
            ("task_create('t', '{}', null, 999999)", "parent_task_id", "23503"),
            ("task_create(' ')", "type", "22023"),
            ("task_create(null)", "type", "23502"),
            ("task_set_status(999999, 'running')", "task_id", "P0002"),
            (f"task_set_status({parent['id']}, 'done')", "status", "22023"),
            ("agent_spawn('a', 999999)", "task_id", "23503"),
            (f"agent_spawn('', {parent['id']})", "name", "22023"),
            ("set_actor('00000000-0000-0000-0000-000000000009')", "agent_id", "23503"),
        ]:
            as_user(conn, ALICE, "s1")
            expect_error(conn, sqlstate, column, f"select memsub.{call}")

    audit = ground_truth(db, "select operation, agent_id, task_id from memsub.audit order by id")
    assert [a["operation"] for a in audit] == [
        "session_create",
        "task_create",
        "task_create",
        "agent_spawn",
        "memory_write",
        "task_status",
        "task_status",
    ]
    write = audit[4]
    assert (write["agent_id"], write["task_id"]) == (agent["id"], child["id"])
    assert ground_truth(db, "select count(*) as n from memsub.tasks") == [{"n": 2}]


def test_checkpoint_save_and_restore(db):
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE, state={"session:s1:phase": "one"})
        as_user(conn, ALICE, "s1")
        task = one(conn, "select * from memsub.task_create('long job', '{}', 's1')")
        first = one(
            conn,
            "select * from memsub.checkpoint_save(%s, %s::jsonb, 'start')",
            [task["id"], json.dumps({"cursor": 10})],
        )
        one(conn, 'select memsub.session_merge_state(\'s1\', \'{"session:s1:phase": "two", "temp:x": 1}\')')
        second = one(
            conn,
            "select * from memsub.checkpoint_save(%s, %s::jsonb)",
            [task["id"], json.dumps({"cursor": 20})],
        )
        one(conn, "select memsub.session_merge_state('s1', '{\"session:s1:phase\": \"three\"}')")
        conn.commit()
        assert (first["sequence"], second["sequence"]) == (1, 2)
        assert first["session_state"] == {"session:s1:phase": "one"} and first["session_id"] == "s1"

        as_user(conn, ALICE, "s1")
        restored = one(conn, "select * from memsub.checkpoint_restore(%s)", [first["id"]])
        conn.commit()
        assert restored["state"] == {"cursor": 10}
        as_user(conn, ALICE, "s1")
        assert one(conn, "select state from memsub.sessions where id = 's1'") == {
            "state": {"session:s1:phase": "one"}
        }
        expect_error(conn, "P0002", "checkpoint_id", "select memsub.checkpoint_restore(gen_random_uuid())")
        as_user(conn, ALICE, "s1")
        expect_error(conn, "23503", "task_id", "select memsub.checkpoint_save(999999, '{}')")
        as_user(conn, ALICE, "s1")
        expect_error(conn, "23502", "state", "select memsub.checkpoint_save(%s, null)", [task["id"]])
    audit = ground_truth(
        db, "select operation, details from memsub.audit where operation like 'checkpoint%%' order by id"
    )
    assert [a["operation"] for a in audit] == ["checkpoint_save", "checkpoint_save", "checkpoint_restore"]
    assert audit[-1]["details"]["session_state_restored"] is True


def test_document_index_entries(db):
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        dimension = one(conn, "select memsub.vector_dimension() as n")["n"]
        first = one(
            conn,
            "select * from memsub.document_index_put(%s, %s, %s::jsonb)",
            ["design_docs/phase1_design/schema.md", [0.1] * dimension, json.dumps({"title": "Schema"})],
        )
        again = one(
            conn,
            "select * from memsub.document_index_put(%s, %s, %s::jsonb)",
            ["design_docs/phase1_design/schema.md", [0.5] * dimension, json.dumps({"title": "v2"})],
        )
        assert first["id"] == again["id"] and again["embedding"] == [0.5] * dimension
        got = one(conn, "select * from memsub.document_index_get('design_docs/phase1_design/schema.md')")
        assert got["metadata"] == {"title": "v2"}
        conn.commit()
        as_user(conn, ALICE)
        expect_error(conn, "22023", "file_path", "select memsub.document_index_put(' ')")
        as_user(conn, ALICE)
        expect_error(
            conn, "22023", "embedding", "select memsub.document_index_put('f', '{}'::double precision[])"
        )
        as_user(conn, ALICE)
        expect_error(conn, "22023", "metadata", "select memsub.document_index_put('f', null, '1')")
    assert ground_truth(db, "select vector_dims(embedding) as dims from memsub.document_index") == [
        {"dims": dimension}
    ]
    assert ground_truth(
        db, "select count(*) as n from memsub.audit where operation = 'document_index_put'"
    ) == [{"n": 2}]


ORG_X = "0000000a-0000-0000-0000-00000000000a"
ORG_Y = "0000000b-0000-0000-0000-00000000000b"


def test_checkpoints_of_one_task_from_two_organizations_are_numbered_in_one_sequence(db):
    """A tenant-wide task is checkpointed from two organizations: each sees only its own checkpoints, and the
    sequence is still the task's, 1 then 2 (it was counted over the caller's rows only, so the second organization
    hit the unique key with a raw 23505)."""
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        task = one(conn, "select id from memsub.task_create('t')")["id"]
        conn.commit()
        sequences = []
        for org in (ORG_X, ORG_Y):
            set_context(conn, TENANT_A, org=org, user=ALICE)
            sequences.append(one(conn, "select sequence from memsub.checkpoint_save(%s, '{}')", [task])["sequence"])
            conn.commit()
    assert sequences == [1, 2]


def test_a_session_with_an_open_task_in_another_organization_does_not_terminate(db):
    """Its open tasks keep a session from terminating, whichever organization holds them; one the caller cannot
    see cannot be cancelled by it either (55000 naming session_id), and the session stays active."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        set_context(conn, TENANT_A, org=ORG_X, user=ALICE, session="s1")
        conn.execute("select memsub.task_create('t', '{}', 's1')")
        conn.commit()
        for cancel in (False, True):
            as_user(conn, ALICE, "s1")
            expect_error(conn, "55000", "session_id", "select * from memsub.session_terminate('s1', "
                         "p_cancel_open_tasks => %s)", [cancel])
    assert ground_truth(db, "select status from memsub.sessions") == [{"status": "active"}]
    assert ground_truth(db, "select status from memsub.tasks") == [{"status": "pending"}]


def test_an_actor_written_by_hand_is_refused_by_name(db):
    """The acting agent and task count only as memsub.set_actor wrote them, in this transaction's context. Written
    by hand with set_config they are refused (42501 naming agent_id or task_id), whether they name another
    organization's agent and task, which set_actor refuses, or no agent at all: no audited write goes through and
    no audit row names them."""
    tenant, org_a, org_b, user_a, user_b = (uuid.uuid4() for _ in range(5))
    with db.connect("app") as conn:
        set_context(conn, tenant, org=org_a, user=user_a)
        task = one(conn, "select * from memsub.task_create('build')")["id"]
        agent = one(conn, "select * from memsub.agent_spawn('planner', %s)", [task])["id"]
        conn.commit()
        set_context(conn, tenant, org=org_b, user=user_b)
        expect_error(conn, "23503", "agent_id", "select memsub.set_actor(%s)", [agent])
        write = "select memsub.memory_write(%s, 'k', '1')"
        for forged, column in [({"agent_id": agent, "task_id": task}, "agent_id"),
                               ({"agent_id": uuid.uuid4()}, "agent_id"), ({"task_id": task}, "task_id")]:
            set_context(conn, tenant, org=org_b, user=user_b)
            for name, value in forged.items():
                conn.execute("select set_config(%s, %s, true)", [f"memsub.{name}", str(value)])
            expect_error(conn, "42501", column, write, [f"user:{user_b}"])
            set_context(conn, tenant, org=org_b, user=user_b)
            for name, value in forged.items():
                conn.execute("select set_config(%s, %s, true)", [f"memsub.{name}", str(value)])
            expect_error(conn, "42501", column, f"select memsub.current_{column}()")
        # Changed by hand after set_actor, or outliving the context set_actor was called in: refused too.
        set_context(conn, tenant, org=org_a, user=user_a)
        conn.execute("select memsub.set_actor(%s)", [agent])
        conn.execute("select set_config('memsub.task_id', '999999', true)")
        expect_error(conn, "42501", "agent_id", write, [f"user:{user_a}"])
        set_context(conn, tenant, org=org_a, user=user_a)
        conn.execute("select memsub.set_actor(%s)", [agent])
        set_context(conn, tenant, org=org_b, user=user_b)
        expect_error(conn, "42501", "agent_id", write, [f"user:{user_b}"])
        # set_actor's own actor, in the same context set again (as the client does before each call), counts.
        set_context(conn, tenant, org=org_a, user=user_a)
        conn.execute("select memsub.set_actor(%s)", [agent])
        set_context(conn, tenant, org=org_a, user=user_a)
        assert one(conn, "select memsub.current_agent_id() as a, memsub.current_task_id() as t") == {
            "a": agent, "t": task}
        conn.execute(write, [f"user:{user_a}"])
        conn.commit()
    rows = ground_truth(db, "select org_id, agent_id, task_id, operation from memsub.audit where tenant_id = %s"
                            " and operation = 'memory_write'", [tenant])
    assert rows == [{"org_id": org_a, "agent_id": agent, "task_id": task, "operation": "memory_write"}]


def test_no_agent_is_spawned_into_a_session_that_is_not_active(db):
    """A terminated session takes no more events, tasks or links, and no agent either: named (the orphan task's
    agent) or inherited (the task's own session), the spawn is refused (55000 naming session_id) and writes no
    agent and no audit row."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        new_session(conn, "s2", ALICE)
        as_user(conn, ALICE, "s1")
        task = one(conn, "select id from memsub.task_create('t', '{}', 's1')")["id"]
        orphan = one(conn, "select id from memsub.task_create('o')")["id"]
        one(conn, "select * from memsub.task_set_status(%s, 'completed')", [task])
        one(conn, "select * from memsub.session_terminate('s1')")
        conn.commit()
        for call, args in [("agent_spawn('a', %s)", [task]), ("agent_spawn('a', %s, 's1')", [orphan]),
                           ("agent_spawn('a', %s, 's1')", [task])]:
            as_user(conn, ALICE, "s2")
            expect_error(conn, "55000", "session_id", f"select memsub.{call}", args)
        as_user(conn, ALICE, "s2")
        assert one(conn, "select session_id from memsub.agent_spawn('a', %s, 's2')", [orphan]) == {
            "session_id": "s2"}
        conn.commit()
    assert ground_truth(db, "select session_id from memsub.agents") == [{"session_id": "s2"}]
    assert len(ground_truth(db, "select 1 from memsub.audit where operation = 'agent_spawn'")) == 1


def test_a_checkpoint_keeps_its_tasks_session_whoever_saves_it(db):
    """A task of Alice's session is visible where the session is (policy task_session_access): another user whose
    context names the session saves a checkpoint of it, still linked to that session (and audited with it); one
    whose context does not cannot see the task at all (23503, as for a task that does not exist)."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE, state={"session:s1:phase": "one"})
        as_user(conn, ALICE, "s1")
        task = one(conn, "select id from memsub.task_create('t', '{}', 's1')")["id"]
        conn.commit()
        as_user(conn, BOB)
        expect_error(conn, "23503", "task_id", "select memsub.checkpoint_save(%s, '{}')", [task])
        as_user(conn, BOB, "s1")
        saved = one(conn, "select session_id, session_state from memsub.checkpoint_save(%s, '{}')", [task])
        conn.commit()
    assert saved == {"session_id": "s1", "session_state": {"session:s1:phase": "one"}}
    assert ground_truth(db, "select session_id from memsub.audit where operation = 'checkpoint_save'") == [
        {"session_id": "s1"}]


def test_a_missing_task_or_checkpoint_id_is_bad_input_not_an_unknown_one(db):
    """NULL for the task or checkpoint acted on is a missing argument (23502 naming it), as a NULL session_id is,
    not a task or checkpoint that does not exist (P0002 / 23503); nothing is written."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        for call, column in [
            ("task_set_status(null, 'running')", "task_id"),
            ("task_link_session(null, 's1')", "task_id"),
            ("agent_spawn('a', null)", "task_id"),
            ("checkpoint_save(null, '{}')", "task_id"),
            ("checkpoint_restore(null)", "checkpoint_id"),
        ]:
            as_user(conn, ALICE, "s1")
            expect_error(conn, "23502", column, f"select memsub.{call}")
    assert ground_truth(db, "select count(*) as n from memsub.tasks") == [{"n": 0}]
    assert ground_truth(db, "select count(*) as n from memsub.agents") == [{"n": 0}]
    assert ground_truth(db, "select count(*) as n from memsub.checkpoints") == [{"n": 0}]


def test_a_task_type_agent_name_and_checkpoint_label_are_stored_in_their_matching_form(db):
    """Text that names something is stored trimmed, each run of whitespace one space (docs/errors.md), so a task
    type or an agent name typed with stray whitespace is the same name when read back or filtered on; a blank
    optional label is no label, and a missing agent name is a missing field (23502)."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        task = one(conn, "select id, type from memsub.task_create(e'  design \\t doc\\n')")
        agent = one(conn, "select name from memsub.agent_spawn(e' val  idator ', %s)", [task["id"]])
        labelled = one(conn, "select label from memsub.checkpoint_save(%s, '{}', e' first \\n step ')", [task["id"]])
        blank = one(conn, "select label from memsub.checkpoint_save(%s, '{}', e' \\t ')", [task["id"]])
        conn.commit()
        assert (task["type"], agent["name"], labelled["label"], blank["label"]) == (
            "design doc", "val idator", "first step", None)
        as_user(conn, ALICE, "s1")
        expect_error(conn, "23502", "name", "select memsub.agent_spawn(null, %s)", [task["id"]])
    assert ground_truth(db, "select type from memsub.tasks") == [{"type": "design doc"}]
    assert ground_truth(db, "select name from memsub.agents") == [{"name": "val idator"}]
    assert ground_truth(db, "select label from memsub.checkpoints order by sequence") == [
        {"label": "first step"}, {"label": None}]


def test_agent_metadata_given_as_sql_null_takes_its_default_and_json_null_is_refused(db):
    """SQL NULL is no value (docs/errors.md): an optional argument given as NULL takes its default, so agent_spawn's
    metadata of NULL stores {}; JSON null is a value of the wrong type for an argument that must be an object
    (22023 naming metadata), and nothing is written."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        task = one(conn, "select id from memsub.task_create('t', '{}', 's1')")["id"]
        conn.commit()
        as_user(conn, ALICE, "s1")
        agent = one(conn, "select * from memsub.agent_spawn('a', %s, null, null)", [task])
        assert agent["metadata"] == {}
        conn.commit()
        as_user(conn, ALICE, "s1")
        expect_error(conn, "22023", "metadata", "select memsub.agent_spawn('b', %s, null, 'null')", [task])
    assert ground_truth(db, "select name, metadata from memsub.agents") == [{"name": "a", "metadata": {}}]
