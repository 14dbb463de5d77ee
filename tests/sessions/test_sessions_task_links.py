"""Seed 001 section 7.2 and 4.1: an orphan task is linked to a session later; a session does not terminate while
its tasks are still open, unless the caller cancels them."""

from __future__ import annotations

from session_helpers import ALICE, BOB, as_user, expect_error, ground_truth, new_session, one, rows


def test_an_orphan_task_is_linked_to_a_session_later(db):
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        new_session(conn, "s2", ALICE)
        as_user(conn, ALICE, "s1")
        orphan = one(conn, "select * from memsub.task_create('legacy import')")
        assert orphan["session_id"] is None
        linked = one(conn, "select * from memsub.task_link_session(%s, 's1')", [orphan["id"]])
        again = one(conn, "select * from memsub.task_link_session(%s, 's1')", [orphan["id"]])  # idempotent
        conn.commit()
        assert linked["session_id"] == "s1" and again["session_id"] == "s1"

        as_user(conn, ALICE, "s1")
        # A task of one session is not moved to another; unknown tasks and sessions are named.
        expect_error(conn, "55000", "session_id", "select memsub.task_link_session(%s, 's2')", [orphan["id"]])
        as_user(conn, ALICE, "s1")
        expect_error(conn, "P0002", "task_id", "select memsub.task_link_session(987654, 's1')")
        as_user(conn, ALICE, "s1")
        other = one(conn, "select * from memsub.task_create('other')")
        expect_error(conn, "23503", "session_id", "select memsub.task_link_session(%s, 'nope')", [other["id"]])
        as_user(conn, ALICE, "s1")
        expect_error(conn, "23502", "session_id", "select memsub.task_link_session(1, null)")

        # Linking to a terminated session is refused like creating a task in one.
        new_session(conn, "s3", ALICE)
        as_user(conn, ALICE, "s3")
        one(conn, "select * from memsub.session_terminate('s3')")
        late = one(conn, "select * from memsub.task_create('late')")
        conn.commit()
        as_user(conn, ALICE, "s3")
        failure = expect_error(conn, "55000", "session_id", "select memsub.task_link_session(%s, 's3')",
                               [late["id"]])
        assert "terminated" in str(failure)

    audit = ground_truth(db, "select operation, session_id, task_id from memsub.audit "
                             "where operation = 'task_link' order by id")
    assert audit == [{"operation": "task_link", "session_id": "s1", "task_id": orphan["id"]}]


def test_a_session_with_open_tasks_terminates_only_when_they_are_cancelled(db):
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        done = one(conn, "select * from memsub.task_create('done', '{}', 's1')")
        one(conn, "select memsub.task_set_status(%s, 'completed')", [done["id"]])
        pending = one(conn, "select * from memsub.task_create('pending', '{}', 's1')")
        running = one(conn, "select * from memsub.task_create('running', '{}', 's1')")
        one(conn, "select memsub.task_set_status(%s, 'running')", [running["id"]])
        conn.commit()

        as_user(conn, ALICE, "s1")
        refused = expect_error(conn, "55000", "session_id", "select * from memsub.session_terminate('s1')")
        assert "2 open task" in str(refused)
        as_user(conn, ALICE, "s1")
        ended = one(conn, "select * from memsub.session_terminate('s1', p_cancel_open_tasks => true)")
        conn.commit()
        assert ended["status"] == "terminated"
        as_user(conn, ALICE, "s1")
        statuses = rows(conn, "select id, status from memsub.tasks where session_id = 's1' order by id")
        conn.commit()
    assert statuses == [{"id": done["id"], "status": "completed"}, {"id": pending["id"], "status": "cancelled"},
                        {"id": running["id"], "status": "cancelled"}]

    # Only tasks of that session count: another user's open task elsewhere does not block.
    with db.connect("app") as conn:
        new_session(conn, "b1", BOB)
        new_session(conn, "b2", BOB)
        as_user(conn, BOB, "b2")
        one(conn, "select * from memsub.task_create('elsewhere', '{}', 'b2')")
        conn.commit()
        as_user(conn, BOB, "b1")
        assert one(conn, "select * from memsub.session_terminate('b1')")["status"] == "terminated"
        conn.commit()
