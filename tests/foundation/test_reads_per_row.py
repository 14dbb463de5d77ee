"""Values that are the same for every row are read once per call, not once per row.

Every memsub function sets its own search_path, so none is inlined: a call in a statement's condition runs for
every row the condition is tested on, and a call in a loop runs on every pass. Each test counts the calls
(``track_functions = 'all'``) of a small and a larger case of one operation, as an application login; the count of
the value read once must not grow. PL/pgSQL plans a statement for its first five calls' values, where the
planner folds such a call into a constant, and generically from the sixth: each operation runs six times first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from helpers import TENANT_A, TENANT_B, calls_during, set_context, track_function_calls
from session_helpers import ALICE, as_user, new_session, one

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def calls_of(conn: psycopg.Connection[Any], names: tuple[str, ...], tenant: Any,
             operation: Callable[[], object], warm: Callable[[], object] | None = None) -> dict[str, int]:
    """The calls of ``names`` made by ``operation`` in a transaction of ``tenant``'s context, after ``warm`` (the
    operation itself by default) ran six times in transactions rolled back."""
    for _ in range(6):
        set_context(conn, tenant)
        (warm or operation)()
        conn.rollback()
    set_context(conn, tenant)
    _, made = calls_during(conn, operation, names)
    conn.rollback()
    return {name: made.get(name, 0) for name in names}


def test_edges_as_of_normalizes_the_relationship_type_once(db):
    track_function_calls(db)
    with db.connect("app") as conn:
        for tenant, edges in ((TENANT_A, 3), (TENANT_B, 30)):
            set_context(conn, tenant)
            for number in range(edges):
                conn.execute("select memsub.upsert_relationship('hub', 'links', %s)", [f"n{number}"])
            conn.commit()
        calls = {tenant: calls_of(conn, ("normalize_text",), tenant, lambda: conn.execute(
            "select count(*) from memsub.edges_as_of(p_relationship_type => 'Links')").fetchone())
            for tenant in (TENANT_A, TENANT_B)}
    assert calls[TENANT_A] == calls[TENANT_B], calls


def test_upsert_relationship_normalizes_its_ends_once_whatever_the_edges_history(db):
    track_function_calls(db)
    with db.connect("app") as conn:
        for tenant, windows in ((TENANT_A, 3), (TENANT_B, 30)):
            set_context(conn, tenant)
            for number in range(windows):  # closed windows of the edge a -links-> b
                conn.execute("select memsub.temporal_edge_add('a', 'links', 'b', %s, %s)",
                             [T0 + timedelta(days=2 * number), T0 + timedelta(days=2 * number + 1)])
            conn.commit()
        calls = {tenant: calls_of(
            conn, ("normalize_text",), tenant,
            lambda: conn.execute("select memsub.upsert_relationship('a', 'links', 'b')").fetchone(),
            lambda: conn.execute("select memsub.upsert_relationship('c', 'links', 'd')").fetchone())
            for tenant in (TENANT_A, TENANT_B)}
    assert calls[TENANT_A] == calls[TENANT_B], calls


def test_memory_strength_checks_a_missing_last_access_without_a_call(db):
    track_function_calls(db)
    with db.connect("app") as conn:
        calls = calls_of(conn, ("_check_finite_time",), TENANT_A, lambda: conn.execute(
            "select sum(memsub.memory_strength(1, null, now() - interval '1 day', now(), '1 day'))"
            " from generate_series(1, 20)").fetchone())
    assert calls == {"_check_finite_time": 0}


def test_get_lineage_reads_its_row_limit_once(db):
    track_function_calls(db)
    with db.connect("app") as conn:
        tips = {}
        for tenant, length in ((TENANT_A, 3), (TENANT_B, 30)):
            set_context(conn, tenant)
            parent = None
            for number in range(length):
                envelope: dict[str, Any] = {"packet_type": "event", "payload": {"n": number}}
                if parent is not None:
                    envelope["lineage"] = {"parent_ids": [parent]}
                row = conn.execute("select packet_id from memsub.write_packet(%s::jsonb)", [json.dumps(envelope)])
                fetched = row.fetchone()
                assert fetched is not None
                parent = str(fetched[0])
            tips[tenant] = parent
            conn.commit()
        calls = {tenant: calls_of(conn, ("limit_value",), tenant, lambda tip=tips[tenant]: conn.execute(
            "select count(*) from memsub.get_lineage(%s, 'ancestors', 100)", [tip]).fetchone())
            for tenant in (TENANT_A, TENANT_B)}
    assert calls[TENANT_A] == calls[TENANT_B], calls


def test_terminating_a_session_checks_the_context_once_whatever_its_open_tasks(db):
    """Each cancelled task gets its audit row, written with the session's tenant (not the context checked again)."""
    track_function_calls(db)
    counted = {}
    with db.connect("app") as conn:
        for session, tasks in (("s3", 3), ("s30", 30)):
            new_session(conn, session, ALICE)
            as_user(conn, ALICE, session)
            for number in range(tasks):
                one(conn, "select * from memsub.task_create(%s, '{}', %s)", [f"t{number}", session])
            conn.commit()
            as_user(conn, ALICE, session)
            _, counted[tasks] = calls_during(conn, lambda session=session: one(
                conn, "select * from memsub.session_terminate(%s, p_cancel_open_tasks => true)", [session]),
                ("_require_tenant_id", "_audit_record"))
            conn.commit()
    assert counted[30]["_audit_record"] - counted[3]["_audit_record"] == 27  # one audit row per cancelled task
    assert counted[30]["_require_tenant_id"] == counted[3]["_require_tenant_id"], counted


def test_memory_maintenance_checks_the_context_once_whatever_it_promotes(db):
    """Each promoted entry gets its audit row, written with the tenant the run checked once."""
    track_function_calls(db)
    counted = {}
    with db.connect("tenant_admin") as conn:
        for tenant, entries in ((TENANT_A, 3), (TENANT_B, 30)):
            set_context(conn, tenant, user=ALICE, roles=("tenant_admin",))
            for number in range(entries):
                conn.execute("select memsub.memory_remember(%s, %s, '1'::jsonb)", [f"user:{ALICE}", f"k{number}"])
            conn.commit()
            set_context(conn, tenant, user=ALICE, roles=("tenant_admin",))
            promoted, counted[entries] = calls_during(conn, lambda: conn.execute(
                "select count(*) filter (where outcome = 'promoted')"
                " from memsub.memory_maintenance(p_threshold => 1e-9)").fetchone(),
                ("_require_tenant_id", "_audit_record"))
            conn.commit()
            assert promoted == (entries,)
    assert counted[30]["_audit_record"] - counted[3]["_audit_record"] == 27  # one audit row per promotion
    assert counted[30]["_require_tenant_id"] == counted[3]["_require_tenant_id"], counted
