"""Sessions and tasks changed from two connections at once, step by step: the first transaction holds what it
changed, the second call waits for it (tests/helpers.py: blocked_call), the first commits, and the second decides
on what the first committed."""

from __future__ import annotations

import json
import time

from helpers import Background
from session_helpers import ALICE, as_user, ground_truth, new_session, one


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
