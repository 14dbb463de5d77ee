"""Materialized views: refresh and its log, tenant-filtered reading, and refreshing while readers read."""

from __future__ import annotations

import re
import threading
import time
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from conftest import login_role
from memsub.cli_views import refresh_views_command
from memsub.connection import lift_run_timeouts, restore_run_timeouts
from memsub.maintain import run_round

from doc_helpers import tenant_session
from helpers import TENANT_A, TENANT_B, blocked_call, set_context, started_call, wait_until, write
from layer_helpers import populate

TENANT_VIEWS = ["tenant_agent_recent_important", "tenant_entity_graph", "tenant_high_confidence_facts",
                "tenant_reflection_patterns"]


def _refresh(db: Any) -> list[tuple[Any, ...]]:
    with db.connect("platform_admin", autocommit=True) as conn:
        conn.execute("call memsub.refresh_memory_views()")
        return conn.execute("select view_name, method, status, row_count from memsub.memory_view_refresh_log "
                            "order by started_at").fetchall()


def _populate_two_tenants(db: Any) -> None:
    with db.connect("app") as conn:
        for tenant, tag in ((TENANT_A, "a"), (TENANT_B, "b")):
            populate(conn, tenant, tag=tag)
            populate(conn, tenant, tag=tag + "2")
            conn.commit()


def _leaks(db: Any) -> dict[str, set[Any]]:
    """Tenants whose rows tenant A's application context reads through each tenant view (should be {A})."""
    seen: dict[str, set[Any]] = {}
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for view in TENANT_VIEWS:
            seen[view] = {r[0] for r in conn.execute(f"select tenant_id from memsub.{view}")}  # noqa: S608
    return seen


def test_refresh_logs_each_view_full_when_never_populated_then_concurrently(db):
    _populate_two_tenants(db)
    with db.connect() as conn:  # as a database never refreshed (installs populate the views empty)
        for view in ("mv_agent_recent_important", "mv_entity_graph", "mv_high_confidence_facts",
                     "mv_reflection_patterns"):
            conn.execute(f"refresh materialized view memsub.{view} with no data")
        conn.commit()
    first = _refresh(db)
    assert [(v, m, s) for v, m, s, _ in first] == [
        ("mv_agent_recent_important", "full", "ok"), ("mv_entity_graph", "full", "ok"),
        ("mv_high_confidence_facts", "full", "ok"), ("mv_reflection_patterns", "full", "ok")]
    assert all(rows > 0 for *_, rows in first)
    second = _refresh(db)[4:]
    assert {(m, s) for _, m, s, _ in second} == {("concurrently", "ok")}


def test_tenant_roles_read_only_their_tenants_aggregates(db):
    _populate_two_tenants(db)
    _refresh(db)
    assert _leaks(db) == {view: {TENANT_A} for view in TENANT_VIEWS}
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        graph = conn.execute("select source_entity, total_mentions from memsub.tenant_entity_graph "
                             "order by source_entity").fetchall()
        assert graph == [("l9-a", 1), ("l9-a2", 1)]
        for raw in ("mv_entity_graph", "mv_agent_recent_important", "mv_high_confidence_facts",
                    "mv_reflection_patterns"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"select * from memsub.{raw}")  # noqa: S608
            conn.rollback()
        # Without a tenant context a tenant view is empty, not everything.
        assert conn.execute("select count(*) from memsub.tenant_entity_graph").fetchone() == (0,)
    with db.connect("analyst") as conn:  # every tenant, through the same views: never the raw ones
        tenants = {r[0] for r in conn.execute("select tenant_id from memsub.tenant_entity_graph")}
        assert tenants == {TENANT_A, TENANT_B}
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select * from memsub.mv_entity_graph")


def test_refresh_while_readers_read(db):
    with db.connect("app") as conn:
        for i in range(6):
            populate(conn, TENANT_A if i % 2 else TENANT_B, tag=f"r{i}")
            conn.commit()
    _refresh(db)  # populated: from now on refreshes are concurrent

    stop = threading.Event()
    errors: list[BaseException] = []
    reads = [0]

    def reader() -> None:
        try:
            with db.connect("app", autocommit=True) as conn:
                # A reader that has to wait for a lock fails instead of waiting.
                conn.execute("set lock_timeout = '500ms'")
                while not stop.is_set():
                    with conn.transaction():
                        set_context(conn, TENANT_A)
                        for view in TENANT_VIEWS:
                            conn.execute(f"select count(*) from memsub.{view}").fetchone()  # noqa: S608
                    reads[0] += 1
        except BaseException as error:  # reported below
            errors.append(error)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for thread in readers:
        thread.start()
    # Hold the refresh of mv_reflection_patterns in the middle: an exclusive lock on the table it reads makes
    # the refresh wait while it holds its own lock on the view. Readers of the view must not be blocked.
    with db.connect() as blocker:
        blocker.execute("lock table memsub.reflection_store in access exclusive mode")
        refresher = threading.Thread(target=_refresh, args=(db,))
        refresher.start()
        with db.connect() as watch:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not watch.execute(
                    "select exists (select from pg_locks where relation = 'memsub.mv_reflection_patterns'::regclass "
                    "and mode = 'ExclusiveLock' and granted)").fetchone()[0]:
                time.sleep(0.05)
        reads_before = reads[0]
        time.sleep(1.5)
        reads_during = reads[0] - reads_before
        blocker.rollback()
    refresher.join(timeout=60)
    stop.set()
    for thread in readers:
        thread.join(timeout=30)
    assert errors == []
    assert reads_during > 0, "readers made no progress while the refresh held the view"
    with db.connect() as conn:
        statuses = conn.execute(
            "select status, count(*) from memsub.memory_view_refresh_log group by status").fetchall()
    assert statuses == [("ok", 8)]


def _dst_zone_changed_in_the_last_30_days() -> str:
    """A POSIX time zone (UTC-5, summer time UTC-4) whose summer time began ten days ago and ends in a hundred:
    in it, 30 calendar days before now are 719 hours before now. Built from today's date, so the test does not
    depend on the season it runs in (Jn: day of the year, February 29 not counted)."""
    def julian(day: date) -> int:
        n = day.timetuple().tm_yday
        leap = day.year % 4 == 0 and (day.year % 100 != 0 or day.year % 400 == 0)
        return n - 1 if leap and day.month > 2 else n

    today = datetime.now(UTC).date()
    return f"XST5XDT,J{julian(today - timedelta(days=10))},J{julian(today + timedelta(days=100))}"


def test_the_recent_window_is_720_hours_whatever_the_time_zone_of_the_refresh(db):
    zone = _dst_zone_changed_in_the_last_30_days()
    now = datetime.now(UTC)
    inside, outside = now - timedelta(hours=719, minutes=30), now - timedelta(hours=720, minutes=30)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        packets = {write(conn, {"packet_type": "event", "payload": {"text": name}, "importance_score": 0.9,
                                "metadata": {"agent": "dst"}, "timestamp": moment.isoformat()})["packet_id"]: name
                   for name, moment in (("inside", inside), ("outside", outside))}
        conn.commit()
    with db.connect("platform_admin", autocommit=True) as conn:
        conn.execute(f"set timezone = '{zone}'")
        # The zone does change its offset within the window: calendar days and hours disagree in it.
        assert conn.execute("select now() - interval '30 days' <> now() - interval '720 hours'").fetchone() == (True,)
        conn.execute("call memsub.refresh_memory_views()")
    with db.connect("analyst") as conn:
        seen = {packets[r[0]] for r in conn.execute(
            "select packet_id from memsub.tenant_agent_recent_important where agent_id = 'dst'")}
    assert seen == {"inside"}


def test_the_entity_graph_holds_the_edges_valid_now_like_the_graph_reads(db):
    now = datetime.now(UTC)
    with tenant_session(db.dsn("app")) as session:
        # Valid now, with an end already known; valid now, superseded from tomorrow; valid now, ending in four
        # seconds (after the refresh, before the read); open-ended.
        session.graph.temporal_edge_add("Alice", "works_at", "Acme", valid_from=now - timedelta(days=3),
                                        valid_until=now + timedelta(days=3))
        session.graph.temporal_edge_add("Bob", "works_at", "Acme", valid_from=now - timedelta(days=3))
        session.graph.supersede_relationship("Bob", "works_at", "Globex", valid_from=now + timedelta(days=1))
        ending = session.graph.temporal_edge_add("Dave", "works_at", "Acme", valid_from=now - timedelta(days=3),
                                                 valid_until=datetime.now(UTC) + timedelta(seconds=4))
        session.graph.temporal_edge_add("Erin", "works_at", "Acme", valid_from=now - timedelta(days=3))
    _refresh(db)
    with db.connect() as conn:  # the refresh took the edge that ends next, with its end
        assert conn.execute("select valid_until from memsub.mv_entity_graph where source_entity = 'dave'"
                            ).fetchall() == [(ending.valid_until,)]
    with db.connect("app") as conn:
        wait_until(conn, ending.valid_until)
    with tenant_session(db.dsn("app")) as session:
        reads = {(source.lower(), p.entity.lower()) for source in ("Alice", "Bob", "Dave", "Erin")
                 for p in session.graph.traverse(source)}
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        view = set(conn.execute("select source_entity, target_entity from memsub.tenant_entity_graph").fetchall())
    assert reads == {("alice", "acme"), ("bob", "acme"), ("erin", "acme")}
    assert view == reads


def _catalog_views(conn: psycopg.Connection[Any]) -> dict[str, tuple[str, list[str]]]:
    """Every view and materialized view of the memsub schema: its kind ('v' or 'm') and options."""
    return {name: (kind, options or []) for name, kind, options in conn.execute(
        "select c.relname, c.relkind::text, c.reloptions from pg_catalog.pg_class c "
        "where c.relnamespace = 'memsub'::regnamespace and c.relkind in ('v', 'm') order by 1")}


def _populate_every_view(db: Any) -> None:
    """Rows of both tenants in every view of the catalog (the layers, the world model's entities among them), the
    materialized views refreshed."""
    _populate_two_tenants(db)
    _refresh(db)


LEAK_PROBE = ("create function pg_temp.seen(p_tenant uuid) returns boolean language plpgsql cost 0.0000001 as "
              "$$ begin raise notice 'memsub-seen %', p_tenant; return true; end $$")


def _tenants_read(conn: psycopg.Connection[Any], view: str) -> tuple[set[Any], set[str]]:
    """The tenants of the rows ``view`` returns, and the tenants a cheap function of the caller's in the WHERE
    clause was shown (a view without its barrier lets such a function see the rows it filters out)."""
    shown: list[str] = []

    def notice(diagnostic: psycopg.errors.Diagnostic) -> None:
        shown.append(diagnostic.message_primary or "")

    conn.add_notice_handler(notice)
    try:
        returned = {r[0] for r in conn.execute(
            f"select tenant_id from memsub.{view} where pg_temp.seen(tenant_id)")}  # noqa: S608
    finally:
        conn.remove_notice_handler(notice)
    return returned, {m.removeprefix("memsub-seen ") for m in shown if m.startswith("memsub-seen ")}


def _isolation_failures(db: Any) -> list[tuple[str, ...]]:
    """What breaks tenant isolation in the views of the catalog, for each client role in tenant A's context: a
    view that is neither a security barrier nor security invoker, a materialized view a client role may read,
    rows of another tenant returned or shown to a function of the caller's. The analyst reads every tenant's
    aggregates through the tenant_* views by design (docs/security.md), and nothing more."""
    failures: list[tuple[str, ...]] = []
    with db.connect() as conn:
        views = _catalog_views(conn)
        truth = {name: {r[0] for r in conn.execute(f"select distinct tenant_id from memsub.{name}")}  # noqa: S608
                 for name in views}
    # Each view must hold rows of both tenants, or the check below proves nothing for it.
    failures += [("not filled in both tenants", name) for name, tenants in truth.items()
                 if tenants != {TENANT_A, TENANT_B}]
    # A view over the materialized views (which bypass row-level security) is a security barrier; a view over
    # tables runs with its caller's rights, so their row-level security applies.
    failures += [("neither barrier nor invoker", name) for name, (kind, options) in views.items()
                 if kind == "v" and "security_barrier=true" not in options
                 and "security_invoker=true" not in options]
    aggregates = {name for name, (kind, _) in views.items() if kind == "v" and name.startswith("tenant_")}
    for role in ("app", "tenant_admin", "analyst", "platform_admin"):
        roles = ["tenant_admin"] if role == "tenant_admin" else []
        with db.connect(role, autocommit=True) as conn:
            conn.execute(LEAK_PROBE)
            for name, (kind, _) in views.items():
                with conn.transaction():
                    set_context(conn, TENANT_A, roles=roles)
                    if kind == "m":  # no client role reads a materialized view itself
                        allowed = conn.execute("select has_table_privilege(%s, 'select')",
                                               [f"memsub.{name}"]).fetchone()
                        if allowed != (False,):
                            failures.append((role, name, "may read the materialized view"))
                        continue
                    returned, shown = _tenants_read(conn, name)
                expected = {TENANT_A, TENANT_B} if role == "analyst" and name in aggregates else {TENANT_A}
                if returned != expected:
                    failures.append((role, name, "returned", str(sorted(map(str, returned)))))
                if shown - {str(t) for t in expected}:
                    failures.append((role, name, "shown", str(sorted(shown))))
    return failures


def test_every_view_of_the_catalog_keeps_tenants_apart(db):
    _populate_every_view(db)
    assert _isolation_failures(db) == []


@pytest.mark.parametrize("drop", ["security_barrier", "tenant filter", "security_invoker"])
def test_the_catalog_isolation_check_sees_a_view_without_its_barrier_invoker_or_filter(db, drop):
    _populate_every_view(db)
    with db.connect() as conn:
        if drop == "security_barrier":  # a function of the caller's then sees the rows the filter drops
            conn.execute("alter view memsub.tenant_high_confidence_facts reset (security_barrier)")
        elif drop == "security_invoker":  # the tables would be read with the view owner's rights
            conn.execute("alter view memsub.graph_nodes reset (security_invoker)")
        else:
            definition = conn.execute(
                "select pg_get_viewdef('memsub.tenant_high_confidence_facts'::regclass)").fetchone()
            assert definition is not None
            conn.execute("create or replace view memsub.tenant_high_confidence_facts with (security_barrier = true) "
                         "as " + re.split(r"\bWHERE\b", definition[0])[0])
        conn.commit()
    failures = _isolation_failures(db)
    if drop == "security_invoker":
        assert ("neither barrier nor invoker", "graph_nodes") in failures, failures
    else:
        assert ("app", "tenant_high_confidence_facts", "shown", str(sorted(map(str, (TENANT_A, TENANT_B))))) \
            in failures, failures


@pytest.mark.parametrize("command", ["refresh-views", "maintain"])
def test_a_refresh_outlasting_the_logins_statement_timeout_runs_to_the_end(db, command):
    """`memsub login-timeouts` gives a login a statement_timeout (30 s by default), and CALL
    memsub.refresh_memory_views() is one statement for the four views: the commands that refresh do not let it
    cancel the run partway. Lock waits stay bounded by the refresh's own lock_timeout."""
    with db.connect(autocommit=True) as conn:
        conn.execute(sql.SQL("alter role {} in database {} set statement_timeout = '1s'").format(
            sql.Identifier(login_role("platform_admin")), sql.Identifier(conn.info.dbname)))
    with db.connect("platform_admin") as conn:
        assert conn.execute("show statement_timeout").fetchone() == ("1s",)
    # The last view waits 2.5 s for a table another transaction holds, after the others were refreshed.
    with db.connect() as blocker:
        blocker.execute("lock table memsub.reflection_store in access exclusive mode")
        release = threading.Timer(2.5, blocker.rollback)
        release.start()
        try:
            if command == "refresh-views":
                result = CliRunner().invoke(refresh_views_command, ["--dsn", db.dsn("platform_admin")])
                outcome: Any = (result.exit_code, result.output.count(": ok ("), str(result.exception or ""))
            else:
                task = run_round(db.dsn("platform_admin"), ["refresh_memory_views"]).tasks[0]
                outcome = (0 if task.status == "ok" else 1, int(task.summary.split()[0]) if task.status == "ok"
                           else 0, task.error or "")
        finally:
            release.join()
    assert outcome == (0, 4, "")
    with db.connect() as conn:
        assert conn.execute("select view_name, status from memsub.memory_view_refresh_log order by started_at"
                            ).fetchall() == [(view, "ok") for view in (
                                "mv_agent_recent_important", "mv_entity_graph", "mv_high_confidence_facts",
                                "mv_reflection_patterns")]


def test_lifted_timeouts_are_given_back_and_a_timeout_of_the_connection_stays(db):
    with db.connect(autocommit=True) as conn:
        conn.execute(sql.SQL("alter role {} in database {} set statement_timeout = '1s'").format(
            sql.Identifier(login_role("platform_admin")), sql.Identifier(conn.info.dbname)))
    with db.connect("platform_admin", autocommit=True) as conn:
        lifted = lift_run_timeouts(conn)
        during = conn.execute("show statement_timeout").fetchone()
        restore_run_timeouts(conn, lifted)
        after = conn.execute("show statement_timeout").fetchone()
    assert (lifted, during, after) == (["statement_timeout"], ("0",), ("1s",))
    with psycopg.connect(db.dsn("platform_admin"), autocommit=True, options="-c statement_timeout=2s") as conn:
        assert lift_run_timeouts(conn) == []
        assert conn.execute("show statement_timeout").fetchone() == ("2s",)


def test_a_refresh_by_a_role_without_the_right_or_in_a_transaction_block_is_refused_and_changes_nothing(db):
    _populate_two_tenants(db)  # written after the last refresh: a refresh that ran would take them in
    for kind in ("app", "tenant_admin", "analyst", "nobody"):
        with db.connect(kind, autocommit=True) as conn:
            for call in ("call memsub.refresh_memory_views()",
                         "select memsub._refresh_memory_view('mv_entity_graph')"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
                    conn.execute(call)
                assert "permission denied for" in str(refused.value), (kind, call)
    with db.connect("platform_admin") as conn:  # not in autocommit: the call is inside a transaction block
        with pytest.raises(psycopg.errors.InvalidTransactionTermination):
            conn.execute("call memsub.refresh_memory_views()")
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.memory_view_refresh_log").fetchone() == (0,)
        assert conn.execute("select count(*) from memsub.mv_entity_graph").fetchone() == (0,)


def test_a_view_that_fails_to_refresh_is_named_in_a_warning_to_the_caller(db):
    """A CALL from psql or pg_cron sees no log: a view whose refresh failed is named to it, with the error."""
    with db.connect(autocommit=True) as conn:  # the views' owner may no longer read what one view aggregates
        conn.execute("revoke select on memsub.reflection_store from memsub_view_owner")
    warnings: list[str] = []
    with db.connect("platform_admin", autocommit=True) as conn:
        conn.add_notice_handler(lambda d: warnings.append(f"{d.severity_nonlocalized}: {d.message_primary}"))
        run_id = conn.execute("call memsub.refresh_memory_views()").fetchone()
    assert run_id is not None
    with db.connect() as conn:
        logged = conn.execute("select view_name, status from memsub.memory_view_refresh_log where status <> 'ok'"
                              ).fetchall()
    assert logged == [("mv_reflection_patterns", "error")]
    assert warnings == [f"WARNING: memsub.refresh_memory_views: mv_reflection_patterns failed: permission denied for "
                        f"table reflection_store (run {run_id[0]}; memsub.memory_view_refresh_log)"]


def test_a_run_id_already_logged_is_refused_so_no_two_runs_share_one(db):
    """A caller may name its run (to find its rows in the log); a run_id the log already has would mix two runs'
    rows under one id, so it is refused (23505 naming run_id) before any view is refreshed."""
    with db.connect("platform_admin", autocommit=True) as conn:
        run_id = conn.execute("call memsub.refresh_memory_views(gen_random_uuid())").fetchone()[0]
        with pytest.raises(psycopg.errors.UniqueViolation) as refused:
            conn.execute("call memsub.refresh_memory_views(%s)", [run_id])
        assert refused.value.diag.column_name == "run_id" and str(run_id) in str(refused.value)
    with db.connect() as conn:
        assert conn.execute("select run_id, count(*) from memsub.memory_view_refresh_log group by run_id"
                            ).fetchall() == [(run_id, 4)]


def test_two_runs_given_one_new_run_id_at_once_refresh_as_one_and_refuse_the_other(db):
    """Two calls given the same new run_id at once both passed the check (neither had logged a view yet) and both
    logged their views under it. The second now waits for the first run's first view to be logged, and is refused
    as a reuse is (23505 naming run_id), having logged nothing."""
    run_id = uuid.uuid4()
    with (db.connect(autocommit=True) as blocker, db.connect("platform_admin", autocommit=True) as first,
          db.connect("platform_admin", autocommit=True) as second):
        blocker.execute("begin")
        blocker.execute("lock table memsub.packet_store in access exclusive mode")  # what the first view reads
        one = blocked_call(db, first, lambda: first.execute("call memsub.refresh_memory_views(%s)", [run_id]))
        other = started_call(db, second, lambda: second.execute("call memsub.refresh_memory_views(%s)", [run_id]))
        blocker.execute("commit")
        one.join()
        other.join()
    assert one.error is None, one.error
    assert isinstance(other.error, psycopg.errors.UniqueViolation), other.error or "both runs went through"
    assert other.error.diag.column_name == "run_id" and str(run_id) in str(other.error)
    with db.connect() as conn:
        logged = conn.execute("select view_name, status from memsub.memory_view_refresh_log where run_id = %s "
                              "order by started_at", [run_id]).fetchall()
        left = conn.execute("select count(*) from memsub.maintenance_lock where task = 'refresh_memory_views_run'"
                            ).fetchone()
    assert logged == [("mv_agent_recent_important", "ok"), ("mv_entity_graph", "ok"),
                      ("mv_high_confidence_facts", "ok"), ("mv_reflection_patterns", "ok")]
    assert left == (0,)  # the id's lock leaves no row behind


def test_a_packet_dated_after_the_refresh_scores_as_recent_as_now_not_more(db):
    """combined_score is 0.6 importance + 0.2 access + 0.2 recency, each part at most 1: a writer that dates its
    packet in the future must not lift it above every other packet of its agent."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for name, moment in (("now", datetime.now(UTC)), ("future", datetime(2099, 1, 1, tzinfo=UTC))):
            write(conn, {"packet_type": "event", "payload": {"text": name}, "importance_score": 1.0,
                         "metadata": {"agent": "dated"}, "timestamp": moment.isoformat()})
        conn.commit()
    _refresh(db)
    with db.connect("analyst") as conn:
        scores = [r[0] for r in conn.execute("select combined_score from memsub.tenant_agent_recent_important "
                                             "where agent_id = 'dated'")]
    assert len(scores) == 2
    assert all(0.79 <= score <= 0.8 for score in scores), scores


def test_refreshes_at_once_beside_writers_never_deadlock_and_the_last_one_holds_every_write(db):
    """Three refreshes started together, again and again, while writers add packets, facts and edges: every run
    ends (no deadlock), each view of each run is refreshed or skipped for a run that holds it, and a refresh after
    the writers stopped holds every write."""
    with db.connect() as conn:
        deadlocks_before = conn.execute("select deadlocks from pg_stat_database "
                                        "where datname = current_database()").fetchone()
    stop = threading.Event()
    written = [0]
    errors: list[str] = []

    def writer() -> None:
        try:
            with db.connect("app") as conn:
                while not stop.is_set():
                    populate(conn, TENANT_A, tag=f"w{written[0]}")
                    conn.commit()
                    written[0] += 1
        except BaseException as error:  # reported below
            errors.append(f"writer: {type(error).__name__}: {error}")

    def refresher(barrier: threading.Barrier) -> None:
        try:
            with db.connect("platform_admin", autocommit=True) as conn:
                conn.execute("set lock_timeout = '20s'")
                barrier.wait(timeout=30)
                conn.execute("call memsub.refresh_memory_views()")
        except BaseException as error:  # reported below
            errors.append(f"refresher: {type(error).__name__}: {error}")

    writing = threading.Thread(target=writer)
    writing.start()
    try:
        for _ in range(5):
            barrier = threading.Barrier(3)
            runs = [threading.Thread(target=refresher, args=(barrier,)) for _ in range(3)]
            for thread in runs:
                thread.start()
            for thread in runs:
                thread.join(timeout=60)
            assert not any(thread.is_alive() for thread in runs), "a refresh did not end"
    finally:
        stop.set()
        writing.join(timeout=60)
    assert errors == []
    assert written[0] > 0
    with db.connect() as conn:
        runs_logged = conn.execute(
            "select run_id, count(*), count(*) filter (where status = 'ok'), "
            "count(*) filter (where status = 'skipped' and error like 'another refresh of memsub.%% is running: "
            "pid %%'), count(*) filter (where status = 'error') "
            "from memsub.memory_view_refresh_log group by run_id").fetchall()
        odd = conn.execute("select status, method, error from memsub.memory_view_refresh_log where status <> 'ok' "
                           "and error not like 'another refresh of memsub.%% is running: pid %%'").fetchall()
        assert odd == []
        assert len(runs_logged) == 15
        assert all(total == 4 and ok + skipped == 4 and failed == 0
                   for _, total, ok, skipped, failed in runs_logged), runs_logged
        assert conn.execute("select deadlocks from pg_stat_database "
                            "where datname = current_database()").fetchone() == deadlocks_before
        expected = conn.execute("select count(*) from memsub.packet_store where routing ->> 'agent' like 'agent-w%%'"
                                ).fetchone()
    _refresh(db)
    with db.connect("analyst") as conn:
        assert conn.execute("select count(*) from memsub.tenant_agent_recent_important "
                            "where agent_id like 'agent-w%'").fetchone() == expected


def test_every_maintain_task_outlasts_the_logins_statement_timeout(db):
    """A maintenance round is long by nature (a purge of a large tenant, a tuning pass), and the statement_timeout
    `memsub login-timeouts` gives a login is for applications' statements: no task of `memsub maintain` is
    cancelled partway by it, not only the refresh."""
    with db.connect(autocommit=True) as conn:
        conn.execute(sql.SQL("alter role {} in database {} set statement_timeout = '1s'").format(
            sql.Identifier(login_role("platform_admin")), sql.Identifier(conn.info.dbname)))
    with db.connect() as blocker:
        blocker.execute("lock table memsub.packet_store in access exclusive mode")
        release = threading.Timer(2.5, blocker.rollback)
        release.start()
        try:
            task = run_round(db.dsn("platform_admin"), ["purge_expired"]).tasks[0]
        finally:
            release.join()
    assert (task.status, task.error) == ("ok", None)
