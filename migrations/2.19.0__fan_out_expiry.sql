-- memsub 2.19.0: expiry reaches every row derived from a packet, and the materialized views carry it.
--
-- * ttl on agent_memory_events, reasoning_traces, knowledge_facts and entity_relationships: the expiry of the
--   packet the row came from (UTC, like packet_store.ttl), copied when the row is written, so the not_expired
--   policies hide the row at the instant the packet expires without a join. Facts and relationships are
--   reinforced by many assertions: theirs is the latest expiry of the packets supporting them, NULL (never) as
--   soon as one assertion did not come from an expiring packet.
-- * reflection_store.expires_at of a reflection recorded from an expiring packet is at most the packet's ttl.
-- * The four materialized views are rebuilt (from their latest definitions: 2.2.0, and 2.13.0 for
--   mv_entity_graph) with an expires_at column (the earliest expiry among the rows a view row is made of) and
--   without rows already expired at refresh time; the views clients read filter on it at read time
--   (sql/180_materialized_views.sql).

-- Derived rows --------------------------------------------------------------------------------------------------------
alter table memsub.agent_memory_events add column ttl timestamp;
alter table memsub.reasoning_traces add column ttl timestamp;
alter table memsub.knowledge_facts add column ttl timestamp;
alter table memsub.entity_relationships add column ttl timestamp;

update memsub.agent_memory_events e set ttl = p.ttl
  from memsub.packet_store p
 where p.tenant_id = e.tenant_id and p.packet_id = e.packet_id and p.ttl is not null;
update memsub.reasoning_traces t set ttl = p.ttl
  from memsub.packet_store p
 where p.tenant_id = t.tenant_id and p.packet_id = t.packet_id and p.ttl is not null;
-- Knowledge supported by its first packet alone expires with it; with more support the other packets are not
-- recorded, so it is kept.
update memsub.knowledge_facts f set ttl = p.ttl
  from memsub.packet_store p
 where p.tenant_id = f.tenant_id and p.packet_id = f.source_packet and p.ttl is not null
   and f.supporting_packet_count = 1;
update memsub.entity_relationships r set ttl = p.ttl
  from memsub.packet_store p
 where p.tenant_id = r.tenant_id and p.packet_id = r.source_packet and p.ttl is not null
   and r.mention_count = 1;
update memsub.reflection_store r set expires_at = least(r.expires_at, p.ttl at time zone 'UTC')
  from memsub.packet_store p
 where p.tenant_id = r.tenant_id and p.packet_id = r.source_packet and p.ttl is not null;

comment on column memsub.agent_memory_events.ttl is
    'Expiration time (UTC) of the packet the event is linked to, copied from packet_store.ttl; an expired event is '
    'never read and purge_expired() deletes it.';
comment on column memsub.reasoning_traces.ttl is
    'Expiration time (UTC) of the packet the trace belongs to, copied from packet_store.ttl; an expired trace is '
    'never read and purge_expired() deletes it.';
comment on column memsub.knowledge_facts.ttl is
    'Expiration time (UTC): the latest ttl of the packets that asserted the fact, NULL (never) once one assertion '
    'came without an expiring packet. An expired fact is never read and purge_expired() deletes it.';
comment on column memsub.entity_relationships.ttl is
    'Expiration time (UTC): the latest ttl of the packets that observed the edge window, NULL (never) once one '
    'observation came without an expiring packet. An expired window is never read and purge_expired() deletes it.';

create index idx_agent_memory_events_ttl on memsub.agent_memory_events (ttl) where ttl is not null;
create index idx_reasoning_traces_ttl on memsub.reasoning_traces (ttl) where ttl is not null;
create index idx_knowledge_facts_ttl on memsub.knowledge_facts (ttl) where ttl is not null;
create index idx_entity_relationships_ttl on memsub.entity_relationships (ttl) where ttl is not null;
create index idx_reflection_store_expires_at on memsub.reflection_store (expires_at) where expires_at is not null;
comment on index memsub.idx_agent_memory_events_ttl is 'Expired events for purge_expired().';
comment on index memsub.idx_reasoning_traces_ttl is 'Expired traces for purge_expired().';
comment on index memsub.idx_knowledge_facts_ttl is 'Expired facts for purge_expired().';
comment on index memsub.idx_entity_relationships_ttl is 'Expired edge windows for purge_expired().';
comment on index memsub.idx_reflection_store_expires_at is 'Expired reflections for purge_expired().';

-- Materialized views with their expiry ----------------------------------------------------------------------------
-- The tenant_* views (sql/180) depend on them and are recreated by that file.
drop materialized view memsub.mv_agent_recent_important cascade;
drop materialized view memsub.mv_entity_graph cascade;
drop materialized view memsub.mv_high_confidence_facts cascade;
drop materialized view memsub.mv_reflection_patterns cascade;

create materialized view memsub.mv_agent_recent_important as
select p.tenant_id,
       p.org_id,
       p.user_id,
       p.session_id,
       p.ttl at time zone 'UTC' as expires_at,
       p.routing ->> 'agent' as agent_id,
       p.packet_id,
       p.packet_type,
       p."timestamp",
       p.importance_score,
       p.access_count,
       p.tags,
       p.scope,
       round((0.6 * p.importance_score
              + 0.2 * least(1.0, ln(1 + p.access_count) / ln(101))
              + 0.2 * greatest(0.0, 1.0 - extract(epoch from now() - p."timestamp") / (30 * 86400)))::numeric,
             6)::double precision as combined_score
  from memsub.packet_store p
 where p."timestamp" >= now() - interval '30 days'
   and p.importance_score >= 0.7
   and p.routing ->> 'agent' is not null
   and (p.ttl is null or p.ttl > (now() at time zone 'UTC'))
with no data;
create unique index mv_agent_recent_important_key on memsub.mv_agent_recent_important (tenant_id, packet_id);
create index mv_agent_recent_important_agent
    on memsub.mv_agent_recent_important (tenant_id, agent_id, combined_score desc);
comment on materialized view memsub.mv_agent_recent_important is
    'Recent (30 days) high-importance (>= 0.7) packets per agent (routing.agent) with a combined score: '
    '0.6 importance + 0.2 access (log scale, saturating at 100) + 0.2 recency; expires_at is the packet''s expiry. '
    'Clients read memsub.tenant_agent_recent_important, which drops expired rows at read time.';

create materialized view memsub.mv_entity_graph as
select r.tenant_id,
       min(r.ttl) at time zone 'UTC' as expires_at,
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
   and (r.ttl is null or r.ttl > (now() at time zone 'UTC'))
 group by r.tenant_id, r.source_key, r.relationship_type, r.target_key
with no data;
create unique index mv_entity_graph_key
    on memsub.mv_entity_graph (tenant_id, source_entity, relationship_type, target_entity);
comment on materialized view memsub.mv_entity_graph is
    'The current knowledge graph (edges whose window is open when the view is refreshed) per tenant, entity names '
    'in their matching form (memsub.normalize_text); expires_at is the earliest expiry among the merged edges. '
    'Clients read memsub.tenant_entity_graph, which drops a row at read time once expires_at has passed (until the '
    'next refresh recomputes it without the expired edge).';
comment on index memsub.mv_entity_graph_key is 'Unique key of the view (needed by REFRESH ... CONCURRENTLY).';

create materialized view memsub.mv_high_confidence_facts as
select f.tenant_id,
       f.ttl at time zone 'UTC' as expires_at,
       f.fact_id,
       f.subject,
       f.subject_normalized,
       f.predicate,
       f.object,
       f.confidence,
       f.supporting_packet_count,
       f.access_count,
       round((0.6 * f.confidence
              + 0.25 * least(1.0, ln(1 + f.supporting_packet_count) / ln(11))
              + 0.15 * least(1.0, ln(1 + f.access_count) / ln(101)))::numeric, 6)::double precision
           as combined_score
  from memsub.knowledge_facts f
 where f.confidence >= 0.6
   and f.contradiction_count < 3
   and (f.ttl is null or f.ttl > (now() at time zone 'UTC'))
with no data;
create unique index mv_high_confidence_facts_key on memsub.mv_high_confidence_facts (tenant_id, fact_id);
create index mv_high_confidence_facts_subject
    on memsub.mv_high_confidence_facts (tenant_id, subject_normalized, predicate);
comment on materialized view memsub.mv_high_confidence_facts is
    'Facts with confidence >= 0.6 and fewer than 3 contradictions, with a combined score: 0.6 confidence '
    '+ 0.25 support (log scale, saturating at 10) + 0.15 access (saturating at 100); expires_at is the fact''s '
    'expiry. Clients read memsub.tenant_high_confidence_facts, which drops expired rows at read time.';

create materialized view memsub.mv_reflection_patterns as
with live as (
    select r.* from memsub.reflection_store r where r.expires_at is null or r.expires_at > now()
), stats as (
    select l.tenant_id, l.org_id, l.reflection_type, count(*)::bigint as count,
           avg(l.confidence) as avg_confidence, max(l.created_at) as latest, min(l.expires_at) as expires_at
      from live l
     group by l.tenant_id, l.org_id, l.reflection_type
), tag_sets as (
    select l.tenant_id, l.org_id, l.reflection_type, array_agg(distinct t.tag order by t.tag) as all_tags
      from live l cross join lateral unnest(l.tags) as t(tag)
     group by l.tenant_id, l.org_id, l.reflection_type
)
select s.tenant_id,
       s.org_id,
       s.expires_at,
       s.reflection_type,
       s.count,
       s.avg_confidence,
       coalesce(t.all_tags, '{}') as all_tags,
       s.latest
  from stats s
  left join tag_sets t on t.tenant_id = s.tenant_id and t.org_id is not distinct from s.org_id
                      and t.reflection_type = s.reflection_type
with no data;
create unique index mv_reflection_patterns_key
    on memsub.mv_reflection_patterns (tenant_id, org_id, reflection_type) nulls not distinct;
comment on materialized view memsub.mv_reflection_patterns is
    'Unexpired reflections per tenant, organization and type: count, average confidence, all tags, latest; '
    'expires_at is the earliest expiry among them. Clients read memsub.tenant_reflection_patterns, which drops a '
    'row at read time once expires_at has passed (until the next refresh recomputes it).';

alter materialized view memsub.mv_agent_recent_important owner to memsub_view_owner;
alter materialized view memsub.mv_entity_graph owner to memsub_view_owner;
alter materialized view memsub.mv_high_confidence_facts owner to memsub_view_owner;
alter materialized view memsub.mv_reflection_patterns owner to memsub_view_owner;
