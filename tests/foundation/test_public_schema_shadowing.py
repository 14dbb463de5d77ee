"""Schema public: memsub's vector functions search it for pgvector, so no untrusted role may create objects there.

The functions that handle vectors pin ``search_path = pg_catalog, memsub, public, pg_temp``. PostgreSQL picks, among
the functions and operators of every schema on the path, the one whose argument types match exactly, wherever it
is: a login that may create in ``public`` can add an exact match for a call that pg_catalog answers only through a
cast or a polymorphic argument, and memsub's SECURITY DEFINER functions then run it as their owner. PostgreSQL 14
and older granted that privilege to PUBLIC (a database upgraded from them keeps the grant), and from 15 on the
database's owner holds it: a login in ``memsub_app`` that owns its database, or one granted it, reaches every
tenant. ``memsub migrate`` (its preflight) therefore refuses such a database, and ``memsub verify`` names the roles.
"""

from __future__ import annotations

from typing import Any

import psycopg

from conftest import login_role
from memsub.migrator import Migrator
from memsub.preflight import run_checks

from helpers import TENANT_A, set_context, write

MARK = "planted code ran as "


def _plant_and_write(db: Any) -> list[str]:
    """As the application login: an exact match for a call inside write_packet, planted in public, then a packet
    written. Returns the roles the planted code ran as."""
    ran_as: list[str] = []

    def notice(diag: psycopg.errors.Diagnostic) -> None:
        if (diag.message_primary or "").startswith(MARK):
            ran_as.append((diag.message_primary or "")[len(MARK):])

    with db.connect("app") as app:
        app.add_notice_handler(notice)
        app.execute("create function public.cardinality(pg_catalog.uuid[]) returns pg_catalog.int4 "
                    "language plpgsql set search_path = pg_catalog, pg_temp as $$ begin "
                    "raise notice '" + MARK + "%', current_user; return pg_catalog.cardinality($1); end $$")
        set_context(app, TENANT_A)
        write(app, {"packet_type": "event", "payload": "hello"})
        app.rollback()
    return ran_as


def test_a_role_that_may_create_in_public_is_refused_by_the_preflight_and_named_by_verify(db):
    app = login_role("app")
    with db.connect() as admin:
        admin.execute(f"grant create on schema public to {app}")  # as PostgreSQL 14 granted it to PUBLIC
        admin.commit()
    # Why it matters: the application login's function runs as memsub's owner, inside write_packet.
    assert "memsub_owner" in _plant_and_write(db)
    with db.connect() as conn:
        failed = [c for c in run_checks(conn, []) if not c.ok]
    assert [c.what for c in failed] == ["schema public: only trusted roles may create objects in it"], failed
    assert f"revoke create on schema public from {app}" in failed[0].detail
    problems = Migrator(db.dsn()).verify()
    assert [p for p in problems if p.startswith("unsafe: schema public")] == [
        f"unsafe: schema public: {app} may create objects in it, and memsub's functions search it (for pgvector): "
        f"what such a role plants there runs as memsub's owner (revoke create on schema public from {app})"]

    with db.connect() as admin:
        admin.execute(f"revoke create on schema public from {app}")
        admin.execute("grant create on schema public to public")  # PostgreSQL 14's default
        admin.commit()
        failed = [c for c in run_checks(admin, []) if not c.ok]
    assert [c.what for c in failed] == ["schema public: only trusted roles may create objects in it"], failed
    assert "revoke create on schema public from public" in failed[0].detail
    assert any(p.startswith("unsafe: schema public: PUBLIC may create") for p in Migrator(db.dsn()).verify())

    with db.connect() as admin:
        admin.execute("revoke create on schema public from public")
        admin.commit()
        assert [c for c in run_checks(admin, []) if not c.ok] == []
    assert Migrator(db.dsn()).verify() == []


def test_the_database_owner_counts_as_a_role_that_may_create_in_public(db):
    """From PostgreSQL 15 on, public belongs to pg_database_owner: an application login that owns its database
    may create there."""
    app = login_role("app")
    with db.connect(autocommit=True) as admin:
        admin.execute(f'alter database "{db.name}" owner to {app}')
    try:
        assert any(p.startswith(f"unsafe: schema public: {app} may create")
                   for p in Migrator(db.dsn()).verify())
    finally:
        with db.connect(autocommit=True) as admin:
            admin.execute(f'alter database "{db.name}" owner to current_user')
    assert Migrator(db.dsn()).verify() == []
