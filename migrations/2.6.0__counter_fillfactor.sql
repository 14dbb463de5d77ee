-- memsub 2.6.0: leave room on the pages of vector-carrying rows whose counters change on every access.
--
-- semantic_memory and reflection_store keep access_count/last_accessed next to an HNSW-indexed vector. With
-- full pages (fillfactor 100) a counter update cannot stay on its page, so PostgreSQL writes a new tuple
-- version and inserts it into the HNSW graph again. bench/hot_counters.py measured this on 20k x vector(384):
-- fillfactor 100 gave 602 updates/s with 38 % heap-only-tuple (HOT) updates and a growing HNSW index;
-- fillfactor 80 gave 3458 updates/s with 100 % HOT updates and no index growth, faster than moving the
-- counter to a narrow side table (2992 updates/s). The setting applies to pages written from now on.

alter table memsub.semantic_memory set (fillfactor = 80);
alter table memsub.reflection_store set (fillfactor = 80);
