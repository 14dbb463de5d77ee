"""``memsub mcp``: serve memsub's memory tools over the Model Context Protocol (docs/mcp.md).

Needs the ``mcp`` extra (``pip install 'memsub[mcp]'``). The identity every tool call acts for is set here, once:
``--tenant`` (with ``--org``, ``--user``, ``--role``, ``--session``) or a signed context token; tool arguments
never name a tenant. Over stdio, stdout carries the protocol only: every message of memsub goes to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from uuid import UUID

import click

from memsub.cli_common import UUID_TEXT, context_role_option, dsn_option, prepare_threshold_option, reachable_dsn
from memsub.embedding import EMBEDDER_SPEC_HELP, default_embedder_name, describe_embedder, resolve_embedder
from memsub.errors import ConfigurationError, MemsubError
from memsub.exit_codes import fail


def _uuid(value: str | None) -> UUID | None:
    """An option's UUID, which UUID_TEXT checked as the command line was read."""
    return None if value is None else UUID(value)


@click.command("mcp")
@dsn_option
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio: an MCP client starts this command; http: serve streamable HTTP on --host:--port.")
@click.option("--host", default="127.0.0.1", show_default=True, help="http: address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="http: port.")
@click.option("--path", "http_path", default="/mcp", show_default=True, help="http: endpoint path.")
@click.option("--tenant", "tenant_id", envvar="MEMSUB_TENANT", default=None, type=UUID_TEXT,
              help="Tenant UUID every call acts for (or MEMSUB_TENANT).")
@click.option("--org", "org_id", envvar="MEMSUB_ORG", default=None, type=UUID_TEXT,
              help="Organization UUID (or MEMSUB_ORG).")
@click.option("--user", "user_id", envvar="MEMSUB_USER", default=None, type=UUID_TEXT,
              help="User UUID (or MEMSUB_USER).")
@context_role_option("Context role (needs membership in the matching memsub role).")
@click.option("--session", "session_id", envvar="MEMSUB_SESSION", default=None,
              help="Session identifier (or MEMSUB_SESSION).")
@click.option("--context-token", "token", envvar="MEMSUB_CONTEXT_TOKEN", default=None,
              help="A signed context token (memsub.set_context_signed) naming the identity instead "
                   "(or MEMSUB_CONTEXT_TOKEN). Other users of the machine see it in ps: prefer "
                   "MEMSUB_CONTEXT_TOKEN or a token file.")
@click.option("--context-token-file", "token_file", envvar="MEMSUB_CONTEXT_TOKEN_FILE", default=None,
              type=click.Path(path_type=Path, dir_okay=False),
              help="A file holding a signed context token, read again for every call, so a gateway can "
                   "replace short-lived tokens (or MEMSUB_CONTEXT_TOKEN_FILE).")
@click.option("--embedder", envvar="MEMSUB_EMBEDDER", default=None,
              help=f"How texts and queries are embedded: {EMBEDDER_SPEC_HELP}; the one that embedded the stored "
                   "texts. Default: minilm when memsub[embed] is installed, else hashing.")
@click.option("--agent-id", envvar="MEMSUB_AGENT_ID", default=None,
              help="Recorded as the packets' provenance and in the access log (or MEMSUB_AGENT_ID).")
@click.option("--pool-size", type=click.IntRange(1, 100), default=4, show_default=True,
              help="Database connections at most.")
@prepare_threshold_option
def mcp_command(dsn: str | None, transport: str, host: str, port: int, http_path: str, tenant_id: str | None,
                org_id: str | None, user_id: str | None, roles: tuple[str, ...], session_id: str | None,
                token: str | None, token_file: Path | None, embedder: str | None, agent_id: str | None,
                pool_size: int, prepare_threshold: int | None) -> None:
    """Serve memory tools (remember, recall, thread replay, graph lookups as of a time, feedback) to MCP clients,
    acting for one configured identity."""
    try:
        import anyio

        from memsub.mcp_server import Identity, MemoryTools, build_server, check_identity, serve_stdio
    except ImportError as error:
        fail(ConfigurationError(f"memsub mcp needs the mcp extra: pip install 'memsub[mcp]' ({error})"))
    from memsub.client import Substrate

    try:
        identity = Identity(tenant_id=_uuid(tenant_id), org_id=_uuid(org_id), user_id=_uuid(user_id), roles=roles,
                            session_id=session_id, token=token or None, token_file=token_file)
    except ValueError as error:
        fail(ConfigurationError(str(error)))
    substrate = Substrate(reachable_dsn(dsn), max_size=pool_size, timeout=10.0, prepare_threshold=prepare_threshold)
    try:
        try:
            dimension = check_identity(substrate, identity)
        except MemsubError as error:
            fail(error, suffix=f" (the identity: {identity.describe()})")
        try:
            chosen = resolve_embedder(embedder, dimension)
        except MemsubError as error:
            fail(error)
        tools = MemoryTools(substrate, identity, chosen, agent_id=agent_id)
        how = "chosen" if embedder else f"default: {default_embedder_name()}"
        click.echo(f"memsub: MCP tools act for {identity.describe()}; texts embedded by "
                   f"{describe_embedder(tools.embedder)} [{how}]", err=True)
        server = build_server(tools)
        if transport == "stdio":
            anyio.run(serve_stdio, server)
        else:
            click.echo(f"memsub: serving MCP over streamable HTTP on http://{host}:{port}{http_path}", err=True)
            server.run("streamable-http", host=host, port=port, streamable_http_path=http_path)
    finally:
        substrate.close()
    sys.exit(0)
