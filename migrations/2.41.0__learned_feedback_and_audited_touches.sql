-- memsub 2.41.0: importance learning keeps the feedback it learned, and memory accesses are audited.
--
-- Importance learning keeps the feedback it learned. memsub.record_feedback marked changed feedback
-- as not learned, so feedback turned from useful to not useful and back before the next learning run was learned
-- as useful a second time. Each access now keeps the value learned (learned_was_useful), and feedback is learned
-- again only when the value it ends with differs from that one.

alter table memsub.memory_access_log add column learned_was_useful boolean;
comment on column memsub.memory_access_log.learned_was_useful is
    'The feedback (was_useful) memsub.learn_importance last folded into the importance (NULL: none yet). '
    'Feedback is learned again only when was_useful ends different from it.';
comment on column memsub.memory_access_log.feedback_learned_at is
    'When memsub.learn_importance last folded this access''s feedback into the importance (learned_was_useful; '
    'NULL: not yet or no feedback).';

-- Feedback learned before this release, and not changed since, is what was_useful holds: record_feedback marked
-- changed feedback as not learned (feedback_learned_at NULL). Row-level security is forced on the table (even its
-- owner sees no row without a tenant context), so it is disabled for this block and enabled again.
do $$
declare
    v_lifted regclass[];  -- the tables whose row-level security this block disables, to enable it again
    v_table  regclass;
begin
    select coalesce(array_agg(c.oid::regclass), '{}') into v_lifted
      from pg_catalog.pg_class c
     where c.oid = any (array['memsub.memory_access_log']::regclass[])
       and c.relrowsecurity;
    foreach v_table in array v_lifted loop
        execute format('alter table %s disable row level security', v_table);
    end loop;

    update memsub.memory_access_log
       set learned_was_useful = was_useful
     where feedback_learned_at is not null and was_useful is not null;

    foreach v_table in array v_lifted loop
        execute format('alter table %s enable row level security', v_table);
    end loop;
end
$$;

drop index memsub.idx_memory_access_log_unlearned;
create index idx_memory_access_log_unlearned on memsub.memory_access_log (tenant_id, target_type, target_id)
    where counted_at is null or (was_useful is not null and was_useful is distinct from learned_was_useful);
comment on index memsub.idx_memory_access_log_unlearned is 'Accesses and feedback importance learning has not read yet.';

-- memsub.memory_touch is audited (memory_touch) like every other memory operation; the list of operations names
-- every one written.
comment on column memsub.audit.operation is
    'What happened: memory_write, memory_delete, memory_consolidate, memory_promote, memory_touch, session_create, '
    'session_event, session_state, session_end_turn, session_terminate, session_delete, task_create, task_link, '
    'task_status, agent_spawn, checkpoint_save, checkpoint_restore, document_index_put, document_ingest.';
