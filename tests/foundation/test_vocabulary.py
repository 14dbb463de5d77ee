"""Each closed list of values is spelled once in the database (sql/005_vocabulary.sql); the Python types, the CLI
choices and the check constraints take it from there or are held equal to it here."""

from __future__ import annotations

from typing import get_args

import pytest

from memsub._calls import ContextRole
from memsub.cli_search import EMBEDDING_TYPES
from memsub.cli_views import ViewRefreshMethod, ViewRefreshStatus
from memsub.documents import Mime
from memsub.events import AccessTarget
from memsub.graph import Direction, EntityType, NodeType
from memsub.http_openapi import PACKET_ENVELOPE
from memsub.maintain import TASKS
from memsub.memory import MemoryTier, MemoryType
from memsub.models import DerivationType, Scope
from memsub.packets import LineageDirection
from memsub.reflection import Outcome, Priority, ReflectionType, SummaryScope
from memsub.search import EmbeddingType, RankBy, SearchMode
from memsub.sessions import TASK_FINAL_STATUSES, AgentStatus, SessionStatus, TaskStatus

from helpers import TENANT_A, expect_error, set_context


@pytest.mark.parametrize(("function", "python"), [
    ("embedding_types", EmbeddingType), ("memory_types", MemoryType), ("memory_tiers", MemoryTier),
    ("context_roles", ContextRole), ("packet_scopes", Scope), ("derivation_types", DerivationType),
    ("task_statuses", TaskStatus), ("session_statuses", SessionStatus), ("agent_statuses", AgentStatus),
    ("summary_scope_types", SummaryScope), ("view_refresh_statuses", ViewRefreshStatus),
    ("view_refresh_methods", ViewRefreshMethod), ("reflection_types", ReflectionType),
    ("reflection_priorities", Priority), ("task_outcomes", Outcome), ("document_mimes", Mime),
    ("graph_node_types", NodeType), ("entity_types", EntityType), ("access_target_types", AccessTarget),
    ("search_rank_orders", RankBy), ("search_modes", SearchMode), ("graph_directions", Direction),
    ("lineage_directions", LineageDirection)])
def test_the_python_types_are_the_database_vocabularies(db, function, python):
    with db.connect("app") as conn:
        row = conn.execute(f"select memsub.{function}()").fetchone()
    assert row is not None and tuple(row[0]) == get_args(python)


def test_the_final_task_statuses_are_those_of_the_database(db):
    with db.connect("app") as conn:
        row = conn.execute("select memsub.task_final_statuses(), memsub.task_statuses()").fetchone()
    assert row is not None and TASK_FINAL_STATUSES == tuple(row[0]) and set(row[0]) < set(row[1])


def test_the_openapi_envelope_offers_the_scopes_and_derivation_types_of_the_database(db):
    with db.connect("app") as conn:
        row = conn.execute("select memsub.packet_scopes(), memsub.derivation_types()").fetchone()
    assert row is not None
    properties = PACKET_ENVELOPE["properties"]
    assert properties["scope"]["enum"] == row[0]
    assert properties["lineage"]["properties"]["derivation_type"]["enum"] == row[1]


def test_the_cli_offers_the_embedding_types_of_the_database(db):
    with db.connect("analyst") as conn:
        row = conn.execute("select memsub.embedding_types()").fetchone()
    assert row is not None and EMBEDDING_TYPES == row[0]


def test_every_role_option_offers_the_context_roles_of_the_database(db):
    from memsub.cli import main

    with db.connect("app") as conn:
        row = conn.execute("select memsub.context_roles()").fetchone()
    assert row is not None
    offered = {}
    stack = [("memsub", main)]
    while stack:
        name, command = stack.pop()
        stack += [(f"{name} {sub}", c) for sub, c in getattr(command, "commands", {}).items()]
        for param in command.params:
            if param.name == "roles":
                offered[name] = list(param.type.choices)
    assert len(offered) >= 3 and all(choices == row[0] for choices in offered.values()), offered


def test_maintain_runs_the_tasks_of_the_database(db):
    with db.connect("platform_admin") as conn:
        row = conn.execute("select memsub.maintain_tasks()").fetchone()
    assert row is not None and TASKS == tuple(row[0])


def test_the_check_constraints_take_their_lists_from_the_vocabulary_functions(db):
    with db.connect() as conn:
        definitions = dict(conn.execute(
            "select conname, pg_get_constraintdef(oid) from pg_constraint"
            " where connamespace = 'memsub'::regnamespace and contype = 'c'").fetchall())
    assert "embedding_types()" in definitions["memory_embeddings_embedding_type_known"]
    assert "embedding_types()" in definitions["semantic_memory_embedding_type_known"]
    assert "memory_types()" in definitions["memory_entries_memory_type_check"]
    for table in ("packet_store", "packet_tombstones", "agent_memory_events", "reasoning_traces", "semantic_memory",
                  "memory_embeddings"):
        assert "packet_scopes()" in definitions[f"{table}_scope_known"], table
    assert "task_statuses()" in definitions["tasks_status_check"]
    assert "task_final_statuses()" in definitions["tasks_completed_consistent"]
    assert "session_statuses()" in definitions["sessions_status_check"]
    assert "agent_statuses()" in definitions["agents_status_check"]
    assert "summary_scope_types()" in definitions["memory_summaries_scope_type_known"]
    assert "view_refresh_statuses()" in definitions["memory_view_refresh_log_status_known"]
    assert "view_refresh_methods()" in definitions["memory_view_refresh_log_method_known"]
    assert "context_roles()" in definitions["api_keys_roles"]
    assert "reflection_types()" in definitions["reflection_store_type_known"]
    assert "reflection_priorities()" in definitions["reflection_store_priority_known"]
    assert "task_outcomes()" in definitions["task_reflections_outcome_known"]
    assert "document_mimes()" in definitions["document_index_mime_known"]
    assert "graph_node_types()" in definitions["entity_relationships_node_types_known"]
    assert "access_target_types()" in definitions["memory_access_log_target_type_known"]


VOCABULARIES = ("embedding_types", "memory_types", "memory_tiers", "context_roles", "packet_scopes",
                "derivation_types", "task_statuses", "task_final_statuses", "session_statuses", "agent_statuses",
                "summary_scope_types", "view_refresh_statuses", "view_refresh_methods", "reflection_types",
                "reflection_priorities", "task_outcomes", "document_mimes", "graph_node_types", "entity_types",
                "access_target_types")


@pytest.mark.parametrize("function", VOCABULARIES)
def test_no_check_constraint_spells_a_vocabulary(db, function):
    with db.connect() as conn:
        row = conn.execute(f"select memsub.{function}()").fetchone()
        definitions = dict(conn.execute(
            "select conname, pg_get_constraintdef(oid) from pg_constraint"
            " where connamespace = 'memsub'::regnamespace and contype = 'c'").fetchall())
    assert row is not None
    spelled = {name: definition for name, definition in definitions.items()
               if all(f"'{value}'" in definition for value in row[0])}
    assert spelled == {}


def test_memory_type_and_memory_tier_are_two_names_for_two_meanings(db):
    with db.connect() as conn:
        columns = {(table, column) for table, column in conn.execute(
            "select table_name, column_name from information_schema.columns where table_schema = 'memsub'"
            " and column_name in ('memory_type', 'memory_tier')").fetchall()}
    assert ("graph_nodes", "memory_tier") in columns and ("graph_nodes", "memory_type") not in columns
    assert {("memory_entries", "memory_type"), ("memory_entries", "memory_tier")} <= columns


def test_a_value_outside_the_vocabulary_is_refused_naming_the_field(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        refused = expect_error(conn, "22023", "memory_type",
                               "select memsub.memory_write('project:notes', 'k', '1'::jsonb, null, 'feelings')")
    assert "semantic, episodic, procedural" in str(refused)


@pytest.mark.parametrize(("sql", "field", "words"), [
    ("select memsub.write_packet('{\"packet_type\": \"e\", \"payload\": 1, \"scope\": \"global\"}')", "scope",
     'envelope field "scope" must be shared, cursor or l-private, not "global"'),
    ("select memsub.write_packet('{\"packet_type\": \"e\", \"payload\": 1,"
     " \"lineage\": {\"derivation_type\": \"guess\"}}')", "lineage.derivation_type",
     'envelope field "lineage.derivation_type" must be one of split, merge, transform, inference, not "guess"'),
    ("select memsub.write_packets('[{\"packet_type\": \"e\", \"payload\": 1, \"scope\": \"global\"}]')", "scope",
     'envelope 1 of the batch: envelope field "scope" must be shared, cursor or l-private, not "global"'),
    ("select memsub.task_set_status(1, 'done')", "status",
     'task status must be pending, running, completed, failed or cancelled, not "done"'),
    ("select count(*) from memsub.retrieve_reflections(p_reflection_types => array['lesson', 'rumour'])",
     "reflection_types", 'field "reflection_types" must be one of lesson, pattern, failure, success, insight, '
                         'improvement, false_constraint, not "rumour"'),
], ids=["scope", "derivation_type", "batch scope", "task status", "reflection type filter"])
def test_an_unknown_value_is_refused_in_words_taken_from_the_vocabulary(db, sql, field, words):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        refused = expect_error(conn, "22023", field, sql)
    assert refused.diag.message_primary == words


def test_the_surfaces_offer_the_argument_lists_of_the_database(db):
    """The CLI's choices, the HTTP API's accepted values and the MCP tools' input schemas for the search order and
    mode, the traversal direction and the lineage direction are the database's lists."""
    from memsub import http_api, mcp_server
    from memsub.cli import main

    with db.connect("app") as conn:
        row = conn.execute("select memsub.search_rank_orders(), memsub.search_modes(), memsub.graph_directions(),"
                           " memsub.lineage_directions()").fetchone()
    assert row is not None
    rank_orders, modes, directions, lineage = row
    commands = main.commands
    search = {p.name: p for p in commands["search"].params}
    traverse = {p.name: p for p in commands["graph"].commands["traverse"].params}  # type: ignore[attr-defined]
    lineage_command = {p.name: p for p in commands["packet"].commands["lineage"].params}  # type: ignore[attr-defined]
    assert list(search["rank_by"].type.choices) == rank_orders
    assert list(search["method"].type.choices) == modes
    assert list(traverse["direction"].type.choices) == directions
    assert list(lineage_command["direction"].type.choices) == lineage

    def accepted(arguments: tuple[http_api.Argument, ...], name: str) -> list[str]:
        return next(list(a.choices or ()) for a in arguments if a.name == name)

    assert accepted(http_api.SEMANTIC_ARGUMENTS, "rank_by") == rank_orders
    assert accepted(http_api.SEMANTIC_ARGUMENTS, "mode") == modes
    assert accepted(http_api.TRAVERSE_ARGUMENTS, "direction") == directions
    assert accepted(http_api.LINEAGE_ARGUMENTS, "direction") == lineage
    assert get_args(mcp_server.Direction) == tuple(directions)
