-- LangGraph store: long-term memory items under hierarchical namespaces, per tenant, with optional vectors for
-- natural-language search and optional expiry (memsub.integrations.langgraph_store.MemsubStore).

create table memsub.langgraph_store_items (
    tenant_id   uuid             not null,
    org_id      uuid,
    namespace   text[]           collate "C" not null,
    key         text             collate "C" not null,
    value       jsonb            not null,
    created_at  timestamptz      not null default now(),
    updated_at  timestamptz      not null default now(),
    ttl_minutes double precision,
    expires_at  timestamptz,
    constraint langgraph_store_items_pkey primary key (tenant_id, namespace, key),
    constraint langgraph_store_items_value_object check (jsonb_typeof(value) = 'object'),
    constraint langgraph_store_items_ttl_positive check (ttl_minutes > 0),
    constraint langgraph_store_items_namespace_labels check (cardinality(namespace) >= 1)
);
comment on table memsub.langgraph_store_items is
    'LangGraph store items (memsub.integrations.langgraph_store.MemsubStore): a JSON object per (namespace, key), per tenant.';
comment on column memsub.langgraph_store_items.tenant_id is 'Tenant that owns the item (row-level security).';
comment on column memsub.langgraph_store_items.org_id is 'Organization of the writer''s context; NULL: tenant-wide.';
comment on column memsub.langgraph_store_items.namespace is 'The LangGraph namespace, one label per element (e.g. {users,42,memories}).';
comment on column memsub.langgraph_store_items.key is 'Key of the item within its namespace.';
comment on column memsub.langgraph_store_items.value is 'The item: a JSON object.';
comment on column memsub.langgraph_store_items.created_at is 'When the item was first written.';
comment on column memsub.langgraph_store_items.updated_at is 'When the item was last written.';
comment on column memsub.langgraph_store_items.ttl_minutes is 'Time to live in minutes, or NULL: the item does not expire.';
comment on column memsub.langgraph_store_items.expires_at is 'When the item expires (written, or refreshed on read, plus ttl_minutes); NULL: never.';

create index langgraph_store_items_expiry_idx on memsub.langgraph_store_items (tenant_id, expires_at)
    where expires_at is not null;

create table memsub.langgraph_store_vectors (
    tenant_id  uuid   not null,
    org_id     uuid,
    namespace  text[] collate "C" not null,
    key        text   collate "C" not null,
    field_name text   not null,
    embedding  vector not null,
    constraint langgraph_store_vectors_pkey primary key (tenant_id, namespace, key, field_name),
    constraint langgraph_store_vectors_item_fkey foreign key (tenant_id, namespace, key)
        references memsub.langgraph_store_items (tenant_id, namespace, key) on delete cascade
);
comment on table memsub.langgraph_store_vectors is
    'Embeddings of the indexed fields of LangGraph store items, one row per field (path) and item.';
comment on column memsub.langgraph_store_vectors.tenant_id is 'Tenant that owns the item (row-level security).';
comment on column memsub.langgraph_store_vectors.org_id is 'Organization of the writer''s context; NULL: tenant-wide.';
comment on column memsub.langgraph_store_vectors.namespace is 'Namespace of the item.';
comment on column memsub.langgraph_store_vectors.key is 'Key of the item.';
comment on column memsub.langgraph_store_vectors.field_name is 'Path of the embedded field in the item (e.g. text, or content.0 for the first of several).';
comment on column memsub.langgraph_store_vectors.embedding is 'Embedding of the field''s text (the dimension of the store''s index configuration).';

-- The row the read functions return.
create type memsub.langgraph_store_item as (
    namespace  text[],
    key        text,
    value      jsonb,
    created_at timestamptz,
    updated_at timestamptz,
    score      double precision
);
comment on type memsub.langgraph_store_item is
    'A LangGraph store item as the read functions return it; score is the similarity of a natural-language search, else NULL.';
