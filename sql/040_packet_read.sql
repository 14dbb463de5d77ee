-- Reading packets: by id, a thread in order, lineage ancestors and descendants.
-- All reads are SECURITY INVOKER: row-level security decides what the caller sees.

create or replace function memsub.get_packet(p_packet_id uuid) returns setof memsub.packet_store
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$ select s.* from memsub.packet_store s where s.packet_id = p_packet_id $$;
comment on function memsub.get_packet(uuid) is 'The packet with this id, if the caller may see it (no row otherwise).';

create or replace function memsub.get_thread(
    p_thread_id uuid, p_limit integer default 1000, p_after timestamptz default null
) returns setof memsub.packet_store
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_limit is null or p_limit < 1 then
        raise exception 'memsub.get_thread: limit must be at least 1, not %', p_limit
            using errcode = '22023', column = 'limit';
    end if;
    perform memsub.check_limit(p_limit, 'max_rows', 'limit');
    perform memsub.check_finite_time(p_after, 'after');
    return query
        select s.* from memsub.packet_store s
         where s.thread_id = p_thread_id
           and (p_after is null or s."timestamp" > p_after)
         order by s."timestamp", s.packet_id
         limit p_limit;
end
$$;
comment on function memsub.get_thread(uuid, integer, timestamptz) is
    'Replays a conversation thread: its visible packets in time order (optionally after a time, at most limit rows).';

create or replace function memsub.get_lineage(
    p_packet_id uuid, p_direction text default 'ancestors', p_max_depth integer default 16
) returns table (packet_id uuid, depth integer, packet_type text, "timestamp" timestamptz,
                 parent_ids uuid[], thread_id uuid)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    start_tenant uuid;
    frontier     uuid[];
    visited      jsonb;  -- packet id -> true: a set with logarithmic lookups
    reached      integer := 0;
    level        integer := 0;
begin
    if p_direction is null or p_direction not in ('ancestors', 'descendants') then
        raise exception 'memsub.get_lineage: direction must be ancestors or descendants, not %', p_direction
            using errcode = '22023', column = 'direction';
    end if;
    if p_max_depth is null or p_max_depth < 1 then
        raise exception 'memsub.get_lineage: max_depth must be at least 1, not %', p_max_depth
            using errcode = '22023', column = 'max_depth';
    end if;
    perform memsub.check_limit(p_max_depth, 'max_lineage_depth', 'max_depth');
    select s.tenant_id into start_tenant from memsub.packet_store s where s.packet_id = p_packet_id limit 1;
    if start_tenant is null then
        return;
    end if;
    frontier := array[p_packet_id];
    visited := jsonb_build_object(p_packet_id, true);
    -- Breadth-first walk with a visited set: each packet is reported once, at its shortest distance, and
    -- a cycle in (legacy) lineage data cannot loop.
    while level < p_max_depth and cardinality(frontier) > 0 loop
        level := level + 1;
        if p_direction = 'ancestors' then
            frontier := array(
                select distinct p.packet_id
                  from memsub.packet_store c
                  join memsub.packet_store p on p.tenant_id = c.tenant_id and p.packet_id = any(c.parent_ids)
                 where c.tenant_id = start_tenant and c.packet_id = any(frontier)
                   and not visited ? p.packet_id::text);
        else
            frontier := array(
                select distinct c.packet_id
                  from memsub.packet_store c
                 where c.tenant_id = start_tenant and c.parent_ids && frontier
                   and not visited ? c.packet_id::text);
        end if;
        -- At most max_rows packets per call: a lineage larger than that is refused, not cut short silently.
        reached := reached + cardinality(frontier);
        if reached > memsub.limit_value('max_rows') then
            raise exception 'memsub.get_lineage: more than % packets within max_depth %; ask for fewer generations',
                memsub.limit_value('max_rows'), p_max_depth
                using errcode = '54000', column = 'max_depth',
                      detail = format('limit=max_rows value=%s', memsub.limit_value('max_rows')),
                      hint = 'Limits are set per installation in memsub.limits (docs/security.md, "Limits").';
        end if;
        visited := visited || coalesce((select jsonb_object_agg(f, true) from unnest(frontier) as f), '{}');
        return query
            select s.packet_id, level, s.packet_type, s."timestamp", s.parent_ids, s.thread_id
              from memsub.packet_store s
             where s.tenant_id = start_tenant and s.packet_id = any(frontier)
             order by s."timestamp", s.packet_id;
    end loop;
end
$$;
comment on function memsub.get_lineage(uuid, text, integer) is
    'Lineage of a packet: its ancestors (following parent_ids) or descendants, breadth first, each once with its '
    'distance (depth), bounded by max_depth (limit max_lineage_depth) and safe against cycles; more than max_rows '
    'packets is refused (54000). Only packets visible to the caller are walked.';
