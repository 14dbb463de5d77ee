"""The PacketEnvelope contract (seed 004): fields, invariants, and bad input that changes nothing."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from helpers import TENANT_A, TENANT_B, count, in_parallel, set_context, superuser_count, write

ORG_A = uuid.UUID("0a000000-0000-0000-0000-00000000000a")
ORG_B = uuid.UUID("0b000000-0000-0000-0000-00000000000b")


def test_required_fields_only_and_generated_identity(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        before = datetime.now(UTC)
        result = write(conn, {"packet_type": "event", "payload": {"action": "user_query"}})
        row = conn.execute("select envelope, timestamp, tenant_id, scope, importance_score "
                           "from memsub.get_packet(%s)", [result["packet_id"]]).fetchone()
    envelope, timestamp, tenant, scope, importance = row
    assert uuid.UUID(envelope["packet_id"]) == result["packet_id"]
    assert before - timedelta(seconds=5) <= timestamp <= datetime.now(UTC) + timedelta(seconds=5)
    assert envelope["timestamp"].endswith("Z")
    assert tenant == TENANT_A and scope == "shared" and importance == 0.5
    assert result["generation"] == 0 and result["root_packet_id"] == result["packet_id"]
    assert result["written"] == {"packet_store": 1}


def test_every_field_is_stored_and_mapped_to_its_column(db):
    packet_id = uuid.uuid4()
    thread_id = uuid.uuid4()
    correlation = uuid.uuid4()
    user = uuid.uuid4()
    envelope = {
        "packet_id": str(packet_id),
        "packet_type": "event",
        "timestamp": "2025-12-07T12:00:00Z",
        "payload": {"action": "user_query", "content": "Find HDPE suppliers"},
        "metadata": {"schema_version": "1.1.0", "agent": "plasticos_agent", "domain": "plastic_brokerage"},
        "provenance": {"source": "api_gateway", "tool": "search_tool"},
        "confidence": {"score": 0.95, "rationale": "reliable source"},
        "reasoning_block": {"steps": ["look up", "rank"]},
        "thread_id": str(thread_id),
        "tags": ["hdpe", "supplier_search", "california", "hdpe"],
        "ttl": "2099-12-14T12:00:00",
        "scope": "l-private",
        "importance_score": 0.8,
        "correlation_id": str(correlation),
        "session_id": "session-1",
        "trace_id": "trace-1",
    }
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, org=ORG_A, user=user)
        result = write(conn, envelope)
        row = conn.execute(
            "select packet_id, packet_type, timestamp, routing, provenance, thread_id, tags, ttl, scope, "
            "importance_score, correlation_id, session_id, trace_id, org_id, user_id, envelope "
            "from memsub.packet_store where packet_id = %s", [packet_id]).fetchone()
    assert result["packet_id"] == packet_id and result["thread_id"] == thread_id
    assert row[0] == packet_id and row[1] == "event"
    assert row[2] == datetime(2025, 12, 7, 12, tzinfo=UTC)
    assert row[3] == envelope["metadata"] and row[4] == envelope["provenance"]
    assert row[5] == thread_id
    assert row[6] == ["hdpe", "supplier_search", "california"]  # duplicates removed, order kept
    assert row[7] == datetime(2099, 12, 14, 12)  # ttl without zone is UTC, stored as timestamp
    assert row[8:13] == ("l-private", 0.8, correlation, "session-1", "trace-1")
    assert row[13:15] == (ORG_A, user)
    stored = row[15]
    assert stored["confidence"] == envelope["confidence"]
    assert stored["reasoning_block"] == envelope["reasoning_block"]
    assert stored["payload"] == envelope["payload"]


def test_lineage_generation_and_root_are_computed_from_parents(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        root = write(conn, {"packet_type": "event", "payload": 1})
        other = write(conn, {"packet_type": "event", "payload": 2})
        child = write(conn, {"packet_type": "reasoning_trace", "payload": 3,
                             "lineage": {"parent_ids": [str(root["packet_id"])], "derivation_type": "transform"}})
        merged = write(conn, {"packet_type": "insight", "payload": 4,
                              "lineage": {"parent_ids": [str(child["packet_id"]), str(other["packet_id"])],
                                          "derivation_type": "merge"}})
        stored = conn.execute("select envelope -> 'lineage', parent_ids from memsub.packet_store "
                              "where packet_id = %s", [merged["packet_id"]]).fetchone()
    assert child["generation"] == 1 and child["root_packet_id"] == root["packet_id"]
    assert merged["generation"] == 2 and merged["root_packet_id"] == root["packet_id"]
    assert stored[1] == [child["packet_id"], other["packet_id"]]
    assert stored[0]["generation"] == 2 and stored[0]["derivation_type"] == "merge"
    assert uuid.UUID(stored[0]["root_packet_id"]) == root["packet_id"]


def test_lineage_generation_and_root_given_as_null_are_absent(db):
    """As everywhere in the envelope (parent_ids, derivation_type, ttl, ...), a JSON null is a field not given: the
    generation and root are computed, not compared with null and refused."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        root = write(conn, {"packet_type": "event", "payload": 1, "lineage": {"generation": None,
                                                                                "root_packet_id": None}})
        child = write(conn, {"packet_type": "event", "payload": 2,
                             "lineage": {"parent_ids": [str(root["packet_id"])], "generation": None,
                                         "root_packet_id": None}})
    assert (root["generation"], root["root_packet_id"]) == (0, root["packet_id"])
    assert (child["generation"], child["root_packet_id"]) == (1, root["packet_id"])


BAD_ENVELOPES = [
    ("missing packet_type", {"payload": {}}, "23502", "packet_type"),
    ("blank packet_type", {"packet_type": " ", "payload": {}}, "22023", "packet_type"),
    ("packet_type of a tab", {"packet_type": "\t", "payload": {}}, "22023", "packet_type"),
    ("missing payload", {"packet_type": "event"}, "23502", "payload"),
    ("null payload", {"packet_type": "event", "payload": None}, "23502", "payload"),
    ("malformed packet_id", {"packet_type": "event", "payload": 1, "packet_id": "not-a-uuid"}, "22P02", "packet_id"),
    ("malformed thread_id", {"packet_type": "event", "payload": 1, "thread_id": "1234"}, "22P02", "thread_id"),
    ("score 1.5", {"packet_type": "event", "payload": 1, "confidence": {"score": 1.5}}, "22023", "confidence.score"),
    # Times past year 9999 in UTC (or before year 1): PostgreSQL holds them, ISO 8601 clients (Python's datetime)
    # do not, and a thread holding one could no longer be read by them.
    ("timestamp in year 10000 UTC", {"packet_type": "event", "payload": 1, "timestamp": "9999-12-31T23:59:59-14:00"},
     "22008", "timestamp"),
    ("timestamp before year 1 UTC", {"packet_type": "event", "payload": 1, "timestamp": "0001-01-01T00:00:00+14:00"},
     "22008", "timestamp"),
    ("ttl in year 10000 UTC", {"packet_type": "event", "payload": 1, "ttl": "9999-12-31T20:00:00-05:00"},
     "22008", "ttl"),
    # An offset of 16 hours or more is ISO 8601 but beyond PostgreSQL's offsets (15:59 at most).
    ("timestamp 16 hours ahead", {"packet_type": "event", "payload": 1, "timestamp": "2024-01-01T00:00:00+16:00"},
     "22008", "timestamp"),
    ("timestamp 23 hours behind", {"packet_type": "event", "payload": 1, "timestamp": "2024-01-01T00:00:00-23"},
     "22008", "timestamp"),
    ("ttl 16 hours behind", {"packet_type": "event", "payload": 1, "ttl": "2099-01-01T00:00-1600"}, "22008", "ttl"),
    ("score as text", {"packet_type": "event", "payload": 1, "confidence": {"score": "high"}}, "22023",
     "confidence.score"),
    ("unknown derivation", {"packet_type": "event", "payload": 1, "lineage": {"derivation_type": "guess"}},
     "22023", "lineage.derivation_type"),
    ("malformed parent", {"packet_type": "event", "payload": 1, "lineage": {"parent_ids": ["x"]}}, "22P02",
     "lineage.parent_ids"),
    ("unknown parent", {"packet_type": "event", "payload": 1,
                        "lineage": {"parent_ids": ["00000000-0000-0000-0000-0000000000ff"]}}, "23503",
     "lineage.parent_ids"),
    ("self parent", {"packet_type": "event", "payload": 1, "packet_id": "00000000-0000-0000-0000-0000000000aa",
                     "lineage": {"parent_ids": ["00000000-0000-0000-0000-0000000000aa"]}}, "23514",
     "lineage.parent_ids"),
    ("wrong generation", {"packet_type": "event", "payload": 1, "lineage": {"generation": 3}}, "22023",
     "lineage.generation"),
    ("tenant from the envelope", {"packet_type": "event", "payload": 1, "tenant_id": str(TENANT_B)}, "22023",
     "tenant_id"),
    ("user from the envelope", {"packet_type": "event", "payload": 1, "user_id": str(TENANT_B)}, "22023",
     "user_id"),
    ("timestamp not ISO", {"packet_type": "event", "payload": 1, "timestamp": "yesterday"}, "22007", "timestamp"),
    ("ttl before timestamp", {"packet_type": "event", "payload": 1, "timestamp": "2025-01-02T00:00:00Z",
                              "ttl": "2025-01-01T00:00:00Z"}, "22023", "ttl"),
    ("tags not strings", {"packet_type": "event", "payload": 1, "tags": ["ok", 3]}, "22023", "tags"),
    ("a tag of a line break", {"packet_type": "event", "payload": 1, "tags": ["ok", "\n"]}, "22023", "tags"),
    ("tags not array", {"packet_type": "event", "payload": 1, "tags": "ok"}, "22023", "tags"),
    ("unknown scope", {"packet_type": "event", "payload": 1, "scope": "global"}, "22023", "scope"),
    ("private without user", {"packet_type": "event", "payload": 1, "scope": "l-private"}, "22023", "scope"),
    ("metadata not object", {"packet_type": "event", "payload": 1, "metadata": [1]}, "22023", "metadata"),
    ("importance 2", {"packet_type": "event", "payload": 1, "importance_score": 2}, "22023", "importance_score"),
]


@pytest.mark.parametrize(("label", "envelope", "sqlstate", "field"), BAD_ENVELOPES, ids=[b[0] for b in BAD_ENVELOPES])
def test_bad_envelope_gets_its_error_and_writes_nothing(db, label, envelope, sqlstate, field):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        write(conn, {"packet_type": "event", "payload": "existing", "thread_id": str(uuid.uuid4())})
        conn.commit()
    before = (superuser_count(db), superuser_count(db, "memsub.packet_threads"))
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.Error) as caught:
            write(conn, envelope)
    assert caught.value.sqlstate == sqlstate, caught.value
    assert caught.value.diag.column_name == field
    assert field.split(".")[0] in caught.value.diag.message_primary
    assert (superuser_count(db), superuser_count(db, "memsub.packet_threads")) == before


def test_a_bad_envelope_in_a_batch_writes_nothing_and_names_its_position(db):
    batch = [{"packet_type": "event", "payload": 1, "thread_id": str(uuid.uuid4())},
             {"packet_type": "event", "payload": 2, "confidence": {"score": 1.5}}]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.InvalidParameterValue) as caught:
            conn.execute("select * from memsub.write_packets(%s)", [json.dumps(batch)])
    assert "envelope 2 of the batch" in str(caught.value)
    assert caught.value.diag.column_name == "confidence.score"
    assert superuser_count(db) == 0 and superuser_count(db, "memsub.packet_threads") == 0


def test_not_an_object_and_not_an_array(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            conn.execute("select memsub.write_packet('[1]')")
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="JSON array"):
            conn.execute("select memsub.write_packets('{}')")


def test_writing_without_a_tenant_context_is_an_error(db):
    with db.connect("app") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="no tenant context"):
            write(conn, {"packet_type": "event", "payload": 1})
    assert superuser_count(db) == 0


def test_parent_in_another_tenant_is_unknown(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        foreign = write(conn, {"packet_type": "event", "payload": "A's secret"})
        conn.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        with pytest.raises(psycopg.errors.ForeignKeyViolation) as caught:
            write(conn, {"packet_type": "insight", "payload": 1,
                         "lineage": {"parent_ids": [str(foreign["packet_id"])]}})
    assert "does not exist or is not visible" in str(caught.value)
    assert superuser_count(db) == 1


def test_cyclic_lineage_inside_a_batch_is_rejected(db):
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    batch = [{"packet_id": first, "packet_type": "x", "payload": 1, "lineage": {"parent_ids": [second]}},
             {"packet_id": second, "packet_type": "x", "payload": 2, "lineage": {"parent_ids": [first]}}]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.CheckViolation, match="lineage cycle"):
            conn.execute("select * from memsub.write_packets(%s)", [json.dumps(batch)])
    assert superuser_count(db) == 0


def test_batch_orders_parents_first_and_returns_input_order(db):
    parent, child = str(uuid.uuid4()), str(uuid.uuid4())
    batch = [{"packet_id": child, "packet_type": "insight", "payload": 2, "lineage": {"parent_ids": [parent]}},
             {"packet_id": parent, "packet_type": "event", "payload": 1},
             {"packet_type": "event", "payload": 3}]
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        rows = conn.execute("select position, packet_id::text, generation from memsub.write_packets(%s)",
                            [json.dumps(batch)]).fetchall()
    assert [r[0] for r in rows] == [1, 2, 3]
    assert rows[0][1:] == (child, 1) and rows[1][1:] == (parent, 0)


def test_same_content_at_the_same_time_returns_the_existing_packet_flagged(db):
    thread = str(uuid.uuid4())
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        first = write(conn, {"packet_type": "event", "payload": {"q": "hdpe"}, "thread_id": thread, "tags": ["a"]})
        again = write(conn, {"packet_type": "event", "payload": {"q": "hdpe"}, "thread_id": thread, "tags": ["b"]})
        named = write(conn, {"packet_type": "event", "payload": {"q": "hdpe"}, "thread_id": thread,
                             "packet_id": str(uuid.uuid4())})  # a named id is its own packet
        other_thread = write(conn, {"packet_type": "event", "payload": {"q": "hdpe"}})
    assert again["deduplicated"] is True and again["packet_id"] == first["packet_id"]
    assert again["written"] == {}
    assert named["deduplicated"] is False and other_thread["deduplicated"] is False
    assert superuser_count(db) == 3


def test_same_content_written_concurrently_is_stored_once(db):
    results = in_parallel(db, lambda conn, _: write(conn, {"packet_type": "event", "payload": {"same": True},
                                                          "timestamp": "2025-12-07T12:00:00Z"}), 6)
    assert len({r["packet_id"] for r in results}) == 1
    assert sorted(r["deduplicated"] for r in results) == [False] + [True] * 5
    assert superuser_count(db) == 1


def test_thread_belongs_to_one_organization(db):
    thread = str(uuid.uuid4())
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, org=ORG_A)
        write(conn, {"packet_type": "event", "payload": 1, "thread_id": thread})
        write(conn, {"packet_type": "event", "payload": 2, "thread_id": thread})
        conn.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A, org=ORG_B)
        with pytest.raises(psycopg.errors.CheckViolation, match="thread consistency") as caught:
            write(conn, {"packet_type": "event", "payload": 3, "thread_id": thread})
    assert caught.value.diag.column_name == "thread_id"
    assert superuser_count(db) == 2


def test_packets_are_immutable_even_for_the_owner(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        packet = write(conn, {"packet_type": "event", "payload": {"v": 1}})
        conn.commit()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("update memsub.packet_store set packet_type = 'x'")
        conn.rollback()
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # purge_expired() is the only way to delete
            conn.execute("delete from memsub.packet_store")
    with db.connect() as conn:  # the superuser, who bypasses row-level security and privileges
        for statement in ["update memsub.packet_store set envelope = '{}'",
                          "update memsub.packet_store set tags = '{x}'",
                          "update memsub.packet_store set tenant_id = gen_random_uuid()",
                          "delete from memsub.packet_store",
                          "truncate memsub.packet_store cascade"]:
            with pytest.raises(psycopg.errors.FeatureNotSupported, match="immutable"):
                conn.execute(statement)
            conn.rollback()
        conn.execute("update memsub.packet_store set access_count = access_count + 1, last_accessed = now(), "
                     "importance_score = 0.9")  # learned statistics may change
        conn.commit()
        assert conn.execute("select envelope -> 'payload', access_count from memsub.packet_store "
                            "where packet_id = %s", [packet["packet_id"]]).fetchone() == ({"v": 1}, 1)


def test_purge_expired_removes_only_expired_packets_and_reports_them(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        write(conn, {"packet_type": "event", "payload": "old", "timestamp": "2020-01-01T00:00:00Z",
                     "ttl": "2020-01-02T00:00:00Z"})
        write(conn, {"packet_type": "event", "payload": "fresh", "ttl": "2999-01-01T00:00:00Z"})
        write(conn, {"packet_type": "event", "payload": "forever"})
        conn.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_B)
        write(conn, {"packet_type": "event", "payload": "B old", "timestamp": "2020-01-01T00:00:00Z",
                     "ttl": "2020-01-02T00:00:00Z"})
        conn.commit()
        set_context(conn, TENANT_A)
        assert conn.execute("select * from memsub.purge_expired()").fetchall() == [(TENANT_A, 1)]
        conn.commit()
    with db.connect() as conn:
        remaining = conn.execute("select envelope ->> 'payload' from memsub.packet_store order by 1").fetchall()
    assert remaining == [("B old",), ("forever",), ("fresh",)]  # tenant B's expired packet is B's to purge


def test_thread_replay_is_in_write_order_whatever_the_stated_times(db):
    thread = str(uuid.uuid4())
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        for minute in [3, 1, 2]:
            write(conn, {"packet_type": "event", "payload": minute, "thread_id": thread,
                         "timestamp": f"2025-12-07T12:0{minute}:00Z"})
        rows = conn.execute("select envelope -> 'payload' from memsub.get_thread(%s)", [thread]).fetchall()
        assert [r[0] for r in rows] == [3, 1, 2]
        rows = conn.execute("select envelope -> 'payload' from memsub.get_thread(%s, 2)", [thread]).fetchall()
        assert [r[0] for r in rows] == [3, 1]
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            conn.execute("select * from memsub.get_thread(%s, 0)", [thread])


def test_lineage_walks_are_depth_bounded_and_cycle_safe(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        chain = [write(conn, {"packet_type": "event", "payload": 0})]
        for step in range(1, 6):
            chain.append(write(conn, {"packet_type": "event", "payload": step,
                                      "lineage": {"parent_ids": [str(chain[-1]["packet_id"])]}}))
        side = write(conn, {"packet_type": "event", "payload": "side",
                            "lineage": {"parent_ids": [str(chain[0]["packet_id"])]}})
        ids = [c["packet_id"] for c in chain]
        rows = conn.execute("select packet_id, depth from memsub.get_lineage(%s)", [ids[5]]).fetchall()
        assert rows == [(ids[4], 1), (ids[3], 2), (ids[2], 3), (ids[1], 4), (ids[0], 5)]
        rows = conn.execute("select packet_id from memsub.get_lineage(%s, 'ancestors', 2)", [ids[5]]).fetchall()
        assert [r[0] for r in rows] == [ids[4], ids[3]]
        rows = conn.execute("select packet_id, depth from memsub.get_lineage(%s, 'descendants')", [ids[0]]).fetchall()
        assert set(rows) == {(ids[1], 1), (side["packet_id"], 1), (ids[2], 2), (ids[3], 3), (ids[4], 4),
                             (ids[5], 5)}
        conn.commit()
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            conn.execute("select * from memsub.get_lineage(%s, 'sideways')", [ids[0]])
    # Legacy data (written before lineage integrity existed) may hold a cycle: the walk still ends.
    a, b = uuid.uuid4(), uuid.uuid4()
    with db.connect() as conn:
        for me, parent in [(a, b), (b, a)]:
            conn.execute("insert into memsub.packet_store (packet_id, packet_type, envelope, parent_ids, tenant_id) "
                         "values (%s, 'legacy', '{}', %s, %s)", [me, [parent], TENANT_A])
        conn.commit()
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        rows = conn.execute("select packet_id, depth from memsub.get_lineage(%s, 'ancestors', 50)", [a]).fetchall()
        assert rows == [(b, 1)]
        assert count(conn) == 9
