"""The search area: embeddings and semantic memory, semantic and hybrid search, feedback and importance learning
(sql/300-340, documented in docs/retrieval.md). Both sessions expose it as ``session.search``::

    with substrate.tenant(tenant_id) as session:
        hits = session.search.semantic(query_vector, k=5, record_access=True)
        session.search.record_feedback(hits[0].access_id, was_useful=True, reason="answered the question")

Query vectors may be any sequence of numbers or a NumPy array; they travel in pgvector's binary format
(``pgvector.psycopg``), registered on each connection by :func:`memsub._calls.register_vector_type`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar
from uuid import UUID

from psycopg import sql
from pydantic import BaseModel

from memsub._calls import (
    NULL,
    Area,
    AsVector,
    Call,
    Row,
    SessionT,
    VectorLike,
    function,
    json_or_none,
    method,
    one,
    rows,
    texts,
    vector_or_none,
)
from memsub.models import PacketStoreRow, Scope, TenantRow
from memsub.packets import PACKET_WITH_VECTORS_COLUMNS, packet_with_vectors

EmbeddingType = Literal["content", "context", "entity", "summary", "reasoning"]
RankBy = Literal["distance", "combined"]
"""How semantic_search orders its hits (the database's search_rank_orders())."""
SearchMode = Literal["auto", "exact", "approximate"]
"""How semantic_search finds its hits (the database's search_modes())."""


class MemoryEmbedding(TenantRow):
    embedding_id: UUID
    packet_id: UUID
    embedding_type: str
    chunk_index: int
    chunk_text: str | None
    metadata: dict[str, Any]
    scope: str


class SemanticMemory(TenantRow):
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
    method: str


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
    packet: PacketStoreRow | None = None
    """The hit's packet as :meth:`get_packets` returns it, when the search was asked ``with_packets``."""


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
    packet: PacketStoreRow | None = None
    """The hit's packet as :meth:`get_packets` returns it, when the search was asked ``with_packets``."""


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


def store_embedding(packet_id: UUID | str, embedding_type: EmbeddingType, vector: VectorLike, *,
                    chunk_index: int = 0, chunk_text: str | None = None,
                    metadata: dict[str, Any] | None = None) -> Call[MemoryEmbedding]:
    """Store one embedding of a packet (memsub.store_embedding)."""
    return function("store_embedding", {"packet_id": packet_id, "embedding_type": embedding_type,
                                        "vector": vector_or_none(vector), "chunk_index": chunk_index,
                                        "chunk_text": chunk_text, "metadata": json_or_none(metadata)},
                    one(MemoryEmbedding))


def store_semantic_memory(agent_id: str, vector: VectorLike, payload: dict[str, Any] | None = None, *,
                          embedding_type: str = "content", scope: Scope = "shared",
                          importance_score: float = 0.5) -> Call[SemanticMemory]:
    """Store an agent's semantic memory (memsub.store_semantic_memory)."""
    return function("store_semantic_memory", {
        "agent_id": agent_id, "vector": vector_or_none(vector), "payload": json_or_none(payload),
        "embedding_type": embedding_type, "scope": scope, "importance_score": importance_score}, one(SemanticMemory))


def search_semantic_memory(query: VectorLike, limit: int = 10, agent_id: str | None = None, *,
                           mode: SearchMode = "auto") -> Call[list[SemanticMatch]]:
    """The semantic memories nearest to a vector (memsub.search_semantic_memory).

    ``mode``: ``auto`` (default) scans exactly up to 10,000 rows of the caller and walks the HNSW graph beyond;
    ``exact`` always scans exactly (recall 1); ``approximate`` always walks. ``match.method`` says which answered."""
    return function("search_semantic_memory", {"query": vector_or_none(query), "limit": limit, "agent_id": agent_id,
                                               "mode": mode}, rows(SemanticMatch))


def semantic_search(query: VectorLike, k: int = 10, *, embedding_type: EmbeddingType = "content",
                    thread_id: UUID | str | None = None, tags: Sequence[str] | None = None,
                    packet_type: str | None = None, since: datetime | None = None, until: datetime | None = None,
                    min_importance: float | None = None, rank_by: RankBy = "distance", record_access: bool = False,
                    query_text: str | None = None, agent_id: str | None = None, mode: SearchMode = "auto",
                    ef_search: int | None = None, max_scan_tuples: int | None = None,
                    with_packets: bool = False) -> Call[list[SemanticHit]]:
    """The k visible embeddings of one type nearest to ``query`` (memsub.semantic_search).

    ``mode``: ``auto`` (default) chooses the exact scan or the HNSW walk per call by cost and measured recall;
    ``exact`` always scans exactly (recall 1, cost grows with the tenant); ``approximate`` always walks.
    ``with_packets``: each hit carries its packet (``hit.packet``), read in the same statement
    (:func:`_with_packets`)."""
    call = function("semantic_search", {
        "query": vector_or_none(query), "k": k, "embedding_type": embedding_type, "thread_id": thread_id,
        "tags": texts(tags, "tags"), "packet_type": packet_type, "since": since, "until": until,
        "min_importance": min_importance, "rank_by": rank_by, "record_access": record_access,
        "query_text": query_text, "agent_id": agent_id, "mode": mode, "ef_search": ef_search,
        "max_scan_tuples": max_scan_tuples}, rows(SemanticHit))
    return _with_packets(call, SemanticHit) if with_packets else call


def hybrid_search(query_text: str | None, query: VectorLike | None, k: int = 10, *,
                  embedding_type: EmbeddingType = "content", vector_weight: float | None = None,
                  text_weight: float | None = None, rrf_k: int | None = None, candidates: int | None = None,
                  importance_weight: float | None = None, recency_weight: float | None = None,
                  half_life: timedelta | None = None, record_access: bool = False,
                  agent_id: str | None = None, with_packets: bool = False) -> Call[list[HybridHit]]:
    """Full text and vector similarity fused by reciprocal rank fusion (memsub.hybrid_search).

    Either query may be None (one leg only). Unset weights take the function's defaults (docs/retrieval.md).
    ``with_packets``: each hit carries its packet (``hit.packet``), read in the same statement
    (:func:`_with_packets`).
    """
    call = function("hybrid_search", {
        "query_text": NULL if query_text is None else query_text, "query": NULL if query is None else AsVector(query),
        "k": k, "embedding_type": embedding_type, "vector_weight": vector_weight, "text_weight": text_weight,
        "rrf_k": rrf_k, "candidates": candidates, "importance_weight": importance_weight,
        "recency_weight": recency_weight, "half_life": half_life, "record_access": record_access,
        "agent_id": agent_id}, rows(HybridHit))
    return _with_packets(call, HybridHit) if with_packets else call


Hit = TypeVar("Hit", SemanticHit, HybridHit)


def _with_packets(search: Call[list[Hit]], model: type[Hit]) -> Call[list[Hit]]:
    """``search`` (its hits without packets) and each hit's packet in one statement: the packets of the hits'
    ids from memsub.get_packets_with_vector_values, their vectors in binary and put back into the envelopes here
    (:func:`memsub.packets.packet_with_vectors`). The function's own ``p_with_packets`` fills the packet with
    its vectors as JSON numbers, which the server writes out and the client parses again: three times the time of
    the search itself for ten 384-d hits. The hits keep their order; a hit whose packet is not visible has none."""
    hit_columns = tuple(name for name in model.model_fields if name != "packet")
    packet_columns = sql.SQL(", ").join(
        sql.SQL("p.{} as {}").format(sql.Identifier(name), sql.Identifier("packet." + name))
        for name in PACKET_WITH_VECTORS_COLUMNS)
    # The search's own statement is memsub._calls.function's (names quoted, every value a placeholder), taken
    # whole as the sub-select: nothing is formatted into it.
    assert isinstance(search.statement, bytes)
    statement = sql.SQL(
        "with hits as materialized (select h.*, row_number() over () as hit_order from ({}) h) "
        "select hits.*, {} from hits "
        "left join memsub.get_packets_with_vector_values(array(select hits.packet_id from hits)) p "
        "on p.packet_id = hits.packet_id order by hits.hit_order"
    ).format(sql.SQL(search.statement.decode()), packet_columns)

    def decode(found: list[Row]) -> list[Hit]:
        hits = []
        for row in found:
            hit = model.model_validate({name: row[name] for name in hit_columns})
            if row["packet.packet_id"] is not None:
                hit.packet = packet_with_vectors(row, "packet.")
            hits.append(hit)
        return hits

    return Call(statement.as_bytes(None), search.params, decode, vectors=True, binary=True)


def record_feedback(access_id: UUID | str, was_useful: bool, reason: str | None = None) -> Call[Feedback]:
    """Whether a recorded access was useful (memsub.record_feedback); learned by :func:`learn_importance`."""
    return function("record_feedback", {"access_id": access_id, "was_useful": was_useful, "reason": reason},
                    one(Feedback))


def learn_importance(*, access_rate: float | None = None, feedback_rate: float | None = None,
                     half_life: timedelta | None = None, floor: float | None = None,
                     idle_after: timedelta | None = None) -> Call[LearningRun]:
    """Fold the tenant's new accesses and feedback into importance, decay idle memories
    (memsub.learn_importance; unset parameters take the function's defaults). Maintenance of the whole tenant: a
    tenant_admin or platform_admin session's; an application session is refused (ContextError, SQLSTATE 42501)."""
    return function("learn_importance", {"access_rate": access_rate, "feedback_rate": feedback_rate,
                                         "half_life": half_life, "floor": floor, "idle_after": idle_after},
                    one(LearningRun))


class SearchArea(Area[SessionT]):
    """``session.search``: vectors in, and memories found by meaning, words, importance and feedback."""

    store_embedding = method(store_embedding)
    store_semantic_memory = method(store_semantic_memory)
    semantic_memory = method(search_semantic_memory)
    semantic = method(semantic_search)
    hybrid = method(hybrid_search)
    record_feedback = method(record_feedback)
    learn_importance = method(learn_importance)
