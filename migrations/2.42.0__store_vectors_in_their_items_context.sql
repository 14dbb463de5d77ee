-- memsub 2.42.0: a LangGraph store item's vectors carry its context (org_id). An organization could overwrite a
-- tenant-wide item: the item kept org_id NULL and its new vectors took the organization's, hidden from every other
-- context, whose next write of the item then collided with them (a raw unique violation on
-- langgraph_store_vectors_pkey). memsub.langgraph_store_put now changes an item only from the context that wrote
-- it and writes its vectors with the item's org_id; vectors written otherwise before take their item's.

-- Row-level security is forced on both tables (even their owner sees no row without a tenant context), so it is
-- lifted for this block and put back as it was.
do $$
declare
    v_table    text;
    v_security boolean[];
    v_tables   text[] := array['memsub.langgraph_store_items', 'memsub.langgraph_store_vectors'];
    v_states   boolean[][] := '{}';
begin
    foreach v_table in array v_tables loop
        select array[c.relrowsecurity, c.relforcerowsecurity] into v_security
          from pg_catalog.pg_class c where c.oid = v_table::regclass;
        v_states := v_states || array[v_security];
        execute format('alter table %s no force row level security', v_table);
        execute format('alter table %s disable row level security', v_table);
    end loop;

    update memsub.langgraph_store_vectors v
       set org_id = i.org_id
      from memsub.langgraph_store_items i
     where i.tenant_id = v.tenant_id and i.namespace_key = v.namespace_key and i.key = v.key
       and i.org_id is distinct from v.org_id;

    for n in 1 .. cardinality(v_tables) loop
        if v_states[n][1] then
            execute format('alter table %s enable row level security', v_tables[n]);
        end if;
        if v_states[n][2] then
            execute format('alter table %s force row level security', v_tables[n]);
        end if;
    end loop;
end
$$;

comment on column memsub.langgraph_store_vectors.org_id is
    'Organization of the item''s context (memsub.langgraph_store_items.org_id); NULL: tenant-wide.';
