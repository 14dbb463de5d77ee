"""HTTP requests interrupted under way: by the login's statement_timeout, or by a client that goes away before
its answer. What each leaves in the database and in the server's pool."""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

import pytest

from http_helpers import USER_A, USER_B, running_api

from helpers import wait_until_one_waits_for_a_lock

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


def test_a_client_that_goes_away_mid_request_leaves_the_request_to_finish_and_the_pool_clean(
        db: Any, caplog: pytest.LogCaptureFixture) -> None:
    """The server does not cancel a request whose client closed its socket: the request runs to its end, as if its
    answer were lost on the way, commits, and its connection goes back idle for the next key's requests."""
    with running_api(db) as api, api.client("b") as other:
        host, port = api.url.removeprefix("http://").split(":")
        body = json.dumps({"value": {"n": 1}}).encode()
        with caplog.at_level(logging.WARNING), db.connect() as holder:
            holder.execute(LOCK_MEMORY)
            with socket.create_connection((host, int(port))) as gone:
                gone.sendall(f"PUT {KEY} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {api.keys['a']['api_key']}"
                             f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                             + body)
                wait_until_one_waits_for_a_lock(db, "the request")
            time.sleep(0.3)  # the socket is closed while the request waits
            holder.rollback()
        deadline = time.monotonic() + 10
        while api.memory_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert api.memory_count() == 1
        for _ in range(4):  # every connection of the pool, as tenant B
            assert other.get(OTHERS).json()["entries"] == []
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    with db.connect() as admin:
        assert admin.execute("select count(*) from pg_stat_activity where datname = %s and state <> 'idle' "
                             "and pid <> pg_backend_pid()", [db.name]).fetchone() == (0,)
