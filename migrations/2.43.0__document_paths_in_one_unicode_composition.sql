-- memsub 2.43.0: document paths are stored in one Unicode composition. A file named on macOS reaches the database
-- with its accented letters decomposed (e and a combining accent, NFD), the same name typed on Linux composed (é,
-- NFC); compared byte for byte they were two documents. The functions that take a path now compose it
-- (normalize(path, nfc), sql/810_document_index.sql and sql/820_documents.sql); the paths stored before are
-- composed here, with the file_path of their chunk vectors' metadata:
-- - a path that is the only spelling of its composed form in its tenant takes the composed form, every version;
-- - spellings of one composed form whose latest versions belong to one context (tenant-wide, or one organization)
--   were one document written twice: the latest version written last stays the latest, under the composed
--   spelling, and the other latest versions are superseded as an ingest supersedes a version (their vectors leave
--   the index and their chunks the neighbour lists; chunks and text stay, under their own spelling, for the
--   evidence that names them). The chain that had the composed spelling takes the kept chain's former spelling,
--   since a path's version numbers are unique and history is not renumbered;
-- - spellings whose latest versions belong to different contexts are left as written: a path is changed only from
--   the context that wrote it, so neither may supersede the other. A notice counts them.
-- The document packets keep the path they were written with (packets are immutable), as do the audit records.
-- normalize() needs a UTF8 database, which the migrator's preflight and the psql script check before the first
-- change.

-- Row-level security is forced on these tables (even their owner sees no row without a tenant context), so it is
-- disabled for this block and enabled again (forced or not, a table whose row-level security is disabled shows
-- its owner every row).
do $$
declare
    v_lifted regclass[];  -- the tables whose row-level security this block disables, to enable it again
    v_table  regclass;
    v_group  record;
    v_kept   memsub.document_index;
    v_losers uuid[];
    v_chunks uuid[];
    v_spare  text;
    v_apart  integer := 0;
begin
    select coalesce(array_agg(c.oid::regclass), '{}') into v_lifted
      from pg_catalog.pg_class c
     where c.oid = any (array['memsub.document_index', 'memsub.document_chunks',
                              'memsub.memory_embeddings']::regclass[])
       and c.relrowsecurity;
    foreach v_table in array v_lifted loop
        execute format('alter table %s disable row level security', v_table);
    end loop;

    -- Spellings of one composed path in one tenant.
    for v_group in
        select d.tenant_id, normalize(d.file_path, nfc) as composed
          from memsub.document_index d
         group by 1, 2
        having count(distinct d.file_path) > 1
    loop
        if (select count(distinct coalesce(d.org_id::text, 'tenant-wide')) from memsub.document_index d
             where d.tenant_id = v_group.tenant_id and d.is_latest
               and normalize(d.file_path, nfc) = v_group.composed) > 1 then
            v_apart := v_apart + 1;
            continue;
        end if;
        select d.* into v_kept from memsub.document_index d
         where d.tenant_id = v_group.tenant_id and d.is_latest and normalize(d.file_path, nfc) = v_group.composed
         order by d.created_at desc, d.id desc
         limit 1;
        select coalesce(array_agg(d.id), '{}') into v_losers from memsub.document_index d
         where d.tenant_id = v_group.tenant_id and d.is_latest and normalize(d.file_path, nfc) = v_group.composed
           and d.id <> v_kept.id;
        update memsub.document_index d set is_latest = false, superseded_at = now(), updated_at = now()
         where d.tenant_id = v_group.tenant_id and d.id = any (v_losers);
        delete from memsub.memory_embeddings e
         using memsub.document_index d
         where d.tenant_id = v_group.tenant_id and d.id = any (v_losers)
           and e.tenant_id = d.tenant_id and e.packet_id = d.packet_id
           and e.embedding_type = 'content' and e.chunk_index >= 1;
        select coalesce(array_agg(c.id), '{}') into v_chunks from memsub.document_chunks c
         where c.tenant_id = v_group.tenant_id and c.document_id = any (v_losers);
        update memsub.document_chunks c
           set neighbors = array(select n from unnest(c.neighbors) as n where n <> all (v_chunks))
         where c.tenant_id = v_group.tenant_id and c.neighbors && v_chunks;
        -- The kept chain takes the composed spelling, the chain that had it the kept chain's (through a spare
        -- name: each row's unique keys are checked as it is written).
        if v_kept.file_path <> v_group.composed then
            v_spare := v_group.composed || ' ' || gen_random_uuid()::text;
            update memsub.document_index d set file_path = v_spare
             where d.tenant_id = v_group.tenant_id and d.file_path = v_group.composed;
            update memsub.document_index d set file_path = v_group.composed
             where d.tenant_id = v_group.tenant_id and d.file_path = v_kept.file_path;
            update memsub.document_index d set file_path = v_kept.file_path
             where d.tenant_id = v_group.tenant_id and d.file_path = v_spare;
        end if;
    end loop;

    -- A path that is the only spelling of its composed form in its tenant: every version composed.
    update memsub.document_index d
       set file_path = s.composed
      from (select p.tenant_id, p.file_path, p.composed,
                   count(*) over (partition by p.tenant_id, p.composed) as spellings
              from (select distinct x.tenant_id, x.file_path, normalize(x.file_path, nfc) as composed
                      from memsub.document_index x) p) s
     where s.spellings = 1 and s.file_path <> s.composed
       and d.tenant_id = s.tenant_id and d.file_path = s.file_path;

    -- The chunk vectors (those of latest versions) name their version's path.
    update memsub.memory_embeddings e
       set metadata = jsonb_set(e.metadata, '{file_path}', to_jsonb(d.file_path))
      from memsub.document_index d
     where d.is_latest and d.packet_id is not null
       and e.tenant_id = d.tenant_id and e.packet_id = d.packet_id
       and e.embedding_type = 'content' and e.chunk_index >= 1
       and e.metadata ? 'file_path' and e.metadata ->> 'file_path' <> d.file_path;

    foreach v_table in array v_lifted loop
        execute format('alter table %s enable row level security', v_table);
    end loop;

    if v_apart > 0 then
        raise notice 'memsub: % document path(s) are spelled in two Unicode compositions by two contexts of a '
                     'tenant and were left as written (select tenant_id, org_id, file_path from '
                     'memsub.document_index where is_latest and file_path is not nfc normalized)', v_apart;
    end if;
end
$$;

comment on column memsub.document_index.file_path is
    'Path of the document (seed 003 path), e.g. design_docs/phase1_design/schema.md, composed to Unicode NFC (the '
    'functions that take a path compose it). Unique per tenant among latest versions.';
