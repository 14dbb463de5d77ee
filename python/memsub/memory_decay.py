"""Memory types (STM, LTM, Procedural), importance and decay on namespaced memory entries.

    with substrate.tenant(tenant_id, user_id=user, session_id="s1") as memory:
        memory.remember(f"user:{user}:notes", "topic", "pgvector", tier="STM", importance=0.9)
        memory.touch_memory(f"user:{user}:notes", "topic")
    with substrate.tenant(tenant_id, roles=["tenant_admin"]) as admin:
        report = admin.memory_maintenance()   # promotes STM entries by the documented rule

The rule (sql/630_memory_decay.sql): strength halves every half-life without access and each access adds 1;
an STM entry is promoted to LTM when importance * strength reaches the threshold. Each call is declared once
here; the sync and async tenant sessions expose it as a method of the same name.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel

from memsub._calls import Call, Json, function, json_or_none, one, rows

MemoryTier = Literal["STM", "LTM", "Procedural"]


class TieredMemory(BaseModel):
    """A memory entry version with its seed 003 memory type and decay state."""

    id: UUID
    namespace: str
    key: str
    value: Any
    version: int
    memory_type: str
    memory_tier: MemoryTier
    importance: float
    decay_weight: float
    last_access_ts: datetime | None
    promoted_at: datetime | None
    created_at: datetime


class MaintenanceOutcome(BaseModel):
    """One short-term entry looked at by memsub.memory_maintenance."""

    memory_entry_id: UUID
    namespace: str
    key: str
    version: int
    importance: float
    strength: float
    score: float
    outcome: Literal["promoted", "kept"]


def remember(namespace: str, key: str, value: Any, *, tier: MemoryTier | None = None,
             importance: float | None = None, expected_version: int | None = None,
             kind: Literal["semantic", "episodic"] | None = None,
             metadata: dict[str, Any] | None = None) -> Call[TieredMemory]:
    """Write the next version of (namespace, key) as STM (the default), LTM or Procedural memory, importance 0.5
    unless given (memsub.memory_remember)."""
    return function("memory_remember", {
        "namespace": namespace, "key": key, "value": Json(value), "tier": tier, "importance": importance,
        "expected_version": expected_version, "kind": kind, "metadata": json_or_none(metadata)},
        one(TieredMemory))


def touch_memory(namespace: str, key: str, half_life: timedelta | None = None) -> Call[TieredMemory]:
    """Record an access of the live entry of (namespace, key) (half-life 7 days unless given) (memsub.memory_touch)."""
    return function("memory_touch", {"namespace": namespace, "key": key, "half_life": half_life}, one(TieredMemory))


def memory_maintenance(threshold: float | None = None,
                       half_life: timedelta | None = None) -> Call[list[MaintenanceOutcome]]:
    """Promote short-term memories by the rule (tenant_admin context; threshold 1.0 and half-life 7 days unless
    given); returns every STM entry looked at (memsub.memory_maintenance)."""
    return function("memory_maintenance", {"threshold": threshold, "half_life": half_life}, rows(MaintenanceOutcome))
