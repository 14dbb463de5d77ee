"""memsub's OpenAI Agents SDK session against the SDK's own SQL session (SQLAlchemySession) on the same server.

Usage: python bench/adapter_openai_agents.py [--sessions 20] [--turns 20] [--json]

Both sides keep the same conversations: each turn adds a user message and an assistant reply, then the history
is read back (the newest 20 items, as a runner does before calling the model), and at the end every session pops
its newest item. memsub runs as a login in memsub_app (row-level security on, one transaction with set_context
per call); SQLAlchemySession as the owner of its own schema, with its tables created by ``create_tables=True``,
over SQLAlchemy's psycopg driver. Operations alternate between the sides in rounds. Ratios are memsub / peer
throughput (> 1: memsub is faster) and p50 latency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agents.extensions.memory import SQLAlchemySession

from _adapter_report import compare, render, rounds
from _database import bench_database, environment, environment_line
from adapter_adk import prepare_peer
from memsub.integrations._context import TenantContext, sync_pool
from memsub.integrations.openai_agents import MemsubSession

PEER = "SQLAlchemySession"


async def alternate(items: Sequence[Any], sides: dict[str, Callable[[Any], Awaitable[Any]]]) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {name: [] for name in sides}
    for name, chunk in rounds(items, list(sides)):
        for item in chunk:
            began = time.perf_counter()
            await sides[name](item)
            timings[name].append(time.perf_counter() - began)
    return timings


def turn(number: int) -> list[Any]:
    return [{"role": "user", "content": f"question {number} " + "x" * 200},
            {"role": "assistant", "content": f"answer {number} " + "y" * 200}]


async def measure(app: str, peer_url: str, count: int, turns: int) -> list[dict[str, Any]]:
    pool = sync_pool(app, max_size=1)
    context = TenantContext(uuid.uuid4())
    ids = [f"conversation-{n}" for n in range(count)]
    ours = {sid: MemsubSession(sid, pool, context) for sid in ids}
    theirs = {sid: SQLAlchemySession.from_url(sid, url=peer_url, create_tables=True) for sid in ids}
    sides = {PEER: theirs, "memsub": ours}
    await theirs[ids[0]].get_items()  # creates the peer's tables before anything is timed
    work = [(sid, number) for number in range(turns) for sid in ids]
    add = await alternate(work, {name: (lambda w, s=s: s[w[0]].add_items(turn(w[1]))) for name, s in sides.items()})
    read = await alternate(work, {name: (lambda w, s=s: s[w[0]].get_items(limit=20)) for name, s in sides.items()})
    pop = await alternate(ids, {name: (lambda sid, s=s: s[sid].pop_item()) for name, s in sides.items()})
    for side in sides.values():  # both sides hold the same history
        assert len(await side[ids[0]].get_items()) == 2 * turns - 1
    for session in theirs.values():
        await session.engine.dispose()
    pool.close()
    return [compare("add_items (one turn: 2 items)", add, PEER), compare("get_items (newest 20)", read, PEER),
            compare("pop_item", pop, PEER)]


def run(count: int, turns: int) -> dict[str, Any]:
    with bench_database() as (superuser, app):
        peer_url = prepare_peer(superuser)
        env = environment(superuser)
        results = asyncio.run(measure(app, peer_url, count, turns))
    return {"environment": env, "sessions": count, "turns": turns, "results": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    report = run(args.sessions, args.turns)
    print(json.dumps(report, indent=2) if args.json else render(
        "memsub OpenAI Agents session vs the SDK's SQLAlchemySession (same server, same run)",
        environment_line(report["environment"]),
        f"{report['sessions']} sessions x {report['turns']} turns; memsub as a memsub_app login with RLS", PEER,
        report["results"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
