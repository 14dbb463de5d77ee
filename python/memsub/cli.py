"""The ``memsub`` command line: migrations, maintenance, the embedded cluster, and packet reads and writes.

Connection resolution for every command that needs a database: ``--dsn`` > ``MEMSUB_DSN`` > ``DATABASE_URL`` >
libpq's environment (``PGHOST``, ``PGSERVICE``, ...) > the embedded cluster (started on first use). Every such
command names the server it uses on stderr. Exit codes: see :mod:`memsub.exit_codes`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, get_args

import click

from memsub import embedded
from memsub.cli_common import (
    Target,
    dsn_option,
    emit_json,
    json_lines_option,
    json_option,
    print_rows,
    reachable_dsn,
    server_dsn,
    tenant_options,
)
from memsub.embedding import EMBEDDER_SPEC_HELP, embed_envelopes, resolve_embedder
from memsub.errors import ConfigurationError, InvalidInput, MemsubError, MigrationError, NotFound
from memsub.exit_codes import CANNOT_CONNECT, GuardedGroup, fail
from memsub.migrator import DEFAULT_LOCK_WAIT, Migrator
from memsub.models import PacketWriteResult
from memsub.packets import LineageDirection, write_packet_batch


@click.group(cls=GuardedGroup)
@click.version_option(package_name="memsub")
def main() -> None:
    """memsub: PostgreSQL-native memory substrate for AI agents."""


# -- migrations ----------------------------------------------------------------------------------------------

def _check_version(option: str, text: str | None) -> None:
    """A version the shipped migrations do not have (or no version at all) is bad input (exit 2), refused before
    connecting."""
    try:
        Migrator("").shipped_version(option, text)
    except MigrationError as error:
        raise InvalidInput(str(error), field=option.removeprefix("--")) from None


@main.command()
@dsn_option
@click.option("--to", "target", default=None, help="Stop at this version (default: the newest).")
@click.option("--dry-run", is_flag=True, help="Show what would be applied (after the preflight); change nothing.")
@click.option("--allow-out-of-order", is_flag=True,
              help="Also apply never-applied migrations older than the newest applied one (an upgrade from a "
                   "database whose history had them later), and say so.")
@click.option("--lock-wait", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_LOCK_WAIT,
              show_default=True, help="Seconds to wait for any lock before giving up and naming its holders.")
@json_option
def migrate(dsn: str | None, target: str | None, dry_run: bool, allow_out_of_order: bool, lock_wait: float,
            as_json: bool) -> None:
    """Check what installing needs (preflight), then apply pending migrations and the re-runnable SQL objects."""
    _check_version("--to", target)
    conninfo = reachable_dsn(dsn)
    try:
        report = Migrator(conninfo, lock_wait=lock_wait).migrate(target, dry_run=dry_run,
                                                                 allow_out_of_order=allow_out_of_order)
    except ValueError as error:
        fail(MemsubError(str(error)), as_json=as_json)
    if as_json:
        emit_json({"ok": True, "dry_run": report.dry_run, "planned": report.planned, "applied": report.applied,
                    "out_of_order": report.out_of_order, "repeatables_applied": report.repeatables_applied,
                    "notices": report.notices, "seconds": round(report.seconds, 3)})
        return
    for name in report.out_of_order:
        click.echo(f"out of order: {name} is older than the newest applied migration "
                   f"({'would be' if dry_run else 'is'} applied because of --allow-out-of-order)", err=True)
    for message in report.notices:
        click.echo(f"notice: {message}", err=True)
    if dry_run:
        click.echo("would apply: " + (", ".join(report.planned) if report.planned else "nothing"))
        return
    for name in report.applied:
        click.echo(f"applied {name}")
    if report.repeatables_applied:
        click.echo("applied re-runnable objects (sql/)")
    if not report.applied and not report.repeatables_applied:
        click.echo("nothing to do: the database is up to date")
    else:
        click.echo(f"done in {report.seconds:.2f}s")


@main.command("preflight")
@dsn_option
@json_option
def preflight_command(dsn: str | None, as_json: bool) -> None:
    """Check, without changing anything, what migrating this database needs: server version, CREATE on the
    database, extensions, roles and privileges. Exit 5 when something is missing."""
    from memsub import preflight
    from memsub.connection import connect
    from memsub.exit_codes import PREFLIGHT_REFUSED

    conninfo = server_dsn(dsn)
    migrator = Migrator(conninfo)
    pending_names = {e.name for e in migrator.status() if e.kind == "migration" and e.state == "pending"}
    pending = [m for m in migrator.migrations if m.path.name in pending_names]
    with connect(conninfo) as conn:
        checks = preflight.run_checks(conn, pending)
    ok = all(c.ok for c in checks)
    if as_json:
        emit_json({"ok": ok, "checks": [{"what": c.what, "ok": c.ok, "detail": c.detail} for c in checks]})
    else:
        for check in checks:
            click.echo(check.line())
    if not ok:
        sys.exit(PREFLIGHT_REFUSED)


@main.command()
@dsn_option
@json_option
def status(dsn: str | None, as_json: bool) -> None:
    """List every migration and re-runnable file with its state: applied, pending, drifted, changed, missing."""
    conninfo = reachable_dsn(dsn)
    entries = Migrator(conninfo).status()
    if as_json:
        counts: dict[str, int] = {}
        for entry in entries:
            counts[entry.state] = counts.get(entry.state, 0) + 1
        emit_json({"ok": True, "counts": counts, "entries": [
            {"kind": e.kind, "name": e.name, "state": e.state, "detail": e.detail or None,
             "applied_at": e.applied_at} for e in entries]})
        return
    width = max(len(e.name) for e in entries)
    for entry in entries:
        applied = entry.applied_at.isoformat(timespec="seconds") if entry.applied_at else ""
        detail = f"  ({entry.detail})" if entry.detail else ""
        click.echo(f"{entry.kind:<10}  {entry.name:<{width}}  {entry.state:<8}  {applied}{detail}")


@main.command("sql")
@click.option("--from", "from_version", default=None, help="Version the database is at (default: no memsub yet).")
@click.option("--to", "to_version", default=None, help="Version to reach (default: the newest).")
def sql_script(from_version: str | None, to_version: str | None) -> None:
    """Print one script for `psql -v ON_ERROR_STOP=1 -f` that reaches the same end state as `migrate`."""
    _check_version("--from", from_version)
    _check_version("--to", to_version)
    try:
        script = Migrator("").script(from_version, to_version)
    except MigrationError as error:  # both are shipped: --from is after --to
        raise InvalidInput(str(error), field="from") from None
    click.echo(script, nl=False)


# -- embedded cluster ----------------------------------------------------------------------------------------

data_dir_option = click.option("--data-dir", type=click.Path(path_type=Path), default=None,
                               help="Cluster data directory (default: MEMSUB_DATA_DIR or the user data dir).")


@main.group()
def db() -> None:
    """Manage the embedded PostgreSQL cluster."""


@db.command("start")
@data_dir_option
def db_start(data_dir: Path | None) -> None:
    """Start the embedded cluster (initializing it on first use) and print its URL."""
    try:
        url = embedded.start(data_dir)
    except embedded.NotAClusterDirectory as error:
        fail(ConfigurationError(str(error)))
    click.echo(url)
    click.echo(f"memsub: the embedded cluster keeps running; stop it with: memsub db stop"
               f"{' --data-dir ' + str(data_dir) if data_dir else ''}", err=True)


@db.command("stop")
@data_dir_option
def db_stop(data_dir: Path | None) -> None:
    """Stop the embedded cluster."""
    click.echo("stopped" if embedded.stop(data_dir) else "not running")


@db.command("status")
@data_dir_option
@json_option
def db_status(data_dir: Path | None, as_json: bool) -> None:
    """Show whether the embedded cluster is initialized and running (exit 3 when it is not running)."""
    current = embedded.status(data_dir)
    state = "running" if current.running else ("stopped" if current.initialized else "not initialized")
    if as_json:
        emit_json({"data_dir": str(current.data_dir), "state": state, "pid": current.pid, "url": current.url})
        if not current.running:
            sys.exit(CANNOT_CONNECT)
        return
    click.echo(f"data directory: {current.data_dir}")
    click.echo(f"state: {state}" + (f" (pid {current.pid})" if current.pid else ""))
    if current.url:
        click.echo(f"url: {current.url}")
    if not current.running:
        sys.exit(CANNOT_CONNECT)


@db.command("url")
@data_dir_option
def db_url(data_dir: Path | None) -> None:
    """Print the running embedded cluster's connection URL."""
    current = embedded.status(data_dir)
    if not current.url:
        fail(MemsubError("the embedded cluster is not running (memsub db start)"))
    click.echo(current.url)


# -- packets -------------------------------------------------------------------------------------------------

@main.group()
def packet() -> None:
    """Write and read PacketEnvelopes."""


def _read_envelopes(stream: IO[str]) -> Iterator[dict[str, Any]]:
    """Envelopes from JSON (an object or an array) or JSON Lines."""
    first = ""
    while not first:
        char = stream.read(1)
        if not char:
            return
        if not char.isspace():
            first = char
    if first == "[":
        yield from json.loads(first + stream.read())
        return
    rest = stream.readline()
    head = first + rest
    try:
        whole = json.loads(head)
    except json.JSONDecodeError:
        # a pretty-printed single JSON object spans lines
        yield json.loads(head + stream.read())
        return
    yield whole
    for number, line in enumerate(stream, start=2):
        if line.strip():
            try:
                yield json.loads(line)
            except json.JSONDecodeError as error:
                raise InvalidInput(f"line {number}: not valid JSON: {error}; nothing was written") from error


@packet.command("write")
@click.argument("source", type=click.File("r"))
@tenant_options
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(min=1),
              help="Envelopes per memsub.write_packets call.")
@click.option("--embedder", "embedder_spec", envvar="MEMSUB_EMBEDDER", default=None,
              help=f"Embed each envelope's payload.text on write (its content vector, unless it brings one): "
                   f"{EMBEDDER_SPEC_HELP}. Without one, only the vectors the envelopes carry are stored.")
@click.option("--json", "as_json", is_flag=True, help="Print one PacketWriteResult per envelope as JSON Lines.")
def packet_write(source: IO[str], target: Target, batch_size: int, embedder_spec: str | None,
                 as_json: bool) -> None:
    """Write envelopes from FILE (JSON or JSON Lines; - for stdin), all in one transaction."""
    try:
        envelopes = list(_read_envelopes(source))
    except json.JSONDecodeError as error:
        raise InvalidInput(f"input is not valid JSON: {error}; nothing was written") from error
    results = []
    try:
        with target.session(writes="memsub packet write") as session:
            embedder = resolve_embedder(embedder_spec, session.vector_dimension()) if embedder_spec else None
            with click.progressbar(length=len(envelopes), label="writing packets", file=sys.stderr,
                                   show_pos=True) as bar:
                for start in range(0, len(envelopes), batch_size):
                    chunk = envelopes[start:start + batch_size]
                    if embedder is not None:
                        embed_envelopes(chunk, embedder)
                    written: list[PacketWriteResult] = session.run(write_packet_batch(chunk, offset=start))
                    results.extend(written)
                    bar.update(len(chunk))
    except MemsubError as error:
        fail(error, suffix="; nothing was written")
    if as_json:
        for result in results:
            click.echo(result.model_dump_json())
    deduplicated = sum(1 for r in results if r.deduplicated)
    click.echo(f"wrote {len(results) - deduplicated} packet(s), {deduplicated} deduplicated", err=as_json)


@packet.command("get")
@click.argument("packet_id")
@tenant_options
def packet_get(packet_id: str, target: Target) -> None:
    """Print one packet's stored envelope (exit 1 when it does not exist or is not visible)."""
    with target.session() as session:
        row = session.packets.get(packet_id)
    if row is None:
        fail(NotFound(f"packet {packet_id} does not exist or is not visible"))
    click.echo(json.dumps(row.envelope, indent=2, sort_keys=True))


@packet.command("thread")
@click.argument("thread_id")
@tenant_options
@click.option("--limit", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Packets per page, at most the max_rows limit (10000 unless raised).")
@click.option("--after", "after_cursor", type=int, default=None,
              help="Continue after this cursor (the write_seq printed by the previous page).")
@click.option("--all", "read_all", is_flag=True, help="Read every page, --limit packets at a time.")
@json_lines_option
def packet_thread(thread_id: str, target: Target, limit: int, after_cursor: int | None, read_all: bool,
                  as_json: bool) -> None:
    """Replay a thread in write order (parents before children), one page or --all. A full page says that more
    packets may follow, with the cursor to continue from (the next page may be empty)."""
    with target.session() as session:
        if read_all:
            rows = list(session.packets.replay(thread_id, page_size=limit, after_cursor=after_cursor))
        else:
            # a page of exactly --limit rows, so that --limit may be as large as max_rows: a full one may have more
            # after it, as the MCP and HTTP thread pages say
            rows = session.packets.get_thread(thread_id, limit=limit, after_cursor=after_cursor)
    print_rows(rows, ["write_seq", "timestamp", "packet_type", "packet_id", "tags", "scope"], as_json)
    if not read_all and rows and len(rows) == limit:
        click.echo(f"showing {len(rows)} packets, a full page; more packets may follow: continue with --after "
                   f"{rows[-1].write_seq} (or read them all with --all)", err=True)


@packet.command("lineage")
@click.argument("packet_id")
@tenant_options
@click.option("--direction", type=click.Choice(get_args(LineageDirection)), default="ancestors",
              show_default=True)
@click.option("--max-depth", default=16, show_default=True)
@json_lines_option
def packet_lineage(packet_id: str, target: Target, direction: str, max_depth: int, as_json: bool) -> None:
    """Walk a packet's lineage (ancestors or descendants), breadth first (exit 1 when the packet does not exist or
    is not visible; a packet without parents or children prints no row)."""
    with target.session() as session:
        rows = session.packets.get_lineage(packet_id, direction, max_depth)  # type: ignore[arg-type]
    print_rows(rows, ["depth", "packet_type", "packet_id", "parent_ids", "state"], as_json)


def _register_commands() -> None:
    from memsub.cli_http import api_key_group, serve_command
    from memsub.cli_ingest import ingest_command
    from memsub.cli_limits import login_timeouts_command
    from memsub.cli_maintain import maintain_command
    from memsub.cli_mcp import mcp_command
    from memsub.cli_search import graph_group, search_command
    from memsub.cli_tenant import tenant_group
    from memsub.cli_vector_index import vector_index_group
    from memsub.cli_verify import repair, verify
    from memsub.cli_views import refresh_views_command

    main.add_command(verify)
    main.add_command(repair)
    main.add_command(refresh_views_command)
    main.add_command(maintain_command)
    main.add_command(ingest_command)
    main.add_command(search_command)
    main.add_command(graph_group)
    main.add_command(login_timeouts_command)
    main.add_command(serve_command)
    main.add_command(api_key_group)
    main.add_command(mcp_command)
    main.add_command(vector_index_group)
    main.add_command(tenant_group)


_register_commands()

if __name__ == "__main__":
    main()
