"""Memory types (STM, LTM, Procedural), importance and decay on namespaced memory entries.

    with substrate.tenant(tenant_id, user_id=user, session_id="s1") as memory:
        memory_decay.remember(memory, f"user:{user}:notes", "topic", "pgvector", tier="STM", importance=0.9)
        memory_decay.touch(memory, f"user:{user}:notes", "topic")
    with substrate.tenant(tenant_id, roles=["tenant_admin"]) as admin:
        report = memory_decay.maintenance(admin)   # promotes STM entries by the documented rule

The rule (sql/430_memory_decay.sql): strength halves every half-life without access and each access adds 1;
an STM entry is promoted to LTM when importance * strength reaches the threshold.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from psycopg.types.json import Jsonb
from pydantic import BaseModel

from memsub.client import TenantSession

MemoryTier = Literal["STM", "LTM", "Procedural"]
DEFAULT_HALF_LIFE = timedelta(days=7)


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


_COLUMNS = ", ".join(TieredMemory.model_fields)


def remember(session: TenantSession, namespace: str, key: str, value: Any, *, tier: MemoryTier = "STM",
             importance: float = 0.5, expected_version: int | None = None,
             kind: Literal["semantic", "episodic"] = "semantic",
             metadata: dict[str, Any] | None = None) -> TieredMemory:
    """Write the next version of (namespace, key) as STM, LTM or Procedural memory."""
    rows = session.fetch(
        f"select {_COLUMNS} from memsub.memory_remember(%s, %s, %s, %s, %s, %s, %s, %s)",  # noqa: S608 - fixed names
        [namespace, key, Jsonb(value), tier, importance, expected_version, kind, Jsonb(metadata or {})])
    return TieredMemory.model_validate(rows[0])


def touch(session: TenantSession, namespace: str, key: str,
          half_life: timedelta = DEFAULT_HALF_LIFE) -> TieredMemory:
    """Record an access of the live entry of (namespace, key)."""
    rows = session.fetch(f"select {_COLUMNS} from memsub.memory_touch(%s, %s, %s)",  # noqa: S608 - fixed names
                         [namespace, key, half_life])
    return TieredMemory.model_validate(rows[0])


def maintenance(session: TenantSession, threshold: float = 1.0,
                half_life: timedelta = DEFAULT_HALF_LIFE) -> list[MaintenanceOutcome]:
    """Promote short-term memories by the rule (tenant_admin context); returns every STM entry looked at."""
    rows = session.fetch("select * from memsub.memory_maintenance(%s, %s)", [threshold, half_life])
    return [MaintenanceOutcome.model_validate(row) for row in rows]
