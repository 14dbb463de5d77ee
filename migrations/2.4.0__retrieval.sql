-- memsub 2.4.0: the retrieval pipeline of seed 000 (semantic, hybrid and graph retrieval, access log and
-- importance learning). Run-once objects only; the functions are in sql/3NN_*.sql.

-- btree_gin lets one GIN index hold (tenant_id, search_tsv), so the keyword leg finds a tenant's matches
-- without reading every tenant's postings. It is a trusted extension (no superuser needed).
create extension if not exists btree_gin;

-- The keyword leg of hybrid search cannot use the GIN index under row-level security (tsvector @@ is not
-- LEAKPROOF, so the planner may not evaluate it before the policies). Its function is owned by this role,
-- which bypasses row-level security and applies the same predicates explicitly (docs/decisions.md).
do $role$
begin
    if not exists (select from pg_catalog.pg_roles where rolname = 'memsub_retrieval_owner') then
        begin
            create role memsub_retrieval_owner nologin bypassrls;
        exception when duplicate_object or unique_violation then
            null;  -- created concurrently by a migrator working on another database of this cluster
        end;
    end if;
end
$role$;
comment on role memsub_retrieval_owner is
    'memsub: owns the retrieval functions that apply the tenant predicates explicitly (keyword leg, importance '
    'learning); bypasses row-level security. Cannot log in; grant it to nobody.';

-- Full-text search over the stored chunk text. Generated, so every write path keeps it current.
alter table memsub.memory_embeddings
    add column search_tsv tsvector
        generated always as (to_tsvector('english'::regconfig, coalesce(chunk_text, ''))) stored;
comment on column memsub.memory_embeddings.search_tsv is
    'Full-text vector of chunk_text (english configuration), generated; the keyword leg of memsub.hybrid_search.';
create index idx_memory_embeddings_search on memsub.memory_embeddings using gin (tenant_id, search_tsv);
comment on index memsub.idx_memory_embeddings_search is
    'GIN over (tenant_id, search_tsv): one tenant''s full-text matches (btree_gin for the tenant key).';

-- How many rows of one type a tenant holds decides exact scan against HNSW in memsub.semantic_search.
create index idx_memory_embeddings_tenant_type on memsub.memory_embeddings (tenant_id, embedding_type);
comment on index memsub.idx_memory_embeddings_tenant_type is
    'A tenant''s embeddings of one type: the size probe and the exact scan of memsub.semantic_search.';

-- Importance learning reads each access once for frequency and each feedback once.
alter table memsub.memory_access_log
    add column feedback_at         timestamptz,
    add column counted_at          timestamptz,
    add column feedback_learned_at timestamptz;
comment on column memsub.memory_access_log.feedback_at is 'When was_useful was last given (memsub.record_feedback).';
comment on column memsub.memory_access_log.counted_at is
    'When memsub.learn_importance folded this access into the target''s importance (NULL: not yet).';
comment on column memsub.memory_access_log.feedback_learned_at is
    'When memsub.learn_importance folded this access''s feedback into the importance (NULL: not yet or no feedback).';
create index idx_memory_access_log_unlearned on memsub.memory_access_log (tenant_id, target_type, target_id)
    where counted_at is null or (was_useful is not null and feedback_learned_at is null);
comment on index memsub.idx_memory_access_log_unlearned is 'Accesses and feedback importance learning has not read yet.';

create table memsub.importance_learning_runs (
    run_id            uuid             not null default gen_random_uuid(),
    tenant_id         uuid             not null,
    started_at        timestamptz      not null,
    finished_at       timestamptz      not null,
    accesses_counted  integer          not null,
    feedback_learned  integer          not null,
    targets_updated   integer          not null,
    targets_decayed   integer          not null,
    decay_factor      double precision not null,
    parameters        jsonb            not null,
    constraint importance_learning_runs_pkey primary key (tenant_id, run_id),
    constraint importance_learning_runs_decay_in_unit_range check (decay_factor between 0 and 1)
);
create index idx_importance_learning_runs_time on memsub.importance_learning_runs (tenant_id, finished_at desc);
comment on table memsub.importance_learning_runs is
    'What each memsub.learn_importance run did for a tenant; the latest row is the start of the next decay interval.';
comment on column memsub.importance_learning_runs.run_id is 'Run identifier.';
comment on column memsub.importance_learning_runs.tenant_id is 'Tenant the run learned for.';
comment on column memsub.importance_learning_runs.started_at is 'Start of the run (its transaction time).';
comment on column memsub.importance_learning_runs.finished_at is 'End of the run.';
comment on column memsub.importance_learning_runs.accesses_counted is 'Accesses folded in as frequency.';
comment on column memsub.importance_learning_runs.feedback_learned is 'Feedback (useful / not useful) folded in.';
comment on column memsub.importance_learning_runs.targets_updated is 'Packets and legacy memories whose importance moved by access or feedback.';
comment on column memsub.importance_learning_runs.targets_decayed is 'Idle packets and legacy memories whose importance decayed.';
comment on column memsub.importance_learning_runs.decay_factor is 'Factor applied to (importance - floor) of idle memories in this run.';
comment on column memsub.importance_learning_runs.parameters is 'Learning parameters of the run (rates, half-life, floor, idle window).';

-- The candidate rows semantic search collects before it returns or records them.
create type memsub.retrieval_candidate as (
    tenant_id        uuid,
    embedding_id     uuid,
    packet_id        uuid,
    chunk_index      integer,
    chunk_text       text,
    distance         double precision,
    importance_score double precision,
    last_active      timestamptz
);
comment on type memsub.retrieval_candidate is 'One nearest-neighbour candidate of memsub.semantic_search (internal).';
