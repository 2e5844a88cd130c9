#!/usr/bin/env bash
# A/B on the GPU machine: where our kernels trigger their PDL dependents (src/kernels/pdl.cuh). A = today's contract
# (griddepcontrol.launch_dependents after the main loop, before the epilogue); B = the same tree built with
# -DWS_PDL_TRIGGER_AFTER_WAIT (also right after griddepcontrol.wait: the next kernel is scheduled and runs its prologue
# while this one works; no cascade, since it triggers only once its own wait returns). Two build directories
# (build-dev, build-early; warpstream only), one shared timing cache per model (the same tactics on both sides), then
# bench rows alternated, DEVICE_REPS times with the frame in device memory, then MAPPED_REPS times mapped: EfficientNet-Lite0 and ResNet-50 fp16, 1 lane, CUDA graph, 1080p frame
# (chelsea), 1000 frames after 100 warm-up, the frame in mapped memory (the issue's setup) and in device memory (no PCIe:
# the network's own change, less drift). First the lab (experiments/layer_boundary_00.cu: per-layer cost of a trivial
# layer with the trigger late and early).
# Usage (device tool): bash experiments/pdl_early_ab.sh [DEVICE_REPS=3] [MAPPED_REPS=1]   (writes $OUT/pdl-early-ab.txt, $OUT/lab-layer-boundary.txt)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/device-env.sh
for a in .carry/*.txz; do n=$(basename "$a" .txz); [ -d ".$n" ] || tar -xJf "$a"; done  # as scripts/lib/device-common.sh
O=${OUT:-/tmp}; R=$O/pdl-early-ab.txt; : > "$R"
T=/tmp/wspe; mkdir -p $T
# the lab runs on the GPU while the two builds use the CPUs (its times are graph replays: host load does not enter)
(nvcc -std=c++20 -O3 -arch=sm_90 -Isrc -Iinclude experiments/layer_boundary_00.cu -o $T/lb && timeout 60 $T/lb 300) > $O/lab-layer-boundary.txt 2>&1 &
LAB=$!
[ -f $T/resnet50.onnx ] || timeout 120 python3 tools/export_resnet50.py --out-dir $T > /dev/null 2>&1 &
t0=$(date +%s)
build() {  # dir extra-cuda-flags targets...
  local d=$1 f=$2; shift 2
  [ -f "$d/build.ninja" ] || cmake -S . -B "$d" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 ${f:+"-DCMAKE_CUDA_FLAGS=$f"} > $T/cfg_$d.txt 2>&1
  timeout 400 ninja -C "$d" "$@" > $T/build_$d.txt 2>&1; local rc=$?
  echo "build $d rc=$rc ($(( $(date +%s) - t0 )) s)"; [ $rc -eq 0 ] || grep -m10 "error" $T/build_$d.txt
  return $rc
}
TESTS=${WS_AB_TESTS:-1}  # 0: no ws_gpu_tests build and run on B (a shorter call)
build build-dev "" warpstream & build build-early "-DWS_PDL_TRIGGER_AFTER_WAIT" warpstream $([ "$TESTS" = 1 ] && echo ws_gpu_tests) & wait
wait $LAB; grep "^fit\|failed" $O/lab-layer-boundary.txt
[ -x build-dev/warpstream ] && [ -x build-early/warpstream ] || exit 1
python3 tools/make_frame.py .assets/images/chelsea.png 1920 1080 $T/frame.rgb > /dev/null
row() {  # tag build model input
  local tag=$1 b=$2 model=$3 input=$4 m; m=$(basename $model .onnx)
  timeout 120 $b/warpstream bench --model "$model" --precision fp16 --lanes 1 --input $input --frame $T/frame.rgb --source 1920x1080 \
    --warmup 100 --iterations 1000 --no-progress --timing-cache $T/tc_$m.json --json $T/$tag.json > $T/$tag.txt 2>&1
  local rc=$?
  printf '%-26s rc=%d %s\n' "$tag" $rc "$(python3 -c "import json;d=json.load(open('$T/$tag.json'));h=d['metrics']['host_latency_us'];g=d['metrics']['gpu_time_us'];e=d['env'];print(f\"host p50/p99/p99.9 {h['p50']:.1f}/{h['p99']:.1f}/{h['p99_9']:.1f} gpu p50 {g['p50']:.1f} us; {e.get('engine_kernels_per_enqueue')} kernels\")" 2>/dev/null || tail -1 $T/$tag.txt)" | tee -a "$R"
}
EFF=.assets/models/efficientnet_lite0.onnx
pair() {  # input rep
  row eff_$1_late_$2 build-dev $EFF $1
  row eff_$1_early_$2 build-early $EFF $1
  row r50_$1_late_$2 build-dev $T/resnet50.onnx $1
  row r50_$1_early_$2 build-early $T/resnet50.onnx $1
}
for rep in $(seq 1 ${1:-3}); do pair device $rep; done
for rep in $(seq 1 ${2:-1}); do pair mapped $rep; done
# B's correctness: the PDL engine tests (EfficientNet-Lite0 with and without PDL against the CPU executor and each other,
# bit for bit; the split-K forms) on the early-trigger build
[ "$TESTS" = 1 ] && timeout 150 build-early/tests/ws_gpu_tests --gtest_filter='CudaEnginePdl.*:CudaEngineSplitK.*' > $O/early-gpu-tests.txt 2>&1
echo "early build: CudaEnginePdl.*:CudaEngineSplitK.* rc=$? $(grep -E '^\[  (PASSED|FAILED)  \]' $O/early-gpu-tests.txt | tr '\n' ' ')" | tee -a "$R"
python3 experiments/ab_medians.py "$R" | tee -a "$R"
