"""Catalog contract of seed 001: every table and field, keys, foreign keys, row-level security, comments."""

from __future__ import annotations

import pytest

from session_helpers import ground_truth

TABLES = ["sessions", "tasks", "agents", "memory_entries", "audit", "checkpoints", "document_index"]
# Seed 001's sessions.events, one row per event (test_session_events_are_rows_of_their_session).
EVENTS = "session_events"

# Seed 001's fields (and seed 000's tasks columns), with the types they map to; every table also carries the
# tenant columns. sessions.events, the append-only history, is the table session_events (one row per event, so
# that an append writes its event alone): test_session_events_are_rows_of_their_session below.
SEED_COLUMNS = {
    "sessions": {"id": "text", "user_id": "uuid", "project_id": "text", "event_count": "integer", "state": "jsonb"},
    "tasks": {
        "id": "bigint",
        "type": "text",
        "status": "text",
        "payload": "jsonb",
        "result": "jsonb",
        "error": "text",
        "created_at": "timestamp with time zone",
        "completed_at": "timestamp with time zone",
        "session_id": "text",
        "parent_task_id": "bigint",
    },
    "agents": {"id": "uuid", "session_id": "text", "task_id": "bigint"},
    "memory_entries": {
        "id": "uuid",
        "namespace": "text",
        "key": "text",
        "value": "jsonb",
        "memory_type": "text",
        "version": "integer",
        "is_deleted": "boolean",
    },
    "audit": {"id": "bigint", "agent_id": "uuid", "task_id": "bigint", "memory_entry_id": "uuid"},
    "checkpoints": {"id": "uuid", "task_id": "bigint", "session_id": "text"},
    "document_index": {"file_path": "text", "embedding": "vector", "metadata": "jsonb"},
}

# Seed 001 section 3.1: (table, column) -> ON DELETE action
# ('n' = SET NULL of that column only, 'a' = no action).
SEED_FOREIGN_KEYS = {
    ("tasks", "parent_task_id"): ("tasks", "a"),
    ("tasks", "session_id"): ("sessions", "n"),
    ("agents", "task_id"): ("tasks", "a"),
    ("agents", "session_id"): ("sessions", "n"),
    ("audit", "agent_id"): ("agents", "a"),
    ("audit", "task_id"): ("tasks", "a"),
    ("audit", "memory_entry_id"): ("memory_entries", "n"),
    ("checkpoints", "task_id"): ("tasks", "a"),
    ("checkpoints", "session_id"): ("sessions", "n"),
}


@pytest.fixture(scope="module")
def catalog(server, template_db):
    """Catalog facts of the migrated template database (read once)."""
    from conftest import Database

    db = Database(server, template_db)
    columns = ground_truth(
        db,
        """
        select c.relname as table_name, a.attname as column_name,
               format_type(a.atttypid, a.atttypmod) as type,
               a.attnotnull as not_null, col_description(c.oid, a.attnum) as comment
          from pg_attribute a join pg_class c on c.oid = a.attrelid
         where c.relnamespace = 'memsub'::regnamespace and c.relname = any(%s) and a.attnum > 0
           and not a.attisdropped""",
        [[*TABLES, EVENTS]],
    )
    constraints = ground_truth(
        db,
        """
        select c.relname as table_name, k.conname, k.contype,
               array(select a.attname::text from unnest(k.conkey) with ordinality u(n, i)
                      join pg_attribute a on a.attrelid = k.conrelid and a.attnum = u.n
                     order by u.i) as columns,
               k.confrelid::regclass::text as referenced, k.confdeltype,
               array(select a.attname::text from unnest(k.confdelsetcols) u(n)
                      join pg_attribute a on a.attrelid = k.conrelid and a.attnum = u.n) as set_null_columns
          from pg_constraint k join pg_class c on c.oid = k.conrelid
         where c.relnamespace = 'memsub'::regnamespace and c.relname = any(%s)""",
        [[*TABLES, EVENTS]],
    )
    tables = ground_truth(
        db,
        """
        select relname as table_name, relrowsecurity, relforcerowsecurity,
               obj_description(oid, 'pg_class') as comment
          from pg_class where relnamespace = 'memsub'::regnamespace and relname = any(%s)""",
        [[*TABLES, EVENTS]],
    )
    policies = ground_truth(
        db,
        """
        select tablename as table_name, policyname from pg_policies
         where schemaname = 'memsub' and tablename = any(%s)""",
        [[*TABLES, EVENTS]],
    )
    return {"columns": columns, "constraints": constraints, "tables": tables, "policies": policies}


@pytest.mark.parametrize("table", TABLES)
def test_seed_fields_exist_with_their_types(catalog, table):
    types = {c["column_name"]: c["type"] for c in catalog["columns"] if c["table_name"] == table}
    for column, expected in SEED_COLUMNS[table].items():
        assert types.get(column) == expected, (table, column)
    for column in ["tenant_id", "org_id", "user_id"]:
        assert types.get(column) == "uuid", (table, column)
    assert next(
        c for c in catalog["columns"] if c["table_name"] == table and c["column_name"] == "tenant_id"
    )["not_null"]


@pytest.mark.parametrize("table", TABLES)
def test_keys_lead_with_tenant_and_every_column_is_commented(catalog, table):
    keys = [k for k in catalog["constraints"] if k["table_name"] == table and k["contype"] in ("p", "u")]
    assert any(k["contype"] == "p" for k in keys)
    assert all(k["columns"][0] == "tenant_id" for k in keys), keys
    foreign = [k for k in catalog["constraints"] if k["table_name"] == table and k["contype"] == "f"]
    assert all(k["columns"][0] == "tenant_id" for k in foreign), foreign
    assert all(k["confdeltype"] != "c" for k in foreign), "no cascading deletes"
    uncommented = [
        c["column_name"] for c in catalog["columns"] if c["table_name"] == table and not c["comment"]
    ]
    assert uncommented == []
    assert next(t for t in catalog["tables"] if t["table_name"] == table)["comment"]


def test_optimistic_lock_key_is_tenant_namespace_key_version(catalog):
    unique = {
        tuple(k["columns"])
        for k in catalog["constraints"]
        if k["table_name"] == "memory_entries" and k["contype"] == "u"
    }
    assert ("tenant_id", "namespace", "key", "version") in unique


@pytest.mark.parametrize(("source", "target"), SEED_FOREIGN_KEYS.items(), ids=lambda v: ".".join(v))
def test_seed_foreign_keys_and_their_delete_behaviour(catalog, source, target):
    table, column = source
    referenced, action = target
    matches = [
        k
        for k in catalog["constraints"]
        if k["table_name"] == table and k["contype"] == "f" and k["columns"] == ["tenant_id", column]
    ]
    assert len(matches) == 1, (source, matches)
    fk = matches[0]
    assert fk["referenced"] == f"memsub.{referenced}"
    assert fk["confdeltype"] == action
    if action == "n":
        assert fk["set_null_columns"] == [column]  # tenant_id is never nulled


@pytest.mark.parametrize("table", TABLES)
def test_row_security_is_enabled_forced_and_policies_exist(catalog, table):
    info = next(t for t in catalog["tables"] if t["table_name"] == table)
    assert info["relrowsecurity"] and info["relforcerowsecurity"]
    names = {p["policyname"] for p in catalog["policies"] if p["table_name"] == table}
    assert {"tenant_isolation", "admin_override"} <= names
    extra = {
        "sessions": {"org_isolation", "session_access"},
        "memory_entries": {"namespace_visibility", "namespace_insert", "namespace_update"},
        "audit": {"org_isolation", "audit_actor_visibility"},
    }
    assert extra.get(table, {"org_isolation"}) <= names


def test_session_functions_are_documented_pinned_and_not_public(server, template_db):
    from conftest import Database

    db = Database(server, template_db)
    functions = ground_truth(
        db,
        """
        select p.oid::regprocedure::text as name, obj_description(p.oid, 'pg_proc') as comment,
               p.proconfig, p.prosecdef, pg_get_userbyid(p.proowner) as owner,
               has_function_privilege('public', p.oid, 'execute') as public_execute
          from pg_proc p
         where p.pronamespace = 'memsub'::regnamespace
           and (p.proname like any (array['session%%', 'memory%%', 'task%%', 'agent%%', 'checkpoint%%',
                                         'document_index%%', 'consolidat%%', 'audit%%', 'store_memory%%'])
                or p.proname in ('set_actor', '_caller_is_admin', 'current_agent_id', 'current_task_id',
                                 '_check_state_delta', '_apply_state_delta', '_require_active_session',
                                 '_check_memory_address', '_agent_session_lock', '_audit_record',
                                 '_store_memory_version', '_memory_embeddings_envelope_guard'))""",
    )
    assert len(functions) >= 30
    for function in functions:
        assert function["comment"], function["name"]
        assert any(c.startswith("search_path=") for c in function["proconfig"] or []), function["name"]
        assert function["owner"] == "memsub_owner", function["name"]
        assert not function["public_execute"], function["name"]


def test_session_events_are_rows_of_their_session(catalog):
    """Seed 001's sessions.events: each event a row, keyed by its session and its place in the history, gone with
    its session (the events were part of the session's row), commented and under row-level security."""
    columns = {c["column_name"]: c for c in catalog["columns"] if c["table_name"] == EVENTS}
    assert {k: columns[k]["type"] for k in ("tenant_id", "session_id", "position", "event")} == {
        "tenant_id": "uuid", "session_id": "text", "position": "integer", "event": "jsonb"}
    assert all(c["comment"] for c in columns.values())
    keys = sorted(((k["contype"], k["referenced"], k["confdeltype"], k["columns"]) for k in catalog["constraints"]
                   if k["table_name"] == EVENTS and k["contype"] in ("p", "f")), reverse=True)
    assert keys == [("p", "-", " ", ["tenant_id", "session_id", "position"]),
                    ("f", "memsub.sessions", "c", ["tenant_id", "session_id"])]
    info = next(t for t in catalog["tables"] if t["table_name"] == EVENTS)
    assert info["relrowsecurity"] and info["relforcerowsecurity"] and info["comment"]
    names = {p["policyname"] for p in catalog["policies"] if p["table_name"] == EVENTS}
    assert {"tenant_isolation", "admin_override", "org_isolation", "session_event_access"} <= names
