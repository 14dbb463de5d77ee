-- Area: operations. Seed: seed 000 "MULTI-TENANT IDENTITY" (roles: admin_override, the application).
--
-- Ownership and the schema-wide privileges; applied last. Nothing is granted to PUBLIC: each area file grants
-- its own objects to the roles that need them, by name.

-- Role hierarchy: a tenant admin can do what the application does; a platform admin what a tenant admin does.
grant memsub_app to memsub_tenant_admin;
grant memsub_tenant_admin to memsub_platform_admin;

-- Every memsub object belongs to memsub_owner, a role that cannot log in: SECURITY DEFINER functions run as it.
-- The exceptions are memsub_view_owner's (the materialized views and their refresh function, see
-- 950_materialized_views.sql), memsub_retrieval_owner's (the functions that apply the tenant predicates
-- explicitly, see 320_hybrid_search.sql and 340_importance.sql) and memsub_expiry_owner's (purge_expired and
-- get_lineage, the readers of expired packets, see 140_packet_hygiene.sql).
alter schema memsub owner to memsub_owner;
do $ownership$
declare
    object record;
begin
    for object in
        select format('alter %s %s owner to memsub_owner',
                      case c.relkind when 'v' then 'view' when 'm' then 'materialized view'
                                     when 'S' then 'sequence' else 'table' end,
                      c.oid::regclass) as statement
          from pg_catalog.pg_class c
         where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'S')
           and pg_catalog.pg_get_userbyid(c.relowner) not in ('memsub_owner', 'memsub_view_owner')
           -- identity sequences follow their table's owner and cannot be altered on their own (a column's
           -- dependency on its own table, as a generated column of a table made with LIKE has, is no such tie)
           and not exists (select from pg_catalog.pg_depend d
                            where d.classid = 'pg_catalog.pg_class'::regclass and d.objid = c.oid
                              and d.objsubid = 0 and d.deptype = 'i')
        union all
        select format('alter %s %s owner to memsub_owner',
                      case p.prokind when 'p' then 'procedure' else 'function' end, p.oid::regprocedure)
          from pg_catalog.pg_proc p
         where p.pronamespace = 'memsub'::regnamespace
           and pg_catalog.pg_get_userbyid(p.proowner)
               not in ('memsub_owner', 'memsub_view_owner', 'memsub_retrieval_owner', 'memsub_expiry_owner')
        union all
        select format('alter type %s owner to memsub_owner', t.oid::regtype)
          from pg_catalog.pg_type t
         where t.typnamespace = 'memsub'::regnamespace and t.typtype = 'c'
           and not exists (select from pg_catalog.pg_class c where c.oid = t.typrelid and c.relkind <> 'c')
           and pg_catalog.pg_get_userbyid(t.typowner) <> 'memsub_owner'
    loop
        execute object.statement;
    end loop;
end
$ownership$;

revoke all on schema memsub from public;
revoke all on all tables in schema memsub from public;
-- Identity sequences are left alone: PUBLIC never has rights on them, and an explicit ACL on them would not
-- survive pg_dump/pg_restore (which recreates them with the table's default privileges).
do $sequences$
declare
    sequence_name regclass;
begin
    for sequence_name in
        select c.oid::regclass from pg_catalog.pg_class c
         where c.relnamespace = 'memsub'::regnamespace and c.relkind = 'S'
           and not exists (select from pg_catalog.pg_depend d
                            where d.classid = 'pg_catalog.pg_class'::regclass and d.objid = c.oid
                              and d.deptype = 'i')
    loop
        execute format('revoke all on sequence %s from public', sequence_name);
    end loop;
end
$sequences$;
revoke all on all functions in schema memsub from public;
revoke all on all procedures in schema memsub from public;
do $types$
declare
    type_name regtype;
begin
    for type_name in select t.oid::regtype from pg_catalog.pg_type t
                      where t.typnamespace = 'memsub'::regnamespace and t.typtype in ('c', 'e', 'd')
                        and not exists (select from pg_catalog.pg_class c where c.oid = t.typrelid and c.relkind <> 'c')
    loop
        execute format('revoke all on type %s from public', type_name);
    end loop;
end
$types$;

grant usage on schema memsub to memsub_app, memsub_analyst;

-- Context: everyone who queries memsub tables needs the functions the policies call.
grant execute on function
    memsub.set_context(uuid, uuid, uuid, text[], text), memsub._check_context_role(text, text),
    memsub.current_tenant_id(), memsub.current_org_id(), memsub.current_user_id(),
    memsub.current_session_id(), memsub.current_context_roles(),
    memsub.acting_role(), memsub.is_platform_admin(), memsub.is_tenant_admin()
    to memsub_app, memsub_analyst;

-- Migration history is readable by the analyst (what is installed, when, by whom).
grant select on memsub.schema_history, memsub.schema_repeatable_history to memsub_analyst;
