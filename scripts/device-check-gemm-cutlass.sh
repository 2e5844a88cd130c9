#!/usr/bin/env bash
# CUTLASS sm_90a INT8 GEMM backend: device check (issue 5), run ON the device from the repo root with the CUTLASS
# headers and the Debian packages carried:
#   here (once): bash scripts/fetch-cutlass-headers.sh   -> .cutlass/include (CUTLASS 4.2.0, ~27 MiB, ignored)
#                bash scripts/device-deps.sh             -> .debs/
#   device:      run(command="bash scripts/device-check-gemm-cutlass.sh", carry=[".debs", ".cutlass"])
# Builds only `warpstream` (+ ws_gpu_tests when time allows), then:
#   warpstream gemm --check --variant cutlass           (small suite, exhaustive vs the INT64 CPU oracle)
#   warpstream gemm --bench --variant cutlass,mma_128x128 --campaigns N   (large suite: exhaustive vs cuBLAS +
#       64 CPU positions, then N campaigns; cuBLASLt and cublasGemmEx always run as baselines)
# Writes under $OUT (default /tmp/gemm-cutlass-out): summary.txt, check.txt, bench.txt, bench.json, build logs.
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/gemm-cutlass-out}
mkdir -p "$OUT"
SUM=$OUT/summary.txt
: > "$SUM"
row() { printf '%-30s %s\n' "$1" "$2" | tee -a "$SUM"; }
elapsed() { echo $(( $(date +%s) - START )); }
trap 'echo; echo "==== summary ($(elapsed) s) ===="; cat "$SUM"' EXIT

source scripts/device-env.sh
row "gpu" "$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1)"
row "cutlass headers" "$(grep -h -E '#define CUTLASS_(MAJOR|MINOR|PATCH) ' .cutlass/include/cutlass/version.h | awk '{printf "%s ", $3}')"
BUILD=build-dev
cmake -S . -B $BUILD -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DWS_CUTLASS_DIR="$PWD/.cutlass/include" \
  > "$OUT/configure.txt" 2>&1
row "configure" "rc=$? $(grep -o 'CUTLASS sm_90a INT8 GEMM backend [A-Z]*' $OUT/configure.txt) ($(elapsed) s)"
ninja -C $BUILD warpstream > "$OUT/build.txt" 2>&1
row "build warpstream" "rc=$? ($(elapsed) s); C7510 (wgmma serialised) warnings: $(grep -c C7510 $OUT/build.txt)"
WS=$BUILD/warpstream
timeout ${WS_CHECK_TIMEOUT:-50} $WS gemm --check --variant cutlass --json "$OUT/check.json" > "$OUT/check.txt" 2>&1
row "gemm --check --variant cutlass" "rc=$? $(grep -E '^check:' $OUT/check.txt) ($(elapsed) s)"
grep -E 'MISMATCH|SENTINEL' "$OUT/check.txt" | head -5 | tee -a "$SUM"
BT=$(( ${WS_BUDGET_S:-285} - $(elapsed) - 25 )); [ $BT -lt 30 ] && BT=30
timeout ${WS_BENCH_TIMEOUT:-$BT} $WS gemm --bench --variant "${WS_BENCH_VARIANT:-cutlass,mma_128x128}" \
  --campaigns ${WS_CAMPAIGNS:-3} --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
row "gemm --bench" "rc=$? (limit $BT s; $(elapsed) s)"
grep -E '^validate' "$OUT/bench.txt" | grep -v ' ok$' | head -8 | tee -a "$SUM"
python3 tools/gemm_bench_summary.py "$OUT/bench.json" | tee -a "$SUM"
if [ $(elapsed) -lt ${WS_TEST_DEADLINE:-215} ]; then
  ninja -C $BUILD ws_gpu_tests > "$OUT/build-tests.txt" 2>&1 && \
    timeout 25 $BUILD/tests/ws_gpu_tests --gtest_filter='GemmS8Gpu.Cutlass*' > "$OUT/gpu-tests.txt" 2>&1
  row "ws_gpu_tests GemmS8Gpu.Cutlass*" "rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/gpu-tests.txt 2>/dev/null | tr '\n' ' ') ($(elapsed) s)"
else
  row "ws_gpu_tests" "skipped (time)"
fi
