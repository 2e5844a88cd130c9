#!/usr/bin/env bash
# Flow (VRAMFlow stages 03-04, issue 6) device check, run ON the device machine from the repo root, with
# .debs carried (scripts/device-deps.sh fetched them here):
#   bash scripts/device-check-flow.sh
# Builds (CMake/Ninja, sm_90; falls back to a lean nvcc build of the flow pieces if the full build fails),
# runs the flow GPU tests, `warpstream h2d`, `warpstream overlap`, draws the Gantt chart when matplotlib is
# there. Writes under $OUT (default /tmp/flow-out): summary.txt, h2d.json, overlap.json, overlap-gantt.png,
# flow-logs.tar.gz. Prints a short table last. Never touches the GPU's settings.
set -u -o pipefail
START=$(date +%s)
OUT=${OUT:-/tmp/flow-out}
L=/tmp/flow-logs
mkdir -p "$OUT" "$L"
SUM=$L/summary.txt
: > "$SUM"
row() { printf '%-30s %s\n' "$1" "$2" | tee -a "$SUM"; }
elapsed() { echo $(( $(date +%s) - START )); }
finish() {
  tar -czf "$OUT/flow-logs.tar.gz" -C /tmp flow-logs 2>/dev/null
  echo; echo "==== summary ($(elapsed) s) ===="; cat "$SUM"
  cp "$SUM" "$OUT/summary.txt"
}
trap finish EXIT

source scripts/device-env.sh
{ nvidia-smi; nvidia-smi -q | grep -A3 -i 'PCIe Generation\|Link Width'; nvcc --version; cmake --version | head -1; uname -a; } > "$L/env.txt" 2>&1
row "gpu" "$(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current --format=csv,noheader 2>&1 | head -1)"

# ---- build --------------------------------------------------------------------------------------
BUILD=build-dev
WS=$BUILD/warpstream
GT=$BUILD/tests/ws_gpu_tests
cmake -S . -B $BUILD -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 > "$L/configure.txt" 2>&1
row "configure" "rc=$? ($(elapsed) s)"
timeout ${WS_FLOW_BUILD_TIMEOUT:-140} ninja -C $BUILD -k 0 warpstream ws_gpu_tests > "$L/build.txt" 2>&1
BRC=$?
row "build (cmake/ninja)" "rc=$BRC ($(elapsed) s)"
if [ ! -x "$WS" ] || [ ! -x "$GT" ] || [ $BRC -ne 0 ]; then
  # Lean fallback: only the flow pieces (other modules may be mid-edit).
  mkdir -p /tmp/wsflow
  NV="nvcc -std=c++20 -O3 -gencode arch=compute_90,code=sm_90 -DWS_HAVE_CUDA=1 -Isrc -Iinclude -Iapps -Itests"
  CORE="src/core/*.cpp src/cuda/cuda_util.cpp src/flow/plan/*.cpp src/flow/*.cu src/kernels/gemm/gemm_s8_mma.cu"
  $NV apps/main.cpp apps/cmd_h2d.cpp apps/cmd_overlap.cpp $CORE -x cu src/flow/*.cpp -o /tmp/wsflow/warpstream \
    > "$L/build-fallback.txt" 2>&1
  row "fallback warpstream (nvcc)" "rc=$? ($(elapsed) s)"
  $NV tests/gpu/flow_streamer_test.cpp src/reference/gemm_s8.cpp $CORE -x cu src/flow/*.cpp \
    -lgtest -lgtest_main -lpthread -o /tmp/wsflow/ws_gpu_tests >> "$L/build-fallback.txt" 2>&1
  row "fallback flow tests (nvcc)" "rc=$? ($(elapsed) s)"
  WS=/tmp/wsflow/warpstream
  GT=/tmp/wsflow/ws_gpu_tests
fi

# ---- tests --------------------------------------------------------------------------------------
if [ -x "$GT" ]; then
  timeout 40 $GT --gtest_filter='FlowStreamer*' > "$L/gpu-tests.txt" 2>&1
  row "gpu tests FlowStreamer*" "rc=$? $(grep -E '^\[  (PASSED|FAILED)|^\[ +(OK|FAILED) +\]' $L/gpu-tests.txt | tr '\n' ' ')"
fi

# ---- benchmarks ---------------------------------------------------------------------------------
timeout ${WS_FLOW_H2D_TIMEOUT:-50} $WS h2d ${WS_FLOW_H2D_ARGS:-} --json "$OUT/h2d.json" 2>&1 | tee "$L/h2d.txt" > "$OUT/h2d.txt"
row "warpstream h2d" "rc=$? ($(elapsed) s)"
timeout ${WS_FLOW_OVERLAP_TIMEOUT:-60} $WS overlap ${WS_FLOW_OVERLAP_ARGS:-} --json "$OUT/overlap.json" 2>&1 | tee "$L/overlap.txt" > "$OUT/overlap.txt"
row "warpstream overlap" "rc=$? ($(elapsed) s) $(tail -1 $L/overlap.txt)"
python3 tools/plot_overlap.py "$OUT/overlap.json" "$OUT/overlap-gantt.png" > "$L/gantt.txt" 2>&1
row "gantt png" "rc=$? $(tail -1 $L/gantt.txt)"

python3 - "$OUT/h2d.json" "$OUT/overlap.json" <<'PY' | tee -a "$SUM"
import json, sys
try:
    h = json.load(open(sys.argv[1]))
    ceil = h["pinned_h2d_ceiling_gbps"]
    print("  h2d pinned ceiling %.2f GB/s, d2h %.2f GB/s (%s)" % (ceil, h["pinned_d2h_ceiling_gbps"], h["status"]))
    for mem, d in (("pinned", "h2d"), ("pinned", "d2h"), ("pageable", "h2d"), ("pageable", "d2h"), ("mapped", "kernel_read")):
        rs = [r for r in h["rows"] if r["memory"] == mem and r["direction"] == d and r["chunk_bytes"] == 0 and r["streams"] == 1]
        print("  %-8s %-11s 1 stream: %s" % (mem, d, " ".join("%dM:%.1f" % (r["bytes"] >> 20, r["gbps_median"]) for r in rs)))
    best = max((r for r in h["rows"] if r["memory"] == "pinned" and r["direction"] == "h2d"), key=lambda r: r["gbps_median"])
    print("  best pinned h2d: %d streams, chunk %d MiB, %d MiB: %.2f GB/s" % (best["streams"], best["chunk_bytes"] >> 20, best["bytes"] >> 20, best["gbps_median"]))
except Exception as e:
    ceil = None; print("  no h2d.json:", e)
try:
    o = json.load(open(sys.argv[2]))
except Exception as e:
    print("  no overlap.json:", e); sys.exit()
print("  overlap (%s), balanced tokens %d" % (o["status"], o["balanced_tokens"]))
print("  %-14s %-10s %6s %9s %9s %6s %8s %s" % ("config", "mode", "tokens", "ms", "graph_ms", "eff", "copyGB/s", "verdict"))
for r in o["rows"]:
    print("  %-14s %-10s %6d %9.3f %9.3f %6.3f %8.2f %s" % (r["config"], r["mode"], r["tokens"], r["ms_median"], r["graph_ms_median"], r["efficiency"], r["copy_gbps"], r["verdict"]))
for cfg in ("balanced", "compute_heavy", "transfer_heavy"):
    rs = {r["mode"]: r for r in o["rows"] if r["config"] == cfg}
    if "triple" not in rs: continue
    t = rs["triple"]; fl = max(rs["compute"]["ms_median"], rs["transfer"]["ms_median"])
    streamed = min(t["ms_median"], t["graph_ms_median"])
    line = "  target %-14s triple %.3f ms vs 1.05 x %.3f = %.3f ms: %s" % (cfg, streamed, fl, 1.05 * fl, "MET" if streamed <= 1.05 * fl else "MISSED by %.1f%%" % (100 * (streamed / fl - 1.05)))
    if ceil:
        line += "; pipeline copy %.2f GB/s = %.1f%% of ceiling (target 95%%)" % (t["copy_gbps"], 100 * t["copy_gbps"] / ceil)
    print(line)
PY
