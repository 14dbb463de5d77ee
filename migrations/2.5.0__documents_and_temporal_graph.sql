-- memsub 2.5.0: documentary memory and the temporal knowledge graph (seed 003), built on the tables that
-- already hold the same concepts:
--
--   Document      -> document_index (seed 001), now one row per version: hash chain, mime, summary, ...
--   Chunk         -> document_chunks (new: positions, full text, neighbours); its vector is a memory_embeddings
--                    row of the document version's packet (chunk_index 1..), so there is one vector store
--   Edge          -> entity_relationships (seed 000) with a validity window and evidence; no two windows of
--                    one edge overlap (exclusion constraint); the seed's unique key now covers the open window
--   Entity node   -> world_model_entities (+ aliases, doc_refs)
--   Memory node   -> memory_entries (seed 001) (+ short-term flag, importance, decay state)
--   Episode node  -> sessions (timeline = created_at .. terminated_at)
--   Node (common) -> the memsub.graph_nodes view over the four (sql/420_temporal_graph.sql)
--
-- Functions, policies, grants and comments on functions live in sql/410_documents.sql, sql/420_temporal_graph.sql
-- and sql/430_memory_decay.sql.

create extension if not exists btree_gist;

-- Documents: document_index becomes the version chain ------------------------------------------------------------
-- Existing entries (written through memsub.document_index_put) become version 1 and the latest of their path.

alter table memsub.document_index
    add column version        integer   not null default 1,
    add column is_latest      boolean   not null default true,
    add column previous_id    uuid,
    add column hash           text,
    add column mime           text,
    add column summary        text,
    add column key_concepts   text[]    not null default '{}',
    add column entities       jsonb     not null default '[]',
    add column extracted_text text,
    add column packet_id      uuid,
    add column chunk_count    integer   not null default 0,
    add column superseded_at  timestamptz;

alter table memsub.document_index
    drop constraint document_index_file_path_key,
    add constraint document_index_version_key unique (tenant_id, file_path, version),
    add constraint document_index_previous_fkey foreign key (tenant_id, previous_id)
        references memsub.document_index (tenant_id, id),
    add constraint document_index_packet_fkey foreign key (tenant_id, packet_id)
        references memsub.packet_store (tenant_id, packet_id) on delete set null (packet_id),
    add constraint document_index_version_positive check (version >= 1),
    add constraint document_index_chain_consistent check ((version = 1) = (previous_id is null)),
    add constraint document_index_latest_consistent check (is_latest = (superseded_at is null)),
    add constraint document_index_hash_format check (hash ~ '^[0-9a-f]{64}$'),
    add constraint document_index_mime_known check (mime in ('pdf', 'md', 'txt')),
    add constraint document_index_entities_is_array check (jsonb_typeof(entities) = 'array'),
    add constraint document_index_chunk_count_non_negative check (chunk_count >= 0);

-- The latest pointer per path: exactly one latest version of a path per tenant. It is also the arbiter of
-- memsub.document_index_put's upsert (seed 001: one entry per path).
create unique index idx_document_index_latest on memsub.document_index (tenant_id, file_path) where is_latest;
-- Re-ingesting a file looks its hash up.
create index idx_document_index_hash on memsub.document_index (tenant_id, hash) where hash is not null;
create index idx_document_index_previous on memsub.document_index (tenant_id, previous_id) where previous_id is not null;

comment on index memsub.idx_document_index_latest is 'Latest pointer per path: one latest version of each file path per tenant.';
comment on index memsub.idx_document_index_hash is 'Finds document versions by content hash.';
comment on index memsub.idx_document_index_previous is 'Walks the version chain forward (which version replaced this one).';

comment on table memsub.document_index is
    'Documents (seed 001 document index and seed 003 Document): one row per version of a file path; versions '
    'chain by content hash (previous_id) and the latest version of a path has is_latest. Chunks are in '
    'document_chunks; their vectors in memory_embeddings under the version''s packet.';
comment on column memsub.document_index.file_path is 'Path of the document (seed 003 path), e.g. design_docs/phase1_design/schema.md. Unique per tenant among latest versions.';
comment on column memsub.document_index.embedding is 'Embedding of the document: given by memsub.document_index_put, or the mean of its chunk vectors after ingest.';
comment on column memsub.document_index.metadata is 'Free-form metadata (JSON object; seed 003 Document.metadata).';
comment on column memsub.document_index.updated_at is 'When the version was last changed (document_index_put replaces the latest version in place).';
comment on column memsub.document_index.version is 'Version of the path: 1, 2, 3, ... (a new version per changed content hash).';
comment on column memsub.document_index.is_latest is 'True for the latest version of the path (the latest pointer).';
comment on column memsub.document_index.previous_id is 'The version this one replaced (NULL for version 1): the version chain.';
comment on column memsub.document_index.hash is 'sha256 of the file''s bytes, lower-case hex (NULL for entries put without content).';
comment on column memsub.document_index.mime is 'Document kind: pdf, md or txt (seed 003 mime).';
comment on column memsub.document_index.summary is 'Short summary of the document.';
comment on column memsub.document_index.key_concepts is 'Key concepts (e.g. the headings of a Markdown file).';
comment on column memsub.document_index.entities is 'Entities mentioned: a JSON array of {type, value}.';
comment on column memsub.document_index.extracted_text is 'Text extracted from the file; chunk positions are character offsets into it.';
comment on column memsub.document_index.packet_id is 'Packet (packet_type document) that carries the version: its memory_embeddings rows are the chunk vectors.';
comment on column memsub.document_index.chunk_count is 'Number of chunks of this version.';
comment on column memsub.document_index.superseded_at is 'When a newer version of the path replaced this one (NULL while latest).';

-- Chunks ----------------------------------------------------------------------------------------------------------

create table memsub.document_chunks (
    tenant_id   uuid        not null,
    id          uuid        not null default gen_random_uuid(),
    document_id uuid        not null,
    chunk_index integer     not null,
    content     text        not null,
    page        integer,
    start_char  integer     not null,
    end_char    integer     not null,
    neighbors   uuid[]      not null default '{}',
    content_tsv tsvector    generated always as (to_tsvector('english'::regconfig, content)) stored,
    org_id      uuid,
    user_id     uuid,
    created_at  timestamptz not null default now(),
    constraint document_chunks_pkey primary key (tenant_id, id),
    constraint document_chunks_position_key unique (tenant_id, document_id, chunk_index),
    constraint document_chunks_document_fkey foreign key (tenant_id, document_id)
        references memsub.document_index (tenant_id, id),
    constraint document_chunks_chunk_index_positive check (chunk_index >= 1),
    constraint document_chunks_span_valid check (start_char >= 0 and end_char > start_char),
    constraint document_chunks_content_length check (length(content) = end_char - start_char),
    constraint document_chunks_page_positive check (page >= 1)
);
create index idx_document_chunks_tsv on memsub.document_chunks using gin (content_tsv);

comment on table memsub.document_chunks is
    'Chunks of a document version (seed 003 Chunk): contiguous character spans that cover the extracted text, '
    'with full-text search and cross-document neighbours. The vector of chunk n is the memory_embeddings row '
    '(document packet, content, chunk_index n). Written by memsub.document_ingest.';
comment on column memsub.document_chunks.tenant_id is 'Tenant owning the chunk.';
comment on column memsub.document_chunks.id is 'Chunk identifier (seed 003 chunk_id, used in DocRefs).';
comment on column memsub.document_chunks.document_id is 'Document version the chunk belongs to (document_index.id; seed 003 doc_id).';
comment on column memsub.document_chunks.chunk_index is 'Position of the chunk in its document: 1, 2, 3, ... (memory_embeddings.chunk_index of its vector).';
comment on column memsub.document_chunks.content is 'Chunk text: extracted_text from start_char to end_char.';
comment on column memsub.document_chunks.page is 'Page of a paginated document (pdf), NULL otherwise.';
comment on column memsub.document_chunks.start_char is 'Offset of the first character in the extracted text (0-based, inclusive).';
comment on column memsub.document_chunks.end_char is 'Offset after the last character (exclusive); the next chunk starts here.';
comment on column memsub.document_chunks.neighbors is 'Cross-document links: ids of the nearest chunks of other documents (by vector distance), both ways.';
comment on column memsub.document_chunks.content_tsv is 'Full-text vector of the content (english configuration), GIN-indexed.';
comment on column memsub.document_chunks.org_id is 'Organization of the document (NULL: whole tenant).';
comment on column memsub.document_chunks.user_id is 'User who ingested the document.';
comment on column memsub.document_chunks.created_at is 'When the chunk was stored.';
comment on index memsub.idx_document_chunks_tsv is 'Full-text search over chunk content.';

-- Temporal edges: entity_relationships gets a validity window and evidence --------------------------------------
-- An existing edge is valid from its first observation on, open-ended.

alter table memsub.entity_relationships
    add column valid_period tstzrange,
    add column evidence     jsonb     not null default '[]',
    add column source_type  text      not null default 'Entity',
    add column target_type  text      not null default 'Entity';
update memsub.entity_relationships set valid_period = tstzrange(first_seen, null, '[)');
alter table memsub.entity_relationships
    alter column valid_period set not null,
    alter column valid_period set default tstzrange(now(), null, '[)'),
    add constraint entity_relationships_valid_period_bounded_below
        check (not lower_inf(valid_period) and not isempty(valid_period)),
    add constraint entity_relationships_evidence_is_array check (jsonb_typeof(evidence) = 'array'),
    add constraint entity_relationships_node_types_known
        check (source_type in ('Entity', 'Episode', 'Document', 'Memory')
               and target_type in ('Entity', 'Episode', 'Document', 'Memory')),
    -- No two validity windows of one edge overlap. Deferrable (checked at the end of each statement) so that
    -- concurrent INSERT ... ON CONFLICT of one edge queue on the unique index below, the UPSERT's arbiter, and
    -- reinforce the edge instead of failing here first.
    add constraint entity_relationships_no_overlapping_windows exclude using gist (
        tenant_id with =, source_entity with =, relationship_type with =, target_entity with =,
        valid_period with &&) deferrable initially immediate;

-- The seed's unique key now holds for the open (current) window only: history rows of the same edge may exist,
-- and memsub.upsert_relationship reinforces the current one (its ON CONFLICT names this predicate).
drop index memsub.idx_entity_relationships_edge;
create unique index idx_entity_relationships_edge
    on memsub.entity_relationships (tenant_id, source_entity, relationship_type, target_entity)
    where upper_inf(valid_period);
comment on index memsub.idx_entity_relationships_edge is
    'The seed''s unique edge key, over the current (open-ended) window of each edge: the arbiter of the relationship UPSERT.';

comment on table memsub.entity_relationships is
    'Knowledge-graph edges, tenant-wide, with validity windows (seed 003 Edge): one row per window of '
    '(source, type, target), never overlapping; the open window is the current edge, reinforced by '
    'memsub.upsert_relationship; superseding closes it.';
comment on column memsub.entity_relationships.valid_period is
    'When the relationship holds: [valid from, valid until); open-ended (upper bound NULL) while current.';
comment on column memsub.entity_relationships.evidence is
    'DocRefs supporting the edge: a JSON array of {doc_id, chunk_id, score}.';
comment on column memsub.entity_relationships.source_type is 'Node type of the source: Entity (by name), Episode (session id), Document (document id) or Memory (memory entry id).';
comment on column memsub.entity_relationships.target_type is 'Node type of the target (as source_type).';

-- Entity nodes: world_model_entities gets aliases and document references -------------------------------------

alter table memsub.world_model_entities
    add column aliases  text[] not null default '{}',
    add column doc_refs jsonb  not null default '[]',
    add constraint world_model_entities_doc_refs_is_array check (jsonb_typeof(doc_refs) = 'array');
comment on column memsub.world_model_entities.aliases is 'Other names of the entity (seed 003 Entity aliases).';
comment on column memsub.world_model_entities.doc_refs is 'DocRefs where the entity is mentioned: a JSON array of {doc_id, chunk_id, score}.';

-- Memory nodes: memory_entries gets the short-term flag, importance and decay state -----------------------------
-- Seed 001 entries are long-term memory: existing rows are LTM (or Procedural for procedural memory).

alter table memsub.memory_entries
    add column short_term     boolean          not null default false,
    add column importance     double precision not null default 0.5,
    add column decay_weight   double precision not null default 1.0,
    add column last_access_ts timestamptz,
    add column promoted_at    timestamptz,
    add column memory_tier    text generated always as (
        case when memory_type = 'procedural' then 'Procedural' when short_term then 'STM' else 'LTM' end) stored,
    add constraint memory_entries_importance_in_unit_range check (importance between 0 and 1),
    add constraint memory_entries_decay_weight_positive check (decay_weight > 0),
    add constraint memory_entries_procedural_not_short_term check (not (short_term and memory_type = 'procedural'));
create index idx_memory_entries_short_term on memsub.memory_entries (tenant_id, namespace, key)
    where short_term and not is_deleted;
comment on index memsub.idx_memory_entries_short_term is 'Live short-term entries: the candidates of STM -> LTM promotion.';

comment on column memsub.memory_entries.short_term is 'True for short-term memory (STM) not yet promoted; seed 001 writes are long-term (false).';
comment on column memsub.memory_entries.importance is 'Importance in [0, 1] (seed 003 Memory importance).';
comment on column memsub.memory_entries.decay_weight is 'Strength as of last_access_ts (or created_at): each access adds 1 to the decayed strength; it halves every half-life without access.';
comment on column memsub.memory_entries.last_access_ts is 'Last recorded access (seed 003 decay_state.last_access_ts; NULL: never accessed since written).';
comment on column memsub.memory_entries.promoted_at is 'When memsub.memory_maintenance promoted the entry from STM to LTM.';
comment on column memsub.memory_entries.memory_tier is 'Seed 003 memory_type: Procedural (procedural memory), STM (short_term) or LTM.';

comment on column memsub.audit.operation is 'What happened: memory_write, memory_delete, memory_consolidate, memory_promote, session_create, session_event, session_state, session_end_turn, session_terminate, session_delete, task_create, task_finish, agent_spawn, checkpoint_save, checkpoint_restore, document_index_put, document_ingest.';
