-- Area: foundation. Seed: none (the GUIDE's security model: one tenant must not starve the others).
--
-- Resource limits: what one call may ask of the database, so that one tenant cannot starve the others.
--
-- Every function a tenant can call checks the size of what it is given (bytes, characters, counts, depth, k,
-- rows) against a limit and refuses a call over it with SQLSTATE 54000 (program_limit_exceeded), the field in
-- the column diagnostic, before it writes or reads anything. The defaults are below; a deployment overrides one
-- with a row in memsub.limits, which only the owner writes (a GUC would not be a bound: any login may SET its
-- own GUCs). docs/security.md ("Limits") lists them.

create or replace function memsub.limit_value(p_name text) returns bigint
language plpgsql stable security definer parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_value bigint;
    v_override bigint;
begin
    -- The name is checked against the defaults first, so a row of an unknown name (memsub.limits_row_check
    -- refuses one) never counts.
    v_value := case p_name
        when 'max_envelope_bytes'  then 1048576     -- one PacketEnvelope (jsonb size)
        when 'max_batch_envelopes' then 1000        -- envelopes in one write_packets call
        when 'max_batch_bytes'     then 16777216    -- all envelopes of one write_packets call (jsonb size)
        when 'max_tags'            then 256         -- tags of a packet, a reflection or a retrieval filter
        when 'max_tag_chars'       then 200         -- characters of one tag
        when 'max_parent_ids'      then 256         -- lineage.parent_ids of one envelope
        when 'max_query_chars'     then 4096        -- query text of a search
        when 'max_query_nodes'     then 256         -- words and operators of the full-text query built from it
        when 'max_k'               then 1000        -- k, candidates and limit of a similarity search
        when 'max_rows'            then 10000       -- rows one read may return (limit)
        when 'max_scan_tuples'     then 100000      -- index entries one similarity search may visit
        when 'max_kept_search_plans' then 32        -- kinds of search one session keeps a plan for
        when 'max_depth'           then 10          -- hops of a graph traversal
        when 'max_walk_edges'      then 100000      -- edges one graph traversal may read, all its hops together
        when 'max_lineage_depth'   then 1000        -- generations of a lineage walk
        when 'max_json_bytes'      then 1048576     -- one JSON argument of a layer, session or memory function
        when 'max_text_chars'      then 1048576     -- one text argument (content, summary, chunk text, ...)
        when 'max_array_items'     then 1000        -- one array argument (entities, ids, aliases, evidence, ...)
        when 'max_document_chars'  then 16777216    -- the text of one document
        when 'max_document_chunks' then 10000       -- the chunks of one document
        when 'max_document_bytes'  then 67108864    -- the chunks of one document (jsonb size, embeddings included)
        when 'max_id_bytes'        then 512         -- one id the adapters key rows by (thread, session, app, ...)
        when 'max_key_bytes'       then 2048        -- a name a B-tree keys rows by beside others (file path, ...)
        -- Timeouts, applied to login roles by `memsub login-timeouts` (ALTER ROLE ... SET), in milliseconds:
        when 'statement_timeout_ms'           then 30000
        when 'lock_timeout_ms'                then 5000
        when 'idle_in_transaction_timeout_ms' then 60000
    end;
    if v_value is null then
        raise exception 'field "name" is not a known limit: %', coalesce(p_name, 'NULL')
            using errcode = '22023', column = 'name',
                  hint = 'docs/security.md, "Limits", lists the limits.';
    end if;
    select l.value into v_override from memsub.limits l where l.name = p_name;
    return coalesce(v_override, v_value);
end
$$;
comment on function memsub.limit_value(text) is
    'The value of a resource limit: its row in memsub.limits, or the built-in default (docs/security.md, "Limits"); '
    '22023 naming name for a name that is not a limit.';

create or replace function memsub._check_limits_row() returns trigger
language plpgsql volatile security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    -- A misspelt name was stored and never read: the default stayed in force without a word.
    perform memsub.limit_value(new.name);
    -- PostgreSQL takes a timeout of at most 2147483647 ms; a larger one was stored, then refused by ALTER ROLE
    -- in `memsub login-timeouts`.
    if new.name like '%\_timeout\_ms' and new.value > 2147483647 then
        raise exception 'field "value" of timeout % must be at most 2147483647 (ms), not %', new.name, new.value
            using errcode = '22023', column = 'value';
    end if;
    return new;
end
$$;
comment on function memsub._check_limits_row() is
    'Trigger of memsub.limits: refuses (22023) a row whose name is not a known limit (column name) or a timeout '
    'over PostgreSQL''s largest, 2147483647 ms (column value).';

call memsub._ensure_trigger('memsub.limits', 'limits_row_check', $create$create trigger limits_row_check
    before insert or update on memsub.limits
    for each row execute function memsub._check_limits_row()$create$);
comment on trigger limits_row_check on memsub.limits is
    'Refuses a limit name memsub does not know and a timeout PostgreSQL would not take (memsub._check_limits_row).';

create or replace function memsub._check_limit(p_value bigint, p_limit text, p_field text) returns bigint
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_max bigint;
begin
    -- Every limit is at least 1 (limits_value_positive, and every default above), so a value of 1 or less is
    -- within any limit: answered without looking the limit up (a frame and a query), which a one-id read or a
    -- one-tag write would otherwise pay on every call.
    if p_value is null or p_value <= 1 then
        return p_value;
    end if;
    v_max := memsub.limit_value(p_limit);
    if p_value > v_max then
        raise exception 'field "%" is % over the limit: % > % (%)', p_field,
            case when p_limit like '%bytes' then 'bytes' when p_limit like '%chars' then 'characters'
                 else 'size' end, p_value, v_max, p_limit
            using errcode = '54000', column = p_field,
                  detail = format('limit=%s value=%s actual=%s', p_limit, v_max, p_value),
                  hint = 'Limits are set per installation in memsub.limits (docs/security.md, "Limits").';
    end if;
    return p_value;
end
$$;
comment on function memsub._check_limit(bigint, text, text) is
    'Refuses a value over a resource limit with SQLSTATE 54000 naming the field (column diagnostic) and the limit '
    '(detail: limit=NAME value=MAX actual=N); returns the value otherwise. NULL passes, and so does a value of 1 or '
    'less (every limit is at least 1), without reading the limit.';

create or replace function memsub._check_limits(p_values bigint[], p_limit text, p_fields text[]) returns void
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_max bigint;
begin
    -- Several values held against one limit, which is read once (a frame and a query each time otherwise), and
    -- only for a value above 1 (every limit is at least 1). The first value over it is refused by _check_limit.
    for i in 1 .. coalesce(cardinality(p_values), 0) loop
        if p_values[i] > 1 then
            v_max := coalesce(v_max, memsub.limit_value(p_limit));
            if p_values[i] > v_max then
                perform memsub._check_limit(p_values[i], p_limit, p_fields[i]);
            end if;
        end if;
    end loop;
end
$$;
comment on function memsub._check_limits(bigint[], text, text[]) is
    'Refuses the first of several values over one resource limit as memsub._check_limit does (54000 naming its '
    'field, p_fields[i] for p_values[i]), reading the limit once; NULL values and values of 1 or less pass without '
    'reading it.';

create or replace function memsub._check_count(p_value bigint, p_limit text, p_field text) returns bigint
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    if p_value is null or p_value < 1 then
        raise exception 'field "%" must be at least 1, not %', p_field, p_value
            using errcode = '22023', column = p_field;
    end if;
    return memsub._check_limit(p_value, p_limit, p_field);
end
$$;
comment on function memsub._check_count(bigint, text, text) is
    'A required count argument (k, limit, max_depth): NULL or below 1 raises 22023, over the resource limit p_limit '
    '54000 (memsub._check_limit), both naming the field; returns the value otherwise.';

create or replace function memsub._check_walk_edges(
    p_read      bigint,
    p_max       bigint,
    p_caller    text,
    p_max_depth integer,
    p_field     text,
    p_advice    text
) returns boolean
language plpgsql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    -- The graph reads take an entity's edges in the order of their rows and stop at what they may still return,
    -- but that is up to limit edges for each name of each entity of a level, and more where edges lead back to
    -- entities already reached: what one call reads is bounded apart from what it returns. Each step reads at most
    -- one edge past what is left of max_walk_edges, which the caller looks up once, and a call past it is refused,
    -- never cut short (which edges a cut would keep is arbitrary). One call per step, from PL/pgSQL or as a
    -- statement's one-time filter.
    if p_read > p_max then
        raise exception '%: more than % edges% (limit max_walk_edges); %', p_caller, p_max,
            case when p_max_depth is null then '' else format(' within max_depth %s', p_max_depth) end, p_advice
            using errcode = '54000', column = p_field,
                  detail = format('limit=max_walk_edges value=%s', p_max),
                  hint = 'Limits are set per installation in memsub.limits (docs/security.md, "Limits").';
    end if;
    return true;
end
$$;
comment on function memsub._check_walk_edges(bigint, bigint, text, integer, text, text) is
    'The rule of the max_walk_edges limit (p_max, as the caller read it): p_read edges read so far by one graph '
    'read (traverse_graph, graph_neighbors_as_of, entity_neighbourhood), all its steps together, over it are '
    'refused with 54000 naming p_field (message: the caller, the edges, max_depth when given, then p_advice; '
    'detail limit=max_walk_edges value=N); true otherwise.';

grant select on memsub.limits to memsub_app, memsub_analyst;
grant execute on function memsub.limit_value(text), memsub._check_limit(bigint, text, text),
    memsub._check_limits(bigint[], text, text[])
    to memsub_app, memsub_analyst, memsub_retrieval_owner;
grant execute on function memsub._check_count(bigint, text, text),
    memsub._check_walk_edges(bigint, bigint, text, integer, text, text)
    to memsub_app, memsub_analyst;
