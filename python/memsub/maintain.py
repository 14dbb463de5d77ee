"""``memsub maintain``: the periodic work a memsub database needs, run by cron, a Kubernetes CronJob or a worker.

Tasks, in order (each under its own lock, so two schedulers never run the same task at once; a task whose lock
is held is reported as ``skipped`` with the holder, and the run exits 1). The lock is a row of
memsub.maintenance_lock taken through memsub.maintain_lock(), which only platform admins may call, held by a
transaction on a second connection while the task runs: a login outside memsub's roles cannot make a task skip
by holding an advisory key.

- ``purge_expired``        memsub.purge_expired(): removes packets whose ttl passed, every tenant;
- ``refresh_memory_views`` CALL memsub.refresh_memory_views(): the four materialized views (seed 000: daily);
- ``learn_importance``     memsub.learn_importance() per tenant: folds accesses and feedback into importance;
- ``memory_maintenance``   memsub.memory_maintenance() per tenant: promotes short-term memory to long-term;
- ``summaries_due``        memsub.summaries_due(): counts the summaries whose validity ended, per tenant.
                           Regenerating a summary needs the application's summarizer, so this task only
                           reports them (exit status unaffected).
- ``tune_search``          memsub.tune_search(): per tenant and embedding type, row counts and the measured
                           recall of the HNSW walk, from which semantic_search chooses exact or approximate.

The connecting role must be a member of ``memsub_platform_admin``: every task runs in a ``platform_admin``
context (per tenant where the function works on one tenant). This module only calls memsub's SQL functions.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from memsub import _calls
from memsub.connection import connect, lift_run_timeouts, refuse_on_standby, translate
from memsub.errors import InvalidInput, MemsubError, PrivilegeError

Connection = psycopg.Connection[dict[str, Any]]



@dataclass
class TaskReport:
    """What one task did: ``ok``, ``failed`` or ``skipped`` (its lock was held), with per-tenant figures."""

    task: str
    status: str = "ok"
    seconds: float = 0.0
    tenants: dict[str, dict[str, Any]] = field(default_factory=dict)
    summary: str = ""
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"task": self.task, "status": self.status, "seconds": round(self.seconds, 3),
                "summary": self.summary, "tenants": self.tenants, "error": self.error}


@dataclass
class RoundReport:
    started_at: datetime
    tasks: list[TaskReport]

    @property
    def ok(self) -> bool:
        """Every task ran: a skipped task (its lock held elsewhere) is not a success."""
        return all(t.status == "ok" for t in self.tasks)

    def as_dict(self) -> dict[str, Any]:
        return {"started_at": self.started_at.isoformat(), "ok": self.ok, "tasks": [t.as_dict() for t in self.tasks]}


def parse_interval(text: str, field: str = "every") -> float:
    """Seconds of ``30s``, ``15m``, ``1h``, ``1d`` (or a bare number of seconds); a refusal names the option
    ``--<field>`` and the field."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text or "")
    if not match or float(match.group(1)) <= 0:
        option = "--" + field.replace("_", "-")
        raise InvalidInput(f"{option} must look like 30s, 15m, 1h or 1d, not {text!r}", field=field)
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def _try_lock(lock_conn: Connection, task: str) -> str | None:
    """Take the task's lock in a transaction of ``lock_conn`` (held until it ends); None when taken, otherwise who
    holds it. The lock is a row of memsub.maintenance_lock that only platform admins reach (memsub.maintain_lock),
    so no other login can make a task skip by holding a key."""
    try:
        row = lock_conn.execute("select taken, holder from memsub.maintain_lock(%s)", [task]).fetchone()
    except psycopg.errors.InsufficientPrivilege as error:
        raise PrivilegeError(f"memsub maintain needs a login that is a member of memsub_platform_admin ({error})",
                             sqlstate=error.sqlstate) from error
    assert row is not None
    return None if row["taken"] else str(row["holder"])


def _as_platform_admin(conn: Connection, tenant: UUID | None) -> None:
    context = _calls.set_context(tenant, None, None, ["platform_admin"], None)
    conn.execute(context.statement, context.params)


def _tenant_wide_rows(conn: Connection, query: str | sql.Composed) -> list[dict[str, Any]]:
    """The rows of a query run as platform admin with no tenant context, in a transaction of its own."""
    with conn.transaction():
        _as_platform_admin(conn, None)
        return conn.execute(query).fetchall()


def _tenants(conn: Connection, table: str) -> list[UUID]:
    """Tenants with rows in ``table`` (a fixed memsub table name), by walking its tenant_id index."""
    query = sql.SQL(
        "with recursive t as ((select tenant_id as id from {table} order by tenant_id limit 1) "
        "union all select (select s.tenant_id from {table} s where s.tenant_id > t.id "
        "order by s.tenant_id limit 1) from t where t.id is not null) "
        "select id from t where id is not null").format(
            table=sql.Identifier("memsub", table))
    return [row["id"] for row in _tenant_wide_rows(conn, query)]


def _purge_expired(conn: Connection, report: TaskReport) -> None:
    rows = _tenant_wide_rows(conn, "select tenant_id, purged from memsub.purge_expired()")
    for row in rows:
        report.tenants[str(row["tenant_id"])] = {"purged": int(row["purged"])}
    report.summary = f"{sum(int(r['purged']) for r in rows)} expired packet(s) purged"


def _refresh_memory_views(conn: Connection, report: TaskReport) -> None:
    # The procedure commits per view (the connection is in autocommit) and returns the run id its log rows carry,
    # so a refresh running at the same time is never counted as this one.
    called = conn.execute("call memsub.refresh_memory_views(null)").fetchone()
    assert called is not None
    rows = conn.execute(
        "select view_name, method, status, duration_ms, row_count, error from memsub.memory_view_refresh_log "
        "where run_id = %s order by started_at", [called["run_id"]]).fetchall()
    failed = [r for r in rows if r["status"] == "error"]
    skipped = [r for r in rows if r["status"] == "skipped"]
    views = {str(r["view_name"]): {"status": r["status"], "method": r["method"], "rows": r["row_count"],
                                   "ms": round(float(r["duration_ms"] or 0), 1), "error": r["error"]}
             for r in rows}
    report.tenants["*"] = {"views": views}
    if failed:
        report.status = "failed"
        report.error = "; ".join(f"{r['view_name']}: {r['error']}" for r in failed)
    elif skipped:
        report.status = "skipped"
        report.summary = ("another refresh was running: skipped "
                          + ", ".join(str(r["view_name"]) for r in skipped))
    ok = len(rows) - len(failed) - len(skipped)
    report.summary = report.summary or f"{ok} of {len(rows)} view(s) refreshed"


def _per_tenant(conn: Connection, report: TaskReport, tables: Sequence[str], call: str,
                digest: Callable[[list[dict[str, Any]]], dict[str, Any]]) -> None:
    """Run ``call`` as platform admin once for each tenant with rows in any of ``tables``."""
    tenants = sorted({tenant for table in tables for tenant in _tenants(conn, table)})
    failures: list[str] = []
    for tenant in tenants:
        try:
            with conn.transaction():
                _as_platform_admin(conn, tenant)
                rows = conn.execute(call.encode()).fetchall()
            report.tenants[str(tenant)] = digest(rows)
        except psycopg.Error as error:
            message = str(translate(error))
            report.tenants[str(tenant)] = {"error": message}
            failures.append(f"tenant {tenant}: {message}")
    if failures:
        report.status = "failed"
        report.error = "; ".join(failures)
    report.summary = f"{len(tenants) - len(failures)} of {len(tenants)} tenant(s) done"


def _learn_importance(conn: Connection, report: TaskReport) -> None:
    # Importance lives in packets and semantic memories, and is learned from the access log: a tenant with any
    # of the three is visited (one whose packets were all purged may still have memories and accesses).
    _per_tenant(conn, report, ("packet_store", "semantic_memory", "memory_access_log"),
                "select accesses_counted, feedback_learned, targets_updated, targets_decayed "
                "from memsub.learn_importance()",
                lambda rows: {k: int(v) for k, v in rows[0].items()} if rows else {})


def _memory_maintenance(conn: Connection, report: TaskReport) -> None:
    def digest(rows: list[dict[str, Any]]) -> dict[str, Any]:
        outcomes: dict[str, Any] = {}
        for row in rows:
            outcomes[str(row["outcome"])] = outcomes.get(str(row["outcome"]), 0) + 1
        return outcomes

    _per_tenant(conn, report, ("memory_entries",), "select outcome from memsub.memory_maintenance()", digest)


def _summaries_due(conn: Connection, report: TaskReport) -> None:
    rows = _tenant_wide_rows(conn, "select tenant_id, count(*) as due from memsub.summaries_due(now(), 10000) "
                                   "group by tenant_id order by tenant_id")
    for row in rows:
        report.tenants[str(row["tenant_id"])] = {"due": int(row["due"])}
    report.summary = (f"{sum(int(r['due']) for r in rows)} summary(ies) due for regeneration by the application"
                      if rows else "no summary due")


def _tune_search(conn: Connection, report: TaskReport) -> None:
    rows = _tenant_wide_rows(conn, "select tenant_id, embedding_type, row_count, method, ef_search, recall, "
                                   "recall_bound from memsub.tune_search() order by tenant_id, embedding_type")
    for row in rows:
        figures = report.tenants.setdefault(str(row["tenant_id"]), {})
        figures[str(row["embedding_type"])] = (
            f"{row['row_count']} rows, {row['method']}"
            + (f" (recall {row['recall']:.2f}, at least {row['recall_bound']:.2f}, at ef_search {row['ef_search']})"
               if row["recall"] is not None else ""))
    exact = sum(1 for row in rows if row["method"] == "exact")
    report.summary = f"{len(rows)} tenant space(s) measured, {exact} searched exactly"


RUNNERS: dict[str, Callable[[Connection, TaskReport], None]] = {
    "purge_expired": _purge_expired,
    "learn_importance": _learn_importance,
    "memory_maintenance": _memory_maintenance,
    "refresh_memory_views": _refresh_memory_views,
    "summaries_due": _summaries_due,
    "tune_search": _tune_search,
}
# The tasks in the order they run: memsub.maintain_tasks() (tests/foundation/test_vocabulary.py holds the two
# equal). The views are refreshed after the round has learned importance and promoted entries, so a reader of
# the views after a round sees what the round changed.
TASKS = tuple(RUNNERS)


def run_round(dsn: str, tasks: Sequence[str] = TASKS) -> RoundReport:
    """Run ``tasks`` once, each under its own lock; a failed task does not stop the next one.

    Raises ConnectionFailed (and other MemsubErrors) only when the server cannot be used at all."""
    unknown = [t for t in tasks if t not in RUNNERS]
    if unknown:
        raise InvalidInput(f"unknown task(s): {', '.join(unknown)} (known: {', '.join(TASKS)})", field="task")
    round_report = RoundReport(datetime.now(UTC), [])
    # The task runs on ``conn`` (autocommit: some tasks commit several times); its lock is held by an open
    # transaction on ``lock_conn`` meanwhile, which an idle-in-transaction timeout must not end.
    with (connect(dsn, autocommit=True, row_factory=dict_row) as raw,
          connect(dsn, row_factory=dict_row, application_name="memsub maintain") as raw_lock):
        conn: Connection = raw  # type: ignore[assignment]
        lock_conn: Connection = raw_lock  # type: ignore[assignment]
        refuse_on_standby(conn, "memsub maintain")
        lock_conn.execute("set idle_in_transaction_session_timeout = 0")
        lock_conn.commit()
        # Every task is long by nature (a refresh is one statement for every view, a purge one for every tenant):
        # the login's statement and transaction timeouts, meant for applications' statements, would cancel it
        # partway. Lock waits stay bounded by lock_timeout.
        lift_run_timeouts(conn)
        for task in tasks:
            report = TaskReport(task)
            started = time.monotonic()
            try:
                try:
                    holder = _try_lock(lock_conn, task)
                    if holder is not None:
                        report.status = "skipped"
                        report.summary = f"this task's lock is held by {holder}"
                    else:
                        RUNNERS[task](conn, report)
                finally:
                    if not lock_conn.closed and not lock_conn.broken:
                        lock_conn.rollback()  # releases the task's lock
            except psycopg.Error as error:
                if conn.closed or conn.broken or lock_conn.closed or lock_conn.broken:
                    raise translate(error) from error
                report.status = "failed"
                report.error = str(translate(error))
            except MemsubError as error:
                report.status = "failed"
                report.error = str(error)
            report.seconds = time.monotonic() - started
            round_report.tasks.append(report)
    return round_report


def format_round(report: RoundReport) -> list[str]:
    """Human-readable lines: one per task, then one per tenant it touched."""
    lines = []
    for task in report.tasks:
        lines.append(f"{task.task}: {task.status} in {task.seconds:.2f}s - {task.summary}"
                     + (f" [{task.error}]" if task.error else ""))
        for tenant, figures in task.tenants.items():
            if tenant == "*":
                for view, detail in figures.get("views", {}).items():
                    lines.append(f"  {view}: {detail['status']} ({detail['method']}, {detail['rows']} rows)")
                continue
            shown = ", ".join(f"{k} {v}" for k, v in figures.items()) or "nothing to do"
            lines.append(f"  tenant {tenant}: {shown}")
    return lines
