-- Area: graph. Seed: seed 000 "KNOWLEDGE GRAPH LAYER" and "DATA FLOW DIAGRAM".
--
-- Retrieval pipeline, graph leg: paths through entity_relationships and the neighbourhood of an entity.
--
-- Breadth first over entities with a visited set: each entity is reached once, at its shortest distance, along
-- its most confident shortest path, so the work is linear in the edges of the entities it returns (enumerating
-- every path instead grows with the factorial of a dense graph's size: a complete graph of 10 entities has
-- about a million). Depth and the row limit bound the walk; both are capped by memsub.limits (max_depth,
-- max_rows). A level reads the edges of each of its entities in the order its rows are chosen in (most confident
-- first, from an index that holds that order, migration 2.45.0) and stops once it has the rows it may still
-- return, so a hub costs the limit, not its edges; the edges one walk reads, its levels together, are bounded too
-- (max_walk_edges): a walk that would read more is refused (54000), and stops reading one edge past the limit.
-- Confidence accumulates as the product of the edge confidences along the path (independent evidence, so a path
-- is as trustworthy as all its edges at once).
--
-- The searches that stop at a limit (here and in graph_neighbors_as_of, sql/420_temporal_graph.sql) compare the
-- matching form in collation C, byte equality as the database's own (deterministic) collation compares it too,
-- which only the ordered indexes of migration 2.45.0 are built in: a plan for few edges per entity may not take
-- the exclusion constraint's index and sort instead, and the functions turn bitmap scans off, which read every
-- entry of a hub's key before they stop. Names of an edge too long for those indexes (2,400 bytes together) are in
-- small indexes of their own, which each search reads whole beside the ordered one.
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
-- The edge searches read in an index's order and stop at their limit; a bitmap scan (which a plan for few
-- edges per entity may prefer) reads every entry of a hub's key before it stops.
set enable_bitmapscan = off
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
    v_take      bigint;  -- edges each of the level's searches reads, at most
    v_enough    boolean;  -- whether the searches read every edge the level's rows can come from
    -- What a walk refused over max_walk_edges is told to ask for instead (memsub._check_walk_edges, both checks).
    v_advice    constant text := 'ask for fewer hops, a smaller limit, fewer relationship_types or a higher '
                                 'min_confidence';
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
    perform memsub._check_limit((select sum(length(t)) from unnest(p_relationship_types) as t), 'max_text_chars',
                                'relationship_types');  -- together too, like every list of texts
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
        -- Each entity not yet reached, once, along its most confident step from the last level. The edges of each
        -- key of the level are one search per direction of an index in the order that step is chosen by
        -- (idx_entity_relationships_out_by_confidence, _in_by_confidence, migration 2.45.0), stopping at v_take
        -- edges, beside the few edges too long for those indexes (_out_long, _in_long), which it reads whole. The
        -- searches read first as many edges as the level may still return rows; a search whose edges lead back to
        -- entities already reached, or to one entity several times, may not have read every edge the rows can come
        -- from, and the level is read again with searches twice as long (memsub.traverse_graph's v_enough below).
        v_take := v_left;
        loop
            with frontier as (  -- the last level's entities, one row per key
                select f.path, f.relationship_path, f.path_confidence, k.key
                  from jsonb_to_recordset(v_frontier)
                       as f(keys text[], path text[], relationship_path text[], path_confidence double precision)
                 cross join lateral (select distinct u.key from unnest(f.keys) as u(key)) k),
            -- Each key once, with the confidence below which none of its edges keeps a path at min_path_confidence
            -- (from the most confident path that reaches the key; a little lower than the quotient, which is rounded:
            -- the rows are held to the product itself below).
            near as (
                select f.key,
                       greatest(coalesce(p_min_confidence, 0),
                                case when coalesce(p_min_path_confidence, 0) <= 0 then 0
                                     when p_min_path_confidence <= max(f.path_confidence)
                                         then p_min_path_confidence / max(f.path_confidence) * (1 - 1e-12)
                                     else 2 end) as floor
                  from frontier f
                 group by f.key),
            -- The level's edges, never more than one past what the walk may still read (max_walk_edges): in each
            -- search's order, ordered (false for the edges too long for the ordered indexes).
            edges as materialized (
                select e.* from (
                    select 'outgoing'::text as dir, n.key as near_key, r.*
                      from near n
                     cross join lateral (
                         (select o.target_entity as far_name, o.target_key as far_key, o.relationship_type,
                                 o.confidence, o.relationship_id, true as ordered
                            from memsub.entity_relationships o
                           where p_direction in ('outgoing', 'both') and o.tenant_id = v_tenant
                             and o.source_key collate "C" = n.key and o.valid_period @> v_at and o.confidence >= n.floor
                             and (p_relationship_types is null or o.relationship_type = any(v_types))
                             and octet_length(o.source_key) + octet_length(o.source_entity)
                                 + octet_length(o.relationship_type) + octet_length(o.target_key)
                                 + octet_length(o.target_entity) <= 2400
                           order by o.confidence desc, o.target_entity, o.relationship_type, o.relationship_id
                           limit v_take)
                         union all
                         select o.target_entity, o.target_key, o.relationship_type, o.confidence, o.relationship_id,
                                false
                           from memsub.entity_relationships o
                          where p_direction in ('outgoing', 'both') and o.tenant_id = v_tenant
                            and o.source_key collate "C" = n.key and o.valid_period @> v_at and o.confidence >= n.floor
                            and (p_relationship_types is null or o.relationship_type = any(v_types))
                            and octet_length(o.source_key) + octet_length(o.source_entity)
                                + octet_length(o.relationship_type) + octet_length(o.target_key)
                                + octet_length(o.target_entity) > 2400) r
                    union all
                    select 'incoming', n.key, r.*
                      from near n
                     cross join lateral (
                         (select i.source_entity, i.source_key, i.relationship_type, i.confidence,
                                 i.relationship_id, true
                            from memsub.entity_relationships i
                           where p_direction in ('incoming', 'both') and i.tenant_id = v_tenant
                             and i.target_key collate "C" = n.key and i.valid_period @> v_at and i.confidence >= n.floor
                             and (p_relationship_types is null or i.relationship_type = any(v_types))
                             and octet_length(i.source_key) + octet_length(i.source_entity)
                                 + octet_length(i.relationship_type) + octet_length(i.target_key)
                                 + octet_length(i.target_entity) <= 2400
                           order by i.confidence desc, i.source_entity, i.relationship_type, i.relationship_id
                           limit v_take)
                         union all
                         select i.source_entity, i.source_key, i.relationship_type, i.confidence, i.relationship_id,
                                false
                           from memsub.entity_relationships i
                          where p_direction in ('incoming', 'both') and i.tenant_id = v_tenant
                            and i.target_key collate "C" = n.key and i.valid_period @> v_at and i.confidence >= n.floor
                            and (p_relationship_types is null or i.relationship_type = any(v_types))
                            and octet_length(i.source_key) + octet_length(i.source_entity)
                                + octet_length(i.relationship_type) + octet_length(i.target_key)
                                + octet_length(i.target_entity) > 2400) r) e
                 limit v_max_edges - v_walked + 1),
            -- With Entity nodes: the names on them resolved in one call, not one per edge, each to the entity it
            -- stands for, that entity's matching form, and the keys the next level's edges name it by.
            resolved as materialized (
                select n.name, n.entity, memsub.normalize_text(n.entity) as key, n.keys
                  from memsub._resolve_entities(array(select e.far_name from edges e)) n
                 where v_nodes),
            -- A walk over its edge budget is refused, not cut short, before anything is resolved or sorted
            -- (memsub._check_walk_edges, the statement's one-time filter; and below with the tail's edges).
            step as (
                select e.dir, e.near_key, e.far_name, coalesce(n.entity, e.far_name) as next_entity,
                       coalesce(n.key, e.far_key) as next_key, coalesce(n.keys, array[e.far_key]) as next_keys,
                       e.relationship_type, e.confidence, e.relationship_id, e.ordered
                  from edges e left join resolved n on n.name = e.far_name
                 where memsub._check_walk_edges(v_walked + (select count(*) from edges), v_max_edges,
                                                'memsub.traverse_graph', p_max_depth, 'max_depth', v_advice)),
            -- Whether each search read enough, for each entity of the last level with its key: a search that
            -- stopped short of v_take read all its edges; otherwise the rows it read must hold v_left entities not
            -- reached yet (the boundary: the first step to the v_left-th of them, in the search's order), and
            -- every edge it did not read must rank after them. Those come after the boundary in the search's order:
            -- of a lower path confidence (with Entity nodes, the names they resolve to may order steps of one path
            -- confidence otherwise, so the search must have read past the boundary's confidence), or of the same
            -- edge confidence and a later name as written. Only edge confidences within rounding of the
            -- boundary's can give its path confidence again (tail below); a path confidence of 0 or below
            -- the normal range of double precision leaves no order to rely on.
            searched as (
                select s.dir, s.near_key, count(*) filter (where s.ordered) < v_take as whole,
                       min(s.confidence) filter (where s.ordered) as last_confidence
                  from step s
                 group by s.dir, s.near_key),
            candidates as (
                select s.dir, s.near_key, f.path, f.path_confidence as from_confidence, s.next_key, s.confidence,
                       f.path_confidence * s.confidence as path_confidence,
                       row_number() over (partition by s.dir, s.near_key, f.path
                                          order by s.confidence desc, s.far_name, s.relationship_type,
                                                   s.relationship_id) as place
                  from frontier f
                  join step s on s.near_key = f.key and s.ordered
                 where f.path_confidence * s.confidence >= coalesce(p_min_path_confidence, 0)
                   and not v_visited ? s.next_key),
            firsts as (
                select c.*, count(*) over (partition by c.dir, c.near_key, c.path order by c.place) as reached
                  from (select distinct on (c.dir, c.near_key, c.path, c.next_key) c.*
                          from candidates c
                         order by c.dir, c.near_key, c.path, c.next_key, c.place) c),
            boundary as (
                select b.dir, b.near_key, b.path, b.from_confidence, b.confidence, b.path_confidence
                  from firsts b
                 where b.reached = v_left),
            verdict as (
                select s.dir, s.near_key, f.path,
                       s.whole
                       or coalesce(b.path_confidence > f.path_confidence * s.last_confidence, false)
                       or coalesce(not v_nodes and b.path_confidence >= 2.2250738585072014e-308, false) as enough,
                       -- the edges whose confidence rounds to the boundary's path confidence too
                       coalesce(not s.whole and not v_nodes and b.from_confidence <> 1
                                and b.path_confidence >= 2.2250738585072014e-308
                                and b.path_confidence <= f.path_confidence * s.last_confidence, false) as tail,
                       b.confidence as boundary_confidence,
                       (select n.floor from near n where n.key = s.near_key) as floor
                  from searched s
                  join frontier f on f.key = s.near_key
                  left join boundary b on b.dir = s.dir and b.near_key = s.near_key and b.path = f.path),
            tail as materialized (  -- once per search, whichever entities of the last level share its key
                select distinct t.dir, t.near_key, r.*
                  from (select distinct v.dir, v.near_key, v.boundary_confidence, v.floor from verdict v where v.tail) t
                 cross join lateral (
                     select o.target_entity as far_name, o.target_key as far_key, o.relationship_type, o.confidence,
                            o.relationship_id, true as ordered
                       from memsub.entity_relationships o
                      where t.dir = 'outgoing' and o.tenant_id = v_tenant and o.source_key collate "C" = t.near_key
                        and o.valid_period @> v_at and o.confidence >= t.floor
                        and o.confidence < t.boundary_confidence
                        and o.confidence >= t.boundary_confidence * (1 - 1e-12)
                        and (p_relationship_types is null or o.relationship_type = any(v_types))
                        and octet_length(o.source_key) + octet_length(o.source_entity)
                            + octet_length(o.relationship_type) + octet_length(o.target_key)
                            + octet_length(o.target_entity) <= 2400
                     union all
                     select i.source_entity, i.source_key, i.relationship_type, i.confidence, i.relationship_id, true
                       from memsub.entity_relationships i
                      where t.dir = 'incoming' and i.tenant_id = v_tenant and i.target_key collate "C" = t.near_key
                        and i.valid_period @> v_at and i.confidence >= t.floor
                        and i.confidence < t.boundary_confidence
                        and i.confidence >= t.boundary_confidence * (1 - 1e-12)
                        and (p_relationship_types is null or i.relationship_type = any(v_types))
                        and octet_length(i.source_key) + octet_length(i.source_entity)
                            + octet_length(i.relationship_type) + octet_length(i.target_key)
                            + octet_length(i.target_entity) <= 2400) r
                 where not exists (select from edges e
                                    where e.dir = t.dir and e.near_key = t.near_key
                                      and e.relationship_id = r.relationship_id)),
            steps as (  -- without Entity nodes (the only case with a tail), a name is its own entity
                select s.near_key, s.next_entity, s.next_key, s.next_keys, s.relationship_type, s.confidence,
                       s.relationship_id
                  from step s
                union all
                select t.near_key, t.far_name, t.far_key, array[t.far_key], t.relationship_type, t.confidence,
                       t.relationship_id
                  from tail t)
            select coalesce(jsonb_agg(to_jsonb(c) order by c.path_confidence desc, c.path), '[]'),
                   (select count(*) from edges) + (select count(*) from tail),
                   coalesce((select bool_and(v.enough) from verdict v), true)
              into v_rows, v_read, v_enough
              from (select d.* from (
                        select distinct on (s.next_key)
                               s.next_entity as entity, s.next_key as key, s.next_keys as keys,
                               f.path || s.next_entity as path,
                               f.relationship_path || s.relationship_type as relationship_path,
                               f.path_confidence * s.confidence as path_confidence,
                               s.relationship_id, s.confidence as edge_confidence
                          from frontier f
                          join steps s on s.near_key = f.key
                         where f.path_confidence * s.confidence >= coalesce(p_min_path_confidence, 0)
                           and not v_visited ? s.next_key
                         order by s.next_key, f.path_confidence * s.confidence desc, f.path || s.next_entity,
                                  s.relationship_type, s.relationship_id
                    ) d
                    order by d.path_confidence desc, d.path
                    limit v_left) c;
            -- With the tail's edges (memsub._check_walk_edges).
            perform memsub._check_walk_edges(v_walked + v_read, v_max_edges, 'memsub.traverse_graph', p_max_depth,
                                             'max_depth', v_advice);
            exit when v_enough;
            v_take := 2 * v_take;
        end loop;
        v_walked := v_walked + v_read;
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
    'at most limit rows (default 1000; at most the max_rows limit). A level reads the edges of each entity most '
    'confident first and stops once it has the rows it may still return; a walk reads at most the max_walk_edges '
    'limit of edges (valid at as_of and passing the filters), all hops together: one that would read more is '
    'refused with 54000 (column max_depth, detail limit=max_walk_edges value=N), not cut short.';

create or replace function memsub.entity_neighbourhood(
    p_entity         text,
    p_min_confidence double precision default 0.0,
    p_limit          integer          default 100,
    p_as_of          timestamptz      default null
) returns table (kind text, direction text, relationship_type text, other_entity text, object jsonb,
                 confidence double precision, mention_count integer, id uuid)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
-- The edge searches read in an index's order and stop at their limit; a bitmap scan (which a plan for few
-- edges per entity may prefer) reads every entry of a hub's key before it stops.
set enable_bitmapscan = off
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
    v_keys := memsub._entity_keys(v_entity);  -- alone: in a statement, planning would call it once more
    perform memsub._check_unit(p_min_confidence, 'min_confidence');
    perform memsub._check_count(p_limit, 'max_rows', 'limit');
    -- The other ends of the edges read are resolved in one call (memsub._resolve_entities), not one per row.
    return query
    -- Relationships are one kind, whichever their direction: at most limit of them, the most confident first.
    -- Each matching form of the entity and each direction is one search of an index in that order
    -- (idx_entity_relationships_out_by_confidence, _in_by_confidence, migration 2.45.0) that stops at limit,
    -- beside the few edges too long for it (_out_long, _in_long), which it reads whole. What the searches read
    -- together never passes max_walk_edges by more than one edge, and a call over it is refused, once, before
    -- anything is sorted (memsub._check_walk_edges, the statement's one-time filter).
    with read as materialized (
        select e.* from (
            select 'outgoing'::text as direction, r.relationship_type, r.target_entity as other_entity,
                   r.confidence, r.mention_count, r.relationship_id
              from unnest(v_keys) as k(key)
             cross join lateral (
                 (select o.relationship_type, o.target_entity, o.confidence, o.mention_count, o.relationship_id
                    from memsub.entity_relationships o
                   where o.tenant_id = v_tenant and o.source_key collate "C" = k.key and o.valid_period @> v_at
                     and o.confidence >= coalesce(p_min_confidence, 0)
                     and octet_length(o.source_key) + octet_length(o.source_entity)
                         + octet_length(o.relationship_type) + octet_length(o.target_key)
                         + octet_length(o.target_entity) <= 2400
                   order by o.confidence desc, o.target_entity, o.relationship_type, o.relationship_id
                   limit p_limit)
                 union all
                 select o.relationship_type, o.target_entity, o.confidence, o.mention_count, o.relationship_id
                   from memsub.entity_relationships o
                  where o.tenant_id = v_tenant and o.source_key collate "C" = k.key and o.valid_period @> v_at
                    and o.confidence >= coalesce(p_min_confidence, 0)
                    and octet_length(o.source_key) + octet_length(o.source_entity)
                        + octet_length(o.relationship_type) + octet_length(o.target_key)
                        + octet_length(o.target_entity) > 2400) r
            union all
            select 'incoming', r.relationship_type, r.source_entity, r.confidence, r.mention_count, r.relationship_id
              from unnest(v_keys) as k(key)
             cross join lateral (
                 (select i.relationship_type, i.source_entity, i.confidence, i.mention_count, i.relationship_id
                    from memsub.entity_relationships i
                   where i.tenant_id = v_tenant and i.target_key collate "C" = k.key and i.valid_period @> v_at
                     and i.confidence >= coalesce(p_min_confidence, 0)
                     and octet_length(i.source_key) + octet_length(i.source_entity)
                         + octet_length(i.relationship_type) + octet_length(i.target_key)
                         + octet_length(i.target_entity) <= 2400
                   order by i.confidence desc, i.source_entity, i.relationship_type, i.relationship_id
                   limit p_limit)
                 union all
                 select i.relationship_type, i.source_entity, i.confidence, i.mention_count, i.relationship_id
                   from memsub.entity_relationships i
                  where i.tenant_id = v_tenant and i.target_key collate "C" = k.key and i.valid_period @> v_at
                    and i.confidence >= coalesce(p_min_confidence, 0)
                    and octet_length(i.source_key) + octet_length(i.source_entity)
                        + octet_length(i.relationship_type) + octet_length(i.target_key)
                        + octet_length(i.target_entity) > 2400) r) e
         limit v_max_edges + 1),
    edges as (
        select 1 as part, row_number() over (order by d.confidence desc, d.direction, d.other_entity,
                                                      d.relationship_type, d.relationship_id) as place, d.*
          from (select e.* from read e
                 where memsub._check_walk_edges((select count(*) from read), v_max_edges,
                                                'memsub.entity_neighbourhood', null, 'entity',
                                                'ask for a smaller limit or a higher min_confidence')
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
            -- The facts of each matching form likewise, in the order of idx_knowledge_facts_by_confidence, up to
            -- limit, beside the few too long for it (idx_knowledge_facts_long).
            (select 3, row_number() over (order by f.confidence desc, f.predicate, f.object_normalized, f.fact_id),
                    'fact', 'subject', f.predicate,
                    null, f.object, f.confidence, f.supporting_packet_count, f.fact_id
               from unnest(v_keys) as k(key)
              cross join lateral (
                  (select g.predicate, g.object, g.object_normalized, g.confidence, g.supporting_packet_count,
                          g.fact_id
                     from memsub.knowledge_facts g
                    where g.tenant_id = v_tenant and g.subject_normalized collate "C" = k.key
                      and g.confidence >= coalesce(p_min_confidence, 0)
                      and octet_length(g.subject_normalized) + octet_length(g.predicate)
                          + octet_length(g.object_normalized) <= 2400
                    order by g.confidence desc, g.predicate, g.object_normalized, g.fact_id
                    limit p_limit)
                  union all
                  select g.predicate, g.object, g.object_normalized, g.confidence, g.supporting_packet_count,
                         g.fact_id
                    from memsub.knowledge_facts g
                   where g.tenant_id = v_tenant and g.subject_normalized collate "C" = k.key
                     and g.confidence >= coalesce(p_min_confidence, 0)
                     and octet_length(g.subject_normalized) + octet_length(g.predicate)
                         + octet_length(g.object_normalized) > 2400) f
              order by f.confidence desc, f.predicate, f.object_normalized, f.fact_id limit p_limit)) x
     order by x.part, x.place;
end
$$;
comment on function memsub.entity_neighbourhood(text, double precision, integer, timestamptz) is
    'One hop around an entity (by name or alias) as of a time (as_of, default now): its outgoing and incoming '
    'relationships valid then, both directions together, and the facts whose subject it is (subject matched by '
    'memsub.normalize_text): of each kind, relationships and facts, at most limit rows, the most confident first '
    '(ties: relationships by direction, other entity, then type; facts by predicate, then object), read in that '
    'order: at most limit of each kind for each name of the entity and each direction. A call reads at most the '
    'max_walk_edges limit of edges (valid at as_of, confidence >= min_confidence), both directions together: one '
    'that would read more is refused with 54000 (column entity, detail limit=max_walk_edges value=N), not cut '
    'short.';

grant execute on function
    memsub.traverse_graph(text, integer, text[], double precision, text, double precision, integer, timestamptz),
    memsub.entity_neighbourhood(text, double precision, integer, timestamptz)
    to memsub_app, memsub_analyst;
