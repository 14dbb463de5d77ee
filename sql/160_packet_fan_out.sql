-- Area: packets. Seed: seed 000 "DATA FLOW DIAGRAM".
--
-- The data flow of seed 000: a packet's payload fans out into the layer tables, in the packet's transaction.
--
-- The payload is free (seed 004, invariant 3): memsub never reads meaning into it. A writer asks for fan-out
-- with the envelope's own `memory` field, and memsub.write_packet(s) calls memsub._fan_out_packet() with it for
-- every newly stored packet (not for a deduplicated one). Keys of `memory` (docs/layers.md):
--   facts          [{subject, predicate, object, confidence?}]                     -> knowledge_facts
--   relationships  [{source_entity, relationship_type, target_entity, confidence?}] -> entity_relationships
--   embeddings     [{embedding_type, vector, chunk_index?, chunk_text?, metadata?}]  -> memory_embeddings
--   reasoning_trace {agent_id?, steps?, extracted_features?, inference_steps?, reasoning_tokens?,
--                    decision_tokens?, confidence_scores?}                            -> reasoning_traces
-- Any bad element fails the whole write; the error's column names the element, e.g. memory.facts[1].subject.
-- Facts and relationships are tenant-wide knowledge, so a cursor or l-private packet cannot ask for them (22023).

drop function if exists memsub.fan_out_packet(uuid, jsonb, double precision, text);
drop function if exists memsub.fan_out_packet(uuid, jsonb, text, double precision, text);
drop function if exists memsub.fan_out_packet(memsub.packet_fields, uuid, uuid, uuid, double precision, text);
create or replace function memsub._fan_out_packet(
    p_packet             memsub.packet_fields,
    p_tenant             uuid,
    p_org                uuid,
    p_user               uuid,
    p_default_confidence double precision,
    p_agent_id           text,
    p_vectors            vector[]
) returns jsonb
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
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
comment on function memsub._fan_out_packet(memsub.packet_fields, uuid, uuid, uuid, double precision, text, vector[]) is
    'Internal to write_packet(s): writes the envelope''s memory field (facts, relationships, embeddings, '
    'reasoning_trace) into the layer tables for a newly stored packet (its fields, written by p_user of p_org in '
    'p_tenant; p_vectors: the vectors of memory.embeddings given apart, or NULL when they are in the envelope) and '
    'returns the rows written per table. Not granted to clients.';
