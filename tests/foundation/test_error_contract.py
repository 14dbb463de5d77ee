"""One SQLSTATE contract for every surface: the Python exception and the HTTP problem come from one table, and
the table agrees with docs/errors.md."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
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


def test_a_statement_prepared_before_an_upgrade_changed_its_columns_is_a_retryable_conflict(db) -> None:
    """PostgreSQL refuses a prepared statement once whose result columns an upgrade changed (0A000, "cached plan
    must not change result type"): no immutable packet was touched, and the retry, prepared again, succeeds."""
    from memsub.http_api import problem_from_database

    with db.connect(autocommit=True) as conn:
        conn.prepare_threshold = 0
        conn.execute("create table upgraded_meanwhile (a integer)")
        conn.execute("select * from upgraded_meanwhile where %s", [True], prepare=True)
        with db.connect(autocommit=True) as migrator:  # psycopg forgets its statements after its own ALTER
            migrator.execute("alter table upgraded_meanwhile add column b integer")
        with pytest.raises(psycopg.errors.FeatureNotSupported) as refused:
            conn.execute("select * from upgraded_meanwhile where %s", [True], prepare=True)
        translated = errors.from_database_error(refused.value)
        problem = problem_from_database(refused.value)
        assert conn.execute("select * from upgraded_meanwhile").fetchall() == []  # the retry
    assert type(translated) is errors.ConflictError and translated.sqlstate == "0A000"
    assert (problem.status, problem.kind) == (503, "busy")
    # Told apart by the routine that raises it, which a server built with translated messages names the same way.
    assert refused.value.diag.source_function == "RevalidateCachedQuery"


def test_another_feature_not_supported_error_stays_what_the_contract_says(db) -> None:
    """Only the prepared statement's 0A000 is a retryable conflict: another 0A000, from another routine, is what the
    contract says of 0A000 whatever its message, and an error whose message merely reads like the prepared
    statement's is not taken for it."""
    with db.connect(autocommit=True) as conn:
        with pytest.raises(psycopg.errors.FeatureNotSupported) as refused:
            conn.execute("select count(*) from pg_class for update")
        with pytest.raises(psycopg.errors.FeatureNotSupported) as lookalike:
            conn.execute("do $$ begin raise exception using errcode = '0A000',"
                         " message = 'cached plan must not change result type'; end $$")
    assert refused.value.diag.source_function != "RevalidateCachedQuery"
    assert errors.contract_of_error(refused.value) is errors.contract_of("0A000")
    assert errors.contract_of_error(lookalike.value) is errors.contract_of("0A000")
