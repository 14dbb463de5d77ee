"""Compares the installed ``memsub`` schema, catalog entry by catalog entry, with what the shipped SQL produces.

A *fingerprint* is read from ``pg_catalog`` for one database: every object of schema ``memsub`` (tables,
columns, views, sequences, indexes, constraints, policies, triggers, rules, functions, types, other objects), the
schema itself, its default privileges, and the seven ``memsub_*`` roles. Each object maps to the attributes that
matter for security and correctness: definitions as PostgreSQL deparses them, function bodies and their
security, volatility, configuration and owner, row-level security flags, owners and privileges.

Values that differ between correct installations are normalized: OIDs never appear, privileges are listed
without their grantor, the schemas of the extensions memsub uses are on the search path while reading (so their
types print unqualified), the installation's vector dimension prints as ``vector(N)`` (``halfvec(N)`` in the
keys of the HNSW graphs), and the ADMIN-only memberships through which a login with CREATEROLE (a role's creator,
a non-superuser installer) administers the memsub roles are left out.

The expected fingerprint (the *reference*) comes from one of three places, see ``docs/security.md``:
a clean installation the caller names (``--reference-dsn``), a scratch database built from the shipped SQL on
the same server, or the snapshot shipped in this package (``catalog_snapshot.json``), which is taken from a fresh
installation and kept current by a test.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row, tuple_row

from memsub.connection import OUTPUT_FORMATS, first_line, lift_run_timeouts, output_formats, refuse_on_standby
from memsub.schema_files import Repeatable, split_statements

if TYPE_CHECKING:
    from memsub.migrator import Migrator

SNAPSHOT_PATH = Path(__file__).resolve().parent / "catalog_snapshot.json"
SNAPSHOT_FORMAT = 1

# The roles the migrations create. Role attributes and memberships are cluster-wide, so a scratch database on the
# same server would share any tampering with them: they are always compared with the shipped snapshot.
MEMSUB_ROLES = ("memsub_owner", "memsub_app", "memsub_tenant_admin", "memsub_platform_admin", "memsub_analyst",
                "memsub_view_owner", "memsub_retrieval_owner", "memsub_expiry_owner")
# Roles nobody may be granted (they own objects or bypass row-level security): their members are compared too.
OWNER_ROLES = ("memsub_owner", "memsub_view_owner", "memsub_retrieval_owner", "memsub_expiry_owner")
EXTENSIONS = ("vector", "btree_gin", "btree_gist")

Attributes = dict[str, str]
Fingerprint = dict[str, tuple[str, Attributes]]  # object -> (kind, attributes)

_ACL = """(select coalesce(string_agg(a.grantee || ':' || a.privs, ' ' order by a.grantee), 'none')
             from (select case x.grantee when 0 then 'PUBLIC' else pg_get_userbyid(x.grantee) end as grantee,
                          string_agg(x.privilege_type || case when x.is_grantable then '*' else '' end, ','
                                     order by x.privilege_type) as privs
                     from aclexplode({acl}) x group by 1) a)"""


def _acl(expression: str, default: str | None = None) -> str:
    """Privileges of an ACL column, without grantors: ``grantee:PRIV,PRIV* ...`` (``*``: with grant option).
    A NULL ACL means the built-in default (``default``, e.g. ``acldefault('f', proowner)``, which for functions
    includes EXECUTE for PUBLIC), so an ACL reset to the default compares equal to one never changed."""
    acl = f"coalesce({expression}, {default})" if default else expression
    return _ACL.format(acl=acl)


_NSPACL_DEFAULT = "acldefault('n', n.nspowner)"
_PROACL_DEFAULT = "acldefault('f', p.proowner)"
_TYPACL_DEFAULT = "acldefault('T', t.typowner)"
_RELACL_DEFAULT = "acldefault(case when c.relkind = 'S' then 's' else 'r' end::\"char\", c.relowner)"
RELKINDS = "case c.relkind when 'r' then 'table' when 'p' then 'table' when 'v' then 'view' " \
           "when 'm' then 'materialized view' when 'S' then 'sequence' when 'f' then 'foreign table' " \
           "when 'c' then 'type' else c.relkind::text end"

# Other kinds of objects in the schema, named schema-qualified: (kind, catalog, column prefix of its name and
# namespace columns, e.g. coll: collname, collnamespace). Operators are named by regoperator.
_OTHER_KINDS = (("collation", "pg_collation", "coll"), ("conversion", "pg_conversion", "con"),
                ("operator class", "pg_opclass", "opc"), ("operator family", "pg_opfamily", "opf"),
                ("text search configuration", "pg_ts_config", "cfg"), ("text search dictionary", "pg_ts_dict", "dict"),
                ("statistics", "pg_statistic_ext", "stx"))
_OTHER_OBJECTS = " union all ".join([
    "select 'operator' as kind, o.oid::regoperator::text as name from pg_operator o "
    "where o.oprnamespace = 'memsub'::regnamespace",
    *(f"select '{kind}', 'memsub.' || quote_ident({prefix}name) from {catalog} "  # noqa: S608
      f"where {prefix}namespace = 'memsub'::regnamespace" for kind, catalog, prefix in _OTHER_KINDS)])

QUERIES: dict[str, str] = {
    "schema": f"""
        select 'schema' as kind, 'schema memsub' as object,
               json_build_object('owner', pg_get_userbyid(n.nspowner),
                                 'privileges', {_acl('n.nspacl', _NSPACL_DEFAULT)}) as attrs
          from pg_namespace n where n.nspname = 'memsub'""",  # noqa: S608 - constant catalog fragments
    "default privileges": f"""
        select 'default privileges' as kind,
               'default privileges of ' || pg_get_userbyid(d.defaclrole) || ' on '
               || case d.defaclobjtype when 'r' then 'tables' when 'S' then 'sequences' when 'f' then 'functions'
                                       when 'T' then 'types' else d.defaclobjtype::text end
               || ' in ' || coalesce(d.defaclnamespace::regnamespace::text, 'every schema') as object,
               json_build_object('privileges', {_acl('d.defaclacl')}) as attrs
          from pg_default_acl d
         where d.defaclnamespace = 'memsub'::regnamespace
            or pg_get_userbyid(d.defaclrole) like 'memsub\\_%'""",  # noqa: S608 - constant catalog fragments
    "relations": f"""
        select {RELKINDS} as kind, ({RELKINDS}) || ' ' || c.oid::regclass::text as object,
               json_build_object(
                   'owner', pg_get_userbyid(c.relowner),
                   'privileges', {_acl('c.relacl', _RELACL_DEFAULT)},
                   'row level security', case when c.relrowsecurity then 'enabled' else 'disabled' end,
                   'forced row level security', case when c.relforcerowsecurity then 'forced' else 'not forced' end,
                   'persistence', c.relpersistence::text,
                   'options', coalesce(array_to_string(c.reloptions, ', '), ''),
                   'definition', case when c.relkind in ('v', 'm') then pg_get_viewdef(c.oid) else '' end,
                   -- A parent's readers read its children's rows, under the parent's privileges and policies.
                   'parents', coalesce((select string_agg(quote_ident(pn.nspname) || '.' || quote_ident(p.relname)
                                                          || case when c.relispartition
                                                                  then ' ' || pg_get_expr(c.relpartbound, c.oid)
                                                                  else '' end, ', ' order by h.inhseqno)
                                          from pg_inherits h join pg_class p on p.oid = h.inhparent
                                          join pg_namespace pn on pn.oid = p.relnamespace
                                         where h.inhrelid = c.oid), '')
               ) as attrs
          from pg_class c
         where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')""",  # noqa: S608 - constant catalog fragments
    "columns": f"""
        select 'column' as kind, 'column ' || c.oid::regclass::text || '.' || quote_ident(a.attname) as object,
               json_build_object(
                   'type', format_type(a.atttypid, a.atttypmod),
                   'not null', a.attnotnull::text,
                   'default', coalesce(pg_get_expr(d.adbin, d.adrelid), ''),
                   'generated', a.attgenerated::text,
                   'identity', a.attidentity::text,
                   'collation', coalesce((select co.collname from pg_collation co
                                           where co.oid = a.attcollation and a.attcollation <> 0
                                             and a.attcollation <> (select typcollation from pg_type
                                                                     where oid = a.atttypid)), ''),
                   'privileges', {_acl('a.attacl')}
               ) as attrs
          from pg_attribute a
          join pg_class c on c.oid = a.attrelid
          left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
         where c.relnamespace = 'memsub'::regnamespace and a.attnum > 0 and not a.attisdropped
           and c.relkind in ('r', 'p', 'v', 'm', 'f')""",  # noqa: S608 - constant catalog fragments
    "indexes": """
        select 'index' as kind, 'index ' || i.indexrelid::regclass::text as object,
               -- An HNSW index's build parameters (m, ef_construction) are the operator's to tune
               -- (memsub vector-index rebuild): they change the graph's quality, never what is indexed.
               json_build_object('definition', case when c.relam = (select oid from pg_am where amname = 'hnsw')
                                                    then regexp_replace(pg_get_indexdef(i.indexrelid),
                                                         ' WITH \\((((m|ef_construction)=''\\d+'')(, )?)+\\)', '')
                                                    else pg_get_indexdef(i.indexrelid) end,
                                 'valid', (i.indisvalid and i.indisready)::text,
                                 'constraint', coalesce((select conname from pg_constraint
                                                          where conindid = i.indexrelid
                                                            and conrelid = i.indrelid
                                                            and contype in ('p', 'u', 'x')), ''),
                                 -- the index of a partitioned table this one is the part of on a partition
                                 'partition of', coalesce((select h.inhparent::regclass::text from pg_inherits h
                                                            where h.inhrelid = i.indexrelid), '')) as attrs
          from pg_index i join pg_class c on c.oid = i.indexrelid
         where c.relnamespace = 'memsub'::regnamespace""",
    "constraints": """
        select 'constraint' as kind,
               'constraint ' || quote_ident(con.conname) || ' on '
               || coalesce(nullif(con.conrelid, 0)::regclass::text, con.contypid::regtype::text) as object,
               json_build_object(
                   'definition', pg_get_constraintdef(con.oid),
                   -- the triggers that enforce a foreign key or a deferrable unique or exclusion constraint
                   'internal triggers', coalesce((
                       select string_agg(distinct s.state, ', ' order by s.state)
                         from (select case t.tgenabled when 'O' then 'enabled' when 'D' then 'disabled'
                                                       when 'R' then 'replica only' when 'A' then 'always' end
                                      || ' on ' || t.tgrelid::regclass::text as state
                                 from pg_trigger t where t.tgconstraint = con.oid and t.tgisinternal) s), '')
               ) as attrs
          from pg_constraint con
         where con.connamespace = 'memsub'::regnamespace""",
    "policies": """
        select 'policy' as kind,
               'policy ' || quote_ident(p.policyname) || ' on memsub.' || quote_ident(p.tablename) as object,
               json_build_object('permissive', p.permissive, 'roles', array_to_string(p.roles, ','),
                                 'command', p.cmd, 'using', coalesce(p.qual, ''),
                                 'with check', coalesce(p.with_check, '')) as attrs
          from pg_policies p where p.schemaname = 'memsub'""",
    "triggers": """
        select 'trigger' as kind, 'trigger ' || quote_ident(t.tgname) || ' on ' || t.tgrelid::regclass::text
               as object,
               json_build_object('definition', pg_get_triggerdef(t.oid),
                                 'enabled', case t.tgenabled when 'O' then 'enabled' when 'D' then 'disabled'
                                                 when 'R' then 'replica only' when 'A' then 'always' end) as attrs
          from pg_trigger t join pg_class c on c.oid = t.tgrelid
         where c.relnamespace = 'memsub'::regnamespace and not t.tgisinternal""",
    "rules": """
        select 'rule' as kind, 'rule ' || quote_ident(r.rulename) || ' on memsub.' || quote_ident(r.tablename)
               as object,
               json_build_object('definition', r.definition) as attrs
          from pg_rules r where r.schemaname = 'memsub'""",
    "functions": f"""
        select case p.prokind when 'p' then 'procedure' when 'a' then 'aggregate' when 'w' then 'window function'
                              else 'function' end as kind,
               case p.prokind when 'p' then 'procedure ' else 'function ' end || p.oid::regprocedure::text
               as object,
               json_build_object(
                   'arguments', pg_get_function_arguments(p.oid),
                   'result', coalesce(pg_get_function_result(p.oid), ''),
                   'language', (select lanname from pg_language where oid = p.prolang),
                   'security', case when p.prosecdef then 'security definer' else 'security invoker' end,
                   'volatility', case p.provolatile when 'i' then 'immutable' when 's' then 'stable'
                                                    else 'volatile' end,
                   'strict', p.proisstrict::text,
                   'leakproof', p.proleakproof::text,
                   'parallel', p.proparallel::text,
                   'configuration', coalesce(array_to_string(p.proconfig, ', '), ''),
                   'owner', pg_get_userbyid(p.proowner),
                   'privileges', {_acl('p.proacl', _PROACL_DEFAULT)},
                   'body', case when p.prokind = 'a' then '' else p.prosrc end
               ) as attrs
          from pg_proc p where p.pronamespace = 'memsub'::regnamespace""",  # noqa: S608 - constant catalog fragments
    "types": f"""
        select 'type' as kind, 'type ' || t.oid::regtype::text as object,
               json_build_object(
                   'type', case t.typtype when 'c' then 'composite' when 'e' then 'enum' when 'd' then 'domain'
                                          when 'r' then 'range' when 'm' then 'multirange' when 'b' then 'base'
                                          else t.typtype::text end,
                   'owner', pg_get_userbyid(t.typowner),
                   'privileges', {_acl('t.typacl', _TYPACL_DEFAULT)},
                   'definition',
                   case t.typtype
                       when 'd' then format_type(t.typbasetype, t.typtypmod)
                                     || case when t.typnotnull then ' not null' else '' end
                                     || coalesce(' default ' || t.typdefault, '')
                       when 'e' then (select string_agg(quote_literal(e.enumlabel), ', ' order by e.enumsortorder)
                                        from pg_enum e where e.enumtypid = t.oid)
                       when 'c' then (select string_agg(quote_ident(a.attname) || ' '
                                                        || format_type(a.atttypid, a.atttypmod), ', '
                                                        order by a.attnum)
                                        from pg_attribute a where a.attrelid = t.typrelid and a.attnum > 0
                                         and not a.attisdropped)
                       else '' end) as attrs
          from pg_type t
         where t.typnamespace = 'memsub'::regnamespace
           and not exists (select from pg_type e where e.typarray = t.oid)
           and not exists (select from pg_class c where c.oid = t.typrelid and c.relkind <> 'c')""",  # noqa: S608 - constant catalog fragments
    "other objects": f"""
        select kind, kind || ' ' || name as object, '{{}}'::json as attrs from ({_OTHER_OBJECTS}) o""",  # noqa: S608 - constant catalog fragments
}

# Every membership grant that involves a memsub role, with the options it confers: ``admin`` (may grant the role
# on), ``inherit`` (has its privileges), ``set`` (may SET ROLE to it), or ``none``. Left out: a membership with
# ADMIN only that a login with CREATEROLE, not a memsub role, holds. PostgreSQL 16+ gives one to the creator of
# every role, and a DBA gives one to a non-superuser installer; such a login administers the memsub roles by
# design. Before PostgreSQL 16 a membership conferred the role's privileges when the member had INHERIT, and
# always allowed SET ROLE.
MEMBERSHIPS = {
    16: """
        select m.roleid, m.member, m.grantor,
               coalesce(nullif(concat_ws(',', case when m.admin_option then 'admin' end,
                                         case when m.inherit_option then 'inherit' end,
                                         case when m.set_option then 'set' end), ''), 'none') as options
          from pg_auth_members m
         where not (m.admin_option and not m.inherit_option and not m.set_option
                    and exists (select from pg_roles c where c.oid = m.member and c.rolcreaterole
                                                          and c.rolname <> all(%(roles)s)))""",
    15: """
        select m.roleid, m.member, m.grantor,
               concat_ws(',', case when m.admin_option then 'admin' end,
                         case when (select u.rolinherit from pg_roles u where u.oid = m.member) then 'inherit' end,
                         'set') as options
          from pg_auth_members m""",
}

ROLE_QUERY = """
    with grants as (<memberships>)
    select 'role' as kind, 'role ' || r.rolname as object,
           json_build_object(
               'attributes', concat_ws(' ',
                   case when r.rolsuper then 'superuser' end, case when r.rolcanlogin then 'login' end,
                   case when r.rolbypassrls then 'bypassrls' end, case when r.rolcreaterole then 'createrole' end,
                   case when r.rolcreatedb then 'createdb' end, case when r.rolreplication then 'replication' end,
                   case when not r.rolinherit then 'noinherit' end),
               'member of', coalesce((select string_agg(distinct g.rolname || ':' || m.options, ' '
                                                        order by g.rolname || ':' || m.options)
                                        from grants m join pg_roles g on g.oid = m.roleid
                                       where m.member = r.oid), ''),
               'members', case when r.rolname = any(%(owner_roles)s) then
                              coalesce((select string_agg(distinct u.rolname || ':' || m.options, ' '
                                                          order by u.rolname || ':' || m.options)
                                          from grants m join pg_roles u on u.oid = m.member
                                         where m.roleid = r.oid), '')
                          else 'not compared' end,
               'settings', coalesce((select string_agg(array_to_string(s.setconfig, ', '), '; ')
                                       from pg_db_role_setting s
                                      where s.setrole = r.oid
                                        and s.setdatabase in (0, (select oid from pg_database
                                                                   where datname = current_database()))), '')
           ) as attrs
      from pg_roles r where r.rolname = any(%(roles)s)"""


def membership_options_recorded(conn: psycopg.Connection[Any]) -> bool:
    """Whether this server records a membership's options (PostgreSQL 16 and later)."""
    row = conn.cursor(row_factory=tuple_row).execute(
        "select current_setting('server_version_num')::integer >= 160000").fetchone()
    return bool(row and row[0])


def memberships_query(conn: psycopg.Connection[Any]) -> str:
    """The membership grants (``roleid, member, grantor, options``) as this server records them."""
    return MEMBERSHIPS[16 if membership_options_recorded(conn) else 15]


_VECTOR_TYPE = re.compile(r"\b(vector|halfvec)\((\d+)\)")


def _installed_dimension(conn: psycopg.Connection[Any]) -> str | None:
    row = conn.cursor().execute(
        "select case when to_regclass('memsub.installation_settings') is null then null "
        "when has_table_privilege('memsub.installation_settings', 'select') then "
        "(select value from memsub.installation_settings where name = 'vector_dimension') "
        "else (select nullif(a.atttypmod, -1)::text from pg_attribute a "
        "       where a.attrelid = to_regclass('memsub.memory_embeddings') and a.attname = 'vector') end"
    ).fetchone()
    return str(row[0]) if row and row[0] is not None else None


def _catalog_path(conn: psycopg.Connection[Any]) -> str:
    """The search path definitions are read (and, by repair, written) under: pg_catalog, then the schemas of the
    extensions memsub uses, so that their types print unqualified wherever they were installed."""
    row = conn.cursor(row_factory=tuple_row).execute(
        "select coalesce(string_agg(distinct quote_ident(n.nspname), ', '), '') "
        "from pg_extension e join pg_namespace n on n.oid = e.extnamespace "
        "where e.extname = any(%s)", [list(EXTENSIONS)]).fetchone()
    schemas = str(row[0]) if row else ""
    return "pg_catalog" + (", " + schemas if schemas else "")


def fingerprint(conn: psycopg.Connection[Any], roles: bool = True) -> Fingerprint:
    """The normalized catalog of schema memsub in the database ``conn`` is connected to (read-only)."""
    result: Fingerprint = {}
    outside = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with conn.cursor(row_factory=dict_row) as cur, conn.transaction():
        if outside:
            cur.execute("set transaction read only")
        cur.execute("select current_setting('search_path') as path")
        saved = cur.fetchone()
        # Definitions print constants in the session's output formats (an interval default as 'P30D' under an
        # IntervalStyle of iso_8601): read them in the formats the snapshot was taken in.
        names = [name for name, _ in OUTPUT_FORMATS]
        cur.execute("select array_agg(pg_catalog.current_setting(n) order by o) as formats "
                    "from unnest(%s::text[]) with ordinality as s(n, o)", [names])
        formats = cur.fetchone()
        cur.execute(output_formats(local=True))
        cur.execute("select pg_catalog.set_config('search_path', %s, true)", [_catalog_path(cur.connection)])
        cur.execute("select to_regnamespace('memsub') is not null as present")
        present = cur.fetchone()
        dimension = _installed_dimension(cur.connection) if present and present["present"] else None
        queries = list(QUERIES.values()) if present and present["present"] else []
        for query in queries:
            cur.execute(query.encode())
            for item in cur.fetchall():
                attrs = {k: str(v) for k, v in item["attrs"].items()}
                result[str(item["object"])] = (str(item["kind"]), attrs)
        if roles:
            cur.execute(ROLE_QUERY.replace("<memberships>", memberships_query(cur.connection)).encode(),
                        {"roles": list(MEMSUB_ROLES), "owner_roles": list(OWNER_ROLES)})
            for item in cur.fetchall():
                result[str(item["object"])] = (str(item["kind"]), {k: str(v) for k, v in item["attrs"].items()})
        cur.execute("select pg_catalog.set_config('search_path', %s, true)", [saved["path"] if saved else ""])
        if formats:  # as they were for the rest of a transaction the caller had begun
            cur.execute("select pg_catalog.set_config(n, v, true) from unnest(%s::text[], %s::text[]) as s(n, v)",
                        [names, formats["formats"]])
    if dimension:
        result = {_normalize(key, dimension): (kind, {k: _normalize(v, dimension) for k, v in attrs.items()})
                  for key, (kind, attrs) in result.items()}
    return result


def _normalize(text: str, dimension: str) -> str:
    return _VECTOR_TYPE.sub(lambda m: f"{m[1]}(N)" if m[2] == dimension else m[0], text)


_NORMALIZED_VECTOR_TYPE = re.compile(r"\b(vector|halfvec)\(N\)")


def _installed(text: str, dimension: str | None) -> str:
    """A normalized definition as the installation states it: ``vector(N)`` with its own dimension."""
    return _NORMALIZED_VECTOR_TYPE.sub(lambda m: f"{m[1]}({dimension})", text) if dimension else text


def fingerprint_dsn(dsn: str, roles: bool = True) -> Fingerprint:
    with psycopg.connect(dsn, autocommit=True) as conn:
        lift_run_timeouts(conn)  # the catalog's queries are long by nature, and read in one transaction
        return fingerprint(conn, roles=roles)


# -- differences ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """One way the database differs from the reference. ``attribute`` is None for a missing or unexpected
    object; ``expected``/``found`` are None on the side where the object does not exist."""

    kind: str
    object: str
    attribute: str | None
    expected: str | None
    found: str | None

    @property
    def state(self) -> str:
        if self.found is None and self.attribute is None:
            return "missing"
        if self.expected is None and self.attribute is None:
            return "unexpected"
        return "changed"

    def describe(self) -> str:
        if self.state == "missing":
            return f"missing: {self.object}"
        if self.state == "unexpected":
            return f"unexpected: {self.object} ({_short(self.found or '')})"
        return f"changed: {self.object}: {self.attribute}: expected {self.expected}, found {self.found}"

    def describe_restored(self) -> str:
        if self.state == "missing":
            return f"recreated {self.object}"
        if self.state == "unexpected":
            return f"dropped unexpected {self.object}"
        return f"{self.object}: {self.attribute} is {self.expected} again (was {self.found})"

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "object": self.object, "attribute": self.attribute, "state": self.state,
                "expected": self.expected, "found": self.found}


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _summary(attrs: Mapping[str, str]) -> str:
    for key in ("definition", "using", "type"):
        if attrs.get(key):
            return _short(attrs[key])
    body = attrs.get("body")
    if body:
        return f"{attrs.get('security', '')}, body sha256 {hashlib.sha256(body.encode()).hexdigest()[:12]}"
    return _short("; ".join(f"{k}={v}" for k, v in attrs.items() if v))


def _first_difference(expected: str, found: str) -> tuple[str, str]:
    """A multi-line value (a function body, a view): the first line that differs, on each side."""
    old, new = expected.splitlines(), found.splitlines()
    for number in range(max(len(old), len(new))):
        a = old[number] if number < len(old) else "<end>"
        b = new[number] if number < len(new) else "<end>"
        if a.strip() != b.strip() or (a != b and number == max(len(old), len(new)) - 1):
            return f"line {number + 1}: {_short(a, 120)!r}", f"line {number + 1}: {_short(b, 120)!r}"
    return (f"sha256 {hashlib.sha256(expected.encode()).hexdigest()[:12]}",
            f"sha256 {hashlib.sha256(found.encode()).hexdigest()[:12]}")


def compare(expected: Fingerprint, found: Fingerprint) -> list[Difference]:
    """Every difference between two fingerprints, missing objects first, then unexpected, then changed."""
    missing, unexpected, changed = [], [], []
    for key in sorted(expected.keys() - found.keys()):
        kind, attrs = expected[key]
        missing.append(Difference(kind, key, None, _summary(attrs), None))
    for key in sorted(found.keys() - expected.keys()):
        kind, attrs = found[key]
        unexpected.append(Difference(kind, key, None, None, _summary(attrs)))
    for key in sorted(expected.keys() & found.keys()):
        kind, want = expected[key]
        _, have = found[key]
        for attribute in sorted(want.keys() | have.keys()):
            a, b = want.get(attribute, ""), have.get(attribute, "")
            if a == b:
                continue
            if "\n" in a or "\n" in b:
                a, b = _first_difference(a, b)
            else:
                a, b = _short(a, 400), _short(b, 400)
            changed.append(Difference(kind, key, attribute, a or "(none)", b or "(none)"))
    return missing + unexpected + changed


# -- the shipped snapshot -------------------------------------------------------------------------------------


@dataclass
class Snapshot:
    objects: Fingerprint
    server_version: int
    vector_version: str


def _server_versions(conn: psycopg.Connection[Any]) -> tuple[int, str]:
    row = conn.execute("select current_setting('server_version_num')::integer / 10000, "
                       "coalesce((select extversion from pg_extension where extname = 'vector'), '')").fetchone()
    assert row is not None
    return int(row[0]), str(row[1])


def snapshot_text(objects: Fingerprint, server_version: int, vector_version: str) -> str:
    """The snapshot file: stable key order, multi-line values as lists of lines so that diffs read well."""
    body: dict[str, Any] = {}
    for key in sorted(objects):
        kind, attrs = objects[key]
        body[key] = {"kind": kind} | {k: (v.split("\n") if "\n" in v else v) for k, v in sorted(attrs.items())}
    document = {"format": SNAPSHOT_FORMAT, "postgresql_major_version": server_version,
                "pgvector_version": vector_version, "objects": body}
    return json.dumps(document, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def load_snapshot(path: Path = SNAPSHOT_PATH) -> Snapshot:
    document = json.loads(path.read_text(encoding="utf-8"))
    if document.get("format") != SNAPSHOT_FORMAT:
        raise ValueError(f"{path.name}: unknown snapshot format {document.get('format')!r}")
    objects: Fingerprint = {}
    for key, entry in document["objects"].items():
        kind = entry.pop("kind")
        objects[key] = (kind, {k: ("\n".join(v) if isinstance(v, list) else v) for k, v in entry.items()})
    return Snapshot(objects, int(document["postgresql_major_version"]), str(document["pgvector_version"]))


def write_snapshot(dsn: str, path: Path = SNAPSHOT_PATH) -> None:
    """Record the fingerprint of a fresh installation (``dsn``) as the shipped snapshot."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        objects = fingerprint(conn)
        server_version, vector_version = _server_versions(conn)
    path.write_text(snapshot_text(objects, server_version, vector_version), encoding="utf-8")


# -- references -----------------------------------------------------------------------------------------------


@dataclass
class Reference:
    objects: Fingerprint
    source: str  # "snapshot" | "scratch" | "reference-dsn"
    notes: list[str] = field(default_factory=list)


def _roles_from_snapshot(objects: Fingerprint, snapshot: Snapshot) -> Fingerprint:
    merged = {k: v for k, v in objects.items() if v[0] != "role"}
    merged.update({k: v for k, v in snapshot.objects.items() if v[0] == "role"})
    return merged


@contextmanager
def scratch_database(dsn: str, dimension: str | None) -> Iterator[str]:
    """A new database on the server of ``dsn`` (from template0, so nothing planted in template1 is copied),
    migrated with the shipped SQL; dropped on exit. Needs CREATEDB and the right to create the extensions."""
    from memsub.migrator import Migrator

    name = f"memsub_verify_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {} template template0").format(sql.Identifier(name)))
    try:
        options = f"-c memsub.vector_dimension={int(dimension)}" if dimension else None
        scratch = make_conninfo(dsn, dbname=name, **({"options": options} if options else {}))
        Migrator(scratch).migrate()
        yield make_conninfo(dsn, dbname=name)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def _may_create_databases(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("select rolsuper or rolcreatedb from pg_roles where rolname = current_user").fetchone()
    return bool(row and row[0])


def reference(dsn: str, mode: str = "auto", reference_dsn: str | None = None) -> Reference:
    """The expected fingerprint for the database ``dsn``.

    ``mode``: ``snapshot`` (the shipped file), ``scratch`` (a database built from the shipped SQL on the same
    server), or ``auto``: the snapshot when the server's major version is the one it was taken on, else a scratch
    database when the login may create one, else the snapshot with a note. ``reference_dsn`` (a clean
    installation) wins over ``mode``. Roles always come from the snapshot."""
    snapshot = load_snapshot()
    with psycopg.connect(dsn, autocommit=True) as conn:
        server_version, _ = _server_versions(conn)
        has_schema = conn.execute("select to_regnamespace('memsub') is not null").fetchone()
        dimension = _installed_dimension(conn) if has_schema and has_schema[0] else None
        may_create = _may_create_databases(conn)
    if reference_dsn:
        return Reference(_roles_from_snapshot(fingerprint_dsn(reference_dsn), snapshot), "reference-dsn")
    version_note = (f"the shipped snapshot was taken on PostgreSQL {snapshot.server_version}, this server runs "
                    f"{server_version}: deparsed definitions may differ in form only; "
                    "use --reference scratch or --reference-dsn for an exact comparison")
    if mode == "snapshot" or (mode == "auto" and snapshot.server_version == server_version):
        notes = [version_note] if snapshot.server_version != server_version else []
        return Reference(snapshot.objects, "snapshot", notes)
    if mode == "auto" and not may_create:
        return Reference(snapshot.objects, "snapshot", [version_note])
    try:
        with scratch_database(dsn, dimension) as scratch:
            objects = fingerprint_dsn(scratch)
    except psycopg.Error as error:
        if mode == "scratch":
            raise
        return Reference(snapshot.objects, "snapshot",
                         [f"could not build a scratch reference database ({error.sqlstate}: "
                          f"{str(error).strip().splitlines()[0]})", version_note])
    return Reference(_roles_from_snapshot(objects, snapshot), "scratch")


def verify_catalog(dsn: str, mode: str = "auto", reference_dsn: str | None = None) -> tuple[list[Difference],
                                                                                             Reference]:
    """Differences between the database's catalog and the reference (empty: the catalog is as shipped)."""
    expected = reference(dsn, mode, reference_dsn)
    return compare(expected.objects, fingerprint_dsn(dsn)), expected


# -- repair ---------------------------------------------------------------------------------------------------

# Unexpected objects repair drops: none of them holds data. Unexpected tables, columns, sequences, materialized
# views and types are only reported: they may hold data, and a person decides what to keep.
_DROPPABLE = ("policy", "trigger", "rule", "function", "procedure", "aggregate", "window function", "view",
              "index", "constraint", "default privileges")
_DEFAULT_PRIVILEGES = re.compile(
    r"^default privileges of (?P<role>\S+) on (?P<objects>tables|sequences|functions|types) in (?P<schema>.+)$")
_PRIVILEGES = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER", "MAINTAIN",
                         "EXECUTE", "USAGE", "CREATE"})
_ON = re.compile(r"^(?P<name>.+) on (?P<table>memsub\..+)$")
_ROUTINES = ("function", "procedure", "aggregate", "window function")
# A partition's one parent with its bound ("memsub.memory_embeddings FOR VALUES WITH (modulus 16, remainder 3)")
_PARTITION_OF = re.compile(r'^(?P<parent>(?:"[^"]*"|[^\s"])+) (?P<bound>(?:FOR VALUES|DEFAULT)\b.*)$')
_ROLE_FLAGS = ("superuser", "login", "bypassrls", "createrole", "createdb", "replication")


@dataclass
class RepairReport:
    """What ``repair`` did: the differences it removed, the statements it ran, what still differs."""

    before: list[Difference]
    restored: list[Difference]
    remaining: list[Difference]
    actions: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    reference: Reference | None = None


def _name(key: str, kind: str) -> str:
    return key[len(kind) + 1:]


def _privileges(text: str) -> dict[str, set[str]]:
    """``grantee:PRIV,PRIV*`` pairs -> {grantee: {PRIV, PRIV*}}."""
    result: dict[str, set[str]] = {}
    for item in text.split():
        grantee, _, privs = item.rpartition(":")
        if grantee:
            result[grantee] = set(privs.split(","))
    return result


def _parents(text: str) -> list[tuple[str, str]]:
    """The ``parents`` attribute as (parent, partition bound or '') pairs."""
    partition = _PARTITION_OF.match(text)
    if partition:
        return [(partition["parent"], partition["bound"])]
    return [(parent, "") for parent in text.split(", ") if parent]


def _grantee(name: str) -> sql.Composable:
    return sql.SQL("public") if name == "PUBLIC" else sql.Identifier(name)


class _Repairer:
    def __init__(self, conn: psycopg.Connection[Any], expected: Fingerprint, report: RepairReport) -> None:
        self.conn = conn
        self.expected = expected
        self.report = report
        self.dimension = _installed_dimension(conn)
        self.recreated_views: list[tuple[str, str]] = []  # (key, name) of materialized views to populate

    def run(self, statement: str | sql.Composable, label: str) -> bool:
        """One repair statement in its own savepoint: a failure is reported and the rest carries on."""
        text = statement if isinstance(statement, str) else statement.as_string(self.conn)
        if self.run_steps([text], label):
            self.report.actions.append(_short(text, 200))
            return True
        return False

    def run_steps(self, statements: Sequence[str], label: str, report: bool = True) -> bool:
        """Statements that succeed or fail together, in one savepoint: a failure is reported in one line
        (``label: the server's message``; unless not ``report``) and undoes only these statements."""
        try:
            with self.conn.transaction():
                for statement in statements:
                    self.conn.execute(statement.encode())
        except psycopg.errors.LockNotAvailable:
            raise  # the whole attempt is tried again (repair)
        except psycopg.Error as error:
            if report:
                self.report.failures.append(f"{label}: {first_line(error)}")
            return False
        return True

    def reapply(self, label: str, statements: Sequence[str], file: Repeatable | None) -> None:
        """One step of re-applying sql/. A file that fails as a whole runs again one statement at a time, each
        in its own savepoint: every statement that can restore its object does, and each one that fails is
        named by its line. Such a file is not recorded as applied (``memsub status`` keeps showing it)."""
        if self.run_steps(statements, f"re-apply {label}", report=file is None) or file is None:
            return
        for line, statement in split_statements(file.sql):
            self.run_steps([statement], f"re-apply {label}:{line} ({_short(statement, 90)})")

    @contextmanager
    def catalog_path(self) -> Iterator[None]:
        """Run statements built from the reference's deparsed definitions under the search path they were read
        under (so the types of memsub's extensions resolve wherever those were installed)."""
        row = self.conn.execute("select current_setting('search_path')").fetchone()
        saved = str(row[0]) if row else ""
        self.conn.execute("select pg_catalog.set_config('search_path', %s, true)", [_catalog_path(self.conn)])
        try:
            yield
        finally:
            self.conn.execute("select pg_catalog.set_config('search_path', %s, true)", [saved])

    # what re-applying sql/ needs done first
    def prepare(self, before: list[Difference], recreated_routines: set[str]) -> None:
        """Drop the functions sql/ re-creates whose parameters or result changed (CREATE OR REPLACE cannot change
        those); re-create missing materialized views (migrations created them, and sql/ builds views over them);
        restore each table's inheritance parents and partition bound."""
        dropped: set[str] = set()
        with self.catalog_path():
            for difference in before:
                kind, key = difference.kind, difference.object
                name = _name(key, kind)
                if difference.state == "changed" and kind in _ROUTINES \
                        and difference.attribute in ("arguments", "result") and key not in dropped \
                        and name.split("(", 1)[0].removeprefix("memsub.") in recreated_routines:
                    dropped.add(key)
                    self.run(sql.SQL("drop routine {}").format(sql.SQL(name)), f"drop changed {key}")
                elif difference.state == "missing" and kind == "materialized view":
                    self.create_materialized_view(key, name, self.expected[key][1])
                elif kind in ("table", "foreign table") and difference.attribute == "parents":
                    self.restore_parents(kind, key, name, self.expected[key][1]["parents"])

    def create_materialized_view(self, key: str, name: str, attrs: Attributes) -> None:
        """Created empty (its rows are computed as its owner, once repair has restored the owner: populate)."""
        definition = _installed(attrs["definition"], self.dimension).strip().rstrip(";")
        options = sql.SQL(" with ({})").format(sql.SQL(attrs["options"])) if attrs.get("options") else sql.SQL("")
        if self.run(sql.SQL("create materialized view {}{} as {} with no data").format(
                sql.SQL(name), options, sql.SQL(definition)), f"create {key}"):
            self.recreated_views.append((key, name))

    def populate(self) -> None:
        for key, name in self.recreated_views:
            self.run(sql.SQL("refresh materialized view {}").format(sql.SQL(name)), f"populate {key}")

    def restore_parents(self, kind: str, key: str, name: str, expected_text: str) -> None:
        """Detach the table from each parent the reference lacks, then attach it to each one it has."""
        found, expected = _parents(self.current(key).get("parents", "")), _parents(expected_text)
        table = sql.SQL("alter {} {}").format(sql.SQL(kind), sql.SQL(name))
        for parent, bound in [p for p in found if p not in expected]:
            self.run(sql.SQL("alter table {} detach partition {}").format(sql.SQL(parent), sql.SQL(name))
                     if bound else sql.SQL("{} no inherit {}").format(table, sql.SQL(parent)),
                     f"detach {key} from {parent}")
        for parent, bound in [p for p in expected if p not in found]:
            self.run(sql.SQL("alter table {} attach partition {} {}").format(
                sql.SQL(parent), sql.SQL(name), sql.SQL(bound))
                     if bound else sql.SQL("{} inherit {}").format(table, sql.SQL(parent)),
                     f"attach {key} to {parent}")

    # unexpected objects
    def drop(self, difference: Difference) -> None:
        kind, key = difference.kind, difference.object
        name = _name(key, kind)
        if kind in ("policy", "trigger", "rule", "constraint"):
            match = _ON.match(name)
            if not match:
                return
            verb = {"policy": "drop policy {} on {}", "trigger": "drop trigger {} on {}",
                    "rule": "drop rule {} on {}", "constraint": "alter table {1} drop constraint {0}"}[kind]
            self.run(sql.SQL(verb).format(sql.SQL(match["name"]), sql.SQL(match["table"])), f"drop {key}")
        elif kind in ("function", "aggregate", "window function"):
            self.run(sql.SQL("drop function {}").format(sql.SQL(name)), f"drop {key}")
        elif kind == "procedure":
            self.run(sql.SQL("drop procedure {}").format(sql.SQL(name)), f"drop {key}")
        elif kind == "index" and self.current(key).get("partition of"):
            return  # the part of an index on a partition: it goes with that index, never alone
        elif kind in ("view", "index"):
            self.run(sql.SQL("drop {} {}").format(sql.SQL(kind), sql.SQL(name)), f"drop {key}")
        elif kind == "default privileges":
            match = _DEFAULT_PRIVILEGES.match(key)
            if not match:
                return
            schema = (sql.SQL(" in schema {}").format(sql.SQL(match["schema"]))
                      if match["schema"] != "every schema" else sql.SQL(""))
            for grantee in sorted(_privileges(self.current(key).get("privileges", ""))):
                self.run(sql.SQL("alter default privileges for role {}{} revoke all on {} from {}").format(
                    sql.Identifier(match["role"]), schema, sql.SQL(match["objects"]), _grantee(grantee)),
                    f"revoke {key} from {grantee}")

    # objects created by migrations (run once), which re-applying sql/ does not restore
    def restore(self, difference: Difference) -> None:
        kind, key, attribute = difference.kind, difference.object, difference.attribute
        if key not in self.expected:
            return
        attrs = self.expected[key][1]
        name = _name(key, kind)
        if kind == "index" and not attrs.get("constraint"):
            if attribute == "valid":
                self.run(sql.SQL("reindex index {}").format(sql.SQL(name)), f"rebuild {key}")
            elif attribute in (None, "definition"):
                if attribute:
                    self.run(sql.SQL("drop index {}").format(sql.SQL(name)), f"drop changed {key}")
                if self.run(_installed(attrs["definition"], self.dimension), f"create {key}") \
                        and attrs.get("partition of"):
                    self.run(sql.SQL("alter index {} attach partition {}").format(
                        sql.SQL(attrs["partition of"]), sql.SQL(name)), f"attach {key}")
        elif kind == "constraint" and attribute in (None, "definition"):
            match = _ON.match(name)
            if match:
                table, constraint = sql.SQL(match["table"]), sql.SQL(match["name"])
                if attribute:
                    self.run(sql.SQL("alter table {} drop constraint {}").format(table, constraint),
                             f"drop changed {key}")
                self.run(sql.SQL("alter table {} add constraint {} {}").format(
                    table, constraint, sql.SQL(attrs["definition"])), f"add {key}")
        elif kind == "constraint" and attribute == "internal triggers":
            match = _ON.match(name)
            if match and "disabled" not in attrs[attribute] and "replica" not in attrs[attribute]:
                for table, trigger in self.conn.execute(
                        "select t.tgrelid::regclass::text, t.tgname from pg_trigger t "
                        "join pg_constraint c on c.oid = t.tgconstraint "
                        "where t.tgisinternal and t.tgenabled <> 'O' and quote_ident(c.conname) = %s "
                        "and c.conrelid = to_regclass(%s)", [match["name"], match["table"]]).fetchall():
                    self.run(sql.SQL("alter table {} enable trigger {}").format(
                        sql.SQL(table), sql.Identifier(trigger)), f"enable the internal triggers of {key}")
        elif kind == "trigger" and attribute == "enabled":
            match = _ON.match(name)
            if match:
                self.run(sql.SQL("alter table {} enable trigger {}").format(
                    sql.SQL(match["table"]), sql.SQL(match["name"])), f"enable {key}")
        elif kind == "trigger" and attribute in (None, "definition"):
            match = _ON.match(name)
            if match:
                self.run(sql.SQL("drop trigger if exists {} on {}").format(
                    sql.SQL(match["name"]), sql.SQL(match["table"])), f"drop changed {key}")
                self.run(attrs["definition"], f"create {key}")
        elif kind == "policy":
            self.restore_policy(key, name, attrs)
        elif kind == "table" and attribute == "row level security":
            verb = "enable" if attrs[attribute] == "enabled" else "disable"
            self.run(sql.SQL("alter table {} {} row level security").format(sql.SQL(name), sql.SQL(verb)),
                     f"{verb} row level security on {key}")
        elif kind == "table" and attribute == "forced row level security":
            verb = "force" if attrs[attribute] == "forced" else "no force"
            self.run(sql.SQL("alter table {} {} row level security").format(sql.SQL(name), sql.SQL(verb)),
                     f"{verb} row level security on {key}")
        elif kind in ("table", "sequence") and attribute == "persistence":
            if self.current(key).get(attribute) != attrs[attribute]:
                logged = "logged" if attrs[attribute] == "p" else "unlogged"
                self.run(sql.SQL("alter {} {} set {}").format(sql.SQL(kind), sql.SQL(name), sql.SQL(logged)),
                         f"set {key} {logged}")
        elif kind == "column" and attribute == "default":
            table_name, _, column_name = name.rpartition(".")
            statement = (sql.SQL("alter table {} alter column {} set default {}").format(
                sql.SQL(table_name), sql.SQL(column_name), sql.SQL(attrs["default"]))
                if attrs["default"] else
                sql.SQL("alter table {} alter column {} drop default").format(
                    sql.SQL(table_name), sql.SQL(column_name)))
            self.run(statement, f"restore the default of {key}")
        elif attribute == "owner":
            target = {"materialized view": "materialized view", "table": "table", "view": "view",
                      "sequence": "sequence", "function": "function", "procedure": "procedure", "type": "type",
                      "schema": "schema"}.get(kind)
            if target:
                self.run(sql.SQL("alter {} {} owner to {}").format(
                    sql.SQL(target), sql.SQL(name), sql.Identifier(attrs["owner"])), f"restore the owner of {key}")
        elif attribute == "privileges":
            self.restore_privileges(kind, key, name, attrs["privileges"])
        elif kind == "role":
            self.restore_role(key, name, attribute, attrs)

    def restore_policy(self, key: str, name: str, attrs: Attributes) -> None:
        match = _ON.match(name)
        if not match:
            return
        policy, table = sql.SQL(match["name"]), sql.SQL(match["table"])
        roles = sql.SQL(", ").join(_grantee("PUBLIC" if r == "public" else r) for r in attrs["roles"].split(","))
        parts: list[sql.Composable] = [sql.SQL("create policy {} on {} as {} for {} to {}").format(
            policy, table, sql.SQL(attrs["permissive"]), sql.SQL(attrs["command"]), roles)]
        if attrs["using"]:
            parts.append(sql.SQL("using ({})").format(sql.SQL(attrs["using"])))
        if attrs["with check"]:
            parts.append(sql.SQL("with check ({})").format(sql.SQL(attrs["with check"])))
        self.run(sql.SQL("drop policy if exists {} on {}").format(policy, table), f"drop changed {key}")
        self.run(sql.SQL(" ").join(parts), f"create {key}")

    def restore_privileges(self, kind: str, key: str, name: str, expected_text: str) -> None:
        found_text = self.current(key).get("privileges", "")
        expected, found = _privileges(expected_text), _privileges(found_text)
        column: sql.Composable | None = None
        target: sql.Composable
        if kind == "column":
            table, _, column_name = name.rpartition(".")
            target = sql.SQL("table {}").format(sql.SQL(table))
            column = sql.SQL(column_name)
        elif kind in ("table", "view", "materialized view", "foreign table"):
            target = sql.SQL("table {}").format(sql.SQL(name))
        elif kind in ("sequence", "function", "procedure", "schema", "type"):
            target = sql.SQL("{} {}").format(sql.SQL(kind), sql.SQL(name))
        else:
            return
        for grantee in sorted(expected.keys() | found.keys()):
            want, have = expected.get(grantee, set()), found.get(grantee, set())
            if want == have:
                continue
            every = sql.SQL("all ({})").format(column) if column else sql.SQL("all")
            self.run(sql.SQL("revoke {} on {} from {}").format(every, target, _grantee(grantee)),
                     f"revoke the privileges of {grantee} on {key}")
            for grantable in (False, True):
                privileges = sorted(p.rstrip("*") for p in want if p.endswith("*") == grantable)
                if not privileges or not set(privileges) <= _PRIVILEGES:
                    continue
                listed = sql.SQL(", ").join(
                    sql.SQL("{} ({})").format(sql.SQL(p), column) if column else sql.SQL(p)
                    for p in privileges)
                self.run(sql.SQL("grant {} on {} to {}{}").format(
                    listed, target, _grantee(grantee), sql.SQL(" with grant option" if grantable else "")),
                    f"grant the privileges of {grantee} on {key}")

    def restore_role(self, key: str, role: str, attribute: str | None, attrs: Attributes) -> None:
        if attribute == "attributes":
            wanted = set(attrs["attributes"].split())
            flags = [flag if flag in wanted else "no" + flag for flag in _ROLE_FLAGS]
            flags.append("noinherit" if "noinherit" in wanted else "inherit")
            self.run(sql.SQL("alter role {} {}").format(sql.Identifier(role), sql.SQL(" ".join(flags))),
                     f"restore the attributes of {key}")
        elif attribute in ("member of", "members") and attrs[attribute] != "not compared":
            self.restore_memberships(role, attribute, attrs[attribute])
        elif attribute == "settings" and not attrs["settings"]:
            self.run(sql.SQL("alter role {} reset all").format(sql.Identifier(role)), f"reset the settings of {key}")
            self.run(sql.SQL("alter role {} in database {} reset all").format(
                sql.Identifier(role), sql.Identifier(self.conn.info.dbname)), f"reset the settings of {key}")

    def restore_memberships(self, role: str, attribute: str, expected_text: str) -> None:
        """Revoke each membership grant the reference lacks, with the grants made through it (CASCADE), then
        grant what the reference has and the database lacks, with the reference's options."""
        expected = set(expected_text.split())
        this, other = ("member", "roleid") if attribute == "member of" else ("roleid", "member")
        grants = self.conn.execute(
            f"with grants as ({memberships_query(self.conn)}) "  # noqa: S608 - constant catalog fragments
            "select pg_get_userbyid(m.roleid), pg_get_userbyid(m.member), g.rolname, "
            f"pg_get_userbyid(m.{other}) || ':' || m.options from grants m join pg_roles g on g.oid = m.grantor "
            f"where m.{this} = (select oid from pg_roles where rolname = %(role)s)",
            {"roles": list(MEMSUB_ROLES), "role": role}).fetchall()
        for granted, member, grantor, entry in grants:
            if entry not in expected:
                self.run(sql.SQL("revoke {} from {} granted by {} cascade").format(
                    sql.Identifier(granted), sql.Identifier(member), sql.Identifier(grantor)),
                    f"revoke {granted} from {member} (granted by {grantor})")
        options_recorded = membership_options_recorded(self.conn)
        for entry in sorted(expected - {str(grant[3]) for grant in grants}):
            name, _, options = entry.rpartition(":")
            granted, member = (name, role) if attribute == "member of" else (role, name)
            flags = set(options.split(","))
            with_options: sql.Composable = sql.SQL(" with admin option" if "admin" in flags else "")
            if options_recorded:
                with_options = sql.SQL(" with admin {}, inherit {}, set {}").format(
                    *(sql.SQL(str(flag in flags).lower()) for flag in ("admin", "inherit", "set")))
            self.run(sql.SQL("grant {} to {}{}").format(sql.Identifier(granted), sql.Identifier(member),
                                                       with_options), f"grant {granted} to {member}")

    def current(self, key: str) -> Attributes:
        return fingerprint(self.conn).get(key, ("", {}))[1]


def repair(dsn: str, mode: str = "auto", reference_dsn: str | None = None) -> RepairReport:
    """Bring the catalog back to the reference: drop unexpected policies, triggers, rules, functions, views,
    indexes and constraints; drop the functions whose parameters or result sql/ cannot change back, re-create
    missing materialized views and restore inheritance parents; re-apply the re-runnable SQL (sql/), each file
    in a savepoint; restore what migrations created (indexes, constraints and their internal triggers,
    row-level security flags, defaults, owners, privileges, role attributes and memberships). Unexpected
    tables, columns, sequences and types are reported, never dropped. A statement that fails is reported in
    ``failures`` and the rest carries on. One transaction, under the migration lock; refused unless every
    shipped migration is applied and unchanged. A lock not granted within one attempt (``attempt_wait``) rolls
    the transaction back and tries it again, as migrate does; after ``lock_wait`` (60 s) MigrationError names
    the sessions holding locks on memsub tables."""
    from memsub.errors import MigrationError
    from memsub.migrator import Migrator

    with psycopg.connect(dsn, autocommit=True) as conn:
        refuse_on_standby(conn, "memsub repair")
    migrator = Migrator(dsn)
    blocking = [e for e in migrator.status() if e.kind == "migration" and e.state != "applied"]
    if blocking:
        raise MigrationError("repair needs every shipped migration applied and unchanged; "
                             + "; ".join(f"{e.name} is {e.state}" for e in blocking) + " (run memsub migrate)")
    expected = reference(dsn, mode, reference_dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        lift_run_timeouts(conn)  # one long transaction by nature, as migrate's
        # Never wait without a bound: for the migration lock, nor for the table locks the repair takes. A table
        # lock is waited for one attempt at a time, as migrate waits (Migrator.in_attempts): the applications'
        # calls queued behind the request go on between attempts.
        conn.execute("select pg_catalog.set_config('lock_timeout', %s, false)",
                     [f"{int(migrator.lock_wait * 1000)}ms"])
        report, after = migrator.in_attempts(
            conn, "repair", lambda bound_locks: _repair_attempt(conn, migrator, expected, bound_locks))
    remaining = {(d.object, d.attribute) for d in after}
    report.restored = [d for d in report.before if (d.object, d.attribute) not in remaining]
    report.remaining = after
    return report


def _repair_attempt(conn: psycopg.Connection[Any], migrator: Migrator, expected: Reference,
                    bound_locks: Callable[[], None]) -> tuple[RepairReport, list[Difference]]:
    """One attempt of the repair's transaction (see repair): the report and the differences left. ``bound_locks``
    bounds the attempt's lock waits once the migration lock is held (Migrator.in_attempts)."""
    from memsub.migrator import repeatable_steps

    with conn.transaction():
        # The migration lock (a table lock only memsub.schema_history's owner can take), as migrate takes it.
        migrator.lock_history(conn)
        bound_locks()
        before = compare(expected.objects, fingerprint(conn))
        report = RepairReport(before, [], [], reference=expected)
        repairer = _Repairer(conn, expected.objects, report)
        for difference in before:
            if difference.state == "unexpected" and difference.kind in _DROPPABLE:
                repairer.drop(difference)
        repairer.prepare(before, {o.name for item in migrator.repeatables for o in item.objects
                                  if o.kind in ("function", "procedure")})
        # Each file in a savepoint of its own: one that fails is reported, the others are applied.
        files = {f"sql/{item.name}": item for item in migrator.repeatables}
        for label, statements in repeatable_steps(migrator.repeatables):
            repairer.reapply(label, statements, files.get(label))
        report.actions.append("re-applied the re-runnable SQL (sql/)")
        # An index of a partitioned table before the parts it needs on each partition (they attach to it).
        for difference in sorted(compare(expected.objects, fingerprint(conn)),
                                 key=lambda d: bool(expected.objects.get(d.object, ("", {}))[1]
                                                    .get("partition of"))):
            repairer.restore(difference)
        repairer.populate()
        after = compare(expected.objects, fingerprint(conn))
    return report, after


def regenerate_snapshot(server_dsn: str | None = None, path: Path = SNAPSHOT_PATH) -> None:
    """Rewrite the shipped snapshot from a fresh installation: a scratch database on ``server_dsn`` (a role that
    may create databases and extensions), or, without one, on a throwaway embedded cluster."""
    if server_dsn:
        with scratch_database(server_dsn, None) as fresh:
            write_snapshot(fresh, path)
        return
    from memsub.embedded import throwaway_cluster

    with throwaway_cluster("memsub-snapshot-") as uri:
        regenerate_snapshot(uri, path)


if __name__ == "__main__":
    import sys

    regenerate_snapshot(sys.argv[1] if len(sys.argv) > 1 else None)
    print(f"wrote {SNAPSHOT_PATH}")
