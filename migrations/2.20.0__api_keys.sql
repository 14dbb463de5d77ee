-- memsub 2.20.0: API keys, the credentials of the HTTP API (memsub serve).
--
-- A key is shown once, when memsub.create_api_key makes it; the table keeps its sha256 only. Each key is bound
-- to one tenant (and optionally an organization, a user and context roles): the HTTP server authenticates a
-- request with memsub.authenticate_api_key, which seals that context in the request's transaction, so no
-- request field can choose the tenant.

create table memsub.api_keys (
    tenant_id  uuid        not null,
    key_id     text        not null,
    key_hash   bytea       not null,
    org_id     uuid,
    user_id    uuid,
    roles      text[]      not null default '{}',
    label      text        not null default '',
    created_at timestamptz not null default now(),
    created_by name        not null default session_user,
    expires_at timestamptz,
    revoked_at timestamptz,
    constraint api_keys_pkey primary key (tenant_id, key_id),
    constraint api_keys_key_id check (key_id ~ '^[0-9a-f]{16}$'),
    constraint api_keys_hash check (length(key_hash) = 32),
    constraint api_keys_roles check (roles <@ array['tenant_admin', 'platform_admin']::text[])
);
-- Authentication looks a key up by its id before the tenant is known: key ids are 64 random bits, so one id
-- names one key (the lookup also compares the hash).
create index api_keys_key_id on memsub.api_keys (key_id);

comment on table memsub.api_keys is
    'Credentials of the HTTP API: each key acts for one tenant (and optionally an organization, a user and '
    'context roles). Only the sha256 of a key is stored; memsub.create_api_key shows the key once.';
comment on column memsub.api_keys.tenant_id is 'The tenant every request with this key acts for.';
comment on column memsub.api_keys.key_id is 'Public id of the key (16 hex digits), the part of the key after msk_ and before the secret.';
comment on column memsub.api_keys.key_hash is 'sha256 of the whole key text (msk_<key_id>_<secret>); the key itself is never stored.';
comment on column memsub.api_keys.org_id is 'The organization requests act for; NULL: none (tenant-wide rows only, unless an admin role).';
comment on column memsub.api_keys.user_id is 'The user requests act for; NULL: none.';
comment on column memsub.api_keys.roles is 'Context roles of the requests (tenant_admin, platform_admin); the server login must be a member of the matching memsub role.';
comment on column memsub.api_keys.label is 'Free text naming the key''s holder or purpose.';
comment on column memsub.api_keys.created_at is 'When the key was created.';
comment on column memsub.api_keys.created_by is 'The login that created it.';
comment on column memsub.api_keys.expires_at is 'When the key stops authenticating; NULL: never.';
comment on column memsub.api_keys.revoked_at is 'When the key was revoked (memsub.revoke_api_key); a revoked key never authenticates again.';
