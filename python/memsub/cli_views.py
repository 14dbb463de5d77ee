"""``memsub refresh-views``: refresh the materialized views and print what the refresh log recorded."""

from __future__ import annotations

import sys
from typing import Any, Literal

import click

from memsub.cli_common import dsn_option, emit_json, reachable_dsn
from memsub.connection import connect, lift_run_timeouts, refuse_on_standby
from memsub.errors import MemsubError
from memsub.exit_codes import CHECK_FAILED, fail

ViewRefreshStatus = Literal["ok", "error", "skipped"]
ViewRefreshMethod = Literal["concurrently", "full", "none"]
"""How the refresh of a view ended (memory_view_refresh_log.status, the database's view_refresh_statuses())."""


def refresh_all_views(conninfo: str) -> list[Any]:
    """CALL memsub.refresh_memory_views() and what its log recorded of that run, one row per view: view_name,
    method, status, duration_ms, row_count, error. The procedure commits after each view, so it runs outside a
    transaction block; the login's statement timeout would cancel the run partway (the CALL is one statement for
    every view): lifted."""
    with connect(conninfo, autocommit=True) as conn:
        refuse_on_standby(conn, "refreshing the views")
        lift_run_timeouts(conn)
        called: Any = conn.execute("call memsub.refresh_memory_views(null)").fetchone()
        if called is None or called[0] is None:
            raise MemsubError("memsub.refresh_memory_views() returned no run id")
        return conn.execute(
            "select view_name, method, status, duration_ms, row_count, error "
            "from memsub.memory_view_refresh_log where run_id = %s order by started_at", [called[0]]).fetchall()


@click.command("refresh-views")
@dsn_option
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one refreshed view per line.")
def refresh_views_command(dsn: str | None, as_json: bool) -> None:
    """Refresh the materialized views (CALL memsub.refresh_memory_views()), one transaction per view.

    Exits 1 when a view failed or was skipped because another refresh of it was running, 6 when the server is
    a hot standby (the views are refreshed on the primary)."""
    rows = refresh_all_views(reachable_dsn(dsn))
    failed = 0
    skipped = 0
    for view_name, how, logged, duration_ms, row_count, error_text in rows:
        method: ViewRefreshMethod = how
        status: ViewRefreshStatus = logged
        if as_json:
            emit_json({"view_name": view_name, "method": method, "status": status, "duration_ms": duration_ms,
                       "row_count": row_count, "error": error_text})
        else:
            detail = f"{row_count} rows" if status == "ok" else str(error_text)
            click.echo(f"{view_name}: {status} ({method}, {duration_ms:.1f} ms, {detail})")
        failed += status == "error"
        skipped += status == "skipped"
    if not rows:
        fail(MemsubError("the refresh logged nothing"))
    if skipped:
        click.echo(f"memsub: {skipped} view(s) skipped: another refresh of them was running", err=True)
    if failed:
        click.echo(f"memsub: {failed} view(s) failed", err=True)
    if failed or skipped:
        sys.exit(CHECK_FAILED)
