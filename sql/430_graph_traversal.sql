-- Area: graph. Seed: seed 000 "KNOWLEDGE GRAPH LAYER" and "DATA FLOW DIAGRAM".
--
-- Retrieval pipeline, graph leg: paths through entity_relationships and the neighbourhood of an entity.
--
-- Breadth first over entities with a visited set: each entity is reached once, at its shortest distance, along
-- its most confident shortest path, so the work is linear in the edges of the entities it returns (enumerating
-- every path instead grows with the factorial of a dense graph's size: a complete graph of 10 entities has
-- about a million). Depth and the row limit bound the walk; both are capped by memsub.limits (max_depth,
-- max_rows). A level's edges are all read before its rows are chosen, so the edges one walk reads, its levels
-- together, are bounded too (max_walk_edges): a walk that would read more is refused (54000), and stops reading
-- one edge past the limit, so a hub of many edges costs the limit, not its edges. Confidence accumulates as the product of the edge confidences along the path (independent evidence,
-- so a path is as trustworthy as all its edges at once).
-- SECURITY INVOKER: row-level security decides which edges and facts the caller sees; the tenant is also
-- written into the query so every hop is an index lookup on (tenant_id, entity).
--
-- Graph reads mean the graph as of a time, now by default (p_as_of): only edges whose validity window contains
-- it are walked, so a superseded or closed fact neither answers nor extends a path. Entities are matched by their
-- matching form (source_key / target_key, memsub.normalize_text) and, when the tenant has Entity nodes, by name or
-- alias (memsub._resolve_entities, a level's names in one call), and reported by the entity's name.

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
-- One plan for every call: planned for each call's values, each level's step was planned again (0.4 ms a level,
-- a third of a two-level walk); the direction's branches are gated by one-time filters instead.
set plan_cache_mode = force_generic_plan
as $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_start    text := memsub._require_text(p_start_entity, 'start_entity');
    v_at       timestamptz := coalesce(p_as_of, now());
    -- Names resolve through Entity nodes only when the tenant has any (otherwise a name is its own entity).
    v_nodes    boolean := exists (select from memsub.world_model_entities w where w.tenant_id = v_tenant);
    v_types    text[];
    v_level    integer := 0;
    v_left     integer;
    v_visited  jsonb;  -- matching form of an entity -> true: a set with logarithmic lookups
    v_frontier jsonb;  -- the rows of the last level: [{entity, keys, path, relationship_path, path_confidence}]
    v_rows     jsonb;
    v_max_edges bigint := memsub.limit_value('max_walk_edges');  -- edges one walk may read, all levels together
    v_walked    bigint := 0;  -- edges the walk has read, all levels together
    v_read      bigint;  -- edges the last level read
begin
    perform memsub._check_finite_time(p_as_of, 'as_of');
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('start_entity', p_start_entity, 'direction', p_direction);
    perform memsub._check_count(p_max_depth, 'max_depth', 'max_depth');
    perform memsub._check_count(p_limit, 'max_rows', 'limit');
    perform memsub._check_limit(cardinality(p_relationship_types), 'max_array_items', 'relationship_types');
    perform memsub._check_limits(array(select length(t)::bigint from unnest(p_relationship_types) as t),
                                 'max_text_chars',
                                 array(select format('relationship_types[%s]', n - 1)
                                         from generate_series(1, cardinality(p_relationship_types)) as n));
    perform memsub._check_filter_values(p_relationship_types, 'relationship_types');
    if cardinality(p_relationship_types) = 0 then
        raise exception 'field "relationship_types" must name at least one type (NULL: every type)'
            using errcode = '22023', column = 'relationship_types';
    end if;
    perform memsub._check_unit(p_min_confidence, 'min_confidence');
    perform memsub._check_unit(p_min_path_confidence, 'min_path_confidence');
    perform memsub._check_one_of(p_direction, memsub.graph_directions(), 'direction');
    v_types := array(select memsub.normalize_text(t) from unnest(p_relationship_types) as t);
    v_left := p_limit;
    v_start := memsub._resolve_entity(v_start);
    v_visited := jsonb_build_object(memsub.normalize_text(v_start), true);
    v_frontier := jsonb_build_array(jsonb_build_object('entity', v_start, 'keys', memsub._entity_keys(v_start),
                                                       'path', array[v_start], 'relationship_path', array[]::text[],
                                                       'path_confidence', 1.0));
    while v_level < p_max_depth and v_left > 0 and jsonb_array_length(v_frontier) > 0 loop
        v_level := v_level + 1;
        -- Each entity not yet reached, once, along its most confident step from the last level. One statement:
        with frontier as (  -- the last level's entities, one row per key
            select f.path, f.relationship_path, f.path_confidence, k.key
              from jsonb_to_recordset(v_frontier)
                   as f(keys text[], path text[], relationship_path text[], path_confidence double precision)
             cross join lateral (select distinct u.key from unnest(f.keys) as u(key)) k),
        -- The level's edges read once: every key in one search per direction, and never more than one past
        -- what the walk may still read (max_walk_edges), so a hub's edges are not all read to be refused.
        edges as materialized (
            select e.* from (
                select r.source_key as near_key, r.target_entity as far_name, r.target_key as far_key,
                       r.relationship_type, r.confidence, r.relationship_id
                  from memsub.entity_relationships r
                 where p_direction in ('outgoing', 'both') and r.tenant_id = v_tenant
                   and r.source_key = any(array(select distinct f.key from frontier f)) and r.valid_period @> v_at
                   and r.confidence >= coalesce(p_min_confidence, 0)
                   and (p_relationship_types is null or r.relationship_type = any(v_types))
                union all
                select r.target_key, r.source_entity, r.source_key, r.relationship_type, r.confidence,
                       r.relationship_id
                  from memsub.entity_relationships r
                 where p_direction in ('incoming', 'both') and r.tenant_id = v_tenant
                   and r.target_key = any(array(select distinct f.key from frontier f)) and r.valid_period @> v_at
                   and r.confidence >= coalesce(p_min_confidence, 0)
                   and (p_relationship_types is null or r.relationship_type = any(v_types))) e
             limit v_max_edges - v_walked + 1),
        -- With Entity nodes: the names on them resolved in one call, not one per edge, each to the entity it
        -- stands for, that entity's matching form, and the keys the next level's edges name it by.
        resolved as materialized (
            select n.name, n.entity, memsub.normalize_text(n.entity) as key, n.keys
              from memsub._resolve_entities(array(select e.far_name from edges e)) n
             where v_nodes),
        step as (
            select e.near_key, coalesce(n.entity, e.far_name) as next_entity, coalesce(n.key, e.far_key) as next_key,
                   coalesce(n.keys, array[e.far_key]) as next_keys, e.relationship_type, e.confidence,
                   e.relationship_id
              from edges e left join resolved n on n.name = e.far_name)
        select coalesce(jsonb_agg(to_jsonb(c) order by c.path_confidence desc, c.path), '[]'),
               (select count(*) from edges) into v_rows, v_read
          from (select d.* from (
                    select distinct on (s.next_key)
                           s.next_entity as entity, s.next_key as key, s.next_keys as keys,
                           f.path || s.next_entity as path,
                           f.relationship_path || s.relationship_type as relationship_path,
                           f.path_confidence * s.confidence as path_confidence,
                           s.relationship_id, s.confidence as edge_confidence
                      from frontier f
                      join step s on s.near_key = f.key
                     where f.path_confidence * s.confidence >= coalesce(p_min_path_confidence, 0)
                       and not v_visited ? s.next_key
                     order by s.next_key, f.path_confidence * s.confidence desc, f.path || s.next_entity,
                              s.relationship_type, s.relationship_id
                ) d
                order by d.path_confidence desc, d.path
                limit v_left) c;
        -- A walk over its edge budget is refused, not cut short (memsub._check_walk_edges).
        v_walked := v_walked + v_read;
        perform memsub._check_walk_edges(v_walked, v_max_edges, 'memsub.traverse_graph', p_max_depth,
                                         'max_depth',
                                         'ask for fewer hops, fewer relationship_types or a higher min_confidence');
        exit when jsonb_array_length(v_rows) = 0;
        return query
            select v_level, r.entity, r.path, r.relationship_path, r.path_confidence, r.relationship_id,
                   r.edge_confidence
              from jsonb_to_recordset(v_rows) as r(entity text, path text[], relationship_path text[],
                                                   path_confidence double precision, relationship_id uuid,
                                                   edge_confidence double precision)
             order by r.path_confidence desc, r.path;
        v_left := v_left - jsonb_array_length(v_rows);
        v_visited := v_visited || (select jsonb_object_agg(e ->> 'key', true) from jsonb_array_elements(v_rows) e);
        v_frontier := v_rows;
    end loop;
end
$$;
comment on function memsub.traverse_graph(text, integer, text[], double precision, text, double precision, integer, timestamptz) is
    'Entities reachable from an entity through the visible knowledge graph as of a time (as_of, default now: only '
    'edges valid then; entities by name or alias), breadth first: up to max_depth hops '
    '(default 3; from 1 to the max_depth limit) along outgoing, incoming or both directions, optionally only the '
    'given relationship types and edges with confidence >= min_confidence. Each entity is reported once, at its shortest '
    'distance, with its most confident shortest path (cycle-safe, linear in the edges walked; of equal ones, the '
    'first by entity names, then relationship type). path_confidence is '
    'the product of the edge confidences; paths below min_path_confidence stop. Shortest and most confident first, '
    'at most limit rows (default 1000; at most the max_rows limit). A walk reads at most the max_walk_edges limit '
    'of edges (valid at as_of and passing the filters), all hops together: one that would read more is refused '
    'with 54000 (column max_depth, detail limit=max_walk_edges value=N), not cut short.';

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
    v_tenant uuid := memsub._require_tenant_id();
    v_entity text := memsub._require_text(p_entity, 'entity');
    v_keys   text[];
    v_at     timestamptz := coalesce(p_as_of, now());
    v_max_edges bigint := memsub.limit_value('max_walk_edges');  -- edges one call may read, both directions
begin
    perform memsub._check_finite_time(p_as_of, 'as_of');
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('entity', p_entity);
    v_keys := memsub._entity_keys(v_entity);
    perform memsub._check_unit(p_min_confidence, 'min_confidence');
    perform memsub._check_count(p_limit, 'max_rows', 'limit');
    -- The other ends of the edges read are resolved in one call (memsub._resolve_entities), not one per row.
    return query
    -- Relationships are one kind, whichever their direction: at most limit of them, the most confident first.
    -- No index gives that order, so the edges are all read before limit chooses among them: each direction by
    -- its own index search, never more than one edge past max_walk_edges for both, and a call over it is
    -- refused, once, before they are sorted (memsub._check_walk_edges, the statement's one-time filter).
    with read as materialized (
        select 'outgoing'::text as direction, r.relationship_type, r.target_entity as other_entity,
               r.confidence, r.mention_count, r.relationship_id
          from memsub.entity_relationships r
         where r.tenant_id = v_tenant and r.source_key = any(v_keys) and r.valid_period @> v_at
           and r.confidence >= coalesce(p_min_confidence, 0)
        union all
        select 'incoming', r.relationship_type, r.source_entity, r.confidence, r.mention_count, r.relationship_id
          from memsub.entity_relationships r
         where r.tenant_id = v_tenant and r.target_key = any(v_keys) and r.valid_period @> v_at
           and r.confidence >= coalesce(p_min_confidence, 0)
         limit v_max_edges + 1),
    edges as (
        select 1 as part, row_number() over (order by d.confidence desc, d.direction, d.other_entity,
                                                      d.relationship_type, d.relationship_id) as place, d.*
          from (select e.* from read e
                 where memsub._check_walk_edges((select count(*) from read), v_max_edges,
                                                'memsub.entity_neighbourhood', null, 'entity',
                                                'ask for a higher min_confidence')
                 order by e.confidence desc, e.direction, e.other_entity, e.relationship_type, e.relationship_id
                 limit p_limit) d),
    resolved as (
        select n.name, n.entity from memsub._resolve_entities((select array_agg(e.other_entity) from edges e)) n)
    select x.kind, x.direction, x.relationship_type, x.other_entity, x.object, x.confidence, x.mention_count, x.id
      from ((select e.part, e.place, 'relationship'::text as kind, e.direction, e.relationship_type,
                    coalesce(n.entity, btrim(e.other_entity)) as other_entity, null::jsonb as object, e.confidence,
                    e.mention_count, e.relationship_id as id
               from edges e left join resolved n on n.name = e.other_entity)
            union all
            (select 3, row_number() over (order by f.confidence desc, f.predicate, f.object_normalized, f.fact_id),
                    'fact', 'subject', f.predicate,
                    null, f.object, f.confidence, f.supporting_packet_count, f.fact_id
               from memsub.knowledge_facts f
              where f.tenant_id = v_tenant and f.subject_normalized = any(v_keys)
                and f.confidence >= coalesce(p_min_confidence, 0)
              order by f.confidence desc, f.predicate, f.object_normalized, f.fact_id limit p_limit)) x
     order by x.part, x.place;
end
$$;
comment on function memsub.entity_neighbourhood(text, double precision, integer, timestamptz) is
    'One hop around an entity (by name or alias) as of a time (as_of, default now): its outgoing and incoming '
    'relationships valid then, both directions together, and the facts whose subject it is (subject matched by '
    'memsub.normalize_text): of each kind, relationships and facts, at most limit rows, the most confident first '
    '(ties: relationships by direction, other entity, then type; facts by predicate, then object). The '
    'relationships are all read before limit chooses among them, so a call reads at most the max_walk_edges limit '
    'of edges (valid at as_of, confidence >= min_confidence), both directions together: one that would read more is '
    'refused with 54000 (column entity, detail limit=max_walk_edges value=N), not cut short.';

grant execute on function
    memsub.traverse_graph(text, integer, text[], double precision, text, double precision, integer, timestamptz),
    memsub.entity_neighbourhood(text, double precision, integer, timestamptz)
    to memsub_app, memsub_analyst;
