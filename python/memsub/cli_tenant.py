"""``memsub tenant erase``: delete every row of one tenant (a customer leaving, a data-protection erasure request)."""

from __future__ import annotations

import sys
from typing import Any

import click

from memsub import _calls
from memsub.cli_common import UUID_TEXT, dsn_option, emit_json_lines, primary_dsn, print_table
from memsub.cli_views import refresh_all_views
from memsub.connection import connect, lift_run_timeouts
from memsub.errors import InvalidInput
from memsub.exit_codes import CHECK_FAILED


@click.group("tenant")
def tenant_group() -> None:
    """Operations on a whole tenant, for platform admins."""


@tenant_group.command("erase")
@click.argument("tenant_id", type=UUID_TEXT)
@dsn_option
@click.option("--yes", is_flag=True, help="Confirm: every row of the tenant is deleted, with no way back.")
@click.option("--no-refresh-views", "refresh_views", is_flag=True, flag_value=False, default=True,
              help="Leave the materialized views as they are (they keep the tenant's aggregates until the next "
                   "memsub refresh-views).")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one table and the rows it lost per line.")
def tenant_erase(tenant_id: str, dsn: str | None, yes: bool, refresh_views: bool, as_json: bool) -> None:
    """Delete every row of TENANT_ID from every memsub table, with its login bindings, in one transaction
    (memsub.erase_tenant), then refresh the materialized views. Needs a login that is a member of
    memsub_platform_admin (exit 4 otherwise) and --yes (exit 2 without it).

    Exits 1 when the erasure committed but a view refresh failed or was skipped (run memsub refresh-views)."""
    if not yes:
        raise InvalidInput(f"memsub tenant erase deletes every row of tenant {tenant_id}: pass --yes to confirm",
                           field="yes")
    conninfo = primary_dsn(dsn, "memsub tenant erase")
    with connect(conninfo) as conn:
        lift_run_timeouts(conn)
        context = _calls.set_context(None, None, None, ["platform_admin"], None)
        conn.execute(context.statement, context.params)
        rows: list[Any] = conn.execute("select table_name, deleted from memsub.erase_tenant(%s, %s) "
                                       "order by table_name", [tenant_id, tenant_id]).fetchall()
        conn.commit()
    if as_json:
        emit_json_lines([{"table_name": table_name, "deleted": deleted} for table_name, deleted in rows])
    else:
        print_table(("table_name", "deleted"), [tuple(row) for row in rows])
    click.echo(f"memsub: erased tenant {tenant_id}: {sum(int(row[1]) for row in rows)} rows", err=True)
    if not refresh_views:
        click.echo("memsub: the materialized views keep the tenant's aggregates until memsub refresh-views runs",
                   err=True)
        return
    unrefreshed = sum(1 for row in refresh_all_views(conninfo) if row[2] != "ok")
    if unrefreshed:
        click.echo(f"memsub: {unrefreshed} view(s) not refreshed: run memsub refresh-views", err=True)
        sys.exit(CHECK_FAILED)
