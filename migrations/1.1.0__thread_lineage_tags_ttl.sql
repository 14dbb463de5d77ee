-- memsub 1.1.0: PacketEnvelope v1.1.0 extensions (thread, DAG lineage, tags, TTL) and their indexes.

alter table memsub.packet_store
    add column thread_id  uuid,
    add column parent_ids uuid[]    not null default '{}',
    add column tags       text[]    not null default '{}',
    add column ttl        timestamp;

-- Data move: envelopes written before 1.1.0 may already carry the extension fields.
update memsub.packet_store
   set thread_id = (envelope ->> 'thread_id')::uuid
 where envelope ->> 'thread_id' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

update memsub.packet_store
   set parent_ids = array(
           select distinct p::uuid
             from jsonb_array_elements_text(envelope -> 'lineage' -> 'parent_ids') as p
            where p ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')
 where jsonb_typeof(envelope -> 'lineage' -> 'parent_ids') = 'array';

update memsub.packet_store
   set tags = array(select distinct t from jsonb_array_elements_text(envelope -> 'tags') as t order by t)
 where jsonb_typeof(envelope -> 'tags') = 'array';

create index idx_packet_thread on memsub.packet_store (thread_id);
create index idx_packet_lineage on memsub.packet_store using gin (parent_ids);
create index idx_packet_tags on memsub.packet_store using gin (tags);
create index idx_packet_ttl on memsub.packet_store (ttl) where ttl is not null;

comment on column memsub.packet_store.thread_id is 'Conversation/session thread; all packets of a thread belong to one conversation.';
comment on column memsub.packet_store.parent_ids is 'Multi-parent lineage (DAG): packets this one was derived from. Every parent exists and is visible to the writer.';
comment on column memsub.packet_store.tags is 'Lightweight labels for filtering (duplicates removed).';
comment on column memsub.packet_store.ttl is 'Expiration time, UTC (timestamp without time zone, as the seed specifies). memsub.purge_expired() removes expired packets.';
