"""``memsub refresh-views``: refresh the materialized views and print what the refresh log recorded."""

from __future__ import annotations

import sys

import click
import psycopg

from memsub.connection import resolve
from memsub.exit_codes import fail


@click.command("refresh-views")
@click.option("--dsn", default=None,
              help="libpq connection string (default: MEMSUB_DSN, DATABASE_URL, then embedded cluster).")
def refresh_views_command(dsn: str | None) -> None:
    """Refresh the materialized views (CALL memsub.refresh_memory_views()), one transaction per view.

    Exits 1 when a view failed or was skipped because another refresh of it was running."""
    try:
        # The procedure commits after each view, so it must run outside a transaction block.
        with psycopg.connect(resolve(dsn, announce=True).dsn, autocommit=True) as conn:
            called = conn.execute("call memsub.refresh_memory_views(null)").fetchone()
            if called is None or called[0] is None:
                raise click.ClickException("memsub.refresh_memory_views() returned no run id")
            rows = conn.execute(
                "select view_name, method, status, duration_ms, row_count, error "
                "from memsub.memory_view_refresh_log where run_id = %s order by started_at", [called[0]]).fetchall()
    except psycopg.Error as error:
        fail(error)
    failed = 0
    skipped = 0
    for view_name, method, status, duration_ms, row_count, error_text in rows:
        detail = f"{row_count} rows" if status == "ok" else str(error_text)
        click.echo(f"{view_name}: {status} ({method}, {duration_ms:.1f} ms, {detail})")
        failed += status == "error"
        skipped += status == "skipped"
    if not rows:
        click.echo("memsub: the refresh logged nothing", err=True)
        sys.exit(1)
    if skipped:
        click.echo(f"memsub: {skipped} view(s) skipped: another refresh of them was running", err=True)
    if failed:
        click.echo(f"memsub: {failed} view(s) failed", err=True)
    if failed or skipped:
        sys.exit(1)
