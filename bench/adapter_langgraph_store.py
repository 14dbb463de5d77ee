"""memsub's LangGraph store against LangGraph's own PostgresStore, on one server, in one run.

Usage: python bench/adapter_langgraph_store.py [--users 20] [--items 20] [--repeats 5] [--json]

Both stores hold the same items (a short memory text and a few fields per item, under ("users", <id>, "memories"))
with the same index configuration (64-dimension hashing embeddings of the text field), and run the same calls:
a put, a get, a filtered search of one user's namespace, a natural-language search of it, and a namespace
listing. A put and a get run once an item; each user's searches and listing run ``--repeats`` times, so that
every operation is timed over at least a hundred calls at the defaults. memsub runs as a login in memsub_app
(row-level security on, one transaction with set_context per call); PostgresStore as the owner of its own
schema, set up as ``setup()`` does. Operations alternate between the sides in rounds. Ratios are memsub /
PostgresStore throughput (> 1: memsub is faster) and p50 latency.
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

from langgraph.store.base import BaseStore

from _adapter_report import compare, render
from _adapter_report import main as adapter_main
from _adapter_report import time_sides as alternate
from _database import bench_database, environment, environment_line
from memsub.embedding import HashingEmbedder
from memsub.integrations._context import TenantContext, sync_pool
from memsub.integrations.langgraph_store import MemsubStore
from peer_langgraph import LangGraph, prepare_langgraph

PEER = "PostgresStore"
DIMS = 64
TOPICS = ("tea", "coffee", "cycling", "chess", "hiking", "jazz", "sailing", "pottery")


def item(user: int, number: int) -> tuple[tuple[str, ...], str, dict[str, Any]]:
    topic = TOPICS[(user + number) % len(TOPICS)]
    return (("users", str(user), "memories"), f"m{number}",
            {"text": f"user {user} mentioned {topic} on day {number}", "topic": topic, "day": number})


def run(users: int, items: int, repeats: int) -> dict[str, Any]:
    embedder = HashingEmbedder(DIMS)
    index: Any = {"dims": DIMS, "embed": embedder.embed, "fields": ["text"]}
    with bench_database() as (superuser, app):
        peer_dsn = prepare_langgraph(superuser)
        env = environment(superuser)
        peer = LangGraph(peer_dsn, index)
        peer.store.setup()
        pool = sync_pool(app, max_size=1)
        ours = MemsubStore(pool, TenantContext(uuid.uuid4()), index=index)
        sides: dict[str, BaseStore] = {PEER: peer.store, "memsub": ours}
        work = [item(user, number) for number in range(items) for user in range(users)]
        put = alternate(work, {name: (lambda it, s=store: s.put(*it)) for name, store in sides.items()})
        get = alternate(work, {name: (lambda it, s=store: s.get(it[0], it[1])) for name, store in sides.items()})
        user_ids = [str(user) for user in range(users)] * repeats
        filtered = alternate(user_ids, {name: (lambda u, s=store: s.search(("users", u), filter={"topic": "tea"},
                                                                            limit=10))
                                        for name, store in sides.items()})
        query = alternate(user_ids, {name: (lambda u, s=store: s.search(("users", u), query="who likes tea?",
                                                                         limit=5))
                                     for name, store in sides.items()})
        listing = alternate(user_ids, {name: (lambda u, s=store: s.list_namespaces(prefix=("users",), limit=100))
                                       for name, store in sides.items()})
        for store in sides.values():  # both sides hold the same items
            assert store.get(("users", "0", "memories"), "m0") is not None
            assert len(store.list_namespaces(prefix=("users",), limit=1000)) == users
        pool.close()
        peer.close()
    return {"environment": env, "users": users, "items": items, "repeats": repeats,
            "results": [compare("put (one item, embedded)", put, PEER), compare("get by key", get, PEER),
                        compare("search with a filter", filtered, PEER),
                        compare("search by a query (top 5)", query, PEER),
                        compare("list namespaces", listing, PEER)]}


def render_report(report: dict[str, Any]) -> str:
    return render("memsub LangGraph store vs LangGraph PostgresStore (same server, same run)",
                  environment_line(report["environment"]),
                  f"{report['users']} users x {report['items']} items, each user's searches and listing run "
                  f"{report['repeats']}x; memsub as a memsub_app login with RLS", PEER,
                  report["results"])


def main(argv: list[str] | None = None) -> int:
    return adapter_main(argv, __doc__, {"users": 20, "items": 20, "repeats": 5}, run, render_report)


if __name__ == "__main__":
    sys.exit(main())
