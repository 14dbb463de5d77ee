-- memsub 2.40.0: an access record is as private as what it records. memory_access_log was isolated by
-- organization only, so another user of the organization read the id of a user's l-private packet (or embedding)
-- and the query that found it. It now carries a scope, under the same 'user' policy as the packets
-- (sql/220_access_log.sql): 'l-private', read by its accessor alone, when the target is a cursor or l-private
-- packet or embedding; 'shared' otherwise. purge_expired now deletes the records of what it purges; the records
-- left behind by earlier purges go here.

alter table memsub.memory_access_log
    add column scope text not null default 'shared',
    add constraint memory_access_log_scope_known check (scope in ('shared', 'l-private'));
comment on column memsub.memory_access_log.scope is
    'Who may read the record (the user policy, as on packets): shared when its target is shared (facts and '
    'reflections always are), l-private (its accessor alone) when the target is a cursor or l-private packet or '
    'embedding.';

-- Row-level security is forced on these tables (even their owner sees no row without a tenant context), so it is
-- disabled for this block and enabled again (forced or not, a table whose row-level security is disabled shows
-- its owner every row).
do $$
declare
    v_lifted regclass[];  -- the tables whose row-level security this block disables, to enable it again
    v_table  regclass;
begin
    select coalesce(array_agg(c.oid::regclass), '{}') into v_lifted
      from pg_catalog.pg_class c
     where c.oid = any (array['memsub.memory_access_log', 'memsub.packet_store', 'memsub.packet_tombstones',
                              'memsub.memory_embeddings', 'memsub.semantic_memory']::regclass[])
       and c.relrowsecurity;
    foreach v_table in array v_lifted loop
        execute format('alter table %s disable row level security', v_table);
    end loop;

    -- The records of purged packets and of embeddings that are gone (those of purged packets).
    delete from memsub.memory_access_log l
     where (l.target_type = 'packet'
            and not exists (select from memsub.packet_store s
                             where s.tenant_id = l.tenant_id and s.packet_id = l.target_id)
            and exists (select from memsub.packet_tombstones t
                         where t.tenant_id = l.tenant_id and t.packet_id = l.target_id))
        or (l.target_type = 'embedding'
            and not exists (select from memsub.memory_embeddings e
                             where e.tenant_id = l.tenant_id and e.embedding_id = l.target_id)
            and not exists (select from memsub.semantic_memory m
                             where m.tenant_id = l.tenant_id and m.embedding_id = l.target_id));

    update memsub.memory_access_log l
       set scope = 'l-private'
     where (l.target_type = 'packet'
            and exists (select from memsub.packet_store s
                         where s.tenant_id = l.tenant_id and s.packet_id = l.target_id and s.scope <> 'shared'))
        or (l.target_type = 'embedding'
            and (exists (select from memsub.memory_embeddings e
                          where e.tenant_id = l.tenant_id and e.embedding_id = l.target_id and e.scope <> 'shared')
                 or exists (select from memsub.semantic_memory m
                             where m.tenant_id = l.tenant_id and m.embedding_id = l.target_id
                               and m.scope <> 'shared')));

    foreach v_table in array v_lifted loop
        execute format('alter table %s enable row level security', v_table);
    end loop;
end
$$;
