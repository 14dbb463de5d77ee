-- TTL hygiene: removing expired packets.

create or replace function memsub.purge_expired() returns table (tenant_id uuid, purged bigint)
language sql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
    with removed as (
        delete from memsub.packet_store s
         where s.ttl is not null and s.ttl < (now() at time zone 'UTC')
        returning s.tenant_id
    )
    select r.tenant_id, count(*) from removed r group by r.tenant_id order by r.tenant_id
$$;
comment on function memsub.purge_expired() is
    'Deletes the expired packets (ttl in the past) the caller may see and reports how many per tenant. '
    'Applications purge their visible packets, tenant admins their tenant, platform admins every tenant.';
