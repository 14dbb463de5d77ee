"""What the MCP layer costs per call: the same remember and recall, three ways, on one private embedded server.

  direct   memsub.mcp_server.MemoryTools called in Python (the client and the stored functions, no protocol)
  inproc   the MCP SDK's client talking to the server in the same process (tool dispatch and validation)
  stdio    the MCP SDK's client talking to the `memsub mcp` command over stdio (what an assistant's host runs)

Calls run one after another as memsub_app, the three ways taking turns in rounds of 10 calls; the tenant first
holds --rows memories (hashing embedder, 384-d).
Reported per way and tool: p50 and p95 in milliseconds, and the ratio of each p50 to the direct one.

    python bench/mcp_calls.py [--rows 2000] [--calls 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import memsub
from _database import bench_database, cpu_model
from memsub.client import Substrate
from memsub.embedding import HashingEmbedder
from memsub.mcp_server import Identity, MemoryTools, build_server

ROUND = 10
WORDS = ("invoice supplier launch deploy window customer office billing schedule review incident budget "
         "contract design meeting travel hiring roadmap outage migration").split()


def text(n: int) -> str:
    return " ".join(WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(12)) + f" item {n}"


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def remember_args(n: int) -> dict[str, Any]:
    return {"text": text(n), "tags": ["bench"]}


def recall_args(n: int) -> dict[str, Any]:
    return {"query": " ".join(text(n).split()[:4]), "k": 5}


def direct(tools: MemoryTools, timings: dict[str, list[float]], calls: range) -> None:
    for n in calls:
        started = time.perf_counter()
        tools.remember(text(n), "note", ["bench"], None, [], None, None, "shared", None, [], [], "content")
        timings["remember"].append(time.perf_counter() - started)
        started = time.perf_counter()
        tools.recall(recall_args(n)["query"], 5, "hybrid", "content", None, None, None, None, None)
        timings["recall"].append(time.perf_counter() - started)


async def through(client: Client, timings: dict[str, list[float]], calls: range) -> None:
    for n in calls:
        for tool, arguments in (("remember", remember_args(n)), ("recall", recall_args(n))):
            started = time.perf_counter()
            result = await client.call_tool(tool, arguments)
            timings[tool].append(time.perf_counter() - started)
            assert not result.is_error, result.content


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    tenant = uuid.uuid4()
    results: dict[str, dict[str, list[float]]] = {}
    with bench_database(384) as (_, app_dsn), Substrate(app_dsn, max_size=2) as substrate:
        tools = MemoryTools(substrate, Identity(tenant_id=tenant), HashingEmbedder(384))
        for n in range(options.rows):
            tools.remember(text(10_000_000 + n), "note", [], None, [], None, None, "shared", None, [], [], "content")
        for n in range(10):  # warm up caches and the pool
            tools.recall(recall_args(n)["query"], 5, "hybrid", "content", None, None, None, None, None)
        script = Path(sys.executable).parent / "memsub"
        command = [str(script)] if script.exists() else [sys.executable, "-m", "memsub"]
        params = StdioServerParameters(
            command=command[0], args=[*command[1:], "mcp", "--transport", "stdio"],
            env={"PYTHONPATH": str(Path(memsub.__file__).resolve().parent.parent), "MEMSUB_DSN": app_dsn,
                 "MEMSUB_TENANT": str(tenant), "MEMSUB_EMBEDDER": "hashing"})

        async def measure() -> None:
            # The three ways take turns in rounds of ROUND calls, so a change in the machine's load falls on all.
            async with Client(build_server(tools)) as inproc, Client(params) as stdio:
                await through(stdio, {"remember": [], "recall": []}, range(20_000_000, 20_000_010))  # warm up
                ways: dict[str, Callable[[dict[str, list[float]], range], Awaitable[None]]] = {
                    "inproc": lambda timings, calls: through(inproc, timings, calls),
                    "stdio": lambda timings, calls: through(stdio, timings, calls),
                }
                for way in ("direct", *ways):
                    results[way] = {"remember": [], "recall": []}
                for number, first in enumerate(range(0, options.calls, ROUND)):
                    order = ["direct", *ways]
                    order = order[number % 3:] + order[:number % 3]
                    for index, way in enumerate(order):
                        calls = range(first + index * 1_000_000, min(first + ROUND, options.calls) + index * 1_000_000)
                        if way == "direct":
                            direct(tools, results[way], calls)
                        else:
                            await ways[way](results[way], calls)

        anyio.run(measure)
    report: dict[str, Any] = {"rows": options.rows, "calls": options.calls, "cpu": cpu_model(),
                              "cores": os.cpu_count(), "ways": {}}
    for way, timings in results.items():
        report["ways"][way] = {}
        for tool, samples in timings.items():
            p50, p95 = percentiles(samples)
            base = percentiles(results["direct"][tool])[0]
            report["ways"][way][tool] = {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2),
                                         "p50_vs_direct": round(p50 / base, 2)}
    if options.json:
        print(json.dumps(report, indent=2))
        return
    print(f"MCP tool calls: {options.calls} sequential calls per tool, tenant holding {options.rows} memories, "
          f"{report['cpu']}, {report['cores']} cores")
    print(f"{'way':<8} {'tool':<9} {'p50 ms':>8} {'p95 ms':>8} {'p50 / direct':>13}")
    for way, tools_report in report["ways"].items():
        for tool, figures in tools_report.items():
            print(f"{way:<8} {tool:<9} {figures['p50_ms']:>8.2f} {figures['p95_ms']:>8.2f} "
                  f"{figures['p50_vs_direct']:>13.2f}")


if __name__ == "__main__":
    main()
