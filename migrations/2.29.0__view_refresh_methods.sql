-- The refresh methods of a materialized view are spelled once: the check constraint on
-- memory_view_refresh_log.method takes its list from memsub.view_refresh_methods() (sql/005_vocabulary.sql owns
-- it; the definition here only lets the constraint be created before the re-runnable SQL is applied). The
-- constraint keeps its name and allows the same values.

create or replace function memsub.view_refresh_methods() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['concurrently', 'full', 'none']::text[] $$;
comment on function memsub.view_refresh_methods() is 'How a materialized view was refreshed (memory_view_refresh_log.method).';

alter table memsub.memory_view_refresh_log
    drop constraint memory_view_refresh_log_method_known,
    add constraint memory_view_refresh_log_method_known check (method = any (memsub.view_refresh_methods()));
comment on column memsub.memory_view_refresh_log.method is
    'One of memsub.view_refresh_methods(): concurrently (populated view), full (first population) or none '
    '(skipped).';
