#!/usr/bin/env bash
# A/B on the GPU machine: do our thread-block-cluster kernels lose their isolated advantage inside the frame's CUDA graph
# because of programmatic dependent launch (PDL)? Each row is `warpstream bench` (1 lane, CUDA graph, mapped 1080p frame,
# 1000 frames after 100 warm-up) with and without --no-pdl:
#   EfficientNet-Lite0 fp16: the cluster split-K form timed beside the others (--split-k-cluster; default since run 85:
#   off) vs --split-k-reduce-kernel (runs 83-85 ran the cluster form on by default: their "default" rows are today's
#   --split-k-cluster)
#   ResNet-50 fp16: default vs --nhwc-igemm (the cluster split-K implicit-GEMM conv)
# Needs build-dev/warpstream (scripts/device.sh test builds it) and .assets (scripts/bench-assets.sh).
# Usage (device tool): bash scripts/device.sh test && bash experiments/pdl_cluster_ab.sh   (writes $OUT/pdl-cluster-ab.txt)
#   `... pdl_cluster_ab.sh interleave [REPS]`: the frame in device memory (--input device: a ~8 us preprocess, no PCIe in
#   the frame), A and B rows alternated REPS times (default 4), so that drift between rows (run 82 saw ResNet-50 move by
#   21 us between two identical rows; run 84) hits both sides: EfficientNet-Lite0 --split-k-cluster vs
#   --split-k-reduce-kernel, ResNet-50 default vs --hwc8-port (R50_B=nhwc-igemm: vs --nhwc-igemm). The A side also times the
#   serial in-kernel form; in run 82's per-step profile no conv chose it, so A - B is taken as the cluster form's.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
WS=${WS_BUILD_DIR:-build-dev}/warpstream
T=/tmp/wsab; mkdir -p $T
R=${OUT:-/tmp}/pdl-cluster-ab.txt; : > "$R"
python3 tools/make_frame.py .assets/images/chelsea.png 1920 1080 $T/frame.rgb > /dev/null
[ -f $T/resnet50.onnx ] || timeout 120 python3 tools/export_resnet50.py --out-dir $T > /dev/null 2>&1
INPUT=mapped; [ "${1:-}" = interleave ] && INPUT=device
row() {  # tag model flags...
  local tag=$1 model=$2; shift 2
  timeout 90 $WS bench --model "$model" --precision fp16 --lanes 1 --input $INPUT --frame $T/frame.rgb --source 1920x1080 \
    --warmup 100 --iterations 1000 --no-progress --timing-cache $T/tc_${tag%_*}.json --json $T/$tag.json "$@" > $T/$tag.txt 2>&1
  local rc=$?
  printf '%-28s rc=%d %s\n' "$tag" $rc "$(python3 -c "import json;d=json.load(open('$T/$tag.json'));h=d['metrics']['host_latency_us'];g=d['metrics']['gpu_time_us'];e=d['env'];print(f\"host p50/p99 {h['p50']:.1f}/{h['p99']:.1f} gpu p50 {g['p50']:.1f} us; {e.get('engine_kernels_per_enqueue')} kernels\")" 2>/dev/null || tail -1 $T/$tag.txt)" | tee -a "$R"
}
EFF=.assets/models/efficientnet_lite0.onnx
if [ "${1:-}" = interleave ]; then
  for rep in $(seq 1 ${2:-4}); do
    row eff_cluster_$rep $EFF --split-k-cluster
    row eff_reducekernel_$rep $EFF --split-k-reduce-kernel
  done
  for rep in $(seq 1 ${2:-4}); do
    row r50_default_$rep $T/resnet50.onnx
    row r50_${R50_B:-hwc8port}_$rep $T/resnet50.onnx --${R50_B:-hwc8port}
  done
  python3 - "$R" <<'PY' | tee -a "$R"
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"([\w-]+?)_(\d+)\s+rc=0 .*gpu p50 ([\d.]+)", line)
    if m: rows.setdefault(m.group(1), []).append(float(m.group(3)))
for k, v in rows.items():
    print(f"{k:24s} gpu p50 per rep {' '.join(f'{x:.1f}' for x in v)}  median {statistics.median(v):.1f} us ({len(v)} reps)")
PY
  exit 0
fi
for rep in 1 2; do
  row eff_cluster_$rep $EFF --split-k-cluster
  row eff_reducekernel_$rep $EFF --split-k-reduce-kernel
  row eff_cluster_nopdl_$rep $EFF --split-k-cluster --no-pdl
  row eff_reducekernel_nopdl_$rep $EFF --split-k-reduce-kernel --no-pdl
done
for rep in 1 2; do
  row r50_default_$rep $T/resnet50.onnx
  row r50_igemm_$rep $T/resnet50.onnx --nhwc-igemm
  row r50_default_nopdl_$rep $T/resnet50.onnx --no-pdl
  row r50_igemm_nopdl_$rep $T/resnet50.onnx --nhwc-igemm --no-pdl
done
