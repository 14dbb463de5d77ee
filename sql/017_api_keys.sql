-- Area: foundation. Seed: seed 004 "API Submission" (the HTTP API's credentials).
--
-- API keys: the credentials of the HTTP API (memsub serve, docs/http.md).
--
-- A key is the text msk_<key_id>_<secret>: key_id is 16 hex digits, secret 64 hex digits from two
-- gen_random_uuid() (244 random bits). memsub.api_keys keeps the key's sha256, never the key.
-- memsub.authenticate_api_key(key) verifies a key and seals the context of its tenant, organization, user and
-- roles in the current transaction (memsub._store_context, 015_identity_binding.sql), exactly as a signed context
-- token does: the login that presents the key needs no binding, and the tenant comes from the key, never from
-- the request. The HTTP server therefore runs each request as one transaction: authenticate, then one call.
-- A revoke stops every authentication that starts after it commits, whatever the isolation of the transaction
-- presenting the key; a transaction that authenticated before keeps its context until it ends.
--
-- The key is looked up before any tenant is known, so the lookup (memsub._api_key_lookup) runs as
-- memsub_retrieval_owner (BYPASSRLS, NOLOGIN), matches one key id and its hash and returns that key's binding
-- only; it is executable by memsub_owner alone, i.e. by memsub.authenticate_api_key.
-- Keys are created, listed and revoked by admins: a platform_admin context for any tenant and any roles, a
-- tenant_admin context for its own tenant and the tenant_admin role at most.

call memsub._install_row_security('memsub.api_keys', array['org']);

-- The earlier name, without the _ of an internal helper.
drop function if exists memsub.require_key_admin(uuid);
create or replace function memsub._require_key_admin(p_tenant_id uuid) returns void
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if memsub.is_platform_admin() then
        return;
    end if;
    if not memsub.is_tenant_admin() then
        raise exception 'memsub: managing API keys needs a tenant_admin or platform_admin context'
            using errcode = '42501', column = 'roles';
    end if;
    if p_tenant_id is not null and p_tenant_id is distinct from memsub.current_tenant_id() then
        raise exception 'memsub: a tenant_admin context manages the API keys of its own tenant only'
            using errcode = '42501', column = 'tenant_id';
    end if;
end
$$;
comment on function memsub._require_key_admin(uuid) is
    'Refuses (42501) a context that may not manage the API keys of a tenant: platform_admin contexts manage every '
    'tenant''s, tenant_admin contexts their own tenant''s (NULL: the context tenant).';

drop function if exists memsub.create_api_key(uuid, uuid, uuid, text[], text, timestamptz);
create or replace function memsub.create_api_key(
    p_tenant_id  uuid,
    p_org_id     uuid        default null,
    p_user_id    uuid        default null,
    p_roles      text[]      default '{}',
    p_label      text        default '',
    p_expires_at timestamptz default null
) returns table (key_id text, api_key text, tenant_id uuid, org_id uuid, user_id uuid, roles text[], label text,
                 expires_at timestamptz)
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_key_id text := pg_catalog.substr(pg_catalog.md5(pg_catalog.gen_random_uuid()::text), 1, 16);
    v_key    text;
    v_roles  text[];
    requested text;
begin
    if p_tenant_id is null then
        raise exception 'memsub.create_api_key: tenant_id must not be null'
            using errcode = '22004', column = 'tenant_id';
    end if;
    perform memsub._require_key_admin(p_tenant_id);
    if p_roles is null or pg_catalog.array_position(p_roles, null) is not null then
        raise exception 'memsub.create_api_key: roles must be an array of role names'
            using errcode = '22023', column = 'roles';
    end if;
    foreach requested in array p_roles loop
        perform memsub._check_context_role(requested, 'memsub.create_api_key');
        if requested = 'platform_admin' and not memsub.is_platform_admin() then
            raise exception 'memsub.create_api_key: only a platform_admin context may create a platform_admin key'
                using errcode = '42501', column = 'roles';
        end if;
    end loop;
    if p_label is null then
        raise exception 'memsub.create_api_key: label must not be null'
            using errcode = '22004', column = 'label';
    end if;
    perform memsub._check_text_limits('label', p_label);
    perform memsub._check_stored_time(p_expires_at, 'expires_at');
    if p_expires_at <= pg_catalog.statement_timestamp() then
        raise exception 'memsub.create_api_key: expires_at must be in the future, not %', p_expires_at
            using errcode = '22023', column = 'expires_at';
    end if;
    v_key := 'msk_' || v_key_id || '_'
             || pg_catalog.encode(pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
                                  || pg_catalog.uuid_send(pg_catalog.gen_random_uuid()), 'hex');
    v_roles := (select coalesce(array_agg(distinct r order by r), '{}') from pg_catalog.unnest(p_roles) r);
    insert into memsub.api_keys as k (tenant_id, key_id, key_hash, org_id, user_id, roles, label, expires_at)
    values (p_tenant_id, v_key_id, pg_catalog.sha256(pg_catalog.convert_to(v_key, 'UTF8')), p_org_id, p_user_id,
            v_roles, p_label, p_expires_at);
    return query select v_key_id, v_key, p_tenant_id, p_org_id, p_user_id, v_roles, p_label, p_expires_at;
end
$$;
comment on function memsub.create_api_key(uuid, uuid, uuid, text[], text, timestamptz) is
    'Creates an API key acting for a tenant (and optionally an organization, a user, context roles) and returns it '
    'once as api_key; only its sha256 is kept. A platform_admin context: any tenant and roles; a tenant_admin '
    'context: its own tenant, roles tenant_admin at most (42501 otherwise).';

create or replace function memsub.revoke_api_key(p_key_id text) returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    changed integer;
begin
    perform memsub._require_key_admin(null);
    -- row-level security (forced) keeps a tenant_admin context to the keys of its tenant
    update memsub.api_keys k set revoked_at = pg_catalog.statement_timestamp()
     where k.key_id = p_key_id and k.revoked_at is null;
    get diagnostics changed = row_count;
    return changed > 0;
end
$$;
comment on function memsub.revoke_api_key(text) is
    'Revokes an API key by its key_id: once this commits, it never authenticates again; a request that '
    'authenticated before ends its transaction as it began. True when a live key of a tenant the context manages '
    'was revoked. Needs a tenant_admin or platform_admin context.';

create or replace function memsub.list_api_keys()
returns table (key_id text, tenant_id uuid, org_id uuid, user_id uuid, roles text[], label text,
               created_at timestamptz, created_by name, expires_at timestamptz, revoked_at timestamptz)
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    perform memsub._require_key_admin(null);
    return query
        select k.key_id, k.tenant_id, k.org_id, k.user_id, k.roles, k.label, k.created_at, k.created_by,
               k.expires_at, k.revoked_at
          from memsub.api_keys k
         order by k.tenant_id, k.created_at, k.key_id;
end
$$;
comment on function memsub.list_api_keys() is
    'The API keys the admin context manages (its tenant''s, or every tenant''s for platform_admin), without '
    'their hashes.';

create or replace function memsub._api_key_lookup(p_key_id text, p_key_hash bytea)
returns table (key_id text, tenant_id uuid, org_id uuid, user_id uuid, roles text[])
language sql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
    select k.key_id, k.tenant_id, k.org_id, k.user_id, k.roles
      from memsub.api_keys k
     where k.key_id = p_key_id and k.key_hash = p_key_hash and k.revoked_at is null
       and (k.expires_at is null or k.expires_at > pg_catalog.statement_timestamp())
$$;
alter function memsub._api_key_lookup(text, bytea) owner to memsub_retrieval_owner;
comment on function memsub._api_key_lookup(text, bytea) is
    'The binding of the live key with this id and hash, read across tenants (owned by memsub_retrieval_owner, '
    'BYPASSRLS). Executable only by memsub_owner: memsub.authenticate_api_key calls it.';

create or replace function memsub.authenticate_api_key(p_api_key text)
returns table (key_id text, tenant_id uuid, org_id uuid, user_id uuid, roles text[])
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    found_key record;
    requested text;
begin
    if pg_catalog.current_setting('row_security') = 'off' then  -- before the keys, which row security guards
        perform memsub._refuse_without_row_security();
    end if;
    if p_api_key is null or p_api_key !~ '^msk_[0-9a-f]{16}_[0-9a-f]+$' or length(p_api_key) <> 85 then
        raise exception 'memsub.authenticate_api_key: not an API key (msk_<16 hex>_<64 hex>)'
            using errcode = '28000', column = 'api_key';
    end if;
    select l.* into found_key
      from memsub._api_key_lookup(pg_catalog.substr(p_api_key, 5, 16),
                                 pg_catalog.sha256(pg_catalog.convert_to(p_api_key, 'UTF8'))) l;
    if found_key is null then
        raise exception 'memsub.authenticate_api_key: unknown, revoked or expired API key'
            using errcode = '28000', column = 'api_key';
    end if;
    foreach requested in array found_key.roles loop
        if not pg_catalog.pg_has_role(session_user, 'memsub_' || requested, 'MEMBER') then
            raise exception 'memsub.authenticate_api_key: the key''s role % requires membership of login % in memsub_%',
                            requested, session_user, requested
                using errcode = '42501', column = 'roles';
        end if;
    end loop;
    perform memsub._store_context(found_key.tenant_id, found_key.org_id, found_key.user_id, found_key.roles, null);
    -- A READ COMMITTED statement reads the keys as committed when it started. A REPEATABLE READ or SERIALIZABLE
    -- transaction reads them as of its snapshot, which may be older than a revoke committed since: there the
    -- key's row is locked (FOR SHARE), which fails for a row revoked after the snapshot, waits for a revoke in
    -- progress (and then fails when it commits), and makes a later revoke wait for this transaction's end. A
    -- read-only transaction cannot lock and is refused.
    if pg_catalog.current_setting('transaction_isolation') <> 'read committed' then
        if pg_catalog.current_setting('transaction_read_only')::boolean then
            raise exception 'memsub.authenticate_api_key: a read-only % transaction cannot authenticate a key; use READ COMMITTED or a read-write transaction',
                            upper(pg_catalog.current_setting('transaction_isolation'))
                using errcode = '25006', column = 'api_key';
        end if;
        begin
            perform from memsub.api_keys k
             where k.tenant_id = found_key.tenant_id and k.key_id = found_key.key_id
               for share of k;
        exception when serialization_failure then
            raise exception 'memsub.authenticate_api_key: unknown, revoked or expired API key (revoked after this transaction began)'
                using errcode = '28000', column = 'api_key';
        end;
    end if;
    return query select found_key.key_id, found_key.tenant_id, found_key.org_id, found_key.user_id, found_key.roles;
end
$$;
comment on function memsub.authenticate_api_key(text) is
    'Verifies an API key (sha256 against memsub.api_keys; not revoked, not expired) and seals the context of its '
    'tenant, organization, user and roles in this transaction, like memsub.set_context_signed: no login binding '
    'needed, and one transaction acts for one tenant. 28000 (column api_key) for a malformed, unknown, revoked '
    'or expired key; 42501 (roles) when the login lacks a key role''s memsub role. A READ COMMITTED call reads the '
    'key as committed when it starts; a REPEATABLE READ or SERIALIZABLE transaction also locks it (FOR SHARE), '
    'so a revoke committed after its snapshot is 28000 too, and a read-only one is refused (25006, api_key). '
    'Returns the key''s binding.';

grant select (tenant_id, key_id, org_id, user_id, roles, label, created_at, created_by, expires_at, revoked_at)
    on memsub.api_keys to memsub_app, memsub_analyst;
grant select on memsub.api_keys to memsub_retrieval_owner;
grant execute on function memsub._api_key_lookup(text, bytea) to memsub_owner;
grant execute on function memsub.authenticate_api_key(text) to memsub_app, memsub_analyst;
grant execute on function
    memsub.create_api_key(uuid, uuid, uuid, text[], text, timestamptz), memsub.revoke_api_key(text),
    memsub.list_api_keys()
    to memsub_tenant_admin;
