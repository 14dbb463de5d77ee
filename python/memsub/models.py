"""Typed models of the PacketEnvelope contract (seed 004) and of the rows memsub returns.

The database is the authority on validation; these models give callers types and early, local errors for
the obvious mistakes. Rows are decoded by column name, never by position.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self, overload
from uuid import UUID, uuid4

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from memsub.errors import LocalValidationError

DerivationType = Literal["split", "merge", "transform", "inference"]
"""How a packet derives from its parents (the database's derivation_types())."""
Scope = Literal["shared", "cursor", "l-private"]
"""Who may read a packet (the database's packet_scopes())."""


def _local_error(error: ValidationError) -> LocalValidationError:
    details = error.errors()
    field = ".".join(str(part) for part in details[0]["loc"]) if details else None
    message = f"field {field or '?'}: {details[0]['msg'] if details else error}"
    local = LocalValidationError(message, sqlstate="22023", field=field)
    local.errors = error.errors()  # type: ignore[attr-defined]
    return local


class InputModel(BaseModel):
    """A model the caller builds: a value it rejects raises LocalValidationError (an InvalidInput, a ValueError)
    naming the field, before anything reaches the database."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise _local_error(error) from error

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as error:
            raise _local_error(error) from error


class PacketLineage(InputModel):
    """DAG-style parent tracking (v1.1.0). ``generation`` and ``root_packet_id`` are computed by the database."""

    model_config = ConfigDict(extra="forbid")

    parent_ids: list[UUID] = Field(default_factory=list)
    derivation_type: DerivationType | None = None
    generation: int | None = None
    root_packet_id: UUID | None = None


class PacketConfidence(InputModel):
    """Confidence of a packet: a score in [0, 1] and its rationale."""

    model_config = ConfigDict(extra="allow")

    score: float | None = Field(default=None, ge=0.0, le=1.0)
    rationale: str | None = None


class PacketEnvelope(InputModel):
    """The canonical event container: every agent event, memory write, reasoning trace and insight."""

    model_config = ConfigDict(extra="forbid")

    packet_id: UUID
    packet_type: str = Field(min_length=1)
    timestamp: datetime
    payload: Any
    metadata: dict[str, Any] | None = None
    provenance: dict[str, Any] | None = None
    confidence: PacketConfidence | None = None
    reasoning_block: dict[str, Any] | None = None
    thread_id: UUID | None = None
    lineage: PacketLineage | None = None
    tags: list[str] = Field(default_factory=list)
    ttl: datetime | None = None
    scope: Scope = "shared"
    importance_score: float | None = Field(default=None, ge=0.0, le=1.0)
    routing: dict[str, Any] | None = None
    correlation_id: UUID | None = None
    session_id: str | None = None
    trace_id: str | None = None
    memory: dict[str, Any] | None = None
    """What to fan out into the layer tables: ``facts``, ``relationships``, ``embeddings``, ``reasoning_trace``.
    The payload is never interpreted; only this field asks for fan-out."""

    def to_json(self) -> str:
        """The envelope as the JSON memsub.write_packet expects (unset optional fields left out)."""
        return self.model_dump_json(exclude_none=True)


def _utc_now() -> datetime:
    return datetime.now(UTC)


@overload
def as_utc(value: datetime) -> datetime: ...


@overload
def as_utc(value: None) -> None: ...


def as_utc(value: datetime | None) -> datetime | None:
    """memsub's one time zone rule, the envelope's (sql/120): a time without an offset is UTC. The Python
    client (its time adapter, :mod:`memsub._calls`), the CLI, MCP and HTTP read every time they are given by it."""
    return value if value is None or value.tzinfo is not None else value.replace(tzinfo=UTC)


UtcTime = Annotated[datetime, AfterValidator(as_utc)]
"""A time a table stores as a timestamp without time zone holding UTC (packet_store.ttl, the world model's times):
returned aware, in UTC (a timestamptz comes back in the server session's TimeZone, as psycopg reads it)."""


def parse_time(text: str) -> datetime:
    """An ISO 8601 time (``Z``, an offset, or none: UTC, :func:`as_utc`); ValueError when it is not one."""
    return as_utc(datetime.fromisoformat(text))


class PacketEnvelopeIn(PacketEnvelope):
    """Input DTO: like PacketEnvelope, with packet_id and timestamp generated when not given.

    The generated packet_id is the envelope's identity: writing the same object again (a retry) returns the
    stored packet flagged ``deduplicated``, while a new envelope with the same content (a repeated turn) is a
    new packet. A child can name the id as its parent before either is written.
    """

    packet_id: UUID = Field(default_factory=uuid4)
    timestamp: datetime = Field(default_factory=_utc_now)


class PacketWriteResult(BaseModel):
    """What memsub.write_packet(s) did with one envelope (the DAG processing result)."""

    position: int
    packet_id: UUID
    packet_type: str
    timestamp: datetime
    thread_id: UUID | None
    parent_ids: list[UUID]
    generation: int
    root_packet_id: UUID
    content_hash: str
    deduplicated: bool
    written: dict[str, int]
    unknown_fields: list[str] = Field(default_factory=list)
    """Envelope fields this database's contract does not know (kept in the stored envelope)."""


class PacketStoreRow(BaseModel):
    """One row of memsub.packet_store."""

    packet_id: UUID
    packet_type: str
    envelope: dict[str, Any]
    timestamp: datetime
    routing: dict[str, Any] | None
    provenance: dict[str, Any] | None
    thread_id: UUID | None
    parent_ids: list[UUID]
    tags: list[str]
    ttl: UtcTime | None
    scope: Scope
    importance_score: float
    access_count: int
    last_accessed: datetime | None
    contradiction_count: int
    content_hash: str | None
    chunk_count: int
    is_chunked: bool
    tenant_id: UUID
    org_id: UUID | None
    user_id: UUID | None
    correlation_id: UUID | None
    session_id: str | None
    trace_id: str | None
    write_seq: int
    """Write order; the cursor of :meth:`memsub.client.TenantSession.thread`."""

    @property
    def payload(self) -> Any:
        return self.envelope.get("payload")


class LineageRow(BaseModel):
    """One packet reached by a lineage walk, with its distance from the start packet."""

    packet_id: UUID
    depth: int
    packet_type: str
    timestamp: datetime
    parent_ids: list[UUID]
    thread_id: UUID | None
    generation: int
    state: Literal["live", "expired", "purged"]
    """live; expired (ttl passed, not yet purged); purged (only its tombstone remains)."""


class TenantRow(BaseModel):
    """The tenant-leading columns every row of a tenant's memory carries (shared by the areas' row models)."""

    tenant_id: UUID
    org_id: UUID | None = None
    user_id: UUID | None = None
