"""The temporal knowledge graph: non-overlapping validity windows, superseding, "as of" reads, evidence, typed nodes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memsub import graph
from memsub.errors import IntegrityError, InvalidInput

from doc_helpers import tenant_session
from helpers import TENANT_A, TENANT_B, calls_during, set_context, track_function_calls
from session_helpers import ALICE, expect_error, ground_truth, new_session, one, rows

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T1 = datetime(2024, 6, 1, tzinfo=UTC)
T2 = datetime(2025, 1, 1, tzinfo=UTC)


def test_overlapping_windows_of_one_edge_are_rejected(db):
    with tenant_session(db.dsn("app")) as session:
        session.graph.temporal_edge_add("Alice", "works_at", "Acme", valid_from=T0, valid_until=T1)
        adjacent = session.graph.temporal_edge_add("Alice", "works_at", "Acme", valid_from=T1)
        other_edge = session.graph.temporal_edge_add("Alice", "works_at", "Globex", valid_from=T0)
    assert (adjacent.valid_from, adjacent.valid_until) == (T1, None)
    assert other_edge.valid_until is None

    for valid_from, valid_until in [(T0 + timedelta(days=1), T1 - timedelta(days=1)),  # inside a closed window
                                    (T0 - timedelta(days=30), T0 + timedelta(days=1)),  # across its start
                                    (T2, None)]:  # a second open window
        with pytest.raises(IntegrityError) as info, tenant_session(db.dsn("app")) as session:
            session.graph.temporal_edge_add("Alice", "works_at", "Acme", valid_from=valid_from,
                                            valid_until=valid_until)
        assert (info.value.sqlstate, info.value.field) == ("23P01", "valid_period")

    # The exclusion constraint itself holds, not only the function: a direct insert by the superuser fails too.
    with db.connect() as conn, pytest.raises(psycopg.errors.ExclusionViolation):
        conn.execute("insert into memsub.entity_relationships (tenant_id, source_entity, relationship_type, "
                     "target_entity, valid_period) values (%s, 'Alice', 'works_at', 'Acme', tstzrange(%s, %s))",
                     [TENANT_A, T0 + timedelta(days=2), T0 + timedelta(days=3)])
    assert ground_truth(db, "select count(*) as n from memsub.entity_relationships") == [{"n": 3}]


def test_an_overlapping_window_is_refused_by_name_when_the_transaction_deferred_the_constraint(db):
    """The exclusion constraint is deferrable (initially immediate, so that concurrent upserts of a new edge meet
    their arbiter first). A transaction that deferred it (SET CONSTRAINTS ALL DEFERRED) had temporal_edge_add
    accept an overlapping window, read both windows until COMMIT, and then lose all its writes to an exclusion
    violation that named no field. The call itself refuses the overlap, naming valid_period, and nothing of it is
    written; the transaction goes on."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("set constraints all deferred")
        conn.execute("select memsub.temporal_edge_add('Alice', 'works_at', 'Acme', %s, %s)", [T0, T1])
        for valid_from, valid_until in [(T0 + timedelta(days=1), T1 - timedelta(days=1)), (T0, None)]:
            with pytest.raises(psycopg.errors.ExclusionViolation) as refused, conn.transaction():
                conn.execute("select memsub.temporal_edge_add('Alice', 'works_at', 'Acme', %s, %s)",
                             [valid_from, valid_until])
            assert refused.value.diag.column_name == "valid_period"
            assert "overlaps another validity window" in str(refused.value.diag.message_primary)
        conn.execute("select memsub.temporal_edge_add('Alice', 'works_at', 'Acme', %s)", [T1])
        conn.commit()
    assert ground_truth(db, "select lower(valid_period) as since from memsub.entity_relationships order by 1") == [
        {"since": T0}, {"since": T1}]


def test_superseding_closes_the_old_window_and_as_of_reads_see_each_side(db):
    with tenant_session(db.dsn("app")) as session:
        session.graph.temporal_edge_add("Alice", "works_at", "Acme", valid_from=T0, confidence=0.9)
        session.graph.temporal_edge_add("Acme", "located_in", "Berlin", valid_from=T0)
        session.graph.temporal_edge_add("Globex", "located_in", "Paris", valid_from=T0)
        new = session.graph.supersede_relationship("Alice", "works_at", "Globex", valid_from=T1, confidence=0.8)
    assert (new.target_entity, new.valid_from, new.valid_until) == ("Globex", T1, None)

    with tenant_session(db.dsn("app")) as session:
        history = {(e.target_entity, e.valid_from, e.valid_until)
                   for e in session.graph.edges_as_of(T2, entity="Alice")}
        before = [e.target_entity for e in session.graph.edges_as_of(T1 - timedelta(seconds=1),
                                                                       entity="Alice")]
        at_change = [e.target_entity for e in session.graph.edges_as_of(T1, entity="Alice")]
        earlier = session.graph.edges_as_of(T0 - timedelta(days=1), entity="Alice")
        walk_before = [(n.depth, n.target_entity) for n in
                       session.graph.neighbors_as_of("Alice", T1 - timedelta(days=1))]
        walk_after = [(n.depth, n.target_entity) for n in session.graph.neighbors_as_of("Alice", T2)]
    assert history == {("Globex", T1, None)}
    assert before == ["Acme"] and at_change == ["Globex"] and earlier == []
    assert walk_before == [(1, "Acme"), (2, "Berlin")]
    assert walk_after == [(1, "Globex"), (2, "Paris")]
    windows = ground_truth(db, "select target_entity, lower(valid_period) as f, upper(valid_period) as u "
                               "from memsub.entity_relationships where source_entity = 'Alice' order by f")
    assert windows == [{"target_entity": "Acme", "f": T0, "u": T1}, {"target_entity": "Globex", "f": T1, "u": None}]

    # The current graph (graph_neighbors) follows open windows only.
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        current = rows(conn, "select depth, target_entity from memsub.graph_neighbors('Alice')")
    assert current == [{"depth": 1, "target_entity": "Globex"}, {"depth": 2, "target_entity": "Paris"}]


def test_superseding_into_the_past_of_a_newer_fact_is_refused(db):
    with tenant_session(db.dsn("app")) as session:
        session.graph.temporal_edge_add("Alice", "works_at", "Globex", valid_from=T1)
    with pytest.raises(InvalidInput) as info, tenant_session(db.dsn("app")) as session:
        session.graph.supersede_relationship("Alice", "works_at", "Acme", valid_from=T0)
    assert info.value.field == "valid_from"


def test_upsert_relationship_reinforces_the_current_window_and_opens_a_new_one_after_a_close(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.upsert_relationship('L9', 'uses', 'Neo4j', 0.5, null, %s)", [T0])
        conn.execute("select memsub.upsert_relationship('L9', 'uses', 'Neo4j', 0.5, null, %s)", [T0 + timedelta(1)])
        conn.execute("select memsub.close_relationship('L9', 'uses', 'Neo4j', %s)", [T1])
        # An observation dated inside the closed window opens the new window where the old one ended.
        conn.execute("select memsub.upsert_relationship('L9', 'uses', 'Neo4j', 0.5, null, %s)", [T0 + timedelta(2)])
        conn.execute("select memsub.upsert_relationship('L9', 'uses', 'Neo4j', 0.5, null, %s)", [T2])
        conn.commit()
    windows = ground_truth(db, "select lower(valid_period) as f, upper(valid_period) as u, mention_count, confidence "
                               "from memsub.entity_relationships order by f")
    assert windows == [{"f": T0, "u": T1, "mention_count": 2, "confidence": 0.75},
                       {"f": T1, "u": None, "mention_count": 2, "confidence": 0.75}]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        expect_error(conn, "P0002", "relationship_type", "select memsub.close_relationship('L9', 'uses', 'Oracle')")
        set_context(conn, TENANT_A)
        expect_error(conn, "22023", "valid_until", "select memsub.close_relationship('L9', 'uses', 'Neo4j', %s)", [T0])


def test_evidence_names_visible_documents_and_their_chunks(db):
    with tenant_session(db.dsn("app")) as session:
        doc = session.documents.ingest("hr.md", "Alice joined Globex in June.", file_hash="e" * 64, mime="md")
        chunk = session.documents.chunks_of(doc.document_id)[0]
        edge = session.graph.supersede_relationship("Alice", "works_at", "Globex", valid_from=T1, evidence=[
            graph.DocRef(doc_id=doc.document_id, chunk_id=chunk.id, score=0.92)])
        again = session.graph.supersede_relationship("Alice", "works_at", "Globex", valid_from=T1, evidence=[
            {"doc_id": str(doc.document_id), "chunk_id": str(chunk.id), "score": 0.92},
            {"doc_id": str(doc.document_id), "score": 0.5}])
    assert edge.evidence == [graph.DocRef(doc_id=doc.document_id, chunk_id=chunk.id, score=0.92)]
    assert again.mention_count == 2 and len(again.evidence) == 2, "evidence is merged without duplicates"

    missing = str(uuid.uuid4())
    with db.connect("app") as conn:
        for refs, sqlstate, column in [
            (f'[{{"doc_id": "{missing}"}}]', "23503", "evidence[0].doc_id"),
            (f'[{{"doc_id": "{doc.document_id}", "chunk_id": "{missing}"}}]', "23503", "evidence[0].chunk_id"),
            ('[{"doc_id": "not-a-uuid"}]', "22023", "evidence[0].doc_id"),
            (f'[{{"doc_id": "{doc.document_id}", "score": "high"}}]', "22023", "evidence[0].score"),
        ]:
            set_context(conn, TENANT_A)
            expect_error(conn, sqlstate, column,
                         "select memsub.temporal_edge_add('Bob', 'knows', 'Alice', p_evidence => %s::jsonb)", [refs])
        # Another tenant cannot cite the document: it is not visible there.
        set_context(conn, TENANT_B)
        expect_error(conn, "23503", "evidence[0].doc_id",
                     "select memsub.temporal_edge_add('Bob', 'knows', 'Alice', p_evidence => %s::jsonb)",
                     [f'[{{"doc_id": "{doc.document_id}"}}]'])


def test_typed_nodes_of_the_four_kinds_and_edges_between_them(db):
    with db.connect("app") as conn:
        new_session(conn, "s-graph", user=ALICE)
    with tenant_session(db.dsn("app"), user=ALICE, session="s-graph") as session:
        doc = session.documents.ingest("bio.md", "# Alice\n\nAlice is a database engineer.",
                                       file_hash="f" * 64, mime="md", summary="About Alice", key_concepts=["Alice"])
        entity = session.graph.upsert_entity("Alice", "Person", aliases=["A. Smith"],
                                             properties={"role": "engineer"},
                                             doc_refs=[{"doc_id": str(doc.document_id), "score": 1.0}])
        entity = session.graph.upsert_entity("Alice", "Person", aliases=["Ali", "A. Smith"])
        note = session.memory.remember(f"user:{ALICE}:notes", "alice", {"likes": "postgres"},
                                       tier="STM", importance=0.7)
        session.graph.temporal_edge_add(str(note.id), "about", "Alice", source_type="Memory")
        session.graph.temporal_edge_add("s-graph", "mentions", "Alice", source_type="Episode")
        session.graph.temporal_edge_add(str(doc.document_id), "describes", "Alice", source_type="Document")
        nodes = {n.node_type: n for n in session.graph.nodes()}
        edges = session.graph.edges_as_of(entity="Alice")
    assert entity.aliases == ["A. Smith", "Ali"] and entity.entity_type == "Person" and entity.version == 2
    assert set(nodes) == {"Entity", "Episode", "Document", "Memory"}
    assert (nodes["Entity"].node_id, nodes["Entity"].entity_type, nodes["Entity"].aliases) == (
        "Alice", "Person", ["A. Smith", "Ali"])
    assert nodes["Entity"].doc_refs[0].doc_id == doc.document_id
    assert (nodes["Episode"].node_id, nodes["Episode"].session_id, nodes["Episode"].valid_until) == (
        "s-graph", "s-graph", None)
    assert (nodes["Document"].path, nodes["Document"].mime, nodes["Document"].hash, nodes["Document"].content) == (
        "bio.md", "md", "f" * 64, "About Alice")
    assert (nodes["Memory"].memory_tier, nodes["Memory"].importance) == ("STM", 0.7)
    assert nodes["Memory"].decay_state == {"last_access_ts": None, "weight": 1.0}
    assert {(e.source_type, e.relationship_type) for e in edges} == {
        ("Memory", "about"), ("Episode", "mentions"), ("Document", "describes")}

    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        expect_error(conn, "22023", "entity_type", "select memsub.graph_upsert_entity('Acme', 'Company')")
        set_context(conn, TENANT_A)
        expect_error(conn, "23503", "source_entity",
                     "select memsub.temporal_edge_add(%s, 'describes', 'Alice', p_source_type => 'Document')",
                     [str(uuid.uuid4())])
        set_context(conn, TENANT_A)
        expect_error(conn, "22023", "source_type",
                     "select memsub.temporal_edge_add('x', 'is', 'y', p_source_type => 'Thing')")


def test_graph_nodes_view_shows_only_what_row_security_allows(db):
    with tenant_session(db.dsn("app"), TENANT_A) as session:
        session.graph.upsert_entity("Alice", "Person")
        session.documents.ingest("a.md", "tenant a", file_hash="a" * 64, mime="md")
    with tenant_session(db.dsn("app"), TENANT_B) as session:
        session.graph.upsert_entity("Bob", "Person")

    def visible(tenant: uuid.UUID) -> set[str]:
        with db.connect("app") as conn:
            set_context(conn, tenant)
            return {r["node_id"] for r in rows(conn, "select node_id from memsub.graph_nodes")}

    assert "Alice" in visible(TENANT_A) and "Bob" not in visible(TENANT_A)
    assert visible(TENANT_B) == {"Bob"}
    # The view adds no filter of its own: without the table's policy, tenant B would see tenant A's entity.
    with db.connect() as conn:
        conn.execute("drop policy tenant_isolation on memsub.world_model_entities")
        conn.execute("drop policy admin_override on memsub.world_model_entities")
        conn.execute("create policy everything on memsub.world_model_entities using (true)")
    assert "Alice" in visible(TENANT_B)


def hub_of_two_levels(conn: psycopg.Connection[Any], fan_out: int) -> None:
    """Tenant A: an Entity node Hub (alias Centre) with edges written under its alias to t0..t{fan_out - 1}, and an
    edge from each of those to u0..u{fan_out - 1}; committed."""
    set_context(conn, TENANT_A)
    conn.execute("select memsub.graph_upsert_entity('Hub', 'Concept', array['Centre'])")
    for number in range(fan_out):
        conn.execute("select memsub.upsert_relationship('Centre', 'links', %s)", [f"t{number}"])
        conn.execute("select memsub.upsert_relationship(%s, 'links', %s)", [f"t{number}", f"u{number}"])
    conn.commit()


def test_graph_reads_look_entities_up_once_per_entity_not_per_edge_or_row(db):
    """With Entity nodes in the tenant, names resolve through them (memsub._entity_keys, memsub._resolve_entity:
    two index searches each). edges_as_of looked its entity up again for every edge it read, graph_neighbors_as_of
    looked up every edge's target, the last level's too, traverse_graph resolved each edge's entity twice and
    looked up the keys of each entity it reached, entity_neighbourhood resolved the other end of each edge it
    returned, and close_relationship looked both ends up again for every edge its filter read."""
    fan_out = 30
    track_function_calls(db)
    with db.connect("app") as conn:
        hub_of_two_levels(conn, fan_out)
        reads = {
            "edges_as_of": ("select count(*) from memsub.edges_as_of(null, 'hub')", fan_out),
            "graph_neighbors_as_of": ("select count(*) from memsub.graph_neighbors_as_of('Hub', null, 2)",
                                      2 * fan_out),
            "traverse_graph": ("select count(*) from memsub.traverse_graph('Hub', 2)", 2 * fan_out),
            "entity_neighbourhood": ("select count(*) from memsub.entity_neighbourhood('Hub')", fan_out),
            "close_relationship": ("select count(*) from memsub.close_relationship('Hub', 'links', 't0')", 1),
        }
        calls = {}
        for name, (statement, expected) in reads.items():
            set_context(conn, TENANT_A)
            found, calls[name] = calls_during(conn, lambda statement=statement: conn.execute(statement).fetchone(),
                                              ("_entity_keys", "_resolve_entity", "_resolve_entities"))
            assert found == (expected,), name
            conn.commit()
    # The entity asked for looked up once (_entity_keys and _resolve_entity each look one name up through
    # _resolve_entities); each level of a walk in one _resolve_entities call for the names on its edges, which
    # gives the keys of the entities it goes on from too (graph_neighbors_as_of: one for the level it expands).
    assert calls == {"edges_as_of": {"_entity_keys": 1, "_resolve_entities": 1},
                     "graph_neighbors_as_of": {"_entity_keys": 1, "_resolve_entities": 1 + 1},
                     "traverse_graph": {"_resolve_entity": 1, "_entity_keys": 1, "_resolve_entities": 2 + 2},
                     "entity_neighbourhood": {"_entity_keys": 1, "_resolve_entities": 1 + 1},
                     "close_relationship": {"_entity_keys": 2, "_resolve_entities": 2}}, calls


def test_a_walk_reads_the_edges_of_a_level_in_one_pass(db):
    """traverse_graph read the edges of each level once per entity of the level (a search each, which on a small
    graph reads every edge of the tenant) and, with Entity nodes, all of them a second time to resolve the names on
    them. It now reads a level's edges once, all its keys in one search per direction."""
    fan_out = 30
    with db.connect("app") as conn:
        hub_of_two_levels(conn, fan_out)
        set_context(conn, TENANT_A)
        # Searches of the table and its indexes, and the tuples they returned.
        read = ("select pg_stat_get_xact_numscans(%(table)s::regclass)"
                " + coalesce(sum(pg_stat_get_xact_numscans(i.indexrelid)), 0),"
                " pg_stat_get_xact_tuples_returned(%(table)s::regclass)"
                " + coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)"
                " from pg_index i where i.indrelid = %(table)s::regclass")
        table = {"table": "memsub.entity_relationships"}
        before = conn.execute(read, table).fetchone()
        walked = conn.execute("select count(*) from memsub.traverse_graph('Hub', 2)").fetchone()
        after = conn.execute(read, table).fetchone()
    assert walked == (2 * fan_out,)
    assert before is not None and after is not None
    tuples = after[1] - before[1]
    # Two levels, one direction: each level's search reads at most every edge of the tenant (2 * fan_out) once,
    # whichever plan the statistics of the moment give (a search per key, or one of the whole tenant). Before:
    # 180 tuples with statistics, 1,980 (33 searches) without.
    assert tuples <= 2 * (2 * fan_out), (after[0] - before[0], tuples)


def test_a_name_matches_whatever_whitespace_surrounds_it(db):
    """A name is stored trimmed of whitespace of any kind (memsub._require_text); its matching form
    (memsub.normalize_text) trims the same whitespace, so a lookup with a tab or a line break around the name finds
    what was written under it, and the other way round. The no-break spaces of text copied from web pages (U+00A0,
    U+2007, U+202F) and the next-line control (U+0085) are whitespace too, as Unicode counts them."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.upsert_relationship(%s, 'links', 'Beta')", ["\tAlpha\n"])
        conn.execute("select memsub.graph_upsert_entity('Gamma', 'Concept', array[%s])", ["\tG\r\n"])
        conn.execute("select memsub.upsert_relationship('G', 'links', 'Delta')")
        conn.execute("select memsub.upsert_relationship(%s, 'links', 'Beta')", ["\u00a0Acme\u202fCorp\u2007"])
        stored = conn.execute("select source_entity from memsub.edges_as_of(null, 'Acme Corp')").fetchall()
        found = {name: conn.execute("select count(*) from memsub.edges_as_of(null, %s)", [name]).fetchone()
                 for name in ("Alpha", "\tAlpha", "alpha\r\n", " ALPHA ", "\nGamma\t", "g\t", "Alpha\u00a0",
                              "\u0085alpha", "acme\u00a0corp", "ACME \u2007 CORP")}
    assert found == {name: (1,) for name in found}, found
    assert stored == [("Acme Corp",)]


def test_graph_filters_that_can_match_nothing_are_refused_naming_the_field(db):
    """A blank value (no-break spaces included) or an empty list of types matches no stored edge: refused, as the
    other filters are (22023 naming the field), instead of an empty answer; a blank alias is not kept."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.upsert_relationship('A', 'links', 'B')")
        for statement, params, field in [
                ("select * from memsub.traverse_graph('A', p_relationship_types => %s)", [["\u00a0"]],
                 "relationship_types"),
                ("select * from memsub.traverse_graph('A', p_relationship_types => %s::text[])", [[]],
                 "relationship_types"),
                ("select * from memsub.edges_as_of(null, %s)", ["   "], "entity"),
                ("select * from memsub.edges_as_of(null, %s)", ["\u202f"], "entity"),
                ("select * from memsub.entity_search(%s)", ["\u00a0"], "query_text")]:
            conn.execute("savepoint probe")
            with pytest.raises(psycopg.Error) as info:
                conn.execute(statement, params)
            assert (info.value.sqlstate, info.value.diag.column_name) == ("22023", field), statement
            conn.execute("rollback to savepoint probe")
        entity = conn.execute("select aliases, alias_keys from memsub.graph_upsert_entity('E', 'Person', %s)",
                              [["\u00a0", " E2 "]]).fetchone()
    assert entity == ([" E2 "], ["e2"])  # aliases are kept as given; a blank one is dropped


def test_superseding_with_an_edge_dated_later_moves_its_start_to_valid_from(db):
    """The new fact holds from valid_from (the function's comment): when its edge already has an open window that
    starts later, that window now starts at valid_from, so no time is left where neither holds."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.temporal_edge_add('A', 'works_at', 'C', %s)", [T0])
        conn.execute("select memsub.temporal_edge_add('A', 'works_at', 'B', %s)", [T2])
        edge = conn.execute("select lower(valid_period), mention_count from memsub.supersede_relationship("
                            "'A', 'works_at', 'B', %s)", [T1]).fetchone()
        between = conn.execute("select target_entity from memsub.edges_as_of(%s, 'A')",
                               [T1 + timedelta(days=30)]).fetchall()
    assert edge == (T1, 2)
    assert between == [("B",)]


ORG_X = uuid.UUID("0000000a-0000-0000-0000-00000000000a")


def test_edges_of_a_superseded_document_version_or_memory_entry_close_when_it_is_superseded(db):
    """A Document node is one version of a file and a Memory node one version of a key. Re-ingesting the file,
    overwriting the key or deleting it supersedes that version, but the edges naming it stayed open and the graph
    reads returned them as current. They now close where the version was superseded (valid_until = the
    superseding transaction's time), the edges another organization drew to it included: the reads as of now
    leave them out, and the reads as of before still show them."""
    notes = f"user:{ALICE}:notes"
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        doc = session.documents.ingest("bio.md", "Alice is a database engineer.", file_hash="a" * 64, mime="md")
        note = session.memory.write(notes, "alice", {"likes": "postgres"})
        gone = session.memory.write(notes, "old", {"likes": "mysql"})
        kept = session.memory.write(notes, "kept", {"likes": "sqlite"})
        for node, node_type in ((doc.document_id, "Document"), (note.id, "Memory"), (gone.id, "Memory"),
                                (kept.id, "Memory")):
            session.graph.temporal_edge_add(str(node), "about", "Alice", source_type=node_type)
        session.graph.temporal_edge_add("Alice", "wrote", str(doc.document_id), target_type="Document")
    with tenant_session(db.dsn("app"), org=ORG_X, user=ALICE) as session:
        drawn = session.graph.temporal_edge_add(str(doc.document_id), "cites", "Bob", source_type="Document")
    before = drawn.valid_from
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        v2 = session.documents.ingest("bio.md", "Alice is a staff engineer.", file_hash="b" * 64, mime="md")
        session.memory.write(notes, "alice", {"likes": "postgres 18"}, expected_version=note.version)
        session.memory.delete(notes, "old", gone.version)
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        current = {(e.source_entity, e.relationship_type, e.target_entity)
                   for e in session.graph.edges_as_of(entity="Alice")}
        assert current == {(str(kept.id), "about", "Alice")}
        assert session.graph.neighbors_as_of(str(doc.document_id)) == []
        assert session.graph.neighbors_as_of(str(note.id)) == []
        earlier = {(e.source_entity, e.relationship_type, e.target_entity, e.valid_until is None)
                   for e in session.graph.edges_as_of(before, entity="Alice")}
        assert earlier == {(str(doc.document_id), "about", "Alice", False), (str(note.id), "about", "Alice", False),
                           (str(gone.id), "about", "Alice", False), (str(kept.id), "about", "Alice", True),
                           ("Alice", "wrote", str(doc.document_id), False)}
        session.graph.temporal_edge_add(str(v2.document_id), "about", "Alice", source_type="Document")
        assert {e.source_entity for e in session.graph.edges_as_of(entity="Alice")} == {str(kept.id),
                                                                                         str(v2.document_id)}
    with tenant_session(db.dsn("app"), org=ORG_X, user=ALICE) as session:
        assert session.graph.edges_as_of(entity="Bob") == []
        assert [e.target_entity for e in session.graph.edges_as_of(before, entity="Bob")] == ["Bob"]


def test_an_edge_to_a_memory_tombstone_is_refused(db):
    """memory_delete writes a tombstone version (value NULL). A Memory node is a live version of a key
    (docs/decisions.md), and the tombstone is the key's latest version but no memory: an edge to it, open or
    already ended, is refused (55000 naming the end), from temporal_edge_add and supersede_relationship alike, and
    nothing is written. Before the fix every one of these calls drew the edge, which read as current."""
    notes = f"user:{ALICE}:notes"
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        gone = session.memory.write(notes, "gone", {"likes": "mysql"})
        tombstone = session.memory.delete(notes, "gone", gone.version)
    edges_before = ground_truth(db, "select count(*) as n from memsub.entity_relationships")
    with db.connect("app") as conn:
        for call, column in (
                ("temporal_edge_add(%s, 'about', 'Alice', p_source_type => %s)", "source_entity"),
                ("temporal_edge_add('Alice', 'wrote', %s, p_target_type => %s)", "target_entity"),
                ("temporal_edge_add(%s, 'about', 'Alice', now() - interval '2 days', now() - interval '1 day', "
                 "p_source_type => %s)", "source_entity"),
                ("supersede_relationship(%s, 'about', 'Alice', p_source_type => %s)", "source_entity"),
                ("supersede_relationship('Alice', 'wrote', %s, p_target_type => %s)", "target_entity")):
            set_context(conn, TENANT_A, user=ALICE)
            error = expect_error(conn, "55000", column, f"select memsub.{call}", [str(tombstone.id), "Memory"])
            assert "tombstone" in str(error), error
    assert ground_truth(db, "select count(*) as n from memsub.entity_relationships") == edges_before


def test_a_new_edge_of_a_superseded_document_version_or_memory_entry_is_refused(db):
    """Superseding a version closes its edges (above); an edge drawn to it afterwards would stay open and read as
    current. A window that still holds after the version was superseded is refused (55000 naming the end), from
    temporal_edge_add and supersede_relationship alike; a window that ended by then is history and is accepted."""
    notes = f"user:{ALICE}:notes"
    with tenant_session(db.dsn("app"), user=ALICE) as session:
        doc = session.documents.ingest("bio.md", "Alice is a database engineer.", file_hash="a" * 64, mime="md")
        note = session.memory.write(notes, "alice", {"likes": "postgres"})
        gone = session.memory.write(notes, "old", {"likes": "mysql"})
        session.documents.ingest("bio.md", "Alice is a staff engineer.", file_hash="b" * 64, mime="md")
        session.memory.write(notes, "alice", {"likes": "postgres 18"}, expected_version=note.version)
        session.memory.delete(notes, "old", gone.version)
    edges_before = ground_truth(db, "select count(*) as n from memsub.entity_relationships")
    with db.connect("app") as conn:
        for node, node_type in ((doc.document_id, "Document"), (note.id, "Memory"), (gone.id, "Memory")):
            for call, column in (
                    ("temporal_edge_add(%s, 'about', 'Alice', p_source_type => %s)", "source_entity"),
                    ("temporal_edge_add('Alice', 'wrote', %s, p_target_type => %s)", "target_entity"),
                    ("temporal_edge_add(%s, 'about', 'Alice', now() - interval '1 day', now() + interval '1 day', "
                     "p_source_type => %s)", "source_entity"),
                    ("supersede_relationship(%s, 'about', 'Alice', p_source_type => %s)", "source_entity"),
                    ("supersede_relationship('Alice', 'wrote', %s, p_target_type => %s)", "target_entity")):
                set_context(conn, TENANT_A, user=ALICE)
                error = expect_error(conn, "55000", column, f"select memsub.{call}", [str(node), node_type])
                assert "superseded" in str(error), error
        assert ground_truth(db, "select count(*) as n from memsub.entity_relationships") == edges_before
        set_context(conn, TENANT_A, user=ALICE)
        history = one(conn, "select * from memsub.temporal_edge_add(%s, 'about', 'Alice', %s, %s, "
                            "p_source_type => 'Document')", [str(doc.document_id), T0, T1])
        assert history["valid_period"].upper == T1
