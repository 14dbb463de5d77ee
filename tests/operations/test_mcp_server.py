"""``memsub mcp``: the MCP tools, driven by the MCP SDK's own client against a real database.

Most tests connect the client to the server in the same process (the SDK's in-memory transport) for speed; the
stdio tests start the ``memsub`` command as an MCP client does, and one test serves streamable HTTP. Every
server acts as an ordinary login in memsub_app (memsub_test_app), never as a superuser, but for the one that shows
feedback's learn_now working in a tenant_admin context (memsub_test_tenant_admin).
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from psycopg import sql

import memsub
from memsub.client import Substrate
from memsub.context_tokens import mint_context_token
from memsub.embedding import HashingEmbedder
from memsub.errors import ContextError
from memsub.mcp_server import Fact, Identity, MemoryTools, build_server, check_identity, tool_names

from helpers import superuser_count

README = Path(__file__).resolve().parents[2] / "README.md"
MCP_DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
PACKAGE_PARENT = str(Path(memsub.__file__).resolve().parent.parent)
IDENTITY_WORDS = {"tenant", "tenant_id", "org", "org_id", "user", "user_id", "roles", "role", "session",
                  "session_id", "token", "context"}


def _run(scenario: Callable[[], Awaitable[None]]) -> None:
    anyio.run(scenario)


@contextmanager
def _tools(db: Any, tenant: uuid.UUID, login: str = "app", **identity: Any) -> Iterator[MemoryTools]:
    with Substrate(db.dsn(login), max_size=2) as substrate:
        who = Identity(tenant_id=tenant, **identity)
        dimension = check_identity(substrate, who)
        yield MemoryTools(substrate, who, HashingEmbedder(dimension), agent_id="assistant-1")


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def _error(result: Any) -> str:
    assert result.is_error, result.structured_content
    text = result.content[0].text
    assert isinstance(text, str)
    return text


# -- the tool list -----------------------------------------------------------------------------------------


def test_the_tools_are_listed_with_typed_schemas_and_no_identity_argument(db):
    async def scenario() -> None:
        with _tools(db, uuid.uuid4()) as tools:
            async with Client(build_server(tools)) as client:
                listed = (await client.list_tools()).tools
        assert [tool.name for tool in listed] == tool_names()
        for tool in listed:
            schema = tool.input_schema
            assert schema["type"] == "object"
            assert tool.description and tool.output_schema, tool.name
            assert not IDENTITY_WORDS & set(schema.get("properties", {})), (tool.name, schema["properties"])
        by_name = {tool.name: tool for tool in listed}
        recall = by_name["recall"].input_schema
        assert recall["required"] == ["query"]
        assert recall["properties"]["k"]["minimum"] == 1
        assert by_name["replay_thread"].input_schema["properties"]["thread_id"]["format"] == "uuid"
        assert by_name["graph_traverse"].annotations.read_only_hint is True
        assert by_name["remember"].annotations.read_only_hint is False

    _run(scenario)


def test_docs_list_every_tool_with_exactly_its_inputs(db):
    sections = re.split(r"^### `(\w+)`$", MCP_DOC.read_text(), flags=re.M)
    documented = {name: re.findall(r"^\| `(\w+)` \|", body, flags=re.M)
                  for name, body in zip(sections[1::2], sections[2::2], strict=True)}

    async def scenario() -> None:
        with _tools(db, uuid.uuid4()) as tools:
            async with Client(build_server(tools)) as client:
                listed = (await client.list_tools()).tools
        assert list(documented) == [tool.name for tool in listed]
        for tool in listed:
            assert documented[tool.name] == list(tool.input_schema["properties"]), tool.name

    _run(scenario)


# -- each tool ---------------------------------------------------------------------------------------------


def test_remember_then_recall_replay_and_feedback(db):
    thread = uuid.uuid4()

    async def scenario() -> None:
        with _tools(db, uuid.uuid4(), session_id="chat-1") as tools:
            async with Client(build_server(tools)) as client:
                first = _data(await client.call_tool("remember", {
                    "text": "The customer prefers invoices in euros, sent on the first of the month.",
                    "thread_id": str(thread), "tags": ["billing"], "packet_type": "observation"}))
                assert first["thread_id"] == str(thread) and first["deduplicated"] is False
                assert first["written"]["memory_embeddings"] == 1
                second = _data(await client.call_tool("remember", {
                    "text": "The customer's office moved to Lisbon.", "thread_id": str(thread),
                    "parent_ids": [first["packet_id"]], "derivation_type": "inference",
                    "data": {"city": "Lisbon"}}))
                assert second["parent_ids"] == [first["packet_id"]] and second["generation"] == 1
                for n in range(3):
                    await client.call_tool("remember", {"text": f"turn {n}", "thread_id": str(thread)})

                hybrid = _data(await client.call_tool("recall", {"query": "invoices in euros", "k": 3}))
                assert hybrid["mode"] == "hybrid"
                assert hybrid["hits"][0]["packet_id"] == first["packet_id"]
                assert hybrid["hits"][0]["text_rank"] == 1 and hybrid["hits"][0]["access_id"]
                semantic = _data(await client.call_tool("recall", {
                    "query": "office moved to Lisbon", "mode": "semantic", "k": 2, "thread_id": str(thread)}))
                assert semantic["hits"][0]["packet_id"] == second["packet_id"]
                tagged = _data(await client.call_tool("recall", {
                    "query": "office moved to Lisbon", "mode": "semantic", "tags": ["billing"]}))
                assert [h["packet_id"] for h in tagged["hits"]] == [first["packet_id"]]

                page = _data(await client.call_tool("replay_thread", {"thread_id": str(thread), "limit": 2}))
                assert [p["packet_id"] for p in page["packets"]] == [first["packet_id"], second["packet_id"]]
                assert page["packets"][1]["payload"] == {"text": "The customer's office moved to Lisbon.",
                                                         "data": {"city": "Lisbon"}}
                rest: list[dict[str, Any]] = []
                cursor = page["next_cursor"]
                while cursor is not None:
                    more = _data(await client.call_tool("replay_thread", {
                        "thread_id": str(thread), "limit": 2, "after_cursor": cursor}))
                    rest += more["packets"]
                    cursor = more["next_cursor"]
                assert [p["payload"]["text"] for p in rest] == ["turn 0", "turn 1", "turn 2"]

                useful = _data(await client.call_tool("feedback", {
                    "access_id": hybrid["hits"][0]["access_id"], "was_useful": True,
                    "reason": "answered the billing question"}))
                assert useful["feedback"]["was_useful"] is True
                assert useful["feedback"]["target_id"] == hybrid["hits"][0]["embedding_id"]
                assert useful["learning_run"] is None

    _run(scenario)
    with db.connect() as conn:
        row = conn.execute("select session_id, envelope -> 'provenance' ->> 'agent_id' from memsub.packet_store "
                           "where thread_id = %s order by write_seq limit 1", [thread]).fetchone()
    assert row == ("chat-1", "assistant-1")


def test_feedback_learns_now_only_for_an_admin_identity(db):
    """learn_now runs memsub.learn_importance, maintenance of the whole tenant that needs a tenant_admin or
    platform_admin context: a server acting for the application is refused, naming learn_now and that need, and
    writes nothing (not even the feedback); a server configured with a tenant_admin identity learns."""
    tenant = uuid.uuid4()

    def feedback_recorded(access_id: str) -> bool:
        with db.connect() as conn:
            row = conn.execute("select was_useful is not null from memsub.memory_access_log where access_id = %s",
                               [access_id]).fetchone()
        assert row is not None
        return bool(row[0])

    async def scenario() -> None:
        with _tools(db, tenant) as tools:
            async with Client(build_server(tools)) as client:
                await client.call_tool("remember", {"text": "The customer prefers invoices in euros."})
                hit = _data(await client.call_tool("recall", {"query": "invoices in euros", "k": 1}))["hits"][0]
                refused = _error(await client.call_tool("feedback", {
                    "access_id": hit["access_id"], "was_useful": True, "learn_now": True}))
                assert "ContextError (SQLSTATE 42501, field learn_now)" in refused
                assert "tenant_admin or platform_admin context" in refused and "memsub maintain" in refused
                assert refused.endswith("; nothing was written")
                assert not feedback_recorded(hit["access_id"])
        with _tools(db, tenant, login="tenant_admin", roles=("tenant_admin",)) as tools:
            async with Client(build_server(tools)) as client:
                learned = _data(await client.call_tool("feedback", {
                    "access_id": hit["access_id"], "was_useful": True, "learn_now": True}))
                assert learned["learning_run"]["feedback_learned"] == 1
                assert feedback_recorded(hit["access_id"])
                again = _data(await client.call_tool("recall", {"query": "invoices in euros", "k": 1}))
                assert again["hits"][0]["importance_score"] > hit["importance_score"]

    _run(scenario)


def test_namespaced_memory_entries(db):
    user = uuid.uuid4()
    namespace = f"user:{user}:preferences"

    async def scenario() -> None:
        with _tools(db, uuid.uuid4(), user_id=user) as tools:
            async with Client(build_server(tools)) as client:
                written = _data(await client.call_tool("remember_entry", {
                    "namespace": namespace, "key": "tone", "value": {"style": "concise answers, no emoji"}}))
                assert written["version"] == 1 and written["namespace"] == namespace
                updated = _data(await client.call_tool("remember_entry", {
                    "namespace": namespace, "key": "tone", "value": {"style": "concise answers with examples"},
                    "expected_version": 1}))
                assert updated["version"] == 2
                stale = _error(await client.call_tool("remember_entry", {
                    "namespace": namespace, "key": "tone", "value": "verbose", "expected_version": 1}))
                assert "ConflictError" in stale and "nothing was written" in stale
                found = _data(await client.call_tool("recall_entries", {"query": "concise answers", "k": 3}))
                assert [(h["key"], h["version"]) for h in found["hits"]] == [("tone", 2)]
                assert found["hits"][0]["value"] == {"style": "concise answers with examples"}
                elsewhere = _data(await client.call_tool("recall_entries", {
                    "query": "concise answers", "namespace_prefix": "project"}))
                assert elsewhere["hits"] == []

    _run(scenario)


def test_an_entry_value_is_any_json_but_null_and_temp_namespaces_are_not_offered(db):
    """memsub.memory_write requires a value (memory_delete deletes) and the HTTP API refuses null; temp: namespaces
    are never persisted, so memory_write refuses every one of them and the tool does not offer them."""
    user = uuid.uuid4()

    async def scenario() -> None:
        with _tools(db, uuid.uuid4(), user_id=user) as tools:
            async with Client(build_server(tools)) as client:
                listed = {tool.name: tool for tool in (await client.list_tools()).tools}
                described = listed["remember_entry"].input_schema["properties"]["namespace"]["description"]
                assert "temp:" not in described and "user:<user id>" in described
                null = _error(await client.call_tool("remember_entry", {
                    "namespace": f"user:{user}", "key": "tone", "value": None}))
                assert "\n" not in null and "field value" in null and "null" in null, null
                assert "nothing was written" in null
                temp = _error(await client.call_tool("remember_entry", {
                    "namespace": "temp:scratch", "key": "k", "value": 1}))
                assert "field namespace" in temp
        assert superuser_count(db, "memsub.memory_entries") == 0

    _run(scenario)
    text = MCP_DOC.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `namespace` |"))
    assert "temp:" not in row
    value = next(line for line in text.splitlines() if line.startswith("| `value` |"))
    assert "any JSON but null" in value


def test_graph_lookups_as_of_a_time(db):
    async def scenario() -> None:
        with _tools(db, uuid.uuid4()) as tools:
            async with Client(build_server(tools)) as client:
                before = datetime.now(UTC) - timedelta(seconds=1)
                _data(await client.call_tool("remember", {
                    "text": "Alice joined Globex; Globex is based in Lisbon.",
                    "relationships": [
                        {"source_entity": "Alice", "relationship_type": "works_at", "target_entity": "Globex",
                         "confidence": 0.9},
                        {"source_entity": "Globex", "relationship_type": "based_in", "target_entity": "Lisbon"}],
                    "facts": [{"subject": "Alice", "predicate": "role", "object": "engineer", "confidence": 0.8}]}))

                now = _data(await client.call_tool("graph_traverse", {"entity": "Alice", "max_depth": 2}))
                assert [(p["entity"], p["depth"]) for p in now["paths"]] == [("Globex", 1), ("Lisbon", 2)]
                assert now["paths"][1]["relationship_path"] == ["works_at", "based_in"]
                past = _data(await client.call_tool("graph_traverse", {"entity": "Alice",
                                                                       "as_of": before.isoformat()}))
                assert past["paths"] == []

                near = _data(await client.call_tool("graph_neighbourhood", {"entity": "Alice"}))
                kinds = {(i["kind"], i["relationship_type"]) for i in near["items"]}
                assert kinds == {("relationship", "works_at"), ("fact", "role")}
                near_then = _data(await client.call_tool("graph_neighbourhood", {
                    "entity": "Alice", "as_of": before.isoformat()}))
                assert {i["kind"] for i in near_then["items"]} <= {"fact"}

                edges = _data(await client.call_tool("graph_edges", {"entity": "Globex"}))
                assert {(e["source_entity"], e["target_entity"]) for e in edges["edges"]} == {
                    ("Alice", "Globex"), ("Globex", "Lisbon")}
                assert all(e["valid_until"] is None for e in edges["edges"])
                naive = (before.astimezone(UTC).replace(tzinfo=None)).isoformat()  # no offset: read as UTC
                assert _data(await client.call_tool("graph_edges", {"as_of": naive}))["edges"] == []

    _run(scenario)


# -- errors ------------------------------------------------------------------------------------------------


def test_bad_input_is_a_tool_error_naming_the_field_and_writes_nothing(db):
    tenant = uuid.uuid4()

    async def scenario() -> None:
        with _tools(db, tenant, user_id=uuid.uuid4(), session_id="chat-1") as tools:
            async with Client(build_server(tools)) as client:
                packets = superuser_count(db)
                facts = superuser_count(db, "memsub.knowledge_facts")
                # refused by the input schema, before the tool runs
                assert "k" in _error(await client.call_tool("recall", {"query": "x", "k": 0}))
                assert "thread_id" in _error(await client.call_tool("remember", {"text": "x",
                                                                                 "thread_id": "not-a-uuid"}))
                assert "importance" in _error(await client.call_tool("remember", {"text": "x", "importance": 2}))
                assert "scope" in _error(await client.call_tool("remember", {"text": "x", "scope": "everyone"}))
                assert "text" in _error(await client.call_tool("remember", {}))
                # an unknown tool is a protocol error (the MCP specification: -32602), not a tool result
                with pytest.raises(MCPError) as unknown:
                    await client.call_tool("forget_everything", {})
                assert unknown.value.code == -32602 and "forget_everything" in unknown.value.message
                # refused by the tool
                assert "field text" in _error(await client.call_tool("remember", {"text": "   "}))
                assert "field tags" in _error(await client.call_tool("recall", {"query": "x", "tags": ["a"]}))
                # refused by the database: the whole write rolls back (the embedding and fact included)
                private = _error(await client.call_tool("remember", {
                    "text": "a private note", "scope": "l-private",
                    "facts": [{"subject": "s", "predicate": "p", "object": 1}]}))
                assert "SQLSTATE 22023" in private and "field memory.facts" in private
                assert "nothing was written" in private
                orphan = _error(await client.call_tool("remember", {"text": "child of nothing",
                                                                    "parent_ids": [str(uuid.uuid4())]}))
                assert "SQLSTATE 23503" in orphan
                unknown = _error(await client.call_tool("feedback", {"access_id": str(uuid.uuid4()),
                                                                     "was_useful": True}))
                assert "SQLSTATE 23503" in unknown and "field access_id" in unknown
                deep = _error(await client.call_tool("graph_traverse", {"entity": "x", "max_depth": 11}))
                assert "max_depth" in deep
                # a lone surrogate (JSON's \ud800 escape) has no UTF-8 form: the input schema refuses it by place
                lone = _error(await client.call_tool("remember", {"text": "fine", "tags": ["ok", "\ud800"]}))
                assert "tags.1" in lone and "unicode" in lone
                assert "query" in _error(await client.call_tool("recall", {"query": "x\udcff"}))
                assert superuser_count(db) == packets
                assert superuser_count(db, "memsub.knowledge_facts") == facts
                assert superuser_count(db, "memsub.memory_embeddings") == 0

    _run(scenario)



def test_a_refused_input_is_one_line_naming_each_field(db):
    """docs/mcp.md, "Errors": a refused call is one line, which the assistant reads to correct itself: each field
    with what is wrong with it, not the validation library's report (several lines, links, the values given)."""

    async def scenario() -> None:
        with _tools(db, uuid.uuid4()) as tools:
            async with Client(build_server(tools)) as client:
                k = _error(await client.call_tool("recall", {"query": "x", "k": 0}))
                assert k == "Error executing tool recall: field k: Input should be greater than or equal to 1", k
                several = _error(await client.call_tool("recall", {"k": 0, "mode": "fuzzy"}))
                assert several == ("Error executing tool recall: field query: Field required; field k: Input "
                                   "should be greater than or equal to 1; field mode: Input should be 'semantic' "
                                   "or 'hybrid'"), several
                for name, arguments in [
                    ("remember", {}),
                    ("remember", {"text": "x", "thread_id": "not-a-uuid"}),
                    ("remember", {"text": "x", "tags": ["ok", 7]}),
                    ("remember", {"text": "x", "facts": [{"subject": "s"}]}),
                    ("graph_edges", {"as_of": "yesterday"}),
                    ("replay_thread", {"thread_id": str(uuid.uuid4()), "limit": 10_001}),
                    ("feedback", {"access_id": str(uuid.uuid4())}),
                    ("remember", {"text": "x", "tag": ["kiln"]}),
                ]:
                    text = _error(await client.call_tool(name, arguments))
                    assert "\n" not in text and "pydantic" not in text and "input_value" not in text, text
                    assert text.startswith(f"Error executing tool {name}: field "), text

    _run(scenario)


def test_integer_boolean_and_number_inputs_take_their_json_type_only(db):
    """The input schema says integer, boolean or number, and the HTTP API refuses a boolean or a string for them:
    so does every tool, instead of reading true as 1 or "5" as 5."""

    async def scenario() -> None:
        with _tools(db, uuid.uuid4()) as tools:
            async with Client(build_server(tools)) as client:
                listed = {tool.name: tool for tool in (await client.list_tools()).tools}
                assert listed["recall"].input_schema["properties"]["k"]["type"] == "integer"
                assert listed["feedback"].input_schema["properties"]["was_useful"]["type"] == "boolean"
                for name, arguments, field in [
                    ("recall", {"query": "x", "k": True}, "k"),
                    ("recall", {"query": "x", "k": "5"}, "k"),
                    ("recall", {"query": "x", "k": 2.5}, "k"),
                    ("recall", {"query": "x", "with_packets": 1}, "with_packets"),
                    ("recall", {"query": "x", "vector_weight": "2"}, "vector_weight"),
                    ("recall_entries", {"query": "x", "k": False}, "k"),
                    ("replay_thread", {"thread_id": str(uuid.uuid4()), "after_cursor": "0"}, "after_cursor"),
                    ("graph_traverse", {"entity": "x", "max_depth": True}, "max_depth"),
                    ("remember", {"text": "x", "importance": "0.5"}, "importance"),
                    ("remember_entry", {"namespace": "app:x", "key": "k", "value": 1, "expected_version": "1"},
                     "expected_version"),
                    ("feedback", {"access_id": str(uuid.uuid4()), "was_useful": "yes"}, "was_useful"),
                ]:
                    text = _error(await client.call_tool(name, arguments))
                    assert f"field {field}: " in text, (name, arguments, text)
                assert _data(await client.call_tool("recall", {"query": "x", "k": 3}))["hits"] == []
                assert _data(await client.call_tool("recall", {"query": "x", "vector_weight": 2}))["hits"] == []

    _run(scenario)


def test_nan_or_an_infinity_in_a_json_input_is_a_one_line_error_naming_it(db):
    """JSON has no NaN or Infinity, but the server's JSON parser reads them: in a JSON input (an entry's value
    and metadata, a memory's data, a fact's object) they are refused naming the input, as one line with the
    error class, SQLSTATE and field, and nothing is written."""
    user = uuid.uuid4()
    with _tools(db, uuid.uuid4(), user_id=user) as tools:
        for call, field in [
            (lambda: tools.remember_entry(f"user:{user}", "k", float("nan"), None, "semantic", None), "value"),
            (lambda: tools.remember_entry(f"user:{user}", "k", {"a": [1, float("inf")]}, None, "semantic", None),
             "value.a[1]"),
            (lambda: tools.remember_entry(f"user:{user}", "k", 1, None, "semantic", {"m": float("-inf")}),
             "metadata.m"),
            (lambda: tools.remember("t", "note", [], None, [], None, None, "shared", {"x": float("nan")}, [], [],
                                    "content"), "data.x"),
            (lambda: tools.remember("t", "note", [], None, [], None, None, "shared", None,
                                    [Fact(subject="s", predicate="p", object=float("nan"))], [], "content"),
             "facts[0].object"),
        ]:
            with pytest.raises(ToolError) as refused:
                call()
            text = str(refused.value)
            assert text.startswith(f"InvalidInput (SQLSTATE 22023, field {field}): "), text
            assert "\n" not in text and text.endswith("; nothing was written"), text
    assert superuser_count(db) == 0 and superuser_count(db, "memsub.memory_entries") == 0

    # the same through the stdio server, whose JSON parser takes NaN: a tool error, no traceback on stderr
    tenant = uuid.uuid4()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSUB_")} | _env(
        MEMSUB_DSN=db.dsn("app"), MEMSUB_TENANT=str(tenant), MEMSUB_EMBEDDER="hashing")
    command = _command()
    server = subprocess.Popen([*command, "mcp", "--transport", "stdio", "--user", str(user)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert server.stdin is not None and server.stdout is not None
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "remember_entry", "arguments": {"namespace": f"user:{user}", "key": "k", "value": "NOT-JSON"}}},
                   ).replace('"NOT-JSON"', "NaN"),
    ]
    try:
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()
        reply: dict[str, Any] = {}
        while reply.get("id") != 2:
            ready, _, _ = select.select([server.stdout], [], [], 60)
            assert ready, "no reply from the server"
            reply = json.loads(server.stdout.readline())
        _, stderr = server.communicate("", timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
    result = reply["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("Error executing tool remember_entry: InvalidInput (SQLSTATE 22023, field value): "), text
    assert "Traceback" not in stderr, stderr


def test_an_argument_no_tool_has_is_refused_naming_it_and_writes_nothing(db):
    """A misspelt argument (``tag`` for ``tags``) is refused, as the HTTP API refuses an unknown field, instead of
    being dropped: the memory would otherwise be stored without what the assistant meant to give it."""
    tenant = uuid.uuid4()

    async def scenario() -> None:
        with _tools(db, tenant, user_id=uuid.uuid4()) as tools:
            async with Client(build_server(tools)) as client:
                listed = (await client.list_tools()).tools
                packets = superuser_count(db)
                refused = _error(await client.call_tool("remember", {"text": "kiln at 1200C", "tag": ["kiln"]}))
                assert "tag" in refused and "Extra inputs are not permitted" in refused, refused
                for tool in listed:
                    assert tool.input_schema.get("additionalProperties") is False, tool.name
                    assert "Extra inputs" in _error(await client.call_tool(tool.name, {"no_such_argument": 1}))
                assert superuser_count(db) == packets

    _run(scenario)

# -- identity ----------------------------------------------------------------------------------------------


def test_two_configured_identities_never_see_each_others_memory(db):
    tenant_a, tenant_b = uuid.uuid4(), uuid.uuid4()
    user = uuid.uuid4()  # the same user id in both tenants: still two separate memories
    thread = uuid.uuid4()

    async def scenario() -> None:
        with _tools(db, tenant_a, user_id=user) as tools_a, _tools(db, tenant_b, user_id=user) as tools_b:
            async with Client(build_server(tools_a)) as a, Client(build_server(tools_b)) as b:
                _data(await a.call_tool("remember", {
                    "text": "Tenant A's launch date is the ninth of March.", "thread_id": str(thread),
                    "relationships": [{"source_entity": "Launch", "relationship_type": "owned_by",
                                       "target_entity": "Team A"}]}))
                _data(await a.call_tool("remember_entry", {"namespace": f"user:{user}:plans", "key": "date",
                                                           "value": "ninth of March"}))
                hit = _data(await a.call_tool("recall", {"query": "launch date ninth of March"}))["hits"][0]

                assert _data(await b.call_tool("recall", {"query": "launch date ninth of March"}))["hits"] == []
                assert _data(await b.call_tool("recall", {"query": "launch date", "mode": "semantic"}))["hits"] == []
                assert _data(await b.call_tool("recall_entries", {"query": "ninth of March"}))["hits"] == []
                assert _data(await b.call_tool("replay_thread", {"thread_id": str(thread)}))["packets"] == []
                assert _data(await b.call_tool("graph_traverse", {"entity": "Launch"}))["paths"] == []
                assert _data(await b.call_tool("graph_edges", {}))["edges"] == []
                refused = _error(await b.call_tool("feedback", {"access_id": hit["access_id"], "was_useful": False}))
                assert "SQLSTATE 23503" in refused
                # B writing into A's thread id makes a thread of B's own; A's replay is unchanged
                _data(await b.call_tool("remember", {"text": "B's note", "thread_id": str(thread)}))
                page = _data(await a.call_tool("replay_thread", {"thread_id": str(thread)}))
                assert [p["payload"]["text"] for p in page["packets"]] == [
                    "Tenant A's launch date is the ninth of March."]

    _run(scenario)
    with db.connect() as conn:
        owners = conn.execute("select tenant_id from memsub.packet_store where thread_id = %s", [thread]).fetchall()
    assert sorted(str(row[0]) for row in owners) == sorted([str(tenant_a), str(tenant_b)])


def test_a_signed_context_token_names_the_identity(db, tmp_path):
    key = b"k" * 32
    tenant = uuid.uuid4()
    with db.connect("platform_admin", autocommit=True) as conn:
        conn.execute("select memsub.set_context_signing_key(%s, %s)", ["gateway-1", key])
    token_file = tmp_path / "token"
    token_file.write_text(mint_context_token(key, "gateway-1", tenant, ttl_seconds=300, login="memsub_test_app"))

    async def scenario() -> None:
        with Substrate(db.dsn("app"), max_size=2) as substrate:
            identity = Identity(token_file=token_file)
            tools = MemoryTools(substrate, identity, HashingEmbedder(check_identity(substrate, identity)))
            async with Client(build_server(tools)) as client:
                written = _data(await client.call_tool("remember", {"text": "signed and sealed"}))
                # the file is read again for every call: a bad token there refuses the next call
                token_file.write_text(token_file.read_text()[:-4] + "AAAA")
                refused = _error(await client.call_tool("recall", {"query": "signed"}))
                assert "SQLSTATE 28000" in refused and "field signature" in refused
                assert token_file.read_text().split(".")[1] not in refused  # the error never echoes the token
        with db.connect() as conn:
            assert conn.execute("select tenant_id from memsub.packet_store where packet_id = %s",
                                [written["packet_id"]]).fetchone() == (tenant,)

    _run(scenario)


def test_the_identity_is_checked_when_the_server_starts(db):
    login = f"memsub_svc_{uuid.uuid4().hex[:10]}"
    bound, other = uuid.uuid4(), uuid.uuid4()
    with db.connect(autocommit=True) as conn:
        conn.execute(sql.SQL("create role {} login in role memsub_app").format(sql.Identifier(login)))
    try:
        with db.connect("platform_admin", autocommit=True) as conn:
            conn.execute("select memsub.bind_login(%s, %s)", [login, bound])
        with Substrate(db.server.dsn(db.name, login), max_size=1) as substrate:
            assert check_identity(substrate, Identity(tenant_id=bound)) > 0
            with pytest.raises(ContextError) as caught:
                check_identity(substrate, Identity(tenant_id=other))
            assert caught.value.sqlstate == "42501"
        result = _memsub(["mcp", "--dsn", db.server.dsn(db.name, login), "--tenant", str(other),
                          "--embedder", "hashing"])
        assert result.returncode == 4 and "42501" in result.stderr and result.stdout == ""
    finally:
        with db.connect(autocommit=True) as conn:
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(login)))


def test_the_command_refuses_a_missing_or_doubled_identity(db):
    missing = _memsub(["mcp", "--dsn", db.dsn("app")])
    assert missing.returncode == 2 and "--tenant" in missing.stderr
    doubled = _memsub(["mcp", "--dsn", db.dsn("app"), "--tenant", str(uuid.uuid4()), "--context-token", "x.y"])
    assert doubled.returncode == 2 and "signed context token" in doubled.stderr
    unreadable = _memsub(["mcp", "--dsn", db.dsn("app"), "--context-token-file", "/nonexistent/token"])
    assert unreadable.returncode == 2 and "cannot read the context token file" in unreadable.stderr


# -- the command, over stdio and streamable HTTP ------------------------------------------------------------


def _command() -> list[str]:
    script = Path(sys.executable).parent / "memsub"
    return [str(script)] if script.exists() else [sys.executable, "-m", "memsub"]


def _env(**extra: str) -> dict[str, str]:
    return {"PYTHONPATH": PACKAGE_PARENT, **extra}


def _memsub(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSUB_")} | _env()
    return subprocess.run([*_command(), *args], capture_output=True, text=True, env=env, timeout=120, check=False)


def _stdio(db: Any, tenant: uuid.UUID, embedder: str = "hashing") -> StdioServerParameters:
    command = _command()
    return StdioServerParameters(command=command[0], args=[*command[1:], "mcp", "--transport", "stdio"],
                                 env=_env(MEMSUB_DSN=db.dsn("app"), MEMSUB_TENANT=str(tenant),
                                          MEMSUB_EMBEDDER=embedder))


def test_stdio_servers_for_two_tenants(db):
    tenant_a, tenant_b = uuid.uuid4(), uuid.uuid4()

    async def scenario() -> None:
        # the same embedder named both ways: a built-in name and module:factory
        async with Client(_stdio(db, tenant_a)) as a, \
                Client(_stdio(db, tenant_b, "memsub.embedding:HashingEmbedder")) as b:
            assert [t.name for t in (await a.list_tools()).tools] == tool_names()
            written = _data(await a.call_tool("remember", {"text": "the vault code is under the blue mug"}))
            hits = _data(await a.call_tool("recall", {"query": "vault code blue mug"}))["hits"]
            assert hits[0]["packet_id"] == written["packet_id"]
            assert _data(await b.call_tool("recall", {"query": "vault code blue mug"}))["hits"] == []
            error = _error(await b.call_tool("feedback", {"access_id": hits[0]["access_id"], "was_useful": True}))
            assert "23503" in error

    _run(scenario)


def _answer(process: subprocess.Popen[str], line: str, timeout: float = 20.0) -> dict[str, Any]:
    """Write one line to a stdio server and read the one message it answers with (failing after ``timeout``)."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, f"no answer to {line[:120]}"
    answer = json.loads(process.stdout.readline())
    assert isinstance(answer, dict)
    return answer


def test_a_stdio_line_the_sdk_cannot_read_is_answered_not_dropped(db):
    """Over stdio a message is a line, and the SDK drops a line it cannot read, answering nothing: a client then
    waits for ever. Each gets a JSON-RPC error instead, with the request's id when the line is JSON that holds one
    (the SDK's parser refuses a string with an unpaired surrogate, which JSON's \\ud800 escape spells, and nesting
    past 200 levels): -32700 for a line that is not JSON, -32602 naming the place of an unpaired surrogate,
    -32600 for any other message that is not JSON-RPC 2.0 (a batch among them). The server goes on serving, and
    nothing is written."""
    tenant = uuid.uuid4()
    command = _command()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSUB_")} | _env(
        MEMSUB_DSN=db.dsn("app"), MEMSUB_TENANT=str(tenant), MEMSUB_EMBEDDER="hashing")
    process = subprocess.Popen([*command, "mcp", "--transport", "stdio"], env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def call(request_id: int, name: str, arguments: str) -> str:
        return (f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", '
                f'"params": {{"name": "{name}", "arguments": {arguments}}}}}')

    try:
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
        assert "result" in _answer(process, json.dumps(initialize))
        assert process.stdin is not None
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        deep = "[" * 300 + "]" * 300
        for line, request_id, code, words in (
                ("{not json", None, -32700, "not JSON"),
                (call(2, "remember", '{"text": "a\\ud800b"}'), 2, -32602, "params.arguments.text"),
                (call(3, "remember", '{"text": "ab", "tags": ["x", "\\udc00"]}'), 3, -32602,
                 "params.arguments.tags[1]"),
                (call(4, "remember_entry", f'{{"namespace": "app:x", "key": "k", "value": {deep}}}'), 4, -32600,
                 "nested"),
                (json.dumps([{"jsonrpc": "2.0", "id": 5, "method": "ping"}]), None, -32600, "batch"),
                (json.dumps({"id": 6, "method": "ping"}), 6, -32600, "JSON-RPC 2.0"),
                (json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": [1]}), 8, -32600,
                 "params"),
                # a request whose id is no string or integer (MCP: not null either), which the SDK took for a
                # notification and answered nothing
                ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', None, -32600, "id"),
                ('{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', None, -32600, "id"),
                ('{"jsonrpc": "2.0", "id": 9.0, "method": "ping"}', None, -32600, "id"),
                ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, -32600, "id"),
                ('{"jsonrpc": "2.0", "id": [10], "method": "ping"}', None, -32600, "id"),
                ('{"jsonrpc": "2.0", "method": "tools/call", "id": {"n": 11}, "params": {"name": "remember", '
                 '"arguments": {"text": "not written"}}}', None, -32600, "id")):
            answer = _answer(process, line)
            assert answer["id"] == request_id and answer["error"]["code"] == code, answer
            assert words in answer["error"]["message"], answer
        assert _answer(process, json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"})) == {
            "jsonrpc": "2.0", "id": 7, "result": {}}
    finally:
        assert process.stdin is not None
        process.stdin.close()
        _ended(process)
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.packet_store").fetchone() == (0,)
        assert conn.execute("select count(*) from memsub.memory_entries").fetchone() == (0,)


def _ended(process: subprocess.Popen[str]) -> None:
    """Waits for a server asked to stop (stdin closed, or terminated); kills it if it has not ended in 10 s."""
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_over_http(port: int, **settings: str) -> subprocess.Popen[str]:
    """`memsub mcp --transport http` on ``port`` with the MEMSUB_* ``settings`` (and the hashing embedder),
    returned once it listens; the caller stops it (terminate, then _ended)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSUB_")} | _env(**settings)
    process = subprocess.Popen([*_command(), "mcp", "--transport", "http", "--port", str(port),
                                "--embedder", "hashing"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, process.communicate()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            if time.monotonic() >= deadline:
                process.terminate()
                _ended(process)
                raise AssertionError("the HTTP server did not start") from None
            time.sleep(0.2)


def test_streamable_http_round_trip(db):
    port = _free_port()
    tenant = uuid.uuid4()
    process = start_over_http(port, MEMSUB_DSN=db.dsn("app"), MEMSUB_TENANT=str(tenant))
    try:
        async def scenario() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                assert [t.name for t in (await client.list_tools()).tools] == tool_names()
                written = _data(await client.call_tool("remember", {"text": "over HTTP, the deploy window is 2am"}))
                hits = _data(await client.call_tool("recall", {"query": "deploy window"}))["hits"]
                assert hits[0]["packet_id"] == written["packet_id"]
                assert "k" in _error(await client.call_tool("recall", {"query": "x", "k": -1}))
                with pytest.raises(MCPError) as unknown:  # -32602 over this transport too
                    await client.call_tool("forget_everything", {})
                assert unknown.value.code == -32602

        _run(scenario)
    finally:
        process.terminate()
        _ended(process)
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.packet_store where tenant_id = %s",
                            [tenant]).fetchone() == (1,)


# -- the README's client configuration ----------------------------------------------------------------------


def test_readme_client_configuration_starts_a_working_server(db):
    block = re.search(r"```json\n(\{\s*\"mcpServers\".*?)```", README.read_text(), flags=re.S)
    assert block is not None
    entry = json.loads(block.group(1))["mcpServers"]["memsub"]
    assert entry["command"] == "memsub" and entry["args"][:1] == ["mcp"]
    tenant = uuid.uuid4()
    env = dict(entry["env"]) | {"MEMSUB_DSN": db.dsn("app"), "MEMSUB_TENANT": str(tenant),
                                "MEMSUB_EMBEDDER": "hashing"}
    command = _command()
    params = StdioServerParameters(command=command[0], args=[*command[1:], *entry["args"]], env=_env(**env))

    async def scenario() -> None:
        async with Client(params) as client:
            _data(await client.call_tool("remember", {"text": "configured from the README"}))
            assert _data(await client.call_tool("recall", {"query": "README"}))["hits"]

    _run(scenario)
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.packet_store where tenant_id = %s",
                            [tenant]).fetchone() == (1,)


def test_console_entry_runs_as_a_module():
    result = subprocess.run([sys.executable, "-m", "memsub", "mcp", "--help"], capture_output=True, text=True,
                            env={**os.environ, **_env()}, timeout=120, check=False)
    assert result.returncode == 0 and "--transport" in result.stdout, result.stderr



def test_a_thread_page_at_the_largest_limit_follows_the_http_cursor_rule(db):
    """replay_thread takes limit up to max_rows like get_thread, and its next_cursor follows the HTTP API's rule:
    a full page carries the cursor of its last packet, a page that is not full carries none."""
    thread = uuid.uuid4()
    with _tools(db, uuid.uuid4()) as tools:
        written = [tools.remember(f"turn {i}", "observation", [], thread, [], None, None, "shared", None, [], [],
                                  "content") for i in range(3)]
        page = tools.replay_thread(thread, 10_000, None)
        assert [p.packet_id for p in page.packets] == [w.packet_id for w in written]
        assert page.next_cursor is None
        full = tools.replay_thread(thread, 3, None)
        assert full.next_cursor == full.packets[-1].write_seq
        assert tools.replay_thread(thread, 3, full.next_cursor) == type(full)(
            thread_id=thread, packets=[], next_cursor=None)
