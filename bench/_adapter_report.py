"""What the adapter benchmarks share: alternating rounds, the side-by-side summary and its printed table."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from _vectors import latency_summary

# Operations alternate between the two sides in this many rounds, so drift in the machine's load hits both.
ROUNDS = 4


def rounds(items: Sequence[Any], names: Sequence[str]) -> Iterator[tuple[str, Sequence[Any]]]:
    """(side, chunk of items) in the order to time them: each side does every item once, and the side that goes
    first alternates from round to round."""
    size = max(1, -(-len(items) // ROUNDS))
    for number, start in enumerate(range(0, len(items), size)):
        for name in (names if number % 2 == 0 else list(names)[::-1]):
            yield name, items[start:start + size]


def compare(operation: str, timings: dict[str, list[float]], peer: str) -> dict[str, Any]:
    """One operation's latencies on both sides; ratios are memsub / peer (throughput > 1 and p50 < 1: memsub
    faster)."""
    theirs, ours = latency_summary(timings[peer]), latency_summary(timings["memsub"])
    return {"operation": operation, peer: theirs, "memsub": ours,
            "ratio_ops": ours["ops_per_s"] / theirs["ops_per_s"], "ratio_p50": ours["p50_ms"] / theirs["p50_ms"]}


def render(title: str, environment: str, setup: str, peer: str, results: list[dict[str, Any]]) -> str:
    """The printed report: a title, the machine and server, the setup, then one line per operation."""
    lines = [title, environment, setup, "",
             f"{'operation':32} {'peer p50':>11} {'memsub p50':>11} {'ops ratio':>10} {'p50 ratio':>10}"]
    for row in results:
        lines.append(f"{row['operation']:32} {row[peer]['p50_ms']:>8.2f} ms {row['memsub']['p50_ms']:>8.2f} ms"
                     f" {row['ratio_ops']:>10.2f} {row['ratio_p50']:>10.2f}")
    return "\n".join(lines)
