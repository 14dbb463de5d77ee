"""memsub's memory tools over the Model Context Protocol (``memsub mcp``; docs/mcp.md).

An assistant connected to this server can remember (write a packet, write a namespaced memory entry), recall
(semantic or hybrid search over packets, search of namespaced memory), replay a thread page by page, read the
knowledge graph as of a time, and tell memsub whether a recalled result was useful (importance learning).

Each tool is one transaction calling memsub's stored functions through :class:`memsub.client.Substrate`; the
database does the work and enforces every rule. Whom the tools act for -- tenant, organization, user, context
roles, session -- is fixed when the server starts (options, environment, or a signed context token) and is never
a tool argument: an assistant cannot choose or change its tenant. A failed call is a tool error naming the field
and the SQLSTATE, and its transaction is rolled back, so nothing is written.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any, Literal, TypeVar, cast
from uuid import UUID

import anyio
import mcp_types
import psycopg
from mcp.server import MCPServer
from mcp.server import stdio as sdk_stdio
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memsub._calls import NotJson, json_text, strings_with_places
from memsub.client import Substrate, TenantSession
from memsub.embedding import Embedder, embed_envelopes, embed_one
from memsub.errors import ConfigurationError, ContextError, InvalidInput, MemsubError, StateError
from memsub.graph import Direction, EdgeWindow, GraphPath, NeighbourhoodItem
from memsub.memory import MemoryType, memory_text
from memsub.models import DerivationType, PacketEnvelopeIn, PacketStoreRow, PacketWriteResult, Scope, as_utc
from memsub.search import EmbeddingType, Feedback, HybridHit, LearningRun, RankBy, SearchMode, SemanticHit

SERVER_NAME = "memsub"
ToolFunction = TypeVar("ToolFunction", bound=Callable[..., Any])
INSTRUCTIONS = (
    "Long-term memory in PostgreSQL. Use `remember` to store what should outlive this conversation and "
    "`recall` to find it again by meaning and words; results carry an access_id: send `feedback` on it when a "
    "result helped or misled you, so useful memories rank higher. `remember_entry` and `recall_entries` keep "
    "keyed, versioned notes in namespaces; `replay_thread` reads a thread in write order; `graph_traverse`, "
    "`graph_neighbourhood` and `graph_edges` read the knowledge graph, optionally as it was at a past time."
)


# recall's inputs that only one mode takes, besides the semantic filters (thread_id, tags, packet_type, since,
# until); ``method`` is memsub.semantic_search's mode (recall's own ``mode`` picks the function).
SEMANTIC_TUNING = ("min_importance", "rank_by", "method", "ef_search", "max_scan_tuples")
HYBRID_TUNING = ("vector_weight", "text_weight", "rrf_k", "candidates", "importance_weight", "recency_weight",
                 "half_life")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
# A recall logs its accesses (so they can get feedback): not read-only, though it changes no memory.
WRITING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                          open_world_hint=False)


# -- identity --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Identity:
    """Whom every tool call acts for: a context named by the server's configuration, or a signed context token
    (given as text, or as a file read again on every call, so a gateway can rotate short-lived tokens)."""

    tenant_id: UUID | None = None
    org_id: UUID | None = None
    user_id: UUID | None = None
    roles: tuple[str, ...] = ()
    session_id: str | None = None
    token: str | None = field(default=None, repr=False)
    token_file: Path | None = None

    def __post_init__(self) -> None:
        signed = self.token is not None or self.token_file is not None
        if self.token is not None and self.token_file is not None:
            raise ValueError("give a context token or a context token file, not both")
        if signed and (self.tenant_id or self.org_id or self.user_id or self.roles or self.session_id):
            raise ValueError("a signed context token names the tenant, organization, user, roles and session "
                             "itself: do not also give --tenant, --org, --user, --role or --session")
        if not signed and self.tenant_id is None:
            raise ValueError("the server needs an identity: --tenant (MEMSUB_TENANT) or a signed context token "
                             "(--context-token-file, MEMSUB_CONTEXT_TOKEN)")

    def describe(self) -> str:
        if self.token_file is not None:
            return f"the signed context in {self.token_file}"
        if self.token is not None:
            return "the signed context token"
        parts = [f"tenant {self.tenant_id}"]
        if self.org_id:
            parts.append(f"organization {self.org_id}")
        if self.user_id:
            parts.append(f"user {self.user_id}")
        if self.roles:
            parts.append("roles " + ",".join(self.roles))
        if self.session_id:
            parts.append(f"session {self.session_id}")
        return ", ".join(parts)

    @contextmanager
    def transaction(self, substrate: Substrate) -> Iterator[TenantSession]:
        """One transaction acting for this identity; committed on success, rolled back on any exception."""
        if self.token is not None or self.token_file is not None:
            token = self.token if self.token is not None else self._read_token()
            with substrate.signed(token) as session:
                yield session
            return
        with substrate.tenant(self.tenant_id, org_id=self.org_id, user_id=self.user_id, roles=self.roles,
                              session_id=self.session_id) as session:
            yield session

    def _read_token(self) -> str:
        assert self.token_file is not None
        try:
            return self.token_file.read_text(encoding="utf-8").strip()
        except OSError as error:
            raise ConfigurationError(f"cannot read the context token file {self.token_file}: "
                                     f"{error.strerror}") from error


# -- tool results ----------------------------------------------------------------------------------------------

class Fact(BaseModel):
    """A fact to file in the knowledge graph with the packet (memsub.assert_fact)."""

    subject: str = Field(min_length=1, description="What the fact is about, e.g. an entity name.")
    predicate: str = Field(min_length=1, description="The property or verb, e.g. 'prefers'.")
    object: Any = Field(description="The value: any JSON.")
    confidence: float | None = Field(default=None, strict=True, ge=0.0, le=1.0)


class Relationship(BaseModel):
    """An edge to add to the knowledge graph with the packet (memsub.upsert_relationship), valid from now."""

    source_entity: str = Field(min_length=1)
    relationship_type: str = Field(min_length=1, description="e.g. 'works_at'.")
    target_entity: str = Field(min_length=1)
    confidence: float | None = Field(default=None, strict=True, ge=0.0, le=1.0)


class RecallHit(BaseModel):
    """One recalled memory: a stored text, how it ranked, and the access_id to send feedback on."""

    packet_id: UUID
    embedding_id: UUID | None
    chunk_index: int
    text: str | None
    score: float = Field(description="semantic: 1 - cosine distance (higher is nearer); hybrid: the fused score.")
    distance: float | None
    importance_score: float | None
    vector_rank: int | None = None
    text_rank: int | None = None
    access_id: UUID | None = Field(description="Give this to the feedback tool.")
    packet: ThreadPacket | None = Field(default=None, description="The hit's packet, when asked with_packets.")


class RecallResult(BaseModel):
    mode: Literal["semantic", "hybrid"]
    hits: list[RecallHit]


class EntryHit(BaseModel):
    """The latest live version of a namespaced memory entry, with its rank (memsub.memory_search)."""

    namespace: str
    key: str
    version: int
    value: Any
    memory_type: str
    score: float
    vector_rank: int | None
    text_rank: int | None


class EntryRecallResult(BaseModel):
    hits: list[EntryHit]


class EntryWritten(BaseModel):
    """The version memsub.memory_write stored; pass ``version`` as ``expected_version`` to update it."""

    id: UUID
    namespace: str
    key: str
    version: int
    memory_type: str
    created_at: datetime


class ThreadPacket(BaseModel):
    """One packet of a thread, in write order."""

    write_seq: int = Field(description="Write order; the cursor to continue after.")
    packet_id: UUID
    packet_type: str
    timestamp: datetime
    parent_ids: list[UUID]
    tags: list[str]
    scope: str
    importance_score: float
    payload: Any


def _thread_packet(row: PacketStoreRow | None) -> ThreadPacket | None:
    """A packet as the tools show it (replay_thread, recall with_packets)."""
    if row is None:
        return None
    return ThreadPacket(write_seq=row.write_seq, packet_id=row.packet_id, packet_type=row.packet_type,
                        timestamp=row.timestamp, parent_ids=row.parent_ids, tags=row.tags, scope=row.scope,
                        importance_score=row.importance_score, payload=row.payload)


class ThreadPage(BaseModel):
    thread_id: UUID
    packets: list[ThreadPacket]
    next_cursor: int | None = Field(description=(
        "Pass as after_cursor for the next page; set when this page is full (the next one may be empty), "
        "null when it is not."))


class TraverseResult(BaseModel):
    as_of: datetime | None
    paths: list[GraphPath]


class NeighbourhoodResult(BaseModel):
    as_of: datetime | None
    items: list[NeighbourhoodItem]


class EdgesResult(BaseModel):
    as_of: datetime | None
    edges: list[EdgeWindow]


class FeedbackResult(BaseModel):
    feedback: Feedback
    learning_run: LearningRun | None = Field(description="The importance learning run, when learn_now was set.")


# -- the tools -------------------------------------------------------------------------------------------------

def _tool_error(error: MemsubError, writes: bool) -> ToolError:
    kind = type(error).__name__
    where = [f"SQLSTATE {error.sqlstate}"] if error.sqlstate else []
    if error.field:
        where.append(f"field {error.field}")
    suffix = "; nothing was written" if writes else ""
    return ToolError(f"{kind} ({', '.join(where) or 'no SQLSTATE'}): {error}{suffix}")


def _not_json(error: NotJson, writes: bool) -> ToolError:
    """A JSON input holding what JSON has not (NaN or an infinity, which the server's JSON parser reads) as the
    tool error of bad input, naming its place."""
    return _tool_error(InvalidInput(str(error), sqlstate="22023", field=error.field), writes)


def _check_json(field: str, value: Any) -> None:
    """A JSON input as the client will send it, checked before anything is embedded or written: NaN, an infinity
    or anything else that is not JSON is refused naming its place (``data.scores[2]``)."""
    try:
        json_text(value, field)
    except NotJson as error:
        raise _not_json(error, True) from error
    except MemsubError as error:  # text that PostgreSQL cannot hold (a NUL, a lone surrogate)
        raise _tool_error(error, True) from error


def check_identity(substrate: Substrate, identity: Identity) -> int:
    """Open one transaction for the identity (the database checks the login's binding, or the token) and return
    the installation's vector dimension; raises the memsub error when the identity is refused."""
    with identity.transaction(substrate) as session:
        return session.vector_dimension()


class MemoryTools:
    """The operations behind the MCP tools, each one transaction for the configured identity."""

    def __init__(self, substrate: Substrate, identity: Identity, embedder: Embedder,
                 agent_id: str | None = None) -> None:
        self.substrate = substrate
        self.identity = identity
        self.embedder = embedder
        self.agent_id = agent_id

    @contextmanager
    def _memory(self, writes: bool = False) -> Iterator[TenantSession]:
        interruption = _INTERRUPTION.get()
        try:
            with self.identity.transaction(self.substrate) as session:
                if interruption is None:
                    yield session
                    return
                with interruption.running_on(session.connection):
                    yield session
        except MemsubError as error:
            raise _tool_error(error, writes) from error
        except NotJson as error:
            raise _not_json(error, writes) from error

    def _embed(self, text: str) -> list[float]:
        return embed_one(self.embedder, text)

    def remember(self, text: str, packet_type: str, tags: Sequence[str], thread_id: UUID | None,
                 parent_ids: Sequence[UUID], derivation_type: str | None, importance: float | None, scope: Scope,
                 data: dict[str, Any] | None, facts: Sequence[Fact], relationships: Sequence[Relationship],
                 embedding_type: EmbeddingType) -> PacketWriteResult:
        if not text.strip():
            raise ToolError("field text: must not be empty; nothing was written")
        if data is not None:
            _check_json("data", data)
        for index, fact in enumerate(facts):
            _check_json(f"facts[{index}].object", fact.object)
        memory_fields: dict[str, Any] = {}
        if facts:
            memory_fields["facts"] = [f.model_dump(exclude_none=True) for f in facts]
        if relationships:
            memory_fields["relationships"] = [r.model_dump(exclude_none=True) for r in relationships]
        payload: dict[str, Any] = {"text": text}
        if data is not None:
            payload["data"] = data
        envelope: dict[str, Any] = {
            "packet_type": packet_type, "payload": payload, "tags": list(tags), "scope": scope,
            "thread_id": thread_id, "importance_score": importance, "memory": memory_fields,
            "session_id": self.identity.session_id,
        }
        if parent_ids or derivation_type:
            envelope["lineage"] = {"parent_ids": list(parent_ids), "derivation_type": derivation_type}
        if self.agent_id:
            envelope["provenance"] = {"agent_id": self.agent_id}
        embed_envelopes([envelope], self.embedder, embedding_type)
        try:
            model = PacketEnvelopeIn.model_validate({k: v for k, v in envelope.items() if v is not None})
        except MemsubError as error:
            raise _tool_error(error, True) from error
        except NotJson as error:
            raise _not_json(error, True) from error
        with self._memory(writes=True) as session:
            return session.packets.write(model)

    def remember_entry(self, namespace: str, key: str, value: Any, expected_version: int | None,
                       memory_type: MemoryType, metadata: dict[str, Any] | None) -> EntryWritten:
        _check_json("value", value)
        if metadata is not None:
            _check_json("metadata", metadata)
        text = memory_text(key, value)
        with self._memory(writes=True) as session:
            entry = session.memory.write(namespace, key, value, expected_version=expected_version,
                                         memory_type=memory_type, metadata=metadata, embedding=self._embed(text))
        return EntryWritten.model_validate(entry.model_dump())

    def recall(self, query: str, k: int, mode: Literal["semantic", "hybrid"], embedding_type: EmbeddingType,
               thread_id: UUID | None, tags: Sequence[str] | None, packet_type: str | None,
               since: datetime | None, until: datetime | None, with_packets: bool = False,
               tuning: dict[str, Any] | None = None) -> RecallResult:
        """``tuning``: the other arguments of the mode's function (:data:`SEMANTIC_TUNING`, :data:`HYBRID_TUNING`,
        ``method`` standing for semantic_search's mode); None values take the function's defaults."""
        if not query.strip():
            raise ToolError("field query: must not be empty")
        given = {name: value for name, value in (tuning or {}).items() if value is not None}
        filters = {"thread_id": thread_id, "tags": tags, "packet_type": packet_type, "since": since, "until": until}
        semantic_only = [name for name, value in filters.items() if value is not None]
        semantic_only += [name for name in given if name in SEMANTIC_TUNING]
        if mode == "hybrid" and semantic_only:
            raise ToolError(f"field {semantic_only[0]}: applies to mode 'semantic' only (hybrid search ranks the "
                            "whole tenant's memory by meaning and words)")
        hybrid_only = [name for name in given if name in HYBRID_TUNING]
        if mode == "semantic" and hybrid_only:
            raise ToolError(f"field {hybrid_only[0]}: applies to mode 'hybrid' only")
        unknown = sorted(set(given) - set(SEMANTIC_TUNING) - set(HYBRID_TUNING))
        if unknown:
            raise ToolError(f"field {unknown[0]}: not a search argument")
        if "half_life" in given:
            try:
                given["half_life"] = timedelta(seconds=given["half_life"])
            except (OverflowError, ValueError) as error:
                raise ToolError(f"field half_life: {given['half_life']!r} seconds is not a usable interval (at "
                                f"most {timedelta.max.total_seconds():.0f} seconds)") from error
        if "method" in given:
            given["mode"] = given.pop("method")
        vector = self._embed(query)
        with self._memory() as session:
            if mode == "semantic":
                semantic: list[SemanticHit] = session.search.semantic(
                    vector, k, embedding_type=embedding_type, thread_id=thread_id, tags=tags,
                    packet_type=packet_type, since=as_utc(since), until=as_utc(until), record_access=True,
                    query_text=query, agent_id=self.agent_id, with_packets=with_packets, **given)
                hits = [RecallHit(packet_id=h.packet_id, embedding_id=h.embedding_id, chunk_index=h.chunk_index,
                                  text=h.chunk_text, score=1.0 - h.distance, distance=h.distance,
                                  importance_score=h.importance_score, access_id=h.access_id,
                                  packet=_thread_packet(h.packet)) for h in semantic]
            else:
                hybrid: list[HybridHit] = session.search.hybrid(
                    query, vector, k, embedding_type=embedding_type, record_access=True, agent_id=self.agent_id,
                    with_packets=with_packets, **given)
                hits = [RecallHit(packet_id=h.packet_id, embedding_id=h.embedding_id, chunk_index=h.chunk_index,
                                  text=h.chunk_text, score=h.score, distance=h.distance,
                                  importance_score=h.importance_score, vector_rank=h.vector_rank,
                                  text_rank=h.text_rank, access_id=h.access_id,
                                  packet=_thread_packet(h.packet)) for h in hybrid]
        return RecallResult(mode=mode, hits=hits)

    def recall_entries(self, query: str, k: int, namespace_prefix: str | None) -> EntryRecallResult:
        if not query.strip():
            raise ToolError("field query: must not be empty")
        vector = self._embed(query)
        with self._memory() as session:
            rows = session.memory.search(query, vector, k=k, namespace_prefix=namespace_prefix)
        return EntryRecallResult(hits=[EntryHit.model_validate(row.model_dump()) for row in rows])

    def replay_thread(self, thread_id: UUID, limit: int, after_cursor: int | None) -> ThreadPage:
        with self._memory() as session:
            rows = session.packets.get_thread(thread_id, limit=limit, after_cursor=after_cursor)
        packets = [packet for packet in map(_thread_packet, rows) if packet is not None]
        return ThreadPage(thread_id=thread_id, packets=packets,
                          next_cursor=rows[-1].write_seq if len(rows) == limit else None)

    def graph_traverse(self, entity: str, max_depth: int, relationship_types: Sequence[str] | None,
                       direction: Direction, min_confidence: float | None, limit: int | None,
                       as_of: datetime | None) -> TraverseResult:
        when = as_utc(as_of)
        with self._memory() as session:
            paths = session.graph.traverse(entity, max_depth, relationship_types=relationship_types,
                                           min_confidence=min_confidence, direction=direction, limit=limit, as_of=when)
        return TraverseResult(as_of=when, paths=paths)

    def graph_neighbourhood(self, entity: str, min_confidence: float | None, limit: int | None,
                            as_of: datetime | None) -> NeighbourhoodResult:
        when = as_utc(as_of)
        with self._memory() as session:
            items = session.graph.entity_neighbourhood(entity, min_confidence=min_confidence, limit=limit, as_of=when)
        return NeighbourhoodResult(as_of=when, items=items)

    def graph_edges(self, as_of: datetime | None, entity: str | None,
                    relationship_type: str | None) -> EdgesResult:
        when = as_utc(as_of)
        with self._memory() as session:
            edges = session.graph.edges_as_of(when, entity=entity, relationship_type=relationship_type)
        return EdgesResult(as_of=when, edges=[EdgeWindow.model_validate(e.model_dump()) for e in edges])

    def feedback(self, access_id: UUID, was_useful: bool, reason: str | None, learn_now: bool) -> FeedbackResult:
        with self._memory(writes=True) as session:
            recorded = session.search.record_feedback(access_id, was_useful, reason)
            run = self._learn_now(session) if learn_now else None
        return FeedbackResult(feedback=recorded, learning_run=run)

    def _learn_now(self, session: TenantSession) -> LearningRun:
        """memsub.learn_importance: maintenance of the whole tenant, which the database allows a tenant_admin or
        platform_admin context only. Its refusal names learn_now, and the feedback goes with the transaction."""
        try:
            return session.search.learn_importance()
        except ContextError as error:
            raise ContextError(
                "learn_now needs a tenant_admin or platform_admin context (importance is learned for the whole "
                f"tenant), and this server acts for {self.identity.describe()}: leave learn_now out and let the "
                f"scheduled `memsub maintain` learn it ({error})", sqlstate=error.sqlstate, field="learn_now",
            ) from error


# -- the server ------------------------------------------------------------------------------------------------

Name = Annotated[str, Field(min_length=1, max_length=1000)]
# Integer, boolean and number inputs are strict: the JSON type their schema names, not true for 1 or "5" for 5.
K = Annotated[int, Field(strict=True, ge=1, le=1000,
                         description="How many results (at most the installation's max_k).")]
Flag = Annotated[bool, Field(strict=True)]
Confidence = Annotated[float | None, Field(strict=True, ge=0.0, le=1.0)]
Limit = Annotated[int | None, Field(strict=True, ge=1, le=10_000)]
AsOf = Annotated[datetime | None, Field(
    description="Read the graph as it was at this ISO 8601 time (no offset: UTC); default now.")]


def build_server(tools: MemoryTools) -> MCPServer:
    """An MCP server exposing the memory tools; the identity and the database are those of ``tools``."""
    registered: list[Tool] = []

    def tool(annotations: ToolAnnotations) -> Callable[[ToolFunction], ToolFunction]:
        def register(function: ToolFunction) -> ToolFunction:
            registered.append(_refusing_unknown_arguments(Tool.from_function(function, annotations=annotations)))
            return function
        return register

    @tool(WRITING)
    def remember(
        text: Annotated[str, Field(min_length=1, max_length=100_000,
                                   description="What to remember, in words: it is embedded and searchable.")],
        packet_type: Annotated[str, Field(min_length=1, max_length=200,
                                          description="Kind of memory, e.g. note, event, observation.")] = "note",
        tags: Annotated[list[Name], Field(max_length=100)] = [],  # noqa: B006 - read only, copied by pydantic
        thread_id: Annotated[UUID | None, Field(description="Conversation or task thread to file it in.")] = None,
        parent_ids: Annotated[list[UUID], Field(max_length=100,
                                                description="Packets this one derives from.")] = [],  # noqa: B006
        derivation_type: DerivationType | None = None,
        importance: Annotated[float | None, Field(strict=True, ge=0.0, le=1.0)] = None,
        scope: Annotated[Scope, Field(description="shared: the tenant; cursor and l-private: narrower.")] = "shared",
        data: Annotated[dict[str, Any] | None, Field(description="Structured payload kept with the text.")] = None,
        facts: Annotated[list[Fact], Field(max_length=100)] = [],  # noqa: B006
        relationships: Annotated[list[Relationship], Field(max_length=100)] = [],  # noqa: B006
        embedding_type: EmbeddingType = "content",
    ) -> PacketWriteResult:
        """Store a memory as a packet (memsub.write_packet): the text is embedded for recall, facts and
        relationships go into the knowledge graph, all in one transaction. Returns the packet's id, thread,
        lineage and what was written."""
        return tools.remember(text, packet_type, tags, thread_id, parent_ids, derivation_type, importance, scope,
                              data, facts, relationships, embedding_type)

    @tool(WRITING)
    def remember_entry(
        namespace: Annotated[str, Field(min_length=1, max_length=1000, description=(
            "project:<id>, app:<name>, user:<user id> or session:<session id>, optionally followed by :<more>, "
            "e.g. user:<user id>:preferences; the database decides which ones you may write."))],
        key: Name,
        value: Annotated[Any, Field(description="The entry's value: any JSON but null (a value is required).")],
        expected_version: Annotated[int | None, Field(strict=True, ge=1, description=(
            "The version you read, to update it; omit to create a new key. A stale version is refused."))] = None,
        memory_type: MemoryType = "semantic",
        metadata: dict[str, Any] | None = None,
    ) -> EntryWritten:
        """Write the next version of a namespaced memory entry (memsub.memory_write), with optimistic locking."""
        return tools.remember_entry(namespace, key, value, expected_version, memory_type, metadata)

    @tool(WRITING)
    def recall(
        query: Annotated[str, Field(min_length=1, max_length=10_000, description="What you are looking for.")],
        k: K = 5,
        mode: Annotated[Literal["semantic", "hybrid"], Field(description=(
            "hybrid: meaning and words fused by reciprocal rank fusion; semantic: meaning only, with filters."
        ))] = "hybrid",
        embedding_type: EmbeddingType = "content",
        thread_id: Annotated[UUID | None, Field(description="semantic only: within this thread.")] = None,
        tags: Annotated[list[Name] | None, Field(description="semantic only: packets with all these tags.")] = None,
        packet_type: Annotated[str | None, Field(description="semantic only: packets of this type.")] = None,
        since: Annotated[datetime | None, Field(description="semantic only: packets timestamped since then.")] = None,
        until: Annotated[datetime | None, Field(description="semantic only: packets timestamped before then.")] = None,
        with_packets: Annotated[bool, Field(strict=True, description=(
            "Each hit carries its packet (type, time, parents, tags, payload), read with the hits."))] = False,
        min_importance: Annotated[float | None, Field(
            strict=True, description="semantic only: packets at least this important (0-1).")] = None,
        rank_by: Annotated[RankBy | None, Field(description=(
            "semantic only: by distance (default) or by the combined score of distance, importance and recency."
        ))] = None,
        method: Annotated[SearchMode | None, Field(description=(
            "semantic only: exact scan or HNSW walk; auto (default) chooses by cost and measured recall."))] = None,
        ef_search: Annotated[int | None, Field(strict=True, description=(
            "semantic only: HNSW candidate list size, 1 to 1000 (default derived from k and the tenant)."))] = None,
        max_scan_tuples: Annotated[int | None, Field(strict=True, description=(
            "semantic only: bound of the iterative HNSW scan (default 20000)."))] = None,
        vector_weight: Annotated[float | None, Field(strict=True, description=(
            "hybrid only: weight of the vector rank (default 1)."))] = None,
        text_weight: Annotated[float | None, Field(strict=True, description=(
            "hybrid only: weight of the text rank (default 1)."))] = None,
        rrf_k: Annotated[int | None, Field(strict=True, description=(
            "hybrid only: reciprocal rank fusion constant (default 60)."))] = None,
        candidates: Annotated[int | None, Field(strict=True, description=(
            "hybrid only: candidates per leg (default max(50, 4k))."))] = None,
        importance_weight: Annotated[float | None, Field(strict=True, description=(
            "hybrid only: boost by the packet's importance (default 0)."))] = None,
        recency_weight: Annotated[float | None, Field(strict=True, description=(
            "hybrid only: boost by how recently the packet was written or used (default 0)."))] = None,
        half_life: Annotated[float | None, Field(strict=True, description=(
            "hybrid only: seconds in which the recency boost halves, at least 1 (default 30 days: 2592000)."
        ))] = None,
    ) -> RecallResult:
        """Find remembered texts by meaning (memsub.semantic_search) or by meaning and words
        (memsub.hybrid_search). Each hit's access is logged; send feedback on its access_id."""
        tuning = {"min_importance": min_importance, "rank_by": rank_by, "method": method, "ef_search": ef_search,
                  "max_scan_tuples": max_scan_tuples, "vector_weight": vector_weight, "text_weight": text_weight,
                  "rrf_k": rrf_k, "candidates": candidates, "importance_weight": importance_weight,
                  "recency_weight": recency_weight, "half_life": half_life}
        return tools.recall(query, k, mode, embedding_type, thread_id, tags, packet_type, since, until,
                            with_packets, tuning)

    @tool(READ_ONLY)
    def recall_entries(
        query: Annotated[str, Field(min_length=1, max_length=10_000)],
        k: K = 5,
        namespace_prefix: Annotated[str | None, Field(description=(
            "Only namespaces under this prefix, by whole segments: kind[:segment...], e.g. user:<id> covers "
            "user:<id> and user:<id>:notes."))] = None,
    ) -> EntryRecallResult:
        """Find namespaced memory entries by meaning and words (memsub.memory_search): the latest live version of
        each matching key."""
        return tools.recall_entries(query, k, namespace_prefix)

    @tool(READ_ONLY)
    def replay_thread(
        thread_id: UUID,
        limit: Annotated[int, Field(strict=True, ge=1, le=10_000, description="Packets per page.")] = 100,
        after_cursor: Annotated[int | None, Field(strict=True, ge=0, description=(
            "The next_cursor of the previous page; omit for the first page."))] = None,
    ) -> ThreadPage:
        """One page of a thread in write order (parents before children) with the cursor of the next page
        (memsub.get_thread)."""
        return tools.replay_thread(thread_id, limit, after_cursor)

    @tool(READ_ONLY)
    def graph_traverse(
        entity: Name,
        max_depth: Annotated[int, Field(strict=True, ge=1, le=10)] = 3,
        relationship_types: Annotated[list[Name] | None, Field(description="Follow only these types.")] = None,
        direction: Direction = "outgoing",
        min_confidence: Confidence = None,
        limit: Limit = None,
        as_of: AsOf = None,
    ) -> TraverseResult:
        """Entities reachable from an entity through the edges valid at as_of, each once with its most confident
        shortest path (memsub.traverse_graph)."""
        return tools.graph_traverse(entity, max_depth, relationship_types, direction, min_confidence, limit, as_of)

    @tool(READ_ONLY)
    def graph_neighbourhood(
        entity: Name,
        min_confidence: Confidence = None,
        limit: Limit = None,
        as_of: AsOf = None,
    ) -> NeighbourhoodResult:
        """An entity's relationships in both directions valid at as_of, and the facts about it
        (memsub.entity_neighbourhood)."""
        return tools.graph_neighbourhood(entity, min_confidence, limit, as_of)

    @tool(READ_ONLY)
    def graph_edges(
        as_of: AsOf = None,
        entity: Annotated[str | None, Field(min_length=1, max_length=1000,
                                            description="Only edges touching this entity.")] = None,
        relationship_type: Annotated[str | None, Field(min_length=1, max_length=1000)] = None,
    ) -> EdgesResult:
        """The knowledge-graph edges valid at as_of, with their validity windows (memsub.edges_as_of)."""
        return tools.graph_edges(as_of, entity, relationship_type)

    @tool(WRITING)
    def feedback(
        access_id: Annotated[UUID, Field(description="The access_id of a recall hit.")],
        was_useful: Flag,
        reason: Annotated[str | None, Field(max_length=10_000)] = None,
        learn_now: Annotated[bool, Field(strict=True, description=(
            "Also fold the tenant's new accesses and feedback into importance now (memsub.learn_importance); "
            "needs a server acting in a tenant_admin or platform_admin context, and is refused otherwise. "
            "Without it the next scheduled learning run does."))] = False,
    ) -> FeedbackResult:
        """Say whether a recalled result was useful (memsub.record_feedback); importance learning raises useful
        memories and lowers misleading ones."""
        return tools.feedback(access_id, was_useful, reason, learn_now)

    return _MemoryServer(SERVER_NAME, instructions=INSTRUCTIONS, version=_version(), tools=registered)


class _MemoryServer(MCPServer):
    """The SDK's server, answering a call of a tool it does not have with the JSON-RPC error the MCP
    specification gives for it (-32602, invalid params), where the SDK returns a tool result with ``isError``."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name not in {tool.name for tool in await self.list_tools()}:
            raise MCPError(mcp_types.INVALID_PARAMS, f"Unknown tool: {name}")
        return await super().call_tool(name, arguments, context)


def _refusal(error: ValidationError) -> str:
    """Arguments the input schema refuses, in one line: each field with what is wrong with it, in the order of the
    tool's inputs (``field k: Input should be greater than or equal to 1; field query: Field required``); not the
    validation library's report of several lines with links and the values given."""
    parts: list[str] = []
    for item in error.errors(include_url=False, include_input=False, include_context=False):
        place = ".".join(str(part) for part in item["loc"]) or "arguments"
        part = f"field {place}: {' '.join(str(item['msg']).split())}"
        if part not in parts:
            parts.append(part)
    return "; ".join(parts)


class _Interruption:
    """Whether the MCP request a tool call serves was cancelled (``notifications/cancelled``), and the connection
    of the call's transaction meanwhile. The SDK runs a tool in a worker thread, which its cancellation waits for
    rather than stops: the call would run to its end and commit what the client was told nothing of. Cancelled, the
    call's statement is cancelled on the server and its transaction rolled back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._connection: psycopg.Connection[Any] | None = None

    def cancel(self) -> None:
        """Mark the call cancelled, and cancel the statement its transaction runs, if any, from a thread of its
        own: a cancel request is a connection to the server, which the event loop does not wait for."""
        with self._lock:
            self._cancelled = True
        threading.Thread(target=self._cancel_statement, name="memsub-mcp-cancel", daemon=True).start()

    def _cancel_statement(self) -> None:
        """Under the lock, so never once the connection is on its way back to the pool, where it may serve
        another call."""
        with self._lock:
            if self._connection is not None:
                with contextlib.suppress(psycopg.Error):
                    self._connection.cancel_safe(timeout=5.0)

    def _refuse_cancelled(self) -> None:
        if self._cancelled:
            raise StateError("the request was cancelled: nothing of this call was written")

    @contextmanager
    def running_on(self, connection: psycopg.Connection[Any]) -> Iterator[None]:
        """The body of the call's transaction on ``connection``: refused once cancelled, at its start and before
        its commit (a cancellation arriving as it commits comes too late)."""
        with self._lock:
            self._refuse_cancelled()
            self._connection = connection
        try:
            yield
            with self._lock:
                self._refuse_cancelled()
        finally:
            with self._lock:
                self._connection = None


_INTERRUPTION: contextvars.ContextVar[_Interruption | None] = contextvars.ContextVar("memsub_mcp_interruption",
                                                                                     default=None)


async def _cancelling_on_cancel(interruption: _Interruption, finished: anyio.Event) -> None:
    """Wait; on the request's cancellation (not the call's own end), cancel the call's database work."""
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        if not finished.is_set():
            interruption.cancel()
        raise


class _MemoryTool(Tool):
    """A tool whose refused arguments are one line of text (:func:`_refusal`), as docs/mcp.md ("Errors") says, and
    whose database work a cancelled request cancels (:class:`_Interruption`)."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        interruption = _Interruption()
        finished = anyio.Event()
        token = _INTERRUPTION.set(interruption)  # the worker thread of the call runs in a copy of this context
        failure: Exception | None = None
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_cancelling_on_cancel, interruption, finished)
                try:
                    result = await super().run(arguments, context, convert_result)
                except Exception as error:  # raised below: the task group would wrap it in an ExceptionGroup
                    failure = error
                finally:
                    finished.set()
                    group.cancel_scope.cancel()
            if failure is not None:
                raise failure
            return result
        except ToolError as error:
            cause = error.__cause__
            if isinstance(error, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(f"Error executing tool {self.name}: {_refusal(cause)}") from cause
        finally:
            _INTERRUPTION.reset(token)


def _refusing_unknown_arguments(tool: Tool) -> Tool:
    """``tool`` with an argument model that refuses an argument it does not name, and an input schema that says so
    (``additionalProperties: false``): the SDK's model drops such an argument, so a misspelt one (``tag`` for
    ``tags``) was ignored and the memory stored without it. A refusal is one line (:class:`_MemoryTool`)."""
    model = tool.fn_metadata.arg_model
    strict: type[ArgModelBase] = type(model.__name__, (model,), {
        "__module__": model.__module__, "model_config": ConfigDict(**model.model_config, extra="forbid")})
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return _MemoryTool.model_construct(**{name: getattr(tool, name) for name in Tool.model_fields})


# -- stdio: a line the SDK cannot read is answered --------------------------------------------------------------

# How deep the SDK's JSON parser (pydantic-core's) reads a message: a message nested deeper is not read.
SDK_JSON_DEPTH = 200


def _unpaired_surrogate(value: Any) -> str | None:
    """The place (``params.arguments.tags[1]``) of the first string or key of a parsed message that holds an
    unpaired surrogate (which JSON's ``\\ud800`` escape spells and which has no UTF-8 form), or None."""
    return next((path or "message" for text, path in strings_with_places(value, "")
                 if not text.isascii() and any("\ud800" <= char <= "\udfff" for char in text)), None)


def _depth(value: Any) -> int:
    """How many arrays and objects deep a parsed JSON value nests."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth + 1)
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def unreadable_answer(error: Exception) -> mcp_types.JSONRPCError:
    """The JSON-RPC error answering a stdio line the SDK could not read (``error``: its refusal), with the
    request's id when the line is JSON that holds one: -32700 when the line is not JSON; -32602 naming the place
    of an unpaired surrogate; -32600 for JSON nested past what the SDK reads, a batch, or anything else that is no
    JSON-RPC 2.0 message. Python's parser reads what the SDK's refuses (surrogates, depth) to find the id."""
    details = error.errors() if isinstance(error, ValidationError) else []
    # The line, or the message it holds: the input of the parser's error, of an error about the message as a whole
    # (one member of the union of message kinds), or of a missing field (the message the field is missing from).
    found = next((item["input"] for item in details if item["type"] == "json_invalid" or len(item["loc"]) == 1
                  or (item["type"] == "missing" and len(item["loc"]) == 2)), None)
    message: Any = found
    if isinstance(found, str):
        try:
            message = json.loads(found)
        except RecursionError:
            return _rpc_error(None, mcp_types.INVALID_REQUEST, "Invalid request: the message is nested more deeply "
                              f"than the {SDK_JSON_DEPTH} levels this server reads")
        except ValueError as not_json:
            return _rpc_error(None, mcp_types.PARSE_ERROR, f"Parse error: the line is not JSON ({not_json})")
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    if isinstance(message, list):
        return _rpc_error(None, mcp_types.INVALID_REQUEST, "Invalid request: a batch (a JSON array of messages) is "
                          "not part of MCP; send each message on a line of its own")
    place = _unpaired_surrogate(message)
    if place is not None:
        return _rpc_error(request_id, mcp_types.INVALID_PARAMS, f"Invalid params: {place} holds an unpaired "
                          "surrogate (a \\ud800-\\udfff escape without its pair), which has no UTF-8 form")
    if _depth(message) > SDK_JSON_DEPTH:
        return _rpc_error(request_id, mcp_types.INVALID_REQUEST, "Invalid request: the message is nested more "
                          f"deeply than the {SDK_JSON_DEPTH} levels this server reads")
    kind = "JSONRPCRequest" if request_id is not None else "JSONRPCNotification"
    why = next((f"{'.'.join(map(str, item['loc'][1:]))}: {item['msg']}" for item in details
                if item["loc"][:1] == (kind,) and len(item["loc"]) > 1), None)
    return _rpc_error(request_id, mcp_types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request, "
                      "notification or response" + (f" ({why})" if why else ""))


def _rpc_error(request_id: int | str | None, code: int, message: str) -> mcp_types.JSONRPCError:
    return mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=mcp_types.ErrorData(code=code, message=message))


class _AnsweringReadStream:
    """The stdio transport's read stream, less the lines the SDK could not read, each answered on the write stream
    (:func:`unreadable_answer`). The SDK drops them with a debug log, so a client waits for ever for the answer to
    a request whose line it does not like (a lone surrogate, deep nesting) or to a batch."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner, self._write = inner, write

    def __getattr__(self, name: str) -> Any:  # last_context: the sender context of the item last received
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._write.send(SessionMessage(unreadable_answer(item)))

    def __aiter__(self) -> _AnsweringReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _AnsweringReadStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None,
                        exc_tb: TracebackType | None) -> bool | None:
        result: bool | None = await self._inner.__aexit__(exc_type, exc_val, exc_tb)
        return result


def invalid_id_answer(line: str) -> mcp_types.JSONRPCError | None:
    """The answer to a request line whose ``id`` MCP does not allow (JSON-RPC 2.0 and MCP: a string or an integer;
    MCP: never null), or None for any other line. The SDK reads such a request as a notification, which asks for no
    answer, so its client would wait for ever: it is answered -32600 with id null, JSON-RPC's id for a request
    whose id could not be read. A line that is not JSON, or not an object, is left to the SDK (and to
    :func:`unreadable_answer`)."""
    if '"id"' not in line and "\\u" not in line:  # an escape could spell the member's name
        return None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    request_id = message["id"]
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return None
    return _rpc_error(None, mcp_types.INVALID_REQUEST, f"Invalid request: id must be a string or an integer, not "
                      f"{json.dumps(request_id)[:40]}")


class _IdCheckedLines:
    """The stdin lines the SDK's reader reads, less each request with an id MCP does not allow, answered on the
    write stream once it is attached (:func:`invalid_id_answer`)."""

    def __init__(self, lines: Any) -> None:
        self._lines, self._write = lines, None
        self._attached = anyio.Event()

    def attach(self, write: Any) -> None:
        self._write = write
        self._attached.set()

    def __aiter__(self) -> Any:
        return self._checked()

    async def _checked(self) -> Any:
        async for line in self._lines:
            answer = invalid_id_answer(line)
            if answer is None:
                yield line
                continue
            await self._attached.wait()
            assert self._write is not None
            await self._write.send(SessionMessage(answer))


async def serve_stdio(server: MCPServer) -> None:
    """``server`` over stdio as ``server.run("stdio")`` serves it, but answering each line the SDK cannot read
    with a JSON-RPC error instead of dropping it, and each request whose id is not a string or an integer, which
    the SDK would read as a notification. stdin is claimed as the SDK claims it (its descriptor pointed at the
    null device while serving), so that the lines can be read before the SDK reads them."""
    lowlevel = server._lowlevel_server  # the SDK's run_stdio_async, with the read stream wrapped
    buffer, release = sdk_stdio._claim_fd(0, sys.stdin, "rb", sdk_stdio._open_stdin_diversion)
    try:
        lines = _IdCheckedLines(anyio.wrap_file(sdk_stdio._UnownedTextWrapper(buffer, encoding="utf-8",
                                                                             errors="replace")))
        async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
            lines.attach(write_stream)
            await lowlevel.run(_AnsweringReadStream(read_stream, write_stream), write_stream,
                               lowlevel.create_initialization_options())
    finally:
        if release is not None:
            release()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memsub")
    except PackageNotFoundError:
        return "0"


def tool_names() -> list[str]:
    """The tools every memsub MCP server exposes, in registration order (docs/mcp.md lists each)."""
    return ["remember", "remember_entry", "recall", "recall_entries", "replay_thread", "graph_traverse",
            "graph_neighbourhood", "graph_edges", "feedback"]

