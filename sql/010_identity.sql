-- Area: foundation. Seed: seed 000 "MULTI-TENANT IDENTITY" (tenant_id -> org_id -> user_id, the RLS layering).
--
-- Identity and request context.
--
-- The tenant context is transaction-local: memsub.set_context() (015_identity_binding.sql, next to the bindings
-- it checks) stores it with set_config(..., true), so it ends with the transaction and cannot leak to the next
-- user of a pooled connection. Row-level security policies read it through the small STABLE functions below,
-- always wrapped as (select memsub.fn()) so the value is computed once per query.

create or replace function memsub._check_context_role(p_role text, p_caller text) returns text
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_role <> all (memsub.context_roles()) then
        raise exception '%: unknown role "%"', p_caller, p_role
            using errcode = '22023', column = 'roles',
                  hint = 'Known context roles: ' || pg_catalog.array_to_string(memsub.context_roles(), ', ') || '.';
    end if;
    return p_role;
end
$$;
comment on function memsub._check_context_role(text, text) is
    'Internal: refuses (22023, column roles, the known roles in the hint) a requested context role that is not one '
    'of memsub.context_roles(), the message naming the calling function p_caller. Returns the role.';

-- The context is read back only with its seal: settings written by hand (set_config, SET) or changed after
-- memsub.set_context are refused, so the tenant is the one the binding or a signed token allowed.
create or replace function memsub.current_tenant_id() returns uuid
language plpgsql stable security definer parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant text := nullif(pg_catalog.current_setting('memsub.tenant_id', true), '');
    seal_key record;
begin
    if tenant is null then
        return null;
    end if;
    -- The seal memsub.set_context or memsub._store_context (015_identity_binding.sql) wrote, recomputed with the
    -- same expression.
    select k.inner_pad, k.outer_pad into seal_key from memsub.context_keys k where k.key_id = 'seal';
    if pg_catalog.current_setting('memsub.context_seal', true) is distinct from
       pg_catalog.encode(pg_catalog.sha256(seal_key.outer_pad || pg_catalog.sha256(seal_key.inner_pad
           || pg_catalog.convert_to(pg_catalog.concat_ws('|', session_user,
                  extract(epoch from pg_catalog.transaction_timestamp()), pg_catalog.quote_nullable(tenant),
                  pg_catalog.quote_nullable(pg_catalog.current_setting('memsub.org_id', true)),
                  pg_catalog.quote_nullable(pg_catalog.current_setting('memsub.user_id', true)),
                  pg_catalog.quote_nullable(pg_catalog.current_setting('memsub.session_id', true)),
                  pg_catalog.quote_nullable(pg_catalog.current_setting('memsub.roles', true))), 'UTF8'))), 'hex') then
        raise exception 'memsub: the context was not set by memsub.set_context in this transaction (or was changed since)'
            using errcode = '42501', column = 'tenant_id',
                  hint = 'Set the context with memsub.set_context or memsub.set_context_signed, never with set_config or SET.';
    end if;
    return tenant::uuid;
end
$$;
comment on function memsub.current_tenant_id() is
    'Tenant of the current transaction''s context, or NULL when none is set. Raises 42501 when the tenant, org, '
    'user, session or context role settings do not carry the seal memsub.set_context wrote in this transaction.';

-- The tenant the context names, NOT checked against its seal: a key for a read under row-level security only.
-- The tenant policy of the table read checks the seal (memsub.current_tenant_id) before it returns any row; a
-- caller whose read returns nothing checks the seal itself, so a forged tenant is refused whether or not it holds
-- anything. The LangGraph store's reads use it (sql/920_langgraph_store.sql): checking the seal before the read
-- as well cost a store get a second check.
create or replace function memsub._unsealed_tenant_id() returns uuid
language sql stable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case when pg_input_is_valid(t.setting, 'uuid') then t.setting::uuid end
      from (select current_setting('memsub.tenant_id', true) as setting) t
$$;
comment on function memsub._unsealed_tenant_id() is
    'Internal: the tenant the context names, NOT checked against the context''s seal (NULL when unset or not a '
    'uuid): only a key for a read under row-level security, whose caller checks the seal itself when the read '
    'returns nothing (memsub.current_tenant_id).';

create or replace function memsub.current_org_id() returns uuid
language sql stable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select nullif(current_setting('memsub.org_id', true), '')::uuid $$;
comment on function memsub.current_org_id() is 'Organization of the current context, or NULL.';

create or replace function memsub.current_user_id() returns uuid
language sql stable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select nullif(current_setting('memsub.user_id', true), '')::uuid $$;
comment on function memsub.current_user_id() is 'User of the current context, or NULL.';

create or replace function memsub.current_session_id() returns text
language sql stable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select nullif(current_setting('memsub.session_id', true), '') $$;
comment on function memsub.current_session_id() is 'Session of the current context, or NULL.';

create or replace function memsub.current_context_roles() returns text[]
language sql stable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select coalesce(string_to_array(nullif(current_setting('memsub.roles', true), ''), ','), '{}') $$;
comment on function memsub.current_context_roles() is 'Context roles requested by memsub.set_context() (tenant_admin, platform_admin).';

-- The role whose memberships count: the current role when it can log in; otherwise (inside a SECURITY DEFINER
-- function, which runs as one of memsub's NOLOGIN owners, or after SET ROLE to a group role) the login role.
create or replace function memsub.acting_role() returns name
language sql stable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case when (select r.rolcanlogin from pg_catalog.pg_roles r where r.rolname = current_user)
                then current_user else session_user end
$$;
comment on function memsub.acting_role() is
    'The database role whose memsub role memberships count: current_user when it can log in, else the login '
    'role (inside SECURITY DEFINER functions owned by memsub''s NOLOGIN owners, or after SET ROLE to a group).';

-- A context role counts only when the acting role also holds the matching memsub role: setting the
-- memsub.roles GUC by hand grants nothing.
create or replace function memsub.is_platform_admin() returns boolean
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    select 'platform_admin' = any(memsub.current_context_roles())
       and pg_catalog.pg_has_role(memsub.acting_role(), 'memsub_platform_admin', 'MEMBER')
$$;
comment on function memsub.is_platform_admin() is
    'True when the context asks for platform_admin and the acting role is a member of memsub_platform_admin.';

create or replace function memsub.is_tenant_admin() returns boolean
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    select 'tenant_admin' = any(memsub.current_context_roles())
       and pg_catalog.pg_has_role(memsub.acting_role(), 'memsub_tenant_admin', 'MEMBER')
$$;
comment on function memsub.is_tenant_admin() is
    'True when the context asks for tenant_admin and the acting role is a member of memsub_tenant_admin.';

create or replace function memsub._require_tenant_id() returns uuid
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
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
comment on function memsub._require_tenant_id() is
    'Returns the context tenant; raises SQLSTATE 42501 when no tenant context is set (writes never get a NULL tenant).';

-- Row-level security framework: tenant_isolation -> org_isolation -> user_visibility, plus admin_override (seed 000).
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

-- Re-applying sql/ must not take ACCESS EXCLUSIVE (DROP/CREATE POLICY) or SHARE ROW EXCLUSIVE (CREATE TRIGGER) on a
-- table whose policy or trigger it would only create again as it is: the applications' calls on that table would
-- queue behind the migrator's transaction until it commits. memsub._ensure_policy and memsub._ensure_trigger create
-- the object unless the catalog already holds exactly what the statement creates, which a probe tells: the same
-- statement applied to a temporary table of the same name and columns (CREATE TABLE ... LIKE takes ACCESS SHARE),
-- whose catalog definition is then compared with the table's. Anything else (no such object, another definition,
-- a probe that cannot be made) drops and creates it, as before. memsub._ensure_view does the same for CREATE OR
-- REPLACE VIEW (ACCESS EXCLUSIVE on the view), with a temporary view of the same name as the probe.
-- Making the temporary table is most of a probe's cost (its catalog rows and TOAST table: some 3 ms, against
-- 0.3 ms for the policy on it), and sql/ probes about 140 policies and triggers of about 45 tables. So the
-- transaction that applies sql/ sets memsub.keep_probes to on (transaction-local; the migrator's first statement
-- of each file): a probe table is then made once per table, ON COMMIT DROP, and used for every later probe of
-- that table in the transaction (the probe's policy or trigger is dropped after each comparison, the table kept,
-- its OID listed in the transaction-local setting memsub.probe_tables). One is used again only while it is one of
-- those and has the table's columns still; anything else (a temporary table of that name the session made
-- itself, say) is no probe.
-- Called without memsub.keep_probes, every probe makes its table and drops it, as before.
create or replace function memsub._same_as_created(p_kind text, p_table regclass, p_name text, p_create text)
returns boolean
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_relname name;
    v_probe regclass;
    v_statement text;
    v_same boolean := false;
    v_keep boolean := coalesce(pg_catalog.current_setting('memsub.keep_probes', true), '') = 'on';
    v_columns constant text := 'select array_agg(array[a.attname::text, a.atttypid::text, a.atttypmod::text, '
                               'a.attcollation::text] order by a.attnum) from pg_catalog.pg_attribute a '
                               'where a.attrelid = $1 and a.attnum > 0 and not a.attisdropped';
    v_kept regclass;
    v_probe_columns text[];
    v_table_columns text[];
begin
    if p_kind is null or p_kind not in ('policy', 'trigger', 'view') then
        raise exception 'memsub._same_as_created: p_kind must be policy, trigger or view, not %', p_kind
            using errcode = '22023', column = 'p_kind';
    end if;
    select c.relname into v_relname from pg_class c where c.oid = p_table;
    if v_relname is null
       or p_kind = 'view' and not exists (select from pg_class where oid = p_table and relkind = 'v')
       or p_kind = 'policy' and not exists (select from pg_policy where polrelid = p_table and polname = p_name)
       or p_kind = 'trigger' and not exists (select from pg_trigger
                                             where tgrelid = p_table and tgname = p_name and not tgisinternal) then
        return false;
    end if;
    -- The statement aimed at the probe: its first "on <table>" (the ON clause) names pg_temp's table instead; a
    -- view's "create or replace view <view>" creates a temporary view of the same name.
    if p_kind = 'view' then
        v_statement := regexp_replace(p_create, '^\s*create\s+or\s+replace\s+view\s+(memsub\.)?' || v_relname || '\M',
                                      'create temporary view ' || quote_ident(v_relname), 'i');
    else
        v_statement := regexp_replace(p_create, '\mon\s+(memsub\.)?' || v_relname || '\M',
                                      'on pg_temp.' || quote_ident(v_relname), 'i');
    end if;
    if v_statement = p_create then
        return false;
    end if;
    begin
        if p_kind <> 'view' then
            -- the probe table an earlier probe of this transaction kept, while it still has the table's columns
            v_kept := pg_catalog.to_regclass('pg_temp.' || quote_ident(v_relname));
            if v_keep and v_kept is not null and v_kept::oid::text = any(pg_catalog.string_to_array(
                    coalesce(pg_catalog.current_setting('memsub.probe_tables', true), ''), ',')) then
                execute v_columns into v_probe_columns using v_kept;
                execute v_columns into v_table_columns using p_table;
                if v_probe_columns is distinct from v_table_columns then
                    execute format('drop table %s', v_kept);
                    v_kept := null;
                end if;
            else
                v_kept := null;
            end if;
            if v_kept is null then
                execute format('create temporary table %I (like %s)%s', v_relname, p_table,
                               case when v_keep then ' on commit drop' else '' end);
            end if;
        end if;
        execute v_statement;
        v_probe := pg_catalog.to_regclass('pg_temp.' || quote_ident(v_relname));
        if p_kind = 'view' then
            -- the same query, options and columns (names, types, typmods, collations, in order)
            select true into v_same
              from pg_class r, pg_class p
             where r.oid = p_table and p.oid = v_probe and p.relkind = 'v'
               and r.reloptions is not distinct from p.reloptions
               and pg_get_viewdef(r.oid) = pg_get_viewdef(p.oid)
               and (select array_agg(array[a.attname::text, a.atttypid::text, a.atttypmod::text,
                                           a.attcollation::text] order by a.attnum)
                      from pg_attribute a where a.attrelid = r.oid and a.attnum > 0 and not a.attisdropped)
                   = (select array_agg(array[a.attname::text, a.atttypid::text, a.atttypmod::text,
                                             a.attcollation::text] order by a.attnum)
                        from pg_attribute a where a.attrelid = p.oid and a.attnum > 0 and not a.attisdropped);
        elsif p_kind = 'policy' then
            select true into v_same
              from pg_policy r join pg_policy p on p.polrelid = v_probe and p.polname = r.polname
             where r.polrelid = p_table and r.polname = p_name
               and r.polcmd = p.polcmd and r.polpermissive = p.polpermissive and r.polroles = p.polroles
               and pg_get_expr(r.polqual, r.polrelid) is not distinct from pg_get_expr(p.polqual, p.polrelid)
               and pg_get_expr(r.polwithcheck, r.polrelid) is not distinct from pg_get_expr(p.polwithcheck, p.polrelid);
        else
            select true into v_same
              from pg_trigger r join pg_trigger p on p.tgrelid = v_probe and p.tgname = r.tgname
             where r.tgrelid = p_table and r.tgname = p_name and not r.tgisinternal
               and r.tgfoid = p.tgfoid and r.tgtype = p.tgtype and r.tgenabled = p.tgenabled
               and r.tgdeferrable = p.tgdeferrable and r.tginitdeferred = p.tginitdeferred
               and r.tgnargs = p.tgnargs and r.tgargs = p.tgargs
               and r.tgoldtable is not distinct from p.tgoldtable and r.tgnewtable is not distinct from p.tgnewtable
               -- pg_get_triggerdef names the table qualified: pg_temp.<name> for the probe
               and replace(pg_get_triggerdef(p.oid), ' ON pg_temp.' || quote_ident(v_relname) || ' ',
                           ' ON ' || (select quote_ident(c.relnamespace::regnamespace::text) from pg_class c
                                      where c.oid = p_table) || '.' || quote_ident(v_relname) || ' ')
                   = pg_get_triggerdef(r.oid);
        end if;
        if p_kind = 'view' or not v_keep then
            execute format('drop %s %s', case p_kind when 'view' then 'view' else 'table' end, v_probe);
        else  -- the table stays for the next probe of this transaction, without what this one made on it
            execute format('drop %s %I on %s', p_kind, p_name, v_probe);
            if v_kept is null then
                perform pg_catalog.set_config('memsub.probe_tables', concat_ws(',',
                    nullif(pg_catalog.current_setting('memsub.probe_tables', true), ''), v_probe::oid::text), true);
            end if;
        end if;
    exception when others then
        return false;  -- no probe (no TEMP privilege, a temporary table of that name): created again
    end;
    return coalesce(v_same, false);
end
$$;
comment on function memsub._same_as_created(text, regclass, text, text) is
    'True when the policy or trigger p_name of p_table, or the view p_table (p_kind view), is exactly what p_create '
    '(the statement creating it) creates: compared in the catalog with the same statement applied to a temporary '
    'table of the same name and columns (a temporary view of the same name). With memsub.keep_probes on (the '
    'transaction applying sql/), the temporary table is made once per table and transaction, ON COMMIT DROP.';

create or replace procedure memsub._ensure_policy(p_table regclass, p_name text, p_create text)
language plpgsql security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if not memsub._same_as_created('policy', p_table, p_name, p_create) then
        execute format('drop policy if exists %I on %s', p_name, p_table);
        execute p_create;
    end if;
end
$$;
comment on procedure memsub._ensure_policy(regclass, text, text) is
    'Creates policy p_name of p_table with p_create (the statement creating it), dropping one of that name '
    'first, unless it is already exactly that (memsub._same_as_created): then nothing, and no lock on the table.';

create or replace procedure memsub._ensure_trigger(p_table regclass, p_name text, p_create text)
language plpgsql security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if not memsub._same_as_created('trigger', p_table, p_name, p_create) then
        execute format('drop trigger if exists %I on %s', p_name, p_table);
        execute p_create;
    end if;
end
$$;
comment on procedure memsub._ensure_trigger(regclass, text, text) is
    'Creates trigger p_name of p_table with p_create (the statement creating it), dropping one of that name '
    'first, unless it is already exactly that (memsub._same_as_created): then nothing, and no lock on the table.';

create or replace procedure memsub._ensure_view(p_view text, p_create text)
language plpgsql security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if pg_catalog.to_regclass(p_view) is null
       or not memsub._same_as_created('view', pg_catalog.to_regclass(p_view), null, p_create) then
        execute p_create;
    end if;
end
$$;
comment on procedure memsub._ensure_view(text, text) is
    'Runs p_create (the CREATE OR REPLACE VIEW statement of view p_view) unless the view is already exactly what it '
    'creates (memsub._same_as_created): then nothing, and no lock on the view.';

create or replace procedure memsub._install_row_security(p_table regclass, p_layers text[])
language plpgsql security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    admin_pass constant text := '(select memsub.is_tenant_admin()) or (select memsub.is_platform_admin())';
begin
    -- ALTER TABLE takes ACCESS EXCLUSIVE even when the flags are set already: only when one is not.
    if not (select c.relrowsecurity and c.relforcerowsecurity from pg_class c where c.oid = p_table) then
        execute format('alter table %s enable row level security', p_table);
        execute format('alter table %s force row level security', p_table);
    end if;

    call memsub._ensure_policy(p_table, 'tenant_isolation', format(
        'create policy tenant_isolation on %s as permissive for all to public '
        'using (tenant_id = (select memsub.current_tenant_id()))', p_table));
    execute format('comment on policy tenant_isolation on %s is %L', p_table,
                   'Rows of the context tenant only (memsub.set_context).');

    call memsub._ensure_policy(p_table, 'admin_override', format(
        'create policy admin_override on %s as permissive for all to public '
        'using ((select memsub.is_platform_admin()))', p_table));
    execute format('comment on policy admin_override on %s is %L', p_table,
                   'platform_admin contexts (members of memsub_platform_admin) reach every tenant.');

    if 'org' = any(p_layers) then
        call memsub._ensure_policy(p_table, 'org_isolation', format(
            'create policy org_isolation on %s as restrictive for all to public '
            'using (org_id is null or org_id = (select memsub.current_org_id()) or %s)', p_table, admin_pass));
        execute format('comment on policy org_isolation on %s is %L', p_table,
                       'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.');
    elsif exists (select from pg_policy where polrelid = p_table and polname = 'org_isolation') then
        execute format('drop policy org_isolation on %s', p_table);
    end if;

    if 'user' = any(p_layers) then
        call memsub._ensure_policy(p_table, 'user_visibility', format(
            'create policy user_visibility on %s as restrictive for all to public using ('
            'scope = ''shared'''
            ' or (scope = ''l-private'' and user_id = (select memsub.current_user_id()))'
            ' or (scope = ''cursor'' and (user_id = (select memsub.current_user_id())'
            '                            or session_id = (select memsub.current_session_id())))'
            ' or %s)', p_table, admin_pass));
        execute format('comment on policy user_visibility on %s is %L', p_table,
                       'Scope: shared rows for all, cursor rows for their user and session, l-private rows for their user; admins pass.');
    elsif exists (select from pg_policy where polrelid = p_table and polname = 'user_visibility') then
        execute format('drop policy user_visibility on %s', p_table);
    end if;
end
$$;
comment on procedure memsub._install_row_security(regclass, text[]) is
    'Installs the standard memsub policy set on a tenant table: tenant_isolation and admin_override always, '
    'org_isolation when layers has ''org'', user_visibility (by scope) when layers has ''user''. Idempotent.';

-- Expiry is honoured on every read (sql/150_packet_security.sql): a row derived from a packet carries the packet's
-- ttl and is never read once it has passed. memsub_expiry_owner, which purges expired rows (a DELETE must see what
-- it removes), is the one role the policy lets see them. Both sub-selects are evaluated once per query.
create or replace procedure memsub._install_expiry_policy(p_table regclass, p_comment text)
language plpgsql security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    call memsub._ensure_policy(p_table, 'not_expired', format(
        'create policy not_expired on %s as restrictive for select to public '
        'using (ttl is null or ttl > (select pg_catalog.now() at time zone ''UTC'') '
        'or (select current_user = ''memsub_expiry_owner''::name))', p_table));
    execute format('comment on policy not_expired on %s is %L', p_table, p_comment);
end
$$;
comment on procedure memsub._install_expiry_policy(regclass, text) is
    'Installs the not_expired policy on a table with a ttl column (a row is read only while ttl is NULL or in the '
    'future; memsub_expiry_owner, which purges, sees every row), with p_comment as its comment. Idempotent.';
