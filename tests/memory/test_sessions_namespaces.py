"""Namespace hierarchy (seed 001 section 2): read precedence, write rules, isolation of sessions and users."""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg import sql

from session_helpers import ALICE, BOB, as_user, expect_error, ground_truth, new_session, one, rows


def write(conn: psycopg.Connection[Any], namespace: str, key: str, value: Any) -> dict[str, Any]:
    return one(
        conn, "select * from memsub.memory_write(%s, %s, %s::jsonb)", [namespace, key, json.dumps(value)]
    )


def seed_shared(db) -> None:
    """Project- and app-wide entries, written by a tenant admin."""
    with db.connect("tenant_admin") as conn:
        as_user(conn, ALICE, roles=["tenant_admin"])
        write(conn, "project:schema_redesign:prefs", "style", "project-style")
        write(conn, "project:schema_redesign:prefs", "depth", "project-depth")
        write(conn, "project:schema_redesign:prefs", "tone", "project-tone")
        write(conn, "project:schema_redesign:prefs", "only_project", 5)
        write(conn, "app:abathur:prefs", "style", "app-style")
        write(conn, "app:abathur:prefs", "depth", "app-depth")
        write(conn, "app:abathur:prefs", "tone", "app-tone")
        write(conn, "app:other_app:prefs", "style", "other-app")
        conn.commit()


def test_read_precedence_temp_session_user_app_project(db):
    seed_shared(db)
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        as_user(conn, ALICE, "s1")
        write(conn, f"user:{ALICE}:prefs", "style", "user-style")
        write(conn, f"user:{ALICE}:prefs", "depth", "user-depth")
        write(conn, "session:s1:prefs", "style", "session-style")
        one(
            conn,
            "select memsub.session_merge_state('s1', %s::jsonb)",
            [
                json.dumps(
                    {
                        "temp:prefs:style": "temp-style",
                        f"user:{ALICE}:prefs:tone": "user-state-tone",
                    }
                )
            ],
        )
        conn.commit()
        as_user(conn, ALICE, "s1")
        context = {r["name"]: r for r in rows(conn, "select * from memsub.memory_context()")}
    assert context["prefs:style"]["value"] == "temp-style"
    assert (context["prefs:style"]["precedence"], context["prefs:style"]["source"]) == (1, "state")
    assert context["prefs:depth"]["value"] == "user-depth"
    assert context["prefs:depth"]["namespace"] == f"user:{ALICE}:prefs"
    # A user: key still pending in the session state beats (shadows) the app and project entries.
    assert context["prefs:tone"]["value"] == "user-state-tone"
    assert context["prefs:only_project"]["value"] == 5 and context["prefs:only_project"]["precedence"] == 5
    assert "other-app" not in [r["value"] for r in context.values()]
    assert len(context) == 4

    # Without the temp: key the session: entry answers; without it, the user: entry; and so on.
    with db.connect("app") as conn:
        as_user(conn, ALICE, "s1")
        one(conn, "select memsub.session_end_turn('s1')")
        style = one(
            conn,
            "select value, source, precedence from memsub.memory_context('s1') where name = 'prefs:style'",
        )
        assert style == {"value": "session-style", "source": "memory", "precedence": 2}
        conn.rollback()
    with db.connect("app") as conn:
        new_session(conn, "s2", ALICE)
        as_user(conn, ALICE, "s2")
        values = {r["name"]: r["value"] for r in rows(conn, "select * from memsub.memory_context('s2')")}
        assert values["prefs:style"] == "user-style"
        new_session(conn, "s3", BOB)
        as_user(conn, BOB, "s3")
        values = {r["name"]: r["value"] for r in rows(conn, "select * from memsub.memory_context('s3')")}
        assert values == {
            "prefs:style": "app-style",
            "prefs:depth": "app-depth",
            "prefs:tone": "app-tone",
            "prefs:only_project": 5,
        }


def test_forbidden_writes_are_rejected_and_write_nothing(db):
    with db.connect("app") as conn:
        new_session(conn, "s1", ALICE)
        for namespace in [
            "project:schema_redesign:status",
            "app:abathur",
            f"user:{BOB}:preferences",
            "session:other:progress",
        ]:
            as_user(conn, ALICE, "s1")
            error = expect_error(
                conn, "42501", "namespace", "select memsub.memory_write(%s, 'k', '1')", [namespace]
            )
            assert namespace in str(error)
        as_user(conn, ALICE, "s1")
        expect_error(
            conn, "22023", "namespace", "select memsub.memory_write('temp:validation', 'errors', '[]')"
        )
        for key in [
            "project:schema_redesign:k",
            "app:abathur:k",
            f"user:{BOB}:k",
            "session:other:k",
            "plain",
        ]:
            as_user(conn, ALICE, "s1")
            expect_error(
                conn,
                "42501" if ":" in key else "22023",
                "state_delta",
                "select memsub.session_merge_state('s1', %s::jsonb)",
                [json.dumps({key: 1})],
            )
    assert ground_truth(db, "select count(*) as n from memsub.memory_entries") == [{"n": 0}]
    assert ground_truth(db, "select state from memsub.sessions") == [{"state": {}}]


def test_elevated_context_writes_app_and_project_memory(db):
    with db.connect("tenant_admin") as conn:
        # The role alone is not enough: the context must ask for tenant_admin.
        as_user(conn, ALICE)
        expect_error(conn, "42501", "namespace", "select memsub.memory_write('app:abathur', 'k', '1')")
        as_user(conn, ALICE, roles=["tenant_admin"])
        assert write(conn, "app:abathur", "k", 1)["version"] == 1
        assert write(conn, "project:schema_redesign:status", "k", 1)["version"] == 1
        conn.commit()


def test_sessions_and_users_are_isolated(db):
    """Seed 001 section 6.1: session A (alice) and session B (bob) see their own session: and user: memory and
    the shared project memory, never each other's."""
    seed_shared(db)
    with db.connect("app") as conn:
        new_session(conn, "A", ALICE)
        new_session(conn, "B", BOB)
        as_user(conn, ALICE, "A")
        write(conn, "session:A:progress", "step", 1)
        write(conn, f"user:{ALICE}:preferences", "style", "alice")
        conn.commit()
        as_user(conn, BOB, "B")
        write(conn, "session:B:progress", "step", 2)
        write(conn, f"user:{BOB}:preferences", "style", "bob")
        conn.commit()

        as_user(conn, ALICE, "A")
        seen_by_a = {r["namespace"] for r in rows(conn, "select namespace from memsub.memory_entries")}
        as_user(conn, BOB, "B")
        seen_by_b = {r["namespace"] for r in rows(conn, "select namespace from memsub.memory_entries")}
        # Alice in another session of hers sees her user memory but not session A's.
        as_user(conn, ALICE, "A2")
        seen_by_a2 = {r["namespace"] for r in rows(conn, "select namespace from memsub.memory_entries")}
        as_user(conn, BOB, "B")
        assert rows(conn, "select * from memsub.sessions where id = 'A'") == []
        assert rows(conn, "select * from memsub.memory_get(%s, 'style')", [f"user:{ALICE}:preferences"]) == []
        expect_error(conn, "P0002", "session_id", "select * from memsub.memory_context('A')")
        as_user(conn, BOB, "B")
        expect_error(conn, "P0002", "session_id", "select memsub.session_append_event('A', '{}')")
    shared = {"project:schema_redesign:prefs", "app:abathur:prefs", "app:other_app:prefs"}
    assert seen_by_a == shared | {"session:A:progress", f"user:{ALICE}:preferences"}
    assert seen_by_b == shared | {"session:B:progress", f"user:{BOB}:preferences"}
    assert seen_by_a2 == shared | {f"user:{ALICE}:preferences"}
    assert ground_truth(db, "select event_count from memsub.sessions where id = 'A'") == [{"event_count": 0}]
    assert ground_truth(db, "select count(*) as n from memsub.session_events") == [{"n": 0}]


def assert_policy_alone_hides_bobs_row(db: Any, table: str, policy: str) -> None:
    """Alice (session A) sees none of memsub.<table>, which holds one row of bob's, until <policy> is dropped."""
    relation = sql.Identifier("memsub", table)

    def visible_to_alice() -> int:
        with db.connect("app") as conn:
            as_user(conn, ALICE, "A")
            return int(one(conn, sql.SQL("select count(*) as n from {}").format(relation).as_string(conn))["n"])

    assert visible_to_alice() == 0
    with db.connect() as superuser:
        superuser.execute(sql.SQL("drop policy {} on {}").format(sql.Identifier(policy), relation))
        superuser.commit()
    assert visible_to_alice() == 1

def test_namespace_isolation_depends_on_its_policy(db):
    """Isolation fails without the namespace_visibility policy: dropping it leaks bob's memory."""
    with db.connect("app") as conn:
        new_session(conn, "B", BOB)
        as_user(conn, BOB, "B")
        write(conn, f"user:{BOB}:preferences", "style", "bob")
        conn.commit()
    assert_policy_alone_hides_bobs_row(db, "memory_entries", "namespace_visibility")


def test_session_visibility_depends_on_its_policy(db):
    with db.connect("app") as conn:
        new_session(conn, "B", BOB)
    assert_policy_alone_hides_bobs_row(db, "sessions", "session_access")


def test_write_rules_hold_below_the_functions(db):
    """Even with INSERT granted, namespace_insert refuses another user's namespace and app: memory."""
    with db.connect() as superuser:
        superuser.execute("grant insert on memsub.memory_entries to memsub_app")
        superuser.commit()
    with db.connect("app") as conn:
        for namespace in [f"user:{BOB}:x", "app:abathur"]:
            as_user(conn, ALICE, "A")
            expect_error(
                conn,
                "42501",
                None,
                "insert into memsub.memory_entries (tenant_id, namespace, key, value, version) "
                "values (memsub.current_tenant_id(), %s, 'k', '1', 1)",
                [namespace],
            )
        as_user(conn, ALICE, "A")
        conn.execute(
            "insert into memsub.memory_entries (tenant_id, namespace, key, value, version) "
            "values (memsub.current_tenant_id(), %s, 'k', '1', 1)",
            [f"user:{ALICE}:x"],
        )
        conn.commit()
    with db.connect() as superuser:
        superuser.execute("drop policy namespace_insert on memsub.memory_entries")
        superuser.commit()
    with db.connect("app") as conn:
        as_user(conn, ALICE, "A")
        conn.execute(
            "insert into memsub.memory_entries (tenant_id, namespace, key, value, version) "
            "values (memsub.current_tenant_id(), 'app:abathur', 'k', '1', 1)"
        )
        conn.commit()


def test_update_rules_hold_below_the_functions(db):
    """Even with UPDATE granted, namespace_update keeps a session from changing shared app: memory it may read."""
    with db.connect("tenant_admin") as conn:
        as_user(conn, ALICE, roles=["tenant_admin"])
        write(conn, "app:abathur", "k", 1)
        conn.commit()
    with db.connect() as superuser:
        superuser.execute("grant update on memsub.memory_entries to memsub_app")
        superuser.commit()
    update = "update memsub.memory_entries set is_deleted = true where namespace = 'app:abathur'"
    with db.connect("app") as conn:
        as_user(conn, ALICE, "A")
        assert conn.execute("select count(*) from memsub.memory_entries where namespace = 'app:abathur'"
                            ).fetchone() == (1,)  # readable
        assert conn.execute(update).rowcount == 0  # but not writable
        conn.commit()
    with db.connect() as superuser:
        superuser.execute("drop policy namespace_update on memsub.memory_entries")
        superuser.commit()
    with db.connect("app") as conn:
        as_user(conn, ALICE, "A")
        assert conn.execute(update).rowcount == 1  # the policy was what stood in the way
