-- Area: sessions. Seed: seed 001 section 3.1 (checkpoints: task_id, session_id).
--
-- Checkpoints (seed 001): save a task's state, linked to the task and its session, and restore it.
--
-- A checkpoint keeps the task state the caller gives and a copy of the session's state at that moment.
-- Restoring returns the checkpoint (the task state to resume from) and puts the saved session state back
-- into the session when it is still active.

-- The next number of a task's checkpoints over every organization: row-level security shows the caller only its
-- own organization's checkpoints, and the sequence is the task's (one unique key over all of them). Owned by
-- memsub_retrieval_owner (BYPASSRLS), states the tenant itself; checkpoint_save holds the task's row lock.
create or replace function memsub._checkpoint_next_sequence(p_task_id bigint) returns integer
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_last integer;
begin
    select max(c.sequence) into v_last
      from memsub.checkpoints c
     where c.tenant_id = memsub._require_tenant_id() and c.task_id = p_task_id;
    return coalesce(v_last, 0) + 1;
end
$$;
alter function memsub._checkpoint_next_sequence(bigint) owner to memsub_retrieval_owner;
comment on function memsub._checkpoint_next_sequence(bigint) is
    'Internal to checkpoint_save: the next sequence number of a task''s checkpoints, counted over every '
    'organization of the context tenant (owned by memsub_retrieval_owner, BYPASSRLS). Executable only by '
    'memsub_owner.';
grant select on memsub.checkpoints to memsub_retrieval_owner;
grant execute on function memsub._checkpoint_next_sequence(bigint) to memsub_owner;

create or replace function memsub.checkpoint_save(p_task_id bigint, p_state jsonb, p_label text default null)
returns memsub.checkpoints
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_task       memsub.tasks;
    v_session    memsub.sessions;
    v_checkpoint memsub.checkpoints;
    v_label      text;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_limit(pg_column_size(p_state), 'max_json_bytes', 'state'),
            memsub._check_text_limits('label', p_label);
    -- The label names the checkpoint: stored trimmed, each run of whitespace one space; a blank one is no label.
    v_label := memsub._optional_text(p_label);
    -- JSON null is no state either: the checkpoint would restore to nothing (the client sends None as JSON null).
    if p_state is null or jsonb_typeof(p_state) = 'null' then
        raise exception 'checkpoint state is required: JSON null is no state' using errcode = '23502', column = 'state';
    end if;
    -- Locking the task serializes the checkpoints of one task, so sequences are dense.
    v_task := memsub._task_lookup(p_task_id, true, '23503');
    -- The checkpoint is the task's, so it is linked to the task's session whoever saves it; the copy of that
    -- session's state is taken only where the caller may read it (row-level security), else it is NULL.
    if v_task.session_id is not null then
        select s.* into v_session from memsub.sessions s
         where s.tenant_id = v_tenant and s.id = v_task.session_id;
    end if;
    insert into memsub.checkpoints as c (tenant_id, org_id, user_id, task_id, session_id, sequence, label, state,
                                         session_state)
    values (v_tenant, memsub.current_org_id(), memsub.current_user_id(), p_task_id, v_task.session_id,
            memsub._checkpoint_next_sequence(p_task_id),
            v_label, p_state, v_session.state)
    returning c.* into v_checkpoint;
    perform memsub._audit_record('checkpoint_save', p_session_id => v_checkpoint.session_id, p_task_id => p_task_id,
        p_tenant_id => v_checkpoint.tenant_id,
        p_details => jsonb_build_object('checkpoint_id', v_checkpoint.id, 'sequence', v_checkpoint.sequence,
                                        'label', v_label));
    return v_checkpoint;
end
$$;
comment on function memsub.checkpoint_save(bigint, jsonb, text) is
    'Saves a checkpoint of a task, linked to the task''s session: the given state plus a copy of that session''s '
    'state (NULL when the caller cannot read the session), numbered 1, 2, ... per task. The state is any JSON but '
    'null (23502 naming state); the label is stored trimmed, each run of whitespace one space, a blank one as NULL. '
    'Audited as checkpoint_save.';

create or replace function memsub.checkpoint_restore(p_checkpoint_id uuid) returns memsub.checkpoints
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_checkpoint memsub.checkpoints;
    v_restored   boolean := false;
begin
    if p_checkpoint_id is null then
        raise exception 'checkpoint_id is required' using errcode = '23502', column = 'checkpoint_id';
    end if;
    select c.* into v_checkpoint from memsub.checkpoints c where c.tenant_id = v_tenant and c.id = p_checkpoint_id;
    if not found then
        raise exception 'checkpoint % does not exist or is not visible', p_checkpoint_id
            using errcode = 'P0002', column = 'checkpoint_id';
    end if;
    if v_checkpoint.session_id is not null and v_checkpoint.session_state is not null then
        update memsub.sessions s set state = v_checkpoint.session_state, updated_at = now()
         where s.tenant_id = v_tenant and s.id = v_checkpoint.session_id and s.status = 'active';
        v_restored := found;
    end if;
    perform memsub._audit_record('checkpoint_restore', p_session_id => v_checkpoint.session_id,
        p_tenant_id => v_checkpoint.tenant_id,
        p_task_id => v_checkpoint.task_id,
        p_details => jsonb_build_object('checkpoint_id', v_checkpoint.id, 'sequence', v_checkpoint.sequence,
                                        'session_state_restored', v_restored));
    return v_checkpoint;
end
$$;
comment on function memsub.checkpoint_restore(uuid) is
    'Restores a checkpoint: returns it (its state is the task state to resume from) and puts its saved session '
    'state back into the session if that session is still active. Audited as checkpoint_restore.';

call memsub._install_row_security('memsub.checkpoints', array['org']);

-- A checkpoint's copy of its session's state is that session's: a checkpoint holding one is visible where the
-- session is (its user, the context naming it, admins: sessions' own policies decide, through the subquery).
-- memsub.session_delete drops the copy and writes the session's user into deleted_session_user_id: the
-- checkpoint (its task state, as private as its task) stays that user's and admins'.
call memsub._ensure_policy('memsub.checkpoints', 'checkpoint_session_access', $create$create policy checkpoint_session_access on memsub.checkpoints as restrictive for all to public
    using ((session_state is null
            or exists (select from memsub.sessions s
                        where s.tenant_id = checkpoints.tenant_id and s.id = checkpoints.session_id))
           and (deleted_session_user_id is null
                or deleted_session_user_id = (select memsub.current_user_id())
                or (select memsub._caller_is_admin())))$create$);
comment on policy checkpoint_session_access on memsub.checkpoints is
    'A checkpoint holding a copy of a session''s state is visible where that session is: to its user, to the '
    'context whose session_id names it, and to admins; a checkpoint of a deleted session to that session''s user '
    '(deleted_session_user_id) and admins.';

grant select on memsub.checkpoints to memsub_app, memsub_analyst;
grant execute on function memsub.checkpoint_save(bigint, jsonb, text), memsub.checkpoint_restore(uuid)
    to memsub_app;
