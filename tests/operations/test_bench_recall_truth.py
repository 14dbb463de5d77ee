"""The recall benchmarks' ground truth and tenant layout hold at every size: a tenant with no more rows than k
still has a defined recall (every one of its rows must come back), and every named tenant share gets rows."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))  # the benchmarks import their siblings, as when run as scripts

from _vectors import exact_neighbours, recall  # noqa: E402


def _unit(rows: int, seed: int) -> np.ndarray:
    values = np.random.default_rng(seed).standard_normal((rows, 8)).astype(np.float32)
    return values / np.linalg.norm(values, axis=1, keepdims=True)


def test_a_tenant_with_k_or_fewer_rows_expects_all_of_them_nearest_first():
    queries = _unit(3, 2)
    for rows in (1, 4, 10):
        data = _unit(rows, rows)
        truth = exact_neighbours(data, queries, 10)
        scores = queries @ data.T
        assert [sorted(t) for t in truth] == [list(range(rows))] * 3
        assert all(list(t) == sorted(range(rows), key=lambda c, q=q: (-scores[q, c], c)) for q, t in enumerate(truth))
        assert recall([list(t) for t in truth], truth) == 1.0
        assert recall([list(t)[:-1] for t in truth], truth) < 1.0


def test_more_rows_than_k_gives_the_k_nearest():
    data, queries = _unit(50, 1), _unit(4, 3)
    truth = exact_neighbours(data, queries, 10)
    scores = queries @ data.T
    assert [list(t) for t in truth] == [list(np.argsort(-scores[q], kind="stable")[:10]) for q in range(4)]


def test_every_named_tenant_share_holds_rows_at_small_sizes():
    from peer_tenants import SHARES, tenant_layout

    for count in (200, 500, 2000):
        owners = tenant_layout(count)
        assert len(owners) == count
        assert all(owners.count(number) >= 1 for number in range(len(SHARES)))


def test_the_real_corpus_is_distinct_prose_in_a_fixed_order(tmp_path):
    from _corpus import passages

    prose = "This function reads the configuration file and returns the settings it finds there, {}."
    for package in ("alpha", "beta"):
        (tmp_path / package).mkdir()
        body = "\n".join(f'def f{i}():\n    """{prose.format(package + str(i))}\n\n    >>> f{i}()\n    """\n'
                         for i in range(150))
        (tmp_path / package / "module.py").write_text(f'"""{prose.format("shared")}"""\n{body}')
    (tmp_path / "alpha" / "broken.py").write_text("def (:\n")
    found = passages(250, tmp_path)
    assert found == passages(250, tmp_path)
    assert len(found) == len({p.casefold() for p in found}) == 200  # 100 a package, "shared" once
    assert sum(p.endswith("shared.") for p in found) == 1
    assert not any(">>>" in p for p in found)


def test_a_larger_package_share_reaches_more_of_the_corpus(tmp_path):
    from _corpus import passages

    prose = "This function reads the configuration file and returns the settings it finds there, {}."
    for package in ("alpha", "beta"):
        (tmp_path / package).mkdir()
        body = "\n".join(f'def f{i}():\n    """{prose.format(package + str(i))}"""\n' for i in range(150))
        (tmp_path / package / "module.py").write_text(body)
    assert len(passages(250, tmp_path)) == 200  # at most 100 a package at the default share
    assert len(passages(250, tmp_path, package_share=0.6)) == 300  # 150 a package (a file is read whole)
    with pytest.raises(ValueError, match="package_share"):
        passages(250, tmp_path, package_share=0)
