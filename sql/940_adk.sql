-- Area: integrations. Seed: none (an adapter: Google ADK's session and memory services over memsub).
--
-- Google ADK sessions and memory (memsub.integrations.adk): create, get, list and delete sessions, append events
-- with their state deltas, add sessions to memory and search it. Tables: migrations/2.18.0__adk_sessions.sql.
--
-- State keys follow ADK: app:<key> goes to the app's state, user:<key> to the user's state (per app), temp:<key>
-- is never stored, any other key is the session's. The functions are SECURITY DEFINER over tables the client
-- roles can only read; row-level security is forced, and every query also names the context tenant and
-- organization (org_key), so each organization of a tenant is an ADK world of its own.

call memsub._install_row_security('memsub.adk_app_states', array['org']);
call memsub._install_row_security('memsub.adk_user_states', array['org']);
call memsub._install_row_security('memsub.adk_sessions', array['org']);
call memsub._install_row_security('memsub.adk_events', array['org']);
call memsub._install_row_security('memsub.adk_memories', array['org']);

create or replace function memsub._adk_org_key() returns uuid
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
    select coalesce(memsub.current_org_id(), '00000000-0000-0000-0000-000000000000'::uuid)
$$;
comment on function memsub._adk_org_key() is
    'The context organization, or the nil uuid for a tenant-wide context: the org_key of the ADK tables.';

create or replace function memsub._adk_check_name(p_value text, p_field text) returns text
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    perform memsub._check_text_limits(p_field, p_value);
    perform memsub._check_limit(octet_length(p_value), 'max_id_bytes', p_field);  -- a key of the ADK tables' rows
    if p_value is null or p_value = '' or p_value ~ '[[:cntrl:]]' then
        raise exception 'memsub: % must be a non-empty string without control characters', p_field
            using errcode = '22023', column = p_field;
    end if;
    return p_value;
end
$$;
comment on function memsub._adk_check_name(text, text) is
    'Returns p_value, or raises 22023 naming p_field when it is NULL, empty or holds a control character '
    '(54000 when it is over max_text_chars, or longer than max_id_bytes: the ADK tables key their rows by it).';

create or replace function memsub._adk_check_state(p_state jsonb, p_field text) returns jsonb
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    perform memsub._check_limit(pg_column_size(p_state), 'max_json_bytes', p_field);
    if p_state is not null and jsonb_typeof(p_state) <> 'object' then
        raise exception 'memsub: % must be a JSON object', p_field using errcode = '22023', column = p_field;
    end if;
    return coalesce(p_state, '{}');
end
$$;
comment on function memsub._adk_check_state(jsonb, text) is
    'Returns p_state (NULL as {}), or raises 22023 naming p_field when it is not a JSON object.';

create or replace function memsub._adk_state_part(p_state jsonb, p_prefix text) returns jsonb
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(jsonb_object_agg(substr(e.key, length(p_prefix) + 1), e.value), '{}')
      from jsonb_each(p_state) e
     where case when p_prefix = '' then e.key not like 'app:%' and e.key not like 'user:%' and e.key not like 'temp:%'
                else left(e.key, length(p_prefix)) = p_prefix end
$$;
comment on function memsub._adk_state_part(jsonb, text) is
    'The keys of an ADK state (delta) with the prefix (app: or user:), the prefix removed; with '''' the keys '
    'without an app:, user: or temp: prefix.';

create or replace function memsub._adk_merged_state(p_app jsonb, p_user jsonb, p_session jsonb) returns jsonb
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(p_session, '{}')
        || coalesce((select jsonb_object_agg('app:' || key, value) from jsonb_each(p_app)), '{}')
        || coalesce((select jsonb_object_agg('user:' || key, value) from jsonb_each(p_user)), '{}')
$$;
comment on function memsub._adk_merged_state(jsonb, jsonb, jsonb) is
    'The state ADK sees: the session''s keys, the app''s as app:<key> and the user''s as user:<key>.';

create or replace function memsub._adk_write_states(p_app_name text, p_user_id text, p_delta jsonb)
returns table (app_state jsonb, user_state jsonb)
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
    org    uuid := memsub.current_org_id();
    orgk   uuid := memsub._adk_org_key();
    app_delta  jsonb := memsub._adk_state_part(p_delta, 'app:');
    user_delta jsonb := memsub._adk_state_part(p_delta, 'user:');
begin
    insert into memsub.adk_app_states as s (tenant_id, org_id, app_name, state)
    values (tenant, org, p_app_name, app_delta)
    on conflict (tenant_id, org_key, app_name) do update
       set state = s.state || excluded.state,
           updated_at = case when excluded.state = '{}' then s.updated_at else now() end
    returning s.state into app_state;
    insert into memsub.adk_user_states as s (tenant_id, org_id, app_name, user_id, state)
    values (tenant, org, p_app_name, p_user_id, user_delta)
    on conflict (tenant_id, org_key, app_name, user_id) do update
       set state = s.state || excluded.state,
           updated_at = case when excluded.state = '{}' then s.updated_at else now() end
    returning s.state into user_state;
    return next;
end
$$;
comment on function memsub._adk_write_states(text, text, jsonb) is
    'Internal: merges the app: and user: keys of an ADK state delta into the app''s and user''s states of the '
    'context tenant and organization (creating them) and returns both states.';

create or replace function memsub.adk_session_create(
    p_app_name   text,
    p_user_id    text,
    p_session_id text  default null,
    p_state      jsonb default null
) returns table (id text, state jsonb, last_update_time double precision)
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant  uuid := memsub._require_tenant_id();
    delta   jsonb;
    states  record;
    created memsub.adk_sessions;
begin
    perform memsub._adk_check_name(p_app_name, 'app_name'), memsub._adk_check_name(p_user_id, 'user_id');
    if p_session_id is not null then
        perform memsub._adk_check_name(p_session_id, 'session_id');
    end if;
    delta := memsub._adk_check_state(p_state, 'state');
    select * into states from memsub._adk_write_states(p_app_name, p_user_id, delta);
    insert into memsub.adk_sessions as s (tenant_id, org_id, app_name, user_id, id, state)
    values (tenant, memsub.current_org_id(), p_app_name, p_user_id, coalesce(p_session_id, gen_random_uuid()::text),
            memsub._adk_state_part(delta, ''))
    on conflict do nothing
    returning s.* into created;
    if created.id is null then
        raise exception 'memsub: session "%" of user "%" in app "%" already exists', p_session_id, p_user_id, p_app_name
            using errcode = '23505', column = 'session_id';
    end if;
    return query select created.id::text, memsub._adk_merged_state(states.app_state, states.user_state, created.state),
                        extract(epoch from created.updated_at)::double precision;
end
$$;
comment on function memsub.adk_session_create(text, text, text, jsonb) is
    'Creates an ADK session (id generated when NULL) of the context tenant and organization; the initial state''s '
    'app: and user: keys go to the app''s and user''s states, temp: keys are dropped. Returns the id, the merged '
    'state and the last update time (epoch seconds). 23505 naming session_id when it exists.';

create or replace function memsub.adk_session_get(
    p_app_name          text,
    p_user_id           text,
    p_session_id        text,
    p_num_recent_events integer          default null,
    p_after_timestamp   double precision default null
) returns table (state jsonb, last_update_time double precision, events jsonb)
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
    orgk   uuid := memsub._adk_org_key();
begin
    perform memsub._adk_check_name(p_app_name, 'app_name'), memsub._adk_check_name(p_user_id, 'user_id'),
            memsub._adk_check_name(p_session_id, 'session_id');
    if p_num_recent_events < 0 then
        raise exception 'memsub: num_recent_events must not be negative' using errcode = '22023',
            column = 'num_recent_events';
    end if;
    -- NULL (and 0, which the adapter sends as NULL) is every event, as ADK asks; a count is held to max_rows.
    perform memsub._check_limit(p_num_recent_events, 'max_rows', 'num_recent_events');
    if p_after_timestamp = 'NaN'::float8 then
        raise exception 'memsub: after_timestamp must be a number of seconds' using errcode = '22023',
            column = 'after_timestamp';
    end if;
    return query
    select memsub._adk_merged_state(
               (select a.state from memsub.adk_app_states a
                 where a.tenant_id = tenant and a.org_key = orgk and a.app_name = p_app_name),
               (select u.state from memsub.adk_user_states u
                 where u.tenant_id = tenant and u.org_key = orgk and u.app_name = p_app_name
                   and u.user_id = p_user_id),
               s.state),
           extract(epoch from s.updated_at)::double precision,
           (select coalesce(jsonb_agg(r.event order by r.position), '[]')
              from (select e.event, e.position from memsub.adk_events e
                     where e.tenant_id = tenant and e.org_key = orgk and e.app_name = p_app_name
                       and e.user_id = p_user_id and e.session_id = p_session_id
                       and (p_after_timestamp is null or e."timestamp" >= p_after_timestamp)
                     order by e.position desc
                     limit p_num_recent_events) r)
      from memsub.adk_sessions s
     where s.tenant_id = tenant and s.org_key = orgk and s.app_name = p_app_name and s.user_id = p_user_id
       and s.id = p_session_id;
end
$$;
comment on function memsub.adk_session_get(text, text, text, integer, double precision) is
    'The ADK session of the context tenant and organization (no row when there is none): merged state, last '
    'update time (epoch seconds) and its events in order, only those at or after p_after_timestamp and only the '
    'p_num_recent_events most recent when given (22023 below 0, 54000 over max_rows, naming num_recent_events).';

create or replace function memsub.adk_session_list(p_app_name text, p_user_id text)
returns table (id text, last_update_time double precision)
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
    orgk   uuid := memsub._adk_org_key();
begin
    perform memsub._adk_check_name(p_app_name, 'app_name'), memsub._adk_check_name(p_user_id, 'user_id');
    return query
    select s.id::text, extract(epoch from s.updated_at)::double precision
      from memsub.adk_sessions s
     where s.tenant_id = tenant and s.org_key = orgk and s.app_name = p_app_name and s.user_id = p_user_id
     order by s.created_at, s.id;
end
$$;
comment on function memsub.adk_session_list(text, text) is
    'The ADK sessions of a user in an app (context tenant and organization), oldest first: id and last update time.';

create or replace function memsub.adk_session_delete(p_app_name text, p_user_id text, p_session_id text)
returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
    orgk   uuid := memsub._adk_org_key();
begin
    perform memsub._adk_check_name(p_app_name, 'app_name'), memsub._adk_check_name(p_user_id, 'user_id'),
            memsub._adk_check_name(p_session_id, 'session_id');
    delete from memsub.adk_sessions s
     where s.tenant_id = tenant and s.org_key = orgk and s.app_name = p_app_name and s.user_id = p_user_id
       and s.id = p_session_id;
    return found;
end
$$;
comment on function memsub.adk_session_delete(text, text, text) is
    'Deletes an ADK session and its events (not its memories); false when there was none.';

create or replace function memsub.adk_session_append_event(
    p_app_name         text,
    p_user_id          text,
    p_session_id       text,
    p_event            jsonb,
    p_last_update_time double precision default null
) returns double precision
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant  uuid := memsub._require_tenant_id();
    orgk    uuid := memsub._adk_org_key();
    delta   jsonb;
    stamp   double precision;
    v_session memsub.adk_sessions;
begin
    perform memsub._adk_check_name(p_app_name, 'app_name'), memsub._adk_check_name(p_user_id, 'user_id'),
            memsub._adk_check_name(p_session_id, 'session_id'),
            memsub._check_limit(pg_column_size(p_event), 'max_json_bytes', 'event');
    if p_event is null or jsonb_typeof(p_event) <> 'object' then
        raise exception 'memsub: event must be a JSON object' using errcode = '22023', column = 'event';
    end if;
    if jsonb_typeof(p_event -> 'id') is distinct from 'string' or p_event ->> 'id' = '' then
        raise exception 'memsub: event.id must be a non-empty string' using errcode = '22023', column = 'event.id';
    end if;
    if jsonb_typeof(p_event -> 'timestamp') is distinct from 'number' then
        raise exception 'memsub: event.timestamp must be a number of seconds since the epoch'
            using errcode = '22023', column = 'event.timestamp';
    end if;
    stamp := memsub._json_double(p_event -> 'timestamp', 'event.timestamp');
    if coalesce(jsonb_typeof(p_event -> 'actions'), 'null') not in ('object', 'null') then
        raise exception 'memsub: event.actions must be a JSON object' using errcode = '22023', column = 'event.actions';
    end if;
    delta := p_event #> '{actions,state_delta}';
    if delta is not null and jsonb_typeof(delta) not in ('object', 'null') then
        raise exception 'memsub: event.actions.state_delta must be a JSON object'
            using errcode = '22023', column = 'event.actions.state_delta';
    end if;
    delta := coalesce(nullif(delta, 'null'), '{}');

    select s.* into v_session from memsub.adk_sessions s
     where s.tenant_id = tenant and s.org_key = orgk and s.app_name = p_app_name and s.user_id = p_user_id
       and s.id = p_session_id
       for update;
    if v_session.id is null then
        raise exception 'memsub: session "%" of user "%" in app "%" does not exist', p_session_id, p_user_id, p_app_name
            using errcode = 'P0002', column = 'session_id';
    end if;
    if p_last_update_time is not null and extract(epoch from v_session.updated_at)::double precision > p_last_update_time
    then
        raise exception 'memsub: session "%" changed since it was read (stale last_update_time)', p_session_id
            using errcode = '40001', column = 'last_update_time',
                  detail = format('stored=%s given=%s', extract(epoch from v_session.updated_at), p_last_update_time);
    end if;
    if exists (select from jsonb_object_keys(delta) k where k like 'app:%' or k like 'user:%') then
        perform memsub._adk_write_states(p_app_name, p_user_id, delta);
    end if;
    -- The last update time moves forward with every append, whenever this transaction began: the clock now (not
    -- the transaction's start, which may be earlier than another writer's append), and past the stored time, so
    -- that every session object read before this event is stale.
    update memsub.adk_sessions s
       set state = s.state || memsub._adk_state_part(delta, ''), event_count = s.event_count + 1,
           updated_at = greatest(clock_timestamp(), s.updated_at + interval '1 microsecond')
     where s.tenant_id = tenant and s.org_key = orgk and s.app_name = p_app_name and s.user_id = p_user_id
       and s.id = p_session_id
    returning s.* into v_session;
    -- temp: keys live for the invocation only: the stored event keeps its state delta without them.
    if exists (select from jsonb_object_keys(delta) k where k like 'temp:%') then
        p_event := jsonb_set(p_event, '{actions,state_delta}',
                             delta - array(select k from jsonb_object_keys(delta) k where k like 'temp:%'));
    end if;
    insert into memsub.adk_events (tenant_id, org_id, app_name, user_id, session_id, position, id, author,
                                   invocation_id, "timestamp", event)
    values (tenant, v_session.org_id, p_app_name, p_user_id, p_session_id, v_session.event_count - 1, p_event ->> 'id',
            p_event ->> 'author', p_event ->> 'invocation_id', stamp, p_event);
    return extract(epoch from v_session.updated_at)::double precision;
end
$$;
comment on function memsub.adk_session_append_event(text, text, text, jsonb, double precision) is
    'Appends an ADK event (JSON) to a session of the context tenant and organization and applies its '
    'actions.state_delta (app: and user: keys to their states, temp: keys dropped, from the stored event too, the '
    'rest to the session), '
    'atomically. P0002 naming session_id when the session does not exist; 40001 naming last_update_time when the '
    'session changed after p_last_update_time. Returns the new last update time (epoch seconds).';

-- The text is composed to Unicode NFC first (docs/decisions.md, "One Unicode composition"): a combining accent is
-- no letter, so "café" typed as e and U+0301 (as macOS and some extractors give it) was cut to the word "cafe",
-- which missed the memories that say "café" with one é and found those that say "cafe". The words stored with a
-- memory are this function's (migration 2.51.0 recomputed those stored before).
create or replace function memsub._adk_words(p_text text) returns text[]
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(array_agg(distinct lower(m[1])), '{}')
      from regexp_matches(normalize(coalesce(p_text, ''), nfc), '([[:alnum:]]+)', 'g') m
$$;
comment on function memsub._adk_words(text) is
    'The distinct lower-case words (runs of letters and digits) of a text composed to Unicode NFC, so an accented '
    'letter is one letter whichever way it was typed: what ADK memory keyword search matches.';

create or replace function memsub.adk_memory_add(
    p_app_name   text,
    p_user_id    text,
    p_session_id text,
    p_memories   jsonb
) returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
    orgk   uuid := memsub._adk_org_key();
    bad    bigint;
    added  integer;
begin
    perform memsub._adk_check_name(p_app_name, 'app_name'), memsub._adk_check_name(p_user_id, 'user_id'),
            memsub._adk_check_name(p_session_id, 'session_id'),
            memsub._check_limit(pg_column_size(p_memories), 'max_json_bytes', 'memories');
    if p_memories is null or jsonb_typeof(p_memories) <> 'array' then
        raise exception 'memsub: memories must be a JSON array' using errcode = '22023', column = 'memories';
    end if;
    select m.position - 1 into bad
      from jsonb_array_elements(p_memories) with ordinality as m(memory, position)
     where jsonb_typeof(m.memory) <> 'object'
        or jsonb_typeof(m.memory -> 'event_id') is distinct from 'string' or m.memory ->> 'event_id' = ''
        or jsonb_typeof(m.memory -> 'content') is distinct from 'object'
        or jsonb_typeof(m.memory -> 'text') is distinct from 'string'
        or coalesce(jsonb_typeof(m.memory -> 'timestamp'), 'null') not in ('number', 'null')
        or coalesce(jsonb_typeof(m.memory -> 'embedding'), 'null') not in ('array', 'null')
     order by m.position limit 1;
    if bad is not null then
        raise exception 'memsub: memories[%] must be an object with event_id, content (object), text and optional '
                        'timestamp (number) and embedding (array)', bad
            using errcode = '22023', column = format('memories[%s]', bad);
    end if;
    -- A timestamp beyond double precision, or an event id longer than a key holds, is refused naming its element,
    -- before anything is replaced.
    perform memsub._json_double(m.memory -> 'timestamp', format('memories[%s].timestamp', m.position - 1)),
            memsub._check_limit(octet_length(m.memory ->> 'event_id'), 'max_id_bytes',
                                format('memories[%s].event_id', m.position - 1))
       from jsonb_array_elements(p_memories) with ordinality as m(memory, position);
    delete from memsub.adk_memories m
     where m.tenant_id = tenant and m.org_key = orgk and m.app_name = p_app_name and m.user_id = p_user_id
       and m.session_id = p_session_id;
    begin
        -- A vector whose cosine distance to itself is NaN (a zero vector, or squares under- or overflowing single
        -- precision, as memsub._check_vector refuses at any dimension here) has NaN cosine distances, which a
        -- search would rank first.
        select m.position - 1 into bad
          from jsonb_array_elements(p_memories) with ordinality as m(memory, position)
         cross join lateral (select ((m.memory -> 'embedding') #>> '{}')::vector as embedding) e
         where jsonb_typeof(m.memory -> 'embedding') = 'array'
           and cosine_distance(e.embedding, e.embedding) = 'NaN'::double precision
         order by m.position limit 1;
        if bad is null then  -- else refused below, outside the block that names the cast's errors
            insert into memsub.adk_memories (tenant_id, org_id, app_name, user_id, session_id, event_id, author,
                                             "timestamp", content, text, words, embedding)
            select distinct on (m.memory ->> 'event_id')
                   tenant, (select memsub.current_org_id()), p_app_name, p_user_id, p_session_id,
                   m.memory ->> 'event_id', m.memory ->> 'author',
                   memsub._json_double(m.memory -> 'timestamp', 'timestamp'), m.memory -> 'content', m.memory ->> 'text', memsub._adk_words(m.memory ->> 'text'),
                   case when m.memory ? 'embedding' and jsonb_typeof(m.memory -> 'embedding') = 'array'
                        then ((m.memory -> 'embedding') #>> '{}')::vector end
              from jsonb_array_elements(p_memories) with ordinality as m(memory, position)
             order by m.memory ->> 'event_id', m.position desc;
        end if;
    exception when data_exception or program_limit_exceeded then  -- the latter: over pgvector's 16000 numbers
        raise exception 'memsub: memories[].embedding must be arrays of finite numbers (%)', sqlerrm
            using errcode = '22023', column = 'memories';
    end;
    if bad is not null then
        perform memsub._refuse_vector_without_norm(format('memories[%s].embedding', bad), 'memsub');
    end if;
    get diagnostics added = row_count;
    return added;
end
$$;
comment on function memsub.adk_memory_add(text, text, text, jsonb) is
    'Replaces the memories of an ADK session (context tenant and organization) with p_memories: a JSON array of '
    '{event_id, author, timestamp, content, text, embedding}. Returns how many were stored. An embedding without '
    'a usable norm (a zero vector, or squares beyond single precision) is refused (22023, memories[i].embedding).';

create or replace function memsub.adk_memory_search(
    p_app_name        text,
    p_user_id         text,
    p_query           text,
    p_query_embedding jsonb   default null,
    p_limit           integer default 10
) returns table (session_id text, event_id text, author text, "timestamp" double precision, content jsonb,
                 score double precision)
language plpgsql stable security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
    orgk   uuid := memsub._adk_org_key();
    q_words text[];
    query  vector;
begin
    perform memsub._adk_check_name(p_app_name, 'app_name'), memsub._adk_check_name(p_user_id, 'user_id'),
            memsub._check_limit(length(p_query), 'max_query_chars', 'query'),
            memsub._check_limit(p_limit, 'max_k', 'limit');
    if p_query is null then
        raise exception 'memsub: query must be a string' using errcode = '22023', column = 'query';
    end if;
    if p_limit is null or p_limit < 0 then
        raise exception 'memsub: limit must be a non-negative integer' using errcode = '22023', column = 'limit';
    end if;
    query := memsub._json_query_vector(p_query_embedding, 'query_embedding', 'memsub');
    -- A query without a cosine distance (a zero vector, or squares beyond single precision) scores every memory NaN.
    if cosine_distance(query, query) = 'NaN'::double precision then
        perform memsub._refuse_vector_without_norm('query_embedding', 'memsub');
    end if;
    q_words := memsub._adk_words(p_query);
    return query
    select r.session_id, r.event_id, r.author, r.ts, r.content, r.rank_score
      from (select c.session_id, c.event_id, c.author, c.ts, c.content, c.by_vector,
                   -- A vector stored before adding refused those without a cosine distance scores NULL, not
                   -- NaN (which the order below would put above every number).
                   case when c.by_vector then nullif(1 - (c.embedding <=> query), 'NaN'::double precision)
                        else cardinality(array(select unnest(c.words) intersect select unnest(q_words)))::double precision
                             / greatest(cardinality(q_words), 1) end as rank_score
              from (select m.session_id::text as session_id, m.event_id::text as event_id, m.author,
                           m."timestamp" as ts, m.content, m.words, m.embedding,
                           coalesce(query is not null and m.embedding is not null
                                    and vector_dims(m.embedding) = vector_dims(query), false) as by_vector
                      from memsub.adk_memories m
                     where m.tenant_id = tenant and m.org_key = orgk and m.app_name = p_app_name
                       and m.user_id = p_user_id) c
             where c.by_vector or c.words && q_words) r
     order by r.by_vector desc, r.rank_score desc nulls last, r.ts desc nulls last, r.session_id, r.event_id
     limit p_limit;
end
$$;
comment on function memsub.adk_memory_search(text, text, text, jsonb, integer) is
    'Memories of an ADK user in an app (context tenant and organization) for a query: with p_query_embedding, '
    'embedded memories by cosine similarity first (a stored vector without a cosine distance scores NULL, after '
    'them); then memories sharing a word with the query, by the share of query words they hold, newest first. At '
    'most p_limit rows. 22023 (query_embedding) for a query vector without a usable norm (a zero vector, or '
    'squares beyond single precision).';

grant execute on function
    memsub.adk_session_create(text, text, text, jsonb),
    memsub.adk_session_get(text, text, text, integer, double precision),
    memsub.adk_session_list(text, text),
    memsub.adk_session_delete(text, text, text),
    memsub.adk_session_append_event(text, text, text, jsonb, double precision),
    memsub.adk_memory_add(text, text, text, jsonb),
    memsub.adk_memory_search(text, text, text, jsonb, integer)
    to memsub_app;
-- Reading the rows directly is allowed (row-level security applies); writes go through the functions.
grant select on memsub.adk_app_states, memsub.adk_user_states, memsub.adk_sessions, memsub.adk_events,
                memsub.adk_memories to memsub_app, memsub_analyst;
