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
    """Refresh the materialized views (CALL memsub.refresh_memory_views()), one transaction per view."""
    try:
        # The procedure commits after each view, so it must run outside a transaction block.
        with psycopg.connect(resolve(dsn, announce=True).dsn, autocommit=True) as conn:
            conn.execute("call memsub.refresh_memory_views()")
            rows = conn.execute(
                "select view_name, method, status, duration_ms, row_count, error "
                "from memsub.memory_view_refresh_log "
                "where run_id = (select run_id from memsub.memory_view_refresh_log "
                "                order by started_at desc limit 1) "
                "order by started_at").fetchall()
    except psycopg.Error as error:
        fail(error)
    failed = False
    for view_name, method, status, duration_ms, row_count, error_text in rows:
        detail = f"{row_count} rows" if status == "ok" else str(error_text)
        click.echo(f"{view_name}: {status} ({method}, {duration_ms:.1f} ms, {detail})")
        failed = failed or status != "ok"
    if failed:
        sys.exit(1)
