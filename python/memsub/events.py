"""The events area (seed 002 core layer, access log): agent events, reasoning traces and accesses to memories.
Both sessions expose it as ``session.events``::

    with substrate.tenant(tenant_id) as session:
        session.events.record("planner", "tool_call", {"tool": "search"})
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from memsub._calls import NULL, Area, Call, SessionT, function, json_or_none, method, one
from memsub.models import TenantRow

AccessTarget = Literal["packet", "embedding", "fact", "reflection"]
"""What an access record points at (the database's access_target_types())."""


class AgentEvent(TenantRow):
    event_id: UUID
    agent_id: str
    timestamp: datetime
    packet_id: UUID | None
    event_type: str
    content: Any
    scope: str


class ReasoningTrace(TenantRow):
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


class AccessLogEntry(TenantRow):
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
    scope: str
    """shared, or l-private (read by its accessor alone) when the target is a cursor or l-private packet or
    embedding."""


def record_event(agent_id: str, event_type: str, content: Any = None, *, packet_id: UUID | str | None = None,
                 timestamp: datetime | None = None) -> Call[AgentEvent]:
    """Record an agent event (memsub.record_event). With ``packet_id`` it takes that packet's scope; without one
    it is shared with the context's organization, as a packet written without a scope is."""
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


def record_access(target_type: AccessTarget, target_id: UUID | str, *, agent_id: str | None = None,
                  access_context: str | None = None, query_text: str | None = None,
                  relevance_score: float | None = None, was_useful: bool | None = None,
                  feedback_reason: str | None = None) -> Call[AccessLogEntry]:
    """Log an access to a memory (memsub.record_access)."""
    return function("record_access", {
        "target_type": target_type, "target_id": target_id, "agent_id": agent_id, "access_context": access_context,
        "query_text": query_text, "relevance_score": relevance_score, "was_useful": was_useful,
        "feedback_reason": feedback_reason}, one(AccessLogEntry))


class EventsArea(Area[SessionT]):
    """``session.events``: what agents did, how they reasoned, and which memories they read."""

    record = method(record_event)
    record_reasoning_trace = method(record_reasoning_trace)
    record_access = method(record_access)
