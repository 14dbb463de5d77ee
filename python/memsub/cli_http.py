"""``memsub serve`` (the HTTP API, docs/http.md) and ``memsub api-key`` (its credentials)."""

from __future__ import annotations

import sys
from typing import Any, get_args

import click

from memsub import api_keys
from memsub._calls import ContextRole
from memsub.cli_common import (
    UUID_TEXT,
    context_role_option,
    emit_json_lines,
    prepare_threshold_option,
    primary_dsn,
    reachable_dsn,
)
from memsub.client import Substrate
from memsub.errors import InvalidInput


@click.command("serve")
@click.option("--dsn", default=None, help="libpq connection string of the server's own login (default: MEMSUB_DSN, "
                                          "DATABASE_URL, libpq's PG* environment, then the embedded cluster).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--pool-size", default=10, show_default=True, type=click.IntRange(1, 1000),
              help="Database connections at most.")
@click.option("--max-body-bytes", default=None, type=click.IntRange(1), help="Largest request body accepted "
              "(default: 16 MiB + 64 KiB, a full batch under memsub's max_batch_bytes); larger ones get 413.")
@prepare_threshold_option
def serve_command(dsn: str | None, host: str, port: int, pool_size: int, max_body_bytes: int | None,
                  prepare_threshold: int | None) -> None:
    """Serve the HTTP API (seed 004's POST /api/v1/memory/packet and the routes of docs/http.md). Every request
    authenticates with an API key (memsub api-key create) and acts for that key's tenant."""
    try:
        import uvicorn

        from memsub.http_api import DEFAULT_MAX_BODY_BYTES, create_app, http_protocol
    except ImportError as error:  # the optional extra is not installed
        click.echo(f"memsub: the HTTP API needs the http extra (pip install 'memsub[http]'): {error}", err=True)
        sys.exit(2)
    conninfo = reachable_dsn(dsn)
    app = create_app(conninfo, max_size=pool_size, max_body_bytes=max_body_bytes or DEFAULT_MAX_BODY_BYTES,
                     prepare_threshold=prepare_threshold)
    click.echo(f"memsub: serving http://{host}:{port}/api/v1 (OpenAPI: /api/v1/openapi.json)", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", http=http_protocol())


@click.group("api-key")
def api_key_group() -> None:
    """Create, list and revoke API keys of the HTTP API (needs a tenant_admin or platform_admin login)."""


def _admin_options(function: Any) -> Any:
    for option in reversed([
        click.option("--dsn", default=None, help="libpq connection string of an admin login."),
        click.option("--as", "admin_role", type=click.Choice(sorted(get_args(ContextRole), reverse=True)),
                     default="platform_admin", show_default=True,
                     help="The context role to act with (the login must be a member of memsub_<role>)."),
        click.option("--admin-tenant", default=None, type=UUID_TEXT,
                     help="Tenant of the admin context: with --as tenant_admin, list and revoke need it, and "
                          "create defaults to the key's tenant."),
    ]):
        function = option(function)
    return function


def _substrate(dsn: str | None, writes: str | None = None) -> Substrate:
    """A one-connection Substrate; ``writes`` names a command that changes the database (a hot standby is
    refused up front)."""
    return Substrate(reachable_dsn(dsn) if writes is None else primary_dsn(dsn, writes), max_size=1, timeout=10.0)


def _admin_tenant(admin_role: str, admin_tenant: str | None) -> str | None:
    """The admin context's tenant; a tenant_admin context needs one (bad input, before connecting)."""
    if admin_role == "tenant_admin" and admin_tenant is None:
        raise InvalidInput("--as tenant_admin needs --admin-tenant", field="admin-tenant")
    return admin_tenant


@api_key_group.command("create")
@_admin_options
@click.option("--tenant", "tenant_id", required=True, type=UUID_TEXT,
              help="Tenant UUID every request with the key acts for.")
@click.option("--org", "org_id", default=None, type=UUID_TEXT, help="Organization UUID.")
@click.option("--user", "user_id", default=None, type=UUID_TEXT, help="User UUID.")
@context_role_option("Context role of the key's requests (the serving login needs memsub_<role>).")
@click.option("--label", default="", help="Who holds the key, or what for.")
@click.option("--expires-at", default=None, help="ISO 8601 time after which the key stops working.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def api_key_create(dsn: str | None, admin_role: str, admin_tenant: str | None, tenant_id: str, org_id: str | None,
                   user_id: str | None, roles: tuple[str, ...], label: str, expires_at: str | None,
                   as_json: bool) -> None:
    """Mint an API key (memsub.create_api_key). The key is printed once: only its sha256 is stored."""
    context_tenant = admin_tenant or (tenant_id if admin_role == "tenant_admin" else None)
    with _substrate(dsn, "memsub api-key create") as substrate, \
            substrate.tenant(context_tenant, roles=[admin_role]) as session:
        minted = session.run(api_keys.create_api_key(
            tenant_id, org_id=org_id, user_id=user_id, roles=roles,  # type: ignore[arg-type]
            label=label, expires_at=expires_at))
    if as_json:
        emit_json_lines([minted])
    else:
        click.echo(minted.api_key)
        click.echo(f"memsub: key {minted.key_id} for tenant {minted.tenant_id}; it is shown only now", err=True)


@api_key_group.command("revoke")
@_admin_options
@click.argument("key_id")
def api_key_revoke(dsn: str | None, admin_role: str, admin_tenant: str | None, key_id: str) -> None:
    """Revoke a key by its KEY_ID (memsub.revoke_api_key); exit 1 when no live key of the context has it. Given
    the whole key, revokes it by its id and prints only the id."""
    key_id = api_keys.key_id_of(key_id)
    context_tenant = _admin_tenant(admin_role, admin_tenant)
    with _substrate(dsn, "memsub api-key revoke") as substrate, \
            substrate.tenant(context_tenant, roles=[admin_role]) as session:
        revoked = session.run(api_keys.revoke_api_key(key_id))
    if not revoked:
        click.echo(f"memsub: no live key {key_id} in this context", err=True)
        sys.exit(1)
    click.echo(f"revoked {key_id}")


@api_key_group.command("list")
@_admin_options
def api_key_list(dsn: str | None, admin_role: str, admin_tenant: str | None) -> None:
    """The keys of the context (memsub.list_api_keys) as JSON Lines, without their secrets."""
    context_tenant = _admin_tenant(admin_role, admin_tenant)
    with _substrate(dsn) as substrate, substrate.tenant(context_tenant, roles=[admin_role]) as session:
        keys = session.run(api_keys.list_api_keys())
    emit_json_lines(keys)
