"""``memsub maintain`` (every task, then a refresh of the views and a concurrent rebuild of the content vector
index) runs again and again while application threads of several tenants write and read as ordinary logins:
the applications see no error but the documented, retryable ConflictError, no wrong answer and no hang;
maintenance itself fails nowhere; afterwards the installation verifies clean, every thread replays completely
by cursor, no expired packet is served, memory versions are contiguous and the counts are what the
applications were told (bench/maintain_under_traffic.py is the longer run, with latency figures)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))  # the benchmarks import their siblings, as when run as scripts

from maintain_under_traffic import soak  # noqa: E402


def test_maintenance_beside_applications_of_several_tenants_breaks_nothing(db384: Any) -> None:
    report = soak(db384.dsn(), db384.dsn("app"), db384.dsn("platform_admin"), apps=4, tenants=2, seconds=6,
                  gap=0.05)
    assert report["hung"] == []
    assert report["error_count"] == 0, report["errors"]
    assert report["wrong"] == []
    # The only conflicts: two threads of a tenant writing the same memory key after reading the same version.
    assert {call.split(":")[0] for call in report["conflicts"]} <= {"memory_write"}, report["conflict_samples"]
    assert all(call.endswith(": 40001") for call in report["conflicts"]), report["conflicts"]
    failed = {step: figures["errors"] for step, figures in report["maintenance"].items() if figures["not_ok"]}
    assert failed == {}
    assert set(report["maintenance"]) >= {"purge_expired", "learn_importance", "memory_maintenance",
                                          "refresh_memory_views", "summaries_due", "tune_search",
                                          "refresh_memory_views()", "vector_index_rebuild"}, report["maintenance"]
    assert report["calls"] > 100
    assert report["invariants"] == []
