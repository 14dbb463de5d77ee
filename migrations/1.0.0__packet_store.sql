-- memsub 1.0.0: the central event log, packet_store, with its primary indexes.
-- Every agent event, memory write, reasoning trace and insight is stored here as a PacketEnvelope.

create schema if not exists memsub;
comment on schema memsub is 'memsub: PostgreSQL-native memory substrate for AI agents (tables, functions, views).';

create table memsub.packet_store (
    packet_id   uuid        not null default gen_random_uuid(),
    packet_type text        not null,
    envelope    jsonb       not null,
    "timestamp" timestamptz not null default now(),
    routing     jsonb,
    provenance  jsonb,
    constraint packet_store_pkey primary key (packet_id),
    constraint packet_store_packet_type_not_blank check (length(btrim(packet_type)) > 0),
    constraint packet_store_envelope_is_object check (jsonb_typeof(envelope) = 'object')
);

create index idx_packet_store_packet_type on memsub.packet_store (packet_type);
create index idx_packet_store_timestamp on memsub.packet_store ("timestamp" desc);

comment on table memsub.packet_store is
    'Central event log: one immutable row per PacketEnvelope (seed 004). Written only through memsub.write_packet(s).';
comment on column memsub.packet_store.packet_id is 'Unique packet identifier (generated when the envelope has none).';
comment on column memsub.packet_store.packet_type is 'Semantic category: event, memory_write, reasoning_trace, insight, ...';
comment on column memsub.packet_store.envelope is 'The full, normalized PacketEnvelope as JSON.';
comment on column memsub.packet_store."timestamp" is 'Event time (UTC; generated when the envelope has none).';
comment on column memsub.packet_store.routing is 'Agent routing metadata (the envelope''s metadata object: agent, domain, reasoning mode).';
comment on column memsub.packet_store.provenance is 'Source and derivation info (the envelope''s provenance object).';
