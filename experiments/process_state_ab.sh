#!/usr/bin/env bash
# Which process state slows a frame after the build timed its tactics in the same process (device runs 100-101: ResNet-50
# fp16 +21 us GPU p50 on the same choices)? Builds warpstream + exp_process_state_00 in build-dev (as scripts/device.sh
# does), writes a timing cache in an untimed run, then runs experiments/process_state_00.cpp once per action, each in a
# process of its own (none, malloc, fresh, fresh_cudnn, fresh_ws; see that file), then bench_state_ab.sh's freshprof /
# cachedprof rows (per-step medians of the two processes side by side).
# Usage (device tool): bash experiments/process_state_ab.sh [N=2000] [ACTIONS="fresh none malloc fresh_cudnn fresh_ws"]
#   writes $OUT/process-state.txt (+ summary.txt, logs.tgz as scripts/device.sh)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/device-common.sh
ws_build warpstream exp_process_state_00 || exit 1
R=$OUT/process-state.txt; : > "$R"
T=/tmp/wsstate; mkdir -p $T
[ -f $T/resnet50.onnx ] || timeout 240 python3 tools/export_resnet50.py --out-dir $T > $T/export.txt 2>&1
row "export resnet50" "rc=$? ($(elapsed) s)"
python3 tools/make_frame.py .assets/images/chelsea.png 1920 1080 $T/frame.rgb > /dev/null
rm -f $T/tc.json
timeout 120 $B/warpstream bench --model $T/resnet50.onnx --precision fp16 --lanes 1 --input device --frame $T/frame.rgb \
  --source 1920x1080 --warmup 2 --iterations 20 --no-progress --timing-cache $T/tc.json > $T/cache.txt 2>&1
row "write the timing cache" "rc=$? ($(elapsed) s)"
for a in ${2:-fresh none malloc fresh_cudnn fresh_ws}; do  # (an action may repeat)
  if [ "$(left)" -lt 60 ]; then row "action $a" "SKIPPED (budget)"; continue; fi
  { echo "==== action $a"; timeout 150 $B/exp_process_state_00 $T/resnet50.onnx $T/tc.json $a ${1:-2000} 2>&1; echo "rc=$?"; } >> "$R"
  row "action $a" "$(grep -E "^t[0-9]" "$R" | tail -7 | awk '{printf "%s ", $0}' | tr -s ' ' | cut -c1-420)"
done
if [ "${WS_STATE_BENCH:-1}" = 1 ] && [ "$(left)" -gt 90 ]; then
  WS_RESNET50_DIR=$T WS_STATE_ROWS="cachedprof freshprof" bash experiments/bench_state_ab.sh 1 >> "$L/bench-state.txt" 2>&1
  row "bench_state_ab cachedprof freshprof" "rc=$? ($(elapsed) s)"
  [ -f "$OUT/bench-state-ab.txt" ] && sed 's/^/    /' "$OUT/bench-state-ab.txt" | head -60 | tee -a "$SUM"
fi
