"""One time zone rule on every surface, the envelope's (sql/120): a time without an offset is UTC."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memsub import cli_search, http_api
from memsub.errors import InvalidInput
from memsub.models import as_utc, parse_time

NOON_UTC = datetime(2025, 12, 7, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("text", ["2025-12-07T12:00:00", "2025-12-07T12:00:00Z", "2025-12-07T12:00:00+00:00",
                                  "2025-12-07T13:00:00+01:00"])
def test_the_cli_and_http_read_a_time_by_the_rule(text: str) -> None:
    assert parse_time(text) == NOON_UTC and parse_time(text).tzinfo is not None
    assert cli_search._timestamp(text) == NOON_UTC
    assert http_api.timestamp(text, "as_of") == NOON_UTC and http_api.timestamp(text, "as_of").tzinfo is not None


def test_mcp_reads_a_parsed_time_by_the_rule() -> None:
    assert as_utc(datetime(2025, 12, 7, 12, 0)) == NOON_UTC
    assert as_utc(NOON_UTC) is NOON_UTC and as_utc(None) is None


def test_a_time_that_is_not_iso_8601_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidInput) as refused:
        cli_search._timestamp("noon")
    assert refused.value.field == "as_of" and "--as-of" in str(refused.value)
    with pytest.raises(http_api.Problem) as caught:
        http_api.timestamp("noon", "as_of")
    assert caught.value.status == 422 and caught.value.field == "as_of"
