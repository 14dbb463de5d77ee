"""The catalog rules docs/scale-out.md relies on to distribute memsub by tenant_id (e.g. on Citus)."""

from __future__ import annotations

import re

# Tables without tenant_id and what they become on a distributed cluster (docs/scale-out.md).
NOT_DISTRIBUTED = {
    "context_keys": "reference",
    "installation_settings": "reference",
    "limits": "reference",
    "login_bindings": "reference",
    "maintenance_lock": "coordinator",
    "memory_view_refresh_log": "coordinator",
    "schema_history": "coordinator",
    "schema_repeatable_history": "coordinator",
    "tenant_erasures": "coordinator",
}
# Columns drawn from one global sequence: they need a per-node range or a uuid on a distributed cluster.
GLOBAL_SEQUENCES = {("tasks", "id"), ("audit", "id"), ("packet_store", "write_seq"),
                    ("agent_session_items", "item_id"), ("login_bindings", "binding_id"),
                    ("tenant_erasures", "erasure_id")}


def _tables(conn) -> dict[str, bool]:
    rows = conn.execute(
        "select c.relname, exists (select from pg_attribute a where a.attrelid = c.oid and a.attname = 'tenant_id' "
        "and not a.attisdropped) from pg_class c "
        "where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p')").fetchall()
    return {name: has_tenant for name, has_tenant in rows}


def test_every_table_is_distributed_by_tenant_or_classified(db):
    with db.connect() as conn:
        tables = _tables(conn)
    assert {name for name, has_tenant in tables.items() if not has_tenant} == set(NOT_DISTRIBUTED)


def test_every_unique_key_of_a_distributed_table_includes_tenant_id(db):
    with db.connect() as conn:
        keys = conn.execute(
            "select i.indexrelid::regclass::text from pg_index i join pg_class c on c.oid = i.indrelid "
            "join pg_attribute t on t.attrelid = c.oid and t.attname = 'tenant_id' "
            "where c.relnamespace = 'memsub'::regnamespace and i.indisunique "
            "and not t.attnum = any(i.indkey::int2[])").fetchall()
        exclusions = conn.execute(
            "select conname from pg_constraint k join pg_attribute t on t.attrelid = k.conrelid "
            "and t.attname = 'tenant_id' where k.connamespace = 'memsub'::regnamespace and k.contype = 'x' "
            "and not t.attnum = any(k.conkey)").fetchall()
    assert keys == [] and exclusions == []


def test_every_foreign_key_between_distributed_tables_pairs_tenant_ids(db):
    with db.connect() as conn:
        tables = _tables(conn)
        rows = conn.execute(
            "select k.conname, src.relname, dst.relname, "
            "array(select a.attname from unnest(k.conkey) with ordinality u(n, i) join pg_attribute a "
            "      on a.attrelid = k.conrelid and a.attnum = u.n order by u.i)::text[], "
            "array(select a.attname from unnest(k.confkey) with ordinality u(n, i) join pg_attribute a "
            "      on a.attrelid = k.confrelid and a.attnum = u.n order by u.i)::text[] "
            "from pg_constraint k join pg_class src on src.oid = k.conrelid join pg_class dst on dst.oid = k.confrelid "
            "where k.connamespace = 'memsub'::regnamespace and k.contype = 'f'").fetchall()
    assert rows, "memsub has foreign keys"
    problems = []
    for name, source, target, columns, referenced in rows:
        if not tables[source]:
            problems.append(f"{name}: {source} is not distributed but references {target}")
        elif tables[target]:
            if "tenant_id" not in columns or referenced[columns.index("tenant_id")] != "tenant_id":
                problems.append(f"{name}: {source} -> {target} does not pair tenant_id with tenant_id")
        elif NOT_DISTRIBUTED[target] != "reference":
            problems.append(f"{name}: {source} references {target}, which is neither distributed nor reference")
    assert problems == []


def test_global_sequences_are_the_documented_ones(db):
    with db.connect() as conn:
        rows = conn.execute(
            "select c.relname, a.attname from pg_attribute a join pg_class c on c.oid = a.attrelid "
            "where c.relnamespace = 'memsub'::regnamespace and c.relkind = 'r' and not a.attisdropped "
            "and a.attnum > 0 and (a.attidentity <> '' "
            "or pg_get_serial_sequence(format('memsub.%I', c.relname), a.attname) is not null)").fetchall()
    assert set(rows) == GLOBAL_SEQUENCES


def test_tenant_callable_definer_functions_scope_to_the_context_tenant(db):
    """A SECURITY DEFINER function skips row-level security, so each one the application may call and that
    touches a distributed table must name the tenant it works on (the context's), which is what lets a
    distributed cluster route the call to the node holding that tenant."""
    with db.connect() as conn:
        tables = _tables(conn)
        functions = conn.execute(
            "select p.oid::regprocedure::text, p.prosrc from pg_proc p "
            "where p.pronamespace = 'memsub'::regnamespace and p.prosecdef "
            "and has_function_privilege('memsub_app', p.oid, 'EXECUTE')").fetchall()
    distributed = [name for name, has_tenant in tables.items() if has_tenant]
    problems = []
    for signature, source in functions:
        touched = [t for t in distributed if re.search(rf"\bmemsub\.{t}\b|\b{t}\b", source)]
        if touched and "tenant" not in source:
            problems.append(f"{signature} touches {', '.join(touched)} without naming a tenant")
    assert problems == []
