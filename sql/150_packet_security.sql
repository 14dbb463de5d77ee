-- Area: packets. Seed: seed 000 "MULTI-TENANT IDENTITY" (RLS policies) for packet_store.
--
-- Row-level security and privileges of the packet area (packet_store, packet_threads, packet_tombstones).

call memsub._install_row_security('memsub.packet_store', array['org', 'user']);
call memsub._install_row_security('memsub.packet_threads', array[]::text[]);
call memsub._install_row_security('memsub.packet_tombstones', array['org', 'user']);

-- Expiry is honoured on every read: a packet whose ttl has passed is invisible to every role and function,
-- direct SELECT included, until memsub.purge_expired() removes it. The one exception is memsub_expiry_owner,
-- which owns purge_expired() (a DELETE must see the rows it removes) and get_lineage() (which reports an
-- expired packet's lineage skeleton). Both sub-selects are evaluated once per query.
call memsub._ensure_policy('memsub.packet_store', 'not_expired', $create$create policy not_expired on memsub.packet_store as restrictive for select to public
    using (ttl is null or ttl > (select pg_catalog.now() at time zone 'UTC')
           or (select current_user = 'memsub_expiry_owner'::name))$create$);
comment on policy not_expired on memsub.packet_store is
    'A packet whose ttl has passed is never read (only memsub_expiry_owner, for purging and lineage, sees it).';

-- Read through row-level security; write only through the stored functions; expired packets are removed by
-- memsub.purge_expired() (the immutability trigger refuses any other delete).
grant select on memsub.packet_store, memsub.packet_threads, memsub.packet_tombstones to memsub_app, memsub_analyst;
revoke delete on memsub.packet_store from memsub_app;
grant usage on type memsub.packet_write_result to memsub_app, memsub_analyst;
grant execute on function
    memsub.write_packet(jsonb, vector[]), memsub.write_packets(jsonb, vector[]), memsub.purge_expired(uuid)
    to memsub_app;
grant execute on function
    memsub.get_packet(uuid, boolean), memsub.get_packets(uuid[], boolean), memsub.get_packets_with_vector_values(uuid[]),
    memsub.get_thread(uuid, integer, bigint, boolean), memsub.get_thread_with_vector_values(uuid, integer, bigint),
    memsub._thread_packet_ids(uuid, integer, bigint), memsub.get_lineage(uuid, text, integer),
    memsub._embedding_chunk_index(jsonb), memsub._reader_tenants(uuid[])
    to memsub_app, memsub_analyst;

-- memsub_expiry_owner reads and deletes packets, writes tombstones, and evaluates the policies' context functions.
grant usage on schema memsub to memsub_expiry_owner;
grant select, delete on memsub.packet_store to memsub_expiry_owner;
grant select, insert on memsub.packet_tombstones to memsub_expiry_owner;
-- ... and deletes the expired rows derived from packets (purge_expired, _drop_expired_fact, _drop_expired_edge).
grant select, delete on memsub.agent_memory_events, memsub.reasoning_traces, memsub.knowledge_facts,
    memsub.entity_relationships, memsub.reflection_store
    to memsub_expiry_owner;
-- Knowledge asserted again after it expired replaces the expired row (sql/410_knowledge_graph.sql,
-- 420_temporal_graph.sql).
grant execute on function
    memsub._drop_expired_fact(uuid, text, text, text), memsub._drop_expired_edge(uuid, text, text, text)
    to memsub_owner;
grant execute on function
    memsub.current_tenant_id(), memsub.current_org_id(), memsub.current_user_id(),
    memsub.current_session_id(), memsub.current_context_roles(),
    memsub.acting_role(), memsub.is_platform_admin(), memsub.is_tenant_admin(), memsub._require_tenant_id(),
    memsub.limit_value(text), memsub._check_limit(bigint, text, text)
    to memsub_expiry_owner;
