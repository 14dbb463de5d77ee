-- memsub 2.1.0: multi-tenant identity, tenant-leading keys, the thread registry and row-level security.
--
-- Roles are cluster-wide and created only when missing. They are NOLOGIN group roles: a DBA grants them to
-- login roles (e.g. `create role my_service login in role memsub_app`). None has BYPASSRLS.
do $roles$
declare
    role_name text;
begin
    foreach role_name in array array['memsub_owner', 'memsub_app', 'memsub_tenant_admin',
                                     'memsub_platform_admin', 'memsub_analyst'] loop
        if not exists (select from pg_catalog.pg_roles where rolname = role_name) then
            begin
                execute format('create role %I nologin nobypassrls', role_name);
            exception when duplicate_object or unique_violation then
                null;  -- created concurrently by a migrator working on another database of this cluster
            end;
        end if;
    end loop;
end
$roles$;

comment on role memsub_owner is 'memsub: owns every memsub object; cannot log in. SECURITY DEFINER functions run as this role.';
comment on role memsub_app is 'memsub: application role; reads and writes its tenant through row-level security and stored functions.';
comment on role memsub_tenant_admin is 'memsub: tenant administrator; sees the whole tenant (all orgs, users and scopes) when its context asks for tenant_admin.';
comment on role memsub_platform_admin is 'memsub: platform administrator; sees every tenant when its context asks for platform_admin.';
comment on role memsub_analyst is 'memsub: read-only analyst; reads tables under row-level security and the raw materialized views.';

alter table memsub.packet_store
    add column tenant_id      uuid,
    add column org_id         uuid,
    add column user_id        uuid,
    add column correlation_id uuid,
    add column session_id     text,
    add column trace_id       text;

-- Data move: packets written before tenancy belong to the default tenant (the nil UUID).
update memsub.packet_store set tenant_id = '00000000-0000-0000-0000-000000000000' where tenant_id is null;

alter table memsub.packet_store alter column tenant_id set not null;

-- Keys lead with tenant_id so no row can reference another tenant's row and the table can be distributed
-- by tenant_id.
alter table memsub.packet_store drop constraint packet_store_pkey;
alter table memsub.packet_store add constraint packet_store_pkey primary key (tenant_id, packet_id);

create unique index packet_store_content_hash_key
    on memsub.packet_store (tenant_id, content_hash) where content_hash is not null;

drop index memsub.idx_packet_store_packet_type;
create index idx_packet_store_packet_type on memsub.packet_store (tenant_id, packet_type);
drop index memsub.idx_packet_store_timestamp;
create index idx_packet_store_timestamp on memsub.packet_store (tenant_id, "timestamp" desc);
drop index memsub.idx_packet_thread;
create index idx_packet_thread on memsub.packet_store (tenant_id, thread_id, "timestamp");

comment on column memsub.packet_store.tenant_id is 'Tenant isolation: set from memsub.set_context(), never from the envelope.';
comment on column memsub.packet_store.org_id is 'Organization isolation (NULL: visible to every org of the tenant).';
comment on column memsub.packet_store.user_id is 'Writing user; l-private and cursor packets are visible to this user.';
comment on column memsub.packet_store.correlation_id is 'Request correlation identifier.';
comment on column memsub.packet_store.session_id is 'Session tracing; cursor-scoped packets are visible to this session.';
comment on column memsub.packet_store.trace_id is 'Distributed tracing identifier.';

-- The thread registry makes "all packets of a thread belong to one conversation" checkable: a thread is
-- bound to the organization of its first packet.
create table memsub.packet_threads (
    tenant_id       uuid        not null,
    thread_id       uuid        not null,
    org_id          uuid,
    first_packet_id uuid,
    created_at      timestamptz not null default now(),
    constraint packet_threads_pkey primary key (tenant_id, thread_id),
    constraint packet_threads_first_packet_fkey foreign key (tenant_id, first_packet_id)
        references memsub.packet_store (tenant_id, packet_id) on delete set null (first_packet_id)
);

insert into memsub.packet_threads (tenant_id, thread_id, org_id, first_packet_id, created_at)
select distinct on (tenant_id, thread_id) tenant_id, thread_id, org_id, packet_id, "timestamp"
  from memsub.packet_store
 where thread_id is not null
 order by tenant_id, thread_id, "timestamp", packet_id;

comment on table memsub.packet_threads is 'Thread registry: each conversation thread of a tenant, bound to one organization.';
comment on column memsub.packet_threads.tenant_id is 'Tenant owning the thread.';
comment on column memsub.packet_threads.thread_id is 'Thread identifier (packet_store.thread_id).';
comment on column memsub.packet_threads.org_id is 'Organization every packet of the thread belongs to (NULL: tenant-wide).';
comment on column memsub.packet_threads.first_packet_id is 'First packet written to the thread (NULL once it was purged).';
comment on column memsub.packet_threads.created_at is 'Time of the thread''s first packet.';

alter table memsub.packet_store enable row level security;
alter table memsub.packet_store force row level security;
alter table memsub.packet_threads enable row level security;
alter table memsub.packet_threads force row level security;

-- The PacketWriteResult of seed 004: what memsub.write_packet / memsub.write_packets report per envelope.
create type memsub.packet_write_result as (
    "position"     integer,
    packet_id      uuid,
    packet_type    text,
    "timestamp"    timestamptz,
    thread_id      uuid,
    parent_ids     uuid[],
    generation     integer,
    root_packet_id uuid,
    content_hash   text,
    deduplicated   boolean,
    written        jsonb
);
comment on type memsub.packet_write_result is
    'PacketWriteResult: the DAG processing result of one envelope write (seed 004).';
comment on column memsub.packet_write_result."position" is '1-based position of the envelope in the written batch (1 for a single write).';
comment on column memsub.packet_write_result.packet_id is 'Stored packet (the existing one when deduplicated).';
comment on column memsub.packet_write_result.packet_type is 'Semantic category of the packet.';
comment on column memsub.packet_write_result."timestamp" is 'Event time of the stored packet.';
comment on column memsub.packet_write_result.thread_id is 'Thread of the packet, if any.';
comment on column memsub.packet_write_result.parent_ids is 'Lineage parents of the packet.';
comment on column memsub.packet_write_result.generation is 'Lineage generation: 0 for a packet without parents, else 1 + the deepest parent.';
comment on column memsub.packet_write_result.root_packet_id is 'Root of the lineage: the packet itself without parents, else the root of its first parent.';
comment on column memsub.packet_write_result.content_hash is 'Deduplication hash of the content.';
comment on column memsub.packet_write_result.deduplicated is 'True when the same content was already stored and the existing packet is returned.';
comment on column memsub.packet_write_result.written is 'Rows written per table, e.g. {"packet_store": 1, "packet_threads": 1}; {} when deduplicated.';
