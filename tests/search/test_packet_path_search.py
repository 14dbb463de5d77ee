"""Search returns packets when asked: semantic_search and hybrid_search with p_with_packets, through SQL, the
client, the CLI, in one statement, under row-level security; the default call carries no packet."""

from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Any

from click.testing import CliRunner
from psycopg.pq import Trace

from memsub.cli import main
from memsub.client import Substrate
from memsub.embedding import HashingEmbedder, embed_envelopes

from helpers import TENANT_A, TENANT_B, set_context

EMBEDDER = HashingEmbedder(384)
USER_1 = "00000000-0000-0000-0000-0000000000a1"
USER_2 = "00000000-0000-0000-0000-0000000000a2"
NOTES = [
    "Pacific Polymers ships recycled HDPE pellets from Stockton",
    "BayCycle sells rHDPE pellets in Oakland at 47 cents a pound",
    "the Reno route closes at Donner Pass when it snows",
    "recycled HDPE pellets from Stockton arrive on Friday",
]
QUERY = "recycled HDPE pellets Stockton"


def _envelopes(texts: list[str], **fields: Any) -> list[dict[str, Any]]:
    envelopes = [{"packet_type": "event", "payload": {"text": text}, "tags": ["note"], **fields} for text in texts]
    embed_envelopes(envelopes, EMBEDDER)  # each packet written with its vector in one write
    return envelopes


def _fill(substrate: Substrate) -> None:
    with substrate.tenant(TENANT_A, user_id=USER_1) as session:
        session.packets.write_packets(_envelopes(NOTES))
        session.packets.write_packets(_envelopes(["recycled HDPE pellets Stockton, user 1's private note"],
                                        scope="l-private"))
    with substrate.tenant(TENANT_B) as session:
        session.packets.write_packets(_envelopes(["recycled HDPE pellets Stockton, tenant B's copy"]))


def test_hits_with_packets_are_get_packets_of_the_hit_ids_in_hit_order(db384):
    query = EMBEDDER.embed([QUERY])[0]
    with Substrate(db384.dsn("app")) as substrate:
        _fill(substrate)
        with substrate.tenant(TENANT_A, user_id=USER_1) as session:
            for rank_by in ("distance", "combined"):
                hits = session.search.semantic(query, k=4, rank_by=rank_by, with_packets=True)  # type: ignore[arg-type]
                assert len(hits) == 4
                expected = session.packets.get_packets([h.packet_id for h in hits])
                assert [h.packet for h in hits] == expected
                # vectors re-joined: the envelope is the one written, vector included
                vector = hits[0].packet.envelope["memory"]["embeddings"][0]["vector"]  # type: ignore[union-attr]
                assert isinstance(vector, list) and len(vector) == 384
            fused = session.search.hybrid(QUERY, query, k=4, with_packets=True)
            assert len(fused) == 4
            assert [h.packet for h in fused] == session.packets.get_packets([h.packet_id for h in fused])
            text_only = session.search.hybrid("Donner Pass", None, with_packets=True)
            assert [h.packet for h in text_only] == session.packets.get_packets([h.packet_id for h in text_only])
            assert text_only and text_only[0].packet is not None
            # The default call carries no packet.
            assert all(h.packet is None for h in session.search.semantic(query, k=4))
            assert all(h.packet is None for h in session.search.hybrid(QUERY, query, k=4))


def test_search_never_returns_a_packet_the_caller_cannot_see(db384):
    query = EMBEDDER.embed([QUERY])[0]
    with Substrate(db384.dsn("app")) as substrate:
        _fill(substrate)
    with db384.connect("app") as conn:
        for tenant, user, visible in ((TENANT_A, USER_1, 5), (TENANT_A, USER_2, 4), (TENANT_B, None, 1)):
            set_context(conn, tenant, user=user)
            for statement in ("select packet_id, packet from memsub.semantic_search(%s::vector, 50, "
                              "p_with_packets => true)",
                              "select packet_id, packet from memsub.hybrid_search('HDPE pellets', %s::vector, "
                              "50, p_with_packets => true)"):
                rows = conn.execute(statement, [json.dumps(query)]).fetchall()
                owners = {r[1]["tenant_id"] for r in rows}
                assert owners == {str(tenant)}
                assert all(r[1]["packet_id"] == str(r[0]) for r in rows)
                assert all(r[1]["scope"] == "shared" or r[1]["user_id"] == user for r in rows)
                if "semantic" in statement:
                    assert len(rows) == visible
            conn.rollback()


def _statements(trace_path: str) -> int:
    """Statements the client sent (one Bind per extended-protocol execution, or one simple Query)."""
    with open(trace_path, encoding="utf-8", errors="replace") as trace:
        return sum(1 for line in trace if re.match(r"^F\t\d+\t(Bind|Query)\b", line))


def test_search_with_packets_is_one_statement(db384):
    query = EMBEDDER.embed([QUERY])[0]
    with Substrate(db384.dsn("app")) as substrate:
        _fill(substrate)
        with substrate.tenant(TENANT_A, user_id=USER_1) as session:
            session.search.semantic(query, k=1)  # the vector type is registered on the connection by a first call
            connection = session._connection
            assert connection is not None
            handle, path = tempfile.mkstemp(suffix=".trace")
            try:
                connection.pgconn.trace(handle)
                connection.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS)
                hits = session.search.semantic(query, k=4, with_packets=True)
                fused = session.search.hybrid(QUERY, query, k=4, with_packets=True)
                connection.pgconn.untrace()
                assert _statements(path) == 2
            finally:
                os.close(handle)
                os.unlink(path)
            assert all(h.packet is not None for h in hits) and all(h.packet is not None for h in fused)


def test_cli_search_with_packets(db384):
    with Substrate(db384.dsn("app")) as substrate:
        _fill(substrate)
    runner = CliRunner()
    base = ["search", QUERY, "--dsn", db384.dsn("app"), "--tenant", str(TENANT_B), "--embedder", "hashing",
            "--json"]
    for mode in ("semantic", "hybrid"):
        plain = runner.invoke(main, [*base, "--mode", mode])
        assert plain.exit_code == 0, plain.output
        rows = [json.loads(line) for line in plain.stdout.splitlines() if line.strip()]
        assert rows and all(r["packet"] is None for r in rows)
        asked = runner.invoke(main, [*base, "--mode", mode, "--with-packets"])
        assert asked.exit_code == 0, asked.output
        rows = [json.loads(line) for line in asked.stdout.splitlines() if line.strip()]
        assert len(rows) == 1
        assert rows[0]["packet"]["envelope"]["payload"] == {"text": "recycled HDPE pellets Stockton, tenant B's copy"}
        assert rows[0]["packet"]["packet_id"] == rows[0]["packet_id"]
