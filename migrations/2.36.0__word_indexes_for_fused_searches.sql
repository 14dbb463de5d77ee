-- memsub 2.36.0: the text legs of entity_search and memory_search find the tenant's matching rows through an
-- index, where they read every row of the tenant (3,000 entities: 9,000 rows read, 81 ms at 10,000; 3,000 memory
-- entries: 18,000 rows read, 50 ms at 10,000).
--
-- entity_search matches the words of an entity's name and aliases (the simple configuration). Those words are
-- now indexed, by tenant: memsub._entity_name_words, which the search's statement calls as the index does.
-- memory_search's index of the words of live entries (search_tsv) is rebuilt with the tenant first (btree_gin,
-- as the keyword index of memory_embeddings), so a word common in other tenants costs a search nothing.

create or replace function memsub._entity_name_words(p_entity_id text, p_aliases text[]) returns tsvector
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
-- immutable: array_to_string is stable only for element types whose text output may change; text's does not.
as $$ select pg_catalog.to_tsvector('simple'::regconfig, p_entity_id || ' ' || pg_catalog.array_to_string(p_aliases, ' ')) $$;
comment on function memsub._entity_name_words(text, text[]) is
    'Internal: the words of an entity''s name and aliases (simple configuration), as the index '
    'idx_world_model_entities_name_words holds them and memsub._entity_word_candidates matches them.';

create index idx_world_model_entities_name_words on memsub.world_model_entities
    using gin (tenant_id, memsub._entity_name_words(entity_id, aliases));
comment on index memsub.idx_world_model_entities_name_words is
    'The words of each entity''s name and aliases (simple configuration), by tenant: the text leg of '
    'memsub.entity_search.';

drop index memsub.idx_memory_entries_search;
create index idx_memory_entries_search on memsub.memory_entries using gin (tenant_id, search_tsv) where not is_deleted;
comment on index memsub.idx_memory_entries_search is
    'Full-text search over live memory entries, by tenant (btree_gin for the tenant key): the text leg of '
    'memsub.memory_search.';
