-- memsub 2.12.0: the event log keeps every turn, replays in write order, honours expiry on every read and keeps
-- lineage after purging.
--
-- * packet_store.write_seq: the order packets were written in (an identity column). Packets written in one
--   transaction share now(), so time alone cannot order a thread; a parent is always written before its child,
--   so write order puts parents first. idx_packet_thread_write_seq serves the thread replay and its cursor.
-- * content_hash now includes the packet's time (and, when the writer named one, its id): the same words said
--   again later are a new packet, a retry of the same envelope is not.
-- * memory_embeddings.ttl: the packet's expiry copied onto its vectors, so the row-level security policy that
--   hides expired rows needs no join.
-- * packet_tombstones: what remains of a purged packet for lineage walks.
-- * memsub_expiry_owner: owns purge_expired() and get_lineage(), the only readers of expired rows.
-- * packet_write_result.unknown_fields: envelope fields of a newer contract version, kept and reported.

-- The immutability trigger (sql/020_packet_guard.sql) refuses changes of content_hash; this migration recomputes
-- it once, so the trigger is off for the statements below when an earlier installation created it.
do $guard_off$
begin
    if exists (select from pg_catalog.pg_trigger where tgrelid = 'memsub.packet_store'::regclass
                                                    and tgname = 'packet_store_immutable') then
        alter table memsub.packet_store disable trigger packet_store_immutable;
    end if;
end
$guard_off$;

-- Write order ------------------------------------------------------------------------------------------------------
alter table memsub.packet_store add column write_seq bigint;
-- Existing packets keep their time order (ties by id, as replay ordered them before).
with ordered as (
    select tenant_id, packet_id, row_number() over (order by "timestamp", packet_id) as n from memsub.packet_store
)
update memsub.packet_store p set write_seq = o.n
  from ordered o where o.tenant_id = p.tenant_id and o.packet_id = p.packet_id;
alter table memsub.packet_store alter column write_seq set not null;
alter table memsub.packet_store alter column write_seq add generated always as identity;
select pg_catalog.setval(pg_catalog.pg_get_serial_sequence('memsub.packet_store', 'write_seq'),
                         coalesce((select max(write_seq) from memsub.packet_store), 0) + 1, false);
create index idx_packet_thread_write_seq on memsub.packet_store (tenant_id, thread_id, write_seq);
comment on column memsub.packet_store.write_seq is
    'Write order (identity): larger means written later; a parent always has a smaller write_seq than its '
    'children. Thread replay follows it, and memsub.get_thread''s cursor is a write_seq.';
comment on index memsub.idx_packet_thread_write_seq is 'Thread replay in write order and its keyset cursor.';

-- Deduplication by content at a time --------------------------------------------------------------------------------
-- Existing packets get the new formula without an id (the writer's choice is not recorded); legacy packets that
-- never had a hash keep none.
update memsub.packet_store p
   set content_hash = encode(sha256(convert_to(jsonb_build_object(
           'packet_type', p.packet_type,
           'payload',     p.envelope -> 'payload',
           'thread_id',   p.thread_id,
           'parent_ids',  to_jsonb(array(select x from unnest(p.parent_ids) as x order by x)),
           'scope',       p.scope,
           'org_id',      p.org_id,
           'user_id',     p.user_id,
           'session_id',  p.session_id,
           'timestamp',   to_char(p."timestamp" at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
           'packet_id',   null)::text, 'UTF8')), 'hex')
 where p.content_hash is not null;
do $guard_on$
begin
    if exists (select from pg_catalog.pg_trigger where tgrelid = 'memsub.packet_store'::regclass
                                                    and tgname = 'packet_store_immutable') then
        alter table memsub.packet_store enable trigger packet_store_immutable;
    end if;
end
$guard_on$;
comment on column memsub.packet_store.content_hash is
    'Deduplication hash: sha256 over packet_type, payload, thread, parents, scope, writer identity, timestamp '
    'and the packet_id when the writer named one.';

-- Expiry on the vectors ----------------------------------------------------------------------------------------------
alter table memsub.memory_embeddings add column ttl timestamp;
update memsub.memory_embeddings e set ttl = p.ttl
  from memsub.packet_store p
 where p.tenant_id = e.tenant_id and p.packet_id = e.packet_id and p.ttl is not null;
comment on column memsub.memory_embeddings.ttl is
    'Expiration time of the packet (UTC), copied from packet_store.ttl; an expired embedding is never read.';

-- Tombstones ---------------------------------------------------------------------------------------------------------
create table memsub.packet_tombstones (
    tenant_id      uuid        not null,
    packet_id      uuid        not null,
    packet_type    text        not null,
    thread_id      uuid,
    parent_ids     uuid[]      not null default '{}',
    generation     integer     not null,
    root_packet_id uuid        not null,
    "timestamp"    timestamptz not null,
    write_seq      bigint      not null,
    expired_at     timestamp   not null,
    purged_at      timestamptz not null default now(),
    scope          text        not null,
    org_id         uuid,
    user_id        uuid,
    session_id     text,
    constraint packet_tombstones_pkey primary key (tenant_id, packet_id),
    constraint packet_tombstones_scope_known check (scope in ('shared', 'cursor', 'l-private'))
);
create index idx_packet_tombstones_lineage on memsub.packet_tombstones using gin (parent_ids);
alter table memsub.packet_tombstones enable row level security;
alter table memsub.packet_tombstones force row level security;
comment on table memsub.packet_tombstones is
    'What remains of a purged (expired) packet: its lineage skeleton, so lineage walks still reach its ancestors. '
    'No payload, envelope, tags or vectors. Written by memsub.purge_expired().';
comment on column memsub.packet_tombstones.tenant_id is 'Tenant of the purged packet.';
comment on column memsub.packet_tombstones.packet_id is 'Id of the purged packet.';
comment on column memsub.packet_tombstones.packet_type is 'Semantic category of the purged packet.';
comment on column memsub.packet_tombstones.thread_id is 'Thread of the purged packet.';
comment on column memsub.packet_tombstones.parent_ids is 'Lineage parents of the purged packet.';
comment on column memsub.packet_tombstones.generation is 'Lineage generation of the purged packet.';
comment on column memsub.packet_tombstones.root_packet_id is 'Lineage root of the purged packet.';
comment on column memsub.packet_tombstones."timestamp" is 'Event time of the purged packet.';
comment on column memsub.packet_tombstones.write_seq is 'Write order of the purged packet.';
comment on column memsub.packet_tombstones.expired_at is 'The ttl of the purged packet (UTC).';
comment on column memsub.packet_tombstones.purged_at is 'When the packet was purged.';
comment on column memsub.packet_tombstones.scope is 'Visibility scope of the purged packet (the same policies apply).';
comment on column memsub.packet_tombstones.org_id is 'Organization of the purged packet.';
comment on column memsub.packet_tombstones.user_id is 'Writing user of the purged packet.';
comment on column memsub.packet_tombstones.session_id is 'Session of the purged packet.';

do $expiry_owner$
begin
    if not exists (select from pg_catalog.pg_roles where rolname = 'memsub_expiry_owner') then
        begin
            create role memsub_expiry_owner nologin;
        exception when duplicate_object or unique_violation then
            null;  -- created concurrently by a migrator working on another database of this cluster
        end;
    end if;
end
$expiry_owner$;
comment on role memsub_expiry_owner is
    'memsub: owns purge_expired() and get_lineage(), the only functions that see expired packets (under the '
    'tenant, org and scope policies). Cannot log in; grant it to nobody.';

-- Forward-compatible envelopes -----------------------------------------------------------------------------------------
alter type memsub.packet_write_result add attribute unknown_fields text[];
comment on column memsub.packet_write_result.unknown_fields is
    'Envelope fields this version of the contract does not know (e.g. from a newer minor version), kept in the '
    'stored envelope; lineage fields are named lineage.<field>. Empty when every field is known.';
