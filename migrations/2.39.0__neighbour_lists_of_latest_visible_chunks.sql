-- memsub 2.39.0: a chunk's neighbour list names only chunks of latest document versions that every reader of the
-- list may see. A version's chunks stayed in other chunks' lists after a new version superseded it, and an
-- organization's chunk near a tenant-wide chunk was written into that chunk's list, where every other organization
-- read its id. memsub.document_ingest now takes a superseded version's chunks out of the lists that name them,
-- found by the index below, and links an organization's chunk to a tenant-wide one in one direction only.

create index idx_document_chunks_neighbors on memsub.document_chunks using gin (neighbors);
comment on index memsub.idx_document_chunks_neighbors is
    'The chunks whose neighbour lists name given chunks (a superseded version''s chunks leave those lists).';

-- Row-level security is forced on document_chunks (even its owner sees no row without a tenant context), so it is
-- disabled for this block and enabled again (forced or not, a table whose row-level security is disabled shows
-- its owner every row).
do $$
declare
    v_lifted regclass[];  -- the tables whose row-level security this block disables, to enable it again
    v_table  regclass;
begin
    select coalesce(array_agg(c.oid::regclass), '{}') into v_lifted
      from pg_catalog.pg_class c
     where c.oid = any (array['memsub.document_chunks']::regclass[])
       and c.relrowsecurity;
    foreach v_table in array v_lifted loop
        execute format('alter table %s disable row level security', v_table);
    end loop;

    update memsub.document_chunks c
       set neighbors = coalesce(
               (select array_agg(n.id order by n.id)
                  from memsub.document_chunks n
                  join memsub.document_index d on d.tenant_id = n.tenant_id and d.id = n.document_id
                 where n.tenant_id = c.tenant_id and n.id = any (c.neighbors) and d.is_latest
                   and (n.org_id is null or n.org_id = c.org_id)),
               '{}')
     where cardinality(c.neighbors) > 0;

    foreach v_table in array v_lifted loop
        execute format('alter table %s enable row level security', v_table);
    end loop;
end
$$;
