"""Hybrid fusion, graph traversal, importance learning, reflection retrieval, and row-level security of every
retrieval function (each check fails when a policy is dropped)."""

from __future__ import annotations

import json
import math
import uuid
from typing import Any

import pytest

from helpers import TENANT_A, TENANT_B, as_tenant_admin, expect_error, set_context, table_state, write
from layer_helpers import call
from retrieval_data import BIG

DIM = 384
ORG_1 = uuid.UUID("00000000-0000-0000-0001-000000000001")
ORG_2 = uuid.UUID("00000000-0000-0000-0001-000000000002")


def vec(*head: float) -> str:
    values = list(head) + [0.001] * (DIM - len(head))
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def packet_with_text(conn: Any, text: str, vector: str, importance: float = 0.5,
                     scope: str = "shared") -> dict[str, Any]:
    packet = write(conn, {"packet_type": "note", "payload": {"text": text}, "importance_score": importance,
                          "scope": scope})
    embedding = call(conn, "select * from memsub.store_embedding(%s, 'content', %s::vector, 0, %s)",
                     [packet["packet_id"], vector, text])
    return {"packet_id": packet["packet_id"], "embedding_id": embedding["embedding_id"]}


def test_hybrid_ranks_keyword_meaning_and_both_and_matches_hand_computed_rrf(db384):
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A)
        both = packet_with_text(conn, "postgres vacuum tuning guide", vec(1.0, 0.0))
        meaning = packet_with_text(conn, "autovacuum thresholds explained", vec(0.95, 0.1))
        keyword = packet_with_text(conn, "vacuum cleaner reviews", vec(0.0, 1.0))
        unrelated = packet_with_text(conn, "cooking pasta", vec(0.0, 0.0, 1.0))
        rows = conn.cursor(row_factory=__import__("psycopg").rows.dict_row).execute(
            "select * from memsub.hybrid_search('vacuum', %s::vector, 4)", [vec(1.0, 0.02)]).fetchall()
        order = [r["embedding_id"] for r in rows]
        assert order[0] == both["embedding_id"]
        assert set(order[1:3]) == {meaning["embedding_id"], keyword["embedding_id"]}
        assert order[3] == unrelated["embedding_id"]
        for row in rows:
            expected = ((1.0 / (60 + row["vector_rank"]) if row["vector_rank"] else 0.0)
                        + (1.0 / (60 + row["text_rank"]) if row["text_rank"] else 0.0))
            assert math.isclose(row["score"], expected, rel_tol=1e-12)
        # Hand-computed: "both" is nearest (vector rank 1) and one of two equal keyword matches (text rank 1 or 2,
        # ties broken by id): 1/61 + 1/61 or 1/61 + 1/62; the unrelated row only has its vector rank 4: 1/64.
        assert rows[0]["vector_rank"] == 1
        assert math.isclose(rows[0]["score"], 1 / 61 + 1 / (60 + rows[0]["text_rank"]), rel_tol=1e-12)
        assert rows[3]["text_rank"] is None and math.isclose(rows[3]["score"], 1 / 64, rel_tol=1e-12)
        # Weights and the constant are parameters.
        weighted = conn.execute("select score, vector_rank, text_rank "
                                "from memsub.hybrid_search('vacuum', %s::vector, 1, "
                                "p_vector_weight => 0.5, p_text_weight => 2.0, p_rrf_k => 10)",
                                [vec(1.0, 0.02)]).fetchone()
        assert weighted is not None
        assert math.isclose(weighted[0], 0.5 / (10 + weighted[1]) + 2.0 / (10 + weighted[2]), rel_tol=1e-12)
        text_only = conn.execute("select embedding_id from memsub.hybrid_search('cleaner', null, 5)").fetchall()
        assert [r[0] for r in text_only] == [keyword["embedding_id"]]


def test_keyword_leg_uses_the_gin_index_only_inside_its_function(retrieval_db):
    """As the application role @@ is a filter evaluated after the policies; in the function's role it is an
    index condition of the (tenant_id, search_tsv) GIN index."""
    query = ("explain select 1 from memsub.memory_embeddings e where e.tenant_id = %s "
             "and e.chunk_text is not null and e.search_tsv @@ to_tsquery('english', 'cluster3')")
    with retrieval_db.connect("app") as conn:
        set_context(conn, BIG)
        plan = "\n".join(r[0] for r in conn.execute(query, [BIG]))
        assert "Filter: " in plan and "search_tsv @@" in plan.split("Filter: ")[1]
        assert not any("Index Cond" in line and "search_tsv" in line for line in plan.splitlines())
    with retrieval_db.connect() as conn:
        conn.execute("set local role memsub_retrieval_owner")
        plan = "\n".join(r[0] for r in conn.execute(query, [BIG]))
        assert any("Index Cond" in line and "search_tsv @@" in line for line in plan.splitlines())
        assert "idx_memory_embeddings_search" in plan


def edges(conn: Any, triples: list[tuple[str, str, str, float]]) -> None:
    for source, kind, target, confidence in triples:
        conn.execute("select memsub.upsert_relationship(%s, %s, %s, %s)", [source, kind, target, confidence])


def test_traversal_cycles_fan_out_and_thresholds(db384):
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A)
        edges(conn, [("L9", "uses", "Neo4j", 0.9), ("L9", "develops", "Python", 0.8),
                     ("Python", "requires", "FastAPI", 0.5),
                     ("FastAPI", "implements", "REST_API", 0.9), ("REST_API", "calls", "L9", 0.9),
                     ("Neo4j", "stores", "graph_data", 0.3)])
        for n in range(20):
            edges(conn, [("Python", "has", f"lib{n}", 0.7)])
        rows = conn.execute(
            "select depth, entity, path, path_confidence from memsub.traverse_graph('L9', 5)").fetchall()
        paths = {tuple(r[2]): r for r in rows}
        assert all(len(set(path)) == len(path) for path in paths)  # the cycle back to L9 is never followed
        assert ("L9", "Python", "FastAPI", "REST_API") in paths
        assert not any(path[-1] == "L9" for path in paths)
        assert math.isclose(paths[("L9", "Python", "FastAPI", "REST_API")][3], 0.8 * 0.5 * 0.9)
        assert sum(1 for p in paths if len(p) == 3 and p[1] == "Python") == 21  # fan-out
        assert max(r[0] for r in rows) == 3
        limited = conn.execute("select max(depth) from memsub.traverse_graph('L9', 1)").fetchone()
        assert limited == (1,)
        strong = {r[0] for r in conn.execute(
            "select entity from memsub.traverse_graph('L9', 5, p_min_confidence => 0.6)")}
        assert "FastAPI" not in strong and "graph_data" not in strong and "lib3" in strong
        confident = {r[0] for r in conn.execute(
            "select entity from memsub.traverse_graph('L9', 5, p_min_path_confidence => 0.5)")}
        assert confident == {"Neo4j", "Python"} | {f"lib{n}" for n in range(20)}
        typed = {r[0] for r in conn.execute(
            "select entity from memsub.traverse_graph('L9', 5, array['develops', 'requires'])")}
        assert typed == {"Python", "FastAPI"}
        back = {r[0] for r in conn.execute(
            "select entity from memsub.traverse_graph('L9', 1, p_direction => 'incoming')")}
        assert back == {"REST_API"}
        call(conn, "select * from memsub.assert_fact('L9', 'written in', %s::jsonb, 0.9)", [json.dumps("SQL")])
        around = conn.execute("select kind, direction, other_entity from memsub.entity_neighbourhood('l9')").fetchall()
        assert ("fact", "subject", None) in around
        around = conn.execute("select kind, direction, other_entity from memsub.entity_neighbourhood('L9')").fetchall()
        assert {("relationship", "outgoing", "Neo4j"), ("relationship", "incoming", "REST_API")} <= set(around)


def importance(conn: Any, packet_id: Any) -> float:
    row = conn.execute("select importance_score from memsub.packet_store where packet_id = %s", [packet_id]).fetchone()
    assert row is not None
    return float(row[0])


def learn(database: Any, arguments: str = "") -> dict[str, Any]:
    """One learning run of TENANT_A as the deployment runs it: a tenant_admin context (``memsub maintain`` uses a
    platform_admin one). The application's own login may not run it."""
    with database.connect("tenant_admin") as admin:
        set_context(admin, TENANT_A, roles=["tenant_admin"])
        run = call(admin, f"select * from memsub.learn_importance({arguments})")
        admin.commit()
    return run


def test_importance_feedback_frequency_decay_and_bounds(db384):
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A)
        useful = packet_with_text(conn, "useful", vec(1.0))
        useless = packet_with_text(conn, "useless", vec(0.0, 1.0))
        idle = packet_with_text(conn, "idle", vec(0.0, 0.0, 1.0), importance=0.8)
        top = packet_with_text(conn, "top", vec(0.5, 0.5), importance=1.0)
        rows = conn.execute("select embedding_id, access_id from memsub.semantic_search(%s::vector, 4, "
                            "p_record_access => true, p_query_text => 'q')", [vec(0.5, 0.5)]).fetchall()
        access = {r[0]: r[1] for r in rows}
        assert all(access.values())
        for _ in range(3):
            conn.execute("select memsub.record_feedback(%s, true, 'helped')", [access[useful["embedding_id"]]])
        conn.execute("select memsub.record_feedback(%s, false, 'noise')", [access[useless["embedding_id"]]])
        conn.execute("select memsub.record_feedback(%s, true)", [access[top["embedding_id"]]])
        conn.commit()
        set_context(conn, TENANT_A)
        run = learn(db384)
        assert run["accesses_counted"] == 4 and run["feedback_learned"] == 3
        assert importance(conn, useful["packet_id"]) > 0.5
        assert importance(conn, useless["packet_id"]) < 0.5
        assert importance(conn, top["packet_id"]) == 1.0
        # Learned once: a second run changes nothing for them.
        before = importance(conn, useful["packet_id"])
        again = learn(db384)
        assert again["accesses_counted"] == 0 and again["feedback_learned"] == 0
        assert importance(conn, useful["packet_id"]) == before
        conn.commit()
    # Decay: the idle packet was written long ago and the previous run was long ago (set as the superuser).
    with db384.connect() as su:
        su.execute("alter table memsub.packet_store disable trigger packet_store_immutable")
        su.execute("update memsub.packet_store set \"timestamp\" = now() - interval '90 days', last_accessed = null "
                   "where packet_id = %s", [idle["packet_id"]])
        su.execute("alter table memsub.packet_store enable trigger packet_store_immutable")
        su.execute("update memsub.importance_learning_runs set finished_at = finished_at - interval '30 days'")
        su.commit()
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A)
        idle_before = importance(conn, idle["packet_id"])
        assert idle_before > 0.8  # its one access counted: 0.8 + 0.2 * 0.02
        run = learn(db384)
        assert 0.49 < run["decay_factor"] < 0.51 and run["targets_decayed"] == 1
        assert math.isclose(importance(conn, idle["packet_id"]), 0.05 + (idle_before - 0.05) * run["decay_factor"],
                            rel_tol=1e-9)
        assert importance(conn, useful["packet_id"]) == before  # recently accessed: no decay
        bounds = conn.execute("select min(importance_score), max(importance_score) from memsub.packet_store").fetchone()
        assert bounds is not None and 0.0 <= bounds[0] and bounds[1] <= 1.0
    # Thousands of half-lives since the previous run: the factor is 0 and the idle packet falls to the floor.
    # power(0.5, x) raised "value out of range: underflow" past about 1,074 halvings, failing the run.
    with db384.connect() as su:
        su.execute("update memsub.importance_learning_runs set finished_at = finished_at - interval '30 days'")
        su.commit()
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A)
        run = learn(db384, "p_half_life => interval '1 minute'")
        assert run["decay_factor"] == 0.0 and run["targets_decayed"] == 1
        assert math.isclose(importance(conn, idle["packet_id"]), 0.05, rel_tol=1e-9)
    # With a floor of 0 an importance can become tiny, and a tiny importance times a tiny factor underflowed
    # (PostgreSQL raises on a product that rounds to 0), failing every later run of the tenant.
    with db384.connect() as su:
        su.execute("alter table memsub.packet_store disable trigger packet_store_immutable")
        su.execute("update memsub.packet_store set importance_score = 1e-300 where packet_id = %s", [idle["packet_id"]])
        su.execute("alter table memsub.packet_store enable trigger packet_store_immutable")
        su.execute("update memsub.importance_learning_runs set finished_at = finished_at - interval '500 minutes'")
        su.commit()
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A)
        run = learn(db384, "p_half_life => interval '1 minute', p_floor => 0")
        assert 0.0 < run["decay_factor"] < 1e-150
        assert importance(conn, idle["packet_id"]) == 0.0  # what is left of it is below any double's reach
    with db384.connect() as owner:  # the step is internal: only the learning run (its owner) executes it
        extreme = owner.execute("select memsub._importance_step(0.99, 1000, 1000, 0, 0.5, 0.9), "
                                "memsub._importance_step(0.01, 0, 0, 1000, 0.5, 0.9)").fetchone()
        assert extreme is not None and 0.0 <= extreme[1] <= extreme[0] <= 1.0


@pytest.mark.parametrize("idle_after", ["7000 years", "178000000 years"])
def test_an_idle_time_longer_than_the_calendar_decays_nothing(db, idle_after):
    """idle_after is any finite interval: one reaching back past the earliest time PostgreSQL holds (4714 BC) made
    the run fail with 22008 and no field ("timestamp out of range") once a previous run let it decay; no memory
    has been idle that long, so the run decays nothing."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        packet = write(conn, {"packet_type": "note", "payload": {"text": "idle"}, "importance_score": 0.9})
        conn.commit()
    learn(db)
    with db.connect() as su:
        su.execute("update memsub.importance_learning_runs set finished_at = finished_at - interval '1 hour'")
        su.commit()
    run = learn(db, f"p_half_life => interval '1 minute', p_idle_after => interval '{idle_after}'")
    assert 0.0 <= run["decay_factor"] < 1.0 and run["targets_decayed"] == 0
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        assert importance(conn, packet["packet_id"]) == 0.9


def test_feedback_is_learned_again_only_when_it_ends_unlike_what_was_learned(db384):
    """Useful feedback is learned; turned to not useful and back before the next run, it ends as learned, so the
    next run learns nothing (it learned 'useful' a second time); turned to not useful and left so, it is learned
    once more, as not useful."""
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A)
        packet = write(conn, {"packet_type": "note", "payload": {"text": "p"}})["packet_id"]
        access = call(conn, "select * from memsub.record_access('packet', %s)", [packet])["access_id"]
        conn.execute("select memsub.record_feedback(%s, true)", [access])
        runs, importances = [], []
        for flips in ([], [False, True], [False], [True, False], []):
            for useful in flips:
                conn.execute("select memsub.record_feedback(%s, %s)", [access, useful])
            conn.commit()
            set_context(conn, TENANT_A)
            runs.append(learn(db384, "p_idle_after => interval '100 years'")["feedback_learned"])
            importances.append(importance(conn, packet))
            conn.commit()
            set_context(conn, TENANT_A)
    assert runs == [1, 0, 1, 0, 0]
    assert importances[1] == importances[0] and importances[2] < importances[1]
    assert importances[4] == importances[3] == importances[2]


def test_learning_runs_beside_a_temporary_table_of_the_caller(db384):
    """A temporary table of the caller's session does not stand in the learning run's way, whatever its name."""
    with db384.connect("tenant_admin") as conn:
        for name in ("learn_batch", "learn_delta"):
            conn.execute(f"create temporary table {name} (x integer)")
        conn.commit()
        set_context(conn, TENANT_A, roles=["tenant_admin"])
        packet = write(conn, {"packet_type": "note", "payload": {"text": "p"}})["packet_id"]
        conn.execute("select memsub.record_access('packet', %s, p_was_useful => true)", [packet])
        conn.commit()
        set_context(conn, TENANT_A, roles=["tenant_admin"])
        run = call(conn, "select * from memsub.learn_importance()")
        assert (run["accesses_counted"], run["feedback_learned"], run["targets_updated"]) == (1, 1, 1)
        assert importance(conn, packet) > 0.5


def test_only_an_admin_context_learns_importance_for_the_tenant(db):
    """learn_importance runs over the whole tenant, rows the caller cannot read included (it is owned by a
    BYPASSRLS role): an application login of another organization could decay another organization's private
    packets and memories to nothing, and read other organizations' activity in the run's counts. It needs a
    tenant_admin or platform_admin context, as consolidate_memories does; a refused call changes nothing."""
    writer, outsider = uuid.uuid4(), uuid.uuid4()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, writer)
        shared = write(conn, {"packet_type": "note", "payload": {"text": "s"}, "importance_score": 0.9})
        private = write(conn, {"packet_type": "note", "payload": {"text": "p"}, "importance_score": 0.9,
                               "scope": "l-private"})
        conn.execute("select memsub.store_semantic_memory('agent', array_fill(0.1, "
                     "array[memsub.vector_dimension()])::vector, '{}', 'content', 'l-private', 0.9)")
        conn.execute("select memsub.record_access('packet', %s)", [shared["packet_id"]])
        conn.commit()
    # The deployment's scheduled run, an hour ago.
    as_tenant_admin(db, "select memsub.learn_importance()")
    with db.connect() as su:
        su.execute("update memsub.importance_learning_runs set finished_at = finished_at - interval '1 hour'")
        su.commit()
        before = table_state(su)
    attack = ("select * from memsub.learn_importance(p_floor => 0, p_half_life => interval '1 second', "
              "p_idle_after => interval '0')")
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_2, outsider)
        expect_error(conn, "42501", None, attack)  # not executable by memsub_app
        set_context(conn, TENANT_A, ORG_1, writer)  # nor by the writer itself, in a plain context
        expect_error(conn, "42501", None, attack)
    with db.connect("tenant_admin") as conn:  # a tenant_admin login without the tenant_admin context role
        set_context(conn, TENANT_A, ORG_2, outsider)
        refused = expect_error(conn, "42501", "roles", attack)
        assert "needs a tenant_admin or platform_admin context" in str(refused)
    with db.connect() as su:
        assert table_state(su) == before
    # The tenant's administrator learns and decays the whole tenant.
    with db.connect("tenant_admin") as admin:
        set_context(admin, TENANT_A, roles=["tenant_admin"])
        run = call(admin, "select * from memsub.learn_importance(p_idle_after => interval '0')")
        assert run["targets_decayed"] == 3 and 0.0 < run["decay_factor"] < 1.0
        assert importance(admin, private["packet_id"]) < 0.9


def test_the_learning_runs_are_a_tenant_admin_s_and_an_analyst_s_to_read(db):
    """A learning run counts the accesses, feedback and memories of every organization and user of the tenant.
    Readable by any application login, its report showed each organization the activity volume of the others;
    it is for the contexts that may run it (tenant and platform admins) and for analysts, who read every
    tenant by design. An application login is refused whatever its context, its own organization's included."""
    writer = uuid.uuid4()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, ORG_1, writer)
        shared = write(conn, {"packet_type": "note", "payload": {"text": "s"}})
        conn.execute("select memsub.record_access('packet', %s)", [shared["packet_id"]])
        conn.commit()
    with db.connect("tenant_admin") as admin:
        set_context(admin, TENANT_A, roles=["tenant_admin"])
        run = call(admin, "select * from memsub.learn_importance()")
        admin.commit()
        set_context(admin, TENANT_A, roles=["tenant_admin"])
        assert admin.execute("select run_id, accesses_counted from memsub.importance_learning_runs").fetchall() == [
            (run["run_id"], 1)]
    with db.connect("app") as conn:
        for context in ((TENANT_A, ORG_2, uuid.uuid4()), (TENANT_A, ORG_1, writer), (TENANT_A, None, None)):
            set_context(conn, *context)
            expect_error(conn, "42501", None, "select accesses_counted from memsub.importance_learning_runs")
            assert conn.execute("select has_table_privilege('memsub.importance_learning_runs', 'select')"
                                ).fetchone() == (False,)
    with db.connect("analyst") as conn:
        set_context(conn, TENANT_A)
        assert conn.execute("select accesses_counted from memsub.importance_learning_runs").fetchall() == [(1,)]
    with db.connect("platform_admin") as conn:
        set_context(conn, None, roles=["platform_admin"])
        assert conn.execute("select count(*) from memsub.importance_learning_runs").fetchone() == (1,)


def test_reflections_by_vector_tags_priority_are_recorded(db384):
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A)
        near = call(conn, "select * from memsub.record_reflection('lesson', 'retry with backoff', p_tags => %s, "
                    "p_priority => 'high', p_vector => %s::vector)", [["network"], vec(1.0)])
        call(conn, "select * from memsub.record_reflection('lesson', 'far away', p_tags => %s, p_priority => 'low', "
             "p_vector => %s::vector)", [["cooking"], vec(0.0, 1.0)])
        rows = conn.execute("select reflection_id, access_id from memsub.retrieve_reflections(%s::vector, %s, 5, "
                            "p_record_access => true)", [vec(1.0), ["network"]]).fetchall()
        assert rows[0][0] == near["reflection_id"] and all(r[1] for r in rows)
        high = conn.execute("select count(*) from memsub.retrieve_reflections(p_min_priority => 'high')").fetchone()
        assert high == (1,)
        counted = conn.execute("select access_count from memsub.reflection_store where reflection_id = %s",
                               [near["reflection_id"]]).fetchone()
        assert counted == (1,)


def test_a_reflection_without_a_vector_counts_similarity_one_half(db384):
    """Without a query vector, or without a stored one, the similarity term is 0.5, not 0."""
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.record_reflection('lesson', 'no vector', p_priority => 'low')")
        expected = 0.6 * 0.5 + 0.2 * 0.0 + 0.2 * 0.25
        for query in ("select score from memsub.retrieve_reflections(%s::vector)",
                      "select score from memsub.retrieve_reflections(p_k => %s)"):
            argument: Any = vec(1.0) if "vector" in query else 5
            scores = [r[0] for r in conn.execute(query, [argument])]
            assert len(scores) == 1 and math.isclose(scores[0], expected), (query, scores)
        # A stored vector without a query vector: 0.5 as well, and it ranks by the other terms alone.
        call(conn, "select * from memsub.record_reflection('lesson', 'with vector', p_priority => 'high', "
             "p_vector => %s::vector)", [vec(1.0)])
        rows = conn.execute("select content, score from memsub.retrieve_reflections()").fetchall()
        assert [r[0] for r in rows] == ["with vector", "no vector"]
        assert math.isclose(rows[0][1], 0.6 * 0.5 + 0.2 * 0.75) and math.isclose(rows[1][1], expected)


def packets_fetched(conn: Any) -> int:
    """Rows of packet_store (all its partitions) the transaction has fetched by index so far."""
    row = conn.execute("select coalesce(sum(s.idx_tup_fetch), 0) from pg_stat_xact_user_tables s "
                       "where s.relid = 'memsub.packet_store'::regclass or s.relid in ("
                       "select i.inhrelid from pg_inherits i where i.inhparent = 'memsub.packet_store'::regclass)"
                       ).fetchone()
    assert row is not None
    return int(row[0])


def test_combined_ranking_records_and_reads_only_the_hits_it_returns(db384):
    """rank_by combined re-ranks the 4k nearest; only the k it returns are logged, counted and read back."""
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A)
        for i in range(8):
            packet_with_text(conn, f"note {i}", vec(1.0, 0.1 * i), importance=0.1 * i)
        search = ("select embedding_id, packet_id, access_id, packet is not null from memsub.semantic_search("
                  "%s::vector, 2, p_rank_by => 'combined', p_record_access => {}, p_with_packets => {})")
        # The packets read by key for with_packets: the difference between the same search with and without them.
        before = packets_fetched(conn)
        conn.execute(search.format("false", "false"), [vec(1.0)]).fetchall()
        plain = packets_fetched(conn) - before
        hits = conn.execute(search.format("true", "true"), [vec(1.0)]).fetchall()
        assert len(hits) == 2 and all(h[2] and h[3] for h in hits)
        # (The recording updated the two packets: their new versions are read as well.)
        assert packets_fetched(conn) - before - 2 * plain <= 2 * len(hits)
        logged = dict(conn.execute("select target_id, access_id from memsub.memory_access_log").fetchall())
        assert logged == {h[0]: h[2] for h in hits}
        counted = {r[0] for r in conn.execute("select packet_id from memsub.packet_store where access_count > 0")}
        assert counted == {h[1] for h in hits}


def test_analysts_search_and_are_refused_recording_by_name(db384):
    """memsub_analyst runs every search; recording accesses is the application's (memsub_app), so an analyst
    asking to record is refused naming record_access, by all three searches alike, and nothing is recorded."""
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A)
        hit = packet_with_text(conn, "zanzibar quokka", vec(1.0))
        reflection = call(conn, "select * from memsub.record_reflection('lesson', 'quokka', p_vector => %s::vector)",
                          [vec(1.0)])
        conn.commit()
    searches = {
        "semantic_search": "select embedding_id from memsub.semantic_search(%s::vector, 5, p_record_access => {})",
        "hybrid_search": "select embedding_id from memsub.hybrid_search('zanzibar', %s::vector, 5, "
                         "p_record_access => {})",
        "retrieve_reflections": "select reflection_id from memsub.retrieve_reflections(%s::vector, "
                                "p_record_access => {})",
    }
    with db384.connect("analyst") as conn:
        for name, statement in searches.items():
            wanted = reflection["reflection_id"] if name == "retrieve_reflections" else hit["embedding_id"]
            # Several calls: a plan kept for the session must not reach the access records either.
            for _ in range(7):
                set_context(conn, TENANT_A)
                assert [r[0] for r in conn.execute(statement.format("false"), [vec(1.0)])] == [wanted], name
                conn.rollback()
            set_context(conn, TENANT_A)
            error = expect_error(conn, "42501", "record_access", statement.format("true"), [vec(1.0)])
            assert "permission denied" not in str(error), name
        set_context(conn, TENANT_A)
        assert [r[0] for r in conn.execute("select embedding_id from memsub.hybrid_search('zanzibar', null, 5)")] \
            == [hit["embedding_id"]]
    with db384.connect() as owner:
        assert owner.execute("select count(*) from memsub.memory_access_log").fetchone() == (0,)


# -- row-level security --------------------------------------------------------------------------------------

CALLS = {
    "semantic_search": "select embedding_id::text from memsub.semantic_search(%(v)s::vector, 50)",
    "semantic_search_exact":
        "select embedding_id::text from memsub.semantic_search(%(v)s::vector, 50, p_mode => 'exact')",
    "hybrid_search": "select embedding_id::text from memsub.hybrid_search('secret', %(v)s::vector, 50)",
    "_keyword_candidates": "select embedding_id::text from memsub._keyword_candidates('secret')",
    "traverse_graph": "select entity from memsub.traverse_graph('hub', 3, p_direction => 'both')",
    "entity_neighbourhood": "select coalesce(other_entity, object::text) from memsub.entity_neighbourhood('hub')",
    "retrieve_reflections": "select content from memsub.retrieve_reflections(%(v)s::vector, k => 50)",
}
TABLE_OF = {"semantic_search": "memory_embeddings", "semantic_search_exact": "memory_embeddings",
            "hybrid_search": "memory_embeddings", "_keyword_candidates": "memory_embeddings",
            "traverse_graph": "entity_relationships", "entity_neighbourhood": "entity_relationships",
            "retrieve_reflections": "reflection_store"}


def populate(db: Any) -> None:
    with db.connect("app") as conn:
        for tenant, org, label in ((TENANT_A, None, "a"), (TENANT_A, ORG_2, "a-org2"), (TENANT_B, None, "b")):
            set_context(conn, tenant, org, uuid.uuid4())
            for n in range(3):
                packet_with_text(conn, f"secret {label} {n}", vec(1.0, n / 10))
            call(conn, "select * from memsub.record_reflection('lesson', %s, p_vector => %s::vector)",
                 [f"lesson {label}", vec(1.0)])
            if org is None:
                edges(conn, [("hub", "links", f"node-{label}", 0.9), (f"node-{label}", "links", f"leaf-{label}", 0.9)])
                call(conn, "select * from memsub.assert_fact('hub', 'owned by', %s::jsonb, 0.9)", [json.dumps(label)])
            conn.commit()


def observed(db: Any, name: str) -> set[str]:
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        sql = CALLS[name].replace("k => 50", "p_k => 50")
        return {r[0] for r in conn.execute(sql, {"v": vec(1.0)})}


def expected(db: Any, name: str) -> set[str]:
    """The reference model, from ground truth read as the superuser: tenant A, no org."""
    with db.connect() as conn:
        if TABLE_OF[name] == "memory_embeddings":
            return {r[0] for r in conn.execute("select embedding_id::text from memsub.memory_embeddings "
                                               "where tenant_id = %s and org_id is null", [TENANT_A])}
        if name == "retrieve_reflections":
            return {r[0] for r in conn.execute("select content from memsub.reflection_store "
                                               "where tenant_id = %s and org_id is null", [TENANT_A])}
        if name == "traverse_graph":
            return {"node-a", "leaf-a"}
        return {"node-a", json.dumps("a")}


READS = {"semantic_search": ["memory_embeddings", "packet_store"],
         "semantic_search_exact": ["memory_embeddings", "packet_store"],
         "hybrid_search": ["memory_embeddings", "packet_store"], "_keyword_candidates": ["memory_embeddings"],
         "traverse_graph": ["entity_relationships"],
         "entity_neighbourhood": ["entity_relationships", "knowledge_facts"],
         "retrieve_reflections": ["reflection_store"]}
POLICY_LAYERS = {"memory_embeddings": ["org", "user"], "packet_store": ["org", "user"], "reflection_store": ["org"],
                 "entity_relationships": [], "knowledge_facts": []}


def other_tenant(db: Any, name: str) -> set[str]:
    with db.connect() as conn:
        if TABLE_OF[name] == "memory_embeddings":
            return {r[0] for r in conn.execute("select embedding_id::text from memsub.memory_embeddings "
                                               "where tenant_id = %s", [TENANT_B])}
    return {"lesson b", "node-b", "leaf-b", json.dumps("b")}


def mutate(db: Any, tables: list[str], statements: list[str]) -> None:
    with db.connect() as conn:
        for table in tables:
            for statement in statements:
                conn.execute(statement.format(table=f"memsub.{table}"))
        conn.commit()


def restore(db: Any, tables: list[str]) -> None:
    with db.connect() as conn:
        for table in tables:
            conn.execute("call memsub._install_row_security(%s, %s)", [f"memsub.{table}", POLICY_LAYERS[table]])
        conn.commit()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_retrieval_functions_return_exactly_the_callers_rows(db384, name):
    populate(db384)
    model = expected(db384, name)
    assert observed(db384, name) == model
    tables = READS[name]
    forbidden = other_tenant(db384, name)
    assert forbidden and not forbidden & model

    # Without tenant_isolation the function sees nothing: its rows come through that policy.
    mutate(db384, tables, ["drop policy tenant_isolation on {table}"])
    without_tenant_policy = observed(db384, name)
    restore(db384, tables)
    # With a policy that lets every tenant through, the explicit tenant predicates still hold.
    mutate(db384, tables, ["drop policy tenant_isolation on {table}",
                           "create policy tenant_isolation on {table} using (true)"])
    assert not observed(db384, name) & forbidden
    restore(db384, tables)
    # Without org_isolation the other organization's rows appear.
    org_tables = [t for t in tables if "org" in POLICY_LAYERS[t]]
    mutate(db384, org_tables, ["drop policy org_isolation on {table}"])
    without_org_policy = observed(db384, name)
    restore(db384, tables)
    assert observed(db384, name) == model

    if name == "_keyword_candidates":
        # It bypasses row-level security and applies the same predicates itself: no policy change reaches it.
        assert without_tenant_policy == model and without_org_policy == model
    else:
        assert without_tenant_policy != model, f"{name}: dropping tenant_isolation went unnoticed"
        if org_tables:
            assert without_org_policy - model, f"{name}: dropping org_isolation leaked nothing"
