"""The scores computed for every row a search or a maintenance run reads: their values, and their arithmetic.

``extract(epoch from ...)`` returns numeric (PostgreSQL 14 on), and with it ``power`` and the divisions around it
compute in numeric: about 10 µs per call of memsub.combined_score, which semantic_search computes for every hit
(a quarter of a 50-hit search's server time) and hybrid_search for every candidate. The scores are double
precision; they compute their time spans in double precision (``date_part``) too.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from helpers import expect_error

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

# Functions that compute a score per row read, and must not do it in numeric.
PER_ROW_SCORES = ["combined_score", "memory_strength", "hybrid_search"]


def test_per_row_scores_compute_their_time_spans_in_double_precision(db):
    with db.connect() as conn:
        found = dict(conn.execute(
            "select p.proname, p.prosrc from pg_proc p"
            " where p.pronamespace = 'memsub'::regnamespace and p.proname = any(%s)", [PER_ROW_SCORES]).fetchall())
    assert sorted(found) == sorted(PER_ROW_SCORES)
    numeric = [name for name, source in found.items() if "extract(epoch" in " ".join(source.split()).lower()]
    assert numeric == []


def _combined(distance: float, importance: float | None, idle: timedelta, weights: tuple[float, float, float],
              half_life: timedelta) -> float:
    similarity, importance_weight, recency = weights
    return (similarity * max(0.0, 1.0 - distance / 2.0)
            + importance_weight * (0.5 if importance is None else importance)
            + recency * 0.5 ** (max(0.0, idle.total_seconds()) / max(1.0, half_life.total_seconds())))


@pytest.mark.parametrize(("distance", "importance", "idle", "weights", "half_life"), [
    (0.0, 0.5, timedelta(0), (0.7, 0.2, 0.1), timedelta(days=30)),
    (0.37, 0.9, timedelta(days=3, hours=5), (0.7, 0.2, 0.1), timedelta(days=30)),
    (1.2, None, timedelta(days=400), (0.5, 0.25, 0.25), timedelta(days=7)),
    (2.0, 0.1, timedelta(seconds=1.5), (1.0, 0.0, 1.0), timedelta(seconds=1)),
    (0.5, 0.5, -timedelta(days=1), (0.7, 0.2, 0.1), timedelta(hours=12)),  # last active after "now": recency 1
    # 1,080 half-lives: no recency left (PostgreSQL's power(0.5, x) raised an underflow error past about 1,074)
    (0.2, 0.5, timedelta(days=45), (0.7, 0.2, 0.1), timedelta(hours=1)),
    (0.2, 0.5, timedelta(days=400 * 365), (0.7, 0.2, 0.1), timedelta(days=30)),
])
def test_combined_score_is_the_documented_formula(db, distance: float, importance: float | None,
                                                  idle: timedelta, weights: tuple[float, float, float],
                                                  half_life: timedelta) -> None:
    with db.connect() as conn:
        conn.execute("set timezone = 'UTC'")
        # now() is the transaction's start: the idle time is measured from it.
        now = conn.execute("select now()").fetchone()
        assert now is not None
        row = conn.execute("select memsub.combined_score(%s, %s, %s, %s, %s, %s, %s)",
                           [distance, importance, now[0] - idle, *weights, half_life]).fetchone()
    assert row is not None
    assert math.isclose(row[0], _combined(distance, importance, idle, weights, half_life), rel_tol=1e-12)


@pytest.mark.parametrize(("weight", "since_access", "since_creation", "half_life"), [
    (1.0, timedelta(days=7), timedelta(days=30), timedelta(days=7)),
    (0.8, None, timedelta(hours=36), timedelta(days=1)),
    (2.5, timedelta(seconds=0), timedelta(days=1), timedelta(seconds=1)),
    (1.0, -timedelta(hours=1), timedelta(days=1), timedelta(days=7)),  # accessed after "at": full strength
    (1.0, timedelta(days=45), timedelta(days=50), timedelta(hours=1)),  # 1,080 half-lives: none left, no error
])
def test_memory_strength_halves_per_half_life(db, weight: float, since_access: timedelta | None,
                                              since_creation: timedelta, half_life: timedelta) -> None:
    last_access: Any = None if since_access is None else NOW - since_access
    with db.connect() as conn:
        row = conn.execute("select memsub.memory_strength(%s, %s, %s, %s, %s)",
                           [weight, last_access, NOW - since_creation, NOW, half_life]).fetchone()
    assert row is not None
    idle = since_creation if since_access is None else since_access
    expected = weight * 0.5 ** (max(0.0, idle.total_seconds()) / half_life.total_seconds())
    assert math.isclose(row[0], expected, rel_tol=1e-12)


COMBINED_WEIGHTS = ("similarity_weight", "importance_weight", "recency_weight")


def test_combined_score_holds_its_weights_to_0_to_1e100_and_its_inputs_to_1e100(db):
    """combined_score's weights follow hybrid_search's rule (finite, from 0 to 1e100, 22023 naming the weight):
    a negative weight turned a good match into a bad one, and inputs near 1e308 overflowed the score (22003,
    "value out of range: overflow", naming nothing). The distance and importance are finite and at most 1e100 in
    size, so every product stays below 1e201. At the bounds the score is still the formula's."""
    with db.connect("app") as conn:
        now = conn.execute("select now()").fetchone()
        assert now is not None
        row = conn.execute("select memsub.combined_score(-1e100, 1e100, %s, 1e100, 1e100, 1e100)",
                           [now[0]]).fetchone()
        assert row is not None
        assert row[0] == pytest.approx(1e100 * (1 + 5e99) + 1e200 + 1e100, rel=1e-12)
        for weight in COMBINED_WEIGHTS:
            for value in (-0.1, -1e-300, 1.0000001e100, 1e308):
                refused = expect_error(conn, "22023", weight,
                                       f"select memsub.combined_score(0.5, 0.5, now(), p_{weight} => %s)",
                                       [value])
                assert "from 0 to 1e100" in str(refused), refused
            expect_error(conn, "22023", weight, f"select memsub.combined_score(0.5, 0.5, now(), p_{weight} => null)")
        for position, field in ((1, "distance"), (2, "importance")):
            for value in (1.0000001e100, -1.0000001e100, 1e308, -1e308):
                arguments = ["0.5", "0.5"]
                arguments[position - 1] = repr(value)
                refused = expect_error(conn, "22023", field,
                                       f"select memsub.combined_score({', '.join(arguments)}, now(), 10, 10, 10)")
                assert "1e100" in str(refused), refused
