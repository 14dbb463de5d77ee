-- Identity and request context.
--
-- The tenant context is transaction-local: memsub.set_context() stores it with set_config(..., true), so it
-- ends with the transaction and cannot leak to the next user of a pooled connection. Row-level security
-- policies read it through the small STABLE functions below, always wrapped as (select memsub.fn()) so the
-- value is computed once per query.

create or replace function memsub.set_context(
    p_tenant_id  uuid,
    p_org_id     uuid   default null,
    p_user_id    uuid   default null,
    p_roles      text[] default '{}',
    p_session_id text   default null
) returns void
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub
as $$
declare
    requested text;
begin
    if p_tenant_id is null and not ('platform_admin' = any(coalesce(p_roles, '{}'))) then
        raise exception 'memsub.set_context: tenant_id must not be null'
            using errcode = '22004', column = 'tenant_id',
                  hint = 'Only a platform_admin context may omit the tenant.';
    end if;
    foreach requested in array coalesce(p_roles, '{}') loop
        if requested not in ('tenant_admin', 'platform_admin') then
            raise exception 'memsub.set_context: unknown role "%"', requested
                using errcode = '22023', column = 'roles',
                      hint = 'Known context roles: tenant_admin, platform_admin.';
        end if;
        if not pg_catalog.pg_has_role(current_user, 'memsub_' || requested, 'MEMBER') then
            raise exception 'memsub.set_context: role % requires membership in memsub_%', requested, requested
                using errcode = '42501', column = 'roles';
        end if;
    end loop;
    perform pg_catalog.set_config('memsub.tenant_id', coalesce(p_tenant_id::text, ''), true);
    perform pg_catalog.set_config('memsub.org_id', coalesce(p_org_id::text, ''), true);
    perform pg_catalog.set_config('memsub.user_id', coalesce(p_user_id::text, ''), true);
    perform pg_catalog.set_config('memsub.roles', coalesce(array_to_string(p_roles, ','), ''), true);
    perform pg_catalog.set_config('memsub.session_id', coalesce(p_session_id, ''), true);
end
$$;
comment on function memsub.set_context(uuid, uuid, uuid, text[], text) is
    'Sets the transaction-local request context (tenant, org, user, context roles, session) read by row-level security. '
    'Context roles tenant_admin/platform_admin require membership in memsub_tenant_admin/memsub_platform_admin.';

create or replace function memsub.current_tenant_id() returns uuid
language sql stable security invoker parallel safe
set search_path = pg_catalog
as $$ select nullif(current_setting('memsub.tenant_id', true), '')::uuid $$;
comment on function memsub.current_tenant_id() is 'Tenant of the current transaction''s context, or NULL when none is set.';

create or replace function memsub.current_org_id() returns uuid
language sql stable security invoker parallel safe
set search_path = pg_catalog
as $$ select nullif(current_setting('memsub.org_id', true), '')::uuid $$;
comment on function memsub.current_org_id() is 'Organization of the current context, or NULL.';

create or replace function memsub.current_user_id() returns uuid
language sql stable security invoker parallel safe
set search_path = pg_catalog
as $$ select nullif(current_setting('memsub.user_id', true), '')::uuid $$;
comment on function memsub.current_user_id() is 'User of the current context, or NULL.';

create or replace function memsub.current_session_id() returns text
language sql stable security invoker parallel safe
set search_path = pg_catalog
as $$ select nullif(current_setting('memsub.session_id', true), '') $$;
comment on function memsub.current_session_id() is 'Session of the current context, or NULL.';

create or replace function memsub.current_context_roles() returns text[]
language sql stable security invoker parallel safe
set search_path = pg_catalog
as $$ select coalesce(string_to_array(nullif(current_setting('memsub.roles', true), ''), ','), '{}') $$;
comment on function memsub.current_context_roles() is 'Context roles requested by memsub.set_context() (tenant_admin, platform_admin).';

-- A context role counts only when the database role executing the query also holds the matching memsub
-- role: setting the memsub.roles GUC by hand grants nothing.
create or replace function memsub.is_platform_admin() returns boolean
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub
as $$
    select 'platform_admin' = any(memsub.current_context_roles())
       and pg_catalog.pg_has_role(current_user, 'memsub_platform_admin', 'MEMBER')
$$;
comment on function memsub.is_platform_admin() is
    'True when the context asks for platform_admin and the current role is a member of memsub_platform_admin.';

create or replace function memsub.is_tenant_admin() returns boolean
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub
as $$
    select 'tenant_admin' = any(memsub.current_context_roles())
       and pg_catalog.pg_has_role(current_user, 'memsub_tenant_admin', 'MEMBER')
$$;
comment on function memsub.is_tenant_admin() is
    'True when the context asks for tenant_admin and the current role is a member of memsub_tenant_admin.';

create or replace function memsub.require_tenant_id() returns uuid
language plpgsql stable security invoker
set search_path = pg_catalog, memsub
as $$
declare
    tenant uuid := memsub.current_tenant_id();
begin
    if tenant is null then
        raise exception 'memsub: no tenant context; call memsub.set_context(tenant_id, ...) in this transaction first'
            using errcode = '42501', column = 'tenant_id';
    end if;
    return tenant;
end
$$;
comment on function memsub.require_tenant_id() is
    'Returns the context tenant; raises SQLSTATE 42501 when no tenant context is set (writes never get a NULL tenant).';
