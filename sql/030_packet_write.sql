-- Writing PacketEnvelopes (seed 004): validation, normalization, lineage, thread consistency, dedup.
--
-- memsub.write_packet(envelope) and memsub.write_packets(array) are the only way rows enter packet_store.
-- They run as memsub_owner (SECURITY DEFINER) under the caller's tenant context; row-level security is
-- forced on the owner too, so a writer only ever sees, references and writes its own tenant's packets.
-- Errors name the envelope field (SQLSTATE, message and the COLUMN diagnostic field); docs/errors.md lists them.

create or replace function memsub.envelope_uuid(p_value jsonb, p_field text) returns uuid
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is null or jsonb_typeof(p_value) = 'null' then
        return null;
    end if;
    if jsonb_typeof(p_value) <> 'string'
       or (p_value #>> '{}') !~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' then
        raise exception 'envelope field "%" is not a valid UUID: %', p_field, left(p_value::text, 80)
            using errcode = '22P02', column = p_field;
    end if;
    return (p_value #>> '{}')::uuid;
end
$$;
comment on function memsub.envelope_uuid(jsonb, text) is
    'Reads an optional UUID field of an envelope; raises SQLSTATE 22P02 naming the field when malformed.';

create or replace function memsub.envelope_timestamp(p_value jsonb, p_field text) returns timestamptz
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    text_value text;
    parts      text[];
begin
    if p_value is null or jsonb_typeof(p_value) = 'null' then
        return null;
    end if;
    text_value := p_value #>> '{}';
    parts := regexp_match(text_value,
        '^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])'
        '([T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,6})?)?)?'
        '(Z|z|[+-]([01]\d|2[0-3])(:?[0-5]\d)?)?$');
    -- The shape is checked by the pattern, the calendar by arithmetic: no cast can fail after this.
    if jsonb_typeof(p_value) <> 'string' or parts is null or parts[1]::integer = 0
       or (parts[4] is null and parts[8] is not null)
       or parts[3]::integer > extract(day from make_date(parts[1]::integer, parts[2]::integer, 1)
                                              + interval '1 month - 1 day') then
        raise exception 'envelope field "%" is not an ISO 8601 timestamp: %', p_field, left(p_value::text, 80)
            using errcode = '22007', column = p_field;
    end if;
    if parts[8] is not null and parts[4] is not null then
        return text_value::timestamptz;
    end if;
    return text_value::timestamp at time zone 'UTC';  -- no zone given: the envelope speaks UTC
end
$$;
comment on function memsub.envelope_timestamp(jsonb, text) is
    'Reads an optional ISO 8601 timestamp field (UTC when no zone is given); raises SQLSTATE 22007 naming the field.';

create or replace function memsub.envelope_object(p_envelope jsonb, p_field text) returns jsonb
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    value jsonb := p_envelope -> p_field;
begin
    if value is null or jsonb_typeof(value) = 'null' then
        return null;
    end if;
    if jsonb_typeof(value) <> 'object' then
        raise exception 'envelope field "%" must be a JSON object, not %', p_field, jsonb_typeof(value)
            using errcode = '22023', column = p_field;
    end if;
    return value;
end
$$;
comment on function memsub.envelope_object(jsonb, text) is
    'Reads an optional object field of an envelope; raises SQLSTATE 22023 naming the field when it is not an object.';

create or replace function memsub.envelope_text(p_envelope jsonb, p_field text) returns text
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    value jsonb := p_envelope -> p_field;
begin
    if value is null or jsonb_typeof(value) = 'null' then
        return null;
    end if;
    if jsonb_typeof(value) <> 'string' then
        raise exception 'envelope field "%" must be a string, not %', p_field, jsonb_typeof(value)
            using errcode = '22023', column = p_field;
    end if;
    return value #>> '{}';
end
$$;
comment on function memsub.envelope_text(jsonb, text) is
    'Reads an optional string field of an envelope; raises SQLSTATE 22023 naming the field when it is not a string.';

create or replace function memsub.envelope_unit_number(p_value jsonb, p_field text) returns double precision
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is null or jsonb_typeof(p_value) = 'null' then
        return null;
    end if;
    if jsonb_typeof(p_value) <> 'number' or (p_value::text)::numeric not between 0 and 1 then
        raise exception 'envelope field "%" must be a number between 0 and 1, not %', p_field, left(p_value::text, 80)
            using errcode = '22023', column = p_field;
    end if;
    -- round to what double precision can hold, so 1e-400 is 0 rather than an underflow error
    return round((p_value::text)::numeric, 300)::double precision;
end
$$;
comment on function memsub.envelope_unit_number(jsonb, text) is
    'Reads an optional number in [0, 1]; raises SQLSTATE 22023 naming the field otherwise.';

drop function if exists memsub.packet_content_hash(text, jsonb, uuid, uuid[], text, uuid, uuid, text);
create or replace function memsub.packet_content_hash(
    p_packet_type text, p_payload jsonb, p_thread_id uuid, p_parent_ids uuid[],
    p_scope text, p_org_id uuid, p_user_id uuid, p_session_id text,
    p_timestamp timestamptz, p_stated_packet_id uuid
) returns text
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select encode(sha256(convert_to(jsonb_build_object(
        'packet_type', p_packet_type,
        'payload',     p_payload,
        'thread_id',   p_thread_id,
        'parent_ids',  to_jsonb(array(select p from unnest(p_parent_ids) as p order by p)),
        'scope',       p_scope,
        'org_id',      p_org_id,
        'user_id',     p_user_id,
        'session_id',  p_session_id,
        'timestamp',   to_char(p_timestamp at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'packet_id',   p_stated_packet_id)::text, 'UTF8')), 'hex')
$$;
comment on function memsub.packet_content_hash(text, jsonb, uuid, uuid[], text, uuid, uuid, text, timestamptz, uuid) is
    'Deduplication hash of a packet: sha256 of the canonical JSON of its type, payload, thread, sorted parents, '
    'scope, writer identity (org, user, session), timestamp and the packet_id the writer named (NULL when the '
    'database generated it). Tags, metadata and ttl do not count. The same words at another time are another packet.';

create or replace function memsub.store_packet_envelope(p_envelope jsonb, p_position integer)
returns memsub.packet_write_result
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    known_fields constant text[] := array[
        'packet_id', 'packet_type', 'timestamp', 'payload', 'metadata', 'provenance', 'confidence',
        'reasoning_block', 'thread_id', 'lineage', 'tags', 'ttl', 'scope', 'importance_score', 'routing',
        'correlation_id', 'session_id', 'trace_id', 'memory'];
    derivation_types constant text[] := array['split', 'merge', 'transform', 'inference'];
    v_tenant        uuid := memsub._require_tenant_id();
    v_org           uuid := memsub.current_org_id();
    v_user          uuid := memsub.current_user_id();
    v_field         text;
    v_packet_id     uuid;
    v_stated_id     uuid;
    v_stated_time   timestamptz;
    v_memory        jsonb;
    v_unknown       text[];
    v_packet_type   text;
    v_payload       jsonb;
    v_timestamp     timestamptz;
    v_metadata      jsonb;
    v_provenance    jsonb;
    v_confidence    jsonb;
    v_thread_id     uuid;
    v_lineage       jsonb;
    v_parent_ids    uuid[] := '{}';
    v_derivation    text;
    v_generation    integer := 0;
    v_root          uuid;
    v_parent_gen    integer;
    v_parent_root   uuid;
    v_tags          text[] := '{}';
    v_ttl           timestamptz;
    v_scope         text;
    v_importance    double precision;
    v_correlation   uuid;
    v_session       text;
    v_trace         text;
    v_hash          text;
    v_thread_org    uuid;
    v_thread_known  boolean;
    v_missing       uuid;
    v_element       jsonb;
    v_stored        memsub.packet_store%rowtype;
    v_inserted      integer;
    v_null_parent   boolean;
    v_written       jsonb;
begin
    if p_envelope is null or jsonb_typeof(p_envelope) <> 'object' then
        raise exception 'envelope must be a JSON object'
            using errcode = '22023', column = 'envelope';
    end if;
    perform memsub._check_limit(pg_column_size(p_envelope), 'max_envelope_bytes', 'envelope');
    -- The writer's identity comes from the context, never from the envelope.
    select k into v_field from jsonb_object_keys(p_envelope) as k
     where k in ('tenant_id', 'org_id', 'user_id') order by k limit 1;
    if v_field is not null then
        raise exception 'envelope field "%" is set from the context (memsub.set_context), not by the envelope', v_field
            using errcode = '22023', column = v_field;
    end if;
    -- Fields of a newer version of the contract are kept in the envelope and reported, never refused.
    v_unknown := array(select k from jsonb_object_keys(p_envelope) as k where k <> all(known_fields) order by k);

    -- Required fields.
    v_packet_type := memsub.envelope_text(p_envelope, 'packet_type');
    if v_packet_type is null then
        raise exception 'envelope field "packet_type" is required'
            using errcode = '23502', column = 'packet_type';
    end if;
    if btrim(v_packet_type) = '' or length(v_packet_type) > 200 then
        raise exception 'envelope field "packet_type" must be 1 to 200 characters, not blank'
            using errcode = '22023', column = 'packet_type';
    end if;
    v_payload := p_envelope -> 'payload';
    if v_payload is null or jsonb_typeof(v_payload) = 'null' then
        raise exception 'envelope field "payload" is required'
            using errcode = '23502', column = 'payload';
    end if;

    -- Optional fields.
    v_stated_id := memsub.envelope_uuid(p_envelope -> 'packet_id', 'packet_id');
    v_packet_id := coalesce(v_stated_id, gen_random_uuid());
    v_stated_time := memsub.envelope_timestamp(p_envelope -> 'timestamp', 'timestamp');
    v_timestamp := coalesce(v_stated_time, now());
    v_memory := memsub.envelope_object(p_envelope, 'memory');
    v_metadata := memsub.envelope_object(p_envelope, 'metadata');
    v_provenance := memsub.envelope_object(p_envelope, 'provenance');
    v_confidence := memsub.envelope_object(p_envelope, 'confidence');
    perform memsub.envelope_object(p_envelope, 'reasoning_block');
    perform memsub.envelope_object(p_envelope, 'routing');
    if v_confidence is not null then
        perform memsub.envelope_unit_number(v_confidence -> 'score', 'confidence.score');
    end if;
    v_thread_id := memsub.envelope_uuid(p_envelope -> 'thread_id', 'thread_id');
    v_ttl := memsub.envelope_timestamp(p_envelope -> 'ttl', 'ttl');
    if v_ttl is not null and v_ttl <= v_timestamp then
        raise exception 'envelope field "ttl" (%) must be later than the packet timestamp (%)', v_ttl, v_timestamp
            using errcode = '22023', column = 'ttl';
    end if;
    v_importance := coalesce(memsub.envelope_unit_number(p_envelope -> 'importance_score', 'importance_score'), 0.5);
    v_correlation := memsub.envelope_uuid(p_envelope -> 'correlation_id', 'correlation_id');
    v_session := coalesce(memsub.envelope_text(p_envelope, 'session_id'), memsub.current_session_id());
    v_trace := memsub.envelope_text(p_envelope, 'trace_id');

    v_scope := coalesce(memsub.envelope_text(p_envelope, 'scope'), 'shared');
    if v_scope not in ('shared', 'cursor', 'l-private') then
        raise exception 'envelope field "scope" must be shared, cursor or l-private, not "%"', v_scope
            using errcode = '22023', column = 'scope';
    end if;
    if v_scope <> 'shared' and v_user is null then
        raise exception 'scope "%" needs a user in the context (memsub.set_context(..., user_id => ...))', v_scope
            using errcode = '22023', column = 'scope';
    end if;

    if p_envelope ? 'tags' and jsonb_typeof(p_envelope -> 'tags') <> 'null' then
        if jsonb_typeof(p_envelope -> 'tags') <> 'array' then
            raise exception 'envelope field "tags" must be an array of strings'
                using errcode = '22023', column = 'tags';
        end if;
        perform memsub._check_limit(jsonb_array_length(p_envelope -> 'tags'), 'max_tags', 'tags');
        select e into v_element from jsonb_array_elements(p_envelope -> 'tags') as e
         where jsonb_typeof(e) <> 'string' or btrim(e #>> '{}') = '' limit 1;
        if found then
            raise exception 'envelope field "tags" must hold non-blank strings, found %', left(v_element::text, 80)
                using errcode = '22023', column = 'tags';
        end if;
        perform memsub._check_limit(max(length(e #>> '{}')), 'max_tag_chars', 'tags')
           from jsonb_array_elements(p_envelope -> 'tags') as e;
        -- Distinct tags in order of first appearance: one grouping, linear in the number of tags.
        v_tags := array(select d.tag from (select e #>> '{}' as tag, min(o) as first
                                             from jsonb_array_elements(p_envelope -> 'tags') with ordinality as t(e, o)
                                            group by 1) d
                         order by d.first);
    end if;

    -- Lineage: validate, then check integrity against stored (visible) parents.
    v_lineage := memsub.envelope_object(p_envelope, 'lineage');
    if v_lineage is not null then
        if v_lineage ? 'parent_ids' and jsonb_typeof(v_lineage -> 'parent_ids') <> 'null' then
            if jsonb_typeof(v_lineage -> 'parent_ids') <> 'array' then
                raise exception 'envelope field "lineage.parent_ids" must be an array of UUIDs'
                    using errcode = '22023', column = 'lineage.parent_ids';
            end if;
            perform memsub._check_limit(jsonb_array_length(v_lineage -> 'parent_ids'), 'max_parent_ids',
                                       'lineage.parent_ids');
            -- Distinct parents in order of first appearance: one grouping, linear in the number of parents.
            with ids as (
                select memsub.envelope_uuid(e, 'lineage.parent_ids') as id, o
                  from jsonb_array_elements(v_lineage -> 'parent_ids') with ordinality as p(e, o)
            )
            select coalesce(bool_or(ids.id is null), false),
                   array(select d.id from (select i.id, min(i.o) as first from ids i where i.id is not null
                                            group by i.id) d order by d.first)
              into v_null_parent, v_parent_ids
              from ids;
            if v_null_parent then
                raise exception 'envelope field "lineage.parent_ids" must not contain null'
                    using errcode = '22023', column = 'lineage.parent_ids';
            end if;
        end if;
        v_derivation := memsub.envelope_text(v_lineage, 'derivation_type');
        if v_derivation is not null and v_derivation <> all(derivation_types) then
            raise exception 'envelope field "lineage.derivation_type" must be one of split, merge, transform, inference, not "%"', v_derivation
                using errcode = '22023', column = 'lineage.derivation_type';
        end if;
        v_unknown := v_unknown || array(
            select 'lineage.' || k from jsonb_object_keys(v_lineage) as k
             where k not in ('parent_ids', 'derivation_type', 'generation', 'root_packet_id') order by k);
    end if;
    if v_packet_id = any(v_parent_ids) then
        raise exception 'lineage cycle: packet % lists itself in lineage.parent_ids', v_packet_id
            using errcode = '23514', column = 'lineage.parent_ids';
    end if;
    if cardinality(v_parent_ids) > 0 then
        -- One primary-key probe per parent, in order, planned on every call (EXECUTE). A static statement
        -- gets a generic plan cached for the session; planned while packet_store was nearly empty, it
        -- reads the tenant through any tenant-leading index and keeps scanning the whole tenant on every
        -- write as the table grows.
        foreach v_missing in array v_parent_ids loop
            execute 'select coalesce((s.envelope -> ''lineage'' ->> ''generation'')::integer, 0),
                            coalesce((s.envelope -> ''lineage'' ->> ''root_packet_id'')::uuid, s.packet_id)
                       from memsub.packet_store s where s.tenant_id = $1 and s.packet_id = $2'
               into v_parent_gen, v_parent_root using v_tenant, v_missing;
            if v_parent_root is null then
                raise exception 'lineage integrity: parent packet % does not exist or is not visible to this writer', v_missing
                    using errcode = '23503', column = 'lineage.parent_ids';
            end if;
            v_generation := greatest(v_generation, v_parent_gen + 1);
            v_root := coalesce(v_root, v_parent_root);  -- the root of the first parent
        end loop;
    else
        v_root := v_packet_id;
    end if;
    if v_lineage ? 'generation' and (v_lineage -> 'generation') is distinct from to_jsonb(v_generation) then
        raise exception 'envelope field "lineage.generation" is % but the parents give %', v_lineage -> 'generation', v_generation
            using errcode = '22023', column = 'lineage.generation';
    end if;
    if v_lineage ? 'root_packet_id'
       and memsub.envelope_uuid(v_lineage -> 'root_packet_id', 'lineage.root_packet_id') is distinct from v_root then
        raise exception 'envelope field "lineage.root_packet_id" is % but the parents give %', v_lineage ->> 'root_packet_id', v_root
            using errcode = '22023', column = 'lineage.root_packet_id';
    end if;

    -- Thread consistency: a thread belongs to the organization of its first packet.
    if v_thread_id is not null then
        select t.org_id, true into v_thread_org, v_thread_known
          from memsub.packet_threads t where t.tenant_id = v_tenant and t.thread_id = v_thread_id;
        if v_thread_known and v_thread_org is distinct from v_org then
            raise exception 'thread consistency: thread % belongs to another organization', v_thread_id
                using errcode = '23514', column = 'thread_id';
        end if;
    end if;

    if v_memory is not null then
        v_unknown := v_unknown || array(
            select 'memory.' || k from jsonb_object_keys(v_memory) as k
             where k not in ('facts', 'relationships', 'embeddings', 'reasoning_trace') order by k);
        if v_ttl is not null and v_ttl <= now() then
            raise exception 'envelope field "memory": the packet has already expired (ttl %), so nothing can be '
                            'fanned out from it', v_ttl
                using errcode = '22023', column = 'ttl';
        end if;
    end if;
    v_unknown := array(select u from unnest(v_unknown) as u order by u);

    v_hash := memsub.packet_content_hash(v_packet_type, v_payload, v_thread_id, v_parent_ids,
                                        v_scope, v_org, v_user, v_session, v_timestamp, v_stated_id);

    insert into memsub.packet_store as s (
        packet_id, packet_type, envelope, "timestamp", routing, provenance,
        thread_id, parent_ids, tags, ttl,
        scope, importance_score, content_hash,
        tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
    values (
        v_packet_id, v_packet_type,
        p_envelope || jsonb_strip_nulls(jsonb_build_object(
            'packet_id', v_packet_id,
            'packet_type', v_packet_type,
            'timestamp', to_char(v_timestamp at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'tags', case when cardinality(v_tags) > 0 then to_jsonb(v_tags) end,
            'ttl', to_char(v_ttl at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'scope', v_scope,
            'session_id', v_session,
            'lineage', case when v_lineage is not null or cardinality(v_parent_ids) > 0 then
                coalesce(v_lineage, '{}') || jsonb_strip_nulls(jsonb_build_object(
                    'parent_ids', to_jsonb(v_parent_ids), 'derivation_type', v_derivation))
                || jsonb_build_object('generation', v_generation, 'root_packet_id', v_root) end)),
        v_timestamp,
        coalesce(p_envelope -> 'routing', v_metadata),
        v_provenance,
        v_thread_id, v_parent_ids, v_tags, v_ttl at time zone 'UTC',
        v_scope, v_importance, v_hash,
        v_tenant, v_org, v_user, v_correlation, v_session, v_trace)
    on conflict do nothing;
    -- No RETURNING: it would have to pass the read policies, which hide a packet that is already expired.
    get diagnostics v_inserted = row_count;

    if v_inserted = 0 then
        -- A named packet_id is the packet's identity: the same id again is the same packet when its content
        -- matches (a retry), and an error otherwise. Without an id, the same content at the same time is a retry.
        if v_stated_id is not null then
            -- Planned on every call (EXECUTE), like the parent probes above: a cached generic plan made while the
            -- table was small would scan the tenant.
            execute 'select s.* from memsub.packet_store s where s.tenant_id = $1 and s.packet_id = $2'
               into v_stored using v_tenant, v_stated_id;
            if v_stored.packet_id is null then
                raise exception 'packet_id % is already used by a packet this writer cannot see (another user''s, '
                                'or expired)', v_stated_id
                    using errcode = '23505', column = 'packet_id';
            end if;
            if (v_stored.packet_type, v_stored.envelope -> 'payload', v_stored.thread_id, v_stored.scope,
                v_stored.org_id, v_stored.user_id, v_stored.session_id, v_stored."timestamp")
               is distinct from
               (v_packet_type, v_payload, v_thread_id, v_scope, v_org, v_user, v_session,
                coalesce(v_stated_time, v_stored."timestamp"))
               or array(select p from unnest(v_stored.parent_ids) as p order by p)
                  is distinct from array(select p from unnest(v_parent_ids) as p order by p) then
                raise exception 'packet_id % already names a packet with other content', v_stated_id
                    using errcode = '23505', column = 'packet_id',
                          hint = 'A packet is immutable: write the new content under a new packet_id.';
            end if;
        else
            select s.* into v_stored from memsub.packet_store s
             where s.tenant_id = v_tenant and s.content_hash = v_hash;
            if not found then
                raise exception 'deduplication: a packet with the same content and time exists but is not visible '
                                'to this writer'
                    using errcode = '23505', column = 'payload';
            end if;
        end if;
        return row(p_position, v_stored.packet_id, v_stored.packet_type, v_stored."timestamp", v_stored.thread_id,
                   v_stored.parent_ids,
                   coalesce((v_stored.envelope -> 'lineage' ->> 'generation')::integer, 0),
                   coalesce((v_stored.envelope -> 'lineage' ->> 'root_packet_id')::uuid, v_stored.packet_id),
                   v_stored.content_hash, true, '{}'::jsonb, v_unknown)::memsub.packet_write_result;
    end if;

    v_written := jsonb_build_object('packet_store', 1);
    if v_thread_id is not null and not coalesce(v_thread_known, false) then
        insert into memsub.packet_threads (tenant_id, thread_id, org_id, first_packet_id, created_at)
        values (v_tenant, v_thread_id, v_org, v_packet_id, v_timestamp)
        on conflict (tenant_id, thread_id) do nothing;
        if found then
            v_written := v_written || jsonb_build_object('packet_threads', 1);
        else
            -- Another writer registered the thread first: re-check its organization.
            select t.org_id into v_thread_org from memsub.packet_threads t
             where t.tenant_id = v_tenant and t.thread_id = v_thread_id;
            if v_thread_org is distinct from v_org then
                raise exception 'thread consistency: thread % belongs to another organization', v_thread_id
                    using errcode = '23514', column = 'thread_id';
            end if;
        end if;
    end if;

    -- The layer rows the envelope's memory field asks for (facts, relationships, embeddings, reasoning trace),
    -- in the same transaction. The payload itself is never interpreted.
    if v_memory is not null then
        v_written := v_written || memsub.fan_out_packet(
            v_packet_id, v_memory, v_scope, coalesce((v_confidence ->> 'score')::double precision, 0.5),
            coalesce(p_envelope -> 'routing' ->> 'agent', v_metadata ->> 'agent'));
    end if;

    return row(p_position, v_packet_id, v_packet_type, v_timestamp, v_thread_id,
               v_parent_ids, v_generation, v_root, v_hash, false,
               v_written, v_unknown)::memsub.packet_write_result;
end
$$;
comment on function memsub.store_packet_envelope(jsonb, integer) is
    'Internal: validates, normalizes and stores one envelope for write_packet/write_packets. Not granted to clients.';

create or replace function memsub.write_packet(p_envelope jsonb) returns memsub.packet_write_result
language sql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$ select memsub.store_packet_envelope(p_envelope, 1) $$;
comment on function memsub.write_packet(jsonb) is
    'Writes one PacketEnvelope into packet_store under the current tenant context and returns its PacketWriteResult. '
    'Fills packet_id and timestamp, computes lineage generation and root, checks lineage integrity and thread '
    'consistency, and deduplicates (a named packet_id identifies the packet; without one, the same content at the '
    'same time is the same packet), returning the existing packet flagged deduplicated. Fans the envelope''s memory '
    'field (facts, relationships, embeddings, reasoning_trace) out into the layer tables; the payload is free. '
    'Fields of a newer contract version are kept and listed in unknown_fields. All or nothing.';

create or replace function memsub.canonical_uuid_text(p_value text) returns text
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case when p_value ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$'
                then p_value::uuid::text end
$$;
comment on function memsub.canonical_uuid_text(text) is
    'Canonical text form of a UUID string, or NULL when the string is not a UUID.';

create or replace function memsub.write_packets(p_envelopes jsonb) returns setof memsub.packet_write_result
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    total       integer;
    idx         integer;
    v_current   integer;   -- the envelope being stored, named in errors
    top         integer;
    parent_idx  integer;
    envelope    jsonb;
    batch_ids   jsonb;
    state       integer[];  -- per envelope: 0 not reached, 1 waiting for its batch parents, 2 stored
    stack       integer[] := '{}';
    depth       integer;
    waits       boolean;
    results     memsub.packet_write_result[];
    err_state   text;
    err_message text;
    err_column  text;
    err_hint    text;
begin
    if p_envelopes is null or jsonb_typeof(p_envelopes) <> 'array' then
        raise exception 'memsub.write_packets expects a JSON array of envelopes'
            using errcode = '22023', column = 'envelopes';
    end if;
    perform memsub._check_limit(pg_column_size(p_envelopes), 'max_batch_bytes', 'envelopes');
    total := memsub._check_limit(jsonb_array_length(p_envelopes), 'max_batch_envelopes', 'envelopes');
    if total = 0 then
        return;
    end if;
    results := array_fill(null::memsub.packet_write_result, array[total]);
    state := array_fill(0, array[total]);
    -- Envelopes with an explicit packet_id may be referenced as parents by other envelopes of the batch:
    -- canonical packet_id -> position of its first envelope.
    select coalesce(jsonb_object_agg(d.id, d.position), '{}') into batch_ids
      from (select memsub.canonical_uuid_text(e ->> 'packet_id') as id, min(o) as position
              from jsonb_array_elements(p_envelopes) with ordinality as x(e, o)
             where jsonb_typeof(e) = 'object' and memsub.canonical_uuid_text(e ->> 'packet_id') is not null
             group by 1) d;
    begin
        -- Parents inside the batch are written before their children: a depth-first walk in input order that
        -- reaches each envelope once, so the work is linear in envelopes plus parent references. Meeting an
        -- envelope that is still waiting for its own parents is a cycle.
        for idx in 1 .. total loop
            continue when state[idx] = 2;
            stack := array[idx];
            while cardinality(stack) > 0 loop
                depth := cardinality(stack);
                top := stack[depth];
                if state[top] = 2 then
                    stack := stack[1:depth - 1];
                    continue;
                end if;
                envelope := p_envelopes -> (top - 1);
                waits := false;
                if state[top] = 0 then
                    state[top] := 1;
                    if jsonb_typeof(envelope) = 'object' and jsonb_typeof(envelope -> 'lineage') = 'object'
                       and jsonb_typeof(envelope -> 'lineage' -> 'parent_ids') = 'array' then
                        for parent_idx in
                            select (batch_ids ->> memsub.canonical_uuid_text(p))::integer
                              from jsonb_array_elements_text(envelope -> 'lineage' -> 'parent_ids')
                                   with ordinality as x(p, o)
                             where batch_ids ? memsub.canonical_uuid_text(p)
                               and (batch_ids ->> memsub.canonical_uuid_text(p))::integer <> top
                             order by o desc
                        loop
                            if state[parent_idx] = 1 then
                                v_current := null;
                                raise exception 'lineage cycle: envelopes % of the batch reference each other through lineage.parent_ids',
                                    array_to_string(array(select distinct s from unnest(stack) as s
                                                           where state[s] = 1 order by s), ', ')
                                    using errcode = '23514', column = 'lineage.parent_ids';
                            end if;
                            if state[parent_idx] = 0 then
                                stack := stack || parent_idx;
                                waits := true;
                            end if;
                        end loop;
                    end if;
                end if;
                continue when waits;
                v_current := top;
                results[top] := memsub.store_packet_envelope(envelope, top);
                state[top] := 2;
                stack := stack[1:depth - 1];
            end loop;
        end loop;
    exception when others then
        -- One handler for the whole batch (a single subtransaction): name the failing envelope and re-raise.
        get stacked diagnostics err_state = returned_sqlstate, err_message = message_text,
                                err_column = column_name, err_hint = pg_exception_hint;
        if v_current is not null then
            err_message := format('envelope %s of the batch: %s', v_current, err_message);
        end if;
        if coalesce(err_hint, '') = '' then
            raise exception using errcode = err_state, message = err_message, column = coalesce(err_column, '');
        end if;
        raise exception using errcode = err_state, message = err_message, column = coalesce(err_column, ''),
                              hint = err_hint;
    end;
    return query select r.* from unnest(results) as r;
end
$$;
comment on function memsub.write_packets(jsonb) is
    'Writes a JSON array of PacketEnvelopes in one transaction (all or nothing) and returns one PacketWriteResult per '
    'envelope, in input order. Parents inside the batch are written before their children; a cycle is rejected '
    '(SQLSTATE 23514). Errors name the failing envelope''s 1-based position.';
