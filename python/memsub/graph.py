"""The graph area: facts, the knowledge graph and its traversal, and the temporal graph (typed nodes, edges with
validity windows and evidence, reads "as of" a time). Both sessions expose it as ``session.graph``::

    with substrate.tenant(tenant_id) as session:
        session.graph.assert_fact("L9", "uses", "Neo4j", confidence=0.8)
        session.graph.upsert_entity("Alice", "Person", aliases=["A. Smith"])
        session.graph.supersede_relationship("Alice", "works_at", "Globex", valid_from=moved_on)
        before = session.graph.edges_as_of(moved_on - timedelta(days=1), entity="Alice")
        reachable = session.graph.traverse("Alice", max_depth=2)

An edge's window is ``[valid_from, valid_until)``; ``valid_until`` None is the current edge. Two windows of one
edge never overlap: the database rejects that with SQLSTATE 23P01 (``IntegrityError``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal, TypeVar
from uuid import UUID

from pydantic import BaseModel

from memsub._calls import (
    NULL,
    Area,
    Call,
    Json,
    Row,
    SessionT,
    Shape,
    checked,
    checked_limit,
    columns_of,
    function,
    json_or_none,
    method,
    one,
    query,
    rows,
    texts,
    vector_or_none,
)
from memsub.embedding import Embedder, embed_one
from memsub.errors import MemsubError
from memsub.models import TenantRow

NodeType = Literal["Entity", "Episode", "Document", "Memory"]
"""What an edge can join (the database's graph_node_types())."""
EntityType = Literal["Person", "Organization", "Concept", "Location"]
"""The kinds of entity node (the database's entity_types())."""
Direction = Literal["outgoing", "incoming", "both"]
"""Which edges a traversal follows (the database's graph_directions())."""


class KnowledgeFact(TenantRow):
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


class EntityRelationship(TenantRow):
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


class DocRef(BaseModel):
    """Evidence: a document version, optionally one of its chunks, and a score."""

    doc_id: UUID
    chunk_id: UUID | None = None
    score: float | None = None


class TemporalEdge(BaseModel):
    """One validity window of an edge (memsub.entity_relationships)."""

    relationship_id: UUID
    source_entity: str
    relationship_type: str
    target_entity: str
    source_type: NodeType
    target_type: NodeType
    confidence: float
    mention_count: int
    valid_from: datetime
    valid_until: datetime | None
    evidence: list[DocRef]
    first_seen: datetime
    last_seen: datetime


class EdgeWindow(BaseModel):
    """One validity window of an edge: it holds from valid_from until valid_until (null: still holds)."""

    source_entity: str
    relationship_type: str
    target_entity: str
    confidence: float
    mention_count: int
    valid_from: datetime
    valid_until: datetime | None


class NeighborEdge(EdgeWindow):
    """An edge window reached ``depth`` hops from the entity (memsub.graph_neighbors_as_of)."""

    depth: int


class EntityNode(BaseModel):
    """An Entity node (a world-model entity)."""

    entity_id: str
    entity_type: str
    attributes: dict[str, Any]
    aliases: list[str]
    doc_refs: list[DocRef]
    confidence: float
    version: int


class GraphNode(BaseModel):
    """One row of memsub.graph_nodes: a typed node and the fields of its type."""

    node_type: NodeType
    node_id: str
    content: str | None
    properties: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    doc_refs: list[DocRef]
    valid_from: datetime
    valid_until: datetime | None
    entity_type: str | None
    aliases: list[str] | None
    session_id: str | None
    mime: str | None
    path: str | None
    hash: str | None
    memory_tier: str | None
    importance: float | None
    decay_state: dict[str, Any] | None


class EntityHit(BaseModel):
    """One row of memsub.entity_search."""

    entity_id: str
    entity_type: str
    aliases: list[str]
    attributes: dict[str, Any]
    score: float
    vector_rank: int | None
    text_rank: int | None
    distance: float | None
    text_score: float | None


M = TypeVar("M", bound=BaseModel)


def _windowed(model: type[M]) -> Callable[[list[Row]], list[M]]:
    """Rows whose ``valid_period`` range becomes ``valid_from`` and ``valid_until`` (None: still valid).

    An empty range (``[t, t)``, which PostgreSQL keeps without its bounds) becomes ``valid_from = valid_until =
    created_at`` where the row has one (graph nodes read the view's own valid_from and valid_until instead)."""
    def decode(found: list[Row]) -> list[M]:
        decoded = []
        for row in found:
            period = row.pop("valid_period")
            if period.isempty:
                lower = upper = row.get("created_at")
            else:
                lower, upper = period.lower, period.upper
            decoded.append(model.model_validate({**row, "valid_from": lower, "valid_until": upper}))
        return decoded
    return decode


def _window_columns(model: type[BaseModel]) -> tuple[str, ...]:
    return (*(name for name in model.model_fields if name not in ("valid_from", "valid_until")), "valid_period")


_EDGES: Shape[list[TemporalEdge]] = Shape(_window_columns(TemporalEdge), _windowed(TemporalEdge))
_EDGE: Shape[TemporalEdge] = Shape(_EDGES.columns, lambda found: _single_edge(_EDGES.decode(found)))
_NEIGHBORS: Shape[list[NeighborEdge]] = Shape(_window_columns(NeighborEdge), _windowed(NeighborEdge))


def _single_edge(edges: list[TemporalEdge]) -> TemporalEdge:
    if len(edges) != 1:
        raise MemsubError(f"expected one edge, the function returned {len(edges)}")
    return edges[0]


def _refs(evidence: Sequence[DocRef | dict[str, Any]] | None) -> Json | None:
    if evidence is None:
        return None
    return Json([r.model_dump(mode="json") if isinstance(r, DocRef) else r for r in evidence])


def assert_fact(subject: str, predicate: str, obj: Any, *, confidence: float = 0.5,
                source_packet: UUID | str | None = None) -> Call[KnowledgeFact]:
    """Assert a fact, or reinforce the same normalized fact (memsub.assert_fact)."""
    return function("assert_fact", {"subject": subject, "predicate": predicate,
                                    "object": NULL if obj is None else Json(obj), "confidence": confidence,
                                    "source_packet": source_packet}, one(KnowledgeFact))


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


def traverse_graph(start_entity: str, max_depth: int = 3, *, relationship_types: Sequence[str] | None = None,
                   min_confidence: float | None = None, direction: Direction = "outgoing",
                   min_path_confidence: float | None = None, limit: int | None = None,
                   as_of: datetime | None = None) -> Call[list[GraphPath]]:
    """Entities reachable from an entity through the visible knowledge graph as of ``as_of`` (default now: only
    the edges valid then), each once with its most confident shortest path, breadth first; aliases resolve to
    their entity (memsub.traverse_graph)."""
    return function("traverse_graph", {
        "start_entity": start_entity, "max_depth": max_depth,
        "relationship_types": texts(relationship_types, "relationship_types"),
        "min_confidence": min_confidence, "direction": direction, "min_path_confidence": min_path_confidence,
        "limit": limit, "as_of": as_of}, rows(GraphPath))


def entity_neighbourhood(entity: str, *, min_confidence: float | None = None, limit: int | None = None,
                         as_of: datetime | None = None) -> Call[list[NeighbourhoodItem]]:
    """An entity's relationships (both directions) valid at ``as_of`` (default now) and the facts about it
    (memsub.entity_neighbourhood)."""
    return function("entity_neighbourhood", {"entity": entity, "min_confidence": min_confidence, "limit": limit,
                                             "as_of": as_of}, rows(NeighbourhoodItem))


def temporal_edge_add(
    source: str,
    relationship_type: str,
    target: str,
    *,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    confidence: float | None = None,
    evidence: Sequence[DocRef | dict[str, Any]] | None = None,
    source_type: NodeType | None = None,
    target_type: NodeType | None = None,
    source_packet: UUID | str | None = None,
) -> Call[TemporalEdge]:
    """Add one window of an edge (default from now, open-ended, confidence 0.5, Entity to Entity); an overlap with
    another window of it raises ``IntegrityError`` (23P01) (memsub.temporal_edge_add)."""
    return function("temporal_edge_add", {
        "source_entity": source, "relationship_type": relationship_type, "target_entity": target,
        "valid_from": valid_from, "valid_until": valid_until, "confidence": confidence, "evidence": _refs(evidence),
        "source_type": source_type, "target_type": target_type, "source_packet": source_packet}, _EDGE)


def close_relationship(source: str, relationship_type: str, target: str,
                       valid_until: datetime | None = None) -> Call[TemporalEdge]:
    """End the current window of an edge (default: now) (memsub.close_relationship)."""
    return function("close_relationship", {"source_entity": source, "relationship_type": relationship_type,
                                           "target_entity": target, "valid_until": valid_until}, _EDGE)


def supersede_relationship(
    source: str,
    relationship_type: str,
    target: str,
    *,
    valid_from: datetime | None = None,
    confidence: float | None = None,
    evidence: Sequence[DocRef | dict[str, Any]] | None = None,
    source_type: NodeType | None = None,
    target_type: NodeType | None = None,
    source_packet: UUID | str | None = None,
) -> Call[TemporalEdge]:
    """(source)-[type]->(target) holds from ``valid_from`` (default now); the other targets of (source, type) stop
    holding then (memsub.supersede_relationship)."""
    return function("supersede_relationship", {
        "source_entity": source, "relationship_type": relationship_type, "target_entity": target,
        "valid_from": valid_from, "confidence": confidence, "evidence": _refs(evidence), "source_type": source_type,
        "target_type": target_type, "source_packet": source_packet}, _EDGE)


def edges_as_of(as_of: datetime | None = None, *, entity: str | None = None,
                relationship_type: str | None = None) -> Call[list[TemporalEdge]]:
    """The edges valid at ``as_of`` (default now), optionally touching an entity or of one type
    (memsub.edges_as_of)."""
    return function("edges_as_of", {"as_of": as_of, "entity": entity, "relationship_type": relationship_type},
                    _EDGES)


def graph_neighbors_as_of(entity: str, as_of: datetime | None = None, *, max_depth: int | None = None,
                          limit: int | None = None) -> Call[list[NeighborEdge]]:
    """Outgoing edges valid at ``as_of`` (default now) reachable from an entity, breadth first (default depth 2,
    at most 100) (memsub.graph_neighbors_as_of)."""
    return function("graph_neighbors_as_of", {"entity": entity, "as_of": as_of, "max_depth": max_depth,
                                              "limit": limit}, _NEIGHBORS)


def graph_upsert_entity(
    name: str,
    entity_type: EntityType,
    *,
    aliases: Sequence[str] = (),
    properties: dict[str, Any] | None = None,
    doc_refs: Sequence[DocRef | dict[str, Any]] | None = None,
    confidence: float | None = None,
    embedding: Sequence[float] | None = None,
    embedder: Embedder | None = None,
) -> Call[EntityNode]:
    """Create or update an Entity node, adding aliases and DocRefs; with ``embedding``, or an ``embedder`` (which
    embeds the name and aliases), the node carries a vector for :func:`entity_search` (memsub.graph_upsert_entity)."""
    if embedding is None and embedder is not None:
        embedding = embed_one(embedder, ", ".join([name, *aliases]))
    return function("graph_upsert_entity", {
        "name": name, "entity_type": entity_type, "aliases": texts(aliases, "aliases") or None,
        "properties": json_or_none(properties), "doc_refs": _refs(doc_refs),
        "confidence": confidence, "embedding": vector_or_none(embedding)}, one(EntityNode))


def entity_search(query_text: str | None, query: Sequence[float] | None = None, *,
                  embedder: Embedder | None = None, k: int | None = None) -> Call[list[EntityHit]]:
    """Entity nodes by meaning (``query``, or ``query_text`` embedded by ``embedder``) and by name or alias
    (``query_text``), fused by reciprocal rank fusion (memsub.entity_search; default 10)."""
    if query is None and embedder is not None and query_text is not None:
        query = embed_one(embedder, query_text)
    return function("entity_search", {"query_text": NULL if query_text is None else query_text,
                                      "query": vector_or_none(query), "k": k}, rows(EntityHit))


# valid_from and valid_until are the view's: the bounds of valid_period, the creation time for both when the node
# was replaced in the transaction that created it (an empty valid_period, which no as_of is in).
_NODES = (
    f"select {columns_of(GraphNode)} from memsub.graph_nodes "  # noqa: S608 - the model's field names
    "where (%s::text is null or node_type = %s) and (%s::timestamptz is null or valid_period @> %s::timestamptz) "
    "order by node_type, created_at, node_id limit %s"
)


def graph_nodes(node_type: NodeType | None = None, *, as_of: datetime | None = None,
                limit: int = 1000) -> Call[list[GraphNode]]:
    """Typed nodes the caller may see (the view memsub.graph_nodes), optionally of one type and existing at
    ``as_of``."""
    node_type = checked(node_type, "text", "node_type")
    as_of = checked(as_of, "timestamp with time zone", "as_of")
    return query(_NODES, [node_type, node_type, as_of, as_of, checked_limit(limit)], rows(GraphNode))


_ENTITY_GRAPH = (f"select {columns_of(EntityGraphRow)} from memsub.tenant_entity_graph "  # noqa: S608 - the model's field names
                 "order by total_mentions desc, source_entity, relationship_type, target_entity, tenant_id limit %s")


def entity_graph(limit: int = 1000) -> Call[list[EntityGraphRow]]:
    """The tenant's rows of the entity graph view, most mentioned first, ties by source, relationship type, target
    and tenant (its unique key), so a limit keeps the same rows on every call (memsub.tenant_entity_graph)."""
    return query(_ENTITY_GRAPH, [checked_limit(limit)], rows(EntityGraphRow))


class GraphArea(Area[SessionT]):
    """``session.graph``: facts, relationships, traversal and the temporal graph."""

    assert_fact = method(assert_fact)
    upsert_relationship = method(upsert_relationship)
    neighbors = method(graph_neighbors)
    traverse = method(traverse_graph)
    entity_neighbourhood = method(entity_neighbourhood)
    temporal_edge_add = method(temporal_edge_add)
    close_relationship = method(close_relationship)
    supersede_relationship = method(supersede_relationship)
    edges_as_of = method(edges_as_of)
    neighbors_as_of = method(graph_neighbors_as_of)
    upsert_entity = method(graph_upsert_entity)
    entity_search = method(entity_search)
    nodes = method(graph_nodes)
    entity_graph = method(entity_graph)
