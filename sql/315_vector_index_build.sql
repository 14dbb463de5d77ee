-- Area: search. Seed: seed 000 "SEMANTIC LAYER" (memory_embeddings, its HNSW indexes).
--
-- The build parameters of the HNSW index of each embedding type (memsub.idx_embeddings_vector_<type>: a
-- partitioned index, one graph per partition of memory_embeddings, idx_embeddings_vector_<type>_p00 ... _p15).
--
-- What a graph holds: each vector scaled to length 1 and stored in half precision, compared by inner product
-- (halfvec_ip_ops over l2_normalize(vector)::halfvec(<dimension>)). For vectors of length 1 the inner product
-- orders neighbours as the cosine distance does, without the two norms a cosine distance computes, and a half-
-- precision element holds a unit vector's components (at most 1 in magnitude) without overflow. The graph takes
-- about 1,170 bytes a row at 384 dimensions instead of 2,048, an insert costs less and a walk reads fewer pages
-- (docs/decisions.md, "The graphs hold unit vectors in half precision"). The table keeps every vector as given:
-- a search reports, and orders its candidates by, the cosine distance of the full vectors.
--
-- The indexes are created with pgvector's defaults, m 16 and ef_construction 64: the cheapest graph to insert
-- into, and enough for recall@10 of 0.95 at the default ef_search to about 100k vectors of a type (clustered
-- 384-d data). A larger graph (m 24, ef_construction 128) costs twice as much per insert and keeps the recall
-- further: 0.995 at ef_search 100 on 300k vectors, where the default graph grown insert by insert gave 0.865
-- (docs/retrieval.md, "HNSW build parameters"). An operator changes them with `memsub vector-index
-- rebuild`: memsub.set_vector_index_build records them on the index, and the command then rebuilds it with
-- REINDEX INDEX CONCURRENTLY (which cannot run inside a function). Reads and writes go on during the rebuild.

create or replace function memsub._vector_graph_order(p_vector text, p_query text) returns text
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    select format('l2_normalize(%1$s)::halfvec(%3$s) <#> l2_normalize(%2$s)::halfvec(%3$s)', p_vector, p_query,
                  memsub.vector_dimension())
$$;
comment on function memsub._vector_graph_order(text, text) is
    'Internal: the ORDER BY expression, as SQL text, that walks the HNSW graph of memory_embeddings for the '
    'stored vector p_vector (e.g. e.vector) nearest to the query p_query (e.g. $1): the index''s own key, '
    'l2_normalize(vector)::halfvec(<vector_dimension>), compared by inner product. It orders rows as the cosine '
    'distance does, to half precision; statements built with it report the cosine distance of the full vectors.';

create or replace function memsub.vector_index_builds()
returns table (embedding_type text, index_name text, m integer, ef_construction integer, index_bytes bigint,
               valid boolean)
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
    -- The parameters as recorded on the partitions' indexes (set_vector_index_build sets them on every one in
    -- one transaction; the partitioned index itself holds only those it was created with).
    select t.embedding_type, c.relname::text,
           coalesce(max((select o.option_value::integer from pg_catalog.pg_options_to_table(p.reloptions) o
                          where o.option_name = 'm')), 16),
           coalesce(max((select o.option_value::integer from pg_catalog.pg_options_to_table(p.reloptions) o
                          where o.option_name = 'ef_construction')), 64),
           coalesce(sum(pg_catalog.pg_relation_size(p.oid)), 0)::bigint,
           bool_and(i.indisvalid and i.indisready)
      from unnest(memsub.embedding_types()) with ordinality as t(embedding_type, n)
      join pg_catalog.pg_class c on c.oid = pg_catalog.to_regclass('memsub.idx_embeddings_vector_' || t.embedding_type)
      join pg_catalog.pg_inherits h on h.inhparent = c.oid
      join pg_catalog.pg_class p on p.oid = h.inhrelid
      join pg_catalog.pg_index i on i.indexrelid = p.oid
     group by t.n, t.embedding_type, c.relname
     order by t.n
$$;
comment on function memsub.vector_index_builds() is
    'For each embedding type, its HNSW index on memory_embeddings (a partitioned index, one graph per partition): '
    'name, build parameters m and ef_construction (pgvector''s defaults 16 and 64 unless set by '
    'memsub.set_vector_index_build), size in bytes of every partition''s graph, and whether PostgreSQL may use '
    'them all (indisvalid and indisready). A concurrent rebuild keeps each old graph in use until it swaps in the '
    'new one; one that fails leaves an invalid copy named <index>_p<nn>_ccnew, not listed here.';

create or replace function memsub.set_vector_index_build(p_embedding_type text, p_m integer,
                                                         p_ef_construction integer)
returns text
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_index     text := 'idx_embeddings_vector_' || p_embedding_type;
    v_partition name;
begin
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(), 'embedding_type');
    -- pgvector's bounds, checked here so a bad value is refused before anything changes, naming the field.
    if p_m is null or p_m < 2 or p_m > 100 then
        raise exception 'field "m" must be from 2 to 100, not %', coalesce(p_m::text, 'NULL')
            using errcode = '22023', column = 'm';
    end if;
    if p_ef_construction is null or p_ef_construction < 4 or p_ef_construction > 1000 then
        raise exception 'field "ef_construction" must be from 4 to 1000, not %', coalesce(p_ef_construction::text, 'NULL')
            using errcode = '22023', column = 'ef_construction';
    end if;
    if p_ef_construction < 2 * p_m then
        raise exception 'field "ef_construction" must be at least 2 * m (%), not %', 2 * p_m, p_ef_construction
            using errcode = '22023', column = 'ef_construction';
    end if;
    -- A partitioned index takes no storage parameters of its own: they are recorded on each partition's index.
    for v_partition in
        select p.relname from pg_catalog.pg_inherits h join pg_catalog.pg_class p on p.oid = h.inhrelid
         where h.inhparent = pg_catalog.to_regclass('memsub.' || v_index)
         order by p.relname
    loop
        execute format('alter index memsub.%I set (m = %s, ef_construction = %s)', v_partition, p_m,
                       p_ef_construction);
    end loop;
    return v_index;
end
$$;
comment on function memsub.set_vector_index_build(text, integer, integer) is
    'Records HNSW build parameters (m 2-100, ef_construction 4-1000 and at least 2 * m) on the index of an '
    'embedding type (on each partition''s) and returns the index''s name; the graphs are rebuilt with them by '
    'REINDEX INDEX CONCURRENTLY '
    '(memsub vector-index rebuild). Until then only new inserts use the new ef_construction. Raises 22023 naming '
    'the field. Granted to nobody: the role that applies migrations runs it.';

revoke all on function memsub.set_vector_index_build(text, integer, integer) from public;
grant execute on function memsub.vector_index_builds() to memsub_platform_admin, memsub_analyst;
-- semantic_search builds its walk with it as the caller (memsub._nearest_candidates is SECURITY INVOKER).
grant execute on function memsub._vector_graph_order(text, text) to memsub_app, memsub_analyst;
