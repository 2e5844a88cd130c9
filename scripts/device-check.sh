#!/usr/bin/env bash
# One device call for the whole GPU test suite: build (sm_90, Release), every GPU test (label gpu),
# compute-sanitizer memcheck / racecheck / synccheck over the GPU tests, and a short table last.
# The heavy benchmarks have their own scripts: device-check-gemm.sh (campaigns), device-check-flow.sh
# (h2d + overlap), device-check-lanes.sh (kernel timings).
# Run ON the device machine from the repo root, .debs carried (scripts/device-deps.sh here first):
#   run(command="bash scripts/device-check.sh", carry=[".debs"])
# Writes under $OUT: summary.txt, gpu-tests.txt, sanitizers.txt, env.txt.
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/device-check-out}
mkdir -p "$OUT"
SUM=$OUT/summary.txt
: > "$SUM"
row() { printf '%-40s %s\n' "$1" "$2" | tee -a "$SUM"; }
elapsed() { echo $(( $(date +%s) - START )); }
trap 'echo; echo "==== summary ($(elapsed) s) ===="; cat "$SUM"' EXIT

source scripts/device-env.sh
{ date -u; nvidia-smi; nvcc --version; git rev-parse HEAD 2>/dev/null; } > "$OUT/env.txt" 2>&1
row "gpu" "$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | head -1)"
row "commit" "$(git rev-parse --short HEAD 2>/dev/null) (+ working tree as carried)"
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/configure.txt" 2>&1
row "configure" "rc=$?"
timeout 400 ninja -C build-dev ws_gpu_tests warpstream > "$OUT/build.txt" 2>&1
row "build (ninja ws_gpu_tests warpstream)" "rc=$? ($(elapsed) s)"
T=build-dev/tests/ws_gpu_tests
timeout 240 $T --gtest_brief=0 > "$OUT/gpu-tests.txt" 2>&1
row "ws_gpu_tests (all)" "rc=$? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|SKIPPED \]' "$OUT/gpu-tests.txt" | head -3 | tr '\n' ' ')"
# Sanitizers: the death test re-executes the binary (hangs under the sanitizer), timing tests are disabled.
# The gemm check suite was sanitized per variant by device-check-gemm.sh (too long for one slot here).
SAN_FILTER='-DeviceInit.FreshProcess*:GemmS8Gpu.CheckSuitePasses'
: > "$OUT/sanitizers.txt"
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 $T --gtest_filter="$SAN_FILTER" > /tmp/san-$tool.txt 2>&1
  rc=$?
  { echo "==== $tool rc=$rc"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" /tmp/san-$tool.txt | tail -5; tail -15 /tmp/san-$tool.txt; } >> "$OUT/sanitizers.txt"
  row "compute-sanitizer $tool" "rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san-$tool.txt | tail -1) ($(elapsed) s)"
done
