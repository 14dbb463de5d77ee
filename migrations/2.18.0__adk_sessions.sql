-- Google ADK sessions and memory (memsub.integrations.adk): ADK's app, user and session state, session events,
-- and the memory of ingested sessions, per tenant and organization. docs/decisions.md ("Framework adapters")
-- says why these are tables of their own rather than memsub.sessions and memsub.memory_entries.
--
-- ADK names everything with free-form strings (app_name, user_id, session_id). Each row also carries the
-- writer's organization; org_key (the organization, or the nil uuid for tenant-wide contexts) is part of every
-- key, so each organization of a tenant is an ADK world of its own and never collides with another's rows.

create table memsub.adk_app_states (
    tenant_id  uuid        not null,
    org_id     uuid,
    org_key    uuid        generated always as (coalesce(org_id, '00000000-0000-0000-0000-000000000000'::uuid)) stored,
    app_name   text        collate "C" not null,
    state      jsonb       not null default '{}',
    updated_at timestamptz not null default now(),
    constraint adk_app_states_pkey primary key (tenant_id, org_key, app_name),
    constraint adk_app_states_state_object check (jsonb_typeof(state) = 'object')
);
comment on table memsub.adk_app_states is
    'ADK app state (keys written as app:<key>), one JSON object per app, shared by every user and session of the app.';
comment on column memsub.adk_app_states.tenant_id is 'Tenant that owns the state (row-level security).';
comment on column memsub.adk_app_states.org_id is 'Organization of the writer''s context; NULL: tenant-wide.';
comment on column memsub.adk_app_states.org_key is 'org_id, or the nil uuid when NULL: the organization part of the key.';
comment on column memsub.adk_app_states.app_name is 'ADK app name.';
comment on column memsub.adk_app_states.state is 'The app state, keys without their app: prefix.';
comment on column memsub.adk_app_states.updated_at is 'When the state last changed.';

create table memsub.adk_user_states (
    tenant_id  uuid        not null,
    org_id     uuid,
    org_key    uuid        generated always as (coalesce(org_id, '00000000-0000-0000-0000-000000000000'::uuid)) stored,
    app_name   text        collate "C" not null,
    user_id    text        collate "C" not null,
    state      jsonb       not null default '{}',
    updated_at timestamptz not null default now(),
    constraint adk_user_states_pkey primary key (tenant_id, org_key, app_name, user_id),
    constraint adk_user_states_state_object check (jsonb_typeof(state) = 'object')
);
comment on table memsub.adk_user_states is
    'ADK user state (keys written as user:<key>), one JSON object per app and user, shared by the user''s sessions.';
comment on column memsub.adk_user_states.tenant_id is 'Tenant that owns the state (row-level security).';
comment on column memsub.adk_user_states.org_id is 'Organization of the writer''s context; NULL: tenant-wide.';
comment on column memsub.adk_user_states.org_key is 'org_id, or the nil uuid when NULL: the organization part of the key.';
comment on column memsub.adk_user_states.app_name is 'ADK app name.';
comment on column memsub.adk_user_states.user_id is 'ADK user id (free-form text, not a memsub user uuid).';
comment on column memsub.adk_user_states.state is 'The user state, keys without their user: prefix.';
comment on column memsub.adk_user_states.updated_at is 'When the state last changed.';

create table memsub.adk_sessions (
    tenant_id   uuid        not null,
    org_id      uuid,
    org_key     uuid        generated always as (coalesce(org_id, '00000000-0000-0000-0000-000000000000'::uuid)) stored,
    app_name    text        collate "C" not null,
    user_id     text        collate "C" not null,
    id          text        collate "C" not null,
    state       jsonb       not null default '{}',
    event_count bigint      not null default 0,
    created_at  timestamptz not null default now(),
    updated_at  timestamptz not null default now(),
    constraint adk_sessions_pkey primary key (tenant_id, org_key, app_name, user_id, id),
    constraint adk_sessions_state_object check (jsonb_typeof(state) = 'object'),
    constraint adk_sessions_event_count check (event_count >= 0)
);
comment on table memsub.adk_sessions is
    'ADK sessions: one conversation of an ADK user in an app, its session-scoped state (unprefixed keys).';
comment on column memsub.adk_sessions.tenant_id is 'Tenant that owns the session (row-level security).';
comment on column memsub.adk_sessions.org_id is 'Organization of the creator''s context; NULL: tenant-wide.';
comment on column memsub.adk_sessions.org_key is 'org_id, or the nil uuid when NULL: the organization part of the key.';
comment on column memsub.adk_sessions.app_name is 'ADK app name.';
comment on column memsub.adk_sessions.user_id is 'ADK user id (free-form text).';
comment on column memsub.adk_sessions.id is 'ADK session id, unique per app and user.';
comment on column memsub.adk_sessions.state is 'Session state: the keys without an app:, user: or temp: prefix.';
comment on column memsub.adk_sessions.event_count is 'Number of events appended; the next event''s position.';
comment on column memsub.adk_sessions.created_at is 'When the session was created.';
comment on column memsub.adk_sessions.updated_at is 'Last event appended (ADK''s last_update_time).';

create table memsub.adk_events (
    tenant_id     uuid             not null,
    org_id        uuid,
    org_key       uuid             generated always as (coalesce(org_id, '00000000-0000-0000-0000-000000000000'::uuid)) stored,
    app_name      text             collate "C" not null,
    user_id       text             collate "C" not null,
    session_id    text             collate "C" not null,
    position      bigint           not null,
    id            text             not null,
    author        text,
    invocation_id text,
    "timestamp"   double precision not null,
    event         jsonb            not null,
    constraint adk_events_pkey primary key (tenant_id, org_key, app_name, user_id, session_id, position),
    constraint adk_events_event_object check (jsonb_typeof(event) = 'object'),
    constraint adk_events_position check (position >= 0),
    constraint adk_events_session_fkey foreign key (tenant_id, org_key, app_name, user_id, session_id)
        references memsub.adk_sessions (tenant_id, org_key, app_name, user_id, id) on delete cascade
);
comment on table memsub.adk_events is 'Events of ADK sessions, in the order they were appended.';
comment on column memsub.adk_events.tenant_id is 'Tenant that owns the event (row-level security).';
comment on column memsub.adk_events.org_id is 'Organization of the writer''s context; NULL: tenant-wide.';
comment on column memsub.adk_events.org_key is 'org_id, or the nil uuid when NULL: the organization part of the key.';
comment on column memsub.adk_events.app_name is 'App of the session.';
comment on column memsub.adk_events.user_id is 'ADK user of the session.';
comment on column memsub.adk_events.session_id is 'Session the event belongs to.';
comment on column memsub.adk_events.position is 'Order of the event in its session (0 first).';
comment on column memsub.adk_events.id is 'ADK event id.';
comment on column memsub.adk_events.author is 'Author of the event (user or an agent name).';
comment on column memsub.adk_events.invocation_id is 'ADK invocation the event belongs to.';
comment on column memsub.adk_events."timestamp" is 'ADK event time, seconds since the epoch (filtered by GetSessionConfig.after_timestamp).';
comment on column memsub.adk_events.event is 'The whole ADK event as JSON (pydantic JSON mode: bytes are base64).';

create index adk_events_time_idx on memsub.adk_events (tenant_id, org_key, app_name, user_id, session_id, "timestamp");

create table memsub.adk_memories (
    tenant_id   uuid             not null,
    org_id      uuid,
    org_key     uuid             generated always as (coalesce(org_id, '00000000-0000-0000-0000-000000000000'::uuid)) stored,
    app_name    text             collate "C" not null,
    user_id     text             collate "C" not null,
    session_id  text             collate "C" not null,
    event_id    text             collate "C" not null,
    author      text,
    "timestamp" double precision,
    content     jsonb            not null,
    text        text             not null,
    words       text[]           not null,
    embedding   vector,
    created_at  timestamptz      not null default now(),
    constraint adk_memories_pkey primary key (tenant_id, org_key, app_name, user_id, session_id, event_id),
    constraint adk_memories_content_object check (jsonb_typeof(content) = 'object')
);
comment on table memsub.adk_memories is
    'ADK memory (memsub.integrations.adk.MemsubMemoryService): the text events of sessions added to memory, '
    'searchable by keyword and, when embedded, by similarity. Kept when the session itself is deleted.';
comment on column memsub.adk_memories.tenant_id is 'Tenant that owns the memory (row-level security).';
comment on column memsub.adk_memories.org_id is 'Organization of the writer''s context; NULL: tenant-wide.';
comment on column memsub.adk_memories.org_key is 'org_id, or the nil uuid when NULL: the organization part of the key.';
comment on column memsub.adk_memories.app_name is 'App of the session the memory came from.';
comment on column memsub.adk_memories.user_id is 'ADK user the memory belongs to (searches are per app and user).';
comment on column memsub.adk_memories.session_id is 'Session the memory came from.';
comment on column memsub.adk_memories.event_id is 'ADK id of the event the memory came from.';
comment on column memsub.adk_memories.author is 'Author of the event.';
comment on column memsub.adk_memories."timestamp" is 'ADK event time, seconds since the epoch.';
comment on column memsub.adk_memories.content is 'The event''s content (google.genai Content as JSON).';
comment on column memsub.adk_memories.text is 'The text parts of the content, joined by newlines.';
comment on column memsub.adk_memories.words is 'Distinct lower-case words of text: what keyword search matches.';
comment on column memsub.adk_memories.embedding is 'Embedding of text, when the memory service has an embedder; NULL otherwise.';
comment on column memsub.adk_memories.created_at is 'When the memory was (last) added.';

create index adk_memories_words_idx on memsub.adk_memories using gin (words);
