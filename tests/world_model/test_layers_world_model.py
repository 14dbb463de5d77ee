"""World model: versions strictly increase, snapshots reproduce the state, a failed update changes nothing."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, TENANT_B, blocked_call, set_context
from layer_helpers import call


def _apply(conn: Any, entities: list[dict[str, Any]], expected: int | None = None) -> dict[str, Any]:
    return call(conn, "select * from memsub.apply_world_model_update('insight', %s::jsonb, "
                      "p_expected_version => %s)", [json.dumps(entities), expected])


def _state(conn: Any) -> list[tuple[Any, ...]]:
    return conn.execute("select entity_id, entity_type, attributes, confidence, version "
                        "from memsub.world_model_entities order by entity_id").fetchall()


def _ground_truth(db: Any) -> tuple[Any, ...]:
    with db.connect() as conn:
        return (conn.execute("select * from memsub.world_model_entities order by tenant_id, entity_id").fetchall(),
                conn.execute("select * from memsub.world_model_state order by tenant_id").fetchall(),
                conn.execute("select count(*) from memsub.world_model_updates").fetchone())


def test_versions_strictly_increase(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        seen = []
        for step in range(5):
            update = _apply(conn, [{"entity_id": "L9", "entity_type": "Concept", "attributes": {"step": step}},
                                   {"entity_id": f"tool-{step}", "entity_type": "Tool"}])
            assert update["state_version_after"] == update["state_version_before"] + 1
            seen.append(update["state_version_after"])
        assert seen == [1, 2, 3, 4, 5]
        version, attributes = conn.execute(
            "select version, attributes from memsub.world_model_entities where entity_id = 'L9'").fetchone()
        assert version == 5 and attributes == {"step": 4}
        assert conn.execute("select memsub.world_model_state_version()").fetchone() == (5,)
        # Another tenant has its own world model and version (a transaction acts for one tenant).
        conn.commit()
        set_context(conn, TENANT_B)
        assert _apply(conn, [{"entity_id": "L9", "entity_type": "Concept"}])["state_version_after"] == 1


def test_attribute_merge_and_removal(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        _apply(conn, [{"entity_id": "Neo4j", "entity_type": "Tool", "attributes": {"kind": "graph", "v": 4}}])
        _apply(conn, [{"entity_id": "Neo4j", "attributes": {"v": None, "license": "GPL"}, "confidence": 0.9}])
        assert _state(conn) == [("Neo4j", "Tool", {"kind": "graph", "license": "GPL"}, 0.9, 2)]


def test_a_type_is_stored_trimmed_for_an_existing_entity_as_for_a_new_one(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        _apply(conn, [{"entity_id": "L9", "entity_type": "  Concept  "}])
        _apply(conn, [{"entity_id": "L9", "entity_type": " Tool   kit "}, {"entity_id": "n", "entity_type": " a  b "}])
        assert [(row[0], row[1]) for row in _state(conn)] == [("L9", "Tool kit"), ("n", "a b")]


def test_a_snapshot_reproduces_the_state(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        _apply(conn, [{"entity_id": "L9", "entity_type": "Concept", "attributes": {"a": 1}},
                      {"entity_id": "Python", "entity_type": "Language"}])
        conn.execute("select memsub.upsert_relationship('L9', 'develops', 'Python')")
        # An edge whose window opens next year is no relation of the graph now: not counted in the snapshot.
        conn.execute("select memsub.upsert_relationship('L9', 'will_use', 'Rust', p_seen_at => now() + "
                     "interval '1 year')")
        before = _state(conn)
        snapshot = call(conn, "select * from memsub.take_world_model_snapshot('before the change', 'test')")
        assert (snapshot["state_version"], snapshot["entity_count"], snapshot["relation_count"]) == (1, 2, 1)
        _apply(conn, [{"entity_id": "L9", "attributes": {"a": 2}}, {"entity_id": "FastAPI", "entity_type": "Tool"}])
        assert _state(conn) != before
        replayed = conn.execute("select entity_id, entity_type, attributes, confidence, version "
                                "from memsub.world_model_state_at(%s)", [snapshot["snapshot_id"]]).fetchall()
        assert replayed == before


@pytest.mark.parametrize(("entities", "expected", "sqlstate", "column"), [
    # the second change is a new entity without a type: the first change was already applied when it failed
    ([{"entity_id": "L9", "attributes": {"a": 9}}, {"entity_id": "new"}], None, "23502", "entities[1].entity_type"),
    ([{"entity_id": "L9", "attributes": {"a": 9}}, {"entity_id": "x", "entity_type": "T", "confidence": 2}],
     None, "22023", "entities[1].confidence"),
    ([{"entity_id": "L9", "attributes": [1]}], None, "22023", "entities[0].attributes"),
    ([{"entity_id": "L9", "attributes": {"a": 9}}, {"entity_id": "L9"}], None, "22023", "entities[1].entity_id"),
    ([{"entity_id": "L9", "attributes": {"a": 9}}], 7, "40001", "expected_version"),
    # no state is ever at a negative version: bad input (22023), not a conflict a client would retry (40001), as
    # memory_write refuses it
    ([{"entity_id": "L9", "attributes": {"a": 9}}], -1, "22023", "expected_version"),
    ([{"entity_id": "L9", "attributes": {"a": 9}}], -2147483648, "22023", "expected_version"),
    # the first new entity whose type is missing or blank is named, in the order given
    ([{"entity_id": "n1", "entity_type": " "}, {"entity_id": "n2"}], None, "22023", "entities[0].entity_type"),
    # a blank type is refused with the other shape errors, before the state is read: for an existing entity too
    ([{"entity_id": "n1"}, {"entity_id": "n2", "entity_type": " "}], None, "22023", "entities[1].entity_type"),
    ([{"entity_id": "L9", "entity_type": " "}, {"entity_id": "n2", "entity_type": ""}], None, "22023",
     "entities[0].entity_type"),
    ([{"entity_id": "L9", "entity_type": " \t "}], None, "22023", "entities[0].entity_type"),
])
def test_a_failed_update_changes_nothing(db, entities, expected, sqlstate, column):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        _apply(conn, [{"entity_id": "L9", "entity_type": "Concept", "attributes": {"a": 1}}])
        conn.commit()
    before = _ground_truth(db)
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.Error) as caught:
            _apply(conn, entities, expected)
        assert caught.value.sqlstate == sqlstate
        assert caught.value.diag.column_name == column
    assert _ground_truth(db) == before



@pytest.mark.parametrize("confidence", ["1e400", "-1e400", "1e-400"])
def test_a_confidence_beyond_double_precision_is_refused_naming_it_or_read_as_zero(db, confidence):
    """1e400 is no confidence: refused as 22023 naming entities[0].confidence like 2 is, not a 22003 naming
    nothing; 1e-400 is 0 to double precision, as JSON readers take it."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        entities = '[{"entity_id": "E", "entity_type": "Concept", "confidence": ' + confidence + "}]"
        if confidence == "1e-400":
            call(conn, "select * from memsub.apply_world_model_update('insight', %s::jsonb)", [entities])
            assert _state(conn) == [("E", "Concept", {}, 0.0, 1)]
            return
        with pytest.raises(psycopg.Error) as caught:
            conn.execute("select * from memsub.apply_world_model_update('insight', %s::jsonb)", [entities])
        assert (caught.value.sqlstate, caught.value.diag.column_name) == ("22023", "entities[0].confidence")


def test_nested_nulls_of_a_new_entity_are_kept_as_for_an_existing_one(db):
    """A JSON null removes a top-level attribute; deeper, it is a value like any other, for a new entity as for an
    existing one (a new entity lost them)."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        attributes = {"a": {"b": None, "c": 1}, "gone": None}
        _apply(conn, [{"entity_id": "New", "entity_type": "Concept", "attributes": attributes},
                      {"entity_id": "Old", "entity_type": "Concept"}])
        _apply(conn, [{"entity_id": "Old", "attributes": attributes}])
        assert [row[2] for row in _state(conn)] == [{"a": {"b": None, "c": 1}}] * 2


def test_two_spellings_of_one_name_are_one_entity(db):
    """A name matches an entity's when memsub.normalize_text makes them equal, in the world model as in the graph:
    an update of 'alice' changes the entity graph_upsert_entity made as 'Alice' (it made a second one beside it),
    and one update naming an entity in two spellings names it twice."""
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.graph_upsert_entity('Alice', 'Person')")
        _apply(conn, [{"entity_id": "alice", "attributes": {"a": 1}},
                      {"entity_id": "Bob", "entity_type": "Person"}])
        _apply(conn, [{"entity_id": " ALICE\t", "attributes": {"b": 2}}, {"entity_id": "bob", "confidence": 0.9}])
        assert _state(conn) == [("Alice", "Person", {"a": 1, "b": 2}, 0.5, 3), ("Bob", "Person", {}, 0.9, 2)]
        # graph_upsert_entity finds the entity an update made, spelled otherwise, as it finds its own.
        entity = call(conn, "select * from memsub.graph_upsert_entity('BOB', 'Person', array['Robert'])")
        assert (entity["entity_id"], entity["aliases"], entity["version"]) == ("Bob", ["Robert"], 3)
        conn.commit()
    with db.connect("app") as conn, pytest.raises(psycopg.Error) as caught:
        set_context(conn, TENANT_A)
        _apply(conn, [{"entity_id": "Carol", "entity_type": "Person"}, {"entity_id": "carol"}])
    assert (caught.value.sqlstate, caught.value.diag.column_name) == ("22023", "entities[1].entity_id")


def test_the_state_of_a_null_snapshot_is_refused_as_a_missing_field(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.Error) as caught:
            conn.execute("select * from memsub.world_model_state_at(null)")
    assert (caught.value.sqlstate, caught.value.diag.column_name) == ("23502", "snapshot_id")


def test_a_first_snapshot_racing_the_first_update_captures_one_state_version(db):
    """The tenant's first update holds its new state row, uncommitted, while a snapshot starts: the snapshot waits
    for it and captures version 1 with its entity, not version 0 (no state row to lock yet) with the entities of
    version 1. The superuser connection only orders the two: it queues a lock on the entities behind the update, so
    the snapshot, if it did not wait at the state row, would wait to read the entities instead."""
    tenant = uuid.uuid4()
    with db.connect("app") as writer, db.connect() as orchestrator, db.connect("app") as snapper:
        set_context(writer, tenant)
        _apply(writer, [{"entity_id": "E", "entity_type": "T"}])
        locker = blocked_call(db, orchestrator, lambda: orchestrator.execute(
            "lock table memsub.world_model_entities in access exclusive mode"))
        set_context(snapper, tenant)
        snapshot = blocked_call(db, snapper, lambda: call(snapper, "select * from memsub.take_world_model_snapshot()"))
        writer.commit()
        locker.join()
        orchestrator.rollback()
        snapshot.join()
        snapper.commit()
    assert snapshot.error is None, snapshot.error
    taken = snapshot.result
    assert isinstance(taken, dict)
    assert (taken["state_version"], taken["entity_count"]) == (1, 1)
