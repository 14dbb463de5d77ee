-- Area: graph. Seed: seed 003 "Knowledge Graph Schema" and "Temporal & Versioning".
--
-- The temporal knowledge graph (seed 003): typed nodes over the tables that hold them, edges with validity
-- windows and evidence in entity_relationships, and "as of time T" reads.
--
-- A window is [valid from, valid until); an open upper bound is the current edge. The exclusion constraint
-- entity_relationships_no_overlapping_windows keeps the windows of one edge apart; superseding closes the
-- current window where the new fact starts. Evidence is a JSON array of DocRefs {doc_id, chunk_id, score}
-- naming visible document versions and their chunks.

-- Node references and evidence ---------------------------------------------------------------------------------

create or replace function memsub._check_doc_refs(p_refs jsonb, p_field text) returns jsonb
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_ref      jsonb;
    v_position integer;
    v_field    text;
    v_doc      uuid;
    v_chunk    uuid;
    v_result   jsonb := '[]';
    v_tenant   uuid := memsub.current_tenant_id();  -- once, not in each reference's lookups
    uuid_text  constant text := '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
begin
    if p_refs is null then
        return '[]';
    end if;
    if jsonb_typeof(p_refs) <> 'array' then
        raise exception 'field "%" must be a JSON array of DocRefs {doc_id, chunk_id, score}', p_field
            using errcode = '22023', column = p_field;
    end if;
    for v_ref, v_position in select r, n - 1 from jsonb_array_elements(p_refs) with ordinality as a(r, n) loop
        v_field := format('%s[%s]', p_field, v_position);
        perform memsub._check_object_keys(v_ref, v_field, array['doc_id', 'chunk_id', 'score'],
                                          '{doc_id, chunk_id, score}', 'a DocRef');
        if jsonb_typeof(v_ref -> 'doc_id') is distinct from 'string' or (v_ref ->> 'doc_id') !~ uuid_text then
            raise exception 'field "%.doc_id" must be a document id (UUID)', v_field
                using errcode = '22023', column = v_field || '.doc_id';
        end if;
        v_doc := (v_ref ->> 'doc_id')::uuid;
        if not exists (select from memsub.document_index d where d.tenant_id = v_tenant and d.id = v_doc) then
            raise exception 'field "%.doc_id": document % does not exist or is not visible', v_field, v_doc
                using errcode = '23503', column = v_field || '.doc_id';
        end if;
        v_chunk := null;
        if jsonb_typeof(v_ref -> 'chunk_id') = 'string' and (v_ref ->> 'chunk_id') ~ uuid_text then
            v_chunk := (v_ref ->> 'chunk_id')::uuid;
            if not exists (select from memsub.document_chunks c
                            where c.tenant_id = v_tenant and c.id = v_chunk and c.document_id = v_doc) then
                raise exception 'field "%.chunk_id": chunk % is not a visible chunk of document %', v_field, v_chunk, v_doc
                    using errcode = '23503', column = v_field || '.chunk_id';
            end if;
        elsif coalesce(jsonb_typeof(v_ref -> 'chunk_id'), 'null') <> 'null' then
            raise exception 'field "%.chunk_id" must be a chunk id (UUID) or null', v_field
                using errcode = '22023', column = v_field || '.chunk_id';
        end if;
        if coalesce(jsonb_typeof(v_ref -> 'score'), 'null') not in ('null', 'number') then
            raise exception 'field "%.score" must be a number', v_field
                using errcode = '22023', column = v_field || '.score';
        end if;
        v_result := v_result || jsonb_build_array(jsonb_build_object(
            'doc_id', v_doc, 'chunk_id', v_chunk, 'score', v_ref -> 'score'));
    end loop;
    return v_result;
end
$$;
comment on function memsub._check_doc_refs(jsonb, text) is
    'Normalizes a JSON array of DocRefs {doc_id, chunk_id?, score?}: each document (and chunk of it) must exist and '
    'be visible (23503), shapes are checked (22023), each error names the element, e.g. evidence[0].doc_id.';

create or replace function memsub._merge_doc_refs(p_old jsonb, p_new jsonb) returns jsonb
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(jsonb_agg(distinct r), '[]')
      from jsonb_array_elements(coalesce(p_old, '[]') || coalesce(p_new, '[]')) as r
$$;
comment on function memsub._merge_doc_refs(jsonb, jsonb) is 'Union of two DocRef arrays, without duplicates.';

create or replace function memsub._check_graph_node(p_type text, p_id text, p_field text) returns text
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_id text := memsub._require_text(p_id, p_field);
begin
    perform memsub._check_one_of(p_type, memsub.graph_node_types(),
                                replace(p_field, '_entity', '') || '_type');
    if p_type = 'Episode' and not exists (
            select from memsub.sessions s where s.tenant_id = memsub.current_tenant_id() and s.id = v_id)
       or p_type = 'Document' and not exists (
            select from memsub.document_index d
             where d.tenant_id = memsub.current_tenant_id() and d.id::text = lower(v_id))
       or p_type = 'Memory' and not exists (
            select from memsub.memory_entries m
             where m.tenant_id = memsub.current_tenant_id() and m.id::text = lower(v_id)) then
        raise exception 'field "%": % node "%" does not exist or is not visible', p_field, p_type, v_id
            using errcode = '23503', column = p_field;
    end if;
    return case when p_type in ('Document', 'Memory') then lower(v_id) else v_id end;
end
$$;
comment on function memsub._check_graph_node(text, text, text) is
    'The id of a graph node of a type: Entity (any name, trimmed), Episode (a visible session id), Document (a '
    'visible document version id), Memory (a visible memory entry id); 23503 naming the field when missing.';

-- A version superseded by a transaction that has not committed yet looks current to everyone else. The edge writers
-- and the superseders therefore meet on the version's row: an edge writer share-locks it before it looks whether the
-- version was superseded, and a superseder holds it locked against that (document_ingest updates the old version's
-- row; a memory write locks the version it replaces, memsub._store_memory_version). Whichever comes second waits for
-- the other to end and then sees what it did: the edge writer its supersession (and refuses the edge), the
-- superseder the new edge (and closes it, memsub._close_node_edges). Share locks do not conflict with each other, so
-- edges to one version are drawn side by side. Owned by memsub_retrieval_owner (BYPASSRLS) because a reader may
-- draw an edge to a version it cannot change (an organization's edge to a tenant-wide document, an app: memory), and
-- row-level security would hide such a row from a locking read; the UPDATE privilege on one column is what a
-- locking read needs, and this function changes nothing. Executable only by memsub_owner, whose callers pass their
-- context's tenant.
create or replace function memsub._lock_graph_node(p_tenant uuid, p_node_type text, p_node uuid,
                                                   p_superseding boolean default false)
returns void
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    -- Under REPEATABLE READ and SERIALIZABLE a statement after the wait still reads the transaction's snapshot, so
    -- it would not see what the other did; and locking a row another transaction changed after the snapshot (an
    -- access, memsub.memory_touch) fails with 40001 although no version was written. Only READ COMMITTED locks.
    if current_setting('transaction_isolation') <> 'read committed' then
        return;
    end if;
    if p_node_type = 'Document' then
        if p_superseding then
            perform from memsub.document_index d where d.tenant_id = p_tenant and d.id = p_node for no key update;
        else
            perform from memsub.document_index d where d.tenant_id = p_tenant and d.id = p_node for share;
        end if;
    elsif p_node_type = 'Memory' then
        if p_superseding then
            perform from memsub.memory_entries m where m.tenant_id = p_tenant and m.id = p_node for no key update;
        else
            perform from memsub.memory_entries m where m.tenant_id = p_tenant and m.id = p_node for share;
        end if;
    end if;
end
$$;
alter function memsub._lock_graph_node(uuid, text, uuid, boolean) owner to memsub_retrieval_owner;
comment on function memsub._lock_graph_node(uuid, text, uuid, boolean) is
    'Internal: locks the row of a Document or Memory node (a document version, a memory entry version) of the '
    'tenant until the transaction ends: FOR SHARE for a writer of an edge naming it, FOR NO KEY UPDATE '
    '(p_superseding) for a writer superseding it, so that each waits for the other and then sees what it did. '
    'Other node types, and transactions not under READ COMMITTED: nothing. Owned by memsub_retrieval_owner (BYPASSRLS): the row is locked whoever may change '
    'it. Executable only by memsub_owner, whose callers pass their context''s tenant.';
grant select, update (superseded_at) on memsub.document_index to memsub_retrieval_owner;
grant update (is_deleted) on memsub.memory_entries to memsub_retrieval_owner;
grant execute on function memsub._lock_graph_node(uuid, text, uuid, boolean) to memsub_owner;

-- An edge has two ends, and a transaction may supersede both (two memory writes, each locking the version it
-- replaces). An edge writer that held one end while it waited for the other could wait for a superseder that in turn
-- waited for the end it held: PostgreSQL broke that cycle with 40P01 (deadlock detected), naming nothing. The ends
-- are therefore locked together without waiting (NOWAIT, in a subtransaction): when one is busy, the subtransaction
-- is rolled back, which releases the ends it locked, and the writer waits for that end alone, releases it, and
-- tries again. A writer never waits holding an end, so it is never part of such a cycle; the superseder finishes
-- and the writer then sees what it did.
create or replace function memsub._lock_graph_nodes(p_tenant uuid, p_node_types text[], p_nodes uuid[])
returns void
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_busy    integer;  -- the end the last try found locked
    v_waited  integer;  -- the end this try waits for, alone
    v_waiting boolean := false;
    v_i       integer;
begin
    if current_setting('transaction_isolation') <> 'read committed' then
        return;  -- as memsub._lock_graph_node
    end if;
    loop
        v_waited := v_busy;
        begin
            -- Holding none of the ends yet: the one the last try found locked is waited for here, alone. A
            -- lock_timeout that ends this wait is the caller's error (55P03), not a reason to try again.
            if v_waited is not null then
                v_waiting := true;
                perform memsub._lock_graph_node(p_tenant, p_node_types[v_waited], p_nodes[v_waited]);
                v_waiting := false;
            end if;
            for v_i in 1 .. coalesce(cardinality(p_nodes), 0) loop
                if v_i is distinct from v_waited then
                    v_busy := v_i;
                    if p_node_types[v_i] = 'Document' then
                        perform from memsub.document_index d
                         where d.tenant_id = p_tenant and d.id = p_nodes[v_i] for share nowait;
                    elsif p_node_types[v_i] = 'Memory' then
                        perform from memsub.memory_entries m
                         where m.tenant_id = p_tenant and m.id = p_nodes[v_i] for share nowait;
                    end if;
                end if;
            end loop;
            return;
        exception when lock_not_available then
            -- Rolling back the subtransaction released every end it locked; v_busy names the one that was busy.
            if v_waiting then
                raise;
            end if;
        end;
    end loop;
end
$$;
alter function memsub._lock_graph_nodes(uuid, text[], uuid[]) owner to memsub_retrieval_owner;
comment on function memsub._lock_graph_nodes(uuid, text[], uuid[]) is
    'Internal: share-locks the rows of the Document and Memory nodes among the ends of an edge (types and ids, '
    'pairwise) until the transaction ends, as memsub._lock_graph_node does for one, without ever waiting while '
    'holding one of them: all are locked at once (NOWAIT) or none, and a busy one is waited for alone before the '
    'next try. So an edge writer never deadlocks with a transaction superseding both ends one after the other. '
    'A lock_timeout ending that wait raises 55P03 (lock_not_available) as before. Other node types, and '
    'transactions not under READ COMMITTED: nothing. Owned by memsub_retrieval_owner (BYPASSRLS); executable only '
    'by memsub_owner, whose callers pass their context''s tenant.';
grant execute on function memsub._lock_graph_nodes(uuid, text[], uuid[]) to memsub_owner;

create or replace function memsub._refuse_superseded_node(p_type text, p_id text, p_field text,
                                                          p_until timestamptz)
returns void
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_superseded timestamptz;
    v_tombstone  boolean := false;
begin
    -- p_id is the node's id as memsub._check_graph_node returned it: a visible version's id. Its row is locked
    -- first (a supersession not yet committed is waited for), and read by the next statement, which sees it.
    if p_type in ('Document', 'Memory') then
        perform memsub._lock_graph_node((select memsub.current_tenant_id()), p_type, p_id::uuid);
    end if;
    if p_type = 'Document' then
        select d.superseded_at into v_superseded from memsub.document_index d
         where d.tenant_id = (select memsub.current_tenant_id()) and d.id = p_id::uuid;
    elsif p_type = 'Memory' then
        -- A tombstone (memory_delete: value NULL, is_deleted) is a version of the key but no memory.
        select (select min(n.created_at) from memsub.memory_entries n
                 where n.tenant_id = m.tenant_id and n.namespace = m.namespace and n.key = m.key
                   and n.version > m.version),
               m.is_deleted and m.value is null
          into v_superseded, v_tombstone
          from memsub.memory_entries m
         where m.tenant_id = (select memsub.current_tenant_id()) and m.id = p_id::uuid;
    end if;
    if v_tombstone then
        raise exception 'field "%": % node "%" is a deletion (memory_delete''s tombstone), not a memory; '
                        'an edge to it is refused', p_field, p_type, p_id
            using errcode = '55000', column = p_field,
                  hint = 'Draw the edge to a live version of the key, or write the key again first.';
    end if;
    if v_superseded is not null and (p_until is null or p_until > v_superseded) then
        raise exception 'field "%": % node "%" was superseded at %; a window holding after then is refused',
            p_field, p_type, p_id, v_superseded
            using errcode = '55000', column = p_field,
                  hint = 'Draw the edge to the latest version, or end its window by the time this one was superseded.';
    end if;
end
$$;
comment on function memsub._refuse_superseded_node(text, text, text, timestamptz) is
    'Internal: 55000 naming the field when a Memory node is a tombstone (memory_delete''s version: no memory, '
    'whatever the window), or when a Document or Memory node is a superseded version (a document version '
    'replaced by a newer one, a memory entry version followed by another or by its deletion) and the edge window, '
    'ending at p_until (NULL: open), would still hold after it was superseded: memsub._close_node_edges closed its '
    'edges then, and a new one would read as current. The node''s row is share-locked first '
    '(memsub._lock_graph_node): a supersession not yet committed is waited for, and then refuses the edge. Other '
    'node types pass.';

-- Edges ------------------------------------------------------------------------------------------------------------

create or replace function memsub.temporal_edge_add(
    p_source_entity     text,
    p_relationship_type text,
    p_target_entity     text,
    p_valid_from        timestamptz      default null,
    p_valid_until       timestamptz      default null,
    p_confidence        double precision default 0.5,
    p_evidence          jsonb            default '[]',
    p_source_type       text             default 'Entity',
    p_target_type       text             default 'Entity',
    p_source_packet     uuid             default null
) returns memsub.entity_relationships
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_source text := memsub._check_graph_node(p_source_type, p_source_entity, 'source_entity');
    v_type   text := memsub.normalize_text(memsub._require_text(p_relationship_type, 'relationship_type'));
    v_target text := memsub._check_graph_node(p_target_type, p_target_entity, 'target_entity');
    v_source_key text := memsub.normalize_text(v_source);
    v_target_key text := memsub.normalize_text(v_target);
    v_from   timestamptz := coalesce(p_valid_from, now());
    v_period tstzrange;
    v_packet memsub.packet_store;
    v_edge   memsub.entity_relationships;
    v_confidence double precision;
    v_evidence   jsonb;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('source_entity', p_source_entity, 'relationship_type', p_relationship_type,
                                      'target_entity', p_target_entity, 'source_type', p_source_type,
                                      'target_type', p_target_type),
            memsub._check_limit(pg_column_size(p_evidence), 'max_json_bytes', 'evidence');
    perform memsub._check_key_bytes('source_entity', v_source_key, 'relationship_type', v_type,
                                    'target_entity', v_target_key);
    perform memsub._check_stored_time(p_valid_from, 'valid_from'), memsub._check_stored_time(p_valid_until, 'valid_until');
    if p_valid_until is not null and p_valid_until <= v_from then
        raise exception 'field "valid_until" (%) must be after valid_from (%)', p_valid_until, v_from
            using errcode = '22023', column = 'valid_until';
    end if;
    -- Both ends locked at once, never one held while the other is waited for (memsub._lock_graph_nodes).
    perform memsub._lock_graph_nodes(v_tenant, array[p_source_type, p_target_type],
                                     array[case when p_source_type in ('Document', 'Memory') then v_source::uuid end,
                                           case when p_target_type in ('Document', 'Memory') then v_target::uuid end]);
    perform memsub._refuse_superseded_node(p_source_type, v_source, 'source_entity', p_valid_until),
            memsub._refuse_superseded_node(p_target_type, v_target, 'target_entity', p_valid_until);
    v_packet := memsub._require_shared_packet(memsub._visible_packet(p_source_packet, 'source_packet'), 'source_packet');
    v_confidence := coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5);
    v_evidence := memsub._check_doc_refs(p_evidence, 'evidence');
    v_period := tstzrange(v_from, p_valid_until, '[)');
    -- Expired windows of the edge are gone for every reader: they neither overlap nor block the new one.
    perform memsub._drop_expired_edge(v_tenant, v_source_key, v_type, v_target_key);
    begin
        -- The insert looks for an overlapping window itself: the exclusion constraint is deferrable, and in a
        -- transaction that deferred it (SET CONSTRAINTS ... DEFERRED) it would only fail at COMMIT, naming no
        -- field and taking every write of the transaction with it. The constraint still decides a race with a
        -- concurrent writer (checked when this statement ends, unless deferred).
        insert into memsub.entity_relationships (
            source_entity, relationship_type, target_entity, source_type, target_type, confidence, source_packet,
            mention_count, first_seen, last_seen, valid_period, evidence, ttl,
            tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
        select
            v_source, v_type, v_target, p_source_type, p_target_type, v_confidence, p_source_packet, 1, now(), now(),
            v_period, v_evidence, v_packet.ttl,
            v_tenant, memsub.current_org_id(), memsub.current_user_id(), v_packet.correlation_id,
            memsub.current_session_id(), v_packet.trace_id
         where not exists (select from memsub.entity_relationships o
                            where o.tenant_id = v_tenant and o.source_key = v_source_key
                              and o.relationship_type = v_type and o.target_key = v_target_key
                              and o.valid_period && v_period)
        returning * into v_edge;
        if not found then
            raise exclusion_violation;
        end if;
    exception when exclusion_violation or unique_violation then
        raise exception 'edge (%)-[%]->(%): the window % overlaps another validity window of the same edge',
            v_source, v_type, v_target, v_period
            using errcode = '23P01', column = 'valid_period',
                  hint = 'Close or supersede the current window first (memsub.close_relationship, memsub.supersede_relationship).';
    end;
    return v_edge;
end
$$;
comment on function memsub.temporal_edge_add(text, text, text, timestamptz, timestamptz, double precision, jsonb, text, text, uuid) is
    'Adds one validity window [valid_from, valid_until) of an edge (valid_from: now; valid_until NULL: open, the '
    'current edge) with confidence and evidence DocRefs. A window overlapping another window of the same edge is '
    'rejected with SQLSTATE 23P01 (column valid_period) by the call itself, also in a transaction that deferred the '
    'exclusion constraint. A window of a superseded Document or Memory version that would hold after it was '
    'superseded is refused (55000 naming source_entity or target_entity).';

-- A Document node is one version of a file and a Memory node one version of a key: when a new version supersedes
-- it (memsub.document_ingest, memsub._store_memory_version), the edges naming it stop holding there, as
-- close_relationship ends one. Every context's edges: an organization's edge may name a tenant-wide document that
-- the tenant-wide writer re-ingests. Owned by memsub_retrieval_owner (BYPASSRLS) and executable only by
-- memsub_owner, whose writers pass the tenant of their sealed context (a memory write calls it every time: the
-- context is not verified twice); it changes nothing but those edges' windows.
drop function if exists memsub._close_node_edges(text, text);
create or replace function memsub._close_node_edges(p_tenant uuid, p_node_type text, p_node uuid)
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_key     text := p_node::text;  -- a UUID's text is its own matching form (memsub.normalize_text)
    v_ids     uuid[];
    v_changed integer;
    v_dropped integer;
begin
    -- The windows still holding now or later, each end by its own index (the exclusion constraint's for the
    -- source, idx_entity_relationships_target for the target): usually none.
    select coalesce(array_agg(distinct e.relationship_id), '{}') into v_ids from (
        select r.relationship_id from memsub.entity_relationships r
         where r.tenant_id = p_tenant and r.source_key = v_key and r.source_type = p_node_type
           and r.valid_period && tstzrange(now(), null, '[)')
        union all
        select r.relationship_id from memsub.entity_relationships r
         where r.tenant_id = p_tenant and r.target_key = v_key and r.target_type = p_node_type
           and r.valid_period && tstzrange(now(), null, '[)')) e;
    if cardinality(v_ids) = 0 then
        return 0;
    end if;
    -- A window that would only start at or after the supersession never holds: it goes.
    delete from memsub.entity_relationships r
     where r.tenant_id = p_tenant and r.relationship_id = any(v_ids) and lower(r.valid_period) >= now();
    get diagnostics v_dropped = row_count;
    update memsub.entity_relationships r set valid_period = tstzrange(lower(r.valid_period), now(), '[)')
     where r.tenant_id = p_tenant and r.relationship_id = any(v_ids) and lower(r.valid_period) < now();
    get diagnostics v_changed = row_count;
    return v_changed + v_dropped;
end
$$;
alter function memsub._close_node_edges(uuid, text, uuid) owner to memsub_retrieval_owner;
comment on function memsub._close_node_edges(uuid, text, uuid) is
    'Internal: ends, at the transaction''s time, every window of the tenant''s edges whose source or target is '
    'this Document or Memory node (a superseded document version or memory entry) and that still holds then, '
    'whoever may see those edges (owned by memsub_retrieval_owner, BYPASSRLS); a window that would start only then '
    'or later is deleted. Returns the number of windows changed. Executable only by memsub_owner, whose callers '
    'pass their context''s tenant.';
grant select, update (valid_period), delete on memsub.entity_relationships to memsub_retrieval_owner;
grant execute on function memsub.graph_node_types() to memsub_retrieval_owner;  -- the table's check constraint
grant execute on function memsub._close_node_edges(uuid, text, uuid) to memsub_owner;

create or replace function memsub.close_relationship(
    p_source_entity     text,
    p_relationship_type text,
    p_target_entity     text,
    p_valid_until       timestamptz default null
) returns memsub.entity_relationships
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_source text := memsub._require_text(p_source_entity, 'source_entity');
    v_type   text := memsub.normalize_text(memsub._require_text(p_relationship_type, 'relationship_type'));
    v_target text := memsub._require_text(p_target_entity, 'target_entity');
    v_until  timestamptz := coalesce(p_valid_until, now());
    v_edge   memsub.entity_relationships;
    v_source_keys text[];
    v_target_keys text[];
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('source_entity', p_source_entity, 'relationship_type', p_relationship_type,
                                      'target_entity', p_target_entity);
    perform memsub._check_stored_time(p_valid_until, 'valid_until');
    -- Each end looked up once, here: inside the query below, a filter would look it up again for every edge read.
    v_source_keys := memsub._entity_keys(v_source);
    v_target_keys := memsub._entity_keys(v_target);
    -- The edge may have an open window under each name of its entities (an entity's name and its aliases): all
    -- of them end, or none. The latest start decides whether valid_until comes after the windows' starts.
    select r.* into v_edge from memsub.entity_relationships r
     where r.tenant_id = v_tenant and r.source_key = any(v_source_keys) and r.relationship_type = v_type
       and r.target_key = any(v_target_keys) and upper_inf(r.valid_period)
     order by lower(r.valid_period) desc, r.relationship_id
       for update;
    if not found then
        raise exception 'edge (%)-[%]->(%) has no current window to close', v_source, v_type, v_target
            using errcode = 'P0002', column = 'relationship_type';
    end if;
    if v_until <= lower(v_edge.valid_period) then
        raise exception 'field "valid_until" (%) must be after the window''s start (%)', v_until, lower(v_edge.valid_period)
            using errcode = '22023', column = 'valid_until';
    end if;
    -- All close; the window that started first is the one returned.
    with closed as (
        update memsub.entity_relationships r set valid_period = tstzrange(lower(r.valid_period), v_until, '[)')
         where r.tenant_id = v_tenant and r.source_key = any(v_source_keys) and r.relationship_type = v_type
           and r.target_key = any(v_target_keys) and upper_inf(r.valid_period)
        returning r.*)
    select c.* into v_edge from closed c order by lower(c.valid_period), c.relationship_id limit 1;
    return v_edge;
end
$$;
comment on function memsub.close_relationship(text, text, text, timestamptz) is
    'Ends the current window of an edge at valid_until (default now): the relationship no longer holds from then '
    'on. An edge observed under several names of its entities (a name and its aliases) has a window under each: '
    'all end, and the earliest is returned. P0002 when the edge has no current window.';

create or replace function memsub.supersede_relationship(
    p_source_entity     text,
    p_relationship_type text,
    p_target_entity     text,
    p_valid_from        timestamptz      default null,
    p_confidence        double precision default 0.5,
    p_evidence          jsonb            default '[]',
    p_source_type       text             default 'Entity',
    p_target_type       text             default 'Entity',
    p_source_packet     uuid             default null
) returns memsub.entity_relationships
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_source   text := memsub._check_graph_node(p_source_type, p_source_entity, 'source_entity');
    v_type     text := memsub.normalize_text(memsub._require_text(p_relationship_type, 'relationship_type'));
    v_target   text := memsub._check_graph_node(p_target_type, p_target_entity, 'target_entity');
    v_from     timestamptz := coalesce(p_valid_from, now());
    v_evidence jsonb := memsub._check_doc_refs(p_evidence, 'evidence');
    v_late     memsub.entity_relationships;
    v_edge     memsub.entity_relationships;
    v_sources  text[];
    v_targets  text[];
    v_packet   memsub.packet_store;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('source_entity', p_source_entity, 'relationship_type', p_relationship_type,
                                      'target_entity', p_target_entity, 'source_type', p_source_type,
                                      'target_type', p_target_type),
            memsub._check_limit(pg_column_size(p_evidence), 'max_json_bytes', 'evidence');
    perform memsub._check_stored_time(p_valid_from, 'valid_from');
    perform memsub._check_unit(p_confidence, 'confidence');
    perform memsub._lock_graph_nodes(v_tenant, array[p_source_type, p_target_type],
                                     array[case when p_source_type in ('Document', 'Memory') then v_source::uuid end,
                                           case when p_target_type in ('Document', 'Memory') then v_target::uuid end]);
    perform memsub._refuse_superseded_node(p_source_type, v_source, 'source_entity', null),
            memsub._refuse_superseded_node(p_target_type, v_target, 'target_entity', null);
    v_packet := memsub._require_shared_packet(memsub._visible_packet(p_source_packet, 'source_packet'), 'source_packet');
    -- Supersedes of one (source, relationship) run one at a time.
    perform memsub._take_maintenance_lock('supersede_relationship', v_tenant::text || ':'
                                          || memsub.normalize_text(memsub._resolve_entity(v_source)) || ':' || v_type);
    -- The source is matched as its entity (name or alias), the target by its matching form.
    v_sources := memsub._entity_keys(v_source);
    v_targets := memsub._entity_keys(v_target);
    select r.* into v_late from memsub.entity_relationships r
     where r.tenant_id = v_tenant and r.source_key = any(v_sources) and r.relationship_type = v_type
       and not r.target_key = any(v_targets) and upper_inf(r.valid_period) and lower(r.valid_period) >= v_from
     limit 1;
    if found then
        raise exception 'field "valid_from": (%)-[%]->(%) holds only since %, after %; supersede from a later time',
            v_source, v_type, v_late.target_entity, lower(v_late.valid_period), v_from
            using errcode = '22023', column = 'valid_from';
    end if;
    -- The facts this one replaces stop holding where it starts.
    update memsub.entity_relationships r set valid_period = tstzrange(lower(r.valid_period), v_from, '[)')
     where r.tenant_id = v_tenant and r.source_key = any(v_sources) and r.relationship_type = v_type
       and not r.target_key = any(v_targets) and upper_inf(r.valid_period);
    -- The new fact: reinforce it when it already holds, otherwise open its window. It holds from valid_from: an
    -- open window that starts later starts there now (never before a closed window of the same edge ends).
    update memsub.entity_relationships r
       set valid_period = case when lower(r.valid_period) > v_from then
                                   tstzrange(greatest(v_from, (select max(upper(x.valid_period))
                                                                 from memsub.entity_relationships x
                                                                where x.tenant_id = r.tenant_id
                                                                  and x.source_key = r.source_key
                                                                  and x.relationship_type = r.relationship_type
                                                                  and x.target_key = r.target_key
                                                                  and not upper_inf(x.valid_period))),
                                             null, '[)')
                               else r.valid_period end,
           mention_count = r.mention_count + 1,
           confidence = 1 - (1 - r.confidence) * (1 - coalesce(p_confidence, 0.5)),
           last_seen = greatest(r.last_seen, now()),
           evidence = memsub._merge_doc_refs(r.evidence, v_evidence),
           ttl = memsub._later_expiry(r.ttl, v_packet.ttl)
     where r.relationship_id = (select h.relationship_id from memsub.entity_relationships h
                                 where h.tenant_id = v_tenant and h.source_key = any(v_sources)
                                   and h.relationship_type = v_type and h.target_key = any(v_targets)
                                   and upper_inf(h.valid_period)
                                 order by h.source_key = memsub.normalize_text(v_source) desc, h.relationship_id
                                 limit 1)
       and r.tenant_id = v_tenant
    returning r.* into v_edge;
    if not found then
        v_edge := memsub.temporal_edge_add(v_source, v_type, v_target, v_from, null, p_confidence, v_evidence,
                                           p_source_type, p_target_type, p_source_packet);
    end if;
    return v_edge;
end
$$;
comment on function memsub.supersede_relationship(text, text, text, timestamptz, double precision, jsonb, text, text, uuid) is
    'Records that (source)-[type]->(target) holds from valid_from (default now) and replaces the other targets of '
    '(source, type): their current windows close at valid_from. An edge that already holds is reinforced '
    '(mention_count + 1, confidence combined, evidence merged); when its open window starts later, it starts at '
    'valid_from now (never before a closed window of the edge ends). Rejects (22023) a valid_from before the start '
    'of a fact it would replace. A superseded Document or Memory version as source or target is refused (55000 '
    'naming source_entity or target_entity): its edges closed when it was superseded.';

-- Reads as of a time -------------------------------------------------------------------------------------------

create or replace function memsub.edges_as_of(
    p_as_of             timestamptz default null,
    p_entity            text        default null,
    p_relationship_type text        default null
) returns setof memsub.entity_relationships
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_keys text[];
    v_type text;  -- the type's matching form, once: in the condition, once per edge read
    v_max  bigint := memsub.limit_value('max_rows');
    v_read bigint;
begin
    perform memsub._check_finite_time(p_as_of, 'as_of');
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read.
    perform memsub._check_text_limits('entity', p_entity, 'relationship_type', p_relationship_type);
    if p_relationship_type is not null then
        perform memsub._check_filter_values(array[p_relationship_type], 'relationship_type');
        v_type := memsub.normalize_text(p_relationship_type);
    end if;
    -- The entity is looked up once: in the statement's condition, the scan checked it again for every edge. A
    -- blank one names no edge (22023, as graph_neighbors_as_of refuses it).
    if p_entity is not null then
        v_keys := memsub._entity_keys(memsub._require_text(p_entity, 'entity'));
    end if;
    return query
    select r.* from memsub.entity_relationships r
     where r.tenant_id = memsub.current_tenant_id()
       and r.valid_period @> coalesce(p_as_of, now())
       and (p_entity is null or r.source_key = any(v_keys) or r.target_key = any(v_keys))
       and (p_relationship_type is null or r.relationship_type = v_type)
     order by r.source_entity, r.relationship_type, r.target_entity
     limit v_max + 1;
    -- At most max_rows edges per call: a larger graph is refused, not returned whole nor cut short silently.
    get diagnostics v_read = row_count;
    if v_read > v_max then
        raise exception 'memsub.edges_as_of: more than % edges; name an entity or a relationship_type', v_max
            using errcode = '54000', column = 'entity',
                  detail = format('limit=max_rows value=%s', v_max),
                  hint = 'Limits are set per installation in memsub.limits (docs/security.md, "Limits").';
    end if;
end
$$;
comment on function memsub.edges_as_of(timestamptz, text, text) is
    'The graph as of a time (default now): the edges whose validity window contains it, optionally only those '
    'touching an entity (as source or target; by its name or aliases, memsub._entity_keys) or of one relationship type. '
    'More than max_rows edges are refused (54000, column entity), not returned.';

create or replace function memsub.graph_neighbors_as_of(
    p_entity    text,
    p_as_of     timestamptz default null,
    p_max_depth integer     default 2,
    p_limit     integer     default 100
) returns table (depth integer, source_entity text, relationship_type text, target_entity text,
                 confidence double precision, mention_count integer, valid_period tstzrange)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
-- The edge searches read in an index's order and stop at their limit; a bitmap scan (which a plan for few
-- edges per entity may prefer) reads every entry of a hub's key before it stops.
set enable_bitmapscan = off
as $$
declare
    v_tenant uuid := memsub.current_tenant_id();
    v_at     timestamptz := coalesce(p_as_of, now());
    -- Names resolve through Entity nodes only when the tenant has any (otherwise a name is its own entity).
    v_nodes  boolean := exists (select from memsub.world_model_entities w where w.tenant_id = v_tenant);
    v_left   integer;
    v_names  text[];  -- the names on the edges to the next level
    frontier text[];  -- matching forms (names and aliases) of the entities of the current level
    visited  jsonb;   -- matching form -> true: a set with logarithmic lookups
    level    integer := 0;
    returned integer;
    v_max_edges bigint := memsub.limit_value('max_walk_edges');  -- edges one walk may read, all levels together
    v_walked    bigint := 0;  -- edges the walk has read
begin
    perform memsub._check_finite_time(p_as_of, 'as_of');
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read.
    perform memsub._check_text_limits('entity', p_entity);
    frontier := memsub._entity_keys(memsub._require_text(p_entity, 'entity'));
    perform memsub._check_count(p_max_depth, 'max_depth', 'max_depth');
    perform memsub._check_count(p_limit, 'max_rows', 'limit');
    v_left := p_limit;
    visited := (select jsonb_object_agg(f, true) from unnest(frontier) as f);
    -- Breadth first: each entity is expanded once, and limit bounds the rows of all hops together.
    while level < p_max_depth and v_left > 0 and cardinality(frontier) > 0 loop
        level := level + 1;
        -- Each matching form of the level is one search of an index in the level's order
        -- (idx_entity_relationships_out_by_mentions, migration 2.45.0) that stops at the rows the walk may still
        -- return, beside the few edges too long for it (idx_entity_relationships_out_long), which it reads whole.
        -- What the searches read never passes what the walk may still read (max_walk_edges) by more than one edge,
        -- and a walk over it is refused, once, before the rows are sorted (memsub._check_walk_edges, the
        -- statement's one-time filter).
        return query
            with edges as materialized (
                select e.* from (
                    select r.source_entity, r.relationship_type, r.target_entity, r.confidence, r.mention_count,
                           r.valid_period, r.relationship_id
                      from unnest(frontier) as k(key)
                     cross join lateral (
                         (select o.source_entity, o.relationship_type, o.target_entity, o.confidence,
                                 o.mention_count, o.valid_period, o.relationship_id
                            from memsub.entity_relationships o
                           where o.tenant_id = v_tenant and o.source_key collate "C" = k.key and o.valid_period @> v_at
                             and octet_length(o.source_key) + octet_length(o.source_entity)
                                 + octet_length(o.relationship_type) + octet_length(o.target_key)
                                 + octet_length(o.target_entity) <= 2400
                           order by o.source_entity, o.mention_count desc, o.target_entity, o.relationship_type,
                                    o.relationship_id
                           limit v_left)
                         union all
                         select o.source_entity, o.relationship_type, o.target_entity, o.confidence, o.mention_count,
                                o.valid_period, o.relationship_id
                           from memsub.entity_relationships o
                          where o.tenant_id = v_tenant and o.source_key collate "C" = k.key and o.valid_period @> v_at
                            and octet_length(o.source_key) + octet_length(o.source_entity)
                                + octet_length(o.relationship_type) + octet_length(o.target_key)
                                + octet_length(o.target_entity) > 2400) r) e
                 limit v_max_edges - v_walked + 1)
            select level, e.source_entity, e.relationship_type, e.target_entity, e.confidence, e.mention_count,
                   e.valid_period
              from edges e
             where memsub._check_walk_edges(v_walked + (select count(*) from edges), v_max_edges,
                                            'memsub.graph_neighbors_as_of', p_max_depth, 'max_depth',
                                            'ask for fewer hops, a smaller limit, or walk with '
                                            'memsub.traverse_graph and its relationship_types or min_confidence')
             order by e.source_entity, e.mention_count desc, e.target_entity, e.relationship_type, e.relationship_id
             limit v_left;
        get diagnostics returned = row_count;
        v_left := v_left - returned;
        exit when level >= p_max_depth or v_left <= 0;  -- the next frontier would not be expanded
        -- Fewer rows than the limit left: they are every edge of the level, which the next level's budget counts.
        v_walked := v_walked + returned;
        -- The next level: the targets not reached yet, by their matching forms, from the edges just counted (one
        -- search per key: they are fewer than limit); with Entity nodes, their names looked up in one call
        -- (memsub._resolve_entities), not one per edge.
        select array_agg(distinct r.target_entity), array_agg(distinct r.target_key) into v_names, frontier
          from unnest(frontier) as k(key)
          join memsub.entity_relationships r
            on r.tenant_id = v_tenant and r.source_key = k.key and r.valid_period @> v_at
         where not visited ? r.target_key;
        if v_nodes then
            frontier := array(select distinct k from memsub._resolve_entities(v_names) e
                               cross join lateral unnest(e.keys) as k);
        end if;
        visited := visited || coalesce((select jsonb_object_agg(f, true) from unnest(frontier) as f), '{}');
    end loop;
end
$$;
comment on function memsub.graph_neighbors_as_of(text, timestamptz, integer, integer) is
    'memsub.graph_neighbors as of a time: the outgoing edges valid at as_of (default now) reachable from an '
    'entity (by its name or aliases), breadth first up to max_depth hops (limit max_depth), each entity expanded '
    'once, at most limit edges in all (limit max_rows); each level by source, most mentioned first, then target and '
    'relationship type, read in that order: a level reads at most the rows the walk may still return for each name '
    'of its entities. A walk reads at most the max_walk_edges limit of edges (valid at as_of), all hops together: '
    'one that would read more is refused with 54000 (column max_depth, detail limit=max_walk_edges value=N), not '
    'cut short.';

-- Entity nodes -----------------------------------------------------------------------------------------------

drop function if exists memsub.graph_upsert_entity(text, text, text[], jsonb, jsonb, double precision);
create or replace function memsub.graph_upsert_entity(
    p_name        text,
    p_entity_type text,
    p_aliases     text[]           default '{}',
    p_properties  jsonb            default '{}',
    p_doc_refs    jsonb            default '[]',
    p_confidence  double precision default 0.5,
    p_embedding   vector           default null
) returns memsub.world_model_entities
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_name     text := memsub._require_text(p_name, 'name');
    v_doc_refs jsonb := memsub._check_doc_refs(p_doc_refs, 'doc_refs');
    v_entity   memsub.world_model_entities;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('name', p_name, 'entity_type', p_entity_type),
            memsub._check_text_list(p_aliases, 'aliases'),  -- count, max_text_chars together, no NULL
            memsub._check_limit(pg_column_size(p_properties), 'max_json_bytes', 'properties'),
            memsub._check_limit(pg_column_size(p_doc_refs), 'max_json_bytes', 'doc_refs');
    perform memsub._check_one_of(p_entity_type, memsub.entity_types(), 'entity_type');
    perform memsub._check_vector(p_embedding, 'embedding');
    if array_position(p_aliases, null) is not null then
        raise exception 'field "aliases" must not contain NULL' using errcode = '22023', column = 'aliases';
    end if;
    -- The name and each alias are keys (the world model's primary key, the alias index's entries).
    perform memsub._check_key_bytes('name', v_name),
            memsub._check_limits(array(select octet_length(a)::bigint from unnest(p_aliases) a), 'max_key_bytes',
                                 array(select format('aliases[%s]', n - 1)
                                         from generate_series(1, cardinality(p_aliases)) n));
    -- Through the world model, so the entity is versioned like every other world-model change. A name that
    -- matches an entity's (memsub.normalize_text) is that entity: 'ALICE' updates 'Alice'. The update finds it
    -- under its lock, and the entity it changed or made is found the same way (memsub._world_model_entity_named).
    perform memsub.apply_world_model_update('graph_entity', jsonb_build_array(jsonb_build_object(
        'entity_id', v_name, 'entity_type', p_entity_type,
        'attributes', coalesce(memsub._check_json_type(p_properties, 'object', 'properties'), '{}'),
        'confidence', coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5))));
    v_name := coalesce(memsub._world_model_entity_named(v_tenant, v_name), v_name);
    update memsub.world_model_entities w
       set aliases = array(select distinct a from unnest(w.aliases || coalesce(p_aliases, '{}')) as a
                            where not memsub._is_blank(a) order by a),
           alias_keys = array(select distinct memsub.normalize_text(a)
                                from unnest(w.aliases || coalesce(p_aliases, '{}')) as a
                               where not memsub._is_blank(a) order by 1),
           doc_refs = memsub._merge_doc_refs(w.doc_refs, v_doc_refs),
           embedding = coalesce(p_embedding, w.embedding)
     where w.tenant_id = v_tenant and w.entity_id = v_name
    returning w.* into v_entity;
    return v_entity;
end
$$;
comment on function memsub.graph_upsert_entity(text, text, text[], jsonb, jsonb, double precision, vector) is
    'Creates or updates an Entity node (a world-model entity, versioned by memsub.apply_world_model_update) of type '
    'Person, Organization, Concept or Location, adding aliases and DocRefs to those it has; a name that matches an '
    'existing entity''s (memsub.normalize_text) updates that entity. embedding (seed 003 Node.embedding, the '
    'installation''s dimension) replaces the stored one when given.';

-- The words of an entity's name and aliases. The index idx_world_model_entities_name_words holds them (migration
-- 2.36.0, which creates this function first, and 2.38.0, which composes the words to NFC).
create or replace function memsub._entity_name_words(p_entity_id text, p_aliases text[]) returns tsvector
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
-- immutable: array_to_string is stable only for element types whose text output may change; text's does not.
-- Composed to NFC as entity_search composes the query (memsub.normalize_text's rule), so an accent typed either way
-- is the same word.
as $$
    select pg_catalog.to_tsvector('simple'::regconfig,
                                  normalize(p_entity_id || ' ' || pg_catalog.array_to_string(p_aliases, ' '), nfc))
$$;
comment on function memsub._entity_name_words(text, text[]) is
    'Internal: the words of an entity''s name and aliases (simple configuration, composed to Unicode NFC), as the '
    'index idx_world_model_entities_name_words holds them and memsub._entity_word_candidates matches them.';

-- entity_search's text leg under row-level security: tsvector @@ tsquery is not LEAKPROOF, so for a role bound by
-- the policies the planner may not use it as an index condition, and every entity of the tenant was read and
-- its words built (3,000 entities: 9,000 rows read; 10,000: 81 ms). memsub._entity_word_candidates is therefore
-- SECURITY DEFINER, owned by memsub_retrieval_owner (BYPASSRLS, NOLOGIN), like the keyword leg of hybrid search
-- (sql/320_hybrid_search.sql), and states the one predicate of world_model_entities' policies for a member of
-- the tenant, the tenant itself. It returns names and ranks only: entity_search reads the rows back through
-- row-level security. The words are indexed by tenant (idx_world_model_entities_name_words over
-- memsub._entity_name_words, migration 2.36.0).
create or replace function memsub._entity_word_candidates(
    p_query tsquery,
    p_limit integer default 50
) returns table (entity_id text, text_rank integer, text_score real)
language plpgsql stable security definer
-- At most p_limit rows (50 by default): the planner joins them back to their rows by key.
rows 50
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
begin
    perform memsub._check_count(p_limit, 'max_k', 'limit');
    perform memsub._check_limit(numnode(p_query), 'max_query_nodes', 'query');
    if coalesce(numnode(p_query), 0) = 0 then
        return;  -- no searchable words
    end if;
    return query
        select w.entity_id,
               (row_number() over (order by ts_rank_cd(memsub._entity_name_words(w.entity_id, w.aliases), p_query)
                                            desc, w.entity_id))::integer,
               ts_rank_cd(memsub._entity_name_words(w.entity_id, w.aliases), p_query)
          from memsub.world_model_entities w
         where w.tenant_id = v_tenant  -- the tenant_isolation policy
           and memsub._entity_name_words(w.entity_id, w.aliases) @@ p_query
         order by 2
         limit p_limit;
end
$$;
comment on function memsub._entity_word_candidates(tsquery, integer) is
    'Text leg of memsub.entity_search: the context tenant''s entities whose name or aliases match the query '
    '(simple configuration), best first by ts_rank_cd, as names and ranks. Applies the tenant predicate itself so '
    'the index of the words is usable (tsvector @@ is not LEAKPROOF under row-level security).';
alter function memsub._entity_word_candidates(tsquery, integer) owner to memsub_retrieval_owner;

create or replace function memsub.entity_search(
    p_query_text text,
    p_query      vector  default null,
    p_k          integer default 10,
    p_rrf_k      integer default 60
) returns table (entity_id text, entity_type text, aliases text[], attributes jsonb, score double precision,
                 vector_rank integer, text_rank integer, distance double precision, text_score real)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_candidates integer;
    v_query      tsquery;
begin
    perform memsub._check_fused_search(p_k, p_rrf_k, p_query, p_query_text);
    -- The text is bounded before a tsquery is built from it, and the tsquery before anything is read, whatever
    -- the tenant holds (the text leg checks the terms as well, but a tenant without rows never reaches it).
    perform memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    -- 4k rows from each leg (at least 50), at most the max_k limit: every k up to the limit is served.
    v_candidates := least(greatest(50, 4 * p_k::bigint), memsub.limit_value('max_k'));
    v_query := websearch_to_tsquery('simple'::regconfig, normalize(coalesce(p_query_text, ''), nfc));
    perform memsub._check_limit(numnode(v_query), 'max_query_nodes', 'query_text');
    return query
    with vector_leg as (
        -- By the exact distance: cosine_distance(), which no index serves. A walk of the one HNSW graph of every
        -- tenant's entities, filtered by row-level security afterwards, came back with other nearest rows.
        select w.entity_id, cosine_distance(w.embedding, p_query) as distance,
               (row_number() over (order by cosine_distance(w.embedding, p_query), w.entity_id))::integer
                   as vector_rank
          from memsub.world_model_entities w
         where p_query is not null and w.tenant_id = v_tenant and w.embedding is not null
         order by 2, 1
         limit v_candidates
    ), text_leg as (
        -- Names and aliases, word by word (simple configuration: names are not stemmed).
        select c.entity_id, c.text_score, c.text_rank
          from memsub._entity_word_candidates(v_query, v_candidates) c
    ), fused as (
        select coalesce(v.entity_id, t.entity_id) as entity_id, v.vector_rank, t.text_rank, v.distance, t.text_score,
               -- In double precision: rrf_k may be any integer >= 0, and rrf_k + rank overflowed integer.
               coalesce(1.0 / (p_rrf_k::double precision + v.vector_rank), 0.0)
               + coalesce(1.0 / (p_rrf_k::double precision + t.text_rank), 0.0) as rrf
          from vector_leg v
          full join text_leg t on t.entity_id = v.entity_id
    )
    select w.entity_id, w.entity_type, w.aliases, w.attributes, f.rrf::double precision, f.vector_rank,
           f.text_rank, f.distance, f.text_score
      -- The k best first, then their rows by key: joined before the limit, every row of the tenant was read.
      from (select * from fused order by rrf desc, entity_id limit p_k) f
      join memsub.world_model_entities w on w.tenant_id = v_tenant and w.entity_id = f.entity_id
     order by f.rrf desc, w.entity_id;
end
$$;
comment on function memsub.entity_search(text, vector, integer, integer) is
    'Entity nodes by meaning and name: the visible entities nearest to query (their embedding, by the exact cosine '
    'distance) and '
    'matching query_text in their name or aliases (websearch syntax, simple configuration), fused by reciprocal '
    'rank fusion (1 / (rrf_k + rank) per leg). Either query may be NULL.';

-- Typed nodes --------------------------------------------------------------------------------------------------
-- One view over the four tables that hold nodes; security_invoker, so each table's row-level security applies
-- to the caller. A Memory node is the latest live version of a memory key.

call memsub._ensure_view('memsub.graph_nodes', $create$create or replace view memsub.graph_nodes with (security_invoker = true) as
select w.tenant_id, 'Entity'::text as node_type, w.entity_id as node_id, null::text as content,
       w.attributes as properties, w.created_at at time zone 'UTC' as created_at,
       w.updated_at at time zone 'UTC' as updated_at, w.doc_refs,
       tstzrange(w.created_at at time zone 'UTC', null, '[)') as valid_period,
       w.entity_type, w.aliases, null::text as session_id, null::tstzrange as timeline,
       null::text as mime, null::text as path, null::text as hash,
       null::text as memory_tier, null::double precision as importance, null::jsonb as decay_state,
       w.created_at at time zone 'UTC' as valid_from, null::timestamptz as valid_until
  from memsub.world_model_entities w
union all
select s.tenant_id, 'Episode', s.id, null,
       jsonb_build_object('status', s.status, 'user_id', s.user_id, 'project_id', s.project_id,
                          'app_name', s.app_name),
       s.created_at, s.updated_at, '[]'::jsonb, tstzrange(s.created_at, s.terminated_at, '[)'),
       null, null, s.id, tstzrange(s.created_at, s.terminated_at, '[)'),
       null, null, null, null, null, null, s.created_at, s.terminated_at
  from memsub.sessions s
union all
select d.tenant_id, 'Document', d.id::text, d.summary,
       d.metadata || jsonb_build_object('version', d.version, 'is_latest', d.is_latest,
                                        'previous_id', d.previous_id, 'key_concepts', to_jsonb(d.key_concepts),
                                        'entities', d.entities, 'chunk_count', d.chunk_count),
       d.created_at, d.updated_at, '[]'::jsonb, tstzrange(d.created_at, d.superseded_at, '[)'),
       null, null, null, null, d.mime, d.file_path, d.hash, null, null, null, d.created_at, d.superseded_at
  from memsub.document_index d
union all
select m.tenant_id, 'Memory', m.id::text, m.value::text,
       jsonb_build_object('namespace', m.namespace, 'key', m.key, 'version', m.version, 'kind', m.memory_type,
                          'metadata', m.metadata),
       m.created_at, coalesce(m.last_access_ts, m.created_at), coalesce(m.metadata -> 'doc_refs', '[]'),
       tstzrange(m.created_at, null, '[)'),
       null, null, m.session_id, null, null, null, null, m.memory_tier, m.importance,
       jsonb_build_object('last_access_ts', m.last_access_ts, 'weight', m.decay_weight), m.created_at, null
  from memsub.memory_entries m
 where not m.is_deleted
   and not exists (select from memsub.memory_entries n
                    where n.tenant_id = m.tenant_id and n.namespace = m.namespace and n.key = m.key
                      and n.version > m.version)$create$);
comment on view memsub.graph_nodes is
    'Typed knowledge-graph nodes (seed 003 Node): Entity (world_model_entities), Episode (sessions), Document '
    '(document_index versions), Memory (latest live memory_entries version). Security invoker: each source table''s '
    'row-level security applies.';
comment on column memsub.graph_nodes.tenant_id is 'Tenant owning the node.';
comment on column memsub.graph_nodes.node_type is 'Entity, Episode, Document or Memory.';
comment on column memsub.graph_nodes.node_id is 'Node id: entity name, session id, document version id or memory entry id (the ids edges use).';
comment on column memsub.graph_nodes.content is 'Text of the node: a document''s summary, a memory''s value (JSON text); NULL for entities and episodes.';
comment on column memsub.graph_nodes.properties is 'Properties of the node (entity attributes, session status, document version facts, memory address).';
comment on column memsub.graph_nodes.created_at is 'When the node was created.';
comment on column memsub.graph_nodes.updated_at is 'When the node last changed (memories: last access).';
comment on column memsub.graph_nodes.doc_refs is 'DocRefs of the node: a JSON array of {doc_id, chunk_id, score}.';
comment on column memsub.graph_nodes.valid_period is 'When the node exists: an episode''s timeline, a document version''s time as latest, otherwise from creation on. Empty (no bounds, contains no time) for a node replaced in the transaction that created it.';
comment on column memsub.graph_nodes.entity_type is 'Entity: Person, Organization, Concept or Location.';
comment on column memsub.graph_nodes.aliases is 'Entity: other names.';
comment on column memsub.graph_nodes.session_id is 'Episode: its session; Memory: the session that wrote it.';
comment on column memsub.graph_nodes.timeline is 'Episode: [start_ts, end_ts) of the session (end open while active).';
comment on column memsub.graph_nodes.mime is 'Document: pdf, md or txt.';
comment on column memsub.graph_nodes.path is 'Document: file path.';
comment on column memsub.graph_nodes.hash is 'Document: sha256 of the file.';
comment on column memsub.graph_nodes.memory_tier is 'Memory: its tier, STM, LTM or Procedural (memsub.memory_tiers()).';
comment on column memsub.graph_nodes.importance is 'Memory: importance in [0, 1].';
comment on column memsub.graph_nodes.decay_state is 'Memory: {last_access_ts, weight}.';
comment on column memsub.graph_nodes.valid_from is 'Start of valid_period; for an empty valid_period (a node replaced in the transaction that created it) its creation time, as valid_until.';
comment on column memsub.graph_nodes.valid_until is 'End of valid_period, NULL while the node exists; for an empty valid_period its creation time, as valid_from.';

grant select on memsub.graph_nodes to memsub_app, memsub_analyst;
-- _check_doc_refs, _merge_doc_refs, _check_graph_node and _refuse_superseded_node run inside SECURITY DEFINER
-- functions only: no grant.
grant execute on function
    memsub.edges_as_of(timestamptz, text, text),
    memsub.graph_neighbors_as_of(text, timestamptz, integer, integer)
    to memsub_app, memsub_analyst;
grant execute on function
    memsub.temporal_edge_add(text, text, text, timestamptz, timestamptz, double precision, jsonb, text, text, uuid),
    memsub.close_relationship(text, text, text, timestamptz),
    memsub.supersede_relationship(text, text, text, timestamptz, double precision, jsonb, text, text, uuid),
    memsub.graph_upsert_entity(text, text, text[], jsonb, jsonb, double precision, vector)
    to memsub_app;
grant execute on function memsub.entity_search(text, vector, integer, integer) to memsub_app, memsub_analyst;
grant execute on function memsub._entity_word_candidates(tsquery, integer) to memsub_app, memsub_analyst;
-- The text leg's owner reads what its predicates select, and nothing else.
grant select on memsub.world_model_entities to memsub_retrieval_owner;
grant execute on function memsub._entity_name_words(text, text[]), memsub._check_limit(bigint, text, text)
    to memsub_retrieval_owner;
