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
as $$ select array['purge_expired', 'learn_importance', 'memory_maintenance', 'refresh_memory_views',
                   'summaries_due', 'tune_search']::text[] $$;
comment on function memsub.maintain_tasks() is
    'The tasks memsub maintain runs, in the order it runs them (the views are refreshed after the importance '
    'is learned and entries promoted, so they hold what the round changed); each has its own maintain lock '
    '(memsub.maintain_lock).';

create or replace function memsub.context_roles() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['tenant_admin', 'platform_admin']::text[] $$;
comment on function memsub.context_roles() is
    'The roles a context may ask for (memsub.set_context p_roles, signed context tokens, API keys); each needs '
    'membership in the database role memsub_<role>.';

create or replace function memsub.packet_scopes() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['shared', 'cursor', 'l-private']::text[] $$;
comment on function memsub.packet_scopes() is
    'Who may read a row (seed 000''s scope: the envelope field scope, the scope column of packet_store, '
    'packet_tombstones, agent_memory_events, reasoning_traces, semantic_memory and memory_embeddings): shared for '
    'the tenant, cursor for its user and session, l-private for its user.';

create or replace function memsub.derivation_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['split', 'merge', 'transform', 'inference']::text[] $$;
comment on function memsub.derivation_types() is
    'How a packet derives from its parents (the envelope field lineage.derivation_type).';

create or replace function memsub.task_statuses() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['pending', 'running', 'completed', 'failed', 'cancelled']::text[] $$;
comment on function memsub.task_statuses() is
    'The states of a task (tasks.status, memsub.task_set_status p_status); the final ones are '
    'memsub.task_final_statuses().';

create or replace function memsub.task_final_statuses() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['completed', 'failed', 'cancelled']::text[] $$;
comment on function memsub.task_final_statuses() is
    'The task statuses a task cannot leave (a subset of memsub.task_statuses()); a task has completed_at exactly '
    'when its status is one of them.';

create or replace function memsub.session_statuses() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['active', 'terminated']::text[] $$;
comment on function memsub.session_statuses() is
    'The states of a session (sessions.status): active until memsub.session_terminate makes it terminated, which '
    'sets terminated_at.';

create or replace function memsub.agent_statuses() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['active', 'finished']::text[] $$;
comment on function memsub.agent_statuses() is
    'The states of an agent (agents.status): active from memsub.agent_spawn, then finished.';

create or replace function memsub.summary_scope_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['thread', 'agent', 'topic', 'time_period', 'project', 'task']::text[] $$;
comment on function memsub.summary_scope_types() is
    'What a summary covers (seed 000''s scope_type: memory_summaries.scope_type, memsub.record_summary '
    'p_scope_type).';

create or replace function memsub.view_refresh_statuses() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['ok', 'error', 'skipped']::text[] $$;
comment on function memsub.view_refresh_statuses() is
    'How the refresh of a materialized view ended (memory_view_refresh_log.status): ok, error, or skipped because '
    'another refresh of the view held its lock.';

create or replace function memsub.view_refresh_methods() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['concurrently', 'full', 'none']::text[] $$;
comment on function memsub.view_refresh_methods() is
    'How a materialized view was refreshed (memory_view_refresh_log.method): concurrently once it is populated, '
    'full for its first population, or none when the refresh was skipped.';

create or replace function memsub.reflection_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['lesson', 'pattern', 'failure', 'success', 'insight', 'improvement', 'false_constraint']::text[] $$;
comment on function memsub.reflection_types() is
    'What a reflection records (seed 000''s reflection_type: reflection_store.reflection_type, '
    'memsub.record_reflection p_reflection_type, memsub.retrieve_reflections p_reflection_types).';

create or replace function memsub.reflection_priorities() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['critical', 'high', 'medium', 'low']::text[] $$;
comment on function memsub.reflection_priorities() is
    'How much a reflection matters, most first (reflection_store.priority, memsub.record_reflection p_priority, '
    'memsub.retrieve_reflections p_min_priority): retrieve_reflections weighs critical 1, high 0.75, medium 0.5, '
    'low 0.25.';

create or replace function memsub.task_outcomes() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['success', 'partial', 'failure', 'unknown']::text[] $$;
comment on function memsub.task_outcomes() is
    'How a task ended, as its reflection records it (task_reflections.outcome, memsub.record_task_reflection '
    'p_outcome).';

create or replace function memsub.document_mimes() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['pdf', 'md', 'txt']::text[] $$;
comment on function memsub.document_mimes() is
    'The kinds of document memsub ingests (document_index.mime, memsub.document_ingest p_mime).';

create or replace function memsub.graph_node_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['Entity', 'Episode', 'Document', 'Memory']::text[] $$;
comment on function memsub.graph_node_types() is
    'What an edge of the temporal graph can join (entity_relationships.source_type and target_type): an Entity by '
    'name, an Episode (a session id), a Document (a document id) or a Memory (a memory entry id).';

create or replace function memsub.entity_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['Person', 'Organization', 'Concept', 'Location']::text[] $$;
comment on function memsub.entity_types() is
    'The kinds of entity node (memsub.graph_upsert_entity p_entity_type).';

create or replace function memsub.access_target_types() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['packet', 'embedding', 'fact', 'reflection']::text[] $$;
comment on function memsub.access_target_types() is
    'What an access record points at (memory_access_log.target_type, memsub.record_access p_target_type).';

create or replace function memsub.search_rank_orders() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['distance', 'combined']::text[] $$;
comment on function memsub.search_rank_orders() is
    'How memsub.semantic_search orders its hits (p_rank_by): by distance, or by memsub.combined_score.';

create or replace function memsub.search_modes() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['auto', 'exact', 'approximate']::text[] $$;
comment on function memsub.search_modes() is
    'How memsub.semantic_search finds its hits (p_mode): auto (the cheaper at the recall bound), the exact scan, or '
    'the HNSW walk.';

create or replace function memsub.graph_directions() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['outgoing', 'incoming', 'both']::text[] $$;
comment on function memsub.graph_directions() is
    'Which edges memsub.traverse_graph follows from an entity (p_direction).';

create or replace function memsub.lineage_directions() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array['ancestors', 'descendants']::text[] $$;
comment on function memsub.lineage_directions() is
    'Which way memsub.get_lineage walks from a packet (p_direction).';

create or replace function memsub._alternatives(p_values text[]) returns text
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case when cardinality(p_values) > 1
                then array_to_string(p_values[1:cardinality(p_values) - 1], ', ') || ' or '
                     || p_values[cardinality(p_values)]
                else array_to_string(p_values, ', ') end
$$;
comment on function memsub._alternatives(text[]) is
    'Internal: a vocabulary in words for an error message ("shared, cursor or l-private").';

grant execute on function memsub.embedding_types(), memsub.memory_types(), memsub.memory_tiers(),
    memsub.context_roles(), memsub.packet_scopes(), memsub.derivation_types(),
    memsub.task_statuses(), memsub.task_final_statuses(), memsub.session_statuses(), memsub.agent_statuses(),
    memsub.summary_scope_types(), memsub.view_refresh_statuses(), memsub.view_refresh_methods(),
    memsub.reflection_types(), memsub.reflection_priorities(), memsub.task_outcomes(), memsub.document_mimes(),
    memsub.graph_node_types(), memsub.entity_types(), memsub.access_target_types(), memsub.search_rank_orders(),
    memsub.search_modes(), memsub.graph_directions(), memsub.lineage_directions()
    to memsub_app, memsub_analyst;
-- memsub_expiry_owner's memsub.get_lineage checks its direction.
grant execute on function memsub.lineage_directions(), memsub._alternatives(text[]) to memsub_expiry_owner;
-- memsub_retrieval_owner's SECURITY DEFINER functions (the keyword legs) check their embedding_type argument, and
-- learn_importance updates rows whose check constraints read the access targets and the reflection lists.
grant execute on function memsub.embedding_types(), memsub.access_target_types(), memsub.reflection_types(),
    memsub.reflection_priorities()
    to memsub_retrieval_owner;
-- A check constraint calls its function as the role that writes the row: memsub_retrieval_owner updates
-- packet_store and semantic_memory (importance learning), memsub_expiry_owner inserts packet_tombstones.
grant execute on function memsub.packet_scopes() to memsub_retrieval_owner, memsub_expiry_owner;
-- memsub_view_owner's memsub._refresh_memory_view inserts memory_view_refresh_log rows.
grant execute on function memsub.view_refresh_statuses(), memsub.view_refresh_methods() to memsub_view_owner;
grant execute on function memsub.maintain_tasks() to memsub_platform_admin;
