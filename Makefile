# Kiln: thin wrapper around CMake. `make demo` and `make check` work on a fresh machine.
BUILD      ?= build
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
VENV       := .venv
PY         := $(VENV)/bin/python
SYSPY      := /usr/bin/python3
MODELS     := $(BUILD)/models
FUZZ_SECONDS ?= 60
ASAN_BUILD ?= build-asan

.PHONY: all kiln demo check quick test asan fuzz deps venv models bench bench-compile clean format help coverage fuzz-policy

all: kiln

help:
	@echo "make            build build/kiln (release)"
	@echo "make demo       build Kiln, make a small model, run it and check it"
	@echo "make check      install test dependencies and run every test (also under ASan/UBSan)"
	@echo "make quick      build and run unit tests and the node conformance suite only"
	@echo "make fuzz       run the libFuzzer targets for FUZZ_SECONDS each"
	@echo "make bench      Kiln (compiled for the CPU) against ONNX Runtime on the exported models"
	@echo "make bench-compile  compile time and peak memory on generated 2k..20k-node graphs"
	@echo "make mutation   seeded bugs (docs/MUTANTS.md) against kiln fuzz: MUTANTS=\"1 5\" MUTATION_SECONDS=60"
	@echo "make fuzz-policy  the bandit policy against uniform drawing: edges and cells reached in the same time"
	@echo "make coverage   line/branch coverage of src/ after a kiln fuzz campaign in a coverage build:"
	@echo "                COVERAGE_SECONDS=600 COVERAGE_SEED=7 (the issue's figure: COVERAGE_SECONDS=1800)"

kiln:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target kiln_cli

demo: kiln
	@$(SYSPY) scripts/demo.py --kiln $(BUILD)/kiln --out $(BUILD)/demo

# ---- test dependencies: Debian packages and a pinned Python environment ----
APT_PKGS := python3-venv python3-torch python3-torchvision clang clang-format libclang-rt-14-dev
deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null; \
	fi
	@$(MAKE) --no-print-directory venv

venv: $(VENV)/.done
$(VENV)/.done: requirements-test.txt
	@echo "creating $(VENV) with requirements-test.txt"
	@$(SYSPY) -m venv $(VENV)
	@$(PY) -m pip install -q --disable-pip-version-check -r requirements-test.txt
	@touch $@

ONNX_DATA = $(shell $(PY) -c "import onnx,os;print(os.path.join(os.path.dirname(onnx.__file__),'backend','test','data'))" 2>/dev/null)

models: kiln
	@$(SYSPY) scripts/export_models.py --out $(MODELS)

check: deps
	@$(MAKE) --no-print-directory models
	@bash tests/run_checks.sh "$(ONNX_DATA)" "$(abspath $(MODELS))" $(FUZZ_SECONDS)

# Kiln against ONNX Runtime on the exported models, 2 threads each (a table, no pass/fail).
BENCH_THREADS ?= 2
bench: deps kiln
	@[ -f $(MODELS)/resnet50/model.onnx ] || $(MAKE) --no-print-directory models
	@$(PY) bench/run_bench.py --kiln $(BUILD)/kiln --models $(MODELS) --threads $(BENCH_THREADS)

# Compile-time scaling on generated transformer-style graphs (a table, no pass/fail; not part
# of `make check`): time without the C compiler, peak memory, growth per doubling of N.
bench-compile: venv kiln
	@$(PY) bench/compile_scaling.py --kiln $(BUILD)/kiln

quick: kiln
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L quick

fuzz:
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKILN_FUZZ=ON -DCMAKE_C_COMPILER=clang \
	  -DKILN_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@cd $(FUZZ_BUILD) && ctest --output-on-failure -L fuzz

# Seeded bugs against `kiln fuzz` (scripts/mutation.sh; MUTANTS, MUTATION_SECONDS, MUTATION_SEED).
.PHONY: mutation
mutation:
	@bash scripts/mutation.sh

format:
	@bash scripts/check_format.sh --fix

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

# Line and branch coverage of each folder of src/ after a `kiln fuzz` campaign of fixed time in
# a KILN_COVERAGE build (scripts/coverage.sh; docs/VERIFY.md "Coverage"). Not part of check.
# The issue's figure is taken with COVERAGE_SECONDS=1800.
COVERAGE_SECONDS ?= 600
COVERAGE_SEED ?= 7
coverage:
	@COVERAGE_SECONDS=$(COVERAGE_SECONDS) COVERAGE_SEED=$(COVERAGE_SEED) PYTHON=$(SYSPY) \
	  bash scripts/coverage.sh

# The learned policy of kiln fuzz against uniform drawing, same seeds and time, in the coverage
# build (scripts/policy_compare.sh; POLICY_SECONDS, POLICY_SEEDS). A table, no pass/fail.
fuzz-policy:
	@bash scripts/policy_compare.sh
