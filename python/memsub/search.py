"""Typed client calls for the retrieval pipeline: semantic, hybrid, graph and reflection retrieval, feedback and
importance learning (sql/310-350, documented in docs/retrieval.md).

Each function here declares one stored-function call (:mod:`memsub._calls`); the sync and async tenant sessions
expose them as methods that run the call and decode its rows by column name::

    with substrate.tenant(tenant_id) as memory:
        hits = memory.search(query_vector, k=5, record_access=True)
        memory.feedback(hits[0].access_id, was_useful=True, reason="answered the question")

Query vectors may be any sequence of numbers or a NumPy array; they travel in pgvector's binary format
(``pgvector.psycopg``), registered on each connection by :func:`memsub._calls.register_vector_type`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel

from memsub._calls import NULL, Call, VectorLike, function, one, rows
from memsub._calls import vector as _vector
from memsub.layers import EmbeddingType, Priority, ReflectionType

RankBy = Literal["distance", "combined"]
SearchMode = Literal["auto", "exact", "approximate"]
Direction = Literal["outgoing", "incoming", "both"]


class SemanticHit(BaseModel):
    """One row of memsub.semantic_search."""

    embedding_id: UUID
    packet_id: UUID
    embedding_type: str
    chunk_index: int
    chunk_text: str | None
    distance: float
    importance_score: float | None
    combined_score: float
    method: Literal["exact", "approximate"]
    access_id: UUID | None


class HybridHit(BaseModel):
    """One row of memsub.hybrid_search; a rank is None when the row was not a candidate of that leg.

    ``embedding_id`` is None for a document chunk found by its words that carries no vector yet; ``packet_id``
    is then its document version's packet.
    """

    embedding_id: UUID | None
    packet_id: UUID
    chunk_index: int
    chunk_text: str | None
    score: float
    vector_rank: int | None
    text_rank: int | None
    distance: float | None
    text_score: float | None
    importance_score: float | None
    access_id: UUID | None


class GraphPath(BaseModel):
    """One path of memsub.traverse_graph, ending at ``entity`` after ``depth`` hops."""

    depth: int
    entity: str
    path: list[str]
    relationship_path: list[str]
    path_confidence: float
    relationship_id: UUID | None
    edge_confidence: float | None


class NeighbourhoodItem(BaseModel):
    """One row of memsub.entity_neighbourhood: a relationship (outgoing or incoming) or a fact about the entity."""

    kind: Literal["relationship", "fact"]
    direction: str
    relationship_type: str
    other_entity: str | None
    object: Any
    confidence: float
    mention_count: int
    id: UUID


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


class Feedback(BaseModel):
    """The access log row after memsub.record_feedback."""

    access_id: UUID
    tenant_id: UUID
    target_type: str
    target_id: UUID
    query_text: str | None
    relevance_score: float | None
    was_useful: bool | None
    feedback_reason: str | None
    feedback_at: datetime | None
    accessed_at: datetime


class LearningRun(BaseModel):
    """What one memsub.learn_importance run did (a row of memsub.importance_learning_runs)."""

    run_id: UUID
    tenant_id: UUID
    started_at: datetime
    finished_at: datetime
    accesses_counted: int
    feedback_learned: int
    targets_updated: int
    targets_decayed: int
    decay_factor: float
    parameters: dict[str, Any]


def _list(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def search(query: VectorLike, k: int = 10, *, embedding_type: EmbeddingType = "content",
           thread_id: UUID | str | None = None, tags: Sequence[str] | None = None, packet_type: str | None = None,
           since: datetime | None = None, until: datetime | None = None, min_importance: float | None = None,
           rank_by: RankBy = "distance", record_access: bool = False, query_text: str | None = None,
           agent_id: str | None = None, mode: SearchMode = "auto", ef_search: int | None = None,
           max_scan_tuples: int | None = None) -> Call[list[SemanticHit]]:
    """The k visible embeddings of one type nearest to ``query`` (memsub.semantic_search).

    ``mode``: ``auto`` (default) chooses the exact scan or the HNSW walk per call by cost and measured recall;
    ``exact`` always scans exactly (recall 1, cost grows with the tenant); ``approximate`` always walks."""
    return function("semantic_search", {
        "query": _vector(query), "k": k, "embedding_type": embedding_type, "thread_id": thread_id,
        "tags": _list(tags), "packet_type": packet_type, "since": since, "until": until,
        "min_importance": min_importance, "rank_by": rank_by, "record_access": record_access,
        "query_text": query_text, "agent_id": agent_id, "mode": mode, "ef_search": ef_search,
        "max_scan_tuples": max_scan_tuples}, rows(SemanticHit))


def hybrid_search(query_text: str | None, query: VectorLike | None, k: int = 10, *,
                  embedding_type: EmbeddingType = "content", vector_weight: float | None = None,
                  text_weight: float | None = None, rrf_k: int | None = None, candidates: int | None = None,
                  importance_weight: float | None = None, recency_weight: float | None = None,
                  half_life: timedelta | None = None, record_access: bool = False,
                  agent_id: str | None = None) -> Call[list[HybridHit]]:
    """Full text and vector similarity fused by reciprocal rank fusion (memsub.hybrid_search).

    Either query may be None (one leg only). Unset weights take the function's defaults (docs/retrieval.md).
    """
    vector = _vector(query)
    return function("hybrid_search", {
        "query_text": NULL if query_text is None else query_text, "query": NULL if vector is None else vector,
        "k": k, "embedding_type": embedding_type, "vector_weight": vector_weight, "text_weight": text_weight,
        "rrf_k": rrf_k, "candidates": candidates, "importance_weight": importance_weight,
        "recency_weight": recency_weight, "half_life": half_life, "record_access": record_access,
        "agent_id": agent_id}, rows(HybridHit))


def traverse(start_entity: str, max_depth: int = 3, *, relationship_types: Sequence[str] | None = None,
             min_confidence: float | None = None, direction: Direction = "outgoing",
             min_path_confidence: float | None = None, limit: int | None = None,
             as_of: datetime | None = None) -> Call[list[GraphPath]]:
    """Entities reachable from an entity through the visible knowledge graph as of ``as_of`` (default now: only
    the edges valid then), each once with its most confident shortest path, breadth first; aliases resolve to
    their entity (memsub.traverse_graph)."""
    return function("traverse_graph", {
        "start_entity": start_entity, "max_depth": max_depth, "relationship_types": _list(relationship_types),
        "min_confidence": min_confidence, "direction": direction, "min_path_confidence": min_path_confidence,
        "limit": limit, "as_of": as_of}, rows(GraphPath))


def neighbourhood(entity: str, *, min_confidence: float | None = None, limit: int | None = None,
                  as_of: datetime | None = None) -> Call[list[NeighbourhoodItem]]:
    """An entity's relationships (both directions) valid at ``as_of`` (default now) and the facts about it
    (memsub.entity_neighbourhood)."""
    return function("entity_neighbourhood", {"entity": entity, "min_confidence": min_confidence, "limit": limit,
                                             "as_of": as_of}, rows(NeighbourhoodItem))


def feedback(access_id: UUID | str, was_useful: bool, reason: str | None = None) -> Call[Feedback]:
    """Whether a recorded access was useful (memsub.record_feedback); learned by :func:`learn_importance`."""
    return function("record_feedback", {"access_id": access_id, "was_useful": was_useful, "reason": reason},
                    one(Feedback))


def reflections(query: VectorLike | None = None, *, tags: Sequence[str] | None = None, k: int = 5,
                reflection_types: Sequence[ReflectionType] | None = None, min_priority: Priority = "low",
                task_id: str | None = None, require_tags: bool = False, record_access: bool = False,
                query_text: str | None = None, agent_id: str | None = None) -> Call[list[ReflectionHit]]:
    """Lessons relevant to a task by vector, tags and priority (memsub.retrieve_reflections)."""
    return function("retrieve_reflections", {
        "query": _vector(query), "tags": _list(tags), "k": k,
        "reflection_types": None if reflection_types is None else list(reflection_types),
        "min_priority": min_priority, "task_id": task_id, "require_tags": require_tags,
        "record_access": record_access, "query_text": query_text, "agent_id": agent_id}, rows(ReflectionHit))


def learn_importance(*, access_rate: float | None = None, feedback_rate: float | None = None,
                     half_life: timedelta | None = None, floor: float | None = None,
                     idle_after: timedelta | None = None) -> Call[LearningRun]:
    """Fold the tenant's new accesses and feedback into importance, decay idle memories
    (memsub.learn_importance; unset parameters take the function's defaults)."""
    return function("learn_importance", {"access_rate": access_rate, "feedback_rate": feedback_rate,
                                         "half_life": half_life, "floor": floor, "idle_after": idle_after},
                    one(LearningRun))
