-- memsub 2.24.0: packet_store keeps the indexes its queries use, and stores each embedding's vector once.
--
-- Every index costs every write. Read as the application role (row-level security applies, as for every
-- client; docs/benchmarks.md, "Write path"), the plans show:
-- * idx_packet_tags (GIN on tags) and idx_packet_lineage (GIN on parent_ids) are never used: the array operators
--   @> and && are not leakproof, so under row-level security they cannot be index conditions. Tag filters
--   (semantic_search) test the packets the vector search found; the descendant walk of get_lineage reads the
--   tenant by its leading key either way.
-- * idx_packet_thread (tenant_id, thread_id, "timestamp") and idx_packet_thread_write_seq (tenant_id, thread_id,
--   write_seq) both lead with the thread; replay orders by write_seq. One index serves both, under the seed's name,
--   and holds only packets of a thread (a query for one thread never needs the others).
-- Envelopes written from this version on keep JSON null in place of each memory.embeddings[].vector, which lives
-- in memory_embeddings.vector (sql/030_packet_write.sql); envelopes written before keep theirs and read the same.
drop index memsub.idx_packet_tags;
drop index memsub.idx_packet_lineage;
drop index memsub.idx_packet_thread;
drop index memsub.idx_packet_thread_write_seq;
create index idx_packet_thread on memsub.packet_store (tenant_id, thread_id, write_seq) where thread_id is not null;
comment on index memsub.idx_packet_thread is
    'Thread replay in write order (get_thread) and its keyset cursor; any query of one thread of a tenant.';
