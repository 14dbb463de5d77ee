"""Calls the client refuses before anything is sent: the refusal names the field, and no table changes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from memsub.client import TenantSession
from memsub.errors import LocalValidationError

from doc_helpers import tenant_session
from helpers import TENANT_A
from session_helpers import ALICE, ground_truth


def row_counts(db: Any, tables: Sequence[str]) -> dict[str, int]:
    """The number of rows of each memsub table named, read as the superuser."""
    found = ground_truth(db, " union all ".join(
        f"select '{table}' as t, count(*) as n from memsub.{table}" for table in tables))  # noqa: S608 - fixed names
    return {row["t"]: row["n"] for row in found}


def assert_refused_locally(db: Any, call: Callable[[TenantSession], object], field: str, sqlstate: str,
                           tables: Sequence[str]) -> LocalValidationError:
    """``call``, on a session of tenant A acting for Alice, raises LocalValidationError naming ``field`` (in its
    message too) with ``sqlstate``, and none of ``tables`` changes."""
    before = row_counts(db, tables)
    with pytest.raises(LocalValidationError) as refused, tenant_session(db.dsn("app"), TENANT_A, user=ALICE) as s:
        call(s)
    assert (refused.value.field, refused.value.sqlstate) == (field, sqlstate)
    assert field in str(refused.value)
    assert row_counts(db, tables) == before
    return refused.value
