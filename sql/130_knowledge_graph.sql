-- Knowledge-graph layer: entity_relationships, reinforced by UPSERT, and a bounded graph walk.
--
-- Edges are tenant-wide knowledge (the seed's unique key is (tenant_id, source, type, target)): every member of
-- the tenant reads and reinforces the same edge. They can come only from shared packets.

create or replace function memsub.upsert_relationship(
    p_source_entity     text,
    p_relationship_type text,
    p_target_entity     text,
    p_confidence        double precision default 0.5,
    p_source_packet     uuid             default null,
    p_seen_at           timestamptz      default null
) returns memsub.entity_relationships
language plpgsql volatile security definer
set search_path = pg_catalog, memsub
as $$
declare
    v_tenant     uuid := memsub.require_tenant_id();
    v_source     text := memsub.require_text(p_source_entity, 'source_entity');
    v_type       text := memsub.normalize_text(memsub.require_text(p_relationship_type, 'relationship_type'));
    v_target     text := memsub.require_text(p_target_entity, 'target_entity');
    v_confidence double precision := coalesce(memsub.check_unit(p_confidence, 'confidence'), 0.5);
    v_packet     memsub.packet_store;
    v_seen       timestamptz;
    v_edge       memsub.entity_relationships;
begin
    v_packet := memsub.require_shared_packet(memsub.visible_packet(p_source_packet, 'source_packet'), 'source_packet');
    v_seen := coalesce(p_seen_at, v_packet."timestamp", now());
    -- One statement: concurrent callers on one edge queue on its unique index entry and each adds exactly one.
    -- The index covers the current (open) window; a new window starts at the observation, or where the edge's
    -- last closed window ended if that is later, so windows never overlap.
    insert into memsub.entity_relationships as r (
        source_entity, relationship_type, target_entity, confidence, source_packet, mention_count,
        first_seen, last_seen, valid_period, tenant_id, org_id, user_id, correlation_id, session_id, trace_id)
    values (
        v_source, v_type, v_target, v_confidence, p_source_packet, 1, v_seen, v_seen,
        tstzrange(greatest(v_seen, (select max(upper(h.valid_period)) from memsub.entity_relationships h
                                     where h.tenant_id = v_tenant and h.source_entity = v_source
                                       and h.relationship_type = v_type and h.target_entity = v_target)),
                  null, '[)'),
        v_tenant, memsub.current_org_id(), memsub.current_user_id(), v_packet.correlation_id,
        memsub.current_session_id(), v_packet.trace_id)
    on conflict (tenant_id, source_entity, relationship_type, target_entity) where upper_inf(valid_period) do update
       set mention_count = r.mention_count + 1,
           confidence = 1 - (1 - r.confidence) * (1 - excluded.confidence),
           first_seen = least(r.first_seen, excluded.first_seen),
           last_seen = greatest(r.last_seen, excluded.last_seen),
           source_packet = coalesce(r.source_packet, excluded.source_packet)
    returning r.* into v_edge;
    return v_edge;
end
$$;
comment on function memsub.upsert_relationship(text, text, text, double precision, uuid, timestamptz) is
    'Records one observation of an edge (source)-[type]->(target) in its current (open) validity window. New edge: '
    'mention_count 1, valid from the observation. Known edge: '
    'mention_count + 1, last_seen = latest observation, confidence = 1 - (1 - old) * (1 - new) (independent '
    'evidence: never decreases, approaches 1). Entity names are trimmed; the type is lower case. Race-free '
    '(a single INSERT ... ON CONFLICT DO UPDATE).';

create or replace function memsub.graph_neighbors(
    p_entity    text,
    p_max_depth integer default 2,
    p_limit     integer default 100
) returns table (depth integer, source_entity text, relationship_type text, target_entity text,
                 confidence double precision, mention_count integer)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub
as $$
declare
    frontier text[];
    visited  text[];
    level    integer := 0;
begin
    frontier := array[memsub.require_text(p_entity, 'entity')];
    if p_max_depth is null or p_max_depth < 1 or p_max_depth > 10 then
        raise exception 'field "max_depth" must be between 1 and 10, not %', p_max_depth
            using errcode = '22023', column = 'max_depth';
    end if;
    if p_limit is null or p_limit < 1 or p_limit > 10000 then
        raise exception 'field "limit" must be between 1 and 10000, not %', p_limit
            using errcode = '22023', column = 'limit';
    end if;
    visited := frontier;
    -- Breadth first over outgoing edges; each entity is expanded once, so cycles end.
    while level < p_max_depth and cardinality(frontier) > 0 loop
        level := level + 1;
        return query
            select level, r.source_entity, r.relationship_type, r.target_entity, r.confidence, r.mention_count
              from memsub.entity_relationships r
             where r.source_entity = any(frontier) and upper_inf(r.valid_period)
             order by r.source_entity, r.mention_count desc, r.target_entity
             limit p_limit;
        frontier := array(
            select distinct r.target_entity from memsub.entity_relationships r
             where r.source_entity = any(frontier) and upper_inf(r.valid_period)
               and not r.target_entity = any(visited));
        visited := visited || frontier;
    end loop;
end
$$;
comment on function memsub.graph_neighbors(text, integer, integer) is
    'Graph traversal over the current edges (open validity windows; memsub.graph_neighbors_as_of for another time): '
    'the outgoing edges reachable from an entity, breadth first up to max_depth hops, each hop '
    'at most limit edges, each entity expanded once.';

call memsub.install_row_security('memsub.entity_relationships', array[]::text[]);

grant select on memsub.entity_relationships to memsub_app, memsub_analyst;
grant execute on function
    memsub.upsert_relationship(text, text, text, double precision, uuid, timestamptz)
    to memsub_app;
grant execute on function memsub.graph_neighbors(text, integer, integer) to memsub_app, memsub_analyst;
