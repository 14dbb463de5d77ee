"""A write must not read more of a table as the tenant grows, from the installation's first write on.

PostgreSQL keeps the plan of a repeated statement once it has run five times: the check of a foreign key, run by
its trigger on every insert of a row that references another, and every statement inside a PL/pgSQL function.
In a new installation no table has been analyzed yet, and the planner's default guess is that a tenant holds
under one row of it. Every index that starts with ``tenant_id`` then looks as good as the primary key, and the
planner may keep a plan that finds a row by its tenant alone and filters the rest: a scan of the whole tenant at
every write, until autovacuum first analyzes the table (a minute or more after the first rows). The
installation gives its tables a prior for ``tenant_id`` (``sql/980_planner_statistics.sql``) that ANALYZE
replaces.

The tests count the tuples and pages a write touches (``helpers.table_reads``), not time, on one connection, as a
pooled connection of a new installation would run. A write with an embedding, whose foreign key checks its
packet, is tested with the other packet writes in ``tests/packets/test_write_cost.py``.
"""

from __future__ import annotations

import re
from typing import Any

from psycopg import sql

from helpers import table_reads
from session_helpers import ALICE, as_user

EARLIER_WRITES = 300
MEASURED_WRITES = 5
# A write of one memory entry reads a handful of tuples and pages of the table (the version probe, the key check
# of its audit row); a scan of the tenant reads EARLIER_WRITES of them.
TOUCHED_PER_WRITE = 20

FOREIGN_KEYS = """
select c.conname, n.nspname, t.relname, t.reltuples < 0,
       array(select a.attname::text from unnest(c.confkey) with ordinality k(attnum, position)
               join pg_catalog.pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum
              order by k.position)
  from pg_catalog.pg_constraint c
  join pg_catalog.pg_class t on t.oid = c.confrelid
  join pg_catalog.pg_namespace n on n.oid = t.relnamespace
 where c.contype = 'f' and c.connamespace = 'memsub'::regnamespace and c.conparentid = 0
 order by c.conname
"""


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
        for name, schema, table, never_analyzed_table, columns in keys:
            assert never_analyzed_table, f"{table} was analyzed: the test would not test the first plans"
            # PREPARE takes each parameter's type from the column it is compared with.
            condition = sql.SQL(" and ").join(
                sql.SQL("x.{} operator(pg_catalog.=) {}").format(sql.Identifier(column), sql.SQL(f"${n}"))
                for n, column in enumerate(columns, 1))
            conn.execute(sql.SQL("prepare key_check as select 1 from only {} x where {} for key share of x").format(
                sql.Identifier(schema, table), condition))
            plan = "\n".join(str(r[0]) for r in conn.execute(sql.SQL("explain execute key_check ({})").format(
                sql.SQL(", ").join(sql.NULL for _ in columns))))
            conn.execute("deallocate key_check")
            searched = " ".join(line for line in plan.splitlines() if "Index Cond:" in line)
            missing = [c for c in columns if not re.search(rf"(?<![\w.]){c} = ", searched)]
            if missing:
                wrong.append(f"{name} ({schema}.{table}): {missing} not searched\n{plan}")
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
            before = table_reads(conn, "memsub.memory_entries")
            conn.execute("select memsub.memory_write(%s, %s, '{\"v\": 2}')", [f"user:{ALICE}:notes", f"new{n}"])
            costs.append(table_reads(conn, "memsub.memory_entries") - before)
            conn.commit()
    assert max(costs) < TOUCHED_PER_WRITE, f"memory_write touched {costs} memory_entries tuples and pages"
