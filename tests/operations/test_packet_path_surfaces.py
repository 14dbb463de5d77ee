"""Search with packets through the HTTP API and the MCP recall tool: each hit's packet, as the surface's own
packet read shows it, in hit order; without the option no packet."""

from __future__ import annotations

import uuid

import anyio
from mcp import Client

from http_helpers import Api, hot_vector, write_embedded_notes
from memsub.client import Substrate
from memsub.embedding import HashingEmbedder
from memsub.mcp_server import Identity, MemoryTools, build_server, check_identity


def test_http_search_with_packets(api: Api):
    dimension = api.dimension()
    with api.client() as client:
        write_embedded_notes(client, dimension, ("packet path polymer supplier", "packet path weather report"))
        for path, body in (("/api/v1/search/semantic", {"query": hot_vector(dimension, 1), "k": 2}),
                           ("/api/v1/search/hybrid", {"query_text": "packet path", "query": hot_vector(dimension, 0),
                                                      "k": 2})):
            plain = client.post(path, json=body).json()["hits"]
            assert len(plain) == 2 and all(h["packet"] is None for h in plain)
            hits = client.post(path, json={**body, "with_packets": True}).json()["hits"]
            assert [h["packet_id"] for h in hits] == [h["packet_id"] for h in plain]
            for hit in hits:
                assert hit["packet"] == client.get(f"/api/v1/memory/packet/{hit['packet_id']}").json()


def test_mcp_recall_with_packets(db):
    async def scenario() -> None:
        with Substrate(db.dsn("app"), max_size=2) as substrate:
            who = Identity(tenant_id=uuid.uuid4())
            tools = MemoryTools(substrate, who, HashingEmbedder(check_identity(substrate, who)), agent_id="a1")
            async with Client(build_server(tools)) as client:
                written = await client.call_tool("remember", {"text": "The depot opens at six.", "tags": ["depot"]})
                packet_id = written.structured_content["packet_id"]  # type: ignore[index]
                for mode in ("hybrid", "semantic"):
                    plain = await client.call_tool("recall", {"query": "depot opens", "mode": mode})
                    assert plain.structured_content["hits"][0]["packet"] is None  # type: ignore[index]
                    asked = await client.call_tool("recall", {"query": "depot opens", "mode": mode,
                                                              "with_packets": True})
                    assert not asked.is_error, asked.content
                    packet = asked.structured_content["hits"][0]["packet"]  # type: ignore[index]
                    assert packet["packet_id"] == packet_id and packet["tags"] == ["depot"]
                    assert packet["payload"] == {"text": "The depot opens at six."}

    anyio.run(scenario)
