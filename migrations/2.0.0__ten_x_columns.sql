-- memsub 2.0.0: the "10X" columns: scope, learned importance, access statistics, dedup hash, chunking.

alter table memsub.packet_store
    add column scope               text             not null default 'shared',
    add column importance_score    double precision not null default 0.5,
    add column access_count        integer          not null default 0,
    add column last_accessed       timestamptz,
    add column contradiction_count integer          not null default 0,
    add column content_hash        text,
    add column chunk_count         integer          not null default 0,
    add column is_chunked          boolean          not null default false,
    add constraint packet_store_scope_known check (scope in ('shared', 'cursor', 'l-private')),
    add constraint packet_store_importance_in_unit_range check (importance_score between 0 and 1),
    add constraint packet_store_access_count_non_negative check (access_count >= 0),
    add constraint packet_store_contradiction_count_non_negative check (contradiction_count >= 0),
    add constraint packet_store_chunk_count_non_negative check (chunk_count >= 0);

-- Data move: hash the content of existing packets with the same formula memsub.write_packet uses
-- (identity fields are still absent here and hash as JSON null). When several legacy packets share
-- one content, only the earliest gets the hash; the others keep NULL and are never deduplicated against.
with hashed as (
    select packet_id,
           encode(sha256(convert_to(jsonb_build_object(
               'packet_type', packet_type,
               'payload',     envelope -> 'payload',
               'thread_id',   thread_id,
               'parent_ids',  to_jsonb(array(select p from unnest(parent_ids) as p order by p)),
               'scope',       'shared',
               'org_id',      null,
               'user_id',     null,
               'session_id',  null)::text, 'UTF8')), 'hex') as content_hash
      from memsub.packet_store
), ranked as (
    select h.packet_id, h.content_hash,
           row_number() over (partition by h.content_hash order by p."timestamp", p.packet_id) as occurrence
      from hashed h join memsub.packet_store p using (packet_id)
)
update memsub.packet_store p
   set content_hash = r.content_hash
  from ranked r
 where r.packet_id = p.packet_id and r.occurrence = 1;

comment on column memsub.packet_store.scope is
    'Memory isolation scope: shared (whole tenant/org), cursor (writer and its session), l-private (writer only).';
comment on column memsub.packet_store.importance_score is 'Learned importance in [0, 1].';
comment on column memsub.packet_store.access_count is 'Retrieval counter.';
comment on column memsub.packet_store.last_accessed is 'Last time the packet was retrieved.';
comment on column memsub.packet_store.contradiction_count is 'Times the packet''s content was contradicted.';
comment on column memsub.packet_store.content_hash is
    'Deduplication hash: sha256 over packet_type, payload, thread, parents, scope and writer identity.';
comment on column memsub.packet_store.chunk_count is 'Number of chunks the content was split into.';
comment on column memsub.packet_store.is_chunked is 'Whether the content was chunked.';
