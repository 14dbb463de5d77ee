-- Area: search. Seed: seed 003 "Full-Text Index (Tantivy)" and "Vector Index (HNSW)"; seed 001 section 4.2.
--
-- Retrieval pipeline, hybrid leg: PostgreSQL full text fused with vector similarity by reciprocal rank fusion.
--
-- The keyword leg under row-level security: tsvector @@ tsquery is not LEAKPROOF, so for a role bound by the
-- policies the planner must evaluate the policies first and may not use @@ as an index condition; the GIN index
-- on search_tsv goes unused and every visible row of the tenant is read and tested (measured in
-- docs/benchmarks.md). memsub._keyword_candidates is therefore SECURITY DEFINER, owned by
-- memsub_retrieval_owner (BYPASSRLS, NOLOGIN), and applies the policies' predicates itself: tenant, org and
-- scope, which an admin context (tenant_admin, platform_admin) passes as it passes the org_isolation and
-- user_visibility policies. It returns ids and ranks only; memsub.hybrid_search reads the rows back through
-- row-level security, so a row reaches the caller only when the policies allow it too.

create or replace function memsub._keyword_candidates(
    p_query_text     text,
    p_embedding_type text    default 'content',
    p_limit          integer default 50
) returns table (embedding_id uuid, text_rank integer, text_score real)
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_org     uuid := memsub.current_org_id();
    v_user    uuid := memsub.current_user_id();
    v_session text := memsub.current_session_id();
    v_admin   boolean := memsub._caller_is_admin();
    v_query   tsquery;
begin
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(),
                                'embedding_type');
    perform memsub._check_count(p_limit, 'max_k', 'limit');
    -- The text is bounded before a tsquery is built from it, and the tsquery before it is matched.
    perform memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    v_query := memsub._words_query('english', p_query_text);
    perform memsub._check_limit(numnode(v_query), 'max_query_nodes', 'query_text');
    if numnode(v_query) = 0 then
        return;  -- no searchable words (empty text or only stop words)
    end if;
    return query
        select e.embedding_id,
               (row_number() over (order by ts_rank_cd(e.search_tsv, v_query) desc, e.embedding_id))::integer,
               ts_rank_cd(e.search_tsv, v_query)
          from memsub.memory_embeddings e
         where e.tenant_id = v_tenant
           and e.chunk_text is not null  -- the GIN index holds only the rows with text (no other can match)
           and e.search_tsv @@ v_query
           and e.embedding_type = p_embedding_type
           and (e.ttl is null or e.ttl > (now() at time zone 'UTC'))  -- the not_expired policy
           -- The policies of memory_embeddings (org_isolation, user_visibility), which admins pass:
           and (v_admin or e.org_id is null or e.org_id = v_org)
           and (v_admin or e.scope = 'shared'
                or (e.scope = 'l-private' and e.user_id = v_user)
                or (e.scope = 'cursor' and (e.user_id = v_user or e.session_id = v_session)))
         order by 2
         limit p_limit;
end
$$;
comment on function memsub._keyword_candidates(text, text, integer) is
    'Keyword leg of hybrid search: the caller''s embeddings of one type whose chunk_text matches the query '
    '(websearch syntax, english), best first by ts_rank_cd, as ids and ranks. Applies the tenant, org and scope '
    'predicates itself (an admin context passes org and scope, as under the policies) so the GIN index is usable '
    '(tsvector @@ is not LEAKPROOF under row-level security).';
alter function memsub._keyword_candidates(text, text, integer) owner to memsub_retrieval_owner;
-- ... which checks its limit as the shared count check does (sql/015_limits.sql).
grant execute on function memsub._check_count(bigint, text, text) to memsub_retrieval_owner;

create or replace function memsub._chunk_keyword_candidates(
    p_query_text text,
    p_limit      integer default 50
) returns table (chunk_id uuid, text_rank integer, text_score real)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
-- One plan for every call: planned for each call's values it took 0.6 ms to plan a 0.01 ms read.
set plan_cache_mode = force_generic_plan
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_query  tsquery;
begin
    if p_limit is null or p_limit < 1 or p_limit > 10000 then
        raise exception 'field "limit" must be between 1 and 10000, not %', p_limit
            using errcode = '22023', column = 'limit';
    end if;
    v_query := memsub._words_query('english', p_query_text);
    if numnode(v_query) = 0 then
        return;
    end if;
    return query
        select c.id, (row_number() over (order by ts_rank_cd(c.content_tsv, v_query) desc, c.id))::integer,
               ts_rank_cd(c.content_tsv, v_query)
          from memsub.document_chunks c
          join memsub.document_index d on d.tenant_id = c.tenant_id and d.id = c.document_id and d.is_latest
         where c.tenant_id = v_tenant
           and c.content_tsv @@ v_query
           and not exists (select from memsub.memory_embeddings e
                            where e.tenant_id = d.tenant_id and e.packet_id = d.packet_id
                              and e.embedding_type = 'content' and e.chunk_index = c.chunk_index)
         order by 2
         limit p_limit;
end
$$;
comment on function memsub._chunk_keyword_candidates(text, integer) is
    'Keyword leg over document chunks that carry no vector (documents ingested without an embedder): the caller''s '
    'chunks of latest document versions matching the query (websearch syntax, english), best first by ts_rank_cd. '
    'Security invoker: row-level security of document_chunks applies (the GIN index serves owners and analysts '
    'only; chunks are few next to embeddings).';

-- 2.25: the result gained the packet column (p_with_packets); a result type changes only by drop and create.
drop function if exists memsub.hybrid_search(text, vector, integer, text, double precision, double precision, integer, integer, double precision, double precision, interval, boolean, text);
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
    p_agent_id          text             default null,
    p_with_packets      boolean          default false
) returns table (embedding_id uuid, packet_id uuid, chunk_index integer, chunk_text text, score double precision,
                 vector_rank integer, text_rank integer, distance double precision, text_score real,
                 importance_score double precision, access_id uuid, packet jsonb)
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
-- One plan for every call: the plan cache found a plan for each call's values always cheaper and planned the
-- statement below again every time, 1.6-1.8 ms a call against 2-9 ms of running it. The generic plan keeps
-- the same shape: its legs and the access records are gated by one-time filters on the arguments.
set plan_cache_mode = force_generic_plan
as $$
declare
    v_tenant     uuid    := memsub._require_tenant_id();
    v_candidates integer;
begin
    perform memsub._check_fused_search(p_k, p_rrf_k, p_query, p_query_text);
    -- By default 4k rows from each leg (at least 50), at most the max_k limit, so that every k up to the limit is
    -- served; a number the caller passes is held to the limit as it is. Computed once k is known to be in range.
    v_candidates := coalesce(p_candidates, least(greatest(50, 4 * p_k::bigint), memsub.limit_value('max_k')));
    if v_candidates < p_k then
        raise exception 'field "candidates" must be at least k, not %', v_candidates
            using errcode = '22023', column = 'candidates';
    end if;
    perform memsub._check_limit(v_candidates, 'max_k', 'candidates');
    perform memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    -- Each weight a finite number from 0 to 1e100 (NaN and infinities would rank every row alike, larger ones
    -- overflow the score).
    perform memsub._check_weight(p_vector_weight, 'vector_weight'), memsub._check_weight(p_text_weight, 'text_weight'),
            memsub._check_weight(p_importance_weight, 'importance_weight'),
            memsub._check_weight(p_recency_weight, 'recency_weight');
    perform memsub._check_half_life(p_half_life);

    -- One statement: both legs, the fusion, the read-back of the rows through row-level security, and the
    -- optional access records (the one-time filter on p_record_access skips them entirely when false).
    return query
    with vector_leg as (
        select s.embedding_id, s.distance,
               (row_number() over (order by s.distance, s.embedding_id))::integer as vector_rank
          from memsub.semantic_search(p_query, least(v_candidates, 1000), p_embedding_type) s  -- what a walk returns
         where p_query is not null and p_vector_weight > 0
    ), text_hits as (
        select k.embedding_id as hit_id, k.text_score, false as is_chunk
          from memsub._keyword_candidates(p_query_text, p_embedding_type, v_candidates) k
         where p_query_text is not null and p_text_weight > 0
        union all
        -- Document chunks stored without a vector are found by their text (content space only).
        select c.chunk_id, c.text_score, true
          from memsub._chunk_keyword_candidates(p_query_text, v_candidates) c
         where p_query_text is not null and p_text_weight > 0 and p_embedding_type = 'content'
    ), text_leg as (
        select h.hit_id as embedding_id, h.is_chunk, h.text_score,
               (row_number() over (order by h.text_score desc, h.hit_id))::integer as text_rank
          from text_hits h
         order by h.text_score desc, h.hit_id
         limit v_candidates
    ), fused as materialized (
        select coalesce(v.embedding_id, t.embedding_id) as embedding_id, coalesce(t.is_chunk, false) as is_chunk,
               v.vector_rank, t.text_rank, v.distance, t.text_score,
               -- In double precision: rrf_k may be any integer >= 0, and rrf_k + rank overflowed integer.
               coalesce(p_vector_weight / (p_rrf_k::double precision + v.vector_rank), 0.0)
               + coalesce(p_text_weight / (p_rrf_k::double precision + t.text_rank), 0.0) as rrf
          from vector_leg v
          full join text_leg t on t.embedding_id = v.embedding_id
    ), scored as (
        -- Each fused candidate is read back by its primary key, one probe per candidate (the lateral LIMIT 1).
        -- Written as a join, the planner sizes both legs at a set-returning function's default of 1000 rows and
        -- hash-joins them with every row of the tenant: 47 times the slower leg for a tenant of 25,000 rows
        -- (docs/benchmarks.md). fused is materialized so its embedding_id is a plain column: the policies are
        -- applied first, and the inlined COALESCE of the full join was not accepted below them as an index key.
        select r.embedding_id, f.embedding_id as hit_id, r.packet_id, r.chunk_index, r.chunk_text,
               -- The recency boost as memsub.combined_score computes it: 1 for a packet last active now or later,
               -- halved per half-life, 0 from 1000 half-lives on (power(0.5, x) raises an underflow error past
               -- about 1074, and a packet dated far ahead overflowed it).
               f.rrf * (1.0 + p_importance_weight * coalesce(r.importance_score, 0)
                            + p_recency_weight * coalesce(power(0.5, nullif(least(1000.0, greatest(0.0,
                                  date_part('epoch', now() - r.last_active))
                                  / greatest(1.0, date_part('epoch', p_half_life))), 1000.0)), 0.0)) as score,
               f.vector_rank, f.text_rank, coalesce(f.distance, r.distance) as distance, f.text_score,
               r.importance_score
          from fused f
          cross join lateral (
              select e.embedding_id, e.packet_id, e.chunk_index, e.chunk_text, p.importance_score,
                     coalesce(p.last_accessed, p."timestamp") as last_active,
                     case when f.distance is null then (e.vector <=> p_query)::double precision end as distance
                from memsub.memory_embeddings e
                join memsub.packet_store p on p.tenant_id = e.tenant_id and p.packet_id = e.packet_id
               where not f.is_chunk and e.tenant_id = v_tenant and e.embedding_id = f.embedding_id
              union all
              -- A chunk without a vector: embedding_id NULL, the packet of its document version.
              select null::uuid, d.packet_id, c.chunk_index, c.content, p.importance_score,
                     coalesce(p.last_accessed, p."timestamp", c.created_at), null::double precision
                from memsub.document_chunks c
                join memsub.document_index d on d.tenant_id = c.tenant_id and d.id = c.document_id
                left join memsub.packet_store p on p.tenant_id = d.tenant_id and p.packet_id = d.packet_id
               where f.is_chunk and c.tenant_id = v_tenant and c.id = f.embedding_id
              limit 1
          ) r
    ), top as materialized (
        select s.*, (row_number() over (order by s.score desc, s.hit_id))::integer as ord
          from scored s
         order by s.score desc, s.hit_id
         limit p_k
    ), recorded as (
        select r.target_id, r.access_id
          from memsub._record_accesses_on_request('embedding',
                   (select array_agg(t.embedding_id order by t.ord) filter (where t.embedding_id is not null) from top t),
                   (select array_agg(t.score order by t.ord) filter (where t.embedding_id is not null) from top t),
                   p_query_text, 'hybrid_search', p_agent_id) r
         where p_record_access
    ), packets as (
        -- The hits' packets in one read, as memsub.get_packets returns them, only when asked (a one-time filter).
        select g.packet_id, to_jsonb(g) as packet
          from memsub.get_packets(array(select t.packet_id from top t)) g
         where p_with_packets
    )
    select t.embedding_id, t.packet_id, t.chunk_index, t.chunk_text, t.score::double precision, t.vector_rank,
           t.text_rank, t.distance, t.text_score, t.importance_score, r.access_id, g.packet
      from top t
      left join recorded r on r.target_id = t.embedding_id
      left join packets g on g.packet_id = t.packet_id
     order by t.ord;
end
$$;
comment on function memsub.hybrid_search(text, vector, integer, text, double precision, double precision, integer, integer, double precision, double precision, interval, boolean, text, boolean) is
    'Hybrid retrieval: the candidates (default max(50, 4k), at most the max_k limit) nearest by vector (memsub.semantic_search) and best '
    'by full text (memsub._keyword_candidates), fused by reciprocal rank fusion: score = vector_weight / (rrf_k + '
    'vector_rank) + text_weight / (rrf_k + text_rank), a missing leg adding 0 (defaults: weights 1, rrf_k 60). '
    'Optional boost: score * (1 + importance_weight * importance + recency_weight * 0.5 ^ (idle time / half_life)), '
    'weights 0 by default. Either query may be NULL (one leg only). Rows are read back under row-level security. '
    'In the content space the keyword leg also ranks the chunks of latest document versions that carry no vector '
    '(memsub._chunk_keyword_candidates); such a row has embedding_id NULL and its document''s packet_id. '
    'with_packets fills the packet column with each hit''s packet as memsub.get_packets returns it; NULL otherwise.';

grant execute on function memsub._keyword_candidates(text, text, integer) to memsub_app, memsub_analyst;
grant execute on function memsub._chunk_keyword_candidates(text, integer) to memsub_app, memsub_analyst;
grant execute on function
    memsub.hybrid_search(text, vector, integer, text, double precision, double precision, integer, integer, double precision, double precision, interval, boolean, text, boolean)
    to memsub_app, memsub_analyst;
-- The keyword leg's owner reads what its predicates select, and nothing else.
grant usage on schema memsub to memsub_retrieval_owner;
grant select on memsub.memory_embeddings to memsub_retrieval_owner;
grant execute on function
    memsub._require_tenant_id(), memsub.current_tenant_id(), memsub.current_org_id(), memsub.current_user_id(),
    memsub.current_session_id(), memsub._check_one_of(text, text[], text), memsub._caller_is_admin(),
    memsub.is_tenant_admin(), memsub.is_platform_admin(), memsub.current_context_roles(), memsub.acting_role()
    to memsub_retrieval_owner;
