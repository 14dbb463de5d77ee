-- memsub 2.13.0: one entity-name normalization for the knowledge graph, and vectors and full text for
-- namespaced memory and graph entities.
--
-- Entity names: an edge is identified by the matching form of its entity names (trimmed, lower case, inner
-- whitespace collapsed: memsub.normalize_text), as mv_entity_graph already grouped them. The names stay as first
-- written (for display); source_key and target_key hold the matching form, and the unique key, the exclusion
-- constraint and the lookups use them. Edges written before this version whose names differed only in case or
-- spacing are merged here: overlapping windows of one edge become one window (observations added up, confidence
-- combined as independent evidence, evidence merged, the earliest row and its spelling kept).

-- The expression is memsub.normalize_text's (sql/ functions are not installed yet when a fresh database reaches
-- this migration); a test checks that both agree.
alter table memsub.entity_relationships
    add column source_key text generated always as (lower(regexp_replace(btrim(source_entity), '\s+', ' ', 'g'))) stored,
    add column target_key text generated always as (lower(regexp_replace(btrim(target_entity), '\s+', ' ', 'g'))) stored;
comment on column memsub.entity_relationships.source_key is 'Matching form of source_entity (memsub.normalize_text): edges and lookups compare these.';
comment on column memsub.entity_relationships.target_key is 'Matching form of target_entity (memsub.normalize_text).';

-- Merge windows of one edge (by matching form) that overlap: islands of windows ordered by their start.
create temporary table edge_islands on commit drop as
with ordered as (
    select r.tenant_id, r.relationship_id, r.source_key, r.relationship_type, r.target_key, r.valid_period,
           r.first_seen,
           max(coalesce(upper(r.valid_period), 'infinity'::timestamptz)) over (
               partition by r.tenant_id, r.source_key, r.relationship_type, r.target_key
               order by lower(r.valid_period), r.first_seen, r.relationship_id
               rows between unbounded preceding and 1 preceding) as reach_before
      from memsub.entity_relationships r
), marked as (
    select o.*, case when o.reach_before is null or lower(o.valid_period) >= o.reach_before then 1 else 0 end
                    as starts_island
      from ordered o
)
select m.tenant_id, m.relationship_id,
       sum(m.starts_island) over (
           partition by m.tenant_id, m.source_key, m.relationship_type, m.target_key
           order by lower(m.valid_period), m.first_seen, m.relationship_id) as island,
       m.source_key, m.relationship_type, m.target_key, m.valid_period, m.first_seen
  from marked m;

create temporary table edge_merges on commit drop as
select i.tenant_id,
       (array_agg(i.relationship_id order by lower(i.valid_period), i.first_seen, i.relationship_id))[1] as keep_id,
       array_agg(i.relationship_id) as ids,
       tstzrange(min(lower(i.valid_period)),
                 case when bool_or(upper_inf(i.valid_period)) then null else max(upper(i.valid_period)) end,
                 '[)') as merged_period
  from edge_islands i
 group by i.tenant_id, i.source_key, i.relationship_type, i.target_key, i.island
having count(*) > 1;

alter table memsub.entity_relationships drop constraint entity_relationships_no_overlapping_windows;

update memsub.entity_relationships r
   set valid_period = m.merged_period,
       mention_count = a.mentions,
       confidence = a.confidence,
       first_seen = a.first_seen,
       last_seen = a.last_seen,
       evidence = a.evidence,
       source_packet = coalesce(r.source_packet, a.source_packet)
  from edge_merges m
  cross join lateral (
      select sum(o.mention_count)::integer as mentions,
             round((1 - exp(sum(ln(greatest(1 - o.confidence, 1e-12)))))::numeric, 12)::double precision
                 as confidence,
             min(o.first_seen) as first_seen, max(o.last_seen) as last_seen,
             (select coalesce(jsonb_agg(distinct e), '[]') from memsub.entity_relationships x,
                     jsonb_array_elements(x.evidence) e
               where x.tenant_id = m.tenant_id and x.relationship_id = any(m.ids)) as evidence,
             (array_agg(o.source_packet order by o.first_seen) filter (where o.source_packet is not null))[1]
                 as source_packet
        from memsub.entity_relationships o
       where o.tenant_id = m.tenant_id and o.relationship_id = any(m.ids)
  ) a
 where r.tenant_id = m.tenant_id and r.relationship_id = m.keep_id;

delete from memsub.entity_relationships r
 using edge_merges m
 where r.tenant_id = m.tenant_id and r.relationship_id = any(m.ids) and r.relationship_id <> m.keep_id;

alter table memsub.entity_relationships
    add constraint entity_relationships_no_overlapping_windows exclude using gist (
        tenant_id with =, source_key with =, relationship_type with =, target_key with =,
        valid_period with &&) deferrable initially immediate;

drop index memsub.idx_entity_relationships_edge;
create unique index idx_entity_relationships_edge
    on memsub.entity_relationships (tenant_id, source_key, relationship_type, target_key)
    where upper_inf(valid_period);
comment on index memsub.idx_entity_relationships_edge is
    'The seed''s unique edge key over the matching form of the entity names, for the current (open-ended) window '
    'of each edge: the arbiter of the relationship UPSERT.';
drop index memsub.idx_entity_relationships_target;
create index idx_entity_relationships_target on memsub.entity_relationships (tenant_id, target_key);
comment on index memsub.idx_entity_relationships_target is 'Incoming edges of an entity (by matching form).';

-- Entities are found by the matching form of their name or of one of their aliases (alias_keys, kept by
-- memsub.graph_upsert_entity, the only writer of aliases).
alter table memsub.world_model_entities add column alias_keys text[] not null default '{}';
comment on column memsub.world_model_entities.alias_keys is 'Matching forms of the aliases (memsub.normalize_text), for alias lookups.';
update memsub.world_model_entities w
   set alias_keys = array(select distinct lower(regexp_replace(btrim(a), '\s+', ' ', 'g')) from unnest(w.aliases) as a
                           where btrim(a) <> '' order by 1)
 where cardinality(w.aliases) > 0;
create index idx_world_model_entities_key
    on memsub.world_model_entities (tenant_id, (lower(regexp_replace(btrim(entity_id), '\s+', ' ', 'g'))));
comment on index memsub.idx_world_model_entities_key is 'Finds an entity by the matching form of its name (memsub.normalize_text).';
-- fastupdate off: a lookup never scans a pending list (entity writes are rare, lookups run once per traversal step).
create index idx_world_model_entities_alias_keys on memsub.world_model_entities using gin (alias_keys)
    with (fastupdate = off);
comment on index memsub.idx_world_model_entities_alias_keys is 'Finds an entity by the matching form of one of its aliases.';

-- mv_entity_graph: the same matching form, and the current graph (windows open when refreshed) only.
drop materialized view memsub.mv_entity_graph cascade;  -- memsub.tenant_entity_graph is re-created by sql/180
create materialized view memsub.mv_entity_graph as
select r.tenant_id,
       r.source_key as source_entity,
       r.relationship_type,
       r.target_key as target_entity,
       sum(r.mention_count)::bigint as total_mentions,
       max(r.confidence) as max_confidence,
       avg(r.confidence) as avg_confidence,
       max(r.last_seen) as last_seen,
       count(*)::bigint as relationship_count
  from memsub.entity_relationships r
 where upper_inf(r.valid_period) and lower(r.valid_period) <= now()
 group by r.tenant_id, r.source_key, r.relationship_type, r.target_key
with no data;
create unique index mv_entity_graph_key
    on memsub.mv_entity_graph (tenant_id, source_entity, relationship_type, target_entity);
comment on materialized view memsub.mv_entity_graph is
    'The current knowledge graph (edges whose window is open when the view is refreshed) per tenant, entity names '
    'in their matching form (memsub.normalize_text). Tenant roles: memsub.tenant_entity_graph.';
comment on index memsub.mv_entity_graph_key is 'Unique key of the view (needed by REFRESH ... CONCURRENTLY).';
alter materialized view memsub.mv_entity_graph owner to memsub_view_owner;

-- Vectors and full text for namespaced memory and entities ----------------------------------------------------

alter table memsub.memory_entries
    add column embedding  vector,
    add column search_tsv tsvector generated always as (
        setweight(to_tsvector('english'::regconfig, replace(key, '_', ' ')), 'A')
        || jsonb_to_tsvector('english'::regconfig, coalesce(value, 'null'::jsonb), '["string"]')) stored;
comment on column memsub.memory_entries.embedding is 'Embedding of the entry (dimension: installation_settings.vector_dimension), given by the writer; NULL when written without one.';
comment on column memsub.memory_entries.search_tsv is 'Full-text vector of the key (weight A) and the strings of the value (english configuration).';

alter table memsub.world_model_entities add column embedding vector;
comment on column memsub.world_model_entities.embedding is 'Embedding of the entity (seed 003 Node.embedding; dimension: installation_settings.vector_dimension), NULL when none was given.';

do $vectors$
declare
    dimension integer := (select value::integer from memsub.installation_settings where name = 'vector_dimension');
begin
    execute format('alter table memsub.memory_entries alter column embedding type vector(%s)', dimension);
    execute format('alter table memsub.world_model_entities alter column embedding type vector(%s)', dimension);
end
$vectors$;

-- Partial HNSW indexes: only live entries and entities that carry a vector enter the graphs.
create index idx_memory_entries_embedding on memsub.memory_entries using hnsw (embedding vector_cosine_ops)
    where embedding is not null and not is_deleted;
comment on index memsub.idx_memory_entries_embedding is 'HNSW (cosine) over the live memory entries that carry an embedding.';
create index idx_memory_entries_search on memsub.memory_entries using gin (search_tsv) where not is_deleted;
comment on index memsub.idx_memory_entries_search is 'Full-text search over live memory entries.';
create index idx_world_model_entities_embedding on memsub.world_model_entities
    using hnsw (embedding vector_cosine_ops) where embedding is not null;
comment on index memsub.idx_world_model_entities_embedding is 'HNSW (cosine) over the entities that carry an embedding.';
