-- Area: memory. Seed: seed 001 sections 2, 4.2 and 6.
--
-- Namespaced, versioned memory (seed 001 sections 2, 4.2 and 6).
--
-- Namespaces and who may use them (the context is memsub.set_context's user and session):
--   project:<project id>[:...]   read: everyone in the tenant   write: tenant_admin / platform_admin context
--   app:<app name>[:...]         read: everyone in the tenant   write: tenant_admin / platform_admin context
--   user:<user id>[:...]         read/write: the context user (user id = its UUID in canonical text)
--   session:<session id>[:...]   read/write: the context session, unless it is a session the context cannot see
--                                (another organization's) or another user's deleted session
--                                (memsub.deleted_sessions): memsub._context_session_namespace
--   temp:...                     never stored here: sessions.state only
-- Admin contexts read and write every namespace of the tenant. The functions check the rules and name the
-- offending field; the row-level security policies enforce the same rules underneath.
--
-- Versions: each write of (namespace, key) inserts version n+1 and states the version it read (NULL: "I read
-- no live entry"). UNIQUE (tenant_id, namespace, key, version) lets exactly one of two concurrent writers of the
-- same version win; the other, like a writer that read an old version, gets SQLSTATE 40001 naming the key and
-- rolls back and retries (seed 001 section 6.2). A delete writes a tombstone version and flags every version
-- of the key is_deleted. Every write and delete is audited.
--
-- Reads by namespace carry a range on namespace (collation "C": every namespace below prefix p lies in
-- [p, p || ';'), since ';' follows ':'). Comparison operators are leakproof, so under row-level security the
-- range is an index condition on (tenant_id, namespace, ...); LIKE is not leakproof and would only filter a
-- scan of the tenant's whole memory.

create or replace function memsub._check_memory_address(p_namespace text, p_key text) returns void
language plpgsql immutable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_namespace is null then
        raise exception 'namespace is required' using errcode = '23502', column = 'namespace';
    end if;
    if p_namespace ~ '^temp(:|$)' then
        raise exception 'namespace "%": temp: keys are never persisted to memory_entries; keep them in the session state',
            p_namespace
            using errcode = '22023', column = 'namespace';
    end if;
    if p_namespace !~ '^(project|app|user|session):[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*$' or length(p_namespace) > 512 then
        raise exception 'namespace "%" must look like project:<id>, app:<name>, user:<user id> or session:<session id>, optionally followed by :<part> segments (letters, digits, _ . -)',
            p_namespace
            using errcode = '22023', column = 'namespace';
    end if;
    if p_key is null then
        raise exception 'key is required' using errcode = '23502', column = 'key';
    end if;
    -- + and a length test, not a counted repetition: PostgreSQL makes a regular-expression state per counted one.
    if p_key !~ '^[^:[:space:]][^:]*$' or length(p_key) > 256 then
        raise exception 'key "%" must be 1 to 256 characters, without ":" and not starting with a space', p_key
            using errcode = '22023', column = 'key';
    end if;
end
$$;
comment on function memsub._check_memory_address(text, text) is
    'Internal: validates a memory namespace and key (22023/23502 naming namespace or key; temp: is rejected).';

-- The context's session id names its session: namespace only where the context may see that session. A context
-- naming a session of another organization (which the sessions' org_isolation policy hides from it) reads and
-- writes none of its memory, as it reads and writes none of its state. An id that no session of the tenant has
-- names the namespace of the contexts naming it, as before sessions existed, unless it was the id of a deleted
-- session (memsub.deleted_sessions, written by memsub.session_delete): the memory that session left is its user's
-- (and admins'), as its tasks are, so that an id freed by a deletion is no way into it (2.52.0). Owned by
-- memsub_retrieval_owner (BYPASSRLS) to tell a hidden or deleted session from no session: it returns the
-- context's own session id or NULL.
create or replace function memsub._context_session_namespace() returns text
language sql stable security definer parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    select c.session_id
      from (select memsub.current_session_id() as session_id) c
     where memsub._caller_is_admin()
        or (not exists (select from memsub.sessions s
                         where s.tenant_id = memsub.current_tenant_id() and s.id = c.session_id
                           and s.org_id is distinct from memsub.current_org_id() and s.org_id is not null)
            and (exists (select from memsub.sessions s
                          where s.tenant_id = memsub.current_tenant_id() and s.id = c.session_id)
                 or not exists (select from memsub.deleted_sessions d
                                 where d.tenant_id = memsub.current_tenant_id() and d.session_id = c.session_id
                                   and d.user_id is distinct from memsub.current_user_id())))
$$;
alter function memsub._context_session_namespace() owner to memsub_retrieval_owner;
comment on function memsub._context_session_namespace() is
    'Internal: the context''s session id when its session:<id> memory is the context''s (the session of that id is '
    'visible to the context; or the tenant has no session of that id and had none that was deleted, or the '
    'deleted one was the context user''s: memsub.deleted_sessions), else NULL (the session is of another '
    'organization, or was another user''s deleted session). Admin contexts get their session id. Owned by '
    'memsub_retrieval_owner (BYPASSRLS), so that a hidden or deleted session counts; returns no more than the '
    'context''s own session id. Read by the memory_entries policies and functions and by the audit policy '
    'audit_namespace_visibility.';
grant select on memsub.sessions, memsub.deleted_sessions to memsub_retrieval_owner;
grant execute on function memsub.current_session_id(), memsub.current_tenant_id(), memsub.current_org_id(),
    memsub.current_user_id(),
    memsub._caller_is_admin()
    to memsub_retrieval_owner;
-- Every role whose reads and writes of memory_entries the policies check: the logins' group roles and memsub_owner,
-- whose SECURITY DEFINER functions write the entries (memsub_expiry_owner's grant is sql/960_tenant_erasure.sql's).
grant execute on function memsub._context_session_namespace() to memsub_app, memsub_analyst, memsub_owner;

create or replace function memsub._memory_namespace_writable(p_namespace text) returns boolean
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    -- Never NULL: a context without a user or session owns no user: or session: namespace (false, not unknown).
    select coalesce(case split_part(p_namespace, ':', 1)
                        when 'user' then split_part(p_namespace, ':', 2) = memsub.current_user_id()::text
                        when 'session' then split_part(p_namespace, ':', 2) = memsub._context_session_namespace()
                        else false
                    end, false)
        or memsub._caller_is_admin()
$$;
comment on function memsub._memory_namespace_writable(text) is
    'True when the current context may write the namespace: its own user: namespace and its session''s session: '
    'namespace (memsub._context_session_namespace: not a session of another organization, nor another user''s '
    'deleted session), or any '
    'namespace for tenant_admin/platform_admin contexts (app: and project: need one of them). Never NULL.';

create or replace function memsub._raise_stale_memory_write(p_namespace text, p_key text, p_reason text,
                                                      p_current_version integer)
returns void
language plpgsql immutable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    raise exception 'stale write to memory key "%" in namespace "%": %', p_key, p_namespace, p_reason
        using errcode = '40001', column = 'expected_version',
              detail = format('current_version=%s', coalesce(p_current_version, 0)),
              hint = 'Read the entry again and retry the write with the version you read.';
end
$$;
comment on function memsub._raise_stale_memory_write(text, text, text, integer) is
    'Internal: raises the stale memory write (40001 naming expected_version, the key and namespace in the '
    'message, current_version=N in the detail) with p_reason; the one spelling of it for every writer that '
    'states a version.';

drop function if exists memsub.store_memory_version(text, text, jsonb, text, jsonb, integer, boolean, boolean, text,
                                                     jsonb, text);
drop function if exists memsub.store_memory_version(text, text, jsonb, text, jsonb, integer, boolean, boolean, text,
                                                     jsonb, text, vector);
create or replace function memsub._store_memory_version(
    p_namespace        text,
    p_key              text,
    p_value            jsonb,
    p_memory_type      text,
    p_metadata         jsonb,
    p_expected_version integer,
    p_check_version    boolean,
    p_delete           boolean,
    p_operation        text,
    p_details          jsonb,
    p_session_id       text    default null,
    p_embedding        vector  default null,
    p_in_snapshot      boolean default false
) returns memsub.memory_entries
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_kind     text := split_part(p_namespace, ':', 1);
    v_current  integer;
    v_deleted  boolean;
    v_session  text;
    v_row      memsub.memory_entries;
    v_previous memsub.memory_entries;
    v_column   text;
    v_detail   text;
    v_superseded uuid;  -- the version this one supersedes
begin
    -- Under REPEATABLE READ or SERIALIZABLE a version committed after the transaction's snapshot is invisible to
    -- the read below, and the insert meets it in the unique key: PostgreSQL raises its own 40001, naming nothing.
    -- A stated version is then stale, and is refused as such. The write runs again inside a block that catches it
    -- only at these isolation levels: a block is a subtransaction, and under READ COMMITTED (the common case,
    -- where the insert sees the other version and the loop below names it) a transaction of many writes would
    -- pile up subtransactions.
    if p_check_version and not p_in_snapshot and current_setting('transaction_isolation') <> 'read committed' then
        begin
            return memsub._store_memory_version(p_namespace, p_key, p_value, p_memory_type, p_metadata,
                                                p_expected_version, true, p_delete, p_operation, p_details,
                                                p_session_id, p_embedding, p_in_snapshot => true);
        exception
            when serialization_failure then
                -- A failure of serializable snapshot isolation (a read/write dependency with another transaction,
                -- over any rows) says nothing of this key: it stays PostgreSQL's. Its detail is a "Reason code",
                -- which PostgreSQL never translates; the unique key's conflict with an unseen version has none.
                get stacked diagnostics v_column = column_name, v_detail = pg_exception_detail;
                if v_column = 'expected_version' or v_detail like 'Reason code: %' then
                    raise;
                end if;
                select m.version into v_current
                  from memsub.memory_entries m
                 where m.tenant_id = v_tenant and m.namespace = p_namespace and m.key = p_key
                 order by m.version desc limit 1;
                perform memsub._raise_stale_memory_write(p_namespace, p_key,
                    format('version %s was written after this transaction''s snapshot (%s)',
                           coalesce(v_current, 0) + 1, current_setting('transaction_isolation')),
                    coalesce(v_current, 0) + 1);
        end;
    end if;
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace', p_namespace, 'key', p_key, 'memory_type', p_memory_type,
                                      'session_id', p_session_id),
            memsub._check_limits(array[pg_column_size(p_value), pg_column_size(p_metadata)], 'max_json_bytes',
                                 array['value', 'metadata']);
    perform memsub._check_memory_address(p_namespace, p_key);
    if p_memory_type is null or p_memory_type <> all (memsub.memory_types()) then
        raise exception 'memory_type must be one of %, not "%"', array_to_string(memsub.memory_types(), ', '),
            coalesce(p_memory_type, 'NULL') using errcode = '22023', column = 'memory_type';
    end if;
    if p_metadata is null or jsonb_typeof(p_metadata) <> 'object' then
        raise exception 'metadata must be a JSON object' using errcode = '22023', column = 'metadata';
    end if;
    if not p_delete and p_value is null then
        raise exception 'value is required (use memsub.memory_delete to delete)' using errcode = '23502', column = 'value';
    end if;
    perform memsub._check_expected_version(p_expected_version);
    if not memsub._memory_namespace_writable(p_namespace) then
        if v_kind in ('app', 'project') then
            raise exception 'namespace "%": % memory is written only by an elevated context (tenant_admin or platform_admin); sessions write temp:, session: and user: only',
                p_namespace, v_kind
                using errcode = '42501', column = 'namespace';
        end if;
        -- The context's own session id, refused by memsub._context_session_namespace: say why, not "another".
        if v_kind = 'session' and split_part(p_namespace, ':', 2) = memsub.current_session_id() then
            raise exception 'namespace "%": the context''s session % is another organization''s or was another user''s deleted session, and its session: memory is not the context''s',
                p_namespace, memsub.current_session_id()
                using errcode = '42501', column = 'namespace';
        end if;
        raise exception 'namespace "%" belongs to another % than the context''s', p_namespace, v_kind
            using errcode = '42501', column = 'namespace';
    end if;

    -- Two statements, not one condition: with the session as a parameter of one query, PL/pgSQL planned it
    -- again on every call (a custom plan for a NULL session is always the cheaper).
    v_session := coalesce(p_session_id, memsub.current_session_id());
    if v_session is not null then
        if not exists (select from memsub.sessions s where s.tenant_id = v_tenant and s.id = v_session) then
            v_session := null;
        end if;
    end if;

    -- Once, or again after a concurrent version when the write is last-write-wins (each pass reads what has been
    -- committed by then).
    loop
        select m.version, m.is_deleted, m.id into v_current, v_deleted, v_superseded
          from memsub.memory_entries m
         where m.tenant_id = v_tenant and m.namespace = p_namespace and m.key = p_key
         order by m.version desc limit 1;

        if p_delete and (v_current is null or v_deleted) then
            raise exception 'memory key "%" in namespace "%" has no live entry to delete', p_key, p_namespace
                using errcode = 'P0002', column = 'key';
        end if;
        -- A deleted key has no live entry: it is read as absent (version 0, as memsub.memory_get shows it), and the
        -- version its delete returned is taken as well.
        if p_check_version and (
            (p_expected_version is null and v_current is not null and not v_deleted)
            or (p_expected_version is not null and p_expected_version <> coalesce(v_current, 0)
                and not (v_deleted and p_expected_version = 0))) then
            perform memsub._raise_stale_memory_write(p_namespace, p_key,
                format('expected version %s, current version is %s',
                       coalesce(p_expected_version::text, 'none (new entry)'), coalesce(v_current, 0)),
                v_current);
        end if;

        -- The version this one supersedes is locked first: an edge drawn to it by a transaction still open is
        -- waited for, and closed below; one drawn after this lock waits for this transaction and is refused
        -- (memsub._lock_graph_node).
        if v_superseded is not null then
            perform memsub._lock_graph_node(v_tenant, 'Memory', v_superseded, true);
        end if;
        insert into memsub.memory_entries as m (tenant_id, org_id, user_id, namespace, key, value, memory_type,
                                                 version, is_deleted, metadata, session_id, embedding)
        values (v_tenant, memsub.current_org_id(), memsub.current_user_id(), p_namespace, p_key,
                case when p_delete then null else p_value end, p_memory_type, coalesce(v_current, 0) + 1,
                p_delete, p_metadata, v_session, case when p_delete then null else p_embedding end)
        on conflict on constraint memory_entries_version_key do nothing
        returning m.* into v_row;
        exit when found;
        -- A concurrent writer committed this version first (the UNIQUE constraint decided). Last write wins
        -- (session termination) goes on after it, as the next version; an optimistic write is stale.
        if p_check_version then
            select m.* into v_previous from memsub.memory_entries m
             where m.tenant_id = v_tenant and m.namespace = p_namespace and m.key = p_key
             order by m.version desc limit 1;
            perform memsub._raise_stale_memory_write(p_namespace, p_key,
                format('version %s was written concurrently (current version is %s)',
                       coalesce(v_current, 0) + 1, coalesce(v_previous.version, 0)),
                v_previous.version);
        end if;
    end loop;
    if p_delete then
        update memsub.memory_entries m set is_deleted = true
         where m.tenant_id = v_tenant and m.namespace = p_namespace and m.key = p_key
           and m.version < v_row.version and not m.is_deleted;
    end if;
    -- The graph's edges naming the superseded version stop holding now (sql/420_temporal_graph.sql). The version
    -- read last is the one before v_row: a concurrent version read again in the loop is superseded in its turn.
    if v_superseded is not null then
        perform memsub._close_node_edges(v_tenant, 'Memory', v_superseded);
    end if;
    perform memsub._audit_record(p_operation, p_session_id => v_session, p_memory_entry_id => v_row.id,
        p_namespace => p_namespace, p_key => p_key, p_version => v_row.version, p_tenant_id => v_tenant,
        p_details => coalesce(p_details, '{}')
                     || jsonb_build_object('expected_version', p_expected_version, 'memory_type', p_memory_type));
    return v_row;
end
$$;
comment on function memsub._store_memory_version(text, text, jsonb, text, jsonb, integer, boolean, boolean, text, jsonb, text, vector, boolean) is
    'Internal: validates and writes one version of (namespace, key) (a tombstone when p_delete), with '
    'p_embedding in the same row (checked by the caller), enforcing the namespace write rules and, when '
    'p_check_version, the optimistic lock; audits it as p_operation. Without p_check_version the write is '
    'last-write-wins (session termination): a version committed concurrently becomes the one before it (under READ '
    'COMMITTED; at the snapshot levels PostgreSQL''s own 40001 stands). Under '
    'REPEATABLE READ or SERIALIZABLE a stated version that a version committed after the snapshot made stale '
    'is refused as a stale write too (40001 naming expected_version; current_version is the first version the '
    'snapshot cannot see); a SERIALIZABLE failure over other rows (a read/write dependency, whose detail is a '
    '"Reason code") stays PostgreSQL''s 40001, naming no field. p_in_snapshot: set by that guard for its inner '
    'call only. Not granted to clients.';

drop function if exists memsub.memory_write(text, text, jsonb, integer, text, jsonb);
create or replace function memsub.memory_write(
    p_namespace        text,
    p_key              text,
    p_value            jsonb,
    p_expected_version integer default null,
    p_memory_type      text    default 'semantic',
    p_metadata         jsonb   default '{}',
    p_embedding        vector  default null
) returns memsub.memory_entries
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
begin
    -- A version holding JSON null would read as no entry at all: memsub.memory_delete is how an entry ends.
    if jsonb_typeof(p_value) = 'null' then
        raise exception 'field "value" is required: JSON null is no value (memsub.memory_delete deletes an entry)'
            using errcode = '23502', column = 'value';
    end if;
    if p_embedding is not null then
        perform memsub._check_vector(p_embedding, 'embedding');
    end if;
    -- The embedding goes into the version's row as it is inserted: an update after it would write the row twice
    -- (a second entry in every index, a dead row for vacuum).
    return memsub._store_memory_version(p_namespace, p_key, p_value, p_memory_type, p_metadata,
                                        p_expected_version, true, false, 'memory_write', '{}',
                                        p_embedding => p_embedding);
end
$$;
comment on function memsub.memory_write(text, text, jsonb, integer, text, jsonb, vector) is
    'Writes a new version of (namespace, key), with its embedding when given (the installation''s dimension; a '
    'new version without one carries none). expected_version is the version the writer read (NULL or 0: the '
    'key has no live entry). A stale write raises SQLSTATE 40001 naming the key: read again and retry. '
    'Namespace rules: own user: and session: namespaces; app:/project: need a tenant_admin or platform_admin '
    'context (42501 naming namespace otherwise); temp: is rejected. value is any JSON but null (23502 naming '
    'value; memsub.memory_delete deletes). Audited as memory_write.';

create or replace function memsub.memory_delete(p_namespace text, p_key text, p_expected_version integer)
returns memsub.memory_entries
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace', p_namespace, 'key', p_key);
    if p_expected_version is null then
        raise exception 'expected_version is required to delete memory key "%"', p_key
            using errcode = '23502', column = 'expected_version';
    end if;
    return memsub._store_memory_version(p_namespace, p_key, null, 'semantic', '{}', p_expected_version,
                                        true, true, 'memory_delete', '{}');
end
$$;
comment on function memsub.memory_delete(text, text, integer) is
    'Soft-deletes (namespace, key): writes a tombstone version (value NULL, is_deleted) and flags every earlier '
    'version is_deleted. States the version read, like a write (40001 when stale; P0002 when nothing is live). '
    'The history is kept. Audited as memory_delete.';

create or replace function memsub.memory_get(p_namespace text, p_key text) returns setof memsub.memory_entries
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace', p_namespace, 'key', p_key);
    return query
        select m.* from memsub.memory_entries m
         where m.tenant_id = memsub.current_tenant_id() and m.namespace = p_namespace and m.key = p_key
           and not m.is_deleted
         order by m.version desc limit 1;
end
$$;
comment on function memsub.memory_get(text, text) is
    'The live (latest, not deleted) version of (namespace, key), if the caller may see it; no row otherwise.';

create or replace function memsub.memory_history(p_namespace text, p_key text) returns setof memsub.memory_entries
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace', p_namespace, 'key', p_key);
    return query
        select m.* from memsub.memory_entries m
         where m.tenant_id = memsub.current_tenant_id() and m.namespace = p_namespace and m.key = p_key
         order by m.version;
end
$$;
comment on function memsub.memory_history(text, text) is
    'Every version of (namespace, key) the caller may see, oldest first, deleted ones and tombstones included.';

create or replace function memsub._check_namespace_prefix(p_namespace_prefix text) returns void
language plpgsql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_namespace_prefix is null or p_namespace_prefix !~ '^[a-z]+(:[A-Za-z0-9_.-]+)*$' then
        raise exception 'namespace prefix "%" must look like kind[:segment...]', coalesce(p_namespace_prefix, 'NULL')
            using errcode = '22023', column = 'namespace';
    end if;
end
$$;
comment on function memsub._check_namespace_prefix(text) is
    'Refuses (22023 naming namespace) a namespace prefix that is not kind[:segment...]: a prefix covers whole '
    'segments (project:foo covers project:foo and project:foo:sub, not project:foobar).';

-- memory_list(text) listed every live entry, unpaged; its successor takes a limit and holds to max_rows.
drop function if exists memsub.memory_list(text);
create or replace function memsub.memory_list(p_namespace_prefix text, p_limit integer default null)
returns setof memsub.memory_entries
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_max  bigint;
    listed bigint;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('namespace_prefix', p_namespace_prefix);
    perform memsub._check_namespace_prefix(p_namespace_prefix);
    if p_limit is not null then
        perform memsub._check_count(p_limit, 'max_rows', 'limit');
    else
        v_max := memsub.limit_value('max_rows');
    end if;
    -- Without a limit, one entry past max_rows is read so that a larger listing is refused, not cut short.
    return query
        select distinct on (m.namespace, m.key) m.* from memsub.memory_entries m
         where m.tenant_id = memsub.current_tenant_id()
           and m.namespace >= p_namespace_prefix collate "C"
           and m.namespace < p_namespace_prefix || ';' collate "C"
           and (m.namespace = p_namespace_prefix or m.namespace like p_namespace_prefix || ':%')
           and not m.is_deleted
         order by m.namespace, m.key, m.version desc
         limit coalesce(p_limit, v_max + 1);
    get diagnostics listed = row_count;
    if p_limit is null and listed > v_max then
        raise exception 'memsub.memory_list: more than % live entries under namespace prefix % (limit max_rows)',
            v_max, p_namespace_prefix
            using errcode = '54000', column = 'namespace_prefix',
                  detail = format('limit=max_rows value=%s', v_max),
                  hint = 'Give a limit or a longer namespace prefix.';
    end if;
end
$$;
comment on function memsub.memory_list(text, integer) is
    'Live entries (latest version of each key) of a namespace and its sub-namespaces, e.g. user:<id> or '
    'project:schema_redesign:status, that the caller may see, by namespace, then key: every one up to max_rows '
    'without p_limit (more refused, 54000 naming namespace_prefix), else the first p_limit (22023 below 1, 54000 '
    'above max_rows, naming limit).';

create or replace function memsub.memory_context(p_session_id text default null)
returns table (name text, namespace text, key text, value jsonb, version integer, memory_type text,
               source text, precedence integer)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_session memsub.sessions;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('session_id', p_session_id);
    if coalesce(p_session_id, memsub.current_session_id()) is null then
        raise exception 'memsub.memory_context needs a session (argument or the context''s session_id)'
            using errcode = '22023', column = 'session_id';
    end if;
    select s.* into v_session from memsub.sessions s
     where s.tenant_id = memsub.current_tenant_id() and s.id = coalesce(p_session_id, memsub.current_session_id());
    if not found then
        raise exception 'session "%" does not exist or is not visible', coalesce(p_session_id, memsub.current_session_id())
            using errcode = 'P0002', column = 'session_id';
    end if;
    return query
    with candidates as (
        select e.k as full_key, e.v as value, null::integer as version, null::text as memory_type,
               'state'::text as source, 0 as tie,
               case split_part(e.k, ':', 1) when 'temp' then 1 when 'session' then 2 when 'user' then 3 end as precedence
          from jsonb_each(v_session.state) as e(k, v)
        union all
        select latest.namespace || ':' || latest.key, latest.value, latest.version, latest.memory_type,
               'memory', 1,
               case latest.namespace_kind when 'session' then 2 when 'user' then 3 when 'app' then 4 else 5 end
          from (select distinct on (m.namespace, m.key) m.*
                  from memsub.memory_entries m
                 where m.tenant_id = v_session.tenant_id and not m.is_deleted
                   and ((m.namespace_kind = 'session' and m.namespace_owner = v_session.id
                         and m.namespace >= 'session:' || v_session.id collate "C"
                         and m.namespace < 'session:' || v_session.id || ';' collate "C")
                     or (m.namespace_kind = 'user' and m.namespace_owner = v_session.user_id::text
                         and m.namespace >= 'user:' || v_session.user_id::text collate "C"
                         and m.namespace < 'user:' || v_session.user_id::text || ';' collate "C")
                     or (m.namespace_kind = 'app' and m.namespace_owner = v_session.app_name
                         and m.namespace >= 'app:' || v_session.app_name collate "C"
                         and m.namespace < 'app:' || v_session.app_name || ';' collate "C")
                     or (m.namespace_kind = 'project' and m.namespace_owner = v_session.project_id
                         and m.namespace >= 'project:' || v_session.project_id collate "C"
                         and m.namespace < 'project:' || v_session.project_id || ';' collate "C"))
                 order by m.namespace, m.key, m.version desc) latest
    ),
    named as (
        select regexp_replace(c.full_key, '^(temp|(session|user|app|project):[^:]+):', '') as name, c.*
          from candidates c
    ),
    winners as (
        select distinct on (n.name) n.* from named n order by n.name, n.precedence, n.tie
    )
    select w.name, regexp_replace(w.full_key, ':[^:]*$', ''), substring(w.full_key from '[^:]*$'),
           w.value, w.version, w.memory_type, w.source, w.precedence
      from winners w
     order by w.precedence, w.name;
end
$$;
comment on function memsub.memory_context(text) is
    'Context of a session resolved through the namespace hierarchy (seed 001 sections 2.1 and 4.2): its state''s '
    'temp:, session: and user: keys and the live memory entries of session:<id>, user:<user>, app:<app> and '
    'project:<project>. A name (the namespace path below kind and owner, plus the key) is answered by the first of '
    'temp: > session: > user: > app: > project: (precedence 1..5); within a level the session state beats '
    'memory_entries. Only what the caller may see takes part.';

-- memory_search's text leg under row-level security: tsvector @@ tsquery is not LEAKPROOF, so for a role bound by
-- the policies the planner may not use it as an index condition, and every entry of the tenant was read and
-- tested (3,000 entries: 18,000 rows read; 10,000: 50 ms). memsub._memory_word_candidates is therefore SECURITY
-- DEFINER, owned by memsub_retrieval_owner (BYPASSRLS, NOLOGIN), like the keyword leg of hybrid search
-- (sql/320_hybrid_search.sql), and states the predicates of memory_entries' policies itself: the tenant, and the
-- namespace_visibility rule below. It returns ids and ranks only: memory_search reads the rows back through
-- row-level security. idx_memory_entries_search holds the words of live entries by tenant (migration 2.36.0).
create or replace function memsub._memory_word_candidates(
    p_query            tsquery,
    p_namespace_prefix text    default null,
    p_limit            integer default 50
) returns table (id uuid, text_rank integer, text_score real)
language plpgsql stable security definer
-- At most p_limit rows (50 by default): the planner joins them back to their rows by key.
rows 50
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_user    text := memsub.current_user_id()::text;
    v_session text := memsub._context_session_namespace();
    v_admin   boolean := memsub._caller_is_admin();
begin
    perform memsub._check_count(p_limit, 'max_k', 'limit');
    perform memsub._check_limit(numnode(p_query), 'max_query_nodes', 'query');
    perform memsub._check_text_limits('namespace_prefix', p_namespace_prefix);
    if coalesce(numnode(p_query), 0) = 0 then
        return;  -- no searchable words (empty text or only stop words)
    end if;
    return query
        select m.id, (row_number() over (order by ts_rank_cd(m.search_tsv, p_query) desc, m.id))::integer,
               ts_rank_cd(m.search_tsv, p_query)
          from memsub.memory_entries m
         where m.tenant_id = v_tenant  -- the tenant_isolation policy
           and not m.is_deleted and m.search_tsv @@ p_query
           and (p_namespace_prefix is null or m.namespace = p_namespace_prefix
                or left(m.namespace, length(p_namespace_prefix) + 1) = p_namespace_prefix || ':')
           -- the namespace_visibility policy
           and (m.namespace_kind in ('app', 'project')
                or (m.namespace_kind = 'user' and m.namespace_owner = v_user)
                or (m.namespace_kind = 'session' and m.namespace_owner = v_session)
                or v_admin)
           -- of each key its latest version
           and not exists (select from memsub.memory_entries n
                            where n.tenant_id = m.tenant_id and n.namespace = m.namespace and n.key = m.key
                              and n.version > m.version)
         order by 2
         limit p_limit;
end
$$;
comment on function memsub._memory_word_candidates(tsquery, text, integer) is
    'Text leg of memsub.memory_search: the latest live memory entries the caller may see whose words match the '
    'query (english configuration), optionally under a namespace prefix, best first by ts_rank_cd, as ids and '
    'ranks. Applies the tenant and namespace visibility predicates itself so the index of the words is usable '
    '(tsvector @@ is not LEAKPROOF under row-level security).';
alter function memsub._memory_word_candidates(tsquery, text, integer) owner to memsub_retrieval_owner;

create or replace function memsub.memory_search(
    p_query_text       text,
    p_query            vector  default null,
    p_k                integer default 10,
    p_namespace_prefix text    default null,
    p_rrf_k            integer default 60
) returns table (id uuid, namespace text, key text, version integer, value jsonb, memory_type text,
                 score double precision, vector_rank integer, text_rank integer, distance double precision,
                 text_score real)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    v_tenant     uuid := memsub._require_tenant_id();
    v_candidates integer;
    v_query      tsquery;
begin
    perform memsub._check_fused_search(p_k, p_rrf_k, p_query, p_query_text);
    -- The text is bounded before a tsquery is built from it, and the tsquery before anything is read, whatever
    -- the tenant holds (the text leg checks the terms as well, but a tenant without rows never reaches it).
    perform memsub._check_limit(length(p_query_text), 'max_query_chars', 'query_text');
    if p_namespace_prefix is not null then
        perform memsub._check_namespace_prefix(p_namespace_prefix);
    end if;
    -- 4k rows from each leg (at least 50), at most the max_k limit: every k up to the limit is served.
    v_candidates := least(greatest(50, 4 * p_k::bigint), memsub.limit_value('max_k'));
    v_query := memsub._words_query('english', p_query_text);
    perform memsub._check_limit(numnode(v_query), 'max_query_nodes', 'query_text');
    return query
    with vector_leg as (
        -- Of each key its latest live version (as memsub.memory_list reads them: a delete flags every version),
        -- by the exact distance: cosine_distance(), which no index serves (the one HNSW graph of every tenant's
        -- entries would be filtered by row-level security afterwards). One pass over the tenant's live rows, the
        -- distance taken in it so that the rows sorted by key are narrow (a NOT EXISTS of a newer version read
        -- the rows twice: 42 ms for 10,000 entries, against 29 ms).
        select l.id, l.distance, (row_number() over (order by l.distance, l.id))::integer as vector_rank
          from (select distinct on (m.namespace, m.key) m.id, cosine_distance(m.embedding, p_query) as distance
                  from memsub.memory_entries m
                 where p_query is not null and m.tenant_id = v_tenant and not m.is_deleted
                   and (p_namespace_prefix is null or m.namespace = p_namespace_prefix
                        or left(m.namespace, length(p_namespace_prefix) + 1) = p_namespace_prefix || ':')
                 order by m.namespace, m.key, m.version desc) l
         where l.distance is not null
         order by 2, 1
         limit v_candidates
    ), text_leg as (
        select c.id, c.text_score, c.text_rank
          from memsub._memory_word_candidates(v_query, p_namespace_prefix, v_candidates) c
    ), fused as (
        select coalesce(v.id, t.id) as id, v.vector_rank, t.text_rank, v.distance, t.text_score,
               -- In double precision: rrf_k may be any integer >= 0, and rrf_k + rank overflowed integer.
               coalesce(1.0 / (p_rrf_k::double precision + v.vector_rank), 0.0)
               + coalesce(1.0 / (p_rrf_k::double precision + t.text_rank), 0.0) as rrf
          from vector_leg v
          full join text_leg t on t.id = v.id
    )
    select m.id, m.namespace::text, m.key::text, m.version, m.value, m.memory_type, f.rrf::double precision,
           f.vector_rank, f.text_rank, f.distance, f.text_score
      -- The k best first, then their rows by key: joined before the limit, every row of the tenant was read.
      from (select * from fused order by rrf desc, id limit p_k) f
      join memsub.memory_entries m on m.tenant_id = v_tenant and m.id = f.id
     order by f.rrf desc, m.id;
end
$$;
comment on function memsub.memory_search(text, vector, integer, text, integer) is
    'Namespaced memory by meaning and words: the latest live versions the caller may see (row-level security), '
    'optionally under a namespace prefix, nearest to query (embedding, by the exact cosine distance) and best by '
    'full text (key and the '
    'strings of the value, websearch syntax, english), fused by reciprocal rank fusion (1 / (rrf_k + rank) per '
    'leg). Either query may be NULL.';

-- Visibility follows the namespace, not the organization: namespaces are tenant-wide names (the unique key is
-- (tenant_id, namespace, key, version)), so org_id is provenance only.
call memsub._install_row_security('memsub.memory_entries', array[]::text[]);

call memsub._ensure_policy('memsub.memory_entries', 'namespace_visibility', $create$create policy namespace_visibility on memsub.memory_entries as restrictive for all to public
    using (namespace_kind in ('app', 'project')
           or (namespace_kind = 'user' and namespace_owner = (select memsub.current_user_id()::text))
           or (namespace_kind = 'session' and namespace_owner = (select memsub._context_session_namespace()))
           or (select memsub._caller_is_admin()))$create$);
comment on policy namespace_visibility on memsub.memory_entries is
    'Read rules: app: and project: entries for the whole tenant, user:<id> for that user, session:<id> for the '
    'context naming that session where the session is visible to it (memsub._context_session_namespace); admins '
    'pass.';

call memsub._ensure_policy('memsub.memory_entries', 'namespace_insert', $create$create policy namespace_insert on memsub.memory_entries as restrictive for insert to public
    with check ((namespace_kind = 'user' and namespace_owner = (select memsub.current_user_id()::text))
                or (namespace_kind = 'session' and namespace_owner = (select memsub._context_session_namespace()))
                or (select memsub._caller_is_admin()))$create$);
comment on policy namespace_insert on memsub.memory_entries is
    'Write rules: a context writes its own user: and session: namespaces; app: and project: need tenant_admin or platform_admin.';

call memsub._ensure_policy('memsub.memory_entries', 'namespace_update', $create$create policy namespace_update on memsub.memory_entries as restrictive for update to public
    using ((namespace_kind = 'user' and namespace_owner = (select memsub.current_user_id()::text))
           or (namespace_kind = 'session' and namespace_owner = (select memsub._context_session_namespace()))
           or (select memsub._caller_is_admin()))$create$);
comment on policy namespace_update on memsub.memory_entries is
    'Soft deletes and consolidation marks follow the write rules (own user: and session: namespaces; admins anywhere).';

-- The audit rows of memory operations (sql/170_audit.sql) are read where the memory is: a row naming a user: or
-- session: namespace by that user, by a context whose session: namespace it is (memsub._context_session_namespace:
-- not of a session of another organization, nor of another user's deleted session), and admins. Tenant maintenance
-- writes such rows in an admin context without a user, and a session may write its namespace without one: by the
-- actor rule alone, every context without a user, of any organization or session, read their namespaces and keys.
-- Created here rather than with the table's other policies: 170 loads before the function exists. For reads only:
-- writes already follow the namespace write rules.
call memsub._ensure_policy('memsub.audit', 'audit_namespace_visibility', $create$create policy audit_namespace_visibility on memsub.audit as restrictive for select to public
    using (namespace is null
           or split_part(namespace, ':', 1) not in ('user', 'session')
           or (split_part(namespace, ':', 1) = 'user'
               and split_part(namespace, ':', 2) = (select memsub.current_user_id()::text))
           or (split_part(namespace, ':', 1) = 'session'
               and split_part(namespace, ':', 2) = (select memsub._context_session_namespace()))
           or (select memsub._caller_is_admin()))$create$);
comment on policy audit_namespace_visibility on memsub.audit is
    'An audit row naming a user: or session: namespace is visible to that user, to the contexts whose session: '
    'namespace it is (memsub._context_session_namespace) and to admins, as the memory itself is.';

grant select on memsub.memory_entries to memsub_app, memsub_analyst;
grant execute on function
    memsub.memory_write(text, text, jsonb, integer, text, jsonb, vector),
    memsub.memory_delete(text, text, integer),
    memsub._memory_namespace_writable(text)
    to memsub_app;
grant execute on function
    memsub.memory_get(text, text),
    memsub.memory_history(text, text),
    memsub.memory_list(text, integer),
    memsub.memory_context(text),
    memsub.memory_search(text, vector, integer, text, integer)
    to memsub_app, memsub_analyst;
grant execute on function memsub._memory_word_candidates(tsquery, text, integer) to memsub_app, memsub_analyst;
-- A namespace prefix is checked by the invoker reads and by memsub_retrieval_owner's text leg.
grant execute on function memsub._check_namespace_prefix(text) to memsub_app, memsub_analyst, memsub_retrieval_owner;
-- The text leg's owner reads what its predicates select, and nothing else.
grant select on memsub.memory_entries to memsub_retrieval_owner;
grant execute on function
    memsub._caller_is_admin(), memsub.is_tenant_admin(), memsub.is_platform_admin(),
    memsub.current_context_roles(), memsub.acting_role(), memsub._check_text_limits(text[])
    to memsub_retrieval_owner;
