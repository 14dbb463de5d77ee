"""The async session's sessions, tasks, documents, temporal graph and decay calls: the same declarations as the sync
session's, awaited, against the embedded server (in a block's transaction and in per-call mode)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from memsub.async_client import AsyncSubstrate
from memsub.client import Substrate
from memsub.embedding import HashingEmbedder
from memsub.errors import ContextError, StateError

from helpers import TENANT_A

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T1 = datetime(2024, 6, 1, tzinfo=UTC)

DESIGN = """# Storage

Packets are stored once and deduplicated by their content hash.

# Search

A tsvector on every chunk lets keyword search find chunks, and the vectors find them by meaning.
"""


class CountingEmbedder(HashingEmbedder):
    """A hashing embedder that counts its calls."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.calls = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return super().embed(texts)


@pytest.mark.asyncio
async def test_async_session_lifecycle_matches_sync(db384: Any) -> None:
    user = uuid4()
    async with AsyncSubstrate(db384.dsn("app")) as substrate:
        async with substrate.tenant(TENANT_A, user_id=user, session_id="s1") as session:
            created = await session.sessions.create("s1", app_name="abathur")
            assert (created.status, created.user_id, created.state) == ("active", user, {})
            await session.sessions.append_event("s1", {"text": "hello"},
                                                {f"user:{user}:preferences:style": "concise", "temp:turn:n": 1})
            context = {entry.name: entry for entry in await session.memory.context()}
            assert context["turn:n"].precedence == 1 and context["preferences:style"].value == "concise"
            after_turn = await session.sessions.end_turn("s1")
            assert after_turn.state == {f"user:{user}:preferences:style": "concise"}, "temp: keys end with the turn"
        async with substrate.tenant(TENANT_A, user_id=user, session_id="s1", per_call=True) as session:
            ended = await session.sessions.terminate("s1")
            assert (ended.status, ended.migrated_keys) == ("terminated", 1)
            with pytest.raises(StateError):
                await session.sessions.end_turn("s1")
            stored = await session.memory.get(f"user:{user}:preferences", "style")
            got = (await session.sessions.get("s1"), await session.packets.audit_trail(session_id="s1"))
    with Substrate(db384.dsn("app")) as sync_substrate, \
            sync_substrate.tenant(TENANT_A, user_id=user, session_id="s1") as sync_memory:
        assert got == (sync_memory.sessions.get("s1"), sync_memory.packets.audit_trail(session_id="s1"))
    assert got[0] is not None and got[0].status == "terminated" and got[0].state == {}
    assert got[1][-1].operation == "session_terminate"
    assert stored is not None and stored.value == "concise"


@pytest.mark.asyncio
async def test_async_tasks_checkpoints_and_update_memory(db384: Any) -> None:
    user = uuid4()
    namespace = f"user:{user}:counters"
    async with AsyncSubstrate(db384.dsn("app"), max_size=4) as substrate:
        async with substrate.tenant(TENANT_A, user_id=user, session_id="s1") as session:
            await session.sessions.create("s1")
            task = await session.sessions.task_create("answer", {"q": 1}, session_id="s1")
            assert (task.status, task.payload, task.session_id) == ("pending", {"q": 1}, "s1")
            agent = await session.sessions.agent_spawn("responder", task.id)
            await session.packets.set_actor(agent.id, task.id)
            await session.sessions.merge_state("s1", {"session:s1:step": 1})
            checkpoint = await session.sessions.checkpoint_save(task.id, {"step": 1}, label="first")
            await session.sessions.merge_state("s1", {"session:s1:step": 2})
            restored = await session.sessions.checkpoint_restore(checkpoint.id)
            assert restored.state == {"step": 1} and restored.session_state == {"session:s1:step": 1}
            running = await session.sessions.task_set_status(task.id, "running")
            done = await session.sessions.task_set_status(task.id, "completed", result={"a": 2})
            assert (running.status, done.status, done.result) == ("running", "completed", {"a": 2})
            trail = await session.packets.audit_trail(session_id="s1")
            assert any(entry.agent_id == agent.id and entry.task_id == task.id for entry in trail)

        async def add(times: int) -> None:
            async with substrate.tenant(TENANT_A, user_id=user, per_call=True) as writer:
                for _ in range(times):
                    await writer.memory.update(namespace, "hits", lambda n: (n or 0) + 1)

        # two writers: one loses at most as many races as the other writes, fewer than its ten attempts
        await asyncio.gather(add(5), add(5))
        async with substrate.tenant(TENANT_A, user_id=user) as session:
            entry = await session.memory.update(namespace, "hits", lambda n: n * 10)
            assert (entry.value, entry.version) == (100, 11)


@pytest.mark.asyncio
async def test_async_document_ingest_is_found_by_hybrid_search(db384: Any, tmp_path: Path) -> None:
    embedder = CountingEmbedder(384)
    (tmp_path / "plain.md").write_text("# Plain\n\nStored first without vectors, embedded later.\n")
    async with AsyncSubstrate(db384.dsn("app")) as substrate:
        async with substrate.tenant(TENANT_A) as session:
            assert await session.vector_dimension() == 384
            first = await session.documents.ingest("docs/design.md", DESIGN, file_hash="1" * 64, mime="md",
                                                   embedder=embedder, summary="Storage and search")
            plain = await session.documents.ingest_file(tmp_path / "plain.md", file_path="docs/plain.md")
        assert (first.status, first.version, first.embedded_count) == ("created", 1, first.chunk_count)
        assert (plain.status, plain.embedded_count) == ("created", 0) and plain.chunk_count > 0
        async with substrate.tenant(TENANT_A, per_call=True) as session:
            again = await session.documents.ingest("docs/design.md", DESIGN, file_hash="1" * 64, mime="md",
                                                   embedder=embedder)
            assert (again.status, again.document_id, embedder.calls) == ("unchanged", first.document_id, 1)
            embedded = await session.documents.ingest_file(tmp_path / "plain.md", file_path="docs/plain.md",
                                                           embedder=embedder)
            assert (embedded.status, embedded.embedded_count, embedder.calls) == ("unchanged", plain.chunk_count, 2)
            query = embedder.embed(["keyword search find chunks"])[0]
            hits = await session.search.hybrid("keyword search", query, 3)
            versions = await session.documents.versions("docs/design.md")
            chunks = await session.documents.chunks_of(first.document_id)
    assert hits and "keyword search" in (hits[0].chunk_text or "")
    assert [(v.version, v.is_latest, v.summary) for v in versions] == [(1, True, "Storage and search")]
    assert "".join(chunk.content for chunk in chunks) == DESIGN
    with Substrate(db384.dsn("app")) as sync_substrate, sync_substrate.tenant(TENANT_A) as sync_memory:
        assert sync_memory.documents.versions("docs/design.md") == versions
        assert sync_memory.documents.chunks_of(first.document_id) == chunks


@pytest.mark.asyncio
async def test_async_temporal_edges_as_of_match_sync(db384: Any) -> None:
    async with AsyncSubstrate(db384.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        first = await session.graph.temporal_edge_add("Alice", "works_at", "Acme", valid_from=T0, confidence=0.9)
        assert (first.valid_from, first.valid_until, first.confidence) == (T0, None, 0.9)
        moved = await session.graph.supersede_relationship("Alice", "works_at", "Globex", valid_from=T1)
        assert (moved.valid_from, moved.valid_until) == (T1, None)
        entity = await session.graph.upsert_entity("Alice", "Person", aliases=["A. Smith"])
        assert entity.aliases == ["A. Smith"]
    async with AsyncSubstrate(db384.dsn("app")) as substrate, \
            substrate.tenant(TENANT_A, per_call=True) as session:
        before = await session.graph.edges_as_of(T1 - timedelta(days=1), entity="A. Smith")
        now = await session.graph.edges_as_of(entity="Alice", relationship_type="works_at")
        neighbors = await session.graph.neighbors_as_of("Alice", T0 + timedelta(days=1))
        closed = await session.graph.close_relationship("Alice", "works_at", "Globex", T1 + timedelta(days=30))
        nodes = await session.graph.nodes("Entity")
    assert [(e.target_entity, e.valid_from, e.valid_until) for e in before] == [("Acme", T0, T1)]
    assert [e.target_entity for e in now] == ["Globex"]
    assert [(n.target_entity, n.depth) for n in neighbors] == [("Acme", 1)]
    assert closed.valid_until == T1 + timedelta(days=30)
    assert "Alice" in {node.node_id for node in nodes}
    with Substrate(db384.dsn("app")) as sync_substrate, sync_substrate.tenant(TENANT_A) as sync_memory:
        assert sync_memory.graph.edges_as_of(T1 - timedelta(days=1), entity="A. Smith") == before


@pytest.mark.asyncio
async def test_async_decay_promotes_by_the_rule(db384: Any) -> None:
    user = uuid4()
    notes = f"user:{user}:notes"
    async with AsyncSubstrate(db384.dsn("app")) as substrate:
        async with substrate.tenant(TENANT_A, user_id=user) as session:
            stored = await session.memory.remember(notes, "plan", "the migration plan", importance=0.9)
            await session.memory.remember(notes, "weather", "sunny", importance=0.2)
            assert (stored.memory_tier, stored.importance) == ("STM", 0.9)
            touched = await session.memory.touch(notes, "plan")
            await session.memory.touch(notes, "weather", timedelta(days=1))
            assert touched.last_access_ts is not None and touched.decay_weight == pytest.approx(2.0, abs=1e-3)
        with pytest.raises(ContextError):
            async with substrate.tenant(TENANT_A, user_id=user, per_call=True) as session:
                await session.memory.maintenance()
    async with AsyncSubstrate(db384.dsn("tenant_admin")) as substrate, \
            substrate.tenant(TENANT_A, roles=["tenant_admin"]) as admin:
        report = {row.key: row for row in await admin.memory.maintenance()}
    assert report["plan"].outcome == "promoted" and report["plan"].score == pytest.approx(1.8, abs=1e-3)
    assert report["weather"].outcome == "kept"
