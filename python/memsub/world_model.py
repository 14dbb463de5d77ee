"""The world model area: entities updated by insights at an expected version, snapshots, and the state a
snapshot holds. Both sessions expose it as ``session.world_model``::

    with substrate.tenant(tenant_id) as session:
        update = session.world_model.apply_update("entity_discovery", [{"entity_id": "L9", "entity_type": "system"}])
        snapshot = session.world_model.take_snapshot("before the migration")
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from pydantic import BaseModel

from memsub._calls import Area, Call, Json, SessionT, function, json_or_none, method, one, rows, scalar
from memsub.models import TenantRow, UtcTime


class WorldModelUpdate(TenantRow):
    update_id: UUID
    insight_id: UUID | None
    insight_type: str
    entities: list[Any]
    content: dict[str, Any]
    confidence: float
    applied_at: UtcTime
    state_version_before: int
    state_version_after: int


class WorldModelSnapshot(TenantRow):
    snapshot_id: UUID
    snapshot: dict[str, Any]
    state_version: int
    entity_count: int
    relation_count: int
    relations_expire_at: UtcTime | None
    """The earliest expiry among the snapshot's relations (UTC; NULL: none expires)."""
    description: str | None
    created_by: str | None
    created_at: UtcTime


class WorldModelEntity(BaseModel):
    entity_id: str
    entity_type: str
    attributes: dict[str, Any]
    confidence: float
    version: int


def apply_world_model_update(insight_type: str, entities: list[dict[str, Any]], *,
                             content: dict[str, Any] | None = None, confidence: float = 0.5,
                             insight_id: UUID | str | None = None,
                             expected_version: int | None = None) -> Call[WorldModelUpdate]:
    """Apply an insight to the world model, optionally at an expected version (memsub.apply_world_model_update)."""
    return function("apply_world_model_update", {
        "insight_type": insight_type, "entities": Json(entities), "content": json_or_none(content),
        "confidence": confidence, "insight_id": insight_id, "expected_version": expected_version},
        one(WorldModelUpdate))


def take_world_model_snapshot(description: str | None = None,
                              created_by: str | None = None) -> Call[WorldModelSnapshot]:
    """Snapshot the world model (memsub.take_world_model_snapshot)."""
    return function("take_world_model_snapshot", {"description": description, "created_by": created_by},
                    one(WorldModelSnapshot))


def world_model_state_at(snapshot_id: UUID | str) -> Call[list[WorldModelEntity]]:
    """The world model's entities as a snapshot holds them (memsub.world_model_state_at)."""
    return function("world_model_state_at", {"snapshot_id": snapshot_id}, rows(WorldModelEntity))


def world_model_state_version() -> Call[int]:
    """The world model's current version (memsub.world_model_state_version)."""
    return function("world_model_state_version", {}, scalar(int))


class WorldModelArea(Area[SessionT]):
    """``session.world_model``: the tenant's model of its world, versioned."""

    apply_update = method(apply_world_model_update)
    take_snapshot = method(take_world_model_snapshot)
    state_at = method(world_model_state_at)
    state_version = method(world_model_state_version)
