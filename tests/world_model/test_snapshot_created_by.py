"""A snapshot's created_by names who took it: stored as every optional name is (trimmed, each run of whitespace one
space; blank counts as absent and falls back to the context user, or the login)."""

from __future__ import annotations

import uuid

from helpers import set_context

SNAPSHOT = "select created_by from memsub.take_world_model_snapshot(p_created_by => %s)"


def test_created_by_is_stored_as_a_name(db):
    tenant, user = uuid.uuid4(), uuid.uuid4()
    with db.connect("app") as app:
        set_context(app, tenant, user=user)
        assert app.execute(SNAPSHOT, ["  nightly\t planner "]).fetchone() == ("nightly planner",)
        assert app.execute(SNAPSHOT, [" \n "]).fetchone() == (str(user),)
        set_context(app, tenant)
        login = app.execute("select session_user::text").fetchone()
        assert app.execute(SNAPSHOT, [""]).fetchone() == login
