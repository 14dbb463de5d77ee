"""Names listed by a reflection (entities, tags) or a summary (key_entities) are never blank: a blank element names
nothing, and it was stored as given (a blank tag dropped)."""

from __future__ import annotations

import uuid

from helpers import committed_note, expect_error, set_context, table_state


def test_a_blank_entity_of_a_reflection_is_refused_naming_the_element(db):
    tenant = uuid.uuid4()
    with db.connect("app") as app, db.connect() as judge:
        set_context(app, tenant, uuid.uuid4(), uuid.uuid4())
        before = table_state(judge)
        error = expect_error(app, "22023", "entities[1]",
                             "select memsub.record_reflection('lesson', 'check the index', "
                             "p_entities => array['planner', E' \\t'])")
        assert "entities[1]" in str(error)
        assert table_state(judge) == before


def test_a_blank_key_entity_of_a_summary_is_refused_naming_the_element(db):
    tenant, org, user = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with db.connect("app") as app, db.connect() as judge:
        packet = committed_note(app, tenant, org, user)
        before = table_state(judge)
        error = expect_error(app, "22023", "key_entities[0]",
                             "select memsub.record_summary('agent', 'planner', 'it scanned', array[%s]::uuid[], "
                             "p_key_entities => array[' ', 'planner'])", [packet])
        assert "key_entities[0]" in str(error)
        assert table_state(judge) == before


def test_a_blank_tag_of_a_reflection_is_refused_naming_the_element(db):
    """A blank tag names nothing, as a blank entity does, and a packet's blank tag and a blank tag filter are
    refused: a reflection's is too (22023 naming tags[i]), where it was dropped without a word."""
    tenant = uuid.uuid4()
    with db.connect("app") as app, db.connect() as judge:
        set_context(app, tenant, uuid.uuid4(), uuid.uuid4())
        before = table_state(judge)
        for tags, field in [(["routing", ""], "tags[1]"), ([" \t", "routing"], "tags[0]"),
                            (["routing", "cache", "\u00a0\n"], "tags[2]")]:
            error = expect_error(app, "22023", field,
                                 "select memsub.record_reflection('lesson', 'check the index', p_tags => %s)", [tags])
            assert field in str(error)
            set_context(app, tenant, uuid.uuid4(), uuid.uuid4())
        assert table_state(judge) == before
