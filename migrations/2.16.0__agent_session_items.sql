-- Agent session items: the conversation history an OpenAI Agents SDK session keeps, per tenant.
--
-- The SDK appends items, reads the newest N, pops the newest and clears a session, so items are deletable and
-- live in their own table instead of the immutable packet_store or the append-only events of memsub.sessions
-- (docs/decisions.md, "Framework adapters").

create table memsub.agent_session_items (
    tenant_id  uuid        not null,
    org_id     uuid,
    session_id text        not null,
    item_id    bigint      generated always as identity,
    item       json        not null,
    created_at timestamptz not null default now(),
    constraint agent_session_items_pkey primary key (tenant_id, session_id, item_id),
    constraint agent_session_items_session_id_not_blank check (btrim(session_id) <> ''),
    constraint agent_session_items_item_object check (json_typeof(item) = 'object')
);
comment on table memsub.agent_session_items is
    'Conversation items of OpenAI Agents SDK sessions (memsub.integrations.openai_agents.MemsubSession), per tenant; '
    'a session''s history is its items in item_id order.';
comment on column memsub.agent_session_items.tenant_id is 'Tenant that owns the item (row-level security).';
comment on column memsub.agent_session_items.org_id is 'Organization of the writer''s context; NULL: tenant-wide.';
comment on column memsub.agent_session_items.session_id is 'The SDK session id (Session.session_id).';
comment on column memsub.agent_session_items.item_id is 'Position in the history: a later item has a larger id.';
comment on column memsub.agent_session_items.item is
    'The conversation item (an SDK input item: a JSON object), kept as the text the SDK sent.';
comment on column memsub.agent_session_items.created_at is 'When the item was added.';
