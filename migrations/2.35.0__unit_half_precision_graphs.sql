-- memsub 2.35.0: the HNSW graphs of memory_embeddings hold each vector scaled to length 1, in half precision,
-- compared by inner product: halfvec_ip_ops over l2_normalize(vector)::halfvec(<vector_dimension>), one graph
-- per partition and embedding type as before (idx_embeddings_vector_<type>, _p00 ... _p15).
--
-- For vectors of length 1 the inner product orders neighbours as the cosine distance does, and costs one sum of
-- products where a cosine distance also computes two norms. Half precision holds the components of a unit vector
-- (at most 1 in magnitude) and halves the graph: about 1,170 bytes a row at 384 dimensions instead of 2,050. On
-- the same 100k clustered rows an insert cost 0.79 of the server CPU and a walk about 0.55 of the time, at the
-- same recall (docs/benchmarks.md, "Graphs of unit vectors in half precision"). The table keeps every vector as
-- written: searches order their candidates by, and report, the cosine distance of the full vectors
-- (memsub._vector_graph_order gives the statements the graph's key).
--
-- Every graph is built again, with the build parameters its index had (memsub.set_vector_index_build). A large
-- installation wants a generous maintenance_work_mem for this migration.

create temporary table hnsw_build_options on commit drop as
select p.relname as partition_index, p.reloptions
  from pg_catalog.unnest(memsub.embedding_types()) as t(embedding_type)
  join pg_catalog.pg_class c on c.oid = pg_catalog.to_regclass('memsub.idx_embeddings_vector_' || t.embedding_type)
  join pg_catalog.pg_inherits h on h.inhparent = c.oid
  join pg_catalog.pg_class p on p.oid = h.inhrelid;

do $graphs$
declare
    dimension  integer := (select s.value::integer from memsub.installation_settings s
                            where s.name = 'vector_dimension');
    space_name text;
    parent     text;
    child      text;
    number     integer;
    options    text;
    graph_key  text;
begin
    graph_key := format('(l2_normalize(vector)::halfvec(%s)) halfvec_ip_ops', dimension);
    foreach space_name in array memsub.embedding_types() loop
        parent := 'idx_embeddings_vector_' || space_name;
        execute format('drop index memsub.%I', parent);
        execute format('create index %I on only memsub.memory_embeddings using hnsw (%s) where embedding_type = %L',
                       parent, graph_key, space_name);
        execute format('comment on index memsub.%I is %L', parent, format(
            'HNSW over the %s embeddings only, of each vector scaled to length 1 in half precision (inner '
            'product): one graph per partition of memory_embeddings (%s_p00 ... _p15); a search of one tenant '
            'walks its partition''s.', space_name, parent));
        for number in 0 .. 15 loop
            child := parent || '_p' || pg_catalog.lpad(number::text, 2, '0');
            options := coalesce((select ' with (' || pg_catalog.array_to_string(o.reloptions, ', ') || ')'
                                   from pg_temp.hnsw_build_options o
                                  where o.partition_index = child and o.reloptions is not null), '');
            execute format('create index %I on memsub.%I using hnsw (%s)%s where embedding_type = %L',
                           child, 'memory_embeddings_p' || pg_catalog.lpad(number::text, 2, '0'), graph_key,
                           options, space_name);
            execute format('alter index memsub.%I attach partition memsub.%I', parent, child);
            execute format('comment on index memsub.%I is %L', child,
                           format('The part of %s on partition %s of memory_embeddings.', parent, number));
        end loop;
    end loop;
end
$graphs$;
