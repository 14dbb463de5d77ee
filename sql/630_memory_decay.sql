-- Area: memory. Seed: seed 003 "Knowledge Graph Schema" (Memory node: memory_type, decay_state).
--
-- Memory types and decay (seed 003 Memory node) on memory_entries.
--
-- memory_tier (generated): Procedural for procedural memory, STM while short_term, otherwise LTM. Seed 001
-- writes (memsub.memory_write) are long-term; memsub.memory_remember writes a key as STM, LTM or Procedural.
--
-- Decay. Each entry has a strength: decay_weight as of last_access_ts (or created_at when never accessed),
-- halving every half-life without access:
--     strength(t) = decay_weight * 0.5 ^ ((t - coalesce(last_access_ts, created_at)) / half_life)
-- A write starts at 1; memsub.memory_touch (an access) sets decay_weight := strength(now) + 1, last_access_ts := now.
--
-- Promotion rule (memsub.memory_maintenance): the latest live version of a short-term key is promoted to LTM
-- when importance * strength(now) >= threshold (default 1.0, half-life 7 days). A very important memory
-- (importance 0.9) is promoted after one recent access (0.9 * ~2 >= 1); an unimportant one (0.2) needs about
-- five accesses close together; a memory nobody returns to never is. The run locks each version it judges; one
-- that a concurrent consolidation replaced while the run waited for it gives way to the new version, which
-- carries the same tier and decay state and is judged instead.

create or replace function memsub.memory_strength(
    p_decay_weight   double precision,
    p_last_access_ts timestamptz,
    p_created_at     timestamptz,
    p_at             timestamptz,
    p_half_life      interval
) returns double precision
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    -- The checks run only for a value that is not finite (a plain comparison first), so a scan pays nothing.
    -- From 1000 half-lives on the strength is 0: power(0.5, x) raises an underflow error past about 1074 (the
    -- nullif makes the power NULL there, and the coalesce 0). A missing half-life gives NULL.
    select case when p_half_life is null then null
                when p_decay_weight in ('NaN', 'Infinity', '-Infinity')
                then memsub._check_finite(p_decay_weight, 'decay_weight') else p_decay_weight end
         * coalesce(power(0.5, nullif(least(1000.0, greatest(0, date_part('epoch',
                                  case when isfinite(p_at) then p_at else memsub._check_finite_time(p_at, 'at') end
                                  - coalesce(case when p_last_access_ts is null or isfinite(p_last_access_ts)
                                                  then p_last_access_ts
                                                  else memsub._check_finite_time(p_last_access_ts, 'last_access_ts') end,
                                             case when isfinite(p_created_at) then p_created_at
                                                  else memsub._check_finite_time(p_created_at, 'created_at') end)))
                      / date_part('epoch', case when p_half_life >= interval '1 second' and isfinite(p_half_life)
                                                     or p_half_life is null then p_half_life
                                                else memsub._check_half_life(p_half_life) end)), 1000.0)), 0.0)
$$;
comment on function memsub.memory_strength(double precision, timestamptz, timestamptz, timestamptz, interval) is
    'Strength of a memory at a time: decay_weight halved once per half-life since its last access (or creation). '
    'A half-life under a second is refused (22023, half_life).';

create or replace function memsub.memory_remember(
    p_namespace        text,
    p_key              text,
    p_value            jsonb,
    p_tier             text             default 'STM',
    p_importance       double precision default 0.5,
    p_expected_version integer          default null,
    p_kind             text             default 'semantic',
    p_metadata         jsonb            default '{}'
) returns memsub.memory_entries
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_entry memsub.memory_entries;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace', p_namespace, 'key', p_key, 'tier', p_tier, 'kind', p_kind),
            memsub._check_limit(pg_column_size(p_value), 'max_json_bytes', 'value'),
            memsub._check_limit(pg_column_size(p_metadata), 'max_json_bytes', 'metadata');
    perform memsub._check_one_of(p_tier, memsub.memory_tiers(), 'tier');
    perform memsub._check_one_of(p_kind, array_remove(memsub.memory_types(), 'procedural'), 'kind');
    if p_importance is null then
        raise exception 'field "importance" is required' using errcode = '23502', column = 'importance';
    end if;
    perform memsub._check_unit(p_importance, 'importance');
    v_entry := memsub.memory_write(p_namespace, p_key, p_value, p_expected_version,
                                   case when p_tier = 'Procedural' then 'procedural' else p_kind end, p_metadata);
    update memsub.memory_entries m set short_term = (p_tier = 'STM'), importance = p_importance
     where m.tenant_id = v_entry.tenant_id and m.id = v_entry.id
    returning m.* into v_entry;
    return v_entry;
end
$$;
comment on function memsub.memory_remember(text, text, jsonb, text, double precision, integer, text, jsonb) is
    'memsub.memory_write with seed 003''s memory type: writes the next version of (namespace, key) as STM '
    '(short-term, promoted by memsub.memory_maintenance), LTM or Procedural, with an importance in [0, 1]. kind is '
    'seed 001''s semantic or episodic for STM and LTM. Same namespace rules, optimistic lock and audit as memory_write.';

-- The latest version of a key, locked: the one an access (memsub.memory_touch) or a promotion
-- (memsub.memory_maintenance) changes. A version written while this waited for the lock (a consolidation's, which
-- locks the live version it replaces) is the latest once the wait is over: the next pass reads and locks it.
create or replace function memsub._memory_latest_locked(p_tenant_id uuid, p_namespace text, p_key text)
returns memsub.memory_entries
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_entry memsub.memory_entries;
begin
    loop
        select m.* into v_entry from memsub.memory_entries m
         where m.tenant_id = p_tenant_id and m.namespace = p_namespace and m.key = p_key
         order by m.version desc limit 1
           for update;
        exit when not found or not exists (select from memsub.memory_entries n
                                            where n.tenant_id = p_tenant_id and n.namespace = p_namespace
                                              and n.key = p_key and n.version > v_entry.version);
    end loop;
    return v_entry;
end
$$;
comment on function memsub._memory_latest_locked(uuid, text, text) is
    'Internal: the latest version of (namespace, key) of the tenant, locked FOR UPDATE until the transaction ends, '
    'read again when a newer version committed while it waited (all fields NULL when the key has none).';

create or replace function memsub.memory_touch(
    p_namespace text,
    p_key       text,
    p_half_life interval default '7 days'
) returns memsub.memory_entries
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_entry  memsub.memory_entries;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace', p_namespace, 'key', p_key);
    perform memsub._check_memory_address(p_namespace, p_key);
    perform memsub._check_half_life(p_half_life);
    if not memsub._memory_namespace_writable(p_namespace) then
        raise exception 'namespace "%": accesses are recorded by contexts that may write it', p_namespace
            using errcode = '42501', column = 'namespace';
    end if;
    v_entry := memsub._memory_latest_locked(v_tenant, p_namespace, p_key);
    if v_entry.id is null or v_entry.is_deleted then
        raise exception 'memory key "%" in namespace "%" has no live entry', p_key, p_namespace
            using errcode = 'P0002', column = 'key';
    end if;
    update memsub.memory_entries m
       set decay_weight = memsub.memory_strength(m.decay_weight, m.last_access_ts, m.created_at, now(), p_half_life) + 1,
           last_access_ts = now()
     where m.tenant_id = v_tenant and m.id = v_entry.id
    returning m.* into v_entry;
    -- An access changes the entry: audited like every memory operation (sql/170_audit.sql).
    perform memsub._audit_record('memory_touch', p_session_id => v_entry.session_id, p_memory_entry_id => v_entry.id,
        p_namespace => p_namespace, p_key => p_key, p_version => v_entry.version, p_tenant_id => v_tenant,
        p_details => jsonb_build_object('decay_weight', v_entry.decay_weight, 'half_life', p_half_life::text));
    return v_entry;
end
$$;
comment on function memsub.memory_touch(text, text, interval) is
    'Records an access of the latest live version of (namespace, key): decay_weight := strength now + 1, '
    'last_access_ts := now; audited as memory_touch. Needs write access to the namespace (42501), like memory_write.';

create or replace function memsub.memory_maintenance(
    p_threshold double precision default 1.0,
    p_half_life interval         default '7 days'
) returns table (memory_entry_id uuid, namespace text, key text, version integer, importance double precision,
                 strength double precision, score double precision, outcome text)
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_row    record;
    v_entry  memsub.memory_entries;
begin
    if not memsub._caller_is_admin() then
        raise exception 'memsub.memory_maintenance needs a tenant_admin or platform_admin context'
            using errcode = '42501', column = 'roles';
    end if;
    if p_threshold is null or p_threshold <= 0 or memsub._check_finite(p_threshold, 'threshold') is null then
        raise exception 'field "threshold" must be a positive number' using errcode = '22023', column = 'threshold';
    end if;
    perform memsub._check_half_life(p_half_life);
    -- One maintenance run per tenant at a time.
    perform memsub._take_maintenance_lock('memory_maintenance', v_tenant::text);
    for v_row in
        select m.namespace, m.key
          from memsub.memory_entries m
         where m.tenant_id = v_tenant and m.short_term and not m.is_deleted
           and not exists (select from memsub.memory_entries n
                            where n.tenant_id = m.tenant_id and n.namespace = m.namespace and n.key = m.key
                              and n.version > m.version)
         order by m.namespace, m.key
           for update of m skip locked
    loop
        -- An entry a concurrent transaction holds (a memory_touch not yet committed, an application's own lock)
        -- is skipped, left for the next run: waiting for it would hold every entry locked so far, and the
        -- applications touching them, for as long as that transaction lasts.
        -- The version was the key's latest when the run started; one written since (a consolidation's) is the
        -- one judged instead.
        v_entry := memsub._memory_latest_locked(v_tenant, v_row.namespace, v_row.key);
        -- A latest version that is long-term or a deletion is not short-term memory: nothing to judge.
        continue when v_entry.id is null or not v_entry.short_term or v_entry.is_deleted;
        memory_entry_id := v_entry.id;
        namespace := v_entry.namespace;
        key := v_entry.key;
        version := v_entry.version;
        importance := v_entry.importance;
        strength := memsub.memory_strength(v_entry.decay_weight, v_entry.last_access_ts, v_entry.created_at, now(),
                                           p_half_life);
        score := importance * strength;
        if score >= p_threshold then
            update memsub.memory_entries m set short_term = false, promoted_at = now()
             where m.tenant_id = v_tenant and m.id = v_entry.id;
            perform memsub._audit_record('memory_promote', p_memory_entry_id => v_entry.id,
                p_namespace => v_entry.namespace, p_key => v_entry.key, p_version => v_entry.version,
                p_tenant_id => v_tenant,
                p_details => jsonb_build_object('from', 'STM', 'to', 'LTM', 'importance', v_entry.importance,
                                                'strength', strength, 'threshold', p_threshold,
                                                'half_life', p_half_life::text));
            outcome := 'promoted';
        else
            outcome := 'kept';
        end if;
        return next;
    end loop;
end
$$;
comment on function memsub.memory_maintenance(double precision, interval) is
    'Maintenance of short-term memory (tenant_admin or platform_admin context; 42501 naming roles otherwise): '
    'every latest live STM entry whose importance * strength now reaches threshold (default 1.0; strength halves '
    'every half_life, default 7 days, without access) is promoted to LTM (short_term false, promoted_at, audited '
    'as memory_promote). Reports every STM entry it looked at: promoted or kept. A version of a key written while '
    'the run waited for it (a consolidation''s) is the one judged and reported. An entry a concurrent transaction '
    'holds locked is neither waited for nor reported: the next run judges it. One run per tenant at a time '
    '(maintenance lock).';

grant execute on function
    memsub.memory_strength(double precision, timestamptz, timestamptz, timestamptz, interval)
    to memsub_app, memsub_analyst;
grant execute on function
    memsub.memory_remember(text, text, jsonb, text, double precision, integer, text, jsonb),
    memsub.memory_touch(text, text, interval),
    memsub.memory_maintenance(double precision, interval)
    to memsub_app;
