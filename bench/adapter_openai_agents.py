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

import sys
import uuid
from typing import Any

from agents.extensions.memory import SQLAlchemySession

from _adapter_report import compare, render
from _adapter_report import main as adapter_main
from _adapter_report import time_sides_async as alternate
from _database import environment_line
from adapter_adk import run_with_peer
from memsub.integrations._context import TenantContext, sync_pool
from memsub.integrations.openai_agents import MemsubSession

PEER = "SQLAlchemySession"


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


def run(sessions: int, turns: int) -> dict[str, Any]:
    return run_with_peer(measure, sessions=sessions, turns=turns)


def render_report(report: dict[str, Any]) -> str:
    return render("memsub OpenAI Agents session vs the SDK's SQLAlchemySession (same server, same run)",
                  environment_line(report["environment"]),
                  f"{report['sessions']} sessions x {report['turns']} turns; memsub as a memsub_app login with RLS",
                  PEER, report["results"])


def main(argv: list[str] | None = None) -> int:
    return adapter_main(argv, __doc__, {"sessions": 20, "turns": 20}, run, render_report)


if __name__ == "__main__":
    sys.exit(main())
