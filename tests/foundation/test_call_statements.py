"""A stored-function call's statement text is composed once per shape (function, named arguments given, JSON or
not, result columns) and reused: building a call then binds its values only. Its text must still follow the
rules of every call (named arguments, omitted ones left to their SQL default, JSON cast to jsonb)."""

from __future__ import annotations

import uuid

from memsub import _calls

SHAPE = _calls.raw()


def test_a_call_of_the_same_shape_reuses_its_statement_and_binds_its_own_values() -> None:
    first = _calls.function("memory_write", {"namespace": "a", "key": "k", "value": _calls.Json({"n": 1})}, SHAPE)
    before = _calls._function_statement.cache_info()
    second = _calls.function("memory_write", {"namespace": "b", "key": "k", "value": _calls.Json({"n": 2})}, SHAPE)
    after = _calls._function_statement.cache_info()
    assert second.statement is first.statement and after.hits == before.hits + 1
    assert first.params == ["a", "k", '{"n": 1}'] and second.params == ["b", "k", '{"n": 2}']
    assert first.statement == (b'select * from "memsub"."memory_write"("p_namespace" => %s, "p_key" => %s,'
                               b' "p_value" => %s::jsonb)')


def test_each_shape_has_its_own_statement() -> None:
    packet = uuid.uuid4()
    plain = _calls.function("get_packet", {"packet_id": packet, "with_vectors": None}, SHAPE)
    lean = _calls.function("get_packet", {"packet_id": packet, "with_vectors": False}, SHAPE)
    assert plain.statement == b'select * from "memsub"."get_packet"("p_packet_id" => %s)'
    assert lean.statement == b'select * from "memsub"."get_packet"("p_packet_id" => %s, "p_with_vectors" => %s)'
    assert plain.params == [str(packet)] and lean.params == [str(packet), False]
    explicit_null = _calls.function("get_packet", {"packet_id": packet, "with_vectors": _calls.NULL}, SHAPE)
    assert explicit_null.statement == lean.statement and explicit_null.params == [str(packet), None]
    columns = _calls.function("get_packet", {"packet_id": packet}, _calls.Shape(("packet_id",), lambda rows: rows))
    assert columns.statement == b'select "packet_id" from "memsub"."get_packet"("p_packet_id" => %s)'
