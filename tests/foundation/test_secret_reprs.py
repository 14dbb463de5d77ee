"""The repr of an object that holds a secret leaves it out: a traceback or a log line that prints the object (an
error reporter capturing local variables, ``logger.debug("%r", ...)``) must not print a password, an API key or
a context token. docs/security.md, "What stays out of logs"."""

from __future__ import annotations

import pytest

from memsub import _calls, api_keys
from memsub.cli_common import Target
from memsub.connection import ResolvedDsn
from memsub.demo import DemoResources
from memsub.http_api import AUTHENTICATE

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


@pytest.mark.parametrize("dsn", DSNS)
def test_the_demos_resources_print_without_the_servers_password(dsn: str) -> None:
    resources = DemoResources(dsn, "memsub_demo_1")
    text = repr(resources)
    assert SECRET not in text and "db.example" in text and "memsub_demo_1" in text
    assert resources.server_dsn == dsn


def test_a_call_prints_without_its_arguments() -> None:
    """A context token, an API key (the HTTP server's authentication) or any argument a call carries."""
    for call in (_calls.set_context_signed(SECRET), _calls.query(AUTHENTICATE, [SECRET], _calls.nothing()),
                 api_keys.revoke_api_key(SECRET)):
        text = repr(call)
        assert SECRET not in text and "memsub" in text
        assert SECRET in str(call.params)


def test_a_minted_api_key_prints_without_the_key() -> None:
    minted = api_keys.MintedApiKey(key_id="0123456789abcdef", api_key=f"msk_0123456789abcdef_{SECRET}",
                                   tenant_id="aaaaaaaa-0000-0000-0000-000000000001", org_id=None, user_id=None,
                                   roles=[], label="worker", expires_at=None)
    for text in (repr(minted), str(minted)):
        assert SECRET not in text and "0123456789abcdef" in text
    assert minted.api_key.endswith(SECRET) and minted.model_dump()["api_key"].endswith(SECRET)


def test_the_mcp_servers_identity_prints_without_its_token() -> None:
    from memsub.mcp_server import Identity

    identity = Identity(token=SECRET)
    for text in (repr(identity), identity.describe()):
        assert SECRET not in text
