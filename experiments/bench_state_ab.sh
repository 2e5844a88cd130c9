#!/usr/bin/env bash
# Does what ran before the timed loop change ResNet-50's steady-state time? Run 95 saw ResNet-50 fp16 (1 lane, CUDA graph)
# at ~362 us GPU p50 in rows built from a timing cache without --profile-layers, but ~382 us in bench-latency's row (built
# from its cache, with --profile-layers 200 run before the timed loop) and ~332 against ~312 us (device frame) for the first
# row of a call (tactics timed fresh) against later rows (from the cache). Rows alternated, REPS times, frame in device memory:
#   cached       the cache written by a first untimed build, no profile
#   profiled1st  the same cache, --profile-layers 200 --profile-first (before the timed loop, as bench-latency's 1-lane rows
#                ran until run 95)
#   profiled     the same cache, --profile-layers 200 (after the timed loop, bench's order since run 95)
#   fresh        no cache: every tactic timed in this process's build
#   freshprof    fresh, with --profile-layers 200; cachedprof: cached, with --profile-layers 200 — the per-step medians of
#                the two processes side by side (which steps a process that timed its tactics runs slower; runs 100-101
#                found the frame ~21 us slower); printed after the medians
# Usage (device tool, after scripts/device.sh built build-dev): [WS_STATE_ROWS="cached profiled1st profiled fresh"]
#   bash experiments/bench_state_ab.sh [REPS=3] [MODEL=resnet50]
#   writes $OUT/bench-state-ab.txt
source "$(dirname "${BASH_SOURCE[0]}")/ab_common.sh"  # cd to the root, device env, carried archives, $O, $B
R=$O/bench-state-ab.txt; : > "$R"
T=/tmp/wsstate; mkdir -p $T
ab_need_build "$R"
M=${WS_RESNET50_DIR:-$T}
MODEL=${2:-resnet50}
if [ "$MODEL" = resnet50 ]; then
  [ -f $M/resnet50.onnx ] || timeout 240 python3 tools/export_resnet50.py --out-dir $M > $T/export.txt 2>&1
  ONNX=$M/resnet50.onnx
else
  ONNX=.assets/models/$MODEL.onnx
fi
[ -f $ONNX ] || { echo "no $ONNX" | tee -a "$R"; exit 1; }
python3 tools/make_frame.py .assets/images/chelsea.png 1920 1080 $T/frame.rgb > /dev/null
bench() {  # tag cache extra... (ITERS: frames timed, default 1000)
  local tag=$1 cache=$2; shift 2
  timeout 150 $B/warpstream bench --model $ONNX --precision fp16 --lanes 1 --input device --frame $T/frame.rgb --source 1920x1080 \
    --warmup 100 --iterations ${ITERS:-1000} --no-progress --timing-cache $cache --json $T/$tag.json "$@" > $T/$tag.txt 2>&1
  local rc=$?
  printf '%-22s rc=%d %s\n' "$tag" $rc "$(python3 -c "import json;d=json.load(open('$T/$tag.json'));h=d['metrics']['host_latency_us'];g=d['metrics']['gpu_time_us'];e=d['env'];print(f\"host p50/p99/p99.9 {h['p50']:.1f}/{h['p99']:.1f}/{h['p99_9']:.1f} gpu p50 {g['p50']:.1f} us; build {e.get('engine_build_s'):.1f} s\")" 2>/dev/null || tail -1 $T/$tag.txt)" | tee -a "$R"
}
ITERS=200 bench warm_cache_0 $T/tc.json > /dev/null  # writes the cache
ROWS=${WS_STATE_ROWS:-cached profiled1st profiled fresh}  # a subset for a shorter call
for rep in $(seq 1 ${1:-3}); do
  for r in $ROWS; do
    case $r in
      cached) bench cached_$rep $T/tc.json ;;
      profiled1st) bench profiled1st_$rep $T/tc.json --profile-layers 200 --profile-first ;;
      profiled) bench profiled_$rep $T/tc.json --profile-layers 200 ;;
      fresh) rm -f $T/tc_fresh.json; bench fresh_$rep $T/tc_fresh.json ;;
      freshprof) rm -f $T/tc_fresh.json; bench freshprof_$rep $T/tc_fresh.json --profile-layers 200 ;;
      cachedprof) bench cachedprof_$rep $T/tc.json --profile-layers 200 ;;
    esac
  done
done
python3 experiments/ab_medians.py "$R" | tee -a "$R"
# Per-step medians, fresh process against cached (rep 1 of each, when both ran): the steps that differ by > 0.2 us.
if [ -f $T/freshprof_1.json ] && [ -f $T/cachedprof_1.json ]; then
  python3 - $T/freshprof_1.json $T/cachedprof_1.json <<'PY' | tee -a "$R"
import json, sys
f, c = (json.load(open(p))['env'].get('layer_profile', []) for p in sys.argv[1:3])
print(f"per-step medians: {len(f)} steps fresh, {len(c)} cached; sums {sum(x['median_us'] for x in f):.1f} / {sum(x['median_us'] for x in c):.1f} us")
small, small_sum = 0, 0.0
for a, b in zip(f, c):
    if abs(a['median_us'] - b['median_us']) > 0.2:
        print(f"  {a['median_us']:7.2f} fresh {b['median_us']:7.2f} cached  {a['node'][:48]:48s} {a['tactic'][:60]}")
    else:
        small, small_sum = small + 1, small_sum + a['median_us'] - b['median_us']
print(f"  the other {small} steps (|difference| <= 0.2 us each): {small_sum:+.1f} us together")
PY
fi
