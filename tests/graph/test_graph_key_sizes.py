"""Names the graph keys its rows by are held to max_key_bytes together: a longer one failed on PostgreSQL's own
"index row size" error (SQLSTATE 54000 with no field) although each text was well within max_text_chars."""

from __future__ import annotations

import random
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, set_context
from session_helpers import ground_truth

TABLES = ("world_model_entities", "world_model_updates", "knowledge_facts", "entity_relationships")


def _text(characters: int) -> str:
    """Characters of three UTF-8 bytes each, in an order that does not compress."""
    rng = random.Random(characters)
    return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(characters))


LONG = _text(700)  # 2,100 bytes
THIRD = _text(240)  # 720 bytes: three of them, 2,160 bytes, are over the limit together

CALLS: list[tuple[str, str, list[Any], str]] = [
    ("entity name", "select memsub.graph_upsert_entity(%s, 'Person')", [LONG], "name"),
    ("alias", "select memsub.graph_upsert_entity('Bob', 'Person', p_aliases => array['B', %s])", [LONG],
     "aliases[1]"),
    ("world-model entity", "select memsub.apply_world_model_update('insight', jsonb_build_array("
     "jsonb_build_object('entity_id', 'ok', 'entity_type', 'Person'), "
     "jsonb_build_object('entity_id', %s::text, 'entity_type', 'Person')))", [LONG], "entities[1].entity_id"),
    ("fact", "select memsub.assert_fact(%s, %s, to_jsonb(%s::text))", [THIRD, THIRD, THIRD + "x"], "object"),
    ("relationship", "select memsub.upsert_relationship(%s, %s, %s)", [THIRD, THIRD + "x", THIRD],
     "relationship_type"),
    ("temporal edge", "select memsub.temporal_edge_add(%s, %s, %s)", [THIRD + "x", THIRD, THIRD],
     "source_entity"),
]


@pytest.mark.parametrize(("statement", "params", "field"), [c[1:] for c in CALLS], ids=[c[0] for c in CALLS])
def test_a_key_longer_than_an_index_entry_holds_is_refused_by_name(db, statement, params, field):
    before = {t: ground_truth(db, f"select count(*) as n from memsub.{t}") for t in TABLES}  # noqa: S608
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(statement, params)
    assert (raised.value.sqlstate, raised.value.diag.column_name) == ("54000", field)
    assert "max_key_bytes" in str(raised.value)
    assert {t: ground_truth(db, f"select count(*) as n from memsub.{t}") for t in TABLES} == before  # noqa: S608


def test_keys_within_the_limit_are_stored(db):
    near = _text(600)  # 1,800 bytes
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select memsub.graph_upsert_entity(%s, 'Person', p_aliases => array[%s])", [near, near[::-1]])
        conn.execute("select memsub.upsert_relationship(%s, 'knows', 'b')", [near])
        conn.execute("select memsub.assert_fact(%s, 'likes', '1'::jsonb)", [near])
