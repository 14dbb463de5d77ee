"""memsub's LangGraph store against LangGraph's own PostgresStore, on one server, in one run.

Usage: python bench/adapter_langgraph_store.py [--users 20] [--items 20] [--repeats 5] [--dimensions 64] [--json]

Both stores hold the same items (a short memory text and a few fields per item, under ("users", <id>, "memories"))
with the same index configuration (hashing embeddings of the text field, ``--dimensions`` of them: 64 by default,
1536 as OpenAI's text-embedding-3-small gives), and run the same calls:
a put, a get, a filtered search of one user's namespace, a natural-language search of it, and a namespace
listing. A put and a get run once an item; each user's searches and listing run ``--repeats`` times, so that
every operation is timed over at least a hundred calls at the defaults. memsub runs as a login in memsub_app
(row-level security on, one transaction with set_context per call); PostgresStore as the owner of its own
schema, set up as ``setup()`` does. Operations alternate between the sides in rounds. Ratios are memsub /
PostgresStore throughput (> 1: memsub is faster), the same paired round by round (the median of the rounds' ratios),
and p50 latency. When the server runs on this machine, each
side's server CPU per call is reported too (its one server process, read before and after each operation's
rounds) with its ratio (< 1: memsub uses less): on a machine whose round trips dominate the latency, it shows
what the server work costs.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from typing import Any

from langgraph.store.base import BaseStore

from _adapter_report import compare, render
from _adapter_report import main as adapter_main
from _adapter_report import time_sides_with_cpu as alternate
from _database import backend_cpu, bench_database, environment, environment_line
from memsub.embedding import HashingEmbedder
from memsub.integrations._context import TenantContext, sync_pool
from memsub.integrations.langgraph_store import MemsubStore
from peer_langgraph import LangGraph, prepare_langgraph

PEER = "PostgresStore"
TOPICS = ("tea", "coffee", "cycling", "chess", "hiking", "jazz", "sailing", "pottery")


def item(user: int, number: int) -> tuple[tuple[str, ...], str, dict[str, Any]]:
    topic = TOPICS[(user + number) % len(TOPICS)]
    return (("users", str(user), "memories"), f"m{number}",
            {"text": f"user {user} mentioned {topic} on day {number}", "topic": topic, "day": number})


def run(users: int, items: int, repeats: int, dimensions: int) -> dict[str, Any]:
    embedder = HashingEmbedder(dimensions)
    index: Any = {"dims": dimensions, "embed": embedder.embed, "fields": ["text"]}
    with bench_database() as (superuser, app):
        peer_dsn = prepare_langgraph(superuser)
        env = environment(superuser)
        peer = LangGraph(peer_dsn, index)
        peer.store.setup()
        pool = sync_pool(app, max_size=1)
        ours = MemsubStore(pool, TenantContext(uuid.uuid4()), index=index)
        sides: dict[str, BaseStore] = {PEER: peer.store, "memsub": ours}
        with pool.connection() as connection:  # the pool's one connection, kept open: one server process a side
            cpu = {PEER: backend_cpu(peer.conn), "memsub": backend_cpu(connection)}

        def timed(inputs: list[Any], call: Callable[[BaseStore, Any], object]
                  ) -> tuple[dict[str, list[float]], dict[str, float] | None]:
            """``call(store, input)`` for each input on both sides, in alternating rounds, with server CPU."""
            return alternate(inputs, {name: (lambda it, s=store: call(s, it)) for name, store in sides.items()}, cpu)

        work = [item(user, number) for number in range(items) for user in range(users)]
        put = timed(work, lambda s, it: s.put(*it))
        get = timed(work, lambda s, it: s.get(it[0], it[1]))
        user_ids = [str(user) for user in range(users)] * repeats
        filtered = timed(user_ids, lambda s, u: s.search(("users", u), filter={"topic": "tea"}, limit=10))
        query = timed(user_ids, lambda s, u: s.search(("users", u), query="who likes tea?", limit=5))
        listing = timed(user_ids, lambda s, u: s.list_namespaces(prefix=("users",), limit=100))
        for store in sides.values():  # both sides hold the same items
            assert store.get(("users", "0", "memories"), "m0") is not None
            assert len(store.list_namespaces(prefix=("users",), limit=1000)) == users
        pool.close()
        peer.close()
    return {"environment": env, "users": users, "items": items, "repeats": repeats, "dimensions": dimensions,
            "results": [compare(name, timings, PEER, cpu_per_call) for name, (timings, cpu_per_call) in (
                ("put (one item, embedded)", put), ("get by key", get), ("search with a filter", filtered),
                ("search by a query (top 5)", query), ("list namespaces", listing))]}


def render_report(report: dict[str, Any]) -> str:
    return render("memsub LangGraph store vs LangGraph PostgresStore (same server, same run)",
                  environment_line(report["environment"]),
                  f"{report['users']} users x {report['items']} items, {report['dimensions']}-d embeddings, each "
                  f"user's searches and listing run {report['repeats']}x; memsub as a memsub_app login with RLS",
                  PEER,
                  report["results"])


def main(argv: list[str] | None = None) -> int:
    return adapter_main(argv, __doc__, {"users": 20, "items": 20, "repeats": 5, "dimensions": 64}, run,
                        render_report)


if __name__ == "__main__":
    sys.exit(main())
