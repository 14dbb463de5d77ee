-- memsub 2.30.0: memory_embeddings is partitioned by tenant: 16 hash partitions of tenant_id
-- (memory_embeddings_p00 ... memory_embeddings_p15), each with its own HNSW graph per embedding type.
--
-- pgvector applies the tenant condition after walking the graph. In one graph holding every tenant's vectors, a
-- tenant with a tenth of them owns one row in ten the walk reaches, so its search either reads ten times the
-- candidates or falls back to scanning the tenant exactly (docs/benchmarks.md, "100,000 vectors over 100
-- tenants": the 10-20 % tenants were scanned exactly, at a third to a half of LangGraph's throughput). A tenant's
-- rows all hash to one partition, and a search of one tenant reads only that partition's graph, which the tenant
-- shares only with the other tenants hashed there: a large tenant holds most of its own graph. Every unique key
-- leads with tenant_id, so each stays unique across partitions; the table's name, columns, keys, indexes and
-- constraints are the same, and a query through memsub.memory_embeddings reads the partitions it needs.
--
-- The partitions are reached only through memory_embeddings: its row-level security policies apply there, and
-- each partition forces row-level security with no policy of its own, so a direct read of a partition sees
-- nothing (no client role is granted one either).
--
-- The rows are copied once, in this transaction, and the indexes are built after the copy (an HNSW graph built
-- in one pass is better connected than one grown row by row, docs/benchmarks.md). A large installation wants a
-- generous maintenance_work_mem for this migration. The copy is checked by count.
--
-- The old table's row type goes with it: the function that returns it (store_embedding) is dropped here, and the
-- re-runnable SQL creates it again, with the policies, triggers and grants of the new table.

drop function if exists memsub.store_embedding(uuid, text, vector, integer, text, jsonb);

alter table memsub.memory_embeddings rename to memory_embeddings_unpartitioned;

create table memsub.memory_embeddings (
    like memsub.memory_embeddings_unpartitioned including defaults including generated including constraints
        including comments including storage including compression including statistics
) partition by hash (tenant_id);

do $partitions$
declare
    number integer;
    partition_name text;
begin
    for number in 0 .. 15 loop
        partition_name := format('memory_embeddings_p%s', pg_catalog.lpad(number::text, 2, '0'));
        execute format('create table memsub.%I partition of memsub.memory_embeddings '
                       'for values with (modulus 16, remainder %s)', partition_name, number);
        execute format('alter table memsub.%I enable row level security', partition_name);
        execute format('alter table memsub.%I force row level security', partition_name);
        execute format('comment on table memsub.%I is %L', partition_name, format(
            'Partition %s of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes '
            'to remainder %s. Read and written only through memory_embeddings (its policies apply there; a direct '
            'read of the partition sees no row).', number, number));
    end loop;
end
$partitions$;

-- Whoever runs the migration copies every row: the old table's policies would show a session without a tenant
-- context none of them (an installer that is not a superuser does not bypass row-level security). The old table
-- is dropped below; nothing else sees it in between.
alter table memsub.memory_embeddings_unpartitioned disable row level security;
insert into memsub.memory_embeddings (
    embedding_id, packet_id, embedding_type, vector, chunk_index, chunk_text, metadata, scope, created_at,
    tenant_id, org_id, user_id, correlation_id, session_id, trace_id, ttl)
select embedding_id, packet_id, embedding_type, vector, chunk_index, chunk_text, metadata, scope, created_at,
       tenant_id, org_id, user_id, correlation_id, session_id, trace_id, ttl
  from memsub.memory_embeddings_unpartitioned;
do $copied$
declare
    before bigint := (select count(*) from memsub.memory_embeddings_unpartitioned);
    after  bigint := (select count(*) from memsub.memory_embeddings);
begin
    if before <> after then
        raise exception 'memsub 2.30.0: copied % of the % rows of memory_embeddings', after, before;
    end if;
end
$copied$;

-- The build parameters (m, ef_construction) each type's HNSW index was given (memsub.set_vector_index_build).
create temporary table hnsw_build_options on commit drop as
select t.embedding_type, c.reloptions
  from pg_catalog.unnest(memsub.embedding_types()) as t(embedding_type)
  join pg_catalog.pg_class c on c.oid = pg_catalog.to_regclass('memsub.idx_embeddings_vector_' || t.embedding_type);

-- Its policies, triggers, indexes and foreign key go with it.
drop table memsub.memory_embeddings_unpartitioned;

-- The keys and indexes: each partition's first, named after the table's with the partition's suffix
-- (memory_embeddings_p03_pkey, idx_embeddings_vector_content_p03, ...); the table's own, made next, take them as
-- their parts. Each type's HNSW graphs get the build parameters its index had (memsub.set_vector_index_build).
do $indexes$
declare
    number         integer;
    suffix         text;
    partition_name text;
    space_name     text;
    options        text;
    parent         text;
    child          text;
begin
    for number in 0 .. 15 loop
        suffix := '_p' || pg_catalog.lpad(number::text, 2, '0');
        partition_name := 'memory_embeddings' || suffix;
        execute format('alter table memsub.%I add constraint %I primary key (tenant_id, embedding_id), '
                       'add constraint %I unique (tenant_id, packet_id, embedding_type, chunk_index)',
                       partition_name, partition_name || '_pkey', partition_name || '_chunk_key');
        execute format('create index %I on memsub.%I (tenant_id, embedding_type)',
                       'idx_memory_embeddings_tenant_type' || suffix, partition_name);
        execute format('create index %I on memsub.%I using gin (tenant_id, search_tsv) where chunk_text is not null',
                       'idx_memory_embeddings_search' || suffix, partition_name);
        foreach space_name in array memsub.embedding_types() loop
            options := coalesce((select ' with (' || pg_catalog.array_to_string(o.reloptions, ', ') || ')'
                                   from pg_temp.hnsw_build_options o
                                  where o.embedding_type = space_name and o.reloptions is not null), '');
            execute format('create index %I on memsub.%I using hnsw (vector vector_cosine_ops)%s '
                           'where embedding_type = %L',
                           'idx_embeddings_vector_' || space_name || suffix, partition_name, options, space_name);
        end loop;
    end loop;

    alter table memsub.memory_embeddings
        add constraint memory_embeddings_pkey primary key (tenant_id, embedding_id),
        add constraint memory_embeddings_chunk_key unique (tenant_id, packet_id, embedding_type, chunk_index),
        add constraint memory_embeddings_packet_fkey foreign key (tenant_id, packet_id)
            references memsub.packet_store (tenant_id, packet_id) on delete cascade;
    create index idx_memory_embeddings_tenant_type on only memsub.memory_embeddings (tenant_id, embedding_type);
    comment on index memsub.idx_memory_embeddings_tenant_type is
        'A tenant''s embeddings of one type: the size probe and the exact scan of memsub.semantic_search.';
    create index idx_memory_embeddings_search on only memsub.memory_embeddings using gin (tenant_id, search_tsv)
        where chunk_text is not null;
    comment on index memsub.idx_memory_embeddings_search is
        'GIN over (tenant_id, search_tsv) of the embeddings with chunk_text: one tenant''s full-text matches '
        '(btree_gin for the tenant key). memsub._keyword_candidates states chunk_text is not null to use it.';
    foreach space_name in array memsub.embedding_types() loop
        parent := 'idx_embeddings_vector_' || space_name;
        options := coalesce((select ' with (' || pg_catalog.array_to_string(o.reloptions, ', ') || ')'
                               from pg_temp.hnsw_build_options o
                              where o.embedding_type = space_name and o.reloptions is not null), '');
        execute format('create index %I on only memsub.memory_embeddings using hnsw (vector vector_cosine_ops)%s '
                       'where embedding_type = %L', parent, options, space_name);
        execute format('comment on index memsub.%I is %L', parent, format(
            'HNSW (cosine) over the %s embeddings only: one graph per partition of memory_embeddings '
            '(%s_p00 ... _p15); a search of one tenant walks its partition''s.', space_name, parent));
    end loop;
    for parent in select unnest(array['idx_memory_embeddings_tenant_type', 'idx_memory_embeddings_search']
                                || array(select 'idx_embeddings_vector_' || t from unnest(memsub.embedding_types()) t))
    loop
        for number in 0 .. 15 loop
            child := parent || '_p' || pg_catalog.lpad(number::text, 2, '0');
            execute format('alter index memsub.%I attach partition memsub.%I', parent, child);
            execute format('comment on index memsub.%I is %L', child,
                           format('The part of %s on partition %s of memory_embeddings.', parent, number));
        end loop;
    end loop;
end
$indexes$;

comment on table memsub.memory_embeddings is
    'Multi-space vectors of packets: one per (packet, embedding_type, chunk). Deleted with their packet. '
    'Partitioned by tenant_id into 16 hash partitions (memory_embeddings_p00 ... _p15), each with its own HNSW '
    'graph per embedding type.';
