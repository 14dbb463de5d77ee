"""The repr of an object that holds a secret leaves it out: a traceback or a log line that prints the object (an
error reporter capturing local variables, ``logger.debug("%r", ...)``) must not print a password, an API key or
a context token. docs/security.md, "What stays out of logs"."""

from __future__ import annotations

import pytest

from memsub.cli_common import Target
from memsub.connection import ResolvedDsn

SECRET = "s3cr3t-Never-Printed"
DSNS = [
    f"postgresql://svc:{SECRET}@db.example:5432/agents",
    f"postgresql://svc@db.example/agents?password={SECRET}&sslmode=require",
    f"host=db.example user=svc password={SECRET} dbname=agents",
    f"host=db.example user=svc password='{SECRET}' dbname=agents",
]


@pytest.mark.parametrize("dsn", DSNS)
def test_a_resolved_connection_string_prints_without_its_password(dsn: str) -> None:
    for holder in (ResolvedDsn(dsn, "--dsn"), Target(dsn, "aaaaaaaa-0000-0000-0000-000000000001")):
        text = repr(holder)
        assert SECRET not in text and "db.example" in text
        assert holder.dsn == dsn  # what it holds is unchanged
