-- A session's events as rows of their own (memsub.session_events) instead of one JSON array in memsub.sessions.
--
-- An append rewrote the whole array: the session's row (and its TOAST) was written again with every event before
-- it, so an append cost and logged in proportion to the session's history (1.7 ms for the first event, 10 ms at
-- 1,900 events of 300 bytes). Now an append inserts its event and counts it in sessions.event_count, which also
-- gives the next event its position; the readers page through the rows (memsub.session_get_events).

create table memsub.session_events (
    tenant_id  uuid        not null,
    session_id text        not null,
    position   integer     not null,
    org_id     uuid,
    user_id    uuid,
    event      jsonb       not null,
    created_at timestamptz not null default now(),
    constraint session_events_pkey primary key (tenant_id, session_id, position),
    constraint session_events_session_fkey foreign key (tenant_id, session_id)
        references memsub.sessions (tenant_id, id) on delete cascade,
    constraint session_events_position_not_negative check (position >= 0),
    constraint session_events_event_is_object check (jsonb_typeof(event) = 'object')
);
comment on table memsub.session_events is
    'Events of memsub.sessions (seed 001''s sessions.events), one row each, in the order they were appended. '
    'Written only through memsub.session_append_event; deleted with their session.';
comment on column memsub.session_events.tenant_id is 'Tenant owning the session (row-level security).';
comment on column memsub.session_events.session_id is 'The session the event belongs to.';
comment on column memsub.session_events.position is
    'Place of the event in its session''s history: 0 for the first, then one more for each event appended.';
comment on column memsub.session_events.org_id is 'Organization of the session (NULL: tenant-wide).';
comment on column memsub.session_events.user_id is 'User of the session; the event is visible where its session is.';
comment on column memsub.session_events.event is 'The event as appended: a JSON object.';
comment on column memsub.session_events.created_at is 'When the event was appended.';

alter table memsub.sessions add column event_count integer not null default 0;
alter table memsub.sessions add constraint sessions_event_count_not_negative check (event_count >= 0);
comment on column memsub.sessions.event_count is
    'Number of events appended (rows of memsub.session_events); the next event''s position.';

-- Existing histories: row-level security is forced on memsub.sessions (even its owner sees no row without a
-- context), so it is lifted for the move and put back as it was.
do $$
declare
    v_enabled boolean;
    v_forced  boolean;
begin
    select c.relrowsecurity, c.relforcerowsecurity into v_enabled, v_forced
      from pg_catalog.pg_class c where c.oid = 'memsub.sessions'::regclass;
    alter table memsub.sessions no force row level security;
    alter table memsub.sessions disable row level security;
    insert into memsub.session_events (tenant_id, session_id, position, org_id, user_id, event, created_at)
    select s.tenant_id, s.id, (e.number - 1)::integer, s.org_id, s.user_id, e.event, s.updated_at
      from memsub.sessions s
     cross join lateral jsonb_array_elements(s.events) with ordinality as e(event, number);
    update memsub.sessions s set event_count = jsonb_array_length(s.events) where jsonb_array_length(s.events) > 0;
    if v_enabled then
        alter table memsub.sessions enable row level security;
    end if;
    if v_forced then
        alter table memsub.sessions force row level security;
    end if;
end
$$;

alter table memsub.sessions drop constraint sessions_events_is_array;
alter table memsub.sessions drop column events;
