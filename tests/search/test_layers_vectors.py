"""Vectors: each embedding type's queries use its partial HNSW index; search functions; a 384-d installation."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from typing import Any, get_args

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from memsub.migrator import Migrator
from memsub.search import EmbeddingType

from helpers import TENANT_A, TENANT_B, expect_error, set_context, write
from layer_helpers import graph_order, vec

SPACES = list(get_args(EmbeddingType))


def _fill(conn: Any, tenant: Any, packets: int) -> None:
    set_context(conn, tenant)
    for i in range(packets):
        embeddings = [{"embedding_type": space, "vector": json.loads(vec(1.0, 0.1 * i, 0.1 * k))}
                      for k, space in enumerate(SPACES)]
        write(conn, {"packet_type": "memory_write", "payload": {"i": i}, "memory": {"embeddings": embeddings}})
    conn.commit()  # a transaction acts for one tenant


def _index_names(plan: Any) -> set[str]:
    names = {plan["Index Name"]} if "Index Name" in plan else set()
    for child in plan.get("Plans", []):
        names |= _index_names(child)
    return names


@pytest.mark.parametrize("space", SPACES)
def test_a_vector_query_uses_its_types_partial_hnsw_index(db, space):
    with db.connect("app") as conn:
        _fill(conn, TENANT_A, 30)
        _fill(conn, TENANT_B, 10)
        conn.commit()
    with db.connect() as conn:
        conn.execute("analyze memsub.memory_embeddings")
        conn.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        # At test size (150 small-table rows) a scan plus a top-N sort is honestly cheaper than an HNSW walk, so
        # the planner is asked to price only plans that return rows already in distance order (no seq scan, no
        # sort). The question here is whether, as the application role under row-level security, the query can
        # use its own type's partial index and no other. The unforced choice at scale is not covered here.
        conn.execute("set local enable_seqscan = off")
        conn.execute("set local enable_sort = off")
        plan = conn.execute(
            "explain (format json) select embedding_id from memsub.memory_embeddings "  # noqa: S608
            f"where embedding_type = '{space}' order by {graph_order(conn)} limit 5",
            [vec(1.0, 0.3)]).fetchone()
        assert plan is not None
        # memory_embeddings is partitioned by tenant: the type's index is one graph per partition.
        used = _index_names(plan[0][0]["Plan"])
        assert used and all(re.fullmatch(f"idx_embeddings_vector_{space}_p\\d\\d", name) for name in used), used
        # Stating the tenant reads only its partition's graph.
        plan = conn.execute(
            "explain (format json) select embedding_id from memsub.memory_embeddings "  # noqa: S608
            f"where embedding_type = '{space}' and tenant_id = %s order by {graph_order(conn)} limit 5",
            [TENANT_A, vec(1.0, 0.3)]).fetchone()
        assert plan is not None
        partition = conn.execute("select memsub._embedding_partition(%s)", [TENANT_A]).fetchone()
        assert partition is not None
        assert _index_names(plan[0][0]["Plan"]) == {f"idx_embeddings_vector_{space}_p{partition[0]:02d}"}
        # The search function gives the caller's rows of that type, nearest first.
        rows = conn.execute("select packet_id, embedding_type, distance from memsub.semantic_search("
                            "%s::vector, 5, %s)", [vec(1.0, 0.3, 0.1), space]).fetchall()
        assert len(rows) == 5 and {r[1] for r in rows} == {space}
        distances = [r[2] for r in rows]
        assert all(later >= earlier - 1e-6 for earlier, later in pairwise(distances))
        tenants = conn.execute("select distinct tenant_id from memsub.memory_embeddings").fetchall()
        assert tenants == [(TENANT_A,)]
        # Asked for more rows than the tenant holds, the search gives every one of its 30 and none of the other
        # tenant's 10.
        own = {r[0] for r in conn.execute("select packet_id from memsub.packet_store").fetchall()}
        found = [r[0] for r in conn.execute("select packet_id from memsub.semantic_search(%s::vector, 100, %s)",
                                            [vec(1.0, 0.3, 0.1), space]).fetchall()]
        assert len(found) == 30 and set(found) == own


def test_the_walk_finds_vectors_past_half_precision_and_reports_full_distances(db):
    """The graphs index each vector scaled to length 1 in half precision (2.35.0). A vector whose components lie
    past half precision's range (65504) is still indexed and walked to; the distances the walk reports are the
    cosine distances of the vectors as stored, the same as the exact scan's, nearest first."""
    scale = [1.0, 70000.0, 1e-9]  # 70000 overflows half precision; 1e-9 underflows it
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for i in range(40):
            vector = [x * scale[i % 3] for x in json.loads(vec(1.0, 0.05 * i, 0.02 * (i % 7)))]
            write(conn, {"packet_type": "memory_write", "payload": {"i": i},
                         "memory": {"embeddings": [{"embedding_type": "content", "vector": vector}]}})
        conn.commit()
        set_context(conn, TENANT_A)
        past_half = conn.execute("select count(*) from memsub.memory_embeddings "
                                 "where (vector::real[])[1] > 65504").fetchone()
        assert past_half == (13,)  # stored as written, in single precision
        query = vec(1.0, 0.05 * 13, 0.02 * (13 % 7))
        walked = conn.execute(
            "select embedding_id, distance, method from memsub.semantic_search(%s::vector, 10, 'content', "
            "p_mode => 'approximate')", [query]).fetchall()
        exact = conn.execute(
            "select embedding_id, distance from memsub.semantic_search(%s::vector, 10, 'content', p_mode => 'exact')",
            [query]).fetchall()
        full = dict(conn.execute(
            "select embedding_id, vector <=> %s::vector from memsub.memory_embeddings where tenant_id = %s",
            [query, TENANT_A]).fetchall())
    assert {r[2] for r in walked} == {"approximate"} and len(walked) == 10
    # Packet 13 (scaled by 70000) is the query's own direction: found first, at distance 0.
    assert walked[0][0] == exact[0][0] and walked[0][1] < 1e-6
    assert [r[0] for r in walked] == [r[0] for r in exact]
    assert all(distance == full[embedding_id] for embedding_id, distance, _ in walked)
    assert [r[1] for r in walked] == sorted(r[1] for r in walked)


def test_wrong_dimension_and_unknown_type_are_refused(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        expect_error(conn, "22023", "query", "select * from memsub.semantic_search('[1,2,3]'::vector, 5, 'content')")
        set_context(conn, TENANT_A)
        expect_error(conn, "22023", "embedding_type", "select * from memsub.semantic_search(%s::vector, 5, 'colour')",
                     [vec(1.0)])


def test_semantic_memory_search_respects_scope(db):
    user_1, user_2 = TENANT_A, TENANT_B  # any two UUIDs
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, user=user_1)
        conn.execute("select memsub.store_semantic_memory('a', %s::vector, '{\"n\": 1}'::jsonb)", [vec(1.0)])
        conn.execute("select memsub.store_semantic_memory('a', %s::vector, '{\"n\": 2}'::jsonb, 'content', "
                     "'l-private')", [vec(1.0, 0.1)])
        conn.commit()
        set_context(conn, TENANT_A, user=user_2)
        rows = conn.execute("select payload from memsub.search_semantic_memory(%s::vector, 10)", [vec(1.0)]).fetchall()
        assert rows == [({"n": 1},)]


def test_a_384_dimension_installation_needs_no_sql_edits(empty_db):
    Migrator(make_conninfo(empty_db.dsn(), options="-c memsub.vector_dimension=384")).migrate()
    with empty_db.connect() as conn:
        types = {r[0] for r in conn.execute(
            "select format_type(atttypid, atttypmod) from pg_attribute a join pg_class c on c.oid = a.attrelid "
            "where c.relnamespace = 'memsub'::regnamespace and c.relkind = 'r' and a.attname = 'vector'")}
        assert types == {"vector(384)"}
        assert conn.execute("select memsub.vector_dimension()").fetchone() == (384,)
        conn.execute("select memsub.trust_login('memsub_test_app')")  # a fresh installation binds nobody
        conn.commit()
    with empty_db.connect("app") as conn:
        set_context(conn, TENANT_A)
        result = write(conn, {"packet_type": "memory_write", "payload": {}, "memory": {
            "embeddings": [{"embedding_type": "summary", "vector": json.loads(vec(1.0, dimension=384))}]}})
        assert result["written"]["memory_embeddings"] == 1
        rows = conn.execute("select distance from memsub.semantic_search(%s::vector, 3, 'summary')",
                            [vec(1.0, dimension=384)]).fetchall()
        assert len(rows) == 1 and rows[0][0] < 1e-6
        expect_error(conn, "22023", "vector", "select memsub.store_semantic_memory('a', %s::vector)", [vec(1.0)])


COUNT_CALLS = [
    ("k", "select * from memsub.semantic_search(%(v)s::vector, %(n)s)", ()),
    ("k", "select * from memsub.hybrid_search('text', %(v)s::vector, %(n)s)", ()),
    ("k", "select * from memsub.memory_search('text', null, %(n)s)", ()),
    ("k", "select * from memsub.entity_search('text', null, %(n)s)", ()),
    ("limit", "select * from memsub.search_semantic_memory(%(v)s::vector, %(n)s)", ()),
    ("limit", "select * from memsub._keyword_candidates('text', 'content', %(n)s)", ()),
    ("k", "select * from memsub.tune_search(1, %(n)s)", ("platform_admin",)),
]


@pytest.mark.parametrize(("field", "call", "roles"), COUNT_CALLS, ids=[c[1].split("(")[0][21:] for c in COUNT_CALLS])
def test_k_and_limit_are_refused_below_one_and_over_max_k(db, field, call, roles):
    """A count argument under 1 or NULL is 22023, over the max_k limit 54000 (however far over: nothing is computed
    from it before the check); both name the field."""
    login = "platform_admin" if roles else "app"
    with db.connect(login) as conn:
        max_k = conn.execute("select memsub.limit_value('max_k')").fetchone()
        assert max_k is not None
        for value, sqlstate, message in ((0, "22023", f'field "{field}" must be at least 1, not 0'),
                                         (None, "22023", f'field "{field}" must be at least 1, not <NULL>'),
                                         (max_k[0] + 1, "54000", f'field "{field}" is size over the limit'),
                                         (600_000_000, "54000", f'field "{field}" is size over the limit')):
            set_context(conn, TENANT_A, roles=roles)
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(call, {"v": vec(1.0, 0.3), "n": value})
            conn.rollback()
            assert caught.value.sqlstate == sqlstate
            assert caught.value.diag.column_name == field
            assert (caught.value.diag.message_primary or "").startswith(message)
