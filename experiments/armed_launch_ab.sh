#!/usr/bin/env bash
# A/B on the GPU machine: the lanes' armed launch (PipelineOptions::armed_launch, `bench --armed-launch`): each lane's frame
# is enqueued at acquire behind a doorbell in mapped host memory (cuStreamWaitValue32) and submit() only rings it, so the
# graph launch's host time (~5 us p50, ~15 us p99 in run 103's enqueue_us) leaves submit -> result. Prediction: host p50
# -3..-5 us, host p99 -5..-12 us (the launch's tail), GPU p50 -3..-5 us (the start event no longer waits for the launch),
# if the GPU front end sees the doorbell within ~1-2 us.
# One build (build-dev, as scripts/device.sh makes it), one timing cache per model written in an untimed process of its own
# (as bench-latency does: a process that timed its tactics runs slower, docs/lanes-plan.md), then bench rows alternated:
# EfficientNet-Lite0 and ResNet-50 fp16, CUDA graph, 1080p RGB8 frame (chelsea) in mapped host memory, 1000 frames after
# 100 warm-up, 1 lane REPS times (default 3), then 4-lane pairs REPS_4_LANES times per model (frames/s). Before the rows, with
# WS_AB_TESTS=1 (default), the lanes' GPU tests (the armed cases among them).
# Usage (device tool, after scripts/device.sh built build-dev): bash experiments/armed_launch_ab.sh [REPS=3] [REPS_4_LANES=1]
#   writes $OUT/armed-launch-ab.txt (rows, then the medians) and $OUT/armed-gpu-tests.txt
for v in "${1:-3}" "${2:-1}"; do  # rep counts: whole numbers 0..20
  [[ "$v" =~ ^[0-9]{1,2}$ ]] && [ "$((10#$v))" -le 20 ] || { echo "usage: $0 [REPS=3] [REPS_4_LANES=1] (0..20 each), got '$v'" >&2; exit 2; }
done
source "$(dirname "${BASH_SOURCE[0]}")/ab_common.sh"  # cd to the root, device env, carried archives, $O, $B
ab_start armed-launch-ab.txt /tmp/wsarmed  # R, T, the build checked, M (the ResNet-50 export)
[ "${WS_AB_TESTS:-1}" = 1 ] && ab_gpu_tests 'Lane*:Pipeline*' $O/armed-gpu-tests.txt
python3 tools/make_frame.py .assets/images/chelsea.png 1920 1080 $T/frame.rgb > /dev/null
R50=$M/resnet50.onnx EFF=.assets/models/efficientnet_lite0.onnx
for m in $EFF $R50; do  # each cache written by an untimed run (a process of its own)
  n=$(basename $m .onnx)
  [ -f $T/tc_$n.json ] || timeout 120 $B/warpstream bench --model $m --precision fp16 --lanes 1 --input device --frame $T/frame.rgb \
    --source 1920x1080 --warmup 2 --iterations 20 --no-progress --timing-cache $T/tc_$n.json > $T/cache_$n.txt 2>&1
  echo "timing cache $n: rc=$? $(grep -o 'tactics timed[^;]*' $T/cache_$n.txt | head -1)" | tee -a "$R"
done
row() {  # tag model lanes extra-flags...
  local tag=$1 model=$2 lanes=$3 m; shift 3; m=$(basename $model .onnx)
  timeout 150 $B/warpstream bench --model "$model" --precision fp16 --lanes $lanes --input mapped --frame $T/frame.rgb --source 1920x1080 \
    --warmup 100 --iterations 1000 --no-progress --timing-cache $T/tc_$m.json --json $T/$tag.json "$@" > $T/$tag.txt 2>&1
  local rc=$?
  printf '%-26s rc=%d %s\n' "$tag" $rc "$(python3 -c "import json;d=json.load(open('$T/$tag.json'));mt=d['metrics'];h=mt['host_latency_us'];g=mt['gpu_time_us'];q=mt['enqueue_us'];a=mt['acquire_us'];e=d['env'];print(f\"host p50/p99/p99.9 {h['p50']:.1f}/{h['p99']:.1f}/{h['p99_9']:.1f} gpu p50 {g['p50']:.1f} us; submit p50/p99 {q['p50']:.1f}/{q['p99']:.1f}, acquire p50/p99 {a['p50']:.1f}/{a['p99']:.1f} us; {d['throughput_fps']:.0f} f/s; tactics timed here {e.get('engine_tactics_timed_in_process')}; {e.get('result_check')}\")" 2>/dev/null || tail -1 $T/$tag.txt)" | tee -a "$R"
}
for rep in $(seq 1 ${1:-3}); do
  row eff_plain_$rep $EFF 1; row eff_armed_$rep $EFF 1 --armed-launch
  row r50_plain_$rep $R50 1; row r50_armed_$rep $R50 1 --armed-launch
done
for rep in $(seq 1 ${2:-1}); do
  row eff_plain4L_$rep $EFF 4; row eff_armed4L_$rep $EFF 4 --armed-launch
  row r50_plain4L_$rep $R50 4; row r50_armed4L_$rep $R50 4 --armed-launch
done
python3 experiments/ab_medians.py "$R" | tee -a "$R"
