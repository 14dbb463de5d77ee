"""Text that is not Unicode is refused by name before anything is sent.

Python strings may hold unpaired surrogates (U+D800 to U+DFFF): JSON's ``\\ud800`` escape decodes to one, and a
command-line argument with a byte that is not UTF-8 becomes one. Such a string has no UTF-8 form, so psycopg could
not send it and raised its own UnicodeEncodeError, naming no argument (and the HTTP API answered 500). Every text,
text[] and JSON argument now raises LocalValidationError (an InvalidInput, SQLSTATE 22021, as PostgreSQL names text
that is not valid in its encoding) naming the argument, or the path inside a JSON argument, and nothing is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from memsub.client import TenantSession
from memsub.errors import LocalValidationError
from memsub.models import PacketEnvelopeIn

from doc_helpers import DIMENSION, tenant_session
from helpers import TENANT_A
from refusal_helpers import assert_refused_locally
from session_helpers import ALICE, ground_truth

LONE = "\ud800"
"""A high surrogate with no low one after it."""
NOTES = f"user:{ALICE}:notes"

Call = Callable[[TenantSession], object]
CALLS: dict[str, tuple[str, Call]] = {
    "a text argument": ("key", lambda s: s.memory.write(NOTES, f"k{LONE}", {"a": 1})),
    "the end of a text argument": ("namespace", lambda s: s.memory.write(f"{NOTES}x\udcff", "k", {"a": 1})),
    "a string inside a JSON argument": ("value.note[1]", lambda s: s.memory.write(NOTES, "k", {
        "note": ["fine", f"half {LONE}"]})),
    "a key of a JSON object": ("metadata", lambda s: s.memory.write(NOTES, "k", {"a": 1}, metadata={LONE: 1})),
    "an element of a text array": ("tags[1]", lambda s: s.search.semantic([1.0] * DIMENSION, tags=["ok", LONE])),
    "an envelope's payload": ("envelope.payload.text", lambda s: s.packets.write(PacketEnvelopeIn(
        packet_type="note", payload={"text": LONE}))),
    "a parameter of a read of a table": ("session_id", lambda s: s.sessions.get(LONE)),
    "a filter of the audit trail": ("namespace", lambda s: s.packets.audit_trail(namespace=LONE)),
}
TABLES = ("memory_entries", "packet_store", "audit")


@pytest.mark.parametrize("case", sorted(CALLS))
def test_text_that_is_not_unicode_is_refused_naming_the_argument(db, case):
    field, call = CALLS[case]
    assert "surrogate" in str(assert_refused_locally(db, call, field, "22021", TABLES)), case


def test_text_beyond_ascii_still_goes_through(db):
    words = "Grüße, 世界, emoji \U0001f600 and a paired surrogate's character \U00010348"
    with tenant_session(db.dsn("app"), TENANT_A, user=ALICE) as session:
        entry = session.memory.write(NOTES, f"k-{uuid.uuid4().hex[:6]}-ü", {"note": words}, metadata={"ключ": words})
        assert session.memory.get(NOTES, entry.key).value == {"note": words}
        written = session.packets.write(PacketEnvelopeIn(packet_type="note", payload={"text": words}, tags=["ü"]))
        assert session.packets.get(written.packet_id).envelope["payload"] == {"text": words}


LISTS: dict[str, tuple[str, Call]] = {
    "search tags": ("tags", lambda s: s.search.semantic([1.0] * DIMENSION, tags="hdpe")),
    "reflection tags": ("tags", lambda s: s.reflection.record("lesson", "check the supplier", tags="supplier")),
    "reflection entities": ("entities", lambda s: s.reflection.record("lesson", "check", entities="Acme")),
    "task lessons": ("lessons", lambda s: s.reflection.record_task("t-1", lessons="ask twice")),
    "entity aliases": ("aliases", lambda s: s.graph.upsert_entity("Acme", "Organization", aliases="ACME")),
    "traversal types": ("relationship_types", lambda s: s.graph.traverse("Acme", relationship_types="supplies")),
    "context roles": ("roles", None),
    "packet ids": ("packet_ids", lambda s: s.packets.get_packets(str(uuid.uuid4()))),
    "summary sources": ("source_packet_ids", lambda s: s.reflection.record_summary(
        "thread", "t1", "a summary", str(uuid.uuid4()))),
}
TABLE_OF = {"reflection tags": "reflection_store", "reflection entities": "reflection_store",
            "task lessons": "task_reflections", "entity aliases": "world_model_entities",
            "summary sources": "memory_summaries"}


@pytest.mark.parametrize("case", sorted(LISTS))
def test_one_string_where_a_list_of_strings_belongs_is_refused_not_split_into_characters(db, case):
    # a str is a Sequence[str] to Python and to mypy: list("hdpe") would have sent four one-letter tags
    field, call = LISTS[case]
    table = TABLE_OF.get(case, "audit")
    before = ground_truth(db, f"select count(*) as n from memsub.{table}")[0]["n"]  # noqa: S608 - fixed names
    with pytest.raises(LocalValidationError) as refused:
        if call is None:
            with tenant_session(db.dsn("app"), TENANT_A, user=ALICE, roles="tenant_admin"):  # type: ignore[arg-type]
                pass
        else:
            with tenant_session(db.dsn("app"), TENANT_A, user=ALICE) as session:
                call(session)
    assert (refused.value.field, refused.value.sqlstate) == (field, "22023"), case
    assert "not one string" in str(refused.value), case
    assert ground_truth(db, f"select count(*) as n from memsub.{table}")[0]["n"] == before  # noqa: S608


def test_an_element_of_a_list_of_strings_that_is_not_one_is_refused_by_place(db):
    with pytest.raises(LocalValidationError) as refused, tenant_session(db.dsn("app"), TENANT_A, user=ALICE) as s:
        s.search.semantic([1.0] * DIMENSION, tags=["hdpe", 7])  # type: ignore[list-item]
    assert (refused.value.field, refused.value.sqlstate) == ("tags[1]", "22023")


NULS: dict[str, tuple[str, str, Call]] = {
    "a text argument": ("key", "22021", lambda s: s.memory.write(NOTES, "k\x00", {"a": 1})),
    "an element of a text array": ("tags[0]", "22021", lambda s: s.search.semantic([1.0] * DIMENSION,
                                                                                    tags=["a\x00"])),
    "a string inside a JSON argument": ("value.note", "22P05", lambda s: s.memory.write(NOTES, "k", {
        "note": "a\x00b"})),
    "an envelope's payload": ("envelope.payload.text", "22P05", lambda s: s.packets.write(PacketEnvelopeIn(
        packet_type="note", payload={"text": "\x00"}))),
}


@pytest.mark.parametrize("case", sorted(NULS))
def test_a_nul_character_is_refused_naming_the_argument(db, case):
    # PostgreSQL's text cannot hold U+0000 and its jsonb refuses \u0000: psycopg raised its own error for text,
    # and the server named no field for JSON
    field, sqlstate, call = NULS[case]
    assert "NUL" in str(assert_refused_locally(db, call, field, sqlstate, TABLES)), case
