-- Area: documents. Seed: seed 001 section 1.3.
--
-- The document index of seed 001: one entry per file path with an embedding and metadata.
--
-- Embeddings travel as double precision[] in and real[] out (cast to pgvector's vector inside), so clients need no vector type adapter.

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
    v_vector vector;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_limit(length(p_file_path), 'max_text_chars', 'file_path'),
            memsub._check_limit(pg_column_size(p_metadata), 'max_json_bytes', 'metadata');
    if p_file_path is null or btrim(p_file_path) = '' then
        raise exception 'file_path is required' using errcode = '22023', column = 'file_path';
    end if;
    if p_metadata is null or jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'metadata must be a JSON object' using errcode = '22023', column = 'metadata';
    end if;
    -- The same vector checks as every other vector: the installation's dimension, finite elements, a usable norm.
    v_vector := memsub._float_array_vector(p_embedding, 'embedding');
    insert into memsub.document_index as d (tenant_id, org_id, user_id, file_path, embedding, metadata)
    values (v_tenant, memsub.current_org_id(), memsub.current_user_id(), p_file_path, v_vector, p_metadata)
    on conflict (tenant_id, file_path) where is_latest do update
       set embedding = excluded.embedding, metadata = excluded.metadata, user_id = excluded.user_id,
           updated_at = now()
    returning d.* into v_entry;
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
