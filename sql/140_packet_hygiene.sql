-- Area: packets. Seed: seed 000 "CORE MEMORY LAYER" (packet_store.ttl).
--
-- TTL hygiene: removing expired packets, keeping their lineage.
--
-- An expired packet is never read (the not_expired policies, sql/150_packet_security.sql); purging removes it
-- and its vectors (memory_embeddings cascade), the expired rows derived from packets, the expired relations the
-- world-model snapshots copied, and the access records of what it removes, and leaves a tombstone in
-- packet_tombstones, so lineage walks still reach through it. The function runs as memsub_expiry_owner, the one role the not_expired policies let see
-- expired rows; the tenant, org and scope policies still apply, so each caller purges what its context covers.

drop function if exists memsub.purge_expired();
-- The access log (sql/220_access_log.sql) names what was read: the accesses of a purged packet, of its embeddings
-- and of the purged facts and reflections go too. Other users and organizations may have read a packet, and their
-- records are hidden from the caller: memsub._forget_accesses (owned by the BYPASSRLS memsub_retrieval_owner)
-- removes every record of what the caller purges, before the packets and their embeddings go.
create or replace function memsub.purge_expired(p_tenant_id uuid default null)
returns table (tenant_id uuid, purged bigint)
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
#variable_conflict use_column
begin
    perform memsub._forget_accesses('packet', array_agg(s.tenant_id), array_agg(s.packet_id))
       from memsub.packet_store s
      where s.ttl is not null and s.ttl <= (now() at time zone 'UTC')
        and (p_tenant_id is null or s.tenant_id = p_tenant_id);
    perform memsub._forget_accesses('fact', array_agg(f.tenant_id), array_agg(f.fact_id))
       from memsub.knowledge_facts f
      where f.ttl <= (now() at time zone 'UTC') and (p_tenant_id is null or f.tenant_id = p_tenant_id);
    perform memsub._forget_accesses('reflection', array_agg(r.tenant_id), array_agg(r.reflection_id))
       from memsub.reflection_store r
      where r.expires_at <= now() and (p_tenant_id is null or r.tenant_id = p_tenant_id);
    return query
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
    ),
    -- A world-model snapshot copies the relations that held when it was taken, each with its edge window's ttl
    -- (sql/510_world_model.sql): the expired ones leave every snapshot as the windows are deleted, in one UPDATE
    -- of the snapshots whose earliest relation expiry has passed, with their count and next expiry. Snapshots
    -- taken before 2.44.0 record no expiry and are left as they are.
    snapshot_relations as (
        select w.tenant_id, w.snapshot_id,
               coalesce(jsonb_agg(e.relation order by e.position)
                            filter (where not coalesce((e.relation ->> 'ttl')::timestamp
                                                       <= (now() at time zone 'UTC'), false)),
                        '[]') as relations,
               min((e.relation ->> 'ttl')::timestamp)
                   filter (where (e.relation ->> 'ttl')::timestamp > (now() at time zone 'UTC')) as expire_at
          from memsub.world_model_snapshots w
         cross join lateral jsonb_array_elements(w.snapshot -> 'relations') with ordinality as e(relation, position)
         where w.relations_expire_at <= (now() at time zone 'UTC')
           and (p_tenant_id is null or w.tenant_id = p_tenant_id)
         group by w.tenant_id, w.snapshot_id
    ), snapshots as (
        update memsub.world_model_snapshots w
           set snapshot = jsonb_set(w.snapshot, '{relations}', k.relations),
               relation_count = jsonb_array_length(k.relations),
               relations_expire_at = k.expire_at
          from snapshot_relations k
         where w.tenant_id = k.tenant_id and w.snapshot_id = k.snapshot_id
    )
    select r.tenant_id, count(*) from removed r group by r.tenant_id order by r.tenant_id;
end
$$;
comment on function memsub.purge_expired(uuid) is
    'Deletes the expired packets (ttl passed) the caller''s context covers, optionally of one tenant, with their '
    'embeddings and every expired row derived from a packet (agent events, reasoning traces, facts, relationship '
    'windows, reflections), removes the expired relations from the world-model snapshots (adjusting '
    'relation_count), and deletes every access record of what it deletes (whoever read it); leaves a tombstone per '
    'packet for lineage; reports how many per tenant. An application context '
    'purges what it may see of its tenant, a tenant_admin context its tenant, a platform_admin context every tenant '
    '(or p_tenant_id). Safe to run concurrently and from a scheduler.';
alter function memsub.purge_expired(uuid) owner to memsub_expiry_owner;

-- Knowledge (facts, relationship windows) is keyed by its content: asserting again what has expired must start
-- it afresh, but the expired row still holds the key and, being expired, is invisible to the asserting function.
-- These two remove the expired row of one key first; like purge_expired they run as memsub_expiry_owner under
-- the tenant policies. Internal to assert_fact, upsert_relationship and temporal_edge_add.
create or replace function memsub._drop_expired_fact(
    p_tenant_id uuid, p_subject_key text, p_predicate text, p_object_key text
) returns void
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_fact uuid;
begin
    delete from memsub.knowledge_facts f
     where f.tenant_id = p_tenant_id and f.subject_normalized = p_subject_key and f.predicate = p_predicate
       and f.object_normalized = p_object_key and f.ttl <= (now() at time zone 'UTC')
    returning f.fact_id into v_fact;
    if v_fact is not null then  -- its access records go with it, as purge_expired's do
        perform memsub._forget_accesses('fact', array[p_tenant_id], array[v_fact]);
    end if;
end
$$;
comment on function memsub._drop_expired_fact(uuid, text, text, text) is
    'Internal: deletes the expired fact of one (subject, predicate, object) key, with its access records, so that '
    'it can be asserted afresh. Not granted to clients.';
alter function memsub._drop_expired_fact(uuid, text, text, text) owner to memsub_expiry_owner;

create or replace function memsub._drop_expired_edge(
    p_tenant_id uuid, p_source_key text, p_relationship_type text, p_target_key text
) returns void
language sql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
    delete from memsub.entity_relationships r
     where r.tenant_id = p_tenant_id and r.source_key = p_source_key and r.relationship_type = p_relationship_type
       and r.target_key = p_target_key and r.ttl <= (now() at time zone 'UTC')
$$;
comment on function memsub._drop_expired_edge(uuid, text, text, text) is
    'Internal: deletes the expired validity windows of one edge (source, type, target matching forms) so that it '
    'can be observed afresh. Not granted to clients.';
alter function memsub._drop_expired_edge(uuid, text, text, text) owner to memsub_expiry_owner;

-- The later of two expiries, NULL (never) when either is: the expiry of knowledge supported by both.
create or replace function memsub._later_expiry(p_first timestamp, p_second timestamp) returns timestamp
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select case when p_first is null or p_second is null then null else greatest(p_first, p_second) end $$;
comment on function memsub._later_expiry(timestamp, timestamp) is
    'The later of two expiry times, NULL (never expires) when either is NULL: the expiry of a fact or edge '
    'supported by two assertions.';
