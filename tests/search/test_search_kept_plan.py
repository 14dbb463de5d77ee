"""semantic_search keeps the plan of its walk and of a small tenant's exact scan for the session
(memsub._nearest_candidates).

Planning the candidate statement costs about 1 ms, as much as the exact scan of a small tenant; from the second
run of a statement in a session, a prepared statement named ``memsub_search_<md5 of its text>`` runs one generic
plan. These tests hold what that must not change: the same rows as a statement planned for its own values, a
walk that still walks the graph, filter values read back exactly whatever the session's settings, a plan
deallocated under it prepared again, and a statement someone else prepared under that name never run.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg import sql

from helpers import set_context, write
from retrieval_data import BIG, RETRIEVAL_SPEC, SMALL, Spec, build, query_vector

K = 10
KEPT = "select name, generic_plans, custom_plans from pg_prepared_statements where name like 'memsub\\_search\\_%'"


def search(conn: Any, tenant: uuid.UUID, vector: str, k: int = K, **options: Any) -> list[tuple[Any, ...]]:
    named = "".join(f", p_{name} => %s" for name in options)
    with conn.transaction():
        set_context(conn, tenant)
        statement = f"select packet_id, embedding_id, distance, method from memsub.semantic_search(%s::vector, %s, 'content'{named})"  # noqa: S608, E501 - fixed argument names
        return conn.execute(statement, [vector, k, *options.values()]).fetchall()


def test_the_kept_plan_returns_what_a_plan_for_each_call_returns(retrieval_db):
    with retrieval_db.connect() as su, retrieval_db.connect("app", autocommit=True) as kept:
        vectors = [query_vector(su, RETRIEVAL_SPEC, number) for number in range(6)]
        got = [search(kept, SMALL, vector) for vector in vectors]
        statements = kept.execute(KEPT).fetchall()
        # One statement text: the first run planned for its values, the five others on one generic plan.
        assert [(generic, custom) for _, generic, custom in statements] == [(5, 0)], statements
        for vector, rows in zip(vectors, got, strict=True):
            with retrieval_db.connect("app", autocommit=True) as fresh:  # a new session: planned for its values
                assert search(fresh, SMALL, vector) == rows
                assert fresh.execute(KEPT).fetchall() == []
            assert len(rows) == K and {row[3] for row in rows} == {"exact"}


def test_the_kept_plan_of_a_walk_walks_the_graph(db384):
    """Made for the average tenant (here 300 tenants of about 5 rows), a generic plan would sort that tenant's
    rows instead of walking. The kept plan of the big tenant's walk must read its partition's HNSW index and
    return what a plan for its own values returns."""
    spec = Spec(packets=3000, types=("content",), big_share=0.5, other_tenants=300)
    with db384.connect(autocommit=True) as su, db384.connect("app", autocommit=True) as kept:
        build(su, spec)
        row = su.execute("select format('memsub.idx_embeddings_vector_content_p%%s', lpad(n::text, 2, '0'))"
                         " from memsub._embedding_partition(%s) n", [BIG]).fetchone()
        assert row is not None
        graph = str(row[0])
        vectors = [query_vector(su, spec, number) for number in range(4)]
        for number, vector in enumerate(vectors):
            with kept.transaction():
                set_context(kept, BIG)
                rows = kept.execute("select packet_id, embedding_id, distance, method from memsub.semantic_search("
                                    "%s::vector, %s, 'content', p_mode => 'approximate')", [vector, K]).fetchall()
                walks = kept.execute("select pg_stat_get_xact_numscans(%s::regclass)", [graph]).fetchone()
            assert len(rows) == K and {row[3] for row in rows} == {"approximate"}
            assert walks is not None and walks[0] >= 1, f"search {number} did not walk {graph}"
            with db384.connect("app", autocommit=True) as fresh:
                assert search(fresh, BIG, vector, mode="approximate") == rows
        statements = kept.execute(KEPT).fetchall()
        assert [(generic, custom) for _, generic, custom in statements] == [(3, 0)], statements


def test_a_deallocated_plan_is_prepared_again(retrieval_db):
    with retrieval_db.connect() as su, retrieval_db.connect("app", autocommit=True) as app:
        vector = query_vector(su, RETRIEVAL_SPEC, 7)
        first = search(app, SMALL, vector)
        assert search(app, SMALL, vector) == first
        for reset in ("deallocate all", "discard all"):
            app.execute(reset)
            assert app.execute(KEPT).fetchall() == []
            assert search(app, SMALL, vector) == first
            assert search(app, SMALL, vector) == first
        assert len(app.execute(KEPT).fetchall()) == 1


def unit_vector(rng: random.Random) -> list[float]:
    values = [rng.gauss(0, 1) for _ in range(384)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def test_filter_values_reach_the_kept_plan_exactly_whatever_the_session_settings(db384):
    """Boundary values with every digit: timestamps to the microsecond and importances that differ in the ninth
    digit, under a DateStyle, time zone and extra_float_digits that print them otherwise (an importance printed
    with the session's one digit would let every packet through)."""
    tenant = uuid.uuid4()
    rng = random.Random(3)
    start = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    moments = [start + timedelta(seconds=i, microseconds=i) for i in range(30)]
    importance = [0.3 + i * 1e-9 for i in range(30)]  # all 0.3 to fewer than ten digits
    with db384.connect("app", autocommit=True) as app:
        ids = []
        for i in range(30):
            with app.transaction():
                set_context(app, tenant)
                row = write(app, {
                    "packet_type": "memory_write", "timestamp": moments[i].isoformat(),
                    "metadata": {"schema_version": "1.1.0", "agent": "test_agent", "domain": "search"},
                    "payload": {"text": f"note {i}"}, "tags": ["odd"] if i % 2 else ["even"],
                    "importance_score": importance[i],
                    "memory": {"embeddings": [{"embedding_type": "content", "vector": unit_vector(rng),
                                               "chunk_text": f"note {i}"}]}})
            ids.append(row["packet_id"])
        app.execute("set datestyle = 'SQL, DMY'")
        app.execute("set timezone = 'Asia/Kathmandu'")
        app.execute("set extra_float_digits = -15")
        # since and min_importance are inclusive, until exclusive: odd packets 11 ... 23.
        expected = {ids[i] for i in range(11, 25, 2)}
        query = "[" + ",".join(str(v) for v in unit_vector(rng)) + "]"
        for _ in range(3):  # planned for its values, then prepared, then the kept plan again
            rows = search(app, tenant, query, tags=["odd"], since=moments[5], until=moments[25],
                          min_importance=importance[10])
            assert {row[0] for row in rows} == expected
        assert [(generic, custom) for _, generic, custom in app.execute(KEPT).fetchall()] == [(2, 0)]


def test_a_statement_planted_under_the_name_never_runs(db384):
    """Prepared statements belong to the session: a client before this one on a pooled connection, or the login's
    own code, can prepare a statement of its own under the kept plan's name. Whoever then searches on that
    session, in another tenant's context or inside a SECURITY DEFINER function of another owner, must get the
    search, not the planted statement: the spy table, which records every run of it, stays empty."""
    tenant, other = uuid.uuid4(), uuid.uuid4()
    owner = f"memsub_test_owner_{uuid.uuid4().hex[:8]}"
    rng = random.Random(5)
    with db384.connect(autocommit=True) as su:
        su.execute(sql.SQL("create role {} nologin in role memsub_app").format(sql.Identifier(owner)))
        try:
            su.execute("create table public.spy (acting_role text, tenant text)")
            su.execute("grant select, insert on public.spy to public")
            su.execute("create function public.spy() returns memsub.retrieval_candidate[] language sql as $$ "
                       "insert into public.spy values (current_user, current_setting('memsub.tenant_id', true)) "
                       "returning null::memsub.retrieval_candidate[] $$")
            su.execute("grant execute on function public.spy() to public")
            su.execute("create function public.search_as_owner(p_query vector) returns setof uuid "
                       "language sql security definer set search_path = pg_catalog, public "
                       "as $$ select embedding_id from memsub.semantic_search(p_query, 10, 'content') $$")
            su.execute(sql.SQL("alter function public.search_as_owner(vector) owner to {}").format(
                sql.Identifier(owner)))
            su.execute("grant execute on function public.search_as_owner(vector) to public")
            with db384.connect("app", autocommit=True) as app:
                for writer in (tenant, other):
                    with app.transaction():
                        set_context(app, writer)
                        for i in range(12):
                            write(app, {"packet_type": "memory_write", "timestamp": "2026-03-01T09:30:00Z",
                                        "metadata": {"schema_version": "1.1.0", "agent": "test_agent",
                                                     "domain": "search"},
                                        "payload": {"text": f"note {i}"},
                                        "memory": {"embeddings": [{"embedding_type": "content",
                                                                   "vector": unit_vector(rng)}]}})
                query = "[" + ",".join(str(v) for v in unit_vector(rng)) + "]"
                genuine = {who: [row[1] for row in search(app, who, query)] for who in (tenant, other)}
                assert [row[1] for row in search(app, tenant, query)] == genuine[tenant]
                [(name, _, _)] = app.execute(KEPT).fetchall()

                def plant() -> None:
                    app.execute(sql.SQL("deallocate {}").format(sql.Identifier(name)))
                    app.execute(sql.SQL("prepare {}(vector, uuid, text[], text, timestamptz, timestamptz, "
                                        "double precision, uuid) as select public.spy()").format(
                                            sql.Identifier(name)))

                plant()
                assert [row[1] for row in search(app, other, query)] == genuine[other]
                plant()
                assert [row[1] for row in search(app, tenant, query)] == genuine[tenant]
                plant()
                with app.transaction():
                    set_context(app, tenant)
                    through_owner = [row[0] for row in app.execute("select * from public.search_as_owner(%s)",
                                                                   [query]).fetchall()]
                assert through_owner == genuine[tenant]
                assert app.execute("select * from public.spy").fetchall() == []
                statement = app.execute("select statement from pg_prepared_statements where name = %s",
                                        [name]).fetchone()
                assert statement is not None and "public.spy" not in str(statement[0])
        finally:
            su.execute("drop function if exists public.search_as_owner(vector)")
            su.execute("drop table if exists public.spy")
            su.execute(sql.SQL("drop role if exists {}").format(sql.Identifier(owner)))


def test_a_first_search_in_a_session_keeps_nothing(retrieval_db):
    """A connection that searches once (a script, a connection per request) pays no generic planning."""
    with retrieval_db.connect() as su, retrieval_db.connect("app", autocommit=True) as app:
        search(app, SMALL, query_vector(su, RETRIEVAL_SPEC, 3))
        assert app.execute(KEPT).fetchall() == []
        seen = app.execute("select current_setting('memsub.search_plans_seen', true)").fetchone()
        assert seen is not None and str(seen[0]).startswith("memsub_search_")


def test_a_session_keeps_a_bounded_number_of_plans(db384):
    """Each kind of search run twice in a session (embedding type, k, filters, walk or exact scan) keeps a plan
    of all the partitions and their indexes in the session's memory. A caller that varies k or its filters must
    not grow that without end: past the limit max_kept_search_plans, a new kind is planned for its values on
    every call, with the same rows."""
    bound = 4
    spec = Spec(packets=400, types=("content",))
    with db384.connect(autocommit=True) as su, db384.connect("app", autocommit=True) as app:
        build(su, spec)
        vector = query_vector(su, spec, 11)
        su.execute("insert into memsub.limits (name, value) values ('max_kept_search_plans', %s)", [bound])
        for k in range(1, bound + 4):
            for _ in range(2):
                assert len(search(app, BIG, vector, k)) == k
        assert len(app.execute(KEPT).fetchall()) == bound
        seen = app.execute("select current_setting('memsub.search_plans_seen', true)").fetchone()
        assert seen is not None and len(str(seen[0]).split()) == bound
        beyond = search(app, BIG, vector, bound + 3)  # a kind past the bound, run a third time
        with db384.connect("app", autocommit=True) as fresh:
            assert search(fresh, BIG, vector, bound + 3) == beyond
        assert len(app.execute(KEPT).fetchall()) == bound

