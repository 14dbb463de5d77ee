CREATE SCHEMA memsub;

ALTER SCHEMA memsub OWNER TO memsub_owner;

COMMENT ON SCHEMA memsub IS 'memsub: PostgreSQL-native memory substrate for AI agents (tables, functions, views).';

CREATE TYPE memsub.langgraph_checkpoint_row AS (
	thread_id text,
	checkpoint_ns text,
	checkpoint_id text,
	parent_checkpoint_id text,
	checkpoint_type text,
	checkpoint bytea,
	metadata jsonb,
	write_task_ids text[],
	write_task_paths text[],
	write_idx integer[],
	write_channels text[],
	write_value_types text[],
	write_values bytea[]
);

ALTER TYPE memsub.langgraph_checkpoint_row OWNER TO memsub_owner;

COMMENT ON TYPE memsub.langgraph_checkpoint_row IS 'A LangGraph checkpoint with its pending writes (task ids, task paths, idx, channels, value types, values).';

CREATE TYPE memsub.langgraph_store_item AS (
	namespace text[],
	key text,
	value jsonb,
	created_at timestamp with time zone,
	updated_at timestamp with time zone,
	score double precision
);

ALTER TYPE memsub.langgraph_store_item OWNER TO memsub_owner;

COMMENT ON TYPE memsub.langgraph_store_item IS 'A LangGraph store item as the read functions return it; score is the similarity of a natural-language search, else NULL.';

CREATE TYPE memsub.packet_fields AS (
	pos integer,
	envelope jsonb,
	stated_id uuid,
	stated_time timestamp with time zone,
	packet_id uuid,
	packet_type text,
	payload jsonb,
	ts timestamp with time zone,
	thread_id uuid,
	ttl timestamp with time zone,
	importance double precision,
	correlation_id uuid,
	session_id text,
	trace_id text,
	scope text,
	tags text[],
	lineage jsonb,
	parent_ids uuid[],
	derivation text,
	metadata jsonb,
	provenance jsonb,
	confidence jsonb,
	memory jsonb,
	unknown text[],
	clean boolean,
	generation integer,
	root_packet_id uuid,
	content_hash text
);

ALTER TYPE memsub.packet_fields OWNER TO memsub_owner;

COMMENT ON TYPE memsub.packet_fields IS 'Internal: one envelope read for writing (sql/120_packet_write.sql): its fields validated and normalized, then its lineage and content hash, as the insert into packet_store takes them.';

COMMENT ON COLUMN memsub.packet_fields.pos IS '1-based position of the envelope in its batch (1 for a single write).';

COMMENT ON COLUMN memsub.packet_fields.envelope IS 'The envelope as written (memory.embeddings vectors included).';

COMMENT ON COLUMN memsub.packet_fields.stated_id IS 'The packet_id the envelope names; NULL when the database gives one.';

COMMENT ON COLUMN memsub.packet_fields.stated_time IS 'The timestamp the envelope names; NULL when it names none.';

COMMENT ON COLUMN memsub.packet_fields.packet_id IS 'The packet''s id: stated_id, else a new random UUID.';

COMMENT ON COLUMN memsub.packet_fields.packet_type IS 'Semantic category of the packet.';

COMMENT ON COLUMN memsub.packet_fields.payload IS 'The free payload.';

COMMENT ON COLUMN memsub.packet_fields.ts IS 'Event time: stated_time, else the transaction time.';

COMMENT ON COLUMN memsub.packet_fields.thread_id IS 'Thread of the packet, if any.';

COMMENT ON COLUMN memsub.packet_fields.ttl IS 'Expiry time, if any.';

COMMENT ON COLUMN memsub.packet_fields.importance IS 'importance_score (0.5 when absent).';

COMMENT ON COLUMN memsub.packet_fields.correlation_id IS 'Correlation id, if any.';

COMMENT ON COLUMN memsub.packet_fields.session_id IS 'Session: the envelope''s, else the context''s.';

COMMENT ON COLUMN memsub.packet_fields.trace_id IS 'Trace id, if any.';

COMMENT ON COLUMN memsub.packet_fields.scope IS 'shared (default), cursor or l-private.';

COMMENT ON COLUMN memsub.packet_fields.tags IS 'Distinct tags in order of first appearance.';

COMMENT ON COLUMN memsub.packet_fields.lineage IS 'The envelope''s lineage object, if any.';

COMMENT ON COLUMN memsub.packet_fields.parent_ids IS 'Distinct lineage parents in order of first appearance.';

COMMENT ON COLUMN memsub.packet_fields.derivation IS 'lineage.derivation_type, if any.';

COMMENT ON COLUMN memsub.packet_fields.metadata IS 'The metadata object, if any.';

COMMENT ON COLUMN memsub.packet_fields.provenance IS 'The provenance object, if any.';

COMMENT ON COLUMN memsub.packet_fields.confidence IS 'The confidence object, if any.';

COMMENT ON COLUMN memsub.packet_fields.memory IS 'The memory object (fan-out into the layer tables), if any.';

COMMENT ON COLUMN memsub.packet_fields.unknown IS 'Fields of a newer contract version, sorted (unknown_fields).';

COMMENT ON COLUMN memsub.packet_fields.clean IS 'Batch path only: false when the envelope needs the envelope-by-envelope path (which names the field).';

COMMENT ON COLUMN memsub.packet_fields.generation IS 'Lineage generation, once the parents are known.';

COMMENT ON COLUMN memsub.packet_fields.root_packet_id IS 'Lineage root, once the parents are known.';

COMMENT ON COLUMN memsub.packet_fields.content_hash IS 'Deduplication hash (memsub.packet_content_hash).';

CREATE TYPE memsub.packet_write_result AS (
	"position" integer,
	packet_id uuid,
	packet_type text,
	"timestamp" timestamp with time zone,
	thread_id uuid,
	parent_ids uuid[],
	generation integer,
	root_packet_id uuid,
	content_hash text,
	deduplicated boolean,
	written jsonb,
	unknown_fields text[]
);

ALTER TYPE memsub.packet_write_result OWNER TO memsub_owner;

COMMENT ON TYPE memsub.packet_write_result IS 'PacketWriteResult: the DAG processing result of one envelope write (seed 004).';

COMMENT ON COLUMN memsub.packet_write_result."position" IS '1-based position of the envelope in the written batch (1 for a single write).';

COMMENT ON COLUMN memsub.packet_write_result.packet_id IS 'Stored packet (the existing one when deduplicated).';

COMMENT ON COLUMN memsub.packet_write_result.packet_type IS 'Semantic category of the packet.';

COMMENT ON COLUMN memsub.packet_write_result."timestamp" IS 'Event time of the stored packet.';

COMMENT ON COLUMN memsub.packet_write_result.thread_id IS 'Thread of the packet, if any.';

COMMENT ON COLUMN memsub.packet_write_result.parent_ids IS 'Lineage parents of the packet.';

COMMENT ON COLUMN memsub.packet_write_result.generation IS 'Lineage generation: 0 for a packet without parents, else 1 + the deepest parent.';

COMMENT ON COLUMN memsub.packet_write_result.root_packet_id IS 'Root of the lineage: the packet itself without parents, else the root of its first parent.';

COMMENT ON COLUMN memsub.packet_write_result.content_hash IS 'Deduplication hash of the content.';

COMMENT ON COLUMN memsub.packet_write_result.deduplicated IS 'True when the same content was already stored and the existing packet is returned.';

COMMENT ON COLUMN memsub.packet_write_result.written IS 'Rows written per table, e.g. {"packet_store": 1, "packet_threads": 1}; {} when deduplicated.';

COMMENT ON COLUMN memsub.packet_write_result.unknown_fields IS 'Envelope fields this version of the contract does not know (e.g. from a newer minor version), kept in the stored envelope; lineage fields are named lineage.<field>. Empty when every field is known.';

CREATE TYPE memsub.retrieval_candidate AS (
	tenant_id uuid,
	embedding_id uuid,
	packet_id uuid,
	chunk_index integer,
	chunk_text text,
	distance double precision,
	importance_score double precision,
	last_active timestamp with time zone
);

ALTER TYPE memsub.retrieval_candidate OWNER TO memsub_owner;

COMMENT ON TYPE memsub.retrieval_candidate IS 'One nearest-neighbour candidate of memsub.semantic_search (internal).';

CREATE FUNCTION memsub._add_login_binding(p_login name, p_tenant_id uuid, p_org_id uuid) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    inserted integer;
begin
    insert into memsub.login_bindings (login, bound_tenant_id, bound_org_id)
    values (p_login, p_tenant_id, p_org_id)
    on conflict on constraint login_bindings_key do nothing;
    get diagnostics inserted = row_count;
    return inserted = 1;
end
$$;

ALTER FUNCTION memsub._add_login_binding(p_login name, p_tenant_id uuid, p_org_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._add_login_binding(p_login name, p_tenant_id uuid, p_org_id uuid) IS 'Internal to memsub.bind_login and memsub.trust_login: adds a binding of a checked login (tenant NULL: every tenant); true when it is new.';

CREATE FUNCTION memsub._alternatives(p_values text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select case when cardinality(p_values) > 1
                then array_to_string(p_values[1:cardinality(p_values) - 1], ', ') || ' or '
                     || p_values[cardinality(p_values)]
                else array_to_string(p_values, ', ') end
$$;

ALTER FUNCTION memsub._alternatives(p_values text[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._alternatives(p_values text[]) IS 'Internal: a vocabulary in words for an error message ("shared, cursor or l-private").';

CREATE FUNCTION memsub._api_key_lookup(p_key_id text, p_key_hash bytea) RETURNS TABLE(key_id text, tenant_id uuid, org_id uuid, user_id uuid, roles text[])
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select k.key_id, k.tenant_id, k.org_id, k.user_id, k.roles
      from memsub.api_keys k
     where k.key_id = p_key_id and k.key_hash = p_key_hash and k.revoked_at is null
       and (k.expires_at is null or k.expires_at > pg_catalog.statement_timestamp())
$$;

ALTER FUNCTION memsub._api_key_lookup(p_key_id text, p_key_hash bytea) OWNER TO memsub_retrieval_owner;

COMMENT ON FUNCTION memsub._api_key_lookup(p_key_id text, p_key_hash bytea) IS 'The binding of the live key with this id and hash, read across tenants (owned by memsub_retrieval_owner, BYPASSRLS). Executable only by memsub_owner: memsub.authenticate_api_key calls it.';

CREATE FUNCTION memsub._apply_state_delta(p_state jsonb, p_delta jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select (p_state || coalesce((select jsonb_object_agg(k, v) from jsonb_each(p_delta) as d(k, v)
                                  where jsonb_typeof(v) <> 'null'), '{}'))
           - coalesce((select array_agg(k) from jsonb_each(p_delta) as d(k, v) where jsonb_typeof(v) = 'null'),
                      '{}'::text[])
$$;

ALTER FUNCTION memsub._apply_state_delta(p_state jsonb, p_delta jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._apply_state_delta(p_state jsonb, p_delta jsonb) IS 'Merges a state delta into a state: keys with a value are set, keys whose value is JSON null are removed.';

CREATE FUNCTION memsub._batch_embeddings(p_batch memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid, p_vectors public.vector[], p_before integer[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_max_text bigint := memsub.limit_value('max_text_chars');
    v_max_json bigint := memsub.limit_value('max_json_bytes');
begin
    -- Plain expressions, as in _batch_envelopes, not the field readers fan_out_packet calls (about ten calls per
    -- element, the vector's reader in a subtransaction of its own): where a reader would refuse an element, a cast
    -- fails or a column gets NULL or a value its constraint refuses, and the batch goes envelope by envelope, which
    -- names the element and field. The readers' rules:
    --   vector          a JSON array pgvector reads (the cast), of the column's dimension (its type), with a
    --                   cosine norm (a vector's distance to itself is NaN exactly when it has none); given apart
    --                   (p_vectors), the element's vector is JSON null or absent and its p_vectors entry, after
    --                   the p_before[pos] entries of the envelopes before it, is not NULL;
    --   chunk_index     fan_out_packet's cast, 0 when absent, not negative (memory_embeddings_chunk_index_non_negative);
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

ALTER FUNCTION memsub._batch_embeddings(p_batch memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid, p_vectors public.vector[], p_before integer[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._batch_embeddings(p_batch memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid, p_vectors public.vector[], p_before integer[]) IS 'Internal to write_packets: the fan-out of the memory.embeddings of a batch''s stored packets (the only memory field the set-based path takes) in one INSERT; p_vectors: their vectors given apart (NULL: in the envelopes), p_before: per batch position, how many of them belong to the envelopes before it.';

CREATE FUNCTION memsub._batch_envelopes(p_envelopes jsonb, p_user uuid, p_session text, p_max_envelope_bytes bigint, p_max_tags bigint, p_max_tag_chars bigint, p_max_parent_ids bigint, p_vectors_apart boolean) RETURNS SETOF memsub.packet_fields
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
    -- Plain expressions rather than the raising field readers (a function call per field and envelope would
    -- cost more than the rest of the write): what they would refuse is marked not clean, or fails a cast.
    -- The fields and the contract's field lists are store_packet_envelope's (memsub.packet_fields,
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
               and jsonb_typeof(r.e -> 'packet_type') = 'string' and btrim(r.e ->> 'packet_type') <> ''
               and length(r.e ->> 'packet_type') <= 200
               and jsonb_typeof(r.e -> 'payload') is distinct from 'null' and r.e ? 'payload'
               and ((r.e -> 'packet_id' is null or jsonb_typeof(r.e -> 'packet_id') = 'null') or r.stated_id is not null)
               and ((r.e -> 'timestamp' is null or jsonb_typeof(r.e -> 'timestamp') = 'null') or r.stated_time is not null)
               and ((r.e -> 'ttl' is null or jsonb_typeof(r.e -> 'ttl') = 'null') or r.ttl is not null)
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
        select x.o::integer as pos, x.e,
               case when jsonb_typeof(x.e -> 'packet_id') = 'string' and (x.e -> 'packet_id' #>> '{}') ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' then (x.e -> 'packet_id' #>> '{}')::uuid end as stated_id,
               case when jsonb_typeof(x.e -> 'timestamp') = 'string' and (x.e -> 'timestamp' #>> '{}') ~ '^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?)?(?:Z|z|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?)?$' and left((x.e -> 'timestamp' #>> '{}'), 4) <> '0000'
                             and substr((x.e -> 'timestamp' #>> '{}'), 11, 1) in ('T', ' ') then
                   case when substr((x.e -> 'timestamp' #>> '{}'), 12) ~ '[-+Zz]' then (x.e -> 'timestamp' #>> '{}')::timestamptz
                        else (x.e -> 'timestamp' #>> '{}')::timestamp at time zone 'UTC' end end as stated_time,
               case when jsonb_typeof(x.e -> 'ttl') = 'string' and (x.e -> 'ttl' #>> '{}') ~ '^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?)?(?:Z|z|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?)?$' and left((x.e -> 'ttl' #>> '{}'), 4) <> '0000'
                             and substr((x.e -> 'ttl' #>> '{}'), 11, 1) in ('T', ' ') then
                   case when substr((x.e -> 'ttl' #>> '{}'), 12) ~ '[-+Zz]' then (x.e -> 'ttl' #>> '{}')::timestamptz
                        else (x.e -> 'ttl' #>> '{}')::timestamp at time zone 'UTC' end end as ttl,
               case when jsonb_typeof(x.e -> 'thread_id') = 'string' and (x.e -> 'thread_id' #>> '{}') ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' then (x.e -> 'thread_id' #>> '{}')::uuid end as thread_id,
               case when jsonb_typeof(x.e -> 'correlation_id') = 'string' and (x.e -> 'correlation_id' #>> '{}') ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' then (x.e -> 'correlation_id' #>> '{}')::uuid end as correlation_id,
               case when jsonb_typeof(x.e -> 'importance_score') = 'number'
                         and (x.e ->> 'importance_score')::numeric between 0 and 1
                    then round((x.e ->> 'importance_score')::numeric, 300)::double precision end as importance,
               case when jsonb_typeof(x.e -> 'lineage') = 'object' then x.e -> 'lineage' end as lineage,
               case when jsonb_typeof(x.e -> 'memory') = 'object' then x.e -> 'memory' end as memory,
               -- tags: NULL (not clean) unless absent or an array of non-blank strings within the limits
               case when (x.e -> 'tags' is null or jsonb_typeof(x.e -> 'tags') = 'null') then '{}'::text[]
                    when jsonb_typeof(x.e -> 'tags') = 'array' and jsonb_array_length(x.e -> 'tags') <= p_max_tags
                         and not exists (select from jsonb_array_elements(x.e -> 'tags') as g(v)
                                          where jsonb_typeof(g.v) <> 'string' or (g.v #>> '{}') !~ '\S'
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
$_$;

ALTER FUNCTION memsub._batch_envelopes(p_envelopes jsonb, p_user uuid, p_session text, p_max_envelope_bytes bigint, p_max_tags bigint, p_max_tag_chars bigint, p_max_parent_ids bigint, p_vectors_apart boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._batch_envelopes(p_envelopes jsonb, p_user uuid, p_session text, p_max_envelope_bytes bigint, p_max_tags bigint, p_max_tag_chars bigint, p_max_parent_ids bigint, p_vectors_apart boolean) IS 'Internal to write_packets: every envelope of a batch read as store_packet_envelope reads it, normalized, with its packet id and clean = false where the set-based path must leave it to store_packet_envelope (which names the field); p_vectors_apart: the memory.embeddings vectors are given apart, so each element holds JSON null or nothing in their place. Not granted to clients.';

CREATE FUNCTION memsub._batch_lineage(p_batch memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid) RETURNS memsub.packet_fields[]
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_total    integer := cardinality(p_batch);
    v_ids      uuid[] := array(select b.packet_id from unnest(p_batch) b order by b.pos);
    v_parents  jsonb;      -- per envelope: its parent ids
    v_position jsonb;      -- packet id of the batch -> position
    v_outside  jsonb;      -- parent id outside the batch -> [generation, root]
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
                            'content_hash', memsub.packet_content_hash(b.packet_type, b.payload, b.thread_id,
                                                                      b.parent_ids, b.scope, p_org, p_user,
                                                                      b.session_id, b.ts, b.stated_id)))
                   from unnest(p_batch) b
                   join unnest(v_gens, v_roots) with ordinality as i(gen, root, pos) on i.pos = b.pos
                  order by b.pos);
end
$$;

ALTER FUNCTION memsub._batch_lineage(p_batch memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._batch_lineage(p_batch memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid) IS 'Internal to write_packets: a batch''s packets with their lineage generation and root (parents in the batch or stored and visible, one probe for the stored ones) and content hash; NULL when a parent is missing or listed after its child (the envelope-by-envelope path reports or orders them).';

CREATE FUNCTION memsub._caller_is_admin() RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$ select memsub.is_tenant_admin() or memsub.is_platform_admin() $$;

ALTER FUNCTION memsub._caller_is_admin() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._caller_is_admin() IS 'True when the context asks for tenant_admin or platform_admin and the acting role holds that memsub role.';

CREATE FUNCTION memsub._check_context_role(p_role text, p_caller text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    if p_role <> all (memsub.context_roles()) then
        raise exception '%: unknown role "%"', p_caller, p_role
            using errcode = '22023', column = 'roles',
                  hint = 'Known context roles: ' || pg_catalog.array_to_string(memsub.context_roles(), ', ') || '.';
    end if;
    return p_role;
end
$$;

ALTER FUNCTION memsub._check_context_role(p_role text, p_caller text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_context_role(p_role text, p_caller text) IS 'Internal: refuses (22023, column roles, the known roles in the hint) a requested context role that is not one of memsub.context_roles(), the message naming the calling function p_caller. Returns the role.';

CREATE FUNCTION memsub._check_count(p_value bigint, p_limit text, p_field text) RETURNS bigint
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    if p_value is null or p_value < 1 then
        raise exception 'field "%" must be at least 1, not %', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return memsub._check_limit(p_value, p_limit, p_field);
end
$$;

ALTER FUNCTION memsub._check_count(p_value bigint, p_limit text, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_count(p_value bigint, p_limit text, p_field text) IS 'A required count argument (k, limit, max_depth): NULL or below 1 raises 22023, over the resource limit p_limit 54000 (memsub._check_limit), both naming the field; returns the value otherwise.';

CREATE FUNCTION memsub._check_doc_refs(p_refs jsonb, p_field text) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
declare
    v_ref      jsonb;
    v_position integer;
    v_field    text;
    v_doc      uuid;
    v_chunk    uuid;
    v_result   jsonb := '[]';
    v_tenant   uuid := memsub.current_tenant_id();  -- once, not in each reference's lookups
    uuid_text  constant text := '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
begin
    if p_refs is null then
        return '[]';
    end if;
    if jsonb_typeof(p_refs) <> 'array' then
        raise exception 'field "%" must be a JSON array of DocRefs {doc_id, chunk_id, score}', p_field
            using errcode = '22023', column = p_field;
    end if;
    for v_ref, v_position in select r, n - 1 from jsonb_array_elements(p_refs) with ordinality as a(r, n) loop
        v_field := format('%s[%s]', p_field, v_position);
        perform memsub._check_object_keys(v_ref, v_field, array['doc_id', 'chunk_id', 'score'],
                                          '{doc_id, chunk_id, score}', 'a DocRef');
        if jsonb_typeof(v_ref -> 'doc_id') is distinct from 'string' or (v_ref ->> 'doc_id') !~ uuid_text then
            raise exception 'field "%.doc_id" must be a document id (UUID)', v_field
                using errcode = '22023', column = v_field || '.doc_id';
        end if;
        v_doc := (v_ref ->> 'doc_id')::uuid;
        if not exists (select from memsub.document_index d where d.tenant_id = v_tenant and d.id = v_doc) then
            raise exception 'field "%.doc_id": document % does not exist or is not visible', v_field, v_doc
                using errcode = '23503', column = v_field || '.doc_id';
        end if;
        v_chunk := null;
        if jsonb_typeof(v_ref -> 'chunk_id') = 'string' and (v_ref ->> 'chunk_id') ~ uuid_text then
            v_chunk := (v_ref ->> 'chunk_id')::uuid;
            if not exists (select from memsub.document_chunks c
                            where c.tenant_id = v_tenant and c.id = v_chunk and c.document_id = v_doc) then
                raise exception 'field "%.chunk_id": chunk % is not a visible chunk of document %', v_field, v_chunk, v_doc
                    using errcode = '23503', column = v_field || '.chunk_id';
            end if;
        elsif coalesce(jsonb_typeof(v_ref -> 'chunk_id'), 'null') <> 'null' then
            raise exception 'field "%.chunk_id" must be a chunk id (UUID) or null', v_field
                using errcode = '22023', column = v_field || '.chunk_id';
        end if;
        if coalesce(jsonb_typeof(v_ref -> 'score'), 'null') not in ('null', 'number') then
            raise exception 'field "%.score" must be a number', v_field
                using errcode = '22023', column = v_field || '.score';
        end if;
        v_result := v_result || jsonb_build_array(jsonb_build_object(
            'doc_id', v_doc, 'chunk_id', v_chunk, 'score', v_ref -> 'score'));
    end loop;
    return v_result;
end
$_$;

ALTER FUNCTION memsub._check_doc_refs(p_refs jsonb, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_doc_refs(p_refs jsonb, p_field text) IS 'Normalizes a JSON array of DocRefs {doc_id, chunk_id?, score?}: each document (and chunk of it) must exist and be visible (23503), shapes are checked (22023), each error names the element, e.g. evidence[0].doc_id.';

CREATE FUNCTION memsub._check_filter_values(p_values text[], p_field text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_value text;
begin
    -- A filter value that no stored value can equal: stored text is never blank, and NULL equals nothing. Such a
    -- filter would answer as if nothing matched. NULL for the whole filter means no filter.
    foreach v_value in array coalesce(p_values, '{}') loop
        if v_value is null or v_value !~ '\S' then
            raise exception 'field "%" must hold non-blank values: % matches nothing', p_field,
                coalesce(quote_literal(v_value), 'NULL')
                using errcode = '22023', column = p_field;
        end if;
    end loop;
end
$$;

ALTER FUNCTION memsub._check_filter_values(p_values text[], p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_filter_values(p_values text[], p_field text) IS 'Refuses (22023 naming the field) a filter holding a NULL or blank value, which no stored value equals; a NULL filter (no filter) passes.';

CREATE FUNCTION memsub._check_finite(p_value double precision, p_field text) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_value is not null
       and (p_value = 'NaN'::double precision or p_value in ('Infinity'::double precision, '-Infinity'::double precision)) then
        raise exception 'field "%" must be a finite number, not %', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;

ALTER FUNCTION memsub._check_finite(p_value double precision, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_finite(p_value double precision, p_field text) IS 'Returns the number (or NULL) unchanged when it is finite; raises 22023 naming the field for NaN and infinities.';

CREATE FUNCTION memsub._check_finite_interval(p_value interval, p_field text) RETURNS interval
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_value is not null and not isfinite(p_value) then
        raise exception 'field "%" must be a finite interval, not %', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;

ALTER FUNCTION memsub._check_finite_interval(p_value interval, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_finite_interval(p_value interval, p_field text) IS 'Returns the interval (or NULL) unchanged when it is finite; raises 22023 naming the field for +/-infinity.';

CREATE FUNCTION memsub._check_finite_time(p_value timestamp with time zone, p_field text) RETURNS timestamp with time zone
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_value is not null and not isfinite(p_value) then
        raise exception 'field "%" must be a finite time, not %; leave it NULL for an open bound', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;

ALTER FUNCTION memsub._check_finite_time(p_value timestamp with time zone, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_finite_time(p_value timestamp with time zone, p_field text) IS 'Returns the timestamp (or NULL) unchanged when it is finite; raises 22023 naming the field for +/-infinity.';

CREATE FUNCTION memsub._check_fused_search(p_k integer, p_rrf_k integer, p_query public.vector, p_query_text text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
begin
    perform memsub._check_count(p_k, 'max_k', 'k');
    if p_rrf_k is null or p_rrf_k < 0 then
        raise exception 'field "rrf_k" must be >= 0, not %', p_rrf_k using errcode = '22023', column = 'rrf_k';
    end if;
    if p_query is null and p_query_text is null then
        raise exception 'field "query" or "query_text" is required' using errcode = '23502', column = 'query';
    end if;
    -- Without a query vector the words are the whole query: blank ones would match nothing, and the search would
    -- answer as if nothing matched.
    if p_query is null and p_query_text !~ '\S' then
        raise exception 'field "query_text" must not be blank when no query vector is given'
            using errcode = '22023', column = 'query_text';
    end if;
    perform memsub._check_vector(p_query, 'query');
end
$$;

ALTER FUNCTION memsub._check_fused_search(p_k integer, p_rrf_k integer, p_query public.vector, p_query_text text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_fused_search(p_k integer, p_rrf_k integer, p_query public.vector, p_query_text text) IS 'Checks the arguments the fused searches (hybrid_search, memory_search, entity_search) share: k at least 1 (22023) and within the max_k limit (54000), rrf_k not negative, a query vector or text (23502) that is not blank text alone (22023), a usable query vector.';

CREATE FUNCTION memsub._check_graph_node(p_type text, p_id text, p_field text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_id text := memsub._require_text(p_id, p_field);
begin
    perform memsub._check_one_of(p_type, memsub.graph_node_types(),
                                replace(p_field, '_entity', '') || '_type');
    if p_type = 'Episode' and not exists (
            select from memsub.sessions s where s.tenant_id = memsub.current_tenant_id() and s.id = v_id)
       or p_type = 'Document' and not exists (
            select from memsub.document_index d
             where d.tenant_id = memsub.current_tenant_id() and d.id::text = lower(v_id))
       or p_type = 'Memory' and not exists (
            select from memsub.memory_entries m
             where m.tenant_id = memsub.current_tenant_id() and m.id::text = lower(v_id)) then
        raise exception 'field "%": % node "%" does not exist or is not visible', p_field, p_type, v_id
            using errcode = '23503', column = p_field;
    end if;
    return case when p_type in ('Document', 'Memory') then lower(v_id) else v_id end;
end
$$;

ALTER FUNCTION memsub._check_graph_node(p_type text, p_id text, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_graph_node(p_type text, p_id text, p_field text) IS 'The id of a graph node of a type: Entity (any name, trimmed), Episode (a visible session id), Document (a visible document version id), Memory (a visible memory entry id); 23503 naming the field when missing.';

CREATE FUNCTION memsub._check_half_life(p_half_life interval) RETURNS interval
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_half_life is null or p_half_life < interval '1 second' or not isfinite(p_half_life) then
        raise exception 'field "half_life" must be a finite interval of at least one second, not %', p_half_life
            using errcode = '22023', column = 'half_life';
    end if;
    return p_half_life;
end
$$;

ALTER FUNCTION memsub._check_half_life(p_half_life interval) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_half_life(p_half_life interval) IS 'Returns a finite half-life of at least one second; raises 22023 naming half_life otherwise.';

CREATE FUNCTION memsub._check_json_type(p_value jsonb, p_type text, p_field text) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_value is not null and jsonb_typeof(p_value) <> p_type then
        raise exception 'field "%" must be a JSON %, not %', p_field, p_type, jsonb_typeof(p_value)
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;

ALTER FUNCTION memsub._check_json_type(p_value jsonb, p_type text, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_json_type(p_value jsonb, p_type text, p_field text) IS 'Returns the JSON value when it is NULL or of the given JSON type; raises 22023 naming the field otherwise.';

CREATE FUNCTION memsub._check_limit(p_value bigint, p_limit text, p_field text) RETURNS bigint
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_max bigint;
begin
    -- Every limit is at least 1 (limits_value_positive, and every default above), so a value of 1 or less is
    -- within any limit: answered without looking the limit up (a frame and a query), which a one-id read or a
    -- one-tag write would otherwise pay on every call.
    if p_value is null or p_value <= 1 then
        return p_value;
    end if;
    v_max := memsub.limit_value(p_limit);
    if p_value > v_max then
        raise exception 'field "%" is % over the limit: % > % (%)', p_field,
            case when p_limit like '%bytes' then 'bytes' when p_limit like '%chars' then 'characters'
                 else 'size' end, p_value, v_max, p_limit
            using errcode = '54000', column = p_field,
                  detail = format('limit=%s value=%s actual=%s', p_limit, v_max, p_value),
                  hint = 'Limits are set per installation in memsub.limits (docs/security.md, "Limits").';
    end if;
    return p_value;
end
$$;

ALTER FUNCTION memsub._check_limit(p_value bigint, p_limit text, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_limit(p_value bigint, p_limit text, p_field text) IS 'Refuses a value over a resource limit with SQLSTATE 54000 naming the field (column diagnostic) and the limit (detail: limit=NAME value=MAX actual=N); returns the value otherwise. NULL passes, and so does a value of 1 or less (every limit is at least 1), without reading the limit.';

CREATE FUNCTION memsub._check_limits(p_values bigint[], p_limit text, p_fields text[]) RETURNS void
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_max bigint;
begin
    -- Several values held against one limit, which is read once (a frame and a query each time otherwise), and
    -- only for a value above 1 (every limit is at least 1). The first value over it is refused by _check_limit.
    for i in 1 .. coalesce(cardinality(p_values), 0) loop
        if p_values[i] > 1 then
            v_max := coalesce(v_max, memsub.limit_value(p_limit));
            if p_values[i] > v_max then
                perform memsub._check_limit(p_values[i], p_limit, p_fields[i]);
            end if;
        end if;
    end loop;
end
$$;

ALTER FUNCTION memsub._check_limits(p_values bigint[], p_limit text, p_fields text[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_limits(p_values bigint[], p_limit text, p_fields text[]) IS 'Refuses the first of several values over one resource limit as memsub._check_limit does (54000 naming its field, p_fields[i] for p_values[i]), reading the limit once; NULL values and values of 1 or less pass without reading it.';

CREATE FUNCTION memsub._check_login_without_binding(p_login name, p_tenant_id uuid, p_org_id uuid) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    -- Superusers and platform admins, who reach every tenant anyway, need no binding.
    if (select r.rolsuper from pg_catalog.pg_roles r where r.rolname = p_login)
       or pg_catalog.pg_has_role(p_login, 'memsub_platform_admin', 'MEMBER') then
        return;
    end if;
    if not exists (select from memsub.login_bindings b where b.login = p_login) then
        if coalesce((select s.value from memsub.installation_settings s where s.name = 'unbound_logins'),
                    'refuse') = 'allow' then
            return;
        end if;
        raise exception 'memsub.set_context: login % has no binding and this installation refuses unbound logins', p_login
            using errcode = '42501', column = 'tenant_id',
                  hint = 'A platform admin binds it: memsub.bind_login(login, tenant_id[, org_id]) or '
                         'memsub.trust_login(login); or signs its contexts (memsub.set_context_signed).';
    end if;
    if exists (select from memsub.login_bindings b where b.login = p_login and b.bound_tenant_id = p_tenant_id) then
        raise exception 'memsub.set_context: login % is not bound to organization % of tenant %',
                        p_login, coalesce(p_org_id::text, '(none: the whole tenant)'), p_tenant_id
            using errcode = '42501', column = 'org_id';
    end if;
    raise exception 'memsub.set_context: login % is not bound to tenant %', p_login, p_tenant_id
        using errcode = '42501', column = 'tenant_id';
end
$$;

ALTER FUNCTION memsub._check_login_without_binding(p_login name, p_tenant_id uuid, p_org_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_login_without_binding(p_login name, p_tenant_id uuid, p_org_id uuid) IS 'Internal: for memsub.set_context when no binding of the login allows the context. Returns for a superuser, a platform admin, or an unbound login where installation_settings.unbound_logins = ''allow''; otherwise raises 42501 naming tenant_id (no binding, or not bound to the tenant) or org_id (bound to the tenant, not to the organization).';

CREATE FUNCTION memsub._check_object_keys(p_value jsonb, p_field text, p_keys text[], p_shape text, p_what text) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._check_object_keys(p_value jsonb, p_field text, p_keys text[], p_shape text, p_what text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_object_keys(p_value jsonb, p_field text, p_keys text[], p_shape text, p_what text) IS 'Returns the JSON value when it is an object with no key outside p_keys; raises 22023 naming the field (not an object, message showing p_shape) or the field and the first unknown key (not part of p_what) otherwise.';

CREATE FUNCTION memsub._check_one_of(p_value text, p_allowed text[], p_field text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._check_one_of(p_value text, p_allowed text[], p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_one_of(p_value text, p_allowed text[], p_field text) IS 'Returns the value when it is one of the allowed values; raises 23502 (NULL) or 22023 naming the field.';

CREATE FUNCTION memsub._check_text_limits(VARIADIC p_name_value text[]) RETURNS bigint
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_max     bigint;
    v_length  bigint;
    v_longest bigint;
begin
    if coalesce(array_length(p_name_value, 1), 0) % 2 <> 0 then
        raise exception 'field "name_value" must hold field name and value pairs, not % elements',
            array_length(p_name_value, 1)
            using errcode = '22023', column = 'name_value';
    end if;
    for i in 1 .. coalesce(array_length(p_name_value, 1), 0) by 2 loop
        v_length := length(p_name_value[i + 1]);
        if v_length is not null then
            v_max := coalesce(v_max, memsub.limit_value('max_text_chars'));
            if v_length > v_max then
                perform memsub._check_limit(v_length, 'max_text_chars', p_name_value[i]);
            end if;
            v_longest := greatest(v_longest, v_length);
        end if;
    end loop;
    return v_longest;
end
$$;

ALTER FUNCTION memsub._check_text_limits(VARIADIC p_name_value text[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_text_limits(VARIADIC p_name_value text[]) IS 'Checks text arguments, given as field name and value pairs, against max_text_chars in order: the first over the limit raises what memsub._check_limit raises for it (54000 naming the field); NULL values pass. Returns the greatest length (NULL when every value is NULL).';

CREATE FUNCTION memsub._check_time_range(p_since timestamp with time zone, p_until timestamp with time zone) RETURNS void
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_since >= p_until then
        raise exception 'field "until" (%) must be after since (%): the range [since, until) is empty', p_until,
            p_since using errcode = '22023', column = 'until';
    end if;
end
$$;

ALTER FUNCTION memsub._check_time_range(p_since timestamp with time zone, p_until timestamp with time zone) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_time_range(p_since timestamp with time zone, p_until timestamp with time zone) IS 'Refuses (22023 naming until) a time filter [since, until) that holds no time; either bound may be NULL (open).';

CREATE FUNCTION memsub._check_unit(p_value double precision, p_field text) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_value is not null and (p_value < 0 or p_value > 1 or p_value = 'NaN'::double precision) then
        raise exception 'field "%" must be between 0 and 1, not %', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;

ALTER FUNCTION memsub._check_unit(p_value double precision, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_unit(p_value double precision, p_field text) IS 'Returns a value in [0, 1] (or NULL) unchanged; raises 22023 naming the field otherwise.';

CREATE FUNCTION memsub._check_vector(p_value public.vector, p_field text) RETURNS public.vector
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._check_vector(p_value public.vector, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._check_vector(p_value public.vector, p_field text) IS 'Returns the vector when it is NULL or has the installation''s dimension and a usable norm (not a zero vector, squares representable in single precision); raises 22023 naming the field otherwise.';

CREATE FUNCTION memsub._chunk_keyword_candidates(p_query_text text, p_limit integer DEFAULT 50) RETURNS TABLE(chunk_id uuid, text_rank integer, text_score real)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_query  tsquery;
begin
    if p_limit is null or p_limit < 1 or p_limit > 10000 then
        raise exception 'field "limit" must be between 1 and 10000, not %', p_limit
            using errcode = '22023', column = 'limit';
    end if;
    v_query := websearch_to_tsquery('english'::regconfig, coalesce(p_query_text, ''));
    if numnode(v_query) = 0 then
        return;
    end if;
    return query
        select c.id, (row_number() over (order by ts_rank_cd(c.content_tsv, v_query) desc, c.id))::integer,
               ts_rank_cd(c.content_tsv, v_query)
          from memsub.document_chunks c
          join memsub.document_index d on d.tenant_id = c.tenant_id and d.id = c.document_id and d.is_latest
         where c.tenant_id = v_tenant
           and c.content_tsv @@ v_query
           and not exists (select from memsub.memory_embeddings e
                            where e.tenant_id = d.tenant_id and e.packet_id = d.packet_id
                              and e.embedding_type = 'content' and e.chunk_index = c.chunk_index)
         order by 2
         limit p_limit;
end
$$;

ALTER FUNCTION memsub._chunk_keyword_candidates(p_query_text text, p_limit integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._chunk_keyword_candidates(p_query_text text, p_limit integer) IS 'Keyword leg over document chunks that carry no vector (documents ingested without an embedder): the caller''s chunks of latest document versions matching the query (websearch syntax, english), best first by ts_rank_cd. Security invoker: row-level security of document_chunks applies (the GIN index serves owners and analysts only; chunks are few next to embeddings).';

CREATE FUNCTION memsub._context_tenant_rows(p_embedding_type text, p_limit integer) RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_rows   bigint;
begin
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(), 'embedding_type');
    if p_limit is null or p_limit < 1 then
        raise exception 'field "limit" must be >= 1, not %', coalesce(p_limit::text, 'NULL')
            using errcode = '22023', column = 'limit';
    end if;
    select count(*) into v_rows
      from (select from memsub.memory_embeddings e
             where e.tenant_id = v_tenant and e.embedding_type = p_embedding_type limit p_limit) s;
    return v_rows;
end
$$;

ALTER FUNCTION memsub._context_tenant_rows(p_embedding_type text, p_limit integer) OWNER TO memsub_retrieval_owner;

COMMENT ON FUNCTION memsub._context_tenant_rows(p_embedding_type text, p_limit integer) IS 'Internal to memsub._search_strategy: how many embeddings of the type the context tenant holds, counted up to p_limit from the tenant and type index (owned by memsub_retrieval_owner, BYPASSRLS: every row of the tenant counts, as in memsub.search_stats.row_count). 42501 without a tenant context; 22023 naming embedding_type or limit for an unknown type or a limit below 1.';

CREATE FUNCTION memsub.document_mimes() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['pdf', 'md', 'txt']::text[] $$;

ALTER FUNCTION memsub.document_mimes() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.document_mimes() IS 'The kinds of document memsub ingests (document_index.mime, memsub.document_ingest p_mime).';

CREATE TABLE memsub.document_index (
    tenant_id uuid NOT NULL,
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid,
    user_id uuid,
    file_path text NOT NULL,
    embedding public.vector,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    is_latest boolean DEFAULT true NOT NULL,
    previous_id uuid,
    hash text,
    mime text,
    summary text,
    key_concepts text[] DEFAULT '{}'::text[] NOT NULL,
    entities jsonb DEFAULT '[]'::jsonb NOT NULL,
    extracted_text text,
    packet_id uuid,
    chunk_count integer DEFAULT 0 NOT NULL,
    superseded_at timestamp with time zone,
    CONSTRAINT document_index_chain_consistent CHECK (((version = 1) = (previous_id IS NULL))),
    CONSTRAINT document_index_chunk_count_non_negative CHECK ((chunk_count >= 0)),
    CONSTRAINT document_index_entities_is_array CHECK ((jsonb_typeof(entities) = 'array'::text)),
    CONSTRAINT document_index_file_path_not_blank CHECK ((length(btrim(file_path)) > 0)),
    CONSTRAINT document_index_hash_format CHECK (((hash ~ '^[0-9a-f]+$'::text) AND (length(hash) = 64))),
    CONSTRAINT document_index_latest_consistent CHECK ((is_latest = (superseded_at IS NULL))),
    CONSTRAINT document_index_metadata_is_object CHECK ((jsonb_typeof(metadata) = 'object'::text)),
    CONSTRAINT document_index_mime_known CHECK ((mime = ANY (memsub.document_mimes()))),
    CONSTRAINT document_index_version_positive CHECK ((version >= 1))
);

ALTER TABLE ONLY memsub.document_index FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.document_index OWNER TO memsub_owner;

COMMENT ON TABLE memsub.document_index IS 'Documents (seed 001 document index and seed 003 Document): one row per version of a file path; versions chain by content hash (previous_id) and the latest version of a path has is_latest. Chunks are in document_chunks; their vectors in memory_embeddings under the version''s packet.';

COMMENT ON COLUMN memsub.document_index.tenant_id IS 'Tenant owning the entry.';

COMMENT ON COLUMN memsub.document_index.id IS 'Entry identifier.';

COMMENT ON COLUMN memsub.document_index.org_id IS 'Organization of the writer (NULL: tenant-wide).';

COMMENT ON COLUMN memsub.document_index.user_id IS 'User who indexed the file.';

COMMENT ON COLUMN memsub.document_index.file_path IS 'Path of the document (seed 003 path), e.g. design_docs/phase1_design/schema.md. Unique per tenant among latest versions.';

COMMENT ON COLUMN memsub.document_index.embedding IS 'Embedding of the document: given by memsub.document_index_put, or the mean of its chunk vectors after ingest.';

COMMENT ON COLUMN memsub.document_index.metadata IS 'Free-form metadata (JSON object; seed 003 Document.metadata).';

COMMENT ON COLUMN memsub.document_index.created_at IS 'When the file was first indexed.';

COMMENT ON COLUMN memsub.document_index.updated_at IS 'When the version was last changed (document_index_put replaces the latest version in place).';

COMMENT ON COLUMN memsub.document_index.version IS 'Version of the path: 1, 2, 3, ... (a new version per changed content hash).';

COMMENT ON COLUMN memsub.document_index.is_latest IS 'True for the latest version of the path (the latest pointer).';

COMMENT ON COLUMN memsub.document_index.previous_id IS 'The version this one replaced (NULL for version 1): the version chain.';

COMMENT ON COLUMN memsub.document_index.hash IS 'sha256 of the file''s bytes, lower-case hex (NULL for entries put without content).';

COMMENT ON COLUMN memsub.document_index.mime IS 'Document kind, one of memsub.document_mimes(): pdf, md or txt (seed 003 mime).';

COMMENT ON COLUMN memsub.document_index.summary IS 'Short summary of the document.';

COMMENT ON COLUMN memsub.document_index.key_concepts IS 'Key concepts (e.g. the headings of a Markdown file).';

COMMENT ON COLUMN memsub.document_index.entities IS 'Entities mentioned: a JSON array of {type, value}.';

COMMENT ON COLUMN memsub.document_index.extracted_text IS 'Text extracted from the file; chunk positions are character offsets into it.';

COMMENT ON COLUMN memsub.document_index.packet_id IS 'Packet (packet_type document) that carries the version: its memory_embeddings rows are the chunk vectors.';

COMMENT ON COLUMN memsub.document_index.chunk_count IS 'Number of chunks of this version.';

COMMENT ON COLUMN memsub.document_index.superseded_at IS 'When a newer version of the path replaced this one (NULL while latest).';

CREATE FUNCTION memsub._document_index_write(p_entry memsub.document_index) RETURNS memsub.document_index
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_row    memsub.document_index;
begin
    if p_entry.version is null then
        -- The latest entry of the path gets the embedding and metadata (a new path gets version 1).
        insert into memsub.document_index as d (tenant_id, org_id, user_id, file_path, embedding, metadata)
        values (v_tenant, memsub.current_org_id(), memsub.current_user_id(), p_entry.file_path, p_entry.embedding,
                p_entry.metadata)
        on conflict (tenant_id, file_path) where is_latest do update
           set embedding = excluded.embedding, metadata = excluded.metadata, user_id = excluded.user_id,
               updated_at = now()
        returning d.* into v_row;
        return v_row;
    end if;
    -- A new version: the previous one (p_entry.previous_id) stops being the latest, then the new one is stored.
    if p_entry.previous_id is not null then
        update memsub.document_index d set is_latest = false, superseded_at = now(), updated_at = now()
         where d.tenant_id = v_tenant and d.id = p_entry.previous_id;
    end if;
    begin
        insert into memsub.document_index as d (
            tenant_id, id, org_id, user_id, file_path, metadata, version, is_latest, previous_id, hash, mime,
            summary, key_concepts, entities, extracted_text, packet_id, chunk_count)
        values (
            v_tenant, p_entry.id, memsub.current_org_id(), memsub.current_user_id(), p_entry.file_path,
            p_entry.metadata, p_entry.version, true, p_entry.previous_id, p_entry.hash, p_entry.mime,
            p_entry.summary, p_entry.key_concepts, p_entry.entities, p_entry.extracted_text, p_entry.packet_id,
            p_entry.chunk_count)
        returning d.* into v_row;
    exception when unique_violation then
        -- A file path is one version chain per tenant; its latest version may belong to an organization or user
        -- this caller cannot see, and then it cannot be superseded from here.
        raise exception 'field "file_path": % is already a document of this tenant that this caller cannot see',
            p_entry.file_path using errcode = '23505', column = 'file_path';
    end;
    return v_row;
end
$$;

ALTER FUNCTION memsub._document_index_write(p_entry memsub.document_index) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._document_index_write(p_entry memsub.document_index) IS 'Internal: stores a document_index entry in the caller''s context. An entry without a version: the path''s latest entry takes its embedding and metadata (created as version 1 for a new path). An entry with a version (id, version, previous_id, hash, mime, summary, key concepts, entities, text, packet, chunk count) becomes the latest version and previous_id stops being it (23505 naming file_path when the latest version is one the caller cannot see).';

CREATE FUNCTION memsub._drop_expired_edge(p_tenant_id uuid, p_source_key text, p_relationship_type text, p_target_key text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    delete from memsub.entity_relationships r
     where r.tenant_id = p_tenant_id and r.source_key = p_source_key and r.relationship_type = p_relationship_type
       and r.target_key = p_target_key and r.ttl <= (now() at time zone 'UTC')
$$;

ALTER FUNCTION memsub._drop_expired_edge(p_tenant_id uuid, p_source_key text, p_relationship_type text, p_target_key text) OWNER TO memsub_expiry_owner;

COMMENT ON FUNCTION memsub._drop_expired_edge(p_tenant_id uuid, p_source_key text, p_relationship_type text, p_target_key text) IS 'Internal: deletes the expired validity windows of one edge (source, type, target matching forms) so that it can be observed afresh. Not granted to clients.';

CREATE FUNCTION memsub._drop_expired_fact(p_tenant_id uuid, p_subject_key text, p_predicate text, p_object_key text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    delete from memsub.knowledge_facts f
     where f.tenant_id = p_tenant_id and f.subject_normalized = p_subject_key and f.predicate = p_predicate
       and f.object_normalized = p_object_key and f.ttl <= (now() at time zone 'UTC')
$$;

ALTER FUNCTION memsub._drop_expired_fact(p_tenant_id uuid, p_subject_key text, p_predicate text, p_object_key text) OWNER TO memsub_expiry_owner;

COMMENT ON FUNCTION memsub._drop_expired_fact(p_tenant_id uuid, p_subject_key text, p_predicate text, p_object_key text) IS 'Internal: deletes the expired fact of one (subject, predicate, object) key so that it can be asserted afresh. Not granted to clients.';

CREATE FUNCTION memsub._embedding_chunk_index(p_element jsonb) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
    select case when coalesce(p_element ->> 'chunk_index', '0') ~ '^\s*[+-]?\d{1,9}\s*$'
                then coalesce(p_element ->> 'chunk_index', '0')::integer end
$_$;

ALTER FUNCTION memsub._embedding_chunk_index(p_element jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._embedding_chunk_index(p_element jsonb) IS 'The chunk_index of a memory.embeddings element as the fan-out stores it (0 when absent), or NULL when it is not an integer (the fan-out refuses such an element).';

CREATE FUNCTION memsub._embedding_partition(p_tenant_id uuid) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select n from pg_catalog.generate_series(0, 15) n
     where p_tenant_id is not null
       and pg_catalog.satisfies_hash_partition('memsub.memory_embeddings'::regclass, 16, n, p_tenant_id)
$$;

ALTER FUNCTION memsub._embedding_partition(p_tenant_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._embedding_partition(p_tenant_id uuid) IS 'The number (0-15) of the partition of memory_embeddings that holds a tenant''s embeddings (memory_embeddings_p<nn>, hash of tenant_id, modulus 16); its HNSW indexes are idx_embeddings_vector_<type>_p<nn>. NULL for a NULL tenant.';

CREATE FUNCTION memsub._entity_keys(p_name text) RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_keys text[];
begin
    select r.keys into v_keys from memsub._resolve_entities(array[p_name]) r;
    return coalesce(v_keys, array[memsub.normalize_text(p_name)]);
end
$$;

ALTER FUNCTION memsub._entity_keys(p_name text) OWNER TO memsub_retrieval_owner;

COMMENT ON FUNCTION memsub._entity_keys(p_name text) IS 'The matching forms under which edges name the entity a name stands for (memsub._resolve_entities of one name): its name and its aliases, or the name alone when it is no Entity node. Edge lookups compare source_key / target_key to them.';

CREATE FUNCTION memsub._entity_name_words(p_entity_id text, p_aliases text[]) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pg_catalog.to_tsvector('simple'::regconfig, p_entity_id || ' ' || pg_catalog.array_to_string(p_aliases, ' ')) $$;

ALTER FUNCTION memsub._entity_name_words(p_entity_id text, p_aliases text[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._entity_name_words(p_entity_id text, p_aliases text[]) IS 'Internal: the words of an entity''s name and aliases (simple configuration), as the index idx_world_model_entities_name_words holds them and memsub._entity_word_candidates matches them.';

CREATE FUNCTION memsub._entity_word_candidates(p_query tsquery, p_limit integer DEFAULT 50) RETURNS TABLE(entity_id text, text_rank integer, text_score real)
    LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 50
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
begin
    perform memsub._check_count(p_limit, 'max_k', 'limit');
    perform memsub._check_limit(numnode(p_query), 'max_query_nodes', 'query');
    if coalesce(numnode(p_query), 0) = 0 then
        return;  -- no searchable words
    end if;
    return query
        select w.entity_id,
               (row_number() over (order by ts_rank_cd(memsub._entity_name_words(w.entity_id, w.aliases), p_query)
                                            desc, w.entity_id))::integer,
               ts_rank_cd(memsub._entity_name_words(w.entity_id, w.aliases), p_query)
          from memsub.world_model_entities w
         where w.tenant_id = v_tenant  -- the tenant_isolation policy
           and memsub._entity_name_words(w.entity_id, w.aliases) @@ p_query
         order by 2
         limit p_limit;
end
$$;

ALTER FUNCTION memsub._entity_word_candidates(p_query tsquery, p_limit integer) OWNER TO memsub_retrieval_owner;

COMMENT ON FUNCTION memsub._entity_word_candidates(p_query tsquery, p_limit integer) IS 'Text leg of memsub.entity_search: the context tenant''s entities whose name or aliases match the query (simple configuration), best first by ts_rank_cd, as names and ranks. Applies the tenant predicate itself so the index of the words is usable (tsvector @@ is not LEAKPROOF under row-level security).';

CREATE FUNCTION memsub._envelope_fields(p_part text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select case p_part
        when 'envelope' then array[
            'packet_id', 'packet_type', 'timestamp', 'payload', 'metadata', 'provenance', 'confidence',
            'reasoning_block', 'thread_id', 'lineage', 'tags', 'ttl', 'scope', 'importance_score', 'routing',
            'correlation_id', 'session_id', 'trace_id', 'memory']
        when 'lineage' then array['parent_ids', 'derivation_type', 'generation', 'root_packet_id']
        when 'memory' then array['facts', 'relationships', 'embeddings', 'reasoning_trace']
    end
$$;

ALTER FUNCTION memsub._envelope_fields(p_part text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._envelope_fields(p_part text) IS 'The fields of the envelope contract this version knows, of the envelope (''envelope''), its lineage (''lineage'') or its memory (''memory''); any other field is kept and listed in unknown_fields.';

CREATE FUNCTION memsub._envelope_lineage(p_lineage jsonb, OUT parent_ids uuid[], OUT derivation text, OUT unknown text[]) RETURNS record
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._envelope_lineage(p_lineage jsonb, OUT parent_ids uuid[], OUT derivation text, OUT unknown text[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._envelope_lineage(p_lineage jsonb, OUT parent_ids uuid[], OUT derivation text, OUT unknown text[]) IS 'Internal: reads an envelope''s lineage object: its parents (distinct, in order of first appearance), its derivation_type and its unknown fields; raises SQLSTATE 22023 naming the lineage field.';

CREATE FUNCTION memsub._envelope_scope(p_envelope jsonb, p_user uuid) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._envelope_scope(p_envelope jsonb, p_user uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._envelope_scope(p_envelope jsonb, p_user uuid) IS 'Internal: the envelope''s scope (shared when absent) for a writer (p_user: the context user); raises SQLSTATE 22023 naming the field "scope" for an unknown scope, or a private one without a user.';

CREATE FUNCTION memsub._envelope_tags(p_envelope jsonb) RETURNS text[]
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_element jsonb;
begin
    if jsonb_typeof(p_envelope -> 'tags') is distinct from 'array' then
        raise exception 'envelope field "tags" must be an array of strings'
            using errcode = '22023', column = 'tags';
    end if;
    perform memsub._check_limit(jsonb_array_length(p_envelope -> 'tags'), 'max_tags', 'tags');
    select e into v_element from jsonb_array_elements(p_envelope -> 'tags') as e
     where jsonb_typeof(e) <> 'string' or (e #>> '{}') !~ '\S' limit 1;
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

ALTER FUNCTION memsub._envelope_tags(p_envelope jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._envelope_tags(p_envelope jsonb) IS 'Internal: the envelope''s tags (present and not null) as distinct strings in order of first appearance; raises SQLSTATE 22023 or the limit''s error naming the field "tags".';

CREATE FUNCTION memsub._envelope_timestamp(p_value jsonb, p_field text) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
    text_value text;
    has_time   boolean;
    has_zone   boolean;
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
    if has_zone then
        return text_value::timestamptz;
    end if;
    return text_value::timestamp at time zone 'UTC';  -- no zone given: the envelope speaks UTC
end
$_$;

ALTER FUNCTION memsub._envelope_timestamp(p_value jsonb, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._envelope_timestamp(p_value jsonb, p_field text) IS 'Reads an optional ISO 8601 timestamp field (UTC when no zone is given); raises SQLSTATE 22007 naming the field.';

CREATE FUNCTION memsub._envelope_unit_number(p_value jsonb, p_field text) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._envelope_unit_number(p_value jsonb, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._envelope_unit_number(p_value jsonb, p_field text) IS 'Reads an optional number in [0, 1]; raises SQLSTATE 22023 naming the field otherwise.';

CREATE FUNCTION memsub._envelope_uuid(p_value jsonb, p_field text) RETURNS uuid
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

ALTER FUNCTION memsub._envelope_uuid(p_value jsonb, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._envelope_uuid(p_value jsonb, p_field text) IS 'Reads an optional UUID field of an envelope; raises SQLSTATE 22P02 naming the field when malformed.';

CREATE FUNCTION memsub._envelope_value(p_envelope jsonb, p_field text, p_type text) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._envelope_value(p_envelope jsonb, p_field text, p_type text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._envelope_value(p_envelope jsonb, p_field text, p_type text) IS 'Reads an optional field of an envelope of the JSON type p_type (object, string): NULL when absent or JSON null; raises SQLSTATE 22023 naming the field when it has another type.';

CREATE FUNCTION memsub._envelope_vectors_apart(p_envelope jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select case when jsonb_typeof(p_envelope -> 'memory' -> 'embeddings') = 'array' then
        jsonb_set(p_envelope, '{memory,embeddings}', (
            select coalesce(jsonb_agg(case when jsonb_typeof(x.e) = 'object' then jsonb_set(x.e, '{vector}', 'null')
                                           else x.e end order by x.o), '[]')
              from jsonb_array_elements(p_envelope -> 'memory' -> 'embeddings') with ordinality as x(e, o)))
        else p_envelope end
$$;

ALTER FUNCTION memsub._envelope_vectors_apart(p_envelope jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._envelope_vectors_apart(p_envelope jsonb) IS 'The envelope as packet_store keeps it: every memory.embeddings[].vector (stored in memory_embeddings.vector) replaced by JSON null, and written as JSON null where the element has none (its vector was given apart, in write_packet''s p_vectors).';

CREATE FUNCTION memsub._float_array_vector(p_value double precision[], p_field text) RETURNS public.vector
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._float_array_vector(p_value double precision[], p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._float_array_vector(p_value double precision[], p_field text) IS 'A vector given as double precision[], checked by memsub._check_vector; raises 22023 naming the field for an empty array, NULL, NaN or infinite elements, or elements beyond single precision. NULL for NULL.';

CREATE FUNCTION memsub._importance_step(p_importance double precision, p_accesses bigint, p_useful bigint, p_useless bigint, p_access_rate double precision, p_feedback_rate double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._importance_step(p_importance double precision, p_accesses bigint, p_useful bigint, p_useless bigint, p_access_rate double precision, p_feedback_rate double precision) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._importance_step(p_importance double precision, p_accesses bigint, p_useful bigint, p_useless bigint, p_access_rate double precision, p_feedback_rate double precision) IS 'One learning step of memsub.learn_importance: frequency, then useful feedback (both towards 1), then not-useful feedback (towards 0). Stays in [0, 1] for an input in [0, 1] and rates in [0, 1].';

CREATE FUNCTION memsub._insert_packets(p_packets memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
    v_inserted integer;
begin
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

ALTER FUNCTION memsub._insert_packets(p_packets memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._insert_packets(p_packets memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid) IS 'Internal: the one INSERT of packets into packet_store, for write_packet and both paths of write_packets; skips a packet whose id or content is stored already and returns how many it stored.';

CREATE PROCEDURE memsub._install_expiry_policy(IN p_table regclass, IN p_comment text)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    execute format('drop policy if exists not_expired on %s', p_table);
    execute format('create policy not_expired on %s as restrictive for select to public '
                   'using (ttl is null or ttl > (select pg_catalog.now() at time zone ''UTC'') '
                   'or (select current_user = ''memsub_expiry_owner''::name))', p_table);
    execute format('comment on policy not_expired on %s is %L', p_table, p_comment);
end
$$;

ALTER PROCEDURE memsub._install_expiry_policy(IN p_table regclass, IN p_comment text) OWNER TO memsub_owner;

COMMENT ON PROCEDURE memsub._install_expiry_policy(IN p_table regclass, IN p_comment text) IS 'Installs the not_expired policy on a table with a ttl column (a row is read only while ttl is NULL or in the future; memsub_expiry_owner, which purges, sees every row), with p_comment as its comment. Idempotent.';

CREATE FUNCTION memsub._json_query_vector(p_value jsonb, p_field text, p_caller text) RETURNS public.vector
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
begin
    -- No query, no check: the block that catches the cast's errors is a subtransaction, entered only for a value.
    if p_value is null then
        return null;
    end if;
    begin
        return (p_value #>> '{}')::vector;
    exception when others then
        raise exception '%: % must be an array of numbers', p_caller, p_field
            using errcode = '22023', column = p_field;
    end;
end
$$;

ALTER FUNCTION memsub._json_query_vector(p_value jsonb, p_field text, p_caller text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._json_query_vector(p_value jsonb, p_field text, p_caller text) IS 'A query vector of any dimension given as a JSON array of numbers (NULL for NULL), for searches that compare it only with stored vectors of its own dimension; raises 22023 naming the field, after the caller''s prefix, for anything that is not a vector.';

CREATE FUNCTION memsub._json_vector(p_value jsonb, p_field text) RETURNS public.vector
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_vector vector;
begin
    if p_value is null or jsonb_typeof(p_value) = 'null' then
        return null;
    end if;
    if jsonb_typeof(p_value) <> 'array' then
        raise exception 'field "%" must be a non-empty JSON array of numbers within single precision range', p_field
            using errcode = '22023', column = p_field;
    end if;
    -- A JSON array of numbers is written out as the text pgvector reads ([1, 2.5, ...]); the vector's own input
    -- refuses everything else: an empty array, an element that is not a number (a string, true, null, an array,
    -- an object), and a number beyond single precision. Its errors (class 22) become the one message naming the
    -- field. Letting the cast judge costs half of testing every element with a path query first.
    begin
        v_vector := (p_value::text)::vector;
    exception when data_exception then
        raise exception 'field "%" must be a non-empty JSON array of numbers within single precision range', p_field
            using errcode = '22023', column = p_field;
    end;
    return memsub._check_vector(v_vector, p_field);
end
$$;

ALTER FUNCTION memsub._json_vector(p_value jsonb, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._json_vector(p_value jsonb, p_field text) IS 'A vector given as a JSON array of numbers, checked by memsub._check_vector; raises 22023 naming the field for anything else (non-numbers, numbers beyond single precision, an empty array). NULL for JSON null.';

CREATE FUNCTION memsub._keyword_candidates(p_query_text text, p_embedding_type text DEFAULT 'content'::text, p_limit integer DEFAULT 50) RETURNS TABLE(embedding_id uuid, text_rank integer, text_score real)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_org     uuid := memsub.current_org_id();
    v_user    uuid := memsub.current_user_id();
    v_session text := memsub.current_session_id();
    v_query   tsquery;
begin
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(),
                                'embedding_type');
    perform memsub._check_count(p_limit, 'max_k', 'limit');
    -- The text is bounded before a tsquery is built from it, and the tsquery before it is matched.
    perform memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    v_query := websearch_to_tsquery('english'::regconfig, coalesce(p_query_text, ''));
    perform memsub._check_limit(numnode(v_query), 'max_query_nodes', 'query_text');
    if numnode(v_query) = 0 then
        return;  -- no searchable words (empty text or only stop words)
    end if;
    return query
        select e.embedding_id,
               (row_number() over (order by ts_rank_cd(e.search_tsv, v_query) desc, e.embedding_id))::integer,
               ts_rank_cd(e.search_tsv, v_query)
          from memsub.memory_embeddings e
         where e.tenant_id = v_tenant
           and e.chunk_text is not null  -- the GIN index holds only the rows with text (no other can match)
           and e.search_tsv @@ v_query
           and e.embedding_type = p_embedding_type
           and (e.ttl is null or e.ttl > (now() at time zone 'UTC'))  -- the not_expired policy
           -- The policies of memory_embeddings (org_isolation, user_visibility) for a regular member:
           and (e.org_id is null or e.org_id = v_org)
           and (e.scope = 'shared'
                or (e.scope = 'l-private' and e.user_id = v_user)
                or (e.scope = 'cursor' and (e.user_id = v_user or e.session_id = v_session)))
         order by 2
         limit p_limit;
end
$$;

ALTER FUNCTION memsub._keyword_candidates(p_query_text text, p_embedding_type text, p_limit integer) OWNER TO memsub_retrieval_owner;

COMMENT ON FUNCTION memsub._keyword_candidates(p_query_text text, p_embedding_type text, p_limit integer) IS 'Keyword leg of hybrid search: the caller''s embeddings of one type whose chunk_text matches the query (websearch syntax, english), best first by ts_rank_cd, as ids and ranks. Applies the tenant, org and scope predicates itself so the GIN index is usable (tsvector @@ is not LEAKPROOF under row-level security).';

CREATE FUNCTION memsub._langgraph_store_key_range(p_tenant uuid, p_labels text[], OUT low text, OUT high text) RETURNS record
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    -- The namespaces that begin with p_labels as a range of namespace_key, for an index condition: from their key
    -- to the key followed by '/', which sorts right after '.' in the C collation. The range may hold a few others
    -- (such as {a,b-c} for {a,b}), which the caller's exact test drops. No labels: every key of the tenant. Two
    -- values, so one cached plan serves every prefix.
    low := coalesce(memsub._langgraph_store_namespace_key(p_labels), '');
    if coalesce(cardinality(p_labels), 0) > 0 then
        high := low || '/';
    else
        select max(i.namespace_key) || ' ' into high from memsub.langgraph_store_items i where i.tenant_id = p_tenant;
    end if;
end
$$;

ALTER FUNCTION memsub._langgraph_store_key_range(p_tenant uuid, p_labels text[], OUT low text, OUT high text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._langgraph_store_key_range(p_tenant uuid, p_labels text[], OUT low text, OUT high text) IS 'Internal: the range of namespace_key (low inclusive, high exclusive) holding every namespace of the tenant that begins with p_labels (every namespace for none), and possibly a few others; the callers test the labels exactly.';

CREATE FUNCTION memsub._langgraph_store_labels_match(p_labels text[], p_pattern text[], p_at_end boolean) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select cardinality(p_labels) >= cardinality(p_pattern)
       and not exists (select from unnest(p_pattern) with ordinality as p(label, position)
                        where p.label <> '*'
                          and p.label is distinct from
                              p_labels[case when p_at_end then cardinality(p_labels) - cardinality(p_pattern) + p.position
                                            else p.position end])
$$;

ALTER FUNCTION memsub._langgraph_store_labels_match(p_labels text[], p_pattern text[], p_at_end boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._langgraph_store_labels_match(p_labels text[], p_pattern text[], p_at_end boolean) IS 'Internal: true when the namespace p_labels begins (p_at_end false) or ends (true) with p_pattern, where a label ''*'' matches any one label.';

CREATE FUNCTION memsub._langgraph_store_namespace_key(p_namespace text[]) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array_to_string(p_namespace, '.') $$;

ALTER FUNCTION memsub._langgraph_store_namespace_key(p_namespace text[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._langgraph_store_namespace_key(p_namespace text[]) IS 'Internal: a LangGraph store namespace as text, its labels joined by periods (namespace_key). A label holds no period (memsub.langgraph_store_check_namespace), so the text names one namespace.';

CREATE FUNCTION memsub._later_expiry(p_first timestamp without time zone, p_second timestamp without time zone) RETURNS timestamp without time zone
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select case when p_first is null or p_second is null then null else greatest(p_first, p_second) end $$;

ALTER FUNCTION memsub._later_expiry(p_first timestamp without time zone, p_second timestamp without time zone) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._later_expiry(p_first timestamp without time zone, p_second timestamp without time zone) IS 'The later of two expiry times, NULL (never expires) when either is NULL: the expiry of a fact or edge supported by two assertions.';

CREATE FUNCTION memsub._memory_namespace_writable(p_namespace text) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    -- Never NULL: a context without a user or session owns no user: or session: namespace (false, not unknown).
    select coalesce(case split_part(p_namespace, ':', 1)
                        when 'user' then split_part(p_namespace, ':', 2) = memsub.current_user_id()::text
                        when 'session' then split_part(p_namespace, ':', 2) = memsub.current_session_id()
                        else false
                    end, false)
        or memsub._caller_is_admin()
$$;

ALTER FUNCTION memsub._memory_namespace_writable(p_namespace text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._memory_namespace_writable(p_namespace text) IS 'True when the current context may write the namespace: its own user: and session: namespaces, or any namespace for tenant_admin/platform_admin contexts (app: and project: need one of them). Never NULL.';

CREATE FUNCTION memsub._memory_view_names() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select array['mv_agent_recent_important', 'mv_entity_graph', 'mv_high_confidence_facts', 'mv_reflection_patterns']
$$;

ALTER FUNCTION memsub._memory_view_names() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._memory_view_names() IS 'The memsub materialized views, in the order they are refreshed: what memsub._refresh_memory_view accepts and memsub.refresh_memory_views refreshes.';

CREATE FUNCTION memsub._memory_word_candidates(p_query tsquery, p_namespace_prefix text DEFAULT NULL::text, p_limit integer DEFAULT 50) RETURNS TABLE(id uuid, text_rank integer, text_score real)
    LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 50
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_user    text := memsub.current_user_id()::text;
    v_session text := memsub.current_session_id();
    v_admin   boolean := memsub._caller_is_admin();
begin
    perform memsub._check_count(p_limit, 'max_k', 'limit');
    perform memsub._check_limit(numnode(p_query), 'max_query_nodes', 'query');
    perform memsub._check_text_limits('namespace_prefix', p_namespace_prefix);
    if coalesce(numnode(p_query), 0) = 0 then
        return;  -- no searchable words (empty text or only stop words)
    end if;
    return query
        select m.id, (row_number() over (order by ts_rank_cd(m.search_tsv, p_query) desc, m.id))::integer,
               ts_rank_cd(m.search_tsv, p_query)
          from memsub.memory_entries m
         where m.tenant_id = v_tenant  -- the tenant_isolation policy
           and not m.is_deleted and m.search_tsv @@ p_query
           and (p_namespace_prefix is null or left(m.namespace, length(p_namespace_prefix)) = p_namespace_prefix)
           -- the namespace_visibility policy
           and (m.namespace_kind in ('app', 'project')
                or (m.namespace_kind = 'user' and m.namespace_owner = v_user)
                or (m.namespace_kind = 'session' and m.namespace_owner = v_session)
                or v_admin)
           -- of each key its latest version
           and not exists (select from memsub.memory_entries n
                            where n.tenant_id = m.tenant_id and n.namespace = m.namespace and n.key = m.key
                              and n.version > m.version)
         order by 2
         limit p_limit;
end
$$;

ALTER FUNCTION memsub._memory_word_candidates(p_query tsquery, p_namespace_prefix text, p_limit integer) OWNER TO memsub_retrieval_owner;

COMMENT ON FUNCTION memsub._memory_word_candidates(p_query tsquery, p_namespace_prefix text, p_limit integer) IS 'Text leg of memsub.memory_search: the latest live memory entries the caller may see whose words match the query (english configuration), optionally under a namespace prefix, best first by ts_rank_cd, as ids and ranks. Applies the tenant and namespace visibility predicates itself so the index of the words is usable (tsvector @@ is not LEAKPROOF under row-level security).';

CREATE FUNCTION memsub._merge_doc_refs(p_old jsonb, p_new jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select coalesce(jsonb_agg(distinct r), '[]')
      from jsonb_array_elements(coalesce(p_old, '[]') || coalesce(p_new, '[]')) as r
$$;

ALTER FUNCTION memsub._merge_doc_refs(p_old jsonb, p_new jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._merge_doc_refs(p_old jsonb, p_new jsonb) IS 'Union of two DocRef arrays, without duplicates.';

CREATE FUNCTION memsub._nearest_candidates(p_embedding_type text, p_pool integer, p_exact boolean, p_keep_plan boolean, p_query public.vector, p_thread_id uuid, p_tags text[], p_packet_type text, p_since timestamp with time zone, p_until timestamp with time zone, p_min_importance double precision, p_tenant_id uuid) RETURNS memsub.retrieval_candidate[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    SET "DateStyle" TO 'iso, ymd'
    SET extra_float_digits TO '1'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_sort TO 'on'
    AS $_$
declare
    tenant_filter  text := case when p_tenant_id is not null then ' and e.tenant_id = $8' else '' end;
    packet_filters text := '';
    statement      text;
    plan_name      text;
    seen           text := coalesce(pg_catalog.current_setting('memsub.search_plans_seen', true), '');
    prepared       text;
    held           text;  -- what the session holds under plan_name, if anything
    found          memsub.retrieval_candidate[];
begin
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(), 'embedding_type');
    if p_pool is null or p_pool not between 1 and 1000 then
        raise exception 'memsub._nearest_candidates: pool must be between 1 and 1000, not %',
                        coalesce(p_pool::text, 'NULL')
            using errcode = '22023', column = 'pool';
    end if;
    if p_exact is null or p_keep_plan is null then
        raise exception 'memsub._nearest_candidates: % must not be null',
                        case when p_exact is null then 'exact' else 'keep_plan' end
            using errcode = '22004', column = case when p_exact is null then 'exact' else 'keep_plan' end;
    end if;
    if p_thread_id is not null then packet_filters := packet_filters || ' and p.thread_id = $2'; end if;
    if p_tags is not null then packet_filters := packet_filters || ' and p.tags @> $3'; end if;
    if p_packet_type is not null then packet_filters := packet_filters || ' and p.packet_type = $4'; end if;
    if p_since is not null then packet_filters := packet_filters || ' and p."timestamp" >= $5'; end if;
    if p_until is not null then packet_filters := packet_filters || ' and p."timestamp" < $6'; end if;
    if p_min_importance is not null then packet_filters := packet_filters || ' and p.importance_score >= $7'; end if;

    -- The nearest pool rows, the packet joined inside only when a packet filter needs it; then the winners'
    -- packet. The exact scan sorts ids and distances only (the "+ 0" keeps its ordering off the HNSW index) and
    -- reads the winners' text after; the walk orders by the graph's own key (memsub._vector_graph_order: unit
    -- vectors in half precision), and the pool it returns is put in order of the full vectors' cosine distance
    -- by the aggregate. The walk takes their text with them (it sorts nothing, and a second read
    -- of memory_embeddings cost 0.45 ms of planning and 0.15 ms of execution a call). The text is put together
    -- from fixed fragments; every value is bound ($1 ... $8) except the embedding type (checked against the
    -- vocabulary above) and the pool, written in as constants (see the head of this file). Every read of
    -- memory_embeddings states the tenant, so a plan for the tenant's own values covers its partition only
    -- (planning all 16 partitions and their indexes took about 3 ms a call); a kept generic plan plans all 16
    -- once (6 to 27 ms, on its second run in the session) and opens only the tenant's when it starts.
    statement := format(
        'select array_agg(c order by c.distance) from ('
        '  select n.tenant_id, n.embedding_id, %s, n.distance,'
        '         p.importance_score, coalesce(p.last_accessed, p."timestamp") as last_active'
        '    from (select e.tenant_id, e.embedding_id, %s(e.vector <=> $1)::double precision as distance'
        '            from memsub.memory_embeddings e %s'
        '           where e.embedding_type = %L %s %s'
        '           order by %s'
        '           limit %s) n%s'
        '    join memsub.packet_store p on p.tenant_id = n.tenant_id and p.packet_id = %s) c',
        case when p_exact then 'e.packet_id, e.chunk_index, e.chunk_text'
             else 'n.packet_id, n.chunk_index, n.chunk_text' end,
        case when p_exact then '' else 'e.packet_id, e.chunk_index, e.chunk_text, ' end,
        case when packet_filters = '' then ''
             else 'join memsub.packet_store p on p.tenant_id = e.tenant_id and p.packet_id = e.packet_id' end,
        p_embedding_type, tenant_filter, packet_filters,
        case when p_exact then '(e.vector <=> $1) + 0, e.embedding_id'
             else memsub._vector_graph_order('e.vector', '$1') end,
        p_pool,
        case when p_exact then ' join memsub.memory_embeddings e on e.tenant_id = n.tenant_id'
                               ' and e.embedding_id = n.embedding_id' || tenant_filter end,
        case when p_exact then 'e.packet_id' else 'n.packet_id' end);
    if not p_exact then
        -- The walk's rows come in the HNSW index's order, and nothing else may order them: a generic plan,
        -- made for the average tenant (a few hundred rows), would sort that tenant's rows instead.
        perform pg_catalog.set_config('enable_sort', 'off', true);
    end if;
    plan_name := 'memsub_search_' || pg_catalog.md5(statement);
    if not p_keep_plan or pg_catalog.strpos(seen, plan_name) = 0 then
        execute statement into found
            using p_query, p_thread_id, p_tags, p_packet_type, p_since, p_until, p_min_importance, p_tenant_id;
        -- Planned for its own values the first time: a statement run once per session keeps nothing. Each kept
        -- plan covers every partition and its indexes in the session's memory, so a session notes (and later
        -- keeps) at most max_kept_search_plans kinds; a kind past them is planned on every call. Each name in
        -- the setting ends with a space.
        if p_keep_plan and pg_catalog.regexp_count(seen, ' ') < memsub.limit_value('max_kept_search_plans') then
            perform pg_catalog.set_config('memsub.search_plans_seen', seen || plan_name || ' ', false);
        end if;
        return found;
    end if;
    prepared := format('prepare %I(vector, uuid, text[], text, timestamptz, timestamptz, double precision, uuid) '
                       'as %s', plan_name, statement);
    -- Prepared statements belong to the session, and anyone who has used it (a client before this one on a
    -- pooled connection, or code of the login's own) may have prepared a statement of their own under this
    -- name; run with this call's context and role, it could read what they may not. The kept statement is
    -- therefore run only when the session holds it as memsub prepared it, word for word (names in it are
    -- resolved again under this function's search_path if the session's differed when it was prepared);
    -- anything else under the name is replaced. The statement is prepared again after DEALLOCATE or DISCARD.
    select s.statement into held from pg_catalog.pg_prepared_statements s where s.name = plan_name;
    if held is distinct from prepared then
        if held is not null then
            execute format('deallocate %I', plan_name);
        end if;
        execute prepared;
    end if;
    execute format('execute %I(%L, %L, %L, %L, %L, %L, %L, %L)', plan_name, p_query, p_thread_id, p_tags,
                   p_packet_type, p_since, p_until, p_min_importance, p_tenant_id) into found;
    return found;
end
$_$;

ALTER FUNCTION memsub._nearest_candidates(p_embedding_type text, p_pool integer, p_exact boolean, p_keep_plan boolean, p_query public.vector, p_thread_id uuid, p_tags text[], p_packet_type text, p_since timestamp with time zone, p_until timestamp with time zone, p_min_importance double precision, p_tenant_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._nearest_candidates(p_embedding_type text, p_pool integer, p_exact boolean, p_keep_plan boolean, p_query public.vector, p_thread_id uuid, p_tags text[], p_packet_type text, p_since timestamp with time zone, p_until timestamp with time zone, p_min_importance double precision, p_tenant_id uuid) IS 'Internal to memsub.semantic_search: the pool nearest visible embeddings of one type to p_query, by the exact scan (p_exact) or the HNSW walk (planned with sorts disabled, so its rows come in the index''s order), with the packet filters given (thread, tags, packet type, [since, until), min importance) and the tenant when given. With p_keep_plan, the second and later runs of the same statement in a session use one generic plan kept as the prepared statement memsub_search_<md5 of its text> (run only when the session holds it as prepared here, word for word: anything else under the name is replaced); otherwise, and on the first run, the statement is planned for its values. A session keeps at most the limit max_kept_search_plans of them; a statement past it is planned for its values on every call. 22023 for an unknown embedding type or a pool outside 1-1000, 22004 for a NULL exact or keep_plan.';

CREATE FUNCTION memsub._normalize_json_value(p_value jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select case when jsonb_typeof(p_value) = 'string' then memsub.normalize_text(p_value #>> '{}')
                else p_value::text end
$$;

ALTER FUNCTION memsub._normalize_json_value(p_value jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._normalize_json_value(p_value jsonb) IS 'Matching form of a JSON value: strings as memsub.normalize_text, any other value as its canonical JSON text.';

CREATE FUNCTION memsub._optional_text(p_value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select case when p_value ~ '\S' then memsub._require_text(p_value, 'value') end $$;

ALTER FUNCTION memsub._optional_text(p_value text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._optional_text(p_value text) IS 'An optional text field in the form memsub._require_text stores (trimmed, each run of whitespace one space); NULL for NULL or blank (only whitespace of any kind), which counts as absent.';

CREATE FUNCTION memsub._packet_deduplicated(p_tenant uuid, p_org uuid, p_user uuid, p_packet memsub.packet_fields) RETURNS memsub.packet_write_result
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
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
$_$;

ALTER FUNCTION memsub._packet_deduplicated(p_tenant uuid, p_org uuid, p_user uuid, p_packet memsub.packet_fields) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._packet_deduplicated(p_tenant uuid, p_org uuid, p_user uuid, p_packet memsub.packet_fields) IS 'Internal: the result of a write that stored nothing because the packet exists: the stored packet, flagged deduplicated, when it is the same packet (a retry); SQLSTATE 23505 when the id names other content or the existing packet is invisible to the writer.';

CREATE FUNCTION memsub._packet_embeddings_check(p_packet memsub.packet_fields) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._packet_embeddings_check(p_packet memsub.packet_fields) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._packet_embeddings_check(p_packet memsub.packet_fields) IS 'Internal, for an envelope with a memory field: each memory.embeddings slot (embedding_type, chunk_index) at most once, since the stored envelope keeps each vector only in its slot, and nothing fanned out of a packet that has expired already; raises SQLSTATE 22023 naming the field.';

CREATE FUNCTION memsub._packet_from_envelope(p_envelope jsonb, p_position integer, p_user uuid) RETURNS memsub.packet_fields
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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
    if f.packet_type !~ '\S' or length(f.packet_type) > 200 then
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

ALTER FUNCTION memsub._packet_from_envelope(p_envelope jsonb, p_position integer, p_user uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._packet_from_envelope(p_envelope jsonb, p_position integer, p_user uuid) IS 'Internal: reads, validates and normalizes every field of one envelope (p_user: the writer, for the scope check), in one place; raises naming the field (docs/errors.md). Lineage generation and root and the content hash are left to the write.';

CREATE FUNCTION memsub._packet_id_by_content_hash(p_content_hash text) RETURNS uuid
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._packet_id_by_content_hash(p_content_hash text) OWNER TO memsub_retrieval_owner;

COMMENT ON FUNCTION memsub._packet_id_by_content_hash(p_content_hash text) IS 'Internal to write_packet(s): the id of the context tenant''s packet with this content hash, found by the deduplication key (owned by memsub_retrieval_owner, BYPASSRLS; the row itself is then read through row-level security). Executable only by memsub_owner.';

CREATE FUNCTION memsub._packet_lineage(p_tenant uuid, p_packet memsub.packet_fields, OUT generation integer, OUT root_packet_id uuid) RETURNS record
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
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
    if p_packet.lineage ? 'generation' and (p_packet.lineage -> 'generation') is distinct from to_jsonb(generation) then
        raise exception 'envelope field "lineage.generation" is % but the parents give %', p_packet.lineage -> 'generation', generation
            using errcode = '22023', column = 'lineage.generation';
    end if;
    if p_packet.lineage ? 'root_packet_id'
       and memsub._envelope_uuid(p_packet.lineage -> 'root_packet_id', 'lineage.root_packet_id')
           is distinct from root_packet_id then
        raise exception 'envelope field "lineage.root_packet_id" is % but the parents give %', p_packet.lineage ->> 'root_packet_id', root_packet_id
            using errcode = '22023', column = 'lineage.root_packet_id';
    end if;
end
$_$;

ALTER FUNCTION memsub._packet_lineage(p_tenant uuid, p_packet memsub.packet_fields, OUT generation integer, OUT root_packet_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._packet_lineage(p_tenant uuid, p_packet memsub.packet_fields, OUT generation integer, OUT root_packet_id uuid) IS 'Internal: the lineage generation and root of a packet from its stored, visible parents; raises on a self reference (23514), a missing or invisible parent (23503) or a stated generation or root that disagrees (22023).';

CREATE FUNCTION memsub._packet_thread_check(p_tenant uuid, p_org uuid, p_thread_id uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._packet_thread_check(p_tenant uuid, p_org uuid, p_thread_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._packet_thread_check(p_tenant uuid, p_org uuid, p_thread_id uuid) IS 'Internal: whether the thread is registered already; raises SQLSTATE 23514 when it belongs to another organization (a thread belongs to the organization of its first packet).';

CREATE FUNCTION memsub._packet_thread_register(p_tenant uuid, p_org uuid, p_packet memsub.packet_fields) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._packet_thread_register(p_tenant uuid, p_org uuid, p_packet memsub.packet_fields) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._packet_thread_register(p_tenant uuid, p_org uuid, p_packet memsub.packet_fields) IS 'Internal: registers a new thread with its first packet ({"packet_threads": 1}), or re-checks the organization of a thread another writer registered meanwhile ({}).';

CREATE FUNCTION memsub._packet_vectors_check(p_packet memsub.packet_fields, p_vectors public.vector[]) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub._packet_vectors_check(p_packet memsub.packet_fields, p_vectors public.vector[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._packet_vectors_check(p_packet memsub.packet_fields, p_vectors public.vector[]) IS 'Internal, for write_packet''s p_vectors: one vector per memory.embeddings element of the envelope (a one-dimensional array); raises SQLSTATE 22023 naming the field "vectors" otherwise. Each vector is checked where it is stored (memsub.fan_out_packet).';

CREATE FUNCTION memsub._reader_tenants(p_packet_ids uuid[]) RETURNS uuid[]
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub.current_tenant_id();
begin
    -- The key is (tenant_id, packet_id): with the context tenant each id is one index search; by packet_id alone
    -- it would be a skip scan over every tenant. A platform_admin (or a call without a tenant) may see every
    -- tenant: the tenants holding these ids are found first (by packet_id alone). Row-level security decides
    -- what is visible either way.
    -- A context that asks for no role (the roles setting empty: memsub.current_context_roles() is '{}') is no
    -- platform admin's: is_platform_admin (a SQL function with its own settings, a tenth of a get's server time,
    -- called twice by a read with vectors) is asked only when the context asks for some role.
    if v_tenant is not null
       and (coalesce(pg_catalog.current_setting('memsub.roles', true), '') = '' or not memsub.is_platform_admin()) then
        return array[v_tenant];
    end if;
    return array(select distinct k.tenant_id from memsub.packet_store k where k.packet_id = any(p_packet_ids));
end
$$;

ALTER FUNCTION memsub._reader_tenants(p_packet_ids uuid[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._reader_tenants(p_packet_ids uuid[]) IS 'The tenants whose rows a read of these packet ids looks at: the context tenant for an ordinary login, the tenants holding the ids for a platform_admin or a call without a tenant. Stated as a value (= any), it selects the key to search in packet_store and the partitions of memory_embeddings to read.';

CREATE FUNCTION memsub._recall_lower_bound(p_recalls double precision[]) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    -- mean - 1.645 * s / sqrt(n) (the normal approximation of the mean of n per-query recalls, s their sample
    -- standard deviation), within [0, 1]. One query says nothing of the spread: it is taken at the widest a
    -- share can have (0.5). NULL for no queries.
    select case when count(r) = 0 then null
                else greatest(0, least(1, avg(r) - 1.645 * coalesce(stddev_samp(r), 0.5) / sqrt(count(r)))) end
      from unnest(p_recalls) r
$$;

ALTER FUNCTION memsub._recall_lower_bound(p_recalls double precision[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._recall_lower_bound(p_recalls double precision[]) IS 'Internal to memsub.tune_search: the one-sided 95 % lower confidence bound of the mean of per-query recalls (mean - 1.645 * sample standard deviation / sqrt(n), within [0, 1]; one query counts with the widest spread, 0.5; NULL for none). NULL values are left out.';

CREATE FUNCTION memsub._record_accesses(p_target_type text, p_target_ids uuid[], p_scores double precision[], p_query_text text DEFAULT NULL::text, p_access_context text DEFAULT NULL::text, p_agent_id text DEFAULT NULL::text) RETURNS TABLE(target_id uuid, access_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('target_type', p_target_type, 'access_context', p_access_context,
                                      'agent_id', p_agent_id),
            memsub._check_limit(cardinality(p_target_ids), 'max_k', 'target_ids'),
            memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    perform memsub._check_one_of(p_target_type, memsub.access_target_types(), 'target_type');
    if cardinality(p_scores) is distinct from cardinality(p_target_ids) then
        raise exception 'field "scores" must have one score per target id' using errcode = '22023', column = 'scores';
    end if;
    perform memsub._check_finite(s.score, format('scores[%s]', s.n - 1))
       from unnest(p_scores) with ordinality as s(score, n);
    -- Counters live off the vector rows: an embedding access counts on its packet (see 220_access_log.sql).
    if p_target_type in ('packet', 'embedding') then
        update memsub.packet_store s set access_count = s.access_count + n.hits, last_accessed = now()
          from (select coalesce(e.packet_id, t.id) as packet_id, count(*)::integer as hits
                  from unnest(p_target_ids) as t(id)
                  left join memsub.memory_embeddings e
                         on p_target_type = 'embedding' and e.tenant_id = v_tenant and e.embedding_id = t.id
                 group by 1) n
         where s.tenant_id = v_tenant and s.packet_id = n.packet_id;
    elsif p_target_type = 'fact' then
        update memsub.knowledge_facts f set access_count = f.access_count + 1, last_accessed = now()
         where f.tenant_id = v_tenant and f.fact_id = any(p_target_ids);
    else
        update memsub.reflection_store r set access_count = r.access_count + 1, last_accessed = now()
         where r.tenant_id = v_tenant and r.reflection_id = any(p_target_ids);
    end if;
    return query
        insert into memsub.memory_access_log as l (
            target_type, target_id, agent_id, access_context, query_text, relevance_score,
            tenant_id, org_id, user_id, session_id)
        select p_target_type, t.id, (select memsub._optional_text(p_agent_id)), p_access_context,
               p_query_text, t.score,
               v_tenant, (select memsub.current_org_id()), (select memsub.current_user_id()),
               (select memsub.current_session_id())
          from unnest(p_target_ids, p_scores) as t(id, score)
         where case p_target_type
                   when 'packet' then exists (select from memsub.packet_store s
                                               where s.tenant_id = v_tenant and s.packet_id = t.id)
                   when 'embedding' then exists (select from memsub.memory_embeddings e
                                                  where e.tenant_id = v_tenant and e.embedding_id = t.id)
                   when 'fact' then exists (select from memsub.knowledge_facts f
                                             where f.tenant_id = v_tenant and f.fact_id = t.id)
                   else exists (select from memsub.reflection_store r
                                 where r.tenant_id = v_tenant and r.reflection_id = t.id)
               end
        returning l.target_id, l.access_id;
end
$$;

ALTER FUNCTION memsub._record_accesses(p_target_type text, p_target_ids uuid[], p_scores double precision[], p_query_text text, p_access_context text, p_agent_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._record_accesses(p_target_type text, p_target_ids uuid[], p_scores double precision[], p_query_text text, p_access_context text, p_agent_id text) IS 'Logs one access per visible target id (with its relevance score) in one statement and counts them on the targets; ids the caller cannot see are skipped. used by the retrieval functions when asked to record. Returns the access id of each target.';

CREATE FUNCTION memsub.view_refresh_methods() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['concurrently', 'full', 'none']::text[] $$;

ALTER FUNCTION memsub.view_refresh_methods() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.view_refresh_methods() IS 'How a materialized view was refreshed (memory_view_refresh_log.method): concurrently once it is populated, full for its first population, or none when the refresh was skipped.';

CREATE FUNCTION memsub.view_refresh_statuses() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['ok', 'error', 'skipped']::text[] $$;

ALTER FUNCTION memsub.view_refresh_statuses() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.view_refresh_statuses() IS 'How the refresh of a materialized view ended (memory_view_refresh_log.status): ok, error, or skipped because another refresh of the view held its lock.';

CREATE TABLE memsub.memory_view_refresh_log (
    refresh_id uuid DEFAULT gen_random_uuid() NOT NULL,
    run_id uuid NOT NULL,
    view_name text NOT NULL,
    method text NOT NULL,
    status text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    duration_ms double precision NOT NULL,
    row_count bigint,
    error text,
    refreshed_by text DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT memory_view_refresh_log_method_known CHECK ((method = ANY (memsub.view_refresh_methods()))),
    CONSTRAINT memory_view_refresh_log_status_known CHECK ((status = ANY (memsub.view_refresh_statuses())))
);

ALTER TABLE memsub.memory_view_refresh_log OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_view_refresh_log IS 'What memsub.refresh_memory_views() did: one row per view per run (installation-wide, not tenant data).';

COMMENT ON COLUMN memsub.memory_view_refresh_log.refresh_id IS 'Row identifier.';

COMMENT ON COLUMN memsub.memory_view_refresh_log.run_id IS 'One refresh_memory_views() call.';

COMMENT ON COLUMN memsub.memory_view_refresh_log.view_name IS 'Materialized view refreshed (or "*" for a skipped run).';

COMMENT ON COLUMN memsub.memory_view_refresh_log.method IS 'One of memsub.view_refresh_methods(): concurrently (populated view), full (first population) or none (skipped).';

COMMENT ON COLUMN memsub.memory_view_refresh_log.status IS 'One of memsub.view_refresh_statuses(): ok, error, or skipped (another refresh held the lock).';

COMMENT ON COLUMN memsub.memory_view_refresh_log.started_at IS 'Start of the refresh.';

COMMENT ON COLUMN memsub.memory_view_refresh_log.finished_at IS 'End of the refresh.';

COMMENT ON COLUMN memsub.memory_view_refresh_log.duration_ms IS 'How long it took, in milliseconds.';

COMMENT ON COLUMN memsub.memory_view_refresh_log.row_count IS 'Rows in the view after the refresh.';

COMMENT ON COLUMN memsub.memory_view_refresh_log.error IS 'Error message when status is error.';

COMMENT ON COLUMN memsub.memory_view_refresh_log.refreshed_by IS 'Session role that ran the refresh.';

CREATE FUNCTION memsub._refresh_memory_view(p_view text, p_run_id uuid DEFAULT NULL::uuid) RETURNS memsub.memory_view_refresh_log
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    SET lock_timeout TO '1min'
    AS $$
declare
    v_started   timestamptz := clock_timestamp();
    v_populated boolean;
    v_method    text;
    v_status    text := 'ok';
    v_rows      bigint;
    v_error     text;
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
    -- memsub's roles can take; a view another transaction is refreshing is logged as skipped, naming it.
    if not memsub.take_maintenance_lock('refresh_memory_view', p_view, false) then
        v_status := 'skipped';
        v_method := 'none';
        v_error := format('another refresh of memsub.%s is running: %s', p_view,
                          coalesce(memsub.maintenance_lock_holder('refresh_memory_view', p_view), 'holder unknown'));
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

ALTER FUNCTION memsub._refresh_memory_view(p_view text, p_run_id uuid) OWNER TO memsub_view_owner;

COMMENT ON FUNCTION memsub._refresh_memory_view(p_view text, p_run_id uuid) IS 'Refreshes one memsub materialized view (CONCURRENTLY once populated) and logs method, duration, rows and any error in memory_view_refresh_log. A view another transaction is refreshing is logged as skipped (method none), with the holder in error. Lock waits are bounded (lock_timeout 1 min). Runs as memsub_view_owner, the views'' owner.';

CREATE FUNCTION memsub._require_key_admin(p_tenant_id uuid) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    if memsub.is_platform_admin() then
        return;
    end if;
    if not memsub.is_tenant_admin() then
        raise exception 'memsub: managing API keys needs a tenant_admin or platform_admin context'
            using errcode = '42501', column = 'roles';
    end if;
    if p_tenant_id is not null and p_tenant_id is distinct from memsub.current_tenant_id() then
        raise exception 'memsub: a tenant_admin context manages the API keys of its own tenant only'
            using errcode = '42501', column = 'tenant_id';
    end if;
end
$$;

ALTER FUNCTION memsub._require_key_admin(p_tenant_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._require_key_admin(p_tenant_id uuid) IS 'Refuses (42501) a context that may not manage the API keys of a tenant: platform_admin contexts manage every tenant''s, tenant_admin contexts their own tenant''s (NULL: the context tenant).';

CREATE FUNCTION memsub._require_tenant_id() RETURNS uuid
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub.current_tenant_id();
begin
    if tenant is null then
        raise exception 'memsub: no tenant context; call memsub.set_context(tenant_id, ...) in this transaction first'
            using errcode = '42501', column = 'tenant_id';
    end if;
    return tenant;
end
$$;

ALTER FUNCTION memsub._require_tenant_id() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._require_tenant_id() IS 'Returns the context tenant; raises SQLSTATE 42501 when no tenant context is set (writes never get a NULL tenant).';

CREATE FUNCTION memsub._require_text(p_value text, p_field text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_value is null then
        raise exception 'field "%" is required', p_field using errcode = '23502', column = p_field;
    end if;
    -- Blank: nothing but whitespace of any kind (spaces, tabs, line breaks).
    if p_value !~ '\S' then
        raise exception 'field "%" must not be blank', p_field using errcode = '22023', column = p_field;
    end if;
    -- Each run of whitespace becomes one space, then the spaces at either end go.
    return btrim(regexp_replace(p_value, '\s+', ' ', 'g'));
end
$$;

ALTER FUNCTION memsub._require_text(p_value text, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._require_text(p_value text, p_field text) IS 'A required text field, trimmed with each run of whitespace made one space; NULL raises 23502 and blank (only whitespace of any kind) 22023, naming the field.';

CREATE FUNCTION memsub._resolve_entities(p_names text[]) RETURNS TABLE(name text, entity text, keys text[])
    LANGUAGE plpgsql STABLE SECURITY DEFINER PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
    v_tenant uuid := memsub.current_tenant_id();
begin
    -- Each name once: the Entity node named so (the expression index) or, failing that, the one with the name
    -- among its aliases (the GIN index), the first by entity_id; the second search runs only when the first finds
    -- nothing. One call for a whole level of a walk, not one per edge. The matching forms are written out, not
    -- memsub.normalize_text calls (never inlined: it sets its search_path), a frame per name and key otherwise: the
    -- name's as normalize_text's body, the stored names' as idx_world_model_entities_key's expression, which the
    -- index search must repeat and which equals normalize_text for a name stored trimmed (_require_text).
    return query
        select n.name, coalesce(w.entity_id, btrim(n.name)), coalesce(w.keys, array[n.key])
          from (select distinct u.name, lower(btrim(regexp_replace(u.name, '\s+', ' ', 'g'))) as key
                  from unnest(p_names) as u(name)
                 where u.name is not null) n
          left join lateral (
              select x.entity_id, array[lower(regexp_replace(btrim(x.entity_id), '\s+', ' ', 'g'))] || x.alias_keys
                     as keys
                from ((select e.entity_id, e.alias_keys, 1 as pass from memsub.world_model_entities e
                        where e.tenant_id = v_tenant
                          and lower(regexp_replace(btrim(e.entity_id), '\s+', ' ', 'g')) = n.key
                        order by e.entity_id limit 1)
                      union all
                      (select e.entity_id, e.alias_keys, 2 from memsub.world_model_entities e
                        where e.tenant_id = v_tenant and e.alias_keys @> array[n.key]
                        order by e.entity_id limit 1)) x
               order by x.pass limit 1) w on true;
end
$$;

ALTER FUNCTION memsub._resolve_entities(p_names text[]) OWNER TO memsub_retrieval_owner;

COMMENT ON FUNCTION memsub._resolve_entities(p_names text[]) IS 'The graph entity each name stands for, each name once (NULL names left out): the Entity node of the context tenant whose name or one of whose aliases matches it (memsub.normalize_text), the node named so first, otherwise the name itself, trimmed; and keys, the matching forms under which edges name that entity (its name and aliases, or the name alone). Edge lookups compare source_key / target_key to them.';

CREATE FUNCTION memsub._resolve_entity(p_name text) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_entity text;
begin
    select r.entity into v_entity from memsub._resolve_entities(array[p_name]) r;
    return coalesce(v_entity, btrim(p_name));
end
$$;

ALTER FUNCTION memsub._resolve_entity(p_name text) OWNER TO memsub_retrieval_owner;

COMMENT ON FUNCTION memsub._resolve_entity(p_name text) IS 'The graph entity a name stands for (memsub._resolve_entities of one name): the Entity node of the context tenant whose name or one of whose aliases matches it (memsub.normalize_text), the node named so first; otherwise the name itself, trimmed.';

CREATE FUNCTION memsub._sample_query(p_row public.vector, p_distance double precision) RETURNS public.vector
    LANGUAGE plpgsql PARALLEL RESTRICTED
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_row   real[];
    v_noise double precision[];
    v_along double precision;
    v_length double precision;
    v_angle double precision;
begin
    if p_row is null then
        raise exception 'memsub._sample_query: row must not be null' using errcode = '22004', column = 'row';
    end if;
    -- NaN sorts above every number, so it is not between 0 and 2 either.
    if p_distance is null or p_distance not between 0 and 2 then
        raise exception 'memsub._sample_query: distance must be between 0 and 2, not %', coalesce(p_distance::text, 'NULL')
            using errcode = '22023', column = 'distance';
    end if;
    perform memsub._check_vector(p_row, 'row');
    v_row := l2_normalize(p_row)::real[];
    -- A random direction (normally distributed coordinates) less its part along the row: a unit vector at right
    -- angles to it. The query lies on the great circle through both, at the angle whose cosine distance from the
    -- row is p_distance. (A straight step of sqrt(2 d), then normalized, holds only for small d: for the 0.8 of
    -- uniform random directions it landed at 0.39.)
    v_noise := array(select sqrt(-2 * ln(1 - pg_catalog.random())) * cos(2 * pi() * pg_catalog.random())
                       from unnest(v_row));
    v_along := (select sum(n * r) from unnest(v_noise, v_row) u(n, r));
    v_noise := array(select n - v_along * r from unnest(v_noise, v_row) u(n, r));
    v_length := sqrt((select sum(n * n) from unnest(v_noise) n));
    if v_length = 0 then
        return v_row::vector;  -- one dimension: no direction at right angles to the row
    end if;
    v_noise := array(select n / v_length from unnest(v_noise) n);
    v_angle := acos(1 - p_distance);
    return l2_normalize(array(select cos(v_angle) * r + sin(v_angle) * n
                                from unnest(v_row, v_noise) u(r, n))::vector);
end
$$;

ALTER FUNCTION memsub._sample_query(p_row public.vector, p_distance double precision) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._sample_query(p_row public.vector, p_distance double precision) IS 'Internal to memsub.tune_search: a unit vector at cosine distance p_distance (0 to 2) from p_row, in a random direction (on the great circle through p_row and a random vector at right angles to it; a row of one dimension gives its own direction). 22004 for a NULL row; 22023 for a distance outside 0-2 or a row memsub._check_vector refuses (another dimension than the installation''s, no usable norm).';

CREATE FUNCTION memsub._search_strategy(p_tenant_id uuid, p_embedding_type text, p_pool integer, p_mode text DEFAULT 'auto'::text, p_ef_search integer DEFAULT NULL::integer) RETURNS TABLE(method text, ef_search integer, tenant_rows bigint, type_rows bigint, share double precision, recall double precision)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
    v_stats  memsub.search_stats;
    v_total  double precision;
    v_rows   bigint;
    v_share  double precision;
    v_ef     integer;
    v_recall double precision;
    v_bound  double precision;
    v_probed boolean := false;
begin
    -- Rows of the type in the graph the walk would read: the HNSW index of the tenant's partition of
    -- memory_embeddings (every partition's, for a search of every tenant), by the index's own estimate (kept by
    -- vacuum and analyze). The tenant's partition is found once (a sub-select): in the condition of the scan it
    -- was found again for each of the 16 numbers.
    select sum(greatest(c.reltuples, 0)) into v_total
      from pg_catalog.pg_class c
     where c.oid in (select pg_catalog.to_regclass(format('memsub.idx_embeddings_vector_%s_p%s', p_embedding_type,
                                                           pg_catalog.lpad(n::text, 2, '0')))
                       from generate_series(0, 15) n
                      where p_tenant_id is null or n = (select memsub._embedding_partition(p_tenant_id)));
    if p_tenant_id is null then
        v_rows := coalesce(v_total, 0)::bigint;
    else
        select * into v_stats from memsub.search_stats st
         where st.tenant_id = p_tenant_id and st.embedding_type = p_embedding_type;
        if found then
            v_rows := v_stats.row_count;
            v_total := greatest(coalesce(v_total, 0), v_stats.type_rows);
        else
            -- Not measured yet: count at most 2000 of the tenant's rows, from the index when it is the context
            -- tenant (memsub._context_tenant_rows). Another tenant is counted as far as the caller may read it:
            -- a static statement with one plan for every call (plan_cache_mode above), which opens the tenant's
            -- partition only when it starts (planned for each call's values, an EXECUTE took 0.3 ms to plan a
            -- count of 0.01 ms).
            if p_tenant_id = memsub.current_tenant_id() then
                v_rows := memsub._context_tenant_rows(p_embedding_type, 2000);
            else
                select count(*) into v_rows
                  from (select from memsub.memory_embeddings e
                         where e.tenant_id = p_tenant_id and e.embedding_type = p_embedding_type limit 2000) s;
            end if;
            v_probed := v_rows >= 2000;
        end if;
    end if;
    v_total := greatest(coalesce(v_total, 0), v_rows, 1);
    v_share := greatest(v_rows, 1) / v_total;
    v_ef := coalesce(p_ef_search, memsub._walk_ef_search(p_pool, v_share));
    -- The ef_search at which tune_search measured the recall goal (the lower bound of the sampled recall at
    -- 0.95 or more), when it is larger than the derived one (an ef the caller passes is kept as it is).
    if p_ef_search is null and v_stats.recall_bound >= 0.95 and v_stats.ef_search > v_ef then
        v_ef := v_stats.ef_search;
    end if;
    v_ef := greatest(v_ef, least(p_pool, 1000));
    -- Recall grows with ef_search: a recall that reached the goal holds at any larger ef, one that missed it
    -- at any smaller ef. Otherwise the recall at this ef is not known.
    if v_stats.recall_bound >= 0.95 and v_stats.ef_search <= v_ef
       or v_stats.recall_bound < 0.95 and v_stats.ef_search >= v_ef then
        v_recall := v_stats.recall;
        v_bound := v_stats.recall_bound;
    end if;
    method := case
        when p_mode = 'exact' then 'exact'
        when p_mode = 'approximate' then 'approximate'
        when v_probed then 'approximate'
        when v_bound is not null and v_bound < 0.95 then 'exact'
        when v_rows <= 2.5 * v_ef / v_share + 10 * v_ef then 'exact'
        else 'approximate' end;
    ef_search := v_ef;
    tenant_rows := v_rows;
    type_rows := v_total::bigint;
    share := v_share;
    recall := v_recall;
    return next;
end
$$;

ALTER FUNCTION memsub._search_strategy(p_tenant_id uuid, p_embedding_type text, p_pool integer, p_mode text, p_ef_search integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._search_strategy(p_tenant_id uuid, p_embedding_type text, p_pool integer, p_mode text, p_ef_search integer) IS 'How memsub.semantic_search searches a tenant''s embeddings of one type for pool rows: method exact or approximate, the hnsw.ef_search of the walk (derived from the share and pool, or the larger one at which memsub.tune_search measured the recall goal), and the figures behind the choice (rows, share of the index, the measured recall where it holds at this ef_search). See the head of sql/310_semantic_search.sql.';

CREATE FUNCTION memsub._seed_tenant_statistics() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_seeded integer;
begin
    if pg_catalog.to_regprocedure('pg_catalog.pg_restore_attribute_stats("any")') is null then
        raise notice 'memsub: PostgreSQL % has no pg_restore_attribute_stats; tables keep the planner''s default '
                     'estimate for tenant_id until they are first analyzed', pg_catalog.current_setting('server_version');
        return 0;
    end if;
    select count(pg_catalog.pg_restore_attribute_stats(
               'schemaname', n.nspname::text, 'relname', c.relname::text, 'attname', 'tenant_id'::text,
               'inherited', false, 'null_frac', 0::real, 'avg_width', 16, 'n_distinct', 1::real))
      into v_seeded
      from pg_catalog.pg_class c
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped
     where n.nspname = 'memsub'
       and c.relkind = 'r'  -- tables and the partitions of partitioned ones: what the planner scans
       and c.reltuples < 0  -- never analyzed nor vacuumed
       and not exists (select from pg_catalog.pg_stats s  -- pg_statistic itself is the superuser's only
                        where s.schemaname = n.nspname and s.tablename = c.relname
                          and s.attname = 'tenant_id' and not s.inherited);
    return v_seeded;
end
$$;

ALTER FUNCTION memsub._seed_tenant_statistics() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._seed_tenant_statistics() IS 'Internal: gives every memsub table (and partition) that was never analyzed and has no statistics for tenant_id the planner prior "one distinct tenant_id", so that plans made before its first ANALYZE find rows by their whole key; returns how many tables it seeded. ANALYZE replaces the prior. Needs PostgreSQL 18 (pg_restore_attribute_stats); on an earlier server it writes nothing and raises a NOTICE. Run by the migrator with sql/; not granted to clients.';

CREATE FUNCTION memsub.session_statuses() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['active', 'terminated']::text[] $$;

ALTER FUNCTION memsub.session_statuses() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.session_statuses() IS 'The states of a session (sessions.status): active until memsub.session_terminate makes it terminated, which sets terminated_at.';

CREATE TABLE memsub.sessions (
    tenant_id uuid NOT NULL,
    id text DEFAULT (gen_random_uuid())::text NOT NULL,
    org_id uuid,
    user_id uuid,
    project_id text,
    app_name text,
    status text DEFAULT 'active'::text NOT NULL,
    state jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    terminated_at timestamp with time zone,
    event_count integer DEFAULT 0 NOT NULL,
    CONSTRAINT sessions_app_name_format CHECK (((app_name ~ '^[A-Za-z0-9_.-]+$'::text) AND (length(app_name) <= 128))),
    CONSTRAINT sessions_event_count_not_negative CHECK ((event_count >= 0)),
    CONSTRAINT sessions_id_format CHECK (((id ~ '^[A-Za-z0-9_.-]+$'::text) AND (length(id) <= 128))),
    CONSTRAINT sessions_project_id_format CHECK (((project_id ~ '^[A-Za-z0-9_.-]+$'::text) AND (length(project_id) <= 128))),
    CONSTRAINT sessions_state_is_object CHECK ((jsonb_typeof(state) = 'object'::text)),
    CONSTRAINT sessions_status_check CHECK ((status = ANY (memsub.session_statuses()))),
    CONSTRAINT sessions_terminated_consistent CHECK (((status = 'terminated'::text) = (terminated_at IS NOT NULL)))
);

ALTER TABLE ONLY memsub.sessions FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.sessions OWNER TO memsub_owner;

COMMENT ON TABLE memsub.sessions IS 'Agent sessions (seed 001): the event history and the short-term state (temp:, session: and pending user: keys). Written only through memsub.session_* functions.';

COMMENT ON COLUMN memsub.sessions.tenant_id IS 'Tenant owning the session.';

COMMENT ON COLUMN memsub.sessions.id IS 'Session identifier (letters, digits, _ . -; no colon, since it appears in session:<id>: namespaces). Matches the context session of memsub.set_context.';

COMMENT ON COLUMN memsub.sessions.org_id IS 'Organization of the session (NULL: tenant-wide).';

COMMENT ON COLUMN memsub.sessions.user_id IS 'User the session belongs to; its user:<user_id>: namespace is readable and writable by the session.';

COMMENT ON COLUMN memsub.sessions.project_id IS 'Project the session works on; its project:<project_id>: namespace is read by memsub.memory_context.';

COMMENT ON COLUMN memsub.sessions.app_name IS 'Application the session runs in; its app:<app_name>: namespace is read by memsub.memory_context.';

COMMENT ON COLUMN memsub.sessions.status IS 'One of memsub.session_statuses(): active, or terminated (which sets terminated_at).';

COMMENT ON COLUMN memsub.sessions.state IS 'Short-term state: a JSON object of namespaced keys (temp:..., session:<id>:..., user:<user_id>:...).';

COMMENT ON COLUMN memsub.sessions.created_at IS 'When the session was created.';

COMMENT ON COLUMN memsub.sessions.updated_at IS 'Last event, state change or termination.';

COMMENT ON COLUMN memsub.sessions.terminated_at IS 'When the session was terminated (NULL while active).';

COMMENT ON COLUMN memsub.sessions.event_count IS 'Number of events appended (rows of memsub.session_events); the next event''s position.';

CREATE FUNCTION memsub._session_lookup(p_session_id text, p_for_update boolean DEFAULT false, p_errcode text DEFAULT 'P0002'::text) RETURNS memsub.sessions
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_session memsub.sessions;
begin
    if p_session_id is null then
        raise exception 'session_id is required'
            using errcode = '23502', column = 'session_id';
    end if;
    if p_for_update then
        select s.* into v_session from memsub.sessions s
         where s.tenant_id = memsub._require_tenant_id() and s.id = p_session_id
           for update;
    else
        select s.* into v_session from memsub.sessions s
         where s.tenant_id = memsub._require_tenant_id() and s.id = p_session_id;
    end if;
    if v_session.id is null then
        raise exception 'session "%" does not exist or is not visible', p_session_id
            using errcode = p_errcode, column = 'session_id';
    end if;
    return v_session;
end
$$;

ALTER FUNCTION memsub._session_lookup(p_session_id text, p_for_update boolean, p_errcode text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._session_lookup(p_session_id text, p_for_update boolean, p_errcode text) IS 'Internal: the visible session of the context tenant with this id (optionally locked); raises p_errcode naming session_id when there is none (P0002, or 23503 where the caller only refers to the session).';

CREATE FUNCTION memsub.task_final_statuses() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['completed', 'failed', 'cancelled']::text[] $$;

ALTER FUNCTION memsub.task_final_statuses() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.task_final_statuses() IS 'The task statuses a task cannot leave (a subset of memsub.task_statuses()); a task has completed_at exactly when its status is one of them.';

CREATE FUNCTION memsub.task_statuses() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['pending', 'running', 'completed', 'failed', 'cancelled']::text[] $$;

ALTER FUNCTION memsub.task_statuses() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.task_statuses() IS 'The states of a task (tasks.status, memsub.task_set_status p_status); the final ones are memsub.task_final_statuses().';

CREATE TABLE memsub.tasks (
    tenant_id uuid NOT NULL,
    id bigint NOT NULL,
    org_id uuid,
    user_id uuid,
    type text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    result jsonb,
    error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    completed_at timestamp with time zone,
    session_id text,
    parent_task_id bigint,
    CONSTRAINT tasks_completed_consistent CHECK (((status = ANY (memsub.task_final_statuses())) = (completed_at IS NOT NULL))),
    CONSTRAINT tasks_not_own_parent CHECK ((parent_task_id IS DISTINCT FROM id)),
    CONSTRAINT tasks_status_check CHECK ((status = ANY (memsub.task_statuses()))),
    CONSTRAINT tasks_type_not_blank CHECK ((length(btrim(type)) > 0))
);

ALTER TABLE ONLY memsub.tasks FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.tasks OWNER TO memsub_owner;

COMMENT ON TABLE memsub.tasks IS 'Tasks (seed 000 operations layer, with seed 001''s session_id and parent_task_id): one table for both seeds.';

COMMENT ON COLUMN memsub.tasks.tenant_id IS 'Tenant owning the task.';

COMMENT ON COLUMN memsub.tasks.id IS 'Task identifier (seed 000: SERIAL; here a bigint identity, unique per tenant).';

COMMENT ON COLUMN memsub.tasks.org_id IS 'Organization of the task (NULL: tenant-wide).';

COMMENT ON COLUMN memsub.tasks.user_id IS 'User who created the task.';

COMMENT ON COLUMN memsub.tasks.type IS 'Kind of task (free text, not blank).';

COMMENT ON COLUMN memsub.tasks.status IS 'One of memsub.task_statuses(); the final ones (memsub.task_final_statuses()) set completed_at.';

COMMENT ON COLUMN memsub.tasks.payload IS 'Task input (JSON).';

COMMENT ON COLUMN memsub.tasks.result IS 'Task output (JSON), set on completion.';

COMMENT ON COLUMN memsub.tasks.error IS 'Error text of a failed task.';

COMMENT ON COLUMN memsub.tasks.created_at IS 'When the task was created.';

COMMENT ON COLUMN memsub.tasks.completed_at IS 'When the task reached a final status (memsub.task_final_statuses()).';

COMMENT ON COLUMN memsub.tasks.session_id IS 'Session the task runs in; NULL for tasks without a session or whose session was deleted.';

COMMENT ON COLUMN memsub.tasks.parent_task_id IS 'Parent task of a sub-task (must exist when the sub-task is created).';

CREATE FUNCTION memsub._task_lookup(p_task_id bigint, p_for_update boolean, p_errcode text) RETURNS memsub.tasks
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_task memsub.tasks;
begin
    if p_for_update then
        select t.* into v_task from memsub.tasks t
         where t.tenant_id = memsub._require_tenant_id() and t.id = p_task_id
           for update;
    else
        select t.* into v_task from memsub.tasks t
         where t.tenant_id = memsub._require_tenant_id() and t.id = p_task_id;
    end if;
    if v_task.id is null then
        raise exception 'task % does not exist or is not visible', p_task_id
            using errcode = p_errcode, column = 'task_id';
    end if;
    return v_task;
end
$$;

ALTER FUNCTION memsub._task_lookup(p_task_id bigint, p_for_update boolean, p_errcode text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._task_lookup(p_task_id bigint, p_for_update boolean, p_errcode text) IS 'Internal: the visible task of the context tenant with this id (optionally locked); raises p_errcode naming task_id when there is none (P0002 for the task acted on, 23503 for a task referred to).';

CREATE FUNCTION memsub._thread_packet_ids(p_thread_id uuid, p_limit integer, p_after_cursor bigint) RETURNS uuid[]
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    -- Write order: packets written in one transaction share their timestamp, but never their write_seq, and a
    -- parent is always written before its children. The cursor is the write_seq of the last row read.
    select array(
        select s.packet_id from memsub.packet_store s
         where s.thread_id = p_thread_id
           and (p_after_cursor is null or s.write_seq > p_after_cursor)
         order by s.write_seq
         limit memsub._check_count(p_limit, 'max_rows', 'limit'))
$$;

ALTER FUNCTION memsub._thread_packet_ids(p_thread_id uuid, p_limit integer, p_after_cursor bigint) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._thread_packet_ids(p_thread_id uuid, p_limit integer, p_after_cursor bigint) IS 'Internal: the ids of one page of a thread, in write order: at most p_limit visible packets after the cursor (22023 naming limit below 1, 54000 above max_rows). The page memsub.get_thread and memsub.get_thread_with_vector_values read.';

CREATE FUNCTION memsub._unsealed_tenant_id() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select case when pg_input_is_valid(t.setting, 'uuid') then t.setting::uuid end
      from (select current_setting('memsub.tenant_id', true) as setting) t
$$;

ALTER FUNCTION memsub._unsealed_tenant_id() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._unsealed_tenant_id() IS 'Internal: the tenant the context names, NOT checked against the context''s seal (NULL when unset or not a uuid): only a key for a read under row-level security, whose caller checks the seal itself when the read returns nothing (memsub.current_tenant_id).';

CREATE FUNCTION memsub._vector_graph_order(p_vector text, p_query text) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
    select format('l2_normalize(%1$s)::halfvec(%3$s) <#> l2_normalize(%2$s)::halfvec(%3$s)', p_vector, p_query,
                  memsub.vector_dimension())
$_$;

ALTER FUNCTION memsub._vector_graph_order(p_vector text, p_query text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._vector_graph_order(p_vector text, p_query text) IS 'Internal: the ORDER BY expression, as SQL text, that walks the HNSW graph of memory_embeddings for the stored vector p_vector (e.g. e.vector) nearest to the query p_query (e.g. $1): the index''s own key, l2_normalize(vector)::halfvec(<vector_dimension>), compared by inner product. It orders rows as the cosine distance does, to half precision; statements built with it report the cosine distance of the full vectors.';

CREATE FUNCTION memsub._walk_ef_search(p_pool integer, p_share double precision) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select least(1000, greatest(40, p_pool, ceil(10.0 * p_pool / greatest(p_share, 1e-9))::integer)) $$;

ALTER FUNCTION memsub._walk_ef_search(p_pool integer, p_share double precision) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._walk_ef_search(p_pool integer, p_share double precision) IS 'Internal: the hnsw.ef_search of a walk that must return p_pool rows of a caller holding p_share (0-1] of the graph: about ten candidates per wanted row inside that share, at least 40 and p_pool, at most 1000. Used by memsub._search_strategy and memsub.search_semantic_memory.';

CREATE FUNCTION memsub._write_packets_set(p_envelopes jsonb, p_vectors public.vector[], p_before integer[]) RETURNS memsub.packet_write_result[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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
    -- 4. The one INSERT of packets store_packet_envelope uses, each new thread, the embeddings.
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

ALTER FUNCTION memsub._write_packets_set(p_envelopes jsonb, p_vectors public.vector[], p_before integer[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub._write_packets_set(p_envelopes jsonb, p_vectors public.vector[], p_before integer[]) IS 'Internal to write_packets: writes a whole batch set-based when it can do so exactly as store_packet_envelope would envelope by envelope, and returns the results; NULL (nothing written) when the batch needs the envelope-by-envelope path. p_vectors and p_before: the vectors given apart (memsub._batch_embeddings). Not granted to clients.';

CREATE FUNCTION memsub.access_target_types() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['packet', 'embedding', 'fact', 'reflection']::text[] $$;

ALTER FUNCTION memsub.access_target_types() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.access_target_types() IS 'What an access record points at (memory_access_log.target_type, memsub.record_access p_target_type).';

CREATE FUNCTION memsub.acting_role() RETURNS name
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select case when (select r.rolcanlogin from pg_catalog.pg_roles r where r.rolname = current_user)
                then current_user else session_user end
$$;

ALTER FUNCTION memsub.acting_role() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.acting_role() IS 'The database role whose memsub role memberships count: current_user when it can log in, else the login role (inside SECURITY DEFINER functions owned by memsub''s NOLOGIN owners, or after SET ROLE to a group).';

CREATE FUNCTION memsub.adk_check_name(p_value text, p_field text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    perform memsub._check_text_limits(p_field, p_value);
    if p_value is null or p_value = '' or p_value ~ '[[:cntrl:]]' then
        raise exception 'memsub: % must be a non-empty string without control characters', p_field
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;

ALTER FUNCTION memsub.adk_check_name(p_value text, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_check_name(p_value text, p_field text) IS 'Returns p_value, or raises 22023 naming p_field when it is NULL, empty or holds a control character (54000 when it is over max_text_chars).';

CREATE FUNCTION memsub.adk_check_state(p_state jsonb, p_field text) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    perform memsub._check_limit(pg_column_size(p_state), 'max_json_bytes', p_field);
    if p_state is not null and jsonb_typeof(p_state) <> 'object' then
        raise exception 'memsub: % must be a JSON object', p_field using errcode = '22023', column = p_field;
    end if;
    return coalesce(p_state, '{}');
end
$$;

ALTER FUNCTION memsub.adk_check_state(p_state jsonb, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_check_state(p_state jsonb, p_field text) IS 'Returns p_state (NULL as {}), or raises 22023 naming p_field when it is not a JSON object.';

CREATE FUNCTION memsub.adk_memory_add(p_app_name text, p_user_id text, p_session_id text, p_memories jsonb) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
    orgk   uuid := memsub.adk_org_key();
    bad    bigint;
    added  integer;
begin
    perform memsub.adk_check_name(p_app_name, 'app_name'), memsub.adk_check_name(p_user_id, 'user_id'),
            memsub.adk_check_name(p_session_id, 'session_id'),
            memsub._check_limit(pg_column_size(p_memories), 'max_json_bytes', 'memories');
    if p_memories is null or jsonb_typeof(p_memories) <> 'array' then
        raise exception 'memsub: memories must be a JSON array' using errcode = '22023', column = 'memories';
    end if;
    select m.position - 1 into bad
      from jsonb_array_elements(p_memories) with ordinality as m(memory, position)
     where jsonb_typeof(m.memory) <> 'object'
        or jsonb_typeof(m.memory -> 'event_id') is distinct from 'string' or m.memory ->> 'event_id' = ''
        or jsonb_typeof(m.memory -> 'content') is distinct from 'object'
        or jsonb_typeof(m.memory -> 'text') is distinct from 'string'
        or coalesce(jsonb_typeof(m.memory -> 'timestamp'), 'null') not in ('number', 'null')
        or coalesce(jsonb_typeof(m.memory -> 'embedding'), 'null') not in ('array', 'null')
     order by m.position limit 1;
    if bad is not null then
        raise exception 'memsub: memories[%] must be an object with event_id, content (object), text and optional '
                        'timestamp (number) and embedding (array)', bad
            using errcode = '22023', column = format('memories[%s]', bad);
    end if;
    delete from memsub.adk_memories m
     where m.tenant_id = tenant and m.org_key = orgk and m.app_name = p_app_name and m.user_id = p_user_id
       and m.session_id = p_session_id;
    begin
        insert into memsub.adk_memories (tenant_id, org_id, app_name, user_id, session_id, event_id, author,
                                         "timestamp", content, text, words, embedding)
        select distinct on (m.memory ->> 'event_id')
               tenant, (select memsub.current_org_id()), p_app_name, p_user_id, p_session_id, m.memory ->> 'event_id',
               m.memory ->> 'author', (m.memory ->> 'timestamp')::double precision, m.memory -> 'content',
               m.memory ->> 'text', memsub.adk_words(m.memory ->> 'text'),
               case when m.memory ? 'embedding' and jsonb_typeof(m.memory -> 'embedding') = 'array'
                    then ((m.memory -> 'embedding') #>> '{}')::vector end
          from jsonb_array_elements(p_memories) with ordinality as m(memory, position)
         order by m.memory ->> 'event_id', m.position desc;
    exception when data_exception then
        raise exception 'memsub: memories[].embedding must be arrays of finite numbers (%)', sqlerrm
            using errcode = '22023', column = 'memories';
    end;
    get diagnostics added = row_count;
    return added;
end
$$;

ALTER FUNCTION memsub.adk_memory_add(p_app_name text, p_user_id text, p_session_id text, p_memories jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_memory_add(p_app_name text, p_user_id text, p_session_id text, p_memories jsonb) IS 'Replaces the memories of an ADK session (context tenant and organization) with p_memories: a JSON array of {event_id, author, timestamp, content, text, embedding}. Returns how many were stored.';

CREATE FUNCTION memsub.adk_memory_search(p_app_name text, p_user_id text, p_query text, p_query_embedding jsonb DEFAULT NULL::jsonb, p_limit integer DEFAULT 10) RETURNS TABLE(session_id text, event_id text, author text, "timestamp" double precision, content jsonb, score double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
    orgk   uuid := memsub.adk_org_key();
    q_words text[];
    query  vector;
begin
    perform memsub.adk_check_name(p_app_name, 'app_name'), memsub.adk_check_name(p_user_id, 'user_id'),
            memsub._check_limit(length(p_query), 'max_query_chars', 'query'),
            memsub._check_limit(p_limit, 'max_k', 'limit');
    if p_query is null then
        raise exception 'memsub: query must be a string' using errcode = '22023', column = 'query';
    end if;
    if p_limit is null or p_limit < 0 then
        raise exception 'memsub: limit must be a non-negative integer' using errcode = '22023', column = 'limit';
    end if;
    query := memsub._json_query_vector(p_query_embedding, 'query_embedding', 'memsub');
    q_words := memsub.adk_words(p_query);
    return query
    select r.session_id, r.event_id, r.author, r.ts, r.content, r.rank_score
      from (select c.session_id, c.event_id, c.author, c.ts, c.content, c.by_vector,
                   case when c.by_vector then 1 - (c.embedding <=> query)
                        else cardinality(array(select unnest(c.words) intersect select unnest(q_words)))::double precision
                             / greatest(cardinality(q_words), 1) end as rank_score
              from (select m.session_id::text as session_id, m.event_id::text as event_id, m.author,
                           m."timestamp" as ts, m.content, m.words, m.embedding,
                           coalesce(query is not null and m.embedding is not null
                                    and vector_dims(m.embedding) = vector_dims(query), false) as by_vector
                      from memsub.adk_memories m
                     where m.tenant_id = tenant and m.org_key = orgk and m.app_name = p_app_name
                       and m.user_id = p_user_id) c
             where c.by_vector or c.words && q_words) r
     order by r.by_vector desc, r.rank_score desc, r.ts desc nulls last, r.session_id, r.event_id
     limit p_limit;
end
$$;

ALTER FUNCTION memsub.adk_memory_search(p_app_name text, p_user_id text, p_query text, p_query_embedding jsonb, p_limit integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_memory_search(p_app_name text, p_user_id text, p_query text, p_query_embedding jsonb, p_limit integer) IS 'Memories of an ADK user in an app (context tenant and organization) for a query: with p_query_embedding, embedded memories by cosine similarity first; then memories sharing a word with the query, by the share of query words they hold, newest first. At most p_limit rows.';

CREATE FUNCTION memsub.adk_merged_state(p_app jsonb, p_user jsonb, p_session jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select coalesce(p_session, '{}')
        || coalesce((select jsonb_object_agg('app:' || key, value) from jsonb_each(p_app)), '{}')
        || coalesce((select jsonb_object_agg('user:' || key, value) from jsonb_each(p_user)), '{}')
$$;

ALTER FUNCTION memsub.adk_merged_state(p_app jsonb, p_user jsonb, p_session jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_merged_state(p_app jsonb, p_user jsonb, p_session jsonb) IS 'The state ADK sees: the session''s keys, the app''s as app:<key> and the user''s as user:<key>.';

CREATE FUNCTION memsub.adk_org_key() RETURNS uuid
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select coalesce(memsub.current_org_id(), '00000000-0000-0000-0000-000000000000'::uuid)
$$;

ALTER FUNCTION memsub.adk_org_key() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_org_key() IS 'The context organization, or the nil uuid for a tenant-wide context: the org_key of the ADK tables.';

CREATE FUNCTION memsub.adk_session_append_event(p_app_name text, p_user_id text, p_session_id text, p_event jsonb, p_last_update_time double precision DEFAULT NULL::double precision) RETURNS double precision
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant  uuid := memsub._require_tenant_id();
    orgk    uuid := memsub.adk_org_key();
    delta   jsonb;
    stamp   double precision;
    v_session memsub.adk_sessions;
begin
    perform memsub.adk_check_name(p_app_name, 'app_name'), memsub.adk_check_name(p_user_id, 'user_id'),
            memsub.adk_check_name(p_session_id, 'session_id'),
            memsub._check_limit(pg_column_size(p_event), 'max_json_bytes', 'event');
    if p_event is null or jsonb_typeof(p_event) <> 'object' then
        raise exception 'memsub: event must be a JSON object' using errcode = '22023', column = 'event';
    end if;
    if jsonb_typeof(p_event -> 'id') is distinct from 'string' or p_event ->> 'id' = '' then
        raise exception 'memsub: event.id must be a non-empty string' using errcode = '22023', column = 'event.id';
    end if;
    if jsonb_typeof(p_event -> 'timestamp') is distinct from 'number' then
        raise exception 'memsub: event.timestamp must be a number of seconds since the epoch'
            using errcode = '22023', column = 'event.timestamp';
    end if;
    stamp := (p_event ->> 'timestamp')::double precision;
    delta := p_event #> '{actions,state_delta}';
    if delta is not null and jsonb_typeof(delta) not in ('object', 'null') then
        raise exception 'memsub: event.actions.state_delta must be a JSON object'
            using errcode = '22023', column = 'event.actions.state_delta';
    end if;
    delta := coalesce(nullif(delta, 'null'), '{}');

    select s.* into v_session from memsub.adk_sessions s
     where s.tenant_id = tenant and s.org_key = orgk and s.app_name = p_app_name and s.user_id = p_user_id
       and s.id = p_session_id
       for update;
    if v_session.id is null then
        raise exception 'memsub: session "%" of user "%" in app "%" does not exist', p_session_id, p_user_id, p_app_name
            using errcode = 'P0002', column = 'session_id';
    end if;
    if p_last_update_time is not null and extract(epoch from v_session.updated_at)::double precision > p_last_update_time
    then
        raise exception 'memsub: session "%" changed since it was read (stale last_update_time)', p_session_id
            using errcode = '40001', column = 'last_update_time',
                  detail = format('stored=%s given=%s', extract(epoch from v_session.updated_at), p_last_update_time);
    end if;
    if exists (select from jsonb_object_keys(delta) k where k like 'app:%' or k like 'user:%') then
        perform memsub.adk_write_states(p_app_name, p_user_id, delta);
    end if;
    update memsub.adk_sessions s
       set state = s.state || memsub.adk_state_part(delta, ''), event_count = s.event_count + 1,
           updated_at = greatest(now(), s.updated_at)
     where s.tenant_id = tenant and s.org_key = orgk and s.app_name = p_app_name and s.user_id = p_user_id
       and s.id = p_session_id
    returning s.* into v_session;
    insert into memsub.adk_events (tenant_id, org_id, app_name, user_id, session_id, position, id, author,
                                   invocation_id, "timestamp", event)
    values (tenant, v_session.org_id, p_app_name, p_user_id, p_session_id, v_session.event_count - 1, p_event ->> 'id',
            p_event ->> 'author', p_event ->> 'invocation_id', stamp, p_event);
    return extract(epoch from v_session.updated_at)::double precision;
end
$$;

ALTER FUNCTION memsub.adk_session_append_event(p_app_name text, p_user_id text, p_session_id text, p_event jsonb, p_last_update_time double precision) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_session_append_event(p_app_name text, p_user_id text, p_session_id text, p_event jsonb, p_last_update_time double precision) IS 'Appends an ADK event (JSON) to a session of the context tenant and organization and applies its actions.state_delta (app: and user: keys to their states, temp: keys dropped, the rest to the session), atomically. P0002 naming session_id when the session does not exist; 40001 naming last_update_time when the session changed after p_last_update_time. Returns the new last update time (epoch seconds).';

CREATE FUNCTION memsub.adk_session_create(p_app_name text, p_user_id text, p_session_id text DEFAULT NULL::text, p_state jsonb DEFAULT NULL::jsonb) RETURNS TABLE(id text, state jsonb, last_update_time double precision)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant  uuid := memsub._require_tenant_id();
    delta   jsonb;
    states  record;
    created memsub.adk_sessions;
begin
    perform memsub.adk_check_name(p_app_name, 'app_name'), memsub.adk_check_name(p_user_id, 'user_id');
    if p_session_id is not null then
        perform memsub.adk_check_name(p_session_id, 'session_id');
    end if;
    delta := memsub.adk_check_state(p_state, 'state');
    select * into states from memsub.adk_write_states(p_app_name, p_user_id, delta);
    insert into memsub.adk_sessions as s (tenant_id, org_id, app_name, user_id, id, state)
    values (tenant, memsub.current_org_id(), p_app_name, p_user_id, coalesce(p_session_id, gen_random_uuid()::text),
            memsub.adk_state_part(delta, ''))
    on conflict do nothing
    returning s.* into created;
    if created.id is null then
        raise exception 'memsub: session "%" of user "%" in app "%" already exists', p_session_id, p_user_id, p_app_name
            using errcode = '23505', column = 'session_id';
    end if;
    return query select created.id::text, memsub.adk_merged_state(states.app_state, states.user_state, created.state),
                        extract(epoch from created.updated_at)::double precision;
end
$$;

ALTER FUNCTION memsub.adk_session_create(p_app_name text, p_user_id text, p_session_id text, p_state jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_session_create(p_app_name text, p_user_id text, p_session_id text, p_state jsonb) IS 'Creates an ADK session (id generated when NULL) of the context tenant and organization; the initial state''s app: and user: keys go to the app''s and user''s states, temp: keys are dropped. Returns the id, the merged state and the last update time (epoch seconds). 23505 naming session_id when it exists.';

CREATE FUNCTION memsub.adk_session_delete(p_app_name text, p_user_id text, p_session_id text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
    orgk   uuid := memsub.adk_org_key();
begin
    perform memsub.adk_check_name(p_app_name, 'app_name'), memsub.adk_check_name(p_user_id, 'user_id'),
            memsub.adk_check_name(p_session_id, 'session_id');
    delete from memsub.adk_sessions s
     where s.tenant_id = tenant and s.org_key = orgk and s.app_name = p_app_name and s.user_id = p_user_id
       and s.id = p_session_id;
    return found;
end
$$;

ALTER FUNCTION memsub.adk_session_delete(p_app_name text, p_user_id text, p_session_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_session_delete(p_app_name text, p_user_id text, p_session_id text) IS 'Deletes an ADK session and its events (not its memories); false when there was none.';

CREATE FUNCTION memsub.adk_session_get(p_app_name text, p_user_id text, p_session_id text, p_num_recent_events integer DEFAULT NULL::integer, p_after_timestamp double precision DEFAULT NULL::double precision) RETURNS TABLE(state jsonb, last_update_time double precision, events jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
    orgk   uuid := memsub.adk_org_key();
begin
    perform memsub.adk_check_name(p_app_name, 'app_name'), memsub.adk_check_name(p_user_id, 'user_id'),
            memsub.adk_check_name(p_session_id, 'session_id');
    if p_num_recent_events < 0 then
        raise exception 'memsub: num_recent_events must not be negative' using errcode = '22023',
            column = 'num_recent_events';
    end if;
    if p_after_timestamp = 'NaN'::float8 then
        raise exception 'memsub: after_timestamp must be a number of seconds' using errcode = '22023',
            column = 'after_timestamp';
    end if;
    return query
    select memsub.adk_merged_state(
               (select a.state from memsub.adk_app_states a
                 where a.tenant_id = tenant and a.org_key = orgk and a.app_name = p_app_name),
               (select u.state from memsub.adk_user_states u
                 where u.tenant_id = tenant and u.org_key = orgk and u.app_name = p_app_name
                   and u.user_id = p_user_id),
               s.state),
           extract(epoch from s.updated_at)::double precision,
           (select coalesce(jsonb_agg(r.event order by r.position), '[]')
              from (select e.event, e.position from memsub.adk_events e
                     where e.tenant_id = tenant and e.org_key = orgk and e.app_name = p_app_name
                       and e.user_id = p_user_id and e.session_id = p_session_id
                       and (p_after_timestamp is null or e."timestamp" >= p_after_timestamp)
                     order by e.position desc
                     limit p_num_recent_events) r)
      from memsub.adk_sessions s
     where s.tenant_id = tenant and s.org_key = orgk and s.app_name = p_app_name and s.user_id = p_user_id
       and s.id = p_session_id;
end
$$;

ALTER FUNCTION memsub.adk_session_get(p_app_name text, p_user_id text, p_session_id text, p_num_recent_events integer, p_after_timestamp double precision) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_session_get(p_app_name text, p_user_id text, p_session_id text, p_num_recent_events integer, p_after_timestamp double precision) IS 'The ADK session of the context tenant and organization (no row when there is none): merged state, last update time (epoch seconds) and its events in order, only those at or after p_after_timestamp and only the p_num_recent_events most recent when given.';

CREATE FUNCTION memsub.adk_session_list(p_app_name text, p_user_id text) RETURNS TABLE(id text, last_update_time double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
    orgk   uuid := memsub.adk_org_key();
begin
    perform memsub.adk_check_name(p_app_name, 'app_name'), memsub.adk_check_name(p_user_id, 'user_id');
    return query
    select s.id::text, extract(epoch from s.updated_at)::double precision
      from memsub.adk_sessions s
     where s.tenant_id = tenant and s.org_key = orgk and s.app_name = p_app_name and s.user_id = p_user_id
     order by s.created_at, s.id;
end
$$;

ALTER FUNCTION memsub.adk_session_list(p_app_name text, p_user_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_session_list(p_app_name text, p_user_id text) IS 'The ADK sessions of a user in an app (context tenant and organization), oldest first: id and last update time.';

CREATE FUNCTION memsub.adk_state_part(p_state jsonb, p_prefix text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select coalesce(jsonb_object_agg(substr(e.key, length(p_prefix) + 1), e.value), '{}')
      from jsonb_each(p_state) e
     where case when p_prefix = '' then e.key not like 'app:%' and e.key not like 'user:%' and e.key not like 'temp:%'
                else left(e.key, length(p_prefix)) = p_prefix end
$$;

ALTER FUNCTION memsub.adk_state_part(p_state jsonb, p_prefix text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_state_part(p_state jsonb, p_prefix text) IS 'The keys of an ADK state (delta) with the prefix (app: or user:), the prefix removed; with '''' the keys without an app:, user: or temp: prefix.';

CREATE FUNCTION memsub.adk_words(p_text text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select coalesce(array_agg(distinct lower(m[1])), '{}')
      from regexp_matches(coalesce(p_text, ''), '([[:alnum:]]+)', 'g') m
$$;

ALTER FUNCTION memsub.adk_words(p_text text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_words(p_text text) IS 'The distinct lower-case words (runs of letters and digits) of a text: what ADK memory keyword search matches.';

CREATE FUNCTION memsub.adk_write_states(p_app_name text, p_user_id text, p_delta jsonb) RETURNS TABLE(app_state jsonb, user_state jsonb)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
    org    uuid := memsub.current_org_id();
    orgk   uuid := memsub.adk_org_key();
    app_delta  jsonb := memsub.adk_state_part(p_delta, 'app:');
    user_delta jsonb := memsub.adk_state_part(p_delta, 'user:');
begin
    insert into memsub.adk_app_states as s (tenant_id, org_id, app_name, state)
    values (tenant, org, p_app_name, app_delta)
    on conflict (tenant_id, org_key, app_name) do update
       set state = s.state || excluded.state,
           updated_at = case when excluded.state = '{}' then s.updated_at else now() end
    returning s.state into app_state;
    insert into memsub.adk_user_states as s (tenant_id, org_id, app_name, user_id, state)
    values (tenant, org, p_app_name, p_user_id, user_delta)
    on conflict (tenant_id, org_key, app_name, user_id) do update
       set state = s.state || excluded.state,
           updated_at = case when excluded.state = '{}' then s.updated_at else now() end
    returning s.state into user_state;
    return next;
end
$$;

ALTER FUNCTION memsub.adk_write_states(p_app_name text, p_user_id text, p_delta jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.adk_write_states(p_app_name text, p_user_id text, p_delta jsonb) IS 'Internal: merges the app: and user: keys of an ADK state delta into the app''s and user''s states of the context tenant and organization (creating them) and returns both states.';

CREATE FUNCTION memsub.agent_session_add_items(p_session_id text, p_items json) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub.agent_session_lock(p_session_id);
    bad    bigint;
    added  integer;
begin
    if p_items is null or json_typeof(p_items) <> 'array' then
        raise exception 'memsub.agent_session_add_items: items must be a JSON array'
            using errcode = '22023', column = 'items';
    end if;
    select min(e.n) - 1 into bad
      from json_array_elements(p_items) with ordinality as e(item, n)
     where json_typeof(e.item) <> 'object';
    if bad is not null then
        raise exception 'memsub.agent_session_add_items: items[%] must be a JSON object', bad
            using errcode = '22023', column = format('items[%s]', bad);
    end if;
    insert into memsub.agent_session_items (tenant_id, org_id, session_id, item)
    select tenant, (select memsub.current_org_id()), p_session_id, e.item
      from json_array_elements(p_items) with ordinality as e(item, n)
     order by e.n;
    get diagnostics added = row_count;
    return added;
end
$$;

ALTER FUNCTION memsub.agent_session_add_items(p_session_id text, p_items json) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.agent_session_add_items(p_session_id text, p_items json) IS 'Appends items (a JSON array of objects, in order) to a session of the context tenant; returns the number added. 22023 naming session_id when blank, items when not an array, items[i] when an element is not an object.';

CREATE FUNCTION memsub.agent_session_clear(p_session_id text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant  uuid := memsub.agent_session_lock(p_session_id);
    deleted integer;
begin
    delete from memsub.agent_session_items i where i.tenant_id = tenant and i.session_id = p_session_id;
    get diagnostics deleted = row_count;
    return deleted;
end
$$;

ALTER FUNCTION memsub.agent_session_clear(p_session_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.agent_session_clear(p_session_id text) IS 'Deletes every item of a session of the context tenant; returns the number deleted. 22023 naming session_id when blank.';

CREATE FUNCTION memsub.agent_session_get_items(p_session_id text, p_limit integer DEFAULT NULL::integer) RETURNS TABLE(item_id bigint, item json)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
begin
    if p_session_id is null or p_session_id !~ '\S' then
        raise exception 'memsub.agent_session_get_items: session_id must be a non-empty string'
            using errcode = '22023', column = 'session_id';
    end if;
    -- Like the SDK's SQLite session: NULL or a negative limit reads the whole history, 0 reads nothing.
    if p_limit is null or p_limit < 0 then
        return query
        select i.item_id, i.item from memsub.agent_session_items i
         where i.tenant_id = tenant and i.session_id = p_session_id
         order by i.item_id;
    else
        return query
        select l.item_id, l.item
          from (select i.item_id, i.item from memsub.agent_session_items i
                 where i.tenant_id = tenant and i.session_id = p_session_id
                 order by i.item_id desc limit p_limit) l
         order by l.item_id;
    end if;
end
$$;

ALTER FUNCTION memsub.agent_session_get_items(p_session_id text, p_limit integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.agent_session_get_items(p_session_id text, p_limit integer) IS 'The items of a session of the context tenant, oldest first: all of them, or the newest p_limit (0: none; NULL or negative: all). 22023 naming session_id when blank.';

CREATE FUNCTION memsub.agent_session_lock(p_session_id text) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
begin
    if p_session_id is null or p_session_id !~ '\S' then
        raise exception 'memsub: session_id must be a non-empty string'
            using errcode = '22023', column = 'session_id';
    end if;
    -- A row lock only memsub's owner roles can take (any login can take any advisory-lock key).
    perform memsub.take_maintenance_lock('agent_session_items', tenant::text || '/' || p_session_id);
    return tenant;
end
$$;

ALTER FUNCTION memsub.agent_session_lock(p_session_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.agent_session_lock(p_session_id text) IS 'Internal: checks p_session_id (22023 naming session_id when NULL or blank), locks that session of the context tenant until the end of the transaction and returns the tenant.';

CREATE FUNCTION memsub.agent_session_pop_item(p_session_id text) RETURNS json
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub.agent_session_lock(p_session_id);
    popped json;
begin
    delete from memsub.agent_session_items i
     where i.tenant_id = tenant and i.session_id = p_session_id
       and i.item_id = (select max(x.item_id) from memsub.agent_session_items x
                         where x.tenant_id = tenant and x.session_id = p_session_id)
    returning i.item into popped;
    return popped;
end
$$;

ALTER FUNCTION memsub.agent_session_pop_item(p_session_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.agent_session_pop_item(p_session_id text) IS 'Removes the newest item of a session of the context tenant and returns it; NULL when the session is empty. 22023 naming session_id when blank.';

CREATE FUNCTION memsub.agent_statuses() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['active', 'finished']::text[] $$;

ALTER FUNCTION memsub.agent_statuses() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.agent_statuses() IS 'The states of an agent (agents.status): active from memsub.agent_spawn, then finished.';

CREATE TABLE memsub.agents (
    tenant_id uuid NOT NULL,
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid,
    user_id uuid,
    name text NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    session_id text,
    task_id bigint,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT agents_metadata_is_object CHECK ((jsonb_typeof(metadata) = 'object'::text)),
    CONSTRAINT agents_name_not_blank CHECK ((length(btrim(name)) > 0)),
    CONSTRAINT agents_status_check CHECK ((status = ANY (memsub.agent_statuses())))
);

ALTER TABLE ONLY memsub.agents FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.agents OWNER TO memsub_owner;

COMMENT ON TABLE memsub.agents IS 'Agents spawned for a task within a session (seed 001).';

COMMENT ON COLUMN memsub.agents.tenant_id IS 'Tenant owning the agent.';

COMMENT ON COLUMN memsub.agents.id IS 'Agent identifier.';

COMMENT ON COLUMN memsub.agents.org_id IS 'Organization of the agent (NULL: tenant-wide).';

COMMENT ON COLUMN memsub.agents.user_id IS 'User on whose behalf the agent was spawned.';

COMMENT ON COLUMN memsub.agents.name IS 'Agent name or kind, e.g. memory-systems-architect.';

COMMENT ON COLUMN memsub.agents.status IS 'One of memsub.agent_statuses(): active or finished.';

COMMENT ON COLUMN memsub.agents.session_id IS 'Session the agent works in (NULL once the session was deleted).';

COMMENT ON COLUMN memsub.agents.task_id IS 'Task the agent was spawned for.';

COMMENT ON COLUMN memsub.agents.metadata IS 'Free-form agent metadata (JSON object).';

COMMENT ON COLUMN memsub.agents.created_at IS 'When the agent was spawned.';

CREATE FUNCTION memsub.agent_spawn(p_name text, p_task_id bigint, p_session_id text DEFAULT NULL::text, p_metadata jsonb DEFAULT '{}'::jsonb) RETURNS memsub.agents
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_task    memsub.tasks;
    v_session text;
    v_agent   memsub.agents;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('name', p_name, 'session_id', p_session_id),
            memsub._check_limit(pg_column_size(p_metadata), 'max_json_bytes', 'metadata');
    if p_name is null or p_name !~ '\S' then
        raise exception 'agent name is required' using errcode = '22023', column = 'name';
    end if;
    if p_metadata is null or jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'agent metadata must be a JSON object' using errcode = '22023', column = 'metadata';
    end if;
    v_task := memsub._task_lookup(p_task_id, false, '23503');
    v_session := coalesce(p_session_id, v_task.session_id);
    if v_session is not null then
        perform memsub._session_lookup(v_session, false, '23503');
    end if;
    insert into memsub.agents as a (tenant_id, org_id, user_id, name, session_id, task_id, metadata)
    values (v_tenant, memsub.current_org_id(), memsub.current_user_id(), p_name, v_session, p_task_id, p_metadata)
    returning a.* into v_agent;
    perform memsub.audit_record('agent_spawn', p_session_id => v_session, p_task_id => p_task_id,
        p_tenant_id => v_agent.tenant_id,
        p_agent_id => v_agent.id, p_details => jsonb_build_object('name', p_name));
    return v_agent;
end
$$;

ALTER FUNCTION memsub.agent_spawn(p_name text, p_task_id bigint, p_session_id text, p_metadata jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.agent_spawn(p_name text, p_task_id bigint, p_session_id text, p_metadata jsonb) IS 'Spawns an agent for a task, in the given session or else the task''s session. Audited as agent_spawn.';

CREATE TABLE memsub.world_model_updates (
    update_id uuid DEFAULT gen_random_uuid() NOT NULL,
    insight_id uuid,
    insight_type text NOT NULL,
    entities jsonb NOT NULL,
    content jsonb DEFAULT '{}'::jsonb NOT NULL,
    confidence double precision DEFAULT 0.5 NOT NULL,
    applied_at timestamp without time zone DEFAULT (now() AT TIME ZONE 'UTC'::text) NOT NULL,
    state_version_before integer NOT NULL,
    state_version_after integer NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    CONSTRAINT world_model_updates_confidence_in_unit_range CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT world_model_updates_entities_is_array CHECK ((jsonb_typeof(entities) = 'array'::text)),
    CONSTRAINT world_model_updates_versions_step CHECK ((state_version_after = (state_version_before + 1)))
);

ALTER TABLE ONLY memsub.world_model_updates FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.world_model_updates OWNER TO memsub_owner;

COMMENT ON TABLE memsub.world_model_updates IS 'Applied insight updates of the world model, one per state version.';

COMMENT ON COLUMN memsub.world_model_updates.update_id IS 'Unique update identifier.';

COMMENT ON COLUMN memsub.world_model_updates.insight_id IS 'Insight the update came from (e.g. an insight packet).';

COMMENT ON COLUMN memsub.world_model_updates.insight_type IS 'Kind of insight.';

COMMENT ON COLUMN memsub.world_model_updates.entities IS 'Entity changes applied: [{entity_id, entity_type, attributes, confidence}].';

COMMENT ON COLUMN memsub.world_model_updates.content IS 'Insight content.';

COMMENT ON COLUMN memsub.world_model_updates.confidence IS 'Confidence of the insight in [0, 1].';

COMMENT ON COLUMN memsub.world_model_updates.applied_at IS 'When the update was applied (UTC).';

COMMENT ON COLUMN memsub.world_model_updates.state_version_before IS 'State version before the update.';

COMMENT ON COLUMN memsub.world_model_updates.state_version_after IS 'State version after the update (before + 1).';

COMMENT ON COLUMN memsub.world_model_updates.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.world_model_updates.org_id IS 'Organization of the updater.';

COMMENT ON COLUMN memsub.world_model_updates.user_id IS 'User of the updater.';

CREATE FUNCTION memsub.apply_world_model_update(p_insight_type text, p_entities jsonb, p_content jsonb DEFAULT '{}'::jsonb, p_confidence double precision DEFAULT 0.5, p_insight_id uuid DEFAULT NULL::uuid, p_expected_version integer DEFAULT NULL::integer) RETURNS memsub.world_model_updates
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_org      uuid := memsub.current_org_id();
    v_user     uuid := memsub.current_user_id();
    v_now      timestamp := now() at time zone 'UTC';
    v_before   integer;
    v_after    integer;
    v_entity   jsonb;
    v_position integer;
    v_field    text;
    v_id       text;
    v_ids      text[] := '{}';  -- each change's entity id and type (NULL: not given), as checked
    v_types    text[] := '{}';
    v_type     text;
    v_attrs    jsonb;
    v_update   memsub.world_model_updates;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('insight_type', p_insight_type),
            memsub._check_limit(pg_column_size(p_entities), 'max_json_bytes', 'entities'),
            memsub._check_limit(pg_column_size(p_content), 'max_json_bytes', 'content');
    perform memsub._require_text(p_insight_type, 'insight_type');
    perform memsub._check_unit(p_confidence, 'confidence');
    perform memsub._check_json_type(p_content, 'object', 'content');
    if p_entities is null or jsonb_typeof(p_entities) <> 'array' or jsonb_array_length(p_entities) = 0 then
        raise exception 'field "entities" must be a non-empty JSON array of entity changes'
            using errcode = '22023', column = 'entities';
    end if;
    -- Validate every change before touching anything.
    for v_entity, v_position in select e, n - 1 from jsonb_array_elements(p_entities) with ordinality as a(e, n) loop
        v_field := format('entities[%s]', v_position);
        perform memsub._check_object_keys(v_entity, v_field,
                                          array['entity_id', 'entity_type', 'attributes', 'confidence'],
                                          '{entity_id, entity_type, attributes, confidence}', 'an entity change');
        v_id := memsub._require_text(memsub._check_json_type(v_entity -> 'entity_id', 'string', v_field || '.entity_id') #>> '{}',
                                    v_field || '.entity_id');
        if v_id = any(v_ids) then
            raise exception 'field "%.entity_id": entity % appears twice in one update', v_field, v_id
                using errcode = '22023', column = v_field || '.entity_id';
        end if;
        v_ids := v_ids || v_id;
        -- A type given is a required text (not blank), for an entity that exists as for a new one.
        v_types := v_types
                   || case when memsub._check_json_type(v_entity -> 'entity_type', 'string',
                                                        v_field || '.entity_type') is not null
                           then memsub._require_text(v_entity ->> 'entity_type', v_field || '.entity_type') end;
        perform memsub._check_json_type(v_entity -> 'attributes', 'object', v_field || '.attributes');
        if v_entity ? 'confidence' then
            perform memsub._check_json_type(v_entity -> 'confidence', 'number', v_field || '.confidence');
            perform memsub._check_unit((v_entity ->> 'confidence')::double precision, v_field || '.confidence');
        end if;
    end loop;

    insert into memsub.world_model_state (tenant_id, state_version, org_id, user_id)
    values (v_tenant, 0, v_org, v_user)
    on conflict (tenant_id) do nothing;
    select s.state_version into v_before from memsub.world_model_state s where s.tenant_id = v_tenant for update;
    if p_expected_version is not null and p_expected_version <> v_before then
        raise exception 'world model is at state version %, not the expected %', v_before, p_expected_version
            using errcode = '40001', column = 'expected_version',
                  hint = 'Re-read the world model and apply the insight again.';
    end if;
    v_after := v_before + 1;

    for v_entity, v_position in select e, n - 1 from jsonb_array_elements(p_entities) with ordinality as a(e, n) loop
        v_field := format('entities[%s]', v_position);
        v_id := v_ids[v_position + 1];
        v_type := v_types[v_position + 1];
        v_attrs := coalesce(v_entity -> 'attributes', '{}');
        update memsub.world_model_entities w
           set entity_type = coalesce(v_type, w.entity_type),
               attributes = (w.attributes || v_attrs)
                            - array(select a.key from jsonb_each(v_attrs) as a where a.value = 'null'::jsonb),
               confidence = coalesce((v_entity ->> 'confidence')::double precision, w.confidence),
               version = w.version + 1,
               updated_at = v_now,
               state_version = v_after,
               org_id = v_org,
               user_id = v_user
         where w.tenant_id = v_tenant and w.entity_id = v_id;
        if not found then
            if v_type is null then
                raise exception 'field "%.entity_type" is required for the new entity %', v_field, v_id
                    using errcode = '23502', column = v_field || '.entity_type';
            end if;
            insert into memsub.world_model_entities (
                entity_id, entity_type, attributes, confidence, version, created_at, updated_at, state_version,
                tenant_id, org_id, user_id)
            values (
                v_id, v_type,
                jsonb_strip_nulls(v_attrs), coalesce((v_entity ->> 'confidence')::double precision, 0.5), 1,
                v_now, v_now, v_after, v_tenant, v_org, v_user);
        end if;
    end loop;

    update memsub.world_model_state s
       set state_version = v_after, updated_at = v_now, org_id = v_org, user_id = v_user
     where s.tenant_id = v_tenant;
    insert into memsub.world_model_updates (
        insight_id, insight_type, entities, content, confidence, applied_at, state_version_before,
        state_version_after, tenant_id, org_id, user_id)
    values (
        p_insight_id, memsub._require_text(p_insight_type, 'insight_type'), p_entities, coalesce(p_content, '{}'),
        coalesce(p_confidence, 0.5), v_now, v_before, v_after, v_tenant, v_org, v_user)
    returning * into v_update;
    return v_update;
end
$$;

ALTER FUNCTION memsub.apply_world_model_update(p_insight_type text, p_entities jsonb, p_content jsonb, p_confidence double precision, p_insight_id uuid, p_expected_version integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.apply_world_model_update(p_insight_type text, p_entities jsonb, p_content jsonb, p_confidence double precision, p_insight_id uuid, p_expected_version integer) IS 'Applies an insight to the tenant''s world model atomically: entities [{entity_id, entity_type, attributes, confidence}] are created (version 1) or updated (version + 1, attributes merged, a JSON null removes a key), the state version goes from n to n + 1 and the update is recorded. With expected_version, a world model at another version raises 40001 and nothing changes. Any error changes nothing.';

CREATE TABLE memsub.knowledge_facts (
    fact_id uuid DEFAULT gen_random_uuid() NOT NULL,
    subject text NOT NULL,
    predicate text NOT NULL,
    object jsonb NOT NULL,
    confidence double precision DEFAULT 0.5 NOT NULL,
    source_packet uuid,
    subject_normalized text NOT NULL,
    object_normalized text NOT NULL,
    supporting_packet_count integer DEFAULT 1 NOT NULL,
    contradiction_count integer DEFAULT 0 NOT NULL,
    access_count integer DEFAULT 0 NOT NULL,
    last_accessed timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    ttl timestamp without time zone,
    CONSTRAINT knowledge_facts_confidence_in_unit_range CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT knowledge_facts_counts_non_negative CHECK (((supporting_packet_count >= 0) AND (contradiction_count >= 0) AND (access_count >= 0)))
);

ALTER TABLE ONLY memsub.knowledge_facts FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.knowledge_facts OWNER TO memsub_owner;

COMMENT ON TABLE memsub.knowledge_facts IS 'Extracted facts (subject, predicate, object), tenant-wide, reinforced and contradicted by later assertions (memsub.assert_fact).';

COMMENT ON COLUMN memsub.knowledge_facts.fact_id IS 'Unique fact identifier.';

COMMENT ON COLUMN memsub.knowledge_facts.subject IS 'Subject as first asserted.';

COMMENT ON COLUMN memsub.knowledge_facts.predicate IS 'Predicate, normalized (trimmed, lower case, single spaces).';

COMMENT ON COLUMN memsub.knowledge_facts.object IS 'Object as first asserted (any JSON value).';

COMMENT ON COLUMN memsub.knowledge_facts.confidence IS 'Combined confidence in [0, 1]: 1 - product of (1 - each assertion''s confidence).';

COMMENT ON COLUMN memsub.knowledge_facts.source_packet IS 'Packet of the first assertion (NULL when asserted directly or purged).';

COMMENT ON COLUMN memsub.knowledge_facts.subject_normalized IS 'Subject trimmed, lower case, single spaces: the matching key.';

COMMENT ON COLUMN memsub.knowledge_facts.object_normalized IS 'Object normalized the same way (strings) or as canonical JSON text (other values).';

COMMENT ON COLUMN memsub.knowledge_facts.supporting_packet_count IS 'Number of assertions supporting the fact.';

COMMENT ON COLUMN memsub.knowledge_facts.contradiction_count IS 'Times another object was asserted for the same subject and predicate.';

COMMENT ON COLUMN memsub.knowledge_facts.access_count IS 'Retrieval counter (memsub.record_access).';

COMMENT ON COLUMN memsub.knowledge_facts.last_accessed IS 'Last retrieval time.';

COMMENT ON COLUMN memsub.knowledge_facts.created_at IS 'First assertion time.';

COMMENT ON COLUMN memsub.knowledge_facts.updated_at IS 'Last assertion or contradiction time.';

COMMENT ON COLUMN memsub.knowledge_facts.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.knowledge_facts.org_id IS 'Organization of the first asserter (facts are tenant-wide).';

COMMENT ON COLUMN memsub.knowledge_facts.user_id IS 'User of the first asserter.';

COMMENT ON COLUMN memsub.knowledge_facts.correlation_id IS 'Request correlation identifier (from the source packet).';

COMMENT ON COLUMN memsub.knowledge_facts.session_id IS 'Session of the first asserter.';

COMMENT ON COLUMN memsub.knowledge_facts.trace_id IS 'Distributed tracing identifier (from the source packet).';

COMMENT ON COLUMN memsub.knowledge_facts.ttl IS 'Expiration time (UTC): the latest ttl of the packets that asserted the fact, NULL (never) once one assertion came without an expiring packet. An expired fact is never read and purge_expired() deletes it.';

CREATE FUNCTION memsub.assert_fact(p_subject text, p_predicate text, p_object jsonb, p_confidence double precision DEFAULT 0.5, p_source_packet uuid DEFAULT NULL::uuid) RETURNS memsub.knowledge_facts
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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
    perform memsub._check_text_limits('subject', p_subject, 'predicate', p_predicate),
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

ALTER FUNCTION memsub.assert_fact(p_subject text, p_predicate text, p_object jsonb, p_confidence double precision, p_source_packet uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.assert_fact(p_subject text, p_predicate text, p_object jsonb, p_confidence double precision, p_source_packet uuid) IS 'Asserts a fact. Subject and object are normalized (trimmed, lower case, single spaces; non-string objects as canonical JSON). The same fact again adds one supporting assertion and raises confidence to 1 - (1 - old) * (1 - new). A different object for the same subject and predicate is a contradiction: counted on every fact involved and on their (visible) source packets. The fact expires with the packets that asserted it (the latest of their ttl; never once asserted without an expiring packet); an expired fact asserted again starts afresh. Race-free: assertions about one subject and predicate are serialized.';

CREATE FUNCTION memsub.audit_record(p_operation text, p_session_id text DEFAULT NULL::text, p_task_id bigint DEFAULT NULL::bigint, p_memory_entry_id uuid DEFAULT NULL::uuid, p_namespace text DEFAULT NULL::text, p_key text DEFAULT NULL::text, p_version integer DEFAULT NULL::integer, p_details jsonb DEFAULT '{}'::jsonb, p_agent_id uuid DEFAULT NULL::uuid, p_tenant_id uuid DEFAULT NULL::uuid) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    -- The id is drawn here rather than read back with RETURNING: RETURNING would have the row pass the read
    -- policies too, a second evaluation of the context on every audited write.
    v_id bigint := nextval(pg_get_serial_sequence('memsub.audit', 'id'));
begin
    insert into memsub.audit (tenant_id, id, org_id, user_id, operation, session_id, agent_id, task_id,
                              memory_entry_id, namespace, key, version, details)
    overriding system value
    values (coalesce(p_tenant_id, memsub._require_tenant_id()), v_id, memsub.current_org_id(), memsub.current_user_id(), p_operation,
            p_session_id, coalesce(p_agent_id, memsub.current_agent_id()),
            coalesce(p_task_id, memsub.current_task_id()), p_memory_entry_id, p_namespace, p_key, p_version,
            coalesce(p_details, '{}'));
    return v_id;
end
$$;

ALTER FUNCTION memsub.audit_record(p_operation text, p_session_id text, p_task_id bigint, p_memory_entry_id uuid, p_namespace text, p_key text, p_version integer, p_details jsonb, p_agent_id uuid, p_tenant_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.audit_record(p_operation text, p_session_id text, p_task_id bigint, p_memory_entry_id uuid, p_namespace text, p_key text, p_version integer, p_details jsonb, p_agent_id uuid, p_tenant_id uuid) IS 'Internal: appends one audit row for the current context (tenant, org, user, acting agent and task). p_tenant_id: the context tenant when the caller has already checked it (memsub._require_tenant_id), which spares a second check of the context''s seal; the tenant policy of memsub.audit checks the row''s tenant either way. Called by the SECURITY DEFINER write functions; not granted to clients.';

CREATE FUNCTION memsub.authenticate_api_key(p_api_key text) RETURNS TABLE(key_id text, tenant_id uuid, org_id uuid, user_id uuid, roles text[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
declare
    found_key record;
    requested text;
begin
    if p_api_key is null or p_api_key !~ '^msk_[0-9a-f]{16}_[0-9a-f]+$' or length(p_api_key) <> 85 then
        raise exception 'memsub.authenticate_api_key: not an API key (msk_<16 hex>_<64 hex>)'
            using errcode = '28000', column = 'api_key';
    end if;
    select l.* into found_key
      from memsub._api_key_lookup(pg_catalog.substr(p_api_key, 5, 16),
                                 pg_catalog.sha256(pg_catalog.convert_to(p_api_key, 'UTF8'))) l;
    if found_key is null then
        raise exception 'memsub.authenticate_api_key: unknown, revoked or expired API key'
            using errcode = '28000', column = 'api_key';
    end if;
    foreach requested in array found_key.roles loop
        if not pg_catalog.pg_has_role(session_user, 'memsub_' || requested, 'MEMBER') then
            raise exception 'memsub.authenticate_api_key: the key''s role % requires membership of login % in memsub_%',
                            requested, session_user, requested
                using errcode = '42501', column = 'roles';
        end if;
    end loop;
    perform memsub.store_context(found_key.tenant_id, found_key.org_id, found_key.user_id, found_key.roles, null);
    return query select found_key.key_id, found_key.tenant_id, found_key.org_id, found_key.user_id, found_key.roles;
end
$_$;

ALTER FUNCTION memsub.authenticate_api_key(p_api_key text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.authenticate_api_key(p_api_key text) IS 'Verifies an API key (sha256 against memsub.api_keys; not revoked, not expired) and seals the context of its tenant, organization, user and roles in this transaction, like memsub.set_context_signed: no login binding needed, and one transaction acts for one tenant. 28000 (column api_key) for a malformed, unknown, revoked or expired key; 42501 (roles) when the login lacks a key role''s memsub role. Returns the key''s binding.';

CREATE FUNCTION memsub.base64url_decode(p_text text, p_field text) RETURNS bytea
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
begin
    if p_text is null or p_text = '' or p_text !~ '^[A-Za-z0-9_-]+$' or length(p_text) % 4 = 1 then
        raise exception 'memsub.set_context_signed: % is not base64url', p_field
            using errcode = '22023', column = p_field;
    end if;
    return decode(rpad(translate(p_text, '-_', '+/'), (length(p_text) + 3) / 4 * 4, '='), 'base64');
end
$_$;

ALTER FUNCTION memsub.base64url_decode(p_text text, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.base64url_decode(p_text text, p_field text) IS 'Decodes unpadded base64url (RFC 4648 section 5); SQLSTATE 22023 naming the field when malformed.';

CREATE FUNCTION memsub.bind_login(p_login name, p_tenant_id uuid, p_org_id uuid DEFAULT NULL::uuid) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    perform memsub.require_login(p_login);
    if p_tenant_id is null then
        raise exception 'memsub.bind_login: tenant_id must not be null (memsub.trust_login binds to every tenant)'
            using errcode = '22004', column = 'tenant_id';
    end if;
    return memsub._add_login_binding(p_login, p_tenant_id, p_org_id);
end
$$;

ALTER FUNCTION memsub.bind_login(p_login name, p_tenant_id uuid, p_org_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.bind_login(p_login name, p_tenant_id uuid, p_org_id uuid) IS 'Lets a login act for a tenant (org NULL: any organization of it; else that organization only). Platform admins only. True when the binding is new.';

CREATE FUNCTION memsub.canonical_uuid_text(p_value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
    select case when p_value ~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$'
                then p_value::uuid::text end
$_$;

ALTER FUNCTION memsub.canonical_uuid_text(p_value text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.canonical_uuid_text(p_value text) IS 'Canonical text form of a UUID string, or NULL when the string is not a UUID.';

CREATE FUNCTION memsub.check_document_chunks(p_chunks jsonb, p_text text) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $_$
declare
    v_chunk    jsonb;
    v_position integer;
    v_field    text;
    v_key      text;
    v_start    integer;
    v_end      integer;
    v_expected integer := 0;
begin
    if p_chunks is null or jsonb_typeof(p_chunks) <> 'array' then
        raise exception 'field "chunks" must be a JSON array of {start_char, end_char, page?, embedding?}'
            using errcode = '22023', column = 'chunks';
    end if;
    for v_chunk, v_position in select c, n - 1 from jsonb_array_elements(p_chunks) with ordinality as a(c, n) loop
        v_field := format('chunks[%s]', v_position);
        perform memsub._check_object_keys(v_chunk, v_field, array['start_char', 'end_char', 'page', 'embedding'],
                                          '{start_char, end_char, page?, embedding?}', 'a chunk');
        foreach v_key in array array['start_char', 'end_char', 'page'] loop
            if v_chunk ? v_key and jsonb_typeof(v_chunk -> v_key) <> 'null'
               and (jsonb_typeof(v_chunk -> v_key) <> 'number' or (v_chunk ->> v_key) !~ '^\d{1,9}$') then
                raise exception 'field "%.%" must be a non-negative integer', v_field, v_key
                    using errcode = '22023', column = v_field || '.' || v_key;
            end if;
        end loop;
        v_start := (v_chunk ->> 'start_char')::integer;
        v_end := (v_chunk ->> 'end_char')::integer;
        if v_start is distinct from v_expected then
            raise exception 'field "%.start_char" must be %: chunks are contiguous and cover the text from offset 0',
                v_field, v_expected
                using errcode = '22023', column = v_field || '.start_char';
        end if;
        if v_end is null or v_end <= v_start or v_end > length(p_text) then
            raise exception 'field "%.end_char" must be after start_char (%) and at most the text length (%)',
                v_field, v_start, length(p_text)
                using errcode = '22023', column = v_field || '.end_char';
        end if;
        if (v_chunk ->> 'page')::integer = 0 then
            raise exception 'field "%.page" counts from 1', v_field using errcode = '22023', column = v_field || '.page';
        end if;
        perform memsub._json_vector(v_chunk -> 'embedding', v_field || '.embedding');
        v_expected := v_end;
    end loop;
    if v_expected <> length(p_text) then
        raise exception 'field "chunks" covers the text up to offset %, not its length %', v_expected, length(p_text)
            using errcode = '22023', column = 'chunks';
    end if;
    return jsonb_array_length(p_chunks);
end
$_$;

ALTER FUNCTION memsub.check_document_chunks(p_chunks jsonb, p_text text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.check_document_chunks(p_chunks jsonb, p_text text) IS 'Internal: checks that chunks are contiguous spans {start_char, end_char, page?, embedding?} covering the text exactly, with vectors of the installation''s dimension; raises 22023 naming the element. Returns the count.';

CREATE FUNCTION memsub.check_memory_address(p_namespace text, p_key text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
begin
    if p_namespace is null then
        raise exception 'namespace is required' using errcode = '23502', column = 'namespace';
    end if;
    if p_namespace ~ '^temp(:|$)' then
        raise exception 'namespace "%": temp: keys are never persisted to memory_entries; keep them in the session state',
            p_namespace
            using errcode = '22023', column = 'namespace';
    end if;
    if p_namespace !~ '^(project|app|user|session):[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*$' or length(p_namespace) > 512 then
        raise exception 'namespace "%" must look like project:<id>, app:<name>, user:<user id> or session:<session id>, optionally followed by :<part> segments (letters, digits, _ . -)',
            p_namespace
            using errcode = '22023', column = 'namespace';
    end if;
    if p_key is null then
        raise exception 'key is required' using errcode = '23502', column = 'key';
    end if;
    -- + and a length test, not a counted repetition: PostgreSQL makes a regular-expression state per counted one.
    if p_key !~ '^[^:[:space:]][^:]*$' or length(p_key) > 256 then
        raise exception 'key "%" must be 1 to 256 characters, without ":" and not starting with a space', p_key
            using errcode = '22023', column = 'key';
    end if;
end
$_$;

ALTER FUNCTION memsub.check_memory_address(p_namespace text, p_key text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.check_memory_address(p_namespace text, p_key text) IS 'Internal: validates a memory namespace and key (22023/23502 naming namespace or key; temp: is rejected).';

CREATE FUNCTION memsub.check_state_delta(p_session memsub.sessions, p_delta jsonb, p_field text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
declare
    v_key   text;
    v_kind  text;
    v_parts text[];
begin
    if p_delta is null or jsonb_typeof(p_delta) <> 'object' then
        raise exception '% must be a JSON object of namespaced keys', p_field
            using errcode = '22023', column = p_field;
    end if;
    for v_key in select k from jsonb_object_keys(p_delta) as k order by k loop
        v_parts := string_to_array(v_key, ':');
        v_kind := v_parts[1];
        if v_kind in ('app', 'project') then
            raise exception '% key "%": sessions write temp:, session: and user: keys only; % memory needs an elevated role (memsub.memory_write as tenant_admin)',
                p_field, v_key, v_kind
                using errcode = '42501', column = p_field;
        end if;
        if v_kind not in ('temp', 'session', 'user')
           or v_key !~ '^(temp|(session|user):[A-Za-z0-9_.-]+)(:[A-Za-z0-9_.-]+)*:[^:[:space:]][^:]*$'
           or length(v_parts[cardinality(v_parts)]) > 256 then
            raise exception '% key "%" is not a namespaced key (temp:<key>, session:<session id>:<key> or user:<user id>:<key>)',
                p_field, v_key
                using errcode = '22023', column = p_field;
        end if;
        if v_kind = 'session' and v_parts[2] <> p_session.id then
            raise exception '% key "%" belongs to another session than "%"', p_field, v_key, p_session.id
                using errcode = '42501', column = p_field;
        end if;
        if v_kind = 'user' and v_parts[2] is distinct from p_session.user_id::text then
            raise exception '% key "%" belongs to another user than the session''s (%)', p_field, v_key,
                coalesce(p_session.user_id::text, 'none')
                using errcode = '42501', column = p_field;
        end if;
    end loop;
end
$_$;

ALTER FUNCTION memsub.check_state_delta(p_session memsub.sessions, p_delta jsonb, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.check_state_delta(p_session memsub.sessions, p_delta jsonb, p_field text) IS 'Internal: checks that every key of a state delta is a temp:, session:<this session>: or user:<session user>: key (22023 for a malformed key, 42501 for another session''s or user''s key or an app:/project: key).';

CREATE TABLE memsub.checkpoints (
    tenant_id uuid NOT NULL,
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid,
    user_id uuid,
    task_id bigint NOT NULL,
    session_id text,
    sequence integer NOT NULL,
    label text,
    state jsonb NOT NULL,
    session_state jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT checkpoints_sequence_positive CHECK ((sequence >= 1))
);

ALTER TABLE ONLY memsub.checkpoints FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.checkpoints OWNER TO memsub_owner;

COMMENT ON TABLE memsub.checkpoints IS 'Checkpoints (seed 001): saved task state, linked to its task and session, restorable.';

COMMENT ON COLUMN memsub.checkpoints.tenant_id IS 'Tenant owning the checkpoint.';

COMMENT ON COLUMN memsub.checkpoints.id IS 'Checkpoint identifier.';

COMMENT ON COLUMN memsub.checkpoints.org_id IS 'Organization of the writer (NULL: tenant-wide).';

COMMENT ON COLUMN memsub.checkpoints.user_id IS 'User who saved the checkpoint.';

COMMENT ON COLUMN memsub.checkpoints.task_id IS 'Task whose state was saved.';

COMMENT ON COLUMN memsub.checkpoints.session_id IS 'Session of the task when saved (NULL if none or deleted).';

COMMENT ON COLUMN memsub.checkpoints.sequence IS 'Per-task checkpoint number: 1, 2, 3, ...';

COMMENT ON COLUMN memsub.checkpoints.label IS 'Optional human label.';

COMMENT ON COLUMN memsub.checkpoints.state IS 'Saved task state (JSON).';

COMMENT ON COLUMN memsub.checkpoints.session_state IS 'The session''s state when the checkpoint was saved; restored into the session by memsub.checkpoint_restore.';

COMMENT ON COLUMN memsub.checkpoints.created_at IS 'When the checkpoint was saved.';

CREATE FUNCTION memsub.checkpoint_restore(p_checkpoint_id uuid) RETURNS memsub.checkpoints
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_checkpoint memsub.checkpoints;
    v_restored   boolean := false;
begin
    select c.* into v_checkpoint from memsub.checkpoints c where c.tenant_id = v_tenant and c.id = p_checkpoint_id;
    if not found then
        raise exception 'checkpoint % does not exist or is not visible', p_checkpoint_id
            using errcode = 'P0002', column = 'checkpoint_id';
    end if;
    if v_checkpoint.session_id is not null and v_checkpoint.session_state is not null then
        update memsub.sessions s set state = v_checkpoint.session_state, updated_at = now()
         where s.tenant_id = v_tenant and s.id = v_checkpoint.session_id and s.status = 'active';
        v_restored := found;
    end if;
    perform memsub.audit_record('checkpoint_restore', p_session_id => v_checkpoint.session_id,
        p_tenant_id => v_checkpoint.tenant_id,
        p_task_id => v_checkpoint.task_id,
        p_details => jsonb_build_object('checkpoint_id', v_checkpoint.id, 'sequence', v_checkpoint.sequence,
                                        'session_state_restored', v_restored));
    return v_checkpoint;
end
$$;

ALTER FUNCTION memsub.checkpoint_restore(p_checkpoint_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.checkpoint_restore(p_checkpoint_id uuid) IS 'Restores a checkpoint: returns it (its state is the task state to resume from) and puts its saved session state back into the session if that session is still active. Audited as checkpoint_restore.';

CREATE FUNCTION memsub.checkpoint_save(p_task_id bigint, p_state jsonb, p_label text DEFAULT NULL::text) RETURNS memsub.checkpoints
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_task       memsub.tasks;
    v_session    memsub.sessions;
    v_checkpoint memsub.checkpoints;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_limit(pg_column_size(p_state), 'max_json_bytes', 'state'),
            memsub._check_text_limits('label', p_label);
    if p_state is null then
        raise exception 'checkpoint state is required' using errcode = '23502', column = 'state';
    end if;
    -- Locking the task serializes the checkpoints of one task, so sequences are dense.
    v_task := memsub._task_lookup(p_task_id, true, '23503');
    if v_task.session_id is not null then
        select s.* into v_session from memsub.sessions s
         where s.tenant_id = v_tenant and s.id = v_task.session_id;
    end if;
    insert into memsub.checkpoints as c (tenant_id, org_id, user_id, task_id, session_id, sequence, label, state,
                                         session_state)
    values (v_tenant, memsub.current_org_id(), memsub.current_user_id(), p_task_id, v_session.id,
            coalesce((select max(c2.sequence) from memsub.checkpoints c2
                       where c2.tenant_id = v_tenant and c2.task_id = p_task_id), 0) + 1,
            p_label, p_state, v_session.state)
    returning c.* into v_checkpoint;
    perform memsub.audit_record('checkpoint_save', p_session_id => v_checkpoint.session_id, p_task_id => p_task_id,
        p_tenant_id => v_checkpoint.tenant_id,
        p_details => jsonb_build_object('checkpoint_id', v_checkpoint.id, 'sequence', v_checkpoint.sequence,
                                        'label', p_label));
    return v_checkpoint;
end
$$;

ALTER FUNCTION memsub.checkpoint_save(p_task_id bigint, p_state jsonb, p_label text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.checkpoint_save(p_task_id bigint, p_state jsonb, p_label text) IS 'Saves a checkpoint of a task: the given state plus a copy of its session''s state, numbered 1, 2, ... per task. Audited as checkpoint_save.';

CREATE FUNCTION memsub.graph_node_types() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['Entity', 'Episode', 'Document', 'Memory']::text[] $$;

ALTER FUNCTION memsub.graph_node_types() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.graph_node_types() IS 'What an edge of the temporal graph can join (entity_relationships.source_type and target_type): an Entity by name, an Episode (a session id), a Document (a document id) or a Memory (a memory entry id).';

CREATE TABLE memsub.entity_relationships (
    relationship_id uuid DEFAULT gen_random_uuid() NOT NULL,
    source_entity text NOT NULL,
    relationship_type text NOT NULL,
    target_entity text NOT NULL,
    confidence double precision DEFAULT 0.5 NOT NULL,
    source_packet uuid,
    mention_count integer DEFAULT 1 NOT NULL,
    first_seen timestamp with time zone DEFAULT now() NOT NULL,
    last_seen timestamp with time zone DEFAULT now() NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    valid_period tstzrange DEFAULT tstzrange(now(), NULL::timestamp with time zone, '[)'::text) NOT NULL,
    evidence jsonb DEFAULT '[]'::jsonb NOT NULL,
    source_type text DEFAULT 'Entity'::text NOT NULL,
    target_type text DEFAULT 'Entity'::text NOT NULL,
    source_key text GENERATED ALWAYS AS (lower(regexp_replace(btrim(source_entity), '\s+'::text, ' '::text, 'g'::text))) STORED,
    target_key text GENERATED ALWAYS AS (lower(regexp_replace(btrim(target_entity), '\s+'::text, ' '::text, 'g'::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT entity_relationships_confidence_in_unit_range CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT entity_relationships_evidence_is_array CHECK ((jsonb_typeof(evidence) = 'array'::text)),
    CONSTRAINT entity_relationships_mention_count_positive CHECK ((mention_count >= 1)),
    CONSTRAINT entity_relationships_names_not_blank CHECK (((length(source_entity) > 0) AND (length(relationship_type) > 0) AND (length(target_entity) > 0))),
    CONSTRAINT entity_relationships_node_types_known CHECK (((source_type = ANY (memsub.graph_node_types())) AND (target_type = ANY (memsub.graph_node_types())))),
    CONSTRAINT entity_relationships_seen_in_order CHECK ((last_seen >= first_seen)),
    CONSTRAINT entity_relationships_valid_period_bounded_below CHECK (((NOT lower_inf(valid_period)) AND (NOT isempty(valid_period))))
);

ALTER TABLE ONLY memsub.entity_relationships FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.entity_relationships OWNER TO memsub_owner;

COMMENT ON TABLE memsub.entity_relationships IS 'Knowledge-graph edges, tenant-wide, with validity windows (seed 003 Edge): one row per window of (source, type, target), never overlapping; the open window is the current edge, reinforced by memsub.upsert_relationship; superseding closes it.';

COMMENT ON COLUMN memsub.entity_relationships.relationship_id IS 'Unique relationship identifier.';

COMMENT ON COLUMN memsub.entity_relationships.source_entity IS 'Source entity name (trimmed, single spaces).';

COMMENT ON COLUMN memsub.entity_relationships.relationship_type IS 'Relationship type, a verb (trimmed, lower case, single spaces).';

COMMENT ON COLUMN memsub.entity_relationships.target_entity IS 'Target entity name (trimmed, single spaces).';

COMMENT ON COLUMN memsub.entity_relationships.confidence IS 'Combined confidence in [0, 1]: 1 - product of (1 - each observation''s confidence).';

COMMENT ON COLUMN memsub.entity_relationships.source_packet IS 'Packet of the first observation (NULL when given directly or purged).';

COMMENT ON COLUMN memsub.entity_relationships.mention_count IS 'Times the relationship was observed.';

COMMENT ON COLUMN memsub.entity_relationships.first_seen IS 'First observation.';

COMMENT ON COLUMN memsub.entity_relationships.last_seen IS 'Most recent observation.';

COMMENT ON COLUMN memsub.entity_relationships.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.entity_relationships.org_id IS 'Organization of the first observer (edges are tenant-wide).';

COMMENT ON COLUMN memsub.entity_relationships.user_id IS 'User of the first observer.';

COMMENT ON COLUMN memsub.entity_relationships.correlation_id IS 'Request correlation identifier (from the source packet).';

COMMENT ON COLUMN memsub.entity_relationships.session_id IS 'Session of the first observer.';

COMMENT ON COLUMN memsub.entity_relationships.trace_id IS 'Distributed tracing identifier (from the source packet).';

COMMENT ON COLUMN memsub.entity_relationships.valid_period IS 'When the relationship holds: [valid from, valid until); open-ended (upper bound NULL) while current.';

COMMENT ON COLUMN memsub.entity_relationships.evidence IS 'DocRefs supporting the edge: a JSON array of {doc_id, chunk_id, score}.';

COMMENT ON COLUMN memsub.entity_relationships.source_type IS 'Node type of the source, one of memsub.graph_node_types(): Entity (by name), Episode (session id), Document (document id) or Memory (memory entry id).';

COMMENT ON COLUMN memsub.entity_relationships.target_type IS 'Node type of the target (as source_type).';

COMMENT ON COLUMN memsub.entity_relationships.source_key IS 'Matching form of source_entity (memsub.normalize_text): edges and lookups compare these.';

COMMENT ON COLUMN memsub.entity_relationships.target_key IS 'Matching form of target_entity (memsub.normalize_text).';

COMMENT ON COLUMN memsub.entity_relationships.ttl IS 'Expiration time (UTC): the latest ttl of the packets that observed the edge window, NULL (never) once one observation came without an expiring packet. An expired window is never read and purge_expired() deletes it.';

CREATE FUNCTION memsub.close_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_until timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS memsub.entity_relationships
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_source text := memsub._require_text(p_source_entity, 'source_entity');
    v_type   text := memsub.normalize_text(memsub._require_text(p_relationship_type, 'relationship_type'));
    v_target text := memsub._require_text(p_target_entity, 'target_entity');
    v_until  timestamptz := coalesce(p_valid_until, now());
    v_edge   memsub.entity_relationships;
    v_source_keys text[];
    v_target_keys text[];
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('source_entity', p_source_entity, 'relationship_type', p_relationship_type,
                                      'target_entity', p_target_entity);
    perform memsub._check_finite_time(p_valid_until, 'valid_until');
    -- Each end looked up once, here: inside the query below, a filter would look it up again for every edge read.
    v_source_keys := memsub._entity_keys(v_source);
    v_target_keys := memsub._entity_keys(v_target);
    select r.* into v_edge from memsub.entity_relationships r
     where r.tenant_id = v_tenant and r.source_key = any(v_source_keys) and r.relationship_type = v_type
       and r.target_key = any(v_target_keys) and upper_inf(r.valid_period)
     order by r.relationship_id
     limit 1
       for update;
    if not found then
        raise exception 'edge (%)-[%]->(%) has no current window to close', v_source, v_type, v_target
            using errcode = 'P0002', column = 'relationship_type';
    end if;
    if v_until <= lower(v_edge.valid_period) then
        raise exception 'field "valid_until" (%) must be after the window''s start (%)', v_until, lower(v_edge.valid_period)
            using errcode = '22023', column = 'valid_until';
    end if;
    update memsub.entity_relationships r set valid_period = tstzrange(lower(r.valid_period), v_until, '[)')
     where r.tenant_id = v_tenant and r.relationship_id = v_edge.relationship_id
    returning r.* into v_edge;
    return v_edge;
end
$$;

ALTER FUNCTION memsub.close_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_until timestamp with time zone) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.close_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_until timestamp with time zone) IS 'Ends the current window of an edge at valid_until (default now): the relationship no longer holds from then on. P0002 when the edge has no current window.';

CREATE FUNCTION memsub.combined_score(p_distance double precision, p_importance double precision, p_last_active timestamp with time zone, p_similarity_weight double precision DEFAULT 0.7, p_importance_weight double precision DEFAULT 0.2, p_recency_weight double precision DEFAULT 0.1, p_half_life interval DEFAULT '30 days'::interval) RETURNS double precision
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    -- One comparison per argument on the common path; the checks (which name the field) only for a bad value.
    if p_distance in ('NaN', 'Infinity', '-Infinity') or p_importance in ('NaN', 'Infinity', '-Infinity')
       or p_similarity_weight in ('NaN', 'Infinity', '-Infinity')
       or p_importance_weight in ('NaN', 'Infinity', '-Infinity')
       or p_recency_weight in ('NaN', 'Infinity', '-Infinity')
       or not isfinite(p_last_active) or not isfinite(p_half_life) or p_half_life < interval '1 second' then
        perform memsub._check_finite(p_distance, 'distance'), memsub._check_finite(p_importance, 'importance'),
                memsub._check_finite_time(p_last_active, 'last_active'),
                memsub._check_finite(p_similarity_weight, 'similarity_weight'),
                memsub._check_finite(p_importance_weight, 'importance_weight'),
                memsub._check_finite(p_recency_weight, 'recency_weight'),
                memsub._check_half_life(p_half_life);
    end if;
    -- In double precision throughout (date_part): extract() returns numeric, which made the power and the division
    -- numeric, about 10 µs a call, and searches compute this for every hit (tests/search/test_score_arithmetic.py).
    return p_similarity_weight * greatest(0.0, 1.0 - p_distance / 2.0)
         + p_importance_weight * coalesce(p_importance, 0.5)
         + p_recency_weight * power(0.5, greatest(0.0, date_part('epoch', now() - coalesce(p_last_active, now())))
                                          / greatest(1.0, date_part('epoch', p_half_life)));
end
$$;

ALTER FUNCTION memsub.combined_score(p_distance double precision, p_importance double precision, p_last_active timestamp with time zone, p_similarity_weight double precision, p_importance_weight double precision, p_recency_weight double precision, p_half_life interval) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.combined_score(p_distance double precision, p_importance double precision, p_last_active timestamp with time zone, p_similarity_weight double precision, p_importance_weight double precision, p_recency_weight double precision, p_half_life interval) IS 'Ranking score in [0, 1] with the default weights: 0.7 similarity (1 - cosine distance / 2) + 0.2 importance + 0.1 recency (0.5 ^ (time since last access or write / half_life), half-life 30 days).';

CREATE FUNCTION memsub.consolidate_memories(p_strategy text DEFAULT 'last_write_wins'::text, p_namespace_prefix text DEFAULT NULL::text) RETURNS TABLE(namespace text, key text, version integer, memory_entry_id uuid, consolidated_versions integer[], strategy text, outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_function regprocedure;
    v_conflict record;
    v_versions jsonb;
    v_value    jsonb;
    v_row      memsub.memory_entries;
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
    if p_namespace_prefix is not null and p_namespace_prefix !~ '^[a-z]+(:[A-Za-z0-9_.-]+)*$' then
        raise exception 'namespace prefix "%" must look like kind[:segment...]', p_namespace_prefix
            using errcode = '22023', column = 'namespace';
    end if;
    -- One consolidation job per tenant at a time.
    perform memsub.take_maintenance_lock('consolidate_memories', v_tenant::text);

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
        begin
            v_row := memsub.store_memory_version(
                v_conflict.namespace, v_conflict.key, v_value, v_conflict.memory_type,
                jsonb_build_object('consolidated_from', to_jsonb(v_conflict.ids), 'strategy', p_strategy),
                null, false, false, 'memory_consolidate',
                jsonb_build_object('strategy', p_strategy, 'consolidated_versions', to_jsonb(v_conflict.versions)));
        exception when serialization_failure then
            -- A writer committed a newer version meanwhile: leave this key for the next run.
            return query select v_conflict.namespace, v_conflict.key, null::integer, null::uuid,
                                v_conflict.versions, p_strategy, 'skipped'::text;
            continue;
        end;
        update memsub.memory_entries m
           set metadata = m.metadata || jsonb_build_object('consolidated_into', v_row.id,
                                                           'consolidated_at', now(), 'strategy', p_strategy)
         where m.tenant_id = v_tenant and m.id = any(v_conflict.ids);
        return query select v_conflict.namespace, v_conflict.key, v_row.version, v_row.id,
                            v_conflict.versions, p_strategy, 'consolidated'::text;
    end loop;
end
$_$;

ALTER FUNCTION memsub.consolidate_memories(p_strategy text, p_namespace_prefix text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.consolidate_memories(p_strategy text, p_namespace_prefix text) IS 'Consolidation job (seed 001 section 4.3; tenant_admin or platform_admin): for every key with more than one live unconsolidated version (optionally under a namespace prefix), applies the strategy memsub.consolidation_<strategy>(jsonb) (built in: last_write_wins, merge_objects), writes the result as a new version, marks the old versions consolidated_into it and audits memory_consolidate. One run per tenant at a time; a key written concurrently is reported skipped.';

CREATE FUNCTION memsub.consolidation_last_write_wins(p_versions jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select p_versions -> -1 -> 'value' $$;

ALTER FUNCTION memsub.consolidation_last_write_wins(p_versions jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.consolidation_last_write_wins(p_versions jsonb) IS 'Consolidation strategy last_write_wins: the value of the newest version.';

CREATE FUNCTION memsub.consolidation_merge_objects(p_versions jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub.consolidation_merge_objects(p_versions jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.consolidation_merge_objects(p_versions jsonb) IS 'Consolidation strategy merge_objects: shallow merge of object values, oldest first (newer fields win); falls back to last_write_wins when a value is not an object.';

CREATE FUNCTION memsub.context_mac(p_key_id text, p_message text) RETURNS bytea
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select sha256(k.outer_pad || sha256(k.inner_pad || convert_to(p_message, 'UTF8')))
      from memsub.context_keys k where k.key_id = p_key_id
$$;

ALTER FUNCTION memsub.context_mac(p_key_id text, p_message text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.context_mac(p_key_id text, p_message text) IS 'HMAC-SHA256 of a message under a stored context key; NULL when the key does not exist. Granted to nobody: only memsub''s SECURITY DEFINER context functions may compute MACs.';

CREATE FUNCTION memsub.context_roles() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['tenant_admin', 'platform_admin']::text[] $$;

ALTER FUNCTION memsub.context_roles() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.context_roles() IS 'The roles a context may ask for (memsub.set_context p_roles, signed context tokens, API keys); each needs membership in the database role memsub_<role>.';

CREATE FUNCTION memsub.count_packet_chunks() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    -- Most inserts add only whole-content vectors (chunk_index 0): one look at the added rows settles them,
    -- without starting the update.
    if not exists (select from added a where a.chunk_index >= 1) then
        return null;
    end if;
    update memsub.packet_store p
       set chunk_count = greatest(p.chunk_count, n.chunks), is_chunked = true
      from (select a.tenant_id, a.packet_id, max(a.chunk_index) as chunks
              from added a where a.chunk_index >= 1 group by a.tenant_id, a.packet_id) n
     where p.tenant_id = n.tenant_id and p.packet_id = n.packet_id and p.chunk_count < n.chunks;
    return null;
end
$$;

ALTER FUNCTION memsub.count_packet_chunks() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.count_packet_chunks() IS 'Trigger: raises packet_store.chunk_count to the highest chunk_index of the chunk vectors just added to a packet and sets is_chunked.';

CREATE FUNCTION memsub.create_api_key(p_tenant_id uuid, p_org_id uuid DEFAULT NULL::uuid, p_user_id uuid DEFAULT NULL::uuid, p_roles text[] DEFAULT '{}'::text[], p_label text DEFAULT ''::text, p_expires_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(key_id text, api_key text, tenant_id uuid, org_id uuid, user_id uuid, roles text[], label text, expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_key_id text := pg_catalog.substr(pg_catalog.md5(pg_catalog.gen_random_uuid()::text), 1, 16);
    v_key    text;
    v_roles  text[];
    requested text;
begin
    if p_tenant_id is null then
        raise exception 'memsub.create_api_key: tenant_id must not be null'
            using errcode = '22004', column = 'tenant_id';
    end if;
    perform memsub._require_key_admin(p_tenant_id);
    if p_roles is null or pg_catalog.array_position(p_roles, null) is not null then
        raise exception 'memsub.create_api_key: roles must be an array of role names'
            using errcode = '22023', column = 'roles';
    end if;
    foreach requested in array p_roles loop
        perform memsub._check_context_role(requested, 'memsub.create_api_key');
        if requested = 'platform_admin' and not memsub.is_platform_admin() then
            raise exception 'memsub.create_api_key: only a platform_admin context may create a platform_admin key'
                using errcode = '42501', column = 'roles';
        end if;
    end loop;
    if p_label is null then
        raise exception 'memsub.create_api_key: label must not be null'
            using errcode = '22004', column = 'label';
    end if;
    perform memsub._check_text_limits('label', p_label);
    perform memsub._check_finite_time(p_expires_at, 'expires_at');
    if p_expires_at <= pg_catalog.statement_timestamp() then
        raise exception 'memsub.create_api_key: expires_at must be in the future, not %', p_expires_at
            using errcode = '22023', column = 'expires_at';
    end if;
    v_key := 'msk_' || v_key_id || '_'
             || pg_catalog.encode(pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
                                  || pg_catalog.uuid_send(pg_catalog.gen_random_uuid()), 'hex');
    v_roles := (select coalesce(array_agg(distinct r order by r), '{}') from pg_catalog.unnest(p_roles) r);
    insert into memsub.api_keys as k (tenant_id, key_id, key_hash, org_id, user_id, roles, label, expires_at)
    values (p_tenant_id, v_key_id, pg_catalog.sha256(pg_catalog.convert_to(v_key, 'UTF8')), p_org_id, p_user_id,
            v_roles, p_label, p_expires_at);
    return query select v_key_id, v_key, p_tenant_id, p_org_id, p_user_id, v_roles, p_label, p_expires_at;
end
$$;

ALTER FUNCTION memsub.create_api_key(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_label text, p_expires_at timestamp with time zone) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.create_api_key(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_label text, p_expires_at timestamp with time zone) IS 'Creates an API key acting for a tenant (and optionally an organization, a user, context roles) and returns it once as api_key; only its sha256 is kept. A platform_admin context: any tenant and roles; a tenant_admin context: its own tenant, roles tenant_admin at most (42501 otherwise).';

CREATE FUNCTION memsub.current_agent_id() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select nullif(current_setting('memsub.agent_id', true), '')::uuid $$;

ALTER FUNCTION memsub.current_agent_id() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.current_agent_id() IS 'Acting agent of the current transaction (memsub.set_actor), or NULL.';

CREATE FUNCTION memsub.current_context_roles() RETURNS text[]
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select coalesce(string_to_array(nullif(current_setting('memsub.roles', true), ''), ','), '{}') $$;

ALTER FUNCTION memsub.current_context_roles() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.current_context_roles() IS 'Context roles requested by memsub.set_context() (tenant_admin, platform_admin).';

CREATE FUNCTION memsub.current_org_id() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select nullif(current_setting('memsub.org_id', true), '')::uuid $$;

ALTER FUNCTION memsub.current_org_id() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.current_org_id() IS 'Organization of the current context, or NULL.';

CREATE FUNCTION memsub.current_session_id() RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select nullif(current_setting('memsub.session_id', true), '') $$;

ALTER FUNCTION memsub.current_session_id() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.current_session_id() IS 'Session of the current context, or NULL.';

CREATE FUNCTION memsub.current_task_id() RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select nullif(current_setting('memsub.task_id', true), '')::bigint $$;

ALTER FUNCTION memsub.current_task_id() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.current_task_id() IS 'Acting task of the current transaction (memsub.set_actor), or NULL.';

CREATE FUNCTION memsub.current_tenant_id() RETURNS uuid
    LANGUAGE plpgsql STABLE SECURITY DEFINER PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant text := nullif(pg_catalog.current_setting('memsub.tenant_id', true), '');
    seal_key record;
begin
    if tenant is null then
        return null;
    end if;
    -- The seal memsub.set_context or memsub.store_context (015_identity_binding.sql) wrote, recomputed with the
    -- same expression.
    select k.inner_pad, k.outer_pad into seal_key from memsub.context_keys k where k.key_id = 'seal';
    if pg_catalog.current_setting('memsub.context_seal', true) is distinct from
       pg_catalog.encode(pg_catalog.sha256(seal_key.outer_pad || pg_catalog.sha256(seal_key.inner_pad
           || pg_catalog.convert_to(pg_catalog.concat_ws('|', session_user,
                  extract(epoch from pg_catalog.transaction_timestamp()), pg_catalog.quote_nullable(tenant),
                  pg_catalog.quote_nullable(pg_catalog.current_setting('memsub.org_id', true)),
                  pg_catalog.quote_nullable(pg_catalog.current_setting('memsub.user_id', true)),
                  pg_catalog.quote_nullable(pg_catalog.current_setting('memsub.session_id', true))), 'UTF8'))), 'hex') then
        raise exception 'memsub: the context was not set by memsub.set_context in this transaction (or was changed since)'
            using errcode = '42501', column = 'tenant_id',
                  hint = 'Set the context with memsub.set_context or memsub.set_context_signed, never with set_config or SET.';
    end if;
    return tenant::uuid;
end
$$;

ALTER FUNCTION memsub.current_tenant_id() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.current_tenant_id() IS 'Tenant of the current transaction''s context, or NULL when none is set. Raises 42501 when the tenant, org, user or session settings do not carry the seal memsub.set_context wrote in this transaction.';

CREATE FUNCTION memsub.current_user_id() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select nullif(current_setting('memsub.user_id', true), '')::uuid $$;

ALTER FUNCTION memsub.current_user_id() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.current_user_id() IS 'User of the current context, or NULL.';

CREATE FUNCTION memsub.derivation_types() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['split', 'merge', 'transform', 'inference']::text[] $$;

ALTER FUNCTION memsub.derivation_types() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.derivation_types() IS 'How a packet derives from its parents (the envelope field lineage.derivation_type).';

CREATE TABLE memsub.document_chunks (
    tenant_id uuid NOT NULL,
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    document_id uuid NOT NULL,
    chunk_index integer NOT NULL,
    content text NOT NULL,
    page integer,
    start_char integer NOT NULL,
    end_char integer NOT NULL,
    neighbors uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    content_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
    org_id uuid,
    user_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT document_chunks_chunk_index_positive CHECK ((chunk_index >= 1)),
    CONSTRAINT document_chunks_content_length CHECK ((length(content) = (end_char - start_char))),
    CONSTRAINT document_chunks_page_positive CHECK ((page >= 1)),
    CONSTRAINT document_chunks_span_valid CHECK (((start_char >= 0) AND (end_char > start_char)))
);

ALTER TABLE ONLY memsub.document_chunks FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.document_chunks OWNER TO memsub_owner;

COMMENT ON TABLE memsub.document_chunks IS 'Chunks of a document version (seed 003 Chunk): contiguous character spans that cover the extracted text, with full-text search and cross-document neighbours. The vector of chunk n is the memory_embeddings row (document packet, content, chunk_index n). Written by memsub.document_ingest.';

COMMENT ON COLUMN memsub.document_chunks.tenant_id IS 'Tenant owning the chunk.';

COMMENT ON COLUMN memsub.document_chunks.id IS 'Chunk identifier (seed 003 chunk_id, used in DocRefs).';

COMMENT ON COLUMN memsub.document_chunks.document_id IS 'Document version the chunk belongs to (document_index.id; seed 003 doc_id).';

COMMENT ON COLUMN memsub.document_chunks.chunk_index IS 'Position of the chunk in its document: 1, 2, 3, ... (memory_embeddings.chunk_index of its vector).';

COMMENT ON COLUMN memsub.document_chunks.content IS 'Chunk text: extracted_text from start_char to end_char.';

COMMENT ON COLUMN memsub.document_chunks.page IS 'Page of a paginated document (pdf), NULL otherwise.';

COMMENT ON COLUMN memsub.document_chunks.start_char IS 'Offset of the first character in the extracted text (0-based, inclusive).';

COMMENT ON COLUMN memsub.document_chunks.end_char IS 'Offset after the last character (exclusive); the next chunk starts here.';

COMMENT ON COLUMN memsub.document_chunks.neighbors IS 'Cross-document links: ids of the nearest chunks of other documents (by vector distance), both ways.';

COMMENT ON COLUMN memsub.document_chunks.content_tsv IS 'Full-text vector of the content (english configuration), GIN-indexed.';

COMMENT ON COLUMN memsub.document_chunks.org_id IS 'Organization of the document (NULL: whole tenant).';

COMMENT ON COLUMN memsub.document_chunks.user_id IS 'User who ingested the document.';

COMMENT ON COLUMN memsub.document_chunks.created_at IS 'When the chunk was stored.';

CREATE FUNCTION memsub.document_chunks_of(p_document_id uuid) RETURNS SETOF memsub.document_chunks
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select c.* from memsub.document_chunks c
     where c.tenant_id = (select memsub.current_tenant_id()) and c.document_id = p_document_id
     order by c.chunk_index
$$;

ALTER FUNCTION memsub.document_chunks_of(p_document_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.document_chunks_of(p_document_id uuid) IS 'The chunks of a document version, in order, if the caller may see them.';

CREATE FUNCTION memsub.document_chunks_without_embedding(p_document_id uuid) RETURNS SETOF memsub.document_chunks
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select c.* from memsub.document_chunks c
      join memsub.document_index d on d.tenant_id = c.tenant_id and d.id = c.document_id
     where c.tenant_id = (select memsub.current_tenant_id()) and c.document_id = p_document_id
       and not exists (select from memsub.memory_embeddings e
                        where e.tenant_id = d.tenant_id and e.packet_id = d.packet_id
                          and e.embedding_type = 'content' and e.chunk_index = c.chunk_index)
     order by c.chunk_index
$$;

ALTER FUNCTION memsub.document_chunks_without_embedding(p_document_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.document_chunks_without_embedding(p_document_id uuid) IS 'The chunks of a document version that carry no vector yet, in order (what memsub.document_embed_chunks fills).';

CREATE FUNCTION memsub.document_embed_chunks(p_document_id uuid, p_embeddings jsonb, p_neighbor_count integer DEFAULT 3, p_neighbor_max_distance double precision DEFAULT 0.5) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_document memsub.document_index;
    v_item     jsonb;
    v_position integer;
    v_embedded integer;
begin
    if p_document_id is null then
        raise exception 'field "document_id" is required' using errcode = '23502', column = 'document_id';
    end if;
    select d.* into v_document from memsub.document_index d
     where d.tenant_id = v_tenant and d.id = p_document_id;  -- row-level security decides visibility
    if not found or not v_document.is_latest or v_document.packet_id is null then
        raise exception 'field "document_id": % is not a visible latest document version', p_document_id
            using errcode = 'P0002', column = 'document_id';
    end if;
    if p_embeddings is null or jsonb_typeof(p_embeddings) <> 'array' then
        raise exception 'field "embeddings" must be a JSON array of {chunk_index, embedding}'
            using errcode = '22023', column = 'embeddings';
    end if;
    for v_item, v_position in select e, n - 1 from jsonb_array_elements(p_embeddings) with ordinality as a(e, n) loop
        if jsonb_typeof(v_item) <> 'object' or jsonb_typeof(v_item -> 'chunk_index') is distinct from 'number'
           or jsonb_typeof(v_item -> 'embedding') is distinct from 'array' then
            raise exception 'field "embeddings[%]" must be {"chunk_index": n, "embedding": [numbers]}', v_position
                using errcode = '22023', column = format('embeddings[%s]', v_position);
        end if;
        perform memsub._json_vector(v_item -> 'embedding', format('embeddings[%s].embedding', v_position));
        if not exists (select from memsub.document_chunks c where c.tenant_id = v_tenant
                          and c.document_id = p_document_id and c.chunk_index = (v_item ->> 'chunk_index')::integer) then
            raise exception 'field "embeddings[%].chunk_index": document % has no chunk %', v_position, p_document_id,
                v_item ->> 'chunk_index'
                using errcode = '22023', column = format('embeddings[%s].chunk_index', v_position);
        end if;
    end loop;

    -- Only chunks that carry no vector yet; the others keep theirs.
    insert into memsub.memory_embeddings (packet_id, embedding_type, vector, chunk_index, chunk_text, metadata, scope,
                                          tenant_id, org_id, user_id, session_id)
    select distinct on (c.chunk_index)
           v_document.packet_id, 'content', (a.e ->> 'embedding')::vector, c.chunk_index, c.content,
           jsonb_build_object('document_id', v_document.id, 'chunk_id', c.id, 'file_path', v_document.file_path,
                              'version', v_document.version),
           'shared', v_tenant, v_document.org_id, (select memsub.current_user_id()),
           (select memsub.current_session_id())
      from jsonb_array_elements(p_embeddings) as a(e)
      join memsub.document_chunks c on c.tenant_id = v_tenant and c.document_id = p_document_id
                                   and c.chunk_index = (a.e ->> 'chunk_index')::integer
     where not exists (select from memsub.memory_embeddings x
                        where x.tenant_id = v_tenant and x.packet_id = v_document.packet_id
                          and x.embedding_type = 'content' and x.chunk_index = c.chunk_index)
     order by c.chunk_index;
    get diagnostics v_embedded = row_count;

    if v_embedded > 0 then
        update memsub.document_index d
           set embedding = (select avg(e.vector) from memsub.memory_embeddings e
                             where e.tenant_id = v_tenant and e.packet_id = v_document.packet_id
                               and e.embedding_type = 'content' and e.chunk_index >= 1),
               updated_at = now()
         where d.tenant_id = v_tenant and d.id = p_document_id;
        if coalesce(p_neighbor_count, 0) > 0 then
            perform memsub.link_document_chunks(p_document_id, p_neighbor_count, p_neighbor_max_distance);
        end if;
    end if;
    perform memsub.audit_record('document_ingest',
        p_details => jsonb_build_object('document_id', p_document_id, 'file_path', v_document.file_path,
                                        'version', v_document.version, 'embedded', v_embedded));
    return v_embedded;
end
$$;

ALTER FUNCTION memsub.document_embed_chunks(p_document_id uuid, p_embeddings jsonb, p_neighbor_count integer, p_neighbor_max_distance double precision) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.document_embed_chunks(p_document_id uuid, p_embeddings jsonb, p_neighbor_count integer, p_neighbor_max_distance double precision) IS 'Adds vectors to the chunks of a latest document version that were stored without one (e.g. ingested without an embedder): embeddings [{chunk_index, embedding}]; chunks that already carry a vector keep it. Updates the document embedding (mean of its chunk vectors) and cross-document neighbours. Returns the number of vectors added. Audited as document_ingest.';

CREATE FUNCTION memsub.document_index_get(p_file_path text) RETURNS TABLE(id uuid, file_path text, embedding real[], metadata jsonb, created_at timestamp with time zone, updated_at timestamp with time zone)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
    select d.id, d.file_path, d.embedding::real[], d.metadata, d.created_at, d.updated_at
      from memsub.document_index d
     where d.tenant_id = memsub.current_tenant_id() and d.file_path = p_file_path and d.is_latest
$$;

ALTER FUNCTION memsub.document_index_get(p_file_path text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.document_index_get(p_file_path text) IS 'The latest version of a file path''s document index entry, if the caller may see it.';

CREATE FUNCTION memsub.document_index_put(p_file_path text, p_embedding double precision[] DEFAULT NULL::double precision[], p_metadata jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(id uuid, file_path text, embedding real[], metadata jsonb, created_at timestamp with time zone, updated_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_entry  memsub.document_index;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('file_path', p_file_path),
            memsub._check_limit(pg_column_size(p_metadata), 'max_json_bytes', 'metadata');
    if p_file_path is null or p_file_path !~ '\S' then
        raise exception 'file_path is required' using errcode = '22023', column = 'file_path';
    end if;
    if p_metadata is null or jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'metadata must be a JSON object' using errcode = '22023', column = 'metadata';
    end if;
    -- The same vector checks as every other vector: the installation's dimension, finite elements, a usable norm.
    v_entry.file_path := p_file_path;
    v_entry.embedding := memsub._float_array_vector(p_embedding, 'embedding');
    v_entry.metadata := p_metadata;
    v_entry := memsub._document_index_write(v_entry);
    perform memsub.audit_record('document_index_put',
        p_details => jsonb_build_object('document_index_id', v_entry.id, 'file_path', p_file_path,
                                        'dimensions', cardinality(p_embedding)));
    return query select v_entry.id, v_entry.file_path, v_entry.embedding::real[], v_entry.metadata,
                        v_entry.created_at, v_entry.updated_at;
end
$$;

ALTER FUNCTION memsub.document_index_put(p_file_path text, p_embedding double precision[], p_metadata jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.document_index_put(p_file_path text, p_embedding double precision[], p_metadata jsonb) IS 'Indexes a file path (or replaces the embedding and metadata of its latest version). Audited as document_index_put.';

CREATE FUNCTION memsub.document_ingest(p_file_path text, p_hash text, p_mime text, p_text text, p_chunks jsonb, p_metadata jsonb DEFAULT '{}'::jsonb, p_summary text DEFAULT NULL::text, p_key_concepts text[] DEFAULT '{}'::text[], p_entities jsonb DEFAULT '[]'::jsonb, p_neighbor_count integer DEFAULT 3, p_neighbor_max_distance double precision DEFAULT 0.5) RETURNS TABLE(document_id uuid, file_path text, version integer, hash text, status text, previous_id uuid, packet_id uuid, chunk_count integer, embedded_count integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $_$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_path     text;
    v_latest   memsub.document_index;
    v_entry    memsub.document_index;
    v_id       uuid := gen_random_uuid();
    v_version  integer;
    v_packet   uuid;
    v_chunks   integer;
    v_embedded integer;
    v_entity   jsonb;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('file_path', p_file_path, 'hash', p_hash, 'mime', p_mime, 'summary', p_summary),
            memsub._check_limit(length(p_text), 'max_document_chars', 'text'),
            memsub._check_limit(pg_column_size(p_chunks), 'max_document_bytes', 'chunks'),
            memsub._check_limit(case when jsonb_typeof(p_chunks) = 'array' then jsonb_array_length(p_chunks) end, 'max_document_chunks', 'chunks'),
            memsub._check_limit(pg_column_size(p_metadata), 'max_json_bytes', 'metadata'),
            memsub._check_limit(cardinality(p_key_concepts), 'max_array_items', 'key_concepts'),
            memsub._check_limit(pg_column_size(p_entities), 'max_json_bytes', 'entities');
    if p_file_path is null or p_file_path !~ '\S' then
        raise exception 'field "file_path" is required' using errcode = '22023', column = 'file_path';
    end if;
    v_path := p_file_path;
    if p_hash is null or p_hash !~ '^[0-9a-f]+$' or length(p_hash) <> 64 then
        raise exception 'field "hash" must be the sha256 of the file as 64 lower-case hex digits'
            using errcode = '22023', column = 'hash';
    end if;
    perform memsub._check_one_of(p_mime, memsub.document_mimes(), 'mime');
    if p_text is null then
        raise exception 'field "text" is required (the extracted text)' using errcode = '23502', column = 'text';
    end if;
    if p_metadata is null or jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'field "metadata" must be a JSON object' using errcode = '22023', column = 'metadata';
    end if;
    if p_entities is null or jsonb_typeof(p_entities) <> 'array' then
        raise exception 'field "entities" must be a JSON array of {type, value}' using errcode = '22023', column = 'entities';
    end if;
    for v_entity in select e from jsonb_array_elements(p_entities) e loop
        if jsonb_typeof(v_entity) <> 'object' or jsonb_typeof(v_entity -> 'type') is distinct from 'string'
           or jsonb_typeof(v_entity -> 'value') is distinct from 'string' then
            raise exception 'field "entities": every element must be {"type": text, "value": text}, not %', v_entity
                using errcode = '22023', column = 'entities';
        end if;
    end loop;
    if p_neighbor_count is null or p_neighbor_count not between 0 and 100 then
        raise exception 'field "neighbor_count" must be between 0 and 100' using errcode = '22023', column = 'neighbor_count';
    end if;
    if p_neighbor_max_distance is null or p_neighbor_max_distance not between 0 and 2 then
        raise exception 'field "neighbor_max_distance" must be a cosine distance between 0 and 2'
            using errcode = '22023', column = 'neighbor_max_distance';
    end if;
    v_chunks := memsub.check_document_chunks(p_chunks, p_text);

    perform memsub.take_maintenance_lock('document_ingest', v_tenant::text || ':' || v_path);
    select d.* into v_latest from memsub.document_index d
     where d.tenant_id = v_tenant and d.file_path = v_path and d.is_latest;

    if found and v_latest.hash = p_hash then
        return query select v_latest.id, v_latest.file_path, v_latest.version, v_latest.hash, 'unchanged'::text,
                            v_latest.previous_id, v_latest.packet_id, v_latest.chunk_count,
                            (select count(*)::integer from memsub.memory_embeddings e
                              where e.tenant_id = v_tenant and e.packet_id = v_latest.packet_id
                                and e.embedding_type = 'content' and e.chunk_index >= 1);
        return;
    end if;
    v_version := coalesce(v_latest.version, 0) + 1;

    select w.packet_id into v_packet from memsub.write_packet(jsonb_build_object(
        'packet_type', 'document',
        'payload', jsonb_build_object('document_id', v_id, 'file_path', v_path, 'version', v_version,
                                      'hash', p_hash, 'mime', p_mime, 'chunk_count', v_chunks),
        'tags', jsonb_build_array('document'))) w;

    v_entry.id := v_id;
    v_entry.file_path := v_path;
    v_entry.metadata := p_metadata;
    v_entry.version := v_version;
    v_entry.previous_id := v_latest.id;
    v_entry.hash := p_hash;
    v_entry.mime := p_mime;
    v_entry.summary := p_summary;
    v_entry.key_concepts := coalesce(p_key_concepts, '{}');
    v_entry.entities := p_entities;
    v_entry.extracted_text := p_text;
    v_entry.packet_id := v_packet;
    v_entry.chunk_count := v_chunks;
    perform memsub._document_index_write(v_entry);
    if v_latest.id is not null then
        -- The superseded version's vectors leave the index; its chunks and text stay for evidence.
        delete from memsub.memory_embeddings e
         where e.tenant_id = v_tenant and e.packet_id = v_latest.packet_id
           and e.embedding_type = 'content' and e.chunk_index >= 1;
    end if;

    insert into memsub.document_chunks (tenant_id, document_id, chunk_index, content, page, start_char, end_char,
                                        org_id, user_id)
    select v_tenant, v_id, a.n::integer,
           substr(p_text, (a.c ->> 'start_char')::integer + 1,
                  (a.c ->> 'end_char')::integer - (a.c ->> 'start_char')::integer),
           (a.c ->> 'page')::integer, (a.c ->> 'start_char')::integer, (a.c ->> 'end_char')::integer,
           (select memsub.current_org_id()), (select memsub.current_user_id())
      from jsonb_array_elements(p_chunks) with ordinality as a(c, n);

    insert into memsub.memory_embeddings (packet_id, embedding_type, vector, chunk_index, chunk_text, metadata, scope,
                                          tenant_id, org_id, user_id, session_id)
    select v_packet, 'content', (a.c ->> 'embedding')::vector, a.n::integer, ch.content,
           jsonb_build_object('document_id', v_id, 'chunk_id', ch.id, 'file_path', v_path, 'version', v_version),
           'shared', v_tenant, (select memsub.current_org_id()), (select memsub.current_user_id()),
           (select memsub.current_session_id())
      from jsonb_array_elements(p_chunks) with ordinality as a(c, n)
      join memsub.document_chunks ch on ch.tenant_id = v_tenant and ch.document_id = v_id and ch.chunk_index = a.n
     where jsonb_typeof(a.c -> 'embedding') = 'array';
    get diagnostics v_embedded = row_count;
    -- The document's packet is stored in chunks (seed 000 chunk_count, is_chunked).
    update memsub.packet_store p set chunk_count = v_chunks, is_chunked = v_chunks > 0
     where p.tenant_id = v_tenant and p.packet_id = v_packet;

    if v_embedded > 0 then
        -- The mean of the chunk vectors; none when they cancel out (a zero mean has no cosine distance).
        update memsub.document_index d
           set embedding = (select case when cosine_distance(m.mean, m.mean) = 'NaN'::double precision then null
                                        else m.mean end
                              from (select avg(e.vector) as mean from memsub.memory_embeddings e
                                     where e.tenant_id = v_tenant and e.packet_id = v_packet
                                       and e.embedding_type = 'content' and e.chunk_index >= 1) m)
         where d.tenant_id = v_tenant and d.id = v_id;
        if p_neighbor_count > 0 then
            perform memsub.link_document_chunks(v_id, p_neighbor_count, p_neighbor_max_distance);
        end if;
    end if;

    perform memsub.audit_record('document_ingest',
        p_details => jsonb_build_object('document_id', v_id, 'file_path', v_path, 'version', v_version,
                                        'hash', p_hash, 'previous_id', v_latest.id, 'chunks', v_chunks,
                                        'embedded', v_embedded));
    return query select v_id, v_path, v_version, p_hash,
                        case when v_latest.id is null then 'created' else 'new_version' end,
                        v_latest.id, v_packet, v_chunks, v_embedded;
end
$_$;

ALTER FUNCTION memsub.document_ingest(p_file_path text, p_hash text, p_mime text, p_text text, p_chunks jsonb, p_metadata jsonb, p_summary text, p_key_concepts text[], p_entities jsonb, p_neighbor_count integer, p_neighbor_max_distance double precision) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.document_ingest(p_file_path text, p_hash text, p_mime text, p_text text, p_chunks jsonb, p_metadata jsonb, p_summary text, p_key_concepts text[], p_entities jsonb, p_neighbor_count integer, p_neighbor_max_distance double precision) IS 'Ingests one version of a file: path, sha256 of its bytes, mime (pdf, md, txt), extracted text and chunks [{start_char, end_char, page?, embedding?}] covering the text. Same hash as the latest version: no change (status unchanged). Otherwise a new version chained to the previous one (status created or new_version) with its packet, chunks, chunk vectors in memory_embeddings and cross-document neighbours. Audited as document_ingest.';

CREATE FUNCTION memsub.document_versions(p_file_path text) RETURNS SETOF memsub.document_index
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select d.* from memsub.document_index d
     where d.tenant_id = (select memsub.current_tenant_id()) and d.file_path = p_file_path
     order by d.version desc
$$;

ALTER FUNCTION memsub.document_versions(p_file_path text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.document_versions(p_file_path text) IS 'The version chain of a path that the caller may see, newest first (the first row is the latest pointer).';

CREATE FUNCTION memsub.drop_context_signing_key(p_key_id text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    removed integer;
begin
    delete from memsub.context_keys k where k.key_id = p_key_id and k.purpose = 'token';
    get diagnostics removed = row_count;
    return removed = 1;
end
$$;

ALTER FUNCTION memsub.drop_context_signing_key(p_key_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.drop_context_signing_key(p_key_id text) IS 'Removes a context token signing key: tokens signed with it are refused from then on. Platform admins only.';

CREATE FUNCTION memsub.edges_as_of(p_as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, p_entity text DEFAULT NULL::text, p_relationship_type text DEFAULT NULL::text) RETURNS SETOF memsub.entity_relationships
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_keys text[];
    v_type text := memsub.normalize_text(p_relationship_type);  -- once: in the condition, once per edge read
begin
    perform memsub._check_finite_time(p_as_of, 'as_of');
    if p_relationship_type is not null then
        perform memsub._check_filter_values(array[p_relationship_type], 'relationship_type');
    end if;
    -- The entity is looked up once: in the statement's condition, the scan checked it again for every edge.
    if p_entity is not null then
        v_keys := memsub._entity_keys(p_entity);
    end if;
    return query
    select r.* from memsub.entity_relationships r
     where r.tenant_id = memsub.current_tenant_id()
       and r.valid_period @> coalesce(p_as_of, now())
       and (p_entity is null or r.source_key = any(v_keys) or r.target_key = any(v_keys))
       and (p_relationship_type is null or r.relationship_type = v_type)
     order by r.source_entity, r.relationship_type, r.target_entity;
end
$$;

ALTER FUNCTION memsub.edges_as_of(p_as_of timestamp with time zone, p_entity text, p_relationship_type text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.edges_as_of(p_as_of timestamp with time zone, p_entity text, p_relationship_type text) IS 'The graph as of a time (default now): the edges whose validity window contains it, optionally only those touching an entity (as source or target; by its name or aliases, memsub._entity_keys) or of one relationship type.';

CREATE FUNCTION memsub.embedding_types() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['content', 'context', 'entity', 'summary', 'reasoning']::text[] $$;

ALTER FUNCTION memsub.embedding_types() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.embedding_types() IS 'The vector spaces an embedding can belong to (memory_embeddings.embedding_type, semantic_memory.embedding_type except reasoning, the embedding_type argument of the vector and search functions).';

CREATE FUNCTION memsub.entity_neighbourhood(p_entity text, p_min_confidence double precision DEFAULT 0.0, p_limit integer DEFAULT 100, p_as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(kind text, direction text, relationship_type text, other_entity text, object jsonb, confidence double precision, mention_count integer, id uuid)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_entity text := memsub._require_text(p_entity, 'entity');
    v_keys   text[];
    v_at     timestamptz := coalesce(p_as_of, now());
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('entity', p_entity);
    v_keys := memsub._entity_keys(v_entity);
    perform memsub._check_unit(p_min_confidence, 'min_confidence');
    perform memsub._check_count(p_limit, 'max_rows', 'limit');
    -- The other ends of the edges read are resolved in one call (memsub._resolve_entities), not one per row.
    return query
    with edges as (
        (select 1 as part, row_number() over (order by r.confidence desc, r.target_entity) as place,
                'outgoing'::text as direction, r.relationship_type, r.target_entity as other_entity, r.confidence,
                r.mention_count, r.relationship_id
           from memsub.entity_relationships r
          where r.tenant_id = v_tenant and r.source_key = any(v_keys) and r.valid_period @> v_at
            and r.confidence >= coalesce(p_min_confidence, 0)
          order by r.confidence desc, r.target_entity limit p_limit)
        union all
        (select 2, row_number() over (order by r.confidence desc, r.source_entity), 'incoming', r.relationship_type,
                r.source_entity, r.confidence, r.mention_count, r.relationship_id
           from memsub.entity_relationships r
          where r.tenant_id = v_tenant and r.target_key = any(v_keys) and r.valid_period @> v_at
            and r.confidence >= coalesce(p_min_confidence, 0)
          order by r.confidence desc, r.source_entity limit p_limit)),
    resolved as (
        select n.name, n.entity from memsub._resolve_entities((select array_agg(e.other_entity) from edges e)) n)
    select x.kind, x.direction, x.relationship_type, x.other_entity, x.object, x.confidence, x.mention_count, x.id
      from ((select e.part, e.place, 'relationship'::text as kind, e.direction, e.relationship_type,
                    coalesce(n.entity, btrim(e.other_entity)) as other_entity, null::jsonb as object, e.confidence,
                    e.mention_count, e.relationship_id as id
               from edges e left join resolved n on n.name = e.other_entity)
            union all
            (select 3, row_number() over (order by f.confidence desc, f.predicate), 'fact', 'subject', f.predicate,
                    null, f.object, f.confidence, f.supporting_packet_count, f.fact_id
               from memsub.knowledge_facts f
              where f.tenant_id = v_tenant and f.subject_normalized = any(v_keys)
                and f.confidence >= coalesce(p_min_confidence, 0)
              order by f.confidence desc, f.predicate limit p_limit)) x
     order by x.part, x.place;
end
$$;

ALTER FUNCTION memsub.entity_neighbourhood(p_entity text, p_min_confidence double precision, p_limit integer, p_as_of timestamp with time zone) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.entity_neighbourhood(p_entity text, p_min_confidence double precision, p_limit integer, p_as_of timestamp with time zone) IS 'One hop around an entity (by name or alias) as of a time (as_of, default now): its outgoing and incoming relationships valid then and the facts whose subject it is (subject matched by memsub.normalize_text), each kind most confident first and at most limit rows.';

CREATE FUNCTION memsub.entity_search(p_query_text text, p_query public.vector DEFAULT NULL::public.vector, p_k integer DEFAULT 10, p_rrf_k integer DEFAULT 60) RETURNS TABLE(entity_id text, entity_type text, aliases text[], attributes jsonb, score double precision, vector_rank integer, text_rank integer, distance double precision, text_score real)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_candidates integer;
    v_query      tsquery;
begin
    perform memsub._check_fused_search(p_k, p_rrf_k, p_query, p_query_text);
    v_candidates := greatest(50, 4 * p_k);
    v_query := websearch_to_tsquery('simple'::regconfig, coalesce(p_query_text, ''));
    return query
    with vector_leg as (
        -- By the exact distance: cosine_distance(), which no index serves. A walk of the one HNSW graph of every
        -- tenant's entities, filtered by row-level security afterwards, came back with other nearest rows.
        select w.entity_id, cosine_distance(w.embedding, p_query) as distance,
               (row_number() over (order by cosine_distance(w.embedding, p_query), w.entity_id))::integer
                   as vector_rank
          from memsub.world_model_entities w
         where p_query is not null and w.tenant_id = v_tenant and w.embedding is not null
         order by 2, 1
         limit v_candidates
    ), text_leg as (
        -- Names and aliases, word by word (simple configuration: names are not stemmed).
        select c.entity_id, c.text_score, c.text_rank
          from memsub._entity_word_candidates(v_query, v_candidates) c
    ), fused as (
        select coalesce(v.entity_id, t.entity_id) as entity_id, v.vector_rank, t.text_rank, v.distance, t.text_score,
               coalesce(1.0 / (p_rrf_k + v.vector_rank), 0.0) + coalesce(1.0 / (p_rrf_k + t.text_rank), 0.0) as rrf
          from vector_leg v
          full join text_leg t on t.entity_id = v.entity_id
    )
    select w.entity_id, w.entity_type, w.aliases, w.attributes, f.rrf::double precision, f.vector_rank,
           f.text_rank, f.distance, f.text_score
      -- The k best first, then their rows by key: joined before the limit, every row of the tenant was read.
      from (select * from fused order by rrf desc, entity_id limit p_k) f
      join memsub.world_model_entities w on w.tenant_id = v_tenant and w.entity_id = f.entity_id
     order by f.rrf desc, w.entity_id;
end
$$;

ALTER FUNCTION memsub.entity_search(p_query_text text, p_query public.vector, p_k integer, p_rrf_k integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.entity_search(p_query_text text, p_query public.vector, p_k integer, p_rrf_k integer) IS 'Entity nodes by meaning and name: the visible entities nearest to query (their embedding, by the exact cosine distance) and matching query_text in their name or aliases (websearch syntax, simple configuration), fused by reciprocal rank fusion (1 / (rrf_k + rank) per leg). Either query may be NULL.';

CREATE FUNCTION memsub.entity_types() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['Person', 'Organization', 'Concept', 'Location']::text[] $$;

ALTER FUNCTION memsub.entity_types() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.entity_types() IS 'The kinds of entity node (memsub.graph_upsert_entity p_entity_type).';

CREATE FUNCTION memsub.fan_out_packet(p_packet memsub.packet_fields, p_tenant uuid, p_org uuid, p_user uuid, p_default_confidence double precision, p_agent_id text, p_vectors public.vector[]) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_written   jsonb := '{}';
    v_path      text;
    v_element   jsonb;
    v_position  integer;
    v_count     integer;
    v_vector    vector;
    v_chunk     integer;
    v_metadata  jsonb;
    v_key       text;
    -- The embeddings' columns, element by element: written by one INSERT once every element has passed.
    v_types     text[] := '{}';
    v_vectors   vector[] := '{}';
    v_chunks    integer[] := '{}';
    v_texts     text[] := '{}';
    v_metadatas jsonb[] := '{}';
    err_state   text;
    err_message text;
    err_column  text;
begin
    if jsonb_typeof(p_packet.memory) is distinct from 'object' then
        return v_written;
    end if;
    foreach v_key in array array['facts', 'relationships'] loop
        if p_packet.memory ? v_key and p_packet.scope <> 'shared' then
            raise exception 'envelope field "memory.%": a % packet cannot carry tenant-wide knowledge; only shared '
                            'packets can', v_key, p_packet.scope
                using errcode = '22023', column = 'memory.' || v_key;
        end if;
    end loop;
    begin
        foreach v_key in array array['facts', 'relationships', 'embeddings'] loop
            continue when not p_packet.memory ? v_key;
            v_path := 'memory.' || v_key;
            if jsonb_typeof(p_packet.memory -> v_key) <> 'array' then
                raise exception 'must be a JSON array of objects' using errcode = '22023';
            end if;
            v_count := 0;
            for v_element, v_position in
                select e, n - 1 from jsonb_array_elements(p_packet.memory -> v_key) with ordinality as a(e, n) loop
                v_path := format('memory.%s[%s]', v_key, v_position);
                if jsonb_typeof(v_element) <> 'object' then
                    raise exception 'must be a JSON object' using errcode = '22023';
                end if;
                if v_key = 'facts' then
                    perform memsub.assert_fact(
                        v_element ->> 'subject', v_element ->> 'predicate', v_element -> 'object',
                        coalesce((v_element ->> 'confidence')::double precision, p_default_confidence), p_packet.packet_id);
                elsif v_key = 'relationships' then
                    perform memsub.upsert_relationship(
                        v_element ->> 'source_entity', v_element ->> 'relationship_type', v_element ->> 'target_entity',
                        coalesce((v_element ->> 'confidence')::double precision, p_default_confidence), p_packet.packet_id);
                else
                    -- What memsub.store_embedding checks, in its order, and the row it would write, without
                    -- reading back the packet just stored (the row is written after the loop). The vector is
                    -- the element's own, or the one given for it in p_vectors (one per element,
                    -- memsub._packet_vectors_check), never both.
                    if p_vectors is not null then
                        if coalesce(v_element -> 'vector', 'null') <> 'null' then
                            v_path := v_path || '.vector';
                            raise exception 'must be null or absent: this element''s vector is given in vectors[%]',
                                v_position + 1 using errcode = '22023';
                        end if;
                        v_vector := p_vectors[array_lower(p_vectors, 1) + v_position];
                        if v_vector is null then
                            v_path := v_path || '.vector';
                            raise exception 'is missing: vectors[%] is null', v_position + 1 using errcode = '22023';
                        end if;
                        v_vector := memsub._check_vector(v_vector, 'vector');
                    else
                        if jsonb_typeof(v_element -> 'vector') is distinct from 'array' then
                            v_path := v_path || '.vector';
                            raise exception 'must be a JSON array of numbers' using errcode = '22023';
                        end if;
                        v_vector := memsub._json_vector(v_element -> 'vector', 'vector');
                    end if;
                    v_chunk := coalesce((v_element ->> 'chunk_index')::integer, 0);
                    v_metadata := v_element -> 'metadata';  -- absent: '{}' is stored, and nothing is measured
                    perform memsub._check_text_limits('embedding_type', v_element ->> 'embedding_type',
                                                      'chunk_text', v_element ->> 'chunk_text'),
                            memsub._check_limit(pg_column_size(v_metadata), 'max_json_bytes', 'metadata');
                    perform memsub._check_one_of(v_element ->> 'embedding_type', memsub.embedding_types(),
                                                 'embedding_type');
                    if v_chunk < 0 then
                        raise exception 'field "chunk_index" must be 0 (full content) or a chunk number >= 1, not %',
                            v_chunk using errcode = '22023', column = 'chunk_index';
                    end if;
                    v_types := array_append(v_types, v_element ->> 'embedding_type');
                    v_vectors := array_append(v_vectors, v_vector);
                    v_chunks := array_append(v_chunks, v_chunk);
                    v_texts := array_append(v_texts, v_element ->> 'chunk_text');
                    v_metadatas := array_append(v_metadatas,
                        coalesce(memsub._check_json_type(v_metadata, 'object', 'metadata'), '{}'));
                end if;
                v_count := v_count + 1;
            end loop;
            -- Every embedding of the envelope in one statement: the chunk-count trigger then raises the packet's
            -- count once, where an insert per chunk rewrote the packet row (and its index entries) per chunk.
            -- Each row takes the packet's identity and scope, which are these fields. The packet is new and its
            -- slots distinct (_packet_embeddings_check), so there is no stored embedding to replace.
            if v_key = 'embeddings' and v_count > 0 then
                v_path := 'memory.embeddings';
                insert into memsub.memory_embeddings (
                    packet_id, embedding_type, vector, chunk_index, chunk_text, metadata, scope, ttl,
                    tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
                select p_packet.packet_id, e.embedding_type, e.vector, e.chunk_index, e.chunk_text, e.metadata,
                       p_packet.scope, p_packet.ttl at time zone 'UTC', p_tenant, p_org, p_user,
                       p_packet.correlation_id, p_packet.session_id, p_packet.trace_id
                  from unnest(v_types, v_vectors, v_chunks, v_texts, v_metadatas)
                       as e(embedding_type, vector, chunk_index, chunk_text, metadata);
            end if;
            if v_count > 0 then
                v_written := v_written || jsonb_build_object(
                    case v_key when 'facts' then 'knowledge_facts' when 'relationships' then 'entity_relationships'
                               else 'memory_embeddings' end, v_count);
            end if;
        end loop;
        if p_packet.memory ? 'reasoning_trace' then
            v_path := 'memory.reasoning_trace';
            v_element := p_packet.memory -> 'reasoning_trace';
            if jsonb_typeof(v_element) <> 'object' then
                raise exception 'must be a JSON object' using errcode = '22023';
            end if;
            perform memsub.record_reasoning_trace(
                coalesce(v_element ->> 'agent_id', p_agent_id), p_packet.packet_id,
                coalesce(v_element -> 'steps', '[]'), coalesce(v_element -> 'extracted_features', '{}'),
                coalesce(v_element -> 'inference_steps', '[]'),
                coalesce((v_element ->> 'reasoning_tokens')::integer, 0),
                coalesce((v_element ->> 'decision_tokens')::integer, 0),
                coalesce(v_element -> 'confidence_scores', '{}'));
            v_written := v_written || jsonb_build_object('reasoning_traces', 1);
        end if;
    exception when others then
        -- One handler for the whole fan-out (a single subtransaction): name the element and re-raise.
        get stacked diagnostics err_state = returned_sqlstate, err_message = message_text, err_column = column_name;
        err_column := v_path || case when coalesce(err_column, '') <> '' then '.' || err_column else '' end;
        raise exception using errcode = err_state, column = err_column,
                              message = format('envelope field "%s": %s', err_column, err_message);
    end;
    return v_written;
end
$$;

ALTER FUNCTION memsub.fan_out_packet(p_packet memsub.packet_fields, p_tenant uuid, p_org uuid, p_user uuid, p_default_confidence double precision, p_agent_id text, p_vectors public.vector[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.fan_out_packet(p_packet memsub.packet_fields, p_tenant uuid, p_org uuid, p_user uuid, p_default_confidence double precision, p_agent_id text, p_vectors public.vector[]) IS 'Internal to write_packet(s): writes the envelope''s memory field (facts, relationships, embeddings, reasoning_trace) into the layer tables for a newly stored packet (its fields, written by p_user of p_org in p_tenant; p_vectors: the vectors of memory.embeddings given apart, or NULL when they are in the envelope) and returns the rows written per table. Not granted to clients.';

CREATE FUNCTION memsub.get_lineage(p_packet_id uuid, p_direction text DEFAULT 'ancestors'::text, p_max_depth integer DEFAULT 16) RETURNS TABLE(packet_id uuid, depth integer, packet_type text, "timestamp" timestamp with time zone, parent_ids uuid[], thread_id uuid, generation integer, state text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    start_tenant uuid;
    frontier     uuid[];
    visited      jsonb;  -- packet id -> true: a set with logarithmic lookups
    reached      integer := 0;
    max_rows     bigint := memsub.limit_value('max_rows');  -- read once, not at every level
    level        integer := 0;
    parents      uuid[];  -- ancestors: the parents of the last level's packets
    next_parents uuid[];
    node         record;
begin
    if p_direction is null or p_direction <> all(memsub.lineage_directions()) then
        raise exception 'memsub.get_lineage: direction must be %, not %',
            memsub._alternatives(memsub.lineage_directions()), p_direction
            using errcode = '22023', column = 'direction';
    end if;
    if p_max_depth is null or p_max_depth < 1 then
        raise exception 'memsub.get_lineage: max_depth must be at least 1, not %', p_max_depth
            using errcode = '22023', column = 'max_depth';
    end if;
    perform memsub._check_limit(p_max_depth, 'max_lineage_depth', 'max_depth');
    -- Runs as memsub_expiry_owner: the tenant, org and scope policies apply as for the caller, but expired
    -- packets are walked too. Only their lineage skeleton is returned, which is what a tombstone keeps.
    select s.tenant_id into start_tenant from memsub.packet_store s where s.packet_id = p_packet_id limit 1;
    if start_tenant is null then
        select t.tenant_id into start_tenant from memsub.packet_tombstones t where t.packet_id = p_packet_id limit 1;
    end if;
    if start_tenant is null then
        return;
    end if;
    frontier := array[p_packet_id];
    visited := jsonb_build_object(p_packet_id, true);
    if p_direction = 'ancestors' then
        parents := array(select p from memsub.lineage_nodes(start_tenant, frontier) c
                          cross join lateral unnest(c.parent_ids) as p);
    end if;
    -- Breadth-first walk with a visited set: each packet is reported once, at its shortest distance, and
    -- a cycle in (legacy) lineage data cannot loop.
    while level < p_max_depth and cardinality(frontier) > 0 loop
        level := level + 1;
        if p_direction = 'ancestors' then
            -- The level is the parents of the last one not reached yet, read in one call that gives their rows
            -- and their own parents too: one read per level (a read per packet of a level cost one call each,
            -- and reading the level's parents, then the level again for its rows, three).
            exit when cardinality(parents) = 0;
            frontier := '{}';
            next_parents := '{}';
            for node in
                select n.packet_id, n.packet_type, n."timestamp", n.parent_ids, n.thread_id, n.generation, n.state
                  from memsub.lineage_nodes(start_tenant, parents) n
                 where not visited ? n.packet_id::text
                 order by n."timestamp", n.packet_id
            loop
                frontier := frontier || node.packet_id;
                next_parents := next_parents || node.parent_ids;
                packet_id := node.packet_id;
                depth := level;
                packet_type := node.packet_type;
                "timestamp" := node."timestamp";
                parent_ids := node.parent_ids;
                thread_id := node.thread_id;
                generation := node.generation;
                state := node.state;
                return next;
            end loop;
            parents := next_parents;
        else
            frontier := array(
                select distinct c.packet_id
                  from memsub.packet_store c
                 where c.tenant_id = start_tenant and c.parent_ids && frontier
                   and not visited ? c.packet_id::text
                 union
                select t.packet_id
                  from memsub.packet_tombstones t
                 where t.tenant_id = start_tenant and t.parent_ids && frontier
                   and not visited ? t.packet_id::text);
        end if;
        -- At most max_rows packets per call: a lineage larger than that is refused, not cut short silently.
        reached := reached + cardinality(frontier);
        if reached > max_rows then
            raise exception 'memsub.get_lineage: more than % packets within max_depth %; ask for fewer generations',
                max_rows, p_max_depth
                using errcode = '54000', column = 'max_depth',
                      detail = format('limit=max_rows value=%s', max_rows),
                      hint = 'Limits are set per installation in memsub.limits (docs/security.md, "Limits").';
        end if;
        visited := visited || coalesce((select jsonb_object_agg(f, true) from unnest(frontier) as f), '{}');
        if p_direction = 'descendants' then
            return query
                select n.packet_id, level, n.packet_type, n."timestamp", n.parent_ids, n.thread_id, n.generation,
                       n.state
                  from memsub.lineage_nodes(start_tenant, frontier) n
                 order by n."timestamp", n.packet_id;
        end if;
    end loop;
end
$$;

ALTER FUNCTION memsub.get_lineage(p_packet_id uuid, p_direction text, p_max_depth integer) OWNER TO memsub_expiry_owner;

COMMENT ON FUNCTION memsub.get_lineage(p_packet_id uuid, p_direction text, p_max_depth integer) IS 'Lineage of a packet: its ancestors (following parent_ids) or descendants, breadth first, each once with its distance (depth), bounded by max_depth (limit max_lineage_depth) and safe against cycles; more than max_rows packets is refused (54000). Only packets visible to the caller are walked. state is live, expired (ttl passed, not yet purged) or purged (only its tombstone remains); expired and purged nodes report only their lineage skeleton.';

CREATE FUNCTION memsub.packet_scopes() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['shared', 'cursor', 'l-private']::text[] $$;

ALTER FUNCTION memsub.packet_scopes() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.packet_scopes() IS 'Who may read a row (seed 000''s scope: the envelope field scope, the scope column of packet_store, packet_tombstones, agent_memory_events, reasoning_traces, semantic_memory and memory_embeddings): shared for the tenant, cursor for its user and session, l-private for its user.';

CREATE TABLE memsub.packet_store (
    packet_id uuid DEFAULT gen_random_uuid() NOT NULL,
    packet_type text NOT NULL,
    envelope jsonb NOT NULL,
    "timestamp" timestamp with time zone DEFAULT now() NOT NULL,
    routing jsonb,
    provenance jsonb,
    thread_id uuid,
    parent_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    ttl timestamp without time zone,
    scope text DEFAULT 'shared'::text NOT NULL,
    importance_score double precision DEFAULT 0.5 NOT NULL,
    access_count integer DEFAULT 0 NOT NULL,
    last_accessed timestamp with time zone,
    contradiction_count integer DEFAULT 0 NOT NULL,
    content_hash text,
    chunk_count integer DEFAULT 0 NOT NULL,
    is_chunked boolean DEFAULT false NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    write_seq bigint NOT NULL,
    CONSTRAINT packet_store_access_count_non_negative CHECK ((access_count >= 0)),
    CONSTRAINT packet_store_chunk_count_non_negative CHECK ((chunk_count >= 0)),
    CONSTRAINT packet_store_contradiction_count_non_negative CHECK ((contradiction_count >= 0)),
    CONSTRAINT packet_store_envelope_is_object CHECK ((jsonb_typeof(envelope) = 'object'::text)),
    CONSTRAINT packet_store_importance_in_unit_range CHECK (((importance_score >= (0)::double precision) AND (importance_score <= (1)::double precision))),
    CONSTRAINT packet_store_packet_type_not_blank CHECK ((length(btrim(packet_type)) > 0)),
    CONSTRAINT packet_store_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.packet_store FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.packet_store OWNER TO memsub_owner;

COMMENT ON TABLE memsub.packet_store IS 'Central event log: one immutable row per PacketEnvelope (seed 004). Written only through memsub.write_packet(s).';

COMMENT ON COLUMN memsub.packet_store.packet_id IS 'Unique packet identifier (generated when the envelope has none).';

COMMENT ON COLUMN memsub.packet_store.packet_type IS 'Semantic category: event, memory_write, reasoning_trace, insight, ...';

COMMENT ON COLUMN memsub.packet_store.envelope IS 'The normalized PacketEnvelope as JSON, less what the row holds elsewhere: each memory.embeddings[] vector is JSON null (in memory_embeddings.vector) and packet_id, packet_type, timestamp and scope are left out (the row''s columns; since 2.28.0). The readers (get_packets, get_thread) return the envelope as written.';

COMMENT ON COLUMN memsub.packet_store."timestamp" IS 'Event time (UTC; generated when the envelope has none).';

COMMENT ON COLUMN memsub.packet_store.routing IS 'Agent routing metadata (the envelope''s metadata object: agent, domain, reasoning mode).';

COMMENT ON COLUMN memsub.packet_store.provenance IS 'Source and derivation info (the envelope''s provenance object).';

COMMENT ON COLUMN memsub.packet_store.thread_id IS 'Conversation/session thread; all packets of a thread belong to one conversation.';

COMMENT ON COLUMN memsub.packet_store.parent_ids IS 'Multi-parent lineage (DAG): packets this one was derived from. Every parent exists and is visible to the writer.';

COMMENT ON COLUMN memsub.packet_store.tags IS 'Lightweight labels for filtering (duplicates removed).';

COMMENT ON COLUMN memsub.packet_store.ttl IS 'Expiration time, UTC (timestamp without time zone, as the seed specifies). memsub.purge_expired() removes expired packets.';

COMMENT ON COLUMN memsub.packet_store.scope IS 'Memory isolation scope, one of memsub.packet_scopes(): shared (whole tenant/org), cursor (writer and its session), l-private (writer only).';

COMMENT ON COLUMN memsub.packet_store.importance_score IS 'Learned importance in [0, 1].';

COMMENT ON COLUMN memsub.packet_store.access_count IS 'Retrieval counter.';

COMMENT ON COLUMN memsub.packet_store.last_accessed IS 'Last time the packet was retrieved.';

COMMENT ON COLUMN memsub.packet_store.contradiction_count IS 'Times the packet''s content was contradicted.';

COMMENT ON COLUMN memsub.packet_store.content_hash IS 'Deduplication hash: sha256 over packet_type, payload, thread, parents, scope, writer identity, timestamp and the packet_id when the writer named one.';

COMMENT ON COLUMN memsub.packet_store.chunk_count IS 'Number of chunks the content was split into.';

COMMENT ON COLUMN memsub.packet_store.is_chunked IS 'Whether the content was chunked.';

COMMENT ON COLUMN memsub.packet_store.tenant_id IS 'Tenant isolation: set from memsub.set_context(), never from the envelope.';

COMMENT ON COLUMN memsub.packet_store.org_id IS 'Organization isolation (NULL: visible to every org of the tenant).';

COMMENT ON COLUMN memsub.packet_store.user_id IS 'Writing user; l-private and cursor packets are visible to this user.';

COMMENT ON COLUMN memsub.packet_store.correlation_id IS 'Request correlation identifier.';

COMMENT ON COLUMN memsub.packet_store.session_id IS 'Session tracing; cursor-scoped packets are visible to this session.';

COMMENT ON COLUMN memsub.packet_store.trace_id IS 'Distributed tracing identifier.';

COMMENT ON COLUMN memsub.packet_store.write_seq IS 'Write order (identity): larger means written later; a parent always has a smaller write_seq than its children. Thread replay follows it, and memsub.get_thread''s cursor is a write_seq.';

CREATE FUNCTION memsub.get_packet(p_packet_id uuid, p_with_vectors boolean DEFAULT true) RETURNS SETOF memsub.packet_store
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$ select * from memsub.get_packets(array[p_packet_id], p_with_vectors) $$;

ALTER FUNCTION memsub.get_packet(p_packet_id uuid, p_with_vectors boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.get_packet(p_packet_id uuid, p_with_vectors boolean) IS 'The packet with this id, if the caller may see it (no row otherwise): memsub.get_packets of one id. with_vectors (default true) returns its envelope as written, vectors put back; false, the row as stored (memory.embeddings[] vectors are JSON null).';

CREATE FUNCTION memsub.get_packets(p_packet_ids uuid[], p_with_vectors boolean DEFAULT true) RETURNS SETOF memsub.packet_store
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
    v_tenants uuid[];
    v_ids     uuid[] := p_packet_ids;  -- each id once, in the order of its first mention
begin
    -- The rows with their vectors are the rows memsub.get_packets_with_vector_values reads, each vector put back
    -- into its memory.embeddings[] element as the exact doubles of its single-precision numbers. Other elements,
    -- and envelopes without an embeddings array, are returned as stored. A call without vectors never plans this
    -- statement, so it pays nothing for memory_embeddings.
    if coalesce(p_with_vectors, true) then
        return query
            select r.packet_id, r.packet_type,
                   case when r.vectors is null then r.envelope else
                       jsonb_set(r.envelope, '{memory,embeddings}', (
                           select coalesce(jsonb_agg(
                                      case when r.vectors[x.o] is null then x.e
                                           else jsonb_set(x.e, '{vector}',
                                                          to_jsonb(r.vectors[x.o]::real[]::double precision[])) end
                                      order by x.o), '[]')
                             from jsonb_array_elements(r.envelope -> 'memory' -> 'embeddings') with ordinality as x(e, o)))
                   end,
                   r."timestamp", r.routing, r.provenance, r.thread_id, r.parent_ids, r.tags, r.ttl, r.scope,
                   r.importance_score, r.access_count, r.last_accessed, r.contradiction_count, r.content_hash,
                   r.chunk_count, r.is_chunked, r.tenant_id, r.org_id, r.user_id, r.correlation_id, r.session_id,
                   r.trace_id, r.write_seq
              from memsub.get_packets_with_vector_values(p_packet_ids) with ordinality r
              -- A platform_admin's read of several tenants comes tenant by tenant: the order asked is put back.
              join (select i.id, min(i.n) as n from unnest(p_packet_ids) with ordinality i(id, n) group by i.id) w
                on w.id = r.packet_id
             order by w.n, r.ordinality;
        return;
    end if;
    perform memsub._check_limit(cardinality(p_packet_ids), 'max_rows', 'packet_ids');
    v_tenants := memsub._reader_tenants(p_packet_ids);
    -- Repeated ids are dropped by a statement of their own, only when there are several ids: in the read's
    -- statement the grouping took a get of one packet a tenth of its server time to start, for nothing.
    if cardinality(p_packet_ids) > 1 then
        v_ids := array(select i.id from unnest(p_packet_ids) with ordinality i(id, n) group by i.id order by min(i.n));
    end if;
    -- Each visible packet once, in the order of its first mention; unknown and invisible ids give no row. The
    -- plan is the same for every call (a nested loop of key searches), so it is made once per session (generic),
    -- not planned again for each call: planning would cost more than reading one packet. The header fields
    -- stored only in columns are put back (the envelope's own, if it has them, win).
    -- memsub.get_packets_with_vector_values runs the same statement, tenant by tenant, with the vectors beside
    -- each row: a change here belongs there too (tests/packets/test_packet_vectors_typed.py compares the two).
    return query
        select s.packet_id, s.packet_type,
               jsonb_build_object('packet_id', s.packet_id, 'packet_type', s.packet_type, 'scope', s.scope,
                                  'timestamp', to_char(s."timestamp" at time zone 'UTC',
                                                       'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || s.envelope,
               s."timestamp", s.routing, s.provenance, s.thread_id, s.parent_ids, s.tags, s.ttl, s.scope,
               s.importance_score, s.access_count, s.last_accessed, s.contradiction_count, s.content_hash,
               s.chunk_count, s.is_chunked, s.tenant_id, s.org_id, s.user_id, s.correlation_id, s.session_id,
               s.trace_id, s.write_seq
          from unnest(v_ids) with ordinality w(id, n)
         -- A nested loop of key searches, one per id and tenant (tests/packets/test_packet_read_cost.py counts
         -- the rows read). OFFSET 0 keeps the lateral subquery from being flattened into a join, which the planner
         -- would then be free to run as a hash join over a scan of every row the tenant condition matches: its
         -- choice when one tenant holds most of the table and the table is small enough to look cheap to scan.
         cross join lateral (select k.* from memsub.packet_store k
                              where k.tenant_id = any(v_tenants) and k.packet_id = w.id
                              offset 0) s
         order by w.n;
end
$$;

ALTER FUNCTION memsub.get_packets(p_packet_ids uuid[], p_with_vectors boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.get_packets(p_packet_ids uuid[], p_with_vectors boolean) IS 'The visible packets among these ids, each once, in the order of its first mention (unknown or invisible ids give no row); at most max_rows ids per call (54000 beyond). One index search of the context tenant''s key per id. Each envelope is returned as written: the header fields kept only in columns put back, and, with with_vectors (default true; NULL counts as true), each memory.embeddings[] vector read back from memory_embeddings (the exact value of each single-precision number; row-level security applies); false returns the rows as stored, where a vector stored in memory_embeddings is JSON null (envelopes written before 2.24.0 keep theirs) and every other field is the same.';

CREATE FUNCTION memsub.get_packets_with_vector_values(p_packet_ids uuid[]) RETURNS TABLE(packet_id uuid, packet_type text, envelope jsonb, "timestamp" timestamp with time zone, routing jsonb, provenance jsonb, thread_id uuid, parent_ids uuid[], tags text[], ttl timestamp without time zone, scope text, importance_score double precision, access_count integer, last_accessed timestamp with time zone, contradiction_count integer, content_hash text, chunk_count integer, is_chunked boolean, tenant_id uuid, org_id uuid, user_id uuid, correlation_id uuid, session_id text, trace_id text, write_seq bigint, vectors public.vector[])
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_column
declare
    v_tenant uuid;
    v_ids    uuid[] := p_packet_ids;  -- each id once, in the order of its first mention (as get_packets)
begin
    -- The rows are memsub.get_packets(ids, false) (the packet_store columns, in the same order); vectors holds
    -- the stored vector of each memory.embeddings[] object whose vector is JSON null: the slot (embedding_type,
    -- chunk_index) of a memory_embeddings row, read as the caller (row-level security applies). Vectors are
    -- stored once (sql/120_packet_write.sql).
    --
    -- The vectors are read one tenant at a time, the tenant stated as a value: the cached plan then opens only
    -- that tenant's partition of memory_embeddings. Read by the packet's own tenant (known only row by row), or
    -- by a list of tenants, it would open every partition on every call (tests/packets/test_packet_read_cost.py).
    -- An ordinary login reads one tenant, the context's; a platform_admin may read several, tenant by tenant.
    --
    -- The packets are read here with get_packets' statement for rows as stored (the same key searches and the
    -- same header fields put back), not by calling get_packets(ids, false): that call checked the limit and
    -- found the reader's tenants a second time, another seal check among them, and cost a get of one packet with
    -- its vector 8-10 % of its server time; a function shared by both reads cost each a frame (3-4 %).
    --
    -- A vector's slot is read with the fan-out's own expression for chunk_index (sql/160_packet_fan_out.sql),
    -- which every element stored with its vector apart has passed, so it cannot fail here. Called through
    -- memsub._embedding_chunk_index (a SQL function with its own search_path, so not inlined), it was a function
    -- call in the index search of every vector: a sixth of the server time of a get of 100 packets with theirs
    -- (tests/packets/test_packet_read_cost.py counts the calls).
    perform memsub._check_limit(cardinality(p_packet_ids), 'max_rows', 'packet_ids');
    if cardinality(p_packet_ids) > 1 then
        v_ids := array(select i.id from unnest(p_packet_ids) with ordinality i(id, n) group by i.id order by min(i.n));
    end if;
    foreach v_tenant in array memsub._reader_tenants(p_packet_ids) loop
        return query
            select s.packet_id, s.packet_type,
                   jsonb_build_object('packet_id', s.packet_id, 'packet_type', s.packet_type, 'scope', s.scope,
                                      'timestamp', to_char(s."timestamp" at time zone 'UTC',
                                                           'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || s.envelope,
                   s."timestamp", s.routing, s.provenance, s.thread_id, s.parent_ids, s.tags, s.ttl, s.scope,
                   s.importance_score, s.access_count, s.last_accessed, s.contradiction_count, s.content_hash,
                   s.chunk_count, s.is_chunked, s.tenant_id, s.org_id, s.user_id, s.correlation_id, s.session_id,
                   s.trace_id, s.write_seq,
                   case when jsonb_typeof(s.envelope -> 'memory' -> 'embeddings') = 'array' then
                       array(select case when jsonb_typeof(x.e) = 'object' and x.e -> 'vector' = 'null'::jsonb then
                                             (select m.vector from memsub.memory_embeddings m
                                               where m.tenant_id = v_tenant and m.packet_id = s.packet_id
                                                 and m.embedding_type = x.e ->> 'embedding_type'
                                                 and m.chunk_index = coalesce((x.e ->> 'chunk_index')::integer, 0)) end
                               from jsonb_array_elements(s.envelope -> 'memory' -> 'embeddings')
                                    with ordinality as x(e, o)
                              order by x.o) end
              from unnest(v_ids) with ordinality w(id, n)
             cross join lateral (select k.* from memsub.packet_store k
                                  where k.tenant_id = v_tenant and k.packet_id = w.id
                                  offset 0) s
             order by w.n;
    end loop;
end
$$;

ALTER FUNCTION memsub.get_packets_with_vector_values(p_packet_ids uuid[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.get_packets_with_vector_values(p_packet_ids uuid[]) IS 'The visible packets among these ids as memsub.get_packets(ids, false) returns them (the envelope''s memory.embeddings[] vectors JSON null), with vectors: vectors[i] is the stored vector of the i-th element (1-based) of memory.embeddings, NULL where the element holds no vector stored apart (or no row holds it); vectors is NULL for an envelope without an embeddings array. The vectors come as vector values (pgvector''s binary form on the wire, 4 bytes a number) instead of JSON numbers: what the Python client reads. In the order of first mention; a platform_admin reading several tenants gets them tenant by tenant. Row-level security applies.';

CREATE FUNCTION memsub.get_thread(p_thread_id uuid, p_limit integer DEFAULT 1000, p_after_cursor bigint DEFAULT NULL::bigint, p_with_vectors boolean DEFAULT true) RETURNS SETOF memsub.packet_store
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$ select * from memsub.get_packets(memsub._thread_packet_ids(p_thread_id, p_limit, p_after_cursor), p_with_vectors) $$;

ALTER FUNCTION memsub.get_thread(p_thread_id uuid, p_limit integer, p_after_cursor bigint, p_with_vectors boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.get_thread(p_thread_id uuid, p_limit integer, p_after_cursor bigint, p_with_vectors boolean) IS 'Replays a conversation thread: its visible, unexpired packets in write order (parents before children), at most limit rows after the cursor (the write_seq of the last row already read; NULL: from the start). with_vectors as memsub.get_packets: true (the default) puts each memory.embeddings[] vector back into the envelope as JSON numbers, false returns the rows as stored.';

CREATE FUNCTION memsub.get_thread_with_vector_values(p_thread_id uuid, p_limit integer DEFAULT 1000, p_after_cursor bigint DEFAULT NULL::bigint) RETURNS TABLE(packet_id uuid, packet_type text, envelope jsonb, "timestamp" timestamp with time zone, routing jsonb, provenance jsonb, thread_id uuid, parent_ids uuid[], tags text[], ttl timestamp without time zone, scope text, importance_score double precision, access_count integer, last_accessed timestamp with time zone, contradiction_count integer, content_hash text, chunk_count integer, is_chunked boolean, tenant_id uuid, org_id uuid, user_id uuid, correlation_id uuid, session_id text, trace_id text, write_seq bigint, vectors public.vector[])
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
    -- In write order even for a platform_admin, whose read of several tenants comes tenant by tenant.
    select r.* from memsub.get_packets_with_vector_values(memsub._thread_packet_ids(p_thread_id, p_limit, p_after_cursor)) r
     order by r.write_seq
$$;

ALTER FUNCTION memsub.get_thread_with_vector_values(p_thread_id uuid, p_limit integer, p_after_cursor bigint) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.get_thread_with_vector_values(p_thread_id uuid, p_limit integer, p_after_cursor bigint) IS 'One page of a thread as memsub.get_thread reads it, in write order, each row as memsub.get_packets_with_vector_values returns it: the envelope as stored and its memory.embeddings[] vectors as vector values beside it (pgvector''s binary form on the wire), not as JSON numbers. What the Python client reads.';

CREATE FUNCTION memsub.graph_directions() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['outgoing', 'incoming', 'both']::text[] $$;

ALTER FUNCTION memsub.graph_directions() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.graph_directions() IS 'Which edges memsub.traverse_graph follows from an entity (p_direction).';

CREATE FUNCTION memsub.graph_neighbors(p_entity text, p_max_depth integer DEFAULT 2, p_limit integer DEFAULT 100) RETURNS TABLE(depth integer, source_entity text, relationship_type text, target_entity text, confidence double precision, mention_count integer)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    -- The current graph is the graph as of now (memsub.graph_neighbors_as_of, sql/420_temporal_graph.sql).
    return query
        select n.depth, n.source_entity, n.relationship_type, n.target_entity, n.confidence, n.mention_count
          from memsub.graph_neighbors_as_of(p_entity, null, p_max_depth, p_limit) as n;
end
$$;

ALTER FUNCTION memsub.graph_neighbors(p_entity text, p_max_depth integer, p_limit integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.graph_neighbors(p_entity text, p_max_depth integer, p_limit integer) IS 'Graph traversal over the edges valid now (memsub.graph_neighbors_as_of at now()): the outgoing edges reachable from an entity, breadth first up to max_depth hops, each entity expanded once, at most limit edges in all.';

CREATE FUNCTION memsub.graph_neighbors_as_of(p_entity text, p_as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, p_max_depth integer DEFAULT 2, p_limit integer DEFAULT 100) RETURNS TABLE(depth integer, source_entity text, relationship_type text, target_entity text, confidence double precision, mention_count integer, valid_period tstzrange)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_at     timestamptz := coalesce(p_as_of, now());
    -- Names resolve through Entity nodes only when the tenant has any (otherwise a name is its own entity).
    v_nodes  boolean := exists (select from memsub.world_model_entities w
                                 where w.tenant_id = memsub.current_tenant_id());
    v_left   integer;
    v_names  text[];  -- the names on the edges to the next level
    frontier text[];  -- matching forms (names and aliases) of the entities of the current level
    visited  jsonb;   -- matching form -> true: a set with logarithmic lookups
    level    integer := 0;
    returned integer;
begin
    perform memsub._check_finite_time(p_as_of, 'as_of');
    frontier := memsub._entity_keys(memsub._require_text(p_entity, 'entity'));
    perform memsub._check_count(p_max_depth, 'max_depth', 'max_depth');
    perform memsub._check_count(p_limit, 'max_rows', 'limit');
    v_left := p_limit;
    visited := (select jsonb_object_agg(f, true) from unnest(frontier) as f);
    -- Breadth first: each entity is expanded once, and limit bounds the rows of all hops together.
    while level < p_max_depth and v_left > 0 and cardinality(frontier) > 0 loop
        level := level + 1;
        return query
            select level, r.source_entity, r.relationship_type, r.target_entity, r.confidence, r.mention_count,
                   r.valid_period
              from memsub.entity_relationships r
             where r.tenant_id = memsub.current_tenant_id() and r.source_key = any(frontier)
               and r.valid_period @> v_at
             order by r.source_entity, r.mention_count desc, r.target_entity
             limit v_left;
        get diagnostics returned = row_count;
        v_left := v_left - returned;
        exit when level >= p_max_depth or v_left <= 0;  -- the next frontier would not be expanded
        -- The next level: the targets not reached yet, by their matching forms; with Entity nodes, their names
        -- looked up in one call (memsub._resolve_entities), not one per edge.
        select array_agg(distinct r.target_entity), array_agg(distinct r.target_key) into v_names, frontier
          from memsub.entity_relationships r
         where r.tenant_id = memsub.current_tenant_id() and r.source_key = any(frontier)
           and r.valid_period @> v_at
           and not visited ? r.target_key;
        if v_nodes then
            frontier := array(select distinct k from memsub._resolve_entities(v_names) e
                               cross join lateral unnest(e.keys) as k);
        end if;
        visited := visited || coalesce((select jsonb_object_agg(f, true) from unnest(frontier) as f), '{}');
    end loop;
end
$$;

ALTER FUNCTION memsub.graph_neighbors_as_of(p_entity text, p_as_of timestamp with time zone, p_max_depth integer, p_limit integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.graph_neighbors_as_of(p_entity text, p_as_of timestamp with time zone, p_max_depth integer, p_limit integer) IS 'memsub.graph_neighbors as of a time: the outgoing edges valid at as_of (default now) reachable from an entity (by its name or aliases), breadth first up to max_depth hops (limit max_depth), each entity expanded once, at most limit edges in all (limit max_rows).';

CREATE TABLE memsub.world_model_entities (
    entity_id text NOT NULL,
    entity_type text NOT NULL,
    attributes jsonb DEFAULT '{}'::jsonb NOT NULL,
    confidence double precision DEFAULT 0.5 NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    created_at timestamp without time zone DEFAULT (now() AT TIME ZONE 'UTC'::text) NOT NULL,
    updated_at timestamp without time zone DEFAULT (now() AT TIME ZONE 'UTC'::text) NOT NULL,
    state_version integer NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    aliases text[] DEFAULT '{}'::text[] NOT NULL,
    doc_refs jsonb DEFAULT '[]'::jsonb NOT NULL,
    alias_keys text[] DEFAULT '{}'::text[] NOT NULL,
    embedding public.vector(1536),
    CONSTRAINT world_model_entities_attributes_is_object CHECK ((jsonb_typeof(attributes) = 'object'::text)),
    CONSTRAINT world_model_entities_confidence_in_unit_range CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT world_model_entities_doc_refs_is_array CHECK ((jsonb_typeof(doc_refs) = 'array'::text)),
    CONSTRAINT world_model_entities_id_not_blank CHECK ((length(btrim(entity_id)) > 0)),
    CONSTRAINT world_model_entities_version_positive CHECK ((version >= 1))
);

ALTER TABLE ONLY memsub.world_model_entities FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.world_model_entities OWNER TO memsub_owner;

COMMENT ON TABLE memsub.world_model_entities IS 'World-model entities of a tenant, versioned: each applied update bumps the entities it touches.';

COMMENT ON COLUMN memsub.world_model_entities.entity_id IS 'Entity identifier (a name).';

COMMENT ON COLUMN memsub.world_model_entities.entity_type IS 'Entity type (Person, Organization, Concept, ...).';

COMMENT ON COLUMN memsub.world_model_entities.attributes IS 'Entity attributes; updates merge into them (a JSON null removes a key).';

COMMENT ON COLUMN memsub.world_model_entities.confidence IS 'Confidence in [0, 1].';

COMMENT ON COLUMN memsub.world_model_entities.version IS 'Entity version: 1 when created, +1 per update touching it.';

COMMENT ON COLUMN memsub.world_model_entities.created_at IS 'Creation time (UTC).';

COMMENT ON COLUMN memsub.world_model_entities.updated_at IS 'Last update time (UTC).';

COMMENT ON COLUMN memsub.world_model_entities.state_version IS 'World-model state version that last changed the entity.';

COMMENT ON COLUMN memsub.world_model_entities.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.world_model_entities.org_id IS 'Organization of the last updater (entities are tenant-wide).';

COMMENT ON COLUMN memsub.world_model_entities.user_id IS 'User of the last updater.';

COMMENT ON COLUMN memsub.world_model_entities.aliases IS 'Other names of the entity (seed 003 Entity aliases).';

COMMENT ON COLUMN memsub.world_model_entities.doc_refs IS 'DocRefs where the entity is mentioned: a JSON array of {doc_id, chunk_id, score}.';

COMMENT ON COLUMN memsub.world_model_entities.alias_keys IS 'Matching forms of the aliases (memsub.normalize_text), for alias lookups.';

COMMENT ON COLUMN memsub.world_model_entities.embedding IS 'Embedding of the entity (seed 003 Node.embedding; dimension: installation_settings.vector_dimension), NULL when none was given.';

CREATE FUNCTION memsub.graph_upsert_entity(p_name text, p_entity_type text, p_aliases text[] DEFAULT '{}'::text[], p_properties jsonb DEFAULT '{}'::jsonb, p_doc_refs jsonb DEFAULT '[]'::jsonb, p_confidence double precision DEFAULT 0.5, p_embedding public.vector DEFAULT NULL::public.vector) RETURNS memsub.world_model_entities
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_name     text := memsub._require_text(p_name, 'name');
    v_doc_refs jsonb := memsub._check_doc_refs(p_doc_refs, 'doc_refs');
    v_entity   memsub.world_model_entities;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('name', p_name, 'entity_type', p_entity_type),
            memsub._check_limit(cardinality(p_aliases), 'max_array_items', 'aliases'),
            memsub._check_limit(pg_column_size(p_properties), 'max_json_bytes', 'properties'),
            memsub._check_limit(pg_column_size(p_doc_refs), 'max_json_bytes', 'doc_refs');
    perform memsub._check_one_of(p_entity_type, memsub.entity_types(), 'entity_type');
    perform memsub._check_vector(p_embedding, 'embedding');
    if array_position(p_aliases, null) is not null then
        raise exception 'field "aliases" must not contain NULL' using errcode = '22023', column = 'aliases';
    end if;
    -- Through the world model, so the entity is versioned like every other world-model change.
    perform memsub.apply_world_model_update('graph_entity', jsonb_build_array(jsonb_build_object(
        'entity_id', v_name, 'entity_type', p_entity_type,
        'attributes', coalesce(memsub._check_json_type(p_properties, 'object', 'properties'), '{}'),
        'confidence', coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5))));
    update memsub.world_model_entities w
       set aliases = array(select distinct a from unnest(w.aliases || coalesce(p_aliases, '{}')) as a
                            where btrim(a) <> '' order by a),
           alias_keys = array(select distinct memsub.normalize_text(a)
                                from unnest(w.aliases || coalesce(p_aliases, '{}')) as a
                               where btrim(a) <> '' order by 1),
           doc_refs = memsub._merge_doc_refs(w.doc_refs, v_doc_refs),
           embedding = coalesce(p_embedding, w.embedding)
     where w.tenant_id = v_tenant and w.entity_id = v_name
    returning w.* into v_entity;
    return v_entity;
end
$$;

ALTER FUNCTION memsub.graph_upsert_entity(p_name text, p_entity_type text, p_aliases text[], p_properties jsonb, p_doc_refs jsonb, p_confidence double precision, p_embedding public.vector) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.graph_upsert_entity(p_name text, p_entity_type text, p_aliases text[], p_properties jsonb, p_doc_refs jsonb, p_confidence double precision, p_embedding public.vector) IS 'Creates or updates an Entity node (a world-model entity, versioned by memsub.apply_world_model_update) of type Person, Organization, Concept or Location, adding aliases and DocRefs to those it has; embedding (seed 003 Node.embedding, the installation''s dimension) replaces the stored one when given.';

CREATE FUNCTION memsub.hmac_pads(p_key bytea, OUT inner_pad bytea, OUT outer_pad bytea) RETURNS record
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    with k as (select case when length(p_key) > 64 then sha256(p_key) else p_key end as key),
         padded as (select k.key || decode(repeat('00', 64 - length(k.key)), 'hex') as key from k)
    select decode(string_agg(lpad(to_hex(get_byte(padded.key, i) # 54), 2, '0'), '' order by i), 'hex'),
           decode(string_agg(lpad(to_hex(get_byte(padded.key, i) # 92), 2, '0'), '' order by i), 'hex')
      from padded, generate_series(0, 63) as i
$$;

ALTER FUNCTION memsub.hmac_pads(p_key bytea, OUT inner_pad bytea, OUT outer_pad bytea) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.hmac_pads(p_key bytea, OUT inner_pad bytea, OUT outer_pad bytea) IS 'The HMAC-SHA256 inner and outer pads of a key (RFC 2104): key (hashed when over 64 bytes) zero-padded to 64 bytes, XOR 0x36 and XOR 0x5c.';

CREATE FUNCTION memsub.hybrid_search(p_query_text text, p_query public.vector, p_k integer DEFAULT 10, p_embedding_type text DEFAULT 'content'::text, p_vector_weight double precision DEFAULT 1.0, p_text_weight double precision DEFAULT 1.0, p_rrf_k integer DEFAULT 60, p_candidates integer DEFAULT NULL::integer, p_importance_weight double precision DEFAULT 0.0, p_recency_weight double precision DEFAULT 0.0, p_half_life interval DEFAULT '30 days'::interval, p_record_access boolean DEFAULT false, p_agent_id text DEFAULT NULL::text, p_with_packets boolean DEFAULT false) RETURNS TABLE(embedding_id uuid, packet_id uuid, chunk_index integer, chunk_text text, score double precision, vector_rank integer, text_rank integer, distance double precision, text_score real, importance_score double precision, access_id uuid, packet jsonb)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
    v_tenant     uuid    := memsub._require_tenant_id();
    v_candidates integer := coalesce(p_candidates, greatest(50, 4 * p_k));
begin
    perform memsub._check_fused_search(p_k, p_rrf_k, p_query, p_query_text);
    if v_candidates < p_k then
        raise exception 'field "candidates" must be at least k, not %', v_candidates
            using errcode = '22023', column = 'candidates';
    end if;
    perform memsub._check_limit(v_candidates, 'max_k', 'candidates');
    perform memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    -- Each weight a finite number >= 0 (NaN and infinities would rank every row alike).
    perform memsub._check_finite(p_vector_weight, 'vector_weight'), memsub._check_finite(p_text_weight, 'text_weight'),
            memsub._check_finite(p_importance_weight, 'importance_weight'),
            memsub._check_finite(p_recency_weight, 'recency_weight');
    if p_vector_weight is null or p_vector_weight < 0 then
        raise exception 'field "vector_weight" must be >= 0' using errcode = '22023', column = 'vector_weight';
    end if;
    if p_text_weight is null or p_text_weight < 0 then
        raise exception 'field "text_weight" must be >= 0' using errcode = '22023', column = 'text_weight';
    end if;
    if p_importance_weight is null or p_importance_weight < 0 then
        raise exception 'field "importance_weight" must be >= 0' using errcode = '22023', column = 'importance_weight';
    end if;
    if p_recency_weight is null or p_recency_weight < 0 then
        raise exception 'field "recency_weight" must be >= 0' using errcode = '22023', column = 'recency_weight';
    end if;
    perform memsub._check_half_life(p_half_life);

    -- One statement: both legs, the fusion, the read-back of the rows through row-level security, and the
    -- optional access records (the one-time filter on p_record_access skips them entirely when false).
    return query
    with vector_leg as (
        select s.embedding_id, s.distance,
               (row_number() over (order by s.distance, s.embedding_id))::integer as vector_rank
          from memsub.semantic_search(p_query, v_candidates, p_embedding_type) s
         where p_query is not null and p_vector_weight > 0
    ), text_hits as (
        select k.embedding_id as hit_id, k.text_score, false as is_chunk
          from memsub._keyword_candidates(p_query_text, p_embedding_type, v_candidates) k
         where p_query_text is not null and p_text_weight > 0
        union all
        -- Document chunks stored without a vector are found by their text (content space only).
        select c.chunk_id, c.text_score, true
          from memsub._chunk_keyword_candidates(p_query_text, v_candidates) c
         where p_query_text is not null and p_text_weight > 0 and p_embedding_type = 'content'
    ), text_leg as (
        select h.hit_id as embedding_id, h.is_chunk, h.text_score,
               (row_number() over (order by h.text_score desc, h.hit_id))::integer as text_rank
          from text_hits h
         order by h.text_score desc, h.hit_id
         limit v_candidates
    ), fused as materialized (
        select coalesce(v.embedding_id, t.embedding_id) as embedding_id, coalesce(t.is_chunk, false) as is_chunk,
               v.vector_rank, t.text_rank, v.distance, t.text_score,
               coalesce(p_vector_weight / (p_rrf_k + v.vector_rank), 0.0)
               + coalesce(p_text_weight / (p_rrf_k + t.text_rank), 0.0) as rrf
          from vector_leg v
          full join text_leg t on t.embedding_id = v.embedding_id
    ), scored as (
        -- Each fused candidate is read back by its primary key, one probe per candidate (the lateral LIMIT 1).
        -- Written as a join, the planner sizes both legs at a set-returning function's default of 1000 rows and
        -- hash-joins them with every row of the tenant: 47 times the slower leg for a tenant of 25,000 rows
        -- (docs/benchmarks.md). fused is materialized so its embedding_id is a plain column: the policies are
        -- applied first, and the inlined COALESCE of the full join was not accepted below them as an index key.
        select r.embedding_id, f.embedding_id as hit_id, r.packet_id, r.chunk_index, r.chunk_text,
               f.rrf * (1.0 + p_importance_weight * coalesce(r.importance_score, 0)
                            + p_recency_weight * power(0.5, date_part('epoch', now() - r.last_active)
                                                            / greatest(1.0, date_part('epoch', p_half_life)))) as score,
               f.vector_rank, f.text_rank, coalesce(f.distance, r.distance) as distance, f.text_score,
               r.importance_score
          from fused f
          cross join lateral (
              select e.embedding_id, e.packet_id, e.chunk_index, e.chunk_text, p.importance_score,
                     coalesce(p.last_accessed, p."timestamp") as last_active,
                     case when f.distance is null then (e.vector <=> p_query)::double precision end as distance
                from memsub.memory_embeddings e
                join memsub.packet_store p on p.tenant_id = e.tenant_id and p.packet_id = e.packet_id
               where not f.is_chunk and e.tenant_id = v_tenant and e.embedding_id = f.embedding_id
              union all
              -- A chunk without a vector: embedding_id NULL, the packet of its document version.
              select null::uuid, d.packet_id, c.chunk_index, c.content, p.importance_score,
                     coalesce(p.last_accessed, p."timestamp", c.created_at), null::double precision
                from memsub.document_chunks c
                join memsub.document_index d on d.tenant_id = c.tenant_id and d.id = c.document_id
                left join memsub.packet_store p on p.tenant_id = d.tenant_id and p.packet_id = d.packet_id
               where f.is_chunk and c.tenant_id = v_tenant and c.id = f.embedding_id
              limit 1
          ) r
    ), top as materialized (
        select s.*, (row_number() over (order by s.score desc, s.hit_id))::integer as ord
          from scored s
         order by s.score desc, s.hit_id
         limit p_k
    ), recorded as (
        select r.target_id, r.access_id
          from memsub._record_accesses('embedding',
                                      (select array_agg(t.embedding_id order by t.ord) filter (where t.embedding_id is not null) from top t),
                                      (select array_agg(t.score order by t.ord) filter (where t.embedding_id is not null) from top t),
                                      p_query_text, 'hybrid_search', p_agent_id) r
         where p_record_access
    ), packets as (
        -- The hits' packets in one read, as memsub.get_packets returns them, only when asked (a one-time filter).
        select g.packet_id, to_jsonb(g) as packet
          from memsub.get_packets(array(select t.packet_id from top t)) g
         where p_with_packets
    )
    select t.embedding_id, t.packet_id, t.chunk_index, t.chunk_text, t.score::double precision, t.vector_rank,
           t.text_rank, t.distance, t.text_score, t.importance_score, r.access_id, g.packet
      from top t
      left join recorded r on r.target_id = t.embedding_id
      left join packets g on g.packet_id = t.packet_id
     order by t.ord;
end
$$;

ALTER FUNCTION memsub.hybrid_search(p_query_text text, p_query public.vector, p_k integer, p_embedding_type text, p_vector_weight double precision, p_text_weight double precision, p_rrf_k integer, p_candidates integer, p_importance_weight double precision, p_recency_weight double precision, p_half_life interval, p_record_access boolean, p_agent_id text, p_with_packets boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.hybrid_search(p_query_text text, p_query public.vector, p_k integer, p_embedding_type text, p_vector_weight double precision, p_text_weight double precision, p_rrf_k integer, p_candidates integer, p_importance_weight double precision, p_recency_weight double precision, p_half_life interval, p_record_access boolean, p_agent_id text, p_with_packets boolean) IS 'Hybrid retrieval: the candidates (default max(50, 4k)) nearest by vector (memsub.semantic_search) and best by full text (memsub._keyword_candidates), fused by reciprocal rank fusion: score = vector_weight / (rrf_k + vector_rank) + text_weight / (rrf_k + text_rank), a missing leg adding 0 (defaults: weights 1, rrf_k 60). Optional boost: score * (1 + importance_weight * importance + recency_weight * 0.5 ^ (idle time / half_life)), weights 0 by default. Either query may be NULL (one leg only). Rows are read back under row-level security. In the content space the keyword leg also ranks the chunks of latest document versions that carry no vector (memsub._chunk_keyword_candidates); such a row has embedding_id NULL and its document''s packet_id. with_packets fills the packet column with each hit''s packet as memsub.get_packets returns it; NULL otherwise.';

CREATE PROCEDURE memsub.install_row_security(IN p_table regclass, IN p_layers text[])
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    admin_pass constant text := '(select memsub.is_tenant_admin()) or (select memsub.is_platform_admin())';
begin
    execute format('alter table %s enable row level security', p_table);
    execute format('alter table %s force row level security', p_table);

    execute format('drop policy if exists tenant_isolation on %s', p_table);
    execute format('create policy tenant_isolation on %s as permissive for all to public '
                   'using (tenant_id = (select memsub.current_tenant_id()))', p_table);
    execute format('comment on policy tenant_isolation on %s is %L', p_table,
                   'Rows of the context tenant only (memsub.set_context).');

    execute format('drop policy if exists admin_override on %s', p_table);
    execute format('create policy admin_override on %s as permissive for all to public '
                   'using ((select memsub.is_platform_admin()))', p_table);
    execute format('comment on policy admin_override on %s is %L', p_table,
                   'platform_admin contexts (members of memsub_platform_admin) reach every tenant.');

    execute format('drop policy if exists org_isolation on %s', p_table);
    if 'org' = any(p_layers) then
        execute format('create policy org_isolation on %s as restrictive for all to public '
                       'using (org_id is null or org_id = (select memsub.current_org_id()) or %s)',
                       p_table, admin_pass);
        execute format('comment on policy org_isolation on %s is %L', p_table,
                       'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.');
    end if;

    execute format('drop policy if exists user_visibility on %s', p_table);
    if 'user' = any(p_layers) then
        execute format('create policy user_visibility on %s as restrictive for all to public using ('
                       'scope = ''shared'''
                       ' or (scope = ''l-private'' and user_id = (select memsub.current_user_id()))'
                       ' or (scope = ''cursor'' and (user_id = (select memsub.current_user_id())'
                       '                            or session_id = (select memsub.current_session_id())))'
                       ' or %s)', p_table, admin_pass);
        execute format('comment on policy user_visibility on %s is %L', p_table,
                       'Scope: shared rows for all, cursor rows for their user and session, l-private rows for their user; admins pass.');
    end if;
end
$$;

ALTER PROCEDURE memsub.install_row_security(IN p_table regclass, IN p_layers text[]) OWNER TO memsub_owner;

COMMENT ON PROCEDURE memsub.install_row_security(IN p_table regclass, IN p_layers text[]) IS 'Installs the standard memsub policy set on a tenant table: tenant_isolation and admin_override always, org_isolation when layers has ''org'', user_visibility (by scope) when layers has ''user''. Idempotent.';

CREATE FUNCTION memsub.is_platform_admin() RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select 'platform_admin' = any(memsub.current_context_roles())
       and pg_catalog.pg_has_role(memsub.acting_role(), 'memsub_platform_admin', 'MEMBER')
$$;

ALTER FUNCTION memsub.is_platform_admin() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.is_platform_admin() IS 'True when the context asks for platform_admin and the acting role is a member of memsub_platform_admin.';

CREATE FUNCTION memsub.is_tenant_admin() RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select 'tenant_admin' = any(memsub.current_context_roles())
       and pg_catalog.pg_has_role(memsub.acting_role(), 'memsub_tenant_admin', 'MEMBER')
$$;

ALTER FUNCTION memsub.is_tenant_admin() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.is_tenant_admin() IS 'True when the context asks for tenant_admin and the acting role is a member of memsub_tenant_admin.';

CREATE FUNCTION memsub.langgraph_check_text(p_value text, p_field text, p_blank_allowed boolean) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_value is null or (not p_blank_allowed and p_value !~ '\S') then
        raise exception 'memsub: % must be a non-empty string', p_field
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;

ALTER FUNCTION memsub.langgraph_check_text(p_value text, p_field text, p_blank_allowed boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_check_text(p_value text, p_field text, p_blank_allowed boolean) IS 'Returns p_value, or raises 22023 naming p_field when it is NULL (or blank, unless p_blank_allowed).';

CREATE FUNCTION memsub.langgraph_checkpoint_get(p_thread_id text, p_checkpoint_ns text DEFAULT ''::text, p_checkpoint_id text DEFAULT NULL::text) RETURNS SETOF memsub.langgraph_checkpoint_row
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
    found  memsub.langgraph_checkpoints;
begin
    -- Two fixed statements instead of one with `p_checkpoint_id is null or ...`, so each keeps a cached plan
    -- that walks the primary key.
    if p_checkpoint_id is null then
        select c.* into found from memsub.langgraph_checkpoints c
         where c.tenant_id = tenant and c.thread_id = p_thread_id and c.checkpoint_ns = p_checkpoint_ns
         order by c.checkpoint_id desc limit 1;
    else
        select c.* into found from memsub.langgraph_checkpoints c
         where c.tenant_id = tenant and c.thread_id = p_thread_id and c.checkpoint_ns = p_checkpoint_ns
           and c.checkpoint_id = p_checkpoint_id;
    end if;
    if found.checkpoint_id is null then
        return;
    end if;
    return query
    select found.thread_id, found.checkpoint_ns, found.checkpoint_id, found.parent_checkpoint_id,
           found.checkpoint_type, found.checkpoint, found.metadata,
           array_agg(x.task_id order by x.task_id, x.idx), array_agg(x.task_path order by x.task_id, x.idx),
           array_agg(x.idx order by x.task_id, x.idx), array_agg(x.channel order by x.task_id, x.idx),
           array_agg(x.value_type order by x.task_id, x.idx), array_agg(x.value order by x.task_id, x.idx)
      from memsub.langgraph_checkpoint_writes x
     where x.tenant_id = tenant and x.thread_id = found.thread_id and x.checkpoint_ns = found.checkpoint_ns
       and x.checkpoint_id = found.checkpoint_id;
end
$$;

ALTER FUNCTION memsub.langgraph_checkpoint_get(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_checkpoint_get(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text) IS 'One LangGraph checkpoint of the context tenant with its pending writes: the given id, or the newest of the thread and namespace when p_checkpoint_id is NULL. No row when there is none.';

CREATE FUNCTION memsub.langgraph_checkpoint_list(p_thread_id text DEFAULT NULL::text, p_checkpoint_ns text DEFAULT NULL::text, p_checkpoint_id text DEFAULT NULL::text, p_filter jsonb DEFAULT NULL::jsonb, p_before text DEFAULT NULL::text, p_limit integer DEFAULT NULL::integer) RETURNS SETOF memsub.langgraph_checkpoint_row
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET plan_cache_mode TO 'force_custom_plan'
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
begin
    if p_limit is not null and p_limit < 0 then
        raise exception 'memsub.langgraph_checkpoint_list: limit must not be negative'
            using errcode = '22023', column = 'limit';
    end if;
    if p_filter is not null and jsonb_typeof(p_filter) <> 'object' then
        raise exception 'memsub.langgraph_checkpoint_list: filter must be a JSON object'
            using errcode = '22023', column = 'filter';
    end if;
    return query
    select c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.checkpoint_type, c.checkpoint,
           c.metadata, w.task_ids, w.task_paths, w.idx, w.channels, w.value_types, w."values"
      from memsub.langgraph_checkpoints c
      left join lateral (
            select array_agg(x.task_id order by x.task_id, x.idx) as task_ids,
                   array_agg(x.task_path order by x.task_id, x.idx) as task_paths,
                   array_agg(x.idx order by x.task_id, x.idx) as idx,
                   array_agg(x.channel order by x.task_id, x.idx) as channels,
                   array_agg(x.value_type order by x.task_id, x.idx) as value_types,
                   array_agg(x.value order by x.task_id, x.idx) as "values"
              from memsub.langgraph_checkpoint_writes x
             where x.tenant_id = c.tenant_id and x.thread_id = c.thread_id
               and x.checkpoint_ns = c.checkpoint_ns and x.checkpoint_id = c.checkpoint_id) w on true
     where c.tenant_id = tenant
       and (p_thread_id is null or c.thread_id = p_thread_id)
       and (p_checkpoint_ns is null or c.checkpoint_ns = p_checkpoint_ns)
       and (p_checkpoint_id is null or c.checkpoint_id = p_checkpoint_id)
       and (p_filter is null or c.metadata @> p_filter)
       and (p_before is null or c.checkpoint_id < p_before)
     order by c.checkpoint_id desc
     limit p_limit;
end
$$;

ALTER FUNCTION memsub.langgraph_checkpoint_list(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_filter jsonb, p_before text, p_limit integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_checkpoint_list(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_filter jsonb, p_before text, p_limit integer) IS 'LangGraph checkpoints of the context tenant, newest first, each with its pending writes (parallel arrays). Optional filters: thread, namespace, checkpoint id, metadata containment (p_filter), ids before p_before, at most p_limit rows. Reading the latest checkpoint of a thread: p_thread_id, p_checkpoint_ns, p_limit 1.';

CREATE FUNCTION memsub.langgraph_checkpoint_put(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_parent_checkpoint_id text, p_checkpoint_type text, p_checkpoint bytea, p_metadata jsonb DEFAULT '{}'::jsonb) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
begin
    perform memsub.langgraph_check_text(p_thread_id, 'thread_id', false);
    perform memsub.langgraph_check_text(p_checkpoint_ns, 'checkpoint_ns', true);
    perform memsub.langgraph_check_text(p_checkpoint_id, 'checkpoint_id', false);
    perform memsub.langgraph_check_text(p_checkpoint_type, 'checkpoint_type', false);
    if p_checkpoint is null then
        raise exception 'memsub.langgraph_checkpoint_put: checkpoint must not be null'
            using errcode = '23502', column = 'checkpoint';
    end if;
    if jsonb_typeof(coalesce(p_metadata, '{}'::jsonb)) <> 'object' then
        raise exception 'memsub.langgraph_checkpoint_put: metadata must be a JSON object'
            using errcode = '22023', column = 'metadata';
    end if;
    insert into memsub.langgraph_checkpoints as c
           (tenant_id, org_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type,
            checkpoint, metadata)
    values (tenant, memsub.current_org_id(), p_thread_id, p_checkpoint_ns, p_checkpoint_id,
            nullif(p_parent_checkpoint_id, ''), p_checkpoint_type, p_checkpoint, coalesce(p_metadata, '{}'::jsonb))
    on conflict (tenant_id, thread_id, checkpoint_ns, checkpoint_id) do update
       set parent_checkpoint_id = excluded.parent_checkpoint_id,
           checkpoint_type = excluded.checkpoint_type,
           checkpoint = excluded.checkpoint,
           metadata = excluded.metadata;
end
$$;

ALTER FUNCTION memsub.langgraph_checkpoint_put(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_parent_checkpoint_id text, p_checkpoint_type text, p_checkpoint bytea, p_metadata jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_checkpoint_put(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_parent_checkpoint_id text, p_checkpoint_type text, p_checkpoint bytea, p_metadata jsonb) IS 'Saves a LangGraph checkpoint of the context tenant (replacing one with the same thread, namespace and id). 22023 naming the field for a blank thread_id/checkpoint_id/checkpoint_type or non-object metadata.';

CREATE FUNCTION memsub.langgraph_checkpoint_put_writes(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_task_id text, p_task_path text, p_idx integer[], p_channels text[], p_value_types text[], p_values bytea[], p_replace boolean DEFAULT false) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant  uuid := memsub._require_tenant_id();
    n       integer := coalesce(cardinality(p_idx), 0);
    written integer;
begin
    perform memsub.langgraph_check_text(p_thread_id, 'thread_id', false);
    perform memsub.langgraph_check_text(p_checkpoint_ns, 'checkpoint_ns', true);
    perform memsub.langgraph_check_text(p_checkpoint_id, 'checkpoint_id', false);
    perform memsub.langgraph_check_text(p_task_id, 'task_id', false);
    if coalesce(cardinality(p_channels), 0) <> n or coalesce(cardinality(p_value_types), 0) <> n
       or coalesce(cardinality(p_values), 0) <> n then
        raise exception 'memsub.langgraph_checkpoint_put_writes: idx, channels, value_types and values must have '
                        'the same length'
            using errcode = '22023', column = 'channels';
    end if;
    if array_position(p_channels, null) is not null or array_position(p_value_types, null) is not null
       or array_position(p_idx, null) is not null then
        raise exception 'memsub.langgraph_checkpoint_put_writes: idx, channels and value_types must not hold NULL'
            using errcode = '22023', column = 'channels';
    end if;
    insert into memsub.langgraph_checkpoint_writes as w
           (tenant_id, org_id, thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel,
            value_type, value)
    select tenant, (select memsub.current_org_id()), p_thread_id, p_checkpoint_ns, p_checkpoint_id, p_task_id,
           coalesce(p_task_path, ''), u.idx, u.channel, u.value_type, u.value
      from unnest(p_idx, p_channels, p_value_types, p_values) as u(idx, channel, value_type, value)
    on conflict (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) do update
       set channel = excluded.channel, value_type = excluded.value_type, value = excluded.value,
           task_path = excluded.task_path
     where p_replace;
    get diagnostics written = row_count;
    return written;
end
$$;

ALTER FUNCTION memsub.langgraph_checkpoint_put_writes(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_task_id text, p_task_path text, p_idx integer[], p_channels text[], p_value_types text[], p_values bytea[], p_replace boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_checkpoint_put_writes(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_task_id text, p_task_path text, p_idx integer[], p_channels text[], p_value_types text[], p_values bytea[], p_replace boolean) IS 'Records the pending writes of one LangGraph task against a checkpoint (parallel arrays, one element per write). An existing write (same task and idx) is kept, or replaced when p_replace. Returns the rows written.';

CREATE FUNCTION memsub.langgraph_runs_delete(p_run_ids text[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant  uuid := memsub._require_tenant_id();
    deleted integer;
begin
    with gone as (
        delete from memsub.langgraph_checkpoints c
         where c.tenant_id = tenant and c.metadata ? 'run_id' and (c.metadata ->> 'run_id') = any(p_run_ids)
        returning c.tenant_id, c.thread_id, c.checkpoint_ns, c.checkpoint_id
    ), writes as (
        delete from memsub.langgraph_checkpoint_writes w
         using gone g
         where w.tenant_id = g.tenant_id and w.thread_id = g.thread_id and w.checkpoint_ns = g.checkpoint_ns
           and w.checkpoint_id = g.checkpoint_id
    )
    select count(*) into deleted from gone;
    return deleted;
end
$$;

ALTER FUNCTION memsub.langgraph_runs_delete(p_run_ids text[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_runs_delete(p_run_ids text[]) IS 'Deletes the checkpoints of the context tenant whose metadata run_id is one of p_run_ids, with their writes; returns the checkpoints deleted.';

CREATE FUNCTION memsub.langgraph_store_check_namespace(p_namespace text[], p_field text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_namespace is null or cardinality(p_namespace) = 0 then
        raise exception 'memsub: % must hold at least one label', p_field using errcode = '22023', column = p_field;
    end if;
    if array_ndims(p_namespace) > 1 then
        raise exception 'memsub: % must be a one-dimensional array of labels', p_field
            using errcode = '22023', column = p_field;
    end if;
    -- Plain expressions, no sub-select: a put checks its namespace on every call.
    if array_position(p_namespace, null) is not null or '' = any(p_namespace)
       or strpos(array_to_string(p_namespace, ''), '.') > 0 then
        raise exception 'memsub: % labels must be non-empty and hold no period', p_field
            using errcode = '22023', column = p_field;
    end if;
    return p_namespace;
end
$$;

ALTER FUNCTION memsub.langgraph_store_check_namespace(p_namespace text[], p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_store_check_namespace(p_namespace text[], p_field text) IS 'Returns p_namespace, or raises 22023 naming p_field when it is empty or not one-dimensional, or a label is NULL, empty or holds a period (so the labels joined by periods, namespace_key, name one namespace).';

CREATE FUNCTION memsub.langgraph_store_get(p_namespace text[], p_key text, p_refresh_ttl boolean DEFAULT true) RETURNS SETOF memsub.langgraph_store_item
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._unsealed_tenant_id();  -- its seal checked by the read or after it
    v_key  text := memsub._langgraph_store_namespace_key(p_namespace);
    item   memsub.langgraph_store_items%rowtype;
begin
    -- One keyed read, and an update only for an item with a time to live: a read-and-update in one statement
    -- (a data-modifying WITH) prepared the update on every call, with or without a time to live to restart.
    select i.* into item from memsub.langgraph_store_items i
     where i.tenant_id = tenant and i.namespace_key = v_key and i.key = p_key
       and i.namespace = p_namespace and (i.expires_at is null or i.expires_at > now());
    if not found then
        perform memsub._require_tenant_id();  -- 42501 without a context or with one not set by set_context
        return;
    end if;
    if p_refresh_ttl and item.ttl_minutes is not null then
        update memsub.langgraph_store_items i
           set expires_at = now() + make_interval(secs => i.ttl_minutes * 60)
         where i.tenant_id = tenant and i.namespace_key = item.namespace_key and i.key = item.key;
    end if;
    return next row(item.namespace::text[], item.key::text, item.value, item.created_at, item.updated_at,
                    null::double precision)::memsub.langgraph_store_item;
end
$$;

ALTER FUNCTION memsub.langgraph_store_get(p_namespace text[], p_key text, p_refresh_ttl boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_store_get(p_namespace text[], p_key text, p_refresh_ttl boolean) IS 'The live (unexpired) LangGraph store item at namespace and key of the context tenant, or no row; p_refresh_ttl restarts its time to live.';

CREATE FUNCTION memsub.langgraph_store_list_namespaces(p_prefix text[] DEFAULT NULL::text[], p_suffix text[] DEFAULT NULL::text[], p_max_depth integer DEFAULT NULL::integer, p_limit integer DEFAULT 100, p_offset integer DEFAULT 0) RETURNS TABLE(namespace text[])
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant    uuid := memsub._unsealed_tenant_id();  -- its seal checked by the read or after it
    key_range record;  -- the namespaces that begin with the prefix's labels before its first '*', as a range of keys
    -- A prefix or suffix without '*' is compared as an array slice; one with '*' label by label. As sub-selects
    -- (before), the tests ran an executor node for every namespace: a listing of 200 namespaces took 1.1 times
    -- the server time (20 namespaces: the same).
    prefix_plain boolean := array_position(p_prefix, '*') is null;
    suffix_plain boolean := array_position(p_suffix, '*') is null;
begin
    if p_limit is null or p_limit < 0 or p_offset is null or p_offset < 0
       or (p_max_depth is not null and p_max_depth < 1) then
        raise exception 'memsub.langgraph_store_list_namespaces: limit, offset and max_depth must be non-negative '
                        '(max_depth at least 1)'
            using errcode = '22023',
                  column = case when p_max_depth is not null and p_max_depth < 1 then 'max_depth'
                                when p_limit is null or p_limit < 0 then 'limit' else 'offset' end;
    end if;
    key_range := memsub._langgraph_store_key_range(
        tenant, p_prefix[1:coalesce(array_position(p_prefix, '*') - 1, cardinality(p_prefix))]);
    -- The tenant's distinct namespaces first, by their keys in index order (a label holds no period, so the
    -- key's parts are the labels); then the prefix and suffix (a label '*' matches any label), the depth and the
    -- page, over those few. OFFSET 0 keeps the prefix and suffix tests above the DISTINCT: pushed below it, as
    -- the planner otherwise may, they ran once an item instead of once a namespace (1.4 times the server time
    -- with 20 items a namespace).
    return query
    select distinct n.truncated
      from (select case when p_max_depth is null then k.labels else k.labels[1:p_max_depth] end as truncated
              from (select string_to_array(d.namespace_key, '.') collate "C" as labels
                      from (select distinct i.namespace_key from memsub.langgraph_store_items i
                             where i.tenant_id = tenant and i.namespace_key >= key_range.low
                               and i.namespace_key < key_range.high
                               and (i.expires_at is null or i.expires_at > now())
                            offset 0) d) k
             where (p_prefix is null
                    or case when prefix_plain then k.labels[1:cardinality(p_prefix)] = p_prefix
                            else memsub._langgraph_store_labels_match(k.labels, p_prefix, false) end)
               and (p_suffix is null
                    or case when suffix_plain
                            then k.labels[cardinality(k.labels) - cardinality(p_suffix) + 1:] = p_suffix
                            else memsub._langgraph_store_labels_match(k.labels, p_suffix, true) end)
           ) n
     order by n.truncated
     limit p_limit offset p_offset;
    if not found then
        perform memsub._require_tenant_id();  -- 42501 without a context or with one not set by set_context
    end if;
end
$$;

ALTER FUNCTION memsub.langgraph_store_list_namespaces(p_prefix text[], p_suffix text[], p_max_depth integer, p_limit integer, p_offset integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_store_list_namespaces(p_prefix text[], p_suffix text[], p_max_depth integer, p_limit integer, p_offset integer) IS 'Distinct namespaces of the context tenant''s live store items, sorted, matching a prefix and/or suffix (a label ''*'' matches any label) and cut to p_max_depth labels.';

CREATE FUNCTION memsub.langgraph_store_matches(p_value jsonb, p_filter jsonb) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
    field     text;
    condition jsonb;
    operator  text;
    operand   jsonb;
    actual    jsonb;
    compared  integer;
    satisfied boolean;
begin
    for field, condition in select * from jsonb_each(coalesce(p_filter, '{}'::jsonb)) loop
        actual := p_value -> field;
        if jsonb_typeof(condition) = 'object'
           and exists (select from jsonb_object_keys(condition) k where left(k, 1) = '$') then
            for operator, operand in select * from jsonb_each(condition) loop
                if operator = '$eq' then
                    if actual is distinct from operand then return false; end if;
                elsif operator = '$ne' then
                    if actual is not distinct from operand then return false; end if;
                elsif operator in ('$gt', '$gte', '$lt', '$lte') then
                    if actual is null or jsonb_typeof(actual) <> jsonb_typeof(operand)
                       or jsonb_typeof(actual) not in ('number', 'string') then
                        return false;
                    end if;
                    compared := case when jsonb_typeof(actual) = 'number'
                                     then sign((actual #>> '{}')::numeric - (operand #>> '{}')::numeric)::integer
                                     else case when (actual #>> '{}') < (operand #>> '{}') then -1
                                               when (actual #>> '{}') > (operand #>> '{}') then 1 else 0 end end;
                    satisfied := case operator when '$gt' then compared > 0 when '$gte' then compared >= 0
                                               when '$lt' then compared < 0 else compared <= 0 end;
                    if not satisfied then
                        return false;
                    end if;
                else
                    raise exception 'memsub: unknown filter operator "%" for field %', operator, field
                        using errcode = '22023', column = 'filter',
                              hint = 'Known operators: $eq, $ne, $gt, $gte, $lt, $lte.';
                end if;
            end loop;
        elsif actual is distinct from condition then
            return false;
        end if;
    end loop;
    return true;
end
$_$;

ALTER FUNCTION memsub.langgraph_store_matches(p_value jsonb, p_filter jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_store_matches(p_value jsonb, p_filter jsonb) IS 'True when a store item''s value satisfies a LangGraph filter: {field: value} is equality, {field: {$op: value}} compares with $eq, $ne, $gt, $gte, $lt, $lte (numbers as numbers, strings as text). 22023 for another $op.';

CREATE FUNCTION memsub.langgraph_store_put(p_namespace text[], p_key text, p_value jsonb, p_ttl_minutes double precision DEFAULT NULL::double precision, p_fields text[] DEFAULT '{}'::text[], p_embeddings public.vector[] DEFAULT '{}'::public.vector[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
    org    uuid := memsub.current_org_id();
    v_key  text;
begin
    v_key := memsub._langgraph_store_namespace_key(memsub.langgraph_store_check_namespace(p_namespace, 'namespace'));
    if p_key is null or p_key = '' then
        raise exception 'memsub.langgraph_store_put: key must be a non-empty string'
            using errcode = '22023', column = 'key';
    end if;
    if p_value is null then  -- LangGraph's delete is a put of None
        delete from memsub.langgraph_store_items i
         where i.tenant_id = tenant and i.namespace_key = v_key and i.key = p_key;
        return;
    end if;
    if jsonb_typeof(p_value) <> 'object' then
        raise exception 'memsub.langgraph_store_put: value must be a JSON object'
            using errcode = '22023', column = 'value';
    end if;
    if p_ttl_minutes is not null and not (p_ttl_minutes > 0 and p_ttl_minutes < 'infinity'::float8) then
        raise exception 'memsub.langgraph_store_put: ttl must be a positive, finite number of minutes'
            using errcode = '22023', column = 'ttl';
    end if;
    -- The vectors come as vector values (a driver sends them in pgvector's binary form): nothing to parse here.
    if coalesce(cardinality(p_embeddings), 0) <> coalesce(cardinality(p_fields), 0) or array_ndims(p_embeddings) > 1
       or exists (select from unnest(p_embeddings) as e(embedding) where e.embedding is null) then
        raise exception 'memsub.langgraph_store_put: embeddings must hold one vector per field'
            using errcode = '22023', column = 'embeddings';
    end if;
    insert into memsub.langgraph_store_items as i
           (tenant_id, org_id, namespace, namespace_key, key, value, ttl_minutes, expires_at)
    values (tenant, org, p_namespace, v_key, p_key, p_value, p_ttl_minutes,
            now() + make_interval(secs => p_ttl_minutes * 60))
    on conflict (tenant_id, namespace_key, key) do update
       set value = excluded.value, updated_at = now(), ttl_minutes = excluded.ttl_minutes,
           expires_at = excluded.expires_at;
    delete from memsub.langgraph_store_vectors v
     where v.tenant_id = tenant and v.namespace_key = v_key and v.key = p_key;
    insert into memsub.langgraph_store_vectors (tenant_id, org_id, namespace, namespace_key, key, field_name,
                                                embedding)
    select tenant, org, p_namespace, v_key, p_key, f.field_name, f.embedding
      from unnest(p_fields, p_embeddings) as f(field_name, embedding);
end
$$;

ALTER FUNCTION memsub.langgraph_store_put(p_namespace text[], p_key text, p_value jsonb, p_ttl_minutes double precision, p_fields text[], p_embeddings public.vector[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_store_put(p_namespace text[], p_key text, p_value jsonb, p_ttl_minutes double precision, p_fields text[], p_embeddings public.vector[]) IS 'Writes (or, with a NULL value, deletes) a LangGraph store item of the context tenant. p_ttl_minutes makes it expire; p_fields and p_embeddings (one vector per field, in their order) replace its search vectors.';

CREATE FUNCTION memsub.langgraph_store_search(p_namespace_prefix text[] DEFAULT '{}'::text[], p_filter jsonb DEFAULT NULL::jsonb, p_query_embedding public.vector DEFAULT NULL::public.vector, p_limit integer DEFAULT 10, p_offset integer DEFAULT 0, p_refresh_ttl boolean DEFAULT true, p_distance text DEFAULT 'cosine'::text) RETURNS SETOF memsub.langgraph_store_item
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $_$
declare
    tenant   uuid := memsub._unsealed_tenant_id();  -- its seal checked by the read or after it
    prefix   text[] := coalesce(p_namespace_prefix, '{}');
    found    memsub.langgraph_store_item[];
    item     memsub.langgraph_store_item;
    expiring boolean;
    -- A filter of plain values (no operator, no object or array to compare) matches as JSON containment, one
    -- operator a row; any other filter is evaluated by memsub.langgraph_store_matches, a function call a row.
    -- The path is strict: lax mode would unwrap an array value and test its elements.
    plain    boolean := case when jsonb_typeof(p_filter) = 'object'
                             then not jsonb_path_exists(p_filter,
                                                        'strict $.* ? (@.type() == "object" || @.type() == "array")')
                             else true end;
    key_range record;  -- the prefix's namespaces as a range of namespace_key (memsub._langgraph_store_key_range)
begin
    if p_limit is null or p_limit < 0 or p_offset is null or p_offset < 0 then
        raise exception 'memsub.langgraph_store_search: limit and offset must be non-negative'
            using errcode = '22023', column = case when p_limit is null or p_limit < 0 then 'limit' else 'offset' end;
    end if;
    if p_distance is null or p_distance not in ('cosine', 'l2', 'inner_product') then
        raise exception 'memsub.langgraph_store_search: distance_type must be cosine, l2 or inner_product, not %',
                        coalesce(p_distance, 'NULL')
            using errcode = '22023', column = 'distance_type';
    end if;
    if p_filter is not null and jsonb_typeof(p_filter) <> 'object' then
        raise exception 'memsub.langgraph_store_search: filter must be a JSON object'
            using errcode = '22023', column = 'filter';
    end if;
    key_range := memsub._langgraph_store_key_range(tenant, prefix);
    -- The page is read into an array, and the times to live restarted by an update only when one of its items
    -- has one: a data-modifying WITH prepared the update on every call.
    if p_query_embedding is null then
        -- Newest first. A statement of its own: the executor starts every sub-select of a statement, so the
        -- scoring one below, unused without a query, cost a filtered search a sixth of its server time.
        select coalesce(array_agg(row(p.namespace::text[], p.key::text, p.value, p.created_at, p.updated_at,
                                      null::double precision)::memsub.langgraph_store_item
                                  order by p.updated_at desc, p.namespace, p.key), '{}'),
               coalesce(bool_or(p.ttl_minutes is not null), false)
          into found, expiring
          from (select i.namespace, i.key, i.value, i.created_at, i.updated_at, i.ttl_minutes
                  from memsub.langgraph_store_items i
                 where i.tenant_id = tenant and i.namespace_key >= key_range.low
                   and i.namespace_key < key_range.high
                   and i.namespace[1:cardinality(prefix)] = prefix
                   and (i.expires_at is null or i.expires_at > now())
                   and (p_filter is null
                        or case when plain then i.value @> p_filter
                                else memsub.langgraph_store_matches(i.value, p_filter) end)
                 order by i.updated_at desc, i.namespace, i.key
                 limit p_limit offset p_offset) p;
    else
        with candidates as (
            select i.namespace, i.key, i.value, i.created_at, i.updated_at, i.ttl_minutes,
                   -- Higher is nearer for each distance, as LangGraph's PostgresStore scores them.
                   (select max(case p_distance
                                   when 'l2' then -(v.embedding <-> p_query_embedding)
                                   when 'inner_product' then -(v.embedding <#> p_query_embedding)
                                   else 1 - (v.embedding <=> p_query_embedding) end)
                      from memsub.langgraph_store_vectors v
                     where v.tenant_id = tenant and v.namespace_key = i.namespace_key and v.key = i.key
                       -- a query of any dimension meets only the stored vectors of its own
                       and vector_dims(v.embedding) = vector_dims(p_query_embedding)) as score
              from memsub.langgraph_store_items i
             where i.tenant_id = tenant and i.namespace_key >= key_range.low
               and i.namespace_key < key_range.high
               and i.namespace[1:cardinality(prefix)] = prefix
               and (i.expires_at is null or i.expires_at > now())
               and (p_filter is null
                    or case when plain then i.value @> p_filter
                            else memsub.langgraph_store_matches(i.value, p_filter) end)
        ), page as (
            select c.* from candidates c
             order by c.score desc nulls last, c.updated_at desc, c.namespace, c.key
             limit p_limit offset p_offset
        )
        select coalesce(array_agg(row(p.namespace::text[], p.key::text, p.value, p.created_at, p.updated_at,
                                      p.score)::memsub.langgraph_store_item
                                  order by p.score desc nulls last, p.updated_at desc, p.namespace, p.key), '{}'),
               coalesce(bool_or(p.ttl_minutes is not null), false)
          into found, expiring
          from page p;
    end if;
    if cardinality(found) = 0 then
        perform memsub._require_tenant_id();  -- 42501 without a context or with one not set by set_context
    end if;
    if p_refresh_ttl and expiring then
        update memsub.langgraph_store_items i
           set expires_at = now() + make_interval(secs => i.ttl_minutes * 60)
          from unnest(found) p
         where i.tenant_id = tenant and i.namespace_key = memsub._langgraph_store_namespace_key(p.namespace)
           and i.key = p.key
           and i.ttl_minutes is not null;
    end if;
    foreach item in array found loop
        return next item;
    end loop;
end
$_$;

ALTER FUNCTION memsub.langgraph_store_search(p_namespace_prefix text[], p_filter jsonb, p_query_embedding public.vector, p_limit integer, p_offset integer, p_refresh_ttl boolean, p_distance text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_store_search(p_namespace_prefix text[], p_filter jsonb, p_query_embedding public.vector, p_limit integer, p_offset integer, p_refresh_ttl boolean, p_distance text) IS 'Live LangGraph store items of the context tenant under a namespace prefix that match p_filter: by score against p_query_embedding when given (the best of the item''s indexed fields; p_distance cosine: 1 - cosine distance, l2: minus the Euclidean distance, inner_product: the inner product), else newest first; p_refresh_ttl restarts the time to live of what is returned. 22023 (distance_type) for another distance.';

CREATE FUNCTION memsub.langgraph_store_sweep() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant  uuid := memsub._require_tenant_id();
    deleted integer;
begin
    delete from memsub.langgraph_store_items i where i.tenant_id = tenant and i.expires_at <= now();
    get diagnostics deleted = row_count;
    return deleted;
end
$$;

ALTER FUNCTION memsub.langgraph_store_sweep() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_store_sweep() IS 'Deletes the context tenant''s expired LangGraph store items (and their vectors); returns how many.';

CREATE FUNCTION memsub.langgraph_thread_copy(p_source_thread_id text, p_target_thread_id text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant uuid := memsub._require_tenant_id();
    copied integer;
begin
    perform memsub.langgraph_check_text(p_source_thread_id, 'source_thread_id', false);
    perform memsub.langgraph_check_text(p_target_thread_id, 'target_thread_id', false);
    insert into memsub.langgraph_checkpoints
           (tenant_id, org_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type,
            checkpoint, metadata)
    select tenant, (select memsub.current_org_id()), p_target_thread_id, c.checkpoint_ns, c.checkpoint_id,
           c.parent_checkpoint_id, c.checkpoint_type, c.checkpoint, c.metadata
      from memsub.langgraph_checkpoints c
     where c.tenant_id = tenant and c.thread_id = p_source_thread_id
    on conflict (tenant_id, thread_id, checkpoint_ns, checkpoint_id) do nothing;
    get diagnostics copied = row_count;
    insert into memsub.langgraph_checkpoint_writes
           (tenant_id, org_id, thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel,
            value_type, value)
    select tenant, (select memsub.current_org_id()), p_target_thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id,
           w.task_path, w.idx, w.channel, w.value_type, w.value
      from memsub.langgraph_checkpoint_writes w
     where w.tenant_id = tenant and w.thread_id = p_source_thread_id
    on conflict (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) do nothing;
    return copied;
end
$$;

ALTER FUNCTION memsub.langgraph_thread_copy(p_source_thread_id text, p_target_thread_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_thread_copy(p_source_thread_id text, p_target_thread_id text) IS 'Copies every checkpoint (the whole parent chain) and write of a thread of the context tenant to another thread; returns the checkpoints copied. Existing checkpoints of the target are kept.';

CREATE FUNCTION memsub.langgraph_thread_delete(p_thread_ids text[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant  uuid := memsub._require_tenant_id();
    deleted integer;
begin
    delete from memsub.langgraph_checkpoint_writes w where w.tenant_id = tenant and w.thread_id = any(p_thread_ids);
    delete from memsub.langgraph_checkpoints c where c.tenant_id = tenant and c.thread_id = any(p_thread_ids);
    get diagnostics deleted = row_count;
    return deleted;
end
$$;

ALTER FUNCTION memsub.langgraph_thread_delete(p_thread_ids text[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_thread_delete(p_thread_ids text[]) IS 'Deletes every checkpoint and write of the given threads of the context tenant; returns the checkpoints deleted.';

CREATE FUNCTION memsub.langgraph_thread_prune(p_thread_ids text[], p_strategy text DEFAULT 'keep_latest'::text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    tenant  uuid := memsub._require_tenant_id();
    deleted integer;
begin
    if p_strategy = 'delete' then
        return memsub.langgraph_thread_delete(p_thread_ids);
    elsif p_strategy is distinct from 'keep_latest' then
        raise exception 'memsub.langgraph_thread_prune: unknown strategy "%"', p_strategy
            using errcode = '22023', column = 'strategy', hint = 'Known strategies: keep_latest, delete.';
    end if;
    with latest as (
        select distinct on (c.thread_id, c.checkpoint_ns) c.thread_id, c.checkpoint_ns, c.checkpoint_id
          from memsub.langgraph_checkpoints c
         where c.tenant_id = tenant and c.thread_id = any(p_thread_ids)
         order by c.thread_id, c.checkpoint_ns, c.checkpoint_id desc
    ), gone as (
        delete from memsub.langgraph_checkpoints c
         where c.tenant_id = tenant and c.thread_id = any(p_thread_ids)
           and not exists (select from latest l where l.thread_id = c.thread_id
                            and l.checkpoint_ns = c.checkpoint_ns and l.checkpoint_id = c.checkpoint_id)
        returning 1
    ), writes as (
        delete from memsub.langgraph_checkpoint_writes w
         where w.tenant_id = tenant and w.thread_id = any(p_thread_ids)
           and not exists (select from latest l where l.thread_id = w.thread_id
                            and l.checkpoint_ns = w.checkpoint_ns and l.checkpoint_id = w.checkpoint_id)
    )
    select count(*) into deleted from gone;
    return deleted;
end
$$;

ALTER FUNCTION memsub.langgraph_thread_prune(p_thread_ids text[], p_strategy text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.langgraph_thread_prune(p_thread_ids text[], p_strategy text) IS 'Prunes threads of the context tenant: keep_latest keeps the newest checkpoint of each namespace and its writes; delete removes everything. Returns the checkpoints deleted.';

CREATE TABLE memsub.importance_learning_runs (
    run_id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    accesses_counted integer NOT NULL,
    feedback_learned integer NOT NULL,
    targets_updated integer NOT NULL,
    targets_decayed integer NOT NULL,
    decay_factor double precision NOT NULL,
    parameters jsonb NOT NULL,
    CONSTRAINT importance_learning_runs_decay_in_unit_range CHECK (((decay_factor >= (0)::double precision) AND (decay_factor <= (1)::double precision)))
);

ALTER TABLE ONLY memsub.importance_learning_runs FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.importance_learning_runs OWNER TO memsub_owner;

COMMENT ON TABLE memsub.importance_learning_runs IS 'What each memsub.learn_importance run did for a tenant; the latest row is the start of the next decay interval.';

COMMENT ON COLUMN memsub.importance_learning_runs.run_id IS 'Run identifier.';

COMMENT ON COLUMN memsub.importance_learning_runs.tenant_id IS 'Tenant the run learned for.';

COMMENT ON COLUMN memsub.importance_learning_runs.started_at IS 'Start of the run (its transaction time).';

COMMENT ON COLUMN memsub.importance_learning_runs.finished_at IS 'End of the run.';

COMMENT ON COLUMN memsub.importance_learning_runs.accesses_counted IS 'Accesses folded in as frequency.';

COMMENT ON COLUMN memsub.importance_learning_runs.feedback_learned IS 'Feedback (useful / not useful) folded in.';

COMMENT ON COLUMN memsub.importance_learning_runs.targets_updated IS 'Packets and legacy memories whose importance moved by access or feedback.';

COMMENT ON COLUMN memsub.importance_learning_runs.targets_decayed IS 'Idle packets and legacy memories whose importance decayed.';

COMMENT ON COLUMN memsub.importance_learning_runs.decay_factor IS 'Factor applied to (importance - floor) of idle memories in this run.';

COMMENT ON COLUMN memsub.importance_learning_runs.parameters IS 'Learning parameters of the run (rates, half-life, floor, idle window).';

CREATE FUNCTION memsub.learn_importance(p_access_rate double precision DEFAULT 0.02, p_feedback_rate double precision DEFAULT 0.2, p_half_life interval DEFAULT '30 days'::interval, p_floor double precision DEFAULT 0.05, p_idle_after interval DEFAULT '7 days'::interval) RETURNS memsub.importance_learning_runs
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_started  timestamptz := now();
    v_previous timestamptz;
    v_factor   double precision := 1.0;
    v_counted  integer;
    v_feedback integer;
    v_updated  integer := 0;
    v_decayed  integer := 0;
    v_rows     integer;
    v_run      memsub.importance_learning_runs;
begin
    perform memsub._check_unit(p_access_rate, 'access_rate');
    perform memsub._check_unit(p_feedback_rate, 'feedback_rate');
    perform memsub._check_unit(p_floor, 'floor');
    perform memsub._check_half_life(p_half_life), memsub._check_finite_interval(p_idle_after, 'idle_after');
    if p_idle_after is null or p_idle_after < interval '0' then
        raise exception 'field "idle_after" must not be negative' using errcode = '22023', column = 'idle_after';
    end if;
    -- One run per tenant at a time: a row lock only memsub's roles can take (memsub.take_maintenance_lock).
    perform memsub.take_maintenance_lock('learn_importance', v_tenant::text);

    select max(r.finished_at) into v_previous from memsub.importance_learning_runs r where r.tenant_id = v_tenant;
    if v_previous is not null then
        v_factor := power(0.5, greatest(0.0, date_part('epoch', clock_timestamp() - v_previous))
                               / date_part('epoch', p_half_life));
    end if;

    -- What is new in the log. An embedding access counts for its packet; an embedding id with no
    -- memory_embeddings row is a legacy memory (semantic_memory.embedding_id).
    create temporary table learn_batch on commit drop as
    select l.access_id,
           case when l.target_type <> 'embedding' then l.target_type
                when e.embedding_id is null then 'semantic' else 'packet' end as target_type,
           coalesce(e.packet_id, l.target_id) as target_id,
           l.counted_at is null as count_it,
           (l.was_useful is not null and l.feedback_learned_at is null) as learn_feedback,
           l.was_useful
      from memsub.memory_access_log l
      left join memsub.memory_embeddings e
             on l.target_type = 'embedding' and e.tenant_id = l.tenant_id and e.embedding_id = l.target_id
     where l.tenant_id = v_tenant
       and (l.counted_at is null or (l.was_useful is not null and l.feedback_learned_at is null))
       for update of l;

    select count(*) filter (where b.count_it), count(*) filter (where b.learn_feedback)
      into v_counted, v_feedback from learn_batch b;

    create temporary table learn_delta on commit drop as
    select b.target_type, b.target_id,
           count(*) filter (where b.count_it) as accesses,
           count(*) filter (where b.learn_feedback and b.was_useful) as useful,
           count(*) filter (where b.learn_feedback and not b.was_useful) as useless
      from learn_batch b
     group by 1, 2;

    update memsub.packet_store s
       set importance_score = least(1.0, greatest(0.0,
               memsub._importance_step(s.importance_score, d.accesses, d.useful, d.useless, p_access_rate, p_feedback_rate)))
      from learn_delta d
     where d.target_type = 'packet' and s.tenant_id = v_tenant and s.packet_id = d.target_id;
    get diagnostics v_rows = row_count;
    v_updated := v_updated + v_rows;
    update memsub.semantic_memory m
       set importance_score = least(1.0, greatest(0.0,
               memsub._importance_step(m.importance_score, d.accesses, d.useful, d.useless, p_access_rate, p_feedback_rate)))
      from learn_delta d
     where d.target_type = 'semantic' and m.tenant_id = v_tenant and m.embedding_id = d.target_id;
    get diagnostics v_rows = row_count;
    v_updated := v_updated + v_rows;

    -- Decay of idle memories, by the time since the previous run.
    if v_factor < 1.0 then
        update memsub.packet_store s
           set importance_score = p_floor + (s.importance_score - p_floor) * v_factor
         where s.tenant_id = v_tenant and s.importance_score > p_floor
           and coalesce(s.last_accessed, s."timestamp") <= v_started - p_idle_after;
        get diagnostics v_rows = row_count;
        v_decayed := v_decayed + v_rows;
        update memsub.semantic_memory m
           set importance_score = p_floor + (m.importance_score - p_floor) * v_factor
         where m.tenant_id = v_tenant and m.importance_score > p_floor
           and coalesce(m.last_accessed, m.created_at) <= v_started - p_idle_after;
        get diagnostics v_rows = row_count;
        v_decayed := v_decayed + v_rows;
    end if;

    update memsub.memory_access_log l
       set counted_at = coalesce(l.counted_at, v_started),
           feedback_learned_at = case when b.learn_feedback then v_started else l.feedback_learned_at end
      from learn_batch b
     where l.tenant_id = v_tenant and l.access_id = b.access_id;

    insert into memsub.importance_learning_runs (
        tenant_id, started_at, finished_at, accesses_counted, feedback_learned, targets_updated, targets_decayed,
        decay_factor, parameters)
    values (
        v_tenant, v_started, clock_timestamp(), v_counted, v_feedback, v_updated, v_decayed, v_factor,
        jsonb_build_object('access_rate', p_access_rate, 'feedback_rate', p_feedback_rate,
                           'half_life', p_half_life::text, 'floor', p_floor, 'idle_after', p_idle_after::text))
    returning * into v_run;
    drop table learn_batch;
    drop table learn_delta;
    return v_run;
end
$$;

ALTER FUNCTION memsub.learn_importance(p_access_rate double precision, p_feedback_rate double precision, p_half_life interval, p_floor double precision, p_idle_after interval) OWNER TO memsub_retrieval_owner;

COMMENT ON FUNCTION memsub.learn_importance(p_access_rate double precision, p_feedback_rate double precision, p_half_life interval, p_floor double precision, p_idle_after interval) IS 'Maintenance: folds the context tenant''s new accesses and feedback into importance_score of packets and legacy memories, and decays memories idle for idle_after by 0.5 ^ (time since the previous run / half_life) towards floor. Bounded in [0, 1]; serialized per tenant by a maintenance lock; each access and feedback is learned once. Returns the run''s report (also kept in importance_learning_runs).';

CREATE FUNCTION memsub.limit_value(p_name text) RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_value bigint;
begin
    select l.value into v_value from memsub.limits l where l.name = p_name;
    if v_value is not null then
        return v_value;
    end if;
    v_value := case p_name
        when 'max_envelope_bytes'  then 1048576     -- one PacketEnvelope (jsonb size)
        when 'max_batch_envelopes' then 1000        -- envelopes in one write_packets call
        when 'max_batch_bytes'     then 16777216    -- all envelopes of one write_packets call (jsonb size)
        when 'max_tags'            then 256         -- tags of a packet, a reflection or a retrieval filter
        when 'max_tag_chars'       then 200         -- characters of one tag
        when 'max_parent_ids'      then 256         -- lineage.parent_ids of one envelope
        when 'max_query_chars'     then 4096        -- query text of a search
        when 'max_query_nodes'     then 256         -- words and operators of the full-text query built from it
        when 'max_k'               then 1000        -- k, candidates and limit of a similarity search
        when 'max_rows'            then 10000       -- rows one read may return (limit)
        when 'max_scan_tuples'     then 100000      -- index entries one similarity search may visit
        when 'max_kept_search_plans' then 32        -- kinds of search one session keeps a plan for
        when 'max_depth'           then 10          -- hops of a graph traversal
        when 'max_lineage_depth'   then 1000        -- generations of a lineage walk
        when 'max_json_bytes'      then 1048576     -- one JSON argument of a layer, session or memory function
        when 'max_text_chars'      then 1048576     -- one text argument (content, summary, chunk text, ...)
        when 'max_array_items'     then 1000        -- one array argument (entities, ids, aliases, evidence, ...)
        when 'max_document_chars'  then 16777216    -- the text of one document
        when 'max_document_chunks' then 10000       -- the chunks of one document
        when 'max_document_bytes'  then 67108864    -- the chunks of one document (jsonb size, embeddings included)
        -- Timeouts, applied to login roles by `memsub login-timeouts` (ALTER ROLE ... SET), in milliseconds:
        when 'statement_timeout_ms'           then 30000
        when 'lock_timeout_ms'                then 5000
        when 'idle_in_transaction_timeout_ms' then 60000
    end;
    if v_value is null then
        raise exception 'field "name" is not a known limit: %', coalesce(p_name, 'NULL')
            using errcode = '22023', column = 'name',
                  hint = 'docs/security.md, "Limits", lists the limits.';
    end if;
    return v_value;
end
$$;

ALTER FUNCTION memsub.limit_value(p_name text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.limit_value(p_name text) IS 'The value of a resource limit: its row in memsub.limits, or the built-in default (docs/security.md, "Limits").';

CREATE FUNCTION memsub.lineage_directions() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['ancestors', 'descendants']::text[] $$;

ALTER FUNCTION memsub.lineage_directions() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.lineage_directions() IS 'Which way memsub.get_lineage walks from a packet (p_direction).';

CREATE FUNCTION memsub.lineage_nodes(p_tenant_id uuid, p_packet_ids uuid[]) RETURNS TABLE(tenant_id uuid, packet_id uuid, packet_type text, "timestamp" timestamp with time zone, parent_ids uuid[], thread_id uuid, generation integer, state text)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select s.tenant_id, s.packet_id, s.packet_type, s."timestamp", s.parent_ids, s.thread_id,
           coalesce((s.envelope -> 'lineage' ->> 'generation')::integer, 0),
           case when s.ttl is not null and s.ttl <= (now() at time zone 'UTC') then 'expired' else 'live' end
      from memsub.packet_store s
     where s.tenant_id = p_tenant_id and s.packet_id = any(p_packet_ids)
    union all
    select t.tenant_id, t.packet_id, t.packet_type, t."timestamp", t.parent_ids, t.thread_id, t.generation, 'purged'
      from memsub.packet_tombstones t
     where t.tenant_id = p_tenant_id and t.packet_id = any(p_packet_ids)
$$;

ALTER FUNCTION memsub.lineage_nodes(p_tenant_id uuid, p_packet_ids uuid[]) OWNER TO memsub_expiry_owner;

COMMENT ON FUNCTION memsub.lineage_nodes(p_tenant_id uuid, p_packet_ids uuid[]) IS 'Internal to get_lineage: the lineage skeleton of the named packets of a tenant that the current role may see, live, expired or purged (from packet_tombstones). Not granted to clients.';

CREATE FUNCTION memsub.link_document_chunks(p_document_id uuid, p_count integer DEFAULT 3, p_max_distance double precision DEFAULT 0.5) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $_$
declare
    v_links integer;
begin
    -- Each chunk's nearest chunks are found by walking the content graph of the tenant's partition: the ORDER BY
    -- is the graph's key (memsub._vector_graph_order), which holds the installation's dimension and is
    -- therefore written into the statement. Sorting by the cosine distance instead would read every chunk
    -- vector of the tenant once per chunk (2.3 times the time of an ingest at 10,000 chunks).
    -- Each context function in a sub-select: evaluated once for the statement. As a plain call in a join's
    -- condition it ran again for every inner scan of every chunk (tests/documents/test_documents_ingest.py).
    execute format($statement$
    with mine as (
        select c.id as chunk_id, e.vector
          from memsub.document_chunks c
          join memsub.document_index d on d.tenant_id = c.tenant_id and d.id = c.document_id
          join memsub.memory_embeddings e on e.tenant_id = d.tenant_id and e.packet_id = d.packet_id
                                         and e.embedding_type = 'content' and e.chunk_index = c.chunk_index
         where c.tenant_id = (select memsub.current_tenant_id()) and c.document_id = $1
    ), links as (
        select mine.chunk_id, near.chunk_id as other_id
          from mine
         cross join lateral (
            select oc.id as chunk_id
              from memsub.memory_embeddings oe
              join memsub.document_index od on od.tenant_id = oe.tenant_id and od.packet_id = oe.packet_id
              join memsub.document_chunks oc on oc.tenant_id = od.tenant_id and oc.document_id = od.id
                                            and oc.chunk_index = oe.chunk_index
             where oe.tenant_id = (select memsub.current_tenant_id()) and oe.embedding_type = 'content'
               and oe.chunk_index >= 1 and od.is_latest and od.id <> $1
               and (oe.vector <=> mine.vector) <= $3
             order by %s
             limit $2) near
    ), forward as (
        update memsub.document_chunks c
           set neighbors = (select array_agg(distinct u.n order by u.n) from unnest(c.neighbors || l.others) as u(n))
          from (select k.chunk_id, array_agg(k.other_id) as others from links k group by k.chunk_id) l
         where c.tenant_id = (select memsub.current_tenant_id()) and c.id = l.chunk_id
        returning 1
    ), backward as (
        update memsub.document_chunks c
           set neighbors = (select array_agg(distinct u.n order by u.n) from unnest(c.neighbors || l.others) as u(n))
          from (select k.other_id, array_agg(k.chunk_id) as others from links k group by k.other_id) l
         where c.tenant_id = (select memsub.current_tenant_id()) and c.id = l.other_id
        returning 1
    )
    -- Data-modifying CTEs run to completion whether or not the final query reads them.
    select count(*)::integer from links
    $statement$, memsub._vector_graph_order('oe.vector', 'mine.vector'))
    into v_links using p_document_id, p_count, p_max_distance;
    return v_links;
end
$_$;

ALTER FUNCTION memsub.link_document_chunks(p_document_id uuid, p_count integer, p_max_distance double precision) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.link_document_chunks(p_document_id uuid, p_count integer, p_max_distance double precision) IS 'Internal: links each chunk of a document version to its nearest chunks (at most count, cosine distance at most max_distance) of the latest versions of other paths, in both directions (document_chunks.neighbors). Returns the number of links found. Called by memsub.document_ingest.';

CREATE FUNCTION memsub.list_api_keys() RETURNS TABLE(key_id text, tenant_id uuid, org_id uuid, user_id uuid, roles text[], label text, created_at timestamp with time zone, created_by name, expires_at timestamp with time zone, revoked_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    perform memsub._require_key_admin(null);
    return query
        select k.key_id, k.tenant_id, k.org_id, k.user_id, k.roles, k.label, k.created_at, k.created_by,
               k.expires_at, k.revoked_at
          from memsub.api_keys k
         order by k.tenant_id, k.created_at, k.key_id;
end
$$;

ALTER FUNCTION memsub.list_api_keys() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.list_api_keys() IS 'The API keys the admin context manages (its tenant''s, or every tenant''s for platform_admin), without their hashes.';

CREATE FUNCTION memsub.maintain_lock(p_task text, OUT taken boolean, OUT holder text) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    if p_task is null or not p_task = any (memsub.maintain_tasks()) then
        raise exception 'field "task" must name a memsub maintain task, not "%"', p_task
            using errcode = '22023', column = 'task';
    end if;
    taken := memsub.take_maintenance_lock('maintain', p_task, false);
    if not taken then
        holder := coalesce(memsub.maintenance_lock_holder('maintain', p_task), 'holder unknown');
    end if;
end
$$;

ALTER FUNCTION memsub.maintain_lock(p_task text, OUT taken boolean, OUT holder text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.maintain_lock(p_task text, OUT taken boolean, OUT holder text) IS 'Takes the lock of one memsub maintain task until the calling transaction ends, without waiting: taken, or not taken and the holder ("pid N (role R, application A)"). For memsub maintain; platform admins only.';

CREATE FUNCTION memsub.maintain_tasks() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['purge_expired', 'refresh_memory_views', 'learn_importance', 'memory_maintenance',
                   'summaries_due', 'tune_search']::text[] $$;

ALTER FUNCTION memsub.maintain_tasks() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.maintain_tasks() IS 'The tasks memsub maintain runs, in the order it runs them; each has its own maintain lock (memsub.maintain_lock).';

CREATE FUNCTION memsub.maintenance_lock_holder(p_task text, p_key text DEFAULT ''::text) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select pg_catalog.format('pid %s (role %s, application %L)', l.pid, coalesce(a.usename::text, '?'),
                             coalesce(a.application_name, ''))
      from memsub.maintenance_lock m
      join pg_catalog.pg_locks l
        on l.locktype = 'transactionid' and l.transactionid = m.xmax and l.mode = 'ExclusiveLock' and l.granted
      left join pg_catalog.pg_stat_activity a on a.pid = l.pid
     where m.task = p_task and m.lock_key = pg_catalog.hashtextextended(coalesce(p_key, ''), 0)
     limit 1
$$;

ALTER FUNCTION memsub.maintenance_lock_holder(p_task text, p_key text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.maintenance_lock_holder(p_task text, p_key text) IS 'The session holding the maintenance lock (task, key): "pid N (role R, application A)", or NULL when none is known. For messages that name who a skipped or timed-out run waited for.';

CREATE FUNCTION memsub.memory_context(p_session_id text DEFAULT NULL::text) RETURNS TABLE(name text, namespace text, key text, value jsonb, version integer, memory_type text, source text, precedence integer)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
declare
    v_session memsub.sessions;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id);
    if coalesce(p_session_id, memsub.current_session_id()) is null then
        raise exception 'memsub.memory_context needs a session (argument or the context''s session_id)'
            using errcode = '22023', column = 'session_id';
    end if;
    select s.* into v_session from memsub.sessions s
     where s.tenant_id = memsub.current_tenant_id() and s.id = coalesce(p_session_id, memsub.current_session_id());
    if not found then
        raise exception 'session "%" does not exist or is not visible', coalesce(p_session_id, memsub.current_session_id())
            using errcode = 'P0002', column = 'session_id';
    end if;
    return query
    with candidates as (
        select e.k as full_key, e.v as value, null::integer as version, null::text as memory_type,
               'state'::text as source, 0 as tie,
               case split_part(e.k, ':', 1) when 'temp' then 1 when 'session' then 2 when 'user' then 3 end as precedence
          from jsonb_each(v_session.state) as e(k, v)
        union all
        select latest.namespace || ':' || latest.key, latest.value, latest.version, latest.memory_type,
               'memory', 1,
               case latest.namespace_kind when 'session' then 2 when 'user' then 3 when 'app' then 4 else 5 end
          from (select distinct on (m.namespace, m.key) m.*
                  from memsub.memory_entries m
                 where m.tenant_id = v_session.tenant_id and not m.is_deleted
                   and ((m.namespace_kind = 'session' and m.namespace_owner = v_session.id
                         and m.namespace >= 'session:' || v_session.id collate "C"
                         and m.namespace < 'session:' || v_session.id || ';' collate "C")
                     or (m.namespace_kind = 'user' and m.namespace_owner = v_session.user_id::text
                         and m.namespace >= 'user:' || v_session.user_id::text collate "C"
                         and m.namespace < 'user:' || v_session.user_id::text || ';' collate "C")
                     or (m.namespace_kind = 'app' and m.namespace_owner = v_session.app_name
                         and m.namespace >= 'app:' || v_session.app_name collate "C"
                         and m.namespace < 'app:' || v_session.app_name || ';' collate "C")
                     or (m.namespace_kind = 'project' and m.namespace_owner = v_session.project_id
                         and m.namespace >= 'project:' || v_session.project_id collate "C"
                         and m.namespace < 'project:' || v_session.project_id || ';' collate "C"))
                 order by m.namespace, m.key, m.version desc) latest
    ),
    named as (
        select regexp_replace(c.full_key, '^(temp|(session|user|app|project):[^:]+):', '') as name, c.*
          from candidates c
    ),
    winners as (
        select distinct on (n.name) n.* from named n order by n.name, n.precedence, n.tie
    )
    select w.name, regexp_replace(w.full_key, ':[^:]*$', ''), substring(w.full_key from '[^:]*$'),
           w.value, w.version, w.memory_type, w.source, w.precedence
      from winners w
     order by w.precedence, w.name;
end
$_$;

ALTER FUNCTION memsub.memory_context(p_session_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_context(p_session_id text) IS 'Context of a session resolved through the namespace hierarchy (seed 001 sections 2.1 and 4.2): its state''s temp:, session: and user: keys and the live memory entries of session:<id>, user:<user>, app:<app> and project:<project>. A name (the namespace path below kind and owner, plus the key) is answered by the first of temp: > session: > user: > app: > project: (precedence 1..5); within a level the session state beats memory_entries. Only what the caller may see takes part.';

CREATE FUNCTION memsub.memory_types() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['semantic', 'episodic', 'procedural']::text[] $$;

ALTER FUNCTION memsub.memory_types() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_types() IS 'The kinds of namespaced memory (memory_entries.memory_type): what an entry remembers, a fact, an event or a way of doing something.';

CREATE TABLE memsub.memory_entries (
    tenant_id uuid NOT NULL,
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    org_id uuid,
    user_id uuid,
    namespace text NOT NULL COLLATE pg_catalog."C",
    key text NOT NULL COLLATE pg_catalog."C",
    value jsonb,
    memory_type text DEFAULT 'semantic'::text NOT NULL,
    version integer NOT NULL,
    is_deleted boolean DEFAULT false NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    session_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    namespace_kind text GENERATED ALWAYS AS (split_part(namespace, ':'::text, 1)) STORED COLLATE pg_catalog."C",
    namespace_owner text GENERATED ALWAYS AS (split_part(namespace, ':'::text, 2)) STORED COLLATE pg_catalog."C",
    short_term boolean DEFAULT false NOT NULL,
    importance double precision DEFAULT 0.5 NOT NULL,
    decay_weight double precision DEFAULT 1.0 NOT NULL,
    last_access_ts timestamp with time zone,
    promoted_at timestamp with time zone,
    memory_tier text GENERATED ALWAYS AS (
CASE
    WHEN (memory_type = 'procedural'::text) THEN 'Procedural'::text
    WHEN short_term THEN 'STM'::text
    ELSE 'LTM'::text
END) STORED,
    embedding public.vector(1536),
    search_tsv tsvector GENERATED ALWAYS AS ((setweight(to_tsvector('english'::regconfig, replace(key, '_'::text, ' '::text)), 'A'::"char") || jsonb_to_tsvector('english'::regconfig, COALESCE(value, 'null'::jsonb), '["string"]'::jsonb))) STORED,
    CONSTRAINT memory_entries_decay_weight_positive CHECK ((decay_weight > (0)::double precision)),
    CONSTRAINT memory_entries_importance_in_unit_range CHECK (((importance >= (0)::double precision) AND (importance <= (1)::double precision))),
    CONSTRAINT memory_entries_key_format CHECK (((key ~ '^[^:[:space:]][^:]*$'::text) AND (length(key) <= 256))),
    CONSTRAINT memory_entries_memory_type_check CHECK ((memory_type = ANY (memsub.memory_types()))),
    CONSTRAINT memory_entries_metadata_is_object CHECK ((jsonb_typeof(metadata) = 'object'::text)),
    CONSTRAINT memory_entries_namespace_format CHECK (((namespace ~ '^(project|app|user|session):[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*$'::text) AND (length(namespace) <= 512))),
    CONSTRAINT memory_entries_procedural_not_short_term CHECK ((NOT (short_term AND (memory_type = 'procedural'::text)))),
    CONSTRAINT memory_entries_value_present CHECK ((is_deleted OR (value IS NOT NULL))),
    CONSTRAINT memory_entries_version_positive CHECK ((version >= 1))
);

ALTER TABLE ONLY memsub.memory_entries FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_entries OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_entries IS 'Long-term namespaced memory (seed 001): one row per version of (namespace, key); optimistic locking through UNIQUE (tenant_id, namespace, key, version); soft delete. Written only through memsub.memory_* functions.';

COMMENT ON COLUMN memsub.memory_entries.tenant_id IS 'Tenant owning the entry.';

COMMENT ON COLUMN memsub.memory_entries.id IS 'Identifier of this version of the entry.';

COMMENT ON COLUMN memsub.memory_entries.org_id IS 'Organization of the writer (provenance; visibility follows the namespace).';

COMMENT ON COLUMN memsub.memory_entries.user_id IS 'User who wrote this version.';

COMMENT ON COLUMN memsub.memory_entries.namespace IS 'Hierarchical namespace: project:<id>[:...], app:<name>[:...], user:<user_id>[:...], session:<session_id>[:...]. temp: is never stored here.';

COMMENT ON COLUMN memsub.memory_entries.key IS 'Key within the namespace (no colon).';

COMMENT ON COLUMN memsub.memory_entries.value IS 'The value (JSON); NULL only on the tombstone version written by a delete.';

COMMENT ON COLUMN memsub.memory_entries.memory_type IS 'Kind of memory: one of memsub.memory_types() (semantic, episodic, procedural); its tier is memory_tier.';

COMMENT ON COLUMN memsub.memory_entries.version IS 'Version of (namespace, key): 1, 2, 3, ... A write states the version it read.';

COMMENT ON COLUMN memsub.memory_entries.is_deleted IS 'Soft delete (seed: is_deleted = 0 means active). A delete writes a tombstone version and flags every version of the key.';

COMMENT ON COLUMN memsub.memory_entries.metadata IS 'Free-form metadata; the consolidation job adds consolidated_into (old versions) and consolidated_from (the new one).';

COMMENT ON COLUMN memsub.memory_entries.session_id IS 'Session that wrote this version, when the writer''s context named an existing session.';

COMMENT ON COLUMN memsub.memory_entries.created_at IS 'When this version was written.';

COMMENT ON COLUMN memsub.memory_entries.namespace_kind IS 'First namespace segment (project, app, user, session); read by the row-level security policies.';

COMMENT ON COLUMN memsub.memory_entries.namespace_owner IS 'Second namespace segment (project id, app name, user id, session id); read by the row-level security policies.';

COMMENT ON COLUMN memsub.memory_entries.short_term IS 'True for short-term memory (STM) not yet promoted; seed 001 writes are long-term (false).';

COMMENT ON COLUMN memsub.memory_entries.importance IS 'Importance in [0, 1] (seed 003 Memory importance).';

COMMENT ON COLUMN memsub.memory_entries.decay_weight IS 'Strength as of last_access_ts (or created_at): each access adds 1 to the decayed strength; it halves every half-life without access.';

COMMENT ON COLUMN memsub.memory_entries.last_access_ts IS 'Last recorded access (seed 003 decay_state.last_access_ts; NULL: never accessed since written).';

COMMENT ON COLUMN memsub.memory_entries.promoted_at IS 'When memsub.memory_maintenance promoted the entry from STM to LTM.';

COMMENT ON COLUMN memsub.memory_entries.memory_tier IS 'Tier (seed 003''s Memory memory_type): Procedural for procedural memory, STM while short_term, otherwise LTM; one of memsub.memory_tiers().';

COMMENT ON COLUMN memsub.memory_entries.embedding IS 'Embedding of the entry (dimension: installation_settings.vector_dimension), given by the writer; NULL when written without one.';

COMMENT ON COLUMN memsub.memory_entries.search_tsv IS 'Full-text vector of the key (weight A) and the strings of the value (english configuration).';

CREATE FUNCTION memsub.memory_delete(p_namespace text, p_key text, p_expected_version integer) RETURNS memsub.memory_entries
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace', p_namespace, 'key', p_key);
    if p_expected_version is null then
        raise exception 'expected_version is required to delete memory key "%"', p_key
            using errcode = '23502', column = 'expected_version';
    end if;
    return memsub.store_memory_version(p_namespace, p_key, null, 'semantic', '{}', p_expected_version,
                                       true, true, 'memory_delete', '{}');
end
$$;

ALTER FUNCTION memsub.memory_delete(p_namespace text, p_key text, p_expected_version integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_delete(p_namespace text, p_key text, p_expected_version integer) IS 'Soft-deletes (namespace, key): writes a tombstone version (value NULL, is_deleted) and flags every earlier version is_deleted. States the version read, like a write (40001 when stale; P0002 when nothing is live). The history is kept. Audited as memory_delete.';

CREATE FUNCTION memsub.memory_embeddings_envelope_guard() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
begin
    if (old.vector, old.tenant_id, old.packet_id, old.embedding_type, old.chunk_index)
       is not distinct from (new.vector, new.tenant_id, new.packet_id, new.embedding_type, new.chunk_index) then
        return new;
    end if;
    if exists (select from memsub.packet_store s
                cross join lateral jsonb_array_elements(
                    case when jsonb_typeof(s.envelope -> 'memory' -> 'embeddings') = 'array'
                         then s.envelope -> 'memory' -> 'embeddings' else '[]' end) as x(e)
                where s.tenant_id = old.tenant_id and s.packet_id = old.packet_id
                  and x.e -> 'vector' = 'null'::jsonb and x.e ->> 'embedding_type' = old.embedding_type
                  and memsub._embedding_chunk_index(x.e) = old.chunk_index) then
        raise exception 'the % embedding (chunk_index %) of packet % is part of the packet''s immutable envelope '
                        'and cannot be replaced', old.embedding_type, old.chunk_index, old.packet_id
            using errcode = '0A000', column = 'vector',
                  hint = 'Write a new packet with the new vector, or store it under another chunk_index.';
    end if;
    return new;
end
$$;

ALTER FUNCTION memsub.memory_embeddings_envelope_guard() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_embeddings_envelope_guard() IS 'Trigger function: refuses to change an embedding whose vector belongs to its packet''s envelope (SQLSTATE 0A000); embeddings stored with store_embedding alone may be replaced.';

CREATE FUNCTION memsub.memory_get(p_namespace text, p_key text) RETURNS SETOF memsub.memory_entries
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace', p_namespace, 'key', p_key);
    return query
        select m.* from memsub.memory_entries m
         where m.tenant_id = memsub.current_tenant_id() and m.namespace = p_namespace and m.key = p_key
           and not m.is_deleted
         order by m.version desc limit 1;
end
$$;

ALTER FUNCTION memsub.memory_get(p_namespace text, p_key text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_get(p_namespace text, p_key text) IS 'The live (latest, not deleted) version of (namespace, key), if the caller may see it; no row otherwise.';

CREATE FUNCTION memsub.memory_history(p_namespace text, p_key text) RETURNS SETOF memsub.memory_entries
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace', p_namespace, 'key', p_key);
    return query
        select m.* from memsub.memory_entries m
         where m.tenant_id = memsub.current_tenant_id() and m.namespace = p_namespace and m.key = p_key
         order by m.version;
end
$$;

ALTER FUNCTION memsub.memory_history(p_namespace text, p_key text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_history(p_namespace text, p_key text) IS 'Every version of (namespace, key) the caller may see, oldest first, deleted ones and tombstones included.';

CREATE FUNCTION memsub.memory_list(p_namespace_prefix text) RETURNS SETOF memsub.memory_entries
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace_prefix', p_namespace_prefix);
    if p_namespace_prefix is null or p_namespace_prefix !~ '^[a-z]+(:[A-Za-z0-9_.-]+)*$' then
        raise exception 'namespace prefix "%" must look like kind[:segment...]', coalesce(p_namespace_prefix, 'NULL')
            using errcode = '22023', column = 'namespace';
    end if;
    return query
        select distinct on (m.namespace, m.key) m.* from memsub.memory_entries m
         where m.tenant_id = memsub.current_tenant_id()
           and m.namespace >= p_namespace_prefix collate "C"
           and m.namespace < p_namespace_prefix || ';' collate "C"
           and (m.namespace = p_namespace_prefix or m.namespace like p_namespace_prefix || ':%')
           and not m.is_deleted
         order by m.namespace, m.key, m.version desc;
end
$_$;

ALTER FUNCTION memsub.memory_list(p_namespace_prefix text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_list(p_namespace_prefix text) IS 'Live entries (latest version of each key) of a namespace and its sub-namespaces, e.g. user:<id> or project:schema_redesign:status, that the caller may see.';

CREATE FUNCTION memsub.memory_maintenance(p_threshold double precision DEFAULT 1.0, p_half_life interval DEFAULT '7 days'::interval) RETURNS TABLE(memory_entry_id uuid, namespace text, key text, version integer, importance double precision, strength double precision, score double precision, outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_row    record;
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
    perform memsub.take_maintenance_lock('memory_maintenance', v_tenant::text);
    for v_row in
        select m.id, m.namespace, m.key, m.version, m.importance,
               memsub.memory_strength(m.decay_weight, m.last_access_ts, m.created_at, now(), p_half_life) as strength
          from memsub.memory_entries m
         where m.tenant_id = v_tenant and m.short_term and not m.is_deleted
           and not exists (select from memsub.memory_entries n
                            where n.tenant_id = m.tenant_id and n.namespace = m.namespace and n.key = m.key
                              and n.version > m.version)
         order by m.namespace, m.key
           for update of m
    loop
        memory_entry_id := v_row.id;
        namespace := v_row.namespace;
        key := v_row.key;
        version := v_row.version;
        importance := v_row.importance;
        strength := v_row.strength;
        score := v_row.importance * v_row.strength;
        if score >= p_threshold then
            update memsub.memory_entries m set short_term = false, promoted_at = now()
             where m.tenant_id = v_tenant and m.id = v_row.id;
            perform memsub.audit_record('memory_promote', p_memory_entry_id => v_row.id, p_namespace => v_row.namespace,
                p_key => v_row.key, p_version => v_row.version, p_tenant_id => v_tenant,
                p_details => jsonb_build_object('from', 'STM', 'to', 'LTM', 'importance', v_row.importance,
                                                'strength', v_row.strength, 'threshold', p_threshold,
                                                'half_life', p_half_life::text));
            outcome := 'promoted';
        else
            outcome := 'kept';
        end if;
        return next;
    end loop;
end
$$;

ALTER FUNCTION memsub.memory_maintenance(p_threshold double precision, p_half_life interval) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_maintenance(p_threshold double precision, p_half_life interval) IS 'Maintenance of short-term memory (tenant_admin context): every latest live STM entry whose importance * strength now reaches threshold (default 1.0; strength halves every half_life, default 7 days, without access) is promoted to LTM (short_term false, promoted_at, audited as memory_promote). Reports every STM entry it looked at: promoted or kept. One run per tenant at a time (maintenance lock).';

CREATE FUNCTION memsub.memory_remember(p_namespace text, p_key text, p_value jsonb, p_tier text DEFAULT 'STM'::text, p_importance double precision DEFAULT 0.5, p_expected_version integer DEFAULT NULL::integer, p_kind text DEFAULT 'semantic'::text, p_metadata jsonb DEFAULT '{}'::jsonb) RETURNS memsub.memory_entries
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub.memory_remember(p_namespace text, p_key text, p_value jsonb, p_tier text, p_importance double precision, p_expected_version integer, p_kind text, p_metadata jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_remember(p_namespace text, p_key text, p_value jsonb, p_tier text, p_importance double precision, p_expected_version integer, p_kind text, p_metadata jsonb) IS 'memsub.memory_write with seed 003''s memory type: writes the next version of (namespace, key) as STM (short-term, promoted by memsub.memory_maintenance), LTM or Procedural, with an importance in [0, 1]. kind is seed 001''s semantic or episodic for STM and LTM. Same namespace rules, optimistic lock and audit as memory_write.';

CREATE FUNCTION memsub.memory_search(p_query_text text, p_query public.vector DEFAULT NULL::public.vector, p_k integer DEFAULT 10, p_namespace_prefix text DEFAULT NULL::text, p_rrf_k integer DEFAULT 60) RETURNS TABLE(id uuid, namespace text, key text, version integer, value jsonb, memory_type text, score double precision, vector_rank integer, text_rank integer, distance double precision, text_score real)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_candidates integer;
    v_query      tsquery;
begin
    perform memsub._check_fused_search(p_k, p_rrf_k, p_query, p_query_text);
    v_candidates := greatest(50, 4 * p_k);
    v_query := websearch_to_tsquery('english'::regconfig, coalesce(p_query_text, ''));
    return query
    with vector_leg as (
        -- Of each key its latest live version (as memsub.memory_list reads them: a delete flags every version),
        -- by the exact distance: cosine_distance(), which no index serves (the one HNSW graph of every tenant's
        -- entries would be filtered by row-level security afterwards). One pass over the tenant's live rows, the
        -- distance taken in it so that the rows sorted by key are narrow (a NOT EXISTS of a newer version read
        -- the rows twice: 42 ms for 10,000 entries, against 29 ms).
        select l.id, l.distance, (row_number() over (order by l.distance, l.id))::integer as vector_rank
          from (select distinct on (m.namespace, m.key) m.id, cosine_distance(m.embedding, p_query) as distance
                  from memsub.memory_entries m
                 where p_query is not null and m.tenant_id = v_tenant and not m.is_deleted
                   and (p_namespace_prefix is null
                        or left(m.namespace, length(p_namespace_prefix)) = p_namespace_prefix)
                 order by m.namespace, m.key, m.version desc) l
         where l.distance is not null
         order by 2, 1
         limit v_candidates
    ), text_leg as (
        select c.id, c.text_score, c.text_rank
          from memsub._memory_word_candidates(v_query, p_namespace_prefix, v_candidates) c
    ), fused as (
        select coalesce(v.id, t.id) as id, v.vector_rank, t.text_rank, v.distance, t.text_score,
               coalesce(1.0 / (p_rrf_k + v.vector_rank), 0.0) + coalesce(1.0 / (p_rrf_k + t.text_rank), 0.0) as rrf
          from vector_leg v
          full join text_leg t on t.id = v.id
    )
    select m.id, m.namespace::text, m.key::text, m.version, m.value, m.memory_type, f.rrf::double precision,
           f.vector_rank, f.text_rank, f.distance, f.text_score
      -- The k best first, then their rows by key: joined before the limit, every row of the tenant was read.
      from (select * from fused order by rrf desc, id limit p_k) f
      join memsub.memory_entries m on m.tenant_id = v_tenant and m.id = f.id
     order by f.rrf desc, m.id;
end
$$;

ALTER FUNCTION memsub.memory_search(p_query_text text, p_query public.vector, p_k integer, p_namespace_prefix text, p_rrf_k integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_search(p_query_text text, p_query public.vector, p_k integer, p_namespace_prefix text, p_rrf_k integer) IS 'Namespaced memory by meaning and words: the latest live versions the caller may see (row-level security), optionally under a namespace prefix, nearest to query (embedding, by the exact cosine distance) and best by full text (key and the strings of the value, websearch syntax, english), fused by reciprocal rank fusion (1 / (rrf_k + rank) per leg). Either query may be NULL.';

CREATE FUNCTION memsub.memory_strength(p_decay_weight double precision, p_last_access_ts timestamp with time zone, p_created_at timestamp with time zone, p_at timestamp with time zone, p_half_life interval) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    -- The checks run only for a value that is not finite (a plain comparison first), so a scan pays nothing.
    select case when p_decay_weight in ('NaN', 'Infinity', '-Infinity')
                then memsub._check_finite(p_decay_weight, 'decay_weight') else p_decay_weight end
         * power(0.5, greatest(0, date_part('epoch',
                                  case when isfinite(p_at) then p_at else memsub._check_finite_time(p_at, 'at') end
                                  - coalesce(case when p_last_access_ts is null or isfinite(p_last_access_ts)
                                                  then p_last_access_ts
                                                  else memsub._check_finite_time(p_last_access_ts, 'last_access_ts') end,
                                             case when isfinite(p_created_at) then p_created_at
                                                  else memsub._check_finite_time(p_created_at, 'created_at') end)))
                      / date_part('epoch', case when p_half_life >= interval '1 second' and isfinite(p_half_life)
                                                     or p_half_life is null then p_half_life
                                                else memsub._check_half_life(p_half_life) end))
$$;

ALTER FUNCTION memsub.memory_strength(p_decay_weight double precision, p_last_access_ts timestamp with time zone, p_created_at timestamp with time zone, p_at timestamp with time zone, p_half_life interval) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_strength(p_decay_weight double precision, p_last_access_ts timestamp with time zone, p_created_at timestamp with time zone, p_at timestamp with time zone, p_half_life interval) IS 'Strength of a memory at a time: decay_weight halved once per half-life since its last access (or creation). A half-life under a second is refused (22023, half_life).';

CREATE FUNCTION memsub.memory_tiers() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['STM', 'LTM', 'Procedural']::text[] $$;

ALTER FUNCTION memsub.memory_tiers() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_tiers() IS 'The tiers of namespaced memory (memory_entries.memory_tier, graph_nodes.memory_tier, seed 003''s memory type): short-term, long-term or procedural, which decides how an entry decays and is promoted.';

CREATE FUNCTION memsub.memory_touch(p_namespace text, p_key text, p_half_life interval DEFAULT '7 days'::interval) RETURNS memsub.memory_entries
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_entry  memsub.memory_entries;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace', p_namespace, 'key', p_key);
    perform memsub.check_memory_address(p_namespace, p_key);
    perform memsub._check_half_life(p_half_life);
    if not memsub._memory_namespace_writable(p_namespace) then
        raise exception 'namespace "%": accesses are recorded by contexts that may write it', p_namespace
            using errcode = '42501', column = 'namespace';
    end if;
    select m.* into v_entry from memsub.memory_entries m
     where m.tenant_id = v_tenant and m.namespace = p_namespace and m.key = p_key
     order by m.version desc limit 1
       for update;
    if not found or v_entry.is_deleted then
        raise exception 'memory key "%" in namespace "%" has no live entry', p_key, p_namespace
            using errcode = 'P0002', column = 'key';
    end if;
    update memsub.memory_entries m
       set decay_weight = memsub.memory_strength(m.decay_weight, m.last_access_ts, m.created_at, now(), p_half_life) + 1,
           last_access_ts = now()
     where m.tenant_id = v_tenant and m.id = v_entry.id
    returning m.* into v_entry;
    return v_entry;
end
$$;

ALTER FUNCTION memsub.memory_touch(p_namespace text, p_key text, p_half_life interval) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_touch(p_namespace text, p_key text, p_half_life interval) IS 'Records an access of the latest live version of (namespace, key): decay_weight := strength now + 1, last_access_ts := now. Needs write access to the namespace (42501), like memory_write.';

CREATE FUNCTION memsub.memory_write(p_namespace text, p_key text, p_value jsonb, p_expected_version integer DEFAULT NULL::integer, p_memory_type text DEFAULT 'semantic'::text, p_metadata jsonb DEFAULT '{}'::jsonb, p_embedding public.vector DEFAULT NULL::public.vector) RETURNS memsub.memory_entries
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
begin
    if p_embedding is not null then
        perform memsub._check_vector(p_embedding, 'embedding');
    end if;
    -- The embedding goes into the version's row as it is inserted: an update after it would write the row twice
    -- (a second entry in every index, a dead row for vacuum).
    return memsub.store_memory_version(p_namespace, p_key, p_value, p_memory_type, p_metadata,
                                       p_expected_version, true, false, 'memory_write', '{}',
                                       p_embedding => p_embedding);
end
$$;

ALTER FUNCTION memsub.memory_write(p_namespace text, p_key text, p_value jsonb, p_expected_version integer, p_memory_type text, p_metadata jsonb, p_embedding public.vector) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.memory_write(p_namespace text, p_key text, p_value jsonb, p_expected_version integer, p_memory_type text, p_metadata jsonb, p_embedding public.vector) IS 'Writes a new version of (namespace, key), with its embedding when given (the installation''s dimension; a new version without one carries none). expected_version is the version the writer read (NULL or 0: the key has no live entry). A stale write raises SQLSTATE 40001 naming the key: read again and retry. Namespace rules: own user: and session: namespaces; app:/project: need a tenant_admin context; temp: is rejected. Audited as memory_write.';

CREATE FUNCTION memsub.normalize_text(p_value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select lower(btrim(regexp_replace(p_value, '\s+', ' ', 'g'))) $$;

ALTER FUNCTION memsub.normalize_text(p_value text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.normalize_text(p_value text) IS 'Matching form of a name: each run of whitespace (spaces, tabs, line breaks) made one space, trimmed, lower case.';

CREATE FUNCTION memsub.packet_content_hash(p_packet_type text, p_payload jsonb, p_thread_id uuid, p_parent_ids uuid[], p_scope text, p_org_id uuid, p_user_id uuid, p_session_id text, p_timestamp timestamp with time zone, p_stated_packet_id uuid) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub.packet_content_hash(p_packet_type text, p_payload jsonb, p_thread_id uuid, p_parent_ids uuid[], p_scope text, p_org_id uuid, p_user_id uuid, p_session_id text, p_timestamp timestamp with time zone, p_stated_packet_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.packet_content_hash(p_packet_type text, p_payload jsonb, p_thread_id uuid, p_parent_ids uuid[], p_scope text, p_org_id uuid, p_user_id uuid, p_session_id text, p_timestamp timestamp with time zone, p_stated_packet_id uuid) IS 'Deduplication hash of a packet: sha256 of the canonical JSON of its type, payload, thread, sorted parents, scope, writer identity (org, user, session), timestamp and the packet_id the writer named (NULL when the database generated it). Tags, metadata and ttl do not count. The same words at another time are another packet.';

CREATE FUNCTION memsub.packet_store_guard() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    if tg_op = 'TRUNCATE' then
        raise exception 'memsub.packet_store is immutable: TRUNCATE is not allowed'
            using errcode = '0A000', hint = 'Expired packets are removed by memsub.purge_expired().';
    elsif tg_op = 'DELETE' then
        if old.ttl is null or old.ttl >= (now() at time zone 'UTC') then
            raise exception 'memsub.packet_store is immutable: packet % has not expired and cannot be deleted', old.packet_id
                using errcode = '0A000', hint = 'Only packets whose ttl has passed are removed, by memsub.purge_expired().';
        end if;
        return old;
    end if;
    -- UPDATE: compare the row with its learned statistics blanked out.
    if (old.packet_id, old.packet_type, old.envelope, old."timestamp", old.routing, old.provenance,
        old.thread_id, old.parent_ids, old.tags, old.ttl, old.scope, old.content_hash,
        old.tenant_id, old.org_id, old.user_id, old.correlation_id, old.session_id, old.trace_id, old.write_seq)
       is distinct from
       (new.packet_id, new.packet_type, new.envelope, new."timestamp", new.routing, new.provenance,
        new.thread_id, new.parent_ids, new.tags, new.ttl, new.scope, new.content_hash,
        new.tenant_id, new.org_id, new.user_id, new.correlation_id, new.session_id, new.trace_id, new.write_seq) then
        raise exception 'memsub.packet_store is immutable: packet % cannot be modified', old.packet_id
            using errcode = '0A000',
                  hint = 'Only importance_score, access_count, last_accessed, contradiction_count, chunk_count and is_chunked may change.';
    end if;
    return new;
end
$$;

ALTER FUNCTION memsub.packet_store_guard() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.packet_store_guard() IS 'Trigger function enforcing packet_store immutability: rejects changes to envelope columns (SQLSTATE 0A000), deletes of unexpired packets and TRUNCATE.';

CREATE FUNCTION memsub.purge_expired(p_tenant_id uuid DEFAULT NULL::uuid) RETURNS TABLE(tenant_id uuid, purged bigint)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    with removed as (
        delete from memsub.packet_store s
         where s.ttl is not null and s.ttl <= (now() at time zone 'UTC')
           and (p_tenant_id is null or s.tenant_id = p_tenant_id)
        returning s.tenant_id, s.packet_id, s.packet_type, s.thread_id, s.parent_ids,
                  coalesce((s.envelope -> 'lineage' ->> 'generation')::integer, 0) as generation,
                  coalesce((s.envelope -> 'lineage' ->> 'root_packet_id')::uuid, s.packet_id) as root_packet_id,
                  s."timestamp", s.write_seq, s.ttl, s.scope, s.org_id, s.user_id, s.session_id
    ), tombstones as (
        insert into memsub.packet_tombstones as t (
            tenant_id, packet_id, packet_type, thread_id, parent_ids, generation, root_packet_id, "timestamp",
            write_seq, expired_at, scope, org_id, user_id, session_id)
        select r.tenant_id, r.packet_id, r.packet_type, r.thread_id, r.parent_ids, r.generation, r.root_packet_id,
               r."timestamp", r.write_seq, r.ttl, r.scope, r.org_id, r.user_id, r.session_id
          from removed r
        on conflict on constraint packet_tombstones_pkey do nothing
    ),
    -- The rows derived from expired packets expire with them (their ttl is the packet's, sql/210, 410, 520):
    -- deleted in the same statement, so nothing derived from a purged packet outlives it, not even unlinked.
    events as (
        delete from memsub.agent_memory_events e
         where e.ttl <= (now() at time zone 'UTC') and (p_tenant_id is null or e.tenant_id = p_tenant_id)
    ), traces as (
        delete from memsub.reasoning_traces t
         where t.ttl <= (now() at time zone 'UTC') and (p_tenant_id is null or t.tenant_id = p_tenant_id)
    ), facts as (
        delete from memsub.knowledge_facts f
         where f.ttl <= (now() at time zone 'UTC') and (p_tenant_id is null or f.tenant_id = p_tenant_id)
    ), edges as (
        delete from memsub.entity_relationships r
         where r.ttl <= (now() at time zone 'UTC') and (p_tenant_id is null or r.tenant_id = p_tenant_id)
    ), reflections as (
        delete from memsub.reflection_store r
         where r.expires_at <= now() and (p_tenant_id is null or r.tenant_id = p_tenant_id)
    )
    select r.tenant_id, count(*) from removed r group by r.tenant_id order by r.tenant_id
$$;

ALTER FUNCTION memsub.purge_expired(p_tenant_id uuid) OWNER TO memsub_expiry_owner;

COMMENT ON FUNCTION memsub.purge_expired(p_tenant_id uuid) IS 'Deletes the expired packets (ttl passed) the caller''s context covers, optionally of one tenant, with their embeddings and every expired row derived from a packet (agent events, reasoning traces, facts, relationship windows, reflections); leaves a tombstone per packet for lineage; reports how many per tenant. An application context purges what it may see of its tenant, a tenant_admin context its tenant, a platform_admin context every tenant (or p_tenant_id). Safe to run concurrently and from a scheduler.';

CREATE TABLE memsub.memory_access_log (
    access_id uuid DEFAULT gen_random_uuid() NOT NULL,
    target_type text NOT NULL,
    target_id uuid NOT NULL,
    agent_id text,
    access_context text,
    query_text text,
    relevance_score double precision,
    was_useful boolean,
    feedback_reason text,
    accessed_at timestamp with time zone DEFAULT now() NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    feedback_at timestamp with time zone,
    counted_at timestamp with time zone,
    feedback_learned_at timestamp with time zone,
    CONSTRAINT memory_access_log_target_type_known CHECK ((target_type = ANY (memsub.access_target_types())))
);

ALTER TABLE ONLY memsub.memory_access_log FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_access_log OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_access_log IS 'Every retrieval of a memory and its feedback: the input of importance learning.';

COMMENT ON COLUMN memsub.memory_access_log.access_id IS 'Unique access identifier.';

COMMENT ON COLUMN memsub.memory_access_log.target_type IS 'One of memsub.access_target_types(): packet, embedding, fact or reflection.';

COMMENT ON COLUMN memsub.memory_access_log.target_id IS 'Identifier of the accessed row (packet_id, embedding_id, fact_id, reflection_id).';

COMMENT ON COLUMN memsub.memory_access_log.agent_id IS 'Agent that accessed it.';

COMMENT ON COLUMN memsub.memory_access_log.access_context IS 'Why it was accessed (retrieval pipeline stage, tool, ...).';

COMMENT ON COLUMN memsub.memory_access_log.query_text IS 'Query that retrieved it.';

COMMENT ON COLUMN memsub.memory_access_log.relevance_score IS 'Relevance score given by the retriever.';

COMMENT ON COLUMN memsub.memory_access_log.was_useful IS 'Feedback: whether it helped (NULL: no feedback).';

COMMENT ON COLUMN memsub.memory_access_log.feedback_reason IS 'Feedback explanation.';

COMMENT ON COLUMN memsub.memory_access_log.accessed_at IS 'Access time.';

COMMENT ON COLUMN memsub.memory_access_log.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.memory_access_log.org_id IS 'Organization of the accessor (NULL: whole tenant).';

COMMENT ON COLUMN memsub.memory_access_log.user_id IS 'User of the accessor.';

COMMENT ON COLUMN memsub.memory_access_log.correlation_id IS 'Request correlation identifier.';

COMMENT ON COLUMN memsub.memory_access_log.session_id IS 'Session of the accessor.';

COMMENT ON COLUMN memsub.memory_access_log.trace_id IS 'Distributed tracing identifier.';

COMMENT ON COLUMN memsub.memory_access_log.feedback_at IS 'When was_useful was last given (memsub.record_feedback).';

COMMENT ON COLUMN memsub.memory_access_log.counted_at IS 'When memsub.learn_importance folded this access into the target''s importance (NULL: not yet).';

COMMENT ON COLUMN memsub.memory_access_log.feedback_learned_at IS 'When memsub.learn_importance folded this access''s feedback into the importance (NULL: not yet or no feedback).';

CREATE FUNCTION memsub.record_access(p_target_type text, p_target_id uuid, p_agent_id text DEFAULT NULL::text, p_access_context text DEFAULT NULL::text, p_query_text text DEFAULT NULL::text, p_relevance_score double precision DEFAULT NULL::double precision, p_was_useful boolean DEFAULT NULL::boolean, p_feedback_reason text DEFAULT NULL::text) RETURNS memsub.memory_access_log
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_packet uuid;
    v_entry  memsub.memory_access_log;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('target_type', p_target_type, 'agent_id', p_agent_id,
                                      'access_context', p_access_context, 'feedback_reason', p_feedback_reason),
            memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    perform memsub._check_one_of(p_target_type, memsub.access_target_types(), 'target_type');
    if p_target_id is null then
        raise exception 'field "target_id" is required' using errcode = '23502', column = 'target_id';
    end if;
    perform memsub._check_finite(p_relevance_score, 'relevance_score');
    if p_target_type = 'packet' then
        update memsub.packet_store s set access_count = s.access_count + 1, last_accessed = now()
         where s.tenant_id = v_tenant and s.packet_id = p_target_id;
    elsif p_target_type = 'fact' then
        update memsub.knowledge_facts f set access_count = f.access_count + 1, last_accessed = now()
         where f.tenant_id = v_tenant and f.fact_id = p_target_id;
    elsif p_target_type = 'reflection' then
        update memsub.reflection_store r set access_count = r.access_count + 1, last_accessed = now()
         where r.tenant_id = v_tenant and r.reflection_id = p_target_id;
    else
        update memsub.semantic_memory m set access_count = m.access_count + 1, last_accessed = now()
         where m.tenant_id = v_tenant and m.embedding_id = p_target_id;
        if not found then
            select e.packet_id into v_packet from memsub.memory_embeddings e
             where e.tenant_id = v_tenant and e.embedding_id = p_target_id;
            update memsub.packet_store s set access_count = s.access_count + 1, last_accessed = now()
             where s.tenant_id = v_tenant and s.packet_id = v_packet;
        end if;
    end if;
    if not found then
        raise exception 'field "target_id": % % does not exist or is not visible', p_target_type, p_target_id
            using errcode = '23503', column = 'target_id';
    end if;
    insert into memsub.memory_access_log (
        target_type, target_id, agent_id, access_context, query_text, relevance_score, was_useful,
        feedback_reason, tenant_id, org_id, user_id, session_id)
    values (
        p_target_type, p_target_id, memsub._optional_text(p_agent_id), p_access_context,
        p_query_text, p_relevance_score, p_was_useful, p_feedback_reason,
        v_tenant, memsub.current_org_id(), memsub.current_user_id(), memsub.current_session_id())
    returning * into v_entry;
    return v_entry;
end
$$;

ALTER FUNCTION memsub.record_access(p_target_type text, p_target_id uuid, p_agent_id text, p_access_context text, p_query_text text, p_relevance_score double precision, p_was_useful boolean, p_feedback_reason text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.record_access(p_target_type text, p_target_id uuid, p_agent_id text, p_access_context text, p_query_text text, p_relevance_score double precision, p_was_useful boolean, p_feedback_reason text) IS 'Logs an access to a packet, embedding, fact or reflection (with optional relevance and usefulness feedback) and counts it on the target (access_count + 1, last_accessed); an access to a memory_embeddings row counts on its packet. A target that does not exist or is not visible raises 23503.';

CREATE TABLE memsub.agent_memory_events (
    event_id uuid DEFAULT gen_random_uuid() NOT NULL,
    agent_id text NOT NULL,
    "timestamp" timestamp with time zone DEFAULT now() NOT NULL,
    packet_id uuid,
    event_type text NOT NULL,
    content jsonb DEFAULT '{}'::jsonb NOT NULL,
    scope text DEFAULT 'shared'::text NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    ttl timestamp without time zone,
    CONSTRAINT agent_memory_events_agent_not_blank CHECK ((length(btrim(agent_id)) > 0)),
    CONSTRAINT agent_memory_events_scope_known CHECK ((scope = ANY (memsub.packet_scopes()))),
    CONSTRAINT agent_memory_events_type_not_blank CHECK ((length(btrim(event_type)) > 0))
);

ALTER TABLE ONLY memsub.agent_memory_events FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.agent_memory_events OWNER TO memsub_owner;

COMMENT ON TABLE memsub.agent_memory_events IS 'What agents did: one row per agent event, linked to the packet that carried it.';

COMMENT ON COLUMN memsub.agent_memory_events.event_id IS 'Unique event identifier.';

COMMENT ON COLUMN memsub.agent_memory_events.agent_id IS 'Agent that produced the event.';

COMMENT ON COLUMN memsub.agent_memory_events."timestamp" IS 'Event time.';

COMMENT ON COLUMN memsub.agent_memory_events.packet_id IS 'Packet that carried the event (NULL once that packet was purged).';

COMMENT ON COLUMN memsub.agent_memory_events.event_type IS 'Kind of event (free text, e.g. tool_call, user_query).';

COMMENT ON COLUMN memsub.agent_memory_events.content IS 'Event content.';

COMMENT ON COLUMN memsub.agent_memory_events.scope IS 'Visibility scope, copied from the packet (shared when there is none).';

COMMENT ON COLUMN memsub.agent_memory_events.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.agent_memory_events.org_id IS 'Organization of the writer (NULL: whole tenant).';

COMMENT ON COLUMN memsub.agent_memory_events.user_id IS 'User of the writer.';

COMMENT ON COLUMN memsub.agent_memory_events.correlation_id IS 'Request correlation identifier (from the packet).';

COMMENT ON COLUMN memsub.agent_memory_events.session_id IS 'Session of the writer.';

COMMENT ON COLUMN memsub.agent_memory_events.trace_id IS 'Distributed tracing identifier (from the packet).';

COMMENT ON COLUMN memsub.agent_memory_events.ttl IS 'Expiration time (UTC) of the packet the event is linked to, copied from packet_store.ttl; an expired event is never read and purge_expired() deletes it.';

CREATE FUNCTION memsub.record_event(p_agent_id text, p_event_type text, p_content jsonb DEFAULT '{}'::jsonb, p_packet_id uuid DEFAULT NULL::uuid, p_timestamp timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS memsub.agent_memory_events
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_packet memsub.packet_store := memsub.visible_packet(p_packet_id, 'packet_id');
    v_event  memsub.agent_memory_events;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('agent_id', p_agent_id, 'event_type', p_event_type),
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

ALTER FUNCTION memsub.record_event(p_agent_id text, p_event_type text, p_content jsonb, p_packet_id uuid, p_timestamp timestamp with time zone) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.record_event(p_agent_id text, p_event_type text, p_content jsonb, p_packet_id uuid, p_timestamp timestamp with time zone) IS 'Records an agent event, optionally linked to a visible packet (then it takes the packet''s time, identity, scope and expiry).';

CREATE FUNCTION memsub.record_feedback(p_access_id uuid, p_was_useful boolean, p_reason text DEFAULT NULL::text) RETURNS memsub.memory_access_log
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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
       set was_useful = p_was_useful, feedback_reason = p_reason, feedback_at = now(),
           feedback_learned_at = case when l.was_useful is not distinct from p_was_useful
                                      then l.feedback_learned_at end
     where l.tenant_id = v_tenant and l.access_id = p_access_id
    returning l.* into v_entry;
    if not found then
        raise exception 'field "access_id": access % does not exist or is not visible', p_access_id
            using errcode = '23503', column = 'access_id';
    end if;
    return v_entry;
end
$$;

ALTER FUNCTION memsub.record_feedback(p_access_id uuid, p_was_useful boolean, p_reason text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.record_feedback(p_access_id uuid, p_was_useful boolean, p_reason text) IS 'Records whether an access was useful (and why). Changed feedback is learned again by the next memsub.learn_importance run; repeating the same feedback is not. Unknown or invisible access: 23503.';

CREATE TABLE memsub.reasoning_traces (
    trace_id uuid DEFAULT gen_random_uuid() NOT NULL,
    agent_id text,
    packet_id uuid,
    steps jsonb DEFAULT '[]'::jsonb NOT NULL,
    extracted_features jsonb DEFAULT '{}'::jsonb NOT NULL,
    inference_steps jsonb DEFAULT '[]'::jsonb NOT NULL,
    reasoning_tokens integer DEFAULT 0 NOT NULL,
    decision_tokens integer DEFAULT 0 NOT NULL,
    confidence_scores jsonb DEFAULT '{}'::jsonb NOT NULL,
    scope text DEFAULT 'shared'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    distributed_trace_id text,
    ttl timestamp without time zone,
    CONSTRAINT reasoning_traces_features_is_object CHECK ((jsonb_typeof(extracted_features) = 'object'::text)),
    CONSTRAINT reasoning_traces_inference_steps_is_array CHECK ((jsonb_typeof(inference_steps) = 'array'::text)),
    CONSTRAINT reasoning_traces_scope_known CHECK ((scope = ANY (memsub.packet_scopes()))),
    CONSTRAINT reasoning_traces_scores_is_object CHECK ((jsonb_typeof(confidence_scores) = 'object'::text)),
    CONSTRAINT reasoning_traces_steps_is_array CHECK ((jsonb_typeof(steps) = 'array'::text)),
    CONSTRAINT reasoning_traces_tokens_non_negative CHECK (((reasoning_tokens >= 0) AND (decision_tokens >= 0)))
);

ALTER TABLE ONLY memsub.reasoning_traces FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.reasoning_traces OWNER TO memsub_owner;

COMMENT ON TABLE memsub.reasoning_traces IS 'Structured reasoning of an agent for one packet: steps, features, inference, token counts.';

COMMENT ON COLUMN memsub.reasoning_traces.trace_id IS 'Unique reasoning trace identifier.';

COMMENT ON COLUMN memsub.reasoning_traces.agent_id IS 'Agent that reasoned.';

COMMENT ON COLUMN memsub.reasoning_traces.packet_id IS 'Packet the reasoning belongs to (NULL once purged).';

COMMENT ON COLUMN memsub.reasoning_traces.steps IS 'Reasoning steps, a JSON array.';

COMMENT ON COLUMN memsub.reasoning_traces.extracted_features IS 'Features extracted from the input, a JSON object.';

COMMENT ON COLUMN memsub.reasoning_traces.inference_steps IS 'Inference steps, a JSON array.';

COMMENT ON COLUMN memsub.reasoning_traces.reasoning_tokens IS 'Tokens spent reasoning.';

COMMENT ON COLUMN memsub.reasoning_traces.decision_tokens IS 'Tokens spent deciding.';

COMMENT ON COLUMN memsub.reasoning_traces.confidence_scores IS 'Confidence per step or decision, a JSON object.';

COMMENT ON COLUMN memsub.reasoning_traces.scope IS 'Visibility scope, copied from the packet (shared when there is none).';

COMMENT ON COLUMN memsub.reasoning_traces.created_at IS 'When the trace was recorded.';

COMMENT ON COLUMN memsub.reasoning_traces.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.reasoning_traces.org_id IS 'Organization of the writer (NULL: whole tenant).';

COMMENT ON COLUMN memsub.reasoning_traces.user_id IS 'User of the writer.';

COMMENT ON COLUMN memsub.reasoning_traces.correlation_id IS 'Request correlation identifier (from the packet).';

COMMENT ON COLUMN memsub.reasoning_traces.session_id IS 'Session of the writer.';

COMMENT ON COLUMN memsub.reasoning_traces.distributed_trace_id IS 'Distributed tracing identifier (the multi-tenant trace_id column; renamed because trace_id is this table''s key).';

COMMENT ON COLUMN memsub.reasoning_traces.ttl IS 'Expiration time (UTC) of the packet the trace belongs to, copied from packet_store.ttl; an expired trace is never read and purge_expired() deletes it.';

CREATE FUNCTION memsub.record_reasoning_trace(p_agent_id text, p_packet_id uuid DEFAULT NULL::uuid, p_steps jsonb DEFAULT '[]'::jsonb, p_extracted_features jsonb DEFAULT '{}'::jsonb, p_inference_steps jsonb DEFAULT '[]'::jsonb, p_reasoning_tokens integer DEFAULT 0, p_decision_tokens integer DEFAULT 0, p_confidence_scores jsonb DEFAULT '{}'::jsonb) RETURNS memsub.reasoning_traces
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_packet memsub.packet_store := memsub.visible_packet(p_packet_id, 'packet_id');
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

ALTER FUNCTION memsub.record_reasoning_trace(p_agent_id text, p_packet_id uuid, p_steps jsonb, p_extracted_features jsonb, p_inference_steps jsonb, p_reasoning_tokens integer, p_decision_tokens integer, p_confidence_scores jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.record_reasoning_trace(p_agent_id text, p_packet_id uuid, p_steps jsonb, p_extracted_features jsonb, p_inference_steps jsonb, p_reasoning_tokens integer, p_decision_tokens integer, p_confidence_scores jsonb) IS 'Records a reasoning trace (steps, extracted features, inference steps, token counts, confidence scores), optionally for a visible packet whose identity, scope and expiry it takes.';

CREATE FUNCTION memsub.reflection_priorities() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['critical', 'high', 'medium', 'low']::text[] $$;

ALTER FUNCTION memsub.reflection_priorities() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.reflection_priorities() IS 'How much a reflection matters, most first (reflection_store.priority, memsub.record_reflection p_priority, memsub.retrieve_reflections p_min_priority): retrieve_reflections weighs critical 1, high 0.75, medium 0.5, low 0.25.';

CREATE FUNCTION memsub.reflection_types() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['lesson', 'pattern', 'failure', 'success', 'insight', 'improvement', 'false_constraint']::text[] $$;

ALTER FUNCTION memsub.reflection_types() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.reflection_types() IS 'What a reflection records (seed 000''s reflection_type: reflection_store.reflection_type, memsub.record_reflection p_reflection_type, memsub.retrieve_reflections p_reflection_types).';

CREATE TABLE memsub.reflection_store (
    reflection_id uuid DEFAULT gen_random_uuid() NOT NULL,
    task_id text,
    reflection_type text NOT NULL,
    content text NOT NULL,
    context text,
    entities text[] DEFAULT '{}'::text[] NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    confidence double precision DEFAULT 0.5 NOT NULL,
    priority text DEFAULT 'medium'::text NOT NULL,
    source_agent text,
    source_packet uuid,
    access_count integer DEFAULT 0 NOT NULL,
    last_accessed timestamp with time zone,
    vector public.vector(1536),
    expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    CONSTRAINT reflection_store_access_count_non_negative CHECK ((access_count >= 0)),
    CONSTRAINT reflection_store_confidence_in_unit_range CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT reflection_store_priority_known CHECK ((priority = ANY (memsub.reflection_priorities()))),
    CONSTRAINT reflection_store_type_known CHECK ((reflection_type = ANY (memsub.reflection_types())))
)
WITH (fillfactor='80');

ALTER TABLE ONLY memsub.reflection_store FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.reflection_store OWNER TO memsub_owner;

COMMENT ON TABLE memsub.reflection_store IS 'Lessons learned: typed, prioritized reflections with an optional embedding and expiry.';

COMMENT ON COLUMN memsub.reflection_store.reflection_id IS 'Unique reflection identifier.';

COMMENT ON COLUMN memsub.reflection_store.task_id IS 'Associated task (task_reflections.task_id), if any.';

COMMENT ON COLUMN memsub.reflection_store.reflection_type IS 'One of memsub.reflection_types(): lesson, pattern, failure, success, insight, improvement or false_constraint.';

COMMENT ON COLUMN memsub.reflection_store.content IS 'Reflection content.';

COMMENT ON COLUMN memsub.reflection_store.context IS 'When and where it was learned.';

COMMENT ON COLUMN memsub.reflection_store.entities IS 'Related entities.';

COMMENT ON COLUMN memsub.reflection_store.tags IS 'Categorization tags.';

COMMENT ON COLUMN memsub.reflection_store.confidence IS 'Confidence in the lesson, in [0, 1].';

COMMENT ON COLUMN memsub.reflection_store.priority IS 'One of memsub.reflection_priorities(): critical, high, medium or low.';

COMMENT ON COLUMN memsub.reflection_store.source_agent IS 'Agent that learned it.';

COMMENT ON COLUMN memsub.reflection_store.source_packet IS 'Originating packet (NULL once purged).';

COMMENT ON COLUMN memsub.reflection_store.access_count IS 'Times accessed.';

COMMENT ON COLUMN memsub.reflection_store.last_accessed IS 'Last access time.';

COMMENT ON COLUMN memsub.reflection_store.vector IS 'Semantic search embedding (dimension: installation_settings.vector_dimension).';

COMMENT ON COLUMN memsub.reflection_store.expires_at IS 'Optional expiration; expired reflections leave mv_reflection_patterns.';

COMMENT ON COLUMN memsub.reflection_store.created_at IS 'When it was recorded.';

COMMENT ON COLUMN memsub.reflection_store.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.reflection_store.org_id IS 'Organization of the writer (NULL: whole tenant).';

COMMENT ON COLUMN memsub.reflection_store.user_id IS 'User of the writer.';

COMMENT ON COLUMN memsub.reflection_store.correlation_id IS 'Request correlation identifier.';

COMMENT ON COLUMN memsub.reflection_store.session_id IS 'Session of the writer.';

COMMENT ON COLUMN memsub.reflection_store.trace_id IS 'Distributed tracing identifier.';

CREATE FUNCTION memsub.record_reflection(p_reflection_type text, p_content text, p_context text DEFAULT NULL::text, p_entities text[] DEFAULT '{}'::text[], p_tags text[] DEFAULT '{}'::text[], p_confidence double precision DEFAULT 0.5, p_priority text DEFAULT 'medium'::text, p_source_agent text DEFAULT NULL::text, p_source_packet uuid DEFAULT NULL::uuid, p_task_id text DEFAULT NULL::text, p_vector public.vector DEFAULT NULL::public.vector, p_expires_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS memsub.reflection_store
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_packet     memsub.packet_store;
    v_reflection memsub.reflection_store;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('reflection_type', p_reflection_type, 'content', p_content,
                                      'context', p_context, 'priority', p_priority, 'source_agent', p_source_agent,
                                      'task_id', p_task_id),
            memsub._check_limit(cardinality(p_entities), 'max_array_items', 'entities'),
            memsub._check_limit(cardinality(p_tags), 'max_tags', 'tags');
    perform memsub._check_one_of(p_reflection_type, memsub.reflection_types(), 'reflection_type');
    perform memsub._check_one_of(coalesce(p_priority, 'medium'), memsub.reflection_priorities(), 'priority');
    perform memsub._check_vector(p_vector, 'vector');
    perform memsub._check_finite_time(p_expires_at, 'expires_at');
    if p_expires_at is not null and p_expires_at <= now() then
        raise exception 'field "expires_at" must be in the future, not %', p_expires_at
            using errcode = '22023', column = 'expires_at';
    end if;
    v_packet := memsub.visible_packet(p_source_packet, 'source_packet');
    insert into memsub.reflection_store (
        task_id, reflection_type, content, context, entities, tags, confidence, priority, source_agent,
        source_packet, vector, expires_at, tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
    values (
        memsub._optional_text(p_task_id), p_reflection_type, memsub._require_text(p_content, 'content'), p_context,
        coalesce(p_entities, '{}'),
        array(select distinct t from unnest(coalesce(p_tags, '{}')) as t where t ~ '\S' order by t),
        coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5), coalesce(p_priority, 'medium'),
        memsub._optional_text(coalesce(p_source_agent, v_packet.routing ->> 'agent')), p_source_packet, p_vector,
        -- a reflection drawn from an expiring packet expires with it at the latest
        least(p_expires_at, v_packet.ttl at time zone 'UTC'),
        v_tenant, memsub.current_org_id(), memsub.current_user_id(), v_packet.correlation_id,
        memsub.current_session_id(), v_packet.trace_id)
    returning * into v_reflection;
    return v_reflection;
end
$$;

ALTER FUNCTION memsub.record_reflection(p_reflection_type text, p_content text, p_context text, p_entities text[], p_tags text[], p_confidence double precision, p_priority text, p_source_agent text, p_source_packet uuid, p_task_id text, p_vector public.vector, p_expires_at timestamp with time zone) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.record_reflection(p_reflection_type text, p_content text, p_context text, p_entities text[], p_tags text[], p_confidence double precision, p_priority text, p_source_agent text, p_source_packet uuid, p_task_id text, p_vector public.vector, p_expires_at timestamp with time zone) IS 'Records a lesson learned: type (lesson, pattern, failure, success, insight, improvement, false_constraint), priority (critical, high, medium, low), optional embedding, source packet and expiry (at the latest the source packet''s).';

CREATE FUNCTION memsub.summary_scope_types() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['thread', 'agent', 'topic', 'time_period', 'project', 'task']::text[] $$;

ALTER FUNCTION memsub.summary_scope_types() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.summary_scope_types() IS 'What a summary covers (seed 000''s scope_type: memory_summaries.scope_type, memsub.record_summary p_scope_type).';

CREATE TABLE memsub.memory_summaries (
    summary_id uuid DEFAULT gen_random_uuid() NOT NULL,
    scope_type text NOT NULL,
    scope_value text NOT NULL,
    summary_text text NOT NULL,
    key_facts jsonb DEFAULT '[]'::jsonb NOT NULL,
    key_entities text[] DEFAULT '{}'::text[] NOT NULL,
    key_decisions text[] DEFAULT '{}'::text[] NOT NULL,
    source_packet_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    packet_count integer DEFAULT 0 NOT NULL,
    vector public.vector(1536),
    confidence double precision DEFAULT 0.5 NOT NULL,
    coverage_start timestamp with time zone,
    coverage_end timestamp with time zone,
    valid_until timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    CONSTRAINT memory_summaries_confidence_in_unit_range CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT memory_summaries_coverage_in_order CHECK ((coverage_end >= coverage_start)),
    CONSTRAINT memory_summaries_key_facts_is_array CHECK ((jsonb_typeof(key_facts) = 'array'::text)),
    CONSTRAINT memory_summaries_packet_count_matches CHECK ((packet_count = cardinality(source_packet_ids))),
    CONSTRAINT memory_summaries_scope_type_known CHECK ((scope_type = ANY (memsub.summary_scope_types())))
);

ALTER TABLE ONLY memsub.memory_summaries FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_summaries OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_summaries IS 'Consolidated memories: a summary over a set of packets of one scope, valid until regenerated.';

COMMENT ON COLUMN memsub.memory_summaries.summary_id IS 'Unique summary identifier.';

COMMENT ON COLUMN memsub.memory_summaries.scope_type IS 'What the summary covers, one of memsub.summary_scope_types(): thread, agent, topic, time_period, project or task.';

COMMENT ON COLUMN memsub.memory_summaries.scope_value IS 'Identifier or name of the scope.';

COMMENT ON COLUMN memsub.memory_summaries.summary_text IS 'Natural-language summary.';

COMMENT ON COLUMN memsub.memory_summaries.key_facts IS 'Important facts, a JSON array.';

COMMENT ON COLUMN memsub.memory_summaries.key_entities IS 'Mentioned entities.';

COMMENT ON COLUMN memsub.memory_summaries.key_decisions IS 'Decision points.';

COMMENT ON COLUMN memsub.memory_summaries.source_packet_ids IS 'Summarized packets (distinct).';

COMMENT ON COLUMN memsub.memory_summaries.packet_count IS 'How many packets were summarized.';

COMMENT ON COLUMN memsub.memory_summaries.vector IS 'Summary embedding (dimension: installation_settings.vector_dimension).';

COMMENT ON COLUMN memsub.memory_summaries.confidence IS 'Summary confidence in [0, 1].';

COMMENT ON COLUMN memsub.memory_summaries.coverage_start IS 'Earliest timestamp of the summarized packets.';

COMMENT ON COLUMN memsub.memory_summaries.coverage_end IS 'Latest timestamp of the summarized packets.';

COMMENT ON COLUMN memsub.memory_summaries.valid_until IS 'When to regenerate (NULL: never due by time).';

COMMENT ON COLUMN memsub.memory_summaries.created_at IS 'When the summary was recorded.';

COMMENT ON COLUMN memsub.memory_summaries.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.memory_summaries.org_id IS 'Organization of the writer (NULL: whole tenant).';

COMMENT ON COLUMN memsub.memory_summaries.user_id IS 'User of the writer.';

COMMENT ON COLUMN memsub.memory_summaries.correlation_id IS 'Request correlation identifier.';

COMMENT ON COLUMN memsub.memory_summaries.session_id IS 'Session of the writer.';

COMMENT ON COLUMN memsub.memory_summaries.trace_id IS 'Distributed tracing identifier.';

CREATE FUNCTION memsub.record_summary(p_scope_type text, p_scope_value text, p_summary_text text, p_source_packet_ids uuid[], p_key_facts jsonb DEFAULT '[]'::jsonb, p_key_entities text[] DEFAULT '{}'::text[], p_key_decisions text[] DEFAULT '{}'::text[], p_vector public.vector DEFAULT NULL::public.vector, p_confidence double precision DEFAULT 0.5, p_valid_until timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS memsub.memory_summaries
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_ids     uuid[];
    v_found   integer;
    v_start   timestamptz;
    v_end     timestamptz;
    v_missing uuid;
    v_summary memsub.memory_summaries;
    v_scope   text;  -- the scope value as stored
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('scope_type', p_scope_type, 'scope_value', p_scope_value,
                                      'summary_text', p_summary_text),
            memsub._check_limit(cardinality(p_source_packet_ids), 'max_array_items', 'source_packet_ids'),
            memsub._check_limit(pg_column_size(p_key_facts), 'max_json_bytes', 'key_facts'),
            memsub._check_limit(cardinality(p_key_entities), 'max_array_items', 'key_entities'),
            memsub._check_limit(cardinality(p_key_decisions), 'max_array_items', 'key_decisions');
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
    perform memsub._check_finite_time(p_valid_until, 'valid_until');
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
    insert into memsub.memory_summaries (
        scope_type, scope_value, summary_text, key_facts, key_entities, key_decisions, source_packet_ids,
        packet_count, vector, confidence, coverage_start, coverage_end, valid_until,
        tenant_id, org_id, user_id, session_id)
    values (
        p_scope_type, v_scope, p_summary_text,
        coalesce(memsub._check_json_type(p_key_facts, 'array', 'key_facts'), '[]'),
        coalesce(p_key_entities, '{}'), coalesce(p_key_decisions, '{}'), v_ids, cardinality(v_ids), p_vector,
        coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5), v_start, v_end, p_valid_until,
        v_tenant, memsub.current_org_id(), memsub.current_user_id(), memsub.current_session_id())
    returning * into v_summary;
    return v_summary;
end
$$;

ALTER FUNCTION memsub.record_summary(p_scope_type text, p_scope_value text, p_summary_text text, p_source_packet_ids uuid[], p_key_facts jsonb, p_key_entities text[], p_key_decisions text[], p_vector public.vector, p_confidence double precision, p_valid_until timestamp with time zone) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.record_summary(p_scope_type text, p_scope_value text, p_summary_text text, p_source_packet_ids uuid[], p_key_facts jsonb, p_key_entities text[], p_key_decisions text[], p_vector public.vector, p_confidence double precision, p_valid_until timestamp with time zone) IS 'Records a consolidated summary of a scope (thread, agent, topic, time_period, project, task) over a set of visible packets; packet_count and the coverage window (first and last packet time) are computed from them.';

CREATE FUNCTION memsub.task_outcomes() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['success', 'partial', 'failure', 'unknown']::text[] $$;

ALTER FUNCTION memsub.task_outcomes() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.task_outcomes() IS 'How a task ended, as its reflection records it (task_reflections.outcome, memsub.record_task_reflection p_outcome).';

CREATE TABLE memsub.task_reflections (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    task_id text NOT NULL,
    task_description text,
    outcome text DEFAULT 'unknown'::text NOT NULL,
    what_worked text[] DEFAULT '{}'::text[] NOT NULL,
    what_failed text[] DEFAULT '{}'::text[] NOT NULL,
    false_constraints text[] DEFAULT '{}'::text[] NOT NULL,
    helpful_patterns text[] DEFAULT '{}'::text[] NOT NULL,
    lessons text[] DEFAULT '{}'::text[] NOT NULL,
    recommendations text[] DEFAULT '{}'::text[] NOT NULL,
    related_decisions uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    execution_time_ms double precision,
    metrics_improved jsonb DEFAULT '{}'::jsonb NOT NULL,
    metrics_degraded jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    CONSTRAINT task_reflections_execution_time_non_negative CHECK ((execution_time_ms >= (0)::double precision)),
    CONSTRAINT task_reflections_outcome_known CHECK ((outcome = ANY (memsub.task_outcomes()))),
    CONSTRAINT task_reflections_task_not_blank CHECK ((length(btrim(task_id)) > 0))
);

ALTER TABLE ONLY memsub.task_reflections FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.task_reflections OWNER TO memsub_owner;

COMMENT ON TABLE memsub.task_reflections IS 'Per-task learning: one row per task of a tenant (the latest reflection replaces the previous).';

COMMENT ON COLUMN memsub.task_reflections.id IS 'Primary key.';

COMMENT ON COLUMN memsub.task_reflections.task_id IS 'Task identifier, unique per tenant.';

COMMENT ON COLUMN memsub.task_reflections.task_description IS 'What the task was.';

COMMENT ON COLUMN memsub.task_reflections.outcome IS 'One of memsub.task_outcomes(): success, partial, failure or unknown.';

COMMENT ON COLUMN memsub.task_reflections.what_worked IS 'Successful approaches.';

COMMENT ON COLUMN memsub.task_reflections.what_failed IS 'Failed approaches.';

COMMENT ON COLUMN memsub.task_reflections.false_constraints IS 'Unnecessary constraints found.';

COMMENT ON COLUMN memsub.task_reflections.helpful_patterns IS 'Patterns that helped.';

COMMENT ON COLUMN memsub.task_reflections.lessons IS 'Lessons learned.';

COMMENT ON COLUMN memsub.task_reflections.recommendations IS 'Future recommendations.';

COMMENT ON COLUMN memsub.task_reflections.related_decisions IS 'Links to decision packets.';

COMMENT ON COLUMN memsub.task_reflections.execution_time_ms IS 'How long the task took, in milliseconds.';

COMMENT ON COLUMN memsub.task_reflections.metrics_improved IS 'Metrics that got better.';

COMMENT ON COLUMN memsub.task_reflections.metrics_degraded IS 'Metrics that got worse.';

COMMENT ON COLUMN memsub.task_reflections.created_at IS 'First reflection time.';

COMMENT ON COLUMN memsub.task_reflections.updated_at IS 'Last reflection time.';

COMMENT ON COLUMN memsub.task_reflections.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.task_reflections.org_id IS 'Organization of the writer (NULL: whole tenant).';

COMMENT ON COLUMN memsub.task_reflections.user_id IS 'User of the writer.';

COMMENT ON COLUMN memsub.task_reflections.correlation_id IS 'Request correlation identifier.';

COMMENT ON COLUMN memsub.task_reflections.session_id IS 'Session of the writer.';

COMMENT ON COLUMN memsub.task_reflections.trace_id IS 'Distributed tracing identifier.';

CREATE FUNCTION memsub.record_task_reflection(p_task_id text, p_outcome text DEFAULT 'unknown'::text, p_task_description text DEFAULT NULL::text, p_what_worked text[] DEFAULT '{}'::text[], p_what_failed text[] DEFAULT '{}'::text[], p_false_constraints text[] DEFAULT '{}'::text[], p_helpful_patterns text[] DEFAULT '{}'::text[], p_lessons text[] DEFAULT '{}'::text[], p_recommendations text[] DEFAULT '{}'::text[], p_related_decisions uuid[] DEFAULT '{}'::uuid[], p_execution_time_ms double precision DEFAULT NULL::double precision, p_metrics_improved jsonb DEFAULT '{}'::jsonb, p_metrics_degraded jsonb DEFAULT '{}'::jsonb) RETURNS memsub.task_reflections
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_reflection memsub.task_reflections;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('task_id', p_task_id, 'outcome', p_outcome,
                                      'task_description', p_task_description),
            memsub._check_limit(cardinality(p_what_worked), 'max_array_items', 'what_worked'),
            memsub._check_limit(cardinality(p_what_failed), 'max_array_items', 'what_failed'),
            memsub._check_limit(cardinality(p_false_constraints), 'max_array_items', 'false_constraints'),
            memsub._check_limit(cardinality(p_helpful_patterns), 'max_array_items', 'helpful_patterns'),
            memsub._check_limit(cardinality(p_lessons), 'max_array_items', 'lessons'),
            memsub._check_limit(cardinality(p_recommendations), 'max_array_items', 'recommendations'),
            memsub._check_limit(cardinality(p_related_decisions), 'max_array_items', 'related_decisions'),
            memsub._check_limit(pg_column_size(p_metrics_improved), 'max_json_bytes', 'metrics_improved'),
            memsub._check_limit(pg_column_size(p_metrics_degraded), 'max_json_bytes', 'metrics_degraded');
    perform memsub._check_one_of(p_outcome, memsub.task_outcomes(), 'outcome');
    perform memsub._check_finite(p_execution_time_ms, 'execution_time_ms');
    if p_execution_time_ms < 0 then
        raise exception 'field "execution_time_ms" must not be negative' using errcode = '22023', column = 'execution_time_ms';
    end if;
    insert into memsub.task_reflections as t (
        task_id, task_description, outcome, what_worked, what_failed, false_constraints, helpful_patterns,
        lessons, recommendations, related_decisions, execution_time_ms, metrics_improved, metrics_degraded,
        tenant_id, org_id, user_id, session_id)
    values (
        memsub._require_text(p_task_id, 'task_id'), p_task_description, p_outcome,
        coalesce(p_what_worked, '{}'), coalesce(p_what_failed, '{}'), coalesce(p_false_constraints, '{}'),
        coalesce(p_helpful_patterns, '{}'), coalesce(p_lessons, '{}'), coalesce(p_recommendations, '{}'),
        coalesce(p_related_decisions, '{}'), p_execution_time_ms,
        coalesce(memsub._check_json_type(p_metrics_improved, 'object', 'metrics_improved'), '{}'),
        coalesce(memsub._check_json_type(p_metrics_degraded, 'object', 'metrics_degraded'), '{}'),
        v_tenant, memsub.current_org_id(), memsub.current_user_id(), memsub.current_session_id())
    on conflict (tenant_id, task_id) do update
       set task_description = coalesce(excluded.task_description, t.task_description),
           outcome = excluded.outcome, what_worked = excluded.what_worked, what_failed = excluded.what_failed,
           false_constraints = excluded.false_constraints, helpful_patterns = excluded.helpful_patterns,
           lessons = excluded.lessons, recommendations = excluded.recommendations,
           related_decisions = excluded.related_decisions, execution_time_ms = excluded.execution_time_ms,
           metrics_improved = excluded.metrics_improved, metrics_degraded = excluded.metrics_degraded,
           updated_at = now(), user_id = excluded.user_id, session_id = excluded.session_id
    returning t.* into v_reflection;
    return v_reflection;
end
$$;

ALTER FUNCTION memsub.record_task_reflection(p_task_id text, p_outcome text, p_task_description text, p_what_worked text[], p_what_failed text[], p_false_constraints text[], p_helpful_patterns text[], p_lessons text[], p_recommendations text[], p_related_decisions uuid[], p_execution_time_ms double precision, p_metrics_improved jsonb, p_metrics_degraded jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.record_task_reflection(p_task_id text, p_outcome text, p_task_description text, p_what_worked text[], p_what_failed text[], p_false_constraints text[], p_helpful_patterns text[], p_lessons text[], p_recommendations text[], p_related_decisions uuid[], p_execution_time_ms double precision, p_metrics_improved jsonb, p_metrics_degraded jsonb) IS 'Records what was learned from a task (one row per task_id and tenant; a later reflection on the same task replaces the earlier one). A task of another organization of the tenant raises 42501.';

CREATE PROCEDURE memsub.refresh_memory_views(INOUT run_id uuid DEFAULT NULL::uuid)
    LANGUAGE plpgsql
    AS $$
declare
    v_name    pg_catalog.text;
    v_status  pg_catalog.text;
    v_skipped pg_catalog.text[] := '{}'::pg_catalog.text[];
begin
    run_id := coalesce(run_id, pg_catalog.gen_random_uuid());
    foreach v_name in array memsub._memory_view_names() loop
        select r.status into v_status from memsub._refresh_memory_view(v_name, run_id) r;
        if v_status operator(pg_catalog.=) 'skipped' then
            v_skipped := v_skipped operator(pg_catalog.||) v_name;
        end if;
        commit;  -- one view per transaction: locks and snapshots are released view by view
    end loop;
    if pg_catalog.cardinality(v_skipped) operator(pg_catalog.>) 0 then
        raise warning 'memsub.refresh_memory_views: skipped %: another refresh is running (run %)',
            pg_catalog.array_to_string(v_skipped, ', '), run_id;
    end if;
end
$$;

ALTER PROCEDURE memsub.refresh_memory_views(INOUT run_id uuid) OWNER TO memsub_owner;

COMMENT ON PROCEDURE memsub.refresh_memory_views(INOUT run_id uuid) IS 'Refreshes the four materialized views, one transaction each (memsub._refresh_memory_view), and returns the run_id of their rows in memory_view_refresh_log. A view another refresh is working on is logged as skipped and a WARNING names the skipped views. Call it outside a transaction block: CALL memsub.refresh_memory_views().';

CREATE FUNCTION memsub.require_active_session(p_session memsub.sessions) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    if p_session.status <> 'active' then
        raise exception 'session "%" is %, not active', p_session.id, p_session.status
            using errcode = '55000', column = 'session_id';
    end if;
end
$$;

ALTER FUNCTION memsub.require_active_session(p_session memsub.sessions) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.require_active_session(p_session memsub.sessions) IS 'Internal: raises 55000 naming session_id unless the session is active.';

CREATE FUNCTION memsub.require_login(p_login name) RETURNS name
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    can_login boolean := (select r.rolcanlogin from pg_catalog.pg_roles r where r.rolname = p_login);
begin
    if can_login is null then
        raise exception 'memsub: role "%" does not exist', p_login
            using errcode = '42704', column = 'login';
    elsif not can_login then
        raise exception 'memsub: role "%" cannot log in; bind the login roles that are members of it', p_login
            using errcode = '22023', column = 'login';
    end if;
    return p_login;
end
$$;

ALTER FUNCTION memsub.require_login(p_login name) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.require_login(p_login name) IS 'Returns the name of an existing login role; 42704 (column login) when it does not exist, 22023 when it cannot log in.';

CREATE FUNCTION memsub.require_shared_packet(p_packet memsub.packet_store, p_field text) RETURNS memsub.packet_store
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    if p_packet.packet_id is not null and p_packet.scope <> 'shared' then
        raise exception 'field "%": packet % has scope %; tenant-wide knowledge can only come from shared packets',
            p_field, p_packet.packet_id, p_packet.scope
            using errcode = '22023', column = p_field;
    end if;
    return p_packet;
end
$$;

ALTER FUNCTION memsub.require_shared_packet(p_packet memsub.packet_store, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.require_shared_packet(p_packet memsub.packet_store, p_field text) IS 'Refuses (22023) a cursor or l-private packet as the source of tenant-wide knowledge (facts, relationships).';

CREATE FUNCTION memsub.retrieve_reflections(p_query public.vector DEFAULT NULL::public.vector, p_tags text[] DEFAULT NULL::text[], p_k integer DEFAULT 5, p_reflection_types text[] DEFAULT NULL::text[], p_min_priority text DEFAULT 'low'::text, p_task_id text DEFAULT NULL::text, p_require_tags boolean DEFAULT false, p_record_access boolean DEFAULT false, p_query_text text DEFAULT NULL::text, p_agent_id text DEFAULT NULL::text) RETURNS TABLE(reflection_id uuid, reflection_type text, content text, tags text[], priority text, confidence double precision, distance double precision, tag_overlap double precision, score double precision, access_id uuid)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_priorities text[] := memsub.reflection_priorities();  -- most first
    v_rank       integer;
    v_task_id    text;  -- the task id as stored; blank: every task
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_limit(cardinality(p_tags), 'max_tags', 'tags'),
            memsub._check_limit(cardinality(p_reflection_types), 'max_array_items', 'reflection_types'),
            memsub._check_text_limits('min_priority', p_min_priority, 'task_id', p_task_id, 'agent_id', p_agent_id),
            memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    perform memsub._check_vector(p_query, 'query');
    perform memsub._check_filter_values(p_tags, 'tags');
    -- A type outside the vocabulary matches nothing: refused, as a blank or NULL one is.
    perform memsub._check_filter_values(p_reflection_types, 'reflection_types');
    perform memsub._check_one_of(t, memsub.reflection_types(), 'reflection_types') from unnest(p_reflection_types) t;
    perform memsub._check_one_of(p_min_priority, v_priorities, 'min_priority');
    perform memsub._check_count(p_k, 'max_k', 'k');
    v_task_id := memsub._optional_text(p_task_id);
    v_rank := array_position(v_priorities, p_min_priority);
    return query
    with scored as (
        select r.reflection_id, r.reflection_type, r.content, r.tags, r.priority, r.confidence,
               (r.vector <=> p_query)::double precision as distance,
               case when cardinality(p_tags) > 0
                    then (select count(*) from unnest(r.tags) t where t = any(p_tags))::double precision
                         / cardinality(array(select distinct u from unnest(p_tags) u))
                    else 0.0 end as tag_overlap,
               (cardinality(v_priorities) + 1 - array_position(v_priorities, r.priority))::double precision
                   / cardinality(v_priorities) as priority_weight
          from memsub.reflection_store r
         where r.tenant_id = v_tenant
           and (r.expires_at is null or r.expires_at > now())
           and (p_reflection_types is null or r.reflection_type = any(p_reflection_types))
           and array_position(v_priorities, r.priority) <= v_rank
           and (v_task_id is null or r.task_id = v_task_id)
           and (not p_require_tags or cardinality(p_tags) is null or r.tags && p_tags)
    ), top as materialized (
        select s.*,
               0.6 * coalesce(greatest(0.0, 1.0 - s.distance / 2.0), 0.5) + 0.2 * s.tag_overlap
               + 0.2 * s.priority_weight as score
          from scored s
         order by 0.6 * coalesce(greatest(0.0, 1.0 - s.distance / 2.0), 0.5) + 0.2 * s.tag_overlap
                  + 0.2 * s.priority_weight desc, s.reflection_id
         limit p_k
    ), recorded as (
        select a.target_id, a.access_id
          from memsub._record_accesses('reflection', (select array_agg(t.reflection_id) from top t),
                                      (select array_agg(t.score) from top t),
                                      p_query_text, 'retrieve_reflections', p_agent_id) a
         where p_record_access
    )
    select t.reflection_id, t.reflection_type, t.content, t.tags, t.priority, t.confidence, t.distance,
           t.tag_overlap, t.score, a.access_id
      from top t
      left join recorded a on a.target_id = t.reflection_id
     order by t.score desc, t.reflection_id;
end
$$;

ALTER FUNCTION memsub.retrieve_reflections(p_query public.vector, p_tags text[], p_k integer, p_reflection_types text[], p_min_priority text, p_task_id text, p_require_tags boolean, p_record_access boolean, p_query_text text, p_agent_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.retrieve_reflections(p_query public.vector, p_tags text[], p_k integer, p_reflection_types text[], p_min_priority text, p_task_id text, p_require_tags boolean, p_record_access boolean, p_query_text text, p_agent_id text) IS 'Lessons relevant to a task: the k visible, unexpired reflections with the best score = 0.6 similarity to the query vector + 0.2 tag overlap with tags + 0.2 priority, filtered by reflection types, minimum priority, task (its id read as stored: trimmed, each run of whitespace one space; a blank id filters nothing), and (require_tags) at least one shared tag. record_access logs each result and counts it.';

CREATE FUNCTION memsub.revoke_api_key(p_key_id text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    changed integer;
begin
    perform memsub._require_key_admin(null);
    -- row-level security (forced) keeps a tenant_admin context to the keys of its tenant
    update memsub.api_keys k set revoked_at = pg_catalog.statement_timestamp()
     where k.key_id = p_key_id and k.revoked_at is null;
    get diagnostics changed = row_count;
    return changed > 0;
end
$$;

ALTER FUNCTION memsub.revoke_api_key(p_key_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.revoke_api_key(p_key_id text) IS 'Revokes an API key by its key_id: it never authenticates again. True when a live key of a tenant the context manages was revoked. Needs a tenant_admin or platform_admin context.';

CREATE FUNCTION memsub.search_modes() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['auto', 'exact', 'approximate']::text[] $$;

ALTER FUNCTION memsub.search_modes() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.search_modes() IS 'How memsub.semantic_search finds its hits (p_mode): auto (the cheaper at the recall bound), the exact scan, or the HNSW walk.';

CREATE FUNCTION memsub.search_rank_orders() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select array['distance', 'combined']::text[] $$;

ALTER FUNCTION memsub.search_rank_orders() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.search_rank_orders() IS 'How memsub.semantic_search orders its hits (p_rank_by): by distance, or by memsub.combined_score.';

CREATE FUNCTION memsub.search_semantic_memory(p_query public.vector, p_limit integer DEFAULT 10, p_agent_id text DEFAULT NULL::text, p_mode text DEFAULT 'auto'::text) RETURNS TABLE(embedding_id uuid, agent_id text, payload jsonb, embedding_type text, scope text, importance_score double precision, distance double precision, method text)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    SET "hnsw.iterative_scan" TO 'strict_order'
    SET "hnsw.ef_search" TO '40'
    SET "hnsw.max_scan_tuples" TO '20000'
    SET enable_sort TO 'on'
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
declare
    exact_rows constant integer := 10000;
    v_tenant   uuid := memsub.current_tenant_id();
    v_agent_id text;  -- the agent id as stored; blank: every agent
    v_total    double precision;
    v_rows     bigint;
    v_method   text;
    v_ids      uuid[];
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('agent_id', p_agent_id, 'mode', p_mode);
    v_agent_id := memsub._optional_text(p_agent_id);
    if p_query is null then
        raise exception 'field "query" is required' using errcode = '23502', column = 'query';
    end if;
    perform memsub._check_vector(p_query, 'query');
    perform memsub._check_count(p_limit, 'max_k', 'limit');
    perform memsub._check_one_of(p_mode, memsub.search_modes(), 'mode');
    -- Rows of every tenant in the graph, by the index's estimate (kept by vacuum and analyze; -1 before either).
    select greatest(c.reltuples, 0) into v_total
      from pg_catalog.pg_class c where c.oid = 'memsub.idx_semantic_memory_vector'::regclass;
    v_method := case when p_mode = 'auto' and v_total <= exact_rows then 'exact' else p_mode end;
    if v_method = 'auto' then
        -- The exact scan of at most exact_rows + 1 of the caller's rows: it answers when they are all there are,
        -- at the cost of one scan; a bigger set is walked.
        with bounded as (
            select m.embedding_id, cosine_distance(m.vector, p_query) as distance
              from memsub.semantic_memory m
             where (v_tenant is null or m.tenant_id = v_tenant) and (v_agent_id is null or m.agent_id = v_agent_id)
             limit exact_rows + 1)
        select (select count(*) from bounded),
               array(select b.embedding_id from bounded b order by b.distance, b.embedding_id limit p_limit)
          into v_rows, v_ids;
        v_method := case when v_rows <= exact_rows then 'exact' else 'approximate' end;
    elsif v_method = 'approximate' then
        select count(*) into v_rows
          from (select from memsub.semantic_memory m
                 where (v_tenant is null or m.tenant_id = v_tenant) and (v_agent_id is null or m.agent_id = v_agent_id)
                 limit exact_rows + 1) s;
    end if;
    if v_method = 'approximate' then
        -- About ten candidates per wanted row inside the caller's share of the graph.
        perform pg_catalog.set_config('hnsw.ef_search', memsub._walk_ef_search(
            p_limit, greatest(v_rows, 1) / greatest(v_total, v_rows, 1))::text, true);
        perform pg_catalog.set_config('enable_sort', 'off', true);
        v_ids := array(select m.embedding_id from memsub.semantic_memory m
                        where (v_tenant is null or m.tenant_id = v_tenant)
                          and (v_agent_id is null or m.agent_id = v_agent_id)
                        order by m.vector <=> p_query
                        limit p_limit);
        perform pg_catalog.set_config('enable_sort', 'on', true);
        if cardinality(v_ids) < least(p_limit, v_rows) then
            v_method := 'exact';  -- short: the exact scan answers
            v_ids := null;
        end if;
    end if;
    if v_ids is not null then
        return query
            select m.embedding_id, m.agent_id, m.payload, m.embedding_type, m.scope, m.importance_score,
                   cosine_distance(m.vector, p_query), v_method
              from memsub.semantic_memory m
             where (v_tenant is null or m.tenant_id = v_tenant) and m.embedding_id = any(v_ids)
             order by 7, 1;
    else
        return query
            select m.embedding_id, m.agent_id, m.payload, m.embedding_type, m.scope, m.importance_score,
                   cosine_distance(m.vector, p_query), v_method
              from memsub.semantic_memory m
             where (v_tenant is null or m.tenant_id = v_tenant) and (v_agent_id is null or m.agent_id = v_agent_id)
             order by 7, 1
             limit p_limit;
    end if;
end
$$;

ALTER FUNCTION memsub.search_semantic_memory(p_query public.vector, p_limit integer, p_agent_id text, p_mode text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.search_semantic_memory(p_query public.vector, p_limit integer, p_agent_id text, p_mode text) IS 'The limit visible legacy memories nearest to the query (cosine distance), optionally of one agent (its id read as stored: trimmed, each run of whitespace one space; a blank id filters nothing). mode auto (default) scans the caller''s rows exactly while they are at most 10,000 (or the whole table is), and walks the HNSW graph for a bigger set; exact always scans exactly (recall 1); approximate always walks. A walk that finds fewer rows than it should is followed by the exact scan; method says which one answered.';

CREATE FUNCTION memsub.semantic_search(p_query public.vector, p_k integer DEFAULT 10, p_embedding_type text DEFAULT 'content'::text, p_thread_id uuid DEFAULT NULL::uuid, p_tags text[] DEFAULT NULL::text[], p_packet_type text DEFAULT NULL::text, p_since timestamp with time zone DEFAULT NULL::timestamp with time zone, p_until timestamp with time zone DEFAULT NULL::timestamp with time zone, p_min_importance double precision DEFAULT NULL::double precision, p_rank_by text DEFAULT 'distance'::text, p_record_access boolean DEFAULT false, p_query_text text DEFAULT NULL::text, p_agent_id text DEFAULT NULL::text, p_mode text DEFAULT 'auto'::text, p_ef_search integer DEFAULT NULL::integer, p_max_scan_tuples integer DEFAULT 20000, p_with_packets boolean DEFAULT false) RETURNS TABLE(embedding_id uuid, packet_id uuid, embedding_type text, chunk_index integer, chunk_text text, distance double precision, importance_score double precision, combined_score double precision, method text, access_id uuid, packet jsonb)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    SET "hnsw.iterative_scan" TO 'relaxed_order'
    SET "hnsw.ef_search" TO '100'
    SET "hnsw.max_scan_tuples" TO '20000'
    AS $$
declare
    v_tenant   uuid := memsub.current_tenant_id();
    v_pool     integer;
    v_method   text;
    v_ef       integer;
    v_rows     bigint;
    v_exact    boolean;
    v_hits     memsub.retrieval_candidate[];
    v_ids      uuid[];
    v_scores   double precision[];
    v_access   uuid[];
    v_packet_rows jsonb;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('embedding_type', p_embedding_type, 'packet_type', p_packet_type,
                                      'rank_by', p_rank_by, 'mode', p_mode, 'agent_id', p_agent_id),
            memsub._check_limit(cardinality(p_tags), 'max_tags', 'tags'),
            memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(), 'embedding_type');
    perform memsub._check_one_of(p_rank_by, memsub.search_rank_orders(), 'rank_by');
    perform memsub._check_one_of(p_mode, memsub.search_modes(), 'mode');
    if p_query is null then
        raise exception 'field "query" is required' using errcode = '23502', column = 'query';
    end if;
    perform memsub._check_vector(p_query, 'query');
    perform memsub._check_finite_time(p_since, 'since');
    perform memsub._check_finite_time(p_until, 'until');
    perform memsub._check_time_range(p_since, p_until);
    perform memsub._check_filter_values(p_tags, 'tags');  -- NULL (no tag filter) passes
    if p_packet_type is not null then
        perform memsub._check_filter_values(array[p_packet_type], 'packet_type');
    end if;
    perform memsub._check_count(p_k, 'max_k', 'k');
    if p_ef_search is not null and (p_ef_search < 1 or p_ef_search > 1000) then
        raise exception 'field "ef_search" must be between 1 and 1000, not %', p_ef_search
            using errcode = '22023', column = 'ef_search';
    end if;
    if p_max_scan_tuples is null or p_max_scan_tuples < 1 then
        raise exception 'field "max_scan_tuples" must be >= 1, not %', p_max_scan_tuples
            using errcode = '22023', column = 'max_scan_tuples';
    end if;
    -- The HNSW graph holds every tenant's vectors: the scan bound is what keeps one call from walking all of it.
    perform memsub._check_limit(p_max_scan_tuples, 'max_scan_tuples', 'max_scan_tuples');
    perform memsub._check_unit(p_min_importance, 'min_importance');
    perform pg_catalog.set_config('hnsw.max_scan_tuples', p_max_scan_tuples::text, true);
    -- Combined ranking re-ranks a wider pool of nearest candidates.
    v_pool := case when p_rank_by = 'combined' then least(1000, p_k * 4) else p_k end;

    select st.method, st.ef_search, st.tenant_rows into v_method, v_ef, v_rows
      from memsub._search_strategy(v_tenant, p_embedding_type, v_pool, p_mode, p_ef_search) st;
    perform pg_catalog.set_config('hnsw.ef_search', v_ef::text, true);

    -- The candidates (memsub._nearest_candidates builds and runs the statement), by the method chosen; a walk
    -- that comes back short is followed by the exact scan.
    loop
        v_exact := v_method = 'exact';
        v_hits := memsub._nearest_candidates(p_embedding_type, v_pool, v_exact, not v_exact or v_rows <= 2000,
                                             p_query, p_thread_id, p_tags, p_packet_type, p_since, p_until,
                                             p_min_importance, v_tenant);
        exit when v_method = 'exact' or coalesce(cardinality(v_hits), 0) >= v_pool;
        v_method := 'exact';
    end loop;

    if p_record_access and cardinality(v_hits) > 0 then
        select array_agg(h.embedding_id order by h.distance), array_agg(1.0 - h.distance / 2.0 order by h.distance)
          into v_ids, v_scores from unnest(v_hits) h;
        select array_agg(a.access_id order by a.ord) into v_access
          from (select r.access_id, array_position(v_ids, r.target_id) as ord
                  from memsub._record_accesses('embedding', v_ids, v_scores, p_query_text, 'semantic_search', p_agent_id) r) a;
    end if;

    if p_with_packets and cardinality(v_hits) > 0 then
        -- The candidates' packets in one read, as memsub.get_packets returns them (vectors put back, row-level
        -- security applies); only when asked, so a plain search reads no envelope.
        select jsonb_object_agg(g.packet_id, to_jsonb(g)) into v_packet_rows
          from memsub.get_packets(array(select h.packet_id from unnest(v_hits) h)) g;
    end if;

    return query
        select h.embedding_id, h.packet_id, p_embedding_type, h.chunk_index, h.chunk_text, h.distance,
               h.importance_score, memsub.combined_score(h.distance, h.importance_score, h.last_active),
               v_method, v_access[array_position(v_ids, h.embedding_id)], v_packet_rows -> h.packet_id::text
          from unnest(v_hits) h
         order by case when p_rank_by = 'combined'
                       then -memsub.combined_score(h.distance, h.importance_score, h.last_active)
                       else h.distance end,
                  h.embedding_id
         limit p_k;
end
$$;

ALTER FUNCTION memsub.semantic_search(p_query public.vector, p_k integer, p_embedding_type text, p_thread_id uuid, p_tags text[], p_packet_type text, p_since timestamp with time zone, p_until timestamp with time zone, p_min_importance double precision, p_rank_by text, p_record_access boolean, p_query_text text, p_agent_id text, p_mode text, p_ef_search integer, p_max_scan_tuples integer, p_with_packets boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.semantic_search(p_query public.vector, p_k integer, p_embedding_type text, p_thread_id uuid, p_tags text[], p_packet_type text, p_since timestamp with time zone, p_until timestamp with time zone, p_min_importance double precision, p_rank_by text, p_record_access boolean, p_query_text text, p_agent_id text, p_mode text, p_ef_search integer, p_max_scan_tuples integer, p_with_packets boolean) IS 'The k visible embeddings of one type nearest to the query (cosine distance), with their packet''s importance and combined score (memsub.combined_score). Filters on the packet: thread, tags (all of them), packet_type, time window [since, until), min_importance. rank_by distance (default) or combined (re-ranks the 4k nearest). mode auto (default) chooses per call between the exact scan and the HNSW walk by cost and measured recall (memsub._search_strategy); exact always scans exactly (recall 1); approximate always walks the index. A walk that finds fewer than k rows falls back to the exact scan; method says which one answered. ef_search (default derived from the tenant''s share of the index and k, or the larger one memsub.tune_search found reaching the recall goal) and max_scan_tuples (default 20000) bound the walk; the settings return to their values after the call. record_access logs each result in memory_access_log (access_id) and counts it on its packet. with_packets fills the packet column with each hit''s packet as memsub.get_packets returns it (a packet_store row as JSON, envelope vectors put back); NULL otherwise.';

CREATE FUNCTION memsub.session_append_event(p_session_id text, p_event jsonb, p_state_delta jsonb DEFAULT NULL::jsonb) RETURNS memsub.sessions
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_session memsub.sessions := memsub._session_lookup(p_session_id, true);
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id),
            memsub._check_limits(array[pg_column_size(p_event), pg_column_size(p_state_delta)], 'max_json_bytes',
                                 array['event', 'state_delta']);
    perform memsub.require_active_session(v_session);
    if p_event is null or jsonb_typeof(p_event) <> 'object' then
        raise exception 'event must be a JSON object'
            using errcode = '22023', column = 'event';
    end if;
    if p_state_delta is not null then
        perform memsub.check_state_delta(v_session, p_state_delta, 'state_delta');
    end if;
    -- The event is a row of its own: an append writes it and counts it, and rewrites nothing of the history.
    -- The session's row is locked (_session_lookup above), so the count gives each event its own position.
    update memsub.sessions s
       set event_count = s.event_count + 1,
           state = memsub._apply_state_delta(s.state, coalesce(p_state_delta, '{}')),
           updated_at = now()
     where s.tenant_id = v_session.tenant_id and s.id = v_session.id
    returning s.* into v_session;
    insert into memsub.session_events (tenant_id, session_id, position, org_id, user_id, event)
    values (v_session.tenant_id, v_session.id, v_session.event_count - 1, v_session.org_id, v_session.user_id,
            p_event);
    perform memsub.audit_record('session_event', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('event_index', v_session.event_count - 1,
                                        'state_keys', (select coalesce(jsonb_agg(k order by k), '[]')
                                                         from jsonb_object_keys(coalesce(p_state_delta, '{}')) k)));
    return v_session;
end
$$;

ALTER FUNCTION memsub.session_append_event(p_session_id text, p_event jsonb, p_state_delta jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.session_append_event(p_session_id text, p_event jsonb, p_state_delta jsonb) IS 'Appends an event (JSON object) to an active session and merges its state delta (JSON null removes a key), atomically. Audited as session_event.';

CREATE FUNCTION memsub.session_create(p_session_id text DEFAULT NULL::text, p_project_id text DEFAULT NULL::text, p_app_name text DEFAULT NULL::text, p_state jsonb DEFAULT '{}'::jsonb) RETURNS memsub.sessions
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_session memsub.sessions;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id, 'project_id', p_project_id, 'app_name', p_app_name),
            memsub._check_limit(pg_column_size(p_state), 'max_json_bytes', 'state');
    if memsub.current_user_id() is null then
        raise exception 'memsub.session_create needs a user in the context (memsub.set_context(..., user_id => ...))'
            using errcode = '22023', column = 'user_id';
    end if;
    if p_session_id !~ '^[A-Za-z0-9_.-]+$' or length(p_session_id) > 128 then
        raise exception 'session_id "%" must be 1 to 128 letters, digits, "_", "." or "-"', p_session_id
            using errcode = '22023', column = 'session_id';
    end if;
    if p_project_id !~ '^[A-Za-z0-9_.-]+$' or length(p_project_id) > 128 then
        raise exception 'project_id "%" must be 1 to 128 letters, digits, "_", "." or "-"', p_project_id
            using errcode = '22023', column = 'project_id';
    end if;
    if p_app_name !~ '^[A-Za-z0-9_.-]+$' or length(p_app_name) > 128 then
        raise exception 'app_name "%" must be 1 to 128 letters, digits, "_", "." or "-"', p_app_name
            using errcode = '22023', column = 'app_name';
    end if;
    v_session.id := coalesce(p_session_id, gen_random_uuid()::text);
    v_session.user_id := memsub.current_user_id();
    perform memsub.check_state_delta(v_session, coalesce(p_state, '{}'), 'state');

    insert into memsub.sessions as s (tenant_id, id, org_id, user_id, project_id, app_name, state)
    values (v_tenant, v_session.id, memsub.current_org_id(), memsub.current_user_id(), p_project_id, p_app_name,
            memsub._apply_state_delta('{}', coalesce(p_state, '{}')))
    on conflict (tenant_id, id) do nothing
    returning s.* into v_session;
    if not found then
        raise exception 'session "%" already exists', coalesce(p_session_id, '')
            using errcode = '23505', column = 'session_id';
    end if;
    perform memsub.audit_record('session_create', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('project_id', p_project_id, 'app_name', p_app_name));
    return v_session;
end
$_$;

ALTER FUNCTION memsub.session_create(p_session_id text, p_project_id text, p_app_name text, p_state jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.session_create(p_session_id text, p_project_id text, p_app_name text, p_state jsonb) IS 'Creates an active session for the context user (id generated when NULL), in a project and app, with an initial state (namespaced keys, checked like a state delta). Audited as session_create. 23505 when the id exists.';

CREATE FUNCTION memsub.session_delete(p_session_id text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_session memsub.sessions;
begin
    if not (memsub._caller_is_admin()) then
        raise exception 'memsub.session_delete needs a tenant_admin or platform_admin context'
            using errcode = '42501', column = 'session_id';
    end if;
    v_session := memsub._session_lookup(p_session_id, true);
    perform memsub.audit_record('session_delete', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('deleted_session_id', v_session.id, 'status', v_session.status,
                                        'events', v_session.event_count));
    -- Its events go with it (session_events_session_fkey cascades).
    delete from memsub.sessions s where s.tenant_id = v_session.tenant_id and s.id = v_session.id;
    return found;
end
$$;

ALTER FUNCTION memsub.session_delete(p_session_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.session_delete(p_session_id text) IS 'Deletes a session (tenant_admin or platform_admin only) and its events. Its tasks, agents, checkpoints, memory entries and audit rows stay, with session_id set to NULL (seed 001 section 3.2). Audited as session_delete.';

CREATE FUNCTION memsub.session_end_turn(p_session_id text) RETURNS memsub.sessions
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_session memsub.sessions := memsub._session_lookup(p_session_id, true);
    v_dropped text[];
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id);
    perform memsub.require_active_session(v_session);
    select coalesce(array_agg(k order by k), '{}') into v_dropped
      from jsonb_object_keys(v_session.state) k where k like 'temp:%';
    update memsub.sessions s
       set state = s.state - v_dropped, updated_at = now()
     where s.tenant_id = v_session.tenant_id and s.id = v_session.id
    returning s.* into v_session;
    perform memsub.audit_record('session_end_turn', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('dropped_keys', to_jsonb(v_dropped)));
    return v_session;
end
$$;

ALTER FUNCTION memsub.session_end_turn(p_session_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.session_end_turn(p_session_id text) IS 'Ends the current turn of an active session: drops its temp: keys from the state. Audited as session_end_turn.';

CREATE TABLE memsub.session_events (
    tenant_id uuid NOT NULL,
    session_id text NOT NULL,
    "position" integer NOT NULL,
    org_id uuid,
    user_id uuid,
    event jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT session_events_event_is_object CHECK ((jsonb_typeof(event) = 'object'::text)),
    CONSTRAINT session_events_position_not_negative CHECK (("position" >= 0))
);

ALTER TABLE ONLY memsub.session_events FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.session_events OWNER TO memsub_owner;

COMMENT ON TABLE memsub.session_events IS 'Events of memsub.sessions (seed 001''s sessions.events), one row each, in the order they were appended. Written only through memsub.session_append_event; deleted with their session.';

COMMENT ON COLUMN memsub.session_events.tenant_id IS 'Tenant owning the session (row-level security).';

COMMENT ON COLUMN memsub.session_events.session_id IS 'The session the event belongs to.';

COMMENT ON COLUMN memsub.session_events."position" IS 'Place of the event in its session''s history: 0 for the first, then one more for each event appended.';

COMMENT ON COLUMN memsub.session_events.org_id IS 'Organization of the session (NULL: tenant-wide).';

COMMENT ON COLUMN memsub.session_events.user_id IS 'User of the session; the event is visible where its session is.';

COMMENT ON COLUMN memsub.session_events.event IS 'The event as appended: a JSON object.';

COMMENT ON COLUMN memsub.session_events.created_at IS 'When the event was appended.';

CREATE FUNCTION memsub.session_get_events(p_session_id text, p_after_position integer DEFAULT NULL::integer, p_limit integer DEFAULT 1000) RETURNS SETOF memsub.session_events
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_session memsub.sessions;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read.
    perform memsub._check_text_limits('session_id', p_session_id);
    if p_after_position is not null and p_after_position < -1 then
        raise exception 'after_position must be -1 or more (the position of the last event read), not %',
            p_after_position using errcode = '22023', column = 'after_position';
    end if;
    perform memsub._check_count(p_limit, 'max_rows', 'limit');
    v_session := memsub._session_lookup(p_session_id);
    return query
        select e.* from memsub.session_events e
         where e.tenant_id = v_session.tenant_id and e.session_id = v_session.id
           and e.position > coalesce(p_after_position, -1)
         order by e.position
         limit p_limit;
end
$$;

ALTER FUNCTION memsub.session_get_events(p_session_id text, p_after_position integer, p_limit integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.session_get_events(p_session_id text, p_after_position integer, p_limit integer) IS 'A session''s events in the order they were appended: at most limit of them (at most the max_rows limit), after the position of the last one already read (NULL or -1: from the first). P0002 naming session_id when the session does not exist or the context cannot see it.';

CREATE FUNCTION memsub.session_merge_state(p_session_id text, p_state_delta jsonb) RETURNS memsub.sessions
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_session memsub.sessions := memsub._session_lookup(p_session_id, true);
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id),
            memsub._check_limit(pg_column_size(p_state_delta), 'max_json_bytes', 'state_delta');
    perform memsub.require_active_session(v_session);
    perform memsub.check_state_delta(v_session, p_state_delta, 'state_delta');
    update memsub.sessions s
       set state = memsub._apply_state_delta(s.state, p_state_delta), updated_at = now()
     where s.tenant_id = v_session.tenant_id and s.id = v_session.id
    returning s.* into v_session;
    perform memsub.audit_record('session_state', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('state_keys', (select jsonb_agg(k order by k)
                                                         from jsonb_object_keys(p_state_delta) k)));
    return v_session;
end
$$;

ALTER FUNCTION memsub.session_merge_state(p_session_id text, p_state_delta jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.session_merge_state(p_session_id text, p_state_delta jsonb) IS 'Merges a state delta into an active session''s state (JSON null removes a key). Audited as session_state.';

CREATE FUNCTION memsub.session_terminate(p_session_id text, p_memory_type text DEFAULT 'semantic'::text, p_cancel_open_tasks boolean DEFAULT false) RETURNS TABLE(session_id text, status text, terminated_at timestamp with time zone, migrated_keys integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
declare
    v_session  memsub.sessions := memsub._session_lookup(p_session_id, true);
    v_key      text;
    v_value    jsonb;
    v_migrated text[] := '{}';
    v_open     bigint[];
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id, 'memory_type', p_memory_type);
    perform memsub.require_active_session(v_session);
    -- Seed 001 4.1: a session terminates when it has no more tasks. Open tasks of the session (not yet final:
    -- pending or running) block it unless the caller cancels them here.
    select coalesce(array_agg(t.id order by t.id), '{}') into v_open
      from memsub.tasks t
     where t.tenant_id = v_session.tenant_id and t.session_id = v_session.id
       and t.status <> all(memsub.task_final_statuses());
    if cardinality(v_open) > 0 and not coalesce(p_cancel_open_tasks, false) then
        raise exception 'session "%" has % open task(s) (%): finish or cancel them first', v_session.id,
            cardinality(v_open), array_to_string(v_open, ', ')
            using errcode = '55000', column = 'session_id',
                  hint = 'Pass p_cancel_open_tasks => true to cancel them as the session terminates.';
    end if;
    if cardinality(v_open) > 0 then
        update memsub.tasks t set status = 'cancelled', completed_at = now()
         where t.tenant_id = v_session.tenant_id and t.id = any(v_open);
        perform memsub.audit_record('task_status', p_session_id => v_session.id, p_task_id => o.id,
                                    p_details => jsonb_build_object('to', 'cancelled', 'by', 'session_terminate'),
                                    p_tenant_id => v_session.tenant_id)
           from unnest(v_open) as o(id);
    end if;
    -- Persist the user: keys (last write wins against what memory_entries holds: the session's value is newer).
    for v_key, v_value in
        select e.k, e.v from jsonb_each(v_session.state) as e(k, v) where e.k like 'user:%' order by e.k
    loop
        perform memsub.store_memory_version(
            regexp_replace(v_key, ':[^:]*$', ''), substring(v_key from '[^:]*$'), v_value, p_memory_type,
            jsonb_build_object('source', 'session_terminate', 'session_id', v_session.id),
            null, false, false, 'memory_write',
            jsonb_build_object('source', 'session_terminate'), v_session.id);
        v_migrated := v_migrated || v_key;
    end loop;
    update memsub.sessions s
       set state = '{}', status = 'terminated', terminated_at = now(), updated_at = now()
     where s.tenant_id = v_session.tenant_id and s.id = v_session.id
    returning s.* into v_session;
    perform memsub.audit_record('session_terminate', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('migrated_keys', to_jsonb(v_migrated),
                                        'memory_type', p_memory_type));
    return query select v_session.id, v_session.status, v_session.terminated_at, cardinality(v_migrated);
end
$_$;

ALTER FUNCTION memsub.session_terminate(p_session_id text, p_memory_type text, p_cancel_open_tasks boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.session_terminate(p_session_id text, p_memory_type text, p_cancel_open_tasks boolean) IS 'Terminates an active session atomically. Refused (55000, column session_id) while the session has pending or running tasks, unless cancel_open_tasks, which cancels them (audited as task_status). Writes each user:<user id>:...:<key> state key as a new version of (namespace, key) in memory_entries (memory_type as given, default semantic), clears the state, marks the session terminated. Audited: one memory_write row per migrated key and one session_terminate row.';

CREATE FUNCTION memsub.set_actor(p_agent_id uuid, p_task_id bigint DEFAULT NULL::bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub.current_tenant_id();
    v_task   bigint := p_task_id;
begin
    if v_tenant is null then
        raise exception 'memsub.set_actor: no tenant context; call memsub.set_context(tenant_id, ...) first'
            using errcode = '42501', column = 'tenant_id';
    end if;
    if p_agent_id is not null then
        select coalesce(v_task, a.task_id) into v_task
          from memsub.agents a where a.tenant_id = v_tenant and a.id = p_agent_id;
        if not found then
            raise exception 'memsub.set_actor: agent % does not exist or is not visible', p_agent_id
                using errcode = '23503', column = 'agent_id';
        end if;
    end if;
    if p_task_id is not null
       and not exists (select from memsub.tasks t where t.tenant_id = v_tenant and t.id = p_task_id) then
        raise exception 'memsub.set_actor: task % does not exist or is not visible', p_task_id
            using errcode = '23503', column = 'task_id';
    end if;
    perform pg_catalog.set_config('memsub.agent_id', coalesce(p_agent_id::text, ''), true);
    perform pg_catalog.set_config('memsub.task_id', coalesce(v_task::text, ''), true);
end
$$;

ALTER FUNCTION memsub.set_actor(p_agent_id uuid, p_task_id bigint) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.set_actor(p_agent_id uuid, p_task_id bigint) IS 'Names the agent (and task; default: the agent''s task) acting in the current transaction; audit rows record them. Raises 23503 naming agent_id or task_id when either is unknown or not visible.';

CREATE FUNCTION memsub.set_context(p_tenant_id uuid, p_org_id uuid DEFAULT NULL::uuid, p_user_id uuid DEFAULT NULL::uuid, p_roles text[] DEFAULT '{}'::text[], p_session_id text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_login   name := session_user;
    requested text;
    seal_key  record;  -- the seal key's pads, and whether a binding of the login allows the context
    previous  text := nullif(pg_catalog.current_setting('memsub.tenant_id', true), '');
    -- The message the seal covers starts with these (memsub.store_context says what it covers).
    prefix constant text := pg_catalog.concat_ws('|', session_user, extract(epoch from pg_catalog.transaction_timestamp()));
begin
    if p_tenant_id is null and not ('platform_admin' = any(coalesce(p_roles, '{}'))) then
        raise exception 'memsub.set_context: tenant_id must not be null'
            using errcode = '22004', column = 'tenant_id',
                  hint = 'Only a platform_admin context may omit the tenant.';
    end if;
    foreach requested in array coalesce(p_roles, '{}') loop
        perform memsub._check_context_role(requested, 'memsub.set_context');
        if not pg_catalog.pg_has_role(v_login, 'memsub_' || requested, 'MEMBER') then
            raise exception 'memsub.set_context: role % requires membership in memsub_%', requested, requested
                using errcode = '42501', column = 'roles';
        end if;
    end loop;
    -- One query reads the seal key and whether a binding of the login allows the context: what an application
    -- login has, settled by one index search.
    select k.inner_pad, k.outer_pad,
           p_tenant_id is null
           or exists (select from memsub.login_bindings b
                       where b.login = v_login
                         and (b.bound_tenant_id is null
                              or (b.bound_tenant_id = p_tenant_id
                                  and (b.bound_org_id is null or b.bound_org_id = p_org_id)))) as login_bound
      into seal_key from memsub.context_keys k where k.key_id = 'seal';
    -- Asked only when no binding allows the context: the refusals, and the logins that need no binding.
    if not seal_key.login_bound then
        perform memsub._check_login_without_binding(v_login, p_tenant_id, p_org_id);
    end if;
    -- A transaction that already acts for another tenant: memsub.store_context refuses or, for a platform admin
    -- or over settings written by hand, writes.
    if previous is not null and previous is distinct from p_tenant_id::text then
        perform memsub.store_context(p_tenant_id, p_org_id, p_user_id, p_roles, p_session_id);
        return;
    end if;
    -- Otherwise memsub.store_context's statement, here, with the MAC inline and the key read above: every
    -- transaction of every call starts with set_context, and calling store_context (a frame, its own search_path
    -- setting, another read of the key) made a transaction holding set_context alone cost 12-21 % more server
    -- time. The same settings and the same seal (store_context says what the seal covers).
    perform pg_catalog.set_config('memsub.tenant_id', coalesce(p_tenant_id::text, ''), true),
            pg_catalog.set_config('memsub.org_id', coalesce(p_org_id::text, ''), true),
            pg_catalog.set_config('memsub.user_id', coalesce(p_user_id::text, ''), true),
            pg_catalog.set_config('memsub.roles', coalesce(array_to_string(p_roles, ','), ''), true),
            pg_catalog.set_config('memsub.session_id', coalesce(p_session_id, ''), true),
            pg_catalog.set_config('memsub.context_seal',
                pg_catalog.encode(pg_catalog.sha256(seal_key.outer_pad || pg_catalog.sha256(seal_key.inner_pad
                    || pg_catalog.convert_to(pg_catalog.concat_ws('|', prefix,
                           pg_catalog.quote_nullable(coalesce(p_tenant_id::text, '')),
                           pg_catalog.quote_nullable(coalesce(p_org_id::text, '')),
                           pg_catalog.quote_nullable(coalesce(p_user_id::text, '')),
                           pg_catalog.quote_nullable(coalesce(p_session_id, ''))), 'UTF8'))), 'hex'),
                true);
end
$$;

ALTER FUNCTION memsub.set_context(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_session_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.set_context(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_session_id text) IS 'Sets the transaction-local request context (tenant, org, user, context roles, session) read by row-level security. Context roles tenant_admin/platform_admin require the login''s membership in memsub_tenant_admin/memsub_platform_admin; the tenant and organization must be ones the login (session_user) is bound to (memsub.bind_login): an unbound login is refused unless installation_settings.unbound_logins = ''allow'', platform admins and superusers need no binding. One transaction acts for one tenant.';

CREATE FUNCTION memsub.set_context_signed(p_token text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    parts text[] := string_to_array(coalesce(p_token, ''), '.');
    claims jsonb;
    v_key_id text;
    expected bytea;
    roles text[];
    requested text;
    tenant uuid;
    org uuid;
    person uuid;
begin
    if array_length(parts, 1) is distinct from 2 then
        raise exception 'memsub.set_context_signed: token must be <claims>.<signature>'
            using errcode = '22023', column = 'token';
    end if;
    begin
        claims := convert_from(memsub.base64url_decode(parts[1], 'token'), 'UTF8')::jsonb;
    exception when data_exception then
        raise exception 'memsub.set_context_signed: token claims are not base64url JSON'
            using errcode = '22023', column = 'token';
    end;
    if jsonb_typeof(claims) is distinct from 'object' or jsonb_typeof(claims -> 'kid') is distinct from 'string'
       or jsonb_typeof(claims -> 'exp') is distinct from 'number' then
        raise exception 'memsub.set_context_signed: token claims need a string kid and a numeric exp'
            using errcode = '22023', column = 'token';
    end if;
    v_key_id := claims ->> 'kid';
    expected := memsub.context_mac(v_key_id, parts[1]);
    if expected is null
       or not exists (select from memsub.context_keys k where k.key_id = v_key_id and k.purpose = 'token') then
        raise exception 'memsub.set_context_signed: unknown signing key "%"', v_key_id
            using errcode = '28000', column = 'kid';
    end if;
    if expected is distinct from memsub.base64url_decode(parts[2], 'token') then
        raise exception 'memsub.set_context_signed: the token signature does not match its claims'
            using errcode = '28000', column = 'signature';
    end if;
    if (claims ->> 'exp')::numeric <= extract(epoch from pg_catalog.statement_timestamp()) then
        raise exception 'memsub.set_context_signed: the token expired at %', to_timestamp((claims ->> 'exp')::double precision)
            using errcode = '28000', column = 'exp';
    end if;
    if claims ? 'login' and claims ->> 'login' is distinct from session_user::text then
        raise exception 'memsub.set_context_signed: the token is for login %, not %', claims ->> 'login', session_user
            using errcode = '28000', column = 'login';
    end if;
    begin
        tenant := (claims ->> 'tenant')::uuid;
        org := (claims ->> 'org')::uuid;
        person := (claims ->> 'user')::uuid;
        roles := coalesce((select array_agg(r) from jsonb_array_elements_text(
                               case when jsonb_typeof(claims -> 'roles') = 'array' then claims -> 'roles' else '[]' end) r),
                          '{}');
    exception when data_exception then
        raise exception 'memsub.set_context_signed: token claims tenant, org and user must be UUIDs'
            using errcode = '22023', column = 'token';
    end;
    if tenant is null and not ('platform_admin' = any(roles)) then
        raise exception 'memsub.set_context_signed: the token names no tenant'
            using errcode = '22004', column = 'tenant_id';
    end if;
    foreach requested in array roles loop
        perform memsub._check_context_role(requested, 'memsub.set_context_signed');
        if not pg_catalog.pg_has_role(session_user, 'memsub_' || requested, 'MEMBER') then
            raise exception 'memsub.set_context_signed: role % requires membership in memsub_%', requested, requested
                using errcode = '42501', column = 'roles';
        end if;
    end loop;
    perform memsub.store_context(tenant, org, person, roles, claims ->> 'session');
end
$$;

ALTER FUNCTION memsub.set_context_signed(p_token text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.set_context_signed(p_token text) IS 'Sets the request context from a token signed by a gateway (python/memsub/context_tokens.py): HMAC-SHA256 under a key registered with memsub.set_context_signing_key. No login binding is needed. Refused: a bad signature (28000, column signature), an unknown key (kid), an expired token (exp), a token for another login (login); malformed tokens 22023 (token).';

CREATE FUNCTION memsub.set_context_signing_key(p_key_id text, p_secret bytea) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $_$
begin
    if p_key_id is null or p_key_id !~ '^[A-Za-z0-9._-]+$' or length(p_key_id) > 64 or p_key_id = 'seal' then
        raise exception 'memsub.set_context_signing_key: key_id must be 1-64 letters, digits, ".", "_" or "-" (not "seal")'
            using errcode = '22023', column = 'key_id';
    end if;
    if p_secret is null or length(p_secret) < 32 then
        raise exception 'memsub.set_context_signing_key: secret must be at least 32 bytes'
            using errcode = '22023', column = 'secret';
    end if;
    insert into memsub.context_keys (key_id, purpose, inner_pad, outer_pad)
    select p_key_id, 'token', p.inner_pad, p.outer_pad from memsub.hmac_pads(p_secret) p
    on conflict (key_id) do update set inner_pad = excluded.inner_pad, outer_pad = excluded.outer_pad,
                                      created_at = now(), created_by = session_user;
end
$_$;

ALTER FUNCTION memsub.set_context_signing_key(p_key_id text, p_secret bytea) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.set_context_signing_key(p_key_id text, p_secret bytea) IS 'Registers (or replaces) a key that context tokens are signed with; the secret cannot be read back. Platform admins only.';

CREATE FUNCTION memsub.set_unbound_logins(p_mode text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    if p_mode is null or p_mode not in ('allow', 'refuse') then
        raise exception 'memsub.set_unbound_logins: mode must be allow or refuse, not %', coalesce(p_mode, 'NULL')
            using errcode = '22023', column = 'mode';
    end if;
    insert into memsub.installation_settings (name, value) values ('unbound_logins', p_mode)
    on conflict (name) do update set value = excluded.value, set_at = now();
end
$$;

ALTER FUNCTION memsub.set_unbound_logins(p_mode text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.set_unbound_logins(p_mode text) IS 'What memsub.set_context does for a login with no binding: refuse (the default) or allow (any tenant, the behaviour before identity binding). Platform admins only.';

CREATE FUNCTION memsub.set_vector_index_build(p_embedding_type text, p_m integer, p_ef_construction integer) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_index     text := 'idx_embeddings_vector_' || p_embedding_type;
    v_partition name;
begin
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(), 'embedding_type');
    -- pgvector's bounds, checked here so a bad value is refused before anything changes, naming the field.
    if p_m is null or p_m < 2 or p_m > 100 then
        raise exception 'field "m" must be from 2 to 100, not %', coalesce(p_m::text, 'NULL')
            using errcode = '22023', column = 'm';
    end if;
    if p_ef_construction is null or p_ef_construction < 4 or p_ef_construction > 1000 then
        raise exception 'field "ef_construction" must be from 4 to 1000, not %', coalesce(p_ef_construction::text, 'NULL')
            using errcode = '22023', column = 'ef_construction';
    end if;
    if p_ef_construction < 2 * p_m then
        raise exception 'field "ef_construction" must be at least 2 * m (%), not %', 2 * p_m, p_ef_construction
            using errcode = '22023', column = 'ef_construction';
    end if;
    -- A partitioned index takes no storage parameters of its own: they are recorded on each partition's index.
    for v_partition in
        select p.relname from pg_catalog.pg_inherits h join pg_catalog.pg_class p on p.oid = h.inhrelid
         where h.inhparent = pg_catalog.to_regclass('memsub.' || v_index)
         order by p.relname
    loop
        execute format('alter index memsub.%I set (m = %s, ef_construction = %s)', v_partition, p_m,
                       p_ef_construction);
    end loop;
    return v_index;
end
$$;

ALTER FUNCTION memsub.set_vector_index_build(p_embedding_type text, p_m integer, p_ef_construction integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.set_vector_index_build(p_embedding_type text, p_m integer, p_ef_construction integer) IS 'Records HNSW build parameters (m 2-100, ef_construction 4-1000 and at least 2 * m) on the index of an embedding type (on each partition''s) and returns the index''s name; the graphs are rebuilt with them by REINDEX INDEX CONCURRENTLY (memsub vector-index rebuild). Until then only new inserts use the new ef_construction. Raises 22023 naming the field. Granted to nobody: the role that applies migrations runs it.';

CREATE FUNCTION memsub.store_context(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_session_id text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    previous text := nullif(pg_catalog.current_setting('memsub.tenant_id', true), '');
    sealed   boolean;
begin
    -- One transaction acts for one tenant: a second context for another tenant is refused (platform admins,
    -- who reach every tenant anyway, excepted). A context written by hand does not count as a previous one:
    -- memsub.current_tenant_id() refuses its seal.
    if previous is not null and previous is distinct from p_tenant_id::text
       and not pg_catalog.pg_has_role(session_user, 'memsub_platform_admin', 'MEMBER') then
        begin
            perform memsub.current_tenant_id();
            sealed := true;
        exception when insufficient_privilege then
            sealed := false;
        end;
        if sealed then
            raise exception 'memsub.set_context: this transaction already acts for tenant %; a transaction acts for one tenant', previous
                using errcode = '42501', column = 'tenant_id',
                      hint = 'Commit or roll back, then set the context of the next tenant in a new transaction.';
        end if;
    end if;
    -- One statement writes every setting (each statement costs more than the settings it writes). The seal
    -- covers the login, the start of the transaction, tenant, org, user and session: it fits one login's context
    -- in one transaction only. Context roles are not sealed: they count only for members of the matching memsub
    -- role, whoever sets them. Each setting is quoted (quote_nullable), so no two contexts give the same message.
    -- memsub.current_tenant_id() (010_identity.sql), which checks the seal once per query, and memsub.set_context,
    -- which writes it at the start of every call, compute the same MAC inline instead of calling context_mac.
    perform pg_catalog.set_config('memsub.tenant_id', coalesce(p_tenant_id::text, ''), true),
            pg_catalog.set_config('memsub.org_id', coalesce(p_org_id::text, ''), true),
            pg_catalog.set_config('memsub.user_id', coalesce(p_user_id::text, ''), true),
            pg_catalog.set_config('memsub.roles', coalesce(array_to_string(p_roles, ','), ''), true),
            pg_catalog.set_config('memsub.session_id', coalesce(p_session_id, ''), true),
            pg_catalog.set_config('memsub.context_seal',
                pg_catalog.encode(memsub.context_mac('seal', pg_catalog.concat_ws('|', session_user,
                    extract(epoch from pg_catalog.transaction_timestamp()),
                    pg_catalog.quote_nullable(coalesce(p_tenant_id::text, '')),
                    pg_catalog.quote_nullable(coalesce(p_org_id::text, '')),
                    pg_catalog.quote_nullable(coalesce(p_user_id::text, '')),
                    pg_catalog.quote_nullable(coalesce(p_session_id, '')))), 'hex'),
                true);
end
$$;

ALTER FUNCTION memsub.store_context(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_session_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.store_context(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_session_id text) IS 'Writes the transaction-local context settings and their seal (HMAC-SHA256 under the seal key of the login, transaction start, tenant, org, user and session); refuses a second tenant in one transaction. Granted to nobody: called by memsub.set_context and memsub.set_context_signed after their checks.';

CREATE TABLE memsub.memory_embeddings (
    embedding_id uuid DEFAULT gen_random_uuid() NOT NULL,
    packet_id uuid NOT NULL,
    embedding_type text NOT NULL,
    vector public.vector(1536) NOT NULL,
    chunk_index integer DEFAULT 0 NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    scope text DEFAULT 'shared'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
)
PARTITION BY HASH (tenant_id);

ALTER TABLE ONLY memsub.memory_embeddings FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings IS 'Multi-space vectors of packets: one per (packet, embedding_type, chunk). Deleted with their packet. Partitioned by tenant_id into 16 hash partitions (memory_embeddings_p00 ... _p15), each with its own HNSW graph per embedding type.';

COMMENT ON COLUMN memsub.memory_embeddings.embedding_id IS 'Unique embedding identifier.';

COMMENT ON COLUMN memsub.memory_embeddings.packet_id IS 'Source packet.';

COMMENT ON COLUMN memsub.memory_embeddings.embedding_type IS 'Vector space: one of memsub.embedding_types().';

COMMENT ON COLUMN memsub.memory_embeddings.vector IS 'Embedding (dimension: installation_settings.vector_dimension, 1536 by default).';

COMMENT ON COLUMN memsub.memory_embeddings.chunk_index IS '0 = the full content, 1+ = chunk number.';

COMMENT ON COLUMN memsub.memory_embeddings.chunk_text IS 'Stored chunk text, for debugging.';

COMMENT ON COLUMN memsub.memory_embeddings.metadata IS 'Additional metadata (model, ...).';

COMMENT ON COLUMN memsub.memory_embeddings.scope IS 'Visibility scope, copied from the packet (shared when there is none).';

COMMENT ON COLUMN memsub.memory_embeddings.created_at IS 'When the embedding was stored.';

COMMENT ON COLUMN memsub.memory_embeddings.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.memory_embeddings.org_id IS 'Organization of the writer (NULL: whole tenant).';

COMMENT ON COLUMN memsub.memory_embeddings.user_id IS 'User of the writer.';

COMMENT ON COLUMN memsub.memory_embeddings.correlation_id IS 'Request correlation identifier (from the packet).';

COMMENT ON COLUMN memsub.memory_embeddings.session_id IS 'Session of the writer.';

COMMENT ON COLUMN memsub.memory_embeddings.trace_id IS 'Distributed tracing identifier (from the packet).';

COMMENT ON COLUMN memsub.memory_embeddings.search_tsv IS 'Full-text vector of chunk_text (english configuration), generated; the keyword leg of memsub.hybrid_search.';

COMMENT ON COLUMN memsub.memory_embeddings.ttl IS 'Expiration time of the packet (UTC), copied from packet_store.ttl; an expired embedding is never read.';

CREATE FUNCTION memsub.store_embedding(p_packet_id uuid, p_embedding_type text, p_vector public.vector, p_chunk_index integer DEFAULT 0, p_chunk_text text DEFAULT NULL::text, p_metadata jsonb DEFAULT '{}'::jsonb) RETURNS memsub.memory_embeddings
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_tenant    uuid := memsub._require_tenant_id();
    v_packet    memsub.packet_store;
    v_embedding memsub.memory_embeddings;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('embedding_type', p_embedding_type, 'chunk_text', p_chunk_text),
            memsub._check_limit(pg_column_size(p_metadata), 'max_json_bytes', 'metadata');
    if p_packet_id is null then
        raise exception 'field "packet_id" is required' using errcode = '23502', column = 'packet_id';
    end if;
    perform memsub._check_one_of(p_embedding_type, memsub.embedding_types(),
                                'embedding_type');
    if p_vector is null then
        raise exception 'field "vector" is required' using errcode = '23502', column = 'vector';
    end if;
    perform memsub._check_vector(p_vector, 'vector');
    if p_chunk_index is null or p_chunk_index < 0 then
        raise exception 'field "chunk_index" must be 0 (full content) or a chunk number >= 1, not %', p_chunk_index
            using errcode = '22023', column = 'chunk_index';
    end if;
    v_packet := memsub.visible_packet(p_packet_id, 'packet_id');
    insert into memsub.memory_embeddings as e (
        packet_id, embedding_type, vector, chunk_index, chunk_text, metadata, scope, ttl,
        tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
    values (
        p_packet_id, p_embedding_type, p_vector, p_chunk_index, p_chunk_text,
        coalesce(memsub._check_json_type(p_metadata, 'object', 'metadata'), '{}'), v_packet.scope, v_packet.ttl,
        v_tenant, v_packet.org_id, v_packet.user_id, v_packet.correlation_id, v_packet.session_id, v_packet.trace_id)
    on conflict (tenant_id, packet_id, embedding_type, chunk_index) do update
       set vector = excluded.vector, chunk_text = excluded.chunk_text, metadata = excluded.metadata,
           created_at = now()
    returning e.* into v_embedding;
    return v_embedding;
end
$$;

ALTER FUNCTION memsub.store_embedding(p_packet_id uuid, p_embedding_type text, p_vector public.vector, p_chunk_index integer, p_chunk_text text, p_metadata jsonb) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.store_embedding(p_packet_id uuid, p_embedding_type text, p_vector public.vector, p_chunk_index integer, p_chunk_text text, p_metadata jsonb) IS 'Stores (or replaces) the embedding of a visible packet in one vector space (one of memsub.embedding_types()) for the full content (chunk_index 0) or a chunk (1+). The row takes the packet''s identity and scope.';

CREATE FUNCTION memsub.store_memory_version(p_namespace text, p_key text, p_value jsonb, p_memory_type text, p_metadata jsonb, p_expected_version integer, p_check_version boolean, p_delete boolean, p_operation text, p_details jsonb, p_session_id text DEFAULT NULL::text, p_embedding public.vector DEFAULT NULL::public.vector) RETURNS memsub.memory_entries
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_kind     text := split_part(p_namespace, ':', 1);
    v_current  integer;
    v_deleted  boolean;
    v_session  text;
    v_row      memsub.memory_entries;
    v_previous memsub.memory_entries;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace', p_namespace, 'key', p_key, 'memory_type', p_memory_type,
                                      'session_id', p_session_id),
            memsub._check_limits(array[pg_column_size(p_value), pg_column_size(p_metadata)], 'max_json_bytes',
                                 array['value', 'metadata']);
    perform memsub.check_memory_address(p_namespace, p_key);
    if p_memory_type is null or p_memory_type <> all (memsub.memory_types()) then
        raise exception 'memory_type must be one of %, not "%"', array_to_string(memsub.memory_types(), ', '),
            coalesce(p_memory_type, 'NULL') using errcode = '22023', column = 'memory_type';
    end if;
    if p_metadata is null or jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'metadata must be a JSON object' using errcode = '22023', column = 'metadata';
    end if;
    if not p_delete and p_value is null then
        raise exception 'value is required (use memsub.memory_delete to delete)' using errcode = '23502', column = 'value';
    end if;
    if p_expected_version is not null and p_expected_version < 0 then
        raise exception 'expected_version must be 0 or more, not %', p_expected_version
            using errcode = '22023', column = 'expected_version';
    end if;
    if not memsub._memory_namespace_writable(p_namespace) then
        if v_kind in ('app', 'project') then
            raise exception 'namespace "%": % memory is written only by an elevated context (tenant_admin or platform_admin); sessions write temp:, session: and user: only',
                p_namespace, v_kind
                using errcode = '42501', column = 'namespace';
        end if;
        raise exception 'namespace "%" belongs to another % than the context''s', p_namespace, v_kind
            using errcode = '42501', column = 'namespace';
    end if;

    select m.version, m.is_deleted into v_current, v_deleted
      from memsub.memory_entries m
     where m.tenant_id = v_tenant and m.namespace = p_namespace and m.key = p_key
     order by m.version desc limit 1;

    if p_delete and (v_current is null or v_deleted) then
        raise exception 'memory key "%" in namespace "%" has no live entry to delete', p_key, p_namespace
            using errcode = 'P0002', column = 'key';
    end if;
    if p_check_version and (
        (p_expected_version is null and v_current is not null and not v_deleted)
        or (p_expected_version is not null and p_expected_version <> coalesce(v_current, 0))) then
        raise exception 'stale write to memory key "%" in namespace "%": expected version %, current version is %',
            p_key, p_namespace, coalesce(p_expected_version::text, 'none (new entry)'), coalesce(v_current, 0)
            using errcode = '40001', column = 'expected_version',
                  detail = format('current_version=%s', coalesce(v_current, 0)),
                  hint = 'Read the entry again and retry the write with the version you read.';
    end if;

    -- Two statements, not one condition: with the session as a parameter of one query, PL/pgSQL planned it
    -- again on every call (a custom plan for a NULL session is always the cheaper).
    v_session := coalesce(p_session_id, memsub.current_session_id());
    if v_session is not null then
        if not exists (select from memsub.sessions s where s.tenant_id = v_tenant and s.id = v_session) then
            v_session := null;
        end if;
    end if;

    insert into memsub.memory_entries as m (tenant_id, org_id, user_id, namespace, key, value, memory_type,
                                             version, is_deleted, metadata, session_id, embedding)
    values (v_tenant, memsub.current_org_id(), memsub.current_user_id(), p_namespace, p_key,
            case when p_delete then null else p_value end, p_memory_type, coalesce(v_current, 0) + 1,
            p_delete, p_metadata, v_session, case when p_delete then null else p_embedding end)
    on conflict on constraint memory_entries_version_key do nothing
    returning m.* into v_row;
    if not found then
        -- A concurrent writer committed this version first (the UNIQUE constraint decided).
        select m.* into v_previous from memsub.memory_entries m
         where m.tenant_id = v_tenant and m.namespace = p_namespace and m.key = p_key
         order by m.version desc limit 1;
        raise exception 'stale write to memory key "%" in namespace "%": version % was written concurrently (current version is %)',
            p_key, p_namespace, coalesce(v_current, 0) + 1, coalesce(v_previous.version, 0)
            using errcode = '40001', column = 'expected_version',
                  detail = format('current_version=%s', coalesce(v_previous.version, 0)),
                  hint = 'Read the entry again and retry the write with the version you read.';
    end if;
    if p_delete then
        update memsub.memory_entries m set is_deleted = true
         where m.tenant_id = v_tenant and m.namespace = p_namespace and m.key = p_key
           and m.version < v_row.version and not m.is_deleted;
    end if;
    perform memsub.audit_record(p_operation, p_session_id => v_session, p_memory_entry_id => v_row.id,
        p_namespace => p_namespace, p_key => p_key, p_version => v_row.version, p_tenant_id => v_tenant,
        p_details => coalesce(p_details, '{}')
                     || jsonb_build_object('expected_version', p_expected_version, 'memory_type', p_memory_type));
    return v_row;
end
$$;

ALTER FUNCTION memsub.store_memory_version(p_namespace text, p_key text, p_value jsonb, p_memory_type text, p_metadata jsonb, p_expected_version integer, p_check_version boolean, p_delete boolean, p_operation text, p_details jsonb, p_session_id text, p_embedding public.vector) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.store_memory_version(p_namespace text, p_key text, p_value jsonb, p_memory_type text, p_metadata jsonb, p_expected_version integer, p_check_version boolean, p_delete boolean, p_operation text, p_details jsonb, p_session_id text, p_embedding public.vector) IS 'Internal: validates and writes one version of (namespace, key) (a tombstone when p_delete), with p_embedding in the same row (checked by the caller), enforcing the namespace write rules and, when p_check_version, the optimistic lock; audits it as p_operation. Without p_check_version the write is last-write-wins (session termination, consolidation). Not granted to clients.';

CREATE FUNCTION memsub.store_packet_envelope(p_envelope jsonb, p_position integer, p_vectors public.vector[] DEFAULT NULL::public.vector[]) RETURNS memsub.packet_write_result
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
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
    f.content_hash := memsub.packet_content_hash(f.packet_type, f.payload, f.thread_id, f.parent_ids, f.scope, v_org,
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
        v_written := v_written || memsub.fan_out_packet(
            f, v_tenant, v_org, v_user, coalesce((f.confidence ->> 'score')::double precision, 0.5),
            coalesce(p_envelope -> 'routing' ->> 'agent', f.metadata ->> 'agent'), p_vectors);
    end if;
    return row(p_position, f.packet_id, f.packet_type, f.ts, f.thread_id, f.parent_ids, f.generation,
               f.root_packet_id, f.content_hash, false, v_written, f.unknown)::memsub.packet_write_result;
end
$$;

ALTER FUNCTION memsub.store_packet_envelope(p_envelope jsonb, p_position integer, p_vectors public.vector[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.store_packet_envelope(p_envelope jsonb, p_position integer, p_vectors public.vector[]) IS 'Internal: validates, normalizes and stores one envelope for write_packet/write_packets (p_vectors: the vectors of its memory.embeddings given apart, see write_packet). Not granted to clients.';

CREATE TABLE memsub.semantic_memory (
    embedding_id uuid DEFAULT gen_random_uuid() NOT NULL,
    agent_id text NOT NULL,
    vector public.vector(1536) NOT NULL,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    importance_score double precision DEFAULT 0.5 NOT NULL,
    access_count integer DEFAULT 0 NOT NULL,
    last_accessed timestamp with time zone,
    embedding_type text DEFAULT 'content'::text NOT NULL,
    scope text DEFAULT 'shared'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    CONSTRAINT semantic_memory_access_count_non_negative CHECK ((access_count >= 0)),
    CONSTRAINT semantic_memory_embedding_type_known CHECK (((embedding_type = ANY (memsub.embedding_types())) AND (embedding_type <> 'reasoning'::text))),
    CONSTRAINT semantic_memory_importance_in_unit_range CHECK (((importance_score >= (0)::double precision) AND (importance_score <= (1)::double precision))),
    CONSTRAINT semantic_memory_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
)
WITH (fillfactor='80');

ALTER TABLE ONLY memsub.semantic_memory FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.semantic_memory OWNER TO memsub_owner;

COMMENT ON TABLE memsub.semantic_memory IS 'Legacy vector store: one embedding per agent memory, with its payload and scope.';

COMMENT ON COLUMN memsub.semantic_memory.embedding_id IS 'Unique embedding identifier.';

COMMENT ON COLUMN memsub.semantic_memory.agent_id IS 'Owning agent.';

COMMENT ON COLUMN memsub.semantic_memory.vector IS 'Embedding (dimension: installation_settings.vector_dimension, 1536 by default).';

COMMENT ON COLUMN memsub.semantic_memory.payload IS 'Source content metadata.';

COMMENT ON COLUMN memsub.semantic_memory.importance_score IS 'Learned importance in [0, 1].';

COMMENT ON COLUMN memsub.semantic_memory.access_count IS 'Retrieval counter.';

COMMENT ON COLUMN memsub.semantic_memory.last_accessed IS 'Last retrieval time.';

COMMENT ON COLUMN memsub.semantic_memory.embedding_type IS 'Vector space: one of memsub.embedding_types() except reasoning.';

COMMENT ON COLUMN memsub.semantic_memory.scope IS 'Memory isolation scope: one of memsub.packet_scopes() (as packet_store.scope).';

COMMENT ON COLUMN memsub.semantic_memory.created_at IS 'When the embedding was stored.';

COMMENT ON COLUMN memsub.semantic_memory.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.semantic_memory.org_id IS 'Organization of the writer (NULL: whole tenant).';

COMMENT ON COLUMN memsub.semantic_memory.user_id IS 'User of the writer; cursor and l-private rows are visible to this user.';

COMMENT ON COLUMN memsub.semantic_memory.correlation_id IS 'Request correlation identifier.';

COMMENT ON COLUMN memsub.semantic_memory.session_id IS 'Session of the writer; cursor rows are visible to this session.';

COMMENT ON COLUMN memsub.semantic_memory.trace_id IS 'Distributed tracing identifier.';

CREATE FUNCTION memsub.store_semantic_memory(p_agent_id text, p_vector public.vector, p_payload jsonb DEFAULT '{}'::jsonb, p_embedding_type text DEFAULT 'content'::text, p_scope text DEFAULT 'shared'::text, p_importance_score double precision DEFAULT 0.5) RETURNS memsub.semantic_memory
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_memory memsub.semantic_memory;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('agent_id', p_agent_id, 'embedding_type', p_embedding_type, 'scope', p_scope),
            memsub._check_limit(pg_column_size(p_payload), 'max_json_bytes', 'payload');
    if p_vector is null then
        raise exception 'field "vector" is required' using errcode = '23502', column = 'vector';
    end if;
    perform memsub._check_vector(p_vector, 'vector');
    perform memsub._check_one_of(p_embedding_type, array_remove(memsub.embedding_types(), 'reasoning'), 'embedding_type');
    perform memsub._check_one_of(p_scope, memsub.packet_scopes(), 'scope');
    if p_scope <> 'shared' and memsub.current_user_id() is null then
        raise exception 'scope "%" needs a user in the context (memsub.set_context(..., user_id => ...))', p_scope
            using errcode = '22023', column = 'scope';
    end if;
    insert into memsub.semantic_memory (
        agent_id, vector, payload, importance_score, embedding_type, scope,
        tenant_id, org_id, user_id, session_id)
    values (
        memsub._require_text(p_agent_id, 'agent_id'), p_vector,
        coalesce(memsub._check_json_type(p_payload, 'object', 'payload'), '{}'),
        coalesce(memsub._check_unit(p_importance_score, 'importance_score'), 0.5), p_embedding_type, p_scope,
        v_tenant, memsub.current_org_id(), memsub.current_user_id(), memsub.current_session_id())
    returning * into v_memory;
    return v_memory;
end
$$;

ALTER FUNCTION memsub.store_semantic_memory(p_agent_id text, p_vector public.vector, p_payload jsonb, p_embedding_type text, p_scope text, p_importance_score double precision) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.store_semantic_memory(p_agent_id text, p_vector public.vector, p_payload jsonb, p_embedding_type text, p_scope text, p_importance_score double precision) IS 'Stores an agent memory in the legacy vector store, visible by scope like packets (shared, cursor, l-private).';

CREATE FUNCTION memsub.summaries_due(p_as_of timestamp with time zone DEFAULT now(), p_limit integer DEFAULT 100) RETURNS SETOF memsub.memory_summaries
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    perform memsub._check_count(p_limit, 'max_rows', 'limit');
    perform memsub._check_finite_time(p_as_of, 'as_of');
    -- Only the newest summary of each scope matters: an older one was already regenerated.
    return query
        select m.* from (
            select distinct on (s.scope_type, s.scope_value) s.*
              from memsub.memory_summaries s
             order by s.scope_type, s.scope_value, s.created_at desc, s.summary_id
        ) m
         where m.valid_until is not null and m.valid_until <= coalesce(p_as_of, now())
         order by m.valid_until, m.summary_id
         limit p_limit;
end
$$;

ALTER FUNCTION memsub.summaries_due(p_as_of timestamp with time zone, p_limit integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.summaries_due(p_as_of timestamp with time zone, p_limit integer) IS 'Summaries due for regeneration: the newest visible summary of each scope whose valid_until has passed (as of the given time), oldest first.';

CREATE FUNCTION memsub.supersede_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_from timestamp with time zone DEFAULT NULL::timestamp with time zone, p_confidence double precision DEFAULT 0.5, p_evidence jsonb DEFAULT '[]'::jsonb, p_source_type text DEFAULT 'Entity'::text, p_target_type text DEFAULT 'Entity'::text, p_source_packet uuid DEFAULT NULL::uuid) RETURNS memsub.entity_relationships
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_source   text := memsub._check_graph_node(p_source_type, p_source_entity, 'source_entity');
    v_type     text := memsub.normalize_text(memsub._require_text(p_relationship_type, 'relationship_type'));
    v_target   text := memsub._check_graph_node(p_target_type, p_target_entity, 'target_entity');
    v_from     timestamptz := coalesce(p_valid_from, now());
    v_evidence jsonb := memsub._check_doc_refs(p_evidence, 'evidence');
    v_late     memsub.entity_relationships;
    v_edge     memsub.entity_relationships;
    v_sources  text[];
    v_targets  text[];
    v_packet   memsub.packet_store;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('source_entity', p_source_entity, 'relationship_type', p_relationship_type,
                                      'target_entity', p_target_entity, 'source_type', p_source_type,
                                      'target_type', p_target_type),
            memsub._check_limit(pg_column_size(p_evidence), 'max_json_bytes', 'evidence');
    perform memsub._check_finite_time(p_valid_from, 'valid_from');
    perform memsub._check_unit(p_confidence, 'confidence');
    v_packet := memsub.require_shared_packet(memsub.visible_packet(p_source_packet, 'source_packet'), 'source_packet');
    -- Supersedes of one (source, relationship) run one at a time.
    perform memsub.take_maintenance_lock('supersede_relationship', v_tenant::text || ':'
                                         || memsub.normalize_text(memsub._resolve_entity(v_source)) || ':' || v_type);
    -- The source is matched as its entity (name or alias), the target by its matching form.
    v_sources := memsub._entity_keys(v_source);
    v_targets := memsub._entity_keys(v_target);
    select r.* into v_late from memsub.entity_relationships r
     where r.tenant_id = v_tenant and r.source_key = any(v_sources) and r.relationship_type = v_type
       and not r.target_key = any(v_targets) and upper_inf(r.valid_period) and lower(r.valid_period) >= v_from
     limit 1;
    if found then
        raise exception 'field "valid_from": (%)-[%]->(%) holds only since %, after %; supersede from a later time',
            v_source, v_type, v_late.target_entity, lower(v_late.valid_period), v_from
            using errcode = '22023', column = 'valid_from';
    end if;
    -- The facts this one replaces stop holding where it starts.
    update memsub.entity_relationships r set valid_period = tstzrange(lower(r.valid_period), v_from, '[)')
     where r.tenant_id = v_tenant and r.source_key = any(v_sources) and r.relationship_type = v_type
       and not r.target_key = any(v_targets) and upper_inf(r.valid_period);
    -- The new fact: reinforce it when it already holds, otherwise open its window.
    update memsub.entity_relationships r
       set mention_count = r.mention_count + 1,
           confidence = 1 - (1 - r.confidence) * (1 - coalesce(p_confidence, 0.5)),
           last_seen = greatest(r.last_seen, now()),
           evidence = memsub._merge_doc_refs(r.evidence, v_evidence),
           ttl = memsub._later_expiry(r.ttl, v_packet.ttl)
     where r.relationship_id = (select h.relationship_id from memsub.entity_relationships h
                                 where h.tenant_id = v_tenant and h.source_key = any(v_sources)
                                   and h.relationship_type = v_type and h.target_key = any(v_targets)
                                   and upper_inf(h.valid_period)
                                 order by h.source_key = memsub.normalize_text(v_source) desc, h.relationship_id
                                 limit 1)
       and r.tenant_id = v_tenant
    returning r.* into v_edge;
    if not found then
        v_edge := memsub.temporal_edge_add(v_source, v_type, v_target, v_from, null, p_confidence, v_evidence,
                                           p_source_type, p_target_type, p_source_packet);
    end if;
    return v_edge;
end
$$;

ALTER FUNCTION memsub.supersede_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_from timestamp with time zone, p_confidence double precision, p_evidence jsonb, p_source_type text, p_target_type text, p_source_packet uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.supersede_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_from timestamp with time zone, p_confidence double precision, p_evidence jsonb, p_source_type text, p_target_type text, p_source_packet uuid) IS 'Records that (source)-[type]->(target) holds from valid_from (default now) and replaces the other targets of (source, type): their current windows close at valid_from. An edge that already holds is reinforced (mention_count + 1, confidence combined, evidence merged). Rejects (22023) a valid_from before the start of a fact it would replace.';

CREATE FUNCTION memsub.take_maintenance_lock(p_task text, p_key text DEFAULT ''::text, p_wait boolean DEFAULT true) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_key bigint := pg_catalog.hashtextextended(coalesce(p_key, ''), 0);
begin
    if p_task is null or p_task = '' then
        raise exception 'field "task" is required' using errcode = '23502', column = 'task';
    end if;
    if p_wait then
        perform 1 from memsub.maintenance_lock l where l.task = p_task and l.lock_key = v_key for update;
    else
        perform 1 from memsub.maintenance_lock l where l.task = p_task and l.lock_key = v_key for update skip locked;
    end if;
    if found then
        return true;
    end if;
    -- No row yet (or, without p_wait, a held one): the first caller of a key creates its row; a concurrent first
    -- caller waits on that insert.
    insert into memsub.maintenance_lock (task, lock_key) values (p_task, v_key) on conflict do nothing;
    if p_wait then
        perform 1 from memsub.maintenance_lock l where l.task = p_task and l.lock_key = v_key for update;
        return true;
    end if;
    perform 1 from memsub.maintenance_lock l where l.task = p_task and l.lock_key = v_key for update skip locked;
    return found;
end
$$;

ALTER FUNCTION memsub.take_maintenance_lock(p_task text, p_key text, p_wait boolean) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.take_maintenance_lock(p_task text, p_key text, p_wait boolean) IS 'Locks (task, key) until the calling transaction ends: waits for a holder (p_wait, bounded by the session''s lock_timeout) or returns false at once when another transaction holds it. Only memsub''s owner roles may call it, so no other login can hold these locks.';

CREATE TABLE memsub.world_model_snapshots (
    snapshot_id uuid DEFAULT gen_random_uuid() NOT NULL,
    snapshot jsonb NOT NULL,
    state_version integer NOT NULL,
    entity_count integer NOT NULL,
    relation_count integer NOT NULL,
    description text,
    created_by text,
    created_at timestamp without time zone DEFAULT (now() AT TIME ZONE 'UTC'::text) NOT NULL,
    tenant_id uuid NOT NULL,
    org_id uuid,
    user_id uuid,
    CONSTRAINT world_model_snapshots_snapshot_is_object CHECK ((jsonb_typeof(snapshot) = 'object'::text))
);

ALTER TABLE ONLY memsub.world_model_snapshots FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.world_model_snapshots OWNER TO memsub_owner;

COMMENT ON TABLE memsub.world_model_snapshots IS 'Full world-model states of a tenant at a state version.';

COMMENT ON COLUMN memsub.world_model_snapshots.snapshot_id IS 'Unique snapshot identifier.';

COMMENT ON COLUMN memsub.world_model_snapshots.snapshot IS 'Full state: {"state_version", "entities": {id: {entity_type, attributes, confidence, version}}, "relations": [...]}.';

COMMENT ON COLUMN memsub.world_model_snapshots.state_version IS 'State version captured.';

COMMENT ON COLUMN memsub.world_model_snapshots.entity_count IS 'Number of entities captured.';

COMMENT ON COLUMN memsub.world_model_snapshots.relation_count IS 'Number of knowledge-graph relations captured.';

COMMENT ON COLUMN memsub.world_model_snapshots.description IS 'Why the snapshot was taken.';

COMMENT ON COLUMN memsub.world_model_snapshots.created_by IS 'Who took it (agent or operator).';

COMMENT ON COLUMN memsub.world_model_snapshots.created_at IS 'When it was taken (UTC).';

COMMENT ON COLUMN memsub.world_model_snapshots.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.world_model_snapshots.org_id IS 'Organization of the taker.';

COMMENT ON COLUMN memsub.world_model_snapshots.user_id IS 'User of the taker.';

CREATE FUNCTION memsub.take_world_model_snapshot(p_description text DEFAULT NULL::text, p_created_by text DEFAULT NULL::text) RETURNS memsub.world_model_snapshots
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant    uuid := memsub._require_tenant_id();
    v_version   integer;
    v_entities  jsonb;
    v_relations jsonb;
    v_snapshot  memsub.world_model_snapshots;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('description', p_description, 'created_by', p_created_by);
    -- Share lock on the state row: no update can commit between reading the version and the entities.
    select s.state_version into v_version from memsub.world_model_state s where s.tenant_id = v_tenant for share;
    v_version := coalesce(v_version, 0);
    select coalesce(jsonb_object_agg(w.entity_id, jsonb_build_object(
               'entity_type', w.entity_type, 'attributes', w.attributes, 'confidence', w.confidence,
               'version', w.version)), '{}')
      into v_entities
      from memsub.world_model_entities w where w.tenant_id = v_tenant;
    select coalesce(jsonb_agg(jsonb_build_object(
               'source_entity', r.source_entity, 'relationship_type', r.relationship_type,
               'target_entity', r.target_entity, 'confidence', r.confidence, 'mention_count', r.mention_count)
               order by r.source_entity, r.relationship_type, r.target_entity), '[]')
      into v_relations
      from memsub.entity_relationships r where r.tenant_id = v_tenant and upper_inf(r.valid_period);
    insert into memsub.world_model_snapshots (
        snapshot, state_version, entity_count, relation_count, description, created_by, tenant_id, org_id, user_id)
    values (
        jsonb_build_object('state_version', v_version, 'entities', v_entities, 'relations', v_relations),
        v_version, (select count(*) from jsonb_object_keys(v_entities)), jsonb_array_length(v_relations),
        p_description, coalesce(p_created_by, memsub.current_user_id()::text, session_user),
        v_tenant, memsub.current_org_id(), memsub.current_user_id())
    returning * into v_snapshot;
    return v_snapshot;
end
$$;

ALTER FUNCTION memsub.take_world_model_snapshot(p_description text, p_created_by text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.take_world_model_snapshot(p_description text, p_created_by text) IS 'Captures the tenant''s full world-model state (entities with their versions, and the knowledge-graph relations) at one state version, with entity and relation counts.';

CREATE FUNCTION memsub.task_create(p_type text, p_payload jsonb DEFAULT '{}'::jsonb, p_session_id text DEFAULT NULL::text, p_parent_task_id bigint DEFAULT NULL::bigint) RETURNS memsub.tasks
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_task   memsub.tasks;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('type', p_type, 'session_id', p_session_id),
            memsub._check_limit(pg_column_size(p_payload), 'max_json_bytes', 'payload');
    if p_type is null then
        raise exception 'task type is required' using errcode = '23502', column = 'type';
    end if;
    if p_type !~ '\S' then
        raise exception 'task type must not be blank' using errcode = '22023', column = 'type';
    end if;
    if p_session_id is not null then
        perform memsub.require_active_session(memsub._session_lookup(p_session_id, false, '23503'));
    end if;
    if p_parent_task_id is not null
       and not exists (select from memsub.tasks t where t.tenant_id = v_tenant and t.id = p_parent_task_id) then
        raise exception 'parent task % does not exist or is not visible', p_parent_task_id
            using errcode = '23503', column = 'parent_task_id';
    end if;
    insert into memsub.tasks as t (tenant_id, org_id, user_id, type, payload, session_id, parent_task_id)
    values (v_tenant, memsub.current_org_id(), memsub.current_user_id(), p_type, coalesce(p_payload, '{}'),
            p_session_id, p_parent_task_id)
    returning t.* into v_task;
    perform memsub.audit_record('task_create', p_session_id => p_session_id, p_task_id => v_task.id,
        p_tenant_id => v_task.tenant_id,
        p_details => jsonb_build_object('type', p_type, 'parent_task_id', p_parent_task_id));
    return v_task;
end
$$;

ALTER FUNCTION memsub.task_create(p_type text, p_payload jsonb, p_session_id text, p_parent_task_id bigint) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.task_create(p_type text, p_payload jsonb, p_session_id text, p_parent_task_id bigint) IS 'Creates a pending task, optionally in an active session and under a parent task (23503 naming session_id or parent_task_id when unknown). Audited as task_create.';

CREATE FUNCTION memsub.task_link_session(p_task_id bigint, p_session_id text) RETURNS memsub.tasks
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_task   memsub.tasks;
begin
    if p_session_id is null then
        raise exception 'field "session_id" is required' using errcode = '23502', column = 'session_id';
    end if;
    v_task := memsub._task_lookup(p_task_id, true, 'P0002');
    if v_task.session_id = p_session_id then
        return v_task;  -- already linked there
    end if;
    if v_task.session_id is not null then
        raise exception 'task % already belongs to session "%"; only an orphan task is linked', p_task_id,
            v_task.session_id
            using errcode = '55000', column = 'session_id';
    end if;
    perform memsub.require_active_session(memsub._session_lookup(p_session_id, false, '23503'));
    update memsub.tasks t set session_id = p_session_id
     where t.tenant_id = v_tenant and t.id = p_task_id
    returning t.* into v_task;
    perform memsub.audit_record('task_link', p_session_id => p_session_id, p_task_id => v_task.id,
        p_tenant_id => v_task.tenant_id,
        p_details => jsonb_build_object('type', v_task.type, 'status', v_task.status));
    return v_task;
end
$$;

ALTER FUNCTION memsub.task_link_session(p_task_id bigint, p_session_id text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.task_link_session(p_task_id bigint, p_session_id text) IS 'Links an orphan task (no session, e.g. written before sessions existed; seed 001 7.2) to an active session. Linking it again to the same session changes nothing; a task of another session is not moved (55000), an unknown task is P0002 and an unknown session 23503. Audited as task_link.';

CREATE FUNCTION memsub.task_set_status(p_task_id bigint, p_status text, p_result jsonb DEFAULT NULL::jsonb, p_error text DEFAULT NULL::text) RETURNS memsub.tasks
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_task   memsub.tasks;
    v_before text;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('status', p_status, 'error', p_error),
            memsub._check_limit(pg_column_size(p_result), 'max_json_bytes', 'result');
    if p_status is null or p_status <> all(memsub.task_statuses()) then
        raise exception 'task status must be %, not "%"', memsub._alternatives(memsub.task_statuses()),
            coalesce(p_status, 'NULL')
            using errcode = '22023', column = 'status';
    end if;
    v_task := memsub._task_lookup(p_task_id, true, 'P0002');
    if v_task.status = any(memsub.task_final_statuses()) then
        raise exception 'task % is already %', p_task_id, v_task.status
            using errcode = '55000', column = 'status';
    end if;
    if p_error is not null and p_status <> 'failed' then
        raise exception 'error may only be given with status failed'
            using errcode = '22023', column = 'error';
    end if;
    v_before := v_task.status;
    update memsub.tasks t
       set status = p_status,
           result = coalesce(p_result, t.result),
           error = coalesce(p_error, t.error),
           completed_at = case when p_status = any(memsub.task_final_statuses()) then now() end
     where t.tenant_id = v_tenant and t.id = p_task_id
    returning t.* into v_task;
    perform memsub.audit_record('task_status', p_session_id => v_task.session_id, p_task_id => v_task.id,
        p_tenant_id => v_task.tenant_id,
        p_details => jsonb_build_object('from', v_before, 'to', p_status));
    return v_task;
end
$$;

ALTER FUNCTION memsub.task_set_status(p_task_id bigint, p_status text, p_result jsonb, p_error text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.task_set_status(p_task_id bigint, p_status text, p_result jsonb, p_error text) IS 'Moves a task to a new status (completed, failed and cancelled are final and set completed_at), storing its result or error. 55000 when the task is already final. Audited as task_status.';

CREATE FUNCTION memsub.temporal_edge_add(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_from timestamp with time zone DEFAULT NULL::timestamp with time zone, p_valid_until timestamp with time zone DEFAULT NULL::timestamp with time zone, p_confidence double precision DEFAULT 0.5, p_evidence jsonb DEFAULT '[]'::jsonb, p_source_type text DEFAULT 'Entity'::text, p_target_type text DEFAULT 'Entity'::text, p_source_packet uuid DEFAULT NULL::uuid) RETURNS memsub.entity_relationships
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_source text := memsub._check_graph_node(p_source_type, p_source_entity, 'source_entity');
    v_type   text := memsub.normalize_text(memsub._require_text(p_relationship_type, 'relationship_type'));
    v_target text := memsub._check_graph_node(p_target_type, p_target_entity, 'target_entity');
    v_from   timestamptz := coalesce(p_valid_from, now());
    v_packet memsub.packet_store;
    v_edge   memsub.entity_relationships;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('source_entity', p_source_entity, 'relationship_type', p_relationship_type,
                                      'target_entity', p_target_entity, 'source_type', p_source_type,
                                      'target_type', p_target_type),
            memsub._check_limit(pg_column_size(p_evidence), 'max_json_bytes', 'evidence');
    perform memsub._check_finite_time(p_valid_from, 'valid_from'), memsub._check_finite_time(p_valid_until, 'valid_until');
    if p_valid_until is not null and p_valid_until <= v_from then
        raise exception 'field "valid_until" (%) must be after valid_from (%)', p_valid_until, v_from
            using errcode = '22023', column = 'valid_until';
    end if;
    v_packet := memsub.require_shared_packet(memsub.visible_packet(p_source_packet, 'source_packet'), 'source_packet');
    -- Expired windows of the edge are gone for every reader: they neither overlap nor block the new one.
    perform memsub._drop_expired_edge(v_tenant, memsub.normalize_text(v_source), v_type, memsub.normalize_text(v_target));
    begin
        insert into memsub.entity_relationships (
            source_entity, relationship_type, target_entity, source_type, target_type, confidence, source_packet,
            mention_count, first_seen, last_seen, valid_period, evidence, ttl,
            tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
        values (
            v_source, v_type, v_target, p_source_type, p_target_type,
            coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5), p_source_packet, 1, now(), now(),
            tstzrange(v_from, p_valid_until, '[)'), memsub._check_doc_refs(p_evidence, 'evidence'), v_packet.ttl,
            v_tenant, memsub.current_org_id(), memsub.current_user_id(), v_packet.correlation_id,
            memsub.current_session_id(), v_packet.trace_id)
        returning * into v_edge;
    exception when exclusion_violation or unique_violation then
        raise exception 'edge (%)-[%]->(%): the window % overlaps another validity window of the same edge',
            v_source, v_type, v_target, tstzrange(v_from, p_valid_until, '[)')
            using errcode = '23P01', column = 'valid_period',
                  hint = 'Close or supersede the current window first (memsub.close_relationship, memsub.supersede_relationship).';
    end;
    return v_edge;
end
$$;

ALTER FUNCTION memsub.temporal_edge_add(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_from timestamp with time zone, p_valid_until timestamp with time zone, p_confidence double precision, p_evidence jsonb, p_source_type text, p_target_type text, p_source_packet uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.temporal_edge_add(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_from timestamp with time zone, p_valid_until timestamp with time zone, p_confidence double precision, p_evidence jsonb, p_source_type text, p_target_type text, p_source_packet uuid) IS 'Adds one validity window [valid_from, valid_until) of an edge (valid_from: now; valid_until NULL: open, the current edge) with confidence and evidence DocRefs. A window overlapping another window of the same edge is rejected with SQLSTATE 23P01 (column valid_period).';

CREATE FUNCTION memsub.traverse_graph(p_start_entity text, p_max_depth integer DEFAULT 3, p_relationship_types text[] DEFAULT NULL::text[], p_min_confidence double precision DEFAULT 0.0, p_direction text DEFAULT 'outgoing'::text, p_min_path_confidence double precision DEFAULT 0.0, p_limit integer DEFAULT 1000, p_as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(depth integer, entity text, path text[], relationship_path text[], path_confidence double precision, relationship_id uuid, edge_confidence double precision)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_start    text := memsub._require_text(p_start_entity, 'start_entity');
    v_at       timestamptz := coalesce(p_as_of, now());
    -- Names resolve through Entity nodes only when the tenant has any (otherwise a name is its own entity).
    v_nodes    boolean := exists (select from memsub.world_model_entities w where w.tenant_id = v_tenant);
    v_types    text[];
    v_level    integer := 0;
    v_left     integer;
    v_visited  jsonb;  -- matching form of an entity -> true: a set with logarithmic lookups
    v_frontier jsonb;  -- the rows of the last level: [{entity, keys, path, relationship_path, path_confidence}]
    v_rows     jsonb;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('start_entity', p_start_entity, 'direction', p_direction);
    perform memsub._check_count(p_max_depth, 'max_depth', 'max_depth');
    perform memsub._check_count(p_limit, 'max_rows', 'limit');
    perform memsub._check_limit(cardinality(p_relationship_types), 'max_array_items', 'relationship_types');
    perform memsub._check_filter_values(p_relationship_types, 'relationship_types');
    perform memsub._check_unit(p_min_confidence, 'min_confidence');
    perform memsub._check_unit(p_min_path_confidence, 'min_path_confidence');
    perform memsub._check_one_of(p_direction, memsub.graph_directions(), 'direction');
    v_types := array(select memsub.normalize_text(t) from unnest(p_relationship_types) as t);
    v_left := p_limit;
    v_start := memsub._resolve_entity(v_start);
    v_visited := jsonb_build_object(memsub.normalize_text(v_start), true);
    v_frontier := jsonb_build_array(jsonb_build_object('entity', v_start, 'keys', memsub._entity_keys(v_start),
                                                       'path', array[v_start], 'relationship_path', array[]::text[],
                                                       'path_confidence', 1.0));
    while v_level < p_max_depth and v_left > 0 and jsonb_array_length(v_frontier) > 0 loop
        v_level := v_level + 1;
        -- Each entity not yet reached, once, along its most confident step from the last level. One statement:
        with frontier as (  -- the last level's entities, one row per key
            select f.path, f.relationship_path, f.path_confidence, k.key
              from jsonb_to_recordset(v_frontier)
                   as f(keys text[], path text[], relationship_path text[], path_confidence double precision)
             cross join lateral (select distinct u.key from unnest(f.keys) as u(key)) k),
        edges as materialized (  -- the level's edges read once: every key in one search per direction
            select r.source_key as near_key, r.target_entity as far_name, r.target_key as far_key,
                   r.relationship_type, r.confidence, r.relationship_id
              from memsub.entity_relationships r
             where p_direction in ('outgoing', 'both') and r.tenant_id = v_tenant
               and r.source_key = any(array(select distinct f.key from frontier f)) and r.valid_period @> v_at
               and r.confidence >= coalesce(p_min_confidence, 0)
               and (p_relationship_types is null or r.relationship_type = any(v_types))
            union all
            select r.target_key, r.source_entity, r.source_key, r.relationship_type, r.confidence, r.relationship_id
              from memsub.entity_relationships r
             where p_direction in ('incoming', 'both') and r.tenant_id = v_tenant
               and r.target_key = any(array(select distinct f.key from frontier f)) and r.valid_period @> v_at
               and r.confidence >= coalesce(p_min_confidence, 0)
               and (p_relationship_types is null or r.relationship_type = any(v_types))),
        -- With Entity nodes: the names on them resolved in one call, not one per edge, each to the entity it
        -- stands for, that entity's matching form, and the keys the next level's edges name it by.
        resolved as materialized (
            select n.name, n.entity, memsub.normalize_text(n.entity) as key, n.keys
              from memsub._resolve_entities(array(select e.far_name from edges e)) n
             where v_nodes),
        step as (
            select e.near_key, coalesce(n.entity, e.far_name) as next_entity, coalesce(n.key, e.far_key) as next_key,
                   coalesce(n.keys, array[e.far_key]) as next_keys, e.relationship_type, e.confidence,
                   e.relationship_id
              from edges e left join resolved n on n.name = e.far_name)
        select coalesce(jsonb_agg(to_jsonb(c) order by c.path_confidence desc, c.path), '[]') into v_rows
          from (select d.* from (
                    select distinct on (s.next_key)
                           s.next_entity as entity, s.next_key as key, s.next_keys as keys,
                           f.path || s.next_entity as path,
                           f.relationship_path || s.relationship_type as relationship_path,
                           f.path_confidence * s.confidence as path_confidence,
                           s.relationship_id, s.confidence as edge_confidence
                      from frontier f
                      join step s on s.near_key = f.key
                     where f.path_confidence * s.confidence >= coalesce(p_min_path_confidence, 0)
                       and not v_visited ? s.next_key
                     order by s.next_key, f.path_confidence * s.confidence desc, f.path || s.next_entity
                ) d
                order by d.path_confidence desc, d.path
                limit v_left) c;
        exit when jsonb_array_length(v_rows) = 0;
        return query
            select v_level, r.entity, r.path, r.relationship_path, r.path_confidence, r.relationship_id,
                   r.edge_confidence
              from jsonb_to_recordset(v_rows) as r(entity text, path text[], relationship_path text[],
                                                   path_confidence double precision, relationship_id uuid,
                                                   edge_confidence double precision)
             order by r.path_confidence desc, r.path;
        v_left := v_left - jsonb_array_length(v_rows);
        v_visited := v_visited || (select jsonb_object_agg(e ->> 'key', true) from jsonb_array_elements(v_rows) e);
        v_frontier := v_rows;
    end loop;
end
$$;

ALTER FUNCTION memsub.traverse_graph(p_start_entity text, p_max_depth integer, p_relationship_types text[], p_min_confidence double precision, p_direction text, p_min_path_confidence double precision, p_limit integer, p_as_of timestamp with time zone) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.traverse_graph(p_start_entity text, p_max_depth integer, p_relationship_types text[], p_min_confidence double precision, p_direction text, p_min_path_confidence double precision, p_limit integer, p_as_of timestamp with time zone) IS 'Entities reachable from an entity through the visible knowledge graph as of a time (as_of, default now: only edges valid then; entities by name or alias), breadth first: up to max_depth hops (1 to limit max_depth, default 10) along outgoing, incoming or both directions, optionally only the given relationship types and edges with confidence >= min_confidence. Each entity is reported once, at its shortest distance, with its most confident shortest path (cycle-safe, linear in the edges walked). path_confidence is the product of the edge confidences; paths below min_path_confidence stop. Shortest and most confident first, at most limit rows (limit max_rows).';

CREATE FUNCTION memsub.trust_login(p_login name) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
begin
    perform memsub.require_login(p_login);
    return memsub._add_login_binding(p_login, null, null);
end
$$;

ALTER FUNCTION memsub.trust_login(p_login name) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.trust_login(p_login name) IS 'Lets a login act for any tenant: the single trusted application of a one-service deployment. Platform admins only. True when the binding is new.';

CREATE FUNCTION memsub.tune_search(p_samples integer DEFAULT 20, p_k integer DEFAULT 10) RETURNS TABLE(tenant_id uuid, embedding_type text, row_count bigint, type_rows bigint, method text, ef_search integer, recall double precision, recall_bound double precision)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    SET "hnsw.iterative_scan" TO 'relaxed_order'
    SET "hnsw.ef_search" TO '100'
    SET "hnsw.max_scan_tuples" TO '20000'
    AS $_$
declare
    v_group    record;
    v_plan     record;
    v_sample   record;
    v_query    vector;
    v_distance double precision;
    v_queries  vector[];
    v_truth    uuid[];
    v_truths   uuid[];
    v_found    uuid[];
    v_recalls  double precision[];
    v_done     integer;
    v_ef       integer;
    v_next     integer;
    v_recall   double precision;
    v_bound    double precision;
begin
    if not memsub.is_platform_admin() then
        raise exception 'memsub.tune_search: needs a platform_admin context' using errcode = '42501';
    end if;
    if p_samples is null or p_samples < 1 or p_samples > 1000 then
        raise exception 'field "samples" must be between 1 and 1000, not %', p_samples
            using errcode = '22023', column = 'samples';
    end if;
    perform memsub._check_count(p_k, 'max_k', 'k');
    -- Run time: per tenant and type one count, then, for a tenant the cost model would walk, one exact scan
    -- of the tenant per sample query (the truth, computed once), one walk per sample row for the distance of
    -- its nearest other row, and one walk per sample query and ef_search tried: at most five (40, 100, 250,
    -- 625, 1000), each bounded by hnsw.max_scan_tuples.
    for v_group in
        -- total: the rows of the type in the tenant's partition (the graph its walk reads).
        select e.tenant_id, e.embedding_type, count(*) as n,
               sum(count(*)) over (partition by e.tableoid, e.embedding_type) as total
          from memsub.memory_embeddings e
         where e.vector is not null
         group by e.tableoid, e.tenant_id, e.embedding_type
    loop
        -- Fresh counts first, so that the strategy below sees this tenant's share as it is now.
        insert into memsub.search_stats as st (tenant_id, embedding_type, row_count, type_rows, ef_search, recall,
                                               recall_bound, samples, measured_at)
        values (v_group.tenant_id, v_group.embedding_type, v_group.n, v_group.total::bigint, null, null, null, 0,
                now())
        on conflict on constraint search_stats_pkey do update
           set row_count = excluded.row_count, type_rows = excluded.type_rows, ef_search = null, recall = null,
               recall_bound = null, samples = 0, measured_at = excluded.measured_at;
        select * into v_plan
          from memsub._search_strategy(v_group.tenant_id, v_group.embedding_type, p_k, 'auto', null) s;
        v_recall := null;
        v_bound := null;
        v_done := 0;
        if v_plan.method = 'approximate' then
            -- Sample queries like the tenant's own: a stored row moved, in a random direction, as far as its
            -- nearest other row lies from it (so the query is not a node of the graph, and its nearest rows lie
            -- about as near as a new row's would); each with its exact k nearest (a row of v_truths, padded with
            -- NULL to k). A stored row itself, even left out of its answers, is found through its own links in
            -- the graph and overstates the walk's recall (measured at 306k rows of one tenant: 0.95 for stored
            -- rows at ef_search 100, 0.88 for new queries and for these); midpoints of two random rows lie
            -- between clusters and understate it.
            v_queries := '{}';
            v_truths := '{}';
            perform pg_catalog.set_config('hnsw.ef_search', '100', true);
            for v_sample in
                -- Drawn first, normalized after: the sort carries each row's vector as it is stored.
                select s.embedding_id, l2_normalize(s.vector) as vector
                  from (select e.embedding_id, e.vector
                          from memsub.memory_embeddings e
                         where e.tenant_id = v_group.tenant_id and e.embedding_type = v_group.embedding_type
                         order by pg_catalog.random()
                         limit p_samples) s
            loop
                -- The cosine distance of the row's nearest other row (a scale, not an answer: planned for the
                -- tenant's values, a walk or, for a small tenant, a sort).
                execute 'select min(n.distance) from (select e.vector <=> $1 as distance'
                        '  from memsub.memory_embeddings e where e.embedding_type = $2 and e.tenant_id = $3'
                        '   and e.embedding_id <> $4 order by ' || memsub._vector_graph_order('e.vector', '$1')
                        || ' limit 1) n'
                   into v_distance using v_sample.vector, v_group.embedding_type, v_group.tenant_id,
                                         v_sample.embedding_id;
                v_query := memsub._sample_query(v_sample.vector, least(greatest(coalesce(v_distance, 0), 0), 2));
                execute 'select array_agg(n.embedding_id) from (select e.embedding_id '
                        '  from memsub.memory_embeddings e where e.embedding_type = $3 and e.tenant_id = $4'
                        ' order by (e.vector <=> $1) + 0, e.embedding_id limit $2) n'
                   into v_truth using v_query, p_k, v_group.embedding_type, v_group.tenant_id;
                v_truth := coalesce(v_truth, '{}');
                v_queries := v_queries || v_query;
                v_truths := array_cat(v_truths, array[v_truth || array_fill(null::uuid, array[p_k - cardinality(v_truth)])]);
            end loop;
            v_done := cardinality(v_queries);
            -- The recall@k of the walk from the derived ef_search up, x 2.5 per step (at most 1000), until the
            -- lower confidence bound of its mean over the sample reaches the 0.95 goal or the walk at the next
            -- ef_search would cost more than scanning the tenant exactly.
            v_ef := v_plan.ef_search;
            while v_done > 0 loop
                perform pg_catalog.set_config('hnsw.ef_search', v_ef::text, true);
                v_recalls := '{}';
                for i in 1 .. v_done loop
                    -- The walk as semantic_search runs it: its statement, planned with sorts disabled. A plan for
                    -- the tenant's own values may sort its rows instead (the planner prices a sort of a couple of
                    -- thousand rows below the walk), and a sort's recall is always 1.
                    select array_agg(c.embedding_id) into v_found
                      from unnest(memsub._nearest_candidates(v_group.embedding_type, p_k, false, false, v_queries[i],
                                                             null, null, null, null, null, null,
                                                             v_group.tenant_id)) c;
                    v_recalls := v_recalls
                        || (select count(*) from unnest(v_found) f(id) where f.id = any(v_truths[i:i]))
                           ::double precision / greatest(1, (select count(t.id) from unnest(v_truths[i:i]) t(id)));
                end loop;
                v_recall := (select avg(r) from unnest(v_recalls) r);
                v_bound := memsub._recall_lower_bound(v_recalls);
                exit when v_bound >= 0.95 or v_ef >= 1000;
                -- Steps of x 2.5 are also the margin for the sample's own error: with x 1.6 a tenant of uniform random
                -- vectors stopped at 160, where its sample's bound reached 0.95 and new queries found 0.942.
                v_next := least(1000, ceil(v_ef * 2.5)::integer);
                exit when (select s.method from memsub._search_strategy(v_group.tenant_id, v_group.embedding_type,
                                                                        p_k, 'auto', v_next) s) = 'exact';
                v_ef := v_next;
            end loop;
            if v_done > 0 then
                update memsub.search_stats st
                   set ef_search = v_ef, recall = v_recall, recall_bound = v_bound, samples = v_done
                 where st.tenant_id = v_group.tenant_id and st.embedding_type = v_group.embedding_type;
                -- The choice the searches make from now on.
                select * into v_plan
                  from memsub._search_strategy(v_group.tenant_id, v_group.embedding_type, p_k, 'auto', null) s;
            end if;
        end if;
        tenant_id := v_group.tenant_id;
        embedding_type := v_group.embedding_type;
        row_count := v_group.n;
        type_rows := v_group.total::bigint;
        method := v_plan.method;
        ef_search := case when v_done > 0 then v_ef else v_plan.ef_search end;
        recall := v_recall;
        recall_bound := v_bound;
        return next;
    end loop;
    -- Tenants that no longer hold embeddings of a type.
    delete from memsub.search_stats st
     where not exists (select from memsub.memory_embeddings e
                        where e.tenant_id = st.tenant_id and e.embedding_type = st.embedding_type);
end
$_$;

ALTER FUNCTION memsub.tune_search(p_samples integer, p_k integer) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.tune_search(p_samples integer, p_k integer) IS 'Maintenance (platform_admin context): refreshes memsub.search_stats for every tenant and embedding type: row counts, and for tenants the cost model would search approximately, the recall@k of the HNSW walk (semantic_search''s own statement, memsub._nearest_candidates) against the exact scan on samples queries made from the tenant''s own rows (a row moved in a random direction as far as its nearest other row, memsub._sample_query), from the derived ef_search up (x 2.5 per step, at most 1000) until the one-sided 95 % lower confidence bound of the mean recall reaches 0.95 or the walk would cost more than the exact scan; stores the ef_search reached, the mean recall and its bound. memsub.semantic_search then walks the tenant at that ef_search, or scans it exactly when at no ef_search the bound reached 0.95. Bounded: per tenant and type, one exact scan and at most six walks per sample query. Returns the choice per tenant and type (ef_search, mean recall and its bound as measured).';

CREATE FUNCTION memsub.unbind_login(p_login name, p_tenant_id uuid DEFAULT NULL::uuid, p_org_id uuid DEFAULT NULL::uuid) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    removed integer;
begin
    delete from memsub.login_bindings b
     where b.login = p_login
       and (p_tenant_id is null or b.bound_tenant_id = p_tenant_id)
       and (p_org_id is null or b.bound_org_id = p_org_id);
    get diagnostics removed = row_count;
    return removed;
end
$$;

ALTER FUNCTION memsub.unbind_login(p_login name, p_tenant_id uuid, p_org_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.unbind_login(p_login name, p_tenant_id uuid, p_org_id uuid) IS 'Removes bindings of a login: every one (tenant NULL, trust included), those of a tenant, or one organization''s. Platform admins only. Returns how many were removed.';

CREATE FUNCTION memsub.upsert_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_confidence double precision DEFAULT 0.5, p_source_packet uuid DEFAULT NULL::uuid, p_seen_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS memsub.entity_relationships
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_source     text := memsub._require_text(p_source_entity, 'source_entity');
    v_type       text := memsub.normalize_text(memsub._require_text(p_relationship_type, 'relationship_type'));
    v_target     text := memsub._require_text(p_target_entity, 'target_entity');
    v_source_key text := memsub.normalize_text(v_source);
    v_target_key text := memsub.normalize_text(v_target);
    v_confidence double precision := coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5);
    v_packet     memsub.packet_store;
    v_seen       timestamptz;
    v_edge       memsub.entity_relationships;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('source_entity', p_source_entity, 'relationship_type', p_relationship_type,
                                      'target_entity', p_target_entity);
    perform memsub._check_finite_time(p_seen_at, 'seen_at');
    v_packet := memsub.require_shared_packet(memsub.visible_packet(p_source_packet, 'source_packet'), 'source_packet');
    v_seen := coalesce(p_seen_at, v_packet."timestamp", now());
    -- An expired window is gone for every reader: observing the edge again starts it afresh.
    perform memsub._drop_expired_edge(v_tenant, v_source_key, v_type, v_target_key);
    -- One statement: concurrent callers on one edge queue on its unique index entry and each adds exactly one.
    -- The index covers the current (open) window; a new window starts at the observation, or where the edge's
    -- last closed window ended if that is later, so windows never overlap.
    insert into memsub.entity_relationships as r (
        source_entity, relationship_type, target_entity, confidence, source_packet, mention_count,
        first_seen, last_seen, valid_period, ttl, tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
    values (
        v_source, v_type, v_target, v_confidence, p_source_packet, 1, v_seen, v_seen,
        tstzrange(greatest(v_seen, (select max(upper(h.valid_period)) from memsub.entity_relationships h
                                     where h.tenant_id = v_tenant and h.source_key = v_source_key
                                       and h.relationship_type = v_type and h.target_key = v_target_key)),
                  null, '[)'),
        v_packet.ttl, v_tenant, memsub.current_org_id(), memsub.current_user_id(), v_packet.correlation_id,
        memsub.current_session_id(), v_packet.trace_id)
    on conflict (tenant_id, source_key, relationship_type, target_key) where upper_inf(valid_period) do update
       set mention_count = r.mention_count + 1,
           confidence = 1 - (1 - r.confidence) * (1 - excluded.confidence),
           first_seen = least(r.first_seen, excluded.first_seen),
           last_seen = greatest(r.last_seen, excluded.last_seen),
           source_packet = coalesce(r.source_packet, excluded.source_packet),
           -- the window lives as long as its latest observation's packet (never without an expiring packet)
           ttl = memsub._later_expiry(r.ttl, excluded.ttl)
    returning r.* into v_edge;
    return v_edge;
end
$$;

ALTER FUNCTION memsub.upsert_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_confidence double precision, p_source_packet uuid, p_seen_at timestamp with time zone) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.upsert_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_confidence double precision, p_source_packet uuid, p_seen_at timestamp with time zone) IS 'Records one observation of an edge (source)-[type]->(target) in its current (open) validity window. New edge: mention_count 1, valid from the observation. Known edge: mention_count + 1, last_seen = latest observation, confidence = 1 - (1 - old) * (1 - new) (independent evidence: never decreases, approaches 1). Entity names are trimmed and match by memsub.normalize_text (the first spelling is kept); the type is lower case. The window expires with the packets that observed it (the latest of their ttl; never once observed without an expiring packet); an expired edge observed again starts afresh. Race-free (a single INSERT ... ON CONFLICT DO UPDATE).';

CREATE FUNCTION memsub.vector_dimension() RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$ select s.value::integer from memsub.installation_settings s where s.name = 'vector_dimension' $$;

ALTER FUNCTION memsub.vector_dimension() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.vector_dimension() IS 'Dimension of every vector column of this installation (recorded when migrating; 1536 unless memsub.vector_dimension was set).';

CREATE FUNCTION memsub.vector_index_builds() RETURNS TABLE(embedding_type text, index_name text, m integer, ef_construction integer, index_bytes bigint, valid boolean)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    -- The parameters as recorded on the partitions' indexes (set_vector_index_build sets them on every one in
    -- one transaction; the partitioned index itself holds only those it was created with).
    select t.embedding_type, c.relname::text,
           coalesce(max((select o.option_value::integer from pg_catalog.pg_options_to_table(p.reloptions) o
                          where o.option_name = 'm')), 16),
           coalesce(max((select o.option_value::integer from pg_catalog.pg_options_to_table(p.reloptions) o
                          where o.option_name = 'ef_construction')), 64),
           coalesce(sum(pg_catalog.pg_relation_size(p.oid)), 0)::bigint,
           bool_and(i.indisvalid and i.indisready)
      from unnest(memsub.embedding_types()) with ordinality as t(embedding_type, n)
      join pg_catalog.pg_class c on c.oid = pg_catalog.to_regclass('memsub.idx_embeddings_vector_' || t.embedding_type)
      join pg_catalog.pg_inherits h on h.inhparent = c.oid
      join pg_catalog.pg_class p on p.oid = h.inhrelid
      join pg_catalog.pg_index i on i.indexrelid = p.oid
     group by t.n, t.embedding_type, c.relname
     order by t.n
$$;

ALTER FUNCTION memsub.vector_index_builds() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.vector_index_builds() IS 'For each embedding type, its HNSW index on memory_embeddings (a partitioned index, one graph per partition): name, build parameters m and ef_construction (pgvector''s defaults 16 and 64 unless set by memsub.set_vector_index_build), size in bytes of every partition''s graph, and whether PostgreSQL may use them all (indisvalid and indisready). A concurrent rebuild keeps each old graph in use until it swaps in the new one; one that fails leaves an invalid copy named <index>_p<nn>_ccnew, not listed here.';

CREATE FUNCTION memsub.visible_packet(p_packet_id uuid, p_field text) RETURNS memsub.packet_store
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
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

ALTER FUNCTION memsub.visible_packet(p_packet_id uuid, p_field text) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.visible_packet(p_packet_id uuid, p_field text) IS 'The packet with this id when the caller may see it (NULL for a NULL id); raises 23503 naming the field otherwise.';

CREATE FUNCTION memsub.world_model_state_at(p_snapshot_id uuid) RETURNS TABLE(entity_id text, entity_type text, attributes jsonb, confidence double precision, version integer)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
declare
    v_snapshot jsonb;
begin
    select s.snapshot into v_snapshot from memsub.world_model_snapshots s where s.snapshot_id = p_snapshot_id;
    if v_snapshot is null then
        raise exception 'field "snapshot_id": snapshot % does not exist or is not visible', p_snapshot_id
            using errcode = '23503', column = 'snapshot_id';
    end if;
    return query
        select e.key, e.value ->> 'entity_type', e.value -> 'attributes',
               (e.value ->> 'confidence')::double precision, (e.value ->> 'version')::integer
          from jsonb_each(v_snapshot -> 'entities') as e
         order by e.key;
end
$$;

ALTER FUNCTION memsub.world_model_state_at(p_snapshot_id uuid) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.world_model_state_at(p_snapshot_id uuid) IS 'The world-model entities as they were when the snapshot was taken (same columns as world_model_entities).';

CREATE FUNCTION memsub.world_model_state_version() RETURNS integer
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'memsub', 'pg_temp'
    AS $$
    select coalesce((select s.state_version from memsub.world_model_state s
                      where s.tenant_id = memsub.current_tenant_id()), 0)
$$;

ALTER FUNCTION memsub.world_model_state_version() OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.world_model_state_version() IS 'Current world-model state version of the context tenant (0 before any update).';

CREATE FUNCTION memsub.write_packet(p_envelope jsonb, p_vectors public.vector[] DEFAULT NULL::public.vector[]) RETURNS memsub.packet_write_result
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$ select memsub.store_packet_envelope(p_envelope, 1, p_vectors) $$;

ALTER FUNCTION memsub.write_packet(p_envelope jsonb, p_vectors public.vector[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.write_packet(p_envelope jsonb, p_vectors public.vector[]) IS 'Writes one PacketEnvelope into packet_store under the current tenant context and returns its PacketWriteResult. Fills packet_id and timestamp, computes lineage generation and root, checks lineage integrity and thread consistency, and deduplicates (a named packet_id identifies the packet; without one, the same content at the same time is the same packet), returning the existing packet flagged deduplicated. Fans the envelope''s memory field (facts, relationships, embeddings, reasoning_trace) out into the layer tables; the payload is free. Fields of a newer contract version are kept and listed in unknown_fields. All or nothing. p_vectors (optional): the vectors of memory.embeddings as vector values, one per element in their order, the envelope holding JSON null or nothing in their place; the same packet is stored and read back as with the vectors in the envelope, without parsing them as JSON numbers (22023 naming vectors or the element for a count that does not match, a vector given twice, a null one).';

CREATE FUNCTION memsub.write_packets(p_envelopes jsonb, p_vectors public.vector[] DEFAULT NULL::public.vector[]) RETURNS SETOF memsub.packet_write_result
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'memsub', 'public', 'pg_temp'
    AS $$
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
                results[top] := memsub.store_packet_envelope(
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

ALTER FUNCTION memsub.write_packets(p_envelopes jsonb, p_vectors public.vector[]) OWNER TO memsub_owner;

COMMENT ON FUNCTION memsub.write_packets(p_envelopes jsonb, p_vectors public.vector[]) IS 'Writes a JSON array of PacketEnvelopes in one transaction (all or nothing) and returns one PacketWriteResult per envelope, in input order. Parents inside the batch are written before their children; a cycle is rejected (SQLSTATE 23514). Errors name the failing envelope''s 1-based position. p_vectors (optional): the vectors of every envelope''s memory.embeddings as vector values, envelope by envelope, each envelope''s in the order of its elements, as write_packet takes one envelope''s (22023 naming vectors for a count that does not match; in an envelope''s errors, vectors[i] counts within that envelope).';

CREATE TABLE memsub.adk_app_states (
    tenant_id uuid NOT NULL,
    org_id uuid,
    org_key uuid GENERATED ALWAYS AS (COALESCE(org_id, '00000000-0000-0000-0000-000000000000'::uuid)) STORED NOT NULL,
    app_name text NOT NULL COLLATE pg_catalog."C",
    state jsonb DEFAULT '{}'::jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT adk_app_states_state_object CHECK ((jsonb_typeof(state) = 'object'::text))
);

ALTER TABLE ONLY memsub.adk_app_states FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.adk_app_states OWNER TO memsub_owner;

COMMENT ON TABLE memsub.adk_app_states IS 'ADK app state (keys written as app:<key>), one JSON object per app, shared by every user and session of the app.';

COMMENT ON COLUMN memsub.adk_app_states.tenant_id IS 'Tenant that owns the state (row-level security).';

COMMENT ON COLUMN memsub.adk_app_states.org_id IS 'Organization of the writer''s context; NULL: tenant-wide.';

COMMENT ON COLUMN memsub.adk_app_states.org_key IS 'org_id, or the nil uuid when NULL: the organization part of the key.';

COMMENT ON COLUMN memsub.adk_app_states.app_name IS 'ADK app name.';

COMMENT ON COLUMN memsub.adk_app_states.state IS 'The app state, keys without their app: prefix.';

COMMENT ON COLUMN memsub.adk_app_states.updated_at IS 'When the state last changed.';

CREATE TABLE memsub.adk_events (
    tenant_id uuid NOT NULL,
    org_id uuid,
    org_key uuid GENERATED ALWAYS AS (COALESCE(org_id, '00000000-0000-0000-0000-000000000000'::uuid)) STORED NOT NULL,
    app_name text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL COLLATE pg_catalog."C",
    session_id text NOT NULL COLLATE pg_catalog."C",
    "position" bigint NOT NULL,
    id text NOT NULL,
    author text,
    invocation_id text,
    "timestamp" double precision NOT NULL,
    event jsonb NOT NULL,
    CONSTRAINT adk_events_event_object CHECK ((jsonb_typeof(event) = 'object'::text)),
    CONSTRAINT adk_events_position CHECK (("position" >= 0))
);

ALTER TABLE ONLY memsub.adk_events FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.adk_events OWNER TO memsub_owner;

COMMENT ON TABLE memsub.adk_events IS 'Events of ADK sessions, in the order they were appended.';

COMMENT ON COLUMN memsub.adk_events.tenant_id IS 'Tenant that owns the event (row-level security).';

COMMENT ON COLUMN memsub.adk_events.org_id IS 'Organization of the writer''s context; NULL: tenant-wide.';

COMMENT ON COLUMN memsub.adk_events.org_key IS 'org_id, or the nil uuid when NULL: the organization part of the key.';

COMMENT ON COLUMN memsub.adk_events.app_name IS 'App of the session.';

COMMENT ON COLUMN memsub.adk_events.user_id IS 'ADK user of the session.';

COMMENT ON COLUMN memsub.adk_events.session_id IS 'Session the event belongs to.';

COMMENT ON COLUMN memsub.adk_events."position" IS 'Order of the event in its session (0 first).';

COMMENT ON COLUMN memsub.adk_events.id IS 'ADK event id.';

COMMENT ON COLUMN memsub.adk_events.author IS 'Author of the event (user or an agent name).';

COMMENT ON COLUMN memsub.adk_events.invocation_id IS 'ADK invocation the event belongs to.';

COMMENT ON COLUMN memsub.adk_events."timestamp" IS 'ADK event time, seconds since the epoch (filtered by GetSessionConfig.after_timestamp).';

COMMENT ON COLUMN memsub.adk_events.event IS 'The whole ADK event as JSON (pydantic JSON mode: bytes are base64).';

CREATE TABLE memsub.adk_memories (
    tenant_id uuid NOT NULL,
    org_id uuid,
    org_key uuid GENERATED ALWAYS AS (COALESCE(org_id, '00000000-0000-0000-0000-000000000000'::uuid)) STORED NOT NULL,
    app_name text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL COLLATE pg_catalog."C",
    session_id text NOT NULL COLLATE pg_catalog."C",
    event_id text NOT NULL COLLATE pg_catalog."C",
    author text,
    "timestamp" double precision,
    content jsonb NOT NULL,
    text text NOT NULL,
    words text[] NOT NULL,
    embedding public.vector,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT adk_memories_content_object CHECK ((jsonb_typeof(content) = 'object'::text))
);

ALTER TABLE ONLY memsub.adk_memories FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.adk_memories OWNER TO memsub_owner;

COMMENT ON TABLE memsub.adk_memories IS 'ADK memory (memsub.integrations.adk.MemsubMemoryService): the text events of sessions added to memory, searchable by keyword and, when embedded, by similarity. Kept when the session itself is deleted.';

COMMENT ON COLUMN memsub.adk_memories.tenant_id IS 'Tenant that owns the memory (row-level security).';

COMMENT ON COLUMN memsub.adk_memories.org_id IS 'Organization of the writer''s context; NULL: tenant-wide.';

COMMENT ON COLUMN memsub.adk_memories.org_key IS 'org_id, or the nil uuid when NULL: the organization part of the key.';

COMMENT ON COLUMN memsub.adk_memories.app_name IS 'App of the session the memory came from.';

COMMENT ON COLUMN memsub.adk_memories.user_id IS 'ADK user the memory belongs to (searches are per app and user).';

COMMENT ON COLUMN memsub.adk_memories.session_id IS 'Session the memory came from.';

COMMENT ON COLUMN memsub.adk_memories.event_id IS 'ADK id of the event the memory came from.';

COMMENT ON COLUMN memsub.adk_memories.author IS 'Author of the event.';

COMMENT ON COLUMN memsub.adk_memories."timestamp" IS 'ADK event time, seconds since the epoch.';

COMMENT ON COLUMN memsub.adk_memories.content IS 'The event''s content (google.genai Content as JSON).';

COMMENT ON COLUMN memsub.adk_memories.text IS 'The text parts of the content, joined by newlines.';

COMMENT ON COLUMN memsub.adk_memories.words IS 'Distinct lower-case words of text: what keyword search matches.';

COMMENT ON COLUMN memsub.adk_memories.embedding IS 'Embedding of text, when the memory service has an embedder; NULL otherwise.';

COMMENT ON COLUMN memsub.adk_memories.created_at IS 'When the memory was (last) added.';

CREATE TABLE memsub.adk_sessions (
    tenant_id uuid NOT NULL,
    org_id uuid,
    org_key uuid GENERATED ALWAYS AS (COALESCE(org_id, '00000000-0000-0000-0000-000000000000'::uuid)) STORED NOT NULL,
    app_name text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL COLLATE pg_catalog."C",
    id text NOT NULL COLLATE pg_catalog."C",
    state jsonb DEFAULT '{}'::jsonb NOT NULL,
    event_count bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT adk_sessions_event_count CHECK ((event_count >= 0)),
    CONSTRAINT adk_sessions_state_object CHECK ((jsonb_typeof(state) = 'object'::text))
);

ALTER TABLE ONLY memsub.adk_sessions FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.adk_sessions OWNER TO memsub_owner;

COMMENT ON TABLE memsub.adk_sessions IS 'ADK sessions: one conversation of an ADK user in an app, its session-scoped state (unprefixed keys).';

COMMENT ON COLUMN memsub.adk_sessions.tenant_id IS 'Tenant that owns the session (row-level security).';

COMMENT ON COLUMN memsub.adk_sessions.org_id IS 'Organization of the creator''s context; NULL: tenant-wide.';

COMMENT ON COLUMN memsub.adk_sessions.org_key IS 'org_id, or the nil uuid when NULL: the organization part of the key.';

COMMENT ON COLUMN memsub.adk_sessions.app_name IS 'ADK app name.';

COMMENT ON COLUMN memsub.adk_sessions.user_id IS 'ADK user id (free-form text).';

COMMENT ON COLUMN memsub.adk_sessions.id IS 'ADK session id, unique per app and user.';

COMMENT ON COLUMN memsub.adk_sessions.state IS 'Session state: the keys without an app:, user: or temp: prefix.';

COMMENT ON COLUMN memsub.adk_sessions.event_count IS 'Number of events appended; the next event''s position.';

COMMENT ON COLUMN memsub.adk_sessions.created_at IS 'When the session was created.';

COMMENT ON COLUMN memsub.adk_sessions.updated_at IS 'Last event appended (ADK''s last_update_time).';

CREATE TABLE memsub.adk_user_states (
    tenant_id uuid NOT NULL,
    org_id uuid,
    org_key uuid GENERATED ALWAYS AS (COALESCE(org_id, '00000000-0000-0000-0000-000000000000'::uuid)) STORED NOT NULL,
    app_name text NOT NULL COLLATE pg_catalog."C",
    user_id text NOT NULL COLLATE pg_catalog."C",
    state jsonb DEFAULT '{}'::jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT adk_user_states_state_object CHECK ((jsonb_typeof(state) = 'object'::text))
);

ALTER TABLE ONLY memsub.adk_user_states FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.adk_user_states OWNER TO memsub_owner;

COMMENT ON TABLE memsub.adk_user_states IS 'ADK user state (keys written as user:<key>), one JSON object per app and user, shared by the user''s sessions.';

COMMENT ON COLUMN memsub.adk_user_states.tenant_id IS 'Tenant that owns the state (row-level security).';

COMMENT ON COLUMN memsub.adk_user_states.org_id IS 'Organization of the writer''s context; NULL: tenant-wide.';

COMMENT ON COLUMN memsub.adk_user_states.org_key IS 'org_id, or the nil uuid when NULL: the organization part of the key.';

COMMENT ON COLUMN memsub.adk_user_states.app_name IS 'ADK app name.';

COMMENT ON COLUMN memsub.adk_user_states.user_id IS 'ADK user id (free-form text, not a memsub user uuid).';

COMMENT ON COLUMN memsub.adk_user_states.state IS 'The user state, keys without their user: prefix.';

COMMENT ON COLUMN memsub.adk_user_states.updated_at IS 'When the state last changed.';

CREATE TABLE memsub.agent_session_items (
    tenant_id uuid NOT NULL,
    org_id uuid,
    session_id text NOT NULL,
    item_id bigint NOT NULL,
    item json NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT agent_session_items_item_object CHECK ((json_typeof(item) = 'object'::text)),
    CONSTRAINT agent_session_items_session_id_not_blank CHECK ((btrim(session_id) <> ''::text))
);

ALTER TABLE ONLY memsub.agent_session_items FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.agent_session_items OWNER TO memsub_owner;

COMMENT ON TABLE memsub.agent_session_items IS 'Conversation items of OpenAI Agents SDK sessions (memsub.integrations.openai_agents.MemsubSession), per tenant; a session''s history is its items in item_id order.';

COMMENT ON COLUMN memsub.agent_session_items.tenant_id IS 'Tenant that owns the item (row-level security).';

COMMENT ON COLUMN memsub.agent_session_items.org_id IS 'Organization of the writer''s context; NULL: tenant-wide.';

COMMENT ON COLUMN memsub.agent_session_items.session_id IS 'The SDK session id (Session.session_id).';

COMMENT ON COLUMN memsub.agent_session_items.item_id IS 'Position in the history: a later item has a larger id.';

COMMENT ON COLUMN memsub.agent_session_items.item IS 'The conversation item (an SDK input item: a JSON object), kept as the text the SDK sent.';

COMMENT ON COLUMN memsub.agent_session_items.created_at IS 'When the item was added.';

ALTER TABLE memsub.agent_session_items ALTER COLUMN item_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME memsub.agent_session_items_item_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE memsub.api_keys (
    tenant_id uuid NOT NULL,
    key_id text NOT NULL,
    key_hash bytea NOT NULL,
    org_id uuid,
    user_id uuid,
    roles text[] DEFAULT '{}'::text[] NOT NULL,
    label text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by name DEFAULT SESSION_USER NOT NULL,
    expires_at timestamp with time zone,
    revoked_at timestamp with time zone,
    CONSTRAINT api_keys_hash CHECK ((length(key_hash) = 32)),
    CONSTRAINT api_keys_key_id CHECK ((key_id ~ '^[0-9a-f]{16}$'::text)),
    CONSTRAINT api_keys_roles CHECK ((roles <@ memsub.context_roles()))
);

ALTER TABLE ONLY memsub.api_keys FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.api_keys OWNER TO memsub_owner;

COMMENT ON TABLE memsub.api_keys IS 'Credentials of the HTTP API: each key acts for one tenant (and optionally an organization, a user and context roles). Only the sha256 of a key is stored; memsub.create_api_key shows the key once.';

COMMENT ON COLUMN memsub.api_keys.tenant_id IS 'The tenant every request with this key acts for.';

COMMENT ON COLUMN memsub.api_keys.key_id IS 'Public id of the key (16 hex digits), the part of the key after msk_ and before the secret.';

COMMENT ON COLUMN memsub.api_keys.key_hash IS 'sha256 of the whole key text (msk_<key_id>_<secret>); the key itself is never stored.';

COMMENT ON COLUMN memsub.api_keys.org_id IS 'The organization requests act for; NULL: none (tenant-wide rows only, unless an admin role).';

COMMENT ON COLUMN memsub.api_keys.user_id IS 'The user requests act for; NULL: none.';

COMMENT ON COLUMN memsub.api_keys.roles IS 'Context roles of the requests (a subset of memsub.context_roles()); the server login must be a member of the matching memsub role.';

COMMENT ON COLUMN memsub.api_keys.label IS 'Free text naming the key''s holder or purpose.';

COMMENT ON COLUMN memsub.api_keys.created_at IS 'When the key was created.';

COMMENT ON COLUMN memsub.api_keys.created_by IS 'The login that created it.';

COMMENT ON COLUMN memsub.api_keys.expires_at IS 'When the key stops authenticating; NULL: never.';

COMMENT ON COLUMN memsub.api_keys.revoked_at IS 'When the key was revoked (memsub.revoke_api_key); a revoked key never authenticates again.';

CREATE TABLE memsub.audit (
    tenant_id uuid NOT NULL,
    id bigint NOT NULL,
    org_id uuid,
    user_id uuid,
    operation text NOT NULL,
    session_id text,
    agent_id uuid,
    task_id bigint,
    memory_entry_id uuid,
    namespace text,
    key text,
    version integer,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT audit_details_is_object CHECK ((jsonb_typeof(details) = 'object'::text)),
    CONSTRAINT audit_operation_not_blank CHECK ((length(btrim(operation)) > 0))
);

ALTER TABLE ONLY memsub.audit FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.audit OWNER TO memsub_owner;

COMMENT ON TABLE memsub.audit IS 'Audit trail (seed 001): one row per operation of the session, task, memory, checkpoint and document-index functions, written in the same transaction as the operation. Rows survive deletion of what they reference.';

COMMENT ON COLUMN memsub.audit.tenant_id IS 'Tenant the operation ran in.';

COMMENT ON COLUMN memsub.audit.id IS 'Audit row identifier (increasing).';

COMMENT ON COLUMN memsub.audit.org_id IS 'Organization of the context that ran the operation.';

COMMENT ON COLUMN memsub.audit.user_id IS 'User of the context that ran the operation.';

COMMENT ON COLUMN memsub.audit.operation IS 'What happened: memory_write, memory_delete, memory_consolidate, memory_promote, session_create, session_event, session_state, session_end_turn, session_terminate, session_delete, task_create, task_finish, agent_spawn, checkpoint_save, checkpoint_restore, document_index_put, document_ingest.';

COMMENT ON COLUMN memsub.audit.session_id IS 'Session concerned (NULL once deleted; details keeps the id of a deleted session).';

COMMENT ON COLUMN memsub.audit.agent_id IS 'Acting agent (memsub.set_actor), if any.';

COMMENT ON COLUMN memsub.audit.task_id IS 'Task concerned or acting task (memsub.set_actor), if any.';

COMMENT ON COLUMN memsub.audit.memory_entry_id IS 'Memory entry version written or deleted (NULL if that row was removed).';

COMMENT ON COLUMN memsub.audit.namespace IS 'Namespace of the memory entry concerned.';

COMMENT ON COLUMN memsub.audit.key IS 'Key of the memory entry concerned.';

COMMENT ON COLUMN memsub.audit.version IS 'Version written (or the tombstone version of a delete).';

COMMENT ON COLUMN memsub.audit.details IS 'Operation details (JSON object), e.g. the expected version, the strategy, counts.';

COMMENT ON COLUMN memsub.audit.created_at IS 'When the operation ran (transaction time).';

ALTER TABLE memsub.audit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME memsub.audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE memsub.context_keys (
    key_id text NOT NULL,
    purpose text NOT NULL,
    inner_pad bytea NOT NULL,
    outer_pad bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by name DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT context_keys_pads CHECK (((length(inner_pad) = 64) AND (length(outer_pad) = 64))),
    CONSTRAINT context_keys_purpose CHECK ((purpose = ANY (ARRAY['seal'::text, 'token'::text])))
);

ALTER TABLE memsub.context_keys OWNER TO memsub_owner;

COMMENT ON TABLE memsub.context_keys IS 'Secrets of the request context, readable by no login: the installation''s seal key and the context token signing keys. Stored as the two HMAC-SHA256 pads (key XOR 0x36.., key XOR 0x5c..).';

COMMENT ON COLUMN memsub.context_keys.key_id IS 'Key id: ''seal'' for the seal key, else the kid of context tokens.';

COMMENT ON COLUMN memsub.context_keys.purpose IS 'seal (generated at installation) or token (registered by a platform admin).';

COMMENT ON COLUMN memsub.context_keys.inner_pad IS 'HMAC inner pad: the key XOR 0x36 repeated, 64 bytes.';

COMMENT ON COLUMN memsub.context_keys.outer_pad IS 'HMAC outer pad: the key XOR 0x5c repeated, 64 bytes.';

COMMENT ON COLUMN memsub.context_keys.created_at IS 'When the key was stored.';

COMMENT ON COLUMN memsub.context_keys.created_by IS 'The login that stored it.';

CREATE VIEW memsub.graph_nodes WITH (security_invoker='true') AS
 SELECT w.tenant_id,
    'Entity'::text AS node_type,
    w.entity_id AS node_id,
    NULL::text AS content,
    w.attributes AS properties,
    (w.created_at AT TIME ZONE 'UTC'::text) AS created_at,
    (w.updated_at AT TIME ZONE 'UTC'::text) AS updated_at,
    w.doc_refs,
    tstzrange((w.created_at AT TIME ZONE 'UTC'::text), NULL::timestamp with time zone, '[)'::text) AS valid_period,
    w.entity_type,
    w.aliases,
    NULL::text AS session_id,
    NULL::tstzrange AS timeline,
    NULL::text AS mime,
    NULL::text AS path,
    NULL::text AS hash,
    NULL::text AS memory_tier,
    NULL::double precision AS importance,
    NULL::jsonb AS decay_state
   FROM memsub.world_model_entities w
UNION ALL
 SELECT s.tenant_id,
    'Episode'::text AS node_type,
    s.id AS node_id,
    NULL::text AS content,
    jsonb_build_object('status', s.status, 'user_id', s.user_id, 'project_id', s.project_id, 'app_name', s.app_name) AS properties,
    s.created_at,
    s.updated_at,
    '[]'::jsonb AS doc_refs,
    tstzrange(s.created_at, s.terminated_at, '[)'::text) AS valid_period,
    NULL::text AS entity_type,
    NULL::text[] AS aliases,
    s.id AS session_id,
    tstzrange(s.created_at, s.terminated_at, '[)'::text) AS timeline,
    NULL::text AS mime,
    NULL::text AS path,
    NULL::text AS hash,
    NULL::text AS memory_tier,
    NULL::double precision AS importance,
    NULL::jsonb AS decay_state
   FROM memsub.sessions s
UNION ALL
 SELECT d.tenant_id,
    'Document'::text AS node_type,
    (d.id)::text AS node_id,
    d.summary AS content,
    (d.metadata || jsonb_build_object('version', d.version, 'is_latest', d.is_latest, 'previous_id', d.previous_id, 'key_concepts', to_jsonb(d.key_concepts), 'entities', d.entities, 'chunk_count', d.chunk_count)) AS properties,
    d.created_at,
    d.updated_at,
    '[]'::jsonb AS doc_refs,
    tstzrange(d.created_at, d.superseded_at, '[)'::text) AS valid_period,
    NULL::text AS entity_type,
    NULL::text[] AS aliases,
    NULL::text AS session_id,
    NULL::tstzrange AS timeline,
    d.mime,
    d.file_path AS path,
    d.hash,
    NULL::text AS memory_tier,
    NULL::double precision AS importance,
    NULL::jsonb AS decay_state
   FROM memsub.document_index d
UNION ALL
 SELECT m.tenant_id,
    'Memory'::text AS node_type,
    (m.id)::text AS node_id,
    (m.value)::text AS content,
    jsonb_build_object('namespace', m.namespace, 'key', m.key, 'version', m.version, 'kind', m.memory_type, 'metadata', m.metadata) AS properties,
    m.created_at,
    COALESCE(m.last_access_ts, m.created_at) AS updated_at,
    COALESCE((m.metadata -> 'doc_refs'::text), '[]'::jsonb) AS doc_refs,
    tstzrange(m.created_at, NULL::timestamp with time zone, '[)'::text) AS valid_period,
    NULL::text AS entity_type,
    NULL::text[] AS aliases,
    m.session_id,
    NULL::tstzrange AS timeline,
    NULL::text AS mime,
    NULL::text AS path,
    NULL::text AS hash,
    m.memory_tier,
    m.importance,
    jsonb_build_object('last_access_ts', m.last_access_ts, 'weight', m.decay_weight) AS decay_state
   FROM memsub.memory_entries m
  WHERE ((NOT m.is_deleted) AND (NOT (EXISTS ( SELECT
           FROM memsub.memory_entries n
          WHERE ((n.tenant_id = m.tenant_id) AND (n.namespace = m.namespace) AND (n.key = m.key) AND (n.version > m.version))))));

ALTER VIEW memsub.graph_nodes OWNER TO memsub_owner;

COMMENT ON VIEW memsub.graph_nodes IS 'Typed knowledge-graph nodes (seed 003 Node): Entity (world_model_entities), Episode (sessions), Document (document_index versions), Memory (latest live memory_entries version). Security invoker: each source table''s row-level security applies.';

COMMENT ON COLUMN memsub.graph_nodes.tenant_id IS 'Tenant owning the node.';

COMMENT ON COLUMN memsub.graph_nodes.node_type IS 'Entity, Episode, Document or Memory.';

COMMENT ON COLUMN memsub.graph_nodes.node_id IS 'Node id: entity name, session id, document version id or memory entry id (the ids edges use).';

COMMENT ON COLUMN memsub.graph_nodes.content IS 'Text of the node: a document''s summary, a memory''s value (JSON text); NULL for entities and episodes.';

COMMENT ON COLUMN memsub.graph_nodes.properties IS 'Properties of the node (entity attributes, session status, document version facts, memory address).';

COMMENT ON COLUMN memsub.graph_nodes.created_at IS 'When the node was created.';

COMMENT ON COLUMN memsub.graph_nodes.updated_at IS 'When the node last changed (memories: last access).';

COMMENT ON COLUMN memsub.graph_nodes.doc_refs IS 'DocRefs of the node: a JSON array of {doc_id, chunk_id, score}.';

COMMENT ON COLUMN memsub.graph_nodes.valid_period IS 'When the node exists: an episode''s timeline, a document version''s time as latest, otherwise from creation on.';

COMMENT ON COLUMN memsub.graph_nodes.entity_type IS 'Entity: Person, Organization, Concept or Location.';

COMMENT ON COLUMN memsub.graph_nodes.aliases IS 'Entity: other names.';

COMMENT ON COLUMN memsub.graph_nodes.session_id IS 'Episode: its session; Memory: the session that wrote it.';

COMMENT ON COLUMN memsub.graph_nodes.timeline IS 'Episode: [start_ts, end_ts) of the session (end open while active).';

COMMENT ON COLUMN memsub.graph_nodes.mime IS 'Document: pdf, md or txt.';

COMMENT ON COLUMN memsub.graph_nodes.path IS 'Document: file path.';

COMMENT ON COLUMN memsub.graph_nodes.hash IS 'Document: sha256 of the file.';

COMMENT ON COLUMN memsub.graph_nodes.memory_tier IS 'Memory: its tier, STM, LTM or Procedural (memsub.memory_tiers()).';

COMMENT ON COLUMN memsub.graph_nodes.importance IS 'Memory: importance in [0, 1].';

COMMENT ON COLUMN memsub.graph_nodes.decay_state IS 'Memory: {last_access_ts, weight}.';

CREATE TABLE memsub.installation_settings (
    name text NOT NULL,
    value text NOT NULL,
    set_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE memsub.installation_settings OWNER TO memsub_owner;

COMMENT ON TABLE memsub.installation_settings IS 'Installation-wide settings chosen when memsub was migrated (e.g. vector_dimension). Not tenant data.';

COMMENT ON COLUMN memsub.installation_settings.name IS 'Setting name.';

COMMENT ON COLUMN memsub.installation_settings.value IS 'Setting value as text.';

COMMENT ON COLUMN memsub.installation_settings.set_at IS 'When the setting was recorded.';

CREATE TABLE memsub.langgraph_checkpoint_writes (
    tenant_id uuid NOT NULL,
    org_id uuid,
    thread_id text NOT NULL,
    checkpoint_ns text DEFAULT ''::text NOT NULL,
    checkpoint_id text NOT NULL,
    task_id text NOT NULL,
    task_path text DEFAULT ''::text NOT NULL,
    idx integer NOT NULL,
    channel text NOT NULL,
    value_type text NOT NULL,
    value bytea
);

ALTER TABLE ONLY memsub.langgraph_checkpoint_writes FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.langgraph_checkpoint_writes OWNER TO memsub_owner;

COMMENT ON TABLE memsub.langgraph_checkpoint_writes IS 'Pending writes of LangGraph tasks, recorded against a checkpoint (memsub.langgraph_checkpoint_put_writes).';

COMMENT ON COLUMN memsub.langgraph_checkpoint_writes.tenant_id IS 'Tenant that owns the write (row-level security).';

COMMENT ON COLUMN memsub.langgraph_checkpoint_writes.org_id IS 'Organization of the writer''s context; NULL: tenant-wide.';

COMMENT ON COLUMN memsub.langgraph_checkpoint_writes.thread_id IS 'LangGraph thread id of the checkpoint.';

COMMENT ON COLUMN memsub.langgraph_checkpoint_writes.checkpoint_ns IS 'Checkpoint namespace of the checkpoint.';

COMMENT ON COLUMN memsub.langgraph_checkpoint_writes.checkpoint_id IS 'The checkpoint the write belongs to.';

COMMENT ON COLUMN memsub.langgraph_checkpoint_writes.task_id IS 'LangGraph task that produced the write.';

COMMENT ON COLUMN memsub.langgraph_checkpoint_writes.task_path IS 'Path of the task in the graph.';

COMMENT ON COLUMN memsub.langgraph_checkpoint_writes.idx IS 'Position of the write within the task; negative for LangGraph''s special channels (errors, interrupts).';

COMMENT ON COLUMN memsub.langgraph_checkpoint_writes.channel IS 'Channel written.';

COMMENT ON COLUMN memsub.langgraph_checkpoint_writes.value_type IS 'Type tag of the serialized value (LangGraph serializer).';

COMMENT ON COLUMN memsub.langgraph_checkpoint_writes.value IS 'The serialized value.';

CREATE TABLE memsub.langgraph_checkpoints (
    tenant_id uuid NOT NULL,
    org_id uuid,
    thread_id text NOT NULL,
    checkpoint_ns text DEFAULT ''::text NOT NULL,
    checkpoint_id text NOT NULL,
    parent_checkpoint_id text,
    checkpoint_type text NOT NULL,
    checkpoint bytea NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT langgraph_checkpoints_metadata_object CHECK ((jsonb_typeof(metadata) = 'object'::text))
);

ALTER TABLE ONLY memsub.langgraph_checkpoints FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.langgraph_checkpoints OWNER TO memsub_owner;

COMMENT ON TABLE memsub.langgraph_checkpoints IS 'LangGraph checkpoints (memsub.integrations.langgraph.MemsubSaver): one row per saved graph state, per tenant.';

COMMENT ON COLUMN memsub.langgraph_checkpoints.tenant_id IS 'Tenant that owns the checkpoint (row-level security).';

COMMENT ON COLUMN memsub.langgraph_checkpoints.org_id IS 'Organization of the writer''s context; NULL: tenant-wide.';

COMMENT ON COLUMN memsub.langgraph_checkpoints.thread_id IS 'LangGraph thread id (configurable.thread_id).';

COMMENT ON COLUMN memsub.langgraph_checkpoints.checkpoint_ns IS 'LangGraph checkpoint namespace; '''' for the root graph.';

COMMENT ON COLUMN memsub.langgraph_checkpoints.checkpoint_id IS 'LangGraph checkpoint id (time-ordered: a later checkpoint sorts after).';

COMMENT ON COLUMN memsub.langgraph_checkpoints.parent_checkpoint_id IS 'The checkpoint this one follows in the same thread and namespace.';

COMMENT ON COLUMN memsub.langgraph_checkpoints.checkpoint_type IS 'Type tag of the serialized checkpoint (LangGraph serializer).';

COMMENT ON COLUMN memsub.langgraph_checkpoints.checkpoint IS 'The serialized checkpoint.';

COMMENT ON COLUMN memsub.langgraph_checkpoints.metadata IS 'Checkpoint metadata as JSON (source, step, run_id, parents, ...).';

COMMENT ON COLUMN memsub.langgraph_checkpoints.created_at IS 'When the row was first written.';

CREATE TABLE memsub.langgraph_store_items (
    tenant_id uuid NOT NULL,
    org_id uuid,
    namespace text[] NOT NULL COLLATE pg_catalog."C",
    key text NOT NULL COLLATE pg_catalog."C",
    value jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    ttl_minutes double precision,
    expires_at timestamp with time zone,
    namespace_key text NOT NULL COLLATE pg_catalog."C",
    CONSTRAINT langgraph_store_items_namespace_labels CHECK ((cardinality(namespace) >= 1)),
    CONSTRAINT langgraph_store_items_ttl_positive CHECK ((ttl_minutes > (0)::double precision)),
    CONSTRAINT langgraph_store_items_value_object CHECK ((jsonb_typeof(value) = 'object'::text))
);

ALTER TABLE ONLY memsub.langgraph_store_items FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.langgraph_store_items OWNER TO memsub_owner;

COMMENT ON TABLE memsub.langgraph_store_items IS 'LangGraph store items (memsub.integrations.langgraph_store.MemsubStore): a JSON object per (namespace, key), per tenant.';

COMMENT ON COLUMN memsub.langgraph_store_items.tenant_id IS 'Tenant that owns the item (row-level security).';

COMMENT ON COLUMN memsub.langgraph_store_items.org_id IS 'Organization of the writer''s context; NULL: tenant-wide.';

COMMENT ON COLUMN memsub.langgraph_store_items.namespace IS 'The LangGraph namespace, one label per element (e.g. {users,42,memories}).';

COMMENT ON COLUMN memsub.langgraph_store_items.key IS 'Key of the item within its namespace.';

COMMENT ON COLUMN memsub.langgraph_store_items.value IS 'The item: a JSON object.';

COMMENT ON COLUMN memsub.langgraph_store_items.created_at IS 'When the item was first written.';

COMMENT ON COLUMN memsub.langgraph_store_items.updated_at IS 'When the item was last written.';

COMMENT ON COLUMN memsub.langgraph_store_items.ttl_minutes IS 'Time to live in minutes, or NULL: the item does not expire.';

COMMENT ON COLUMN memsub.langgraph_store_items.expires_at IS 'When the item expires (written, or refreshed on read, plus ttl_minutes); NULL: never.';

COMMENT ON COLUMN memsub.langgraph_store_items.namespace_key IS 'The namespace as text, its labels joined by periods (a label holds none): the key reads search by, a leakproof comparison under row-level security where the text[] namespace is not.';

CREATE TABLE memsub.langgraph_store_vectors (
    tenant_id uuid NOT NULL,
    org_id uuid,
    namespace text[] NOT NULL COLLATE pg_catalog."C",
    key text NOT NULL COLLATE pg_catalog."C",
    field_name text NOT NULL,
    embedding public.vector NOT NULL,
    namespace_key text NOT NULL COLLATE pg_catalog."C"
);

ALTER TABLE ONLY memsub.langgraph_store_vectors FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.langgraph_store_vectors OWNER TO memsub_owner;

COMMENT ON TABLE memsub.langgraph_store_vectors IS 'Embeddings of the indexed fields of LangGraph store items, one row per field (path) and item.';

COMMENT ON COLUMN memsub.langgraph_store_vectors.tenant_id IS 'Tenant that owns the item (row-level security).';

COMMENT ON COLUMN memsub.langgraph_store_vectors.org_id IS 'Organization of the writer''s context; NULL: tenant-wide.';

COMMENT ON COLUMN memsub.langgraph_store_vectors.namespace IS 'Namespace of the item.';

COMMENT ON COLUMN memsub.langgraph_store_vectors.key IS 'Key of the item.';

COMMENT ON COLUMN memsub.langgraph_store_vectors.field_name IS 'Path of the embedded field in the item (e.g. text, or content.0 for the first of several).';

COMMENT ON COLUMN memsub.langgraph_store_vectors.embedding IS 'Embedding of the field''s text (the dimension of the store''s index configuration).';

COMMENT ON COLUMN memsub.langgraph_store_vectors.namespace_key IS 'Namespace of the item as text (memsub.langgraph_store_items.namespace_key).';

CREATE TABLE memsub.limits (
    name text NOT NULL,
    value bigint NOT NULL,
    set_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT limits_name_format CHECK (((name ~ '^[a-z][a-z0-9_]*$'::text) AND (length(name) <= 63))),
    CONSTRAINT limits_value_positive CHECK ((value > 0))
);

ALTER TABLE memsub.limits OWNER TO memsub_owner;

COMMENT ON TABLE memsub.limits IS 'Installation-wide overrides of the resource limits (docs/security.md, "Limits"); a limit without a row keeps its default. Written by the owner only; read by memsub.limit_value.';

COMMENT ON COLUMN memsub.limits.name IS 'Limit name, e.g. max_envelope_bytes (see memsub.limit_value for the list).';

COMMENT ON COLUMN memsub.limits.value IS 'The limit (a count, characters or bytes, per the name); positive.';

COMMENT ON COLUMN memsub.limits.set_at IS 'When the override was recorded.';

CREATE TABLE memsub.login_bindings (
    binding_id bigint NOT NULL,
    login name NOT NULL,
    bound_tenant_id uuid,
    bound_org_id uuid,
    bound_at timestamp with time zone DEFAULT now() NOT NULL,
    bound_by name DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT login_bindings_org_needs_tenant CHECK (((bound_org_id IS NULL) OR (bound_tenant_id IS NOT NULL)))
);

ALTER TABLE memsub.login_bindings OWNER TO memsub_owner;

COMMENT ON TABLE memsub.login_bindings IS 'Which tenants (and organizations) each login role may act for: memsub.set_context refuses any other. Written through memsub.bind_login/trust_login/unbind_login by platform admins.';

COMMENT ON COLUMN memsub.login_bindings.binding_id IS 'Surrogate key.';

COMMENT ON COLUMN memsub.login_bindings.login IS 'The login role (session_user) the binding applies to.';

COMMENT ON COLUMN memsub.login_bindings.bound_tenant_id IS 'The tenant the login may act for; NULL: any tenant (a trusted login, memsub.trust_login).';

COMMENT ON COLUMN memsub.login_bindings.bound_org_id IS 'The organization the login may act for within the tenant; NULL: the whole tenant, any organization.';

COMMENT ON COLUMN memsub.login_bindings.bound_at IS 'When the binding was made.';

COMMENT ON COLUMN memsub.login_bindings.bound_by IS 'The login that made the binding.';

ALTER TABLE memsub.login_bindings ALTER COLUMN binding_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME memsub.login_bindings_binding_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE memsub.maintenance_lock (
    task text NOT NULL,
    lock_key bigint NOT NULL
);

ALTER TABLE memsub.maintenance_lock OWNER TO memsub_owner;

COMMENT ON TABLE memsub.maintenance_lock IS 'One row per serialized task and key: the transaction that holds a row lock on it runs the task (memsub.take_maintenance_lock). Holds no data; rows may be deleted when nothing runs.';

COMMENT ON COLUMN memsub.maintenance_lock.task IS 'What is serialized, e.g. refresh_memory_view, learn_importance, document_ingest.';

COMMENT ON COLUMN memsub.maintenance_lock.lock_key IS 'hashtextextended of the key within the task (a view name, a tenant id, a tenant and document path ...).';

CREATE TABLE memsub.memory_embeddings_p00 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p00 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p00 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p00 IS 'Partition 0 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 0. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p01 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p01 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p01 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p01 IS 'Partition 1 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 1. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p02 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p02 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p02 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p02 IS 'Partition 2 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 2. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p03 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p03 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p03 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p03 IS 'Partition 3 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 3. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p04 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p04 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p04 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p04 IS 'Partition 4 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 4. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p05 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p05 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p05 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p05 IS 'Partition 5 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 5. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p06 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p06 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p06 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p06 IS 'Partition 6 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 6. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p07 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p07 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p07 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p07 IS 'Partition 7 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 7. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p08 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p08 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p08 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p08 IS 'Partition 8 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 8. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p09 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p09 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p09 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p09 IS 'Partition 9 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 9. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p10 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p10 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p10 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p10 IS 'Partition 10 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 10. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p11 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p11 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p11 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p11 IS 'Partition 11 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 11. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p12 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p12 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p12 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p12 IS 'Partition 12 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 12. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p13 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p13 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p13 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p13 IS 'Partition 13 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 13. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p14 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p14 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p14 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p14 IS 'Partition 14 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 14. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE TABLE memsub.memory_embeddings_p15 (
    embedding_id uuid DEFAULT gen_random_uuid() CONSTRAINT memory_embeddings_embedding_id_not_null NOT NULL,
    packet_id uuid CONSTRAINT memory_embeddings_packet_id_not_null NOT NULL,
    embedding_type text CONSTRAINT memory_embeddings_embedding_type_not_null NOT NULL,
    vector public.vector(1536) CONSTRAINT memory_embeddings_vector_not_null NOT NULL,
    chunk_index integer DEFAULT 0 CONSTRAINT memory_embeddings_chunk_index_not_null NOT NULL,
    chunk_text text,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT memory_embeddings_metadata_not_null NOT NULL,
    scope text DEFAULT 'shared'::text CONSTRAINT memory_embeddings_scope_not_null NOT NULL,
    created_at timestamp with time zone DEFAULT now() CONSTRAINT memory_embeddings_created_at_not_null NOT NULL,
    tenant_id uuid CONSTRAINT memory_embeddings_tenant_id_not_null NOT NULL,
    org_id uuid,
    user_id uuid,
    correlation_id uuid,
    session_id text,
    trace_id text,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(chunk_text, ''::text))) STORED,
    ttl timestamp without time zone,
    CONSTRAINT memory_embeddings_chunk_index_non_negative CHECK ((chunk_index >= 0)),
    CONSTRAINT memory_embeddings_embedding_type_known CHECK ((embedding_type = ANY (memsub.embedding_types()))),
    CONSTRAINT memory_embeddings_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.memory_embeddings_p15 FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p15 OWNER TO memsub_owner;

COMMENT ON TABLE memsub.memory_embeddings_p15 IS 'Partition 15 of 16 of memsub.memory_embeddings: the embeddings of the tenants whose tenant_id hashes to remainder 15. Read and written only through memory_embeddings (its policies apply there; a direct read of the partition sees no row).';

CREATE MATERIALIZED VIEW memsub.mv_agent_recent_important AS
 SELECT tenant_id,
    org_id,
    user_id,
    session_id,
    (ttl AT TIME ZONE 'UTC'::text) AS expires_at,
    (routing ->> 'agent'::text) AS agent_id,
    packet_id,
    packet_type,
    "timestamp",
    importance_score,
    access_count,
    tags,
    scope,
    (round((((((0.6)::double precision * importance_score) + ((0.2)::double precision * LEAST((1.0)::double precision, (ln(((1 + access_count))::double precision) / ln((101)::double precision))))) + ((0.2 * GREATEST(0.0, (1.0 - (EXTRACT(epoch FROM (now() - "timestamp")) / ((30 * 86400))::numeric)))))::double precision))::numeric, 6))::double precision AS combined_score
   FROM memsub.packet_store p
  WHERE (("timestamp" >= (now() - '30 days'::interval)) AND (importance_score >= (0.7)::double precision) AND ((routing ->> 'agent'::text) IS NOT NULL) AND ((ttl IS NULL) OR (ttl > (now() AT TIME ZONE 'UTC'::text))))
  WITH NO DATA;

ALTER MATERIALIZED VIEW memsub.mv_agent_recent_important OWNER TO memsub_view_owner;

COMMENT ON MATERIALIZED VIEW memsub.mv_agent_recent_important IS 'Recent (30 days) high-importance (>= 0.7) packets per agent (routing.agent) with a combined score: 0.6 importance + 0.2 access (log scale, saturating at 100) + 0.2 recency; expires_at is the packet''s expiry. Clients read memsub.tenant_agent_recent_important, which drops expired rows at read time.';

COMMENT ON COLUMN memsub.mv_agent_recent_important.tenant_id IS 'Tenant of the packet.';

COMMENT ON COLUMN memsub.mv_agent_recent_important.org_id IS 'Organization of the packet (NULL: tenant-wide).';

COMMENT ON COLUMN memsub.mv_agent_recent_important.user_id IS 'User who wrote the packet.';

COMMENT ON COLUMN memsub.mv_agent_recent_important.session_id IS 'Session the packet was written in.';

COMMENT ON COLUMN memsub.mv_agent_recent_important.expires_at IS 'When the packet expires (its ttl; NULL: never): the tenant_* view hides the row from then on.';

COMMENT ON COLUMN memsub.mv_agent_recent_important.agent_id IS 'The agent that wrote it (routing.agent).';

COMMENT ON COLUMN memsub.mv_agent_recent_important.packet_id IS 'The packet (packet_store.packet_id).';

COMMENT ON COLUMN memsub.mv_agent_recent_important.packet_type IS 'Kind of packet (packet_store.packet_type).';

COMMENT ON COLUMN memsub.mv_agent_recent_important."timestamp" IS 'When the packet happened (within the 30 days before the refresh).';

COMMENT ON COLUMN memsub.mv_agent_recent_important.importance_score IS 'Learned importance in [0, 1] at the refresh (0.7 or more).';

COMMENT ON COLUMN memsub.mv_agent_recent_important.access_count IS 'Retrievals of the packet at the refresh.';

COMMENT ON COLUMN memsub.mv_agent_recent_important.tags IS 'Tags of the packet.';

COMMENT ON COLUMN memsub.mv_agent_recent_important.scope IS 'Memory isolation scope: shared, cursor or l-private.';

COMMENT ON COLUMN memsub.mv_agent_recent_important.combined_score IS '0.6 importance + 0.2 access (log scale, 100 accesses = 1) + 0.2 recency (1 now, 0 after 30 days), at the refresh.';

CREATE MATERIALIZED VIEW memsub.mv_entity_graph AS
 SELECT tenant_id,
    (min(ttl) AT TIME ZONE 'UTC'::text) AS expires_at,
    source_key AS source_entity,
    relationship_type,
    target_key AS target_entity,
    sum(mention_count) AS total_mentions,
    max(confidence) AS max_confidence,
    avg(confidence) AS avg_confidence,
    max(last_seen) AS last_seen,
    count(*) AS relationship_count
   FROM memsub.entity_relationships r
  WHERE (upper_inf(valid_period) AND (lower(valid_period) <= now()) AND ((ttl IS NULL) OR (ttl > (now() AT TIME ZONE 'UTC'::text))))
  GROUP BY tenant_id, source_key, relationship_type, target_key
  WITH NO DATA;

ALTER MATERIALIZED VIEW memsub.mv_entity_graph OWNER TO memsub_view_owner;

COMMENT ON MATERIALIZED VIEW memsub.mv_entity_graph IS 'The current knowledge graph (edges whose window is open when the view is refreshed) per tenant, entity names in their matching form (memsub.normalize_text); expires_at is the earliest expiry among the merged edges. Clients read memsub.tenant_entity_graph, which drops a row at read time once expires_at has passed (until the next refresh recomputes it without the expired edge).';

COMMENT ON COLUMN memsub.mv_entity_graph.tenant_id IS 'Tenant of the edges.';

COMMENT ON COLUMN memsub.mv_entity_graph.expires_at IS 'Earliest expiry among the relationships counted in the row (NULL: none expires): the tenant_* view withholds the row from then until the next refresh recomputes it.';

COMMENT ON COLUMN memsub.mv_entity_graph.source_entity IS 'Matching form of the source entity (entity_relationships.source_key).';

COMMENT ON COLUMN memsub.mv_entity_graph.relationship_type IS 'Relationship type of the edges.';

COMMENT ON COLUMN memsub.mv_entity_graph.target_entity IS 'Matching form of the target entity (entity_relationships.target_key).';

COMMENT ON COLUMN memsub.mv_entity_graph.total_mentions IS 'Sum of the mention counts of the edges valid now.';

COMMENT ON COLUMN memsub.mv_entity_graph.max_confidence IS 'Highest confidence among those edges.';

COMMENT ON COLUMN memsub.mv_entity_graph.avg_confidence IS 'Mean confidence of those edges.';

COMMENT ON COLUMN memsub.mv_entity_graph.last_seen IS 'When any of those edges was last seen.';

COMMENT ON COLUMN memsub.mv_entity_graph.relationship_count IS 'Number of edges (spellings of the two entities) grouped into this row.';

CREATE MATERIALIZED VIEW memsub.mv_high_confidence_facts AS
 SELECT tenant_id,
    (ttl AT TIME ZONE 'UTC'::text) AS expires_at,
    fact_id,
    subject,
    subject_normalized,
    predicate,
    object,
    confidence,
    supporting_packet_count,
    access_count,
    (round((((((0.6)::double precision * confidence) + ((0.25)::double precision * LEAST((1.0)::double precision, (ln(((1 + supporting_packet_count))::double precision) / ln((11)::double precision))))) + ((0.15)::double precision * LEAST((1.0)::double precision, (ln(((1 + access_count))::double precision) / ln((101)::double precision))))))::numeric, 6))::double precision AS combined_score
   FROM memsub.knowledge_facts f
  WHERE ((confidence >= (0.6)::double precision) AND (contradiction_count < 3) AND ((ttl IS NULL) OR (ttl > (now() AT TIME ZONE 'UTC'::text))))
  WITH NO DATA;

ALTER MATERIALIZED VIEW memsub.mv_high_confidence_facts OWNER TO memsub_view_owner;

COMMENT ON MATERIALIZED VIEW memsub.mv_high_confidence_facts IS 'Facts with confidence >= 0.6 and fewer than 3 contradictions, with a combined score: 0.6 confidence + 0.25 support (log scale, saturating at 10) + 0.15 access (saturating at 100); expires_at is the fact''s expiry. Clients read memsub.tenant_high_confidence_facts, which drops expired rows at read time.';

COMMENT ON COLUMN memsub.mv_high_confidence_facts.tenant_id IS 'Tenant of the fact.';

COMMENT ON COLUMN memsub.mv_high_confidence_facts.expires_at IS 'When the fact expires (the latest expiry of the packets that asserted it; NULL: never): the tenant_* view hides the row from then on.';

COMMENT ON COLUMN memsub.mv_high_confidence_facts.fact_id IS 'The fact (knowledge_facts.fact_id).';

COMMENT ON COLUMN memsub.mv_high_confidence_facts.subject IS 'Subject as written.';

COMMENT ON COLUMN memsub.mv_high_confidence_facts.subject_normalized IS 'Matching form of the subject.';

COMMENT ON COLUMN memsub.mv_high_confidence_facts.predicate IS 'Predicate of the fact.';

COMMENT ON COLUMN memsub.mv_high_confidence_facts.object IS 'Object of the fact (JSON).';

COMMENT ON COLUMN memsub.mv_high_confidence_facts.confidence IS 'Confidence in [0, 1] at the refresh (0.6 or more).';

COMMENT ON COLUMN memsub.mv_high_confidence_facts.supporting_packet_count IS 'Packets that asserted the fact.';

COMMENT ON COLUMN memsub.mv_high_confidence_facts.access_count IS 'Retrievals of the fact at the refresh.';

COMMENT ON COLUMN memsub.mv_high_confidence_facts.combined_score IS '0.6 confidence + 0.25 support (log scale, 10 packets = 1) + 0.15 access (log scale, 100 accesses = 1), at the refresh.';

CREATE MATERIALIZED VIEW memsub.mv_reflection_patterns AS
 WITH live AS (
         SELECT r.reflection_id,
            r.task_id,
            r.reflection_type,
            r.content,
            r.context,
            r.entities,
            r.tags,
            r.confidence,
            r.priority,
            r.source_agent,
            r.source_packet,
            r.access_count,
            r.last_accessed,
            r.vector,
            r.expires_at,
            r.created_at,
            r.tenant_id,
            r.org_id,
            r.user_id,
            r.correlation_id,
            r.session_id,
            r.trace_id
           FROM memsub.reflection_store r
          WHERE ((r.expires_at IS NULL) OR (r.expires_at > now()))
        ), stats AS (
         SELECT l.tenant_id,
            l.org_id,
            l.reflection_type,
            count(*) AS count,
            avg(l.confidence) AS avg_confidence,
            max(l.created_at) AS latest,
            min(l.expires_at) AS expires_at
           FROM live l
          GROUP BY l.tenant_id, l.org_id, l.reflection_type
        ), tag_sets AS (
         SELECT l.tenant_id,
            l.org_id,
            l.reflection_type,
            array_agg(DISTINCT t_1.tag ORDER BY t_1.tag) AS all_tags
           FROM (live l
             CROSS JOIN LATERAL unnest(l.tags) t_1(tag))
          GROUP BY l.tenant_id, l.org_id, l.reflection_type
        )
 SELECT s.tenant_id,
    s.org_id,
    s.expires_at,
    s.reflection_type,
    s.count,
    s.avg_confidence,
    COALESCE(t.all_tags, '{}'::text[]) AS all_tags,
    s.latest
   FROM (stats s
     LEFT JOIN tag_sets t ON (((t.tenant_id = s.tenant_id) AND (NOT (t.org_id IS DISTINCT FROM s.org_id)) AND (t.reflection_type = s.reflection_type))))
  WITH NO DATA;

ALTER MATERIALIZED VIEW memsub.mv_reflection_patterns OWNER TO memsub_view_owner;

COMMENT ON MATERIALIZED VIEW memsub.mv_reflection_patterns IS 'Unexpired reflections per tenant, organization and type: count, average confidence, all tags, latest; expires_at is the earliest expiry among them. Clients read memsub.tenant_reflection_patterns, which drops a row at read time once expires_at has passed (until the next refresh recomputes it).';

COMMENT ON COLUMN memsub.mv_reflection_patterns.tenant_id IS 'Tenant of the reflections.';

COMMENT ON COLUMN memsub.mv_reflection_patterns.org_id IS 'Organization of the reflections (NULL: tenant-wide).';

COMMENT ON COLUMN memsub.mv_reflection_patterns.expires_at IS 'Earliest expiry among the reflections counted in the row (NULL: none expires): the tenant_* view withholds the row from then until the next refresh recomputes it.';

COMMENT ON COLUMN memsub.mv_reflection_patterns.reflection_type IS 'Reflection type the row counts.';

COMMENT ON COLUMN memsub.mv_reflection_patterns.count IS 'Reflections of this type not expired at the refresh.';

COMMENT ON COLUMN memsub.mv_reflection_patterns.avg_confidence IS 'Mean confidence of those reflections.';

COMMENT ON COLUMN memsub.mv_reflection_patterns.all_tags IS 'Every tag used by those reflections, sorted, each once.';

COMMENT ON COLUMN memsub.mv_reflection_patterns.latest IS 'When the newest of those reflections was created.';

ALTER TABLE memsub.packet_store ALTER COLUMN write_seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME memsub.packet_store_write_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE memsub.packet_threads (
    tenant_id uuid NOT NULL,
    thread_id uuid NOT NULL,
    org_id uuid,
    first_packet_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY memsub.packet_threads FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.packet_threads OWNER TO memsub_owner;

COMMENT ON TABLE memsub.packet_threads IS 'Thread registry: each conversation thread of a tenant, bound to one organization.';

COMMENT ON COLUMN memsub.packet_threads.tenant_id IS 'Tenant owning the thread.';

COMMENT ON COLUMN memsub.packet_threads.thread_id IS 'Thread identifier (packet_store.thread_id).';

COMMENT ON COLUMN memsub.packet_threads.org_id IS 'Organization every packet of the thread belongs to (NULL: tenant-wide).';

COMMENT ON COLUMN memsub.packet_threads.first_packet_id IS 'First packet written to the thread (NULL once it was purged).';

COMMENT ON COLUMN memsub.packet_threads.created_at IS 'Time of the thread''s first packet.';

CREATE TABLE memsub.packet_tombstones (
    tenant_id uuid NOT NULL,
    packet_id uuid NOT NULL,
    packet_type text NOT NULL,
    thread_id uuid,
    parent_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    generation integer NOT NULL,
    root_packet_id uuid NOT NULL,
    "timestamp" timestamp with time zone NOT NULL,
    write_seq bigint NOT NULL,
    expired_at timestamp without time zone NOT NULL,
    purged_at timestamp with time zone DEFAULT now() NOT NULL,
    scope text NOT NULL,
    org_id uuid,
    user_id uuid,
    session_id text,
    CONSTRAINT packet_tombstones_scope_known CHECK ((scope = ANY (memsub.packet_scopes())))
);

ALTER TABLE ONLY memsub.packet_tombstones FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.packet_tombstones OWNER TO memsub_owner;

COMMENT ON TABLE memsub.packet_tombstones IS 'What remains of a purged (expired) packet: its lineage skeleton, so lineage walks still reach its ancestors. No payload, envelope, tags or vectors. Written by memsub.purge_expired().';

COMMENT ON COLUMN memsub.packet_tombstones.tenant_id IS 'Tenant of the purged packet.';

COMMENT ON COLUMN memsub.packet_tombstones.packet_id IS 'Id of the purged packet.';

COMMENT ON COLUMN memsub.packet_tombstones.packet_type IS 'Semantic category of the purged packet.';

COMMENT ON COLUMN memsub.packet_tombstones.thread_id IS 'Thread of the purged packet.';

COMMENT ON COLUMN memsub.packet_tombstones.parent_ids IS 'Lineage parents of the purged packet.';

COMMENT ON COLUMN memsub.packet_tombstones.generation IS 'Lineage generation of the purged packet.';

COMMENT ON COLUMN memsub.packet_tombstones.root_packet_id IS 'Lineage root of the purged packet.';

COMMENT ON COLUMN memsub.packet_tombstones."timestamp" IS 'Event time of the purged packet.';

COMMENT ON COLUMN memsub.packet_tombstones.write_seq IS 'Write order of the purged packet.';

COMMENT ON COLUMN memsub.packet_tombstones.expired_at IS 'The ttl of the purged packet (UTC).';

COMMENT ON COLUMN memsub.packet_tombstones.purged_at IS 'When the packet was purged.';

COMMENT ON COLUMN memsub.packet_tombstones.scope IS 'Visibility scope of the purged packet (the same policies apply).';

COMMENT ON COLUMN memsub.packet_tombstones.org_id IS 'Organization of the purged packet.';

COMMENT ON COLUMN memsub.packet_tombstones.user_id IS 'Writing user of the purged packet.';

COMMENT ON COLUMN memsub.packet_tombstones.session_id IS 'Session of the purged packet.';

CREATE TABLE memsub.schema_history (
    version text NOT NULL,
    version_order integer[] GENERATED ALWAYS AS ((string_to_array(version, '.'::text))::integer[]) STORED,
    name text NOT NULL,
    sha256 text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    duration_ms double precision,
    applied_by text DEFAULT CURRENT_USER NOT NULL
);

ALTER TABLE memsub.schema_history OWNER TO memsub_owner;

COMMENT ON TABLE memsub.schema_history IS 'memsub migrations applied to this database, one row per version.';

COMMENT ON COLUMN memsub.schema_history.version IS 'Semantic version of the migration file.';

COMMENT ON COLUMN memsub.schema_history.version_order IS 'The version as an integer array, for ordering.';

COMMENT ON COLUMN memsub.schema_history.name IS 'Description part of the migration file name.';

COMMENT ON COLUMN memsub.schema_history.sha256 IS 'sha256 of the file as applied; a changed file is drift.';

COMMENT ON COLUMN memsub.schema_history.applied_at IS 'When the migration transaction started.';

COMMENT ON COLUMN memsub.schema_history.duration_ms IS 'How long the migration took.';

COMMENT ON COLUMN memsub.schema_history.applied_by IS 'Database role that applied it.';

CREATE TABLE memsub.schema_repeatable_history (
    file_name text NOT NULL,
    sha256 text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    duration_ms double precision,
    applied_by text DEFAULT CURRENT_USER NOT NULL
);

ALTER TABLE memsub.schema_repeatable_history OWNER TO memsub_owner;

COMMENT ON TABLE memsub.schema_repeatable_history IS 'memsub re-runnable SQL files (sql/) as last applied.';

COMMENT ON COLUMN memsub.schema_repeatable_history.file_name IS 'File name in sql/.';

COMMENT ON COLUMN memsub.schema_repeatable_history.sha256 IS 'sha256 of the file as last applied.';

COMMENT ON COLUMN memsub.schema_repeatable_history.applied_at IS 'When it was last applied.';

COMMENT ON COLUMN memsub.schema_repeatable_history.duration_ms IS 'How long applying it took.';

COMMENT ON COLUMN memsub.schema_repeatable_history.applied_by IS 'Database role that applied it.';

CREATE TABLE memsub.search_stats (
    tenant_id uuid NOT NULL,
    embedding_type text NOT NULL,
    row_count bigint NOT NULL,
    type_rows bigint NOT NULL,
    ef_search integer,
    recall double precision,
    samples integer DEFAULT 0 NOT NULL,
    measured_at timestamp with time zone DEFAULT now() NOT NULL,
    recall_bound double precision,
    CONSTRAINT search_stats_counts_non_negative CHECK (((row_count >= 0) AND (type_rows >= 0))),
    CONSTRAINT search_stats_recall_bound_unit CHECK (((recall_bound IS NULL) OR ((recall_bound >= (0)::double precision) AND (recall_bound <= (1)::double precision)))),
    CONSTRAINT search_stats_recall_unit CHECK (((recall IS NULL) OR ((recall >= (0)::double precision) AND (recall <= (1)::double precision))))
);

ALTER TABLE ONLY memsub.search_stats FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.search_stats OWNER TO memsub_owner;

COMMENT ON TABLE memsub.search_stats IS 'Per tenant and embedding type: row counts and the measured recall of the HNSW walk, written by memsub.tune_search() and read by memsub.semantic_search to choose exact or approximate search.';

COMMENT ON COLUMN memsub.search_stats.tenant_id IS 'Tenant (row-level security).';

COMMENT ON COLUMN memsub.search_stats.embedding_type IS 'Vector space: content, context, entity, summary or reasoning.';

COMMENT ON COLUMN memsub.search_stats.row_count IS 'Embeddings of this type the tenant held when measured.';

COMMENT ON COLUMN memsub.search_stats.type_rows IS 'Embeddings of this type in the tenant''s partition of memory_embeddings (the HNSW graph its walk reads) when measured.';

COMMENT ON COLUMN memsub.search_stats.ef_search IS 'hnsw.ef_search the recall was measured at: the smallest one tried, from the derived one up, at which the recall''s lower bound (recall_bound) reached 0.95, or the largest one tried when none did (NULL: not measured).';

COMMENT ON COLUMN memsub.search_stats.recall IS 'Mean recall@10 of the HNSW walk at ef_search against the exact scan over the sample queries (NULL: not measured: the exact scan is cheaper for this tenant). semantic_search decides by recall_bound.';

COMMENT ON COLUMN memsub.search_stats.samples IS 'Sample queries the recall was measured on.';

COMMENT ON COLUMN memsub.search_stats.measured_at IS 'When the row was written.';

COMMENT ON COLUMN memsub.search_stats.recall_bound IS 'One-sided 95 % lower confidence bound of the mean recall@10 over the sample queries (memsub._recall_lower_bound): semantic_search walks the tenant at ef_search only where it reaches 0.95 (NULL: not measured).';

ALTER TABLE memsub.tasks ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME memsub.tasks_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE VIEW memsub.tenant_agent_recent_important WITH (security_barrier='true') AS
 SELECT tenant_id,
    agent_id,
    packet_id,
    packet_type,
    "timestamp",
    importance_score,
    access_count,
    tags,
    scope,
    combined_score
   FROM memsub.mv_agent_recent_important m
  WHERE (((expires_at IS NULL) OR (expires_at > ( SELECT now() AS now))) AND (( SELECT pg_has_role('memsub_analyst'::name, 'usage'::text) AS pg_has_role) OR (((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)) AND ((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)) AND ((scope = 'shared'::text) OR ((scope = 'l-private'::text) AND (user_id = ( SELECT memsub.current_user_id() AS current_user_id))) OR ((scope = 'cursor'::text) AND ((user_id = ( SELECT memsub.current_user_id() AS current_user_id)) OR (session_id = ( SELECT memsub.current_session_id() AS current_session_id)))) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)))));

ALTER VIEW memsub.tenant_agent_recent_important OWNER TO memsub_owner;

COMMENT ON VIEW memsub.tenant_agent_recent_important IS 'mv_agent_recent_important as the caller may see it: its tenant, its organization, the scopes the packet policies allow (every tenant for memsub_analyst), and only packets that have not expired, whenever the view was refreshed (security barrier).';

COMMENT ON COLUMN memsub.tenant_agent_recent_important.tenant_id IS 'Tenant of the packet.';

COMMENT ON COLUMN memsub.tenant_agent_recent_important.agent_id IS 'The agent that wrote it (routing.agent).';

COMMENT ON COLUMN memsub.tenant_agent_recent_important.packet_id IS 'The packet (packet_store.packet_id).';

COMMENT ON COLUMN memsub.tenant_agent_recent_important.packet_type IS 'Kind of packet (packet_store.packet_type).';

COMMENT ON COLUMN memsub.tenant_agent_recent_important."timestamp" IS 'When the packet happened (within the 30 days before the refresh).';

COMMENT ON COLUMN memsub.tenant_agent_recent_important.importance_score IS 'Learned importance in [0, 1] at the refresh (0.7 or more).';

COMMENT ON COLUMN memsub.tenant_agent_recent_important.access_count IS 'Retrievals of the packet at the refresh.';

COMMENT ON COLUMN memsub.tenant_agent_recent_important.tags IS 'Tags of the packet.';

COMMENT ON COLUMN memsub.tenant_agent_recent_important.scope IS 'Memory isolation scope: shared, cursor or l-private.';

COMMENT ON COLUMN memsub.tenant_agent_recent_important.combined_score IS '0.6 importance + 0.2 access (log scale, 100 accesses = 1) + 0.2 recency (1 now, 0 after 30 days), at the refresh.';

CREATE VIEW memsub.tenant_entity_graph WITH (security_barrier='true') AS
 SELECT tenant_id,
    source_entity,
    relationship_type,
    target_entity,
    total_mentions,
    max_confidence,
    avg_confidence,
    last_seen,
    relationship_count
   FROM memsub.mv_entity_graph m
  WHERE (((expires_at IS NULL) OR (expires_at > ( SELECT now() AS now))) AND ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin) OR ( SELECT pg_has_role('memsub_analyst'::name, 'usage'::text) AS pg_has_role)));

ALTER VIEW memsub.tenant_entity_graph OWNER TO memsub_owner;

COMMENT ON VIEW memsub.tenant_entity_graph IS 'mv_entity_graph of the caller''s tenant only (every tenant for memsub_analyst), without rows made of an edge that has expired since the refresh (security barrier).';

COMMENT ON COLUMN memsub.tenant_entity_graph.tenant_id IS 'Tenant of the edges.';

COMMENT ON COLUMN memsub.tenant_entity_graph.source_entity IS 'Matching form of the source entity (entity_relationships.source_key).';

COMMENT ON COLUMN memsub.tenant_entity_graph.relationship_type IS 'Relationship type of the edges.';

COMMENT ON COLUMN memsub.tenant_entity_graph.target_entity IS 'Matching form of the target entity (entity_relationships.target_key).';

COMMENT ON COLUMN memsub.tenant_entity_graph.total_mentions IS 'Sum of the mention counts of the edges valid now.';

COMMENT ON COLUMN memsub.tenant_entity_graph.max_confidence IS 'Highest confidence among those edges.';

COMMENT ON COLUMN memsub.tenant_entity_graph.avg_confidence IS 'Mean confidence of those edges.';

COMMENT ON COLUMN memsub.tenant_entity_graph.last_seen IS 'When any of those edges was last seen.';

COMMENT ON COLUMN memsub.tenant_entity_graph.relationship_count IS 'Number of edges (spellings of the two entities) grouped into this row.';

CREATE VIEW memsub.tenant_high_confidence_facts WITH (security_barrier='true') AS
 SELECT tenant_id,
    fact_id,
    subject,
    subject_normalized,
    predicate,
    object,
    confidence,
    supporting_packet_count,
    access_count,
    combined_score
   FROM memsub.mv_high_confidence_facts m
  WHERE (((expires_at IS NULL) OR (expires_at > ( SELECT now() AS now))) AND ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin) OR ( SELECT pg_has_role('memsub_analyst'::name, 'usage'::text) AS pg_has_role)));

ALTER VIEW memsub.tenant_high_confidence_facts OWNER TO memsub_owner;

COMMENT ON VIEW memsub.tenant_high_confidence_facts IS 'mv_high_confidence_facts of the caller''s tenant only (every tenant for memsub_analyst), without facts that have expired since the refresh (security barrier).';

COMMENT ON COLUMN memsub.tenant_high_confidence_facts.tenant_id IS 'Tenant of the fact.';

COMMENT ON COLUMN memsub.tenant_high_confidence_facts.fact_id IS 'The fact (knowledge_facts.fact_id).';

COMMENT ON COLUMN memsub.tenant_high_confidence_facts.subject IS 'Subject as written.';

COMMENT ON COLUMN memsub.tenant_high_confidence_facts.subject_normalized IS 'Matching form of the subject.';

COMMENT ON COLUMN memsub.tenant_high_confidence_facts.predicate IS 'Predicate of the fact.';

COMMENT ON COLUMN memsub.tenant_high_confidence_facts.object IS 'Object of the fact (JSON).';

COMMENT ON COLUMN memsub.tenant_high_confidence_facts.confidence IS 'Confidence in [0, 1] at the refresh (0.6 or more).';

COMMENT ON COLUMN memsub.tenant_high_confidence_facts.supporting_packet_count IS 'Packets that asserted the fact.';

COMMENT ON COLUMN memsub.tenant_high_confidence_facts.access_count IS 'Retrievals of the fact at the refresh.';

COMMENT ON COLUMN memsub.tenant_high_confidence_facts.combined_score IS '0.6 confidence + 0.25 support (log scale, 10 packets = 1) + 0.15 access (log scale, 100 accesses = 1), at the refresh.';

CREATE VIEW memsub.tenant_reflection_patterns WITH (security_barrier='true') AS
 SELECT tenant_id,
    org_id,
    reflection_type,
    count,
    avg_confidence,
    all_tags,
    latest
   FROM memsub.mv_reflection_patterns m
  WHERE (((expires_at IS NULL) OR (expires_at > ( SELECT now() AS now))) AND (( SELECT pg_has_role('memsub_analyst'::name, 'usage'::text) AS pg_has_role) OR (((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)) AND ((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)))));

ALTER VIEW memsub.tenant_reflection_patterns OWNER TO memsub_owner;

COMMENT ON VIEW memsub.tenant_reflection_patterns IS 'mv_reflection_patterns of the caller''s tenant: the tenant-wide rows (org_id NULL) and its organization''s (every tenant for memsub_analyst), without rows made of a reflection that has expired since the refresh (security barrier).';

COMMENT ON COLUMN memsub.tenant_reflection_patterns.tenant_id IS 'Tenant of the reflections.';

COMMENT ON COLUMN memsub.tenant_reflection_patterns.org_id IS 'Organization of the reflections (NULL: tenant-wide).';

COMMENT ON COLUMN memsub.tenant_reflection_patterns.reflection_type IS 'Reflection type the row counts.';

COMMENT ON COLUMN memsub.tenant_reflection_patterns.count IS 'Reflections of this type not expired at the refresh.';

COMMENT ON COLUMN memsub.tenant_reflection_patterns.avg_confidence IS 'Mean confidence of those reflections.';

COMMENT ON COLUMN memsub.tenant_reflection_patterns.all_tags IS 'Every tag used by those reflections, sorted, each once.';

COMMENT ON COLUMN memsub.tenant_reflection_patterns.latest IS 'When the newest of those reflections was created.';

CREATE TABLE memsub.world_model_state (
    tenant_id uuid NOT NULL,
    state_version integer DEFAULT 0 NOT NULL,
    updated_at timestamp without time zone DEFAULT (now() AT TIME ZONE 'UTC'::text) NOT NULL,
    org_id uuid,
    user_id uuid,
    CONSTRAINT world_model_state_version_non_negative CHECK ((state_version >= 0))
);

ALTER TABLE ONLY memsub.world_model_state FORCE ROW LEVEL SECURITY;

ALTER TABLE memsub.world_model_state OWNER TO memsub_owner;

COMMENT ON TABLE memsub.world_model_state IS 'Current world-model state version per tenant; its row is the lock that serializes world-model updates.';

COMMENT ON COLUMN memsub.world_model_state.tenant_id IS 'Tenant isolation.';

COMMENT ON COLUMN memsub.world_model_state.state_version IS 'Version of the tenant''s world model: +1 per applied update.';

COMMENT ON COLUMN memsub.world_model_state.updated_at IS 'Time of the last applied update (UTC).';

COMMENT ON COLUMN memsub.world_model_state.org_id IS 'Organization of the last updater.';

COMMENT ON COLUMN memsub.world_model_state.user_id IS 'User of the last updater.';

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p00 FOR VALUES WITH (modulus 16, remainder 0);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p01 FOR VALUES WITH (modulus 16, remainder 1);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p02 FOR VALUES WITH (modulus 16, remainder 2);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p03 FOR VALUES WITH (modulus 16, remainder 3);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p04 FOR VALUES WITH (modulus 16, remainder 4);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p05 FOR VALUES WITH (modulus 16, remainder 5);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p06 FOR VALUES WITH (modulus 16, remainder 6);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p07 FOR VALUES WITH (modulus 16, remainder 7);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p08 FOR VALUES WITH (modulus 16, remainder 8);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p09 FOR VALUES WITH (modulus 16, remainder 9);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p10 FOR VALUES WITH (modulus 16, remainder 10);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p11 FOR VALUES WITH (modulus 16, remainder 11);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p12 FOR VALUES WITH (modulus 16, remainder 12);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p13 FOR VALUES WITH (modulus 16, remainder 13);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p14 FOR VALUES WITH (modulus 16, remainder 14);

ALTER TABLE ONLY memsub.memory_embeddings ATTACH PARTITION memsub.memory_embeddings_p15 FOR VALUES WITH (modulus 16, remainder 15);

ALTER TABLE ONLY memsub.adk_app_states
    ADD CONSTRAINT adk_app_states_pkey PRIMARY KEY (tenant_id, org_key, app_name);

ALTER TABLE ONLY memsub.adk_events
    ADD CONSTRAINT adk_events_pkey PRIMARY KEY (tenant_id, org_key, app_name, user_id, session_id, "position");

ALTER TABLE ONLY memsub.adk_memories
    ADD CONSTRAINT adk_memories_pkey PRIMARY KEY (tenant_id, org_key, app_name, user_id, session_id, event_id);

ALTER TABLE ONLY memsub.adk_sessions
    ADD CONSTRAINT adk_sessions_pkey PRIMARY KEY (tenant_id, org_key, app_name, user_id, id);

ALTER TABLE ONLY memsub.adk_user_states
    ADD CONSTRAINT adk_user_states_pkey PRIMARY KEY (tenant_id, org_key, app_name, user_id);

ALTER TABLE ONLY memsub.agent_memory_events
    ADD CONSTRAINT agent_memory_events_pkey PRIMARY KEY (tenant_id, event_id);

ALTER TABLE ONLY memsub.agent_session_items
    ADD CONSTRAINT agent_session_items_pkey PRIMARY KEY (tenant_id, session_id, item_id);

ALTER TABLE ONLY memsub.agents
    ADD CONSTRAINT agents_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY memsub.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (tenant_id, key_id);

ALTER TABLE ONLY memsub.audit
    ADD CONSTRAINT audit_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY memsub.checkpoints
    ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY memsub.checkpoints
    ADD CONSTRAINT checkpoints_sequence_key UNIQUE (tenant_id, task_id, sequence);

ALTER TABLE ONLY memsub.context_keys
    ADD CONSTRAINT context_keys_pkey PRIMARY KEY (key_id);

ALTER TABLE ONLY memsub.document_chunks
    ADD CONSTRAINT document_chunks_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY memsub.document_chunks
    ADD CONSTRAINT document_chunks_position_key UNIQUE (tenant_id, document_id, chunk_index);

ALTER TABLE ONLY memsub.document_index
    ADD CONSTRAINT document_index_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY memsub.document_index
    ADD CONSTRAINT document_index_version_key UNIQUE (tenant_id, file_path, version);

ALTER TABLE ONLY memsub.entity_relationships
    ADD CONSTRAINT entity_relationships_no_overlapping_windows EXCLUDE USING gist (tenant_id WITH =, source_key WITH =, relationship_type WITH =, target_key WITH =, valid_period WITH &&) DEFERRABLE;

ALTER TABLE ONLY memsub.entity_relationships
    ADD CONSTRAINT entity_relationships_pkey PRIMARY KEY (tenant_id, relationship_id);

ALTER TABLE ONLY memsub.importance_learning_runs
    ADD CONSTRAINT importance_learning_runs_pkey PRIMARY KEY (tenant_id, run_id);

ALTER TABLE ONLY memsub.installation_settings
    ADD CONSTRAINT installation_settings_pkey PRIMARY KEY (name);

ALTER TABLE ONLY memsub.knowledge_facts
    ADD CONSTRAINT knowledge_facts_fact_key UNIQUE (tenant_id, subject_normalized, predicate, object_normalized);

ALTER TABLE ONLY memsub.knowledge_facts
    ADD CONSTRAINT knowledge_facts_pkey PRIMARY KEY (tenant_id, fact_id);

ALTER TABLE ONLY memsub.langgraph_checkpoint_writes
    ADD CONSTRAINT langgraph_checkpoint_writes_pkey PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx);

ALTER TABLE ONLY memsub.langgraph_checkpoints
    ADD CONSTRAINT langgraph_checkpoints_pkey PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id);

ALTER TABLE ONLY memsub.langgraph_store_items
    ADD CONSTRAINT langgraph_store_items_pkey PRIMARY KEY (tenant_id, namespace_key, key);

ALTER TABLE ONLY memsub.langgraph_store_vectors
    ADD CONSTRAINT langgraph_store_vectors_pkey PRIMARY KEY (tenant_id, namespace_key, key, field_name);

ALTER TABLE ONLY memsub.limits
    ADD CONSTRAINT limits_pkey PRIMARY KEY (name);

ALTER TABLE ONLY memsub.login_bindings
    ADD CONSTRAINT login_bindings_key UNIQUE NULLS NOT DISTINCT (login, bound_tenant_id, bound_org_id);

ALTER TABLE ONLY memsub.login_bindings
    ADD CONSTRAINT login_bindings_pkey PRIMARY KEY (binding_id);

ALTER TABLE ONLY memsub.maintenance_lock
    ADD CONSTRAINT maintenance_lock_pkey PRIMARY KEY (task, lock_key);

ALTER TABLE ONLY memsub.memory_access_log
    ADD CONSTRAINT memory_access_log_pkey PRIMARY KEY (tenant_id, access_id);

ALTER TABLE ONLY memsub.memory_embeddings
    ADD CONSTRAINT memory_embeddings_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p00
    ADD CONSTRAINT memory_embeddings_p00_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings
    ADD CONSTRAINT memory_embeddings_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p00
    ADD CONSTRAINT memory_embeddings_p00_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p01
    ADD CONSTRAINT memory_embeddings_p01_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p01
    ADD CONSTRAINT memory_embeddings_p01_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p02
    ADD CONSTRAINT memory_embeddings_p02_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p02
    ADD CONSTRAINT memory_embeddings_p02_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p03
    ADD CONSTRAINT memory_embeddings_p03_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p03
    ADD CONSTRAINT memory_embeddings_p03_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p04
    ADD CONSTRAINT memory_embeddings_p04_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p04
    ADD CONSTRAINT memory_embeddings_p04_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p05
    ADD CONSTRAINT memory_embeddings_p05_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p05
    ADD CONSTRAINT memory_embeddings_p05_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p06
    ADD CONSTRAINT memory_embeddings_p06_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p06
    ADD CONSTRAINT memory_embeddings_p06_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p07
    ADD CONSTRAINT memory_embeddings_p07_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p07
    ADD CONSTRAINT memory_embeddings_p07_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p08
    ADD CONSTRAINT memory_embeddings_p08_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p08
    ADD CONSTRAINT memory_embeddings_p08_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p09
    ADD CONSTRAINT memory_embeddings_p09_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p09
    ADD CONSTRAINT memory_embeddings_p09_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p10
    ADD CONSTRAINT memory_embeddings_p10_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p10
    ADD CONSTRAINT memory_embeddings_p10_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p11
    ADD CONSTRAINT memory_embeddings_p11_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p11
    ADD CONSTRAINT memory_embeddings_p11_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p12
    ADD CONSTRAINT memory_embeddings_p12_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p12
    ADD CONSTRAINT memory_embeddings_p12_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p13
    ADD CONSTRAINT memory_embeddings_p13_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p13
    ADD CONSTRAINT memory_embeddings_p13_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p14
    ADD CONSTRAINT memory_embeddings_p14_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p14
    ADD CONSTRAINT memory_embeddings_p14_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_embeddings_p15
    ADD CONSTRAINT memory_embeddings_p15_chunk_key UNIQUE (tenant_id, packet_id, embedding_type, chunk_index);

ALTER TABLE ONLY memsub.memory_embeddings_p15
    ADD CONSTRAINT memory_embeddings_p15_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.memory_entries
    ADD CONSTRAINT memory_entries_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY memsub.memory_entries
    ADD CONSTRAINT memory_entries_version_key UNIQUE (tenant_id, namespace, key, version);

ALTER TABLE ONLY memsub.memory_summaries
    ADD CONSTRAINT memory_summaries_pkey PRIMARY KEY (tenant_id, summary_id);

ALTER TABLE ONLY memsub.memory_view_refresh_log
    ADD CONSTRAINT memory_view_refresh_log_pkey PRIMARY KEY (refresh_id);

ALTER TABLE ONLY memsub.packet_store
    ADD CONSTRAINT packet_store_pkey PRIMARY KEY (tenant_id, packet_id);

ALTER TABLE ONLY memsub.packet_threads
    ADD CONSTRAINT packet_threads_pkey PRIMARY KEY (tenant_id, thread_id);

ALTER TABLE ONLY memsub.packet_tombstones
    ADD CONSTRAINT packet_tombstones_pkey PRIMARY KEY (tenant_id, packet_id);

ALTER TABLE ONLY memsub.reasoning_traces
    ADD CONSTRAINT reasoning_traces_pkey PRIMARY KEY (tenant_id, trace_id);

ALTER TABLE ONLY memsub.reflection_store
    ADD CONSTRAINT reflection_store_pkey PRIMARY KEY (tenant_id, reflection_id);

ALTER TABLE ONLY memsub.schema_history
    ADD CONSTRAINT schema_history_pkey PRIMARY KEY (version);

ALTER TABLE ONLY memsub.schema_repeatable_history
    ADD CONSTRAINT schema_repeatable_history_pkey PRIMARY KEY (file_name);

ALTER TABLE ONLY memsub.search_stats
    ADD CONSTRAINT search_stats_pkey PRIMARY KEY (tenant_id, embedding_type);

ALTER TABLE ONLY memsub.semantic_memory
    ADD CONSTRAINT semantic_memory_pkey PRIMARY KEY (tenant_id, embedding_id);

ALTER TABLE ONLY memsub.session_events
    ADD CONSTRAINT session_events_pkey PRIMARY KEY (tenant_id, session_id, "position");

ALTER TABLE ONLY memsub.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY memsub.task_reflections
    ADD CONSTRAINT task_reflections_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY memsub.task_reflections
    ADD CONSTRAINT task_reflections_task_key UNIQUE (tenant_id, task_id);

ALTER TABLE ONLY memsub.tasks
    ADD CONSTRAINT tasks_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY memsub.world_model_entities
    ADD CONSTRAINT world_model_entities_pkey PRIMARY KEY (tenant_id, entity_id);

ALTER TABLE ONLY memsub.world_model_snapshots
    ADD CONSTRAINT world_model_snapshots_pkey PRIMARY KEY (tenant_id, snapshot_id);

ALTER TABLE ONLY memsub.world_model_state
    ADD CONSTRAINT world_model_state_pkey PRIMARY KEY (tenant_id);

ALTER TABLE ONLY memsub.world_model_updates
    ADD CONSTRAINT world_model_updates_pkey PRIMARY KEY (tenant_id, update_id);

ALTER TABLE ONLY memsub.world_model_updates
    ADD CONSTRAINT world_model_updates_version_key UNIQUE (tenant_id, state_version_after);

CREATE INDEX adk_events_time_idx ON memsub.adk_events USING btree (tenant_id, org_key, app_name, user_id, session_id, "timestamp");

CREATE INDEX adk_memories_words_idx ON memsub.adk_memories USING gin (words);

CREATE INDEX api_keys_key_id ON memsub.api_keys USING btree (key_id);

CREATE INDEX idx_agent_memory_events_agent ON memsub.agent_memory_events USING btree (tenant_id, agent_id, "timestamp" DESC);

CREATE INDEX idx_agent_memory_events_packet ON memsub.agent_memory_events USING btree (tenant_id, packet_id) WHERE (packet_id IS NOT NULL);

CREATE INDEX idx_agent_memory_events_ttl ON memsub.agent_memory_events USING btree (ttl) WHERE (ttl IS NOT NULL);

COMMENT ON INDEX memsub.idx_agent_memory_events_ttl IS 'Expired events for purge_expired().';

CREATE INDEX idx_agents_session ON memsub.agents USING btree (tenant_id, session_id) WHERE (session_id IS NOT NULL);

CREATE INDEX idx_agents_task ON memsub.agents USING btree (tenant_id, task_id) WHERE (task_id IS NOT NULL);

CREATE INDEX idx_audit_agent ON memsub.audit USING btree (tenant_id, agent_id) WHERE (agent_id IS NOT NULL);

CREATE INDEX idx_audit_key ON memsub.audit USING btree (tenant_id, namespace, key, created_at) WHERE (namespace IS NOT NULL);

CREATE INDEX idx_audit_memory_entry ON memsub.audit USING btree (tenant_id, memory_entry_id) WHERE (memory_entry_id IS NOT NULL);

CREATE INDEX idx_audit_session ON memsub.audit USING btree (tenant_id, session_id) WHERE (session_id IS NOT NULL);

CREATE INDEX idx_audit_task ON memsub.audit USING btree (tenant_id, task_id) WHERE (task_id IS NOT NULL);

CREATE INDEX idx_checkpoints_session ON memsub.checkpoints USING btree (tenant_id, session_id) WHERE (session_id IS NOT NULL);

CREATE INDEX idx_document_chunks_tsv ON memsub.document_chunks USING gin (content_tsv);

COMMENT ON INDEX memsub.idx_document_chunks_tsv IS 'Full-text search over chunk content.';

CREATE INDEX idx_document_index_hash ON memsub.document_index USING btree (tenant_id, hash) WHERE (hash IS NOT NULL);

COMMENT ON INDEX memsub.idx_document_index_hash IS 'Finds document versions by content hash.';

CREATE UNIQUE INDEX idx_document_index_latest ON memsub.document_index USING btree (tenant_id, file_path) WHERE is_latest;

COMMENT ON INDEX memsub.idx_document_index_latest IS 'Latest pointer per path: one latest version of each file path per tenant.';

CREATE INDEX idx_document_index_previous ON memsub.document_index USING btree (tenant_id, previous_id) WHERE (previous_id IS NOT NULL);

COMMENT ON INDEX memsub.idx_document_index_previous IS 'Walks the version chain forward (which version replaced this one).';

CREATE INDEX idx_embeddings_vector_content ON ONLY memsub.memory_embeddings USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content IS 'HNSW over the content embeddings only, of each vector scaled to length 1 in half precision (inner product): one graph per partition of memory_embeddings (idx_embeddings_vector_content_p00 ... _p15); a search of one tenant walks its partition''s.';

CREATE INDEX idx_embeddings_vector_content_p00 ON memsub.memory_embeddings_p00 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p00 IS 'The part of idx_embeddings_vector_content on partition 0 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p01 ON memsub.memory_embeddings_p01 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p01 IS 'The part of idx_embeddings_vector_content on partition 1 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p02 ON memsub.memory_embeddings_p02 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p02 IS 'The part of idx_embeddings_vector_content on partition 2 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p03 ON memsub.memory_embeddings_p03 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p03 IS 'The part of idx_embeddings_vector_content on partition 3 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p04 ON memsub.memory_embeddings_p04 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p04 IS 'The part of idx_embeddings_vector_content on partition 4 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p05 ON memsub.memory_embeddings_p05 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p05 IS 'The part of idx_embeddings_vector_content on partition 5 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p06 ON memsub.memory_embeddings_p06 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p06 IS 'The part of idx_embeddings_vector_content on partition 6 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p07 ON memsub.memory_embeddings_p07 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p07 IS 'The part of idx_embeddings_vector_content on partition 7 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p08 ON memsub.memory_embeddings_p08 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p08 IS 'The part of idx_embeddings_vector_content on partition 8 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p09 ON memsub.memory_embeddings_p09 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p09 IS 'The part of idx_embeddings_vector_content on partition 9 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p10 ON memsub.memory_embeddings_p10 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p10 IS 'The part of idx_embeddings_vector_content on partition 10 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p11 ON memsub.memory_embeddings_p11 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p11 IS 'The part of idx_embeddings_vector_content on partition 11 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p12 ON memsub.memory_embeddings_p12 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p12 IS 'The part of idx_embeddings_vector_content on partition 12 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p13 ON memsub.memory_embeddings_p13 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p13 IS 'The part of idx_embeddings_vector_content on partition 13 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p14 ON memsub.memory_embeddings_p14 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p14 IS 'The part of idx_embeddings_vector_content on partition 14 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_content_p15 ON memsub.memory_embeddings_p15 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'content'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_content_p15 IS 'The part of idx_embeddings_vector_content on partition 15 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context ON ONLY memsub.memory_embeddings USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context IS 'HNSW over the context embeddings only, of each vector scaled to length 1 in half precision (inner product): one graph per partition of memory_embeddings (idx_embeddings_vector_context_p00 ... _p15); a search of one tenant walks its partition''s.';

CREATE INDEX idx_embeddings_vector_context_p00 ON memsub.memory_embeddings_p00 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p00 IS 'The part of idx_embeddings_vector_context on partition 0 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p01 ON memsub.memory_embeddings_p01 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p01 IS 'The part of idx_embeddings_vector_context on partition 1 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p02 ON memsub.memory_embeddings_p02 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p02 IS 'The part of idx_embeddings_vector_context on partition 2 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p03 ON memsub.memory_embeddings_p03 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p03 IS 'The part of idx_embeddings_vector_context on partition 3 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p04 ON memsub.memory_embeddings_p04 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p04 IS 'The part of idx_embeddings_vector_context on partition 4 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p05 ON memsub.memory_embeddings_p05 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p05 IS 'The part of idx_embeddings_vector_context on partition 5 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p06 ON memsub.memory_embeddings_p06 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p06 IS 'The part of idx_embeddings_vector_context on partition 6 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p07 ON memsub.memory_embeddings_p07 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p07 IS 'The part of idx_embeddings_vector_context on partition 7 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p08 ON memsub.memory_embeddings_p08 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p08 IS 'The part of idx_embeddings_vector_context on partition 8 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p09 ON memsub.memory_embeddings_p09 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p09 IS 'The part of idx_embeddings_vector_context on partition 9 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p10 ON memsub.memory_embeddings_p10 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p10 IS 'The part of idx_embeddings_vector_context on partition 10 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p11 ON memsub.memory_embeddings_p11 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p11 IS 'The part of idx_embeddings_vector_context on partition 11 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p12 ON memsub.memory_embeddings_p12 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p12 IS 'The part of idx_embeddings_vector_context on partition 12 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p13 ON memsub.memory_embeddings_p13 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p13 IS 'The part of idx_embeddings_vector_context on partition 13 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p14 ON memsub.memory_embeddings_p14 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p14 IS 'The part of idx_embeddings_vector_context on partition 14 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_context_p15 ON memsub.memory_embeddings_p15 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'context'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_context_p15 IS 'The part of idx_embeddings_vector_context on partition 15 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity ON ONLY memsub.memory_embeddings USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity IS 'HNSW over the entity embeddings only, of each vector scaled to length 1 in half precision (inner product): one graph per partition of memory_embeddings (idx_embeddings_vector_entity_p00 ... _p15); a search of one tenant walks its partition''s.';

CREATE INDEX idx_embeddings_vector_entity_p00 ON memsub.memory_embeddings_p00 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p00 IS 'The part of idx_embeddings_vector_entity on partition 0 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p01 ON memsub.memory_embeddings_p01 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p01 IS 'The part of idx_embeddings_vector_entity on partition 1 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p02 ON memsub.memory_embeddings_p02 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p02 IS 'The part of idx_embeddings_vector_entity on partition 2 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p03 ON memsub.memory_embeddings_p03 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p03 IS 'The part of idx_embeddings_vector_entity on partition 3 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p04 ON memsub.memory_embeddings_p04 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p04 IS 'The part of idx_embeddings_vector_entity on partition 4 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p05 ON memsub.memory_embeddings_p05 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p05 IS 'The part of idx_embeddings_vector_entity on partition 5 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p06 ON memsub.memory_embeddings_p06 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p06 IS 'The part of idx_embeddings_vector_entity on partition 6 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p07 ON memsub.memory_embeddings_p07 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p07 IS 'The part of idx_embeddings_vector_entity on partition 7 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p08 ON memsub.memory_embeddings_p08 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p08 IS 'The part of idx_embeddings_vector_entity on partition 8 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p09 ON memsub.memory_embeddings_p09 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p09 IS 'The part of idx_embeddings_vector_entity on partition 9 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p10 ON memsub.memory_embeddings_p10 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p10 IS 'The part of idx_embeddings_vector_entity on partition 10 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p11 ON memsub.memory_embeddings_p11 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p11 IS 'The part of idx_embeddings_vector_entity on partition 11 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p12 ON memsub.memory_embeddings_p12 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p12 IS 'The part of idx_embeddings_vector_entity on partition 12 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p13 ON memsub.memory_embeddings_p13 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p13 IS 'The part of idx_embeddings_vector_entity on partition 13 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p14 ON memsub.memory_embeddings_p14 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p14 IS 'The part of idx_embeddings_vector_entity on partition 14 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_entity_p15 ON memsub.memory_embeddings_p15 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'entity'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_entity_p15 IS 'The part of idx_embeddings_vector_entity on partition 15 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning ON ONLY memsub.memory_embeddings USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning IS 'HNSW over the reasoning embeddings only, of each vector scaled to length 1 in half precision (inner product): one graph per partition of memory_embeddings (idx_embeddings_vector_reasoning_p00 ... _p15); a search of one tenant walks its partition''s.';

CREATE INDEX idx_embeddings_vector_reasoning_p00 ON memsub.memory_embeddings_p00 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p00 IS 'The part of idx_embeddings_vector_reasoning on partition 0 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p01 ON memsub.memory_embeddings_p01 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p01 IS 'The part of idx_embeddings_vector_reasoning on partition 1 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p02 ON memsub.memory_embeddings_p02 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p02 IS 'The part of idx_embeddings_vector_reasoning on partition 2 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p03 ON memsub.memory_embeddings_p03 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p03 IS 'The part of idx_embeddings_vector_reasoning on partition 3 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p04 ON memsub.memory_embeddings_p04 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p04 IS 'The part of idx_embeddings_vector_reasoning on partition 4 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p05 ON memsub.memory_embeddings_p05 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p05 IS 'The part of idx_embeddings_vector_reasoning on partition 5 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p06 ON memsub.memory_embeddings_p06 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p06 IS 'The part of idx_embeddings_vector_reasoning on partition 6 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p07 ON memsub.memory_embeddings_p07 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p07 IS 'The part of idx_embeddings_vector_reasoning on partition 7 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p08 ON memsub.memory_embeddings_p08 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p08 IS 'The part of idx_embeddings_vector_reasoning on partition 8 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p09 ON memsub.memory_embeddings_p09 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p09 IS 'The part of idx_embeddings_vector_reasoning on partition 9 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p10 ON memsub.memory_embeddings_p10 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p10 IS 'The part of idx_embeddings_vector_reasoning on partition 10 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p11 ON memsub.memory_embeddings_p11 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p11 IS 'The part of idx_embeddings_vector_reasoning on partition 11 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p12 ON memsub.memory_embeddings_p12 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p12 IS 'The part of idx_embeddings_vector_reasoning on partition 12 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p13 ON memsub.memory_embeddings_p13 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p13 IS 'The part of idx_embeddings_vector_reasoning on partition 13 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p14 ON memsub.memory_embeddings_p14 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p14 IS 'The part of idx_embeddings_vector_reasoning on partition 14 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_reasoning_p15 ON memsub.memory_embeddings_p15 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'reasoning'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_reasoning_p15 IS 'The part of idx_embeddings_vector_reasoning on partition 15 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary ON ONLY memsub.memory_embeddings USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary IS 'HNSW over the summary embeddings only, of each vector scaled to length 1 in half precision (inner product): one graph per partition of memory_embeddings (idx_embeddings_vector_summary_p00 ... _p15); a search of one tenant walks its partition''s.';

CREATE INDEX idx_embeddings_vector_summary_p00 ON memsub.memory_embeddings_p00 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p00 IS 'The part of idx_embeddings_vector_summary on partition 0 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p01 ON memsub.memory_embeddings_p01 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p01 IS 'The part of idx_embeddings_vector_summary on partition 1 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p02 ON memsub.memory_embeddings_p02 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p02 IS 'The part of idx_embeddings_vector_summary on partition 2 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p03 ON memsub.memory_embeddings_p03 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p03 IS 'The part of idx_embeddings_vector_summary on partition 3 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p04 ON memsub.memory_embeddings_p04 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p04 IS 'The part of idx_embeddings_vector_summary on partition 4 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p05 ON memsub.memory_embeddings_p05 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p05 IS 'The part of idx_embeddings_vector_summary on partition 5 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p06 ON memsub.memory_embeddings_p06 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p06 IS 'The part of idx_embeddings_vector_summary on partition 6 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p07 ON memsub.memory_embeddings_p07 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p07 IS 'The part of idx_embeddings_vector_summary on partition 7 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p08 ON memsub.memory_embeddings_p08 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p08 IS 'The part of idx_embeddings_vector_summary on partition 8 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p09 ON memsub.memory_embeddings_p09 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p09 IS 'The part of idx_embeddings_vector_summary on partition 9 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p10 ON memsub.memory_embeddings_p10 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p10 IS 'The part of idx_embeddings_vector_summary on partition 10 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p11 ON memsub.memory_embeddings_p11 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p11 IS 'The part of idx_embeddings_vector_summary on partition 11 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p12 ON memsub.memory_embeddings_p12 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p12 IS 'The part of idx_embeddings_vector_summary on partition 12 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p13 ON memsub.memory_embeddings_p13 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p13 IS 'The part of idx_embeddings_vector_summary on partition 13 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p14 ON memsub.memory_embeddings_p14 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p14 IS 'The part of idx_embeddings_vector_summary on partition 14 of memory_embeddings.';

CREATE INDEX idx_embeddings_vector_summary_p15 ON memsub.memory_embeddings_p15 USING hnsw (((public.l2_normalize(vector))::public.halfvec(1536)) public.halfvec_ip_ops) WHERE (embedding_type = 'summary'::text);

COMMENT ON INDEX memsub.idx_embeddings_vector_summary_p15 IS 'The part of idx_embeddings_vector_summary on partition 15 of memory_embeddings.';

CREATE UNIQUE INDEX idx_entity_relationships_edge ON memsub.entity_relationships USING btree (tenant_id, source_key, relationship_type, target_key) WHERE upper_inf(valid_period);

COMMENT ON INDEX memsub.idx_entity_relationships_edge IS 'The seed''s unique edge key over the matching form of the entity names, for the current (open-ended) window of each edge: the arbiter of the relationship UPSERT.';

CREATE INDEX idx_entity_relationships_source_packet ON memsub.entity_relationships USING btree (tenant_id, source_packet) WHERE (source_packet IS NOT NULL);

CREATE INDEX idx_entity_relationships_target ON memsub.entity_relationships USING btree (tenant_id, target_key);

COMMENT ON INDEX memsub.idx_entity_relationships_target IS 'Incoming edges of an entity (by matching form).';

CREATE INDEX idx_entity_relationships_ttl ON memsub.entity_relationships USING btree (ttl) WHERE (ttl IS NOT NULL);

COMMENT ON INDEX memsub.idx_entity_relationships_ttl IS 'Expired edge windows for purge_expired().';

CREATE INDEX idx_importance_learning_runs_time ON memsub.importance_learning_runs USING btree (tenant_id, finished_at DESC);

CREATE INDEX idx_knowledge_facts_source_packet ON memsub.knowledge_facts USING btree (tenant_id, source_packet) WHERE (source_packet IS NOT NULL);

CREATE INDEX idx_knowledge_facts_ttl ON memsub.knowledge_facts USING btree (ttl) WHERE (ttl IS NOT NULL);

COMMENT ON INDEX memsub.idx_knowledge_facts_ttl IS 'Expired facts for purge_expired().';

CREATE INDEX idx_memory_access_log_target ON memsub.memory_access_log USING btree (tenant_id, target_type, target_id, accessed_at DESC);

CREATE INDEX idx_memory_access_log_time ON memsub.memory_access_log USING btree (tenant_id, accessed_at DESC);

CREATE INDEX idx_memory_access_log_unlearned ON memsub.memory_access_log USING btree (tenant_id, target_type, target_id) WHERE ((counted_at IS NULL) OR ((was_useful IS NOT NULL) AND (feedback_learned_at IS NULL)));

COMMENT ON INDEX memsub.idx_memory_access_log_unlearned IS 'Accesses and feedback importance learning has not read yet.';

CREATE INDEX idx_memory_embeddings_search ON ONLY memsub.memory_embeddings USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search IS 'GIN over (tenant_id, search_tsv) of the embeddings with chunk_text: one tenant''s full-text matches (btree_gin for the tenant key). memsub._keyword_candidates states chunk_text is not null to use it.';

CREATE INDEX idx_memory_embeddings_search_p00 ON memsub.memory_embeddings_p00 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p00 IS 'The part of idx_memory_embeddings_search on partition 0 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p01 ON memsub.memory_embeddings_p01 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p01 IS 'The part of idx_memory_embeddings_search on partition 1 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p02 ON memsub.memory_embeddings_p02 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p02 IS 'The part of idx_memory_embeddings_search on partition 2 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p03 ON memsub.memory_embeddings_p03 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p03 IS 'The part of idx_memory_embeddings_search on partition 3 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p04 ON memsub.memory_embeddings_p04 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p04 IS 'The part of idx_memory_embeddings_search on partition 4 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p05 ON memsub.memory_embeddings_p05 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p05 IS 'The part of idx_memory_embeddings_search on partition 5 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p06 ON memsub.memory_embeddings_p06 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p06 IS 'The part of idx_memory_embeddings_search on partition 6 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p07 ON memsub.memory_embeddings_p07 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p07 IS 'The part of idx_memory_embeddings_search on partition 7 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p08 ON memsub.memory_embeddings_p08 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p08 IS 'The part of idx_memory_embeddings_search on partition 8 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p09 ON memsub.memory_embeddings_p09 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p09 IS 'The part of idx_memory_embeddings_search on partition 9 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p10 ON memsub.memory_embeddings_p10 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p10 IS 'The part of idx_memory_embeddings_search on partition 10 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p11 ON memsub.memory_embeddings_p11 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p11 IS 'The part of idx_memory_embeddings_search on partition 11 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p12 ON memsub.memory_embeddings_p12 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p12 IS 'The part of idx_memory_embeddings_search on partition 12 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p13 ON memsub.memory_embeddings_p13 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p13 IS 'The part of idx_memory_embeddings_search on partition 13 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p14 ON memsub.memory_embeddings_p14 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p14 IS 'The part of idx_memory_embeddings_search on partition 14 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_search_p15 ON memsub.memory_embeddings_p15 USING gin (tenant_id, search_tsv) WHERE (chunk_text IS NOT NULL);

COMMENT ON INDEX memsub.idx_memory_embeddings_search_p15 IS 'The part of idx_memory_embeddings_search on partition 15 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type ON ONLY memsub.memory_embeddings USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type IS 'A tenant''s embeddings of one type: the size probe and the exact scan of memsub.semantic_search.';

CREATE INDEX idx_memory_embeddings_tenant_type_p00 ON memsub.memory_embeddings_p00 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p00 IS 'The part of idx_memory_embeddings_tenant_type on partition 0 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p01 ON memsub.memory_embeddings_p01 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p01 IS 'The part of idx_memory_embeddings_tenant_type on partition 1 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p02 ON memsub.memory_embeddings_p02 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p02 IS 'The part of idx_memory_embeddings_tenant_type on partition 2 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p03 ON memsub.memory_embeddings_p03 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p03 IS 'The part of idx_memory_embeddings_tenant_type on partition 3 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p04 ON memsub.memory_embeddings_p04 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p04 IS 'The part of idx_memory_embeddings_tenant_type on partition 4 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p05 ON memsub.memory_embeddings_p05 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p05 IS 'The part of idx_memory_embeddings_tenant_type on partition 5 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p06 ON memsub.memory_embeddings_p06 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p06 IS 'The part of idx_memory_embeddings_tenant_type on partition 6 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p07 ON memsub.memory_embeddings_p07 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p07 IS 'The part of idx_memory_embeddings_tenant_type on partition 7 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p08 ON memsub.memory_embeddings_p08 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p08 IS 'The part of idx_memory_embeddings_tenant_type on partition 8 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p09 ON memsub.memory_embeddings_p09 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p09 IS 'The part of idx_memory_embeddings_tenant_type on partition 9 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p10 ON memsub.memory_embeddings_p10 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p10 IS 'The part of idx_memory_embeddings_tenant_type on partition 10 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p11 ON memsub.memory_embeddings_p11 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p11 IS 'The part of idx_memory_embeddings_tenant_type on partition 11 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p12 ON memsub.memory_embeddings_p12 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p12 IS 'The part of idx_memory_embeddings_tenant_type on partition 12 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p13 ON memsub.memory_embeddings_p13 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p13 IS 'The part of idx_memory_embeddings_tenant_type on partition 13 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p14 ON memsub.memory_embeddings_p14 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p14 IS 'The part of idx_memory_embeddings_tenant_type on partition 14 of memory_embeddings.';

CREATE INDEX idx_memory_embeddings_tenant_type_p15 ON memsub.memory_embeddings_p15 USING btree (tenant_id, embedding_type);

COMMENT ON INDEX memsub.idx_memory_embeddings_tenant_type_p15 IS 'The part of idx_memory_embeddings_tenant_type on partition 15 of memory_embeddings.';

CREATE INDEX idx_memory_entries_embedding ON memsub.memory_entries USING hnsw (embedding public.vector_cosine_ops) WHERE ((embedding IS NOT NULL) AND (NOT is_deleted));

COMMENT ON INDEX memsub.idx_memory_entries_embedding IS 'HNSW (cosine) over the live memory entries that carry an embedding.';

CREATE INDEX idx_memory_entries_live ON memsub.memory_entries USING btree (tenant_id, namespace, key, version DESC) WHERE (NOT is_deleted);

CREATE INDEX idx_memory_entries_search ON memsub.memory_entries USING gin (tenant_id, search_tsv) WHERE (NOT is_deleted);

COMMENT ON INDEX memsub.idx_memory_entries_search IS 'Full-text search over live memory entries, by tenant (btree_gin for the tenant key): the text leg of memsub.memory_search.';

CREATE INDEX idx_memory_entries_short_term ON memsub.memory_entries USING btree (tenant_id, namespace, key) WHERE (short_term AND (NOT is_deleted));

COMMENT ON INDEX memsub.idx_memory_entries_short_term IS 'Live short-term entries: the candidates of STM -> LTM promotion.';

CREATE INDEX idx_memory_entries_unconsolidated ON memsub.memory_entries USING btree (tenant_id, namespace, key, version) WHERE ((NOT is_deleted) AND (NOT (metadata ? 'consolidated_into'::text)));

CREATE INDEX idx_memory_summaries_scope ON memsub.memory_summaries USING btree (tenant_id, scope_type, scope_value, created_at DESC);

CREATE INDEX idx_memory_summaries_valid_until ON memsub.memory_summaries USING btree (tenant_id, valid_until) WHERE (valid_until IS NOT NULL);

CREATE INDEX idx_memory_summaries_vector ON memsub.memory_summaries USING hnsw (vector public.vector_cosine_ops);

CREATE INDEX idx_memory_view_refresh_log_view ON memsub.memory_view_refresh_log USING btree (view_name, started_at DESC);

CREATE INDEX idx_packet_store_packet_type ON memsub.packet_store USING btree (tenant_id, packet_type);

CREATE INDEX idx_packet_store_timestamp ON memsub.packet_store USING btree (tenant_id, "timestamp");

COMMENT ON INDEX memsub.idx_packet_store_timestamp IS 'A tenant''s packets in time order, either way: filters and orderings by "timestamp" within a tenant.';

CREATE INDEX idx_packet_thread ON memsub.packet_store USING btree (tenant_id, thread_id, write_seq) WHERE (thread_id IS NOT NULL);

COMMENT ON INDEX memsub.idx_packet_thread IS 'Thread replay in write order (get_thread) and its keyset cursor; any query of one thread of a tenant.';

CREATE INDEX idx_packet_tombstones_lineage ON memsub.packet_tombstones USING gin (parent_ids);

CREATE INDEX idx_packet_ttl ON memsub.packet_store USING btree (ttl) WHERE (ttl IS NOT NULL);

CREATE INDEX idx_reasoning_traces_agent ON memsub.reasoning_traces USING btree (tenant_id, agent_id, created_at DESC);

CREATE INDEX idx_reasoning_traces_packet ON memsub.reasoning_traces USING btree (tenant_id, packet_id) WHERE (packet_id IS NOT NULL);

CREATE INDEX idx_reasoning_traces_ttl ON memsub.reasoning_traces USING btree (ttl) WHERE (ttl IS NOT NULL);

COMMENT ON INDEX memsub.idx_reasoning_traces_ttl IS 'Expired traces for purge_expired().';

CREATE INDEX idx_reflection_store_expires_at ON memsub.reflection_store USING btree (expires_at) WHERE (expires_at IS NOT NULL);

COMMENT ON INDEX memsub.idx_reflection_store_expires_at IS 'Expired reflections for purge_expired().';

CREATE INDEX idx_reflection_store_source_packet ON memsub.reflection_store USING btree (tenant_id, source_packet) WHERE (source_packet IS NOT NULL);

CREATE INDEX idx_reflection_store_task ON memsub.reflection_store USING btree (tenant_id, task_id) WHERE (task_id IS NOT NULL);

CREATE INDEX idx_reflection_store_type ON memsub.reflection_store USING btree (tenant_id, reflection_type, created_at DESC);

CREATE INDEX idx_reflection_store_vector ON memsub.reflection_store USING hnsw (vector public.vector_cosine_ops);

CREATE INDEX idx_semantic_memory_agent ON memsub.semantic_memory USING btree (tenant_id, agent_id);

CREATE INDEX idx_semantic_memory_vector ON memsub.semantic_memory USING hnsw (vector public.vector_cosine_ops);

CREATE INDEX idx_sessions_user ON memsub.sessions USING btree (tenant_id, user_id, created_at DESC);

CREATE INDEX idx_tasks_parent ON memsub.tasks USING btree (tenant_id, parent_task_id) WHERE (parent_task_id IS NOT NULL);

CREATE INDEX idx_tasks_session ON memsub.tasks USING btree (tenant_id, session_id) WHERE (session_id IS NOT NULL);

CREATE INDEX idx_tasks_status ON memsub.tasks USING btree (tenant_id, status, created_at);

CREATE INDEX idx_world_model_entities_alias_keys ON memsub.world_model_entities USING gin (alias_keys) WITH (fastupdate=off);

COMMENT ON INDEX memsub.idx_world_model_entities_alias_keys IS 'Finds an entity by the matching form of one of its aliases.';

CREATE INDEX idx_world_model_entities_embedding ON memsub.world_model_entities USING hnsw (embedding public.vector_cosine_ops) WHERE (embedding IS NOT NULL);

COMMENT ON INDEX memsub.idx_world_model_entities_embedding IS 'HNSW (cosine) over the entities that carry an embedding.';

CREATE INDEX idx_world_model_entities_key ON memsub.world_model_entities USING btree (tenant_id, lower(regexp_replace(btrim(entity_id), '\s+'::text, ' '::text, 'g'::text)));

COMMENT ON INDEX memsub.idx_world_model_entities_key IS 'Finds an entity by the matching form of its name (memsub.normalize_text).';

CREATE INDEX idx_world_model_entities_name_words ON memsub.world_model_entities USING gin (tenant_id, memsub._entity_name_words(entity_id, aliases));

COMMENT ON INDEX memsub.idx_world_model_entities_name_words IS 'The words of each entity''s name and aliases (simple configuration), by tenant: the text leg of memsub.entity_search.';

CREATE INDEX idx_world_model_snapshots_version ON memsub.world_model_snapshots USING btree (tenant_id, state_version DESC);

CREATE INDEX langgraph_checkpoints_run_idx ON memsub.langgraph_checkpoints USING btree (tenant_id, ((metadata ->> 'run_id'::text))) WHERE (metadata ? 'run_id'::text);

CREATE INDEX langgraph_store_items_expiry_idx ON memsub.langgraph_store_items USING btree (tenant_id, expires_at) WHERE (expires_at IS NOT NULL);

CREATE INDEX mv_agent_recent_important_agent ON memsub.mv_agent_recent_important USING btree (tenant_id, agent_id, combined_score DESC);

CREATE UNIQUE INDEX mv_agent_recent_important_key ON memsub.mv_agent_recent_important USING btree (tenant_id, packet_id);

CREATE UNIQUE INDEX mv_entity_graph_key ON memsub.mv_entity_graph USING btree (tenant_id, source_entity, relationship_type, target_entity);

COMMENT ON INDEX memsub.mv_entity_graph_key IS 'Unique key of the view (needed by REFRESH ... CONCURRENTLY).';

CREATE UNIQUE INDEX mv_high_confidence_facts_key ON memsub.mv_high_confidence_facts USING btree (tenant_id, fact_id);

CREATE INDEX mv_high_confidence_facts_subject ON memsub.mv_high_confidence_facts USING btree (tenant_id, subject_normalized, predicate);

CREATE UNIQUE INDEX mv_reflection_patterns_key ON memsub.mv_reflection_patterns USING btree (tenant_id, org_id, reflection_type) NULLS NOT DISTINCT;

CREATE UNIQUE INDEX packet_store_content_hash_key ON memsub.packet_store USING btree (tenant_id, decode(content_hash, 'hex'::text)) WHERE (content_hash IS NOT NULL);

COMMENT ON INDEX memsub.packet_store_content_hash_key IS 'Deduplication: one packet per content hash in a tenant, the hash kept as its 32 bytes (a lookup compares decode(content_hash, ''hex'')).';

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p00;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p01;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p02;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p03;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p04;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p05;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p06;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p07;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p08;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p09;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p10;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p11;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p12;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p13;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p14;

ALTER INDEX memsub.idx_embeddings_vector_content ATTACH PARTITION memsub.idx_embeddings_vector_content_p15;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p00;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p01;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p02;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p03;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p04;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p05;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p06;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p07;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p08;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p09;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p10;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p11;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p12;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p13;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p14;

ALTER INDEX memsub.idx_embeddings_vector_context ATTACH PARTITION memsub.idx_embeddings_vector_context_p15;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p00;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p01;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p02;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p03;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p04;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p05;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p06;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p07;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p08;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p09;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p10;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p11;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p12;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p13;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p14;

ALTER INDEX memsub.idx_embeddings_vector_entity ATTACH PARTITION memsub.idx_embeddings_vector_entity_p15;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p00;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p01;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p02;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p03;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p04;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p05;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p06;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p07;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p08;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p09;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p10;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p11;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p12;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p13;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p14;

ALTER INDEX memsub.idx_embeddings_vector_reasoning ATTACH PARTITION memsub.idx_embeddings_vector_reasoning_p15;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p00;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p01;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p02;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p03;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p04;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p05;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p06;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p07;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p08;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p09;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p10;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p11;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p12;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p13;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p14;

ALTER INDEX memsub.idx_embeddings_vector_summary ATTACH PARTITION memsub.idx_embeddings_vector_summary_p15;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p00;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p01;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p02;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p03;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p04;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p05;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p06;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p07;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p08;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p09;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p10;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p11;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p12;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p13;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p14;

ALTER INDEX memsub.idx_memory_embeddings_search ATTACH PARTITION memsub.idx_memory_embeddings_search_p15;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p00;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p01;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p02;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p03;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p04;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p05;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p06;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p07;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p08;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p09;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p10;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p11;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p12;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p13;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p14;

ALTER INDEX memsub.idx_memory_embeddings_tenant_type ATTACH PARTITION memsub.idx_memory_embeddings_tenant_type_p15;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p00_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p00_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p01_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p01_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p02_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p02_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p03_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p03_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p04_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p04_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p05_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p05_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p06_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p06_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p07_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p07_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p08_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p08_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p09_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p09_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p10_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p10_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p11_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p11_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p12_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p12_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p13_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p13_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p14_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p14_pkey;

ALTER INDEX memsub.memory_embeddings_chunk_key ATTACH PARTITION memsub.memory_embeddings_p15_chunk_key;

ALTER INDEX memsub.memory_embeddings_pkey ATTACH PARTITION memsub.memory_embeddings_p15_pkey;

CREATE TRIGGER memory_embeddings_count_chunks AFTER INSERT ON memsub.memory_embeddings REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION memsub.count_packet_chunks();

COMMENT ON TRIGGER memory_embeddings_count_chunks ON memsub.memory_embeddings IS 'Keeps packet_store.chunk_count and is_chunked up to date when chunk vectors (chunk_index >= 1) are added.';

CREATE TRIGGER memory_embeddings_envelope_vector BEFORE UPDATE ON memsub.memory_embeddings FOR EACH ROW EXECUTE FUNCTION memsub.memory_embeddings_envelope_guard();

COMMENT ON TRIGGER memory_embeddings_envelope_vector ON memsub.memory_embeddings IS 'Keeps the vectors of packet envelopes immutable: the envelope holds them only here.';

CREATE TRIGGER packet_store_immutable BEFORE DELETE OR UPDATE ON memsub.packet_store FOR EACH ROW EXECUTE FUNCTION memsub.packet_store_guard();

COMMENT ON TRIGGER packet_store_immutable ON memsub.packet_store IS 'Rejects modification of envelope columns and deletion of unexpired packets.';

CREATE TRIGGER packet_store_no_truncate BEFORE TRUNCATE ON memsub.packet_store FOR EACH STATEMENT EXECUTE FUNCTION memsub.packet_store_guard();

COMMENT ON TRIGGER packet_store_no_truncate ON memsub.packet_store IS 'Rejects TRUNCATE of the event log.';

ALTER TABLE ONLY memsub.adk_events
    ADD CONSTRAINT adk_events_session_fkey FOREIGN KEY (tenant_id, org_key, app_name, user_id, session_id) REFERENCES memsub.adk_sessions(tenant_id, org_key, app_name, user_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY memsub.agent_memory_events
    ADD CONSTRAINT agent_memory_events_packet_fkey FOREIGN KEY (tenant_id, packet_id) REFERENCES memsub.packet_store(tenant_id, packet_id) ON DELETE SET NULL (packet_id);

ALTER TABLE ONLY memsub.agents
    ADD CONSTRAINT agents_session_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES memsub.sessions(tenant_id, id) ON DELETE SET NULL (session_id);

ALTER TABLE ONLY memsub.agents
    ADD CONSTRAINT agents_task_fkey FOREIGN KEY (tenant_id, task_id) REFERENCES memsub.tasks(tenant_id, id);

ALTER TABLE ONLY memsub.audit
    ADD CONSTRAINT audit_agent_fkey FOREIGN KEY (tenant_id, agent_id) REFERENCES memsub.agents(tenant_id, id);

ALTER TABLE ONLY memsub.audit
    ADD CONSTRAINT audit_memory_entry_fkey FOREIGN KEY (tenant_id, memory_entry_id) REFERENCES memsub.memory_entries(tenant_id, id) ON DELETE SET NULL (memory_entry_id);

ALTER TABLE ONLY memsub.audit
    ADD CONSTRAINT audit_session_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES memsub.sessions(tenant_id, id) ON DELETE SET NULL (session_id);

ALTER TABLE ONLY memsub.audit
    ADD CONSTRAINT audit_task_fkey FOREIGN KEY (tenant_id, task_id) REFERENCES memsub.tasks(tenant_id, id);

ALTER TABLE ONLY memsub.checkpoints
    ADD CONSTRAINT checkpoints_session_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES memsub.sessions(tenant_id, id) ON DELETE SET NULL (session_id);

ALTER TABLE ONLY memsub.checkpoints
    ADD CONSTRAINT checkpoints_task_fkey FOREIGN KEY (tenant_id, task_id) REFERENCES memsub.tasks(tenant_id, id);

ALTER TABLE ONLY memsub.document_chunks
    ADD CONSTRAINT document_chunks_document_fkey FOREIGN KEY (tenant_id, document_id) REFERENCES memsub.document_index(tenant_id, id);

ALTER TABLE ONLY memsub.document_index
    ADD CONSTRAINT document_index_packet_fkey FOREIGN KEY (tenant_id, packet_id) REFERENCES memsub.packet_store(tenant_id, packet_id) ON DELETE SET NULL (packet_id);

ALTER TABLE ONLY memsub.document_index
    ADD CONSTRAINT document_index_previous_fkey FOREIGN KEY (tenant_id, previous_id) REFERENCES memsub.document_index(tenant_id, id);

ALTER TABLE ONLY memsub.entity_relationships
    ADD CONSTRAINT entity_relationships_source_packet_fkey FOREIGN KEY (tenant_id, source_packet) REFERENCES memsub.packet_store(tenant_id, packet_id) ON DELETE SET NULL (source_packet);

ALTER TABLE ONLY memsub.knowledge_facts
    ADD CONSTRAINT knowledge_facts_source_packet_fkey FOREIGN KEY (tenant_id, source_packet) REFERENCES memsub.packet_store(tenant_id, packet_id) ON DELETE SET NULL (source_packet);

ALTER TABLE ONLY memsub.langgraph_store_vectors
    ADD CONSTRAINT langgraph_store_vectors_item_fkey FOREIGN KEY (tenant_id, namespace_key, key) REFERENCES memsub.langgraph_store_items(tenant_id, namespace_key, key) ON DELETE CASCADE;

ALTER TABLE memsub.memory_embeddings
    ADD CONSTRAINT memory_embeddings_packet_fkey FOREIGN KEY (tenant_id, packet_id) REFERENCES memsub.packet_store(tenant_id, packet_id) ON DELETE CASCADE;

ALTER TABLE ONLY memsub.memory_entries
    ADD CONSTRAINT memory_entries_session_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES memsub.sessions(tenant_id, id) ON DELETE SET NULL (session_id);

ALTER TABLE ONLY memsub.packet_threads
    ADD CONSTRAINT packet_threads_first_packet_fkey FOREIGN KEY (tenant_id, first_packet_id) REFERENCES memsub.packet_store(tenant_id, packet_id) ON DELETE SET NULL (first_packet_id);

ALTER TABLE ONLY memsub.reasoning_traces
    ADD CONSTRAINT reasoning_traces_packet_fkey FOREIGN KEY (tenant_id, packet_id) REFERENCES memsub.packet_store(tenant_id, packet_id) ON DELETE SET NULL (packet_id);

ALTER TABLE ONLY memsub.reflection_store
    ADD CONSTRAINT reflection_store_source_packet_fkey FOREIGN KEY (tenant_id, source_packet) REFERENCES memsub.packet_store(tenant_id, packet_id) ON DELETE SET NULL (source_packet);

ALTER TABLE ONLY memsub.session_events
    ADD CONSTRAINT session_events_session_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES memsub.sessions(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY memsub.tasks
    ADD CONSTRAINT tasks_parent_task_fkey FOREIGN KEY (tenant_id, parent_task_id) REFERENCES memsub.tasks(tenant_id, id);

ALTER TABLE ONLY memsub.tasks
    ADD CONSTRAINT tasks_session_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES memsub.sessions(tenant_id, id) ON DELETE SET NULL (session_id);

ALTER TABLE memsub.adk_app_states ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.adk_events ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.adk_memories ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.adk_sessions ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.adk_user_states ENABLE ROW LEVEL SECURITY;

CREATE POLICY admin_override ON memsub.adk_app_states USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.adk_app_states IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.adk_events USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.adk_events IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.adk_memories USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.adk_memories IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.adk_sessions USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.adk_sessions IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.adk_user_states USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.adk_user_states IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.agent_memory_events USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.agent_memory_events IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.agent_session_items USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.agent_session_items IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.agents USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.agents IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.api_keys USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.api_keys IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.audit USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.audit IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.checkpoints USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.checkpoints IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.document_chunks USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.document_chunks IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.document_index USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.document_index IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.entity_relationships USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.entity_relationships IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.importance_learning_runs USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.importance_learning_runs IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.knowledge_facts USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.knowledge_facts IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.langgraph_checkpoint_writes USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.langgraph_checkpoint_writes IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.langgraph_checkpoints USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.langgraph_checkpoints IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.langgraph_store_items USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.langgraph_store_items IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.langgraph_store_vectors USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.langgraph_store_vectors IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.memory_access_log USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.memory_access_log IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.memory_embeddings USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.memory_embeddings IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.memory_entries USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.memory_entries IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.memory_summaries USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.memory_summaries IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.packet_store USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.packet_store IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.packet_threads USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.packet_threads IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.packet_tombstones USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.packet_tombstones IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.reasoning_traces USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.reasoning_traces IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.reflection_store USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.reflection_store IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.search_stats USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.search_stats IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.semantic_memory USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.semantic_memory IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.session_events USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.session_events IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.sessions USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.sessions IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.task_reflections USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.task_reflections IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.tasks USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.tasks IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.world_model_entities USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.world_model_entities IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.world_model_snapshots USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.world_model_snapshots IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.world_model_state USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.world_model_state IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

CREATE POLICY admin_override ON memsub.world_model_updates USING (( SELECT memsub.is_platform_admin() AS is_platform_admin));

COMMENT ON POLICY admin_override ON memsub.world_model_updates IS 'platform_admin contexts (members of memsub_platform_admin) reach every tenant.';

ALTER TABLE memsub.agent_memory_events ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.agent_session_items ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.agents ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.api_keys ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.audit ENABLE ROW LEVEL SECURITY;

CREATE POLICY audit_actor_visibility ON memsub.audit AS RESTRICTIVE USING (((NOT (user_id IS DISTINCT FROM ( SELECT memsub.current_user_id() AS current_user_id))) OR ( SELECT memsub._caller_is_admin() AS _caller_is_admin)));

COMMENT ON POLICY audit_actor_visibility ON memsub.audit IS 'An audit row is visible to the user whose context wrote it (rows without a user: to contexts without a user); admins pass.';

ALTER TABLE memsub.checkpoints ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.document_chunks ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.document_index ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.entity_relationships ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.importance_learning_runs ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.knowledge_facts ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.langgraph_checkpoint_writes ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.langgraph_checkpoints ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.langgraph_store_items ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.langgraph_store_vectors ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_access_log ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p00 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p01 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p02 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p03 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p04 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p05 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p06 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p07 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p08 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p09 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p10 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p11 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p12 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p13 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p14 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_embeddings_p15 ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_entries ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.memory_summaries ENABLE ROW LEVEL SECURITY;

CREATE POLICY namespace_insert ON memsub.memory_entries AS RESTRICTIVE FOR INSERT WITH CHECK ((((namespace_kind = 'user'::text) AND (namespace_owner = ( SELECT (memsub.current_user_id())::text AS current_user_id))) OR ((namespace_kind = 'session'::text) AND (namespace_owner = ( SELECT memsub.current_session_id() AS current_session_id))) OR ( SELECT memsub._caller_is_admin() AS _caller_is_admin)));

COMMENT ON POLICY namespace_insert ON memsub.memory_entries IS 'Write rules: a context writes its own user: and session: namespaces; app: and project: need tenant_admin or platform_admin.';

CREATE POLICY namespace_update ON memsub.memory_entries AS RESTRICTIVE FOR UPDATE USING ((((namespace_kind = 'user'::text) AND (namespace_owner = ( SELECT (memsub.current_user_id())::text AS current_user_id))) OR ((namespace_kind = 'session'::text) AND (namespace_owner = ( SELECT memsub.current_session_id() AS current_session_id))) OR ( SELECT memsub._caller_is_admin() AS _caller_is_admin)));

COMMENT ON POLICY namespace_update ON memsub.memory_entries IS 'Soft deletes and consolidation marks follow the write rules (own user: and session: namespaces; admins anywhere).';

CREATE POLICY namespace_visibility ON memsub.memory_entries AS RESTRICTIVE USING (((namespace_kind = ANY (ARRAY['app'::text, 'project'::text])) OR ((namespace_kind = 'user'::text) AND (namespace_owner = ( SELECT (memsub.current_user_id())::text AS current_user_id))) OR ((namespace_kind = 'session'::text) AND (namespace_owner = ( SELECT memsub.current_session_id() AS current_session_id))) OR ( SELECT memsub._caller_is_admin() AS _caller_is_admin)));

COMMENT ON POLICY namespace_visibility ON memsub.memory_entries IS 'Read rules: app: and project: entries for the whole tenant, user:<id> for that user, session:<id> for that session; admins pass.';

CREATE POLICY not_expired ON memsub.agent_memory_events AS RESTRICTIVE FOR SELECT USING (((ttl IS NULL) OR (ttl > ( SELECT (now() AT TIME ZONE 'UTC'::text) AS timezone)) OR ( SELECT (CURRENT_USER = 'memsub_expiry_owner'::name))));

COMMENT ON POLICY not_expired ON memsub.agent_memory_events IS 'An event linked to a packet whose ttl has passed is never read (only memsub_expiry_owner, for purging, sees it).';

CREATE POLICY not_expired ON memsub.entity_relationships AS RESTRICTIVE FOR SELECT USING (((ttl IS NULL) OR (ttl > ( SELECT (now() AT TIME ZONE 'UTC'::text) AS timezone)) OR ( SELECT (CURRENT_USER = 'memsub_expiry_owner'::name))));

COMMENT ON POLICY not_expired ON memsub.entity_relationships IS 'An edge window whose observing packets have all expired is never read (only memsub_expiry_owner, for purging, sees it).';

CREATE POLICY not_expired ON memsub.knowledge_facts AS RESTRICTIVE FOR SELECT USING (((ttl IS NULL) OR (ttl > ( SELECT (now() AT TIME ZONE 'UTC'::text) AS timezone)) OR ( SELECT (CURRENT_USER = 'memsub_expiry_owner'::name))));

COMMENT ON POLICY not_expired ON memsub.knowledge_facts IS 'A fact whose supporting packets have all expired is never read (only memsub_expiry_owner, for purging, sees it).';

CREATE POLICY not_expired ON memsub.memory_embeddings AS RESTRICTIVE FOR SELECT USING (((ttl IS NULL) OR (ttl > ( SELECT (now() AT TIME ZONE 'UTC'::text) AS timezone))));

COMMENT ON POLICY not_expired ON memsub.memory_embeddings IS 'An embedding of a packet whose ttl has passed is never read; purge_expired() deletes it with the packet.';

CREATE POLICY not_expired ON memsub.packet_store AS RESTRICTIVE FOR SELECT USING (((ttl IS NULL) OR (ttl > ( SELECT (now() AT TIME ZONE 'UTC'::text) AS timezone)) OR ( SELECT (CURRENT_USER = 'memsub_expiry_owner'::name))));

COMMENT ON POLICY not_expired ON memsub.packet_store IS 'A packet whose ttl has passed is never read (only memsub_expiry_owner, for purging and lineage, sees it).';

CREATE POLICY not_expired ON memsub.reasoning_traces AS RESTRICTIVE FOR SELECT USING (((ttl IS NULL) OR (ttl > ( SELECT (now() AT TIME ZONE 'UTC'::text) AS timezone)) OR ( SELECT (CURRENT_USER = 'memsub_expiry_owner'::name))));

COMMENT ON POLICY not_expired ON memsub.reasoning_traces IS 'A reasoning trace of a packet whose ttl has passed is never read (only memsub_expiry_owner, for purging, sees it).';

CREATE POLICY not_expired ON memsub.reflection_store AS RESTRICTIVE FOR SELECT USING (((expires_at IS NULL) OR (expires_at > ( SELECT now() AS now)) OR ( SELECT (CURRENT_USER = 'memsub_expiry_owner'::name))));

COMMENT ON POLICY not_expired ON memsub.reflection_store IS 'A reflection whose expires_at (at the latest its source packet''s ttl) has passed is never read (only memsub_expiry_owner, for purging, sees it).';

CREATE POLICY org_isolation ON memsub.adk_app_states AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.adk_app_states IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.adk_events AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.adk_events IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.adk_memories AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.adk_memories IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.adk_sessions AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.adk_sessions IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.adk_user_states AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.adk_user_states IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.agent_memory_events AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.agent_memory_events IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.agent_session_items AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.agent_session_items IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.agents AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.agents IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.api_keys AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.api_keys IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.audit AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.audit IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.checkpoints AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.checkpoints IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.document_chunks AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.document_chunks IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.document_index AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.document_index IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.langgraph_checkpoint_writes AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.langgraph_checkpoint_writes IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.langgraph_checkpoints AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.langgraph_checkpoints IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.langgraph_store_items AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.langgraph_store_items IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.langgraph_store_vectors AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.langgraph_store_vectors IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.memory_access_log AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.memory_access_log IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.memory_embeddings AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.memory_embeddings IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.memory_summaries AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.memory_summaries IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.packet_store AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.packet_store IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.packet_tombstones AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.packet_tombstones IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.reasoning_traces AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.reasoning_traces IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.reflection_store AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.reflection_store IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.semantic_memory AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.semantic_memory IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.session_events AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.session_events IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.sessions AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.sessions IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.task_reflections AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.task_reflections IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

CREATE POLICY org_isolation ON memsub.tasks AS RESTRICTIVE USING (((org_id IS NULL) OR (org_id = ( SELECT memsub.current_org_id() AS current_org_id)) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY org_isolation ON memsub.tasks IS 'A row of an organization is visible to that organization only (NULL org: whole tenant); admins pass.';

ALTER TABLE memsub.packet_store ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.packet_threads ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.packet_tombstones ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.reasoning_traces ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.reflection_store ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.search_stats ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.semantic_memory ENABLE ROW LEVEL SECURITY;

CREATE POLICY session_access ON memsub.sessions AS RESTRICTIVE USING (((user_id = ( SELECT memsub.current_user_id() AS current_user_id)) OR (id = ( SELECT memsub.current_session_id() AS current_session_id)) OR ( SELECT memsub._caller_is_admin() AS _caller_is_admin)));

COMMENT ON POLICY session_access ON memsub.sessions IS 'A session is visible to its user and to the context whose session_id names it; admins pass.';

CREATE POLICY session_event_access ON memsub.session_events AS RESTRICTIVE USING (((user_id = ( SELECT memsub.current_user_id() AS current_user_id)) OR (session_id = ( SELECT memsub.current_session_id() AS current_session_id)) OR ( SELECT memsub._caller_is_admin() AS _caller_is_admin)));

COMMENT ON POLICY session_event_access ON memsub.session_events IS 'An event is visible where its session is: to the session''s user and to the context whose session_id names it; admins pass.';

ALTER TABLE memsub.session_events ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.sessions ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.task_reflections ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.tasks ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON memsub.adk_app_states USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.adk_app_states IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.adk_events USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.adk_events IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.adk_memories USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.adk_memories IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.adk_sessions USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.adk_sessions IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.adk_user_states USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.adk_user_states IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.agent_memory_events USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.agent_memory_events IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.agent_session_items USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.agent_session_items IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.agents USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.agents IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.api_keys USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.api_keys IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.audit USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.audit IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.checkpoints USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.checkpoints IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.document_chunks USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.document_chunks IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.document_index USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.document_index IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.entity_relationships USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.entity_relationships IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.importance_learning_runs USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.importance_learning_runs IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.knowledge_facts USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.knowledge_facts IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.langgraph_checkpoint_writes USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.langgraph_checkpoint_writes IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.langgraph_checkpoints USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.langgraph_checkpoints IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.langgraph_store_items USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.langgraph_store_items IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.langgraph_store_vectors USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.langgraph_store_vectors IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.memory_access_log USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.memory_access_log IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.memory_embeddings USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.memory_embeddings IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.memory_entries USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.memory_entries IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.memory_summaries USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.memory_summaries IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.packet_store USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.packet_store IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.packet_threads USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.packet_threads IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.packet_tombstones USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.packet_tombstones IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.reasoning_traces USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.reasoning_traces IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.reflection_store USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.reflection_store IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.search_stats USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.search_stats IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.semantic_memory USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.semantic_memory IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.session_events USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.session_events IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.sessions USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.sessions IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.task_reflections USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.task_reflections IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.tasks USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.tasks IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.world_model_entities USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.world_model_entities IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.world_model_snapshots USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.world_model_snapshots IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.world_model_state USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.world_model_state IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY tenant_isolation ON memsub.world_model_updates USING ((tenant_id = ( SELECT memsub.current_tenant_id() AS current_tenant_id)));

COMMENT ON POLICY tenant_isolation ON memsub.world_model_updates IS 'Rows of the context tenant only (memsub.set_context).';

CREATE POLICY user_visibility ON memsub.agent_memory_events AS RESTRICTIVE USING (((scope = 'shared'::text) OR ((scope = 'l-private'::text) AND (user_id = ( SELECT memsub.current_user_id() AS current_user_id))) OR ((scope = 'cursor'::text) AND ((user_id = ( SELECT memsub.current_user_id() AS current_user_id)) OR (session_id = ( SELECT memsub.current_session_id() AS current_session_id)))) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY user_visibility ON memsub.agent_memory_events IS 'Scope: shared rows for all, cursor rows for their user and session, l-private rows for their user; admins pass.';

CREATE POLICY user_visibility ON memsub.memory_embeddings AS RESTRICTIVE USING (((scope = 'shared'::text) OR ((scope = 'l-private'::text) AND (user_id = ( SELECT memsub.current_user_id() AS current_user_id))) OR ((scope = 'cursor'::text) AND ((user_id = ( SELECT memsub.current_user_id() AS current_user_id)) OR (session_id = ( SELECT memsub.current_session_id() AS current_session_id)))) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY user_visibility ON memsub.memory_embeddings IS 'Scope: shared rows for all, cursor rows for their user and session, l-private rows for their user; admins pass.';

CREATE POLICY user_visibility ON memsub.packet_store AS RESTRICTIVE USING (((scope = 'shared'::text) OR ((scope = 'l-private'::text) AND (user_id = ( SELECT memsub.current_user_id() AS current_user_id))) OR ((scope = 'cursor'::text) AND ((user_id = ( SELECT memsub.current_user_id() AS current_user_id)) OR (session_id = ( SELECT memsub.current_session_id() AS current_session_id)))) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY user_visibility ON memsub.packet_store IS 'Scope: shared rows for all, cursor rows for their user and session, l-private rows for their user; admins pass.';

CREATE POLICY user_visibility ON memsub.packet_tombstones AS RESTRICTIVE USING (((scope = 'shared'::text) OR ((scope = 'l-private'::text) AND (user_id = ( SELECT memsub.current_user_id() AS current_user_id))) OR ((scope = 'cursor'::text) AND ((user_id = ( SELECT memsub.current_user_id() AS current_user_id)) OR (session_id = ( SELECT memsub.current_session_id() AS current_session_id)))) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY user_visibility ON memsub.packet_tombstones IS 'Scope: shared rows for all, cursor rows for their user and session, l-private rows for their user; admins pass.';

CREATE POLICY user_visibility ON memsub.reasoning_traces AS RESTRICTIVE USING (((scope = 'shared'::text) OR ((scope = 'l-private'::text) AND (user_id = ( SELECT memsub.current_user_id() AS current_user_id))) OR ((scope = 'cursor'::text) AND ((user_id = ( SELECT memsub.current_user_id() AS current_user_id)) OR (session_id = ( SELECT memsub.current_session_id() AS current_session_id)))) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY user_visibility ON memsub.reasoning_traces IS 'Scope: shared rows for all, cursor rows for their user and session, l-private rows for their user; admins pass.';

CREATE POLICY user_visibility ON memsub.semantic_memory AS RESTRICTIVE USING (((scope = 'shared'::text) OR ((scope = 'l-private'::text) AND (user_id = ( SELECT memsub.current_user_id() AS current_user_id))) OR ((scope = 'cursor'::text) AND ((user_id = ( SELECT memsub.current_user_id() AS current_user_id)) OR (session_id = ( SELECT memsub.current_session_id() AS current_session_id)))) OR ( SELECT memsub.is_tenant_admin() AS is_tenant_admin) OR ( SELECT memsub.is_platform_admin() AS is_platform_admin)));

COMMENT ON POLICY user_visibility ON memsub.semantic_memory IS 'Scope: shared rows for all, cursor rows for their user and session, l-private rows for their user; admins pass.';

ALTER TABLE memsub.world_model_entities ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.world_model_snapshots ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.world_model_state ENABLE ROW LEVEL SECURITY;

ALTER TABLE memsub.world_model_updates ENABLE ROW LEVEL SECURITY;

GRANT USAGE ON SCHEMA memsub TO memsub_expiry_owner;
GRANT USAGE ON SCHEMA memsub TO memsub_retrieval_owner;
GRANT USAGE ON SCHEMA memsub TO memsub_view_owner;
GRANT USAGE ON SCHEMA memsub TO memsub_app;
GRANT USAGE ON SCHEMA memsub TO memsub_analyst;

REVOKE ALL ON TYPE memsub.langgraph_checkpoint_row FROM PUBLIC;

REVOKE ALL ON TYPE memsub.langgraph_store_item FROM PUBLIC;

REVOKE ALL ON TYPE memsub.packet_fields FROM PUBLIC;

REVOKE ALL ON TYPE memsub.packet_write_result FROM PUBLIC;
GRANT ALL ON TYPE memsub.packet_write_result TO memsub_app;
GRANT ALL ON TYPE memsub.packet_write_result TO memsub_analyst;

REVOKE ALL ON TYPE memsub.retrieval_candidate FROM PUBLIC;
GRANT ALL ON TYPE memsub.retrieval_candidate TO memsub_app;
GRANT ALL ON TYPE memsub.retrieval_candidate TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._add_login_binding(p_login name, p_tenant_id uuid, p_org_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._alternatives(p_values text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._alternatives(p_values text[]) TO memsub_expiry_owner;

REVOKE ALL ON FUNCTION memsub._api_key_lookup(p_key_id text, p_key_hash bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._api_key_lookup(p_key_id text, p_key_hash bytea) TO memsub_owner;

REVOKE ALL ON FUNCTION memsub._apply_state_delta(p_state jsonb, p_delta jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._batch_embeddings(p_batch memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid, p_vectors public.vector[], p_before integer[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._batch_envelopes(p_envelopes jsonb, p_user uuid, p_session text, p_max_envelope_bytes bigint, p_max_tags bigint, p_max_tag_chars bigint, p_max_parent_ids bigint, p_vectors_apart boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._batch_lineage(p_batch memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._caller_is_admin() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._caller_is_admin() TO memsub_app;
GRANT ALL ON FUNCTION memsub._caller_is_admin() TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._caller_is_admin() TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._check_context_role(p_role text, p_caller text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_context_role(p_role text, p_caller text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_context_role(p_role text, p_caller text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._check_count(p_value bigint, p_limit text, p_field text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_count(p_value bigint, p_limit text, p_field text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_count(p_value bigint, p_limit text, p_field text) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._check_count(p_value bigint, p_limit text, p_field text) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._check_doc_refs(p_refs jsonb, p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._check_filter_values(p_values text[], p_field text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_filter_values(p_values text[], p_field text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_filter_values(p_values text[], p_field text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._check_finite(p_value double precision, p_field text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_finite(p_value double precision, p_field text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_finite(p_value double precision, p_field text) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._check_finite(p_value double precision, p_field text) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._check_finite_interval(p_value interval, p_field text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_finite_interval(p_value interval, p_field text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_finite_interval(p_value interval, p_field text) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._check_finite_interval(p_value interval, p_field text) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._check_finite_time(p_value timestamp with time zone, p_field text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_finite_time(p_value timestamp with time zone, p_field text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_finite_time(p_value timestamp with time zone, p_field text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._check_fused_search(p_k integer, p_rrf_k integer, p_query public.vector, p_query_text text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_fused_search(p_k integer, p_rrf_k integer, p_query public.vector, p_query_text text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_fused_search(p_k integer, p_rrf_k integer, p_query public.vector, p_query_text text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._check_graph_node(p_type text, p_id text, p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._check_half_life(p_half_life interval) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_half_life(p_half_life interval) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_half_life(p_half_life interval) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._check_half_life(p_half_life interval) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._check_json_type(p_value jsonb, p_type text, p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._check_limit(p_value bigint, p_limit text, p_field text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_limit(p_value bigint, p_limit text, p_field text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_limit(p_value bigint, p_limit text, p_field text) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._check_limit(p_value bigint, p_limit text, p_field text) TO memsub_retrieval_owner;
GRANT ALL ON FUNCTION memsub._check_limit(p_value bigint, p_limit text, p_field text) TO memsub_expiry_owner;

REVOKE ALL ON FUNCTION memsub._check_limits(p_values bigint[], p_limit text, p_fields text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_limits(p_values bigint[], p_limit text, p_fields text[]) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_limits(p_values bigint[], p_limit text, p_fields text[]) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._check_limits(p_values bigint[], p_limit text, p_fields text[]) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._check_login_without_binding(p_login name, p_tenant_id uuid, p_org_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._check_object_keys(p_value jsonb, p_field text, p_keys text[], p_shape text, p_what text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._check_one_of(p_value text, p_allowed text[], p_field text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_one_of(p_value text, p_allowed text[], p_field text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_one_of(p_value text, p_allowed text[], p_field text) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._check_one_of(p_value text, p_allowed text[], p_field text) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._check_text_limits(VARIADIC p_name_value text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_text_limits(VARIADIC p_name_value text[]) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_text_limits(VARIADIC p_name_value text[]) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._check_text_limits(VARIADIC p_name_value text[]) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._check_time_range(p_since timestamp with time zone, p_until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_time_range(p_since timestamp with time zone, p_until timestamp with time zone) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_time_range(p_since timestamp with time zone, p_until timestamp with time zone) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._check_unit(p_value double precision, p_field text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_unit(p_value double precision, p_field text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_unit(p_value double precision, p_field text) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._check_unit(p_value double precision, p_field text) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._check_vector(p_value public.vector, p_field text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._check_vector(p_value public.vector, p_field text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._check_vector(p_value public.vector, p_field text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._chunk_keyword_candidates(p_query_text text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._chunk_keyword_candidates(p_query_text text, p_limit integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub._chunk_keyword_candidates(p_query_text text, p_limit integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._context_tenant_rows(p_embedding_type text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._context_tenant_rows(p_embedding_type text, p_limit integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub._context_tenant_rows(p_embedding_type text, p_limit integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.document_mimes() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.document_mimes() TO memsub_app;
GRANT ALL ON FUNCTION memsub.document_mimes() TO memsub_analyst;

GRANT SELECT ON TABLE memsub.document_index TO memsub_app;
GRANT SELECT ON TABLE memsub.document_index TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._document_index_write(p_entry memsub.document_index) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._drop_expired_edge(p_tenant_id uuid, p_source_key text, p_relationship_type text, p_target_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._drop_expired_edge(p_tenant_id uuid, p_source_key text, p_relationship_type text, p_target_key text) TO memsub_owner;

REVOKE ALL ON FUNCTION memsub._drop_expired_fact(p_tenant_id uuid, p_subject_key text, p_predicate text, p_object_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._drop_expired_fact(p_tenant_id uuid, p_subject_key text, p_predicate text, p_object_key text) TO memsub_owner;

REVOKE ALL ON FUNCTION memsub._embedding_chunk_index(p_element jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._embedding_chunk_index(p_element jsonb) TO memsub_app;
GRANT ALL ON FUNCTION memsub._embedding_chunk_index(p_element jsonb) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._embedding_partition(p_tenant_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._embedding_partition(p_tenant_id uuid) TO memsub_app;
GRANT ALL ON FUNCTION memsub._embedding_partition(p_tenant_id uuid) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._entity_keys(p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._entity_keys(p_name text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._entity_keys(p_name text) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._entity_keys(p_name text) TO memsub_owner;

REVOKE ALL ON FUNCTION memsub._entity_name_words(p_entity_id text, p_aliases text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._entity_name_words(p_entity_id text, p_aliases text[]) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._entity_word_candidates(p_query tsquery, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._entity_word_candidates(p_query tsquery, p_limit integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub._entity_word_candidates(p_query tsquery, p_limit integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._envelope_fields(p_part text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._envelope_lineage(p_lineage jsonb, OUT parent_ids uuid[], OUT derivation text, OUT unknown text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._envelope_scope(p_envelope jsonb, p_user uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._envelope_tags(p_envelope jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._envelope_timestamp(p_value jsonb, p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._envelope_unit_number(p_value jsonb, p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._envelope_uuid(p_value jsonb, p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._envelope_value(p_envelope jsonb, p_field text, p_type text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._envelope_vectors_apart(p_envelope jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._float_array_vector(p_value double precision[], p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._importance_step(p_importance double precision, p_accesses bigint, p_useful bigint, p_useless bigint, p_access_rate double precision, p_feedback_rate double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._importance_step(p_importance double precision, p_accesses bigint, p_useful bigint, p_useless bigint, p_access_rate double precision, p_feedback_rate double precision) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._insert_packets(p_packets memsub.packet_fields[], p_tenant uuid, p_org uuid, p_user uuid) FROM PUBLIC;

REVOKE ALL ON PROCEDURE memsub._install_expiry_policy(IN p_table regclass, IN p_comment text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._json_query_vector(p_value jsonb, p_field text, p_caller text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._json_vector(p_value jsonb, p_field text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._json_vector(p_value jsonb, p_field text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._json_vector(p_value jsonb, p_field text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._keyword_candidates(p_query_text text, p_embedding_type text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._keyword_candidates(p_query_text text, p_embedding_type text, p_limit integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub._keyword_candidates(p_query_text text, p_embedding_type text, p_limit integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._langgraph_store_key_range(p_tenant uuid, p_labels text[], OUT low text, OUT high text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._langgraph_store_labels_match(p_labels text[], p_pattern text[], p_at_end boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._langgraph_store_namespace_key(p_namespace text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._later_expiry(p_first timestamp without time zone, p_second timestamp without time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._memory_namespace_writable(p_namespace text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._memory_namespace_writable(p_namespace text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub._memory_view_names() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._memory_view_names() TO memsub_view_owner;
GRANT ALL ON FUNCTION memsub._memory_view_names() TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub._memory_word_candidates(p_query tsquery, p_namespace_prefix text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._memory_word_candidates(p_query tsquery, p_namespace_prefix text, p_limit integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub._memory_word_candidates(p_query tsquery, p_namespace_prefix text, p_limit integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._merge_doc_refs(p_old jsonb, p_new jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._nearest_candidates(p_embedding_type text, p_pool integer, p_exact boolean, p_keep_plan boolean, p_query public.vector, p_thread_id uuid, p_tags text[], p_packet_type text, p_since timestamp with time zone, p_until timestamp with time zone, p_min_importance double precision, p_tenant_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._nearest_candidates(p_embedding_type text, p_pool integer, p_exact boolean, p_keep_plan boolean, p_query public.vector, p_thread_id uuid, p_tags text[], p_packet_type text, p_since timestamp with time zone, p_until timestamp with time zone, p_min_importance double precision, p_tenant_id uuid) TO memsub_app;
GRANT ALL ON FUNCTION memsub._nearest_candidates(p_embedding_type text, p_pool integer, p_exact boolean, p_keep_plan boolean, p_query public.vector, p_thread_id uuid, p_tags text[], p_packet_type text, p_since timestamp with time zone, p_until timestamp with time zone, p_min_importance double precision, p_tenant_id uuid) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._normalize_json_value(p_value jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._optional_text(p_value text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._optional_text(p_value text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._optional_text(p_value text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._packet_deduplicated(p_tenant uuid, p_org uuid, p_user uuid, p_packet memsub.packet_fields) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._packet_embeddings_check(p_packet memsub.packet_fields) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._packet_from_envelope(p_envelope jsonb, p_position integer, p_user uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._packet_id_by_content_hash(p_content_hash text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._packet_id_by_content_hash(p_content_hash text) TO memsub_owner;

REVOKE ALL ON FUNCTION memsub._packet_lineage(p_tenant uuid, p_packet memsub.packet_fields, OUT generation integer, OUT root_packet_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._packet_thread_check(p_tenant uuid, p_org uuid, p_thread_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._packet_thread_register(p_tenant uuid, p_org uuid, p_packet memsub.packet_fields) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._packet_vectors_check(p_packet memsub.packet_fields, p_vectors public.vector[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._reader_tenants(p_packet_ids uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._reader_tenants(p_packet_ids uuid[]) TO memsub_app;
GRANT ALL ON FUNCTION memsub._reader_tenants(p_packet_ids uuid[]) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._recall_lower_bound(p_recalls double precision[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._recall_lower_bound(p_recalls double precision[]) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub._record_accesses(p_target_type text, p_target_ids uuid[], p_scores double precision[], p_query_text text, p_access_context text, p_agent_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._record_accesses(p_target_type text, p_target_ids uuid[], p_scores double precision[], p_query_text text, p_access_context text, p_agent_id text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.view_refresh_methods() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.view_refresh_methods() TO memsub_app;
GRANT ALL ON FUNCTION memsub.view_refresh_methods() TO memsub_analyst;
GRANT ALL ON FUNCTION memsub.view_refresh_methods() TO memsub_view_owner;

REVOKE ALL ON FUNCTION memsub.view_refresh_statuses() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.view_refresh_statuses() TO memsub_app;
GRANT ALL ON FUNCTION memsub.view_refresh_statuses() TO memsub_analyst;
GRANT ALL ON FUNCTION memsub.view_refresh_statuses() TO memsub_view_owner;

GRANT SELECT,INSERT ON TABLE memsub.memory_view_refresh_log TO memsub_view_owner;
GRANT SELECT ON TABLE memsub.memory_view_refresh_log TO memsub_analyst;
GRANT SELECT ON TABLE memsub.memory_view_refresh_log TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub._refresh_memory_view(p_view text, p_run_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._refresh_memory_view(p_view text, p_run_id uuid) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub._require_key_admin(p_tenant_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._require_tenant_id() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._require_tenant_id() TO memsub_expiry_owner;
GRANT ALL ON FUNCTION memsub._require_tenant_id() TO memsub_app;
GRANT ALL ON FUNCTION memsub._require_tenant_id() TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._require_tenant_id() TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub._require_text(p_value text, p_field text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._require_text(p_value text, p_field text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._require_text(p_value text, p_field text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._resolve_entities(p_names text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._resolve_entities(p_names text[]) TO memsub_app;
GRANT ALL ON FUNCTION memsub._resolve_entities(p_names text[]) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._resolve_entities(p_names text[]) TO memsub_owner;

REVOKE ALL ON FUNCTION memsub._resolve_entity(p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._resolve_entity(p_name text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._resolve_entity(p_name text) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub._resolve_entity(p_name text) TO memsub_owner;

REVOKE ALL ON FUNCTION memsub._sample_query(p_row public.vector, p_distance double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._sample_query(p_row public.vector, p_distance double precision) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub._search_strategy(p_tenant_id uuid, p_embedding_type text, p_pool integer, p_mode text, p_ef_search integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._search_strategy(p_tenant_id uuid, p_embedding_type text, p_pool integer, p_mode text, p_ef_search integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub._search_strategy(p_tenant_id uuid, p_embedding_type text, p_pool integer, p_mode text, p_ef_search integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._seed_tenant_statistics() FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.session_statuses() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.session_statuses() TO memsub_app;
GRANT ALL ON FUNCTION memsub.session_statuses() TO memsub_analyst;

GRANT SELECT ON TABLE memsub.sessions TO memsub_app;
GRANT SELECT ON TABLE memsub.sessions TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._session_lookup(p_session_id text, p_for_update boolean, p_errcode text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.task_final_statuses() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.task_final_statuses() TO memsub_app;
GRANT ALL ON FUNCTION memsub.task_final_statuses() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.task_statuses() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.task_statuses() TO memsub_app;
GRANT ALL ON FUNCTION memsub.task_statuses() TO memsub_analyst;

GRANT SELECT ON TABLE memsub.tasks TO memsub_app;
GRANT SELECT ON TABLE memsub.tasks TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._task_lookup(p_task_id bigint, p_for_update boolean, p_errcode text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._thread_packet_ids(p_thread_id uuid, p_limit integer, p_after_cursor bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._thread_packet_ids(p_thread_id uuid, p_limit integer, p_after_cursor bigint) TO memsub_app;
GRANT ALL ON FUNCTION memsub._thread_packet_ids(p_thread_id uuid, p_limit integer, p_after_cursor bigint) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._unsealed_tenant_id() FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub._vector_graph_order(p_vector text, p_query text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._vector_graph_order(p_vector text, p_query text) TO memsub_app;
GRANT ALL ON FUNCTION memsub._vector_graph_order(p_vector text, p_query text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._walk_ef_search(p_pool integer, p_share double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub._walk_ef_search(p_pool integer, p_share double precision) TO memsub_app;
GRANT ALL ON FUNCTION memsub._walk_ef_search(p_pool integer, p_share double precision) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub._write_packets_set(p_envelopes jsonb, p_vectors public.vector[], p_before integer[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.access_target_types() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.access_target_types() TO memsub_app;
GRANT ALL ON FUNCTION memsub.access_target_types() TO memsub_analyst;
GRANT ALL ON FUNCTION memsub.access_target_types() TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub.acting_role() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.acting_role() TO memsub_expiry_owner;
GRANT ALL ON FUNCTION memsub.acting_role() TO memsub_retrieval_owner;
GRANT ALL ON FUNCTION memsub.acting_role() TO memsub_app;
GRANT ALL ON FUNCTION memsub.acting_role() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.adk_check_name(p_value text, p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.adk_check_state(p_state jsonb, p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.adk_memory_add(p_app_name text, p_user_id text, p_session_id text, p_memories jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.adk_memory_add(p_app_name text, p_user_id text, p_session_id text, p_memories jsonb) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.adk_memory_search(p_app_name text, p_user_id text, p_query text, p_query_embedding jsonb, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.adk_memory_search(p_app_name text, p_user_id text, p_query text, p_query_embedding jsonb, p_limit integer) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.adk_merged_state(p_app jsonb, p_user jsonb, p_session jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.adk_org_key() FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.adk_session_append_event(p_app_name text, p_user_id text, p_session_id text, p_event jsonb, p_last_update_time double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.adk_session_append_event(p_app_name text, p_user_id text, p_session_id text, p_event jsonb, p_last_update_time double precision) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.adk_session_create(p_app_name text, p_user_id text, p_session_id text, p_state jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.adk_session_create(p_app_name text, p_user_id text, p_session_id text, p_state jsonb) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.adk_session_delete(p_app_name text, p_user_id text, p_session_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.adk_session_delete(p_app_name text, p_user_id text, p_session_id text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.adk_session_get(p_app_name text, p_user_id text, p_session_id text, p_num_recent_events integer, p_after_timestamp double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.adk_session_get(p_app_name text, p_user_id text, p_session_id text, p_num_recent_events integer, p_after_timestamp double precision) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.adk_session_list(p_app_name text, p_user_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.adk_session_list(p_app_name text, p_user_id text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.adk_state_part(p_state jsonb, p_prefix text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.adk_words(p_text text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.adk_write_states(p_app_name text, p_user_id text, p_delta jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.agent_session_add_items(p_session_id text, p_items json) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.agent_session_add_items(p_session_id text, p_items json) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.agent_session_clear(p_session_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.agent_session_clear(p_session_id text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.agent_session_get_items(p_session_id text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.agent_session_get_items(p_session_id text, p_limit integer) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.agent_session_lock(p_session_id text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.agent_session_pop_item(p_session_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.agent_session_pop_item(p_session_id text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.agent_statuses() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.agent_statuses() TO memsub_app;
GRANT ALL ON FUNCTION memsub.agent_statuses() TO memsub_analyst;

GRANT SELECT ON TABLE memsub.agents TO memsub_app;
GRANT SELECT ON TABLE memsub.agents TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.agent_spawn(p_name text, p_task_id bigint, p_session_id text, p_metadata jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.agent_spawn(p_name text, p_task_id bigint, p_session_id text, p_metadata jsonb) TO memsub_app;

GRANT SELECT ON TABLE memsub.world_model_updates TO memsub_app;
GRANT SELECT ON TABLE memsub.world_model_updates TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.apply_world_model_update(p_insight_type text, p_entities jsonb, p_content jsonb, p_confidence double precision, p_insight_id uuid, p_expected_version integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.apply_world_model_update(p_insight_type text, p_entities jsonb, p_content jsonb, p_confidence double precision, p_insight_id uuid, p_expected_version integer) TO memsub_app;

GRANT SELECT,DELETE ON TABLE memsub.knowledge_facts TO memsub_expiry_owner;
GRANT SELECT ON TABLE memsub.knowledge_facts TO memsub_app;
GRANT SELECT ON TABLE memsub.knowledge_facts TO memsub_analyst;
GRANT SELECT ON TABLE memsub.knowledge_facts TO memsub_view_owner;

REVOKE ALL ON FUNCTION memsub.assert_fact(p_subject text, p_predicate text, p_object jsonb, p_confidence double precision, p_source_packet uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.assert_fact(p_subject text, p_predicate text, p_object jsonb, p_confidence double precision, p_source_packet uuid) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.audit_record(p_operation text, p_session_id text, p_task_id bigint, p_memory_entry_id uuid, p_namespace text, p_key text, p_version integer, p_details jsonb, p_agent_id uuid, p_tenant_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.authenticate_api_key(p_api_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.authenticate_api_key(p_api_key text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.authenticate_api_key(p_api_key text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.base64url_decode(p_text text, p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.bind_login(p_login name, p_tenant_id uuid, p_org_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.bind_login(p_login name, p_tenant_id uuid, p_org_id uuid) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub.canonical_uuid_text(p_value text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.check_document_chunks(p_chunks jsonb, p_text text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.check_memory_address(p_namespace text, p_key text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.check_state_delta(p_session memsub.sessions, p_delta jsonb, p_field text) FROM PUBLIC;

GRANT SELECT ON TABLE memsub.checkpoints TO memsub_app;
GRANT SELECT ON TABLE memsub.checkpoints TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.checkpoint_restore(p_checkpoint_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.checkpoint_restore(p_checkpoint_id uuid) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.checkpoint_save(p_task_id bigint, p_state jsonb, p_label text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.checkpoint_save(p_task_id bigint, p_state jsonb, p_label text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.graph_node_types() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.graph_node_types() TO memsub_app;
GRANT ALL ON FUNCTION memsub.graph_node_types() TO memsub_analyst;

GRANT SELECT,DELETE ON TABLE memsub.entity_relationships TO memsub_expiry_owner;
GRANT SELECT ON TABLE memsub.entity_relationships TO memsub_app;
GRANT SELECT ON TABLE memsub.entity_relationships TO memsub_analyst;
GRANT SELECT ON TABLE memsub.entity_relationships TO memsub_view_owner;

REVOKE ALL ON FUNCTION memsub.close_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.close_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_until timestamp with time zone) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.combined_score(p_distance double precision, p_importance double precision, p_last_active timestamp with time zone, p_similarity_weight double precision, p_importance_weight double precision, p_recency_weight double precision, p_half_life interval) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.combined_score(p_distance double precision, p_importance double precision, p_last_active timestamp with time zone, p_similarity_weight double precision, p_importance_weight double precision, p_recency_weight double precision, p_half_life interval) TO memsub_app;
GRANT ALL ON FUNCTION memsub.combined_score(p_distance double precision, p_importance double precision, p_last_active timestamp with time zone, p_similarity_weight double precision, p_importance_weight double precision, p_recency_weight double precision, p_half_life interval) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.consolidate_memories(p_strategy text, p_namespace_prefix text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.consolidate_memories(p_strategy text, p_namespace_prefix text) TO memsub_tenant_admin;

REVOKE ALL ON FUNCTION memsub.consolidation_last_write_wins(p_versions jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.consolidation_merge_objects(p_versions jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.context_mac(p_key_id text, p_message text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.context_roles() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.context_roles() TO memsub_app;
GRANT ALL ON FUNCTION memsub.context_roles() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.count_packet_chunks() FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.create_api_key(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_label text, p_expires_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.create_api_key(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_label text, p_expires_at timestamp with time zone) TO memsub_tenant_admin;

REVOKE ALL ON FUNCTION memsub.current_agent_id() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.current_agent_id() TO memsub_app;
GRANT ALL ON FUNCTION memsub.current_agent_id() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.current_context_roles() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.current_context_roles() TO memsub_expiry_owner;
GRANT ALL ON FUNCTION memsub.current_context_roles() TO memsub_retrieval_owner;
GRANT ALL ON FUNCTION memsub.current_context_roles() TO memsub_app;
GRANT ALL ON FUNCTION memsub.current_context_roles() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.current_org_id() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.current_org_id() TO memsub_expiry_owner;
GRANT ALL ON FUNCTION memsub.current_org_id() TO memsub_retrieval_owner;
GRANT ALL ON FUNCTION memsub.current_org_id() TO memsub_app;
GRANT ALL ON FUNCTION memsub.current_org_id() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.current_session_id() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.current_session_id() TO memsub_expiry_owner;
GRANT ALL ON FUNCTION memsub.current_session_id() TO memsub_retrieval_owner;
GRANT ALL ON FUNCTION memsub.current_session_id() TO memsub_app;
GRANT ALL ON FUNCTION memsub.current_session_id() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.current_task_id() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.current_task_id() TO memsub_app;
GRANT ALL ON FUNCTION memsub.current_task_id() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.current_tenant_id() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.current_tenant_id() TO memsub_expiry_owner;
GRANT ALL ON FUNCTION memsub.current_tenant_id() TO memsub_retrieval_owner;
GRANT ALL ON FUNCTION memsub.current_tenant_id() TO memsub_app;
GRANT ALL ON FUNCTION memsub.current_tenant_id() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.current_user_id() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.current_user_id() TO memsub_expiry_owner;
GRANT ALL ON FUNCTION memsub.current_user_id() TO memsub_retrieval_owner;
GRANT ALL ON FUNCTION memsub.current_user_id() TO memsub_app;
GRANT ALL ON FUNCTION memsub.current_user_id() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.derivation_types() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.derivation_types() TO memsub_app;
GRANT ALL ON FUNCTION memsub.derivation_types() TO memsub_analyst;

GRANT SELECT ON TABLE memsub.document_chunks TO memsub_app;
GRANT SELECT ON TABLE memsub.document_chunks TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.document_chunks_of(p_document_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.document_chunks_of(p_document_id uuid) TO memsub_app;
GRANT ALL ON FUNCTION memsub.document_chunks_of(p_document_id uuid) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.document_chunks_without_embedding(p_document_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.document_chunks_without_embedding(p_document_id uuid) TO memsub_app;
GRANT ALL ON FUNCTION memsub.document_chunks_without_embedding(p_document_id uuid) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.document_embed_chunks(p_document_id uuid, p_embeddings jsonb, p_neighbor_count integer, p_neighbor_max_distance double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.document_embed_chunks(p_document_id uuid, p_embeddings jsonb, p_neighbor_count integer, p_neighbor_max_distance double precision) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.document_index_get(p_file_path text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.document_index_get(p_file_path text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.document_index_get(p_file_path text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.document_index_put(p_file_path text, p_embedding double precision[], p_metadata jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.document_index_put(p_file_path text, p_embedding double precision[], p_metadata jsonb) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.document_ingest(p_file_path text, p_hash text, p_mime text, p_text text, p_chunks jsonb, p_metadata jsonb, p_summary text, p_key_concepts text[], p_entities jsonb, p_neighbor_count integer, p_neighbor_max_distance double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.document_ingest(p_file_path text, p_hash text, p_mime text, p_text text, p_chunks jsonb, p_metadata jsonb, p_summary text, p_key_concepts text[], p_entities jsonb, p_neighbor_count integer, p_neighbor_max_distance double precision) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.document_versions(p_file_path text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.document_versions(p_file_path text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.document_versions(p_file_path text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.drop_context_signing_key(p_key_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.drop_context_signing_key(p_key_id text) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub.edges_as_of(p_as_of timestamp with time zone, p_entity text, p_relationship_type text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.edges_as_of(p_as_of timestamp with time zone, p_entity text, p_relationship_type text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.edges_as_of(p_as_of timestamp with time zone, p_entity text, p_relationship_type text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.embedding_types() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.embedding_types() TO memsub_app;
GRANT ALL ON FUNCTION memsub.embedding_types() TO memsub_analyst;
GRANT ALL ON FUNCTION memsub.embedding_types() TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub.entity_neighbourhood(p_entity text, p_min_confidence double precision, p_limit integer, p_as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.entity_neighbourhood(p_entity text, p_min_confidence double precision, p_limit integer, p_as_of timestamp with time zone) TO memsub_app;
GRANT ALL ON FUNCTION memsub.entity_neighbourhood(p_entity text, p_min_confidence double precision, p_limit integer, p_as_of timestamp with time zone) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.entity_search(p_query_text text, p_query public.vector, p_k integer, p_rrf_k integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.entity_search(p_query_text text, p_query public.vector, p_k integer, p_rrf_k integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub.entity_search(p_query_text text, p_query public.vector, p_k integer, p_rrf_k integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.entity_types() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.entity_types() TO memsub_app;
GRANT ALL ON FUNCTION memsub.entity_types() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.fan_out_packet(p_packet memsub.packet_fields, p_tenant uuid, p_org uuid, p_user uuid, p_default_confidence double precision, p_agent_id text, p_vectors public.vector[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.get_lineage(p_packet_id uuid, p_direction text, p_max_depth integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.get_lineage(p_packet_id uuid, p_direction text, p_max_depth integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub.get_lineage(p_packet_id uuid, p_direction text, p_max_depth integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.packet_scopes() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.packet_scopes() TO memsub_app;
GRANT ALL ON FUNCTION memsub.packet_scopes() TO memsub_analyst;
GRANT ALL ON FUNCTION memsub.packet_scopes() TO memsub_retrieval_owner;
GRANT ALL ON FUNCTION memsub.packet_scopes() TO memsub_expiry_owner;

GRANT SELECT ON TABLE memsub.packet_store TO memsub_app;
GRANT SELECT ON TABLE memsub.packet_store TO memsub_analyst;
GRANT SELECT,DELETE ON TABLE memsub.packet_store TO memsub_expiry_owner;
GRANT SELECT,UPDATE ON TABLE memsub.packet_store TO memsub_retrieval_owner;
GRANT SELECT ON TABLE memsub.packet_store TO memsub_view_owner;

REVOKE ALL ON FUNCTION memsub.get_packet(p_packet_id uuid, p_with_vectors boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.get_packet(p_packet_id uuid, p_with_vectors boolean) TO memsub_app;
GRANT ALL ON FUNCTION memsub.get_packet(p_packet_id uuid, p_with_vectors boolean) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.get_packets(p_packet_ids uuid[], p_with_vectors boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.get_packets(p_packet_ids uuid[], p_with_vectors boolean) TO memsub_app;
GRANT ALL ON FUNCTION memsub.get_packets(p_packet_ids uuid[], p_with_vectors boolean) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.get_packets_with_vector_values(p_packet_ids uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.get_packets_with_vector_values(p_packet_ids uuid[]) TO memsub_app;
GRANT ALL ON FUNCTION memsub.get_packets_with_vector_values(p_packet_ids uuid[]) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.get_thread(p_thread_id uuid, p_limit integer, p_after_cursor bigint, p_with_vectors boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.get_thread(p_thread_id uuid, p_limit integer, p_after_cursor bigint, p_with_vectors boolean) TO memsub_app;
GRANT ALL ON FUNCTION memsub.get_thread(p_thread_id uuid, p_limit integer, p_after_cursor bigint, p_with_vectors boolean) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.get_thread_with_vector_values(p_thread_id uuid, p_limit integer, p_after_cursor bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.get_thread_with_vector_values(p_thread_id uuid, p_limit integer, p_after_cursor bigint) TO memsub_app;
GRANT ALL ON FUNCTION memsub.get_thread_with_vector_values(p_thread_id uuid, p_limit integer, p_after_cursor bigint) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.graph_directions() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.graph_directions() TO memsub_app;
GRANT ALL ON FUNCTION memsub.graph_directions() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.graph_neighbors(p_entity text, p_max_depth integer, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.graph_neighbors(p_entity text, p_max_depth integer, p_limit integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub.graph_neighbors(p_entity text, p_max_depth integer, p_limit integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.graph_neighbors_as_of(p_entity text, p_as_of timestamp with time zone, p_max_depth integer, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.graph_neighbors_as_of(p_entity text, p_as_of timestamp with time zone, p_max_depth integer, p_limit integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub.graph_neighbors_as_of(p_entity text, p_as_of timestamp with time zone, p_max_depth integer, p_limit integer) TO memsub_analyst;

GRANT SELECT ON TABLE memsub.world_model_entities TO memsub_retrieval_owner;
GRANT SELECT ON TABLE memsub.world_model_entities TO memsub_app;
GRANT SELECT ON TABLE memsub.world_model_entities TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.graph_upsert_entity(p_name text, p_entity_type text, p_aliases text[], p_properties jsonb, p_doc_refs jsonb, p_confidence double precision, p_embedding public.vector) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.graph_upsert_entity(p_name text, p_entity_type text, p_aliases text[], p_properties jsonb, p_doc_refs jsonb, p_confidence double precision, p_embedding public.vector) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.hmac_pads(p_key bytea, OUT inner_pad bytea, OUT outer_pad bytea) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.hybrid_search(p_query_text text, p_query public.vector, p_k integer, p_embedding_type text, p_vector_weight double precision, p_text_weight double precision, p_rrf_k integer, p_candidates integer, p_importance_weight double precision, p_recency_weight double precision, p_half_life interval, p_record_access boolean, p_agent_id text, p_with_packets boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.hybrid_search(p_query_text text, p_query public.vector, p_k integer, p_embedding_type text, p_vector_weight double precision, p_text_weight double precision, p_rrf_k integer, p_candidates integer, p_importance_weight double precision, p_recency_weight double precision, p_half_life interval, p_record_access boolean, p_agent_id text, p_with_packets boolean) TO memsub_app;
GRANT ALL ON FUNCTION memsub.hybrid_search(p_query_text text, p_query public.vector, p_k integer, p_embedding_type text, p_vector_weight double precision, p_text_weight double precision, p_rrf_k integer, p_candidates integer, p_importance_weight double precision, p_recency_weight double precision, p_half_life interval, p_record_access boolean, p_agent_id text, p_with_packets boolean) TO memsub_analyst;

REVOKE ALL ON PROCEDURE memsub.install_row_security(IN p_table regclass, IN p_layers text[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.is_platform_admin() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.is_platform_admin() TO memsub_expiry_owner;
GRANT ALL ON FUNCTION memsub.is_platform_admin() TO memsub_retrieval_owner;
GRANT ALL ON FUNCTION memsub.is_platform_admin() TO memsub_app;
GRANT ALL ON FUNCTION memsub.is_platform_admin() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.is_tenant_admin() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.is_tenant_admin() TO memsub_expiry_owner;
GRANT ALL ON FUNCTION memsub.is_tenant_admin() TO memsub_retrieval_owner;
GRANT ALL ON FUNCTION memsub.is_tenant_admin() TO memsub_app;
GRANT ALL ON FUNCTION memsub.is_tenant_admin() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.langgraph_check_text(p_value text, p_field text, p_blank_allowed boolean) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.langgraph_checkpoint_get(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_checkpoint_get(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_checkpoint_list(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_filter jsonb, p_before text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_checkpoint_list(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_filter jsonb, p_before text, p_limit integer) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_checkpoint_put(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_parent_checkpoint_id text, p_checkpoint_type text, p_checkpoint bytea, p_metadata jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_checkpoint_put(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_parent_checkpoint_id text, p_checkpoint_type text, p_checkpoint bytea, p_metadata jsonb) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_checkpoint_put_writes(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_task_id text, p_task_path text, p_idx integer[], p_channels text[], p_value_types text[], p_values bytea[], p_replace boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_checkpoint_put_writes(p_thread_id text, p_checkpoint_ns text, p_checkpoint_id text, p_task_id text, p_task_path text, p_idx integer[], p_channels text[], p_value_types text[], p_values bytea[], p_replace boolean) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_runs_delete(p_run_ids text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_runs_delete(p_run_ids text[]) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_store_check_namespace(p_namespace text[], p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.langgraph_store_get(p_namespace text[], p_key text, p_refresh_ttl boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_store_get(p_namespace text[], p_key text, p_refresh_ttl boolean) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_store_list_namespaces(p_prefix text[], p_suffix text[], p_max_depth integer, p_limit integer, p_offset integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_store_list_namespaces(p_prefix text[], p_suffix text[], p_max_depth integer, p_limit integer, p_offset integer) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_store_matches(p_value jsonb, p_filter jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.langgraph_store_put(p_namespace text[], p_key text, p_value jsonb, p_ttl_minutes double precision, p_fields text[], p_embeddings public.vector[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_store_put(p_namespace text[], p_key text, p_value jsonb, p_ttl_minutes double precision, p_fields text[], p_embeddings public.vector[]) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_store_search(p_namespace_prefix text[], p_filter jsonb, p_query_embedding public.vector, p_limit integer, p_offset integer, p_refresh_ttl boolean, p_distance text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_store_search(p_namespace_prefix text[], p_filter jsonb, p_query_embedding public.vector, p_limit integer, p_offset integer, p_refresh_ttl boolean, p_distance text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_store_sweep() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_store_sweep() TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_thread_copy(p_source_thread_id text, p_target_thread_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_thread_copy(p_source_thread_id text, p_target_thread_id text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_thread_delete(p_thread_ids text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_thread_delete(p_thread_ids text[]) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.langgraph_thread_prune(p_thread_ids text[], p_strategy text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.langgraph_thread_prune(p_thread_ids text[], p_strategy text) TO memsub_app;

GRANT SELECT ON TABLE memsub.importance_learning_runs TO memsub_app;
GRANT SELECT ON TABLE memsub.importance_learning_runs TO memsub_analyst;
GRANT SELECT,INSERT ON TABLE memsub.importance_learning_runs TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub.learn_importance(p_access_rate double precision, p_feedback_rate double precision, p_half_life interval, p_floor double precision, p_idle_after interval) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.learn_importance(p_access_rate double precision, p_feedback_rate double precision, p_half_life interval, p_floor double precision, p_idle_after interval) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.limit_value(p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.limit_value(p_name text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.limit_value(p_name text) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub.limit_value(p_name text) TO memsub_retrieval_owner;
GRANT ALL ON FUNCTION memsub.limit_value(p_name text) TO memsub_expiry_owner;

REVOKE ALL ON FUNCTION memsub.lineage_directions() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.lineage_directions() TO memsub_app;
GRANT ALL ON FUNCTION memsub.lineage_directions() TO memsub_analyst;
GRANT ALL ON FUNCTION memsub.lineage_directions() TO memsub_expiry_owner;

REVOKE ALL ON FUNCTION memsub.lineage_nodes(p_tenant_id uuid, p_packet_ids uuid[]) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.link_document_chunks(p_document_id uuid, p_count integer, p_max_distance double precision) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.list_api_keys() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.list_api_keys() TO memsub_tenant_admin;

REVOKE ALL ON FUNCTION memsub.maintain_lock(p_task text, OUT taken boolean, OUT holder text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.maintain_lock(p_task text, OUT taken boolean, OUT holder text) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub.maintain_tasks() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.maintain_tasks() TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub.maintenance_lock_holder(p_task text, p_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.maintenance_lock_holder(p_task text, p_key text) TO memsub_view_owner;
GRANT ALL ON FUNCTION memsub.maintenance_lock_holder(p_task text, p_key text) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub.memory_context(p_session_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_context(p_session_id text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.memory_context(p_session_id text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.memory_types() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_types() TO memsub_app;
GRANT ALL ON FUNCTION memsub.memory_types() TO memsub_analyst;

GRANT SELECT ON TABLE memsub.memory_entries TO memsub_app;
GRANT SELECT ON TABLE memsub.memory_entries TO memsub_analyst;
GRANT SELECT ON TABLE memsub.memory_entries TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub.memory_delete(p_namespace text, p_key text, p_expected_version integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_delete(p_namespace text, p_key text, p_expected_version integer) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.memory_embeddings_envelope_guard() FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.memory_get(p_namespace text, p_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_get(p_namespace text, p_key text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.memory_get(p_namespace text, p_key text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.memory_history(p_namespace text, p_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_history(p_namespace text, p_key text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.memory_history(p_namespace text, p_key text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.memory_list(p_namespace_prefix text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_list(p_namespace_prefix text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.memory_list(p_namespace_prefix text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.memory_maintenance(p_threshold double precision, p_half_life interval) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_maintenance(p_threshold double precision, p_half_life interval) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.memory_remember(p_namespace text, p_key text, p_value jsonb, p_tier text, p_importance double precision, p_expected_version integer, p_kind text, p_metadata jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_remember(p_namespace text, p_key text, p_value jsonb, p_tier text, p_importance double precision, p_expected_version integer, p_kind text, p_metadata jsonb) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.memory_search(p_query_text text, p_query public.vector, p_k integer, p_namespace_prefix text, p_rrf_k integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_search(p_query_text text, p_query public.vector, p_k integer, p_namespace_prefix text, p_rrf_k integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub.memory_search(p_query_text text, p_query public.vector, p_k integer, p_namespace_prefix text, p_rrf_k integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.memory_strength(p_decay_weight double precision, p_last_access_ts timestamp with time zone, p_created_at timestamp with time zone, p_at timestamp with time zone, p_half_life interval) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_strength(p_decay_weight double precision, p_last_access_ts timestamp with time zone, p_created_at timestamp with time zone, p_at timestamp with time zone, p_half_life interval) TO memsub_app;
GRANT ALL ON FUNCTION memsub.memory_strength(p_decay_weight double precision, p_last_access_ts timestamp with time zone, p_created_at timestamp with time zone, p_at timestamp with time zone, p_half_life interval) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.memory_tiers() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_tiers() TO memsub_app;
GRANT ALL ON FUNCTION memsub.memory_tiers() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.memory_touch(p_namespace text, p_key text, p_half_life interval) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_touch(p_namespace text, p_key text, p_half_life interval) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.memory_write(p_namespace text, p_key text, p_value jsonb, p_expected_version integer, p_memory_type text, p_metadata jsonb, p_embedding public.vector) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.memory_write(p_namespace text, p_key text, p_value jsonb, p_expected_version integer, p_memory_type text, p_metadata jsonb, p_embedding public.vector) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.normalize_text(p_value text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.normalize_text(p_value text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.normalize_text(p_value text) TO memsub_analyst;
GRANT ALL ON FUNCTION memsub.normalize_text(p_value text) TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub.packet_content_hash(p_packet_type text, p_payload jsonb, p_thread_id uuid, p_parent_ids uuid[], p_scope text, p_org_id uuid, p_user_id uuid, p_session_id text, p_timestamp timestamp with time zone, p_stated_packet_id uuid) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.packet_store_guard() FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.purge_expired(p_tenant_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.purge_expired(p_tenant_id uuid) TO memsub_app;

GRANT SELECT ON TABLE memsub.memory_access_log TO memsub_app;
GRANT SELECT ON TABLE memsub.memory_access_log TO memsub_analyst;
GRANT SELECT,UPDATE ON TABLE memsub.memory_access_log TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub.record_access(p_target_type text, p_target_id uuid, p_agent_id text, p_access_context text, p_query_text text, p_relevance_score double precision, p_was_useful boolean, p_feedback_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.record_access(p_target_type text, p_target_id uuid, p_agent_id text, p_access_context text, p_query_text text, p_relevance_score double precision, p_was_useful boolean, p_feedback_reason text) TO memsub_app;

GRANT SELECT,DELETE ON TABLE memsub.agent_memory_events TO memsub_expiry_owner;
GRANT SELECT ON TABLE memsub.agent_memory_events TO memsub_app;
GRANT SELECT ON TABLE memsub.agent_memory_events TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.record_event(p_agent_id text, p_event_type text, p_content jsonb, p_packet_id uuid, p_timestamp timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.record_event(p_agent_id text, p_event_type text, p_content jsonb, p_packet_id uuid, p_timestamp timestamp with time zone) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.record_feedback(p_access_id uuid, p_was_useful boolean, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.record_feedback(p_access_id uuid, p_was_useful boolean, p_reason text) TO memsub_app;

GRANT SELECT,DELETE ON TABLE memsub.reasoning_traces TO memsub_expiry_owner;
GRANT SELECT ON TABLE memsub.reasoning_traces TO memsub_app;
GRANT SELECT ON TABLE memsub.reasoning_traces TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.record_reasoning_trace(p_agent_id text, p_packet_id uuid, p_steps jsonb, p_extracted_features jsonb, p_inference_steps jsonb, p_reasoning_tokens integer, p_decision_tokens integer, p_confidence_scores jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.record_reasoning_trace(p_agent_id text, p_packet_id uuid, p_steps jsonb, p_extracted_features jsonb, p_inference_steps jsonb, p_reasoning_tokens integer, p_decision_tokens integer, p_confidence_scores jsonb) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.reflection_priorities() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.reflection_priorities() TO memsub_app;
GRANT ALL ON FUNCTION memsub.reflection_priorities() TO memsub_analyst;
GRANT ALL ON FUNCTION memsub.reflection_priorities() TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub.reflection_types() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.reflection_types() TO memsub_app;
GRANT ALL ON FUNCTION memsub.reflection_types() TO memsub_analyst;
GRANT ALL ON FUNCTION memsub.reflection_types() TO memsub_retrieval_owner;

GRANT SELECT,DELETE ON TABLE memsub.reflection_store TO memsub_expiry_owner;
GRANT SELECT ON TABLE memsub.reflection_store TO memsub_app;
GRANT SELECT ON TABLE memsub.reflection_store TO memsub_analyst;
GRANT SELECT ON TABLE memsub.reflection_store TO memsub_view_owner;

REVOKE ALL ON FUNCTION memsub.record_reflection(p_reflection_type text, p_content text, p_context text, p_entities text[], p_tags text[], p_confidence double precision, p_priority text, p_source_agent text, p_source_packet uuid, p_task_id text, p_vector public.vector, p_expires_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.record_reflection(p_reflection_type text, p_content text, p_context text, p_entities text[], p_tags text[], p_confidence double precision, p_priority text, p_source_agent text, p_source_packet uuid, p_task_id text, p_vector public.vector, p_expires_at timestamp with time zone) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.summary_scope_types() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.summary_scope_types() TO memsub_app;
GRANT ALL ON FUNCTION memsub.summary_scope_types() TO memsub_analyst;

GRANT SELECT ON TABLE memsub.memory_summaries TO memsub_app;
GRANT SELECT ON TABLE memsub.memory_summaries TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.record_summary(p_scope_type text, p_scope_value text, p_summary_text text, p_source_packet_ids uuid[], p_key_facts jsonb, p_key_entities text[], p_key_decisions text[], p_vector public.vector, p_confidence double precision, p_valid_until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.record_summary(p_scope_type text, p_scope_value text, p_summary_text text, p_source_packet_ids uuid[], p_key_facts jsonb, p_key_entities text[], p_key_decisions text[], p_vector public.vector, p_confidence double precision, p_valid_until timestamp with time zone) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.task_outcomes() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.task_outcomes() TO memsub_app;
GRANT ALL ON FUNCTION memsub.task_outcomes() TO memsub_analyst;

GRANT SELECT ON TABLE memsub.task_reflections TO memsub_app;
GRANT SELECT ON TABLE memsub.task_reflections TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.record_task_reflection(p_task_id text, p_outcome text, p_task_description text, p_what_worked text[], p_what_failed text[], p_false_constraints text[], p_helpful_patterns text[], p_lessons text[], p_recommendations text[], p_related_decisions uuid[], p_execution_time_ms double precision, p_metrics_improved jsonb, p_metrics_degraded jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.record_task_reflection(p_task_id text, p_outcome text, p_task_description text, p_what_worked text[], p_what_failed text[], p_false_constraints text[], p_helpful_patterns text[], p_lessons text[], p_recommendations text[], p_related_decisions uuid[], p_execution_time_ms double precision, p_metrics_improved jsonb, p_metrics_degraded jsonb) TO memsub_app;

REVOKE ALL ON PROCEDURE memsub.refresh_memory_views(INOUT run_id uuid) FROM PUBLIC;
GRANT ALL ON PROCEDURE memsub.refresh_memory_views(INOUT run_id uuid) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub.require_active_session(p_session memsub.sessions) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.require_login(p_login name) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.require_shared_packet(p_packet memsub.packet_store, p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.retrieve_reflections(p_query public.vector, p_tags text[], p_k integer, p_reflection_types text[], p_min_priority text, p_task_id text, p_require_tags boolean, p_record_access boolean, p_query_text text, p_agent_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.retrieve_reflections(p_query public.vector, p_tags text[], p_k integer, p_reflection_types text[], p_min_priority text, p_task_id text, p_require_tags boolean, p_record_access boolean, p_query_text text, p_agent_id text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.retrieve_reflections(p_query public.vector, p_tags text[], p_k integer, p_reflection_types text[], p_min_priority text, p_task_id text, p_require_tags boolean, p_record_access boolean, p_query_text text, p_agent_id text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.revoke_api_key(p_key_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.revoke_api_key(p_key_id text) TO memsub_tenant_admin;

REVOKE ALL ON FUNCTION memsub.search_modes() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.search_modes() TO memsub_app;
GRANT ALL ON FUNCTION memsub.search_modes() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.search_rank_orders() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.search_rank_orders() TO memsub_app;
GRANT ALL ON FUNCTION memsub.search_rank_orders() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.search_semantic_memory(p_query public.vector, p_limit integer, p_agent_id text, p_mode text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.search_semantic_memory(p_query public.vector, p_limit integer, p_agent_id text, p_mode text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.search_semantic_memory(p_query public.vector, p_limit integer, p_agent_id text, p_mode text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.semantic_search(p_query public.vector, p_k integer, p_embedding_type text, p_thread_id uuid, p_tags text[], p_packet_type text, p_since timestamp with time zone, p_until timestamp with time zone, p_min_importance double precision, p_rank_by text, p_record_access boolean, p_query_text text, p_agent_id text, p_mode text, p_ef_search integer, p_max_scan_tuples integer, p_with_packets boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.semantic_search(p_query public.vector, p_k integer, p_embedding_type text, p_thread_id uuid, p_tags text[], p_packet_type text, p_since timestamp with time zone, p_until timestamp with time zone, p_min_importance double precision, p_rank_by text, p_record_access boolean, p_query_text text, p_agent_id text, p_mode text, p_ef_search integer, p_max_scan_tuples integer, p_with_packets boolean) TO memsub_app;
GRANT ALL ON FUNCTION memsub.semantic_search(p_query public.vector, p_k integer, p_embedding_type text, p_thread_id uuid, p_tags text[], p_packet_type text, p_since timestamp with time zone, p_until timestamp with time zone, p_min_importance double precision, p_rank_by text, p_record_access boolean, p_query_text text, p_agent_id text, p_mode text, p_ef_search integer, p_max_scan_tuples integer, p_with_packets boolean) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.session_append_event(p_session_id text, p_event jsonb, p_state_delta jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.session_append_event(p_session_id text, p_event jsonb, p_state_delta jsonb) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.session_create(p_session_id text, p_project_id text, p_app_name text, p_state jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.session_create(p_session_id text, p_project_id text, p_app_name text, p_state jsonb) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.session_delete(p_session_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.session_delete(p_session_id text) TO memsub_tenant_admin;

REVOKE ALL ON FUNCTION memsub.session_end_turn(p_session_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.session_end_turn(p_session_id text) TO memsub_app;

GRANT SELECT ON TABLE memsub.session_events TO memsub_app;
GRANT SELECT ON TABLE memsub.session_events TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.session_get_events(p_session_id text, p_after_position integer, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.session_get_events(p_session_id text, p_after_position integer, p_limit integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub.session_get_events(p_session_id text, p_after_position integer, p_limit integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.session_merge_state(p_session_id text, p_state_delta jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.session_merge_state(p_session_id text, p_state_delta jsonb) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.session_terminate(p_session_id text, p_memory_type text, p_cancel_open_tasks boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.session_terminate(p_session_id text, p_memory_type text, p_cancel_open_tasks boolean) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.set_actor(p_agent_id uuid, p_task_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.set_actor(p_agent_id uuid, p_task_id bigint) TO memsub_app;
GRANT ALL ON FUNCTION memsub.set_actor(p_agent_id uuid, p_task_id bigint) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.set_context(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_session_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.set_context(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_session_id text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.set_context(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_session_id text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.set_context_signed(p_token text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.set_context_signed(p_token text) TO memsub_app;
GRANT ALL ON FUNCTION memsub.set_context_signed(p_token text) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.set_context_signing_key(p_key_id text, p_secret bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.set_context_signing_key(p_key_id text, p_secret bytea) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub.set_unbound_logins(p_mode text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.set_unbound_logins(p_mode text) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub.set_vector_index_build(p_embedding_type text, p_m integer, p_ef_construction integer) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.store_context(p_tenant_id uuid, p_org_id uuid, p_user_id uuid, p_roles text[], p_session_id text) FROM PUBLIC;

GRANT SELECT ON TABLE memsub.memory_embeddings TO memsub_app;
GRANT SELECT ON TABLE memsub.memory_embeddings TO memsub_analyst;
GRANT SELECT ON TABLE memsub.memory_embeddings TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub.store_embedding(p_packet_id uuid, p_embedding_type text, p_vector public.vector, p_chunk_index integer, p_chunk_text text, p_metadata jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.store_embedding(p_packet_id uuid, p_embedding_type text, p_vector public.vector, p_chunk_index integer, p_chunk_text text, p_metadata jsonb) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.store_memory_version(p_namespace text, p_key text, p_value jsonb, p_memory_type text, p_metadata jsonb, p_expected_version integer, p_check_version boolean, p_delete boolean, p_operation text, p_details jsonb, p_session_id text, p_embedding public.vector) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.store_packet_envelope(p_envelope jsonb, p_position integer, p_vectors public.vector[]) FROM PUBLIC;

GRANT SELECT ON TABLE memsub.semantic_memory TO memsub_app;
GRANT SELECT ON TABLE memsub.semantic_memory TO memsub_analyst;
GRANT SELECT,UPDATE ON TABLE memsub.semantic_memory TO memsub_retrieval_owner;

REVOKE ALL ON FUNCTION memsub.store_semantic_memory(p_agent_id text, p_vector public.vector, p_payload jsonb, p_embedding_type text, p_scope text, p_importance_score double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.store_semantic_memory(p_agent_id text, p_vector public.vector, p_payload jsonb, p_embedding_type text, p_scope text, p_importance_score double precision) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.summaries_due(p_as_of timestamp with time zone, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.summaries_due(p_as_of timestamp with time zone, p_limit integer) TO memsub_app;
GRANT ALL ON FUNCTION memsub.summaries_due(p_as_of timestamp with time zone, p_limit integer) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.supersede_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_from timestamp with time zone, p_confidence double precision, p_evidence jsonb, p_source_type text, p_target_type text, p_source_packet uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.supersede_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_from timestamp with time zone, p_confidence double precision, p_evidence jsonb, p_source_type text, p_target_type text, p_source_packet uuid) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.take_maintenance_lock(p_task text, p_key text, p_wait boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.take_maintenance_lock(p_task text, p_key text, p_wait boolean) TO memsub_view_owner;
GRANT ALL ON FUNCTION memsub.take_maintenance_lock(p_task text, p_key text, p_wait boolean) TO memsub_retrieval_owner;

GRANT SELECT ON TABLE memsub.world_model_snapshots TO memsub_app;
GRANT SELECT ON TABLE memsub.world_model_snapshots TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.take_world_model_snapshot(p_description text, p_created_by text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.take_world_model_snapshot(p_description text, p_created_by text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.task_create(p_type text, p_payload jsonb, p_session_id text, p_parent_task_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.task_create(p_type text, p_payload jsonb, p_session_id text, p_parent_task_id bigint) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.task_link_session(p_task_id bigint, p_session_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.task_link_session(p_task_id bigint, p_session_id text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.task_set_status(p_task_id bigint, p_status text, p_result jsonb, p_error text) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.task_set_status(p_task_id bigint, p_status text, p_result jsonb, p_error text) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.temporal_edge_add(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_from timestamp with time zone, p_valid_until timestamp with time zone, p_confidence double precision, p_evidence jsonb, p_source_type text, p_target_type text, p_source_packet uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.temporal_edge_add(p_source_entity text, p_relationship_type text, p_target_entity text, p_valid_from timestamp with time zone, p_valid_until timestamp with time zone, p_confidence double precision, p_evidence jsonb, p_source_type text, p_target_type text, p_source_packet uuid) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.traverse_graph(p_start_entity text, p_max_depth integer, p_relationship_types text[], p_min_confidence double precision, p_direction text, p_min_path_confidence double precision, p_limit integer, p_as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.traverse_graph(p_start_entity text, p_max_depth integer, p_relationship_types text[], p_min_confidence double precision, p_direction text, p_min_path_confidence double precision, p_limit integer, p_as_of timestamp with time zone) TO memsub_app;
GRANT ALL ON FUNCTION memsub.traverse_graph(p_start_entity text, p_max_depth integer, p_relationship_types text[], p_min_confidence double precision, p_direction text, p_min_path_confidence double precision, p_limit integer, p_as_of timestamp with time zone) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.trust_login(p_login name) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.trust_login(p_login name) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub.tune_search(p_samples integer, p_k integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.tune_search(p_samples integer, p_k integer) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub.unbind_login(p_login name, p_tenant_id uuid, p_org_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.unbind_login(p_login name, p_tenant_id uuid, p_org_id uuid) TO memsub_platform_admin;

REVOKE ALL ON FUNCTION memsub.upsert_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_confidence double precision, p_source_packet uuid, p_seen_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.upsert_relationship(p_source_entity text, p_relationship_type text, p_target_entity text, p_confidence double precision, p_source_packet uuid, p_seen_at timestamp with time zone) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.vector_dimension() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.vector_dimension() TO memsub_app;
GRANT ALL ON FUNCTION memsub.vector_dimension() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.vector_index_builds() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.vector_index_builds() TO memsub_platform_admin;
GRANT ALL ON FUNCTION memsub.vector_index_builds() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.visible_packet(p_packet_id uuid, p_field text) FROM PUBLIC;

REVOKE ALL ON FUNCTION memsub.world_model_state_at(p_snapshot_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.world_model_state_at(p_snapshot_id uuid) TO memsub_app;
GRANT ALL ON FUNCTION memsub.world_model_state_at(p_snapshot_id uuid) TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.world_model_state_version() FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.world_model_state_version() TO memsub_app;
GRANT ALL ON FUNCTION memsub.world_model_state_version() TO memsub_analyst;

REVOKE ALL ON FUNCTION memsub.write_packet(p_envelope jsonb, p_vectors public.vector[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.write_packet(p_envelope jsonb, p_vectors public.vector[]) TO memsub_app;

REVOKE ALL ON FUNCTION memsub.write_packets(p_envelopes jsonb, p_vectors public.vector[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memsub.write_packets(p_envelopes jsonb, p_vectors public.vector[]) TO memsub_app;

GRANT SELECT ON TABLE memsub.adk_app_states TO memsub_app;
GRANT SELECT ON TABLE memsub.adk_app_states TO memsub_analyst;

GRANT SELECT ON TABLE memsub.adk_events TO memsub_app;
GRANT SELECT ON TABLE memsub.adk_events TO memsub_analyst;

GRANT SELECT ON TABLE memsub.adk_memories TO memsub_app;
GRANT SELECT ON TABLE memsub.adk_memories TO memsub_analyst;

GRANT SELECT ON TABLE memsub.adk_sessions TO memsub_app;
GRANT SELECT ON TABLE memsub.adk_sessions TO memsub_analyst;

GRANT SELECT ON TABLE memsub.adk_user_states TO memsub_app;
GRANT SELECT ON TABLE memsub.adk_user_states TO memsub_analyst;

GRANT SELECT ON TABLE memsub.agent_session_items TO memsub_app;
GRANT SELECT ON TABLE memsub.agent_session_items TO memsub_analyst;

GRANT SELECT ON TABLE memsub.api_keys TO memsub_retrieval_owner;

GRANT SELECT(tenant_id) ON TABLE memsub.api_keys TO memsub_app;
GRANT SELECT(tenant_id) ON TABLE memsub.api_keys TO memsub_analyst;

GRANT SELECT(key_id) ON TABLE memsub.api_keys TO memsub_app;
GRANT SELECT(key_id) ON TABLE memsub.api_keys TO memsub_analyst;

GRANT SELECT(org_id) ON TABLE memsub.api_keys TO memsub_app;
GRANT SELECT(org_id) ON TABLE memsub.api_keys TO memsub_analyst;

GRANT SELECT(user_id) ON TABLE memsub.api_keys TO memsub_app;
GRANT SELECT(user_id) ON TABLE memsub.api_keys TO memsub_analyst;

GRANT SELECT(roles) ON TABLE memsub.api_keys TO memsub_app;
GRANT SELECT(roles) ON TABLE memsub.api_keys TO memsub_analyst;

GRANT SELECT(label) ON TABLE memsub.api_keys TO memsub_app;
GRANT SELECT(label) ON TABLE memsub.api_keys TO memsub_analyst;

GRANT SELECT(created_at) ON TABLE memsub.api_keys TO memsub_app;
GRANT SELECT(created_at) ON TABLE memsub.api_keys TO memsub_analyst;

GRANT SELECT(created_by) ON TABLE memsub.api_keys TO memsub_app;
GRANT SELECT(created_by) ON TABLE memsub.api_keys TO memsub_analyst;

GRANT SELECT(expires_at) ON TABLE memsub.api_keys TO memsub_app;
GRANT SELECT(expires_at) ON TABLE memsub.api_keys TO memsub_analyst;

GRANT SELECT(revoked_at) ON TABLE memsub.api_keys TO memsub_app;
GRANT SELECT(revoked_at) ON TABLE memsub.api_keys TO memsub_analyst;

GRANT SELECT ON TABLE memsub.audit TO memsub_app;
GRANT SELECT ON TABLE memsub.audit TO memsub_analyst;

GRANT SELECT ON TABLE memsub.graph_nodes TO memsub_app;
GRANT SELECT ON TABLE memsub.graph_nodes TO memsub_analyst;

GRANT SELECT ON TABLE memsub.installation_settings TO memsub_app;
GRANT SELECT ON TABLE memsub.installation_settings TO memsub_analyst;

GRANT SELECT ON TABLE memsub.langgraph_checkpoint_writes TO memsub_app;
GRANT SELECT ON TABLE memsub.langgraph_checkpoint_writes TO memsub_analyst;

GRANT SELECT ON TABLE memsub.langgraph_checkpoints TO memsub_app;
GRANT SELECT ON TABLE memsub.langgraph_checkpoints TO memsub_analyst;

GRANT SELECT ON TABLE memsub.langgraph_store_items TO memsub_app;
GRANT SELECT ON TABLE memsub.langgraph_store_items TO memsub_analyst;

GRANT SELECT ON TABLE memsub.langgraph_store_vectors TO memsub_app;
GRANT SELECT ON TABLE memsub.langgraph_store_vectors TO memsub_analyst;

GRANT SELECT ON TABLE memsub.limits TO memsub_app;
GRANT SELECT ON TABLE memsub.limits TO memsub_analyst;

GRANT SELECT ON TABLE memsub.login_bindings TO memsub_platform_admin;

GRANT SELECT ON TABLE memsub.mv_agent_recent_important TO memsub_owner;

GRANT SELECT ON TABLE memsub.mv_entity_graph TO memsub_owner;

GRANT SELECT ON TABLE memsub.mv_high_confidence_facts TO memsub_owner;

GRANT SELECT ON TABLE memsub.mv_reflection_patterns TO memsub_owner;

GRANT SELECT ON TABLE memsub.packet_threads TO memsub_app;
GRANT SELECT ON TABLE memsub.packet_threads TO memsub_analyst;

GRANT SELECT ON TABLE memsub.packet_tombstones TO memsub_app;
GRANT SELECT ON TABLE memsub.packet_tombstones TO memsub_analyst;
GRANT SELECT,INSERT ON TABLE memsub.packet_tombstones TO memsub_expiry_owner;

GRANT SELECT ON TABLE memsub.schema_history TO memsub_analyst;

GRANT SELECT ON TABLE memsub.schema_repeatable_history TO memsub_analyst;

GRANT SELECT ON TABLE memsub.search_stats TO memsub_app;
GRANT SELECT ON TABLE memsub.search_stats TO memsub_analyst;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE memsub.search_stats TO memsub_platform_admin;

GRANT SELECT ON TABLE memsub.tenant_agent_recent_important TO memsub_app;
GRANT SELECT ON TABLE memsub.tenant_agent_recent_important TO memsub_analyst;

GRANT SELECT ON TABLE memsub.tenant_entity_graph TO memsub_app;
GRANT SELECT ON TABLE memsub.tenant_entity_graph TO memsub_analyst;

GRANT SELECT ON TABLE memsub.tenant_high_confidence_facts TO memsub_app;
GRANT SELECT ON TABLE memsub.tenant_high_confidence_facts TO memsub_analyst;

GRANT SELECT ON TABLE memsub.tenant_reflection_patterns TO memsub_app;
GRANT SELECT ON TABLE memsub.tenant_reflection_patterns TO memsub_analyst;

GRANT SELECT ON TABLE memsub.world_model_state TO memsub_app;
GRANT SELECT ON TABLE memsub.world_model_state TO memsub_analyst;
