"""PNG charts for the benchmarks (matplotlib, no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

MARKERS = ("o", "s", "^", "D", "v", "P")


def _save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_recall_latency(series: dict[str, tuple[Sequence[float], Sequence[float], Sequence[int]]], path: Path,
                        title: str) -> Path:
    """One curve per system: p50 latency (x) against recall (y), each point labelled with its ef_search."""
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for n, (name, (latency, recalls, labels)) in enumerate(series.items()):
        ax.plot(latency, recalls, marker=MARKERS[n % len(MARKERS)], label=name)
        for x, y, label in zip(latency, recalls, labels, strict=True):
            ax.annotate(str(label), (x, y), textcoords="offset points", xytext=(4, -10 if n else 5), fontsize=8)
    ax.set_xlabel("p50 latency per query (ms)")
    ax.set_ylabel("recall@10 vs exact")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return _save(fig, path)


def plot_clients(series: dict[str, Sequence[tuple[int, float]]], path: Path, title: str) -> Path:
    """Throughput (y) against the number of clients (x), one line per system."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for n, (name, points) in enumerate(series.items()):
        ax.plot([p[0] for p in points], [p[1] for p in points], marker=MARKERS[n % len(MARKERS)], label=name)
    ax.set_xlabel("clients (one connection each)")
    ax.set_ylabel("operations per second")
    ax.set_xticks(sorted({p[0] for points in series.values() for p in points}))
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return _save(fig, path)


def plot_versus_size(series: dict[str, Sequence[tuple[int, float]]], path: Path, title: str, ylabel: str,
                     xlabel: str = "packets in packet_store", log_y: bool = True) -> Path:
    """Values (y) against data size (x, log scale), one line per series."""
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for n, (name, points) in enumerate(series.items()):
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker=MARKERS[n % len(MARKERS)], label=name)
    ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)
