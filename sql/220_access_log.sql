-- Area: events. Seed: seed 000 "OPERATIONS LAYER" (memory_access_log).
--
-- Operations layer: the memory access log. Recording an access also counts it on the accessed row
-- (access_count + 1, last_accessed = now), the input of importance learning.
--
-- An access record is as private as what it records: its target id, and the query that found it, which is the
-- accessor's own words, and when the accessor read what. A context with a user therefore records 'l-private'
-- rows, read by that user alone (and admins), whatever the target (memsub.memory_access_log.scope, under the
-- standard 'user' policy). A context without a user has no one to keep them for: its record is 'shared' when its
-- target is shared (facts and reflections always are), and 'l-private' (read by admins only) when the target is a
-- cursor or l-private packet or embedding. record_access and the searches' memsub._record_accesses decide so.
--
-- Counters stay off the rows that carry HNSW-indexed vectors where the seed allows it: an access to a
-- memory_embeddings row is counted on its packet. semantic_memory and reflection_store carry their own counters
-- (seed columns); such an update changes no indexed column, so PostgreSQL can make it a HOT update when the
-- page has room. That was not measured separately.

create or replace function memsub.record_access(
    p_target_type     text,
    p_target_id       uuid,
    p_agent_id        text             default null,
    p_access_context  text             default null,
    p_query_text      text             default null,
    p_relevance_score double precision default null,
    p_was_useful      boolean          default null,
    p_feedback_reason text             default null
) returns memsub.memory_access_log
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_packet uuid;
    v_scope  text := 'shared';  -- the target's scope
    v_user   uuid := memsub.current_user_id();
    v_entry  memsub.memory_access_log;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('target_type', p_target_type, 'agent_id', p_agent_id,
                                      'access_context', p_access_context, 'feedback_reason', p_feedback_reason),
            memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    perform memsub._check_one_of(p_target_type, memsub.access_target_types(), 'target_type');
    if p_target_id is null then
        raise exception 'field "target_id" is required' using errcode = '23502', column = 'target_id';
    end if;
    perform memsub._check_finite(p_relevance_score, 'relevance_score');
    if p_target_type = 'packet' then
        update memsub.packet_store s set access_count = s.access_count + 1, last_accessed = now()
         where s.tenant_id = v_tenant and s.packet_id = p_target_id
        returning s.scope into v_scope;
    elsif p_target_type = 'fact' then
        update memsub.knowledge_facts f set access_count = f.access_count + 1, last_accessed = now()
         where f.tenant_id = v_tenant and f.fact_id = p_target_id;
    elsif p_target_type = 'reflection' then
        update memsub.reflection_store r set access_count = r.access_count + 1, last_accessed = now()
         where r.tenant_id = v_tenant and r.reflection_id = p_target_id;
    else
        update memsub.semantic_memory m set access_count = m.access_count + 1, last_accessed = now()
         where m.tenant_id = v_tenant and m.embedding_id = p_target_id
        returning m.scope into v_scope;
        if not found then
            select e.packet_id, e.scope into v_packet, v_scope from memsub.memory_embeddings e
             where e.tenant_id = v_tenant and e.embedding_id = p_target_id;
            update memsub.packet_store s set access_count = s.access_count + 1, last_accessed = now()
             where s.tenant_id = v_tenant and s.packet_id = v_packet;
        end if;
    end if;
    if not found then
        raise exception 'field "target_id": % % does not exist or is not visible', p_target_type, p_target_id
            using errcode = '23503', column = 'target_id';
    end if;
    insert into memsub.memory_access_log (
        target_type, target_id, agent_id, access_context, query_text, relevance_score, was_useful,
        feedback_reason, scope, tenant_id, org_id, user_id, session_id)
    values (
        p_target_type, p_target_id, memsub._optional_text(p_agent_id), p_access_context,
        p_query_text, p_relevance_score, p_was_useful, p_feedback_reason,
        case when v_user is null and v_scope = 'shared' then 'shared' else 'l-private' end,
        v_tenant, memsub.current_org_id(), v_user, memsub.current_session_id())
    returning * into v_entry;
    return v_entry;
end
$$;
comment on function memsub.record_access(text, uuid, text, text, text, double precision, boolean, text) is
    'Logs an access to a packet, embedding, fact or reflection (with optional relevance and usefulness feedback) '
    'and counts it on the target (access_count + 1, last_accessed); an access to a memory_embeddings row counts on '
    'its packet. A target that does not exist or is not visible raises 23503. The record of a context with a user '
    'is read by that user alone (scope l-private), whatever the target; that of a context without one is l-private '
    'when the target is a cursor or l-private packet or embedding, shared otherwise.';

-- The accesses of what purge_expired deletes go with it, whoever recorded them: the caller of the purge sees only
-- its own organization's and user's records, so this runs as memsub_retrieval_owner (BYPASSRLS), for the targets
-- the purge names (it is granted to memsub_expiry_owner alone). A packet's embeddings' accesses go with the packet.
create or replace function memsub._forget_accesses(p_target_type text, p_tenant_ids uuid[], p_target_ids uuid[])
returns bigint
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_forgotten bigint;
begin
    with targets as (
        select t.tenant_id, p_target_type as target_type, t.target_id
          from unnest(p_tenant_ids, p_target_ids) as t(tenant_id, target_id)
        union all
        select e.tenant_id, 'embedding', e.embedding_id
          from unnest(p_tenant_ids, p_target_ids) as t(tenant_id, target_id)
          join memsub.memory_embeddings e on e.tenant_id = t.tenant_id and e.packet_id = t.target_id
         where p_target_type = 'packet'
    )
    delete from memsub.memory_access_log l
     using targets t
     where l.tenant_id = t.tenant_id and l.target_type = t.target_type and l.target_id = t.target_id;
    get diagnostics v_forgotten = row_count;
    return v_forgotten;
end
$$;
alter function memsub._forget_accesses(text, uuid[], uuid[]) owner to memsub_retrieval_owner;
comment on function memsub._forget_accesses(text, uuid[], uuid[]) is
    'Internal to purge_expired and _drop_expired_fact: deletes every access record of the given targets (tenant and id, pairwise; a '
    'packet''s with those of its embeddings), whoever recorded them (owned by memsub_retrieval_owner, BYPASSRLS); '
    'returns how many. Executable only by memsub_expiry_owner.';
grant delete on memsub.memory_access_log to memsub_retrieval_owner;
grant execute on function memsub._forget_accesses(text, uuid[], uuid[]) to memsub_expiry_owner;

call memsub._install_row_security('memsub.memory_access_log', array['org', 'user']);

grant select on memsub.memory_access_log to memsub_app, memsub_analyst;
grant execute on function
    memsub.record_access(text, uuid, text, text, text, double precision, boolean, text)
    to memsub_app;
