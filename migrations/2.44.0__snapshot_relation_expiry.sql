-- memsub 2.44.0: nothing derived from a packet outlives its purge, not even in a world-model snapshot.
--
-- A snapshot copies the knowledge-graph relations that hold when it is taken, and a relation observed by packets
-- that expire is derived from them. From this release each relation of a new snapshot records its source packet
-- and its expiry (the edge window's ttl, sql/510_world_model.sql), and purge_expired() removes from every snapshot
-- the relations whose expiry has passed (sql/140_packet_hygiene.sql). relations_expire_at, the earliest of those
-- expiries, lets the purge find the snapshots to rewrite by an index instead of reading every snapshot.
--
-- Snapshots taken before carry neither the source nor the expiry of their relations, and their relations_expire_at
-- stays NULL: the purge leaves them as they are. They are not backfilled: an edge window's ttl today can be later
-- than when the snapshot was taken (later observations extend it), and the windows already purged cannot be
-- matched at all, so a backfill would be right for some relations only.

alter table memsub.world_model_snapshots add column relations_expire_at timestamp;
comment on column memsub.world_model_snapshots.relations_expire_at is
    'Earliest expiry (UTC) among the relations the snapshot holds (each relation''s ttl), NULL when none expires '
    'or the snapshot predates 2.44.0; purge_expired() removes the expired relations and recomputes it.';

create index idx_world_model_snapshots_relations_expire_at on memsub.world_model_snapshots (relations_expire_at)
    where relations_expire_at is not null;
comment on index memsub.idx_world_model_snapshots_relations_expire_at is
    'Snapshots holding an expiring relation, for purge_expired().';

comment on table memsub.world_model_snapshots is
    'Full world-model states of a tenant at a state version: a historical record, except that purge_expired() '
    'removes the relations derived from packets it purges (between their expiry and the purge a direct SELECT '
    'still shows them).';
comment on column memsub.world_model_snapshots.snapshot is
    'Full state: {"state_version", "entities": {id: {entity_type, attributes, confidence, version}}, "relations": '
    '[{source_entity, relationship_type, target_entity, confidence, mention_count, source_packet, ttl}]}; '
    'source_packet and ttl (UTC, NULL: never expires) are the edge''s when the snapshot was taken, absent before '
    '2.44.0.';
comment on column memsub.world_model_snapshots.relation_count is
    'Number of knowledge-graph relations the snapshot holds (captured, less those purge_expired() removed).';
