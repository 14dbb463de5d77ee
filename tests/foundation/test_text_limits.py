"""The text limit (max_text_chars, docs/security.md "Limits") of every function that takes text arguments.

Each text argument over the limit is refused with SQLSTATE 54000 naming it (message and column diagnostic), and
when several are over the limit the first in the function's order is the one named.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from helpers import TENANT_A, set_context

LIMIT = 30
LONG = "x" * (LIMIT + 1)
TASK = 1  # no such task: the limits are checked before the task is looked up

# source_type and target_type of temporal_edge_add and supersede_relationship are checked against their closed list
# first, and session_terminate looks its session up first: those limits are not reached by these calls.
# (function, base arguments, text arguments in the order the function checks them, context roles)
CASES: list[tuple[str, dict[str, Any], list[str], tuple[str, ...]]] = [
    ("create_api_key", {"tenant_id": TENANT_A}, ["label"], ("platform_admin",)),
    ("record_event", {"agent_id": "a", "event_type": "e"}, ["agent_id", "event_type"], ()),
    ("record_reasoning_trace", {"agent_id": "a"}, ["agent_id"], ()),
    ("record_access", {"target_type": "packet", "target_id": uuid.uuid4()},
     ["target_type", "agent_id", "access_context", "feedback_reason"], ()),
    ("record_feedback", {"access_id": uuid.uuid4(), "was_useful": True}, ["reason"], ()),
    ("store_embedding", {"packet_id": uuid.uuid4(), "embedding_type": "content", "vector": None},
     ["embedding_type", "chunk_text"], ()),
    ("store_semantic_memory", {"agent_id": "a", "vector": None}, ["agent_id", "embedding_type", "scope"], ()),
    ("search_semantic_memory", {"query": None}, ["agent_id", "mode"], ()),
    ("semantic_search", {"query": None}, ["embedding_type", "packet_type", "rank_by", "mode", "agent_id"], ()),
    ("upsert_relationship", {"source_entity": "a", "relationship_type": "r", "target_entity": "b"},
     ["source_entity", "relationship_type", "target_entity"], ()),
    ("assert_fact", {"subject": "s", "predicate": "p", "object": Jsonb(1)}, ["subject", "predicate"], ()),
    ("temporal_edge_add", {"source_entity": "a", "relationship_type": "r", "target_entity": "b"},
     ["source_entity", "relationship_type", "target_entity"], ()),
    ("close_relationship", {"source_entity": "a", "relationship_type": "r", "target_entity": "b"},
     ["source_entity", "relationship_type", "target_entity"], ()),
    ("supersede_relationship", {"source_entity": "a", "relationship_type": "r", "target_entity": "b"},
     ["source_entity", "relationship_type", "target_entity"], ()),
    ("graph_upsert_entity", {"name": "n", "entity_type": "Entity"}, ["name", "entity_type"], ()),
    ("traverse_graph", {"start_entity": "a"}, ["start_entity", "direction"], ()),
    ("entity_neighbourhood", {"entity": "a"}, ["entity"], ()),
    ("graph_neighbors", {"entity": "a"}, ["entity"], ()),
    ("graph_neighbors_as_of", {"entity": "a"}, ["entity"], ()),
    ("edges_as_of", {}, ["entity", "relationship_type"], ()),
    ("apply_world_model_update", {"insight_type": "i", "entities": Jsonb(["a"])}, ["insight_type"], ()),
    ("take_world_model_snapshot", {}, ["description", "created_by"], ()),
    ("record_reflection", {"reflection_type": "insight", "content": "c"},
     ["reflection_type", "content", "context", "priority", "source_agent", "task_id"], ()),
    ("record_task_reflection", {"task_id": "t"}, ["task_id", "outcome", "task_description"], ()),
    ("record_summary", {"scope_type": "s", "scope_value": "v", "summary_text": "t", "source_packet_ids": []},
     ["scope_type", "scope_value", "summary_text"], ()),
    ("retrieve_reflections", {}, ["min_priority", "task_id", "agent_id"], ()),
    ("memory_write", {"namespace": "app", "key": "k", "value": Jsonb(1)}, ["namespace", "key", "memory_type"], ()),
    ("memory_delete", {"namespace": "app", "key": "k", "expected_version": 1}, ["namespace", "key"], ()),
    ("memory_get", {"namespace": "app", "key": "k"}, ["namespace", "key"], ()),
    ("memory_history", {"namespace": "app", "key": "k"}, ["namespace", "key"], ()),
    ("memory_list", {"namespace_prefix": "app"}, ["namespace_prefix"], ()),
    ("memory_context", {}, ["session_id"], ()),
    ("memory_remember", {"namespace": "app", "key": "k", "value": Jsonb(1)}, ["namespace", "key", "tier", "kind"],
     ()),
    ("memory_touch", {"namespace": "app", "key": "k"}, ["namespace", "key"], ()),
    ("session_create", {}, ["session_id", "project_id", "app_name"], ()),
    ("session_terminate", {"session_id": "s"}, ["memory_type"], ()),
    ("task_create", {"type": "t"}, ["type", "session_id"], ()),
    ("task_set_status", {"task_id": TASK, "status": "running"}, ["status", "error"], ()),
    ("agent_spawn", {"name": "n", "task_id": TASK}, ["name", "session_id"], ()),
    ("checkpoint_save", {"task_id": TASK, "state": Jsonb({})}, ["label"], ()),
    ("document_index_put", {"file_path": "f"}, ["file_path"], ()),
    ("document_ingest", {"file_path": "f", "hash": "h", "mime": "text/plain", "text": "t", "chunks": Jsonb([])},
     ["file_path", "hash", "mime", "summary"], ()),
    ("adk_session_create", {"app_name": "a", "user_id": "u", "session_id": "adk-1"},
     ["app_name", "user_id", "session_id"], ()),
]


def _call(conn: psycopg.Connection[Any], function: str, arguments: dict[str, Any]) -> psycopg.errors.Error:
    statement = sql.SQL("select memsub.{}({})").format(
        sql.Identifier(function),
        sql.SQL(", ").join(sql.SQL("{} => {}").format(sql.Identifier("p_" + name), sql.Placeholder())
                           for name in arguments))
    conn.execute("savepoint call")
    with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error:
        conn.execute(statement, list(arguments.values()))
    conn.execute("rollback to savepoint call")
    return error.value


@pytest.mark.parametrize(("function", "base", "fields", "roles"), CASES, ids=[case[0] for case in CASES])
def test_every_text_argument_over_the_limit_is_named(db, function, base, fields, roles):
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_text_chars', %s)", [LIMIT])
    with db.connect(roles[0] if roles else "app") as conn:
        set_context(conn, TENANT_A, user=uuid.UUID(int=7), roles=roles)
        if base.get("session_id") == "s":
            conn.execute("select memsub.session_create('s')")
        for field in fields:
            error = _call(conn, function, {**base, field: LONG})
            assert (error.sqlstate, error.diag.column_name) == ("54000", field)
            assert error.diag.message_primary == (
                f'field "{field}" is characters over the limit: {LIMIT + 1} > {LIMIT} (max_text_chars)')
            assert error.diag.message_detail == f"limit=max_text_chars value={LIMIT} actual={LIMIT + 1}"
        # Several over the limit: the first is named.
        error = _call(conn, function, {**base, **{field: LONG for field in fields}})
        assert error.diag.column_name == fields[0]


def test_each_relationship_type_of_a_walk_is_held_to_the_limit_and_named_by_its_place(db):
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_text_chars', %s)", [LIMIT])
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        assert conn.execute("select count(*) from memsub.traverse_graph('a', 2, %s)", [["y" * LIMIT]]
                            ).fetchone() == (0,)
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error:
            conn.execute("select count(*) from memsub.traverse_graph('a', 2, %s)", [["r", LONG]])
    assert error.value.diag.column_name == "relationship_types[1]"
    assert error.value.diag.message_detail == f"limit=max_text_chars value={LIMIT} actual={LIMIT + 1}"


def test_values_at_the_limit_and_null_pass(db):
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_text_chars', %s)", [LIMIT])
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        rows = conn.execute("select count(*) from memsub.traverse_graph(%s, p_direction => 'both')",
                            ["y" * LIMIT]).fetchone()
        assert rows == (0,)
        assert conn.execute("select count(*) from memsub.retrieve_reflections(p_task_id => null, p_agent_id => null)"
                            ).fetchone() == (0,)


def test_the_embeddings_of_a_batch_are_checked_in_order(db):
    # The set-based path of write_packets (batches of 8 envelopes or more) checks them too; any error sends the batch
    # envelope by envelope, which names the envelope's field.
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_text_chars', %s)", [LIMIT])
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
        for embedding, field in (({"chunk_text": LONG}, "chunk_text"),
                                 ({"embedding_type": LONG, "chunk_text": LONG}, "embedding_type")):
            envelope = {"packet_type": "event", "payload": {"n": 1},
                        "memory": {"embeddings": [{"embedding_type": "content", "vector": [0.5] * dimension,
                                                   **embedding}]}}
            plain = {**envelope, "memory": {"embeddings": [{"embedding_type": "content", "vector": [0.5] * dimension}]}}
            batch = [{**plain, "payload": n} for n in range(9)] + [envelope]
            error = _call(conn, "write_packets", {"envelopes": Jsonb(batch)})
            assert "envelope 10 of the batch" in error.diag.message_primary
            assert (error.sqlstate, error.diag.column_name) == ("54000", f"memory.embeddings[0].{field}")


def test_the_shared_check_takes_name_and_value_pairs(db):
    with db.connect("app") as conn:
        check = "select memsub._check_text_limits(variadic %s::text[])"
        assert conn.execute(check, [["a", "xy", "b", None, "c", "xyz"]]).fetchone() == (3,)
        assert conn.execute(check, [["a", None]]).fetchone() == (None,)
        assert conn.execute(check, [[]]).fetchone() == (None,)
        with pytest.raises(psycopg.errors.InvalidParameterValue) as error:
            conn.execute(check, [["a", "xy", "b"]])
        assert error.value.diag.column_name == "name_value"


# Lists of texts held to max_text_chars together, like a reflection's and a summary's lists
# (memsub._check_text_list): each element within the limit, the list over it. (call, field, table written)
TOGETHER_LISTS = [
    ("select * from memsub.document_ingest('k.md', repeat('0', 64), 'md', 'hello', "
     "'[{\"start_char\": 0, \"end_char\": 5}]'::jsonb, p_key_concepts => %s)", "key_concepts", "document_index"),
    ("select * from memsub.graph_upsert_entity('Acme', 'Organization', %s)", "aliases", "world_model_entities"),
    ("select count(*) from memsub.traverse_graph('a', 2, %s)", "relationship_types", None),
]


@pytest.mark.parametrize(("call", "field", "table"), TOGETHER_LISTS, ids=[case[1] for case in TOGETHER_LISTS])
def test_lists_of_texts_are_held_to_the_text_limit_together(db, call, field, table):
    """A document's key concepts, an entity's aliases and a walk's relationship types were held to max_text_chars
    one element at a time, so max_array_items elements of max_text_chars each (a gigabyte by default) passed;
    like a reflection's lists they are now held to it together (54000 naming the list), and nothing is written.
    A list exactly at the limit passes."""
    limit = 64  # a content hash is 64 characters: the text limit must let it through
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_text_chars', %s)", [limit])
    half = limit // 2
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error:
            conn.execute(call, [["a" * half, "b" * half, "c"]])
        conn.rollback()
        assert error.value.diag.column_name == field
        assert error.value.diag.message_detail == f"limit=max_text_chars value={limit} actual={limit + 1}"
        if table is not None:
            with db.connect() as admin:
                assert admin.execute(f"select count(*) from memsub.{table}").fetchone() == (0,)  # noqa: S608
        set_context(conn, TENANT_A)
        conn.execute(call, [["a" * half, "b" * half]])
