#!/usr/bin/env bash
# Which process state slows a frame after the build timed its tactics in the same process (device runs 100-101: ResNet-50
# fp16 +21 us GPU p50 on the same choices)? Builds exp_process_state_00 in build-dev (as scripts/device.sh does; the
# export runs beside the build), writes a timing cache in a process of its own (action write), then runs experiments/process_state_00.cpp once per action, each in a
# process of its own (none, malloc, fresh, fresh_cudnn, fresh_ws; see that file), then bench_state_ab.sh's freshprof /
# cachedprof rows (per-step medians of the two processes side by side).
# Usage (device tool): [WS_STATE_EAGER=1] [WS_STATE_BENCH=0] bash experiments/process_state_ab.sh [N=2000] [ACTIONS="fresh none malloc fresh_cudnn fresh_ws"]
#   writes $OUT/process-state.txt (+ summary.txt, logs.tgz as scripts/device.sh)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/device-common.sh
T=/tmp/wsstate; mkdir -p $T
# the ResNet-50 export beside the build (the device call's budget is small)
[ -f $T/resnet50.onnx ] || (timeout 240 python3 tools/export_resnet50.py --out-dir $T > $T/export.txt 2>&1) &
ws_build exp_process_state_00 || { wait; exit 1; }
wait
row "export resnet50" "$([ -f $T/resnet50.onnx ] && echo ok || echo FAILED) ($(elapsed) s)"
[ -f $T/resnet50.onnx ] || exit 1
R=$OUT/process-state.txt; : > "$R"
rm -f $T/tc.json
timeout 120 $B/exp_process_state_00 $T/resnet50.onnx $T/tc.json write > $T/cache.txt 2>&1
row "write the timing cache (a process of its own)" "rc=$? ($(elapsed) s)"
# without the cache every action's engine A would time its tactics itself: the comparison would mean nothing
[ -s $T/tc.json ] || { row "timing cache" "MISSING: stopped"; exit 1; }
# last_block: the t* lines of the last "==== action" block of $R only (an action that died prints none of its own)
last_block() { awk '/^==== action/{b=""} /^t[0-9]/{b=b $0 " "} END{print b}' "$R" | tr -s ' ' | cut -c1-420; }
# last_reset: the reset search's r lines of the last block (empty graph, then A, after each candidate action)
last_reset() { awk '/^==== action/{b=""} /^r   /{b=b substr($0, 5) " | "} END{print b}' "$R" | tr -s ' ' | cut -c1-900; }
for a in ${2:-fresh none malloc fresh_cudnn fresh_ws}; do  # (an action may repeat)
  # an action takes ~30-40 s (ResNet-50, N=1500-2000); each is capped so that the call ends before the device limit
  if [ "$(left)" -lt 60 ]; then row "action $a" "SKIPPED (budget)"; continue; fi
  { echo "==== action $a"; timeout $(( $(left) - 15 )) $B/exp_process_state_00 $T/resnet50.onnx $T/tc.json $a ${1:-2000} 2>&1; echo "rc=$?"; } >> "$R"
  row "action $a" "$(last_block)"
  row "action $a: reset search" "$(last_reset)"
  # WS_STATE_EAGER=1: the same action again with every module loaded at context creation (CUDA_MODULE_LOADING=EAGER):
  # if the slow state comes from where lazily loaded kernels land as later builds load more, it goes (or stops toggling)
  if [ "${WS_STATE_EAGER:-0}" = 1 ]; then
    if [ "$(left)" -lt 60 ]; then row "action $a (eager loading)" "SKIPPED (budget)"; continue; fi
    { echo "==== action $a, CUDA_MODULE_LOADING=EAGER"
      CUDA_MODULE_LOADING=EAGER timeout $(( $(left) - 15 )) $B/exp_process_state_00 $T/resnet50.onnx $T/tc.json $a ${1:-2000} 2>&1; echo "rc=$?"; } >> "$R"
    row "action $a (eager loading)" "$(last_block)"
  fi
done
if [ "${WS_STATE_BENCH:-1}" = 1 ] && [ "$(left)" -gt 90 ]; then
  ws_build warpstream && WS_RESNET50_DIR=$T WS_STATE_ROWS="cachedprof freshprof" bash experiments/bench_state_ab.sh 1 >> "$L/bench-state.txt" 2>&1
  row "bench_state_ab cachedprof freshprof" "rc=$? ($(elapsed) s)"
  [ -f "$OUT/bench-state-ab.txt" ] && sed 's/^/    /' "$OUT/bench-state-ab.txt" | head -60 | tee -a "$SUM" || true
fi
