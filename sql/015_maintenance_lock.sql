-- Area: foundation. Seed: none (the GUIDE's security model: locks only memsub's roles can take).
--
-- Locks only memsub's own roles can take (table memsub.maintenance_lock, migration 2.7.0).
--
-- Advisory-lock keys are shared by every login of the cluster: a login with no memsub grant at all could take
-- memsub's keys and so stall a tenant's maintenance or make a view refresh skip. A row lock on
-- memsub.maintenance_lock needs privileges on that table, which only its owner holds; these definer functions
-- are how the other NOLOGIN owner roles (memsub_view_owner, memsub_retrieval_owner) reach it. The lock is held
-- until the calling transaction ends, like pg_advisory_xact_lock.

create or replace function memsub._take_maintenance_lock(p_task text, p_key text default '', p_wait boolean default true)
returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_key bigint := pg_catalog.hashtextextended(coalesce(p_key, ''), 0);
begin
    if p_task is null or p_task = '' then
        raise exception 'field "task" is required' using errcode = '23502', column = 'task';
    end if;
    if p_wait then
        perform 1 from memsub.maintenance_lock l where l.task = p_task and l.lock_key = v_key for update;
    else
        perform 1 from memsub.maintenance_lock l where l.task = p_task and l.lock_key = v_key for update skip locked;
    end if;
    if found then
        return true;
    end if;
    -- No row yet (or, without p_wait, a held one): the first caller of a key creates its row; a concurrent first
    -- caller waits on that insert.
    insert into memsub.maintenance_lock (task, lock_key) values (p_task, v_key) on conflict do nothing;
    if p_wait then
        perform 1 from memsub.maintenance_lock l where l.task = p_task and l.lock_key = v_key for update;
        return true;
    end if;
    perform 1 from memsub.maintenance_lock l where l.task = p_task and l.lock_key = v_key for update skip locked;
    return found;
end
$$;
comment on function memsub._take_maintenance_lock(text, text, boolean) is
    'Locks (task, key) until the calling transaction ends: waits for a holder (p_wait, bounded by the session''s '
    'lock_timeout) or returns false at once when another transaction holds it. Only memsub''s owner roles may '
    'call it, so no other login can hold these locks.';

create or replace function memsub._maintenance_lock_holder(p_task text, p_key text default '')
returns text
language sql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
    select pg_catalog.format('pid %s (role %s, application %L)', l.pid, coalesce(a.usename::text, '?'),
                             coalesce(a.application_name, ''))
      from memsub.maintenance_lock m
      join pg_catalog.pg_locks l
        on l.locktype = 'transactionid' and l.transactionid = m.xmax and l.mode = 'ExclusiveLock' and l.granted
      left join pg_catalog.pg_stat_activity a on a.pid = l.pid
     where m.task = p_task and m.lock_key = pg_catalog.hashtextextended(coalesce(p_key, ''), 0)
     limit 1
$$;
comment on function memsub._maintenance_lock_holder(text, text) is
    'The session holding the maintenance lock (task, key): "pid N (role R, application A)", or NULL when none '
    'is known. For messages that name who a skipped or timed-out run waited for.';

grant execute on function memsub._take_maintenance_lock(text, text, boolean),
    memsub._maintenance_lock_holder(text, text)
    to memsub_view_owner, memsub_retrieval_owner;

-- memsub maintain (python/memsub/maintain.py) runs each task under this lock, held by a transaction on a
-- connection of its own while the task runs on another (some tasks commit several times). Only platform admins,
-- who run maintain, may take it; an advisory key would let any login make maintain skip its work.
create or replace function memsub.maintain_lock(p_task text, out taken boolean, out holder text)
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_task is null or not p_task = any (memsub.maintain_tasks()) then
        raise exception 'field "task" must name a memsub maintain task, not "%"', p_task
            using errcode = '22023', column = 'task';
    end if;
    taken := memsub._take_maintenance_lock('maintain', p_task, false);
    if not taken then
        holder := coalesce(memsub._maintenance_lock_holder('maintain', p_task), 'holder unknown');
    end if;
end
$$;
comment on function memsub.maintain_lock(text) is
    'Takes the lock of one memsub maintain task until the calling transaction ends, without waiting: taken, or '
    'not taken and the holder ("pid N (role R, application A)"). For memsub maintain; platform admins only.';

-- The tasks' lock rows exist before any run, so a run that finds one held never waits for its creation.
insert into memsub.maintenance_lock (task, lock_key)
select 'maintain', pg_catalog.hashtextextended(t.name, 0)
  from pg_catalog.unnest(memsub.maintain_tasks()) as t(name)
    on conflict do nothing;

grant execute on function memsub.maintain_lock(text) to memsub_platform_admin;
