-- Area: graph. Seed: seed 000 "KNOWLEDGE GRAPH LAYER" (entity_relationships) and "CORE MEMORY LAYER"
--   (knowledge_facts).
--
-- Knowledge-graph layer: entity_relationships, reinforced by UPSERT, and a bounded graph walk.
--
-- Edges are tenant-wide knowledge (the seed's unique key is (tenant_id, source, type, target)): every member of
-- the tenant reads and reinforces the same edge. They can come only from shared packets.
--
-- Entity names match by one rule everywhere: memsub.normalize_text (composed to Unicode NFC, trimmed, lower case,
-- inner whitespace collapsed), stored as source_key / target_key (migrations 2.13.0 and 2.38.0). A name that is an
-- Entity node's name or one of its aliases resolves to that entity (memsub._resolve_entities; memsub._resolve_entity
-- and memsub._entity_keys for one name) in every graph read.

-- Entity lookups are SECURITY DEFINER, owned by memsub_retrieval_owner (BYPASSRLS), and apply the only policy of
-- world_model_entities (tenant_isolation) themselves: under row-level security the alias lookup (text[] @>, not
-- LEAKPROOF) could not use its GIN index. Walks look up each level's names in one call.

create or replace function memsub._resolve_entities(p_names text[])
returns table (name text, entity text, keys text[])
language plpgsql stable security definer parallel safe
set search_path = pg_catalog, memsub, pg_temp
-- One plan for every call: the names are read at run time, so a plan made for each call's array is the same plan,
-- and making it cost more than the lookups.
set plan_cache_mode = force_generic_plan
-- Its alias search is a GIN index, which only a bitmap scan reads: allowed here whatever the caller set (the
-- graph reads turn bitmap scans off, sql/430_graph_traversal.sql).
set enable_bitmapscan = on
as $$
declare
    v_tenant uuid := memsub.current_tenant_id();
begin
    -- Each name once: the Entity node named so (the expression index) or, failing that, the one with the name
    -- among its aliases (the GIN index), the first by entity_id; the second search runs only when the first finds
    -- nothing. One call for a whole level of a walk, not one per edge. The matching forms are written out, not
    -- memsub.normalize_text calls (never inlined: it sets its search_path), a frame per name and key otherwise: the
    -- name's as normalize_text's body, the stored names' as idx_world_model_entities_key's expression, which the
    -- index search must repeat; both are normalize_text's body (whitespace as memsub._require_text counts it).
    return query
        select n.name, coalesce(w.entity_id, btrim(n.name)), coalesce(w.keys, array[n.key])
          from (select distinct u.name,
                       lower(btrim(regexp_replace(normalize(u.name, nfc),
                                                  '[[:space:]\u0085\u00a0\u2007\u202f]+', ' ', 'g'))) as key
                  from unnest(p_names) as u(name)
                 where u.name is not null) n
          left join lateral (
              -- The entity's keys: its name's, and those of its aliases that stand for it (an alias that is another
              -- entity's name, or that an entity first by name claims too, stands for that one).
              select x.entity_id,
                     array[x.key] || array(
                         select a from unnest(x.alias_keys) as a
                          where a <> x.key
                            and not exists (
                                    select from memsub.world_model_entities o
                                     where o.tenant_id = v_tenant
                                       and lower(btrim(regexp_replace(normalize(o.entity_id, nfc),
                                                                      '[[:space:]\u0085\u00a0\u2007\u202f]+', ' ',
                                                                      'g'))) = a)
                            and (select o.entity_id from memsub.world_model_entities o
                                  where o.tenant_id = v_tenant and o.alias_keys @> array[a]
                                  order by o.entity_id limit 1) = x.entity_id) as keys
                from (select y.*, lower(btrim(regexp_replace(normalize(y.entity_id, nfc),
                                                             '[[:space:]\u0085\u00a0\u2007\u202f]+', ' ', 'g')))
                                      as key
                        from ((select e.entity_id, e.alias_keys, 1 as pass from memsub.world_model_entities e
                                where e.tenant_id = v_tenant
                                  and lower(btrim(regexp_replace(normalize(e.entity_id, nfc),
                                                                 '[[:space:]\u0085\u00a0\u2007\u202f]+', ' ', 'g')))
                                      = n.key
                                order by e.entity_id limit 1)
                              union all
                              (select e.entity_id, e.alias_keys, 2 from memsub.world_model_entities e
                                where e.tenant_id = v_tenant and e.alias_keys @> array[n.key]
                                order by e.entity_id limit 1)) y
                       order by y.pass limit 1) x) w on true;
end
$$;
comment on function memsub._resolve_entities(text[]) is
    'The graph entity each name stands for, each name once (NULL names left out): the Entity node of the context '
    'tenant whose name or one of whose aliases matches it (memsub.normalize_text), the node named so first, '
    'otherwise the name itself, trimmed; and keys, the matching forms under which edges name that entity (its name '
    'and the aliases that stand for it, or the name alone; each form once, as alias_keys holds it): an alias that '
    'is another entity''s name, or that an entity first by name claims too, stands for that entity. Edge lookups '
    'compare source_key / target_key to them.';
alter function memsub._resolve_entities(text[]) owner to memsub_retrieval_owner;

create or replace function memsub._resolve_entity(p_name text) returns text
language plpgsql stable security definer parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_entity text;
begin
    select r.entity into v_entity from memsub._resolve_entities(array[p_name]) r;
    return coalesce(v_entity, btrim(p_name));
end
$$;
comment on function memsub._resolve_entity(text) is
    'The graph entity a name stands for (memsub._resolve_entities of one name): the Entity node of the context '
    'tenant whose name or one of whose aliases matches it (memsub.normalize_text), the node named so first; '
    'otherwise the name itself, trimmed.';
alter function memsub._resolve_entity(text) owner to memsub_retrieval_owner;

create or replace function memsub._entity_keys(p_name text) returns text[]
language plpgsql stable security definer parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_keys text[];
begin
    select r.keys into v_keys from memsub._resolve_entities(array[p_name]) r;
    return coalesce(v_keys, array[memsub.normalize_text(p_name)]);
end
$$;
comment on function memsub._entity_keys(text) is
    'The matching forms under which edges name the entity a name stands for (memsub._resolve_entities of one '
    'name), each once: its name and its aliases, or the name alone when it is no Entity node. Edge lookups compare '
    'source_key / target_key to them, one search per form.';
alter function memsub._entity_keys(text) owner to memsub_retrieval_owner;

create or replace function memsub.upsert_relationship(
    p_source_entity     text,
    p_relationship_type text,
    p_target_entity     text,
    p_confidence        double precision default 0.5,
    p_source_packet     uuid             default null,
    p_seen_at           timestamptz      default null
) returns memsub.entity_relationships
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_source     text := memsub._require_text(p_source_entity, 'source_entity');
    v_type       text := memsub.normalize_text(memsub._require_text(p_relationship_type, 'relationship_type'));
    v_target     text := memsub._require_text(p_target_entity, 'target_entity');
    v_source_key text := memsub.normalize_text(v_source);
    v_target_key text := memsub.normalize_text(v_target);
    v_confidence double precision := coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5);
    v_packet     memsub.packet_store;
    v_seen       timestamptz;
    v_from       timestamptz;
    v_edge       memsub.entity_relationships;
    v_attempt    integer;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('source_entity', p_source_entity, 'relationship_type', p_relationship_type,
                                      'target_entity', p_target_entity);
    perform memsub._check_key_bytes('source_entity', v_source_key, 'relationship_type', v_type,
                                    'target_entity', v_target_key);
    perform memsub._check_stored_time(p_seen_at, 'seen_at');
    v_packet := memsub._require_shared_packet(memsub._visible_packet(p_source_packet, 'source_packet'), 'source_packet');
    v_seen := coalesce(p_seen_at, v_packet."timestamp", now());
    -- A packet's time is stated by its writer: a client stamps its envelope as it builds it, inside its block, so
    -- after the transaction began (and ahead of it when its clock runs ahead). Such an observation opens the window
    -- when the transaction began, so the graph reads (as of now() by default) find the edge in the same transaction
    -- and in every later one; first_seen and last_seen keep the stated time. A seen_at given to this call opens it
    -- where it says, a later one included.
    v_from := coalesce(p_seen_at, least(v_packet."timestamp", now()), now());
    -- An expired window is gone for every reader: observing the edge again starts it afresh.
    perform memsub._drop_expired_edge(v_tenant, v_source_key, v_type, v_target_key);
    -- One statement: concurrent callers on one edge queue on its unique index entry and each adds exactly one.
    -- The index covers the current (open) window; a new window starts at the observation, or where the edge's
    -- last closed window ended if that is later, so windows never overlap. A caller that waited on a transaction
    -- closing the window did not see the close when the statement began: its new window would start before the
    -- close's end, which the exclusion constraint refuses. The statement then runs once more, and sees it.
    for v_attempt in 1 .. 2 loop
        begin
            insert into memsub.entity_relationships as r (
                source_entity, relationship_type, target_entity, confidence, source_packet, mention_count,
                first_seen, last_seen, valid_period, ttl, tenant_id, org_id, user_id, correlation_id, session_id,
                trace_id)
            values (
                v_source, v_type, v_target, v_confidence, p_source_packet, 1, v_seen, v_seen,
                tstzrange(greatest(v_from, (select max(upper(h.valid_period)) from memsub.entity_relationships h
                                             where h.tenant_id = v_tenant and h.source_key = v_source_key
                                               and h.relationship_type = v_type and h.target_key = v_target_key)),
                          null, '[)'),
                v_packet.ttl, v_tenant, memsub.current_org_id(), memsub.current_user_id(), v_packet.correlation_id,
                memsub.current_session_id(), v_packet.trace_id)
            on conflict (tenant_id, source_key, relationship_type, target_key) where upper_inf(valid_period)
            do update
               set mention_count = r.mention_count + 1,
                   confidence = 1 - (1 - r.confidence) * (1 - excluded.confidence),
                   first_seen = least(r.first_seen, excluded.first_seen),
                   last_seen = greatest(r.last_seen, excluded.last_seen),
                   source_packet = coalesce(r.source_packet, excluded.source_packet),
                   -- the window lives as long as its latest observation's packet (never without an expiring packet)
                   ttl = memsub._later_expiry(r.ttl, excluded.ttl)
            returning r.* into v_edge;
            -- In a transaction that deferred the exclusion constraint (SET CONSTRAINTS ... DEFERRED) that overlap
            -- would only fail at COMMIT, naming nothing and losing every write of the transaction: the new window
            -- is looked for here too (this statement sees the close that committed while the insert waited), and
            -- the statement runs once more as above. A reinforced window is unchanged and overlaps nothing.
            if v_edge.mention_count = 1 and exists (
                    select from memsub.entity_relationships h
                     where h.tenant_id = v_tenant and h.source_key = v_source_key and h.relationship_type = v_type
                       and h.target_key = v_target_key and h.relationship_id <> v_edge.relationship_id
                       and h.valid_period && v_edge.valid_period) then
                raise exclusion_violation;
            end if;
            return v_edge;
        exception when exclusion_violation then
            if v_attempt = 2 then
                raise exception 'edge (%)-[%]->(%): its new window overlaps a validity window of the same edge '
                                'written concurrently', v_source, v_type, v_target
                    using errcode = '23P01', column = 'valid_period';
            end if;
        end;
    end loop;
end
$$;
comment on function memsub.upsert_relationship(text, text, text, double precision, uuid, timestamptz) is
    'Records one observation of an edge (source)-[type]->(target) in its current (open) validity window. New edge: '
    'mention_count 1, valid from the observation (seen_at, else the source packet''s time, but no later than the '
    'transaction''s start, so the transaction reads it back). Known edge: '
    'mention_count + 1, last_seen = latest observation, confidence = 1 - (1 - old) * (1 - new) (independent '
    'evidence: never decreases, approaches 1). Entity names are trimmed and match by memsub.normalize_text (the '
    'first spelling is kept); the type is lower case. The window expires with the packets that observed it (the '
    'latest of their ttl; never once observed without an expiring packet); an expired edge observed again starts '
    'afresh. Race-free '
    '(a single INSERT ... ON CONFLICT DO UPDATE); a window closed concurrently while it waited makes it open the '
    'new one after the close, also in a transaction that deferred the exclusion constraint (23P01, column '
    'valid_period, should it overlap again).';

create or replace function memsub.graph_neighbors(
    p_entity    text,
    p_max_depth integer default 2,
    p_limit     integer default 100
) returns table (depth integer, source_entity text, relationship_type text, target_entity text,
                 confidence double precision, mention_count integer)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    -- The current graph is the graph as of now (memsub.graph_neighbors_as_of, sql/420_temporal_graph.sql).
    return query
        select n.depth, n.source_entity, n.relationship_type, n.target_entity, n.confidence, n.mention_count
          from memsub.graph_neighbors_as_of(p_entity, null, p_max_depth, p_limit) as n;
end
$$;
comment on function memsub.graph_neighbors(text, integer, integer) is
    'Graph traversal over the edges valid now (memsub.graph_neighbors_as_of at now()): '
    'the outgoing edges reachable from an entity, breadth first up to max_depth hops, each entity expanded once, '
    'at most limit edges in all. A walk that would read more than the max_walk_edges limit of edges, all hops '
    'together, is refused with 54000 (column max_depth, detail limit=max_walk_edges value=N), not cut short.';

call memsub._install_row_security('memsub.entity_relationships', array[]::text[]);
-- Expiry is honoured on every read (sql/150_packet_security.sql): a window whose observing packets have all
-- expired is never read.
call memsub._install_expiry_policy('memsub.entity_relationships',
    'An edge window whose observing packets have all expired is never read (only memsub_expiry_owner, for purging, '
    'sees it).');

grant select on memsub.entity_relationships to memsub_app, memsub_analyst;
grant execute on function
    memsub.upsert_relationship(text, text, text, double precision, uuid, timestamptz)
    to memsub_app;
grant execute on function memsub.graph_neighbors(text, integer, integer) to memsub_app, memsub_analyst;
grant execute on function memsub._resolve_entity(text), memsub._entity_keys(text), memsub._resolve_entities(text[])
    to memsub_app, memsub_analyst, memsub_owner;
-- What the entity lookups' owner reads.
grant usage on schema memsub to memsub_retrieval_owner;
grant select on memsub.world_model_entities to memsub_retrieval_owner;
grant execute on function memsub.current_tenant_id(), memsub.normalize_text(text) to memsub_retrieval_owner;

-- Knowledge facts ----------------------------------------------------------------------------------------------

create or replace function memsub.assert_fact(
    p_subject       text,
    p_predicate     text,
    p_object        jsonb,
    p_confidence    double precision default 0.5,
    p_source_packet uuid             default null
) returns memsub.knowledge_facts
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant       uuid := memsub._require_tenant_id();
    v_subject      text := memsub._require_text(p_subject, 'subject');
    v_predicate    text := memsub.normalize_text(memsub._require_text(p_predicate, 'predicate'));
    v_confidence   double precision := coalesce(memsub._check_unit(p_confidence, 'confidence'), 0.5);
    v_subject_norm text := memsub.normalize_text(v_subject);
    v_object_norm  text;
    v_packet       memsub.packet_store;
    v_fact         memsub.knowledge_facts;
    v_others       integer;
    v_packets      uuid[];
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('subject', p_subject, 'predicate', p_predicate),
            memsub._check_limit(pg_column_size(p_object), 'max_json_bytes', 'object');
    if p_object is null or jsonb_typeof(p_object) = 'null' then
        raise exception 'field "object" is required' using errcode = '23502', column = 'object';
    end if;
    v_object_norm := memsub._normalize_json_value(p_object);
    perform memsub._check_key_bytes('subject', v_subject_norm, 'predicate', v_predicate, 'object', v_object_norm);
    v_packet := memsub._require_shared_packet(memsub._visible_packet(p_source_packet, 'source_packet'), 'source_packet');

    -- One (subject, predicate) of a tenant is asserted by one transaction at a time, so reinforcement and
    -- contradiction counting see every committed assertion whatever the concurrency.
    perform memsub._take_maintenance_lock('assert_fact', v_tenant::text || '/' || v_subject_norm || '/' || v_predicate);
    -- An expired fact is gone for every reader: asserting it again starts it afresh.
    perform memsub._drop_expired_fact(v_tenant, v_subject_norm, v_predicate, v_object_norm);

    -- Expiry: the packet's (none without a packet); a reinforced fact lives as long as its latest support.
    update memsub.knowledge_facts f
       set supporting_packet_count = f.supporting_packet_count + 1,
           confidence = 1 - (1 - f.confidence) * (1 - v_confidence),
           ttl = memsub._later_expiry(f.ttl, v_packet.ttl),
           updated_at = now()
     where f.tenant_id = v_tenant and f.subject_normalized = v_subject_norm and f.predicate = v_predicate
       and f.object_normalized = v_object_norm
    returning f.* into v_fact;
    if not found then
        insert into memsub.knowledge_facts (
            subject, predicate, object, confidence, source_packet, subject_normalized, object_normalized, ttl,
            tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
        values (
            v_subject, v_predicate, p_object, v_confidence, p_source_packet, v_subject_norm, v_object_norm,
            v_packet.ttl, v_tenant, memsub.current_org_id(), memsub.current_user_id(), v_packet.correlation_id,
            memsub.current_session_id(), v_packet.trace_id)
        returning * into v_fact;
    end if;

    -- A different object for the same subject and predicate contradicts the facts already recorded: each of
    -- them counts one contradiction, the asserted fact one per fact it contradicts, and so do the packets.
    with contradicted as (
        update memsub.knowledge_facts f
           set contradiction_count = f.contradiction_count + 1, updated_at = now()
         where f.tenant_id = v_tenant and f.subject_normalized = v_subject_norm and f.predicate = v_predicate
           and f.object_normalized <> v_object_norm
        returning f.source_packet
    )
    select count(*), array_agg(distinct c.source_packet) filter (where c.source_packet is not null)
      into v_others, v_packets
      from contradicted c;
    if v_others > 0 then
        update memsub.knowledge_facts f
           set contradiction_count = f.contradiction_count + v_others
         where f.tenant_id = v_tenant and f.fact_id = v_fact.fact_id
        returning f.* into v_fact;
        update memsub.packet_store s
           set contradiction_count = s.contradiction_count + 1
         where s.tenant_id = v_tenant
           and s.packet_id = any(coalesce(v_packets, '{}') || p_source_packet);
    end if;
    return v_fact;
end
$$;
comment on function memsub.assert_fact(text, text, jsonb, double precision, uuid) is
    'Asserts a fact. Subject and object are normalized (trimmed, lower case, single spaces; non-string objects as '
    'canonical JSON). The same fact again adds one supporting assertion and raises confidence to '
    '1 - (1 - old) * (1 - new). A different object for the same subject and predicate is a contradiction: '
    'counted on every fact involved and on their (visible) source packets. The fact expires with the packets that '
    'asserted it (the latest of their ttl; never once asserted without an expiring packet); an expired fact asserted '
    'again starts afresh. Race-free: assertions about one subject and predicate are serialized.';

call memsub._install_row_security('memsub.knowledge_facts', array[]::text[]);

-- Expiry is honoured on every read, like the packets' (sql/150_packet_security.sql).
call memsub._install_expiry_policy('memsub.knowledge_facts',
    'A fact whose supporting packets have all expired is never read (only memsub_expiry_owner, for purging, sees it).');

grant select on memsub.knowledge_facts to memsub_app, memsub_analyst;
grant execute on function memsub.assert_fact(text, text, jsonb, double precision, uuid) to memsub_app;
