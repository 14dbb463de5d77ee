"""What entity_search and memory_search read: their vector leg ranks by the exact distance, and their text leg
finds its rows through an index instead of reading every row of the tenant.

One 384-d database holds 3,000 entities and 3,000 namespaced memory entries of one tenant (random directions,
one word of 300 in each name or text) and as many of another tenant. The reads are counted with the
transaction's own statistics (pg_stat_get_xact_tuples_returned / _fetched) as the application role.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import TENANT_A, TENANT_B, graphs_built_after_load, set_context, write

ROWS = 3000
K = 10


@pytest.fixture(scope="module")
def filled(server: Any, template_db_384: str) -> Iterator[Any]:
    from conftest import cloned_database

    with cloned_database(server, template_db_384, "memsub_fused") as database:
        with database.connect() as conn:
            conn.execute("select setseed(0.17)")
            conn.execute("""
                create function pg_temp.direction(n integer) returns vector language sql volatile as $$
                    select array_agg(random_normal() + 0 * n)::vector from generate_series(1, 384)
                $$""")
            with graphs_built_after_load(conn, "memsub.world_model_entities", "memsub.memory_entries"):
                load(conn)
            conn.execute("analyze memsub.world_model_entities, memsub.memory_entries")
            conn.commit()
        yield database


def load(conn: Any) -> None:
    """Both tenants' entities and memory entries."""
    for tenant in (TENANT_A, TENANT_B):
        conn.execute(
            "insert into memsub.world_model_entities (tenant_id, entity_id, entity_type, state_version,"
            " aliases, embedding)"
            " select %s, 'entity ' || g, 'Concept', 1, array['word' || (g %% 300)], pg_temp.direction(g)"
            " from generate_series(1, %s) g", [tenant, ROWS])
        conn.execute(
            "insert into memsub.memory_entries (tenant_id, namespace, key, version, value, embedding)"
            " select %s, 'app:notes', 'key ' || g, 1, jsonb_build_object('text', 'note word' || (g %% 300)),"
            " pg_temp.direction(g) from generate_series(1, %s) g", [tenant, ROWS])


def reads(conn: Any, table: str) -> int:
    """Tuples the transaction has read from a table, by sequential scans and by index scans."""
    return conn.execute("select pg_stat_get_xact_tuples_returned(%s::regclass)"
                        " + pg_stat_get_xact_tuples_fetched(%s::regclass)", [table, table]).fetchone()[0]


def random_query(conn: Any) -> str:
    return conn.execute("select array_agg(random_normal())::vector::text from generate_series(1, 384)").fetchone()[0]


NEAREST = {
    "entity_search": ("select entity_id from memsub.world_model_entities order by embedding <=> %s::vector limit %s",
                      "select entity_id, vector_rank from memsub.entity_search(null, %s::vector, %s)"),
    "memory_search": ("select key from memsub.memory_entries order by embedding <=> %s::vector limit %s",
                      "select key, vector_rank from memsub.memory_search(null, %s::vector, %s)"),
}
BY_WORDS = {
    "entity_search": ("memsub.world_model_entities", "select count(*) from memsub.entity_search(%s, null, %s)"),
    "memory_search": ("memsub.memory_entries", "select count(*) from memsub.memory_search(%s, null, %s)"),
}


@pytest.mark.parametrize("function", NEAREST)
def test_the_vector_leg_ranks_by_the_exact_distance(filled, function):
    exact, search = NEAREST[function]
    with filled.connect("app", autocommit=True) as app:
        for _ in range(3):
            query = random_query(app)
            with app.transaction():
                set_context(app, TENANT_A)
                app.execute("set local enable_indexscan = off")
                expected = [r[0] for r in app.execute(exact, [query, K])]
            with app.transaction():
                set_context(app, TENANT_A)
                got = sorted(app.execute(search, [query, K]).fetchall(), key=lambda r: r[1])
            assert [r[0] for r in got] == expected
            assert [r[1] for r in got] == list(range(1, K + 1))


@pytest.mark.parametrize("function", BY_WORDS)
def test_the_text_leg_reads_only_the_rows_that_match(filled, function):
    table, search = BY_WORDS[function]
    with filled.connect("app", autocommit=True) as app, app.transaction():
        set_context(app, TENANT_A)
        before = reads(app, table)
        found = app.execute(search, ["word17", K]).fetchone()[0]
        read = reads(app, table) - before
    assert found == K  # ten of the tenant's ten matching rows (one word in 300)
    assert read <= 20 * K, f"{function} read {read} rows of {table} to find {found}"


def _visible_words(db: Any, tenant: uuid.UUID, user: uuid.UUID | None, roles: tuple[str, ...] = (),
                   session: str | None = None) -> tuple[set[str], set[str], set[str], set[str]]:
    """What a login of that context finds by the word 'quokka': entity names and memory keys, from the text legs
    called directly and from the searches."""
    role = "tenant_admin" if roles else "app"
    with db.connect(role) as conn:
        set_context(conn, tenant, user=user, roles=roles, session=session)
        entities = {r[0] for r in conn.execute(
            "select entity_id from memsub._entity_word_candidates(websearch_to_tsquery('simple', 'quokka'))")}
        ids = [r[0] for r in conn.execute(
            "select id from memsub._memory_word_candidates(websearch_to_tsquery('english', 'quokka'))")]
        searches = ({r[0] for r in conn.execute("select entity_id from memsub.entity_search('quokka')")},
                    {r[0] for r in conn.execute("select key from memsub.memory_search('quokka')")})
    with db.connect() as owner:  # the keys of the ids, read past row-level security
        keys = {r[0] for r in owner.execute("select key::text from memsub.memory_entries where id = any(%s)", [ids])}
    return (entities, keys, *searches)


def test_the_text_legs_find_only_what_the_policies_let_the_caller_see(db384):
    """The text legs bypass row-level security to use their indexes, and state the policies' predicates
    themselves: the tenant, and for memory entries the namespace rules (app: for the tenant, user:<id> for that
    user, session:<id> for that session, everything for a tenant admin). Rows that match the words but not the
    rules are read as the owner; the table reads (last two sets) show the same as the direct calls."""
    from session_helpers import ALICE, BOB

    with db384.connect() as conn:
        for tenant in (TENANT_A, TENANT_B):
            conn.execute("insert into memsub.world_model_entities (tenant_id, entity_id, entity_type, state_version,"
                         " aliases) values (%s, %s, 'Concept', 1, array['quokka'])", [tenant, f"pet of {tenant}"])
            conn.execute(
                "insert into memsub.memory_entries (tenant_id, namespace, key, version, value)"
                " select %s, n.namespace, n.key, 1, '{\"text\": \"a quokka\"}'"
                " from (values ('app:zoo', %s), (%s, 'alice'), (%s, 'bob'), ('session:s1:notes', 'session'))"
                " n(namespace, key)",
                [tenant, f"zoo {tenant}", f"user:{ALICE}:notes", f"user:{BOB}:notes"])
        conn.commit()
    alice = _visible_words(db384, TENANT_A, ALICE)
    assert alice[0] == alice[2] == {f"pet of {TENANT_A}"}
    assert alice[1] == alice[3] == {f"zoo {TENANT_A}", "alice"}
    bob_in_session = _visible_words(db384, TENANT_A, BOB, session="s1")
    assert bob_in_session[1] == bob_in_session[3] == {f"zoo {TENANT_A}", "bob", "session"}
    admin = _visible_words(db384, TENANT_B, None, roles=("tenant_admin",))
    assert admin[0] == admin[2] == {f"pet of {TENANT_B}"}
    assert admin[1] == admin[3] == {f"zoo {TENANT_B}", "alice", "bob", "session"}


def _embedded_note(conn: Any, text: str, vector: str, scope: str = "shared") -> str:
    packet = write(conn, {"packet_type": "note", "payload": {"text": text}, "scope": scope})
    row = conn.execute("select embedding_id::text from memsub.store_embedding(%s, 'content', %s::vector, 0, %s)",
                       [packet["packet_id"], vector, text]).fetchone()
    assert row is not None
    return str(row[0])


def test_an_admins_search_by_words_finds_what_the_admin_may_read(db384):
    """A tenant admin passes the organization and scope policies of memory_embeddings: hybrid_search's keyword leg
    finds another user's l-private row and another organization's row by their words, as the vector leg finds
    them by their vectors. A member of the tenant without that organization finds neither, either way."""
    user, org = uuid.uuid4(), uuid.uuid4()
    vector = "[" + ",".join(["1.0"] + ["0.001"] * 383) + "]"
    with db384.connect("app") as conn:
        set_context(conn, TENANT_A, user=user)
        private = _embedded_note(conn, "zanzibar quokka private", vector, scope="l-private")
        set_context(conn, TENANT_A, org=org)
        of_org = _embedded_note(conn, "zanzibar quokka of an organization", vector)
        conn.commit()
    wanted = {private, of_org}
    for login, roles in (("tenant_admin", ("tenant_admin",)), ("app", ())):
        with db384.connect(login) as conn:
            set_context(conn, TENANT_A, user=uuid.uuid4(), roles=roles)
            by_vector = {str(r[0]) for r in conn.execute(
                "select embedding_id from memsub.hybrid_search(null, %s::vector, 5)", [vector])}
            by_words = {str(r[0]) for r in conn.execute(
                "select embedding_id from memsub.hybrid_search('zanzibar quokka', null, 5)")}
            direct = {str(r[0]) for r in conn.execute(
                "select embedding_id from memsub._keyword_candidates('zanzibar quokka')")}
            expected = wanted if roles else set()
            assert by_vector == by_words == direct == expected, (login, by_vector, by_words, direct)
