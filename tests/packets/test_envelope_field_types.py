"""An envelope field of the wrong JSON type is refused with 22023 naming it, and nothing is written."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from helpers import TENANT_A, count, set_context

OBJECT_FIELDS = ["memory", "metadata", "provenance", "confidence", "reasoning_block", "routing", "lineage"]
STRING_FIELDS = ["packet_type", "session_id", "trace_id", "scope"]


def _refused(db: Any, envelope: dict[str, Any]) -> psycopg.errors.Error:
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        with pytest.raises(psycopg.errors.InvalidParameterValue) as error:
            conn.execute("select * from memsub.write_packet(%s::jsonb)", [json.dumps(envelope)])
        conn.rollback()
        set_context(conn, TENANT_A)
        assert count(conn) == 0
    return error.value


@pytest.mark.parametrize("field", OBJECT_FIELDS)
def test_an_object_field_given_as_a_string_is_named(db, field):
    error = _refused(db, {"packet_type": "event", "payload": {"n": 1}, field: "text"})
    assert error.diag.column_name == field
    assert error.diag.message_primary == f'envelope field "{field}" must be a JSON object, not string'


@pytest.mark.parametrize("field", STRING_FIELDS)
def test_a_string_field_given_as_a_number_is_named(db, field):
    error = _refused(db, {"packet_type": "event", "payload": {"n": 1}, field: 7})
    assert error.diag.column_name == field
    assert error.diag.message_primary == f'envelope field "{field}" must be a string, not number'


def test_a_lineage_derivation_type_given_as_an_array_is_named(db):
    error = _refused(db, {"packet_type": "event", "payload": {"n": 1}, "lineage": {"derivation_type": []}})
    assert error.diag.column_name == "derivation_type"
    assert error.diag.message_primary == 'envelope field "derivation_type" must be a string, not array'


def test_json_null_reads_as_absent(db):
    with db.connect("app") as conn:
        set_context(conn, TENANT_A)
        conn.execute("select * from memsub.write_packet(%s::jsonb)", [json.dumps(
            {"packet_type": "event", "payload": {"n": 1}, **{field: None for field in OBJECT_FIELDS},
             "session_id": None, "trace_id": None})])
        assert count(conn) == 1
