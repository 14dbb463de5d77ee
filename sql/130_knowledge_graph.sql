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
set search_path = pg_catalog, memsub, pg_temp
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
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub.check_limit(length(p_source_entity), 'max_text_chars', 'source_entity'),
            memsub.check_limit(length(p_relationship_type), 'max_text_chars', 'relationship_type'),
            memsub.check_limit(length(p_target_entity), 'max_text_chars', 'target_entity');
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
    'at most limit edges in all.';

call memsub.install_row_security('memsub.entity_relationships', array[]::text[]);

grant select on memsub.entity_relationships to memsub_app, memsub_analyst;
grant execute on function
    memsub.upsert_relationship(text, text, text, double precision, uuid, timestamptz)
    to memsub_app;
grant execute on function memsub.graph_neighbors(text, integer, integer) to memsub_app, memsub_analyst;
