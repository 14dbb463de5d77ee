# memsub — every target creates its own virtualenv; only Python 3.11, make and git are assumed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
CHARTS := docs/charts
# Largest scaling checkpoint (packets); 1M took about 2 hours on two cores: make bench SCALING_MAX=300000
SCALING_MAX ?= 1000000
# Server settings of the scaling run's private cluster: a million 384-d vectors and their HNSW graph need more
# than the default 128MB of shared buffers. Needs about 8 GB of free RAM; make bench SCALING_SETTINGS= for defaults.
SCALING_SETTINGS ?= shared_buffers=6GB,max_wal_size=8GB,effective_cache_size=16GB
# make soak runs the crash, load and fuzz tests this many times longer than make test (crash rounds, seconds of
# mixed load, hypothesis examples), then the full policy mutation run.
SOAK_FACTOR ?= 20
SOAK_TESTS := tests/operations/test_reliability.py tests/operations/test_concurrency.py \
              tests/foundation/test_fuzz_functions.py tests/foundation/test_fuzz_packets.py \
              tests/foundation/test_row_security.py tests/foundation/test_tenant_world.py

.PHONY: install test lint demo bench soak mutation catalog-snapshot schema clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,embed,langgraph,openai-agents,adk,http,mcp]'
	touch $(STAMP)

install: $(STAMP)

lint: install
	$(BIN)/ruff check python tests bench
	$(BIN)/mypy
	$(BIN)/python -m memsub.sqllint sql migrations

# The suite waits on its server as much as it computes: two workers (each with its own cluster) keep both cores
# busy. A file's tests stay in one worker, so its module fixtures are built once.
TEST_WORKERS ?= 2

test: lint
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile

# Without a configured server the demo uses an embedded cluster in this checkout (.memsub/pgdata), never the
# per-user one another checkout may be using; it stops that cluster again when it had to start it.
demo: install
	MEMSUB_DATA_DIR="$${MEMSUB_DATA_DIR:-$(CURDIR)/.memsub/pgdata}" $(BIN)/python -m memsub.demo

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

# Every benchmark in bench/, in turn; their reports go into docs/benchmarks.md, the charts into docs/charts.
bench: $(BENCH_STAMP)
	$(BIN)/python bench/run_all.py --scaling-max $(SCALING_MAX) --scaling-settings '$(SCALING_SETTINGS)' \
		--charts $(CHARTS) --report docs/benchmarks.md

# Break each row-level security policy in turn (drop it, then weaken it to true) and require a failing test.
mutation: install
	$(BIN)/python tests/policy_mutation.py

soak: install
	MEMSUB_SOAK_FACTOR=$(SOAK_FACTOR) $(BIN)/pytest -q $(SOAK_TESTS)
	$(BIN)/python tests/policy_mutation.py

# The expected catalog `memsub verify` compares with, taken from a fresh installation on a throwaway cluster.
# tests/operations/test_verify_tampering.py fails while it is stale: run this after changing sql/ or migrations/.
catalog-snapshot: install
	$(BIN)/python -m memsub.catalog_check

# The committed current schema (schema/memsub.sql, a normalized pg_dump) and the SQL API reference
# (docs/sql-reference.md), from a fresh installation on a throwaway cluster;
# tests/operations/test_generated_docs.py fails while they are stale. Run after changing sql/ or migrations/, with catalog-snapshot.
schema: install
	$(BIN)/python -m memsub.schema_docs

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
