-- Area: operations. Seed: seed 000 "MULTI-TENANT IDENTITY" (a tenant's rows, all of them, removed at once).
--
-- Erasing a tenant: a customer leaving, or a data-protection erasure request.
--
-- memsub.erase_tenant deletes every row of one tenant from every memsub table that has a tenant_id column,
-- whichever it is (the tables are found in the catalog when it runs, so a table added later is covered without a
-- change here), plus the login bindings to the tenant and the idle maintenance lock rows. The embeddings go with
-- memory_embeddings: its 16 hash partitions (migration 2.30.0) are shared by the tenants hashed to them, so no
-- partition is the tenant's own to drop. Tables are emptied children first (the order of their foreign keys), in
-- the caller's transaction: a failure leaves everything as it was.
--
-- The packet event log is immutable (sql/110_packet_guard.sql): its guard lets a packet that has not expired be
-- deleted only by memsub_expiry_owner while memsub.erasing_tenant names the packet's tenant. This function is
-- owned by memsub_expiry_owner (a NOLOGIN role granted to nobody), sets that setting for its own transaction and
-- clears it before it returns; a login setting it by hand is still not memsub_expiry_owner, and the only other
-- functions that role owns delete expired rows alone. Rows are reached through the platform_admin context the
-- caller must hold (admin_override, and the admin pass of every restrictive policy); not_expired lets the expiry
-- owner see the expired rows not yet purged.
--
-- The materialized views (sql/950_materialized_views.sql) keep the tenant's aggregates until they are refreshed:
-- memsub tenant erase refreshes them after the erasure commits (CALL memsub.refresh_memory_views()).

create or replace function memsub.erase_tenant(p_tenant_id uuid, p_confirm text)
returns table (table_name text, deleted bigint)
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
#variable_conflict use_column
declare
    v_table   regclass;
    v_count   bigint;
    v_deleted jsonb := '{}';
begin
    if not memsub.is_platform_admin() then
        raise exception 'memsub.erase_tenant: needs a platform_admin context' using errcode = '42501';
    end if;
    if p_tenant_id is null then
        raise exception 'memsub.erase_tenant: field "tenant_id" is required' using errcode = '22004',
            column = 'tenant_id';
    end if;
    if p_confirm is distinct from p_tenant_id::text then
        raise exception 'memsub.erase_tenant: field "confirm" must repeat the tenant id (%) to erase it', p_tenant_id
            using errcode = '22023', column = 'confirm',
                  hint = 'Pass the tenant id''s text twice: as p_tenant_id and as p_confirm.';
    end if;
    perform pg_catalog.set_config('memsub.erasing_tenant', p_tenant_id::text, true);

    -- Every table with a tenant_id column, referencing tables before the tables they reference: a table's rank is
    -- the longest chain of foreign keys that reaches it.
    for v_table in
        with recursive tenant_tables as (
            select c.oid
              from pg_catalog.pg_class c
              join pg_catalog.pg_attribute a
                on a.attrelid = c.oid and a.attname = 'tenant_id' and a.attnum > 0 and not a.attisdropped
             where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
        ), refs as (
            select distinct k.conrelid as child, k.confrelid as parent
              from pg_catalog.pg_constraint k
             where k.contype = 'f' and k.conrelid <> k.confrelid
               and k.conrelid in (select oid from tenant_tables) and k.confrelid in (select oid from tenant_tables)
        ), ranked(oid, rank) as (
            select t.oid, 0 from tenant_tables t
            union all
            select r.parent, d.rank + 1 from ranked d join refs r on r.child = d.oid where d.rank < 100
        )
        select d.oid::regclass from ranked d group by d.oid order by max(d.rank), d.oid::regclass::text
    loop
        execute pg_catalog.format('delete from %s t where t.tenant_id = $1', v_table) using p_tenant_id;
        get diagnostics v_count = row_count;
        table_name := (select c.relname::text from pg_catalog.pg_class c where c.oid = v_table);
        deleted := v_count;
        v_deleted := v_deleted || pg_catalog.jsonb_build_object(table_name, deleted);
        return next;
    end loop;

    -- Who may act for the tenant (memsub.bind_login): no login is bound to a tenant that is gone.
    delete from memsub.login_bindings b where b.bound_tenant_id = p_tenant_id;
    get diagnostics v_count = row_count;
    table_name := 'login_bindings';
    deleted := v_count;
    v_deleted := v_deleted || pg_catalog.jsonb_build_object(table_name, deleted);
    return next;

    -- The maintenance lock rows are keyed by a hash of text that names the tenant with a thread, a fact's subject,
    -- a file path ...; the text is not kept, so the tenant's rows cannot be told apart. They hold no data and may
    -- be deleted while nothing holds them: every idle one goes (the next lock of a key creates its row again),
    -- except the maintain tasks' rows, made at installation so that a run never waits for their creation.
    delete from memsub.maintenance_lock l
     where l.ctid in (select m.ctid from memsub.maintenance_lock m where m.task <> 'maintain'
                        for update skip locked);
    get diagnostics v_count = row_count;
    table_name := 'maintenance_lock';
    deleted := v_count;
    v_deleted := v_deleted || pg_catalog.jsonb_build_object(table_name, deleted);
    return next;

    -- What stays of the tenant: that it was erased, by whom, when, and the counts (its audit rows are gone).
    insert into memsub.tenant_erasures (erased_tenant_id, deleted_rows) values (p_tenant_id, v_deleted);
    perform pg_catalog.set_config('memsub.erasing_tenant', '', true);
end
$$;
comment on function memsub.erase_tenant(uuid, text) is
    'Deletes every row of one tenant from every memsub table with a tenant_id column (the packet event log, its '
    'tombstones and embeddings, audit, access log, search statistics, API keys, ... whatever the catalog lists '
    'when it runs), the login bindings to the tenant and the idle maintenance lock rows, in the caller''s '
    'transaction; returns how many rows each table lost, and records that (tenant, login, time, counts) in '
    'memsub.tenant_erasures. p_confirm must repeat p_tenant_id''s text (22023, column '
    'confirm; a NULL tenant: 22004, column tenant_id). Needs a platform_admin context (42501 otherwise). The '
    'materialized views keep the tenant''s aggregates until memsub.refresh_memory_views() runs.';
alter function memsub.erase_tenant(uuid, text) owner to memsub_expiry_owner;

-- What the owner deletes: every tenant table, read to find the tenant's rows, the bindings and the lock rows;
-- and the functions the tables' policies and check constraints call (the planner folds the immutable ones),
-- which it runs under as any caller does. Granted again whenever
-- this file runs, so a table or policy added later is covered.
do $erasure_grants$
declare
    v_table    regclass;
    v_function regprocedure;
begin
    for v_table in
        select c.oid::regclass
          from pg_catalog.pg_class c
          join pg_catalog.pg_attribute a
            on a.attrelid = c.oid and a.attname = 'tenant_id' and a.attnum > 0 and not a.attisdropped
         where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
    loop
        execute pg_catalog.format('grant select, delete on %s to memsub_expiry_owner', v_table);
    end loop;
    for v_function in
        select distinct d.refobjid::regprocedure
          from pg_catalog.pg_depend d
         where d.refclassid = 'pg_catalog.pg_proc'::regclass
           and (   (d.classid = 'pg_catalog.pg_policy'::regclass
                    and d.objid in (select p.oid from pg_catalog.pg_policy p join pg_catalog.pg_class c
                                        on c.oid = p.polrelid where c.relnamespace = 'memsub'::regnamespace))
                or (d.classid = 'pg_catalog.pg_constraint'::regclass
                    and d.objid in (select k.oid from pg_catalog.pg_constraint k
                                     where k.connamespace = 'memsub'::regnamespace)))
    loop
        execute pg_catalog.format('grant execute on function %s to memsub_expiry_owner', v_function);
    end loop;
end
$erasure_grants$;
grant select, delete on memsub.login_bindings to memsub_expiry_owner;
grant insert on memsub.tenant_erasures to memsub_expiry_owner;
grant select on memsub.tenant_erasures to memsub_platform_admin;
grant select, update, delete on memsub.maintenance_lock to memsub_expiry_owner;  -- update: skip what is locked
grant execute on function memsub.is_platform_admin(), memsub.current_context_roles(), memsub.acting_role()
    to memsub_expiry_owner;

revoke all on function memsub.erase_tenant(uuid, text) from public;
grant execute on function memsub.erase_tenant(uuid, text) to memsub_platform_admin;
