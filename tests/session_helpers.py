"""Helpers for the session, task and namespaced-memory tests."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

from helpers import TENANT_A, set_context
from helpers import expect_error as expect_error  # the session tests import it from here

ALICE = uuid.UUID("a11ce000-0000-0000-0000-00000000a11c")
BOB = uuid.UUID("b0b00000-0000-0000-0000-000000000b0b")


def rows(conn: psycopg.Connection[Any], query: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Run a query and decode its rows by column name."""
    cur = conn.cursor(row_factory=dict_row)
    cur.execute(query.encode(), list(params))
    return cur.fetchall() if cur.description else []


def one(conn: psycopg.Connection[Any], query: str, params: Sequence[Any] = ()) -> dict[str, Any]:
    result = rows(conn, query, params)
    assert len(result) == 1, result
    return result[0]


def as_user(
    conn: psycopg.Connection[Any],
    user: uuid.UUID | None,
    session: str | None = None,
    roles: Sequence[str] = (),
    tenant: uuid.UUID = TENANT_A,
) -> None:
    set_context(conn, tenant, user=user, roles=roles, session=session)


def ground_truth(db: Any, query: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Query as the superuser (bypasses row-level security): what is really stored."""
    with db.connect() as conn:
        return rows(conn, query, params)


def new_session(
    conn: psycopg.Connection[Any],
    session_id: str,
    user: uuid.UUID = ALICE,
    project: str | None = "schema_redesign",
    app: str | None = "abathur",
    state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Create and commit a session of a user; leaves the connection with no open transaction."""
    as_user(conn, user, session_id)
    row = one(
        conn,
        "select * from memsub.session_create(%s, %s, %s, %s::jsonb)",
        [session_id, project, app, json.dumps(state or {})],
    )
    conn.commit()
    return row


def remember_short_term(conn: psycopg.Connection[Any], namespace: str, key: str, *values: Any) -> None:
    """Write successive short-term versions of a new key (memory_remember, importance 0.9: promoted by a
    maintenance run at threshold 0.5), each stating the version before it."""
    version = None
    for value in values:
        version = one(conn, "select version from memsub.memory_remember(%s, %s, %s::jsonb, 'STM', 0.9, %s)",
                      [namespace, key, json.dumps(value), version])["version"]
