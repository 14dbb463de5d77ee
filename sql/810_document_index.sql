-- Area: documents. Seed: seed 001 section 1.3.
--
-- The document index of seed 001: one entry per file path with an embedding and metadata.
--
-- Embeddings travel as double precision[] in and real[] out (cast to pgvector's vector inside), so clients need no vector type adapter.

-- The one writer of document_index rows: document_index_put and document_ingest both store entries through it,
-- so an entry's identity (tenant, organization, user of the context) and the one-latest-version-per-path rule
-- are written in one place. What is written follows from the entry: one without a version number (an index
-- entry of document_index_put) updates the path's latest entry, one with a version (document_ingest) becomes it.
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
    if p_entry.version is null then
        -- The latest entry of the path gets the embedding and metadata (a new path gets version 1).
        insert into memsub.document_index as d (tenant_id, org_id, user_id, file_path, embedding, metadata)
        values (v_tenant, memsub.current_org_id(), memsub.current_user_id(), p_entry.file_path, p_entry.embedding,
                p_entry.metadata)
        on conflict (tenant_id, file_path) where is_latest do update
           set embedding = excluded.embedding, metadata = excluded.metadata, user_id = excluded.user_id,
               updated_at = now()
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
            tenant_id, id, org_id, user_id, file_path, metadata, version, is_latest, previous_id, hash, mime,
            summary, key_concepts, entities, extracted_text, packet_id, chunk_count)
        values (
            v_tenant, p_entry.id, memsub.current_org_id(), memsub.current_user_id(), p_entry.file_path,
            p_entry.metadata, p_entry.version, true, p_entry.previous_id, p_entry.hash, p_entry.mime,
            p_entry.summary, p_entry.key_concepts, p_entry.entities, p_entry.extracted_text, p_entry.packet_id,
            p_entry.chunk_count)
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
    'Internal: stores a document_index entry in the caller''s context. An entry without a version: the path''s '
    'latest entry takes its embedding and metadata (created as version 1 for a new path). An entry with a '
    'version (id, version, previous_id, hash, mime, summary, key concepts, entities, text, packet, chunk count) '
    'becomes the latest version and previous_id stops being it (23505 naming file_path when the latest version '
    'is one the caller cannot see).';

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
    v_entry  memsub.document_index;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('file_path', p_file_path),
            memsub._check_limit(pg_column_size(p_metadata), 'max_json_bytes', 'metadata');
    if p_file_path is null or memsub._is_blank(p_file_path) then
        raise exception 'file_path is required' using errcode = '22023', column = 'file_path';
    end if;
    if p_metadata is null or jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'metadata must be a JSON object' using errcode = '22023', column = 'metadata';
    end if;
    -- The same vector checks as every other vector: the installation's dimension, finite elements, a usable norm.
    v_entry.file_path := p_file_path;
    v_entry.embedding := memsub._float_array_vector(p_embedding, 'embedding');
    v_entry.metadata := p_metadata;
    v_entry := memsub._document_index_write(v_entry);
    perform memsub.audit_record('document_index_put',
        p_details => jsonb_build_object('document_index_id', v_entry.id, 'file_path', p_file_path,
                                        'dimensions', cardinality(p_embedding)));
    return query select v_entry.id, v_entry.file_path, v_entry.embedding::real[], v_entry.metadata,
                        v_entry.created_at, v_entry.updated_at;
end
$$;
comment on function memsub.document_index_put(text, double precision[], jsonb) is
    'Indexes a file path (or replaces the embedding and metadata of its latest version). Audited as document_index_put.';

create or replace function memsub.document_index_get(p_file_path text)
returns table (id uuid, file_path text, embedding real[], metadata jsonb, created_at timestamptz,
               updated_at timestamptz)
language sql stable security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
    select d.id, d.file_path, d.embedding::real[], d.metadata, d.created_at, d.updated_at
      from memsub.document_index d
     where d.tenant_id = memsub.current_tenant_id() and d.file_path = p_file_path and d.is_latest
$$;
comment on function memsub.document_index_get(text) is 'The latest version of a file path''s document index entry, if the caller may see it.';

call memsub.install_row_security('memsub.document_index', array['org']);

grant select on memsub.document_index to memsub_app, memsub_analyst;
grant execute on function memsub.document_index_put(text, double precision[], jsonb) to memsub_app;
grant execute on function memsub.document_index_get(text) to memsub_app, memsub_analyst;
