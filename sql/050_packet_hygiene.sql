-- TTL hygiene: removing expired packets, keeping their lineage.
--
-- An expired packet is never read (the not_expired policies, sql/060_packet_security.sql); purging removes it
-- and its vectors (memory_embeddings cascade) and leaves a tombstone in packet_tombstones, so lineage walks still
-- reach through it. The function runs as memsub_expiry_owner, the one role the not_expired policies let see
-- expired rows; the tenant, org and scope policies still apply, so each caller purges what its context covers.

drop function if exists memsub.purge_expired();
create or replace function memsub.purge_expired(p_tenant_id uuid default null)
returns table (tenant_id uuid, purged bigint)
language sql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
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
    )
    select r.tenant_id, count(*) from removed r group by r.tenant_id order by r.tenant_id
$$;
comment on function memsub.purge_expired(uuid) is
    'Deletes the expired packets (ttl passed) the caller''s context covers, optionally of one tenant, with their '
    'embeddings; leaves a tombstone per packet for lineage; reports how many per tenant. An application context '
    'purges what it may see of its tenant, a tenant_admin context its tenant, a platform_admin context every tenant '
    '(or p_tenant_id). Safe to run concurrently and from a scheduler.';
alter function memsub.purge_expired(uuid) owner to memsub_expiry_owner;
