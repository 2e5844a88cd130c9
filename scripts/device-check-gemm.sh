#!/usr/bin/env bash
# INT8 GEMM device check (issue 5), run ON the device machine from the repo root, with .debs carried:
#   bash scripts/device-check-gemm.sh            # everything: build, tests, --check, --bench, sanitizers, SASS
#   WS_GEMM_BENCH_ARGS="--scale 0.25" bash ...    # smaller large suite
# Writes under $OUT (default /tmp/gemm-out): summary.txt, check.json, bench.json, bench.txt, gemm-logs.tar.gz.
# Prints a short table last. Never touches the GPU's settings.
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/gemm-out}
L=/tmp/gemm-logs
mkdir -p "$OUT" "$L"
SUM=$L/summary.txt
: > "$SUM"
row() { printf '%-34s %s\n' "$1" "$2" | tee -a "$SUM"; }
elapsed() { echo $(( $(date +%s) - START )); }
finish() {
  cp "$SUM" "$OUT/summary.txt"
  for f in check.json bench.json bench.txt; do [ -f "$L/$f" ] && cp "$L/$f" "$OUT/"; done
  tar -czf "$OUT/gemm-logs.tar.gz" -C /tmp gemm-logs
  echo; echo "==== summary ($(elapsed) s) ===="; cat "$SUM"
}
trap finish EXIT

source scripts/device-env.sh
{ nvidia-smi; nvcc --version; cmake --version | head -1; uname -a; } > "$L/env.txt" 2>&1
row "gpu" "$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1)"

# ---- build (lean: sm_90 only) ----------------------------------------------------------------
BUILD=build-dev
cmake -S . -B $BUILD -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 > "$L/configure.txt" 2>&1
row "configure" "rc=$? ($(elapsed) s)"
ninja -C $BUILD -k 0 warpstream ws_gpu_tests exp_gemm_s8_00_dp4a_probe > "$L/build.txt" 2>&1
BRC=$?
row "build (cmake/ninja)" "rc=$BRC ($(elapsed) s)"
WS=$BUILD/warpstream
if [ ! -x "$WS" ] || [ $BRC -ne 0 ]; then
  # Fallback: the gemm pieces alone (other modules may be mid-edit): a standalone CLI with only `gemm`.
  mkdir -p /tmp/wsgemm
  nvcc -std=c++20 -O3 -gencode arch=compute_90,code=sm_90 -DWS_HAVE_CUDA=1 -Isrc -Iinclude -Iapps \
    apps/main.cpp apps/cmd_gemm.cpp src/core/*.cpp src/cuda/cuda_util.cpp src/reference/gemm_s8.cpp \
    src/kernels/gemm/*.cu -x cu src/kernels/gemm/*.cpp -lcublas -lcublasLt -o /tmp/wsgemm/warpstream \
    > "$L/build-fallback.txt" 2>&1
  row "build fallback (nvcc, gemm only)" "rc=$?"
  WS=/tmp/wsgemm/warpstream
fi

# ---- ptxas reports and SASS ------------------------------------------------------------------
for f in gemm_s8_dp4a gemm_s8_mma; do
  nvcc -std=c++20 -O3 -gencode arch=compute_90,code=sm_90 -Xptxas -v -Isrc -Iinclude -c src/kernels/gemm/$f.cu \
    -o /tmp/$f.o > "$L/ptxas-sm90-$f.txt" 2>&1
done
row "ptxas spills (sm_90)" "$(grep -h -o '[0-9]* bytes spill stores' $L/ptxas-sm90-*.txt | sort | uniq -c | tr '\n' ';')"
for arch in 61 75 90; do
  if nvcc -cubin -gencode arch=compute_$arch,code=sm_$arch -Isrc -Iinclude src/kernels/gemm/gemm_s8_dp4a.cu \
      -o /tmp/dp4a_sm$arch.cubin > "$L/sass-build-sm$arch.txt" 2>&1; then
    cuobjdump --dump-sass /tmp/dp4a_sm$arch.cubin > "$L/sass-dp4a-sm$arch.txt" 2>&1
    row "IDP.4A in SASS sm_$arch" "$(grep -c 'IDP.4A' $L/sass-dp4a-sm$arch.txt) instructions ($(grep -o 'IDP.4A[.A-Z0-9]*' $L/sass-dp4a-sm$arch.txt | sort -u | tr '\n' ' '))"
  else
    row "IDP.4A in SASS sm_$arch" "toolkit rejects sm_$arch: $(grep -m1 -i -E 'unsupported|not defined|error' $L/sass-build-sm$arch.txt)"
  fi
done
cuobjdump --dump-sass /tmp/gemm_s8_mma.o > "$L/sass-mma-sm90.txt" 2>&1
row "IMMA in mma SASS sm_90" "$(grep -c 'IMMA' $L/sass-mma-sm90.txt) ($(grep -o 'IMMA[.A-Z0-9]*' $L/sass-mma-sm90.txt | sort -u | tr '\n' ' ')) LDL/STL: $(grep -c -E 'LDL|STL' $L/sass-mma-sm90.txt)"

# ---- tests and check ---------------------------------------------------------------------------
if [ -x $BUILD/exp_gemm_s8_00_dp4a_probe ]; then
  $BUILD/exp_gemm_s8_00_dp4a_probe > "$L/probe.txt" 2>&1; row "experiment dp4a probe" "rc=$?"
fi
if [ -x $BUILD/tests/ws_gpu_tests ]; then
  timeout 120 $BUILD/tests/ws_gpu_tests --gtest_filter='GemmS8*' > "$L/gpu-tests.txt" 2>&1
  row "ws_gpu_tests GemmS8*" "rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/gpu-tests.txt | tr '\n' ' ')"
fi
timeout 150 $WS gemm --check --json "$L/check.json" > "$L/check.txt" 2>&1
row "gemm --check" "rc=$? $(grep -E '^check:' $L/check.txt) ($(elapsed) s)"
grep -E '^naive .*TOPS' "$L/check.txt" | awk '{print "  " $2, $3, $NF, $(NF-1)}' | tee -a "$SUM"

# ---- campaigns ---------------------------------------------------------------------------------
timeout ${WS_GEMM_BENCH_TIMEOUT:-300} $WS gemm --bench ${WS_GEMM_BENCH_ARGS:-} --json "$L/bench.json" > "$L/bench.txt" 2>&1
row "gemm --bench" "rc=$? ($(elapsed) s)"
python3 tools/gemm_bench_summary.py "$L/bench.json" | tee -a "$SUM"

# ---- compute-sanitizer on --check (may be unsupported on this runtime) ---------------------------
for tool in memcheck racecheck synccheck; do
  if [ $(elapsed) -gt ${WS_GEMM_SANITIZER_DEADLINE:-480} ]; then row "sanitizer $tool" "skipped (time)"; continue; fi
  timeout 75 compute-sanitizer --tool $tool --error-exitcode 3 $WS gemm --check --iters 1 > "$L/sanitizer-$tool.txt" 2>&1
  rc=$?
  row "sanitizer $tool (--check)" "rc=$rc $(grep -h -E 'ERROR SUMMARY|RACECHECK SUMMARY|Device not supported' $L/sanitizer-$tool.txt | head -2 | tr '\n' ' ')"
done
