"""``memsub serve`` behind a transaction-mode connection pooler (docs/client.md, "Behind a connection pooler"):
such a pooler runs each transaction of a client on whichever server session is free, so a server must leave
nothing in a session beyond its transaction. After its requests no setting of the session differs from what the
login started with (tests/helpers.py, SESSION_STATE, read on the server's own pooled connection).

The HTTP application runs in this process (httpx's ASGI transport) on a pool of one connection, which the test
then reads. It acts as the ordinary app login.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
from psycopg.conninfo import make_conninfo

from http_helpers import create_key
from memsub.http_api import create_app

from helpers import NOTHING_HELD, SESSION_STATE, held, session_state

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
        entry = await client.put(f"/api/v1/memory/namespace/{NAMESPACE}/keys/k{i}", json={"value": {"i": i}})
        read = await client.get(f"/api/v1/memory/namespace/{NAMESPACE}/keys/k{i}")
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
