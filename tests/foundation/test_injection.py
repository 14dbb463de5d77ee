"""SQL injection attempts through the client's and the CLI's parameters: each one is a value, never SQL.

Every attempt either fails with a documented error or is stored and returned as the literal text it was; and
afterwards the catalog is unchanged and no other tenant's row was touched.
"""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from memsub import MemsubError, Substrate
from memsub.cli import main as cli
from memsub.embedding import HashingEmbedder

from catalog import snapshot
from helpers import TENANT_A, TENANT_B, set_context, superuser_count, write

ATTEMPTS = [
    "'; drop table memsub.packet_store; --",
    "x') or true; --",
    "\" or 1=1 --",
    "$$; delete from memsub.packet_store; $$",
    "00000000-0000-0000-0000-000000000000' or tenant_id is not null or '",
    "1; select pg_sleep(5)",
    "user:x:y'); update memsub.memory_entries set value = '\"owned\"'; --",
]


@pytest.fixture
def seeded(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        write(conn, {"packet_type": "event", "payload": "B's packet"})
        conn.commit()
    return db


@pytest.mark.parametrize("attempt", ATTEMPTS)
def test_client_parameters_carry_values_not_sql(seeded, attempt):
    db = seeded
    before = snapshot(db.dsn())
    with db.connect() as conn:
        dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
    user = uuid.UUID("00000000-0000-0000-0001-0000000000aa")
    with Substrate(db.dsn("app")) as substrate:
        with pytest.raises(MemsubError), substrate.tenant(attempt):
            pass
        for call in (lambda m: m.packets.get(attempt), lambda m: m.packets.get_thread(attempt),
                     lambda m: m.packets.get_lineage(attempt),
                     lambda m: m.search.record_feedback(attempt, True, attempt)):
            with pytest.raises(MemsubError), substrate.tenant(TENANT_A) as session:
                call(session)
        with substrate.tenant(TENANT_A, user_id=user, session_id=attempt) as session:
            stored = session.packets.write({"packet_type": attempt, "payload": {"text": attempt}, "tags": [attempt],
                                            "trace_id": attempt})
            row = session.packets.get(stored.packet_id)
            assert row is not None and row.packet_type == attempt and row.tags == [attempt]
            assert row.session_id == attempt and row.payload == {"text": attempt}
            vector = HashingEmbedder(dimension).embed([attempt])[0]
            session.search.semantic(vector, k=3, tags=[attempt], packet_type=attempt)
            session.search.hybrid(attempt, vector, k=3)
            session.graph.traverse(attempt, max_depth=2)
            session.graph.assert_fact(attempt, attempt, attempt)
            key = attempt.replace(":", "_")  # ":" separates namespace parts and is refused in keys
            session.memory.write(f"user:{user}:notes", key, attempt)
            assert session.memory.get(f"user:{user}:notes", key).value == attempt
        with pytest.raises(MemsubError), substrate.tenant(TENANT_A, user_id=user) as session:
            session.memory.write(attempt, "key", 1)
    assert snapshot(db.dsn()) == before  # no object created, dropped or altered
    with db.connect() as conn:
        assert conn.execute("select count(*) from memsub.packet_store where tenant_id = %s",
                            [TENANT_B]).fetchone() == (1,)


@pytest.mark.parametrize("attempt", ATTEMPTS[:4])
def test_cli_parameters_carry_values_not_sql(seeded, attempt, tmp_path):
    db = seeded
    before = snapshot(db.dsn())
    runner = CliRunner()
    app = ["--dsn", db.dsn("app")]
    for arguments in (["packet", "get", attempt, *app, "--tenant", str(TENANT_A)],
                      ["packet", "get", str(uuid.uuid4()), *app, "--tenant", attempt],
                      ["packet", "thread", attempt, *app, "--tenant", str(TENANT_A)],
                      ["packet", "lineage", attempt, *app, "--tenant", str(TENANT_A)],
                      ["packet", "get", str(uuid.uuid4()), *app, "--tenant", str(TENANT_A), "--org", attempt]):
        result = runner.invoke(cli, arguments)
        assert result.exit_code != 0, arguments
    source = tmp_path / "packets.jsonl"
    source.write_text(json.dumps({"packet_type": attempt, "payload": attempt}) + "\n")
    result = runner.invoke(cli, ["packet", "write", str(source), *app, "--tenant", str(TENANT_A),
                                 "--session", attempt])
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["search", attempt, *app, "--tenant", str(TENANT_A), "--embedder", "hashing",
                                 "--mode", "hybrid", "--json"])
    assert result.exit_code == 0, result.output
    assert snapshot(db.dsn()) == before
    assert superuser_count(db) == 2
    with db.connect() as conn:
        assert conn.execute("select packet_type, session_id from memsub.packet_store where tenant_id = %s",
                            [TENANT_A]).fetchone() == (attempt, attempt)
