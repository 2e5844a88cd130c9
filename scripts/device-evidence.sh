#!/usr/bin/env bash
# The evidence call for issues 3 and 4 in one device call (<= 10 min): build for sm_90 (CLI + GPU tests),
# the full latency benchmark (scripts/device-bench.sh: both models, fp32/fp16, 1/4 lanes, graph/direct,
# mapped/copy, per-layer profiles, PyTorch peers, torch.compile, compare tables, floor, CDF plots), then the
# GPU tests of the executor/conv/lanes and compute-sanitizer memcheck over the new conv kernels.
#   run(command="bash scripts/device-evidence.sh", carry=[".debs", ".assets"], timeout_s=600)
# Under $OUT: summary.txt, compare.txt, floor.md, cdf_*.png, evidence.tgz (logs, every report JSON/CSV, tests).
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/device-evidence-out}; E=/tmp/wsevidence; rm -rf $E; mkdir -p $E/bench "$OUT"
source scripts/device-env.sh
export WS_ASSETS_DIR=$(cd .assets && pwd)
S=$E/summary-tests.txt; : > $S
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DWS_ENABLE_CUTLASS=OFF > $E/configure.txt 2>&1
timeout 300 ninja -C build-dev ws_gpu_tests warpstream exp_graph_launch_00_empty_kernel > $E/build.txt 2>&1
echo "build rc=$? ($(( $(date +%s) - START )) s)" | tee -a $S
OUT=$E/bench WS_BENCH_BUILD_DIR=build-dev WS_BENCH_BUDGET_S=${WS_EVIDENCE_BENCH_S:-390} bash scripts/device-bench.sh > $E/bench.txt 2>&1
echo "bench done ($(( $(date +%s) - START )) s)" | tee -a $S
T=build-dev/tests/ws_gpu_tests
WS_LANES_ZERO_ALLOC_CYCLES=${WS_LANES_ZERO_ALLOC_CYCLES:-10000} timeout ${WS_EVIDENCE_TEST_S:-100} $T \
  --gtest_filter="${WS_EVIDENCE_FILTER:-ConvKernels*:CudaEngineResidual*:*LaneZeroAlloc*:CudaEngineModel.*:CudaEngineConvTactics.*}" > $E/gpu-tests.txt 2>&1
echo "gpu tests rc=$? ($(( $(date +%s) - START )) s)" | tee -a $S
grep -E "^\[  FAILED  \]|^\[  PASSED  \]|tests ran|zero-alloc|^\[ effnet   \] (ws-only|all)" $E/gpu-tests.txt | head -40 | tee -a $S
LEFT=$(( ${WS_EVIDENCE_TOTAL_S:-560} - ($(date +%s) - START) ))
if [ $LEFT -gt 30 ]; then
  timeout $(( LEFT - 10 )) compute-sanitizer --tool memcheck --error-exitcode 3 $T \
    --gtest_filter='ConvKernels.Pointwise*:ConvKernels.Direct*:CudaEngineResidual.MBConv*:CudaEngineResidual.Downsample*' > $E/memcheck.txt 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $E/memcheck.txt | tail -1) $(grep -E '^\[  PASSED|^\[  FAILED' $E/memcheck.txt | head -2 | tr '\n' ' ')" | tee -a $S
else
  echo "memcheck skipped (time)" | tee -a $S
fi
cat $S >> $E/bench/summary.txt
for f in summary.txt compare.txt floor.md cdf_efficientnet_lite0.png cdf_resnet50.png; do cp $E/bench/$f "$OUT/" 2>/dev/null; done
tar czf "$OUT/evidence.tgz" -C $E .
echo "==== $(( $(date +%s) - START )) s"; cat "$OUT/summary.txt"
