"""A session's events (seed 001 section 4.1): one row each in memsub.session_events, so that an append writes its
own event and nothing of the history before it, and the history is read back in order, a page at a time."""

from __future__ import annotations

import json
import uuid

from session_helpers import ALICE, BOB, as_user, expect_error, ground_truth, new_session, one, rows

EVENTS = 60


def _event(number: int) -> str:
    # Half a kilobyte that does not compress: a history held inline would grow the session's row by about that.
    return json.dumps({"n": number, "author": "agent", "text": " ".join(str(uuid.uuid4()) for _ in range(14))})


def _row_size(db) -> int:
    return ground_truth(db, "select pg_column_size(s.*) as size from memsub.sessions s where s.id = 's1'")[0]["size"]


def test_an_append_writes_its_event_and_nothing_of_the_history(db):
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        sizes, counts = [], []
        for number in range(EVENTS):
            as_user(conn, ALICE, "s1")
            appended = one(conn, "select * from memsub.session_append_event('s1', %s::jsonb)", [_event(number)])
            conn.commit()
            counts.append(appended.get("event_count"))
            if number in (0, EVENTS - 1):
                sizes.append(_row_size(db))
    # The session's row is as large after sixty events as after one.
    assert sizes[1] == sizes[0], sizes
    assert counts == list(range(1, EVENTS + 1))
    stored = ground_truth(db, "select session_id, position, event ->> 'n' as n from memsub.session_events "
                              "order by position")
    assert stored == [{"session_id": "s1", "position": p, "n": str(p)} for p in range(EVENTS)]
    audited = ground_truth(db, "select details ->> 'event_index' as position from memsub.audit "
                               "where operation = 'session_event' order by id")
    assert [int(r["position"]) for r in audited] == list(range(EVENTS))


def test_events_read_back_in_order_a_page_at_a_time(db):
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        for number in range(12):
            as_user(conn, ALICE, "s1")
            one(conn, "select memsub.session_append_event('s1', %s::jsonb)", [_event(number)])
            conn.commit()
        as_user(conn, ALICE, "s1")
        every = rows(conn, "select * from memsub.session_get_events('s1')")
        page = rows(conn, "select position, event ->> 'n' as n from memsub.session_get_events('s1', 5, 3)")
        rest = rows(conn, "select position from memsub.session_get_events('s1', 9)")
        none = rows(conn, "select position from memsub.session_get_events('s1', 11)")
        conn.commit()
    assert [(e["position"], e["event"]["n"]) for e in every] == [(p, p) for p in range(12)]
    assert set(every[0]) == {"tenant_id", "session_id", "position", "org_id", "user_id", "event", "created_at"}
    assert page == [{"position": 6, "n": "6"}, {"position": 7, "n": "7"}, {"position": 8, "n": "8"}]
    assert rest == [{"position": 10}, {"position": 11}]
    assert none == []


def test_reading_events_checks_its_arguments_and_the_session(db):
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_rows', 5)")
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        for call, sqlstate, column in [
            ("session_get_events(null, null, 3)", "23502", "session_id"),
            ("session_get_events('nope', null, 3)", "P0002", "session_id"),
            ("session_get_events('s1', -2, 3)", "22023", "after_position"),
            ("session_get_events('s1', null, 0)", "22023", "limit"),
            ("session_get_events('s1', null, 6)", "54000", "limit"),
            ("session_get_events('s1')", "54000", "limit"),  # the default, 1000, over this installation's limit
        ]:
            as_user(conn, ALICE, "s1")
            expect_error(conn, sqlstate, column, f"select * from memsub.{call}")  # noqa: S608 - the cases above


def test_another_user_reads_no_event_of_the_session(db):
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        one(conn, "select memsub.session_append_event('s1', %s::jsonb)", [_event(0)])
        conn.commit()
        as_user(conn, BOB)
        assert rows(conn, "select * from memsub.session_events") == []
        expect_error(conn, "P0002", "session_id", "select * from memsub.session_get_events('s1')")
        as_user(conn, ALICE)
        assert [r["position"] for r in rows(conn, "select position from memsub.session_events")] == [0]
        conn.commit()


def test_a_deleted_session_takes_its_events_with_it(db):
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        one(conn, "select memsub.session_append_event('s1', %s::jsonb)", [_event(0)])
        one(conn, "select memsub.session_append_event('s1', %s::jsonb)", [_event(1)])
        conn.commit()
    with db.connect("tenant_admin") as conn:
        as_user(conn, ALICE, roles=("tenant_admin",))
        assert one(conn, "select memsub.session_delete('s1') as deleted")["deleted"] is True
        conn.commit()
    assert ground_truth(db, "select count(*) as n from memsub.session_events") == [{"n": 0}]
    deleted = ground_truth(db, "select details ->> 'events' as events from memsub.audit "
                               "where operation = 'session_delete'")
    assert deleted == [{"events": "2"}]


def test_a_session_state_grows_no_larger_than_one_json_argument(db):
    """Each delta is bounded by max_json_bytes, and so is the state they add up to: it is returned whole by every
    write and copied into every checkpoint. A delta that would take it past the limit is refused (54000 naming
    state_delta) and writes nothing; one that removes keys still goes through."""
    chunk = "x" * 400_000
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        for n in (1, 2):
            as_user(conn, ALICE, "s1")
            one(conn, "select memsub.session_merge_state('s1', %s::jsonb)", [json.dumps({f"temp:k{n}": chunk})])
            conn.commit()
        for call in ("session_merge_state('s1', %s::jsonb)", "session_append_event('s1', '{}', %s::jsonb)"):
            as_user(conn, ALICE, "s1")
            expect_error(conn, "54000", "state_delta", f"select memsub.{call}", [json.dumps({"temp:k3": chunk})])
        as_user(conn, ALICE, "s1")
        smaller = one(conn, "select state from memsub.session_merge_state('s1', '{\"temp:k1\": null}')")
        conn.commit()
        assert list(smaller["state"]) == ["temp:k2"]
    assert ground_truth(db, "select event_count, state ? 'temp:k3' as k3 from memsub.sessions") == [
        {"event_count": 0, "k3": False}
    ]


def test_an_empty_state_delta_is_audited_as_no_keys(db):
    """The audit row of a merge lists the keys it changed: an empty delta changed none, an empty list as an append
    records it, not JSON null."""
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        one(conn, "select memsub.session_merge_state('s1', '{}')")
        one(conn, "select memsub.session_append_event('s1', '{}', '{}')")
        conn.commit()
    audited = ground_truth(db, "select operation, details->'state_keys' as keys from memsub.audit "
                               "where operation in ('session_state', 'session_event') order by id")
    assert audited == [{"operation": "session_state", "keys": []}, {"operation": "session_event", "keys": []}]
