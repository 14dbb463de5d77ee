-- One spelling per vocabulary: the check constraints take their lists from memsub.embedding_types() and
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
