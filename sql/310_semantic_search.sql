-- Area: search. Seed: seed 000 "SEMANTIC LAYER" and "DATA FLOW DIAGRAM"; seed 003 "Vector Index (HNSW)".
--
-- Retrieval pipeline, semantic leg: nearest packets by embedding, correct for tenants of every size.
--
-- HNSW filters after the graph walk: the caller's row-level security predicates (and the packet filters) drop
-- rows the walk found, so a plain index scan returns fewer than k rows, and finds the wrong ones, for a tenant
-- that holds a small share of the index. memsub.semantic_search therefore chooses per call (p_mode 'auto',
-- memsub._search_strategy):
--   1. the tenant's row count n and share s of the type's rows in its partition of memory_embeddings (the
--      graph its walk reads; sql/300_semantic_layer.sql), from memsub.search_stats (kept by
--      memsub.tune_search, the maintenance job's tune_search task; a tenant not measured yet is counted, at
--      most 2000 rows, from the tenant and type index (memsub._context_tenant_rows), and walked when it holds
--      more);
--   2. the ef_search the walk needs for about ten candidates per wanted row inside the tenant's share:
--      ef = clamp(10 * pool / s, max(40, pool), 1000) (memsub._walk_ef_search; pool = k, or 4k when re-ranking
--      by combined score),
--      or the larger ef_search at which tune_search measured the walk reaching the recall goal (self-tuning:
--      tune_search starts at the derived ef and raises it x 2.5 per step, at most to 1000, until the one-sided
--      95 % lower confidence bound of the mean recall@10 on its sample reaches the 0.95 goal
--      (memsub._recall_lower_bound: the sample's error is judged from its own spread); a sample query is a
--      stored row of the tenant moved, in a random direction, as far as its nearest other row
--      (memsub._sample_query; each vector once among the rows drawn, so copies do not fill the sample), and is walked by the search's own statement (memsub._nearest_candidates); a row
--      the walk finds counts when it is as near as the exact k-th nearest, so that of rows at one distance
--      (copies of one vector) any are right (memsub._recall_with_ties);
--   3. the cheaper of the exact scan (cost ~ n rows) and the walk at that ef (~ 2.5 * ef / s candidates read
--      plus 10 * ef for the graph), but always the exact scan when at no ef_search tune_search could afford
--      the bound reached 0.95 (data without neighbourhood structure, where no graph index can deliver, never
--      does);
--   4. the exact scan after all when the walk found fewer than k rows (very selective filters), so a tenant
--      with at least k matching rows always gets k rows.
-- p_mode 'exact' always scans exactly; 'approximate' always walks (falling back as in 4). An ef_search the
-- caller passes is used as it is (the measured recall still counts where it applies).
-- The exact scan sorts only ids and distances, then joins the k winners to their text and packet.
-- The statement is put together per call from fixed fragments (which filters, which method), with the embedding
-- type and the pool written in as constants: the type selects that type's partial HNSW index, and the planner
-- sees how many rows the walk must return. Planning it costs about 1 ms, as much as the whole exact scan of a
-- small tenant, so memsub._nearest_candidates keeps the plan for the session where one plan serves every
-- tenant: the walk (planned with sorts disabled, so that a plan made for the average tenant, whose few hundred
-- rows would be cheaper to sort, still walks the graph) and the exact scan of a tenant of at most 2,000 rows,
-- which any tenant of that size reads the same way (by the tenant and type index). The first run of a
-- statement in a session is planned for its own values; from the second on, a prepared statement named after
-- the statement's text runs one generic plan, which opens only the tenant's partition when it starts. The exact
-- scan of a bigger tenant is planned for its own values every time, so the planner can read the whole
-- partition where the tenant holds most of it. A session keeps at most max_kept_search_plans such plans
-- (sql/015_limits.sql).

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
    -- The weights follow hybrid_search's rule (memsub._check_weight: finite, from 0 to 1e100; a negative one
    -- turned a good match into a bad one), and the distance and importance are finite and at most 1e100 in size:
    -- inputs near 1e308 overflowed the score (22003 naming nothing). Each product then stays below 1e201.
    if (p_similarity_weight >= 0 and p_similarity_weight <= 1e100) is not true
       or (p_importance_weight >= 0 and p_importance_weight <= 1e100) is not true
       or (p_recency_weight >= 0 and p_recency_weight <= 1e100) is not true
       or abs(p_distance) > 1e100 or abs(p_importance) > 1e100
       or not isfinite(p_last_active) or p_half_life is null or not isfinite(p_half_life)
       or p_half_life < interval '1 second' then
        perform memsub._check_finite(p_distance, 'distance'), memsub._check_finite(p_importance, 'importance'),
                memsub._check_finite_time(p_last_active, 'last_active'),
                memsub._check_weight(p_similarity_weight, 'similarity_weight'),
                memsub._check_weight(p_importance_weight, 'importance_weight'),
                memsub._check_weight(p_recency_weight, 'recency_weight'),
                memsub._check_half_life(p_half_life);
        if abs(p_distance) > 1e100 then
            raise exception 'field "distance" must be a finite number from -1e100 to 1e100, not %', p_distance
                using errcode = '22023', column = 'distance';
        end if;
        if abs(p_importance) > 1e100 then
            raise exception 'field "importance" must be a finite number from -1e100 to 1e100, not %', p_importance
                using errcode = '22023', column = 'importance';
        end if;
    end if;
    -- In double precision throughout (date_part): extract() returns numeric, which made the power and the division
    -- numeric, about 10 µs a call, and searches compute this for every hit (tests/search/test_score_arithmetic.py).
    -- From 1000 half-lives on the recency is 0: power(0.5, x) raises an underflow error past about 1074 (the
    -- nullif makes the power NULL there, and the coalesce 0).
    return p_similarity_weight * greatest(0.0, 1.0 - p_distance / 2.0)
         + p_importance_weight * coalesce(p_importance, 0.5)
         + p_recency_weight * coalesce(power(0.5, nullif(least(1000.0, greatest(0.0,
               date_part('epoch', now() - coalesce(p_last_active, now())))
               / greatest(1.0, date_part('epoch', p_half_life))), 1000.0)), 0.0);
end
$$;
comment on function memsub.combined_score(double precision, double precision, timestamptz, double precision, double precision, double precision, interval) is
    'Ranking score in [0, 1] with the default weights: 0.7 similarity (1 - cosine distance / 2) + 0.2 importance '
    '+ 0.1 recency (0.5 ^ (time since last access or write / half_life), half-life 30 days; 0 from 1000 '
    'half-lives on). A half-life that is NULL, infinite or under a second is refused (22023 naming half_life); so '
    'is a weight that is NULL or not from 0 to 1e100, as hybrid_search''s, and a distance or importance that is '
    'not finite or beyond 1e100 in size (22023 naming it).';

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
-- One plan for every call: planned for each call's values, the log insert and the counter update took about
-- 0.5 ms each to plan, longer than they ran.
set plan_cache_mode = force_generic_plan
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_user   uuid := memsub.current_user_id();
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('target_type', p_target_type, 'access_context', p_access_context,
                                      'agent_id', p_agent_id),
            memsub._check_limit(cardinality(p_target_ids), 'max_k', 'target_ids'),
            memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    perform memsub._check_one_of(p_target_type, memsub.access_target_types(), 'target_type');
    if cardinality(p_scores) is distinct from cardinality(p_target_ids) then
        raise exception 'field "scores" must have one score per target id' using errcode = '22023', column = 'scores';
    end if;
    perform memsub._check_finite(s.score, format('scores[%s]', s.n - 1))
       from unnest(p_scores) with ordinality as s(score, n);
    -- Counters live off the vector rows: an embedding access counts on its packet (see 220_access_log.sql).
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
        -- Each visible target's scope (NULL: not visible). A user's records are read by that user alone, whatever
        -- the target; a context without a user's are shared when the target is (sql/220_access_log.sql).
        insert into memsub.memory_access_log as l (
            target_type, target_id, agent_id, access_context, query_text, relevance_score, scope,
            tenant_id, org_id, user_id, session_id)
        select p_target_type, t.id, (select memsub._optional_text(p_agent_id)), p_access_context,
               p_query_text, t.score,
               case when v_user is null and v.scope = 'shared' then 'shared' else 'l-private' end,
               v_tenant, (select memsub.current_org_id()), v_user,
               (select memsub.current_session_id())
          from unnest(p_target_ids, p_scores) as t(id, score)
         cross join lateral (
               select case p_target_type
                   when 'packet' then (select s.scope from memsub.packet_store s
                                        where s.tenant_id = v_tenant and s.packet_id = t.id)
                   when 'embedding' then (select e.scope from memsub.memory_embeddings e
                                           where e.tenant_id = v_tenant and e.embedding_id = t.id)
                   when 'fact' then (select 'shared' from memsub.knowledge_facts f
                                      where f.tenant_id = v_tenant and f.fact_id = t.id)
                   else (select 'shared' from memsub.reflection_store r
                          where r.tenant_id = v_tenant and r.reflection_id = t.id)
               end as scope) v
         where v.scope is not null
        returning l.target_id, l.access_id;
end
$$;
comment on function memsub._record_accesses(text, uuid[], double precision[], text, text, text) is
    'Logs one access per visible target id (with its relevance score) in one statement and counts them on the '
    'targets; ids the caller cannot see are skipped. '
    'used by the retrieval functions when asked to record. Returns the access id of each target.';

-- The searches that record accesses on request (semantic_search, hybrid_search, retrieve_reflections) are granted
-- to memsub_analyst as well, which reads but does not write. They call memsub._record_accesses through this
-- function: a statement naming memsub._record_accesses itself fails for an analyst when it starts, whether or
-- not it would record (PostgreSQL checks the EXECUTE privilege of every function in a plan as it sets the plan
-- up), and an analyst that asks to record is refused by the argument's name rather than by the internal
-- function's.
create or replace function memsub._record_accesses_on_request(
    p_target_type    text,
    p_target_ids     uuid[],
    p_scores         double precision[],
    p_query_text     text default null,
    p_access_context text default null,
    p_agent_id       text default null
) returns table (target_id uuid, access_id uuid)
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if not pg_catalog.has_function_privilege(
            'memsub._record_accesses(text, uuid[], double precision[], text, text, text)', 'execute') then
        raise exception 'field "record_access": this role reads and may not record accesses (memsub_app records them)'
            using errcode = '42501', column = 'record_access';
    end if;
    -- A read-only transaction (a hot standby's, or one begun READ ONLY) cannot record: the search answers
    -- without access records, each access_id NULL, rather than failing (docs/scale-out.md).
    if pg_catalog.current_setting('transaction_read_only')::boolean then
        return;
    end if;
    return query
        select r.target_id, r.access_id
          from memsub._record_accesses(p_target_type, p_target_ids, p_scores, p_query_text, p_access_context,
                                       p_agent_id) r;
end
$$;
comment on function memsub._record_accesses_on_request(text, uuid[], double precision[], text, text, text) is
    'Internal to the searches that record accesses when asked (each calls it only then): memsub._record_accesses, '
    'or 42501 naming record_access for a role that may not record (memsub_analyst); in a read-only transaction '
    '(a hot standby) nothing, so the search''s access ids are NULL.';

drop function if exists memsub.semantic_search(vector, integer, text, uuid, text[], text, timestamptz, timestamptz, double precision, text, boolean, text, text, integer, integer, integer);
-- 2.25: the result gained the packet column (p_with_packets); a result type changes only by drop and create.
drop function if exists memsub.semantic_search(vector, integer, text, uuid, text[], text, timestamptz, timestamptz, double precision, text, boolean, text, text, text, integer, integer);
call memsub._install_row_security('memsub.search_stats', array[]::text[]);
comment on column memsub.search_stats.ef_search is
    'hnsw.ef_search the recall was measured at: the smallest one tried, from the derived one up, at which the '
    'recall''s lower bound (recall_bound) reached 0.95, or the largest one tried when none did (NULL: not '
    'measured).';
comment on column memsub.search_stats.type_rows is
    'Embeddings of this type in the tenant''s partition of memory_embeddings (the HNSW graph its walk reads) when '
    'measured.';
comment on column memsub.search_stats.recall is
    'Mean recall@10 of the HNSW walk at ef_search against the exact scan over the sample queries, a row the walk '
    'found counting when it is as near as the exact scan''s 10th nearest (ties count: memsub._recall_with_ties) '
    '(NULL: not measured: the exact scan is cheaper for this tenant). semantic_search decides by recall_bound.';

create or replace function memsub._recall_lower_bound(p_recalls double precision[]) returns double precision
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    -- mean - 1.645 * s / sqrt(n) (the normal approximation of the mean of n per-query recalls, s their sample
    -- standard deviation), within [0, 1]. One query says nothing of the spread: it is taken at the widest a
    -- share can have (0.5). NULL for no queries.
    select case when count(r) = 0 then null
                else greatest(0, least(1, avg(r) - 1.645 * coalesce(stddev_samp(r), 0.5) / sqrt(count(r)))) end
      from unnest(p_recalls) r
$$;
comment on function memsub._recall_lower_bound(double precision[]) is
    'Internal to memsub.tune_search: the one-sided 95 % lower confidence bound of the mean of per-query recalls '
    '(mean - 1.645 * sample standard deviation / sqrt(n), within [0, 1]; one query counts with the widest '
    'spread, 0.5; NULL for none). NULL values are left out.';

create or replace function memsub._recall_with_ties(p_found double precision[], p_nearest double precision[])
returns double precision
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    -- The share of the true nearest rows a search found, where any row as near as the k-th nearest is one of
    -- them: rows at the same distance are equally correct answers, whichever of them the exact scan happened
    -- to list (by id). p_found holds the distances of the rows the search returned, p_nearest those of the
    -- exact k nearest, both computed as the search reports them (the cosine distance of the stored vector,
    -- never the graph's half-precision key): copies of one vector get the same distance to the bit. pgvector
    -- sums in single precision, so rows at one true distance from the query but stored with other coordinates
    -- (a row and its mirror image about the query) came out up to 1.1e-7 apart (300 pairs each at 16, 384 and
    -- 1536 dimensions): a found row within 1e-6 (about eight single-precision steps at 1) of the k-th distance
    -- counts. At most as many rows count as p_nearest holds; NULL when it holds none. NULL elements are left
    -- out.
    select case when t.rows = 0 then null
                else least(t.rows, (select count(f) from unnest(p_found) f where f <= t.kth + 1e-6))::double precision
                     / t.rows end
      from (select count(n) as rows, max(n) as kth from unnest(p_nearest) n) t
$$;
comment on function memsub._recall_with_ties(double precision[], double precision[]) is
    'Internal to memsub.tune_search: the recall of one search, from the distances of the rows it found '
    '(p_found) and of the exact nearest rows (p_nearest): the found rows at most 1e-6 (single-precision '
    'rounding) farther than the farthest of p_nearest, at most as many as p_nearest holds, over that many. A '
    'row tied with the k-th nearest is as correct as the one the exact scan listed. NULL for no nearest rows; '
    'NULL elements are left out.';

-- The size of a tenant tune_search has not measured yet. Counted through row-level security, each of up to 2,000
-- rows was fetched from the table and checked by the policies before every search of the tenant, until the
-- maintenance job first measured it (0.3-0.4 ms of a 2.5-3.3 ms search of a 3,000-row tenant,
-- docs/benchmarks.md). This function, owned by
-- memsub_retrieval_owner (BYPASSRLS), counts the context tenant's entries of the (tenant_id, embedding_type)
-- index instead, which a vacuumed table answers without reading the rows. It counts every row of the tenant, as
-- tune_search does for memsub.search_stats.row_count (readable by the same roles), whatever the caller may read.
create or replace function memsub._context_tenant_rows(p_embedding_type text, p_limit integer) returns bigint
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
-- One plan for every call, which opens the tenant's partition of memory_embeddings when it starts.
set plan_cache_mode = force_generic_plan
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_rows   bigint;
begin
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(), 'embedding_type');
    if p_limit is null or p_limit < 1 then
        raise exception 'field "limit" must be >= 1, not %', coalesce(p_limit::text, 'NULL')
            using errcode = '22023', column = 'limit';
    end if;
    select count(*) into v_rows
      from (select from memsub.memory_embeddings e
             where e.tenant_id = v_tenant and e.embedding_type = p_embedding_type limit p_limit) s;
    return v_rows;
end
$$;
alter function memsub._context_tenant_rows(text, integer) owner to memsub_retrieval_owner;
comment on function memsub._context_tenant_rows(text, integer) is
    'Internal to memsub._search_strategy: how many embeddings of the type the context tenant holds, counted up '
    'to p_limit from the tenant and type index (owned by memsub_retrieval_owner, BYPASSRLS: every row of the '
    'tenant counts, as in memsub.search_stats.row_count). 42501 without a tenant context; 22023 naming '
    'embedding_type or limit for an unknown type or a limit below 1.';

create or replace function memsub._search_strategy(
    p_tenant_id      uuid,
    p_embedding_type text,
    p_pool           integer,
    p_mode           text    default 'auto',
    p_ef_search      integer default null
) returns table (method text, ef_search integer, tenant_rows bigint, type_rows bigint, share double precision,
                 recall double precision)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, public, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    v_stats  memsub.search_stats;
    v_total  double precision;
    v_rows   bigint;
    v_share  double precision;
    v_ef     integer;
    v_recall double precision;
    v_bound  double precision;
    v_probed boolean := false;
begin
    -- Rows of the type in the graph the walk would read: the HNSW index of the tenant's partition of
    -- memory_embeddings (every partition's, for a search of every tenant), by the index's own estimate (kept by
    -- vacuum and analyze). The tenant's partition is found once (a sub-select): in the condition of the scan it
    -- was found again for each of the 16 numbers.
    select sum(greatest(c.reltuples, 0)) into v_total
      from pg_catalog.pg_class c
     where c.oid in (select pg_catalog.to_regclass(format('memsub.idx_embeddings_vector_%s_p%s', p_embedding_type,
                                                           pg_catalog.lpad(n::text, 2, '0')))
                       from generate_series(0, 15) n
                      where p_tenant_id is null or n = (select memsub._embedding_partition(p_tenant_id)));
    if p_tenant_id is null then
        v_rows := coalesce(v_total, 0)::bigint;
    else
        select * into v_stats from memsub.search_stats st
         where st.tenant_id = p_tenant_id and st.embedding_type = p_embedding_type;
        if found then
            v_rows := v_stats.row_count;
            v_total := greatest(coalesce(v_total, 0), v_stats.type_rows);
        else
            -- Not measured yet: count at most 2000 of the tenant's rows, from the index when it is the context
            -- tenant (memsub._context_tenant_rows). Another tenant is counted as far as the caller may read it:
            -- a static statement with one plan for every call (plan_cache_mode above), which opens the tenant's
            -- partition only when it starts (planned for each call's values, an EXECUTE took 0.3 ms to plan a
            -- count of 0.01 ms).
            if p_tenant_id = memsub.current_tenant_id() then
                v_rows := memsub._context_tenant_rows(p_embedding_type, 2000);
            else
                select count(*) into v_rows
                  from (select from memsub.memory_embeddings e
                         where e.tenant_id = p_tenant_id and e.embedding_type = p_embedding_type limit 2000) s;
            end if;
            v_probed := v_rows >= 2000;
        end if;
    end if;
    v_total := greatest(coalesce(v_total, 0), v_rows, 1);
    v_share := greatest(v_rows, 1) / v_total;
    v_ef := coalesce(p_ef_search, memsub._walk_ef_search(p_pool, v_share));
    -- The ef_search at which tune_search measured the recall goal (the lower bound of the sampled recall at
    -- 0.95 or more), when it is larger than the derived one (an ef the caller passes is kept as it is).
    if p_ef_search is null and v_stats.recall_bound >= 0.95 and v_stats.ef_search > v_ef then
        v_ef := v_stats.ef_search;
    end if;
    v_ef := greatest(v_ef, least(p_pool, 1000));
    -- Recall grows with ef_search: a recall that reached the goal holds at any larger ef, one that missed it
    -- at any smaller ef. Otherwise the recall at this ef is not known.
    if v_stats.recall_bound >= 0.95 and v_stats.ef_search <= v_ef
       or v_stats.recall_bound < 0.95 and v_stats.ef_search >= v_ef then
        v_recall := v_stats.recall;
        v_bound := v_stats.recall_bound;
    end if;
    method := case
        when p_mode = 'exact' then 'exact'
        when p_mode = 'approximate' then 'approximate'
        when v_probed then 'approximate'
        when v_bound is not null and v_bound < 0.95 then 'exact'
        when v_rows <= 2.5 * v_ef / v_share + 10 * v_ef then 'exact'
        else 'approximate' end;
    ef_search := v_ef;
    tenant_rows := v_rows;
    type_rows := v_total::bigint;
    share := v_share;
    recall := v_recall;
    return next;
end
$$;
comment on function memsub._search_strategy(uuid, text, integer, text, integer) is
    'How memsub.semantic_search searches a tenant''s embeddings of one type for pool rows: method exact or '
    'approximate, the hnsw.ef_search of the walk (derived from the share and pool, or the larger one at which '
    'memsub.tune_search measured the recall goal), and the figures behind the choice (rows, share of the index, '
    'the measured recall where it holds at this ef_search). See the head of sql/310_semantic_search.sql.';

-- Its earlier signatures, which took the statement's text.
-- The k of a similarity search: 1 or more, within max_k, and at most 1000, the most rows pgvector's walk returns (its
-- largest ef_search) whatever an installation sets max_k to.
create or replace function memsub._check_similarity_k(p_k integer) returns integer
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    perform memsub._check_count(p_k, 'max_k', 'k');
    if p_k > 1000 then
        raise exception 'field "k" is over the rows one similarity search returns: % > 1000', p_k
            using errcode = '54000', column = 'k', detail = format('limit=max_k value=1000 actual=%s', p_k),
                  hint = 'pgvector walks its graph with an ef_search of at most 1000, whatever max_k says.';
    end if;
    return p_k;
end
$$;
comment on function memsub._check_similarity_k(integer) is
    'Internal: refuses the k of a similarity search as memsub._check_count does against max_k, and above 1000, the '
    'most rows pgvector''s walk returns (54000 naming k); returns k.';
grant execute on function memsub._check_similarity_k(integer) to memsub_app, memsub_analyst;

drop function if exists memsub._nearest_candidates(text, boolean, vector, uuid, text[], text, timestamptz, timestamptz, double precision, uuid);
drop function if exists memsub._nearest_candidates(text, boolean, boolean, vector, uuid, text[], text, timestamptz, timestamptz, double precision, uuid);

create or replace function memsub._nearest_candidates(
    p_embedding_type text,
    p_pool           integer,
    p_exact          boolean,
    p_keep_plan      boolean,
    p_query          vector,
    p_thread_id      uuid,
    p_tags           text[],
    p_packet_type    text,
    p_since          timestamptz,
    p_until          timestamptz,
    p_min_importance double precision,
    p_tenant_id      uuid
) returns memsub.retrieval_candidate[]
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
-- The values are sent to a kept plan as text: in this form every one reads back as exactly the value given.
set datestyle = 'iso, ymd'
set extra_float_digits = 1
-- A kept plan is always the generic one (with the tenant unknown, the plan cache would otherwise compare it
-- with plans for each tenant's own values and keep planning those).
set plan_cache_mode = force_generic_plan
-- A walk is planned with sorts disabled (below); the setting returns to the caller's when the call ends.
set enable_sort = on
as $$
declare
    tenant_filter  text := case when p_tenant_id is not null then ' and e.tenant_id = $8' else '' end;
    packet_filters text := '';
    statement      text;
    plan_name      text;
    seen           text := coalesce(pg_catalog.current_setting('memsub.search_plans_seen', true), '');
    prepared       text;
    held           text;  -- what the session holds under plan_name, if anything
    found          memsub.retrieval_candidate[];
begin
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(), 'embedding_type');
    if p_pool is null or p_pool not between 1 and 1000 then
        raise exception 'memsub._nearest_candidates: pool must be between 1 and 1000, not %',
                        coalesce(p_pool::text, 'NULL')
            using errcode = '22023', column = 'pool';
    end if;
    if p_exact is null or p_keep_plan is null then
        raise exception 'memsub._nearest_candidates: % must not be null',
                        case when p_exact is null then 'exact' else 'keep_plan' end
            using errcode = '22004', column = case when p_exact is null then 'exact' else 'keep_plan' end;
    end if;
    if p_thread_id is not null then packet_filters := packet_filters || ' and p.thread_id = $2'; end if;
    if p_tags is not null then packet_filters := packet_filters || ' and p.tags @> $3'; end if;
    if p_packet_type is not null then packet_filters := packet_filters || ' and p.packet_type = $4'; end if;
    if p_since is not null then packet_filters := packet_filters || ' and p."timestamp" >= $5'; end if;
    if p_until is not null then packet_filters := packet_filters || ' and p."timestamp" < $6'; end if;
    if p_min_importance is not null then packet_filters := packet_filters || ' and p.importance_score >= $7'; end if;

    -- The nearest pool rows, the packet joined inside only when a packet filter needs it; then the winners'
    -- packet. The exact scan sorts ids and distances only (the "+ 0" keeps its ordering off the HNSW index) and
    -- reads the winners' text after; the walk orders by the graph's own key (memsub._vector_graph_order: unit
    -- vectors in half precision), and the pool it returns is put in order of the full vectors' cosine distance
    -- by the aggregate. The walk takes their text with them (it sorts nothing, and a second read
    -- of memory_embeddings cost 0.45 ms of planning and 0.15 ms of execution a call). The text is put together
    -- from fixed fragments; every value is bound ($1 ... $8) except the embedding type (checked against the
    -- vocabulary above) and the pool, written in as constants (see the head of this file). Every read of
    -- memory_embeddings states the tenant, so a plan for the tenant's own values covers its partition only
    -- (planning all 16 partitions and their indexes took about 3 ms a call); a kept generic plan plans all 16
    -- once (6 to 27 ms, on its second run in the session) and opens only the tenant's when it starts.
    statement := format(
        'select array_agg(c order by c.distance) from ('
        '  select n.tenant_id, n.embedding_id, %s, n.distance,'
        '         p.importance_score, coalesce(p.last_accessed, p."timestamp") as last_active'
        '    from (select e.tenant_id, e.embedding_id, %s(e.vector <=> $1)::double precision as distance'
        '            from memsub.memory_embeddings e %s'
        '           where e.embedding_type = %L %s %s'
        '           order by %s'
        '           limit %s) n%s'
        '    join memsub.packet_store p on p.tenant_id = n.tenant_id and p.packet_id = %s) c',
        case when p_exact then 'e.packet_id, e.chunk_index, e.chunk_text'
             else 'n.packet_id, n.chunk_index, n.chunk_text' end,
        case when p_exact then '' else 'e.packet_id, e.chunk_index, e.chunk_text, ' end,
        case when packet_filters = '' then ''
             else 'join memsub.packet_store p on p.tenant_id = e.tenant_id and p.packet_id = e.packet_id' end,
        p_embedding_type, tenant_filter, packet_filters,
        case when p_exact then '(e.vector <=> $1) + 0, e.embedding_id'
             else memsub._vector_graph_order('e.vector', '$1') end,
        p_pool,
        case when p_exact then ' join memsub.memory_embeddings e on e.tenant_id = n.tenant_id'
                               ' and e.embedding_id = n.embedding_id' || tenant_filter end,
        case when p_exact then 'e.packet_id' else 'n.packet_id' end);
    if not p_exact then
        -- The walk's rows come in the HNSW index's order, and nothing else may order them: a generic plan,
        -- made for the average tenant (a few hundred rows), would sort that tenant's rows instead.
        perform pg_catalog.set_config('enable_sort', 'off', true);
    end if;
    plan_name := 'memsub_search_' || pg_catalog.md5(statement);
    if not p_keep_plan or pg_catalog.strpos(seen, plan_name) = 0 then
        execute statement into found
            using p_query, p_thread_id, p_tags, p_packet_type, p_since, p_until, p_min_importance, p_tenant_id;
        -- Planned for its own values the first time: a statement run once per session keeps nothing. Each kept
        -- plan covers every partition and its indexes in the session's memory, so a session notes (and later
        -- keeps) at most max_kept_search_plans kinds; a kind past them is planned on every call. Each name in
        -- the setting ends with a space.
        if p_keep_plan and pg_catalog.regexp_count(seen, ' ') < memsub.limit_value('max_kept_search_plans') then
            perform pg_catalog.set_config('memsub.search_plans_seen', seen || plan_name || ' ', false);
        end if;
        return found;
    end if;
    prepared := format('prepare %I(vector, uuid, text[], text, timestamptz, timestamptz, double precision, uuid) '
                       'as %s', plan_name, statement);
    -- Prepared statements belong to the session, and anyone who has used it (a client before this one on a
    -- pooled connection, or code of the login's own) may have prepared a statement of their own under this
    -- name; run with this call's context and role, it could read what they may not. The kept statement is
    -- therefore run only when the session holds it as memsub prepared it, word for word (names in it are
    -- resolved again under this function's search_path if the session's differed when it was prepared);
    -- anything else under the name is replaced. The statement is prepared again after DEALLOCATE or DISCARD.
    select s.statement into held from pg_catalog.pg_prepared_statements s where s.name = plan_name;
    if held is distinct from prepared then
        if held is not null then
            execute format('deallocate %I', plan_name);
        end if;
        execute prepared;
    end if;
    execute format('execute %I(%L, %L, %L, %L, %L, %L, %L, %L)', plan_name, p_query, p_thread_id, p_tags,
                   p_packet_type, p_since, p_until, p_min_importance, p_tenant_id) into found;
    return found;
end
$$;
comment on function memsub._nearest_candidates(text, integer, boolean, boolean, vector, uuid, text[], text, timestamptz, timestamptz, double precision, uuid) is
    'Internal to memsub.semantic_search: the pool nearest visible embeddings of one type to p_query, by the '
    'exact scan (p_exact) or the HNSW walk (planned with sorts disabled, so its rows come in the index''s order), '
    'with the packet filters given (thread, tags, packet type, [since, until), min importance) and the tenant '
    'when given. With p_keep_plan, the second and later runs of the same statement in a session use one generic '
    'plan kept as the prepared statement memsub_search_<md5 of its text> (run only when the session holds it as '
    'prepared here, word for word: anything else under the name is replaced); otherwise, and on the first run, '
    'the statement is planned for its values. A session keeps at most the limit max_kept_search_plans of them; '
    'a statement past it is planned for its values on every call. '
    '22023 for an unknown embedding type or a pool outside 1-1000, '
    '22004 for a NULL exact or keep_plan.';

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
    p_mode            text             default 'auto',
    p_ef_search       integer          default null,
    p_max_scan_tuples integer          default 20000,
    p_with_packets    boolean          default false
) returns table (embedding_id uuid, packet_id uuid, embedding_type text, chunk_index integer, chunk_text text,
                 distance double precision, importance_score double precision, combined_score double precision,
                 method text, access_id uuid, packet jsonb)
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 100
set hnsw.max_scan_tuples = 20000
as $$
declare
    v_tenant   uuid := memsub.current_tenant_id();
    v_pool     integer;
    v_method   text;
    v_ef       integer;
    v_rows     bigint;
    v_exact    boolean;
    v_hits     memsub.retrieval_candidate[];
    v_ids      uuid[];
    v_scores   double precision[];
    v_access   uuid[];
    v_packet_rows jsonb;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('embedding_type', p_embedding_type, 'packet_type', p_packet_type,
                                      'rank_by', p_rank_by, 'mode', p_mode, 'agent_id', p_agent_id),
            memsub._check_limit(cardinality(p_tags), 'max_tags', 'tags'),
            memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(), 'embedding_type');
    perform memsub._check_one_of(p_rank_by, memsub.search_rank_orders(), 'rank_by');
    perform memsub._check_one_of(p_mode, memsub.search_modes(), 'mode');
    if p_query is null then
        raise exception 'field "query" is required' using errcode = '23502', column = 'query';
    end if;
    perform memsub._check_vector(p_query, 'query');
    perform memsub._check_finite_time(p_since, 'since');
    perform memsub._check_finite_time(p_until, 'until');
    perform memsub._check_time_range(p_since, p_until);
    perform memsub._check_filter_values(p_tags, 'tags');  -- NULL (no tag filter) passes
    if p_packet_type is not null then
        perform memsub._check_filter_values(array[p_packet_type], 'packet_type');
    end if;
    perform memsub._check_similarity_k(p_k);
    if p_ef_search is not null and (p_ef_search < 1 or p_ef_search > 1000) then
        raise exception 'field "ef_search" must be between 1 and 1000, not %', p_ef_search
            using errcode = '22023', column = 'ef_search';
    end if;
    if p_max_scan_tuples is null or p_max_scan_tuples < 1 then
        raise exception 'field "max_scan_tuples" must be >= 1, not %', p_max_scan_tuples
            using errcode = '22023', column = 'max_scan_tuples';
    end if;
    -- The HNSW graph holds every tenant's vectors: the scan bound is what keeps one call from walking all of it.
    perform memsub._check_limit(p_max_scan_tuples, 'max_scan_tuples', 'max_scan_tuples');
    perform memsub._check_unit(p_min_importance, 'min_importance');
    perform pg_catalog.set_config('hnsw.max_scan_tuples', p_max_scan_tuples::text, true);
    -- Combined ranking re-ranks a wider pool of nearest candidates.
    v_pool := case when p_rank_by = 'combined' then least(1000, p_k * 4) else p_k end;

    select st.method, st.ef_search, st.tenant_rows into v_method, v_ef, v_rows
      from memsub._search_strategy(v_tenant, p_embedding_type, v_pool, p_mode, p_ef_search) st;
    perform pg_catalog.set_config('hnsw.ef_search', v_ef::text, true);

    -- The candidates (memsub._nearest_candidates builds and runs the statement), by the method chosen; a walk
    -- that comes back short is followed by the exact scan.
    loop
        v_exact := v_method = 'exact';
        v_hits := memsub._nearest_candidates(p_embedding_type, v_pool, v_exact, not v_exact or v_rows <= 2000,
                                             p_query, p_thread_id, p_tags, p_packet_type, p_since, p_until,
                                             p_min_importance, v_tenant);
        exit when v_method = 'exact' or coalesce(cardinality(v_hits), 0) >= v_pool;
        v_method := 'exact';
    end loop;

    -- The k hits returned, in their order: a combined ranking re-ranks the wider pool and keeps k of it, and
    -- only those are recorded and read back.
    v_hits := array(select h from unnest(v_hits) h
                     order by case when p_rank_by = 'combined'
                                   then -memsub.combined_score(h.distance, h.importance_score, h.last_active)
                                   else h.distance end,
                              h.embedding_id
                     limit p_k);

    if p_record_access and cardinality(v_hits) > 0 then
        select array_agg(h.embedding_id order by h.ordinality),
               array_agg(1.0 - h.distance / 2.0 order by h.ordinality)
          into v_ids, v_scores from unnest(v_hits) with ordinality h;
        select array_agg(a.access_id order by a.ord) into v_access
          from (select r.access_id, array_position(v_ids, r.target_id) as ord
                  from memsub._record_accesses_on_request('embedding', v_ids, v_scores, p_query_text,
                                                          'semantic_search', p_agent_id) r) a;
    end if;

    if p_with_packets and cardinality(v_hits) > 0 then
        -- The hits' packets in one read, as memsub.get_packets returns them (vectors put back, row-level
        -- security applies); only when asked, so a plain search reads no envelope.
        select jsonb_object_agg(g.packet_id, to_jsonb(g)) into v_packet_rows
          from memsub.get_packets(array(select h.packet_id from unnest(v_hits) h)) g;
    end if;

    return query
        select h.embedding_id, h.packet_id, p_embedding_type, h.chunk_index, h.chunk_text, h.distance,
               h.importance_score, memsub.combined_score(h.distance, h.importance_score, h.last_active),
               v_method, v_access[array_position(v_ids, h.embedding_id)], v_packet_rows -> h.packet_id::text
          from unnest(v_hits) with ordinality h
         order by h.ordinality;
end
$$;
comment on function memsub.semantic_search(vector, integer, text, uuid, text[], text, timestamptz, timestamptz, double precision, text, boolean, text, text, text, integer, integer, boolean) is
    'The k visible embeddings of one type nearest to the query (cosine distance), with their packet''s importance '
    'and combined score (memsub.combined_score). Filters on the packet: thread, tags (all of them), packet_type, '
    'time window [since, until), min_importance. rank_by distance (default) or combined (re-ranks the 4k nearest). '
    'mode auto (default) chooses per call between the exact scan and the HNSW walk by cost and measured recall '
    '(memsub._search_strategy); exact always scans exactly (recall 1); approximate always walks the index. '
    'A walk that finds fewer than k rows falls back to the exact scan; method says which one answered. '
    'ef_search (default derived from the tenant''s share of the index and k, or the larger one memsub.tune_search '
    'found reaching the recall goal) and max_scan_tuples (default 20000) '
    'bound the walk; the settings return to their values after the call. record_access logs each result in '
    'memory_access_log (access_id) and counts it on its packet, but in a read-only transaction (a hot '
    'standby): nothing is recorded there, access_id NULL. with_packets fills the packet column with each '
    'hit''s packet as memsub.get_packets returns it (a packet_store row as JSON, envelope vectors put back); '
    'NULL otherwise.';

create or replace function memsub._sample_query(p_row vector, p_distance double precision) returns vector
language plpgsql volatile security invoker parallel restricted
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_row   real[];
    v_noise double precision[];
    v_along double precision;
    v_length double precision;
    v_angle double precision;
begin
    if p_row is null then
        raise exception 'memsub._sample_query: row must not be null' using errcode = '22004', column = 'row';
    end if;
    -- NaN sorts above every number, so it is not between 0 and 2 either.
    if p_distance is null or p_distance not between 0 and 2 then
        raise exception 'memsub._sample_query: distance must be between 0 and 2, not %', coalesce(p_distance::text, 'NULL')
            using errcode = '22023', column = 'distance';
    end if;
    perform memsub._check_vector(p_row, 'row');
    v_row := l2_normalize(p_row)::real[];
    -- A random direction (normally distributed coordinates) less its part along the row: a unit vector at right
    -- angles to it. The query lies on the great circle through both, at the angle whose cosine distance from the
    -- row is p_distance. (A straight step of sqrt(2 d), then normalized, holds only for small d: for the 0.8 of
    -- uniform random directions it landed at 0.39.)
    v_noise := array(select sqrt(-2 * ln(1 - pg_catalog.random())) * cos(2 * pi() * pg_catalog.random())
                       from unnest(v_row));
    v_along := (select sum(n * r) from unnest(v_noise, v_row) u(n, r));
    v_noise := array(select n - v_along * r from unnest(v_noise, v_row) u(n, r));
    v_length := sqrt((select sum(n * n) from unnest(v_noise) n));
    if v_length = 0 then
        return v_row::vector;  -- one dimension: no direction at right angles to the row
    end if;
    v_noise := array(select n / v_length from unnest(v_noise) n);
    v_angle := acos(1 - p_distance);
    return l2_normalize(array(select cos(v_angle) * r + sin(v_angle) * n
                                from unnest(v_row, v_noise) u(r, n))::vector);
end
$$;
comment on function memsub._sample_query(vector, double precision) is
    'Internal to memsub.tune_search: a unit vector at cosine distance p_distance (0 to 2) from p_row, in a '
    'random direction (on the great circle through p_row and a random vector at right angles to it; a row of one '
    'dimension gives its own direction). 22004 for a NULL row; 22023 for a distance outside 0-2 or a row '
    'memsub._check_vector refuses (another dimension than the installation''s, no usable norm).';

-- 2.31: the result gained recall_bound; a result type changes only by drop and create.
drop function if exists memsub.tune_search(integer, integer);
create function memsub.tune_search(p_samples integer default 20, p_k integer default 10)
returns table (tenant_id uuid, embedding_type text, row_count bigint, type_rows bigint, method text,
               ef_search integer, recall double precision, recall_bound double precision)
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 100
set hnsw.max_scan_tuples = 20000
as $$
declare
    v_group    record;
    v_plan     record;
    v_sample   record;
    v_query    vector;
    v_distance double precision;
    v_queries  vector[];
    v_truth    double precision[];
    v_truths   double precision[];
    v_found    double precision[];
    v_recalls  double precision[];
    v_done     integer;
    v_ef       integer;
    v_next     integer;
    v_recall   double precision;
    v_bound    double precision;
begin
    if not memsub.is_platform_admin() then
        raise exception 'memsub.tune_search: needs a platform_admin context' using errcode = '42501';
    end if;
    if p_samples is null or p_samples < 1 or p_samples > 1000 then
        raise exception 'field "samples" must be between 1 and 1000, not %', p_samples
            using errcode = '22023', column = 'samples';
    end if;
    perform memsub._check_similarity_k(p_k);  -- as semantic_search: no recall is measured for a k no search takes
    -- Run time: per tenant and type one count, then, for a tenant the cost model would walk, one exact scan
    -- of the tenant per sample query (the truth, computed once), one walk per sample row for the distance of
    -- its nearest other row, and one walk per sample query and ef_search tried: at most five (40, 100, 250,
    -- 625, 1000), each bounded by hnsw.max_scan_tuples.
    for v_group in
        -- total: the rows of the type in the tenant's partition (the graph its walk reads).
        select e.tenant_id, e.embedding_type, count(*) as n,
               sum(count(*)) over (partition by e.tableoid, e.embedding_type) as total
          from memsub.memory_embeddings e
         where e.vector is not null
         group by e.tableoid, e.tenant_id, e.embedding_type
    loop
        -- Fresh counts first, so that the strategy below sees this tenant's share as it is now.
        insert into memsub.search_stats as st (tenant_id, embedding_type, row_count, type_rows, ef_search, recall,
                                               recall_bound, samples, measured_at)
        values (v_group.tenant_id, v_group.embedding_type, v_group.n, v_group.total::bigint, null, null, null, 0,
                now())
        on conflict on constraint search_stats_pkey do update
           set row_count = excluded.row_count, type_rows = excluded.type_rows, ef_search = null, recall = null,
               recall_bound = null, samples = 0, measured_at = excluded.measured_at;
        select * into v_plan
          from memsub._search_strategy(v_group.tenant_id, v_group.embedding_type, p_k, 'auto', null) s;
        v_recall := null;
        v_bound := null;
        v_done := 0;
        if v_plan.method = 'approximate' then
            -- Sample queries like the tenant's own: a stored row moved, in a random direction, as far as its
            -- nearest other row lies from it (so the query is not a node of the graph, and its nearest rows lie
            -- about as near as a new row's would); each with its exact k nearest (a row of v_truths, padded with
            -- NULL to k). A stored row itself, even left out of its answers, is found through its own links in
            -- the graph and overstates the walk's recall (measured at 306k rows of one tenant: 0.95 for stored
            -- rows at ef_search 100, 0.88 for new queries and for these); midpoints of two random rows lie
            -- between clusters and understate it.
            v_queries := '{}';
            v_truths := '{}';
            perform pg_catalog.set_config('hnsw.ef_search', '100', true);
            for v_sample in
                -- Ten rows drawn for each sample wanted, and each vector among them sampled once (by the first
                -- row drawn that holds it), in the order drawn: copies of a few vectors stored in many rows
                -- would otherwise fill the sample, and the walk finds a copy's copies however poorly it serves
                -- the tenant's other rows (on 6,000 copies of one vector and 600 clustered rows, 384-d, the walk
                -- found 0.19 of the nearest rows of new queries among the clustered ones; a sample of 20 rows
                -- holds none of those one time in seven, and of three samples of 40 rows one read 0.99 and chose
                -- the walk). Without copies, the first p_samples rows drawn: a random sample of rows. The draw
                -- sorts ids only; the vectors are read after, by key, and normalized.
                select s.embedding_id, l2_normalize(s.vector) as vector
                  from (select distinct on (e.vector) e.embedding_id, e.vector, d.drawn
                          from (select r.embedding_id, pg_catalog.random() as drawn
                                  from memsub.memory_embeddings r
                                 where r.tenant_id = v_group.tenant_id and r.embedding_type = v_group.embedding_type
                                 order by drawn
                                 limit p_samples * 10) d
                          join memsub.memory_embeddings e
                            on e.tenant_id = v_group.tenant_id and e.embedding_id = d.embedding_id
                         order by e.vector, d.drawn) s
                 order by s.drawn
                 limit p_samples
            loop
                -- The cosine distance of the row's nearest other row (a scale, not an answer: planned for the
                -- tenant's values, a walk or, for a small tenant, a sort).
                execute 'select min(n.distance) from (select e.vector <=> $1 as distance'
                        '  from memsub.memory_embeddings e where e.embedding_type = $2 and e.tenant_id = $3'
                        '   and e.embedding_id <> $4 order by ' || memsub._vector_graph_order('e.vector', '$1')
                        || ' limit 1) n'
                   into v_distance using v_sample.vector, v_group.embedding_type, v_group.tenant_id,
                                         v_sample.embedding_id;
                v_query := memsub._sample_query(v_sample.vector, least(greatest(coalesce(v_distance, 0), 0), 2));
                -- The distances of the exact k nearest (as the walk reports its rows': the full vectors'
                -- cosine distance), so that the walk is judged by how near its rows are, not by which of the
                -- rows tied with the k-th nearest it returned (memsub._recall_with_ties).
                execute 'select array_agg(n.distance) from (select (e.vector <=> $1)::double precision as distance'
                        '  from memsub.memory_embeddings e where e.embedding_type = $3 and e.tenant_id = $4'
                        ' order by (e.vector <=> $1) + 0, e.embedding_id limit $2) n'
                   into v_truth using v_query, p_k, v_group.embedding_type, v_group.tenant_id;
                v_truth := coalesce(v_truth, '{}');
                v_queries := v_queries || v_query;
                v_truths := array_cat(v_truths, array[v_truth || array_fill(null::double precision,
                                                                            array[p_k - cardinality(v_truth)])]);
            end loop;
            v_done := cardinality(v_queries);
            -- The recall@k of the walk from the derived ef_search up, x 2.5 per step (at most 1000), until the
            -- lower confidence bound of its mean over the sample reaches the 0.95 goal or the walk at the next
            -- ef_search would cost more than scanning the tenant exactly.
            v_ef := v_plan.ef_search;
            while v_done > 0 loop
                perform pg_catalog.set_config('hnsw.ef_search', v_ef::text, true);
                v_recalls := '{}';
                for i in 1 .. v_done loop
                    -- The walk as semantic_search runs it: its statement, planned with sorts disabled. A plan for
                    -- the tenant's own values may sort its rows instead (the planner prices a sort of a couple of
                    -- thousand rows below the walk), and a sort's recall is always 1.
                    select array_agg(c.distance) into v_found
                      from unnest(memsub._nearest_candidates(v_group.embedding_type, p_k, false, false, v_queries[i],
                                                             null, null, null, null, null, null,
                                                             v_group.tenant_id)) c;
                    v_recalls := v_recalls || coalesce(memsub._recall_with_ties(v_found, v_truths[i:i]), 0);
                end loop;
                v_recall := (select avg(r) from unnest(v_recalls) r);
                v_bound := memsub._recall_lower_bound(v_recalls);
                exit when v_bound >= 0.95 or v_ef >= 1000;
                -- Steps of x 2.5 are also the margin for the sample's own error: with x 1.6 a tenant of uniform random
                -- vectors stopped at 160, where its sample's bound reached 0.95 and new queries found 0.942.
                v_next := least(1000, ceil(v_ef * 2.5)::integer);
                exit when (select s.method from memsub._search_strategy(v_group.tenant_id, v_group.embedding_type,
                                                                        p_k, 'auto', v_next) s) = 'exact';
                v_ef := v_next;
            end loop;
            if v_done > 0 then
                update memsub.search_stats st
                   set ef_search = v_ef, recall = v_recall, recall_bound = v_bound, samples = v_done
                 where st.tenant_id = v_group.tenant_id and st.embedding_type = v_group.embedding_type;
                -- The choice the searches make from now on.
                select * into v_plan
                  from memsub._search_strategy(v_group.tenant_id, v_group.embedding_type, p_k, 'auto', null) s;
            end if;
        end if;
        tenant_id := v_group.tenant_id;
        embedding_type := v_group.embedding_type;
        row_count := v_group.n;
        type_rows := v_group.total::bigint;
        method := v_plan.method;
        ef_search := case when v_done > 0 then v_ef else v_plan.ef_search end;
        recall := v_recall;
        recall_bound := v_bound;
        return next;
    end loop;
    -- Tenants that no longer hold embeddings of a type.
    delete from memsub.search_stats st
     where not exists (select from memsub.memory_embeddings e
                        where e.tenant_id = st.tenant_id and e.embedding_type = st.embedding_type);
end
$$;
comment on function memsub.tune_search(integer, integer) is
    'Maintenance (platform_admin context): refreshes memsub.search_stats for every tenant and embedding type: '
    'row counts, and for tenants the cost model would search approximately, the recall@k of the HNSW walk '
    '(semantic_search''s own statement, memsub._nearest_candidates) against the exact scan on samples queries '
    'made from the tenant''s own rows (a row moved in a random direction as far as its nearest other row, '
    'memsub._sample_query; ten rows drawn per sample and each vector among them sampled once), a row the walk found counting when its distance is at most the exact k-th nearest''s '
    '(within 1e-6; rows tied with it are as right as the ones the exact scan lists: memsub._recall_with_ties), '
    'from the derived ef_search up '
    '(x 2.5 per step, at most 1000) until the one-sided 95 % lower confidence bound of the mean recall reaches '
    '0.95 or the walk would cost more than the exact scan; stores the ef_search reached, the mean recall and its '
    'bound. memsub.semantic_search then walks the tenant at that ef_search, or scans it exactly when at no '
    'ef_search the bound reached 0.95. Bounded: per tenant and type, one exact scan and at most six walks per '
    'sample query. Returns the choice per tenant and type (ef_search, mean recall and its bound as measured). '
    'k is at most max_k and 1000, as for semantic_search (54000 naming k).';

grant execute on function
    memsub.combined_score(double precision, double precision, timestamptz, double precision, double precision, double precision, interval),
    memsub.semantic_search(vector, integer, text, uuid, text[], text, timestamptz, timestamptz, double precision, text, boolean, text, text, text, integer, integer, boolean),
    memsub._search_strategy(uuid, text, integer, text, integer),
    memsub._context_tenant_rows(text, integer),
    memsub._nearest_candidates(text, integer, boolean, boolean, vector, uuid, text[], text, timestamptz, timestamptz, double precision, uuid)
    to memsub_app, memsub_analyst;
grant select on memsub.search_stats to memsub_app, memsub_analyst;
grant select, insert, update, delete on memsub.search_stats to memsub_platform_admin;
grant execute on function memsub.tune_search(integer, integer) to memsub_platform_admin;
grant execute on function memsub._recall_lower_bound(double precision[]) to memsub_platform_admin;
grant execute on function memsub._recall_with_ties(double precision[], double precision[]) to memsub_platform_admin;
grant execute on function memsub._sample_query(vector, double precision) to memsub_platform_admin;
grant execute on function memsub._record_accesses(text, uuid[], double precision[], text, text, text) to memsub_app;
grant execute on function memsub._record_accesses_on_request(text, uuid[], double precision[], text, text, text)
    to memsub_app, memsub_analyst;
grant usage on type memsub.retrieval_candidate to memsub_app, memsub_analyst;
-- The graph, hybrid and reflection functions require a tenant context.
grant execute on function memsub._require_tenant_id() to memsub_app, memsub_analyst;
