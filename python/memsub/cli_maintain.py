"""``memsub maintain``: run the periodic tasks once (cron, Kubernetes CronJob) or every INTERVAL (a worker)."""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any

import click

from memsub.cli_common import reachable_dsn
from memsub.errors import InvalidInput
from memsub.exit_codes import CHECK_FAILED, fail
from memsub.maintain import TASKS, format_round, parse_interval, run_round


@click.command("maintain")
@click.option("--dsn", default=None,
              help="libpq connection string of a member of memsub_platform_admin (default: MEMSUB_DSN, "
                   "DATABASE_URL, libpq's PG* environment, then the embedded cluster).")
@click.option("--task", "tasks", multiple=True, type=click.Choice(TASKS),
              help="Run only this task (repeatable; default: all, in the documented order).")
@click.option("--every", default=None, metavar="INTERVAL",
              help="Keep running: one round every INTERVAL (30s, 15m, 1h, 1d) until SIGTERM or SIGINT.")
@click.option("--rounds", type=click.IntRange(min=1), default=None,
              help="With --every: stop after this many rounds.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per round on stdout.")
def maintain_command(dsn: str | None, tasks: tuple[str, ...], every: str | None, rounds: int | None,
                     as_json: bool) -> None:
    """Purge expired packets, refresh the views, learn importance, maintain short-term memory, report summaries due.

    Exit status: 0 when every task succeeded, 1 when a task failed or was skipped because another run held its
    lock (a worker keeps going, and exits 1 at the end if any round did not succeed), 3 when the server is
    unreachable, 6 when it is a hot standby (maintenance runs on the primary).
    """
    period = parse_interval(every) if every else None
    if rounds is not None and period is None:
        fail(InvalidInput("--rounds needs --every", field="rounds"), as_json=as_json)
    conninfo = reachable_dsn(dsn)
    stop = threading.Event()
    found: dict[signal.Signals, Any] = {}  # the handlers the worker replaced, given back when it returns
    if period is not None:
        def on_signal(signum: int, frame: FrameType | None) -> None:
            click.echo(f"memsub: signal {signum}: stopping after the current round", err=True)
            stop.set()

        if threading.current_thread() is threading.main_thread():
            for caught in (signal.SIGTERM, signal.SIGINT):
                found[caught] = signal.signal(caught, on_signal)
    try:
        any_failed = _run_rounds(conninfo, tasks, period, rounds, as_json, stop)
    finally:
        for caught, handler in found.items():
            signal.signal(caught, handler)
    if any_failed:
        sys.exit(CHECK_FAILED)


def _run_rounds(conninfo: str, tasks: Sequence[str], period: float | None, rounds: int | None, as_json: bool,
                stop: threading.Event) -> bool:
    """Run rounds (one, or one every ``period`` seconds until ``rounds`` are done or ``stop`` is set), printing
    each; True when any round did not succeed."""
    any_failed = False
    done = 0
    while True:
        report = run_round(conninfo, tasks or TASKS)
        done += 1
        any_failed = any_failed or not report.ok
        if as_json:
            click.echo(json.dumps(report.as_dict(), default=str))
        else:
            click.echo(f"round {done} at {report.started_at.isoformat(timespec='seconds')}: "
                       + ("ok" if report.ok else "FAILED"))
            for line in format_round(report):
                click.echo(line)
        sys.stdout.flush()
        if period is None or (rounds is not None and done >= rounds) or stop.wait(period):
            return any_failed

