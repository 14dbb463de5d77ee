"""Consolidation job (seed 001 section 4.3): conflicts, pluggable strategies, consolidated_into, audit."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from session_helpers import ALICE, BOB, as_user, expect_error, ground_truth, one, rows


def admin(conn: psycopg.Connection[Any]) -> None:
    as_user(conn, ALICE, roles=["tenant_admin"])


def put(conn: psycopg.Connection[Any], namespace: str, key: str, *values: Any) -> None:
    """Write successive versions of a key, each stating the version before it."""
    current = rows(conn, "select version from memsub.memory_get(%s, %s)", [namespace, key])
    version = current[0]["version"] if current else None
    for value in values:
        version = one(
            conn,
            "select version from memsub.memory_write(%s, %s, %s::jsonb, %s)",
            [namespace, key, json.dumps(value), version],
        )["version"]


def test_last_write_wins_consolidates_every_conflict_once(db):
    with db.connect("app") as conn:
        as_user(conn, BOB)
        put(conn, f"user:{BOB}:preferences", "style", {"tone": "dry"}, {"tone": "warm", "length": "short"})
        conn.commit()
    with db.connect("tenant_admin") as conn:
        admin(conn)
        put(conn, "project:schema_redesign:status", "phase", "phase1", "phase2", "phase3")
        put(conn, "project:schema_redesign:status", "owner", "alice")  # one version: no conflict
        put(conn, "app:abathur", "gone", 1, 2)
        one(conn, "select memsub.memory_delete('app:abathur', 'gone', 2)")  # deleted: no conflict
        conn.commit()
        admin(conn)
        report = rows(conn, "select * from memsub.consolidate_memories()")
        conn.commit()
    assert [
        (r["namespace"], r["key"], r["version"], r["consolidated_versions"], r["outcome"]) for r in report
    ] == [
        ("project:schema_redesign:status", "phase", 4, [1, 2, 3], "consolidated"),
        (f"user:{BOB}:preferences", "style", 3, [1, 2], "consolidated"),
    ]
    phase = ground_truth(
        db,
        "select id, version, value, metadata from memsub.memory_entries where key = 'phase' order by version",
    )
    new_id = str(phase[-1]["id"])
    assert phase[-1]["value"] == "phase3"
    assert phase[-1]["metadata"]["strategy"] == "last_write_wins"
    assert phase[-1]["metadata"]["consolidated_from"] == [str(p["id"]) for p in phase[:3]]
    assert [p["metadata"].get("consolidated_into") for p in phase] == [new_id, new_id, new_id, None]
    style = ground_truth(
        db, "select value from memsub.memory_entries where key = 'style' order by version desc limit 1"
    )
    assert style == [{"value": {"tone": "warm", "length": "short"}}]

    audit = ground_truth(
        db,
        "select key, version, memory_entry_id, details from memsub.audit "
        "where operation = 'memory_consolidate' order by id",
    )
    assert [(a["key"], a["version"], a["details"]["consolidated_versions"]) for a in audit] == [
        ("phase", 4, [1, 2, 3]),
        ("style", 3, [1, 2]),
    ]
    assert str(audit[0]["memory_entry_id"]) == new_id

    # Nothing left to consolidate until a key gets another version.
    with db.connect("tenant_admin") as conn:
        admin(conn)
        assert rows(conn, "select * from memsub.consolidate_memories()") == []
        put(conn, "project:schema_redesign:status", "phase", "phase4")
        report = rows(conn, "select key, version, consolidated_versions from memsub.consolidate_memories()")
        assert report == [{"key": "phase", "version": 6, "consolidated_versions": [4, 5]}]


def test_merge_objects_strategy_and_namespace_prefix(db):
    with db.connect("tenant_admin") as conn:
        admin(conn)
        put(conn, "project:p1", "config", {"a": 1, "b": 1}, {"b": 2}, {"c": 3})
        put(conn, "project:p2", "config", {"x": 1}, {"y": 2})
        conn.commit()
        admin(conn)
        report = rows(
            conn,
            "select namespace, version, strategy "
            "from memsub.consolidate_memories('merge_objects', 'project:p1')",
        )
        conn.commit()
    assert report == [{"namespace": "project:p1", "version": 4, "strategy": "merge_objects"}]
    assert ground_truth(
        db, "select value from memsub.memory_entries where namespace = 'project:p1' and version = 4"
    ) == [{"value": {"a": 1, "b": 2, "c": 3}}]
    assert ground_truth(
        db, "select count(*) as n from memsub.memory_entries where namespace = 'project:p2'"
    ) == [{"n": 2}]


def test_a_strategy_is_a_function_added_to_the_schema(db):
    with db.connect() as superuser:
        superuser.execute("""
            create function memsub.consolidation_longest(p_versions jsonb) returns jsonb
            language sql immutable set search_path = pg_catalog as $$
                select v -> 'value' from jsonb_array_elements(p_versions) v
                 order by length((v -> 'value')::text) desc, (v ->> 'version')::int desc limit 1 $$""")
        superuser.commit()
    with db.connect("tenant_admin") as conn:
        admin(conn)
        put(conn, "app:abathur", "summary", "a long first summary", "short")
        admin(conn)
        one(conn, "select * from memsub.consolidate_memories('longest')")
        assert one(conn, "select value from memsub.memory_get('app:abathur', 'summary')") == {
            "value": "a long first summary"
        }


def test_consolidation_needs_an_admin_and_a_known_strategy(db):
    with db.connect("tenant_admin") as conn:
        admin(conn)
        put(conn, "app:abathur", "k", 1, 2)
        conn.commit()
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        expect_error(conn, "42501", None, "select * from memsub.consolidate_memories()")
    with db.connect("tenant_admin") as conn:
        as_user(conn, ALICE)
        expect_error(conn, "42501", "strategy", "select * from memsub.consolidate_memories()")
        admin(conn)
        error = expect_error(
            conn, "22023", "strategy", "select * from memsub.consolidate_memories('llm_magic')"
        )
        assert "llm_magic" in str(error)
        admin(conn)
        expect_error(
            conn, "22023", "strategy", "select * from memsub.consolidate_memories('x; drop table t')"
        )
    assert ground_truth(db, "select count(*) as n from memsub.memory_entries") == [{"n": 2}]
    assert ground_truth(
        db, "select count(*) as n from memsub.audit where operation = 'memory_consolidate'"
    ) == [{"n": 0}]
