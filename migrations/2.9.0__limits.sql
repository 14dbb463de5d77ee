-- memsub 2.9.0: resource limits a deployment can tune.
--
-- Every function a tenant can call refuses oversized input (envelope bytes, tags, parents, query text, k, depth,
-- batch size, ...) with SQLSTATE 54000. The defaults live in memsub.limit_value (sql/015_limits.sql); a row here
-- overrides one of them for the whole installation. Only the owner writes this table: a GUC would not do,
-- because any login may SET its own GUCs.

create table memsub.limits (
    name   text        not null,
    value  bigint      not null,
    set_at timestamptz not null default now(),
    constraint limits_pkey primary key (name),
    constraint limits_value_positive check (value > 0),
    constraint limits_name_format check (name ~ '^[a-z][a-z0-9_]{0,62}$')
);
comment on table memsub.limits is
    'Installation-wide overrides of the resource limits (docs/security.md, "Limits"); a limit without a row '
    'keeps its default. Written by the owner only; read by memsub.limit_value.';
comment on column memsub.limits.name is 'Limit name, e.g. max_envelope_bytes (see memsub.limit_value for the list).';
comment on column memsub.limits.value is 'The limit (a count, characters or bytes, per the name); positive.';
comment on column memsub.limits.set_at is 'When the override was recorded.';
