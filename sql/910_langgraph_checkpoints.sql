-- Area: integrations. Seed: none (an adapter: LangGraph's checkpoint saver over memsub).
--
-- LangGraph checkpoints (memsub.integrations.langgraph.MemsubSaver): save, read, list, delete, copy and prune
-- graph states of the context tenant. Tables: migrations/2.15.0__langgraph_checkpoints.sql.
--
-- Every function is SECURITY DEFINER over tables the client roles can only read; row-level security is forced on
-- both tables, so each call sees and writes only its context tenant (and organization). The queries also name
-- the context tenant themselves: the permissive policies (tenant or platform admin) are never an index
-- condition, the explicit `tenant_id = tenant` is (docs/decisions.md, "Retrieval under row-level security").

call memsub._install_row_security('memsub.langgraph_checkpoints', array['org']);
call memsub._install_row_security('memsub.langgraph_checkpoint_writes', array['org']);

create or replace function memsub._langgraph_check_text(p_value text, p_field text, p_blank_allowed boolean)
returns text
language plpgsql immutable security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is null or (not p_blank_allowed and memsub._is_blank(p_value)) then
        raise exception 'memsub: % must be a non-empty string', p_field
            using errcode = '22023', column = p_field;
    end if;
    -- The rows are keyed by these ids, and a B-tree entry holds about 2.7 kB.
    perform memsub._check_limit(octet_length(p_value), 'max_id_bytes', p_field);
    return p_value;
end
$$;
comment on function memsub._langgraph_check_text(text, text, boolean) is
    'Returns p_value, or raises 22023 naming p_field when it is NULL (or blank, unless p_blank_allowed), 54000 when '
    'it is longer than max_id_bytes (the rows are keyed by it).';

-- A thread id names one thread of the tenant, and it is written from one context: the organization's that wrote
-- it first, or the tenant-wide one. Row-level security shows an organization the tenant-wide rows and hides other
-- organizations': a write from another context would overwrite or delete rows it does not own, or fail with a raw
-- policy error on rows it cannot see. Every function that changes a thread checks here first, over every
-- organization: owned by memsub_retrieval_owner (BYPASSRLS), it states the tenant itself and reads one row of
-- each thread (all rows of a thread carry its context, so one says it), whatever the thread's length.
-- A writer of a thread that has no row yet takes a lock of the thread first and then looks again: two first writes
-- from two contexts at once queue on it, and the second finds the first's rows (the unique key serializes only two
-- writes of one checkpoint, and the second of those then met a row of the other context).
drop function if exists memsub._langgraph_check_thread_context(text[]);
create or replace function memsub._langgraph_check_thread_context(p_thread_ids text[], p_write boolean default false)
returns void
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant    uuid := memsub._require_tenant_id();
    v_org       uuid := memsub.current_org_id();
    v_elsewhere text;
    v_new       text[];
begin
    for v_pass in 1..2 loop
        select min(u.id) filter (where o.present and o.org_id is distinct from v_org),
               array_agg(distinct u.id order by u.id) filter (where o.present is null)
          into v_elsewhere, v_new
          from unnest(p_thread_ids) as u(id)
          left join lateral (
                   (select true as present, c.org_id from memsub.langgraph_checkpoints c
                     where c.tenant_id = v_tenant and c.thread_id = u.id limit 1)
                   union all
                   (select true, w.org_id from memsub.langgraph_checkpoint_writes w
                     where w.tenant_id = v_tenant and w.thread_id = u.id limit 1)
                   limit 1) as o on true;
        if v_elsewhere is not null then
            raise exception 'thread "%" is written from another context (another organization''s, or the tenant-wide '
                            'one): it is changed there only', v_elsewhere
                using errcode = '42501', column = 'thread_id';
        end if;
        exit when not p_write or v_new is null or v_pass = 2;
        -- New threads, locked in order (a row lock only memsub's owner roles can take), then looked at again.
        perform memsub._take_maintenance_lock('langgraph_thread', v_tenant::text || '/' || n.id)
           from unnest(v_new) as n(id)
          order by n.id;
    end loop;
end
$$;
alter function memsub._langgraph_check_thread_context(text[], boolean) owner to memsub_retrieval_owner;
comment on function memsub._langgraph_check_thread_context(text[], boolean) is
    'Internal: raises 42501 naming thread_id when one of the threads of the context tenant was written from another '
    'context than the caller''s (another organization, or tenant-wide for an organization and the other way '
    'round), whoever may see it (owned by memsub_retrieval_owner, BYPASSRLS). For a writer (p_write), a thread with '
    'no row yet is locked until the transaction ends and checked again, so that concurrent first writes from two '
    'contexts are one after the other. Executable only by memsub_owner.';
grant select on memsub.langgraph_checkpoints, memsub.langgraph_checkpoint_writes to memsub_retrieval_owner;
grant execute on function memsub._langgraph_check_thread_context(text[], boolean) to memsub_owner;

create or replace function memsub.langgraph_checkpoint_put(
    p_thread_id            text,
    p_checkpoint_ns        text,
    p_checkpoint_id        text,
    p_parent_checkpoint_id text,
    p_checkpoint_type      text,
    p_checkpoint           bytea,
    p_metadata             jsonb default '{}'::jsonb
) returns void
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
begin
    perform memsub._langgraph_check_text(p_thread_id, 'thread_id', false);
    perform memsub._langgraph_check_text(p_checkpoint_ns, 'checkpoint_ns', true);
    perform memsub._langgraph_check_text(p_checkpoint_id, 'checkpoint_id', false);
    perform memsub._langgraph_check_text(p_checkpoint_type, 'checkpoint_type', false);
    if p_checkpoint is null then
        raise exception 'memsub.langgraph_checkpoint_put: checkpoint must not be null'
            using errcode = '23502', column = 'checkpoint';
    end if;
    if jsonb_typeof(coalesce(p_metadata, '{}'::jsonb)) <> 'object' then
        raise exception 'memsub.langgraph_checkpoint_put: metadata must be a JSON object'
            using errcode = '22023', column = 'metadata';
    end if;
    perform memsub._check_limit(octet_length(p_metadata ->> 'run_id'), 'max_id_bytes', 'metadata.run_id');
    perform memsub._langgraph_check_thread_context(array[p_thread_id], true);
    insert into memsub.langgraph_checkpoints as c
           (tenant_id, org_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type,
            checkpoint, metadata)
    values (tenant, memsub.current_org_id(), p_thread_id, p_checkpoint_ns, p_checkpoint_id,
            nullif(p_parent_checkpoint_id, ''), p_checkpoint_type, p_checkpoint, coalesce(p_metadata, '{}'::jsonb))
    on conflict (tenant_id, thread_id, checkpoint_ns, checkpoint_id) do update
       set parent_checkpoint_id = excluded.parent_checkpoint_id,
           checkpoint_type = excluded.checkpoint_type,
           checkpoint = excluded.checkpoint,
           metadata = excluded.metadata;
end
$$;
comment on function memsub.langgraph_checkpoint_put(text, text, text, text, text, bytea, jsonb) is
    'Saves a LangGraph checkpoint of the context tenant (replacing one with the same thread, namespace and id). '
    '22023 naming the field for a blank thread_id/checkpoint_id/checkpoint_type or non-object metadata.';

create or replace function memsub.langgraph_checkpoint_put_writes(
    p_thread_id     text,
    p_checkpoint_ns text,
    p_checkpoint_id text,
    p_task_id       text,
    p_task_path     text,
    p_idx           integer[],
    p_channels      text[],
    p_value_types   text[],
    p_values        bytea[],
    p_replace       boolean default false
) returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant  uuid := memsub._require_tenant_id();
    n       integer := coalesce(cardinality(p_idx), 0);
    written integer;
begin
    perform memsub._langgraph_check_text(p_thread_id, 'thread_id', false);
    perform memsub._langgraph_check_text(p_checkpoint_ns, 'checkpoint_ns', true);
    perform memsub._langgraph_check_text(p_checkpoint_id, 'checkpoint_id', false);
    perform memsub._langgraph_check_text(p_task_id, 'task_id', false);
    if coalesce(cardinality(p_channels), 0) <> n or coalesce(cardinality(p_value_types), 0) <> n
       or coalesce(cardinality(p_values), 0) <> n then
        raise exception 'memsub.langgraph_checkpoint_put_writes: idx, channels, value_types and values must have '
                        'the same length'
            using errcode = '22023', column = 'channels';
    end if;
    if array_position(p_channels, null) is not null or array_position(p_value_types, null) is not null
       or array_position(p_idx, null) is not null then
        raise exception 'memsub.langgraph_checkpoint_put_writes: idx, channels and value_types must not hold NULL'
            using errcode = '22023', column = 'channels';
    end if;
    perform memsub._langgraph_check_thread_context(array[p_thread_id], true);
    insert into memsub.langgraph_checkpoint_writes as w
           (tenant_id, org_id, thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel,
            value_type, value)
    select tenant, (select memsub.current_org_id()), p_thread_id, p_checkpoint_ns, p_checkpoint_id, p_task_id,
           coalesce(p_task_path, ''), u.idx, u.channel, u.value_type, u.value
      from unnest(p_idx, p_channels, p_value_types, p_values) as u(idx, channel, value_type, value)
    on conflict (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) do update
       set channel = excluded.channel, value_type = excluded.value_type, value = excluded.value,
           task_path = excluded.task_path
     where p_replace;
    get diagnostics written = row_count;
    return written;
end
$$;
comment on function memsub.langgraph_checkpoint_put_writes(text, text, text, text, text, integer[], text[], text[], bytea[], boolean) is
    'Records the pending writes of one LangGraph task against a checkpoint (parallel arrays, one element per write). '
    'An existing write (same task and idx) is kept, or replaced when p_replace. Returns the rows written.';

create or replace function memsub.langgraph_checkpoint_list(
    p_thread_id     text    default null,
    p_checkpoint_ns text    default null,
    p_checkpoint_id text    default null,
    p_filter        jsonb   default null,
    p_before        text    default null,
    p_limit         integer default null
) returns setof memsub.langgraph_checkpoint_row
language plpgsql stable security definer
-- Planned for each call's arguments: a generic plan of `(p_x is null or column = p_x)` cannot use the key.
set plan_cache_mode = force_custom_plan
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
begin
    if p_limit is not null and p_limit < 0 then
        raise exception 'memsub.langgraph_checkpoint_list: limit must not be negative'
            using errcode = '22023', column = 'limit';
    end if;
    perform memsub._check_limit(p_limit, 'max_rows', 'limit');  -- NULL (every checkpoint, as LangGraph asks) passes
    if p_filter is not null and jsonb_typeof(p_filter) <> 'object' then
        raise exception 'memsub.langgraph_checkpoint_list: filter must be a JSON object'
            using errcode = '22023', column = 'filter';
    end if;
    return query
    select c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.checkpoint_type, c.checkpoint,
           c.metadata, w.task_ids, w.task_paths, w.idx, w.channels, w.value_types, w."values"
      from memsub.langgraph_checkpoints c
      left join lateral (
            select array_agg(x.task_id order by x.task_id, x.idx) as task_ids,
                   array_agg(x.task_path order by x.task_id, x.idx) as task_paths,
                   array_agg(x.idx order by x.task_id, x.idx) as idx,
                   array_agg(x.channel order by x.task_id, x.idx) as channels,
                   array_agg(x.value_type order by x.task_id, x.idx) as value_types,
                   array_agg(x.value order by x.task_id, x.idx) as "values"
              from memsub.langgraph_checkpoint_writes x
             where x.tenant_id = c.tenant_id and x.thread_id = c.thread_id
               and x.checkpoint_ns = c.checkpoint_ns and x.checkpoint_id = c.checkpoint_id) w on true
     where c.tenant_id = tenant
       and (p_thread_id is null or c.thread_id = p_thread_id)
       and (p_checkpoint_ns is null or c.checkpoint_ns = p_checkpoint_ns)
       and (p_checkpoint_id is null or c.checkpoint_id = p_checkpoint_id)
       and (p_filter is null or c.metadata @> p_filter)
       and (p_before is null or c.checkpoint_id < p_before)
     -- Ids repeat across threads (copy_thread keeps them) and namespaces: ties come by thread, then namespace,
     -- so a limit picks the same rows each time.
     order by c.checkpoint_id desc, c.thread_id, c.checkpoint_ns
     limit p_limit;
end
$$;
comment on function memsub.langgraph_checkpoint_list(text, text, text, jsonb, text, integer) is
    'LangGraph checkpoints of the context tenant, newest first (ties on the id: by thread, then namespace), each '
    'with its pending writes (parallel arrays). '
    'Optional filters: thread, namespace, checkpoint id, metadata containment (p_filter), ids before p_before, '
    'at most p_limit rows (NULL: all; 22023 below 0, 54000 over max_rows, naming limit). Reading the latest checkpoint of a thread: p_thread_id, p_checkpoint_ns, p_limit 1.';

create or replace function memsub.langgraph_checkpoint_get(
    p_thread_id     text,
    p_checkpoint_ns text default '',
    p_checkpoint_id text default null
) returns setof memsub.langgraph_checkpoint_row
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
    found  memsub.langgraph_checkpoints;
begin
    -- Two fixed statements instead of one with `p_checkpoint_id is null or ...`, so each keeps a cached plan
    -- that walks the primary key.
    if p_checkpoint_id is null then
        select c.* into found from memsub.langgraph_checkpoints c
         where c.tenant_id = tenant and c.thread_id = p_thread_id and c.checkpoint_ns = p_checkpoint_ns
         order by c.checkpoint_id desc limit 1;
    else
        select c.* into found from memsub.langgraph_checkpoints c
         where c.tenant_id = tenant and c.thread_id = p_thread_id and c.checkpoint_ns = p_checkpoint_ns
           and c.checkpoint_id = p_checkpoint_id;
    end if;
    if found.checkpoint_id is null then
        return;
    end if;
    return query
    select found.thread_id, found.checkpoint_ns, found.checkpoint_id, found.parent_checkpoint_id,
           found.checkpoint_type, found.checkpoint, found.metadata,
           array_agg(x.task_id order by x.task_id, x.idx), array_agg(x.task_path order by x.task_id, x.idx),
           array_agg(x.idx order by x.task_id, x.idx), array_agg(x.channel order by x.task_id, x.idx),
           array_agg(x.value_type order by x.task_id, x.idx), array_agg(x.value order by x.task_id, x.idx)
      from memsub.langgraph_checkpoint_writes x
     where x.tenant_id = tenant and x.thread_id = found.thread_id and x.checkpoint_ns = found.checkpoint_ns
       and x.checkpoint_id = found.checkpoint_id;
end
$$;
comment on function memsub.langgraph_checkpoint_get(text, text, text) is
    'One LangGraph checkpoint of the context tenant with its pending writes: the given id, or the newest of the '
    'thread and namespace when p_checkpoint_id is NULL. No row when there is none.';

create or replace function memsub.langgraph_thread_delete(p_thread_ids text[])
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant  uuid := memsub._require_tenant_id();
    deleted integer;
begin
    perform memsub._langgraph_check_thread_context(p_thread_ids);
    delete from memsub.langgraph_checkpoint_writes w where w.tenant_id = tenant and w.thread_id = any(p_thread_ids);
    delete from memsub.langgraph_checkpoints c where c.tenant_id = tenant and c.thread_id = any(p_thread_ids);
    get diagnostics deleted = row_count;
    return deleted;
end
$$;
comment on function memsub.langgraph_thread_delete(text[]) is
    'Deletes every checkpoint and write of the given threads of the context tenant; returns the checkpoints deleted.';

create or replace function memsub.langgraph_runs_delete(p_run_ids text[])
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant  uuid := memsub._require_tenant_id();
    deleted integer;
begin
    with gone as (
        delete from memsub.langgraph_checkpoints c
         where c.tenant_id = tenant and c.metadata ? 'run_id' and (c.metadata ->> 'run_id') = any(p_run_ids)
           and c.org_id is not distinct from memsub.current_org_id()  -- the caller's context's threads only
        returning c.tenant_id, c.thread_id, c.checkpoint_ns, c.checkpoint_id
    ), writes as (
        delete from memsub.langgraph_checkpoint_writes w
         using gone g
         where w.tenant_id = g.tenant_id and w.thread_id = g.thread_id and w.checkpoint_ns = g.checkpoint_ns
           and w.checkpoint_id = g.checkpoint_id
    )
    select count(*) into deleted from gone;
    return deleted;
end
$$;
comment on function memsub.langgraph_runs_delete(text[]) is
    'Deletes the checkpoints of the context tenant whose metadata run_id is one of p_run_ids, with their writes, '
    'among the threads written from the caller''s context (its organization, or tenant-wide); returns the '
    'checkpoints deleted.';

create or replace function memsub.langgraph_thread_copy(p_source_thread_id text, p_target_thread_id text)
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
    copied integer;
begin
    perform memsub._langgraph_check_text(p_source_thread_id, 'source_thread_id', false);
    perform memsub._langgraph_check_text(p_target_thread_id, 'target_thread_id', false);
    perform memsub._langgraph_check_thread_context(array[p_target_thread_id], true);
    insert into memsub.langgraph_checkpoints
           (tenant_id, org_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type,
            checkpoint, metadata)
    select tenant, (select memsub.current_org_id()), p_target_thread_id, c.checkpoint_ns, c.checkpoint_id,
           c.parent_checkpoint_id, c.checkpoint_type, c.checkpoint, c.metadata
      from memsub.langgraph_checkpoints c
     where c.tenant_id = tenant and c.thread_id = p_source_thread_id
    on conflict (tenant_id, thread_id, checkpoint_ns, checkpoint_id) do nothing;
    get diagnostics copied = row_count;
    insert into memsub.langgraph_checkpoint_writes
           (tenant_id, org_id, thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel,
            value_type, value)
    select tenant, (select memsub.current_org_id()), p_target_thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id,
           w.task_path, w.idx, w.channel, w.value_type, w.value
      from memsub.langgraph_checkpoint_writes w
     where w.tenant_id = tenant and w.thread_id = p_source_thread_id
    on conflict (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) do nothing;
    return copied;
end
$$;
comment on function memsub.langgraph_thread_copy(text, text) is
    'Copies every checkpoint (the whole parent chain) and write of a thread of the context tenant to another '
    'thread; returns the checkpoints copied. Existing checkpoints of the target are kept.';

create or replace function memsub.langgraph_thread_prune(p_thread_ids text[], p_strategy text default 'keep_latest')
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant  uuid := memsub._require_tenant_id();
    deleted integer;
    delta_threads text;  -- the threads that use a DeltaChannel, listed
begin
    if p_strategy = 'delete' then
        return memsub.langgraph_thread_delete(p_thread_ids);  -- which checks the threads' context
    elsif p_strategy is distinct from 'keep_latest' then
        raise exception 'memsub.langgraph_thread_prune: unknown strategy "%"', p_strategy
            using errcode = '22023', column = 'strategy', hint = 'Known strategies: keep_latest, delete.';
    end if;
    perform memsub._langgraph_check_thread_context(p_thread_ids);
    -- A DeltaChannel keeps only its changes in most checkpoints and rebuilds its value from older ones, which
    -- keeping the latest alone would lose: such threads are refused, as LangGraph's PostgresSaver refuses them, by
    -- the metadata LangGraph writes for them. Nothing is pruned then.
    select string_agg(distinct c.thread_id, ', ' order by c.thread_id) into delta_threads
      from memsub.langgraph_checkpoints c
     where c.tenant_id = tenant and c.thread_id = any(p_thread_ids)
       and (c.metadata ? 'counters_since_delta_snapshot' or c.metadata ? 'delta_writes_versioned');
    if delta_threads is not null then
        raise exception 'keep_latest cannot prune threads that use a DeltaChannel: %', delta_threads
            using errcode = '0A000', column = 'thread_ids',
                  hint = 'Prune them with strategy delete, or keep their checkpoints.';
    end if;
    with latest as (
        select distinct on (c.thread_id, c.checkpoint_ns) c.thread_id, c.checkpoint_ns, c.checkpoint_id
          from memsub.langgraph_checkpoints c
         where c.tenant_id = tenant and c.thread_id = any(p_thread_ids)
         order by c.thread_id, c.checkpoint_ns, c.checkpoint_id desc
    ), gone as (
        delete from memsub.langgraph_checkpoints c
         where c.tenant_id = tenant and c.thread_id = any(p_thread_ids)
           and not exists (select from latest l where l.thread_id = c.thread_id
                            and l.checkpoint_ns = c.checkpoint_ns and l.checkpoint_id = c.checkpoint_id)
        returning 1
    ), writes as (
        delete from memsub.langgraph_checkpoint_writes w
         where w.tenant_id = tenant and w.thread_id = any(p_thread_ids)
           and not exists (select from latest l where l.thread_id = w.thread_id
                            and l.checkpoint_ns = w.checkpoint_ns and l.checkpoint_id = w.checkpoint_id)
    )
    select count(*) into deleted from gone;
    return deleted;
end
$$;
comment on function memsub.langgraph_thread_prune(text[], text) is
    'Prunes threads of the context tenant: keep_latest keeps the newest checkpoint of each namespace and its '
    'writes (0A000 naming thread_ids, nothing pruned, when a thread uses a DeltaChannel, whose value lives in older '
    'checkpoints); delete removes everything. Returns the checkpoints deleted.';

grant execute on function
    memsub.langgraph_checkpoint_put(text, text, text, text, text, bytea, jsonb),
    memsub.langgraph_checkpoint_put_writes(text, text, text, text, text, integer[], text[], text[], bytea[], boolean),
    memsub.langgraph_checkpoint_list(text, text, text, jsonb, text, integer),
    memsub.langgraph_checkpoint_get(text, text, text),
    memsub.langgraph_thread_delete(text[]),
    memsub.langgraph_runs_delete(text[]),
    memsub.langgraph_thread_copy(text, text),
    memsub.langgraph_thread_prune(text[], text)
    to memsub_app;
-- Reading the rows directly is allowed (row-level security applies); writes go through the functions.
grant select on memsub.langgraph_checkpoints, memsub.langgraph_checkpoint_writes to memsub_app, memsub_analyst;
