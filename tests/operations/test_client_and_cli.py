"""The typed client (Substrate) and the packet, db and lint commands of the CLI."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from memsub import (
    ContextError,
    ImmutableError,
    IntegrityError,
    InvalidInput,
    PacketEnvelopeIn,
    PacketLineage,
    PacketStoreRow,
    PacketWriteResult,
    Substrate,
)
from memsub.cli import main as cli
from memsub.errors import from_database_error
from memsub.sqllint import lint

from helpers import TENANT_A, TENANT_B, superuser_count


@pytest.fixture
def substrate(db):
    with Substrate(db.dsn("app")) as client:
        yield client


def test_write_read_thread_and_lineage_through_typed_models(substrate):
    thread = uuid.uuid4()
    with substrate.tenant(TENANT_A, user_id=uuid.uuid4()) as session:
        question = session.packets.write(PacketEnvelopeIn(packet_type="event", payload={"q": "HDPE?"},
                                                          thread_id=thread, tags=["hdpe"]))
        answer = session.packets.write(PacketEnvelopeIn(
            packet_type="insight", payload={"a": "three suppliers"}, thread_id=thread,
            lineage=PacketLineage(parent_ids=[question.packet_id], derivation_type="inference"), scope="l-private"))
        assert isinstance(answer, PacketWriteResult)
        assert answer.generation == 1 and answer.root_packet_id == question.packet_id
        row = session.packets.get(answer.packet_id)
        assert isinstance(row, PacketStoreRow) and row.scope == "l-private" and row.payload == {"a": "three suppliers"}
        assert [p.packet_id for p in session.packets.get_thread(thread)] == [question.packet_id, answer.packet_id]
        lineage = session.packets.get_lineage(answer.packet_id)
        assert [(r.packet_id, r.depth) for r in lineage] == [(question.packet_id, 1)]
        assert session.packets.get(uuid.uuid4()) is None


def test_batched_writes_keep_positions_across_batches(substrate):
    envelopes = [{"packet_type": "event", "payload": {"n": n}} for n in range(7)]
    with substrate.tenant(TENANT_A) as session:
        results = session.packets.write_packets(envelopes, batch_size=3)
    assert [r.position for r in results] == list(range(1, 8))
    assert len({r.packet_id for r in results}) == 7


def test_errors_are_typed_and_name_the_field(substrate, db):
    with pytest.raises(InvalidInput) as caught, substrate.tenant(TENANT_A) as session:
        session.packets.write({"packet_type": "event", "payload": 1, "confidence": {"score": 1.5}})
    assert caught.value.sqlstate == "22023" and caught.value.field == "confidence.score"
    with pytest.raises(IntegrityError) as integrity, substrate.tenant(TENANT_A) as session:
        session.packets.write({"packet_type": "event", "payload": 1, "lineage": {"parent_ids": [str(uuid.uuid4())]}})
    assert integrity.value.sqlstate == "23503"
    with pytest.raises(ContextError), substrate.tenant(TENANT_A, roles=["platform_admin"]):
        pass
    with substrate.tenant(TENANT_A) as session:
        session.packets.write({"packet_type": "event", "payload": "keep"})
    with substrate.tenant(TENANT_A) as session:
        assert session.packets.purge_expired() == {}
    # The immutability trigger answers even the superuser (the application has no DELETE at all).
    with db.connect() as conn, pytest.raises(psycopg.errors.FeatureNotSupported) as raw:
        conn.execute("delete from memsub.packet_store")
    assert isinstance(from_database_error(raw.value), ImmutableError)
    assert superuser_count(db) == 1


def test_a_failed_block_rolls_back_everything(substrate, db):
    with pytest.raises(InvalidInput), substrate.tenant(TENANT_A) as session:
        session.packets.write({"packet_type": "event", "payload": "first"})
        session.packets.write({"packet_type": "event"})
    assert superuser_count(db) == 0


def test_envelope_models_validate_locally():
    with pytest.raises(ValueError):
        PacketEnvelopeIn(packet_type="event", payload=1, confidence={"score": 1.5})
    with pytest.raises(ValueError):
        PacketEnvelopeIn(packet_type="event", payload=1, lineage={"derivation_type": "guess"})
    with pytest.raises(ValueError):
        PacketEnvelopeIn(packet_type="event", payload=1, surprise=True)
    envelope = PacketEnvelopeIn(packet_type="event", payload={"x": 1})
    assert json.loads(envelope.to_json())["packet_id"] == str(envelope.packet_id)


def test_cli_packet_write_jsonl_then_get_thread_lineage(db, tmp_path):
    thread = str(uuid.uuid4())
    parent = str(uuid.uuid4())
    lines = [{"packet_id": parent, "packet_type": "event", "payload": {"q": "find HDPE"}, "thread_id": thread},
             {"packet_type": "insight", "payload": {"a": "ok"}, "thread_id": thread,
              "lineage": {"parent_ids": [parent], "derivation_type": "inference"}},
             {"packet_id": parent, "packet_type": "event", "payload": {"q": "find HDPE"}, "thread_id": thread}]
    source = tmp_path / "packets.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    runner = CliRunner()
    base = ["--dsn", db.dsn("app"), "--tenant", str(TENANT_A)]
    result = runner.invoke(cli, ["packet", "write", str(source), *base, "--json"])
    assert result.exit_code == 0, result.output
    written = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [w["deduplicated"] for w in written] == [False, False, True]
    assert "wrote 2 packet(s), 1 deduplicated" in result.output

    result = runner.invoke(cli, ["packet", "get", parent, *base])
    assert result.exit_code == 0 and json.loads(result.stdout)["payload"] == {"q": "find HDPE"}
    result = runner.invoke(cli, ["packet", "thread", thread, *base])
    assert result.exit_code == 0 and result.stdout.count("\n") == 4  # header, rule, two packets
    result = runner.invoke(cli, ["packet", "lineage", written[1]["packet_id"], *base, "--json"])
    assert json.loads(result.stdout.splitlines()[0])["packet_id"] == parent
    result = runner.invoke(cli, ["packet", "get", parent, "--dsn", db.dsn("app"), "--tenant", str(TENANT_B)])
    assert result.exit_code == 1 and "not visible" in result.output


def test_cli_packet_lineage_of_a_packet_it_cannot_see_exits_1_naming_it(db):
    """An unknown packet id, or another tenant's, gave an empty table and exit 0, as a packet without parents does:
    it is not found (exit 1), in one line naming the id, as ``packet get`` says it. A packet without parents, live
    or expired, is found and has an empty lineage."""
    runner = CliRunner()
    base = ["--dsn", db.dsn("app"), "--tenant", str(TENANT_A)]
    root, expired, unknown = (str(uuid.uuid4()) for _ in range(3))
    envelopes = [{"packet_id": root, "packet_type": "event", "payload": 1},
                 {"packet_id": expired, "packet_type": "event", "payload": 2, "timestamp": "2024-01-01T00:00:00Z",
                  "ttl": "2024-01-02T00:00:00Z"}]
    result = runner.invoke(cli, ["packet", "write", "-", *base], input=json.dumps(envelopes))
    assert result.exit_code == 0, result.output
    for packet_id in (root, expired):
        for direction in ("ancestors", "descendants"):
            result = runner.invoke(cli, ["packet", "lineage", packet_id, *base, "--direction", direction, "--json"])
            assert (result.exit_code, result.stdout) == (0, ""), result.output
    other_tenant = ["--dsn", db.dsn("app"), "--tenant", str(TENANT_B)]
    for packet_id, arguments in [(unknown, base), (root, other_tenant)]:
        result = runner.invoke(cli, ["packet", "lineage", packet_id, *arguments])
        assert result.exit_code == 1, result.output
        assert result.stdout == ""
        error = [line for line in result.stderr.splitlines() if not line.startswith("memsub: server ")]
        assert len(error) == 1 and packet_id in error[0], result.stderr
        assert "does not exist or is not visible" in error[0], result.stderr


def test_cli_packet_write_json_array_from_stdin_and_bad_input_writes_nothing(db):
    runner = CliRunner()
    base = ["--dsn", db.dsn("app"), "--tenant", str(TENANT_A)]
    good = json.dumps([{"packet_type": "event", "payload": n} for n in range(3)])
    result = runner.invoke(cli, ["packet", "write", "-", *base], input=good)
    assert result.exit_code == 0 and "wrote 3 packet(s)" in result.output
    bad = "\n".join(json.dumps(e) for e in [{"packet_type": "event", "payload": "x"},
                                            {"packet_type": "event", "payload": 1, "thread_id": "nope"}])
    result = runner.invoke(cli, ["packet", "write", "-", *base], input=bad)
    assert result.exit_code == 2  # bad input
    assert "SQLSTATE 22P02" in result.output and "field thread_id" in result.output
    assert "nothing was written" in result.output
    assert superuser_count(db) == 3
    result = runner.invoke(cli, ["packet", "write", "-", *base], input="{not json")
    assert result.exit_code != 0 and superuser_count(db) == 3


def test_cli_packet_write_in_batches_reports_each_envelope_at_its_place_and_a_bad_batch_keeps_nothing(db):
    runner = CliRunner()
    base = ["--dsn", db.dsn("app"), "--tenant", str(TENANT_A)]
    envelopes = [{"packet_id": str(uuid.uuid4()), "packet_type": "event", "payload": n} for n in range(5)]
    result = runner.invoke(cli, ["packet", "write", "-", *base, "--batch-size", "2", "--json"],
                           input=json.dumps(envelopes))
    assert result.exit_code == 0, result.output
    written = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [(w["position"], w["packet_id"]) for w in written] == [(n, e["packet_id"]) for n, e in
                                                                  enumerate(envelopes, start=1)]
    # the third batch is bad: the two before it, in the same transaction, are not kept either
    more = [{"packet_type": "event", "payload": n} for n in range(4)] + [{"packet_type": "event", "payload": 1,
                                                                          "thread_id": "nope"}]
    result = runner.invoke(cli, ["packet", "write", "-", *base, "--batch-size", "2"], input=json.dumps(more))
    assert result.exit_code == 2 and "nothing was written" in result.output
    assert superuser_count(db) == 5


@pytest.mark.parametrize("size", ["0", "-1"])
def test_cli_packet_write_refuses_a_batch_size_below_one_naming_it(db, size):
    """No batch of fewer than one envelope: 0 would fail in the loop, and -1 skipped the loop, wrote nothing and
    exited 0."""
    envelopes = "\n".join(json.dumps({"packet_type": "event", "payload": n}) for n in range(3))
    result = CliRunner().invoke(cli, ["packet", "write", "-", "--dsn", db.dsn("app"), "--tenant", str(TENANT_A),
                                      "--batch-size", size], input=envelopes)
    assert result.exit_code == 2, result.output
    assert "--batch-size" in result.stderr, result.stderr
    assert superuser_count(db) == 0


def test_cli_manages_an_embedded_cluster(tmp_path: Path):
    data_dir = tmp_path / "cluster"
    tmp_path.chmod(0o755)
    runner = CliRunner()
    result = runner.invoke(cli, ["db", "status", "--data-dir", str(data_dir)])
    assert result.exit_code == 3 and "not initialized" in result.output
    result = runner.invoke(cli, ["db", "start", "--data-dir", str(data_dir)])
    assert result.exit_code == 0 and result.stdout.startswith("postgresql://")
    assert "memsub db stop" in result.stderr  # says how to stop what it started
    try:
        url = runner.invoke(cli, ["db", "url", "--data-dir", str(data_dir)]).output.strip()
        assert url == result.stdout.strip()
        assert "running" in runner.invoke(cli, ["db", "status", "--data-dir", str(data_dir)]).output
        migrate = runner.invoke(cli, ["migrate", "--dsn", url])
        assert migrate.exit_code == 0, migrate.output
    finally:
        assert runner.invoke(cli, ["db", "stop", "--data-dir", str(data_dir)]).output.strip() == "stopped"
    assert runner.invoke(cli, ["db", "url", "--data-dir", str(data_dir)]).exit_code == 1
    # Started again by the same process: a stopped cluster's handle must not be reused.
    again = runner.invoke(cli, ["db", "start", "--data-dir", str(data_dir)])
    try:
        assert again.exit_code == 0 and "running" in runner.invoke(
            cli, ["db", "status", "--data-dir", str(data_dir)]).output
    finally:
        assert runner.invoke(cli, ["db", "stop", "--data-dir", str(data_dir)]).output.strip() == "stopped"


def test_sql_lint_passes_on_the_shipped_sql_and_catches_violations(tmp_path):
    root = Path(__file__).resolve().parents[2]
    assert lint([root / "sql", root / "migrations"]) == []
    bad = tmp_path / "bad.sql"
    bad.write_text("create table memsub.t (a int, b text);\ncomment on table memsub.t is 'x';\n"
                   "create or replace function memsub.f() returns int language sql as $$ select 1 $$;\n"
                   "grant select on memsub.t to public;\n")
    messages = [p.message for p in lint([bad])]
    assert "function memsub.f does not declare its volatility" in messages
    assert "function memsub.f does not declare security invoker|definer" in messages
    assert "function memsub.f does not set search_path" in messages
    assert "grant to PUBLIC: grant to memsub roles by name" in messages
    assert "column memsub.t.a has no comment on" in messages
    assert "function memsub.f has no comment on" in messages


def test_a_set_in_a_payload_is_refused_not_stored_as_its_string(db):
    """Python's ``str()`` of a set is not JSON: the client names the field instead of storing ``"{'hdpe'}"``."""
    with Substrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A) as session:
        with pytest.raises(TypeError, match=r"envelope\.payload\.materials"):
            session.packets.write({"packet_type": "event", "payload": {"materials": {"hdpe"}}})
        with pytest.raises(TypeError, match=r"obj|object"):
            session.graph.assert_fact("BayCycle", "sells", {"hdpe", "pet"})
    assert superuser_count(db) == 0
    assert superuser_count(db, "memsub.knowledge_facts") == 0
