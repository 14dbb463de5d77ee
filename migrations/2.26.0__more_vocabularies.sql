-- More vocabularies spelled once: the scope, derivation type and task status lists. The check constraints take
-- their lists from memsub.packet_scopes(), memsub.task_statuses() and memsub.task_final_statuses()
-- (sql/005_vocabulary.sql owns them and memsub.derivation_types(); the definitions here only let the constraints
-- be created before the re-runnable SQL is applied). Each constraint keeps its name and allows the same values.

create or replace function memsub.packet_scopes() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['shared', 'cursor', 'l-private']::text[] $$;
comment on function memsub.packet_scopes() is 'Who may read a row: shared, cursor or l-private.';

create or replace function memsub.task_statuses() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['pending', 'running', 'completed', 'failed', 'cancelled']::text[] $$;
comment on function memsub.task_statuses() is 'The states of a task (tasks.status).';

create or replace function memsub.task_final_statuses() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['completed', 'failed', 'cancelled']::text[] $$;
comment on function memsub.task_final_statuses() is 'The task statuses a task cannot leave.';

alter table memsub.packet_store
    drop constraint packet_store_scope_known,
    add constraint packet_store_scope_known check (scope = any (memsub.packet_scopes()));
comment on column memsub.packet_store.scope is
    'Memory isolation scope, one of memsub.packet_scopes(): shared (whole tenant/org), cursor (writer and its '
    'session), l-private (writer only).';

alter table memsub.packet_tombstones
    drop constraint packet_tombstones_scope_known,
    add constraint packet_tombstones_scope_known check (scope = any (memsub.packet_scopes()));

alter table memsub.agent_memory_events
    drop constraint agent_memory_events_scope_known,
    add constraint agent_memory_events_scope_known check (scope = any (memsub.packet_scopes()));

alter table memsub.reasoning_traces
    drop constraint reasoning_traces_scope_known,
    add constraint reasoning_traces_scope_known check (scope = any (memsub.packet_scopes()));

alter table memsub.semantic_memory
    drop constraint semantic_memory_scope_known,
    add constraint semantic_memory_scope_known check (scope = any (memsub.packet_scopes()));
comment on column memsub.semantic_memory.scope is
    'Memory isolation scope: one of memsub.packet_scopes() (as packet_store.scope).';

alter table memsub.memory_embeddings
    drop constraint memory_embeddings_scope_known,
    add constraint memory_embeddings_scope_known check (scope = any (memsub.packet_scopes()));

alter table memsub.tasks
    drop constraint tasks_status_check,
    add constraint tasks_status_check check (status = any (memsub.task_statuses())),
    drop constraint tasks_completed_consistent,
    add constraint tasks_completed_consistent
        check ((status = any (memsub.task_final_statuses())) = (completed_at is not null));
comment on column memsub.tasks.status is
    'One of memsub.task_statuses(); the final ones (memsub.task_final_statuses()) set completed_at.';
comment on column memsub.tasks.completed_at is 'When the task reached a final status (memsub.task_final_statuses()).';
