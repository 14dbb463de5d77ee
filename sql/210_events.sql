-- Area: events. Seed: seed 000 "CORE MEMORY LAYER" (agent_memory_events, reasoning_traces).
--
-- Agent events and reasoning traces: what agents did and how they reasoned, optionally tied to a packet.
--
-- Writes follow the packet writes: SECURITY DEFINER functions owned by memsub_owner, bound by forced row-level
-- security, writing under the caller's tenant context. A referenced packet must be visible to the caller
-- (another tenant's or another user's private packet is indistinguishable from a missing one: 23503,
-- memsub._visible_packet). Rows linked to a packet take the packet's identity, scope and expiry, so they are
-- exactly as visible as the packet. A row without a packet is shared with the context's organization, as a packet
-- written without a scope is: a context has no scope of its own, each write states one, and these functions take
-- none (a private event or trace is recorded with the private packet it belongs to).

create or replace function memsub.record_event(
    p_agent_id   text,
    p_event_type text,
    p_content    jsonb       default '{}',
    p_packet_id  uuid        default null,
    p_timestamp  timestamptz default null
) returns memsub.agent_memory_events
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_packet memsub.packet_store := memsub._visible_packet(p_packet_id, 'packet_id');
    v_event  memsub.agent_memory_events;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('agent_id', p_agent_id, 'event_type', p_event_type),
            memsub._check_limit(pg_column_size(p_content), 'max_json_bytes', 'content');
    perform memsub._check_stored_time(p_timestamp, 'timestamp');
    insert into memsub.agent_memory_events (
        agent_id, "timestamp", packet_id, event_type, content, scope, ttl,
        tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
    values (
        memsub._require_text(p_agent_id, 'agent_id'),
        coalesce(p_timestamp, v_packet."timestamp", now()),
        p_packet_id,
        memsub._require_text(p_event_type, 'event_type'),
        coalesce(p_content, '{}'),
        coalesce(v_packet.scope, 'shared'),
        v_packet.ttl,
        v_tenant,
        case when p_packet_id is null then memsub.current_org_id() else v_packet.org_id end,
        case when p_packet_id is null then memsub.current_user_id() else v_packet.user_id end,
        v_packet.correlation_id,
        case when p_packet_id is null then memsub.current_session_id() else v_packet.session_id end,
        v_packet.trace_id)
    returning * into v_event;
    return v_event;
end
$$;
comment on function memsub.record_event(text, text, jsonb, uuid, timestamptz) is
    'Records an agent event, optionally linked to a visible packet (then it takes the packet''s time, identity, '
    'scope and expiry). Without a packet it is shared, read by the context''s organization as a packet written '
    'without a scope is; a private event is recorded with a private packet.';

create or replace function memsub.record_reasoning_trace(
    p_agent_id           text,
    p_packet_id          uuid    default null,
    p_steps              jsonb   default '[]',
    p_extracted_features jsonb   default '{}',
    p_inference_steps    jsonb   default '[]',
    p_reasoning_tokens   integer default 0,
    p_decision_tokens    integer default 0,
    p_confidence_scores  jsonb   default '{}'
) returns memsub.reasoning_traces
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_packet memsub.packet_store := memsub._visible_packet(p_packet_id, 'packet_id');
    v_trace  memsub.reasoning_traces;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('agent_id', p_agent_id),
            memsub._check_limit(pg_column_size(p_steps), 'max_json_bytes', 'steps'),
            memsub._check_limit(pg_column_size(p_extracted_features), 'max_json_bytes', 'extracted_features'),
            memsub._check_limit(pg_column_size(p_inference_steps), 'max_json_bytes', 'inference_steps'),
            memsub._check_limit(pg_column_size(p_confidence_scores), 'max_json_bytes', 'confidence_scores');
    if coalesce(p_reasoning_tokens, 0) < 0 then
        raise exception 'field "reasoning_tokens" must not be negative' using errcode = '22023', column = 'reasoning_tokens';
    end if;
    if coalesce(p_decision_tokens, 0) < 0 then
        raise exception 'field "decision_tokens" must not be negative' using errcode = '22023', column = 'decision_tokens';
    end if;
    insert into memsub.reasoning_traces (
        agent_id, packet_id, steps, extracted_features, inference_steps, reasoning_tokens, decision_tokens,
        confidence_scores, scope, ttl, tenant_id, org_id, user_id, correlation_id, session_id, distributed_trace_id)
    values (
        memsub._optional_text(coalesce(p_agent_id, v_packet.routing ->> 'agent')),
        p_packet_id,
        coalesce(memsub._check_json_type(p_steps, 'array', 'steps'), '[]'),
        coalesce(memsub._check_json_type(p_extracted_features, 'object', 'extracted_features'), '{}'),
        coalesce(memsub._check_json_type(p_inference_steps, 'array', 'inference_steps'), '[]'),
        coalesce(p_reasoning_tokens, 0),
        coalesce(p_decision_tokens, 0),
        coalesce(memsub._check_json_type(p_confidence_scores, 'object', 'confidence_scores'), '{}'),
        coalesce(v_packet.scope, 'shared'),
        v_packet.ttl,
        v_tenant,
        case when p_packet_id is null then memsub.current_org_id() else v_packet.org_id end,
        case when p_packet_id is null then memsub.current_user_id() else v_packet.user_id end,
        v_packet.correlation_id,
        case when p_packet_id is null then memsub.current_session_id() else v_packet.session_id end,
        v_packet.trace_id)
    returning * into v_trace;
    return v_trace;
end
$$;
comment on function memsub.record_reasoning_trace(text, uuid, jsonb, jsonb, jsonb, integer, integer, jsonb) is
    'Records a reasoning trace (steps, extracted features, inference steps, token counts, confidence scores), '
    'optionally for a visible packet whose identity, scope and expiry it takes; without a packet it is shared, '
    'read by the context''s organization as a packet written without a scope is.';

call memsub._install_row_security('memsub.agent_memory_events', array['org', 'user']);
call memsub._install_row_security('memsub.reasoning_traces', array['org', 'user']);

-- Expiry is honoured on every read, like the packets' (sql/150_packet_security.sql): a row derived from a packet
-- carries the packet's ttl and is never read once it has passed; purge_expired() (memsub_expiry_owner, the one
-- role these policies let see expired rows) deletes it.
call memsub._install_expiry_policy('memsub.agent_memory_events',
    'An event linked to a packet whose ttl has passed is never read (only memsub_expiry_owner, for purging, sees it).');
call memsub._install_expiry_policy('memsub.reasoning_traces',
    'A reasoning trace of a packet whose ttl has passed is never read (only memsub_expiry_owner, for purging, sees it).');

grant select on memsub.agent_memory_events, memsub.reasoning_traces to memsub_app, memsub_analyst;
grant execute on function
    memsub.record_event(text, text, jsonb, uuid, timestamptz),
    memsub.record_reasoning_trace(text, uuid, jsonb, jsonb, jsonb, integer, integer, jsonb)
    to memsub_app;
