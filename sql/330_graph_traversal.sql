-- Retrieval pipeline, graph leg: paths through entity_relationships and the neighbourhood of an entity.
--
-- Breadth first over entities with a visited set: each entity is reached once, at its shortest distance, along
-- its most confident shortest path, so the work is linear in the edges of the entities it returns (enumerating
-- every path instead grows with the factorial of a dense graph's size: a complete graph of 10 entities has
-- about a million). Depth and the row limit bound the walk; both are capped by memsub.limits (max_depth,
-- max_rows). Confidence accumulates as the product of the edge confidences along the path (independent evidence,
-- so a path is as trustworthy as all its edges at once).
-- SECURITY INVOKER: row-level security decides which edges and facts the caller sees; the tenant is also
-- written into the query so every hop is an index lookup on (tenant_id, entity).

create or replace function memsub.traverse_graph(
    p_start_entity        text,
    p_max_depth           integer          default 3,
    p_relationship_types  text[]           default null,
    p_min_confidence      double precision default 0.0,
    p_direction           text             default 'outgoing',
    p_min_path_confidence double precision default 0.0,
    p_limit               integer          default 1000
) returns table (depth integer, entity text, path text[], relationship_path text[], path_confidence double precision,
                 relationship_id uuid, edge_confidence double precision)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant   uuid := memsub.require_tenant_id();
    v_start    text := memsub.require_text(p_start_entity, 'start_entity');
    v_types    text[];
    v_level    integer := 0;
    v_left     integer;
    v_visited  jsonb;  -- entity -> true: a set with logarithmic lookups
    v_frontier jsonb;  -- the rows of the last level: [{entity, path, relationship_path, path_confidence}]
    v_rows     jsonb;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub.check_limit(length(p_start_entity), 'max_text_chars', 'start_entity'),
            memsub.check_limit(length(p_direction), 'max_text_chars', 'direction');
    if p_max_depth is null or p_max_depth < 1 then
        raise exception 'field "max_depth" must be at least 1, not %', p_max_depth
            using errcode = '22023', column = 'max_depth';
    end if;
    perform memsub.check_limit(p_max_depth, 'max_depth', 'max_depth');
    if p_limit is null or p_limit < 1 then
        raise exception 'field "limit" must be at least 1, not %', p_limit
            using errcode = '22023', column = 'limit';
    end if;
    perform memsub.check_limit(p_limit, 'max_rows', 'limit');
    perform memsub.check_limit(cardinality(p_relationship_types), 'max_array_items', 'relationship_types');
    perform memsub.check_unit(p_min_confidence, 'min_confidence');
    perform memsub.check_unit(p_min_path_confidence, 'min_path_confidence');
    perform memsub.check_one_of(p_direction, array['outgoing', 'incoming', 'both'], 'direction');
    v_types := array(select memsub.normalize_text(t) from unnest(p_relationship_types) as t);
    v_left := p_limit;
    v_visited := jsonb_build_object(v_start, true);
    v_frontier := jsonb_build_array(jsonb_build_object('entity', v_start, 'path', array[v_start],
                                                       'relationship_path', array[]::text[], 'path_confidence', 1.0));
    while v_level < p_max_depth and v_left > 0 and jsonb_array_length(v_frontier) > 0 loop
        v_level := v_level + 1;
        -- Each entity not yet reached, once, along its most confident step from the last level.
        select coalesce(jsonb_agg(to_jsonb(c) order by c.path_confidence desc, c.path), '[]') into v_rows
          from (select d.* from (
                    select distinct on (step.next_entity)
                           step.next_entity as entity, f.path || step.next_entity as path,
                           f.relationship_path || step.relationship_type as relationship_path,
                           f.path_confidence * step.confidence as path_confidence,
                           step.relationship_id, step.confidence as edge_confidence
                      from jsonb_to_recordset(v_frontier)
                           as f(entity text, path text[], relationship_path text[], path_confidence double precision)
                     cross join lateral (
                          select r.target_entity as next_entity, r.relationship_type, r.confidence, r.relationship_id
                            from memsub.entity_relationships r
                           where p_direction in ('outgoing', 'both') and r.tenant_id = v_tenant
                             and r.source_entity = f.entity
                          union all
                          select r.source_entity, r.relationship_type, r.confidence, r.relationship_id
                            from memsub.entity_relationships r
                           where p_direction in ('incoming', 'both') and r.tenant_id = v_tenant
                             and r.target_entity = f.entity
                     ) step
                     where step.confidence >= coalesce(p_min_confidence, 0)
                       and (p_relationship_types is null or step.relationship_type = any(v_types))
                       and f.path_confidence * step.confidence >= coalesce(p_min_path_confidence, 0)
                       and not v_visited ? step.next_entity
                     order by step.next_entity, f.path_confidence * step.confidence desc,
                              f.path || step.next_entity
                ) d
                order by d.path_confidence desc, d.path
                limit v_left) c;
        exit when jsonb_array_length(v_rows) = 0;
        return query
            select v_level, r.entity, r.path, r.relationship_path, r.path_confidence, r.relationship_id,
                   r.edge_confidence
              from jsonb_to_recordset(v_rows) as r(entity text, path text[], relationship_path text[],
                                                   path_confidence double precision, relationship_id uuid,
                                                   edge_confidence double precision)
             order by r.path_confidence desc, r.path;
        v_left := v_left - jsonb_array_length(v_rows);
        v_visited := v_visited || (select jsonb_object_agg(e ->> 'entity', true) from jsonb_array_elements(v_rows) e);
        v_frontier := v_rows;
    end loop;
end
$$;
comment on function memsub.traverse_graph(text, integer, text[], double precision, text, double precision, integer) is
    'Entities reachable from an entity through the visible knowledge graph, breadth first: up to max_depth hops '
    '(1 to limit max_depth, default 10) along outgoing, incoming or both directions, optionally only the given '
    'relationship types and edges with confidence >= min_confidence. Each entity is reported once, at its shortest '
    'distance, with its most confident shortest path (cycle-safe, linear in the edges walked). path_confidence is '
    'the product of the edge confidences; paths below min_path_confidence stop. Shortest and most confident first, '
    'at most limit rows (limit max_rows).';

create or replace function memsub.entity_neighbourhood(
    p_entity         text,
    p_min_confidence double precision default 0.0,
    p_limit          integer          default 100
) returns table (kind text, direction text, relationship_type text, other_entity text, object jsonb,
                 confidence double precision, mention_count integer, id uuid)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub.require_tenant_id();
    v_entity text := memsub.require_text(p_entity, 'entity');
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub.check_limit(length(p_entity), 'max_text_chars', 'entity');
    perform memsub.check_unit(p_min_confidence, 'min_confidence');
    if p_limit is null or p_limit < 1 then
        raise exception 'field "limit" must be at least 1, not %', p_limit
            using errcode = '22023', column = 'limit';
    end if;
    perform memsub.check_limit(p_limit, 'max_rows', 'limit');
    return query
    (select 'relationship'::text, 'outgoing'::text, r.relationship_type, r.target_entity, null::jsonb, r.confidence,
            r.mention_count, r.relationship_id
       from memsub.entity_relationships r
      where r.tenant_id = v_tenant and r.source_entity = v_entity and r.confidence >= coalesce(p_min_confidence, 0)
      order by r.confidence desc, r.target_entity limit p_limit)
    union all
    (select 'relationship', 'incoming', r.relationship_type, r.source_entity, null, r.confidence, r.mention_count,
            r.relationship_id
       from memsub.entity_relationships r
      where r.tenant_id = v_tenant and r.target_entity = v_entity and r.confidence >= coalesce(p_min_confidence, 0)
      order by r.confidence desc, r.source_entity limit p_limit)
    union all
    (select 'fact', 'subject', f.predicate, null, f.object, f.confidence, f.supporting_packet_count, f.fact_id
       from memsub.knowledge_facts f
      where f.tenant_id = v_tenant and f.subject_normalized = memsub.normalize_text(v_entity)
        and f.confidence >= coalesce(p_min_confidence, 0)
      order by f.confidence desc, f.predicate limit p_limit);
end
$$;
comment on function memsub.entity_neighbourhood(text, double precision, integer) is
    'One hop around an entity: its outgoing and incoming relationships and the facts whose subject it is '
    '(subject matched case-insensitively), each kind most confident first and at most limit rows.';

grant execute on function
    memsub.traverse_graph(text, integer, text[], double precision, text, double precision, integer),
    memsub.entity_neighbourhood(text, double precision, integer)
    to memsub_app, memsub_analyst;
