-- Area: sessions. Seed: seed 001 sections 4.1 and 7.2; seed 000 "OPERATIONS LAYER" (tasks).
--
-- Tasks and agents (seed 000 operations layer, seed 001 task execution flow).
--
-- A task may run in a session and may be a sub-task of a parent task; an agent is spawned for a task (and its
-- session). Both are written through the functions below, which audit what they do.

-- The earlier name, without the _ of an internal helper.
drop function if exists memsub.task_lookup(bigint, boolean, text);
create or replace function memsub._task_lookup(p_task_id bigint, p_for_update boolean, p_errcode text)
returns memsub.tasks
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_task memsub.tasks;
begin
    -- A NULL id is a missing argument, not a task that does not exist.
    if p_task_id is null then
        raise exception 'task_id is required' using errcode = '23502', column = 'task_id';
    end if;
    if p_for_update then
        -- The task's session first (a key share, which its audit row's foreign key takes anyway), then the task:
        -- the order memsub.session_terminate takes them in, the session and then its open tasks. Locked the other
        -- way round, a task changing status while its session terminated deadlocked.
        perform from memsub.sessions s
         where s.tenant_id = memsub._require_tenant_id()
           and s.id = (select t.session_id from memsub.tasks t
                        where t.tenant_id = memsub._require_tenant_id() and t.id = p_task_id)
           for key share;
        select t.* into v_task from memsub.tasks t
         where t.tenant_id = memsub._require_tenant_id() and t.id = p_task_id
           for update;
    else
        select t.* into v_task from memsub.tasks t
         where t.tenant_id = memsub._require_tenant_id() and t.id = p_task_id;
    end if;
    if v_task.id is null then
        raise exception 'task % does not exist or is not visible', p_task_id
            using errcode = p_errcode, column = 'task_id';
    end if;
    return v_task;
end
$$;
comment on function memsub._task_lookup(bigint, boolean, text) is
    'Internal: the visible task of the context tenant with this id (optionally locked, after a key share of its '
    'session); raises 23502 naming task_id when the id is NULL and p_errcode naming '
    'task_id when there is none (P0002 for the task acted on, 23503 for a task referred to).';

create or replace function memsub._task_next_statuses(p_status text) returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    select case when p_status = 'pending' then array['running'] || memsub.task_final_statuses()
                when p_status = 'running' then memsub.task_final_statuses()
                else '{}'::text[] end
$$;
comment on function memsub._task_next_statuses(text) is
    'Internal to task_set_status: the statuses a task at this status may move to. A pending task may start '
    '(running) or end (a final status), a running task may end; a final status (memsub.task_final_statuses()) '
    'moves nowhere, and no status moves to itself or back to pending.';

create or replace function memsub.task_create(
    p_type           text,
    p_payload        jsonb  default '{}',
    p_session_id     text   default null,
    p_parent_task_id bigint default null
) returns memsub.tasks
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_task   memsub.tasks;
    v_type   text;
    v_parent_status text;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('type', p_type, 'session_id', p_session_id),
            memsub._check_limit(pg_column_size(p_payload), 'max_json_bytes', 'payload');
    -- The type names the kind of task: stored trimmed, each run of whitespace one space (23502 NULL, 22023 blank).
    v_type := memsub._require_text(p_type, 'type');
    if p_session_id is not null then
        perform memsub._require_active_session(memsub._session_lookup(p_session_id, 'key share', '23503'));
    end if;
    if p_parent_task_id is not null then
        -- A key share of the parent (which the new row's foreign key takes anyway) holds off a concurrent status
        -- change until this transaction ends, and one that committed first is the status read here.
        select t.status into v_parent_status from memsub.tasks t
         where t.tenant_id = v_tenant and t.id = p_parent_task_id
           for key share;
        if not found then
            raise exception 'parent task % does not exist or is not visible', p_parent_task_id
                using errcode = '23503', column = 'parent_task_id';
        end if;
        -- A finished task takes no more work, as a terminated session takes no more tasks.
        if v_parent_status = any(memsub.task_final_statuses()) then
            raise exception 'parent task % is already %: a finished task takes no sub-task', p_parent_task_id,
                v_parent_status
                using errcode = '55000', column = 'parent_task_id';
        end if;
    end if;
    insert into memsub.tasks as t (tenant_id, org_id, user_id, type, payload, session_id, parent_task_id)
    -- JSON null is no payload, as SQL NULL is: the default {} (the client leaves None out, which is the same).
    values (v_tenant, memsub.current_org_id(), memsub.current_user_id(), v_type,
            coalesce(nullif(p_payload, 'null'::jsonb), '{}'),
            p_session_id, p_parent_task_id)
    returning t.* into v_task;
    perform memsub._audit_record('task_create', p_session_id => p_session_id, p_task_id => v_task.id,
        p_tenant_id => v_task.tenant_id,
        p_details => jsonb_build_object('type', v_type, 'parent_task_id', p_parent_task_id));
    return v_task;
end
$$;
comment on function memsub.task_create(text, jsonb, text, bigint) is
    'Creates a pending task of a type (stored trimmed, each run of whitespace one space) with a payload (any JSON; '
    'NULL or JSON null is the default {}), optionally in an active '
    'session and under a pending or running parent task (23503 naming session_id or parent_task_id when unknown; '
    '55000 naming parent_task_id when the parent is completed, failed or cancelled). Audited as task_create.';

create or replace function memsub.task_link_session(p_task_id bigint, p_session_id text) returns memsub.tasks
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_task   memsub.tasks;
begin
    if p_session_id is null then
        raise exception 'field "session_id" is required' using errcode = '23502', column = 'session_id';
    end if;
    v_task := memsub._task_lookup(p_task_id, true, 'P0002');
    if v_task.session_id = p_session_id then
        return v_task;  -- already linked there
    end if;
    if v_task.session_id is not null then
        raise exception 'task % already belongs to session "%"; only an orphan task is linked', p_task_id,
            v_task.session_id
            using errcode = '55000', column = 'session_id';
    end if;
    perform memsub._require_active_session(memsub._session_lookup(p_session_id, 'key share', '23503'));
    update memsub.tasks t set session_id = p_session_id
     where t.tenant_id = v_tenant and t.id = p_task_id
    returning t.* into v_task;
    perform memsub._audit_record('task_link', p_session_id => p_session_id, p_task_id => v_task.id,
        p_tenant_id => v_task.tenant_id,
        p_details => jsonb_build_object('type', v_task.type, 'status', v_task.status));
    return v_task;
end
$$;
comment on function memsub.task_link_session(bigint, text) is
    'Links an orphan task (no session, e.g. written before sessions existed; seed 001 7.2) to an active session. '
    'Linking it again to the same session changes nothing; a task of another session is not moved (55000), an '
    'unknown task is P0002 and an unknown session 23503. Audited as task_link.';

create or replace function memsub.task_set_status(
    p_task_id bigint,
    p_status  text,
    p_result  jsonb default null,
    p_error   text  default null
) returns memsub.tasks
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_task   memsub.tasks;
    v_before text;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('status', p_status, 'error', p_error),
            memsub._check_limit(pg_column_size(p_result), 'max_json_bytes', 'result');
    if p_status is null or p_status <> all(memsub.task_statuses()) then
        raise exception 'task status must be %, not "%"', memsub._alternatives(memsub.task_statuses()),
            coalesce(p_status, 'NULL')
            using errcode = '22023', column = 'status';
    end if;
    -- The error says what went wrong: stored as given (its line breaks too), and a blank one says nothing.
    if memsub._is_blank(p_error) then
        raise exception 'field "error" must not be blank' using errcode = '22023', column = 'error';
    end if;
    v_task := memsub._task_lookup(p_task_id, true, 'P0002');
    -- A task moves forward only: a pending task starts (running) or ends, a running task ends, and a final status
    -- (completed, failed, cancelled) is never left. Staying where it is is no move either: it would record a
    -- status change that changed nothing, and a second worker starting a running task would not be told.
    if p_status <> all(memsub._task_next_statuses(v_task.status)) then
        raise exception 'task % cannot move from % to %: %', p_task_id, v_task.status, p_status,
            case when v_task.status = any(memsub.task_final_statuses())
                 then format('%s is final', v_task.status)
                 else format('a %s task moves only to %s', v_task.status,
                             memsub._alternatives(memsub._task_next_statuses(v_task.status))) end
            using errcode = '55000', column = 'status';
    end if;
    if p_error is not null and p_status <> 'failed' then
        raise exception 'error may only be given with status failed'
            using errcode = '22023', column = 'error';
    end if;
    v_before := v_task.status;
    update memsub.tasks t
       set status = p_status,
           -- JSON null is no result, as SQL NULL is: the result stays what it was.
           result = coalesce(nullif(p_result, 'null'::jsonb), t.result),
           error = coalesce(p_error, t.error),
           completed_at = case when p_status = any(memsub.task_final_statuses()) then now() end
     where t.tenant_id = v_tenant and t.id = p_task_id
    returning t.* into v_task;
    perform memsub._audit_record('task_status', p_session_id => v_task.session_id, p_task_id => v_task.id,
        p_tenant_id => v_task.tenant_id,
        p_details => jsonb_build_object('from', v_before, 'to', p_status));
    return v_task;
end
$$;
comment on function memsub.task_set_status(bigint, text, jsonb, text) is
    'Moves a task forward to a new status, storing its result or error: pending to running or to a final status '
    '(completed, failed, cancelled: they set completed_at), running to a final status. Any other move (back, to '
    'the same status, out of a final status) is 55000 naming status, the message giving both statuses. The error '
    '(status failed only) is stored as given; a blank one is 22023 naming error. A NULL or JSON null result leaves '
    'the result as it was. Audited as task_status.';

create or replace function memsub.agent_spawn(
    p_name       text,
    p_task_id    bigint,
    p_session_id text  default null,
    p_metadata   jsonb default '{}'
) returns memsub.agents
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_task    memsub.tasks;
    v_session text;
    v_agent   memsub.agents;
    v_name    text;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('name', p_name, 'session_id', p_session_id),
            memsub._check_limit(pg_column_size(p_metadata), 'max_json_bytes', 'metadata');
    -- The name names the agent: stored trimmed, each run of whitespace one space (23502 NULL, 22023 blank).
    v_name := memsub._require_text(p_name, 'name');
    -- SQL NULL is no value: the default, {} (docs/errors.md); JSON null is a value of the wrong type.
    if jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'agent metadata must be a JSON object' using errcode = '22023', column = 'metadata';
    end if;
    v_task := memsub._task_lookup(p_task_id, false, '23503');
    v_session := coalesce(p_session_id, v_task.session_id);
    -- An agent works in an active session, as a task is created and linked in one: a terminated session takes
    -- no more work.
    if v_session is not null then
        perform memsub._require_active_session(memsub._session_lookup(v_session, 'key share', '23503'));
    end if;
    insert into memsub.agents as a (tenant_id, org_id, user_id, name, session_id, task_id, metadata)
    values (v_tenant, memsub.current_org_id(), memsub.current_user_id(), v_name, v_session, p_task_id,
            coalesce(p_metadata, '{}'))
    returning a.* into v_agent;
    perform memsub._audit_record('agent_spawn', p_session_id => v_session, p_task_id => p_task_id,
        p_tenant_id => v_agent.tenant_id,
        p_agent_id => v_agent.id, p_details => jsonb_build_object('name', v_name));
    return v_agent;
end
$$;
comment on function memsub.agent_spawn(text, bigint, text, jsonb) is
    'Spawns an agent (its name stored trimmed, each run of whitespace one space) for a task, in the given session '
    'or else the task''s session, which must be active (23503 '
    'naming session_id when unknown, 55000 when not active). metadata must be a JSON object (22023 naming it, JSON '
    'null included); NULL is its default, {}. Audited as agent_spawn.';

call memsub._install_row_security('memsub.tasks', array['org']);
call memsub._install_row_security('memsub.agents', array['org']);

-- A task or agent created in a session carries that session's work (a task's payload, result and error, an
-- agent's metadata), so it is visible where its session is: to the session's user, to the context whose session_id
-- names it and to admins (the policies of memsub.sessions, applied to the sub-select), as a checkpoint holding the
-- session's state is (sql/730_checkpoints.sql). When memsub.session_delete deletes the session, it writes the
-- session's user into deleted_session_user_id: the row stays that user's and admins', never the organization's
-- (the foreign key sets session_id to NULL, and a context naming the deleted id, or a new session given that id,
-- reaches nothing). A task or agent that never was in a session is the organization's.
call memsub._ensure_policy('memsub.tasks', 'task_session_access', $create$create policy task_session_access on memsub.tasks as restrictive for all to public
    using ((session_id is null
            or exists (select from memsub.sessions s where s.tenant_id = tasks.tenant_id and s.id = tasks.session_id))
           and (deleted_session_user_id is null
                or deleted_session_user_id = (select memsub.current_user_id())
                or (select memsub._caller_is_admin())))$create$);
comment on policy task_session_access on memsub.tasks is
    'A task of a session is visible where that session is: to its user, to the context whose session_id names it, '
    'and to admins; a task of a deleted session to that session''s user (deleted_session_user_id) and admins; a '
    'task that never was in a session passes.';
call memsub._ensure_policy('memsub.agents', 'agent_session_access', $create$create policy agent_session_access on memsub.agents as restrictive for all to public
    using ((session_id is null
            or exists (select from memsub.sessions s where s.tenant_id = agents.tenant_id and s.id = agents.session_id))
           and (deleted_session_user_id is null
                or deleted_session_user_id = (select memsub.current_user_id())
                or (select memsub._caller_is_admin())))$create$);
comment on policy agent_session_access on memsub.agents is
    'An agent of a session is visible where that session is: to its user, to the context whose session_id names '
    'it, and to admins; an agent of a deleted session to that session''s user (deleted_session_user_id) and '
    'admins; an agent that never was in a session passes.';

grant select on memsub.tasks, memsub.agents to memsub_app, memsub_analyst;
grant execute on function
    memsub.task_create(text, jsonb, text, bigint),
    memsub.task_set_status(bigint, text, jsonb, text),
    memsub.task_link_session(bigint, text),
    memsub.agent_spawn(text, bigint, text, jsonb)
    to memsub_app;
