#!/usr/bin/env bash
# A/B on the GPU machine: ResNet-50's downsample shortcuts on an auxiliary stream (CudaBuildOptions::max_aux_streams,
# `bench --aux-streams 1`) against every step in order on one stream. One build (build-dev, as scripts/device.sh makes
# it), one timing cache per side (the aux plan folds the residual Add into another conv: other problems), then bench rows
# alternated: ResNet-50 fp16, 1 lane, CUDA graph, 1080p frame (chelsea), 1000 frames after 100 warm-up, DEVICE_REPS times
# with the frame in device memory (the network's own change) then MAPPED_REPS times mapped (the issue's setup); plus one
# EfficientNet-Lite0 pair (no shortcut convs: the plan must not change). Before the rows, with WS_AB_TESTS=1 (default),
# ws_gpu_tests 'CudaEngineAuxStream.*' with WS_RESNET50_ONNX set (ResNet-50 with the branches against the CPU executor).
# Usage (device tool, after scripts/device.sh built build-dev): bash experiments/aux_stream_ab.sh [DEVICE_REPS=3] [MAPPED_REPS=2]
#   writes $OUT/aux-stream-ab.txt (rows, then the medians) and $OUT/aux-gpu-tests.txt
source "$(dirname "${BASH_SOURCE[0]}")/ab_common.sh"  # cd to the root, device env, carried archives, $O, $B
ab_start aux-stream-ab.txt /tmp/wsaux  # R, T, the build checked, M (the ResNet-50 export)
[ "${WS_AB_TESTS:-1}" = 1 ] && WS_RESNET50_ONNX=$M/resnet50.onnx ab_gpu_tests 'CudaEngineAuxStream.*' $O/aux-gpu-tests.txt '^\[ aux '
python3 tools/make_frame.py .assets/images/chelsea.png 1920 1080 $T/frame.rgb > /dev/null
row() {  # tag model input extra-flags...
  local tag=$1 model=$2 input=$3 m; shift 3; m=$(basename $model .onnx)
  local side=${tag##*_aux}; side=${side%%_*}
  timeout 150 $B/warpstream bench --model "$model" --precision fp16 --lanes 1 --input $input --frame $T/frame.rgb --source 1920x1080 \
    --warmup 100 --iterations 1000 --no-progress --timing-cache $T/tc_${m}_aux$side.json --json $T/$tag.json "$@" > $T/$tag.txt 2>&1
  local rc=$?
  printf '%-26s rc=%d %s\n' "$tag" $rc "$(python3 -c "import json;d=json.load(open('$T/$tag.json'));h=d['metrics']['host_latency_us'];g=d['metrics']['gpu_time_us'];e=d['env'];print(f\"host p50/p99/p99.9 {h['p50']:.1f}/{h['p99']:.1f}/{h['p99_9']:.1f} gpu p50 {g['p50']:.1f} us; {e.get('engine_kernels_per_enqueue')} kernels, {e.get('engine_aux_branches')} branched, top1 {e.get('top1_index')}\")" 2>/dev/null || tail -1 $T/$tag.txt)" | tee -a "$R"
}
R50=$M/resnet50.onnx EFF=.assets/models/efficientnet_lite0.onnx
for rep in $(seq 1 ${1:-3}); do row r50_device_aux0_$rep $R50 device; row r50_device_aux1_$rep $R50 device --aux-streams 1; done
for rep in $(seq 1 ${2:-2}); do row r50_mapped_aux0_$rep $R50 mapped; row r50_mapped_aux1_$rep $R50 mapped --aux-streams 1; done
row eff_device_aux0_1 $EFF device; row eff_device_aux1_1 $EFF device --aux-streams 1
python3 -c "import json;[print('  ', t['node'], '|', t['choice'][:150], '|', round(t['us'], 2), 'us') for t in json.load(open('$T/r50_device_aux1_1.json'))['env']['engine_tactics'] if 'auxiliary' in t['choice'] or 'downsample' in t['node'] or '.0/conv3' in t['node']]" >> "$R" 2>&1
python3 experiments/ab_medians.py "$R" | tee -a "$R"
