-- memsub 2.49.0: a record of each tenant erasure. memsub.erase_tenant (sql/960_tenant_erasure.sql) deletes every
-- row of a tenant, its audit rows included, so nothing in the database said that the tenant had been erased, by
-- whom or when. Each erasure now leaves one row here: the tenant's id, the login, the time and the rows each
-- table lost; no content of the tenant. Installation-wide, like memory_view_refresh_log: read by platform
-- admins, written by the erasure alone. The id is named erased_tenant_id, not tenant_id, so that a later erasure
-- (which deletes from every table with a tenant_id column) keeps the record.
-- "if not exists": a database whose history was cut back before this release (as a test of 2.46.0 does) runs
-- it again over the table.

create table if not exists memsub.tenant_erasures (
    erasure_id       bigint      generated always as identity,
    erased_tenant_id uuid        not null,
    erased_by        text        not null default session_user,
    erased_at        timestamptz not null default pg_catalog.statement_timestamp(),
    deleted_rows     jsonb       not null,
    constraint tenant_erasures_pkey primary key (erasure_id),
    constraint tenant_erasures_deleted_rows_object check (jsonb_typeof(deleted_rows) = 'object')
);
create index if not exists tenant_erasures_tenant_idx on memsub.tenant_erasures (erased_tenant_id, erased_at);

comment on table memsub.tenant_erasures is
    'One row per memsub.erase_tenant call that committed: which tenant, by which login, when, and how many rows '
    'each table lost. Holds no content of the tenant. Read by platform admins; written only by the erasure.';
comment on column memsub.tenant_erasures.erasure_id is 'Row identifier, in the order of the erasures.';
comment on column memsub.tenant_erasures.erased_tenant_id is
    'The tenant erased (not named tenant_id: a later erasure deletes from every table with that column).';
comment on column memsub.tenant_erasures.erased_by is 'The login that called memsub.erase_tenant (session_user).';
comment on column memsub.tenant_erasures.erased_at is 'When the erasure''s statement began.';
comment on column memsub.tenant_erasures.deleted_rows is
    'What memsub.erase_tenant returned: a JSON object of table name to the number of rows it deleted there.';
