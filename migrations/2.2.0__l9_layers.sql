-- memsub 2.2.0: the L9 layers around packet_store (seed 000): core (events, reasoning traces, facts), semantic
-- (legacy vector store, multi-space embeddings), knowledge graph, world model, reflection, intelligence and
-- operations, the four materialized views and the log of their refreshes.
--
-- Vector dimension: 1536 (the seed's OpenAI dimension) unless the migrating session sets
-- memsub.vector_dimension (e.g. `PGOPTIONS='-c memsub.vector_dimension=384'` or
-- `alter database ... set memsub.vector_dimension = 384` before migrating). The value is recorded in
-- memsub.installation_settings and read back by the functions; vector columns are created untyped and then given
-- the recorded dimension, so no SQL is edited for a 384-d installation.

create extension if not exists vector;

-- Installation-wide settings (not tenant data).
create table memsub.installation_settings (
    name       text        not null,
    value      text        not null,
    set_at     timestamptz not null default now(),
    constraint installation_settings_pkey primary key (name)
);
comment on table memsub.installation_settings is
    'Installation-wide settings chosen when memsub was migrated (e.g. vector_dimension). Not tenant data.';
comment on column memsub.installation_settings.name is 'Setting name.';
comment on column memsub.installation_settings.value is 'Setting value as text.';
comment on column memsub.installation_settings.set_at is 'When the setting was recorded.';

do $dimension$
declare
    requested text := nullif(btrim(current_setting('memsub.vector_dimension', true)), '');
    dimension integer;
begin
    if requested is null then
        dimension := 1536;
    elsif requested !~ '^\d{1,4}$' or requested::integer not between 1 and 2000 then
        raise exception 'memsub.vector_dimension must be an integer between 1 and 2000 (the HNSW limit), not "%"', requested
            using errcode = '22023', column = 'vector_dimension';
    else
        dimension := requested::integer;
    end if;
    insert into memsub.installation_settings (name, value) values ('vector_dimension', dimension::text);
end
$dimension$;

-- Core layer -------------------------------------------------------------------------------------------------

create table memsub.agent_memory_events (
    event_id       uuid        not null default gen_random_uuid(),
    agent_id       text        not null,
    "timestamp"    timestamptz not null default now(),
    packet_id      uuid,
    event_type     text        not null,
    content        jsonb       not null default '{}',
    scope          text        not null default 'shared',
    tenant_id      uuid        not null,
    org_id         uuid,
    user_id        uuid,
    correlation_id uuid,
    session_id     text,
    trace_id       text,
    constraint agent_memory_events_pkey primary key (tenant_id, event_id),
    constraint agent_memory_events_packet_fkey foreign key (tenant_id, packet_id)
        references memsub.packet_store (tenant_id, packet_id) on delete set null (packet_id),
    constraint agent_memory_events_agent_not_blank check (length(btrim(agent_id)) > 0),
    constraint agent_memory_events_type_not_blank check (length(btrim(event_type)) > 0),
    constraint agent_memory_events_scope_known check (scope in ('shared', 'cursor', 'l-private'))
);
create index idx_agent_memory_events_agent on memsub.agent_memory_events (tenant_id, agent_id, "timestamp" desc);
create index idx_agent_memory_events_packet on memsub.agent_memory_events (tenant_id, packet_id) where packet_id is not null;

comment on table memsub.agent_memory_events is 'What agents did: one row per agent event, linked to the packet that carried it.';
comment on column memsub.agent_memory_events.event_id is 'Unique event identifier.';
comment on column memsub.agent_memory_events.agent_id is 'Agent that produced the event.';
comment on column memsub.agent_memory_events."timestamp" is 'Event time.';
comment on column memsub.agent_memory_events.packet_id is 'Packet that carried the event (NULL once that packet was purged).';
comment on column memsub.agent_memory_events.event_type is 'Kind of event (free text, e.g. tool_call, user_query).';
comment on column memsub.agent_memory_events.content is 'Event content.';
comment on column memsub.agent_memory_events.scope is 'Visibility scope, copied from the packet (shared when there is none).';
comment on column memsub.agent_memory_events.tenant_id is 'Tenant isolation.';
comment on column memsub.agent_memory_events.org_id is 'Organization of the writer (NULL: whole tenant).';
comment on column memsub.agent_memory_events.user_id is 'User of the writer.';
comment on column memsub.agent_memory_events.correlation_id is 'Request correlation identifier (from the packet).';
comment on column memsub.agent_memory_events.session_id is 'Session of the writer.';
comment on column memsub.agent_memory_events.trace_id is 'Distributed tracing identifier (from the packet).';

-- trace_id is this table's primary key (seed 000); the distributed-tracing column that every other table calls
-- trace_id is distributed_trace_id here.
create table memsub.reasoning_traces (
    trace_id             uuid        not null default gen_random_uuid(),
    agent_id             text,
    packet_id            uuid,
    steps                jsonb       not null default '[]',
    extracted_features   jsonb       not null default '{}',
    inference_steps      jsonb       not null default '[]',
    reasoning_tokens     integer     not null default 0,
    decision_tokens      integer     not null default 0,
    confidence_scores    jsonb       not null default '{}',
    scope                text        not null default 'shared',
    created_at           timestamptz not null default now(),
    tenant_id            uuid        not null,
    org_id               uuid,
    user_id              uuid,
    correlation_id       uuid,
    session_id           text,
    distributed_trace_id text,
    constraint reasoning_traces_pkey primary key (tenant_id, trace_id),
    constraint reasoning_traces_packet_fkey foreign key (tenant_id, packet_id)
        references memsub.packet_store (tenant_id, packet_id) on delete set null (packet_id),
    constraint reasoning_traces_steps_is_array check (jsonb_typeof(steps) = 'array'),
    constraint reasoning_traces_inference_steps_is_array check (jsonb_typeof(inference_steps) = 'array'),
    constraint reasoning_traces_features_is_object check (jsonb_typeof(extracted_features) = 'object'),
    constraint reasoning_traces_scores_is_object check (jsonb_typeof(confidence_scores) = 'object'),
    constraint reasoning_traces_tokens_non_negative check (reasoning_tokens >= 0 and decision_tokens >= 0),
    constraint reasoning_traces_scope_known check (scope in ('shared', 'cursor', 'l-private'))
);
create index idx_reasoning_traces_packet on memsub.reasoning_traces (tenant_id, packet_id) where packet_id is not null;
create index idx_reasoning_traces_agent on memsub.reasoning_traces (tenant_id, agent_id, created_at desc);

comment on table memsub.reasoning_traces is 'Structured reasoning of an agent for one packet: steps, features, inference, token counts.';
comment on column memsub.reasoning_traces.trace_id is 'Unique reasoning trace identifier.';
comment on column memsub.reasoning_traces.agent_id is 'Agent that reasoned.';
comment on column memsub.reasoning_traces.packet_id is 'Packet the reasoning belongs to (NULL once purged).';
comment on column memsub.reasoning_traces.steps is 'Reasoning steps, a JSON array.';
comment on column memsub.reasoning_traces.extracted_features is 'Features extracted from the input, a JSON object.';
comment on column memsub.reasoning_traces.inference_steps is 'Inference steps, a JSON array.';
comment on column memsub.reasoning_traces.reasoning_tokens is 'Tokens spent reasoning.';
comment on column memsub.reasoning_traces.decision_tokens is 'Tokens spent deciding.';
comment on column memsub.reasoning_traces.confidence_scores is 'Confidence per step or decision, a JSON object.';
comment on column memsub.reasoning_traces.created_at is 'When the trace was recorded.';
comment on column memsub.reasoning_traces.scope is 'Visibility scope, copied from the packet (shared when there is none).';
comment on column memsub.reasoning_traces.tenant_id is 'Tenant isolation.';
comment on column memsub.reasoning_traces.org_id is 'Organization of the writer (NULL: whole tenant).';
comment on column memsub.reasoning_traces.user_id is 'User of the writer.';
comment on column memsub.reasoning_traces.correlation_id is 'Request correlation identifier (from the packet).';
comment on column memsub.reasoning_traces.session_id is 'Session of the writer.';
comment on column memsub.reasoning_traces.distributed_trace_id is
    'Distributed tracing identifier (the multi-tenant trace_id column; renamed because trace_id is this table''s key).';

-- Knowledge is tenant-wide: one row per (subject, predicate, object) per tenant, reinforced by every assertion.
create table memsub.knowledge_facts (
    fact_id                 uuid             not null default gen_random_uuid(),
    subject                 text             not null,
    predicate               text             not null,
    object                  jsonb            not null,
    confidence              double precision not null default 0.5,
    source_packet           uuid,
    subject_normalized      text             not null,
    object_normalized       text             not null,
    supporting_packet_count integer          not null default 1,
    contradiction_count     integer          not null default 0,
    access_count            integer          not null default 0,
    last_accessed           timestamptz,
    created_at              timestamptz      not null default now(),
    updated_at              timestamptz      not null default now(),
    tenant_id               uuid             not null,
    org_id                  uuid,
    user_id                 uuid,
    correlation_id          uuid,
    session_id              text,
    trace_id                text,
    constraint knowledge_facts_pkey primary key (tenant_id, fact_id),
    constraint knowledge_facts_fact_key unique (tenant_id, subject_normalized, predicate, object_normalized),
    constraint knowledge_facts_source_packet_fkey foreign key (tenant_id, source_packet)
        references memsub.packet_store (tenant_id, packet_id) on delete set null (source_packet),
    constraint knowledge_facts_confidence_in_unit_range check (confidence between 0 and 1),
    constraint knowledge_facts_counts_non_negative
        check (supporting_packet_count >= 0 and contradiction_count >= 0 and access_count >= 0)
);
create index idx_knowledge_facts_source_packet on memsub.knowledge_facts (tenant_id, source_packet)
    where source_packet is not null;

comment on table memsub.knowledge_facts is
    'Extracted facts (subject, predicate, object), tenant-wide, reinforced and contradicted by later assertions '
    '(memsub.assert_fact).';
comment on column memsub.knowledge_facts.fact_id is 'Unique fact identifier.';
comment on column memsub.knowledge_facts.subject is 'Subject as first asserted.';
comment on column memsub.knowledge_facts.predicate is 'Predicate, normalized (trimmed, lower case, single spaces).';
comment on column memsub.knowledge_facts.object is 'Object as first asserted (any JSON value).';
comment on column memsub.knowledge_facts.confidence is 'Combined confidence in [0, 1]: 1 - product of (1 - each assertion''s confidence).';
comment on column memsub.knowledge_facts.source_packet is 'Packet of the first assertion (NULL when asserted directly or purged).';
comment on column memsub.knowledge_facts.subject_normalized is 'Subject trimmed, lower case, single spaces: the matching key.';
comment on column memsub.knowledge_facts.object_normalized is 'Object normalized the same way (strings) or as canonical JSON text (other values).';
comment on column memsub.knowledge_facts.supporting_packet_count is 'Number of assertions supporting the fact.';
comment on column memsub.knowledge_facts.contradiction_count is 'Times another object was asserted for the same subject and predicate.';
comment on column memsub.knowledge_facts.access_count is 'Retrieval counter (memsub.record_access).';
comment on column memsub.knowledge_facts.last_accessed is 'Last retrieval time.';
comment on column memsub.knowledge_facts.created_at is 'First assertion time.';
comment on column memsub.knowledge_facts.updated_at is 'Last assertion or contradiction time.';
comment on column memsub.knowledge_facts.tenant_id is 'Tenant isolation.';
comment on column memsub.knowledge_facts.org_id is 'Organization of the first asserter (facts are tenant-wide).';
comment on column memsub.knowledge_facts.user_id is 'User of the first asserter.';
comment on column memsub.knowledge_facts.correlation_id is 'Request correlation identifier (from the source packet).';
comment on column memsub.knowledge_facts.session_id is 'Session of the first asserter.';
comment on column memsub.knowledge_facts.trace_id is 'Distributed tracing identifier (from the source packet).';

-- Semantic layer -------------------------------------------------------------------------------------------------

create table memsub.semantic_memory (
    embedding_id     uuid             not null default gen_random_uuid(),
    agent_id         text             not null,
    vector           vector           not null,
    payload          jsonb            not null default '{}',
    importance_score double precision not null default 0.5,
    access_count     integer          not null default 0,
    last_accessed    timestamptz,
    embedding_type   text             not null default 'content',
    scope            text             not null default 'shared',
    created_at       timestamptz      not null default now(),
    tenant_id        uuid             not null,
    org_id           uuid,
    user_id          uuid,
    correlation_id   uuid,
    session_id       text,
    trace_id         text,
    constraint semantic_memory_pkey primary key (tenant_id, embedding_id),
    constraint semantic_memory_embedding_type_known
        check (embedding_type in ('content', 'context', 'entity', 'summary')),
    constraint semantic_memory_scope_known check (scope in ('shared', 'cursor', 'l-private')),
    constraint semantic_memory_importance_in_unit_range check (importance_score between 0 and 1),
    constraint semantic_memory_access_count_non_negative check (access_count >= 0)
);
create index idx_semantic_memory_agent on memsub.semantic_memory (tenant_id, agent_id);

comment on table memsub.semantic_memory is 'Legacy vector store: one embedding per agent memory, with its payload and scope.';
comment on column memsub.semantic_memory.embedding_id is 'Unique embedding identifier.';
comment on column memsub.semantic_memory.agent_id is 'Owning agent.';
comment on column memsub.semantic_memory.vector is 'Embedding (dimension: installation_settings.vector_dimension, 1536 by default).';
comment on column memsub.semantic_memory.payload is 'Source content metadata.';
comment on column memsub.semantic_memory.importance_score is 'Learned importance in [0, 1].';
comment on column memsub.semantic_memory.access_count is 'Retrieval counter.';
comment on column memsub.semantic_memory.last_accessed is 'Last retrieval time.';
comment on column memsub.semantic_memory.embedding_type is 'content, context, entity or summary.';
comment on column memsub.semantic_memory.scope is 'Memory isolation scope: shared, cursor or l-private (as packet_store.scope).';
comment on column memsub.semantic_memory.created_at is 'When the embedding was stored.';
comment on column memsub.semantic_memory.tenant_id is 'Tenant isolation.';
comment on column memsub.semantic_memory.org_id is 'Organization of the writer (NULL: whole tenant).';
comment on column memsub.semantic_memory.user_id is 'User of the writer; cursor and l-private rows are visible to this user.';
comment on column memsub.semantic_memory.correlation_id is 'Request correlation identifier.';
comment on column memsub.semantic_memory.session_id is 'Session of the writer; cursor rows are visible to this session.';
comment on column memsub.semantic_memory.trace_id is 'Distributed tracing identifier.';

create table memsub.memory_embeddings (
    embedding_id   uuid        not null default gen_random_uuid(),
    packet_id      uuid        not null,
    embedding_type text        not null,
    vector         vector      not null,
    chunk_index    integer     not null default 0,
    chunk_text     text,
    metadata       jsonb       not null default '{}',
    scope          text        not null default 'shared',
    created_at     timestamptz not null default now(),
    tenant_id      uuid        not null,
    org_id         uuid,
    user_id        uuid,
    correlation_id uuid,
    session_id     text,
    trace_id       text,
    constraint memory_embeddings_pkey primary key (tenant_id, embedding_id),
    constraint memory_embeddings_chunk_key unique (tenant_id, packet_id, embedding_type, chunk_index),
    constraint memory_embeddings_packet_fkey foreign key (tenant_id, packet_id)
        references memsub.packet_store (tenant_id, packet_id) on delete cascade,
    constraint memory_embeddings_embedding_type_known
        check (embedding_type in ('content', 'context', 'entity', 'summary', 'reasoning')),
    constraint memory_embeddings_chunk_index_non_negative check (chunk_index >= 0),
    constraint memory_embeddings_scope_known check (scope in ('shared', 'cursor', 'l-private'))
);

comment on table memsub.memory_embeddings is
    'Multi-space vectors of packets: one per (packet, embedding_type, chunk). Deleted with their packet.';
comment on column memsub.memory_embeddings.embedding_id is 'Unique embedding identifier.';
comment on column memsub.memory_embeddings.packet_id is 'Source packet.';
comment on column memsub.memory_embeddings.embedding_type is 'Vector space: content, context, entity, summary or reasoning.';
comment on column memsub.memory_embeddings.vector is 'Embedding (dimension: installation_settings.vector_dimension, 1536 by default).';
comment on column memsub.memory_embeddings.chunk_index is '0 = the full content, 1+ = chunk number.';
comment on column memsub.memory_embeddings.chunk_text is 'Stored chunk text, for debugging.';
comment on column memsub.memory_embeddings.metadata is 'Additional metadata (model, ...).';
comment on column memsub.memory_embeddings.created_at is 'When the embedding was stored.';
comment on column memsub.memory_embeddings.scope is 'Visibility scope, copied from the packet (shared when there is none).';
comment on column memsub.memory_embeddings.tenant_id is 'Tenant isolation.';
comment on column memsub.memory_embeddings.org_id is 'Organization of the writer (NULL: whole tenant).';
comment on column memsub.memory_embeddings.user_id is 'User of the writer.';
comment on column memsub.memory_embeddings.correlation_id is 'Request correlation identifier (from the packet).';
comment on column memsub.memory_embeddings.session_id is 'Session of the writer.';
comment on column memsub.memory_embeddings.trace_id is 'Distributed tracing identifier (from the packet).';

-- Knowledge-graph layer ------------------------------------------------------------------------------------------

create table memsub.entity_relationships (
    relationship_id   uuid             not null default gen_random_uuid(),
    source_entity     text             not null,
    relationship_type text             not null,
    target_entity     text             not null,
    confidence        double precision not null default 0.5,
    source_packet     uuid,
    mention_count     integer          not null default 1,
    first_seen        timestamptz      not null default now(),
    last_seen         timestamptz      not null default now(),
    tenant_id         uuid             not null,
    org_id            uuid,
    user_id           uuid,
    correlation_id    uuid,
    session_id        text,
    trace_id          text,
    constraint entity_relationships_pkey primary key (tenant_id, relationship_id),
    constraint entity_relationships_source_packet_fkey foreign key (tenant_id, source_packet)
        references memsub.packet_store (tenant_id, packet_id) on delete set null (source_packet),
    constraint entity_relationships_confidence_in_unit_range check (confidence between 0 and 1),
    constraint entity_relationships_mention_count_positive check (mention_count >= 1),
    constraint entity_relationships_seen_in_order check (last_seen >= first_seen),
    constraint entity_relationships_names_not_blank
        check (length(source_entity) > 0 and length(relationship_type) > 0 and length(target_entity) > 0)
);
-- The seed's unique index: the key of the relationship UPSERT.
create unique index idx_entity_relationships_edge
    on memsub.entity_relationships (tenant_id, source_entity, relationship_type, target_entity);
create index idx_entity_relationships_target on memsub.entity_relationships (tenant_id, target_entity);
create index idx_entity_relationships_source_packet on memsub.entity_relationships (tenant_id, source_packet)
    where source_packet is not null;

comment on table memsub.entity_relationships is
    'Knowledge-graph edges, tenant-wide: one row per (source, type, target), reinforced by memsub.upsert_relationship.';
comment on column memsub.entity_relationships.relationship_id is 'Unique relationship identifier.';
comment on column memsub.entity_relationships.source_entity is 'Source entity name (trimmed, single spaces).';
comment on column memsub.entity_relationships.relationship_type is 'Relationship type, a verb (trimmed, lower case, single spaces).';
comment on column memsub.entity_relationships.target_entity is 'Target entity name (trimmed, single spaces).';
comment on column memsub.entity_relationships.confidence is 'Combined confidence in [0, 1]: 1 - product of (1 - each observation''s confidence).';
comment on column memsub.entity_relationships.source_packet is 'Packet of the first observation (NULL when given directly or purged).';
comment on column memsub.entity_relationships.mention_count is 'Times the relationship was observed.';
comment on column memsub.entity_relationships.first_seen is 'First observation.';
comment on column memsub.entity_relationships.last_seen is 'Most recent observation.';
comment on column memsub.entity_relationships.tenant_id is 'Tenant isolation.';
comment on column memsub.entity_relationships.org_id is 'Organization of the first observer (edges are tenant-wide).';
comment on column memsub.entity_relationships.user_id is 'User of the first observer.';
comment on column memsub.entity_relationships.correlation_id is 'Request correlation identifier (from the source packet).';
comment on column memsub.entity_relationships.session_id is 'Session of the first observer.';
comment on column memsub.entity_relationships.trace_id is 'Distributed tracing identifier (from the source packet).';

-- World-model layer ----------------------------------------------------------------------------------------------
-- Timestamps here are TIMESTAMP WITHOUT TIME ZONE in UTC, as the seed's "TS" says.

create table memsub.world_model_state (
    tenant_id     uuid      not null,
    state_version integer   not null default 0,
    updated_at    timestamp not null default (now() at time zone 'UTC'),
    org_id        uuid,
    user_id       uuid,
    constraint world_model_state_pkey primary key (tenant_id),
    constraint world_model_state_version_non_negative check (state_version >= 0)
);
comment on table memsub.world_model_state is
    'Current world-model state version per tenant; its row is the lock that serializes world-model updates.';
comment on column memsub.world_model_state.tenant_id is 'Tenant isolation.';
comment on column memsub.world_model_state.state_version is 'Version of the tenant''s world model: +1 per applied update.';
comment on column memsub.world_model_state.updated_at is 'Time of the last applied update (UTC).';
comment on column memsub.world_model_state.org_id is 'Organization of the last updater.';
comment on column memsub.world_model_state.user_id is 'User of the last updater.';

create table memsub.world_model_entities (
    entity_id     text             not null,
    entity_type   text             not null,
    attributes    jsonb            not null default '{}',
    confidence    double precision not null default 0.5,
    version       integer          not null default 1,
    created_at    timestamp        not null default (now() at time zone 'UTC'),
    updated_at    timestamp        not null default (now() at time zone 'UTC'),
    state_version integer          not null,
    tenant_id     uuid             not null,
    org_id        uuid,
    user_id       uuid,
    constraint world_model_entities_pkey primary key (tenant_id, entity_id),
    constraint world_model_entities_attributes_is_object check (jsonb_typeof(attributes) = 'object'),
    constraint world_model_entities_confidence_in_unit_range check (confidence between 0 and 1),
    constraint world_model_entities_version_positive check (version >= 1),
    constraint world_model_entities_id_not_blank check (length(btrim(entity_id)) > 0)
);
comment on table memsub.world_model_entities is 'World-model entities of a tenant, versioned: each applied update bumps the entities it touches.';
comment on column memsub.world_model_entities.entity_id is 'Entity identifier (a name).';
comment on column memsub.world_model_entities.entity_type is 'Entity type (Person, Organization, Concept, ...).';
comment on column memsub.world_model_entities.attributes is 'Entity attributes; updates merge into them (a JSON null removes a key).';
comment on column memsub.world_model_entities.confidence is 'Confidence in [0, 1].';
comment on column memsub.world_model_entities.version is 'Entity version: 1 when created, +1 per update touching it.';
comment on column memsub.world_model_entities.created_at is 'Creation time (UTC).';
comment on column memsub.world_model_entities.updated_at is 'Last update time (UTC).';
comment on column memsub.world_model_entities.state_version is 'World-model state version that last changed the entity.';
comment on column memsub.world_model_entities.tenant_id is 'Tenant isolation.';
comment on column memsub.world_model_entities.org_id is 'Organization of the last updater (entities are tenant-wide).';
comment on column memsub.world_model_entities.user_id is 'User of the last updater.';

create table memsub.world_model_updates (
    update_id            uuid             not null default gen_random_uuid(),
    insight_id           uuid,
    insight_type         text             not null,
    entities             jsonb            not null,
    content              jsonb            not null default '{}',
    confidence           double precision not null default 0.5,
    applied_at           timestamp        not null default (now() at time zone 'UTC'),
    state_version_before integer          not null,
    state_version_after  integer          not null,
    tenant_id            uuid             not null,
    org_id               uuid,
    user_id              uuid,
    constraint world_model_updates_pkey primary key (tenant_id, update_id),
    constraint world_model_updates_version_key unique (tenant_id, state_version_after),
    constraint world_model_updates_versions_step check (state_version_after = state_version_before + 1),
    constraint world_model_updates_entities_is_array check (jsonb_typeof(entities) = 'array'),
    constraint world_model_updates_confidence_in_unit_range check (confidence between 0 and 1)
);
comment on table memsub.world_model_updates is 'Applied insight updates of the world model, one per state version.';
comment on column memsub.world_model_updates.update_id is 'Unique update identifier.';
comment on column memsub.world_model_updates.insight_id is 'Insight the update came from (e.g. an insight packet).';
comment on column memsub.world_model_updates.insight_type is 'Kind of insight.';
comment on column memsub.world_model_updates.entities is 'Entity changes applied: [{entity_id, entity_type, attributes, confidence}].';
comment on column memsub.world_model_updates.content is 'Insight content.';
comment on column memsub.world_model_updates.confidence is 'Confidence of the insight in [0, 1].';
comment on column memsub.world_model_updates.applied_at is 'When the update was applied (UTC).';
comment on column memsub.world_model_updates.state_version_before is 'State version before the update.';
comment on column memsub.world_model_updates.state_version_after is 'State version after the update (before + 1).';
comment on column memsub.world_model_updates.tenant_id is 'Tenant isolation.';
comment on column memsub.world_model_updates.org_id is 'Organization of the updater.';
comment on column memsub.world_model_updates.user_id is 'User of the updater.';

create table memsub.world_model_snapshots (
    snapshot_id    uuid      not null default gen_random_uuid(),
    snapshot       jsonb     not null,
    state_version  integer   not null,
    entity_count   integer   not null,
    relation_count integer   not null,
    description    text,
    created_by     text,
    created_at     timestamp not null default (now() at time zone 'UTC'),
    tenant_id      uuid      not null,
    org_id         uuid,
    user_id        uuid,
    constraint world_model_snapshots_pkey primary key (tenant_id, snapshot_id),
    constraint world_model_snapshots_snapshot_is_object check (jsonb_typeof(snapshot) = 'object')
);
create index idx_world_model_snapshots_version on memsub.world_model_snapshots (tenant_id, state_version desc);
comment on table memsub.world_model_snapshots is 'Full world-model states of a tenant at a state version.';
comment on column memsub.world_model_snapshots.snapshot_id is 'Unique snapshot identifier.';
comment on column memsub.world_model_snapshots.snapshot is
    'Full state: {"state_version", "entities": {id: {entity_type, attributes, confidence, version}}, "relations": [...]}.';
comment on column memsub.world_model_snapshots.state_version is 'State version captured.';
comment on column memsub.world_model_snapshots.entity_count is 'Number of entities captured.';
comment on column memsub.world_model_snapshots.relation_count is 'Number of knowledge-graph relations captured.';
comment on column memsub.world_model_snapshots.description is 'Why the snapshot was taken.';
comment on column memsub.world_model_snapshots.created_by is 'Who took it (agent or operator).';
comment on column memsub.world_model_snapshots.created_at is 'When it was taken (UTC).';
comment on column memsub.world_model_snapshots.tenant_id is 'Tenant isolation.';
comment on column memsub.world_model_snapshots.org_id is 'Organization of the taker.';
comment on column memsub.world_model_snapshots.user_id is 'User of the taker.';

-- Reflection layer -----------------------------------------------------------------------------------------------

create table memsub.reflection_store (
    reflection_id   uuid             not null default gen_random_uuid(),
    task_id         text,
    reflection_type text             not null,
    content         text             not null,
    context         text,
    entities        text[]           not null default '{}',
    tags            text[]           not null default '{}',
    confidence      double precision not null default 0.5,
    priority        text             not null default 'medium',
    source_agent    text,
    source_packet   uuid,
    access_count    integer          not null default 0,
    last_accessed   timestamptz,
    vector          vector,
    expires_at      timestamptz,
    created_at      timestamptz      not null default now(),
    tenant_id       uuid             not null,
    org_id          uuid,
    user_id         uuid,
    correlation_id  uuid,
    session_id      text,
    trace_id        text,
    constraint reflection_store_pkey primary key (tenant_id, reflection_id),
    constraint reflection_store_source_packet_fkey foreign key (tenant_id, source_packet)
        references memsub.packet_store (tenant_id, packet_id) on delete set null (source_packet),
    constraint reflection_store_type_known check (reflection_type in
        ('lesson', 'pattern', 'failure', 'success', 'insight', 'improvement', 'false_constraint')),
    constraint reflection_store_priority_known check (priority in ('critical', 'high', 'medium', 'low')),
    constraint reflection_store_confidence_in_unit_range check (confidence between 0 and 1),
    constraint reflection_store_access_count_non_negative check (access_count >= 0)
);
create index idx_reflection_store_type on memsub.reflection_store (tenant_id, reflection_type, created_at desc);
create index idx_reflection_store_task on memsub.reflection_store (tenant_id, task_id) where task_id is not null;
create index idx_reflection_store_source_packet on memsub.reflection_store (tenant_id, source_packet)
    where source_packet is not null;

comment on table memsub.reflection_store is 'Lessons learned: typed, prioritized reflections with an optional embedding and expiry.';
comment on column memsub.reflection_store.reflection_id is 'Unique reflection identifier.';
comment on column memsub.reflection_store.task_id is 'Associated task (task_reflections.task_id), if any.';
comment on column memsub.reflection_store.reflection_type is 'lesson, pattern, failure, success, insight, improvement or false_constraint.';
comment on column memsub.reflection_store.content is 'Reflection content.';
comment on column memsub.reflection_store.context is 'When and where it was learned.';
comment on column memsub.reflection_store.entities is 'Related entities.';
comment on column memsub.reflection_store.tags is 'Categorization tags.';
comment on column memsub.reflection_store.confidence is 'Confidence in the lesson, in [0, 1].';
comment on column memsub.reflection_store.priority is 'critical, high, medium or low.';
comment on column memsub.reflection_store.source_agent is 'Agent that learned it.';
comment on column memsub.reflection_store.source_packet is 'Originating packet (NULL once purged).';
comment on column memsub.reflection_store.access_count is 'Times accessed.';
comment on column memsub.reflection_store.last_accessed is 'Last access time.';
comment on column memsub.reflection_store.vector is 'Semantic search embedding (dimension: installation_settings.vector_dimension).';
comment on column memsub.reflection_store.expires_at is 'Optional expiration; expired reflections leave mv_reflection_patterns.';
comment on column memsub.reflection_store.created_at is 'When it was recorded.';
comment on column memsub.reflection_store.tenant_id is 'Tenant isolation.';
comment on column memsub.reflection_store.org_id is 'Organization of the writer (NULL: whole tenant).';
comment on column memsub.reflection_store.user_id is 'User of the writer.';
comment on column memsub.reflection_store.correlation_id is 'Request correlation identifier.';
comment on column memsub.reflection_store.session_id is 'Session of the writer.';
comment on column memsub.reflection_store.trace_id is 'Distributed tracing identifier.';

create table memsub.task_reflections (
    id                uuid             not null default gen_random_uuid(),
    task_id           text             not null,
    task_description  text,
    outcome           text             not null default 'unknown',
    what_worked       text[]           not null default '{}',
    what_failed       text[]           not null default '{}',
    false_constraints text[]           not null default '{}',
    helpful_patterns  text[]           not null default '{}',
    lessons           text[]           not null default '{}',
    recommendations   text[]           not null default '{}',
    related_decisions uuid[]           not null default '{}',
    execution_time_ms double precision,
    metrics_improved  jsonb            not null default '{}',
    metrics_degraded  jsonb            not null default '{}',
    created_at        timestamptz      not null default now(),
    updated_at        timestamptz      not null default now(),
    tenant_id         uuid             not null,
    org_id            uuid,
    user_id           uuid,
    correlation_id    uuid,
    session_id        text,
    trace_id          text,
    constraint task_reflections_pkey primary key (tenant_id, id),
    constraint task_reflections_task_key unique (tenant_id, task_id),
    constraint task_reflections_outcome_known check (outcome in ('success', 'partial', 'failure', 'unknown')),
    constraint task_reflections_execution_time_non_negative check (execution_time_ms >= 0),
    constraint task_reflections_task_not_blank check (length(btrim(task_id)) > 0)
);
comment on table memsub.task_reflections is 'Per-task learning: one row per task of a tenant (the latest reflection replaces the previous).';
comment on column memsub.task_reflections.id is 'Primary key.';
comment on column memsub.task_reflections.task_id is 'Task identifier, unique per tenant.';
comment on column memsub.task_reflections.task_description is 'What the task was.';
comment on column memsub.task_reflections.outcome is 'success, partial, failure or unknown.';
comment on column memsub.task_reflections.what_worked is 'Successful approaches.';
comment on column memsub.task_reflections.what_failed is 'Failed approaches.';
comment on column memsub.task_reflections.false_constraints is 'Unnecessary constraints found.';
comment on column memsub.task_reflections.helpful_patterns is 'Patterns that helped.';
comment on column memsub.task_reflections.lessons is 'Lessons learned.';
comment on column memsub.task_reflections.recommendations is 'Future recommendations.';
comment on column memsub.task_reflections.related_decisions is 'Links to decision packets.';
comment on column memsub.task_reflections.execution_time_ms is 'How long the task took, in milliseconds.';
comment on column memsub.task_reflections.metrics_improved is 'Metrics that got better.';
comment on column memsub.task_reflections.metrics_degraded is 'Metrics that got worse.';
comment on column memsub.task_reflections.created_at is 'First reflection time.';
comment on column memsub.task_reflections.updated_at is 'Last reflection time.';
comment on column memsub.task_reflections.tenant_id is 'Tenant isolation.';
comment on column memsub.task_reflections.org_id is 'Organization of the writer (NULL: whole tenant).';
comment on column memsub.task_reflections.user_id is 'User of the writer.';
comment on column memsub.task_reflections.correlation_id is 'Request correlation identifier.';
comment on column memsub.task_reflections.session_id is 'Session of the writer.';
comment on column memsub.task_reflections.trace_id is 'Distributed tracing identifier.';

-- Intelligence layer ---------------------------------------------------------------------------------------------

create table memsub.memory_summaries (
    summary_id        uuid             not null default gen_random_uuid(),
    scope_type        text             not null,
    scope_value       text             not null,
    summary_text      text             not null,
    key_facts         jsonb            not null default '[]',
    key_entities      text[]           not null default '{}',
    key_decisions     text[]           not null default '{}',
    source_packet_ids uuid[]           not null default '{}',
    packet_count      integer          not null default 0,
    vector            vector,
    confidence        double precision not null default 0.5,
    coverage_start    timestamptz,
    coverage_end      timestamptz,
    valid_until       timestamptz,
    created_at        timestamptz      not null default now(),
    tenant_id         uuid             not null,
    org_id            uuid,
    user_id           uuid,
    correlation_id    uuid,
    session_id        text,
    trace_id          text,
    constraint memory_summaries_pkey primary key (tenant_id, summary_id),
    constraint memory_summaries_scope_type_known
        check (scope_type in ('thread', 'agent', 'topic', 'time_period', 'project', 'task')),
    constraint memory_summaries_key_facts_is_array check (jsonb_typeof(key_facts) = 'array'),
    constraint memory_summaries_packet_count_matches check (packet_count = cardinality(source_packet_ids)),
    constraint memory_summaries_confidence_in_unit_range check (confidence between 0 and 1),
    constraint memory_summaries_coverage_in_order check (coverage_end >= coverage_start)
);
create index idx_memory_summaries_scope on memsub.memory_summaries (tenant_id, scope_type, scope_value, created_at desc);
create index idx_memory_summaries_valid_until on memsub.memory_summaries (tenant_id, valid_until)
    where valid_until is not null;

comment on table memsub.memory_summaries is 'Consolidated memories: a summary over a set of packets of one scope, valid until regenerated.';
comment on column memsub.memory_summaries.summary_id is 'Unique summary identifier.';
comment on column memsub.memory_summaries.scope_type is 'thread, agent, topic, time_period, project or task.';
comment on column memsub.memory_summaries.scope_value is 'Identifier or name of the scope.';
comment on column memsub.memory_summaries.summary_text is 'Natural-language summary.';
comment on column memsub.memory_summaries.key_facts is 'Important facts, a JSON array.';
comment on column memsub.memory_summaries.key_entities is 'Mentioned entities.';
comment on column memsub.memory_summaries.key_decisions is 'Decision points.';
comment on column memsub.memory_summaries.source_packet_ids is 'Summarized packets (distinct).';
comment on column memsub.memory_summaries.packet_count is 'How many packets were summarized.';
comment on column memsub.memory_summaries.vector is 'Summary embedding (dimension: installation_settings.vector_dimension).';
comment on column memsub.memory_summaries.confidence is 'Summary confidence in [0, 1].';
comment on column memsub.memory_summaries.coverage_start is 'Earliest timestamp of the summarized packets.';
comment on column memsub.memory_summaries.coverage_end is 'Latest timestamp of the summarized packets.';
comment on column memsub.memory_summaries.valid_until is 'When to regenerate (NULL: never due by time).';
comment on column memsub.memory_summaries.created_at is 'When the summary was recorded.';
comment on column memsub.memory_summaries.tenant_id is 'Tenant isolation.';
comment on column memsub.memory_summaries.org_id is 'Organization of the writer (NULL: whole tenant).';
comment on column memsub.memory_summaries.user_id is 'User of the writer.';
comment on column memsub.memory_summaries.correlation_id is 'Request correlation identifier.';
comment on column memsub.memory_summaries.session_id is 'Session of the writer.';
comment on column memsub.memory_summaries.trace_id is 'Distributed tracing identifier.';

-- Operations layer -----------------------------------------------------------------------------------------------
-- (tasks is created by its own migration; the access log refers to its targets by id only.)

create table memsub.memory_access_log (
    access_id       uuid             not null default gen_random_uuid(),
    target_type     text             not null,
    target_id       uuid             not null,
    agent_id        text,
    access_context  text,
    query_text      text,
    relevance_score double precision,
    was_useful      boolean,
    feedback_reason text,
    accessed_at     timestamptz      not null default now(),
    tenant_id       uuid             not null,
    org_id          uuid,
    user_id         uuid,
    correlation_id  uuid,
    session_id      text,
    trace_id        text,
    constraint memory_access_log_pkey primary key (tenant_id, access_id),
    constraint memory_access_log_target_type_known
        check (target_type in ('packet', 'embedding', 'fact', 'reflection'))
);
create index idx_memory_access_log_target on memsub.memory_access_log (tenant_id, target_type, target_id, accessed_at desc);
create index idx_memory_access_log_time on memsub.memory_access_log (tenant_id, accessed_at desc);

comment on table memsub.memory_access_log is 'Every retrieval of a memory and its feedback: the input of importance learning.';
comment on column memsub.memory_access_log.access_id is 'Unique access identifier.';
comment on column memsub.memory_access_log.target_type is 'packet, embedding, fact or reflection.';
comment on column memsub.memory_access_log.target_id is 'Identifier of the accessed row (packet_id, embedding_id, fact_id, reflection_id).';
comment on column memsub.memory_access_log.agent_id is 'Agent that accessed it.';
comment on column memsub.memory_access_log.access_context is 'Why it was accessed (retrieval pipeline stage, tool, ...).';
comment on column memsub.memory_access_log.query_text is 'Query that retrieved it.';
comment on column memsub.memory_access_log.relevance_score is 'Relevance score given by the retriever.';
comment on column memsub.memory_access_log.was_useful is 'Feedback: whether it helped (NULL: no feedback).';
comment on column memsub.memory_access_log.feedback_reason is 'Feedback explanation.';
comment on column memsub.memory_access_log.accessed_at is 'Access time.';
comment on column memsub.memory_access_log.tenant_id is 'Tenant isolation.';
comment on column memsub.memory_access_log.org_id is 'Organization of the accessor (NULL: whole tenant).';
comment on column memsub.memory_access_log.user_id is 'User of the accessor.';
comment on column memsub.memory_access_log.correlation_id is 'Request correlation identifier.';
comment on column memsub.memory_access_log.session_id is 'Session of the accessor.';
comment on column memsub.memory_access_log.trace_id is 'Distributed tracing identifier.';

-- Vector columns get the installation's dimension, then their HNSW indexes (cosine distance). memory_embeddings
-- has one partial index per embedding_type, so a query for one space searches only that space's graph.
do $vectors$
declare
    dimension integer := (select value::integer from memsub.installation_settings where name = 'vector_dimension');
    target    record;
    space     text;
begin
    for target in select * from (values ('semantic_memory'), ('memory_embeddings'), ('reflection_store'),
                                        ('memory_summaries')) as t(table_name) loop
        execute format('alter table memsub.%I alter column vector type vector(%s)', target.table_name, dimension);
    end loop;
    foreach space in array array['content', 'context', 'entity', 'summary', 'reasoning'] loop
        execute format('create index %I on memsub.memory_embeddings using hnsw (vector vector_cosine_ops) '
                       'where embedding_type = %L', 'idx_embeddings_vector_' || space, space);
        execute format('comment on index memsub.%I is %L', 'idx_embeddings_vector_' || space,
                       format('HNSW (cosine) over the %s embeddings only.', space));
    end loop;
    create index idx_semantic_memory_vector on memsub.semantic_memory using hnsw (vector vector_cosine_ops);
    create index idx_reflection_store_vector on memsub.reflection_store using hnsw (vector vector_cosine_ops);
    create index idx_memory_summaries_vector on memsub.memory_summaries using hnsw (vector vector_cosine_ops);
end
$vectors$;

-- Materialized views ---------------------------------------------------------------------------------------------
-- They are computed without row-level security (their owner, memsub_view_owner, bypasses it), so each carries
-- tenant_id (and, where rows are org-scoped, org_id) ahead of the seed's columns. Tenant-facing roles read them
-- only through the tenant_* security-barrier views (sql/180_materialized_views.sql).

do $view_owner$
begin
    if not exists (select from pg_catalog.pg_roles where rolname = 'memsub_view_owner') then
        begin
            create role memsub_view_owner nologin bypassrls;
        exception when duplicate_object or unique_violation then
            null;  -- created concurrently by a migrator working on another database of this cluster
        end;
    end if;
end
$view_owner$;
comment on role memsub_view_owner is
    'memsub: owns the materialized views and refreshes them; bypasses row-level security to aggregate every tenant. '
    'Cannot log in; grant it to nobody.';

create materialized view memsub.mv_agent_recent_important as
select p.tenant_id,
       p.org_id,
       p.user_id,
       p.session_id,
       p.routing ->> 'agent' as agent_id,
       p.packet_id,
       p.packet_type,
       p."timestamp",
       p.importance_score,
       p.access_count,
       p.tags,
       p.scope,
       round((0.6 * p.importance_score
              + 0.2 * least(1.0, ln(1 + p.access_count) / ln(101))
              + 0.2 * greatest(0.0, 1.0 - extract(epoch from now() - p."timestamp") / (30 * 86400)))::numeric,
             6)::double precision as combined_score
  from memsub.packet_store p
 where p."timestamp" >= now() - interval '30 days'
   and p.importance_score >= 0.7
   and p.routing ->> 'agent' is not null
with no data;
create unique index mv_agent_recent_important_key on memsub.mv_agent_recent_important (tenant_id, packet_id);
create index mv_agent_recent_important_agent
    on memsub.mv_agent_recent_important (tenant_id, agent_id, combined_score desc);
comment on materialized view memsub.mv_agent_recent_important is
    'Recent (30 days) high-importance (>= 0.7) packets per agent (routing.agent) with a combined score: '
    '0.6 importance + 0.2 access (log scale, saturating at 100) + 0.2 recency. Tenant roles: memsub.tenant_agent_recent_important.';

create materialized view memsub.mv_entity_graph as
select r.tenant_id,
       lower(r.source_entity) as source_entity,
       r.relationship_type,
       lower(r.target_entity) as target_entity,
       sum(r.mention_count)::bigint as total_mentions,
       max(r.confidence) as max_confidence,
       avg(r.confidence) as avg_confidence,
       max(r.last_seen) as last_seen,
       count(*)::bigint as relationship_count
  from memsub.entity_relationships r
 group by r.tenant_id, lower(r.source_entity), r.relationship_type, lower(r.target_entity)
with no data;
create unique index mv_entity_graph_key
    on memsub.mv_entity_graph (tenant_id, source_entity, relationship_type, target_entity);
comment on materialized view memsub.mv_entity_graph is
    'Entity relationships aggregated per tenant over case-insensitive entity names (relationship_count: edges merged). '
    'Tenant roles: memsub.tenant_entity_graph.';

create materialized view memsub.mv_high_confidence_facts as
select f.tenant_id,
       f.fact_id,
       f.subject,
       f.subject_normalized,
       f.predicate,
       f.object,
       f.confidence,
       f.supporting_packet_count,
       f.access_count,
       round((0.6 * f.confidence
              + 0.25 * least(1.0, ln(1 + f.supporting_packet_count) / ln(11))
              + 0.15 * least(1.0, ln(1 + f.access_count) / ln(101)))::numeric, 6)::double precision
           as combined_score
  from memsub.knowledge_facts f
 where f.confidence >= 0.6
   and f.contradiction_count < 3
with no data;
create unique index mv_high_confidence_facts_key on memsub.mv_high_confidence_facts (tenant_id, fact_id);
create index mv_high_confidence_facts_subject
    on memsub.mv_high_confidence_facts (tenant_id, subject_normalized, predicate);
comment on materialized view memsub.mv_high_confidence_facts is
    'Facts with confidence >= 0.6 and fewer than 3 contradictions, with a combined score: 0.6 confidence '
    '+ 0.25 support (log scale, saturating at 10) + 0.15 access (saturating at 100). Tenant roles: memsub.tenant_high_confidence_facts.';

create materialized view memsub.mv_reflection_patterns as
with live as (
    select r.* from memsub.reflection_store r where r.expires_at is null or r.expires_at > now()
), stats as (
    select l.tenant_id, l.org_id, l.reflection_type, count(*)::bigint as count,
           avg(l.confidence) as avg_confidence, max(l.created_at) as latest
      from live l
     group by l.tenant_id, l.org_id, l.reflection_type
), tag_sets as (
    select l.tenant_id, l.org_id, l.reflection_type, array_agg(distinct t.tag order by t.tag) as all_tags
      from live l cross join lateral unnest(l.tags) as t(tag)
     group by l.tenant_id, l.org_id, l.reflection_type
)
select s.tenant_id,
       s.org_id,
       s.reflection_type,
       s.count,
       s.avg_confidence,
       coalesce(t.all_tags, '{}') as all_tags,
       s.latest
  from stats s
  left join tag_sets t on t.tenant_id = s.tenant_id and t.org_id is not distinct from s.org_id
                      and t.reflection_type = s.reflection_type
with no data;
create unique index mv_reflection_patterns_key
    on memsub.mv_reflection_patterns (tenant_id, org_id, reflection_type) nulls not distinct;
comment on materialized view memsub.mv_reflection_patterns is
    'Unexpired reflections per tenant, organization and type: count, average confidence, all tags, latest. '
    'Tenant roles: memsub.tenant_reflection_patterns.';

alter materialized view memsub.mv_agent_recent_important owner to memsub_view_owner;
alter materialized view memsub.mv_entity_graph owner to memsub_view_owner;
alter materialized view memsub.mv_high_confidence_facts owner to memsub_view_owner;
alter materialized view memsub.mv_reflection_patterns owner to memsub_view_owner;

create table memsub.memory_view_refresh_log (
    refresh_id   uuid             not null default gen_random_uuid(),
    run_id       uuid             not null,
    view_name    text             not null,
    method       text             not null,
    status       text             not null,
    started_at   timestamptz      not null,
    finished_at  timestamptz      not null,
    duration_ms  double precision not null,
    row_count    bigint,
    error        text,
    refreshed_by text             not null default session_user,
    constraint memory_view_refresh_log_pkey primary key (refresh_id),
    constraint memory_view_refresh_log_method_known check (method in ('concurrently', 'full', 'none')),
    constraint memory_view_refresh_log_status_known check (status in ('ok', 'error', 'skipped'))
);
create index idx_memory_view_refresh_log_view on memsub.memory_view_refresh_log (view_name, started_at desc);
comment on table memsub.memory_view_refresh_log is
    'What memsub.refresh_memory_views() did: one row per view per run (installation-wide, not tenant data).';
comment on column memsub.memory_view_refresh_log.refresh_id is 'Row identifier.';
comment on column memsub.memory_view_refresh_log.run_id is 'One refresh_memory_views() call.';
comment on column memsub.memory_view_refresh_log.view_name is 'Materialized view refreshed (or "*" for a skipped run).';
comment on column memsub.memory_view_refresh_log.method is 'concurrently (populated view), full (first population) or none (skipped).';
comment on column memsub.memory_view_refresh_log.status is 'ok, error, or skipped (another refresh held the lock).';
comment on column memsub.memory_view_refresh_log.started_at is 'Start of the refresh.';
comment on column memsub.memory_view_refresh_log.finished_at is 'End of the refresh.';
comment on column memsub.memory_view_refresh_log.duration_ms is 'How long it took, in milliseconds.';
comment on column memsub.memory_view_refresh_log.row_count is 'Rows in the view after the refresh.';
comment on column memsub.memory_view_refresh_log.error is 'Error message when status is error.';
comment on column memsub.memory_view_refresh_log.refreshed_by is 'Session role that ran the refresh.';
