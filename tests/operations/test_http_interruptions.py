"""HTTP requests interrupted under way: by the login's statement_timeout, or by a client that goes away before
its answer. What each leaves in the database and in the server's pool."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from http_helpers import USER_A, USER_B, running_api

LOCK_MEMORY = "lock table memsub.memory_entries in access exclusive mode"
KEY = f"/api/v1/memory/namespace/user:{USER_A}:notes/keys/k"
OTHERS = f"/api/v1/memory/namespace/user:{USER_B}/keys"


def test_a_request_past_the_statement_timeout_is_503_busy_writes_nothing_and_logs_no_error(
        db: Any, caplog: pytest.LogCaptureFixture) -> None:
    with db.connect(autocommit=True) as admin:  # what `memsub login-timeouts` sets, shorter
        admin.execute(f"alter role memsub_test_app in database {db.name} set statement_timeout = '300ms'")
    with running_api(db) as api, api.client("a") as client, api.client("b") as other:
        with caplog.at_level(logging.WARNING), db.connect() as holder:
            holder.execute(LOCK_MEMORY)
            response = client.put(KEY, json={"value": {"n": 1}})
            holder.rollback()
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "1"
        body = response.json()
        assert body["type"] == "urn:memsub:problem:busy" and body["sqlstate"] == "57014", body
        assert "statement timeout" in body["detail"], body
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
        assert api.memory_count() == 0
        # The pool's connections serve the next requests, of either tenant.
        for _ in range(3):
            assert other.get(OTHERS).json()["entries"] == []
        written = client.put(KEY, json={"value": {"n": 2}})
        assert written.status_code == 200 and written.json()["version"] == 1, written.text
        assert other.get(OTHERS).json()["entries"] == []
