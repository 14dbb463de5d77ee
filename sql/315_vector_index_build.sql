-- Area: search. Seed: seed 000 "SEMANTIC LAYER" (memory_embeddings, its HNSW indexes).
--
-- The build parameters of the HNSW index of each embedding type (memsub.idx_embeddings_vector_<type>).
--
-- The indexes are created with pgvector's defaults, m 16 and ef_construction 64: the cheapest graph to insert
-- into, and enough for recall@10 of 0.95 at the default ef_search to about 100k vectors of a type (clustered
-- 384-d data). A larger graph (m 24, ef_construction 128) costs twice as much per insert and keeps the recall
-- further: 0.995 at ef_search 100 on 300k vectors, where the default graph grown insert by insert gave 0.865
-- (docs/retrieval.md, "HNSW build parameters"). An operator changes them with `memsub vector-index
-- rebuild`: memsub.set_vector_index_build records them on the index, and the command then rebuilds it with
-- REINDEX INDEX CONCURRENTLY (which cannot run inside a function). Reads and writes go on during the rebuild.

create or replace function memsub.vector_index_builds()
returns table (embedding_type text, index_name text, m integer, ef_construction integer, index_bytes bigint,
               valid boolean)
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
    select t.embedding_type, c.relname::text,
           coalesce((select o.option_value::integer from pg_catalog.pg_options_to_table(c.reloptions) o
                      where o.option_name = 'm'), 16),
           coalesce((select o.option_value::integer from pg_catalog.pg_options_to_table(c.reloptions) o
                      where o.option_name = 'ef_construction'), 64),
           pg_catalog.pg_relation_size(c.oid),
           i.indisvalid and i.indisready
      from unnest(memsub.embedding_types()) with ordinality as t(embedding_type, n)
      join pg_catalog.pg_class c on c.oid = pg_catalog.to_regclass('memsub.idx_embeddings_vector_' || t.embedding_type)
      join pg_catalog.pg_index i on i.indexrelid = c.oid
     order by t.n
$$;
comment on function memsub.vector_index_builds() is
    'For each embedding type, its HNSW index on memory_embeddings: name, build parameters m and ef_construction '
    '(pgvector''s defaults 16 and 64 unless set by memsub.set_vector_index_build), size in bytes, and whether '
    'PostgreSQL may use it (indisvalid and indisready). A concurrent rebuild keeps the old index in use until it '
    'swaps in the new one; one that fails leaves an invalid copy named <index>_ccnew, not listed here.';

create or replace function memsub.set_vector_index_build(p_embedding_type text, p_m integer,
                                                         p_ef_construction integer)
returns text
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_index text := 'idx_embeddings_vector_' || p_embedding_type;
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
    execute format('alter index memsub.%I set (m = %s, ef_construction = %s)', v_index, p_m, p_ef_construction);
    return v_index;
end
$$;
comment on function memsub.set_vector_index_build(text, integer, integer) is
    'Records HNSW build parameters (m 2-100, ef_construction 4-1000 and at least 2 * m) on the index of an '
    'embedding type and returns the index''s name; the graph is rebuilt with them by REINDEX INDEX CONCURRENTLY '
    '(memsub vector-index rebuild). Until then only new inserts use the new ef_construction. Raises 22023 naming '
    'the field. Granted to nobody: the role that applies migrations runs it.';

revoke all on function memsub.set_vector_index_build(text, integer, integer) from public;
grant execute on function memsub.vector_index_builds() to memsub_platform_admin, memsub_analyst;
