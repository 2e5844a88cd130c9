#!/usr/bin/env bash
# A/B on the GPU machine: the lanes' input wavefront (bench --input-wavefront, PipelineOptions::input_wavefront): the
# preprocess publishes rows, the stem starts on them while the frame still crosses PCIe. EfficientNet-Lite0 fp16, 1 lane,
# CUDA graph, 1080p frame (chelsea), 1000 frames after 100 warm-up per row; A (plain) and B (wavefront) alternated REPS
# times (default 4) with the frame in mapped host memory, B both as the stem alone waiting (wave1) and chained with the
# fused depthwise->pointwise step after it (wave2, --input-wavefront-steps 2) (the issue's setup: the overlap is with PCIe), then 2 pairs with
# the frame in device memory. Both sides share one timing cache (the same tactics). ResNet-50's stem is a cuDNN 7x7 conv:
# the wavefront does not apply there (its row says why).
# Needs build-dev/warpstream (scripts/device.sh test builds it) and .assets (scripts/bench-assets.sh).
# Usage (device tool): bash scripts/device.sh test && bash experiments/wavefront_ab.sh [REPS]   (writes $OUT/wavefront-ab.txt)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
WS=${WS_BUILD_DIR:-build-dev}/warpstream
T=/tmp/wswf; mkdir -p $T
R=${OUT:-/tmp}/wavefront-ab.txt; : > "$R"
python3 tools/make_frame.py .assets/images/chelsea.png 1920 1080 $T/frame.rgb > /dev/null
EFF=.assets/models/efficientnet_lite0.onnx
row() {  # tag input flags...
  local tag=$1 input=$2; shift 2
  timeout 120 $WS bench --model $EFF --precision fp16 --lanes 1 --input $input --frame $T/frame.rgb --source 1920x1080 \
    --warmup 100 --iterations 1000 --no-progress --timing-cache $T/tc_eff.json --json $T/$tag.json "$@" > $T/$tag.txt 2>&1
  local rc=$?
  printf '%-26s rc=%d %s\n' "$tag" $rc "$(python3 -c "import json;d=json.load(open('$T/$tag.json'));h=d['metrics']['host_latency_us'];g=d['metrics']['gpu_time_us'];e=d['env'];print(f\"host p50/p99/p99.9 {h['p50']:.1f}/{h['p99']:.1f}/{h['p99_9']:.1f} gpu p50 {g['p50']:.1f} us; {e.get('engine_kernels_per_enqueue')} kernels; wavefront {e.get('lanes_input_wavefront')}\")" 2>/dev/null || tail -1 $T/$tag.txt)" | tee -a "$R"
}
for rep in $(seq 1 ${1:-4}); do
  row plain_mapped_$rep mapped
  row wave1_mapped_$rep mapped --input-wavefront --input-wavefront-steps 1
  row wave2_mapped_$rep mapped --input-wavefront --input-wavefront-steps 2
done
for rep in 1 2; do
  row plain_device_$rep device
  row wave2_device_$rep device --input-wavefront
done
python3 - "$R" <<'PY' | tee -a "$R"
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"([\w-]+?)_(\d+)\s+rc=0 host p50/p99/p99.9 ([\d.]+)/([\d.]+)/([\d.]+) gpu p50 ([\d.]+)", line)
    if m: rows.setdefault(m.group(1), []).append((float(m.group(3)), float(m.group(4)), float(m.group(6))))
for k, v in rows.items():
    med = lambda i: statistics.median(x[i] for x in v)
    print(f"{k:16s} {len(v)} reps: median of host p50 {med(0):.1f}, host p99 {med(1):.1f}, gpu p50 {med(2):.1f} us"
          f"  (gpu p50 per rep {' '.join(f'{x[2]:.1f}' for x in v)})")
PY
