-- memsub 2.46.0: the internal routines (no client role may execute them) start with `_`.
--
-- The public API is what `\df memsub.[^_]*` lists (docs/development.md), and internal helpers start with `_`.
-- These routines are granted to no client role (a trigger function, an argument check, a writer a SECURITY
-- DEFINER function calls, the procedure the area files call to install row-level security) and had no prefix.
-- Each is renamed where it exists: a database upgraded from a release whose re-runnable SQL (sql/) created it.
-- A fresh installation creates none of them in the migrations, so there is nothing to rename; the re-runnable SQL
-- applied after this file creates them under the new names (create or replace keeps a renamed routine, its owner
-- and its grants). Triggers and policies name a routine by its oid and follow the rename.
--
-- The signatures are the ones the re-runnable SQL had before this release. An older signature of the same name,
-- left by an older release, is not renamed: the re-runnable SQL drops it by its old name, as before.
-- Three keep their names: memsub.set_vector_index_build, which an operator calls (`memsub vector-index rebuild`),
-- and memsub.consolidation_last_write_wins and consolidation_merge_objects, the built-in strategies
-- consolidate_memories finds by the name consolidation_<strategy>, beside those an operator adds.

do $$
declare
    v_signature text;
    v_routine   regprocedure;
begin
    foreach v_signature in array array[
        'memsub.adk_check_name(text, text)',
        'memsub.adk_check_state(jsonb, text)',
        'memsub.adk_merged_state(jsonb, jsonb, jsonb)',
        'memsub.adk_org_key()',
        'memsub.adk_state_part(jsonb, text)',
        'memsub.adk_words(text)',
        'memsub.adk_write_states(text, text, jsonb)',
        'memsub.agent_session_lock(text)',
        'memsub.audit_record(text, text, bigint, uuid, text, text, integer, jsonb, uuid, uuid)',
        'memsub.base64url_decode(text, text)',
        'memsub.canonical_uuid_text(text)',
        'memsub.check_document_chunks(jsonb, text)',
        'memsub.check_memory_address(text, text)',
        'memsub.check_state_delta(memsub.sessions, jsonb, text)',
        'memsub.context_mac(text, text)',
        'memsub.count_packet_chunks()',
        'memsub.fan_out_packet(memsub.packet_fields, uuid, uuid, uuid, double precision, text, vector[])',
        'memsub.hmac_pads(bytea)',
        'memsub.langgraph_check_text(text, text, boolean)',
        'memsub.langgraph_store_check_namespace(text[], text)',
        'memsub.langgraph_store_matches(jsonb, jsonb)',
        'memsub.lineage_nodes(uuid, uuid[])',
        'memsub.link_document_chunks(uuid, integer, double precision)',
        'memsub.maintenance_lock_holder(text, text)',
        'memsub.memory_embeddings_envelope_guard()',
        'memsub.packet_content_hash(text, jsonb, uuid, uuid[], text, uuid, uuid, text, timestamp with time zone, '
        'uuid)',
        'memsub.packet_store_guard()',
        'memsub.require_active_session(memsub.sessions)',
        'memsub.require_login(name)',
        'memsub.require_shared_packet(memsub.packet_store, text)',
        'memsub.store_context(uuid, uuid, uuid, text[], text)',
        'memsub.store_memory_version(text, text, jsonb, text, jsonb, integer, boolean, boolean, text, jsonb, text, '
        'vector, boolean)',
        'memsub.store_packet_envelope(jsonb, integer, vector[])',
        'memsub.take_maintenance_lock(text, text, boolean)',
        'memsub.visible_packet(uuid, text)',
        'memsub.install_row_security(regclass, text[])'
    ] loop
        v_routine := pg_catalog.to_regprocedure(v_signature);
        if v_routine is not null then
            execute pg_catalog.format('alter routine %s rename to %I', v_routine,
                                      '_' || (select p.proname from pg_catalog.pg_proc p where p.oid = v_routine));
        end if;
    end loop;
end
$$;

-- The comments that name a renamed routine.
comment on column memsub.packet_fields.content_hash is 'Deduplication hash (memsub._packet_content_hash).';
comment on table memsub.maintenance_lock is
    'One row per serialized task and key: the transaction that holds a row lock on it runs the task '
    '(memsub._take_maintenance_lock). Holds no data; rows may be deleted when nothing runs.';
