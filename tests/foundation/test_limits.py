"""Resource limits (docs/security.md, "Limits"): one tenant's call cannot take what the others need.

Every refusal is SQLSTATE 54000 with the field in the column diagnostic, and nothing is written. Traversals are
measured in rows, never in time.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from memsub.cli import main as cli
from memsub.errors import LimitExceeded, from_database_error

from helpers import TENANT_A, TENANT_B, calls_during, function_calls, set_context, superuser_count, track_function_calls

USER = uuid.UUID("0c000000-0000-0000-0000-00000000000c")
# Tables a refused call could have written to; each must be unchanged by it.
WRITTEN = ["memsub.packet_store", "memsub.packet_threads", "memsub.memory_entries", "memsub.sessions",
           "memsub.entity_relationships", "memsub.reflection_store", "memsub.memory_access_log"]


def noise(chars: int) -> str:
    """Text that does not compress, so its stored size is its length."""
    return os.urandom(chars // 2 + 1).hex()[:chars]


def envelope(**fields: Any) -> str:
    return json.dumps({"packet_type": "event", "payload": {"n": 1}, **fields})


# (name, statement, parameters, field) — each over a default limit.
OVERSIZED: list[tuple[str, str, list[Any], str]] = [
    ("envelope bytes", "select * from memsub.write_packet(%s::jsonb)",
     [envelope(payload={"text": noise(1_100_000)})], "envelope"),
    ("tag count", "select * from memsub.write_packet(%s::jsonb)",
     [envelope(tags=[f"t{i}" for i in range(257)])], "tags"),
    ("tag length", "select * from memsub.write_packet(%s::jsonb)", [envelope(tags=["x" * 201])], "tags"),
    ("parent count", "select * from memsub.write_packet(%s::jsonb)",
     [envelope(lineage={"parent_ids": [str(uuid.uuid4()) for _ in range(257)]})], "lineage.parent_ids"),
    ("batch size", "select * from memsub.write_packets(%s::jsonb)",
     [json.dumps([{"packet_type": "event", "payload": {"n": i}} for i in range(1001)])], "envelopes"),
    ("batch bytes", "select * from memsub.write_packets(%s::jsonb)",
     [json.dumps([{"packet_type": "event", "payload": {"t": noise(900_000)}} for _ in range(20)])], "envelopes"),
    ("query text", "select * from memsub.hybrid_search(%s, null::vector)", [noise(5000)], "query_text"),
    ("query terms", "select * from memsub.hybrid_search(%s, null::vector)",
     [" ".join(f"w{i}" for i in range(300))], "query_text"),
    ("keyword query text", "select * from memsub._keyword_candidates(%s)", [noise(5000)], "query_text"),
    ("k", "select * from memsub.hybrid_search('polymer', null::vector, 1001)", [], "k"),
    ("candidates", "select * from memsub.hybrid_search('polymer', null::vector, 10, p_candidates => 1001)", [],
     "candidates"),
    ("scan tuples", "select * from memsub.semantic_search("
                    "array_fill(0.5::real, array[memsub.vector_dimension()])::vector, 10, p_max_scan_tuples => 100001)",
     [], "max_scan_tuples"),
    ("traversal depth", "select * from memsub.traverse_graph('a', 11)", [], "max_depth"),
    ("traversal rows", "select * from memsub.traverse_graph('a', 2, p_limit => 10001)", [], "limit"),
    ("neighbour depth", "select * from memsub.graph_neighbors('a', 11)", [], "max_depth"),
    ("neighbourhood rows", "select * from memsub.entity_neighbourhood('a', 0, 10001)", [], "limit"),
    ("thread rows", "select * from memsub.get_thread(%s, 10001)", [uuid.uuid4()], "limit"),
    ("lineage depth", "select * from memsub.get_lineage(%s, 'ancestors', 1001)", [uuid.uuid4()], "max_depth"),
    ("memory value", "select * from memsub.memory_write(%s, 'k', %s::jsonb)",
     [f"user:{USER}", json.dumps({"v": noise(1_100_000)})], "value"),
    ("session state", "select * from memsub.session_create('s-big', p_state => %s::jsonb)",
     [json.dumps({"v": noise(1_100_000)})], "state"),
    ("relationship entity", "select * from memsub.upsert_relationship(%s, 'uses', 'b')", [noise(1_100_000)],
     "source_entity"),
    ("reflection tags", "select * from memsub.record_reflection('insight', 'content', p_tags => %s)",
     [[f"t{i}" for i in range(257)]], "tags"),
    ("access ids", "select * from memsub._record_accesses('packet', %s, %s)",
     [[uuid.uuid4() for _ in range(1001)], [0.5] * 1001], "target_ids"),
]


@pytest.mark.parametrize(("statement", "params", "field"), [case[1:] for case in OVERSIZED],
                         ids=[case[0] for case in OVERSIZED])
def test_oversized_input_is_refused_with_54000_and_writes_nothing(db, statement, params, field):
    before = {table: superuser_count(db, table) for table in WRITTEN}
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, user=USER)
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error:
            conn.execute(statement, params)
    assert error.value.sqlstate == "54000"
    assert error.value.diag.column_name == field
    assert f'"{field}"' in (error.value.diag.message_primary or "")
    assert {table: superuser_count(db, table) for table in WRITTEN} == before


def test_input_at_the_limits_is_accepted_and_deduplicated_in_order(db):
    tags = [f"t{i % 200}" for i in range(256)]  # 256 tags, 200 distinct
    parents = []
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for i in range(3):
            parents.append(conn.execute("select packet_id from memsub.write_packet(%s::jsonb)",
                                        [envelope(payload={"p": i})]).fetchone()[0])
        lineage = {"parent_ids": [str(p) for p in parents * 85] + [str(parents[0])]}  # 256 ids, 3 distinct
        written = conn.execute("select packet_id from memsub.write_packet(%s::jsonb)",
                               [envelope(tags=tags, lineage=lineage)]).fetchone()
        row = conn.execute("select tags, parent_ids from memsub.get_packet(%s)", [written[0]]).fetchone()
        conn.execute("select count(*) from memsub.hybrid_search(%s, null::vector)", [noise(4096)])
    assert row == ([f"t{i}" for i in range(200)], parents)


def test_a_deployment_tunes_a_limit_and_only_the_owner_writes_the_table(db):
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_tags', 2)")
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select * from memsub.write_packet(%s::jsonb)", [envelope(tags=["a", "b"])])
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error:
            conn.execute("select * from memsub.write_packet(%s::jsonb)", [envelope(tags=["a", "b", "c"])])
        assert error.value.diag.column_name == "tags"
        assert "limit=max_tags value=2 actual=3" in (error.value.diag.message_detail or "")
        mapped = from_database_error(error.value)
        assert isinstance(mapped, LimitExceeded) and mapped.field == "tags"
    for role in ("app", "tenant_admin", "platform_admin", "analyst"):
        with db.connect(role) as conn:
            assert conn.execute("select value from memsub.limits where name = 'max_tags'").fetchone() == (2,)
            for statement in ("update memsub.limits set value = 1000000",
                              "insert into memsub.limits (name, value) values ('max_k', 1000000)",
                              "delete from memsub.limits"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(statement)
                conn.rollback()
    # A GUC of the same name changes nothing: only the table counts.
    with db.connect("app") as conn:
        conn.execute("set memsub.max_tags = '1000'")
        set_context(conn, TENANT_A)
        assert conn.execute("select memsub.limit_value('max_tags')").fetchone() == (2,)


@pytest.mark.parametrize(("name", "value", "field"), [
    ("max_kk", 5, "name"),  # a misspelt limit was stored and silently left the default in force
    ("statement_timeout_ms", 2**31, "value"),  # stored, then refused by ALTER ROLE in login-timeouts
    ("lock_timeout_ms", 10**12, "value"),
])
def test_a_limit_row_the_installation_would_not_use_is_refused_naming_the_field(db, name, value, field):
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_tags', 2)")
        admin.commit()
        for statement, params in [("insert into memsub.limits (name, value) values (%s, %s)", [name, value]),
                                  ("update memsub.limits set name = %s, value = %s", [name, value])]:
            with pytest.raises(psycopg.errors.InvalidParameterValue) as error:
                admin.execute(statement, params)
            admin.rollback()
            assert error.value.diag.column_name == field
        assert admin.execute("select name, value from memsub.limits").fetchall() == [("max_tags", 2)]
        admin.execute("insert into memsub.limits (name, value) values ('statement_timeout_ms', 2147483647)")


def test_a_limit_of_one_refuses_two_and_a_value_of_one_reads_no_limit(db):
    """Every limit is at least 1 (limits_value_positive, and every default), so a value of 1 or less passes
    whatever the limits are: _check_limit answers it without looking the limit up, which a one-id read, a one-tag
    write and most single-item calls would otherwise pay on every call. At a limit of 1, two are still refused."""
    with db.connect() as admin:
        with pytest.raises(psycopg.errors.CheckViolation):
            admin.execute("insert into memsub.limits (name, value) values ('max_rows', 0)")
        admin.rollback()
        admin.execute("insert into memsub.limits (name, value) values ('max_tags', 1)")
        admin.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select * from memsub.write_packet(%s::jsonb)", [envelope(tags=["a"])])
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error:
            conn.execute("select * from memsub.write_packet(%s::jsonb)", [envelope(tags=["a", "b"])])
        assert error.value.diag.column_name == "tags"
    with db.connect() as admin:  # the superuser may count function calls (track_functions)
        admin.execute("set track_functions = 'all'")
        counts = {}
        for value in (None, -3, 0, 1, 2):
            admin.execute("select memsub._check_limit(%s, 'max_rows', 'packet_ids')", [value])
            counts[value] = function_calls(admin, ["limit_value"]).get("limit_value", 0)
        admin.rollback()
    assert counts == {None: 0, -3: 0, 0: 0, 1: 0, 2: 1}, counts


def test_several_values_are_held_against_one_limit_read_once(db):
    """_check_limits refuses the first value over the limit, naming its field as _check_limit does, and reads the
    limit once for all the values (none at all when no value is above 1)."""
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_json_bytes', 10)")
        admin.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error:
            conn.execute("select memsub._check_limits(array[3, 11, 12]::bigint[], 'max_json_bytes', "
                         "array['first', 'second', 'third'])")
        assert error.value.diag.column_name == "second"
        assert error.value.diag.message_detail == "limit=max_json_bytes value=10 actual=11"
    with db.connect() as admin:  # the superuser may count function calls (track_functions)
        admin.execute("set track_functions = 'all'")
        counts = {}
        for values in ("{null,0,1}", "{5,10,7}"):
            admin.execute("select memsub._check_limits(%s::bigint[], 'max_json_bytes', array['a', 'b', 'c'])",
                          [values])
            counts[values] = function_calls(admin, ["limit_value"]).get("limit_value", 0)
        admin.rollback()
    assert counts == {"{null,0,1}": 0, "{5,10,7}": 1}, counts


def complete_graph(conn: Any, nodes: int) -> None:
    for source in range(nodes):
        for target in range(nodes):
            if source != target:
                conn.execute("select memsub.upsert_relationship(%s, 'links', %s, 0.9)", [f"n{source}", f"n{target}"])


def test_traversal_of_a_complete_graph_returns_each_entity_once(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        complete_graph(conn, 10)  # 90 edges: about a million simple paths from any node
        for direction in ("outgoing", "incoming", "both"):
            rows = conn.execute("select depth, entity, path, path_confidence from memsub.traverse_graph("
                                "'n0', 10, p_direction => %s, p_limit => 10000)", [direction]).fetchall()
            assert sorted(r[1] for r in rows) == sorted(f"n{i}" for i in range(1, 10))
            assert {(r[0], len(r[2])) for r in rows} == {(1, 2)}
            assert all(r[3] == pytest.approx(0.9) for r in rows)
        assert len(conn.execute("select * from memsub.traverse_graph('n0', 10, p_limit => 4)").fetchall()) == 4
        # The current-graph walk: each entity expanded once, limit bounds the rows of all hops together.
        rows = conn.execute("select depth, source_entity, target_entity from memsub.graph_neighbors('n0', 10, 50)"
                            ).fetchall()
        assert len(rows) == 50
        assert {r[0] for r in rows} == {1, 2}
        everything = conn.execute("select count(*) from memsub.graph_neighbors('n0', 10, 10000)").fetchone()
        assert everything == (90,)  # each edge once: every entity is expanded once


def test_traversal_keeps_the_most_confident_shortest_path(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for source, target, confidence in [("a", "b", 0.5), ("a", "c", 0.9), ("b", "d", 0.9), ("c", "d", 0.8),
                                           ("d", "e", 1.0), ("a", "e", 0.1)]:
            conn.execute("select memsub.upsert_relationship(%s, 'r', %s, %s)", [source, target, confidence])
        rows = conn.execute("select depth, entity, path, path_confidence from memsub.traverse_graph('a', 5)"
                            ).fetchall()
    by_entity = {r[1]: r for r in rows}
    assert len(rows) == len(by_entity) == 4
    assert by_entity["d"][2] == ["a", "c", "d"] and by_entity["d"][3] == pytest.approx(0.72)
    assert by_entity["e"][0] == 1  # shortest first, even when a longer path is more confident
    assert [r[1] for r in rows] == ["c", "b", "e", "d"]  # by depth, then most confident


def test_lineage_larger_than_max_rows_is_refused_and_tenants_do_not_share_limits_state(db):
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_rows', 5)")
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        root = conn.execute("select packet_id from memsub.write_packet(%s::jsonb)", [envelope()]).fetchone()[0]
        conn.execute("select * from memsub.write_packets(%s::jsonb)", [json.dumps(
            [{"packet_type": "event", "payload": {"n": i}, "lineage": {"parent_ids": [str(root)]}}
             for i in range(6)])])
        conn.commit()
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error:
            conn.execute("select * from memsub.get_lineage(%s, 'descendants')", [root])
        assert error.value.diag.column_name == "max_depth"
        conn.rollback()
        set_context(conn, TENANT_B)
        with pytest.raises(psycopg.errors.NoDataFound):  # not the other tenant's refusal: B cannot see root at all
            conn.execute("select count(*) from memsub.get_lineage(%s, 'descendants')", [root])


def test_edges_as_of_refuses_a_graph_larger_than_max_rows_rather_than_returning_it(db):
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_rows', 5)")
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for i in range(6):
            conn.execute("select memsub.upsert_relationship('hub', 'r', %s)", [f"n{i}"])
        conn.commit()
        set_context(conn, TENANT_A)
        assert conn.execute("select count(*) from memsub.edges_as_of(null, 'n1')").fetchone() == (1,)
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error:
            conn.execute("select * from memsub.edges_as_of()")
        assert error.value.diag.column_name == "entity"
        assert "limit=max_rows value=5" in (error.value.diag.message_detail or "")
        conn.rollback()
        set_context(conn, TENANT_B)
        assert conn.execute("select count(*) from memsub.edges_as_of()").fetchone() == (0,)


def edge_reads(conn: Any) -> int:
    """Index entries and tuples of memsub.entity_relationships the transaction has read so far."""
    row = conn.execute("select pg_stat_get_xact_tuples_returned('memsub.entity_relationships'::regclass)"
                       " + coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)"
                       " from pg_index i where i.indrelid = 'memsub.entity_relationships'::regclass").fetchone()
    return int(row[0])


def a_hub_among_other_edges(db: Any) -> None:
    """max_walk_edges set to 100, function calls counted, and in tenant A (committed) a hub with 300 edges out,
    written first, then 3,000 edges among 500 other entities. Any plan can stop reading the hub's edges one past a
    limit below 300: a search of its key, or a scan of the table, which meets the hub's edges first."""
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_walk_edges', 100)")
    track_function_calls(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.upsert_relationship('hub', 'links', 'n' || i, 0.9) "
                     "from generate_series(1, 300) i")
        conn.execute("select memsub.upsert_relationship('x' || i % 500, 'links', 'y' || i, 0.9) "
                     "from generate_series(1, 3000) i")
        conn.commit()


def test_a_walk_is_refused_once_it_would_read_more_than_max_walk_edges(db):
    """traverse_graph read every edge of a level before its row limit applied, so from a hub of hundreds of
    thousands of edges a walk ran into the statement timeout whatever its limit. A level now reads its edges in the
    order its rows are chosen in, and stops where its limit does; the edges of all its levels together are bounded
    by max_walk_edges: a walk that would read more is refused, as an edges_as_of read or a lineage walk over
    max_rows is, after reading at most one edge more than the limit."""
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_walk_edges', 100)")
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        # A hub of 300 edges; a root with 60 edges to entities that have one edge each (120 in two levels).
        conn.execute("select memsub.upsert_relationship('hub', 'links', 'n' || i, 0.9) "
                     "from generate_series(1, 300) i")
        conn.execute("select memsub.upsert_relationship('root', 'links', 'm' || i, 0.9), "
                     "memsub.upsert_relationship('m' || i, 'links', 'k' || i, 0.9) from generate_series(1, 60) i")
        conn.commit()
        set_context(conn, TENANT_A)
        assert conn.execute("select count(*) from memsub.traverse_graph('root', 1)").fetchone() == (60,)
        assert conn.execute("select count(*) from memsub.traverse_graph('hub', 1, "
                            "p_relationship_types => array['other'])").fetchone() == (0,)
        # A limit of 5 reads 5 of the hub's edges: well within the limit.
        before = edge_reads(conn)
        assert conn.execute("select count(*) from memsub.traverse_graph('hub', 1, p_limit => 5)").fetchone() == (5,)
        assert edge_reads(conn) - before <= 5
        # A limit of 1000 would read the hub's 300: the walk stops one edge past the limit, refused.
        for depth, limit, direction in [(1, 1000, "outgoing"), (3, 1000, "both")]:
            statement = (depth, limit, direction)
            before = edge_reads(conn)
            with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error, conn.transaction():
                conn.execute("select * from memsub.traverse_graph('hub', %s, p_limit => %s, p_direction => %s)",
                             [depth, limit, direction])
            assert error.value.diag.column_name == "max_depth", statement
            assert error.value.diag.message_primary == (
                f"memsub.traverse_graph: more than 100 edges within max_depth {depth} (limit max_walk_edges); "
                "ask for fewer hops, a smaller limit, fewer relationship_types or a higher min_confidence"), statement
            assert error.value.diag.message_detail == "limit=max_walk_edges value=100", statement
            assert edge_reads(conn) - before <= 101, statement
        # The limit bounds the walk, all its levels together: 60 edges, then 60 more.
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error, conn.transaction():
            conn.execute("select * from memsub.traverse_graph('root', 2)")
        assert error.value.diag.message_detail == "limit=max_walk_edges value=100"
        conn.rollback()
        # The limit holds per walk: another tenant's walk from its own (empty) hub is not refused.
        set_context(conn, TENANT_B)
        assert conn.execute("select count(*) from memsub.traverse_graph('hub', 1)").fetchone() == (0,)


def test_graph_neighbors_are_refused_once_they_would_read_more_than_max_walk_edges(db):
    """graph_neighbors_as_of (and graph_neighbors, which is it as of now) sorted every edge of a level to choose
    the rows of its limit, so from a hub of hundreds of thousands of edges a call ran into the statement timeout
    whatever its limit. A level now reads its edges in the order of its rows, at most its limit of them for each
    name of its entities, and the edges it reads, all its levels together, are bounded by max_walk_edges as
    traverse_graph's are: a call that would read more is refused in the same way, after reading at most one edge
    more than the limit."""
    a_hub_among_other_edges(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        # Besides the hub: a root with 60 edges to entities that have one edge each (120 in two levels).
        conn.execute("select memsub.upsert_relationship('root', 'links', 'm' || i, 0.9), "
                     "memsub.upsert_relationship('m' || i, 'links', 'k' || i, 0.9) from generate_series(1, 60) i")
        conn.commit()
        set_context(conn, TENANT_A)
        # The limit is held once per level, not once per edge.
        assert calls_during(conn, lambda: conn.execute("select count(*) from memsub.graph_neighbors('root', 1)"
                                                       ).fetchone(), ["_check_walk_edges"]) == (
            (60,), {"_check_walk_edges": 1})
        assert conn.execute("select count(*) from memsub.graph_neighbors_as_of('m1', null, 10)").fetchone() == (1,)
        # A walk its row limit ends before the next level is read reads 60 edges: within the limit.
        assert conn.execute("select count(*) from memsub.graph_neighbors('root', 2, 60)").fetchone() == (60,)
        # A limit of 5 reads 5 of the hub's 300 edges: within the limit.
        before = edge_reads(conn)
        assert conn.execute("select count(*) from memsub.graph_neighbors('hub', 1, 5)").fetchone() == (5,)
        assert edge_reads(conn) - before <= 5
        for statement, depth in [("select * from memsub.graph_neighbors('hub', 1, 1000)", 1),
                                 ("select * from memsub.graph_neighbors_as_of('hub', null, 3, 1000)", 3),
                                 # The limit bounds the walk, all its levels together: 60 edges, then 60 more.
                                 ("select * from memsub.graph_neighbors('root', 2)", 2)]:
            before = edge_reads(conn)
            with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error, conn.transaction():
                conn.execute(statement)
            assert error.value.diag.column_name == "max_depth", statement
            assert error.value.diag.message_primary == (
                f"memsub.graph_neighbors_as_of: more than 100 edges within max_depth {depth} "
                "(limit max_walk_edges); ask for fewer hops, a smaller limit, or walk with memsub.traverse_graph "
                "and its relationship_types or min_confidence"), statement
            assert error.value.diag.message_detail == "limit=max_walk_edges value=100", statement
            if "hub" in statement:  # the hub's other edges are never read
                assert edge_reads(conn) - before <= 101, statement
        conn.rollback()
        # The limit holds per walk: another tenant's walk from its own (empty) hub is not refused.
        set_context(conn, TENANT_B)
        assert conn.execute("select count(*) from memsub.graph_neighbors('hub', 1)").fetchone() == (0,)


def test_an_entity_neighbourhood_is_refused_once_it_would_read_more_than_max_walk_edges(db):
    """entity_neighbourhood sorted every edge of an entity, in each direction, before its limit chose the most
    confident, so around a hub of hundreds of thousands of edges a call ran into the statement timeout whatever
    its limit. Each direction now reads its edges most confident first, at most limit of them for each name of the
    entity, and the edges it reads, both directions together, are bounded by max_walk_edges as a walk's are: a
    call that would read more is refused in the same way, naming the entity, after reading at most one edge more
    than the limit."""
    a_hub_among_other_edges(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        # Besides the hub: mid with 60 edges out and 60 weaker ones in; root with 60 out and 30 in.
        conn.execute("select memsub.upsert_relationship('mid', 'links', 'a' || i, 0.9), "
                     "memsub.upsert_relationship('b' || i, 'links', 'mid', 0.3) from generate_series(1, 60) i")
        conn.execute("select memsub.upsert_relationship('root', 'links', 'c' || i, 0.9) from generate_series(1, 60) i")
        conn.execute("select memsub.upsert_relationship('d' || i, 'links', 'root', 0.9) from generate_series(1, 30) i")
        conn.execute("select memsub.assert_fact('root', 'is', '\"a root\"'::jsonb, 0.8)")
        conn.commit()
        set_context(conn, TENANT_A)
        # The limit is held once per call, not once per edge.
        within, calls = calls_during(conn, lambda: conn.execute(
            "select kind, direction, count(*) from memsub.entity_neighbourhood('root') "
            "group by kind, direction order by kind, direction").fetchall(), ["_check_walk_edges"])
        assert within == [("fact", "subject", 1), ("relationship", "incoming", 30), ("relationship", "outgoing", 60)]
        assert calls == {"_check_walk_edges": 1}
        # A higher min_confidence reads fewer edges: mid's weak incoming ones are not read.
        assert conn.execute("select count(*) from memsub.entity_neighbourhood('mid', 0.5)").fetchone() == (60,)
        # A limit of 5 reads 5 of the hub's 300 edges: within the limit.
        before = edge_reads(conn)
        assert conn.execute("select count(*) from memsub.entity_neighbourhood('hub', p_limit => 5)").fetchone() == (5,)
        assert edge_reads(conn) - before <= 5
        for statement in ["select * from memsub.entity_neighbourhood('hub', p_limit => 1000)",
                          # Both directions together: 60 edges out and 60 in.
                          "select * from memsub.entity_neighbourhood('mid')"]:
            before = edge_reads(conn)
            with pytest.raises(psycopg.errors.ProgramLimitExceeded) as error, conn.transaction():
                conn.execute(statement)
            assert error.value.diag.column_name == "entity", statement
            assert error.value.diag.message_primary == (
                "memsub.entity_neighbourhood: more than 100 edges (limit max_walk_edges); "
                "ask for a smaller limit or a higher min_confidence"), statement
            assert error.value.diag.message_detail == "limit=max_walk_edges value=100", statement
            assert edge_reads(conn) - before <= 101, statement
        conn.rollback()
        # The limit holds per call: another tenant's hub of the same name is its own (empty).
        set_context(conn, TENANT_B)
        assert conn.execute("select count(*) from memsub.entity_neighbourhood('hub')").fetchone() == (0,)


def test_batch_parents_are_written_first_and_cycles_are_named(db):
    ids = [str(uuid.uuid4()) for _ in range(300)]
    # A chain given child first: each envelope's parent comes later in the batch.
    chain = [{"packet_id": ids[i], "packet_type": "event", "payload": {"n": i},
              "lineage": {"parent_ids": [ids[i + 1]]} if i + 1 < len(ids) else {}} for i in range(len(ids))]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        rows = conn.execute("select packet_id::text, generation from memsub.write_packets(%s::jsonb)",
                            [json.dumps(chain)]).fetchall()
        assert [r[0] for r in rows] == ids
        assert [r[1] for r in rows] == list(range(len(ids) - 1, -1, -1))
        a, b, c = (str(uuid.uuid4()) for _ in range(3))
        cycle = [{"packet_id": a, "packet_type": "event", "payload": 1, "lineage": {"parent_ids": [b]}},
                 {"packet_id": b, "packet_type": "event", "payload": 2, "lineage": {"parent_ids": [c]}},
                 {"packet_id": c, "packet_type": "event", "payload": 3, "lineage": {"parent_ids": [a]}}]
        with pytest.raises(psycopg.errors.CheckViolation) as error:
            conn.execute("select * from memsub.write_packets(%s::jsonb)", [json.dumps(cycle)])
    assert error.value.diag.column_name == "lineage.parent_ids"
    assert "envelopes 1, 2, 3 of the batch reference each other" in str(error.value)


def test_login_timeouts_refuse_a_bad_login_before_setting_any(db):
    # The good login was printed as set, then the refusal of the group role rolled its settings back.
    login = f"memsub_limits_login_{uuid.uuid4().hex[:8]}"
    with db.connect(autocommit=True) as admin:
        admin.execute(sql.SQL("create role {} login in role memsub_app").format(sql.Identifier(login)))
    try:
        for logins in ([login, "memsub_app"], [login, "memsub_no_such_login"]):
            result = CliRunner().invoke(cli, ["login-timeouts", *logins, "--dsn", db.dsn()])
            assert result.exit_code == 2, result.output
            assert f"{login}:" not in result.output
            with db.connect() as admin:
                assert admin.execute("select rolconfig from pg_catalog.pg_roles where rolname = %s",
                                     [login]).fetchone() == (None,)
    finally:
        with db.connect(autocommit=True) as admin:
            admin.execute(sql.SQL("drop role {}").format(sql.Identifier(login)))


def test_login_timeouts_are_set_on_the_login_and_end_a_runaway_statement(db):
    login = f"memsub_limits_login_{uuid.uuid4().hex[:8]}"
    with db.connect(autocommit=True) as admin:
        admin.execute(sql.SQL("create role {} login in role memsub_app").format(sql.Identifier(login)))
        admin.execute("insert into memsub.limits (name, value) values ('statement_timeout_ms', 200)")
    try:
        runner = CliRunner()
        result = runner.invoke(cli, ["login-timeouts", login, "memsub_app", "--dsn", db.dsn()])
        assert result.exit_code == 2 and "cannot log in" in result.output  # a group role: not inherited (bad input)
        result = runner.invoke(cli, ["login-timeouts", login, "--dsn", db.dsn()])
        assert result.exit_code == 0, result.output
        assert "statement_timeout = 200ms, lock_timeout = 5000ms" in result.output
        with psycopg.connect(db.server.dsn(db.name, login)) as conn:
            assert conn.execute("show statement_timeout").fetchone() == ("200ms",)
            assert conn.execute("show lock_timeout").fetchone() == ("5s",)
            assert conn.execute("show idle_in_transaction_session_timeout").fetchone() == ("1min",)
            with pytest.raises(psycopg.errors.QueryCanceled):
                conn.execute("select pg_sleep(30)")
    finally:
        with db.connect(autocommit=True) as admin:
            admin.execute(sql.SQL("drop owned by {}").format(sql.Identifier(login)))
            admin.execute(sql.SQL("drop role {}").format(sql.Identifier(login)))
