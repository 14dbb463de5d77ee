-- The closed lists left spelled out: the types and the priorities of a reflection, the outcome of a task's
-- reflection, the kinds of document, the node types of an edge and what an access record points at. The check
-- constraints take them from memsub.reflection_types(), reflection_priorities(), task_outcomes(),
-- document_mimes(), graph_node_types() and access_target_types() (sql/005_vocabulary.sql owns them, and
-- entity_types(), which no constraint uses; the definitions here only let the constraints be created before the
-- re-runnable SQL is applied). Each constraint keeps its name and allows the same values.

create or replace function memsub.reflection_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['lesson', 'pattern', 'failure', 'success', 'insight', 'improvement', 'false_constraint']::text[] $$;
comment on function memsub.reflection_types() is 'What a reflection records (reflection_store.reflection_type).';

create or replace function memsub.reflection_priorities() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['critical', 'high', 'medium', 'low']::text[] $$;
comment on function memsub.reflection_priorities() is
    'How much a reflection matters, most first (reflection_store.priority).';

create or replace function memsub.task_outcomes() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['success', 'partial', 'failure', 'unknown']::text[] $$;
comment on function memsub.task_outcomes() is
    'How a task ended, as its reflection records it (task_reflections.outcome).';

create or replace function memsub.document_mimes() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['pdf', 'md', 'txt']::text[] $$;
comment on function memsub.document_mimes() is 'The kinds of document (document_index.mime).';

create or replace function memsub.graph_node_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['Entity', 'Episode', 'Document', 'Memory']::text[] $$;
comment on function memsub.graph_node_types() is
    'What an edge can join (entity_relationships.source_type, target_type).';

create or replace function memsub.access_target_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['packet', 'embedding', 'fact', 'reflection']::text[] $$;
comment on function memsub.access_target_types() is 'What an access record points at (memory_access_log.target_type).';

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
comment on column memsub.task_reflections.outcome is
    'One of memsub.task_outcomes(): success, partial, failure or unknown.';

alter table memsub.document_index
    drop constraint document_index_mime_known,
    add constraint document_index_mime_known check (mime = any (memsub.document_mimes()));
comment on column memsub.document_index.mime is
    'Document kind, one of memsub.document_mimes(): pdf, md or txt (seed 003 mime).';

alter table memsub.entity_relationships
    drop constraint entity_relationships_node_types_known,
    add constraint entity_relationships_node_types_known
        check (source_type = any (memsub.graph_node_types()) and target_type = any (memsub.graph_node_types()));
comment on column memsub.entity_relationships.source_type is
    'Node type of the source, one of memsub.graph_node_types(): Entity (by name), Episode (session id), Document '
    '(document id) or Memory (memory entry id).';

alter table memsub.memory_access_log
    drop constraint memory_access_log_target_type_known,
    add constraint memory_access_log_target_type_known check (target_type = any (memsub.access_target_types()));
comment on column memsub.memory_access_log.target_type is
    'One of memsub.access_target_types(): packet, embedding, fact or reflection.';
