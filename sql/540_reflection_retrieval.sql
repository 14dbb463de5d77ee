-- Area: reflection. Seed: seed 000 "REFLECTION LAYER" and "DATA FLOW DIAGRAM".
--
-- Retrieval pipeline, last stage of seed 000's data flow: the lessons relevant to a task.
--
-- A tenant's reflections are few next to its embeddings (lessons, not events), so they are scored exactly: every
-- visible, unexpired reflection passing the filters gets
--   score = 0.6 * similarity (1 - cosine distance / 2; 0.5 without a query vector or a stored vector)
--         + 0.2 * tag overlap (shared tags / asked tags; 0 without asked tags)
--         + 0.2 * priority (critical 1, high 0.75, medium 0.5, low 0.25)
-- and the k best are returned, optionally recorded as accesses (access_count + 1 on each reflection).

create or replace function memsub.retrieve_reflections(
    p_query            vector           default null,
    p_tags             text[]           default null,
    p_k                integer          default 5,
    p_reflection_types text[]           default null,
    p_min_priority     text             default 'low',
    p_task_id          text             default null,
    p_require_tags     boolean          default false,
    p_record_access    boolean          default false,
    p_query_text       text             default null,
    p_agent_id         text             default null
) returns table (reflection_id uuid, reflection_type text, content text, tags text[], priority text,
                 confidence double precision, distance double precision, tag_overlap double precision,
                 score double precision, access_id uuid)
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_priorities text[] := memsub.reflection_priorities();  -- most first
    v_rank       integer;
    v_task_id    text;  -- the task id as stored; blank: every task
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_limit(cardinality(p_tags), 'max_tags', 'tags'),
            memsub._check_limit(cardinality(p_reflection_types), 'max_array_items', 'reflection_types'),
            memsub._check_text_limits('min_priority', p_min_priority, 'task_id', p_task_id, 'agent_id', p_agent_id),
            memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    perform memsub._check_vector(p_query, 'query');
    perform memsub._check_filter_values(p_tags, 'tags');
    -- A type outside the vocabulary matches nothing: refused, as a blank or NULL one is.
    perform memsub._check_filter_values(p_reflection_types, 'reflection_types');
    perform memsub._check_one_of(t, memsub.reflection_types(), 'reflection_types') from unnest(p_reflection_types) t;
    -- An empty list matches nothing as well: NULL is the filter that lets every type (or tag) through.
    if cardinality(p_reflection_types) = 0 then
        raise exception 'field "reflection_types" must name at least one type (NULL: every type)'
            using errcode = '22023', column = 'reflection_types';
    end if;
    if p_require_tags and cardinality(p_tags) = 0 then
        raise exception 'field "tags" must name at least one tag with require_tags (NULL: no tag filter)'
            using errcode = '22023', column = 'tags';
    end if;
    perform memsub._check_one_of(p_min_priority, v_priorities, 'min_priority');
    perform memsub._check_count(p_k, 'max_k', 'k');
    v_task_id := memsub._optional_text(p_task_id);
    v_rank := array_position(v_priorities, p_min_priority);
    return query
    with scored as (
        select r.reflection_id, r.reflection_type, r.content, r.tags, r.priority, r.confidence,
               (r.vector <=> p_query)::double precision as distance,
               case when cardinality(p_tags) > 0
                    then (select count(*) from unnest(r.tags) t where t = any(p_tags))::double precision
                         / cardinality(array(select distinct u from unnest(p_tags) u))
                    else 0.0 end as tag_overlap,
               (cardinality(v_priorities) + 1 - array_position(v_priorities, r.priority))::double precision
                   / cardinality(v_priorities) as priority_weight
          from memsub.reflection_store r
         where r.tenant_id = v_tenant
           and (r.expires_at is null or r.expires_at > now())
           and (p_reflection_types is null or r.reflection_type = any(p_reflection_types))
           and array_position(v_priorities, r.priority) <= v_rank
           and (v_task_id is null or r.task_id = v_task_id)
           and (not p_require_tags or cardinality(p_tags) is null or r.tags && p_tags)
    ), top as materialized (
        -- The similarity is 0.5 without a query vector or a stored vector (distance NULL): the coalesce sits
        -- inside the greatest, which would otherwise pass over the NULL and give 0.
        select w.*
          from (select s.*,
                       0.6 * greatest(0.0, coalesce(1.0 - s.distance / 2.0, 0.5)) + 0.2 * s.tag_overlap
                       + 0.2 * s.priority_weight as total
                  from scored s) w
         order by w.total desc, w.reflection_id
         limit p_k
    ), recorded as (
        select a.target_id, a.access_id
          from memsub._record_accesses_on_request('reflection',
                                                  (select array_agg(t.reflection_id) from top t),
                                                  (select array_agg(t.total) from top t),
                                                  p_query_text, 'retrieve_reflections', p_agent_id) a
         where p_record_access
    )
    select t.reflection_id, t.reflection_type, t.content, t.tags, t.priority, t.confidence, t.distance,
           t.tag_overlap, t.total, a.access_id
      from top t
      left join recorded a on a.target_id = t.reflection_id
     order by t.total desc, t.reflection_id;
end
$$;
comment on function memsub.retrieve_reflections(vector, text[], integer, text[], text, text, boolean, boolean, text, text) is
    'Lessons relevant to a task: the k visible, unexpired reflections with the best score = 0.6 similarity to the '
    'query vector + 0.2 tag overlap with tags + 0.2 priority, filtered by reflection types, minimum priority, '
    'task (its id read as stored: trimmed, each run of whitespace one space; a blank id filters nothing), and '
    '(require_tags) at least one shared tag. An empty list of types, or of tags with require_tags, is refused '
    '(22023; NULL filters nothing). record_access logs each result and counts it '
    '(not in a read-only transaction, such as a hot standby''s: access_id NULL); query_text is recorded with '
    'that log only, never matched.';

grant execute on function
    memsub.retrieve_reflections(vector, text[], integer, text[], text, text, boolean, boolean, text, text)
    to memsub_app, memsub_analyst;
