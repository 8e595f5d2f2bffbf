#!/usr/bin/env bash
# Runs every test phase of `make check` and ends with one line "N passed, N failed"
# that sums the ctest results of all phases.
#   tests/run_checks.sh ONNX_DATA MODELS_DIR FUZZ_SECONDS
set -uo pipefail
onnx_data=$1 models=$2 fuzz_seconds=$3
jobs=$(nproc 2>/dev/null || echo 2)
passed=0 failed=0 log=$(mktemp)

phase() { # phase TITLE BUILD_DIR CTEST_ARGS...
  local title=$1 dir=$2; shift 2
  echo "== $title =="
  (cd "$dir" && ctest --output-on-failure -j "$jobs" "$@") 2>&1 | tee "$log"
  local line p f
  line=$(grep -E "tests passed, [0-9]+ tests failed out of" "$log" | tail -1)
  if [ -z "$line" ]; then
    echo "phase '$title' ran no test"; failed=$((failed + 1)); return
  fi
  f=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/')
  p=$(( $(echo "$line" | sed -E 's/.*out of ([0-9]+).*/\1/') - f ))
  passed=$((passed + p)) failed=$((failed + f))
}

configure() { # configure BUILD_DIR CMAKE_ARGS...
  local dir=$1; shift
  cmake -S . -B "$dir" "$@" >/dev/null && cmake --build "$dir" -j "$jobs" 2>&1 | grep -v "^\[" 
  return "${PIPESTATUS[0]}"
}

if configure build -DCMAKE_BUILD_TYPE=Release -DKILN_ONNX_DATA="$onnx_data" -DKILN_MODELS="$models"; then
  # Benchmarks (label "bench") print speeds and check nothing: they run in `make bench`.
  phase "release build: unit tests, conformance suites (interpreter, optimized graph, tile IR, compiled C), exported models, malformed models" \
    build -LE bench
else
  echo "release build failed"; failed=$((failed + 1))
fi

if configure build-asan -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON -DKILN_ONNX_DATA="$onnx_data"; then
  phase "AddressSanitizer + UndefinedBehaviorSanitizer: unit tests, conformance (all backends), malformed" \
    build-asan -L asan
else
  echo "sanitizer build failed"; failed=$((failed + 1))
fi

if configure build-fuzz -DCMAKE_BUILD_TYPE=Debug -DKILN_FUZZ=ON -DCMAKE_C_COMPILER=clang \
     -DKILN_FUZZ_SECONDS="$fuzz_seconds" -DKILN_ONNX_DATA="$onnx_data"; then
  phase "libFuzzer targets, ${fuzz_seconds}s each" build-fuzz -L fuzz
else
  echo "fuzz build failed"; failed=$((failed + 1))
fi

rm -f "$log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
