-- LangGraph store: each item and vector row also carries its namespace as text (the labels joined by periods,
-- which a label cannot hold), and the keys lead with it.
--
-- Equality of text[] is not LEAKPROOF, so under row-level security (forced on the store's owner too) a condition
-- on the namespace array is never an index condition: a get probed its key in every namespace of the tenant, a
-- search read every item of the tenant, and a search by a query every vector of the tenant for each candidate.
-- Text comparisons are leakproof: namespace_key = k is one index search, and a namespace prefix p is the range
-- namespace_key >= p and namespace_key < p || '/' ('/' follows '.' in the C collation). The namespace column stays
-- the item's namespace as LangGraph gives it; memsub.langgraph_store_put writes both.

alter table memsub.langgraph_store_items add column namespace_key text collate "C";
alter table memsub.langgraph_store_vectors add column namespace_key text collate "C";

-- Existing rows: row-level security is forced on both tables (even their owner sees no row without a context),
-- so it is lifted for the two updates and put back as it was.
do $$
declare
    v_table   text;
    v_enabled boolean;
    v_forced  boolean;
begin
    foreach v_table in array array['memsub.langgraph_store_items', 'memsub.langgraph_store_vectors'] loop
        select c.relrowsecurity, c.relforcerowsecurity into v_enabled, v_forced
          from pg_catalog.pg_class c where c.oid = v_table::regclass;
        execute format('alter table %s no force row level security', v_table);
        execute format('alter table %s disable row level security', v_table);
        execute format('update %s set namespace_key = array_to_string(namespace, ''.'')', v_table);
        if v_enabled then
            execute format('alter table %s enable row level security', v_table);
        end if;
        if v_forced then
            execute format('alter table %s force row level security', v_table);
        end if;
    end loop;
end
$$;

alter table memsub.langgraph_store_items alter column namespace_key set not null;
comment on column memsub.langgraph_store_items.namespace_key is
    'The namespace as text, its labels joined by periods (a label holds none): the key reads search by, a '
    'leakproof comparison under row-level security where the text[] namespace is not.';

alter table memsub.langgraph_store_vectors alter column namespace_key set not null;
comment on column memsub.langgraph_store_vectors.namespace_key is
    'Namespace of the item as text (memsub.langgraph_store_items.namespace_key).';

alter table memsub.langgraph_store_vectors drop constraint langgraph_store_vectors_item_fkey;
alter table memsub.langgraph_store_vectors drop constraint langgraph_store_vectors_pkey;
alter table memsub.langgraph_store_items drop constraint langgraph_store_items_pkey;
alter table memsub.langgraph_store_items
    add constraint langgraph_store_items_pkey primary key (tenant_id, namespace_key, key);
alter table memsub.langgraph_store_vectors
    add constraint langgraph_store_vectors_pkey primary key (tenant_id, namespace_key, key, field_name);
alter table memsub.langgraph_store_vectors
    add constraint langgraph_store_vectors_item_fkey foreign key (tenant_id, namespace_key, key)
        references memsub.langgraph_store_items (tenant_id, namespace_key, key) on delete cascade;
