"""Graph reads around a hub cost what their limit allows, not what the hub holds.

traverse_graph, graph_neighbors(_as_of) and entity_neighbourhood read every edge of a level (of an entity) before
their limit chose the rows, and entity_neighbourhood every fact of its subject: the edges through a bitmap search of
the exclusion constraint's index, or a scan of the tenant's rows, neither of which can stop early. A hub of
thousands of edges cost thousands of index entries per call whatever its limit, and a call refused over
max_walk_edges read them all before it was refused. Each edge search now reads in the order the call returns its
rows, from an index that holds that order, and stops there. The tests count the index entries and scanned rows a
call reads (``pg_stat_get_xact_tuples_returned``), never time, in a tenant where the hub was written last.
"""

from __future__ import annotations

import random
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, set_context

HUB_OUT = 1500
HUB_IN = 300
HUB_FACTS = 1000
LIMIT = 10

READS = ("select pg_stat_get_xact_tuples_returned(%(t)s::regclass)"
         " + coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)"
         " from pg_index i where i.indrelid = %(t)s::regclass")


def reads(conn: psycopg.Connection[Any], table: str) -> int:
    """Index entries and rows of sequential scans of ``table`` the transaction has read so far, by any plan: a bitmap
    search counts every entry it put in its bitmap, a sequential scan every row it went past."""
    row = conn.execute(READS, {"t": table}).fetchone()
    assert row is not None
    return int(row[0])


def read_during(conn: psycopg.Connection[Any], statement: str,
                params: dict[str, Any] | None = None) -> tuple[Any, dict[str, int]]:
    """The rows of the statement (or the error it raised, its savepoint rolled back) and what it read of the edges
    and of the facts."""
    before = {t: reads(conn, t) for t in ("memsub.entity_relationships", "memsub.knowledge_facts")}
    result: Any
    try:
        with conn.transaction():
            result = conn.execute(statement, params).fetchall()
    except psycopg.Error as error:
        result = error
    return result, {t.split(".")[1]: reads(conn, t) - before[t] for t in before}


def a_hub_written_last(db: Any) -> None:
    """In tenant A: 1,500 edges among 300 entities and 500 facts about them, then a hub with HUB_OUT edges out
    (confidences in 40 steps, so many tie; three types; every fourth observed twice) and 50 more spelt 'hub',
    HUB_IN edges in and HUB_FACTS facts. Written last, the hub's rows are the last a scan of the table meets."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select count(memsub.upsert_relationship('x' || i % 300, 'links', 'y' || i, 0.5)) "
                     "from generate_series(1, 1500) i")
        conn.execute("select count(memsub.assert_fact('x' || i % 300, 'p', to_jsonb(i), 0.5)) "
                     "from generate_series(1, 500) i")
        conn.execute("select count(memsub.upsert_relationship('Hub', (array['links', 'knows', 'cites'])[1 + i %% 3], "
                     "'n' || i, ((i * 37) %% 40) / 40.0)) from generate_series(1, %s) i", [HUB_OUT])
        conn.execute("select count(memsub.upsert_relationship('hub', (array['links', 'knows', 'cites'])[1 + i %% 3], "
                     "'n' || i, 0)) from generate_series(4, %s, 4) i", [HUB_OUT])
        conn.execute("select count(memsub.upsert_relationship('hub', 'links', 'z' || i, 0.9)) "
                     "from generate_series(1, 50) i")
        conn.execute("select count(memsub.upsert_relationship('m' || i, 'links', 'HUB', ((i * 7) %% 20) / 20.0)) "
                     "from generate_series(1, %s) i", [HUB_IN])
        conn.execute("select count(memsub.assert_fact('hub', 'p' || i %% 7, to_jsonb(i), ((i * 11) %% 30) / 30.0)) "
                     "from generate_series(1, %s) i", [HUB_FACTS])
        conn.commit()
    with db.connect() as admin:
        admin.execute("analyze memsub.entity_relationships")
        admin.execute("analyze memsub.knowledge_facts")
        admin.commit()


# Calls with a small limit around the hub (%(n)s), and the index entries each may read: LIMIT per edge search (one
# per matching form and direction), a few more for the rows a search passes over, never the hub's thousands.
SMALL = {
    "traverse_graph": ("select * from memsub.traverse_graph('hub', 3, p_limit => %(n)s)", 2 * LIMIT),
    "traverse_graph both ways": ("select * from memsub.traverse_graph('hub', 3, p_limit => %(n)s, "
                                 "p_direction => 'both')", 4 * LIMIT),
    "traverse_graph confident": ("select * from memsub.traverse_graph('hub', 2, p_limit => %(n)s, "
                                 "p_min_confidence => 0.5, p_min_path_confidence => 0.6)", 2 * LIMIT),
    "graph_neighbors": ("select * from memsub.graph_neighbors('hub', 2, %(n)s)", 2 * LIMIT),
    "graph_neighbors_as_of": ("select * from memsub.graph_neighbors_as_of('Hub', now(), 3, %(n)s)", 2 * LIMIT),
    "entity_neighbourhood": ("select * from memsub.entity_neighbourhood('hub', p_limit => %(n)s)", 4 * LIMIT),
}


def test_a_read_with_a_small_limit_reads_what_its_limit_returns(db):
    a_hub_written_last(db)
    with db.connect("app") as conn:
        for name, (statement, most) in SMALL.items():
            set_context(conn, TENANT_A)
            everything = conn.execute(statement, {"n": 10000}).fetchall()
            assert len(everything) >= 2 * LIMIT, name
            for _ in range(7):  # later calls run cached plans
                found, read = read_during(conn, statement, {"n": LIMIT})
                assert not isinstance(found, psycopg.Error), found
                # The rows are those of the same read without a limit, cut at the limit.
                if name == "entity_neighbourhood":
                    assert found == ([r for r in everything if r[0] == "relationship"][:LIMIT]
                                     + [r for r in everything if r[0] == "fact"][:LIMIT])
                else:
                    assert found == everything[:LIMIT], name
                assert read["entity_relationships"] <= most, (name, read)
                assert read["knowledge_facts"] <= 2 * LIMIT, (name, read)
            conn.rollback()


# Calls over max_walk_edges (set to 100) around the hub: refused, after reading one edge past the limit and a few
# more, not the hub's thousands.
OVER = {
    "traverse_graph": ("select * from memsub.traverse_graph('hub', 1, p_limit => 1000)", "max_depth"),
    "traverse_graph both ways": ("select * from memsub.traverse_graph('hub', 2, p_direction => 'both')",
                                 "max_depth"),
    "graph_neighbors": ("select * from memsub.graph_neighbors('hub', 1, 1000)", "max_depth"),
    "graph_neighbors_as_of": ("select * from memsub.graph_neighbors_as_of('hub', null, 3, 1000)", "max_depth"),
    "entity_neighbourhood": ("select * from memsub.entity_neighbourhood('hub', p_limit => 1000)", "entity"),
}


def test_a_read_over_max_walk_edges_is_refused_after_reading_the_limit(db):
    a_hub_written_last(db)
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_walk_edges', 100)")
        admin.commit()
    with db.connect("app") as conn:
        for name, (statement, field) in OVER.items():
            set_context(conn, TENANT_A)
            for _ in range(7):
                found, read = read_during(conn, statement)
                assert isinstance(found, psycopg.errors.ProgramLimitExceeded), (name, found)
                assert found.diag.column_name == field
                assert found.diag.message_detail == "limit=max_walk_edges value=100"
                assert read["entity_relationships"] <= 110, (name, read)
            # A small limit reads what it returns, well within max_walk_edges: it is answered.
            small = statement.replace("1000", "%(n)s").replace("'both')", "'both', p_limit => %(n)s)")
            found, read = read_during(conn, small, {"n": LIMIT})
            assert not isinstance(found, psycopg.Error), (name, found)
            assert len(found) == (2 * LIMIT if name == "entity_neighbourhood" else LIMIT)
            assert read["entity_relationships"] <= 4 * LIMIT, (name, read)
            conn.rollback()


def _random_graph(conn: psycopg.Connection[Any], rng: random.Random, nodes: bool) -> list[str]:
    """A small graph in tenant A where limits fall among ties: few confidence values, several types between the same
    ends, names spelt in two cases, edges back to where a walk came from, windows opened over the last ten days and
    some closed, facts; with Entity nodes (aliases standing for them) when ``nodes``. Returns the names to read
    from."""
    names = [f"e{n}" for n in range(12)]
    for _ in range(90):
        source, target = rng.choice(names), rng.choice(names)
        spelt = source.upper() if rng.random() < 0.3 else source
        conn.execute("select memsub.upsert_relationship(%s, %s, %s, %s, p_seen_at => now() - %s * interval '1 day')",
                     [spelt, rng.choice(["a", "b", "c"]), target, rng.choice([0.25, 0.5, 0.5, 0.75, 1.0]),
                      rng.randrange(1, 10)])
    for _ in range(10):
        conn.execute("select memsub.close_relationship(e.source_entity, e.relationship_type, e.target_entity) "
                     "from memsub.entity_relationships e where upper_inf(e.valid_period) "
                     "order by e.relationship_id limit 1 offset %s", [rng.randrange(40)])
    for n in range(60):
        conn.execute("select memsub.assert_fact(%s, %s, to_jsonb(%s), %s)",
                     [rng.choice(names), rng.choice(["p", "q"]), n, rng.choice([0.5, 0.75])])
    if nodes:
        conn.execute("select memsub.graph_upsert_entity('E1', 'Concept', array['e2', 'one'])")
        conn.execute("select memsub.graph_upsert_entity('e5', 'Concept', array['e6'])")
    return ["e1", "E1", "one", "e3", "e5"]


@pytest.mark.parametrize("nodes", [False, True], ids=["names", "entity nodes"])
def test_every_limit_gives_the_first_rows_of_the_whole_read(db, nodes):
    """Reads stopped early keep every rule of the whole read (shortest and most confident paths, each entity once,
    ties broken by names and types, windows valid at as_of, aliases): at each limit a call returns the first rows of
    the same call with no limit to speak of."""
    rng = random.Random(7 if nodes else 3)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        starts = _random_graph(conn, rng, nodes)
        conn.commit()
        set_context(conn, TENANT_A)
        calls = ["select * from memsub.traverse_graph(%(e)s, 3, p_limit => %(n)s)",
                 "select * from memsub.traverse_graph(%(e)s, 4, p_limit => %(n)s, p_direction => 'both')",
                 "select * from memsub.traverse_graph(%(e)s, 3, p_limit => %(n)s, p_direction => 'incoming', "
                 "p_relationship_types => array['a', 'b'], p_min_path_confidence => 0.3)",
                 "select * from memsub.traverse_graph(%(e)s, 2, p_limit => %(n)s, p_min_confidence => 0.5)",
                 "select * from memsub.graph_neighbors(%(e)s, 3, %(n)s)",
                 "select * from memsub.graph_neighbors_as_of(%(e)s, now() - interval '5 days', 2, %(n)s)",
                 "select * from memsub.entity_neighbourhood(%(e)s, p_limit => %(n)s)",
                 "select * from memsub.entity_neighbourhood(%(e)s, 0.6, %(n)s)"]
        for call in calls:
            for entity in starts:
                whole = conn.execute(call, {"e": entity, "n": 10000}).fetchall()
                for limit in (1, 2, 3, 5, 8):
                    cut = conn.execute(call, {"e": entity, "n": limit}).fetchall()
                    if "neighbourhood" in call:
                        expected = ([r for r in whole if r[0] == "relationship"][:limit]
                                    + [r for r in whole if r[0] == "fact"][:limit])
                    else:
                        expected = whole[:limit]
                    assert cut == expected, (call, entity, limit)


# Two edge confidences next to each other in double precision whose products with this path confidence round to the
# same number: steps of one path confidence, which a walk orders by name, not by edge confidence.
TIED_FROM, TIED_HIGH, TIED_LOW = 0.4494910647887381, 0.49543508709194095, 0.4954350870919409
LONG_NAME = "ab" + "x" * 1300  # with M's name, past the 2,400 bytes of the ordered indexes


def _graph_of_ties(conn: psycopg.Connection[Any], nodes: bool) -> None:
    """S reaches M (path confidence TIED_FROM), whose steps all tie on path confidence: twenty names at TIED_HIGH
    and 'aa' at TIED_LOW, first by name; one of them under two types, one edge back to S. S reaches Z through an
    edge of confidence 0: every step from Z has path confidence 0, ordered by name only. D has thirty edges to three
    entities under ten types, then ten more. An edge whose names are too long for the ordered indexes goes from M
    to 'ab...'. With ``nodes``, two entities stand for some of M's targets under other names."""
    up = "select memsub.upsert_relationship(%s, %s, %s, %s)"
    conn.execute(up, ["S", "r", "M", TIED_FROM])
    for i in range(20):
        conn.execute(up, ["M", "r", f"b{i:02d}", TIED_HIGH])
    conn.execute(up, ["M", "r", "zz", TIED_HIGH])
    conn.execute(up, ["M", "r", "aa", TIED_LOW])
    conn.execute(up, ["M", "s", "b03", TIED_HIGH])
    conn.execute(up, ["M", "r", "S", 0.99])
    conn.execute(up, ["M", "r", LONG_NAME, TIED_HIGH])
    conn.execute(up, ["S", "r", "Z", 0.0])
    for i in range(15):
        conn.execute(up, ["Z", "r", f"z{14 - i:02d}", 0.1 * (i % 5)])
    for i in range(30):
        conn.execute(up, ["D", f"t{i}", f"d{i % 3}", 0.5])
    for i in range(10):
        conn.execute(up, ["D", "u", f"e{i}", 0.4])
    if nodes:
        conn.execute("select memsub.graph_upsert_entity('Bee', 'Concept', array['b05', 'b17'])")
        conn.execute("select memsub.graph_upsert_entity('AA', 'Concept', array['zz'])")


@pytest.mark.parametrize("nodes", [False, True], ids=["names", "entity nodes"])
def test_steps_the_index_order_cannot_tell_apart_are_read_until_the_walk_can(db, nodes):
    """A search reads a step's edges most confident first, names next, and stops once it has the entities the
    level may still return. Where that order is not the walk's it reads on: an edge of a lower confidence whose
    path confidence rounds to the same number, steps from a path of confidence 0, edges to entities already reached
    or reached again under another type, names that Entity nodes resolve otherwise, names too long for the index."""
    assert TIED_FROM * TIED_HIGH == TIED_FROM * TIED_LOW and TIED_HIGH != TIED_LOW
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        _graph_of_ties(conn, nodes)
        conn.commit()
        set_context(conn, TENANT_A)
        call = ("select * from memsub.traverse_graph(%(e)s, %(d)s, p_limit => %(n)s, p_direction => %(w)s, "
                "p_min_path_confidence => %(m)s)")
        for entity in ("S", "M", "Z", "D"):
            for depth in (1, 2, 3):
                for direction in ("outgoing", "both"):
                    for least in (0.0, TIED_FROM * TIED_HIGH):
                        params = {"e": entity, "d": depth, "w": direction, "m": least}
                        whole = conn.execute(call, {**params, "n": 10000}).fetchall()
                        for limit in range(1, min(len(whole), 25) + 1):
                            cut = conn.execute(call, {**params, "n": limit}).fetchall()
                            assert cut == whole[:limit], (params, limit)
        second = [r[1] for r in conn.execute("select * from memsub.traverse_graph('S', 2)").fetchall()]
        back = conn.execute("select entity from memsub.traverse_graph(%s, 1, p_direction => 'incoming')",
                            [LONG_NAME]).fetchall()
    # The ties at M come by name: 'aa' (the lower edge confidence; with nodes, the entity it stands for) first,
    # then (without nodes) the name too long for the index.
    assert second[:3] == ["M", "Z", "AA" if nodes else "aa"]
    assert nodes or second[3] == LONG_NAME
    assert LONG_NAME in second
    assert back == [("M",)]


def test_names_too_long_for_the_ordered_indexes_are_read_too(db):
    """An edge whose names pass 2,400 bytes together, and a fact whose texts do (max_key_bytes raised), are kept
    out of the ordered indexes: every read takes them beside the ordered ones."""
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_key_bytes', 2600)")
        admin.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        _graph_of_ties(conn, False)
        conn.execute("select memsub.assert_fact('M', 'says', to_jsonb(%s::text), 0.9)", ["w" * 2450])
        conn.execute("select memsub.assert_fact('M', 'says', '\"short\"', 0.8)")
        conn.commit()
        set_context(conn, TENANT_A)
        around = conn.execute("select kind, direction, other_entity, length(object #>> '{}') "
                              "from memsub.entity_neighbourhood('M', p_limit => 3)").fetchall()
        into = conn.execute("select kind, direction, other_entity from memsub.entity_neighbourhood(%s)",
                            [LONG_NAME]).fetchall()
        neighbours = conn.execute("select target_entity from memsub.graph_neighbors('M', 1, 1000) "
                                  "where target_entity like 'abx%'").fetchall()
    assert around == [("relationship", "outgoing", "S", None), ("relationship", "outgoing", LONG_NAME, None),
                      ("relationship", "outgoing", "b00", None),
                      ("fact", "subject", None, 2450), ("fact", "subject", None, 5)]
    assert into == [("relationship", "incoming", "M")]
    assert neighbours == [(LONG_NAME,)]
