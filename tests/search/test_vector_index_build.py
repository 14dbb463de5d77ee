"""An operator can rebuild an embedding type's HNSW index with other build parameters (`memsub vector-index
rebuild`): the parameters are checked first (22023 naming the field, nothing changed), only the role that
applies migrations may change them, the rebuilt graph answers searches as before, and `memsub verify` accepts
the tuned parameters while still catching any other change to the index.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from memsub.cli import main as cli

from helpers import set_context
from retrieval_data import BIG, Spec, build, fresh_queries

K = 10
SPEC = Spec(packets=800, types=("content",), other_tenants=2)


def builds(conn: psycopg.Connection[Any]) -> dict[str, tuple[Any, ...]]:
    return {row[0]: row[1:] for row in conn.execute("select * from memsub.vector_index_builds()").fetchall()}


def test_a_rebuild_records_its_parameters_and_the_walk_finds_the_same_neighbours(db384):
    with db384.connect() as conn:
        build(conn, SPEC)
        queries = fresh_queries(conn, SPEC, 8)
        conn.commit()
    with db384.connect() as conn:
        before = builds(conn)
    assert before["content"][1:3] == (16, 64)

    result = CliRunner().invoke(cli, ["vector-index", "rebuild", "--dsn", db384.dsn(), "--type", "content",
                                      "--m", "24", "--ef-construction", "128", "--maintenance-work-mem", "64MB",
                                      "--json"])
    assert result.exit_code == 0, result.output
    reported = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["embedding_type"], r["m"], r["ef_construction"], r["valid"]) for r in reported] == [
        ("content", 24, 128, True)]

    with db384.connect() as conn:
        after = builds(conn)
        assert after["content"][1:3] == (24, 128) and after["content"][4] is True
        # The other types' indexes are untouched.
        assert {t: b for t, b in after.items() if t != "content"} == {
            t: b for t, b in before.items() if t != "content"}
        assert conn.execute("select indisvalid from pg_index where indexrelid = "
                            "'memsub.idx_embeddings_vector_content'::regclass").fetchone() == (True,)
    with db384.connect("app") as app:
        for query in queries:
            with app.transaction():
                set_context(app, BIG)
                walked = [r[0] for r in app.execute(
                    "select embedding_id from memsub.semantic_search(%s::vector, %s, 'content', "
                    "p_mode => 'approximate')", [query, K])]
                exact = [r[0] for r in app.execute(
                    "select embedding_id from memsub.semantic_search(%s::vector, %s, 'content', "
                    "p_mode => 'exact')", [query, K])]
            assert len(walked) == K
            assert len(set(walked) & set(exact)) >= K - 1

    verified = CliRunner().invoke(cli, ["verify", "--dsn", db384.dsn()])
    assert verified.exit_code == 0, verified.output


@pytest.mark.parametrize(("embedding_type", "m", "ef_construction", "field"), [
    ("content", 1, 64, "m"),
    ("content", 101, 400, "m"),
    ("content", 16, 3, "ef_construction"),
    ("content", 16, 1001, "ef_construction"),
    ("content", 24, 40, "ef_construction"),  # below 2 * m
    ("lyrics", 24, 128, "embedding_type"),
])
def test_bad_build_parameters_are_refused_and_nothing_changes(db, embedding_type, m, ef_construction, field):
    with db.connect() as conn:
        before = builds(conn)
        with pytest.raises(psycopg.Error) as caught:
            conn.execute("select memsub.set_vector_index_build(%s, %s, %s)", [embedding_type, m, ef_construction])
        conn.rollback()
        assert caught.value.sqlstate == "22023"
        assert caught.value.diag.column_name == field
        assert builds(conn) == before

    result = CliRunner().invoke(cli, ["vector-index", "rebuild", "--dsn", db.dsn(), "--type", embedding_type,
                                      "--m", str(m), "--ef-construction", str(ef_construction)])
    assert result.exit_code != 0
    assert f'"{field}"' in result.output


@pytest.mark.parametrize("login", ["app", "analyst", "tenant_admin", "platform_admin"])
def test_only_the_installing_role_changes_build_parameters(db, login):
    with db.connect(login) as conn:
        with pytest.raises(psycopg.Error) as caught:
            conn.execute("select memsub.set_vector_index_build('content', 24, 128)")
        assert caught.value.sqlstate == "42501"
    with db.connect() as conn:
        assert builds(conn)["content"][1:3] == (16, 64)


def test_the_build_parameters_are_readable_by_operators_and_analysts(db):
    result = CliRunner().invoke(cli, ["vector-index", "show", "--dsn", db.dsn("analyst"), "--json"])
    assert result.exit_code == 0, result.output
    shown = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["embedding_type"] for r in shown] == ["content", "context", "entity", "summary", "reasoning"]
    assert all((r["m"], r["ef_construction"], r["valid"]) == (16, 64, True) for r in shown)
    with db.connect("app") as conn, pytest.raises(psycopg.Error) as caught:
        conn.execute("select * from memsub.vector_index_builds()")
    assert caught.value.sqlstate == "42501"


@pytest.mark.parametrize(("option", "value", "field"), [("--m", 2**40, "m"), ("--ef-construction", -(2**40),
                                                                             "ef_construction")])
def test_a_build_parameter_beyond_an_integer_is_bad_input_naming_it(db, option, value, field):
    # it went to the server as a bigint, and the answer was that no such function exists (exit 1)
    arguments = {"--m": "16", "--ef-construction": "64", option: str(value)}
    with db.connect() as conn:
        before = builds(conn)
    result = CliRunner().invoke(cli, ["vector-index", "rebuild", "--dsn", db.dsn(), "--type", "content",
                                      *[word for pair in arguments.items() for word in pair]])
    assert result.exit_code == 2, result.output
    assert f"field {field}" in result.output and "22003" in result.output
    with db.connect() as conn:
        assert builds(conn) == before


def test_a_rebuild_that_cannot_start_leaves_the_recorded_parameters_as_they_were(db):
    # A bad maintenance_work_mem used to be refused after set_vector_index_build had recorded m 24 /
    # ef_construction 128, so `show` reported parameters no graph was built with.
    with db.connect() as conn:
        before = builds(conn)
    result = CliRunner().invoke(cli, ["vector-index", "rebuild", "--dsn", db.dsn(), "--type", "content",
                                      "--m", "24", "--ef-construction", "128", "--maintenance-work-mem", "lots"])
    assert result.exit_code == 2, result.output
    assert "maintenance_work_mem" in result.output
    with db.connect() as conn:
        assert builds(conn) == before

