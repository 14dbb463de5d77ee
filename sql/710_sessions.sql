-- Area: sessions. Seed: seed 001 sections 5 and 6.1.
--
-- Sessions (seed 001): create, append events, merge state deltas, end a turn, terminate, delete.
--
-- sessions.state holds namespaced keys "<namespace>:<key>":
--   temp:[<part>:...]<key>                  current turn only; dropped by memsub.session_end_turn
--   session:<session id>:[<part>:...]<key>  this session only
--   user:<user id>:[<part>:...]<key>        the session's user; moved into memory_entries on termination
-- app: and project: keys cannot be written by a session (seed 001 section 2.1). Termination moves the user:
-- keys into memory_entries, clears the state and marks the session terminated, in one statement.

-- The earlier names and signatures (without the _ of an internal helper, without p_errcode; a boolean for the
-- one lock it took; a second helper for the key share).
drop function if exists memsub.session_lookup(text, boolean);
drop function if exists memsub.session_lookup(text, boolean, text);
drop function if exists memsub._session_lookup(text, boolean, text);
drop function if exists memsub._session_referred(text);

-- The locks of a session's row, weakest first, and who takes which:
--   key share      a transaction that refers to the session (creates or links a task in it, spawns an agent
--                  into it): the lock the referring row's foreign key takes anyway. It does not wait for the
--                  session's other writers, only for a termination, and reads the session as that termination
--                  left it; a termination that starts later waits for it and sees what it wrote.
--   no key update  the writers of a session (events, state, turns), which change its columns, never its key:
--                  they queue one behind the other without waiting for transactions that only refer to the
--                  session (a task, an agent, a checkpoint, a memory entry or an audit row of it). FOR UPDATE
--                  waited for those, and two workers that each referred to the session and then appended an
--                  event deadlocked.
--   update         memsub.session_terminate and memsub.session_delete: the one lock that waits for the
--                  transactions referring to the session and keeps new ones out until the termination or the
--                  deletion commits.
create or replace function memsub._session_lookup(
    p_session_id text,
    p_lock       text default null,
    p_errcode    text default 'P0002'
) returns memsub.sessions
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_session memsub.sessions;
begin
    if p_session_id is null then
        raise exception 'session_id is required'
            using errcode = '23502', column = 'session_id';
    end if;
    if p_lock is null then
        select s.* into v_session from memsub.sessions s
         where s.tenant_id = memsub._require_tenant_id() and s.id = p_session_id;
    elsif p_lock = 'key share' then
        select s.* into v_session from memsub.sessions s
         where s.tenant_id = memsub._require_tenant_id() and s.id = p_session_id
           for key share;
    elsif p_lock = 'no key update' then
        select s.* into v_session from memsub.sessions s
         where s.tenant_id = memsub._require_tenant_id() and s.id = p_session_id
           for no key update;
    elsif p_lock = 'update' then
        select s.* into v_session from memsub.sessions s
         where s.tenant_id = memsub._require_tenant_id() and s.id = p_session_id
           for update;
    else
        raise exception 'unknown session lock "%"', p_lock using errcode = '22023';
    end if;
    if v_session.id is null then
        raise exception 'session "%" does not exist or is not visible', p_session_id
            using errcode = p_errcode, column = 'session_id';
    end if;
    return v_session;
end
$$;
comment on function memsub._session_lookup(text, text, text) is
    'Internal: the visible session of the context tenant with this id, locked until the transaction ends when '
    'p_lock names a lock (key share: a reference to the session; no key update: a writer of it; update: its '
    'termination); raises p_errcode naming session_id when there is none (P0002, or 23503 where the caller only '
    'refers to the session).';

create or replace function memsub._require_active_session(p_session memsub.sessions) returns void
language plpgsql immutable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_session.status <> 'active' then
        raise exception 'session "%" is %, not active', p_session.id, p_session.status
            using errcode = '55000', column = 'session_id';
    end if;
end
$$;
comment on function memsub._require_active_session(memsub.sessions) is
    'Internal: raises 55000 naming session_id unless the session is active.';

create or replace function memsub._check_state_delta(p_session memsub.sessions, p_delta jsonb, p_field text)
returns void
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_key   text;
    v_kind  text;
    v_parts text[];
begin
    if p_delta is null or jsonb_typeof(p_delta) <> 'object' then
        raise exception '% must be a JSON object of namespaced keys', p_field
            using errcode = '22023', column = p_field;
    end if;
    for v_key in select k from jsonb_object_keys(p_delta) as k order by k loop
        v_parts := string_to_array(v_key, ':');
        v_kind := v_parts[1];
        if v_kind in ('app', 'project') then
            raise exception '% key "%": sessions write temp:, session: and user: keys only; % memory needs an elevated role (memsub.memory_write as tenant_admin)',
                p_field, v_key, v_kind
                using errcode = '42501', column = p_field;
        end if;
        if v_kind not in ('temp', 'session', 'user')
           or v_key !~ '^(temp|(session|user):[A-Za-z0-9_.-]+)(:[A-Za-z0-9_.-]+)*:[^:[:space:]][^:]*$'
           or length(v_parts[cardinality(v_parts)]) > 256 then
            raise exception '% key "%" is not a namespaced key (temp:<key>, session:<session id>:<key> or user:<user id>:<key>)',
                p_field, v_key
                using errcode = '22023', column = p_field;
        end if;
        -- A user: key becomes a memory entry when the session terminates: its namespace (all but the last part)
        -- must fit memory_entries' namespace, or the session could never terminate.
        if v_kind = 'user' and length(v_key) - length(v_parts[cardinality(v_parts)]) - 1 > 512 then
            raise exception '% key "%..." has a namespace of % characters; a user: key''s namespace is at most 512 (it becomes a memory namespace)',
                p_field, left(v_key, 80), length(v_key) - length(v_parts[cardinality(v_parts)]) - 1
                using errcode = '22023', column = p_field;
        end if;
        if v_kind = 'session' and v_parts[2] <> p_session.id then
            raise exception '% key "%" belongs to another session than "%"', p_field, v_key, p_session.id
                using errcode = '42501', column = p_field;
        end if;
        if v_kind = 'user' and v_parts[2] is distinct from p_session.user_id::text then
            raise exception '% key "%" belongs to another user than the session''s (%)', p_field, v_key,
                coalesce(p_session.user_id::text, 'none')
                using errcode = '42501', column = p_field;
        end if;
        -- The session's user: keys are that user's memory (session_terminate writes them into user:<id> memory
        -- entries): a context of another user, or of none, that names the session acts in it but writes no
        -- user: key of it, as it could write none of that user's memory entries. Admin contexts pass, as there.
        if v_kind = 'user' and v_parts[2] is distinct from memsub.current_user_id()::text
           and not memsub._caller_is_admin() then
            raise exception '% key "%" of session "%" belongs to its user (%), not to the context''s (%)',
                p_field, v_key, p_session.id, p_session.user_id, coalesce(memsub.current_user_id()::text, 'none')
                using errcode = '42501', column = p_field;
        end if;
    end loop;
end
$$;
comment on function memsub._check_state_delta(memsub.sessions, jsonb, text) is
    'Internal: checks that every key of a state delta is a temp:, session:<this session>: or user:<session user>: '
    'key (22023 for a malformed key or a user: key whose namespace is longer than a memory namespace, 512 '
    'characters; 42501 for another session''s or user''s key, a user: key written by a context of another user '
    'than the session''s (unless admin), or an app:/project: key).';

create or replace function memsub._apply_state_delta(p_state jsonb, p_delta jsonb) returns jsonb
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select (p_state || coalesce((select jsonb_object_agg(k, v) from jsonb_each(p_delta) as d(k, v)
                                  where jsonb_typeof(v) <> 'null'), '{}'))
           - coalesce((select array_agg(k) from jsonb_each(p_delta) as d(k, v) where jsonb_typeof(v) = 'null'),
                      '{}'::text[])
$$;
comment on function memsub._apply_state_delta(jsonb, jsonb) is
    'Merges a state delta into a state: keys with a value are set, keys whose value is JSON null are removed.';

-- A deleted session's id stays its user's (memsub.deleted_sessions, 2.52.0): the session:<id> memory it left is
-- read and written by that user and admins alone (memsub._context_session_namespace), and a session of another
-- user given the id would make the id visible, and the memory with it, to the contexts naming it. Owned by
-- memsub_retrieval_owner (BYPASSRLS), as a row of another user or organization must count; returns a boolean.
create or replace function memsub._session_id_kept_for_another_user(p_session_id text) returns boolean
language sql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
    select exists (select from memsub.deleted_sessions d
                    where d.tenant_id = memsub._require_tenant_id() and d.session_id = p_session_id
                      and d.user_id is distinct from memsub.current_user_id())
$$;
alter function memsub._session_id_kept_for_another_user(text) owner to memsub_retrieval_owner;
comment on function memsub._session_id_kept_for_another_user(text) is
    'Internal to session_create: true when a session of this id of the context tenant was deleted '
    '(memsub.deleted_sessions) and its user is not the context user (owned by memsub_retrieval_owner, BYPASSRLS, '
    'so that every user''s and organization''s deleted sessions count). Executable only by memsub_owner.';
grant select on memsub.deleted_sessions to memsub_retrieval_owner;
grant execute on function memsub._require_tenant_id(), memsub.current_user_id() to memsub_retrieval_owner;
grant execute on function memsub._session_id_kept_for_another_user(text) to memsub_owner;

create or replace function memsub.session_create(
    p_session_id text  default null,
    p_project_id text  default null,
    p_app_name   text  default null,
    p_state      jsonb default '{}'
) returns memsub.sessions
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_session memsub.sessions;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id, 'project_id', p_project_id, 'app_name', p_app_name),
            memsub._check_limit(pg_column_size(p_state), 'max_json_bytes', 'state');
    if memsub.current_user_id() is null then
        raise exception 'memsub.session_create needs a user in the context (memsub.set_context(..., user_id => ...))'
            using errcode = '22023', column = 'user_id';
    end if;
    if p_session_id !~ '^[A-Za-z0-9_.-]+$' or length(p_session_id) > 128 then
        raise exception 'session_id "%" must be 1 to 128 letters, digits, "_", "." or "-"', p_session_id
            using errcode = '22023', column = 'session_id';
    end if;
    if p_project_id !~ '^[A-Za-z0-9_.-]+$' or length(p_project_id) > 128 then
        raise exception 'project_id "%" must be 1 to 128 letters, digits, "_", "." or "-"', p_project_id
            using errcode = '22023', column = 'project_id';
    end if;
    if p_app_name !~ '^[A-Za-z0-9_.-]+$' or length(p_app_name) > 128 then
        raise exception 'app_name "%" must be 1 to 128 letters, digits, "_", "." or "-"', p_app_name
            using errcode = '22023', column = 'app_name';
    end if;
    v_session.id := coalesce(p_session_id, gen_random_uuid()::text);
    v_session.user_id := memsub.current_user_id();
    perform memsub._check_state_delta(v_session, coalesce(p_state, '{}'), 'state');

    insert into memsub.sessions as s (tenant_id, id, org_id, user_id, project_id, app_name, state)
    values (v_tenant, v_session.id, memsub.current_org_id(), memsub.current_user_id(), p_project_id, p_app_name,
            memsub._apply_state_delta('{}', coalesce(p_state, '{}')))
    on conflict (tenant_id, id) do nothing
    returning s.* into v_session;
    if not found then
        raise exception 'session "%" already exists', coalesce(p_session_id, '')
            using errcode = '23505', column = 'session_id';
    end if;
    -- After the insert, not before: an insert of the id of a session being deleted waits for the deletion, and
    -- this statement then sees the row the deletion wrote. The error undoes the insert.
    if memsub._session_id_kept_for_another_user(v_session.id) then
        raise exception 'session "%" was another user''s deleted session: its id is not given to another user',
            v_session.id
            using errcode = '23505', column = 'session_id',
                  hint = 'Create the session with another id (or none, for a generated one).';
    end if;
    perform memsub._audit_record('session_create', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('project_id', p_project_id, 'app_name', p_app_name));
    return v_session;
end
$$;
comment on function memsub.session_create(text, text, text, jsonb) is
    'Creates an active session for the context user (id generated when NULL), in a project and app, with an initial '
    'state (namespaced keys, checked like a state delta). Audited as session_create. 23505 naming session_id '
    'when the id exists, or was the id of a deleted session of another user (memsub.deleted_sessions).';

create or replace function memsub.session_append_event(
    p_session_id  text,
    p_event       jsonb,
    p_state_delta jsonb default null
) returns memsub.sessions
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_session memsub.sessions;
    v_state   jsonb;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id),
            memsub._check_limits(array[pg_column_size(p_event), pg_column_size(p_state_delta)], 'max_json_bytes',
                                 array['event', 'state_delta']);
    v_session := memsub._session_lookup(p_session_id, 'no key update');
    perform memsub._require_active_session(v_session);
    if p_event is null or jsonb_typeof(p_event) <> 'object' then
        raise exception 'event must be a JSON object'
            using errcode = '22023', column = 'event';
    end if;
    v_state := v_session.state;
    if p_state_delta is not null then
        perform memsub._check_state_delta(v_session, p_state_delta, 'state_delta');
        -- The state the deltas add up to is bounded as one JSON argument is (the row is locked: it is current).
        v_state := memsub._apply_state_delta(v_session.state, p_state_delta);
        perform memsub._check_limit(pg_column_size(v_state), 'max_json_bytes', 'state_delta');
    end if;
    -- The event is a row of its own: an append writes it and counts it, and rewrites nothing of the history.
    -- The session's row is locked (_session_lookup above), so the count gives each event its own position.
    update memsub.sessions s
       set event_count = s.event_count + 1,
           state = v_state,
           updated_at = now()
     where s.tenant_id = v_session.tenant_id and s.id = v_session.id
    returning s.* into v_session;
    insert into memsub.session_events (tenant_id, session_id, position, org_id, user_id, event)
    values (v_session.tenant_id, v_session.id, v_session.event_count - 1, v_session.org_id, v_session.user_id,
            p_event);
    perform memsub._audit_record('session_event', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('event_index', v_session.event_count - 1,
                                        'state_keys', (select coalesce(jsonb_agg(k order by k), '[]')
                                                         from jsonb_object_keys(coalesce(p_state_delta, '{}')) k)));
    return v_session;
end
$$;
comment on function memsub.session_append_event(text, jsonb, jsonb) is
    'Appends an event (JSON object) to an active session and merges its state delta (JSON null removes a key), '
    'atomically; 54000 naming state_delta when the merged state would exceed max_json_bytes. Audited as '
    'session_event.';

create or replace function memsub.session_merge_state(p_session_id text, p_state_delta jsonb)
returns memsub.sessions
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_session memsub.sessions;
    v_state   jsonb;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id),
            memsub._check_limit(pg_column_size(p_state_delta), 'max_json_bytes', 'state_delta');
    v_session := memsub._session_lookup(p_session_id, 'no key update');
    perform memsub._require_active_session(v_session);
    perform memsub._check_state_delta(v_session, p_state_delta, 'state_delta');
    -- The state the deltas add up to is bounded as one JSON argument is (the row is locked: it is current).
    v_state := memsub._apply_state_delta(v_session.state, p_state_delta);
    perform memsub._check_limit(pg_column_size(v_state), 'max_json_bytes', 'state_delta');
    update memsub.sessions s
       set state = v_state, updated_at = now()
     where s.tenant_id = v_session.tenant_id and s.id = v_session.id
    returning s.* into v_session;
    perform memsub._audit_record('session_state', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('state_keys', (select coalesce(jsonb_agg(k order by k), '[]')
                                                         from jsonb_object_keys(p_state_delta) k)));
    return v_session;
end
$$;
comment on function memsub.session_merge_state(text, jsonb) is
    'Merges a state delta into an active session''s state (JSON null removes a key); 54000 naming state_delta when '
    'the merged state would exceed max_json_bytes. Audited as session_state.';

create or replace function memsub.session_end_turn(p_session_id text) returns memsub.sessions
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_session memsub.sessions;
    v_dropped text[];
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id);
    v_session := memsub._session_lookup(p_session_id, 'no key update');
    perform memsub._require_active_session(v_session);
    select coalesce(array_agg(k order by k), '{}') into v_dropped
      from jsonb_object_keys(v_session.state) k where k like 'temp:%';
    update memsub.sessions s
       set state = s.state - v_dropped, updated_at = now()
     where s.tenant_id = v_session.tenant_id and s.id = v_session.id
    returning s.* into v_session;
    perform memsub._audit_record('session_end_turn', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('dropped_keys', to_jsonb(v_dropped)));
    return v_session;
end
$$;
comment on function memsub.session_end_turn(text) is
    'Ends the current turn of an active session: drops its temp: keys from the state. Audited as session_end_turn.';

drop function if exists memsub.session_terminate(text, text);
-- A session's open tasks in every organization: row-level security shows the caller only its own organization's
-- tasks, and a task of another one must keep the session from terminating too. Owned by memsub_retrieval_owner
-- (BYPASSRLS), states the tenant itself, and returns ids only.
create or replace function memsub._session_open_tasks(p_session_id text) returns bigint[]
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_open bigint[];
begin
    select coalesce(array_agg(t.id order by t.id), '{}') into v_open
      from memsub.tasks t
     where t.tenant_id = memsub._require_tenant_id() and t.session_id = p_session_id
       and t.status <> all(memsub.task_final_statuses());
    return v_open;
end
$$;
alter function memsub._session_open_tasks(text) owner to memsub_retrieval_owner;
comment on function memsub._session_open_tasks(text) is
    'Internal to session_terminate: the ids of the session''s tasks not yet final (pending or running) in every '
    'organization of the context tenant (owned by memsub_retrieval_owner, BYPASSRLS). Executable only by '
    'memsub_owner.';
grant select on memsub.tasks to memsub_retrieval_owner;
grant execute on function memsub.task_final_statuses() to memsub_retrieval_owner;
grant execute on function memsub._session_open_tasks(text) to memsub_owner;

create or replace function memsub.session_terminate(
    p_session_id        text,
    p_memory_type       text    default 'semantic',
    p_cancel_open_tasks boolean default false
)
returns table (session_id text, status text, terminated_at timestamptz, migrated_keys integer)
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_session  memsub.sessions;
    v_key      text;
    v_value    jsonb;
    v_migrated text[] := '{}';
    v_open     bigint[];
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id, 'memory_type', p_memory_type);
    -- The memory type is checked whether or not a user: key is written with it.
    perform memsub._check_one_of(p_memory_type, memsub.memory_types(), 'memory_type');
    -- FOR UPDATE, the one lock of a session that waits for the transactions referring to it (a task created in
    -- it, an agent spawned into it, a task of it changing status: they hold a key share of its row) and keeps new
    -- ones out until the termination commits: the open tasks below are those committed, and the task functions,
    -- which share the session before they lock a task of it, find it terminated once they may go on.
    v_session := memsub._session_lookup(p_session_id, 'update');
    perform memsub._require_active_session(v_session);
    -- The user: keys become the session user's memory entries, which only that user's context or an admin one
    -- writes (as only they write those keys into the state): a context of another user, or of none, that names
    -- the session is refused here, naming the session, before anything is cancelled or written.
    if memsub.current_user_id() is distinct from v_session.user_id and not memsub._caller_is_admin()
       and exists (select from jsonb_object_keys(v_session.state) k where k like 'user:%') then
        raise exception 'session "%" holds user: keys of its user (%), which termination writes into that user''s '
                        'memory: only that user''s context or an admin one terminates it', v_session.id,
                        v_session.user_id
            using errcode = '42501', column = 'session_id';
    end if;
    -- Seed 001 4.1: a session terminates when it has no more tasks. Open tasks of the session (not yet final:
    -- pending or running) block it unless the caller cancels them here; one of an organization the caller cannot
    -- see blocks it in any case (the caller may not cancel it).
    v_open := memsub._session_open_tasks(v_session.id);
    if exists (select from unnest(v_open) as o(id)
                where not exists (select from memsub.tasks t where t.tenant_id = v_session.tenant_id and t.id = o.id))
    then
        raise exception 'session "%" has open task(s) in another organization: they finish or are cancelled there '
                        'first', v_session.id
            using errcode = '55000', column = 'session_id';
    end if;
    if cardinality(v_open) > 0 and not coalesce(p_cancel_open_tasks, false) then
        raise exception 'session "%" has % open task(s) (%): finish or cancel them first', v_session.id,
            cardinality(v_open), array_to_string(v_open, ', ')
            using errcode = '55000', column = 'session_id',
                  hint = 'Pass p_cancel_open_tasks => true to cancel them as the session terminates.';
    end if;
    if cardinality(v_open) > 0 then
        -- Only a task still open is cancelled: a final status is never overwritten.
        with cancelled as (
            update memsub.tasks t set status = 'cancelled', completed_at = now()
             where t.tenant_id = v_session.tenant_id and t.id = any(v_open)
               and t.status <> all(memsub.task_final_statuses())
            returning t.id)
        select coalesce(array_agg(c.id order by c.id), '{}') into v_open from cancelled c;
        perform memsub._audit_record('task_status', p_session_id => v_session.id, p_task_id => o.id,
                                     p_details => jsonb_build_object('to', 'cancelled', 'by', 'session_terminate'),
                                     p_tenant_id => v_session.tenant_id)
           from unnest(v_open) as o(id);
    end if;
    -- Persist the user: keys (last write wins against what memory_entries holds: the session's value is newer).
    for v_key, v_value in
        select e.k, e.v from jsonb_each(v_session.state) as e(k, v) where e.k like 'user:%' order by e.k
    loop
        perform memsub._store_memory_version(
            regexp_replace(v_key, ':[^:]*$', ''), substring(v_key from '[^:]*$'), v_value, p_memory_type,
            jsonb_build_object('source', 'session_terminate', 'session_id', v_session.id),
            null, false, false, 'memory_write',
            jsonb_build_object('source', 'session_terminate'), v_session.id);
        v_migrated := v_migrated || v_key;
    end loop;
    update memsub.sessions s
       set state = '{}', status = 'terminated', terminated_at = now(), updated_at = now()
     where s.tenant_id = v_session.tenant_id and s.id = v_session.id
    returning s.* into v_session;
    perform memsub._audit_record('session_terminate', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('migrated_keys', to_jsonb(v_migrated),
                                        'memory_type', p_memory_type));
    return query select v_session.id, v_session.status, v_session.terminated_at, cardinality(v_migrated);
end
$$;
comment on function memsub.session_terminate(text, text, boolean) is
    'Terminates an active session atomically. Refused (55000, column session_id) while the session has pending or '
    'running tasks, unless cancel_open_tasks, which cancels those still open (audited as task_status); it waits '
    'for transactions that create, link or change a task of the session or spawn an agent into it, and new ones '
    'wait for it and then find the session terminated; a task of an '
    'organization the caller cannot see blocks it in any case. Writes each user:<user id>:...:<key> state key as a new version of '
    '(namespace, key) in memory_entries (memory_type as given, default semantic), clears the state, marks the '
    'session terminated. A context of another user than the session''s, or of none, does not terminate a session '
    'whose state holds user: keys (42501 naming session_id; unless admin). Audited: one memory_write row per '
    'migrated key and one session_terminate row.';

create or replace function memsub.session_delete(p_session_id text) returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_session memsub.sessions;
begin
    if not (memsub._caller_is_admin()) then
        raise exception 'memsub.session_delete needs a tenant_admin or platform_admin context'
            using errcode = '42501', column = 'session_id';
    end if;
    -- FOR UPDATE, as session_terminate locks it: it waits for the transactions referring to the session (a task
    -- created or linked in it, an agent spawned into it, a checkpoint of its task) and keeps new ones out, so the
    -- rows marked below are all the rows of the session.
    v_session := memsub._session_lookup(p_session_id, 'update');
    perform memsub._audit_record('session_delete', p_session_id => v_session.id, p_tenant_id => v_session.tenant_id,
        p_details => jsonb_build_object('deleted_session_id', v_session.id, 'status', v_session.status,
                                        'events', v_session.event_count));
    -- Its events go with it (session_events_session_fkey cascades); the checkpoints stay, without the copies of
    -- its state (no session would decide any more who may read them).
    -- Its tasks, agents and checkpoints stay, and stay its user's: the foreign keys set their session_id to NULL,
    -- which alone would make them the organization's (task_session_access, agent_session_access,
    -- checkpoint_session_access read deleted_session_user_id). The admin context reaches every organization's.
    update memsub.checkpoints c set session_state = null, deleted_session_user_id = v_session.user_id
     where c.tenant_id = v_session.tenant_id and c.session_id = v_session.id;
    update memsub.tasks t set deleted_session_user_id = v_session.user_id
     where t.tenant_id = v_session.tenant_id and t.session_id = v_session.id;
    update memsub.agents a set deleted_session_user_id = v_session.user_id
     where a.tenant_id = v_session.tenant_id and a.session_id = v_session.id;
    -- Whose the id was: its session:<id> memory entries stay, and stay that user's (memsub._context_session_namespace),
    -- and session_create gives the id to no other user. A row of an earlier deletion of the id is that user's
    -- already (session_create gave the id to no one else): the deletion's organization and time are the latest.
    insert into memsub.deleted_sessions as d (tenant_id, session_id, user_id, org_id)
    values (v_session.tenant_id, v_session.id, v_session.user_id, v_session.org_id)
    on conflict (tenant_id, session_id) do update set org_id = excluded.org_id, deleted_at = excluded.deleted_at;
    delete from memsub.sessions s where s.tenant_id = v_session.tenant_id and s.id = v_session.id;
    return found;
end
$$;
comment on function memsub.session_delete(text) is
    'Deletes a session (tenant_admin or platform_admin only) and its events. Its tasks, agents, checkpoints, memory '
    'entries and audit rows stay, with session_id set to NULL (seed 001 section 3.2); checkpoints lose their copy '
    'of its state, and its tasks, agents and checkpoints record the session''s user in deleted_session_user_id, '
    'which keeps them readable by that user and admins only. Records the session''s id, user and organization in '
    'memsub.deleted_sessions: its session:<id> memory entries stay readable and writable by that user and admins '
    'only, and no other user may create a session with the id. Waits for the transactions referring to the '
    'session. Audited as session_delete.';

create or replace function memsub.session_get_events(
    p_session_id     text,
    p_after_position integer default null,
    p_limit          integer default 1000
) returns setof memsub.session_events
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_session memsub.sessions;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read.
    perform memsub._check_text_limits('session_id', p_session_id);
    if p_after_position is not null and p_after_position < -1 then
        raise exception 'after_position must be -1 or more (the position of the last event read), not %',
            p_after_position using errcode = '22023', column = 'after_position';
    end if;
    perform memsub._check_count(p_limit, 'max_rows', 'limit');
    v_session := memsub._session_lookup(p_session_id);
    return query
        select e.* from memsub.session_events e
         where e.tenant_id = v_session.tenant_id and e.session_id = v_session.id
           and e.position > coalesce(p_after_position, -1)
         order by e.position
         limit p_limit;
end
$$;
comment on function memsub.session_get_events(text, integer, integer) is
    'A session''s events in the order they were appended: at most limit of them (at most the max_rows limit), '
    'after the position of the last one already read (NULL or -1: from the first). P0002 naming session_id when '
    'the session does not exist or the context cannot see it.';

-- A session is visible to its user, to the context naming it, and to admins.
call memsub._install_row_security('memsub.sessions', array['org']);

call memsub._ensure_policy('memsub.sessions', 'session_access', $create$create policy session_access on memsub.sessions as restrictive for all to public
    using (user_id = (select memsub.current_user_id())
           or id = (select memsub.current_session_id())
           or (select memsub._caller_is_admin()))$create$);
comment on policy session_access on memsub.sessions is
    'A session is visible to its user and to the context whose session_id names it; admins pass.';

call memsub._install_row_security('memsub.session_events', array['org']);

call memsub._ensure_policy('memsub.session_events', 'session_event_access', $create$create policy session_event_access on memsub.session_events as restrictive for all to public
    using (user_id = (select memsub.current_user_id())
           or session_id = (select memsub.current_session_id())
           or (select memsub._caller_is_admin()))$create$);
comment on policy session_event_access on memsub.session_events is
    'An event is visible where its session is: to the session''s user and to the context whose session_id names '
    'it; admins pass.';

-- A deleted session's record is its user's, in its organization; admins pass.
call memsub._install_row_security('memsub.deleted_sessions', array['org']);

call memsub._ensure_policy('memsub.deleted_sessions', 'deleted_session_access', $create$create policy deleted_session_access on memsub.deleted_sessions as restrictive for all to public
    using (user_id = (select memsub.current_user_id())
           or (select memsub._caller_is_admin()))$create$);
comment on policy deleted_session_access on memsub.deleted_sessions is
    'The record of a deleted session is visible to the session''s user; admins pass.';

grant select on memsub.sessions, memsub.session_events, memsub.deleted_sessions to memsub_app, memsub_analyst;
grant execute on function
    memsub.session_create(text, text, text, jsonb),
    memsub.session_append_event(text, jsonb, jsonb),
    memsub.session_merge_state(text, jsonb),
    memsub.session_end_turn(text),
    memsub.session_terminate(text, text, boolean)
    to memsub_app;
grant execute on function memsub.session_delete(text) to memsub_tenant_admin;
grant execute on function memsub.session_get_events(text, integer, integer) to memsub_app, memsub_analyst;
