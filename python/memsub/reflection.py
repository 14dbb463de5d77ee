"""The reflection area: lessons and task reflections, summaries of packets and when they fall due, and the
retrieval of the lessons relevant to a task. Both sessions expose it as ``session.reflection``::

    with substrate.tenant(tenant_id) as session:
        session.reflection.record("lesson", "Check the index before blaming the planner", tags=["postgres"])
        lessons = session.reflection.retrieve(tags=["postgres"], k=3)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel

from memsub._calls import (
    Area,
    Call,
    SessionT,
    VectorLike,
    function,
    items,
    json_or_none,
    method,
    one,
    rows,
    texts,
    vector_or_none,
)
from memsub.models import TenantRow

ReflectionType = Literal["lesson", "pattern", "failure", "success", "insight", "improvement", "false_constraint"]
"""What a reflection records (the database's reflection_types())."""
Priority = Literal["critical", "high", "medium", "low"]
"""How much a reflection matters, most first (the database's reflection_priorities())."""
Outcome = Literal["success", "partial", "failure", "unknown"]
"""How a task ended, as its reflection records it (the database's task_outcomes())."""
SummaryScope = Literal["thread", "agent", "topic", "time_period", "project", "task"]
"""What a summary covers (the database's summary_scope_types())."""


class Reflection(TenantRow):
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
    last_accessed: datetime | None
    expires_at: datetime | None
    created_at: datetime


class TaskReflection(TenantRow):
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
    created_at: datetime
    updated_at: datetime


class MemorySummary(TenantRow):
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
    created_at: datetime
    """When it was written: the newest summary of a scope is the one summaries_due reports."""


class ReflectionHit(BaseModel):
    """One row of memsub.retrieve_reflections."""

    reflection_id: UUID
    reflection_type: str
    content: str
    tags: list[str]
    priority: str
    confidence: float
    distance: float | None
    tag_overlap: float
    score: float
    access_id: UUID | None


def record_reflection(reflection_type: ReflectionType, content: str, *, context: str | None = None,
                      entities: Sequence[str] = (), tags: Sequence[str] = (), confidence: float = 0.5,
                      priority: Priority = "medium", source_agent: str | None = None,
                      source_packet: UUID | str | None = None, task_id: str | None = None,
                      vector: VectorLike | None = None, expires_at: datetime | None = None) -> Call[Reflection]:
    """Record a lesson, pattern or other reflection (memsub.record_reflection)."""
    return function("record_reflection", {
        "reflection_type": reflection_type, "content": content, "context": context,
        "entities": texts(entities, "entities"),
        "tags": texts(tags, "tags"), "confidence": confidence, "priority": priority, "source_agent": source_agent,
        "source_packet": source_packet, "task_id": task_id, "vector": vector_or_none(vector), "expires_at": expires_at},
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
        "what_worked": texts(what_worked, "what_worked"), "what_failed": texts(what_failed, "what_failed"),
        "false_constraints": texts(false_constraints, "false_constraints"),
        "helpful_patterns": texts(helpful_patterns, "helpful_patterns"),
        "lessons": texts(lessons, "lessons"), "recommendations": texts(recommendations, "recommendations"),
        "related_decisions": items(related_decisions, "related_decisions"), "execution_time_ms": execution_time_ms,
        "metrics_improved": json_or_none(metrics_improved), "metrics_degraded": json_or_none(metrics_degraded)},
        one(TaskReflection))


def record_summary(scope_type: SummaryScope, scope_value: str, summary_text: str,
                   source_packet_ids: Sequence[UUID | str], *, key_facts: list[Any] | None = None,
                   key_entities: Sequence[str] = (), key_decisions: Sequence[str] = (),
                   vector: VectorLike | None = None, confidence: float = 0.5,
                   valid_until: datetime | None = None) -> Call[MemorySummary]:
    """Record a summary of packets (memsub.record_summary)."""
    return function("record_summary", {
        "scope_type": scope_type, "scope_value": scope_value, "summary_text": summary_text,
        "source_packet_ids": items(source_packet_ids, "source_packet_ids"), "key_facts": json_or_none(key_facts),
        "key_entities": texts(key_entities, "key_entities"), "key_decisions": texts(key_decisions, "key_decisions"),
        "vector": vector_or_none(vector),
        "confidence": confidence, "valid_until": valid_until}, one(MemorySummary))


def summaries_due(as_of: datetime | None = None, limit: int = 100) -> Call[list[MemorySummary]]:
    """Summaries whose validity has ended by ``as_of`` (default now) (memsub.summaries_due)."""
    return function("summaries_due", {"as_of": as_of, "limit": limit}, rows(MemorySummary))


def retrieve_reflections(query: VectorLike | None = None, *, tags: Sequence[str] | None = None, k: int = 5,
                         reflection_types: Sequence[ReflectionType] | None = None, min_priority: Priority = "low",
                         task_id: str | None = None, require_tags: bool = False, record_access: bool = False,
                         query_text: str | None = None, agent_id: str | None = None) -> Call[list[ReflectionHit]]:
    """Lessons relevant to a task by vector, tags and priority (memsub.retrieve_reflections)."""
    return function("retrieve_reflections", {
        "query": vector_or_none(query), "tags": texts(tags, "tags"), "k": k,
        "reflection_types": texts(reflection_types, "reflection_types"),
        "min_priority": min_priority, "task_id": task_id, "require_tags": require_tags,
        "record_access": record_access, "query_text": query_text, "agent_id": agent_id}, rows(ReflectionHit))


class ReflectionArea(Area[SessionT]):
    """``session.reflection``: what agents learned, summaries, and the lessons relevant to a task."""

    record = method(record_reflection)
    record_task = method(record_task_reflection)
    record_summary = method(record_summary)
    summaries_due = method(summaries_due)
    retrieve = method(retrieve_reflections)
