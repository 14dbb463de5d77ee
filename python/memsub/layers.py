"""Typed client calls for the L9 layers: core, semantic, knowledge graph, world model, reflection, intelligence,
operations and the tenant-filtered materialized views.

``LayersMixin`` is mixed into :class:`memsub.client.TenantSession`; every method calls one stored function and
decodes its rows by column name::

    with substrate.tenant(tenant_id) as memory:
        fact = memory.assert_fact("L9", "uses", "Neo4j", confidence=0.8)
        edge = memory.upsert_relationship("L9", "uses", "Neo4j")
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, TypeVar
from uuid import UUID

from pydantic import BaseModel

EmbeddingType = Literal["content", "context", "entity", "summary", "reasoning"]
ReflectionType = Literal["lesson", "pattern", "failure", "success", "insight", "improvement", "false_constraint"]
Priority = Literal["critical", "high", "medium", "low"]
Outcome = Literal["success", "partial", "failure", "unknown"]
SummaryScope = Literal["thread", "agent", "topic", "time_period", "project", "task"]
AccessTarget = Literal["packet", "embedding", "fact", "reflection"]
Row = dict[str, Any]
M = TypeVar("M", bound=BaseModel)


def vector_text(values: Sequence[float]) -> str:
    """pgvector's text form of a vector (passed as a parameter and cast with ``::vector``)."""
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


class _TenantRow(BaseModel):
    tenant_id: UUID
    org_id: UUID | None = None
    user_id: UUID | None = None


class AgentEvent(_TenantRow):
    event_id: UUID
    agent_id: str
    timestamp: datetime
    packet_id: UUID | None
    event_type: str
    content: Any
    scope: str


class ReasoningTrace(_TenantRow):
    trace_id: UUID
    agent_id: str | None
    packet_id: UUID | None
    steps: list[Any]
    extracted_features: dict[str, Any]
    inference_steps: list[Any]
    reasoning_tokens: int
    decision_tokens: int
    confidence_scores: dict[str, Any]
    created_at: datetime


class KnowledgeFact(_TenantRow):
    fact_id: UUID
    subject: str
    predicate: str
    object: Any
    confidence: float
    source_packet: UUID | None
    subject_normalized: str
    object_normalized: str
    supporting_packet_count: int
    contradiction_count: int
    access_count: int


class MemoryEmbedding(_TenantRow):
    embedding_id: UUID
    packet_id: UUID
    embedding_type: str
    chunk_index: int
    chunk_text: str | None
    metadata: dict[str, Any]
    scope: str


class EmbeddingMatch(BaseModel):
    embedding_id: UUID
    packet_id: UUID
    embedding_type: str
    chunk_index: int
    chunk_text: str | None
    metadata: dict[str, Any]
    distance: float


class SemanticMemory(_TenantRow):
    embedding_id: UUID
    agent_id: str
    payload: dict[str, Any]
    importance_score: float
    access_count: int
    embedding_type: str
    scope: str


class SemanticMatch(BaseModel):
    embedding_id: UUID
    agent_id: str
    payload: dict[str, Any]
    embedding_type: str
    scope: str
    importance_score: float
    distance: float


class EntityRelationship(_TenantRow):
    relationship_id: UUID
    source_entity: str
    relationship_type: str
    target_entity: str
    confidence: float
    source_packet: UUID | None
    mention_count: int
    first_seen: datetime
    last_seen: datetime


class GraphEdge(BaseModel):
    depth: int
    source_entity: str
    relationship_type: str
    target_entity: str
    confidence: float
    mention_count: int


class WorldModelUpdate(_TenantRow):
    update_id: UUID
    insight_id: UUID | None
    insight_type: str
    entities: list[Any]
    content: dict[str, Any]
    confidence: float
    applied_at: datetime
    state_version_before: int
    state_version_after: int


class WorldModelSnapshot(_TenantRow):
    snapshot_id: UUID
    snapshot: dict[str, Any]
    state_version: int
    entity_count: int
    relation_count: int
    description: str | None
    created_by: str | None
    created_at: datetime


class WorldModelEntity(BaseModel):
    entity_id: str
    entity_type: str
    attributes: dict[str, Any]
    confidence: float
    version: int


class Reflection(_TenantRow):
    reflection_id: UUID
    task_id: str | None
    reflection_type: str
    content: str
    context: str | None
    entities: list[str]
    tags: list[str]
    confidence: float
    priority: str
    source_agent: str | None
    source_packet: UUID | None
    access_count: int
    expires_at: datetime | None


class TaskReflection(_TenantRow):
    id: UUID
    task_id: str
    task_description: str | None
    outcome: str
    what_worked: list[str]
    what_failed: list[str]
    false_constraints: list[str]
    helpful_patterns: list[str]
    lessons: list[str]
    recommendations: list[str]
    related_decisions: list[UUID]
    execution_time_ms: float | None
    metrics_improved: dict[str, Any]
    metrics_degraded: dict[str, Any]


class MemorySummary(_TenantRow):
    summary_id: UUID
    scope_type: str
    scope_value: str
    summary_text: str
    key_facts: list[Any]
    key_entities: list[str]
    key_decisions: list[str]
    source_packet_ids: list[UUID]
    packet_count: int
    confidence: float
    coverage_start: datetime | None
    coverage_end: datetime | None
    valid_until: datetime | None


class AccessLogEntry(_TenantRow):
    access_id: UUID
    target_type: str
    target_id: UUID
    agent_id: str | None
    access_context: str | None
    query_text: str | None
    relevance_score: float | None
    was_useful: bool | None
    feedback_reason: str | None
    accessed_at: datetime


class EntityGraphRow(BaseModel):
    tenant_id: UUID
    source_entity: str
    relationship_type: str
    target_entity: str
    total_mentions: int
    max_confidence: float
    avg_confidence: float
    last_seen: datetime
    relationship_count: int


# Columns of each row model (vectors are never read back: they are large and only useful to the database).
_SELECT: dict[type[BaseModel], str] = {model: ", ".join(model.model_fields) for model in (
    AgentEvent, ReasoningTrace, KnowledgeFact, MemoryEmbedding, SemanticMemory, EntityRelationship,
    WorldModelUpdate, WorldModelSnapshot, Reflection, TaskReflection, MemorySummary, AccessLogEntry)}


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)


def _vector(values: Sequence[float] | None) -> str | None:
    return None if values is None else vector_text(values)


def _id(value: UUID | str | None) -> str | None:
    return None if value is None else str(value)


class LayersMixin:
    """Layer methods of a tenant session. Needs ``_rows(query, params)`` from the session."""

    def _rows(self, query: str, params: Sequence[Any]) -> list[Row]:
        raise NotImplementedError

    def _one(self, model: type[M], function: str, params: Sequence[Any]) -> M:
        rows = self._rows(f"select {_SELECT[model]} from {function}", params)  # noqa: S608 - fixed names
        return model.model_validate(rows[0])

    # core
    def record_event(self, agent_id: str, event_type: str, content: Any = None, *,
                     packet_id: UUID | str | None = None, timestamp: datetime | None = None) -> AgentEvent:
        return self._one(AgentEvent, "memsub.record_event(%s, %s, %s::jsonb, %s, %s)",
                         [agent_id, event_type, _json(content if content is not None else {}), _id(packet_id),
                          timestamp])

    def record_reasoning_trace(self, agent_id: str | None, packet_id: UUID | str | None = None, *,
                               steps: list[Any] | None = None, extracted_features: dict[str, Any] | None = None,
                               inference_steps: list[Any] | None = None, reasoning_tokens: int = 0,
                               decision_tokens: int = 0,
                               confidence_scores: dict[str, Any] | None = None) -> ReasoningTrace:
        return self._one(
            ReasoningTrace,
            "memsub.record_reasoning_trace(%s, %s, %s::jsonb, %s::jsonb, %s::jsonb, %s, %s, %s::jsonb)",
            [agent_id, _id(packet_id), _json(steps or []), _json(extracted_features or {}),
             _json(inference_steps or []), reasoning_tokens, decision_tokens, _json(confidence_scores or {})])

    def assert_fact(self, subject: str, predicate: str, obj: Any, *, confidence: float = 0.5,
                    source_packet: UUID | str | None = None) -> KnowledgeFact:
        return self._one(KnowledgeFact, "memsub.assert_fact(%s, %s, %s::jsonb, %s, %s)",
                         [subject, predicate, _json(obj), confidence, _id(source_packet)])

    # semantic
    def store_embedding(self, packet_id: UUID | str, embedding_type: EmbeddingType, vector: Sequence[float], *,
                        chunk_index: int = 0, chunk_text: str | None = None,
                        metadata: dict[str, Any] | None = None) -> MemoryEmbedding:
        return self._one(MemoryEmbedding, "memsub.store_embedding(%s, %s, %s::vector, %s, %s, %s::jsonb)",
                         [_id(packet_id), embedding_type, _vector(vector), chunk_index, chunk_text,
                          _json(metadata or {})])

    def search_embeddings(self, query: Sequence[float], embedding_type: EmbeddingType,
                          limit: int = 10) -> list[EmbeddingMatch]:
        rows = self._rows("select * from memsub.search_embeddings(%s::vector, %s, %s)",
                          [_vector(query), embedding_type, limit])
        return [EmbeddingMatch.model_validate(row) for row in rows]

    def store_semantic_memory(self, agent_id: str, vector: Sequence[float], payload: dict[str, Any] | None = None,
                              *, embedding_type: str = "content", scope: str = "shared",
                              importance_score: float = 0.5) -> SemanticMemory:
        return self._one(SemanticMemory, "memsub.store_semantic_memory(%s, %s::vector, %s::jsonb, %s, %s, %s)",
                         [agent_id, _vector(vector), _json(payload or {}), embedding_type, scope, importance_score])

    def search_semantic_memory(self, query: Sequence[float], limit: int = 10,
                               agent_id: str | None = None) -> list[SemanticMatch]:
        rows = self._rows("select * from memsub.search_semantic_memory(%s::vector, %s, %s)",
                          [_vector(query), limit, agent_id])
        return [SemanticMatch.model_validate(row) for row in rows]

    # knowledge graph
    def upsert_relationship(self, source_entity: str, relationship_type: str, target_entity: str, *,
                            confidence: float = 0.5, source_packet: UUID | str | None = None,
                            seen_at: datetime | None = None) -> EntityRelationship:
        return self._one(EntityRelationship, "memsub.upsert_relationship(%s, %s, %s, %s, %s, %s)",
                         [source_entity, relationship_type, target_entity, confidence, _id(source_packet), seen_at])

    def graph_neighbors(self, entity: str, max_depth: int = 2, limit: int = 100) -> list[GraphEdge]:
        rows = self._rows("select * from memsub.graph_neighbors(%s, %s, %s)", [entity, max_depth, limit])
        return [GraphEdge.model_validate(row) for row in rows]

    # world model
    def apply_world_model_update(self, insight_type: str, entities: list[dict[str, Any]], *,
                                 content: dict[str, Any] | None = None, confidence: float = 0.5,
                                 insight_id: UUID | str | None = None,
                                 expected_version: int | None = None) -> WorldModelUpdate:
        return self._one(WorldModelUpdate,
                         "memsub.apply_world_model_update(%s, %s::jsonb, %s::jsonb, %s, %s, %s)",
                         [insight_type, _json(entities), _json(content or {}), confidence, _id(insight_id),
                          expected_version])

    def take_world_model_snapshot(self, description: str | None = None,
                                  created_by: str | None = None) -> WorldModelSnapshot:
        return self._one(WorldModelSnapshot, "memsub.take_world_model_snapshot(%s, %s)", [description, created_by])

    def world_model_state_at(self, snapshot_id: UUID | str) -> list[WorldModelEntity]:
        rows = self._rows("select * from memsub.world_model_state_at(%s)", [_id(snapshot_id)])
        return [WorldModelEntity.model_validate(row) for row in rows]

    def world_model_state_version(self) -> int:
        return int(self._rows("select memsub.world_model_state_version() as v", [])[0]["v"])

    # reflection
    def record_reflection(self, reflection_type: ReflectionType, content: str, *, context: str | None = None,
                          entities: Sequence[str] = (), tags: Sequence[str] = (), confidence: float = 0.5,
                          priority: Priority = "medium", source_agent: str | None = None,
                          source_packet: UUID | str | None = None, task_id: str | None = None,
                          vector: Sequence[float] | None = None,
                          expires_at: datetime | None = None) -> Reflection:
        return self._one(Reflection,
                         "memsub.record_reflection(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector, %s)",
                         [reflection_type, content, context, list(entities), list(tags), confidence, priority,
                          source_agent, _id(source_packet), task_id, _vector(vector), expires_at])

    def record_task_reflection(self, task_id: str, outcome: Outcome = "unknown", *,
                               task_description: str | None = None, what_worked: Sequence[str] = (),
                               what_failed: Sequence[str] = (), false_constraints: Sequence[str] = (),
                               helpful_patterns: Sequence[str] = (), lessons: Sequence[str] = (),
                               recommendations: Sequence[str] = (), related_decisions: Sequence[UUID] = (),
                               execution_time_ms: float | None = None,
                               metrics_improved: dict[str, Any] | None = None,
                               metrics_degraded: dict[str, Any] | None = None) -> TaskReflection:
        return self._one(
            TaskReflection,
            "memsub.record_task_reflection(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::uuid[], %s, %s::jsonb, %s::jsonb)",
            [task_id, outcome, task_description, list(what_worked), list(what_failed), list(false_constraints),
             list(helpful_patterns), list(lessons), list(recommendations), [str(d) for d in related_decisions],
             execution_time_ms, _json(metrics_improved or {}), _json(metrics_degraded or {})])

    # intelligence
    def record_summary(self, scope_type: SummaryScope, scope_value: str, summary_text: str,
                       source_packet_ids: Sequence[UUID | str], *, key_facts: list[Any] | None = None,
                       key_entities: Sequence[str] = (), key_decisions: Sequence[str] = (),
                       vector: Sequence[float] | None = None, confidence: float = 0.5,
                       valid_until: datetime | None = None) -> MemorySummary:
        return self._one(
            MemorySummary,
            "memsub.record_summary(%s, %s, %s, %s::uuid[], %s::jsonb, %s, %s, %s::vector, %s, %s)",
            [scope_type, scope_value, summary_text, [str(p) for p in source_packet_ids], _json(key_facts or []),
             list(key_entities), list(key_decisions), _vector(vector), confidence, valid_until])

    def summaries_due(self, as_of: datetime | None = None, limit: int = 100) -> list[MemorySummary]:
        rows = self._rows(f"select {_SELECT[MemorySummary]} from memsub.summaries_due(coalesce(%s, now()), %s)",  # noqa: S608
                          [as_of, limit])
        return [MemorySummary.model_validate(row) for row in rows]

    # operations
    def record_access(self, target_type: AccessTarget, target_id: UUID | str, *, agent_id: str | None = None,
                      access_context: str | None = None, query_text: str | None = None,
                      relevance_score: float | None = None, was_useful: bool | None = None,
                      feedback_reason: str | None = None) -> AccessLogEntry:
        return self._one(AccessLogEntry, "memsub.record_access(%s, %s, %s, %s, %s, %s, %s, %s)",
                         [target_type, _id(target_id), agent_id, access_context, query_text, relevance_score,
                          was_useful, feedback_reason])

    # materialized views, tenant-filtered
    def entity_graph(self, limit: int = 1000) -> list[EntityGraphRow]:
        rows = self._rows("select * from memsub.tenant_entity_graph order by total_mentions desc, source_entity "
                          "limit %s", [limit])
        return [EntityGraphRow.model_validate(row) for row in rows]
