-- Retrieval pipeline, semantic leg: nearest packets by embedding, correct for tenants of every size.
--
-- HNSW filters after the graph walk: the caller's row-level security predicates (and the packet filters) drop
-- rows the walk found, so a plain index scan can return fewer than k rows for a tenant that holds a small share
-- of the table. memsub.semantic_search therefore
--   1. probes how many rows of the type the caller sees (at most p_exact_below index entries): a tenant below
--      the threshold is searched exactly (its rows through the (tenant_id, embedding_type) index, sorted by
--      distance) -- exact and cheap for small tenants;
--   2. otherwise walks the type's partial HNSW index with pgvector's iterative scan (hnsw.iterative_scan,
--      hnsw.ef_search, hnsw.max_scan_tuples set for the call only, by the function's SET clauses);
--   3. falls back to the exact scan when the walk still found fewer than k rows (very selective filters), so a
--      tenant with at least k matching rows always gets k rows.
-- In step 2 the planner stays free to prefer an exact plan (e.g. when a selective packet filter has an index);
-- the result column method says "approximate" for step 2 and "exact" for steps 1 and 3.
-- Queries are built with the tenant as a literal and run with EXECUTE: every call is planned with the real
-- tenant, so the planner estimates a big tenant from its own statistics, not from the average tenant.

create or replace function memsub.combined_score(
    p_distance         double precision,
    p_importance       double precision,
    p_last_active      timestamptz,
    p_similarity_weight double precision default 0.7,
    p_importance_weight double precision default 0.2,
    p_recency_weight    double precision default 0.1,
    p_half_life         interval         default interval '30 days'
) returns double precision
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    -- One comparison per argument on the common path; the checks (which name the field) only for a bad value.
    if p_distance in ('NaN', 'Infinity', '-Infinity') or p_importance in ('NaN', 'Infinity', '-Infinity')
       or p_similarity_weight in ('NaN', 'Infinity', '-Infinity')
       or p_importance_weight in ('NaN', 'Infinity', '-Infinity')
       or p_recency_weight in ('NaN', 'Infinity', '-Infinity')
       or not isfinite(p_last_active) or not isfinite(p_half_life) then
        perform memsub._check_finite(p_distance, 'distance'), memsub._check_finite(p_importance, 'importance'),
                memsub._check_finite_time(p_last_active, 'last_active'),
                memsub._check_finite(p_similarity_weight, 'similarity_weight'),
                memsub._check_finite(p_importance_weight, 'importance_weight'),
                memsub._check_finite(p_recency_weight, 'recency_weight'),
                memsub._check_finite_interval(p_half_life, 'half_life');
    end if;
    return p_similarity_weight * greatest(0.0, 1.0 - p_distance / 2.0)
         + p_importance_weight * coalesce(p_importance, 0.5)
         + p_recency_weight * power(0.5, greatest(0.0, extract(epoch from now() - coalesce(p_last_active, now())))
                                          / greatest(1.0, extract(epoch from p_half_life)));
end
$$;
comment on function memsub.combined_score(double precision, double precision, timestamptz, double precision, double precision, double precision, interval) is
    'Ranking score in [0, 1] with the default weights: 0.7 similarity (1 - cosine distance / 2) + 0.2 importance '
    '+ 0.1 recency (0.5 ^ (time since last access or write / half_life), half-life 30 days).';

create or replace function memsub._record_accesses(
    p_target_type    text,
    p_target_ids     uuid[],
    p_scores         double precision[],
    p_query_text     text default null,
    p_access_context text default null,
    p_agent_id       text default null
) returns table (target_id uuid, access_id uuid)
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_limit(length(p_target_type), 'max_text_chars', 'target_type'),
            memsub._check_limit(cardinality(p_target_ids), 'max_k', 'target_ids'),
            memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text'),
            memsub._check_limit(length(p_access_context), 'max_text_chars', 'access_context'),
            memsub._check_limit(length(p_agent_id), 'max_text_chars', 'agent_id');
    perform memsub._check_one_of(p_target_type, array['packet', 'embedding', 'fact', 'reflection'], 'target_type');
    if cardinality(p_scores) is distinct from cardinality(p_target_ids) then
        raise exception 'field "scores" must have one score per target id' using errcode = '22023', column = 'scores';
    end if;
    perform memsub._check_finite(s.score, format('scores[%s]', s.n - 1))
       from unnest(p_scores) with ordinality as s(score, n);
    -- Counters live off the vector rows: an embedding access counts on its packet (see 170_operations.sql).
    if p_target_type in ('packet', 'embedding') then
        update memsub.packet_store s set access_count = s.access_count + n.hits, last_accessed = now()
          from (select coalesce(e.packet_id, t.id) as packet_id, count(*)::integer as hits
                  from unnest(p_target_ids) as t(id)
                  left join memsub.memory_embeddings e
                         on p_target_type = 'embedding' and e.tenant_id = v_tenant and e.embedding_id = t.id
                 group by 1) n
         where s.tenant_id = v_tenant and s.packet_id = n.packet_id;
    elsif p_target_type = 'fact' then
        update memsub.knowledge_facts f set access_count = f.access_count + 1, last_accessed = now()
         where f.tenant_id = v_tenant and f.fact_id = any(p_target_ids);
    else
        update memsub.reflection_store r set access_count = r.access_count + 1, last_accessed = now()
         where r.tenant_id = v_tenant and r.reflection_id = any(p_target_ids);
    end if;
    return query
        insert into memsub.memory_access_log as l (
            target_type, target_id, agent_id, access_context, query_text, relevance_score,
            tenant_id, org_id, user_id, session_id)
        select p_target_type, t.id, nullif(btrim(p_agent_id), ''), p_access_context, p_query_text, t.score,
               v_tenant, memsub.current_org_id(), memsub.current_user_id(), memsub.current_session_id()
          from unnest(p_target_ids, p_scores) as t(id, score)
         where case p_target_type
                   when 'packet' then exists (select from memsub.packet_store s
                                               where s.tenant_id = v_tenant and s.packet_id = t.id)
                   when 'embedding' then exists (select from memsub.memory_embeddings e
                                                  where e.tenant_id = v_tenant and e.embedding_id = t.id)
                   when 'fact' then exists (select from memsub.knowledge_facts f
                                             where f.tenant_id = v_tenant and f.fact_id = t.id)
                   else exists (select from memsub.reflection_store r
                                 where r.tenant_id = v_tenant and r.reflection_id = t.id)
               end
        returning l.target_id, l.access_id;
end
$$;
comment on function memsub._record_accesses(text, uuid[], double precision[], text, text, text) is
    'Logs one access per visible target id (with its relevance score) in one statement and counts them on the '
    'targets; ids the caller cannot see are skipped. '
    'used by the retrieval functions when asked to record. Returns the access id of each target.';

create or replace function memsub.semantic_search(
    p_query           vector,
    p_k               integer          default 10,
    p_embedding_type  text             default 'content',
    p_thread_id       uuid             default null,
    p_tags            text[]           default null,
    p_packet_type     text             default null,
    p_since           timestamptz      default null,
    p_until           timestamptz      default null,
    p_min_importance  double precision default null,
    p_rank_by         text             default 'distance',
    p_record_access   boolean          default false,
    p_query_text      text             default null,
    p_agent_id        text             default null,
    p_exact_below     integer          default 1000,
    p_ef_search       integer          default null,
    p_max_scan_tuples integer          default 20000
) returns table (embedding_id uuid, packet_id uuid, embedding_type text, chunk_index integer, chunk_text text,
                 distance double precision, importance_score double precision, combined_score double precision,
                 method text, access_id uuid)
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 100
set hnsw.max_scan_tuples = 20000
as $$
declare
    v_tenant  uuid := memsub.current_tenant_id();
    v_pool    integer;
    v_seen    integer;
    v_method  text := 'approximate';
    v_filters text := '';
    v_query   text;
    v_hits    memsub.retrieval_candidate[];
    v_ids     uuid[];
    v_scores  double precision[];
    v_access  uuid[];
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_limit(length(p_embedding_type), 'max_text_chars', 'embedding_type'),
            memsub._check_limit(cardinality(p_tags), 'max_tags', 'tags'),
            memsub._check_limit(length(p_packet_type), 'max_text_chars', 'packet_type'),
            memsub._check_limit(length(p_rank_by), 'max_text_chars', 'rank_by'),
            memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text'),
            memsub._check_limit(length(p_agent_id), 'max_text_chars', 'agent_id');
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(),
                                'embedding_type');
    perform memsub._check_one_of(p_rank_by, array['distance', 'combined'], 'rank_by');
    if p_query is null then
        raise exception 'field "query" is required' using errcode = '23502', column = 'query';
    end if;
    perform memsub._check_vector(p_query, 'query');
    perform memsub._check_finite_time(p_since, 'since');
    perform memsub._check_finite_time(p_until, 'until');
    if p_k is null or p_k < 1 then
        raise exception 'field "k" must be at least 1, not %', p_k
            using errcode = '22023', column = 'k';
    end if;
    perform memsub._check_limit(p_k, 'max_k', 'k');
    if p_exact_below is null or p_exact_below < 0 then
        raise exception 'field "exact_below" must be >= 0, not %', p_exact_below
            using errcode = '22023', column = 'exact_below';
    end if;
    if p_ef_search is not null and (p_ef_search < 1 or p_ef_search > 1000) then
        raise exception 'field "ef_search" must be between 1 and 1000, not %', p_ef_search
            using errcode = '22023', column = 'ef_search';
    end if;
    if p_max_scan_tuples is null or p_max_scan_tuples < 1 then
        raise exception 'field "max_scan_tuples" must be >= 1, not %', p_max_scan_tuples
            using errcode = '22023', column = 'max_scan_tuples';
    end if;
    -- The HNSW graph holds every tenant's vectors: the scan bound is what keeps one call from walking all of it.
    perform memsub._check_limit(p_max_scan_tuples, 'max_scan_tuples', 'max_scan_tuples'),
            memsub._check_limit(p_exact_below, 'max_scan_tuples', 'exact_below');
    perform memsub._check_unit(p_min_importance, 'min_importance');
    perform pg_catalog.set_config('hnsw.max_scan_tuples', p_max_scan_tuples::text, true);
    -- Combined ranking re-ranks a wider pool of nearest candidates.
    v_pool := case when p_rank_by = 'combined' then least(1000, p_k * 4) else p_k end;
    perform pg_catalog.set_config('hnsw.ef_search', greatest(coalesce(p_ef_search, 100), v_pool)::text, true);

    if v_tenant is not null then
        v_filters := format(' and e.tenant_id = %L::uuid', v_tenant);
    end if;
    if p_thread_id is not null then v_filters := v_filters || ' and p.thread_id = $3'; end if;
    if p_tags is not null then v_filters := v_filters || ' and p.tags @> $4'; end if;
    if p_packet_type is not null then v_filters := v_filters || ' and p.packet_type = $5'; end if;
    if p_since is not null then v_filters := v_filters || ' and p."timestamp" >= $6'; end if;
    if p_until is not null then v_filters := v_filters || ' and p."timestamp" < $7'; end if;
    if p_min_importance is not null then v_filters := v_filters || ' and p.importance_score >= $8'; end if;

    -- 1. Size probe: does the caller see at least p_exact_below rows of this type?
    if v_tenant is not null then
        execute format('select count(*) from (select 1 from memsub.memory_embeddings e '
                       ' where e.tenant_id = %L::uuid and e.embedding_type = %L limit $1) s',
                       v_tenant, p_embedding_type)
           into v_seen using p_exact_below;
        if v_seen < p_exact_below then
            v_method := 'exact';
        end if;
    end if;

    -- 2./3. HNSW walk, or the exact scan (the "+ 0" keeps the ordering expression off the HNSW index).
    loop
        v_query := format(
            'select array_agg(c order by c.distance) from ('
            '  select e.tenant_id, e.embedding_id, e.packet_id, e.chunk_index, e.chunk_text,'
            '         (e.vector <=> $1)::double precision as distance, p.importance_score,'
            '         coalesce(p.last_accessed, p."timestamp") as last_active'
            '    from memsub.memory_embeddings e'
            '    join memsub.packet_store p on p.tenant_id = e.tenant_id and p.packet_id = e.packet_id'
            '   where e.embedding_type = %L %s'
            '   order by %s'
            '   limit $2) c',
            p_embedding_type, v_filters,
            case when v_method = 'exact' then '(e.vector <=> $1) + 0, e.embedding_id' else 'e.vector <=> $1' end);
        execute v_query into v_hits
            using p_query, v_pool, p_thread_id, p_tags, p_packet_type, p_since, p_until, p_min_importance;
        exit when v_method = 'exact' or coalesce(cardinality(v_hits), 0) >= v_pool;
        v_method := 'exact';
    end loop;

    if p_record_access and cardinality(v_hits) > 0 then
        select array_agg(h.embedding_id order by h.distance), array_agg(1.0 - h.distance / 2.0 order by h.distance)
          into v_ids, v_scores from unnest(v_hits) h;
        select array_agg(a.access_id order by a.ord) into v_access
          from (select r.access_id, array_position(v_ids, r.target_id) as ord
                  from memsub._record_accesses('embedding', v_ids, v_scores, p_query_text, 'semantic_search', p_agent_id) r) a;
    end if;

    return query
        select h.embedding_id, h.packet_id, p_embedding_type, h.chunk_index, h.chunk_text, h.distance,
               h.importance_score, memsub.combined_score(h.distance, h.importance_score, h.last_active),
               v_method, v_access[array_position(v_ids, h.embedding_id)]
          from unnest(v_hits) h
         order by case when p_rank_by = 'combined'
                       then -memsub.combined_score(h.distance, h.importance_score, h.last_active)
                       else h.distance end,
                  h.embedding_id
         limit p_k;
end
$$;
comment on function memsub.semantic_search(vector, integer, text, uuid, text[], text, timestamptz, timestamptz, double precision, text, boolean, text, text, integer, integer, integer) is
    'The k visible embeddings of one type nearest to the query (cosine distance), with their packet''s importance '
    'and combined score (memsub.combined_score). Filters on the packet: thread, tags (all of them), packet_type, '
    'time window [since, until), min_importance. rank_by distance (default) or combined (re-ranks the 4k nearest). '
    'Tenants with fewer than exact_below rows of the type are searched exactly; for others the planner may walk '
    'the HNSW index with iterative scan (method approximate), falling back to exact when that finds fewer than '
    'k rows (method exact). record_access logs each '
    'result in memory_access_log (access_id) and counts it on its packet. ef_search (default max(100, pool)) and '
    'max_scan_tuples (default 20000) bound the HNSW walk; the settings return to their values after the call.';

grant execute on function
    memsub.combined_score(double precision, double precision, timestamptz, double precision, double precision, double precision, interval),
    memsub.semantic_search(vector, integer, text, uuid, text[], text, timestamptz, timestamptz, double precision, text, boolean, text, text, integer, integer, integer)
    to memsub_app, memsub_analyst;
grant execute on function memsub._record_accesses(text, uuid[], double precision[], text, text, text) to memsub_app;
grant usage on type memsub.retrieval_candidate to memsub_app, memsub_analyst;
-- The graph, hybrid and reflection functions require a tenant context.
grant execute on function memsub._require_tenant_id() to memsub_app, memsub_analyst;
