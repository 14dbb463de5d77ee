"""Sessions and tasks changed from two connections at once, step by step: the first transaction holds what it
changed, the second call waits for it (tests/helpers.py: blocked_call), the first commits, and the second decides
on what the first committed."""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg
import pytest

from helpers import Background, after_commit, blocked_call, started_call
from session_helpers import ALICE, BOB, as_user, ground_truth, new_session, one


def test_two_workers_that_create_a_task_and_append_an_event_do_not_deadlock(db):
    """Two workers of one session each create a task in it (its foreign key shares the session's row) and then
    append an event, in one transaction each. An append only queues behind the other append, never behind a
    transaction that merely refers to the session: before, each append waited for the other's task and one of
    the two was killed as a deadlock (40P01)."""
    with db.connect("app") as conn:
        new_session(conn, "s1")
    with db.connect("app") as first, db.connect("app") as second:
        for conn in (first, second):
            as_user(conn, ALICE, "s1")
            one(conn, "select id from memsub.task_create('job', '{}', 's1')")
        calls = {conn: Background(lambda conn=conn, n=n: one(  # type: ignore[misc]
                     conn, "select event_count from memsub.session_append_event('s1', %s::jsonb)",
                     [json.dumps({"n": n})]))
                 for n, conn in enumerate((first, second))}
        errors = []
        while calls:  # each transaction ends as soon as its append has returned or failed
            finished = [conn for conn, call in calls.items() if call.done()]
            for conn in finished:
                call = calls.pop(conn)
                errors += [call.error] if call.error else []
                (conn.rollback if call.error else conn.commit)()
            time.sleep(0.02)
    assert errors == []
    assert ground_truth(db, "select event_count from memsub.sessions where id = 's1'") == [{"event_count": 2}]


def _task(db: Any, session_id: str) -> int:
    with db.connect("app") as conn:
        as_user(conn, ALICE, session_id)
        task = one(conn, "select id from memsub.task_create('job', '{}', %s)", [session_id])
        conn.commit()
    return int(task["id"])


def test_a_task_completed_while_its_session_terminates_stays_completed(db):
    """A worker completes the session's last open task while the session terminates with cancel_open_tasks: the
    termination waits for the worker, and a task that is final by then is not cancelled over its result."""
    with db.connect("app") as conn:
        new_session(conn, "s1")
    task_id = _task(db, "s1")
    with db.connect("app") as worker, db.connect("app") as closer:
        as_user(worker, ALICE, "s1")
        one(worker, "select status from memsub.task_set_status(%s, 'completed', %s::jsonb)",
            [task_id, json.dumps({"answer": 42})])
        as_user(closer, ALICE, "s1")
        call = after_commit(db, worker, closer, lambda: one(
            closer, "select status from memsub.session_terminate('s1', 'semantic', true)"))
    assert call.error is None, call.error
    assert call.result == {"status": "terminated"}
    assert ground_truth(db, "select status, result from memsub.tasks where id = %s", [task_id]) == [
        {"status": "completed", "result": {"answer": 42}}]
    audit = ground_truth(db, "select details ->> 'to' as status from memsub.audit "
                             "where operation = 'task_status' and task_id = %s order by id", [task_id])
    assert [a["status"] for a in audit] == ["completed"]


REFERENCES = {
    "task_create": "select id from memsub.task_create('job', '{}', 's1')",
    "task_link_session": "select id from memsub.task_link_session(%(orphan)s, 's1')",
    "agent_spawn": "select id from memsub.agent_spawn('helper', %(orphan)s, 's1')",
}


@pytest.mark.parametrize("call", sorted(REFERENCES))
def test_no_work_enters_a_session_while_it_terminates(db, call):
    """A task created in, linked to or an agent spawned into a session whose termination is not yet committed
    waits for it and is then refused like one after it (55000 naming session_id): before, it saw the session
    still active and was written into the terminated session, a pending task that no longer blocked it."""
    with db.connect("app") as conn:
        new_session(conn, "s1")
        as_user(conn, ALICE)
        orphan = one(conn, "select id from memsub.task_create('orphan', '{}')")["id"]
        conn.commit()
    with db.connect("app") as closer, db.connect("app") as worker:
        as_user(closer, ALICE, "s1")
        one(closer, "select status from memsub.session_terminate('s1')")
        as_user(worker, ALICE, "s1")
        pending = started_call(db, worker, lambda: worker.execute(REFERENCES[call], {"orphan": orphan}).fetchone())
        closer.commit()
        pending.join()
        worker.rollback()
    refused = pending.error
    assert isinstance(refused, psycopg.errors.ObjectNotInPrerequisiteState), refused or pending.result
    assert refused.diag.column_name == "session_id"
    assert ground_truth(db, "select (select count(*) from memsub.tasks where session_id = 's1') as tasks, "
                            "(select count(*) from memsub.agents where session_id = 's1') as agents") == [
        {"tasks": 0, "agents": 0}]


def test_a_worker_that_creates_a_task_and_appends_while_the_session_terminates_is_refused(db):
    """A worker's transaction creates a task in the session, then a termination starts and waits for that task,
    then the worker appends an event: the append waits for the termination instead of deadlocking with it. The
    termination, once the worker's task is committed, refuses (an open task)."""
    with db.connect("app") as conn:
        new_session(conn, "s1")
    with db.connect("app") as worker, db.connect("app") as closer:
        as_user(worker, ALICE, "s1")
        one(worker, "select id from memsub.task_create('job', '{}', 's1')")
        as_user(closer, ALICE, "s1")
        closing = blocked_call(db, closer, lambda: one(closer, "select status from memsub.session_terminate('s1')"))
        one(worker, "select event_count from memsub.session_append_event('s1', '{}')")
        worker.commit()
        closing.join()
        closer.rollback()
    assert isinstance(closing.error, psycopg.errors.ObjectNotInPrerequisiteState), closing.error or closing.result
    assert ground_truth(db, "select status, event_count from memsub.sessions") == [
        {"status": "active", "event_count": 1}]


def test_a_task_changing_status_and_its_session_terminating_do_not_deadlock(db):
    """The worker has locked its task and not yet written its audit row (which shares the session's row) when the
    termination starts: the termination must not lock the session and then wait for the task while the worker
    waits for the session. A superuser's lock on the audit table holds the worker at that point."""
    with db.connect("app") as conn:
        new_session(conn, "s1")
    task_id = _task(db, "s1")
    with db.connect() as orchestrator, db.connect("app") as worker, db.connect("app") as closer:
        orchestrator.execute("lock table memsub.audit in access exclusive mode")
        as_user(worker, ALICE, "s1")
        working = blocked_call(db, worker, lambda: one(
            worker, "select status from memsub.task_set_status(%s, 'completed')", [task_id]))
        as_user(closer, ALICE, "s1")
        closing = started_call(db, closer, lambda: one(
            closer, "select status from memsub.session_terminate('s1', 'semantic', true)"))
        orchestrator.rollback()  # the worker goes on to its audit row
        working.join()
        (worker.rollback if working.error else worker.commit)()
        closing.join()
        (closer.rollback if closing.error else closer.commit)()
    assert (working.error, closing.error) == (None, None)
    assert ground_truth(db, "select status from memsub.tasks where id = %s", [task_id]) == [{"status": "completed"}]
    assert ground_truth(db, "select status from memsub.sessions") == [{"status": "terminated"}]


def test_a_termination_writes_its_user_keys_over_a_concurrent_memory_write(db):
    """The session's user: keys become memory entries when it terminates, last write wins (the session's value
    is the newer): a memory write of the same key committed while the termination waits for it is kept as the
    version before, and the termination goes on. Before, the termination failed with the optimistic lock's 40001
    ("stale write"), which only memory_write and memory_delete, stating a version, raise."""
    namespace = f"user:{ALICE}:prefs"
    with db.connect("app") as conn:
        new_session(conn, "s1", state={f"{namespace}:style": "terse"})
    with db.connect("app") as writer, db.connect("app") as closer:
        as_user(writer, ALICE)
        one(writer, "select version from memsub.memory_write(%s, 'style', '\"verbose\"')", [namespace])
        as_user(closer, ALICE, "s1")
        closing = after_commit(db, writer, closer, lambda: one(
            closer, "select status, migrated_keys from memsub.session_terminate('s1')"))
    assert closing.error is None, closing.error
    assert closing.result == {"status": "terminated", "migrated_keys": 1}
    assert ground_truth(db, "select version, value from memsub.memory_entries where key = 'style' "
                            "order by version") == [{"version": 1, "value": "verbose"},
                                                    {"version": 2, "value": "terse"}]


def test_a_session_created_with_the_id_of_a_session_being_deleted_is_refused(db):
    """Another user creates a session with the id of Alice's session while an admin's deletion of it is not yet
    committed: the creation waits for the deletion and is then refused (23505 naming session_id), as after it, so
    that the id cannot carry Alice's session: memory over to another user's session. Checked before the insert,
    the deletion's record was not yet visible, and Bob's session was created."""
    with db.connect("app") as conn:
        new_session(conn, "s1")
    with db.connect("tenant_admin") as admin, db.connect("app") as creator:
        as_user(admin, None, roles=["tenant_admin"])
        one(admin, "select memsub.session_delete('s1') as deleted")
        as_user(creator, BOB, "s1")
        creating = after_commit(db, admin, creator, lambda: one(creator, "select id from memsub.session_create('s1')"))
    assert isinstance(creating.error, psycopg.errors.UniqueViolation), creating.error or creating.result
    assert creating.error.diag.column_name == "session_id"
    assert ground_truth(db, "select count(*) as n from memsub.sessions") == [{"n": 0}]
