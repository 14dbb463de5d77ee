"""A write must not read more of a table as the tenant grows, from the installation's first write on.

PostgreSQL keeps the plan of a repeated statement once it has run five times: the check of a foreign key, run by
its trigger on every insert of a row that references another, and every statement inside a PL/pgSQL function.
In a new installation no table has been analyzed yet, and the planner's default guess is that a tenant holds
under one row of it. Every index that starts with ``tenant_id`` then looks as good as the primary key, and the
planner may keep a plan that finds a row by its tenant alone and filters the rest: a scan of the whole tenant at
every write, until autovacuum first analyzes the table (a minute or more after the first rows). The
installation gives its tables a prior for ``tenant_id`` (``sql/980_planner_statistics.sql``) that ANALYZE
replaces.

The tests count the tuples and pages a write touches (``pg_stat_get_xact_*``, as in ``test_memory_read_cost``),
not time, on one connection, as a pooled connection of a new installation would run.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import psycopg
from psycopg import sql

from helpers import TENANT_A, set_context
from layer_helpers import DIMENSION
from session_helpers import ALICE, as_user

EARLIER_WRITES = 300
MEASURED_WRITES = 5
# A write of one memory entry or one packet reads a handful of tuples and pages of the table (the version or
# duplicate probe, the key check of the row it references); a scan of the tenant reads EARLIER_WRITES of them.
TOUCHED_PER_WRITE = 20

FOREIGN_KEYS = """
select c.conname, c.confrelid::regclass::text,
       array(select a.attname::text from unnest(c.confkey) with ordinality k(attnum, n)
               join pg_catalog.pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum
              order by k.n),
       array(select pg_catalog.format_type(a.atttypid, a.atttypmod) from unnest(c.confkey) with ordinality k(attnum, n)
               join pg_catalog.pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum
              order by k.n)
  from pg_catalog.pg_constraint c
 where c.contype = 'f' and c.connamespace = 'memsub'::regnamespace and c.conparentid = 0
 order by c.conname
"""


def touched(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(
        "select pg_stat_get_xact_tuples_fetched(%(t)s::regclass) + pg_stat_get_xact_tuples_returned(%(t)s::regclass)"
        " + pg_stat_get_xact_blocks_hit(%(t)s::regclass) + pg_stat_get_xact_blocks_fetched(%(t)s::regclass)",
        {"t": table}).fetchone()
    assert row is not None
    return int(row[0])


def never_analyzed(db: Any, table: str) -> bool:
    with db.connect() as conn:
        row = conn.execute("select reltuples < 0 from pg_catalog.pg_class where oid = %s::regclass", [table]).fetchone()
    return bool(row and row[0])


def test_every_foreign_key_check_searches_its_whole_key_before_the_first_analyze(db):
    """The statement a foreign key's trigger runs (``select 1 from only <table> x where <key> = $n ... for key
    share of x``), planned once for every value as PostgreSQL keeps it, finds the row by every key column."""
    with db.connect(autocommit=True) as conn:
        keys = conn.execute(FOREIGN_KEYS).fetchall()
        assert len(keys) >= 20
        conn.execute("set plan_cache_mode = force_generic_plan")
        wrong = []
        for name, table, columns, types in keys:
            assert never_analyzed(db, table), f"{table} was analyzed: the test would not test the first plans"
            condition = sql.SQL(" and ").join(
                sql.SQL("x.{} operator(pg_catalog.=) {}").format(sql.Identifier(column), sql.SQL(f"${n}"))
                for n, column in enumerate(columns, 1))
            key_check = sql.SQL("prepare key_check ({}) as select 1 from only {} x where {} for key share of x")
            conn.execute(key_check.format(sql.SQL(", ").join(sql.SQL(t) for t in types), sql.SQL(table), condition))
            plan = "\n".join(str(r[0]) for r in conn.execute(sql.SQL("explain execute key_check ({})").format(
                sql.SQL(", ").join(sql.NULL for _ in columns))))
            conn.execute("deallocate key_check")
            searched = " ".join(line for line in plan.splitlines() if "Index Cond:" in line)
            missing = [c for c in columns if not re.search(rf"(?<![\w.]){c} = ", searched)]
            if missing:
                wrong.append(f"{name} ({table}): {missing} not searched\n{plan}")
        assert not wrong, "\n\n".join(wrong)


def test_a_memory_write_reads_no_more_as_the_tenant_grows(db):
    assert never_analyzed(db, "memsub.memory_entries")
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        for n in range(EARLIER_WRITES):
            conn.execute("select memsub.memory_write(%s, %s, '{\"v\": 1}')", [f"user:{ALICE}:notes", f"k{n}"])
        conn.commit()
        costs = []
        for n in range(MEASURED_WRITES):
            as_user(conn, ALICE)
            before = touched(conn, "memsub.memory_entries")
            conn.execute("select memsub.memory_write(%s, %s, '{\"v\": 2}')", [f"user:{ALICE}:notes", f"new{n}"])
            costs.append(touched(conn, "memsub.memory_entries") - before)
            conn.commit()
    assert max(costs) < TOUCHED_PER_WRITE, f"memory_write touched {costs} memory_entries tuples and pages"


def envelope(n: int) -> dict[str, Any]:
    return {"packet_id": str(uuid.UUID(int=n + 1, version=4)), "packet_type": "memory_write",
            "timestamp": f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}Z", "payload": {"text": f"item {n}"},
            "memory": {"embeddings": [{"embedding_type": "content", "chunk_text": f"item {n}",
                                       "vector": [((n * 7 + i) % 97 + 1) / 97 for i in range(DIMENSION)]}]}}


def test_a_packet_write_reads_no_more_as_the_tenant_grows(db):
    assert never_analyzed(db, "memsub.packet_store")
    singles = 10  # a new installation's first writes: each statement of a single write runs five times and more
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for n in range(singles):
            conn.execute("select memsub.write_packet(%s::jsonb)", [json.dumps(envelope(n))])
        for start in range(singles, singles + EARLIER_WRITES, 100):
            conn.execute("select count(*) from memsub.write_packets(%s::jsonb)",
                         [json.dumps([envelope(n) for n in range(start, start + 100)])])
        conn.commit()
        costs = []
        for n in range(singles + EARLIER_WRITES, singles + EARLIER_WRITES + MEASURED_WRITES):
            set_context(conn, TENANT_A)
            before = touched(conn, "memsub.packet_store")
            conn.execute("select memsub.write_packet(%s::jsonb)", [json.dumps(envelope(n))])
            costs.append(touched(conn, "memsub.packet_store") - before)
            conn.commit()
    assert max(costs) < TOUCHED_PER_WRITE, f"write_packet touched {costs} packet_store tuples and pages"
