-- Three closed lists left spelled out: the types and the priorities of a reflection, and the outcome of a task's
-- reflection. The check constraints of reflection_store and task_reflections take them from
-- memsub.reflection_types(), memsub.reflection_priorities() and memsub.task_outcomes() (sql/005_vocabulary.sql
-- owns them; the definitions here only let the constraints be created before the re-runnable SQL is applied).
-- Each constraint keeps its name and allows the same values.

create or replace function memsub.reflection_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['lesson', 'pattern', 'failure', 'success', 'insight', 'improvement', 'false_constraint']::text[] $$;
comment on function memsub.reflection_types() is 'What a reflection records (reflection_store.reflection_type).';

create or replace function memsub.reflection_priorities() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['critical', 'high', 'medium', 'low']::text[] $$;
comment on function memsub.reflection_priorities() is 'How much a reflection matters, most first (reflection_store.priority).';

create or replace function memsub.task_outcomes() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['success', 'partial', 'failure', 'unknown']::text[] $$;
comment on function memsub.task_outcomes() is 'How a task ended, as its reflection records it (task_reflections.outcome).';

alter table memsub.reflection_store
    drop constraint reflection_store_type_known,
    add constraint reflection_store_type_known check (reflection_type = any (memsub.reflection_types())),
    drop constraint reflection_store_priority_known,
    add constraint reflection_store_priority_known check (priority = any (memsub.reflection_priorities()));
comment on column memsub.reflection_store.reflection_type is
    'One of memsub.reflection_types(): lesson, pattern, failure, success, insight, improvement or false_constraint.';
comment on column memsub.reflection_store.priority is
    'One of memsub.reflection_priorities(): critical, high, medium or low.';

alter table memsub.task_reflections
    drop constraint task_reflections_outcome_known,
    add constraint task_reflections_outcome_known check (outcome = any (memsub.task_outcomes()));
comment on column memsub.task_reflections.outcome is 'One of memsub.task_outcomes(): success, partial, failure or unknown.';
