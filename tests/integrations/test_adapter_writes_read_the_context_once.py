"""The adapters' writes of many rows in one statement read the context once, not once per row.

``memsub.current_org_id()`` (a SQL function with its own search_path, never inlined) stood in the select lists of
INSERT ... SELECT statements over the items, writes or memories of a call, so it ran for every row. The tests count
the calls of the context functions (track_functions) for a call of two rows and of ten.
"""

from __future__ import annotations

import json

from helpers import TENANT_A, function_calls, set_context, track_function_calls

CONTEXT_FUNCTIONS = ("current_tenant_id", "current_org_id", "current_user_id", "current_session_id")
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


def test_a_write_of_many_rows_reads_the_context_as_often_as_a_write_of_two(db):
    track_function_calls(db)
    calls: dict[str, dict[int, int]] = {}
    with db.connect("app") as conn:
        for name, (statement, arguments) in CALLS.items():
            for rows in (2, 10):
                set_context(conn, TENANT_A)
                before = sum(function_calls(conn, CONTEXT_FUNCTIONS).values())
                written = conn.execute(statement, arguments(name, rows)).fetchone()
                calls.setdefault(name, {})[rows] = sum(function_calls(conn, CONTEXT_FUNCTIONS).values()) - before
                conn.commit()
                assert written is not None and written[0] in (rows, None), (name, written)
    assert {name: counts[10] - counts[2] for name, counts in calls.items()} == dict.fromkeys(CALLS, 0), calls
