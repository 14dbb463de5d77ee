-- Core layer: shared input checks for the layer functions, agent events, reasoning traces and knowledge facts.
--
-- Layer writes follow the packet writes: SECURITY DEFINER functions owned by memsub_owner, bound by forced
-- row-level security, writing under the caller's tenant context. A referenced packet must be visible to the
-- caller (another tenant's or another user's private packet is indistinguishable from a missing one: 23503).
-- Rows linked to a packet take the packet's identity and scope, so they are exactly as visible as the packet.

-- Input checks -----------------------------------------------------------------------------------------------

create or replace function memsub._require_text(p_value text, p_field text) returns text
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is null then
        raise exception 'field "%" is required', p_field using errcode = '23502', column = p_field;
    end if;
    if btrim(p_value) = '' then
        raise exception 'field "%" must not be blank', p_field using errcode = '22023', column = p_field;
    end if;
    return regexp_replace(btrim(p_value), '\s+', ' ', 'g');
end
$$;
comment on function memsub._require_text(text, text) is
    'A required text field, trimmed with inner whitespace collapsed; NULL raises 23502 and blank 22023, naming the field.';

create or replace function memsub.normalize_text(p_value text) returns text
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select lower(regexp_replace(btrim(p_value), '\s+', ' ', 'g')) $$;
comment on function memsub.normalize_text(text) is 'Matching form of a name: trimmed, lower case, inner whitespace collapsed to one space.';

create or replace function memsub._normalize_json_value(p_value jsonb) returns text
language sql immutable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    select case when jsonb_typeof(p_value) = 'string' then memsub.normalize_text(p_value #>> '{}')
                else p_value::text end
$$;
comment on function memsub._normalize_json_value(jsonb) is
    'Matching form of a JSON value: strings as memsub.normalize_text, any other value as its canonical JSON text.';

create or replace function memsub._check_unit(p_value double precision, p_field text) returns double precision
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is not null and (p_value < 0 or p_value > 1 or p_value = 'NaN'::double precision) then
        raise exception 'field "%" must be between 0 and 1, not %', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_unit(double precision, text) is
    'Returns a value in [0, 1] (or NULL) unchanged; raises 22023 naming the field otherwise.';

create or replace function memsub._check_one_of(p_value text, p_allowed text[], p_field text) returns text
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is null then
        raise exception 'field "%" is required (one of %)', p_field, array_to_string(p_allowed, ', ')
            using errcode = '23502', column = p_field;
    end if;
    if p_value <> all(p_allowed) then
        raise exception 'field "%" must be one of %, not "%"', p_field, array_to_string(p_allowed, ', '), p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_one_of(text, text[], text) is
    'Returns the value when it is one of the allowed values; raises 23502 (NULL) or 22023 naming the field.';

create or replace function memsub._check_json_type(p_value jsonb, p_type text, p_field text) returns jsonb
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is not null and jsonb_typeof(p_value) <> p_type then
        raise exception 'field "%" must be a JSON %, not %', p_field, p_type, jsonb_typeof(p_value)
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_json_type(jsonb, text, text) is
    'Returns the JSON value when it is NULL or of the given JSON type; raises 22023 naming the field otherwise.';

create or replace function memsub._check_object_keys(
    p_value jsonb, p_field text, p_keys text[], p_shape text, p_what text
) returns jsonb
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    v_key text;
begin
    if jsonb_typeof(p_value) <> 'object' then
        raise exception 'field "%" must be an object %', p_field, p_shape
            using errcode = '22023', column = p_field;
    end if;
    select k into v_key from jsonb_object_keys(p_value) as k where k <> all(p_keys) order by k limit 1;
    if v_key is not null then
        raise exception 'field "%.%" is not part of %', p_field, v_key, p_what
            using errcode = '22023', column = p_field || '.' || v_key;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_object_keys(jsonb, text, text[], text, text) is
    'Returns the JSON value when it is an object with no key outside p_keys; raises 22023 naming the field (not an '
    'object, message showing p_shape) or the field and the first unknown key (not part of p_what) otherwise.';

create or replace function memsub.vector_dimension() returns integer
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$ select s.value::integer from memsub.installation_settings s where s.name = 'vector_dimension' $$;
comment on function memsub.vector_dimension() is
    'Dimension of every vector column of this installation (recorded when migrating; 1536 unless memsub.vector_dimension was set).';

create or replace function memsub._check_vector(p_value vector, p_field text) returns vector
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    expected integer := memsub.vector_dimension();
begin
    if p_value is not null and vector_dims(p_value) <> expected then
        raise exception 'field "%" must have % dimensions (this installation''s vector_dimension), not %',
            p_field, expected, vector_dims(p_value)
            using errcode = '22023', column = p_field;
    end if;
    -- pgvector computes a cosine distance from norms summed in single precision: a zero vector, or one whose
    -- squares underflow or overflow single precision, has NaN distances. A vector's distance to itself is NaN
    -- exactly then.
    if p_value is not null and cosine_distance(p_value, p_value) = 'NaN'::double precision then
        raise exception 'field "%" must have a positive, finite norm (a zero vector, or elements too small or too '
                        'large to square in single precision, has no cosine distance)', p_field
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_vector(vector, text) is
    'Returns the vector when it is NULL or has the installation''s dimension and a usable norm (not a zero vector, '
    'squares representable in single precision); raises 22023 naming the field otherwise.';

create or replace function memsub._check_finite(p_value double precision, p_field text) returns double precision
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is not null
       and (p_value = 'NaN'::double precision or p_value in ('Infinity'::double precision, '-Infinity'::double precision)) then
        raise exception 'field "%" must be a finite number, not %', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_finite(double precision, text) is
    'Returns the number (or NULL) unchanged when it is finite; raises 22023 naming the field for NaN and infinities.';

create or replace function memsub._check_finite_time(p_value timestamptz, p_field text) returns timestamptz
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is not null and not isfinite(p_value) then
        raise exception 'field "%" must be a finite time, not %; leave it NULL for an open bound', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_finite_time(timestamptz, text) is
    'Returns the timestamp (or NULL) unchanged when it is finite; raises 22023 naming the field for +/-infinity.';

create or replace function memsub._check_finite_interval(p_value interval, p_field text) returns interval
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is not null and not isfinite(p_value) then
        raise exception 'field "%" must be a finite interval, not %', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._check_finite_interval(interval, text) is
    'Returns the interval (or NULL) unchanged when it is finite; raises 22023 naming the field for +/-infinity.';

create or replace function memsub._json_vector(p_value jsonb, p_field text) returns vector
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, public, pg_temp
as $$
begin
    if p_value is null or jsonb_typeof(p_value) = 'null' then
        return null;
    end if;
    -- Every element a JSON number that single precision can hold, so the cast below cannot fail.
    if jsonb_typeof(p_value) <> 'array' or jsonb_array_length(p_value) = 0
       or exists (select from jsonb_array_elements(p_value) as x(e)
                   where jsonb_typeof(x.e) <> 'number' or abs((x.e #>> '{}')::numeric) > 3.4028234e38) then
        raise exception 'field "%" must be a non-empty JSON array of numbers within single precision range', p_field
            using errcode = '22023', column = p_field;
    end if;
    return memsub._check_vector((p_value::text)::vector, p_field);
end
$$;
comment on function memsub._json_vector(jsonb, text) is
    'A vector given as a JSON array of numbers, checked by memsub._check_vector; raises 22023 naming the field for '
    'anything else (non-numbers, numbers beyond single precision, an empty array). NULL for JSON null.';

create or replace function memsub._json_query_vector(p_value jsonb, p_field text, p_caller text) returns vector
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, memsub, public, pg_temp
as $$
begin
    return (p_value #>> '{}')::vector;
exception when others then
    raise exception '%: % must be an array of numbers', p_caller, p_field
        using errcode = '22023', column = p_field;
end
$$;
comment on function memsub._json_query_vector(jsonb, text, text) is
    'A query vector of any dimension given as a JSON array of numbers (NULL for NULL), for searches that compare it '
    'only with stored vectors of its own dimension; raises 22023 naming the field, after the caller''s prefix, for '
    'anything that is not a vector.';

create or replace function memsub._float_array_vector(p_value double precision[], p_field text) returns vector
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, public, pg_temp
as $$
begin
    if p_value is null then
        return null;
    end if;
    if cardinality(p_value) = 0
       or exists (select from unnest(p_value) as x(e)
                   where x.e is null or x.e = 'NaN'::double precision or abs(x.e) > 3.4028234e38) then
        raise exception 'field "%" must be a non-empty array of finite numbers within single precision range', p_field
            using errcode = '22023', column = p_field;
    end if;
    return memsub._check_vector(p_value::vector, p_field);
end
$$;
comment on function memsub._float_array_vector(double precision[], text) is
    'A vector given as double precision[], checked by memsub._check_vector; raises 22023 naming the field for an '
    'empty array, NULL, NaN or infinite elements, or elements beyond single precision. NULL for NULL.';

create or replace function memsub.visible_packet(p_packet_id uuid, p_field text) returns memsub.packet_store
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    found_packet memsub.packet_store;
begin
    if p_packet_id is null then
        return null;
    end if;
    select s.* into found_packet from memsub.packet_store s
     where s.tenant_id = memsub._require_tenant_id() and s.packet_id = p_packet_id;
    if not found then
        raise exception 'field "%": packet % does not exist or is not visible to this writer', p_field, p_packet_id
            using errcode = '23503', column = p_field;
    end if;
    return found_packet;
end
$$;
comment on function memsub.visible_packet(uuid, text) is
    'The packet with this id when the caller may see it (NULL for a NULL id); raises 23503 naming the field otherwise.';

create or replace function memsub.require_shared_packet(p_packet memsub.packet_store, p_field text)
returns memsub.packet_store
language plpgsql immutable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_packet.packet_id is not null and p_packet.scope <> 'shared' then
        raise exception 'field "%": packet % has scope %; tenant-wide knowledge can only come from shared packets',
            p_field, p_packet.packet_id, p_packet.scope
            using errcode = '22023', column = p_field;
    end if;
    return p_packet;
end
$$;
comment on function memsub.require_shared_packet(memsub.packet_store, text) is
    'Refuses (22023) a cursor or l-private packet as the source of tenant-wide knowledge (facts, relationships).';

-- Agent events and reasoning traces -------------------------------------------------------------------------

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
    v_packet memsub.packet_store := memsub.visible_packet(p_packet_id, 'packet_id');
    v_event  memsub.agent_memory_events;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_limit(length(p_agent_id), 'max_text_chars', 'agent_id'),
            memsub._check_limit(length(p_event_type), 'max_text_chars', 'event_type'),
            memsub._check_limit(pg_column_size(p_content), 'max_json_bytes', 'content');
    perform memsub._check_finite_time(p_timestamp, 'timestamp');
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
    'scope and expiry).';

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
    v_packet memsub.packet_store := memsub.visible_packet(p_packet_id, 'packet_id');
    v_trace  memsub.reasoning_traces;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_limit(length(p_agent_id), 'max_text_chars', 'agent_id'),
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
        nullif(btrim(coalesce(p_agent_id, v_packet.routing ->> 'agent', '')), ''),
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
    'optionally for a visible packet whose identity, scope and expiry it takes.';

-- Knowledge facts ----------------------------------------------------------------------------------------------

create or replace function memsub.assert_fact(
    p_subject       text,
    p_predicate     text,
    p_object        jsonb,
    p_confidence    double precision default 0.5,
    p_source_packet uuid             default null
) returns memsub.knowledge_facts
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant       uuid := memsub._require_tenant_id();
    v_subject      text := memsub._require_text(p_subject, 'subject');
    v_predicate    text := memsub.normalize_text(memsub._require_text(p_predicate, 'predicate'));
    v_confidence   double precision := coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5);
    v_subject_norm text := memsub.normalize_text(v_subject);
    v_object_norm  text;
    v_packet       memsub.packet_store;
    v_fact         memsub.knowledge_facts;
    v_others       integer;
    v_packets      uuid[];
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_limit(length(p_subject), 'max_text_chars', 'subject'),
            memsub._check_limit(length(p_predicate), 'max_text_chars', 'predicate'),
            memsub._check_limit(pg_column_size(p_object), 'max_json_bytes', 'object');
    if p_object is null or jsonb_typeof(p_object) = 'null' then
        raise exception 'field "object" is required' using errcode = '23502', column = 'object';
    end if;
    v_object_norm := memsub._normalize_json_value(p_object);
    v_packet := memsub.require_shared_packet(memsub.visible_packet(p_source_packet, 'source_packet'), 'source_packet');

    -- One (subject, predicate) of a tenant is asserted by one transaction at a time, so reinforcement and
    -- contradiction counting see every committed assertion whatever the concurrency.
    perform memsub.take_maintenance_lock('assert_fact', v_tenant::text || '/' || v_subject_norm || '/' || v_predicate);
    -- An expired fact is gone for every reader: asserting it again starts it afresh.
    perform memsub._drop_expired_fact(v_tenant, v_subject_norm, v_predicate, v_object_norm);

    -- Expiry: the packet's (none without a packet); a reinforced fact lives as long as its latest support.
    update memsub.knowledge_facts f
       set supporting_packet_count = f.supporting_packet_count + 1,
           confidence = 1 - (1 - f.confidence) * (1 - v_confidence),
           ttl = memsub._later_expiry(f.ttl, v_packet.ttl),
           updated_at = now()
     where f.tenant_id = v_tenant and f.subject_normalized = v_subject_norm and f.predicate = v_predicate
       and f.object_normalized = v_object_norm
    returning f.* into v_fact;
    if not found then
        insert into memsub.knowledge_facts (
            subject, predicate, object, confidence, source_packet, subject_normalized, object_normalized, ttl,
            tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
        values (
            v_subject, v_predicate, p_object, v_confidence, p_source_packet, v_subject_norm, v_object_norm,
            v_packet.ttl, v_tenant, memsub.current_org_id(), memsub.current_user_id(), v_packet.correlation_id,
            memsub.current_session_id(), v_packet.trace_id)
        returning * into v_fact;
    end if;

    -- A different object for the same subject and predicate contradicts the facts already recorded: each of
    -- them counts one contradiction, the asserted fact one per fact it contradicts, and so do the packets.
    with contradicted as (
        update memsub.knowledge_facts f
           set contradiction_count = f.contradiction_count + 1, updated_at = now()
         where f.tenant_id = v_tenant and f.subject_normalized = v_subject_norm and f.predicate = v_predicate
           and f.object_normalized <> v_object_norm
        returning f.source_packet
    )
    select count(*), array_agg(distinct c.source_packet) filter (where c.source_packet is not null)
      into v_others, v_packets
      from contradicted c;
    if v_others > 0 then
        update memsub.knowledge_facts f
           set contradiction_count = f.contradiction_count + v_others
         where f.tenant_id = v_tenant and f.fact_id = v_fact.fact_id
        returning f.* into v_fact;
        update memsub.packet_store s
           set contradiction_count = s.contradiction_count + 1
         where s.tenant_id = v_tenant
           and s.packet_id = any(coalesce(v_packets, '{}') || p_source_packet);
    end if;
    return v_fact;
end
$$;
comment on function memsub.assert_fact(text, text, jsonb, double precision, uuid) is
    'Asserts a fact. Subject and object are normalized (trimmed, lower case, single spaces; non-string objects as '
    'canonical JSON). The same fact again adds one supporting assertion and raises confidence to '
    '1 - (1 - old) * (1 - new). A different object for the same subject and predicate is a contradiction: '
    'counted on every fact involved and on their (visible) source packets. The fact expires with the packets that '
    'asserted it (the latest of their ttl; never once asserted without an expiring packet); an expired fact asserted '
    'again starts afresh. Race-free: assertions about one subject and predicate are serialized.';

call memsub.install_row_security('memsub.agent_memory_events', array['org', 'user']);
call memsub.install_row_security('memsub.reasoning_traces', array['org', 'user']);
call memsub.install_row_security('memsub.knowledge_facts', array[]::text[]);

-- Expiry is honoured on every read, like the packets' (sql/060): a row derived from a packet carries the packet's
-- ttl and is never read once it has passed; purge_expired() (memsub_expiry_owner, the one role these policies
-- let see expired rows) deletes it.
drop policy if exists not_expired on memsub.agent_memory_events;
create policy not_expired on memsub.agent_memory_events as restrictive for select to public
    using (ttl is null or ttl > (select pg_catalog.now() at time zone 'UTC')
           or (select current_user = 'memsub_expiry_owner'::name));
comment on policy not_expired on memsub.agent_memory_events is
    'An event linked to a packet whose ttl has passed is never read (only memsub_expiry_owner, for purging, sees it).';
drop policy if exists not_expired on memsub.reasoning_traces;
create policy not_expired on memsub.reasoning_traces as restrictive for select to public
    using (ttl is null or ttl > (select pg_catalog.now() at time zone 'UTC')
           or (select current_user = 'memsub_expiry_owner'::name));
comment on policy not_expired on memsub.reasoning_traces is
    'A reasoning trace of a packet whose ttl has passed is never read (only memsub_expiry_owner, for purging, sees it).';
drop policy if exists not_expired on memsub.knowledge_facts;
create policy not_expired on memsub.knowledge_facts as restrictive for select to public
    using (ttl is null or ttl > (select pg_catalog.now() at time zone 'UTC')
           or (select current_user = 'memsub_expiry_owner'::name));
comment on policy not_expired on memsub.knowledge_facts is
    'A fact whose supporting packets have all expired is never read (only memsub_expiry_owner, for purging, sees it).';

grant select on memsub.installation_settings to memsub_app, memsub_analyst;
grant select on memsub.agent_memory_events, memsub.reasoning_traces, memsub.knowledge_facts
    to memsub_app, memsub_analyst;
grant execute on function
    memsub.vector_dimension(), memsub.normalize_text(text)
    to memsub_app, memsub_analyst;
grant execute on function
    memsub.record_event(text, text, jsonb, uuid, timestamptz),
    memsub.record_reasoning_trace(text, uuid, jsonb, jsonb, jsonb, integer, integer, jsonb),
    memsub.assert_fact(text, text, jsonb, double precision, uuid)
    to memsub_app;
