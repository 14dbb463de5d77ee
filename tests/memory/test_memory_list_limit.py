"""memsub.memory_list holds to max_rows as the other reads do: without a limit it lists every live entry under the
prefix up to max_rows and refuses more (54000 naming namespace_prefix, not a listing cut short); with a limit it
returns the first ``limit`` entries by namespace, then key (22023 below 1, 54000 over max_rows, naming limit)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from memsub.client import Substrate
from memsub.errors import InvalidInput, LimitExceeded

from helpers import TENANT_A
from session_helpers import ALICE, as_user, rows

MAX_ROWS = 3
PREFIX = f"user:{ALICE}"


def setup(db: Any, keys: int) -> None:
    with db.connect() as admin:
        admin.execute("insert into memsub.limits (name, value) values ('max_rows', %s)", [MAX_ROWS])
        admin.commit()
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        for k in range(keys):
            conn.execute("select memsub.memory_write(%s, %s, '1'::jsonb)", [f"{PREFIX}:notes", f"k{k}"])
        conn.commit()


def listed(conn: Any, *args: Any) -> list[str]:
    return [r["key"] for r in rows(conn, "select key from memsub.memory_list(%s" + ", %s" * (len(args) - 1) + ")",
                                   list(args))]


def test_a_namespace_up_to_max_rows_is_listed_whole(db: Any) -> None:
    setup(db, MAX_ROWS)
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        assert listed(conn, PREFIX) == ["k0", "k1", "k2"]


def test_a_namespace_over_max_rows_is_refused_without_a_limit_and_paged_with_one(db: Any) -> None:
    setup(db, MAX_ROWS + 1)
    with db.connect("app") as conn:
        as_user(conn, ALICE)
        with pytest.raises(psycopg.errors.ProgramLimitExceeded) as over:
            listed(conn, PREFIX)
        assert over.value.diag.column_name == "namespace_prefix"
        assert "max_rows" in (over.value.diag.message_detail or "")
        conn.rollback()
        as_user(conn, ALICE)
        assert listed(conn, PREFIX, 2) == ["k0", "k1"]
        assert listed(conn, PREFIX, MAX_ROWS) == ["k0", "k1", "k2"]
        for limit, error in ((MAX_ROWS + 1, psycopg.errors.ProgramLimitExceeded),
                             (0, psycopg.errors.InvalidParameterValue)):
            with pytest.raises(error) as refused:
                listed(conn, PREFIX, limit)
            assert refused.value.diag.column_name == "limit"
            conn.rollback()
            as_user(conn, ALICE)


def test_the_client_passes_the_limit_and_names_the_field_refused(db: Any) -> None:
    setup(db, MAX_ROWS + 1)
    with Substrate(db.dsn("app"), min_size=1, max_size=1) as substrate, \
            substrate.tenant(TENANT_A, user_id=ALICE, per_call=True) as session:
        assert [e.key for e in session.memory.list(PREFIX, limit=2)] == ["k0", "k1"]
        with pytest.raises(LimitExceeded) as over:
            session.memory.list(PREFIX)
        assert over.value.field == "namespace_prefix"
        with pytest.raises(InvalidInput) as refused:
            session.memory.list(PREFIX, limit=0)
        assert refused.value.field == "limit"
