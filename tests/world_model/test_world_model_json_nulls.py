"""A JSON null for a field of a world-model change is that field left out (docs/layers.md, "World model
updates"), for every field alike: the entity keeps its type, attributes and confidence (a new entity takes the
defaults, and still needs a type), and a change without an id is missing one. Only inside attributes does a JSON
null remove a key. Until then `confidence: null` kept the value while `entity_type: null` and `attributes: null`
were refused."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, set_context, table_state
from layer_helpers import call


def _apply(conn: Any, entities: list[dict[str, Any]]) -> dict[str, Any]:
    return call(conn, "select * from memsub.apply_world_model_update('insight', %s::jsonb)", [json.dumps(entities)])


def _state(conn: Any) -> list[tuple[Any, ...]]:
    return conn.execute("select entity_id, entity_type, attributes, confidence, version "
                        "from memsub.world_model_entities order by entity_id").fetchall()


def test_a_json_null_field_keeps_the_stored_value_or_takes_the_default(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        _apply(conn, [{"entity_id": "L9", "entity_type": "Concept", "attributes": {"a": 1}, "confidence": 0.7}])
        _apply(conn, [{"entity_id": "L9", "entity_type": None, "attributes": None, "confidence": None},
                      {"entity_id": "new", "entity_type": "Tool", "attributes": None, "confidence": None}])
        assert _state(conn) == [("L9", "Concept", {"a": 1}, 0.7, 2), ("new", "Tool", {}, 0.5, 1)]
        # Each field alone, as the others are given.
        _apply(conn, [{"entity_id": "L9", "entity_type": None, "attributes": {"b": 2}, "confidence": 0.9}])
        _apply(conn, [{"entity_id": "L9", "entity_type": "Tool", "attributes": None}])
        assert _state(conn)[0] == ("L9", "Tool", {"a": 1, "b": 2}, 0.9, 4)


@pytest.mark.parametrize(("change", "sqlstate", "column"), [
    # a new entity needs a type: JSON null is none given
    ({"entity_id": "other", "entity_type": None}, "23502", "entities[0].entity_type"),
    # a change needs an id: JSON null is none given
    ({"entity_id": None, "entity_type": "Tool"}, "23502", "entities[0].entity_id"),
    # a key that is not a field of a change is refused whatever its value
    ({"entity_id": "L9", "colour": None}, "22023", "entities[0].colour"),
])
def test_a_json_null_is_no_value_where_one_is_needed(db, change, sqlstate, column):
    with db.connect("app") as conn, db.connect() as judge:
        set_context(conn, TENANT_A)
        _apply(conn, [{"entity_id": "L9", "entity_type": "Concept"}])
        conn.commit()
        before = table_state(judge)
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.Error) as caught:
            _apply(conn, [change])
        conn.rollback()
        assert (caught.value.sqlstate, caught.value.diag.column_name) == (sqlstate, column)
        assert table_state(judge) == before
