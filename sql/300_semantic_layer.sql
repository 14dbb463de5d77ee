-- Area: search. Seed: seed 000 "SEMANTIC LAYER" (semantic_memory, memory_embeddings).
--
-- Semantic layer: the legacy vector store (semantic_memory) and per-packet multi-space embeddings
-- (memory_embeddings), with nearest-neighbour search by cosine distance.
--
-- Searches are SECURITY INVOKER: row-level security decides what the caller sees. HNSW scans filter after the
-- graph walk, so a tenant filter can return fewer than k rows; the search functions turn on pgvector's
-- iterative scan (hnsw.iterative_scan = strict_order) for their transaction, which keeps walking until k
-- visible rows are found. The embedding type is written into the query as a literal so the planner can choose
-- that type's partial index.
--
-- memory_embeddings is partitioned by tenant: 16 hash partitions of tenant_id (migration 2.30.0), each with its
-- own HNSW graph per embedding type, so a search of one tenant walks only the graph of the tenant's partition.

-- pgvector defines its settings (hnsw.ef_search, hnsw.iterative_scan, ...) when a session loads its library, on
-- the session's first vector value. The search functions of this area (this file and the ones after it) name
-- those settings in SET clauses, and a role without superuser may not name a setting its session does not know
-- yet: an upgrade that only re-runs the re-runnable SQL has used no vector before. One vector value, here at the
-- head of the vector area, loads the library first.
do $$
begin
    execute format('select %L::%I.vector', '[0]',
                   (select n.nspname from pg_catalog.pg_extension e
                      join pg_catalog.pg_namespace n on n.oid = e.extnamespace
                     where e.extname = 'vector'));
end
$$;

create or replace function memsub._embedding_partition(p_tenant_id uuid) returns integer
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    select n from pg_catalog.generate_series(0, 15) n
     where p_tenant_id is not null
       and pg_catalog.satisfies_hash_partition('memsub.memory_embeddings'::regclass, 16, n, p_tenant_id)
$$;
comment on function memsub._embedding_partition(uuid) is
    'The number (0-15) of the partition of memory_embeddings that holds a tenant''s embeddings '
    '(memory_embeddings_p<nn>, hash of tenant_id, modulus 16); its HNSW indexes are '
    'idx_embeddings_vector_<type>_p<nn>. NULL for a NULL tenant.';

create or replace function memsub.store_embedding(
    p_packet_id      uuid,
    p_embedding_type text,
    p_vector         vector,
    p_chunk_index    integer default 0,
    p_chunk_text     text    default null,
    p_metadata       jsonb   default '{}'
) returns memsub.memory_embeddings
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant    uuid := memsub._require_tenant_id();
    v_packet    memsub.packet_store;
    v_embedding memsub.memory_embeddings;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('embedding_type', p_embedding_type, 'chunk_text', p_chunk_text),
            memsub._check_limit(pg_column_size(p_metadata), 'max_json_bytes', 'metadata');
    if p_packet_id is null then
        raise exception 'field "packet_id" is required' using errcode = '23502', column = 'packet_id';
    end if;
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(),
                                'embedding_type');
    if p_vector is null then
        raise exception 'field "vector" is required' using errcode = '23502', column = 'vector';
    end if;
    perform memsub._check_vector(p_vector, 'vector');
    if p_chunk_index is null or p_chunk_index < 0 then
        raise exception 'field "chunk_index" must be 0 (full content) or a chunk number >= 1, not %', p_chunk_index
            using errcode = '22023', column = 'chunk_index';
    end if;
    v_packet := memsub._visible_packet(p_packet_id, 'packet_id');
    insert into memsub.memory_embeddings as e (
        packet_id, embedding_type, vector, chunk_index, chunk_text, metadata, scope, ttl,
        tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
    values (
        p_packet_id, p_embedding_type, p_vector, p_chunk_index, p_chunk_text,
        coalesce(memsub._check_json_type(p_metadata, 'object', 'metadata'), '{}'), v_packet.scope, v_packet.ttl,
        v_tenant, v_packet.org_id, v_packet.user_id, v_packet.correlation_id, v_packet.session_id, v_packet.trace_id)
    on conflict (tenant_id, packet_id, embedding_type, chunk_index) do update
       set vector = excluded.vector, chunk_text = excluded.chunk_text, metadata = excluded.metadata,
           created_at = now()
    returning e.* into v_embedding;
    return v_embedding;
end
$$;
comment on function memsub.store_embedding(uuid, text, vector, integer, text, jsonb) is
    'Stores (or replaces) the embedding of a visible packet in one vector space (one of '
    'memsub.embedding_types()) for the full content (chunk_index 0) or a chunk (1+). The row takes the packet''s identity and scope.';

-- semantic_search (sql/310_semantic_search.sql) is the one vector search of embeddings.
drop function if exists memsub.search_embeddings(vector, text, integer);

create or replace function memsub.store_semantic_memory(
    p_agent_id         text,
    p_vector           vector,
    p_payload          jsonb            default '{}',
    p_embedding_type   text             default 'content',
    p_scope            text             default 'shared',
    p_importance_score double precision default 0.5
) returns memsub.semantic_memory
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_memory memsub.semantic_memory;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('agent_id', p_agent_id, 'embedding_type', p_embedding_type, 'scope', p_scope),
            memsub._check_limit(pg_column_size(p_payload), 'max_json_bytes', 'payload');
    if p_vector is null then
        raise exception 'field "vector" is required' using errcode = '23502', column = 'vector';
    end if;
    perform memsub._check_vector(p_vector, 'vector');
    perform memsub._check_one_of(p_embedding_type, array_remove(memsub.embedding_types(), 'reasoning'), 'embedding_type');
    perform memsub._check_one_of(p_scope, memsub.packet_scopes(), 'scope');
    if p_scope <> 'shared' and memsub.current_user_id() is null then
        raise exception 'scope "%" needs a user in the context (memsub.set_context(..., user_id => ...))', p_scope
            using errcode = '22023', column = 'scope';
    end if;
    insert into memsub.semantic_memory (
        agent_id, vector, payload, importance_score, embedding_type, scope,
        tenant_id, org_id, user_id, session_id)
    values (
        memsub._require_text(p_agent_id, 'agent_id'), p_vector,
        coalesce(memsub._check_json_type(p_payload, 'object', 'payload'), '{}'),
        coalesce(memsub._check_unit(p_importance_score, 'importance_score'), 0.5), p_embedding_type, p_scope,
        v_tenant, memsub.current_org_id(), memsub.current_user_id(), memsub.current_session_id())
    returning * into v_memory;
    return v_memory;
end
$$;
comment on function memsub.store_semantic_memory(text, vector, jsonb, text, text, double precision) is
    'Stores an agent memory in the legacy vector store, visible by scope like packets (shared, cursor, l-private).';

create or replace function memsub._walk_ef_search(p_pool integer, p_share double precision) returns integer
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
-- Capped in numeric before the cast: a tiny share made the quotient too large for an integer (an error).
as $$ select least(1000, greatest(40, p_pool, least(1000, ceil(10.0 * p_pool / greatest(p_share, 1e-9)))::integer)) $$;
comment on function memsub._walk_ef_search(integer, double precision) is
    'Internal: the hnsw.ef_search of a walk that must return p_pool rows of a caller holding p_share (0-1] of the '
    'graph: about ten candidates per wanted row inside that share, at least 40 and p_pool, at most 1000. Used by '
    'memsub._search_strategy and memsub.search_semantic_memory.';

-- Its earlier signature, without a mode.
drop function if exists memsub.search_semantic_memory(vector, integer, text);

-- search_semantic_memory: semantic_memory has one HNSW graph for every tenant, and row-level security (and the
-- agent filter) drop what a walk finds in other tenants' rows. Walked at pgvector's defaults, a tenant holding 1 %
-- of 20,000 clustered rows got recall@10 0.93, tenants of 5-50 % of random directions 0.22-0.26, and a 20-row
-- tenant among 6,000 rows 9 rows of 10 (docs/retrieval.md, "The legacy vector store"). The search therefore scans
-- exactly unless the graph is needed. In mode auto it scans exactly while the whole table holds at most
-- exact_rows (10,000) rows by the index's estimate; otherwise it scans at most exact_rows + 1 of the caller's rows,
-- which is the answer when they are all there are, and walks a bigger set. Scanning 10,000 rows of 384
-- dimensions exactly costs about 10 ms (bench/semantic_memory.py). A walk starts at the ef_search that gives
-- about ten candidates per wanted row inside the caller's share of the graph (memsub._walk_ef_search, as for
-- memsub.semantic_search) and keeps walking (iterative scan) until it has limit rows; one that comes back short is followed by the
-- exact scan. Mode exact always scans exactly (recall 1); approximate always walks. The exact statements order by
-- cosine_distance(), which no index serves: the graph is never read for them.
create or replace function memsub.search_semantic_memory(
    p_query    vector,
    p_limit    integer default 10,
    p_agent_id text    default null,
    p_mode     text    default 'auto'
) returns table (embedding_id uuid, agent_id text, payload jsonb, embedding_type text, scope text,
                 importance_score double precision, distance double precision, method text)
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
set hnsw.iterative_scan = strict_order
set hnsw.ef_search = 40
set hnsw.max_scan_tuples = 20000
-- A walk is planned with sorts disabled (below), so that it reads the graph; restored when the call ends.
set enable_sort = on
-- Each call is planned for its own tenant and agent: a NULL tenant (a platform admin) reads every tenant.
set plan_cache_mode = force_custom_plan
as $$
declare
    exact_rows constant integer := 10000;
    v_tenant   uuid := memsub.current_tenant_id();
    v_agent_id text;  -- the agent id as stored; blank: every agent
    v_total    double precision;
    v_rows     bigint;
    v_method   text;
    v_ids      uuid[];
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('agent_id', p_agent_id, 'mode', p_mode);
    v_agent_id := memsub._optional_text(p_agent_id);
    if p_query is null then
        raise exception 'field "query" is required' using errcode = '23502', column = 'query';
    end if;
    perform memsub._check_vector(p_query, 'query');
    perform memsub._check_count(p_limit, 'max_k', 'limit');
    perform memsub._check_one_of(p_mode, memsub.search_modes(), 'mode');
    -- Rows of every tenant in the graph, by the index's estimate (kept by vacuum and analyze; -1 before either).
    select greatest(c.reltuples, 0) into v_total
      from pg_catalog.pg_class c where c.oid = 'memsub.idx_semantic_memory_vector'::regclass;
    v_method := case when p_mode = 'auto' and v_total <= exact_rows then 'exact' else p_mode end;
    if v_method = 'auto' then
        -- The exact scan of at most exact_rows + 1 of the caller's rows: it answers when they are all there are,
        -- at the cost of one scan; a bigger set is walked.
        with bounded as (
            select m.embedding_id, cosine_distance(m.vector, p_query) as distance
              from memsub.semantic_memory m
             where (v_tenant is null or m.tenant_id = v_tenant) and (v_agent_id is null or m.agent_id = v_agent_id)
             limit exact_rows + 1)
        select (select count(*) from bounded),
               array(select b.embedding_id from bounded b order by b.distance, b.embedding_id limit p_limit)
          into v_rows, v_ids;
        v_method := case when v_rows <= exact_rows then 'exact' else 'approximate' end;
    elsif v_method = 'approximate' then
        select count(*) into v_rows
          from (select from memsub.semantic_memory m
                 where (v_tenant is null or m.tenant_id = v_tenant) and (v_agent_id is null or m.agent_id = v_agent_id)
                 limit exact_rows + 1) s;
    end if;
    if v_method = 'approximate' then
        -- About ten candidates per wanted row inside the caller's share of the graph.
        perform pg_catalog.set_config('hnsw.ef_search', memsub._walk_ef_search(
            p_limit, greatest(v_rows, 1) / greatest(v_total, v_rows, 1))::text, true);
        perform pg_catalog.set_config('enable_sort', 'off', true);
        v_ids := array(select m.embedding_id from memsub.semantic_memory m
                        where (v_tenant is null or m.tenant_id = v_tenant)
                          and (v_agent_id is null or m.agent_id = v_agent_id)
                        order by m.vector <=> p_query
                        limit p_limit);
        perform pg_catalog.set_config('enable_sort', 'on', true);
        if cardinality(v_ids) < least(p_limit, v_rows) then
            v_method := 'exact';  -- short: the exact scan answers
            v_ids := null;
        end if;
    end if;
    if v_ids is not null then
        return query
            select m.embedding_id, m.agent_id, m.payload, m.embedding_type, m.scope, m.importance_score,
                   cosine_distance(m.vector, p_query), v_method
              from memsub.semantic_memory m
             where (v_tenant is null or m.tenant_id = v_tenant) and m.embedding_id = any(v_ids)
             order by 7, 1;
    else
        return query
            select m.embedding_id, m.agent_id, m.payload, m.embedding_type, m.scope, m.importance_score,
                   cosine_distance(m.vector, p_query), v_method
              from memsub.semantic_memory m
             where (v_tenant is null or m.tenant_id = v_tenant) and (v_agent_id is null or m.agent_id = v_agent_id)
             order by 7, 1
             limit p_limit;
    end if;
end
$$;
comment on function memsub.search_semantic_memory(vector, integer, text, text) is
    'The limit visible legacy memories nearest to the query (cosine distance), optionally of one agent (its id read '
    'as stored: trimmed, each run of whitespace one space; a blank id filters nothing). mode auto (default) scans '
    'the caller''s rows exactly while they are at most 10,000 (or the whole table is), and walks the HNSW graph '
    'for a bigger set; exact always scans exactly (recall 1); approximate always walks. A walk that finds fewer '
    'rows than it should is followed by the exact scan; method says which one answered.';

call memsub._install_row_security('memsub.semantic_memory', array['org', 'user']);
call memsub._install_row_security('memsub.memory_embeddings', array['org', 'user']);
-- An embedding (vector and chunk_text) of an expired packet is never read, like the packet (sql/150_packet_security.sql).
call memsub._ensure_policy('memsub.memory_embeddings', 'not_expired', $create$create policy not_expired on memsub.memory_embeddings as restrictive for select to public
    using (ttl is null or ttl > (select pg_catalog.now() at time zone 'UTC'))$create$);
comment on policy not_expired on memsub.memory_embeddings is
    'An embedding of a packet whose ttl has passed is never read; purge_expired() deletes it with the packet.';

grant select on memsub.semantic_memory, memsub.memory_embeddings to memsub_app, memsub_analyst;
grant execute on function
    memsub._embedding_partition(uuid), memsub._walk_ef_search(integer, double precision),
    memsub._check_one_of(text, text[], text), memsub._check_vector(vector, text), memsub._check_unit(double precision, text),
    memsub._refuse_vector_without_norm(text, text), memsub._refuse_wrong_dimension(text, integer),
    memsub._require_text(text, text),
    memsub._check_finite(double precision, text), memsub._check_finite_time(timestamptz, text),
    memsub._check_finite_interval(interval, text), memsub._json_vector(jsonb, text)
    to memsub_app, memsub_analyst;
grant execute on function
    memsub.store_embedding(uuid, text, vector, integer, text, jsonb),
    memsub.store_semantic_memory(text, vector, jsonb, text, text, double precision)
    to memsub_app;
grant execute on function
    memsub.search_semantic_memory(vector, integer, text, text)
    to memsub_app, memsub_analyst;
