"""Run every benchmark in order and write their reports into docs/benchmarks.md (what `make bench` calls).

Usage: python bench/run_all.py [--scaling-max 1000000] [--scaling-settings shared_buffers=6GB,...]
                               [--charts docs/charts] [--report docs/benchmarks.md] [--only ingest,scaling]

Each benchmark runs as its own process (its progress goes to the terminal); its report (standard output) is
kept. After every benchmark the section between the two markers below in the report file is rewritten with the
reports gathered so far, the command, the machine and how long each took, so a stopped run keeps what finished.
The rest of the file (the written analysis of earlier runs) is left as it is. A benchmark that fails stops the
run with its exit status.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from _database import cpu_model

BENCH = Path(__file__).resolve().parent
BEGIN = "<!-- bench/run_all.py writes from here to the end marker: do not edit by hand -->"
END = "<!-- bench/run_all.py: end -->"
ORDER = ("ingest", "write_path", "upserts", "session_events", "refresh", "hot_counters", "retrieval", "noisy_neighbour",
         "peer_langgraph", "peer_tenants", "adapter_langgraph_checkpoint", "adapter_langgraph_store",
         "adapter_openai_agents", "adapter_adk", "partitioning", "mcp_calls", "http_load", "graph_forms",
         "semantic_memory", "fused_searches", "read_growth",
         "tune_at_scale", "scaling")


def commands(scaling_max: int, charts: Path) -> dict[str, list[str]]:
    """The command line of each benchmark (bench/<name>.py and its options), in the order they run."""
    options = {"peer_langgraph": ["--out", str(charts)],
               "peer_tenants": ["--kinds", "clustered,uniform,real", "--out", str(charts)],
               "scaling": ["--max", str(scaling_max), "--out", str(charts)]}
    return {name: [sys.executable, str(BENCH / f"{name}.py"), *options.get(name, [])] for name in ORDER}


def machine() -> str:
    return (f"{cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")


def section(started: datetime, argv: list[str], done: list[tuple[str, list[str], float, float, str]]) -> str:
    """The generated part of the report: one fenced block per finished benchmark."""
    total = sum(seconds for _, _, seconds, _, _ in done)
    lines = [BEGIN, "", "## Latest `make bench` run", "",
             f"Started {started:%Y-%m-%d %H:%M} UTC with `python bench/run_all.py {shlex.join(argv)}`; "
             f"{len(done)} benchmark(s) finished, {total:,.0f} s in all. Machine: {machine()}. "
             "Each block is the benchmark's own report, unedited; the sections above explain the figures of "
             "earlier runs.", ""]
    for name, command, seconds, load, output in done:
        shown = " ".join(Path(part).name if part.endswith(".py") else part for part in command[1:])
        lines += [f"### {name} ({seconds:,.0f} s, load average {load:.1f} at the end)", "",
                  f"`python bench/{shown}`", "", "```text",
                  output.rstrip("\n"), "```", ""]
    return "\n".join([*lines, END])


def write_section(report: Path, text: str) -> None:
    """Replace the generated section of `report` (or append one) and leave everything else untouched."""
    current = report.read_text() if report.exists() else "# Benchmarks\n"
    if BEGIN in current and END in current:
        head, rest = current.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        updated = head + text + tail
    else:
        updated = current.rstrip("\n") + "\n\n" + text + "\n"
    report.write_text(updated)


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scaling-max", type=int, default=1_000_000, help="largest scaling checkpoint (packets)")
    parser.add_argument("--scaling-settings", default="",
                        help="server settings for the scaling run only, name=value,... (MEMSUB_BENCH_SETTINGS)")
    parser.add_argument("--charts", type=Path, default=Path("docs/charts"), help="where the JSON and PNGs go")
    parser.add_argument("--report", type=Path, default=Path("docs/benchmarks.md"))
    parser.add_argument("--only", help="comma-separated benchmark names (default: all): " + ", ".join(ORDER))
    args = parser.parse_args(arguments)
    wanted = args.only.split(",") if args.only else list(ORDER)
    unknown = sorted(set(wanted) - set(ORDER))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    if args.scaling_max < 1:
        parser.error("--scaling-max must be positive")
    started = datetime.now(UTC)
    every = commands(args.scaling_max, args.charts)
    done: list[tuple[str, list[str], float, float, str]] = []
    for name in (n for n in ORDER if n in wanted):
        command = every[name]
        print(f"== {name}: {shlex.join(command)}", file=sys.stderr, flush=True)
        clock = time.monotonic()
        env = dict(os.environ)
        if name == "scaling" and args.scaling_settings:
            env["MEMSUB_BENCH_SETTINGS"] = args.scaling_settings
        result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False, env=env)
        sys.stdout.write(result.stdout)
        sys.stdout.flush()
        if result.returncode != 0:
            print(f"== {name} failed with exit status {result.returncode}", file=sys.stderr)
            return result.returncode
        done.append((name, command, time.monotonic() - clock, os.getloadavg()[0], result.stdout))
        write_section(args.report, section(started, arguments, done))
    print(f"== wrote {args.report}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
