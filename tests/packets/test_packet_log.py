"""The event log as agents rely on it: every turn kept, client ids honoured, replay in write order with a cursor
that reaches every packet, expiry honoured on every read with lineage kept after purging, and a free payload."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from helpers import (
    TENANT_A,
    TENANT_B,
    expect_error,
    function_calls,
    set_context,
    superuser_count,
    track_function_calls,
    wait_until,
    write,
)


def write_batch(conn: psycopg.Connection[Any], envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cur = conn.cursor(row_factory=dict_row)
    return cur.execute("select * from memsub.write_packets(%s::jsonb)", [json.dumps(envelopes, default=str)]).fetchall()


def thread_payloads(conn: psycopg.Connection[Any], thread: str) -> list[Any]:
    return [r[0] for r in conn.execute("select envelope -> 'payload' from memsub.get_thread(%s)", [thread])]


# 1. Repeated turns and client ids ---------------------------------------------------------------------------------

def test_the_same_turn_five_minutes_apart_is_two_packets(db):
    thread = str(uuid.uuid4())
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        turn = {"packet_type": "user_message", "payload": {"content": "yes"}, "thread_id": thread}
        first = write(conn, turn | {"timestamp": "2025-12-07T12:00:00Z"})
        second = write(conn, turn | {"timestamp": "2025-12-07T12:05:00Z"})
        assert not first["deduplicated"] and not second["deduplicated"]
        assert first["packet_id"] != second["packet_id"]
        assert thread_payloads(conn, thread) == [{"content": "yes"}, {"content": "yes"}]
        conn.commit()
    with db.connect("app") as conn:  # without timestamps: each transaction's own time
        set_context(conn, TENANT_A)
        third = write(conn, turn)
        conn.commit()
        set_context(conn, TENANT_A)
        fourth = write(conn, turn)
        assert not fourth["deduplicated"] and fourth["packet_id"] != third["packet_id"]
        assert len(thread_payloads(conn, thread)) == 4


def test_a_retry_without_id_at_the_same_time_is_deduplicated(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        envelope = {"packet_type": "event", "payload": {"content": "ok"}, "timestamp": "2025-12-07T12:00:00Z"}
        first = write(conn, envelope)
        again = write(conn, envelope | {"tags": ["retry"]})
        assert again["deduplicated"] and again["packet_id"] == first["packet_id"]
        assert again["written"] == {}


def test_a_client_packet_id_names_its_packet_even_when_content_repeats(db):
    thread = str(uuid.uuid4())
    mine = str(uuid.uuid4())
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        turn = {"packet_type": "user_message", "payload": {"content": "yes"}, "thread_id": thread,
                "timestamp": "2025-12-07T12:00:00Z"}
        earlier = write(conn, turn)
        results = write_batch(conn, [
            turn | {"packet_id": mine},
            {"packet_type": "insight", "payload": {"finding": "agreed"}, "thread_id": thread,
             "lineage": {"parent_ids": [mine], "derivation_type": "inference"}}])
        assert str(results[0]["packet_id"]) == mine and not results[0]["deduplicated"]
        assert results[0]["packet_id"] != earlier["packet_id"]
        assert results[1]["parent_ids"] == [uuid.UUID(mine)]


def test_sending_a_packet_id_again_returns_it_and_other_content_is_refused(db):
    mine = str(uuid.uuid4())
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        envelope = {"packet_id": mine, "packet_type": "event", "payload": {"content": "ship it"}}
        first = write(conn, envelope)
        conn.commit()
        set_context(conn, TENANT_A)
        again = write(conn, envelope)  # a retry in a later transaction: no timestamp given, still the same packet
        assert again["deduplicated"] and str(again["packet_id"]) == mine
        assert again["timestamp"] == first["timestamp"]
        conn.commit()
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.UniqueViolation, match=mine) as caught:
            write(conn, envelope | {"payload": {"content": "do not ship it"}})
        assert caught.value.diag.column_name == "packet_id"
    assert superuser_count(db) == 1


def test_envelopes_with_different_ids_are_different_packets_even_with_equal_content(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        same = {"packet_type": "user_message", "payload": {"content": "continue"}}
        results = write_batch(conn, [same | {"packet_id": str(uuid.uuid4())},
                                     same | {"packet_id": str(uuid.uuid4())}])
        assert [r["deduplicated"] for r in results] == [False, False]
        assert len({r["packet_id"] for r in results}) == 2


def test_the_python_client_keeps_repeated_turns_and_deduplicates_a_retried_envelope(db):
    from memsub import PacketEnvelopeIn, Substrate

    thread = uuid.uuid4()
    with Substrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A) as memory:
        first = PacketEnvelopeIn(packet_type="user_message", payload={"content": "yes"}, thread_id=thread)
        written = memory.packets.write(first)
        repeated = memory.packets.write(
            PacketEnvelopeIn(packet_type="user_message", payload={"content": "yes"}, thread_id=thread))
        retried = memory.packets.write(first)
        assert not repeated.deduplicated and repeated.packet_id != written.packet_id
        assert retried.deduplicated and retried.packet_id == written.packet_id == first.packet_id
        assert len(memory.packets.get_thread(thread)) == 2


# 2. Replay in write order, and a cursor that reaches every packet -------------------------------------------------

def test_a_thread_replays_in_write_order_parents_before_children(db):
    thread = str(uuid.uuid4())
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        envelopes: list[dict[str, Any]] = []
        for n in range(40):
            parent = str(uuid.uuid4())
            envelopes.append({"packet_id": parent, "packet_type": "event", "payload": {"n": n}, "thread_id": thread})
            envelopes.append({"packet_type": "insight", "payload": {"from": n}, "thread_id": thread,
                              "lineage": {"parent_ids": [parent]}})
        write_batch(conn, envelopes)
        assert thread_payloads(conn, thread) == [e["payload"] for e in envelopes]


def test_the_thread_cursor_reaches_every_packet_of_one_batch(db):
    thread = str(uuid.uuid4())
    total = 2_500  # three pages of 1,000, all with one timestamp
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for start in range(0, total, 500):  # one transaction: every packet has the same timestamp
            write_batch(conn, [{"packet_type": "event", "payload": {"n": n}, "thread_id": thread}
                               for n in range(start, start + 500)])
        assert conn.execute("select count(distinct timestamp) from memsub.packet_store").fetchone()[0] == 1
        seen: list[int] = []
        cursor = None
        while True:
            rows = conn.execute("select write_seq, (envelope -> 'payload' ->> 'n')::integer "
                                "from memsub.get_thread(%s, 1000, p_after_cursor => %s)", [thread, cursor]).fetchall()
            if not rows:
                break
            seen.extend(n for _, n in rows)
            cursor = rows[-1][0]
        assert seen == list(range(total))


def test_the_client_and_cli_page_through_a_thread_with_a_notice(db):
    from click.testing import CliRunner

    from memsub import Substrate
    from memsub.cli import main

    thread = str(uuid.uuid4())
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        write_batch(conn, [{"packet_type": "event", "payload": {"n": n}, "thread_id": thread} for n in range(5)])
        conn.commit()
    with Substrate(db.dsn("app")) as substrate, substrate.tenant(TENANT_A) as memory:
        page = memory.packets.get_thread(thread, limit=2)
        rest = memory.packets.get_thread(thread, limit=10, after_cursor=page[-1].write_seq)
        assert [r.payload["n"] for r in page + rest] == [0, 1, 2, 3, 4]
        assert [r.payload["n"] for r in memory.packets.replay(thread, page_size=2)] == [0, 1, 2, 3, 4]
    runner = CliRunner()
    result = runner.invoke(main, ["packet", "thread", thread, "--tenant", str(TENANT_A), "--dsn", db.dsn("app"),
                                  "--limit", "2", "--json"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["envelope"]["payload"]["n"] for line in result.stdout.splitlines()] == [0, 1]
    assert "more packets may follow" in result.stderr and "--after" in result.stderr
    after = result.stderr.split("--after ")[1].split()[0]
    result = runner.invoke(main, ["packet", "thread", thread, "--tenant", str(TENANT_A), "--dsn", db.dsn("app"),
                                  "--after", after, "--json"])
    assert [json.loads(line)["envelope"]["payload"]["n"] for line in result.stdout.splitlines()] == [2, 3, 4]
    assert "more packets may follow" not in result.stderr
    result = runner.invoke(main, ["packet", "thread", thread, "--tenant", str(TENANT_A), "--dsn", db.dsn("app"),
                                  "--limit", "2", "--all", "--json"])
    assert len(result.stdout.splitlines()) == 5 and "more packets may follow" not in result.stderr


def test_the_cli_reads_a_thread_page_as_large_as_the_row_limit_and_refuses_a_larger_one(db):
    """A page of max_rows packets (10000) is one get_thread call of that many rows; a full page says more may
    follow, as the MCP and HTTP thread pages do; a larger page is refused by the database, naming the limit."""
    from click.testing import CliRunner

    from memsub.cli import main

    thread = str(uuid.uuid4())
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        write_batch(conn, [{"packet_type": "event", "payload": {"n": n}, "thread_id": thread} for n in range(3)])
        conn.commit()
    base = ["packet", "thread", thread, "--tenant", str(TENANT_A), "--dsn", db.dsn("app"), "--json"]
    runner = CliRunner()
    largest = runner.invoke(main, [*base, "--limit", "10000"])
    assert largest.exit_code == 0, largest.output
    assert len(largest.stdout.splitlines()) == 3 and "may follow" not in largest.stderr
    full = runner.invoke(main, [*base, "--limit", "3"])
    assert full.exit_code == 0 and len(full.stdout.splitlines()) == 3
    assert "more packets may follow" in full.stderr, full.stderr
    every = runner.invoke(main, [*base, "--limit", "10000", "--all"])
    assert every.exit_code == 0 and len(every.stdout.splitlines()) == 3, every.output
    beyond = runner.invoke(main, [*base, "--limit", "10001"])
    assert beyond.exit_code == 2, beyond.output
    assert "SQLSTATE 54000" in beyond.stderr and "field limit" in beyond.stderr, beyond.stderr


# 3. Expiry honoured on every read; purging keeps lineage -------------------------------------------------------

EXPIRED = {"timestamp": "2020-01-01T00:00:00Z", "ttl": "2020-01-02T00:00:00Z"}


def _vector(conn: psycopg.Connection[Any], value: float) -> list[float]:
    dimension = conn.execute("select memsub.vector_dimension()").fetchone()[0]
    return [value] * dimension


def test_an_expired_packet_is_not_read_by_any_function_or_view(db):
    thread = str(uuid.uuid4())
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        vector = _vector(conn, 0.1)
        memory = {"embeddings": [{"embedding_type": "content", "vector": vector,
                                  "chunk_text": "zanzibar quokka sighting"}]}
        # Fan-out needs a packet that has not expired yet: this one expires two seconds after it is written.
        ttl = datetime.now(UTC) + timedelta(seconds=2)
        expired = write(conn, {"packet_type": "event", "payload": {"secret": "gone"}, "thread_id": thread,
                               "memory": memory, "ttl": ttl.isoformat()})
        write(conn, {"packet_type": "event", "payload": {"kept": True}, "thread_id": thread})
        wait_until(conn, ttl)
        set_context(conn, TENANT_A)
        packet_id = expired["packet_id"]
        assert conn.execute("select count(*) from memsub.get_packet(%s)", [packet_id]).fetchone()[0] == 0
        assert thread_payloads(conn, thread) == [{"kept": True}]
        assert conn.execute("select count(*) from memsub.packet_store where packet_id = %s",
                            [packet_id]).fetchone()[0] == 0
        assert conn.execute("select count(*) from memsub.memory_embeddings where packet_id = %s",
                            [packet_id]).fetchone()[0] == 0
        query = json.dumps(vector)
        assert conn.execute("select count(*) from memsub.semantic_search(%s::vector, 5)", [query]).fetchone()[0] == 0
        assert conn.execute("select count(*) from memsub.hybrid_search('zanzibar quokka', %s::vector, 5)",
                            [query]).fetchone()[0] == 0
        assert conn.execute("select count(*) from memsub._keyword_candidates('zanzibar quokka')").fetchone()[0] == 0
        with pytest.raises(psycopg.errors.ForeignKeyViolation):  # an expired packet cannot become a parent
            write(conn, {"packet_type": "insight", "payload": 1, "lineage": {"parent_ids": [str(packet_id)]}})
    assert superuser_count(db) == 2  # still stored until purged


def test_purging_keeps_lineage_walkable_through_a_tombstone(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        ttl = datetime.now(UTC) + timedelta(seconds=2)
        parent = write(conn, {"packet_type": "observation", "payload": "raw", "ttl": ttl.isoformat()})
        child = write(conn, {"packet_type": "insight", "payload": "derived",
                             "lineage": {"parent_ids": [str(parent["packet_id"])]}})
        wait_until(conn, ttl)
        set_context(conn, TENANT_A)
        before = conn.execute("select packet_id, depth, packet_type, state from memsub.get_lineage(%s)",
                              [child["packet_id"]]).fetchall()
        assert before == [(parent["packet_id"], 1, "observation", "expired")]
        assert conn.execute("select * from memsub.purge_expired()").fetchall() == [(TENANT_A, 1)]
        conn.commit()
        set_context(conn, TENANT_A)
        after = conn.execute("select packet_id, depth, packet_type, state, generation from memsub.get_lineage(%s)",
                             [child["packet_id"]]).fetchall()
        assert after == [(parent["packet_id"], 1, "observation", "purged", 0)]
        down = conn.execute("select packet_id, state from memsub.get_lineage(%s, 'descendants')",
                            [parent["packet_id"]]).fetchall()
        assert down == [(child["packet_id"], "live")]
        assert conn.execute("select count(*) from memsub.packet_tombstones").fetchone()[0] == 1
        # The purged packet's id stays its own: a new packet under it would stand in its lineage (get_lineage would
        # report the id twice, the child hang off unrelated content). Refused on both write paths, nothing written.
        conn.commit()
        reused = {"packet_id": str(parent["packet_id"]), "packet_type": "other", "payload": "new"}
        for statement, argument in [("select * from memsub.write_packet(%s::jsonb)", reused),
                                    ("select * from memsub.write_packets(%s::jsonb)",
                                     [{"packet_type": "filler", "payload": n} for n in range(9)] + [reused])]:
            set_context(conn, TENANT_A)
            with pytest.raises(psycopg.errors.UniqueViolation) as refused:
                conn.execute(statement, [json.dumps(argument)])
            assert refused.value.diag.column_name == "packet_id" and "purged" in str(refused.value)
            conn.rollback()
        set_context(conn, TENANT_A)
        assert conn.execute("select count(*) from memsub.packet_store").fetchone()[0] == 1
        conn.commit()  # a transaction acts for one tenant
        set_context(conn, TENANT_B)  # tombstones obey the tenant policies
        assert conn.execute("select count(*) from memsub.packet_tombstones").fetchone()[0] == 0
        # Neither the child nor the purged parent is there for another tenant to walk from.
        for packet_id in (child["packet_id"], parent["packet_id"]):
            set_context(conn, TENANT_B)
            expect_error(conn, "P0002", "packet_id", "select count(*) from memsub.get_lineage(%s)", [packet_id])
    assert superuser_count(db) == 1


def test_purge_expired_runs_per_tenant_or_for_all_as_platform_admin(db):
    for tenant in (TENANT_A, TENANT_B):
        with db.connect("app") as conn:
            set_context(conn, tenant)
            write(conn, {"packet_type": "event", "payload": str(tenant)} | EXPIRED)
            conn.commit()
    with db.connect("platform_admin") as conn:
        set_context(conn, None, roles=["platform_admin"])
        assert conn.execute("select * from memsub.purge_expired(%s)", [TENANT_B]).fetchall() == [(TENANT_B, 1)]
        assert conn.execute("select * from memsub.purge_expired()").fetchall() == [(TENANT_A, 1)]
        conn.commit()
    assert superuser_count(db) == 0 and superuser_count(db, "memsub.packet_tombstones") == 2
    with db.connect("app") as conn:  # an application cannot delete packets directly
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("delete from memsub.packet_store")


# 5. The payload is free; fan-out is asked for explicitly; newer fields are kept ----------------------------------

def test_a_payload_using_fan_out_keys_is_just_payload(db):
    user = uuid.uuid4()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, user=user)
        for payload in ({"facts": "the user likes tea"}, {"relationships": 3, "embeddings": None},
                        {"reasoning_trace": ["thought"]}):
            result = write(conn, {"packet_type": "note", "payload": payload})
            assert result["written"] == {"packet_store": 1}
        private = write(conn, {"packet_type": "note", "scope": "l-private",
                               "payload": {"facts": [{"subject": "me", "predicate": "likes", "object": "tea"}]}})
        assert private["written"] == {"packet_store": 1}
        assert conn.execute("select count(*) from memsub.knowledge_facts").fetchone()[0] == 0


def test_fan_out_is_asked_for_with_the_memory_field(db):
    user = uuid.uuid4()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, user=user)
        result = write(conn, {"packet_type": "observation", "payload": {"text": "L9 uses Neo4j"},
                              "memory": {"facts": [{"subject": "L9", "predicate": "uses", "object": "Neo4j"}],
                                         "relationships": [{"source_entity": "L9", "relationship_type": "uses",
                                                            "target_entity": "Neo4j"}],
                                         "reasoning_trace": {"steps": ["read"]}}})
        assert result["written"] == {"packet_store": 1, "knowledge_facts": 1, "entity_relationships": 1,
                                     "reasoning_traces": 1}
        with pytest.raises(psycopg.errors.InvalidParameterValue) as caught:
            write(conn, {"packet_type": "note", "scope": "l-private", "payload": {},
                         "memory": {"facts": [{"subject": "me", "predicate": "likes", "object": "tea"}]}})
        assert caught.value.diag.column_name == "memory.facts"


def test_a_field_from_a_newer_contract_is_kept_and_reported(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        result = write(conn, {"packet_type": "event", "payload": {}, "priority_hint": "high",
                              "lineage": {"parent_ids": [], "confidence_decay": 0.1}})
        assert result["unknown_fields"] == ["lineage.confidence_decay", "priority_hint"]
        envelope = conn.execute("select envelope from memsub.get_packet(%s)", [result["packet_id"]]).fetchone()[0]
        assert envelope["priority_hint"] == "high" and envelope["lineage"]["confidence_decay"] == 0.1


def test_an_ancestors_walk_reads_each_level_in_a_fixed_number_of_calls(db):
    """get_lineage's ancestors walk read the parents of each packet of a level with a call of its own
    (memsub._lineage_nodes, a statement over packet_store and packet_tombstones): as many calls as the level is
    wide; then three calls a level (the level's packets for their parents, the parents, the level again for its
    rows). It now reads each level once: that call gives the level's rows and the parents of the next."""
    width = 12
    track_function_calls(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        roots = [write(conn, {"packet_type": "event", "payload": f"root {n}"}) for n in range(width)]
        middles = [write(conn, {"packet_type": "event", "payload": f"middle {n}",
                                "lineage": {"parent_ids": [str(root["packet_id"])]}}) for n, root in enumerate(roots)]
        child = write(conn, {"packet_type": "event", "payload": "child",
                             "lineage": {"parent_ids": [str(m["packet_id"]) for m in middles]}})
        conn.commit()
        set_context(conn, TENANT_A)
        calls = function_calls(conn, ["_lineage_nodes"]).get("_lineage_nodes", 0)
        found = conn.execute("select packet_id, depth from memsub.get_lineage(%s)", [child["packet_id"]]).fetchall()
        after = function_calls(conn, ["_lineage_nodes"])["_lineage_nodes"]
        conn.commit()
    assert sorted(found) == sorted([(m["packet_id"], 1) for m in middles] + [(r["packet_id"], 2) for r in roots])
    # The start's parents, then one read per level; the walk ends at a level with no parents, without a read.
    assert after - calls == 1 + 2, after - calls
