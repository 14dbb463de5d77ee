"""Helpers for the layer tests: vectors, calls of the layer functions, one row of every layer table."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
from psycopg.rows import dict_row

from helpers import set_context, write

DIMENSION = 1536  # the test template is a default installation

LAYER_TABLES = [
    "agent_memory_events", "reasoning_traces", "knowledge_facts", "semantic_memory", "memory_embeddings",
    "entity_relationships", "world_model_state", "world_model_entities", "world_model_updates",
    "world_model_snapshots", "reflection_store", "task_reflections", "memory_summaries", "memory_access_log",
]


def vec(*head: float, dimension: int = DIMENSION) -> str:
    """Text form of a vector whose first components are ``head`` and the rest 0.001 (never the zero vector)."""
    values = list(head) + [0.001] * (dimension - len(head))
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def graph_order(conn: psycopg.Connection[Any], stored: str = "vector") -> str:
    """The ORDER BY expression that walks memory_embeddings' HNSW graphs (memsub._vector_graph_order): the
    stored vector ``stored`` against a query given as a psycopg parameter (``%s::vector``)."""
    row = conn.execute("select memsub._vector_graph_order(%s, '%%s::vector')", [stored]).fetchone()
    assert row is not None
    return str(row[0])


def call(conn: psycopg.Connection[Any], sql: str, params: list[Any] | None = None) -> dict[str, Any]:
    """Run a function call returning one row, decoded by column name."""
    row = conn.cursor(row_factory=dict_row).execute(sql.encode(), params or []).fetchone()
    assert row is not None
    return row


def populate(conn: psycopg.Connection[Any], tenant: uuid.UUID, org: uuid.UUID | None = None,
             user: uuid.UUID | None = None, tag: str = "x") -> dict[str, Any]:
    """Write one row into every layer table for this context, through the write functions only."""
    set_context(conn, tenant, org, user)
    packet = write(conn, {"packet_type": "event", "payload": {"text": f"populate {tag}"},
                          "importance_score": 0.9, "metadata": {"agent": f"agent-{tag}"}})
    packet_id = packet["packet_id"]
    made: dict[str, Any] = {"packet_id": packet_id}
    made["event"] = call(conn, "select * from memsub.record_event(%s, 'tool_call', '{}'::jsonb, %s)",
                         [f"agent-{tag}", packet_id])
    made["trace"] = call(conn, "select * from memsub.record_reasoning_trace(%s, %s, '[\"a\"]'::jsonb)",
                         [f"agent-{tag}", packet_id])
    made["fact"] = call(conn, "select * from memsub.assert_fact(%s, 'uses', %s::jsonb, 0.9, %s)",
                        [f"L9-{tag}", json.dumps("Neo4j"), packet_id])
    made["embedding"] = call(conn, "select * from memsub.store_embedding(%s, 'content', %s::vector)",
                             [packet_id, vec(1.0)])
    made["semantic"] = call(conn, "select * from memsub.store_semantic_memory(%s, %s::vector)",
                            [f"agent-{tag}", vec(0.5)])
    made["edge"] = call(conn, "select * from memsub.upsert_relationship(%s, 'uses', 'Neo4j', 0.8, %s)",
                        [f"L9-{tag}", packet_id])
    made["update"] = call(conn, "select * from memsub.apply_world_model_update('observation', %s::jsonb)",
                          [json.dumps([{"entity_id": f"L9-{tag}", "entity_type": "Concept", "attributes": {"k": 1}}])])
    made["snapshot"] = call(conn, "select * from memsub.take_world_model_snapshot('populate')")
    made["reflection"] = call(conn, "select * from memsub.record_reflection('lesson', %s, p_tags => %s)",
                              [f"lesson {tag}", ["t1", f"t-{tag}"]])
    made["task"] = call(conn, "select * from memsub.record_task_reflection(%s, 'success')", [f"task-{tag}"])
    made["summary"] = call(conn, "select * from memsub.record_summary('thread', %s, 'summary', %s::uuid[])",
                           [f"thread-{tag}", [packet_id]])
    made["access"] = call(conn, "select * from memsub.record_access('fact', %s, %s)",
                          [made["fact"]["fact_id"], f"agent-{tag}"])
    return made
