-- Area: operations. Seed: seed 000 "MATERIALIZED VIEWS".
--
-- Materialized views: refresh, and the tenant-filtered ways to read them.
--
-- The four views (created by migration 2.2.0, rebuilt by 2.19.0) belong to memsub_view_owner, a NOLOGIN role that
-- bypasses row-level security so a refresh aggregates every tenant. Materialized views have no row-level security
-- of their own, and their rows are as old as the last refresh, so no client role reads them directly: every role
-- reads the tenant_* security-barrier views below, which apply the same tenant, organization and scope rules as
-- the table policies and drop, at read time, every row whose expires_at has passed (the earliest expiry among the
-- rows it was made of). Expired data is therefore never served, refreshed or not; an aggregate that included an
-- expired row is withheld until the next refresh recomputes it without that row. The analyst role reads every
-- tenant's rows through the same views (the tenant predicate lets members of memsub_analyst through).

create or replace function memsub._memory_view_names() returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select array['mv_agent_recent_important', 'mv_entity_graph', 'mv_high_confidence_facts', 'mv_reflection_patterns']
$$;
comment on function memsub._memory_view_names() is
    'The memsub materialized views, in the order they are refreshed: what memsub._refresh_memory_view accepts and '
    'memsub.refresh_memory_views refreshes.';

create or replace function memsub._refresh_memory_view(p_view text, p_run_id uuid default null)
returns memsub.memory_view_refresh_log
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
set lock_timeout = '1min'
as $$
declare
    v_started   timestamptz := clock_timestamp();
    v_populated boolean;
    v_method    text;
    v_status    text := 'ok';
    v_rows      bigint;
    v_error     text;
    v_taken     boolean;
    v_holder    text;
    v_entry     memsub.memory_view_refresh_log;
begin
    if p_view is null or p_view <> all(memsub._memory_view_names()) then
        raise exception 'field "view" must name a memsub materialized view, not "%"', p_view
            using errcode = '22023', column = 'view';
    end if;
    select c.relispopulated into v_populated
      from pg_catalog.pg_class c
     where c.relname = p_view and c.relnamespace = 'memsub'::regnamespace;
    v_method := case when v_populated then 'concurrently' else 'full' end;
    -- One refresh of a view at a time. The lock is a row of memsub.maintenance_lock, which no login outside
    -- memsub's roles can take; a view another transaction is refreshing is logged as skipped, naming it. A holder
    -- that is gone by the time it is looked up has finished: the lock is tried again (a few times at most).
    for i in 1 .. 3 loop
        v_taken := memsub._take_maintenance_lock('refresh_memory_view', p_view, false);
        exit when v_taken;
        v_holder := memsub._maintenance_lock_holder('refresh_memory_view', p_view);
        exit when v_holder is not null;
    end loop;
    if not v_taken then
        v_status := 'skipped';
        v_method := 'none';
        v_error := format('another refresh of memsub.%s is running: %s', p_view, coalesce(v_holder, 'holder unknown'));
    else
        begin
            -- CONCURRENTLY (readers keep reading) needs a populated view; the first population cannot be
            -- concurrent. Lock waits are bounded by this function's lock_timeout.
            if v_populated then
                execute format('refresh materialized view concurrently memsub.%I', p_view);
            else
                execute format('refresh materialized view memsub.%I', p_view);
            end if;
            execute format('select count(*) from memsub.%I', p_view) into v_rows;
        exception when others then
            v_status := 'error';
            v_error := sqlerrm;
        end;
    end if;
    insert into memsub.memory_view_refresh_log (
        run_id, view_name, method, status, started_at, finished_at, duration_ms, row_count, error)
    values (
        coalesce(p_run_id, gen_random_uuid()), p_view, v_method, v_status,
        v_started, clock_timestamp(), extract(epoch from clock_timestamp() - v_started) * 1000, v_rows, v_error)
    returning * into v_entry;
    return v_entry;
end
$$;
comment on function memsub._refresh_memory_view(text, uuid) is
    'Refreshes one memsub materialized view (CONCURRENTLY once populated) and logs method, duration, rows and any '
    'error in memory_view_refresh_log. A view another transaction is refreshing is logged as skipped (method none), '
    'with the holder in error; one whose holder has finished by the time it is looked up is locked and refreshed. '
    'Lock waits are bounded (lock_timeout 1 min). Runs as memsub_view_owner, the views'' '
    'owner.';
alter function memsub._refresh_memory_view(text, uuid) owner to memsub_view_owner;

-- The views' lock rows exist before any refresh, so a refresh that finds one held never waits for its creation.
insert into memsub.maintenance_lock (task, lock_key)
select 'refresh_memory_view', pg_catalog.hashtextextended(v.name, 0)
  from pg_catalog.unnest(memsub._memory_view_names()) as v(name)
    on conflict do nothing;

-- A run_id names one run's rows in the log, so one the log already has is refused. Two runs given the same new id
-- at once would both find none (neither has committed a row yet): a run given its id therefore holds the id's lock
-- until its first view's row is committed (the procedure's first COMMIT), and a second run of that id waits for it
-- and then finds that row. The lock's row is deleted as soon as it is locked: a deleted row stays locked until the
-- transaction ends, and no row is left behind per run.
create or replace function memsub._claim_refresh_run(p_run_id uuid)
returns uuid
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_run_id is null then
        return gen_random_uuid();
    end if;
    perform memsub._take_maintenance_lock('refresh_memory_views_run', p_run_id::text);
    delete from memsub.maintenance_lock l
     where l.task = 'refresh_memory_views_run' and l.lock_key = hashtextextended(p_run_id::text, 0);
    -- A statement after the lock: it reads what a run that held it committed.
    if exists (select from memsub.memory_view_refresh_log l where l.run_id = p_run_id) then
        raise exception 'field "run_id": run % is already in memsub.memory_view_refresh_log; give a new one or NULL',
            p_run_id using errcode = '23505', column = 'run_id';
    end if;
    return p_run_id;
end
$$;
comment on function memsub._claim_refresh_run(uuid) is
    'Internal (memsub.refresh_memory_views): the run_id of a new run, a new one for NULL. A given run_id the log '
    'already has is refused (23505 naming run_id); a run of the same id that has not committed its first view yet '
    'is waited for (until the caller''s transaction ends, this one holds the id), then refused alike.';

-- A procedure that commits cannot carry a SET clause (PostgreSQL refuses transaction control there), so it
-- cannot pin search_path and sees the caller's, where pg_temp comes first unless named. It is therefore
-- SECURITY INVOKER (it never runs with more rights than its caller) and qualifies every name it uses, types
-- included, with its schema.
drop procedure if exists memsub.refresh_memory_views();
create or replace procedure memsub.refresh_memory_views(inout run_id pg_catalog.uuid default null)
language plpgsql security invoker
as $$
declare
    v_name    pg_catalog.text;
    v_status  pg_catalog.text;
    v_error   pg_catalog.text;
    v_skipped pg_catalog.text[] := '{}'::pg_catalog.text[];
    v_failed  pg_catalog.text[] := '{}'::pg_catalog.text[];
begin
    -- A run_id names one run's rows in the log: one the log already has, or a concurrent run of the same id has,
    -- is refused before any view is refreshed. The first transaction (until the first COMMIT below, after the
    -- first view's row) holds the id.
    run_id := memsub._claim_refresh_run(run_id);
    foreach v_name in array memsub._memory_view_names() loop
        select r.status, r.error into v_status, v_error from memsub._refresh_memory_view(v_name, run_id) r;
        if v_status operator(pg_catalog.=) 'skipped' then
            v_skipped := v_skipped operator(pg_catalog.||) v_name;
        elsif v_status operator(pg_catalog.=) 'error' then
            v_failed := v_failed operator(pg_catalog.||) pg_catalog.format('%s failed: %s', v_name, v_error);
        end if;
        commit;  -- one view per transaction: locks and snapshots are released view by view
    end loop;
    -- A caller that reads no log (psql, pg_cron) is told what did not refresh.
    foreach v_error in array v_failed loop
        raise warning 'memsub.refresh_memory_views: % (run %; memsub.memory_view_refresh_log)', v_error, run_id;
    end loop;
    if pg_catalog.cardinality(v_skipped) operator(pg_catalog.>) 0 then
        raise warning 'memsub.refresh_memory_views: skipped %: another refresh is running (run %)',
            pg_catalog.array_to_string(v_skipped, ', '), run_id;
    end if;
end
$$;
comment on procedure memsub.refresh_memory_views(pg_catalog.uuid) is
    'Refreshes the four materialized views, one transaction each (memsub._refresh_memory_view), and returns the '
    'run_id of their rows in memory_view_refresh_log (a run_id given that the log already has, or that a run '
    'started at the same time has: 23505 naming run_id, nothing refreshed). A view another refresh is working on is logged as skipped '
    'and a WARNING names the skipped views; a view whose refresh failed is logged as error and a WARNING names it '
    'with the error. Call it outside a transaction block: '
    'CALL memsub.refresh_memory_views().';

-- Tenant-filtered access -------------------------------------------------------------------------------------

call memsub._ensure_view('memsub.tenant_agent_recent_important', $create$create or replace view memsub.tenant_agent_recent_important with (security_barrier = true) as
select m.tenant_id, m.agent_id, m.packet_id, m.packet_type, m."timestamp", m.importance_score, m.access_count,
       m.tags, m.scope, m.combined_score
  from memsub.mv_agent_recent_important m
 where (m.expires_at is null or m.expires_at > (select pg_catalog.now()))
   and ((select pg_catalog.pg_has_role('memsub_analyst', 'usage'))
        or ((m.tenant_id = (select memsub.current_tenant_id()) or (select memsub.is_platform_admin()))
            and (m.org_id is null or m.org_id = (select memsub.current_org_id())
                 or (select memsub.is_tenant_admin()) or (select memsub.is_platform_admin()))
            and (m.scope = 'shared'
                 or (m.scope = 'l-private' and m.user_id = (select memsub.current_user_id()))
                 or (m.scope = 'cursor' and (m.user_id = (select memsub.current_user_id())
                                             or m.session_id = (select memsub.current_session_id())))
                 or (select memsub.is_tenant_admin()) or (select memsub.is_platform_admin()))))$create$);
comment on view memsub.tenant_agent_recent_important is
    'mv_agent_recent_important as the caller may see it: its tenant, its organization, the scopes the packet '
    'policies allow (every tenant for memsub_analyst), and only packets that have not expired, whenever the view '
    'was refreshed (security barrier).';

call memsub._ensure_view('memsub.tenant_entity_graph', $create$create or replace view memsub.tenant_entity_graph with (security_barrier = true) as
select m.tenant_id, m.source_entity, m.relationship_type, m.target_entity, m.total_mentions, m.max_confidence,
       m.avg_confidence, m.last_seen, m.relationship_count
  from memsub.mv_entity_graph m
 where (m.expires_at is null or m.expires_at > (select pg_catalog.now()))
   and (m.valid_until is null or m.valid_until > (select pg_catalog.now()))
   and (m.tenant_id = (select memsub.current_tenant_id()) or (select memsub.is_platform_admin())
        or (select pg_catalog.pg_has_role('memsub_analyst', 'usage')))$create$);
comment on view memsub.tenant_entity_graph is
    'mv_entity_graph of the caller''s tenant only (every tenant for memsub_analyst), without rows made of an edge '
    'that has expired, or whose validity window known at the refresh has ended, since the refresh (security '
    'barrier).';

call memsub._ensure_view('memsub.tenant_high_confidence_facts', $create$create or replace view memsub.tenant_high_confidence_facts with (security_barrier = true) as
select m.tenant_id, m.fact_id, m.subject, m.subject_normalized, m.predicate, m.object, m.confidence,
       m.supporting_packet_count, m.access_count, m.combined_score
  from memsub.mv_high_confidence_facts m
 where (m.expires_at is null or m.expires_at > (select pg_catalog.now()))
   and (m.tenant_id = (select memsub.current_tenant_id()) or (select memsub.is_platform_admin())
        or (select pg_catalog.pg_has_role('memsub_analyst', 'usage')))$create$);
comment on view memsub.tenant_high_confidence_facts is
    'mv_high_confidence_facts of the caller''s tenant only (every tenant for memsub_analyst), without facts that '
    'have expired since the refresh (security barrier).';

call memsub._ensure_view('memsub.tenant_reflection_patterns', $create$create or replace view memsub.tenant_reflection_patterns with (security_barrier = true) as
select m.tenant_id, m.org_id, m.reflection_type, m.count, m.avg_confidence, m.all_tags, m.latest
  from memsub.mv_reflection_patterns m
 where (m.expires_at is null or m.expires_at > (select pg_catalog.now()))
   and ((select pg_catalog.pg_has_role('memsub_analyst', 'usage'))
        or ((m.tenant_id = (select memsub.current_tenant_id()) or (select memsub.is_platform_admin()))
            and (m.org_id is null or m.org_id = (select memsub.current_org_id())
                 or (select memsub.is_tenant_admin()) or (select memsub.is_platform_admin()))))$create$);
comment on view memsub.tenant_reflection_patterns is
    'mv_reflection_patterns of the caller''s tenant: the tenant-wide rows (org_id NULL) and its organization''s '
    '(every tenant for memsub_analyst), without rows made of a reflection that has expired since the refresh '
    '(security barrier).';

-- Column comments of the materialized views (created by migrations) and of the tenant_* views over them: the
-- same column means the same in both.

comment on column memsub.mv_agent_recent_important.tenant_id is 'Tenant of the packet.';
comment on column memsub.mv_agent_recent_important.org_id is 'Organization of the packet (NULL: tenant-wide).';
comment on column memsub.mv_agent_recent_important.user_id is 'User who wrote the packet.';
comment on column memsub.mv_agent_recent_important.session_id is 'Session the packet was written in.';
comment on column memsub.mv_agent_recent_important.agent_id is 'The agent that wrote it (routing.agent).';
comment on column memsub.mv_agent_recent_important.packet_id is 'The packet (packet_store.packet_id).';
comment on column memsub.mv_agent_recent_important.packet_type is 'Kind of packet (packet_store.packet_type).';
comment on column memsub.mv_agent_recent_important."timestamp" is 'When the packet happened (within the 720 hours, 30 × 24 h, before the refresh).';
comment on column memsub.mv_agent_recent_important.importance_score is 'Learned importance in [0, 1] at the refresh (0.7 or more).';
comment on column memsub.mv_agent_recent_important.access_count is 'Retrievals of the packet at the refresh.';
comment on column memsub.mv_agent_recent_important.tags is 'Tags of the packet.';
comment on column memsub.mv_agent_recent_important.scope is 'Memory isolation scope: shared, cursor or l-private.';
comment on column memsub.mv_agent_recent_important.combined_score is '0.6 importance + 0.2 access (log scale, 100 accesses = 1) + 0.2 recency (1 now or later, 0 after 720 hours), at the refresh.';

comment on column memsub.tenant_agent_recent_important.tenant_id is 'Tenant of the packet.';
comment on column memsub.tenant_agent_recent_important.agent_id is 'The agent that wrote it (routing.agent).';
comment on column memsub.tenant_agent_recent_important.packet_id is 'The packet (packet_store.packet_id).';
comment on column memsub.tenant_agent_recent_important.packet_type is 'Kind of packet (packet_store.packet_type).';
comment on column memsub.tenant_agent_recent_important."timestamp" is 'When the packet happened (within the 720 hours, 30 × 24 h, before the refresh).';
comment on column memsub.tenant_agent_recent_important.importance_score is 'Learned importance in [0, 1] at the refresh (0.7 or more).';
comment on column memsub.tenant_agent_recent_important.access_count is 'Retrievals of the packet at the refresh.';
comment on column memsub.tenant_agent_recent_important.tags is 'Tags of the packet.';
comment on column memsub.tenant_agent_recent_important.scope is 'Memory isolation scope: shared, cursor or l-private.';
comment on column memsub.tenant_agent_recent_important.combined_score is '0.6 importance + 0.2 access (log scale, 100 accesses = 1) + 0.2 recency (1 now or later, 0 after 720 hours), at the refresh.';

comment on column memsub.mv_entity_graph.tenant_id is 'Tenant of the edges.';
comment on column memsub.mv_entity_graph.source_entity is 'Matching form of the source entity (entity_relationships.source_key).';
comment on column memsub.mv_entity_graph.relationship_type is 'Relationship type of the edges.';
comment on column memsub.mv_entity_graph.target_entity is 'Matching form of the target entity (entity_relationships.target_key).';
comment on column memsub.mv_entity_graph.total_mentions is 'Sum of the mention counts of the edges valid at the refresh.';
comment on column memsub.mv_entity_graph.max_confidence is 'Highest confidence among those edges.';
comment on column memsub.mv_entity_graph.avg_confidence is 'Mean confidence of those edges.';
comment on column memsub.mv_entity_graph.last_seen is 'When any of those edges was last seen.';
comment on column memsub.mv_entity_graph.relationship_count is 'Number of edges (spellings of the two entities) grouped into this row.';

comment on column memsub.tenant_entity_graph.tenant_id is 'Tenant of the edges.';
comment on column memsub.tenant_entity_graph.source_entity is 'Matching form of the source entity (entity_relationships.source_key).';
comment on column memsub.tenant_entity_graph.relationship_type is 'Relationship type of the edges.';
comment on column memsub.tenant_entity_graph.target_entity is 'Matching form of the target entity (entity_relationships.target_key).';
comment on column memsub.tenant_entity_graph.total_mentions is 'Sum of the mention counts of the edges valid at the refresh.';
comment on column memsub.tenant_entity_graph.max_confidence is 'Highest confidence among those edges.';
comment on column memsub.tenant_entity_graph.avg_confidence is 'Mean confidence of those edges.';
comment on column memsub.tenant_entity_graph.last_seen is 'When any of those edges was last seen.';
comment on column memsub.tenant_entity_graph.relationship_count is 'Number of edges (spellings of the two entities) grouped into this row.';

comment on column memsub.mv_high_confidence_facts.tenant_id is 'Tenant of the fact.';
comment on column memsub.mv_high_confidence_facts.fact_id is 'The fact (knowledge_facts.fact_id).';
comment on column memsub.mv_high_confidence_facts.subject is 'Subject as written.';
comment on column memsub.mv_high_confidence_facts.subject_normalized is 'Matching form of the subject.';
comment on column memsub.mv_high_confidence_facts.predicate is 'Predicate of the fact.';
comment on column memsub.mv_high_confidence_facts.object is 'Object of the fact (JSON).';
comment on column memsub.mv_high_confidence_facts.confidence is 'Confidence in [0, 1] at the refresh (0.6 or more).';
comment on column memsub.mv_high_confidence_facts.supporting_packet_count is 'Packets that asserted the fact.';
comment on column memsub.mv_high_confidence_facts.access_count is 'Retrievals of the fact at the refresh.';
comment on column memsub.mv_high_confidence_facts.combined_score is '0.6 confidence + 0.25 support (log scale, 10 packets = 1) + 0.15 access (log scale, 100 accesses = 1), at the refresh.';

comment on column memsub.tenant_high_confidence_facts.tenant_id is 'Tenant of the fact.';
comment on column memsub.tenant_high_confidence_facts.fact_id is 'The fact (knowledge_facts.fact_id).';
comment on column memsub.tenant_high_confidence_facts.subject is 'Subject as written.';
comment on column memsub.tenant_high_confidence_facts.subject_normalized is 'Matching form of the subject.';
comment on column memsub.tenant_high_confidence_facts.predicate is 'Predicate of the fact.';
comment on column memsub.tenant_high_confidence_facts.object is 'Object of the fact (JSON).';
comment on column memsub.tenant_high_confidence_facts.confidence is 'Confidence in [0, 1] at the refresh (0.6 or more).';
comment on column memsub.tenant_high_confidence_facts.supporting_packet_count is 'Packets that asserted the fact.';
comment on column memsub.tenant_high_confidence_facts.access_count is 'Retrievals of the fact at the refresh.';
comment on column memsub.tenant_high_confidence_facts.combined_score is '0.6 confidence + 0.25 support (log scale, 10 packets = 1) + 0.15 access (log scale, 100 accesses = 1), at the refresh.';

comment on column memsub.mv_reflection_patterns.tenant_id is 'Tenant of the reflections.';
comment on column memsub.mv_reflection_patterns.org_id is 'Organization of the reflections (NULL: tenant-wide).';
comment on column memsub.mv_reflection_patterns.reflection_type is 'Reflection type the row counts.';
comment on column memsub.mv_reflection_patterns."count" is 'Reflections of this type not expired at the refresh.';
comment on column memsub.mv_reflection_patterns.avg_confidence is 'Mean confidence of those reflections.';
comment on column memsub.mv_reflection_patterns.all_tags is 'Every tag used by those reflections, sorted, each once.';
comment on column memsub.mv_reflection_patterns.latest is 'When the newest of those reflections was created.';
comment on column memsub.mv_agent_recent_important.expires_at is
    'When the packet expires (its ttl; NULL: never): the tenant_* view hides the row from then on.';
comment on column memsub.mv_entity_graph.expires_at is
    'Earliest expiry among the relationships counted in the row (NULL: none expires): the tenant_* view withholds '
    'the row from then until the next refresh recomputes it.';
comment on column memsub.mv_entity_graph.valid_until is
    'Earliest end of the validity windows of the relationships counted in the row (NULL: none ends): the tenant_* '
    'view withholds the row from then until the next refresh recomputes it.';
comment on column memsub.mv_high_confidence_facts.expires_at is
    'When the fact expires (the latest expiry of the packets that asserted it; NULL: never): the tenant_* view '
    'hides the row from then on.';
comment on column memsub.mv_reflection_patterns.expires_at is
    'Earliest expiry among the reflections counted in the row (NULL: none expires): the tenant_* view withholds '
    'the row from then until the next refresh recomputes it.';

comment on column memsub.tenant_reflection_patterns.tenant_id is 'Tenant of the reflections.';
comment on column memsub.tenant_reflection_patterns.org_id is 'Organization of the reflections (NULL: tenant-wide).';
comment on column memsub.tenant_reflection_patterns.reflection_type is 'Reflection type the row counts.';
comment on column memsub.tenant_reflection_patterns."count" is 'Reflections of this type not expired at the refresh.';
comment on column memsub.tenant_reflection_patterns.avg_confidence is 'Mean confidence of those reflections.';
comment on column memsub.tenant_reflection_patterns.all_tags is 'Every tag used by those reflections, sorted, each once.';
comment on column memsub.tenant_reflection_patterns.latest is 'When the newest of those reflections was created.';

-- Privileges ---------------------------------------------------------------------------------------------------

-- The views' owner reads what it aggregates and writes the refresh log; nothing else.
grant usage on schema memsub to memsub_view_owner;
grant select on memsub.packet_store, memsub.entity_relationships, memsub.knowledge_facts, memsub.reflection_store
    to memsub_view_owner;
grant select, insert on memsub.memory_view_refresh_log to memsub_view_owner;
-- The tenant_* views (owned by memsub_owner) read the materialized views; no client role does.
grant select on memsub.mv_agent_recent_important, memsub.mv_entity_graph, memsub.mv_high_confidence_facts,
    memsub.mv_reflection_patterns
    to memsub_owner;
revoke select on memsub.mv_agent_recent_important, memsub.mv_entity_graph, memsub.mv_high_confidence_facts,
    memsub.mv_reflection_patterns
    from memsub_analyst;
grant select on memsub.tenant_agent_recent_important, memsub.tenant_entity_graph,
    memsub.tenant_high_confidence_facts, memsub.tenant_reflection_patterns
    to memsub_app, memsub_analyst;
grant select on memsub.memory_view_refresh_log to memsub_analyst, memsub_platform_admin;
grant execute on function memsub._claim_refresh_run(uuid) to memsub_platform_admin;
grant execute on function memsub._refresh_memory_view(text, uuid) to memsub_platform_admin;
-- The view list is read by _refresh_memory_view (as the views' owner) and by refresh_memory_views (as its caller).
grant execute on function memsub._memory_view_names() to memsub_view_owner, memsub_platform_admin;
grant execute on procedure memsub.refresh_memory_views(pg_catalog.uuid) to memsub_platform_admin;

-- Populated at install -----------------------------------------------------------------------------------------

-- The views are created WITH NO DATA; a view never refreshed makes every tenant_* view fail with "has not been
-- populated". Populating them here (after the grants above, so the owner can read what it aggregates) makes the
-- tenant_* views read as empty until the first scheduled refresh (memsub maintain, or pg_cron). On a fresh install
-- the tables are empty and this is instantaneous; a view that was ever refreshed is left as it is, so re-applying
-- this file costs nothing. The refresh runs as the views' owner: the installing role is a member of it.
do $populate$
declare
    v_name text;
begin
    foreach v_name in array memsub._memory_view_names() loop
        if not (select c.relispopulated from pg_catalog.pg_class c
                 where c.relnamespace = 'memsub'::regnamespace and c.relname = v_name) then
            execute pg_catalog.format('refresh materialized view memsub.%I', v_name);
        end if;
    end loop;
end
$populate$;
