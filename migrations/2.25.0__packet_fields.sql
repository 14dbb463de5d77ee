-- memsub 2.25.0: one type for a packet on its way into packet_store.
--
-- write_packet and the set-based batch path of write_packets read an envelope into the same fields and insert
-- them with the same statement (sql/120_packet_write.sql): memsub.packet_fields is that record, so the field
-- list is written once and a batch is read once.
create type memsub.packet_fields as (
    pos            integer,
    envelope       jsonb,
    stated_id      uuid,
    stated_time    timestamptz,
    packet_id      uuid,
    packet_type    text,
    payload        jsonb,
    ts             timestamptz,
    thread_id      uuid,
    ttl            timestamptz,
    importance     double precision,
    correlation_id uuid,
    session_id     text,
    trace_id       text,
    scope          text,
    tags           text[],
    lineage        jsonb,
    parent_ids     uuid[],
    derivation     text,
    metadata       jsonb,
    provenance     jsonb,
    confidence     jsonb,
    memory         jsonb,
    unknown        text[],
    clean          boolean,
    generation     integer,
    root_packet_id uuid,
    content_hash   text
);
comment on type memsub.packet_fields is
    'Internal: one envelope read for writing (sql/120_packet_write.sql): its fields validated and normalized, then '
    'its lineage and content hash, as the insert into packet_store takes them.';
comment on column memsub.packet_fields.pos is '1-based position of the envelope in its batch (1 for a single write).';
comment on column memsub.packet_fields.envelope is 'The envelope as written (memory.embeddings vectors included).';
comment on column memsub.packet_fields.stated_id is 'The packet_id the envelope names; NULL when the database gives one.';
comment on column memsub.packet_fields.stated_time is 'The timestamp the envelope names; NULL when it names none.';
comment on column memsub.packet_fields.packet_id is 'The packet''s id: stated_id, else a new random UUID.';
comment on column memsub.packet_fields.packet_type is 'Semantic category of the packet.';
comment on column memsub.packet_fields.payload is 'The free payload.';
comment on column memsub.packet_fields.ts is 'Event time: stated_time, else the transaction time.';
comment on column memsub.packet_fields.thread_id is 'Thread of the packet, if any.';
comment on column memsub.packet_fields.ttl is 'Expiry time, if any.';
comment on column memsub.packet_fields.importance is 'importance_score (0.5 when absent).';
comment on column memsub.packet_fields.correlation_id is 'Correlation id, if any.';
comment on column memsub.packet_fields.session_id is 'Session: the envelope''s, else the context''s.';
comment on column memsub.packet_fields.trace_id is 'Trace id, if any.';
comment on column memsub.packet_fields.scope is 'shared (default), cursor or l-private.';
comment on column memsub.packet_fields.tags is 'Distinct tags in order of first appearance.';
comment on column memsub.packet_fields.lineage is 'The envelope''s lineage object, if any.';
comment on column memsub.packet_fields.parent_ids is 'Distinct lineage parents in order of first appearance.';
comment on column memsub.packet_fields.derivation is 'lineage.derivation_type, if any.';
comment on column memsub.packet_fields.metadata is 'The metadata object, if any.';
comment on column memsub.packet_fields.provenance is 'The provenance object, if any.';
comment on column memsub.packet_fields.confidence is 'The confidence object, if any.';
comment on column memsub.packet_fields.memory is 'The memory object (fan-out into the layer tables), if any.';
comment on column memsub.packet_fields.unknown is 'Fields of a newer contract version, sorted (unknown_fields).';
comment on column memsub.packet_fields.clean is
    'Batch path only: false when the envelope needs the envelope-by-envelope path (which names the field).';
comment on column memsub.packet_fields.generation is 'Lineage generation, once the parents are known.';
comment on column memsub.packet_fields.root_packet_id is 'Lineage root, once the parents are known.';
comment on column memsub.packet_fields.content_hash is 'Deduplication hash (memsub.packet_content_hash).';
