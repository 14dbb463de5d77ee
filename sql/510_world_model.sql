-- Area: world_model. Seed: seed 000 "WORLD MODEL LAYER".
--
-- World-model layer: versioned entities, the updates that changed them, and snapshots of the whole state.
--
-- A tenant's world model has one state version. memsub.apply_world_model_update() locks the tenant's
-- world_model_state row, so updates of one tenant apply one at a time and each gets before = n, after = n + 1;
-- the function is one statement, so a failed update changes nothing. Snapshots lock the same row in share mode
-- and therefore capture exactly one state version.

create or replace function memsub.world_model_state_version() returns integer
language sql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
    select coalesce((select s.state_version from memsub.world_model_state s
                      where s.tenant_id = memsub.current_tenant_id()), 0)
$$;
comment on function memsub.world_model_state_version() is 'Current world-model state version of the context tenant (0 before any update).';

-- Entity names match by one rule everywhere (sql/410_knowledge_graph.sql): two spellings that
-- memsub.normalize_text makes equal name one entity. An update and graph_upsert_entity find an entity by it here.
create or replace function memsub._world_model_entity_named(p_tenant_id uuid, p_name text) returns text
language sql stable security invoker parallel safe
set search_path = pg_catalog, memsub, pg_temp
as $$
    -- The stored names' matching form as idx_world_model_entities_key's expression, which the index search must
    -- repeat (it is memsub.normalize_text's body).
    select e.entity_id from memsub.world_model_entities e
     where e.tenant_id = p_tenant_id
       and lower(btrim(regexp_replace(normalize(e.entity_id, nfc),
                                      '[[:space:]\u0085\u00a0\u2007\u202f]+', ' ', 'g')))
           = memsub.normalize_text(p_name)
     order by e.entity_id
     limit 1
$$;
comment on function memsub._world_model_entity_named(uuid, text) is
    'Internal: the id of the tenant''s world-model entity whose name matches p_name (memsub.normalize_text), the '
    'first by entity_id; NULL when none does. Used by memsub.apply_world_model_update and '
    'memsub.graph_upsert_entity, so both find an entity however its name is spelled.';

create or replace function memsub.apply_world_model_update(
    p_insight_type     text,
    p_entities         jsonb,
    p_content          jsonb            default '{}',
    p_confidence       double precision default 0.5,
    p_insight_id       uuid             default null,
    p_expected_version integer          default null
) returns memsub.world_model_updates
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant   uuid := memsub._require_tenant_id();
    v_org      uuid := memsub.current_org_id();
    v_user     uuid := memsub.current_user_id();
    v_now      timestamp := now() at time zone 'UTC';
    v_before   integer;
    v_after    integer;
    v_entity   jsonb;
    v_position integer;
    v_field    text;
    v_id       text;
    v_ids      text[] := '{}';  -- each change's entity id, as checked (resolved to a stored spelling when written)
    v_keys     text[] := '{}';  -- each change's entity id in its matching form (memsub.normalize_text)
    v_types    text[] := '{}';
    v_confidences double precision[] := '{}';
    v_type     text;
    v_attrs    jsonb;
    v_removed  text[];          -- the attributes a change sets to JSON null: removed
    v_update   memsub.world_model_updates;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('insight_type', p_insight_type),
            memsub._check_limit(pg_column_size(p_entities), 'max_json_bytes', 'entities'),
            memsub._check_limit(pg_column_size(p_content), 'max_json_bytes', 'content');
    perform memsub._require_text(p_insight_type, 'insight_type');
    perform memsub._check_unit(p_confidence, 'confidence');
    perform memsub._check_json_type(p_content, 'object', 'content');
    perform memsub._check_expected_version(p_expected_version);
    if p_entities is null or jsonb_typeof(p_entities) <> 'array' or jsonb_array_length(p_entities) = 0 then
        raise exception 'field "entities" must be a non-empty JSON array of entity changes'
            using errcode = '22023', column = 'entities';
    end if;
    -- Validate every change before touching anything.
    for v_entity, v_position in select e, n - 1 from jsonb_array_elements(p_entities) with ordinality as a(e, n) loop
        v_field := format('entities[%s]', v_position);
        perform memsub._check_object_keys(v_entity, v_field,
                                          array['entity_id', 'entity_type', 'attributes', 'confidence'],
                                          '{entity_id, entity_type, attributes, confidence}', 'an entity change');
        -- A field given as JSON null is that field left out, for every field alike: the entity keeps its type,
        -- attributes and confidence (a new one takes the defaults and still needs a type), a change without an id
        -- has none. Only inside attributes does a JSON null mean something: it removes that attribute.
        v_entity := v_entity - array(select f.key from jsonb_each(v_entity) as f where f.value = 'null'::jsonb);
        v_id := memsub._require_text(memsub._check_json_type(v_entity -> 'entity_id', 'string', v_field || '.entity_id') #>> '{}',
                                    v_field || '.entity_id');
        perform memsub._check_key_bytes(v_field || '.entity_id', v_id);
        -- Two spellings of one name are one entity (memsub.normalize_text).
        if memsub.normalize_text(v_id) = any(v_keys) then
            raise exception 'field "%.entity_id": entity % appears twice in one update', v_field, v_id
                using errcode = '22023', column = v_field || '.entity_id';
        end if;
        v_ids := v_ids || v_id;
        v_keys := v_keys || memsub.normalize_text(v_id);
        -- A type given is a required text (not blank), for an entity that exists as for a new one.
        v_types := v_types
                   || case when memsub._check_json_type(v_entity -> 'entity_type', 'string',
                                                        v_field || '.entity_type') is not null
                           then memsub._require_text(v_entity ->> 'entity_type', v_field || '.entity_type') end;
        perform memsub._check_json_type(v_entity -> 'attributes', 'object', v_field || '.attributes');
        v_confidences := v_confidences
                         || memsub._check_unit(memsub._json_double(v_entity -> 'confidence', v_field || '.confidence'),
                                               v_field || '.confidence');
    end loop;

    insert into memsub.world_model_state (tenant_id, state_version, org_id, user_id)
    values (v_tenant, 0, v_org, v_user)
    on conflict (tenant_id) do nothing;
    select s.state_version into v_before from memsub.world_model_state s where s.tenant_id = v_tenant for update;
    if p_expected_version is not null and p_expected_version <> v_before then
        raise exception 'world model is at state version %, not the expected %', v_before, p_expected_version
            using errcode = '40001', column = 'expected_version',
                  hint = 'Re-read the world model and apply the insight again.';
    end if;
    v_after := v_before + 1;

    for v_entity, v_position in select e, n - 1 from jsonb_array_elements(p_entities) with ordinality as a(e, n) loop
        v_field := format('entities[%s]', v_position);
        -- An entity whose name matches (memsub.normalize_text) is that entity, looked up under the state lock so a
        -- concurrent update that created it is seen; otherwise a new entity, named as given.
        v_id := coalesce(memsub._world_model_entity_named(v_tenant, v_ids[v_position + 1]), v_ids[v_position + 1]);
        v_type := v_types[v_position + 1];
        v_attrs := coalesce(nullif(v_entity -> 'attributes', 'null'::jsonb), '{}');
        v_removed := array(select a.key from jsonb_each(v_attrs) as a where a.value = 'null'::jsonb);
        update memsub.world_model_entities w
           set entity_type = coalesce(v_type, w.entity_type),
               attributes = (w.attributes || v_attrs) - v_removed,
               confidence = coalesce(v_confidences[v_position + 1], w.confidence),
               version = w.version + 1,
               updated_at = v_now,
               state_version = v_after,
               org_id = v_org,
               user_id = v_user
         where w.tenant_id = v_tenant and w.entity_id = v_id;
        if not found then
            if v_type is null then
                raise exception 'field "%.entity_type" is required for the new entity %', v_field, v_id
                    using errcode = '23502', column = v_field || '.entity_type';
            end if;
            insert into memsub.world_model_entities (
                entity_id, entity_type, attributes, confidence, version, created_at, updated_at, state_version,
                tenant_id, org_id, user_id)
            values (
                v_id, v_type,
                v_attrs - v_removed, coalesce(v_confidences[v_position + 1], 0.5), 1,
                v_now, v_now, v_after, v_tenant, v_org, v_user);
        end if;
    end loop;

    update memsub.world_model_state s
       set state_version = v_after, updated_at = v_now, org_id = v_org, user_id = v_user
     where s.tenant_id = v_tenant;
    insert into memsub.world_model_updates (
        insight_id, insight_type, entities, content, confidence, applied_at, state_version_before,
        state_version_after, tenant_id, org_id, user_id)
    values (
        p_insight_id, memsub._require_text(p_insight_type, 'insight_type'), p_entities, coalesce(p_content, '{}'),
        coalesce(p_confidence, 0.5), v_now, v_before, v_after, v_tenant, v_org, v_user)
    returning * into v_update;
    return v_update;
end
$$;
comment on function memsub.apply_world_model_update(text, jsonb, jsonb, double precision, uuid, integer) is
    'Applies an insight to the tenant''s world model atomically: entities [{entity_id, entity_type, attributes, '
    'confidence}] are created (version 1) or updated (version + 1, attributes merged, a JSON null removes a key); '
    'a field of a change given as JSON null counts as left out (the stored or default value stays; an id or a new '
    'entity''s type is then missing: 23502); '
    'an entity_id matching an entity''s name (memsub.normalize_text) updates that entity, and naming one entity '
    'twice in an update, in any spelling, is refused (22023). '
    'The state version goes from n to n + 1 and the update is recorded. With expected_version, a world model at '
    'another version raises 40001 and nothing changes. Any error changes nothing.';

create or replace function memsub.take_world_model_snapshot(
    p_description text default null,
    p_created_by  text default null
) returns memsub.world_model_snapshots
language plpgsql volatile security definer
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_tenant    uuid := memsub._require_tenant_id();
    v_version   integer;
    v_entities  jsonb;
    v_relations jsonb;
    v_expire_at timestamp;  -- the earliest expiry among the relations (NULL: none expires)
    v_snapshot  memsub.world_model_snapshots;
begin
    -- Resource limits (sql/015_limits.sql): oversized input is refused before anything is read or written.
    perform memsub._check_text_limits('description', p_description, 'created_by', p_created_by);
    -- Share lock on the state row: no update can commit between reading the version and the entities. The row is
    -- made first when the tenant has none yet, as memsub.apply_world_model_update makes it: a first update still
    -- uncommitted holds that row, and the snapshot waits for it instead of reading version 0 and its entities.
    insert into memsub.world_model_state (tenant_id, state_version, org_id, user_id)
    values (v_tenant, 0, memsub.current_org_id(), memsub.current_user_id())
    on conflict (tenant_id) do nothing;
    select s.state_version into v_version from memsub.world_model_state s where s.tenant_id = v_tenant for share;
    select coalesce(jsonb_object_agg(w.entity_id, jsonb_build_object(
               'entity_type', w.entity_type, 'attributes', w.attributes, 'confidence', w.confidence,
               'version', w.version)), '{}')
      into v_entities
      from memsub.world_model_entities w where w.tenant_id = v_tenant;
    -- The relations that hold now (expired windows are not visible here, the not_expired policy), each with the
    -- packet it came from and its expiry: purge_expired removes a relation from the snapshot once its expiry has
    -- passed, as it deletes the edge window, so nothing derived from a packet outlives the packet's purge.
    select coalesce(jsonb_agg(jsonb_build_object(
               'source_entity', r.source_entity, 'relationship_type', r.relationship_type,
               'target_entity', r.target_entity, 'confidence', r.confidence, 'mention_count', r.mention_count,
               'source_packet', r.source_packet, 'ttl', r.ttl)
               order by r.source_entity, r.relationship_type, r.target_entity), '[]'),
           min(r.ttl)
      into v_relations, v_expire_at
      from memsub.entity_relationships r
     where r.tenant_id = v_tenant and r.valid_period @> now();
    insert into memsub.world_model_snapshots (
        snapshot, state_version, entity_count, relation_count, relations_expire_at, description, created_by,
        tenant_id, org_id, user_id)
    values (
        jsonb_build_object('state_version', v_version, 'entities', v_entities, 'relations', v_relations),
        v_version, (select count(*) from jsonb_object_keys(v_entities)), jsonb_array_length(v_relations),
        v_expire_at, p_description,
        -- who took it: a name, stored as every optional name is (a blank one counts as absent)
        coalesce(memsub._optional_text(p_created_by), memsub.current_user_id()::text, session_user),
        v_tenant, memsub.current_org_id(), memsub.current_user_id())
    returning * into v_snapshot;
    return v_snapshot;
end
$$;
comment on function memsub.take_world_model_snapshot(text, text) is
    'Captures the tenant''s full world-model state (entities with their versions, and the knowledge-graph relations '
    'that hold now, each with its source_packet and ttl) at one state version, with entity and relation counts. '
    'A relation derived from expiring packets stays in the snapshot until purge_expired() purges them, which '
    'removes it (a direct SELECT shows it between its expiry and the purge); the entities are not derived from '
    'packets and stay. created_by is stored trimmed, each run of whitespace one space; NULL or blank: the context '
    'user, or the login without one.';

create or replace function memsub.world_model_state_at(p_snapshot_id uuid)
returns table (entity_id text, entity_type text, attributes jsonb, confidence double precision, version integer)
language plpgsql stable security invoker
set search_path = pg_catalog, memsub, pg_temp
as $$
declare
    v_snapshot jsonb;
begin
    if p_snapshot_id is null then
        raise exception 'field "snapshot_id" is required' using errcode = '23502', column = 'snapshot_id';
    end if;
    select s.snapshot into v_snapshot from memsub.world_model_snapshots s where s.snapshot_id = p_snapshot_id;
    if v_snapshot is null then
        raise exception 'field "snapshot_id": snapshot % does not exist or is not visible', p_snapshot_id
            using errcode = '23503', column = 'snapshot_id';
    end if;
    return query
        select e.key, e.value ->> 'entity_type', e.value -> 'attributes',
               (e.value ->> 'confidence')::double precision, (e.value ->> 'version')::integer
          from jsonb_each(v_snapshot -> 'entities') as e
         order by e.key;
end
$$;
comment on function memsub.world_model_state_at(uuid) is
    'The world-model entities as they were when the snapshot was taken (entity_id, entity_type, attributes, '
    'confidence and version of world_model_entities). '
    'NULL snapshot_id: 23502; a snapshot that does not exist or is not visible: 23503.';

call memsub._install_row_security('memsub.world_model_state', array[]::text[]);
call memsub._install_row_security('memsub.world_model_entities', array[]::text[]);
call memsub._install_row_security('memsub.world_model_updates', array[]::text[]);
call memsub._install_row_security('memsub.world_model_snapshots', array[]::text[]);

grant select on memsub.world_model_state, memsub.world_model_entities, memsub.world_model_updates,
    memsub.world_model_snapshots
    to memsub_app, memsub_analyst;
-- purge_expired (sql/140_packet_hygiene.sql, owned by memsub_expiry_owner) removes the expired relations from the
-- snapshots.
grant select, update on memsub.world_model_snapshots to memsub_expiry_owner;
grant execute on function
    memsub.apply_world_model_update(text, jsonb, jsonb, double precision, uuid, integer),
    memsub.take_world_model_snapshot(text, text)
    to memsub_app;
grant execute on function memsub.world_model_state_version(), memsub.world_model_state_at(uuid)
    to memsub_app, memsub_analyst;
