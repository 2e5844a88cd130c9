#!/usr/bin/env bash
# Lane pipeline device check (issue 3, deliverables 5-9: Pipeline/lanes, modes, zero allocation, whole-pipeline
# correctness, `classify --device cuda`). Run ON the device machine from the repo root, with .debs and the
# assets carried (scripts/device-deps.sh fetched .debs here; .assets/ = copies of ~/.cache/warpstream/{models,
# labels,images}):
#   run(command="bash scripts/device-check-lanes-pipeline.sh", carry=[".debs", ".assets"])
# Steps: build (sm_90, Ninja: ws_gpu_tests warpstream); ws_gpu_tests 'Lane*:Pipeline*:CudaEngine*';
# `warpstream classify` on the photos: cpu once, then cuda in fp32|fp16 × graph|direct × mapped|copy|device,
# each compared (top-5 class indices) with the cpu run; a first latency figure (1,000 frames, one photo,
# graph vs direct); compute-sanitizer memcheck / racecheck / synccheck on the lane tests (90 s each, short
# loops via WS_LANES_ZERO_ALLOC_CYCLES / WS_LANES_C10_FRAMES, EfficientNet left out).
# The whole run needs more than one 600 s device call on a cold build: WS_LANES_STEPS picks steps
# (default "build,tests,classify,sanitize"; build-dev/ is kept between calls), e.g. a first call with
# WS_LANES_STEPS=build,tests and a second with WS_LANES_STEPS=build,classify,sanitize (ninja is a no-op then).
# Steps that would start past WS_LANES_DEADLINE seconds (default 560) are skipped and say so.
# Writes under $OUT (default /tmp/lanes-pipeline-out): summary.txt, gpu-tests.txt, classify-*.txt,
# sanitizer-*.txt, env.txt, build.txt. Prints the summary table last. Never touches the GPU's settings.
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/lanes-pipeline-out}
mkdir -p "$OUT"
SUM=$OUT/summary.txt
: > "$SUM"
row() { printf '%-44s %s\n' "$1" "$2" | tee -a "$SUM" > /dev/null; }
elapsed() { echo $(( $(date +%s) - START )); }
STEPS=",${WS_LANES_STEPS:-build,tests,classify,sanitize},"
DEADLINE=${WS_LANES_DEADLINE:-560}
want() { case "$STEPS" in *",$1,"*) return 0;; esac; return 1; }
late() { [ $(elapsed) -gt $(( DEADLINE - ${1:-0} )) ]; }
trap 'echo; echo "==== summary ($(elapsed) s) ===="; cat "$SUM"' EXIT

export WS_ASSETS_DIR=$(cd "${WS_ASSETS_DIR:-.assets}" 2>/dev/null && pwd || echo "${WS_ASSETS_DIR:-.assets}")
MODEL=$WS_ASSETS_DIR/models/efficientnet_lite0.onnx
LABELS=$WS_ASSETS_DIR/labels/imagenet_classes.txt
IMAGES=$(ls "$WS_ASSETS_DIR"/images/*.png 2>/dev/null | sort | tr '\n' ' ')

source scripts/device-env.sh
{ date -u; nvidia-smi; nvcc --version; cmake --version | head -1; git rev-parse HEAD 2>/dev/null; uname -a; } > "$OUT/env.txt" 2>&1
row "date" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
row "gpu" "$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1)"
row "nvcc" "$(nvcc --version | grep -o 'release [0-9.]*')"
row "commit" "$(git rev-parse --short HEAD 2>/dev/null) (+ working tree as carried)"
row "assets" "$WS_ASSETS_DIR: model $([ -f "$MODEL" ] && echo yes || echo MISSING), images: $(echo $IMAGES | wc -w)"

# ---- build -----------------------------------------------------------------------------------------
BUILD=build-dev
if want build; then
cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/configure.txt" 2>&1
row "configure" "rc=$?"
timeout 420 ninja -C $BUILD ws_gpu_tests warpstream > "$OUT/build.txt" 2>&1
row "build (ninja ws_gpu_tests warpstream)" "rc=$? ($(elapsed) s)"
fi
T=$BUILD/tests/ws_gpu_tests
W=$BUILD/warpstream
[ -x "$T" ] || { row "ws_gpu_tests" "no binary (see build.txt)"; tail -40 "$OUT/build.txt"; }

# ---- GPU tests -------------------------------------------------------------------------------------
FILTER=${WS_LANES_FILTER:-'Lane*:Pipeline*:CudaEngine*'}
if want tests && [ -x "$T" ]; then
  timeout $(( DEADLINE - $(elapsed) > 30 ? DEADLINE - $(elapsed) : 30 )) $T --gtest_filter="$FILTER" > "$OUT/gpu-tests.txt" 2>&1
  row "ws_gpu_tests $FILTER" "rc=$? $(grep -E '^\[  (PASSED|FAILED)  \]' "$OUT/gpu-tests.txt" | tr '\n' ' ') ($(elapsed) s)"
  grep -E '^\[  FAILED  \] [A-Za-z]' "$OUT/gpu-tests.txt" | sort -u | head -12 | sed 's/^/  /' | tee -a "$SUM" > /dev/null
  grep -E '^(zero-alloc|C10 ordering|efficientnet|lanes:|\[ seed)' "$OUT/gpu-tests.txt" | sed 's/^/  /' | tee -a "$SUM" > /dev/null
fi

# ---- classify demo: cpu once, then every cuda mode, top-5 indices compared -------------------------
top5() { awk '/^ +[0-9]+ +[-0-9.na]+ /{print $1}' "$1" | tr '\n' ' '; }
if ! want classify; then
  :
elif [ -x "$W" ] && [ -f "$MODEL" ] && [ -n "$IMAGES" ]; then
  timeout 120 $W classify --device cpu --model "$MODEL" --labels "$LABELS" $IMAGES > "$OUT/classify-cpu.txt" 2>&1
  row "classify cpu" "rc=$? top-5: $(top5 "$OUT/classify-cpu.txt")"
  CPU_TOP=$(top5 "$OUT/classify-cpu.txt")
  for prec in fp32 fp16; do
    for g in graph direct; do
      for in in mapped copy device; do
        late 60 && { row "classify cuda $prec $g $in" "skipped (time)"; continue; }
        f="$OUT/classify-cuda-$prec-$g-$in.txt"
        flag=""; [ $g = direct ] && flag="--no-cuda-graph"
        timeout 120 $W classify --device cuda --precision $prec $flag --input $in --timing-cache "$OUT/timing-cache-$prec.json" \
          --model "$MODEL" --labels "$LABELS" --repeat 20 $IMAGES > "$f" 2>&1
        rc=$?
        same=$([ "$(top5 "$f")" = "$CPU_TOP" ] && echo "same as cpu" || echo "DIFFERS from cpu")
        gpu=$(grep -o 'gpu [0-9.]* ms' "$f" | awk '{printf "%s ", $2}')
        row "classify cuda $prec $g $in" "rc=$rc top-5 $same; gpu ms/photo: $gpu"
      done
    done
  done
  head -1 "$OUT/classify-cuda-fp32-graph-mapped.txt" 2>/dev/null | cut -c1-200 | sed 's/^/  /' | tee -a "$SUM" > /dev/null
  # auto: must pick cuda here and say so.
  timeout 120 $W classify --device auto --model "$MODEL" --labels "$LABELS" $IMAGES > "$OUT/classify-auto.txt" 2>&1
  row "classify auto" "rc=$? $(head -1 "$OUT/classify-auto.txt" | cut -d'|' -f1)"
  # First latency figure: 1,000 frames of one photo, wall (submit → wait) median/min/max and gpu median.
  ONE=$(echo $IMAGES | awk '{print $1}')
  for prec in fp32 fp16; do
    for g in graph direct; do
      late 30 && { row "latency $prec $g" "skipped (time)"; continue; }
      flag=""; [ $g = direct ] && flag="--no-cuda-graph"
      f="$OUT/latency-$prec-$g.txt"
      timeout 60 $W classify --device cuda --precision $prec $flag --timing-cache "$OUT/timing-cache-$prec.json" \
        --model "$MODEL" --labels "$LABELS" --repeat 1000 "$ONE" > "$f" 2>&1
      row "latency 1000 frames $prec $g (ms)" "rc=$? $(grep -o '([0-9]*x[0-9]*, .*):' "$f" | head -1)"
    done
  done
else
  row "classify" "skipped (no warpstream binary or assets)"
fi

# ---- compute-sanitizer on the lane tests -----------------------------------------------------------
SAN_FILTER=${WS_LANES_SAN_FILTER:-'Lane*:Pipeline*-*LaneEfficientNet*'}
if want sanitize && [ -x "$T" ]; then
  for tool in memcheck racecheck synccheck; do
    late 30 && { row "compute-sanitizer $tool" "skipped (time)"; continue; }
    WS_LANES_ZERO_ALLOC_CYCLES=40 WS_LANES_C10_FRAMES=40 WS_LANES_PRODUCER_FRAMES=10 timeout ${WS_LANES_SAN_TIMEOUT:-90} compute-sanitizer --tool $tool --error-exitcode 3 \
      $T --gtest_filter="$SAN_FILTER" > "$OUT/sanitizer-$tool.txt" 2>&1
    rc=$?
    row "compute-sanitizer $tool" "rc=$rc $(grep -h -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.txt" | tail -1) $(grep -E '^\[  (PASSED|FAILED)  \]' "$OUT/sanitizer-$tool.txt" | tr '\n' ' ') ($(elapsed) s)"
  done
fi
