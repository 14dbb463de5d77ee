-- memsub 2.47.0: two materialized views hold what holds now, whoever refreshes them.
--
-- * mv_agent_recent_important: "recent" is the 720 hours (30 × 24 h) before the refresh. It was
--   now() - interval '30 days', which timestamptz arithmetic takes as 30 calendar days in the refreshing
--   session's TimeZone: 719 or 721 hours when a change of summer time falls within them, so the rows of a refresh
--   depended on the TimeZone of whoever ran it. The recency term of combined_score already counted 30 × 86,400 s;
--   it is now at most 1, as for a packet of the moment of the refresh: a packet dated later (the writer gives the
--   timestamp) scored above 1 (176 for one dated 2099) and outranked every other packet of its agent.
-- * mv_entity_graph: the edges whose validity window contains the moment of the refresh, as every graph read
--   means "now" (traverse_graph, entity_neighbourhood, graph_neighbors). It held open-ended windows only, so an
--   edge valid now whose end is already known (temporal_edge_add with valid_until, close_relationship or
--   supersede_relationship at a later time) was missing while the reads still followed it. The new column
--   valid_until is the earliest end among the windows a row is made of (NULL: none ends), and
--   memsub.tenant_entity_graph (sql/950_materialized_views.sql) drops the row once it has passed, as it drops
--   expired rows. A window closed after the refresh leaves the view at the next refresh.
--
-- Both are rebuilt from their latest definitions (2.19.0; mv_entity_graph re-created unchanged by 2.38.0) with
-- these changes, empty; sql/950_materialized_views.sql, applied after the migrations, re-creates the tenant_* views
-- over them (dropped here with them) and populates them.

drop materialized view memsub.mv_agent_recent_important cascade;
drop materialized view memsub.mv_entity_graph cascade;

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
              + 0.2 * greatest(0.0, least(1.0, 1.0 - extract(epoch from now() - p."timestamp") / (30 * 86400))))::numeric,
             6)::double precision as combined_score
  from memsub.packet_store p
 where p."timestamp" >= now() - interval '720 hours'
   and p.importance_score >= 0.7
   and p.routing ->> 'agent' is not null
   and (p.ttl is null or p.ttl > (now() at time zone 'UTC'))
with no data;
create unique index mv_agent_recent_important_key on memsub.mv_agent_recent_important (tenant_id, packet_id);
create index mv_agent_recent_important_agent
    on memsub.mv_agent_recent_important (tenant_id, agent_id, combined_score desc);
comment on materialized view memsub.mv_agent_recent_important is
    'Recent (the 720 hours before the refresh, whatever the TimeZone) high-importance (>= 0.7) packets per agent '
    '(routing.agent) with a combined score: 0.6 importance + 0.2 access (log scale, saturating at 100) + 0.2 '
    'recency (1 for a packet of the refresh''s moment or later); expires_at is the packet''s expiry. Clients read memsub.tenant_agent_recent_important, which drops '
    'expired rows at read time.';
comment on index memsub.mv_agent_recent_important_key is 'Unique key of the view (needed by REFRESH ... CONCURRENTLY).';
comment on index memsub.mv_agent_recent_important_agent is 'An agent''s packets, best combined score first.';

create materialized view memsub.mv_entity_graph as
select r.tenant_id,
       min(r.ttl) at time zone 'UTC' as expires_at,
       min(upper(r.valid_period)) as valid_until,
       r.source_key as source_entity,
       r.relationship_type,
       r.target_key as target_entity,
       sum(r.mention_count)::bigint as total_mentions,
       max(r.confidence) as max_confidence,
       avg(r.confidence) as avg_confidence,
       max(r.last_seen) as last_seen,
       count(*)::bigint as relationship_count
  from memsub.entity_relationships r
 where r.valid_period @> now()
   and (r.ttl is null or r.ttl > (now() at time zone 'UTC'))
 group by r.tenant_id, r.source_key, r.relationship_type, r.target_key
with no data;
create unique index mv_entity_graph_key
    on memsub.mv_entity_graph (tenant_id, source_entity, relationship_type, target_entity);
comment on materialized view memsub.mv_entity_graph is
    'The knowledge graph valid at the refresh (edges whose validity window contains it) per tenant, entity names '
    'in their matching form (memsub.normalize_text); expires_at is the earliest expiry and valid_until the '
    'earliest end of window among the merged edges. Clients read memsub.tenant_entity_graph, which drops a row at '
    'read time once either has passed (until the next refresh recomputes it).';
comment on index memsub.mv_entity_graph_key is 'Unique key of the view (needed by REFRESH ... CONCURRENTLY).';

alter materialized view memsub.mv_agent_recent_important owner to memsub_view_owner;
alter materialized view memsub.mv_entity_graph owner to memsub_view_owner;
