"""Versioned memory entries: optimistic locking (seed 001 section 6.2), history, soft delete, audit."""

from __future__ import annotations

import json
import threading
from typing import Any

import psycopg
import pytest

from helpers import in_threads, wait_until_blocked
from session_helpers import ALICE, as_user, expect_error, ground_truth, one, rows

PROJECT_NS = "project:schema_redesign:status"


def write(
    conn: psycopg.Connection[Any], namespace: str, key: str, value: Any, expected: int | None
) -> dict[str, Any]:
    return one(
        conn,
        "select * from memsub.memory_write(%s, %s, %s::jsonb, %s)",
        [namespace, key, json.dumps(value), expected],
    )


def current_version(conn: psycopg.Connection[Any], namespace: str, key: str) -> int:
    found = rows(conn, "select version from memsub.memory_get(%s, %s)", [namespace, key])
    return int(found[0]["version"]) if found else 0


def admin(conn: psycopg.Connection[Any]) -> None:
    as_user(conn, ALICE, roles=["tenant_admin"])


def test_versions_history_and_soft_delete(db):
    ns = f"user:{ALICE}:preferences"
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        first = write(conn, ns, "communication_style", {"language": "concise"}, None)
        second = write(conn, ns, "communication_style", {"language": "verbose"}, 1)
        assert (first["version"], second["version"]) == (1, 2)
        assert one(conn, "select value from memsub.memory_get(%s, %s)", [ns, "communication_style"]) == {
            "value": {"language": "verbose"}
        }
        deleted = one(conn, "select * from memsub.memory_delete(%s, %s, %s)", [ns, "communication_style", 2])
        assert deleted["version"] == 3 and deleted["is_deleted"] and deleted["value"] is None
        assert rows(conn, "select * from memsub.memory_get(%s, %s)", [ns, "communication_style"]) == []
        history = rows(
            conn,
            "select version, is_deleted, value from memsub.memory_history(%s, %s)",
            [ns, "communication_style"],
        )
        assert [(h["version"], h["is_deleted"]) for h in history] == [(1, True), (2, True), (3, True)]
        assert history[0]["value"] == {"language": "concise"}
        # A deleted key is written again as a new entry, with the version read for it as absent (0, as for a key
        # never written): the history continues.
        absent = current_version(conn, ns, "communication_style")
        again = write(conn, ns, "communication_style", {"language": "terse"}, absent)
        assert (absent, again["version"], again["is_deleted"]) == (0, 4, False)
        conn.commit()
        as_user(conn, ALICE)
        expect_error(conn, "40001", "expected_version", "select memsub.memory_write(%s, %s, '1', 0)",
                     [ns, "communication_style"])  # now it has a live entry again
        conn.commit()
    audit = ground_truth(
        db,
        "select operation, version, details->>'expected_version' as expected "
        "from memsub.audit where key = 'communication_style' order by id",
    )
    assert [(a["operation"], a["version"], a["expected"]) for a in audit] == [
        ("memory_write", 1, None),
        ("memory_write", 2, "1"),
        ("memory_delete", 3, "2"),
        ("memory_write", 4, "0"),
    ]


def test_stale_write_is_rejected_with_40001_naming_the_key(db):
    ns = f"user:{ALICE}:preferences"
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        write(conn, ns, "theme", "dark", None)
        write(conn, ns, "theme", "light", 1)
        conn.commit()
        as_user(conn, ALICE)
        error = expect_error(
            conn, "40001", "expected_version", "select memsub.memory_write(%s, 'theme', '\"blue\"', 1)", [ns]
        )
        assert '"theme"' in str(error) and ns in str(error) and "current version is 2" in str(error)
        as_user(conn, ALICE)
        expect_error(
            conn, "40001", "expected_version", "select memsub.memory_write(%s, 'theme', '\"x\"')", [ns]
        )
        as_user(conn, ALICE)
        expect_error(conn, "40001", "expected_version", "select memsub.memory_delete(%s, 'theme', 1)", [ns])
    assert ground_truth(db, "select count(*) as n from memsub.memory_entries where key = 'theme'") == [
        {"n": 2}
    ]
    assert ground_truth(db, "select count(*) as n from memsub.audit where key = 'theme'") == [{"n": 2}]


@pytest.mark.parametrize(
    ("call", "params", "sqlstate", "column"),
    [
        ("memory_write(%s, %s, '1')", ["temp:validation", "errors_found"], "22023", "namespace"),
        ("memory_write(%s, %s, '1')", ["user", "k"], "22023", "namespace"),
        ("memory_write(%s, %s, '1')", ["bogus:x", "k"], "22023", "namespace"),
        ("memory_write(%s, %s, '1')", [None, "k"], "23502", "namespace"),
        ("memory_write(%s, %s, '1')", [f"user:{ALICE}", "a:b"], "22023", "key"),
        ("memory_write(%s, %s, '1')", [f"user:{ALICE}", ""], "22023", "key"),
        ("memory_write(%s, %s, null)", [f"user:{ALICE}", "k"], "23502", "value"),
        ("memory_write(%s, %s, 'null')", [f"user:{ALICE}", "k"], "23502", "value"),  # JSON null is no value either
        ("memory_remember(%s, %s, 'null')", [f"user:{ALICE}", "k"], "23502", "value"),
        ("memory_write(%s, %s, '1', -1)", [f"user:{ALICE}", "k"], "22023", "expected_version"),
        ("memory_write(%s, %s, '1', null, 'feelings')", [f"user:{ALICE}", "k"], "22023", "memory_type"),
        ("memory_write(%s, %s, '1', null, 'semantic', '[]')", [f"user:{ALICE}", "k"], "22023", "metadata"),
        ("memory_delete(%s, %s, null)", [f"user:{ALICE}", "k"], "23502", "expected_version"),
        ("memory_delete(%s, %s, 0)", [f"user:{ALICE}", "k"], "P0002", "key"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(db, call, params, sqlstate, column):
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        expect_error(conn, sqlstate, column, f"select memsub.{call}", params)
    assert ground_truth(db, "select count(*) as n from memsub.memory_entries") == [{"n": 0}]
    assert ground_truth(db, "select count(*) as n from memsub.audit") == [{"n": 0}]


def test_two_writers_of_version_2_one_wins_the_other_retries_to_version_3(db):
    """Seed 001 section 6.2, step by step: the UNIQUE constraint decides between the two writers."""
    with db.connect("tenant_admin") as setup:
        admin(setup)
        write(setup, PROJECT_NS, "phase", "phase1", None)
        setup.commit()

    with db.connect("tenant_admin") as a, db.connect("tenant_admin") as b:
        admin(a)
        admin(b)
        assert current_version(a, PROJECT_NS, "phase") == 1
        assert current_version(b, PROJECT_NS, "phase") == 1
        assert write(a, PROJECT_NS, "phase", "phase2", 1)["version"] == 2  # not committed yet

        outcome: dict[str, Any] = {}
        b_pid = b.info.backend_pid

        def session_b() -> None:
            try:
                write(b, PROJECT_NS, "phase", "phase3", 1)
            except psycopg.Error as error:
                outcome["error"] = error

        thread = threading.Thread(target=session_b)
        thread.start()
        wait_until_blocked(db, b_pid)  # B's INSERT of version 2 waits for A's uncommitted version 2
        a.commit()
        thread.join(10)
        assert not thread.is_alive()
        error = outcome["error"]
        assert error.sqlstate == "40001" and error.diag.column_name == "expected_version"
        assert '"phase"' in str(error)
        b.rollback()

        admin(b)  # retry: read again, see A's update, write version 3
        assert current_version(b, PROJECT_NS, "phase") == 2
        assert write(b, PROJECT_NS, "phase", "phase3", 2)["version"] == 3
        b.commit()

    history = ground_truth(
        db, "select version, value from memsub.memory_entries where key = 'phase' order by version"
    )
    assert [(h["version"], h["value"]) for h in history] == [(1, "phase1"), (2, "phase2"), (3, "phase3")]
    audit = ground_truth(db, "select version from memsub.audit where key = 'phase' order by id")
    assert [a["version"] for a in audit] == [1, 2, 3]


def test_concurrent_writers_lose_no_update(db):
    """K writers x M read-modify-write updates of one counter: final version 1 + K*M, value K*M,
    K*M audit rows."""
    writers, updates = 4, 8
    with db.connect("tenant_admin") as setup:
        admin(setup)
        write(setup, PROJECT_NS, "counter", 0, None)
        setup.commit()
    retries = [0] * writers

    def worker(index: int) -> None:
        with db.connect("tenant_admin") as conn:
            done = 0
            while done < updates:
                admin(conn)
                entry = one(
                    conn, "select value, version from memsub.memory_get(%s, 'counter')", [PROJECT_NS]
                )
                try:
                    write(conn, PROJECT_NS, "counter", entry["value"] + 1, entry["version"])
                    conn.commit()
                    done += 1
                except psycopg.errors.SerializationFailure:
                    conn.rollback()
                    retries[index] += 1

    in_threads(worker, writers)
    final = ground_truth(
        db,
        "select version, value from memsub.memory_entries "
        "where key = 'counter' order by version desc limit 1",
    )
    assert final == [{"version": 1 + writers * updates, "value": writers * updates}]
    versions = ground_truth(
        db,
        "select count(*) as n, count(distinct version) as d from memsub.memory_entries where key = 'counter'",
    )
    assert versions == [{"n": 1 + writers * updates, "d": 1 + writers * updates}]
    audit = ground_truth(
        db,
        "select count(*) as n from memsub.audit "
        "where key = 'counter' and operation = 'memory_write' and version > 1",
    )
    assert audit == [{"n": writers * updates}]


@pytest.mark.parametrize("isolation", ["repeatable read", "serializable"])
def test_stale_write_under_snapshot_isolation_names_the_version(db, isolation):
    """A version committed after a REPEATABLE READ / SERIALIZABLE snapshot is invisible to the write's read of the
    current version: the insert meets it in the unique key. The refusal is the same stale write as under READ
    COMMITTED (40001 naming expected_version, the key and current_version), not PostgreSQL's bare one."""
    ns = f"user:{ALICE}:preferences"
    key = f"snapshot_{isolation.replace(' ', '_')}"
    with db.connect("app") as late, db.connect("app") as early:
        early.execute(f"set transaction isolation level {isolation}")
        as_user(early, ALICE)
        assert current_version(early, ns, key) == 0  # the snapshot is taken here
        as_user(late, ALICE)
        write(late, ns, key, "first", None)
        late.commit()
        with pytest.raises(psycopg.errors.SerializationFailure) as caught:
            write(early, ns, key, "second", None)
        diag = caught.value.diag
        assert diag.column_name == "expected_version"
        assert key in (diag.message_primary or "") and ns in (diag.message_primary or "")
        assert diag.message_detail == "current_version=1"
        early.rollback()
    stored = ground_truth(db, "select version, value from memsub.memory_entries where key = %s", [key])
    assert stored == [{"version": 1, "value": "first"}]


def test_stale_delete_under_repeatable_read_names_the_version(db):
    ns = f"user:{ALICE}:preferences"
    with db.connect("app") as late, db.connect("app") as early:
        as_user(late, ALICE)
        write(late, ns, "snapshot_delete", "first", None)
        late.commit()
        early.execute("set transaction isolation level repeatable read")
        as_user(early, ALICE)
        assert current_version(early, ns, "snapshot_delete") == 1
        as_user(late, ALICE)
        write(late, ns, "snapshot_delete", "second", 1)
        late.commit()
        with pytest.raises(psycopg.errors.SerializationFailure) as caught:
            one(early, "select * from memsub.memory_delete(%s, %s, 1)", [ns, "snapshot_delete"])
        assert caught.value.diag.column_name == "expected_version"
        assert caught.value.diag.message_detail == "current_version=2"
        early.rollback()
    stored = ground_truth(
        db, "select version, is_deleted from memsub.memory_entries where key = 'snapshot_delete' order by version"
    )
    assert stored == [{"version": 1, "is_deleted": False}, {"version": 2, "is_deleted": False}]
