"""Typed client calls for the L9 layers: core, semantic, knowledge graph, world model, reflection, intelligence,
operations and the tenant-filtered materialized views.

Each function here declares one stored-function call (:mod:`memsub._calls`); the sync and async tenant sessions
expose them as methods that run the call and decode its rows by column name::

    with substrate.tenant(tenant_id) as memory:
        fact = memory.assert_fact("L9", "uses", "Neo4j", confidence=0.8)
        edge = memory.upsert_relationship("L9", "uses", "Neo4j")
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel

from memsub._calls import NULL, Call, Json, VectorLike, function, json_or_none, one, rows, scalar
from memsub._calls import query as _query
from memsub._calls import vector as _vector

EmbeddingType = Literal["content", "context", "entity", "summary", "reasoning"]
ReflectionType = Literal["lesson", "pattern", "failure", "success", "insight", "improvement", "false_constraint"]
Priority = Literal["critical", "high", "medium", "low"]
Outcome = Literal["success", "partial", "failure", "unknown"]
SummaryScope = Literal["thread", "agent", "topic", "time_period", "project", "task"]
AccessTarget = Literal["packet", "embedding", "fact", "reflection"]


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


def _uuids(values: Sequence[UUID | str]) -> list[UUID]:
    return [value if isinstance(value, UUID) else UUID(str(value)) for value in values]


# core
def record_event(agent_id: str, event_type: str, content: Any = None, *, packet_id: UUID | str | None = None,
                 timestamp: datetime | None = None) -> Call[AgentEvent]:
    """Record an agent event (memsub.record_event)."""
    return function("record_event", {"agent_id": agent_id, "event_type": event_type, "content": json_or_none(content),
                                     "packet_id": packet_id, "timestamp": timestamp}, one(AgentEvent))


def record_reasoning_trace(agent_id: str | None, packet_id: UUID | str | None = None, *,
                           steps: list[Any] | None = None, extracted_features: dict[str, Any] | None = None,
                           inference_steps: list[Any] | None = None, reasoning_tokens: int = 0,
                           decision_tokens: int = 0,
                           confidence_scores: dict[str, Any] | None = None) -> Call[ReasoningTrace]:
    """Record a reasoning trace (memsub.record_reasoning_trace); agent None: the packet's agent."""
    return function("record_reasoning_trace", {
        "agent_id": NULL if agent_id is None else agent_id, "packet_id": packet_id, "steps": json_or_none(steps),
        "extracted_features": json_or_none(extracted_features), "inference_steps": json_or_none(inference_steps),
        "reasoning_tokens": reasoning_tokens, "decision_tokens": decision_tokens,
        "confidence_scores": json_or_none(confidence_scores)}, one(ReasoningTrace))


def assert_fact(subject: str, predicate: str, obj: Any, *, confidence: float = 0.5,
                source_packet: UUID | str | None = None) -> Call[KnowledgeFact]:
    """Assert a fact, or reinforce the same normalized fact (memsub.assert_fact)."""
    return function("assert_fact", {"subject": subject, "predicate": predicate,
                                    "object": NULL if obj is None else Json(obj), "confidence": confidence,
                                    "source_packet": source_packet}, one(KnowledgeFact))


# semantic
def store_embedding(packet_id: UUID | str, embedding_type: EmbeddingType, vector: VectorLike, *,
                    chunk_index: int = 0, chunk_text: str | None = None,
                    metadata: dict[str, Any] | None = None) -> Call[MemoryEmbedding]:
    """Store one embedding of a packet (memsub.store_embedding)."""
    return function("store_embedding", {"packet_id": packet_id, "embedding_type": embedding_type,
                                        "vector": _vector(vector), "chunk_index": chunk_index,
                                        "chunk_text": chunk_text, "metadata": json_or_none(metadata)},
                    one(MemoryEmbedding))


def store_semantic_memory(agent_id: str, vector: VectorLike, payload: dict[str, Any] | None = None, *,
                          embedding_type: str = "content", scope: str = "shared",
                          importance_score: float = 0.5) -> Call[SemanticMemory]:
    """Store an agent's semantic memory (memsub.store_semantic_memory)."""
    return function("store_semantic_memory", {
        "agent_id": agent_id, "vector": _vector(vector), "payload": json_or_none(payload),
        "embedding_type": embedding_type, "scope": scope, "importance_score": importance_score}, one(SemanticMemory))


def search_semantic_memory(query: VectorLike, limit: int = 10,
                           agent_id: str | None = None) -> Call[list[SemanticMatch]]:
    """The semantic memories nearest to a vector (memsub.search_semantic_memory)."""
    return function("search_semantic_memory", {"query": _vector(query), "limit": limit, "agent_id": agent_id},
                    rows(SemanticMatch))


# knowledge graph
def upsert_relationship(source_entity: str, relationship_type: str, target_entity: str, *,
                        confidence: float = 0.5, source_packet: UUID | str | None = None,
                        seen_at: datetime | None = None) -> Call[EntityRelationship]:
    """Record a relationship, or reinforce it (memsub.upsert_relationship)."""
    return function("upsert_relationship", {
        "source_entity": source_entity, "relationship_type": relationship_type, "target_entity": target_entity,
        "confidence": confidence, "source_packet": source_packet, "seen_at": seen_at}, one(EntityRelationship))


def graph_neighbors(entity: str, max_depth: int = 2, limit: int = 100) -> Call[list[GraphEdge]]:
    """The relationships reachable from an entity, breadth first (memsub.graph_neighbors)."""
    return function("graph_neighbors", {"entity": entity, "max_depth": max_depth, "limit": limit},
                    rows(GraphEdge))


# world model
def apply_world_model_update(insight_type: str, entities: list[dict[str, Any]], *,
                             content: dict[str, Any] | None = None, confidence: float = 0.5,
                             insight_id: UUID | str | None = None,
                             expected_version: int | None = None) -> Call[WorldModelUpdate]:
    """Apply an insight to the world model, optionally at an expected version (memsub.apply_world_model_update)."""
    return function("apply_world_model_update", {
        "insight_type": insight_type, "entities": Json(entities), "content": json_or_none(content),
        "confidence": confidence, "insight_id": insight_id, "expected_version": expected_version},
        one(WorldModelUpdate))


def take_world_model_snapshot(description: str | None = None,
                              created_by: str | None = None) -> Call[WorldModelSnapshot]:
    """Snapshot the world model (memsub.take_world_model_snapshot)."""
    return function("take_world_model_snapshot", {"description": description, "created_by": created_by},
                    one(WorldModelSnapshot))


def world_model_state_at(snapshot_id: UUID | str) -> Call[list[WorldModelEntity]]:
    """The world model's entities as a snapshot holds them (memsub.world_model_state_at)."""
    return function("world_model_state_at", {"snapshot_id": snapshot_id}, rows(WorldModelEntity))


def world_model_state_version() -> Call[int]:
    """The world model's current version (memsub.world_model_state_version)."""
    return function("world_model_state_version", {}, scalar(int))


# reflection
def record_reflection(reflection_type: ReflectionType, content: str, *, context: str | None = None,
                      entities: Sequence[str] = (), tags: Sequence[str] = (), confidence: float = 0.5,
                      priority: Priority = "medium", source_agent: str | None = None,
                      source_packet: UUID | str | None = None, task_id: str | None = None,
                      vector: VectorLike | None = None, expires_at: datetime | None = None) -> Call[Reflection]:
    """Record a lesson, pattern or other reflection (memsub.record_reflection)."""
    return function("record_reflection", {
        "reflection_type": reflection_type, "content": content, "context": context, "entities": list(entities),
        "tags": list(tags), "confidence": confidence, "priority": priority, "source_agent": source_agent,
        "source_packet": source_packet, "task_id": task_id, "vector": _vector(vector), "expires_at": expires_at},
        one(Reflection))


def record_task_reflection(task_id: str, outcome: Outcome = "unknown", *, task_description: str | None = None,
                           what_worked: Sequence[str] = (), what_failed: Sequence[str] = (),
                           false_constraints: Sequence[str] = (), helpful_patterns: Sequence[str] = (),
                           lessons: Sequence[str] = (), recommendations: Sequence[str] = (),
                           related_decisions: Sequence[UUID | str] = (), execution_time_ms: float | None = None,
                           metrics_improved: dict[str, Any] | None = None,
                           metrics_degraded: dict[str, Any] | None = None) -> Call[TaskReflection]:
    """Record (or merge into) a task's reflection (memsub.record_task_reflection)."""
    return function("record_task_reflection", {
        "task_id": task_id, "outcome": outcome, "task_description": task_description,
        "what_worked": list(what_worked), "what_failed": list(what_failed),
        "false_constraints": list(false_constraints), "helpful_patterns": list(helpful_patterns),
        "lessons": list(lessons), "recommendations": list(recommendations),
        "related_decisions": _uuids(related_decisions), "execution_time_ms": execution_time_ms,
        "metrics_improved": json_or_none(metrics_improved), "metrics_degraded": json_or_none(metrics_degraded)},
        one(TaskReflection))


# intelligence
def record_summary(scope_type: SummaryScope, scope_value: str, summary_text: str,
                   source_packet_ids: Sequence[UUID | str], *, key_facts: list[Any] | None = None,
                   key_entities: Sequence[str] = (), key_decisions: Sequence[str] = (),
                   vector: VectorLike | None = None, confidence: float = 0.5,
                   valid_until: datetime | None = None) -> Call[MemorySummary]:
    """Record a summary of packets (memsub.record_summary)."""
    return function("record_summary", {
        "scope_type": scope_type, "scope_value": scope_value, "summary_text": summary_text,
        "source_packet_ids": _uuids(source_packet_ids), "key_facts": json_or_none(key_facts),
        "key_entities": list(key_entities), "key_decisions": list(key_decisions), "vector": _vector(vector),
        "confidence": confidence, "valid_until": valid_until}, one(MemorySummary))


def summaries_due(as_of: datetime | None = None, limit: int = 100) -> Call[list[MemorySummary]]:
    """Summaries whose validity has ended by ``as_of`` (default now) (memsub.summaries_due)."""
    return function("summaries_due", {"as_of": as_of, "limit": limit}, rows(MemorySummary))


# operations
def record_access(target_type: AccessTarget, target_id: UUID | str, *, agent_id: str | None = None,
                  access_context: str | None = None, query_text: str | None = None,
                  relevance_score: float | None = None, was_useful: bool | None = None,
                  feedback_reason: str | None = None) -> Call[AccessLogEntry]:
    """Log an access to a memory (memsub.record_access)."""
    return function("record_access", {
        "target_type": target_type, "target_id": target_id, "agent_id": agent_id, "access_context": access_context,
        "query_text": query_text, "relevance_score": relevance_score, "was_useful": was_useful,
        "feedback_reason": feedback_reason}, one(AccessLogEntry))


# materialized views, tenant-filtered
def entity_graph(limit: int = 1000) -> Call[list[EntityGraphRow]]:
    """The tenant's rows of the entity graph view, most mentioned first (memsub.tenant_entity_graph)."""
    return _query("select * from memsub.tenant_entity_graph order by total_mentions desc, source_entity limit %s",
                 [limit], rows(EntityGraphRow))

