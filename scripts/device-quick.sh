#!/usr/bin/env bash
# A development look in one device call (not the evidence runs): build for sm_90, the GPU tests of the
# executor/conv/lanes (WS_QUICK_FILTER), then a small `device-bench.sh` subset (graph, mapped, 1 lane,
# fp32+fp16, both models, with per-layer profiles; PyTorch CUDA-graph peers) reusing the same build.
#   run(command="bash scripts/device-quick.sh", carry=[".debs", ".assets"], timeout_s=540)
# Under $OUT: quick.tgz (everything) and summary.txt.
set -u
OUT=${OUT:-/tmp/device-quick-out}; Q=/tmp/wsquick; rm -rf $Q; mkdir -p $Q "$OUT"
source scripts/device-env.sh
export WS_ASSETS_DIR=$(cd .assets && pwd)
S=$Q/summary.txt
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DWS_ENABLE_CUTLASS=OFF > $Q/configure.txt 2>&1
timeout 300 ninja -C build-dev ws_gpu_tests warpstream exp_graph_launch_00_empty_kernel > $Q/build.txt 2>&1
echo "build rc=$?" | tee -a $S; grep -E "error|FAILED" $Q/build.txt | head -20 | tee -a $S
FILTER=${WS_QUICK_FILTER:-'ConvKernels*:CudaEngine*:LaneZeroAlloc*:LanesEfficientNet*'}
WS_LANES_ZERO_ALLOC_CYCLES=${WS_LANES_ZERO_ALLOC_CYCLES:-2000} timeout ${WS_QUICK_TEST_TIMEOUT:-200} \
  build-dev/tests/ws_gpu_tests --gtest_filter="$FILTER" > $Q/gpu-tests.txt 2>&1
echo "gpu tests rc=$?" | tee -a $S
grep -E "^\[  FAILED  \]|^\[  PASSED  \]|tests ran|zero-alloc" $Q/gpu-tests.txt | head -40 | tee -a $S
if [ "${WS_QUICK_BENCH:-1}" = 1 ]; then
  OUT=$Q/bench WS_BENCH_BUILD_DIR=build-dev WS_BENCH_BUDGET_S=${WS_QUICK_BENCH_S:-300} WS_BENCH_ITERS=${WS_BENCH_ITERS:-500} \
    WS_BENCH_LANES=${WS_BENCH_LANES:-1} WS_BENCH_MODES=${WS_BENCH_MODES:-graph} WS_BENCH_INPUTS=${WS_BENCH_INPUTS:-mapped} \
    WS_BENCH_COMPILE=0 WS_BENCH_PEER_MODES=${WS_BENCH_PEER_MODES:-cuda_graph} bash scripts/device-bench.sh > $Q/bench.txt 2>&1
  grep -A40 "==== summary" $Q/bench.txt | tee -a $S
  python3 - "$Q/bench" <<'PY' | tee -a $S
import json, sys, tarfile, io
t = tarfile.open(sys.argv[1] + "/reports.tar.gz")
for m in sorted(t.getnames()):
    if not m.endswith(".json") or "ours_" not in m: continue
    d = json.load(t.extractfile(m))
    prof = d["env"].get("layer_profile")
    if not prof: continue
    tot = sum(r["median_us"] for r in prof)
    by = {}
    for r in prof:
        k = r["op"] + " | " + (r["tactic"].split(",")[0] if r["tactic"] else "-")
        by.setdefault(k, [0, 0.0]); by[k][0] += 1; by[k][1] += r["median_us"]
    print(f"== {m}: {len(prof)} steps, sum {tot:.1f} us")
    for k, (n, us) in sorted(by.items(), key=lambda kv: -kv[1][1])[:14]:
        print(f"   {us:8.1f} us  {n:3d}x  {k}")
PY
fi
tar czf "$OUT/quick.tgz" -C $Q . ; cp $S "$OUT/summary.txt"
