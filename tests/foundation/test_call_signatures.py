"""A call is checked against its function's arguments when it is declared (memsub.signatures).

An integer beyond its parameter's type went to the server as a bigint or numeric, and a required argument given as
None was left out: either way PostgreSQL found no function taking such arguments (SQLSTATE 42883) and named none
of them. The client now refuses both naming the argument (22003 numeric_value_out_of_range, 23502
not_null_violation), and nothing is sent. So do the wrappers' own checks: a chunk size that cannot split text, a
list given where one id belongs (its strings checked however deeply nested).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from psycopg.conninfo import make_conninfo

from memsub import _calls, signatures
from memsub.client import TenantSession
from memsub.errors import LocalValidationError
from memsub.integrations.openai_agents import MemsubSession

from doc_helpers import DIMENSION, tenant_session
from helpers import TENANT_A
from refusal_helpers import assert_refused_locally
from session_helpers import ALICE, ground_truth

NOTES = f"user:{ALICE}:notes"
QUERY = [1.0] + [0.0] * (DIMENSION - 1)

Call = Callable[[TenantSession], object]


class _Embedder:
    """An embedder returning what ``embed`` makes of the texts."""

    dimension = DIMENSION

    def __init__(self, embed: Callable[[list[str]], list[list[object]]]) -> None:
        self.embed = embed
REFUSED: dict[str, tuple[str, str, Call]] = {
    "an integer beyond 32 bits": ("k", "22003", lambda s: s.search.semantic(QUERY, k=2**31)),
    "an integer below 32 bits": ("expected_version", "22003", lambda s: s.memory.write(
        NOTES, "k", 1, expected_version=-(2**31) - 1)),
    "an integer beyond 64 bits": ("after_cursor", "22003", lambda s: s.packets.get_thread(
        uuid.uuid4(), after_cursor=2**63)),
    "a required text given as None": ("key", "23502", lambda s: s.memory.write(NOTES, None, 1)),  # type: ignore[arg-type]
    "a required id given as None": ("thread_id", "23502", lambda s: s.packets.get_thread(None)),  # type: ignore[arg-type]
    "an id inside a list given for one": ("packet_ids[0][0]", "22021", lambda s: s.packets.get(
        ["\ud800"])),  # type: ignore[arg-type]
    "a number with a fraction for an integer": ("k", "22023", lambda s: s.search.semantic(QUERY, k=1.5)),  # type: ignore[arg-type]
    "a boolean for an integer": ("limit", "22023", lambda s: s.packets.get_thread(uuid.uuid4(), limit=True)),
    "a string that is no UUID": ("document_id", "22P02", lambda s: s.documents.chunks_of("abc")),
    "a string that is no UUID in a list": ("packet_ids[1]", "22P02", lambda s: s.packets.get_packets(
        [uuid.uuid4(), "abc"])),
    "a number for a text": ("entity", "22023", lambda s: s.graph.edges_as_of(entity=5)),  # type: ignore[arg-type]
    "a string that is no number": ("confidence", "22P02", lambda s: s.graph.assert_fact(
        "tank", "holds", "water", confidence="high")),  # type: ignore[arg-type]
    "a string that is no integer": ("limit", "22P02", lambda s: s.packets.get_thread(
        uuid.uuid4(), limit="ten")),  # type: ignore[arg-type]
    "a string of an integer beyond 32 bits": ("limit", "22003", lambda s: s.packets.get_thread(
        uuid.uuid4(), limit="2147483648")),  # type: ignore[arg-type]
    "a string that is no boolean": ("was_useful", "22P02", lambda s: s.events.record_access(
        "packet", uuid.uuid4(), was_useful="perhaps")),  # type: ignore[arg-type]
    "a number for a time": ("as_of", "22023", lambda s: s.graph.edges_as_of(1700000000)),  # type: ignore[arg-type]
    "a number for an interval": ("half_life", "22023", lambda s: s.search.learn_importance(
        half_life=3600)),  # type: ignore[arg-type]
    # statements over views, which no function signature covers
    "a negative limit over a view": ("limit", "2201W", lambda s: s.graph.entity_graph(limit=-1)),
    "a string that is no integer over a view": ("limit", "22P02", lambda s: s.packets.audit_trail(
        limit="ten")),  # type: ignore[arg-type]
    "bytes for a text over a view": ("node_type", "22023", lambda s: s.graph.nodes(b"Entity")),  # type: ignore[arg-type]
    "a number for a time over a view": ("as_of", "22023", lambda s: s.graph.nodes(as_of=5)),  # type: ignore[arg-type]
    "a number for a session id": ("session_id", "22023", lambda s: s.sessions.get(7)),  # type: ignore[arg-type]
    "one string for the spans": ("spans", "22023", lambda s: s.documents.ingest(
        "notes/c.md", "some text", file_hash="0" * 64, mime="txt", spans="abc")),  # type: ignore[arg-type]
    "a span that is no Span": ("spans[0]", "22023", lambda s: s.documents.ingest(
        "notes/c.md", "some text", file_hash="0" * 64, mime="txt", spans=[(0, 9)])),  # type: ignore[list-item]
    "an embedding that is no vector": ("chunks[0].embedding", "22023", lambda s: s.documents.ingest(
        "notes/c.md", "some text", file_hash="0" * 64, mime="txt",
        embedder=_Embedder(lambda texts: [["x"] * DIMENSION for _ in texts]))),
    "a chunk size that cannot split text": ("max_chars", "22023", lambda s: s.documents.ingest(
        "notes/b.md", "some text to split", file_hash="0" * 64, mime="txt", max_chars=1)),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_an_argument_its_parameter_cannot_take_is_refused_by_name(db, case):
    field, sqlstate, call = REFUSED[case]
    assert_refused_locally(db, call, field, sqlstate, ("memory_entries", "audit", "document_chunks", "packet_store",
                                                       "knowledge_facts", "memory_access_log"))


def test_a_time_given_as_iso_text_without_an_offset_is_utc_like_a_naive_datetime(db):
    # The client reads a datetime without an offset as UTC; the same time given as text went to the server untyped
    # and was read in the session's TimeZone (here five hours off). Text the server reads otherwise still goes.
    dsn = make_conninfo(db.dsn("app"), options="-c TimeZone=America/New_York")
    with tenant_session(dsn, TENANT_A, user=ALICE) as session:
        edge = session.graph.temporal_edge_add("pump", "feeds", "tank", valid_from="2026-01-01T00:00:00")  # type: ignore[arg-type]
        assert edge.valid_from == datetime(2026, 1, 1, tzinfo=UTC)
        naive = session.graph.temporal_edge_add("pump", "feeds", "valve", valid_from=datetime(2026, 1, 1))
        assert naive.valid_from == edge.valid_from
        # both edges hold from the start of 2026, open-ended: the server read "yesterday" itself
        assert len(session.graph.edges_as_of("yesterday", entity="pump")) == 2  # type: ignore[arg-type]


def test_a_statement_naming_its_arguments_is_checked_the_same_way(db):
    # The adapters send fixed statements (p_limit => %s): an integer beyond its parameter, or a number with a
    # fraction, failed there as "function does not exist" too.
    session = MemsubSession("chat-1", db.dsn("app"), tenant_id=TENANT_A)
    try:
        for limit, sqlstate in ((1.5, "22023"), (False, "22023")):
            with pytest.raises(LocalValidationError) as refused:
                asyncio.run(session.get_items(limit=limit))  # type: ignore[arg-type]
            assert (refused.value.field, refused.value.sqlstate) == ("limit", sqlstate)
            assert "limit" in str(refused.value)
        # The largest integer is answered (get_items is not held to max_rows); past an integer the client refuses
        # it, before anything is sent.
        assert asyncio.run(session.get_items(limit=2**31 - 1)) == []
        with pytest.raises(LocalValidationError) as refused:
            asyncio.run(session.get_items(limit=2**31))
        assert (refused.value.field, refused.value.sqlstate) == ("limit", "22003")
    finally:
        session.close()
    statement = "select * from memsub.get_thread(p_thread_id => %s, p_limit => %s)"
    with pytest.raises(LocalValidationError) as refused:
        _calls.query(statement, [uuid.uuid4(), 2**31], _calls.raw())
    assert (refused.value.field, refused.value.sqlstate) == ("limit", "22003")
    _calls.query("select %s::bigint + memsub.no_such_function(p_limit => %s)", [2**40, 2**40], _calls.raw())


def test_values_each_parameter_holds_still_go_through(db):
    with tenant_session(db.dsn("app"), TENANT_A, user=ALICE) as session:
        assert session.packets.get_thread(uuid.uuid4(), after_cursor=2**40) == []  # a bigint parameter
        assert session.memory.write(NOTES, "k", 1, expected_version=0).version == 1
        assert session.documents.chunks_of(str(uuid.uuid4())) == []  # a UUID as its text
        # strings the server reads as the parameter's type go as before
        assert session.graph.edges_as_of("2026-01-01T00:00:00+00:00") == []  # type: ignore[arg-type]
        assert session.graph.edges_as_of("yesterday") == []  # type: ignore[arg-type]
        assert session.packets.get_thread(uuid.uuid4(), limit="10") == []  # type: ignore[arg-type]
        assert session.packets.get_thread(uuid.uuid4(), limit=" 0x10 ") == []  # type: ignore[arg-type]
        fact = session.graph.assert_fact("tank", "holds", "oil", confidence=" 0.25 ")  # type: ignore[arg-type]
        assert fact.confidence == 0.25
        # ids in every form the server reads, mixed in one list (the slow path of the check names none of them)
        one = uuid.uuid4()
        forms = [one, str(one).upper(), "{" + str(one) + "}", one.hex, str(uuid.uuid4())]
        assert session.packets.get_packets(forms) == []
        assert session.graph.assert_fact("tank", "holds", "water", confidence=1).confidence == 1.0  # an int


def test_the_signatures_read_from_the_snapshot_are_the_installed_functions(db):
    installed = ground_truth(db, """
        select p.proname as name, p.pronargs - p.pronargdefaults as required,
               array(select t.typname from unnest(p.proargtypes) with ordinality a(oid, n)
                     join pg_type t on t.oid = a.oid
                     where t.typname in ('int2', 'int4', 'int8') order by a.n) as integers
          from pg_proc p where p.pronamespace = 'memsub'::regnamespace and p.prokind = 'f'""")
    names = {"int2": "smallint", "int4": "integer", "int8": "bigint"}
    assert len(installed) > 200
    for function in installed:
        found = signatures.signature(function["name"])
        assert found is not None, function["name"]
        assert len(found.required) == function["required"], function["name"]
        integers = [kind for kind in found.types.values() if kind in signatures.INTEGER_RANGES]
        assert sorted(integers) == sorted(names[t] for t in function["integers"]), function["name"]
    assert signatures.signature("no_such_function") is None
