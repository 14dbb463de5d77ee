"""An agent developer's story across days, as ordinary logins: what the agent reads back at each step is what the
docs promise (repeated turns kept, session keys carried over, superseded and expired knowledge never served as
current on any read path, new document versions replacing old ones, lineage forming the DAG)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from click.testing import CliRunner

from memsub import documents
from memsub.cli import main as cli
from memsub.client import Substrate
from memsub.models import PacketEnvelopeIn, PacketLineage

from doc_helpers import WordEmbedder
from helpers import TENANT_A, TENANT_B
from session_helpers import ALICE, BOB, as_user

EMBED = WordEmbedder()


def _turn(text: str, thread: object, parents: list[object] | None = None, **extra: object) -> PacketEnvelopeIn:
    return PacketEnvelopeIn(
        packet_type="turn", payload={"text": text}, thread_id=thread,
        lineage=PacketLineage(parent_ids=parents or []) if parents else None,
        memory={"embeddings": [{"embedding_type": "content", "vector": EMBED.vector(text), "chunk_text": text}]},
        **extra)


def test_an_agent_story_across_sessions_and_days(db):
    thread = "5e551011-0000-4000-8000-000000000001"
    with Substrate(db.dsn("app"), max_size=2) as substrate:
        # Day 1, session s1: the user says the same thing twice in a row; both turns are kept.
        with substrate.tenant(TENANT_A, user_id=ALICE, session_id="s1") as session:
            session.sessions.create("s1")
            session.sessions.append_event("s1", {"text": "I drink green tea"},
                                          {f"user:{ALICE}:drink": "green tea", "temp:mood": "calm"})
            session.sessions.append_event("s1", {"text": "I drink green tea"})
            assert [e.event for e in session.sessions.get_events("s1")] == [{"text": "I drink green tea"}] * 2
            first = session.packets.write(_turn("I drink green tea", thread))
            again = session.packets.write(_turn("I drink green tea", thread, [first.packet_id]))
            answer = session.packets.write(_turn("Noted: green tea", thread, [again.packet_id]))
            assert not again.deduplicated and again.packet_id != first.packet_id
            assert [p.packet_id for p in session.packets.get_thread(thread)] == [
                first.packet_id, again.packet_id, answer.packet_id]
        with substrate.tenant(TENANT_A, user_id=ALICE, session_id="s1") as session:
            assert session.sessions.terminate("s1").migrated_keys == 1
        # A new session reads the user: key back, and nothing of the temp: one.
        with substrate.tenant(TENANT_A, user_id=ALICE, session_id="s2") as session:
            session.sessions.create("s2")
            drink = session.memory.get(f"user:{ALICE}", "drink")
            assert drink is not None and drink.value == "green tea"
            assert all("mood" not in c.name for c in session.memory.context())

        # Lineage of the story's turns is the DAG of their parent_ids.
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            up = session.packets.get_lineage(answer.packet_id, "ancestors")
            assert [(r.packet_id, r.depth) for r in up if r.depth > 0] == [
                (again.packet_id, 1), (first.packet_id, 2)]
            down = session.packets.get_lineage(first.packet_id, "descendants")
            assert [(r.packet_id, r.depth) for r in down if r.depth > 0] == [
                (again.packet_id, 1), (answer.packet_id, 2)]
    # After the whole story, the installed schema is still what was shipped.
    result = CliRunner().invoke(cli, ["verify", "--dsn", db.dsn("analyst")])
    assert result.exit_code == 0, result.output


def test_superseded_and_expired_knowledge_is_never_served_as_current(db):
    day0 = datetime.now(UTC) - timedelta(days=2)
    with Substrate(db.dsn("app"), max_size=2) as substrate:
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            session.graph.temporal_edge_add("Alice", "prefers", "Tea", valid_from=day0)
            session.graph.supersede_relationship("Alice", "prefers", "Coffee",
                                                 valid_from=day0 + timedelta(days=1))
            # A secret told for a short while: the packet, its fact, edge and embedding expire together.
            expiry = datetime.now(UTC) + timedelta(seconds=2)
            secret = session.packets.write(PacketEnvelopeIn(
                packet_type="turn", payload={"text": "the vault quokka code"}, ttl=expiry,
                memory={"embeddings": [{"embedding_type": "content", "chunk_text": "the vault quokka code",
                                        "vector": EMBED.vector("the vault quokka code")}],
                        "facts": [{"subject": "Alice", "predicate": "vault_code", "object": "quokka",
                                   "confidence": 0.95}],
                        "relationships": [{"source_entity": "Alice", "relationship_type": "knows",
                                           "target_entity": "Vault", "confidence": 0.95}]}))
            assert secret.written.get("knowledge_facts") == 1
        with db.connect("platform_admin", autocommit=True) as admin:
            admin.execute("call memsub.refresh_memory_views()")
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            live = session.fetch("select object from memsub.tenant_high_confidence_facts where subject = 'Alice'")
            assert live == [{"object": "quokka"}]
        time.sleep(max(0.0, (expiry - datetime.now(UTC)).total_seconds()) + 0.1)
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            others = {e.target_entity for e in session.graph.neighbors("Alice")}
            assert others == {"Coffee"}
            assert {p.entity for p in session.graph.traverse("Alice") if p.depth > 0} == {"Coffee"}
            near = session.graph.entity_neighbourhood("Alice")
            assert [(n.kind, n.relationship_type, n.other_entity) for n in near] == [
                ("relationship", "prefers", "Coffee")]
            assert [e.target_entity for e in session.graph.edges_as_of(entity="Alice")] == ["Coffee"]
            assert [e.target_entity for e in session.graph.edges_as_of(day0 + timedelta(hours=1),
                                                                       entity="Alice")] == ["Tea"]
            query = EMBED.vector("the vault quokka code")
            assert all(h.packet_id != secret.packet_id for h in session.search.semantic(query, k=5))
            assert all(h.packet_id != secret.packet_id for h in session.search.hybrid("vault quokka", query, k=5))
            assert all(h.packet_id != secret.packet_id
                       for h in session.search.semantic(query, k=5, mode="exact"))
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            rows = session.fetch("select object from memsub.tenant_high_confidence_facts where subject = 'Alice'")
            assert rows == []
            rows = session.fetch("select target_entity from memsub.tenant_entity_graph "
                                 "where source_entity = 'Alice'")
            assert {r["target_entity"] for r in rows} <= {"Coffee"}
        with substrate.tenant(TENANT_B, user_id=BOB) as session:
            assert session.graph.neighbors("Alice") == []


def _ingest(session, text):
    return session.documents.ingest("notes/drinks.md", text, file_hash=documents.sha256_hex(text.encode()),
                                    mime="md", embedder=EMBED, max_chars=60)


def test_a_document_re_ingested_is_searched_in_its_new_version_only(db):
    old_text = "Office drinks policy.\n\nThe kitchen stocks oolong only.\n"
    new_text = "Office drinks policy.\n\nThe kitchen stocks espresso only.\n"
    with Substrate(db.dsn("app"), max_size=2) as substrate:
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            v1 = _ingest(session, old_text)
            chunk = next(c for c in session.documents.chunks_of(v1.document_id) if "oolong" in c.content)
            session.graph.temporal_edge_add(
                "Alice", "read", str(v1.document_id), target_type="Document",
                evidence=[{"doc_id": v1.document_id, "chunk_id": chunk.id, "score": 0.9}])
        before = datetime.now(UTC)
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            v2 = _ingest(session, new_text)
            assert (v2.status, v2.version, v2.previous_id) == ("new_version", 2, v1.document_id)
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            assert [d.version for d in session.documents.versions("notes/drinks.md")] == [2, 1]
            for words in ("kitchen stocks oolong", "office drinks policy", "kitchen stocks espresso"):
                query = EMBED.vector(words)
                hybrid = session.search.hybrid(words, query, k=10)
                semantic = session.search.semantic(query, k=10)
                assert hybrid and semantic
                assert {h.packet_id for h in hybrid} == {v2.packet_id}, words
                assert {h.packet_id for h in semantic} == {v2.packet_id}, words
            hits = session.search.hybrid("oolong", None, k=10)
            assert hits == []
            # The edge to the old version no longer holds; its evidence stays readable as of before.
            assert session.graph.edges_as_of(entity="Alice") == []
            assert session.graph.neighbors("Alice") == []
            assert session.graph.entity_neighbourhood("Alice") == []
            old = session.graph.edges_as_of(before - timedelta(milliseconds=1), entity="Alice")
            assert [(e.target_entity, [r.chunk_id for r in e.evidence]) for e in old] == [
                (str(v1.document_id), [chunk.id])]
            assert any("oolong" in c.content for c in session.documents.chunks_of(v1.document_id))


def _note(text: str) -> PacketEnvelopeIn:
    return PacketEnvelopeIn(packet_type="note", payload={"text": text}, importance_score=0.65,
                            routing={"agent": "helper"}, memory={
        "embeddings": [{"embedding_type": "content", "vector": EMBED.vector(text), "chunk_text": text}]})


def test_what_the_agent_reads_after_the_maintenance_between_days(db):
    notes = f"user:{ALICE}:notes"
    query = EMBED.vector("weekly report")
    with Substrate(db.dsn("app"), max_size=2) as substrate:
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            tea = session.packets.write(_note("weekly report tea"))
            coffee = session.packets.write(_note("weekly report coffee"))
            session.memory.remember(notes, "topic", "the weekly report", importance=0.9)
            session.memory.touch(notes, "topic")
            for value in ("draft", "reviewed", "sent"):
                session.memory.update(notes, "report_state", lambda _old, v=value: v)
            sent = session.memory.get(notes, "report_state")
            assert sent is not None
            session.graph.temporal_edge_add("Alice", "tracks", str(sent.id), target_type="Memory")
        drawn = datetime.now(UTC)
        with substrate.tenant(TENANT_B, user_id=BOB) as session:
            bob = session.packets.write(_note("weekly report"))
        # Day 1: the agent found the coffee note useful each time it searched.
        for _ in range(3):
            with substrate.tenant(TENANT_A, user_id=ALICE) as session:
                hits = session.search.semantic(query, k=2, record_access=True)
                assert {h.packet_id for h in hits} == {tea.packet_id, coffee.packet_id}
                for hit in hits:
                    assert hit.access_id is not None
                    session.search.record_feedback(hit.access_id, hit.packet_id == coffee.packet_id)
        # Between days: the scheduler's maintenance, and the tenant admin's consolidation.
        result = CliRunner().invoke(cli, ["maintain", "--json", "--dsn", db.dsn("platform_admin")])
        assert result.exit_code == 0, result.output
        with db.connect("tenant_admin") as conn:
            as_user(conn, ALICE, roles=["tenant_admin"])
            consolidated = conn.execute("select key, outcome from memsub.consolidate_memories()").fetchall()
            conn.commit()
        assert consolidated == [("report_state", "consolidated")]
        # Day 2: the useful note ranks first, the entry is long-term memory, the consolidated entry reads the
        # newest value, and nothing of the other tenant mixes in.
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            ranked = session.search.semantic(query, k=3, rank_by="combined")
            assert [h.packet_id for h in ranked] == [coffee.packet_id, tea.packet_id]
            assert ranked[0].importance_score > ranked[1].importance_score
            hybrid = session.search.hybrid("weekly report", query, k=3, importance_weight=0.5)
            assert [h.packet_id for h in hybrid][:2] == [coffee.packet_id, tea.packet_id]
            assert bob.packet_id not in {h.packet_id for h in hybrid}
            topic = session.memory.get(notes, "topic")
            assert topic is not None
            state = session.memory.get(notes, "report_state")
            assert state is not None and state.value == "sent"
            memories = {n.node_id: n for n in session.graph.nodes("Memory")}
            assert memories[str(topic.id)].memory_tier == "LTM"
            # The consolidated versions are no Memory nodes: only the newest (consolidated) version is.
            assert {n.properties["key"]: (n.properties["version"], n.content) for n in memories.values()} == {
                "topic": (1, '"the weekly report"'), "report_state": (4, '"sent"')}
            history = session.memory.history(notes, "report_state")
            assert [e.metadata.get("consolidated_into") for e in history] == [str(state.id)] * 3 + [None]
            # The edge the agent drew to the version consolidation replaced no longer holds.
            assert session.graph.edges_as_of(entity="Alice") == []
            assert [e.target_entity for e in session.graph.edges_as_of(drawn, entity="Alice")] == [str(sent.id)]
            assert [e.value for e in session.memory.list(f"user:{ALICE}") if e.key == "report_state"] == ["sent"]
            assert [h.key for h in session.memory.search("weekly report", k=10)].count("report_state") <= 1
            # The memory view of recent important packets, refreshed by the same round, holds the importance
            # that round learned: the useful note is important now, the useless one is not.
            important = session.fetch("select packet_id, importance_score from memsub.tenant_agent_recent_important")
            assert [(r["packet_id"], r["importance_score"]) for r in important] == [
                (coffee.packet_id, ranked[0].importance_score)]


def test_nodes_of_versions_replaced_in_the_transaction_that_made_them_are_listed(db):
    """A document version superseded, or a session ended, in the transaction that created it existed as the
    latest for no time: its window is empty, and listing the nodes still reads every node."""
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with substrate.tenant(TENANT_A, user_id=ALICE, session_id="quick") as session:
            first = _ingest(session, "Draft one.\n")
            second = _ingest(session, "Draft two.\n")
            session.sessions.create("quick")
            session.sessions.terminate("quick")
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            nodes = {n.node_id: n for n in session.graph.nodes()}
            old, new = nodes[str(first.document_id)], nodes[str(second.document_id)]
            assert old.valid_from == old.valid_until == old.created_at
            assert (new.valid_from, new.valid_until) == (new.created_at, None)
            episode = nodes["quick"]
            assert episode.valid_from == episode.valid_until == episode.created_at
            assert str(first.document_id) not in {n.node_id for n in session.graph.nodes("Document",
                                                                                       as_of=old.created_at)}


def test_lineage_walks_through_a_turn_that_expired_and_was_purged_between_days(db):
    thread = "5e551011-0000-4000-8000-000000000003"
    with Substrate(db.dsn("app"), max_size=1) as substrate:
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            root = session.packets.write(_turn("plan the trip", thread))
            expiry = datetime.now(UTC) + timedelta(seconds=1)
            middle = session.packets.write(_turn("my passport number", thread, [root.packet_id], ttl=expiry))
            left = session.packets.write(_turn("book the flight", thread, [middle.packet_id]))
            right = session.packets.write(_turn("book the hotel", thread, [middle.packet_id]))
            merged = session.packets.write(_turn("trip booked", thread, [left.packet_id, right.packet_id]))
        time.sleep(max(0.0, (expiry - datetime.now(UTC)).total_seconds()) + 0.1)
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            states = {r.packet_id: (r.depth, r.state) for r in session.packets.get_lineage(merged.packet_id)}
            assert states[middle.packet_id] == (2, "expired") and states[root.packet_id] == (3, "live")
            assert middle.packet_id not in {p.packet_id for p in session.packets.get_thread(thread)}
        result = CliRunner().invoke(cli, ["maintain", "--json", "--task", "purge_expired",
                                          "--dsn", db.dsn("platform_admin")])
        assert result.exit_code == 0, result.output
        with substrate.tenant(TENANT_A, user_id=ALICE) as session:
            up = session.packets.get_lineage(merged.packet_id)
            assert sorted((r.depth, str(r.packet_id), r.state) for r in up) == sorted([
                (1, str(left.packet_id), "live"),
                (1, str(right.packet_id), "live"), (2, str(middle.packet_id), "purged"),
                (3, str(root.packet_id), "live")])
            down = session.packets.get_lineage(root.packet_id, "descendants")
            assert {(r.packet_id, r.depth) for r in down} == {
                (middle.packet_id, 1), (left.packet_id, 2), (right.packet_id, 2),
                (merged.packet_id, 3)}
            purged = next(r for r in down if r.packet_id == middle.packet_id)
            assert (purged.state, purged.parent_ids, purged.generation) == ("purged", [root.packet_id], 1)
            assert [p.packet_id for p in session.packets.get_thread(thread)] == [
                root.packet_id, left.packet_id, right.packet_id, merged.packet_id]
            assert merged.generation == 3
