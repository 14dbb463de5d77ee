"""memsub.erase_tenant: every row of one tenant goes, from every table that has a tenant_id column (found in the
catalog, so a table added later without coverage fails here), and no row of any other tenant does.

The tenants are filled through every area by the world of test_tenant_world.py (written as the application role
through memsub's functions), plus a login binding each. Only a platform_admin context may erase; bad input is
refused naming its field, with nothing deleted.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg import sql
from test_tenant_world import ORG, USER, build_world, counts

from helpers import TENANT_A, TENANT_B, expect_error, set_context, write


def tenant_tables(conn: psycopg.Connection[Any]) -> list[str]:
    """Every memsub table with a tenant_id column (partitions are counted through their table)."""
    return [str(r[0]) for r in conn.execute("""
        select c.relname from pg_class c
          join pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped
         where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
         order by 1""")]


def bindings(conn: psycopg.Connection[Any], tenant: uuid.UUID) -> int:
    row = conn.execute("select count(*) from memsub.login_bindings where bound_tenant_id = %s", [tenant]).fetchone()
    assert row is not None
    return int(row[0])


def erase(db: Any, tenant: uuid.UUID | None, confirm: str | None) -> dict[str, int]:
    with db.connect("platform_admin") as conn:
        set_context(conn, None, roles=["platform_admin"])
        rows = conn.execute("select table_name, deleted from memsub.erase_tenant(%s, %s)", [tenant, confirm])
        erased = {str(t): int(n) for t, n in rows.fetchall()}
        conn.commit()
    return erased


def test_erasure_removes_every_row_of_the_tenant_and_no_other(db):
    with db.connect() as conn:
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
    with db.connect("app") as conn:
        for tenant in (TENANT_A, TENANT_B):
            build_world(conn, tenant, ORG[tenant], USER[tenant], dimension)
        # An expired packet not purged yet, with what it fanned out: invisible to every reader, erased all the same.
        set_context(conn, TENANT_A, ORG[TENANT_A], USER[TENANT_A])
        write(conn, {"packet_type": "event", "payload": {"text": "old"}, "ttl": "2999-01-01T00:00:00Z",
                     "memory": {"facts": [{"subject": "old", "predicate": "is", "object": "gone"}]}})
        conn.commit()
    with db.connect() as conn:  # its ttl passes
        conn.execute("alter table memsub.packet_store disable trigger packet_store_immutable")
        for table in ("packet_store", "knowledge_facts"):
            updated = conn.execute(sql.SQL("update memsub.{} set ttl = '2001-01-01' where ttl = '2999-01-01'")
                                   .format(sql.Identifier(table)))
            assert updated.rowcount == 1, table
        conn.execute("alter table memsub.packet_store enable trigger packet_store_immutable")
        conn.commit()
    with db.connect("platform_admin") as conn:
        set_context(conn, None, roles=["platform_admin"])
        for tenant in (TENANT_A, TENANT_B):
            conn.execute("select memsub.bind_login('memsub_test_nobody', %s)", [tenant])
        conn.commit()
    with db.connect() as conn:
        tables = tenant_tables(conn)
        before_a = counts(conn, tables, f"tenant_id = '{TENANT_A}'")
        before_b = counts(conn, tables, f"tenant_id = '{TENANT_B}'")
        # Memory the world's writes left in the lock table, of both tenants.
        assert conn.execute("select count(*) from memsub.maintenance_lock where task <> 'maintain'").fetchone()[0]
        maintain_locks = conn.execute("select task, lock_key from memsub.maintenance_lock where task = 'maintain' "
                                      "order by 2").fetchall()
    assert [t for t in tables if before_a[t] == 0] == [], "tables the world does not fill"

    erased = erase(db, TENANT_A, str(TENANT_A))

    with db.connect() as conn:
        assert counts(conn, tables, f"tenant_id = '{TENANT_A}'") == dict.fromkeys(tables, 0)
        assert counts(conn, tables, f"tenant_id = '{TENANT_B}'") == before_b
        assert (bindings(conn, TENANT_A), bindings(conn, TENANT_B)) == (0, 1)
        assert conn.execute("select task, lock_key from memsub.maintenance_lock order by 2").fetchall() \
            == maintain_locks
    assert {t: erased[t] for t in tables} == before_a  # each table's own rows, none by cascade
    assert erased["login_bindings"] == 1
    assert set(erased) == set(tables) | {"login_bindings", "maintenance_lock"}

    # The views keep the tenant's aggregates until they are refreshed; then they hold none of its rows.
    with db.connect(autocommit=True) as conn:
        conn.execute("call memsub.refresh_memory_views(null)")
        views = [str(r[0]) for r in conn.execute("select matviewname from pg_matviews where schemaname = 'memsub'")]
        assert views
        assert counts(conn, views, f"tenant_id = '{TENANT_A}'") == dict.fromkeys(views, 0)

    # Erasing again finds nothing; the other tenant still writes and reads.
    assert {t: n for t, n in erase(db, TENANT_A, str(TENANT_A)).items() if t != "maintenance_lock"} \
        == dict.fromkeys(set(tables) | {"login_bindings"}, 0)
    with db.connect("app") as conn:
        set_context(conn, TENANT_B, ORG[TENANT_B], USER[TENANT_B])
        write(conn, {"packet_type": "note", "payload": "still here"})
        conn.commit()


def _one_packet_each(db: Any) -> None:
    with db.connect("app") as conn:
        for tenant in (TENANT_A, TENANT_B):
            set_context(conn, tenant)
            write(conn, {"packet_type": "note", "payload": "keep me"})
            conn.commit()


def _packets(db: Any) -> list[tuple[Any, ...]]:
    with db.connect() as conn:
        return conn.execute("select tenant_id, count(*) from memsub.packet_store group by 1 order by 1").fetchall()


@pytest.mark.parametrize(("kind", "roles"), [("app", []), ("tenant_admin", ["tenant_admin"]), ("analyst", []),
                                             ("platform_admin", [])])
def test_only_a_platform_admin_context_erases(db, kind, roles):
    _one_packet_each(db)
    before = _packets(db)
    with db.connect(kind) as conn:
        set_context(conn, TENANT_A, roles=roles)
        expect_error(conn, "42501", None, "select * from memsub.erase_tenant(%s, %s)", [TENANT_A, str(TENANT_A)])
    assert _packets(db) == before


@pytest.mark.parametrize(("tenant", "confirm", "sqlstate", "field"), [
    (None, None, "22004", "tenant_id"),
    (None, "", "22004", "tenant_id"),
    (TENANT_A, None, "22023", "confirm"),
    (TENANT_A, "", "22023", "confirm"),
    (TENANT_A, str(TENANT_B), "22023", "confirm"),
    (TENANT_A, str(TENANT_A).upper(), "22023", "confirm"),
    (TENANT_A, f" {TENANT_A}", "22023", "confirm"),
])
def test_bad_input_is_refused_naming_the_field_and_deletes_nothing(db, tenant, confirm, sqlstate, field):
    _one_packet_each(db)
    before = _packets(db)
    with db.connect("platform_admin") as conn:
        set_context(conn, None, roles=["platform_admin"])
        error = expect_error(conn, sqlstate, field, "select * from memsub.erase_tenant(%s, %s)", [tenant, confirm])
    assert field in str(error)
    assert _packets(db) == before


def test_the_erasure_setting_alone_deletes_no_packet(db):
    """The packet guard lets an unexpired packet go only to erase_tenant's owner: the table's own owner, with the
    erasure setting naming the tenant, is still refused."""
    _one_packet_each(db)
    with db.connect() as conn:
        conn.execute("set role memsub_owner")
        conn.execute("select set_config('memsub.erasing_tenant', %s, false)", [str(TENANT_A)])
        conn.execute("select memsub.set_context(null, null, null, array['platform_admin'], null)")
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute(sql.SQL("delete from memsub.packet_store where tenant_id = %s"), [TENANT_A])


def test_every_column_naming_a_tenant_is_one_the_erasure_reads(db):
    """erase_tenant finds the tenant's rows by tenant_id, and the login bindings by bound_tenant_id: a table that
    names a tenant in another column would keep the tenant's rows. The record of an erasure keeps the erased
    tenant's id (and only its id and row counts) on purpose."""
    with db.connect() as conn:
        columns = conn.execute("""
            select c.relname || '.' || a.attname from pg_class c
              join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
             where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
               and a.attname ~ 'tenant' and a.attname <> 'tenant_id'
             order by 1""").fetchall()
    assert [c for (c,) in columns] == ["login_bindings.bound_tenant_id", "tenant_erasures.erased_tenant_id"]


def test_an_erasure_leaves_a_record_only_platform_admins_read(db):
    """An erasure removes the tenant's audit rows with the rest: what stays is one row of memsub.tenant_erasures
    naming the tenant, the login that erased it, when, and how many rows each table lost. Only a platform admin
    reads it; no client role may write or change it."""
    _one_packet_each(db)
    erased = erase(db, TENANT_A, str(TENANT_A))
    with db.connect("platform_admin") as conn:
        set_context(conn, None, roles=["platform_admin"])
        records = conn.execute("select erased_tenant_id, erased_by, erased_at <= now(), deleted_rows "
                               "from memsub.tenant_erasures").fetchall()
        login = conn.execute("select session_user").fetchone()[0]
    assert records == [(TENANT_A, login, True, erased)]
    assert erased["packet_store"] == 1
    for kind in ("app", "tenant_admin", "analyst"):
        with db.connect(kind) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select count(*) from memsub.tenant_erasures")
    with db.connect("platform_admin") as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("delete from memsub.tenant_erasures")
