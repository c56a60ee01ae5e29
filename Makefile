# drainwatch: the two commands a newcomer needs are `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STACK := $(PY) deploy/local/stack.py

.PHONY: venv demo demo-live test test-unit lint browser slurm stack-start stack-stop stack-status grafana-ui bench clean

# The compiled Moab tokenizer and drain accountant loops (native/: Rust, PyO3, built by maturin
# from crates.io) where a Rust toolchain is (rustup's ~/.cargo/bin counts); without one the
# replay uses polars' reader and numpy, with the same results.
$(VENV)/.installed: pyproject.toml native/Cargo.toml native/pyproject.toml $(wildcard native/src/*.rs)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@export PATH="$$PATH:$$HOME/.cargo/bin"; if command -v cargo >/dev/null; then \
	  echo "venv: building the compiled tokenizer (native/)"; $(PY) -m pip install -q ./native; \
	else echo "venv: no Rust toolchain: native/ not built; the replay uses polars' reader"; fi
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(PY) -m streams.demo

# The live pipeline (shipper -> Kafka -> worker -> InfluxDB) on the local stack, beside the replay.
demo-live: venv
	$(PY) -m streams.demo_live

# Headless Chromium for the report's browser test (tests/streams/report): Debian's package,
# installed only when missing (needs root; elsewhere install it by hand or the test is skipped).
browser:
	@command -v chromium >/dev/null || { export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q && apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core; }

# Debian's Slurm (slurmctld, slurmd, client, munge) for the real-Slurm test of `ship slurm`
# (tests/integration/test_ship_slurm.py starts a loopback cluster with deploy/local/slurm.py);
# installed only when missing (needs root; elsewhere that test is skipped, saying why).
slurm:
	$(PYTHON) deploy/local/slurm.py install || echo "slurm: not installed: the real-Slurm test will be skipped"

# Whole suite against the real local stack; the stack is stopped afterwards, logs kept on failure.
test: venv browser slurm
	$(PYTHON) deploy/local/grafana_ui.py build || echo "grafana-ui: not built: the dashboards' browser tests will be skipped (log: .drainwatch/logs/build-grafana-ui.log)"
	$(STACK) start
	set -o pipefail; rc=0; DRAINWATCH_REQUIRE_STACK=1 $(PY) -m pytest -q || rc=$$?; \
	  $(STACK) stop --keep-logs-if $$rc; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit $$rc

test-unit: venv
	$(PY) -m pytest -q -m 'not integration'

# ruff (lint + format) everywhere, mypy strict on models/ and checked on streams/ (pyproject.toml)
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

stack-start: venv
	$(STACK) start
stack-stop: venv
	$(STACK) stop
stack-status: venv
	$(STACK) status

# Grafana's web UI for the local stack's Grafana (deploy/local/grafana_ui.py): Yarn and webpack
# from the npm registry, once (~4 min on 2 cores, ~4.5 GB); the stack's Grafana serves it from its
# next start. Standard library only, like stack.py. FORCE=1 rebuilds.
grafana-ui:
	$(PYTHON) deploy/local/grafana_ui.py build $(if $(FORCE),--force)

bench: venv
	$(PY) bench/bench_replay.py
	$(PY) bench/bench_simulate.py --out bench/out/simulate
	$(PY) bench/bench_samples.py
	$(PY) bench/bench_sampler_overhead.py --pairs 0
	$(PY) bench/bench_jobevents_parse.py
	$(PY) bench/bench_slurmnodes.py
	$(PY) bench/bench_report.py
	if [ -f bench/bench_jobs.py ]; then $(PY) bench/bench_jobs.py; fi

clean:
	rm -rf $(VENV) .drainwatch build *.egg-info
