"""One SQLSTATE contract for every surface: the Python exception and the HTTP problem come from one table, and
the table agrees with docs/errors.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memsub import errors
from memsub.errors import SQLSTATE_CONTRACT, contract_of

DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
ROW = re.compile(r"^\| `([0-9A-Z]{5})` \| [a-z_]+ \| .* \| `([A-Za-z]+)`(?: \(an `[A-Za-z]+`\))? \|$")


def documented() -> list[tuple[str, str]]:
    rows = [(m.group(1), m.group(2)) for line in DOC.read_text().splitlines() if (m := ROW.match(line))]
    assert len(rows) > 30, "the SQLSTATE tables of docs/errors.md were not found"
    return rows


@pytest.mark.parametrize(("sqlstate", "exception"), sorted(set(documented())))
def test_documented_exception_is_the_one_raised(sqlstate: str, exception: str) -> None:
    contract = contract_of(sqlstate)
    raised = contract.error if contract is not None else errors.MemsubError
    assert raised is getattr(errors, exception), f"{sqlstate}: docs say {exception}, client raises {raised.__name__}"


def test_every_contract_sqlstate_is_documented() -> None:
    assert set(SQLSTATE_CONTRACT) - {state for state, _ in documented()} == set()


def test_unlisted_data_exceptions_are_invalid_input_and_others_are_server_errors() -> None:
    contract = contract_of("22P02")
    assert contract is not None and contract.error is errors.InvalidInput and contract.status == 422
    assert contract_of("XX000") is None and contract_of(None) is None
    assert all(400 <= c.status < 600 for c in SQLSTATE_CONTRACT.values())
