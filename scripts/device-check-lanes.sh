#!/usr/bin/env bash
# Lane kernels device check (issue 3, deliverables 1/3/4: init_device, fused preprocess, device Top-K),
# run ON the device machine from the repo root, with .debs carried (scripts/device-deps.sh here first):
#   bash scripts/device-check-lanes.sh
# Builds for sm_90, runs ws_gpu_tests filtered to DeviceInit*/PreprocessGpu*/TopKGpu*, the disabled
# microbenchmark LanesKernelsTiming* (prints only), compute-sanitizer memcheck/racecheck/synccheck on the
# same tests, and a SASS look at the preprocess kernel (no FFMA expected: the exactness argument).
# Writes under $OUT (default /tmp/lanes-out): summary.txt, gpu-tests.txt, timing.txt, sanitizers.txt,
# env-build.txt, lanes-logs.tar.gz. Prints the summary last. Never touches the GPU's settings.
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/lanes-out}
L=/tmp/lanes-logs
mkdir -p "$OUT" "$L"
SUM=$L/summary.txt
: > "$SUM"
FILTER='DeviceInit*:PreprocessGpu*:TopKGpu*'
# The death test (fresh-process init_device) re-executes the binary; under compute-sanitizer that child hung
# until the timeout on 2026-11-29 (all three tools stopped there), so the sanitizer runs leave it out.
SAN_FILTER="$FILTER-DeviceInit.FreshProcess*"
# WS_LANES_SANITIZE_ONLY=1: build, then only the sanitizer runs (a cheap rerun of that part).
ONLY_SAN=${WS_LANES_SANITIZE_ONLY:-0}
row() { printf '%-34s %s\n' "$1" "$2" | tee -a "$SUM"; }
elapsed() { echo $(( $(date +%s) - START )); }
finish() {
  cp "$SUM" "$OUT/summary.txt"
  [ -f "$L/gpu-tests.txt" ] && cp "$L/gpu-tests.txt" "$OUT/"
  [ -f "$L/timing.txt" ] && cp "$L/timing.txt" "$OUT/"
  : > "$OUT/sanitizers.txt"
  for t in memcheck racecheck synccheck; do
    [ -f "$L/sanitizer-$t.txt" ] && { echo "==== $t (tail)"; tail -40 "$L/sanitizer-$t.txt"; } >> "$OUT/sanitizers.txt"
  done
  { cat "$L/env.txt" 2>/dev/null; echo "==== configure (tail)"; tail -20 "$L/configure.txt" 2>/dev/null;
    echo "==== build (tail)"; tail -60 "$L/build.txt" 2>/dev/null; tail -60 "$L/build-fallback.txt" 2>/dev/null; } \
    > "$OUT/env-build.txt"
  tar -czf "$OUT/lanes-logs.tar.gz" -C /tmp lanes-logs
  echo; echo "==== summary ($(elapsed) s) ===="; cat "$SUM"
}
trap finish EXIT

source scripts/device-env.sh
{ date -u; nvidia-smi; nvcc --version; cmake --version | head -1; uname -a; } > "$L/env.txt" 2>&1
row "date" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
row "gpu" "$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1)"
row "nvcc" "$(nvcc --version | grep -o 'release [0-9.]*')"
row "commit" "$(git rev-parse --short HEAD 2>/dev/null) (working tree as carried)"

# ---- build (sm_90 only); fallback: the lane-kernel pieces alone (other modules may be mid-edit) ----
BUILD=build-dev
cmake -S . -B $BUILD -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 > "$L/configure.txt" 2>&1
row "configure" "rc=$? ($(elapsed) s)"
timeout 300 ninja -C $BUILD ws_gpu_tests > "$L/build.txt" 2>&1
BRC=$?
row "build ws_gpu_tests (ninja)" "rc=$BRC ($(elapsed) s)"
T=$BUILD/tests/ws_gpu_tests
if [ $BRC -ne 0 ] || [ ! -x "$T" ]; then
  mkdir -p /tmp/wslanes
  nvcc -std=c++20 -O3 -gencode arch=compute_90,code=sm_90 -DWS_HAVE_CUDA=1 -Isrc -Iinclude -Itests/gpu \
    tests/gpu/device_test.cpp tests/gpu/preprocess_test.cpp tests/gpu/topk_test.cpp \
    tests/gpu/lanes_kernels_timing_test.cpp tests/gpu/device_test_kernels.cu \
    src/cuda/cuda_util.cpp src/cuda/device.cpp src/kernels/preprocess/preprocess_rgb8.cu src/kernels/topk/topk.cu \
    src/reference/preprocess.cpp src/reference/topk.cpp src/core/status.cpp \
    -lgtest_main -lgtest -lpthread -o /tmp/wslanes/ws_lanes_gpu_tests > "$L/build-fallback.txt" 2>&1
  row "build fallback (nvcc, lanes only)" "rc=$? ($(elapsed) s)"
  T=/tmp/wslanes/ws_lanes_gpu_tests
fi
[ -x "$T" ] || { row "tests" "no test binary"; exit 1; }

# ---- SASS: the preprocess kernel must hold no FFMA (explicit _rn intrinsics) ----------------------
nvcc -std=c++20 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Isrc -Iinclude -c \
  src/kernels/preprocess/preprocess_rgb8.cu -o /tmp/pp.o > "$L/ptxas-preprocess.txt" 2>&1
nvcc -std=c++20 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Isrc -Iinclude -c \
  src/kernels/topk/topk.cu -o /tmp/topk.o > "$L/ptxas-topk.txt" 2>&1
cuobjdump --dump-sass /tmp/pp.o > "$L/sass-preprocess.txt" 2>&1
row "preprocess SASS" "FFMA $(grep -c FFMA $L/sass-preprocess.txt), FMUL $(grep -c FMUL $L/sass-preprocess.txt), FADD $(grep -c FADD $L/sass-preprocess.txt); regs $(grep -o 'Used [0-9]* registers' $L/ptxas-preprocess.txt | tr '\n' ' ')"
row "topk ptxas" "$(grep -o 'Used [0-9]* registers.*' $L/ptxas-topk.txt | head -1)"

# ---- tests ---------------------------------------------------------------------------------------
if [ "$ONLY_SAN" != 1 ]; then
timeout 150 $T --gtest_filter="$FILTER" > "$L/gpu-tests.txt" 2>&1
row "ws_gpu_tests $FILTER" "rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/gpu-tests.txt | tr '\n' ' ') ($(elapsed) s)"
grep -E '^(device:|C10:|\[ seed)' "$L/gpu-tests.txt" | tee -a "$SUM"
grep -E '^preprocess ' "$L/gpu-tests.txt" | awk '{m = $0; sub(/.*fp32 max\|diff\| /, "", m); split(m, a, ","); if (a[1] + 0 > mx) mx = a[1] + 0; n++;
  if ($0 !~ / 0\/[0-9]+ not bit-identical/) nb++; if ($0 !~ / 0 not RN/) hb++ }
  END { printf "preprocess cases: %d, fp32 worst max|diff| %g, cases not bit-identical %d, fp16 cases != RN(ref) %d\n", n, mx, nb + 0, hb + 0 }' | tee -a "$SUM"
grep -E '^top-k:' "$L/gpu-tests.txt" | tee -a "$SUM"
grep -E '^\[  FAILED  \]' "$L/gpu-tests.txt" | head -10 | tee -a "$SUM"

# ---- microbenchmark (prints only) -----------------------------------------------------------------
timeout 90 $T --gtest_also_run_disabled_tests --gtest_filter='LanesKernelsTiming*' > "$L/timing.txt" 2>&1
row "timing" "rc=$? ($(elapsed) s)"
grep -E '^timing' "$L/timing.txt" | sed 's/^timing /  /' | tee -a "$SUM"
fi

# ---- compute-sanitizer (may be unsupported on this runtime: recorded, not fatal) -------------------
for tool in memcheck racecheck synccheck; do
  if [ $(elapsed) -gt ${WS_LANES_SANITIZER_DEADLINE:-270} ]; then row "sanitizer $tool" "skipped (time)"; continue; fi
  timeout 80 compute-sanitizer --tool $tool --error-exitcode 3 $T --gtest_filter="$SAN_FILTER" \
    > "$L/sanitizer-$tool.txt" 2>&1
  rc=$?
  row "sanitizer $tool" "rc=$rc $(grep -h -E 'ERROR SUMMARY|RACECHECK SUMMARY|Device not supported' $L/sanitizer-$tool.txt | sort | uniq -c | head -3 | tr -s ' ' | tr '\n' ';') $(grep -E '^\[  (PASSED|FAILED)' $L/sanitizer-$tool.txt | tr '\n' ' ') ($(elapsed) s)"
done
