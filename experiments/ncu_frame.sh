#!/usr/bin/env bash
# Nsight Compute over one EfficientNet-Lite0 fp16 frame's network kernels (bench --no-cuda-graph: the stages enqueued
# directly, so the "network" NVTX range of src/lanes/pipeline.cpp brackets exactly one frame's launches), clocks and
# caches left as in the steady state (--clock-control none --cache-control none: weights stay L2-resident between
# replays, as between frames). Sections: speed of light, launch, occupancy, warp states, scheduler, instruction mix,
# memory workload, and the source counters (warp-stall sampling per SASS instruction).
# Writes $OUT/ncu-frame-details.csv.gz (every metric, one row per kernel × metric), $OUT/ncu-frame-sass.csv.gz (per
# SASS instruction: executed instructions and stall samples; -lineinfo builds map them to .cu lines) and a one-line-per-
# kernel summary on stdout (name, grid, duration, issued IPC, warp cycles per issued instruction, top stall).
# Needs build-dev/warpstream, ideally built with WS_CMAKE_ARGS=-DCMAKE_CUDA_FLAGS=-lineinfo, and .assets.
# Usage (device tool): WS_CMAKE_ARGS=-DCMAKE_CUDA_FLAGS=-lineinfo bash scripts/device.sh test && bash experiments/ncu_frame.sh
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/device-env.sh
WS=${WS_BUILD_DIR:-build-dev}/warpstream
T=/tmp/wsncu; mkdir -p $T; O=${OUT:-/tmp}
python3 tools/make_frame.py .assets/images/chelsea.png 1920 1080 $T/frame.rgb > /dev/null
EFF=.assets/models/efficientnet_lite0.onnx
# build the engine once outside ncu so the profiled run reuses the timing cache (same tactics as the bench rows)
timeout 120 $WS bench --model $EFF --precision fp16 --lanes 1 --input device --frame $T/frame.rgb --source 1920x1080 \
  --warmup 10 --iterations 50 --no-progress --no-cuda-graph --timing-cache $T/tc.json > $T/prebuild.txt 2>&1 || { tail -5 $T/prebuild.txt; exit 1; }
timeout 400 ncu --nvtx --nvtx-include "network/" --launch-count ${WS_NCU_KERNELS:-60} --clock-control none --cache-control none \
  --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
  --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters -f -o $T/frame \
  $WS bench --model $EFF --precision fp16 --lanes 1 --input device --frame $T/frame.rgb --source 1920x1080 \
  --warmup 1 --iterations 1 --no-progress --no-cuda-graph --timing-cache $T/tc.json > $T/ncu.txt 2>&1
echo "ncu rc=$? ($(grep -c '==PROF== Profiling' $T/ncu.txt) kernels profiled)"; grep -m5 "==ERROR==\|==WARNING==" $T/ncu.txt
ncu -i $T/frame.ncu-rep --csv --page details > $T/details.csv 2>&1; gzip -c $T/details.csv > $O/ncu-frame-details.csv.gz
ncu -i $T/frame.ncu-rep --csv --page source --print-source sass > $T/sass.csv 2>&1; gzip -c $T/sass.csv > $O/ncu-frame-sass.csv.gz
ls -la $O/ncu-frame-*.gz
python3 - $T/details.csv <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
k = collections.OrderedDict()
for r in rows:
    key = (r["ID"], r["Kernel Name"], r["Grid Size"], r["Block Size"])
    k.setdefault(key, {})[r["Metric Name"]] = r["Metric Value"]
print(f"{'id':>3} {'us':>6} {'ipc':>5} {'cpi':>6} {'occ%':>5} {'regs':>4} grid/block  name  | top stalls (cycles per issued instr)")
for (i, name, g, b), m in k.items():
    st = sorted(((float(v.replace(',', '')), n) for n, v in m.items() if n.startswith("Stall ") or "Warp Cycles Per Issue" in n and False), reverse=True)[:3]
    short = name.split("(")[0].replace("(anonymous namespace)::", "")[:60]
    print(f"{i:>3} {m.get('Duration','?'):>6} {m.get('Issued Ipc Active', m.get('Executed Ipc Active','?')):>5} "
          f"{m.get('Warp Cycles Per Issued Instruction','?'):>6} {m.get('Achieved Occupancy','?'):>5} {m.get('Registers Per Thread','?'):>4} {g}/{b} {short}")
PY
