"""memsub's LangGraph checkpointer against LangGraph's own PostgresSaver, on one server, in one run.

Usage: python bench/adapter_langgraph_checkpoint.py [--threads 40] [--steps 10] [--json]

Both sides save the same checkpoints (a growing message list, as a chat graph does), record a pending write per
step, read the latest checkpoint of a thread and list a thread's history. memsub runs as a login in memsub_app
(row-level security on, one transaction with set_context per call); PostgresSaver as the owner of its own
schema with its own tables, set up as ``PostgresSaver.setup()`` does. Operations alternate between the sides in
rounds so drift in the machine's load hits both. Ratios are memsub / PostgresSaver throughput (> 1: memsub is
faster) and p50 latency (< 1: memsub is faster).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import dict_row

from _adapter_report import compare as compare_sides
from _adapter_report import main as adapter_main
from _adapter_report import render as render_table
from _adapter_report import time_sides as alternate
from _database import bench_database, environment, environment_line
from memsub.integrations._context import TenantContext, sync_pool
from memsub.integrations.langgraph_checkpoint import MemsubSaver
from peer_langgraph import prepare_langgraph

Step = tuple[str, int]


def chain(saver: Any, thread: str, steps: int) -> Callable[[Step], None]:
    """An action saving step ``n`` of ``thread``: the checkpoint with n messages, then one pending write."""
    state: dict[str, Any] = {"config": {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
                             "checkpoint": empty_checkpoint()}

    def save(step: Step) -> None:
        _, number = step
        messages = [{"role": "user" if i % 2 else "assistant", "content": f"message {i} " + "x" * 200}
                    for i in range(number + 1)]
        checkpoint = create_checkpoint(state["checkpoint"], None, number)
        checkpoint["channel_values"] = {"messages": messages}
        checkpoint["channel_versions"] = {"messages": str(number + 1)}
        config = saver.put(state["config"], checkpoint, {"source": "loop", "step": number, "run_id": thread},
                           {"messages": str(number + 1)})
        saver.put_writes(config, [("messages", messages[-1])], task_id=f"task-{number}")
        state["config"], state["checkpoint"] = config, checkpoint

    return save


def compare(operation: str, timings: dict[str, list[float]]) -> dict[str, Any]:
    return compare_sides(operation, timings, "PostgresSaver")


def run(threads: int, steps: int) -> dict[str, Any]:
    with bench_database() as (superuser, app):
        peer_dsn = prepare_langgraph(superuser)
        env = environment(superuser)
        peer_conn = psycopg.connect(peer_dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        peer = PostgresSaver(peer_conn)
        peer.setup()
        pool = sync_pool(app, max_size=1)
        ours = MemsubSaver(pool, TenantContext(uuid.uuid4()))
        sides = {"PostgresSaver": peer, "memsub": ours}
        names = [f"thread-{i}" for i in range(threads)]
        savers = {name: {thread: chain(saver, thread, steps) for thread in names} for name, saver in sides.items()}
        work = [(thread, number) for number in range(steps) for thread in names]
        put = alternate(work, {name: (lambda step, name=name: savers[name][step[0]](step)) for name in sides})
        latest = alternate(names, {name: (lambda thread, saver=saver: saver.get_tuple(
            {"configurable": {"thread_id": thread, "checkpoint_ns": ""}})) for name, saver in sides.items()})
        history = alternate(names, {name: (lambda thread, saver=saver: list(saver.list(
            {"configurable": {"thread_id": thread}}))) for name, saver in sides.items()})
        for saver in sides.values():  # both sides hold the same state
            found = saver.get_tuple({"configurable": {"thread_id": names[0], "checkpoint_ns": ""}})
            assert found is not None and len(found.checkpoint["channel_values"]["messages"]) == steps
        pool.close()
        peer_conn.close()
    return {"environment": env, "threads": threads, "steps": steps,
            "results": [compare("put + put_writes (one step)", put), compare("get_tuple (latest)", latest),
                        compare(f"list (thread of {steps})", history)]}


def render(report: dict[str, Any]) -> str:
    return render_table("memsub LangGraph checkpointer vs LangGraph PostgresSaver (same server, same run)",
                        environment_line(report["environment"]),
                        f"{report['threads']} threads x {report['steps']} steps; memsub as a memsub_app login with RLS",
                        "PostgresSaver", report["results"])


def main(argv: list[str] | None = None) -> int:
    return adapter_main(argv, __doc__, {"threads": 40, "steps": 10}, run, render)


if __name__ == "__main__":
    sys.exit(main())
