"""retrieve_reflections refuses a filter that can match nothing instead of answering as if no reflection matched:
an empty list of types (NULL: every type), and require_tags with an empty list of tags (NULL: no tag filter)."""

from __future__ import annotations

import uuid

from helpers import expect_error, set_context


def test_an_empty_filter_list_is_refused_naming_it(db):
    tenant, org = uuid.uuid4(), uuid.uuid4()
    with db.connect("app") as app:
        set_context(app, tenant, org)
        app.execute("select memsub.record_reflection('lesson', 'check the index', p_tags => array['postgres'])")
        app.commit()
        set_context(app, tenant, org)
        expect_error(app, "22023", "reflection_types",
                     "select memsub.retrieve_reflections(p_reflection_types => '{}')")
        set_context(app, tenant, org)
        expect_error(app, "22023", "tags",
                     "select memsub.retrieve_reflections(p_tags => '{}', p_require_tags => true)")
        set_context(app, tenant, org)
        # NULL filters filter nothing; an empty tag list without require_tags only scores
        for call in ["select content from memsub.retrieve_reflections(p_reflection_types => null)",
                     "select content from memsub.retrieve_reflections(p_tags => null, p_require_tags => true)",
                     "select content from memsub.retrieve_reflections(p_tags => '{}')"]:
            assert app.execute(call).fetchall() == [("check the index",)], call
