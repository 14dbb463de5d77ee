"""What the adapter benchmarks share: alternating timed rounds, the side-by-side summary, its printed table and the
command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from _vectors import latency_summary

# Operations alternate between the two sides in this many rounds, so drift in the machine's load hits both. With
# four rounds, one side's stall (a checkpoint, another process) weighed on a quarter of its calls, and the same
# code's ratio moved by a third from run to run; twenty rounds also give the paired ratio (compare) its samples.
ROUNDS = 20


def round_size(count: int) -> int:
    """How many items each side does in one round."""
    return max(1, -(-count // ROUNDS))


def rounds(items: Sequence[Any], names: Sequence[str]) -> Iterator[tuple[str, Sequence[Any]]]:
    """(side, chunk of items) in the order to time them: each side does every item once, and the side that goes
    first alternates from round to round."""
    size = round_size(len(items))
    for number, start in enumerate(range(0, len(items), size)):
        for name in (names if number % 2 == 0 else list(names)[::-1]):
            yield name, items[start:start + size]


async def time_sides_async(items: Sequence[Any],
                           sides: dict[str, Callable[[Any], Awaitable[Any]]]) -> dict[str, list[float]]:
    """Each side's latency (seconds) for every item, the sides taking turns in rounds."""
    timings: dict[str, list[float]] = {name: [] for name in sides}
    for name, chunk in rounds(items, list(sides)):
        for item in chunk:
            began = time.perf_counter()
            await sides[name](item)
            timings[name].append(time.perf_counter() - began)
    return timings


def time_sides(items: Sequence[Any], sides: dict[str, Callable[[Any], Any]]) -> dict[str, list[float]]:
    """time_sides_async for blocking calls (the coroutine around each call costs the same on both sides)."""
    def awaitable(call: Callable[[Any], Any]) -> Callable[[Any], Awaitable[Any]]:
        async def wrapped(item: Any) -> Any:
            return call(item)
        return wrapped

    return asyncio.run(time_sides_async(items, {name: awaitable(call) for name, call in sides.items()}))


def time_sides_with_cpu(items: Sequence[Any], sides: dict[str, Callable[[Any], Any]],
                        cpu: dict[str, Callable[[], float] | None]
                        ) -> tuple[dict[str, list[float]], dict[str, float] | None]:
    """time_sides, and each side's server CPU per call: ``cpu`` reads each side's server process (one process a
    side, which runs nothing else meanwhile), before and after all the rounds, so the timings carry no reads.
    None when a side's process cannot be read (a server on another machine)."""
    readers = {name: cpu.get(name) for name in sides}
    if any(read is None for read in readers.values()):
        return time_sides(items, sides), None
    started = {name: read() for name, read in readers.items() if read is not None}
    timings = time_sides(items, sides)
    return timings, {name: (read() - started[name]) / len(timings[name])
                     for name, read in readers.items() if read is not None}


def compare(operation: str, timings: dict[str, list[float]], peer: str,
            cpu_per_call: dict[str, float] | None = None) -> dict[str, Any]:
    """One operation's latencies on both sides; ratios are memsub / peer (throughput > 1 and p50 < 1: memsub
    faster). With each side's server CPU per call (seconds), also that in ms and its ratio (< 1: memsub uses
    less)."""
    theirs, ours = latency_summary(timings[peer]), latency_summary(timings["memsub"])
    row = {"operation": operation, peer: theirs, "memsub": ours,
           "ratio_ops": ours["ops_per_s"] / theirs["ops_per_s"], "ratio_p50": ours["p50_ms"] / theirs["p50_ms"],
           "ratio_ops_paired": paired_ratio(timings[peer], timings["memsub"])}
    if cpu_per_call is not None:
        theirs["server_cpu_ms"], ours["server_cpu_ms"] = cpu_per_call[peer] * 1000, cpu_per_call["memsub"] * 1000
        row["ratio_cpu"] = cpu_per_call["memsub"] / cpu_per_call[peer]
    return row


def paired_ratio(theirs: Sequence[float], ours: Sequence[float]) -> float:
    """The median, over the rounds, of the peer's time for a round's items divided by memsub's time for the same
    items in the same round (> 1: memsub is faster): each round's two sides ran back to back, so a stall of the
    machine weighs on one round's ratio instead of on a side's whole total."""
    size = round_size(len(theirs))
    return statistics.median(sum(theirs[start:start + size]) / sum(ours[start:start + size])
                             for start in range(0, len(theirs), size) if sum(ours[start:start + size]) > 0)


def render(title: str, environment: str, setup: str, peer: str, results: list[dict[str, Any]]) -> str:
    """The printed report: a title, the machine and server, the setup, then one line per operation (with the
    server CPU per call of each side and their ratio when the rows carry them)."""
    cpu = all("ratio_cpu" in row for row in results)
    header = (f"{'operation':32} {'peer p50':>11} {'memsub p50':>11} {'ops ratio':>10} {'paired':>7}"
              f" {'p50 ratio':>10}")
    lines = [title, environment, setup, "",
             header + (f" {'peer CPU':>11} {'memsub CPU':>11} {'CPU ratio':>10}" if cpu else "")]
    for row in results:
        line = (f"{row['operation']:32} {row[peer]['p50_ms']:>8.2f} ms {row['memsub']['p50_ms']:>8.2f} ms"
                f" {row['ratio_ops']:>10.2f} {row['ratio_ops_paired']:>7.2f} {row['ratio_p50']:>10.2f}")
        if cpu:
            line += (f" {row[peer]['server_cpu_ms']:>8.3f} ms {row['memsub']['server_cpu_ms']:>8.3f} ms"
                     f" {row['ratio_cpu']:>10.2f}")
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None, doc: str, counts: dict[str, int], run: Callable[..., dict[str, Any]],
         render: Callable[[dict[str, Any]], str]) -> int:
    """An adapter benchmark's command line: one --NAME option per count (with its default) and --json; prints the
    report of ``run(**counts)``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name, default in counts.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = vars(parser.parse_args(argv))
    report = run(**{name: args[name] for name in counts})
    print(json.dumps(report, indent=2) if args["json"] else render(report))
    return 0
