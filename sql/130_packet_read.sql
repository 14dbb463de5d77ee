-- Area: packets. Seed: seed 004 "PacketLineage (v1.1.0)" and invariants 4-5; seed 000 "CORE MEMORY LAYER"
--   (packet_store).
--
-- Reading packets: by id, a thread in order, lineage ancestors and descendants.
-- All reads are SECURITY INVOKER: row-level security decides what the caller sees. get_packets (get_packet) and
-- get_thread (through get_packets) return the envelope as written: the embedding vectors put back, and the header
-- fields kept only in columns. get_packets (get_packet) with p_with_vectors false return the rows as stored
-- instead (vectors JSON null), for callers that need the content, not the vectors; get_packets_with_vector_values
-- returns those rows and, beside each, its vectors as vector values (what a driver reads in binary).

-- The row-by-row put-back (a PL/pgSQL row wrapper around a SQL function, two calls per row), and the set-based
-- function that replaced it, are gone: get_packets puts the envelope back in the statement that finds the rows.
drop function if exists memsub._packet_with_vectors(memsub.packet_store);
drop function if exists memsub._envelope_vectors_joined(uuid, uuid, jsonb);
drop function if exists memsub._packets_as_written(memsub.packet_store[]);
drop function if exists memsub._packets_as_written(memsub.packet_store[], boolean);
drop function if exists memsub._envelope_vectors(uuid, uuid, jsonb);

-- get_packets and get_packet gained p_with_vectors (a new argument is a new signature: drop and create).
drop function if exists memsub.get_packet(uuid);
drop function if exists memsub.get_packets(uuid[]);

create or replace function memsub._reader_tenants(p_packet_ids uuid[]) returns uuid[]
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub.current_tenant_id();
begin
    -- The key is (tenant_id, packet_id): with the context tenant each id is one index search; by packet_id alone
    -- it would be a skip scan over every tenant. A platform_admin (or a call without a tenant) may see every
    -- tenant: the tenants holding these ids are found first (by packet_id alone). Row-level security decides
    -- what is visible either way.
    -- A context that asks for no role (the roles setting empty: memsub.current_context_roles() is '{}') is no
    -- platform admin's: is_platform_admin (a SQL function with its own settings, a tenth of a get's server time,
    -- called twice by a read with vectors) is asked only when the context asks for some role.
    if v_tenant is not null
       and (coalesce(pg_catalog.current_setting('memsub.roles', true), '') = '' or not memsub.is_platform_admin()) then
        return array[v_tenant];
    end if;
    return array(select distinct k.tenant_id from memsub.packet_store k where k.packet_id = any(p_packet_ids));
end
$$;
comment on function memsub._reader_tenants(uuid[]) is
    'The tenants whose rows a read of these packet ids looks at: the context tenant for an ordinary login, the '
    'tenants holding the ids for a platform_admin or a call without a tenant. Stated as a value (= any), it '
    'selects the key to search in packet_store and the partitions of memory_embeddings to read.';

create or replace function memsub.get_packets(p_packet_ids uuid[], p_with_vectors boolean default true)
returns setof memsub.packet_store
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    v_tenants uuid[];
    v_ids     uuid[] := p_packet_ids;  -- each id once, in the order of its first mention
begin
    -- The rows with their vectors are the rows memsub.get_packets_with_vector_values reads, each vector put back
    -- into its memory.embeddings[] element as the exact doubles of its single-precision numbers. Other elements,
    -- and envelopes without an embeddings array, are returned as stored. A call without vectors never plans this
    -- statement, so it pays nothing for memory_embeddings.
    if coalesce(p_with_vectors, true) then
        return query
            select r.packet_id, r.packet_type,
                   case when r.vectors is null then r.envelope else
                       jsonb_set(r.envelope, '{memory,embeddings}', (
                           select coalesce(jsonb_agg(
                                      case when r.vectors[x.o] is null then x.e
                                           else jsonb_set(x.e, '{vector}',
                                                          to_jsonb(r.vectors[x.o]::real[]::double precision[])) end
                                      order by x.o), '[]')
                             from jsonb_array_elements(r.envelope -> 'memory' -> 'embeddings') with ordinality as x(e, o)))
                   end,
                   r."timestamp", r.routing, r.provenance, r.thread_id, r.parent_ids, r.tags, r.ttl, r.scope,
                   r.importance_score, r.access_count, r.last_accessed, r.contradiction_count, r.content_hash,
                   r.chunk_count, r.is_chunked, r.tenant_id, r.org_id, r.user_id, r.correlation_id, r.session_id,
                   r.trace_id, r.write_seq
              from memsub.get_packets_with_vector_values(p_packet_ids) with ordinality r
              -- A platform_admin's read of several tenants comes tenant by tenant: the order asked is put back.
              join (select i.id, min(i.n) as n from unnest(p_packet_ids) with ordinality i(id, n) group by i.id) w
                on w.id = r.packet_id
             order by w.n, r.ordinality;
        return;
    end if;
    perform memsub._check_limit(cardinality(p_packet_ids), 'max_rows', 'packet_ids');
    v_tenants := memsub._reader_tenants(p_packet_ids);
    -- Repeated ids are dropped by a statement of their own, only when there are several ids: in the read's
    -- statement the grouping took a get of one packet a tenth of its server time to start, for nothing.
    if cardinality(p_packet_ids) > 1 then
        v_ids := array(select i.id from unnest(p_packet_ids) with ordinality i(id, n) group by i.id order by min(i.n));
    end if;
    -- Each visible packet once, in the order of its first mention; unknown and invisible ids give no row. The
    -- plan is the same for every call (a nested loop of key searches), so it is made once per session (generic),
    -- not planned again for each call: planning would cost more than reading one packet. The header fields
    -- stored only in columns are put back (the envelope's own, if it has them, win).
    -- memsub.get_packets_with_vector_values runs the same statement, tenant by tenant, with the vectors beside
    -- each row: a change here belongs there too (tests/packets/test_packet_vectors_typed.py compares the two).
    return query
        select s.packet_id, s.packet_type,
               jsonb_build_object('packet_id', s.packet_id, 'packet_type', s.packet_type, 'scope', s.scope,
                                  'timestamp', to_char(s."timestamp" at time zone 'UTC',
                                                       'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || s.envelope,
               s."timestamp", s.routing, s.provenance, s.thread_id, s.parent_ids, s.tags, s.ttl, s.scope,
               s.importance_score, s.access_count, s.last_accessed, s.contradiction_count, s.content_hash,
               s.chunk_count, s.is_chunked, s.tenant_id, s.org_id, s.user_id, s.correlation_id, s.session_id,
               s.trace_id, s.write_seq
          from unnest(v_ids) with ordinality w(id, n)
         -- A nested loop of key searches, one per id and tenant (tests/packets/test_packet_read_cost.py counts
         -- the rows read). OFFSET 0 keeps the lateral subquery from being flattened into a join, which the planner
         -- would then be free to run as a hash join over a scan of every row the tenant condition matches: its
         -- choice when one tenant holds most of the table and the table is small enough to look cheap to scan.
         cross join lateral (select k.* from memsub.packet_store k
                              where k.tenant_id = any(v_tenants) and k.packet_id = w.id
                              offset 0) s
         order by w.n;
end
$$;
comment on function memsub.get_packets(uuid[], boolean) is
    'The visible packets among these ids, each once, in the order of its first mention (unknown or invisible ids '
    'give no row); at most max_rows ids per call (54000 beyond). One index search of the context tenant''s key '
    'per id. Each envelope is returned as written: the header fields kept only in columns put back, and, with '
    'with_vectors (default true; NULL counts as true), each memory.embeddings[] vector read back from '
    'memory_embeddings (the exact value of each single-precision number; row-level security applies); false '
    'returns the rows as stored, where a vector stored in memory_embeddings is JSON null (envelopes written '
    'before 2.24.0 keep theirs) and every other field is the same.';

-- get_packet_vectors (the vectors alone, by packet) became get_packets_with_vector_values (the rows and their
-- vectors in one statement): a reader sent both, and the second read the packets again.
drop function if exists memsub.get_packet_vectors(uuid[]);

create or replace function memsub.get_packets_with_vector_values(p_packet_ids uuid[])
returns table (packet_id uuid, packet_type text, envelope jsonb, "timestamp" timestamptz, routing jsonb,
               provenance jsonb, thread_id uuid, parent_ids uuid[], tags text[], ttl timestamp, scope text,
               importance_score double precision, access_count integer, last_accessed timestamptz,
               contradiction_count integer, content_hash text, chunk_count integer, is_chunked boolean,
               tenant_id uuid, org_id uuid, user_id uuid, correlation_id uuid, session_id text, trace_id text,
               write_seq bigint, vectors vector[])
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, public, pg_temp
set plan_cache_mode = force_generic_plan
as $$
#variable_conflict use_column
declare
    v_tenant uuid;
    v_ids    uuid[] := p_packet_ids;  -- each id once, in the order of its first mention (as get_packets)
begin
    -- The rows are memsub.get_packets(ids, false) (the packet_store columns, in the same order); vectors holds
    -- the stored vector of each memory.embeddings[] object whose vector is JSON null: the slot (embedding_type,
    -- chunk_index) of a memory_embeddings row, read as the caller (row-level security applies). Vectors are
    -- stored once (sql/120_packet_write.sql).
    --
    -- The vectors are read one tenant at a time, the tenant stated as a value: the cached plan then opens only
    -- that tenant's partition of memory_embeddings. Read by the packet's own tenant (known only row by row), or
    -- by a list of tenants, it would open every partition on every call (tests/packets/test_packet_read_cost.py).
    -- An ordinary login reads one tenant, the context's; a platform_admin may read several, tenant by tenant.
    --
    -- The packets are read here with get_packets' statement for rows as stored (the same key searches and the
    -- same header fields put back), not by calling get_packets(ids, false): that call checked the limit and
    -- found the reader's tenants a second time, another seal check among them, and cost a get of one packet with
    -- its vector 8-10 % of its server time; a function shared by both reads cost each a frame (3-4 %).
    --
    -- A vector's slot is read with the fan-out's own expression for chunk_index (sql/160_packet_fan_out.sql),
    -- which every element stored with its vector apart has passed, so it cannot fail here. Called through
    -- memsub._embedding_chunk_index (a SQL function with its own search_path, so not inlined), it was a function
    -- call in the index search of every vector: a sixth of the server time of a get of 100 packets with theirs
    -- (tests/packets/test_packet_read_cost.py counts the calls).
    perform memsub._check_limit(cardinality(p_packet_ids), 'max_rows', 'packet_ids');
    if cardinality(p_packet_ids) > 1 then
        v_ids := array(select i.id from unnest(p_packet_ids) with ordinality i(id, n) group by i.id order by min(i.n));
    end if;
    foreach v_tenant in array memsub._reader_tenants(p_packet_ids) loop
        return query
            select s.packet_id, s.packet_type,
                   jsonb_build_object('packet_id', s.packet_id, 'packet_type', s.packet_type, 'scope', s.scope,
                                      'timestamp', to_char(s."timestamp" at time zone 'UTC',
                                                           'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || s.envelope,
                   s."timestamp", s.routing, s.provenance, s.thread_id, s.parent_ids, s.tags, s.ttl, s.scope,
                   s.importance_score, s.access_count, s.last_accessed, s.contradiction_count, s.content_hash,
                   s.chunk_count, s.is_chunked, s.tenant_id, s.org_id, s.user_id, s.correlation_id, s.session_id,
                   s.trace_id, s.write_seq,
                   case when jsonb_typeof(s.envelope -> 'memory' -> 'embeddings') = 'array' then
                       array(select case when jsonb_typeof(x.e) = 'object' and x.e -> 'vector' = 'null'::jsonb then
                                             (select m.vector from memsub.memory_embeddings m
                                               where m.tenant_id = v_tenant and m.packet_id = s.packet_id
                                                 and m.embedding_type = x.e ->> 'embedding_type'
                                                 and m.chunk_index = coalesce((x.e ->> 'chunk_index')::integer, 0)) end
                               from jsonb_array_elements(s.envelope -> 'memory' -> 'embeddings')
                                    with ordinality as x(e, o)
                              order by x.o) end
              from unnest(v_ids) with ordinality w(id, n)
             cross join lateral (select k.* from memsub.packet_store k
                                  where k.tenant_id = v_tenant and k.packet_id = w.id
                                  offset 0) s
             order by w.n;
    end loop;
end
$$;
comment on function memsub.get_packets_with_vector_values(uuid[]) is
    'The visible packets among these ids as memsub.get_packets(ids, false) returns them (the envelope''s '
    'memory.embeddings[] vectors JSON null), with vectors: vectors[i] is the stored vector of the i-th element '
    '(1-based) of memory.embeddings, NULL where the element holds no vector stored apart (or no row holds it); '
    'vectors is NULL for an envelope without an embeddings array. The vectors come as vector values (pgvector''s '
    'binary form on the wire, 4 bytes a number) instead of JSON numbers: what the Python client reads. In the '
    'order of first mention; a platform_admin reading several tenants gets them tenant by tenant. Row-level '
    'security applies.';

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
create or replace function memsub._thread_packet_ids(p_thread_id uuid, p_limit integer, p_after_cursor bigint)
returns uuid[]
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
    -- Write order: packets written in one transaction share their timestamp, but never their write_seq, and a
    -- parent is always written before its children. The cursor is the write_seq of the last row read.
    select array(
        select s.packet_id from memsub.packet_store s
         where s.thread_id = p_thread_id
           and (p_after_cursor is null or s.write_seq > p_after_cursor)
         order by s.write_seq
         limit memsub._check_count(p_limit, 'max_rows', 'limit'))
$$;
comment on function memsub._thread_packet_ids(uuid, integer, bigint) is
    'Internal: the ids of one page of a thread, in write order: at most p_limit visible packets after the cursor '
    '(22023 naming limit below 1, 54000 above max_rows). The page memsub.get_thread and '
    'memsub.get_thread_with_vector_values read.';

drop function if exists memsub.get_thread(uuid, integer, bigint);
create or replace function memsub.get_thread(
    p_thread_id uuid, p_limit integer default 1000, p_after_cursor bigint default null,
    p_with_vectors boolean default true
) returns setof memsub.packet_store
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$ select * from memsub.get_packets(memsub._thread_packet_ids(p_thread_id, p_limit, p_after_cursor), p_with_vectors) $$;
comment on function memsub.get_thread(uuid, integer, bigint, boolean) is
    'Replays a conversation thread: its visible, unexpired packets in write order (parents before children), at '
    'most limit rows after the cursor (the write_seq of the last row already read; NULL: from the start). '
    'with_vectors as memsub.get_packets: true (the default) puts each memory.embeddings[] vector back into the '
    'envelope as JSON numbers, false returns the rows as stored.';

create or replace function memsub.get_thread_with_vector_values(
    p_thread_id uuid, p_limit integer default 1000, p_after_cursor bigint default null
) returns table (packet_id uuid, packet_type text, envelope jsonb, "timestamp" timestamptz, routing jsonb,
                 provenance jsonb, thread_id uuid, parent_ids uuid[], tags text[], ttl timestamp, scope text,
                 importance_score double precision, access_count integer, last_accessed timestamptz,
                 contradiction_count integer, content_hash text, chunk_count integer, is_chunked boolean,
                 tenant_id uuid, org_id uuid, user_id uuid, correlation_id uuid, session_id text, trace_id text,
                 write_seq bigint, vectors vector[])
language sql stable security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
    -- In write order even for a platform_admin, whose read of several tenants comes tenant by tenant.
    select r.* from memsub.get_packets_with_vector_values(memsub._thread_packet_ids(p_thread_id, p_limit, p_after_cursor)) r
     order by r.write_seq
$$;
comment on function memsub.get_thread_with_vector_values(uuid, integer, bigint) is
    'One page of a thread as memsub.get_thread reads it, in write order, each row as '
    'memsub.get_packets_with_vector_values returns it: the envelope as stored and its memory.embeddings[] vectors '
    'as vector values beside it (pgvector''s binary form on the wire), not as JSON numbers. What the Python '
    'client reads.';

drop function if exists memsub.lineage_nodes(uuid[]);
create or replace function memsub._lineage_nodes(p_tenant_id uuid, p_packet_ids uuid[])
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
comment on function memsub._lineage_nodes(uuid, uuid[]) is
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
    max_rows     bigint := memsub.limit_value('max_rows');  -- read once, not at every level
    level        integer := 0;
    parents      uuid[];  -- ancestors: the parents of the last level's packets
    next_parents uuid[];
    node         record;
begin
    if p_direction is null or p_direction <> all(memsub.lineage_directions()) then
        raise exception 'memsub.get_lineage: direction must be %, not %',
            memsub._alternatives(memsub.lineage_directions()), p_direction
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
    -- A walk from a packet the caller cannot see is refused, as one that does not exist: an empty walk would
    -- read as a packet without parents (or children).
    if start_tenant is null then
        raise exception 'memsub.get_lineage: packet % does not exist or is not visible',
            coalesce(p_packet_id::text, 'NULL')
            using errcode = 'P0002', column = 'packet_id';
    end if;
    frontier := array[p_packet_id];
    visited := jsonb_build_object(p_packet_id, true);
    if p_direction = 'ancestors' then
        parents := array(select p from memsub._lineage_nodes(start_tenant, frontier) c
                          cross join lateral unnest(c.parent_ids) as p);
    end if;
    -- Breadth-first walk with a visited set: each packet is reported once, at its shortest distance, and
    -- a cycle in (legacy) lineage data cannot loop.
    while level < p_max_depth and cardinality(frontier) > 0 loop
        level := level + 1;
        if p_direction = 'ancestors' then
            -- The level is the parents of the last one not reached yet, read in one call that gives their rows
            -- and their own parents too: one read per level (a read per packet of a level cost one call each,
            -- and reading the level's parents, then the level again for its rows, three).
            exit when cardinality(parents) = 0;
            frontier := '{}';
            next_parents := '{}';
            for node in
                select n.packet_id, n.packet_type, n."timestamp", n.parent_ids, n.thread_id, n.generation, n.state
                  from memsub._lineage_nodes(start_tenant, parents) n
                 where not visited ? n.packet_id::text
                 order by n."timestamp", n.packet_id
            loop
                frontier := frontier || node.packet_id;
                next_parents := next_parents || node.parent_ids;
                packet_id := node.packet_id;
                depth := level;
                packet_type := node.packet_type;
                "timestamp" := node."timestamp";
                parent_ids := node.parent_ids;
                thread_id := node.thread_id;
                generation := node.generation;
                state := node.state;
                return next;
            end loop;
            parents := next_parents;
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
        if reached > max_rows then
            raise exception 'memsub.get_lineage: more than % packets within max_depth %; ask for fewer generations',
                max_rows, p_max_depth
                using errcode = '54000', column = 'max_depth',
                      detail = format('limit=max_rows value=%s', max_rows),
                      hint = 'Limits are set per installation in memsub.limits (docs/security.md, "Limits").';
        end if;
        visited := visited || coalesce((select jsonb_object_agg(f, true) from unnest(frontier) as f), '{}');
        if p_direction = 'descendants' then
            return query
                select n.packet_id, level, n.packet_type, n."timestamp", n.parent_ids, n.thread_id, n.generation,
                       n.state
                  from memsub._lineage_nodes(start_tenant, frontier) n
                 order by n."timestamp", n.packet_id;
        end if;
    end loop;
end
$$;
comment on function memsub.get_lineage(uuid, text, integer) is
    'Lineage of a packet: its ancestors (following parent_ids) or descendants, breadth first, each once with its '
    'distance (depth), bounded by max_depth (limit max_lineage_depth) and safe against cycles; more than max_rows '
    'packets is refused (54000). Only packets visible to the caller are walked: a walk from a packet that does '
    'not exist or that the caller cannot see is P0002 (column packet_id), while one from a visible packet (live, '
    'expired or purged) without parents or children gives no row. state is live, expired (ttl '
    'passed, not yet purged) or purged (only its tombstone remains); expired and purged nodes report only their '
    'lineage skeleton.';
alter function memsub.get_lineage(uuid, text, integer) owner to memsub_expiry_owner;
alter function memsub._lineage_nodes(uuid, uuid[]) owner to memsub_expiry_owner;

-- Packets referenced by the rows of other areas ----------------------------------------------------------------
-- Events, traces, facts, relationships, embeddings and the other rows that name a packet take it through
-- memsub._visible_packet: a packet the caller cannot see is indistinguishable from a missing one (23503).

create or replace function memsub._visible_packet(p_packet_id uuid, p_field text) returns memsub.packet_store
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
comment on function memsub._visible_packet(uuid, text) is
    'The packet with this id when the caller may see it (NULL for a NULL id); raises 23503 naming the field otherwise.';

create or replace function memsub._require_shared_packet(p_packet memsub.packet_store, p_field text)
returns memsub.packet_store
language plpgsql immutable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_packet.packet_id is not null and p_packet.scope <> 'shared' then
        raise exception 'field "%": packet % has scope %; what others read (knowledge, reflections, summaries) can only '
                        'come from shared packets',
            p_field, p_packet.packet_id, p_packet.scope
            using errcode = '22023', column = p_field;
    end if;
    return p_packet;
end
$$;
comment on function memsub._require_shared_packet(memsub.packet_store, text) is
    'Refuses (22023) a cursor or l-private packet as the source of what others read: tenant-wide knowledge (facts, '
    'relationships), and organization-wide reflections and summaries.';
