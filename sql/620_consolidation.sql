-- Area: memory. Seed: seed 001 section 4.3.
--
-- Memory consolidation (seed 001 section 4.3).
--
-- A conflict is a key with more than one live, unconsolidated version (the seed's
-- "WHERE is_deleted = 0 GROUP BY namespace, key HAVING COUNT(*) > 1", minus versions already consolidated).
-- For each, a strategy turns all those versions into one value, which is written as a new version; the old
-- versions get metadata.consolidated_into = the new entry's id, the new one metadata.consolidated_from; one
-- memory_consolidate audit row per key.
--
-- Strategies are SQL functions memsub.consolidation_<name>(versions jsonb) returns jsonb, where versions is a
-- JSON array of {id, version, value, memory_type, user_id, session_id, created_at, metadata} ordered by version.
-- Built in: last_write_wins and merge_objects. Another strategy (an LLM verdict stored elsewhere, a domain merge)
-- is added by creating such a function in the memsub schema, which only its owner can do.

create or replace function memsub.consolidation_last_write_wins(p_versions jsonb) returns jsonb
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select p_versions -> -1 -> 'value' $$;
comment on function memsub.consolidation_last_write_wins(jsonb) is
    'Consolidation strategy last_write_wins: the value of the newest version.';

create or replace function memsub.consolidation_merge_objects(p_versions jsonb) returns jsonb
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    v_merged  jsonb := '{}';
    v_version jsonb;
begin
    for v_version in select e from jsonb_array_elements(p_versions) as e loop
        if jsonb_typeof(v_version -> 'value') <> 'object' then
            return p_versions -> -1 -> 'value';
        end if;
        v_merged := v_merged || (v_version -> 'value');
    end loop;
    return v_merged;
end
$$;
comment on function memsub.consolidation_merge_objects(jsonb) is
    'Consolidation strategy merge_objects: shallow merge of object values, oldest first (newer fields win); '
    'falls back to last_write_wins when a value is not an object.';

create or replace function memsub.consolidate_memories(
    p_strategy         text default 'last_write_wins',
    p_namespace_prefix text default null
) returns table (namespace text, key text, version integer, memory_entry_id uuid,
                 consolidated_versions integer[], strategy text, outcome text)
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_function regprocedure;
    v_conflict record;
    v_versions jsonb;
    v_value    jsonb;
    v_row      memsub.memory_entries;
    v_live     memsub.memory_entries;
begin
    if not (memsub._caller_is_admin()) then
        raise exception 'memsub.consolidate_memories needs a tenant_admin or platform_admin context'
            using errcode = '42501', column = 'strategy';
    end if;
    if p_strategy is null or p_strategy !~ '^[a-z][a-z0-9_]*$' or length(p_strategy) > 51 then
        raise exception 'strategy "%" is not a strategy name', coalesce(p_strategy, 'NULL')
            using errcode = '22023', column = 'strategy';
    end if;
    v_function := pg_catalog.to_regprocedure(format('memsub.%I(jsonb)', 'consolidation_' || p_strategy));
    if v_function is null then
        raise exception 'unknown consolidation strategy "%" (no function memsub.consolidation_%(jsonb))',
            p_strategy, p_strategy
            using errcode = '22023', column = 'strategy',
                  hint = 'Built in: last_write_wins, merge_objects.';
    end if;
    if p_namespace_prefix is not null then
        perform memsub._check_namespace_prefix(p_namespace_prefix);
    end if;
    -- One consolidation job per tenant at a time.
    perform memsub._take_maintenance_lock('consolidate_memories', v_tenant::text);

    for v_conflict in
        select m.namespace, m.key, array_agg(m.version order by m.version) as versions,
               array_agg(m.id order by m.version) as ids,
               (array_agg(m.memory_type order by m.version desc))[1] as memory_type
          from memsub.memory_entries m
         where m.tenant_id = v_tenant and not m.is_deleted and not (m.metadata ? 'consolidated_into')
           and (p_namespace_prefix is null
                or (m.namespace >= p_namespace_prefix collate "C" and m.namespace < p_namespace_prefix || ';' collate "C"
                    and (m.namespace = p_namespace_prefix or m.namespace like p_namespace_prefix || ':%')))
         group by m.namespace, m.key
        having count(*) > 1
         order by m.namespace, m.key
    loop
        -- One subtransaction per key: a key that cannot be written (a concurrent version, or a consolidated value or
        -- metadata over a resource limit) is reported and left as it is, and the run goes on with the next key.
        begin
            select jsonb_agg(jsonb_build_object('id', m.id, 'version', m.version, 'value', m.value,
                                                'memory_type', m.memory_type, 'user_id', m.user_id,
                                                'session_id', m.session_id, 'created_at', m.created_at,
                                                'metadata', m.metadata) order by m.version)
              into v_versions
              from memsub.memory_entries m
             where m.tenant_id = v_tenant and m.id = any(v_conflict.ids);
            execute format('select %s($1)', v_function::regproc) using v_versions into v_value;
            if v_value is null then
                raise exception 'consolidation strategy "%" returned NULL for key "%" in namespace "%"',
                    p_strategy, v_conflict.key, v_conflict.namespace
                    using errcode = '22004', column = 'strategy';
            end if;
            -- The new version replaces the live one (the newest of them): it keeps its metadata, its vector when the
            -- value is still its value, and its tier, importance and decay state. Locked, and so read as committed
            -- last: an access (memsub.memory_touch) or a promotion (memsub.memory_maintenance) of it is carried
            -- over, and one that comes later waits and then finds the new version.
            select m.* into v_live from memsub.memory_entries m
             where m.tenant_id = v_tenant and m.id = v_conflict.ids[cardinality(v_conflict.ids)]
               for update;
            -- Written over the live version only: a version committed meanwhile (the strategy may take its time)
            -- makes the write stale, and the key is left for the next run.
            v_row := memsub._store_memory_version(
                v_conflict.namespace, v_conflict.key, v_value, v_conflict.memory_type,
                v_live.metadata
                    || jsonb_build_object('consolidated_from', to_jsonb(v_conflict.ids), 'strategy', p_strategy),
                v_live.version, true, false, 'memory_consolidate',
                jsonb_build_object('strategy', p_strategy, 'consolidated_versions', to_jsonb(v_conflict.versions)),
                p_embedding => case when v_value = v_live.value then v_live.embedding end);
        exception
            when serialization_failure then
                return query select v_conflict.namespace, v_conflict.key, null::integer, null::uuid,
                                    v_conflict.versions, p_strategy, 'skipped'::text;
                continue;
            when program_limit_exceeded then
                -- The versions, the strategy's value or the new version's metadata (consolidated_from lists every
                -- version) over a limit (max_json_bytes, jsonb's own): no run can write it until the key changes.
                return query select v_conflict.namespace, v_conflict.key, null::integer, null::uuid,
                                    v_conflict.versions, p_strategy, 'too_large'::text;
                continue;
        end;
        if (v_live.short_term, v_live.importance, v_live.decay_weight, v_live.last_access_ts, v_live.promoted_at)
           is distinct from (v_row.short_term, v_row.importance, v_row.decay_weight, v_row.last_access_ts,
                             v_row.promoted_at) then
            update memsub.memory_entries m
               set short_term = v_live.short_term, importance = v_live.importance,
                   decay_weight = v_live.decay_weight, last_access_ts = v_live.last_access_ts,
                   promoted_at = v_live.promoted_at
             where m.tenant_id = v_tenant and m.id = v_row.id
            returning m.* into v_row;
        end if;
        update memsub.memory_entries m
           set metadata = m.metadata || jsonb_build_object('consolidated_into', v_row.id,
                                                           'consolidated_at', now(), 'strategy', p_strategy)
         where m.tenant_id = v_tenant and m.id = any(v_conflict.ids);
        return query select v_conflict.namespace, v_conflict.key, v_row.version, v_row.id,
                            v_conflict.versions, p_strategy, 'consolidated'::text;
    end loop;
end
$$;
comment on function memsub.consolidate_memories(text, text) is
    'Consolidation job (seed 001 section 4.3; tenant_admin or platform_admin): for every key with more than one '
    'live unconsolidated version (optionally under a namespace prefix), applies the strategy '
    'memsub.consolidation_<strategy>(jsonb) (built in: last_write_wins, merge_objects), writes the result as a new '
    'version over the live one (keeping its metadata, tier, importance, decay state, and its vector when the value '
    'is unchanged), marks the old versions consolidated_into it and audits memory_consolidate. One run per tenant '
    'at a time; a key written concurrently, even while its strategy runs, is reported skipped (left for the next '
    'run), one whose versions, consolidated value or metadata would exceed a resource limit too_large (left as it '
    'is); the run goes on with the next key.';

grant execute on function memsub.consolidate_memories(text, text) to memsub_tenant_admin;
