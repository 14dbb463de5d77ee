-- Area: packets. Seed: seed 001 sections 1.2, 3.1 and 4.1 (the audit trail).
--
-- The audit trail of seed 001 and the acting agent/task context it records.
--
-- Every session, task, memory, checkpoint and document-index function writes one memsub.audit row per
-- operation, in its own transaction: a rolled-back operation leaves no audit row, a committed one always has
-- one. memsub.set_actor() names the agent and task acting in the current transaction (transaction-local, like
-- memsub.set_context), and audit rows pick them up.

-- memsub._caller_is_admin(): either admin context role, held by the acting role (memsub.acting_role()).
create or replace function memsub._caller_is_admin() returns boolean
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$ select memsub.is_tenant_admin() or memsub.is_platform_admin() $$;
comment on function memsub._caller_is_admin() is
    'True when the context asks for tenant_admin or platform_admin and the acting role holds that memsub role.';

-- The actor is read back only with its seal, as the context is (010_identity.sql): memsub.set_actor stores, next
-- to the agent and task, an HMAC over them and the context's own seal under the seal key, which no login can
-- read. Settings written by hand (set_config, SET), changed after set_actor, or outliving the context set_actor
-- was called in (the context's seal covers the login, the transaction, tenant, org, user, session and roles) are
-- refused: an audit row names only an agent and task set_actor found visible in that context.
create or replace function memsub._actor_seal(p_agent text, p_task text) returns text
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    select pg_catalog.encode(memsub._context_mac('seal', pg_catalog.concat_ws('|', 'actor',
               pg_catalog.quote_nullable(pg_catalog.current_setting('memsub.context_seal', true)),
               pg_catalog.quote_nullable(p_agent), pg_catalog.quote_nullable(p_task))), 'hex')
$$;
comment on function memsub._actor_seal(text, text) is
    'Internal: the seal of an actor (agent and task settings as text) in the current context: HMAC-SHA256 under '
    'the seal key of the pair and the context''s seal. Granted to nobody: memsub.set_actor writes it, '
    'memsub._current_actor checks it.';

create or replace function memsub._current_actor(out agent_id uuid, out task_id bigint)
language plpgsql stable security definer parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    agent text := coalesce(pg_catalog.current_setting('memsub.agent_id', true), '');
    task  text := coalesce(pg_catalog.current_setting('memsub.task_id', true), '');
begin
    if agent = '' and task = '' then
        return;
    end if;
    if pg_catalog.current_setting('memsub.actor_seal', true) is distinct from memsub._actor_seal(agent, task) then
        raise exception 'memsub: the acting % was not set by memsub.set_actor in this context (or was changed since)',
                        case when agent <> '' then 'agent' else 'task' end
            using errcode = '42501', column = case when agent <> '' then 'agent_id' else 'task_id' end,
                  hint = 'Name the actor with memsub.set_actor after memsub.set_context, never with set_config or '
                         'SET; set it again after changing the context.';
    end if;
    agent_id := nullif(agent, '')::uuid;
    task_id := nullif(task, '')::bigint;
end
$$;
comment on function memsub._current_actor() is
    'Internal: the acting agent and task of the current transaction (NULLs when none is set). Raises 42501 naming '
    'agent_id (task_id when only a task is set) when the settings do not carry the seal memsub.set_actor wrote in '
    'the current context. Granted to nobody: read through memsub.current_agent_id, memsub.current_task_id and '
    'memsub._audit_record.';

create or replace function memsub.current_agent_id() returns uuid
language sql stable security definer parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$ select a.agent_id from memsub._current_actor() a $$;
comment on function memsub.current_agent_id() is
    'Acting agent of the current transaction (memsub.set_actor), or NULL. Raises 42501 (column agent_id or '
    'task_id) when the actor was not set by memsub.set_actor in the current context.';

create or replace function memsub.current_task_id() returns bigint
language sql stable security definer parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$ select a.task_id from memsub._current_actor() a $$;
comment on function memsub.current_task_id() is
    'Acting task of the current transaction (memsub.set_actor), or NULL. Raises 42501 (column agent_id or '
    'task_id) when the actor was not set by memsub.set_actor in the current context.';

create or replace function memsub.set_actor(p_agent_id uuid, p_task_id bigint default null) returns void
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub.current_tenant_id();
    v_task   bigint := p_task_id;
begin
    if v_tenant is null then
        raise exception 'memsub.set_actor: no tenant context; call memsub.set_context(tenant_id, ...) first'
            using errcode = '42501', column = 'tenant_id';
    end if;
    if p_agent_id is not null then
        select coalesce(v_task, a.task_id) into v_task
          from memsub.agents a where a.tenant_id = v_tenant and a.id = p_agent_id;
        if not found then
            raise exception 'memsub.set_actor: agent % does not exist or is not visible', p_agent_id
                using errcode = '23503', column = 'agent_id';
        end if;
    end if;
    if p_task_id is not null
       and not exists (select from memsub.tasks t where t.tenant_id = v_tenant and t.id = p_task_id) then
        raise exception 'memsub.set_actor: task % does not exist or is not visible', p_task_id
            using errcode = '23503', column = 'task_id';
    end if;
    perform pg_catalog.set_config('memsub.agent_id', coalesce(p_agent_id::text, ''), true),
            pg_catalog.set_config('memsub.task_id', coalesce(v_task::text, ''), true),
            pg_catalog.set_config('memsub.actor_seal',
                memsub._actor_seal(coalesce(p_agent_id::text, ''), coalesce(v_task::text, '')), true);
end
$$;
comment on function memsub.set_actor(uuid, bigint) is
    'Names the agent (and task; default: the agent''s task) acting in the current transaction; audit rows record '
    'them. Raises 23503 naming agent_id or task_id when either is unknown or not visible. The actor is sealed to '
    'the current context: set_config or SET cannot name one, and changing the context (org, user, session, roles) '
    'needs set_actor again.';

drop function if exists memsub.audit_record(text, text, bigint, uuid, text, text, integer, jsonb, uuid);
create or replace function memsub._audit_record(
    p_operation       text,
    p_session_id      text    default null,
    p_task_id         bigint  default null,
    p_memory_entry_id uuid    default null,
    p_namespace       text    default null,
    p_key             text    default null,
    p_version         integer default null,
    p_details         jsonb   default '{}',
    p_agent_id        uuid    default null,
    p_tenant_id       uuid    default null
) returns bigint
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    -- The id is drawn here rather than read back with RETURNING: RETURNING would have the row pass the read
    -- policies too, a second evaluation of the context on every audited write.
    v_id bigint := nextval(pg_get_serial_sequence('memsub.audit', 'id'));
    -- The acting agent and task, their seal checked once (memsub._current_actor).
    v_actor record;
begin
    select a.agent_id, a.task_id into v_actor from memsub._current_actor() a;
    insert into memsub.audit (tenant_id, id, org_id, user_id, operation, session_id, agent_id, task_id,
                              memory_entry_id, namespace, key, version, details)
    overriding system value
    values (coalesce(p_tenant_id, memsub._require_tenant_id()), v_id, memsub.current_org_id(), memsub.current_user_id(), p_operation,
            p_session_id, coalesce(p_agent_id, v_actor.agent_id),
            coalesce(p_task_id, v_actor.task_id), p_memory_entry_id, p_namespace, p_key, p_version,
            coalesce(p_details, '{}'));
    return v_id;
end
$$;
comment on function memsub._audit_record(text, text, bigint, uuid, text, text, integer, jsonb, uuid, uuid) is
    'Internal: appends one audit row for the current context (tenant, org, user, acting agent and task). '
    'p_tenant_id: the context tenant when the caller has already checked it (memsub._require_tenant_id), which '
    'spares a second check of the context''s seal; the tenant policy of memsub.audit checks the row''s tenant '
    'either way. Called by the SECURITY DEFINER write functions; not granted to clients.';

-- Audit rows are readable by the user who caused them (and by admins), so key names of one user's memory do
-- not leak to another user of the tenant through the audit trail.
call memsub._install_row_security('memsub.audit', array['org']);

call memsub._ensure_policy('memsub.audit', 'audit_actor_visibility', $create$create policy audit_actor_visibility on memsub.audit as restrictive for all to public
    using (user_id is not distinct from (select memsub.current_user_id())
           or (select memsub._caller_is_admin()))$create$);
comment on policy audit_actor_visibility on memsub.audit is
    'An audit row is visible to the user whose context wrote it (rows without a user: to contexts without a user); admins pass.';

-- A row naming a user: or session: namespace (a memory operation) is read where that memory is: the policy
-- audit_namespace_visibility, created in sql/610_memory_entries.sql, after the function that tells whose a
-- session: namespace is (memsub._context_session_namespace).

grant select on memsub.audit to memsub_app, memsub_analyst;
grant execute on function memsub.set_actor(uuid, bigint), memsub.current_agent_id(), memsub.current_task_id(),
    memsub._caller_is_admin()
    to memsub_app, memsub_analyst;
