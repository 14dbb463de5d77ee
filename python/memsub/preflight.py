"""Preflight: everything installing or upgrading memsub needs, checked before the first change.

``memsub migrate`` runs it before applying anything and refuses (exit 5) with the whole list of what is missing;
``memsub preflight`` prints the same checks without changing anything. What it checks:

- the server version (PostgreSQL 15 or newer);
- ``CREATE`` on the database, while the ``memsub`` schema does not exist yet;
- every extension the pending migrations create: available on the server (``pg_available_extensions``), and
  creatable by this role (a superuser, or a trusted extension and ``CREATE`` on the database) unless it is
  already installed in the database; ``vector``, whose type and operators memsub's SQL names without a schema
  (its functions' search_path ends in ``public``), installed in schema ``public`` if it is installed already;
- schema ``public``, while an extension is still to be created: the migrator creates them there;
- ``CREATEROLE`` while the pending migrations create or comment memsub's roles;
- memsub's group roles: a missing role needs ``CREATEROLE`` (and ``BYPASSRLS`` for the two owner roles that
  bypass row-level security; the migrator's session sets ``createrole_self_grant = 'set, inherit'`` so the
  creator may own objects as them, PostgreSQL 16+); an existing role needs to have been granted to the
  installer ``WITH ADMIN OPTION`` (and ``SET`` for the owner roles);
- that no role but a superuser, memsub's owner (and its members) and the installer may create objects in schema
  ``public`` (:func:`public_schema_creators`).

A superuser passes every privilege check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from memsub.schema_files import Migration

MIN_SERVER_VERSION = 150000
UTF8_ADVICE = ("memsub installs into a database created with encoding 'UTF8' (create database ... encoding 'UTF8' "
               "template template0)")
"""What to do about a database in another encoding (the preflight's and the psql script's refusal)."""

# memsub's cluster-wide group roles: name -> (created with BYPASSRLS, objects are owned by it)
ROLES: dict[str, tuple[bool, bool]] = {
    "memsub_owner": (False, True),
    "memsub_app": (False, False),
    "memsub_tenant_admin": (False, False),
    "memsub_platform_admin": (False, False),
    "memsub_analyst": (False, False),
    "memsub_view_owner": (True, True),
    "memsub_retrieval_owner": (True, True),
    "memsub_expiry_owner": (False, True),
}

# Extensions whose types, functions and operators memsub's SQL names without a schema: they must live in schema
# public, the last schema of every memsub function's search_path (the migrator creates them there).
EXTENSIONS_IN_PUBLIC = frozenset({"vector"})

_EXTENSION = re.compile(r"\bcreate\s+extension\s+(?:if\s+not\s+exists\s+)?\"?([a-z0-9_]+)\"?", re.IGNORECASE)


def required_extensions(migrations: Iterable[Migration]) -> list[str]:
    """Extensions created by these migrations, in first-use order."""
    names: list[str] = []
    for migration in migrations:
        for name in _EXTENSION.findall(migration.sql):
            if name.lower() not in names:
                names.append(name.lower())
    return names


@dataclass(frozen=True)
class Check:
    what: str
    ok: bool
    detail: str = ""

    def line(self) -> str:
        return f"{'ok' if self.ok else 'MISSING'}  {self.what}" + (f": {self.detail}" if self.detail else "")


def _one(conn: psycopg.Connection[Any], query: str, params: Sequence[Any] = ()) -> Any:
    row = conn.execute(query.encode(), params).fetchone()
    assert row is not None
    return row[0] if not isinstance(row, dict) else next(iter(row.values()))


def public_schema_creators(conn: psycopg.Connection[Any], installer: str | None = None) -> list[str]:
    """Who may create objects in schema ``public`` besides superusers, ``memsub_owner`` and its members, and
    ``installer``: ``["PUBLIC"]`` when PUBLIC holds the privilege, otherwise the roles, by name (empty: none).

    memsub's vector functions search ``public`` for pgvector (``search_path = pg_catalog, memsub, public,
    pg_temp``). PostgreSQL picks the exact match of a function or operator call in any schema of the path, so an
    exact match planted in ``public`` for a call that pg_catalog answers through a cast or a polymorphic argument
    runs inside memsub's SECURITY DEFINER functions as their owner. PostgreSQL 14 and older granted CREATE on
    ``public`` to PUBLIC (databases upgraded from them keep it); from 15 on, the database's owner holds it."""
    rows = conn.cursor(row_factory=tuple_row).execute("""
        select 'PUBLIC' from pg_catalog.pg_namespace n, pg_catalog.aclexplode(n.nspacl) a
         where n.nspname = 'public' and a.grantee = 0 and a.privilege_type = 'CREATE'
        union all
        (select r.rolname::text from pg_catalog.pg_namespace n, pg_catalog.pg_roles r
          where n.nspname = 'public' and not r.rolsuper and r.rolname !~ '^pg_'
            and r.rolname is distinct from %s
            and pg_catalog.has_schema_privilege(r.oid, n.oid, 'CREATE')
            and (pg_catalog.to_regrole('memsub_owner') is null
                 or not pg_catalog.pg_has_role(r.oid, 'memsub_owner', 'MEMBER'))
          order by 1)""", [installer]).fetchall()
    names = [str(name) for (name,) in rows]
    return ["PUBLIC"] if "PUBLIC" in names else names


PUBLIC_SCHEMA_CHECK = "schema public: only trusted roles may create objects in it"


ROW_SECURITY_CHECK = "row_security not turned off for memsub's logins"
CLIENT_ROLES = ("memsub_app", "memsub_tenant_admin", "memsub_platform_admin", "memsub_analyst")


def row_security_off(conn: psycopg.Connection[Any]) -> list[str]:
    """Where row_security is turned off for the logins of memsub's client roles in this database: the database
    itself or every database (for every login), or a login in one of those roles (``alter role ... set``, for this
    database or every one). memsub keeps tenants apart by row-level security and refuses such a session's context
    (memsub.set_context, 42501 naming row_security); a login outside memsub's roles, a backup tool's, may keep it."""
    rows = conn.cursor(row_factory=tuple_row).execute("""
        select case when s.setrole = 0 and s.setdatabase = 0 then 'every database'
                    when s.setrole = 0 then 'database ' || pg_catalog.current_database()
                    else 'login ' || r.rolname || case when s.setdatabase = 0 then ' (every database)' else '' end
               end
          from pg_catalog.pg_db_role_setting s
          left join pg_catalog.pg_roles r on r.oid = s.setrole
         where s.setdatabase in (0, (select d.oid from pg_catalog.pg_database d
                                      where d.datname = pg_catalog.current_database()))
           and exists (select from pg_catalog.unnest(s.setconfig) c
                        where pg_catalog.lower(pg_catalog.split_part(c, '=', 1)) = 'row_security'
                          and pg_catalog.lower(pg_catalog.substr(c, pg_catalog.strpos(c, '=') + 1))
                              in ('off', 'of', 'false', 'fals', 'fal', 'fa', 'f', 'no', 'n', '0'))
           and (s.setrole = 0
                or exists (select from pg_catalog.unnest(%s::text[]) g(name)
                            where pg_catalog.to_regrole(g.name) is not null
                              and pg_catalog.pg_has_role(s.setrole, pg_catalog.to_regrole(g.name), 'MEMBER')))
         order by 1""", [list(CLIENT_ROLES)]).fetchall()
    return [str(place) for (place,) in rows]


def run_checks(conn: psycopg.Connection[Any], pending: Sequence[Migration]) -> list[Check]:
    """Every check, passed or not; reads the catalogs only."""
    checks: list[Check] = []
    version = int(_one(conn, "select current_setting('server_version_num')::integer"))
    checks.append(Check(f"PostgreSQL 15 or newer (server {_one(conn, 'show server_version')})",
                        version >= MIN_SERVER_VERSION))
    # Entity names and document paths are matched in one Unicode composition (memsub.normalize_text and the
    # document functions call normalize(), NFC), which PostgreSQL computes only in a UTF8 database.
    encoding = str(_one(conn, "show server_encoding"))
    checks.append(Check(f"database encoding UTF8 (this database: {encoding})", encoding == "UTF8",
                        "" if encoding == "UTF8" else UTF8_ADVICE))
    superuser = bool(_one(conn, "select rolsuper from pg_roles where rolname = current_user"))
    createrole = bool(_one(conn, "select rolcreaterole from pg_roles where rolname = current_user"))
    bypassrls = bool(_one(conn, "select rolbypassrls from pg_roles where rolname = current_user"))
    create_on_db = bool(_one(conn, "select has_database_privilege(current_database(), 'CREATE')"))
    schema_exists = bool(_one(conn, "select exists (select from pg_namespace where nspname = 'memsub')"))
    user = str(_one(conn, "select current_user"))
    if not schema_exists:
        checks.append(Check(f"CREATE on database {_one(conn, 'select current_database()')}",
                            superuser or create_on_db, "" if superuser or create_on_db else
                            f"grant create on database {_one(conn, 'select current_database()')} to {user}"))

    # Each extension's schema, None while it is not installed.
    installed_in: dict[str, str | None] = {
        name: _one(conn, "select (select extnamespace::regnamespace::text from pg_extension where extname = %s)",
                   [name])
        for name in required_extensions(pending)}
    to_create = [name for name, where in installed_in.items() if where is None]
    if to_create and not _one(conn, "select exists (select from pg_namespace where nspname = 'public')"):
        checks.append(Check("schema public", False,
                            f"does not exist, and the migrator creates {', '.join(to_create)} in it: "
                            "create schema public"))
    for name, where in installed_in.items():
        if where is not None:
            if name in EXTENSIONS_IN_PUBLIC and where != "public":
                checks.append(Check(f"extension {name}", False,
                                    f"installed in schema {where}, and memsub's functions look for it in public: "
                                    f"alter extension {name} set schema public"))
            else:
                checks.append(Check(f"extension {name}", True, "installed"))
            continue
        trusted = _one(conn, "select bool_or(trusted) from pg_available_extension_versions where name = %s", [name])
        if trusted is None:
            checks.append(Check(f"extension {name}", False,
                                "not available on this server (install its package, e.g. postgresql-NN-pgvector "
                                "for vector, or enable it in the managed service's extension list)"))
        elif superuser or (trusted and create_on_db):
            checks.append(Check(f"extension {name}", True, "available"))
        else:
            checks.append(Check(f"extension {name}", False,
                                f"available but {user} may not create it: a superuser (or the service's extension "
                                f"admin) runs once in this database: create extension {name}"))

    # memsub migrate sets createrole_self_grant = 'set, inherit' for its session (PostgreSQL 16+), so a role it
    # creates can own objects; on 15 only a superuser (or a DBA pre-creating and granting the roles) can.
    will_be_member = version >= 160000
    touches_roles = any(re.search(r"\b(create|comment\s+on)\s+role\b", m.sql, re.IGNORECASE) for m in pending)
    if touches_roles and not superuser:
        checks.append(Check("CREATEROLE", createrole, "" if createrole else
                            f"alter role {user} createrole (memsub creates and comments its group roles)"))
    for role, (needs_bypassrls, owns_objects) in ROLES.items():
        exists = bool(_one(conn, "select exists (select from pg_roles where rolname = %s)", [role]))
        if superuser:
            continue
        problems: list[str] = []
        if exists:
            if not _one(conn, "select pg_has_role(current_user, %s, 'MEMBER WITH ADMIN OPTION')", [role]):
                problems.append(f"grant {role} to {user} with admin option")
            if owns_objects and not _one(conn, "select pg_has_role(current_user, %s, 'SET')", [role]):
                problems.append(f"grant {role} to {user} with set true")
        else:
            if needs_bypassrls and not bypassrls:
                problems.append(f"{user} needs BYPASSRLS to create it with BYPASSRLS")
            if owns_objects and not will_be_member:
                problems.append(f"PostgreSQL 15: a superuser creates {role} and grants it to {user} "
                                "with admin option (its creator could not own objects as it)")
        checks.append(Check(f"role {role}", not problems, "; ".join(problems) or ("exists" if exists else
                                                                                     "will be created")))
    creators = public_schema_creators(conn, user)
    checks.append(Check(PUBLIC_SCHEMA_CHECK, not creators, "" if not creators else
                        f"{', '.join(creators)} may: memsub's functions search public for pgvector, so what such a "
                        f"role plants there would run as memsub's owner (revoke create on schema public from "
                        f"{', '.join(c.lower() for c in creators)}, or give the schema a trusted owner)"))
    turned_off = row_security_off(conn)
    checks.append(Check(ROW_SECURITY_CHECK, not turned_off, "" if not turned_off else
                        f"off for {', '.join(turned_off)}: memsub keeps tenants apart by row-level security and "
                        "refuses such a session's context (reset it: alter database ... reset row_security, "
                        "alter role ... in database ... reset row_security)"))
    return checks


def missing(conn: psycopg.Connection[Any], pending: Sequence[Migration]) -> list[str]:
    """One line per failed check (empty: nothing is missing)."""
    return [f"{c.what}: {c.detail}" if c.detail else c.what for c in run_checks(conn, pending) if not c.ok]
