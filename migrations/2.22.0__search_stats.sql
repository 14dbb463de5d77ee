-- What semantic_search needs to choose between an exact scan and the HNSW walk without probing the tenant's rows
-- on every call: per tenant and embedding type, how many rows it holds, how many rows the type's index holds, and
-- the recall@10 the HNSW walk reached on a sample of queries at the ef_search the search derives for that share.
-- Refreshed by memsub.tune_search() (the maintenance job's tune_search task); read by every search.

create table memsub.search_stats (
    tenant_id      uuid             not null,
    embedding_type text             not null,
    row_count      bigint           not null,
    type_rows      bigint           not null,
    ef_search      integer,
    recall         double precision,
    samples        integer          not null default 0,
    measured_at    timestamptz      not null default now(),
    constraint search_stats_pkey primary key (tenant_id, embedding_type),
    constraint search_stats_counts_non_negative check (row_count >= 0 and type_rows >= 0),
    constraint search_stats_recall_unit check (recall is null or (recall >= 0 and recall <= 1))
);
comment on table memsub.search_stats is
    'Per tenant and embedding type: row counts and the measured recall of the HNSW walk, written by '
    'memsub.tune_search() and read by memsub.semantic_search to choose exact or approximate search.';
comment on column memsub.search_stats.tenant_id is 'Tenant (row-level security).';
comment on column memsub.search_stats.embedding_type is 'Vector space: content, context, entity, summary or reasoning.';
comment on column memsub.search_stats.row_count is 'Embeddings of this type the tenant held when measured.';
comment on column memsub.search_stats.type_rows is 'Embeddings of this type of all tenants (the HNSW index) when measured.';
comment on column memsub.search_stats.ef_search is 'hnsw.ef_search the recall was measured at (NULL: not measured).';
comment on column memsub.search_stats.recall is
    'Mean recall@10 of the HNSW walk against the exact scan over the sample queries (NULL: not measured: the '
    'exact scan is cheaper for this tenant).';
comment on column memsub.search_stats.samples is 'Sample queries the recall was measured on.';
comment on column memsub.search_stats.measured_at is 'When the row was written.';
