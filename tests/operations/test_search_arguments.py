"""The CLI's ``memsub search`` options and the MCP ``recall`` tool's inputs against the stored search functions.

Both surfaces serve memsub.semantic_search and memsub.hybrid_search. An argument either function gains must
become an option of the command and an input of the tool, or be listed here with the reason it is left out;
an option or input named after no argument must be listed here too. The behavioural tests check that an argument
given on either surface reaches the function: the same call through the Python client returns the same rows.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from memsub.cli import main
from memsub.cli_search import search_command
from memsub.client import Substrate
from memsub.embedding import HashingEmbedder, embed_envelopes
from memsub.mcp_server import Identity, MemoryTools, build_server, check_identity

from helpers import superuser_count

FUNCTIONS = ("semantic_search", "hybrid_search")

# What both surfaces leave out of each function, and why.
NOT_EXPOSED = {
    "query": "the surface embeds its query text with the configured embedder",
    "query_text": "the query text itself (hybrid: matched by words; semantic: recorded in the access log)",
}
CLI_NOT_EXPOSED = {**NOT_EXPOSED}
MCP_NOT_EXPOSED = {
    **NOT_EXPOSED,
    "record_access": "always on: every hit gets an access_id the feedback tool takes",
    "agent_id": "the server's --agent-id: whom the assistant acts as is not the assistant's choice",
}
# Options and inputs that are no argument of either function, and why.
CLI_ONLY = {
    "query": "the text searched for, passed as query and query_text",
    "mode": "which function is called (semantic or hybrid)",
    "embedder": "embeds the query text",
    "as_json": "output format",
    "dsn": "the server", "tenant_id": "the tenant context", "org_id": "the tenant context",
    "user_id": "the tenant context", "session_id": "the tenant context", "roles": "the tenant context",
}
MCP_ONLY = {
    "query": "the text searched for, passed as query and query_text",
    "mode": "which function is called (semantic or hybrid)",
}
# The function's argument an option or input feeds, when its name differs (the surfaces' `mode` is taken).
RENAMED = {"method": "mode"}


def function_arguments(conn: Any, function: str) -> set[str]:
    """The argument names (without p_) of memsub.<function>, which has exactly one overload."""
    rows = conn.execute("select p.proargnames[1:p.pronargs] from pg_catalog.pg_proc p "
                        "where p.pronamespace = 'memsub'::regnamespace and p.proname = %s", [function]).fetchall()
    assert len(rows) == 1, f"memsub.{function} has {len(rows)} overloads"
    return {name.removeprefix("p_") for name in rows[0][0]}


def compare(db: Any, surface: str, offered: set[str], only: dict[str, str], not_exposed: dict[str, str]) -> None:
    with db.connect("app") as conn:
        expected = {function: function_arguments(conn, function) for function in FUNCTIONS}
    fed = {RENAMED.get(name, name) for name in offered - set(only)}
    every = set().union(*expected.values())
    assert set(not_exposed) <= every, f"{surface}: lists as left out what no function takes"
    assert not (set(only) - offered), f"{surface}: lists {sorted(set(only) - offered)}, which it does not offer"
    for function, names in expected.items():
        missing = sorted(names - fed - set(not_exposed))
        assert missing == [], f"{surface} lacks arguments of memsub.{function}: {missing}"
    unknown = sorted(fed - every)
    assert unknown == [], f"{surface} offers what no search function takes: {unknown}"


def test_the_cli_search_options_are_the_search_functions_arguments(db):
    offered = {param.name for param in search_command.params if param.name}
    compare(db, "memsub search", offered, CLI_ONLY, CLI_NOT_EXPOSED)


@contextmanager
def _tools(db: Any, tenant: uuid.UUID) -> Iterator[MemoryTools]:
    with Substrate(db.dsn("app"), max_size=2) as substrate:
        who = Identity(tenant_id=tenant)
        dimension = check_identity(substrate, who)
        yield MemoryTools(substrate, who, HashingEmbedder(dimension), agent_id="assistant-1")


async def _recall_schema(tools: MemoryTools) -> dict[str, Any]:
    async with Client(build_server(tools)) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    schema: dict[str, Any] = listed["recall"].input_schema
    return schema


def test_the_mcp_recall_inputs_are_the_search_functions_arguments(db):
    with _tools(db, uuid.uuid4()) as tools:
        schema = anyio.run(_recall_schema, tools)
    compare(db, "MCP recall", set(schema["properties"]), MCP_ONLY, MCP_NOT_EXPOSED)


# -- half_life reaches memsub.hybrid_search -------------------------------------------------------------------

QUERY = "harbor crane maintenance schedule"
TEXTS = {"old": "harbor crane maintenance schedule for the north quay",
         "new": "harbor crane maintenance schedule for the south quay"}


@pytest.fixture
def aged(db: Any) -> tuple[uuid.UUID, dict[str, str], HashingEmbedder]:
    """A tenant with two packets matching QUERY alike, one written two days ago, one now."""
    tenant = uuid.uuid4()
    with Substrate(db.dsn("app"), max_size=1) as substrate, substrate.tenant(tenant) as session:
        embedder = HashingEmbedder(session.vector_dimension())
        envelopes: list[dict[str, Any]] = [
            {"packet_type": "note", "payload": {"text": TEXTS["old"]},
             "timestamp": (datetime.now(UTC) - timedelta(days=2)).isoformat()},
            {"packet_type": "note", "payload": {"text": TEXTS["new"]}}]
        embed_envelopes(envelopes, embedder)
        ids = {age: str(session.packets.write(envelope).packet_id)
               for age, envelope in zip(TEXTS, envelopes, strict=True)}
    return tenant, ids, embedder


def _client_scores(db: Any, tenant: uuid.UUID, embedder: HashingEmbedder, **arguments: Any) -> dict[str, float]:
    with Substrate(db.dsn("app"), max_size=1) as substrate, substrate.tenant(tenant) as session:
        hits = session.search.hybrid(QUERY, embedder.embed([QUERY])[0], 5, **arguments)
    return {str(hit.packet_id): hit.score for hit in hits}


def _cli(db: Any, tenant: uuid.UUID, *options: str) -> Any:
    return CliRunner().invoke(main, ["search", QUERY, "--dsn", db.dsn("app"), "--tenant", str(tenant),
                                     "--embedder", "hashing", "--k", "5", *options])


def test_the_cli_half_life_weighs_recency_as_the_function_does(db, aged):
    tenant, ids, embedder = aged
    scores: dict[str, dict[str, float]] = {}
    for option, half_life in (("1h", timedelta(hours=1)), ("3650d", timedelta(days=3650))):
        result = _cli(db, tenant, "--mode", "hybrid", "--recency-weight", "1", "--half-life", option, "--json")
        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        scores[option] = {row["packet_id"]: row["score"] for row in rows}
        expected = _client_scores(db, tenant, embedder, recency_weight=1.0, half_life=half_life)
        assert scores[option] == pytest.approx(expected, rel=1e-2)
    # two days are 48 half-lives of an hour (no boost left) and a small part of ten years' (the boost is whole)
    assert scores["1h"][ids["old"]] == pytest.approx(scores["3650d"][ids["old"]] / 2, rel=1e-2)
    assert scores["1h"][ids["new"]] == pytest.approx(scores["3650d"][ids["new"]], rel=1e-2)


@pytest.mark.parametrize(("options", "named"), [
    (("--mode", "hybrid", "--half-life", "soon"), "--half-life"),
    (("--mode", "hybrid", "--half-life", "0.5s"), "half_life"),  # the function's check: at least a second
    (("--mode", "semantic", "--half-life", "1h"), "--half-life"),
    (("--mode", "hybrid", "--ef-search", "50"), "--ef-search"),
    (("--mode", "semantic", "--ef-search", "0"), "ef_search"),
    (("--mode", "semantic", "--since", "yesterday"), "--since"),
])
def test_the_cli_refuses_a_bad_search_option_in_one_line(db, aged, options, named):
    tenant, _, _ = aged
    result = _cli(db, tenant, "--record", *options)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("memsub: ") and named in lines[-1], lines
    assert "Traceback" not in result.output and result.stdout == ""
    assert superuser_count(db, "memsub.memory_access_log") == 0


def test_a_packet_thousands_of_half_lives_old_gets_no_recency_boost_and_no_error(db, aged):
    # Two days are 2,880 half-lives of a minute: PostgreSQL's power(0.5, x) raised "value out of range:
    # underflow" past about 1,074, and the whole search failed.
    tenant, ids, embedder = aged
    unboosted = _client_scores(db, tenant, embedder)
    scores = _client_scores(db, tenant, embedder, recency_weight=1.0, half_life=timedelta(minutes=1))
    assert scores[ids["old"]] == pytest.approx(unboosted[ids["old"]], rel=1e-9)
    assert unboosted[ids["new"]] < scores[ids["new"]] <= 2 * unboosted[ids["new"]]


@pytest.mark.parametrize("seconds", [3600, 3650 * 86400])
def test_the_mcp_half_life_weighs_recency_as_the_function_does(db, aged, seconds):
    tenant, ids, embedder = aged
    # read first: a recall records its accesses, which make both packets recently used
    unboosted = _client_scores(db, tenant, embedder)
    expected = _client_scores(db, tenant, embedder, recency_weight=1.0, half_life=timedelta(seconds=seconds))

    async def scenario() -> dict[str, float]:
        with _tools(db, tenant) as tools:
            async with Client(build_server(tools)) as client:
                result = await client.call_tool("recall", {
                    "query": QUERY, "k": 5, "mode": "hybrid", "recency_weight": 1, "half_life": seconds})
        assert not result.is_error, result.content
        assert isinstance(result.structured_content, dict)
        return {hit["packet_id"]: hit["score"] for hit in result.structured_content["hits"]}

    found = anyio.run(scenario)
    assert found == pytest.approx(expected, rel=1e-2)
    # the packet written now gets the whole boost; the one written two days ago nearly all of it with a half-life
    # of ten years, and none after 48 half-lives of an hour
    assert found[ids["new"]] == pytest.approx(2 * unboosted[ids["new"]], rel=1e-2)
    assert found[ids["old"]] == pytest.approx((2 if seconds > 86400 else 1) * unboosted[ids["old"]], rel=1e-2)


@pytest.mark.parametrize(("arguments", "named"), [
    ({"mode": "hybrid", "half_life": "soon"}, "half_life"),
    ({"mode": "hybrid", "half_life": 0.5}, "field half_life"),  # the function's check: at least a second
    ({"mode": "hybrid", "half_life": 1e300}, "field half_life"),
    ({"mode": "hybrid", "half_life": 2**63}, "field half_life"),
    ({"mode": "semantic", "half_life": 3600}, "field half_life"),
    ({"mode": "hybrid", "ef_search": 50}, "field ef_search"),
    ({"mode": "semantic", "ef_search": 0}, "ef_search"),
    ({"mode": "semantic", "method": "sideways"}, "method"),
])
def test_the_mcp_recall_refuses_a_bad_search_input_naming_the_field(db, aged, arguments, named):
    tenant, _, _ = aged

    async def scenario() -> str:
        with _tools(db, tenant) as tools:
            async with Client(build_server(tools)) as client:
                result = await client.call_tool("recall", {"query": QUERY, **arguments})
        assert result.is_error, result.structured_content
        text: str = result.content[0].text
        return text

    text = anyio.run(scenario)
    assert named in text
    assert "Python" not in text and "C int" not in text, text  # memsub's words, not the interpreter's
    assert superuser_count(db, "memsub.memory_access_log") == 0
