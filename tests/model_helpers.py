"""What the model-based tests share: a call's outcome as a value, the refusal the model expects, and a database
whose max_rows is small enough for listings and event reads to reach it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from memsub.errors import MemsubError

T = TypeVar("T")


def attempt(call: Callable[[], T]) -> tuple[T | None, MemsubError | None]:
    """``call()``'s result, or the MemsubError it raised: what the model then compares."""
    try:
        return call(), None
    except MemsubError as error:
        return None, error


def refused(error: MemsubError | None, sqlstate: str, column: str) -> None:
    """The call failed with ``sqlstate`` naming ``column``, as the model expects."""
    assert error is not None, f"expected {sqlstate} naming {column}, the call succeeded"
    assert (error.sqlstate, error.field) == (sqlstate, column), error


def set_max_rows(db: Any, max_rows: int) -> None:
    """memsub.limits' max_rows for this database (set as the superuser, who owns the limits)."""
    with db.connect() as superuser:
        superuser.execute("insert into memsub.limits (name, value) values ('max_rows', %s)", [max_rows])
        superuser.commit()
