-- One spelling per vocabulary, and internal helpers named as such: the check constraints take their lists from memsub.embedding_types() and
-- memsub.memory_types() (sql/005_vocabulary.sql owns them; the definitions here only let the constraints be
-- created before the re-runnable SQL is applied), and the two meanings of "memory type" get two names:
-- memory_type is semantic, episodic or procedural; memory_tier is STM, LTM or Procedural (graph_nodes followed the
-- seed's name for the second and is renamed).

create or replace function memsub.embedding_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['content', 'context', 'entity', 'summary', 'reasoning']::text[] $$;
comment on function memsub.embedding_types() is 'The vector spaces an embedding can belong to.';

create or replace function memsub.memory_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['semantic', 'episodic', 'procedural']::text[] $$;
comment on function memsub.memory_types() is 'The kinds of namespaced memory (memory_entries.memory_type).';

alter table memsub.memory_embeddings
    drop constraint memory_embeddings_embedding_type_known,
    add constraint memory_embeddings_embedding_type_known
        check (embedding_type = any (memsub.embedding_types()));
comment on column memsub.memory_embeddings.embedding_type is 'Vector space: one of memsub.embedding_types().';

-- semantic_memory holds agent memories: every vector space but a reasoning trace's.
alter table memsub.semantic_memory
    drop constraint semantic_memory_embedding_type_known,
    add constraint semantic_memory_embedding_type_known
        check (embedding_type = any (memsub.embedding_types()) and embedding_type <> 'reasoning');
comment on column memsub.semantic_memory.embedding_type is 'Vector space: one of memsub.embedding_types() except reasoning.';

alter table memsub.memory_entries
    drop constraint memory_entries_memory_type_check,
    add constraint memory_entries_memory_type_check check (memory_type = any (memsub.memory_types()));
comment on column memsub.memory_entries.memory_type is
    'Kind of memory: one of memsub.memory_types() (semantic, episodic, procedural); its tier is memory_tier.';
comment on column memsub.memory_entries.memory_tier is
    'Tier (seed 003''s Memory memory_type): Procedural for procedural memory, STM while short_term, otherwise LTM; '
    'one of memsub.memory_tiers().';

-- The view is re-created by sql/420_temporal_graph.sql; on an installation that has it, rename its column first
-- (CREATE OR REPLACE VIEW cannot rename a column).
alter view if exists memsub.graph_nodes rename column memory_type to memory_tier;

-- Internal helpers are named with a leading underscore, so that \df memsub.[^_]* is the public API. The
-- re-runnable SQL (re)creates them under their new names and grants what each needs; here an earlier
-- installation's helpers are renamed (policies that call them follow) and lose their grants until then.
do $rename$
declare
    routine regprocedure;
    routine_name name;
begin
    for routine, routine_name in
        select p.oid::regprocedure, p.proname from pg_catalog.pg_proc p
         where p.pronamespace = 'memsub'::regnamespace
           and p.proname in ('check_doc_refs', 'check_finite', 'check_finite_interval', 'check_finite_time',
                             'check_fused_search', 'check_graph_node', 'check_half_life', 'check_json_type',
                             'check_limit', 'check_one_of', 'check_unit', 'check_vector', 'require_tenant_id',
                             'require_text', 'normalize_json_value', 'float_array_vector', 'json_vector',
                             'merge_doc_refs', 'apply_state_delta', 'memory_namespace_writable', 'caller_is_admin',
                             'chunk_keyword_candidates', 'keyword_candidates', 'entity_keys', 'resolve_entity',
                             'record_accesses', 'importance_step', 'refresh_memory_view')
    loop
        execute format('revoke all on function %s from memsub_app, memsub_analyst, memsub_tenant_admin, '
                       'memsub_platform_admin', routine);
        execute format('alter function %s rename to %I', routine, '_' || routine_name);
    end loop;
end
$rename$;
