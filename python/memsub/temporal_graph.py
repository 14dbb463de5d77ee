"""The temporal knowledge graph: typed nodes, edges with validity windows and evidence, reads "as of" a time.

Thin typed wrappers over memsub's stored functions, used inside a tenant context::

    with substrate.tenant(tenant_id) as memory:
        temporal_graph.upsert_entity(memory, "Alice", "Person", aliases=["A. Smith"])
        temporal_graph.supersede(memory, "Alice", "works_at", "Globex", valid_from=moved_on)
        before = temporal_graph.edges_as_of(memory, moved_on - timedelta(days=1), entity="Alice")

An edge's window is ``[valid_from, valid_until)``; ``valid_until`` None is the current edge. Two windows of one
edge never overlap: the database rejects that with SQLSTATE 23P01 (``IntegrityError``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from psycopg.types.json import Jsonb
from pydantic import BaseModel

from memsub.client import TenantSession
from memsub.embedding import TextEmbedder, embed_one
from memsub.sessions import vector_text

NodeType = Literal["Entity", "Episode", "Document", "Memory"]
EntityType = Literal["Person", "Organization", "Concept", "Location"]


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


class NeighborEdge(BaseModel):
    depth: int
    source_entity: str
    relationship_type: str
    target_entity: str
    confidence: float
    mention_count: int
    valid_from: datetime
    valid_until: datetime | None


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


_EDGE_COLUMNS = (
    "relationship_id, source_entity, relationship_type, target_entity, source_type, target_type, confidence, "
    "mention_count, lower(valid_period) as valid_from, upper(valid_period) as valid_until, evidence, first_seen, "
    "last_seen"
)
_NODE_COLUMNS = (
    "node_type, node_id, content, properties, created_at, updated_at, doc_refs, lower(valid_period) as valid_from, "
    "upper(valid_period) as valid_until, entity_type, aliases, session_id, mime, path, hash, memory_tier, "
    "importance, decay_state"
)


def _refs(evidence: Sequence[DocRef | dict[str, Any]] | None) -> Jsonb:
    return Jsonb([r.model_dump(mode="json") if isinstance(r, DocRef) else r for r in evidence or []])


def _edge(session: TenantSession, function: str, params: Sequence[Any]) -> TemporalEdge:
    rows = session.fetch(f"select {_EDGE_COLUMNS} from {function}", params)  # noqa: S608 - fixed names
    return TemporalEdge.model_validate(rows[0])


def add_edge(
    session: TenantSession,
    source: str,
    relationship_type: str,
    target: str,
    *,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    confidence: float = 0.5,
    evidence: Sequence[DocRef | dict[str, Any]] | None = None,
    source_type: NodeType = "Entity",
    target_type: NodeType = "Entity",
    source_packet: UUID | str | None = None,
) -> TemporalEdge:
    """Add one window of an edge; an overlap with another window of it raises ``IntegrityError`` (23P01)."""
    return _edge(session, "memsub.temporal_edge_add(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                 [source, relationship_type, target, valid_from, valid_until, confidence, _refs(evidence),
                  source_type, target_type, None if source_packet is None else str(source_packet)])


def close_edge(session: TenantSession, source: str, relationship_type: str, target: str,
               valid_until: datetime | None = None) -> TemporalEdge:
    """End the current window of an edge (default: now)."""
    return _edge(session, "memsub.close_relationship(%s, %s, %s, %s)",
                 [source, relationship_type, target, valid_until])


def supersede(
    session: TenantSession,
    source: str,
    relationship_type: str,
    target: str,
    *,
    valid_from: datetime | None = None,
    confidence: float = 0.5,
    evidence: Sequence[DocRef | dict[str, Any]] | None = None,
    source_type: NodeType = "Entity",
    target_type: NodeType = "Entity",
    source_packet: UUID | str | None = None,
) -> TemporalEdge:
    """(source)-[type]->(target) holds from ``valid_from``; the other targets of (source, type) stop holding then."""
    return _edge(session, "memsub.supersede_relationship(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                 [source, relationship_type, target, valid_from, confidence, _refs(evidence), source_type,
                  target_type, None if source_packet is None else str(source_packet)])


def edges_as_of(session: TenantSession, as_of: datetime | None = None, *, entity: str | None = None,
                relationship_type: str | None = None) -> list[TemporalEdge]:
    """The edges valid at ``as_of`` (default now), optionally touching an entity or of one type."""
    rows = session.fetch(f"select {_EDGE_COLUMNS} from memsub.edges_as_of(%s, %s, %s)",  # noqa: S608 - fixed names
                         [as_of, entity, relationship_type])
    return [TemporalEdge.model_validate(row) for row in rows]


def neighbors_as_of(session: TenantSession, entity: str, as_of: datetime | None = None, *, max_depth: int = 2,
                    limit: int = 100) -> list[NeighborEdge]:
    """Outgoing edges valid at ``as_of`` reachable from an entity, breadth first."""
    rows = session.fetch(
        "select depth, source_entity, relationship_type, target_entity, confidence, mention_count, "
        "lower(valid_period) as valid_from, upper(valid_period) as valid_until "
        "from memsub.graph_neighbors_as_of(%s, %s, %s, %s)", [entity, as_of, max_depth, limit])
    return [NeighborEdge.model_validate(row) for row in rows]


def upsert_entity(
    session: TenantSession,
    name: str,
    entity_type: EntityType,
    *,
    aliases: Sequence[str] = (),
    properties: dict[str, Any] | None = None,
    doc_refs: Sequence[DocRef | dict[str, Any]] | None = None,
    confidence: float = 0.5,
    embedding: Sequence[float] | None = None,
    embedder: TextEmbedder | None = None,
) -> EntityNode:
    """Create or update an Entity node, adding aliases and DocRefs; with ``embedding``, or an ``embedder`` (which
    embeds the name and aliases), the node carries a vector for :func:`search_entities`."""
    if embedding is None and embedder is not None:
        embedding = embed_one(embedder, ", ".join([name, *aliases]))
    rows = session.fetch(
        "select entity_id, entity_type, attributes, aliases, doc_refs, confidence, version "
        "from memsub.graph_upsert_entity(%s, %s, %s, %s, %s, %s, %s::vector)",
        [name, entity_type, list(aliases), Jsonb(properties or {}), _refs(doc_refs), confidence,
         None if embedding is None else vector_text(embedding)])
    return EntityNode.model_validate(rows[0])


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


def search_entities(session: TenantSession, query_text: str | None, query: Sequence[float] | None = None, *,
                    embedder: TextEmbedder | None = None, k: int = 10) -> list[EntityHit]:
    """Entity nodes by meaning (``query``, or ``query_text`` embedded by ``embedder``) and by name or alias
    (``query_text``), fused by reciprocal rank fusion (memsub.entity_search)."""
    if query is None and embedder is not None and query_text is not None:
        query = embed_one(embedder, query_text)
    rows = session.fetch("select * from memsub.entity_search(%s, %s::vector, %s)",
                         [query_text, None if query is None else vector_text(query), k])
    return [EntityHit.model_validate(row) for row in rows]


def nodes(session: TenantSession, node_type: NodeType | None = None, *, as_of: datetime | None = None,
          limit: int = 1000) -> list[GraphNode]:
    """Typed nodes the caller may see, optionally of one type and existing at ``as_of``."""
    rows = session.fetch(
        f"select {_NODE_COLUMNS} from memsub.graph_nodes "  # noqa: S608 - fixed names
        "where (%s::text is null or node_type = %s) and (%s::timestamptz is null or valid_period @> %s::timestamptz) "
        "order by node_type, created_at, node_id limit %s",
        [node_type, node_type, as_of, as_of, limit])
    return [GraphNode.model_validate(row) for row in rows]
