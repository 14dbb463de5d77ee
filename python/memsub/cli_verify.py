"""``memsub verify`` and ``memsub repair``: the installed catalog against what the shipped SQL produces."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click
import psycopg

from memsub import catalog_check
from memsub.cli_common import dsn_option, reachable_dsn
from memsub.errors import HotStandbyError, MemsubError
from memsub.exit_codes import BAD_INPUT, fail
from memsub.migrator import Migrator

_REFERENCES = {"snapshot": "the shipped catalog snapshot", "scratch": "a scratch database built from the shipped SQL",
               "reference-dsn": "the database given by --reference-dsn"}


def _reference_options(function: Any) -> Any:
    for option in reversed([
        dsn_option,
        click.option("--reference", "mode", type=click.Choice(["auto", "snapshot", "scratch"]), default="auto",
                     show_default=True,
                     help="Where the expected catalog comes from: the snapshot shipped in the package, a scratch "
                          "database built from the shipped SQL on the same server (needs CREATEDB), or auto "
                          "(the snapshot when the server's major version matches it, else scratch if allowed)."),
        click.option("--reference-dsn", default=None,
                     help="A clean memsub installation to compare with instead (same memsub version)."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON document."),
    ]):
        function = option(function)
    return function


def verify_problems(migrator: Migrator) -> list[str] | None:
    """On a database without memsub: every shipped file, as pending (``verify`` lists them instead of failing).
    None when memsub is installed (the full comparison then applies)."""
    if migrator.current_version() is not None:
        return None
    return [f"pending: {'migrations' if e.kind == 'migration' else 'sql'}/{e.name} is not applied "
            "(no memsub in this database: run memsub migrate)" for e in migrator.status()]


def _history(text: str) -> dict[str, Any]:
    return {"kind": "history", "object": text, "attribute": None, "state": text.split(":", 1)[0],
            "expected": None, "found": None}


def _cannot(what: str, error: Exception, as_json: bool) -> NoReturn:
    """The comparison itself was impossible: exit 2, in the one-line and JSON shape of every command's error. A
    repair pointed at a hot standby exits with that error's own code (6)."""
    if isinstance(error, HotStandbyError):
        fail(error, as_json=as_json)
    fail(error, as_json=as_json, prefix=f"cannot {what}: ", code=BAD_INPUT)


@click.command()
@_reference_options
def verify(dsn: str | None, mode: str, reference_dsn: str | None, as_json: bool) -> None:
    """Exit 1, naming each difference, when the database differs from what the shipped SQL produces: migration
    history, and every function, policy, privilege, index, constraint, trigger, view, owner and row-level
    security flag in schema memsub (and objects that should not be there). Exit 2 when it cannot compare."""
    target = reachable_dsn(dsn)  # cannot connect: exit 3, wrong password or no database: one line (memsub.exit_codes)
    notes: list[str] = []
    try:
        migrator = Migrator(target)
        without_memsub = verify_problems(migrator)
        problems = without_memsub if without_memsub is not None else migrator.verify()
        pending = any(p.startswith("pending: migrations/") for p in problems)
        differences: list[catalog_check.Difference] = []
        source = None
        if pending:
            notes.append("catalog not compared: migrations are pending (run memsub migrate)")
        else:
            differences, expected = catalog_check.verify_catalog(target, mode, reference_dsn)
            source = expected.source
            notes += expected.notes
    except (MemsubError, ValueError, psycopg.Error) as error:
        _cannot("verify", error, as_json)
    ok = not problems and not differences
    if as_json:
        click.echo(json.dumps({
            "ok": ok, "reference": source, "notes": notes,
            "differences": [_history(p) for p in problems] + [d.as_json() for d in differences]}, indent=1))
    else:
        for problem in problems:
            click.echo(problem)
        for difference in differences:
            click.echo(difference.describe())
        for note in notes:
            click.echo(f"note: {note}", err=True)
    if not ok:
        click.echo(f"memsub: {len(problems) + len(differences)} difference(s) from the shipped SQL"
                   + (f" (compared with {_REFERENCES[source]})" if source else ""), err=True)
        sys.exit(1)
    if not as_json:
        click.echo(f"ok: the database matches the shipped migrations and objects (compared with "
                   f"{_REFERENCES[source or 'snapshot']})")


@click.command()
@_reference_options
def repair(dsn: str | None, mode: str, reference_dsn: str | None, as_json: bool) -> None:
    """Restore schema memsub to what the shipped SQL produces and report what was restored.

    Drops policies, triggers, rules, functions, views, indexes and constraints that should not be there,
    re-applies the re-runnable SQL (sql/), and restores what migrations created (indexes, constraints, row-level
    security flags, defaults, owners, privileges, memsub role attributes and memberships). Unexpected tables,
    columns, sequences and types are reported, never dropped. A statement that fails is printed on one line and
    the rest is still restored. Exit 1 when differences remain."""
    target = reachable_dsn(dsn)  # cannot connect: exit 3 (memsub.exit_codes)
    try:
        report = catalog_check.repair(target, mode, reference_dsn)
    except (MemsubError, ValueError, psycopg.Error) as error:
        _cannot("repair", error, as_json)
    ok = not report.remaining
    if as_json:
        click.echo(json.dumps({
            "ok": ok, "reference": report.reference.source if report.reference else None,
            "restored": [d.as_json() for d in report.restored], "actions": report.actions,
            "failures": report.failures, "differences": [d.as_json() for d in report.remaining]}, indent=1))
    else:
        for difference in report.restored:
            click.echo(f"restored: {difference.describe_restored()}")
        for failure in report.failures:
            click.echo(f"failed: {failure}")
        for difference in report.remaining:
            click.echo(f"still different: {difference.describe()}")
    if not ok:
        click.echo(f"memsub: {len(report.remaining)} difference(s) remain; they need a person", err=True)
        sys.exit(1)
    if not as_json:
        click.echo(f"ok: {len(report.restored)} difference(s) restored; the catalog matches the shipped SQL")
