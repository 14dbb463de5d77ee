"""Synthetic embeddings with the structure of real ones, and the helpers both vector benchmarks share.

Uniform random vectors in 384 dimensions have no neighbourhoods: every point is about equally far from every
other, which is the worst case for any approximate index and nothing like text embeddings. These are drawn from
a mixture of Gaussian clusters (topics) and normalized, so nearest neighbours mean something; queries come from
the same mixture. Exact neighbours are computed with numpy (cosine distance), the ground truth for recall.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np


class VectorSource:
    """Clustered unit vectors: ``draw(n)`` returns float32 rows rounded to 6 decimals (exactly what is stored)."""

    def __init__(self, dimension: int, clusters: int = 200, spread: float = 0.6, seed: int = 11) -> None:
        self.rng = np.random.default_rng(seed)
        self.dimension = dimension
        self.spread = spread
        self.centers = self.rng.standard_normal((clusters, dimension)).astype(np.float32)

    def draw(self, count: int) -> np.ndarray:
        which = self.rng.integers(0, len(self.centers), count)
        noise = self.rng.standard_normal((count, self.dimension)).astype(np.float32)
        rows = self.centers[which] + self.spread * noise
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        return np.round(rows, 6).astype(np.float32)


def exact_neighbours(data: np.ndarray, queries: np.ndarray, k: int) -> list[list[int]]:
    """Row numbers of the k nearest data rows by cosine distance, for each query (ties by row number); all rows,
    nearest first, when there are no more than k (a search must then return every one of them)."""
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    take = min(k, len(unit))
    result: list[list[int]] = []
    for start in range(0, len(queries), 64):
        block = queries[start:start + 64]
        block = block / np.linalg.norm(block, axis=1, keepdims=True)
        scores = block @ unit.T
        top = np.argpartition(-scores, take - 1, axis=1)[:, :take]
        for row, candidates in enumerate(top):
            ordered = candidates[np.lexsort((candidates, -scores[row, candidates]))]  # by distance, then row
            result.append([int(c) for c in ordered])
    return result


def recall(found: Sequence[Sequence[object]], truth: Sequence[Sequence[object]]) -> float:
    """Mean share of the true k neighbours that a search returned."""
    shares = [len(set(f) & set(t)) / len(t) for f, t in zip(found, truth, strict=True) if t]
    return statistics.fmean(shares) if shares else float("nan")


def vector_text(vector: np.ndarray) -> str:
    """pgvector / JSON text of a vector."""
    return "[" + ",".join(f"{x:.6f}" for x in vector.tolist()) + "]"


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (share in [0, 1]) of a non-empty sequence."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))
    return ordered[index]


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """p50 / p95 in milliseconds and operations per second (sequential: count / total time)."""
    total = sum(seconds)
    return {"p50_ms": percentile(seconds, 0.50) * 1000, "p95_ms": percentile(seconds, 0.95) * 1000,
            "ops_per_s": len(seconds) / total if total > 0 else float("inf"), "count": len(seconds)}
