"""The packets area (seed 004): write one or many envelopes, read a packet, a thread page, a lineage walk, purge
expired packets, name the acting agent and read the audit trail. Both sessions expose it as ``session.packets``::

    with substrate.tenant(tenant_id) as session:
        written = session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"text": "hi"}))
        page = session.packets.get_thread(written.thread_id)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, overload
from uuid import UUID

from pgvector import Vector
from pydantic import BaseModel

from memsub._calls import (
    Area,
    AsyncSession,
    Call,
    Json,
    SessionT,
    Shape,
    Steps,
    SyncSession,
    checked,
    checked_limit,
    columns_of,
    finite_vector,
    function,
    items,
    json_text,
    method,
    one,
    optional,
    plain_numbers,
    query,
    rows,
)
from memsub.models import LineageRow, PacketEnvelope, PacketStoreRow, PacketWriteResult

EnvelopeLike = PacketEnvelope | dict[str, Any]
LineageDirection = Literal["ancestors", "descendants"]
"""Which way a lineage walk goes (the database's lineage_directions())."""


def write_packet(envelope: EnvelopeLike) -> Call[PacketWriteResult]:
    """Write one envelope (memsub.write_packet): stored, deduplicated or refused with a field-naming error.

    When every ``memory.embeddings[]`` vector is a list of finite numbers, the vectors travel apart, as vector
    values in pgvector's binary form (memsub.write_packet's ``p_vectors``), and the envelope holds null in their
    place: the server stores and returns the same packet without parsing them as JSON numbers. Each number is
    rounded here to the nearest single-precision number, which is what the server stores (a double exactly
    halfway between two of them may round the other way than its decimal text would). Anything else stays in
    the envelope, where the server names what is wrong with it."""
    value = _envelope_value(envelope)
    apart = _vectors_apart(value)
    if apart is None:
        return function("write_packet", {"envelope": Json(value)}, one(PacketWriteResult))
    lean, vectors = apart
    return function("write_packet", {"envelope": Json(lean), "vectors": vectors}, one(PacketWriteResult))


def _vectors_apart(envelope: Any) -> tuple[dict[str, Any], list[Vector]] | None:
    """The envelope with each ``memory.embeddings[]`` vector set to None, and the vectors as ``Vector`` values;
    None when there is no such vector or one of them is not a non-empty list of finite single-precision
    numbers."""
    elements = _embedding_elements(envelope)
    if elements is None:
        return None
    vectors = []
    for element in elements:
        numbers = element.get("vector") if isinstance(element, dict) else None
        found = finite_vector(numbers) if isinstance(numbers, list | tuple) and plain_numbers(numbers) else None
        if found is None:
            return None
        vectors.append(found)
    lean = [{**element, "vector": None} for element in elements]
    return {**envelope, "memory": {**envelope["memory"], "embeddings": lean}}, vectors


def _embedding_elements(envelope: Any) -> list[Any] | None:
    """The envelope's ``memory.embeddings`` elements; None when it has none (no memory object, no list of them,
    or an empty one)."""
    memory = envelope.get("memory") if isinstance(envelope, dict) else None
    elements = memory.get("embeddings") if isinstance(memory, dict) else None
    return elements if isinstance(elements, list) and elements else None


def write_packets(envelopes: Iterable[EnvelopeLike], batch_size: int = 500) -> Steps[list[PacketWriteResult]]:
    """Write many envelopes, ``batch_size`` per call of memsub.write_packets (in per-call mode each batch is a
    transaction of its own)."""
    results: list[PacketWriteResult] = []
    for batch in batches(envelopes, batch_size):
        written: list[PacketWriteResult] = yield write_packet_batch(batch, offset=len(results))
        results.extend(written)
    return results


def write_packet_batch(envelopes: Sequence[EnvelopeLike], offset: int = 0) -> Call[list[PacketWriteResult]]:
    """Write envelopes in one call of memsub.write_packets; ``offset`` is added to each result's position. Their
    vectors travel apart, in binary, when every ``memory.embeddings[]`` vector of the batch is a list of finite
    numbers (as :func:`write_packet` sends one envelope's)."""
    def decode(found: list[dict[str, Any]]) -> list[PacketWriteResult]:
        for row in found:
            row["position"] += offset
        return [PacketWriteResult.model_validate(row) for row in found]

    values = [_envelope_value(envelope) for envelope in envelopes]
    shape = Shape(tuple(PacketWriteResult.model_fields), decode)
    apart = _batch_vectors_apart(values)
    if apart is None:
        return function("write_packets", {"envelopes": Json(values)}, shape)
    lean, vectors = apart
    return function("write_packets", {"envelopes": Json(lean), "vectors": vectors}, shape)


def _batch_vectors_apart(values: list[Any]) -> tuple[list[Any], list[Vector]] | None:
    """The batch with every ``memory.embeddings[]`` vector set to None, and the vectors in order, envelope by
    envelope (memsub.write_packets' ``p_vectors``); None when no envelope has one, or when one of them cannot travel
    apart (:func:`_vectors_apart`): then they all stay in their envelopes, where the server names what is wrong."""
    lean: list[Any] = []
    vectors: list[Vector] = []
    for value in values:
        if _embedding_elements(value) is None:
            lean.append(value)
            continue
        apart = _vectors_apart(value)
        if apart is None:
            return None
        lean.append(apart[0])
        vectors += apart[1]
    return (lean, vectors) if vectors else None


def _envelope_value(envelope: EnvelopeLike) -> Any:
    """An envelope as JSON data. A model's free-form fields (payload, metadata, memory ...) are held to the same
    strict rule as a dict's: a value that is not JSON (a set, bytes, an object) raises TypeError naming it."""
    if not isinstance(envelope, PacketEnvelope):
        return envelope
    json_text(envelope.model_dump(exclude_none=True), "envelope")
    return envelope.model_dump(mode="json", exclude_none=True)


def get_packet(packet_id: UUID | str, with_vectors: bool = True) -> Call[PacketStoreRow | None]:
    """The packet with this id, or None when it does not exist or is not visible (memsub.get_packet). Its
    envelope is as written, each ``memory.embeddings[]`` vector put back; with ``with_vectors=False`` it is as
    stored, each such vector None (the vectors are in memory_embeddings), which is cheaper to read and decode."""
    if not with_vectors:
        return function("get_packet", {"packet_id": packet_id, "with_vectors": False}, optional(PacketStoreRow))
    shape = _rows_with_vectors([packet_id])
    return function("get_packets_with_vector_values", {"packet_ids": [packet_id]},
                    Shape(shape.columns, lambda found: next(iter(shape.decode(found)), None)), binary=True)


def get_packets(packet_ids: Iterable[UUID | str], with_vectors: bool = True) -> Call[list[PacketStoreRow]]:
    """The visible packets among ``packet_ids``, each once, in the order asked (memsub.get_packets): one call and
    one index search per id, however many tenants share the store. ``with_vectors=False``: the envelopes as
    stored, each ``memory.embeddings[]`` vector None (see :func:`get_packet`).

    With vectors, the rows come from memsub.get_packets_with_vector_values in binary: each vector as 4 bytes a
    number, where the envelope JSON would carry 17 digits of text, put back into its envelope here."""
    ids = items(packet_ids, "packet_ids")
    if not with_vectors:
        return function("get_packets", {"packet_ids": ids, "with_vectors": False}, rows(PacketStoreRow))
    return function("get_packets_with_vector_values", {"packet_ids": ids}, _rows_with_vectors(ids), binary=True)


def _rows_with_vectors(packet_ids: Sequence[UUID | str] | None) -> Shape[list[PacketStoreRow]]:
    """The rows of memsub.get_packets_with_vector_values (or get_thread_with_vector_values) as packets, their
    vectors put back into the envelopes (:func:`envelope_with_vectors`): in the order of first mention in
    ``packet_ids`` (a platform_admin's read of several tenants comes tenant by tenant), or as the rows come when
    there are none (a thread's page, in write order)."""
    first: dict[UUID, int] = {}
    for place, packet_id in enumerate(packet_ids or ()):
        try:
            first.setdefault(packet_id if isinstance(packet_id, UUID) else UUID(str(packet_id)), place)
        except ValueError:
            continue  # not a uuid: the server refuses the call (22P02) before any row is decoded

    def decode(found: list[dict[str, Any]]) -> list[PacketStoreRow]:
        packets = [packet_with_vectors(row) for row in found]
        return packets if packet_ids is None else sorted(packets, key=lambda packet: first[packet.packet_id])

    return Shape(PACKET_WITH_VECTORS_COLUMNS, decode)


PACKET_WITH_VECTORS_COLUMNS = (*PacketStoreRow.model_fields, "vectors")
"""The columns of memsub.get_packets_with_vector_values the client reads."""


def packet_with_vectors(row: Mapping[str, Any], prefix: str = "") -> PacketStoreRow:
    """A row of memsub.get_packets_with_vector_values (its columns named ``prefix`` + column) as the packet, its
    vectors put back into the envelope (:func:`envelope_with_vectors`)."""
    packet = PacketStoreRow.model_validate({name: row[prefix + name] for name in PacketStoreRow.model_fields})
    envelope_with_vectors(packet.envelope, row[prefix + "vectors"])
    return packet


def envelope_with_vectors(envelope: dict[str, Any], vectors: Sequence[Vector | None] | None) -> dict[str, Any]:
    """``envelope`` (read without its vectors) with each ``memory.embeddings[]`` vector put back where
    ``vectors`` (its ``vectors`` in memsub.get_packets_with_vector_values) holds one, in place: the same
    envelope, number for number, as memsub.get_packets returns with its vectors (a single-precision number as
    the double it is exactly)."""
    if vectors:
        for element, stored in zip(envelope["memory"]["embeddings"], vectors, strict=True):
            if stored is not None:
                element["vector"] = stored.to_list()
    return envelope


def get_thread(thread_id: UUID | str, limit: int = 1000, after_cursor: int | None = None,
               with_vectors: bool = True) -> Call[list[PacketStoreRow]]:
    """One page of a thread in write order: at most ``limit`` packets after ``after_cursor`` (the ``write_seq``
    of the last packet already read; None: from the start) (memsub.get_thread). Its envelopes as written, each
    ``memory.embeddings[]`` vector read in binary (memsub.get_thread_with_vector_values) and put back here; with
    ``with_vectors=False``, as stored (see :func:`get_packet`)."""
    if not with_vectors:
        return function("get_thread", {"thread_id": thread_id, "limit": limit, "after_cursor": after_cursor,
                                       "with_vectors": False}, rows(PacketStoreRow))
    return function("get_thread_with_vector_values", {"thread_id": thread_id, "limit": limit,
                                                      "after_cursor": after_cursor},
                    _rows_with_vectors(None), binary=True)


def get_lineage(packet_id: UUID | str, direction: LineageDirection = "ancestors",
                max_depth: int = 16) -> Call[list[LineageRow]]:
    """The packets a lineage walk reaches from a packet, with their depth (memsub.get_lineage); NotFound when the
    packet does not exist or is not visible."""
    return function("get_lineage", {"packet_id": packet_id, "direction": direction, "max_depth": max_depth},
                    rows(LineageRow))


def purge_expired(tenant_id: UUID | str | None = None) -> Call[dict[UUID, int]]:
    """Remove the expired packets the context covers (of one tenant when given), keeping tombstones for lineage;
    the number purged per tenant (memsub.purge_expired)."""
    return function("purge_expired", {"tenant_id": tenant_id}, Shape(
        ("tenant_id", "purged"), lambda found: {row["tenant_id"]: int(row["purged"]) for row in found}))


def batches(envelopes: Iterable[EnvelopeLike], size: int) -> Iterator[list[EnvelopeLike]]:
    """Envelopes in lists of at most ``size``."""
    batch: list[EnvelopeLike] = []
    for envelope in envelopes:
        batch.append(envelope)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def set_actor(agent_id: UUID | str, task_id: int | None = None) -> Call[None]:
    """Name the agent (and task) acting in this transaction; audit rows record them (memsub.set_actor). In
    per-call mode the transaction is the call's own, so this names nobody for later calls."""
    return function("set_actor", {"agent_id": agent_id, "task_id": task_id}, Shape(("value",), lambda _: None))


class AuditEntry(BaseModel):
    """One row of memsub.audit."""

    tenant_id: UUID
    id: int
    org_id: UUID | None
    user_id: UUID | None
    operation: str
    session_id: str | None
    agent_id: UUID | None
    task_id: int | None
    memory_entry_id: UUID | None
    namespace: str | None
    key: str | None
    version: int | None
    details: dict[str, Any]
    created_at: datetime


_AUDIT_TRAIL = (
    f"select {columns_of(AuditEntry)} from memsub.audit where tenant_id = memsub.current_tenant_id()"  # noqa: S608 - the model's field names
    " and (%(session_id)s::text is null or session_id = %(session_id)s)"
    " and (%(namespace)s::text is null or namespace = %(namespace)s)"
    " and (%(key)s::text is null or key = %(key)s) order by id limit %(limit)s")


def audit_trail(*, session_id: str | None = None, namespace: str | None = None, key: str | None = None,
                limit: int = 1000) -> Call[list[AuditEntry]]:
    """Visible audit rows, oldest first, optionally of one session or one memory key (the table memsub.audit)."""
    return query(
        _AUDIT_TRAIL,
        {"session_id": checked(session_id, "text", "session_id"), "namespace": checked(namespace, "text", "namespace"),
         "key": checked(key, "text", "key"), "limit": checked_limit(limit)}, rows(AuditEntry))


def _replay(session: SyncSession, thread_id: UUID | str, page_size: int,
            after_cursor: int | None) -> Iterator[PacketStoreRow]:
    cursor = after_cursor
    while True:
        page = session._run(get_thread(thread_id, limit=page_size, after_cursor=cursor))
        yield from page
        if len(page) < page_size:
            return
        cursor = page[-1].write_seq


async def _replay_async(session: AsyncSession, thread_id: UUID | str, page_size: int,
                        after_cursor: int | None) -> AsyncIterator[PacketStoreRow]:
    cursor = after_cursor
    while True:
        page = await session._run(get_thread(thread_id, limit=page_size, after_cursor=cursor))
        for row in page:
            yield row
        if len(page) < page_size:
            return
        cursor = page[-1].write_seq


class PacketsArea(Area[SessionT]):
    """``session.packets``: packets, their lineage and expiry, the acting agent and the audit trail."""

    write = method(write_packet)
    write_packets = method(write_packets)
    get = method(get_packet)
    get_packets = method(get_packets)
    get_thread = method(get_thread)
    get_lineage = method(get_lineage)
    purge_expired = method(purge_expired)
    set_actor = method(set_actor)
    audit_trail = method(audit_trail)

    @overload
    def replay(self: PacketsArea[SyncSession], thread_id: UUID | str, page_size: int = 1000,
               after_cursor: int | None = None) -> Iterator[PacketStoreRow]: ...

    @overload
    def replay(self: PacketsArea[AsyncSession], thread_id: UUID | str, page_size: int = 1000,
               after_cursor: int | None = None) -> AsyncIterator[PacketStoreRow]: ...

    def replay(self, thread_id: UUID | str, page_size: int = 1000,
               after_cursor: int | None = None) -> Iterator[PacketStoreRow] | AsyncIterator[PacketStoreRow]:
        """Every packet of a thread in write order, read ``page_size`` at a time with the keyset cursor (an async
        iterator on the async session: ``async for packet in session.packets.replay(thread)``)."""
        if isinstance(self._session, AsyncSession):
            return _replay_async(self._session, thread_id, page_size, after_cursor)
        return _replay(self._session, thread_id, page_size, after_cursor)
