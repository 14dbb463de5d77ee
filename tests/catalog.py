"""A comparable snapshot of the memsub schema's catalog: tables, columns, types, indexes, constraints,
policies, functions, triggers, views, types and privileges."""

from __future__ import annotations

from typing import Any

import psycopg

CATALOG_QUERIES: dict[str, str] = {
    "tables": """
        select c.relname, c.relkind, c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner)
          from pg_class c where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p', 'v', 'm')
         order by 1""",
    "columns": """
        select c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid), a.attgenerated
          from pg_attribute a
          join pg_class c on c.oid = a.attrelid
          left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
         where c.relnamespace = 'memsub'::regnamespace and a.attnum > 0 and not a.attisdropped
           and c.relkind in ('r', 'p', 'v', 'm', 'c')
         order by 1, 2""",
    "indexes": """
        select indexname, indexdef from pg_indexes where schemaname = 'memsub' order by 1""",
    "constraints": """
        select conrelid::regclass::text, conname, pg_get_constraintdef(oid)
          from pg_constraint where connamespace = 'memsub'::regnamespace order by 1, 2""",
    "policies": """
        select tablename, policyname, permissive, roles::text, cmd, qual, with_check
          from pg_policies where schemaname = 'memsub' order by 1, 2""",
    "functions": """
        select p.oid::regprocedure::text, p.prokind, p.provolatile, p.prosecdef, p.proconfig::text,
               pg_get_userbyid(p.proowner), md5(p.prosrc), pg_get_function_result(p.oid), p.proacl::text
          from pg_proc p where p.pronamespace = 'memsub'::regnamespace order by 1""",
    "triggers": """
        select tgrelid::regclass::text, tgname, pg_get_triggerdef(oid)
          from pg_trigger where not tgisinternal
           and tgrelid in (select oid from pg_class where relnamespace = 'memsub'::regnamespace)
         order by 1, 2""",
    "views": """
        select c.relname, pg_get_viewdef(c.oid)
          from pg_class c where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('v', 'm')
         order by 1""",
    "types": """
        select t.typname, t.typtype, pg_get_userbyid(t.typowner), t.typacl::text
          from pg_type t where t.typnamespace = 'memsub'::regnamespace and t.typtype in ('c', 'e', 'd')
           and (t.typrelid = 0 or (select relkind from pg_class where oid = t.typrelid) = 'c')
         order by 1""",
    "privileges": """
        select c.relname,
               -- NULL means the default privileges: compare what they are, since a restore may spell them out
               coalesce(c.relacl, acldefault(case c.relkind when 'S' then 's' else 'r' end::"char", c.relowner))::text
          from pg_class c
         where c.relnamespace = 'memsub'::regnamespace order by 1""",
    "comments": """
        -- by column name: a restored or upgraded table numbers its columns differently (a dropped column leaves a
        -- gap in the table it was dropped from, not in one created without it)
        select c.relname, a.attname, d.description
          from pg_description d
          join pg_class c on c.oid = d.objoid and d.classoid = 'pg_class'::regclass
          left join pg_attribute a on a.attrelid = c.oid and a.attnum = d.objsubid
         where c.relnamespace = 'memsub'::regnamespace order by 1, 2""",
}


def snapshot(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(dsn) as conn:
        return {name: conn.execute(query).fetchall() for name, query in CATALOG_QUERIES.items()}  # type: ignore[call-overload]
