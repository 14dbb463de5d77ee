"""Recall of memsub.semantic_search at its default settings, for every tenant size class, on clustered and on
uniform random vectors.

One database holds 10,000 packets of 384-d vectors in two spaces: ``content`` is clustered (like real
embeddings), ``context`` is uniform random directions (no neighbourhood structure, the worst case of any graph
index). Tenants hold 0.1 % (exactly k rows), 0.5 %, 2 %, 10 %, 30 % and 57.4 % of each space. After the maintenance
job's tune_search task has measured the tenants, every class must reach recall@10 >= 0.95 against the exact scan
and always get k rows, as the application role with no option set. The graphs are built with ef_construction
128 (see the fixture).

memory_embeddings is partitioned by tenant (16 hash partitions of tenant_id, one graph per partition): the
tenant ids are chosen so that the 57.4 %, 30 %, 0.5 % and 0.1 % tenants share one partition (their walks are
filtered in a graph they share) while the 2 % and 10 % tenants have one each (a graph of their own).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import set_context, tenant_recall
from retrieval_data import BIG, Spec, build, fresh_queries

K = 10
QUERIES = 30
CLASSES = (
    (uuid.UUID("c0000000-0000-4000-8000-000000001014"), 0.001),  # in BIG's partition
    (uuid.UUID("c0000000-0000-4000-8000-000000005003"), 0.005),  # in BIG's partition
    (uuid.UUID("c0000000-0000-4000-8000-000000000020"), 0.02),
    (uuid.UUID("c0000000-0000-4000-8000-000000000100"), 0.10),
    (uuid.UUID("c0000000-0000-4000-8000-000000300015"), 0.30),  # in BIG's partition
)
SHARED = {CLASSES[0][0], CLASSES[1][0], CLASSES[4][0], BIG}
"""The tenants of BIG's partition of memory_embeddings."""
TENANTS = [*CLASSES, (BIG, 1 - sum(share for _, share in CLASSES))]
SPEC = Spec(packets=10000, types=("content", "context"), classes=CLASSES, uniform_types=("context",))


@pytest.fixture(scope="module")
def tuned(server: Any, template_db_384: str) -> Iterator[Any]:
    from conftest import cloned_database

    with cloned_database(server, template_db_384, "memsub_recall") as database:
        with database.connect() as conn:
            # ef_construction 128 (m stays 16): with pgvector's default 64, one build in eight of this data set
            # left the 57.4 % tenant's clustered recall at 0.933 after tune_search (docs/retrieval.md).
            conn.execute("select memsub.set_vector_index_build(t, 16, 128) from unnest(memsub.embedding_types()) t")
            build(conn, SPEC)
        with database.connect("platform_admin") as conn:
            set_context(conn, BIG, roles=["platform_admin"])
            conn.execute("select count(*) from memsub.tune_search()")
            conn.commit()
        yield database


def queries(conn: Any, tenant: uuid.UUID, embedding_type: str) -> list[str]:
    """New vectors drawn the way the space's rows were: queries like the tenant's data that are not in it."""
    return fresh_queries(conn, SPEC, QUERIES, embedding_type, seed=(tenant.int % 997) / 1000)


def truth(app: Any, tenant: uuid.UUID, vector: str, embedding_type: str) -> list[float]:
    """The distances of the tenant's exact k nearest rows."""
    with app.transaction():
        set_context(app, tenant)
        app.execute("set local enable_indexscan = off")
        return [r[0] for r in app.execute(
            "select vector <=> %s::vector from memsub.memory_embeddings where embedding_type = %s"
            " order by vector <=> %s::vector, embedding_id limit %s",
            [vector, embedding_type, vector, K]).fetchall()]


@pytest.mark.parametrize("embedding_type", ["content", "context"], ids=["clustered", "uniform"])
def test_every_tenant_size_class_reaches_recall_095_with_k_rows(tuned, embedding_type):
    report = []
    with tuned.connect() as su, tuned.connect("app", autocommit=True) as app:
        for tenant, share in TENANTS:
            recall, methods = tenant_recall(
                app, su, tenant, queries(su, tenant, embedding_type),
                lambda vector, tenant=tenant: truth(app, tenant, vector, embedding_type),
                "select distance, method from memsub.semantic_search(%s::vector, %s, %s)",
                lambda vector: [vector, K, embedding_type], K, f"{share:.1%} tenant ({embedding_type})")
            report.append(f"{share:.1%}: recall {recall:.3f} {sorted(methods)}")
            assert recall >= 0.95, f"{embedding_type}: {share:.1%} tenant recall@10 {recall:.3f}; " + "; ".join(report)


def test_tune_search_records_every_tenant_and_its_choice(tuned):
    with tuned.connect() as su:
        rows = su.execute("select tenant_id, embedding_type, row_count, type_rows, ef_search, recall"
                          " from memsub.search_stats").fetchall()
    assert len(rows) == 2 * len(TENANTS)
    # type_rows: the rows of the type in the tenant's partition (the graph its walk reads).
    shared = round(SPEC.packets * sum(share for tenant, share in TENANTS if tenant in SHARED))
    expected = {tenant: shared if tenant in SHARED else round(SPEC.packets * share) for tenant, share in TENANTS}
    assert {(r[0], r[3]) for r in rows} == set(expected.items())
    with tuned.connect() as su:
        partitions = {su.execute("select memsub._embedding_partition(%s)", [t]).fetchone()[0] for t in SHARED}
    assert len(partitions) == 1
    measured = [r for r in rows if r[5] is not None]
    assert measured and all(r[4] is not None and 0 <= r[5] <= 1 for r in measured)


def test_search_stats_are_per_tenant(tuned):
    with tuned.connect("app") as app:
        set_context(app, CLASSES[0][0])
        seen = app.execute("select distinct tenant_id from memsub.search_stats").fetchall()
        assert seen == [(CLASSES[0][0],)]


def test_tune_search_needs_a_platform_admin(tuned):
    import psycopg

    with tuned.connect("tenant_admin") as conn:
        set_context(conn, BIG, roles=["tenant_admin"])
        with pytest.raises(psycopg.Error) as caught:
            conn.execute("select * from memsub.tune_search()")
        assert caught.value.sqlstate == "42501"


def test_a_tenant_no_affordable_ef_search_serves_is_scanned_exactly(tuned):
    """The 57.4 % tenant on uniform vectors shares its partition's graph with the 30 % tenant. tune_search raises
    ef_search as far as the walk stays cheaper than the exact scan; the searches then walk at that ef_search when
    the lower bound of its measured recall reached 0.95 and scan exactly when it did not. Whether this graph gets
    there at an affordable ef_search depends on its random build (a mean of 0.955 and 0.970 at 385 were measured),
    so the choice is checked against what was measured, and then against a measurement below and above the
    goal."""
    with tuned.connect() as su:
        row = su.execute("select ef_search, recall, recall_bound from memsub.search_stats"
                         " where tenant_id = %s and embedding_type = 'context'", [BIG]).fetchone()
    assert row is not None and row[0] is not None and row[1] is not None and row[2] is not None, row
    ef_search = row[0]

    def strategy() -> Any:
        with tuned.connect("app") as app:
            set_context(app, BIG)
            return app.execute("select method, ef_search, recall from memsub._search_strategy(%s, 'context', %s)",
                               [BIG, K]).fetchone()

    method, walked_at, recall = strategy()
    assert (method, recall) == ("exact" if row[2] < 0.95 else "approximate", row[1])
    assert method == "exact" or walked_at == ef_search
    with tuned.connect("platform_admin") as admin:
        for recall, bound, method in ((0.97, 0.94, "exact"), (0.97, 0.96, "approximate")):
            with admin.transaction():
                set_context(admin, BIG, roles=["platform_admin"])
                admin.execute("update memsub.search_stats set recall = %s, recall_bound = %s"
                              " where tenant_id = %s and embedding_type = 'context'", [recall, bound, BIG])
            chosen = strategy()
            assert (chosen[0], chosen[2]) == (method, recall)
            assert method == "exact" or chosen[1] == ef_search
