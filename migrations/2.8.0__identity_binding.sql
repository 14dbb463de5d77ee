-- memsub 2.8.0: the tenants a login may act for are decided in the database.
--
-- login_bindings lists, per login role, the tenants (and optionally organizations) memsub.set_context accepts
-- from it; a login with no binding is refused unless installation_settings.unbound_logins is 'allow'.
-- context_keys holds the secrets behind the context: the seal that makes a context written by hand (set_config)
-- worthless, and the keys a gateway signs context tokens with. Neither table is granted to anyone: the
-- functions in sql/015_identity_binding.sql read and write them.

create table memsub.login_bindings (
    binding_id      bigint      generated always as identity,
    login           name        not null,
    bound_tenant_id uuid,
    bound_org_id    uuid,
    bound_at        timestamptz not null default now(),
    bound_by        name        not null default session_user,
    constraint login_bindings_pkey primary key (binding_id),
    constraint login_bindings_key unique nulls not distinct (login, bound_tenant_id, bound_org_id),
    constraint login_bindings_org_needs_tenant check (bound_org_id is null or bound_tenant_id is not null)
);
comment on table memsub.login_bindings is
    'Which tenants (and organizations) each login role may act for: memsub.set_context refuses any other. '
    'Written through memsub.bind_login/trust_login/unbind_login by platform admins.';
comment on column memsub.login_bindings.binding_id is 'Surrogate key.';
comment on column memsub.login_bindings.login is 'The login role (session_user) the binding applies to.';
comment on column memsub.login_bindings.bound_tenant_id is
    'The tenant the login may act for; NULL: any tenant (a trusted login, memsub.trust_login).';
comment on column memsub.login_bindings.bound_org_id is
    'The organization the login may act for within the tenant; NULL: the whole tenant, any organization.';
comment on column memsub.login_bindings.bound_at is 'When the binding was made.';
comment on column memsub.login_bindings.bound_by is 'The login that made the binding.';

create table memsub.context_keys (
    key_id     text        not null,
    purpose    text        not null,
    inner_pad  bytea       not null,
    outer_pad  bytea       not null,
    created_at timestamptz not null default now(),
    created_by name        not null default session_user,
    constraint context_keys_pkey primary key (key_id),
    constraint context_keys_purpose check (purpose in ('seal', 'token')),
    constraint context_keys_pads check (length(inner_pad) = 64 and length(outer_pad) = 64)
);
comment on table memsub.context_keys is
    'Secrets of the request context, readable by no login: the installation''s seal key and the context token '
    'signing keys. Stored as the two HMAC-SHA256 pads (key XOR 0x36.., key XOR 0x5c..).';
comment on column memsub.context_keys.key_id is 'Key id: ''seal'' for the seal key, else the kid of context tokens.';
comment on column memsub.context_keys.purpose is 'seal (generated at installation) or token (registered by a platform admin).';
comment on column memsub.context_keys.inner_pad is 'HMAC inner pad: the key XOR 0x36 repeated, 64 bytes.';
comment on column memsub.context_keys.outer_pad is 'HMAC outer pad: the key XOR 0x5c repeated, 64 bytes.';
comment on column memsub.context_keys.created_at is 'When the key was stored.';
comment on column memsub.context_keys.created_by is 'The login that stored it.';

-- The seal key: two independent random pads of 64 bytes (4 x 122 random bits from gen_random_uuid each).
insert into memsub.context_keys (key_id, purpose, inner_pad, outer_pad)
select 'seal', 'seal',
       uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()),
       uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid());

-- A login with no binding is refused (memsub.set_unbound_logins('allow') restores the behaviour before 2.8.0,
-- as a deliberate choice of the deployment). Upgraded installations are refused too: docs/migrations.md.
insert into memsub.installation_settings (name, value) values ('unbound_logins', 'refuse');
