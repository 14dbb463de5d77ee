"""``memsub api-key``: mint, list and revoke keys through the declared calls, as an admin login (never a
superuser), and the minted key authenticates until it is revoked."""

from __future__ import annotations

import json
import socket
import uuid

import psycopg
import pytest
from click.testing import CliRunner

from memsub.cli import main as cli


def _authenticates(dsn: str, api_key: str) -> bool:
    with psycopg.connect(dsn) as conn:
        try:
            conn.execute("select memsub.authenticate_api_key(%s)", [api_key])
        except psycopg.errors.InvalidAuthorizationSpecification:
            return False
    return True


def test_create_list_revoke(db):
    tenant, user = uuid.uuid4(), uuid.uuid4()
    admin = ["--dsn", db.dsn("platform_admin")]
    runner = CliRunner()
    created = runner.invoke(cli, ["api-key", "create", *admin, "--tenant", str(tenant), "--user", str(user),
                                  "--label", "worker", "--json"])
    assert created.exit_code == 0, created.output
    minted = json.loads(created.stdout)
    assert minted["tenant_id"] == str(tenant) and minted["user_id"] == str(user) and minted["label"] == "worker"
    assert minted["api_key"].startswith("msk_") and _authenticates(db.dsn("app"), minted["api_key"])

    listed = runner.invoke(cli, ["api-key", "list", *admin])
    assert listed.exit_code == 0, listed.output
    keys = [json.loads(line) for line in listed.stdout.splitlines()]
    mine = [k for k in keys if k["key_id"] == minted["key_id"]]
    assert len(mine) == 1 and mine[0]["revoked_at"] is None and "api_key" not in mine[0]

    revoked = runner.invoke(cli, ["api-key", "revoke", *admin, minted["key_id"]])
    assert revoked.exit_code == 0 and f"revoked {minted['key_id']}" in revoked.stdout
    assert not _authenticates(db.dsn("app"), minted["api_key"])
    again = runner.invoke(cli, ["api-key", "revoke", *admin, minted["key_id"]])
    assert again.exit_code == 1 and "no live key" in again.stderr


def test_revoke_given_the_whole_key_revokes_it_by_its_id_and_never_prints_it(db):
    """An admin answering a leak pastes the key itself: it is revoked by its id, and neither the answer nor the
    refusal of a second revoke shows the secret."""
    admin = ["--dsn", db.dsn("platform_admin")]
    runner = CliRunner()
    created = runner.invoke(cli, ["api-key", "create", *admin, "--tenant", str(uuid.uuid4()), "--json"])
    assert created.exit_code == 0, created.output
    minted = json.loads(created.stdout)
    secret = minted["api_key"].rsplit("_", 1)[1]
    revoked = runner.invoke(cli, ["api-key", "revoke", *admin, minted["api_key"]])
    assert secret not in revoked.stdout + revoked.stderr, revoked.stderr
    assert revoked.exit_code == 0 and revoked.stdout == f"revoked {minted['key_id']}\n"
    assert not _authenticates(db.dsn("app"), minted["api_key"])
    again = runner.invoke(cli, ["api-key", "revoke", *admin, minted["api_key"]])
    assert again.exit_code == 1 and f"no live key {minted['key_id']} " in again.stderr
    assert secret not in again.stdout + again.stderr


@pytest.mark.parametrize(("arguments", "field"), [
    (["--role", "superuser"], "--role"),
    (["--as", "app"], "--as"),
])
def test_role_choices_are_the_context_roles(db, arguments, field):
    result = CliRunner().invoke(cli, ["api-key", "create", "--dsn", db.dsn("platform_admin"),
                                      "--tenant", str(uuid.uuid4()), *arguments])
    assert result.exit_code == 2 and field in result.output


@pytest.mark.parametrize("command", [["list"], ["revoke", "mk_0000000000000000"]], ids=["list", "revoke"])
def test_tenant_admin_without_an_admin_tenant_is_a_usage_error_before_connecting(command):
    """list and revoke act in the admin context's tenant, which only --admin-tenant names (create defaults it to
    the key's tenant)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        refused = f"postgresql://nobody@127.0.0.1:{probe.getsockname()[1]}/memsub?connect_timeout=2"
    result = CliRunner().invoke(cli, ["api-key", command[0], "--dsn", refused, "--as", "tenant_admin", *command[1:]])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == ["memsub: --as tenant_admin needs --admin-tenant (field admin-tenant)"], \
        result.stderr


def test_tenant_admin_lists_and_revokes_the_keys_of_its_admin_tenant(db):
    tenant = uuid.uuid4()
    runner = CliRunner()
    admin = ["--dsn", db.dsn("tenant_admin"), "--as", "tenant_admin"]
    created = runner.invoke(cli, ["api-key", "create", *admin, "--tenant", str(tenant), "--json"])
    assert created.exit_code == 0, created.output
    key_id = json.loads(created.stdout)["key_id"]
    listed = runner.invoke(cli, ["api-key", "list", *admin, "--admin-tenant", str(tenant)])
    assert listed.exit_code == 0, listed.output
    assert [json.loads(line)["key_id"] for line in listed.stdout.splitlines()] == [key_id]
    revoked = runner.invoke(cli, ["api-key", "revoke", *admin, "--admin-tenant", str(tenant), key_id])
    assert revoked.exit_code == 0, revoked.output


def test_an_expiry_that_is_not_a_time_is_refused_naming_it_and_mints_nothing(db):
    with psycopg.connect(db.dsn()) as conn:
        before = conn.execute("select count(*) from memsub.api_keys").fetchone()
    result = CliRunner().invoke(cli, ["api-key", "create", "--dsn", db.dsn("platform_admin"),
                                      "--tenant", str(uuid.uuid4()), "--expires-at", "next tuesday"])
    assert result.exit_code == 2, result.output
    assert "field expires_at" in result.stderr and "ISO 8601" in result.stderr
    with psycopg.connect(db.dsn()) as conn:
        assert conn.execute("select count(*) from memsub.api_keys").fetchone() == before
