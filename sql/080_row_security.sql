-- Row-level security: tenant_isolation -> org_isolation -> user_visibility, plus admin_override (seed 000).
--
-- Per table:
--   tenant_isolation  (permissive)  the row's tenant is the context tenant
--   admin_override    (permissive)  platform_admin sees every tenant
--   org_isolation     (restrictive) rows of an org are visible to that org only; NULL org = whole tenant
--   user_visibility   (restrictive) scope: shared -> everyone allowed so far; cursor -> its user and session;
--                                   l-private -> its user only
-- tenant_admin and platform_admin pass the restrictive layers. Policies apply TO PUBLIC, so the owner (under
-- FORCE ROW LEVEL SECURITY) and SECURITY DEFINER functions are bound by them too. Every context function is
-- wrapped in a scalar sub-select so it is evaluated once per query, not per row.

create or replace procedure memsub.install_row_security(p_table regclass, p_layers text[])
language plpgsql security invoker
set search_path = pg_catalog, memsub
as $$
declare
    admin_pass constant text := '(select memsub.is_tenant_admin()) or (select memsub.is_platform_admin())';
begin
    execute format('alter table %s enable row level security', p_table);
    execute format('alter table %s force row level security', p_table);

    execute format('drop policy if exists tenant_isolation on %s', p_table);
    execute format('create policy tenant_isolation on %s as permissive for all to public '
                   'using (tenant_id = (select memsub.current_tenant_id()))', p_table);
    execute format('comment on policy tenant_isolation on %s is %L', p_table,
                   'Rows of the context tenant only (memsub.set_context).');

    execute format('drop policy if exists admin_override on %s', p_table);
    execute format('create policy admin_override on %s as permissive for all to public '
                   'using ((select memsub.is_platform_admin()))', p_table);
    execute format('comment on policy admin_override on %s is %L', p_table,
                   'platform_admin contexts (members of memsub_platform_admin) reach every tenant.');

    execute format('drop policy if exists org_isolation on %s', p_table);
    if 'org' = any(p_layers) then
        execute format('create policy org_isolation on %s as restrictive for all to public '
                       'using (org_id is null or org_id = (select memsub.current_org_id()) or %s)',
                       p_table, admin_pass);
        execute format('comment on policy org_isolation on %s is %L', p_table,
                       'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.');
    end if;

    execute format('drop policy if exists user_visibility on %s', p_table);
    if 'user' = any(p_layers) then
        execute format('create policy user_visibility on %s as restrictive for all to public using ('
                       'scope = ''shared'''
                       ' or (scope = ''l-private'' and user_id = (select memsub.current_user_id()))'
                       ' or (scope = ''cursor'' and (user_id = (select memsub.current_user_id())'
                       '                            or session_id = (select memsub.current_session_id())))'
                       ' or %s)', p_table, admin_pass);
        execute format('comment on policy user_visibility on %s is %L', p_table,
                       'Scope: shared rows for all, cursor rows for their user and session, l-private rows for their user; admins pass.');
    end if;
end
$$;
comment on procedure memsub.install_row_security(regclass, text[]) is
    'Installs the standard memsub policy set on a tenant table: tenant_isolation and admin_override always, '
    'org_isolation when layers has ''org'', user_visibility (by scope) when layers has ''user''. Idempotent.';

call memsub.install_row_security('memsub.packet_store', array['org', 'user']);
call memsub.install_row_security('memsub.packet_threads', array[]::text[]);
