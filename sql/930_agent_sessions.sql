-- Area: integrations. Seed: none (an adapter: the OpenAI Agents SDK's session over memsub).
--
-- OpenAI Agents SDK sessions (memsub.integrations.openai_agents.MemsubSession): add, read, pop and clear the
-- conversation items of a session of the context tenant. Table: migrations/2.16.0__agent_session_items.sql.
--
-- Every function is SECURITY DEFINER over a table the client roles can only read; row-level security is forced,
-- so each call sees and changes only its context tenant (and organization). The queries also name the context
-- tenant themselves, so the primary key (tenant_id, session_id, item_id) is their index condition. Writers of
-- one session take a transaction lock on it: a batch of items gets consecutive ids, and two concurrent pops
-- remove two different items.

call memsub._install_row_security('memsub.agent_session_items', array['org']);

-- org_isolation lets an organization read the tenant-wide rows (org_id NULL), but a session is one conversation,
-- read and written from the context that wrote it (below): an organization that read a tenant-wide session's
-- history could add no turn to it. The session's rows are shown where it is written.
call memsub._ensure_policy('memsub.agent_session_items', 'agent_session_context', $create$create policy agent_session_context on memsub.agent_session_items as restrictive for all to public
    using (org_id is not distinct from (select memsub.current_org_id()) or (select memsub._caller_is_admin()))
    with check (org_id is not distinct from (select memsub.current_org_id()) or (select memsub._caller_is_admin()))$create$);
comment on policy agent_session_context on memsub.agent_session_items is
    'A session''s items are visible to the context that writes them: the organization''s, or the tenant-wide '
    'context (not to the organizations, as org_isolation alone would); admins pass.';

-- A session id names one session of the tenant, written from one context: the organization's that wrote it first,
-- or the tenant-wide one (as a LangGraph thread, sql/910_langgraph_checkpoints.sql). Row-level security shows an
-- organization the tenant-wide items: without this check it popped and cleared items it does not own. Owned by
-- memsub_retrieval_owner (BYPASSRLS), it sees every organization's items, states the tenant itself and answers
-- yes or no.
create or replace function memsub._agent_session_owned_elsewhere(p_session_id text) returns boolean
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_owner uuid;
begin
    -- One item says the session's context (all its items carry it), whatever the session's length.
    select i.org_id into v_owner from memsub.agent_session_items i
     where i.tenant_id = memsub._require_tenant_id() and i.session_id = p_session_id
     limit 1;
    return found and v_owner is distinct from memsub.current_org_id();
end
$$;
alter function memsub._agent_session_owned_elsewhere(text) owner to memsub_retrieval_owner;
comment on function memsub._agent_session_owned_elsewhere(text) is
    'Internal: whether the session of the context tenant holds items written from another context (another '
    'organization, or tenant-wide for an organization and the other way round), whoever may see them (owned by '
    'memsub_retrieval_owner, BYPASSRLS). Executable only by memsub_owner.';
grant select on memsub.agent_session_items to memsub_retrieval_owner;
grant execute on function memsub._agent_session_owned_elsewhere(text) to memsub_owner;

create or replace function memsub._agent_session_lock(p_session_id text)
returns uuid
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
begin
    if p_session_id is null or memsub._is_blank(p_session_id) then
        raise exception 'memsub: session_id must be a non-empty string'
            using errcode = '22023', column = 'session_id';
    end if;
    perform memsub._check_limit(octet_length(p_session_id), 'max_id_bytes', 'session_id');  -- a key of its rows
    -- A row lock only memsub's owner roles can take (any login can take any advisory-lock key).
    perform memsub._take_maintenance_lock('agent_session_items', tenant::text || '/' || p_session_id);
    if memsub._agent_session_owned_elsewhere(p_session_id) then
        raise exception 'session "%" is written from another context (another organization''s, or the tenant-wide '
                        'one): it is changed there only', p_session_id
            using errcode = '42501', column = 'session_id';
    end if;
    return tenant;
end
$$;
comment on function memsub._agent_session_lock(text) is
    'Internal: checks p_session_id (22023 naming session_id when NULL or blank; 42501 when the session is written '
    'from another context, another organization''s or the tenant-wide one), locks that session of the context '
    'tenant until the end of the transaction and returns the tenant.';

create or replace function memsub.agent_session_add_items(p_session_id text, p_items json)
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._agent_session_lock(p_session_id);
    bad    bigint;
    added  integer;
begin
    if p_items is null or json_typeof(p_items) <> 'array' then
        raise exception 'memsub.agent_session_add_items: items must be a JSON array'
            using errcode = '22023', column = 'items';
    end if;
    select min(e.n) - 1 into bad
      from json_array_elements(p_items) with ordinality as e(item, n)
     where json_typeof(e.item) <> 'object';
    if bad is not null then
        raise exception 'memsub.agent_session_add_items: items[%] must be a JSON object', bad
            using errcode = '22023', column = format('items[%s]', bad);
    end if;
    -- Each item is one JSON value of the session, held to max_json_bytes as the session functions hold theirs.
    perform memsub._check_limits(array_agg(octet_length(e.item::text) order by e.n), 'max_json_bytes',
                                 array_agg(format('items[%s]', e.n - 1) order by e.n))
       from json_array_elements(p_items) with ordinality as e(item, n);
    insert into memsub.agent_session_items (tenant_id, org_id, session_id, item)
    select tenant, (select memsub.current_org_id()), p_session_id, e.item
      from json_array_elements(p_items) with ordinality as e(item, n)
     order by e.n;
    get diagnostics added = row_count;
    return added;
end
$$;
comment on function memsub.agent_session_add_items(text, json) is
    'Appends items (a JSON array of objects, in order) to a session of the context tenant; returns the number added. '
    '22023 naming session_id when blank, items when not an array, items[i] when an element is not an object; '
    '54000 naming items[i] when an element is over max_json_bytes.';

create or replace function memsub.agent_session_get_items(p_session_id text, p_limit integer default null)
returns table (item_id bigint, item json)
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
begin
    if p_session_id is null or memsub._is_blank(p_session_id) then
        raise exception 'memsub.agent_session_get_items: session_id must be a non-empty string'
            using errcode = '22023', column = 'session_id';
    end if;
    -- Read where it is written (_agent_session_lock): from another context the session is refused, not empty.
    if memsub._agent_session_owned_elsewhere(p_session_id) then
        raise exception 'session "%" is written from another context (another organization''s, or the tenant-wide '
                        'one): it is read there only', p_session_id
            using errcode = '42501', column = 'session_id';
    end if;
    -- NULL reads the whole history (the SDK's "no limit"), 0 reads nothing; a negative limit, which the SDK's
    -- sessions read differently (SQLite: all, Redis and SQLAlchemy: none), is refused. A limit is the most items
    -- to read, however large, as in the SDK's sessions: its compaction session reads a whole history as
    -- limit 2147483647, and no limit reads it whole anyway, so max_rows would bound nothing here.
    if p_limit < 0 then
        raise exception 'memsub.agent_session_get_items: limit must not be negative, not %', p_limit
            using errcode = '22023', column = 'limit';
    end if;
    if p_limit is null then
        return query
        select i.item_id, i.item from memsub.agent_session_items i
         where i.tenant_id = tenant and i.session_id = p_session_id
         order by i.item_id;
    else
        return query
        select l.item_id, l.item
          from (select i.item_id, i.item from memsub.agent_session_items i
                 where i.tenant_id = tenant and i.session_id = p_session_id
                 order by i.item_id desc limit p_limit) l
         order by l.item_id;
    end if;
end
$$;
comment on function memsub.agent_session_get_items(text, integer) is
    'The items of a session of the context tenant, oldest first: all of them, or the newest p_limit (0: none; '
    'NULL: all; not held to max_rows, as NULL is not). 22023 naming session_id when blank, limit when negative; 42501 '
    'naming session_id when the session is written from another context (another organization''s, or the '
    'tenant-wide one), as its writers are.';

create or replace function memsub.agent_session_pop_item(p_session_id text)
returns json
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._agent_session_lock(p_session_id);
    popped json;
begin
    delete from memsub.agent_session_items i
     where i.tenant_id = tenant and i.session_id = p_session_id
       and i.item_id = (select max(x.item_id) from memsub.agent_session_items x
                         where x.tenant_id = tenant and x.session_id = p_session_id)
    returning i.item into popped;
    return popped;
end
$$;
comment on function memsub.agent_session_pop_item(text) is
    'Removes the newest item of a session of the context tenant and returns it; NULL when the session is empty. '
    '22023 naming session_id when blank.';

create or replace function memsub.agent_session_clear(p_session_id text)
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant  uuid := memsub._agent_session_lock(p_session_id);
    deleted integer;
begin
    delete from memsub.agent_session_items i where i.tenant_id = tenant and i.session_id = p_session_id;
    get diagnostics deleted = row_count;
    return deleted;
end
$$;
comment on function memsub.agent_session_clear(text) is
    'Deletes every item of a session of the context tenant; returns the number deleted. 22023 naming session_id '
    'when blank.';

grant execute on function
    memsub.agent_session_add_items(text, json),
    memsub.agent_session_get_items(text, integer),
    memsub.agent_session_pop_item(text),
    memsub.agent_session_clear(text)
    to memsub_app;
-- Reading the rows directly is allowed (row-level security applies, agent_session_context included); writes go
-- through the functions.
grant select on memsub.agent_session_items to memsub_app, memsub_analyst;
