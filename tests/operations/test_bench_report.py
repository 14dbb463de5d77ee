"""make bench rewrites only its own section of docs/benchmarks.md, and keeps every finished report."""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _run_all() -> ModuleType:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))  # run_all imports its sibling _database, as when run as a script
    spec = importlib.util.spec_from_file_location("bench_run_all", BENCH / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_section_is_replaced_and_the_written_analysis_kept(tmp_path):
    run_all = _run_all()
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\nWritten analysis.\n")
    started = datetime(2026, 1, 1, tzinfo=UTC)
    first = [("ingest", [sys.executable, "bench/ingest.py"], 12.0, 1.5, "write_packet 805/s\n")]
    run_all.write_section(report, run_all.section(started, [], first))
    report.write_text(report.read_text() + "\nA closing paragraph.\n")
    second = [*first, ("scaling", [sys.executable, "bench/scaling.py", "--max", "10"], 3.0, 0.5, "10 packets\n")]
    run_all.write_section(report, run_all.section(started, ["--scaling-max", "10"], second))
    text = report.read_text()
    assert text.startswith("# Benchmarks\n\nWritten analysis.\n")
    assert text.endswith("\nA closing paragraph.\n")
    assert text.count(run_all.BEGIN) == 1 and text.count(run_all.END) == 1
    assert "write_packet 805/s" in text and "### scaling (3 s, load average 0.5 at the end)" in text
    assert "`python bench/scaling.py --max 10`" in text
    assert "2 benchmark(s) finished" in text


def test_an_unknown_benchmark_name_is_refused(capsys):
    with pytest.raises(SystemExit) as raised:
        _run_all().main(["--only", "ingest,nonsense"])
    assert raised.value.code == 2
    assert "unknown benchmark(s): nonsense" in capsys.readouterr().err
