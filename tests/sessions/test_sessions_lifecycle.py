"""Session lifecycle (seed 001 sections 4.1 and 5): events, state deltas, turns, termination, deletion."""

from __future__ import annotations

import json

from session_helpers import ALICE, as_user, expect_error, ground_truth, new_session, one, rows


def audit_operations(db, session_id: str) -> list[str]:
    found = ground_truth(
        db,
        "select operation from memsub.audit "
        "where session_id = %s or details->>'deleted_session_id' = %s order by id",
        [session_id, session_id],
    )
    return [r["operation"] for r in found]


def test_events_append_and_state_deltas_merge(db):
    with db.connect("app") as conn:
        created = new_session(conn, "s1", ALICE, state={"session:s1:current_task": {"id": 1}})
        assert created["status"] == "active" and created["user_id"] == ALICE
        assert created["state"] == {"session:s1:current_task": {"id": 1}}
        as_user(conn, ALICE, "s1")
        one(
            conn,
            "select memsub.session_append_event('s1', %s::jsonb, %s::jsonb)",
            [
                json.dumps({"author": "agent", "text": "step 1"}),
                json.dumps(
                    {"temp:validation:errors_found": [], f"user:{ALICE}:preferences:style": "concise"}
                ),
            ],
        )
        after = one(
            conn,
            "select * from memsub.session_append_event('s1', %s::jsonb, %s::jsonb)",
            [
                json.dumps({"author": "agent", "text": "step 2"}),
                json.dumps({"session:s1:current_task": None, "session:s1:progress:step": 2}),
            ],
        )
        events = rows(conn, "select event ->> 'text' as text from memsub.session_get_events('s1')")
        conn.commit()
    assert after["event_count"] == 2
    assert [e["text"] for e in events] == ["step 1", "step 2"]
    assert after["state"] == {
        "temp:validation:errors_found": [],
        f"user:{ALICE}:preferences:style": "concise",
        "session:s1:progress:step": 2,
    }
    with db.connect("app") as conn:
        as_user(conn, ALICE, "s1")
        ended = one(conn, "select state from memsub.session_end_turn('s1')")
        conn.commit()
    assert ended["state"] == {f"user:{ALICE}:preferences:style": "concise", "session:s1:progress:step": 2}
    assert audit_operations(db, "s1") == [
        "session_create",
        "session_event",
        "session_event",
        "session_end_turn",
    ]
    # temp: keys never reach memory_entries.
    assert ground_truth(db, "select count(*) as n from memsub.memory_entries") == [{"n": 0}]


def test_bad_session_input_names_the_field(db):
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        for call, params, sqlstate, column in [
            ("session_append_event('s1', '[]')", [], "22023", "event"),
            ("session_append_event('s1', '{}', '[]')", [], "22023", "state_delta"),
            ("session_append_event('nope', '{}')", [], "P0002", "session_id"),
            ("session_create('bad:id')", [], "22023", "session_id"),
            ("session_create('s1')", [], "23505", "session_id"),
            ("session_create('s9', 'bad project')", [], "22023", "project_id"),
            # A user: key is written to memory when the session terminates: its namespace must fit a memory
            # namespace (512 characters), or the session could never terminate.
            ("session_merge_state('s1', %s::jsonb)", [json.dumps({f"user:{ALICE}:" + "a" * 600 + ":k": 1})],
             "22023", "state_delta"),
            # Oversized input is refused before anything is read (54000, not "no such session").
            ("session_append_event(%s, '{}')", ["s" * 1_100_000], "54000", "session_id"),
            ("session_merge_state(%s, '{}')", ["s" * 1_100_000], "54000", "session_id"),
            ("session_end_turn(%s)", ["s" * 1_100_000], "54000", "session_id"),
            ("session_terminate(%s)", ["s" * 1_100_000], "54000", "session_id"),
            # The memory type is checked whether or not there is a user: key to write.
            ("session_terminate('s1', 'bogus')", [], "22023", "memory_type"),
            ("session_terminate('s1', null)", [], "23502", "memory_type"),
        ]:
            as_user(conn, ALICE, "s1")
            expect_error(conn, sqlstate, column, f"select memsub.{call}", params)
        as_user(conn, None)
        expect_error(conn, "22023", "user_id", "select memsub.session_create('s2')")
    assert ground_truth(db, "select id, event_count from memsub.sessions") == [{"id": "s1", "event_count": 0}]
    assert ground_truth(db, "select count(*) as n from memsub.session_events") == [{"n": 0}]


def test_termination_moves_user_keys_to_memory_clears_state_and_audits(db):
    ns = f"user:{ALICE}:preferences"
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        # An older long-term value of one key exists already: the session's value becomes its next version.
        one(conn, "select memsub.memory_write(%s, 'style', '\"verbose\"')", [ns])
        one(
            conn,
            "select memsub.session_merge_state('s1', %s::jsonb)",
            [
                json.dumps(
                    {
                        f"{ns}:style": {"language": "concise"},
                        f"user:{ALICE}:history:last_topic": "schema",
                        "session:s1:progress:step": 3,
                        "temp:scratch": [1, 2],
                    }
                )
            ],
        )
        conn.commit()
        as_user(conn, ALICE, "s1")
        result = one(conn, "select * from memsub.session_terminate('s1')")
        conn.commit()
        assert result["status"] == "terminated" and result["migrated_keys"] == 2
        as_user(conn, ALICE, "s1")
        expect_error(conn, "55000", "session_id", "select memsub.session_append_event('s1', '{}')")
        as_user(conn, ALICE, "s1")
        expect_error(conn, "55000", "session_id", "select memsub.session_terminate('s1')")

    session = ground_truth(
        db, "select status, state, terminated_at is not null as ended from memsub.sessions"
    )
    assert session == [{"status": "terminated", "state": {}, "ended": True}]
    entries = ground_truth(
        db,
        "select namespace, key, value, version, memory_type, session_id, "
        "metadata->>'source' as source from memsub.memory_entries order by namespace, version",
    )
    assert entries == [
        {
            "namespace": f"user:{ALICE}:history",
            "key": "last_topic",
            "value": "schema",
            "version": 1,
            "memory_type": "semantic",
            "session_id": "s1",
            "source": "session_terminate",
        },
        {
            "namespace": ns,
            "key": "style",
            "value": "verbose",
            "version": 1,
            "memory_type": "semantic",
            "session_id": "s1",
            "source": None,
        },
        {
            "namespace": ns,
            "key": "style",
            "value": {"language": "concise"},
            "version": 2,
            "memory_type": "semantic",
            "session_id": "s1",
            "source": "session_terminate",
        },
    ]
    audit = ground_truth(
        db,
        "select operation, namespace, key, version, details from memsub.audit "
        "where operation in ('memory_write', 'session_terminate') order by id",
    )
    assert [(a["operation"], a["key"], a["version"]) for a in audit] == [
        ("memory_write", "style", 1),
        ("memory_write", "last_topic", 1),
        ("memory_write", "style", 2),
        ("session_terminate", None, None),
    ]
    assert audit[-1]["details"]["migrated_keys"] == [f"user:{ALICE}:history:last_topic", f"{ns}:style"]
    assert audit_operations(db, "s1")[-1] == "session_terminate"


def test_termination_is_atomic(db):
    """A failure while persisting one user: key leaves the session, its state and memory untouched."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE, state={f"user:{ALICE}:a": 1, f"user:{ALICE}:b": 2})
    with db.connect() as superuser:
        superuser.execute("""
            create function public.refuse_b() returns trigger language plpgsql as $$
            begin
                if new.key = 'b' then raise exception 'refused by test' using errcode = 'XX001'; end if;
                return new;
            end $$;
            create trigger refuse_b before insert on memsub.memory_entries
                for each row execute function public.refuse_b();""")
        superuser.commit()
    audit_before = ground_truth(db, "select count(*) as n from memsub.audit")
    with db.connect("app") as conn:
        as_user(conn, ALICE, "s1")
        expect_error(conn, "XX001", None, "select memsub.session_terminate('s1')")
    assert ground_truth(db, "select status, state from memsub.sessions") == [
        {"status": "active", "state": {f"user:{ALICE}:a": 1, f"user:{ALICE}:b": 2}}
    ]
    assert ground_truth(db, "select count(*) as n from memsub.memory_entries") == [{"n": 0}]
    assert ground_truth(db, "select count(*) as n from memsub.audit") == audit_before


def test_deleting_a_session_keeps_tasks_agents_checkpoints_memory_and_audit(db):
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        task = one(conn, "select * from memsub.task_create('validate', '{}', 's1')")
        one(conn, "select memsub.agent_spawn('validator', %s)", [task["id"]])
        one(conn, "select memsub.checkpoint_save(%s, '{\"step\": 1}')", [task["id"]])
        one(conn, "select memsub.memory_write('session:s1:progress', 'step', '1')")
        conn.commit()
        as_user(conn, ALICE, "s1")
        expect_error(conn, "42501", None, "select memsub.session_delete('s1')")
    with db.connect("tenant_admin") as conn:
        as_user(conn, ALICE, "s1")
        expect_error(conn, "42501", "session_id", "select memsub.session_delete('s1')")
        as_user(conn, ALICE, roles=["tenant_admin"])
        assert one(conn, "select memsub.session_delete('s1') as deleted") == {"deleted": True}
        conn.commit()
    assert ground_truth(db, "select count(*) as n from memsub.sessions") == [{"n": 0}]
    for table in ["tasks", "agents", "checkpoints", "memory_entries"]:
        kept = ground_truth(db, f"select count(*) as n, count(session_id) as linked from memsub.{table}")  # noqa: S608
        assert kept == [{"n": 1, "linked": 0}], table
    # A checkpoint's copy of the session's state goes with the session: no session decides who may read it now.
    assert ground_truth(db, "select count(session_state) as n from memsub.checkpoints") == [{"n": 0}]
    audit = ground_truth(db, "select operation, session_id from memsub.audit order by id")
    assert [a["operation"] for a in audit] == [
        "session_create",
        "task_create",
        "agent_spawn",
        "checkpoint_save",
        "memory_write",
        "session_delete",
    ]
    assert all(a["session_id"] is None for a in audit)
