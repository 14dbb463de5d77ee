-- memsub 2.48.0: the materialized views hold the same rows whoever refreshes them.
--
-- * mv_agent_recent_important: "recent" is the 720 hours (30 × 24 h) before the refresh. It was
--   now() - interval '30 days', which timestamptz arithmetic takes as 30 calendar days in the refreshing
--   session's TimeZone: 719 or 721 hours when a change of summer time falls within them, so the rows of a refresh
--   depended on the TimeZone of whoever ran it. The recency term of combined_score already counted 30 × 86,400 s.
--
-- Rebuilt from its latest definition (2.19.0) with this change, empty; sql/950_materialized_views.sql, applied
-- after the migrations, re-creates the tenant_* view over it (dropped here with it) and populates it.

drop materialized view memsub.mv_agent_recent_important cascade;

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
    'recency; expires_at is the packet''s expiry. Clients read memsub.tenant_agent_recent_important, which drops '
    'expired rows at read time.';
comment on index memsub.mv_agent_recent_important_key is 'Unique key of the view (needed by REFRESH ... CONCURRENTLY).';
comment on index memsub.mv_agent_recent_important_agent is 'An agent''s packets, best combined score first.';

alter materialized view memsub.mv_agent_recent_important owner to memsub_view_owner;
