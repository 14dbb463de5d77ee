-- LangGraph checkpoints: the state a LangGraph graph saves after each step, per tenant.
--
-- A checkpoint is the serialized graph state (LangGraph's own serializer: a type tag and bytes) plus JSON
-- metadata; writes are the pending task outputs recorded against a checkpoint. Checkpoints form a parent chain
-- per (thread, namespace), like the packet lineage, but LangGraph deletes and prunes them, so they live in
-- their own tables instead of the immutable packet_store (docs/decisions.md).

create table memsub.langgraph_checkpoints (
    tenant_id            uuid        not null,
    org_id               uuid,
    thread_id            text        not null,
    checkpoint_ns        text        not null default '',
    checkpoint_id        text        not null,
    parent_checkpoint_id text,
    checkpoint_type      text        not null,
    checkpoint           bytea       not null,
    metadata             jsonb       not null default '{}'::jsonb,
    created_at           timestamptz not null default now(),
    constraint langgraph_checkpoints_pkey primary key (tenant_id, thread_id, checkpoint_ns, checkpoint_id),
    constraint langgraph_checkpoints_metadata_object check (jsonb_typeof(metadata) = 'object')
);
comment on table memsub.langgraph_checkpoints is
    'LangGraph checkpoints (memsub.integrations.langgraph.MemsubSaver): one row per saved graph state, per tenant.';
comment on column memsub.langgraph_checkpoints.tenant_id is 'Tenant that owns the checkpoint (row-level security).';
comment on column memsub.langgraph_checkpoints.org_id is 'Organization of the writer''s context; NULL: tenant-wide.';
comment on column memsub.langgraph_checkpoints.thread_id is 'LangGraph thread id (configurable.thread_id).';
comment on column memsub.langgraph_checkpoints.checkpoint_ns is 'LangGraph checkpoint namespace; '''' for the root graph.';
comment on column memsub.langgraph_checkpoints.checkpoint_id is 'LangGraph checkpoint id (time-ordered: a later checkpoint sorts after).';
comment on column memsub.langgraph_checkpoints.parent_checkpoint_id is 'The checkpoint this one follows in the same thread and namespace.';
comment on column memsub.langgraph_checkpoints.checkpoint_type is 'Type tag of the serialized checkpoint (LangGraph serializer).';
comment on column memsub.langgraph_checkpoints.checkpoint is 'The serialized checkpoint.';
comment on column memsub.langgraph_checkpoints.metadata is 'Checkpoint metadata as JSON (source, step, run_id, parents, ...).';
comment on column memsub.langgraph_checkpoints.created_at is 'When the row was first written.';

create index langgraph_checkpoints_run_idx on memsub.langgraph_checkpoints (tenant_id, (metadata ->> 'run_id'))
    where metadata ? 'run_id';

create table memsub.langgraph_checkpoint_writes (
    tenant_id     uuid    not null,
    org_id        uuid,
    thread_id     text    not null,
    checkpoint_ns text    not null default '',
    checkpoint_id text    not null,
    task_id       text    not null,
    task_path     text    not null default '',
    idx           integer not null,
    channel       text    not null,
    value_type    text    not null,
    value         bytea,
    constraint langgraph_checkpoint_writes_pkey primary key (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
comment on table memsub.langgraph_checkpoint_writes is
    'Pending writes of LangGraph tasks, recorded against a checkpoint (memsub.langgraph_checkpoint_put_writes).';
comment on column memsub.langgraph_checkpoint_writes.tenant_id is 'Tenant that owns the write (row-level security).';
comment on column memsub.langgraph_checkpoint_writes.org_id is 'Organization of the writer''s context; NULL: tenant-wide.';
comment on column memsub.langgraph_checkpoint_writes.thread_id is 'LangGraph thread id of the checkpoint.';
comment on column memsub.langgraph_checkpoint_writes.checkpoint_ns is 'Checkpoint namespace of the checkpoint.';
comment on column memsub.langgraph_checkpoint_writes.checkpoint_id is 'The checkpoint the write belongs to.';
comment on column memsub.langgraph_checkpoint_writes.task_id is 'LangGraph task that produced the write.';
comment on column memsub.langgraph_checkpoint_writes.task_path is 'Path of the task in the graph.';
comment on column memsub.langgraph_checkpoint_writes.idx is 'Position of the write within the task; negative for LangGraph''s special channels (errors, interrupts).';
comment on column memsub.langgraph_checkpoint_writes.channel is 'Channel written.';
comment on column memsub.langgraph_checkpoint_writes.value_type is 'Type tag of the serialized value (LangGraph serializer).';
comment on column memsub.langgraph_checkpoint_writes.value is 'The serialized value.';

-- The row both read functions return: a checkpoint and its pending writes as parallel arrays.
create type memsub.langgraph_checkpoint_row as (
    thread_id            text,
    checkpoint_ns        text,
    checkpoint_id        text,
    parent_checkpoint_id text,
    checkpoint_type      text,
    checkpoint           bytea,
    metadata             jsonb,
    write_task_ids       text[],
    write_task_paths     text[],
    write_idx            integer[],
    write_channels       text[],
    write_value_types    text[],
    write_values         bytea[]
);
comment on type memsub.langgraph_checkpoint_row is
    'A LangGraph checkpoint with its pending writes (task ids, task paths, idx, channels, value types, values).';
