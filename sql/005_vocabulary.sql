-- Area: foundation. Seed: the closed value lists of seed 000 (scope, embedding_type, scope_type ...) and seed 001
--   (memory_type, tiers).
--
-- Vocabularies: each closed list of values is spelled here once. Check constraints, the functions that check
-- their arguments, and the Python types (tests/foundation/test_vocabulary.py keeps those equal) all take the
-- list from here.
-- Adding a value: append it to the function's array (append only: rows already stored keep their values) and to
-- the matching Python Literal. The functions are IMMUTABLE because check constraints call them.

create or replace function memsub.embedding_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['content', 'context', 'entity', 'summary', 'reasoning']::text[] $$;
comment on function memsub.embedding_types() is
    'The vector spaces an embedding can belong to (memory_embeddings.embedding_type, semantic_memory.embedding_type '
    'except reasoning, the embedding_type argument of the vector and search functions).';

create or replace function memsub.memory_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['semantic', 'episodic', 'procedural']::text[] $$;
comment on function memsub.memory_types() is
    'The kinds of namespaced memory (memory_entries.memory_type): what an entry remembers, a fact, an event or a '
    'way of doing something.';

create or replace function memsub.memory_tiers() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['STM', 'LTM', 'Procedural']::text[] $$;
comment on function memsub.memory_tiers() is
    'The tiers of namespaced memory (memory_entries.memory_tier, graph_nodes.memory_tier, seed 003''s memory '
    'type): short-term, long-term or procedural, which decides how an entry decays and is promoted.';

create or replace function memsub.maintain_tasks() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['purge_expired', 'refresh_memory_views', 'learn_importance', 'memory_maintenance',
                   'summaries_due', 'tune_search']::text[] $$;
comment on function memsub.maintain_tasks() is
    'The tasks memsub maintain runs, in the order it runs them; each has its own maintain lock '
    '(memsub.maintain_lock).';

create or replace function memsub.context_roles() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['tenant_admin', 'platform_admin']::text[] $$;
comment on function memsub.context_roles() is
    'The roles a context may ask for (memsub.set_context p_roles, signed context tokens, API keys); each needs '
    'membership in the database role memsub_<role>.';

grant execute on function memsub.embedding_types(), memsub.memory_types(), memsub.memory_tiers(),
    memsub.context_roles()
    to memsub_app, memsub_analyst;
-- memsub_retrieval_owner's SECURITY DEFINER functions (the keyword legs) check their embedding_type argument.
grant execute on function memsub.embedding_types() to memsub_retrieval_owner;
grant execute on function memsub.maintain_tasks() to memsub_platform_admin;
