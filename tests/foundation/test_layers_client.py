"""The typed client for the layers, and the refresh-views command."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from memsub.cli_views import refresh_views_command
from memsub.client import Substrate
from memsub.errors import ConflictError, IntegrityError, InvalidInput
from memsub.models import PacketEnvelopeIn

from helpers import TENANT_A
from layer_helpers import DIMENSION


def test_client_covers_every_layer(db):
    one_hot = [1.0] + [0.0] * (DIMENSION - 1)
    with Substrate(db.dsn("app")) as substrate:
        with substrate.tenant(TENANT_A) as session:
            packet = session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"t": 1},
                                                            metadata={"agent": "planner"}))
            event = session.events.record("planner", "tool_call", {"tool": "search"}, packet_id=packet.packet_id)
            assert event.packet_id == packet.packet_id
            trace = session.events.record_reasoning_trace(None, packet.packet_id, steps=["a"], reasoning_tokens=3)
            assert trace.agent_id == "planner" and trace.reasoning_tokens == 3
            fact = session.graph.assert_fact("L9", "uses", "Neo4j", confidence=0.5, source_packet=packet.packet_id)
            fact = session.graph.assert_fact("l9", "USES", "neo4j", confidence=0.5)
            assert (fact.supporting_packet_count, fact.confidence) == (2, 0.75)
            embedding = session.search.store_embedding(packet.packet_id, "summary", one_hot, chunk_text="t")
            nearest = session.search.semantic(one_hot, 1, embedding_type="summary")[0]
            assert nearest.embedding_id == embedding.embedding_id
            session.search.store_semantic_memory("planner", one_hot, {"k": 1})
            assert session.search.semantic_memory(one_hot, 1)[0].payload == {"k": 1}
            edge = session.graph.upsert_relationship("L9", "Develops", "Python")
            session.graph.upsert_relationship("Python", "requires", "FastAPI")
            assert edge.relationship_type == "develops"
            assert [(e.depth, e.target_entity) for e in session.graph.neighbors("L9")] == [
                (1, "Python"), (2, "FastAPI")]
            update = session.world_model.apply_update("insight", [{"entity_id": "L9", "entity_type": "Concept"}])
            snapshot = session.world_model.take_snapshot("first")
            assert session.world_model.state_at(snapshot.snapshot_id)[0].entity_id == "L9"
            assert session.world_model.state_version() == update.state_version_after == 1
            reflection = session.reflection.record("lesson", "cache the schema", tags=["b", "a", "b"], vector=one_hot)
            assert reflection.tags == ["a", "b"]
            task = session.reflection.record_task("task-1", "success", lessons=["x"])
            assert session.reflection.record_task("task-1", "failure").id == task.id
            summary = session.reflection.record_summary("thread", "t-1", "one event",
                                                        [packet.packet_id, packet.packet_id],
                                                        valid_until=datetime.now(UTC) + timedelta(seconds=1))
            assert summary.packet_count == 1
            due = session.reflection.summaries_due(as_of=datetime.now(UTC) + timedelta(hours=1))
            assert [s.summary_id for s in due] == [summary.summary_id]
            assert session.events.record_access("packet", packet.packet_id, was_useful=True).scope == "shared"
            session.events.record_access("embedding", embedding.embedding_id)
            assert session.packets.get(packet.packet_id).access_count == 2  # type: ignore[union-attr]
        with pytest.raises(ConflictError) as conflict, substrate.tenant(TENANT_A) as session:
            session.world_model.apply_update("insight", [{"entity_id": "L9"}], expected_version=0)
        assert conflict.value.field == "expected_version"
        with pytest.raises(IntegrityError) as missing, substrate.tenant(TENANT_A) as session:
            session.events.record_access("fact", packet.packet_id)
        assert missing.value.field == "target_id"
        with pytest.raises(InvalidInput) as bad, substrate.tenant(TENANT_A) as session:
            session.reflection.record("musing", "x")  # type: ignore[arg-type]
        assert bad.value.field == "reflection_type"


def test_refresh_views_command(db):
    result = CliRunner().invoke(refresh_views_command, ["--dsn", db.dsn("platform_admin")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()  # stderr names the server
    # The views are populated (empty) at install, so even the first refresh runs concurrently.
    assert lines[0].startswith("mv_agent_recent_important: ok (concurrently,")
    assert len(lines) == 4


def test_a_malformed_id_in_a_list_is_invalid_input_from_the_database(db):
    """Ids in a list argument go to the database as they came, like every other argument: a malformed one is
    InvalidInput (22P02), never a bare ValueError raised while the call is built."""
    with Substrate(db.dsn("app")) as substrate:
        with pytest.raises(InvalidInput) as caught, substrate.tenant(TENANT_A) as session:
            session.reflection.record_summary("thread", "t-1", "one event", ["not-a-uuid"])
        assert caught.value.sqlstate == "22P02"
        with pytest.raises(InvalidInput), substrate.tenant(TENANT_A) as session:
            session.packets.get_packets(["not-a-uuid"])
