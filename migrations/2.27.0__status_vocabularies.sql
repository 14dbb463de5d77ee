-- The last closed lists spelled once: session and agent statuses, summary scope types, the outcome of a
-- materialized view refresh and the context roles of an API key. The check constraints take their lists from
-- memsub.session_statuses(), memsub.agent_statuses(), memsub.summary_scope_types(), memsub.view_refresh_statuses()
-- and memsub.context_roles() (sql/005_vocabulary.sql owns them; the definitions here only let the constraints be
-- created before the re-runnable SQL is applied). Each constraint keeps its name and allows the same values.

create or replace function memsub.session_statuses() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['active', 'terminated']::text[] $$;
comment on function memsub.session_statuses() is 'The states of a session (sessions.status).';

create or replace function memsub.agent_statuses() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['active', 'finished']::text[] $$;
comment on function memsub.agent_statuses() is 'The states of an agent (agents.status).';

create or replace function memsub.summary_scope_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['thread', 'agent', 'topic', 'time_period', 'project', 'task']::text[] $$;
comment on function memsub.summary_scope_types() is 'What a summary covers (memory_summaries.scope_type).';

create or replace function memsub.view_refresh_statuses() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['ok', 'error', 'skipped']::text[] $$;
comment on function memsub.view_refresh_statuses() is
    'How the refresh of a materialized view ended (memory_view_refresh_log.status).';

create or replace function memsub.context_roles() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['tenant_admin', 'platform_admin']::text[] $$;
comment on function memsub.context_roles() is 'The roles a context may ask for.';

alter table memsub.sessions
    drop constraint sessions_status_check,
    add constraint sessions_status_check check (status = any (memsub.session_statuses()));
comment on column memsub.sessions.status is
    'One of memsub.session_statuses(): active, or terminated (which sets terminated_at).';

alter table memsub.agents
    drop constraint agents_status_check,
    add constraint agents_status_check check (status = any (memsub.agent_statuses()));
comment on column memsub.agents.status is 'One of memsub.agent_statuses(): active or finished.';

alter table memsub.memory_summaries
    drop constraint memory_summaries_scope_type_known,
    add constraint memory_summaries_scope_type_known check (scope_type = any (memsub.summary_scope_types()));
comment on column memsub.memory_summaries.scope_type is
    'What the summary covers, one of memsub.summary_scope_types(): thread, agent, topic, time_period, project or '
    'task.';

alter table memsub.memory_view_refresh_log
    drop constraint memory_view_refresh_log_status_known,
    add constraint memory_view_refresh_log_status_known check (status = any (memsub.view_refresh_statuses()));
comment on column memsub.memory_view_refresh_log.status is
    'One of memsub.view_refresh_statuses(): ok, error, or skipped (another refresh held the lock).';

alter table memsub.api_keys
    drop constraint api_keys_roles,
    add constraint api_keys_roles check (roles <@ memsub.context_roles());
comment on column memsub.api_keys.roles is
    'Context roles of the requests (a subset of memsub.context_roles()); the server login must be a member of the '
    'matching memsub role.';
