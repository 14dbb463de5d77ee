-- memsub 2.52.0: a record of each deleted session, so that its session:<id> memory stays its user's. A session's
-- session:<id> memory entries are read and written by the contexts naming the session where the session is
-- visible, and by the contexts naming an id that no session of the tenant has (memsub._context_session_namespace,
-- sql/610_memory_entries.sql). memsub.session_delete (sql/710_sessions.sql) keeps those entries, so once the
-- session was gone its id named them for every context of the tenant naming it, of any user and organization,
-- and for a new session of another user given the same id. session_delete now writes a row here (the session's
-- id, user and organization); the memory rules read it, and session_create refuses the id to another user.
-- Sessions deleted before this release left nothing that says whose they were, so they have no row.
-- "if not exists": the migration may run again over a database that has the table.

create table if not exists memsub.deleted_sessions (
    tenant_id  uuid        not null,
    session_id text        not null,
    user_id    uuid,
    org_id     uuid,
    deleted_at timestamptz not null default pg_catalog.statement_timestamp(),
    constraint deleted_sessions_pkey primary key (tenant_id, session_id)
);

comment on table memsub.deleted_sessions is
    'One row per session id of a tenant whose session memsub.session_delete deleted: whose it was. The '
    'session:<id> memory it leaves stays readable and writable by that user and admins only, and another user '
    'cannot create a session with the id. Written only by memsub.session_delete.';
comment on column memsub.deleted_sessions.tenant_id is 'Tenant of the deleted session.';
comment on column memsub.deleted_sessions.session_id is 'Id of the deleted session (sessions.id).';
comment on column memsub.deleted_sessions.user_id is
    'User of the deleted session (NULL for a session without one: its memory is then admins'' alone).';
comment on column memsub.deleted_sessions.org_id is 'Organization of the deleted session (NULL: tenant-wide).';
comment on column memsub.deleted_sessions.deleted_at is 'When the session was last deleted with this id.';
