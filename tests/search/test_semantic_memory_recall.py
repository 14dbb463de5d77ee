"""Recall of memsub.search_semantic_memory (the legacy vector store) for tenants of every size class.

semantic_memory has one HNSW graph for every tenant, and row-level security filters what a walk of it finds.
One 384-d database holds 6,000 memories: tenants with exactly k rows, 1 %, 10 % and 50 % of them, the rest spread
over other tenants. Each tenant's memories are split between two agents: ``clustered`` (vectors drawn around a
few centres, like real embeddings) and ``uniform`` (random directions, no neighbourhood structure: the worst case
of a graph index). A search of one agent at the default settings must return k rows with recall@10 >= 0.95
against the exact scan, as the application role.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import expect_error, graphs_built_after_load, set_context, tenant_recall

K = 10
QUERIES = 12
TOTAL = 6000
CLASSES = [(uuid.UUID(f"5e000000-0000-4000-8000-{n:012d}"), rows)
           for n, rows in ((1, 2 * K), (2, 60), (3, 600), (4, 3000))]
OTHERS = [uuid.UUID(f"5e000000-0000-4000-8000-{n:012d}") for n in range(100, 130)]
AGENTS = ("clustered", "uniform")


def centre_table(conn: Any) -> None:
    """pg_temp.draw(agent, n): a 384-d vector near centre n % 8 of eight for the clustered agent, a random
    direction otherwise; the centres are the same in every session."""
    conn.execute("select setseed(0.42)")
    conn.execute("create temporary table if not exists centres as select centre, i, random_normal() as x"
                 " from generate_series(0, 7) centre, generate_series(1, 384) i")
    conn.execute("""
        create or replace function pg_temp.draw(agent text, n bigint) returns vector language sql volatile as $$
            select array_agg(case when agent = 'clustered' then c.x + 0.35 * random_normal()
                                  else random_normal() end order by c.i)::vector
              from pg_temp.centres c where c.centre = n % 8
        $$""")


@pytest.fixture(scope="module")
def store(server: Any, template_db_384: str) -> Iterator[Any]:
    from conftest import cloned_database

    with cloned_database(server, template_db_384, "memsub_semantic") as database:
        with database.connect() as conn:
            centre_table(conn)
            owners = [tenant for tenant, rows in CLASSES for _ in range(rows)]
            owners += [OTHERS[n % len(OTHERS)] for n in range(TOTAL - len(owners))]
            with graphs_built_after_load(conn, "memsub.semantic_memory"):
                conn.execute(
                    "insert into memsub.semantic_memory (agent_id, vector, tenant_id, payload) "
                    "select a.agent_id, pg_temp.draw(a.agent_id, o.n), o.tenant, jsonb_build_object('n', o.n) "
                    "from unnest(%s::uuid[]) with ordinality o(tenant, n) cross join lateral "
                    "(select case when o.n %% 2 = 0 then 'clustered' else 'uniform' end) a(agent_id)", [owners])
            conn.execute("analyze memsub.semantic_memory")
            conn.commit()
        yield database


def queries(conn: Any, agent: str, salt: int) -> list[str]:
    """New vectors drawn the way the agent's rows were."""
    centre_table(conn)
    conn.execute("select setseed(%s)", [salt / 10000])
    return [r[0] for r in conn.execute(
        "select pg_temp.draw(%s, q.n)::text from generate_series(1, %s) q(n)", [agent, QUERIES])]


def nearest(app: Any, tenant: uuid.UUID, agent: str, vector: str) -> list[tuple[Any, float]]:
    """The agent's exact k nearest memories: (embedding_id, distance), nearest first."""
    with app.transaction():
        set_context(app, tenant)
        app.execute("set local enable_indexscan = off")
        return [(r[0], r[1]) for r in app.execute(
            "select embedding_id, vector <=> %s::vector from memsub.semantic_memory where agent_id = %s"
            " order by vector <=> %s::vector, embedding_id limit %s", [vector, agent, vector, K])]


def truth(app: Any, tenant: uuid.UUID, agent: str, vector: str) -> list[Any]:
    return [r[0] for r in nearest(app, tenant, agent, vector)]


@pytest.mark.parametrize("agent", AGENTS)
def test_every_tenant_size_class_gets_k_rows_at_recall_095(store, agent):
    report = []
    with store.connect() as su, store.connect("app", autocommit=True) as app:
        for tenant, rows in CLASSES:
            recall, methods = tenant_recall(
                app, su, tenant, queries(su, agent, rows),
                lambda vector, tenant=tenant: [r[1] for r in nearest(app, tenant, agent, vector)],
                "select distance, method from memsub.search_semantic_memory(%s::vector, %s, %s)",
                lambda vector: [vector, K, agent], K, f"{rows}-row tenant ({agent})")
            report.append(f"{rows} rows: recall {recall:.3f} {sorted(methods)}")
            assert recall >= 0.95, f"{agent}: {rows}-row tenant recall@10 {recall:.3f}; " + "; ".join(report)


@pytest.mark.parametrize("mode", ["exact", "approximate"])
def test_a_mode_chooses_the_method_and_still_gets_k_rows(store, mode):
    tenant = CLASSES[2][0]
    with store.connect() as su, store.connect("app", autocommit=True) as app:
        vector = queries(su, "clustered", 7)[0]
        expected = truth(app, tenant, "clustered", vector)
        with app.transaction():
            set_context(app, tenant)
            got = app.execute("select embedding_id, method from memsub.search_semantic_memory("
                              "%s::vector, %s, 'clustered', %s)", [vector, K, mode]).fetchall()
    assert len(got) == K
    assert {r[1] for r in got} == {mode}
    if mode == "exact":
        assert [r[0] for r in got] == expected


def test_an_unknown_mode_is_refused_naming_the_field(store):
    with store.connect("app") as app:
        set_context(app, CLASSES[0][0])
        expect_error(app, "22023", "mode", "select * from memsub.search_semantic_memory("
                     "array_fill(1, array[384])::vector, 10, null, 'fastest')")


def test_auto_walks_the_graph_past_the_exact_bound(db384):
    """In a table of more than 10,000 rows, a tenant holding more than that bound is walked: the graph is read,
    and on clustered vectors the walk finds the nearest rows. A tenant within the bound is answered by the scan
    of its rows that measured it."""
    tenant, small = CLASSES[3][0], CLASSES[1][0]
    with db384.connect() as conn:
        centre_table(conn)
        with graphs_built_after_load(conn, "memsub.semantic_memory"):
            conn.execute("insert into memsub.semantic_memory (agent_id, vector, tenant_id) "
                         "select 'clustered', pg_temp.draw('clustered', g), case when g <= 60 then %s else %s end"
                         " from generate_series(1, 10061) g", [small, tenant])
        conn.execute("analyze memsub.semantic_memory")
        conn.commit()
        vector = queries(conn, "clustered", 3)[0]
    with db384.connect("app", autocommit=True) as app:
        expected = truth(app, small, "clustered", vector)
        with app.transaction():
            set_context(app, small)
            got = app.execute("select embedding_id, method from memsub.search_semantic_memory(%s::vector)",
                              [vector]).fetchall()
    assert got == [(e, "exact") for e in expected]
    walks = "select pg_stat_get_xact_numscans('memsub.idx_semantic_memory_vector'::regclass)"
    with db384.connect("app", autocommit=True) as app:
        expected = truth(app, tenant, "clustered", vector)
        with app.transaction():
            set_context(app, tenant)
            before = app.execute(walks).fetchone()[0]
            got = app.execute("select embedding_id, method from memsub.search_semantic_memory(%s::vector)",
                              [vector]).fetchall()
            after = app.execute(walks).fetchone()[0]
    assert {r[1] for r in got} == {"approximate"}
    assert after > before
    assert len(set(expected) & {r[0] for r in got}) >= 9
