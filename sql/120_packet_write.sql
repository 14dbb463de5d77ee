-- Area: packets. Seed: seed 004 "Field Reference", "JSON Schema", "Database Mapping", "Contracts & Invariants".
--
-- Writing PacketEnvelopes (seed 004): validation, normalization, lineage, thread consistency, dedup.
--
-- memsub.write_packet(envelope) and memsub.write_packets(array) are the only way rows enter packet_store.
-- They run as memsub_owner (SECURITY DEFINER) under the caller's tenant context; row-level security is
-- forced on the owner too, so a writer only ever sees, references and writes its own tenant's packets.
-- Errors name the envelope field (SQLSTATE, message and the COLUMN diagnostic field); docs/errors.md lists them.

create or replace function memsub._envelope_uuid(p_value jsonb, p_field text) returns uuid
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
comment on function memsub._envelope_uuid(jsonb, text) is
    'Reads an optional UUID field of an envelope; raises SQLSTATE 22P02 naming the field when malformed.';

create or replace function memsub._envelope_timestamp(p_value jsonb, p_field text) returns timestamptz
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    text_value text;
    has_time   boolean;
    has_zone   boolean;
    v_time     timestamptz;
begin
    if p_value is null or jsonb_typeof(p_value) = 'null' then
        return null;
    end if;
    text_value := p_value #>> '{}';
    -- The shape is checked by the pattern (no capture groups: matching alone is an order of magnitude cheaper
    -- than extracting groups), the calendar by arithmetic on the fixed-width date: no cast can fail after this.
    if jsonb_typeof(p_value) = 'string' and text_value ~
        '^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?)?(?:Z|z|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?)?$' then
        has_time := substr(text_value, 11, 1) in ('T', ' ');
        has_zone := case when has_time then substr(text_value, 12) ~ '[-+Zz]' else length(text_value) > 10 end;
    end if;
    -- Separate tests: a failed pattern leaves nothing the date arithmetic could read.
    if has_time is not null then
        if left(text_value, 4) = '0000' or (has_zone and not has_time)
           or substr(text_value, 9, 2)::integer
              > extract(day from make_date(left(text_value, 4)::integer, substr(text_value, 6, 2)::integer, 1)
                                 + interval '1 month - 1 day') then
            has_time := null;
        end if;
    end if;
    if has_time is null then
        raise exception 'envelope field "%" is not an ISO 8601 timestamp: %', p_field, left(p_value::text, 80)
            using errcode = '22007', column = p_field;
    end if;
    -- ISO 8601 offsets reach 23:59; PostgreSQL's stop at 15:59 (its cast would raise 22009, naming nothing).
    if has_zone and substr(text_value, 12) ~ '[+-](?:1[6-9]|2\d)' then
        raise exception 'envelope field "%" (%) has a UTC offset beyond the 15:59 hours PostgreSQL holds', p_field,
            text_value
            using errcode = '22008', column = p_field;
    end if;
    if has_zone then
        v_time := text_value::timestamptz;
    else
        v_time := text_value::timestamp at time zone 'UTC';  -- no zone given: the envelope speaks UTC
    end if;
    -- Years 1 to 9999 in UTC, what ISO 8601 clients hold (Python's datetime among them): PostgreSQL holds more,
    -- and a packet past them could be written but no longer read by such a client.
    if v_time < '0001-01-01 00:00:00+00' or v_time >= '10000-01-01 00:00:00+00' then
        raise exception 'envelope field "%" (%) falls outside years 1 to 9999 in UTC', p_field, text_value
            using errcode = '22008', column = p_field;
    end if;
    return v_time;
end
$$;
comment on function memsub._envelope_timestamp(jsonb, text) is
    'Reads an optional ISO 8601 timestamp field (UTC when no zone is given); raises SQLSTATE 22007 naming the field '
    'for text that is no such timestamp, 22008 for a time outside years 1 to 9999 in UTC or a UTC offset of 16 '
    'hours or more.';

drop function if exists memsub._envelope_object(jsonb, text);
drop function if exists memsub._envelope_text(jsonb, text);
create or replace function memsub._envelope_value(p_envelope jsonb, p_field text, p_type text) returns jsonb
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    value jsonb := p_envelope -> p_field;
begin
    if value is null or jsonb_typeof(value) = 'null' then
        return null;
    end if;
    if jsonb_typeof(value) <> p_type then
        raise exception 'envelope field "%" must be %, not %', p_field,
            case p_type when 'object' then 'a JSON object' else 'a ' || p_type end, jsonb_typeof(value)
            using errcode = '22023', column = p_field;
    end if;
    return value;
end
$$;
comment on function memsub._envelope_value(jsonb, text, text) is
    'Reads an optional field of an envelope of the JSON type p_type (object, string): NULL when absent or JSON '
    'null; raises SQLSTATE 22023 naming the field when it has another type.';

create or replace function memsub._envelope_unit_number(p_value jsonb, p_field text) returns double precision
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
    return memsub._json_double(p_value, p_field);  -- 1e-400 is 0, not an underflow error
end
$$;
comment on function memsub._envelope_unit_number(jsonb, text) is
    'Reads an optional number in [0, 1]; raises SQLSTATE 22023 naming the field otherwise.';

drop function if exists memsub.packet_content_hash(text, jsonb, uuid, uuid[], text, uuid, uuid, text);
create or replace function memsub._packet_content_hash(
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
comment on function memsub._packet_content_hash(text, jsonb, uuid, uuid[], text, uuid, uuid, text, timestamptz, uuid) is
    'Deduplication hash of a packet: sha256 of the canonical JSON of its type, payload, thread, sorted parents, '
    'scope, writer identity (org, user, session), timestamp and the packet_id the writer named (NULL when the '
    'database generated it). Tags, metadata and ttl do not count. The same words at another time are another packet.';

-- Vectors are stored once (docs/decisions.md, "An embedding's vector is stored once"): the vector of every
-- memory.embeddings element lives in memory_embeddings.vector, and the stored envelope keeps JSON null in its
-- place. The readers (get_packets and get_packet, get_thread, search with p_with_packets) put the vectors back
-- (memsub.get_packets, sql/130_packet_read.sql), so callers get the envelope they wrote, each vector
-- number as the exact value of the single-precision number memory_embeddings holds (a vector sent as
-- single-precision values comes back identical).

create or replace function memsub._embedding_chunk_index(p_element jsonb) returns integer
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case when coalesce(p_element ->> 'chunk_index', '0') ~ '^\s*[+-]?\d{1,9}\s*$'
                then coalesce(p_element ->> 'chunk_index', '0')::integer end
$$;
comment on function memsub._embedding_chunk_index(jsonb) is
    'The chunk_index of a memory.embeddings element as the fan-out stores it (0 when absent), or NULL when it is not '
    'an integer (the fan-out refuses such an element).';

create or replace function memsub._envelope_vectors_apart(p_envelope jsonb) returns jsonb
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case when jsonb_typeof(p_envelope -> 'memory' -> 'embeddings') = 'array' then
        jsonb_set(p_envelope, '{memory,embeddings}', (
            select coalesce(jsonb_agg(case when jsonb_typeof(x.e) = 'object' then jsonb_set(x.e, '{vector}', 'null')
                                           else x.e end order by x.o), '[]')
              from jsonb_array_elements(p_envelope -> 'memory' -> 'embeddings') with ordinality as x(e, o)))
        else p_envelope end
$$;
comment on function memsub._envelope_vectors_apart(jsonb) is
    'The envelope as packet_store keeps it: every memory.embeddings[].vector (stored in memory_embeddings.vector) '
    'replaced by JSON null, and written as JSON null where the element has none (its vector was given apart, in '
    'write_packet''s p_vectors).';

-- The header fields are stored once too: packet_id, packet_type, timestamp and scope are columns of every packet,
-- and the stored envelope leaves them out (docs/decisions.md, "An envelope's header fields are stored once").
-- The readers (sql/130_packet_read.sql) put them back from the columns, as the write path normalized them; an
-- envelope written before 2.28.0 keeps its own, which are the same. Both sides spell the four names out, in the
-- statement itself: a helper function (with its search_path setting) would be called once per row.
comment on column memsub.packet_store.envelope is
    'The normalized PacketEnvelope as JSON, less what the row holds elsewhere: each memory.embeddings[] vector is '
    'JSON null (in memory_embeddings.vector) and packet_id, packet_type, timestamp and scope are left out (the '
    'row''s columns; since 2.28.0). The readers (get_packets, get_thread) return the envelope as written.';

create or replace function memsub._memory_embeddings_envelope_guard() returns trigger
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
begin
    if not exists (select from memsub.packet_store s
                    cross join lateral jsonb_array_elements(
                        case when jsonb_typeof(s.envelope -> 'memory' -> 'embeddings') = 'array'
                             then s.envelope -> 'memory' -> 'embeddings' else '[]' end) as x(e)
                    where s.tenant_id = old.tenant_id and s.packet_id = old.packet_id
                      and x.e -> 'vector' = 'null'::jsonb and x.e ->> 'embedding_type' = old.embedding_type
                      and memsub._embedding_chunk_index(x.e) = old.chunk_index) then
        return new;  -- stored with store_embedding alone: replaceable
    end if;
    -- Every stored column but created_at (which store_embedding sets on each call) and search_tsv (generated
    -- from chunk_text, not yet computed here).
    if (old.embedding_id, old.packet_id, old.embedding_type, old.vector, old.chunk_index, old.chunk_text,
        old.metadata, old.scope, old.tenant_id, old.org_id, old.user_id, old.correlation_id, old.session_id,
        old.trace_id, old.ttl)
       is not distinct from
       (new.embedding_id, new.packet_id, new.embedding_type, new.vector, new.chunk_index, new.chunk_text,
        new.metadata, new.scope, new.tenant_id, new.org_id, new.user_id, new.correlation_id, new.session_id,
        new.trace_id, new.ttl) then
        return old;  -- the envelope's embedding stored again as it is: it stays exactly as written
    end if;
    raise exception 'the % embedding (chunk_index %) of packet % is part of the packet''s immutable envelope '
                    'and cannot be replaced', old.embedding_type, old.chunk_index, old.packet_id
        using errcode = '0A000',
              column = case when old.vector is distinct from new.vector then 'vector'
                            when old.chunk_text is distinct from new.chunk_text then 'chunk_text'
                            when old.metadata is distinct from new.metadata then 'metadata'
                            else 'embedding_id' end,
              hint = 'Write a new packet with the new embedding, or store it under another chunk_index.';
end
$$;
comment on function memsub._memory_embeddings_envelope_guard() is
    'Trigger function: refuses to change an embedding that belongs to its packet''s envelope (SQLSTATE 0A000 naming '
    'the first changed of vector, chunk_text and metadata, or embedding_id when another column changed), and keeps '
    'it as written when it is stored again unchanged; embeddings stored with store_embedding alone may be replaced.';

call memsub._ensure_trigger('memsub.memory_embeddings', 'memory_embeddings_envelope_vector', $create$create trigger memory_embeddings_envelope_vector
    before update on memsub.memory_embeddings
    for each row execute function memsub._memory_embeddings_envelope_guard()$create$);
comment on trigger memory_embeddings_envelope_vector on memsub.memory_embeddings is
    'Keeps the embeddings of packet envelopes immutable (every column but created_at): the envelope holds them '
    'only here.';

-- Writing one envelope (_store_packet_envelope, for write_packet and the envelope-by-envelope path of
-- write_packets), in the order its checks raise: the fields (_packet_from_envelope, with _envelope_tags and
-- _envelope_lineage), the lineage against the stored parents (_packet_lineage), the thread (_packet_thread_check),
-- the embedding slots (_packet_embeddings_check), the insert shared with the batch path (_insert_packets), a
-- retry (_packet_deduplicated), the thread's registration (_packet_thread_register) and the fan-out.

create or replace function memsub._envelope_fields(p_part text) returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case p_part
        when 'envelope' then array[
            'packet_id', 'packet_type', 'timestamp', 'payload', 'metadata', 'provenance', 'confidence',
            'reasoning_block', 'thread_id', 'lineage', 'tags', 'ttl', 'scope', 'importance_score', 'routing',
            'correlation_id', 'session_id', 'trace_id', 'memory']
        when 'lineage' then array['parent_ids', 'derivation_type', 'generation', 'root_packet_id']
        when 'memory' then array['facts', 'relationships', 'embeddings', 'reasoning_trace']
    end
$$;
comment on function memsub._envelope_fields(text) is
    'The fields of the envelope contract this version knows, of the envelope (''envelope''), its lineage '
    '(''lineage'') or its memory (''memory''); any other field is kept and listed in unknown_fields.';

create or replace function memsub._envelope_tags(p_envelope jsonb) returns text[]
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_element jsonb;
begin
    if jsonb_typeof(p_envelope -> 'tags') is distinct from 'array' then
        raise exception 'envelope field "tags" must be an array of strings'
            using errcode = '22023', column = 'tags';
    end if;
    perform memsub._check_limit(jsonb_array_length(p_envelope -> 'tags'), 'max_tags', 'tags');
    select e into v_element from jsonb_array_elements(p_envelope -> 'tags') as e
     where jsonb_typeof(e) <> 'string' or memsub._is_blank(e #>> '{}') limit 1;
    if found then
        raise exception 'envelope field "tags" must hold non-blank strings, found %', left(v_element::text, 80)
            using errcode = '22023', column = 'tags';
    end if;
    perform memsub._check_limit(max(length(e #>> '{}')), 'max_tag_chars', 'tags')
       from jsonb_array_elements(p_envelope -> 'tags') as e;
    -- Distinct tags in order of first appearance: one grouping, linear in the number of tags.
    return array(select d.tag from (select e #>> '{}' as tag, min(o) as first
                                      from jsonb_array_elements(p_envelope -> 'tags') with ordinality as t(e, o)
                                     group by 1) d
                  order by d.first);
end
$$;
comment on function memsub._envelope_tags(jsonb) is
    'Internal: the envelope''s tags (present and not null) as distinct strings in order of first appearance; '
    'raises SQLSTATE 22023 or the limit''s error naming the field "tags".';

create or replace function memsub._envelope_lineage(
    p_lineage jsonb, out parent_ids uuid[], out derivation text, out unknown text[]
)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_null_parent boolean;
begin
    parent_ids := '{}';
    if p_lineage ? 'parent_ids' and jsonb_typeof(p_lineage -> 'parent_ids') <> 'null' then
        if jsonb_typeof(p_lineage -> 'parent_ids') <> 'array' then
            raise exception 'envelope field "lineage.parent_ids" must be an array of UUIDs'
                using errcode = '22023', column = 'lineage.parent_ids';
        end if;
        perform memsub._check_limit(jsonb_array_length(p_lineage -> 'parent_ids'), 'max_parent_ids',
                                   'lineage.parent_ids');
        -- Distinct parents in order of first appearance: one grouping, linear in the number of parents.
        with ids as (
            select memsub._envelope_uuid(e, 'lineage.parent_ids') as id, o
              from jsonb_array_elements(p_lineage -> 'parent_ids') with ordinality as p(e, o)
        )
        select coalesce(bool_or(ids.id is null), false),
               array(select d.id from (select i.id, min(i.o) as first from ids i where i.id is not null
                                        group by i.id) d order by d.first)
          into v_null_parent, parent_ids
          from ids;
        if v_null_parent then
            raise exception 'envelope field "lineage.parent_ids" must not contain null'
                using errcode = '22023', column = 'lineage.parent_ids';
        end if;
    end if;
    derivation := memsub._envelope_value(p_lineage, 'derivation_type', 'string') #>> '{}';
    if derivation is not null and derivation <> all(memsub.derivation_types()) then
        raise exception 'envelope field "lineage.derivation_type" must be one of %, not "%"',
            array_to_string(memsub.derivation_types(), ', '), derivation
            using errcode = '22023', column = 'lineage.derivation_type';
    end if;
    unknown := array(select 'lineage.' || k from jsonb_object_keys(p_lineage) as k
                      where k <> all(memsub._envelope_fields('lineage')) order by k);
end
$$;
comment on function memsub._envelope_lineage(jsonb) is
    'Internal: reads an envelope''s lineage object: its parents (distinct, in order of first appearance), its '
    'derivation_type and its unknown fields; raises SQLSTATE 22023 naming the lineage field.';

create or replace function memsub._envelope_scope(p_envelope jsonb, p_user uuid) returns text
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_scope text := coalesce(memsub._envelope_value(p_envelope, 'scope', 'string') #>> '{}', 'shared');
begin
    if v_scope <> all(memsub.packet_scopes()) then
        raise exception 'envelope field "scope" must be %, not "%"', memsub._alternatives(memsub.packet_scopes()),
            v_scope
            using errcode = '22023', column = 'scope';
    end if;
    if v_scope <> 'shared' and p_user is null then
        raise exception 'scope "%" needs a user in the context (memsub.set_context(..., user_id => ...))', v_scope
            using errcode = '22023', column = 'scope';
    end if;
    return v_scope;
end
$$;
comment on function memsub._envelope_scope(jsonb, uuid) is
    'Internal: the envelope''s scope (shared when absent) for a writer (p_user: the context user); raises SQLSTATE '
    '22023 naming the field "scope" for an unknown scope, or a private one without a user.';

create or replace function memsub._packet_from_envelope(p_envelope jsonb, p_position integer, p_user uuid)
returns memsub.packet_fields
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    f       memsub.packet_fields;
    v_field text;
begin
    if p_envelope is null or jsonb_typeof(p_envelope) <> 'object' then
        raise exception 'envelope must be a JSON object' using errcode = '22023', column = 'envelope';
    end if;
    perform memsub._check_limit(pg_column_size(p_envelope), 'max_envelope_bytes', 'envelope');
    -- The writer's identity comes from the context, never from the envelope (the keys are looked at only when
    -- one of them is there).
    if p_envelope ?| array['tenant_id', 'org_id', 'user_id'] then
        select k into v_field from jsonb_object_keys(p_envelope) as k
         where k in ('tenant_id', 'org_id', 'user_id') order by k limit 1;
        raise exception 'envelope field "%" is set from the context (memsub.set_context), not by the envelope', v_field
            using errcode = '22023', column = v_field;
    end if;
    f.pos := p_position;
    f.envelope := p_envelope;
    -- Fields of a newer version of the contract are kept in the envelope and reported, never refused: what is
    -- left of the envelope less the fields this version knows (listed only when something is left).
    f.unknown := '{}';
    if p_envelope - memsub._envelope_fields('envelope') <> '{}' then
        f.unknown := array(select jsonb_object_keys(p_envelope - memsub._envelope_fields('envelope')));
    end if;
    f.packet_type := memsub._envelope_value(p_envelope, 'packet_type', 'string') #>> '{}';
    if f.packet_type is null then
        raise exception 'envelope field "packet_type" is required' using errcode = '23502', column = 'packet_type';
    end if;
    if memsub._is_blank(f.packet_type) or length(f.packet_type) > 200 then
        raise exception 'envelope field "packet_type" must be 1 to 200 characters, not blank'
            using errcode = '22023', column = 'packet_type';
    end if;
    f.payload := p_envelope -> 'payload';
    if f.payload is null or jsonb_typeof(f.payload) = 'null' then
        raise exception 'envelope field "payload" is required' using errcode = '23502', column = 'payload';
    end if;
    -- Each reader is called only for a field the envelope has (an absent field reads as NULL): on the hot path of
    -- every write, a call saved per absent field is a measurable share of the write.
    f.stated_id := case when p_envelope ? 'packet_id' then memsub._envelope_uuid(p_envelope -> 'packet_id', 'packet_id') end;
    f.packet_id := coalesce(f.stated_id, gen_random_uuid());
    f.stated_time := case when p_envelope ? 'timestamp'
                          then memsub._envelope_timestamp(p_envelope -> 'timestamp', 'timestamp') end;
    f.ts := coalesce(f.stated_time, now());
    f.memory := case when p_envelope ? 'memory' then memsub._envelope_value(p_envelope, 'memory', 'object') end;
    f.metadata := case when p_envelope ? 'metadata' then memsub._envelope_value(p_envelope, 'metadata', 'object') end;
    f.provenance := case when p_envelope ? 'provenance'
                         then memsub._envelope_value(p_envelope, 'provenance', 'object') end;
    f.confidence := case when p_envelope ? 'confidence'
                         then memsub._envelope_value(p_envelope, 'confidence', 'object') end;
    if p_envelope ?| array['reasoning_block', 'routing'] or f.confidence ? 'score' then
        perform memsub._envelope_value(p_envelope, 'reasoning_block', 'object');
        perform memsub._envelope_value(p_envelope, 'routing', 'object');
        perform memsub._envelope_unit_number(f.confidence -> 'score', 'confidence.score');
    end if;
    f.thread_id := case when p_envelope ? 'thread_id' then memsub._envelope_uuid(p_envelope -> 'thread_id', 'thread_id') end;
    f.ttl := case when p_envelope ? 'ttl' then memsub._envelope_timestamp(p_envelope -> 'ttl', 'ttl') end;
    if f.ttl <= f.ts then
        raise exception 'envelope field "ttl" (%) must be later than the packet timestamp (%)', f.ttl, f.ts
            using errcode = '22023', column = 'ttl';
    end if;
    f.importance := coalesce(case when p_envelope ? 'importance_score' then memsub._envelope_unit_number(
                                 p_envelope -> 'importance_score', 'importance_score') end, 0.5);
    f.correlation_id := case when p_envelope ? 'correlation_id'
                             then memsub._envelope_uuid(p_envelope -> 'correlation_id', 'correlation_id') end;
    f.session_id := coalesce(case when p_envelope ? 'session_id'
                                  then memsub._envelope_value(p_envelope, 'session_id', 'string') #>> '{}' end,
                             memsub.current_session_id());
    f.trace_id := case when p_envelope ? 'trace_id'
                       then memsub._envelope_value(p_envelope, 'trace_id', 'string') #>> '{}' end;
    f.scope := case when p_envelope ? 'scope' then memsub._envelope_scope(p_envelope, p_user) else 'shared' end;
    f.tags := case when p_envelope ? 'tags' and jsonb_typeof(p_envelope -> 'tags') <> 'null'
                   then memsub._envelope_tags(p_envelope) else '{}' end;
    f.lineage := case when p_envelope ? 'lineage' then memsub._envelope_value(p_envelope, 'lineage', 'object') end;
    f.parent_ids := '{}';
    if f.lineage is not null then
        select l.parent_ids, l.derivation, f.unknown || l.unknown into f.parent_ids, f.derivation, f.unknown
          from memsub._envelope_lineage(f.lineage) l;
    end if;
    if f.memory - memsub._envelope_fields('memory') <> '{}' then
        f.unknown := f.unknown || array(select 'memory.' || k
                                          from jsonb_object_keys(f.memory - memsub._envelope_fields('memory')) as k);
    end if;
    if cardinality(f.unknown) > 1 then
        f.unknown := array(select u from unnest(f.unknown) as u order by u);
    end if;
    f.clean := true;
    return f;
end
$$;
comment on function memsub._packet_from_envelope(jsonb, integer, uuid) is
    'Internal: reads, validates and normalizes every field of one envelope (p_user: the writer, for the scope '
    'check), in one place; raises naming the field (docs/errors.md). Lineage generation and root and the content '
    'hash are left to the write.';

create or replace function memsub._packet_lineage(p_tenant uuid, p_packet memsub.packet_fields,
                                                 out generation integer, out root_packet_id uuid)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_parent      uuid;
    v_parent_gen  integer;
    v_parent_root uuid;
begin
    generation := 0;
    if p_packet.packet_id = any(p_packet.parent_ids) then
        raise exception 'lineage cycle: packet % lists itself in lineage.parent_ids', p_packet.packet_id
            using errcode = '23514', column = 'lineage.parent_ids';
    end if;
    -- One primary-key probe per parent, in order, planned on every call (EXECUTE). A static statement gets a
    -- generic plan cached for the session; planned while packet_store was nearly empty, it reads the tenant
    -- through any tenant-leading index and keeps scanning the whole tenant on every write as the table grows.
    foreach v_parent in array p_packet.parent_ids loop
        execute 'select coalesce((s.envelope -> ''lineage'' ->> ''generation'')::integer, 0),
                        coalesce((s.envelope -> ''lineage'' ->> ''root_packet_id'')::uuid, s.packet_id)
                   from memsub.packet_store s where s.tenant_id = $1 and s.packet_id = $2'
           into v_parent_gen, v_parent_root using p_tenant, v_parent;
        if v_parent_root is null then
            raise exception 'lineage integrity: parent packet % does not exist or is not visible to this writer', v_parent
                using errcode = '23503', column = 'lineage.parent_ids';
        end if;
        generation := greatest(generation, v_parent_gen + 1);
        root_packet_id := coalesce(root_packet_id, v_parent_root);  -- the root of the first parent
    end loop;
    root_packet_id := coalesce(root_packet_id, p_packet.packet_id);
    -- A stated generation or root must be the computed one; JSON null is a field not given, as everywhere in the
    -- envelope.
    if coalesce(jsonb_typeof(p_packet.lineage -> 'generation'), 'null') <> 'null'
       and (p_packet.lineage -> 'generation') is distinct from to_jsonb(generation) then
        raise exception 'envelope field "lineage.generation" is % but the parents give %', p_packet.lineage -> 'generation', generation
            using errcode = '22023', column = 'lineage.generation';
    end if;
    if coalesce(jsonb_typeof(p_packet.lineage -> 'root_packet_id'), 'null') <> 'null'
       and memsub._envelope_uuid(p_packet.lineage -> 'root_packet_id', 'lineage.root_packet_id')
           is distinct from root_packet_id then
        raise exception 'envelope field "lineage.root_packet_id" is % but the parents give %', p_packet.lineage ->> 'root_packet_id', root_packet_id
            using errcode = '22023', column = 'lineage.root_packet_id';
    end if;
end
$$;
comment on function memsub._packet_lineage(uuid, memsub.packet_fields) is
    'Internal: the lineage generation and root of a packet from its stored, visible parents; raises on a self '
    'reference (23514), a missing or invisible parent (23503) or a stated generation or root that disagrees (22023).';

create or replace function memsub._packet_thread_check(p_tenant uuid, p_org uuid, p_thread_id uuid) returns boolean
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_thread_org uuid;
begin
    select t.org_id into v_thread_org from memsub.packet_threads t
     where t.tenant_id = p_tenant and t.thread_id = p_thread_id;
    if found and v_thread_org is distinct from p_org then
        raise exception 'thread consistency: thread % belongs to another organization', p_thread_id
            using errcode = '23514', column = 'thread_id';
    end if;
    return found;
end
$$;
comment on function memsub._packet_thread_check(uuid, uuid, uuid) is
    'Internal: whether the thread is registered already; raises SQLSTATE 23514 when it belongs to another '
    'organization (a thread belongs to the organization of its first packet).';

create or replace function memsub._packet_thread_register(p_tenant uuid, p_org uuid, p_packet memsub.packet_fields)
returns jsonb
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    insert into memsub.packet_threads (tenant_id, thread_id, org_id, first_packet_id, created_at)
    values (p_tenant, p_packet.thread_id, p_org, p_packet.packet_id, p_packet.ts)
    on conflict (tenant_id, thread_id) do nothing;
    if found then
        return jsonb_build_object('packet_threads', 1);
    end if;
    -- Another writer registered the thread first: re-check its organization.
    if (select t.org_id from memsub.packet_threads t
         where t.tenant_id = p_tenant and t.thread_id = p_packet.thread_id) is distinct from p_org then
        raise exception 'thread consistency: thread % belongs to another organization', p_packet.thread_id
            using errcode = '23514', column = 'thread_id';
    end if;
    return '{}';
end
$$;
comment on function memsub._packet_thread_register(uuid, uuid, memsub.packet_fields) is
    'Internal: registers a new thread with its first packet ({"packet_threads": 1}), or re-checks the organization '
    'of a thread another writer registered meanwhile ({}).';

create or replace function memsub._packet_embeddings_check(p_packet memsub.packet_fields) returns void
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_repeated    integer;
    v_repeated_of integer;
begin
    -- Each embedding slot (embedding_type, chunk_index) once: the envelope's vector is kept only in its slot.
    -- A single element cannot repeat a slot: the query is for two or more.
    if jsonb_typeof(p_packet.memory -> 'embeddings') = 'array'
       and jsonb_array_length(p_packet.memory -> 'embeddings') > 1 then
        select d.o - 1, d.first - 1 into v_repeated, v_repeated_of
          from (select a.o, min(a.o) over (partition by a.e ->> 'embedding_type',
                                                        memsub._embedding_chunk_index(a.e)) as first
                  from jsonb_array_elements(p_packet.memory -> 'embeddings') with ordinality as a(e, o)
                 where jsonb_typeof(a.e) = 'object' and a.e ->> 'embedding_type' is not null
                   and memsub._embedding_chunk_index(a.e) is not null) d
         where d.o > d.first order by d.o limit 1;
        if v_repeated is not null then
            raise exception 'envelope field "memory.embeddings[%]" names the same embedding_type and chunk_index '
                            'as memory.embeddings[%]', v_repeated, v_repeated_of
                using errcode = '22023', column = format('memory.embeddings[%s]', v_repeated);
        end if;
    end if;
    if p_packet.ttl <= now() then
        raise exception 'envelope field "memory": the packet has already expired (ttl %), so nothing can be '
                        'fanned out from it', p_packet.ttl
            using errcode = '22023', column = 'ttl';
    end if;
end
$$;
comment on function memsub._packet_embeddings_check(memsub.packet_fields) is
    'Internal, for an envelope with a memory field: each memory.embeddings slot (embedding_type, chunk_index) at '
    'most once, since the stored envelope keeps each vector only in its slot, and nothing fanned out of a packet '
    'that has expired already; raises SQLSTATE 22023 naming the field.';

create or replace function memsub._packet_vectors_check(p_packet memsub.packet_fields, p_vectors vector[])
returns void
language plpgsql immutable security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_elements integer := case when jsonb_typeof(p_packet.memory -> 'embeddings') = 'array'
                               then jsonb_array_length(p_packet.memory -> 'embeddings') else 0 end;
begin
    if array_ndims(p_vectors) > 1 then
        raise exception 'field "vectors" must be a one-dimensional array of vectors, not % dimensions',
            array_ndims(p_vectors)
            using errcode = '22023', column = 'vectors';
    end if;
    if coalesce(cardinality(p_vectors), 0) <> v_elements then
        raise exception 'field "vectors" holds % vectors for % memory.embeddings elements: it gives one vector per '
                        'element, in their order', cardinality(p_vectors), v_elements
            using errcode = '22023', column = 'vectors';
    end if;
end
$$;
comment on function memsub._packet_vectors_check(memsub.packet_fields, vector[]) is
    'Internal, for write_packet''s p_vectors: one vector per memory.embeddings element of the envelope (a '
    'one-dimensional array); raises SQLSTATE 22023 naming the field "vectors" otherwise. Each vector is checked '
    'where it is stored (memsub._fan_out_packet).';

-- A purged packet's id stays its own: its tombstone keeps its place in lineage walks, and a new packet under the
-- same id would stand there too (get_lineage would report the id twice, its children hang off other content). The
-- tombstones of other users and organizations count as well, so the lookup is owned by memsub_retrieval_owner
-- (BYPASSRLS) and states the tenant itself; it returns ids only.
create or replace function memsub._purged_packet_ids(p_packet_ids uuid[]) returns uuid[]
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_purged uuid[];
begin
    select coalesce(array_agg(t.packet_id order by t.packet_id), '{}') into v_purged
      from memsub.packet_tombstones t
     where t.tenant_id = memsub._require_tenant_id() and t.packet_id = any(p_packet_ids);
    return v_purged;
end
$$;
alter function memsub._purged_packet_ids(uuid[]) owner to memsub_retrieval_owner;
comment on function memsub._purged_packet_ids(uuid[]) is
    'Internal to write_packet(s): those of the ids that name a purged packet of the context tenant (a tombstone), '
    'whoever may see it (owned by memsub_retrieval_owner, BYPASSRLS). Executable only by memsub_owner.';
grant select on memsub.packet_tombstones to memsub_retrieval_owner;
grant execute on function memsub._purged_packet_ids(uuid[]) to memsub_owner;

-- Writes to one thread commit in write_seq order. A packet's write_seq is drawn when it is inserted, not when it
-- commits: a packet written while another writer of its thread is still open would otherwise be readable first,
-- and a reader whose cursor passed it would never see the other (get_thread pages by write_seq). Every writer of a
-- thread therefore takes the thread's lock before it draws write_seq and holds it until its transaction ends, so a
-- second writer draws only once the first has committed (or rolled back). The lock is a row of
-- memsub.maintenance_lock (task 'packet_thread', key tenant/thread), which only memsub's owner roles can take: an
-- advisory key could be taken by any login. Two keys that hash alike only make their writers wait for each other.
-- A batch takes its threads' locks in one order (by key, then thread), so two batches never wait for each other in
-- a cycle. Packets without a thread are paged by no cursor and take no lock.
create or replace function memsub._lock_packet_threads(p_tenant uuid, p_threads uuid[]) returns void
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_thread uuid;
begin
    for v_thread in
        select t from unnest(p_threads) as t
         where t is not null
         group by t
         order by pg_catalog.hashtextextended(p_tenant::text || '/' || t::text, 0), t
    loop
        perform memsub._take_maintenance_lock('packet_thread', p_tenant::text || '/' || v_thread::text);
    end loop;
end
$$;
comment on function memsub._lock_packet_threads(uuid, uuid[]) is
    'Internal to write_packet(s): locks each of the threads of the tenant until the transaction ends, in one fixed '
    'order (a writer of a thread waits for its other open writers, so the thread''s packets commit in write_seq '
    'order and a get_thread cursor never passes a packet that commits later). NULLs are skipped.';

create or replace function memsub._insert_packets(p_packets memsub.packet_fields[], p_tenant uuid, p_org uuid,
                                                 p_user uuid) returns integer
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
-- The plan does not depend on the array: planned once per session, not once per write (a custom plan for each
-- array would otherwise win on its row estimate and be made again on every call).
set plan_cache_mode = force_generic_plan
as $$
declare
    v_inserted integer;
    v_purged   uuid[];
begin
    if exists (select from unnest(p_packets) as b where b.stated_id is not null) then
        v_purged := memsub._purged_packet_ids(array(select b.stated_id from unnest(p_packets) as b
                                                    where b.stated_id is not null));
        if cardinality(v_purged) > 0 then
            raise exception 'packet_id % named a packet that expired and was purged: an id names one packet for good',
                v_purged[1]
                using errcode = '23505', column = 'packet_id',
                      hint = 'Write the new content under a new packet_id.';
        end if;
    end if;
    -- write_seq is drawn by this INSERT: under the threads' locks (memsub._lock_packet_threads). A single packet
    -- without a thread takes none and skips the call.
    if cardinality(p_packets) > 1 or p_packets[1].thread_id is not null then
        perform memsub._lock_packet_threads(p_tenant, array(select b.thread_id from unnest(p_packets) as b));
    end if;
    -- The stored envelope is the written one, vectors and header fields apart (the readers put the header fields
    -- back from their columns), with the other normalized fields filled in.
    insert into memsub.packet_store as s (
        packet_id, packet_type, envelope, "timestamp", routing, provenance,
        thread_id, parent_ids, tags, ttl,
        scope, importance_score, content_hash,
        tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
    select b.packet_id, b.packet_type,
           (memsub._envelope_vectors_apart(b.envelope) - array['packet_id', 'packet_type', 'timestamp', 'scope'])
           || jsonb_strip_nulls(jsonb_build_object(
               'tags', case when cardinality(b.tags) > 0 then to_jsonb(b.tags) end,
               'ttl', to_char(b.ttl at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
               'session_id', b.session_id,
               'lineage', case when b.lineage is not null or cardinality(b.parent_ids) > 0 then
                   coalesce(b.lineage, '{}') || jsonb_strip_nulls(jsonb_build_object(
                       'parent_ids', to_jsonb(b.parent_ids), 'derivation_type', b.derivation))
                   || jsonb_build_object('generation', b.generation, 'root_packet_id', b.root_packet_id) end)),
           b.ts, coalesce(b.envelope -> 'routing', b.metadata), b.provenance,
           b.thread_id, b.parent_ids, b.tags, b.ttl at time zone 'UTC',
           b.scope, b.importance, b.content_hash,
           p_tenant, p_org, p_user, b.correlation_id, b.session_id, b.trace_id
      from unnest(p_packets) as b
     order by b.pos
    on conflict do nothing;
    -- No RETURNING: it would have to pass the read policies, which hide a packet that is already expired.
    get diagnostics v_inserted = row_count;
    return v_inserted;
end
$$;
comment on function memsub._insert_packets(memsub.packet_fields[], uuid, uuid, uuid) is
    'Internal: the one INSERT of packets into packet_store, for write_packet and both paths of write_packets; '
    'skips a packet whose id or content is stored already and returns how many it stored.';

-- The deduplication key indexes the hash's 32 bytes: decode(content_hash, 'hex') (migration 2.28.0). decode is not
-- LEAKPROOF, so under row-level security it cannot be an index condition and a lookup would read the whole
-- tenant. memsub._packet_id_by_content_hash, owned by memsub_retrieval_owner (BYPASSRLS), finds the id by the
-- index within the context tenant; memsub._packet_deduplicated then reads that packet through row-level security.
create or replace function memsub._packet_id_by_content_hash(p_content_hash text) returns uuid
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_packet_id uuid;
begin
    -- A PL/pgSQL statement: its plan is kept for the session (a SQL function's would be made on every call).
    select s.packet_id into v_packet_id from memsub.packet_store s
     where s.tenant_id = memsub._require_tenant_id()
       and decode(s.content_hash, 'hex') = decode(p_content_hash, 'hex');
    return v_packet_id;
end
$$;
alter function memsub._packet_id_by_content_hash(text) owner to memsub_retrieval_owner;
comment on function memsub._packet_id_by_content_hash(text) is
    'Internal to write_packet(s): the id of the context tenant''s packet with this content hash, found by the '
    'deduplication key (owned by memsub_retrieval_owner, BYPASSRLS; the row itself is then read through '
    'row-level security). Executable only by memsub_owner.';
grant execute on function memsub._packet_id_by_content_hash(text) to memsub_owner;

create or replace function memsub._packet_deduplicated(p_tenant uuid, p_org uuid, p_user uuid,
                                                      p_packet memsub.packet_fields)
returns memsub.packet_write_result
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    s           memsub.packet_store%rowtype;
    v_packet_id uuid;
begin
    -- A named packet_id is the packet's identity: the same id again is the same packet when its content matches
    -- (a retry), and an error otherwise. Without an id, the same content at the same time is a retry.
    if p_packet.stated_id is not null then
        -- Planned on every call (EXECUTE), like the parent probes: a cached generic plan made while the table was
        -- small would scan the tenant.
        execute 'select s.* from memsub.packet_store s where s.tenant_id = $1 and s.packet_id = $2'
           into s using p_tenant, p_packet.stated_id;
        if s.packet_id is null then
            raise exception 'packet_id % is already used by a packet this writer cannot see (another user''s, '
                            'or expired)', p_packet.stated_id
                using errcode = '23505', column = 'packet_id';
        end if;
        if (s.packet_type, s.envelope -> 'payload', s.thread_id, s.scope, s.org_id, s.user_id, s.session_id,
            s."timestamp")
           is distinct from
           (p_packet.packet_type, p_packet.payload, p_packet.thread_id, p_packet.scope, p_org, p_user,
            p_packet.session_id, coalesce(p_packet.stated_time, s."timestamp"))
           or array(select p from unnest(s.parent_ids) as p order by p)
              is distinct from array(select p from unnest(p_packet.parent_ids) as p order by p) then
            raise exception 'packet_id % already names a packet with other content', p_packet.stated_id
                using errcode = '23505', column = 'packet_id',
                      hint = 'A packet is immutable: write the new content under a new packet_id.';
        end if;
    else
        -- The id is found by the deduplication key (memsub._packet_id_by_content_hash), the row by the primary
        -- key through row-level security.
        v_packet_id := memsub._packet_id_by_content_hash(p_packet.content_hash);
        select * into s from memsub.packet_store x where x.tenant_id = p_tenant and x.packet_id = v_packet_id;
        if not found then
            raise exception 'deduplication: a packet with the same content and time exists but is not visible '
                            'to this writer'
                using errcode = '23505', column = 'payload';
        end if;
    end if;
    return row(p_packet.pos, s.packet_id, s.packet_type, s."timestamp", s.thread_id, s.parent_ids,
               coalesce((s.envelope -> 'lineage' ->> 'generation')::integer, 0),
               coalesce((s.envelope -> 'lineage' ->> 'root_packet_id')::uuid, s.packet_id),
               s.content_hash, true, '{}'::jsonb, p_packet.unknown)::memsub.packet_write_result;
end
$$;
comment on function memsub._packet_deduplicated(uuid, uuid, uuid, memsub.packet_fields) is
    'Internal: the result of a write that stored nothing because the packet exists: the stored packet, flagged '
    'deduplicated, when it is the same packet (a retry); SQLSTATE 23505 when the id names other content or the '
    'existing packet is invisible to the writer.';

drop function if exists memsub.store_packet_envelope(jsonb, integer);
create or replace function memsub._store_packet_envelope(p_envelope jsonb, p_position integer,
                                                       p_vectors vector[] default null)
returns memsub.packet_write_result
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_org     uuid := memsub.current_org_id();
    v_user    uuid := memsub.current_user_id();
    f         memsub.packet_fields;
    v_known   boolean;
    v_written jsonb := jsonb_build_object('packet_store', 1);
begin
    f := memsub._packet_from_envelope(p_envelope, p_position, v_user);
    if p_vectors is not null then
        perform memsub._packet_vectors_check(f, p_vectors);
    end if;
    if f.lineage is null and cardinality(f.parent_ids) = 0 then
        f.generation := 0;
        f.root_packet_id := f.packet_id;
    else
        select l.generation, l.root_packet_id into f.generation, f.root_packet_id
          from memsub._packet_lineage(v_tenant, f) l;
    end if;
    if f.thread_id is not null then
        v_known := memsub._packet_thread_check(v_tenant, v_org, f.thread_id);
    end if;
    if f.memory is not null then
        perform memsub._packet_embeddings_check(f);
    end if;
    f.content_hash := memsub._packet_content_hash(f.packet_type, f.payload, f.thread_id, f.parent_ids, f.scope, v_org,
                                                  v_user, f.session_id, f.ts, f.stated_id);
    if memsub._insert_packets(array[f], v_tenant, v_org, v_user) = 0 then
        return memsub._packet_deduplicated(v_tenant, v_org, v_user, f);
    end if;
    if f.thread_id is not null and not v_known then
        v_written := v_written || memsub._packet_thread_register(v_tenant, v_org, f);
    end if;
    -- The layer rows the envelope's memory field asks for (facts, relationships, embeddings, reasoning trace),
    -- in the same transaction. The payload itself is never interpreted.
    if f.memory is not null then
        v_written := v_written || memsub._fan_out_packet(
            f, v_tenant, v_org, v_user,
            coalesce(memsub._envelope_unit_number(f.confidence -> 'score', 'confidence.score'), 0.5),
            coalesce(p_envelope -> 'routing' ->> 'agent', f.metadata ->> 'agent'), p_vectors);
    end if;
    return row(p_position, f.packet_id, f.packet_type, f.ts, f.thread_id, f.parent_ids, f.generation,
               f.root_packet_id, f.content_hash, false, v_written, f.unknown)::memsub.packet_write_result;
end
$$;
comment on function memsub._store_packet_envelope(jsonb, integer, vector[]) is
    'Internal: validates, normalizes and stores one envelope for write_packet/write_packets (p_vectors: the vectors '
    'of its memory.embeddings given apart, see write_packet). Not granted to clients.';

drop function if exists memsub.write_packet(jsonb);
create or replace function memsub.write_packet(p_envelope jsonb, p_vectors vector[] default null)
returns memsub.packet_write_result
language sql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$ select memsub._store_packet_envelope(p_envelope, 1, p_vectors) $$;
comment on function memsub.write_packet(jsonb, vector[]) is
    'Writes one PacketEnvelope into packet_store under the current tenant context and returns its PacketWriteResult. '
    'Fills packet_id and timestamp, computes lineage generation and root, checks lineage integrity and thread '
    'consistency, and deduplicates (a named packet_id identifies the packet; without one, the same content at the '
    'same time is the same packet), returning the existing packet flagged deduplicated. Fans the envelope''s memory '
    'field (facts, relationships, embeddings, reasoning_trace) out into the layer tables; the payload is free. '
    'Fields of a newer contract version are kept and listed in unknown_fields. All or nothing. p_vectors (optional): '
    'the vectors of memory.embeddings as vector values, one per element in their order, the envelope holding JSON '
    'null or nothing in their place; the same packet is stored and read back as with the vectors in the envelope, '
    'without parsing them as JSON numbers (22023 naming vectors or the element for a count that does not match, a '
    'vector given twice, a null one).';

create or replace function memsub._canonical_uuid_text(p_value text) returns text
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select case when p_value ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$'
                then p_value::uuid::text end
$$;
comment on function memsub._canonical_uuid_text(text) is
    'Canonical text form of a UUID string, or NULL when the string is not a UUID.';

-- The set-based batch path of write_packets: one statement reads every envelope into the fields
-- _store_packet_envelope reads (memsub.packet_fields, the same field lists), one probe reads the parents outside the
-- batch (_batch_lineage), the INSERT _store_packet_envelope uses writes every packet (_insert_packets), one INSERT
-- every new thread, one the embeddings (_batch_embeddings). It takes only batches it can write exactly as the envelope-by-envelope path
-- would (returning NULL otherwise): no memory field beyond embeddings, parents before their children, no packet
-- that exists already or repeats in the batch, no stated lineage.generation or root_packet_id. Any error it meets
-- sends the batch to the envelope-by-envelope path, which names the envelope and field.

drop function if exists memsub._batch_envelopes(jsonb, uuid, text, bigint, bigint, bigint, bigint);
create or replace function memsub._batch_envelopes(
    p_envelopes jsonb, p_user uuid, p_session text, p_max_envelope_bytes bigint, p_max_tags bigint,
    p_max_tag_chars bigint, p_max_parent_ids bigint, p_vectors_apart boolean
) returns setof memsub.packet_fields
language sql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
    -- Plain expressions rather than the raising field readers (a function call per field and envelope would
    -- cost more than the rest of the write): what they would refuse is marked not clean, or fails a cast.
    -- The fields and the contract's field lists are _store_packet_envelope's (memsub.packet_fields,
    -- memsub._envelope_fields).
    select r.pos, r.e, r.stated_id, r.stated_time, coalesce(r.stated_id, gen_random_uuid()), r.e ->> 'packet_type',
           r.e -> 'payload', coalesce(r.stated_time, now()),
           r.thread_id, r.ttl, coalesce(r.importance, 0.5), r.correlation_id,
           coalesce(r.e ->> 'session_id', p_session), r.e ->> 'trace_id', coalesce(r.e ->> 'scope', 'shared'),
           r.tags, r.lineage, r.parent_ids, r.lineage ->> 'derivation_type',
           case when jsonb_typeof(r.e -> 'metadata') = 'object' then r.e -> 'metadata' end,
           case when jsonb_typeof(r.e -> 'provenance') = 'object' then r.e -> 'provenance' end,
           case when jsonb_typeof(r.e -> 'confidence') = 'object' then r.e -> 'confidence' end,
           r.memory,
           array(select k from jsonb_object_keys(r.e) as k where k <> all(memsub._envelope_fields('envelope'))
                 union all
                 select 'lineage.' || k from jsonb_object_keys(coalesce(r.lineage, '{}')) as k
                  where k <> all(memsub._envelope_fields('lineage'))
                 order by 1),
           coalesce(
               jsonb_typeof(r.e) = 'object' and not r.e ?| array['tenant_id', 'org_id', 'user_id']
               and pg_column_size(r.e) <= p_max_envelope_bytes
               -- memsub._is_blank's rule, written out as the rest of this statement is
               and jsonb_typeof(r.e -> 'packet_type') = 'string'
               and (r.e ->> 'packet_type') ~ '[^[:space:]\u0085\u00a0\u2007\u202f]'
               and length(r.e ->> 'packet_type') <= 200
               and jsonb_typeof(r.e -> 'payload') is distinct from 'null' and r.e ? 'payload'
               and ((r.e -> 'packet_id' is null or jsonb_typeof(r.e -> 'packet_id') = 'null') or r.stated_id is not null)
               and ((r.e -> 'timestamp' is null or jsonb_typeof(r.e -> 'timestamp') = 'null')
                    or r.stated_time >= '0001-01-01 00:00:00+00' and r.stated_time < '10000-01-01 00:00:00+00')
               and ((r.e -> 'ttl' is null or jsonb_typeof(r.e -> 'ttl') = 'null')
                    or r.ttl >= '0001-01-01 00:00:00+00' and r.ttl < '10000-01-01 00:00:00+00')
               and ((r.e -> 'thread_id' is null or jsonb_typeof(r.e -> 'thread_id') = 'null') or r.thread_id is not null)
               and ((r.e -> 'correlation_id' is null or jsonb_typeof(r.e -> 'correlation_id') = 'null') or r.correlation_id is not null)
               and ((r.e -> 'importance_score' is null or jsonb_typeof(r.e -> 'importance_score') = 'null') or r.importance is not null)
               and coalesce(jsonb_typeof(r.e -> 'confidence' -> 'score') in ('null', 'number')
                            and (r.e -> 'confidence' ->> 'score')::numeric between 0 and 1, true)
               and coalesce(jsonb_typeof(r.e -> 'session_id') in ('null', 'string'), true)
               and coalesce(jsonb_typeof(r.e -> 'trace_id') in ('null', 'string'), true)
               and coalesce(jsonb_typeof(r.e -> 'scope') = 'string', true)
               and coalesce(r.e ->> 'scope', 'shared') = any(memsub.packet_scopes())
               and (coalesce(r.e ->> 'scope', 'shared') = 'shared' or p_user is not null)
               and coalesce(jsonb_typeof(r.e -> 'metadata') in ('null', 'object'), true)
               and coalesce(jsonb_typeof(r.e -> 'provenance') in ('null', 'object'), true)
               and coalesce(jsonb_typeof(r.e -> 'confidence') in ('null', 'object'), true)
               and coalesce(jsonb_typeof(r.e -> 'reasoning_block') in ('null', 'object'), true)
               and coalesce(jsonb_typeof(r.e -> 'routing') in ('null', 'object'), true)
               and coalesce(jsonb_typeof(r.e -> 'lineage') in ('null', 'object'), true)
               and coalesce(jsonb_typeof(r.e -> 'memory') in ('null', 'object'), true)
               and (r.ttl is null or r.ttl > coalesce(r.stated_time, now()))
               and r.tags is not null and r.parent_ids is not null
               and coalesce(jsonb_typeof(r.lineage -> 'derivation_type') in ('null', 'string')
                            and r.lineage ->> 'derivation_type' = any(memsub.derivation_types()),
                            true)
               and not coalesce(r.lineage ?| array['generation', 'root_packet_id'], false)
               and (r.stated_id is null or r.stated_id <> all(r.parent_ids))
               and (r.memory is null
                    or coalesce((select bool_and(k = 'embeddings') from jsonb_object_keys(r.memory) as k), true)
                       and (r.ttl is null or r.ttl > now())
                       and (not r.memory ? 'embeddings'
                            or jsonb_typeof(r.memory -> 'embeddings') = 'array'
                               and not exists (select from jsonb_array_elements(r.memory -> 'embeddings') as v(e)
                                                where jsonb_typeof(v.e) <> 'object'
                                                   or case when p_vectors_apart
                                                           then coalesce(v.e -> 'vector', 'null') <> 'null'
                                                           else jsonb_typeof(v.e -> 'vector') is distinct from 'array'
                                                      end))),
               false),
           null::integer, null::uuid, null::text
      from (
        -- timestamp and ttl: _envelope_timestamp's pattern, less the UTC offsets of 16 hours or more it refuses
        select x.o::integer as pos, x.e,
               case when jsonb_typeof(x.e -> 'packet_id') = 'string' and (x.e -> 'packet_id' #>> '{}') ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' then (x.e -> 'packet_id' #>> '{}')::uuid end as stated_id,
               case when jsonb_typeof(x.e -> 'timestamp') = 'string' and (x.e -> 'timestamp' #>> '{}') ~ '^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?)?(?:Z|z|[+-](?:0\d|1[0-5])(?::?[0-5]\d)?)?$' and left((x.e -> 'timestamp' #>> '{}'), 4) <> '0000'
                             and substr((x.e -> 'timestamp' #>> '{}'), 11, 1) in ('T', ' ') then
                   case when substr((x.e -> 'timestamp' #>> '{}'), 12) ~ '[-+Zz]' then (x.e -> 'timestamp' #>> '{}')::timestamptz
                        else (x.e -> 'timestamp' #>> '{}')::timestamp at time zone 'UTC' end end as stated_time,
               case when jsonb_typeof(x.e -> 'ttl') = 'string' and (x.e -> 'ttl' #>> '{}') ~ '^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?)?(?:Z|z|[+-](?:0\d|1[0-5])(?::?[0-5]\d)?)?$' and left((x.e -> 'ttl' #>> '{}'), 4) <> '0000'
                             and substr((x.e -> 'ttl' #>> '{}'), 11, 1) in ('T', ' ') then
                   case when substr((x.e -> 'ttl' #>> '{}'), 12) ~ '[-+Zz]' then (x.e -> 'ttl' #>> '{}')::timestamptz
                        else (x.e -> 'ttl' #>> '{}')::timestamp at time zone 'UTC' end end as ttl,
               case when jsonb_typeof(x.e -> 'thread_id') = 'string' and (x.e -> 'thread_id' #>> '{}') ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' then (x.e -> 'thread_id' #>> '{}')::uuid end as thread_id,
               case when jsonb_typeof(x.e -> 'correlation_id') = 'string' and (x.e -> 'correlation_id' #>> '{}') ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' then (x.e -> 'correlation_id' #>> '{}')::uuid end as correlation_id,
               case when jsonb_typeof(x.e -> 'importance_score') = 'number'
                         and (x.e ->> 'importance_score')::numeric between 0 and 1
                    -- memsub._json_double's rule: a number too small for double precision is 0
                    then case when (x.e ->> 'importance_score')::numeric < 1e-307 then 0
                              else (x.e ->> 'importance_score')::numeric::double precision end end as importance,
               case when jsonb_typeof(x.e -> 'lineage') = 'object' then x.e -> 'lineage' end as lineage,
               case when jsonb_typeof(x.e -> 'memory') = 'object' then x.e -> 'memory' end as memory,
               -- tags: NULL (not clean) unless absent or an array of non-blank strings within the limits
               case when (x.e -> 'tags' is null or jsonb_typeof(x.e -> 'tags') = 'null') then '{}'::text[]
                    when jsonb_typeof(x.e -> 'tags') = 'array' and jsonb_array_length(x.e -> 'tags') <= p_max_tags
                         and not exists (select from jsonb_array_elements(x.e -> 'tags') as g(v)
                                          where jsonb_typeof(g.v) <> 'string' or (g.v #>> '{}') !~ '[^[:space:]\u0085\u00a0\u2007\u202f]'
                                             or length(g.v #>> '{}') > p_max_tag_chars)
                    then array(select d.tag from (select g.v #>> '{}' as tag, min(g.o) as first
                                                    from jsonb_array_elements(x.e -> 'tags') with ordinality as g(v, o)
                                                   group by 1) d order by d.first) end as tags,
               -- parents: NULL (not clean) unless absent or an array of UUIDs within the limit
               case when jsonb_typeof(x.e -> 'lineage') is distinct from 'object'
                         or (x.e -> 'lineage' -> 'parent_ids' is null or jsonb_typeof(x.e -> 'lineage' -> 'parent_ids') = 'null') then '{}'::uuid[]
                    when jsonb_typeof(x.e -> 'lineage' -> 'parent_ids') = 'array'
                         and jsonb_array_length(x.e -> 'lineage' -> 'parent_ids') <= p_max_parent_ids
                         and not exists (select from jsonb_array_elements(x.e -> 'lineage' -> 'parent_ids') as p(v)
                                          where (case when jsonb_typeof(p.v) = 'string' and (p.v #>> '{}') ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' then (p.v #>> '{}')::uuid end) is null)
                    then array(select d.id from (select (p.v #>> '{}')::uuid as id, min(p.o) as first
                                                   from jsonb_array_elements(x.e -> 'lineage' -> 'parent_ids')
                                                        with ordinality as p(v, o)
                                                  group by 1) d order by d.first) end as parent_ids
          from jsonb_array_elements(p_envelopes) with ordinality as x(e, o)
      ) r
$$;
comment on function memsub._batch_envelopes(jsonb, uuid, text, bigint, bigint, bigint, bigint, boolean) is
    'Internal to write_packets: every envelope of a batch read as _store_packet_envelope reads it, normalized, with '
    'its packet id and clean = false where the set-based path must leave it to _store_packet_envelope (which names '
    'the field); p_vectors_apart: the memory.embeddings vectors are given apart, so each element holds JSON null '
    'or nothing in their place. Not granted to clients.';

create or replace function memsub._batch_lineage(p_batch memsub.packet_fields[], p_tenant uuid, p_org uuid,
                                                p_user uuid) returns memsub.packet_fields[]
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_total    integer := cardinality(p_batch);
    v_ids      uuid[] := array(select b.packet_id from unnest(p_batch) b order by b.pos);
    v_parents  jsonb;      -- per envelope: its parent ids
    v_position jsonb;      -- packet id of the batch -> position
    v_outside  jsonb;      -- parent id outside the batch -> [generation, root]
    v_expired  boolean[] := array(select b.ttl is not null and b.ttl <= now() from unnest(p_batch) b order by b.pos);
    v_gens     integer[] := array_fill(0, array[v_total]);
    v_roots    uuid[] := array_fill(null::uuid, array[v_total]);
    v_gen      integer;
    v_root     uuid;
    v_parent   text;
begin
    select jsonb_agg(to_jsonb(b.parent_ids) order by b.pos) into v_parents from unnest(p_batch) b;
    select jsonb_object_agg(i, o) into v_position from unnest(v_ids) with ordinality as u(i, o);
    -- Parents outside the batch: one probe; each must be visible.
    select coalesce(jsonb_object_agg(s.packet_id, jsonb_build_array(
               coalesce((s.envelope -> 'lineage' ->> 'generation')::integer, 0),
               coalesce((s.envelope -> 'lineage' ->> 'root_packet_id')::uuid, s.packet_id))), '{}')
      into v_outside
      from memsub.packet_store s
     where s.tenant_id = p_tenant
       and s.packet_id = any(array(select distinct p::uuid from jsonb_array_elements(v_parents) as a(l),
                                                              jsonb_array_elements_text(a.l) as p
                                    where not v_position ? p));
    -- Generation and root, parents before children.
    for v_at in 1 .. v_total loop
        v_gen := 0;
        v_root := null;
        for v_parent in select jsonb_array_elements_text(v_parents -> (v_at - 1)) loop
            if v_position ? v_parent then
                if (v_position ->> v_parent)::integer >= v_at then
                    return null;  -- a child before its parent: the envelope-by-envelope path orders them
                end if;
                if v_expired[(v_position ->> v_parent)::integer] then
                    return null;  -- an expired parent, invisible once written: that path refuses it (23503)
                end if;
                v_gen := greatest(v_gen, v_gens[(v_position ->> v_parent)::integer] + 1);
                v_root := coalesce(v_root, v_roots[(v_position ->> v_parent)::integer]);
            elsif v_outside ? v_parent then
                v_gen := greatest(v_gen, (v_outside -> v_parent ->> 0)::integer + 1);
                v_root := coalesce(v_root, (v_outside -> v_parent ->> 1)::uuid);
            else
                return null;  -- a missing parent: reported by the envelope-by-envelope path
            end if;
        end loop;
        v_gens[v_at] := v_gen;
        v_roots[v_at] := coalesce(v_root, v_ids[v_at]);
    end loop;
    -- The fields with their lineage and content hash.
    return array(select jsonb_populate_record(b, jsonb_build_object(
                            'generation', i.gen, 'root_packet_id', i.root,
                            'content_hash', memsub._packet_content_hash(b.packet_type, b.payload, b.thread_id,
                                                                      b.parent_ids, b.scope, p_org, p_user,
                                                                      b.session_id, b.ts, b.stated_id)))
                   from unnest(p_batch) b
                   join unnest(v_gens, v_roots) with ordinality as i(gen, root, pos) on i.pos = b.pos
                  order by b.pos);
end
$$;
comment on function memsub._batch_lineage(memsub.packet_fields[], uuid, uuid, uuid) is
    'Internal to write_packets: a batch''s packets with their lineage generation and root (parents in the batch '
    'or stored and visible, one probe for the stored ones) and content hash; NULL when a parent is missing, '
    'expired or listed after its child (the envelope-by-envelope path reports or orders them).';

drop function if exists memsub._batch_embeddings(memsub.packet_fields[], uuid, uuid, uuid);
create or replace function memsub._batch_embeddings(p_batch memsub.packet_fields[], p_tenant uuid, p_org uuid,
                                                   p_user uuid, p_vectors vector[], p_before integer[])
returns void
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_max_text bigint := memsub.limit_value('max_text_chars');
    v_max_json bigint := memsub.limit_value('max_json_bytes');
begin
    -- Plain expressions, as in _batch_envelopes, not the field readers _fan_out_packet calls (about ten calls per
    -- element, the vector's reader in a subtransaction of its own): where a reader would refuse an element, a cast
    -- fails or a column gets NULL or a value its constraint refuses, and the batch goes envelope by envelope, which
    -- names the element and field. The readers' rules:
    --   vector          a JSON array pgvector reads (the cast), of the column's dimension (its type), with a
    --                   cosine norm (a vector's distance to itself is NaN exactly when it has none); given apart
    --                   (p_vectors), the element's vector is JSON null or absent and its p_vectors entry, after
    --                   the p_before[pos] entries of the envelopes before it, is not NULL;
    --   chunk_index     _fan_out_packet's cast, 0 when absent, not negative (memory_embeddings_chunk_index_non_negative);
    --   embedding_type  one of memsub.embedding_types() (memory_embeddings_embedding_type_known);
    --   metadata        absent, or a JSON object;
    --   limits          embedding_type and chunk_text within max_text_chars, metadata within max_json_bytes, the
    --                   limits read once for the batch.
    -- A slot named twice violates the unique key.
    insert into memsub.memory_embeddings (
        packet_id, embedding_type, vector, chunk_index, chunk_text, metadata, scope, ttl,
        tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
    select b.packet_id,
           case when coalesce(length(v.e ->> 'embedding_type'), 0) <= v_max_text
                     and coalesce(length(v.e ->> 'chunk_text'), 0) <= v_max_text
                     and coalesce(pg_column_size(v.e -> 'metadata'), 0) <= v_max_json
                then v.e ->> 'embedding_type' end,
           case when cosine_distance(x.vector, x.vector) <> 'NaN'::double precision then x.vector end,
           coalesce((v.e ->> 'chunk_index')::integer, 0),
           v.e ->> 'chunk_text',
           case when v.e -> 'metadata' is null then '{}'
                when jsonb_typeof(v.e -> 'metadata') = 'object' then v.e -> 'metadata' end,
           b.scope, b.ttl at time zone 'UTC', p_tenant, p_org, p_user, b.correlation_id, b.session_id, b.trace_id
      from unnest(p_batch) b
     cross join lateral jsonb_array_elements(case when jsonb_typeof(b.memory -> 'embeddings') = 'array'
                                                  then b.memory -> 'embeddings' else '[]' end)
                        with ordinality as v(e, n)
     -- The vector cast once per element (offset 0 keeps the sub-select from being merged into each use).
     cross join lateral (select case when p_vectors is null
                                     then case when jsonb_typeof(v.e -> 'vector') = 'array'
                                               then (v.e -> 'vector')::text::vector end
                                     when coalesce(v.e -> 'vector', 'null') = 'null'
                                     then p_vectors[array_lower(p_vectors, 1) + p_before[b.pos] + v.n - 1]
                                end as vector
                          offset 0) x;
end
$$;
comment on function memsub._batch_embeddings(memsub.packet_fields[], uuid, uuid, uuid, vector[], integer[]) is
    'Internal to write_packets: the fan-out of the memory.embeddings of a batch''s stored packets (the only memory '
    'field the set-based path takes) in one INSERT; p_vectors: their vectors given apart (NULL: in the envelopes), '
    'p_before: per batch position, how many of them belong to the envelopes before it.';

drop function if exists memsub._write_packets_set(jsonb);
create or replace function memsub._write_packets_set(p_envelopes jsonb, p_vectors vector[], p_before integer[])
returns memsub.packet_write_result[]
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant      uuid := memsub._require_tenant_id();
    v_org         uuid := memsub.current_org_id();
    v_user        uuid := memsub.current_user_id();
    v_batch       memsub.packet_fields[];
    v_total       integer;
    v_clean       boolean;
    v_ids         uuid[];
    v_threads     uuid[];
    v_inserted    integer;
    v_new_threads uuid[];  -- first packets of the threads this batch registered
    v_results     memsub.packet_write_result[];
begin
    -- 1. Read every envelope once, with its packet id.
    v_batch := array(select b from memsub._batch_envelopes(p_envelopes, v_user, memsub.current_session_id(),
                                                          memsub.limit_value('max_envelope_bytes'),
                                                          memsub.limit_value('max_tags'),
                                                          memsub.limit_value('max_tag_chars'),
                                                          memsub.limit_value('max_parent_ids'),
                                                          p_vectors is not null) b
                      order by b.pos);
    select count(*), bool_and(b.clean), array_agg(b.packet_id order by b.pos),
           array_agg(distinct b.thread_id) filter (where b.thread_id is not null)
      into v_total, v_clean, v_ids, v_threads
      from unnest(v_batch) b;
    if not v_clean or cardinality(v_ids) <> (select count(distinct i) from unnest(v_ids) as i) then
        return null;
    end if;
    -- 2. Lineage and content hash.
    v_batch := memsub._batch_lineage(v_batch, v_tenant, v_org, v_user);
    if v_batch is null then
        return null;
    end if;
    -- 3. Threads of another organization, packets that exist already: the envelope-by-envelope path reports them.
    if exists (select from memsub.packet_threads t
                where t.tenant_id = v_tenant and t.thread_id = any(v_threads) and t.org_id is distinct from v_org)
       or exists (select from memsub.packet_store s where s.tenant_id = v_tenant and s.packet_id = any(v_ids)) then
        return null;
    end if;
    -- 4. The one INSERT of packets _store_packet_envelope uses, each new thread, the embeddings.
    v_inserted := memsub._insert_packets(v_batch, v_tenant, v_org, v_user);
    if v_inserted <> v_total then
        -- A packet this writer cannot see holds the id or the content: the envelope-by-envelope path decides.
        raise exception 'batch path: % of % packets stored', v_inserted, v_total using errcode = 'P0001';
    end if;
    with threads as (
        insert into memsub.packet_threads as t (tenant_id, thread_id, org_id, first_packet_id, created_at)
        select distinct on (b.thread_id) v_tenant, b.thread_id, v_org, b.packet_id, b.ts
          from unnest(v_batch) b
         where b.thread_id is not null
         order by b.thread_id, b.pos
        on conflict (tenant_id, thread_id) do nothing
        returning t.first_packet_id
    )
    select coalesce(array_agg(threads.first_packet_id), '{}') into v_new_threads from threads;
    perform memsub._batch_embeddings(v_batch, v_tenant, v_org, v_user, p_vectors, p_before);
    select array_agg(row(b.pos, b.packet_id, b.packet_type, b.ts, b.thread_id, b.parent_ids, b.generation,
                         b.root_packet_id, b.content_hash, false,
                         jsonb_build_object('packet_store', 1)
                         || case when b.packet_id = any(v_new_threads)
                                 then jsonb_build_object('packet_threads', 1) else '{}' end
                         || case when jsonb_typeof(b.memory -> 'embeddings') = 'array'
                                      and jsonb_array_length(b.memory -> 'embeddings') > 0
                                 then jsonb_build_object('memory_embeddings',
                                                         jsonb_array_length(b.memory -> 'embeddings'))
                                 else '{}' end,
                         b.unknown)::memsub.packet_write_result order by b.pos)
      into v_results
      from unnest(v_batch) b;
    -- A thread registered meanwhile by another organization.
    if exists (select from memsub.packet_threads t
                where t.tenant_id = v_tenant and t.thread_id = any(v_threads) and t.org_id is distinct from v_org) then
        raise exception 'batch path: thread of another organization' using errcode = 'P0001';
    end if;
    return v_results;
end
$$;
comment on function memsub._write_packets_set(jsonb, vector[], integer[]) is
    'Internal to write_packets: writes a whole batch set-based when it can do so exactly as _store_packet_envelope '
    'would envelope by envelope, and returns the results; NULL (nothing written) when the batch needs the '
    'envelope-by-envelope path. p_vectors and p_before: the vectors given apart (memsub._batch_embeddings). Not '
    'granted to clients.';

drop function if exists memsub.write_packets(jsonb);
create or replace function memsub.write_packets(p_envelopes jsonb, p_vectors vector[] default null)
returns setof memsub.packet_write_result
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    total       integer;
    elements    integer[];  -- with p_vectors: per envelope, its memory.embeddings elements
    before      integer[];  -- with p_vectors: per envelope, the elements of the envelopes before it
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
    -- Vectors given apart count toward the batch's bytes as they would inside its envelopes.
    perform memsub._check_limit(pg_column_size(p_envelopes) + coalesce(pg_column_size(p_vectors), 0),
                                'max_batch_bytes', 'envelopes');
    total := memsub._check_limit(jsonb_array_length(p_envelopes), 'max_batch_envelopes', 'envelopes');
    if p_vectors is not null then
        if array_ndims(p_vectors) > 1 then
            raise exception 'field "vectors" must be a one-dimensional array of vectors, not % dimensions',
                array_ndims(p_vectors)
                using errcode = '22023', column = 'vectors';
        end if;
        select coalesce(array_agg(c.count order by c.o), '{}'),
               coalesce(array_agg(c.running - c.count order by c.o), '{}')
          into elements, before
          from (select x.o, n.count, sum(n.count) over (order by x.o) as running
                  from jsonb_array_elements(p_envelopes) with ordinality as x(e, o)
                 cross join lateral (select case when jsonb_typeof(x.e -> 'memory' -> 'embeddings') = 'array'
                                                 then jsonb_array_length(x.e -> 'memory' -> 'embeddings')
                                                 else 0 end as count) n) c;
        if coalesce(cardinality(p_vectors), 0) <> coalesce(before[total] + elements[total], 0) then
            raise exception 'field "vectors" holds % vectors for % memory.embeddings elements in the batch: it gives '
                            'one vector per element, envelope by envelope, in their order',
                coalesce(cardinality(p_vectors), 0), coalesce(before[total] + elements[total], 0)
                using errcode = '22023', column = 'vectors';
        end if;
    end if;
    if total = 0 then
        return;
    end if;
    -- Every thread the batch writes, locked at once in one order (memsub._lock_packet_threads): envelope by
    -- envelope, the batch would otherwise take them in its own order and could wait in a cycle with another batch.
    -- A thread_id that is not a UUID is refused below.
    if total > 1 then
        perform memsub._lock_packet_threads(memsub._require_tenant_id(), array(
            select memsub._canonical_uuid_text(e ->> 'thread_id')::uuid
              from jsonb_array_elements(p_envelopes) as x(e)
             where jsonb_typeof(e) = 'object' and jsonb_typeof(e -> 'thread_id') = 'string'));
    end if;
    -- The whole batch at once when the set-based path can take it; anything it declines or any error it meets
    -- (rolled back with its subtransaction) goes envelope by envelope below, which names the envelope and field.
    -- Its statements cost about as much as four envelopes written one by one: small batches skip it.
    if total >= 8 then
        begin
            results := memsub._write_packets_set(p_envelopes, p_vectors, before);
        exception when others then
            results := null;
        end;
    end if;
    if results is not null then
        return query select r.* from unnest(results) as r;
        return;
    end if;
    results := array_fill(null::memsub.packet_write_result, array[total]);
    state := array_fill(0, array[total]);
    -- Envelopes with an explicit packet_id may be referenced as parents by other envelopes of the batch:
    -- canonical packet_id -> position of its first envelope.
    select coalesce(jsonb_object_agg(d.id, d.position), '{}') into batch_ids
      from (select memsub._canonical_uuid_text(e ->> 'packet_id') as id, min(o) as position
              from jsonb_array_elements(p_envelopes) with ordinality as x(e, o)
             where jsonb_typeof(e) = 'object' and memsub._canonical_uuid_text(e ->> 'packet_id') is not null
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
                            select (batch_ids ->> memsub._canonical_uuid_text(p))::integer
                              from jsonb_array_elements_text(envelope -> 'lineage' -> 'parent_ids')
                                   with ordinality as x(p, o)
                             where batch_ids ? memsub._canonical_uuid_text(p)
                               and (batch_ids ->> memsub._canonical_uuid_text(p))::integer <> top
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
                results[top] := memsub._store_packet_envelope(
                    envelope, top,
                    case when elements[top] > 0
                         then p_vectors[array_lower(p_vectors, 1) + before[top]
                                        : array_lower(p_vectors, 1) + before[top] + elements[top] - 1] end);
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
comment on function memsub.write_packets(jsonb, vector[]) is
    'Writes a JSON array of PacketEnvelopes in one transaction (all or nothing) and returns one PacketWriteResult per '
    'envelope, in input order. Parents inside the batch are written before their children; a cycle is rejected '
    '(SQLSTATE 23514). Errors name the failing envelope''s 1-based position. p_vectors (optional): the vectors of '
    'every envelope''s memory.embeddings as vector values, envelope by envelope, each envelope''s in the order of '
    'its elements, as write_packet takes one envelope''s (22023 naming vectors for a count that does not match; in '
    'an envelope''s errors, vectors[i] counts within that envelope).';
