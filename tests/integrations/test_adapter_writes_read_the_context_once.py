"""The adapters' writes of many rows in one statement read the context once, not once per row.

``memsub.current_org_id()`` (a SQL function with its own search_path, never inlined) stood in the select lists of
INSERT ... SELECT statements over the items, writes or memories of a call, so it ran for every row. The tests count
the calls of the context functions (track_functions) for a call of two rows and of ten.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg import sql

from helpers import TENANT_A, set_context

CALLS = {
    "agent_session_add_items": (
        "select memsub.agent_session_add_items(%s, %s::json)",
        lambda n, rows: [f"session-{rows}", json.dumps([{"role": "user", "content": f"m{i}"} for i in range(rows)])]),
    "adk_memory_add": (
        "select memsub.adk_memory_add('app', 'user', %s, %s::jsonb)",
        lambda n, rows: [f"session-{rows}", json.dumps([{"event_id": f"e{i}", "content": {}, "text": f"word {i}"}
                                                        for i in range(rows)])]),
    "langgraph_checkpoint_put_writes": (
        "select memsub.langgraph_checkpoint_put_writes(%s, '', 'c1', 'task', '', %s, %s, %s, %s)",
        lambda n, rows: [f"thread-{rows}", list(range(rows)), [f"channel{i}" for i in range(rows)],
                         ["json"] * rows, [b"{}"] * rows]),
}


def context_calls(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("select coalesce(sum(calls), 0) from pg_stat_xact_user_functions where schemaname = 'memsub'"
                       " and funcname in ('current_tenant_id', 'current_org_id', 'current_user_id',"
                       " 'current_session_id')").fetchone()
    assert row is not None
    return int(row[0])


def test_a_write_of_many_rows_reads_the_context_as_often_as_a_write_of_two(db):
    with db.connect() as admin:  # the superuser may count function calls (track_functions)
        admin.execute(sql.SQL("alter database {} set track_functions = 'all'").format(sql.Identifier(db.name)))
        admin.commit()
    calls: dict[str, dict[int, int]] = {}
    with db.connect("app") as conn:
        for name, (statement, arguments) in CALLS.items():
            for rows in (2, 10):
                set_context(conn, TENANT_A)
                before = context_calls(conn)
                written = conn.execute(statement, arguments(name, rows)).fetchone()
                calls.setdefault(name, {})[rows] = context_calls(conn) - before
                conn.commit()
                assert written is not None and written[0] in (rows, None), (name, written)
    assert {name: counts[10] - counts[2] for name, counts in calls.items()} == dict.fromkeys(CALLS, 0), calls
