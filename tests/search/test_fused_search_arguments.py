"""The arguments the three fused searches (hybrid_search, memory_search, entity_search) share: every k the
documentation allows is served, any rrf_k >= 0 ranks without overflowing, and the query text is held against its
limits before anything is read, naming query_text."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, set_context, write
from layer_helpers import call

DIM = 384
USER = uuid.UUID("00000000-0000-0000-0002-000000000001")
SEARCHES = ("hybrid_search", "memory_search", "entity_search")


def vec(*head: float) -> str:
    values = list(head) + [0.001] * (DIM - len(head))
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def fill(conn: Any) -> None:
    """One row for each search, found by the word 'vacuum' and by the vector vec(1.0)."""
    packet = write(conn, {"packet_type": "note", "payload": {"text": "vacuum tuning"}})
    call(conn, "select * from memsub.store_embedding(%s, 'content', %s::vector, 0, 'vacuum tuning')",
         [packet["packet_id"], vec(1.0)])
    conn.execute("select memsub.memory_write(%s, 'k', '{\"text\": \"vacuum\"}'::jsonb, p_embedding => %s::vector)",
                 [f"user:{USER}", vec(1.0)])
    conn.execute("select memsub.graph_upsert_entity('vacuum corp', 'Organization', p_embedding => %s::vector)",
                 [vec(1.0)])


def refusal(conn: Any, statement: str, params: list[Any]) -> tuple[str | None, str | None]:
    """(sqlstate, column) of the error the statement raises, in a savepoint; (None, None) when it succeeds."""
    try:
        with conn.transaction():
            conn.execute(statement.encode(), params).fetchall()
    except psycopg.Error as error:
        return error.sqlstate, error.diag.column_name
    return None, None


@pytest.mark.parametrize("search", SEARCHES)
def test_every_k_up_to_max_k_is_served_with_the_default_candidates(db384, search):
    """The default candidates, max(50, 4k), stop at the max_k limit: k 251-1000 is served. Candidates the caller
    passes above the limit are still refused, naming candidates."""
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A, user=USER)
        fill(conn)
        max_k = conn.execute("select memsub.limit_value('max_k')").fetchone()
        assert max_k is not None
        for k in (251, 300, max_k[0]):
            rows = conn.execute(f"select score from memsub.{search}('vacuum', %s::vector, %s)",  # noqa: S608
                                [vec(1.0), k]).fetchall()
            assert len(rows) == 1, (search, k)
        if search == "hybrid_search":
            assert refusal(conn, "select * from memsub.hybrid_search('vacuum', %s::vector, 300, p_candidates => %s)",
                           [vec(1.0), max_k[0] + 1]) == ("54000", "candidates")


@pytest.mark.parametrize("search", SEARCHES)
def test_any_rrf_k_ranks_without_overflow(db384, search):
    """rrf_k + rank is added in double precision: the largest integer rrf_k gives 1 / (rrf_k + rank) per leg."""
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A, user=USER)
        fill(conn)
        rows = conn.execute(f"select score, vector_rank, text_rank from memsub.{search}('vacuum', %s::vector, 3, "  # noqa: S608
                            "p_rrf_k => 2147483647)", [vec(1.0)]).fetchall()
        assert len(rows) == 1
        score, vector_rank, text_rank = rows[0]
        assert (vector_rank, text_rank) == (1, 1)
        assert score == pytest.approx(2.0 / (2147483647.0 + 1), rel=1e-12)


WEIGHTS = ("vector_weight", "text_weight", "importance_weight", "recency_weight")


def test_hybrid_weights_rank_up_to_1e100_and_larger_ones_are_refused_naming_them(db384):
    """Each weight is finite and from 0 to 1e100: weights are relative, and the largest finite ones overflowed the
    score (rrf_k 0, both legs weighted 1e308: 22003 "value out of range: overflow", naming nothing). At 1e100 each
    the score is still the formula's; above it the call is refused naming the weight, and nothing is read."""
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A, user=USER)
        packet = write(conn, {"packet_type": "note", "payload": {"text": "vacuum tuning"}, "importance_score": 1.0})
        call(conn, "select * from memsub.store_embedding(%s, 'content', %s::vector, 0, 'vacuum tuning')",
             [packet["packet_id"], vec(1.0)])
        every = ", ".join(f"p_{weight} => 1e100" for weight in WEIGHTS)
        rows = conn.execute(f"select score, vector_rank, text_rank from memsub.hybrid_search('vacuum', %s::vector, "  # noqa: S608
                            f"p_rrf_k => 0, {every})", [vec(1.0)]).fetchall()
        assert [(rank_v, rank_t) for _, rank_v, rank_t in rows] == [(1, 1)]
        # rrf (1e100 / 1 per leg) times (1 + importance 1 * 1e100 + recency 1 * 1e100)
        assert rows[0][0] == pytest.approx(2e100 * (1 + 2e100), rel=1e-12)
        for weight in WEIGHTS:
            for value in (1.0000001e100, 1e308):
                assert refusal(conn, f"select * from memsub.hybrid_search('vacuum', %s::vector, p_rrf_k => 0, "  # noqa: S608
                               f"{every.replace(f'p_{weight} => 1e100', f'p_{weight} => {value!r}')})",
                               [vec(1.0)]) == ("22023", weight), (weight, value)


@pytest.mark.parametrize("search", SEARCHES)
def test_query_text_over_its_limits_is_refused_naming_query_text(db384, search):
    """Text longer than max_query_chars, or with more terms than max_query_nodes, is refused (54000, query_text)
    whether or not the tenant holds rows, and with or without a query vector."""
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A, user=USER)
        limits = conn.execute("select memsub.limit_value('max_query_chars'), "
                              "memsub.limit_value('max_query_nodes')").fetchone()
        assert limits is not None
        too_long = "x" * (limits[0] + 1)
        many_terms = " ".join(f"w{i}" for i in range(limits[1]))  # n words and n - 1 operators
        statement = f"select * from memsub.{search}(%s, %s::vector, 3)"  # noqa: S608
        for filled in (False, True):
            if filled:
                fill(conn)
            for text in (too_long, many_terms):
                for vector in (None, vec(1.0)):
                    assert refusal(conn, statement, [text, vector]) == ("54000", "query_text"), (filled, len(text))


@pytest.mark.parametrize("rank_by", ["distance", "combined"])
def test_a_similarity_search_past_what_a_walk_returns_is_refused_naming_k(db384, rank_by):
    """An installation may raise max_k above 1000, the most rows pgvector's walk returns (its largest ef_search):
    semantic_search then failed on its internal helper's message naming "pool". It refuses such a k by name and
    serves 1000."""
    with db384.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_k', 5000)")
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A, user=USER)
        fill(conn)
        statement = "select * from memsub.semantic_search(%s::vector, %s, p_rank_by => %s)"
        assert refusal(conn, statement, [vec(1.0), 1001, rank_by]) == ("54000", "k")
        assert len(conn.execute(statement, [vec(1.0), 1000, rank_by]).fetchall()) == 1
        # hybrid_search's vector leg asks the walk for no more than it returns, whatever candidates max_k allows
        assert len(conn.execute("select * from memsub.hybrid_search('vacuum', %s::vector, 300)",
                                [vec(1.0)]).fetchall()) == 1
