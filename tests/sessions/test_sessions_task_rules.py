"""The rules of a task's life (docs/decisions.md, "A task moves forward only"): which status moves are allowed,
what a sub-task may be created under, and which values a task's payload, result and error may hold. Each refusal
names its field, with its SQLSTATE, and writes nothing (no task change, no audit row)."""

from __future__ import annotations

import psycopg
import pytest

from helpers import after_commit, table_state
from session_helpers import ALICE, as_user, expect_error, ground_truth, new_session, one

FINAL = ["completed", "failed", "cancelled"]


def _task_at(conn: psycopg.Connection[object], status: str) -> int:
    """A committed task of session s1 at ``status``, reached by the allowed moves."""
    as_user(conn, ALICE, "s1")
    task = int(one(conn, "select id from memsub.task_create('job', '{}', 's1')")["id"])
    path = {"pending": [], "running": ["running"]}.get(status, ["running", status])
    for step in path:
        one(conn, "select memsub.task_set_status(%s, %s)", [task, step])
    conn.commit()
    return task


# Every move between two statuses and whether it is allowed: a pending task starts or ends, a running task ends,
# and nothing moves back, stays where it is or leaves a final status.
MOVES = [(before, after, (before == "pending" and after != "pending") or (before == "running" and after in FINAL))
         for before in ["pending", "running", *FINAL]
         for after in ["pending", "running", *FINAL]]


@pytest.mark.parametrize(("before", "after", "allowed"), MOVES, ids=[f"{b}-{a}" for b, a, _ in MOVES])
def test_a_task_moves_forward_only(db, before, after, allowed):
    with db.connect("app") as conn, db.connect() as judge:
        new_session(conn, "s1", ALICE)
        task = _task_at(conn, before)
        as_user(conn, ALICE, "s1")
        if allowed:
            moved = one(conn, "select status, completed_at from memsub.task_set_status(%s, %s)", [task, after])
            conn.commit()
            assert moved["status"] == after and (moved["completed_at"] is not None) == (after in FINAL)
            return
        state = table_state(judge)
        error = expect_error(conn, "55000", "status", "select memsub.task_set_status(%s, %s)", [task, after])
        assert f"from {before} to {after}" in str(error), error
        assert table_state(judge) == state


def test_no_sub_task_is_created_under_a_finished_parent(db):
    """A finished task takes no more work, as a terminated session takes no more tasks: a sub-task under a
    completed, failed or cancelled parent is refused (55000 naming parent_task_id); under a pending or running
    parent it is created."""
    with db.connect("app") as conn, db.connect() as judge:
        new_session(conn, "s1", ALICE)
        for status in ["pending", "running"]:
            parent = _task_at(conn, status)
            as_user(conn, ALICE, "s1")
            assert one(conn, "select parent_task_id from memsub.task_create('step', '{}', 's1', %s)",
                       [parent]) == {"parent_task_id": parent}
            conn.commit()
        for status in FINAL:
            parent = _task_at(conn, status)
            state = table_state(judge)
            as_user(conn, ALICE, "s1")
            error = expect_error(conn, "55000", "parent_task_id",
                                 "select memsub.task_create('step', '{}', 's1', %s)", [parent])
            assert status in str(error), error
            assert table_state(judge) == state


def test_a_sub_task_created_while_its_parent_ends_sees_the_end(db):
    """The parent's move to completed is not committed yet when a sub-task under it is asked for: the creation
    waits for it and then refuses (55000 naming parent_task_id). Reading the parent's status without a lock saw it
    pending, and the sub-task was created under a parent that had ended meanwhile."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        parent = _task_at(conn, "running")
    with db.connect("app") as ender, db.connect("app") as creator:
        as_user(ender, ALICE, "s1")
        one(ender, "select status from memsub.task_set_status(%s, 'completed')", [parent])
        as_user(creator, ALICE, "s1")
        creating = after_commit(db, ender, creator, lambda: one(
            creator, "select id from memsub.task_create('step', '{}', 's1', %s)", [parent]))
    assert isinstance(creating.error, psycopg.errors.ObjectNotInPrerequisiteState), creating.error or creating.result
    assert creating.error.diag.column_name == "parent_task_id"
    assert ground_truth(db, "select id, status from memsub.tasks") == [{"id": parent, "status": "completed"}]


@pytest.mark.parametrize("error_text", ["", " ", "\t\n", "\u00a0"])
def test_a_blank_error_text_is_refused(db, error_text):
    """The error of a failed task says what went wrong: a blank one (empty or only white space of any kind) says
    nothing and is refused (22023 naming error), as a blank reflection content is; the task stays running."""
    with db.connect("app") as conn, db.connect() as judge:
        new_session(conn, "s1", ALICE)
        task = _task_at(conn, "running")
        state = table_state(judge)
        as_user(conn, ALICE, "s1")
        expect_error(conn, "22023", "error", "select memsub.task_set_status(%s, 'failed', p_error => %s)",
                     [task, error_text])
        assert table_state(judge) == state
        as_user(conn, ALICE, "s1")
        failed = one(conn, "select error from memsub.task_set_status(%s, 'failed', p_error => %s)",
                     [task, "  timed out\n  after 30 s"])
        conn.commit()
    assert failed == {"error": "  timed out\n  after 30 s"}  # text that says something is stored as given


def test_a_json_null_payload_or_result_is_no_value(db):
    """JSON null where a task takes JSON is no value, as SQL NULL is (checkpoint_save refuses both for its required
    state): a payload of JSON null is the default {} and a result of JSON null leaves the result unset, so a task
    never holds a JSON null the client would read back as a value."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        task = one(conn, "select id, payload from memsub.task_create('job', 'null'::jsonb, 's1')")
        done = one(conn, "select result from memsub.task_set_status(%s, 'completed', 'null'::jsonb)", [task["id"]])
        conn.commit()
    assert (task["payload"], done["result"]) == ({}, None)
    assert ground_truth(db, "select jsonb_typeof(payload) as payload, result from memsub.tasks") == [
        {"payload": "object", "result": None}]
