"""memsub maintain (one-shot and worker) and views that read as empty before their first refresh."""

from __future__ import annotations

import json
import re
import signal
import threading
import time

import psycopg
import pytest
from click.testing import CliRunner

from memsub.cli import main as cli
from memsub.maintain import TASKS

from helpers import TENANT_A, TENANT_B, set_context, superuser_count, write
from layer_helpers import populate

TENANT_VIEWS = ["tenant_agent_recent_important", "tenant_entity_graph", "tenant_high_confidence_facts",
                "tenant_reflection_patterns"]
RAW_VIEWS = ["mv_agent_recent_important", "mv_entity_graph", "mv_high_confidence_facts", "mv_reflection_patterns"]


def _expired_packets(db) -> None:
    with db.connect("app") as conn:
        for tenant, count in ((TENANT_A, 2), (TENANT_B, 1)):
            set_context(conn, tenant)
            for n in range(count):
                write(conn, {"packet_type": "event", "payload": f"old {n}", "timestamp": "2020-01-01T00:00:00Z",
                             "ttl": "2020-01-02T00:00:00Z"})
            populate(conn, tenant, tag=str(tenant)[:4])
            conn.commit()


def _rounds(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def test_tenant_views_read_as_empty_before_the_first_refresh(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for view in TENANT_VIEWS:
            assert conn.execute(f"select count(*) from memsub.{view}").fetchone() == (0,)  # noqa: S608
    with db.connect("analyst") as conn:
        for view in TENANT_VIEWS:
            assert conn.execute(f"select count(*) from memsub.{view}").fetchone() == (0,)  # noqa: S608


def test_maintain_once_runs_every_task_and_reports_per_task_and_tenant(db):
    _expired_packets(db)
    before = superuser_count(db)
    result = CliRunner().invoke(cli, ["maintain", "--json", "--dsn", db.dsn("platform_admin")])
    assert result.exit_code == 0, result.output
    assert "memsub: server memsub_test_platform_admin@" in result.stderr
    (round_report,) = _rounds(result.stdout)
    tasks = {t["task"]: t for t in round_report["tasks"]}
    assert list(tasks) == list(TASKS) and round_report["ok"]
    assert {t["status"] for t in tasks.values()} == {"ok"}, tasks
    assert tasks["purge_expired"]["tenants"] == {str(TENANT_A): {"purged": 2}, str(TENANT_B): {"purged": 1}}
    assert superuser_count(db) == before - 3
    views = tasks["refresh_memory_views"]["tenants"]["*"]["views"]
    assert set(views) == set(RAW_VIEWS) and all(v["status"] == "ok" for v in views.values())
    assert set(tasks["learn_importance"]["tenants"]) == {str(TENANT_A), str(TENANT_B)}
    assert "accesses_counted" in tasks["learn_importance"]["tenants"][str(TENANT_A)]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        assert conn.execute("select count(*) from memsub.tenant_entity_graph").fetchone()[0] > 0
    text = CliRunner().invoke(cli, ["maintain", "--dsn", db.dsn("platform_admin")])
    assert text.exit_code == 0, text.output
    assert "purge_expired: ok" in text.stdout and "refresh_memory_views: ok" in text.stdout
    assert f"tenant {TENANT_A}" in text.stdout


def test_maintain_exits_1_when_a_task_fails_and_still_runs_the_others(db):
    result = CliRunner().invoke(cli, ["maintain", "--json", "--dsn", db.dsn("app")])
    assert result.exit_code == 1, result.output
    (round_report,) = _rounds(result.stdout)
    assert not round_report["ok"]
    assert [t["task"] for t in round_report["tasks"]] == list(TASKS)
    failed = {t["task"]: t["error"] for t in round_report["tasks"] if t["status"] == "failed"}
    assert "purge_expired" in failed and "memsub_platform_admin" in failed["purge_expired"]
    assert "Traceback" not in result.output


def test_a_task_whose_lock_is_held_is_skipped_not_run_twice(db):
    _expired_packets(db)
    before = superuser_count(db)
    with psycopg.connect(db.dsn("platform_admin")) as holder:  # what a running maintain holds, transaction open
        assert holder.execute("select taken from memsub.maintain_lock('purge_expired')").fetchone() == (True,)
        result = CliRunner().invoke(cli, ["maintain", "--json", "--task", "purge_expired",
                                          "--dsn", db.dsn("platform_admin")])
        holder_pid = holder.info.backend_pid
    assert result.exit_code == 1, result.output  # a skipped task is never reported as success
    (round_report,) = _rounds(result.stdout)
    assert [(t["task"], t["status"], t["error"]) for t in round_report["tasks"]] == [
        ("purge_expired", "skipped", None)]
    assert f"pid {holder_pid} (role memsub_test_platform_admin" in round_report["tasks"][0]["summary"]
    assert superuser_count(db) == before


def test_an_app_login_holding_the_advisory_key_does_not_make_maintain_skip(db):
    _expired_packets(db)
    before = superuser_count(db)
    with psycopg.connect(db.dsn("app"), autocommit=True) as outsider:
        outsider.execute("select pg_advisory_lock(hashtextextended('memsub.maintain:purge_expired', 0))")
        result = CliRunner().invoke(cli, ["maintain", "--json", "--task", "purge_expired",
                                          "--dsn", db.dsn("platform_admin")])
    assert result.exit_code == 0, result.output
    (round_report,) = _rounds(result.stdout)
    assert [(t["task"], t["status"]) for t in round_report["tasks"]] == [("purge_expired", "ok")]
    assert superuser_count(db) == before - 3


def test_two_concurrent_maintains_exclude_each_other_and_the_second_names_the_first(db):
    _expired_packets(db)
    before = superuser_count(db)
    first_result: list = []
    with db.connect() as blocker:
        # Holds the first run inside its purge: purge_expired writes tombstones, which this lock makes wait.
        blocker.execute("lock table memsub.packet_tombstones in exclusive mode")
        first = threading.Thread(target=lambda: first_result.append(CliRunner().invoke(
            cli, ["maintain", "--json", "--task", "purge_expired", "--dsn", db.dsn("platform_admin")])), daemon=True)
        first.start()
        waiting = False
        for _ in range(300):  # until the first run waits on the blocker (bounded: 30 s)
            row = blocker.execute("select count(*) from pg_locks where relation = 'memsub.packet_tombstones'::regclass "
                                  "and not granted").fetchone()
            if row and row[0]:
                waiting = True
                break
            time.sleep(0.1)
        assert waiting, "the first maintain never reached its purge"
        second = CliRunner().invoke(cli, ["maintain", "--json", "--task", "purge_expired",
                                          "--dsn", db.dsn("platform_admin")])
        blocker.rollback()
    first.join(60)
    assert not first.is_alive()
    assert second.exit_code == 1, second.output
    (skipped,) = _rounds(second.stdout)
    assert skipped["tasks"][0]["status"] == "skipped"
    summary = skipped["tasks"][0]["summary"]
    assert re.search(r"pid \d+ \(role memsub_test_platform_admin, application 'memsub maintain'\)", summary), summary
    (done,) = _rounds(first_result[0].stdout)
    assert first_result[0].exit_code == 0 and done["tasks"][0]["status"] == "ok", first_result[0].output
    assert superuser_count(db) == before - 3


def test_only_platform_admins_take_the_maintain_lock(db):
    for kind in ("nobody", "app", "tenant_admin", "analyst"):
        with db.connect(kind) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select memsub.maintain_lock('purge_expired')")
    with db.connect("platform_admin") as conn, pytest.raises(psycopg.errors.InvalidParameterValue) as raised:
        conn.execute("select memsub.maintain_lock('refresh_memory_view')")
    assert raised.value.diag.column_name == "task"


def test_worker_runs_rounds_until_told_to_stop(db):
    result = CliRunner().invoke(cli, ["maintain", "--json", "--every", "1s", "--rounds", "2",
                                      "--task", "purge_expired", "--task", "summaries_due",
                                      "--dsn", db.dsn("platform_admin")])
    assert result.exit_code == 0, result.output
    rounds = _rounds(result.stdout)
    assert len(rounds) == 2 and all(r["ok"] for r in rounds)
    assert [t["task"] for t in rounds[1]["tasks"]] == ["purge_expired", "summaries_due"]


def test_a_worker_gives_back_the_signal_handlers_it_found(db):
    """The worker catches SIGTERM and SIGINT to stop after the current round; run within a program (click's
    standalone_mode=False, a test's CliRunner), it hands that program its own handlers back when it returns, so a
    later Ctrl-C still interrupts the program instead of asking a finished worker to stop."""
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    result = CliRunner().invoke(cli, ["maintain", "--json", "--every", "1s", "--rounds", "1",
                                      "--task", "summaries_due", "--dsn", db.dsn("platform_admin")])
    assert result.exit_code == 0, result.output
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_maintain_rejects_a_bad_interval_with_exit_2(db):
    result = CliRunner().invoke(cli, ["maintain", "--every", "soon", "--dsn", db.dsn("platform_admin")])
    assert result.exit_code == 2 and "--every must look like" in result.stderr


def test_maintain_rejects_rounds_without_an_interval_with_exit_2(db):
    result = CliRunner().invoke(cli, ["maintain", "--rounds", "2", "--json", "--dsn", db.dsn("platform_admin")])
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["field"] == "rounds"
    assert "--rounds needs --every" in result.stderr


def test_learn_importance_visits_a_tenant_with_semantic_memory_and_no_packets(db):
    """The tenants are those with packets, semantic memories or logged accesses: a tenant whose memory is all in
    semantic_memory still learns from its accesses."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        memory = conn.execute(
            "select embedding_id from memsub.store_semantic_memory('agent-1', "
            "array_fill(0.1::real, array[memsub.vector_dimension()])::vector)").fetchone()[0]
        for _ in range(5):
            conn.execute("select memsub.record_access('embedding', %s, p_was_useful => true)", [memory])
        conn.commit()
        assert conn.execute("select count(*) from memsub.packet_store").fetchone() == (0,)

    result = CliRunner().invoke(cli, ["maintain", "--dsn", db.dsn("platform_admin"), "--task", "learn_importance",
                                      "--json"])
    assert result.exit_code == 0, result.output
    (round_report,) = _rounds(result.stdout)
    assert list(round_report["tasks"][0]["tenants"]) == [str(TENANT_A)], round_report
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        assert conn.execute("select importance_score from memsub.semantic_memory where embedding_id = %s",
                            [memory]).fetchone()[0] > 0.5
