"""Small helpers shared by the tests: tenant context, packet writes, row counts."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from typing import Any

import psycopg

TENANT_A = uuid.UUID("aaaaaaaa-0000-0000-0000-000000000001")
TENANT_B = uuid.UUID("bbbbbbbb-0000-0000-0000-000000000002")


def set_context(conn: psycopg.Connection[Any], tenant: uuid.UUID | None, org: uuid.UUID | None = None,
                user: uuid.UUID | None = None, roles: Sequence[str] = (), session: str | None = None) -> None:
    conn.execute("select memsub.set_context(%s, %s, %s, %s, %s)",
                 [tenant, org, user, list(roles), session])


def write(conn: psycopg.Connection[Any], envelope: dict[str, Any]) -> dict[str, Any]:
    """Call memsub.write_packet and return its result as a dict (decoded by column name)."""
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    row = cur.execute("select * from memsub.write_packet(%s::jsonb)", [json.dumps(envelope, default=str)]).fetchone()
    assert row is not None
    return row


def count(conn: psycopg.Connection[Any], table: str = "memsub.packet_store") -> int:
    row = conn.execute(f"select count(*) from {table}").fetchone()  # noqa: S608 - fixed table names
    assert row is not None
    return int(row[0])


def superuser_count(db: Any, table: str = "memsub.packet_store") -> int:
    """Row count as the superuser (bypasses row-level security): the ground truth of what is stored."""
    with db.connect() as conn:
        return count(conn, table)


def soak_factor() -> int:
    """``MEMSUB_SOAK_FACTOR`` (default 1): how many times longer the load, crash and fuzz tests run (``make soak``)."""
    value = os.environ.get("MEMSUB_SOAK_FACTOR", "1")
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"MEMSUB_SOAK_FACTOR must be a positive integer, not {value!r}")
    return int(value)
