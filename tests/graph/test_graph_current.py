"""Graph reads answer with current facts: as-of by default now, aliases resolve, one entity-name normalization."""

from __future__ import annotations

import json
import unicodedata
from datetime import UTC, datetime, timedelta

import psycopg
from click.testing import CliRunner

from memsub.cli import main
from memsub.migrator import Migrator

from doc_helpers import tenant_session
from helpers import TENANT_A, set_context
from session_helpers import ground_truth, rows

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T1 = datetime(2024, 6, 1, tzinfo=UTC)
BEFORE = T1 - timedelta(days=30)


def composed(text: str) -> str:
    """The text with each accented letter one character (Unicode NFC), as most keyboards type it."""
    return unicodedata.normalize("NFC", text)


def decomposed(text: str) -> str:
    """The text with each accented letter a base letter and a combining mark (NFD), as macOS file names hold it."""
    return unicodedata.normalize("NFD", text)


def _superseded_employer(db):
    with tenant_session(db.dsn("app")) as session:
        session.graph.temporal_edge_add("Alice", "works_at", "Acme", valid_from=T0, confidence=0.9)
        session.graph.temporal_edge_add("Acme", "located_in", "Berlin", valid_from=T0)
        session.graph.temporal_edge_add("Globex", "located_in", "Paris", valid_from=T0)
        session.graph.supersede_relationship("Alice", "works_at", "Globex", valid_from=T1, confidence=0.8)


def test_traversal_and_neighbourhood_follow_the_edges_valid_now_or_at_a_given_time(db):
    _superseded_employer(db)
    with tenant_session(db.dsn("app")) as session:
        now_paths = [(p.depth, p.entity) for p in session.graph.traverse("Alice")]
        then_paths = [(p.depth, p.entity) for p in session.graph.traverse("Alice", as_of=BEFORE)]
        incoming_now = [p.entity for p in session.graph.traverse("Berlin", direction="incoming")]
        near_now = [(i.direction, i.other_entity) for i in session.graph.entity_neighbourhood("Alice")
                    if i.kind == "relationship"]
        near_then = [(i.direction, i.other_entity) for i in session.graph.entity_neighbourhood("Alice", as_of=BEFORE)
                     if i.kind == "relationship"]
        acme_now = [(i.direction, i.other_entity) for i in session.graph.entity_neighbourhood("Acme")
                    if i.kind == "relationship"]
    assert now_paths == [(1, "Globex"), (2, "Paris")]
    assert then_paths == [(1, "Acme"), (2, "Berlin")]
    assert incoming_now == ["Acme"]  # Acme is still in Berlin; nobody works there now
    assert near_now == [("outgoing", "Globex")]
    assert near_then == [("outgoing", "Acme")]
    assert acme_now == [("outgoing", "Berlin")]

    runner = CliRunner()
    base = ["--dsn", db.dsn("app"), "--tenant", str(TENANT_A), "--json"]
    current = runner.invoke(main, ["graph", "traverse", "Alice", *base])
    assert current.exit_code == 0, current.output
    assert [json.loads(line)["entity"] for line in current.stdout.splitlines()] == ["Globex", "Paris"]
    past = runner.invoke(main, ["graph", "traverse", "Alice", *base, "--as-of", BEFORE.isoformat()])
    assert past.exit_code == 0, past.output
    assert [json.loads(line)["entity"] for line in past.stdout.splitlines()] == ["Acme", "Berlin"]
    near = runner.invoke(main, ["graph", "neighbourhood", "Alice", *base])
    assert [json.loads(line)["other_entity"] for line in near.stdout.splitlines()] == ["Globex"]


def test_aliases_resolve_to_their_entity_in_traversals_and_lookups(db):
    with tenant_session(db.dsn("app")) as session:
        session.graph.upsert_entity("Alice Smith", "Person", aliases=["Al", "A. Smith"])
        session.graph.temporal_edge_add("Al", "knows", "Bob", valid_from=T0)
        session.graph.temporal_edge_add("Alice Smith", "works_at", "Acme", valid_from=T0)
        session.graph.temporal_edge_add("Carol", "manages", "a. smith", valid_from=T0)
    with tenant_session(db.dsn("app")) as session:
        from_alias = sorted((p.entity, tuple(p.path)) for p in session.graph.traverse("al"))
        from_name = sorted((p.entity, tuple(p.path)) for p in session.graph.traverse("Alice Smith"))
        to_entity = [(p.entity, tuple(p.path)) for p in session.graph.traverse("Carol", max_depth=2)]
        near = sorted((i.direction, i.other_entity) for i in session.graph.entity_neighbourhood("A. Smith")
                      if i.kind == "relationship")
        edges = sorted(e.target_entity for e in session.graph.edges_as_of(entity="AL"))
        walk = sorted(n.target_entity for n in session.graph.neighbors_as_of("al", max_depth=1))
    expected = [("Acme", ("Alice Smith", "Acme")), ("Bob", ("Alice Smith", "Bob"))]
    assert from_alias == expected and from_name == expected
    assert to_entity == [("Alice Smith", ("Carol", "Alice Smith")), ("Acme", ("Carol", "Alice Smith", "Acme")),
                         ("Bob", ("Carol", "Alice Smith", "Bob"))]
    assert near == [("incoming", "Carol"), ("outgoing", "Acme"), ("outgoing", "Bob")]
    assert edges == ["Acme", "Bob", "a. smith"]
    assert walk == ["Acme", "Bob"]


def test_entity_names_match_the_same_way_in_functions_and_the_entity_graph_view(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        first = rows(conn, "select relationship_id from memsub.upsert_relationship('l9', 'part_of', 'memsub')")
        second = rows(conn, "select relationship_id, mention_count, source_entity "
                            "from memsub.upsert_relationship(' L9 ', 'Part_Of', 'MemSub', 0.5)")
        paths = rows(conn, "select entity from memsub.traverse_graph('L9')")
        conn.commit()
    assert second[0]["relationship_id"] == first[0]["relationship_id"]
    assert (second[0]["mention_count"], second[0]["source_entity"]) == (2, "l9")  # the first spelling is kept
    assert paths == [{"entity": "memsub"}]
    with db.connect(autocommit=True) as conn:
        conn.execute("call memsub.refresh_memory_views()")
    view = ground_truth(db, "select source_entity, target_entity, total_mentions, relationship_count "
                            "from memsub.mv_entity_graph")
    assert view == [{"source_entity": "l9", "target_entity": "memsub", "total_mentions": 2,
                     "relationship_count": 1}]


def test_an_entity_written_again_in_another_case_is_the_same_entity(db):
    """Two spellings that normalize_text makes equal name one entity: upserting 'ALICE' updates the node 'Alice'
    (adding its aliases), and the aliases written before keep resolving to it."""
    with tenant_session(db.dsn("app")) as session:
        session.graph.upsert_entity("Alice", "Person", aliases=["Al"])
        session.graph.upsert_relationship("Al", "owns", "Boat")
        again = session.graph.upsert_entity("ALICE", "Person", aliases=["Ally"])
        session.graph.upsert_relationship("Ally", "owns", "Car")
    with tenant_session(db.dsn("app")) as session:
        walk = sorted(p.entity for p in session.graph.traverse("alice"))
        nodes = sorted(n.node_id for n in session.graph.nodes(node_type="Entity"))
    assert (again.entity_id, again.aliases, again.version) == ("Alice", ["Al", "Ally"], 2)
    assert nodes == ["Alice"]
    assert walk == ["Boat", "Car"]


def test_an_alias_another_entity_holds_is_not_walked_as_its_own(db):
    """An alias stands for one entity: the entity named so, else the first by name that claims it. An entity's
    reads follow the edges written under its name and under the aliases that stand for it, never under an alias
    that stands for another entity."""
    with tenant_session(db.dsn("app")) as session:
        session.graph.upsert_entity("Al", "Person")
        session.graph.upsert_entity("Alice Smith", "Person", aliases=["Al", "AS"])
        session.graph.upsert_entity("Adam Scott", "Person", aliases=["AS"])
        session.graph.upsert_relationship("Al", "owns", "Boat")
        session.graph.upsert_relationship("Alice Smith", "owns", "Car")
        session.graph.upsert_relationship("AS", "owns", "Plane")
    with tenant_session(db.dsn("app")) as session:
        alice = sorted(p.entity for p in session.graph.traverse("Alice Smith"))
        adam = sorted(p.entity for p in session.graph.traverse("Adam Scott"))
        al = sorted(p.entity for p in session.graph.traverse("al"))
        near = sorted(i.other_entity for i in session.graph.entity_neighbourhood("Alice Smith")
                      if i.kind == "relationship")
        edges = sorted(e.target_entity for e in session.graph.edges_as_of(entity="Alice Smith"))
    assert al == ["Boat"]  # the entity named Al
    assert adam == ["Plane"]  # AS: claimed by both, Adam Scott is first by name
    assert alice == near == edges == ["Car"]


def test_closing_an_edge_closes_its_windows_under_every_name_of_its_entities(db):
    """An edge observed under an entity's name and under its alias has an open window under each: closing it by
    either name ends them all, so the relationship no longer holds for any read."""
    with tenant_session(db.dsn("app")) as session:
        session.graph.upsert_entity("Robert", "Person", aliases=["Bob"])
        session.graph.upsert_relationship("Robert", "knows", "X")
        session.graph.upsert_relationship("Bob", "knows", "X")
    with tenant_session(db.dsn("app")) as session:
        closed = session.graph.close_relationship("bob", "knows", "x")
    with tenant_session(db.dsn("app")) as session:
        now_edges = session.graph.edges_as_of(entity="Robert")
        walk = [p.entity for p in session.graph.traverse("Robert")]
    windows = ground_truth(db, "select source_entity, upper(valid_period) as u from memsub.entity_relationships "
                               "order by source_entity")
    assert closed.valid_until is not None
    assert [w["u"] for w in windows] == [closed.valid_until] * 2
    assert (now_edges, walk) == ([], [])


def test_graph_reads_refuse_an_infinite_as_of_naming_it(db):
    """As edges_as_of and graph_neighbors_as_of do: every window is bounded, so 'infinity' would answer nothing."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for statement in ("select * from memsub.traverse_graph('A', p_as_of => 'infinity')",
                          "select * from memsub.entity_neighbourhood('A', p_as_of => '-infinity')"):
            conn.execute("savepoint probe")
            try:
                conn.execute(statement)
            except psycopg.Error as error:
                assert (error.sqlstate, error.diag.column_name) == ("22023", "as_of"), statement
            else:
                raise AssertionError(f"accepted: {statement}")
            conn.execute("rollback to savepoint probe")


def test_entity_names_match_in_either_unicode_composition(db):
    """An accented letter typed as one character or as a letter and a combining mark is the same name: edges, facts,
    aliases and word searches written in one form are found, and reinforced, under the other."""
    assert composed("Zoë Café") != decomposed("Zoë Café")
    with tenant_session(db.dsn("app")) as session:
        session.graph.upsert_entity(decomposed("Zoë Café"), "Person", aliases=[decomposed("Zoé")])
        first = session.graph.upsert_relationship(decomposed("Zoë Café"), decomposed("aimé_par"), "Max")
        again = session.graph.upsert_relationship(composed(" ZOË  CAFÉ"), composed("Aimé_Par"), "max")
        session.graph.upsert_relationship(composed("Zoé"), "knows", decomposed("Noël"))
        fact = session.graph.assert_fact(decomposed("Zoë Café"), "likes", decomposed("Crème brûlée"))
        same_fact = session.graph.assert_fact(composed("zoë café"), "likes", composed("crème BRÛLÉE"))
    with tenant_session(db.dsn("app")) as session:
        walk = sorted(p.entity for p in session.graph.traverse(composed("Zoë Café")))
        through_alias = sorted(p.entity for p in session.graph.traverse(composed("zoé")))
        edges = sorted(e.target_entity for e in session.graph.edges_as_of(entity=composed("ZOË CAFÉ")))
        incoming = [p.entity for p in session.graph.traverse(composed("Noël"), direction="incoming")]
        found = [e.entity_id for e in session.graph.entity_search(composed("Café"))]
    assert (again.relationship_id, again.mention_count) == (first.relationship_id, 2)
    assert (same_fact.fact_id, same_fact.supporting_packet_count) == (fact.fact_id, 2)
    assert walk == through_alias == ["Max", decomposed("Noël")]
    assert edges == ["Max", decomposed("Noël")]
    assert incoming == [decomposed("Zoë Café")]
    assert found == [decomposed("Zoë Café")]


def test_the_stored_matching_forms_agree_with_normalize_text(db):
    """The generated edge keys and the entity-key index spell memsub.normalize_text out (a migration cannot call
    it): for names that decompose, change length in lower case or hold wide spaces, they give its answer."""
    names = [decomposed("Zoë  Café"), "\tİSTANBUL\n", "STRAßE", "a\u2003\u2003b",
             "\uff26\uff55\uff4c\uff4c \uff57\uff49\uff44\uff54\uff48", decomposed("Å \ufb01"),
             "\u00a0Acme\u2007\u202fCorp\u0085"]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for name in names:
            conn.execute("select memsub.upsert_relationship(%s, 'links', %s)", [name, name + " 2"])
            conn.execute("select memsub.graph_upsert_entity(%s, 'Concept')", [name])
        conn.commit()
    with db.connect() as conn:
        index_key = conn.execute("select pg_get_indexdef('memsub.idx_world_model_entities_key'::regclass, 2, true)"
                                 ).fetchone()[0]
        edges = conn.execute("select source_entity, source_key, target_key, memsub.normalize_text(source_entity), "
                             "memsub.normalize_text(target_entity) from memsub.entity_relationships").fetchall()
        entities = conn.execute(f"select {index_key}, memsub.normalize_text(entity_id) "  # noqa: S608
                                "from memsub.world_model_entities").fetchall()
    assert "NORMALIZE(entity_id, NFC)" in index_key, index_key
    assert len(edges) == len(entities) == len(names)
    assert [(e[1], e[2]) for e in edges] == [(e[3], e[4]) for e in edges]
    assert [e[0] for e in entities] == [e[1] for e in entities]


def test_superseded_edges_are_not_in_the_entity_graph_view(db):
    _superseded_employer(db)
    with db.connect(autocommit=True) as conn:
        conn.execute("call memsub.refresh_memory_views()")
    view = ground_truth(db, "select target_entity from memsub.mv_entity_graph where source_entity = 'alice'")
    assert view == [{"target_entity": "globex"}]


def test_the_upgrade_merges_edges_whose_names_differ_only_in_case_or_spacing(empty_db):
    migrator = Migrator(empty_db.dsn())
    versions = [m.version_text for m in migrator.migrations]
    migrator.migrate(versions[versions.index("2.13.0") - 1])
    tenant = "00000000-0000-0000-0000-000000000000"
    with empty_db.connect() as conn:
        for source, target, mentions, confidence, window in [
                ("l9", "memsub", 2, 0.5, (T0, None)),
                ("L9", "MemSub", 3, 0.5, (T0 + timedelta(days=10), None)),
                ("L9 ", "memsub", 1, 0.2, (T0 - timedelta(days=100), T0 - timedelta(days=50))),
                ("Other", "memsub", 1, 0.5, (T0, None))]:
            conn.execute(
                "insert into memsub.entity_relationships (tenant_id, source_entity, relationship_type, "
                "target_entity, mention_count, confidence, first_seen, last_seen, valid_period) "
                "values (%s, %s, 'part_of', %s, %s, %s, %s, %s, tstzrange(%s, %s))",
                [tenant, source, target, mentions, confidence, window[0], window[0], *window])
        conn.commit()
    migrator.migrate()
    edges = ground_truth(empty_db, "select source_entity, target_entity, mention_count, confidence, "
                                   "lower(valid_period) as f, upper(valid_period) as u "
                                   "from memsub.entity_relationships")
    # The history window stays apart; the two open windows of one edge become one, observations added up,
    # confidence combined as independent evidence (1 - 0.5 * 0.5), the earliest spelling and start kept.
    assert sorted(edges, key=lambda e: (e["source_entity"].strip().lower(), e["f"])) == [
        {"source_entity": "L9 ", "target_entity": "memsub", "mention_count": 1, "confidence": 0.2,
         "f": T0 - timedelta(days=100), "u": T0 - timedelta(days=50)},
        {"source_entity": "l9", "target_entity": "memsub", "mention_count": 5, "confidence": 0.75,
         "f": T0, "u": None},
        {"source_entity": "Other", "target_entity": "memsub", "mention_count": 1, "confidence": 0.5,
         "f": T0, "u": None},
    ]


def test_the_neighbourhood_gives_at_most_limit_relationships_most_confident_first(db):
    """Relationships are one kind, whichever their direction: at most limit of them, the most confident first; the
    facts are the other kind, with a limit of their own."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.upsert_relationship('A', 'likes', 'B', 0.9)")
        conn.execute("select memsub.upsert_relationship('C', 'likes', 'A', 0.95)")
        conn.execute("select memsub.upsert_relationship('A', 'knows', 'D', 0.3)")
        conn.execute("select memsub.assert_fact('A', 'colour', '\"red\"', 0.4)")
        near = {limit: conn.execute("select kind, direction, other_entity from memsub.entity_neighbourhood('A', "
                                    "p_limit => %s)", [limit]).fetchall() for limit in (1, 2)}
    assert near[1] == [("relationship", "incoming", "C"), ("fact", "subject", None)]
    assert near[2] == [("relationship", "incoming", "C"), ("relationship", "outgoing", "B"),
                       ("fact", "subject", None)]


def test_a_fact_stated_again_with_the_same_number_written_otherwise_reinforces_it(db):
    """1 and 1.0 are one JSON number (jsonb compares them equal), at the top of an object or inside it: asserting
    the other spelling reinforces the fact instead of contradicting it."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for obj in ("1", "1.0", "1.00"):
            conn.execute("select memsub.assert_fact('S', 'count', %s::jsonb)", [obj])
        for obj in ('{"size": 1.50, "tags": [2.0]}', '{"tags": [2], "size": 1.5}'):
            conn.execute("select memsub.assert_fact('S', 'shape', %s::jsonb)", [obj])
        facts = conn.execute("select predicate, object_normalized, supporting_packet_count, contradiction_count "
                             "from memsub.knowledge_facts order by predicate").fetchall()
    assert facts == [("count", "1", 3, 0), ("shape", '{"size": 1.5, "tags": [2]}', 2, 0)]


def test_reads_cut_at_a_limit_keep_the_same_rows_whatever_order_the_ties_were_written_in(db):
    """Edges that tie on what a read orders by (same ends, same confidence, another type) and facts that tie (same
    predicate and confidence, another object) are ordered by relationship type, then object: a limit that falls
    between them keeps the same one on every call, not whichever row the table returned first."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for relationship_type in ("likes", "knows"):
            conn.execute("select memsub.upsert_relationship('A', %s, 'B', 0.5)", [relationship_type])
        for obj in ('"red"', '"blue"'):
            conn.execute("select memsub.assert_fact('A', 'colour', %s::jsonb, 0.5)", [obj])
        neighbours = conn.execute("select relationship_type from memsub.graph_neighbors_as_of('A', null, 1, 1)"
                                  ).fetchall()
        near = conn.execute("select kind, relationship_type, object from memsub.entity_neighbourhood('A', p_limit => 1)"
                            ).fetchall()
        walked = conn.execute("select relationship_path from memsub.traverse_graph('A', 1)").fetchall()
    assert neighbours == [("knows",)]
    assert near == [("relationship", "knows", None), ("fact", "colour", "blue")]
    assert walked == [(["knows"],)]


def test_the_entity_graph_read_orders_a_source_s_edges_of_equal_mentions_by_type_then_target(db):
    """session.graph.entity_graph orders by mentions, then source: the edges of one source with as many mentions
    tie, and a limit between them must keep the same rows on every call, by relationship type then target."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for relationship_type, target in (("uses", "zeta"), ("uses", "alpha"), ("likes", "mid"), ("knows", "zeta")):
            conn.execute("select memsub.upsert_relationship('hub', %s, %s, 0.5)", [relationship_type, target])
        conn.commit()
    with db.connect(autocommit=True) as conn:
        conn.execute("call memsub.refresh_memory_views()")
    with tenant_session(db.dsn("app")) as session:
        every = [(r.relationship_type, r.target_entity) for r in session.graph.entity_graph()]
        firsts = [[(r.relationship_type, r.target_entity) for r in session.graph.entity_graph(limit=n)]
                  for n in (1, 2, 3)]
    expected = [("knows", "zeta"), ("likes", "mid"), ("uses", "alpha"), ("uses", "zeta")]
    assert every == expected
    assert firsts == [expected[:1], expected[:2], expected[:3]]
