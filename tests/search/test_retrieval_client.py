"""The typed retrieval client and the search / graph commands, on a 384-d installation, as the application role."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from memsub.cli import main
from memsub.client import Substrate
from memsub.embedding import HashingEmbedder
from memsub.errors import ContextError, IntegrityError, InvalidInput
from memsub.models import PacketEnvelopeIn

from helpers import TENANT_A, TENANT_B

NOTES = [
    "Pacific Polymers ships recycled HDPE pellets from Stockton",
    "BayCycle sells rHDPE pellets in Oakland at 47 cents a pound",
    "the Reno route closes at Donner Pass when it snows",
    "diesel prices rose four cents this week",
]


def write_notes(session, embedder, texts=NOTES):
    """One packet per text with its content embedding; returns the packet ids in order."""
    ids = []
    for text, vector in zip(texts, embedder.embed(texts), strict=True):
        packet = session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"text": text}))
        session.search.store_embedding(packet.packet_id, "content", vector, chunk_text=text)
        ids.append(packet.packet_id)
    return ids


def test_search_feedback_and_learning_through_the_client(db384):
    embedder = HashingEmbedder(384)
    query = embedder.embed(["recycled HDPE pellets Stockton"])[0]
    with Substrate(db384.dsn("app")) as substrate:
        with substrate.tenant(TENANT_A) as session:
            ids = write_notes(session, embedder)
        with substrate.tenant(TENANT_B) as session:
            write_notes(session, embedder, ["recycled HDPE pellets Stockton, tenant B's copy"])
        with substrate.tenant(TENANT_A) as session:
            # A list and a NumPy array (float32 and float64) are the same query.
            as_list = session.search.semantic(query, k=3, record_access=True, query_text="hdpe")
            as_array = session.search.semantic(np.asarray(query, dtype=np.float32), k=3)
            as_float64 = session.search.semantic(np.asarray(query), k=3)
            assert [h.packet_id for h in as_list] == [h.packet_id for h in as_array] == \
                   [h.packet_id for h in as_float64]
            assert as_list[0].packet_id == ids[0] and as_list[1].packet_id == ids[1]
            assert all(h.method == "exact" and h.access_id is not None for h in as_list)
            assert [h.distance for h in as_list] == sorted(h.distance for h in as_list)
            assert as_array[0].access_id is None
            before = session.packets.get(ids[0])
            useful = session.search.record_feedback(as_list[0].access_id, True, "named the supplier")  # type: ignore[arg-type]
            assert (useful.was_useful, useful.feedback_reason, useful.target_id) == (
                True, "named the supplier", as_list[0].embedding_id)
        # Learning is tenant maintenance: the tenant's administrator runs it (or `memsub maintain`), never the
        # application, whose login may not execute it.
        with pytest.raises(ContextError), substrate.tenant(TENANT_A) as session:
            session.search.learn_importance()
        with (Substrate(db384.dsn("tenant_admin")) as admin,
              admin.tenant(TENANT_A, roles=["tenant_admin"]) as session):
            run = session.search.learn_importance()
            assert run.tenant_id == TENANT_A and run.accesses_counted == 3 and run.feedback_learned == 1
        with substrate.tenant(TENANT_A) as session:
            after = session.packets.get(ids[0])
            assert before is not None and after is not None
            assert after.importance_score > before.importance_score
            ranked = session.search.semantic(query, k=4, rank_by="combined")
            assert [h.combined_score for h in ranked] == sorted((h.combined_score for h in ranked), reverse=True)
            # Filters are passed by name; the function's defaults apply to the rest.
            assert session.search.semantic(query, k=3, packet_type="insight") == []
        with pytest.raises(IntegrityError) as foreign, substrate.tenant(TENANT_B) as session:
            session.search.record_feedback(as_list[0].access_id, False)  # type: ignore[arg-type]
        assert foreign.value.field == "access_id"
        with pytest.raises(InvalidInput) as wrong, substrate.tenant(TENANT_A) as session:
            session.search.semantic([1.0, 0.0], k=3)
        assert wrong.value.field == "query"


def test_hybrid_graph_and_reflections_through_the_client(db384):
    embedder = HashingEmbedder(384)
    with Substrate(db384.dsn("app")) as substrate:
        with substrate.tenant(TENANT_A) as session:
            ids = write_notes(session, embedder)
            hits = session.search.hybrid("diesel", embedder.embed(["diesel prices"])[0], k=2, record_access=True)
            assert hits[0].packet_id == ids[3] and hits[0].text_rank == 1 and hits[0].vector_rank == 1
            assert hits[0].score == pytest.approx(2 / 61) and hits[0].access_id is not None
            text_only = session.search.hybrid("Donner", None, k=5)
            assert [(h.packet_id, h.vector_rank) for h in text_only] == [(ids[2], None)]
            weighted = session.search.hybrid("diesel", embedder.embed(["diesel"])[0], k=1, rrf_k=0, text_weight=3.0)
            assert weighted[0].score == pytest.approx(1 / weighted[0].vector_rank + 3 / weighted[0].text_rank)

            session.graph.upsert_relationship("Pacific Polymers", "supplies", "Acme", confidence=0.9)
            session.graph.upsert_relationship("Acme", "ships_to", "Reno", confidence=0.5)
            session.graph.upsert_relationship("Reno", "supplied_by", "Pacific Polymers", confidence=0.9)
            session.graph.assert_fact("Acme", "based_in", "Sacramento", confidence=0.8)
            paths = session.graph.traverse("Pacific Polymers", 5)
            assert [(p.depth, p.entity, p.path_confidence) for p in paths] == [
                (1, "Acme", pytest.approx(0.9)), (2, "Reno", pytest.approx(0.45))]
            assert paths[1].relationship_path == ["supplies", "ships_to"]
            assert session.graph.traverse("Pacific Polymers", 5, min_confidence=0.6) == paths[:1]
            assert [p.entity for p in session.graph.traverse("Pacific Polymers", 1, direction="incoming")] == ["Reno"]
            around = session.graph.entity_neighbourhood("Acme")
            assert {(i.kind, i.direction, i.relationship_type) for i in around} == {
                ("relationship", "outgoing", "ships_to"), ("relationship", "incoming", "supplies"),
                ("fact", "subject", "based_in")}

            lesson = embedder.embed(["check the Donner Pass forecast before routing to Reno"])[0]
            session.reflection.record("lesson", "check the Donner Pass forecast", tags=["routing"],
                                      priority="high", vector=lesson)
            session.reflection.record("lesson", "diesel is cheaper on Tuesdays", tags=["fuel"], priority="low",
                                      vector=embedder.embed(["diesel cheaper Tuesdays"])[0])
            found = session.reflection.retrieve(embedder.embed(["Reno route snow"])[0], tags=["routing"], k=1,
                                                record_access=True)
            assert [r.content for r in found] == ["check the Donner Pass forecast"]
            assert found[0].tag_overlap == 1.0 and found[0].access_id is not None
            assert session.reflection.retrieve(tags=["fuel"], require_tags=True)[0].distance is None
        with substrate.tenant(TENANT_B) as session:
            assert session.graph.traverse("Pacific Polymers", 5) == []
            assert session.search.hybrid("diesel", None) == []
            assert session.reflection.retrieve(embedder.embed(["Reno"])[0]) == []


def test_search_and_graph_commands(db384):
    embedder = HashingEmbedder(384)
    with Substrate(db384.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        ids = write_notes(session, embedder)
        session.graph.upsert_relationship("Pacific Polymers", "supplies", "Acme", confidence=0.9)
    runner = CliRunner()
    base = ["--dsn", db384.dsn("app"), "--tenant", str(TENANT_A)]

    table = runner.invoke(main, ["search", "HDPE pellets from Stockton", *base, "--embedder", "hashing", "--k", "2"])
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["#", "distance", "importance", "method", "packet", "text"]
    assert lines[2].split()[0] == "1" and str(ids[0]) in lines[2] and "Pacific Polymers" in lines[2]
    assert len(lines) == 4
    assert "query embedded by hashing (feature hashing, 384-d" in table.stderr and "[chosen]" in table.stderr

    hybrid = runner.invoke(main, ["search", "diesel", *base, "--embedder", "hashing", "--mode", "hybrid", "--json"])
    assert hybrid.exit_code == 0, hybrid.output
    rows = [json.loads(line) for line in hybrid.stdout.splitlines()]
    assert rows[0]["packet_id"] == str(ids[3]) and rows[0]["text_rank"] == 1
    assert len(rows) == 4 and sum(1 for r in rows if r["text_rank"]) == 1

    other = runner.invoke(main, ["search", "diesel", "--dsn", db384.dsn("app"), "--tenant", str(TENANT_B),
                                 "--embedder", "hashing", "--json"])
    assert other.exit_code == 0 and other.stdout == ""

    graph = runner.invoke(main, ["graph", "traverse", "Pacific Polymers", *base, "--depth", "2"])
    assert graph.exit_code == 0, graph.output
    assert graph.stdout.splitlines()[2].split() == ["1", "Acme", "0.900", "Pacific", "Polymers", "-supplies->",
                                                    "Acme"]
    near = runner.invoke(main, ["graph", "neighbourhood", "Acme", *base, "--json"])
    assert json.loads(near.stdout)["relationship_type"] == "supplies"


def test_search_command_refuses_an_embedder_of_the_wrong_dimension(db):
    """The default installation stores 1536-d vectors; MiniLM's are 384-d, and the command says so."""
    result = CliRunner().invoke(main, ["search", "anything", "--dsn", db.dsn("app"), "--tenant", str(TENANT_A),
                                       "--embedder", "minilm"])
    assert result.exit_code != 0
    assert "makes 384-d vectors but this installation stores 1536-d vectors" in result.output
    hashing = CliRunner().invoke(main, ["search", "anything", "--dsn", db.dsn("app"), "--tenant", str(TENANT_A),
                                        "--embedder", "hashing"])
    assert hashing.exit_code == 0 and "1536-d" in hashing.stderr
