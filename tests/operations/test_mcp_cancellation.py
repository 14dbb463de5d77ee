"""An MCP client's ``notifications/cancelled`` for a tools/call under way: the call's transaction keeps nothing,
the server answers nothing for it (the MCP specification) and goes on serving on a clean connection."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
import uuid
from typing import Any

import anyio
from mcp import Client
from test_mcp_server import _command, _ended, _env, _free_port, start_over_http

from helpers import wait_until_one_waits_for_a_lock

LOCK_ENTRIES = "lock table memsub.memory_entries in access exclusive mode"
USER = uuid.uuid4()


def _send(process: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()


def _read(process: subprocess.Popen[str], timeout: float = 20.0) -> dict[str, Any]:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, "no answer"
    answer = json.loads(process.stdout.readline())
    assert isinstance(answer, dict)
    return answer


def _write_entry(request_id: int, key: str) -> dict[str, Any]:
    arguments = {"namespace": f"user:{USER}:notes", "key": key, "value": 1}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "remember_entry", "arguments": arguments}}


def _entries(db: Any) -> list[str]:
    with db.connect() as conn:
        return [row[0] for row in conn.execute("select key from memsub.memory_entries order by key").fetchall()]


def test_a_cancelled_stdio_tool_call_keeps_nothing_and_the_server_goes_on(db: Any) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSUB_")} | _env(
        MEMSUB_DSN=db.dsn("app"), MEMSUB_TENANT=str(uuid.uuid4()), MEMSUB_USER=str(USER),
        MEMSUB_EMBEDDER="hashing")
    process = subprocess.Popen([*_command(), "mcp", "--transport", "stdio"], env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        _send(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        assert "result" in _read(process)
        _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        with db.connect() as holder:
            holder.execute(LOCK_ENTRIES)
            _send(process, _write_entry(2, "cancelled"))
            wait_until_one_waits_for_a_lock(db, "the tool call")
            _send(process, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": 2, "reason": "the user gave up"}})
            time.sleep(0.5)
        _send(process, {"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert _read(process) == {"jsonrpc": "2.0", "id": 3, "result": {}}  # nothing answered for the call
        _send(process, _write_entry(4, "kept"))
        answer = _read(process)
        assert answer["id"] == 4 and not answer["result"].get("isError"), answer
    finally:
        assert process.stdin is not None
        process.stdin.close()
        _ended(process)
    assert _entries(db) == ["kept"]


def test_a_tool_call_the_sdk_client_abandons_over_streamable_http_keeps_nothing(db: Any) -> None:
    """The SDK's client cancels an abandoned call: over streamable HTTP by closing the call's request."""
    port = _free_port()
    process = start_over_http(port, MEMSUB_DSN=db.dsn("app"), MEMSUB_TENANT=str(uuid.uuid4()),
                              MEMSUB_USER=str(USER))
    arguments = _write_entry(0, "cancelled")["params"]["arguments"]
    try:

        async def scenario() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                with db.connect() as holder:
                    holder.execute(LOCK_ENTRIES)
                    async with anyio.create_task_group() as group:
                        group.start_soon(client.call_tool, "remember_entry", arguments)
                        await anyio.to_thread.run_sync(wait_until_one_waits_for_a_lock, db, "the tool call")
                        group.cancel_scope.cancel()
                    await anyio.sleep(0.5)
                written = await client.call_tool("remember_entry", {**arguments, "key": "kept"})
                assert not written.is_error, written

        anyio.run(scenario)
    finally:
        process.terminate()
        _ended(process)
    assert _entries(db) == ["kept"]
