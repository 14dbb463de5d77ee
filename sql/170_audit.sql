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

create or replace function memsub.current_agent_id() returns uuid
language sql stable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select nullif(current_setting('memsub.agent_id', true), '')::uuid $$;
comment on function memsub.current_agent_id() is 'Acting agent of the current transaction (memsub.set_actor), or NULL.';

create or replace function memsub.current_task_id() returns bigint
language sql stable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select nullif(current_setting('memsub.task_id', true), '')::bigint $$;
comment on function memsub.current_task_id() is 'Acting task of the current transaction (memsub.set_actor), or NULL.';

create or replace function memsub.set_actor(p_agent_id uuid, p_task_id bigint default null) returns void
language plpgsql volatile security invoker
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
    perform pg_catalog.set_config('memsub.agent_id', coalesce(p_agent_id::text, ''), true);
    perform pg_catalog.set_config('memsub.task_id', coalesce(v_task::text, ''), true);
end
$$;
comment on function memsub.set_actor(uuid, bigint) is
    'Names the agent (and task; default: the agent''s task) acting in the current transaction; audit rows record '
    'them. Raises 23503 naming agent_id or task_id when either is unknown or not visible.';

drop function if exists memsub.audit_record(text, text, bigint, uuid, text, text, integer, jsonb, uuid);
create or replace function memsub.audit_record(
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
begin
    insert into memsub.audit (tenant_id, id, org_id, user_id, operation, session_id, agent_id, task_id,
                              memory_entry_id, namespace, key, version, details)
    overriding system value
    values (coalesce(p_tenant_id, memsub._require_tenant_id()), v_id, memsub.current_org_id(), memsub.current_user_id(), p_operation,
            p_session_id, coalesce(p_agent_id, memsub.current_agent_id()),
            coalesce(p_task_id, memsub.current_task_id()), p_memory_entry_id, p_namespace, p_key, p_version,
            coalesce(p_details, '{}'));
    return v_id;
end
$$;
comment on function memsub.audit_record(text, text, bigint, uuid, text, text, integer, jsonb, uuid, uuid) is
    'Internal: appends one audit row for the current context (tenant, org, user, acting agent and task). '
    'p_tenant_id: the context tenant when the caller has already checked it (memsub._require_tenant_id), which '
    'spares a second check of the context''s seal; the tenant policy of memsub.audit checks the row''s tenant '
    'either way. Called by the SECURITY DEFINER write functions; not granted to clients.';

-- Audit rows are readable by the user who caused them (and by admins), so key names of one user's memory do
-- not leak to another user of the tenant through the audit trail.
call memsub.install_row_security('memsub.audit', array['org']);

drop policy if exists audit_actor_visibility on memsub.audit;
create policy audit_actor_visibility on memsub.audit as restrictive for all to public
    using (user_id is not distinct from (select memsub.current_user_id())
           or (select memsub._caller_is_admin()));
comment on policy audit_actor_visibility on memsub.audit is
    'An audit row is visible to the user whose context wrote it (rows without a user: to contexts without a user); admins pass.';

grant select on memsub.audit to memsub_app, memsub_analyst;
grant execute on function memsub.set_actor(uuid, bigint), memsub.current_agent_id(), memsub.current_task_id(),
    memsub._caller_is_admin()
    to memsub_app, memsub_analyst;
