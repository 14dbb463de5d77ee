"""Temporary-schema shadowing: an ordinary login must not get its code run by another role.

PostgreSQL looks up relation and type names in the session's temporary schema first unless ``pg_temp`` is named
in ``search_path``, and every login may create temporary objects. The attack: plant, in the login's own temporary
schema, a domain named like every type memsub's functions use (``uuid``, ``text``, ``jsonb`` ...) whose check
calls the attacker's function, and a temporary view (with INSTEAD OF triggers) named like every memsub relation;
then call every memsub function and procedure the login may execute. The attacker's function reports the role it
runs as; it must only ever run as the login itself. Errors from the calls are expected and ignored: the question
is only whose rights the planted code ran with.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from psycopg import sql

from conftest import login_role

from helpers import TENANT_A, set_context, write

ATTACK_MARK = "memsub-attack ran as "
# Type names a function body may use without naming them in its signature (declarations, casts).
COMMON_TYPES = [
    "text", "varchar", "bpchar", "name", "uuid", "json", "jsonb", "bool", "boolean", "int2", "int4", "int8",
    "int", "integer", "smallint", "bigint", "float4", "float8", "real", "numeric", "decimal", "date", "time",
    "timestamp", "timestamptz", "interval", "bytea", "oid", "regclass", "regtype", "regproc", "regprocedure",
    "regnamespace", "regconfig", "tsvector", "tsquery", "tstzrange", "daterange", "int4range", "inet", "xid",
    "vector", "halfvec", "sparsevec", "record",
]


# The routines that cannot pin search_path (procedures that commit).
UNPINNED = {"memsub.refresh_memory_views"}
ALIASES = {"int": "int4", "integer": "int4", "smallint": "int2", "bigint": "int8", "boolean": "bool",
           "real": "float4", "decimal": "numeric"}


@dataclass
class Attack:
    login: str
    ran_as: list[tuple[str, str]] = field(default_factory=list)  # (role, what was being called)
    current: str = "setup"
    called: int = 0
    seen: set[str] = field(default_factory=set)

    def notice(self, diag: psycopg.errors.Diagnostic) -> None:
        message = diag.message_primary or ""
        if message.startswith(ATTACK_MARK):
            self.ran_as.append((message[len(ATTACK_MARK):], self.current))


def _catalog(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """What the attack needs, read before anything is planted (so every type name below is schema-qualified)."""
    conn.execute("set local search_path = ''")
    type_names = [r[0] for r in conn.execute("""
        with used as (
            select unnest(p.proargtypes::oid[] || coalesce(p.proallargtypes, '{}') || p.prorettype) as t
              from pg_catalog.pg_proc p where p.pronamespace = 'memsub'::regnamespace
            union
            select a.atttypid from pg_catalog.pg_attribute a join pg_catalog.pg_class c on c.oid = a.attrelid
             where c.relnamespace = 'memsub'::regnamespace and a.attnum > 0
        )
        select distinct coalesce(e.typname, t.typname)
          from used u join pg_catalog.pg_type t on t.oid = u.t
          left join pg_catalog.pg_type e on e.oid = t.typelem and t.typcategory = 'A'""")]
    bases = dict(conn.execute("""
        select t.typname, pg_catalog.format('%I.%I', n.nspname, t.typname)
          from pg_catalog.pg_type t join pg_catalog.pg_namespace n on n.oid = t.typnamespace
         where t.typtype in ('b', 'c', 'e', 'r', 'd') and t.typcategory <> 'A'
           and (n.nspname in ('pg_catalog', 'memsub') or t.typname in ('vector', 'halfvec', 'sparsevec'))
        """).fetchall())
    relations = {}
    for relname, names, types in conn.execute("""
        select c.relname, array_agg(a.attname::pg_catalog.text order by a.attnum),
               array_agg(pg_catalog.format_type(a.atttypid, a.atttypmod) order by a.attnum)
          from pg_catalog.pg_class c join pg_catalog.pg_attribute a on a.attrelid = c.oid
         where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'f')
           and a.attnum > 0 and not a.attisdropped
         group by c.relname"""):
        relations[relname] = list(zip(names, types, strict=True))
    routines = conn.execute("""
        select p.oid::pg_catalog.regprocedure::pg_catalog.text, p.prokind,
               array(select pg_catalog.format_type(t, null) from pg_catalog.unnest(p.proargtypes) t),
               array(select pg_catalog.format('%I.%I', n.nspname, coalesce(e.typname, y.typname))
                            || case when e.oid is null then '' else '[]' end
                       from pg_catalog.unnest(p.proargtypes) with ordinality a(t, i)
                       join pg_catalog.pg_type y on y.oid = a.t
                       left join pg_catalog.pg_type e on e.oid = y.typelem and y.typcategory = 'A'
                       join pg_catalog.pg_namespace n on n.oid = coalesce(e.typnamespace, y.typnamespace)
                      order by a.i)
          from pg_catalog.pg_proc p
         where p.pronamespace = 'memsub'::regnamespace and p.prokind in ('f', 'p')
           and pg_catalog.has_function_privilege(p.oid, 'execute')
         order by 1""").fetchall()
    dimension = conn.execute("select memsub.vector_dimension()").fetchone()
    conn.execute("set local search_path to default")
    return {"types": sorted(set(type_names) | set(COMMON_TYPES)), "bases": bases, "relations": relations,
            "routines": routines, "dimension": dimension[0] if dimension else 1536}


def _try(conn: psycopg.Connection[Any], statement: sql.Composable | str, params: Any = None) -> bool:
    try:
        with conn.transaction():
            conn.execute(statement, params)
        return True
    except psycopg.Error:
        return False


def _plant(conn: psycopg.Connection[Any], catalog: dict[str, Any]) -> int:
    """The attacker's objects, in the login's own temporary schema. Returns how many shadows were planted."""
    conn.execute(sql.SQL(
        "create function pg_temp.spy(anyelement) returns pg_catalog.bool language plpgsql "
        "set search_path = pg_catalog, pg_temp as $$ begin "
        "raise notice '" + ATTACK_MARK + "%', current_user; return true; end $$"))
    conn.execute(sql.SQL(
        "create function pg_temp.spy_trigger() returns trigger language plpgsql "
        "set search_path = pg_catalog, pg_temp as $$ begin "
        "raise notice '" + ATTACK_MARK + "%', current_user; return null; end $$"))
    planted = 0
    for relname, columns in catalog["relations"].items():
        # A view over the relation's columns: reading it runs the spy; writing it runs the spy trigger.
        select_list = sql.SQL(", ").join(sql.SQL("null::{} as {}").format(sql.SQL(type_name), sql.Identifier(name))
                                         for name, type_name in columns)
        view = sql.Identifier("pg_temp", relname)
        made = _try(conn, sql.SQL("create view {} as select {} where pg_temp.spy(true)").format(view, select_list)) \
            or _try(conn, sql.SQL("create view {} as select null::pg_catalog.text as x where pg_temp.spy(true)")
                    .format(view))
        if made:
            planted += 1
            for event in ("insert", "update", "delete"):
                _try(conn, sql.SQL("create trigger {} instead of {} on {} for each row "
                                   "execute function pg_temp.spy_trigger()").format(
                    sql.Identifier(f"spy_{event}"), sql.SQL(event), view))
    bases: dict[str, str] = catalog["bases"]
    for name in catalog["types"]:
        base = bases.get(ALIASES.get(name, name))
        if base is None or name == "record":
            continue
        if _try(conn, sql.SQL("create domain {} as {} check (pg_temp.spy(value))").format(
                sql.Identifier("pg_temp", name), sql.SQL(base))):
            planted += 1
    return planted


def _value(type_name: str, packet_id: uuid.UUID, dimension: int) -> Any:
    """A plausible argument of a declared type (None when there is no obvious one)."""
    if type_name.endswith("[]"):
        element = _value(type_name[:-2], packet_id, dimension)
        return None if element is None else [element]
    plain = re.sub(r"\(.*\)$", "", type_name).removeprefix("public.")
    return {
        "text": "shared", "uuid": packet_id, "boolean": True, "integer": 1, "bigint": 1, "smallint": 1,
        "double precision": 0.5, "real": 0.5, "numeric": 0.5, "interval": "1 day",
        "timestamp with time zone": "2026-01-01T00:00:00Z", "timestamp without time zone": "2026-01-01T00:00:00",
        "jsonb": json.dumps({"packet_type": "event", "payload": "attack", "tags": ["t"]}), "json": "{}",
        "vector": "[" + ",".join(["0.1"] * dimension) + "]",
    }.get(plain)


def _attack(db: Any, kind: str) -> Attack:
    attack = Attack(login_role(kind))
    with db.connect(kind) as conn:
        conn.add_notice_handler(attack.notice)
        conn.execute("set statement_timeout = '10s'")
        catalog = _catalog(conn)
        conn.commit()
        with db.connect("app") as owner_of_data:  # one real packet, so uuid arguments find a row
            set_context(owner_of_data, TENANT_A)
            packet_id = write(owner_of_data, {"packet_type": "event", "payload": "target"})["packet_id"]
            owner_of_data.commit()
        assert _plant(conn, catalog) > len(catalog["relations"])
        conn.commit()
        # Control: the trap works (in the login's own statements it runs as the login).
        attack.current = "control"
        conn.execute("select 'aaaaaaaa-0000-0000-0000-000000000001'::uuid")
        conn.commit()
        assert (attack.login, "control") in attack.ran_as
        for signature, kind_of_routine, arg_types, qualified_types in catalog["routines"]:
            name = signature.split("(", 1)[0]
            attack.current = signature
            attack.seen.add(signature)
            args = [_value(t, packet_id, catalog["dimension"]) for t in arg_types]
            # Casts name their schema: the login's own statements do not touch its shadows.
            placeholders = sql.SQL(", ").join(sql.SQL("{}::{}").format(sql.Placeholder(), sql.SQL(t))
                                              for t in qualified_types)
            qualified = sql.SQL(".").join(sql.Identifier(part) for part in name.split("."))
            for values in (args, [None] * len(args)):
                attack.called += 1
                if kind_of_routine == "p":
                    conn.commit()
                    conn.autocommit = True  # a procedure may commit: call it outside a transaction block
                    _try(conn, sql.SQL("call {}({})").format(qualified, placeholders), values)
                    conn.autocommit = False
                    continue
                with conn.transaction():
                    _try(conn, "select memsub.set_context(%s::pg_catalog.uuid, null, null, "
                               "array['tenant_admin', 'platform_admin']::pg_catalog.text[])", [TENANT_A])
                    _try(conn, "select memsub.set_context(%s::pg_catalog.uuid)", [TENANT_A])
                    _try(conn, sql.SQL("select {}({})").format(qualified, placeholders), values)
    return attack


@pytest.mark.parametrize("kind", ["app", "analyst", "platform_admin"])
def test_planted_temporary_objects_never_run_as_another_role(db, kind):
    attack = _attack(db, kind)
    assert attack.called > 20
    escalated = sorted({(role, what) for role, what in attack.ran_as if role != attack.login})
    assert escalated == [], (f"{attack.login}'s planted code ran as another role in {len(escalated)} calls, "
                             f"e.g. {escalated[:10]}")
    # A procedure that commits cannot pin search_path: it qualifies every name, so no shadow is even touched.
    unpinned = {what for _, what in attack.ran_as if what.split("(")[0] in UNPINNED}
    assert unpinned == set()
    if kind == "platform_admin":
        assert UNPINNED <= {what.split("(")[0] for what in attack.seen}


def test_every_routine_searches_pg_temp_last(db):
    """Every memsub function and procedure pins a search_path that ends with pg_temp. The one exception PostgreSQL
    forces: a procedure that commits cannot carry a SET clause, so it must be SECURITY INVOKER (it runs with its
    caller's rights only) and schema-qualify every name it uses."""
    with db.connect() as conn:
        rows = conn.execute(r"""
            select p.oid::regprocedure::text, p.prokind, p.prosecdef, p.prosrc ~* '\mcommit\M',
                   (select c from unnest(p.proconfig) c where c like 'search_path=%')
              from pg_proc p
             where p.pronamespace = 'memsub'::regnamespace
             order by 1""").fetchall()
    assert len(rows) > 100
    wrong = []
    for signature, kind, definer, commits, setting in rows:
        if setting is None:
            if not (kind == "p" and commits and not definer):
                wrong.append((signature, "no search_path"))
        elif [s.strip().strip('"') for s in setting.removeprefix("search_path=").split(",")][-1] != "pg_temp":
            wrong.append((signature, setting))
    assert wrong == []
