-- Area: reflection. Seed: seed 000 "REFLECTION LAYER".
--
-- Reflection layer: lessons learned (reflection_store) and per-task learning (task_reflections).

create or replace function memsub.record_reflection(
    p_reflection_type text,
    p_content         text,
    p_context         text             default null,
    p_entities        text[]           default '{}',
    p_tags            text[]           default '{}',
    p_confidence      double precision default 0.5,
    p_priority        text             default 'medium',
    p_source_agent    text             default null,
    p_source_packet   uuid             default null,
    p_task_id         text             default null,
    p_vector          vector           default null,
    p_expires_at      timestamptz      default null
) returns memsub.reflection_store
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_packet     memsub.packet_store;
    v_reflection memsub.reflection_store;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('reflection_type', p_reflection_type, 'content', p_content,
                                      'context', p_context, 'priority', p_priority, 'source_agent', p_source_agent,
                                      'task_id', p_task_id),
            memsub._check_text_list(p_entities, 'entities'),
            memsub._check_limit(cardinality(p_tags), 'max_tags', 'tags'),
            memsub._check_limit((select max(length(t)) from unnest(p_tags) as t), 'max_tag_chars', 'tags');
    perform memsub._check_no_null_elements(p_tags, 'tags');
    -- A blank name names nothing, in either list (a packet's blank tag and a blank tag filter are refused too).
    perform memsub._check_no_blank_elements(p_entities, 'entities'), memsub._check_no_blank_elements(p_tags, 'tags');
    perform memsub._check_one_of(p_reflection_type, memsub.reflection_types(), 'reflection_type');
    -- Required, not blank, and stored as given: content says something (its line breaks too); only names are
    -- stored in their trimmed form.
    perform memsub._require_text(p_content, 'content');
    perform memsub._check_one_of(coalesce(p_priority, 'medium'), memsub.reflection_priorities(), 'priority');
    perform memsub._check_vector(p_vector, 'vector');
    perform memsub._check_stored_time(p_expires_at, 'expires_at');
    if p_expires_at is not null and p_expires_at <= now() then
        raise exception 'field "expires_at" must be in the future, not %', p_expires_at
            using errcode = '22023', column = 'expires_at';
    end if;
    -- A reflection is read by its whole organization (its policies stop there): it would show a cursor or
    -- l-private packet's id and routing agent to every other user of it.
    v_packet := memsub._require_shared_packet(memsub._visible_packet(p_source_packet, 'source_packet'), 'source_packet');
    insert into memsub.reflection_store (
        task_id, reflection_type, content, context, entities, tags, confidence, priority, source_agent,
        source_packet, vector, expires_at, tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
    values (
        memsub._optional_text(p_task_id), p_reflection_type, p_content, p_context,
        coalesce(p_entities, '{}'),
        array(select distinct t from unnest(coalesce(p_tags, '{}')) as t order by t),
        coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5), coalesce(p_priority, 'medium'),
        memsub._optional_text(coalesce(p_source_agent, v_packet.routing ->> 'agent')), p_source_packet, p_vector,
        -- a reflection drawn from an expiring packet expires with it at the latest
        least(p_expires_at, v_packet.ttl at time zone 'UTC'),
        v_tenant, memsub.current_org_id(), memsub.current_user_id(), v_packet.correlation_id,
        memsub.current_session_id(), v_packet.trace_id)
    returning * into v_reflection;
    return v_reflection;
end
$$;
comment on function memsub.record_reflection(text, text, text, text[], text[], double precision, text, text, uuid, text, vector, timestamptz) is
    'Records a lesson learned: type (lesson, pattern, failure, success, insight, improvement, false_constraint), '
    'priority (critical, high, medium, low), optional embedding, source packet (a shared one: 22023 otherwise) and '
    'expiry (at the latest the source packet''s). The content is stored as given (NULL: 23502; blank: 22023); a '
    'blank entity or tag is refused (22023 naming entities[i] or tags[i]); the tags are stored sorted, each once.';

create or replace function memsub.record_task_reflection(
    p_task_id           text,
    p_outcome           text             default 'unknown',
    p_task_description  text             default null,
    p_what_worked       text[]           default '{}',
    p_what_failed       text[]           default '{}',
    p_false_constraints text[]           default '{}',
    p_helpful_patterns  text[]           default '{}',
    p_lessons           text[]           default '{}',
    p_recommendations   text[]           default '{}',
    p_related_decisions uuid[]           default '{}',
    p_execution_time_ms double precision default null,
    p_metrics_improved  jsonb            default '{}',
    p_metrics_degraded  jsonb            default '{}'
) returns memsub.task_reflections
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_reflection memsub.task_reflections;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('task_id', p_task_id, 'outcome', p_outcome,
                                      'task_description', p_task_description),
            memsub._check_text_list(p_what_worked, 'what_worked'),
            memsub._check_text_list(p_what_failed, 'what_failed'),
            memsub._check_text_list(p_false_constraints, 'false_constraints'),
            memsub._check_text_list(p_helpful_patterns, 'helpful_patterns'),
            memsub._check_text_list(p_lessons, 'lessons'),
            memsub._check_text_list(p_recommendations, 'recommendations'),
            memsub._check_limit(cardinality(p_related_decisions), 'max_array_items', 'related_decisions'),
            memsub._check_limit(pg_column_size(p_metrics_improved), 'max_json_bytes', 'metrics_improved'),
            memsub._check_limit(pg_column_size(p_metrics_degraded), 'max_json_bytes', 'metrics_degraded');
    perform memsub._check_no_null_elements(p_related_decisions, 'related_decisions');
    perform memsub._check_one_of(p_outcome, memsub.task_outcomes(), 'outcome');
    perform memsub._check_finite(p_execution_time_ms, 'execution_time_ms');
    if p_execution_time_ms < 0 then
        raise exception 'field "execution_time_ms" must not be negative' using errcode = '22023', column = 'execution_time_ms';
    end if;
    -- One reflection per task_id and tenant: when another organization holds it, the update below is refused by
    -- row-level security, and that refusal is said in its own words, naming the field.
    begin
        insert into memsub.task_reflections as t (
            task_id, task_description, outcome, what_worked, what_failed, false_constraints, helpful_patterns,
            lessons, recommendations, related_decisions, execution_time_ms, metrics_improved, metrics_degraded,
            tenant_id, org_id, user_id, session_id)
        values (
            memsub._require_text(p_task_id, 'task_id'), p_task_description, p_outcome,
            coalesce(p_what_worked, '{}'), coalesce(p_what_failed, '{}'), coalesce(p_false_constraints, '{}'),
            coalesce(p_helpful_patterns, '{}'), coalesce(p_lessons, '{}'), coalesce(p_recommendations, '{}'),
            coalesce(p_related_decisions, '{}'), p_execution_time_ms,
            coalesce(memsub._check_json_type(p_metrics_improved, 'object', 'metrics_improved'), '{}'),
            coalesce(memsub._check_json_type(p_metrics_degraded, 'object', 'metrics_degraded'), '{}'),
            v_tenant, memsub.current_org_id(), memsub.current_user_id(), memsub.current_session_id())
        on conflict (tenant_id, task_id) do update
           set task_description = coalesce(excluded.task_description, t.task_description),
               outcome = excluded.outcome, what_worked = excluded.what_worked, what_failed = excluded.what_failed,
               false_constraints = excluded.false_constraints, helpful_patterns = excluded.helpful_patterns,
               lessons = excluded.lessons, recommendations = excluded.recommendations,
               related_decisions = excluded.related_decisions, execution_time_ms = excluded.execution_time_ms,
               metrics_improved = excluded.metrics_improved, metrics_degraded = excluded.metrics_degraded,
               updated_at = now(), user_id = excluded.user_id, session_id = excluded.session_id
        returning t.* into v_reflection;
    exception when insufficient_privilege then
        raise exception 'task_id "%" has a reflection of another organization of the tenant', btrim(p_task_id)
            using errcode = '42501', column = 'task_id';
    end;
    return v_reflection;
end
$$;
comment on function memsub.record_task_reflection(text, text, text, text[], text[], text[], text[], text[], text[], uuid[], double precision, jsonb, jsonb) is
    'Records what was learned from a task (one row per task_id and tenant; a later reflection on the same task '
    'replaces the earlier one). A task of another organization of the tenant raises 42501.';

call memsub._install_row_security('memsub.reflection_store', array['org']);
-- Expiry is honoured on every read (sql/150_packet_security.sql): an expired reflection is never read;
-- purge_expired() deletes it.
call memsub._ensure_policy('memsub.reflection_store', 'not_expired', $create$create policy not_expired on memsub.reflection_store as restrictive for select to public
    using (expires_at is null or expires_at > (select pg_catalog.now())
           or (select current_user = 'memsub_expiry_owner'::name))$create$);
comment on policy not_expired on memsub.reflection_store is
    'A reflection whose expires_at (at the latest its source packet''s ttl) has passed is never read (only '
    'memsub_expiry_owner, for purging, sees it).';
call memsub._install_row_security('memsub.task_reflections', array['org']);

grant select on memsub.reflection_store, memsub.task_reflections to memsub_app, memsub_analyst;
grant execute on function
    memsub.record_reflection(text, text, text, text[], text[], double precision, text, text, uuid, text, vector, timestamptz),
    memsub.record_task_reflection(text, text, text, text[], text[], text[], text[], text[], text[], uuid[], double precision, jsonb, jsonb)
    to memsub_app;
