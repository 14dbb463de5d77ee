-- Area: packets. Seed: seed 004 "Contracts & Invariants" 1 (immutability).
--
-- Immutability of packet_store (seed 004, contract 1).
--
-- The envelope and everything derived from it never change after insertion. Only the learned statistics
-- (importance_score, access_count, last_accessed, contradiction_count, chunk_count, is_chunked) may be
-- updated, and only expired packets (ttl in the past) may be deleted: memsub.purge_expired() does that. The one
-- other delete is memsub.erase_tenant's (sql/960_tenant_erasure.sql): it runs as memsub_expiry_owner, a NOLOGIN
-- role granted to nobody, and names the tenant it erases in memsub.erasing_tenant for its own transaction; the
-- setting alone (any login may set it) lets nothing through.

create or replace function memsub._packet_store_guard() returns trigger
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if tg_op = 'TRUNCATE' then
        raise exception 'memsub.packet_store is immutable: TRUNCATE is not allowed'
            using errcode = '0A000', hint = 'Expired packets are removed by memsub.purge_expired().';
    elsif tg_op = 'DELETE' then
        if current_user = 'memsub_expiry_owner'
           and pg_catalog.current_setting('memsub.erasing_tenant', true) = old.tenant_id::text then
            return old;  -- memsub.erase_tenant
        end if;
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
comment on function memsub._packet_store_guard() is
    'Trigger function enforcing packet_store immutability: rejects changes to envelope columns (SQLSTATE 0A000), '
    'deletes of unexpired packets (except memsub.erase_tenant''s, as memsub_expiry_owner with '
    'memsub.erasing_tenant naming the packet''s tenant) and TRUNCATE.';

call memsub._ensure_trigger('memsub.packet_store', 'packet_store_immutable', $create$create trigger packet_store_immutable
    before update or delete on memsub.packet_store
    for each row execute function memsub._packet_store_guard()$create$);
comment on trigger packet_store_immutable on memsub.packet_store is
    'Rejects modification of envelope columns and deletion of unexpired packets.';

call memsub._ensure_trigger('memsub.packet_store', 'packet_store_no_truncate', $create$create trigger packet_store_no_truncate
    before truncate on memsub.packet_store
    for each statement execute function memsub._packet_store_guard()$create$);
comment on trigger packet_store_no_truncate on memsub.packet_store is 'Rejects TRUNCATE of the event log.';
