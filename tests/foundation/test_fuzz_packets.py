"""Property-based fuzzing of the packet functions with arbitrary JSON and values.

Each call either succeeds with the contract's invariants holding, or fails with a SQLSTATE docs/errors.md lists
(never an internal error, nor a raw constraint or row-level security message), and a failed call leaves every
table unchanged. Besides arbitrary JSON, the envelopes carry what memsub refuses: zero, tiny and huge payload
embeddings, NaN and infinity spelled as strings, infinite timestamps; and the raw argument text may be JSON
nested past the server's stack or bytes that are not UTF-8.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any, get_args

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.adapt import Dumper
from psycopg.pq import Format

from memsub.models import DerivationType, Scope

from helpers import TENANT_A, documented_sqlstates, set_context, soak_factor

DOCUMENTED = documented_sqlstates()
RAW_MESSAGE = re.compile(r"violates (row-level security policy|check constraint|not-null constraint|foreign key "
                         r"constraint|unique constraint|exclusion constraint)|duplicate key value")
DIMENSION = 1536  # the test template's vector_dimension


class RawTextDumper(Dumper):
    """Sends bytes as a text parameter unchanged (the server checks the encoding)."""

    oid = 25  # text
    format = Format.TEXT

    def dump(self, obj: Any) -> bytes:
        return bytes(obj)

json_scalars = (st.none() | st.booleans() | st.integers(-10**30, 10**30)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40))
json_values = st.recursive(json_scalars, lambda children: st.lists(children, max_size=4)
                           | st.dictionaries(st.text(max_size=10), children, max_size=4), max_leaves=12)
uuid_text = st.uuids().map(str)
timestamp_text = (st.from_regex(r"\A\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?\Z")
                  | st.sampled_from(["infinity", "-infinity", "+infinity", "epoch", "now", "9999-12-31T23:59:59Z"]))
not_finite = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
vectors = (st.lists(st.floats(-1, 1, allow_nan=False), min_size=DIMENSION, max_size=DIMENSION)
           | st.sampled_from([[0] * DIMENSION, [1e-30] * DIMENSION, [1e39] + [1] * (DIMENSION - 1), [1, 2, 3], []])
           | st.lists(st.floats(-1, 1, allow_nan=False) | not_finite, min_size=1, max_size=4))
fan_out = st.fixed_dictionaries({}, optional={
    "embeddings": st.lists(st.fixed_dictionaries({"embedding_type": st.sampled_from(["content", "summary"]),
                                                  "vector": vectors}), max_size=2),
    "facts": st.lists(st.fixed_dictionaries({"subject": st.just("s"), "predicate": st.just("p"), "object": json_scalars,
                                             "confidence": st.floats(0, 1) | not_finite}), max_size=2),
    "relationships": st.lists(st.fixed_dictionaries({"source_entity": st.just("a"), "target_entity": st.just("b"),
                                                     "relationship_type": st.just("knows"),
                                                     "confidence": st.floats(0, 1) | not_finite}), max_size=2)})
field_values = {
    "packet_id": uuid_text | json_values,
    "packet_type": st.sampled_from(["event", "insight", "memory_write"]) | st.text(max_size=300) | json_values,
    "timestamp": timestamp_text | json_values,
    "payload": json_values | fan_out,
    "metadata": st.dictionaries(st.text(max_size=8), json_values, max_size=3) | json_values,
    "provenance": st.dictionaries(st.text(max_size=8), json_values, max_size=3) | json_values,
    "confidence": st.fixed_dictionaries({"score": st.floats(-1, 2) | not_finite | json_values}) | json_values,
    "thread_id": uuid_text | json_values,
    "lineage": st.fixed_dictionaries({}, optional={
        "parent_ids": st.lists(uuid_text | json_values, max_size=3) | json_values,
        "derivation_type": st.sampled_from([*get_args(DerivationType), "guess"]) | json_values,
        "generation": st.integers(0, 3) | json_values}) | json_values,
    "tags": st.lists(st.text(max_size=250), max_size=4) | json_values,
    "ttl": timestamp_text | json_values,
    "scope": st.sampled_from([*get_args(Scope), "global"]) | json_values,
    "importance_score": st.floats(-1, 2) | not_finite | json_values,
    "correlation_id": uuid_text | json_values,
    "session_id": st.text(max_size=20) | json_values,
    "trace_id": st.text(max_size=20) | json_values,
    "surprise": json_values,
}
envelopes = st.fixed_dictionaries(
    {"packet_type": field_values["packet_type"], "payload": field_values["payload"]},
    optional={k: v for k, v in field_values.items() if k not in {"packet_type", "payload"}}) | json_values
FUNCTIONS = {"write_packet": "select * from memsub.write_packet(%s::jsonb)",
             "write_packets": "select * from memsub.write_packets(%s::jsonb)"}


def _state(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    return conn.execute("select (select count(*) from memsub.packet_store), "
                        "(select count(*) from memsub.packet_threads), "
                        "(select coalesce(sum(hashtext(envelope::text)), 0) from memsub.packet_store)").fetchone()


@pytest.fixture
def connections(db):
    with db.connect("app", autocommit=True) as app, db.connect(autocommit=True) as superuser:
        app.adapters.register_dumper(bytes, RawTextDumper)
        yield app, superuser


class Raw:
    """An argument sent as these exact bytes rather than as the JSON text of a Python value."""

    def __init__(self, data: bytes) -> None:
        self.data = data


def _nested(depth: int) -> bytes:
    return ('{"packet_type": "event", "payload": ' + "[" * depth + "]" * depth + "}").encode()


# JSON nested past the server's stack (54001) and envelopes whose bytes are not UTF-8 (22021).
raw_arguments = (st.sampled_from([100, 900, 40000]).map(lambda d: Raw(_nested(d)))
                 | st.binary(min_size=1, max_size=8).map(
                     lambda b: Raw(b'{"packet_type": "event", "payload": "' + b.replace(b'"', b"") + b'\xff"}')))


def _call(app: psycopg.Connection[Any], function: str, argument: Any) -> list[tuple[Any, ...]]:
    with app.transaction():
        set_context(app, TENANT_A, user=uuid.UUID(int=7), session="fuzz")
        if isinstance(argument, Raw):
            data = argument.data if function == "write_packet" else b"[" + argument.data + b"]"
            return app.execute(FUNCTIONS[function].replace("%s::jsonb", "%s::text::jsonb"), [data]).fetchall()
        return app.execute(FUNCTIONS[function], [json.dumps(argument)]).fetchall()


def _check(app, superuser, function: str, argument: Any) -> None:
    before = _state(superuser)
    try:
        rows = _call(app, function, argument)
    except psycopg.Error as error:
        assert error.sqlstate in DOCUMENTED, f"{error.sqlstate}: {error}"
        assert not RAW_MESSAGE.search(str(error)), f"raw message: {error}"
        assert _state(superuser) == before
        return
    for row in rows:
        packet_id, deduplicated = row[1], row[9]
        stored = superuser.execute("select envelope, tenant_id, content_hash from memsub.packet_store "
                                   "where packet_id = %s", [packet_id]).fetchone()
        assert stored is not None and stored[1] == TENANT_A and stored[2] == row[8]
        assert "packet_id" not in stored[0]  # a column: the readers put it back into the envelope
        if not deduplicated:
            assert row[10]["packet_store"] == 1


@settings(max_examples=150 * soak_factor(), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(envelope=envelopes | raw_arguments)
def test_write_packet_with_arbitrary_json(connections, envelope):
    _check(*connections, "write_packet", envelope)


@settings(max_examples=60 * soak_factor(), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(envelopes, max_size=4) | json_values | raw_arguments)
def test_write_packets_with_arbitrary_json(connections, batch):
    _check(*connections, "write_packets", batch)


@settings(max_examples=60 * soak_factor(), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(packet_id=st.uuids(),
       # UTF-8 only (no lone surrogates), and no NUL, which ends a libpq string
       direction=st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
       | st.sampled_from(["ancestors", "descendants"]),
       depth=st.integers(-5, 2000), limit=st.integers(-5, 200000))
def test_read_functions_with_arbitrary_arguments(connections, packet_id, direction, depth, limit):
    app, _ = connections
    for query, params in [("select * from memsub.get_lineage(%s, %s, %s)", [packet_id, direction, depth]),
                          ("select * from memsub.get_thread(%s, %s)", [packet_id, limit]),
                          ("select * from memsub.get_packet(%s)", [packet_id])]:
        try:
            with app.transaction():
                set_context(app, TENANT_A)
                app.execute(query, params).fetchall()
        except psycopg.Error as error:
            # 22023 for a value that is never valid, 54000 for one over a limit (max_rows, max_lineage_depth),
            # P0002 for a lineage walk from a packet that does not exist
            assert error.sqlstate in {"22023", "54000", "P0002"}, f"{error.sqlstate}: {error}"
