-- Retrieval pipeline, hybrid leg: PostgreSQL full text fused with vector similarity by reciprocal rank fusion.
--
-- The keyword leg under row-level security: tsvector @@ tsquery is not LEAKPROOF, so for a role bound by the
-- policies the planner must evaluate the policies first and may not use @@ as an index condition; the GIN index
-- on search_tsv goes unused and every visible row of the tenant is read and tested (measured in
-- docs/benchmarks.md). memsub.keyword_candidates is therefore SECURITY DEFINER, owned by
-- memsub_retrieval_owner (BYPASSRLS, NOLOGIN), and applies the policies' predicates itself: tenant, org and
-- scope, as for a regular member of the tenant. It returns ids and ranks only; memsub.hybrid_search reads the
-- rows back through row-level security, so a row reaches the caller only when the policies allow it too.

create or replace function memsub.keyword_candidates(
    p_query_text     text,
    p_embedding_type text    default 'content',
    p_limit          integer default 50
) returns table (embedding_id uuid, text_rank integer, text_score real)
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant  uuid := memsub.require_tenant_id();
    v_org     uuid := memsub.current_org_id();
    v_user    uuid := memsub.current_user_id();
    v_session text := memsub.current_session_id();
    v_query   tsquery;
begin
    perform memsub.check_one_of(p_embedding_type, array['content', 'context', 'entity', 'summary', 'reasoning'],
                                'embedding_type');
    if p_limit is null or p_limit < 1 then
        raise exception 'field "limit" must be at least 1, not %', p_limit
            using errcode = '22023', column = 'limit';
    end if;
    perform memsub.check_limit(p_limit, 'max_k', 'limit');
    -- The text is bounded before a tsquery is built from it, and the tsquery before it is matched.
    perform memsub.check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    v_query := websearch_to_tsquery('english'::regconfig, coalesce(p_query_text, ''));
    perform memsub.check_limit(numnode(v_query), 'max_query_nodes', 'query_text');
    if numnode(v_query) = 0 then
        return;  -- no searchable words (empty text or only stop words)
    end if;
    return query
        select e.embedding_id,
               (row_number() over (order by ts_rank_cd(e.search_tsv, v_query) desc, e.embedding_id))::integer,
               ts_rank_cd(e.search_tsv, v_query)
          from memsub.memory_embeddings e
         where e.tenant_id = v_tenant
           and e.search_tsv @@ v_query
           and e.embedding_type = p_embedding_type
           and (e.ttl is null or e.ttl > (now() at time zone 'UTC'))  -- the not_expired policy
           -- The policies of memory_embeddings (org_isolation, user_visibility) for a regular member:
           and (e.org_id is null or e.org_id = v_org)
           and (e.scope = 'shared'
                or (e.scope = 'l-private' and e.user_id = v_user)
                or (e.scope = 'cursor' and (e.user_id = v_user or e.session_id = v_session)))
         order by 2
         limit p_limit;
end
$$;
comment on function memsub.keyword_candidates(text, text, integer) is
    'Keyword leg of hybrid search: the caller''s embeddings of one type whose chunk_text matches the query '
    '(websearch syntax, english), best first by ts_rank_cd, as ids and ranks. Applies the tenant, org and scope '
    'predicates itself so the GIN index is usable (tsvector @@ is not LEAKPROOF under row-level security).';
alter function memsub.keyword_candidates(text, text, integer) owner to memsub_retrieval_owner;

create or replace function memsub.hybrid_search(
    p_query_text        text,
    p_query             vector,
    p_k                 integer          default 10,
    p_embedding_type    text             default 'content',
    p_vector_weight     double precision default 1.0,
    p_text_weight       double precision default 1.0,
    p_rrf_k             integer          default 60,
    p_candidates        integer          default null,
    p_importance_weight double precision default 0.0,
    p_recency_weight    double precision default 0.0,
    p_half_life         interval         default interval '30 days',
    p_record_access     boolean          default false,
    p_agent_id          text             default null
) returns table (embedding_id uuid, packet_id uuid, chunk_index integer, chunk_text text, score double precision,
                 vector_rank integer, text_rank integer, distance double precision, text_score real,
                 importance_score double precision, access_id uuid)
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant     uuid    := memsub.require_tenant_id();
    v_candidates integer := coalesce(p_candidates, greatest(50, 4 * p_k));
begin
    if p_k is null or p_k < 1 then
        raise exception 'field "k" must be at least 1, not %', p_k
            using errcode = '22023', column = 'k';
    end if;
    perform memsub.check_limit(p_k, 'max_k', 'k');
    if v_candidates < p_k then
        raise exception 'field "candidates" must be at least k, not %', v_candidates
            using errcode = '22023', column = 'candidates';
    end if;
    perform memsub.check_limit(v_candidates, 'max_k', 'candidates');
    perform memsub.check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    if p_rrf_k is null or p_rrf_k < 0 then
        raise exception 'field "rrf_k" must be >= 0, not %', p_rrf_k using errcode = '22023', column = 'rrf_k';
    end if;
    if p_vector_weight is null or p_vector_weight < 0 or p_text_weight is null or p_text_weight < 0
       or coalesce(p_importance_weight, -1) < 0 or coalesce(p_recency_weight, -1) < 0 then
        raise exception 'weights must be >= 0' using errcode = '22023', column = 'weights';
    end if;
    if p_query is null and p_query_text is null then
        raise exception 'field "query" or "query_text" is required' using errcode = '23502', column = 'query';
    end if;

    -- One statement: both legs, the fusion, the read-back of the rows through row-level security, and the
    -- optional access records (the one-time filter on p_record_access skips them entirely when false).
    return query
    with vector_leg as (
        select s.embedding_id, s.distance,
               (row_number() over (order by s.distance, s.embedding_id))::integer as vector_rank
          from memsub.semantic_search(p_query, v_candidates, p_embedding_type) s
         where p_query is not null and p_vector_weight > 0
    ), text_leg as (
        select k.embedding_id, k.text_rank, k.text_score
          from memsub.keyword_candidates(p_query_text, p_embedding_type, v_candidates) k
         where p_query_text is not null and p_text_weight > 0
    ), fused as materialized (
        select coalesce(v.embedding_id, t.embedding_id) as embedding_id, v.vector_rank, t.text_rank, v.distance,
               t.text_score,
               coalesce(p_vector_weight / (p_rrf_k + v.vector_rank), 0.0)
               + coalesce(p_text_weight / (p_rrf_k + t.text_rank), 0.0) as rrf
          from vector_leg v
          full join text_leg t on t.embedding_id = v.embedding_id
    ), scored as (
        -- Each fused candidate is read back by its primary key, one probe per candidate (the lateral LIMIT 1).
        -- Written as a join, the planner sizes both legs at a set-returning function's default of 1000 rows and
        -- hash-joins them with every row of the tenant: 47 times the slower leg for a tenant of 25,000 rows
        -- (docs/benchmarks.md). fused is materialized so its embedding_id is a plain column: the policies are
        -- applied first, and the inlined COALESCE of the full join was not accepted below them as an index key.
        select r.embedding_id, r.packet_id, r.chunk_index, r.chunk_text,
               f.rrf * (1.0 + p_importance_weight * r.importance_score
                            + p_recency_weight * power(0.5, extract(epoch from now() - r.last_active)
                                                            / greatest(1.0, extract(epoch from p_half_life)))) as score,
               f.vector_rank, f.text_rank, coalesce(f.distance, r.distance) as distance, f.text_score,
               r.importance_score
          from fused f
          cross join lateral (
              select e.embedding_id, e.packet_id, e.chunk_index, e.chunk_text, p.importance_score,
                     coalesce(p.last_accessed, p."timestamp") as last_active,
                     case when f.distance is null then (e.vector <=> p_query)::double precision end as distance
                from memsub.memory_embeddings e
                join memsub.packet_store p on p.tenant_id = e.tenant_id and p.packet_id = e.packet_id
               where e.tenant_id = v_tenant and e.embedding_id = f.embedding_id
               limit 1
          ) r
    ), top as materialized (
        select s.*, (row_number() over (order by s.score desc, s.embedding_id))::integer as ord
          from scored s
         order by s.score desc, s.embedding_id
         limit p_k
    ), recorded as (
        select r.target_id, r.access_id
          from memsub.record_accesses('embedding',
                                      (select array_agg(t.embedding_id order by t.ord) from top t),
                                      (select array_agg(t.score order by t.ord) from top t),
                                      p_query_text, 'hybrid_search', p_agent_id) r
         where p_record_access
    )
    select t.embedding_id, t.packet_id, t.chunk_index, t.chunk_text, t.score::double precision, t.vector_rank,
           t.text_rank, t.distance, t.text_score, t.importance_score, r.access_id
      from top t
      left join recorded r on r.target_id = t.embedding_id
     order by t.ord;
end
$$;
comment on function memsub.hybrid_search(text, vector, integer, text, double precision, double precision, integer, integer, double precision, double precision, interval, boolean, text) is
    'Hybrid retrieval: the candidates (default max(50, 4k)) nearest by vector (memsub.semantic_search) and best '
    'by full text (memsub.keyword_candidates), fused by reciprocal rank fusion: score = vector_weight / (rrf_k + '
    'vector_rank) + text_weight / (rrf_k + text_rank), a missing leg adding 0 (defaults: weights 1, rrf_k 60). '
    'Optional boost: score * (1 + importance_weight * importance + recency_weight * 0.5 ^ (idle time / half_life)), '
    'weights 0 by default. Either query may be NULL (one leg only). Rows are read back under row-level security.';

grant execute on function memsub.keyword_candidates(text, text, integer) to memsub_app, memsub_analyst;
grant execute on function
    memsub.hybrid_search(text, vector, integer, text, double precision, double precision, integer, integer, double precision, double precision, interval, boolean, text)
    to memsub_app, memsub_analyst;
-- The keyword leg's owner reads what its predicates select, and nothing else.
grant usage on schema memsub to memsub_retrieval_owner;
grant select on memsub.memory_embeddings to memsub_retrieval_owner;
grant execute on function
    memsub.require_tenant_id(), memsub.current_tenant_id(), memsub.current_org_id(), memsub.current_user_id(),
    memsub.current_session_id(), memsub.check_one_of(text, text[], text)
    to memsub_retrieval_owner;
