"""Reading packets by id must search the (tenant_id, packet_id) key once per id, not probe every tenant, with
their vectors or without, and read the vectors in the tenant's partition of memory_embeddings only.

The packets of many tenants share packet_store; its primary key leads with tenant_id. A lookup by packet_id
alone can only skip-scan that key (one index search per distinct tenant). The tests count the index searches
a read starts (``pg_stat_get_xact_numscans`` of the key, which counts each search), as the application role.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest
from psycopg import sql

from helpers import TENANT_A, TENANT_B, function_calls, set_context, track_function_calls

TENANTS = 40
PACKETS_EACH = 300


def packet_id(tenant: int, number: int) -> uuid.UUID:
    return uuid.UUID(f"00000000-0000-4000-8000-{tenant * 1000 + number:012d}")


def tenant_uuid(tenant: int) -> uuid.UUID:
    return TENANT_A if tenant == 0 else TENANT_B if tenant == 1 else uuid.UUID(int=tenant, version=4)


def populate(db: Any) -> None:
    """PACKETS_EACH packets in each of TENANTS tenants, written as the superuser (no row-level security)."""
    with db.connect() as conn:
        for tenant in range(TENANTS):
            conn.execute(
                "insert into memsub.packet_store (packet_id, packet_type, envelope, tenant_id, scope, content_hash)"
                " select ('00000000-0000-4000-8000-' || lpad((%s * 1000 + i)::text, 12, '0'))::uuid, 'event',"
                "        jsonb_build_object('payload', i), %s, 'shared', md5(%s || ':' || i)"
                "   from generate_series(0, %s - 1) i",
                [tenant, tenant_uuid(tenant), tenant, PACKETS_EACH])
        conn.execute("analyze memsub.packet_store")
        conn.commit()


def key_searches(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("select pg_stat_get_xact_numscans('memsub.packet_store_pkey'::regclass)").fetchone()
    assert row is not None
    return int(row[0])


def test_get_packet_searches_the_key_once(db):
    populate(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for number in range(7):  # a few calls: cached plans count too
            before = key_searches(conn)
            found = conn.execute("select packet_id from memsub.get_packet(%s)", [packet_id(0, number)]).fetchall()
            searches = key_searches(conn) - before
            assert found == [(packet_id(0, number),)]
            assert searches == 1, f"get_packet searched the key {searches} times"
        # Another tenant's packet stays invisible.
        assert conn.execute("select * from memsub.get_packet(%s)", [packet_id(1, 0)]).fetchall() == []
        # A packet with a vector: its row is searched once, its vectors read beside it (get_packets_with_vector_values).
        written = conn.execute("select packet_id from memsub.write_packet(%s::jsonb)", [json.dumps(
            {"packet_type": "event", "payload": {},
             "memory": {"embeddings": [{"embedding_type": "content", "vector": [0.5] * 1536}]}})]).fetchone()
        assert written is not None
        for with_vectors, expected in ((False, 1), (True, 1)):
            before = key_searches(conn)
            found = conn.execute("select packet_id from memsub.get_packet(%s, %s)", [written[0], with_vectors])
            assert found.fetchall() == [written] and key_searches(conn) - before == expected, with_vectors


def test_get_packets_returns_the_visible_ones_in_the_order_asked(db):
    populate(db)
    wanted = [packet_id(0, 5), packet_id(1, 5), packet_id(0, 2), uuid.uuid4(), packet_id(0, 5), packet_id(0, 9)]
    reads = [sql.SQL("memsub.get_packets(%s)"), sql.SQL("memsub.get_packets(%s, false)"),
             sql.SQL("memsub.get_packets_with_vector_values(%s)")]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)

        def read_ids(read: sql.SQL, ids: list[uuid.UUID] | None) -> list[tuple[Any, ...]]:
            return conn.execute(sql.SQL("select packet_id, tenant_id from {}").format(read), [ids]).fetchall()

        for read in reads:
            before = key_searches(conn)
            rows = read_ids(read, wanted)
            searches = key_searches(conn) - before
            assert [r[0] for r in rows] == [packet_id(0, 5), packet_id(0, 2), packet_id(0, 9)], read
            assert {r[1] for r in rows} == {TENANT_A}
            assert searches <= len(set(wanted)), f"{read} searched the key {searches} times"
            assert read_ids(read, []) == [] and read_ids(read, None) == []
            assert [r[0] for r in read_ids(read, [packet_id(0, 7)])] == [packet_id(0, 7)]


def test_get_packets_refuses_more_ids_than_max_rows(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        limit = conn.execute("select memsub.limit_value('max_rows')").fetchone()
        assert limit is not None
        with pytest.raises(psycopg.Error) as caught:
            conn.execute("select * from memsub.get_packets(array(select gen_random_uuid() "
                         "from generate_series(1, %s)))", [int(limit[0]) + 1])
        assert caught.value.sqlstate == "54000"
        assert caught.value.diag.column_name == "packet_ids"


def test_platform_admin_reads_packets_of_any_tenant(db):
    populate(db)
    with db.connect("platform_admin") as conn:
        set_context(conn, TENANT_A, roles=["platform_admin"])
        assert conn.execute("select count(*) from memsub.get_packet(%s)", [packet_id(1, 3)]).fetchone() == (1,)
        assert conn.execute("select count(*) from memsub.get_packets(%s)",
                            [[packet_id(1, 3), packet_id(7, 4)]]).fetchone() == (2,)


def test_a_read_with_vectors_searches_the_key_as_often_as_a_read_without(db):
    """get_packets_with_vector_values reads the packets as get_packets(ids, false) does, once: a read of the
    packets within it found the reader's tenants again and, for a platform admin over several tenants, searched
    every id's key once a tenant for each tenant read."""
    populate(db)
    asked = [packet_id(1, 3), packet_id(7, 4), packet_id(1, 5), uuid.uuid4()]
    reads = {"without": "select packet_id from memsub.get_packets(%s, false)",
             "with": "select packet_id from memsub.get_packets_with_vector_values(%s)"}
    with db.connect("platform_admin") as conn:
        for _ in range(7):  # a few calls: cached plans count too
            searches = {}
            for name, statement in reads.items():
                set_context(conn, TENANT_A, roles=["platform_admin"])
                before = key_searches(conn)
                found = conn.execute(statement, [asked]).fetchall()
                searches[name] = key_searches(conn) - before
                assert sorted(r[0] for r in found) == sorted(asked[:3])
                conn.commit()
            assert searches["with"] == searches["without"], searches


def packets_touched(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "select pg_stat_get_xact_tuples_fetched('memsub.packet_store'::regclass)"
        " + pg_stat_get_xact_tuples_returned('memsub.packet_store'::regclass)").fetchone()
    assert row is not None
    return int(row[0])


def test_get_packets_reads_only_the_packets_asked_for(db):
    """A hundred ids of a tenant holding PACKETS_EACH packets: the rows read are the rows asked for, not the
    tenant's whole store."""
    populate(db)
    wanted = [packet_id(0, n) for n in range(0, 200, 2)]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for _ in range(7):  # a few calls: cached plans count too
            before = packets_touched(conn)
            rows = conn.execute("select packet_id from memsub.get_packets(%s)", [wanted]).fetchall()
            touched = packets_touched(conn) - before
            assert [r[0] for r in rows] == wanted
            assert touched <= 2 * len(wanted), f"get_packets read {touched} packet rows for {len(wanted)} ids"


def test_a_read_searches_the_key_when_one_tenant_holds_every_packet(db):
    """A store with one tenant (a new installation, a single-tenant one): the generic plan must still search the
    key per id. Planned as a join, it found the tenant's condition matching every row and read them all (a scan
    of the table and a hash join) for each id asked for."""
    with db.connect() as conn:
        conn.execute(
            "insert into memsub.packet_store (packet_id, packet_type, envelope, tenant_id, scope, content_hash)"
            " select ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid, 'event',"
            "        jsonb_build_object('payload', i), %s, 'shared', md5(i::text)"
            "   from generate_series(0, 599) i", [TENANT_A])
        conn.execute("analyze memsub.packet_store")
        conn.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for number in range(7):  # a few calls: the cached (generic) plan from the sixth on
            before = packets_touched(conn)
            found = conn.execute("select packet_id from memsub.get_packet(%s, false)",
                                 [packet_id(0, number)]).fetchall()
            touched = packets_touched(conn) - before
            assert found == [(packet_id(0, number),)]
            assert touched <= 2, f"get_packet read {touched} packet rows for one id"


def partitions_opened(conn: psycopg.Connection[Any]) -> int:
    """The partitions of memory_embeddings whose indexes this transaction has opened (and holds locks on). A
    cached plan locks every partition when it starts, but opens a partition's index only for a scan it runs or may
    run: a partition the tenant stated as a value prunes at the start is never opened."""
    row = conn.execute(
        "select count(distinct i.indrelid) from pg_locks l join pg_index i on i.indexrelid = l.relation"
        "  join pg_inherits h on h.inhrelid = i.indrelid"
        " where h.inhparent = 'memsub.memory_embeddings'::regclass and l.pid = pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def test_a_read_with_vectors_opens_only_the_tenants_partition(db):
    """A packet's vectors are in its tenant's partition of memory_embeddings. Reading them must state the tenant
    as a value, so the cached plan opens that partition only, not every partition that holds rows (opening each
    one's index costs more than reading the vector)."""
    tenants = [tenant_uuid(t) for t in range(12)]
    written: dict[uuid.UUID, uuid.UUID] = {}
    with db.connect("app") as conn:
        for tenant in tenants:
            set_context(conn, tenant)
            row = conn.execute("select packet_id from memsub.write_packet(%s::jsonb)", [json.dumps(
                {"packet_type": "event", "payload": {},
                 "memory": {"embeddings": [{"embedding_type": "content", "vector": [0.5] * 1536}]}})]).fetchone()
            assert row is not None
            written[tenant] = row[0]
            conn.commit()
    with db.connect() as conn:  # the superuser: more chunks of each vector, so each partition is worth an index
        conn.execute("insert into memsub.memory_embeddings (packet_id, embedding_type, vector, chunk_index, tenant_id)"
                     " select m.packet_id, m.embedding_type, m.vector, c, m.tenant_id"
                     "   from memsub.memory_embeddings m cross join generate_series(1, 300) c")
        conn.execute("analyze memsub.memory_embeddings")
        holding = conn.execute("select count(distinct tableoid) from memsub.memory_embeddings").fetchone()
        conn.commit()
    assert holding is not None and holding[0] > 4  # the tenants' vectors lie in several partitions
    reads = {"get_packets": "select count(*) from memsub.get_packets(%s)",
             "get_packets_with_vector_values":
                 "select count(vectors) from memsub.get_packets_with_vector_values(%s)"}
    with db.connect("app") as conn:
        for name, statement in reads.items():
            for _ in range(3):  # the first call plans (and opens every partition); later ones run the cached plan
                set_context(conn, TENANT_A)
                assert conn.execute(statement, [[written[TENANT_A]]]).fetchone() == (1,)
                opened = partitions_opened(conn)
                conn.commit()
            assert opened == 1, f"{name} opened {opened} partitions of memory_embeddings"


def test_a_read_with_vectors_calls_no_function_per_vector(db):
    """The vectors of a read are found by each element's slot (embedding_type, chunk_index). Reading the slot
    through a helper function put a function call into the index search of every vector (a SQL function with its
    own search_path is not inlined: a sixth of the server time of a get of 100 packets). The memsub functions a
    read calls must not grow with the number of vectors it returns."""
    elements = 6
    envelope = {"packet_type": "event", "payload": {}, "memory": {"embeddings": [
        {"embedding_type": kind, "vector": [0.25 * (n + 1)] * 1536, **({"chunk_index": n} if n else {})}
        for n, kind in enumerate(["content"] * (elements - 2) + ["summary", "entity"])]}}
    track_function_calls(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ids = []
        for number in range(20):
            row = conn.execute("select packet_id from memsub.write_packet(%s::jsonb)",
                               [json.dumps({**envelope, "payload": {"n": number}})]).fetchone()
            assert row is not None
            ids.append(row[0])
        conn.commit()
        calls = {}
        for count in (2, 20):  # two ids or more: the limit is read (one id is within any limit)
            for _ in range(3):  # the later calls run the cached plan
                set_context(conn, TENANT_A)
                before = sum(function_calls(conn).values())
                found = conn.execute(
                    "select r.packet_id, array(select split_part(v::text, ',', 1) from unnest(r.vectors) v)"
                    "  from memsub.get_packets_with_vector_values(%s) r", [ids[:count]]).fetchall()
                calls[count] = sum(function_calls(conn).values()) - before
                conn.commit()
            assert [r[0] for r in found] == ids[:count]
            # each element's own vector, in the order of the elements
            assert all(r[1] == [f"[{0.25 * (n + 1):g}" for n in range(elements)] for r in found), found[0]
    assert calls[20] == calls[2], f"memsub function calls: {calls[2]} reading two packets, {calls[20]} reading 20"
