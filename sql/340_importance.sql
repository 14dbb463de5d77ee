-- Area: search. Seed: seed 000 "CORE MEMORY LAYER" (importance_score, access_count) and "OPERATIONS LAYER"
--   (was_useful).
--
-- Importance learning: feedback on accesses and the maintenance run that folds the access log into
-- importance_score (packet_store, semantic_memory).
--
-- The rule (docs/retrieval.md), per target, for the accesses and feedback not yet learned:
--   frequency  I <- I + (1 - I) * (1 - (1 - access_rate)^accesses)
--   useful     I <- I + (1 - I) * (1 - (1 - feedback_rate)^useful)
--   not useful I <- I * (1 - feedback_rate)^not_useful
--   decay      targets idle for idle_after or longer: I <- floor + (I - floor) * 0.5^(elapsed / half_life)
--              when I > floor, elapsed being the time since the tenant's previous run.
-- Each step is a convex combination of I with 0, 1 or floor, so I stays in [0, 1]. An access to an embedding
-- counts for its packet; facts and reflections have no importance_score (their access_count still counts).
--
-- memsub.learn_importance is owned by memsub_retrieval_owner and works on the context tenant with explicit
-- tenant predicates: importance is tenant-wide, and every organization's accesses count. It therefore changes
-- (and counts) rows of every organization and user, those the caller cannot read included, and is tenant
-- maintenance: it needs a tenant_admin or platform_admin context, as memsub.consolidate_memories does, and is
-- granted to memsub_tenant_admin, not to memsub_app (`memsub maintain` runs it per tenant). Concurrent calls for
-- one tenant queue on a maintenance lock (memsub._take_maintenance_lock); each access and feedback is marked learned in the same
-- transaction, so none is counted twice. An access keeps the feedback learned (learned_was_useful): feedback is
-- learned again only when it ends different from that, so feedback changed and changed back between two runs is
-- not learned twice.

create or replace function memsub.record_feedback(
    p_access_id  uuid,
    p_was_useful boolean,
    p_reason     text default null
) returns memsub.memory_access_log
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_entry  memsub.memory_access_log;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('reason', p_reason);
    if p_access_id is null then
        raise exception 'field "access_id" is required' using errcode = '23502', column = 'access_id';
    end if;
    if p_was_useful is null then
        raise exception 'field "was_useful" is required' using errcode = '23502', column = 'was_useful';
    end if;
    -- Row-level security binds this function's owner: only an access the caller can see is updated.
    update memsub.memory_access_log l
       set was_useful = p_was_useful, feedback_reason = p_reason, feedback_at = now()
     where l.tenant_id = v_tenant and l.access_id = p_access_id
    returning l.* into v_entry;
    if not found then
        raise exception 'field "access_id": access % does not exist or is not visible', p_access_id
            using errcode = '23503', column = 'access_id';
    end if;
    return v_entry;
end
$$;
comment on function memsub.record_feedback(uuid, boolean, text) is
    'Records whether an access was useful (and why). Feedback that ends different from what '
    'memsub.learn_importance last learned of the access is learned again by its next run; feedback that ends as '
    'learned (repeated, or changed and changed back) is not. Unknown or invisible access: 23503.';

create or replace function memsub.learn_importance(
    p_access_rate   double precision default 0.02,
    p_feedback_rate double precision default 0.2,
    p_half_life     interval         default interval '30 days',
    p_floor         double precision default 0.05,
    p_idle_after    interval         default interval '7 days'
) returns memsub.importance_learning_runs
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_started  timestamptz := now();
    v_previous timestamptz;
    v_idle     timestamptz;
    v_factor   double precision := 1.0;
    v_smallest double precision;
    v_counted  integer;
    v_feedback integer;
    v_updated  integer := 0;
    v_decayed  integer := 0;
    v_rows     integer;
    v_missing  text;
    v_run      memsub.importance_learning_runs;
begin
    -- Tenant maintenance: it changes and counts rows of every organization and user of the tenant.
    if not (memsub._caller_is_admin()) then
        raise exception 'memsub.learn_importance needs a tenant_admin or platform_admin context'
            using errcode = '42501', column = 'roles';
    end if;
    -- Required: a NULL rate made every step a step of rate 1, and a NULL floor left nothing to decay.
    v_missing := case when p_access_rate is null then 'access_rate' when p_feedback_rate is null then 'feedback_rate'
                      when p_floor is null then 'floor' end;
    if v_missing is not null then
        raise exception 'field "%" is required', v_missing using errcode = '23502', column = v_missing;
    end if;
    perform memsub._check_unit(p_access_rate, 'access_rate');
    perform memsub._check_unit(p_feedback_rate, 'feedback_rate');
    perform memsub._check_unit(p_floor, 'floor');
    perform memsub._check_half_life(p_half_life), memsub._check_finite_interval(p_idle_after, 'idle_after');
    if p_idle_after is null or p_idle_after < interval '0' then
        raise exception 'field "idle_after" must not be negative' using errcode = '22023', column = 'idle_after';
    end if;
    -- One run per tenant at a time: a row lock only memsub's roles can take (memsub._take_maintenance_lock).
    perform memsub._take_maintenance_lock('learn_importance', v_tenant::text);

    select max(r.finished_at) into v_previous from memsub.importance_learning_runs r where r.tenant_id = v_tenant;
    if v_previous is not null then
        -- 0 from 1000 half-lives on: power(0.5, x) raises an underflow error past about 1074.
        v_factor := coalesce(power(0.5, nullif(least(1000.0, greatest(0.0, date_part('epoch',
                                 clock_timestamp() - v_previous)) / date_part('epoch', p_half_life)), 1000.0)), 0.0);
    end if;

    -- One statement, so one snapshot of the log: what is new in it (batch, locked), each target's share (delta),
    -- the importances learned from it and the log marked learned. An embedding access counts for its packet; an
    -- embedding id with no memory_embeddings row is a legacy memory (semantic_memory.embedding_id). No temporary
    -- table: one the caller's session holds under the same name would stand in the way.
    with batch as (
        select l.access_id,
               case when l.target_type <> 'embedding' then l.target_type
                    when e.embedding_id is null then 'semantic' else 'packet' end as target_type,
               coalesce(e.packet_id, l.target_id) as target_id,
               l.counted_at is null as count_it,
               (l.was_useful is not null and l.was_useful is distinct from l.learned_was_useful) as learn_feedback,
               l.was_useful
          from memsub.memory_access_log l
          left join memsub.memory_embeddings e
                 on l.target_type = 'embedding' and e.tenant_id = l.tenant_id and e.embedding_id = l.target_id
         where l.tenant_id = v_tenant
           and (l.counted_at is null or (l.was_useful is not null and l.was_useful is distinct from l.learned_was_useful))
           for update of l skip locked
    ), held_packets as (
        -- The targets are locked here without waiting (as the update below locks them: a child packet's
        -- reference does not stand in the way): one an application's transaction holds (an access a
        -- search recorded, not committed yet) is passed, and its accesses stay in the log for the next run.
        -- Waiting would hold the log rows and every target locked so far for as long as that transaction lasts,
        -- and the maintenance run with them.
        select s.packet_id from memsub.packet_store s
         where s.tenant_id = v_tenant
           and s.packet_id in (select b.target_id from batch b where b.target_type = 'packet')
           for no key update skip locked
    ), held_legacy as (
        select m.embedding_id from memsub.semantic_memory m
         where m.tenant_id = v_tenant
           and m.embedding_id in (select b.target_id from batch b where b.target_type = 'semantic')
           for no key update skip locked
    ), ready as (
        -- What this run learns: every access but those of a target that exists and is held (an access of a
        -- target since removed is learned, as it always was: there is nothing to update).
        select b.* from batch b
         where case b.target_type
                   when 'packet' then b.target_id in (select h.packet_id from held_packets h)
                       or not exists (select from memsub.packet_store s
                                       where s.tenant_id = v_tenant and s.packet_id = b.target_id)
                   when 'semantic' then b.target_id in (select h.embedding_id from held_legacy h)
                       or not exists (select from memsub.semantic_memory m
                                       where m.tenant_id = v_tenant and m.embedding_id = b.target_id)
                   else true end
    ), delta as (
        select b.target_type, b.target_id,
               count(*) filter (where b.count_it) as accesses,
               count(*) filter (where b.learn_feedback and b.was_useful) as useful,
               count(*) filter (where b.learn_feedback and not b.was_useful) as useless
          from ready b
         group by 1, 2
    ), packets as (
        update memsub.packet_store s
           set importance_score = memsub._importance_step(s.importance_score, d.accesses, d.useful, d.useless,
                                                          p_access_rate, p_feedback_rate)
          from delta d
         where d.target_type = 'packet' and s.tenant_id = v_tenant and s.packet_id = d.target_id
        returning 1
    ), legacy as (
        update memsub.semantic_memory m
           set importance_score = memsub._importance_step(m.importance_score, d.accesses, d.useful, d.useless,
                                                          p_access_rate, p_feedback_rate)
          from delta d
         where d.target_type = 'semantic' and m.tenant_id = v_tenant and m.embedding_id = d.target_id
        returning 1
    ), learned as (
        update memsub.memory_access_log l
           set counted_at = coalesce(l.counted_at, v_started),
               feedback_learned_at = case when b.learn_feedback then v_started else l.feedback_learned_at end,
               learned_was_useful = case when b.learn_feedback then b.was_useful else l.learned_was_useful end
          from ready b
         where l.tenant_id = v_tenant and l.access_id = b.access_id
    )
    select (select count(*) filter (where b.count_it) from ready b),
           (select count(*) filter (where b.learn_feedback) from ready b),
           (select count(*) from packets) + (select count(*) from legacy)
      into v_counted, v_feedback, v_updated;

    -- Decay of idle memories, by the time since the previous run. What is left above the floor goes to 0 where
    -- its product with the factor would fall below 1e-300: PostgreSQL raises an underflow error on a product
    -- that rounds to 0, and with a floor of 0 an importance can itself become that small.
    if v_factor < 1.0 then
        v_smallest := case when v_factor > 0 then 1e-300 / v_factor else 'Infinity' end;
        -- Idle since before this: an idle_after reaching back past the earliest time PostgreSQL holds (4714 BC)
        -- overflows the subtraction (22008, naming nothing), and no memory has been idle that long.
        begin
            v_idle := v_started - p_idle_after;
        exception when datetime_field_overflow then
            v_idle := '-infinity';
        end;
        update memsub.packet_store s
           set importance_score = p_floor + case when s.importance_score - p_floor < v_smallest then 0.0
                                                 else (s.importance_score - p_floor) * v_factor end
         where s.tenant_id = v_tenant
           and s.packet_id in (
               -- A row a transaction holds is being accessed (a search recording it, not committed yet): it is
               -- not idle, and is not waited for (see held_packets above).
               select i.packet_id from memsub.packet_store i
                where i.tenant_id = v_tenant and i.importance_score > p_floor
                  and coalesce(i.last_accessed, i."timestamp") <= v_idle
                  for no key update skip locked);
        get diagnostics v_rows = row_count;
        v_decayed := v_decayed + v_rows;
        update memsub.semantic_memory m
           set importance_score = p_floor + case when m.importance_score - p_floor < v_smallest then 0.0
                                                 else (m.importance_score - p_floor) * v_factor end
         where m.tenant_id = v_tenant
           and m.embedding_id in (
               select i.embedding_id from memsub.semantic_memory i
                where i.tenant_id = v_tenant and i.importance_score > p_floor
                  and coalesce(i.last_accessed, i.created_at) <= v_idle
                  for no key update skip locked);
        get diagnostics v_rows = row_count;
        v_decayed := v_decayed + v_rows;
    end if;

    insert into memsub.importance_learning_runs (
        tenant_id, started_at, finished_at, accesses_counted, feedback_learned, targets_updated, targets_decayed,
        decay_factor, parameters)
    values (
        v_tenant, v_started, clock_timestamp(), v_counted, v_feedback, v_updated, v_decayed, v_factor,
        jsonb_build_object('access_rate', p_access_rate, 'feedback_rate', p_feedback_rate,
                           'half_life', p_half_life::text, 'floor', p_floor, 'idle_after', p_idle_after::text))
    returning * into v_run;
    return v_run;
end
$$;
comment on function memsub.learn_importance(double precision, double precision, interval, double precision, interval) is
    'Maintenance (tenant_admin or platform_admin context; 42501 otherwise): folds the context tenant''s new '
    'accesses and feedback into importance_score of packets and legacy memories, and decays memories idle for '
    'idle_after by 0.5 ^ (time since the previous run / half_life) towards floor, in every organization and scope '
    'of the tenant. Bounded in [0, 1]; serialized per tenant by a maintenance lock; each access and feedback is '
    'learned once. A row a concurrent transaction holds (a log row, a packet or memory a search is recording an '
    'access of) is not waited for: its accesses are learned, and it is decayed, by the next run. Returns the '
    'run''s report (also kept in importance_learning_runs).';

create or replace function memsub._importance_step(
    p_importance    double precision,
    p_accesses      bigint,
    p_useful        bigint,
    p_useless       bigint,
    p_access_rate   double precision,
    p_feedback_rate double precision
) returns double precision
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    -- (1 - rate)^n computed as exp(n * ln(1 - rate)), clipped so a large n cannot underflow. NaN and infinities are
    -- refused by the first branch of each expression (the check runs only for such a value: a scan pays a comparison).
    with kept as (
        select case when p_access_rate in ('NaN', 'Infinity', '-Infinity')
                    then memsub._check_finite(p_access_rate, 'access_rate')
                    when p_accesses = 0 then 1.0 when p_access_rate >= 1 then 0.0
                    else exp(greatest(-700.0, p_accesses * ln(1.0 - p_access_rate))) end as by_access,
               case when p_feedback_rate in ('NaN', 'Infinity', '-Infinity')
                    then memsub._check_finite(p_feedback_rate, 'feedback_rate')
                    when p_useful = 0 then 1.0 when p_feedback_rate >= 1 then 0.0
                    else exp(greatest(-700.0, p_useful * ln(1.0 - p_feedback_rate))) end as by_useful,
               case when p_useless = 0 then 1.0 when p_feedback_rate >= 1 then 0.0
                    else exp(greatest(-700.0, p_useless * ln(1.0 - p_feedback_rate))) end as by_useless
    ), steps as (
        select case when p_importance in ('NaN', 'Infinity', '-Infinity')
                    then memsub._check_finite(p_importance, 'importance') else p_importance end
               + (1.0 - p_importance) * (1.0 - k.by_access) as i2, k.by_useful, k.by_useless from kept k
    )
    select least(1.0, greatest(0.0, (s.i2 + (1.0 - s.i2) * (1.0 - s.by_useful)) * s.by_useless))::double precision
      from steps s
$$;
comment on function memsub._importance_step(double precision, bigint, bigint, bigint, double precision, double precision) is
    'One learning step of memsub.learn_importance: frequency, then useful feedback (both towards 1), then '
    'not-useful feedback (towards 0). Stays in [0, 1] for an input in [0, 1] and rates in [0, 1].';

alter function memsub.learn_importance(double precision, double precision, interval, double precision, interval)
    owner to memsub_retrieval_owner;

call memsub._install_row_security('memsub.importance_learning_runs', array[]::text[]);

-- The grant alone let a member of memsub_tenant_admin read the runs in any context of its tenant, and one bound
-- to an organization gets no other (set_context refuses it the tenant_admin role): it read the whole tenant's
-- counts through its organization's context. The runs are shown to the contexts that may learn (tenant_admin,
-- platform_admin) and to members of memsub_analyst, as the tenant_* views are.
call memsub._ensure_policy('memsub.importance_learning_runs', 'admin_report_visibility', $create$create policy admin_report_visibility on memsub.importance_learning_runs as restrictive for select to public
    using ((select memsub._caller_is_admin()) or (select pg_catalog.pg_has_role('memsub_analyst', 'usage')))$create$);
comment on policy admin_report_visibility on memsub.importance_learning_runs is
    'A run counts every organization and user of the tenant: visible to tenant_admin and platform_admin contexts '
    'and to members of memsub_analyst only.';

-- The runs' counts are tenant-wide (every organization's and user's accesses, feedback and memories): a report
-- for the contexts that may learn (a tenant admin's, a platform admin's through memsub_tenant_admin) and for
-- analysts, who read the whole tenant their context names by design; never the application's, which would see other organizations'
-- activity in them. The revoke takes the grant of earlier versions away from an installed database.
revoke select on memsub.importance_learning_runs from memsub_app;
comment on table memsub.importance_learning_runs is
    'What each memsub.learn_importance run did for a tenant; the latest row is the start of the next decay '
    'interval. Its counts span every organization and user of the tenant: readable by tenant_admin and '
    'platform_admin contexts and by analysts, not by the application role nor by a tenant admin login in a '
    'context without an admin role (policy admin_report_visibility).';
grant select on memsub.importance_learning_runs to memsub_tenant_admin, memsub_analyst;
grant execute on function memsub.record_feedback(uuid, boolean, text) to memsub_app;
-- Tenant maintenance: a tenant admin's (and a platform admin's, through memsub_tenant_admin), never the
-- application's. The revoke takes the grant of earlier versions away from an installed database.
revoke execute on function
    memsub.learn_importance(double precision, double precision, interval, double precision, interval)
    from memsub_app;
grant execute on function
    memsub.learn_importance(double precision, double precision, interval, double precision, interval)
    to memsub_tenant_admin;
grant execute on function
    memsub._importance_step(double precision, bigint, bigint, bigint, double precision, double precision)
    to memsub_retrieval_owner;
-- What the learning run reads and writes (it bypasses row-level security and names the tenant itself).
grant select, update on memsub.memory_access_log, memsub.packet_store, memsub.semantic_memory to memsub_retrieval_owner;
grant select, insert on memsub.importance_learning_runs to memsub_retrieval_owner;
grant execute on function memsub._check_unit(double precision, text), memsub._check_finite(double precision, text),
    memsub._check_finite_interval(interval, text) to memsub_retrieval_owner;
