-- Area: documents. Seed: seed 003 "Documentary Memory Schema".
--
-- Documentary memory (seed 003): documents as a version chain in document_index, their chunks, and the chunk
-- vectors in the semantic layer's memory_embeddings.
--
-- memsub.document_ingest stores one version of a file:
--   * same path, same sha256 as the latest version: nothing changes (status unchanged);
--   * otherwise a new version (1 for a new path) chained to the previous one, which stops being the latest and
--     loses its vectors (its chunks and text stay, so evidence pointing at them stays readable);
--   * the version gets a packet (packet_type document) in packet_store; chunk n's vector, when the caller sent
--     one, is the memory_embeddings row (that packet, content, chunk_index n), so the retrieval functions over
--     memory_embeddings find chunks; document_index.embedding becomes the mean of the chunk vectors;
--   * each chunk with a vector is linked both ways to the nearest chunks of other latest documents (neighbors).
-- Chunks are contiguous character spans covering the extracted text exactly; the function checks that.
-- Calls for one path are serialized by a maintenance lock (memsub._take_maintenance_lock).

create or replace function memsub._check_document_chunks(p_chunks jsonb, p_text text) returns integer
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_chunk    jsonb;
    v_position integer;
    v_field    text;
    v_key      text;
    v_start    integer;
    v_end      integer;
    v_expected integer := 0;
    v_length   integer := length(p_text);  -- once: counting the characters of a text reads all of it
begin
    if p_chunks is null or jsonb_typeof(p_chunks) <> 'array' then
        raise exception 'field "chunks" must be a JSON array of {start_char, end_char, page?, embedding?}'
            using errcode = '22023', column = 'chunks';
    end if;
    for v_chunk, v_position in select c, n - 1 from jsonb_array_elements(p_chunks) with ordinality as a(c, n) loop
        v_field := format('chunks[%s]', v_position);
        perform memsub._check_object_keys(v_chunk, v_field, array['start_char', 'end_char', 'page', 'embedding'],
                                          '{start_char, end_char, page?, embedding?}', 'a chunk');
        foreach v_key in array array['start_char', 'end_char', 'page'] loop
            if v_chunk ? v_key and jsonb_typeof(v_chunk -> v_key) <> 'null'
               and (jsonb_typeof(v_chunk -> v_key) <> 'number' or (v_chunk ->> v_key) !~ '^\d{1,9}$') then
                raise exception 'field "%.%" must be a non-negative integer', v_field, v_key
                    using errcode = '22023', column = v_field || '.' || v_key;
            end if;
        end loop;
        v_start := (v_chunk ->> 'start_char')::integer;
        v_end := (v_chunk ->> 'end_char')::integer;
        if v_start is distinct from v_expected then
            raise exception 'field "%.start_char" must be %: chunks are contiguous and cover the text from offset 0',
                v_field, v_expected
                using errcode = '22023', column = v_field || '.start_char';
        end if;
        if v_end is null or v_end <= v_start or v_end > v_length then
            raise exception 'field "%.end_char" must be after start_char (%) and at most the text length (%)',
                v_field, v_start, v_length
                using errcode = '22023', column = v_field || '.end_char';
        end if;
        if (v_chunk ->> 'page')::integer = 0 then
            raise exception 'field "%.page" counts from 1', v_field using errcode = '22023', column = v_field || '.page';
        end if;
        perform memsub._json_vector(v_chunk -> 'embedding', v_field || '.embedding');
        v_expected := v_end;
    end loop;
    if v_expected <> v_length then
        raise exception 'field "chunks" covers the text up to offset %, not its length %', v_expected, v_length
            using errcode = '22023', column = 'chunks';
    end if;
    return jsonb_array_length(p_chunks);
end
$$;
comment on function memsub._check_document_chunks(jsonb, text) is
    'Internal: checks that chunks are contiguous spans {start_char, end_char, page?, embedding?} covering the text '
    'exactly, with vectors of the installation''s dimension; raises 22023 naming the element. Returns the count.';

-- A chunk's text is a slice of the document's. substr(text, start, n) counts characters from the start of the
-- text on every call (UTF-8 has no fixed width), so slicing every chunk that way read the text once per chunk:
-- quadratic in its size (a 3 MB file of 2,600 chunks spent about a minute on it). Slicing the UTF-8 bytes from a
-- running byte offset reads each part of the text a bounded number of times.
create or replace function memsub._document_chunk_texts(p_text text, p_chunks jsonb)
returns table (chunk_index integer, content text)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_bytes  bytea := convert_to(p_text, 'UTF8');
    v_total  integer := octet_length(v_bytes);
    v_at     integer := 0;  -- byte offset of the next chunk
    v_chars  integer;
    v_window bytea;
    v_cut    integer;
begin
    for chunk_index, v_chars in
        select a.n::integer, (a.c ->> 'end_char')::integer - (a.c ->> 'start_char')::integer
          from jsonb_array_elements(p_chunks) with ordinality as a(c, n)
         order by a.n
    loop
        -- A character takes at most 4 bytes, so the chunk lies in the next 4n + 3 bytes, and the character that
        -- starts at its end does too when the window stops short of the text's end. A window that stops short
        -- may end inside a character: it is cut before the last character that starts in it.
        v_window := substring(v_bytes from v_at + 1 for 4 * v_chars + 3);
        if v_at + octet_length(v_window) < v_total then
            v_cut := octet_length(v_window) - 1;
            while (get_byte(v_window, v_cut) & 192) = 128 loop  -- a continuation byte (10xxxxxx)
                v_cut := v_cut - 1;
            end loop;
            v_window := substring(v_window from 1 for v_cut);
        end if;
        content := left(convert_from(v_window, 'UTF8'), v_chars);
        v_at := v_at + octet_length(content);
        return next;
    end loop;
end
$$;
comment on function memsub._document_chunk_texts(text, jsonb) is
    'Internal: the text of each chunk [{start_char, end_char}] of a text, in order (chunk_index from 1), chunks '
    'contiguous from offset 0 as memsub._check_document_chunks checks; reads the text once, not once per chunk. '
    'Called by memsub.document_ingest.';

create or replace function memsub.document_ingest(
    p_file_path             text,
    p_hash                  text,
    p_mime                  text,
    p_text                  text,
    p_chunks                jsonb,
    p_metadata              jsonb            default '{}',
    p_summary               text             default null,
    p_key_concepts          text[]           default '{}',
    p_entities              jsonb            default '[]',
    p_neighbor_count        integer          default 3,
    p_neighbor_max_distance double precision default 0.5
) returns table (document_id uuid, file_path text, version integer, hash text, status text, previous_id uuid,
                 packet_id uuid, chunk_count integer, embedded_count integer)
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_path     text;
    v_latest   memsub.document_index;
    v_entry    memsub.document_index;
    v_id       uuid := gen_random_uuid();
    v_version  integer;
    v_packet   uuid;
    v_chunks   integer;
    v_embedded integer;
    v_entity   jsonb;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('file_path', p_file_path, 'hash', p_hash, 'mime', p_mime, 'summary', p_summary),
            memsub._check_limit(length(p_text), 'max_document_chars', 'text'),
            memsub._check_limit(pg_column_size(p_chunks), 'max_document_bytes', 'chunks'),
            memsub._check_limit(case when jsonb_typeof(p_chunks) = 'array' then jsonb_array_length(p_chunks) end, 'max_document_chunks', 'chunks'),
            memsub._check_limit(pg_column_size(p_metadata), 'max_json_bytes', 'metadata'),
            memsub._check_limit(cardinality(p_key_concepts), 'max_array_items', 'key_concepts'),
            memsub._check_limit(pg_column_size(p_entities), 'max_json_bytes', 'entities');
    perform memsub._check_no_null_elements(p_key_concepts, 'key_concepts');
    perform memsub._check_limits(array(select length(c)::bigint from unnest(p_key_concepts) c),
                                 'max_text_chars',
                                 array(select format('key_concepts[%s]', n - 1)
                                         from generate_series(1, cardinality(p_key_concepts)) n));
    -- Together too, as a reflection's lists (one element over the limit is named by its place above).
    perform memsub._check_text_list(p_key_concepts, 'key_concepts');
    if p_file_path is null or memsub._is_blank(p_file_path) then
        raise exception 'field "file_path" is required' using errcode = '22023', column = 'file_path';
    end if;
    -- One spelling of a path: composed (Unicode NFC), as stored; e and a combining accent is the same path as é.
    v_path := normalize(p_file_path, nfc);
    perform memsub._check_key_bytes('file_path', v_path);  -- a B-tree key
    if p_hash is null or p_hash !~ '^[0-9a-f]+$' or length(p_hash) <> 64 then
        raise exception 'field "hash" must be the sha256 of the file as 64 lower-case hex digits'
            using errcode = '22023', column = 'hash';
    end if;
    perform memsub._check_one_of(p_mime, memsub.document_mimes(), 'mime');
    if p_text is null then
        raise exception 'field "text" is required (the extracted text)' using errcode = '23502', column = 'text';
    end if;
    if p_metadata is null or jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'field "metadata" must be a JSON object' using errcode = '22023', column = 'metadata';
    end if;
    if p_entities is null or jsonb_typeof(p_entities) <> 'array' then
        raise exception 'field "entities" must be a JSON array of {type, value}' using errcode = '22023', column = 'entities';
    end if;
    for v_entity in select e from jsonb_array_elements(p_entities) e loop
        if jsonb_typeof(v_entity) <> 'object' or jsonb_typeof(v_entity -> 'type') is distinct from 'string'
           or jsonb_typeof(v_entity -> 'value') is distinct from 'string' then
            raise exception 'field "entities": every element must be {"type": text, "value": text}, not %', v_entity
                using errcode = '22023', column = 'entities';
        end if;
    end loop;
    if p_neighbor_count is null or p_neighbor_count not between 0 and 100 then
        raise exception 'field "neighbor_count" must be between 0 and 100' using errcode = '22023', column = 'neighbor_count';
    end if;
    if p_neighbor_max_distance is null or p_neighbor_max_distance not between 0 and 2 then
        raise exception 'field "neighbor_max_distance" must be a cosine distance between 0 and 2'
            using errcode = '22023', column = 'neighbor_max_distance';
    end if;
    v_chunks := memsub._check_document_chunks(p_chunks, p_text);

    v_latest := memsub._document_path_latest(v_path);

    if v_latest.id is not null and v_latest.hash = p_hash then
        return query select v_latest.id, v_latest.file_path, v_latest.version, v_latest.hash, 'unchanged'::text,
                            v_latest.previous_id, v_latest.packet_id, v_latest.chunk_count,
                            (select count(*)::integer from memsub.memory_embeddings e
                              where e.tenant_id = v_tenant and e.packet_id = v_latest.packet_id
                                and e.embedding_type = 'content' and e.chunk_index >= 1);
        return;
    end if;
    v_version := coalesce(v_latest.version, 0) + 1;

    select w.packet_id into v_packet from memsub.write_packet(jsonb_build_object(
        'packet_type', 'document',
        'payload', jsonb_build_object('document_id', v_id, 'file_path', v_path, 'version', v_version,
                                      'hash', p_hash, 'mime', p_mime, 'chunk_count', v_chunks),
        'tags', jsonb_build_array('document'))) w;

    v_entry.id := v_id;
    v_entry.file_path := v_path;
    v_entry.metadata := p_metadata;
    v_entry.version := v_version;
    v_entry.previous_id := v_latest.id;
    v_entry.hash := p_hash;
    v_entry.mime := p_mime;
    v_entry.summary := p_summary;
    v_entry.key_concepts := coalesce(p_key_concepts, '{}');
    v_entry.entities := p_entities;
    v_entry.extracted_text := p_text;
    v_entry.packet_id := v_packet;
    v_entry.chunk_count := v_chunks;
    perform memsub._document_index_write(v_entry);
    if v_latest.id is not null then
        -- The superseded version's vectors leave the index, and its chunks the neighbour lists of other
        -- documents; its chunks and text stay for evidence.
        delete from memsub.memory_embeddings e
         where e.tenant_id = v_tenant and e.packet_id = v_latest.packet_id
           and e.embedding_type = 'content' and e.chunk_index >= 1;
        perform memsub._document_chunks_unlink(v_latest.id);
        -- The graph's edges naming the superseded version stop holding now (sql/420_temporal_graph.sql).
        perform memsub._close_node_edges(v_tenant, 'Document', v_latest.id);
    end if;

    insert into memsub.document_chunks (tenant_id, document_id, chunk_index, content, page, start_char, end_char,
                                        org_id, user_id)
    select v_tenant, v_id, a.n::integer, t.content,
           (a.c ->> 'page')::integer, (a.c ->> 'start_char')::integer, (a.c ->> 'end_char')::integer,
           (select memsub.current_org_id()), (select memsub.current_user_id())
      from jsonb_array_elements(p_chunks) with ordinality as a(c, n)
      join memsub._document_chunk_texts(p_text, p_chunks) t on t.chunk_index = a.n;

    insert into memsub.memory_embeddings (packet_id, embedding_type, vector, chunk_index, chunk_text, metadata, scope,
                                          tenant_id, org_id, user_id, session_id)
    select v_packet, 'content', (a.c ->> 'embedding')::vector, a.n::integer, ch.content,
           jsonb_build_object('document_id', v_id, 'chunk_id', ch.id, 'file_path', v_path, 'version', v_version),
           'shared', v_tenant, (select memsub.current_org_id()), (select memsub.current_user_id()),
           (select memsub.current_session_id())
      from jsonb_array_elements(p_chunks) with ordinality as a(c, n)
      join memsub.document_chunks ch on ch.tenant_id = v_tenant and ch.document_id = v_id and ch.chunk_index = a.n
     where jsonb_typeof(a.c -> 'embedding') = 'array';
    get diagnostics v_embedded = row_count;
    -- The document's packet is stored in chunks (seed 000 chunk_count, is_chunked).
    update memsub.packet_store p set chunk_count = v_chunks, is_chunked = v_chunks > 0
     where p.tenant_id = v_tenant and p.packet_id = v_packet;

    if v_embedded > 0 then
        perform memsub._document_set_mean_vector(v_id);
        if p_neighbor_count > 0 then
            perform memsub._link_document_chunks(v_id, p_neighbor_count, p_neighbor_max_distance);
        end if;
    end if;

    perform memsub._audit_record('document_ingest',
        p_details => jsonb_build_object('document_id', v_id, 'file_path', v_path, 'version', v_version,
                                        'hash', p_hash, 'previous_id', v_latest.id, 'chunks', v_chunks,
                                        'embedded', v_embedded));
    return query select v_id, v_path, v_version, p_hash,
                        case when v_latest.id is null then 'created' else 'new_version' end,
                        v_latest.id, v_packet, v_chunks, v_embedded;
end
$$;
comment on function memsub.document_ingest(text, text, text, text, jsonb, jsonb, text, text[], jsonb, integer, double precision) is
    'Ingests one version of a file: path, sha256 of its bytes, mime (pdf, md, txt), extracted text and chunks '
    '[{start_char, end_char, page?, embedding?}] covering the text. The path is stored and compared composed '
    '(Unicode NFC), so a name typed with a letter and a combining accent (NFD, as macOS gives it) is the same '
    'document, and the path returned is the composed one. Same hash as the latest version: no change '
    '(status unchanged). Otherwise a new version chained to the previous one (status created or new_version) with '
    'its packet, chunks, chunk vectors in memory_embeddings and cross-document neighbours. Audited as document_ingest.';

create or replace function memsub.document_embed_chunks(
    p_document_id           uuid,
    p_embeddings            jsonb,
    p_neighbor_count        integer          default 3,
    p_neighbor_max_distance double precision default 0.5
) returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_document memsub.document_index;
    v_item     jsonb;
    v_position integer;
    v_embedded integer;
begin
    if p_document_id is null then
        raise exception 'field "document_id" is required' using errcode = '23502', column = 'document_id';
    end if;
    select d.* into v_document from memsub.document_index d
     where d.tenant_id = v_tenant and d.id = p_document_id;  -- row-level security decides visibility
    -- The path's writers take turns: a version superseded while this call waited gets no vectors.
    if found and v_document.is_latest then
        v_document := memsub._document_path_latest(v_document.file_path);
    end if;
    if v_document.id is distinct from p_document_id or v_document.packet_id is null then
        raise exception 'field "document_id": % is not a visible latest document version', p_document_id
            using errcode = 'P0002', column = 'document_id';
    end if;
    if p_embeddings is null or jsonb_typeof(p_embeddings) <> 'array' then
        raise exception 'field "embeddings" must be a JSON array of {chunk_index, embedding}'
            using errcode = '22023', column = 'embeddings';
    end if;
    for v_item, v_position in select e, n - 1 from jsonb_array_elements(p_embeddings) with ordinality as a(e, n) loop
        if jsonb_typeof(v_item) <> 'object' or jsonb_typeof(v_item -> 'chunk_index') is distinct from 'number'
           or jsonb_typeof(v_item -> 'embedding') is distinct from 'array' then
            raise exception 'field "embeddings[%]" must be {"chunk_index": n, "embedding": [numbers]}', v_position
                using errcode = '22023', column = format('embeddings[%s]', v_position);
        end if;
        if (v_item ->> 'chunk_index') !~ '^\d{1,9}$' then
            raise exception 'field "embeddings[%].chunk_index" must be a chunk number (an integer from 1), not %',
                v_position, v_item ->> 'chunk_index'
                using errcode = '22023', column = format('embeddings[%s].chunk_index', v_position);
        end if;
        perform memsub._json_vector(v_item -> 'embedding', format('embeddings[%s].embedding', v_position));
        if not exists (select from memsub.document_chunks c where c.tenant_id = v_tenant
                          and c.document_id = p_document_id and c.chunk_index = (v_item ->> 'chunk_index')::integer) then
            raise exception 'field "embeddings[%].chunk_index": document % has no chunk %', v_position, p_document_id,
                v_item ->> 'chunk_index'
                using errcode = '22023', column = format('embeddings[%s].chunk_index', v_position);
        end if;
    end loop;

    -- Only chunks that carry no vector yet; the others keep theirs.
    insert into memsub.memory_embeddings (packet_id, embedding_type, vector, chunk_index, chunk_text, metadata, scope,
                                          tenant_id, org_id, user_id, session_id)
    select distinct on (c.chunk_index)
           v_document.packet_id, 'content', (a.e ->> 'embedding')::vector, c.chunk_index, c.content,
           jsonb_build_object('document_id', v_document.id, 'chunk_id', c.id, 'file_path', v_document.file_path,
                              'version', v_document.version),
           'shared', v_tenant, v_document.org_id, (select memsub.current_user_id()),
           (select memsub.current_session_id())
      from jsonb_array_elements(p_embeddings) as a(e)
      join memsub.document_chunks c on c.tenant_id = v_tenant and c.document_id = p_document_id
                                   and c.chunk_index = (a.e ->> 'chunk_index')::integer
     where not exists (select from memsub.memory_embeddings x
                        where x.tenant_id = v_tenant and x.packet_id = v_document.packet_id
                          and x.embedding_type = 'content' and x.chunk_index = c.chunk_index)
     order by c.chunk_index;
    get diagnostics v_embedded = row_count;

    if v_embedded > 0 then
        perform memsub._document_set_mean_vector(p_document_id);
        if coalesce(p_neighbor_count, 0) > 0 then
            perform memsub._link_document_chunks(p_document_id, p_neighbor_count, p_neighbor_max_distance);
        end if;
    end if;
    perform memsub._audit_record('document_ingest',
        p_details => jsonb_build_object('document_id', p_document_id, 'file_path', v_document.file_path,
                                        'version', v_document.version, 'embedded', v_embedded));
    return v_embedded;
end
$$;
comment on function memsub.document_embed_chunks(uuid, jsonb, integer, double precision) is
    'Adds vectors to the chunks of a latest document version that were stored without one (e.g. ingested without '
    'an embedder): embeddings [{chunk_index, embedding}]; chunks that already carry a vector keep it. Updates the '
    'document embedding (mean of its chunk vectors) and cross-document neighbours. Returns the number of vectors '
    'added. Audited as document_ingest.';

create or replace function memsub.document_chunks_without_embedding(p_document_id uuid)
returns setof memsub.document_chunks
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
    select c.* from memsub.document_chunks c
      join memsub.document_index d on d.tenant_id = c.tenant_id and d.id = c.document_id
     where c.tenant_id = (select memsub.current_tenant_id()) and c.document_id = p_document_id
       and not exists (select from memsub.memory_embeddings e
                        where e.tenant_id = d.tenant_id and e.packet_id = d.packet_id
                          and e.embedding_type = 'content' and e.chunk_index = c.chunk_index)
     order by c.chunk_index
$$;
comment on function memsub.document_chunks_without_embedding(uuid) is
    'The chunks of a document version that carry no vector yet, in order (what memsub.document_embed_chunks fills).';

-- A superseded version's chunks leave the neighbour lists that name them, whichever context wrote those lists: an
-- organization's chunk may name a tenant-wide chunk that the tenant-wide writer supersedes. Owned by
-- memsub_retrieval_owner (BYPASSRLS), it states the tenant itself and changes nothing but neighbour lists.
create or replace function memsub._document_chunks_unlink(p_document_id uuid)
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_chunks  uuid[];
    v_changed integer;
begin
    select coalesce(array_agg(c.id), '{}') into v_chunks
      from memsub.document_chunks c where c.tenant_id = v_tenant and c.document_id = p_document_id;
    update memsub.document_chunks c
       set neighbors = array(select n from unnest(c.neighbors) as n where n <> all (v_chunks))
     where c.tenant_id = v_tenant and c.neighbors && v_chunks;
    get diagnostics v_changed = row_count;
    return v_changed;
end
$$;
alter function memsub._document_chunks_unlink(uuid) owner to memsub_retrieval_owner;
comment on function memsub._document_chunks_unlink(uuid) is
    'Internal: takes the chunks of a document version of the context tenant out of every neighbour list that '
    'names them, whoever may see those lists (owned by memsub_retrieval_owner, BYPASSRLS); returns the number of '
    'lists changed. Executable only by memsub_owner.';
grant select, update (neighbors) on memsub.document_chunks to memsub_retrieval_owner;
grant execute on function memsub._document_chunks_unlink(uuid) to memsub_owner;

create or replace function memsub._link_document_chunks(
    p_document_id  uuid,
    p_count        integer          default 3,
    p_max_distance double precision default 0.5
) returns integer
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_links integer;
begin
    -- Each chunk's nearest chunks are found by walking the content graph of the tenant's partition: the ORDER BY
    -- is the graph's key (memsub._vector_graph_order), which holds the installation's dimension and is
    -- therefore written into the statement. Sorting by the cosine distance instead would read every chunk
    -- vector of the tenant once per chunk (2.3 times the time of an ingest at 10,000 chunks).
    -- Each context function in a sub-select: evaluated once for the statement. As a plain call in a join's
    -- condition it ran again for every inner scan of every chunk (tests/documents/test_documents_ingest.py).
    execute format($statement$
    with mine as (
        select c.id as chunk_id, c.org_id, e.vector
          from memsub.document_chunks c
          join memsub.document_index d on d.tenant_id = c.tenant_id and d.id = c.document_id
          join memsub.memory_embeddings e on e.tenant_id = d.tenant_id and e.packet_id = d.packet_id
                                         and e.embedding_type = 'content' and e.chunk_index = c.chunk_index
         where c.tenant_id = (select memsub.current_tenant_id()) and c.document_id = $1
    ), links as (
        select mine.chunk_id, mine.org_id, near.chunk_id as other_id, near.org_id as other_org_id
          from mine
         cross join lateral (
            select oc.id as chunk_id, oc.org_id
              from memsub.memory_embeddings oe
              join memsub.document_index od on od.tenant_id = oe.tenant_id and od.packet_id = oe.packet_id
              join memsub.document_chunks oc on oc.tenant_id = od.tenant_id and oc.document_id = od.id
                                            and oc.chunk_index = oe.chunk_index
             where oe.tenant_id = (select memsub.current_tenant_id()) and oe.embedding_type = 'content'
               and oe.chunk_index >= 1 and od.is_latest and od.id <> $1
               and (oe.org_id is null or oe.org_id = mine.org_id)
               and (oe.vector <=> mine.vector) <= $3
             order by %s
             limit $2) near
    ), forward as (
        update memsub.document_chunks c
           set neighbors = (select array_agg(distinct u.n order by u.n) from unnest(c.neighbors || l.others) as u(n))
          from (select k.chunk_id, array_agg(k.other_id) as others from links k group by k.chunk_id) l
         where c.tenant_id = (select memsub.current_tenant_id()) and c.id = l.chunk_id
        returning 1
    ), backward as (
        update memsub.document_chunks c
           set neighbors = (select array_agg(distinct u.n order by u.n) from unnest(c.neighbors || l.others) as u(n))
          from (select k.other_id, array_agg(k.chunk_id) as others from links k
                 where k.org_id is null or k.org_id = k.other_org_id
                 group by k.other_id) l
         where c.tenant_id = (select memsub.current_tenant_id()) and c.id = l.other_id
        returning 1
    )
    -- Data-modifying CTEs run to completion whether or not the final query reads them.
    select count(*)::integer from links
    $statement$, memsub._vector_graph_order('oe.vector', 'mine.vector'))
    into v_links using p_document_id, p_count, p_max_distance;
    return v_links;
end
$$;
comment on function memsub._link_document_chunks(uuid, integer, double precision) is
    'Internal: links each chunk of a document version to its nearest chunks (at most count, cosine distance at '
    'most max_distance) of the latest versions of other paths, in both directions (document_chunks.neighbors). '
    'A chunk names only chunks every reader of it may see: tenant-wide ones, or its own organization''s (an '
    'organization''s chunk near a tenant-wide one is linked one way). Returns the number of links found. Called '
    'by memsub.document_ingest.';

create or replace function memsub.document_versions(p_file_path text)
returns setof memsub.document_index
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
    select d.* from memsub.document_index d
     where d.tenant_id = (select memsub.current_tenant_id()) and d.file_path = normalize(p_file_path, nfc)
     order by d.version desc
$$;
comment on function memsub.document_versions(text) is
    'The version chain of a path that the caller may see, newest first (the first row is the latest pointer). The '
    'path matches in either Unicode composition (compared composed, NFC, as stored).';

create or replace function memsub.document_chunks_of(p_document_id uuid)
returns setof memsub.document_chunks
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
    select c.* from memsub.document_chunks c
     where c.tenant_id = (select memsub.current_tenant_id()) and c.document_id = p_document_id
     order by c.chunk_index
$$;
comment on function memsub.document_chunks_of(uuid) is 'The chunks of a document version, in order, if the caller may see them.';

call memsub._install_row_security('memsub.document_chunks', array['org']);

grant select on memsub.document_chunks to memsub_app, memsub_analyst;
grant execute on function
    memsub.document_ingest(text, text, text, text, jsonb, jsonb, text, text[], jsonb, integer, double precision)
    to memsub_app;
grant execute on function memsub.document_embed_chunks(uuid, jsonb, integer, double precision) to memsub_app;
grant execute on function
    memsub.document_versions(text),
    memsub.document_chunks_of(uuid),
    memsub.document_chunks_without_embedding(uuid)
    to memsub_app, memsub_analyst;

-- Packet chunk counts (seed 000 packet_store.chunk_count, is_chunked) ---------------------------------------------
-- A packet is stored in chunks when it has chunk vectors (memory_embeddings.chunk_index 1..n) or is a document
-- version with chunks (memsub.document_ingest sets the document's count, which may exceed its vectors).

create or replace function memsub._count_packet_chunks() returns trigger
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    -- Most inserts add only whole-content vectors (chunk_index 0): one look at the added rows settles them,
    -- without starting the update.
    if not exists (select from added a where a.chunk_index >= 1) then
        return null;
    end if;
    update memsub.packet_store p
       set chunk_count = greatest(p.chunk_count, n.chunks), is_chunked = true
      from (select a.tenant_id, a.packet_id, max(a.chunk_index) as chunks
              from added a where a.chunk_index >= 1 group by a.tenant_id, a.packet_id) n
     where p.tenant_id = n.tenant_id and p.packet_id = n.packet_id and p.chunk_count < n.chunks;
    return null;
end
$$;
comment on function memsub._count_packet_chunks() is
    'Trigger: raises packet_store.chunk_count to the highest chunk_index of the chunk vectors just added to a '
    'packet and sets is_chunked.';

call memsub._ensure_trigger('memsub.memory_embeddings', 'memory_embeddings_count_chunks', $create$create trigger memory_embeddings_count_chunks
    after insert on memsub.memory_embeddings
    referencing new table as added
    for each statement execute function memsub._count_packet_chunks()$create$);
comment on trigger memory_embeddings_count_chunks on memsub.memory_embeddings is
    'Keeps packet_store.chunk_count and is_chunked up to date when chunk vectors (chunk_index >= 1) are added.';
