"""memsub's ADK session service against ADK's own DatabaseSessionService, on one server, in one run.

Usage: python bench/adapter_adk.py [--sessions 20] [--events 20] [--json]

Both sides create the same sessions, append the same events (a text message with a state delta touching the
session's, the user's and the app's state, and a temp: key), then read each session whole and with
``num_recent_events=5``. memsub runs as a login in memsub_app (row-level security on, one transaction with
set_context per call); DatabaseSessionService (google-adk 1.4.2, SQLAlchemy over psycopg) as the owner of its
own schema, creating its tables as it does on start. Operations alternate between the sides in rounds so drift in
the machine's load hits both. Ratios are memsub / peer throughput (> 1: memsub is faster) and p50 latency
(< 1: memsub is faster).
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from google.adk.events import Event, EventActions
from google.adk.sessions import DatabaseSessionService, Session
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.genai import types
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import URL

from _adapter_report import compare as compare_sides
from _adapter_report import main as adapter_main
from _adapter_report import render as render_table
from _adapter_report import time_sides_async as alternate
from _database import bench_database, environment, environment_line, peer_login
from memsub.integrations._context import TenantContext, async_pool
from memsub.integrations.adk import MemsubSessionService

PEER = "DatabaseSessionService"
PEER_ROLE = "adk_peer"
APP = "bench"


def prepare_peer(superuser: str) -> str:
    """A login role owning a schema for ADK's tables; the SQLAlchemy URL of that login."""
    parts = conninfo_to_dict(peer_login(superuser, PEER_ROLE, "adk", ("adk",)))
    return URL.create("postgresql+psycopg", username=PEER_ROLE, database=str(parts.get("dbname")),
                      query={"host": str(parts.get("host")), "port": str(parts.get("port", 5432))}
                      ).render_as_string(hide_password=False)


def event(number: int) -> Event:
    return Event(author="user" if number % 2 == 0 else "assistant", invocation_id=f"inv-{number // 2}",
                 content=types.Content(role="user" if number % 2 == 0 else "model",
                                       parts=[types.Part(text=f"message {number} " + "x" * 200)]),
                 actions=EventActions(state_delta={"step": number, "user:seen": number, "app:total": number,
                                                   "temp:scratch": "not stored"}))


def compare(operation: str, timings: dict[str, list[float]]) -> dict[str, Any]:
    return compare_sides(operation, timings, PEER)


async def measure(app_dsn: str, peer_url: str, count: int, events: int) -> list[dict[str, Any]]:
    pool = async_pool(app_dsn, max_size=1)
    await pool.open()
    services: dict[str, BaseSessionService] = {PEER: DatabaseSessionService(peer_url),
                                               "memsub": MemsubSessionService(pool, TenantContext(uuid.uuid4()))}
    ids = [f"session-{i}" for i in range(count)]
    held: dict[str, dict[str, Session]] = {name: {} for name in services}

    def creator(name: str) -> Callable[[str], Awaitable[Any]]:
        async def create(session_id: str) -> None:
            held[name][session_id] = await services[name].create_session(
                app_name=APP, user_id=f"user-{session_id}", session_id=session_id, state={"step": 0})
        return create

    def appender(name: str) -> Callable[[tuple[str, int]], Awaitable[Any]]:
        async def append(item: tuple[str, int]) -> None:
            await services[name].append_event(held[name][item[0]], event(item[1]))
        return append

    def reader(name: str, config: GetSessionConfig | None) -> Callable[[str], Awaitable[Any]]:
        async def read(session_id: str) -> None:
            found = await services[name].get_session(app_name=APP, user_id=f"user-{session_id}",
                                                     session_id=session_id, config=config)
            assert found is not None and len(found.events) == (events if config is None else 5)
        return read

    created = await alternate(ids, {name: creator(name) for name in services})
    work = [(session_id, number) for number in range(events) for session_id in ids]
    appended = await alternate(work, {name: appender(name) for name in services})
    whole = await alternate(ids, {name: reader(name, None) for name in services})
    recent = await alternate(ids, {name: reader(name, GetSessionConfig(num_recent_events=5)) for name in services})
    for service in services.values():  # both sides hold the same state
        found = await service.get_session(app_name=APP, user_id=f"user-{ids[0]}", session_id=ids[0])
        assert found is not None and found.state == {"step": events - 1, "user:seen": events - 1,
                                                      "app:total": events - 1}
    await pool.close()
    return [compare("create_session", created), compare("append_event", appended),
            compare(f"get_session ({events} events)", whole), compare("get_session (5 most recent)", recent)]


def run_with_peer(measure: Callable[..., Coroutine[Any, Any, list[dict[str, Any]]]], **counts: int) -> dict[str, Any]:
    """The report of ``measure(app_dsn, peer_url, *counts)`` on a fresh server, the peer a login owning its schema."""
    with bench_database() as (superuser, app):
        peer_url = prepare_peer(superuser)
        env = environment(superuser)
        results = asyncio.run(measure(app, peer_url, *counts.values()))
    return {"environment": env, **counts, "results": results}


def run(sessions: int, events: int) -> dict[str, Any]:
    return run_with_peer(measure, sessions=sessions, events=events)


def render(report: dict[str, Any]) -> str:
    return render_table("memsub ADK session service vs ADK DatabaseSessionService (same server, same run)",
                        environment_line(report["environment"]),
                        f"{report['sessions']} sessions x {report['events']} events; memsub as a memsub_app login "
                        "with RLS", PEER, report["results"])


def main(argv: list[str] | None = None) -> int:
    return adapter_main(argv, __doc__, {"sessions": 20, "events": 20}, run, render)


if __name__ == "__main__":
    sys.exit(main())
