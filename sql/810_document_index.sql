-- Area: documents. Seed: seed 001 section 1.3.
--
-- The document index of seed 001: one entry per file path with an embedding and metadata.
--
-- Embeddings travel as double precision[] in and real[] out (cast to pgvector's vector inside), so clients need no vector type adapter.

-- A path names one document in whichever Unicode composition it is typed: é as one character (NFC, what most
-- keyboards and Linux file names give) or as e and a combining accent (NFD, what macOS file names give). Every
-- function that takes a path composes it (normalize(..., nfc)) before anything else and stores and compares the
-- composed form; the functions below that take a stored path (memsub._document_path_latest) take it as it is.
-- normalize() needs a UTF8 database, which the migrator's preflight and the psql script check before installing.

-- The writers of one path take turns: memsub._document_path_latest locks the path for the transaction and returns
-- its latest version as committed by the writer before (read after the lock, never from an earlier snapshot). A
-- path is changed only from the context that wrote its latest version: an organization does not supersede or
-- re-index a tenant-wide document (which would hide it from every other organization), nor the other way round.
create or replace function memsub._document_path_latest(p_file_path text)
returns memsub.document_index
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_latest memsub.document_index;
begin
    perform memsub._take_maintenance_lock('document_ingest', v_tenant::text || ':' || p_file_path);
    select d.* into v_latest from memsub.document_index d
     where d.tenant_id = v_tenant and d.file_path = p_file_path and d.is_latest;
    if found and v_latest.org_id is distinct from memsub.current_org_id() then
        raise exception 'field "file_path": % is written from another context (another organization''s, or the '
                        'tenant-wide one): it is changed there only', p_file_path
            using errcode = '42501', column = 'file_path';
    end if;
    return v_latest;
end
$$;
comment on function memsub._document_path_latest(text) is
    'Internal: locks a file path of the context tenant, as stored (composed to Unicode NFC by the function that '
    'took it), until the end of the transaction (the lock every writer of the path takes) and returns its latest '
    'version as committed, if the caller may see it (all fields NULL when not). 42501 naming file_path when that '
    'version was written from another context (another organization, or tenant-wide for an organization and the '
    'other way round).';

-- The one writer of document_index rows: document_index_put and document_ingest both store entries through it,
-- so an entry's identity (tenant, organization, user of the context) and the one-latest-version-per-path rule
-- are written in one place. What is written follows from the entry: one without a version number (an index
-- entry of document_index_put) updates the latest entry it names by id, or makes a new path's version 1; one with
-- a version (document_ingest) becomes the path's latest. The caller holds the path's lock.
drop function if exists memsub._document_index_write(memsub.document_index, boolean);
create or replace function memsub._document_index_write(p_entry memsub.document_index)
returns memsub.document_index
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_row    memsub.document_index;
begin
    if p_entry.version is null and p_entry.id is not null then
        -- The latest entry of the path gets the embedding and metadata.
        update memsub.document_index d
           set embedding = p_entry.embedding, metadata = p_entry.metadata, user_id = memsub.current_user_id(),
               updated_at = now()
         where d.tenant_id = v_tenant and d.id = p_entry.id
        returning d.* into v_row;
        return v_row;
    end if;
    -- A new version: the previous one (p_entry.previous_id) stops being the latest, then the new one is stored.
    if p_entry.previous_id is not null then
        update memsub.document_index d set is_latest = false, superseded_at = now(), updated_at = now()
         where d.tenant_id = v_tenant and d.id = p_entry.previous_id;
    end if;
    begin
        insert into memsub.document_index as d (
            tenant_id, id, org_id, user_id, file_path, embedding, metadata, version, is_latest, previous_id, hash,
            mime, summary, key_concepts, entities, extracted_text, packet_id, chunk_count)
        values (
            v_tenant, coalesce(p_entry.id, gen_random_uuid()), memsub.current_org_id(), memsub.current_user_id(),
            p_entry.file_path, p_entry.embedding, p_entry.metadata, coalesce(p_entry.version, 1), true,
            p_entry.previous_id, p_entry.hash, p_entry.mime, p_entry.summary, coalesce(p_entry.key_concepts, '{}'),
            coalesce(p_entry.entities, '[]'), p_entry.extracted_text, p_entry.packet_id,
            coalesce(p_entry.chunk_count, 0))
        returning d.* into v_row;
    exception when unique_violation then
        -- A file path is one version chain per tenant; its latest version may belong to an organization or user
        -- this caller cannot see, and then it cannot be superseded from here.
        raise exception 'field "file_path": % is already a document of this tenant that this caller cannot see',
            p_entry.file_path using errcode = '23505', column = 'file_path';
    end;
    return v_row;
end
$$;
comment on function memsub._document_index_write(memsub.document_index) is
    'Internal: stores a document_index entry in the caller''s context; the caller holds the path''s lock '
    '(memsub._document_path_latest). An entry without a version: the latest entry it names by id takes its '
    'embedding and metadata, or, without an id, a new path gets it as version 1. An entry with a version (id, '
    'version, previous_id, hash, mime, summary, key concepts, entities, text, packet, chunk count) becomes the '
    'latest version and previous_id stops being it. 23505 naming file_path when the path''s latest version is one '
    'the caller cannot see.';

-- The mean of a document version's chunk vectors, or none when they cancel out (a zero mean has no cosine
-- distance), as its document_index.embedding.
create or replace function memsub._document_set_mean_vector(p_document_id uuid)
returns void
language sql volatile security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
    update memsub.document_index d
       set embedding = (select case when cosine_distance(m.mean, m.mean) = 'NaN'::double precision then null
                                    else m.mean end
                          from (select avg(e.vector) as mean from memsub.memory_embeddings e
                                 where e.tenant_id = d.tenant_id and e.packet_id = d.packet_id
                                   and e.embedding_type = 'content' and e.chunk_index >= 1) m),
           updated_at = now()
     where d.tenant_id = (select memsub.current_tenant_id()) and d.id = p_document_id
$$;
comment on function memsub._document_set_mean_vector(uuid) is
    'Internal: sets a document version''s embedding to the mean of its chunk vectors (NULL when they cancel out, '
    'since a zero vector has no cosine distance).';

create or replace function memsub.document_index_put(
    p_file_path text,
    p_embedding double precision[] default null,
    p_metadata  jsonb  default '{}'
) returns table (id uuid, file_path text, embedding real[], metadata jsonb, created_at timestamptz,
                 updated_at timestamptz)
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
#variable_conflict use_column
declare
    v_tenant uuid := memsub._require_tenant_id();
    v_path   text;
    v_entry  memsub.document_index;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('file_path', p_file_path),
            memsub._check_limit(pg_column_size(p_metadata), 'max_json_bytes', 'metadata');
    if p_file_path is null or memsub._is_blank(p_file_path) then
        raise exception 'file_path is required' using errcode = '22023', column = 'file_path';
    end if;
    -- The path composed (Unicode NFC), as it is stored. It is a key of the version chain's B-tree indexes, whose
    -- entries hold about 2.7 kB.
    v_path := normalize(p_file_path, nfc);
    perform memsub._check_key_bytes('file_path', v_path);
    if p_metadata is null or jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'metadata must be a JSON object' using errcode = '22023', column = 'metadata';
    end if;
    -- The same vector checks as every other vector: the installation's dimension, finite elements, a usable norm.
    v_entry.embedding := memsub._float_array_vector(p_embedding, 'embedding');
    v_entry.id := (memsub._document_path_latest(v_path)).id;
    v_entry.file_path := v_path;
    v_entry.metadata := p_metadata;
    v_entry := memsub._document_index_write(v_entry);
    perform memsub._audit_record('document_index_put',
        p_details => jsonb_build_object('document_index_id', v_entry.id, 'file_path', v_path,
                                        'dimensions', cardinality(p_embedding)));
    return query select v_entry.id, v_entry.file_path, v_entry.embedding::real[], v_entry.metadata,
                        v_entry.created_at, v_entry.updated_at;
end
$$;
comment on function memsub.document_index_put(text, double precision[], jsonb) is
    'Indexes a file path (or replaces the embedding and metadata of its latest version). The path is stored and '
    'compared composed (Unicode NFC): typed with a letter and a combining accent (NFD) it is the same path. '
    'Refused: a path longer than max_key_bytes (54000), one whose latest version the caller cannot see (23505) or '
    'that was written from another context (42501), each naming file_path. Audited as document_index_put.';

create or replace function memsub.document_index_get(p_file_path text)
returns table (id uuid, file_path text, embedding real[], metadata jsonb, created_at timestamptz,
               updated_at timestamptz)
language sql stable security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
    select d.id, d.file_path, d.embedding::real[], d.metadata, d.created_at, d.updated_at
      from memsub.document_index d
     where d.tenant_id = memsub.current_tenant_id() and d.file_path = normalize(p_file_path, nfc)
       and d.is_latest
$$;
comment on function memsub.document_index_get(text) is
    'The latest version of a file path''s document index entry, if the caller may see it. The path matches in '
    'either Unicode composition (compared composed, NFC, as stored).';

call memsub._install_row_security('memsub.document_index', array['org']);

grant select on memsub.document_index to memsub_app, memsub_analyst;
grant execute on function memsub.document_index_put(text, double precision[], jsonb) to memsub_app;
grant execute on function memsub.document_index_get(text) to memsub_app, memsub_analyst;
