-- memsub 2.42.0: a LangGraph store item's vectors carry its context (org_id). An organization could overwrite a
-- tenant-wide item: the item kept org_id NULL and its new vectors took the organization's, hidden from every other
-- context, whose next write of the item then collided with them (a raw unique violation on
-- langgraph_store_vectors_pkey). memsub.langgraph_store_put now changes an item only from the context that wrote
-- it and writes its vectors with the item's org_id; vectors written otherwise before take their item's.

-- Row-level security is forced on both tables (even their owner sees no row without a tenant context), so it is
-- disabled for this block and enabled again (forced or not, a table whose row-level security is disabled shows
-- its owner every row).
do $$
declare
    v_lifted regclass[];  -- the tables whose row-level security this block disables, to enable it again
    v_table  regclass;
begin
    select coalesce(array_agg(c.oid::regclass), '{}') into v_lifted
      from pg_catalog.pg_class c
     where c.oid = any (array['memsub.langgraph_store_items', 'memsub.langgraph_store_vectors']::regclass[])
       and c.relrowsecurity;
    foreach v_table in array v_lifted loop
        execute format('alter table %s disable row level security', v_table);
    end loop;

    update memsub.langgraph_store_vectors v
       set org_id = i.org_id
      from memsub.langgraph_store_items i
     where i.tenant_id = v.tenant_id and i.namespace_key = v.namespace_key and i.key = v.key
       and i.org_id is distinct from v.org_id;

    foreach v_table in array v_lifted loop
        execute format('alter table %s enable row level security', v_table);
    end loop;
end
$$;

comment on column memsub.langgraph_store_vectors.org_id is
    'Organization of the item''s context (memsub.langgraph_store_items.org_id); NULL: tenant-wide.';
