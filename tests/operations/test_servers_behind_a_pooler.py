"""``memsub serve`` and ``memsub mcp`` behind a transaction-mode connection pooler (docs/client.md, "Behind a
connection pooler"): such a pooler runs each transaction of a client on whichever server session is free, so a
server must leave nothing in a session beyond its transaction. Configured not to prepare statements
(``--prepare-threshold none``, MEMSUB_PREPARE_THRESHOLD), a server prepares none on its connections, and after
its requests no setting of the session differs from what the login started with (tests/helpers.py,
SESSION_STATE, read on the server's own pooled connection). A bad value is refused, naming the option, before
any connection is attempted.

The HTTP application runs in this process (httpx's ASGI transport) on a pool of one connection, which the test
then reads; the MCP command runs in this process too, its real server driven by the SDK's in-memory client in
place of stdio. Every server acts as the ordinary app login.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from mcp import Client
from psycopg.conninfo import make_conninfo

import memsub.mcp_server
from http_helpers import create_key
from memsub.cli import main as cli
from memsub.http_api import create_app

from helpers import NOTHING_HELD, SESSION_STATE, held, refused_dsn, session_state

RUNS = 8  # psycopg prepares a statement the sixth time it runs on a connection
FAR_FROM_UTC = "Asia/Kathmandu"  # +05:45: a time rendered in it cannot pass for UTC


USER = uuid.UUID("a1000000-0000-0000-0000-00000000000a")
NAMESPACE = f"user:{USER}:prefs"  # the context's user writes it


def api_key(db: Any, tenant: uuid.UUID) -> str:
    """A key of ``tenant`` and USER, with the app login left unbound as `memsub serve` needs it."""
    with db.connect(autocommit=True) as conn:
        conn.execute("select memsub.unbind_login('memsub_test_app')")
    return str(create_key(db.dsn("platform_admin"), tenant, user=USER)["api_key"])


@asynccontextmanager
async def served(app: Any, key: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of ``app`` running in this event loop, its pool opened (as the lifespan would) and closed."""
    await app.state.pool.open(wait=True)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://memsub.test",
                                     headers={"Authorization": f"Bearer {key}"}) as client:
            yield client
    finally:
        await app.state.pool.close()


async def state_of_the_pool(app: Any) -> dict[str, Any]:
    """SESSION_STATE of the app's one pooled connection."""
    async with app.state.pool.connection() as conn:
        return session_state(await (await conn.execute(SESSION_STATE)).fetchone())


async def every_route(client: httpx.AsyncClient, dimension: int) -> list[str]:
    """Each route that reaches the database, RUNS times; the times the answers carry."""
    times: list[str] = []
    thread = str(uuid.uuid4())
    run = uuid.uuid4().hex[:8]  # the keys of this call's memory entries
    vector = [0.01] * dimension
    for i in range(RUNS):
        written = await client.post("/api/v1/memory/packet", json={
            "packet_type": "note", "thread_id": thread, "payload": {"text": f"note {i}"},
            "memory": {"embeddings": [{"embedding_type": "content", "vector": vector, "chunk_text": f"note {i}"}],
                       "relationships": [{"source_entity": "Ada", "relationship_type": "uses",
                                          "target_entity": f"Tool{i}"}]}})
        assert written.status_code == 201, written.text
        packet_id = written.json()["packet_id"]
        batch = await client.post("/api/v1/memory/packets", json=[{"packet_type": "note", "payload": {"n": i}}])
        packet = await client.get(f"/api/v1/memory/packet/{packet_id}")
        page = await client.get(f"/api/v1/memory/thread/{thread}")
        lineage = await client.get(f"/api/v1/memory/packet/{packet_id}/lineage")
        semantic = await client.post("/api/v1/search/semantic", json={"query": vector, "k": 3})
        hybrid = await client.post("/api/v1/search/hybrid", json={"query_text": "note", "k": 3})
        graph = await client.get("/api/v1/graph/traverse", params={"start_entity": "Ada"})
        entry = await client.put(f"/api/v1/memory/namespace/{NAMESPACE}/keys/{run}-{i}", json={"value": {"i": i}})
        read = await client.get(f"/api/v1/memory/namespace/{NAMESPACE}/keys/{run}-{i}")
        listed = await client.get(f"/api/v1/memory/namespace/{NAMESPACE}/keys")
        ready = await client.get("/api/v1/ready")
        for response in (batch, packet, page, lineage, semantic, hybrid, graph, entry, read, listed, ready):
            assert response.status_code == 200, (response.request.url, response.text)
        times += [written.json()["timestamp"], packet.json()["timestamp"], entry.json()["created_at"],
                  *(p["timestamp"] for p in page.json()["packets"])]
    return times


def dimension_of(db: Any) -> int:
    with db.connect() as conn:
        return int(conn.execute("select memsub.vector_dimension()").fetchone()[0])


def test_the_http_server_with_prepare_threshold_none_prepares_nothing(db: Any) -> None:
    key, dimension = api_key(db, uuid.uuid4()), dimension_of(db)

    async def scenario(**options: Any) -> dict[str, Any]:
        app = create_app(db.dsn("app"), min_size=1, max_size=1, **options)
        async with served(app, key) as client:
            await every_route(client, dimension)
            return await state_of_the_pool(app)

    assert held(anyio.run(lambda: scenario(prepare_threshold=None))) == NOTHING_HELD
    assert anyio.run(scenario)["protocol_prepared"] > 0  # by default psycopg's threshold: the test sees preparing


def test_an_http_request_leaves_no_setting_on_its_session_and_answers_in_utc(db: Any) -> None:
    """The TimeZone the answers are rendered in is the request transaction's own: the session keeps the one the
    login started with, here far from UTC, and every time in an answer is still UTC."""
    key, dimension = api_key(db, uuid.uuid4()), dimension_of(db)
    dsn = make_conninfo(db.dsn("app"), options=f"-c TimeZone={FAR_FROM_UTC}")

    async def scenario() -> tuple[list[str], dict[str, Any]]:
        app = create_app(dsn, min_size=1, max_size=1)
        async with served(app, key) as client:
            return await every_route(client, dimension), await state_of_the_pool(app)

    times, state = anyio.run(scenario)
    assert times and all(time.endswith("+00:00") for time in times), times
    assert state["session_settings"] == [] and state["timezone"] == FAR_FROM_UTC, state
    assert {name: held(state)[name] for name in NOTHING_HELD if name != "protocol_prepared"} == {
        name: value for name, value in NOTHING_HELD.items() if name != "protocol_prepared"}
    # What a session keeps on purpose: the search's kept plans (docs/retrieval.md, "Kept plans"), prepared by
    # SQL and checked word for word in the transaction that runs them, so they are right on any server session.
    assert state["sql_prepared"] and all(name.startswith("memsub_search_") for name in state["sql_prepared"])


def test_memsub_serve_passes_its_prepare_threshold_to_the_pool(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    served_apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served_apps.append(app))
    for args, env, expected in ((["--prepare-threshold", "none"], {}, None), ([], {}, 5),
                                ([], {"MEMSUB_PREPARE_THRESHOLD": "none"}, None),
                                (["--prepare-threshold", "0"], {"MEMSUB_PREPARE_THRESHOLD": "none"}, 0)):
        result = CliRunner().invoke(cli, ["serve", "--dsn", db.dsn("app"), *args], env=env)
        assert result.exit_code == 0, result.output
        assert served_apps.pop().state.pool.kwargs["prepare_threshold"] == expected, (args, env)


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--tenant", str(uuid.uuid4())]], ids=["serve", "mcp"])
@pytest.mark.parametrize(("args", "env"), [
    (["--prepare-threshold", "-1"], {}), (["--prepare-threshold", "1.5"], {}),
    (["--prepare-threshold", "never"], {}), (["--prepare-threshold", ""], {}),
    ([], {"MEMSUB_PREPARE_THRESHOLD": "-3"}), ([], {"MEMSUB_PREPARE_THRESHOLD": "off"}),
])
def test_a_bad_prepare_threshold_is_refused_by_name_before_connecting(command: list[str], args: list[str],
                                                                     env: dict[str, str]) -> None:
    result = CliRunner().invoke(cli, [*command, "--dsn", refused_dsn(), *args], env=env)
    assert result.exit_code == 2, result.output
    assert "--prepare-threshold" in result.output and "MEMSUB_PREPARE_THRESHOLD" in result.output, result.output
    assert "an integer 0 or more, or none" in result.output, result.output
    assert "refused" not in result.output.lower(), result.output  # no connection was attempted


def test_memsub_mcp_with_prepare_threshold_none_prepares_nothing(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command as an MCP client starts it, its real server driven in memory instead of over stdio (in place of
    memsub.mcp_server.serve_stdio); the state is read on the tools' one pooled connection once the calls are
    done."""
    built: list[Any] = []
    states: list[dict[str, Any]] = []
    build_server = memsub.mcp_server.build_server

    def recording_build_server(tools: Any) -> Any:
        built.append(tools)
        return build_server(tools)

    async def serve_in_memory(server: Any) -> None:
        async with Client(server) as client:
            for i in range(RUNS):
                written = await client.call_tool("remember", {"text": f"the code is {i}"})
                assert not written.is_error, written.content
                for tool, arguments in (("recall", {"query": "code"}), ("recall_entries", {"query": "code"}),
                                        ("remember_entry", {"namespace": NAMESPACE, "key": f"k{i}",
                                                            "value": i})):
                    result = await client.call_tool(tool, arguments)
                    assert not result.is_error, (tool, result.content)
        with built[0].substrate.pool.connection() as conn:
            states.append(session_state(conn.execute(SESSION_STATE).fetchone()))

    monkeypatch.setattr(memsub.mcp_server, "build_server", recording_build_server)
    monkeypatch.setattr(memsub.mcp_server, "serve_stdio", serve_in_memory)
    result = CliRunner().invoke(cli, ["mcp", "--dsn", db.dsn("app"), "--tenant", str(uuid.uuid4()), "--user", str(USER),
                                      "--embedder", "hashing", "--pool-size", "1"],
                                env={"MEMSUB_PREPARE_THRESHOLD": "none"})
    assert result.exit_code == 0, result.output
    assert built[0].substrate.pool.kwargs["prepare_threshold"] is None
    assert held(states[0]) == NOTHING_HELD
