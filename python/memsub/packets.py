"""Typed calls for packets (seed 004): write one or many envelopes, read a packet, a thread page, a lineage walk,
and purge expired packets. The sync and async tenant sessions expose each as a method of the same name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal
from uuid import UUID

from memsub._calls import Call, Json, Shape, function, json_text, one, optional, rows
from memsub.models import LineageRow, PacketEnvelope, PacketStoreRow, PacketWriteResult

EnvelopeLike = PacketEnvelope | dict[str, Any]


def write_packet(envelope: EnvelopeLike) -> Call[PacketWriteResult]:
    """Write one envelope (memsub.write_packet): stored, deduplicated or refused with a field-naming error."""
    return function("write_packet", {"envelope": Json(_envelope_value(envelope))}, one(PacketWriteResult))


def write_packet_batch(envelopes: Sequence[EnvelopeLike], offset: int = 0) -> Call[list[PacketWriteResult]]:
    """Write envelopes in one call of memsub.write_packets; ``offset`` is added to each result's position."""
    def decode(found: list[dict[str, Any]]) -> list[PacketWriteResult]:
        for row in found:
            row["position"] += offset
        return [PacketWriteResult.model_validate(row) for row in found]

    batch = Json([_envelope_value(envelope) for envelope in envelopes])
    return function("write_packets", {"envelopes": batch}, Shape(tuple(PacketWriteResult.model_fields), decode))


def _envelope_value(envelope: EnvelopeLike) -> Any:
    """An envelope as JSON data. A model's free-form fields (payload, metadata, memory ...) are held to the same
    strict rule as a dict's: a value that is not JSON (a set, bytes, an object) raises TypeError naming it."""
    if not isinstance(envelope, PacketEnvelope):
        return envelope
    json_text(envelope.model_dump(exclude_none=True), "envelope")
    return envelope.model_dump(mode="json", exclude_none=True)


def get_packet(packet_id: UUID | str) -> Call[PacketStoreRow | None]:
    """The packet with this id, or None when it does not exist or is not visible (memsub.get_packet)."""
    return function("get_packet", {"packet_id": packet_id}, optional(PacketStoreRow))


def get_packets(packet_ids: Iterable[UUID | str]) -> Call[list[PacketStoreRow]]:
    """The visible packets among ``packet_ids``, each once, in the order asked (memsub.get_packets): one call and
    one index search per id, however many tenants share the store."""
    return function("get_packets", {"packet_ids": [str(p) for p in packet_ids]}, rows(PacketStoreRow))


def thread(thread_id: UUID | str, limit: int = 1000, after_cursor: int | None = None) -> Call[list[PacketStoreRow]]:
    """One page of a thread in write order: at most ``limit`` packets after ``after_cursor`` (the ``write_seq``
    of the last packet already read; None: from the start) (memsub.get_thread)."""
    return function("get_thread", {"thread_id": thread_id, "limit": limit, "after_cursor": after_cursor},
                    rows(PacketStoreRow))


def lineage(packet_id: UUID | str, direction: Literal["ancestors", "descendants"] = "ancestors",
            max_depth: int = 16) -> Call[list[LineageRow]]:
    """The packets a lineage walk reaches from a packet, with their depth (memsub.get_lineage)."""
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
