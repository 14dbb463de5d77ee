-- Area: foundation. Seed: seed 000 "MULTI-TENANT IDENTITY" (who may act for a tenant).
--
-- Identity binding: the tenant a connection acts for is decided by the database, not merely asserted.
--
-- Three parts (docs/security.md, "Identity binding"):
-- * login_bindings: memsub.set_context accepts from a login (session_user) only the tenants and organizations it
--   is bound to. A login with no binding is refused unless installation_settings.unbound_logins = 'allow'.
--   Platform admins (members of memsub_platform_admin) and superusers, who reach every tenant anyway, need none.
-- * the seal: set_context stores, next to the context, an HMAC over it, the login and the transaction's start
--   under a key no login can read. memsub.current_tenant_id() refuses a context whose seal does not match, so a
--   context written by hand with set_config/SET, or changed after set_context, is worthless.
-- * signed contexts: memsub.set_context_signed(token) accepts a context a gateway signed (HMAC-SHA256 under a
--   registered key, see python/memsub/context_tokens.py), with no binding needed.
-- One transaction acts for one tenant: set_context to another tenant in the same transaction is refused.
--
-- HMAC-SHA256 is computed with core sha256() (no extension): keys are stored as their two 64-byte pads, so a
-- MAC is sha256(outer_pad || sha256(inner_pad || message)).

create or replace function memsub._hmac_pads(p_key bytea, out inner_pad bytea, out outer_pad bytea)
language sql immutable strict parallel safe security invoker
set search_path = pg_catalog, pg_temp
as $$
    with k as (select case when length(p_key) > 64 then sha256(p_key) else p_key end as key),
         padded as (select k.key || decode(repeat('00', 64 - length(k.key)), 'hex') as key from k)
    select decode(string_agg(lpad(to_hex(get_byte(padded.key, i) # 54), 2, '0'), '' order by i), 'hex'),
           decode(string_agg(lpad(to_hex(get_byte(padded.key, i) # 92), 2, '0'), '' order by i), 'hex')
      from padded, generate_series(0, 63) as i
$$;
comment on function memsub._hmac_pads(bytea) is
    'The HMAC-SHA256 inner and outer pads of a key (RFC 2104): key (hashed when over 64 bytes) zero-padded to '
    '64 bytes, XOR 0x36 and XOR 0x5c.';

create or replace function memsub._context_mac(p_key_id text, p_message text) returns bytea
language sql stable parallel safe security invoker
set search_path = pg_catalog, pg_temp
as $$
    select sha256(k.outer_pad || sha256(k.inner_pad || convert_to(p_message, 'UTF8')))
      from memsub.context_keys k where k.key_id = p_key_id
$$;
comment on function memsub._context_mac(text, text) is
    'HMAC-SHA256 of a message under a stored context key; NULL when the key does not exist. Granted to nobody: '
    'only memsub''s SECURITY DEFINER context functions may compute MACs.';

-- Row-level security is what keeps each tenant's rows apart. A session with row_security off (a login's or a
-- database's default, as a backup tool's login has it) would fail at the first table a call reads, naming a policy
-- (with PostgreSQL's hint to take FORCE ROW LEVEL SECURITY off): every way of setting a context refuses it first,
-- naming the setting. They test the setting inline and call this only to raise.
create or replace function memsub._refuse_without_row_security() returns void
language plpgsql stable security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception 'memsub: row_security is off in this session; memsub keeps tenants apart by row-level security and does not run without it'
        using errcode = '42501', column = 'row_security',
              hint = 'Reset it for the login or the database (alter role ... reset row_security), or set it on.';
end
$$;
comment on function memsub._refuse_without_row_security() is
    'Raises 42501 naming row_security: memsub.set_context, set_context_signed (through _store_context) and '
    'authenticate_api_key call it when row_security is off in the session, which row-level security needs on.';

create or replace function memsub._store_context(
    p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_session_id text
) returns void
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    previous text := nullif(pg_catalog.current_setting('memsub.tenant_id', true), '');
    sealed   boolean;
begin
    if pg_catalog.current_setting('row_security') = 'off' then
        perform memsub._refuse_without_row_security();
    end if;
    -- One transaction acts for one tenant: a second context for another tenant is refused (platform admins,
    -- who reach every tenant anyway, excepted). A context written by hand does not count as a previous one:
    -- memsub.current_tenant_id() refuses its seal.
    if previous is not null and previous is distinct from p_tenant_id::text
       and not pg_catalog.pg_has_role(session_user, 'memsub_platform_admin', 'MEMBER') then
        begin
            perform memsub.current_tenant_id();
            sealed := true;
        exception when insufficient_privilege then
            sealed := false;
        end;
        if sealed then
            raise exception 'memsub.set_context: this transaction already acts for tenant %; a transaction acts for one tenant', previous
                using errcode = '42501', column = 'tenant_id',
                      hint = 'Commit or roll back, then set the context of the next tenant in a new transaction.';
        end if;
    end if;
    -- One statement writes every setting (each statement costs more than the settings it writes). The seal
    -- covers the login, the start of the transaction, tenant, org, user, session and context roles: it fits one
    -- login's context in one transaction only. A context role counts only for a member of the matching memsub
    -- role, and a role written by hand breaks the seal: an organization-bound tenant admin cannot give itself
    -- the tenant_admin context set_context refused. Each setting is quoted (quote_nullable), so no two contexts
    -- give the same message.
    -- memsub.current_tenant_id() (010_identity.sql), which checks the seal once per query, and memsub.set_context,
    -- which writes it at the start of every call, compute the same MAC inline instead of calling _context_mac.
    perform pg_catalog.set_config('memsub.tenant_id', coalesce(p_tenant_id::text, ''), true),
            pg_catalog.set_config('memsub.org_id', coalesce(p_org_id::text, ''), true),
            pg_catalog.set_config('memsub.user_id', coalesce(p_user_id::text, ''), true),
            pg_catalog.set_config('memsub.roles', coalesce(array_to_string(p_roles, ','), ''), true),
            pg_catalog.set_config('memsub.session_id', coalesce(p_session_id, ''), true),
            pg_catalog.set_config('memsub.context_seal',
                pg_catalog.encode(memsub._context_mac('seal', pg_catalog.concat_ws('|', session_user,
                    extract(epoch from pg_catalog.transaction_timestamp()),
                    pg_catalog.quote_nullable(coalesce(p_tenant_id::text, '')),
                    pg_catalog.quote_nullable(coalesce(p_org_id::text, '')),
                    pg_catalog.quote_nullable(coalesce(p_user_id::text, '')),
                    pg_catalog.quote_nullable(coalesce(p_session_id, '')),
                    pg_catalog.quote_nullable(coalesce(array_to_string(p_roles, ','), '')))), 'hex'),
                true);
end
$$;
comment on function memsub._store_context(uuid, uuid, uuid, text[], text) is
    'Writes the transaction-local context settings and their seal (HMAC-SHA256 under the seal key of the login, '
    'transaction start, tenant, org, user, session and context roles); refuses a second tenant in one transaction. Granted to '
    'nobody: called by memsub.set_context and memsub.set_context_signed after their checks.';

-- The binding check of set_context was a function of its own, memsub.seal_context, until set_context did it itself.
drop function if exists memsub.seal_context(uuid, uuid, uuid, text[], text);

create or replace function memsub._check_login_without_binding(p_login name, p_tenant_id uuid, p_org_id uuid)
returns void
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    -- Superusers and platform admins, who reach every tenant anyway, need no binding.
    if (select r.rolsuper from pg_catalog.pg_roles r where r.rolname = p_login)
       or pg_catalog.pg_has_role(p_login, 'memsub_platform_admin', 'MEMBER') then
        return;
    end if;
    if not exists (select from memsub.login_bindings b where b.login = p_login) then
        if coalesce((select s.value from memsub.installation_settings s where s.name = 'unbound_logins'),
                    'refuse') = 'allow' then
            return;
        end if;
        raise exception 'memsub.set_context: login % has no binding and this installation refuses unbound logins', p_login
            using errcode = '42501', column = 'tenant_id',
                  hint = 'A platform admin binds it: memsub.bind_login(login, tenant_id[, org_id]) or '
                         'memsub.trust_login(login); or signs its contexts (memsub.set_context_signed).';
    end if;
    if exists (select from memsub.login_bindings b where b.login = p_login and b.bound_tenant_id = p_tenant_id) then
        raise exception 'memsub.set_context: login % is not bound to organization % of tenant %',
                        p_login, coalesce(p_org_id::text, '(none: the whole tenant)'), p_tenant_id
            using errcode = '42501', column = 'org_id';
    end if;
    raise exception 'memsub.set_context: login % is not bound to tenant %', p_login, p_tenant_id
        using errcode = '42501', column = 'tenant_id';
end
$$;
comment on function memsub._check_login_without_binding(name, uuid, uuid) is
    'Internal: for memsub.set_context when no binding of the login allows the context. Returns for a superuser, a '
    'platform admin, or an unbound login where installation_settings.unbound_logins = ''allow''; otherwise raises '
    '42501 naming tenant_id (no binding, or not bound to the tenant) or org_id (bound to the tenant, not to the '
    'organization).';

create or replace function memsub.set_context(
    p_tenant_id  uuid,
    p_org_id     uuid   default null,
    p_user_id    uuid   default null,
    p_roles      text[] default '{}',
    p_session_id text   default null
) returns void
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_login   name := session_user;
    requested text;
    seal_key  record;  -- the seal key's pads, and whether a binding of the login allows the context
    previous  text := nullif(pg_catalog.current_setting('memsub.tenant_id', true), '');
    -- The message the seal covers starts with these (memsub._store_context says what it covers).
    prefix constant text := pg_catalog.concat_ws('|', session_user, extract(epoch from pg_catalog.transaction_timestamp()));
begin
    if pg_catalog.current_setting('row_security') = 'off' then
        perform memsub._refuse_without_row_security();
    end if;
    if p_tenant_id is null and not ('platform_admin' = any(coalesce(p_roles, '{}'))) then
        raise exception 'memsub.set_context: tenant_id must not be null'
            using errcode = '22004', column = 'tenant_id',
                  hint = 'Only a platform_admin context may omit the tenant.';
    end if;
    foreach requested in array coalesce(p_roles, '{}') loop
        perform memsub._check_context_role(requested, 'memsub.set_context');
        if not pg_catalog.pg_has_role(v_login, 'memsub_' || requested, 'MEMBER') then
            raise exception 'memsub.set_context: role % requires membership in memsub_%', requested, requested
                using errcode = '42501', column = 'roles';
        end if;
    end loop;
    -- One query reads the seal key and whether a binding of the login allows the context: what an application
    -- login has, settled by one index search.
    select k.inner_pad, k.outer_pad,
           p_tenant_id is null
           or exists (select from memsub.login_bindings b
                       where b.login = v_login
                         and (b.bound_tenant_id is null
                              or (b.bound_tenant_id = p_tenant_id
                                  and (b.bound_org_id is null or b.bound_org_id = p_org_id)))) as login_bound
      into seal_key from memsub.context_keys k where k.key_id = 'seal';
    -- Asked only when no binding allows the context: the refusals, and the logins that need no binding.
    if not seal_key.login_bound then
        perform memsub._check_login_without_binding(v_login, p_tenant_id, p_org_id);
    end if;
    -- tenant_admin passes the organization rules: a login bound to organizations of the tenant only may not ask
    -- for it (platform admins, who reach every tenant, and logins without bindings, which the installation
    -- allowed above, excepted).
    if 'tenant_admin' = any(coalesce(p_roles, '{}'))
       and exists (select from memsub.login_bindings b where b.login = v_login)
       and not exists (select from memsub.login_bindings b
                        where b.login = v_login
                          and (b.bound_tenant_id is null
                               or (b.bound_tenant_id = p_tenant_id and b.bound_org_id is null)))
       and not pg_catalog.pg_has_role(v_login, 'memsub_platform_admin', 'MEMBER') then
        raise exception 'memsub.set_context: login % is bound to organizations of tenant % only; the tenant_admin '
                        'context reaches every organization', v_login, p_tenant_id
            using errcode = '42501', column = 'roles',
                  hint = 'A platform admin binds the login to the whole tenant: memsub.bind_login(login, tenant_id).';
    end if;
    -- A transaction that already acts for another tenant: memsub._store_context refuses or, for a platform admin
    -- or over settings written by hand, writes.
    if previous is not null and previous is distinct from p_tenant_id::text then
        perform memsub._store_context(p_tenant_id, p_org_id, p_user_id, p_roles, p_session_id);
        return;
    end if;
    -- Otherwise memsub._store_context's statement, here, with the MAC inline and the key read above: every
    -- transaction of every call starts with set_context, and calling _store_context (a frame, its own search_path
    -- setting, another read of the key) made a transaction holding set_context alone cost 12-21 % more server
    -- time. The same settings and the same seal (_store_context says what the seal covers).
    perform pg_catalog.set_config('memsub.tenant_id', coalesce(p_tenant_id::text, ''), true),
            pg_catalog.set_config('memsub.org_id', coalesce(p_org_id::text, ''), true),
            pg_catalog.set_config('memsub.user_id', coalesce(p_user_id::text, ''), true),
            pg_catalog.set_config('memsub.roles', coalesce(array_to_string(p_roles, ','), ''), true),
            pg_catalog.set_config('memsub.session_id', coalesce(p_session_id, ''), true),
            pg_catalog.set_config('memsub.context_seal',
                pg_catalog.encode(pg_catalog.sha256(seal_key.outer_pad || pg_catalog.sha256(seal_key.inner_pad
                    || pg_catalog.convert_to(pg_catalog.concat_ws('|', prefix,
                           pg_catalog.quote_nullable(coalesce(p_tenant_id::text, '')),
                           pg_catalog.quote_nullable(coalesce(p_org_id::text, '')),
                           pg_catalog.quote_nullable(coalesce(p_user_id::text, '')),
                           pg_catalog.quote_nullable(coalesce(p_session_id, '')),
                           pg_catalog.quote_nullable(coalesce(array_to_string(p_roles, ','), ''))), 'UTF8'))), 'hex'),
                true);
end
$$;
comment on function memsub.set_context(uuid, uuid, uuid, text[], text) is
    'Sets the transaction-local request context (tenant, org, user, context roles, session) read by row-level security. '
    'Context roles tenant_admin/platform_admin require the login''s membership in memsub_tenant_admin/memsub_platform_admin; '
    'the tenant and organization must be ones the login (session_user) is bound to (memsub.bind_login): an '
    'unbound login is refused unless installation_settings.unbound_logins = ''allow'', platform admins and '
    'superusers need no binding; tenant_admin needs a binding to the whole tenant (42501 naming roles). The '
    'settings are sealed, context roles included. One transaction acts for one tenant.';

-- Signed contexts ---------------------------------------------------------------------------------------

create or replace function memsub._base64url_decode(p_text text, p_field text) returns bytea
language plpgsql immutable parallel safe security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_text is null or p_text = '' or p_text !~ '^[A-Za-z0-9_-]+$' or length(p_text) % 4 = 1 then
        raise exception 'memsub.set_context_signed: % is not base64url', p_field
            using errcode = '22023', column = p_field;
    end if;
    return decode(rpad(translate(p_text, '-_', '+/'), (length(p_text) + 3) / 4 * 4, '='), 'base64');
end
$$;
comment on function memsub._base64url_decode(text, text) is
    'Decodes unpadded base64url (RFC 4648 section 5); SQLSTATE 22023 naming the field when malformed.';

create or replace function memsub.set_context_signed(p_token text) returns void
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    parts text[] := string_to_array(coalesce(p_token, ''), '.');
    claims jsonb;
    v_key_id text;
    expected bytea;
    roles text[];
    requested text;
    tenant uuid;
    org uuid;
    person uuid;
begin
    if array_length(parts, 1) is distinct from 2 then
        raise exception 'memsub.set_context_signed: token must be <claims>.<signature>'
            using errcode = '22023', column = 'token';
    end if;
    begin
        claims := convert_from(memsub._base64url_decode(parts[1], 'token'), 'UTF8')::jsonb;
    exception when data_exception then
        raise exception 'memsub.set_context_signed: token claims are not base64url JSON'
            using errcode = '22023', column = 'token';
    end;
    if jsonb_typeof(claims) is distinct from 'object' or jsonb_typeof(claims -> 'kid') is distinct from 'string'
       or jsonb_typeof(claims -> 'exp') is distinct from 'number' then
        raise exception 'memsub.set_context_signed: token claims need a string kid and a numeric exp'
            using errcode = '22023', column = 'token';
    end if;
    v_key_id := claims ->> 'kid';
    expected := memsub._context_mac(v_key_id, parts[1]);
    if expected is null
       or not exists (select from memsub.context_keys k where k.key_id = v_key_id and k.purpose = 'token') then
        -- The claims are the caller's, unauthenticated: quoted as JSON (a newline stays escaped in the server
        -- log, which records the message) and cut to 64 characters.
        raise exception 'memsub.set_context_signed: unknown signing key %', pg_catalog.to_json(pg_catalog.left(v_key_id, 64))
            using errcode = '28000', column = 'kid';
    end if;
    if expected is distinct from memsub._base64url_decode(parts[2], 'token') then
        raise exception 'memsub.set_context_signed: the token signature does not match its claims'
            using errcode = '28000', column = 'signature';
    end if;
    if (claims ->> 'exp')::numeric <= extract(epoch from pg_catalog.statement_timestamp()) then
        raise exception 'memsub.set_context_signed: the token expired at %', to_timestamp((claims ->> 'exp')::double precision)
            using errcode = '28000', column = 'exp';
    end if;
    if claims ? 'login' and claims ->> 'login' is distinct from session_user::text then
        raise exception 'memsub.set_context_signed: the token is for login %, not %',
            pg_catalog.to_json(pg_catalog.left(claims ->> 'login', 64)), pg_catalog.to_json(session_user::text)
            using errcode = '28000', column = 'login';
    end if;
    begin
        tenant := (claims ->> 'tenant')::uuid;
        org := (claims ->> 'org')::uuid;
        person := (claims ->> 'user')::uuid;
        roles := coalesce((select array_agg(r) from jsonb_array_elements_text(
                               case when jsonb_typeof(claims -> 'roles') = 'array' then claims -> 'roles' else '[]' end) r),
                          '{}');
    exception when data_exception then
        raise exception 'memsub.set_context_signed: token claims tenant, org and user must be UUIDs'
            using errcode = '22023', column = 'token';
    end;
    if tenant is null and not ('platform_admin' = any(roles)) then
        raise exception 'memsub.set_context_signed: the token names no tenant'
            using errcode = '22004', column = 'tenant_id';
    end if;
    foreach requested in array roles loop
        perform memsub._check_context_role(requested, 'memsub.set_context_signed');
        if not pg_catalog.pg_has_role(session_user, 'memsub_' || requested, 'MEMBER') then
            raise exception 'memsub.set_context_signed: role % requires membership in memsub_%', requested, requested
                using errcode = '42501', column = 'roles';
        end if;
    end loop;
    perform memsub._store_context(tenant, org, person, roles, claims ->> 'session');
end
$$;
comment on function memsub.set_context_signed(text) is
    'Sets the request context from a token signed by a gateway (python/memsub/context_tokens.py): HMAC-SHA256 '
    'under a key registered with memsub.set_context_signing_key. No login binding is needed. Refused: a bad '
    'signature (28000, column signature), an unknown key (kid), an expired token (exp), a token for another '
    'login (login); malformed tokens 22023 (token).';

-- Management (platform admins) ----------------------------------------------------------------------------

create or replace function memsub._require_login(p_login name) returns name
language plpgsql stable security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    can_login boolean := (select r.rolcanlogin from pg_catalog.pg_roles r where r.rolname = p_login);
begin
    if can_login is null then
        raise exception 'memsub: role "%" does not exist', p_login
            using errcode = '42704', column = 'login';
    elsif not can_login then
        raise exception 'memsub: role "%" cannot log in; bind the login roles that are members of it', p_login
            using errcode = '22023', column = 'login';
    end if;
    return p_login;
end
$$;
comment on function memsub._require_login(name) is
    'Returns the name of an existing login role; 42704 (column login) when it does not exist, 22023 when it cannot log in.';

create or replace function memsub._add_login_binding(p_login name, p_tenant_id uuid, p_org_id uuid)
returns boolean
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    inserted integer;
begin
    insert into memsub.login_bindings (login, bound_tenant_id, bound_org_id)
    values (p_login, p_tenant_id, p_org_id)
    on conflict on constraint login_bindings_key do nothing;
    get diagnostics inserted = row_count;
    return inserted = 1;
end
$$;
comment on function memsub._add_login_binding(name, uuid, uuid) is
    'Internal to memsub.bind_login and memsub.trust_login: adds a binding of a checked login (tenant NULL: every '
    'tenant); true when it is new.';

create or replace function memsub.bind_login(p_login name, p_tenant_id uuid, p_org_id uuid default null)
returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    perform memsub._require_login(p_login);
    if p_tenant_id is null then
        raise exception 'memsub.bind_login: tenant_id must not be null (memsub.trust_login binds to every tenant)'
            using errcode = '22004', column = 'tenant_id';
    end if;
    return memsub._add_login_binding(p_login, p_tenant_id, p_org_id);
end
$$;
comment on function memsub.bind_login(name, uuid, uuid) is
    'Lets a login act for a tenant (org NULL: any organization of it; else that organization only). Platform '
    'admins only. True when the binding is new.';

create or replace function memsub.trust_login(p_login name) returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    perform memsub._require_login(p_login);
    return memsub._add_login_binding(p_login, null, null);
end
$$;
comment on function memsub.trust_login(name) is
    'Lets a login act for any tenant: the single trusted application of a one-service deployment. Platform '
    'admins only. True when the binding is new.';

create or replace function memsub.unbind_login(p_login name, p_tenant_id uuid default null, p_org_id uuid default null)
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    removed integer;
begin
    delete from memsub.login_bindings b
     where b.login = p_login
       and (p_tenant_id is null or b.bound_tenant_id = p_tenant_id)
       and (p_org_id is null or b.bound_org_id = p_org_id);
    get diagnostics removed = row_count;
    return removed;
end
$$;
comment on function memsub.unbind_login(name, uuid, uuid) is
    'Removes bindings of a login: every one (tenant NULL, trust included), those of a tenant, or one organization''s. '
    'Platform admins only. Returns how many were removed.';

create or replace function memsub.set_unbound_logins(p_mode text) returns void
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_mode is null or p_mode not in ('allow', 'refuse') then
        raise exception 'memsub.set_unbound_logins: mode must be allow or refuse, not %', coalesce(p_mode, 'NULL')
            using errcode = '22023', column = 'mode';
    end if;
    insert into memsub.installation_settings (name, value) values ('unbound_logins', p_mode)
    on conflict (name) do update set value = excluded.value, set_at = now();
end
$$;
comment on function memsub.set_unbound_logins(text) is
    'What memsub.set_context does for a login with no binding: refuse (the default) or allow (any tenant, the '
    'behaviour before identity binding). Platform admins only.';

create or replace function memsub.set_context_signing_key(p_key_id text, p_secret bytea) returns void
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_key_id is null or p_key_id !~ '^[A-Za-z0-9._-]+$' or length(p_key_id) > 64 or p_key_id = 'seal' then
        raise exception 'memsub.set_context_signing_key: key_id must be 1-64 letters, digits, ".", "_" or "-" (not "seal")'
            using errcode = '22023', column = 'key_id';
    end if;
    if p_secret is null or length(p_secret) < 32 then
        raise exception 'memsub.set_context_signing_key: secret must be at least 32 bytes'
            using errcode = '22023', column = 'secret';
    end if;
    insert into memsub.context_keys (key_id, purpose, inner_pad, outer_pad)
    select p_key_id, 'token', p.inner_pad, p.outer_pad from memsub._hmac_pads(p_secret) p
    on conflict (key_id) do update set inner_pad = excluded.inner_pad, outer_pad = excluded.outer_pad,
                                      created_at = now(), created_by = session_user;
end
$$;
comment on function memsub.set_context_signing_key(text, bytea) is
    'Registers (or replaces) a key that context tokens are signed with; the secret cannot be read back. '
    'Platform admins only.';

create or replace function memsub.drop_context_signing_key(p_key_id text) returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    removed integer;
begin
    delete from memsub.context_keys k where k.key_id = p_key_id and k.purpose = 'token';
    get diagnostics removed = row_count;
    return removed = 1;
end
$$;
comment on function memsub.drop_context_signing_key(text) is
    'Removes a context token signing key: tokens signed with it are refused from then on. Platform admins only.';

grant execute on function memsub.set_context_signed(text)
    to memsub_app, memsub_analyst;
grant execute on function
    memsub.bind_login(name, uuid, uuid), memsub.trust_login(name), memsub.unbind_login(name, uuid, uuid),
    memsub.set_unbound_logins(text), memsub.set_context_signing_key(text, bytea),
    memsub.drop_context_signing_key(text)
    to memsub_platform_admin;
grant select on memsub.login_bindings to memsub_platform_admin;
