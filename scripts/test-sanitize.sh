#!/usr/bin/env bash
# Sanitizer CI step (issue 16), called by .ci/run after scripts/test.sh:
#  1. builds the CPU code (no CUDA) with clang, -fsanitize=address,undefined -fno-sanitize-recover=all
#     (-O1 -g, plus libFuzzer's coverage instrumentation) in its own build dir, with the fuzz targets;
#  2. runs the whole CPU test suite (ctest -L cpu) under ASAN/UBSAN — the first report fails the test;
#  3. runs each fuzz target (tests/fuzz/*_fuzz.cpp) for a bounded time from a fixed seed corpus
#     (committed seeds + ones generated here from the demo model, the ONNX node suite and the photos)
#     with -rss_limit_mb=1024 -timeout=10 -seed=1; any crash, sanitizer report, leak, hang over 10 s
#     or RSS over 1024 MB fails the step, leaving the input in $BUILD/fuzz-findings/.
#
#   scripts/test-sanitize.sh [all|build|test|fuzz]   (default all)
# Environment: WS_ASAN_BUILD_DIR (default build-asan), WS_FUZZ_SECONDS (per target, default 60),
#   WS_FUZZ_TARGETS (space-separated subset), WS_FUZZ_CORPUS_DIR (default $BUILD/fuzz-corpus; a long
#   campaign keeps it between runs), WS_FUZZ_ARGS (extra libFuzzer flags, e.g. -runs=10000000 -jobs=2).
# Needs clang and libclang-rt-14-dev (libFuzzer, sanitizer runtimes): scripts/install-deps.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${WS_ASAN_BUILD_DIR:-$ROOT/build-asan}"
STEP="${1:-all}"
FUZZ_SECONDS="${WS_FUZZ_SECONDS:-60}"
log() { printf '[test-sanitize] %s\n' "$*"; }

export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"

build() {
  command -v clang++ >/dev/null || { echo "clang++ not found: run scripts/install-deps.sh" >&2; exit 2; }
  local flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize=fuzzer-no-link"
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  log "configure $BUILD (clang, ASAN+UBSAN, CPU only, fuzz targets)"
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -DWS_ENABLE_CUDA=OFF -DWS_BUILD_FUZZERS=ON \
    -DCMAKE_BUILD_TYPE=Debug "${launcher[@]}" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
  cmake --build "$BUILD" -j"$(nproc)"
}

run_tests() {
  log "ctest -L cpu under ASAN+UBSAN"
  (cd "$BUILD" && ctest -L cpu --output-on-failure -j"$(nproc)" --timeout 1500)
}

# Seed corpora: committed seeds (tests/fuzz/seeds, tests/data/hostile, tests/data/bench) plus
# generated ones; the generated set is the same on every run (fixed files, sorted selection).
make_seeds() {
  local gen="$BUILD/fuzz-seeds"
  rm -rf "$gen" && mkdir -p "$gen/onnx" "$gen/pb" "$gen/image"
  "$BUILD/warpstream" make-demo-model "$gen/onnx/demo-seed1.onnx" --seed 1 >/dev/null
  "$BUILD/warpstream" make-demo-model "$gen/onnx/demo-seed2.onnx" --seed 2 >/dev/null
  local suite=/usr/share/libonnx-testdata/data/node
  if [ -d "$suite" ]; then
    # Node-suite models of the ops the engine supports, and their small input/output tensors.
    local pat='^test_(conv|maxpool|averagepool|globalaveragepool|pad|reshape|transpose|concat|gemm|matmul|softmax|flatten|squeeze|unsqueeze|clip|relu|sigmoid|hardsigmoid|hardswish|batchnorm|add|sub|mul|div|dropout|identity|shape)'
    local d
    for d in $(ls "$suite" | grep -E "$pat" | sort); do
      [ -f "$suite/$d/model.onnx" ] && cp "$suite/$d/model.onnx" "$gen/onnx/$d.onnx"
      for f in "$suite/$d"/test_data_set_0/*.pb; do
        [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 16384 ] && cp "$f" "$gen/pb/$d-$(basename "$f")"
      done
    done
  fi
  local cache="${WS_CACHE_DIR:-$HOME/.cache/warpstream}"
  if [ -d "$cache/images" ]; then
    find "$cache/images" -maxdepth 1 -type f \( -name '*.png' -o -name '*.jpg' -o -name '*.jpeg' \) -size -200k \
      | sort | head -4 | while read -r f; do cp "$f" "$gen/image/"; done
  fi
}

seed_dirs() {  # target -> its seed directories
  case "$1" in
    onnx_import_fuzz|onnx_structure_fuzz)
      echo "$ROOT/tests/fuzz/seeds/onnx $ROOT/tests/data/hostile $BUILD/fuzz-seeds/onnx" ;;
    tensor_proto_fuzz) echo "$ROOT/tests/fuzz/seeds/pb $BUILD/fuzz-seeds/pb" ;;
    image_fuzz) echo "$ROOT/tests/fuzz/seeds/image $BUILD/fuzz-seeds/image" ;;
    bench_report_fuzz) echo "$ROOT/tests/fuzz/seeds/bench $ROOT/tests/data/bench" ;;
    *) echo "$ROOT/tests/fuzz/seeds/${1%_fuzz}" ;;
  esac
}

fuzz() {
  make_seeds
  local corpus_root="${WS_FUZZ_CORPUS_DIR:-$BUILD/fuzz-corpus}"
  local findings="$BUILD/fuzz-findings"
  mkdir -p "$findings"
  local targets="${WS_FUZZ_TARGETS:-$(cd "$BUILD/tests/fuzz" && ls *_fuzz 2>/dev/null | sort)}"
  [ -n "$targets" ] || { echo "no fuzz targets in $BUILD/tests/fuzz" >&2; exit 1; }
  local failed=() t
  for t in $targets; do
    local corpus="$corpus_root/$t"
    mkdir -p "$corpus"
    local seeds=() d
    for d in $(seed_dirs "$t"); do [ -d "$d" ] && seeds+=("$d"); done
    log "fuzz $t for ${FUZZ_SECONDS}s (seeds: ${seeds[*]:-none})"
    local rc=0
    # The first directory is the working corpus (new inputs go there); seeds are read only.
    # -max_len: models and reports can be larger than libFuzzer's 4096-byte default.
    # allocator_release_to_os_interval_ms: ASAN's allocator keeps freed pages, so over millions of inputs with
    # multi-MiB constants and arenas the process RSS creeps past the 1024 MB bound while the live heap stays small
    # (onnx_structure_fuzz, 2026-12-02: out-of-memory at 7.96 M executions with 35 MB live + 60 MB quarantined);
    # returning freed pages every second makes the RSS bound measure what the library holds.
    ASAN_OPTIONS="$ASAN_OPTIONS:allocator_release_to_os_interval_ms=1000" \
    "$BUILD/tests/fuzz/$t" "$corpus" "${seeds[@]}" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=1024 \
      -malloc_limit_mb=1024 -timeout=10 -seed=1 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$findings/$t-" ${WS_FUZZ_ARGS:-} > "$BUILD/fuzz-$t.log" 2>&1 || rc=$?
    grep -E '^stat::(number_of_executed_units|peak_rss_mb|new_units_added)|^#[0-9]+.*DONE' "$BUILD/fuzz-$t.log" | sed "s/^/[test-sanitize]   /" || true
    if [ $rc -ne 0 ]; then
      log "FINDING in $t (exit $rc); log $BUILD/fuzz-$t.log, inputs:"
      ls "$findings" | grep "^$t-" | sed 's/^/    /' || true
      grep -E 'ERROR|runtime error|SUMMARY|==[0-9]+==' "$BUILD/fuzz-$t.log" | head -20 || true
      failed+=("$t")
    fi
  done
  if [ ${#failed[@]} -ne 0 ]; then
    log "fuzz step FAILED: ${failed[*]}"
    exit 1
  fi
  log "fuzz step passed: $targets"
}

case "$STEP" in
  build) build ;;
  test) run_tests ;;
  fuzz) fuzz ;;
  all) build; run_tests; fuzz ;;
  *) echo "usage: scripts/test-sanitize.sh [all|build|test|fuzz]" >&2; exit 2 ;;
esac
