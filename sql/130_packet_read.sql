-- Area: packets. Seed: seed 004 "PacketLineage (v1.1.0)" and invariants 4-5; seed 000 "CORE MEMORY LAYER"
--   (packet_store).
--
-- Reading packets: by id, a thread in order, lineage ancestors and descendants.
-- All reads are SECURITY INVOKER: row-level security decides what the caller sees. get_packets (get_packet) and
-- get_thread return the envelope as written: the embedding vectors are put back by memsub._packets_as_written,
-- once for all the rows a call returns, and the header fields kept only in columns. get_packets (get_packet) with p_with_vectors false return the rows as
-- stored instead (vectors JSON null), for callers that need the content, not the vectors.

-- The row-by-row put-back (a PL/pgSQL row wrapper around a SQL function, two calls per row) is replaced by the
-- set-based one below.
drop function if exists memsub._packet_with_vectors(memsub.packet_store);
drop function if exists memsub._envelope_vectors_joined(uuid, uuid, jsonb);

-- _packets_as_written gained p_with_vectors (a new argument is a new signature: drop and create).
drop function if exists memsub._packets_as_written(memsub.packet_store[]);

create or replace function memsub._packets_as_written(p_packets memsub.packet_store[],
                                                       p_with_vectors boolean default true)
returns setof memsub.packet_store
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    -- Vectors are stored once (sql/120_packet_write.sql): each memory.embeddings[] object whose vector is JSON
    -- null gets the vector of its (embedding_type, chunk_index) slot, read from memory_embeddings as the caller
    -- (row-level security applies), as the exact doubles of its single-precision numbers; null when no row
    -- holds it. Other elements, and envelopes without an embeddings array, are returned as stored.
    -- The header fields stored only in columns are put back first (the envelope's own, if it has them, win).
    -- With p_with_vectors false only the header fields are put back: each vector stays JSON null.
    select p.packet_id, p.packet_type,
           jsonb_build_object('packet_id', p.packet_id, 'packet_type', p.packet_type, 'scope', p.scope,
                              'timestamp', to_char(p."timestamp" at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) ||
           case when p_with_vectors and jsonb_typeof(p.envelope -> 'memory' -> 'embeddings') = 'array' then
               jsonb_set(p.envelope, '{memory,embeddings}', (
                   select coalesce(jsonb_agg(
                              case when jsonb_typeof(x.e) = 'object' and x.e -> 'vector' = 'null'::jsonb then
                                  jsonb_set(x.e, '{vector}', coalesce((
                                      select to_jsonb(m.vector::real[]::double precision[])
                                        from memsub.memory_embeddings m
                                       where m.tenant_id = p.tenant_id and m.packet_id = p.packet_id
                                         and m.embedding_type = x.e ->> 'embedding_type'
                                         and m.chunk_index = memsub._embedding_chunk_index(x.e)), 'null'))
                              else x.e end order by x.o), '[]')
                     from jsonb_array_elements(p.envelope -> 'memory' -> 'embeddings') with ordinality as x(e, o)))
           else p.envelope end,
           p."timestamp", p.routing, p.provenance, p.thread_id, p.parent_ids, p.tags, p.ttl, p.scope,
           p.importance_score, p.access_count, p.last_accessed, p.contradiction_count, p.content_hash,
           p.chunk_count, p.is_chunked, p.tenant_id, p.org_id, p.user_id, p.correlation_id, p.session_id,
           p.trace_id, p.write_seq
      from unnest(p_packets) with ordinality as p
     order by p.ordinality
$$;
comment on function memsub._packets_as_written(memsub.packet_store[], boolean) is
    'The packet_store rows given, in their order, each with its envelope as written: the header fields kept only '
    'in columns put back, and (with_vectors, default true) every memory.embeddings[] vector stored as null read '
    'back from memory_embeddings (the exact value of each single-precision number; row-level security applies). '
    'The one put-back of the readers (get_packets, get_packet, get_thread).';

-- get_packets and get_packet gained p_with_vectors (a new argument is a new signature: drop and create).
drop function if exists memsub.get_packet(uuid);
drop function if exists memsub.get_packets(uuid[]);

create or replace function memsub.get_packets(p_packet_ids uuid[], p_with_vectors boolean default true)
returns setof memsub.packet_store
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    v_tenant uuid := memsub.current_tenant_id();
    v_every_tenant boolean;
    v_rows memsub.packet_store[];
begin
    perform memsub._check_limit(cardinality(p_packet_ids), 'max_rows', 'packet_ids');
    -- The key is (tenant_id, packet_id): with the context tenant each id is one index search; by packet_id alone
    -- it would be a skip scan over every tenant. A platform_admin (or a call without a tenant) may see every
    -- tenant, so it searches by packet_id alone; row-level security decides what is visible either way. Only
    -- the branch chosen here runs (the other is a one-time filter that is false).
    v_every_tenant := v_tenant is null or memsub.is_platform_admin();
    -- Each visible packet once, in the order of its first mention; unknown and invisible ids give no row. The
    -- plan is the same for every call (a nested loop of key searches), so it is made once per session (generic),
    -- not planned again for each call: planning would cost more than reading one packet. The rows are found
    -- once; with_vectors decides only what is done with them.
    v_rows := array(
        select s::memsub.packet_store
          from (select i.id, min(i.n) as n from unnest(p_packet_ids) with ordinality i(id, n) group by i.id) w
         cross join lateral (
                -- One key search per id (LIMIT 1 keeps the lookup a parameterized nested loop: as a join the
                -- planner may prefer to read every row of a big tenant).
                (select s.* from memsub.packet_store s
                  where not v_every_tenant and s.tenant_id = v_tenant and s.packet_id = w.id limit 1)
                union all
                select s.* from memsub.packet_store s where v_every_tenant and s.packet_id = w.id) s
         order by w.n);
    -- memsub._packets_as_written puts the header fields back, and the vectors unless p_with_vectors is false
    -- (then memory_embeddings is not read and each vector stored apart stays JSON null), for all the rows found
    -- in one call.
    return query select * from memsub._packets_as_written(v_rows, coalesce(p_with_vectors, true));
end
$$;
comment on function memsub.get_packets(uuid[], boolean) is
    'The visible packets among these ids, each once, in the order of its first mention (unknown or invisible ids '
    'give no row); at most max_rows ids per call (54000 beyond). One index search of the context tenant''s key '
    'per id. with_vectors (default true; NULL counts as true) puts each memory.embeddings[] vector back into the '
    'envelope (memsub._packets_as_written); false returns the rows as stored, where a vector stored in '
    'memory_embeddings is JSON null (envelopes written before 2.24.0 keep theirs) and every other field is the same '
    '(the header fields kept only in columns put back).';

create or replace function memsub.get_packet(p_packet_id uuid, p_with_vectors boolean default true)
returns setof memsub.packet_store
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$ select * from memsub.get_packets(array[p_packet_id], p_with_vectors) $$;
comment on function memsub.get_packet(uuid, boolean) is
    'The packet with this id, if the caller may see it (no row otherwise): memsub.get_packets of one id. '
    'with_vectors (default true) returns its envelope as written, vectors put back; false, the row as stored '
    '(memory.embeddings[] vectors are JSON null).';

drop function if exists memsub.get_thread(uuid, integer, timestamptz);
create or replace function memsub.get_thread(
    p_thread_id uuid, p_limit integer default 1000, p_after_cursor bigint default null
) returns setof memsub.packet_store
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_limit is null or p_limit < 1 then
        raise exception 'memsub.get_thread: limit must be at least 1, not %', p_limit
            using errcode = '22023', column = 'limit';
    end if;
    perform memsub._check_limit(p_limit, 'max_rows', 'limit');
    -- Write order: packets written in one transaction share their timestamp, but never their write_seq, and a
    -- parent is always written before its children. The cursor is the write_seq of the last row read.
    return query
        select * from memsub._packets_as_written(array(
            select s from memsub.packet_store s
             where s.thread_id = p_thread_id
               and (p_after_cursor is null or s.write_seq > p_after_cursor)
             order by s.write_seq
             limit p_limit));
end
$$;
comment on function memsub.get_thread(uuid, integer, bigint) is
    'Replays a conversation thread: its visible, unexpired packets in write order (parents before children), at '
    'most limit rows after the cursor (the write_seq of the last row already read; NULL: from the start).';

drop function if exists memsub.lineage_nodes(uuid[]);
create or replace function memsub.lineage_nodes(p_tenant_id uuid, p_packet_ids uuid[])
returns table (tenant_id uuid, packet_id uuid, packet_type text, "timestamp" timestamptz, parent_ids uuid[],
               thread_id uuid, generation integer, state text)
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
    select s.tenant_id, s.packet_id, s.packet_type, s."timestamp", s.parent_ids, s.thread_id,
           coalesce((s.envelope -> 'lineage' ->> 'generation')::integer, 0),
           case when s.ttl is not null and s.ttl <= (now() at time zone 'UTC') then 'expired' else 'live' end
      from memsub.packet_store s
     where s.tenant_id = p_tenant_id and s.packet_id = any(p_packet_ids)
    union all
    select t.tenant_id, t.packet_id, t.packet_type, t."timestamp", t.parent_ids, t.thread_id, t.generation, 'purged'
      from memsub.packet_tombstones t
     where t.tenant_id = p_tenant_id and t.packet_id = any(p_packet_ids)
$$;
comment on function memsub.lineage_nodes(uuid, uuid[]) is
    'Internal to get_lineage: the lineage skeleton of the named packets of a tenant that the current role may see, '
    'live, expired or purged (from packet_tombstones). Not granted to clients.';

drop function if exists memsub.get_lineage(uuid, text, integer);
create or replace function memsub.get_lineage(
    p_packet_id uuid, p_direction text default 'ancestors', p_max_depth integer default 16
) returns table (packet_id uuid, depth integer, packet_type text, "timestamp" timestamptz,
                 parent_ids uuid[], thread_id uuid, generation integer, state text)
language plpgsql stable security definer
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
    perform memsub._check_limit(p_max_depth, 'max_lineage_depth', 'max_depth');
    -- Runs as memsub_expiry_owner: the tenant, org and scope policies apply as for the caller, but expired
    -- packets are walked too. Only their lineage skeleton is returned, which is what a tombstone keeps.
    select s.tenant_id into start_tenant from memsub.packet_store s where s.packet_id = p_packet_id limit 1;
    if start_tenant is null then
        select t.tenant_id into start_tenant from memsub.packet_tombstones t where t.packet_id = p_packet_id limit 1;
    end if;
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
                select distinct n.packet_id
                  from memsub.lineage_nodes(start_tenant, frontier) c
                  join memsub.lineage_nodes(start_tenant, c.parent_ids) n on true
                 where not visited ? n.packet_id::text);
        else
            frontier := array(
                select distinct c.packet_id
                  from memsub.packet_store c
                 where c.tenant_id = start_tenant and c.parent_ids && frontier
                   and not visited ? c.packet_id::text
                 union
                select t.packet_id
                  from memsub.packet_tombstones t
                 where t.tenant_id = start_tenant and t.parent_ids && frontier
                   and not visited ? t.packet_id::text);
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
            select n.packet_id, level, n.packet_type, n."timestamp", n.parent_ids, n.thread_id, n.generation, n.state
              from memsub.lineage_nodes(start_tenant, frontier) n
             order by n."timestamp", n.packet_id;
    end loop;
end
$$;
comment on function memsub.get_lineage(uuid, text, integer) is
    'Lineage of a packet: its ancestors (following parent_ids) or descendants, breadth first, each once with its '
    'distance (depth), bounded by max_depth (limit max_lineage_depth) and safe against cycles; more than max_rows '
    'packets is refused (54000). Only packets visible to the caller are walked. state is live, expired (ttl '
    'passed, not yet purged) or purged (only its tombstone remains); expired and purged nodes report only their '
    'lineage skeleton.';
alter function memsub.get_lineage(uuid, text, integer) owner to memsub_expiry_owner;
alter function memsub.lineage_nodes(uuid, uuid[]) owner to memsub_expiry_owner;

-- Packets referenced by the rows of other areas ----------------------------------------------------------------
-- Events, traces, facts, relationships, embeddings and the other rows that name a packet take it through
-- memsub.visible_packet: a packet the caller cannot see is indistinguishable from a missing one (23503).

create or replace function memsub.visible_packet(p_packet_id uuid, p_field text) returns memsub.packet_store
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    found_packet memsub.packet_store;
begin
    if p_packet_id is null then
        return null;
    end if;
    select s.* into found_packet from memsub.packet_store s
     where s.tenant_id = memsub._require_tenant_id() and s.packet_id = p_packet_id;
    if not found then
        raise exception 'field "%": packet % does not exist or is not visible to this writer', p_field, p_packet_id
            using errcode = '23503', column = p_field;
    end if;
    return found_packet;
end
$$;
comment on function memsub.visible_packet(uuid, text) is
    'The packet with this id when the caller may see it (NULL for a NULL id); raises 23503 naming the field otherwise.';

create or replace function memsub.require_shared_packet(p_packet memsub.packet_store, p_field text)
returns memsub.packet_store
language plpgsql immutable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_packet.packet_id is not null and p_packet.scope <> 'shared' then
        raise exception 'field "%": packet % has scope %; tenant-wide knowledge can only come from shared packets',
            p_field, p_packet.packet_id, p_packet.scope
            using errcode = '22023', column = p_field;
    end if;
    return p_packet;
end
$$;
comment on function memsub.require_shared_packet(memsub.packet_store, text) is
    'Refuses (22023) a cursor or l-private packet as the source of tenant-wide knowledge (facts, relationships).';
