-- memsub 2.28.0: fewer bytes per embedded packet, with the same queries served by the same indexes.
--
-- Measured per item in bench/storage_breakdown.py (docs/benchmarks.md, "Write path"):
-- * idx_packet_store_timestamp was (tenant_id, "timestamp" desc). Packets arrive in time order, so each new
--   entry went to the front of its tenant's range and every full leaf split in half: the index stayed about half
--   full. Ascending, each entry goes after the last one and a split leaves the full page behind. A backward scan
--   serves "timestamp" desc the same way.
-- * idx_memory_embeddings_search held an entry for every embedding, also those with no chunk_text (an empty
--   tsvector, which no query matches): most embeddings of packets have none. It now holds the rows with text.
-- * packet_store_content_hash_key indexed the hash as 64 hexadecimal characters; the index holds its 32 bytes.
drop index memsub.idx_packet_store_timestamp;
create index idx_packet_store_timestamp on memsub.packet_store (tenant_id, "timestamp");
comment on index memsub.idx_packet_store_timestamp is
    'A tenant''s packets in time order, either way: filters and orderings by "timestamp" within a tenant.';

drop index memsub.idx_memory_embeddings_search;
create index idx_memory_embeddings_search on memsub.memory_embeddings using gin (tenant_id, search_tsv)
    where chunk_text is not null;
comment on index memsub.idx_memory_embeddings_search is
    'GIN over (tenant_id, search_tsv) of the embeddings with chunk_text: one tenant''s full-text matches '
    '(btree_gin for the tenant key). memsub._keyword_candidates states chunk_text is not null to use it.';

drop index memsub.packet_store_content_hash_key;
create unique index packet_store_content_hash_key
    on memsub.packet_store (tenant_id, decode(content_hash, 'hex')) where content_hash is not null;
comment on index memsub.packet_store_content_hash_key is
    'Deduplication: one packet per content hash in a tenant, the hash kept as its 32 bytes (a lookup compares '
    'decode(content_hash, ''hex'')).';
