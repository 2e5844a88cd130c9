#!/usr/bin/env bash
# A/B on the GPU machine: ResNet's stem as one kernel of ours (CudaBuildOptions::fuse_stem_pool, the default; `bench --no-stem-pool` is side stem0;
# kernels::stem7x7_maxpool: conv 7x7/2 + ReLU + max pool 3x3/2, NCHW input read directly, NHWC output) against the
# default plan (the input's NCHW -> NHWC reformat, cuDNN's conv, cuDNN's pool: three graph nodes). One build (build-dev,
# as scripts/device.sh makes it), one timing cache per side, each written by an untimed run first (a process that timed
# tactics runs later frames slower: docs/lanes-plan.md, runs 100-103), then bench rows alternated: ResNet-50 fp16, 1 lane,
# CUDA graph, 1080p frame (chelsea), 1000 frames after 100 warm-up, DEVICE_REPS times with the frame in device memory
# (the network's own change) then MAPPED_REPS times mapped (the issue's setup); then one mapped row per side with the
# per-layer profile (--profile-layers 200, after the timed loop), whose steps are listed at the end.
# Usage (device tool, after scripts/device.sh built build-dev): bash experiments/stem_pool_ab.sh [DEVICE_REPS=3] [MAPPED_REPS=2]
#   writes $OUT/stem-pool-ab.txt (rows, the medians, the first steps of both profiles)
source "$(dirname "${BASH_SOURCE[0]}")/ab_common.sh"  # cd to the root, device env, carried archives, $O, $B
ab_start stem-pool-ab.txt /tmp/wsstem  # R, T, the build checked, M (the ResNet-50 export)
python3 tools/make_frame.py .assets/images/chelsea.png 1920 1080 $T/frame.rgb > /dev/null
R50=$M/resnet50.onnx
side_flags() { [ "$1" = stem0 ] && echo --no-stem-pool; }
for side in stem0 stem1; do  # the caches, untimed
  timeout 150 $B/warpstream bench --model $R50 --precision fp16 --lanes 1 --input device --frame $T/frame.rgb --source 1920x1080 \
    --warmup 2 --iterations 20 --no-progress --timing-cache $T/tc_$side.json $(side_flags $side) > $T/cache_$side.txt 2>&1 \
    || echo "cache $side rc=$? $(tail -1 $T/cache_$side.txt)" | tee -a "$R"
done
row() {  # tag input extra-flags...
  local tag=$1 input=$2; shift 2
  local side=stem${tag##*_stem}; side=${side%%_*}
  timeout 150 $B/warpstream bench --model $R50 --precision fp16 --lanes 1 --input $input --frame $T/frame.rgb --source 1920x1080 \
    --warmup 100 --iterations 1000 --no-progress --timing-cache $T/tc_$side.json --json $T/$tag.json $(side_flags $side) "$@" > $T/$tag.txt 2>&1
  local rc=$?
  printf '%-28s rc=%d %s\n' "$tag" $rc "$(python3 -c "import json;d=json.load(open('$T/$tag.json'));h=d['metrics']['host_latency_us'];g=d['metrics']['gpu_time_us'];e=d['env'];print(f\"host p50/p99/p99.9 {h['p50']:.1f}/{h['p99']:.1f}/{h['p99_9']:.1f} gpu p50 {g['p50']:.1f} us; {e.get('engine_kernels_per_enqueue')} kernels, {e.get('engine_reformats')} reformats, {e.get('engine_stem_pools_fused')} stem fused, top1 {e.get('top1_index')}\")" 2>/dev/null || tail -1 $T/$tag.txt)" | tee -a "$R"
}
for rep in $(seq 1 ${1:-3}); do row r50_device_stem0_$rep device; row r50_device_stem1_$rep device; done
for rep in $(seq 1 ${2:-2}); do row r50_mapped_stem0_$rep mapped; row r50_mapped_stem1_$rep mapped; done
row r50_profile_stem0_1 mapped --profile-layers 200
row r50_profile_stem1_1 mapped --profile-layers 200
python3 experiments/ab_medians.py "$R" | tee -a "$R"
for side in stem0 stem1; do
  echo "profile $side (first 6 steps, median us):" >> "$R"
  python3 -c "import json;[print('  ', s['node'], '|', s['op'], '|', round(s['median_us'], 2), '|', s['tactic'][:110]) for s in json.load(open('$T/r50_profile_${side}_1.json'))['env']['layer_profile'][:6]]" >> "$R" 2>&1
done
cat "$R"
