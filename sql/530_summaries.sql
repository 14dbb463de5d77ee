-- Area: reflection. Seed: seed 000 "INTELLIGENCE LAYER" (memory_summaries).
--
-- Intelligence layer: consolidated summaries over sets of packets, and the list of summaries due for
-- regeneration.

create or replace function memsub.record_summary(
    p_scope_type        text,
    p_scope_value       text,
    p_summary_text      text,
    p_source_packet_ids uuid[],
    p_key_facts         jsonb            default '[]',
    p_key_entities      text[]           default '{}',
    p_key_decisions     text[]           default '{}',
    p_vector            vector           default null,
    p_confidence        double precision default 0.5,
    p_valid_until       timestamptz      default null
) returns memsub.memory_summaries
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_ids      uuid[];
    v_found    integer;
    v_start    timestamptz;
    v_end      timestamptz;
    v_missing  uuid;
    v_summary  memsub.memory_summaries;
    v_scope    text;  -- the scope value as stored
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('scope_type', p_scope_type, 'scope_value', p_scope_value,
                                      'summary_text', p_summary_text),
            memsub._check_limit(cardinality(p_source_packet_ids), 'max_array_items', 'source_packet_ids'),
            memsub._check_limit(pg_column_size(p_key_facts), 'max_json_bytes', 'key_facts'),
            memsub._check_text_list(p_key_entities, 'key_entities'),
            memsub._check_text_list(p_key_decisions, 'key_decisions');
    perform memsub._check_no_blank_elements(p_key_entities, 'key_entities');
    perform memsub._check_one_of(p_scope_type, memsub.summary_scope_types(), 'scope_type');
    v_scope := memsub._require_text(p_scope_value, 'scope_value');
    perform memsub._require_text(p_summary_text, 'summary_text');
    perform memsub._check_vector(p_vector, 'vector');
    if p_source_packet_ids is null or cardinality(p_source_packet_ids) = 0 then
        raise exception 'field "source_packet_ids" must list at least one packet'
            using errcode = '22023', column = 'source_packet_ids';
    end if;
    if array_position(p_source_packet_ids, null) is not null then
        raise exception 'field "source_packet_ids" must not contain null' using errcode = '22023', column = 'source_packet_ids';
    end if;
    perform memsub._check_stored_time(p_valid_until, 'valid_until');
    if p_valid_until is not null and p_valid_until <= now() then
        raise exception 'field "valid_until" must be in the future, not %', p_valid_until
            using errcode = '22023', column = 'valid_until';
    end if;
    v_ids := array(select distinct u from unnest(p_source_packet_ids) as u order by u);
    select count(*), min(s."timestamp"), max(s."timestamp") into v_found, v_start, v_end
      from memsub.packet_store s where s.tenant_id = v_tenant and s.packet_id = any(v_ids);
    if v_found < cardinality(v_ids) then
        select u into v_missing from unnest(v_ids) as u
         where not exists (select from memsub.packet_store s where s.tenant_id = v_tenant and s.packet_id = u) limit 1;
        raise exception 'field "source_packet_ids": packet % does not exist or is not visible to this writer', v_missing
            using errcode = '23503', column = 'source_packet_ids';
    end if;
    -- A summary is read by its whole organization, with its packets' ids: it summarizes shared packets only.
    perform memsub._require_shared_packet(s, 'source_packet_ids')
       from memsub.packet_store s
      where s.tenant_id = v_tenant and s.packet_id = any(v_ids) and s.scope <> 'shared';
    -- created_at orders the summaries of a scope (summaries_due reports the newest): the time of the call, not of
    -- the transaction's start, and after every summary of the scope the caller sees, so that of summaries written
    -- in one transaction the last written is the newest.
    insert into memsub.memory_summaries (
        scope_type, scope_value, summary_text, key_facts, key_entities, key_decisions, source_packet_ids,
        packet_count, vector, confidence, coverage_start, coverage_end, valid_until,
        tenant_id, org_id, user_id, session_id, created_at)
    values (
        p_scope_type, v_scope, p_summary_text,
        coalesce(memsub._check_json_type(p_key_facts, 'array', 'key_facts'), '[]'),
        coalesce(p_key_entities, '{}'), coalesce(p_key_decisions, '{}'), v_ids, cardinality(v_ids), p_vector,
        coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5), v_start, v_end, p_valid_until,
        v_tenant, memsub.current_org_id(), memsub.current_user_id(), memsub.current_session_id(),
        greatest(clock_timestamp(),
                 (select max(s.created_at) + interval '1 microsecond' from memsub.memory_summaries s
                   where s.tenant_id = v_tenant and s.scope_type = p_scope_type and s.scope_value = v_scope)))
    returning * into v_summary;
    return v_summary;
end
$$;
comment on function memsub.record_summary(text, text, text, uuid[], jsonb, text[], text[], vector, double precision, timestamptz) is
    'Records a consolidated summary of a scope (thread, agent, topic, time_period, project, task) over a set of '
    'visible shared packets (a private or cursor packet: 22023 naming source_packet_ids); packet_count and the '
    'coverage window (first and last packet time) are computed from them; a blank key entity is refused (22023 '
    'naming key_entities[i]). '
    'created_at is the time of the call, later than every summary of the scope the caller sees: the last written '
    'is the newest, in one transaction too.';

create or replace function memsub.summaries_due(
    p_as_of timestamptz default now(),
    p_limit integer     default 100
) returns setof memsub.memory_summaries
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    perform memsub._check_count(p_limit, 'max_rows', 'limit');
    perform memsub._check_finite_time(p_as_of, 'as_of');
    -- Only the newest summary of each scope matters: an older one was already regenerated. A scope is a tenant's
    -- and an organization's (or the tenant-wide one): an admin sees several, each with its own newest summary.
    return query
        select m.* from (
            select distinct on (s.tenant_id, s.org_id, s.scope_type, s.scope_value) s.*
              from memsub.memory_summaries s
             order by s.tenant_id, s.org_id, s.scope_type, s.scope_value, s.created_at desc, s.summary_id
        ) m
         where m.valid_until is not null and m.valid_until <= coalesce(p_as_of, now())
         order by m.valid_until, m.summary_id
         limit p_limit;
end
$$;
comment on function memsub.summaries_due(timestamptz, integer) is
    'Summaries due for regeneration: the newest visible summary of each scope (of each tenant and organization) '
    'whose valid_until has passed (as of the given time), oldest first.';

call memsub._install_row_security('memsub.memory_summaries', array['org']);

grant select on memsub.memory_summaries to memsub_app, memsub_analyst;
grant execute on function
    memsub.record_summary(text, text, text, uuid[], jsonb, text[], text[], vector, double precision, timestamptz)
    to memsub_app;
grant execute on function memsub.summaries_due(timestamptz, integer) to memsub_app, memsub_analyst;
