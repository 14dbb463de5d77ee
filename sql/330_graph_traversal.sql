-- Retrieval pipeline, graph leg: paths through entity_relationships and the neighbourhood of an entity.
--
-- One recursive query per call. A path never visits an entity twice (the path array is the cycle check), so
-- cycles end; depth and a row limit bound the work on dense graphs. Confidence accumulates as the product of the
-- edge confidences along the path (independent evidence, so a path is as trustworthy as all its edges at once).
-- SECURITY INVOKER: row-level security decides which edges and facts the caller sees; the tenant is also
-- written into the query so every hop is an index lookup on (tenant_id, entity).
--
-- Graph reads mean the graph as of a time, now by default (p_as_of): only edges whose validity window contains
-- it are walked, so a superseded or closed fact neither answers nor extends a path. Entities are matched by
-- name or alias (memsub.entity_keys) and reported by the entity's name (memsub.resolve_entity).

drop function if exists memsub.traverse_graph(text, integer, text[], double precision, text, double precision, integer);
drop function if exists memsub.entity_neighbourhood(text, double precision, integer);

create or replace function memsub.traverse_graph(
    p_start_entity        text,
    p_max_depth           integer          default 3,
    p_relationship_types  text[]           default null,
    p_min_confidence      double precision default 0.0,
    p_direction           text             default 'outgoing',
    p_min_path_confidence double precision default 0.0,
    p_limit               integer          default 1000,
    p_as_of               timestamptz      default null
) returns table (depth integer, entity text, path text[], relationship_path text[], path_confidence double precision,
                 relationship_id uuid, edge_confidence double precision)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub.require_tenant_id();
    v_start  text := memsub.resolve_entity(memsub.require_text(p_start_entity, 'start_entity'));
    v_at     timestamptz := coalesce(p_as_of, now());
    v_types  text[];
    -- Names resolve through Entity nodes only when the tenant has any (otherwise a name is its own entity).
    v_nodes  boolean := exists (select from memsub.world_model_entities w where w.tenant_id = v_tenant);
begin
    if p_max_depth is null or p_max_depth < 1 or p_max_depth > 10 then
        raise exception 'field "max_depth" must be between 1 and 10, not %', p_max_depth
            using errcode = '22023', column = 'max_depth';
    end if;
    if p_limit is null or p_limit < 1 or p_limit > 100000 then
        raise exception 'field "limit" must be between 1 and 100000, not %', p_limit
            using errcode = '22023', column = 'limit';
    end if;
    perform memsub.check_unit(p_min_confidence, 'min_confidence');
    perform memsub.check_unit(p_min_path_confidence, 'min_path_confidence');
    perform memsub.check_one_of(p_direction, array['outgoing', 'incoming', 'both'], 'direction');
    v_types := array(select memsub.normalize_text(t) from unnest(p_relationship_types) as t);
    return query
    with recursive walk (depth, entity, keys, path, path_keys, relationship_path, path_confidence, relationship_id,
                         edge_confidence) as (
        select 0, v_start, memsub.entity_keys(v_start), array[v_start], array[memsub.normalize_text(v_start)],
               array[]::text[], 1.0::double precision, null::uuid, null::double precision
        union all
        select w.depth + 1, step.next_entity,
               case when v_nodes then memsub.entity_keys(step.next_entity) else array[step.next_key] end,
               w.path || step.next_entity, w.path_keys || step.next_key, w.relationship_path || step.relationship_type,
               w.path_confidence * step.confidence, step.relationship_id, step.confidence
          from walk w
          cross join lateral (
              select n.next_entity,
                     case when v_nodes then memsub.normalize_text(n.next_entity) else n.edge_key end as next_key,
                     n.relationship_type, n.confidence, n.relationship_id
                from (select case when v_nodes then memsub.resolve_entity(r.target_entity) else r.target_entity end
                                 as next_entity, r.target_key as edge_key, r.relationship_type, r.confidence,
                             r.relationship_id
                        from memsub.entity_relationships r
                       where p_direction in ('outgoing', 'both') and r.tenant_id = v_tenant
                         and r.source_key = any(w.keys) and r.valid_period @> v_at
                      union all
                      select case when v_nodes then memsub.resolve_entity(r.source_entity) else r.source_entity end,
                             r.source_key, r.relationship_type, r.confidence, r.relationship_id
                        from memsub.entity_relationships r
                       where p_direction in ('incoming', 'both') and r.tenant_id = v_tenant
                         and r.target_key = any(w.keys) and r.valid_period @> v_at) n
          ) step
         where w.depth < p_max_depth
           and step.confidence >= coalesce(p_min_confidence, 0)
           and (p_relationship_types is null or step.relationship_type = any(v_types))
           and w.path_confidence * step.confidence >= coalesce(p_min_path_confidence, 0)
           and step.next_key <> all(w.path_keys)
    )
    select w.depth, w.entity, w.path, w.relationship_path, w.path_confidence, w.relationship_id, w.edge_confidence
      from walk w
     where w.depth > 0
     order by w.depth, w.path_confidence desc, w.path
     limit p_limit;
end
$$;
comment on function memsub.traverse_graph(text, integer, text[], double precision, text, double precision, integer, timestamptz) is
    'Paths from an entity through the visible knowledge graph as of a time (as_of, default now: only edges valid '
    'then; entities by name or alias): up to max_depth hops (1-10) along outgoing, incoming '
    'or both directions, optionally only the given relationship types and edges with confidence >= min_confidence. '
    'A path never revisits an entity (cycle-safe). path_confidence is the product of the edge confidences; paths '
    'below min_path_confidence stop. Shortest and most confident first, at most limit rows.';

create or replace function memsub.entity_neighbourhood(
    p_entity         text,
    p_min_confidence double precision default 0.0,
    p_limit          integer          default 100,
    p_as_of          timestamptz      default null
) returns table (kind text, direction text, relationship_type text, other_entity text, object jsonb,
                 confidence double precision, mention_count integer, id uuid)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub.require_tenant_id();
    v_entity text := memsub.require_text(p_entity, 'entity');
    v_keys   text[] := memsub.entity_keys(v_entity);
    v_at     timestamptz := coalesce(p_as_of, now());
begin
    perform memsub.check_unit(p_min_confidence, 'min_confidence');
    if p_limit is null or p_limit < 1 or p_limit > 10000 then
        raise exception 'field "limit" must be between 1 and 10000, not %', p_limit
            using errcode = '22023', column = 'limit';
    end if;
    return query
    (select 'relationship'::text, 'outgoing'::text, r.relationship_type, memsub.resolve_entity(r.target_entity),
            null::jsonb, r.confidence, r.mention_count, r.relationship_id
       from memsub.entity_relationships r
      where r.tenant_id = v_tenant and r.source_key = any(v_keys) and r.valid_period @> v_at
        and r.confidence >= coalesce(p_min_confidence, 0)
      order by r.confidence desc, r.target_entity limit p_limit)
    union all
    (select 'relationship', 'incoming', r.relationship_type, memsub.resolve_entity(r.source_entity), null,
            r.confidence, r.mention_count, r.relationship_id
       from memsub.entity_relationships r
      where r.tenant_id = v_tenant and r.target_key = any(v_keys) and r.valid_period @> v_at
        and r.confidence >= coalesce(p_min_confidence, 0)
      order by r.confidence desc, r.source_entity limit p_limit)
    union all
    (select 'fact', 'subject', f.predicate, null, f.object, f.confidence, f.supporting_packet_count, f.fact_id
       from memsub.knowledge_facts f
      where f.tenant_id = v_tenant and f.subject_normalized = any(v_keys)
        and f.confidence >= coalesce(p_min_confidence, 0)
      order by f.confidence desc, f.predicate limit p_limit);
end
$$;
comment on function memsub.entity_neighbourhood(text, double precision, integer, timestamptz) is
    'One hop around an entity (by name or alias) as of a time (as_of, default now): its outgoing and incoming '
    'relationships valid then and the facts whose subject it is (subject matched by memsub.normalize_text), each '
    'kind most confident first and at most limit rows.';

grant execute on function
    memsub.traverse_graph(text, integer, text[], double precision, text, double precision, integer, timestamptz),
    memsub.entity_neighbourhood(text, double precision, integer, timestamptz)
    to memsub_app, memsub_analyst;
