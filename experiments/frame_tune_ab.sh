#!/usr/bin/env bash
# A/B on the GPU machine: the frame-level tactic check (CudaEngine::tune_frame, `bench --frame-tune N`) against the
# build's own per-step choices. Per model (EfficientNet-Lite0, ResNet-50; fp16, 1 lane, CUDA graph, 1080p frame, chelsea):
#   1. a plain bench row times every tactic fresh into tc_<m>_build.json (its runners-up recorded);
#   2. that cache is copied to tc_<m>_tuned.json and `bench --frame-tune FLIPS` edits it (the check's own report: each
#      flip's frame medians, and the final alternated duel of the kept plan against the build's);
#   3. rows alternated REPS times, the frame mapped (the issue's setup): build cache against tuned cache.
# Usage (device tool, after scripts/device.sh built build-dev): [WS_FT_MODELS="efficientnet_lite0 resnet50"]
#   bash experiments/frame_tune_ab.sh [REPS=2] [FLIPS=16]    writes $OUT/frame-tune-ab.txt and $OUT/frame-tune-<m>.txt
source "$(dirname "${BASH_SOURCE[0]}")/ab_common.sh"  # cd to the root, device env, carried archives, $O, $B
R=$O/frame-tune-ab.txt; : > "$R"
T=/tmp/wsft; mkdir -p $T
ab_need_build "$R"
M=${WS_RESNET50_DIR:-$T}
python3 tools/make_frame.py .assets/images/chelsea.png 1920 1080 $T/frame.rgb > /dev/null
row() {  # tag model input cache iterations extra-flags...
  local tag=$1 model=$2 input=$3 cache=$4 iters=$5; shift 5
  timeout 240 $B/warpstream bench --model "$model" --precision fp16 --lanes 1 --input $input --frame $T/frame.rgb --source 1920x1080 \
    --warmup 100 --iterations $iters --no-progress --timing-cache $cache --json $T/$tag.json "$@" > $T/$tag.txt 2>&1
  local rc=$?
  printf '%-26s rc=%d %s\n' "$tag" $rc "$(python3 -c "import json;d=json.load(open('$T/$tag.json'));h=d['metrics']['host_latency_us'];g=d['metrics']['gpu_time_us'];e=d['env'];print(f\"host p50/p99/p99.9 {h['p50']:.1f}/{h['p99']:.1f}/{h['p99_9']:.1f} gpu p50 {g['p50']:.1f} us; {e.get('engine_kernels_per_enqueue')} kernels, build {e.get('engine_build_s'):.1f} s, top1 {e.get('top1_index')}\")" 2>/dev/null || tail -1 $T/$tag.txt)" | tee -a "$R"
}
for m in ${WS_FT_MODELS:-efficientnet_lite0 resnet50}; do
  if [ $m = resnet50 ]; then
    [ -f $M/resnet50.onnx ] || timeout 240 python3 tools/export_resnet50.py --out-dir $M > $T/export.txt 2>&1
    onnx=$M/resnet50.onnx
  else
    onnx=.assets/models/$m.onnx
  fi
  [ -f $onnx ] || { echo "no $onnx" | tee -a "$R"; continue; }
  rm -f $T/tc_${m}_build.json $T/tc_${m}_tuned.json
  row ${m}_timing_0 $onnx device $T/tc_${m}_build.json 200
  cp $T/tc_${m}_build.json $T/tc_${m}_tuned.json
  row ${m}_tune_0 $onnx device $T/tc_${m}_tuned.json 200 --frame-tune ${2:-16}
  grep -E "^  |frame check" $T/${m}_tune_0.txt > $O/frame-tune-$m.txt
  grep "frame check" $T/${m}_tune_0.txt | tee -a "$R"
  for rep in $(seq 1 ${1:-2}); do
    row ${m}_mapped_build_$rep $onnx mapped $T/tc_${m}_build.json 1000
    row ${m}_mapped_tuned_$rep $onnx mapped $T/tc_${m}_tuned.json 1000
  done
  cp $T/tc_${m}_build.json $T/tc_${m}_tuned.json $O/ 2>/dev/null
done
python3 experiments/ab_medians.py "$R" | tee -a "$R"
