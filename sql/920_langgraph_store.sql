-- Area: integrations. Seed: none (an adapter: LangGraph's BaseStore over memsub).
--
-- LangGraph store (memsub.integrations.langgraph_store.MemsubStore): put, get, search, list namespaces and sweep
-- expired items of the context tenant. Tables: migrations/2.17.0__langgraph_store.sql.
--
-- The functions are SECURITY DEFINER over tables the client roles can only read; row-level security is forced,
-- and each query also names the context tenant and the namespace as text (namespace_key, migration 2.32.0), so
-- the primary key is an index condition: text[] equality is not LEAKPROOF and under row-level security never is.
-- Expired items are never returned, whether or not a sweep has removed them yet.

call memsub._install_row_security('memsub.langgraph_store_items', array['org']);
call memsub._install_row_security('memsub.langgraph_store_vectors', array['org']);

-- An expired item is never read, by the functions below (which state the expiry themselves, so their plans do not
-- change) nor by a login selecting from the table, until the sweep deletes it. memsub_expiry_owner, which owns the
-- sweep, sees it (as it sees expired packets, sql/150_packet_security.sql); memsub_retrieval_owner (BYPASSRLS)
-- frees the key of one (_langgraph_store_item_owned_elsewhere).
call memsub._ensure_policy('memsub.langgraph_store_items', 'not_expired', $create$create policy not_expired on memsub.langgraph_store_items as restrictive for select to public
    using (expires_at is null or expires_at > (select pg_catalog.now())
           or (select current_user = 'memsub_expiry_owner'::name))$create$);
comment on policy not_expired on memsub.langgraph_store_items is
    'A LangGraph store item whose expires_at has passed is never read (only memsub_expiry_owner, which sweeps, '
    'sees it).';

-- An item's vectors are read with it: a login selecting from the vectors sees those whose item it may read (the
-- item's own policies: tenant, organization and not_expired), so an expired item's vectors are hidden with it.
-- The policy binds the roles granted SELECT on the table below (memsub_app, memsub_analyst), not memsub_owner: the
-- store's functions read vectors only of items they found live, and a policy naming them would be evaluated on
-- every vector a search scores (measured: docs/benchmarks.md, "LangGraph store: expired items' vectors").
call memsub._ensure_policy('memsub.langgraph_store_vectors', 'not_expired', $create$create policy not_expired on memsub.langgraph_store_vectors as restrictive for select to memsub_app, memsub_analyst
    using (exists (select from memsub.langgraph_store_items i
                    where i.tenant_id = langgraph_store_vectors.tenant_id
                      and i.namespace_key = langgraph_store_vectors.namespace_key
                      and i.key = langgraph_store_vectors.key))$create$);
comment on policy not_expired on memsub.langgraph_store_vectors is
    'A LangGraph store vector is read by a client role (memsub_app, memsub_analyst: the roles granted SELECT) only '
    'with its item: the item must be visible to the reader (its tenant, organization and not_expired policies), so '
    'an expired item''s vectors are hidden with it. The store''s functions (memsub_owner) read vectors only of '
    'items they found live.';

create or replace function memsub._langgraph_store_check_namespace(p_namespace text[], p_field text)
returns text[]
language plpgsql immutable security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_namespace is null or cardinality(p_namespace) = 0 then
        raise exception 'memsub: % must hold at least one label', p_field using errcode = '22023', column = p_field;
    end if;
    if array_ndims(p_namespace) > 1 then
        raise exception 'memsub: % must be a one-dimensional array of labels', p_field
            using errcode = '22023', column = p_field;
    end if;
    -- Plain expressions, no sub-select: a put checks its namespace on every call.
    if array_position(p_namespace, null) is not null or '' = any(p_namespace)
       or strpos(array_to_string(p_namespace, ''), '.') > 0 then
        raise exception 'memsub: % labels must be non-empty and hold no period', p_field
            using errcode = '22023', column = p_field;
    end if;
    return p_namespace;
end
$$;
comment on function memsub._langgraph_store_check_namespace(text[], text) is
    'Returns p_namespace, or raises 22023 naming p_field when it is empty or not one-dimensional, or a label is '
    'NULL, empty or holds a period (so the labels joined by periods, namespace_key, name one namespace).';

create or replace function memsub._langgraph_store_namespace_key(p_namespace text[]) returns text
language sql stable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$ select array_to_string(p_namespace, '.') $$;
comment on function memsub._langgraph_store_namespace_key(text[]) is
    'Internal: a LangGraph store namespace as text, its labels joined by periods (namespace_key). A label holds no '
    'period (memsub._langgraph_store_check_namespace), so the text names one namespace.';

create or replace function memsub._langgraph_store_key_range(p_tenant uuid, p_labels text[], out low text,
                                                            out high text)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
begin
    -- The namespaces that begin with p_labels as a range of namespace_key, for an index condition: from their key
    -- to the key followed by '/', which sorts right after '.' in the C collation. The range may hold a few others
    -- (such as {a,b-c} for {a,b}), which the caller's exact test drops. No labels: every key of the tenant. Two
    -- values, so one cached plan serves every prefix.
    low := coalesce(memsub._langgraph_store_namespace_key(p_labels), '');
    if coalesce(cardinality(p_labels), 0) > 0 then
        high := low || '/';
    else
        select max(i.namespace_key) || ' ' into high from memsub.langgraph_store_items i where i.tenant_id = p_tenant;
    end if;
end
$$;
comment on function memsub._langgraph_store_key_range(uuid, text[]) is
    'Internal: the range of namespace_key (low inclusive, high exclusive) holding every namespace of the tenant that '
    'begins with p_labels (every namespace for none), and possibly a few others; the callers test the labels '
    'exactly.';

create or replace function memsub._langgraph_store_matches(p_value jsonb, p_filter jsonb)
returns boolean
language plpgsql immutable security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    field     text;
    condition jsonb;
    operator  text;
    operand   jsonb;
    actual    jsonb;
    compared  integer;
    satisfied boolean;
begin
    for field, condition in select * from jsonb_each(coalesce(p_filter, '{}'::jsonb)) loop
        actual := p_value -> field;
        if jsonb_typeof(condition) = 'object'
           and exists (select from jsonb_object_keys(condition) k where left(k, 1) = '$') then
            for operator, operand in select * from jsonb_each(condition) loop
                if operator = '$eq' then
                    if actual is distinct from operand then return false; end if;
                elsif operator = '$ne' then  -- as in PostgresStore, an item without the field does not match
                    if actual is null or actual = operand then return false; end if;
                elsif operator in ('$gt', '$gte', '$lt', '$lte') then
                    if actual is null or jsonb_typeof(actual) <> jsonb_typeof(operand)
                       or jsonb_typeof(actual) not in ('number', 'string') then
                        return false;
                    end if;
                    compared := case when jsonb_typeof(actual) = 'number'
                                     then sign((actual #>> '{}')::numeric - (operand #>> '{}')::numeric)::integer
                                     else case when (actual #>> '{}') < (operand #>> '{}') then -1
                                               when (actual #>> '{}') > (operand #>> '{}') then 1 else 0 end end;
                    satisfied := case operator when '$gt' then compared > 0 when '$gte' then compared >= 0
                                               when '$lt' then compared < 0 else compared <= 0 end;
                    if not satisfied then
                        return false;
                    end if;
                else
                    raise exception 'memsub: unknown filter operator "%" for field %', operator, field
                        using errcode = '22023', column = 'filter',
                              hint = 'Known operators: $eq, $ne, $gt, $gte, $lt, $lte.';
                end if;
            end loop;
        elsif actual is distinct from condition then
            return false;
        end if;
    end loop;
    return true;
end
$$;
comment on function memsub._langgraph_store_matches(jsonb, jsonb) is
    'True when a store item''s value satisfies a LangGraph filter: {field: value} is equality, {field: {$op: value}} '
    'compares with $eq, $ne, $gt, $gte, $lt, $lte (numbers as numbers, strings as text; a missing field matches none, '
    '$ne included). 22023 for another $op.';

-- An item (namespace and key) of the tenant is written from one context: the organization's that wrote it first,
-- or the tenant-wide one (as a LangGraph thread, sql/910_langgraph_checkpoints.sql). Row-level security shows an
-- organization the tenant-wide items: without this check it overwrote or deleted them for every context, and a
-- key another context holds failed with the policy's own message. Owned by memsub_retrieval_owner (BYPASSRLS), it
-- sees every organization's items, states the tenant itself and answers yes or no. An expired item is gone for
-- every reader before the sweep deletes it (policy not_expired), so it holds its key for no context: an expired
-- item found here, of any context, is deleted (with its vectors) and the key is free (the caller's own expired
-- item too: hidden from the caller by the policy, it would otherwise stand in the way of the upsert). Only that
-- rare case writes; the usual call is the one keyed read.
create or replace function memsub._langgraph_store_item_owned_elsewhere(p_namespace_key text, p_key text)
returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant  uuid := memsub._require_tenant_id();
    v_owner   uuid;
    v_expires timestamptz;
begin
    select i.org_id, i.expires_at into v_owner, v_expires from memsub.langgraph_store_items i
     where i.tenant_id = v_tenant and i.namespace_key = p_namespace_key and i.key = p_key;
    if not found then
        return false;
    end if;
    if v_expires <= now() then
        delete from memsub.langgraph_store_items i
         where i.tenant_id = v_tenant and i.namespace_key = p_namespace_key and i.key = p_key
           and i.expires_at <= now();
        return false;
    end if;
    return v_owner is distinct from memsub.current_org_id();
end
$$;
alter function memsub._langgraph_store_item_owned_elsewhere(text, text) owner to memsub_retrieval_owner;
comment on function memsub._langgraph_store_item_owned_elsewhere(text, text) is
    'Internal: whether the live LangGraph store item at namespace_key and key of the context tenant was written '
    'from another context (another organization, or tenant-wide for an organization and the other way round), '
    'whoever may see it (owned by memsub_retrieval_owner, BYPASSRLS). An expired item there, of any context, is '
    'deleted, with its vectors, and holds the key no longer (false). Executable only by memsub_owner.';
grant select, delete on memsub.langgraph_store_items to memsub_retrieval_owner;
grant execute on function memsub._langgraph_store_item_owned_elsewhere(text, text) to memsub_owner;

drop function if exists memsub.langgraph_store_put(text[], text, jsonb, double precision, text[], jsonb);
create or replace function memsub.langgraph_store_put(
    p_namespace   text[],
    p_key         text,
    p_value       jsonb,
    p_ttl_minutes double precision default null,
    p_fields      text[]           default '{}',
    p_embeddings  vector[]         default '{}'
) returns void
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    tenant uuid := memsub._require_tenant_id();
    org    uuid;
    v_key  text;
    bad    bigint;
begin
    v_key := memsub._langgraph_store_namespace_key(memsub._langgraph_store_check_namespace(p_namespace, 'namespace'));
    if p_key is null then  -- the empty string is a key, as in LangGraph's PostgresStore
        raise exception 'memsub.langgraph_store_put: key must be a string'
            using errcode = '22023', column = 'key';
    end if;
    -- The rows are keyed by both (the namespace as its labels joined), and a B-tree entry holds about 2.7 kB.
    perform memsub._check_limits(array[octet_length(v_key), octet_length(p_key)], 'max_id_bytes',
                                 array['namespace', 'key']);
    if memsub._langgraph_store_item_owned_elsewhere(v_key, p_key) then
        raise exception 'memsub.langgraph_store_put: item "%" of namespace "%" is written from another context '
                        '(another organization''s, or the tenant-wide one): it is changed there only', p_key, v_key
            using errcode = '42501', column = 'key';
    end if;
    if p_value is null then  -- LangGraph's delete is a put of None
        delete from memsub.langgraph_store_items i
         where i.tenant_id = tenant and i.namespace_key = v_key and i.key = p_key;
        return;
    end if;
    if jsonb_typeof(p_value) <> 'object' then
        raise exception 'memsub.langgraph_store_put: value must be a JSON object'
            using errcode = '22023', column = 'value';
    end if;
    -- At most 1e11 minutes (about 190,000 years): a longer one overflows the interval of its expiry. NaN fails
    -- the second test (PostgreSQL orders NaN above every number).
    if p_ttl_minutes is not null and not (p_ttl_minutes > 0 and p_ttl_minutes <= 1e11) then
        raise exception 'memsub.langgraph_store_put: ttl must be a positive number of minutes, at most '
                        '100000000000 (about 190,000 years)'
            using errcode = '22023', column = 'ttl';
    end if;
    -- The vectors come as vector values (a driver sends them in pgvector's binary form): nothing to parse here.
    -- A vector whose cosine distance to itself is NaN (a zero vector, or squares under- or overflowing single
    -- precision, as memsub._check_vector refuses) has NaN cosine distances, which a search would rank first.
    -- Refused at any dimension: the store keeps vectors of every dimension. One read of the array finds the
    -- first NULL or such vector.
    if coalesce(cardinality(p_embeddings), 0) = coalesce(cardinality(p_fields), 0) and array_ndims(p_embeddings) = 1
    then
        bad := (select e.position from unnest(p_embeddings) with ordinality as e(embedding, position)
                 where e.embedding is null or cosine_distance(e.embedding, e.embedding) = 'NaN'::double precision
                 order by e.position limit 1);
    end if;
    if coalesce(cardinality(p_embeddings), 0) <> coalesce(cardinality(p_fields), 0) or array_ndims(p_embeddings) > 1
       or p_embeddings[bad] is null and bad is not null then
        raise exception 'memsub.langgraph_store_put: embeddings must hold one vector per field'
            using errcode = '22023', column = 'embeddings';
    end if;
    if bad is not null then
        bad := bad - 1;
        perform memsub._refuse_vector_without_norm(format('embeddings[%s]', bad), 'memsub.langgraph_store_put');
    end if;
    insert into memsub.langgraph_store_items as i
           (tenant_id, org_id, namespace, namespace_key, key, value, ttl_minutes, expires_at)
    values (tenant, memsub.current_org_id(), p_namespace, v_key, p_key, p_value, p_ttl_minutes,
            now() + make_interval(secs => p_ttl_minutes * 60))
    on conflict (tenant_id, namespace_key, key) do update
       set value = excluded.value, updated_at = now(), ttl_minutes = excluded.ttl_minutes,
           expires_at = excluded.expires_at
     -- Only the writer's own item. Another context's item here was written since the check above, by a
     -- transaction this insert waited for: left alone, it is refused below. (PostgreSQL tests this condition
     -- before the row-level security policy, which would refuse it with its own message.)
     where i.org_id is not distinct from excluded.org_id
    returning i.org_id into org;  -- its vectors carry the item's context
    if not found then
        raise exception 'memsub.langgraph_store_put: item "%" of namespace "%" is written from another context '
                        '(another organization''s, or the tenant-wide one): it is changed there only', p_key, v_key
            using errcode = '42501', column = 'key';
    end if;
    delete from memsub.langgraph_store_vectors v
     where v.tenant_id = tenant and v.namespace_key = v_key and v.key = p_key;
    insert into memsub.langgraph_store_vectors (tenant_id, org_id, namespace, namespace_key, key, field_name,
                                                embedding)
    select tenant, org, p_namespace, v_key, p_key, f.field_name, f.embedding
      from unnest(p_fields, p_embeddings) as f(field_name, embedding);
end
$$;
comment on function memsub.langgraph_store_put(text[], text, jsonb, double precision, text[], vector[]) is
    'Writes (or, with a NULL value, deletes) a LangGraph store item of the context tenant. p_ttl_minutes (more than 0, '
    'at most 1e11) makes it expire; p_fields and p_embeddings (one vector per field, in their order; each with a '
    'positive, finite norm, else 22023 naming embeddings[i]) replace its search vectors. '
    'The namespace (its labels joined by periods) and the key are each at most max_id_bytes (54000); an item written '
    'from another context (another organization''s, or the tenant-wide one) is refused (42501, key).';

create or replace function memsub.langgraph_store_get(
    p_namespace   text[],
    p_key         text,
    p_refresh_ttl boolean default true
) returns setof memsub.langgraph_store_item
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant uuid := memsub._unsealed_tenant_id();  -- its seal checked by the read or after it
    v_key  text := memsub._langgraph_store_namespace_key(p_namespace);
    item   memsub.langgraph_store_items%rowtype;
begin
    -- One keyed read, and an update only for an item with a time to live: a read-and-update in one statement
    -- (a data-modifying WITH) prepared the update on every call, with or without a time to live to restart.
    select i.* into item from memsub.langgraph_store_items i
     where i.tenant_id = tenant and i.namespace_key = v_key and i.key = p_key
       and i.namespace = p_namespace and (i.expires_at is null or i.expires_at > now());
    if not found then
        perform memsub._require_tenant_id();  -- 42501 without a context or with one not set by set_context
        return;
    end if;
    -- A read-only transaction (a hot standby's) cannot restart it: the item is returned as it is.
    if p_refresh_ttl and item.ttl_minutes is not null
       and not pg_catalog.current_setting('transaction_read_only')::boolean then
        update memsub.langgraph_store_items i
           set expires_at = now() + make_interval(secs => i.ttl_minutes * 60)
         where i.tenant_id = tenant and i.namespace_key = item.namespace_key and i.key = item.key;
    end if;
    return next row(item.namespace::text[], item.key::text, item.value, item.created_at, item.updated_at,
                    null::double precision)::memsub.langgraph_store_item;
end
$$;
comment on function memsub.langgraph_store_get(text[], text, boolean) is
    'The live (unexpired) LangGraph store item at namespace and key of the context tenant, or no row; '
    'p_refresh_ttl restarts its time to live, except in a read-only transaction (a hot standby).';

-- The earlier signature, without p_distance (it scored by cosine only), would otherwise remain as an overload.
drop function if exists memsub.langgraph_store_search(text[], jsonb, jsonb, integer, integer, boolean);
drop function if exists memsub.langgraph_store_search(text[], jsonb, jsonb, integer, integer, boolean, text);

create or replace function memsub.langgraph_store_search(
    p_namespace_prefix text[]  default '{}',
    p_filter           jsonb   default null,
    p_query_embedding  vector  default null,
    p_limit            integer default 10,
    p_offset           integer default 0,
    p_refresh_ttl      boolean default true,
    p_distance         text    default 'cosine'
) returns setof memsub.langgraph_store_item
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, public, pg_temp
as $$
declare
    tenant   uuid := memsub._unsealed_tenant_id();  -- its seal checked by the read or after it
    prefix   text[] := coalesce(p_namespace_prefix, '{}');
    found    memsub.langgraph_store_item[];
    item     memsub.langgraph_store_item;
    expiring boolean;
    -- A filter of plain values (no operator, no object or array to compare) matches as JSON containment, one
    -- operator a row; any other filter is evaluated by memsub._langgraph_store_matches, a function call a row.
    -- The path is strict: lax mode would unwrap an array value and test its elements.
    plain    boolean := case when jsonb_typeof(p_filter) = 'object'
                             then not jsonb_path_exists(p_filter,
                                                        'strict $.* ? (@.type() == "object" || @.type() == "array")')
                             else true end;
    key_range record;  -- the prefix's namespaces as a range of namespace_key (memsub._langgraph_store_key_range)
    bad_operator text;
begin
    if p_limit is null or p_limit < 0 or p_offset is null or p_offset < 0 then
        raise exception 'memsub.langgraph_store_search: limit and offset must be non-negative'
            using errcode = '22023', column = case when p_limit is null or p_limit < 0 then 'limit' else 'offset' end;
    end if;
    perform memsub._check_limit(p_limit, 'max_rows', 'limit');
    if p_distance is null or p_distance not in ('cosine', 'l2', 'inner_product') then
        raise exception 'memsub.langgraph_store_search: distance_type must be cosine, l2 or inner_product, not %',
                        coalesce(p_distance, 'NULL')
            using errcode = '22023', column = 'distance_type';
    end if;
    -- A query whose cosine distance to itself is NaN (a zero vector, or squares under- or overflowing single
    -- precision) would score every item NaN by cosine; refused whatever the distance, as put refuses such vectors.
    if cosine_distance(p_query_embedding, p_query_embedding) = 'NaN'::double precision then
        perform memsub._refuse_vector_without_norm('query_embedding', 'memsub.langgraph_store_search');
    end if;
    if p_filter is not null and jsonb_typeof(p_filter) <> 'object' then
        raise exception 'memsub.langgraph_store_search: filter must be a JSON object'
            using errcode = '22023', column = 'filter';
    end if;
    -- Every operator is checked once here, whatever the items: memsub._langgraph_store_matches meets an operator
    -- only when an item reaches it (an earlier field may fail first, or no item lie under the prefix).
    if not plain then
        select f.operator into bad_operator
          from jsonb_each(p_filter) as c(field, condition)
         cross join lateral jsonb_object_keys(c.condition) as f(operator)
         where jsonb_typeof(c.condition) = 'object'
           and exists (select from jsonb_object_keys(c.condition) k where left(k, 1) = '$')
           and f.operator not in ('$eq', '$ne', '$gt', '$gte', '$lt', '$lte')
         limit 1;
        if bad_operator is not null then
            raise exception 'memsub.langgraph_store_search: unknown filter operator "%"', bad_operator
                using errcode = '22023', column = 'filter',
                      hint = 'Known operators: $eq, $ne, $gt, $gte, $lt, $lte.';
        end if;
    end if;
    key_range := memsub._langgraph_store_key_range(tenant, prefix);
    -- The page is read into an array, and the times to live restarted by an update only when one of its items
    -- has one: a data-modifying WITH prepared the update on every call.
    if p_query_embedding is null then
        -- Newest first. A statement of its own: the executor starts every sub-select of a statement, so the
        -- scoring one below, unused without a query, cost a filtered search a sixth of its server time.
        select coalesce(array_agg(row(p.namespace::text[], p.key::text, p.value, p.created_at, p.updated_at,
                                      null::double precision)::memsub.langgraph_store_item
                                  order by p.updated_at desc, p.namespace, p.key), '{}'),
               coalesce(bool_or(p.ttl_minutes is not null), false)
          into found, expiring
          from (select i.namespace, i.key, i.value, i.created_at, i.updated_at, i.ttl_minutes
                  from memsub.langgraph_store_items i
                 where i.tenant_id = tenant and i.namespace_key >= key_range.low
                   and i.namespace_key < key_range.high
                   and i.namespace[1:cardinality(prefix)] = prefix
                   and (i.expires_at is null or i.expires_at > now())
                   and (p_filter is null
                        or case when plain then i.value @> p_filter
                                else memsub._langgraph_store_matches(i.value, p_filter) end)
                 order by i.updated_at desc, i.namespace, i.key
                 limit p_limit offset p_offset) p;
    else
        with candidates as (
            select i.namespace, i.key, i.value, i.created_at, i.updated_at, i.ttl_minutes,
                   -- Higher is nearer for each distance, as LangGraph's PostgresStore scores them. A vector
                   -- stored before put refused those without a cosine distance scores NULL, not NaN (which
                   -- max() and the order below would put above every number).
                   (select max(nullif(case p_distance
                                          when 'l2' then -(v.embedding <-> p_query_embedding)
                                          when 'inner_product' then -(v.embedding <#> p_query_embedding)
                                          else 1 - (v.embedding <=> p_query_embedding) end,
                                      'NaN'::double precision))
                      from memsub.langgraph_store_vectors v
                     where v.tenant_id = tenant and v.namespace_key = i.namespace_key and v.key = i.key
                       -- a query of any dimension meets only the stored vectors of its own
                       and vector_dims(v.embedding) = vector_dims(p_query_embedding)) as score
              from memsub.langgraph_store_items i
             where i.tenant_id = tenant and i.namespace_key >= key_range.low
               and i.namespace_key < key_range.high
               and i.namespace[1:cardinality(prefix)] = prefix
               and (i.expires_at is null or i.expires_at > now())
               and (p_filter is null
                    or case when plain then i.value @> p_filter
                            else memsub._langgraph_store_matches(i.value, p_filter) end)
        ), page as (
            select c.* from candidates c
             order by c.score desc nulls last, c.updated_at desc, c.namespace, c.key
             limit p_limit offset p_offset
        )
        select coalesce(array_agg(row(p.namespace::text[], p.key::text, p.value, p.created_at, p.updated_at,
                                      p.score)::memsub.langgraph_store_item
                                  order by p.score desc nulls last, p.updated_at desc, p.namespace, p.key), '{}'),
               coalesce(bool_or(p.ttl_minutes is not null), false)
          into found, expiring
          from page p;
    end if;
    if cardinality(found) = 0 then
        perform memsub._require_tenant_id();  -- 42501 without a context or with one not set by set_context
    end if;
    if p_refresh_ttl and expiring and not pg_catalog.current_setting('transaction_read_only')::boolean then
        update memsub.langgraph_store_items i
           set expires_at = now() + make_interval(secs => i.ttl_minutes * 60)
          from unnest(found) p
         where i.tenant_id = tenant and i.namespace_key = memsub._langgraph_store_namespace_key(p.namespace)
           and i.key = p.key
           and i.ttl_minutes is not null;
    end if;
    foreach item in array found loop
        return next item;
    end loop;
end
$$;
comment on function memsub.langgraph_store_search(text[], jsonb, vector, integer, integer, boolean, text) is
    'Live LangGraph store items of the context tenant under a namespace prefix that match p_filter: by score against '
    'p_query_embedding when given (the best of the item''s indexed fields; p_distance cosine: 1 - cosine distance, '
    'l2: minus the Euclidean distance, inner_product: the inner product; a stored vector without a cosine '
    'distance scores NULL), else newest first; p_refresh_ttl '
    'restarts the time to live of what is returned (not in a read-only transaction: a hot standby). 22023 (distance_type) for another distance, 22023 (filter) '
    'for an unknown filter operator, whatever the items; 22023 (query_embedding) for a query without a usable '
    'norm (a zero vector, or squares beyond single precision); 22023 for a limit or offset below 0, 54000 for a limit '
    'over max_rows (naming limit).';

create or replace function memsub._langgraph_store_labels_match(p_labels text[], p_pattern text[],
                                                               p_at_end boolean)
returns boolean
language sql immutable security invoker parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select cardinality(p_labels) >= cardinality(p_pattern)
       and not exists (select from unnest(p_pattern) with ordinality as p(label, position)
                        where p.label <> '*'
                          and p.label is distinct from
                              p_labels[case when p_at_end then cardinality(p_labels) - cardinality(p_pattern) + p.position
                                            else p.position end])
$$;
comment on function memsub._langgraph_store_labels_match(text[], text[], boolean) is
    'Internal: true when the namespace p_labels begins (p_at_end false) or ends (true) with p_pattern, where a '
    'label ''*'' matches any one label.';

create or replace function memsub.langgraph_store_list_namespaces(
    p_prefix    text[]  default null,
    p_suffix    text[]  default null,
    p_max_depth integer default null,
    p_limit     integer default 100,
    p_offset    integer default 0
) returns table (namespace text[])
language plpgsql stable security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant    uuid := memsub._unsealed_tenant_id();  -- its seal checked by the read or after it
    key_range record;  -- the namespaces that begin with the prefix's labels before its first '*', as a range of keys
    -- A prefix or suffix without '*' is compared as an array slice; one with '*' label by label. As sub-selects
    -- (before), the tests ran an executor node for every namespace: a listing of 200 namespaces took 1.1 times
    -- the server time (20 namespaces: the same).
    prefix_plain boolean := array_position(p_prefix, '*') is null;
    suffix_plain boolean := array_position(p_suffix, '*') is null;
begin
    if p_limit is null or p_limit < 0 or p_offset is null or p_offset < 0
       or (p_max_depth is not null and p_max_depth < 1) then
        raise exception 'memsub.langgraph_store_list_namespaces: limit, offset and max_depth must be non-negative '
                        '(max_depth at least 1)'
            using errcode = '22023',
                  column = case when p_max_depth is not null and p_max_depth < 1 then 'max_depth'
                                when p_limit is null or p_limit < 0 then 'limit' else 'offset' end;
    end if;
    perform memsub._check_limit(p_limit, 'max_rows', 'limit');
    key_range := memsub._langgraph_store_key_range(
        tenant, p_prefix[1:coalesce(array_position(p_prefix, '*') - 1, cardinality(p_prefix))]);
    -- The tenant's distinct namespaces first, by their keys in index order (a label holds no period, so the
    -- key's parts are the labels); then the prefix and suffix (a label '*' matches any label), the depth and the
    -- page, over those few. OFFSET 0 keeps the prefix and suffix tests above the DISTINCT: pushed below it, as
    -- the planner otherwise may, they ran once an item instead of once a namespace (1.4 times the server time
    -- with 20 items a namespace).
    return query
    select t.truncated from (
    select distinct n.truncated
      from (select case when p_max_depth is null then k.labels else k.labels[1:p_max_depth] end as truncated
              from (select string_to_array(d.namespace_key, '.') collate "C" as labels
                      from (select distinct i.namespace_key from memsub.langgraph_store_items i
                             where i.tenant_id = tenant and i.namespace_key >= key_range.low
                               and i.namespace_key < key_range.high
                               and (i.expires_at is null or i.expires_at > now())
                            offset 0) d) k
             where (p_prefix is null
                    or case when prefix_plain then k.labels[1:cardinality(p_prefix)] = p_prefix
                            else memsub._langgraph_store_labels_match(k.labels, p_prefix, false) end)
               and (p_suffix is null
                    or case when suffix_plain
                            then k.labels[cardinality(k.labels) - cardinality(p_suffix) + 1:] = p_suffix
                            else memsub._langgraph_store_labels_match(k.labels, p_suffix, true) end)
           ) n) t
     -- As PostgresStore orders them: by the labels joined by periods (a label holds none, so one text a
     -- namespace), byte by byte; label by label, ('a', 'b') came before ('a-c') and pages differed.
     order by array_to_string(t.truncated, '.') collate "C"
     limit p_limit offset p_offset;
    if not found then
        perform memsub._require_tenant_id();  -- 42501 without a context or with one not set by set_context
    end if;
end
$$;
comment on function memsub.langgraph_store_list_namespaces(text[], text[], integer, integer, integer) is
    'Distinct namespaces of the context tenant''s live store items, sorted by their labels joined by periods (as '
    'LangGraph''s PostgresStore sorts them), matching a prefix and/or suffix (a label ''*'' matches any label) and '
    'cut to p_max_depth labels. At most p_limit namespaces (22023 below 0, 54000 over max_rows, naming limit).';

create or replace function memsub.langgraph_store_sweep()
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    tenant  uuid := memsub._require_tenant_id();
    deleted integer;
begin
    delete from memsub.langgraph_store_items i where i.tenant_id = tenant and i.expires_at <= now();
    get diagnostics deleted = row_count;
    return deleted;
end
$$;
-- Owned by memsub_expiry_owner, the one role policy not_expired shows the expired items; the tenant and
-- organization policies bind it as they bind the caller.
alter function memsub.langgraph_store_sweep() owner to memsub_expiry_owner;
comment on function memsub.langgraph_store_sweep() is
    'Deletes the context tenant''s expired LangGraph store items (and their vectors) that its context may see; '
    'returns how many. Runs as memsub_expiry_owner, which alone sees expired items.';
grant select, delete on memsub.langgraph_store_items to memsub_expiry_owner;

grant execute on function
    memsub.langgraph_store_put(text[], text, jsonb, double precision, text[], vector[]),
    memsub.langgraph_store_get(text[], text, boolean),
    memsub.langgraph_store_search(text[], jsonb, vector, integer, integer, boolean, text),
    memsub.langgraph_store_list_namespaces(text[], text[], integer, integer, integer),
    memsub.langgraph_store_sweep()
    to memsub_app;
-- Reading the rows directly is allowed (row-level security applies); writes go through the functions.
grant select on memsub.langgraph_store_items, memsub.langgraph_store_vectors to memsub_app, memsub_analyst;
