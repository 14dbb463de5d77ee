"""The lists a reflection, a task reflection or a summary stores are bounded like a text argument: the texts of one
list together by max_text_chars, and each tag by max_tag_chars, as a packet's tags. Without it, a list of
max_array_items texts of max_text_chars each stored a gigabyte in one call."""

from __future__ import annotations

import uuid

import pytest

from helpers import committed_note, expect_error, set_context, table_state

LONG = "x" * 600_000  # two of them pass max_text_chars (1 MiB) together, one does not

CALLS = [
    ("entities", "select memsub.record_reflection('lesson', 'check the index', p_entities => array[%s, %s])"),
    ("tags", "select memsub.record_reflection('lesson', 'check the index', p_tags => array['index', %s || %s])"),
    ("lessons", "select memsub.record_task_reflection('task-1', 'success', p_lessons => array[%s, %s])"),
    ("what_worked", "select memsub.record_task_reflection('task-1', 'success', p_what_worked => array[%s, %s])"),
    ("recommendations",
     "select memsub.record_task_reflection('task-1', 'success', p_recommendations => array[%s, %s])"),
]


@pytest.mark.parametrize(("field", "query"), CALLS, ids=[field for field, _ in CALLS])
def test_an_oversized_list_is_refused_naming_it_and_nothing_is_written(db, field, query):
    tenant = uuid.uuid4()
    with db.connect("app") as app, db.connect() as judge:
        set_context(app, tenant, uuid.uuid4(), uuid.uuid4())
        before = table_state(judge)
        text = "y" * 150 if field == "tags" else LONG
        error = expect_error(app, "54000", field, query, [text, text])
        assert field in str(error)
        assert table_state(judge) == before


def test_summary_lists_are_bounded_too(db):
    tenant, org, user = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with db.connect("app") as app, db.connect() as judge:
        packet = committed_note(app, tenant, org, user)
        for field in ("key_entities", "key_decisions"):
            set_context(app, tenant, org, user)  # the refusal before rolled back the context
            before = table_state(judge)
            expect_error(app, "54000", field,
                         f"select memsub.record_summary('agent', 'planner', 'it scanned', array[%s]::uuid[], "
                         f"p_{field} => array[%s, %s])", [packet, LONG, LONG])
            assert table_state(judge) == before


def test_lists_within_the_limits_are_stored(db):
    with db.connect("app") as app:
        set_context(app, uuid.uuid4(), uuid.uuid4(), uuid.uuid4())
        row = app.execute("select entities, tags from memsub.record_reflection('lesson', 'check the index', "
                          "p_entities => array[%s], p_tags => array[%s])", [LONG, "t" * 200]).fetchone()
        assert row is not None and row[0] == [LONG] and row[1] == ["t" * 200]
