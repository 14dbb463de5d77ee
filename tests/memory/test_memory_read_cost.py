"""Reading one namespace must not cost a scan of the tenant's whole memory.

Under row-level security a non-leakproof operator such as LIKE cannot be an index condition for the
application role, so a namespace-prefix read written as ``namespace like prefix || ':%'`` touches every
entry of the tenant and slows down as the tenant's memory grows. The tests count the memory_entries tuples
(fetched and returned) and pages a read touches (``pg_stat_get_xact_*``), not time, in a tenant holding
thousands of entries of other users.
"""

from __future__ import annotations

from typing import Any

from helpers import TENANT_A, set_context, table_reads
from session_helpers import ALICE, as_user, new_session, rows

OTHER_USERS = 80
KEYS_EACH = 40


def populate(db: Any) -> None:
    """Alice's few entries among OTHER_USERS x KEYS_EACH entries of other users of the same tenant."""
    with db.connect("tenant_admin") as conn:
        set_context(conn, TENANT_A, roles=["tenant_admin"])
        conn.execute(
            "select count(memsub.memory_write('user:' || gen_random_uuid() || ':notes', 'k' || k, '{}'::jsonb))"
            "  from generate_series(1, %s) u, generate_series(1, %s) k", [OTHER_USERS, KEYS_EACH])
        # Namespaces that sort right next to Alice's: a read must not confuse them with hers.
        conn.execute(f"select memsub.memory_write('user:{ALICE}-x:prefs', 'near', '1')")
        conn.commit()
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        for key in ("style", "language", "tone"):
            conn.execute(f"select memsub.memory_write('user:{ALICE}:prefs', '{key}', '\"v\"')")
        conn.execute(f"select memsub.memory_write('user:{ALICE}', 'root', '\"r\"')")
        conn.commit()
    with db.connect() as conn:
        conn.execute("analyze memsub.memory_entries")
        conn.commit()


def test_memory_list_reads_only_its_namespace(db):
    populate(db)
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        for prefix in (f"user:{ALICE}:prefs", f"user:{ALICE}"):  # a few calls: cached plans count too
            for _ in range(7):
                before = table_reads(conn, "memsub.memory_entries")
                listed = rows(conn, "select namespace, key from memsub.memory_list(%s)", [prefix])
                cost = table_reads(conn, "memsub.memory_entries") - before
            assert cost < 100, f"memory_list({prefix}) touched {cost} memory_entries tuples and pages"
        assert sorted(r["key"] for r in listed) == ["language", "root", "style", "tone"]
        assert {r["namespace"] for r in listed} == {f"user:{ALICE}", f"user:{ALICE}:prefs"}


def test_memory_context_reads_only_the_sessions_namespaces(db):
    populate(db)
    with db.connect("app") as conn:
        new_session(conn, "s-cost", project=None, app=None)
        as_user(conn, ALICE, "s-cost")
        for _ in range(7):
            before = table_reads(conn, "memsub.memory_entries")
            context = rows(conn, "select name, source from memsub.memory_context()")
            cost = table_reads(conn, "memsub.memory_entries") - before
        assert cost < 100, f"memory_context touched {cost} memory_entries tuples and pages"
        assert sorted(r["name"] for r in context) == ["prefs:language", "prefs:style", "prefs:tone", "root"]


def test_consolidation_of_a_prefix_reads_only_that_prefix(db):
    populate(db)
    with db.connect("tenant_admin") as conn:
        set_context(conn, TENANT_A, roles=["tenant_admin"])
        for _ in range(7):
            before = table_reads(conn, "memsub.memory_entries")
            rows(conn, "select * from memsub.consolidate_memories('last_write_wins', %s)", [f"user:{ALICE}:prefs"])
            cost = table_reads(conn, "memsub.memory_entries") - before
        assert cost < 100, f"consolidate_memories of one namespace touched {cost} memory_entries tuples and pages"
